/*
 * gaps.c - the host-gap detector: stretches of a step in which no thread of
 * a rank's process ran a host op (holes in the stepping thread's outermost
 * ops that no other thread's work covers: autograd's engine running the
 * backward pass the stepping thread waits for is work, its own stall is a
 * hole), against the rank's usual gap, costing the time the GPU idled in
 * them (CPU contention).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diag_internal.h"

static uint64_t op_key(uint32_t name, uint16_t src) { return ((uint64_t)name << 14) | (src & 0x3FFF); }

/* From the longest gap before each op name per (step, source) (opmax,
 * values opmax_v): each (name, source)'s usual one, the median over the
 * run's steps with a step without that op counting zero (*opusual,
 * allocated here, indexed as g's keys), and stepmax rewritten to the
 * longest gap of each (step, source) that its op's usual gap does not
 * explain (over 3x of it), zero where none: what is left for "the usual
 * longest gap per step". 0, or -1 out of memory. */
static int op_yardsticks(const dctx *D, size_t ns, kmap *opmax, const double *opmax_v, groups *g, double **opusual,
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
    for (size_t ix = 0; ix < g->keys.n; ix++) {
        samples *sm = &g->s[ix];
        teller_sort(sm->v, sm->n, sizeof *sm->v, diag_cmp_dbl);
        /* the median of nsteps values: nsteps - n zeros, then the sorted maxima */
        size_t zeros = D->nsteps > sm->n ? D->nsteps - sm->n : 0, p0 = (D->nsteps - 1) / 2, p1 = D->nsteps / 2;
        double v0 = p0 < zeros ? 0 : sm->v[p0 - zeros], v1 = p1 < zeros ? 0 : sm->v[p1 - zeros];
        (*opusual)[ix] = 0.5 * (v0 + v1);
    }
    memset(stepmax, 0, (size_t)D->nsteps * ns * sizeof *stepmax);
    for (size_t j = 0; j < opmax->n; j++) {
        uint32_t name = (uint32_t)(keys[j] >> 36), step = (uint32_t)((keys[j] >> 14) & 0x3FFFFF);
        uint16_t src = (uint16_t)(keys[j] & 0x3FFF);
        double m = opmax_v[j], u = (*opusual)[kmap_get(&g->keys, op_key(name, src), 0)];
        if (m > 3 * u && step < D->nsteps && src < ns && m > stepmax[(size_t)step * ns + src])
            stepmax[(size_t)step * ns + src] = m;
    }
    rc = 0;
out:
    free(keys);
    return rc;
}

