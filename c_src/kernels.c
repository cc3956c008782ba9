/* Copy kernels, checks and checksums on packed C-order element data. */
#include "kernels.h"


#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__)
#include <nmmintrin.h>
#endif

int xz_shape_bytes(const uint64_t *shape, int ndim, size_t itemsize, size_t *out) {
    size_t n = itemsize;
    for (int k = 0; k < ndim; k++) {
        if (shape[k] > SIZE_MAX || __builtin_mul_overflow(n, (size_t)shape[k], &n)) return -1;
    }
    *out = n;
    return 0;
}

/* 1 when every one of the n entries of an index list is below `size`. */
static int indices_below(const uint8_t *list, uint64_t n, uint64_t size) {
    for (uint64_t i = 0; i < n; i++)
        if (xz_index_at(list, (size_t)i) >= size) return 0;
    return 1;
}

const char *xz_piece_check(const xz_piece *p, const uint64_t *dst_shape, int ndim, size_t itemsize) {
    size_t src_bytes;
    if (xz_shape_bytes(p->src_shape, ndim, itemsize, &src_bytes) != 0)
        return "source shape is too large";
    if (src_bytes != p->src_len) return "source size does not match its shape and itemsize";
    const xz_index *ix = p->index;
    for (int k = 0; k < ndim; k++) {
        if (ix && ix->src[k]) {
            if (!indices_below(ix->src[k], p->count[k], p->src_shape[k]))
                return "index is out of the source bounds";
        } else if (p->count[k] > p->src_shape[k] ||
                   p->src_start[k] > p->src_shape[k] - p->count[k]) {
            return "box is out of the source bounds";
        }
        if (ix && ix->dst[k]) {
            if (!indices_below(ix->dst[k], p->count[k], dst_shape[k]))
                return "index is out of the destination bounds";
        } else if (p->count[k] > dst_shape[k] || p->dst_start[k] > dst_shape[k] - p->count[k]) {
            return "box is out of the destination bounds";
        }
    }
    return NULL;
}

/* n rows of `run` bytes, advancing by the given strides. Fixed sizes let the compiler
 * turn the memcpy into one load/store. */
static void copy_rows(uint8_t *d, const uint8_t *s, size_t run, size_t n, size_t s_stride,
                      size_t d_stride) {
#define XZ_ROWS(SIZE)                                                  \
    for (size_t i = 0; i < n; i++, s += s_stride, d += d_stride) memcpy(d, s, SIZE); \
    return;
    switch (run) {
    case 1: XZ_ROWS(1)
    case 2: XZ_ROWS(2)
    case 4: XZ_ROWS(4)
    case 8: XZ_ROWS(8)
    case 16: XZ_ROWS(16)
    case 32: XZ_ROWS(32)
    case 64: XZ_ROWS(64)
    default: XZ_ROWS(run)
    }
#undef XZ_ROWS
}

/* Position i along axis k of one side of an indexed copy. */
static inline uint64_t side_at(const uint8_t *list, uint64_t start, uint64_t i) {
    return list ? xz_index_at(list, (size_t)i) : start + i;
}

/* n elements of one row of an indexed copy: source and destination positions from their
 * lists (or consecutive), offsets `sb` and `db` added. */
static void copy_elements(uint8_t *dst, size_t db, const uint8_t *dl, const uint8_t *src,
                          size_t sb, const uint8_t *sl, size_t n, size_t itemsize) {
#define XZ_ELEMS(SIZE)                                                                  \
    for (size_t i = 0; i < n; i++)                                                      \
        memcpy(dst + db + (dl ? (size_t)xz_index_at(dl, i) : i) * (SIZE),               \
               src + sb + (sl ? (size_t)xz_index_at(sl, i) : i) * (SIZE), (SIZE));      \
    return;
    switch (itemsize) {
    case 1: XZ_ELEMS(1)
    case 2: XZ_ELEMS(2)
    case 4: XZ_ELEMS(4)
    case 8: XZ_ELEMS(8)
    case 16: XZ_ELEMS(16)
    default: XZ_ELEMS(itemsize)
    }
#undef XZ_ELEMS
}

