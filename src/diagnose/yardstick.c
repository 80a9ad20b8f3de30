/*
 * yardstick.c - what a step of each kind usually takes in this run: the
 * step alarm's yardstick. Steps are grouped by what their annotation says
 * they did (tree.h teller_step_class: the annotation family and the kind,
 * prefill, decode, a mixed batch, an iteration), so that a long prefill is
 * judged against prefills and the fastest step is never slow. Within a
 * group a step's usual duration is the group's median, or where the
 * annotations state each step's work (tokens, batch size) and it varies, a
 * line through the group's steps (Theil-Sen: the median of the slopes
 * between pairs, robust to the faulty steps among them); where the
 * annotations state none that the durations follow, a line through the
 * time each step's fastest rank spent in compute kernels. How far the
 * group's steps stray from their usual anyway is its spread. A group too
 * small for that judges each step against the median of the few steps of
 * its kind nearest in work, with a prior spread; a step with none near
 * (the only step of its kind) has no yardstick.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "judge.h"

/* The spread of a group too small to measure its own: a step judged
 * against the few steps of its kind nearest in work. */
#define SPREAD_PRIOR 0.02

/* A group too small to fit judges a step against the steps of its kind
 * whose work is within this factor of its own (all of them when no
 * annotation states work), the nearest NEAR_STEPS of them. */
#define NEAR_WORK 1.25
#define NEAR_STEPS 3

/* A fitted group's usual is made of its steps that no finding flags when
 * there are this many, else of all its steps; their spread is measured
 * when they are TELLER_DIAG_GROUP_STEPS or more, else the prior. */
#define MIN_REF 3

/* Steps a line is fitted through, at most: a group of more steps is
 * sampled evenly (256 steps give 32,640 slopes). */
#define FIT_STEPS 256

/* The annotation a step is classified by: the one that states the most
 * work, else that of the rank it took longest on (its duration's), else
 * the lowest rank's that has one. The ranks of one engine annotate a step
 * alike; data-parallel replicas each run a batch of their own, and the
 * step lasts as long as the heaviest, unless a fault holds another back. */
static size_t step_marker(const dctx *D, uint32_t k, int32_t rank)
{
    const teller_step *rows = teller_store_steps(D->st);
    size_t hi, lo = diag_step_rows(D->st, k, &hi), pick = SIZE_MAX;
    int64_t most = -1;
    int on_rank = 0;
    for (size_t i = lo; i < hi; i++) {
        uint32_t name = teller_store_step_annotation(D->st, i);
        if (name == TELLER_NONE)
            continue;
        /* the ranks of one engine share the annotation's text: classified once */
        if (pick != SIZE_MAX && name == teller_store_step_annotation(D->st, pick)) {
            if (rows[i].rank == rank && !on_rank)
                pick = i, on_rank = 1;
            continue;
        }
        teller_step_class c;
        teller_step_classify(teller_store_str(D->st, name), &c);
        if (pick == SIZE_MAX || c.work > most || (c.work == most && rows[i].rank == rank && !on_rank)) {
            pick = i;
            most = c.work;
            on_rank = rows[i].rank == rank;
        }
    }
    return pick;
}

void diag_step_class(const dctx *D, uint32_t k, int32_t rank, teller_step_class *out)
{
    size_t row = step_marker(D, k, rank);
    teller_step_classify(row != SIZE_MAX ? teller_store_str(D->st, teller_store_step_annotation(D->st, row)) : NULL,
                         out);
    if (row == SIZE_MAX) /* the whole trace, or the step a rank's trace ends in: a kind of its own */
        snprintf(out->family, sizeof out->family, "(no annotation %u)", k);
    /* what its annotation states, else the kernels it launched on the
     * annotation's rank: an empty step closing a profile is no step of
     * the same work as the full ones */
    if (out->work < 0 && row != SIZE_MAX) {
        /* the annotation's source: the one whose events hold it */
        uint32_t mk = teller_store_steps(D->st)[row].marker;
        size_t lo = 0, hi = D->nsrc;
        while (hi - lo > 1) {
            size_t mid = (lo + hi) / 2;
            if (D->range[mid] <= mk)
                lo = mid;
            else
                hi = mid;
        }
        out->work = D->cell[(size_t)k * D->nsrc + lo].kernels;
    }
}

