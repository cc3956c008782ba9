/* File reads for ExZarr.Storage.Filesystem: open, size, read and close in one NIF call on a
 * dirty I/O scheduler, into an exact-size binary. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "nif_funs.h"
#include "nif_util.h"

/* Longest root + key accepted (PATH_MAX on Linux). */
#define XZ_MAX_PATH 4096

static ERL_NIF_TERM posix_error(ErlNifEnv *env, int err) {
    const char *name;
    switch (err) {
    case ENOENT: name = "enoent"; break;
    case ENOTDIR: name = "enotdir"; break;
    case EISDIR: name = "eisdir"; break;
    case EACCES: name = "eacces"; break;
    case EPERM: name = "eperm"; break;
    case ELOOP: name = "eloop"; break;
    case ENAMETOOLONG: name = "enametoolong"; break;
    case EMFILE: name = "emfile"; break;
    case ENFILE: name = "enfile"; break;
    case ENOMEM: name = "enomem"; break;
    case EINVAL: name = "einval"; break;
    case ESTALE: name = "estale"; break;
    case EOVERFLOW: name = "eoverflow"; break;
    default: name = "eio"; break;
    }
    return enif_make_tuple2(env, xz_atom_error, enif_make_atom(env, name));
}

static ERL_NIF_TERM tagged_error(ErlNifEnv *env, const char *tag) {
    return enif_make_tuple2(env, xz_atom_error, enif_make_atom(env, tag));
}

/* Opens `key` (segments separated by '/') below the directory `root`. With `nofollow`, no
 * segment may be a symlink: -2 is returned when one is (the caller then checks where it
 * leads). Returns the descriptor, or -1 with errno set. */
static int open_below(const char *root, char *key, int nofollow) {
    int dir = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir < 0) return -1;
    char *seg = key;
    for (;;) {
        char *slash = strchr(seg, '/');
        if (slash) *slash = '\0';
        int last = slash == NULL;
        int flags = O_RDONLY | O_CLOEXEC | O_NONBLOCK | (nofollow ? O_NOFOLLOW : 0) |
                    (last ? 0 : O_DIRECTORY);
        int fd = openat(dir, seg, flags);
        int err = errno;
        if (fd < 0 && nofollow && (err == ELOOP || err == ENOTDIR)) {
            /* O_NOFOLLOW reports a symlink as ELOOP, or as ENOTDIR along with O_DIRECTORY. */
            struct stat st;
            if (fstatat(dir, seg, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode)) {
                close(dir);
                return -2;
            }
        }
        close(dir);
        if (fd < 0) {
            errno = err;
            return -1;
        }
        if (last) return fd;
        dir = fd;
        seg = slash + 1;
    }
}

/* Reads `len` bytes at `offset` (fewer at end of file) into a new binary. */
static ERL_NIF_TERM read_range(ErlNifEnv *env, int fd, size_t offset, size_t len) {
    ErlNifBinary bin;
    if (!enif_alloc_binary(len, &bin)) return tagged_error(env, "enomem");
    size_t done = 0;
    while (done < len) {
        ssize_t n = pread(fd, bin.data + done, len - done, (off_t)(offset + done));
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            int err = errno;
            enif_release_binary(&bin);
            return posix_error(env, err);
        }
        if (n == 0) break;
        done += (size_t)n;
    }
    return xz_ok_binary(env, &bin, done);
}

/* Parses a range (nil, {offset, length} or {:suffix, n}) and clamps it to a file of `size`
 * bytes, as ExZarr.Storage.Range.resolve/2 does; 1 on success. */
static int get_range(ErlNifEnv *env, ERL_NIF_TERM t, size_t size, size_t *offset, size_t *len) {
    int arity;
    const ERL_NIF_TERM *r;
    size_t a, b;
    if (enif_is_identical(t, xz_atom_nil)) {
        *offset = 0;
        *len = size;
        return 1;
    }
    if (!enif_get_tuple(env, t, &arity, &r) || arity != 2 || !xz_get_size(env, r[1], &b)) return 0;
    if (xz_get_size(env, r[0], &a)) {
        *offset = a < size ? a : size;
        *len = b < size - *offset ? b : size - *offset;
        return 1;
    }
    if (enif_is_identical(r[0], enif_make_atom(env, "suffix"))) {
        *len = b < size ? b : size;
        *offset = size - *len;
        return 1;
    }
    return 0;
}

