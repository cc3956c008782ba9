/* NIF glue of vlen.c: a chunk's vlen layout split into a tuple of its items, sub-binaries of
 * the layout (no copies), or only checked; an output's items assembled from boxes of layouts
 * and tuples; items (a list or a tuple of binaries) checked and joined into a layout. On a
 * dirty CPU scheduler when large. */
#include <limits.h>
#include <string.h>

#include "nif_funs.h"
#include "nif_util.h"
#include "vlen.h"

typedef struct {
    ErlNifEnv *env;
    ERL_NIF_TERM layout;
    const uint8_t *data;
    ERL_NIF_TERM *items;    /* NULL when the layout is only checked */
    size_t n;               /* items walked */
    size_t bad, bad_length; /* the offset of the first item that is not UTF-8, or SIZE_MAX */
    int utf8;
} split;

static void add_item(void *ctx, size_t offset, size_t length) {
    split *s = ctx;
    if (s->utf8 && s->bad == SIZE_MAX && !xz_utf8_valid(s->data + offset, length))
        s->bad = offset, s->bad_length = length;
    if (s->items) s->items[s->n] = enif_make_sub_binary(s->env, s->layout, offset, length);
    s->n++;
}

/* Walks the layout argv[0] of argv[1] items, UTF-8 when argv[2]; with `make_items`, into a
 * tuple of sub-binaries of the items ({ok, Tuple}), else only checked (ok). {error,
 * malformed_layout} for any malformed layout, {error, {invalid_utf8, Item}} for the first
 * item that is not UTF-8. */
static ERL_NIF_TERM vlen_walk(ErlNifEnv *env, const ERL_NIF_TERM argv[], int make_items) {
    ErlNifBinary in;
    size_t expected;
    int utf8 = enif_is_identical(argv[2], xz_atom_true);
    if (!enif_inspect_binary(env, argv[0], &in) || !xz_get_size(env, argv[1], &expected) ||
        (!utf8 && !enif_is_identical(argv[2], xz_atom_false)))
        return enif_make_badarg(env);
    /* Every item takes at least its 4-byte length: a larger count is malformed, and nothing
     * is allocated for it. */
    ERL_NIF_TERM malformed = enif_make_tuple2(env, xz_atom_error, enif_make_atom(env, "malformed_layout"));
    if (in.size < 4 || expected > (in.size - 4) / 4 || expected > UINT_MAX) return malformed;
    split s = {env, argv[0], in.data, NULL, 0, SIZE_MAX, 0, utf8};
    if (make_items && !(s.items = enif_alloc((expected ? expected : 1) * sizeof(ERL_NIF_TERM))))
        return xz_error(env, "memory", "cannot allocate %zu items", expected);
    ERL_NIF_TERM result =
        xz_vlen_scan(in.data, in.size, expected, add_item, &s) != 0 ? malformed
        : s.bad != SIZE_MAX
            ? enif_make_tuple2(env, xz_atom_error,
                               enif_make_tuple2(env, enif_make_atom(env, "invalid_utf8"),
                                                enif_make_sub_binary(env, argv[0], s.bad, s.bad_length)))
        : make_items ? xz_ok(env, enif_make_tuple_from_array(env, s.items, (unsigned)expected))
                     : xz_atom_ok;
    enif_free(s.items);
    return result;
}

static ERL_NIF_TERM vlen_split_run(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]) {
    (void)argc;
    return vlen_walk(env, argv, 1);
}

static ERL_NIF_TERM vlen_check_layout_run(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]) {
    (void)argc;
    return vlen_walk(env, argv, 0);
}

/* The work of walking a layout (an item, at least 4 bytes of the layout, costs about what 16
 * bytes of a decoder's output do: the work is 4 a byte). */
static size_t walk_work(ErlNifEnv *env, ERL_NIF_TERM layout) {
    ErlNifBinary in;
    if (!enif_inspect_binary(env, layout, &in)) return 0;
    return in.size > SIZE_MAX / 4 ? SIZE_MAX : in.size * 4;
}

XZ_NIF(vlen_split) {
    return xz_maybe_dirty(env, "vlen_split", walk_work(env, argv[0]), vlen_split_run, argc, argv);
}

XZ_NIF(vlen_check_layout) {
    return xz_maybe_dirty(env, "vlen_check_layout", walk_work(env, argv[0]), vlen_check_layout_run,
                          argc, argv);
}

