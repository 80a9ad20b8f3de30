/*
 * pool.c - see pool.h. Threads are started per call and joined before it
 * returns: the calls are few (one per load stage) and long, so a pool that
 * outlives them would only add shutdown rules.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>

#include "pool.h"

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
