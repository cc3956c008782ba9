/* File reads and writes for ExZarr.Storage.Filesystem, each in one NIF call.
 *
 * Reads: open, size, read and close, into exact-size binaries. A read that the page cache can
 * serve whole (openat2 with RESOLVE_CACHED, preadv2 with RWF_NOWAIT: neither ever waits for
 * the disk) is a copy, CPU work: up to XZ_FAST_READ_MAX bytes on the calling scheduler, more on
 * a dirty CPU scheduler (one per core: the dirty I/O schedulers would run ten copies at once
 * on as many cores, beside the decoding); a read that would wait for the disk goes on to a
 * dirty I/O scheduler.
 *
 * Writes (on a dirty I/O scheduler): create the missing directories, write a temporary file
 * next to the target, rename it over the target, holding a flock on the target's directory
 * while renaming. A conditional write checks, under that lock, that the target is still the
 * generation it was read at (or still absent) before it renames: every ExZarr writer of the
 * directory, in any OS process, takes the lock, so the check and the rename are one step.
 *
 * A conditional delete checks the generation and unlinks under the same lock.
 *
 * Lock files (for ExZarr.Storage.Zip's single writer): a flock held by a NIF resource. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/fs.h>
#include <linux/openat2.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <stdio.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/random.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "nif_funs.h"
#include "nif_util.h"

/* Longest root + key accepted (PATH_MAX on Linux). */
#define XZ_MAX_PATH 4096
/* Reads of at most this many bytes in all may run on the calling scheduler (a copy from the
 * page cache of this size takes well under a millisecond). */
#define XZ_FAST_READ_MAX (1024 * 1024)
/* ... in at most this many ranges (a syscall each). */
#define XZ_FAST_READ_RANGES 64

/* What a read on the calling scheduler could not do without waiting. */
#define XZ_WOULD_BLOCK 1

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
    case ENOSPC: name = "enospc"; break;
    case EDQUOT: name = "edquot"; break;
    case EROFS: name = "erofs"; break;
    case EFBIG: name = "efbig"; break;
    case EEXIST: name = "eexist"; break;
    case EBUSY: name = "ebusy"; break;
    case ENOTEMPTY: name = "enotempty"; break;
    default: name = "eio"; break;
    }
    return enif_make_tuple2(env, xz_atom_error, enif_make_atom(env, name));
}

static ERL_NIF_TERM tagged_error(ErlNifEnv *env, const char *tag) {
    return enif_make_tuple2(env, xz_atom_error, enif_make_atom(env, tag));
}

/* open_parent's answer when a segment is a symlink and symlinks may not be followed. */
#define XZ_SYMLINK (-2)

static int is_symlink(int dir, const char *name) {
    struct stat st;
    return fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode);
}

/* fsync of a directory, so that entries made or renamed in it survive a power loss; file
 * systems that cannot sync a directory (EINVAL) count as done. 0, or -1 with errno set. */
static int sync_dir(int dir) {
    return fsync(dir) == 0 || errno == EINVAL ? 0 : -1;
}

/* sync_dir of the directory holding the last segment of an absolute path. */
static int sync_parent(char *path) {
    char *slash = strrchr(path, '/');
    if (!slash) return 0;
    char c = slash[1];
    slash[1] = '\0';
    int dir = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    slash[1] = c;
    if (dir < 0) return -1;
    int r = sync_dir(dir);
    int err = errno;
    close(dir);
    errno = err;
    return r;
}

/* mkdir -p of an absolute path (restored before returning); with `sync`, the parent of every
 * directory made is synced. 0, or -1 with errno set. */
static int make_dirs(char *path, int sync) {
    for (char *p = path + 1;; p++) {
        if (*p != '/' && *p != '\0') continue;
        char c = *p;
        *p = '\0';
        int made = p != path + 1 && mkdir(path, 0777) == 0;
        int failed = p != path + 1 && !made && errno != EEXIST;
        if (made && sync && sync_parent(path) != 0) failed = 1;
        int err = errno;
        *p = c;
        if (failed) {
            errno = err;
            return -1;
        }
        if (c == '\0') return 0;
    }
}

/* Opens the directory `seg` in `dir`, first making it when `create` and it is missing (and
 * then, with `sync`, syncing `dir`). */
static int open_dir(int dir, const char *seg, int nofollow, int create, int sync) {
    int flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC | (nofollow ? O_NOFOLLOW : 0);
    int fd = openat(dir, seg, flags);
    if (fd < 0 && errno == ENOENT && create) {
        if (mkdirat(dir, seg, 0777) == 0) {
            if (sync && sync_dir(dir) != 0) return -1;
        } else if (errno != EEXIST) {
            return -1;
        }
        fd = openat(dir, seg, flags);
    }
    /* O_NOFOLLOW reports a symlink as ELOOP, or as ENOTDIR along with O_DIRECTORY. */
    if (fd < 0 && nofollow && (errno == ELOOP || errno == ENOTDIR) && is_symlink(dir, seg))
        return XZ_SYMLINK;
    return fd;
}

