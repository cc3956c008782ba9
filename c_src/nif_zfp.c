/* NIF glue of the zfp codec (zfpcodec.c): zfp_encode(data, type, shape, mode, param),
 * zfp_decode(data, type, shape). Large arrays run on dirty CPU schedulers. */
#include "bufpool.h"
#include "nif_funs.h"
#include "nif_util.h"
#include "zfpcodec.h"

/* zfp costs about ten times lz4 per byte. */
#define ZFP_COST 10

static ERL_NIF_TERM zfp_encode_run(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]) {
    (void)argc;
    ErlNifBinary in, out;
    uint64_t shape[XZ_MAX_DIMS];
    int type, ndim, mode;
    double param;
    if (!enif_inspect_binary(env, argv[0], &in) || !enif_get_int(env, argv[1], &type) ||
        !xz_get_shape(env, argv[2], shape, &ndim) || !enif_get_int(env, argv[3], &mode) ||
        !enif_get_double(env, argv[4], &param))
        return enif_make_badarg(env);
    const char *why = NULL;
    size_t max = xz_zfp_max_encoded(type, shape, ndim, mode, param, &why), n = 0;
    if (!max) return xz_error(env, "zfp", "%s", why);
    if (!enif_alloc_binary(max, &out)) return xz_error(env, "memory", "cannot allocate %zu bytes", max);
    why = xz_zfp_encode(in.data, in.size, type, shape, ndim, mode, param, out.data, out.size, &n);
    if (why) {
        enif_release_binary(&out);
        return xz_error(env, "zfp", "%s", why);
    }
    return xz_ok_binary(env, &out, n);
}

XZ_NIF(zfp_encode) {
    ErlNifBinary in;
    if (!enif_inspect_binary(env, argv[0], &in)) return enif_make_badarg(env);
    return xz_maybe_dirty(env, "zfp_encode", in.size * ZFP_COST, zfp_encode_run, argc, argv);
}

static ERL_NIF_TERM zfp_decode_run(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]) {
    (void)argc;
    ErlNifBinary in;
    uint64_t shape[XZ_MAX_DIMS];
    int type, ndim;
    size_t size, copy_size = 0, copy_cap = 0;
    if (!enif_inspect_binary(env, argv[0], &in) || !enif_get_int(env, argv[1], &type) ||
        !xz_get_shape(env, argv[2], shape, &ndim) || type < 1 || type > 4)
        return enif_make_badarg(env);
    if (xz_shape_bytes(shape, ndim, type % 2 ? 4 : 8, &size) != 0)
        return xz_error(env, "zfp", "array shape is too large");
    const char *why = xz_zfp_decode_copy_size(in.data, in.size, type, shape, ndim, &copy_size);
    if (why) return xz_error(env, "zfp", "%s", why);
    /* Both from the pool: memory already faulted in, not pages the kernel hands over one by one. */
    xz_result out;
    uint8_t *data = xz_result_alloc(&out, size);
    if (!data) return xz_error(env, "memory", "cannot allocate %zu bytes", size);
    uint8_t *copy = xz_bufpool_get(copy_size, &copy_cap);
    if (!copy) {
        xz_result_release(&out);
        return xz_error(env, "memory", "cannot allocate %zu bytes", copy_size);
    }
    why = xz_zfp_decode(in.data, in.size, type, shape, ndim, data, size, copy, copy_cap);
    xz_bufpool_put(copy, copy_cap);
    if (why) {
        xz_result_release(&out);
        return xz_error(env, "zfp", "%s", why);
    }
    return xz_ok(env, xz_result_term(env, &out, size));
}

XZ_NIF(zfp_decode) {
    ErlNifBinary in;
    if (!enif_inspect_binary(env, argv[0], &in)) return enif_make_badarg(env);
    return xz_maybe_dirty(env, "zfp_decode", in.size * ZFP_COST, zfp_decode_run, argc, argv);
}
