/*
 * vec.c - see vec.h.
 */
#include <stdint.h>
#include <string.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "vec.h"

/* From this size on, a range is mapped with huge pages where it holds
 * whole ones (2 MiB on x86-64): at least one whole 2 MiB page lies inside. */
#define HUGE_RANGE ((size_t)4 << 20)

void teller_prefault(void *p, size_t bytes)
{
#ifdef MADV_POPULATE_WRITE
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    if (!p || bytes < 16 * page)
        return; /* a few faults cost less than the call */
    /* the pages holding the range are the allocation's, so mapped */
    uintptr_t a = (uintptr_t)p & ~(uintptr_t)(page - 1), b = ((uintptr_t)p + bytes + page - 1) & ~(uintptr_t)(page - 1);
#ifdef MADV_HUGEPAGE
    if (bytes >= HUGE_RANGE)
        (void)madvise((void *)a, b - a, MADV_HUGEPAGE);
#endif
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

void teller_sort_by_key(uint32_t *ids, uint32_t *tmp, size_t n, const int64_t *key)
{
    int64_t mn = INT64_MAX, mx = INT64_MIN;
    int sorted = 1;
    for (size_t i = 0; i < n; i++) {
        int64_t k = key[ids[i]];
        if (k < mn) mn = k;
        if (k > mx) mx = k;
        if (i && k < key[ids[i - 1]])
            sorted = 0;
    }
    if (sorted)
        return;
    uint64_t span = (uint64_t)mx - (uint64_t)mn;
    uint32_t *a = ids, *b = tmp;
    for (int shift = 0; shift < 64 && (span >> shift) != 0; shift += 11) {
        size_t cnt[2048] = {0};
        for (size_t i = 0; i < n; i++)
            cnt[(((uint64_t)key[a[i]] - (uint64_t)mn) >> shift) & 2047]++;
        size_t sum = 0;
        for (size_t d = 0; d < 2048; d++) {
            size_t c = cnt[d];
            cnt[d] = sum;
            sum += c;
        }
        for (size_t i = 0; i < n; i++)
            b[cnt[(((uint64_t)key[a[i]] - (uint64_t)mn) >> shift) & 2047]++] = a[i];
        uint32_t *t = a;
        a = b;
        b = t;
    }
    if (a != ids)
        memcpy(ids, a, n * sizeof *a);
}

static void swap_bytes(unsigned char *a, unsigned char *b, size_t size)
{
    unsigned char t[64];
    while (size) {
        size_t k = size < sizeof t ? size : sizeof t;
        memcpy(t, a, k);
        memcpy(a, b, k);
        memcpy(b, t, k);
        a += k;
        b += k;
        size -= k;
    }
}

/* Moves element i of the max-heap [0, n) down until neither child is larger. */
static void sift_down(unsigned char *v, size_t i, size_t n, size_t size,
                      int (*cmp)(const void *, const void *, void *), void *ctx)
{
    for (size_t c; (c = 2 * i + 1) < n; i = c) {
        if (c + 1 < n && cmp(v + c * size, v + (c + 1) * size, ctx) < 0)
            c++;
        if (cmp(v + i * size, v + c * size, ctx) >= 0)
            return;
        swap_bytes(v + i * size, v + c * size, size);
    }
}

void teller_sort_r(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *, void *), void *ctx)
{
    unsigned char *v = base;
    if (n < 2)
        return;
    for (size_t i = n / 2; i-- > 0;)
        sift_down(v, i, n, size, cmp, ctx);
    for (size_t end = n - 1; end > 0; end--) {
        swap_bytes(v, v + end * size, size);
        sift_down(v, 0, end, size, cmp, ctx);
    }
}
