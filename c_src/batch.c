/* Batch decoding: many chunks of one shape, each decoded into a per-thread scratch buffer (or
 * used as stored) and its box copied into one output array, on several threads. No chunk
 * becomes a buffer of its own: a sharded read of thousands of inner chunks costs one output
 * allocation. Boxes that tile the output as a grid (as ExZarr.Indexing plans them) leave no
 * byte to fill first. */
#include "batch.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tiling.h"

/* Jobs a thread claims at once, at most: consecutive chunks are neighbours in the output, so
 * threads working on runs of them rarely write to the same cache lines; a batch of fewer jobs
 * claims fewer at once, so that every thread gets some. (Both settings can be set from the
 * command line: the fuzz target sets them to 1 to run small batches on threads.) */
#ifndef XZ_BATCH_CLAIM
#define XZ_BATCH_CLAIM 32
#endif
/* Decoded bytes per thread below which another thread costs more than it saves. */
#ifndef XZ_BATCH_BYTES_PER_THREAD
#define XZ_BATCH_BYTES_PER_THREAD (4u << 20)
#endif

typedef struct {
    const xz_batch *b;
    size_t chunk_bytes;
    uint8_t *fill_box; /* fill for the largest box of a job without stored bytes */
    size_t claim; /* jobs claimed at once */
    atomic_size_t next;
    atomic_int failed;
    pthread_mutex_t lock;
    char *err;
    size_t errlen;
} batch_run;

static void fail(batch_run *r, size_t job, const char *why) {
    pthread_mutex_lock(&r->lock);
    if (!atomic_load(&r->failed)) {
        snprintf(r->err, r->errlen, "chunk %zu: %s", job, why);
        atomic_store(&r->failed, 1);
    }
    pthread_mutex_unlock(&r->lock);
}

/* The index lists of a job as a piece takes them (in `ix`), or NULL for a plain box. */
static const xz_index *job_index(const xz_batch_job *job, size_t d, xz_index *ix) {
    if (!job->lists) return NULL;
    for (size_t k = 0; k < d; k++) {
        ix->src[k] = job->lists[k];
        ix->dst[k] = NULL;
    }
    return ix;
}

static void run_jobs(batch_run *r) {
    const xz_batch *b = r->b;
    uint8_t *scratch = NULL; /* a decoded chunk, taken at the first one */
    int temp = 0;
    xz_piece p = {.index = NULL};
    xz_index ix;
    size_t d = (size_t)b->ndim;
    while (!atomic_load(&r->failed)) {
        size_t first = atomic_fetch_add(&r->next, r->claim);
        if (first >= b->njobs) break;
        size_t last = first + r->claim < b->njobs ? first + r->claim : b->njobs;
        for (size_t i = first; i < last && !atomic_load(&r->failed); i++) {
            const xz_batch_job *job = &b->jobs[i];
            memcpy(p.src_start, job->geom, d * sizeof(uint64_t));
            memcpy(p.dst_start, job->geom + d, d * sizeof(uint64_t));
            memcpy(p.count, job->geom + 2 * d, d * sizeof(uint64_t));
            memcpy(p.src_shape, b->chunk_shape, d * sizeof(uint64_t));
            p.src_len = r->chunk_bytes;
            p.index = job_index(job, d, &ix);
            if (!job->src) {
                /* The box from a buffer of fill of its own shape. */
                memcpy(p.src_shape, p.count, d * sizeof(uint64_t));
                memset(p.src_start, 0, d * sizeof(uint64_t));
                p.index = NULL; /* (every element of the fill box is the same) */
                p.src = r->fill_box;
                p.src_len = 0; /* unused by the copy */
            } else if (!b->decode) {
                if (job->len != r->chunk_bytes) {
                    char why[96];
                    snprintf(why, sizeof why, "stored as %zu bytes, expected %zu", job->len,
                             r->chunk_bytes);
                    fail(r, i, why);
                    break;
                }
                p.src = job->src;
            } else {
                if (!scratch &&
                    !(scratch = xz_thread_scratch(r->chunk_bytes ? r->chunk_bytes : 1, &temp))) {
                    fail(r, i, "out of memory");
                    break;
                }
                xz_out o = XZ_OUT_FIXED(scratch, r->chunk_bytes);
                size_t n = 0;
                xz_status e = b->decode(job->src, job->len, r->chunk_bytes, 1, &o, &n);
                if (!e && n != r->chunk_bytes) e = "decoded to the wrong size";
                if (e) {
                    fail(r, i, e);
                    break;
                }
                p.src = scratch;
            }
            xz_piece_copy(b->dst, b->dst_shape, b->ndim, b->itemsize, &p);
        }
    }
    if (temp) free(scratch);
}

static void *worker(void *arg) {
    run_jobs(arg);
    /* the thread ends: free what it cached */
    xz_codecs_thread_release();
    xz_thread_scratch_release();
    return NULL;
}

