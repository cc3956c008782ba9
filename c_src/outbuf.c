/* ExZarr.Native.outbuf_*: an output buffer that the tasks decoding the chunks of a read fill in
 * parallel, each writing its own box, and that then becomes the result binary without a copy.
 *
 * The buffer is a NIF resource holding uninitialised memory of the output's size. Every write
 * (outbuf_put: a decoded or compressed chunk's box; outbuf_fill: a box of the fill element) is
 * bounds-checked and records its box; outbuf_finish turns the memory into a binary
 * (enif_make_resource_binary) only when the recorded boxes cover the output exactly once
 * (tiling.c), so no uninitialised byte is ever returned, and refuses writes from then on.
 * Finishing hands the memory (a block of bufpool.c) to the result binary alone: the tasks
 * that wrote into the buffer may hold the buffer's term a while after the read (until they
 * exit), and the memory goes back to the pool as soon as the result binary is garbage.
 *
 * A compressed chunk whose whole data is one run of the output decodes straight into it; other
 * chunks decode into a per-thread scratch buffer (reused, so its pages are not faulted in for
 * every chunk) and their box is copied from there by the copy kernel of kernels.c.
 *
 * The memory of a large buffer comes from, and goes back to, the pool of bufpool.c. */
#include <stdlib.h>
#include <string.h>

#include "batch.h"
#include "bufpool.h"
#include "codecs.h"
#include "kernels.h"
#include "nif_batch.h"
#include "nif_funs.h"
#include "nif_util.h"
#include "tiling.h"

typedef struct {
    uint8_t *data;
    size_t size;
    xz_block *block; /* holds data until finish makes it the result's */
    uint64_t shape[XZ_MAX_DIMS];
    int ndim;
    size_t itemsize;
    /* Writers hold it shared while they write; finish holds it exclusively. */
    ErlNifRWLock *lock;
    /* Guards the recorded boxes: {dst_start[ndim], count[ndim]} per write. */
    ErlNifMutex *boxes_lock;
    uint64_t *boxes;
    size_t nboxes, boxes_cap;
    int frozen;
} outbuf;

static ErlNifResourceType *outbuf_type;

static void outbuf_dtor(ErlNifEnv *env, void *obj) {
    (void)env;
    outbuf *b = obj;
    if (b->block) xz_block_drop(b->block);
    if (b->boxes) enif_free(b->boxes);
    if (b->lock) enif_rwlock_destroy(b->lock);
    if (b->boxes_lock) enif_mutex_destroy(b->boxes_lock);
}

int xz_outbuf_load(ErlNifEnv *env) {
    outbuf_type = enif_open_resource_type(env, NULL, "exzarr_outbuf", outbuf_dtor,
                                          ERL_NIF_RT_CREATE, NULL);
    return outbuf_type != NULL;
}

/* ---- outbuf_new(shape, itemsize) ---- */

XZ_NIF(outbuf_new) {
    (void)argc;
    uint64_t shape[XZ_MAX_DIMS];
    int ndim;
    size_t itemsize, size;
    if (!xz_get_shape(env, argv[0], shape, &ndim) || !xz_get_size(env, argv[1], &itemsize))
        return enif_make_badarg(env);
    if (itemsize == 0) return xz_error(env, "outbuf", "itemsize must be positive");
    if (xz_shape_bytes(shape, ndim, itemsize, &size) != 0)
        return xz_error(env, "outbuf", "shape is too large");
    outbuf *b = enif_alloc_resource(outbuf_type, sizeof(outbuf));
    if (!b) return xz_error(env, "memory", "cannot allocate an output buffer");
    memset(b, 0, sizeof *b);
    memcpy(b->shape, shape, (size_t)ndim * sizeof(uint64_t));
    b->ndim = ndim;
    b->itemsize = itemsize;
    b->size = size;
    b->block = xz_block_new(size, &b->data);
    b->lock = enif_rwlock_create("exzarr_outbuf");
    b->boxes_lock = enif_mutex_create("exzarr_outbuf_boxes");
    ERL_NIF_TERM ref = enif_make_resource(env, b);
    enif_release_resource(b); /* the term owns it now; the destructor frees what was allocated */
    if (!b->block || !b->lock || !b->boxes_lock)
        return xz_error(env, "memory", "cannot allocate %zu bytes", size);
    return xz_ok(env, ref);
}

/* ---- shared by the writers ---- */

static int get_buf(ErlNifEnv *env, ERL_NIF_TERM t, outbuf **b) {
    return enif_get_resource(env, t, outbuf_type, (void **)b);
}

