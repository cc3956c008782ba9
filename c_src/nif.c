/* ExZarr.Native: the NIF function table. */
#include "nif_funs.h"
#include "nif_util.h"

static int load(ErlNifEnv *env, void **priv, ERL_NIF_TERM info) {
    (void)priv;
    (void)info;
    xz_atoms_init(env);
    return 0;
}

static ErlNifFunc funcs[] = {
    {"copy_regions", 4, xz_nif_copy_regions, 0},
    {"transpose", 4, xz_nif_transpose, 0},
    {"byteswap", 2, xz_nif_byteswap, 0},
    {"all_equal", 2, xz_nif_all_equal, 0},
    {"all_nan", 2, xz_nif_all_nan, 0},
    {"crc32c", 1, xz_nif_crc32c, 0},
};

ERL_NIF_INIT(Elixir.ExZarr.Native, funcs, load, NULL, NULL, NULL)
