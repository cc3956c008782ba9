/* Reading a fuzz input as a stream of choices (shared by the fuzz targets). */
#ifndef EXZARR_FUZZ_READER_H
#define EXZARR_FUZZ_READER_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    const uint8_t *p;
    size_t n;
} reader;

/* The next byte, 0 once the input is used up. */
static inline uint8_t byte(reader *r) {
    if (r->n == 0) return 0;
    r->n--;
    return *r->p++;
}

/* Mostly small values, sometimes huge ones to probe overflow checks. */
static inline uint64_t value(reader *r) {
    uint8_t b = byte(r);
    if (b < 0xF0) return b % 7;
    if (b < 0xF8) return (uint64_t)byte(r) | (uint64_t)byte(r) << 8;
    return UINT64_MAX - byte(r);
}

/* A malloc'ed index list of n little-endian uint64 entries of value() values (the caller frees). */
static inline uint8_t *index_list(reader *r, uint64_t n) {
    uint8_t *list = malloc(n ? (size_t)n * 8 : 1);
    for (uint64_t i = 0; i < n; i++) {
        uint64_t v = value(r);
        memcpy(list + 8 * i, &v, 8);
    }
    return list;
}

#endif
