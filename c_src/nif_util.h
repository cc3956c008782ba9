/* Shared helpers of the NIF glue: term parsing, results, dirty scheduling. */
#ifndef EXZARR_NIF_UTIL_H
#define EXZARR_NIF_UTIL_H

#include <erl_nif.h>
#include <stdint.h>

#include "kernels.h"

/* Work estimates (bytes, scaled by each call's cost relative to zstd decoding, about 1 ns a
 * byte) larger than this run on a dirty CPU scheduler; smaller ones (at most about 0.5 ms, half
 * the 1 ms a NIF may take) run on the calling scheduler, which is charged for them (see
 * xz_maybe_dirty). The hop to a dirty scheduler and back wakes sleeping threads on both sides,
 * and the dirty scheduler then spins idle: 256 KiB chunks read one by one from MinIO took
 * 1.23-1.30 ms each with a 64 KiB threshold, 0.97-1.06 ms with 256 KiB; with 512 KiB a 256 KiB
 * zstd-1 chunk (about 0.48 ms) is compressed without the hop (bench/README.md, "Measured
 * defaults"). */
#define XZ_DIRTY_BYTES (512 * 1024)
/* Work of a full timeslice (1 ms) at about 1 ns a byte. */
#define XZ_TIMESLICE_BYTES (1024 * 1024)

extern ERL_NIF_TERM xz_atom_ok, xz_atom_error, xz_atom_true, xz_atom_false, xz_atom_fill,
    xz_atom_gather, xz_atom_nil;

void xz_atoms_init(ErlNifEnv *env);

/* {:ok, term} */
ERL_NIF_TERM xz_ok(ErlNifEnv *env, ERL_NIF_TERM t);
/* {:error, {tag, "message"}} */
ERL_NIF_TERM xz_error(ErlNifEnv *env, const char *tag, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Reads a tuple of non-negative integers (at most XZ_MAX_DIMS); 1 on success. */
int xz_get_shape(ErlNifEnv *env, ERL_NIF_TERM t, uint64_t *out, int *ndim);

/* Reads the start of one side of a copy: a tuple whose entries are non-negative integers, or
 * binaries of little-endian uint64 indices (an index list along that axis: lists[k] points to
 * it and lens[k] is its entry count; NULL and 0 for an integer). 1 on success. */
int xz_get_starts(ErlNifEnv *env, ERL_NIF_TERM t, uint64_t *start, const uint8_t **lists,
                  uint64_t *lens, int *ndim);

/* Completes a piece read with xz_get_starts: 1 when every index list has count[k] entries,
 * with p->index set to `ix` (filled from the lists) when there is a list, else NULL. */
int xz_set_index(xz_piece *p, xz_index *ix, const uint8_t *const *src, const uint64_t *src_lens,
                 const uint8_t *const *dst, const uint64_t *dst_lens, int ndim);

/* Reads a non-negative integer that fits size_t; 1 on success. */
int xz_get_size(ErlNifEnv *env, ERL_NIF_TERM t, size_t *out);

/* Charges the calling process the share of a timeslice that `work` bytes take. */
void xz_consume_timeslice(ErlNifEnv *env, size_t work);

/* Runs `fun` here when `work` bytes is small, and charges the calling process that share of a
 * timeslice; else reschedules `fun` on a dirty CPU scheduler. */
ERL_NIF_TERM xz_maybe_dirty(ErlNifEnv *env, const char *name, size_t work,
                            ERL_NIF_TERM (*fun)(ErlNifEnv *, int, const ERL_NIF_TERM[]), int argc,
                            const ERL_NIF_TERM argv[]);

/* A binary result made from an allocated ErlNifBinary of `used` bytes (shrunk if needed). */
ERL_NIF_TERM xz_ok_binary(ErlNifEnv *env, ErlNifBinary *bin, size_t used);

#endif