/* The elements of a box of a C-order array, in C order: their linear indices increase. */
typedef struct {
    int ndim;
    uint64_t start[XZ_MAX_DIMS], count[XZ_MAX_DIMS], stride[XZ_MAX_DIMS], at[XZ_MAX_DIMS];
    size_t size, next; /* elements in the box; the linear index of the next one, SIZE_MAX after */
} box_walk;

static size_t box_index(const box_walk *b) {
    size_t i = 0;
    for (int d = 0; d < b->ndim; d++) i += (size_t)((b->start[d] + b->at[d]) * b->stride[d]);
    return i;
}

/* The elements of an array of `shape` into *n: 0 when they are more than `limit`. An empty
 * axis makes them 0 however large the others are. */
static int shape_elements(const uint64_t *shape, int ndim, size_t limit, size_t *n) {
    for (int d = 0; d < ndim; d++)
        if (!shape[d]) return *n = 0, 1;
    return xz_shape_bytes(shape, ndim, 1, n) == 0 && *n <= limit;
}

/* Sets up the walk of the box `start`/`count` of an array of `shape` (argv terms); 0 when they
 * are not tuples of one length with the box inside the shape, or the array holds more than
 * *elements (then set to its element count) allows. */
static int box_open(ErlNifEnv *env, const ERL_NIF_TERM argv[], box_walk *b, size_t *elements) {
    uint64_t shape[XZ_MAX_DIMS];
    int n1, n2;
    if (!xz_get_shape(env, argv[0], shape, &b->ndim) || !xz_get_shape(env, argv[1], b->start, &n1) ||
        !xz_get_shape(env, argv[2], b->count, &n2) || n1 != b->ndim || n2 != b->ndim)
        return 0;
    if (!shape_elements(shape, b->ndim, *elements, elements)) return 0;
    /* (strides and sizes cannot overflow in an array of at most *elements; an empty array's
     * box is empty and its walk never reads them) */
    size_t stride = 1;
    b->size = 1;
    for (int d = b->ndim - 1; d >= 0; d--) {
        if (b->start[d] > shape[d] || b->count[d] > shape[d] - b->start[d]) return 0;
        b->at[d] = 0;
        b->stride[d] = stride;
        stride *= shape[d];
        b->size *= b->count[d];
    }
    if (!*elements) b->size = 0;
    b->next = b->size ? box_index(b) : SIZE_MAX;
    return 1;
}

static void box_advance(box_walk *b) {
    for (int d = b->ndim - 1; d >= 0; d--) {
        if (++b->at[d] < b->count[d]) {
            b->next = box_index(b);
            return;
        }
        b->at[d] = 0;
    }
    b->next = SIZE_MAX;
}

/* The placing of a layout's items by vlen_assemble. */
typedef struct {
    ErlNifEnv *env;
    ERL_NIF_TERM layout;
    ERL_NIF_TERM *out;
    box_walk *src, *dst;
    size_t n;
} placing;

static void place_item(void *ctx, size_t offset, size_t length) {
    placing *p = ctx;
    if (p->src->next == p->n) {
        p->out[p->dst->next] = enif_make_sub_binary(p->env, p->layout, offset, length);
        box_advance(p->src);
        box_advance(p->dst);
    }
    p->n++;
}

/* Puts the items of the box SourceStart/Count of a piece {Source, SourceShape, SourceStart,
 * Start, Count} (Source: a tuple of items in C order, or {layout, Binary}) at Start of `out`,
 * an array of `shape`. 1 on success; 0 on bad terms, or with *malformed set when the piece's
 * layout is malformed. */
static int place_piece(ErlNifEnv *env, ERL_NIF_TERM piece, ERL_NIF_TERM shape, ERL_NIF_TERM *out,
                       int *malformed) {
    const ERL_NIF_TERM *f, *source;
    int arity, source_arity;
    box_walk src, dst;
    size_t src_items = UINT_MAX, dst_items = UINT_MAX;
    if (!enif_get_tuple(env, piece, &arity, &f) || arity != 5) return 0;
    ERL_NIF_TERM src_args[3] = {f[1], f[2], f[4]}, dst_args[3] = {shape, f[3], f[4]};
    if (!box_open(env, src_args, &src, &src_items) || !box_open(env, dst_args, &dst, &dst_items) ||
        !enif_get_tuple(env, f[0], &source_arity, &source))
        return 0;
    ErlNifBinary in;
    if (source_arity == 2 && enif_is_identical(source[0], enif_make_atom(env, "layout")) &&
        enif_inspect_binary(env, source[1], &in)) {
        placing p = {env, source[1], out, &src, &dst, 0};
        if (xz_vlen_scan(in.data, in.size, src_items, place_item, &p) != 0) *malformed = 1;
        return !*malformed;
    }
    if ((size_t)source_arity != src_items) return 0;
    for (; src.next != SIZE_MAX; box_advance(&src), box_advance(&dst)) out[dst.next] = source[src.next];
    return 1;
}

