/* Element kernels of the numcodecs filters, following numpy's casting and arithmetic. */
#include "filters.h"

#include <float.h>
#include <stdlib.h>
#include <math.h>
#include <string.h>

static const size_t type_size[XZ_NTYPES] = {1, 1, 2, 4, 8, 1, 2, 4, 8, 2, 4, 8};
static const char *const type_name[XZ_NTYPES] = {"bool",   "int8",   "int16",   "int32",
                                                 "int64",  "uint8",  "uint16",  "uint32",
                                                 "uint64", "float16", "float32", "float64"};

int xz_type_parse(const char *name) {
    for (int t = 0; t < XZ_NTYPES; t++)
        if (strcmp(name, type_name[t]) == 0) return t;
    return -1;
}

size_t xz_type_size(xz_type t) { return type_size[t]; }

int xz_type_is_float(xz_type t) { return t == XZ_F16 || t == XZ_F32 || t == XZ_F64; }

static int is_unsigned(xz_type t) { return t == XZ_BOOL || (t >= XZ_U8 && t <= XZ_U64); }

/* ---- IEEE half precision ---- */

static double half_to_double(uint16_t h) {
    int exp = (h >> 10) & 0x1f;
    double mant = h & 0x3ff;
    double v;
    if (exp == 0)
        v = ldexp(mant, -24);
    else if (exp == 31)
        v = mant ? NAN : INFINITY;
    else
        v = ldexp(mant + 1024, exp - 25);
    return (h & 0x8000) ? -v : v;
}

/* Round to nearest even, directly from double (no double rounding through float). */
static uint16_t double_to_half(double x) {
    uint16_t sign = signbit(x) ? 0x8000 : 0;
    double a = fabs(x);
    if (isnan(x)) return sign | 0x7e00;
    if (isinf(x)) return sign | 0x7c00;
    if (a < ldexp(1, -14)) return sign | (uint16_t)nearbyint(ldexp(a, 24));
    int e;
    frexp(a, &e);
    e -= 1; /* a = m * 2^e with m in [1, 2) */
    double m = nearbyint(ldexp(a, 10 - e));
    if (m >= 2048) {
        m = 1024;
        e++;
    }
    if (e > 15) return sign | 0x7c00;
    return sign | (uint16_t)((e + 15) << 10) | (uint16_t)(m - 1024);
}

/* ---- Numbers: an integer (as int64 bits) or a double ---- */

typedef struct {
    int flt;
    int uns;
    int64_t i;
    double f;
} num;

static num load(const uint8_t *p, xz_type t) {
    num v = {0, is_unsigned(t), 0, 0};
    switch (t) {
    case XZ_BOOL: v.i = p[0] != 0; break;
    case XZ_I8: v.i = (int8_t)p[0]; break;
    case XZ_U8: v.i = p[0]; break;
    case XZ_I16: { int16_t x; memcpy(&x, p, 2); v.i = x; break; }
    case XZ_U16: { uint16_t x; memcpy(&x, p, 2); v.i = x; break; }
    case XZ_I32: { int32_t x; memcpy(&x, p, 4); v.i = x; break; }
    case XZ_U32: { uint32_t x; memcpy(&x, p, 4); v.i = x; break; }
    case XZ_I64:
    case XZ_U64: memcpy(&v.i, p, 8); break;
    case XZ_F16: { uint16_t x; memcpy(&x, p, 2); v.flt = 1; v.f = half_to_double(x); break; }
    case XZ_F32: { float x; memcpy(&x, p, 4); v.flt = 1; v.f = x; break; }
    case XZ_F64: v.flt = 1; memcpy(&v.f, p, 8); break;
    default: break;
    }
    return v;
}

static double as_double(num v) {
    if (v.flt) return v.f;
    return v.uns ? (double)(uint64_t)v.i : (double)v.i;
}

/* C (x86) float -> integer conversion as numpy does it: through int32 for narrow types and
 * int64 for wide ones; NaN and out-of-range values give the "integer indefinite" value. */
