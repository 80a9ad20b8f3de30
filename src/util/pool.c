/*
 * pool.c - see pool.h. Threads are started per call and joined before it
 * returns: the calls are few (one per load stage) and long, so a pool that
 * outlives them would only add shutdown rules.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "pool.h"
#include "vec.h"

typedef struct pfor {
    void (*fn)(void *ctx, size_t i);
    void  *ctx;
    size_t n, next;
    pthread_mutex_t mu;
} pfor;

static void *pfor_worker(void *arg)
{
    pfor *p = arg;
    for (;;) {
        pthread_mutex_lock(&p->mu);
        size_t i = p->next < p->n ? p->next++ : p->n;
        pthread_mutex_unlock(&p->mu);
        if (i == p->n)
            return NULL;
        p->fn(p->ctx, i);
    }
}

void teller_parallel_for(int jobs, size_t n, void (*fn)(void *ctx, size_t i), void *ctx)
{
    if (jobs > 1 && (size_t)jobs > n)
        jobs = (int)n;
    if (jobs <= 1) {
        for (size_t i = 0; i < n; i++)
            fn(ctx, i);
        return;
    }
    pfor p = {fn, ctx, n, 0, PTHREAD_MUTEX_INITIALIZER};
    pthread_t *th = malloc((size_t)(jobs - 1) * sizeof *th);
    int started = 0;
    for (int t = 0; th && t < jobs - 1; t++) {
        if (pthread_create(&th[started], NULL, pfor_worker, &p) != 0)
            break;
        started++;
    }
    pfor_worker(&p);
    for (int t = 0; t < started; t++)
        pthread_join(th[t], NULL);
    free(th);
    pthread_mutex_destroy(&p.mu);
}

typedef struct sort_parts {
    char  *base;
    size_t n, size, nparts;
    int  (*cmp)(const void *, const void *);
} sort_parts;

/* Part i of nparts: [n * i / nparts, n * (i + 1) / nparts). */
static size_t part_start(const sort_parts *p, size_t i) { return p->n * i / p->nparts; }

static void sort_part(void *ctx, size_t i)
{
    sort_parts *p = ctx;
    size_t lo = part_start(p, i);
    teller_sort(p->base + lo * p->size, part_start(p, i + 1) - lo, p->size, p->cmp);
}

/* Below this, threads cost more than they save. */
enum { SORT_JOBS_MIN = 8192 };

void teller_sort_jobs(int jobs, void *base, size_t n, size_t size, int (*cmp)(const void *, const void *))
{
    char *tmp = jobs > 1 && n >= SORT_JOBS_MIN ? malloc(n * size) : NULL;
    if (!tmp) {
        teller_sort(base, n, size, cmp);
        return;
    }
    sort_parts p = {base, n, size, (size_t)jobs, cmp};
    teller_parallel_for(jobs, p.nparts, sort_part, &p);
    /* merge neighbouring runs of parts, doubling their width each round */
    char *src = base, *dst = tmp;
    for (size_t w = 1; w < p.nparts; w *= 2) {
        for (size_t a = 0; a < p.nparts; a += 2 * w) {
            size_t lo = part_start(&p, a), mid = part_start(&p, a + w < p.nparts ? a + w : p.nparts),
                   hi = part_start(&p, a + 2 * w < p.nparts ? a + 2 * w : p.nparts), i = lo, j = mid, k = lo;
            while (i < mid && j < hi) { /* the earlier part's element first among equals */
                const char *take = cmp(src + j * size, src + i * size) < 0 ? src + j++ * size : src + i++ * size;
                memcpy(dst + k++ * size, take, size);
            }
            memcpy(dst + k * size, src + i * size, (mid - i) * size);
            k += mid - i;
            memcpy(dst + k * size, src + j * size, (hi - j) * size);
        }
        char *t = src;
        src = dst;
        dst = t;
    }
    if (src != base)
        memcpy(base, src, n * size);
    free(tmp);
}

int teller_num_cores(void)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
        int c = CPU_COUNT(&set);
        if (c > 0)
            return c;
    }
    return 1;
}
