/*
 * diagnose.c - numeric candidate localization (see diagnose.h).
 *
 * Every detector compares what a step did with what the run itself says is
 * normal, in a way that does not move with the batch (so a long prefill is
 * not an anomaly):
 *   peers     a kernel's time on a rank against the fastest tensor-parallel
 *             peer in the same step (peers do identical work); the peer
 *             groups come from the collectives the ranks share; without
 *             peers, against the usual time of its launch configurations,
 *             or a peerless stage of its pipeline;
 *   work      without any of those (a short trace of a rank without
 *             peers), a kernel's time against what its torch op's input
 *             shapes say it should take at the trace's own throughput;
 *   per call  an API call's duration against the run's median for that API
 *             (launch latency); rare APIs (cudaMalloc, cudaFree) against zero;
 *   sync      a synchronize's overhang past the rank's last GPU work;
 *   copies    copy bandwidth against the run's median (PCIe), and copy volume
 *             against the rank's usual volume per step (swapping);
 *   host      holes in which no thread of the process ran an op, named
 *             after the op that ended them, against that op's usual gap
 *             (descheduling), costed through the GPU's queue;
 *   links     a collective's transfer time (the last arriver's duration)
 *             against the usual for its operation and message size; one slow
 *             pair is a stalled send, several pairs a slow link; a collective
 *             that a rank never joined, or that ran for seconds, is a hang;
 *   logs      preemption, OOM and watchdog lines, aligned to steps.
 * Each finding is a candidate (rank, operator, layer) with the excess time
 * it explains and how unusual it is; a step's score is its best candidate's.
 * The thresholds were set on a tuning corpus (seeds kept apart from the ones
 * reported) and are documented in docs/DIAGNOSE.md.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "teller/model.h"
#include "diag_internal.h"
#include "teller/requests.h"
#include "teller/tree.h"
#include "../util/pool.h"

int diag_add_cand(dctx *D, uint32_t step, const cand *c)
{
    if (step >= D->nsteps)
        return 0;
    step_acc *s = &D->steps[step];
    if (TELLER_GROW(s->c, s->cap, s->n + 1))
        return -1;
    s->c[s->n++] = *c;
    return 0;
}

int diag_finds_add(finds *f, uint32_t step, const cand *c)
{
    if (TELLER_GROW(f->v, f->cap, f->n + 1))
        return -1;
    f->v[f->n].step = step;
    f->v[f->n++].c = *c;
    return 0;
}

/* adds f's candidates to their steps and empties f */
static int add_found(dctx *D, finds *f)
{
    int rc = 0;
    for (size_t i = 0; i < f->n && !rc; i++)
        rc = diag_add_cand(D, f->v[i].step, &f->v[i].c);
    free(f->v);
    memset(f, 0, sizeof *f);
    return rc;
}

/* ---- the detector families ---- */

/* The families that look at the whole run at once, in the order their
 * findings join the steps after the kernels' (the order decides only
 * ties, and must not change with the threads). Round 1 needs only the
 * store; round 2 also round 1's GPU busy index (API calls cost only the
 * GPU's idle time) and collective waits (a sync stall at a stage's end, a
 * degraded link's copies before a collective).
 * The kernels (kernels.c) go source by source: each source's tally in
 * round 1, each source against its peers' tallies in round 2, their
 * findings first, source after source. The host gaps (gaps.c) go source
 * by source in round 3, after the API calls, whose stalls they share the
 * collectives' lateness with (D->wait_left: a stall before a collective
 * costs at most how late the rank arrived at it; the API calls are the
 * only task of round 2 that writes it), with the other threads' busy index
 * of round 2; their findings come last, source after source. The
 * collectives (comm.c) run after the rounds, alone: they intern names into
 * the store, which no other thread may read meanwhile; the logs (logs.c)
 * after the merging. */
static const struct detector {
    int round;
    int (*run)(const dctx *D, finds *out);
} detectors[] = {
    {2, diag_detect_apis},   /* apis.c */
    {2, diag_detect_sync},   /* syncs.c: with round 1's collective waits */
    {2, diag_detect_copies}, /* copies.c: with round 1's collective waits */
    {1, diag_detect_roofline}, /* roofline.c: needs only the store and the peer groups */
};
enum { NDET = sizeof detectors / sizeof *detectors };

/* One round's tasks on the pool; each task writes only its own slots. */
typedef struct drun {
    dctx  *D;
    int    round;
    ktab  *kt;      /* per source */
    finds *kf;      /* per source: kernel findings */
    finds *gf;      /* per source: host-gap findings */
    finds  f[NDET]; /* per family of the table */
    int   *rc;      /* per task */
} drun;

/* Task i of a round: 0 the GPU busy index (round 1) or the other
 * threads' busy index (round 2), 1 each collective member's wait (round
 * 1), 2 .. NDET + 1 the table's families of the round, then one per
 * source for the kernels (rounds 1 and 2) or the host gaps (round 3), then
 * (round 1) one per source for what its steps queued behind earlier ones
 * (carry.c). The long tasks come first, so that no thread is left alone
 * with one at the end. */
enum { NINDEX = 2 }; /* the tasks before the families' */

