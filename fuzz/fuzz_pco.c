/* libFuzzer target for the pcodec decoder (the Rust library in c_src/pco, behind pcocodec.h).
 * Input: a type byte, a u16 LE count of numbers, then the data, decoded into a buffer of
 * exactly that many numbers; it must fail or fill the buffer, never touch memory outside it,
 * and never abort (a Rust panic is an error). With the type byte's high bit, the data (as
 * numbers) is compressed at a level from the count and decoded back unchanged instead. */
#include <stdlib.h>
#include <string.h>

#include "pcocodec.h"

static const size_t sizes[] = {0, 2, 4, 8, 2, 4, 8, 2, 4, 8};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 3) return 0;
    uint32_t dtype = 1 + data[0] % 9;
    size_t count = (size_t)(data[1] | data[2] << 8), item = sizes[dtype], len = size - 3;
    char err[256];
    if (!(data[0] & 0x80)) {
        uint8_t *in = malloc(len ? len : 1), *out = malloc(count * item ? count * item : 1);
        memcpy(in, data + 3, len);
        xz_pco_decompress(dtype, in, len, out, count * item, err, sizeof err);
        free(out);
        free(in);
        return 0;
    }
    size_t n = len / item * item;
    uint8_t *in = malloc(n ? n : 1);
    memcpy(in, data + 3, n);
    xz_pco_config config = {count % 13, count >> 4 & 1, count >> 5 & 3, count >> 7 & 7, 1 + (count >> 10)};
    xz_pco_buf buf = {NULL, 0, 0};
    if (xz_pco_compress(dtype, in, n, &config, &buf, err, sizeof err) == 0) {
        uint8_t *out = malloc(n ? n : 1), *enc = malloc(buf.len ? buf.len : 1);
        memcpy(enc, buf.data, buf.len);
        if (xz_pco_decompress(dtype, enc, buf.len, out, n, err, sizeof err) != 0) abort();
        /* Floats may hold NaNs with other payloads only if pco changed them: compare bytes. */
        if (memcmp(in, out, n) != 0) abort();
        free(enc);
        free(out);
        xz_pco_free(&buf);
    }
    free(in);
    return 0;
}
