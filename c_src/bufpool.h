/* A bounded pool of large output buffers kept between calls (see bufpool.c). */
#ifndef XZ_BUFPOOL_H
#define XZ_BUFPOOL_H

#include <stddef.h>
#include <stdint.h>

#include <erl_nif.h>

/* Buffers of this size and more are pooled; smaller ones are plain enif_alloc memory. */
#define XZ_POOL_MIN ((size_t)128 << 10)

int xz_bufpool_load(ErlNifEnv *env);
void xz_bufpool_unload(void);
/* A buffer of at least `size` bytes (its capacity in *cap), NULL when out of memory. */
void *xz_bufpool_get(size_t size, size_t *cap);
/* Gives back a buffer of xz_bufpool_get (NULL is ignored). */
void xz_bufpool_put(void *p, size_t cap);
/* Gives the kernel back the whole pages of `data` past its first `used` bytes (of `cap`): they
 * read as zeros when touched again. For a buffer kept at a fraction of its size. */
void xz_bufpool_drop_tail(uint8_t *data, size_t used, size_t cap);
/* Tells the trimmer thread that other memory of the NIF is kept for later calls (pcodec's,
 * after a call): it then gives that back too once unused for the idle time. */
void xz_bufpool_wake(void);
/* Buffers and bytes held right now. */
void xz_bufpool_stats(size_t *count, size_t *bytes);

/* A block: memory of a result binary, from the pool when large. xz_block_new gives one of
 * `size` bytes (NULL when out of memory) and its data in *data; xz_block_binary makes the
 * result binary of its first `size` bytes, which then owns it (the memory goes back to the pool
 * when the binary is garbage); xz_block_drop frees a block that became no binary. */
typedef struct xz_block xz_block;
xz_block *xz_block_new(size_t size, uint8_t **data);
ERL_NIF_TERM xz_block_binary(ErlNifEnv *env, xz_block *b, size_t size);
void xz_block_drop(xz_block *b);

/* The memory of a result binary of `size` bytes: a pooled block from XZ_POOL_MIN bytes on,
 * else a plain Erlang binary (a block costs a resource more). xz_result_alloc returns its data
 * (NULL when out of memory); xz_result_term makes the result binary, of the first `size` bytes
 * of a block (a binary's size is the one it was allocated or resized at); xz_result_release
 * frees one that became no binary. */
typedef struct {
    xz_block *block;
    ErlNifBinary bin;
} xz_result;
uint8_t *xz_result_alloc(xz_result *r, size_t size);
ERL_NIF_TERM xz_result_term(ErlNifEnv *env, xz_result *r, size_t size);
void xz_result_release(xz_result *r);

#endif
