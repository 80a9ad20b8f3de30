/*
 * gaps.c - the host-gap detector (rows host_busy, host_gaps): stretches of a step in which no thread of
 * a rank's process ran a host op (holes in the stepping thread's outermost
 * ops that no other thread's work covers: autograd's engine running the
 * backward pass the stepping thread waits for is work, its own stall is a
 * hole), against the rank's usual gap, costing the time the GPU idled in
 * them (CPU contention). Every yardstick is the source's own, so the
 * detector runs one source at a time, on the pool; the other threads' work
 * is a busy index (row host_busy, a round before), each source's part
 * built by a task of its own once every source's stepping thread is known.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "detector.h"
#include "stall.h"

static uint64_t op_key(uint32_t name, uint16_t src) { return ((uint64_t)name << 14) | (src & 0x3FFF); }

/* From the longest gap before each op name per step of one source (opmax,
 * values opmax_v): each name's usual one, the median over the run's steps
 * with a step without that op counting zero (*opusual, allocated here,
 * indexed as g's keys), and stepmax (per step) rewritten to the longest gap
 * of each step that its op's usual gap does not explain (over 3x of it),
 * zero where none: what is left for "the usual longest gap per step". 0,
 * or -1 out of memory. */
static int op_yardsticks(const dctx *D, kmap *opmax, const double *opmax_v, groups *g, double **opusual,
                         double *stepmax)
{
    uint64_t *keys = malloc((opmax->n ? opmax->n : 1) * sizeof *keys);
    int rc = -1;
    if (!keys)
        return -1;
    kmap_keys(opmax, keys);
    for (size_t j = 0; j < opmax->n; j++) {
        uint32_t name = (uint32_t)(keys[j] >> 36);
        uint16_t src = (uint16_t)(keys[j] & 0x3FFF);
        if (diag_groups_add(g, op_key(name, src), opmax_v[j]))
            goto out;
    }
    *opusual = calloc(g->keys.n ? g->keys.n : 1, sizeof **opusual);
    if (!*opusual)
        goto out;
    for (size_t ix = 0; ix < g->keys.n; ix++) /* a step without the op's gap counts zero */
        (*opusual)[ix] = diag_median_zeros(&g->s[ix], D->nsteps, NULL);
    memset(stepmax, 0, (size_t)D->nsteps * sizeof *stepmax);
    for (size_t j = 0; j < opmax->n; j++) {
        uint32_t name = (uint32_t)(keys[j] >> 36), step = (uint32_t)((keys[j] >> 14) & 0x3FFFFF);
        uint16_t src = (uint16_t)(keys[j] & 0x3FFF);
        double m = opmax_v[j], u = (*opusual)[kmap_get(&g->keys, op_key(name, src), 0)];
        if (m > 3 * u && step < D->nsteps && m > stepmax[step])
            stepmax[step] = m;
    }
    rc = 0;
out:
    free(keys);
    return rc;
}

/* Each source's stepping thread (the thread of its step markers, from the
 * step table), before the tasks that build each source's part of the busy
 * index of its other threads. */
static int host_busy_prepare(const dctx *D, diag_state *S)
{
    if (!(S->step_tid = malloc((D->nsrc ? D->nsrc : 1) * sizeof *S->step_tid)) || diag_busy_init(&S->host, D->nsrc))
        return -1;
    for (size_t s = 0; s < D->nsrc; s++)
        S->step_tid[s] = INT32_MIN;
    const teller_step *steps = teller_store_steps(D->st);
    for (size_t k = 0; k < teller_store_num_steps(D->st); k++)
        if (steps[k].marker != TELLER_NONE)
            S->step_tid[D->ev->source[steps[k].marker]] = teller_event_tid(D->ev, steps[k].marker);
    return 0;
}

static int host_busy_run(const dctx *D, diag_state *S, size_t src, finds *out)
{
    (void)out;
    return diag_busy_part(&S->host, D, DIAG_BUSY_OTHER_THREADS, S->step_tid, src);
}

static void host_busy_release(const dctx *D, diag_state *S)
{
    (void)D;
    diag_busy_free(&S->host);
    free(S->step_tid);
}