/* vlen_assemble(Shape, Fill, Pieces): an array of Shape as a list of its items in C order,
 * Fill where no piece puts one ({ok, List}); {error, malformed_layout} for a piece whose
 * layout does not hold its source shape's items. */
static ERL_NIF_TERM vlen_assemble_run(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]) {
    (void)argc;
    uint64_t shape[XZ_MAX_DIMS];
    int ndim;
    size_t n;
    if (!xz_get_shape(env, argv[0], shape, &ndim) || !shape_elements(shape, ndim, UINT_MAX, &n))
        return enif_make_badarg(env);
    ERL_NIF_TERM *out = enif_alloc((n ? n : 1) * sizeof(ERL_NIF_TERM));
    if (!out) return xz_error(env, "memory", "cannot allocate %zu items", n);
    for (size_t i = 0; i < n; i++) out[i] = argv[1];
    ERL_NIF_TERM list = argv[2], piece, result;
    int malformed = 0, ok = 1;
    while (ok && enif_get_list_cell(env, list, &piece, &list)) ok = place_piece(env, piece, argv[0], out, &malformed);
    if (malformed) result = enif_make_tuple2(env, xz_atom_error, enif_make_atom(env, "malformed_layout"));
    else if (!ok || !enif_is_empty_list(env, list)) result = enif_make_badarg(env);
    else result = xz_ok(env, enif_make_list_from_array(env, out, (unsigned)n));
    enif_free(out);
    return result;
}

/* (the work: 16 an item of the output, and a layout's walk; a malformed argument costs none
 * and is refused by the run) */
XZ_NIF(vlen_assemble) {
    uint64_t shape[XZ_MAX_DIMS];
    int ndim;
    size_t work = 0, n, walk;
    if (xz_get_shape(env, argv[0], shape, &ndim))
        work = shape_elements(shape, ndim, SIZE_MAX / 16, &n) ? n * 16 : SIZE_MAX;
    ERL_NIF_TERM list = argv[2], piece;
    const ERL_NIF_TERM *f, *source;
    int arity;
    while (enif_get_list_cell(env, list, &piece, &list))
        if (enif_get_tuple(env, piece, &arity, &f) && arity == 5 && enif_get_tuple(env, f[0], &arity, &source) &&
            arity == 2 && (walk = walk_work(env, source[1])))
            work = work > SIZE_MAX - walk ? SIZE_MAX : work + walk;
    return xz_maybe_dirty(env, "vlen_assemble", work, vlen_assemble_run, argc, argv);
}

/* The items of a list or a tuple, one by one. */
typedef struct {
    ErlNifEnv *env;
    const ERL_NIF_TERM *tuple;
    ERL_NIF_TERM list;
    size_t i, n; /* next index; the tuple's size (a list's length is not known) */
} items_iter;

static int items_open(ErlNifEnv *env, ERL_NIF_TERM t, items_iter *it) {
    int arity;
    *it = (items_iter){env, NULL, t, 0, 0};
    if (enif_get_tuple(env, t, &arity, &it->tuple)) return it->n = (size_t)arity, 1;
    return enif_is_list(env, t);
}

/* 1 and the next item's term, 0 at the end, -1 at the tail of an improper list. */
static int items_next(items_iter *it, ERL_NIF_TERM *item) {
    if (it->tuple) {
        if (it->i == it->n) return 0;
        *item = it->tuple[it->i++];
        return 1;
    }
    ERL_NIF_TERM tail;
    if (!enif_get_list_cell(it->env, it->list, item, &tail))
        return enif_is_empty_list(it->env, it->list) ? 0 : -1;
    it->list = tail, it->i++;
    return 1;
}

/* Checks the items of argv[0] (`expected` binaries, each under 4 GiB and, when argv[2] is
 * true, UTF-8), then with `out` writes their layout there. 0 with *size set to the layout's
 * size; else -1 with *error set. With `max_bytes`, stops (returning 1) once the items hold
 * more: the caller goes on on a dirty scheduler. */
