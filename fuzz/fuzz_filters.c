/* libFuzzer target for the filter kernels: any operation, element types and bytes. Buffers
 * are allocated at exactly the sizes the NIF allocates, so any overrun is caught. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "filters.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 4) return 0;
    int op = data[0] % 11;
    xz_type a = (xz_type)(data[1] % XZ_NTYPES), b = (xz_type)(data[2] % XZ_NTYPES);
    int param = data[3];
    const uint8_t *payload = data + 4;
    size_t len = size - 4;
    uint8_t *in = malloc(len ? len : 1);
    memcpy(in, payload, len);
    size_t n = len / xz_type_size(a);
    size_t out_len = n * xz_type_size(b);
    uint8_t *out = malloc(out_len ? out_len : 1);
    /* With bit 6 of param: offsets and scales at the edges of what the NIF passes (NaN,
     * infinities, doubles beyond int64 for the integer arithmetic of fixedscaleoffset). */
    static const double EXTREME[] = {NAN, INFINITY, -INFINITY, 1e300, -1e300, 9223372036854775808.0,
                                      -9223372036854775809.0, 0.0};
    double offset = (double)(int8_t)param / 3, scale = 1.0 + param % 7;
    if (param & 0x40) {
        offset = EXTREME[param & 7];
        scale = EXTREME[(param >> 3) & 7];
    }
    switch (op) {
    case 0: xz_cast(out, b, in, a, n); break;
    case 1:
        if (a != XZ_BOOL) xz_delta_encode(out, b, in, a, n);
        break;
    case 2:
        if (b != XZ_BOOL) xz_delta_decode(out, b, in, a, n);
        break;
    case 3: xz_fso_encode(out, b, in, a, n, offset, scale, param & 1); break;
    case 4: xz_fso_decode(out, b, in, a, n, offset, scale); break;
    case 5: xz_quantize(out, b, in, a, n, scale); break;
    case 6: {
        int width = 2 << (param % 3), bits = width == 2 ? 10 : width == 4 ? 23 : 52;
        size_t whole = len - len % (size_t)width;
        uint8_t *o = malloc(whole ? whole : 1);
        xz_bitround(o, in, whole, width, (param >> 2) % (bits + 1));
        free(o);
        break;
    }
    case 7: {
        size_t es = 1 + (size_t)param % 16, whole = len - len % es;
        uint8_t *o = malloc(whole ? whole : 1);
        if (param & 0x80) xz_shuffle(o, in, whole, es);
        else xz_unshuffle(o, in, whole, es);
        free(o);
        break;
    }
    case 9: {
        /* scale_offset: offset and scale are the payload's first two elements of type a; the
         * NIF refuses a zero integer scale before the kernel runs. */
        size_t es = xz_type_size(a);
        if (a == XZ_BOOL || n < 2) break;
        int zero = 1;
        for (size_t i = 0; i < es; i++) zero &= in[es + i] == 0;
        if (zero && !xz_type_is_float(a)) break;
        size_t m = n - 2;
        uint8_t *o = malloc(m ? m * es : 1), *body = malloc(m ? m * es : 1);
        memcpy(body, in + 2 * es, m * es);
        xz_scale_offset(o, body, a, m, param & 1, in, in + es);
        free(body);
        free(o);
        break;
    }
    case 10: {
        /* cast_value: a scalar map of up to 3 entries taken from the payload's start. */
        if (a == XZ_BOOL || b == XZ_BOOL) break;
        size_t entries = (size_t)(param >> 4) % 4, ks = entries * xz_type_size(a),
               vs = entries * xz_type_size(b);
        if (len < ks + vs) break;
        size_t m = (len - ks - vs) / xz_type_size(a), bad = 0;
        uint8_t *keys = malloc(ks ? ks : 1), *values = malloc(vs ? vs : 1);
        uint8_t *body = malloc(m ? m * xz_type_size(a) : 1), *o = malloc(m ? m * xz_type_size(b) : 1);
        memcpy(keys, in, ks);
        memcpy(values, in + ks, vs);
        memcpy(body, in + ks + vs, m * xz_type_size(a));
        xz_cast_value(o, b, body, a, m, (xz_rounding)(param % 5), (xz_out_of_range)((param >> 3) % 3),
                      keys, values, entries, &bad);
        free(keys);
        free(values);
        free(body);
        free(o);
        break;
    }
    case 8: {
        size_t count = (size_t)param * 3;
        uint8_t *o = malloc(count ? count : 1);
        xz_unpackbits(o, count, in, len);
        free(o);
        break;
    }
    }
    free(out);
    free(in);
    return 0;
}
