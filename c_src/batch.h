/* Batch decoding of chunks straight into one output array (see batch.c). Plain C (no erl_nif),
 * so the fuzz harness can build it too. */
#ifndef EXZARR_BATCH_H
#define EXZARR_BATCH_H

#include <stddef.h>
#include <stdint.h>

#include "codecs.h"
#include "kernels.h"

/* Threads one batch may use besides the caller's. */
#define XZ_BATCH_MAX_THREADS 63

/* One chunk to place: its stored bytes (NULL: the chunk is not stored, its box gets the fill
 * element) and its box, `geom` = src_start[ndim], dst_start[ndim], count[ndim]; `lists` NULL,
 * or ndim index lists taking the box's positions in the chunk along the axes where they are
 * not NULL (see xz_index; the pieces of orthogonal and point selections). */
typedef struct {
    const uint8_t *src;
    size_t len;
    const uint64_t *geom;
    const uint8_t *const *lists;
} xz_batch_job;

typedef struct {
    uint8_t *dst;               /* the output, `dst_shape` elements */
    const uint64_t *dst_shape;
    int ndim;
    size_t itemsize;
    const uint8_t *fill;        /* one element */
    const uint64_t *chunk_shape; /* every chunk's decoded shape */
    xz_decode_fn decode;        /* NULL: chunks are stored as their packed elements */
    const xz_batch_job *jobs;
    size_t njobs;
    int shared;                 /* 1: other writers own the bytes no box covers: leave them */
} xz_batch;

/* Checks every job's box against the chunk and output shapes; NULL when valid, else a message
 * (in `err`). Must pass before xz_batch_run. */
const char *xz_batch_check(const xz_batch *b, char *err, size_t errlen);

/* Decodes every chunk and copies its box into the output, on up to `threads` threads (the
 * caller's included); output bytes no box covers get the fill element (unless `shared`). NULL on success, else
 * a message (in `err`) naming the first chunk that failed to decode; the output is then
 * incomplete. */
const char *xz_batch_run(const xz_batch *b, int threads, char *err, size_t errlen);

#endif
