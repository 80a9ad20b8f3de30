/*
 * diff_internal.h - what the parts of src/diff share: step kinds as both
 * the comparability check (check.c) and the diff (diff.c) key them.
 */
#ifndef TELLER_DIFF_INTERNAL_H
#define TELLER_DIFF_INTERNAL_H

#include <stdint.h>
#include <string.h>
#include "teller/store.h"
#include "teller/tree.h"
#include "../util/kmap.h"

/* A step kind: an annotation family and the kind of work it says. */
typedef struct diff_kind {
    char             family[48]; /* teller_step_class.family, "" for steps without an annotation */
    teller_step_kind kind;
    uint64_t         steps;          /* finished step rows of the kind */
    uint64_t         first;          /* check.c: where its kernel counts start */
    uint32_t         median_kernels; /* check.c: median kernels per step row */
} diff_kind;

static inline uint64_t diff_key(const char *family, teller_step_kind kind)
{
    return kmap_hash_bytes(family, strlen(family)) * 31u + (uint64_t)kind;
}
static inline uint64_t diff_kind_key(const teller_step_class *c) { return diff_key(c->family, c->kind); }
static inline uint64_t diff_kind_key_of(const diff_kind *k) { return diff_key(k->family, k->kind); }

/* "vLLM" or "SGLang" for their step annotations' families, else NULL. */
const char *diff_engine_of(const char *family);
/* Distinct ranks of st's sources; *world the largest recorded world size (0: none). */
int diff_count_ranks(const teller_store *st, int32_t *world);

/* Per interned name of st (teller_store_num_strings entries), the summed
 * duration of its kernels, communication kernels with with_comm; calloc'd
 * (the caller frees), NULL out of memory. */
uint64_t *diff_kernel_ns(const teller_store *st, int with_comm);

#endif