/* A checked, non-empty piece with index lists: an odometer over all axes but the last, whose
 * rows are one run when neither side has a list along the last axis. */
static void piece_copy_indexed(uint8_t *dst, const uint64_t *D, int ndim, size_t itemsize,
                               const xz_piece *p) {
    const xz_index *ix = p->index;
    size_t ss[XZ_MAX_DIMS], ds[XZ_MAX_DIMS], so[XZ_MAX_DIMS], dof[XZ_MAX_DIMS];
    uint64_t idx[XZ_MAX_DIMS] = {0};
    int last = ndim - 1;
    ss[last] = ds[last] = itemsize;
    for (int k = last - 1; k >= 0; k--) {
        ss[k] = ss[k + 1] * (size_t)p->src_shape[k + 1];
        ds[k] = ds[k + 1] * (size_t)D[k + 1];
    }
    for (int k = 0; k < last; k++) {
        so[k] = (size_t)side_at(ix->src[k], p->src_start[k], 0) * ss[k];
        dof[k] = (size_t)side_at(ix->dst[k], p->dst_start[k], 0) * ds[k];
    }
    const uint8_t *sl = ix->src[last], *dl = ix->dst[last];
    size_t n = (size_t)p->count[last];
    size_t s0 = sl ? 0 : (size_t)p->src_start[last] * itemsize;
    size_t d0 = dl ? 0 : (size_t)p->dst_start[last] * itemsize;
    for (;;) {
        size_t sb = s0, db = d0;
        for (int k = 0; k < last; k++) {
            sb += so[k];
            db += dof[k];
        }
        if (!sl && !dl)
            memcpy(dst + db, p->src + sb, n * itemsize);
        else
            copy_elements(dst, db, dl, p->src, sb, sl, n, itemsize);
        int k = last - 1;
        for (; k >= 0; k--) {
            if (++idx[k] == p->count[k]) idx[k] = 0;
            so[k] = (size_t)side_at(ix->src[k], p->src_start[k], idx[k]) * ss[k];
            dof[k] = (size_t)side_at(ix->dst[k], p->dst_start[k], idx[k]) * ds[k];
            if (idx[k] != 0) break;
        }
        if (k < 0) break;
    }
}

void xz_piece_copy(uint8_t *dst, const uint64_t *dst_shape, int ndim, size_t itemsize,
                   const xz_piece *p) {
    const uint64_t *S = p->src_shape, *D = dst_shape, *c = p->count;
    for (int k = 0; k < ndim; k++)
        if (c[k] == 0) return;
    if (ndim == 0) {
        memcpy(dst, p->src, itemsize);
        return;
    }
    if (p->index) {
        piece_copy_indexed(dst, dst_shape, ndim, itemsize, p);
        return;
    }
    size_t ss[XZ_MAX_DIMS], ds[XZ_MAX_DIMS];
    ss[ndim - 1] = itemsize;
    ds[ndim - 1] = itemsize;
    for (int k = ndim - 2; k >= 0; k--) {
        ss[k] = ss[k + 1] * (size_t)S[k + 1];
        ds[k] = ds[k + 1] * (size_t)D[k + 1];
    }
    /* Trailing axes covered entirely in both source and destination merge into one run. */
    int inner = ndim - 1;
    while (inner > 0 && c[inner] == S[inner] && c[inner] == D[inner]) inner--;
    size_t run = itemsize;
    for (int k = inner; k < ndim; k++) run *= (size_t)c[k];
    size_t so = 0, dof = 0;
    for (int k = 0; k < ndim; k++) {
        so += (size_t)p->src_start[k] * ss[k];
        dof += (size_t)p->dst_start[k] * ds[k];
    }
    if (inner == 0) {
        memcpy(dst + dof, p->src + so, run);
        return;
    }
    /* Axis inner-1 is walked by copy_rows; axes 0..inner-2 by an odometer. */
    int row_axis = inner - 1;
    uint64_t idx[XZ_MAX_DIMS] = {0};
    for (;;) {
        copy_rows(dst + dof, p->src + so, run, (size_t)c[row_axis], ss[row_axis], ds[row_axis]);
        int k = row_axis - 1;
        for (; k >= 0; k--) {
            so += ss[k];
            dof += ds[k];
            if (++idx[k] < c[k]) break;
            so -= (size_t)c[k] * ss[k];
            dof -= (size_t)c[k] * ds[k];
            idx[k] = 0;
        }
        if (k < 0) break;
    }
}

