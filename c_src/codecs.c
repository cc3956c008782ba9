/* Compressors of the codec layer: zstd, blosc, numcodecs lz4, bz2, lzma/xz, gzip and zlib. */
#include "codecs.h"

#include <blosc.h>
#include <bzlib.h>
#include <libdeflate.h>
#include <limits.h>
#include <lz4.h>
#include <lzma.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
/* (for zstd's buffer-less decoding API: ZSTD_decompressBegin/Continue) */
#define ZSTD_STATIC_LINKING_ONLY
#include <zstd.h>

/* liblzma decoders may not use more memory than this (a hostile header can ask for more);
 * xz -9 data needs 65 MiB. */
#define XZ_LZMA_MEMLIMIT ((uint64_t)1 << 28)
/* Encoders neither (a configuration can ask for a 1.5 GiB dictionary, about 16 GiB of
 * encoder state); preset 9 with the extreme flag needs 674 MiB. */
#define XZ_LZMA_ENC_MEMLIMIT ((uint64_t)1 << 30)

static __thread char errbuf[256];

__attribute__((format(printf, 1, 2))) static xz_status errf(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(errbuf, sizeof errbuf, fmt, ap);
    va_end(ap);
    return errbuf;
}

static const char OOM[] = "out of memory";

/* Output memory: the user's allocator, or the fixed caller memory of a fixed output. */
static int out_alloc(xz_out *o, size_t n) {
    if (!o->fixed) return xz_out_alloc(o, n);
    if (n > o->fixed) return -1;
    o->cap = n;
    return 0;
}

static int out_resize(xz_out *o, size_t n) {
    if (!o->fixed) return xz_out_resize(o, n);
    if (n > o->fixed) return -1;
    o->cap = n;
    return 0;
}

static size_t min_size(size_t a, size_t b) { return a < b ? a : b; }

/* First output capacity of a decoder that may have to grow its buffer. */
static size_t first_cap(size_t len, size_t max, int exact) {
    if (exact) return max;
    size_t guess = len > SIZE_MAX / 4 ? SIZE_MAX : len * 4;
    return min_size(guess < 65536 ? 65536 : guess, max);
}

/* Doubles the output capacity up to max: 0 grown, 1 already at max, -1 out of memory. */
static int grow(xz_out *o, size_t max) {
    if (o->cap >= max) return 1;
    size_t cap = o->cap > max / 2 ? max : o->cap * 2;
    if (cap < 4096) cap = min_size(4096, max);
    return out_resize(o, cap) == 0 ? 0 : -1;
}

static xz_status finish(xz_out *o, size_t used, size_t *n) {
    if (used != o->cap && out_resize(o, used) != 0) return OOM;
    *n = used;
    return NULL;
}

static xz_status check_size(const char *codec, size_t declared, size_t max, int exact) {
    if (declared > max)
        return errf("%s: data declares %zu decoded bytes, more than the %zu allowed", codec, declared,
                    max);
    if (exact && declared != max)
        return errf("%s: data declares %zu decoded bytes, expected %zu", codec, declared, max);
    return NULL;
}

static xz_status stuck(const char *codec, const xz_out *o, size_t pos, size_t max) {
    if (pos == o->cap && o->cap >= max)
        return errf("%s: decoded data exceeds the %zu bytes allowed", codec, max);
    return errf("%s: truncated data", codec);
}

/* ---- zstd ---- */

static __thread ZSTD_CCtx *zstd_c;

/* Sum of the content sizes of all frames (stable-API version of ZSTD_findDecompressedSize). */
static unsigned long long zstd_total_size(const uint8_t *in, size_t len) {
    unsigned long long total = 0;
    int unknown = 0;
    while (len > 0) {
        unsigned long long fcs = ZSTD_getFrameContentSize(in, len);
        if (fcs == ZSTD_CONTENTSIZE_ERROR) return fcs;
        if (fcs == ZSTD_CONTENTSIZE_UNKNOWN) unknown = 1;
        else if (__builtin_add_overflow(total, fcs, &total)) return ZSTD_CONTENTSIZE_ERROR;
        size_t frame = ZSTD_findFrameCompressedSize(in, len);
        if (ZSTD_isError(frame) || frame == 0 || frame > len) return ZSTD_CONTENTSIZE_ERROR;
        in += frame;
        len -= frame;
    }
    return unknown ? ZSTD_CONTENTSIZE_UNKNOWN : total;
}
static __thread ZSTD_DCtx *zstd_d;

