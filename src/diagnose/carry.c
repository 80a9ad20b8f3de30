/*
 * carry.c - steps made late by the step before them. When the host runs
 * ahead of the GPU (a training loop, an async engine), a step's kernels are
 * launched while the GPU still runs the previous step's work and queue
 * behind it: a fault that made the previous step's GPU work end late makes
 * this step's work end late too, although nothing in this step is unusual.
 *
 * What a step's window owes to the queue is read from the trace alone, per
 * rank: walking its GPU work (kernels, copies, memsets) in start order, an
 * operation launched before the operation before it on its stream ended
 * (queued behind it), or that started when an operation of another stream
 * ended (it waited for it: the NCCL stream waits for the compute that made
 * its input), could have started earlier by as much as that predecessor,
 * down to its launch call's end. Work of an earlier step could have ended
 * any earlier; so the delay that reaches each
 * operation of step k is bounded by the slack between its start and its
 * launch along the chain that leads to it from the previous step's work,
 * and the step's exposure is how much of its window's end such delays
 * hold: the window's end against the latest end its operations (and its
 * step annotation) would have had. The walk is the cells' (each source's,
 * from its own events: queued_end, src/tree/steps.c), so a teller-mpi
 * reader does it for the ranks it holds. A run whose host waits for the
 * GPU (a serving engine that schedules after the last batch finished) has
 * none.
 *
 * The row carried asks, for a step after a flagged one, what the previous
 * step's lateness X (its top finding's excess, plus what it carried
 * itself) did to it: without it every rank's window would end min(X, its
 * exposure) earlier, less, on the faulty rank, how much later the fault
 * made its host start the step, and the step's duration (its longest rank
 * window) falls by the carried cost. The step then has a
 * candidate that is the previous step's root with that cost, scored like
 * any finding (its share of the step, and how unusual the operator was
 * where it ran).
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "detector.h"

/* What source s's step windows queued behind earlier steps' work: the
 * window's end against the latest end its work (its cell's queued_end:
 * src/tree/steps.c walks the source's GPU work) and its step annotation
 * (its rank's span of the step, as stamping read it) would have had. */
static int exposure_run(const dctx *D, diag_state *S, size_t s, finds *out)
{
    (void)out;
    const teller_step *steps = teller_store_steps(D->st);
    size_t count;
    const teller_step *span = teller_tree_spans(D->st, teller_store_source_c(D->st, (uint32_t)s)->rank, &count);
    for (uint32_t k = 0, j = 0; k < D->nsteps; k++) {
        uint32_t r = D->mrow[(size_t)k * D->nsrc + s];
        if (r == TELLER_NONE)
            continue;
        while (j < count && span[j].step < k) /* the rank's spans: their numbers rise */
            j++;
        if (j == count || span[j].step != k)
            continue; /* a row of the step table has its rank's span */
        int64_t held = span[j].end_ns, q = D->cell[(size_t)k * D->nsrc + s].queued_end;
        if (q > held)
            held = q;
        S->expo[(size_t)k * D->nsrc + s] = steps[r].end_ns > held ? (double)(steps[r].end_ns - held) : 0;
    }
    return 0;
}

/* A rank's window runs from its step annotation's start (the host) to its
 * last GPU work. Without the earlier fault its GPU work would have ended
 * min(x, exposure + host) earlier: work queued behind the late step by x,
 * and no more than its launches and annotation, which came host earlier,
 * allow. Its window then shrinks by min(x - host, exposure), which is
 * negative when the fault held the host back more than the GPU: a host
 * that runs ahead (HTA's ns_resolution trace, ~70 ms) and lost 30 ms in
 * slow launch calls that the GPU felt for 11 ms starts the next steps 30
 * ms late and ends their GPU work 11 ms late, so they are shorter. */
