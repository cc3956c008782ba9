/* NIF glue of the copy kernels, checks, checksums and sub-byte elements. */
#include <string.h>

#include "checksums.h"
#include "bufpool.h"
#include "nif_funs.h"
#include "nif_util.h"
#include "subbyte.h"
#include "tiling.h"

/* ---- copy_regions(dst_shape, itemsize, base, pieces) ---- */

/* A piece whose starts may hold index lists (see xz_get_starts); `ix` keeps them. */
static int get_piece(ErlNifEnv *env, ERL_NIF_TERM t, int ndim, xz_piece *p, xz_index *ix) {
    int arity, n;
    const ERL_NIF_TERM *e;
    ErlNifBinary src;
    const uint8_t *sl[XZ_MAX_DIMS], *dl[XZ_MAX_DIMS];
    uint64_t sn[XZ_MAX_DIMS], dn[XZ_MAX_DIMS];
    if (!enif_get_tuple(env, t, &arity, &e) || arity != 5 || !enif_inspect_binary(env, e[0], &src))
        return 0;
    p->src = src.data;
    p->src_len = src.size;
    if (!xz_get_shape(env, e[1], p->src_shape, &n) || n != ndim) return 0;
    if (!xz_get_starts(env, e[2], p->src_start, sl, sn, &n) || n != ndim) return 0;
    if (!xz_get_starts(env, e[3], p->dst_start, dl, dn, &n) || n != ndim) return 0;
    if (!xz_get_shape(env, e[4], p->count, &n) || n != ndim) return 0;
    return xz_set_index(p, ix, sl, sn, dl, dn, ndim);
}

/* 1 when a piece writes to positions of an index list. */
static int scatters(const xz_piece *p, int ndim) {
    for (int k = 0; p->index && k < ndim; k++)
        if (p->index->dst[k]) return 1;
    return 0;
}

static ERL_NIF_TERM copy_regions_run(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]) {
    (void)argc;
    uint64_t dst_shape[XZ_MAX_DIMS];
    int ndim;
    size_t itemsize, total;
    if (!xz_get_shape(env, argv[0], dst_shape, &ndim) || !xz_get_size(env, argv[1], &itemsize))
        return enif_make_badarg(env);
    if (itemsize == 0) return xz_error(env, "copy_regions", "itemsize must be positive");
    if (xz_shape_bytes(dst_shape, ndim, itemsize, &total) != 0)
        return xz_error(env, "copy_regions", "destination shape is too large");

    ErlNifBinary base;
    int arity;
    const ERL_NIF_TERM *fill;
    int is_fill = 0;
    if (enif_get_tuple(env, argv[2], &arity, &fill) && arity == 2 &&
        enif_is_identical(fill[0], xz_atom_fill) && enif_inspect_binary(env, fill[1], &base)) {
        if (base.size != itemsize)
            return xz_error(env, "copy_regions", "fill element is %zu bytes, itemsize is %zu",
                            base.size, itemsize);
        is_fill = 1;
    } else if (enif_inspect_binary(env, argv[2], &base)) {
        if (base.size != total)
            return xz_error(env, "copy_regions", "base is %zu bytes, destination is %zu bytes",
                            base.size, total);
    } else {
        return enif_make_badarg(env);
    }
    if (!enif_is_list(env, argv[3])) return enif_make_badarg(env);

    /* First pass: check every piece, and see whether they tile the destination (disjoint
     * boxes whose volumes add up to it), in which case the base is never visible. */
    ERL_NIF_TERM list = argv[3], head;
    xz_piece piece = {.index = NULL};
    xz_index ix;
    unsigned count = 0;
    uint64_t *boxes = NULL;
    unsigned len;
    if (enif_get_list_length(env, list, &len) && len > 0)
        boxes = enif_alloc((size_t)len * 2 * (ndim ? ndim : 1) * sizeof(uint64_t));
    for (; enif_get_list_cell(env, list, &head, &list); count++) {
        if (!get_piece(env, head, ndim, &piece, &ix)) {
            if (boxes) enif_free(boxes);
            return xz_error(env, "copy_regions",
                            "piece %u is not {binary, src_shape, src_start, dst_start, count} "
                            "with %d-tuples of non-negative integers (starts may hold index "
                            "lists of count entries)",
                            count, ndim);
        }
        const char *why = xz_piece_check(&piece, dst_shape, ndim, itemsize);
        if (why) {
            if (boxes) enif_free(boxes);
            return xz_error(env, "copy_regions", "piece %u: %s", count, why);
        }
        if (boxes && scatters(&piece, ndim)) {
            /* its writes are no box: the base may show between them */
            enif_free(boxes);
            boxes = NULL;
        }
        if (boxes) {
            uint64_t *b = boxes + (size_t)count * 2 * ndim;
            memcpy(b, piece.dst_start, ndim * sizeof(uint64_t));
            memcpy(b + ndim, piece.count, ndim * sizeof(uint64_t));
        }
    }
    int tiles = boxes && xz_boxes_tile(boxes, count, dst_shape, ndim);
    if (boxes) enif_free(boxes);

    /* (a large output takes pooled memory, already faulted in: the chunks a write gathers) */
    xz_result out;
    uint8_t *data = xz_result_alloc(&out, total);
    if (!data) return xz_error(env, "memory", "cannot allocate %zu bytes", total);
    if (tiles)
        ; /* every byte is written by a piece */
    else if (is_fill)
        xz_fill(data, total, base.data, itemsize);
    else if (total > 0)
        memcpy(data, base.data, total);

    /* Second pass: copy (the pieces were checked above). */
    list = argv[3];
    while (enif_get_list_cell(env, list, &head, &list)) {
        get_piece(env, head, ndim, &piece, &ix);
        xz_piece_copy(data, dst_shape, ndim, itemsize, &piece);
    }
    return xz_ok(env, xz_result_term(env, &out, total));
}

