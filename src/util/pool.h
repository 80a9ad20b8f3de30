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

/* teller_sort (vec.h) on up to `jobs` threads: the array is cut into as
 * many parts, each sorted on its own thread, then the parts are merged
 * with the earlier part's element first among equals, so the order is the
 * one a stable sort of the whole gives (glibc's qsort sorts stably while it
 * has the memory for it). Short arrays, one job, or no memory for the
 * merge: teller_sort on the caller's thread. */
void teller_sort_jobs(int jobs, void *base, size_t n, size_t size, int (*cmp)(const void *, const void *));

/* The number of cores this process may run on (sched_getaffinity), at
 * least 1. */
int teller_num_cores(void);

#endif
