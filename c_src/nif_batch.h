/* Argument parsing shared by the NIFs that run a batch (batch.c): decode_into and
 * outbuf_put_batch. */
#ifndef EXZARR_NIF_BATCH_H
#define EXZARR_NIF_BATCH_H

#include <erl_nif.h>

#include "batch.h"

/* The jobs of a batch and the geometry and index lists they point into (3 * ndim values and
 * ndim lists each). */
typedef struct {
    xz_batch_job *jobs;
    uint64_t *geoms;
    const uint8_t **lists;
    unsigned njobs;
} xz_batch_jobs;

/* A decoder name xz_decoder_named knows (`raw` for none); 0 when it is not one. */
int xz_get_batch_decoder(ErlNifEnv *env, ERL_NIF_TERM t, xz_decode_fn *fn);

/* Parses a list of {binary | nil, src_start, dst_start, count} with `ndim`-tuples (src_start
 * may hold index lists, see xz_get_starts) into `out`
 * (the binaries are used in place: they must outlive the batch). 1 on success, else 0 with the
 * error term in `error`; xz_free_batch_jobs frees what was allocated either way. */
int xz_get_batch_jobs(ErlNifEnv *env, ERL_NIF_TERM list, int ndim, xz_batch_jobs *out,
                      ERL_NIF_TERM *error);
void xz_free_batch_jobs(xz_batch_jobs *jobs);

/* The work of a batch, for the dirty-scheduler decision (xz_maybe_dirty): a stored chunk that
 * `codec` decodes costs its chunk's bytes, a raw one or a fill only its box's bytes (a thin
 * box across many uncompressed inner chunks copies little). Lists of more than
 * XZ_BATCH_WALK jobs, and arguments the batch itself will refuse, count as large. */
#define XZ_BATCH_WALK 1024
size_t xz_batch_work(ErlNifEnv *env, ERL_NIF_TERM codec, ERL_NIF_TERM chunk_shape,
                     size_t itemsize, ERL_NIF_TERM jobs);

#endif