static void run_task(void *ctx, size_t i)
{
    drun *R = ctx;
    const dctx *D = R->D;
    size_t ns = D->nsrc, first = NINDEX + NDET; /* the first per-source task */
    int rc = 0;
    if (i == 0)
        rc = R->round == 1 ? diag_busy_build(&R->D->gpu, D, DIAG_BUSY_GPU, NULL) : R->round == 2 ? diag_host_busy_build(R->D) : 0;
    else if (i == 1)
        rc = R->round == 1 ? diag_waits_build(R->D) || !(R->D->wait_left = diag_waits_left(D)) : 0;
    else if (i < first)
        rc = detectors[i - NINDEX].round == R->round ? detectors[i - NINDEX].run(D, &R->f[i - NINDEX]) : 0;
    else if (i >= first + ns)
        rc = R->round == 1 ? diag_carry_exposure(D, i - first - ns) : 0;
    else if (R->round == 1)
        rc = diag_kernels_tally(D, i - first, &R->kt[i - first]);
    else if (R->round == 2)
        rc = diag_kernels_judge(D, i - first, R->kt, &R->kf[i - first]);
    else
        rc = diag_detect_gaps(D, i - first, &R->gf[i - first]);
    R->rc[i] = rc;
}

/* Runs every family but the collectives' on jobs threads and adds what
 * they found to the steps in a fixed order (above), the one a single
 * thread running them one after the other would add them in. 0, or -1
 * out of memory. */
static int run_detectors(dctx *D, int jobs)
{
    size_t ns = D->nsrc, ntasks = NINDEX + NDET + 2 * ns;
    drun R = {.D = D, .kt = calloc(ns + 1, sizeof *R.kt), .kf = calloc(ns + 1, sizeof *R.kf),
              .gf = calloc(ns + 1, sizeof *R.gf), .rc = calloc(ntasks, sizeof *R.rc)};
    int rc = -1;
    D->expo = calloc((size_t)D->nsteps * ns + 1, sizeof *D->expo);
    if (!R.kt || !R.kf || !R.gf || !R.rc || !D->expo)
        goto done;
    for (R.round = 1; R.round <= 3; R.round++) {
        teller_parallel_for(jobs, ntasks, run_task, &R);
        for (size_t i = 0; i < ntasks; i++)
            if (R.rc[i])
                goto done;
    }
    rc = 0;
    for (size_t s = 0; s < ns && !rc; s++)
        rc = add_found(D, &R.kf[s]);
    for (size_t f = 0; f < NDET && !rc; f++)
        rc = add_found(D, &R.f[f]);
    for (size_t s = 0; s < ns && !rc; s++)
        rc = add_found(D, &R.gf[s]);
done:
    for (size_t s = 0; s < ns; s++) {
        if (R.kt)
            diag_ktab_free(&R.kt[s]);
        if (R.kf)
            free(R.kf[s].v);
        if (R.gf)
            free(R.gf[s].v);
    }
    for (size_t f = 0; f < NDET; f++)
        free(R.f[f].v);
    free(R.kt);
    free(R.kf);
    free(R.gf);
    free(R.rc);
    return rc;
}

/* Where the trace lacks GPU work (a launch without it, a profiler that
 * dropped records), what the GPU did is unknown: a host stall's cost, the
 * GPU's idle time while it lasted, and a synchronize's wait past the GPU's
 * last work cannot be told from the trace, so such findings are left out
 * there and a note says where (D->gpu_known, per step and source). */
static int unknown_gpu(dctx *D)
{
    teller_step_summary *sum = NULL;
    size_t n = 0;
    teller_error err;
    if (teller_step_summaries(D->st, &sum, &n, &err) != TELLER_OK)
        return -1;
    D->gpu_known = malloc((size_t)D->nsteps * D->nsrc + 1);
    if (!D->gpu_known) {
        free(sum);
        return -1;
    }
    memset(D->gpu_known, 1, (size_t)D->nsteps * D->nsrc + 1);
    size_t rows = 0, launches = 0, unlaunched = 0, dropped = 0;
    for (size_t i = 0; i < n; i++) {
        int32_t src = teller_store_source_of_rank(D->st, sum[i].rank);
        if (sum[i].gpu_known || src < 0 || sum[i].step >= D->nsteps)
            continue;
        D->gpu_known[(size_t)sum[i].step * D->nsrc + (size_t)src] = 0;
        rows++;
        launches += sum[i].launches;
        unlaunched += sum[i].unlaunched;
    }
    for (size_t q = 0; q < D->nsrc; q++)
        dropped += teller_store_source_c(D->st, (uint32_t)q)->dropped;
    free(sum);
    size_t left = 0;
    for (uint32_t k = 0; k < D->nsteps && rows; k++) {
        step_acc *sa = &D->steps[k];
        for (size_t a = 0; a < sa->n; a++) {
            cand *c = &sa->c[a];
            int32_t src = teller_store_source_of_rank(D->st, c->rank);
            if (src >= 0 && !D->gpu_known[(size_t)k * D->nsrc + (size_t)src] &&
                (c->det == TELLER_FAULT_LAUNCH_LATENCY || c->det == TELLER_FAULT_CPU_CONTENTION ||
                 c->det == TELLER_FAULT_SYNC_STALL)) {
                c->det = TELLER_FAULT_NONE;
                left++;
            }
        }
    }
    if (rows) {
        char note[400];
        int w = snprintf(note, sizeof note, "the trace lacks GPU work of %zu step row%s (step and rank): ", rows,
                         rows == 1 ? "" : "s");
        if (unlaunched)
            w += snprintf(note + w, sizeof note - (size_t)w,
                          "%zu of their %zu launch calls have none in it (a graph replay recorded without its "
                          "kernels, a capture window that cut the GPU's work)%s",
                          unlaunched, launches, dropped ? "; " : "");
        if (dropped && w > 0 && (size_t)w < sizeof note)
            w += snprintf(note + w, sizeof note - (size_t)w, "the profiler says it dropped %zu records", dropped);
        if (w > 0 && (size_t)w < sizeof note)
            snprintf(note + w, sizeof note - (size_t)w,
                     ": what their GPU did is unknown, so host stalls there (%zu finding%s) are not judged", left,
                     left == 1 ? "" : "s");
        diag_add_note(D, note);
    }
    return D->nomem ? -1 : 0;
}

