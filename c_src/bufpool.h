/* A bounded pool of large output buffers kept between reads (see bufpool.c). */
#ifndef XZ_BUFPOOL_H
#define XZ_BUFPOOL_H

#include <stddef.h>

int xz_bufpool_load(void);
void xz_bufpool_unload(void);
/* A buffer of at least `size` bytes (its capacity in *cap), NULL when out of memory. */
void *xz_bufpool_get(size_t size, size_t *cap);
/* Gives back a buffer of xz_bufpool_get (NULL is ignored). */
void xz_bufpool_put(void *p, size_t cap);
/* Buffers and bytes held right now. */
void xz_bufpool_stats(size_t *count, size_t *bytes);

#endif
