/*
 * stall.c - what a host delay costs a step (stall.h).
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "stall.h"

/* Whether event i is GPU work of a step. */
static int is_gop(const dctx *D, size_t i)
{
    const teller_events *ev = D->ev;
    return (ev->flags[i] & TELLER_F_GPU) && teller_layer_is_gpu_work(ev->layer[i]) && ev->step[i] < D->nsteps;
}

/* Source s's GPU work of the steps, in start order, into *g (grown, *ng of
 * them). 0, or -1 out of memory. */
static int gpu_work(const dctx *D, size_t s, gop **g, size_t *gcap, size_t *ng)
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
        (*g)[k] = (gop){ev->start_ns[i], ev->start_ns[i] + ev->dur_ns[i], teller_ready_ns(ev, i), ev->step[i],
                        teller_event_pid(ev, i), teller_event_tid(ev, i), (ev->flags[i] & TELLER_F_COMM) && D->nsrc > 1,
                        SIZE_MAX};
    }
    *ng = n;
    free(ids);
    free(tmp);
    return 0;
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

diag_gpuops *diag_gpuops_create(const dctx *D, const waitidx *W, size_t s)
{
    diag_gpuops *G = calloc(1, sizeof *G);
    if (!G || gpu_work(D, s, &G->g, &G->cap, &G->n) ||
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
        for (size_t j = G->g[i].peers ? diag_kernel_after(W, (uint16_t)s, k, G->g[i].start) : SIZE_MAX;
             j != SIZE_MAX && j < W->off[s + 1] && W->start[j] == G->g[i].start; j++)
            if (W->wait[j] >= 0) {
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

double diag_host_idle(const busyidx *gpu, const diag_gpuops *G, size_t s, int64_t a, int64_t b)
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
        idle += diag_idle_in(gpu, (uint16_t)s, from, cut);
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
                int near = ls[q].end >= o->start - TELLER_WAIT_NS - TELLER_ROUND_NS && ls[q].end <= o->start + TELLER_ROUND_NS;
                if (same || near) {
                    /* queued when it ended, the operation follows it as
                     * closely as it did (the GPU's own gap between two
                     * operations is no host delay); launched after it
                     * ended, it could start as early as it ends */
                    double gap = o->ready <= ls[q].end ? 0 : (double)(o->start - ls[q].end);
                    double c = gap + ls[q].delay;
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
            if (o->end <= block + TELLER_ROUND_NS && (double)o->end - d > gpu_done)
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
    size_t hi, lo = diag_step_rows(D->st, k, &hi);
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