#ifdef XZ_ZSTD_BUNDLED
/* zstd 1.5.7 splits 128 KiB blocks before compressing them (ZSTD_c_blockSplitterLevel, an
 * experimental parameter Debian's 1.5.4 header does not name; 1 turns it off). At the fast and
 * double-fast levels (1-4 for chunks over 256 KiB) that costs 1-5% of the time for no smaller
 * frames on numeric chunks (float64 4 MiB chunks at level 3: 0.330 of the size unsplit, 0.332
 * split; bfloat16 0.448 and 0.447), so there it is off: blocks as zstd 1.5.6 and the peers'
 * bundled copies cut them. Slower levels keep it. */
#define XZ_ZSTD_BLOCK_SPLITTER ((ZSTD_cParameter)1017)
#define XZ_ZSTD_NO_SPLIT_LEVEL 4
#endif

/* With `workers` >= 1, zstd's own threads compress jobs of XZ_ZSTD_JOB input bytes in parallel
 * (a context of its own per call, freed after: its threads do not outlive the call); the frame
 * is the same for any number of workers, so for any machine; 0 compresses on this thread.
 * 4 MiB jobs: zstd's default at level 3 is 8 MiB, which holds about twice the memory in flight
 * for 0.07% smaller frames. A zstd built without multithreading compresses on this thread. */
xz_status xz_zstd_encode(const uint8_t *in, size_t len, int level, int checksum, int workers,
                         xz_out *o, size_t *n) {
    if (level < ZSTD_minCLevel() || level > ZSTD_maxCLevel())
        return errf("zstd: level must be %d..%d", ZSTD_minCLevel(), ZSTD_maxCLevel());
    ZSTD_CCtx *c;
    if (workers > 0) {
        if (!(c = ZSTD_createCCtx())) return OOM;
    } else {
        if (!zstd_c && !(zstd_c = ZSTD_createCCtx())) return OOM;
        c = zstd_c;
        ZSTD_CCtx_reset(c, ZSTD_reset_session_and_parameters);
    }
    size_t r = ZSTD_CCtx_setParameter(c, ZSTD_c_compressionLevel, level);
    if (!ZSTD_isError(r)) r = ZSTD_CCtx_setParameter(c, ZSTD_c_checksumFlag, checksum ? 1 : 0);
    if (!ZSTD_isError(r)) r = ZSTD_CCtx_setParameter(c, ZSTD_c_contentSizeFlag, 1);
#ifdef XZ_ZSTD_BUNDLED
    if (!ZSTD_isError(r) && level <= XZ_ZSTD_NO_SPLIT_LEVEL)
        r = ZSTD_CCtx_setParameter(c, XZ_ZSTD_BLOCK_SPLITTER, 1);
#endif
    if (!ZSTD_isError(r) && workers > 0 &&
        !ZSTD_isError(ZSTD_CCtx_setParameter(c, ZSTD_c_nbWorkers, workers)))
        r = ZSTD_CCtx_setParameter(c, ZSTD_c_jobSize, XZ_ZSTD_JOB);
    size_t bound = ZSTD_compressBound(len);
    xz_status e = NULL;
    if (ZSTD_isError(r)) e = errf("zstd: %s", ZSTD_getErrorName(r));
    else if (ZSTD_isError(bound)) e = "zstd: input too large";
    else if (out_alloc(o, bound) != 0) e = OOM;
    else if (ZSTD_isError(r = ZSTD_compress2(c, o->data, bound, in, len)))
        e = errf("zstd: %s", ZSTD_getErrorName(r));
    if (c != zstd_c) ZSTD_freeCCtx(c);
    return e ? e : finish(o, r, n);
}

