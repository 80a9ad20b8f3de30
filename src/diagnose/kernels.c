/*
 * kernels.c - the kernel detector: a kernel name's time on a rank in a
 * step against the fastest rank of its tensor-parallel group (peers do
 * identical work), or without peers against the usual time of the same
 * launch configurations; three or more slowed names on one rank are one
 * throttled GPU. Source by source: a tally per source (row kernel_tally,
 * round 1), then each source against its peers' tallies (row kernels,
 * round 2).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "detector.h"

/* A kernel name's time in one step on one source. */
typedef struct ktot {
    double   t;
    uint32_t count, event;
    uint32_t longest; /* its longest call (the first of that time), once t > 0 */
    uint64_t cfgs; /* the sum of its calls' launch configurations' keys: the same calls, the same sum */
} ktot;

/* One source's kernel time per (step, name), and what that time usually
 * is; built by its kernel_tally task, read by every source's kernels task.
 * tot, keys, ref and noref are indexed as m, in the order the (step, name)
 * pairs first appear in the source's events. */
typedef struct ktab {
    kmap      m;     /* (step << 28 | name) -> index */
    ktot     *tot;   /* time, calls and first call */
    uint64_t *keys;
    double   *ref;   /* the sum of its calls' usual times */
    double   *tref;  /* the time of its calls that have one */
    uint8_t  *noref; /* some call had no usual time */
    size_t    cap, kcap;
    /* per step: the name with the most time (the first to reach it, in
     * event order), its longest call and its time; name TELLER_NONE when
     * no compute kernel of the step took any */
    struct kheavy {
        uint32_t name, longest;
        double   t;
    } *heavy;
} ktab;

/* The key of a kernel call's launch configuration on its source: name,
 * grid and block. Calls with the same configuration do the same work in
 * a real trace (the grid follows the problem size), whatever the step. */
static uint64_t config_key(const teller_store *st, const teller_events *ev, uint32_t i)
{
    const teller_args *a = teller_store_event_args(st, i);
    uint32_t k[8] = {ev->source[i], ev->name[i], 0, 0, 0, 0, 0, 0};
    if (a)
        memcpy(k + 2, a->grid, 6 * sizeof *k);
    return kmap_hash_bytes(k, sizeof k);
}

/* Per launch configuration: call durations and their steps, in how many
 * steps it ran, and (a drifting one) its usual call time per step. */
typedef struct cfg_acc {
    samples   d;
    uint32_t *step; /* per call */
    size_t    scap;
    uint32_t  steps, last_step;
    double   *local; /* per step: the usual call time around it, 0 none; NULL: the median holds */
} cfg_acc;

/* Steps on either side of a step whose calls make a drifting
 * configuration's usual time there. */
enum { LOCAL_STEPS = 4 };

/* A kernel name, or the rank's other names together, is slower than its
 * yardstick when over this factor of it and this many ns more. */
#define SLOWER 1.15
#define SLOWER_NS 10000

/* The median of v[0..n) into *med, and whether its values agree (median
 * absolute deviation within a quarter of the median): a yardstick that
 * varies more says nothing. Reorders and overwrites v. */
static int agreeing_median(double *v, size_t n, double *med)
{
    *med = diag_median(v, n);
    for (size_t q = 0; q < n; q++)
        v[q] = fabs(v[q] - *med);
    return diag_median(v, n) <= 0.25 * *med;
}

/* The usual call time of configuration c in each step, for one whose time
 * drifts: the median of the mean call time of the steps within LOCAL_STEPS
 * on either side (not the step itself), with three of them or more; 0
 * otherwise. 0, or -1 out of memory. */
