/* The vlen item layout's walk (vlen.h). */
#include "vlen.h"

static size_t le32(const uint8_t *p) {
    return (size_t)p[0] | (size_t)p[1] << 8 | (size_t)p[2] << 16 | (size_t)p[3] << 24;
}

int xz_vlen_scan(const uint8_t *data, size_t size, size_t expected, xz_vlen_item item, void *ctx) {
    if (size < 4 || le32(data) != expected) return -1;
    size_t pos = 4;
    for (size_t i = 0; i < expected; i++) {
        if (size - pos < 4) return -1;
        size_t length = le32(data + pos);
        pos += 4;
        if (length > size - pos) return -1;
        item(ctx, pos, length);
        pos += length;
    }
    return pos == size ? 0 : -1;
}
