/* NIF glue of batch.c: decode_into(dst_shape, itemsize, fill, codec, chunk_shape, chunks, threads),
 * and the parsing outbuf_put_batch shares. */
#include <string.h>

#include "batch.h"
#include "nif_batch.h"
#include "nif_funs.h"
#include "nif_util.h"

int xz_get_batch_decoder(ErlNifEnv *env, ERL_NIF_TERM t, xz_decode_fn *fn) {
    char name[16];
    if (enif_get_atom(env, t, name, sizeof name, ERL_NIF_LATIN1) <= 0) return 0;
    return xz_decoder_named(name, fn) != NULL;
}

/* {binary | nil, src_start, dst_start, count} into `job`, its `geom` (3 * ndim values) and its
 * index `lists` (ndim; job->lists stays NULL for a plain box). */
static int get_job(ErlNifEnv *env, ERL_NIF_TERM t, int ndim, xz_batch_job *job, uint64_t *geom,
                   const uint8_t **lists) {
    int arity, n;
    const ERL_NIF_TERM *e;
    ErlNifBinary bin;
    uint64_t lens[XZ_MAX_DIMS];
    if (!enif_get_tuple(env, t, &arity, &e) || arity != 4) return 0;
    if (enif_is_identical(e[0], xz_atom_nil)) {
        job->src = NULL;
        job->len = 0;
    } else if (enif_inspect_binary(env, e[0], &bin)) {
        job->src = bin.data;
        job->len = bin.size;
    } else {
        return 0;
    }
    if (!xz_get_starts(env, e[1], geom, lists, lens, &n) || n != ndim) return 0;
    for (int k = 1; k < 3; k++)
        if (!xz_get_shape(env, e[1 + k], geom + (size_t)k * ndim, &n) || n != ndim) return 0;
    job->geom = geom;
    job->lists = NULL;
    for (int k = 0; k < ndim; k++) {
        if ((lists[k] || lens[k]) && lens[k] != geom[2 * ndim + k]) return 0;
        if (lists[k]) job->lists = lists;
    }
    return 1;
}

int xz_get_batch_jobs(ErlNifEnv *env, ERL_NIF_TERM list, int ndim, xz_batch_jobs *out,
                      ERL_NIF_TERM *error) {
    out->jobs = NULL;
    out->geoms = NULL;
    out->lists = NULL;
    if (!enif_get_list_length(env, list, &out->njobs)) {
        *error = enif_make_badarg(env);
        return 0;
    }
    size_t d = ndim ? (size_t)ndim : 1, n = out->njobs ? out->njobs : 1;
    out->jobs = enif_alloc(n * sizeof(xz_batch_job));
    out->geoms = enif_alloc(n * 3 * d * sizeof(uint64_t));
    out->lists = enif_alloc(n * d * sizeof(const uint8_t *));
    if (!out->jobs || !out->geoms || !out->lists) {
        *error = xz_error(env, "memory", "cannot allocate the plan of %u chunks", out->njobs);
        return 0;
    }
    ERL_NIF_TERM head;
    for (unsigned i = 0; enif_get_list_cell(env, list, &head, &list); i++)
        if (!get_job(env, head, ndim, &out->jobs[i], out->geoms + (size_t)i * 3 * d,
                     out->lists + (size_t)i * d)) {
            *error = xz_error(env, "decode_into",
                              "chunk %u is not {binary | nil, src_start, dst_start, count} with "
                              "%d-tuples of non-negative integers (src_start may hold index "
                              "lists of count entries)",
                              i, ndim);
            return 0;
        }
    return 1;
}

void xz_free_batch_jobs(xz_batch_jobs *j) {
    if (j->jobs) enif_free(j->jobs);
    if (j->geoms) enif_free(j->geoms);
    if (j->lists) enif_free(j->lists);
}

