/* Whether copy pieces tile a destination as a grid (see tiling.c). */
#ifndef EXZARR_TILING_H
#define EXZARR_TILING_H

#include <stddef.h>
#include <stdint.h>

/* 1 when the `n` boxes (each `start[ndim]` then `count[ndim]`, packed) cover `shape` exactly
 * once as the cells of a grid: along every axis the boxes' intervals partition [0, shape), and
 * every cell of the product of those partitions is one box. 0 otherwise (also on allocation
 * failure). O(ndim n log n). */
int xz_boxes_tile_grid(const uint64_t *boxes, size_t n, const uint64_t *shape, int ndim);

/* Boxes up to this many are checked pairwise by xz_boxes_tile (a quadratic check); more must
 * form a grid. */
#define XZ_MAX_TILE_CHECK 256

/* 1 when the `n` boxes (packed as for xz_boxes_tile_grid, each inside `shape`) cover `shape`
 * exactly once: their volumes add up to it and they are pairwise disjoint (n up to
 * XZ_MAX_TILE_CHECK) or form a grid. Empty boxes count for nothing. 0 otherwise. */
int xz_boxes_tile(const uint64_t *boxes, size_t n, const uint64_t *shape, int ndim);

#endif