/* Byte offset of the box in the output when its elements are one run of it, else -1. The box is
 * in bounds. A run is: single indices along some leading axes, any count along one axis, whole
 * axes after it. */
static long long run_offset(const outbuf *b, const uint64_t *start, const uint64_t *count) {
    int k = b->ndim - 1;
    while (k > 0 && count[k] == b->shape[k]) k--;
    for (int j = 0; j < k; j++)
        if (count[j] != 1) return -1;
    size_t off = 0, stride = b->itemsize;
    for (int j = b->ndim - 1; j >= 0; j--) {
        off += (size_t)start[j] * stride;
        stride *= (size_t)b->shape[j];
    }
    return (long long)off;
}

/* 1 when a box has no element: there is nothing to write or to record. */
static int empty(const outbuf *b, const uint64_t *count) {
    for (int k = 0; k < b->ndim; k++)
        if (count[k] == 0) return 1;
    return 0;
}

/* Records a written box; 0 when out of memory. */
static int record(outbuf *b, const uint64_t *start, const uint64_t *count) {
    size_t w = 2 * (size_t)b->ndim;
    int ok = 1;
    enif_mutex_lock(b->boxes_lock);
    if (b->nboxes == b->boxes_cap) {
        size_t cap = b->boxes_cap ? 2 * b->boxes_cap : 16;
        uint64_t *boxes = enif_realloc(b->boxes, cap * (w ? w : 1) * sizeof(uint64_t));
        if (boxes) {
            b->boxes = boxes;
            b->boxes_cap = cap;
        } else {
            ok = 0;
        }
    }
    if (ok) {
        uint64_t *box = b->boxes + b->nboxes++ * w;
        memcpy(box, start, (size_t)b->ndim * sizeof(uint64_t));
        memcpy(box + b->ndim, count, (size_t)b->ndim * sizeof(uint64_t));
    }
    enif_mutex_unlock(b->boxes_lock);
    return ok;
}

static const char FINISHED[] = "the buffer was finished already";
static const char NO_MEMORY[] = "out of memory";

/* Writes the bytes of a box's source array (`size` bytes at dst); NULL or an error. */
typedef xz_status (*produce_fn)(const void *ctx, uint8_t *dst, size_t size);

/* Writes the checked box `p` into the buffer and records it. Its source is p->src when `produce`
 * is NULL; else `produce` writes it (`size` bytes): straight into the output at byte `run` when
 * the source is the whole box and the box is one run of the output (run >= 0), else into this
 * thread's scratch buffer, from which the box is copied. */
static xz_status write_box(outbuf *b, xz_piece *p, size_t size, long long run, produce_fn produce,
                           const void *ctx) {
    enif_rwlock_rlock(b->lock);
    xz_status e = NULL;
    if (b->frozen) {
        e = FINISHED;
    } else if (!produce) {
        xz_piece_copy(b->data, b->shape, b->ndim, b->itemsize, p);
    } else if (run >= 0) {
        e = produce(ctx, b->data + run, size);
    } else {
        int temp;
        uint8_t *s = xz_thread_scratch(size, &temp);
        if (!s) {
            e = NO_MEMORY;
        } else {
            e = produce(ctx, s, size);
            p->src = s;
            if (!e) xz_piece_copy(b->data, b->shape, b->ndim, b->itemsize, p);
            if (temp) free(s);
        }
    }
    if (!e && !record(b, p->dst_start, p->count)) e = NO_MEMORY;
    enif_rwlock_runlock(b->lock);
    return e;
}

/* ---- outbuf_put(buf, data, codec, {src_shape, src_start, dst_start, count}) ---- */

/* codec is a name xz_decoder_named knows, or {name, swap}: after decoding, the bytes of every
 * `swap`-byte unit are reversed (1 for none). */
static int get_codec(ErlNifEnv *env, ERL_NIF_TERM t, const char **codec, xz_decode_fn *decode,
                     size_t *swap) {
    int arity;
    const ERL_NIF_TERM *e;
    char name[16];
    *swap = 1;
    if (enif_get_tuple(env, t, &arity, &e)) {
        if (arity != 2 || !xz_get_size(env, e[1], swap)) return 0;
        t = e[0];
    }
    if (*swap != 1 && *swap != 2 && *swap != 4 && *swap != 8) return 0;
    if (!enif_get_atom(env, t, name, sizeof name, ERL_NIF_LATIN1)) return 0;
    return (*codec = xz_decoder_named(name, decode)) != NULL;
}

/* The 4-tuple box of a put, for a buffer of `ndim` axes; its source start may hold index lists
 * (xz_get_starts), kept in `ix`. */