ERL_NIF_TERM xz_nif_copy_regions(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]) {
    uint64_t shape[XZ_MAX_DIMS];
    int ndim;
    size_t itemsize, total;
    if (!xz_get_shape(env, argv[0], shape, &ndim) || !xz_get_size(env, argv[1], &itemsize))
        return enif_make_badarg(env);
    if (xz_shape_bytes(shape, ndim, itemsize, &total) != 0) total = SIZE_MAX;
    return xz_maybe_dirty(env, "copy_regions", total, copy_regions_run, argc, argv);
}

/* ---- transpose(data, shape, itemsize, perm) ---- */

static ERL_NIF_TERM transpose_run(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]) {
    (void)argc;
    ErlNifBinary in, out;
    uint64_t shape[XZ_MAX_DIMS], perm[XZ_MAX_DIMS];
    int ndim, pdim;
    size_t itemsize;
    if (!enif_inspect_binary(env, argv[0], &in) || !xz_get_shape(env, argv[1], shape, &ndim) ||
        !xz_get_size(env, argv[2], &itemsize) || !xz_get_shape(env, argv[3], perm, &pdim))
        return enif_make_badarg(env);
    if (itemsize == 0) return xz_error(env, "transpose", "itemsize must be positive");
    if (pdim != ndim) return xz_error(env, "transpose", "perm has %d axes, shape has %d", pdim, ndim);
    const char *why = xz_transpose_check(in.size, shape, ndim, itemsize, perm);
    if (why) return xz_error(env, "transpose", "%s", why);
    if (!enif_alloc_binary(in.size, &out))
        return xz_error(env, "memory", "cannot allocate %zu bytes", in.size);
    xz_transpose(out.data, in.data, shape, ndim, itemsize, perm);
    return xz_ok(env, enif_make_binary(env, &out));
}

ERL_NIF_TERM xz_nif_transpose(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]) {
    ErlNifBinary in;
    if (!enif_inspect_binary(env, argv[0], &in)) return enif_make_badarg(env);
    return xz_maybe_dirty(env, "transpose", in.size, transpose_run, argc, argv);
}

