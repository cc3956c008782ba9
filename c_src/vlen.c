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

int xz_utf8_valid(const uint8_t *s, size_t n) {
    for (size_t i = 0; i < n;) {
        uint8_t c = s[i];
        if (c < 0x80) {
            i++;
            continue;
        }
        size_t len;
        uint32_t cp;
        if (c >= 0xC2 && c <= 0xDF) len = 2, cp = c & 0x1F;
        else if (c >= 0xE0 && c <= 0xEF) len = 3, cp = c & 0x0F;
        else if (c >= 0xF0 && c <= 0xF4) len = 4, cp = c & 0x07;
        else return 0;
        if (n - i < len) return 0;
        for (size_t k = 1; k < len; k++) {
            if ((s[i + k] & 0xC0) != 0x80) return 0;
            cp = cp << 6 | (s[i + k] & 0x3F);
        }
        if (len == 3 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) return 0;
        if (len == 4 && (cp < 0x10000 || cp > 0x10FFFF)) return 0;
        i += len;
    }
    return 1;
}
