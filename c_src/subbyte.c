/* Sub-byte elements, one per byte (see subbyte.h). */
#include "subbyte.h"

size_t xz_subbyte_first_unextended(const uint8_t *in, size_t len, int bits, int is_signed) {
    size_t i = 0;
    while (i < len && xz_subbyte_value(in[i], bits, is_signed) == in[i]) i++;
    return i;
}

size_t xz_subbyte_first_high(const uint8_t *in, size_t len, int bits) {
    uint8_t high = (uint8_t)~((1u << bits) - 1u);
    size_t i = 0;
    while (i < len && !(in[i] & high)) i++;
    return i;
}

void xz_subbyte_extend(uint8_t *out, const uint8_t *in, size_t len, int bits, int is_signed) {
    for (size_t i = 0; i < len; i++) out[i] = xz_subbyte_value(in[i], bits, is_signed);
}

void xz_subbyte_mask(uint8_t *out, const uint8_t *in, size_t len, int bits) {
    uint8_t mask = (uint8_t)((1u << bits) - 1u);
    for (size_t i = 0; i < len; i++) out[i] = in[i] & mask;
}