/* A note on the steps without a yardstick: the only step of their kind,
 * or none of their kind near their work. */
static void yardless_note(dctx *D)
{
    const teller_diagnosis *d = D->out;
    size_t n = 0, found = 0;
    uint32_t first = 0;
    for (uint32_t k = 0; k < d->n; k++) {
        if (d->steps[k].usual_ns >= 0)
            continue;
        if (!n++)
            first = k;
        found += d->steps[k].ncands > 0 && !d->steps[k].pred.abnormal;
    }
    if (!n)
        return;
    char note[400];
    if (n == 1)
        snprintf(note, sizeof note, "step %u has no yardstick (no other step of its kind and work)", first);
    else
        snprintf(note, sizeof note, "%zu steps (the first, step %u) have no yardstick (no other step of their kind and work)",
                 n, first);
    size_t w = strlen(note);
    snprintf(note + w, sizeof note - w,
             ": only what needs none can flag %s (a hang, an OOM, log lines, a blocking wait the trace shows)%s",
             n == 1 ? "it" : "them", found ? "; the other findings there are listed as candidates, not alarms" : "");
    diag_add_note(D, note);
}

/* ---- merging candidates that are one finding ---- */

static int merge_groups(dctx *D, teller_fault det, merge_fn fn)
{
    size_t *idx = NULL, cap = 0;
    for (uint32_t k = 0; k < D->nsteps; k++) {
        step_acc *s = &D->steps[k];
        for (size_t a = 0; a < s->n; a++) {
            if (s->c[a].det != det)
                continue;
            size_t n = 0;
            for (size_t b = 0; b < s->n; b++) {
                if (s->c[b].det != det || s->c[b].rank != s->c[a].rank)
                    continue;
                if (TELLER_GROW(idx, cap, n + 1)) {
                    free(idx);
                    return -1;
                }
                idx[n++] = b;
            }
            size_t keep = fn(D, s->c, idx, n);
            if (keep == SIZE_MAX)
                continue;
            for (size_t q = 0; q < n; q++)
                if (idx[q] != keep)
                    s->c[idx[q]].det = TELLER_FAULT_NONE;
        }
    }
    free(idx);
    return 0;
}

/* A host stall on a rank whose step also shows an allocator or OOM
 * finding is that finding's handling, not contention. Engine-wide copy
 * volume (swapping on every rank) is one finding, led by the lowest rank. */
static void absorb(dctx *D)
{
    for (uint32_t k = 0; k < D->nsteps; k++) {
        step_acc *s = &D->steps[k];
        for (size_t a = 0; a < s->n; a++) {
            if (s->c[a].det != TELLER_FAULT_OOM && (s->c[a].det != TELLER_FAULT_MALLOC_STORM || s->c[a].excess <= 0))
                continue; /* allocations that cost nothing handled nothing, unless they were an OOM's */
            for (size_t b = 0; b < s->n; b++)
                if (s->c[b].det == TELLER_FAULT_CPU_CONTENTION && s->c[b].rank == s->c[a].rank) {
                    s->c[a].excess += s->c[b].excess;
                    s->c[b].det = TELLER_FAULT_NONE;
                }
        }
        size_t lead = SIZE_MAX;
        double sum = 0;
        int n = 0;
        for (size_t a = 0; a < s->n; a++) {
            if (s->c[a].det != TELLER_FAULT_KV_SWAP)
                continue;
            n++;
            if (s->c[a].excess > sum)
                sum = s->c[a].excess;
            if (lead == SIZE_MAX || s->c[a].rank < s->c[lead].rank)
                lead = a;
        }
        if (n < 2)
            continue;
        for (size_t a = 0; a < s->n; a++)
            if (s->c[a].det == TELLER_FAULT_KV_SWAP && a != lead)
                s->c[a].det = TELLER_FAULT_NONE;
        s->c[lead].excess = sum;
    }
}

/* ---- scoring and results ---- */