/* ---- byteswap(data, itemsize) ---- */

static ERL_NIF_TERM byteswap_run(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]) {
    (void)argc;
    ErlNifBinary in, out;
    size_t itemsize;
    if (!enif_inspect_binary(env, argv[0], &in) || !xz_get_size(env, argv[1], &itemsize))
        return enif_make_badarg(env);
    if (itemsize != 1 && itemsize != 2 && itemsize != 4 && itemsize != 8)
        return xz_error(env, "byteswap", "itemsize must be 1, 2, 4 or 8, got %zu", itemsize);
    if (in.size % itemsize != 0)
        return xz_error(env, "byteswap", "%zu bytes is not a whole number of %zu-byte elements",
                        in.size, itemsize);
    if (itemsize == 1) return xz_ok(env, argv[0]);
    if (!enif_alloc_binary(in.size, &out))
        return xz_error(env, "memory", "cannot allocate %zu bytes", in.size);
    xz_byteswap(out.data, in.data, in.size, itemsize);
    return xz_ok(env, enif_make_binary(env, &out));
}

ERL_NIF_TERM xz_nif_byteswap(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]) {
    ErlNifBinary in;
    if (!enif_inspect_binary(env, argv[0], &in)) return enif_make_badarg(env);
    return xz_maybe_dirty(env, "byteswap", in.size, byteswap_run, argc, argv);
}

/* ---- subbyte_encode(data, bits, signed), subbyte_decode(data, bits, signed) ---- */

static int get_subbyte_args(ErlNifEnv *env, const ERL_NIF_TERM argv[], ErlNifBinary *in, int *bits,
                            int *is_signed) {
    if (!enif_inspect_binary(env, argv[0], in) || !enif_get_int(env, argv[1], bits) || *bits < 1 ||
        *bits > 7)
        return 0;
    *is_signed = enif_is_identical(argv[2], xz_atom_true);
    return *is_signed || enif_is_identical(argv[2], xz_atom_false);
}

/* A copy of `in` from byte `from` on made by `conv`, or `in` itself when `from` is its end. */
static ERL_NIF_TERM subbyte_result(ErlNifEnv *env, ERL_NIF_TERM term, const ErlNifBinary *in,
                                   size_t from, int bits, int is_signed, int extend) {
    if (from == in->size) return xz_ok(env, term);
    ErlNifBinary out;
    if (!enif_alloc_binary(in->size, &out))
        return xz_error(env, "memory", "cannot allocate %zu bytes", in->size);
    memcpy(out.data, in->data, from);
    if (extend) xz_subbyte_extend(out.data + from, in->data + from, in->size - from, bits, is_signed);
    else xz_subbyte_mask(out.data + from, in->data + from, in->size - from, bits);
    return xz_ok(env, enif_make_binary(env, &out));
}

static ERL_NIF_TERM subbyte_encode_run(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]) {
    (void)argc;
    ErlNifBinary in;
    int bits, is_signed;
    if (!get_subbyte_args(env, argv, &in, &bits, &is_signed)) return enif_make_badarg(env);
    size_t bad = xz_subbyte_first_unextended(in.data, in.size, bits, is_signed);
    if (bad < in.size)
        return xz_error(env, "out_of_range", "element %zu (byte 0x%02x) is not a %d-bit %s value",
                        bad, in.data[bad], bits, is_signed ? "signed" : "unsigned");
    return subbyte_result(env, argv[0], &in, xz_subbyte_first_high(in.data, in.size, bits), bits,
                          is_signed, 0);
}

ERL_NIF_TERM xz_nif_subbyte_encode(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]) {
    ErlNifBinary in;
    if (!enif_inspect_binary(env, argv[0], &in)) return enif_make_badarg(env);
    return xz_maybe_dirty(env, "subbyte_encode", in.size, subbyte_encode_run, argc, argv);
}