void xz_fill(uint8_t *dst, size_t len, const uint8_t *elem, size_t elem_len) {
    if (len == 0) return;
    int uniform = 1;
    for (size_t i = 1; i < elem_len; i++)
        if (elem[i] != elem[0]) uniform = 0;
    if (uniform) {
        memset(dst, elem[0], len);
        return;
    }
    memcpy(dst, elem, elem_len);
    size_t filled = elem_len;
    while (filled < len) {
        size_t n = len - filled < filled ? len - filled : filled;
        memcpy(dst + filled, dst, n);
        filled += n;
    }
}

const char *xz_transpose_check(size_t len, const uint64_t *shape, int ndim, size_t itemsize,
                               const uint64_t *perm) {
    size_t bytes;
    if (xz_shape_bytes(shape, ndim, itemsize, &bytes) != 0) return "shape is too large";
    if (bytes != len) return "data size does not match shape and itemsize";
    uint8_t seen[XZ_MAX_DIMS] = {0};
    for (int k = 0; k < ndim; k++) {
        if (perm[k] >= (uint64_t)ndim || seen[perm[k]]) return "perm is not a permutation of the axes";
        seen[perm[k]] = 1;
    }
    return NULL;
}

void xz_transpose(uint8_t *out, const uint8_t *in, const uint64_t *shape, int ndim,
                  size_t itemsize, const uint64_t *perm) {
    size_t total;
    if (xz_shape_bytes(shape, ndim, itemsize, &total) != 0 || total == 0) return;
    /* Trailing axes that stay in place are contiguous in both layouts: one bigger item. */
    while (ndim > 0 && perm[ndim - 1] == (uint64_t)(ndim - 1)) {
        itemsize *= (size_t)shape[ndim - 1];
        ndim--;
    }
    if (ndim <= 1) {
        memcpy(out, in, total);
        return;
    }
    size_t in_stride[XZ_MAX_DIMS], stride[XZ_MAX_DIMS], ostride[XZ_MAX_DIMS];
    uint64_t oshape[XZ_MAX_DIMS];
    in_stride[ndim - 1] = itemsize;
    for (int k = ndim - 2; k >= 0; k--) in_stride[k] = in_stride[k + 1] * (size_t)shape[k + 1];
    int last = ndim - 1, q = 0;
    for (int k = 0; k < ndim; k++) {
        oshape[k] = shape[perm[k]];
        stride[k] = in_stride[perm[k]];
        if (perm[k] == (uint64_t)last) q = k; /* the output axis that is contiguous in the input */
    }
    ostride[last] = itemsize;
    for (int k = last - 1; k >= 0; k--) ostride[k] = ostride[k + 1] * (size_t)oshape[k + 1];
    /* Output axes q and last form 2-d tiles (contiguous reads along q, contiguous writes along
     * last) small enough to stay in cache; the other axes are walked by an odometer. */
    int outer[XZ_MAX_DIMS], nouter = 0;
    for (int k = 0; k < last; k++)
        if (k != q) outer[nouter++] = k;
    size_t nq = (size_t)oshape[q], nl = (size_t)oshape[last];
    size_t tile = itemsize <= 1 ? 64 : itemsize <= 4 ? 32 : 16;
    uint64_t idx[XZ_MAX_DIMS] = {0};
    size_t in_off = 0, out_off = 0;
    for (;;) {
        for (size_t a0 = 0; a0 < nq; a0 += tile)
            for (size_t b0 = 0; b0 < nl; b0 += tile) {
                size_t amax = a0 + tile < nq ? a0 + tile : nq, bn = b0 + tile < nl ? tile : nl - b0;
                for (size_t a = a0; a < amax; a++)
                    copy_rows(out + out_off + a * ostride[q] + b0 * itemsize,
                              in + in_off + a * itemsize + b0 * stride[last], itemsize, bn,
                              stride[last], itemsize);
            }
        int m = nouter - 1;
        for (; m >= 0; m--) {
            int k = outer[m];
            in_off += stride[k];
            out_off += ostride[k];
            if (++idx[k] < oshape[k]) break;
            in_off -= (size_t)oshape[k] * stride[k];
            out_off -= (size_t)oshape[k] * ostride[k];
            idx[k] = 0;
        }
        if (m < 0) break;
    }
}