/* Opens the directory holding the last segment of `key` (segments separated by '/', cut
 * into strings here) below the directory `root`, and points *name at that segment. With
 * `create`, missing directories (the root too) are made, and with `sync` their parents are
 * synced. With `nofollow`, no directory on the way may be a symlink: XZ_SYMLINK when one is.
 * Returns the descriptor, or -1 with errno set. */
static int open_parent(char *root, char *key, int nofollow, int create, int sync, char **name) {
    int dir = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir < 0 && errno == ENOENT && create && make_dirs(root, sync) == 0)
        dir = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir < 0) return -1;
    char *seg = key;
    for (char *slash; (slash = strchr(seg, '/')) != NULL; seg = slash + 1) {
        *slash = '\0';
        int fd = open_dir(dir, seg, nofollow, create, sync);
        int err = errno;
        close(dir);
        errno = err;
        if (fd < 0) return fd;
        dir = fd;
    }
    *name = seg;
    return dir;
}

/* Opens `key` below `root` for reading; -1 (errno set) or XZ_SYMLINK as open_parent. */
static int open_below(char *root, char *key, int nofollow) {
    char *name;
    int dir = open_parent(root, key, nofollow, 0, 0, &name);
    if (dir < 0) return dir;
    int fd = openat(dir, name, O_RDONLY | O_CLOEXEC | O_NONBLOCK | (nofollow ? O_NOFOLLOW : 0));
    int err = errno;
    if (fd < 0 && nofollow && err == ELOOP && is_symlink(dir, name)) fd = XZ_SYMLINK;
    close(dir);
    errno = err;
    return fd;
}

/* Reads `len` bytes at `offset` into `dst` (fewer at end of file: *done says how many). With
 * `nowait`, returns XZ_WOULD_BLOCK when the page cache does not hold all the bytes; otherwise
 * 0, or -1 with errno set. */
static int read_into(int fd, uint8_t *dst, size_t offset, size_t len, int nowait, size_t *done) {
    *done = 0;
    while (*done < len) {
        struct iovec iov = {dst + *done, len - *done};
        ssize_t n = preadv2(fd, &iov, 1, (off_t)(offset + *done), nowait ? RWF_NOWAIT : 0);
        if (n < 0 && errno == EINTR) continue;
        /* EAGAIN: not cached; anything else is retried (and reported) the blocking way. */
        if (n < 0) return nowait ? XZ_WOULD_BLOCK : -1;
        if (n == 0) break;
        *done += (size_t)n;
        /* A short read without waiting may mean that only part of the range is cached. */
        if (nowait && *done < len) return XZ_WOULD_BLOCK;
    }
    return 0;
}

/* Reads `len` bytes at `offset` (fewer at end of file) into a new binary, stored in *out
 * ({:ok, binary} or an error). XZ_WOULD_BLOCK as read_into (everything released). */