xz_status xz_zstd_decode(const uint8_t *in, size_t len, size_t max, int exact, xz_out *o, size_t *n) {
    if (len == 0) return "zstd: empty input";
    if (!zstd_d && !(zstd_d = ZSTD_createDCtx())) return OOM;
    ZSTD_DCtx_reset(zstd_d, ZSTD_reset_session_and_parameters);
    unsigned long long total = zstd_total_size(in, len);
    if (total == ZSTD_CONTENTSIZE_ERROR) return "zstd: not valid zstd data (corrupt or truncated frame)";
    if (total != ZSTD_CONTENTSIZE_UNKNOWN) {
        /* Every frame declares its size: decode in one shot into a buffer of exactly that size. */
        xz_status e = check_size("zstd", total > SIZE_MAX ? SIZE_MAX : (size_t)total, max, exact);
        if (e) return e;
        if (out_alloc(o, (size_t)total) != 0) return OOM;
        size_t r = ZSTD_decompressDCtx(zstd_d, o->data, (size_t)total, in, len);
        if (ZSTD_isError(r)) return errf("zstd: %s", ZSTD_getErrorName(r));
        if (r != total) return "zstd: frame content size does not match its data";
        *n = r;
        return NULL;
    }
    /* Some writers omit the content size: stream into a buffer that grows up to max. */
    if (out_alloc(o, first_cap(len, max, exact)) != 0) return OOM;
    ZSTD_inBuffer ib = {in, len, 0};
    ZSTD_outBuffer ob = {o->data, o->cap, 0};
    for (;;) {
        size_t ip = ib.pos, op = ob.pos;
        size_t r = ZSTD_decompressStream(zstd_d, &ob, &ib);
        if (ZSTD_isError(r)) return errf("zstd: %s", ZSTD_getErrorName(r));
        if (r == 0 && ib.pos == ib.size) break;
        if (ob.pos == ob.size) {
            int g = grow(o, max);
            if (g < 0) return OOM;
            if (g == 0) {
                ob.dst = o->data;
                ob.size = o->cap;
                continue;
            }
        }
        if (ib.pos == ip && ob.pos == op) return stuck("zstd", o, ob.pos, max);
    }
    return finish(o, ob.pos, n);
}

/* One frame (magic, header descriptor without the checksum flag) declaring `size` bytes whose
 * blocks end exactly at the end of the data: its prefix can be decoded alone. */
static int zstd_plain_frame(const uint8_t *in, size_t len, size_t size) {
    if (len < 5) return 0;
    uint32_t magic = (uint32_t)in[0] | (uint32_t)in[1] << 8 | (uint32_t)in[2] << 16 | (uint32_t)in[3] << 24;
    if (magic != ZSTD_MAGICNUMBER || (in[4] & 4)) return 0;
    return ZSTD_getFrameContentSize(in, len) == (unsigned long long)size &&
           ZSTD_findFrameCompressedSize(in, len) == len;
}

/* Decodes the blocks of a plain frame (zstd_plain_frame) one by one straight into `out` (room
 * for `size` bytes) until its first `want` bytes are there, with zstd's buffer-less API: the
 * output is the window, so nothing is copied out of one (streaming decoding would). 0 when
 * the frame does not decode so; *n the bytes decoded (whole blocks, so `want` or more). */
static int zstd_prefix_blocks(const uint8_t *in, size_t len, size_t size, size_t want,
                              uint8_t *out, size_t *n) {
    if (!zstd_d && !(zstd_d = ZSTD_createDCtx())) return 0;
    if (ZSTD_isError(ZSTD_decompressBegin(zstd_d))) return 0;
    size_t ip = 0, op = 0;
    while (op < want) {
        size_t next = ZSTD_nextSrcSizeToDecompress(zstd_d);
        if (next == 0 || next > len - ip) return 0;
        size_t r = ZSTD_decompressContinue(zstd_d, out + op, size - op, in + ip, next);
        if (ZSTD_isError(r)) return 0;
        ip += next;
        op += r;
    }
    *n = op;
    return 1;
}

xz_status xz_zstd_decode_prefix(const uint8_t *in, size_t len, size_t size, size_t want,
                                uint8_t *out, size_t *n) {
    /* Decoding stops after the block holding the last byte wanted: a prefix that ends in the
     * frame's last block costs what the whole frame does. A frame that does not decode in
     * part (corrupt) is decoded whole below, which says why. */
    if (want < size && zstd_plain_frame(in, len, size) &&
        zstd_prefix_blocks(in, len, size, want, out, n))
        return NULL;
    xz_out o = XZ_OUT_FIXED(out, size);
    xz_status e = xz_zstd_decode(in, len, size, 1, &o, n);
    if (!e && *n != size) return errf("zstd: decoded %zu bytes, expected %zu", *n, size);
    return e;
}

/* ---- blosc ---- */

