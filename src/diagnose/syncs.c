/*
 * syncs.c - the synchronize detector (row syncs): a synchronize's (or a
 * blocking copy call's) overhang past the rank's last GPU work (the index
 * of when it ended is row gpu_busy's), against the run's usual overhang.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "detector.h"

/* What a stall of ex ns in a synchronize of source src that ended at end
 * cost step k. When the rank launched no kernel after it in the step, the
 * stall only held the rank's own end of the step, and the step lasts until
 * its last rank ends: it cost what the step's end would move were this
 * rank's end ex earlier (nothing when another rank ended later anyway: an
 * early pipeline stage's sync while the last stage still works). */
static double beyond_others(const dctx *D, const waitidx *W, uint32_t k, uint16_t src, int64_t end, double ex)
{
    if (diag_kernel_after(W, src, k, end) != SIZE_MAX)
        return ex; /* work after it waited: it may have held other ranks too */
    const teller_step *steps = teller_store_steps(D->st);
    int32_t rank = teller_store_source_c(D->st, src)->rank;
    int64_t own = INT64_MIN, others = INT64_MIN;
    size_t hi, lo = diag_step_rows(D->st, k, &hi);
    for (size_t i = lo; i < hi; i++) {
        if (steps[i].rank == rank)
            own = steps[i].end_ns;
        else if (steps[i].end_ns > others)
            others = steps[i].end_ns;
    }
    if (own == INT64_MIN || others == INT64_MIN)
        return ex;
    double without = (double)own - ex > (double)others ? (double)own - ex : (double)others;
    double last = own > others ? (double)own : (double)others;
    return last - without;
}

/* What the row's tasks share, made once (syncs_prepare): the run-wide
 * input of a per-source search: one number, the median of every rank's
 * overhangs, merged from each source's (baseline.h). */
typedef struct syncs_in {
    double usual; /* the run's median overhang */
} syncs_in;

/* 1 when event i is a call that blocks on the GPU, in a traced step */
static int is_sync(const dctx *D, size_t i)
{
    const teller_events *ev = D->ev;
    return is_api(ev->layer[i]) && ev->step[i] < D->nsteps && diag_blocks_on_gpu(D->st, ev->name[i]);
}

/* A synchronize's overhang: how long it went on after the last GPU work
 * of its rank that had finished by then (0 when it returned as that work
 * finished). */
static double overhang(const dctx *D, const diag_state *S, size_t i)
{
    const teller_events *ev = D->ev;
    return (double)diag_overhang(&S->ends, ev->source[i], ev->start_ns[i], ev->start_ns[i] + ev->dur_ns[i]);
}

/* Source src's part of the run's usual overhang (diag_part_fill): its
 * synchronizes' overhangs, all under one key. */
static int syncs_part(const dctx *D, const void *arg, size_t src, diag_part *part)
{
    const diag_state *S = arg;
    for (size_t i = D->range[src]; i < D->range[src + 1]; i++)
        if (is_sync(D, i) && diag_part_add(part, 0, overhang(D, S, i)))
            return -1;
    return 0;
}

/* The run's usual overhang, over every rank's synchronizes. */
static int syncs_prepare(const dctx *D, diag_state *S)
{
    diag_medians M = {0};
    syncs_in *in = S->syncs = calloc(1, sizeof *S->syncs);
    if (!in)
        return -1;
    int rc = diag_medians_build(&M, D, syncs_part, S);
    in->usual = diag_medians_get(&M, 0);
    diag_medians_free(&M);
    return rc;
}

/* The synchronizes of source src whose overhang is far above the run's
 * usual: stalls. */
static int syncs_run(const dctx *D, diag_state *S, size_t src, finds *out)
{
    const teller_events *ev = D->ev;
    const syncs_in *in = S->syncs;
    for (size_t i = D->range[src]; i < D->range[src + 1]; i++) {
        if (!is_sync(D, i))
            continue;
        int64_t end = ev->start_ns[i] + ev->dur_ns[i];
        double o = overhang(D, S, i), ex = o - 3 * in->usual - 20000;
        if (ex <= 0)
            continue;
        double held = ex; /* the host waited that much longer */
        ex = beyond_others(D, &S->waits, ev->step[i], (uint16_t)src, end, ex);
        if (ex <= 0)
            continue;
        cand cd = {.det = TELLER_FAULT_SYNC_STALL, .rank = rank_of(D, (uint32_t)i), .name = ev->name[i],
                   .layer = ev->layer[i], .excess = ex, .ratio = o / (in->usual + 1000), .actual = (double)ev->dur_ns[i],
                   .usual = (double)ev->dur_ns[i] - ex, .event = (uint32_t)i, .peer = -1, .host_delay = held};
        if (finds_add(out, ev->step[i], &cd))
            return -1;
    }
    return 0;
}

static void syncs_release(const dctx *D, diag_state *S)
{
    (void)D;
    free(S->syncs);
}

const diag_detector diag_row_syncs = {.name = "syncs", .scope = DIAG_PER_SOURCE, .round = 2,
                                      .reads = DIAG_S_GPU_BUSY | DIAG_S_WAITS, .prepare = syncs_prepare,
                                      .run = syncs_run, .release = syncs_release};
