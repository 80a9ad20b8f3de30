/*
 * kmap.h - a map from 64-bit keys to dense indices 0, 1, 2, ... in order of
 * first insertion (open addressing). The analysis stages use it to give
 * (step, rank, name)-like tuples a slot in their own arrays.
 */
#ifndef TELLER_KMAP_H
#define TELLER_KMAP_H

#include <stddef.h>
#include <stdint.h>

typedef struct kmap {
    uint64_t *k; /* key + 1; 0 marks an empty slot */
    uint32_t *v;
    size_t    cap, n;
    int       has_max; /* UINT64_MAX, whose key + 1 would be 0, is kept apart: */
    uint32_t  v_max;   /* its index */
} kmap;

/* The index of key; with create, a new one when absent. UINT32_MAX when
 * absent (create == 0) or out of memory. */
uint32_t kmap_get(kmap *m, uint64_t key, int create);
/* The element of key in *arr (elements of size bytes, one per index, grown
 * and zero-filled as indices appear), created when absent; NULL when out
 * of memory. */
void *kmap_slot(kmap *m, uint64_t key, void **arr, size_t *cap, size_t size);

/* FNV-1a, 64-bit, of n bytes: keys for byte strings (and checksums). */
uint64_t kmap_hash_bytes(const void *p, size_t n);

/* The key of index ix, by a scan (for reporting, not hot paths). */
void kmap_keys(const kmap *m, uint64_t *keys_by_index);
void kmap_free(kmap *m);

#endif
