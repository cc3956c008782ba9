#include "nif_util.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

ERL_NIF_TERM xz_atom_ok, xz_atom_error, xz_atom_true, xz_atom_false, xz_atom_fill, xz_atom_gather,
    xz_atom_nil;

void xz_atoms_init(ErlNifEnv *env) {
    xz_atom_ok = enif_make_atom(env, "ok");
    xz_atom_error = enif_make_atom(env, "error");
    xz_atom_true = enif_make_atom(env, "true");
    xz_atom_false = enif_make_atom(env, "false");
    xz_atom_fill = enif_make_atom(env, "fill");
    xz_atom_gather = enif_make_atom(env, "gather");
    xz_atom_nil = enif_make_atom(env, "nil");
}

ERL_NIF_TERM xz_ok(ErlNifEnv *env, ERL_NIF_TERM t) { return enif_make_tuple2(env, xz_atom_ok, t); }

ERL_NIF_TERM xz_error(ErlNifEnv *env, const char *tag, const char *fmt, ...) {
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (n < 0) n = 0;
    if ((size_t)n >= sizeof msg) n = sizeof msg - 1;
    ERL_NIF_TERM text;
    unsigned char *p = enif_make_new_binary(env, (size_t)n, &text);
    memcpy(p, msg, (size_t)n);
    return enif_make_tuple2(env, xz_atom_error, enif_make_tuple2(env, enif_make_atom(env, tag), text));
}

int xz_get_shape(ErlNifEnv *env, ERL_NIF_TERM t, uint64_t *out, int *ndim) {
    int arity;
    const ERL_NIF_TERM *elems;
    if (!enif_get_tuple(env, t, &arity, &elems) || arity > XZ_MAX_DIMS) return 0;
    for (int k = 0; k < arity; k++) {
        ErlNifUInt64 v;
        if (!enif_get_uint64(env, elems[k], &v)) return 0;
        out[k] = v;
    }
    *ndim = arity;
    return 1;
}

int xz_get_starts(ErlNifEnv *env, ERL_NIF_TERM t, uint64_t *start, const uint8_t **lists,
                  uint64_t *lens, int *ndim) {
    int arity;
    const ERL_NIF_TERM *elems;
    if (!enif_get_tuple(env, t, &arity, &elems) || arity > XZ_MAX_DIMS) return 0;
    for (int k = 0; k < arity; k++) {
        ErlNifUInt64 v;
        ErlNifBinary b;
        if (enif_get_uint64(env, elems[k], &v)) {
            start[k] = v;
            lists[k] = NULL;
            lens[k] = 0;
        } else if (enif_inspect_binary(env, elems[k], &b) && b.size % 8 == 0) {
            start[k] = 0;
            lists[k] = b.size ? b.data : NULL;
            lens[k] = b.size / 8;
        } else {
            return 0;
        }
    }
    *ndim = arity;
    return 1;
}

int xz_set_index(xz_piece *p, xz_index *ix, const uint8_t *const *src, const uint64_t *src_lens,
                 const uint8_t *const *dst, const uint64_t *dst_lens, int ndim) {
    int any = 0;
    for (int k = 0; k < ndim; k++) {
        if ((src[k] || src_lens[k]) && src_lens[k] != p->count[k]) return 0;
        if ((dst[k] || dst_lens[k]) && dst_lens[k] != p->count[k]) return 0;
        ix->src[k] = src[k];
        ix->dst[k] = dst[k];
        any = any || src[k] || dst[k];
    }
    p->index = any ? ix : NULL;
    return 1;
}

int xz_get_size(ErlNifEnv *env, ERL_NIF_TERM t, size_t *out) {
    ErlNifUInt64 v;
    if (!enif_get_uint64(env, t, &v) || v > SIZE_MAX) return 0;
    *out = (size_t)v;
    return 1;
}

void xz_consume_timeslice(ErlNifEnv *env, size_t work) {
    int percent = (int)(work / (XZ_TIMESLICE_BYTES / 100));
    enif_consume_timeslice(env, percent < 1 ? 1 : percent > 100 ? 100 : percent);
}

ERL_NIF_TERM xz_maybe_dirty(ErlNifEnv *env, const char *name, size_t work,
                            ERL_NIF_TERM (*fun)(ErlNifEnv *, int, const ERL_NIF_TERM[]), int argc,
                            const ERL_NIF_TERM argv[]) {
    if (work <= XZ_DIRTY_BYTES) {
        ERL_NIF_TERM result = fun(env, argc, argv);
        xz_consume_timeslice(env, work);
        return result;
    }
    return enif_schedule_nif(env, name, ERL_NIF_DIRTY_JOB_CPU_BOUND, fun, argc, argv);
}

ERL_NIF_TERM xz_ok_binary(ErlNifEnv *env, ErlNifBinary *bin, size_t used) {
    if (used != bin->size && !enif_realloc_binary(bin, used)) {
        enif_release_binary(bin);
        return xz_error(env, "memory", "cannot shrink a binary to %zu bytes", used);
    }
    return xz_ok(env, enif_make_binary(env, bin));
}
