/* The 32-bit checksums of the numcodecs checksum codecs (see checksums.h). CRC-32 and
 * Adler-32 come from libdeflate, CRC32C from kernels.c; Fletcher-32 and lookup3 are here. */
#include "checksums.h"

#include <libdeflate.h>
#include <string.h>

#include "kernels.h"

/* ---- Fletcher-32 (HDF5 H5_checksum_fletcher32) ----
 * Sums of big-endian 16-bit words, each sum folded to 17 bits after every 360 words (and after
 * the last, partial, run); a trailing odd byte is the high byte of a last word. */

static inline uint32_t fold16(uint32_t x) { return (x & 0xffff) + (x >> 16); }

static inline void fletcher_word(xz_sum *s, uint32_t word) {
    s->a += word;
    s->b += s->a;
    if (++s->words == 360) {
        s->a = fold16(s->a);
        s->b = fold16(s->b);
        s->words = 0;
    }
}

static void fletcher_update(xz_sum *s, const uint8_t *p, size_t len) {
    if (len && s->pending >= 0) {
        fletcher_word(s, (uint32_t)s->pending << 8 | p[0]);
        s->pending = -1;
        p++;
        len--;
    }
    for (; len >= 2; p += 2, len -= 2) fletcher_word(s, (uint32_t)p[0] << 8 | p[1]);
    if (len) s->pending = p[0];
}

static uint32_t fletcher_final(xz_sum *s) {
    if (s->words) {
        s->a = fold16(s->a);
        s->b = fold16(s->b);
    }
    if (s->pending >= 0) {
        s->a += (uint32_t)s->pending << 8;
        s->b += s->a;
        s->a = fold16(s->a);
        s->b = fold16(s->b);
    }
    return fold16(s->b) << 16 | fold16(s->a);
}

/* ---- lookup3 hashlittle (public domain, Bob Jenkins 2006), byte-wise as HDF5 ----
 * Every 12-byte block but the last is mixed into (a, b, c); the last 1..12 bytes are added
 * (as zero-padded little-endian words) and finalised. */

#define ROT(x, k) (((x) << (k)) | ((x) >> (32 - (k))))

static inline uint32_t le32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void jenkins_block(xz_sum *s, const uint8_t *k) {
    uint32_t a = s->a + le32(k), b = s->b + le32(k + 4), c = s->c + le32(k + 8);
    a -= c; a ^= ROT(c, 4);  c += b;
    b -= a; b ^= ROT(a, 6);  a += c;
    c -= b; c ^= ROT(b, 8);  b += a;
    a -= c; a ^= ROT(c, 16); c += b;
    b -= a; b ^= ROT(a, 19); a += c;
    c -= b; c ^= ROT(b, 4);  b += a;
    s->a = a;
    s->b = b;
    s->c = c;
}

static void jenkins_update(xz_sum *s, const uint8_t *p, size_t len) {
    if (len > s->left) len = (size_t)s->left; /* never past the announced length */
    while (len) {
        /* Whole blocks straight from the input while more bytes follow them. */
        for (; s->buffered == 0 && len >= 12 && s->left > 12; p += 12, len -= 12, s->left -= 12)
            jenkins_block(s, p);
        if (!len) break;
        size_t take = 12 - s->buffered < len ? 12 - s->buffered : len;
        memcpy(s->buf + s->buffered, p, take);
        s->buffered += (unsigned)take;
        s->left -= take;
        p += take;
        len -= take;
        if (s->buffered == 12 && s->left > 0) {
            jenkins_block(s, s->buf);
            s->buffered = 0;
        }
    }
}

static uint32_t jenkins_final(xz_sum *s) {
    if (s->total == 0) return s->c;
    memset(s->buf + s->buffered, 0, 12 - s->buffered);
    uint32_t a = s->a + le32(s->buf), b = s->b + le32(s->buf + 4), c = s->c + le32(s->buf + 8);
    c ^= b; c -= ROT(b, 14);
    a ^= c; a -= ROT(c, 11);
    b ^= a; b -= ROT(a, 25);
    c ^= b; c -= ROT(b, 16);
    a ^= c; a -= ROT(c, 4);
    b ^= a; b -= ROT(a, 14);
    c ^= b; c -= ROT(b, 24);
    return c;
}

/* ---- the running checksum ---- */

void xz_sum_init(xz_sum *s, xz_sum_kind kind, uint32_t init, uint64_t total) {
    memset(s, 0, sizeof *s);
    s->kind = kind;
    s->pending = -1;
    switch (kind) {
    case XZ_SUM_ADLER32: s->a = 1; break;
    case XZ_SUM_JENKINS:
        s->a = s->b = s->c = 0xdeadbeefu + (uint32_t)total + init;
        s->total = s->left = total;
        break;
    default: break;
    }
}

void xz_sum_update(xz_sum *s, const uint8_t *data, size_t len) {
    switch (s->kind) {
    case XZ_SUM_CRC32C: s->a = xz_crc32c(s->a, data, len); break;
    case XZ_SUM_CRC32: s->a = libdeflate_crc32(s->a, data, len); break;
    case XZ_SUM_ADLER32: s->a = libdeflate_adler32(s->a, data, len); break;
    case XZ_SUM_FLETCHER32: fletcher_update(s, data, len); break;
    case XZ_SUM_JENKINS: jenkins_update(s, data, len); break;
    }
}

uint32_t xz_sum_final(xz_sum *s) {
    switch (s->kind) {
    case XZ_SUM_FLETCHER32: return fletcher_final(s);
    case XZ_SUM_JENKINS: return jenkins_final(s);
    default: return s->a;
    }
}

uint32_t xz_checksum(xz_sum_kind kind, uint32_t init, const uint8_t *data, size_t len) {
    xz_sum s;
    xz_sum_init(&s, kind, init, len);
    xz_sum_update(&s, data, len);
    return xz_sum_final(&s);
}
