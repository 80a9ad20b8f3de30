/*
 * syncs.c - the synchronize detector (row syncs): a synchronize's (or a
 * blocking copy call's) overhang past the rank's last GPU work, against the
 * run's usual overhang.
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

/* A synchronize's overhang: how long it went on after the last GPU work
 * of its rank that had finished by then (0 when it returned as that work
 * finished). Stalls are overhangs far above the run's usual. */
static int syncs_run(const dctx *D, diag_state *S, size_t task, finds *out)
{
    (void)task;
    const teller_events *ev = D->ev;
    endidx E;
    double *over = NULL;
    size_t nover = 0, ocap = 0;
    if (diag_ends_build(&E, D))
        return -1;
    int rc = 0;
    for (int pass = 0; pass < 2 && !rc; pass++) {
        double usual = pass ? diag_median(over, nover) : 0;
        for (size_t i = 0; i < ev->n; i++) {
            if (!is_api(ev->layer[i]) || ev->step[i] >= D->nsteps || !diag_blocks_on_gpu(D->st, ev->name[i]))
                continue;
            uint16_t src = ev->source[i];
            int64_t end = ev->start_ns[i] + ev->dur_ns[i];
            double o = (double)diag_overhang(&E, src, ev->start_ns[i], end);
            if (pass == 0) {
                if (TELLER_GROW(over, ocap, nover + 1)) {
                    rc = -1;
                    break;
                }
                over[nover++] = o;
                continue;
            }
            double ex = o - 3 * usual - 20000;
            if (ex <= 0)
                continue;
            double held = ex; /* the host waited that much longer */
            ex = beyond_others(D, &S->waits, ev->step[i], src, end, ex);
            if (ex <= 0)
                continue;
            cand cd = {.det = TELLER_FAULT_SYNC_STALL, .rank = rank_of(D, (uint32_t)i), .name = ev->name[i],
                       .layer = ev->layer[i], .excess = ex, .ratio = o / (usual + 1000), .actual = (double)ev->dur_ns[i],
                       .usual = (double)ev->dur_ns[i] - ex, .event = (uint32_t)i, .peer = -1, .host_delay = held};
            if (finds_add(out, ev->step[i], &cd)) {
                rc = -1;
                break;
            }
        }
    }
    diag_ends_free(&E);
    free(over);
    return rc;
}

const diag_detector diag_row_syncs = {.name = "syncs", .scope = DIAG_PER_RUN, .round = 2, .reads = DIAG_S_WAITS,
                                      .run = syncs_run};
