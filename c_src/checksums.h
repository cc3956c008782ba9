/* The 32-bit checksums of the numcodecs checksum codecs, computed over data given in pieces
 * (an iolist walked without flattening). Plain C (no erl_nif), so the fuzz harness can build it. */
#ifndef EXZARR_CHECKSUMS_H
#define EXZARR_CHECKSUMS_H

#include <stddef.h>
#include <stdint.h>

typedef enum {
    XZ_SUM_CRC32C,     /* Castagnoli, as the crc32c codec */
    XZ_SUM_CRC32,      /* zlib's CRC-32 */
    XZ_SUM_ADLER32,    /* zlib's Adler-32 */
    XZ_SUM_FLETCHER32, /* HDF5's Fletcher-32: big-endian 16-bit words, folded every 360 words */
    XZ_SUM_JENKINS     /* Bob Jenkins' lookup3 hashlittle, as HDF5 and numcodecs */
} xz_sum_kind;

/* A running checksum. Jenkins' lookup3 needs the total length up front (`total` of init). */
typedef struct {
    xz_sum_kind kind;
    uint32_t a, b, c;  /* crc/adler in a; fletcher sums in a, b; lookup3 state in a, b, c */
    uint64_t total;    /* lookup3: length given at init */
    uint64_t left;     /* lookup3: bytes not yet given */
    unsigned words;    /* fletcher: 16-bit words since the last fold */
    int pending;       /* fletcher: the odd byte waiting for its pair, -1 when none */
    unsigned buffered; /* lookup3: bytes of buf in use */
    uint8_t buf[12];
} xz_sum;

/* Starts a checksum; `init` seeds it (lookup3's initval; ignored by the others). */
void xz_sum_init(xz_sum *s, xz_sum_kind kind, uint32_t init, uint64_t total);
/* Adds `len` bytes (lookup3: never more than the `total` given at init, in all). */
void xz_sum_update(xz_sum *s, const uint8_t *data, size_t len);
/* The checksum of everything given. */
uint32_t xz_sum_final(xz_sum *s);

/* One-shot: the checksum of one buffer. */
uint32_t xz_checksum(xz_sum_kind kind, uint32_t init, const uint8_t *data, size_t len);

#endif
