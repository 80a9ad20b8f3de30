/*
 * pool.h - running independent tasks on a few threads.
 *
 * teller_parallel_for runs fn(ctx, i) once for every i in [0, n) on up to
 * `jobs` threads, the caller's own included, and returns when all have run.
 * Tasks are handed out in index order from a shared counter, so a slow task
 * does not hold back the others. If a thread cannot be started, the threads
 * that did start (at least the caller's) run the remaining tasks: every task
 * runs, whatever happens. fn must not depend on which thread runs it; tasks
 * that touch shared state synchronise themselves.
 */
#ifndef TELLER_POOL_H
#define TELLER_POOL_H

#include <stddef.h>

void teller_parallel_for(int jobs, size_t n, void (*fn)(void *ctx, size_t i), void *ctx);

/* The number of cores this process may run on (sched_getaffinity), at
 * least 1. */
int teller_num_cores(void);

#endif
