/*
 * diagnose.c - numeric candidate localization (see diagnose.h): runs the
 * detector table (detector.h, detectors.def) and judges the steps.
 *
 * Every detector compares what a step did with what the run itself says is
 * normal, in a way that does not move with the batch (so a long prefill is
 * not an anomaly): a kernel against its tensor-parallel peers in the same
 * step, or the usual time of its launch configurations, or the work its
 * op's shapes state; an API call against the run's median for it; a
 * synchronize's wait past the GPU's last work; copies against the run's
 * bandwidth and the rank's usual volume; host holes against their op's
 * usual gap, costed through the GPU's queue; a collective's transfer
 * against the usual for its op and size; log lines aligned to steps. Each
 * finding is a candidate (rank, operator, layer) with the excess time it
 * explains and how unusual it is. Once the table has run, each step gets
 * its yardstick (yardstick.c), its candidates are scored and ranked, and
 * the step is flagged only when it took longer than its kind usually does
 * (or a finding states a fact); its explanation is made of facts
 * (facts.c). The thresholds are documented in docs/DIAGNOSE.md.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "detector.h"
#include "judge.h"
#include "teller/model.h"
#include "teller/requests.h"
#include "teller/tree.h"
#include "../util/pool.h"

#define DIAG_ROW(name) &diag_row_##name,
const diag_detector *const diag_table[] = {
#include "detectors.def"
};
#undef DIAG_ROW
const size_t diag_table_size = sizeof diag_table / sizeof *diag_table;

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
    if (c->det == TELLER_FAULT_NCCL_HANG || (c->det == TELLER_FAULT_PREEMPTION && !c->reference))
        return 0.99;
    double rel = step_dur > 0 ? c->excess / step_dur : 0;
    double unusual = c->ratio > 1 ? log(c->ratio) / log(1.25) : 0;
    double s = (1.0 - exp(-log(2.0) * rel / TELLER_FAULT_MATERIAL_SHARE)) * (unusual < 1 ? unusual : 1);
    if (c->excess < TELLER_FAULT_MATERIAL_NS)
        s *= c->excess > 0 ? c->excess / TELLER_FAULT_MATERIAL_NS : 0;
    if (has_log && (c->det == TELLER_FAULT_OOM || c->det == TELLER_FAULT_KV_SWAP))
        s = s < 0.95 ? 0.95 : s;
    return s;
}

/* The most a finding on rank could have cost step k (s): unbounded when
 * every rank is linked to it by collectives; when the run holds ranks it
 * shares no collective with (data-parallel replicas, each running a batch
 * of its own), how far its linked ranks' step ran past both the step's
 * usual (when it has one) and the other replicas' longest: a replica that
 * finished within either held nothing back, whatever slowed it. */
static double replica_cost(const dctx *D, const teller_diag_step *s, int32_t rank, uint32_t k)
{
    int32_t q = rank >= 0 ? teller_store_source_of_rank(D->st, rank) : -1;
    if (!D->apart || q < 0)
        return INFINITY;
    int64_t dur = 0, others = s->usual_ns > 0 ? s->usual_ns : 0;
    for (size_t i = 0; i < D->nsrc; i++) {
        int64_t w = D->src_dur[(size_t)k * D->nsrc + i], *at = D->pipe[i] == D->pipe[q] ? &dur : &others;
        if (w > *at)
            *at = w;
    }
    return dur > others ? (double)(dur - others) : 0;
}

/* What finding c cost step k (s): its excess, at most what its replica
 * ran past the other replicas (replica_cost). */
static double capped_cost(const dctx *D, const cand *c, const teller_diag_step *s, uint32_t k)
{
    double most = replica_cost(D, s, c->rank, k);
    return c->excess < most ? c->excess : most;
}

/* Whether step k (s, with a yardstick) lost a material share over its
 * usual and at least half of what finding c cost (capped_cost) reached
 * the step's end, that cost material too. */
static int reached_end(const dctx *D, const cand *c, const teller_diag_step *s, uint32_t k)
{
    double cost = capped_cost(D, c, s, k);
    return s->usual_ns > 0 && teller_fault_material(c->det, s->excess_ns, s->usual_ns) &&
           2.0 * (double)s->excess_ns >= cost && teller_fault_material(c->det, (long long)cost, s->usual_ns);
}

/* In step k (s) without a yardstick: whether what finding c cost
 * (capped_cost) was a material share of the rest of the step. */
static int beyond_rest(const dctx *D, const cand *c, const teller_diag_step *s, uint32_t k)
{
    double cost = capped_cost(D, c, s, k);
    return cost < (double)s->dur_ns && teller_fault_material(c->det, (long long)cost, s->dur_ns - (long long)cost);
}

