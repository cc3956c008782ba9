/* libFuzzer target for the zfp codec (zfpcodec.c). Input: a type byte, a rank byte, one byte
 * per axis (1..16), a mode byte, then the payload. The payload is decoded as a stream for that
 * array into a buffer of exactly its size; it must fail or fill the buffer, and never touch
 * memory outside its buffers. With the mode byte's high bit, the payload (as array data) is
 * encoded and decoded back instead: reversible integer arrays must come back unchanged. */
#include <stdlib.h>
#include <string.h>

#include "zfpcodec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 3) return 0;
    int type = 1 + data[0] % 4, ndim = 1 + data[1] % 4;
    if (size < (size_t)(3 + ndim)) return 0;
    uint64_t shape[4];
    size_t count = 1, item = type % 2 ? 4 : 8;
    for (int i = 0; i < ndim; i++) count *= (shape[i] = 1 + data[2 + i] % 16);
    int flags = data[2 + ndim];
    const uint8_t *payload = data + 3 + ndim;
    size_t len = size - 3 - ndim, bytes = count * item;
    uint8_t *out = malloc(bytes);

    if (!(flags & 0x80)) {
        uint8_t *in = malloc(len ? len : 1);
        memcpy(in, payload, len);
        xz_zfp_decode(in, len, type, shape, ndim, out, bytes);
        free(in);
    } else {
        /* Array data from the payload, repeated to the array's size. */
        uint8_t *in = malloc(bytes);
        for (size_t i = 0; i < bytes; i++) in[i] = len ? payload[i % len] : (uint8_t)i;
        int mode = 2 + flags % 3;
        double param = (flags & 0x40) ? -1.0 : (flags >> 2) % 16;
        const char *why = NULL;
        size_t max = xz_zfp_max_encoded(type, shape, ndim, mode, param, &why), n = 0;
        uint8_t *enc = malloc(max ? max : 1);
        if (max && !xz_zfp_encode(in, bytes, type, shape, ndim, mode, param, enc, max, &n)) {
            if (n > max) abort();
            uint8_t *exact = malloc(n ? n : 1);
            memcpy(exact, enc, n);
            const char *e = xz_zfp_decode(exact, n, type, shape, ndim, out, bytes);
            if (e) abort();
            if (param < 0 && type <= 2 && memcmp(in, out, bytes) != 0) abort();
            free(exact);
        }
        free(enc);
        free(in);
    }
    free(out);
    return 0;
}