/* A finding's score is what it cost the step: its excess against the
 * step's duration, scaled so that a cost of TELLER_FAULT_MATERIAL_SHARE of
 * the step scores 0.5 (the default threshold), damped below
 * TELLER_FAULT_MATERIAL_NS, and only when the operator was clearly unusual
 * (25 % over its usual time or more counts in full). How unusual alone never
 * flags a step: a call 3x its median that cost 4 us of a 20 ms step is not
 * a fault. Hangs and preemptions are facts the logs or the collectives
 * state; OOM and swapping confirmed by a log line count at least 0.95. */
static double cand_score(const cand *c, double step_dur, int has_log)
{
    if (c->det == TELLER_FAULT_NCCL_HANG || c->det == TELLER_FAULT_PREEMPTION)
        return 0.99;
    double rel = step_dur > 0 ? c->excess / step_dur : 0;
    double unusual = c->sig > 1 ? log(c->sig) / log(1.25) : 0;
    double s = (1.0 - exp(-log(2.0) * rel / TELLER_FAULT_MATERIAL_SHARE)) * (unusual < 1 ? unusual : 1);
    if (c->excess < TELLER_FAULT_MATERIAL_NS)
        s *= c->excess > 0 ? c->excess / TELLER_FAULT_MATERIAL_NS : 0;
    if (has_log && (c->det == TELLER_FAULT_OOM || c->det == TELLER_FAULT_KV_SWAP))
        s = s < 0.95 ? 0.95 : s;
    return s;
}

/* Whether finding c states a fact that needs no yardstick: a collective
 * that never ended, a preemption the logs state, an OOM or a swap with its
 * log line, and in a step without a yardstick a blocking wait the trace
 * shows (a synchronize that held the host long after the GPU's work). */
static int fact_based(const cand *c, const teller_diag_step *s)
{
    switch (c->det) {
    case TELLER_FAULT_NCCL_HANG:
    case TELLER_FAULT_PREEMPTION:
        return 1;
    case TELLER_FAULT_OOM:
    case TELLER_FAULT_KV_SWAP:
        return s->pred.nev > 0;
    case TELLER_FAULT_SYNC_STALL:
        return s->usual_ns < 0;
    default:
        return 0;
    }
}

static int cand_cmp(const void *a, const void *b)
{
    const cand *x = a, *y = b;
    if (x->score != y->score)
        return x->score > y->score ? -1 : 1;
    if (x->excess != y->excess)
        return x->excess > y->excess ? -1 : 1;
    return x->rank < y->rank ? -1 : x->rank > y->rank;
}

/* Each step's yardstick (yardstick.c), made of the steps of its kind that
 * no finding of their own flags: in a run with many faults the faulty
 * steps would make the usual step slower, and its spread wider. */
static int yardsticks(dctx *D, double threshold)
{
    uint8_t *flagged = calloc(D->nsteps + 1, 1);
    if (!flagged)
        return -1;
    for (uint32_t k = 0; k < D->nsteps; k++) {
        const step_acc *sa = &D->steps[k];
        for (size_t a = 0; a < sa->n && !flagged[k]; a++)
            flagged[k] = sa->c[a].det != TELLER_FAULT_NONE &&
                         cand_score(&sa->c[a], (double)D->out->steps[k].dur_ns, D->out->steps[k].pred.nev > 0) >= threshold;
    }
    int rc = diag_yardsticks(D, flagged);
    free(flagged);
    return rc;
}

/* The node of candidate c's rank (a slow link's rank is the receiving
 * node's lowest; its event may be the other end's), else of its event. */
static int32_t rank_node(const teller_store *st, const cand *c)
{
    int32_t n = c->rank >= 0 ? diag_node_of_rank(st, c->rank) : -1;
    return n >= 0 || c->event == TELLER_NONE ? n : teller_store_event_node(st, c->event);
}

/* x in [lo, hi]; 0 for a NaN (a figure a detector left undefined) */
static float clampf(double x, double lo, double hi) { return (float)(x != x ? 0 : x < lo ? lo : x > hi ? hi : x); }
static double nonneg(double x) { return x > 0 ? x : 0; }

/* The feature vector of candidate c, the a-th of n in step k (diagnose.h
 * lists the features). src: the rank's source, -1 when not loaded. */