static int64_t float_to_bits(double x, xz_type t) {
    if (t == XZ_U64 && x >= 9223372036854775808.0 && x < 18446744073709551616.0)
        return (int64_t)(uint64_t)x;
    if (t == XZ_I64 || t == XZ_U32 || t == XZ_U64) {
        if (!(x > -9223372036854775809.0 && x < 9223372036854775808.0)) return INT64_MIN;
        return (int64_t)x;
    }
    if (!(x > -2147483649.0 && x < 2147483648.0)) return INT32_MIN;
    return (int32_t)x;
}

static void store(uint8_t *p, xz_type t, num v) {
    if (xz_type_is_float(t)) {
        double x = as_double(v);
        if (t == XZ_F64) memcpy(p, &x, 8);
        else if (t == XZ_F32) { float f = (float)x; memcpy(p, &f, 4); }
        else { uint16_t h = double_to_half(x); memcpy(p, &h, 2); }
        return;
    }
    if (t == XZ_BOOL) {
        p[0] = v.flt ? v.f != 0 : v.i != 0;
        return;
    }
    uint64_t bits = (uint64_t)(v.flt ? float_to_bits(v.f, t) : v.i);
    switch (type_size[t]) {
    case 1: p[0] = (uint8_t)bits; break;
    case 2: { uint16_t x = (uint16_t)bits; memcpy(p, &x, 2); break; }
    case 4: { uint32_t x = (uint32_t)bits; memcpy(p, &x, 4); break; }
    default: memcpy(p, &bits, 8); break;
    }
}

/* Rounds a double to the precision of float type t. */
static double round_to(xz_type t, double x) {
    if (t == XZ_F32) return (float)x;
    if (t == XZ_F16) return half_to_double(double_to_half(x));
    return x;
}

/* Wraps an integer to the width and signedness of integer type t. */
static int64_t wrap_to(xz_type t, uint64_t x) {
    num v = {0, is_unsigned(t), 0, 0};
    uint8_t buf[8];
    v.i = (int64_t)x;
    store(buf, t, v);
    return load(buf, t).i;
}

static num make_float(double f) {
    num v = {1, 0, 0, f};
    return v;
}

static num make_int(xz_type t, int64_t i) {
    num v = {0, is_unsigned(t), i, 0};
    return v;
}

/* Typed loops for the conversions where a C cast is numpy's cast: integer to anything
 * (but bool and float16) and float to float. */
#define CAST_LOOP(TO, FROM)                                      \
    for (size_t i = 0; i < n; i++) {                             \
        FROM x;                                                  \
        memcpy(&x, in + i * sizeof(FROM), sizeof(FROM));         \
        TO y = (TO)x;                                            \
        memcpy(out + i * sizeof(TO), &y, sizeof(TO));            \
    }                                                            \
    return 1;
#define CAST_TO_FLOAT(FROM)                                      \
    case XZ_F32: CAST_LOOP(float, FROM)                          \
    case XZ_F64: CAST_LOOP(double, FROM)
#define CAST_FROM_INT(FROM)                                      \
    switch (to) {                                                \
    case XZ_I8: CAST_LOOP(int8_t, FROM)                          \
    case XZ_I16: CAST_LOOP(int16_t, FROM)                        \
    case XZ_I32: CAST_LOOP(int32_t, FROM)                        \
    case XZ_I64: CAST_LOOP(int64_t, FROM)                        \
    case XZ_U8: CAST_LOOP(uint8_t, FROM)                         \
    case XZ_U16: CAST_LOOP(uint16_t, FROM)                       \
    case XZ_U32: CAST_LOOP(uint32_t, FROM)                       \
    case XZ_U64: CAST_LOOP(uint64_t, FROM)                       \
    CAST_TO_FLOAT(FROM)                                          \
    default: return 0;                                           \
    }