static int local_usual(cfg_acc *c, uint32_t nsteps)
{
    double *sum = calloc((size_t)nsteps + 1, sizeof *sum), near[2 * LOCAL_STEPS];
    uint32_t *cnt = calloc((size_t)nsteps + 1, sizeof *cnt);
    c->local = calloc((size_t)nsteps + 1, sizeof *c->local);
    if (!sum || !cnt || !c->local) {
        free(sum);
        free(cnt);
        return -1;
    }
    for (size_t q = 0; q < c->d.n; q++) {
        sum[c->step[q]] += c->d.v[q];
        cnt[c->step[q]]++;
    }
    for (uint32_t k = 0; k < nsteps; k++) {
        size_t m = 0;
        for (uint32_t j = k > LOCAL_STEPS ? k - LOCAL_STEPS : 0; j <= k + LOCAL_STEPS && j < nsteps; j++)
            if (j != k && cnt[j])
                near[m++] = sum[j] / cnt[j];
        c->local[k] = m >= 3 ? diag_median(near, m) : 0;
    }
    free(sum);
    free(cnt);
    return 0;
}

static uint64_t kt_key(uint32_t step, uint32_t name) { return ((uint64_t)step << 28) | (name & 0xFFFFFFF); }

static void ktab_free(ktab *K)
{
    kmap_free(&K->m);
    free(K->tot);
    free(K->keys);
    free(K->ref);
    free(K->tref);
    free(K->noref);
    free(K->heavy);
    memset(K, 0, sizeof *K);
}

static int is_compute_kernel(const dctx *D, size_t i)
{
    const teller_events *ev = D->ev;
    return ev->layer[i] == TELLER_LAYER_KERNEL && !(ev->flags[i] & TELLER_F_COMM) && ev->step[i] < D->nsteps;
}

/* Tallies the compute kernels of source s into its slot of the state's
 * kernel_tally. 0, or -1 out of memory. */