void xz_byteswap(uint8_t *out, const uint8_t *in, size_t len, size_t itemsize) {
    size_t n = itemsize ? len / itemsize : 0;
#define XZ_SWAP(BITS)                                       \
    for (size_t i = 0; i < n; i++) {                         \
        uint##BITS##_t v;                                    \
        memcpy(&v, in + (BITS / 8) * i, BITS / 8);           \
        v = __builtin_bswap##BITS(v);                        \
        memcpy(out + (BITS / 8) * i, &v, BITS / 8);          \
    }                                                        \
    break;
    switch (itemsize) {
    case 2: XZ_SWAP(16)
    case 4: XZ_SWAP(32)
    case 8: XZ_SWAP(64)
    default:
        if (out != in) memcpy(out, in, len);
    }
#undef XZ_SWAP
}

int xz_all_equal(const uint8_t *data, size_t len, const uint8_t *elem, size_t elem_len) {
    if (len == 0) return 1;
    if (elem_len == 0 || len % elem_len != 0) return 0;
    /* data[0..e) == elem and data[i] == data[i+e] for all i  <=>  every element equals elem. */
    return memcmp(data, elem, elem_len) == 0 && memcmp(data, data + elem_len, len - elem_len) == 0;
}

int xz_all_nan(const uint8_t *data, size_t len, int width) {
    int all = 1;
    switch (width) {
    case 2:
        for (size_t i = 0; i + 2 <= len; i += 2) {
            uint16_t v;
            memcpy(&v, data + i, 2);
            all &= (v & 0x7fffu) > 0x7c00u;
        }
        break;
    case 4:
        for (size_t i = 0; i + 4 <= len; i += 4) {
            uint32_t v;
            memcpy(&v, data + i, 4);
            all &= (v & 0x7fffffffu) > 0x7f800000u;
        }
        break;
    case 8:
        for (size_t i = 0; i + 8 <= len; i += 8) {
            uint64_t v;
            memcpy(&v, data + i, 8);
            all &= (v & 0x7fffffffffffffffull) > 0x7ff0000000000000ull;
        }
        break;
    default:
        return 0;
    }
    return all && len % (size_t)width == 0;
}

/* ---- CRC32C ---- */

static uint32_t crc_table[8][256];
static int crc_hw;

static uint32_t crc_sw(uint32_t c, const uint8_t *p, size_t n) {
    while (n >= 8) {
        uint32_t lo, hi;
        memcpy(&lo, p, 4);
        memcpy(&hi, p + 4, 4);
        lo ^= c;
        c = crc_table[7][lo & 0xff] ^ crc_table[6][(lo >> 8) & 0xff] ^ crc_table[5][(lo >> 16) & 0xff] ^
            crc_table[4][lo >> 24] ^ crc_table[3][hi & 0xff] ^ crc_table[2][(hi >> 8) & 0xff] ^
            crc_table[1][(hi >> 16) & 0xff] ^ crc_table[0][hi >> 24];
        p += 8;
        n -= 8;
    }
    while (n--) c = (c >> 8) ^ crc_table[0][(c ^ *p++) & 0xff];
    return c;
}

#if defined(__x86_64__)
/* Three independent crc32 instruction chains over consecutive XZ_CRC_LANE-byte lanes keep the
 * instruction's pipeline full; the lanes are then joined with crc_shift (the CRC register is
 * linear: crc(A B, s) = shift_|B|(crc(A, s)) ^ crc(B, 0)). */