static int read_range(ErlNifEnv *env, int fd, size_t offset, size_t len, int nowait,
                      ERL_NIF_TERM *out) {
    ErlNifBinary bin;
    size_t done;
    if (!enif_alloc_binary(len, &bin)) {
        *out = tagged_error(env, "enomem");
        return 0;
    }
    int r = read_into(fd, bin.data, offset, len, nowait, &done);
    if (r != 0) {
        int err = errno;
        enif_release_binary(&bin);
        if (r == XZ_WOULD_BLOCK) return r;
        *out = posix_error(env, err);
        return 0;
    }
    *out = xz_ok_binary(env, &bin, done);
    return 0;
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

/* The ranges of an open regular file of `size` bytes: one binary, or a list for a list;
 * XZ_WOULD_BLOCK as read_range. The ranges of a list are read into one binary and returned as
 * parts of it: one allocation however many ranges (each a large binary of its own was a fresh
 * mapping to fault in, several times slower than the copy for ranges of about a megabyte). */
static int read_ranges(ErlNifEnv *env, int fd, size_t size, ERL_NIF_TERM ranges, int nowait,
                       ERL_NIF_TERM *result) {
    size_t offset, len, total = 0;
    if (!enif_is_list(env, ranges)) {
        get_range(env, ranges, size, &offset, &len);
        return read_range(env, fd, offset, len, nowait, result);
    }
    unsigned n;
    enif_get_list_length(env, ranges, &n);
    ERL_NIF_TERM head, list = ranges;
    /* Each range is clamped to the file: the sum is at most n * size, checked for overflow. */
    while (enif_get_list_cell(env, list, &head, &list)) {
        get_range(env, head, size, &offset, &len);
        if (total + len < total) {
            *result = tagged_error(env, "enomem");
            return 0;
        }
        total += len;
    }
    ERL_NIF_TERM *out = enif_alloc((n ? n : 1) * sizeof(ERL_NIF_TERM));
    ErlNifBinary bin;
    if (!out || !enif_alloc_binary(total, &bin)) {
        if (out) enif_free(out);
        *result = tagged_error(env, "enomem");
        return 0;
    }
    size_t *spans = enif_alloc((n ? n : 1) * 2 * sizeof(size_t));
    if (!spans) {
        enif_free(out);
        enif_release_binary(&bin);
        *result = tagged_error(env, "enomem");
        return 0;
    }
    /* Each range's bytes go at `at`; spans[2i], spans[2i+1]: where and how many were read. */
    size_t at = 0;
    int status = 0;
    list = ranges;
    for (unsigned i = 0; status == 0 && enif_get_list_cell(env, list, &head, &list); i++) {
        size_t done;
        get_range(env, head, size, &offset, &len);
        status = read_into(fd, bin.data + at, offset, len, nowait, &done);
        spans[2 * i] = at;
        spans[2 * i + 1] = done;
        at += len;
    }
    if (status != 0) {
        int err = errno;
        enif_release_binary(&bin);
        if (status != XZ_WOULD_BLOCK) {
            *result = posix_error(env, err);
            status = 0;
        }
    } else {
        ERL_NIF_TERM whole = enif_make_binary(env, &bin);
        for (unsigned i = 0; i < n; i++)
            out[i] = enif_make_sub_binary(env, whole, spans[2 * i], spans[2 * i + 1]);
        *result = xz_ok(env, enif_make_list_from_array(env, out, n));
    }
    enif_free(spans);
    enif_free(out);
    return status;
}

/* Total bytes the ranges cover in a file of `size` bytes (SIZE_MAX for more than
 * XZ_FAST_READ_RANGES ranges). */
static size_t ranges_bytes(ErlNifEnv *env, ERL_NIF_TERM ranges, size_t size) {
    size_t offset, len, total = 0;
    unsigned n;
    if (!enif_is_list(env, ranges)) {
        get_range(env, ranges, size, &offset, &len);
        return len;
    }
    if (!enif_get_list_length(env, ranges, &n) || n > XZ_FAST_READ_RANGES) return SIZE_MAX;
    ERL_NIF_TERM head, list = ranges;
    while (enif_get_list_cell(env, list, &head, &list)) {
        get_range(env, head, size, &offset, &len);
        total = total + len < total ? SIZE_MAX : total + len;
    }
    return total;
}

typedef struct {
    char root[XZ_MAX_PATH + 1];
    char key[XZ_MAX_PATH + 1];
    int nofollow;
    int generation;
} xz_path;

/* Checks a root (an absolute path) and a key into *req; 0 on success, else *error is the
 * answer. Key segments must be non-empty and not "." or ".." (keys are validated before this;
 * checked again here). */
static int parse_path(ErlNifEnv *env, ERL_NIF_TERM root_term, ERL_NIF_TERM key_term,
                      ERL_NIF_TERM nofollow, xz_path *req, ERL_NIF_TERM *error) {
    ErlNifBinary root, key;
    if (!enif_inspect_binary(env, root_term, &root) || !enif_inspect_binary(env, key_term, &key)) {
        /* Raises ArgumentError: enif_make_badarg marks the environment, so only on failure. */
        *error = enif_make_badarg(env);
        return -1;
    }
    *error = tagged_error(env, "einval");
    if (root.size == 0 || key.size == 0 || root.data[0] != '/') return -1;
    if (root.size + key.size + 1 > XZ_MAX_PATH) {
        *error = tagged_error(env, "enametoolong");
        return -1;
    }
    if (memchr(root.data, 0, root.size) || memchr(key.data, 0, key.size)) return -1;
    memcpy(req->root, root.data, root.size);
    req->root[root.size] = '\0';
    memcpy(req->key, key.data, key.size);
    req->key[key.size] = '\0';
    for (char *seg = req->key;;) {
        char *slash = strchr(seg, '/');
        size_t n = slash ? (size_t)(slash - seg) : strlen(seg);
        if (n == 0 || (n == 1 && seg[0] == '.') || (n == 2 && seg[0] == '.' && seg[1] == '.'))
            return -1;
        if (!slash) break;
        seg = slash + 1;
    }
    req->nofollow = enif_is_identical(nofollow, xz_atom_true);
    return 0;
}

/* Checks read_file's arguments into *req, as parse_path; the ranges must be well formed. A
 * fifth argument `true` asks for the file's generation. */
static int parse_request(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[], xz_path *req,
                         ERL_NIF_TERM *error) {
    int ok = 1;
    if (enif_is_list(env, argv[2])) {
        ERL_NIF_TERM head, list = argv[2];
        while (ok && enif_get_list_cell(env, list, &head, &list)) ok = valid_range(env, head);
        ok = ok && enif_is_empty_list(env, list);
    } else {
        ok = valid_range(env, argv[2]);
    }
    if (!ok) {
        *error = enif_make_badarg(env);
        return -1;
    }
    if (parse_path(env, argv[0], argv[1], argv[3], req, error) != 0) return -1;
    req->generation = argc > 4 && enif_is_identical(argv[4], xz_atom_true);
    return 0;
}

/* The generation of an open file: {size, mtime_ns, ctime_ns, inode, device, inode generation}
 * from the descriptor the bytes are read from. A write through ExZarr (a new file renamed over
 * the old one) changes the inode, and the inode generation (FS_IOC_GETVERSION: random per
 * allocation on ext4, xfs and btrfs; 0 where the filesystem has none) tells a reused inode
 * number apart; an in-place write changes the times or the size. */
typedef struct {
    ErlNifUInt64 size, ino, dev;
    ErlNifSInt64 mtime, ctime;
    unsigned igen;
} xz_gen;

static void gen_of(int fd, const struct stat *st, xz_gen *g) {
    int igen = 0;
    if (ioctl(fd, FS_IOC_GETVERSION, &igen) != 0) igen = 0;
    g->size = (ErlNifUInt64)st->st_size;
    g->mtime = (ErlNifSInt64)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec;
    g->ctime = (ErlNifSInt64)st->st_ctim.tv_sec * 1000000000 + st->st_ctim.tv_nsec;
    g->ino = (ErlNifUInt64)st->st_ino;
    g->dev = (ErlNifUInt64)st->st_dev;
    g->igen = (unsigned)igen;
}

static ERL_NIF_TERM gen_term(ErlNifEnv *env, const xz_gen *g) {
    ERL_NIF_TERM items[6] = {enif_make_uint64(env, g->size), enif_make_int64(env, g->mtime),
                             enif_make_int64(env, g->ctime), enif_make_uint64(env, g->ino),
                             enif_make_uint64(env, g->dev),  enif_make_uint(env, g->igen)};
    return enif_make_tuple_from_array(env, items, 6);
}

/* Parses a generation as gen_term makes it; 1 on success. */
static int get_gen(ErlNifEnv *env, ERL_NIF_TERM t, xz_gen *g) {
    int arity;
    const ERL_NIF_TERM *e;
    return enif_get_tuple(env, t, &arity, &e) && arity == 6 && enif_get_uint64(env, e[0], &g->size) &&
           enif_get_int64(env, e[1], &g->mtime) && enif_get_int64(env, e[2], &g->ctime) &&
           enif_get_uint64(env, e[3], &g->ino) && enif_get_uint64(env, e[4], &g->dev) &&
           enif_get_uint(env, e[5], &g->igen);
}

static int same_gen(const xz_gen *a, const xz_gen *b) {
    return a->size == b->size && a->mtime == b->mtime && a->ctime == b->ctime &&
           a->ino == b->ino && a->dev == b->dev && a->igen == b->igen;
}

static ERL_NIF_TERM file_generation(ErlNifEnv *env, int fd, const struct stat *st) {
    xz_gen g;
    gen_of(fd, st, &g);
    return gen_term(env, &g);
}

/* The generation of the bytes just read from `fd`, whose fstat before the read was *before:
 * file_generation, or, when the file changed during the read (written in place by another
 * program), a new reference, equal to no other generation, so the read is not trusted. */
static ERL_NIF_TERM read_generation(ErlNifEnv *env, int fd, const struct stat *before) {
    struct stat after;
    if (fstat(fd, &after) != 0 || after.st_size != before->st_size ||
        after.st_mtim.tv_sec != before->st_mtim.tv_sec ||
        after.st_mtim.tv_nsec != before->st_mtim.tv_nsec ||
        after.st_ctim.tv_sec != before->st_ctim.tv_sec ||
        after.st_ctim.tv_nsec != before->st_ctim.tv_nsec)
        return enif_make_ref(env);
    return file_generation(env, fd, before);
}

/* Reads from an open descriptor (closed here); XZ_WOULD_BLOCK as read_range. With
 * `generation`, a successful read is {:ok, data, file_generation}. */
static int read_open(ErlNifEnv *env, int fd, ERL_NIF_TERM ranges, int nowait, size_t nowait_max,
                     int generation, ERL_NIF_TERM *result) {
    struct stat st;
    int status = 0;
    if (fstat(fd, &st) != 0)
        *result = posix_error(env, errno);
    else if (S_ISDIR(st.st_mode))
        *result = tagged_error(env, "eisdir");
    else if (!S_ISREG(st.st_mode))
        *result = tagged_error(env, "einval");
    else if (nowait && ranges_bytes(env, ranges, (size_t)st.st_size) > nowait_max)
        status = XZ_WOULD_BLOCK;
    else
        status = read_ranges(env, fd, (size_t)st.st_size, ranges, nowait, result);
    const ERL_NIF_TERM *pair;
    int arity;
    if (status == 0 && generation && enif_get_tuple(env, *result, &arity, &pair) &&
        arity == 2 && enif_is_identical(pair[0], xz_atom_ok))
        *result = enif_make_tuple3(env, xz_atom_ok, pair[1], read_generation(env, fd, &st));
    close(fd);
    return status;
}

static ERL_NIF_TERM read_file_run(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]) {
    xz_path req;
    ERL_NIF_TERM result;
    if (parse_request(env, argc, argv, &req, &result) != 0) return result;
    int fd = open_below(req.root, req.key, req.nofollow);
    if (fd == XZ_SYMLINK) return tagged_error(env, "symlink");
    if (fd < 0) return posix_error(env, errno);
    read_open(env, fd, argv[2], 0, 0, req.generation, &result);
    return result;
}