static int valid_range(ErlNifEnv *env, ERL_NIF_TERM t) {
    size_t offset, len;
    return get_range(env, t, 0, &offset, &len);
}

/* The ranges of an open regular file of `size` bytes: one binary, or a list for a list. */
static ERL_NIF_TERM read_ranges(ErlNifEnv *env, int fd, size_t size, ERL_NIF_TERM ranges) {
    size_t offset, len;
    if (!enif_is_list(env, ranges)) {
        get_range(env, ranges, size, &offset, &len);
        return read_range(env, fd, offset, len);
    }
    unsigned n;
    enif_get_list_length(env, ranges, &n);
    ERL_NIF_TERM *out = enif_alloc((n ? n : 1) * sizeof(ERL_NIF_TERM));
    if (!out) return tagged_error(env, "enomem");
    ERL_NIF_TERM head, list = ranges, result;
    for (unsigned i = 0; enif_get_list_cell(env, list, &head, &list); i++) {
        get_range(env, head, size, &offset, &len);
        result = read_range(env, fd, offset, len);
        const ERL_NIF_TERM *pair;
        int arity;
        enif_get_tuple(env, result, &arity, &pair);
        if (!enif_is_identical(pair[0], xz_atom_ok)) {
            enif_free(out);
            return result;
        }
        out[i] = pair[1];
    }
    result = xz_ok(env, enif_make_list_from_array(env, out, n));
    enif_free(out);
    return result;
}

/* read_file(root, key, ranges, nofollow): ranges is one range or a list of them. Key segments
 * must be non-empty and not "." or ".." (keys are validated before this; checked again). */
static ERL_NIF_TERM read_file_run(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]) {
    (void)argc;
    ErlNifBinary root_bin, key_bin;
    char root[XZ_MAX_PATH + 1], key[XZ_MAX_PATH + 1];
    if (!enif_inspect_binary(env, argv[0], &root_bin) ||
        !enif_inspect_binary(env, argv[1], &key_bin))
        return enif_make_badarg(env);
    if (enif_is_list(env, argv[2])) {
        ERL_NIF_TERM head, list = argv[2];
        while (enif_get_list_cell(env, list, &head, &list))
            if (!valid_range(env, head)) return enif_make_badarg(env);
        if (!enif_is_empty_list(env, list)) return enif_make_badarg(env);
    } else if (!valid_range(env, argv[2])) {
        return enif_make_badarg(env);
    }
    if (root_bin.size == 0 || key_bin.size == 0) return tagged_error(env, "einval");
    if (root_bin.size + key_bin.size + 1 > XZ_MAX_PATH) return tagged_error(env, "enametoolong");
    if (memchr(root_bin.data, 0, root_bin.size) || memchr(key_bin.data, 0, key_bin.size))
        return tagged_error(env, "einval");
    memcpy(root, root_bin.data, root_bin.size);
    root[root_bin.size] = '\0';
    memcpy(key, key_bin.data, key_bin.size);
    key[key_bin.size] = '\0';
    for (char *seg = key;;) {
        char *slash = strchr(seg, '/');
        size_t n = slash ? (size_t)(slash - seg) : strlen(seg);
        if (n == 0 || (n == 1 && seg[0] == '.') || (n == 2 && seg[0] == '.' && seg[1] == '.'))
            return tagged_error(env, "einval");
        if (!slash) break;
        seg = slash + 1;
    }
    int nofollow = enif_is_identical(argv[3], xz_atom_true);

    int fd = open_below(root, key, nofollow);
    if (fd == -2) return tagged_error(env, "symlink");
    if (fd < 0) return posix_error(env, errno);

    ERL_NIF_TERM result;
    struct stat st;
    if (fstat(fd, &st) != 0)
        result = posix_error(env, errno);
    else if (S_ISDIR(st.st_mode))
        result = tagged_error(env, "eisdir");
    else if (!S_ISREG(st.st_mode))
        result = tagged_error(env, "einval");
    else
        result = read_ranges(env, fd, (size_t)st.st_size, argv[2]);
    close(fd);
    return result;
}

ERL_NIF_TERM xz_nif_read_file(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]) {
    return enif_schedule_nif(env, "read_file", ERL_NIF_DIRTY_JOB_IO_BOUND, read_file_run, argc,
                             argv);
}