xz_status xz_blosc_encode(const uint8_t *in, size_t len, const char *cname, int clevel, int shuffle,
                          size_t typesize, size_t blocksize, xz_out *o, size_t *n) {
    if (len > BLOSC_MAX_BUFFERSIZE) return errf("blosc: input of %zu bytes is too large", len);
    if (blosc_compname_to_compcode(cname) < 0) return errf("blosc: unknown compressor %s", cname);
    if (clevel < 0 || clevel > 9) return "blosc: clevel must be 0..9";
    if (shuffle < 0 || shuffle > 2) return "blosc: shuffle must be 0, 1 or 2";
    /* c-blosc keeps both in an int32: beyond, it divides by zero or a negative size. */
    if (typesize == 0 || typesize > INT32_MAX) return "blosc: typesize must be 1..2147483647";
    if (blocksize > INT32_MAX) return "blosc: blocksize must be 0..2147483647";
    size_t cap = len + BLOSC_MAX_OVERHEAD;
    if (out_alloc(o, cap) != 0) return OOM;
    int r = blosc_compress_ctx(clevel, shuffle, typesize, len, in, o->data, cap, cname, blocksize, 1);
    if (r <= 0) return errf("blosc: compression failed (%d)", r);
    return finish(o, (size_t)r, n);
}

xz_status xz_blosc_decode(const uint8_t *in, size_t len, size_t max, int exact, xz_out *o, size_t *n) {
    size_t nbytes;
    if (len < BLOSC_MIN_HEADER_LENGTH) return "blosc: input shorter than the 16-byte header";
    if (blosc_cbuffer_validate(in, len, &nbytes) != 0)
        return "blosc: invalid header (sizes inconsistent with the input)";
    xz_status e = check_size("blosc", nbytes, max, exact);
    if (e) return e;
    if (out_alloc(o, nbytes) != 0) return OOM;
    int r = blosc_decompress_ctx(in, o->data, nbytes, 1);
    if (r < 0 || (size_t)r != nbytes) return errf("blosc: corrupt data (%d)", r);
    *n = nbytes;
    return NULL;
}

/* ---- lz4 (numcodecs framing) ---- */

static __thread void *lz4_state;

xz_status xz_lz4_encode(const uint8_t *in, size_t len, int acceleration, xz_out *o, size_t *n) {
    if (len > LZ4_MAX_INPUT_SIZE) return errf("lz4: input of %zu bytes is too large", len);
    if (!lz4_state && !(lz4_state = malloc((size_t)LZ4_sizeofState()))) return OOM;
    int bound = LZ4_compressBound((int)len);
    if (out_alloc(o, 4 + (size_t)bound) != 0) return OOM;
    uint32_t header = (uint32_t)len;
    for (int i = 0; i < 4; i++) o->data[i] = (uint8_t)(header >> (8 * i));
    int r = LZ4_compress_fast_extState(lz4_state, (const char *)in, (char *)o->data + 4, (int)len, bound,
                                       acceleration);
    if (r <= 0) return "lz4: compression failed";
    return finish(o, 4 + (size_t)r, n);
}

xz_status xz_lz4_decode(const uint8_t *in, size_t len, size_t max, int exact, xz_out *o, size_t *n) {
    if (len < 4) return "lz4: input shorter than the 4-byte length header";
    if (len - 4 > INT_MAX) return "lz4: input too large";
    size_t size = (size_t)in[0] | (size_t)in[1] << 8 | (size_t)in[2] << 16 | (size_t)in[3] << 24;
    xz_status e = check_size("lz4", size, max, exact);
    if (e) return e;
    if (size > (size_t)LZ4_MAX_INPUT_SIZE) return "lz4: declared size too large";
    if (out_alloc(o, size) != 0) return OOM;
    int r = LZ4_decompress_safe((const char *)in + 4, (char *)o->data, (int)(len - 4), (int)size);
    if (r < 0 || (size_t)r != size) return "lz4: corrupt or truncated data";
    *n = size;
    return NULL;
}

/* ---- bz2 ---- */

xz_status xz_bz2_encode(const uint8_t *in, size_t len, int level, xz_out *o, size_t *n) {
    if (level < 1 || level > 9) return "bz2: level must be 1..9";
    if (len > UINT_MAX / 2) return errf("bz2: input of %zu bytes is too large", len);
    unsigned cap = (unsigned)(len + len / 100 + 600);
    if (out_alloc(o, cap) != 0) return OOM;
    int r = BZ2_bzBuffToBuffCompress((char *)o->data, &cap, (char *)in, (unsigned)len, level, 0, 0);
    if (r != BZ_OK) return errf("bz2: compression failed (%d)", r);
    return finish(o, cap, n);
}

