/* NIF glue of the compressors in codecs.c: outputs are result binaries allocated at their
 * final (or bounded) size, from the buffer pool when large (nif_out below); large inputs run
 * on dirty CPU schedulers. */
#include <string.h>

#include "bufpool.h"
#include "codecs.h"
#include "nif_funs.h"
#include "nif_util.h"

/* An output: an Erlang binary, or from XZ_POOL_MIN bytes on a block of the buffer pool (memory
 * already faulted in, given back to the pool when the result is garbage), so that neither a
 * read that keeps many decoded chunks alive nor a write that compresses chunk after chunk
 * makes the kernel hand over fresh pages for every output. An encoder's output, allocated at
 * its bound, moves to one of its size at the end (bound blocks go back to the pool at once). */
typedef struct {
    xz_result mem;
    int live;
} nif_out;

int xz_out_alloc(xz_out *o, size_t n) {
    nif_out *no = o->handle;
    if (no->live || !(o->data = xz_result_alloc(&no->mem, n))) return -1;
    no->live = 1;
    o->cap = n;
    return 0;
}

/* Blocks of this size and more shrink in place whatever they waste, their unused pages given
 * back to the kernel: moving the bytes would hold both outputs at once (a 105 MB chunk
 * compressed to 35 MB: a third of the chunk more at the peak of its write) and copy them. */
#define XZ_SHRINK_IN_PLACE ((size_t)8 << 20)

/* A block's output shrinks in place while it wastes at most a quarter of the block, or when the
 * block is large; otherwise (and to grow) its bytes move to a new output. */
int xz_out_resize(xz_out *o, size_t n) {
    nif_out *no = o->handle;
    if (!no->live) return -1;
    if (no->mem.block) {
        int large = o->cap >= XZ_SHRINK_IN_PLACE;
        if (n <= o->cap && (large || n >= o->cap - o->cap / 4)) {
            if (large) xz_bufpool_drop_tail(o->data, n, o->cap);
            o->cap = n;
            return 0;
        }
        xz_result old = no->mem;
        const uint8_t *data = o->data;
        size_t keep = n < o->cap ? n : o->cap;
        no->live = 0;
        int r = xz_out_alloc(o, n);
        if (r == 0) memcpy(o->data, data, keep);
        xz_result_release(&old);
        return r;
    }
    if (!enif_realloc_binary(&no->mem.bin, n)) return -1;
    o->data = no->mem.bin.data;
    o->cap = n;
    return 0;
}

static void out_release(nif_out *no) {
    if (no->live) xz_result_release(&no->mem);
    no->live = 0;
}