static int kernel_tally_run(const dctx *D, diag_state *S, size_t s, finds *out)
{
    (void)out;
    ktab *K = &S->kernel_tally[s];
    const teller_events *ev = D->ev;
    size_t lo = D->range[s], hi = D->range[s + 1];
    kmap cm = {0};
    cfg_acc *cfg = NULL;
    size_t ccap = 0, nk = 0, kcap = 0;
    double *cmed = NULL, *halves = NULL; /* halves: a configuration's calls, the run's first half and second */
    size_t hcap = 0;
    uint32_t *kix = NULL; /* per compute kernel, in event order: its (step, name) and its configuration */
    int rc = -1;
    if (!(K->heavy = malloc(((size_t)D->nsteps + 1) * sizeof *K->heavy)))
        goto done;
    for (uint32_t k = 0; k < D->nsteps; k++)
        K->heavy[k] = (struct kheavy){TELLER_NONE, TELLER_NONE, -1};
    for (size_t i = lo; i < hi; i++) {
        if (!is_compute_kernel(D, i))
            continue;
        uint64_t key = kt_key(ev->step[i], ev->name[i]);
        ktot *t = kmap_slot(&K->m, key, (void **)&K->tot, &K->cap, sizeof *K->tot);
        uint32_t ix = t ? (uint32_t)(t - K->tot) : 0;
        if (!t || (ix >= K->kcap && TELLER_GROW(K->keys, K->kcap, (size_t)ix + 1)))
            goto done;
        K->keys[ix] = key;
        if (ev->dur_ns[i] > 0) { /* the step's heaviest name so far */
            if (!(t->t > 0) || ev->dur_ns[i] > ev->dur_ns[t->longest])
                t->longest = (uint32_t)i;
            struct kheavy *h = &K->heavy[ev->step[i]];
            if (t->t + (double)ev->dur_ns[i] > h->t)
                *h = (struct kheavy){ev->name[i], t->longest, t->t + (double)ev->dur_ns[i]};
        }
        t->t += (double)ev->dur_ns[i];
        if (!t->count++)
            t->event = (uint32_t)i;
        uint64_t ck = config_key(D->st, ev, (uint32_t)i);
        t->cfgs += ck;
        cfg_acc *ca = kmap_slot(&cm, ck, (void **)&cfg, &ccap, sizeof *cfg);
        if (!ca || TELLER_GROW(ca->d.v, ca->d.cap, ca->d.n + 1) || TELLER_GROW(ca->step, ca->scap, ca->d.n + 1) ||
            TELLER_GROW(kix, kcap, 2 * nk + 2))
            goto done;
        kix[2 * nk] = ix;
        kix[2 * nk + 1] = (uint32_t)(ca - cfg);
        nk++;
        ca->step[ca->d.n] = ev->step[i];
        ca->d.v[ca->d.n++] = (double)ev->dur_ns[i];
        if (!ca->steps || ca->last_step != ev->step[i]) {
            ca->steps++;
            ca->last_step = ev->step[i];
        }
    }
    /* the usual time of a call of each configuration: its median, when it
     * ran in three steps or more and its calls agree (median absolute
     * deviation within a quarter of the median); else 0, no reference: a
     * configuration whose time varies with the batch says nothing. When
     * the median of its calls in the run's first half and in its second
     * differ by more than a fifth (it ran in eight steps or more: with
     * fewer, one slow step is half the run), its time drifts with something its
     * launch does not show (a decode attention kernel on a fixed grid grows
     * with its context, step after step): its usual time is that of the
     * steps around each one (local_usual) */
    if (!(cmed = calloc(cm.n ? cm.n : 1, sizeof *cmed)))
        goto done;
    for (size_t ix = 0; ix < cm.n; ix++) {
        cfg_acc *c = &cfg[ix];
        samples *d = &c->d;
        if (c->steps < 3)
            continue;
        if (c->steps >= 8) {
            uint32_t half = D->nsteps / 2;
            size_t n1 = 0, n2 = 0;
            if (TELLER_GROW(halves, hcap, d->n))
                goto done;
            for (size_t q = 0; q < d->n; q++) /* first half's calls from the front, second's from the back */
                if (c->step[q] < half)
                    halves[n1++] = d->v[q];
                else
                    halves[d->n - ++n2] = d->v[q];
            double first = n1 ? diag_median(halves, n1) : 0, second = n2 ? diag_median(halves + n1, n2) : 0;
            int drifts = n1 && n2 && fabs(first - second) > 0.2 * (first < second ? first : second);
            if (drifts && local_usual(c, D->nsteps))
                goto done;
        }
        double med;
        if (agreeing_median(d->v, d->n, &med))
            cmed[ix] = med;
        else if (c->local) { /* calls that disagree anyway: no reference at all */
            free(c->local);
            c->local = NULL;
        }
    }
    /* what each (step, name) usually takes: the sum of its calls' usual
     * times, beside what the calls that have one took */
    K->ref = calloc(K->m.n ? K->m.n : 1, sizeof *K->ref);
    K->tref = calloc(K->m.n ? K->m.n : 1, sizeof *K->tref);
    K->noref = calloc(K->m.n ? K->m.n : 1, 1);
    if (!K->ref || !K->tref || !K->noref)
        goto done;
    for (size_t i = lo, j = 0; i < hi; i++) {
        if (!is_compute_kernel(D, i))
            continue;
        uint32_t ix = kix[2 * j];
        const cfg_acc *c = &cfg[kix[2 * j + 1]];
        double u = c->local ? c->local[ev->step[i]] : cmed[kix[2 * j + 1]];
        j++;
        K->ref[ix] += u;
        K->tref[ix] += u > 0 ? (double)ev->dur_ns[i] : 0;
        K->noref[ix] |= u <= 0;
    }
    rc = 0;
done:
    free(kix);
    for (size_t ix = 0; ix < cm.n && cfg; ix++) {
        free(cfg[ix].d.v);
        free(cfg[ix].step);
        free(cfg[ix].local);
    }
    free(cfg);
    free(cmed);
    free(halves);
    kmap_free(&cm);
    return rc;
}

/* What source s's name usually takes in step k when none of its calls
 * has a usual time of its own (its configurations' calls vary: several
 * shapes on one grid): the median of its time in the steps within
 * LOCAL_STEPS on either side that made the same calls of it (as many, of
 * the same launch configurations: a prefill's grids are not a decode
 * step's), when there are three or more and they agree (median absolute
 * deviation within a quarter of the median); 0 otherwise. */
