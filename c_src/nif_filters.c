/* NIF glue of the numcodecs filter kernels in filters.c. */
#include <string.h>

#include "filters.h"
#include "nif_funs.h"
#include "nif_util.h"

static int get_type(ErlNifEnv *env, ERL_NIF_TERM t, xz_type *out) {
    char name[16];
    if (enif_get_atom(env, t, name, sizeof name, ERL_NIF_LATIN1) <= 0) return 0;
    int ty = xz_type_parse(name);
    if (ty < 0) return 0;
    *out = (xz_type)ty;
    return 1;
}

static int get_double(ErlNifEnv *env, ERL_NIF_TERM t, double *out) {
    ErlNifSInt64 i;
    if (enif_get_double(env, t, out)) return 1;
    if (!enif_get_int64(env, t, &i)) return 0;
    *out = (double)i;
    return 1;
}

/* Parses (data, in_type, out_type) and allocates the output for the same element count.
 * Returns 0 with *err set on failure. */
static int elementwise(ErlNifEnv *env, const ERL_NIF_TERM argv[], const char *tag, ErlNifBinary *in,
                       xz_type *from, xz_type *to, ErlNifBinary *out, size_t *n, ERL_NIF_TERM *err) {
    if (!enif_inspect_binary(env, argv[0], in) || !get_type(env, argv[1], from) ||
        !get_type(env, argv[2], to)) {
        *err = enif_make_badarg(env);
        return 0;
    }
    size_t is = xz_type_size(*from);
    if (in->size % is != 0) {
        *err = xz_error(env, tag, "%zu bytes is not a whole number of %zu-byte elements", in->size, is);
        return 0;
    }
    *n = in->size / is;
    if (!enif_alloc_binary(*n * xz_type_size(*to), out)) {
        *err = xz_error(env, "memory", "cannot allocate the output");
        return 0;
    }
    return 1;
}

#define ELEMENTWISE(tag)                                                      \
    ErlNifBinary in, out;                                                     \
    xz_type from, to;                                                         \
    size_t n;                                                                 \
    ERL_NIF_TERM err;                                                         \
    if (!elementwise(env, argv, tag, &in, &from, &to, &out, &n, &err)) return err

#define DIRTY_BY_INPUT(name)                                                                \
    XZ_NIF(name) {                                                                          \
        ErlNifBinary in;                                                                    \
        if (!enif_inspect_binary(env, argv[0], &in)) return enif_make_badarg(env);          \
        return xz_maybe_dirty(env, #name, in.size * 4, name##_run, argc, argv);             \
    }

/* cast(data, from, to) */
static ERL_NIF_TERM cast_run(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]) {
    (void)argc;
    ELEMENTWISE("cast");
    xz_cast(out.data, to, in.data, from, n);
    return xz_ok(env, enif_make_binary(env, &out));
}
DIRTY_BY_INPUT(cast)

/* delta_encode(data, dtype, astype) */
static ERL_NIF_TERM delta_encode_run(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]) {
    (void)argc;
    ELEMENTWISE("delta");
    xz_delta_encode(out.data, to, in.data, from, n);
    return xz_ok(env, enif_make_binary(env, &out));
}
DIRTY_BY_INPUT(delta_encode)

/* delta_decode(data, astype, dtype) */
static ERL_NIF_TERM delta_decode_run(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]) {
    (void)argc;
    ELEMENTWISE("delta");
    xz_delta_decode(out.data, to, in.data, from, n);
    return xz_ok(env, enif_make_binary(env, &out));
}
DIRTY_BY_INPUT(delta_decode)

/* fso_encode(data, dtype, astype, offset, scale, int_math) */
static ERL_NIF_TERM fso_encode_run(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]) {
    (void)argc;
    double offset, scale;
    if (!get_double(env, argv[3], &offset) || !get_double(env, argv[4], &scale) ||
        !enif_is_atom(env, argv[5]))
        return enif_make_badarg(env);
    ELEMENTWISE("fixedscaleoffset");
    xz_fso_encode(out.data, to, in.data, from, n, offset, scale, enif_is_identical(argv[5], xz_atom_true));
    return xz_ok(env, enif_make_binary(env, &out));
}
DIRTY_BY_INPUT(fso_encode)

