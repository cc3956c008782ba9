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

#endif