static void cand_features(const dctx *D, const teller_diag_step *s, uint32_t k, const cand *c, size_t a, size_t n,
                          int32_t src, int32_t node, double ranks, double nodes, double med_step, float *f)
{
    double dur = (double)s->dur_ns;
    double cell_last = 0, cell_wait = 0;
    if (src >= 0) {
        cell_last = D->late_last[(size_t)k * D->nsrc + (size_t)src];
        cell_wait = D->late_wait[(size_t)k * D->nsrc + (size_t)src];
    }
    int32_t peer_node = c->peer >= 0 ? diag_node_of_rank(D->st, c->peer) : -1;
    f[TELLER_CF_EXCESS_SHARE] = clampf(dur > 0 ? c->excess / dur : 0, 0, 1);
    f[TELLER_CF_LOG2_SIG] = clampf(c->sig > 1 ? log2(c->sig) : 0, 0, 16);
    f[TELLER_CF_LOG2_ACTUAL] = clampf(log2((nonneg(c->actual) + 1000) / (nonneg(c->usual) + 1000)), -16, 16);
    f[TELLER_CF_LOG10_EXCESS_US] = clampf(log10(1 + nonneg(c->excess) / 1000), 0, 16);
    f[TELLER_CF_SCORE] = clampf(c->score, 0, 1);
    f[TELLER_CF_ORDER] = n ? (float)a / (float)n : 0;
    f[TELLER_CF_RANK] = c->rank >= 0 && ranks > 0 ? (float)(c->rank / ranks) : 0;
    f[TELLER_CF_NODE] = node >= 0 && nodes > 0 ? (float)(node / nodes) : 0;
    f[TELLER_CF_CROSS_NODE] = peer_node >= 0 && node >= 0 && peer_node != node;
    f[TELLER_CF_LATE_SHARE] = D->late_insts[k] ? clampf(cell_last / D->late_insts[k], 0, 1) : 0;
    f[TELLER_CF_WAIT_SHARE] = clampf(dur > 0 ? cell_wait / dur : 0, 0, 1);
    f[TELLER_CF_HAS_LOG] = s->pred.nev > 0;
    f[TELLER_CF_STEP_LOG2_REL] = clampf(med_step > 0 && dur > 0 ? log2(dur / med_step) : 0, -16, 16);
    f[TELLER_CF_LOG2_FED] = (float)log2(1.0 + c->fed);
    f[TELLER_CF_NOT_LOADED] = src < 0;
}

static void diag_free_ctx(dctx *D)
{
    if (D->steps)
        for (uint32_t k = 0; k < D->nsteps; k++)
            free(D->steps[k].c);
    free(D->steps);
    free(D->group);
    free(D->peers);
    free(D->gfirst);
    free(D->gcount);
    free(D->pipe);
    free(D->linked);
    free(D->pfirst);
    free(D->pcount);
    free(D->mrow);
    free(D->range);
    free(D->late_last);
    free(D->late_insts);
    free(D->late_wait);
    free(D->expo);
    free(D->gpu_known);
    diag_busy_free(&D->gpu);
    diag_busy_free(&D->host);
    diag_busy_free(&D->any);
    free(D->step_tid);
    diag_waits_free(&D->waits);
    free(D->wait_left);
    teller_req_abort(D->req);
}

teller_diag_opts teller_diag_defaults(void)
{
    teller_diag_opts o = {0};
    o.threshold = 0.5;
    o.spreads = TELLER_DIAG_SPREADS;
    return o;
}

void teller_diagnosis_free(teller_diagnosis *d)
{
    if (!d)
        return;
    for (size_t i = 0; i < d->nnotes; i++)
        free(d->notes[i]);
    free(d->notes);
    free(d->steps);
    free(d->cands);
    free(d->facts);
    free(d->groups);
    free(d->group_steps);
    free(d->near_steps);
    free(d->ref_steps);
    teller_requests_free(d->requests);
    free(d);
}