/* fso_decode(data, astype, dtype, offset, scale) */
static ERL_NIF_TERM fso_decode_run(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]) {
    (void)argc;
    double offset, scale;
    if (!get_double(env, argv[3], &offset) || !get_double(env, argv[4], &scale))
        return enif_make_badarg(env);
    ELEMENTWISE("fixedscaleoffset");
    xz_fso_decode(out.data, to, in.data, from, n, offset, scale);
    return xz_ok(env, enif_make_binary(env, &out));
}
DIRTY_BY_INPUT(fso_decode)

/* scale_offset(data, dtype, offset, scale, decode): offset and scale as elements of dtype */
static ERL_NIF_TERM scale_offset_run(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]) {
    (void)argc;
    ErlNifBinary in, offset, scale, out;
    xz_type t;
    if (!enif_inspect_binary(env, argv[0], &in) || !get_type(env, argv[1], &t) || t == XZ_BOOL ||
        !enif_inspect_binary(env, argv[2], &offset) || !enif_inspect_binary(env, argv[3], &scale) ||
        !enif_is_atom(env, argv[4]))
        return enif_make_badarg(env);
    size_t size = xz_type_size(t);
    if (offset.size != size || scale.size != size) return enif_make_badarg(env);
    if (in.size % size != 0)
        return xz_error(env, "scale_offset", "%zu bytes is not a whole number of %zu-byte elements",
                        in.size, size);
    int decode = enif_is_identical(argv[4], xz_atom_true);
    if (!xz_type_is_float(t)) {
        /* A zero integer scale would divide by zero: refused before any element. */
        int zero = 1;
        for (size_t i = 0; i < size; i++) zero &= scale.data[i] == 0;
        if (zero) return xz_error(env, "scale_offset", "scale is zero");
    }
    if (!enif_alloc_binary(in.size, &out)) return xz_error(env, "memory", "cannot allocate the output");
    size_t bad = xz_scale_offset(out.data, in.data, t, in.size / size, decode, offset.data, scale.data);
    if (bad) {
        enif_release_binary(&out);
        return xz_error(env, "scale_offset",
                        decode ? "element %zu is not a multiple of scale or decodes out of range"
                               : "element %zu encodes out of range",
                        bad - 1);
    }
    return xz_ok(env, enif_make_binary(env, &out));
}
DIRTY_BY_INPUT(scale_offset)

/* cast_value(data, from, to, rounding, out_of_range, keys, values): rounding and out_of_range
 * as the indexes of xz_rounding and xz_out_of_range; the scalar map as two binaries of as
 * many elements of `from` and of `to`. */
static ERL_NIF_TERM cast_value_run(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]) {
    (void)argc;
    int rounding, range;
    ErlNifBinary keys, values;
    if (!enif_get_int(env, argv[3], &rounding) || rounding < 0 || rounding > XZ_ROUND_NEAREST_AWAY ||
        !enif_get_int(env, argv[4], &range) || range < 0 || range > XZ_RANGE_WRAP ||
        !enif_inspect_binary(env, argv[5], &keys) || !enif_inspect_binary(env, argv[6], &values))
        return enif_make_badarg(env);
    ELEMENTWISE("cast_value");
    size_t entries = keys.size / xz_type_size(from);
    if (from == XZ_BOOL || to == XZ_BOOL || keys.size % xz_type_size(from) != 0 ||
        values.size != entries * xz_type_size(to)) {
        enif_release_binary(&out);
        return enif_make_badarg(env);
    }
    size_t bad = 0;
    xz_cast_status status = xz_cast_value(out.data, to, in.data, from, n, (xz_rounding)rounding,
                                          (xz_out_of_range)range, keys.data, values.data, entries, &bad);
    if (status == XZ_CAST_OK) return xz_ok(env, enif_make_binary(env, &out));
    enif_release_binary(&out);
    if (status == XZ_CAST_NO_MEMORY) return xz_error(env, "memory", "cannot allocate the scalar map");
    static const char *const why[] = {"", "is out of the range of the target type",
                                      "is NaN, which an integer type cannot hold",
                                      "is infinite, which an integer type cannot hold"};
    return xz_error(env, "cast_value", "element %zu %s", bad, why[status]);
}
DIRTY_BY_INPUT(cast_value)

