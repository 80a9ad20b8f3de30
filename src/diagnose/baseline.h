/*
 * baseline.h - what the run itself says is usual, for every detector to
 * compare with (baseline.c): medians of grouped samples (the run's, from
 * per-source parts, in medians.c), when each rank's GPU (or its other
 * threads) was busy, how late each collective's kernel arrived after its
 * peers, the steps' rows of the step table, the launch prior of short
 * runs, and the cost most steps pay (taken off every finding). Not a
 * public header.
 */
#ifndef TELLER_DIAG_BASELINE_H
#define TELLER_DIAG_BASELINE_H

#include <stddef.h>
#include <stdint.h>

#include "teller/store.h"
#include "../util/kmap.h"
#include "../util/vec.h"

struct dctx;
struct diag_state;
struct step_acc;

/* Samples grouped by a 64-bit key, for the median of each group. */
typedef struct samples {
    double *v;
    size_t n, cap;
} samples;
typedef struct groups {
    kmap keys; /* key -> index into s */
    samples *s;
    size_t cap;
} groups;

int diag_cmp_dbl(const void *a, const void *b);
/* The k-th smallest of v[0..n) (k < n), the value a sort would put at
 * v[k]; v is reordered, with no larger value before v[k] and no smaller
 * one after it. */
double diag_select(double *v, size_t n, size_t k);
double diag_median(double *v, size_t n);
/* The median of n values, s's samples (reordered here) and n - s->n zeros;
 * in *low, when given, the lower of the two middle values. */
double diag_median_zeros(samples *s, size_t n, double *low);
int diag_groups_add(groups *g, uint64_t key, double x);
double *diag_groups_medians(groups *g);
double *diag_groups_spreads(const groups *g, const double *med);
void diag_groups_free(groups *g);

/* Run-wide medians from per-source parts (medians.c), for the rows that
 * judge each source against the whole run (API calls, synchronizes,
 * copies). Each source fills a part of its own from its own events alone
 * (D->range[s] .. D->range[s + 1]), on the pool: samples under 64-bit keys
 * (diag_part_add) and counts (diag_part_count). The merge gives each key
 * the median of the union of every part's samples and the sum of its
 * counts. A median is that of the multiset whatever order the samples
 * come in (diag_select compares values only, and the samples are times:
 * no NaN, no -0), so it is the one a single pass over the run would find.
 * The callers see only the parts and what diag_medians_get and
 * diag_medians_count give: a merge across processes, each holding some
 * sources' parts, can replace the one in medians.c without touching them,
 * by an exact distributed selection (bisection on the samples' 64-bit
 * order, one allreduce of each key's counts below the probe per round,
 * and one of the counts). */
typedef struct diag_part {
    groups  g;     /* samples by key */
    size_t *count; /* per key of g.keys: its count; zero past ccap */
    size_t  ccap;
} diag_part;
typedef struct diag_medians {
    kmap    keys;  /* key -> index into med and count, in the order the parts first name them */
    double *med;   /* per key: the median of every part's samples of it */
    size_t *count; /* per key: its counts summed over the parts */
} diag_medians;
/* Fills part with source src's samples and counts, from its events alone,
 * on a pool thread (it writes nothing else). 0, or -1 out of memory. */
typedef int (*diag_part_fill)(const struct dctx *D, const void *arg, size_t src, diag_part *part);
int diag_part_add(diag_part *p, uint64_t key, double x);
int diag_part_count(diag_part *p, uint64_t key, size_t n);
/* M (zeroed by the caller) from fill(D, arg, s, part) for every source s
 * on D->jobs threads, then the merge; diag_medians_free frees it, built
 * or not. 0, or -1 out of memory. */
int diag_medians_build(diag_medians *M, const struct dctx *D, diag_part_fill fill, const void *arg);
/* Key's median over the run, 0 when no source gave it a sample (the
 * median of nothing, as diag_median). */
double diag_medians_get(diag_medians *M, uint64_t key);
/* Key's count over the run, 0 when no source counted it. */
size_t diag_medians_count(diag_medians *M, uint64_t key);
void diag_medians_free(diag_medians *M);

/* When something was busy, per source: a part per source, each built
 * from that source's events alone (D->range), so that the parts can be
 * built on the pool, or only those of the sources a process holds. A
 * part is the union of some events of its source as sorted disjoint
 * intervals [a[j], b[j]), j < n, cum[j] the busy time before interval j,
 * ev[j] the event that opened it; a, b, cum and ev share one allocation
 * (a's), and a is NULL until the part is built. */
typedef struct busypart {
    int64_t  *a, *b, *cum;
    uint32_t *ev;
    size_t    n;
} busypart;
typedef struct busyidx {
    busypart *part; /* per source */
    size_t    nsrc;
} busyidx;

/* What a busy index holds: GPU work; the outermost host ops of each
 * source's threads but its stepping one (step_tid); either, of every
 * thread; the outermost host ops of every thread; the profiler's own work
 * (TELLER_F_PROFILER), on any thread. */
typedef enum diag_busy_what {
    DIAG_BUSY_GPU, DIAG_BUSY_OTHER_THREADS, DIAG_BUSY_ANY, DIAG_BUSY_HOST, DIAG_BUSY_PROFILER
} diag_busy_what;
/* An index of nsrc sources with no part built yet. 0, or -1 out of
 * memory. */
