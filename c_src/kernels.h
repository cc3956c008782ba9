/* Copy kernels, checks and checksums on packed C-order element data.
 * Plain C (no erl_nif), so the fuzz harness can build them too. */
#ifndef EXZARR_KERNELS_H
#define EXZARR_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#define XZ_MAX_DIMS 64

/* Index lists of an indexed copy (orthogonal and point selections): along axis k, src[k]
 * (dst[k]), when not NULL, holds count[k] little-endian uint64 indices used instead of
 * src_start[k] + i (dst_start[k] + i). */
typedef struct {
    const uint8_t *src[XZ_MAX_DIMS];
    const uint8_t *dst[XZ_MAX_DIMS];
} xz_index;

/* One box copy: `count` elements along each axis from `src` (C order, shape
 * `src_shape`) at `src_start` to the destination at `dst_start`; with `index` (NULL for a
 * plain box) some axes take their positions from index lists on either side. */
typedef struct {
    const uint8_t *src;
    size_t src_len;
    uint64_t src_shape[XZ_MAX_DIMS];
    uint64_t src_start[XZ_MAX_DIMS];
    uint64_t dst_start[XZ_MAX_DIMS];
    uint64_t count[XZ_MAX_DIMS];
    const xz_index *index;
} xz_piece;

/* The i-th entry of a little-endian uint64 index list. */
static inline uint64_t xz_index_at(const uint8_t *list, size_t i) {
    uint64_t v;
    __builtin_memcpy(&v, list + 8 * i, 8);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    v = __builtin_bswap64(v);
#endif
    return v;
}

/* Number of bytes of `ndim` axes of `shape` with `itemsize`-byte elements;
 * 0 on success, -1 on overflow. */
int xz_shape_bytes(const uint64_t *shape, int ndim, size_t itemsize, size_t *out);

/* Checks a piece against the destination shape; NULL when valid, else a static message. */
const char *xz_piece_check(const xz_piece *p, const uint64_t *dst_shape, int ndim, size_t itemsize);

/* Copies a checked piece into `dst` (a buffer of the destination shape). */
void xz_piece_copy(uint8_t *dst, const uint64_t *dst_shape, int ndim, size_t itemsize,
                   const xz_piece *p);

/* Fills `dst` (len a multiple of elem_len) with copies of `elem`. */
void xz_fill(uint8_t *dst, size_t len, const uint8_t *elem, size_t elem_len);

/* Checks a transpose request; NULL when valid. `perm` must be a permutation of 0..ndim-1. */
const char *xz_transpose_check(size_t len, const uint64_t *shape, int ndim, size_t itemsize,
                               const uint64_t *perm);
/* out axis k = in axis perm[k]; `out` has the same byte size as `in`. */
void xz_transpose(uint8_t *out, const uint8_t *in, const uint64_t *shape, int ndim,
                  size_t itemsize, const uint64_t *perm);

/* Reverses the bytes of each element (itemsize 1, 2, 4 or 8); len % itemsize == 0. */
void xz_byteswap(uint8_t *out, const uint8_t *in, size_t len, size_t itemsize);

/* 1 when every elem_len-byte element equals elem (len % elem_len == 0). */
int xz_all_equal(const uint8_t *data, size_t len, const uint8_t *elem, size_t elem_len);

/* 1 when every float of width 2, 4 or 8 bytes (little-endian) is a NaN. */
int xz_all_nan(const uint8_t *data, size_t len, int width);

/* CRC32C (Castagnoli), continuing from `crc` (0 to start). */
uint32_t xz_crc32c(uint32_t crc, const uint8_t *data, size_t len);

/* Buffers of at most this size a thread keeps as its scratch between calls. */
#define XZ_SCRATCH_KEEP ((size_t)16 << 20)

/* This thread's scratch buffer of at least n bytes (a decoded chunk whose box is then copied),
 * kept for its next call (its pages faulted in once: the threads calling live long); *temp is
 * set when it is too large to keep and the caller must free() it. NULL when out of memory. */
uint8_t *xz_thread_scratch(size_t n, int *temp);
/* Frees this thread's kept scratch buffer (for threads that end). */
void xz_thread_scratch_release(void);

#endif