#define OUT_INIT(name)         \
    nif_out name##_nif = {0}; \
    xz_out name = {NULL, 0, &name##_nif, 0}

static ERL_NIF_TERM result(ErlNifEnv *env, const char *tag, xz_status e, xz_out *o, size_t n) {
    nif_out *no = o->handle;
    if (e) {
        out_release(no);
        size_t tl = strlen(tag);
        if (strncmp(e, tag, tl) == 0 && e[tl] == ':' && e[tl + 1] == ' ') e += tl + 2;
        return xz_error(env, tag, "%s", e);
    }
    if (!no->live || o->cap != n) {
        out_release(no);
        return xz_error(env, tag, "internal size mismatch");
    }
    return xz_ok(env, xz_result_term(env, &no->mem, n));
}

/* A decoder result: with `exact`, the output must be exactly `max` bytes. */
static ERL_NIF_TERM decoded(ErlNifEnv *env, const char *tag, xz_status e, xz_out *o, size_t n,
                            size_t max, int exact) {
    if (!e && exact && n != max) {
        out_release(o->handle);
        return xz_error(env, tag, "decoded %zu bytes, expected %zu", n, max);
    }
    return result(env, tag, e, o, n);
}

/* ---- encoder inputs ---- */

/* An encoder's input: iodata, or {gather, Data, Shape, Start, Count, Itemsize}, the box
 * Start/Count of the C-order array of Shape (Itemsize-byte elements) whose bytes are the binary
 * Data. The encoder gathers a box itself, into pooled memory, in the same call: a chunk that is
 * a box of the caller's array is encoded without a copy made beforehand (one dirty-scheduler
 * round trip instead of two). */
typedef struct {
    ErlNifBinary bin;
    xz_result box; /* the gathered box's memory, when `gathered` */
    int gathered;
} encoder_input;

/* A gather term's box (its destination the whole of its count), checked; 1 if valid. */
static int get_gather(ErlNifEnv *env, ERL_NIF_TERM t, xz_piece *p, int *ndim, size_t *itemsize) {
    int arity, n;
    const ERL_NIF_TERM *e;
    ErlNifBinary data;
    if (!enif_get_tuple(env, t, &arity, &e) || arity != 6 ||
        !enif_is_identical(e[0], xz_atom_gather) ||
        !enif_inspect_binary(env, e[1], &data) || !xz_get_shape(env, e[2], p->src_shape, ndim) ||
        !xz_get_shape(env, e[3], p->src_start, &n) || n != *ndim ||
        !xz_get_shape(env, e[4], p->count, &n) || n != *ndim || !xz_get_size(env, e[5], itemsize) ||
        *itemsize == 0)
        return 0;
    p->src = data.data;
    p->src_len = data.size;
    p->index = NULL;
    memset(p->dst_start, 0, sizeof p->dst_start);
    return xz_piece_check(p, p->count, *ndim, *itemsize) == NULL;
}

/* The bytes of an encoder's input in in->bin (gathered for a box); 0 for a malformed input or
 * no memory. encoder_input_release frees what it took. */
static int get_encoder_input(ErlNifEnv *env, ERL_NIF_TERM t, encoder_input *in) {
    xz_piece p;
    int ndim;
    size_t itemsize, size;
    in->gathered = 0;
    if (!enif_is_tuple(env, t)) return enif_inspect_iolist_as_binary(env, t, &in->bin);
    if (!get_gather(env, t, &p, &ndim, &itemsize) || xz_shape_bytes(p.count, ndim, itemsize, &size))
        return 0;
    uint8_t *data = xz_result_alloc(&in->box, size);
    if (!data) return 0;
    xz_piece_copy(data, p.count, ndim, itemsize, &p);
    in->bin.data = data;
    in->bin.size = size;
    in->gathered = 1;
    return 1;
}

static void encoder_input_release(encoder_input *in) {
    if (in->gathered) xz_result_release(&in->box);
}

/* Work estimate of an input for the dirty-scheduler decision: its size (a box's), or "large"
 * for an iolist (flattening one is itself work proportional to its size). */
static size_t input_work(ErlNifEnv *env, ERL_NIF_TERM t) {
    ErlNifBinary b;
    xz_piece p;
    int ndim;
    size_t itemsize, size;
    if (enif_inspect_binary(env, t, &b)) return b.size;
    if (get_gather(env, t, &p, &ndim, &itemsize) && !xz_shape_bytes(p.count, ndim, itemsize, &size))
        return size;
    return SIZE_MAX;
}

static size_t scaled(size_t bytes, size_t factor) {
    return bytes > SIZE_MAX / factor ? SIZE_MAX : bytes * factor;
}

static int get_bool(ErlNifEnv *env, ERL_NIF_TERM t, int *out) {
    (void)env;
    if (enif_is_identical(t, xz_atom_true)) *out = 1;
    else if (enif_is_identical(t, xz_atom_false)) *out = 0;
    else return 0;
    return 1;
}

/* Entry point and run function of a decoder (data, max_size, exact) and of an encoder whose
 * run function `name##_compress_run` is written below. */
#define DECODER(name, factor)                                                                  \
    static ERL_NIF_TERM name##_decompress_run(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]) { \
        (void)argc;                                                                            \
        ErlNifBinary in;                                                                       \
        size_t max, n = 0;                                                                     \
        int exact;                                                                             \
        if (!enif_inspect_iolist_as_binary(env, argv[0], &in) || !xz_get_size(env, argv[1], &max) || \
            !get_bool(env, argv[2], &exact))                                                   \
            return enif_make_badarg(env);                                                      \
        OUT_INIT(out);                                                                         \
        xz_status e = xz_##name##_decode(in.data, in.size, max, exact, &out, &n);              \
        return decoded(env, #name, e, &out, n, max, exact);                                    \
    }                                                                                          \
    XZ_NIF(name##_decompress) {                                                                \
        size_t max, work = input_work(env, argv[0]);                                           \
        if (!xz_get_size(env, argv[1], &max)) return enif_make_badarg(env);                    \
        size_t out_work = enif_is_identical(argv[2], xz_atom_true) ? max : scaled(work, 4);    \
        work = scaled(out_work > work ? out_work : work, factor);                              \
        return xz_maybe_dirty(env, #name "_decompress", work, name##_decompress_run, argc, argv); \
    }

/* `factor` may use argv: slow settings (high levels) reach the dirty threshold sooner. */
#define ENCODER_ENTRY(name, factor)                                                            \
    XZ_NIF(name##_compress) {                                                                  \
        return xz_maybe_dirty(env, #name "_compress", scaled(input_work(env, argv[0]), factor),  \
                              name##_compress_run, argc, argv);                                \
    }

/* Cost per input byte of an encoder at `level`, relative to zstd decoding (see XZ_DIRTY_BYTES): 4
 * up to `fast`, 256 above. */
static size_t level_cost(ErlNifEnv *env, ERL_NIF_TERM level_term, int fast) {
    int level;
    if (!enif_get_int(env, level_term, &level)) return 1;
    return level <= fast ? 4 : 256;
}

DECODER(zstd, 1)
DECODER(blosc, 1)
DECODER(lz4, 1)
DECODER(bz2, 16)
DECODER(gzip, 2)
DECODER(zlib, 2)

static ERL_NIF_TERM zstd_compress_run(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]) {
    (void)argc;
    encoder_input in;
    int level, checksum, workers;
    size_t n = 0;
    if (!enif_get_int(env, argv[1], &level) || !get_bool(env, argv[2], &checksum) ||
        !enif_get_int(env, argv[3], &workers) || workers < 0 || workers > 256 ||
        !get_encoder_input(env, argv[0], &in))
        return enif_make_badarg(env);
    OUT_INIT(out);
    xz_status e = xz_zstd_encode(in.bin.data, in.bin.size, level, checksum, workers, &out, &n);
    encoder_input_release(&in);
    return result(env, "zstd", e, &out, n);
}
/* Cost per input byte of zstd at `level`, as measured (256 KiB float32 chunks: 1.8 ns a byte at
 * level 1, 4.6 at 2, 7.1 at 3); levels above 3 always go dirty past 2 KiB. */
static size_t zstd_cost(ErlNifEnv *env, ERL_NIF_TERM level_term) {
    int level;
    if (!enif_get_int(env, level_term, &level)) return 1;
    return level <= 1 ? 2 : level <= 3 ? 8 : 256;
}
ENCODER_ENTRY(zstd, zstd_cost(env, argv[1]))

static ERL_NIF_TERM blosc_compress_run(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]) {
    (void)argc;
    encoder_input in;
    ErlNifBinary name;
    char cname[32];
    int clevel, shuffle;
    size_t typesize, blocksize, n = 0;
    if (!enif_inspect_binary(env, argv[1], &name) || name.size >= sizeof cname ||
        !enif_get_int(env, argv[2], &clevel) || !enif_get_int(env, argv[3], &shuffle) ||
        !xz_get_size(env, argv[4], &typesize) || !xz_get_size(env, argv[5], &blocksize) ||
        !get_encoder_input(env, argv[0], &in))
        return enif_make_badarg(env);
    memcpy(cname, name.data, name.size);
    cname[name.size] = 0;
    OUT_INIT(out);
    xz_status e = xz_blosc_encode(in.bin.data, in.bin.size, cname, clevel, shuffle, typesize,
                                  blocksize, &out, &n);
    encoder_input_release(&in);
    return result(env, "blosc", e, &out, n);
}
ENCODER_ENTRY(blosc, level_cost(env, argv[2], 5))

/* Encoders taking (data, level_or_acceleration). */
#define LEVEL_ENCODER(name, factor)                                                             \
    static ERL_NIF_TERM name##_compress_run(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]) { \
        (void)argc;                                                                             \
        encoder_input in;                                                                       \
        int level;                                                                              \
        size_t n = 0;                                                                           \
        if (!enif_get_int(env, argv[1], &level) || !get_encoder_input(env, argv[0], &in))       \
            return enif_make_badarg(env);                                                       \
        OUT_INIT(out);                                                                          \
        xz_status e = xz_##name##_encode(in.bin.data, in.bin.size, level, &out, &n);              \
        encoder_input_release(&in);                                                             \
        return result(env, #name, e, &out, n);                                                  \
    }                                                                                           \
    ENCODER_ENTRY(name, factor)

LEVEL_ENCODER(lz4, 1)
LEVEL_ENCODER(bz2, 64)
LEVEL_ENCODER(gzip, level_cost(env, argv[1], 6))
LEVEL_ENCODER(zlib, level_cost(env, argv[1], 6))

/* ---- lzma: filters are a list of 12-tuples {id, preset, dict_size, lc, lp, pb, mode,
 * nice_len, mf, depth, dist, start_offset}, -1 for options not given. ---- */

static int get_filters(ErlNifEnv *env, ERL_NIF_TERM list, xz_lzma_filter *f, int *nf) {
    ERL_NIF_TERM head;
    unsigned len;
    if (!enif_get_list_length(env, list, &len) || len > XZ_LZMA_MAX_FILTERS) return 0;
    *nf = 0;
    while (enif_get_list_cell(env, list, &head, &list)) {
        int arity;
        const ERL_NIF_TERM *e;
        ErlNifSInt64 v[12];
        ErlNifUInt64 id;
        if (!enif_get_tuple(env, head, &arity, &e) || arity != 12 || !enif_get_uint64(env, e[0], &id))
            return 0;
        for (int i = 1; i < 12; i++)
            if (!enif_get_int64(env, e[i], &v[i])) return 0;
        xz_lzma_filter *x = &f[(*nf)++];
        x->id = id;
        x->preset = v[1];
        x->dict_size = v[2];
        x->lc = v[3];
        x->lp = v[4];
        x->pb = v[5];
        x->mode = v[6];
        x->nice_len = v[7];
        x->mf = v[8];
        x->depth = v[9];
        x->dist = v[10];
        x->start_offset = v[11];
    }
    return 1;
}

static ERL_NIF_TERM lzma_compress_run(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]) {
    (void)argc;
    encoder_input in;
    int format, check, nf;
    ErlNifSInt64 preset;
    xz_lzma_filter filters[XZ_LZMA_MAX_FILTERS];
    size_t n = 0;
    if (!enif_get_int(env, argv[1], &format) || !enif_get_int(env, argv[2], &check) ||
        !enif_get_int64(env, argv[3], &preset) || !get_filters(env, argv[4], filters, &nf) ||
        !get_encoder_input(env, argv[0], &in))
        return enif_make_badarg(env);
    OUT_INIT(out);
    xz_status e =
        xz_lzma_encode(in.bin.data, in.bin.size, format, check, preset, filters, nf, &out, &n);
    encoder_input_release(&in);
    return result(env, "lzma", e, &out, n);
}
ENCODER_ENTRY(lzma, 256)

static ERL_NIF_TERM lzma_decompress_run(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]) {
    (void)argc;
    ErlNifBinary in;
    size_t max, n = 0;
    int exact, format, nf;
    xz_lzma_filter filters[XZ_LZMA_MAX_FILTERS];
    if (!enif_inspect_iolist_as_binary(env, argv[0], &in) || !xz_get_size(env, argv[1], &max) ||
        !get_bool(env, argv[2], &exact) || !enif_get_int(env, argv[3], &format) ||
        !get_filters(env, argv[4], filters, &nf))
        return enif_make_badarg(env);
    OUT_INIT(out);
    xz_status e = xz_lzma_decode(in.data, in.size, max, exact, format, filters, nf, &out, &n);
    return decoded(env, "lzma", e, &out, n, max, exact);
}

XZ_NIF(lzma_decompress) {
    /* Even small xz inputs can take a while (big dictionaries): always dirty past 4 KiB out. */
    size_t max;
    if (!xz_get_size(env, argv[1], &max)) return enif_make_badarg(env);
    size_t work = scaled(input_work(env, argv[0]), 64);
    return xz_maybe_dirty(env, "lzma_decompress", work, lzma_decompress_run, argc, argv);
}