static long openat2_cached(int dir, const char *path, int flags, int resolve) {
    struct open_how how = {.flags = (uint64_t)flags, .resolve = RESOLVE_CACHED | (uint64_t)resolve};
    return syscall(SYS_openat2, dir, path, &how, sizeof how);
}

/* The read from the page cache alone, of at most `max` bytes; XZ_WOULD_BLOCK when it would
 * have to wait, or is larger (or the kernel lacks openat2 with RESOLVE_CACHED). With
 * `nofollow`, the key is resolved beneath the root without following any symlink. */
static int read_cached(ErlNifEnv *env, const xz_path *req, ERL_NIF_TERM ranges, size_t max,
                       ERL_NIF_TERM *result) {
    long dir = openat2_cached(AT_FDCWD, req->root, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
    if (dir < 0) return XZ_WOULD_BLOCK;
    int resolve = req->nofollow ? RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS : 0;
    long fd = openat2_cached((int)dir, req->key, O_RDONLY | O_CLOEXEC | O_NONBLOCK, resolve);
    int err = errno;
    close((int)dir);
    if (fd >= 0) return read_open(env, (int)fd, ranges, 1, max, req->generation, result);
    if (err == ELOOP && req->nofollow)
        *result = tagged_error(env, "symlink");
    else if (err == ENOENT || err == ENOTDIR)
        *result = posix_error(env, err);
    else
        return XZ_WOULD_BLOCK;
    return 0;
}

/* On a dirty CPU scheduler: the read from the page cache whatever its size, else on to a dirty
 * I/O scheduler. */
static ERL_NIF_TERM read_file_cached_run(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]) {
    xz_path req;
    ERL_NIF_TERM result;
    if (parse_request(env, argc, argv, &req, &result) != 0) return result;
    if (read_cached(env, &req, argv[2], SIZE_MAX, &result) == 0) return result;
    return enif_schedule_nif(env, "read_file", ERL_NIF_DIRTY_JOB_IO_BOUND, read_file_run, argc,
                             argv);
}

