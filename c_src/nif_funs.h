/* The NIF entry points, one per ExZarr.Native function. */
#ifndef EXZARR_NIF_FUNS_H
#define EXZARR_NIF_FUNS_H

#include <erl_nif.h>

#define XZ_NIF(name) ERL_NIF_TERM xz_nif_##name(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[])

XZ_NIF(copy_regions);
XZ_NIF(transpose);
XZ_NIF(byteswap);
XZ_NIF(subbyte_encode);
XZ_NIF(subbyte_decode);
XZ_NIF(all_equal);
XZ_NIF(all_nan);
XZ_NIF(crc32c);
XZ_NIF(checksum);

/* nif_select.c: point selections (select.c). */
XZ_NIF(linear_points);
XZ_NIF(mask_points);
XZ_NIF(group_points);
XZ_NIF(vlen_split);
XZ_NIF(vlen_check_layout);
XZ_NIF(vlen_assemble);
XZ_NIF(vlen_check);
XZ_NIF(vlen_join);
XZ_NIF(zstd_compress);
XZ_NIF(zstd_decompress);
XZ_NIF(blosc_compress);
XZ_NIF(blosc_decompress);
XZ_NIF(lz4_compress);
XZ_NIF(lz4_decompress);
XZ_NIF(bz2_compress);
XZ_NIF(bz2_decompress);
XZ_NIF(lzma_compress);
XZ_NIF(lzma_decompress);
XZ_NIF(gzip_compress);
XZ_NIF(gzip_decompress);
XZ_NIF(zlib_compress);
XZ_NIF(zlib_decompress);

/* nif_zfp.c: the zfp codec (zfpcodec.c). */
XZ_NIF(zfp_encode);
XZ_NIF(zfp_decode);

/* nif_pco.c: pcodec (the Rust library in c_src/pco). */
XZ_NIF(pco_compress);
XZ_NIF(pco_decompress);
XZ_NIF(pco_kept_bytes);

XZ_NIF(cast);
XZ_NIF(delta_encode);
XZ_NIF(delta_decode);
XZ_NIF(fso_encode);
XZ_NIF(fso_decode);
XZ_NIF(quantize);
XZ_NIF(scale_offset);
XZ_NIF(cast_value);
XZ_NIF(bitround);
XZ_NIF(shuffle);
XZ_NIF(unshuffle);
XZ_NIF(packbits);
XZ_NIF(unpackbits);

XZ_NIF(read_file);
XZ_NIF(write_file);
XZ_NIF(delete_file);

/* outbuf.c: the output buffer of multi-chunk reads; its resource type is opened at load. */
int xz_outbuf_load(ErlNifEnv *env);
/* nif_io.c: the lock file resource type. */
int xz_io_load(ErlNifEnv *env);
XZ_NIF(lock_file);
XZ_NIF(unlock_file);
XZ_NIF(outbuf_new);
XZ_NIF(outbuf_put);
XZ_NIF(outbuf_fill);
XZ_NIF(outbuf_put_batch);
XZ_NIF(outbuf_finish);
XZ_NIF(bufpool_info);

/* nif_batch.c: decode_into, the batch decoder of sharded reads (batch.c). */
XZ_NIF(decode_into);

#endif