static int get_box(ErlNifEnv *env, ERL_NIF_TERM t, int ndim, xz_piece *p, xz_index *ix) {
    int arity, n;
    const ERL_NIF_TERM *e;
    const uint8_t *sl[XZ_MAX_DIMS], *dl[XZ_MAX_DIMS] = {NULL};
    uint64_t sn[XZ_MAX_DIMS], dn[XZ_MAX_DIMS] = {0};
    if (!enif_get_tuple(env, t, &arity, &e) || arity != 4) return 0;
    return xz_get_shape(env, e[0], p->src_shape, &n) && n == ndim &&
           xz_get_starts(env, e[1], p->src_start, sl, sn, &n) && n == ndim &&
           xz_get_shape(env, e[2], p->dst_start, &n) && n == ndim &&
           xz_get_shape(env, e[3], p->count, &n) && n == ndim &&
           xz_set_index(p, ix, sl, sn, dl, dn, ndim);
}

typedef struct {
    const char *codec;
    xz_decode_fn decode; /* NULL: the data is the chunk's bytes as they are */
    size_t swap;
    ErlNifBinary in;
    size_t want; /* the box lies in the first `want` bytes of the chunk */
} chunk_data;

/* Decodes a chunk, or at least its first c->want bytes, into `dst` (room for exactly `size`
 * bytes) and reverses the byte order of the units decoded. */
static xz_status decode_into(const void *ctx, uint8_t *dst, size_t size) {
    const chunk_data *c = ctx;
    size_t n = 0;
    if (c->decode == xz_zstd_decode) {
        /* Only the first bytes when the box needs no more. */
        xz_status e = xz_zstd_decode_prefix(c->in.data, c->in.size, size, c->want, dst, &n);
        if (e) return e;
        if (n < c->want) return "decoded data is smaller than the chunk";
    } else if (c->decode) {
        xz_out o = XZ_OUT_FIXED(dst, size);
        xz_status e = c->decode(c->in.data, c->in.size, size, 1, &o, &n);
        if (e) return e;
        if (n != size) return "decoded data is smaller than the chunk";
    } else {
        if (c->in.size != size) return "chunk data does not have the chunk's size";
        memcpy(dst, c->in.data, size);
        n = size;
    }
    if (c->swap > 1) xz_byteswap(dst, dst, n - n % c->swap, c->swap);
    return NULL;
}

/* Bytes from the start of the (checked, non-empty) source to the end of the box's last element. */
static size_t box_end(const xz_piece *p, int ndim, size_t itemsize) {
    size_t end = itemsize, stride = itemsize;
    for (int k = ndim - 1; k >= 0; k--) {
        end += (size_t)(p->src_start[k] + p->count[k] - 1) * stride;
        stride *= (size_t)p->src_shape[k];
    }
    return end;
}

static ERL_NIF_TERM put_run(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]) {
    (void)argc;
    outbuf *b;
    chunk_data d;
    size_t chunk;
    xz_piece p = {.index = NULL};
    xz_index ix;
    if (!get_buf(env, argv[0], &b) || !enif_inspect_binary(env, argv[1], &d.in) ||
        !get_codec(env, argv[2], &d.codec, &d.decode, &d.swap) ||
        !get_box(env, argv[3], b->ndim, &p, &ix))
        return enif_make_badarg(env);
    if (xz_shape_bytes(p.src_shape, b->ndim, b->itemsize, &chunk) != 0)
        return xz_error(env, "outbuf", "chunk shape is too large");
    if (d.swap > 1 && b->itemsize % d.swap != 0)
        return xz_error(env, "outbuf", "swap unit %zu does not divide the itemsize %zu", d.swap,
                        b->itemsize);
    /* Raw chunk bytes are copied from where they are, so their size is checked with the box. */
    int in_place = !d.decode && d.swap == 1;
    p.src = in_place ? d.in.data : NULL;
    p.src_len = in_place ? d.in.size : chunk;
    const char *why = xz_piece_check(&p, b->shape, b->ndim, b->itemsize);
    if (why) return xz_error(env, "outbuf", "%s", why);
    if (empty(b, p.count)) return xz_atom_ok;

    /* (a box taken by index lists may be the chunk's size without being the chunk) */
    int whole = !p.index;
    for (int k = 0; k < b->ndim; k++) whole = whole && p.count[k] == p.src_shape[k];
    long long run = whole ? run_offset(b, p.dst_start, p.count) : -1;
    d.want = p.index ? chunk : box_end(&p, b->ndim, b->itemsize);
    xz_status e = write_box(b, &p, chunk, run, in_place ? NULL : decode_into, &d);
    if (!e) return xz_atom_ok;
    if (e == FINISHED || e == NO_MEMORY) return xz_error(env, "outbuf", "%s", e);
    const char *name = d.codec;
    size_t tl = strlen(name);
    if (strncmp(e, name, tl) == 0 && e[tl] == ':' && e[tl + 1] == ' ') e += tl + 2;
    return xz_error(env, name, "%s", e);
}