static int cast_fast(uint8_t *out, xz_type to, const uint8_t *in, xz_type from, size_t n) {
    switch (from) {
    case XZ_I8: CAST_FROM_INT(int8_t)
    case XZ_I16: CAST_FROM_INT(int16_t)
    case XZ_I32: CAST_FROM_INT(int32_t)
    case XZ_I64: CAST_FROM_INT(int64_t)
    case XZ_U8: CAST_FROM_INT(uint8_t)
    case XZ_U16: CAST_FROM_INT(uint16_t)
    case XZ_U32: CAST_FROM_INT(uint32_t)
    case XZ_U64: CAST_FROM_INT(uint64_t)
    case XZ_F32: switch (to) { CAST_TO_FLOAT(float) default: return 0; }
    case XZ_F64: switch (to) { CAST_TO_FLOAT(double) default: return 0; }
    default: return 0;
    }
}

void xz_cast(uint8_t *out, xz_type to, const uint8_t *in, xz_type from, size_t n) {
    size_t is = type_size[from], os = type_size[to];
    if (from == to) {
        memcpy(out, in, n * is);
        return;
    }
    if (cast_fast(out, to, in, from, n)) return;
    for (size_t i = 0; i < n; i++) store(out + i * os, to, load(in + i * is, from));
}

/* a - b or a + b in type t (wrapping for integers, rounded for floats). */
static num arith(xz_type t, num a, num b, int subtract) {
    if (xz_type_is_float(t)) {
        double x = as_double(a), y = as_double(b);
        return make_float(round_to(t, subtract ? x - y : x + y));
    }
    uint64_t x = (uint64_t)a.i, y = (uint64_t)b.i;
    return make_int(t, wrap_to(t, subtract ? x - y : x + y));
}

/* v converted to type t (as a number of that type). */
static num convert(xz_type t, num v) {
    uint8_t buf[8];
    store(buf, t, v);
    return load(buf, t);
}

/* Delta in one type: integers wrap (unsigned arithmetic of the same width), floats use the
 * type's own arithmetic. Returns 0 for types without a typed loop. */
#define DELTA_LOOP(T, ACC, ENCODE)                                      \
    {                                                                   \
        ACC prev = 0;                                                   \
        for (size_t i = 0; i < n; i++) {                                \
            T x;                                                        \
            memcpy(&x, in + i * sizeof(T), sizeof(T));                  \
            ACC y;                                                      \
            if (ENCODE) {                                               \
                y = (ACC)x - prev;                                      \
                prev = (ACC)x;                                          \
            } else {                                                    \
                y = prev = prev + (ACC)x;                               \
            }                                                           \
            memcpy(out + i * sizeof(T), &y, sizeof(T));                 \
        }                                                               \
        return 1;                                                       \
    }

static int delta_same_type(uint8_t *out, const uint8_t *in, xz_type t, size_t n, int encode) {
    switch (t) {
    case XZ_I8:
    case XZ_U8: DELTA_LOOP(uint8_t, uint8_t, encode)
    case XZ_I16:
    case XZ_U16: DELTA_LOOP(uint16_t, uint16_t, encode)
    case XZ_I32:
    case XZ_U32: DELTA_LOOP(uint32_t, uint32_t, encode)
    case XZ_I64:
    case XZ_U64: DELTA_LOOP(uint64_t, uint64_t, encode)
    case XZ_F32: DELTA_LOOP(float, float, encode)
    case XZ_F64: DELTA_LOOP(double, double, encode)
    default: return 0;
    }
}

void xz_delta_encode(uint8_t *out, xz_type astype, const uint8_t *in, xz_type dtype, size_t n) {
    size_t is = type_size[dtype], os = type_size[astype];
    if (n == 0) return;
    if (astype == dtype && delta_same_type(out, in, dtype, n, 1)) return;
    num prev = load(in, dtype);
    store(out, astype, prev);
    for (size_t i = 1; i < n; i++) {
        num cur = load(in + i * is, dtype);
        store(out + i * os, astype, arith(dtype, cur, prev, 1));
        prev = cur;
    }
}

