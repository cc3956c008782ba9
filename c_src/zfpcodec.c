/* zfp streams as numcodecs' ZFPY codec writes them (see zfpcodec.h). */
#include "zfpcodec.h"

#include <stdlib.h>
#include <string.h>
#include <zfp.h>

/* Bytes in a word of zfp's bit stream. */
#define WORD 8

/* The field of an array: zfp's x is the last (fastest) axis. NULL when invalid. */
static zfp_field *field_of(int type, const uint64_t *shape, int ndim, void *data, const char **why) {
    if (type < zfp_type_int32 || type > zfp_type_double) {
        *why = "zfp: the data type must be int32, int64, float32 or float64";
        return NULL;
    }
    if (ndim < 1 || ndim > 4) {
        *why = "zfp: arrays must have 1 to 4 dimensions";
        return NULL;
    }
    size_t n[4] = {1, 1, 1, 1};
    for (int i = 0; i < ndim; i++) {
        if (shape[i] == 0 || shape[i] > ((uint64_t)1 << 40)) {
            *why = "zfp: invalid array shape";
            return NULL;
        }
        n[i] = (size_t)shape[ndim - 1 - i];
    }
    zfp_type t = (zfp_type)type;
    switch (ndim) {
    case 1: return zfp_field_1d(data, t, n[0]);
    case 2: return zfp_field_2d(data, t, n[0], n[1]);
    case 3: return zfp_field_3d(data, t, n[0], n[1], n[2]);
    default: return zfp_field_4d(data, t, n[0], n[1], n[2], n[3]);
    }
}

/* As zfpy: the rate is set without a scalar type (zfp_type_none) and unaligned. zfp then
 * writes past the blocks' budget (and its own size estimate) for floats whose blocks get fewer
 * bits than their exponent takes: such rates are refused. */
static const char *set_mode(zfp_stream *zs, int type, int mode, double param, int ndim) {
    if (param < 0) {
        zfp_stream_set_reversible(zs);
        return NULL;
    }
    switch (mode) {
    case XZ_ZFP_FIXED_ACCURACY: zfp_stream_set_accuracy(zs, param); return NULL;
    case XZ_ZFP_FIXED_RATE:
        if (param > 64) return "zfp: rate must be at most 64 bits per value";
        /* zfp takes the rate as round(rate * 4^ndim) bits per block. */
        if (param * (double)(1u << (2 * ndim)) + 0.5 <
            (type == zfp_type_float ? 1 + 8 : type == zfp_type_double ? 1 + 11 : 1))
            return "zfp: rate too small for the data type (fewer bits per block than zfp needs)";
        zfp_stream_set_rate(zs, param, zfp_type_none, (unsigned)ndim, 0);
        return NULL;
    case XZ_ZFP_FIXED_PRECISION:
        if (param > 64) return "zfp: precision must be at most 64";
        zfp_stream_set_precision(zs, (unsigned)param);
        return NULL;
    default: return "zfp: mode must be 2 (fixed rate), 3 (fixed precision) or 4 (fixed accuracy)";
    }
}

size_t xz_zfp_max_encoded(int type, const uint64_t *shape, int ndim, int mode, double param,
                          const char **why) {
    zfp_field *field = field_of(type, shape, ndim, NULL, why);
    if (!field) return 0;
    zfp_stream *zs = zfp_stream_open(NULL);
    size_t max = 0;
    if (!zs) *why = "zfp: out of memory";
    /* zfp's estimate is not always a whole number of words, but it writes whole words. */
    else if (!(*why = set_mode(zs, type, mode, param, ndim)))
        max = (zfp_stream_maximum_size(zs, field) / WORD + 2) * WORD;
    if (zs) zfp_stream_close(zs);
    zfp_field_free(field);
    return max;
}

const char *xz_zfp_encode(const uint8_t *in, size_t len, int type, const uint64_t *shape, int ndim,
                          int mode, double param, uint8_t *out, size_t cap, size_t *n) {
    const char *why = NULL;
    zfp_field *field = field_of(type, shape, ndim, (void *)in, &why);
    if (!field) return why;
    zfp_stream *zs = NULL;
    bitstream *bs = NULL;
    if (zfp_field_size_bytes(field) != len) why = "zfp: data size does not match the shape";
    else if (!(zs = zfp_stream_open(NULL))) why = "zfp: out of memory";
    else if (!(why = set_mode(zs, type, mode, param, ndim))) {
        if (cap < zfp_stream_maximum_size(zs, field) + WORD || cap % WORD)
            why = "zfp: output buffer too small";
        else if (!(bs = stream_open(out, cap))) why = "zfp: out of memory";
        else {
            zfp_stream_set_bit_stream(zs, bs);
            zfp_stream_rewind(zs);
            if (!zfp_write_header(zs, field, ZFP_HEADER_FULL)) why = "zfp: cannot write the header";
            else if (!(*n = zfp_compress(zs, field))) why = "zfp: compression failed";
            /* The stream ends with a whole 64-bit word, zero-padded, as zfp 1.0.1 writes it. */
            else if (*n % WORD) {
                size_t end = (*n + WORD - 1) / WORD * WORD;
                memset(out + *n, 0, end - *n);
                *n = end;
            }
        }
    }
    if (bs) stream_close(bs);
    if (zs) zfp_stream_close(zs);
    zfp_field_free(field);
    return why;
}