XZ_NIF(outbuf_put) {
    outbuf *b;
    ErlNifBinary in;
    xz_piece p = {.index = NULL};
    xz_index ix;
    const char *codec;
    xz_decode_fn decode;
    size_t swap, work;
    if (!get_buf(env, argv[0], &b) || !enif_inspect_binary(env, argv[1], &in) ||
        !get_codec(env, argv[2], &codec, &decode, &swap) ||
        !get_box(env, argv[3], b->ndim, &p, &ix))
        return enif_make_badarg(env);
    /* The work: decoding the chunk (or reordering its bytes), or for raw bytes copying the box
     * alone (a small box of a cached chunk stays on this scheduler). */
    int raw = !decode && swap == 1;
    if (xz_shape_bytes(raw ? p.count : p.src_shape, b->ndim, b->itemsize, &work) != 0)
        work = SIZE_MAX;
    if (!raw && in.size > work) work = in.size;
    return xz_maybe_dirty(env, "outbuf_put", work, put_run, argc, argv);
}

/* ---- outbuf_fill(buf, element, {dst_start, count}) ---- */

static int get_fill_box(ErlNifEnv *env, ERL_NIF_TERM t, int ndim, xz_piece *p) {
    int arity, n;
    const ERL_NIF_TERM *e;
    if (!enif_get_tuple(env, t, &arity, &e) || arity != 2) return 0;
    return xz_get_shape(env, e[0], p->dst_start, &n) && n == ndim &&
           xz_get_shape(env, e[1], p->count, &n) && n == ndim;
}

/* Writes `size` bytes of copies of the fill element. */
static xz_status fill_into(const void *ctx, uint8_t *dst, size_t size) {
    const ErlNifBinary *elem = ctx;
    xz_fill(dst, size, elem->data, elem->size);
    return NULL;
}

static ERL_NIF_TERM fill_run(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]) {
    (void)argc;
    outbuf *b;
    ErlNifBinary elem;
    xz_piece p = {.index = NULL};
    size_t bytes;
    if (!get_buf(env, argv[0], &b) || !enif_inspect_binary(env, argv[1], &elem) ||
        !get_fill_box(env, argv[2], b->ndim, &p))
        return enif_make_badarg(env);
    if (elem.size != b->itemsize)
        return xz_error(env, "outbuf", "fill element is %zu bytes, itemsize is %zu", elem.size,
                        b->itemsize);
    if (xz_shape_bytes(p.count, b->ndim, b->itemsize, &bytes) != 0)
        return xz_error(env, "outbuf", "box is too large");
    /* The box is its own source: a packed block of the fill element. */
    memcpy(p.src_shape, p.count, (size_t)b->ndim * sizeof(uint64_t));
    memset(p.src_start, 0, sizeof p.src_start);
    p.src_len = bytes;
    const char *why = xz_piece_check(&p, b->shape, b->ndim, b->itemsize);
    if (why) return xz_error(env, "outbuf", "%s", why);
    if (empty(b, p.count)) return xz_atom_ok;
    xz_status e = write_box(b, &p, bytes, run_offset(b, p.dst_start, p.count), fill_into, &elem);
    return e ? xz_error(env, "outbuf", "%s", e) : xz_atom_ok;
}

XZ_NIF(outbuf_fill) {
    outbuf *b;
    xz_piece p = {.index = NULL};
    size_t bytes;
    if (!get_buf(env, argv[0], &b) || !get_fill_box(env, argv[2], b->ndim, &p))
        return enif_make_badarg(env);
    if (xz_shape_bytes(p.count, b->ndim, b->itemsize, &bytes) != 0) bytes = SIZE_MAX;
    return xz_maybe_dirty(env, "outbuf_fill", bytes, fill_run, argc, argv);
}

/* ---- outbuf_put_batch(buf, fill, codec, chunk_shape, chunks, threads) ---- */

/* Many chunks of one shape at once (the inner chunks of a shard): the batch decoder (batch.c)
 * decodes them on up to `threads` threads straight into the buffer; a chunk without stored
 * bytes gets the fill element. The boxes are recorded only when every chunk decoded, so a
 * failed batch can be run again. */