void xz_delta_decode(uint8_t *out, xz_type dtype, const uint8_t *in, xz_type astype, size_t n) {
    size_t is = type_size[astype], os = type_size[dtype];
    if (astype == dtype && delta_same_type(out, in, dtype, n, 0)) return;
    num acc = convert(dtype, make_int(XZ_I64, 0));
    for (size_t i = 0; i < n; i++) {
        acc = i == 0 ? convert(dtype, load(in, astype))
                     : arith(dtype, acc, convert(dtype, load(in + i * is, astype)), 0);
        store(out + i * os, dtype, acc);
    }
}

/* numpy's rint (round half to even) without a libm call: adding and removing 2^52 rounds in
 * the FPU's default round-to-nearest-even mode. */
static double rint_even(double x) {
    const double big = 4503599627370496.0;
    double a = fabs(x);
    if (!(a < big)) return x; /* NaN, infinities and values that are already integers */
    return copysign((a + big) - big, x);
}

/* The type numpy computes in when a float scalar meets an array of type t. */
static xz_type float_math_type(xz_type t) { return xz_type_is_float(t) ? t : XZ_F64; }

/* Blocks of elements go through a double buffer: typed loads, arithmetic in the computation
 * type, typed stores, each loop with its type switch outside. */
#define XZ_BLOCK 1024

#define LOAD_LOOP(T)                                  \
    for (size_t i = 0; i < n; i++) {                  \
        T x;                                          \
        memcpy(&x, in + i * sizeof(T), sizeof(T));    \
        t[i] = (double)x;                             \
    }                                                 \
    return;

static void load_doubles(double *t, const uint8_t *in, xz_type type, size_t n) {
    switch (type) {
    case XZ_F64: LOAD_LOOP(double)
    case XZ_F32: LOAD_LOOP(float)
    case XZ_I32: LOAD_LOOP(int32_t)
    case XZ_I16: LOAD_LOOP(int16_t)
    case XZ_U8: LOAD_LOOP(uint8_t)
    case XZ_U16: LOAD_LOOP(uint16_t)
    default:
        for (size_t i = 0; i < n; i++) t[i] = as_double(load(in + i * type_size[type], type));
    }
}

#define STORE_FLOAT_LOOP(T)                           \
    for (size_t i = 0; i < n; i++) {                  \
        T y = (T)t[i];                                \
        memcpy(out + i * sizeof(T), &y, sizeof(T));   \
    }                                                 \
    return;
#define STORE_INT_LOOP(T)                                           \
    for (size_t i = 0; i < n; i++) {                                \
        T y = (T)(uint64_t)float_to_bits(t[i], type);               \
        memcpy(out + i * sizeof(T), &y, sizeof(T));                 \
    }                                                               \
    return;

static void store_doubles(uint8_t *out, xz_type type, const double *t, size_t n) {
    switch (type) {
    case XZ_F64: STORE_FLOAT_LOOP(double)
    case XZ_F32: STORE_FLOAT_LOOP(float)
    case XZ_I8:
    case XZ_U8: STORE_INT_LOOP(uint8_t)
    case XZ_I16:
    case XZ_U16: STORE_INT_LOOP(uint16_t)
    case XZ_I32:
    case XZ_U32: STORE_INT_LOOP(uint32_t)
    case XZ_I64:
    case XZ_U64: STORE_INT_LOOP(uint64_t)
    default:
        for (size_t i = 0; i < n; i++) store(out + i * type_size[type], type, make_float(t[i]));
    }
}

/* Applies `OP` (an expression of x, computed in type ct) to every element, block by block. */
#define BLOCKWISE(OP)                                                                 \
    do {                                                                              \
        double t[XZ_BLOCK];                                                           \
        for (size_t b = 0; b < n; b += XZ_BLOCK) {                                    \
            size_t m = n - b < XZ_BLOCK ? n - b : XZ_BLOCK;                           \
            load_doubles(t, in + b * is, from, m);                                    \
            if (ct == XZ_F64)                                                         \
                for (size_t i = 0; i < m; i++) {                                      \
                    double x = t[i];                                                  \
                    t[i] = (OP);                                                      \
                }                                                                     \
            else                                                                      \
                for (size_t i = 0; i < m; i++) {                                      \
                    double x = t[i];                                                  \
                    t[i] = (OP);                                                      \
                }                                                                     \
            store_doubles(out + b * os, to, t, m);                                    \
        }                                                                             \
    } while (0)