/* quantize(data, dtype, astype, scale) */
static ERL_NIF_TERM quantize_run(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]) {
    (void)argc;
    double scale;
    if (!get_double(env, argv[3], &scale)) return enif_make_badarg(env);
    ELEMENTWISE("quantize");
    xz_quantize(out.data, to, in.data, from, n, scale);
    return xz_ok(env, enif_make_binary(env, &out));
}
DIRTY_BY_INPUT(quantize)

/* bitround(data, width, keepbits) */
static ERL_NIF_TERM bitround_run(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]) {
    (void)argc;
    ErlNifBinary in, out;
    int width, keepbits;
    if (!enif_inspect_binary(env, argv[0], &in) || !enif_get_int(env, argv[1], &width) ||
        !enif_get_int(env, argv[2], &keepbits))
        return enif_make_badarg(env);
    int bits = width == 2 ? 10 : width == 4 ? 23 : width == 8 ? 52 : -1;
    if (bits < 0) return xz_error(env, "bitround", "float width must be 2, 4 or 8, got %d", width);
    if (keepbits < 0 || keepbits > bits)
        return xz_error(env, "bitround", "keepbits must be 0..%d for %d-byte floats", bits, width);
    if (in.size % (size_t)width != 0)
        return xz_error(env, "bitround", "%zu bytes is not a whole number of floats", in.size);
    if (!enif_alloc_binary(in.size, &out)) return xz_error(env, "memory", "cannot allocate the output");
    xz_bitround(out.data, in.data, in.size, width, keepbits);
    return xz_ok(env, enif_make_binary(env, &out));
}
DIRTY_BY_INPUT(bitround)

/* shuffle(data, elementsize) / unshuffle(data, elementsize) */
static ERL_NIF_TERM shuffle_common(ErlNifEnv *env, const ERL_NIF_TERM argv[], int forward) {
    ErlNifBinary in, out;
    size_t es;
    if (!enif_inspect_binary(env, argv[0], &in) || !xz_get_size(env, argv[1], &es))
        return enif_make_badarg(env);
    if (es > 1 && in.size % es != 0)
        return xz_error(env, "shuffle", "%zu bytes is not a whole number of %zu-byte elements", in.size, es);
    if (es <= 1) return xz_ok(env, argv[0]);
    if (!enif_alloc_binary(in.size, &out)) return xz_error(env, "memory", "cannot allocate the output");
    if (forward)
        xz_shuffle(out.data, in.data, in.size, es);
    else
        xz_unshuffle(out.data, in.data, in.size, es);
    return xz_ok(env, enif_make_binary(env, &out));
}

static ERL_NIF_TERM shuffle_run(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]) {
    (void)argc;
    return shuffle_common(env, argv, 1);
}
DIRTY_BY_INPUT(shuffle)

static ERL_NIF_TERM unshuffle_run(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]) {
    (void)argc;
    return shuffle_common(env, argv, 0);
}
DIRTY_BY_INPUT(unshuffle)

/* packbits(data) / unpackbits(data, n) */
static ERL_NIF_TERM packbits_run(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]) {
    (void)argc;
    ErlNifBinary in, out;
    if (!enif_inspect_binary(env, argv[0], &in)) return enif_make_badarg(env);
    if (!enif_alloc_binary(1 + (in.size + 7) / 8, &out))
        return xz_error(env, "memory", "cannot allocate the output");
    xz_packbits(out.data, in.data, in.size);
    return xz_ok(env, enif_make_binary(env, &out));
}
DIRTY_BY_INPUT(packbits)

static ERL_NIF_TERM unpackbits_run(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]) {
    (void)argc;
    ErlNifBinary in, out;
    size_t n;
    if (!enif_inspect_binary(env, argv[0], &in) || !xz_get_size(env, argv[1], &n))
        return enif_make_badarg(env);
    if (in.size == 0 || n / 8 > in.size) return xz_error(env, "packbits", "packed data does not hold %zu values", n);
    if (!enif_alloc_binary(n, &out)) return xz_error(env, "memory", "cannot allocate the output");
    const char *why = xz_unpackbits(out.data, n, in.data, in.size);
    if (why) {
        enif_release_binary(&out);
        return xz_error(env, "packbits", "%s", why);
    }
    return xz_ok(env, enif_make_binary(env, &out));
}
DIRTY_BY_INPUT(unpackbits)
