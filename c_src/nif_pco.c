/* NIF glue of pcodec (pcocodec.h): pco_compress(data, dtype, {level, mode, delta, order,
 * page_n}), pco_decompress(data, dtype, size). Without the Rust library (no cargo at build
 * time) both answer {:error, {:pcodec, "not built"}}. Large inputs run on dirty CPU
 * schedulers. After each call the trimmer thread of bufpool.c is told that pcodec keeps
 * working memory, which it gives back once unused for a while (pco_kept_bytes() says how
 * much is kept). */
#include <string.h>

#include "bufpool.h"
#include "nif_funs.h"
#include "nif_util.h"
#include "pcocodec.h"

/* pcodec costs about twenty times lz4 per byte (more at high levels, less to decode). */
#define PCO_COST 20

#ifdef XZ_WITH_PCO
static ERL_NIF_TERM pco_compress_run(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]) {
    (void)argc;
    ErlNifBinary in;
    unsigned dtype, level, mode, delta, order;
    ErlNifUInt64 page_n;
    int arity;
    const ERL_NIF_TERM *c;
    if (!enif_inspect_binary(env, argv[0], &in) || !enif_get_uint(env, argv[1], &dtype) ||
        !enif_get_tuple(env, argv[2], &arity, &c) || arity != 5 || !enif_get_uint(env, c[0], &level) ||
        !enif_get_uint(env, c[1], &mode) || !enif_get_uint(env, c[2], &delta) ||
        !enif_get_uint(env, c[3], &order) || !enif_get_uint64(env, c[4], &page_n))
        return enif_make_badarg(env);
    xz_pco_config config = {level, mode, delta, order, page_n};
    xz_pco_buf buf = {NULL, 0, 0};
    char err[256];
    int failed = xz_pco_compress(dtype, in.data, in.size, &config, &buf, err, sizeof err);
    xz_bufpool_wake();
    if (failed) return xz_error(env, "pcodec", "%s", err);
    xz_result out;
    uint8_t *data = xz_result_alloc(&out, buf.len);
    if (data) memcpy(data, buf.data, buf.len);
    xz_pco_free(&buf);
    if (!data) return xz_error(env, "memory", "cannot allocate %zu bytes", buf.len);
    return xz_ok(env, xz_result_term(env, &out, buf.len));
}

static ERL_NIF_TERM pco_decompress_run(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]) {
    (void)argc;
    ErlNifBinary in;
    unsigned dtype;
    size_t size;
    if (!enif_inspect_binary(env, argv[0], &in) || !enif_get_uint(env, argv[1], &dtype) ||
        !xz_get_size(env, argv[2], &size))
        return enif_make_badarg(env);
    /* Pooled memory, already faulted in (see bufpool.c). */
    xz_result out;
    uint8_t *data = xz_result_alloc(&out, size);
    if (!data) return xz_error(env, "memory", "cannot allocate %zu bytes", size);
    char err[256];
    int failed = xz_pco_decompress(dtype, in.data, in.size, data, size, err, sizeof err);
    xz_bufpool_wake();
    if (failed) {
        xz_result_release(&out);
        return xz_error(env, "pcodec", "%s", err);
    }
    return xz_ok(env, xz_result_term(env, &out, size));
}

XZ_NIF(pco_compress) {
    ErlNifBinary in;
    if (!enif_inspect_binary(env, argv[0], &in)) return enif_make_badarg(env);
    return xz_maybe_dirty(env, "pco_compress", in.size * PCO_COST, pco_compress_run, argc, argv);
}

XZ_NIF(pco_decompress) {
    size_t size;
    if (!xz_get_size(env, argv[2], &size)) return enif_make_badarg(env);
    return xz_maybe_dirty(env, "pco_decompress", size * PCO_COST, pco_decompress_run, argc, argv);
}

XZ_NIF(pco_kept_bytes) {
    (void)argc;
    (void)argv;
    return enif_make_uint64(env, xz_pco_release_idle(UINT64_MAX));
}
#else
XZ_NIF(pco_kept_bytes) {
    (void)argc;
    (void)argv;
    return enif_make_uint64(env, 0);
}

XZ_NIF(pco_compress) {
    (void)argc;
    (void)argv;
    return xz_error(env, "pcodec", "ExZarr was built without pcodec (cargo was not found)");
}

XZ_NIF(pco_decompress) {
    (void)argc;
    (void)argv;
    return xz_error(env, "pcodec", "ExZarr was built without pcodec (cargo was not found)");
}
#endif