/* Rounds to ct's precision; the F64 loop above lets the compiler drop the switch. */
#define R(v) (ct == XZ_F64 ? (v) : round_to(ct, (v)))

void xz_fso_encode(uint8_t *out, xz_type astype, const uint8_t *in, xz_type dtype, size_t n,
                   double offset, double scale, int int_math) {
    size_t is = type_size[dtype], os = type_size[astype];
    if (int_math) {
        /* Integral values in int64 range from the NIF; anything else saturates, never UB. */
        num off = convert(dtype, make_int(XZ_I64, float_to_bits(offset, XZ_I64)));
        num sc = convert(dtype, make_int(XZ_I64, float_to_bits(scale, XZ_I64)));
        for (size_t i = 0; i < n; i++) {
            num d = arith(dtype, load(in + i * is, dtype), off, 1);
            num p = make_int(dtype, wrap_to(dtype, (uint64_t)d.i * (uint64_t)sc.i));
            store(out + i * os, astype, p);
        }
        return;
    }
    xz_type ct = float_math_type(dtype), from = dtype, to = astype;
    double off = round_to(ct, offset), sc = round_to(ct, scale);
    BLOCKWISE(rint_even(R(R(x - off) * sc)));
}

void xz_fso_decode(uint8_t *out, xz_type dtype, const uint8_t *in, xz_type astype, size_t n,
                   double offset, double scale) {
    size_t is = type_size[astype], os = type_size[dtype];
    xz_type ct = float_math_type(astype), from = astype, to = dtype;
    double off = round_to(ct, offset), sc = round_to(ct, scale);
    BLOCKWISE(R(R(x / sc) + off));
}

/* An integer element as a 128-bit value (unsigned types are never negative). */
static __int128 load_wide(const uint8_t *p, xz_type t) {
    num v = load(p, t);
    return v.uns ? (__int128)(uint64_t)v.i : (__int128)v.i;
}

static __int128 int_min(xz_type t) {
    return is_unsigned(t) ? 0 : -(__int128)(INT64_MAX >> (64 - 8 * type_size[t])) - 1;
}

static __int128 int_max(xz_type t) {
    return is_unsigned(t) ? (__int128)(UINT64_MAX >> (64 - 8 * type_size[t]))
                          : (__int128)(INT64_MAX >> (64 - 8 * type_size[t]));
}

static int fits(xz_type t, __int128 x) { return x >= int_min(t) && x <= int_max(t); }

/* Stores integer v in integer type t by the out-of-range mode; 1 when it does not fit and the
 * mode is an error. Wrapping keeps the low bits (two's complement). */
static int store_int(uint8_t *p, xz_type t, __int128 v, xz_out_of_range range) {
    if (!fits(t, v)) {
        if (range == XZ_RANGE_ERROR) return 1;
        if (range == XZ_RANGE_CLAMP) v = v < 0 ? int_min(t) : int_max(t);
    }
    store(p, t, make_int(t, (int64_t)(uint64_t)v));
    return 0;
}

size_t xz_scale_offset(uint8_t *out, const uint8_t *in, xz_type t, size_t n, int decode,
                       const uint8_t *offset, const uint8_t *scale) {
    size_t is = type_size[t], os = is;
    if (xz_type_is_float(t)) {
        xz_type ct = t, from = t, to = t;
        double off = load(offset, t).f, sc = load(scale, t).f;
        if (decode) BLOCKWISE(R(R(x / sc) + off));
        else BLOCKWISE(R(R(x - off) * sc));
        return 0;
    }
    __int128 off = load_wide(offset, t), sc = load_wide(scale, t);
    for (size_t i = 0; i < n; i++) {
        __int128 x = load_wide(in + i * is, t), r;
        if (decode) {
            if (x % sc != 0) return i + 1;
            r = x / sc + off;
        } else if (__builtin_mul_overflow(x - off, sc, &r)) {
            return i + 1;
        }
        if (store_int(out + i * os, t, r, XZ_RANGE_ERROR)) return i + 1;
    }
    return 0;
}

