/* The output-buffer hooks of codecs.c for the fuzz harness: plain malloc/realloc, so that
 * AddressSanitizer sees every buffer at its exact size. */
#include <stdlib.h>

#include "codecs.h"

int xz_out_alloc(xz_out *o, size_t n) {
    if (o->data) return -1;
    o->data = malloc(n ? n : 1);
    o->cap = n;
    return o->data ? 0 : -1;
}

int xz_out_resize(xz_out *o, size_t n) {
    uint8_t *p = realloc(o->data, n ? n : 1);
    if (!p) return -1;
    o->data = p;
    o->cap = n;
    return 0;
}
