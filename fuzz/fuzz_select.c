/* libFuzzer target for the point selections (select.c): mask positions and the grouping of
 * points by nested chunk grids. Whatever the checks accept must stay inside buffers of exactly
 * the validated sizes, and every grouping must be a permutation of its points (stable for one
 * grid). Indexed copies are fuzzed by fuzz_copy. */
#include <stdlib.h>
#include <string.h>

#include "kernels.h"
#include "reader.h"
#include "select.h"

static void fuzz_mask(reader *r) {
    size_t len = byte(r);
    uint8_t *mask = malloc(len ? len : 1);
    for (size_t i = 0; i < len; i++) mask[i] = byte(r) & 1;
    size_t n = xz_mask_count(mask, len);
    uint8_t *out = malloc(n ? n * 8 : 1);
    xz_mask_points(mask, len, out);
    for (size_t j = 0; j < n; j++)
        if (!mask[xz_index_at(out, j)]) abort();
    free(out);
    free(mask);
}

static void fuzz_group(reader *r) {
    int ndim = byte(r) % 4, nlevels = byte(r) % 6;
    uint64_t shape[XZ_MAX_DIMS], levels[XZ_MAX_LEVELS * XZ_MAX_DIMS];
    for (int k = 0; k < ndim; k++) shape[k] = value(r);
    for (int l = 0; l < nlevels && l < XZ_MAX_LEVELS; l++)
        for (int k = 0; k < ndim; k++) levels[l * ndim + k] = value(r);
    size_t n = byte(r);
    uint8_t *points = index_list(r, n);
    if (xz_group_check(points, n, shape, ndim, levels, nlevels) == NULL) {
        uint8_t *local = malloc(n ? n * 8 : 1), *order = malloc(n ? n * 8 : 1);
        xz_group *groups = malloc(n ? n * sizeof(xz_group) : 1);
        int sorted;
        size_t ng = xz_group_points(points, n, shape, ndim, levels, nlevels, local, order, groups,
                                    &sorted);
        if (ng != SIZE_MAX) {
            /* A permutation of the points, stable within a group, counts adding up. */
            uint8_t *seen = calloc(n ? n : 1, 1);
            size_t total = 0, j = 0;
            for (size_t g = 0; g < ng; g++) {
                for (uint64_t c = 0; c < groups[g].count; c++, j++) {
                    uint64_t pos = xz_index_at(order, j);
                    if (pos >= n || seen[pos]) abort();
                    /* (with one grid, points of a chunk keep their order) */
                    if (nlevels == 1 && c > 0 && pos < xz_index_at(order, j - 1)) abort();
                    seen[pos] = 1;
                }
                total += groups[g].count;
            }
            if (total != n) abort();
            free(seen);
        }
        free(local);
        free(order);
        free(groups);
    }
    free(points);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    reader r = {data, size};
    if (byte(&r) & 1)
        fuzz_mask(&r);
    else
        fuzz_group(&r);
    return 0;
}
