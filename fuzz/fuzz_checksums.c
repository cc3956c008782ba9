/* libFuzzer target for the checksums (checksums.c): any kind, seed and bytes, given whole and
 * then in pieces of fuzzer-chosen sizes (as an iolist walk gives them); both must agree, and no
 * byte outside the input may be read. */
#include <stdlib.h>
#include <string.h>

#include "checksums.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 6) return 0;
    xz_sum_kind kind = (xz_sum_kind)(data[0] % 5);
    uint32_t init = (uint32_t)data[1] | (uint32_t)data[2] << 8 | (uint32_t)data[3] << 16 |
                    (uint32_t)data[4] << 24;
    unsigned step = data[5];
    size_t len = size - 6;
    /* An exactly sized copy, so that ASan sees any read past the end. */
    uint8_t *in = malloc(len ? len : 1);
    memcpy(in, data + 6, len);

    uint32_t whole = xz_checksum(kind, init, in, len);
    xz_sum s;
    xz_sum_init(&s, kind, init, len);
    for (size_t at = 0, piece = 0; at < len; at += piece) {
        piece = 1 + (step + at * 7) % 29;
        if (piece > len - at) piece = len - at;
        xz_sum_update(&s, in + at, piece);
    }
    if (xz_sum_final(&s) != whole) __builtin_trap();
    free(in);
    return 0;
}
