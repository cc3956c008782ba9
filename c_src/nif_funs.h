/* The NIF entry points, one per ExZarr.Native function. */
#ifndef EXZARR_NIF_FUNS_H
#define EXZARR_NIF_FUNS_H

#include <erl_nif.h>

#define XZ_NIF(name) ERL_NIF_TERM xz_nif_##name(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[])

XZ_NIF(copy_regions);
XZ_NIF(transpose);
XZ_NIF(byteswap);
XZ_NIF(all_equal);
XZ_NIF(all_nan);
XZ_NIF(crc32c);

#endif