/* Python's bz2.decompress: concatenated streams, each must end with its end-of-stream marker. */
xz_status xz_bz2_decode(const uint8_t *in, size_t len, size_t max, int exact, xz_out *o, size_t *n) {
    if (len == 0) return "bz2: empty input";
    if (out_alloc(o, first_cap(len, max, exact)) != 0) return OOM;
    size_t ip = 0, pos = 0;
    while (ip < len) {
        bz_stream s;
        memset(&s, 0, sizeof s);
        if (BZ2_bzDecompressInit(&s, 0, 0) != BZ_OK) return OOM;
        for (;;) {
            unsigned ain = (unsigned)min_size(len - ip, UINT_MAX);
            unsigned aout = (unsigned)min_size(o->cap - pos, UINT_MAX);
            s.next_in = (char *)in + ip;
            s.avail_in = ain;
            s.next_out = (char *)o->data + pos;
            s.avail_out = aout;
            int r = BZ2_bzDecompress(&s);
            size_t used_in = ain - s.avail_in, used_out = aout - s.avail_out;
            ip += used_in;
            pos += used_out;
            if (r == BZ_STREAM_END) break;
            if (r != BZ_OK) {
                BZ2_bzDecompressEnd(&s);
                return errf("bz2: corrupt data (%d)", r);
            }
            if (pos == o->cap) {
                int g = grow(o, max);
                if (g < 0) {
                    BZ2_bzDecompressEnd(&s);
                    return OOM;
                }
                if (g == 0) continue;
            }
            if (used_in == 0 && used_out == 0) {
                BZ2_bzDecompressEnd(&s);
                return stuck("bz2", o, pos, max);
            }
        }
        BZ2_bzDecompressEnd(&s);
    }
    return finish(o, pos, n);
}

/* ---- lzma / xz ---- */

typedef struct {
    lzma_filter chain[XZ_LZMA_MAX_FILTERS + 1];
    lzma_options_lzma lzma[XZ_LZMA_MAX_FILTERS];
    lzma_options_delta delta[XZ_LZMA_MAX_FILTERS];
    lzma_options_bcj bcj[XZ_LZMA_MAX_FILTERS];
} lzma_chain;

static int opt_u32(int64_t v, uint32_t *field) {
    if (v < 0) return 1;
    if (v > UINT32_MAX) return 0;
    *field = (uint32_t)v;
    return 1;
}

static xz_status build_chain(const xz_lzma_filter *f, int nf, lzma_chain *c) {
    if (nf < 1 || nf > XZ_LZMA_MAX_FILTERS) return "lzma: a filter chain has 1 to 4 filters";
    for (int i = 0; i < nf; i++) {
        c->chain[i].id = f[i].id;
        switch (f[i].id) {
        case LZMA_FILTER_LZMA1:
        case LZMA_FILTER_LZMA2: {
            lzma_options_lzma *l = &c->lzma[i];
            int64_t preset = f[i].preset < 0 ? LZMA_PRESET_DEFAULT : f[i].preset;
            if (preset > UINT32_MAX || lzma_lzma_preset(l, (uint32_t)preset)) return "lzma: invalid preset";
            uint32_t mode = l->mode, mf = l->mf;
            if (!opt_u32(f[i].dict_size, &l->dict_size) || !opt_u32(f[i].lc, &l->lc) ||
                !opt_u32(f[i].lp, &l->lp) || !opt_u32(f[i].pb, &l->pb) || !opt_u32(f[i].mode, &mode) ||
                !opt_u32(f[i].nice_len, &l->nice_len) || !opt_u32(f[i].mf, &mf) ||
                !opt_u32(f[i].depth, &l->depth))
                return "lzma: filter option out of range";
            l->mode = (lzma_mode)mode;
            l->mf = (lzma_match_finder)mf;
            c->chain[i].options = l;
            break;
        }
        case LZMA_FILTER_DELTA:
            c->delta[i].type = LZMA_DELTA_TYPE_BYTE;
            c->delta[i].dist = 1;
            if (!opt_u32(f[i].dist, &c->delta[i].dist)) return "lzma: delta dist out of range";
            c->chain[i].options = &c->delta[i];
            break;
        case LZMA_FILTER_X86:
        case LZMA_FILTER_POWERPC:
        case LZMA_FILTER_IA64:
        case LZMA_FILTER_ARM:
        case LZMA_FILTER_ARMTHUMB:
        case LZMA_FILTER_SPARC:
            c->bcj[i].start_offset = 0;
            if (!opt_u32(f[i].start_offset, &c->bcj[i].start_offset))
                return "lzma: start_offset out of range";
            c->chain[i].options = &c->bcj[i];
            break;
        default:
            return errf("lzma: unsupported filter id %llu", (unsigned long long)f[i].id);
        }
    }
    c->chain[nf].id = LZMA_VLI_UNKNOWN;
    c->chain[nf].options = NULL;
    return NULL;
}