ERL_NIF_TERM xz_nif_read_file(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]) {
    xz_path req;
    ERL_NIF_TERM result;
    if (parse_request(env, argc, argv, &req, &result) != 0) return result;
    if (read_cached(env, &req, argv[2], XZ_FAST_READ_MAX, &result) == 0) return result;
    return enif_schedule_nif(env, "read_file", ERL_NIF_DIRTY_JOB_CPU_BOUND, read_file_cached_run,
                             argc, argv);
}

/* ---- writes ---- */

/* At most this many buffers per writev call (IOV_MAX on Linux). */
#define XZ_IOV_BATCH 1024

/* Writes every byte of the buffers; 0, or -1 with errno set. */
static int write_all(int fd, const struct iovec *v, size_t n) {
    struct iovec batch[XZ_IOV_BATCH];
    size_t i = 0, off = 0; /* the first buffer not fully written, and how much of it is */
    for (;;) {
        while (i < n && off == v[i].iov_len) {
            i++;
            off = 0;
        }
        if (i == n) return 0;
        int k = 0;
        for (size_t j = i; j < n && k < XZ_IOV_BATCH; j++, k++) {
            size_t skip = j == i ? off : 0;
            batch[k].iov_base = (char *)v[j].iov_base + skip;
            batch[k].iov_len = v[j].iov_len - skip;
        }
        ssize_t w = writev(fd, batch, k);
        if (w < 0 && errno == EINTR) continue;
        if (w < 0) return -1;
        if (w == 0) {
            errno = EIO;
            return -1;
        }
        for (size_t left = (size_t)w; left > 0;) {
            size_t rest = v[i].iov_len - off;
            size_t step = left < rest ? left : rest;
            off += step;
            left -= step;
            if (off == v[i].iov_len) {
                i++;
                off = 0;
            }
        }
    }
}

/* A fresh temporary name next to `name`: ".<name>.tmp.<16 hex digits>" (the pattern that
 * ExZarr.Storage.Filesystem leaves out of listings). */
