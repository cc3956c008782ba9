/* Writes a seed corpus for the decoder fuzz targets: valid encodings of a few inputs with
 * each codec, prefixed like fuzz_decode.c expects (u32 LE limit, flags byte).
 * Usage: seed <corpus-root>   (makes <corpus-root>/<codec>/seed-N) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "codecs.h"

static void put(const char *root, const char *codec, int i, size_t limit, int flags, const uint8_t *d,
                size_t n) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s", root, codec);
    mkdir(path, 0755);
    snprintf(path, sizeof path, "%s/%s/seed-%d", root, codec, i);
    FILE *f = fopen(path, "wb");
    if (!f) {
        perror(path);
        exit(1);
    }
    uint8_t head[5] = {(uint8_t)limit, (uint8_t)(limit >> 8), (uint8_t)(limit >> 16),
                       (uint8_t)(limit >> 24), (uint8_t)flags};
    fwrite(head, 1, 5, f);
    fwrite(d, 1, n, f);
    fclose(f);
}

int main(int argc, char **argv) {
    if (argc != 2) return 2;
    const char *root = argv[1];
    mkdir(root, 0755);
    enum { N = 3000 };
    static uint8_t samples[3][N];
    size_t sizes[3] = {N, 700, 1};
    for (int i = 0; i < N; i++) {
        samples[0][i] = (uint8_t)(i * 7 / 13);
        samples[1][i] = (uint8_t)(i % 5 ? 0 : i);
    }
    xz_lzma_filter lzma2 = {0x21, 1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1};
    for (int s = 0; s < 3; s++) {
        const uint8_t *in = samples[s];
        size_t len = sizes[s];
        for (int v = 0; v < 7; v++) {
            xz_out o = {NULL, 0, NULL, 0};
            size_t n = 0;
            const char *name = NULL;
            int flags = 1;
            xz_status e = NULL;
            switch (v) {
            case 0: name = "zstd"; e = xz_zstd_encode(in, len, 3, s == 1, 0, &o, &n); break;
            case 1: name = "blosc"; e = xz_blosc_encode(in, len, s ? "lz4" : "zstd", 5, s, 4, 0, &o, &n); break;
            case 2: name = "lz4"; e = xz_lz4_encode(in, len, 1, &o, &n); break;
            case 3: name = "bz2"; e = xz_bz2_encode(in, len, 1, &o, &n); break;
            case 4:
                name = "lzma";
                flags = 1 | (s + 1) << 1;
                e = xz_lzma_encode(in, len, s + 1, -1, 1, &lzma2, s == 2, &o, &n);
                break;
            case 5: name = "gzip"; e = xz_gzip_encode(in, len, 1, &o, &n); break;
            case 6: name = "zlib"; e = xz_zlib_encode(in, len, 6, &o, &n); break;
            }
            if (e) {
                fprintf(stderr, "%s: %s\n", name, e);
                return 1;
            }
            put(root, name, s, len, flags, o.data, n);
            put(root, name, s + 10, 1 << 20, flags & ~1, o.data, n);
            put(root, name, s + 20, len, flags | 0x10, o.data, n);
            if (v == 0) put(root, name, s + 30, len, flags | 0x20 | 0x40, o.data, n);
            free(o.data);
        }
    }
    return 0;
}
