/* libFuzzer target for the copy kernels: copy_regions argument validation and copying (boxes,
 * and index lists of any values on either side), and transpose. Shapes, offsets and sizes come from the input; whenever the checks accept them,
 * the copy must stay inside buffers of exactly the validated sizes. */
#include <stdlib.h>
#include <string.h>

#include "kernels.h"
#include "reader.h"

static void fuzz_pieces(reader *r) {
    int ndim = byte(r) % 5;
    size_t itemsize = 1 + byte(r) % 16;
    uint64_t dst_shape[XZ_MAX_DIMS];
    for (int k = 0; k < ndim; k++) dst_shape[k] = value(r);
    size_t total;
    if (xz_shape_bytes(dst_shape, ndim, itemsize, &total) != 0 || total > (1u << 20)) return;
    uint8_t *dst = malloc(total ? total : 1);
    uint8_t fill[16];
    for (size_t i = 0; i < itemsize; i++) fill[i] = byte(r);
    xz_fill(dst, total, fill, itemsize);
    int npieces = byte(r) % 4;
    for (int i = 0; i < npieces; i++) {
        xz_piece p = {.index = NULL};
        xz_index ix;
        uint8_t *lists[2 * XZ_MAX_DIMS] = {NULL};
        for (int k = 0; k < ndim; k++) {
            p.src_shape[k] = value(r);
            p.src_start[k] = value(r);
            p.dst_start[k] = value(r);
            p.count[k] = value(r);
            /* Sometimes index lists (of any values) instead of starts, for small counts. */
            uint8_t which = p.count[k] <= 64 ? byte(r) : 0;
            ix.src[k] = lists[2 * k] = which & 1 ? index_list(r, p.count[k]) : NULL;
            ix.dst[k] = lists[2 * k + 1] = which & 2 ? index_list(r, p.count[k]) : NULL;
            if (which & 3) p.index = &ix;
        }
        size_t src_len;
        if (xz_shape_bytes(p.src_shape, ndim, itemsize, &src_len) != 0 || src_len > (1u << 20))
            src_len = byte(r);
        /* Sometimes a source of the wrong size: the check must refuse it. */
        if (byte(r) == 0x55) src_len += 1;
        uint8_t *src = malloc(src_len ? src_len : 1);
        memset(src, 0xAB, src_len);
        p.src = src;
        p.src_len = src_len;
        if (xz_piece_check(&p, dst_shape, ndim, itemsize) == NULL)
            xz_piece_copy(dst, dst_shape, ndim, itemsize, &p);
        for (int k = 0; k < 2 * ndim; k++) free(lists[k]);
        free(src);
    }
    free(dst);
}

static void fuzz_transpose(reader *r) {
    int ndim = byte(r) % 5;
    size_t itemsize = 1 + byte(r) % 16;
    uint64_t shape[XZ_MAX_DIMS], perm[XZ_MAX_DIMS];
    for (int k = 0; k < ndim; k++) shape[k] = value(r);
    for (int k = 0; k < ndim; k++) perm[k] = byte(r) % (ndim + 1);
    size_t len;
    if (xz_shape_bytes(shape, ndim, itemsize, &len) != 0 || len > (1u << 20)) len = byte(r);
    if (byte(r) == 0x55) len += itemsize;
    uint8_t *in = calloc(1, len ? len : 1), *out = malloc(len ? len : 1);
    if (xz_transpose_check(len, shape, ndim, itemsize, perm) == NULL)
        xz_transpose(out, in, shape, ndim, itemsize, perm);
    free(in);
    free(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    reader r = {data, size};
    if (byte(&r) & 1)
        fuzz_transpose(&r);
    else
        fuzz_pieces(&r);
    return 0;
}