static int temp_name(char *out, size_t cap, const char *name) {
    static _Atomic uint64_t counter;
    uint64_t r;
    if (getrandom(&r, sizeof r, GRND_NONBLOCK) != (ssize_t)sizeof r) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        r = ((uint64_t)ts.tv_sec << 32) ^ (uint64_t)ts.tv_nsec ^ (uint64_t)getpid() << 16;
    }
    r ^= counter++ * 0x9E3779B97F4A7C15ull;
    int n = snprintf(out, cap, ".%s.tmp.%016llx", name, (unsigned long long)r);
    return n > 0 && (size_t)n < cap ? 0 : -1;
}

/* What a write is conditional on (write_file's sixth argument). */
typedef enum {
    XZ_PLAIN,  /* no condition, no generation returned (write_file/5) */
    XZ_ANY,    /* no condition; the new generation is returned */
    XZ_ABSENT, /* the target must not exist */
    XZ_MATCH   /* the target must be the file of a given generation */
} xz_cond;

/* Returned by write_replace when the condition does not hold (the target is unchanged). */
#define XZ_MISMATCH 1
/* ... when the directory cannot be locked for a condition (a filesystem without flock). */
#define XZ_NOLOCK 2

/* Whether `name` in `dir` is what `cond` asks: 1 yes, 0 no, -1 on an error (errno set). */
static int condition_holds(int dir, const char *name, xz_cond cond, const xz_gen *want,
                           int nofollow) {
    if (cond == XZ_ABSENT) {
        struct stat st;
        if (fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) == 0) return 0;
        return errno == ENOENT ? 1 : -1;
    }
    int fd = openat(dir, name, O_RDONLY | O_CLOEXEC | O_NONBLOCK | (nofollow ? O_NOFOLLOW : 0));
    if (fd < 0) return errno == ENOENT || errno == ELOOP || errno == ENOTDIR ? 0 : -1;
    struct stat st;
    xz_gen now;
    int holds = fstat(fd, &st) == 0 ? S_ISREG(st.st_mode) : -1;
    if (holds == 1) {
        gen_of(fd, &st, &now);
        holds = same_gen(&now, want);
    }
    int err = errno;
    close(fd);
    errno = err;
    return holds;
}

static int lock_dir(int dir) {
    while (flock(dir, LOCK_EX) != 0)
        if (errno != EINTR) return -1;
    return 0;
}

/* Writes the buffers to a new temporary file in `dir` and renames it to `name`, with `sync`
 * syncing the file before and the directory after the rename. The rename happens under a
 * flock of `dir` (without it when the filesystem has no flock, unless a condition needs it),
 * after checking `cond` (`want` for XZ_MATCH); except for XZ_PLAIN, *got is then the new
 * file's generation. 0; XZ_MISMATCH or XZ_NOLOCK; or -1 with errno set. On failure the
 * temporary file is removed. */
