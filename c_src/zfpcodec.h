/* zfp streams as numcodecs' ZFPY codec writes them (zfpy.compress_numpy with a full header),
 * over libzfp. Plain C (no erl_nif), so the fuzz harness can build it.
 *
 * Arrays are C order: the last axis of `shape` is zfp's x (fastest). Types are zfp's:
 * 1 int32, 2 int64, 3 float, 4 double; 1 to 4 dimensions. Functions return NULL on success or
 * a message. */
#ifndef EXZARR_ZFPCODEC_H
#define EXZARR_ZFPCODEC_H

#include <stddef.h>
#include <stdint.h>

/* numcodecs/zfpy modes; a negative parameter means reversible (lossless) compression. */
#define XZ_ZFP_FIXED_RATE 2
#define XZ_ZFP_FIXED_PRECISION 3
#define XZ_ZFP_FIXED_ACCURACY 4

/* The largest encoding of an array (the size to allocate for xz_zfp_encode), or 0 when the
 * arguments are invalid (*why says why). */
size_t xz_zfp_max_encoded(int type, const uint64_t *shape, int ndim, int mode, double param,
                          const char **why);

/* Compresses `in` (the packed array, native byte order) into `out` (`cap` bytes, at least
 * xz_zfp_max_encoded), *n the bytes written. */
const char *xz_zfp_encode(const uint8_t *in, size_t len, int type, const uint64_t *shape, int ndim,
                          int mode, double param, uint8_t *out, size_t cap, size_t *n);

/* The bytes of scratch memory (`copy_size`) xz_zfp_decode needs for the stream `in`, which
 * must describe exactly `type` and `shape`. */
const char *xz_zfp_decode_copy_size(const uint8_t *in, size_t len, int type,
                                    const uint64_t *shape, int ndim, size_t *copy_size);

/* Decompresses a stream whose header must describe exactly `type` and `shape` into `out`
 * (exactly the array's size). `copy`: scratch memory, 8-byte aligned, of at least
 * xz_zfp_decode_copy_size bytes, where the decoder reads a zero-padded copy of `in` (libzfp's
 * reads are bounded by it). Never reads outside `in` and `copy` nor writes outside `copy` and
 * `out`. */
const char *xz_zfp_decode(const uint8_t *in, size_t len, int type, const uint64_t *shape, int ndim,
                          uint8_t *out, size_t out_len, uint8_t *copy, size_t copy_len);

#endif