/* Whether finding c states a fact that needs no yardstick: a collective
 * that never ended, a preemption the logs state, an OOM or a swap with its
 * log line; in a step without a yardstick a blocking wait the trace shows
 * (a synchronize that held the host long after the GPU's work); a
 * transfer whose fastest member took far over the usual for its op and
 * size (comm.c judge_transfer: the whole run's transfers are its measure,
 * not the steps of its kind) in a step without a yardstick or one whose
 * cost reached the step's end (reached_end); and, whose cost reached the
 * step's end or in a step without a yardstick was a material share of the
 * rest of the step (beyond_rest), a GPU slower than its tensor-parallel
 * peers at the same work in the same step (kernels.c whole_gpu: a
 * throttle on one of many pipeline stages costs the step less than steps
 * of its kind vary, but its peers measure it within the step; one hidden
 * in a replica's or the GPU's slack costs nothing) and kernel launches
 * slow as a whole in the step against the run's median call of their API
 * (apis.c: what the step would have saved without the host's lost time),
 * or in a run of fewer than three steps against a launch's prior, whose
 * steps' yardstick is the other step: judged as without one; and in a
 * step without a yardstick, host gaps against the rank's usual gaps
 * (gaps.c: what the GPU idled in them) or a kernel against its peers, its
 * launch configuration's usual calls or its op's shapes (kernels.c,
 * roofline.c) that cost a material share of the rest of the step. Step k
 * is s. */