static ERL_NIF_TERM subbyte_decode_run(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]) {
    (void)argc;
    ErlNifBinary in;
    int bits, is_signed;
    if (!get_subbyte_args(env, argv, &in, &bits, &is_signed)) return enif_make_badarg(env);
    size_t from = xz_subbyte_first_unextended(in.data, in.size, bits, is_signed);
    return subbyte_result(env, argv[0], &in, from, bits, is_signed, 1);
}

ERL_NIF_TERM xz_nif_subbyte_decode(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]) {
    ErlNifBinary in;
    if (!enif_inspect_binary(env, argv[0], &in)) return enif_make_badarg(env);
    return xz_maybe_dirty(env, "subbyte_decode", in.size, subbyte_decode_run, argc, argv);
}

/* ---- all_equal(data, element), all_nan(data, width) ---- */

/* Bytes at the start of large data scanned on the calling scheduler: most chunks written are
 * not all fill, their first elements say so, and a round trip to a dirty scheduler costs more
 * than this scan. */
#define QUICK_SCAN 4096

/* all_equal's arguments: data made of whole elements. */
static int get_equal_args(ErlNifEnv *env, const ERL_NIF_TERM argv[], ErlNifBinary *data,
                          ErlNifBinary *elem) {
    return enif_inspect_binary(env, argv[0], data) && enif_inspect_binary(env, argv[1], elem) &&
           elem->size > 0 && data->size % elem->size == 0;
}

/* all_nan's arguments: data made of whole floats of 2, 4 or 8 bytes. */
static int get_nan_args(ErlNifEnv *env, const ERL_NIF_TERM argv[], ErlNifBinary *data,
                        int *width) {
    return enif_inspect_binary(env, argv[0], data) && enif_get_int(env, argv[1], width) &&
           (*width == 2 || *width == 4 || *width == 8) && data->size % (size_t)*width == 0;
}

static ERL_NIF_TERM all_equal_run(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]) {
    (void)argc;
    ErlNifBinary data, elem;
    if (!get_equal_args(env, argv, &data, &elem)) return enif_make_badarg(env);
    return xz_all_equal(data.data, data.size, elem.data, elem.size) ? xz_atom_true : xz_atom_false;
}

ERL_NIF_TERM xz_nif_all_equal(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]) {
    ErlNifBinary data, elem;
    if (!get_equal_args(env, argv, &data, &elem)) return enif_make_badarg(env);
    size_t head = QUICK_SCAN - QUICK_SCAN % elem.size;
    if (head > 0 && data.size > head && !xz_all_equal(data.data, head, elem.data, elem.size))
        return xz_atom_false;
    return xz_maybe_dirty(env, "all_equal", data.size, all_equal_run, argc, argv);
}

static ERL_NIF_TERM all_nan_run(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]) {
    (void)argc;
    ErlNifBinary data;
    int width;
    if (!get_nan_args(env, argv, &data, &width)) return enif_make_badarg(env);
    return xz_all_nan(data.data, data.size, width) ? xz_atom_true : xz_atom_false;
}

ERL_NIF_TERM xz_nif_all_nan(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]) {
    ErlNifBinary data;
    int width;
    if (!get_nan_args(env, argv, &data, &width)) return enif_make_badarg(env);
    if (data.size > QUICK_SCAN && !xz_all_nan(data.data, QUICK_SCAN, width)) return xz_atom_false;
    return xz_maybe_dirty(env, "all_nan", data.size, all_nan_run, argc, argv);
}

/* ---- crc32c(iodata), checksum(kind, iodata, init) ---- */

/* Walks an iolist without flattening it, adding its bytes to `sum` (NULL: only counts them).
 * Returns 1 on success, 0 on a malformed iolist, -1 when nesting is too deep for this walk
 * (the caller then flattens it). */