/* The usual duration of a step of work w in a fitted group. */
static double usual_of(const teller_step_group *g, int64_t w)
{
    return g->base_ns + (g->by_work && w > 0 ? g->per_work_ns * (double)w : 0);
}

/* The spread of steps ks[0..n) around usual u(g, work): 1.4826 x the
 * median absolute relative deviation. v: scratch. */
static double spread_of(const teller_step_group *g, const uint32_t *ks, uint32_t n, const double *dur,
                        const int64_t *work, double *v)
{
    uint32_t nr = 0;
    for (uint32_t i = 0; i < n; i++) {
        double u = usual_of(g, work[ks[i]]);
        if (u > 0)
            v[nr++] = fabs(dur[ks[i]] - u) / u;
    }
    return nr ? 1.4826 * diag_median(v, nr) : SPREAD_PRIOR;
}

/* Fits group g through the durations dur[] and work[] (indexed by step) of
 * its reference steps ks[0..n) (MIN_REF or more): their
 * median, or a Theil-Sen line through them when every one states its work,
 * three or more works differ and the line strays less than the median
 * (a fifth less: a batch size that barely moves the duration is no line);
 * then the spread. However few the reference steps: a run with many
 * faults leaves a group of mixed batches three or four of them, whose
 * median is the usual of no step when their works are far apart. v:
 * scratch for the pairs. */
static void fit_group(teller_step_group *g, const uint32_t *ks, uint32_t n, const double *dur, const int64_t *work,
                      double *v)
{
    uint32_t m = n > FIT_STEPS ? FIT_STEPS : n, distinct = 0;
    int known = 1;
    for (uint32_t i = 0; i < n && known; i++) {
        known = work[ks[i]] > 0;
        uint32_t j = 0;
        while (j < i && work[ks[j]] != work[ks[i]])
            j++;
        distinct += j == i;
    }
    for (uint32_t i = 0; i < n; i++)
        v[i] = dur[ks[i]];
    g->by_work = 0;
    g->per_work_ns = 0;
    g->base_ns = diag_median(v, n);
    g->spread = n >= TELLER_DIAG_GROUP_STEPS ? spread_of(g, ks, n, dur, work, v) : SPREAD_PRIOR;
    g->fitted = 1;
    if (!known || distinct < 3)
        return;
    size_t np = 0;
    for (uint32_t i = 0; i < m; i++)
        for (uint32_t j = i + 1; j < m; j++) {
            uint32_t a = ks[(uint64_t)i * n / m], b = ks[(uint64_t)j * n / m];
            if (work[a] != work[b])
                v[np++] = (dur[b] - dur[a]) / (double)(work[b] - work[a]);
        }
    double slope = np ? diag_median(v, np) : 0;
    if (!(slope > 0))
        return;
    teller_step_group line = *g;
    line.by_work = 1;
    line.per_work_ns = slope;
    for (uint32_t i = 0; i < n; i++)
        v[i] = dur[ks[i]] - slope * (double)work[ks[i]];
    line.base_ns = diag_median(v, n);
    double strays = spread_of(&line, ks, n, dur, work, v);
    line.spread = n >= TELLER_DIAG_GROUP_STEPS ? strays : SPREAD_PRIOR;
    if (strays < 0.8 * spread_of(g, ks, n, dur, work, v))
        *g = line;
}

/* In a group too small to fit: the steps of the group nearest in work to
 * step k (within NEAR_WORK of its work; any when no work is stated), at most
 * NEAR_STEPS, those skip[] marks left out (skip NULL: none), appended to
 * *out (*n, grown). 0, or -1 out of memory. */
