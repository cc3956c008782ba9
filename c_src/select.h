/* Point selections: the selected positions of a mask, and points grouped by the chunk (and the
 * inner chunks of nested grids) that holds them. Plain C (no erl_nif), so the fuzz harness can
 * build it too. */
#ifndef EXZARR_SELECT_H
#define EXZARR_SELECT_H

#include <stddef.h>
#include <stdint.h>

#include "kernels.h"

/* Nested chunk grids a grouping follows: the chunk shape, then inner chunk shapes. */
#define XZ_MAX_LEVELS 4

/* Number of non-zero bytes of `mask`. */
size_t xz_mask_count(const uint8_t *mask, size_t len);

/* Writes the positions of the non-zero bytes of `mask`, in order, as little-endian uint64
 * (room for xz_mask_count entries). */
void xz_mask_points(const uint8_t *mask, size_t len, uint8_t *out);

/* One group of grouped points: the chunk's C-order linear index in the chunk grid and how many
 * points it holds. */
typedef struct {
    uint64_t chunk;
    uint64_t count;
} xz_group;

/* Checks a grouping request: `levels` holds `nlevels` shapes of `ndim` positive axes, each one
 * after the first dividing the one before; every one of the n points (little-endian uint64
 * C-order linear indices) lies in an array of `shape`. NULL when valid, else a static message. */
const char *xz_group_check(const uint8_t *points, size_t n, const uint64_t *shape, int ndim,
                           const uint64_t *levels, int nlevels);

/* Sorts a checked request's points, stably, by the chunk of levels[0] that holds them, then by
 * the chunk of each next level inside it. For the j-th point in that order writes local[j] (its
 * C-order linear index within its chunk of levels[0]) and order[j] (its position in `points`),
 * little-endian uint64 each; `groups` gets the runs of points of one chunk (room for n).
 * Returns the number of groups, with *sorted 1 when order is the identity; SIZE_MAX when out
 * of memory. */
size_t xz_group_points(const uint8_t *points, size_t n, const uint64_t *shape, int ndim,
                       const uint64_t *levels, int nlevels, uint8_t *local, uint8_t *order,
                       xz_group *groups, int *sorted);

#endif
