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
 * step annotation) would have had. A run whose host waits for the GPU
 * (a serving engine that schedules after the last batch finished) has none.
 *
 * diagnose.c asks, for a step after a flagged one, what the previous step's
 * lateness X (its top finding's excess, plus what it carried itself) did
 * to it: without it every rank's window would end min(X, its exposure)
 * earlier, less, on the faulty rank, how much later the fault made its
 * host start the step (diag_carried), and the step's duration (its
 * longest rank window) falls by the carried cost. The step then has a
 * candidate that is the previous step's root with that cost, scored like
 * any finding (its share of the step, and how unusual the operator was
 * where it ran).
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "diag_internal.h"

/* A GPU operation of the source being walked. */
typedef struct gop {
    int64_t  start, end, ready; /* ready: its launch call's end (its start without a launch) */
    uint32_t step;
    int32_t  pid, tid;          /* device and stream */
    int      peers;             /* a collective with other loaded ranks: its end is theirs too */
    size_t   wix;               /* such a collective: its kernel in D->waits (diag_gpuops_create),
                                 * else SIZE_MAX */
} gop;

/* The last operation seen on one stream. */
typedef struct lastop {
    int32_t  pid, tid;
    int64_t  end;
    uint32_t step;
    int64_t  delay; /* how much earlier it could have ended, had its step's predecessors ended earlier */
} lastop;

/* An operation waited for an operation of another stream when it started
 * within WAIT_NS after its end, or ROUND_NS before it (Kineto rounds start
 * and duration apart; perturb's retime uses the same rule). */
#define WAIT_NS  2000
#define ROUND_NS 1000

/* The delay a predecessor passes to an operation of step k: unbounded
 * from an earlier step's work (what this file asks is what an earlier end
 * would change), else its own (work of a later step, launched by another
 * thread while this step's still was, queues behind the same earlier work). */
static int64_t passed(const lastop *p, uint32_t k)
{
    return p->step < k ? INT64_MAX : p->delay;
}

/* Whether event i is GPU work of a step (what the carried steps follow). */
static int is_gop(const dctx *D, size_t i)
{
    const teller_events *ev = D->ev;
    return (ev->flags[i] & TELLER_F_GPU) && teller_layer_is_gpu_work(ev->layer[i]) && ev->step[i] < D->nsteps;
}

/* Source s's GPU work in start order into *g (grown, *ng of them). 0, or
 * -1 out of memory. */
static int gather_gops(const dctx *D, size_t s, gop **g, size_t *gcap, size_t *ng)
{
    const teller_events *ev = D->ev;
    size_t n = 0, lo = D->range[s], hi = D->range[s + 1];
    for (size_t i = lo; i < hi; i++) /* counted first: the ids are the GPU operations', not every event's */
        n += is_gop(D, i);
    uint32_t *ids = malloc((n ? n : 1) * sizeof *ids), *tmp = malloc((n ? n : 1) * sizeof *tmp);
    if (ids) {
        n = 0;
        for (size_t i = lo; i < hi; i++)
            if (is_gop(D, i))
                ids[n++] = (uint32_t)i;
    }
    if (!ids || !tmp || TELLER_GROW(*g, *gcap, n)) {
        free(ids);
        free(tmp);
        return -1;
    }
    teller_sort_by_key(ids, tmp, n, ev->start_ns);
    for (size_t k = 0; k < n; k++) {
        uint32_t i = ids[k];
        (*g)[k] = (gop){ev->start_ns[i], ev->start_ns[i] + ev->dur_ns[i], diag_ready_ns(ev, i), ev->step[i],
                        teller_event_pid(ev, i), teller_event_tid(ev, i), (ev->flags[i] & TELLER_F_COMM) && D->nsrc > 1,
                        SIZE_MAX};
    }
    *ng = n;
    free(ids);
    free(tmp);
    return 0;
}