const char *xz_batch_check(const xz_batch *b, char *err, size_t errlen) {
    size_t chunk_bytes, d = (size_t)b->ndim;
    if (xz_shape_bytes(b->chunk_shape, b->ndim, b->itemsize, &chunk_bytes) != 0) {
        snprintf(err, errlen, "chunk shape is too large");
        return err;
    }
    xz_piece p = {.index = NULL};
    xz_index ix;
    memcpy(p.src_shape, b->chunk_shape, d * sizeof(uint64_t));
    p.src = NULL;
    p.src_len = chunk_bytes;
    for (size_t i = 0; i < b->njobs; i++) {
        p.index = job_index(&b->jobs[i], d, &ix);
        memcpy(p.src_start, b->jobs[i].geom, d * sizeof(uint64_t));
        memcpy(p.dst_start, b->jobs[i].geom + d, d * sizeof(uint64_t));
        memcpy(p.count, b->jobs[i].geom + 2 * d, d * sizeof(uint64_t));
        const char *why = xz_piece_check(&p, b->dst_shape, b->ndim, b->itemsize);
        if (why) {
            snprintf(err, errlen, "chunk %zu: %s", i, why);
            return err;
        }
    }
    return NULL;
}

/* 1 when the jobs' boxes cover the output exactly once as a grid. */
static int tiles(const xz_batch *b) {
    size_t d = (size_t)b->ndim;
    if (b->njobs == 0 || d == 0) return b->njobs == 1;
    uint64_t *boxes = malloc(b->njobs * 2 * d * sizeof(uint64_t));
    if (!boxes) return 0;
    for (size_t i = 0; i < b->njobs; i++) {
        memcpy(boxes + i * 2 * d, b->jobs[i].geom + d, d * sizeof(uint64_t));
        memcpy(boxes + i * 2 * d + d, b->jobs[i].geom + 2 * d, d * sizeof(uint64_t));
    }
    int ok = xz_boxes_tile_grid(boxes, b->njobs, b->dst_shape, b->ndim);
    free(boxes);
    return ok;
}

const char *xz_batch_run(const xz_batch *b, int threads, char *err, size_t errlen) {
    size_t total, chunk_bytes, d = (size_t)b->ndim;
    if (xz_shape_bytes(b->dst_shape, b->ndim, b->itemsize, &total) != 0 ||
        xz_shape_bytes(b->chunk_shape, b->ndim, b->itemsize, &chunk_bytes) != 0) {
        snprintf(err, errlen, "shape is too large");
        return err;
    }
    if (!b->shared && !tiles(b)) xz_fill(b->dst, total, b->fill, b->itemsize);

    batch_run r = {.b = b, .chunk_bytes = chunk_bytes, .err = err, .errlen = errlen};
    atomic_init(&r.next, 0);
    atomic_init(&r.failed, 0);
    pthread_mutex_init(&r.lock, NULL);
    /* Boxes lie inside the output (checked): the largest is at most `total` bytes. */
    size_t fill_bytes = 0;
    for (size_t i = 0; i < b->njobs; i++) {
        size_t n;
        if (!b->jobs[i].src && xz_shape_bytes(b->jobs[i].geom + 2 * d, b->ndim, b->itemsize, &n) == 0 &&
            n > fill_bytes)
            fill_bytes = n;
    }
    if (fill_bytes > 0) {
        if (!(r.fill_box = malloc(fill_bytes))) {
            snprintf(err, errlen, "out of memory");
            pthread_mutex_destroy(&r.lock);
            return err;
        }
        xz_fill(r.fill_box, fill_bytes, b->fill, b->itemsize);
    }

    /* Threads beyond the caller's, as many as the work pays for. */
    size_t work = chunk_bytes && b->njobs > SIZE_MAX / chunk_bytes
                      ? SIZE_MAX
                      : b->njobs * chunk_bytes / XZ_BATCH_BYTES_PER_THREAD;
    size_t extra = threads > 1 ? (size_t)threads - 1 : 0;
    if (extra > work) extra = work;
    if (b->njobs > 0 && extra > b->njobs - 1) extra = b->njobs - 1;
    pthread_t tids[XZ_BATCH_MAX_THREADS];
    if (extra > XZ_BATCH_MAX_THREADS) extra = XZ_BATCH_MAX_THREADS;
    /* (four claims or more per thread, so that they end about together) */
    r.claim = b->njobs / (4 * (extra + 1));
    if (r.claim > XZ_BATCH_CLAIM) r.claim = XZ_BATCH_CLAIM;
    if (r.claim == 0) r.claim = 1;
    size_t started = 0;
    while (started < extra && pthread_create(&tids[started], NULL, worker, &r) == 0) started++;
    run_jobs(&r);
    for (size_t i = 0; i < started; i++) pthread_join(tids[i], NULL);

    free(r.fill_box);
    pthread_mutex_destroy(&r.lock);
    return atomic_load(&r.failed) ? err : NULL;
}