static ERL_NIF_TERM put_batch_run(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]) {
    (void)argc;
    outbuf *b;
    ErlNifBinary fill;
    xz_decode_fn decode;
    uint64_t chunk_shape[XZ_MAX_DIMS];
    int cdim, threads;
    if (!get_buf(env, argv[0], &b) || !enif_inspect_binary(env, argv[1], &fill) ||
        !xz_get_batch_decoder(env, argv[2], &decode) ||
        !xz_get_shape(env, argv[3], chunk_shape, &cdim) || !enif_is_list(env, argv[4]) ||
        !enif_get_int(env, argv[5], &threads))
        return enif_make_badarg(env);
    if (fill.size != b->itemsize)
        return xz_error(env, "outbuf", "fill element is %zu bytes, itemsize is %zu", fill.size,
                        b->itemsize);
    if (cdim != b->ndim)
        return xz_error(env, "outbuf", "chunk shape has %d axes, the buffer has %d", cdim, b->ndim);
    xz_batch_jobs j;
    ERL_NIF_TERM result;
    if (!xz_get_batch_jobs(env, argv[4], b->ndim, &j, &result)) {
        xz_free_batch_jobs(&j);
        return result;
    }
    char err[256];
    xz_batch bt = {NULL, b->shape, b->ndim, b->itemsize, fill.data, chunk_shape, decode, j.jobs,
                   j.njobs, 1};
    if (xz_batch_check(&bt, err, sizeof err)) {
        result = xz_error(env, "outbuf", "%s", err);
    } else {
        enif_rwlock_rlock(b->lock);
        if (b->frozen) {
            result = xz_error(env, "outbuf", "%s", FINISHED);
        } else {
            bt.dst = b->data;
            if (xz_batch_run(&bt, threads, err, sizeof err)) {
                result = xz_error(env, "corrupt_chunk", "%s", err);
            } else {
                int ok = 1;
                size_t d = (size_t)b->ndim;
                for (size_t i = 0; ok && i < bt.njobs; i++) {
                    const uint64_t *count = j.jobs[i].geom + 2 * d;
                    if (!empty(b, count)) ok = record(b, j.jobs[i].geom + d, count);
                }
                result = ok ? xz_atom_ok : xz_error(env, "outbuf", "%s", NO_MEMORY);
            }
        }
        enif_rwlock_runlock(b->lock);
    }
    xz_free_batch_jobs(&j);
    return result;
}

XZ_NIF(outbuf_put_batch) {
    outbuf *b;
    if (!get_buf(env, argv[0], &b)) return enif_make_badarg(env);
    size_t work = xz_batch_work(env, argv[2], argv[3], b->itemsize, argv[4]);
    return xz_maybe_dirty(env, "outbuf_put_batch", work, put_batch_run, argc, argv);
}

/* ---- outbuf_finish(buf) ---- */

static ERL_NIF_TERM finish_run(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]) {
    (void)argc;
    outbuf *b;
    if (!get_buf(env, argv[0], &b)) return enif_make_badarg(env);
    enif_rwlock_rwlock(b->lock);
    const char *e = NULL;
    xz_block *block = NULL;
    if (b->frozen)
        e = FINISHED;
    else if (b->size > 0 && !xz_boxes_tile(b->boxes, b->nboxes, b->shape, b->ndim))
        e = "the written boxes do not cover the output exactly once";
    else {
        b->frozen = 1;
        block = b->block;
        b->block = NULL;
    }
    enif_rwlock_rwunlock(b->lock);
    if (e) return xz_error(env, "outbuf", "%s", e);
    return xz_ok(env, xz_block_binary(env, block, b->size));
}

XZ_NIF(outbuf_finish) {
    outbuf *b;
    if (!get_buf(env, argv[0], &b)) return enif_make_badarg(env);
    enif_mutex_lock(b->boxes_lock);
    size_t n = b->nboxes;
    enif_mutex_unlock(b->boxes_lock);
    /* The coverage check sorts the boxes: O(ndim n log n). */
    size_t work = n > SIZE_MAX / 256 ? SIZE_MAX : n * 256;
    return xz_maybe_dirty(env, "outbuf_finish", work, finish_run, argc, argv);
}

/* ---- bufpool_info(): {buffers, bytes} the pool of bufpool.c holds ---- */

XZ_NIF(bufpool_info) {
    (void)argc;
    (void)argv;
    size_t n, bytes;
    xz_bufpool_stats(&n, &bytes);
    return enif_make_tuple2(env, enif_make_uint64(env, n), enif_make_uint64(env, bytes));
}