static int iolist_walk(ErlNifEnv *env, ERL_NIF_TERM t, int depth, xz_sum *sum, size_t *size) {
    ErlNifBinary b;
    if (enif_inspect_binary(env, t, &b)) {
        if (sum) xz_sum_update(sum, b.data, b.size);
        *size += b.size;
        return 1;
    }
    if (depth > 64) return -1;
    ERL_NIF_TERM head;
    while (enif_get_list_cell(env, t, &head, &t)) {
        int byte;
        if (enif_get_int(env, head, &byte)) {
            if (byte < 0 || byte > 255) return 0;
            uint8_t c = (uint8_t)byte;
            if (sum) xz_sum_update(sum, &c, 1);
            *size += 1;
        } else {
            int r = iolist_walk(env, head, depth + 1, sum, size);
            if (r != 1) return r;
        }
    }
    if (enif_is_empty_list(env, t)) return 1;
    if (enif_inspect_binary(env, t, &b)) {
        if (sum) xz_sum_update(sum, b.data, b.size);
        *size += b.size;
        return 1;
    }
    return 0;
}

/* The checksum of an iodata term: a first walk counts its bytes (lookup3 needs the length
 * first), a second one adds them. */
static ERL_NIF_TERM sum_run(ErlNifEnv *env, xz_sum_kind kind, uint32_t init, ERL_NIF_TERM data) {
    size_t size = 0;
    if (iolist_walk(env, data, 0, NULL, &size) == 0) return enif_make_badarg(env);
    xz_sum sum;
    xz_sum_init(&sum, kind, init, size);
    size = 0;
    if (iolist_walk(env, data, 0, &sum, &size) < 0) {
        ErlNifBinary flat;
        if (!enif_inspect_iolist_as_binary(env, data, &flat)) return enif_make_badarg(env);
        xz_sum_init(&sum, kind, init, flat.size);
        xz_sum_update(&sum, flat.data, flat.size);
    }
    return enif_make_uint(env, xz_sum_final(&sum));
}

static ERL_NIF_TERM crc32c_run(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]) {
    (void)argc;
    return sum_run(env, XZ_SUM_CRC32C, 0, argv[0]);
}

ERL_NIF_TERM xz_nif_crc32c(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]) {
    size_t size = 0;
    if (iolist_walk(env, argv[0], 0, NULL, &size) == 0) return enif_make_badarg(env);
    return xz_maybe_dirty(env, "crc32c", size, crc32c_run, argc, argv);
}

static int get_sum_kind(ErlNifEnv *env, ERL_NIF_TERM t, xz_sum_kind *kind) {
    static const struct {
        const char *name;
        xz_sum_kind kind;
    } kinds[] = {{"crc32c", XZ_SUM_CRC32C},
                 {"crc32", XZ_SUM_CRC32},
                 {"adler32", XZ_SUM_ADLER32},
                 {"fletcher32", XZ_SUM_FLETCHER32},
                 {"jenkins_lookup3", XZ_SUM_JENKINS}};
    char name[32];
    if (enif_get_atom(env, t, name, sizeof name, ERL_NIF_LATIN1) <= 0) return 0;
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
        if (strcmp(name, kinds[i].name) == 0) {
            *kind = kinds[i].kind;
            return 1;
        }
    return 0;
}

static ERL_NIF_TERM checksum_run(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]) {
    (void)argc;
    xz_sum_kind kind;
    unsigned init;
    if (!get_sum_kind(env, argv[0], &kind) || !enif_get_uint(env, argv[2], &init))
        return enif_make_badarg(env);
    return sum_run(env, kind, init, argv[1]);
}

ERL_NIF_TERM xz_nif_checksum(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]) {
    xz_sum_kind kind;
    unsigned init;
    size_t size = 0;
    if (!get_sum_kind(env, argv[0], &kind) || !enif_get_uint(env, argv[2], &init) ||
        iolist_walk(env, argv[1], 0, NULL, &size) == 0)
        return enif_make_badarg(env);
    return xz_maybe_dirty(env, "checksum", size, checksum_run, argc, argv);
}
