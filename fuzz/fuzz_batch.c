/* libFuzzer target for the batch decoder (batch.c, ExZarr.Native.decode_into): shapes, boxes,
 * chunk sizes and stored bytes come from the input, run on one to three threads. Whenever
 * xz_batch_check accepts a batch, running it must stay inside the output and the chunks. */
#include <stdlib.h>
#include <string.h>

#include "batch.h"
#include "reader.h"

#define MAX_JOBS 8

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    reader r = {data, size};
    static const xz_decode_fn decoders[] = {NULL, xz_blosc_decode, xz_lz4_decode, xz_zstd_decode};
    int ndim = byte(&r) % 4;
    size_t itemsize = 1 + byte(&r) % 8;
    int threads = 1 + byte(&r) % 3;
    xz_decode_fn decode = decoders[byte(&r) % 4];
    uint64_t dst_shape[XZ_MAX_DIMS], chunk_shape[XZ_MAX_DIMS];
    for (int k = 0; k < ndim; k++) dst_shape[k] = value(&r);
    for (int k = 0; k < ndim; k++) chunk_shape[k] = value(&r);
    size_t total, chunk_bytes;
    if (xz_shape_bytes(dst_shape, ndim, itemsize, &total) != 0 || total > (1u << 20)) return 0;
    if (xz_shape_bytes(chunk_shape, ndim, itemsize, &chunk_bytes) != 0) chunk_bytes = SIZE_MAX;
    /* A decoder gets a scratch buffer of the chunk's size (as the chunk-by-chunk path does). */
    else if (decode && chunk_bytes > (1u << 20)) return 0;
    uint8_t fill[8];
    for (size_t i = 0; i < itemsize; i++) fill[i] = byte(&r);

    xz_batch_job jobs[MAX_JOBS];
    uint64_t geoms[MAX_JOBS][3 * 3 + 1];
    uint8_t *stored[MAX_JOBS] = {0};
    uint8_t *lists[MAX_JOBS][3] = {{0}};
    size_t njobs = byte(&r) % (MAX_JOBS + 1);
    for (size_t i = 0; i < njobs; i++) {
        for (int k = 0; k < 3 * ndim; k++) geoms[i][k] = value(&r);
        /* Stored bytes: none, the chunk's size (or one off), or a run of the input. */
        uint8_t kind = byte(&r) % 4;
        size_t len = kind == 1 && chunk_bytes <= (1u << 16) ? chunk_bytes : byte(&r);
        if (kind == 2 && chunk_bytes <= (1u << 16)) len = chunk_bytes + 1;
        if (kind != 0) {
            stored[i] = malloc(len ? len : 1);
            for (size_t j = 0; j < len; j++) stored[i][j] = byte(&r);
        }
        /* Sometimes index lists of any values along some axes. */
        uint8_t which = byte(&r);
        for (int k = 0; k < ndim; k++) {
            uint64_t count = geoms[i][2 * ndim + k];
            lists[i][k] = (which >> k) & 1 && count <= 64 ? index_list(&r, count) : NULL;
        }
        jobs[i] = (xz_batch_job){stored[i], kind != 0 ? len : 0, geoms[i],
                                 which & 7 ? (const uint8_t *const *)lists[i] : NULL};
    }

    uint8_t *dst = malloc(total ? total : 1);
    xz_batch b = {dst, dst_shape, ndim, itemsize, fill, chunk_shape, decode, jobs, njobs, 0};
    char err[256];
    if (xz_batch_check(&b, err, sizeof err) == NULL) xz_batch_run(&b, threads, err, sizeof err);
    free(dst);
    for (size_t i = 0; i < njobs; i++) {
        free(stored[i]);
        for (int k = 0; k < 3; k++) free(lists[i][k]);
    }
    return 0;
}
