/* Point selections: mask positions and the grouping of points by chunk. */
#include "select.h"

#include <stdlib.h>
#include <string.h>

size_t xz_mask_count(const uint8_t *mask, size_t len) {
    size_t n = 0;
    for (size_t i = 0; i < len; i++) n += mask[i] != 0;
    return n;
}

static void put64(uint8_t *out, size_t j, uint64_t v) {
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    v = __builtin_bswap64(v);
#endif
    memcpy(out + 8 * j, &v, 8);
}

void xz_mask_points(const uint8_t *mask, size_t len, uint8_t *out) {
    size_t j = 0;
    for (size_t i = 0; i < len; i++)
        if (mask[i]) put64(out, j++, i);
}

/* The number of cells of the grouping key: chunks of the grid, times the inner chunks per
 * chunk of every further level; 0 when it overflows. `per` gets each level's inner grid. */
static uint64_t key_space(const uint64_t *shape, int ndim, const uint64_t *levels, int nlevels,
                          uint64_t per[XZ_MAX_LEVELS][XZ_MAX_DIMS]) {
    uint64_t total = 1;
    for (int l = 0; l < nlevels; l++)
        for (int k = 0; k < ndim; k++) {
            const uint64_t c = levels[l * ndim + k];
            per[l][k] = l == 0 ? shape[k] / c + (shape[k] % c != 0) : levels[(l - 1) * ndim + k] / c;
            if (per[l][k] == 0) per[l][k] = 1;
            if (__builtin_mul_overflow(total, per[l][k], &total)) return 0;
        }
    return total;
}

const char *xz_group_check(const uint8_t *points, size_t n, const uint64_t *shape, int ndim,
                           const uint64_t *levels, int nlevels) {
    if (nlevels < 1 || nlevels > XZ_MAX_LEVELS) return "between 1 and 4 chunk grids are needed";
    uint64_t size = 1;
    for (int k = 0; k < ndim; k++)
        if (__builtin_mul_overflow(size, shape[k], &size)) return "shape is too large";
    for (int l = 0; l < nlevels; l++)
        for (int k = 0; k < ndim; k++) {
            const uint64_t c = levels[l * ndim + k];
            if (c == 0) return "chunk shapes must be positive";
            if (l > 0 && levels[(l - 1) * ndim + k] % c != 0)
                return "an inner chunk shape does not divide the chunk shape";
        }
    uint64_t per[XZ_MAX_LEVELS][XZ_MAX_DIMS];
    if (n > 0 && key_space(shape, ndim, levels, nlevels, per) == 0) return "too many chunks";
    for (size_t i = 0; i < n; i++)
        if (xz_index_at(points, i) >= size) return "point is out of the array";
    return NULL;
}

typedef struct {
    uint64_t key;
    uint64_t pos;
} record;

/* Stable LSD radix sort of records by key, 8 bits a pass; passes whose byte is the same in
 * every key are skipped. The result is in `a` or `b`: returned. */
static record *radix_sort(record *a, record *b, size_t n, uint64_t max_key) {
    for (int shift = 0; shift < 64 && (max_key >> shift) != 0; shift += 8) {
        size_t count[257] = {0};
        for (size_t i = 0; i < n; i++) count[((a[i].key >> shift) & 0xFF) + 1]++;
        int used = 0;
        for (int v = 1; v <= 256; v++) used += count[v] != 0;
        if (used <= 1) continue;
        for (int v = 1; v <= 256; v++) count[v] += count[v - 1];
        for (size_t i = 0; i < n; i++) b[count[(a[i].key >> shift) & 0xFF]++] = a[i];
        record *t = a;
        a = b;
        b = t;
    }
    return a;
}

size_t xz_group_points(const uint8_t *points, size_t n, const uint64_t *shape, int ndim,
                       const uint64_t *levels, int nlevels, uint8_t *local, uint8_t *order,
                       xz_group *groups, int *sorted) {
    *sorted = 1;
    if (n == 0) return 0;
    uint64_t per[XZ_MAX_LEVELS][XZ_MAX_DIMS];
    uint64_t space = key_space(shape, ndim, levels, nlevels, per);
    /* Keys of the inner levels per chunk of the first: key / inner is the chunk. */
    uint64_t inner = 1;
    for (int l = 1; l < nlevels; l++)
        for (int k = 0; k < ndim; k++) inner *= per[l][k];
    record *a = malloc(n * sizeof(record)), *b = malloc(n * sizeof(record));
    if (!a || !b) {
        free(a);
        free(b);
        return SIZE_MAX;
    }
    uint64_t coords[XZ_MAX_DIMS];
    for (size_t i = 0; i < n; i++) {
        uint64_t v = xz_index_at(points, i);
        for (int k = ndim - 1; k >= 0; k--) {
            coords[k] = v % shape[k];
            v /= shape[k];
        }
        uint64_t key = 0;
        for (int l = 0; l < nlevels; l++)
            for (int k = 0; k < ndim; k++) {
                const uint64_t c = levels[l * ndim + k];
                const uint64_t x = l == 0 ? coords[k] : coords[k] % levels[(l - 1) * ndim + k];
                key = key * per[l][k] + x / c;
            }
        a[i].key = key;
        a[i].pos = i;
    }
    record *r = radix_sort(a, b, n, space - 1);
    size_t ngroups = 0;
    for (size_t j = 0; j < n; j++) {
        uint64_t v = xz_index_at(points, (size_t)r[j].pos), lin = 0;
        for (int k = ndim - 1; k >= 0; k--) {
            coords[k] = v % shape[k];
            v /= shape[k];
        }
        for (int k = 0; k < ndim; k++) lin = lin * levels[k] + coords[k] % levels[k];
        put64(local, j, lin);
        put64(order, j, r[j].pos);
        if (r[j].pos != j) *sorted = 0;
        uint64_t chunk = r[j].key / inner;
        if (ngroups > 0 && groups[ngroups - 1].chunk == chunk) {
            groups[ngroups - 1].count++;
        } else {
            groups[ngroups].chunk = chunk;
            groups[ngroups].count = 1;
            ngroups++;
        }
    }
    free(a);
    free(b);
    return ngroups;
}