const diag_detector diag_row_host_busy = {.name = "host_busy", .scope = DIAG_PER_SOURCE, .round = 2,
                                          .writes = DIAG_S_HOST_BUSY, .prepare = host_busy_prepare,
                                          .run = host_busy_run, .release = host_busy_release};

/* One source's sweep of its host gaps: pass 0 gathers the yardsticks,
 * pass 1 judges every hole against them. */
typedef struct gapsweep {
    const dctx *D;
    diag_state *S;
    size_t      src;
    finds      *out;
    diag_hole  *H;        /* the holes of one gap */
    size_t      hcap;
    groups      gaps;     /* every gap of the source, for its median */
    /* the longest gap of each step: a gap every step has is normal */
    double     *stepmax;
    double      usual, usual_max;
    size_t      nmax;     /* steps with a gap */
    /* the longest gap before each op name in each (step, source), and the
     * usual one per (name, source): a gap that comes before the same op
     * every step (Python before the forward, the optimizer after the
     * backward) is that op's normal, and not every other op's */
    kmap        opmax;
    groups      opg;
    double     *opmax_v, *opusual;
    size_t      opmax_cap;
    /* every gap before each op name per source, for its median: what the op
     * usually waits, taken off a stall's gap to name the step after the op
     * whose wait grew the most (a driver launch call that usually waits
     * 12 us is not the stall when an op that usually waits 2 us waited 1 us
     * less); an op with fewer than three gaps, whose median would be the
     * stall's own, is held to the rank's usual gap */
    groups      opcall;
    double     *opmed;
    /* what a step's stalls cost: the source's GPU work (made at its first
     * stall), and per stall where the host resumed and what it lost */
    diag_gpuops *G;
    int64_t    *d_at;
    double     *d_amt;
    size_t      d_cap, d_cap2;
    /* the step being judged: its stalls, the one named (its gap, that gap
     * over its op's usual, its hole), their cost, and what they took over
     * the usual gap */
    uint32_t    step;
    size_t      nd;
    double      best_gap, best_over, sum_ex, held;
    uint32_t    best_ev;
    int64_t     best_a, best_b;
} gapsweep;

/* Pass 0: gap g, the hole ended by event hev, into the yardsticks. */
static int gather_hole(gapsweep *W, double g, uint32_t hev)
{
    const teller_events *ev = W->D->ev;
    uint16_t src = (uint16_t)W->src;
    if (diag_groups_add(&W->gaps, src, g) || diag_groups_add(&W->opcall, op_key(ev->name[hev], src), g))
        return -1;
    double *mx = &W->stepmax[W->step];
    if (g > *mx)
        *mx = g;
    mx = kmap_slot(&W->opmax, nss_key(ev->name[hev], W->step, src), (void **)&W->opmax_v, &W->opmax_cap,
                   sizeof *W->opmax_v);
    if (!mx)
        return -1;
    if (g > *mx)
        *mx = g;
    return 0;
}

/* Between the passes: the source's usual gap, each op's usual gap, and
 * the usual longest gap of a step. */
static int gap_yardsticks(gapsweep *W)
{
    const dctx *D = W->D;
    double *med = diag_groups_medians(&W->gaps), *col = malloc((D->nsteps ? D->nsteps : 1) * sizeof *col);
    int rc = -1;
    if (!med || !col)
        goto out;
    if (D->nsteps >= 3 && op_yardsticks(D, &W->opmax, W->opmax_v, &W->opg, &W->opusual, W->stepmax))
        goto out;
    if (!(W->opmed = diag_groups_medians(&W->opcall)))
        goto out;
    W->usual = W->gaps.keys.n ? med[0] : 0;
    size_t nc = 0;
    for (uint32_t k = 0; k < D->nsteps; k++)
        if (W->stepmax[k] > 0 || W->opusual) /* a step whose gaps are all explained: zero */
            col[nc++] = W->stepmax[k];
    /* the yardstick must not be the step's own longest gap (the stall
     * itself): with three steps or more the median, with two their sum
     * (the other step's is taken out in judge_hole), with one none */
    W->nmax = nc;
    W->usual_max = nc >= 3 ? diag_median(col, nc) : nc == 2 ? col[0] + col[1] : 0;
    rc = 0;
out:
    free(med);
    free(col);
    return rc;
}