static double carried_cost(const dctx *D, const diag_state *S, uint32_t k, double x, double host, int32_t rank)
{
    const teller_step *steps = teller_store_steps(D->st);
    size_t hi, lo = diag_step_rows(D->st, k, &hi);
    double dur = 0, without = 0;
    for (size_t i = lo; i < hi; i++) {
        uint32_t mk = steps[i].marker;
        if (mk == TELLER_NONE)
            continue;
        double w = (double)(steps[i].end_ns - steps[i].start_ns), e = S->expo[(size_t)k * D->nsrc + D->ev->source[mk]];
        double xr = steps[i].rank == rank ? x - host : x;
        if (w > dur)
            dur = w;
        if (w - (xr < e ? xr : e) > without)
            without = w - (xr < e ? xr : e);
    }
    return dur - without;
}

static int exposure_prepare(const dctx *D, diag_state *S)
{
    return (S->expo = calloc((size_t)D->nsteps * D->nsrc + 1, sizeof *S->expo)) ? 0 : -1;
}

static void exposure_release(const dctx *D, diag_state *S)
{
    (void)D;
    free(S->expo);
}

const diag_detector diag_row_exposure = {.name = "exposure", .scope = DIAG_PER_SOURCE, .round = 1,
                                         .writes = DIAG_S_EXPOSURE, .prepare = exposure_prepare, .run = exposure_run,
                                         .release = exposure_release};

/* Step k, before it is judged: the previous step's fault, carried into it
 * as far as its late GPU work held this step's; a logged kind is a fact
 * of its own step (a hang ends the run). */
static int carried_run(const dctx *D, diag_state *S, size_t k, finds *out)
{
    const cand *prev = &S->prev;
    S->carry_in = 0;
    if (prev->det != TELLER_FAULT_NONE && !teller_fault_def_of(prev->det)->logged) {
        double in = carried_cost(D, S, (uint32_t)k, S->prev_late, S->prev_late_host, prev->rank);
        if (in > 0) {
            cand c = *prev;
            c.excess = in;
            c.from = prev->carried ? prev->from : (uint32_t)k - 1;
            c.carried = 1;
            c.late_gpu = S->prev_late;
            c.host_delay = S->prev_late_host;
            if (finds_add(out, (uint32_t)k, &c))
                return -1;
            S->carry_in = in;
        }
    }
    S->prev.det = TELLER_FAULT_NONE;
    return 0;
}

/* Step k judged: when it was flagged, its GPU work ended late by its own
 * fault and what it carried (a carried window grew by its GPU's lateness
 * less its host's); the host of the root's rank starts the next step late
 * by the fault's host delay and the step's own other slowed calls and gaps
 * there (a launch slowdown the queue absorbed; not other synchronizes,
 * whose overhangs follow the GPU), and by what it carried on the same rank
 * (a host that runs ahead does not catch up). */
static void carried_judged(const dctx *D, diag_state *S, uint32_t k, const cand *top, int abnormal)
{
    (void)D;
    if (!abnormal)
        return;
    const step_acc *sa = &S->steps[k];
    double own_host = top->carried ? 0 : top->host_delay;
    for (size_t a = 0; a < sa->n; a++)
        if (&sa->c[a] != top && !sa->c[a].carried && sa->c[a].rank == top->rank &&
            sa->c[a].det != TELLER_FAULT_SYNC_STALL)
            own_host += sa->c[a].host_delay;
    int same = S->carry_in > 0 && S->prev.rank == top->rank;
    double late = top->excess + (top->carried ? top->host_delay : S->carry_in > 0 ? S->carry_in + S->prev_late_host : 0);
    S->prev_late_host = own_host + (top->carried ? top->host_delay : same ? S->prev_late_host : 0);
    S->prev_late = late;
    S->prev = *top;
}

const diag_detector diag_row_carried = {.name = "carried", .scope = DIAG_PER_STEP, .round = 5,
                                        .reads = DIAG_S_EXPOSURE | DIAG_S_CARRY | DIAG_S_STEPS, .writes = DIAG_S_CARRY,
                                        .run = carried_run, .judged = carried_judged};
