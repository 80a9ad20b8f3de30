/*
 * vec.h - growable arrays for the column store and side tables.
 *
 * teller_grow makes room for `need` elements of `size` bytes in *p whose
 * capacity is *cap, growing by 1.5x. Large arrays are served by mmap in
 * glibc, so capacity that has not been written does not count as resident
 * memory. Returns 0 on success, -1 when out of memory (the old array stays
 * valid).
 */
#ifndef TELLER_VEC_H
#define TELLER_VEC_H

#include <stddef.h>
#include <stdint.h>

int teller_grow(void **p, size_t *cap, size_t need, size_t size);

/* Maps the pages of [p, p + bytes) in one system call (Linux's
 * MADV_POPULATE_WRITE) before they are written: one fault per 4 KiB page
 * costs several times as much, most of all in a virtual machine. A range
 * of 4 MiB or more is first marked for huge pages (MADV_HUGEPAGE), which
 * its whole 2 MiB pages then get where the kernel has them to give. For
 * memory about to be written whole (so a huge page holds nothing that is
 * not used); a kernel without populating (before 5.14) faults the pages
 * one by one. */
void teller_prefault(void *p, size_t bytes);

/* qsort that accepts an empty (possibly NULL) array. */
void teller_sort(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *));

/* Sorts in place, with no memory of its own: for arrays as large as the
 * store's columns, where teller_sort's qsort (glibc's merge sort) would
 * allocate a copy of the array. cmp gets ctx as its third argument. Not
 * stable: a cmp that never returns 0 for two elements makes the order
 * the same as teller_sort's. Heapsort: O(n log n) in the worst case too. */
void teller_sort_r(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *, void *), void *ctx);

/* Sorts the ids ids[0..n) by key[id], stably (ids of equal key keep
 * their order), with n ids of scratch in tmp: a radix sort on the key, 11
 * bits a pass over the keys' span, none when they are in order already.
 * The ids are event ids with key a column (the start), or positions in an
 * array of keys. */
void teller_sort_by_key(uint32_t *ids, uint32_t *tmp, size_t n, const int64_t *key);

#define TELLER_GROW(ptr, cap, need) teller_grow((void **)&(ptr), &(cap), (need), sizeof *(ptr))

#endif
