/* The machine's limits for workload 14 of `make bench`: what the hardware and the kernel do
 * with no Zarr at all. Built by the bench harness with `cc -O2 ... -lzstd -lpthread`.
 *
 *   limits memcpy RUNS BYTES           memcpy of BYTES between two touched buffers
 *   limits read RUNS FILE              read(2) of a whole file into a fresh malloc'd buffer
 *   limits read-huge RUNS FILE         the same into a fresh mapping advised MADV_HUGEPAGE
 *   limits zstd RUNS THREADS FILE...   every file read(2) and zstd-decoded by THREADS threads
 *                                      into one output buffer (each frame's content size),
 *                                      touched before the runs: no page faults in the timing
 *   limits zstd-write RUNS THREADS LEVEL ROWS COLS CHUNK_ROWS CHUNK_COLS ITEMSIZE FILE DIR
 *                                      the C-order ROWS x COLS array in FILE (read once) cut
 *                                      into chunks, each copied out, zstd-compressed at LEVEL
 *                                      and written to a new file in DIR (emptied before each
 *                                      run, untimed) by THREADS threads
 *
 * The harness links the zstd compressor the NIF compresses with (c_src/build/zstd, zstd 1.5.7,
 * whose block splitter is off at levels up to 4 as in the NIF: XZ_ZSTD_BUNDLED) when it is
 * built, else Debian's libzstd, which the NIF then uses too.
 *
 * Each prints the fastest of RUNS runs in seconds (after one untimed run), one number a line. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zstd.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static void die(const char *what) {
    perror(what);
    exit(1);
}

/* Reads the whole file into dst (at least its size); returns the bytes read. */
static size_t read_all(const char *path, unsigned char *dst, size_t cap) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) die(path);
    size_t done = 0;
    for (ssize_t n; done < cap && (n = read(fd, dst + done, cap - done)) != 0; done += (size_t)n)
        if (n < 0) die(path);
    close(fd);
    return done;
}

static size_t file_size(const char *path) {
    struct stat st;
    if (stat(path, &st) != 0) die(path);
    return (size_t)st.st_size;
}

static double run_memcpy(size_t bytes) {
    static unsigned char *src, *dst;
    if (!src) {
        src = malloc(bytes);
        dst = malloc(bytes);
        if (!src || !dst) die("malloc");
        memset(src, 1, bytes);
        memset(dst, 2, bytes);
    }
    double t = now();
    memcpy(dst, src, bytes);
    t = now() - t;
    if (dst[bytes - 1] != 1) exit(1);
    return t;
}

static double run_read(const char *path, int huge) {
    size_t size = file_size(path), len = size ? size : 1;
    double t = now();
    unsigned char *buf = huge ? mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
                              : malloc(len);
    if (!buf || buf == MAP_FAILED) die("alloc");
    if (huge) madvise(buf, len, MADV_HUGEPAGE);
    if (read_all(path, buf, size) != size) exit(1);
    t = now() - t;
    if (huge)
        munmap(buf, len);
    else
        free(buf);
    return t;
}

/* ---- zstd: chunks handed out by an atomic counter, each decoded at its place in `out` ---- */

typedef struct {
    char **files;
    size_t *at, *size, *stored;
    int n;
    unsigned char *out;
    atomic_int next;
} job;

static void *worker(void *arg) {
    job *j = arg;
    ZSTD_DCtx *ctx = ZSTD_createDCtx();
    size_t cap = 0;
    unsigned char *buf = NULL;
    for (int i; (i = atomic_fetch_add(&j->next, 1)) < j->n;) {
        if (j->stored[i] > cap) {
            free(buf);
            cap = j->stored[i];
            buf = malloc(cap);
            if (!buf) die("malloc");
        }
        size_t got = read_all(j->files[i], buf, j->stored[i]);
        size_t r = ZSTD_decompressDCtx(ctx, j->out + j->at[i], j->size[i], buf, got);
        if (ZSTD_isError(r) || r != j->size[i]) {
            fprintf(stderr, "%s: %s\n", j->files[i], ZSTD_getErrorName(r));
            exit(1);
        }
    }
    free(buf);
    ZSTD_freeDCtx(ctx);
    return NULL;
}

/* The time `threads` threads take to run `work` on `arg` to its end. */
static double on_threads(void *(*work)(void *), void *arg, int threads) {
    double t = now();
    pthread_t tid[threads];
    for (int i = 0; i < threads; i++)
        if (pthread_create(&tid[i], NULL, work, arg) != 0) die("pthread_create");
    for (int i = 0; i < threads; i++) pthread_join(tid[i], NULL);
    return now() - t;
}

static double run_zstd(job *j, int threads) {
    atomic_store(&j->next, 0);
    return on_threads(worker, j, threads);
}

static job *zstd_job(int n, char **files) {
    size_t total = 0;
    job *j = calloc(1, sizeof *j);
    j->files = files;
    j->n = n;
    j->at = calloc(n, sizeof(size_t));
    j->size = calloc(n, sizeof(size_t));
    j->stored = calloc(n, sizeof(size_t));
    for (int i = 0; i < n; i++) {
        j->stored[i] = file_size(files[i]);
        unsigned char *head = malloc(j->stored[i] ? j->stored[i] : 1);
        size_t got = read_all(files[i], head, j->stored[i]);
        unsigned long long size = ZSTD_getFrameContentSize(head, got);
        free(head);
        if (size == ZSTD_CONTENTSIZE_UNKNOWN || size == ZSTD_CONTENTSIZE_ERROR) {
            fprintf(stderr, "%s: no zstd frame content size\n", files[i]);
            exit(1);
        }
        j->at[i] = total;
        j->size[i] = (size_t)size;
        total += (size_t)size;
    }
    j->out = malloc(total ? total : 1);
    if (!j->out) die("malloc");
    memset(j->out, 0, total);
    return j;
}

