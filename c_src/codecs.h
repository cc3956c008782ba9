/* Compressors of the codec layer, in plain C (no erl_nif) so the fuzz harness builds them too.
 *
 * Every function returns NULL on success or a message describing the failure. Output goes to
 * an xz_out buffer whose memory is managed by xz_out_alloc/xz_out_resize, implemented by the
 * NIF (Erlang binaries) and by the fuzz shim (malloc). On failure the buffer may hold memory
 * that the caller releases. Decoders never write more than `max` bytes; when `exact` is set,
 * `max` is the expected decoded size and is allocated up front. */
#ifndef EXZARR_CODECS_H
#define EXZARR_CODECS_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    uint8_t *data;
    size_t cap;
    void *handle;
    /* Caller memory: when `fixed` is set, `data` holds `fixed` bytes that the codec writes into;
     * asking for up to that many succeeds without allocating, asking for more fails. */
    size_t fixed;
} xz_out;

/* Provided by the user of this file: allocate `n` bytes / resize to `n` bytes; 0 on success.
 * Not called for a fixed output. */
int xz_out_alloc(xz_out *o, size_t n);
int xz_out_resize(xz_out *o, size_t n);

/* An output over `cap` bytes of caller memory at `data` (decoders only). */
#define XZ_OUT_FIXED(data, cap) ((xz_out){(data), 0, NULL, (cap)})

typedef const char *xz_status;

/* Frees the codec contexts this thread cached (zstd, lz4, libdeflate); for threads that end. */
void xz_codecs_thread_release(void);

/* `workers` >= 1: compressed by that many zstd threads, in jobs of XZ_ZSTD_JOB bytes (the frame
 * is the same for any count); 0: on the calling thread. */
#define XZ_ZSTD_JOB (4 << 20)
xz_status xz_zstd_encode(const uint8_t *in, size_t len, int level, int checksum, int workers,
                         xz_out *o, size_t *n);
xz_status xz_zstd_decode(const uint8_t *in, size_t len, size_t max, int exact, xz_out *o, size_t *n);
/* Decodes at least the first `want` bytes (want <= size) of zstd data that must decode to
 * exactly `size` bytes, into `out` (room for `size` bytes); *n is how many bytes are valid.
 * Only one complete frame without a checksum that declares `size` is decoded partly; anything
 * else is decoded in full (and so checked in full). */
xz_status xz_zstd_decode_prefix(const uint8_t *in, size_t len, size_t size, size_t want,
                                uint8_t *out, size_t *n);

xz_status xz_blosc_encode(const uint8_t *in, size_t len, const char *cname, int clevel, int shuffle,
                          size_t typesize, size_t blocksize, xz_out *o, size_t *n);
xz_status xz_blosc_decode(const uint8_t *in, size_t len, size_t max, int exact, xz_out *o, size_t *n);

/* numcodecs LZ4 framing: u32 LE decoded length, then one raw LZ4 block. */
xz_status xz_lz4_encode(const uint8_t *in, size_t len, int acceleration, xz_out *o, size_t *n);
xz_status xz_lz4_decode(const uint8_t *in, size_t len, size_t max, int exact, xz_out *o, size_t *n);

xz_status xz_bz2_encode(const uint8_t *in, size_t len, int level, xz_out *o, size_t *n);
xz_status xz_bz2_decode(const uint8_t *in, size_t len, size_t max, int exact, xz_out *o, size_t *n);

/* One LZMA filter of a filter chain (Python lzma's filter specs). Unset options are -1. */
typedef struct {
    uint64_t id;
    int64_t preset, dict_size, lc, lp, pb, mode, nice_len, mf, depth, dist, start_offset;
} xz_lzma_filter;

#define XZ_LZMA_MAX_FILTERS 4

/* format: 0 auto (decode only), 1 xz, 2 alone, 3 raw; check: -1 default or an lzma_check;
 * preset: -1 default or a preset (with the extreme flag); nfilters 0 = none given. */
xz_status xz_lzma_encode(const uint8_t *in, size_t len, int format, int check, int64_t preset,
                         const xz_lzma_filter *filters, int nfilters, xz_out *o, size_t *n);
xz_status xz_lzma_decode(const uint8_t *in, size_t len, size_t max, int exact, int format,
                         const xz_lzma_filter *filters, int nfilters, xz_out *o, size_t *n);

/* gzip: one RFC 1952 member out; members are concatenated on the way in. zlib: RFC 1950. */
xz_status xz_gzip_encode(const uint8_t *in, size_t len, int level, xz_out *o, size_t *n);
xz_status xz_gzip_decode(const uint8_t *in, size_t len, size_t max, int exact, xz_out *o, size_t *n);
xz_status xz_zlib_encode(const uint8_t *in, size_t len, int level, xz_out *o, size_t *n);
xz_status xz_zlib_decode(const uint8_t *in, size_t len, size_t max, int exact, xz_out *o, size_t *n);

/* A bounded decoder of this file (xz_zstd_decode, xz_blosc_decode, ...). */
typedef xz_status (*xz_decode_fn)(const uint8_t *in, size_t len, size_t max, int exact, xz_out *o,
                                  size_t *n);

/* The decoder the native read paths (output buffer, batch decoder) run for a codec name:
 * "zstd", "blosc", "lz4", "gzip", "zlib", "bz2", or "raw" for data stored as it is (*fn set to
 * NULL). Returns the codec's name as a static string, or NULL for any other name. */
const char *xz_decoder_named(const char *name, xz_decode_fn *fn);

#endif
