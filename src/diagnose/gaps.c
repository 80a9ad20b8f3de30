/*
 * gaps.c - the host-gap detector (rows host_busy, host_gaps): stretches of a step in which no thread of
 * a rank's process ran a host op (holes in the stepping thread's outermost
 * ops that no other thread's work covers: autograd's engine running the
 * backward pass the stepping thread waits for is work, its own stall is a
 * hole), against the rank's usual gap, costing the time the GPU idled in
 * them (CPU contention). Every yardstick is the source's own, so the
 * detector runs one source at a time, on the pool; the other threads' work
 * is one busy index for the run (row host_busy), made before with each
 * source's stepping thread.
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

/* Each source's stepping thread (the thread of its step markers) and the
 * busy index of its other threads. */
static int host_busy_run(const dctx *D, diag_state *S, size_t task, finds *out)
{
    (void)task;
    (void)out;
    if (!(S->step_tid = malloc((D->nsrc ? D->nsrc : 1) * sizeof *S->step_tid)))
        return -1;
    for (size_t s = 0; s < D->nsrc; s++)
        S->step_tid[s] = INT32_MIN;
    const teller_step *steps = teller_store_steps(D->st);
    for (size_t k = 0; k < teller_store_num_steps(D->st); k++)
        if (steps[k].marker != TELLER_NONE)
            S->step_tid[D->ev->source[steps[k].marker]] = teller_event_tid(D->ev, steps[k].marker);
    return diag_busy_build(&S->host, D, DIAG_BUSY_OTHER_THREADS, S->step_tid);
}

static void host_busy_release(const dctx *D, diag_state *S)
{
    (void)D;
    diag_busy_free(&S->host);
    free(S->step_tid);
}

const diag_detector diag_row_host_busy = {.name = "host_busy", .scope = DIAG_PER_RUN, .round = 2,
                                          .writes = DIAG_S_HOST_BUSY, .run = host_busy_run,
                                          .release = host_busy_release};