static int near_steps(const teller_step_group *g, const uint32_t *ks, uint32_t k, const int64_t *work,
                      const uint8_t *skip, uint32_t **out, size_t *n, size_t *cap)
{
    uint32_t pick[NEAR_STEPS];
    double dist[NEAR_STEPS];
    uint32_t np = 0;
    for (uint32_t i = 0; i < g->n; i++) {
        uint32_t j = ks[i];
        if (j == k || (skip && skip[j]))
            continue;
        double dj = 0;
        if (work[k] > 0 || work[j] > 0) {
            if (work[k] <= 0 || work[j] <= 0)
                continue;
            dj = fabs(log((double)work[j] / (double)work[k]));
            if (dj > log(NEAR_WORK))
                continue;
        }
        /* keep the NEAR_STEPS nearest, the earlier step first on a tie */
        uint32_t at = np;
        while (at > 0 && dist[at - 1] > dj)
            at--;
        if (at >= NEAR_STEPS)
            continue;
        if (np < NEAR_STEPS)
            np++;
        memmove(pick + at + 1, pick + at, (np - 1 - at) * sizeof *pick);
        memmove(dist + at + 1, dist + at, (np - 1 - at) * sizeof *dist);
        pick[at] = j;
        dist[at] = dj;
    }
    if (TELLER_GROW(*out, *cap, *n + np))
        return -1;
    /* in step order */
    for (uint32_t a = 1; a < np; a++)
        for (uint32_t b = a; b > 0 && pick[b - 1] > pick[b]; b--) {
            uint32_t t = pick[b];
            pick[b] = pick[b - 1];
            pick[b - 1] = t;
        }
    if (np)
        memcpy(*out + *n, pick, np * sizeof *pick);
    *n += np;
    return 0;
}

/* Per step, the time the compute kernels of its fastest rank took (ns) and
 * that rank, -1 where fewer than two ranks ran any: the work of a step
 * whose annotation states none that its duration follows (a mixed batch
 * states its size, not its prefill tokens). The fastest rank's, so that a
 * fault on one rank's GPU does not move the yardstick it is judged by. */
static void compute_work(const dctx *D, int64_t *cwork, int32_t *crank)
{
    for (uint32_t k = 0; k < D->nsteps; k++) {
        uint32_t ran = 0;
        cwork[k] = -1;
        crank[k] = -1;
        for (size_t q = 0; q < D->nsrc; q++) {
            int64_t x = D->cell[(size_t)k * D->nsrc + q].kernel_ns;
            if (x <= 0)
                continue;
            ran++;
            if (cwork[k] < 0 || x < cwork[k]) {
                cwork[k] = x;
                crank[k] = teller_store_source_c(D->st, (uint32_t)q)->rank;
            }
        }
        if (ran < 2)
            cwork[k] = -1, crank[k] = -1;
    }
}

/* A fitted group whose annotations state no work its durations follow,
 * fitted again through its steps' compute time (compute_work); kept when
 * that line holds (fit_group's test). Its steps' work becomes that time. */
static void fit_by_compute(teller_diagnosis *d, teller_step_group *g, const double *dur, int64_t *work,
                           const int64_t *cwork, const int32_t *crank, double *v)
{
    teller_step_group alt = *g;
    fit_group(&alt, d->ref_steps + g->ref_first, g->nref, dur, cwork, v);
    if (!alt.by_work)
        return;
    *g = alt;
    g->by_compute = 1;
    for (uint32_t i = 0; i < g->n; i++) {
        uint32_t k = d->group_steps[g->first + i];
        work[k] = cwork[k];
        d->steps[k].work = cwork[k];
        d->steps[k].work_rank = crank[k];
    }
}

