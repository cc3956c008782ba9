/* NIF glue of vlen.c: a chunk's vlen layout split into a tuple of its items, sub-binaries of
 * the layout (no copies), on a dirty CPU scheduler when large. */
#include <limits.h>

#include "nif_funs.h"
#include "nif_util.h"
#include "vlen.h"

typedef struct {
    ErlNifEnv *env;
    ERL_NIF_TERM layout;
    const uint8_t *data;
    ERL_NIF_TERM *items;
    size_t n;
    int utf8, invalid;
} split;

static void add_item(void *ctx, size_t offset, size_t length) {
    split *s = ctx;
    if (s->utf8 && !s->invalid && !xz_utf8_valid(s->data + offset, length)) s->invalid = 1;
    s->items[s->n++] = enif_make_sub_binary(s->env, s->layout, offset, length);
}

/* vlen_split(Layout, Expected, Utf8): {ok, Tuple}; {error, malformed_layout} for any malformed
 * layout, {error, invalid_utf8} when Utf8 and an item is not UTF-8 (the caller says which). */
static ERL_NIF_TERM vlen_split_run(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]) {
    (void)argc;
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
    split s = {env, argv[0], in.data, enif_alloc((expected ? expected : 1) * sizeof(ERL_NIF_TERM)),
               0, utf8, 0};
    if (!s.items) return xz_error(env, "memory", "cannot allocate %zu items", expected);
    ERL_NIF_TERM result =
        xz_vlen_scan(in.data, in.size, expected, add_item, &s) != 0 ? malformed
        : s.invalid ? enif_make_tuple2(env, xz_atom_error, enif_make_atom(env, "invalid_utf8"))
                    : xz_ok(env, enif_make_tuple_from_array(env, s.items, (unsigned)expected));
    enif_free(s.items);
    return result;
}

/* (an item, at least 4 bytes of the layout, costs about what 16 bytes of a decoder's output
 * do: the work is 4 a byte) */
XZ_NIF(vlen_split) {
    ErlNifBinary in;
    if (!enif_inspect_binary(env, argv[0], &in)) return enif_make_badarg(env);
    size_t work = in.size > SIZE_MAX / 4 ? SIZE_MAX : in.size * 4;
    return xz_maybe_dirty(env, "vlen_split", work, vlen_split_run, argc, argv);
}
