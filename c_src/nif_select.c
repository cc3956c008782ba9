/* NIF glue of the point selections (select.c): mask_points and group_points. */
#include <string.h>

#include "nif_funs.h"
#include "nif_util.h"
#include "select.h"

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