/* ---- cast_value ---- */

/* Every int64/uint64 and every double is exact in a long double (64-bit mantissa on x86-64,
 * 113 on aarch64): the value a source element stands for, before it is rounded. */
_Static_assert(LDBL_MANT_DIG >= 64, "cast_value needs a long double that holds any uint64 exactly");
typedef long double exact;

static exact exact_of(const uint8_t *p, xz_type t) {
    if (xz_type_is_float(t)) return (exact)load(p, t).f;
    return (exact)load_wide(p, t);
}

/* The value of type t nearest to x, ties to even (infinite when x is beyond t's range). */
static double nearest(xz_type t, exact x) {
    if (t == XZ_F64) return (double)x;
    if (t == XZ_F32) return (float)x;
    return half_to_double(double_to_half((double)x));
}

/* The next value of float type t after v (a value of t) towards +inf (dir 1) or -inf (-1). */
static double step(xz_type t, double v, int dir) {
    if (t == XZ_F64) return nextafter(v, dir * INFINITY);
    if (t == XZ_F32) return nextafterf((float)v, (float)(dir * INFINITY));
    uint16_t h = double_to_half(v);
    int ordered = (h & 0x8000) ? -(int)(h & 0x7fff) : (int)h; /* -0 and +0 both 0 */
    ordered += dir;
    return half_to_double(ordered < 0 ? (uint16_t)(0x8000 | -ordered) : (uint16_t)ordered);
}

/* 2^(emax + 1): where float type t has no exponent left (exact in a long double). */
static exact exponent_overflow(xz_type t) {
    if (t == XZ_F16) return 0x1p16L;
    if (t == XZ_F32) return 0x1p128L;
    return 0x1p1024L;
}

/* Rounds a finite x to float type t by the mode into *res; 1 when x is out of t's range, as
 * cast-value-rs decides it: at least 2^(emax + 1), or rounding to infinity (towards zero,
 * float16 takes 65535.9 as 65504; to nearest, 65520 is out of range). */
static int round_to_float(exact x, xz_type t, xz_rounding mode, double *res) {
    if (fabsl(x) >= exponent_overflow(t)) return 1;
    double near = nearest(t, x);
    if ((exact)near == x) {
        *res = near;
        return 0;
    }
    double lo = (exact)near > x ? step(t, near, -1) : near;
    double hi = (exact)near > x ? near : step(t, near, 1);
    double r = near;
    switch (mode) {
    case XZ_ROUND_TOWARDS_ZERO: r = x > 0 ? lo : hi; break;
    case XZ_ROUND_TOWARDS_POSITIVE: r = hi; break;
    case XZ_ROUND_TOWARDS_NEGATIVE: r = lo; break;
    case XZ_ROUND_NEAREST_AWAY:
        if (x == ((exact)lo + (exact)hi) / 2) r = x > 0 ? hi : lo;
        break;
    default: break;
    }
    if (isinf(r)) return 1;
    *res = r;
    return 0;
}

static double round_integral(double x, xz_rounding mode) {
    switch (mode) {
    case XZ_ROUND_TOWARDS_ZERO: return trunc(x);
    case XZ_ROUND_TOWARDS_POSITIVE: return ceil(x);
    case XZ_ROUND_TOWARDS_NEGATIVE: return floor(x);
    case XZ_ROUND_NEAREST_AWAY: return round(x);
    default: return nearbyint(x);
    }
}