/* Source src's host gaps; its findings in event order. */
static int host_gaps_run(const dctx *D, diag_state *S, size_t src, finds *out)
{
    const teller_events *ev = D->ev;
    const busyidx *others = &S->host; /* the source's other threads at work */
    int32_t tid = S->step_tid[src];
    diag_hole *H = NULL;
    size_t hcap = 0;
    groups gaps = {0}; /* every gap of the source, for its median */
    /* the longest gap of each step: a gap every step has is normal */
    double *stepmax = calloc((size_t)D->nsteps + 1, sizeof *stepmax);
    double usual = 0, usual_max = 0;
    size_t nmax = 0; /* steps with a gap */
    /* the longest gap before each op name in each (step, source), and the
     * usual one per (name, source): a gap that comes before the same op
     * every step (Python before the forward, the optimizer after the
     * backward) is that op's normal, and not every other op's */
    kmap opmax = {0};
    groups opg = {0};
    double *opmax_v = NULL, *opusual = NULL;
    /* every gap before each op name per source, for its median: what the op
     * usually waits, taken off a stall's gap to name the step after the op
     * whose wait grew the most (a driver launch call that usually waits
     * 12 us is not the stall when an op that usually waits 2 us waited 1 us
     * less); an op with fewer than three gaps, whose median would be the
     * stall's own, is held to the rank's usual gap */
    groups opcall = {0};
    double *opmed = NULL;
    size_t opmax_cap = 0;
    /* what a step's stalls cost: the source's GPU work (made at its first
     * stall), and per stall where the host resumed and what it lost */
    diag_gpuops *G = NULL;
    size_t d_cap = 0, d_cap2 = 0;
    int64_t *d_at = NULL;
    double *d_amt = NULL;
    int rc = -1;
    if (!stepmax)
        goto done;
    /* the source's events are sorted by (pid, tid, start): a sweep sees
     * each thread in time order */
    size_t lo = D->range[src], hi = D->range[src + 1];
    for (int pass = 0; pass < 2; pass++) {
        if (pass) {
            double *med = diag_groups_medians(&gaps), *col = malloc((D->nsteps ? D->nsteps : 1) * sizeof *col);
            if (!med || !col) {
                free(med);
                free(col);
                goto done;
            }
            if (D->nsteps >= 3 && op_yardsticks(D, &opmax, opmax_v, &opg, &opusual, stepmax)) {
                free(med);
                free(col);
                goto done;
            }
            if (!(opmed = diag_groups_medians(&opcall))) {
                free(med);
                free(col);
                goto done;
            }
            usual = gaps.keys.n ? med[0] : 0;
            size_t nc = 0;
            for (uint32_t k = 0; k < D->nsteps; k++)
                if (stepmax[k] > 0 || opusual) /* a step whose gaps are all explained: zero */
                    col[nc++] = stepmax[k];
            /* the yardstick must not be the step's own longest gap (the
             * stall itself): with three steps or more the median, with two
             * their sum (the other step's is taken out below), with one none */
            nmax = nc;
            usual_max = nc >= 3 ? diag_median(col, nc) : nc == 2 ? col[0] + col[1] : 0;
            free(med);
            free(col);
        }
        int64_t prev_end = 0;
        uint32_t prev_step = TELLER_NONE;
        /* the step's stall named, its gap and that gap over its op's usual */
        double best_gap = 0, best_over = -INFINITY, sum_ex = 0, held = 0; /* held: what the stalls took over the usual gap */
        size_t nd = 0; /* the step's stalls */
        uint32_t best_ev = TELLER_NONE;
        int64_t best_a = 0, best_b = 0; /* the hole named */
        for (size_t i = lo; i <= hi; i++) {
            int boundary = i == hi;
            if (!boundary) {
                if (teller_event_tid(ev, i) != tid || (ev->flags[i] & TELLER_F_GPU) ||
                    !teller_layer_is_host_op(ev->layer[i]))
                    continue;
                uint32_t p = ev->parent[i];
                if (p != TELLER_NONE && teller_layer_is_host_op(ev->layer[p]))
                    continue; /* not outermost */
                boundary = ev->step[i] != prev_step;
            }
            if (boundary) {
                if (pass && best_ev != TELLER_NONE) {
                    /* a GPU fed ahead runs on from its queue through a stall
                     * and idles later, where it catches up with the late host */
                    double cost = diag_host_delay_cost(D, G, src, prev_step, d_at, d_amt, nd, NULL);
                    if (cost > sum_ex)
                        sum_ex = cost;
                }
                if (pass && best_ev != TELLER_NONE && sum_ex > 0) {
                    cand c = {.det = TELLER_FAULT_CPU_CONTENTION, .rank = teller_store_source_c(D->st, (uint32_t)src)->rank,
                              .name = ev->name[best_ev], .layer = ev->layer[best_ev], .excess = sum_ex,
                              .ratio = best_gap / (usual + 1000), .actual = best_gap, .usual = usual, .event = best_ev,
                              .peer = -1, .host_delay = held, .hole_from = best_a, .hole_to = best_b};
                    if (finds_add(out, prev_step, &c))
                        goto done;
                }
                best_gap = sum_ex = held = 0;
                best_over = -INFINITY;
                nd = 0;
                best_ev = TELLER_NONE;
                if (i == hi)
                    break;
                prev_step = ev->step[i];
                /* the first op's gap counts from the step's start on this
                 * rank, but for the first step: its start pays what a run
                 * pays once (the data loader's first batch, DDP's first
                 * forward), untraced Python work that no other step has */
                uint32_t mr = prev_step < D->nsteps && prev_step > 0 ? D->mrow[(size_t)prev_step * D->nsrc + src] : TELLER_NONE;
                int64_t ms = mr != TELLER_NONE ? teller_store_steps(D->st)[mr].start_ns : INT64_MIN;
                if (ms == INT64_MIN || ms > ev->start_ns[i]) {
                    prev_end = ev->start_ns[i] + ev->dur_ns[i];
                    continue;
                }
                prev_end = ms;
            }
            double g = (double)(ev->start_ns[i] - prev_end);
            int64_t prev_gap_end = prev_end, e = ev->start_ns[i] + ev->dur_ns[i];
            if (e > prev_end)
                prev_end = e;
            if (prev_step >= D->nsteps || g <= 0)
                continue;
            /* while another thread of the process works (autograd's engine
             * running the backward pass that the stepping thread waits
             * for), the process is not stalled: the gaps are the holes in
             * which no thread worked, each named after the op that ended
             * it, for the yardsticks as for the test */
            size_t nh = 0;
            if (diag_busy_holes(others, (uint16_t)src, prev_gap_end, ev->start_ns[i], (uint32_t)i, &H, &hcap, &nh))
                goto done;
            for (size_t h = 0; h < nh; h++) {
                g = (double)(H[h].b - H[h].a);
                uint32_t hev = H[h].ev;
                if (!pass) {
                    if (diag_groups_add(&gaps, src, g) || diag_groups_add(&opcall, op_key(ev->name[hev], (uint16_t)src), g))
                        goto done;
                    double *mx = &stepmax[prev_step];
                    if (g > *mx)
                        *mx = g;
                    mx = kmap_slot(&opmax, nss_key(ev->name[hev], prev_step, (uint16_t)src), (void **)&opmax_v, &opmax_cap,
                                   sizeof *opmax_v);
                    if (!mx)
                        goto done;
                    if (g > *mx)
                        *mx = g;
                    continue;
                }
                double thr = 40 * usual + 100000, um = nmax == 2 ? usual_max - stepmax[prev_step] : usual_max;
                if (thr < 3 * um)
                    thr = 3 * um;
                if (opusual) {
                    uint32_t ox = kmap_get(&opg.keys, op_key(ev->name[hev], (uint16_t)src), 0);
                    if (ox != UINT32_MAX && thr < 3 * opusual[ox])
                        thr = 3 * opusual[ox];
                }
                /* with fewer than three steps the thread's usual stalls are
                 * unknown: only a gap longer than a scheduler time slice
                 * (milliseconds) says the thread was descheduled */
                if (D->nsteps < 3 && thr < 1e6)
                    thr = 1e6;
                if (g <= thr)
                    continue;
                /* what the gap cost: the time the GPU idled in it waiting
                 * for work the host had not launched yet, or later (below) */
                if (!G && !(G = diag_gpuops_create(D, &S->waits, src)))
                    goto done;
                double idle = diag_host_idle(&S->gpu, G, src, H[h].a, H[h].b);
                double cost = g - usual < idle ? g - usual : idle;
                sum_ex += cost - diag_spend_lateness(&S->waits, S->wait_left, (uint16_t)src, prev_step, H[h].b, cost);
                if (TELLER_GROW(d_at, d_cap, nd + 1) || TELLER_GROW(d_amt, d_cap2, nd + 1))
                    goto done;
                d_at[nd] = H[h].b;
                d_amt[nd++] = g - usual;
                held += g - usual;
                uint32_t cx = kmap_get(&opcall.keys, op_key(ev->name[hev], (uint16_t)src), 0);
                double over = g - (cx != UINT32_MAX && opcall.s[cx].n >= 3 ? opmed[cx] : usual);
                if (over > best_over) {
                    best_over = over;
                    best_gap = g;
                    best_ev = hev;
                    best_a = H[h].a;
                    best_b = H[h].b;
                }
            }
        }
    }
    rc = 0;
done:
    diag_groups_free(&gaps);
    free(H);
    free(stepmax);
    kmap_free(&opmax);
    diag_groups_free(&opg);
    diag_groups_free(&opcall);
    free(opmed);
    free(opmax_v);
    free(opusual);
    diag_gpuops_free(G);
    free(d_at);
    free(d_amt);
    return rc;
}

const diag_detector diag_row_host_gaps = {
    .name = "host_gaps", .scope = DIAG_PER_SOURCE, .round = 3,
    .reads = DIAG_S_HOST_BUSY | DIAG_S_GPU_BUSY | DIAG_S_WAITS | DIAG_S_WAIT_LEFT,
    .writes = DIAG_S_WAIT_LEFT | DIAG_S_STEPS, .run = host_gaps_run};