static double name_usual(ktab *me, uint32_t k, uint32_t name, uint32_t nsteps)
{
    uint32_t i0 = kmap_get(&me->m, kt_key(k, name), 0);
    double v[2 * LOCAL_STEPS];
    size_t m = 0;
    for (uint32_t j = k > LOCAL_STEPS ? k - LOCAL_STEPS : 0; j <= k + LOCAL_STEPS && j < nsteps; j++) {
        uint32_t i = j == k ? TELLER_NONE : kmap_get(&me->m, kt_key(j, name), 0);
        if (i != TELLER_NONE && me->tot[i].count == me->tot[i0].count && me->tot[i].cfgs == me->tot[i0].cfgs)
            v[m++] = me->tot[i].t;
    }
    double med;
    return m >= 3 && agreeing_median(v, m, &med) ? med : 0;
}

/* The fastest time of key (a step and kernel name) on source s's peers,
 * in *peers how many ran it and in *calls how many calls of it that one
 * made; INFINITY when none did. */
static double fastest_peer(const dctx *D, size_t s, ktab *K, uint64_t key, int *peers, uint32_t *calls)
{
    double best = INFINITY;
    *peers = 0;
    *calls = 0;
    for (uint32_t q = D->gfirst[s]; q < D->gfirst[s] + D->gcount[s]; q++) {
        uint32_t p = D->peers[q];
        if (p == s)
            continue;
        uint32_t pi = kmap_get(&K[p].m, key, 0);
        if (pi == TELLER_NONE)
            continue;
        (*peers)++;
        if (K[p].tot[pi].t < best) {
            best = K[p].tot[pi].t;
            *calls = K[p].tot[pi].count;
        }
    }
    return best;
}

/* Whether the rank's whole GPU was slow in the steps of its candidates
 * out->v[first..): its kernel names judged against peers with a history
 * that made as many calls of them in the step (pbase[ix] >= 0: a step a
 * rank's cut gave more of the run's kernels than its peers' is no
 * slowdown), those without a candidate of their own (hit) summed
 * per step, over their peers' times: a step where they too took 15 %
 * more than their peers usually allow, and three spreads of that ratio
 * over the steps, slowed every kernel, as throttled clocks do; a kernel
 * that regressed alone leaves the others be. Such a step's candidates get
 * over_peers: what every name took over its peers there, 10 us or more.
 * 0, or -1 out of memory. */
static int whole_gpu(const dctx *D, const ktab *me, const double *pbase, const uint8_t *hit, finds *out, size_t first)
{
    if (first == out->n)
        return 0;
    /* per step: every judged name's time over its peers', and the others'
     * (no candidate of their own) time and their peers' */
    struct {
        double over, t, peers;
    } *acc = calloc((size_t)D->nsteps + 1, sizeof *acc);
    groups ratio = {0}; /* one group: the others' time over their peers', per step */
    double *med = NULL, *spread = NULL;
    int rc = -1;
    if (!acc)
        return -1;
    for (size_t ix = 0; ix < me->m.n; ix++) {
        uint32_t k = (uint32_t)(me->keys[ix] >> 28);
        if (pbase[ix] < 0 || k >= D->nsteps)
            continue;
        acc[k].over += me->tot[ix].t - pbase[ix];
        if (!hit[ix]) {
            acc[k].t += me->tot[ix].t;
            acc[k].peers += pbase[ix];
        }
    }
    for (uint32_t k = 0; k < D->nsteps; k++)
        if (acc[k].peers > 0 && diag_groups_add(&ratio, 0, acc[k].t / acc[k].peers))
            goto done;
    if (ratio.keys.n && ratio.s[0].n >= 3) {
        if (!(med = diag_groups_medians(&ratio)) || !(spread = diag_groups_spreads(&ratio, med)))
            goto done;
        for (size_t q = first; q < out->n; q++) {
            uint32_t k = out->v[q].step;
            double rk = k < D->nsteps && acc[k].peers > 0 ? acc[k].t / acc[k].peers : 0;
            if (rk > SLOWER && rk > med[0] + 3 * spread[0] && acc[k].over >= SLOWER_NS)
                out->v[q].c.over_peers = acc[k].over;
        }
    }
    rc = 0;
done:
    free(acc);
    free(med);
    free(spread);
    diag_groups_free(&ratio);
    return rc;
}