/* ---- zstd-write: chunks cut from one array, compressed and written by every thread ---- */

typedef struct {
    const unsigned char *array;
    size_t rows, cols, crows, ccols, itemsize;
    size_t grid_cols, n;
    int level;
    const char *dir;
    atomic_size_t next;
} write_job;

/* Copies chunk i (zero-padded at the array's edges) into buf, C order. */
static void cut_chunk(const write_job *w, size_t i, unsigned char *buf) {
    size_t r0 = i / w->grid_cols * w->crows, c0 = i % w->grid_cols * w->ccols;
    size_t row_bytes = w->ccols * w->itemsize;
    size_t take = (c0 + w->ccols <= w->cols ? w->ccols : w->cols - c0) * w->itemsize;
    for (size_t r = 0; r < w->crows; r++) {
        unsigned char *dst = buf + r * row_bytes;
        if (r0 + r >= w->rows) {
            memset(dst, 0, row_bytes);
            continue;
        }
        memcpy(dst, w->array + ((r0 + r) * w->cols + c0) * w->itemsize, take);
        memset(dst + take, 0, row_bytes - take);
    }
}

static void *write_worker(void *arg) {
    write_job *w = arg;
    size_t chunk = w->crows * w->ccols * w->itemsize, cap = ZSTD_compressBound(chunk);
    unsigned char *buf = malloc(chunk), *frame = malloc(cap);
    ZSTD_CCtx *ctx = ZSTD_createCCtx();
    if (!buf || !frame || !ctx) die("alloc");
    char path[4096];
    for (size_t i; (i = atomic_fetch_add(&w->next, 1)) < w->n;) {
        cut_chunk(w, i, buf);
        ZSTD_CCtx_reset(ctx, ZSTD_reset_session_and_parameters);
        ZSTD_CCtx_setParameter(ctx, ZSTD_c_compressionLevel, w->level);
#ifdef XZ_ZSTD_BUNDLED
        if (w->level <= 4) ZSTD_CCtx_setParameter(ctx, (ZSTD_cParameter)1017, 1);
#endif
        size_t r = ZSTD_compress2(ctx, frame, cap, buf, chunk);
        if (ZSTD_isError(r)) {
            fprintf(stderr, "zstd: %s\n", ZSTD_getErrorName(r));
            exit(1);
        }
        snprintf(path, sizeof path, "%s/%zu", w->dir, i);
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0 || write(fd, frame, r) != (ssize_t)r || close(fd) != 0) die(path);
    }
    ZSTD_freeCCtx(ctx);
    free(buf);
    free(frame);
    return NULL;
}

static void empty_dir(const char *dir, size_t n) {
    char path[4096];
    for (size_t i = 0; i < n; i++) {
        snprintf(path, sizeof path, "%s/%zu", dir, i);
        unlink(path);
    }
}

static double run_zstd_write(write_job *w, int threads) {
    empty_dir(w->dir, w->n);
    atomic_store(&w->next, 0);
    return on_threads(write_worker, w, threads);
}

static write_job *zstd_write_job(char **argv) {
    write_job *w = calloc(1, sizeof *w);
    if (!w) die("calloc");
    w->level = atoi(argv[0]);
    w->rows = strtoull(argv[1], NULL, 10);
    w->cols = strtoull(argv[2], NULL, 10);
    w->crows = strtoull(argv[3], NULL, 10);
    w->ccols = strtoull(argv[4], NULL, 10);
    w->itemsize = strtoull(argv[5], NULL, 10);
    w->dir = argv[7];
    if (!w->rows || !w->cols || !w->crows || !w->ccols || !w->itemsize) exit(2);
    size_t bytes = w->rows * w->cols * w->itemsize;
    unsigned char *array = malloc(bytes);
    if (!array) die("malloc");
    if (read_all(argv[6], array, bytes) != bytes) exit(1);
    w->array = array;
    w->grid_cols = (w->cols + w->ccols - 1) / w->ccols;
    w->n = (w->rows + w->crows - 1) / w->crows * w->grid_cols;
    return w;
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: limits memcpy|read|read-huge RUNS BYTES|FILE, limits zstd RUNS THREADS FILE..., "
                        "limits zstd-write RUNS THREADS LEVEL ROWS COLS CHUNK_ROWS CHUNK_COLS ITEMSIZE FILE DIR\n");
        return 2;
    }
    const char *mode = argv[1];
    int zstd = strcmp(mode, "zstd") == 0, zstd_write = strcmp(mode, "zstd-write") == 0;
    int runs = atoi(argv[2]);
    int threads = zstd || zstd_write ? atoi(argv[3]) : 0;
    if (zstd_write && argc != 12) return 2;
    job *j = zstd ? zstd_job(argc - 4, argv + 4) : NULL;
    write_job *w = zstd_write ? zstd_write_job(argv + 4) : NULL;
    if (runs < 1 || ((zstd || zstd_write) && threads < 1)) return 2;
    double best = 1e30;
    for (int r = 0; r <= runs; r++) {
        double t;
        if (strcmp(mode, "memcpy") == 0)
            t = run_memcpy(strtoull(argv[3], NULL, 10));
        else if (strcmp(mode, "read") == 0 || strcmp(mode, "read-huge") == 0)
            t = run_read(argv[3], mode[4] == '-');
        else if (zstd)
            t = run_zstd(j, threads);
        else if (zstd_write)
            t = run_zstd_write(w, threads);
        else
            return 2;
        if (r > 0 && t < best) best = t;
    }
    printf("%.9f\n", best);
    return 0;
}