static xz_status lzma_err(const char *what, lzma_ret r) {
    switch (r) {
    case LZMA_MEM_ERROR: return OOM;
    case LZMA_MEMLIMIT_ERROR: return errf("lzma: %s needs more than %llu bytes of memory", what,
                                          (unsigned long long)XZ_LZMA_MEMLIMIT);
    case LZMA_FORMAT_ERROR: return errf("lzma: %s: input is not in the expected format", what);
    case LZMA_OPTIONS_ERROR: return errf("lzma: %s: unsupported options", what);
    case LZMA_DATA_ERROR: return errf("lzma: %s: corrupt data", what);
    case LZMA_UNSUPPORTED_CHECK: return errf("lzma: %s: unsupported integrity check", what);
    default: return errf("lzma: %s failed (%d)", what, (int)r);
    }
}

/* Runs an initialised lzma stream over all of `in`, growing the output up to max. */
static xz_status lzma_run(lzma_stream *s, const char *what, const uint8_t *in, size_t len, size_t max,
                          xz_out *o, size_t *n) {
    s->next_in = in;
    s->avail_in = len;
    s->next_out = o->data;
    s->avail_out = o->cap;
    for (;;) {
        size_t ain = s->avail_in, aout = s->avail_out;
        lzma_ret r = lzma_code(s, LZMA_FINISH);
        if (r == LZMA_STREAM_END) break;
        if (r != LZMA_OK && r != LZMA_BUF_ERROR) return lzma_err(what, r);
        size_t pos = o->cap - s->avail_out;
        if (s->avail_out == 0) {
            int g = grow(o, max);
            if (g < 0) return OOM;
            if (g == 0) {
                s->next_out = o->data + pos;
                s->avail_out = o->cap - pos;
                continue;
            }
        }
        if (r == LZMA_BUF_ERROR || (s->avail_in == ain && s->avail_out == aout))
            return stuck("lzma", o, pos, max);
    }
    return finish(o, o->cap - s->avail_out, n);
}

xz_status xz_lzma_encode(const uint8_t *in, size_t len, int format, int check, int64_t preset,
                         const xz_lzma_filter *filters, int nfilters, xz_out *o, size_t *n) {
    lzma_chain c;
    lzma_stream s = LZMA_STREAM_INIT;
    lzma_ret r;
    xz_status e;
    if (preset < 0) preset = LZMA_PRESET_DEFAULT;
    if (preset > UINT32_MAX) return "lzma: invalid preset";
    if (nfilters > 0 && (e = build_chain(filters, nfilters, &c))) return e;
    if (format != 1 && check != -1 && check != LZMA_CHECK_NONE)
        return "lzma: an integrity check is only possible with format 1 (xz)";
    lzma_check chk = check < 0 ? LZMA_CHECK_CRC64 : (lzma_check)check;
    if (format == 1 && (check > LZMA_CHECK_ID_MAX || !lzma_check_is_supported(chk)))
        return "lzma: unsupported integrity check";
    /* The encoder's memory, known before it allocates any (UINT64_MAX: invalid options). */
    uint64_t need = nfilters ? lzma_raw_encoder_memusage(c.chain) : lzma_easy_encoder_memusage((uint32_t)preset);
    if (need == UINT64_MAX) return "lzma: encoder: unsupported options";
    if (need > XZ_LZMA_ENC_MEMLIMIT)
        return errf("lzma: the encoder settings need %llu bytes of memory, more than the %llu allowed",
                    (unsigned long long)need, (unsigned long long)XZ_LZMA_ENC_MEMLIMIT);
    switch (format) {
    case 1:
        r = nfilters ? lzma_stream_encoder(&s, c.chain, chk) : lzma_easy_encoder(&s, (uint32_t)preset, chk);
        break;
    case 2:
        if (nfilters > 1 || (nfilters == 1 && c.chain[0].id != LZMA_FILTER_LZMA1))
            return "lzma: format 2 (alone) takes a single LZMA1 filter";
        if (nfilters == 0) {
            if (lzma_lzma_preset(&c.lzma[0], (uint32_t)preset)) return "lzma: invalid preset";
        }
        r = lzma_alone_encoder(&s, &c.lzma[0]);
        break;
    case 3:
        if (nfilters == 0) return "lzma: format 3 (raw) needs a filter chain";
        r = lzma_raw_encoder(&s, c.chain);
        break;
    default:
        return "lzma: format must be 1 (xz), 2 (alone) or 3 (raw) to encode";
    }
    if (r != LZMA_OK) return lzma_err("encoder", r);
    size_t cap = lzma_stream_buffer_bound(len);
    if (cap == 0 || out_alloc(o, cap) != 0) {
        lzma_end(&s);
        return OOM;
    }
    e = lzma_run(&s, "encoder", in, len, SIZE_MAX, o, n);
    lzma_end(&s);
    return e;
}

