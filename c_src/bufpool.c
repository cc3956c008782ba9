/* A pool of large outputs (read outputs of ExZarr.Native.outbuf_*, gathered chunks, decoded and
 * compressed chunks) and scratch memory (the zfp decoder's copy of its input), so that an output
 * reuses memory whose pages are already faulted in instead of memory the kernel must hand over
 * page by page.
 *
 * The VM's own segment cache does that for a second or so and only sometimes: in a bench run a
 * third to a half of the 33.5 MB reads that followed writes faulted in all 8,193 pages of their
 * output (37-44 ms instead of 21-30); 256 KiB chunks read one by one from MinIO and kept in a
 * list faulted in 42-55 of their 64 pages each (0 from the pool); a write of 134 MB in zstd
 * chunks faulted in its 34 MB of compressed chunks (0-400 pages from the pool). Buffers of
 * XZ_POOL_MIN bytes and more that a result frees come here instead; an output takes the
 * smallest held buffer that fits, the newest first, and wastes at most a quarter of it. Bounds:
 * at most XZ_POOL_BUFS buffers and XZ_POOL_BYTES bytes (the oldest go first), and a thread
 * frees every buffer held unused for XZ_POOL_IDLE_MS, so an idle program gives the memory back
 * within seconds. The memory comes from enif_alloc, so :erlang.memory/0 counts it (as system
 * memory) while the pool holds it. */
#include <pthread.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <erl_nif.h>

#include "bufpool.h"
#ifdef XZ_WITH_PCO
#include "pcocodec.h"
#endif

#define XZ_POOL_BYTES ((size_t)256 << 20)
#define XZ_POOL_BUFS 256
#define XZ_POOL_IDLE_MS 5000

typedef struct {
    void *p;
    size_t cap;
    long long since; /* when it was given back, ms */
} held;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wake;
static held pool[XZ_POOL_BUFS];
static size_t count, bytes;
static int stop, started;
/* Set while the trimming thread waits with nothing to time (no buffer held): only then does a
 * new buffer need to wake it; a thread with buffers to time wakes once a second anyway. */
static int waiting;
static ErlNifTid trimmer;

static long long now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long long)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* Drops pool[i] (the lock held); returns the buffer for the caller to free outside it. */
static void *take(size_t i) {
    void *p = pool[i].p;
    bytes -= pool[i].cap;
    pool[i] = pool[--count];
    return p;
}

/* Memory kept elsewhere in the NIF for later calls (pcodec's working memory) that this thread
 * also gives back when idle: `others` is set by xz_bufpool_wake and cleared once nothing is
 * kept there; `others_gen` counts the wakes, so one that comes during a release is not lost. */
static int others;
static unsigned long others_gen;

void xz_bufpool_wake(void) {
    pthread_mutex_lock(&lock);
    others = 1;
    others_gen++;
    pthread_cond_signal(&wake);
    pthread_mutex_unlock(&lock);
}

/* Gives back what the rest of the NIF kept unused for the idle time; the bytes still kept. */
static size_t release_others(void) {
#ifdef XZ_WITH_PCO
    return xz_pco_release_idle(XZ_POOL_IDLE_MS);
#else
    return 0;
#endif
}

/* Frees, outside the lock, the buffers held longer than the idle time (and the other memory
 * kept that long); sleeps while nothing is held. */
static void *trim_loop(void *arg) {
    (void)arg;
    pthread_mutex_lock(&lock);
    while (!stop) {
        if (count == 0 && !others) {
            waiting = 1;
            pthread_cond_wait(&wake, &lock);
            waiting = 0;
            continue;
        }
        struct timespec t;
        clock_gettime(CLOCK_MONOTONIC, &t);
        t.tv_sec += 1;
        pthread_cond_timedwait(&wake, &lock, &t);
        void *old[XZ_POOL_BUFS];
        size_t n = 0;
        long long limit = now_ms() - XZ_POOL_IDLE_MS;
        for (size_t i = 0; i < count;)
            if (pool[i].since <= limit) old[n++] = take(i);
            else i++;
        unsigned long gen = others_gen;
        pthread_mutex_unlock(&lock);
        for (size_t i = 0; i < n; i++) enif_free(old[i]);
        size_t kept = release_others();
        pthread_mutex_lock(&lock);
        if (kept == 0 && gen == others_gen) others = 0;
    }
    pthread_mutex_unlock(&lock);
    return NULL;
}

struct xz_block {
    uint8_t *data;
    size_t cap;
};

static ErlNifResourceType *block_type;

static void block_dtor(ErlNifEnv *env, void *obj) {
    (void)env;
    xz_block *b = obj;
    xz_bufpool_put(b->data, b->cap);
}

