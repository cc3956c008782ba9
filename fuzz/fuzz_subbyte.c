/* libFuzzer target for the sub-byte element kernels (subbyte.c): any width, signedness and
 * bytes. Decoding stored bytes gives memory form; masking memory form and decoding it again
 * gives it back; nothing outside the exactly sized buffers is touched. */
#include <stdlib.h>
#include <string.h>

#include "subbyte.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    int bits = 1 + data[0] % 7, is_signed = data[0] >> 7;
    size_t len = size - 1;
    uint8_t *in = malloc(len ? len : 1), *mem = malloc(len ? len : 1), *st = malloc(len ? len : 1);
    memcpy(in, data + 1, len);

    xz_subbyte_extend(mem, in, len, bits, is_signed);
    if (xz_subbyte_first_unextended(mem, len, bits, is_signed) != len) __builtin_trap();
    xz_subbyte_mask(st, mem, len, bits);
    if (xz_subbyte_first_high(st, len, bits) != len) __builtin_trap();
    xz_subbyte_extend(st, st, len, bits, is_signed);
    if (memcmp(st, mem, len) != 0) __builtin_trap();
    size_t first = xz_subbyte_first_unextended(in, len, bits, is_signed);
    if (first < len && xz_subbyte_value(in[first], bits, is_signed) == in[first]) __builtin_trap();

    free(st);
    free(mem);
    free(in);
    return 0;
}