size_t xz_batch_work(ErlNifEnv *env, ERL_NIF_TERM codec, ERL_NIF_TERM chunk_shape,
                     size_t itemsize, ERL_NIF_TERM jobs) {
    uint64_t shape[XZ_MAX_DIMS], count[XZ_MAX_DIMS];
    int ndim, n, arity;
    unsigned njobs;
    size_t chunk_bytes, work = 0;
    xz_decode_fn decode;
    const ERL_NIF_TERM *e;
    ERL_NIF_TERM head;
    if (!xz_get_batch_decoder(env, codec, &decode) || !xz_get_shape(env, chunk_shape, shape, &ndim) ||
        !enif_get_list_length(env, jobs, &njobs) || njobs > XZ_BATCH_WALK ||
        xz_shape_bytes(shape, ndim, itemsize, &chunk_bytes) != 0)
        return SIZE_MAX;
    while (enif_get_list_cell(env, jobs, &head, &jobs)) {
        if (!enif_get_tuple(env, head, &arity, &e) || arity != 4) return SIZE_MAX;
        size_t cost = chunk_bytes;
        if (!decode || enif_is_identical(e[0], xz_atom_nil)) {
            if (!xz_get_shape(env, e[3], count, &n) || n != ndim ||
                xz_shape_bytes(count, ndim, itemsize, &cost) != 0)
                return SIZE_MAX;
        }
        if (__builtin_add_overflow(work, cost, &work)) return SIZE_MAX;
    }
    return work;
}

static ERL_NIF_TERM decode_into_run(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]) {
    (void)argc;
    uint64_t dst_shape[XZ_MAX_DIMS], chunk_shape[XZ_MAX_DIMS];
    int ndim, cdim, threads;
    size_t itemsize, total;
    ErlNifBinary fill;
    xz_decode_fn decode;
    if (!xz_get_shape(env, argv[0], dst_shape, &ndim) || !xz_get_size(env, argv[1], &itemsize) ||
        !enif_inspect_binary(env, argv[2], &fill) || !xz_get_batch_decoder(env, argv[3], &decode) ||
        !xz_get_shape(env, argv[4], chunk_shape, &cdim) || !enif_is_list(env, argv[5]) ||
        !enif_get_int(env, argv[6], &threads))
        return enif_make_badarg(env);
    if (itemsize == 0 || fill.size != itemsize)
        return xz_error(env, "decode_into", "fill element is %zu bytes, itemsize is %zu", fill.size,
                        itemsize);
    if (cdim != ndim)
        return xz_error(env, "decode_into", "chunk shape has %d axes, destination has %d", cdim, ndim);
    if (xz_shape_bytes(dst_shape, ndim, itemsize, &total) != 0)
        return xz_error(env, "decode_into", "destination shape is too large");

    xz_batch_jobs j;
    ERL_NIF_TERM result;
    if (!xz_get_batch_jobs(env, argv[5], ndim, &j, &result)) {
        xz_free_batch_jobs(&j);
        return result;
    }
    char err[256];
    ErlNifBinary out;
    xz_batch b = {NULL, dst_shape, ndim, itemsize, fill.data, chunk_shape, decode, j.jobs, j.njobs, 0};
    if (xz_batch_check(&b, err, sizeof err)) {
        result = xz_error(env, "decode_into", "%s", err);
    } else if (!enif_alloc_binary(total, &out)) {
        result = xz_error(env, "memory", "cannot allocate %zu bytes", total);
    } else {
        b.dst = out.data;
        if (xz_batch_run(&b, threads, err, sizeof err)) {
            enif_release_binary(&out);
            result = xz_error(env, "corrupt_chunk", "%s", err);
        } else {
            result = xz_ok(env, enif_make_binary(env, &out));
        }
    }
    xz_free_batch_jobs(&j);
    return result;
}

XZ_NIF(decode_into) {
    size_t itemsize;
    if (!xz_get_size(env, argv[1], &itemsize)) return enif_make_badarg(env);
    size_t work = xz_batch_work(env, argv[3], argv[4], itemsize, argv[5]);
    return xz_maybe_dirty(env, "decode_into", work, decode_into_run, argc, argv);
}
