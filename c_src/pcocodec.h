/* pcodec's standalone format (numcodecs PCodec), from the Rust static library in c_src/pco
 * over the reference crate `pco`. Built only when cargo is installed (XZ_WITH_PCO). */
#ifndef EXZARR_PCOCODEC_H
#define EXZARR_PCOCODEC_H

#include <stddef.h>
#include <stdint.h>

/* Number types. */
enum { XZ_PCO_U16 = 1, XZ_PCO_U32, XZ_PCO_U64, XZ_PCO_I16, XZ_PCO_I32, XZ_PCO_I64,
       XZ_PCO_F16, XZ_PCO_F32, XZ_PCO_F64 };

typedef struct {
    uint8_t *data;
    size_t len, cap;
} xz_pco_buf;

typedef struct {
    uint32_t level;       /* 0..12 */
    uint32_t mode;        /* 0 auto, 1 classic */
    uint32_t delta;       /* 0 auto, 1 none, 2 try_consecutive, 3 try_lookback */
    uint32_t delta_order; /* for try_consecutive: 0..7 */
    uint64_t page_n;      /* equal pages of up to this many numbers (1..2^24) */
} xz_pco_config;

/* 0 on success; -1 with a message in err (err_cap bytes) otherwise. Compressed buffers are
 * released with xz_pco_free. Decompression fills exactly out_len bytes or fails. */
int xz_pco_compress(uint32_t dtype, const uint8_t *src, size_t len, const xz_pco_config *config,
                    xz_pco_buf *out, char *err, size_t err_cap);
void xz_pco_free(xz_pco_buf *buf);
int xz_pco_decompress(uint32_t dtype, const uint8_t *src, size_t len, uint8_t *out, size_t out_len,
                      char *err, size_t err_cap);
/* The library keeps freed working memory for its next calls: this gives back what was freed
 * more than idle_ms ago, and returns the bytes still kept. */
size_t xz_pco_release_idle(uint64_t idle_ms);

#endif
