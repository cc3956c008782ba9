/* The machine's limits for workload 14 of `make bench`: what the hardware and the kernel do
 * with no Zarr at all. Built by the bench harness with `cc -O2 ... -lzstd -lpthread`.
 *
 *   limits memcpy RUNS BYTES           memcpy of BYTES between two touched buffers
 *   limits read RUNS FILE              read(2) of a whole file into a fresh malloc'd buffer
 *   limits read-huge RUNS FILE         the same into a fresh mapping advised MADV_HUGEPAGE
 *   limits zstd RUNS THREADS FILE...   every file read(2) and zstd-decoded by THREADS threads
 *                                      into one output buffer (each frame's content size),
 *                                      touched before the runs: no page faults in the timing
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

static double run_zstd(job *j, int threads) {
    double t = now();
    atomic_store(&j->next, 0);
    pthread_t tid[threads];
    for (int i = 0; i < threads; i++)
        if (pthread_create(&tid[i], NULL, worker, j) != 0) die("pthread_create");
    for (int i = 0; i < threads; i++) pthread_join(tid[i], NULL);
    return now() - t;
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

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: limits memcpy|read|read-huge RUNS BYTES|FILE, limits zstd RUNS THREADS FILE...\n");
        return 2;
    }
    const char *mode = argv[1];
    int zstd = strcmp(mode, "zstd") == 0;
    int runs = atoi(argv[2]);
    int threads = zstd ? atoi(argv[3]) : 0;
    job *j = zstd ? zstd_job(argc - 4, argv + 4) : NULL;
    if (runs < 1 || (zstd && threads < 1)) return 2;
    double best = 1e30;
    for (int r = 0; r <= runs; r++) {
        double t;
        if (strcmp(mode, "memcpy") == 0)
            t = run_memcpy(strtoull(argv[3], NULL, 10));
        else if (strcmp(mode, "read") == 0 || strcmp(mode, "read-huge") == 0)
            t = run_read(argv[3], mode[4] == '-');
        else if (zstd)
            t = run_zstd(j, threads);
        else
            return 2;
        if (r > 0 && t < best) best = t;
    }
    printf("%.9f\n", best);
    return 0;
}