static xz_cast_status cast_element(uint8_t *p, xz_type to, exact x, int from_float,
                                   xz_rounding mode, xz_out_of_range range) {
    if (isnan(x) || isinf(x)) {
        if (!xz_type_is_float(to)) return isnan(x) ? XZ_CAST_NAN : XZ_CAST_INFINITE;
        store(p, to, make_float((double)x));
        return XZ_CAST_OK;
    }
    if (xz_type_is_float(to)) {
        double r;
        if (round_to_float(x, to, mode, &r)) {
            if (range == XZ_RANGE_ERROR) return XZ_CAST_OUT_OF_RANGE;
            r = x < 0 ? -INFINITY : INFINITY;
        }
        store(p, to, make_float(r));
        return XZ_CAST_OK;
    }
    if (!from_float) return store_int(p, to, (__int128)x, range) ? XZ_CAST_OUT_OF_RANGE : XZ_CAST_OK;
    double r = round_integral((double)x, mode);
    __int128 v;
    if (fabs(r) < 0x1p126) {
        v = (__int128)r;
    } else if (range == XZ_RANGE_WRAP) {
        v = 0; /* a multiple of 2^64 */
    } else {
        v = r < 0 ? -((__int128)1 << 126) : ((__int128)1 << 126); /* beyond every type */
    }
    return store_int(p, to, v, range) ? XZ_CAST_OUT_OF_RANGE : XZ_CAST_OK;
}

/* The scalar map, sorted by key for a binary search; NaN keys apart. Of equal keys the last
 * entry counts, as in the dict zarr-python builds from the list. */
typedef struct {
    exact key;
    size_t index;
} map_entry;

static int by_key_then_index(const void *a, const void *b) {
    const map_entry *x = a, *y = b;
    if (x->key != y->key) return x->key < y->key ? -1 : 1;
    return x->index < y->index ? -1 : x->index > y->index;
}

/* The entry for x: its index, or `none`. */
static size_t map_lookup(const map_entry *sorted, size_t count, size_t nan_index, exact x, size_t none) {
    if (isnan(x)) return nan_index;
    size_t lo = 0, hi = count; /* the first entry with key > x */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (sorted[mid].key <= x) lo = mid + 1;
        else hi = mid;
    }
    return lo > 0 && sorted[lo - 1].key == x ? sorted[lo - 1].index : none;
}

xz_cast_status xz_cast_value(uint8_t *out, xz_type to, const uint8_t *in, xz_type from, size_t n,
                             xz_rounding mode, xz_out_of_range range, const uint8_t *keys,
                             const uint8_t *values, size_t entries, size_t *bad) {
    size_t is = type_size[from], os = type_size[to], count = 0, none = entries, nan_index = none;
    map_entry *sorted = malloc((entries ? entries : 1) * sizeof *sorted);
    if (!sorted) return XZ_CAST_NO_MEMORY;
    for (size_t j = 0; j < entries; j++) {
        exact k = exact_of(keys + j * is, from);
        if (isnan(k)) nan_index = j;
        else sorted[count++] = (map_entry){k, j};
    }
    qsort(sorted, count, sizeof *sorted, by_key_then_index);
    int from_float = xz_type_is_float(from);
    xz_cast_status status = XZ_CAST_OK;
    for (size_t i = 0; i < n && status == XZ_CAST_OK; i++) {
        exact x = exact_of(in + i * is, from);
        size_t j = entries ? map_lookup(sorted, count, nan_index, x, none) : none;
        if (j != none) memcpy(out + i * os, values + j * os, os);
        else status = cast_element(out + i * os, to, x, from_float, mode, range);
        if (status != XZ_CAST_OK) *bad = i;
    }
    free(sorted);
    return status;
}

void xz_quantize(uint8_t *out, xz_type astype, const uint8_t *in, xz_type dtype, size_t n, double scale) {
    size_t is = type_size[dtype], os = type_size[astype];
    xz_type ct = float_math_type(dtype), from = dtype, to = astype;
    double sc = round_to(ct, scale);
    BLOCKWISE(R(rint_even(R(sc * x)) / sc));
}

#undef R