int diag_yardsticks(const dctx *D, diag_state *S, const uint8_t *flagged, double spreads)
{
    teller_diagnosis *d = S->out;
    uint32_t ns = D->nsteps;
    teller_step_class *cls = malloc((ns ? ns : 1) * sizeof *cls);
    double *dur = malloc((ns ? ns : 1) * sizeof *dur);
    int64_t *work = malloc((ns ? ns : 1) * sizeof *work), *cwork = malloc((ns ? ns : 1) * sizeof *cwork);
    int32_t *crank = malloc((ns ? ns : 1) * sizeof *crank);
    double *v = malloc(((size_t)FIT_STEPS * FIT_STEPS / 2 + ns + 1) * sizeof *v);
    size_t nnear = 0, near_cap = 0, nref = 0, ref_cap = 0;
    d->group_steps = malloc((ns ? ns : 1) * sizeof *d->group_steps);
    int rc = -1;
    if (!cls || !dur || !work || !cwork || !crank || !v || !d->group_steps)
        goto done;
    compute_work(D, cwork, crank);
    for (uint32_t k = 0; k < ns; k++) {
        diag_step_class(D, k, d->steps[k].dur_rank, &cls[k]);
        dur[k] = (double)d->steps[k].dur_ns;
        work[k] = cls[k].work;
        d->steps[k].work = work[k];
        d->steps[k].work_rank = -1;
        d->steps[k].group = UINT32_MAX;
    }
    /* groups in the order of their first step; each group's steps in step order */
    uint32_t w = 0;
    for (uint32_t k = 0; k < ns; k++) {
        if (d->steps[k].group != UINT32_MAX)
            continue;
        if (TELLER_GROW(d->groups, S->groups_cap, d->ngroups + 1))
            goto done;
        uint32_t gi = (uint32_t)d->ngroups++;
        teller_step_group *g = &d->groups[gi];
        memset(g, 0, sizeof *g);
        g->kind = cls[k].kind;
        memcpy(g->family, cls[k].family, sizeof g->family);
        g->first = w;
        for (uint32_t j = k; j < ns; j++)
            if (d->steps[j].group == UINT32_MAX && cls[j].kind == g->kind && !strcmp(cls[j].family, g->family)) {
                d->steps[j].group = gi;
                d->group_steps[w++] = j;
            }
        g->n = w - g->first;
        g->spread = SPREAD_PRIOR;
        /* the steps no finding of their own flags, when there are enough */
        g->ref_first = (uint32_t)nref;
        if (TELLER_GROW(d->ref_steps, ref_cap, nref + g->n))
            goto done;
        for (uint32_t i = 0; i < g->n; i++)
            if (!flagged[d->group_steps[g->first + i]])
                d->ref_steps[nref++] = d->group_steps[g->first + i];
        if (nref - g->ref_first < MIN_REF) {
            nref = g->ref_first;
            for (uint32_t i = 0; i < g->n; i++)
                d->ref_steps[nref++] = d->group_steps[g->first + i];
        }
        g->nref = (uint32_t)(nref - g->ref_first);
        if (g->n >= TELLER_DIAG_GROUP_STEPS) {
            fit_group(g, d->ref_steps + g->ref_first, g->nref, dur, work, v);
            if (!g->by_work)
                fit_by_compute(d, g, dur, work, cwork, crank, v);
        }
    }
    for (uint32_t k = 0; k < ns; k++) {
        teller_diag_step *s = &d->steps[k];
        const teller_step_group *g = &d->groups[s->group];
        double u = -1;
        if (g->fitted) {
            if (!g->by_compute || work[k] > 0) /* a step only one rank computed in has no compute yardstick */
                u = usual_of(g, work[k]);
        } else {
            /* the nearest steps no finding flags, else the nearest */
            s->near_first = (uint32_t)nnear;
            if (near_steps(g, d->group_steps + g->first, k, work, flagged, &d->near_steps, &nnear, &near_cap) ||
                (nnear == s->near_first &&
                 near_steps(g, d->group_steps + g->first, k, work, NULL, &d->near_steps, &nnear, &near_cap)))
                goto done;
            s->near_n = (uint32_t)(nnear - s->near_first);
            for (uint32_t i = 0; i < s->near_n; i++)
                v[i] = dur[d->near_steps[s->near_first + i]];
            if (s->near_n)
                u = diag_median(v, s->near_n);
        }
        s->usual_ns = u > 0 ? (int64_t)llround(u) : -1;
        s->excess_ns = s->usual_ns >= 0 && s->dur_ns > s->usual_ns ? s->dur_ns - s->usual_ns : 0;
        s->spread = g->spread;
    }
    rc = diag_reference_yardsticks(D, S, spreads);
done:
    free(cls);
    free(dur);
    free(work);
    free(cwork);
    free(crank);
    free(v);
    return rc;
}

/* How far step s is beyond its alarm: 0.5 at the alarm's edge (its usual
 * plus `spreads` of its spreads, at least 1 % and 20 us over), towards 1
 * as it grows past it, 0 when it is no slower than usual; 0 without a
 * yardstick. */
double diag_slowness(const teller_diag_step *s, double spreads)
{
    if (s->usual_ns < 0 || s->excess_ns <= 0)
        return 0;
    double u = (double)s->usual_ns, edge = spreads * s->spread * u;
    if (edge < TELLER_FAULT_MATERIAL_SHARE * u)
        edge = TELLER_FAULT_MATERIAL_SHARE * u;
    if (edge < TELLER_FAULT_MATERIAL_NS)
        edge = TELLER_FAULT_MATERIAL_NS;
    return 1.0 - exp2(-(double)s->excess_ns / edge);
}
