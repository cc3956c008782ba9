/* libFuzzer target for the encoders' parameter checks (codecs.c): any codec with any level,
 * blosc typesize / blocksize / shuffle / compressor name, lz4 acceleration, lzma format /
 * check / preset / filter chain (including values c-blosc or liblzma would crash on or need
 * gigabytes for), over any data. An encoder either refuses its parameters with an error or
 * produces data that decodes back to the input. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "codecs.h"
#include "reader.h"

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* Levels and accelerations: the edges of every codec's range, and far beyond. */
static const int64_t INTS[] = {0, 1, 3, 5, 9, 10, 12, 13, 22, 23, -1, -5, -131072, -131073,
                               65537, INT_MAX, INT_MIN};
/* Blosc typesize / blocksize: c-blosc keeps them in an int32. */
static const uint64_t SIZES[] = {0, 1, 2, 3, 4, 8, 16, 255, 256, 4096, 0x7FFFFFFF, 0x80000000,
                                 0xC0000000, 0x100000000, 0x8000000000000000, UINT64_MAX};
static const char *const CNAMES[] = {"blosclz", "lz4", "lz4hc", "snappy", "zlib", "zstd", "",
                                     "nope"};
/* LZMA1, LZMA2, delta, the BCJ filters, and ids liblzma does not know. */
static const uint64_t FILTER_IDS[] = {0x4000000000000001, 0x21, 3, 4, 5, 6, 7, 8, 9, 0, 99};
/* Presets (-1: default 6): small ones, the extreme flag, invalid ones. Never 7..9: fine, but
 * slow and hundreds of MiB, which the memory limit test below covers with dict_size. */
static const int64_t PRESETS[] = {-1, 0, 1, 2, 10, 0x80000001, 0x100000000, INT64_MAX};
/* Filter options (-1: not given); dict_size up to 1.5 GiB and beyond asks for the memory
 * limit of the encoder. */
static const int64_t OPTIONS[] = {-1, -1, 0, 1, 2, 3, 4, 5, 18, 20, 273, 274, 4096, 1 << 20,
                                  0x60000000, 0x60000001, 0xFFFFFFFF, 0x100000000};

static int64_t pick_int(reader *r, const int64_t *t, size_t n) { return t[byte(r) % n]; }

static xz_status encode(reader *r, int codec, const uint8_t *in, size_t len, xz_out *o, size_t *n) {
    int level = (int)pick_int(r, INTS, COUNT(INTS));
    switch (codec) {
    case 0: return xz_zstd_encode(in, len, level, byte(r) & 1, byte(r) & 1, o, n);
    case 1: {
        const char *cname = CNAMES[byte(r) % COUNT(CNAMES)];
        int shuffle = (int)pick_int(r, INTS, COUNT(INTS));
        size_t typesize = (size_t)SIZES[byte(r) % COUNT(SIZES)];
        size_t blocksize = (size_t)SIZES[byte(r) % COUNT(SIZES)];
        return xz_blosc_encode(in, len, cname, level, shuffle, typesize, blocksize, o, n);
    }
    case 2: return xz_lz4_encode(in, len, level, o, n);
    case 3: return xz_bz2_encode(in, len, level, o, n);
    case 4: return xz_gzip_encode(in, len, level, o, n);
    case 5: return xz_zlib_encode(in, len, level, o, n);
    default: {
        xz_lzma_filter f[XZ_LZMA_MAX_FILTERS + 1];
        int format = byte(r) % 5, check = (int)(byte(r) % 18) - 2;
        int64_t preset = pick_int(r, PRESETS, COUNT(PRESETS));
        int nf = byte(r) % (XZ_LZMA_MAX_FILTERS + 2);
        for (int i = 0; i < nf; i++) {
            int64_t *opt = &f[i].preset;
            f[i].id = FILTER_IDS[byte(r) % COUNT(FILTER_IDS)];
            for (int k = 0; k < 11; k++)
                opt[k] = k == 0 ? pick_int(r, PRESETS, COUNT(PRESETS)) : pick_int(r, OPTIONS, COUNT(OPTIONS));
        }
        return xz_lzma_encode(in, len, format, check, preset, f, nf, o, n);
    }
    }
}

static xz_status decode(int codec, const uint8_t *in, size_t len, size_t max, xz_out *o, size_t *n) {
    static const xz_decode_fn DECODERS[] = {xz_zstd_decode, xz_blosc_decode, xz_lz4_decode,
                                            xz_bz2_decode,  xz_gzip_decode,  xz_zlib_decode};
    if (codec < 6) return DECODERS[codec](in, len, max, 1, o, n);
    /* Format 0 detects xz and lzma_alone; raw data needs its chain: only checked to decode. */
    return xz_lzma_decode(in, len, max, 1, 0, NULL, 0, o, n);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 24) return 0;
    /* 24 bytes of parameters, then the data. */
    reader r = {data, 24};
    int codec = byte(&r) % 7;
    int raw_lzma = codec == 6 && data[2] % 5 == 3;
    size_t len = size - 24;
    uint8_t *in = malloc(len ? len : 1);
    memcpy(in, data + 24, len);
    xz_out o = {NULL, 0, NULL, 0};
    size_t n = 0;
    if (!encode(&r, codec, in, len, &o, &n) && !raw_lzma) {
        xz_out back = {NULL, 0, NULL, 0};
        size_t m = 0;
        xz_status e = decode(codec, o.data, n, len, &back, &m);
        if (e || m != len || (len && memcmp(back.data, in, len) != 0)) abort();
        free(back.data);
    }
    free(o.data);
    free(in);
    return 0;
}
