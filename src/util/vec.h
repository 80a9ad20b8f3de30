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

int teller_grow(void **p, size_t *cap, size_t need, size_t size);

/* qsort that accepts an empty (possibly NULL) array. */
void teller_sort(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *));

#define TELLER_GROW(ptr, cap, need) teller_grow((void **)&(ptr), &(cap), (need), sizeof *(ptr))

#endif
