/* Tiling checks for copy_regions and the output buffer: when the pieces of a copy cover the
 * destination exactly once (as the plans of ExZarr.Indexing do), the base is never visible and
 * the destination need not be filled first. */
#include "tiling.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    uint64_t start, count;
} interval;

static int by_start(const void *a, const void *b) {
    const interval *x = a, *y = b;
    if (x->start != y->start) return x->start < y->start ? -1 : 1;
    return x->count < y->count ? -1 : x->count > y->count;
}

/* Index of the interval starting at `start` among `m` sorted distinct ones, or -1. */
static long find_start(const interval *iv, size_t m, uint64_t start) {
    size_t lo = 0, hi = m;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (iv[mid].start < start)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < m && iv[lo].start == start ? (long)lo : -1;
}

int xz_boxes_tile_grid(const uint64_t *boxes, size_t n, const uint64_t *shape, int ndim) {
    if (n == 0 || ndim <= 0) return 0;
    interval *axes = malloc(n * (size_t)ndim * sizeof(interval));
    size_t *m = malloc((size_t)ndim * sizeof(size_t));
    unsigned char *seen = calloc(n, 1);
    int ok = axes && m && seen;
    size_t cells = 1;

    /* Per axis: the distinct intervals, which must be contiguous from 0 to the shape. */
    for (int k = 0; ok && k < ndim; k++) {
        interval *iv = axes + (size_t)k * n;
        for (size_t i = 0; i < n; i++) {
            iv[i].start = boxes[i * 2 * ndim + k];
            iv[i].count = boxes[i * 2 * ndim + ndim + k];
        }
        qsort(iv, n, sizeof(interval), by_start);
        size_t u = 0;
        for (size_t i = 0; i < n; i++)
            if (u == 0 || iv[i].start != iv[u - 1].start || iv[i].count != iv[u - 1].count)
                iv[u++] = iv[i];
        uint64_t end = 0;
        for (size_t i = 0; ok && i < u; i++) {
            ok = iv[i].start == end && iv[i].count > 0;
            end += iv[i].count;
        }
        ok = ok && end == shape[k];
        m[k] = u;
        ok = ok && cells <= n / u; /* the grid has at most n cells */
        cells *= u;
    }
    ok = ok && cells == n;

    /* Every box is one cell, and no cell twice: with n boxes and n cells, all are covered. */
    for (size_t i = 0; ok && i < n; i++) {
        size_t cell = 0;
        for (int k = 0; ok && k < ndim; k++) {
            const interval *iv = axes + (size_t)k * n;
            long j = find_start(iv, m[k], boxes[i * 2 * ndim + k]);
            ok = j >= 0 && iv[j].count == boxes[i * 2 * ndim + ndim + k];
            cell = cell * m[k] + (size_t)(j >= 0 ? j : 0);
        }
        ok = ok && !seen[cell];
        if (ok) seen[cell] = 1;
    }
    free(axes);
    free(m);
    free(seen);
    return ok;
}

/* Boxes are {start[ndim], count[ndim]}; empty boxes overlap nothing. */
static int boxes_overlap(const uint64_t *a, const uint64_t *b, int ndim) {
    for (int k = 0; k < ndim; k++) {
        if (a[ndim + k] == 0 || b[ndim + k] == 0) return 0;
        if (a[k] + a[ndim + k] <= b[k] || b[k] + b[ndim + k] <= a[k]) return 0;
    }
    return 1;
}

int xz_boxes_tile(const uint64_t *boxes, size_t n, const uint64_t *shape, int ndim) {
    uint64_t total = 1, volume = 0;
    for (int k = 0; k < ndim; k++)
        if (__builtin_mul_overflow(total, shape[k], &total)) return 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t v = 1;
        for (int k = 0; k < ndim; k++)
            if (__builtin_mul_overflow(v, boxes[i * 2 * ndim + ndim + k], &v)) return 0;
        if (__builtin_add_overflow(volume, v, &volume)) return 0;
    }
    if (volume != total) return 0;
    if (n > XZ_MAX_TILE_CHECK) return xz_boxes_tile_grid(boxes, n, shape, ndim);
    for (size_t i = 0; i < n; i++)
        for (size_t j = i + 1; j < n; j++)
            if (boxes_overlap(boxes + i * 2 * ndim, boxes + j * 2 * ndim, ndim)) return 0;
    return 1;
}