/* Pass 1: hole h of a gap, a stall when longer than the source's usual
 * gaps, its op's usual and the usual longest gap of a step allow. */
static int judge_hole(gapsweep *W, const diag_hole *h)
{
    const dctx *D = W->D;
    diag_state *S = W->S;
    uint16_t src = (uint16_t)W->src;
    uint32_t name = D->ev->name[h->ev];
    double g = (double)(h->b - h->a), usual = W->usual;
    double thr = 40 * usual + 100000, um = W->nmax == 2 ? W->usual_max - W->stepmax[W->step] : W->usual_max;
    if (thr < 3 * um)
        thr = 3 * um;
    if (W->opusual) {
        uint32_t ox = kmap_get(&W->opg.keys, op_key(name, src), 0);
        if (ox != UINT32_MAX && thr < 3 * W->opusual[ox])
            thr = 3 * W->opusual[ox];
    }
    /* with fewer than three steps the thread's usual stalls are unknown:
     * only a gap longer than a scheduler time slice (milliseconds) says
     * the thread was descheduled */
    if (D->nsteps < 3 && thr < 1e6)
        thr = 1e6;
    if (g <= thr)
        return 0;
    /* what the gap cost: the time the GPU idled in it waiting for work the
     * host had not launched yet, or later (close_step) */
    if (!W->G && !(W->G = diag_gpuops_create(D, &S->waits, W->src)))
        return -1;
    double idle = diag_host_idle(&S->gpu, W->G, W->src, h->a, h->b);
    double cost = g - usual < idle ? g - usual : idle;
    W->sum_ex += cost - diag_spend_lateness(&S->waits, S->wait_left, src, W->step, h->b, cost);
    if (TELLER_GROW(W->d_at, W->d_cap, W->nd + 1) || TELLER_GROW(W->d_amt, W->d_cap2, W->nd + 1))
        return -1;
    W->d_at[W->nd] = h->b;
    W->d_amt[W->nd++] = g - usual;
    W->held += g - usual;
    uint32_t cx = kmap_get(&W->opcall.keys, op_key(name, src), 0);
    double over = g - (cx != UINT32_MAX && W->opcall.s[cx].n >= 3 ? W->opmed[cx] : usual);
    if (over > W->best_over) {
        W->best_over = over;
        W->best_gap = g;
        W->best_ev = h->ev;
        W->best_a = h->a;
        W->best_b = h->b;
    }
    return 0;
}

/* Pass 1, at the end of the step's ops: its stalls as one finding, named
 * after the one whose gap grew the most; then the next step starts blank. */
static int close_step(gapsweep *W, int pass)
{
    const dctx *D = W->D;
    const teller_events *ev = D->ev;
    if (pass && W->best_ev != TELLER_NONE) {
        /* a GPU fed ahead runs on from its queue through a stall and
         * idles later, where it catches up with the late host */
        double cost = diag_host_delay_cost(D, W->G, W->src, W->step, W->d_at, W->d_amt, W->nd, NULL);
        if (cost > W->sum_ex)
            W->sum_ex = cost;
    }
    if (pass && W->best_ev != TELLER_NONE && W->sum_ex > 0) {
        uint32_t e = W->best_ev;
        cand c = {.det = TELLER_FAULT_CPU_CONTENTION, .rank = teller_store_source_c(D->st, (uint32_t)W->src)->rank,
                  .name = ev->name[e], .layer = ev->layer[e], .excess = W->sum_ex,
                  .ratio = W->best_gap / (W->usual + 1000), .actual = W->best_gap, .usual = W->usual, .event = e,
                  .peer = -1, .host_delay = W->held, .hole_from = W->best_a, .hole_to = W->best_b};
        if (finds_add(W->out, W->step, &c))
            return -1;
    }
    W->best_gap = W->sum_ex = W->held = 0;
    W->best_over = -INFINITY;
    W->nd = 0;
    W->best_ev = TELLER_NONE;
    return 0;
}

