/* Sub-byte elements (int2, int4, uint2, uint4, float4_e2m1fn), one per byte: in memory the low
 * `bits` bits, sign-extended for the signed types; stored with the upper bits zero.
 * Plain C (no erl_nif), so the fuzz harness can build it. */
#ifndef EXZARR_SUBBYTE_H
#define EXZARR_SUBBYTE_H

#include <stddef.h>
#include <stdint.h>

/* The in-memory form of a byte: its low `bits` bits (1..7), sign-extended when `is_signed`. */
static inline uint8_t xz_subbyte_value(uint8_t b, int bits, int is_signed) {
    uint8_t mask = (uint8_t)((1u << bits) - 1u), v = b & mask;
    if (is_signed && (v >> (bits - 1))) v |= (uint8_t)~mask;
    return v;
}

/* Index of the first byte that is not in memory form, or `len` when all are. */
size_t xz_subbyte_first_unextended(const uint8_t *in, size_t len, int bits, int is_signed);
/* Index of the first byte with a bit set above the low `bits`, or `len`. */
size_t xz_subbyte_first_high(const uint8_t *in, size_t len, int bits);
/* out[i] = xz_subbyte_value(in[i]) (stored -> memory). */
void xz_subbyte_extend(uint8_t *out, const uint8_t *in, size_t len, int bits, int is_signed);
/* out[i] = in[i] with the upper bits cleared (memory -> stored). */
void xz_subbyte_mask(uint8_t *out, const uint8_t *in, size_t len, int bits);

#endif