xz_status xz_lzma_decode(const uint8_t *in, size_t len, size_t max, int exact, int format,
                         const xz_lzma_filter *filters, int nfilters, xz_out *o, size_t *n) {
    lzma_chain c;
    lzma_stream s = LZMA_STREAM_INIT;
    lzma_ret r;
    xz_status e;
    if (len == 0) return "lzma: empty input";
    if (nfilters > 0 && (e = build_chain(filters, nfilters, &c))) return e;
    switch (format) {
    case 0: r = lzma_auto_decoder(&s, XZ_LZMA_MEMLIMIT, LZMA_CONCATENATED); break;
    case 1: r = lzma_stream_decoder(&s, XZ_LZMA_MEMLIMIT, LZMA_CONCATENATED); break;
    case 2: r = lzma_alone_decoder(&s, XZ_LZMA_MEMLIMIT); break;
    case 3:
        if (nfilters == 0) return "lzma: format 3 (raw) needs a filter chain";
        if (lzma_raw_decoder_memusage(c.chain) > XZ_LZMA_MEMLIMIT) return lzma_err("decoder", LZMA_MEMLIMIT_ERROR);
        r = lzma_raw_decoder(&s, c.chain);
        break;
    default: return "lzma: format must be 0 (auto), 1 (xz), 2 (alone) or 3 (raw)";
    }
    if (r != LZMA_OK) return lzma_err("decoder", r);
    /* liblzma cannot finish a stream into a full buffer: decode with one spare byte, which
     * only data beyond max can fill. */
    size_t limit = max < SIZE_MAX ? max + 1 : max;
    if (out_alloc(o, first_cap(len, limit, exact)) != 0) {
        lzma_end(&s);
        return OOM;
    }
    e = lzma_run(&s, "decoder", in, len, limit, o, n);
    lzma_end(&s);
    if (!e && *n > max) return errf("lzma: decoded data exceeds the %zu bytes allowed", max);
    return e;
}

/* ---- gzip / zlib (libdeflate) ---- */

static __thread struct libdeflate_decompressor *deflate_d;
static __thread struct libdeflate_compressor *deflate_c[13];

typedef enum libdeflate_result (*deflate_decode_fn)(struct libdeflate_decompressor *, const void *,
                                                    size_t, void *, size_t, size_t *, size_t *);

static xz_status deflate_encode(int gzip, const uint8_t *in, size_t len, int level, xz_out *o, size_t *n) {
    const char *codec = gzip ? "gzip" : "zlib";
    if (level < 0 || level > 12) return errf("%s: level must be 0..12", codec);
    struct libdeflate_compressor **c = &deflate_c[level];
    if (!*c && !(*c = libdeflate_alloc_compressor(level))) return OOM;
    size_t bound = gzip ? libdeflate_gzip_compress_bound(*c, len) : libdeflate_zlib_compress_bound(*c, len);
    if (out_alloc(o, bound) != 0) return OOM;
    size_t r = gzip ? libdeflate_gzip_compress(*c, in, len, o->data, bound)
                    : libdeflate_zlib_compress(*c, in, len, o->data, bound);
    if (r == 0) return errf("%s: compression failed", codec);
    return finish(o, r, n);
}