/* Whether event i is one of the stepping thread's outermost host ops. */
static int stepping_op(const gapsweep *W, size_t i)
{
    const teller_events *ev = W->D->ev;
    if (teller_event_tid(ev, i) != W->S->step_tid[W->src] || (ev->flags[i] & TELLER_F_GPU) ||
        !teller_layer_is_host_op(ev->layer[i]))
        return 0;
    uint32_t p = ev->parent[i];
    return p == TELLER_NONE || !teller_layer_is_host_op(ev->layer[p]);
}

/* One pass over the source's stepping-thread ops (its events are sorted
 * by (pid, tid, start): the sweep sees each thread in time order); the
 * gaps are the holes in which no thread of the process worked (another
 * thread, such as autograd's engine running the backward pass the
 * stepping thread waits for, is work), each named after the op that
 * ended it, for the yardsticks (pass 0) as for the test (pass 1). */
static int sweep(gapsweep *W, int pass)
{
    const dctx *D = W->D;
    const teller_events *ev = D->ev;
    size_t lo = D->range[W->src], hi = D->range[W->src + 1];
    int64_t prev_end = 0;
    W->step = TELLER_NONE;
    if (close_step(W, 0))
        return -1;
    for (size_t i = lo; i <= hi; i++) {
        int boundary = i == hi;
        if (!boundary) {
            if (!stepping_op(W, i))
                continue;
            boundary = ev->step[i] != W->step;
        }
        if (boundary) {
            if (close_step(W, pass))
                return -1;
            if (i == hi)
                break;
            W->step = ev->step[i];
            /* the first op's gap counts from the step's start on this
             * rank, but for the first step: its start pays what a run pays
             * once (the data loader's first batch, DDP's first forward),
             * untraced Python work that no other step has */
            uint32_t mr = W->step < D->nsteps && W->step > 0 ? D->mrow[(size_t)W->step * D->nsrc + W->src] : TELLER_NONE;
            int64_t ms = mr != TELLER_NONE ? teller_store_steps(D->st)[mr].start_ns : INT64_MIN;
            if (ms == INT64_MIN || ms > ev->start_ns[i]) {
                prev_end = ev->start_ns[i] + ev->dur_ns[i];
                continue;
            }
            prev_end = ms;
        }
        int64_t gap_from = prev_end, e = ev->start_ns[i] + ev->dur_ns[i];
        if (e > prev_end)
            prev_end = e;
        if (W->step >= D->nsteps || ev->start_ns[i] <= gap_from)
            continue;
        size_t nh = 0;
        if (diag_busy_holes(&W->S->host, (uint16_t)W->src, gap_from, ev->start_ns[i], (uint32_t)i, &W->H, &W->hcap, &nh))
            return -1;
        for (size_t h = 0; h < nh; h++)
            if (pass ? judge_hole(W, &W->H[h]) : gather_hole(W, (double)(W->H[h].b - W->H[h].a), W->H[h].ev))
                return -1;
    }
    return 0;
}

/* Source src's host gaps; its findings in event order. */
static int host_gaps_run(const dctx *D, diag_state *S, size_t src, finds *out)
{
    gapsweep W = {.D = D, .S = S, .src = src, .out = out, .stepmax = calloc((size_t)D->nsteps + 1, sizeof *W.stepmax)};
    int rc = !W.stepmax || sweep(&W, 0) || gap_yardsticks(&W) || sweep(&W, 1) ? -1 : 0;
    diag_groups_free(&W.gaps);
    free(W.H);
    free(W.stepmax);
    kmap_free(&W.opmax);
    diag_groups_free(&W.opg);
    diag_groups_free(&W.opcall);
    free(W.opmed);
    free(W.opmax_v);
    free(W.opusual);
    diag_gpuops_free(W.G);
    free(W.d_at);
    free(W.d_amt);
    return rc;
}

const diag_detector diag_row_host_gaps = {
    .name = "host_gaps", .scope = DIAG_PER_SOURCE, .round = 3,
    .reads = DIAG_S_HOST_BUSY | DIAG_S_GPU_BUSY | DIAG_S_WAITS | DIAG_S_WAIT_LEFT,
    .writes = DIAG_S_WAIT_LEFT, .run = host_gaps_run};
