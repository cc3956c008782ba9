/* ExZarr.Native: the NIF function table. */
#include "bufpool.h"
#include "nif_funs.h"
#include "nif_util.h"

static int load(ErlNifEnv *env, void **priv, ERL_NIF_TERM info) {
    (void)priv;
    (void)info;
    xz_atoms_init(env);
    return xz_bufpool_load(env) && xz_outbuf_load(env) && xz_io_load(env) ? 0 : 1;
}

static void unload(ErlNifEnv *env, void *priv) {
    (void)env;
    (void)priv;
    xz_bufpool_unload();
}

static ErlNifFunc funcs[] = {
    {"copy_regions", 4, xz_nif_copy_regions, 0},
    {"transpose", 4, xz_nif_transpose, 0},
    {"byteswap", 2, xz_nif_byteswap, 0},
    {"subbyte_encode", 3, xz_nif_subbyte_encode, 0},
    {"subbyte_decode", 3, xz_nif_subbyte_decode, 0},
    {"all_equal", 2, xz_nif_all_equal, 0},
    {"all_nan", 2, xz_nif_all_nan, 0},
    {"crc32c", 1, xz_nif_crc32c, 0},
    {"checksum", 3, xz_nif_checksum, 0},
    {"linear_points", 2, xz_nif_linear_points, 0},
    {"mask_points", 1, xz_nif_mask_points, 0},
    {"group_points", 3, xz_nif_group_points, 0},
    {"vlen_split", 3, xz_nif_vlen_split, 0},
    {"vlen_check_layout", 3, xz_nif_vlen_check_layout, 0},
    {"vlen_assemble", 3, xz_nif_vlen_assemble, 0},
    {"vlen_check", 3, xz_nif_vlen_check, 0},
    {"vlen_join", 3, xz_nif_vlen_join, 0},
    {"zstd_compress", 4, xz_nif_zstd_compress, 0},
    {"zstd_decompress", 3, xz_nif_zstd_decompress, 0},
    {"blosc_compress", 6, xz_nif_blosc_compress, 0},
    {"blosc_decompress", 3, xz_nif_blosc_decompress, 0},
    {"lz4_compress", 2, xz_nif_lz4_compress, 0},
    {"lz4_decompress", 3, xz_nif_lz4_decompress, 0},
    {"bz2_compress", 2, xz_nif_bz2_compress, 0},
    {"bz2_decompress", 3, xz_nif_bz2_decompress, 0},
    {"lzma_compress", 5, xz_nif_lzma_compress, 0},
    {"lzma_decompress", 5, xz_nif_lzma_decompress, 0},
    {"gzip_compress", 2, xz_nif_gzip_compress, 0},
    {"gzip_decompress", 3, xz_nif_gzip_decompress, 0},
    {"zlib_compress", 2, xz_nif_zlib_compress, 0},
    {"zlib_decompress", 3, xz_nif_zlib_decompress, 0},
    {"zfp_encode", 5, xz_nif_zfp_encode, 0},
    {"zfp_decode", 3, xz_nif_zfp_decode, 0},
    {"pco_compress", 3, xz_nif_pco_compress, 0},
    {"pco_decompress", 3, xz_nif_pco_decompress, 0},
    {"pco_kept_bytes", 0, xz_nif_pco_kept_bytes, 0},
    {"cast", 3, xz_nif_cast, 0},
    {"delta_encode", 3, xz_nif_delta_encode, 0},
    {"delta_decode", 3, xz_nif_delta_decode, 0},
    {"fso_encode", 6, xz_nif_fso_encode, 0},
    {"fso_decode", 5, xz_nif_fso_decode, 0},
    {"quantize", 4, xz_nif_quantize, 0},
    {"scale_offset", 5, xz_nif_scale_offset, 0},
    {"cast_value", 7, xz_nif_cast_value, 0},
    {"bitround", 3, xz_nif_bitround, 0},
    {"shuffle", 2, xz_nif_shuffle, 0},
    {"unshuffle", 2, xz_nif_unshuffle, 0},
    {"packbits", 1, xz_nif_packbits, 0},
    {"unpackbits", 2, xz_nif_unpackbits, 0},
    {"read_file", 4, xz_nif_read_file, 0},
    {"read_file", 5, xz_nif_read_file, 0},
    {"write_file", 5, xz_nif_write_file, 0},
    {"write_file", 6, xz_nif_write_file, 0},
    {"delete_file", 4, xz_nif_delete_file, 0},
    {"lock_file", 1, xz_nif_lock_file, 0},
    {"unlock_file", 1, xz_nif_unlock_file, 0},
    {"outbuf_new", 2, xz_nif_outbuf_new, 0},
    {"outbuf_put", 4, xz_nif_outbuf_put, 0},
    {"outbuf_fill", 3, xz_nif_outbuf_fill, 0},
    {"outbuf_put_batch", 6, xz_nif_outbuf_put_batch, 0},
    {"outbuf_finish", 1, xz_nif_outbuf_finish, 0},
    {"bufpool_info", 0, xz_nif_bufpool_info, 0},
    {"decode_into", 7, xz_nif_decode_into, 0},
};

ERL_NIF_INIT(Elixir.ExZarr.Native, funcs, load, NULL, NULL, unload)