/* Decodes one stream (zlib) or concatenated members (gzip, zero padding between them allowed).
 * When the size is not known the buffer starts at the hint and grows; a member that does not fit
 * is decoded again into the bigger buffer. */
static xz_status deflate_decode(int gzip, const uint8_t *in, size_t len, size_t max, int exact,
                                xz_out *o, size_t *n) {
    const char *codec = gzip ? "gzip" : "zlib";
    deflate_decode_fn fn = gzip ? libdeflate_gzip_decompress_ex : libdeflate_zlib_decompress_ex;
    if (len == 0) return errf("%s: empty input", codec);
    if (!deflate_d && !(deflate_d = libdeflate_alloc_decompressor())) return OOM;
    size_t cap = first_cap(len, max, exact);
    if (gzip && !exact && len >= 18) {
        /* ISIZE, the last member's size mod 2^32: a good first guess for one member. */
        size_t isize = (size_t)in[len - 4] | (size_t)in[len - 3] << 8 | (size_t)in[len - 2] << 16 |
                       (size_t)in[len - 1] << 24;
        if (isize <= max) cap = isize;
    }
    if (out_alloc(o, cap) != 0) return OOM;
    size_t ip = 0, pos = 0;
    for (;;) {
        size_t used_in = 0, used_out = 0;
        enum libdeflate_result r = fn(deflate_d, in + ip, len - ip, o->data + pos, o->cap - pos, &used_in, &used_out);
        if (r == LIBDEFLATE_INSUFFICIENT_SPACE) {
            int g = grow(o, max);
            if (g < 0) return OOM;
            if (g > 0) return errf("%s: decoded data exceeds the %zu bytes allowed", codec, max);
            continue;
        }
        if (r != LIBDEFLATE_SUCCESS) return errf("%s: corrupt or truncated data", codec);
        ip += used_in;
        pos += used_out;
        if (gzip)
            while (ip < len && in[ip] == 0) ip++;
        if (!gzip || ip >= len) break;
    }
    if (ip < len) return errf("%s: %zu unexpected bytes after the end of the stream", codec, len - ip);
    return finish(o, pos, n);
}

xz_status xz_gzip_encode(const uint8_t *in, size_t len, int level, xz_out *o, size_t *n) {
    return deflate_encode(1, in, len, level, o, n);
}
xz_status xz_gzip_decode(const uint8_t *in, size_t len, size_t max, int exact, xz_out *o, size_t *n) {
    return deflate_decode(1, in, len, max, exact, o, n);
}
xz_status xz_zlib_encode(const uint8_t *in, size_t len, int level, xz_out *o, size_t *n) {
    return deflate_encode(0, in, len, level, o, n);
}
xz_status xz_zlib_decode(const uint8_t *in, size_t len, size_t max, int exact, xz_out *o, size_t *n) {
    return deflate_decode(0, in, len, max, exact, o, n);
}

void xz_codecs_thread_release(void) {
    ZSTD_freeCCtx(zstd_c);
    ZSTD_freeDCtx(zstd_d);
    zstd_c = NULL;
    zstd_d = NULL;
    free(lz4_state);
    lz4_state = NULL;
    libdeflate_free_decompressor(deflate_d);
    deflate_d = NULL;
    for (int i = 0; i < 13; i++) {
        libdeflate_free_compressor(deflate_c[i]);
        deflate_c[i] = NULL;
    }
}

/* ---- decoders by name ---- */

static const struct {
    const char *name;
    xz_decode_fn fn;
} DECODERS[] = {
    {"raw", NULL},
    {"zstd", xz_zstd_decode},
    {"blosc", xz_blosc_decode},
    {"lz4", xz_lz4_decode},
    {"gzip", xz_gzip_decode},
    {"zlib", xz_zlib_decode},
    {"bz2", xz_bz2_decode},
};

const char *xz_decoder_named(const char *name, xz_decode_fn *fn) {
    for (size_t i = 0; i < sizeof DECODERS / sizeof DECODERS[0]; i++)
        if (strcmp(name, DECODERS[i].name) == 0) {
            *fn = DECODERS[i].fn;
            return DECODERS[i].name;
        }
    return NULL;
}
