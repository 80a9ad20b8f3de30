/*
 * test_util.c - the sorts of src/util: the in-place sort (vec.h:
 * teller_sort_r) against qsort, and the sort on threads (pool.h:
 * teller_sort_jobs) against one stable sort.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "check.h"
#include "util/pool.h"
#include "util/vec.h"

typedef struct sort_item {
    uint32_t key, pos;
    uint8_t  pad[61]; /* larger than the 64 bytes the sort swaps at a time */
} sort_item;

static int sort_item_cmp(const void *a, const void *b)
{
    const sort_item *x = a, *y = b;
    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    return (x->pos > y->pos) - (x->pos < y->pos);
}

static int sort_item_cmp_r(const void *a, const void *b, void *ctx)
{
    ++*(size_t *)ctx;
    return sort_item_cmp(a, b);
}

/* With a comparison that ties nothing, the in-place sort gives qsort's
 * order, on sizes around the heap's edges and with many equal keys. */
static void test_sort_in_place_matches_qsort(void)
{
    size_t sizes[] = {0, 1, 2, 3, 7, 64, 1000, 4097};
    uint32_t seed = 12345;
    for (size_t t = 0; t < sizeof sizes / sizeof *sizes; t++) {
        size_t n = sizes[t], calls = 0;
        sort_item *a = calloc(n + 1, sizeof *a), *b = calloc(n + 1, sizeof *b);
        for (size_t i = 0; i < n; i++) {
            seed = seed * 1103515245u + 12345u;
            a[i] = (sort_item){.key = (seed >> 16) % (n / 4 + 1), .pos = (uint32_t)i, .pad = {(uint8_t)i}};
        }
        memcpy(b, a, n * sizeof *a);
        teller_sort(a, n, sizeof *a, sort_item_cmp);
        teller_sort_r(b, n, sizeof *b, sort_item_cmp_r, &calls);
        CHECK(!memcmp(a, b, n * sizeof *a));
        CHECK(n < 2 || calls > 0);
        free(a);
        free(b);
    }
}

typedef struct tied {
    uint32_t key, order;
} tied;

static int tied_cmp(const void *a, const void *b)
{
    const tied *x = a, *y = b;
    return (x->key > y->key) - (x->key < y->key);
}

/* Sorting on threads gives the order one stable sort gives: among equal
 * keys, the input's order. */
static void test_sort_jobs_keeps_a_stable_order(void)
{
    size_t n = 50000;
    tied *in = malloc(n * sizeof *in), *one = malloc(n * sizeof *one), *par = malloc(n * sizeof *par);
    CHECK(in && one && par);
    if (!in || !one || !par)
        goto done;
    uint64_t x = 88172645463325252ull;
    for (size_t i = 0; i < n; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        in[i] = (tied){(uint32_t)(x % 97), (uint32_t)i}; /* many ties */
    }
    memcpy(one, in, n * sizeof *in);
    teller_sort(one, n, sizeof *one, tied_cmp);
    for (size_t i = 1; i < n; i++)
        CHECK(one[i - 1].key < one[i].key || (one[i - 1].key == one[i].key && one[i - 1].order < one[i].order));
    for (int jobs = 2; jobs <= 5; jobs++) {
        memcpy(par, in, n * sizeof *in);
        teller_sort_jobs(jobs, par, n, sizeof *par, tied_cmp);
        CHECK(!memcmp(one, par, n * sizeof *par));
    }
done:
    free(in);
    free(one);
    free(par);
}

const test_case util_tests[] = {
    {"sort: the in-place sort orders as qsort does", test_sort_in_place_matches_qsort},
    {"sort: a sort on threads keeps the order of one stable sort", test_sort_jobs_keeps_a_stable_order},
    {NULL, NULL},
};