#define XZ_CRC_LANE 1024
static uint32_t crc_shift_table[4][256];

static uint32_t crc_shift(uint32_t c) {
    return crc_shift_table[0][c & 0xff] ^ crc_shift_table[1][(c >> 8) & 0xff] ^
           crc_shift_table[2][(c >> 16) & 0xff] ^ crc_shift_table[3][c >> 24];
}

__attribute__((target("sse4.2"))) static uint32_t crc_hw_run(uint32_t c, const uint8_t *p, size_t n) {
    while (n >= 3 * XZ_CRC_LANE) {
        uint64_t c0 = c, c1 = 0, c2 = 0;
        for (size_t i = 0; i < XZ_CRC_LANE; i += 8) {
            uint64_t a, b, d;
            memcpy(&a, p + i, 8);
            memcpy(&b, p + XZ_CRC_LANE + i, 8);
            memcpy(&d, p + 2 * XZ_CRC_LANE + i, 8);
            c0 = _mm_crc32_u64(c0, a);
            c1 = _mm_crc32_u64(c1, b);
            c2 = _mm_crc32_u64(c2, d);
        }
        c = crc_shift(crc_shift((uint32_t)c0) ^ (uint32_t)c1) ^ (uint32_t)c2;
        p += 3 * XZ_CRC_LANE;
        n -= 3 * XZ_CRC_LANE;
    }
    uint64_t c64 = c;
    while (n >= 8) {
        uint64_t v;
        memcpy(&v, p, 8);
        c64 = _mm_crc32_u64(c64, v);
        p += 8;
        n -= 8;
    }
    c = (uint32_t)c64;
    while (n--) c = _mm_crc32_u8(c, *p++);
    return c;
}

/* crc_shift_table[b][v]: the register after XZ_CRC_LANE zero bytes, starting from v << 8b. */
__attribute__((target("sse4.2"))) static void crc_shift_init(void) {
    uint32_t basis[32];
    for (int bit = 0; bit < 32; bit++) {
        uint64_t c = 1u << bit;
        for (int i = 0; i < XZ_CRC_LANE; i += 8) c = _mm_crc32_u64(c, 0);
        basis[bit] = (uint32_t)c;
    }
    for (int b = 0; b < 4; b++)
        for (uint32_t v = 0; v < 256; v++) {
            uint32_t x = 0;
            for (int k = 0; k < 8; k++)
                if (v & (1u << k)) x ^= basis[8 * b + k];
            crc_shift_table[b][v] = x;
        }
}
#endif

__attribute__((constructor)) static void crc_init(void) {
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int j = 0; j < 8; j++) c = (c >> 1) ^ (0x82F63B78u & (0u - (c & 1u)));
        crc_table[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; i++)
        for (int t = 1; t < 8; t++)
            crc_table[t][i] = (crc_table[t - 1][i] >> 8) ^ crc_table[0][crc_table[t - 1][i] & 0xff];
#if defined(__x86_64__)
    __builtin_cpu_init();
    crc_hw = __builtin_cpu_supports("sse4.2");
    if (crc_hw) crc_shift_init();
#endif
}

uint32_t xz_crc32c(uint32_t crc, const uint8_t *data, size_t len) {
    uint32_t c = ~crc;
#if defined(__x86_64__)
    if (crc_hw) return ~crc_hw_run(c, data, len);
#endif
    return ~crc_sw(c, data, len);
}

/* ---- the per-thread scratch buffer ---- */

static __thread uint8_t *kept;
static __thread size_t kept_cap;

uint8_t *xz_thread_scratch(size_t n, int *temp) {
    *temp = 0;
    if (n <= kept_cap) return kept;
    if (n > XZ_SCRATCH_KEEP) {
        *temp = 1;
        return malloc(n);
    }
    free(kept);
    kept = malloc(n);
    kept_cap = kept ? n : 0;
    return kept;
}

void xz_thread_scratch_release(void) {
    free(kept);
    kept = NULL;
    kept_cap = 0;
}