int diag_detect_gaps(const dctx *D, finds *out)
{
    const teller_events *ev = D->ev;
    size_t ns = teller_store_num_sources(D->st);
    /* the stepping thread of each source: the thread of its step markers */
    int32_t *tid = malloc((ns ? ns : 1) * sizeof *tid);
    busyidx others = {0}; /* the source's other threads at work */
    diag_hole *H = NULL;
    size_t hcap = 0;
    groups gaps = {0}; /* per source: every gap, for its median */
    /* the longest gap of each (step, source): a gap every step has is normal */
    double *stepmax = calloc((size_t)D->nsteps * (ns ? ns : 1) + 1, sizeof *stepmax);
    double *usual_max = calloc(ns ? ns : 1, sizeof *usual_max);
    size_t *nmax = calloc(ns ? ns : 1, sizeof *nmax); /* steps with a gap, per source */
    /* the longest gap before each op name in each (step, source), and the
     * usual one per (name, source): a gap that comes before the same op
     * every step (Python before the forward, the optimizer after the
     * backward) is that op's normal, and not every other op's */
    kmap opmax = {0};
    groups opg = {0};
    double *opmax_v = NULL, *opusual = NULL;
    size_t opmax_cap = 0;
    /* what a step's stalls cost: the GPU work of source G_src, and per
     * stall where the host resumed and what it lost */
    diag_gpuops *G = NULL;
    size_t G_src = SIZE_MAX, d_cap = 0, d_cap2 = 0;
    int64_t *d_at = NULL;
    double *d_amt = NULL;
    int rc = -1;
    if (!tid || !stepmax || !usual_max || !nmax)
        goto done;
    for (size_t s = 0; s < ns; s++)
        tid[s] = INT32_MIN;
    const teller_step *steps = teller_store_steps(D->st);
    for (size_t k = 0; k < teller_store_num_steps(D->st); k++) {
        uint32_t mk = steps[k].marker;
        if (mk != TELLER_NONE)
            tid[ev->source[mk]] = ev->tid[mk];
    }
    if (diag_busy_build(&others, D, tid))
        goto done;
    /* events are sorted by (source, pid, tid, start): a sweep sees each
     * thread in time order */
    for (int pass = 0; pass < 2; pass++) {
        double *usual = NULL;
        if (pass) {
            usual = malloc((ns ? ns : 1) * sizeof *usual);
            if (!usual)
                goto done;
            double *med = diag_groups_medians(&gaps), *col = malloc((D->nsteps ? D->nsteps : 1) * sizeof *col);
            if (!med || !col) {
                free(med);
                free(col);
                free(usual);
                goto done;
            }
            if (D->nsteps >= 3 && op_yardsticks(D, ns, &opmax, opmax_v, &opg, &opusual, stepmax)) {
                free(med);
                free(col);
                free(usual);
                goto done;
            }
            for (size_t s = 0; s < ns; s++) {
                uint32_t ix = kmap_get(&gaps.keys, s, 0);
                usual[s] = ix == TELLER_NONE ? 0 : med[ix];
                size_t nc = 0;
                for (uint32_t k = 0; k < D->nsteps; k++)
                    if (stepmax[(size_t)k * ns + s] > 0 || opusual) /* a step whose gaps are all explained: zero */
                        col[nc++] = stepmax[(size_t)k * ns + s];
                /* the yardstick must not be the step's own longest gap (the
                 * stall itself): with three steps or more the median, with two
                 * their sum (the other step's is taken out below), with one none */
                nmax[s] = nc;
                usual_max[s] = nc >= 3 ? diag_median(col, nc) : nc == 2 ? col[0] + col[1] : 0;
            }
            free(med);
            free(col);
        }
        int64_t prev_end = 0;
        uint32_t prev_step = TELLER_NONE;
        uint16_t prev_src = UINT16_MAX;
        double best_gap = 0, sum_ex = 0;
        size_t nd = 0; /* the step's stalls on this source */
        uint32_t best_ev = TELLER_NONE;
        for (size_t i = 0; i <= ev->n; i++) {
            int boundary = i == ev->n;
            if (!boundary) {
                uint16_t s = ev->source[i];
                if (ev->tid[i] != tid[s] || (ev->flags[i] & TELLER_F_GPU) || !is_host_op(ev->layer[i]))
                    continue;
                uint32_t p = ev->parent[i];
                if (p != TELLER_NONE && is_host_op(ev->layer[p]))
                    continue; /* not outermost */
                boundary = s != prev_src || ev->step[i] != prev_step;
            }
            if (boundary) {
                if (pass && best_ev != TELLER_NONE) {
                    /* a GPU fed ahead runs on from its queue through a stall
                     * and idles later, where it catches up with the late host */
                    if (!G || G_src != prev_src) {
                        diag_gpuops_free(G);
                        G_src = prev_src;
                        if (!(G = diag_gpuops_create(D, prev_src))) {
                            free(usual);
                            goto done;
                        }
                    }
                    double cost = diag_host_delay_cost(D, G, prev_src, prev_step, d_at, d_amt, nd);
                    if (cost > sum_ex)
                        sum_ex = cost;
                }
                if (pass && best_ev != TELLER_NONE && sum_ex > 0) {
                    uint16_t s = prev_src;
                    cand c = {TELLER_FAULT_CPU_CONTENTION, teller_store_source_c(D->st, s)->rank, ev->name[best_ev],
                              ev->layer[best_ev], sum_ex, best_gap / (usual[s] + 1000), best_gap, usual[s], best_ev, 0, 0, -1, 0, 0, 0};
                    if (diag_finds_add(out, prev_step, &c)) {
                        free(usual);
                        goto done;
                    }
                }
                best_gap = sum_ex = 0;
                nd = 0;
                best_ev = TELLER_NONE;
                if (i == ev->n)
                    break;
                prev_src = ev->source[i];
                prev_step = ev->step[i];
                /* the first op's gap counts from the step's start on this
                 * rank, but for the first step: its start pays what a run
                 * pays once (the data loader's first batch, DDP's first
                 * forward), untraced Python work that no other step has */
                int64_t ms = prev_step < D->nsteps && prev_step > 0 ? D->mstart[(size_t)prev_step * D->nsrc + prev_src] : INT64_MIN;
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
            uint16_t s = ev->source[i];
            /* while another thread of the process works (autograd's engine
             * running the backward pass that the stepping thread waits
             * for), the process is not stalled: the gaps are the holes in
             * which no thread worked, each named after the op that ended
             * it, for the yardsticks as for the test */
            size_t nh = 0;
            if (diag_busy_holes(&others, s, prev_gap_end, ev->start_ns[i], (uint32_t)i, &H, &hcap, &nh)) {
                free(usual);
                goto done;
            }
            for (size_t h = 0; h < nh; h++) {
                g = (double)(H[h].b - H[h].a);
                uint32_t hev = H[h].ev;
                if (!pass) {
                    if (diag_groups_add(&gaps, s, g))
                        goto done;
                    double *mx = &stepmax[(size_t)prev_step * ns + s];
                    if (g > *mx)
                        *mx = g;
                    mx = kmap_slot(&opmax, nss_key(ev->name[hev], prev_step, s), (void **)&opmax_v, &opmax_cap,
                                   sizeof *opmax_v);
                    if (!mx)
                        goto done;
                    if (g > *mx)
                        *mx = g;
                    continue;
                }
                double thr = 40 * usual[s] + 100000,
                       um = nmax[s] == 2 ? usual_max[s] - stepmax[(size_t)prev_step * ns + s] : usual_max[s];
                if (thr < 3 * um)
                    thr = 3 * um;
                if (opusual) {
                    uint32_t ox = kmap_get(&opg.keys, op_key(ev->name[hev], s), 0);
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
                /* what the gap cost: the time the GPU idled in it, or later
                 * (below) */
                double idle = diag_idle_in(&D->gpu, s, H[h].a, H[h].b);
                double cost = g - usual[s] < idle ? g - usual[s] : idle;
                sum_ex += cost - diag_absorb(D, D->wait_left, s, prev_step, H[h].b, cost);
                if (TELLER_GROW(d_at, d_cap, nd + 1) || TELLER_GROW(d_amt, d_cap2, nd + 1)) {
                    free(usual);
                    goto done;
                }
                d_at[nd] = H[h].b;
                d_amt[nd++] = g - usual[s];
                if (g > best_gap) {
                    best_gap = g;
                    best_ev = hev;
                }
            }
        }
        free(usual);
    }
    rc = 0;
done:
    diag_groups_free(&gaps);
    diag_busy_free(&others);
    free(H);
    free(tid);
    free(stepmax);
    free(usual_max);
    free(nmax);
    kmap_free(&opmax);
    diag_groups_free(&opg);
    free(opmax_v);
    free(opusual);
    diag_gpuops_free(G);
    free(d_at);
    free(d_amt);
    return rc;
}