static int write_replace(int dir, const char *name, const struct iovec *v, size_t n, int sync,
                         xz_cond cond, const xz_gen *want, int nofollow, xz_gen *got) {
    char temp[NAME_MAX + 1];
    int fd = -1;
    for (int attempt = 0; fd < 0 && attempt < 8; attempt++) {
        if (temp_name(temp, sizeof temp, name) != 0) {
            errno = ENAMETOOLONG;
            return -1;
        }
        fd = openat(dir, temp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
        if (fd < 0 && errno != EEXIST) return -1;
    }
    if (fd < 0) return -1;
    int r = write_all(fd, v, n);
    /* The modification time from the clock at full precision (the kernel's may be a coarse
     * tick), so that files written in turn never share a generation, even where inode
     * numbers are reused at once and the filesystem has no inode generations. */
    struct timespec times[2] = {{.tv_nsec = UTIME_OMIT}, {0}};
    if (r == 0 && clock_gettime(CLOCK_REALTIME, &times[1]) == 0) r = futimens(fd, times);
    if (r == 0 && sync) r = fsync(fd);
    int err = errno;
    if (close(fd) != 0 && r == 0) {
        r = -1;
        err = errno;
    }
    /* The new file, to take its generation from once it has its name. */
    int rfd = r == 0 && cond != XZ_PLAIN ? openat(dir, temp, O_RDONLY | O_CLOEXEC | O_NOFOLLOW) : -2;
    if (rfd == -1) {
        r = -1;
        err = errno;
    }
    int locked = r == 0 && lock_dir(dir) == 0;
    if (r == 0 && !locked && (cond == XZ_ABSENT || cond == XZ_MATCH)) r = XZ_NOLOCK;
    if (r == 0 && (cond == XZ_ABSENT || cond == XZ_MATCH)) {
        int holds = condition_holds(dir, name, cond, want, nofollow);
        if (holds <= 0) {
            r = holds == 0 ? XZ_MISMATCH : -1;
            err = errno;
        }
    }
    if (r == 0 && renameat(dir, temp, dir, name) != 0) {
        r = -1;
        err = errno;
    }
    struct stat st;
    if (r == 0 && rfd >= 0) {
        if (fstat(rfd, &st) == 0) {
            gen_of(rfd, &st, got);
        } else {
            r = -1;
            err = errno;
        }
    }
    if (locked) flock(dir, LOCK_UN);
    if (rfd >= 0) close(rfd);
    if (r == 0 && sync && sync_dir(dir) != 0) {
        r = -1;
        err = errno;
    }
    if (r != 0) {
        unlinkat(dir, temp, 0);
        errno = err;
    }
    return r;
}

/* The buffers of a binary or a proper list of binaries (pointing into the terms, no copy),
 * in *v (enif_alloc'd for a list; `one` for a binary); 0, or -1 for anything else. */
static int get_buffers(ErlNifEnv *env, ERL_NIF_TERM data, struct iovec *one, struct iovec **v,
                       size_t *n) {
    ErlNifBinary bin;
    unsigned len;
    if (enif_inspect_binary(env, data, &bin)) {
        one->iov_base = bin.data;
        one->iov_len = bin.size;
        *v = one;
        *n = 1;
        return 0;
    }
    if (!enif_get_list_length(env, data, &len)) return -1;
    *v = enif_alloc((len ? len : 1) * sizeof(struct iovec));
    if (!*v) return -1;
    ERL_NIF_TERM head, list = data;
    for (*n = 0; enif_get_list_cell(env, list, &head, &list); (*n)++) {
        if (!enif_inspect_binary(env, head, &bin)) {
            enif_free(*v);
            return -1;
        }
        (*v)[*n].iov_base = bin.data;
        (*v)[*n].iov_len = bin.size;
    }
    return 0;
}

/* write_file's condition (argv[5]; XZ_PLAIN without one) into *cond and *want; 1 if valid. */
static int get_condition(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[], xz_cond *cond,
                         xz_gen *want) {
    if (argc < 6) {
        *cond = XZ_PLAIN;
        return 1;
    }
    if (enif_is_identical(argv[5], enif_make_atom(env, "any"))) {
        *cond = XZ_ANY;
        return 1;
    }
    if (enif_is_identical(argv[5], enif_make_atom(env, "absent"))) {
        *cond = XZ_ABSENT;
        return 1;
    }
    *cond = XZ_MATCH;
    return get_gen(env, argv[5], want);
}

static ERL_NIF_TERM write_file_run(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]) {
    xz_path req;
    ERL_NIF_TERM result;
    xz_cond cond;
    xz_gen want, got;
    if (parse_path(env, argv[0], argv[1], argv[3], &req, &result) != 0) return result;
    if (!get_condition(env, argc, argv, &cond, &want)) return enif_make_badarg(env);
    struct iovec one, *v;
    size_t n;
    if (get_buffers(env, argv[2], &one, &v, &n) != 0) return enif_make_badarg(env);
    char *name;
    int sync = enif_is_identical(argv[4], xz_atom_true);
    int dir = open_parent(req.root, req.key, req.nofollow, 1, sync, &name);
    if (dir == XZ_SYMLINK) {
        result = tagged_error(env, "symlink");
    } else if (dir < 0) {
        result = posix_error(env, errno);
    } else if (req.nofollow && is_symlink(dir, name)) {
        /* The target itself may be a symlink only if it stays inside: the caller checks it. */
        result = tagged_error(env, "symlink");
    } else {
        int r = write_replace(dir, name, v, n, sync, cond, &want, req.nofollow, &got);
        if (r == XZ_MISMATCH)
            result = tagged_error(env, "generation_mismatch");
        else if (r == XZ_NOLOCK)
            result = tagged_error(env, "nolock");
        else if (r != 0)
            result = posix_error(env, errno);
        else
            result = cond == XZ_PLAIN ? xz_atom_ok : xz_ok(env, gen_term(env, &got));
    }
    if (dir >= 0) close(dir);
    if (v != &one) enif_free(v);
    return result;
}

ERL_NIF_TERM xz_nif_write_file(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]) {
    xz_path req;
    ERL_NIF_TERM error;
    xz_cond cond;
    xz_gen want;
    if (parse_path(env, argv[0], argv[1], argv[3], &req, &error) != 0) return error;
    if (!enif_is_binary(env, argv[2]) && !enif_is_list(env, argv[2])) return enif_make_badarg(env);
    if (!get_condition(env, argc, argv, &cond, &want)) return enif_make_badarg(env);
    return enif_schedule_nif(env, "write_file", ERL_NIF_DIRTY_JOB_IO_BOUND, write_file_run, argc,
                             argv);
}

/* ---- conditional deletes ---- */

