/* libFuzzer target for one decoder (chosen at build time with -DDECODER=name).
 * Input: u32 LE output limit, one flags byte, then the compressed data. The decoder must
 * return an error or at most `limit` bytes, and never touch memory outside its buffers.
 * Flag 0x10 decodes into a fixed output (caller memory of exactly `limit` bytes, as the output
 * buffer of c_src/outbuf.c gives it) instead of an allocated one; for zstd, flag 0x20 decodes
 * a prefix of (flags >> 6) quarters of `limit` into such memory (xz_zstd_decode_prefix). */
#include <stdlib.h>
#include <string.h>

#include "codecs.h"

#define PASTE(a, b, c) a##b##c
#define DECODE(name) PASTE(xz_, name, _decode)

/* Keeps the fuzzer's memory use small; bigger limits exercise nothing new. */
#define LIMIT_MASK ((1u << 22) - 1)

static xz_status decode(const uint8_t *in, size_t len, size_t max, int exact, int flags, xz_out *o,
                        size_t *n) {
#ifdef DECODER_LZMA
    /* Formats 0..3; raw data is read with a fixed LZMA2 (or delta + LZMA2) chain. */
    xz_lzma_filter chain[2] = {
        {3, -1, -1, -1, -1, -1, -1, -1, -1, -1, 4, -1},
        {0x21, 1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1},
    };
    int format = (flags >> 1) & 3;
    int with_delta = (flags >> 3) & 1;
    int nf = format == 3 ? 1 + with_delta : 0;
    return xz_lzma_decode(in, len, max, exact, format, with_delta ? chain : chain + 1, nf, o, n);
#else
    (void)flags;
    return DECODE(DECODER)(in, len, max, exact, o, n);
#endif
}

#ifdef DECODER_ZSTD
static void fuzz_prefix(const uint8_t *in, size_t len, size_t max, int flags) {
    size_t want = max / 4 * (size_t)(flags >> 6), n = 0;
    uint8_t *out = malloc(max ? max : 1);
    if (!xz_zstd_decode_prefix(in, len, max, want, out, &n)) {
        if (n < want || n > max) abort();
        volatile uint8_t sink = 0;
        for (size_t i = 0; i < n; i++) sink ^= out[i];
        (void)sink;
    }
    free(out);
}
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 5) return 0;
    size_t max = (size_t)((data[0] | data[1] << 8 | data[2] << 16 | (uint32_t)data[3] << 24) & LIMIT_MASK);
    int flags = data[4];
    int exact = flags & 1;
    size_t len = size - 5;
    /* A copy of exactly the payload, so reads past its end are caught. */
    uint8_t *in = malloc(len ? len : 1);
    memcpy(in, data + 5, len);
#ifdef DECODER_ZSTD
    if (flags & 0x20) {
        fuzz_prefix(in, len, max, flags);
        free(in);
        return 0;
    }
#endif
    int fixed = flags & 0x10;
    xz_out o = fixed ? XZ_OUT_FIXED(malloc(max ? max : 1), max) : (xz_out){NULL, 0, NULL, 0};
    size_t n = 0;
    xz_status e = decode(in, len, max, exact, flags, &o, &n);
    if (!e) {
        if (n > max || n != o.cap) abort();
        /* Touch every output byte: uninitialised or short buffers show up under ASan/MSan. */
        volatile uint8_t sink = 0;
        for (size_t i = 0; i < n; i++) sink ^= o.data[i];
        (void)sink;
    }
    free(o.data);
    free(in);
    return 0;
}