/* Source s's kernel names against its peers' (K: every source's tally):
 * the excess of each over the fastest peer in the step, times what the
 * rank usually takes of the name over its fastest peer (the median over
 * the steps, with three or more, when that is over 1: one GPU of a group
 * can run a kernel a steady 10 % slower, by its clocks or its share of the
 * work, and that is its normal, not a fault in every step), and only when
 * the ratio is over that median by more than three spreads (a kernel whose
 * time jitters 10 % on each rank is 1.27x its peer in some step of forty);
 * or without peers over its usual time. 0, or -1 out of memory. */
static int kernels_run(const dctx *D, diag_state *S, size_t s, finds *out)
{
    ktab *K = S->kernel_tally, *me = &K[s];
    groups rg = {0}; /* per name: the rank's time over its fastest peer, per step */
    double *over = NULL, *spread = NULL; /* per name: the ratio's median and spread */
    /* per (step, name) judged against peers with a history: its peer's
     * time times the usual ratio, -1 otherwise; hit: a candidate of its own */
    double *pbase = malloc((me->m.n + 1) * sizeof *pbase);
    uint8_t *hit = calloc(me->m.n + 1, 1);
    size_t first = out->n;
    int peers, rc = -1;
    uint32_t calls;
    if (!pbase || !hit)
        goto done;
    for (size_t ix = 0; ix < me->m.n; ix++) {
        double best = fastest_peer(D, s, K, me->keys[ix], &peers, &calls);
        if (peers && best > 0 && diag_groups_add(&rg, me->keys[ix] & 0xFFFFFFF, me->tot[ix].t / best))
            goto done;
    }
    /* how far the ratio strays anyway: its spread (baseline.c) */
    if (rg.keys.n && (!(over = diag_groups_medians(&rg)) || !(spread = diag_groups_spreads(&rg, over))))
        goto done;
    for (size_t ix = 0; ix < me->m.n; ix++) {
        uint64_t key = me->keys[ix];
        double best = fastest_peer(D, s, K, key, &peers, &calls), t = me->tot[ix].t; /* against best */
        pbase[ix] = -1;
        if (peers) {
            uint32_t g = kmap_get(&rg.keys, key & 0xFFFFFFF, 0);
            if (g != TELLER_NONE && rg.s[g].n >= 3) {
                if (calls == me->tot[ix].count)
                    pbase[ix] = best * (over[g] > 1 ? over[g] : 1);
                if (t <= best * (over[g] + 3 * spread[g]))
                    continue; /* within how far the rank strays from its peer anyway */
                if (over[g] > 1)
                    best *= over[g];
            }
        } else {
            /* no tensor-parallel peer: compare with the same rank's calls of
             * the same launch configuration in the run; without them, with
             * another rank without peers of its pipeline that made as many
             * calls of the name in the step (a stage running the same layers
             * on the same batch; a rank of another pipeline, or no pipeline,
             * ran another batch); without one either, its calls that have a
             * usual time against theirs (a configuration whose calls vary,
             * two shapes on one grid, says nothing of the others) */
            if (me->noref[ix]) {
                for (uint32_t q = D->pfirst[s]; q < D->pfirst[s] + D->pcount[s]; q++) {
                    uint32_t p = D->linked[q];
                    if (p == s || D->gcount[p] > 1)
                        continue;
                    uint32_t pi = kmap_get(&K[p].m, key, 0);
                    if (pi != TELLER_NONE && K[p].tot[pi].count == me->tot[ix].count && K[p].tot[pi].t < best)
                        best = K[p].tot[pi].t;
                }
                if (best == INFINITY && me->ref[ix] > 0) {
                    best = me->ref[ix];
                    t = me->tref[ix];
                } else if (best == INFINITY) { /* no call has a usual time: the name's own, step by step */
                    best = name_usual(me, (uint32_t)(key >> 28), (uint32_t)(key & 0xFFFFFFF), D->nsteps);
                    if (best <= 0)
                        continue;
                }
            } else {
                best = me->ref[ix];
            }
        }
        if (!(best > 0) || t <= best * SLOWER || t - best < SLOWER_NS)
            continue; /* a yardstick of nothing (a peer's zero-length record) says nothing */
        cand c = {.det = TELLER_FAULT_KERNEL_REGRESSION, .rank = teller_store_source_c(D->st, (uint32_t)s)->rank,
                  .name = (uint32_t)(key & 0xFFFFFFF), .layer = TELLER_LAYER_KERNEL, .excess = t - best,
                  .ratio = t / best, .actual = t, .usual = best, .event = me->tot[ix].event, .peer = -1};
        diag_heaviest(S, s, (uint32_t)(key >> 28), &c);
        if (finds_add(out, (uint32_t)(key >> 28), &c))
            goto done;
        hit[ix] = 1;
    }
    rc = whole_gpu(D, me, pbase, hit, out, first);
done:
    free(pbase);
    free(hit);
    free(over);
    free(spread);
    diag_groups_free(&rg);
    return rc;
}