#define BITROUND_LOOP(T)                                          \
    for (size_t i = 0; i + sizeof(T) <= len; i += sizeof(T)) {    \
        T b;                                                      \
        memcpy(&b, in + i, sizeof(T));                            \
        b += (T)(((b >> maskbits) & 1) + half);                   \
        b &= (T)mask;                                             \
        memcpy(out + i, &b, sizeof(T));                           \
    }                                                             \
    break;

void xz_bitround(uint8_t *out, const uint8_t *in, size_t len, int width, int keepbits) {
    int bits = width == 2 ? 10 : width == 4 ? 23 : 52;
    if (keepbits >= bits) {
        if (out != in) memcpy(out, in, len);
        return;
    }
    int maskbits = bits - keepbits;
    uint64_t mask = ~0ull << maskbits, half = (1ull << (maskbits - 1)) - 1;
    switch (width) {
    case 2: BITROUND_LOOP(uint16_t)
    case 4: BITROUND_LOOP(uint32_t)
    default: BITROUND_LOOP(uint64_t)
    }
}

/* Element sizes known at compile time let the byte loops unroll. */
#define SHUFFLE_LOOP(ES)                                          \
    for (size_t i = 0; i < n; i++) {                              \
        uint8_t e[ES];                                            \
        memcpy(e, in + i * (ES), ES);                             \
        for (size_t j = 0; j < (ES); j++) out[j * n + i] = e[j];  \
    }                                                             \
    return;
#define UNSHUFFLE_LOOP(ES)                                        \
    for (size_t i = 0; i < n; i++) {                              \
        uint8_t e[ES];                                            \
        for (size_t j = 0; j < (ES); j++) e[j] = in[j * n + i];   \
        memcpy(out + i * (ES), e, ES);                            \
    }                                                             \
    return;

void xz_shuffle(uint8_t *out, const uint8_t *in, size_t len, size_t es) {
    size_t n = es ? len / es : 0;
    switch (es) {
    case 0:
    case 1: memcpy(out, in, len); return;
    case 2: SHUFFLE_LOOP(2)
    case 4: SHUFFLE_LOOP(4)
    case 8: SHUFFLE_LOOP(8)
    case 16: SHUFFLE_LOOP(16)
    default:
        for (size_t j = 0; j < es; j++)
            for (size_t i = 0; i < n; i++) out[j * n + i] = in[i * es + j];
    }
}

void xz_unshuffle(uint8_t *out, const uint8_t *in, size_t len, size_t es) {
    size_t n = es ? len / es : 0;
    switch (es) {
    case 0:
    case 1: memcpy(out, in, len); return;
    case 2: UNSHUFFLE_LOOP(2)
    case 4: UNSHUFFLE_LOOP(4)
    case 8: UNSHUFFLE_LOOP(8)
    case 16: UNSHUFFLE_LOOP(16)
    default:
        for (size_t j = 0; j < es; j++)
            for (size_t i = 0; i < n; i++) out[i * es + j] = in[j * n + i];
    }
}

void xz_packbits(uint8_t *out, const uint8_t *in, size_t n) {
    size_t bytes = (n + 7) / 8;
    out[0] = (uint8_t)(n % 8 ? 8 - n % 8 : 0);
    memset(out + 1, 0, bytes);
    for (size_t i = 0; i < n; i++)
        if (in[i]) out[1 + i / 8] |= (uint8_t)(0x80u >> (i % 8));
}

const char *xz_unpackbits(uint8_t *out, size_t n, const uint8_t *in, size_t len) {
    if (len == 0) return "packed data is empty";
    size_t bytes = len - 1, pad = in[0];
    if (pad > 7) return "padding byte is above 7";
    if (bytes > SIZE_MAX / 8 || bytes * 8 < pad || bytes * 8 - pad != n)
        return "packed data does not hold the expected number of values";
    for (size_t i = 0; i < n; i++) out[i] = (in[1 + i / 8] >> (7 - i % 8)) & 1;
    return NULL;
}
