/* The variable-length item layout of numcodecs' VLenUTF8 and VLenBytes (the layout of
 * ExZarr.Codecs.VlenLayout): a u32 little-endian item count, then for each item a u32
 * little-endian byte length and the bytes. */
#ifndef XZ_VLEN_H
#define XZ_VLEN_H

#include <stddef.h>
#include <stdint.h>

/* Writes `v` (below 2^32) as 4 little-endian bytes at p. */
static inline void xz_vlen_put_u32(uint8_t *p, size_t v) {
    p[0] = (uint8_t)v, p[1] = (uint8_t)(v >> 8), p[2] = (uint8_t)(v >> 16), p[3] = (uint8_t)(v >> 24);
}

/* Called for each item in order with its offset and length in the layout. */
typedef void (*xz_vlen_item)(void *ctx, size_t offset, size_t length);

/* Walks the layout in `data`: it must hold exactly `expected` items, each inside `data`, and
 * nothing after the last. 0, or -1 when malformed (`item` has then been called for the items
 * before the fault). */
int xz_vlen_scan(const uint8_t *data, size_t size, size_t expected, xz_vlen_item item, void *ctx);

/* 1 when the n bytes at s are UTF-8 (RFC 3629: no overlong forms, no surrogates, nothing past
 * U+10FFFF), else 0. */
int xz_utf8_valid(const uint8_t *s, size_t n);

#endif