static int fact_based(const dctx *D, const cand *c, const teller_diag_step *s, uint32_t k)
{
    switch (c->det) {
    case TELLER_FAULT_NCCL_HANG:
        return 1;
    case TELLER_FAULT_PREEMPTION: /* a log line's; one inferred against a reference is judged like any */
        return !c->reference;
    case TELLER_FAULT_OOM:
    case TELLER_FAULT_KV_SWAP:
        return s->pred.nev > 0;
    case TELLER_FAULT_SYNC_STALL:
        return s->usual_ns < 0;
    case TELLER_FAULT_SLOW_LINK:
    case TELLER_FAULT_PP_SEND_DELAY:
        return !c->reference && (s->usual_ns < 0 || reached_end(D, c, s, k));
    case TELLER_FAULT_CPU_CONTENTION:
    case TELLER_FAULT_KERNEL_REGRESSION:
        return !c->reference && s->usual_ns < 0 && beyond_rest(D, c, s, k);
    case TELLER_FAULT_LAUNCH_LATENCY:
        if (c->reference)
            return 0;
        /* a run of fewer than three steps has no usual of its own, for its
         * launches (the prior) nor its steps (the other step) */
        return s->usual_ns > 0 && !diag_launch_prior(D, c->name) ? reached_end(D, c, s, k) : beyond_rest(D, c, s, k);
    case TELLER_FAULT_GPU_THROTTLE:
        if (!(c->over_peers > 0) || c->reference)
            return 0;
        return s->usual_ns > 0 ? reached_end(D, c, s, k) : beyond_rest(D, c, s, k);
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
static int yardsticks(const dctx *D, diag_state *S, double threshold, double spreads)
{
    uint8_t *flagged = calloc(D->nsteps + 1, 1);
    if (!flagged)
        return -1;
    for (uint32_t k = 0; k < D->nsteps; k++) {
        const step_acc *sa = &S->steps[k];
        for (size_t a = 0; a < sa->n && !flagged[k]; a++)
            flagged[k] = sa->c[a].det != TELLER_FAULT_NONE &&
                         cand_score(&sa->c[a], (double)S->out->steps[k].dur_ns, S->out->steps[k].pred.nev > 0) >= threshold;
    }
    int rc = diag_yardsticks(D, S, flagged, spreads);
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
static void cand_features(const dctx *D, const diag_state *S, const teller_diag_step *s, uint32_t k, const cand *c, size_t a, size_t n,
                          int32_t src, int32_t node, double ranks, double nodes, double med_step, float *f)
{
    double dur = (double)s->dur_ns;
    double cell_last = 0, cell_wait = 0;
    if (src >= 0) {
        cell_last = S->late_last[(size_t)k * D->nsrc + (size_t)src];
        cell_wait = S->late_wait[(size_t)k * D->nsrc + (size_t)src];
    }
    int32_t peer_node = c->peer >= 0 ? diag_node_of_rank(D->st, c->peer) : -1;
    f[TELLER_CF_EXCESS_SHARE] = clampf(dur > 0 ? c->excess / dur : 0, 0, 1);
    f[TELLER_CF_LOG2_SIG] = clampf(c->ratio > 1 ? log2(c->ratio) : 0, 0, 16);
    f[TELLER_CF_LOG2_ACTUAL] = clampf(log2((nonneg(c->actual) + 1000) / (nonneg(c->usual) + 1000)), -16, 16);
    f[TELLER_CF_LOG10_EXCESS_US] = clampf(log10(1 + nonneg(c->excess) / 1000), 0, 16);
    f[TELLER_CF_SCORE] = clampf(c->score, 0, 1);
    f[TELLER_CF_ORDER] = n ? (float)a / (float)n : 0;
    f[TELLER_CF_RANK] = c->rank >= 0 && ranks > 0 ? (float)(c->rank / ranks) : 0;
    f[TELLER_CF_NODE] = node >= 0 && nodes > 0 ? (float)(node / nodes) : 0;
    f[TELLER_CF_CROSS_NODE] = peer_node >= 0 && node >= 0 && peer_node != node;
    f[TELLER_CF_LATE_SHARE] = S->late_insts[k] ? clampf(cell_last / S->late_insts[k], 0, 1) : 0;
    f[TELLER_CF_WAIT_SHARE] = clampf(dur > 0 ? cell_wait / dur : 0, 0, 1);
    f[TELLER_CF_HAS_LOG] = s->pred.nev > 0;
    f[TELLER_CF_STEP_LOG2_REL] = clampf(med_step > 0 && dur > 0 ? log2(dur / med_step) : 0, -16, 16);
    f[TELLER_CF_LOG2_FED] = (float)log2(1.0 + cand_count(c));
    f[TELLER_CF_NOT_LOADED] = src < 0;
}

/* ---- running the table ---- */

/* One task of a row of rounds 1 to 3: the row, its task (the source of a
 * per-source row, 0 of a per-run one), what it found and how it ended. */
typedef struct task {
    const diag_detector *row;
    size_t i;
    finds  f;
    int    rc;
} task;

typedef struct round_run {
    const dctx *D;
    diag_state *S;
    task       *t;
    size_t     *which; /* the tasks of the round being run */
} round_run;

static void run_task(void *ctx, size_t i)
{
    round_run *R = ctx;
    task *t = &R->t[R->which[i]];
    t->rc = t->row->run(R->D, R->S, t->i, &t->f);
}

/* The tasks of a row: one per source, else one. */
static size_t row_tasks(const dctx *D, const diag_detector *row)
{
    return row->run ? row->scope == DIAG_PER_SOURCE ? D->nsrc : 1 : 0;
}

/* Rounds 1 to 3 on D->jobs threads, each round's rows prepared first; then
 * every task's findings join the steps in table order (a row's tasks in
 * order), whatever thread ran it. 0; -1 out of memory; 1 a row's failure
 * (S->status). */
static int run_rounds(const dctx *D, diag_state *S)
{
    size_t nt = 0;
    for (size_t r = 0; r < diag_table_size; r++)
        nt += diag_table[r]->round <= 3 ? row_tasks(D, diag_table[r]) : 0;
    task *t = calloc(nt + 1, sizeof *t);
    size_t *which = malloc((nt + 1) * sizeof *which);
    int rc = t && which ? 0 : -1;
    nt = 0;
    for (size_t r = 0; r < diag_table_size && !rc; r++)
        for (size_t i = 0; diag_table[r]->round <= 3 && i < row_tasks(D, diag_table[r]); i++)
            t[nt++] = (task){.row = diag_table[r], .i = i};
    round_run R = {.D = D, .S = S, .t = t, .which = which};
    for (int round = 1; round <= 3 && !rc; round++) {
        size_t n = 0;
        for (size_t r = 0; r < diag_table_size && !rc; r++)
            if (diag_table[r]->round == round && diag_table[r]->prepare)
                rc = diag_table[r]->prepare(D, S);
        for (size_t q = 0; q < nt; q++)
            if (t[q].row->round == round)
                which[n++] = q;
        if (!rc)
            teller_parallel_for(D->jobs, n, run_task, &R);
        for (size_t q = 0; q < n && !rc; q++)
            rc = t[which[q]].rc;
    }
    for (size_t q = 0; q < nt && !rc; q++)
        rc = steps_add_found(S->steps, D->nsteps, &t[q].f);
    for (size_t q = 0; t && q < nt; q++)
        free(t[q].f.v);
    free(t);
    free(which);
    return rc;
}

/* The table: rounds 1 to 3, every row's merge on every step and its
 * merged hook, then round 4 (detector.h). 0; -1 out of memory; 1 a row's
 * failure (S->status). */
static int run_table(const dctx *D, diag_state *S)
{
    int rc = run_rounds(D, S);
    for (uint32_t k = 0; k < D->nsteps && !rc; k++)
        for (size_t r = 0; r < diag_table_size && !rc; r++)
            if (diag_table[r]->merge)
                rc = diag_table[r]->merge(D, S, k);
    for (size_t r = 0; r < diag_table_size && !rc; r++)
        if (diag_table[r]->merged)
            rc = diag_table[r]->merged(D, S);
    for (size_t r = 0; r < diag_table_size && !rc; r++) {
        const diag_detector *row = diag_table[r];
        if (row->round != 4)
            continue;
        if (row->prepare)
            rc = row->prepare(D, S);
        for (size_t i = 0; i < row_tasks(D, row) && !rc; i++) {
            finds f = {0};
            rc = row->run(D, S, i, &f);
            if (!rc)
                rc = steps_add_found(S->steps, D->nsteps, &f);
            free(f.v);
        }
    }
    return rc;
}

/* Round 5 for step k, before it is judged: each row's findings of it. */
static int run_step_rows(const dctx *D, diag_state *S, uint32_t k)
{
    int rc = 0;
    for (size_t r = 0; r < diag_table_size && !rc; r++) {
        if (diag_table[r]->round != 5 || !diag_table[r]->run)
            continue;
        finds f = {0};
        rc = diag_table[r]->run(D, S, k, &f);
        if (!rc)
            rc = steps_add_found(S->steps, D->nsteps, &f);
        free(f.v);
    }
    return rc;
}

static void step_judged(const dctx *D, diag_state *S, uint32_t k, const cand *top, int abnormal)
{
    for (size_t r = 0; r < diag_table_size; r++)
        if (diag_table[r]->round == 5 && diag_table[r]->judged)
            diag_table[r]->judged(D, S, k, top, abnormal);
}

/* ---- the context ---- */

/* Each step's start and duration (d->steps[].start_ns, dur_ns, dur_rank)
 * and its duration on each source (D->src_dur):
 * a step's duration on a rank is the time it added to the rank's run,
 * from its window's start (its annotation's), or the end of the rank's
 * window of the step before when that is later (a host that runs ahead
 * queues the step's work behind the last step's), to its window's end
 * (its last GPU work's); the step's duration is its longest rank's.
 * 0, or -1 out of memory. */
static int step_windows(dctx *D, teller_diagnosis *d)
{
    const teller_store *st = D->st;
    const teller_step *steps = teller_store_steps(st);
    int64_t *prev_end = malloc((teller_store_num_sources(st) + 1) * sizeof *prev_end);
    D->src_dur = calloc((size_t)D->nsteps * D->nsrc + 1, sizeof *D->src_dur);
    if (!prev_end || !D->src_dur) {
        free(prev_end);
        return -1;
    }
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
        if (src >= 0 && steps[i].step < D->nsteps)
            D->src_dur[(size_t)steps[i].step * D->nsrc + (size_t)src] = w;
        if (w > s->dur_ns || (w == s->dur_ns && steps[i].rank < s->dur_rank)) {
            s->dur_ns = w;
            s->dur_rank = steps[i].rank;
        }
        if (steps[i].start_ns < s->start_ns)
            s->start_ns = steps[i].start_ns;
    }
    free(prev_end);
    for (uint32_t k = 0; k < d->n; k++)
        if (d->steps[k].dur_ns < 0)
            d->steps[k].dur_ns = 0;
    return 0;
}

/* The diagnosis with its steps blank. NULL out of memory. */
static teller_diagnosis *diagnosis_new(uint32_t nsteps)
{
    teller_diagnosis *d = calloc(1, sizeof *d);
    if (!d || !(d->steps = calloc(nsteps ? nsteps : 1, sizeof *d->steps))) {
        free(d);
        return NULL;
    }
    d->n = nsteps;
    for (uint32_t k = 0; k < nsteps; k++) {
        d->steps[k].pred.step = k;
        d->steps[k].root_rank = -1;
        d->steps[k].root_node = -1;
        d->steps[k].culprit_event = TELLER_NONE;
        d->steps[k].start_ns = INT64_MAX;
        d->steps[k].dur_ns = -1;
        d->steps[k].dur_rank = -1;
    }
    return d;
}

typedef struct cells_run {
    dctx *D;
    int  *failed; /* per source: out of memory */
} cells_run;

static void cells_task(void *ctx, size_t s)
{
    cells_run *R = ctx;
    R->failed[s] = teller_step_cells(R->D->st, (uint32_t)s, R->D->nsteps, R->D->cell);
}

/* The context's view of the steps and sources: each step's start (and the
 * traced span) and work, each source's events, each (step, source)'s step
 * annotation and cell (found per source on D->jobs threads). 0; -1 out of
 * memory; 1 when the events are not grouped by source. */
static int ctx_steps(dctx *D, const teller_diagnosis *d)
{
    const teller_store *st = D->st;
    const teller_step *steps = teller_store_steps(st);
    D->step_start = calloc((size_t)D->nsteps + 1, sizeof *D->step_start);
    D->step_work = calloc((size_t)D->nsteps + 1, sizeof *D->step_work);
    D->cell = malloc(((size_t)D->nsteps * D->nsrc + 1) * sizeof *D->cell);
    D->range = calloc(D->nsrc + 1, sizeof *D->range);
    D->mrow = malloc(((size_t)D->nsteps * D->nsrc + 1) * sizeof *D->mrow);
    if (!D->step_start || !D->step_work || !D->cell || !D->range || !D->mrow)
        return -1;
    D->t_first = INFINITY;
    D->t_last = -INFINITY;
    for (uint32_t k = 0; k < D->nsteps; k++) {
        D->step_start[k] = (double)d->steps[k].start_ns;
        if (D->step_start[k] < D->t_first)
            D->t_first = D->step_start[k];
        if (D->step_start[k] + (double)d->steps[k].dur_ns > D->t_last)
            D->t_last = D->step_start[k] + (double)d->steps[k].dur_ns;
    }
    /* the tree build grouped the events by source, in source order */
    int grouped = 1;
    for (size_t s = 0; s < D->nsrc && grouped; s++) {
        const teller_source *so = teller_store_source_c(st, (uint32_t)s);
        grouped = so->first_event == D->range[s] && so->num_events <= D->ev->n - D->range[s];
        D->range[s + 1] = D->range[s] + so->num_events;
    }
    if (!grouped || D->range[D->nsrc] != D->ev->n)
        return 1;
    for (size_t c = 0; c < (size_t)D->nsteps * D->nsrc; c++)
        D->mrow[c] = TELLER_NONE;
    for (size_t i = 0; i < teller_store_num_steps(st); i++) {
        uint32_t mk = steps[i].marker;
        if (mk != TELLER_NONE && steps[i].step < D->nsteps)
            D->mrow[(size_t)steps[i].step * D->nsrc + teller_tree_event_source(st, mk)] = (uint32_t)i;
    }
    int *failed = calloc(D->nsrc + 1, sizeof *failed), bad = !failed;
    if (failed)
        teller_parallel_for(D->jobs, D->nsrc, cells_task, &(cells_run){D, failed});
    for (size_t q = 0; q < D->nsrc && !bad; q++)
        bad = failed[q];
    free(failed);
    if (bad)
        return -1;
    /* a step's work: the lowest rank's compute kernel time */
    int32_t low = INT32_MAX;
    for (size_t q = 0; q < D->nsrc; q++)
        if (teller_store_source_c(st, (uint32_t)q)->rank < low)
            low = teller_store_source_c(st, (uint32_t)q)->rank;
    for (uint32_t k = 0; k < D->nsteps; k++)
        for (size_t q = 0; q < D->nsrc; q++)
            if (teller_store_source_c(st, (uint32_t)q)->rank == low)
                D->step_work[k] += (double)D->cell[(size_t)k * D->nsrc + q].kernel_ns;
    return 0;
}

static void ctx_free(dctx *D, diag_state *S)
{
    for (size_t r = 0; r < diag_table_size; r++)
        if (diag_table[r]->release)
            diag_table[r]->release(D, S);
    if (S->steps)
        for (uint32_t k = 0; k < D->nsteps; k++)
            free(S->steps[k].c);
    free(S->steps);
    diag_busy_free(&S->any);
    teller_req_abort(S->req);
    free(D->step_start);
    free(D->step_work);
    free(D->cell);
    free(D->src_dur);
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
}

/* A note on the steps without a yardstick: the only step of their kind,
 * or none of their kind near their work. */
static void yardless_note(diag_state *S)
{
    const teller_diagnosis *d = S->out;
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
    char note[512];
    if (n == 1)
        snprintf(note, sizeof note, "step %u has no yardstick (no other step of its kind and work)", first + d->step_base);
    else
        snprintf(note, sizeof note, "%zu steps (the first, step %u) have no yardstick (no other step of their kind and work)",
                 n, first + d->step_base);
    size_t w = strlen(note);
    snprintf(note + w, sizeof note - w,
             ": only what needs none can flag %s (a hang, an OOM, log lines, a blocking wait; a slow transfer, a GPU "
             "slower than its peers, a slow kernel, slowed launches or host stalls that cost a material share of the "
             "step)%s",
             n == 1 ? "it" : "them", found ? "; the other findings there are listed as candidates, not alarms" : "");
    diag_add_note(S, note);
}

/* ---- judging the steps ---- */

/* What judging needs besides the context and the state. */
typedef struct judging {
    const teller_diag_opts *o;
    double threshold, spreads;
    teller_model_tracer *tracer; /* the model's view of the run's traces (model.h); NULL without a model */
    double med_step, ranks, nodes; /* the run's usual step; ranks and nodes counted from 0 */
    size_t cands_cap;            /* of out->cands */
    size_t model_blank;          /* steps the model gave no number for */
} judging;

/* Scores step k's findings (its carried one added first) and ranks them,
 * best first; a fault of the step's own that flags it is its root, before
 * a carried one however much that cost. 0, or -1 out of memory. */
static int rank_findings(const dctx *D, diag_state *S, const judging *J, uint32_t k)
{
    step_acc *sa = &S->steps[k];
    const teller_diag_step *s = &S->out->steps[k];
    size_t w = 0;
    for (size_t a = 0; a < sa->n; a++)
        if (sa->c[a].det != TELLER_FAULT_NONE)
            sa->c[w++] = sa->c[a];
    sa->n = w;
    if (run_step_rows(D, S, k))
        return -1;
    /* a finding's cost against what the step usually takes (a last step
     * that also holds the profiler's stop is longer than a fault makes
     * it), else against the step */
    double base = s->usual_ns > 0 ? (double)s->usual_ns : (double)s->dur_ns;
    for (size_t a = 0; a < sa->n; a++) {
        cand c = sa->c[a];
        c.excess = capped_cost(D, &c, s, k);
        sa->c[a].score = cand_score(&c, base, s->pred.nev > 0);
    }
    teller_sort(sa->c, sa->n, sizeof *sa->c, cand_cmp);
    for (size_t a = 1; sa->n && sa->c[0].carried && sa->c[0].score >= J->threshold && a < sa->n; a++)
        if (sa->c[a].score >= J->threshold) {
            cand own = sa->c[a];
            memmove(sa->c + 1, sa->c, a * sizeof *sa->c);
            sa->c[0] = own;
            break;
        }
    return 0;
}

/* Step k's candidates: one per (rank, operator), best first, into
 * out->cands with their features; idx: each one's finding in the step's
 * list. 0, or -1 out of memory. */
static int list_cands(const dctx *D, diag_state *S, judging *J, uint32_t k, size_t *idx)
{
    teller_diagnosis *d = S->out;
    teller_diag_step *s = &d->steps[k];
    const step_acc *sa = &S->steps[k];
    s->first_cand = (uint32_t)d->ncands;
    s->peer_colls = S->late_insts[k];
    for (size_t a = 0; a < sa->n && s->ncands < TELLER_DIAG_MAX_CANDS; a++) {
        const cand *c = &sa->c[a];
        int dup = 0;
        for (uint32_t q = s->first_cand; q < s->first_cand + s->ncands; q++)
            dup |= d->cands[q].rank == c->rank && d->cands[q].name == c->name;
        if (dup)
            continue;
        if (TELLER_GROW(d->cands, J->cands_cap, d->ncands + 1))
            return -1;
        teller_diag_cand *dc = &d->cands[d->ncands++];
        int32_t src = teller_store_source_of_rank(D->st, c->rank);
        dc->det = c->det;
        dc->rank = c->rank;
        dc->node = rank_node(D->st, c);
        dc->name = c->name;
        dc->layer = c->layer;
        dc->event = c->event;
        dc->excess_ns = c->excess;
        dc->actual_ns = c->actual;
        dc->usual_ns = c->usual;
        dc->score = c->score;
        cand_features(D, S, s, k, c, a, sa->n, src, dc->node, J->ranks, J->nodes, J->med_step, dc->feat);
        idx[s->ncands++] = a;
    }
    s->pred.score = s->ncands ? d->cands[s->first_cand].score : 0;
    return 0;
}

/* The model judges whether step k is abnormal, and puts its root first
 * (the numeric stage's first unless it is sure of another); the rest keep
 * the numeric stage's order. 0, or -1 out of memory. */
static int model_judge(const dctx *D, diag_state *S, judging *J, uint32_t k, size_t *idx, teller_error *err)
{
    teller_diagnosis *d = S->out;
    teller_diag_step *s = &d->steps[k];
    teller_diag_cand *sc = d->cands + s->first_cand;
    teller_model_sample smp;
    teller_model_out mo;
    if (teller_model_step(J->tracer, d, k, &smp, &mo, err) != TELLER_OK)
        return -1;
    if (!teller_model_out_valid(&mo, s->ncands)) {
        J->model_blank++; /* a model whose sums overflow (a damaged file): no opinion */
        return 0;
    }
    double share = sc[0].feat[TELLER_CF_EXCESS_SHARE]; /* the numeric stage's first, before the move */
    uint32_t r = teller_model_root(&smp, &mo, J->o->model_alone ? 0 : TELLER_MODEL_ROOT_CONFIDENCE, share);
    teller_diag_cand tc = sc[r];
    size_t ti = idx[r];
    for (; r > 0; r--)
        sc[r] = sc[r - 1], idx[r] = idx[r - 1];
    sc[0] = tc, idx[0] = ti;
    /* the model weighs what the numbers only suggest; a fact the trace
     * or the logs state stands */
    s->pred.score = J->o->model_alone
                        ? mo.p_abnormal
                        : teller_model_step_score(&mo, s->pred.score, share, teller_model_veto_share(J->o->model),
                                                  J->threshold, fact_based(D, &S->steps[k].c[ti], s, k));
    return 0;
}

/* Step k's verdict, root and explanation, its candidates ranked (idx:
 * each one's finding): the step is the unit of alarm, so a finding flags
 * it only when the step took longer than its kind usually does, beyond
 * the kind's spread, unless what it found is a fact (a hang, a log line;
 * a blocking wait the trace shows, in a step without a yardstick). */
static void verdict(const dctx *D, diag_state *S, const judging *J, uint32_t k, const size_t *idx)
{
    teller_diagnosis *d = S->out;
    teller_diag_step *s = &d->steps[k];
    const teller_diag_cand *sc = d->cands ? d->cands + s->first_cand : NULL; /* NULL: no step has candidates */
    const step_acc *sa = &S->steps[k];
    s->slowness = diag_slowness(s, J->spreads);
    s->slow = s->slowness >= 0.5;
    s->fact = s->ncands && fact_based(D, &sa->c[idx[0]], s, k);
    if (!s->fact && s->pred.score > s->slowness)
        s->pred.score = s->slowness;
    s->pred.abnormal = s->pred.score >= J->threshold;
    for (uint32_t q = 0; q < s->ncands && s->pred.ncand < TELLER_MAX_CANDIDATES; q++) {
        teller_candidate *tc = &s->pred.cand[s->pred.ncand++];
        tc->rank = sc[q].rank;
        snprintf(tc->op, sizeof tc->op, "%s", teller_store_str(D->st, sc[q].name));
        snprintf(tc->layer, sizeof tc->layer, "%s", teller_layer_tag((teller_layer)sc[q].layer));
        tc->score = sc[q].score;
    }
    if (!s->ncands) {
        if (s->slow)
            diag_explain_slow(D, S, s);
        return;
    }
    const cand *top = &sa->c[idx[0]];
    step_judged(D, S, k, top, s->pred.abnormal);
    s->root_rank = top->rank;
    s->culprit_event = top->event;
    s->culprit_ns = (int64_t)top->actual;
    s->culprit_base_ns = (int64_t)top->usual;
    s->root_node = rank_node(D->st, top);
    double ex = top->excess < (double)s->dur_ns ? top->excess : (double)s->dur_ns;
    if (s->usual_ns >= 0 && ex > (double)s->excess_ns)
        ex = (double)s->excess_ns;
    s->explained_ns = ex > 0 ? (int64_t)ex : 0;
    if (s->pred.abnormal) {
        snprintf(s->fault, sizeof s->fault, "%s", teller_fault_name(top->det));
        snprintf(s->pred.fault_type, sizeof s->pred.fault_type, "%s", teller_fault_type(top->det));
        snprintf(s->pred.view, sizeof s->pred.view, "%s", teller_fault_view(top->det));
        diag_explain(D, S, s, top);
    } else if (s->slow) {
        diag_explain_slow(D, S, s);
    }
}

/* The run's usual step and how many ranks and nodes it has, for the
 * candidates' features. 0, or -1 out of memory. */
static int run_shape(const dctx *D, diag_state *S, judging *J)
{
    teller_diagnosis *d = S->out;
    double *durs = malloc((D->nsteps ? D->nsteps : 1) * sizeof *durs);
    if (!durs)
        return -1;
    for (uint32_t k = 0; k < D->nsteps; k++)
        durs[k] = (double)d->steps[k].dur_ns;
    J->med_step = diag_median(durs, D->nsteps);
    free(durs);
    d->usual_step_ns = (int64_t)J->med_step;
    for (size_t q = 0; q < D->nsrc; q++) {
        const teller_source *so = teller_store_source_c(D->st, (uint32_t)q);
        if (so->rank + 1 > J->ranks)
            J->ranks = so->rank + 1;
        if (so->node + 1 > J->nodes)
            J->nodes = so->node + 1;
    }
    return 0;
}

/* Judges every step in order (a step's carried finding needs the step
 * before judged). 0, or -1 out of memory. */
static int judge_steps(const dctx *D, diag_state *S, judging *J, teller_error *err)
{
    S->out->model = J->o->model != NULL;
    if (J->o->model) {
        _Static_assert(sizeof S->out->model_recipe == TELLER_MODEL_RECIPE_MAX, "a model's recipe fits");
        S->out->model_id = teller_model_id(J->o->model);
        snprintf(S->out->model_recipe, sizeof S->out->model_recipe, "%s", teller_model_recipe(J->o->model));
    }
    if (run_shape(D, S, J))
        return -1;
    if (J->o->model && teller_model_tracer_create(J->o->model, NULL, D->st, &J->tracer, err) != TELLER_OK)
        return -1; /* the model's own vocabulary: only memory can fail */
    for (uint32_t k = 0; k < D->nsteps; k++) {
        size_t idx[TELLER_DIAG_MAX_CANDS];
        if (rank_findings(D, S, J, k) || list_cands(D, S, J, k, idx) ||
            (J->o->model && S->out->steps[k].ncands && model_judge(D, S, J, k, idx, err)))
            return -1;
        verdict(D, S, J, k, idx);
    }
    yardless_note(S);
    if (J->model_blank) {
        char note[200];
        snprintf(note, sizeof note, "the model gave no number for %zu step%s (its sums overflow: a damaged model file?): "
                 "the numeric stage judged %s", J->model_blank, J->model_blank == 1 ? "" : "s",
                 J->model_blank == 1 ? "it" : "them");
        diag_add_note(S, note);
    }
    return S->nomem ? -1 : 0;
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

/* Diagnoses st into *out; with keep, also what it says is usual, as a
 * reference for other runs (reference.c). */
static teller_status diagnose(teller_store *st, const teller_diag_opts *o, teller_diagnosis **out,
                              teller_diag_reference **keep, teller_error *err)
{
    teller_diag_opts def = teller_diag_defaults();
    judging J = {.o = o, .threshold = o->threshold > 0 ? o->threshold : def.threshold,
                 .spreads = o->spreads >= 0 ? o->spreads : TELLER_DIAG_SPREADS};
    dctx D = {.st = st, .ev = teller_store_events(st), .opts = o, .nsteps = teller_store_step_count(st),
              .nsrc = teller_store_num_sources(st), .jobs = o->jobs > 0 ? o->jobs : teller_num_cores(),
              .member = teller_tree_member_rows(st)};
    diag_state S = {.err = err, .ref_make = keep != NULL};
    teller_diagnosis *d = diagnosis_new(D.nsteps);
    int rc = -1;
    S.out = d;
    if (d)
        d->step_base = o->step_base;
    S.steps = calloc(D.nsteps ? D.nsteps : 1, sizeof *S.steps);
    D.group = calloc(D.nsrc + 1, sizeof *D.group);
    D.pipe = calloc(D.nsrc + 1, sizeof *D.pipe);
    if (!d || !S.steps || !D.group || !D.pipe || step_windows(&D, d))
        goto done;
    if ((rc = ctx_steps(&D, d)) == 1) {
        ctx_free(&D, &S);
        teller_diagnosis_free(d);
        return teller_error_set(err, TELLER_ERR_ARG, "(diagnose)", 0, "events are not grouped by source: build the trees first");
    }
    if (rc || (rc = diag_build_groups(&D)) || (rc = run_table(&D, &S)))
        goto done;
    rc = -1;
    if (diag_subtract_run_normal(&D, S.steps) || yardsticks(&D, &S, J.threshold, J.spreads))
        goto done;
    diag_notes(&D, &S);
    if (judge_steps(&D, &S, &J, err))
        goto done;
    rc = 0;
    if (S.req) { /* the requests, read with the logs, against the steps as judged */
        S.status = teller_req_finish(S.req, d, &d->requests, err);
        S.req = NULL;
        rc = S.status != TELLER_OK;
    }
    if (!rc && keep)
        rc = diag_reference_keep(&D, &S, keep);
done:
    teller_model_tracer_free(J.tracer);
    ctx_free(&D, &S);
    if (rc) {
        teller_diagnosis_free(d);
        return rc > 0 ? S.status : teller_error_set(err, TELLER_ERR_NOMEM, "(diagnose)", 0, "out of memory");
    }
    /* the steps by their number in the run, once nothing indexes by it */
    for (size_t k = 0; k < d->n; k++)
        d->steps[k].pred.step += o->step_base;
    *out = d;
    return TELLER_OK;
}

teller_status teller_diagnose(teller_store *st, const teller_diag_opts *opts, teller_diagnosis **out, teller_error *err)
{
    teller_diag_opts def = teller_diag_defaults();
    return diagnose(st, opts ? opts : &def, out, NULL, err);
}

teller_status teller_diag_reference_make(teller_store *ref, const teller_diag_opts *opts, teller_diag_reference **out,
                                         teller_error *err)
{
    teller_diag_opts o = opts ? *opts : teller_diag_defaults();
    o.reference = NULL;
    teller_diagnosis *d = NULL;
    teller_status rc = diagnose(ref, &o, &d, out, err);
    teller_diagnosis_free(d);
    return rc;
}
