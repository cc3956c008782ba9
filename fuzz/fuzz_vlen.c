/* libFuzzer target for the vlen layout walk (vlen.c): any bytes and expected count; the items
 * reported must lie inside the input, in order and without overlap, and a layout the walk
 * accepts must be rebuilt byte for byte from them. Every item goes through the UTF-8 check,
 * which must agree with itself on the item's copy. */
#include <stdlib.h>
#include <string.h>

#include "vlen.h"

typedef struct {
    const uint8_t *data;
    size_t end, count;
    uint8_t *copy;
    size_t at;
} seen;

static void check(void *ctx, size_t offset, size_t length) {
    seen *s = ctx;
    if (offset < s->end || offset + length < offset) __builtin_trap();
    s->end = offset + length;
    s->count++;
    /* rebuild: the length, then the bytes (read from the input: ASan checks the bounds) */
    uint8_t *p = s->copy + s->at;
    xz_vlen_put_u32(p, length);
    memcpy(p + 4, s->data + offset, length);
    if (xz_utf8_valid(s->data + offset, length) != xz_utf8_valid(p + 4, length)) __builtin_trap();
    s->at += 4 + length;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    /* the first byte picks the expected count: the layout's own, or near it */
    size_t skew = data[0] % 4;
    data++, size--;
    uint8_t *in = malloc(size ? size : 1);
    memcpy(in, data, size);
    size_t count = size >= 4 ? (size_t)in[0] | (size_t)in[1] << 8 | (size_t)in[2] << 16 |
                                   (size_t)in[3] << 24
                             : 0;
    size_t expected = skew == 3 ? count + 1 : skew == 2 && count ? count - 1 : count;
    seen s = {in, 4, 0, malloc(size + 8), 4};
    memcpy(s.copy, in, size < 4 ? size : 4);
    int r = xz_vlen_scan(in, size, expected, check, &s);
    if (r == 0) {
        if (s.count != expected || s.at != size || memcmp(s.copy, in, size) != 0) __builtin_trap();
    }
    free(s.copy);
    free(in);
    return 0;
}