/* zfp's bit stream reads whole 64-bit words and does not check where its buffer ends: the
 * decoder only ever reads a word-aligned copy of the input, zero-padded to the largest stream
 * the header allows (the caller's memory, so that it can reuse it). */

/* Reads the header of `in` (from a zero-padded copy of its start) into zs and field. */
static const char *read_header(const uint8_t *in, size_t len, zfp_stream *zs, zfp_field *field) {
    uint64_t head[(ZFP_HEADER_MAX_BITS + 63) / 64 + 1] = {0};
    memcpy(head, in, len < sizeof head ? len : sizeof head);
    bitstream *bs = stream_open(head, sizeof head);
    if (!bs) return "zfp: out of memory";
    zfp_stream_set_bit_stream(zs, bs);
    zfp_stream_rewind(zs);
    size_t bits = zfp_read_header(zs, field, ZFP_HEADER_FULL);
    zfp_stream_set_bit_stream(zs, NULL);
    stream_close(bs);
    return bits ? NULL : "zfp: invalid header";
}

/* The stream's header must describe the chunk, with blocks of at least as many bits as zfp
 * reads for a block's exponent (it reads past the blocks' budget otherwise). */
static const char *check_field(const zfp_stream *zs, const zfp_field *field, int type,
                               const uint64_t *shape, int ndim) {
    unsigned minbits, maxbits, maxprec;
    int minexp;
    zfp_stream_params(zs, &minbits, &maxbits, &maxprec, &minexp);
    if (minbits > maxbits || maxbits < (type == 3 ? 1u + 8 : type == 4 ? 1u + 11 : 1u))
        return "zfp: invalid compression parameters";
    if ((int)zfp_field_type(field) != type) return "zfp: the stream's data type is not the array's";
    size_t size[4] = {0, 0, 0, 0};
    if ((int)zfp_field_dimensionality(field) != ndim)
        return "zfp: the stream's dimensions are not the chunk's";
    zfp_field_size(field, size);
    for (int i = 0; i < ndim; i++)
        if (size[i] != shape[ndim - 1 - i]) return "zfp: the stream's shape is not the chunk's";
    return NULL;
}

/* Reads and checks the header of `in` into zs, for decoding into `field`; *copy_size the bytes
 * of the padded copy the decoder reads. */
static const char *plan(const uint8_t *in, size_t len, int type, const uint64_t *shape, int ndim,
                        zfp_stream *zs, const zfp_field *field, size_t *copy_size) {
    zfp_field *stored = zfp_field_alloc();
    const char *why = stored ? read_header(in, len, zs, stored) : "zfp: out of memory";
    if (!why && !(why = check_field(zs, stored, type, shape, ndim))) {
        size_t max = zfp_stream_maximum_size(zs, field);
        if (!max) why = "zfp: invalid compression parameters";
        *copy_size = ((max > len ? max : len) + 2 * WORD) / WORD * WORD;
    }
    if (stored) zfp_field_free(stored);
    return why;
}

const char *xz_zfp_decode_copy_size(const uint8_t *in, size_t len, int type,
                                    const uint64_t *shape, int ndim, size_t *copy_size) {
    const char *why = NULL;
    zfp_field *field = field_of(type, shape, ndim, NULL, &why);
    if (!field) return why;
    zfp_stream *zs = zfp_stream_open(NULL);
    why = zs ? plan(in, len, type, shape, ndim, zs, field, copy_size) : "zfp: out of memory";
    if (zs) zfp_stream_close(zs);
    zfp_field_free(field);
    return why;
}

const char *xz_zfp_decode(const uint8_t *in, size_t len, int type, const uint64_t *shape, int ndim,
                          uint8_t *out, size_t out_len, uint8_t *copy, size_t copy_len) {
    const char *why = NULL;
    zfp_field *field = field_of(type, shape, ndim, out, &why);
    if (!field) return why;
    zfp_stream *zs = zfp_stream_open(NULL);
    size_t size = 0;
    bitstream *bs = NULL;
    if (!zs) why = "zfp: out of memory";
    else if (zfp_field_size_bytes(field) != out_len) why = "zfp: output size does not match the shape";
    else if (!(why = plan(in, len, type, shape, ndim, zs, field, &size))) {
        if (copy_len < size || (uintptr_t)copy % WORD)
            why = "zfp: copy buffer too small or unaligned";
        else if (!(bs = stream_open(copy, size))) why = "zfp: out of memory";
        else {
            memcpy(copy, in, len);
            memset(copy + len, 0, size - len);
            zfp_stream_set_bit_stream(zs, bs);
            zfp_stream_rewind(zs);
            if (!zfp_read_header(zs, field, ZFP_HEADER_FULL)) why = "zfp: invalid header";
            else if (!zfp_decompress(zs, field)) why = "zfp: corrupt data";
            else if (zfp_stream_compressed_size(zs) > len + WORD) why = "zfp: truncated data";
        }
    }
    if (bs) stream_close(bs);
    if (zs) zfp_stream_close(zs);
    zfp_field_free(field);
    return why;
}