/* Three or more slowed kernel names on one rank are one throttled GPU,
 * and so are fewer when its other names were slow too (whole_gpu: its
 * cost is then at least over_peers). Throttled clocks slow every kernel
 * by about the same factor, so the
 * kernel that lost the most is the one with the most time on the rank in
 * the step: it names the finding, whether or not its own calls could be
 * judged (calls of one name whose launch configurations vary, or whose
 * times disagree, have no usual time); its usual time is then its time
 * over the slowed names' mean slowdown. */
static size_t merge_throttle(const dctx *D, cand *c, const size_t *idx, size_t n)
{
    (void)D;
    if (n < 3 && !(c[idx[0]].over_peers > 0))
        return SIZE_MAX;
    size_t best = idx[0];
    double sum = 0, ratio_sum = 0;
    for (size_t q = 0; q < n; q++) {
        sum += c[idx[q]].excess;
        ratio_sum += c[idx[q]].ratio;
        if (c[idx[q]].excess > c[best].excess)
            best = idx[q];
    }
    double sig = ratio_sum / (double)n, t = c[best].heavy_t;
    uint32_t heavy = c[best].heavy;
    if (heavy != TELLER_NONE && heavy != c[best].name) {
        size_t q = 0;
        while (q < n && c[idx[q]].name != heavy)
            q++;
        if (q < n) {
            best = idx[q];
        } else {
            c[best].name = heavy;
            c[best].layer = TELLER_LAYER_KERNEL;
            c[best].event = c[best].heavy_event;
            c[best].actual = t;
            c[best].usual = sig > 1 ? t / sig : t;
        }
    }
    c[best].det = TELLER_FAULT_GPU_THROTTLE;
    c[best].excess = sum > c[best].over_peers ? sum : c[best].over_peers;
    c[best].ratio = sig;
    return best;
}

void diag_heaviest(const diag_state *S, size_t s, uint32_t k, cand *c)
{
    const struct kheavy *h = &S->kernel_tally[s].heavy[k];
    c->heavy = h->name;
    c->heavy_event = h->longest;
    c->heavy_t = h->name != TELLER_NONE ? h->t : 0;
}

static int kernel_tally_prepare(const dctx *D, diag_state *S)
{
    return (S->kernel_tally = calloc(D->nsrc + 1, sizeof *S->kernel_tally)) ? 0 : -1;
}

static void kernel_tally_release(const dctx *D, diag_state *S)
{
    for (size_t s = 0; S->kernel_tally && s < D->nsrc; s++)
        ktab_free(&S->kernel_tally[s]);
    free(S->kernel_tally);
}

static int kernels_merge(const dctx *D, diag_state *S, uint32_t k)
{
    return merge_by_rank(D, &S->steps[k], TELLER_FAULT_KERNEL_REGRESSION, merge_throttle);
}

const diag_detector diag_row_kernel_tally = {
    .name = "kernel_tally", .scope = DIAG_PER_SOURCE, .round = 1, .writes = DIAG_S_KERNEL_TALLY,
    .prepare = kernel_tally_prepare, .run = kernel_tally_run, .release = kernel_tally_release};

const diag_detector diag_row_kernels = {.name = "kernels", .scope = DIAG_PER_SOURCE, .round = 2,
                                        .reads = DIAG_S_KERNEL_TALLY, .writes = DIAG_S_STEPS, .run = kernels_run,
                                        .merge = kernels_merge};
