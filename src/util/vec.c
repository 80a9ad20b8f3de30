/*
 * vec.c - see vec.h.
 */
#include <stdint.h>
#include <stdlib.h>

#include "vec.h"

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
