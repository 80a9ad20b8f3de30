/*
 * vec.c - see vec.h.
 */
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "vec.h"

void teller_prefault(void *p, size_t bytes)
{
#ifdef MADV_POPULATE_WRITE
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    if (!p || bytes < 16 * page)
        return; /* a few faults cost less than the call */
    /* the pages holding the range are the allocation's, so mapped */
    uintptr_t a = (uintptr_t)p & ~(uintptr_t)(page - 1), b = ((uintptr_t)p + bytes + page - 1) & ~(uintptr_t)(page - 1);
    (void)madvise((void *)a, b - a, MADV_POPULATE_WRITE);
#else
    (void)p;
    (void)bytes;
#endif
}

int teller_grow(void **p, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap)
        return 0;
    size_t ncap = *cap ? *cap + *cap / 2 : 16;
    if (ncap < need)
        ncap = need;
    if (ncap > SIZE_MAX / size)
        return -1;
    void *q = realloc(*p, ncap * size);
    if (!q)
        return -1;
    *p = q;
    *cap = ncap;
    return 0;
}

void teller_sort(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *))
{
    if (n > 1)
        qsort(base, n, size, cmp);
}
