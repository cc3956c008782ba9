/* NIF glue of the point selections (select.c): linear_points, mask_points and group_points. */
#include <string.h>

#include "nif_funs.h"
#include "nif_util.h"
#include "select.h"

/* ---- linear_points(points, shape) ---- */

/* The C-order linear index of a point (a tuple of `ndim` integers, negative from the end) of an
 * array of `shape` (`strides` its C-order strides); 0 when the point is not one (not a tuple,
 * wrong rank, an entry that is no integer in -size..size-1). */
static int linear_point(ErlNifEnv *env, ERL_NIF_TERM t, const uint64_t *shape,
                        const uint64_t *strides, int ndim, uint64_t *out) {
    int arity;
    const ERL_NIF_TERM *e;
    if (!enif_get_tuple(env, t, &arity, &e) || arity != ndim) return 0;
    uint64_t at = 0;
    for (int k = 0; k < ndim; k++) {
        ErlNifSInt64 i;
        if (!enif_get_int64(env, e[k], &i)) return 0;
        if (i < 0) {
            /* -size..-1 count from the end */
            if ((uint64_t)(-(i + 1)) >= shape[k]) return 0;
            i += (ErlNifSInt64)shape[k];
        } else if ((uint64_t)i >= shape[k]) {
            return 0;
        }
        at += (uint64_t)i * strides[k];
    }
    *out = at;
    return 1;
}

static ERL_NIF_TERM linear_points_run(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]) {
    (void)argc;
    uint64_t shape[XZ_MAX_DIMS], strides[XZ_MAX_DIMS];
    int ndim;
    unsigned n;
    ErlNifBinary out;
    if (!xz_get_shape(env, argv[1], shape, &ndim)) return enif_make_badarg(env);
    if (!enif_get_list_length(env, argv[0], &n)) return xz_error(env, "linear_points", "not a list");
    uint64_t stride = 1;
    for (int k = ndim - 1; k >= 0; k--) {
        strides[k] = stride;
        if (__builtin_mul_overflow(stride, shape[k], &stride))
            return xz_error(env, "linear_points", "more than 2^64 elements");
    }
    if (!enif_alloc_binary((size_t)n * 8, &out))
        return xz_error(env, "memory", "cannot allocate %u points", n);
    ERL_NIF_TERM head, list = argv[0];
    for (unsigned j = 0; enif_get_list_cell(env, list, &head, &list); j++) {
        uint64_t at;
        if (!linear_point(env, head, shape, strides, ndim, &at)) {
            enif_release_binary(&out);
            return enif_make_tuple2(env, xz_atom_error, enif_make_uint(env, j));
        }
        for (int b = 0; b < 8; b++) out.data[8 * (size_t)j + b] = (uint8_t)(at >> (8 * b));
    }
    return xz_ok(env, enif_make_binary(env, &out));
}

XZ_NIF(linear_points) {
    unsigned n;
    if (!enif_get_list_length(env, argv[0], &n)) n = 0;
    /* The work is reading each point's tuple: count it as 16 bytes a point. */
    return xz_maybe_dirty(env, "linear_points", (size_t)n * 16, linear_points_run, argc, argv);
}

/* ---- mask_points(mask) ---- */

static ERL_NIF_TERM mask_points_run(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]) {
    (void)argc;
    ErlNifBinary mask, out;
    if (!enif_inspect_binary(env, argv[0], &mask)) return enif_make_badarg(env);
    size_t n = xz_mask_count(mask.data, mask.size);
    if (n > SIZE_MAX / 8 || !enif_alloc_binary(n * 8, &out))
        return xz_error(env, "memory", "cannot allocate %zu points", n);
    xz_mask_points(mask.data, mask.size, out.data);
    return xz_ok(env, enif_make_binary(env, &out));
}

XZ_NIF(mask_points) {
    ErlNifBinary mask;
    if (!enif_inspect_binary(env, argv[0], &mask)) return enif_make_badarg(env);
    return xz_maybe_dirty(env, "mask_points", mask.size, mask_points_run, argc, argv);
}

/* ---- group_points(points, shape, levels) ---- */

static ERL_NIF_TERM group_points_run(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]) {
    (void)argc;
    ErlNifBinary points, local, order;
    uint64_t shape[XZ_MAX_DIMS], levels[XZ_MAX_LEVELS * XZ_MAX_DIMS];
    int ndim, ldim, nlevels = 0;
    ERL_NIF_TERM list = argv[2], head;
    if (!enif_inspect_binary(env, argv[0], &points) || points.size % 8 != 0 ||
        !xz_get_shape(env, argv[1], shape, &ndim))
        return enif_make_badarg(env);
    while (enif_get_list_cell(env, list, &head, &list)) {
        if (nlevels == XZ_MAX_LEVELS)
            return xz_error(env, "group_points", "at most %d chunk grids", XZ_MAX_LEVELS);
        if (!xz_get_shape(env, head, levels + nlevels * ndim, &ldim) || ldim != ndim)
            return enif_make_badarg(env);
        nlevels++;
    }
    if (!enif_is_empty_list(env, list)) return enif_make_badarg(env);
    size_t n = points.size / 8;
    const char *why = xz_group_check(points.data, n, shape, ndim, levels, nlevels);
    if (why) return xz_error(env, "group_points", "%s", why);

    xz_group *groups = enif_alloc(n ? n * sizeof(xz_group) : 1);
    if (!groups) return xz_error(env, "memory", "cannot allocate %zu groups", n);
    if (!enif_alloc_binary(points.size, &local)) {
        enif_free(groups);
        return xz_error(env, "memory", "cannot allocate %zu bytes", points.size);
    }
    if (!enif_alloc_binary(points.size, &order)) {
        enif_release_binary(&local);
        enif_free(groups);
        return xz_error(env, "memory", "cannot allocate %zu bytes", points.size);
    }
    int sorted;
    size_t ngroups = xz_group_points(points.data, n, shape, ndim, levels, nlevels, local.data,
                                     order.data, groups, &sorted);
    if (ngroups == SIZE_MAX) {
        enif_release_binary(&local);
        enif_release_binary(&order);
        enif_free(groups);
        return xz_error(env, "memory", "cannot sort %zu points", n);
    }
    ERL_NIF_TERM glist = enif_make_list(env, 0);
    for (size_t g = ngroups; g > 0; g--)
        glist = enif_make_list_cell(
            env,
            enif_make_tuple2(env, enif_make_uint64(env, groups[g - 1].chunk),
                             enif_make_uint64(env, groups[g - 1].count)),
            glist);
    enif_free(groups);
    ERL_NIF_TERM order_term;
    if (sorted) {
        enif_release_binary(&order);
        order_term = xz_atom_nil;
    } else {
        order_term = enif_make_binary(env, &order);
    }
    return xz_ok(env, enif_make_tuple3(env, glist, enif_make_binary(env, &local), order_term));
}

XZ_NIF(group_points) {
    ErlNifBinary points;
    if (!enif_inspect_binary(env, argv[0], &points)) return enif_make_badarg(env);
    /* The work is a few passes over the points (8 bytes each) and their records. */
    size_t work = points.size > SIZE_MAX / 8 ? SIZE_MAX : points.size * 8;
    return xz_maybe_dirty(env, "group_points", work, group_points_run, argc, argv);
}