teller_status teller_diagnose(teller_store *st, const teller_diag_opts *opts, teller_diagnosis **out, teller_error *err)
{
    teller_diag_opts def = teller_diag_defaults();
    const teller_diag_opts *o = opts ? opts : &def;
    double threshold = o->threshold > 0 ? o->threshold : def.threshold;
    double spreads = o->spreads >= 0 ? o->spreads : TELLER_DIAG_SPREADS;
    dctx D = {0};
    teller_model_tracer *tracer = NULL; /* the model's view of the run's traces (model.h) */
    D.st = st;
    D.ev = teller_store_events(st);
    D.nsteps = teller_store_step_count(st);
    D.steps = calloc(D.nsteps ? D.nsteps : 1, sizeof *D.steps);
    D.group = calloc(teller_store_num_sources(st) + 1, sizeof *D.group);
    D.pipe = calloc(teller_store_num_sources(st) + 1, sizeof *D.pipe);
    teller_diagnosis *d = calloc(1, sizeof *d);
    if (!D.steps || !D.group || !D.pipe || !d)
        goto oom;
    d->steps = calloc(D.nsteps ? D.nsteps : 1, sizeof *d->steps);
    if (!d->steps)
        goto oom;
    d->n = D.nsteps;
    D.out = d;
    const teller_step *steps = teller_store_steps(st);
    for (uint32_t k = 0; k < D.nsteps; k++) {
        d->steps[k].pred.step = k;
        d->steps[k].root_rank = -1;
        d->steps[k].root_node = -1;
        d->steps[k].culprit_event = TELLER_NONE;
        d->steps[k].start_ns = INT64_MAX;
        d->steps[k].dur_ns = -1;
        d->steps[k].dur_rank = -1;
    }
    /* a step's duration on a rank is the time it added to the rank's run:
     * from its window's start (its annotation's), or the end of the rank's
     * window of the step before when that is later (a host that runs ahead
     * queues the step's work behind the last step's), to its window's end
     * (its last GPU work's). The step's duration is its longest rank's. */
    int64_t *prev_end = malloc((teller_store_num_sources(st) + 1) * sizeof *prev_end);
    if (!prev_end)
        goto oom;
    for (size_t q = 0; q < teller_store_num_sources(st); q++)
        prev_end[q] = INT64_MIN;
    for (size_t i = 0; i < teller_store_num_steps(st); i++) {
        teller_diag_step *s = &d->steps[steps[i].step];
        int32_t src = teller_store_source_of_rank(st, steps[i].rank);
        int64_t from = steps[i].start_ns;
        if (src >= 0) {
            if (prev_end[src] > from)
                from = prev_end[src] < steps[i].end_ns ? prev_end[src] : steps[i].end_ns;
            prev_end[src] = steps[i].end_ns;
        }
        int64_t w = steps[i].end_ns - from;
        if (w > s->dur_ns || (w == s->dur_ns && steps[i].rank < s->dur_rank)) {
            s->dur_ns = w;
            s->dur_rank = steps[i].rank;
        }
        if (steps[i].start_ns < s->start_ns)
            s->start_ns = steps[i].start_ns;
    }
    free(prev_end);
    for (uint32_t k = 0; k < D.nsteps; k++)
        if (d->steps[k].dur_ns < 0)
            d->steps[k].dur_ns = 0;
    D.t_first = INFINITY;
    D.t_last = -INFINITY;
    for (uint32_t k = 0; k < D.nsteps; k++) {
        D.steps[k].start = (double)d->steps[k].start_ns;
        if (D.steps[k].start < D.t_first)
            D.t_first = D.steps[k].start;
        if (D.steps[k].start + (double)d->steps[k].dur_ns > D.t_last)
            D.t_last = D.steps[k].start + (double)d->steps[k].dur_ns;
    }
    D.nsrc = teller_store_num_sources(st);
    /* the tree build grouped the events by source, in source order */
    D.range = calloc(D.nsrc + 1, sizeof *D.range);
    if (!D.range)
        goto oom;
    int grouped = 1;
    for (size_t s = 0; s < D.nsrc && grouped; s++) {
        const teller_source *so = teller_store_source_c(st, (uint32_t)s);
        grouped = so->first_event == D.range[s] && so->num_events <= D.ev->n - D.range[s];
        D.range[s + 1] = D.range[s] + so->num_events;
    }
    if (!grouped || D.range[D.nsrc] != D.ev->n) {
        diag_free_ctx(&D);
        teller_diagnosis_free(d);
        return teller_error_set(err, TELLER_ERR_ARG, "(diagnose)", 0, "events are not grouped by source: build the trees first");
    }
    D.mrow = malloc(((size_t)D.nsteps * D.nsrc + 1) * sizeof *D.mrow);
    if (!D.mrow)
        goto oom;
    for (size_t c = 0; c < (size_t)D.nsteps * D.nsrc; c++)
        D.mrow[c] = TELLER_NONE;
    for (size_t i = 0; i < teller_store_num_steps(st); i++) {
        uint32_t mk = steps[i].marker;
        if (mk != TELLER_NONE && steps[i].step < D.nsteps)
            D.mrow[(size_t)steps[i].step * D.nsrc + D.ev->source[mk]] = (uint32_t)i;
    }
    {
        int32_t low = INT32_MAX;
        for (size_t s = 0; s < teller_store_num_sources(st); s++)
            if (teller_store_source_c(st, (uint32_t)s)->rank < low)
                low = teller_store_source_c(st, (uint32_t)s)->rank;
        for (size_t s = 0; s < D.nsrc; s++) {
            if (teller_store_source_c(st, (uint32_t)s)->rank != low)
                continue;
            for (size_t i = D.range[s]; i < D.range[s + 1]; i++)
                if (D.ev->layer[i] == TELLER_LAYER_KERNEL && !(D.ev->flags[i] & TELLER_F_COMM) && D.ev->step[i] < D.nsteps)
                    D.steps[D.ev->step[i]].work += (double)D.ev->dur_ns[i];
        }
    }
    if (diag_build_groups(&D))
        goto oom;
    if (run_detectors(&D, o->jobs > 0 ? o->jobs : teller_num_cores()) || diag_detect_comm(&D) || unknown_gpu(&D))
        goto oom;
    if (merge_groups(&D, TELLER_FAULT_KERNEL_REGRESSION, diag_merge_throttle) || merge_groups(&D, TELLER_FAULT_LAUNCH_LATENCY, diag_merge_launches) ||
        merge_groups(&D, TELLER_FAULT_MALLOC_STORM, diag_classify_malloc) ||
        merge_groups(&D, TELLER_FAULT_PCIE_DEGRADATION, diag_merge_pcie))
        goto oom;
    absorb(&D);
    if (diag_merge_links(&D))
        goto oom;
    teller_status lst = diag_read_logs(&D, o, err);
    if (lst == TELLER_ERR_NOMEM)
        goto oom;
    if (lst != TELLER_OK) {
        diag_free_ctx(&D);
        teller_diagnosis_free(d);
        return lst;
    }
    if (diag_subtract_run_normal(&D) || yardsticks(&D, threshold))
        goto oom;
    diag_notes(&D);
    /* rank the candidates of every step; the feature vectors need the
     * horizontal view, the run's usual step and the ranks' places */
    if (diag_late_tables(&D))
        goto oom;
    double med_step = 0, ranks = 0, nodes = 0;
    {
        double *durs = malloc((D.nsteps ? D.nsteps : 1) * sizeof *durs);
        if (!durs)
            goto oom;
        for (uint32_t k = 0; k < D.nsteps; k++)
            durs[k] = (double)d->steps[k].dur_ns;
        med_step = diag_median(durs, D.nsteps);
        free(durs);
        d->usual_step_ns = (int64_t)med_step;
        d->model = o->model != NULL;
        for (size_t q = 0; q < D.nsrc; q++) {
            const teller_source *so = teller_store_source_c(st, (uint32_t)q);
            if (so->rank + 1 > ranks)
                ranks = so->rank + 1;
            if (so->node + 1 > nodes)
                nodes = so->node + 1;
        }
    }
    size_t cands_cap = 0;
    /* the previous step's root, how late its GPU work ended and how late
     * the root's rank started this step, when it was flagged (prev.det
     * NONE otherwise) */
    cand prev = {0};
    double late = 0, late_host = 0;
    size_t model_blank = 0; /* steps the model gave no number for */
    if (o->model && teller_model_tracer_create(o->model, NULL, st, &tracer, err) != TELLER_OK)
        goto oom; /* the model's own vocabulary: only memory can fail */
    for (uint32_t k = 0; k < D.nsteps; k++) {
        step_acc *sa = &D.steps[k];
        teller_diag_step *s = &d->steps[k];
        size_t w = 0;
        for (size_t a = 0; a < sa->n; a++)
            if (sa->c[a].det != TELLER_FAULT_NONE)
                sa->c[w++] = sa->c[a];
        sa->n = w;
        /* the previous step's fault, carried into this step as far as its
         * late GPU work held this step's (carry.c); a logged kind is a
         * fact of its own step (a hang ends the run) */
        double carry_in = 0;
        if (prev.det != TELLER_FAULT_NONE && !teller_fault_def_of(prev.det)->logged &&
            (carry_in = diag_carried(&D, k, late, late_host, prev.rank)) > 0) {
            cand c = prev;
            c.excess = carry_in;
            c.from = prev.carried ? prev.from : k - 1;
            c.carried = 1;
            c.came = late;
            c.host = late_host;
            if (diag_add_cand(&D, k, &c))
                goto oom;
        } else {
            carry_in = 0;
        }
        prev.det = TELLER_FAULT_NONE;
        /* a finding's cost against what the step usually takes (a last
         * step that also holds the profiler's stop is longer than a fault
         * makes it), else against the step */
        double base = s->usual_ns > 0 ? (double)s->usual_ns : (double)s->dur_ns;
        for (size_t a = 0; a < sa->n; a++)
            sa->c[a].score = cand_score(&sa->c[a], base, s->pred.nev > 0);
        teller_sort(sa->c, sa->n, sizeof *sa->c, cand_cmp);
        /* a fault of the step's own that flags it is its root, before a
         * carried one however much that cost */
        for (size_t a = 1; sa->n && sa->c[0].carried && sa->c[0].score >= threshold && a < sa->n; a++)
            if (sa->c[a].score >= threshold) {
                cand own = sa->c[a];
                memmove(sa->c + 1, sa->c, a * sizeof *sa->c);
                sa->c[0] = own;
                break;
            }
        /* the step's candidates: one per (rank, operator), best first;
         * idx: each one's finding in sa->c */
        s->first_cand = (uint32_t)d->ncands;
        s->peer_colls = D.late_insts[k];
        size_t idx[TELLER_DIAG_MAX_CANDS];
        for (size_t a = 0; a < sa->n && s->ncands < TELLER_DIAG_MAX_CANDS; a++) {
            const cand *c = &sa->c[a];
            int dup = 0;
            for (uint32_t q = s->first_cand; q < s->first_cand + s->ncands; q++)
                dup |= d->cands[q].rank == c->rank && d->cands[q].name == c->name;
            if (dup)
                continue;
            if (TELLER_GROW(d->cands, cands_cap, d->ncands + 1))
                goto oom;
            teller_diag_cand *dc = &d->cands[d->ncands++];
            int32_t src = teller_store_source_of_rank(st, c->rank);
            dc->det = c->det;
            dc->rank = c->rank;
            dc->node = rank_node(st, c);
            dc->name = c->name;
            dc->layer = c->layer;
            dc->event = c->event;
            dc->excess_ns = c->excess;
            dc->actual_ns = c->actual;
            dc->usual_ns = c->usual;
            dc->score = c->score;
            cand_features(&D, s, k, c, a, sa->n, src, dc->node, ranks, nodes, med_step, dc->feat);
            idx[s->ncands++] = a;
        }
        teller_diag_cand *sc = s->ncands ? d->cands + s->first_cand : NULL; /* no step may have any */
        s->pred.score = s->ncands ? sc[0].score : 0;
        if (o->model && s->ncands) {
            /* the model judges whether the step is abnormal, and puts its
             * root first (the numeric stage's first unless it is sure of
             * another); the rest keep the numeric stage's order */
            teller_model_sample smp;
            teller_model_out mo;
            if (teller_model_step(tracer, d, k, &smp, &mo, err) != TELLER_OK)
                goto oom;
            if (!teller_model_out_valid(&mo, s->ncands)) {
                model_blank++; /* a model whose sums overflow (a damaged file): no opinion */
            } else {
                double share = sc[0].feat[TELLER_CF_EXCESS_SHARE]; /* the numeric stage's first, before the move */
                uint32_t r = teller_model_root(&smp, &mo, o->model_alone ? 0 : TELLER_MODEL_ROOT_CONFIDENCE, share);
                teller_diag_cand tc = sc[r];
                size_t ti = idx[r];
                for (; r > 0; r--)
                    sc[r] = sc[r - 1], idx[r] = idx[r - 1];
                sc[0] = tc, idx[0] = ti;
                s->pred.score = o->model_alone ? mo.p_abnormal
                                               : teller_model_step_score(&mo, s->pred.score, share,
                                                                         s->peer_colls > 0, threshold);
            }
        }
        /* the step is the unit of alarm: a finding flags it only when the
         * step took longer than its kind usually does, beyond the kind's
         * spread, unless what it found is a fact (a hang, a log line; a
         * blocking wait the trace shows, in a step without a yardstick) */
        s->slowness = diag_slowness(d, k, spreads);
        s->slow = s->slowness >= 0.5;
        s->fact = s->ncands && fact_based(&sa->c[idx[0]], s);
        if (!s->fact && s->pred.score > s->slowness)
            s->pred.score = s->slowness;
        s->pred.abnormal = s->pred.score >= threshold;
        for (uint32_t q = 0; q < s->ncands && s->pred.ncand < TELLER_MAX_CANDIDATES; q++) {
            teller_candidate *tc = &s->pred.cand[s->pred.ncand++];
            tc->rank = sc[q].rank;
            snprintf(tc->op, sizeof tc->op, "%s", teller_store_str(st, sc[q].name));
            snprintf(tc->layer, sizeof tc->layer, "%s", teller_layer_tag((teller_layer)sc[q].layer));
            tc->score = sc[q].score;
        }
        if (!s->ncands) {
            if (s->slow)
                diag_explain_slow(&D, s);
            continue;
        }
        const cand *top = &sa->c[idx[0]];
        if (s->pred.abnormal) {
            /* its GPU work ended late by its own fault and what it carried
             * (a carried window grew by its GPU's lateness less its host's);
             * the host of the root's rank starts the next step late by the
             * fault's host delay and the step's own other slowed calls and
             * gaps there (a launch slowdown the queue absorbed; not other
             * synchronizes, whose overhangs follow the GPU), and by what it
             * carried on the same rank (a host that runs ahead does not
             * catch up) */
            double own_host = top->carried ? 0 : top->host;
            for (size_t a = 0; a < sa->n; a++)
                if (&sa->c[a] != top && !sa->c[a].carried && sa->c[a].rank == top->rank && sa->c[a].det != TELLER_FAULT_SYNC_STALL)
                    own_host += sa->c[a].host;
            int same = carry_in > 0 && prev.rank == top->rank;
            late = top->excess + (top->carried ? top->host : carry_in > 0 ? carry_in + late_host : 0);
            late_host = own_host + (top->carried ? top->host : same ? late_host : 0);
            prev = *top;
        }
        s->root_rank = top->rank;
        s->culprit_event = top->event;
        s->culprit_ns = (int64_t)top->actual;
        s->culprit_base_ns = (int64_t)top->usual;
        s->root_node = rank_node(st, top);
        double ex = top->excess < (double)s->dur_ns ? top->excess : (double)s->dur_ns;
        if (s->usual_ns >= 0 && ex > (double)s->excess_ns)
            ex = (double)s->excess_ns;
        s->explained_ns = ex > 0 ? (int64_t)ex : 0;
        if (s->pred.abnormal) {
            snprintf(s->fault, sizeof s->fault, "%s", teller_fault_name(top->det));
            snprintf(s->pred.fault_type, sizeof s->pred.fault_type, "%s", teller_fault_type(top->det));
            snprintf(s->pred.view, sizeof s->pred.view, "%s", teller_fault_view(top->det));
            diag_explain(&D, s, top);
        } else if (s->slow) {
            diag_explain_slow(&D, s);
        }
    }
    teller_model_tracer_free(tracer);
    tracer = NULL;
    yardless_note(&D);
    if (model_blank) {
        char note[200];
        snprintf(note, sizeof note, "the model gave no number for %zu step%s (its sums overflow: a damaged model file?): "
                 "the numeric stage judged %s", model_blank, model_blank == 1 ? "" : "s", model_blank == 1 ? "it" : "them");
        diag_add_note(&D, note);
    }
    if (D.nomem)
        goto oom;
    /* the requests, read with the logs, against the steps as judged */
    if (D.req) {
        teller_status rs = teller_req_finish(D.req, d, &d->requests, err);
        D.req = NULL;
        if (rs != TELLER_OK) {
            diag_free_ctx(&D);
            teller_diagnosis_free(d);
            return rs;
        }
    }
    diag_free_ctx(&D);
    *out = d;
    return TELLER_OK;
oom:
    teller_model_tracer_free(tracer);
    diag_free_ctx(&D);
    teller_diagnosis_free(d);
    return teller_error_set(err, TELLER_ERR_NOMEM, "(diagnose)", 0, "out of memory");
}