int diag_busy_init(busyidx *B, size_t nsrc);
/* Builds source s's part of B (not built before) from its own events
 * alone; tasks may build different sources' parts at once. 0, or -1 out
 * of memory. */
int diag_busy_part(busyidx *B, const struct dctx *D, diag_busy_what what, const int32_t *step_tid, size_t s);
/* The whole index: every source's part, on D->jobs threads. */
int diag_busy_build(busyidx *B, const struct dctx *D, diag_busy_what what, const int32_t *step_tid);
void diag_busy_free(busyidx *B);

/* A stretch [a, b) in which nothing of a busy index worked, and the event
 * that ended it. */
typedef struct diag_hole {
    int64_t  a, b;
    uint32_t ev;
} diag_hole;

/* The holes of [a, b) on source src (whose part is built) that no busy
 * interval covers, appended to *H (*nh of them, grown), each with the
 * event that ended it: the one whose busy interval starts where the hole
 * ends, or `last` for a hole that runs to b. 0, or -1 out of memory. */
int diag_busy_holes(const busyidx *B, uint16_t src, int64_t a, int64_t b, uint32_t last, diag_hole **H, size_t *cap,
                    size_t *nh);
double diag_idle_in(const busyidx *B, uint16_t src, int64_t a, int64_t b);

/* When each source's GPU work (kernels, copies, memsets) ended, sorted, a
 * part per source built from its own events alone: end[0 .. n), NULL
 * until the part is built. */
typedef struct endpart {
    int64_t *end;
    size_t   n;
} endpart;
typedef struct endidx {
    endpart *part; /* per source */
    size_t   nsrc;
} endidx;

/* As diag_busy_init and diag_busy_part. */
int diag_ends_init(endidx *E, size_t nsrc);
int diag_ends_part(endidx *E, const struct dctx *D, size_t s);
void diag_ends_free(endidx *E);
/* How long a call of source src (whose part is built) running [start,
 * end) went on after the last GPU work of its source that had ended by
 * its end, or after its own start if none had ended since: a
 * synchronize's overhang (diagnose.h TELLER_FACT_OVERHANG). */
int64_t diag_overhang(const endidx *E, uint16_t src, int64_t start, int64_t end);

/* Per source, its kernels in start order (those of source s at off[s] ..
 * off[s + 1]): when each started, its step, and for a kernel of a
 * collective with two or more members how late it arrived (started after
 * the last of the other members; 0 when it was not the last), else -1. */
typedef struct waitidx {
    int64_t  *start;
    double   *wait;
    uint32_t *step;
    size_t   *off;
} waitidx;

int diag_waits_build(waitidx *W, const struct dctx *D);
void diag_waits_free(waitidx *W);
/* The first kernel of source src that starts at or after t, when it is
 * of step k: its index in W, else SIZE_MAX. */
size_t diag_kernel_after(const waitidx *W, uint16_t src, uint32_t k, int64_t t);
/* The same, when that kernel is a member of a collective, else SIZE_MAX
 * (another kernel came first, or none). */
size_t diag_wait_after(const waitidx *W, uint16_t src, uint32_t k, int64_t t);
/* A copy of the lateness of every kernel of W (nsrc sources), for the
 * detectors to spend (free it); NULL out of memory. */
double *diag_waits_left(const waitidx *W, size_t nsrc);
/* Spends from left what a host delay of x ns in step k of source src,
 * ending at t, cost the collective after it: when the first kernel after
 * it is a collective's (a pipeline stage's recv, a tensor-parallel
 * all-reduce), the delay held the collective back only as far as this
 * rank arrived after the other members (a rank that still came early
 * would have waited for them anyway), and several delays before one
 * collective cost at most its lateness together. Returns what of x cost
 * nothing. */
double diag_spend_lateness(const waitidx *W, double *left, uint16_t src, uint32_t k, int64_t t, double x);

/* Step k's rows of the step table (ordered by step, then rank): the first,
 * and in *hi the one past the last. */
size_t diag_step_rows(const teller_store *st, uint32_t k, size_t *hi);

/* The peer groups and pipelines of the context (D->group ... D->pcount). */
int diag_build_groups(struct dctx *D);

/* Calls that return only when earlier GPU work is done: synchronizes, and
 * copies (a device-to-host or pageable copy waits for the kernels before
 * it). Their time is judged by how long they went on past that work. */
int diag_blocks_on_gpu(const teller_store *st, uint32_t name);
/* 1 when API name's calls are held to the launch prior: a kernel launch
 * in a run of fewer than three steps, which cannot say what its own
 * launches usually cost. */
int diag_launch_prior(const struct dctx *D, uint32_t name);
/* What a kernel launch call usually costs on a host that is not slowed:
 * a few microseconds (the healthy shared traces, CUDA and ROCm under the
 * profiler, have medians of 3 to 15 us). */
#define DIAG_LAUNCH_PRIOR_NS 10000.0

/* Takes the run's normal off every finding judged against the run (the
 * median excess of each kind, rank and operator over the steps, a step
 * without it counting zero). 0, or -1 out of memory. */
int diag_subtract_run_normal(const struct dctx *D, struct step_acc *steps);

#endif
