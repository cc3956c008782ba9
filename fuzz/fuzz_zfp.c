/* libFuzzer target for the zfp codec (zfpcodec.c). Input: a type byte, a rank byte, one byte
 * per axis (1..16), a mode byte, then the payload. The payload is decoded as a stream for that
 * array into a buffer of exactly its size; it must fail or fill the buffer, and never touch
 * memory outside its buffers. With the mode byte's high bit, the payload (as array data) is
 * encoded and decoded back instead: reversible integer arrays must come back unchanged. */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "zfpcodec.h"

/* libzfp is not instrumented: the decoder's copy of its input ends at an inaccessible page, so
 * that any read past it is a crash the fuzzer reports. */
static const char *decode(const uint8_t *in, size_t len, int type, const uint64_t *shape,
                          int ndim, uint8_t *out, size_t out_len) {
    size_t size = 0;
    const char *why = xz_zfp_decode_copy_size(in, len, type, shape, ndim, &size);
    if (why) return why;
    size_t page = (size_t)sysconf(_SC_PAGESIZE), span = (size + page - 1) / page * page + page;
    uint8_t *p = mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) abort();
    mprotect(p + span - page, page, PROT_NONE);
    why = xz_zfp_decode(in, len, type, shape, ndim, out, out_len, p + span - page - size, size);
    munmap(p, span);
    return why;
}

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
        decode(in, len, type, shape, ndim, out, bytes);
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
            const char *e = decode(exact, n, type, shape, ndim, out, bytes);
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