int diag_carry_exposure(const dctx *D, size_t s)
{
    const teller_events *ev = D->ev;
    int64_t *cfend = malloc((D->nsteps ? D->nsteps : 1) * sizeof *cfend); /* per step */
    gop *g = NULL;
    lastop *ls = NULL;
    size_t gcap = 0, lcap = 0, ng = 0, nl = 0;
    int rc = -1;
    if (!cfend)
        goto done;
    for (uint32_t k = 0; k < D->nsteps; k++)
        cfend[k] = INT64_MIN;
    if (gather_gops(D, s, &g, &gcap, &ng))
        goto done;
    for (size_t i = 0; i < ng; i++) {
        const gop *o = &g[i];
        int64_t from = -1; /* the delay its predecessors pass on; -1: it waited for none */
        size_t own = nl;
        for (size_t q = 0; q < nl; q++) {
            if (ls[q].pid == o->pid && ls[q].tid == o->tid) {
                own = q;
                if (o->ready < ls[q].end && passed(&ls[q], o->step) > from)
                    from = passed(&ls[q], o->step);
            } else if (ls[q].end >= o->start - WAIT_NS - ROUND_NS && ls[q].end <= o->start + ROUND_NS &&
                       passed(&ls[q], o->step) > from) {
                from = passed(&ls[q], o->step);
            }
        }
        int64_t slack = o->start - o->ready, delay = from < 0 ? 0 : from < slack ? from : slack;
        if (own == nl) {
            if (TELLER_GROW(ls, lcap, nl + 1))
                goto done;
            nl++;
        }
        ls[own] = (lastop){o->pid, o->tid, o->end, o->step, delay};
        if (o->end - delay > cfend[o->step])
            cfend[o->step] = o->end - delay;
    }
    /* the exposure of the rank's window in each step: its end against the
     * latest end its work and its step annotation would have had */
    const teller_step *steps = teller_store_steps(D->st);
    for (uint32_t k = 0; k < D->nsteps; k++) {
        uint32_t r = D->mrow[(size_t)k * D->nsrc + s];
        if (r == TELLER_NONE)
            continue;
        uint32_t mk = steps[r].marker;
        int64_t held = ev->start_ns[mk] + ev->dur_ns[mk];
        if (cfend[k] > held)
            held = cfend[k];
        D->expo[(size_t)k * D->nsrc + s] = steps[r].end_ns > held ? (double)(steps[r].end_ns - held) : 0;
    }
    rc = 0;
done:
    free(cfend);
    free(g);
    free(ls);
    return rc;
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
double diag_carried(const dctx *D, uint32_t k, double x, double host, int32_t rank)
{
    const teller_step *steps = teller_store_steps(D->st);
    size_t hi, lo = diag_step_rows(D, k, &hi);
    double dur = 0, without = 0;
    for (size_t i = lo; i < hi; i++) {
        uint32_t mk = steps[i].marker;
        if (mk == TELLER_NONE)
            continue;
        double w = (double)(steps[i].end_ns - steps[i].start_ns), e = D->expo[(size_t)k * D->nsrc + D->ev->source[mk]];
        double xr = steps[i].rank == rank ? x - host : x;
        if (w > dur)
            dur = w;
        if (w - (xr < e ? xr : e) > without)
            without = w - (xr < e ? xr : e);
    }
    return dur - without;
}

/* ---- what a host delay costs a step ----
 *
 * A host that stalls (descheduled, or in slow launch calls) launches all
 * its later work late. What that costs the step is not only the GPU's idle
 * time during the stall: a GPU fed ahead (a training loop queueing its
 * kernels) runs on from its queue and idles later, where it catches up with
 * the host, or not at all. Walking the rank's GPU work in start order, an
 * operation launched d later than it would have been without the delays
 * could have started earlier by its slack to its launch plus d (by d when
 * nothing in the trace explains the slack), but no earlier than the
 * operation before it on its stream (or of another stream it waited for,
 * as above) would then have ended, and a collective with
 * other loaded ranks (the last member's arrival starts it) by at most how
 * late the rank arrived at it plus what its communicator's collective
 * before it moved, when the caller gives the lateness, else no earlier at
 * all; the rank's window would have ended at the latest such end, or at
 * its annotation's end less the delays after its last call that waits for
 * the GPU (that call ending earlier only as far as the GPU work it waited
 * for did). The cost is how much earlier the step, its longest rank window
 * with the rank's peers' ending as much earlier as its last collective,
 * would then have ended. */

struct diag_gpuops {
    gop     *g;
    size_t   n, cap;
    size_t  *first, *last; /* per step: its first and last operation in g (first > last: none) */
    int64_t *block;        /* per step: the end of its last call that waits for the GPU, INT64_MIN none */
};

/* How far before a step's first operation the walk starts, so that each
 * busy stream's last earlier operation is seen. */
#define LOOKBACK 1024

diag_gpuops *diag_gpuops_create(const dctx *D, size_t s)
{
    diag_gpuops *G = calloc(1, sizeof *G);
    if (!G || gather_gops(D, s, &G->g, &G->cap, &G->n) ||
        !(G->first = malloc((D->nsteps ? D->nsteps : 1) * sizeof *G->first)) ||
        !(G->last = calloc(D->nsteps ? D->nsteps : 1, sizeof *G->last)) ||
        !(G->block = malloc((D->nsteps ? D->nsteps : 1) * sizeof *G->block))) {
        diag_gpuops_free(G);
        return NULL;
    }
    for (uint32_t k = 0; k < D->nsteps; k++) {
        G->first[k] = SIZE_MAX;
        G->block[k] = INT64_MIN;
    }
    const teller_events *ev = D->ev;
    for (size_t i = D->range[s]; i < D->range[s + 1]; i++)
        if (is_api(ev->layer[i]) && !(ev->flags[i] & TELLER_F_GPU) && ev->step[i] < D->nsteps &&
            diag_blocks_on_gpu(D->st, ev->name[i]) && ev->start_ns[i] + ev->dur_ns[i] > G->block[ev->step[i]])
            G->block[ev->step[i]] = ev->start_ns[i] + ev->dur_ns[i];
    for (size_t i = 0; i < G->n; i++) {
        uint32_t k = G->g[i].step;
        /* a collective's kernel among the source's kernels by its start
         * (the waits index is built by now, in round 1) */
        for (size_t j = G->g[i].peers ? diag_kernel_after(D, (uint16_t)s, k, G->g[i].start) : SIZE_MAX;
             j != SIZE_MAX && j < D->waits.off[s + 1] && D->waits.start[j] == G->g[i].start; j++)
            if (D->waits.wait[j] >= 0) {
                G->g[i].wix = j;
                break;
            }
        if (G->first[k] == SIZE_MAX)
            G->first[k] = i;
        G->last[k] = i;
    }
    return G;
}

void diag_gpuops_free(diag_gpuops *G)
{
    if (G) {
        free(G->g);
        free(G->first);
        free(G->last);
        free(G->block);
    }
    free(G);
}

double diag_host_idle(const dctx *D, const diag_gpuops *G, size_t s, int64_t a, int64_t b)
{
    size_t lo = 0, hi = G->n;
    while (lo < hi) { /* the first operation that starts at a or later */
        size_t mid = (lo + hi) / 2;
        if (G->g[mid].start < a)
            lo = mid + 1;
        else
            hi = mid;
    }
    /* before each operation's start the GPU idled for want of it only
     * until it was launched: an operation launched before the stall that
     * still started after it waited for something else */
    double idle = 0;
    for (int64_t from = a; from < b; lo++) {
        int64_t to = lo < G->n && G->g[lo].start < b ? G->g[lo].start : b;
        int64_t cut = lo < G->n && G->g[lo].ready < to ? G->g[lo].ready : to;
        idle += diag_idle_in(&D->gpu, (uint16_t)s, from, cut);
        from = to;
    }
    return idle;
}

/* The host delay before time t: the sum of amt[i] with at[i] <= t (at sorted). */
static double delay_before(const int64_t *at, const double *amt, size_t n, int64_t t)
{
    double d = 0;
    for (size_t i = 0; i < n && at[i] <= t; i++)
        d += amt[i];
    return d;
}

double diag_host_delay_cost(const dctx *D, const diag_gpuops *G, size_t s, uint32_t k, const int64_t *at,
                            const double *amt, size_t n, const double *late)
{
    const teller_events *ev = D->ev;
    const teller_step *steps = teller_store_steps(D->st);
    uint32_t row = k < D->nsteps ? D->mrow[(size_t)k * D->nsrc + s] : TELLER_NONE; /* the rank's row of step k */
    if (row == TELLER_NONE || !n)
        return 0;
    uint32_t mk = steps[row].marker;
    int64_t mend = ev->start_ns[mk] + ev->dur_ns[mk], block = G->block[k] <= mend ? G->block[k] : INT64_MIN;
    double total = delay_before(at, amt, n, INT64_MAX), held = 0;
    double gpu_done = -INFINITY; /* the latest the GPU work the last blocking call waited for could have ended */
    double coll = 0; /* how much earlier the rank's last collective of the step could have started */
    /* per stream: the last operation's end and how much earlier it could end */
    typedef struct { int32_t pid, tid; int64_t end; double delay; } last;
    last ls[64];
    size_t nl = 0;
    size_t from = G->first[k] == SIZE_MAX ? G->n : G->first[k] > LOOKBACK ? G->first[k] - LOOKBACK : 0,
           to = G->first[k] == SIZE_MAX ? G->n : G->last[k] + 1;
    for (size_t i = from; i < to; i++) {
        const gop *o = &G->g[i];
        double d = 0;
        if (o->step == k) {
            /* launched that much earlier, it could start that much earlier,
             * and by its slack to its launch too when what it waited for
             * (an operation before it on its stream or one of another
             * stream it waited for) ends earlier; an operation that waited
             * after its launch for nothing the trace shows (the device
             * busy with work of another process or not traced) keeps that
             * wait, as perturb's retime keeps its launch latency */
            double slack = (double)(o->start - o->ready), dh = delay_before(at, amt, n, o->ready);
            int waited = 0;
            d = INFINITY;
            for (size_t q = 0; q < nl; q++) {
                int same = ls[q].pid == o->pid && ls[q].tid == o->tid;
                int near = ls[q].end >= o->start - WAIT_NS - ROUND_NS && ls[q].end <= o->start + ROUND_NS;
                if (same || near) {
                    double c = (double)(o->start - ls[q].end) + ls[q].delay;
                    if (c < d)
                        d = c;
                    waited |= near || o->ready < ls[q].end;
                }
            }
            if ((waited ? slack : 0) + dh < d)
                d = (waited ? slack : 0) + dh;
            /* a collective starts when its last member arrives: this
             * rank's arriving earlier moves it by at most how late the rank
             * came after the others, plus what the communicator's collective
             * before it moved (the members left that one together; its
             * stream is the communicator's); one the waits do not know, not
             * at all */
            if (o->peers) {
                double m = 0;
                if (late && o->wix != SIZE_MAX) {
                    m = late[o->wix];
                    for (size_t q = 0; q < nl; q++)
                        if (ls[q].pid == o->pid && ls[q].tid == o->tid)
                            m += ls[q].delay;
                }
                if (d > m)
                    d = m;
            }
            if (d < 0)
                d = 0;
            if (o->peers)
                coll = d;
            if ((double)o->end - d > held)
                held = (double)o->end - d;
            if (o->end <= block + ROUND_NS && (double)o->end - d > gpu_done)
                gpu_done = (double)o->end - d;
        }
        size_t q = 0;
        while (q < nl && !(ls[q].pid == o->pid && ls[q].tid == o->tid))
            q++;
        if (q == nl) {
            if (nl == sizeof ls / sizeof *ls)
                continue; /* more streams than tracked: the rest constrain nothing */
            nl++;
        }
        ls[q] = (last){o->pid, o->tid, o->end, d};
    }
    /* the annotation's end moves with the delays after the step's last
     * call that waits for the GPU (a synchronize, a copy back), and that
     * call's end with those before it only as far as the GPU work it
     * waited for would have ended earlier (a host that waits for the GPU
     * each step loses nothing to a stall while the GPU is still busy) */
    double before = block == INT64_MIN ? 0 : delay_before(at, amt, n, block), moved = delay_before(at, amt, n, mend) - before;
    if (block != INT64_MIN)
        moved += before < (double)block - gpu_done ? before : (double)block - gpu_done;
    if ((double)mend - moved > held)
        held = (double)mend - moved;
    /* the step's duration is its longest rank window: a rank whose window
     * another rank's matches costs the step nothing by ending earlier;
     * the rank's peers waited for it at their collectives, and could end
     * as much earlier as the last of them would have started */
    double dur = 0, others = 0, mine = held - (double)steps[row].start_ns;
    size_t hi, lo = diag_step_rows(D, k, &hi);
    for (size_t i = lo; i < hi; i++) {
        double w = (double)(steps[i].end_ns - steps[i].start_ns);
        if (w > dur)
            dur = w;
        if (steps[i].marker != TELLER_NONE && D->group[ev->source[steps[i].marker]] == D->group[s])
            w -= coll;
        if (i != row && w > others)
            others = w;
    }
    double cost = dur - (others > mine ? others : mine);
    return cost < 0 ? 0 : cost > total ? total : cost;
}