static ERL_NIF_TERM delete_file_run(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]) {
    (void)argc;
    xz_path req;
    ERL_NIF_TERM result;
    xz_gen want;
    if (parse_path(env, argv[0], argv[1], argv[2], &req, &result) != 0) return result;
    if (!get_gen(env, argv[3], &want)) return enif_make_badarg(env);
    char *name;
    int dir = open_parent(req.root, req.key, req.nofollow, 0, 0, &name);
    if (dir == XZ_SYMLINK) return tagged_error(env, "symlink");
    /* No folder: no file, so not the generation asked for. */
    if (dir < 0)
        return errno == ENOENT || errno == ENOTDIR ? tagged_error(env, "generation_mismatch")
                                                   : posix_error(env, errno);
    if (req.nofollow && is_symlink(dir, name)) {
        result = tagged_error(env, "symlink");
    } else if (lock_dir(dir) != 0) {
        result = tagged_error(env, "nolock");
    } else {
        int holds = condition_holds(dir, name, XZ_MATCH, &want, req.nofollow);
        if (holds == 1 && unlinkat(dir, name, 0) != 0) holds = -1;
        int err = errno;
        flock(dir, LOCK_UN);
        if (holds == 1)
            result = xz_atom_ok;
        else if (holds == 0)
            result = tagged_error(env, "generation_mismatch");
        else
            result = posix_error(env, err);
    }
    close(dir);
    return result;
}

/* delete_file(root, key, nofollow, generation): unlinks the file only while it has that
 * generation, checked under the flock of its directory that every write through write_file
 * takes to rename, so the check and the unlink are one step for all writers of the machine. */
ERL_NIF_TERM xz_nif_delete_file(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]) {
    xz_path req;
    ERL_NIF_TERM error;
    xz_gen want;
    if (parse_path(env, argv[0], argv[1], argv[2], &req, &error) != 0) return error;
    if (!get_gen(env, argv[3], &want)) return enif_make_badarg(env);
    return enif_schedule_nif(env, "delete_file", ERL_NIF_DIRTY_JOB_IO_BOUND, delete_file_run, argc,
                             argv);
}

/* ---- lock files ---- */

typedef struct {
    int fd;
    char path[XZ_MAX_PATH + 1];
} xz_lock;

static ErlNifResourceType *lock_type;

/* A lock dropped without unlock_file (its owner died) is released; its file stays. */
static void lock_dtor(ErlNifEnv *env, void *obj) {
    (void)env;
    xz_lock *lock = obj;
    if (lock->fd >= 0) close(lock->fd);
}

int xz_io_load(ErlNifEnv *env) {
    lock_type = enif_open_resource_type(env, NULL, "exzarr_lock_file", lock_dtor,
                                        ERL_NIF_RT_CREATE, NULL);
    return lock_type != NULL;
}

/* Creates (or opens) the file at the absolute path argv[0] and takes an exclusive flock on it
 * without waiting. A holder that releases unlinks the file first, so a lock taken on a file
 * that no longer has that name is let go and taken again on the new one. */
static ERL_NIF_TERM lock_file_run(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]) {
    (void)argc;
    ErlNifBinary path;
    if (!enif_inspect_binary(env, argv[0], &path)) return enif_make_badarg(env);
    if (path.size == 0 || path.size > XZ_MAX_PATH || path.data[0] != '/' ||
        memchr(path.data, 0, path.size))
        return tagged_error(env, "einval");
    xz_lock *lock = enif_alloc_resource(lock_type, sizeof(xz_lock));
    if (!lock) return tagged_error(env, "enomem");
    memcpy(lock->path, path.data, path.size);
    lock->path[path.size] = '\0';
    lock->fd = -1;
    ERL_NIF_TERM result = tagged_error(env, "locked");
    for (int attempt = 0; attempt < 16; attempt++) {
        int fd = open(lock->path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0666);
        if (fd < 0) {
            result = posix_error(env, errno);
            break;
        }
        int r;
        while ((r = flock(fd, LOCK_EX | LOCK_NB)) != 0 && errno == EINTR) {
        }
        struct stat held, named;
        if (r != 0) {
            if (errno != EWOULDBLOCK) result = posix_error(env, errno);
            close(fd);
            break;
        }
        if (fstat(fd, &held) == 0 && stat(lock->path, &named) == 0 &&
            held.st_ino == named.st_ino && held.st_dev == named.st_dev) {
            lock->fd = fd;
            result = xz_ok(env, enif_make_resource(env, lock));
            break;
        }
        close(fd);
    }
    enif_release_resource(lock);
    return result;
}

ERL_NIF_TERM xz_nif_lock_file(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]) {
    if (!enif_is_binary(env, argv[0])) return enif_make_badarg(env);
    return enif_schedule_nif(env, "lock_file", ERL_NIF_DIRTY_JOB_IO_BOUND, lock_file_run, argc,
                             argv);
}

/* Removes the lock file and releases the lock; releasing twice is fine. */
ERL_NIF_TERM xz_nif_unlock_file(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[]) {
    (void)argc;
    xz_lock *lock;
    if (!enif_get_resource(env, argv[0], lock_type, (void **)&lock)) return enif_make_badarg(env);
    if (lock->fd >= 0) {
        unlink(lock->path);
        close(lock->fd);
        lock->fd = -1;
    }
    return xz_atom_ok;
}