xz_block *xz_block_new(size_t size, uint8_t **data) {
    xz_block *b = enif_alloc_resource(block_type, sizeof(xz_block));
    if (!b) return NULL;
    b->data = xz_bufpool_get(size, &b->cap);
    if (!b->data) {
        enif_release_resource(b);
        return NULL;
    }
    *data = b->data;
    return b;
}

ERL_NIF_TERM xz_block_binary(ErlNifEnv *env, xz_block *b, size_t size) {
    ERL_NIF_TERM bin = enif_make_resource_binary(env, b, b->data, size);
    enif_release_resource(b);
    return bin;
}

/* The block never became a binary: its memory goes back to the pool now (the VM may run a
 * released resource's destructor later, while the next output of this thread wants it). */
void xz_block_drop(xz_block *b) {
    xz_bufpool_put(b->data, b->cap);
    b->data = NULL;
    enif_release_resource(b);
}

uint8_t *xz_result_alloc(xz_result *r, size_t size) {
    uint8_t *data = NULL;
    r->block = NULL;
    if (size >= XZ_POOL_MIN) r->block = xz_block_new(size, &data);
    else if (enif_alloc_binary(size, &r->bin)) data = r->bin.data;
    return data;
}

ERL_NIF_TERM xz_result_term(ErlNifEnv *env, xz_result *r, size_t size) {
    return r->block ? xz_block_binary(env, r->block, size) : enif_make_binary(env, &r->bin);
}

void xz_result_release(xz_result *r) {
    if (r->block) xz_block_drop(r->block);
    else enif_release_binary(&r->bin);
}

int xz_bufpool_load(ErlNifEnv *env) {
    block_type = enif_open_resource_type(env, NULL, "exzarr_block", block_dtor,
                                         ERL_NIF_RT_CREATE, NULL);
    if (!block_type) return 0;
    pthread_condattr_t a;
    if (pthread_condattr_init(&a) || pthread_condattr_setclock(&a, CLOCK_MONOTONIC) ||
        pthread_cond_init(&wake, &a))
        return 0;
    pthread_condattr_destroy(&a);
    stop = 0;
    started = enif_thread_create("exzarr_bufpool", &trimmer, trim_loop, NULL, NULL) == 0;
    return started;
}

void xz_bufpool_unload(void) {
    pthread_mutex_lock(&lock);
    stop = 1;
    pthread_cond_signal(&wake);
    pthread_mutex_unlock(&lock);
    if (started) enif_thread_join(trimmer, NULL);
    started = 0;
    while (count) enif_free(take(0));
    pthread_cond_destroy(&wake);
}

void *xz_bufpool_get(size_t size, size_t *cap) {
    if (size >= XZ_POOL_MIN) {
        pthread_mutex_lock(&lock);
        /* From the newest down (a buffer given back last is the likeliest still in cache). */
        size_t best = count;
        for (size_t i = count; i-- > 0;)
            if (pool[i].cap >= size && pool[i].cap - size <= pool[i].cap / 4 &&
                (best == count || pool[i].cap < pool[best].cap))
                best = i;
        if (best < count) {
            *cap = pool[best].cap;
            void *p = take(best);
            pthread_mutex_unlock(&lock);
            return p;
        }
        pthread_mutex_unlock(&lock);
    }
    *cap = size ? size : 1;
    return enif_alloc(*cap);
}

void xz_bufpool_put(void *p, size_t cap) {
    if (!p) return;
    if (cap < XZ_POOL_MIN || cap > XZ_POOL_BYTES || !started) {
        enif_free(p);
        return;
    }
    void *old[XZ_POOL_BUFS];
    size_t n = 0;
    pthread_mutex_lock(&lock);
    /* Room for it: the oldest go first. */
    while (count == XZ_POOL_BUFS || bytes + cap > XZ_POOL_BYTES) {
        size_t oldest = 0;
        for (size_t i = 1; i < count; i++)
            if (pool[i].since < pool[oldest].since) oldest = i;
        old[n++] = take(oldest);
    }
    pool[count++] = (held){p, cap, now_ms()};
    bytes += cap;
    if (waiting) pthread_cond_signal(&wake);
    pthread_mutex_unlock(&lock);
    for (size_t i = 0; i < n; i++) enif_free(old[i]);
}

void xz_bufpool_drop_tail(uint8_t *data, size_t used, size_t cap) {
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t from = ((uintptr_t)data + used + page - 1) & ~(page - 1);
    uintptr_t to = ((uintptr_t)data + cap) & ~(page - 1);
    if (to > from) madvise((void *)from, to - from, MADV_DONTNEED);
}

void xz_bufpool_stats(size_t *c, size_t *b) {
    pthread_mutex_lock(&lock);
    *c = count;
    *b = bytes;
    pthread_mutex_unlock(&lock);
}