static int vlen_items(ErlNifEnv *env, const ERL_NIF_TERM argv[], uint8_t *out, size_t max_bytes,
                      size_t *size, ERL_NIF_TERM *error) {
    size_t expected;
    int utf8 = enif_is_identical(argv[2], xz_atom_true);
    items_iter it;
    if (!items_open(env, argv[0], &it) || !xz_get_size(env, argv[1], &expected) ||
        (!utf8 && !enif_is_identical(argv[2], xz_atom_false)) || expected > UINT32_MAX) {
        *error = enif_make_badarg(env);
        return -1;
    }
    size_t total = 4;
    ERL_NIF_TERM item;
    ErlNifBinary bin;
    int more = 1;
    if (out) xz_vlen_put_u32(out, expected);
    while (it.i < expected && (more = items_next(&it, &item)) == 1) {
        size_t index = it.i - 1;
        if (!enif_inspect_binary(env, item, &bin) || bin.size > UINT32_MAX ||
            (utf8 && !out && !xz_utf8_valid(bin.data, bin.size))) {
            *error = enif_make_tuple2(env, xz_atom_error,
                                      enif_make_tuple2(env, enif_make_atom(env, "invalid_item"),
                                                       enif_make_uint64(env, index)));
            return -1;
        }
        if (out) {
            xz_vlen_put_u32(out + total, bin.size);
            memcpy(out + total + 4, bin.data, bin.size);
        }
        total += 4 + bin.size;
        if (max_bytes && total > max_bytes) return 1;
    }
    /* The walk stopped after `expected` items (more is 1: the items must end there), at their
     * end (0: too few) or at an improper tail (-1). */
    int fault = more == 1 ? items_next(&it, &item) : more == 0 ? 1 : -1;
    if (fault != 0) {
        const char *what = fault < 0 ? "not_a_list" : "wrong_item_count";
        *error = enif_make_tuple2(env, xz_atom_error, enif_make_atom(env, what));
        return -1;
    }
    *size = total;
    return 0;
}

/* The layout of items vlen_items found good, of `size` bytes (the second walk, over the same
 * items, cannot fail). */
static ERL_NIF_TERM join_layout(ErlNifEnv *env, const ERL_NIF_TERM argv[], size_t size) {
    ErlNifBinary bin;
    ERL_NIF_TERM error;
    if (!enif_alloc_binary(size, &bin))
        return xz_error(env, "memory", "cannot allocate a %zu-byte layout", size);
    vlen_items(env, argv, bin.data, 0, &size, &error);
    return xz_ok(env, enif_make_binary(env, &bin));
}

/* ok (or with `join` {ok, Layout}), or the items' error. */
static ERL_NIF_TERM items_result(ErlNifEnv *env, const ERL_NIF_TERM argv[], int join) {
    size_t size;
    ERL_NIF_TERM error;
    if (vlen_items(env, argv, NULL, 0, &size, &error) != 0) return error;
    return join ? join_layout(env, argv, size) : xz_atom_ok;
}

static ERL_NIF_TERM vlen_check_run(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]) {
    (void)argc;
    return items_result(env, argv, 0);
}

static ERL_NIF_TERM vlen_join_run(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]) {
    (void)argc;
    return items_result(env, argv, 1);
}

/* Few items holding few bytes are checked (and joined) here; many items (the work of an item
 * is about that of 16 bytes, as in vlen_split), or items past XZ_DIRTY_BYTES in all (the walk
 * here stops there), go to a dirty scheduler. */
static ERL_NIF_TERM vlen_items_nif(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[], int join) {
    size_t expected, size = 0;
    ERL_NIF_TERM error;
    if (!xz_get_size(env, argv[1], &expected)) return enif_make_badarg(env);
    int walked = expected > XZ_DIRTY_BYTES / 16
                     ? 1
                     : vlen_items(env, argv, NULL, XZ_DIRTY_BYTES, &size, &error);
    if (walked == 1)
        return enif_schedule_nif(env, join ? "vlen_join" : "vlen_check",
                                 ERL_NIF_DIRTY_JOB_CPU_BOUND, join ? vlen_join_run : vlen_check_run,
                                 argc, argv);
    if (walked != 0) return error;
    ERL_NIF_TERM result = join ? join_layout(env, argv, size) : xz_atom_ok;
    xz_consume_timeslice(env, expected * 16 + size * (join ? 2 : 1));
    return result;
}

/* vlen_check(Items, Expected, Utf8): ok, or {error, {invalid_item, Index}},
 * {error, wrong_item_count} (more or fewer items) or {error, not_a_list} (an improper list). */
XZ_NIF(vlen_check) { return vlen_items_nif(env, argc, argv, 0); }

/* vlen_join(Items, Expected, Utf8): {ok, Layout}, or an error as vlen_check. */
XZ_NIF(vlen_join) { return vlen_items_nif(env, argc, argv, 1); }
