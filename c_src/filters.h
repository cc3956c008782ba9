/* Element kernels of the numcodecs filters (delta, fixedscaleoffset, quantize, bitround,
 * astype, shuffle, packbits), with numpy's casting and arithmetic semantics.
 * Plain C (no erl_nif) so the fuzz harness builds them too. All data is little-endian. */
#ifndef EXZARR_FILTERS_H
#define EXZARR_FILTERS_H

#include <stddef.h>
#include <stdint.h>

typedef enum {
    XZ_BOOL, XZ_I8, XZ_I16, XZ_I32, XZ_I64, XZ_U8, XZ_U16, XZ_U32, XZ_U64, XZ_F16, XZ_F32, XZ_F64,
    XZ_NTYPES
} xz_type;

/* Type from its name ("int32", "float64", "bool"...); -1 when unknown. */
int xz_type_parse(const char *name);
size_t xz_type_size(xz_type t);
int xz_type_is_float(xz_type t);

/* numpy `astype`: n elements of `from` at in -> n elements of `to` at out. */
void xz_cast(uint8_t *out, xz_type to, const uint8_t *in, xz_type from, size_t n);

/* numcodecs Delta: out[0] = in[0], out[i] = in[i] - in[i-1] (computed in `dtype`, stored as
 * `astype`); decode is the cumulative sum in `dtype`. dtype must not be bool. */
void xz_delta_encode(uint8_t *out, xz_type astype, const uint8_t *in, xz_type dtype, size_t n);
void xz_delta_decode(uint8_t *out, xz_type dtype, const uint8_t *in, xz_type astype, size_t n);

/* numcodecs FixedScaleOffset: round((x - offset) * scale) as astype; decode x / scale + offset
 * as dtype. `int_math`: dtype is an integer type and offset/scale are integers (numpy then
 * computes in the integer type). */
void xz_fso_encode(uint8_t *out, xz_type astype, const uint8_t *in, xz_type dtype, size_t n,
                   double offset, double scale, int int_math);
void xz_fso_decode(uint8_t *out, xz_type dtype, const uint8_t *in, xz_type astype, size_t n,
                   double offset, double scale);

/* zarr-extensions scale_offset in the array's type t: encodes (x - offset) * scale, decodes
 * x / scale + offset; `offset` and `scale` are elements of t (scale not zero). Floats compute
 * with t's rounding (NaN and infinities as IEEE 754 gives them); integers exactly: returns
 * 1 + the index of the first element whose result does not fit t, or (decoding) that is not
 * a whole multiple of scale, and 0 when every element was written. */
size_t xz_scale_offset(uint8_t *out, const uint8_t *in, xz_type t, size_t n, int decode,
                       const uint8_t *offset, const uint8_t *scale);

/* zarr-extensions cast_value: how non-integral values round, and what values out of the
 * target type's range become. */
typedef enum {
    XZ_ROUND_NEAREST_EVEN, XZ_ROUND_TOWARDS_ZERO, XZ_ROUND_TOWARDS_POSITIVE,
    XZ_ROUND_TOWARDS_NEGATIVE, XZ_ROUND_NEAREST_AWAY
} xz_rounding;
typedef enum { XZ_RANGE_ERROR, XZ_RANGE_CLAMP, XZ_RANGE_WRAP } xz_out_of_range;
typedef enum {
    XZ_CAST_OK, XZ_CAST_OUT_OF_RANGE, XZ_CAST_NAN, XZ_CAST_INFINITE, XZ_CAST_NO_MEMORY
} xz_cast_status;

/* Casts n elements of type `from` to type `to` by value, as cast-value-rs does: an element equal
 * to one of the `entries` keys (elements of `from`; NaN equals NaN) becomes that entry's value
 * (an element of `to`); others round by `mode` (also between float types and from integers
 * to floats) and go out of range by `range` (clamp gives +-infinity for float types; NaN and
 * infinities never fit an integer type). Of equal keys the last entry counts; the map is
 * searched in O(log entries). On failure returns why and sets *bad to the element's
 * index; the output is then partly written. */
xz_cast_status xz_cast_value(uint8_t *out, xz_type to, const uint8_t *in, xz_type from, size_t n,
                             xz_rounding mode, xz_out_of_range range, const uint8_t *keys,
                             const uint8_t *values, size_t entries, size_t *bad);

/* numcodecs Quantize encode: round(x * scale) / scale in dtype's precision, stored as astype. */
void xz_quantize(uint8_t *out, xz_type astype, const uint8_t *in, xz_type dtype, size_t n, double scale);

/* numcodecs BitRound: keeps `keepbits` mantissa bits of each float (width 2, 4 or 8 bytes),
 * rounding half to even; keepbits below the type's mantissa width. In place allowed. */
void xz_bitround(uint8_t *out, const uint8_t *in, size_t len, int width, int keepbits);

/* numcodecs Shuffle / Blosc byte shuffle over whole elements (len % elementsize == 0). */
void xz_shuffle(uint8_t *out, const uint8_t *in, size_t len, size_t elementsize);
void xz_unshuffle(uint8_t *out, const uint8_t *in, size_t len, size_t elementsize);

/* numcodecs PackBits: out[0] = padding bits, then the booleans packed MSB first;
 * out has 1 + ceil(n / 8) bytes. */
void xz_packbits(uint8_t *out, const uint8_t *in, size_t n);
/* Unpacks into n booleans (0/1); NULL on success, else why the input does not hold n values. */
const char *xz_unpackbits(uint8_t *out, size_t n, const uint8_t *in, size_t len);

#endif
