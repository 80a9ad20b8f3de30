/*
 * log_findings.c - service logs as evidence (row logs): every log of the
 * options read and aligned to the steps; preemption lines placed on a
 * step, OOM and watchdog lines and other errors attached to theirs.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "detector.h"
#include "teller/logs.h"
#include "teller/requests.h"
#include "teller/tree.h"

/* A line of the log placed on a step by what the trace shows (an OOM
 * retry's frees, a swap's copies, SGLang's prefill lines counted against
 * the steps that prefill): the lines before it in the file were written
 * before it. */
typedef struct anchor {
    uint64_t line;
    uint32_t step;
} anchor;

/* What the requests' replay says of a step's batch (batch_kinds). */
enum { STEP_RECOMP = 1, STEP_DECODES = 2 };

/* A whole-second preemption line, placed once the whole log is read. */
typedef struct deferred {
    uint64_t        line;
    int64_t         t;
    uint32_t        step;    /* where it goes, TELLER_NONE when nowhere */
    int             may_swap; /* the line does not say whether it swapped or recomputes (SGLang's retract) */
    teller_evidence ev;      /* the line, as its step's evidence */
} deferred;

/* A NCCL watchdog timeout placed on a step: the rank whose line it is,
 * how long its collective had run ("ran for", -1 when the line does not
 * say), when the collective began (node 0's clock) and its kind's name in
 * NCCL's kernels ("AllReduce" for OpType=ALLREDUCE, "" unknown). */
typedef struct waited {
    uint32_t step;
    int32_t  rank, src; /* src: the rank's source, -1 when its trace is not loaded */
    int64_t  seq; /* the work's SeqNum, -1 when the line has none */
    double   ran, at;
    char     op[16];
    char     optype[32]; /* the line's OpType as written ("" none): the name when no kernel of its kind is traced */
} waited;
typedef struct waits_seen {
    waited *v;
    size_t  n, cap;
} waits_seen;

typedef struct logctx {
    const dctx *D;
    diag_state *S;
    finds      *out; /* the preemptions and hangs the lines state */
    waits_seen *W; /* every log's watchdog timeouts, for the hangs only they show */
    teller_req_builder *req; /* fed every record too, unless it has them already */
    int32_t     node;
    const char *path;
    int         aligned, total; /* records placed in time or by sequence: within the traced time, and all */
    anchor     *anc;
    size_t      nanc, canc;
    deferred   *def;
    size_t      ndef, cdef;
    uint64_t   *pre;  /* SGLang's "Prefill batch." lines whose second the trace spans */
    size_t      npre, cpre;
} logctx;

/* The first pat in m[0..n), NULL when none. */
static const char *sub_at(const char *m, size_t n, const char *pat)
{
    size_t l = strlen(pat);
    for (size_t j = 0; j + l <= n; j++)
        if (!memcmp(m + j, pat, l))
            return m + j;
    return NULL;
}

static int has_sub(const char *m, size_t n, const char *pat) { return sub_at(m, n, pat) != NULL; }

static int is_preempt_line(const char *m, size_t n)
{
    static const char *const pats[] = {"is preempted by PreemptionMode", "Retract requests", "retracted"};
    for (size_t i = 0; i < 3; i++)
        if (has_sub(m, n, pats[i]))
            return 1;
    return 0;
}

/* A watchdog line's "OpType=" (ALLREDUCE, _REDUCE_SCATTER_BASE, ...) into
 * w->optype, and the word NCCL's kernels of that kind hold into w->op (""
 * when it names none of these). */
static void op_kind(const char *m, size_t n, waited *w)
{
    char *out = w->op;
    size_t cap = sizeof w->op;
    /* NCCL's kernels: ncclDevKernel_AllReduce_..., _Reduce_..., _SendRecv
     * (which all-to-all runs on too) */
    static const char *const K[][2] = {{"ALLREDUCE", "AllReduce"},         {"ALLGATHER", "AllGather"},
                                       {"REDUCE_SCATTER", "ReduceScatter"}, {"ALLTOALL", "SendRecv"},
                                       {"BROADCAST", "Broadcast"},         {"SEND", "SendRecv"},
                                       {"RECV", "SendRecv"},               {"REDUCE", "_Reduce_"}};
    out[0] = 0;
    const char *p = sub_at(m, n, "OpType=");
    if (!p)
        return;
    size_t a = (size_t)(p - m) + 7, b = a;
    while (b < n && ((m[b] >= 'A' && m[b] <= 'Z') || m[b] == '_'))
        b++;
    snprintf(w->optype, sizeof w->optype, "%.*s", (int)(b - a), m + a);
    for (size_t k = 0; k < sizeof K / sizeof *K; k++) {
        size_t l = strlen(K[k][0]);
        for (size_t i = a; i + l <= b; i++)
            if (!memcmp(m + i, K[k][0], l)) {
                snprintf(out, cap, "%s", K[k][1]);
                return;
            }
    }
}

/* The record as evidence: the first line of its message, where it was. */
static void log_evidence(teller_evidence *e, const logctx *L, const teller_log_record *rec, int32_t rank, int64_t t)
{
    snprintf(e->kind, sizeof e->kind, "log");
    e->node = L->node;
    e->rank = rank;
    e->line = rec->line;
    e->time_ns = t;
    snprintf(e->file, sizeof e->file, "%s", L->path);
    size_t n = rec->msg.n < sizeof e->text - 1 ? rec->msg.n : sizeof e->text - 1;
    /* the first line of a multi-line record */
    const char *nl = memchr(rec->msg.p, '\n', n);
    if (nl)
        n = (size_t)(nl - rec->msg.p);
    memcpy(e->text, rec->msg.p, n);
    e->text[n] = 0;
}

/* The step starts a line at time t may mean: within its second when the
 * time is whole (the aligner puts it at the second's middle), else within
 * 50 ms of it. */
static void line_window(int64_t t, int whole_second, double *lo, double *hi)
{
    double w = whole_second ? 0.55e9 : 50e6;
    *lo = (double)t - w;
    *hi = (double)t + w;
}

/* A preemption line with an exact time (e.g. captured by teller run): the
 * scheduler logs its decision just before the step it shapes starts, so
 * it is the first unclaimed step starting from then. */
static uint32_t step_at(const dctx *D, const diag_state *S, int64_t t)
{
    for (uint32_t k = 0; k < D->nsteps; k++)
        if (!S->steps[k].claimed && D->step_start[k] >= (double)t - 1e6 && D->step_start[k] < (double)t + 50e6)
            return k;
    return TELLER_NONE;
}

/* Whether step k holds a trace finding of kind det. */
static int step_has(const diag_state *S, uint32_t k, teller_fault det)
{
    for (size_t a = 0; a < S->steps[k].n; a++)
        if (S->steps[k].c[a].det == det)
            return 1;
    return 0;
}

/* Preemption lines often have whole-second times (the aligner puts them at
 * the middle of their second): the step a line means is one that did much
 * GPU work (recomputing preempted requests is a large prefill) among the
 * steps starting within that second, not yet claimed by another line. A
 * log is written in time order, so the lines of one file go to steps in
 * their order, and a line lies between the steps of the lines around it
 * that the trace placed (an OOM retry's frees, a swap's copies): the
 * file's whole-second preemption lines are placed together, as many as
 * can be, on the steps in their order that did the most work together.
 * The trace's first step is taken only when no other step is left: a
 * preemption takes back the cache of sequences that were running, and
 * nothing ran before it in the trace; a run profiled from its start opens
 * with its largest prefill, the requests that were waiting, which would
 * otherwise draw a line from the step it means. A step that recomputed
 * (kinds, from the requests' replay: prefill sequences no request accounts
 * for) is taken before any that did more work: a legitimate large prefill
 * of the same second, the requests that arrived, is no recomputation; and
 * a line that may be a swap's goes to a step that shows one first. 0, or
 * -1 out of memory. */
static int place_deferred(logctx *L, const uint8_t *kinds)
{
    const dctx *D = L->D;
    const diag_state *S = L->S;
    size_t nd = L->ndef, K = D->nsteps;
    if (!nd || !K)
        return 0;
    /* f[k + 1]: the best placement of the lines so far whose last placed
     * line is on step k (f[0]: none placed); from[j][k + 1]: where line j's
     * best placement on step k came from (k' + 1, 0 for none), or k + 1
     * with the top bit set when line j is not placed and the line before
     * it ends there. nd * (K + 1) entries: a file's preemption lines times
     * the steps */
    double *f = malloc((K + 1) * sizeof *f), *g = malloc((K + 1) * sizeof *g);
    uint32_t *from = malloc(nd * (K + 1) * sizeof *from);
    int rc = -1;
    if (!f || !g || !from)
        goto done;
    for (size_t k = 0; k <= K; k++)
        f[k] = k ? -INFINITY : 0;
    for (size_t j = 0; j < nd; j++) {
        uint32_t lo = 0, hi = (uint32_t)K - 1;
        for (size_t a = 0; a < L->nanc; a++) {
            if (L->anc[a].line < L->def[j].line && L->anc[a].step > lo)
                lo = L->anc[a].step;
            if (L->anc[a].line > L->def[j].line && L->anc[a].step < hi)
                hi = L->anc[a].step;
        }
        if (lo > hi) { /* the trace placed the lines around it out of order: no bound */
            lo = 0;
            hi = (uint32_t)K - 1;
        }
        double wlo, whi, best = f[0];
        line_window(L->def[j].t, 1, &wlo, &whi);
        uint32_t arg = 0; /* the best f[k' + 1] over k' < k, and its k' + 1 */
        uint32_t *fr = from + j * (K + 1);
        g[0] = f[0];
        fr[0] = 0;
        for (size_t k = 0; k < K; k++) {
            const step_acc *sk = &S->steps[k];
            g[k + 1] = f[k + 1]; /* line j not placed */
            fr[k + 1] = (uint32_t)(k + 1) | 0x80000000u;
            if (!sk->claimed && k >= lo && k <= hi && D->step_start[k] >= wlo && D->step_start[k] < whi && best > -INFINITY) {
                /* a placed line first counts one, then whether its step
                 * shows the swap a line that may be one had (the trace's
                 * copies), then whether it recomputed (no step's work comes
                 * near 1e12 ns), then its step's work */
                double v = best + 1e15 + (L->def[j].may_swap && step_has(S, (uint32_t)k, TELLER_FAULT_KV_SWAP) ? 1e13 : 0) +
                           (kinds[k] & STEP_RECOMP ? 1e12 : 0) + (k == 0 ? -1 : D->step_work[k]);
                if (v > g[k + 1]) {
                    g[k + 1] = v;
                    fr[k + 1] = arg;
                }
            }
            if (f[k + 1] > best) {
                best = f[k + 1];
                arg = (uint32_t)(k + 1);
            }
        }
        memcpy(f, g, (K + 1) * sizeof *f);
    }
    /* the best end, and back through the lines */
    uint32_t at = 0;
    for (size_t k = 1; k <= K; k++)
        if (f[k] > f[at])
            at = (uint32_t)k;
    for (size_t j = nd; j-- > 0;) {
        uint32_t c = from[j * (K + 1) + at];
        if (c & 0x80000000u) { /* not placed: the placement before it ends where it does */
            L->def[j].step = TELLER_NONE;
            continue;
        }
        L->def[j].step = at ? at - 1 : TELLER_NONE;
        at = c;
    }
    rc = 0;
done:
    free(f);
    free(g);
    free(from);
    return rc;
}

/* The unclaimed step near time t (within its second when whole) that
 * already holds a trace finding of kind det. */
static uint32_t step_with(const dctx *D, const diag_state *S, int64_t t, int whole_second, teller_fault det)
{
    double lo, hi;
    line_window(t, whole_second, &lo, &hi);
    for (uint32_t k = 0; k < D->nsteps; k++) {
        double st0 = D->step_start[k];
        if (st0 >= lo && st0 < hi && !S->steps[k].claimed && step_has(S, k, det))
            return k;
    }
    return TELLER_NONE;
}

/* What step k would have taken without recomputing: the shortest of the
 * two steps before it and the two after it that the trace holds (the
 * same running requests, the least new prefill among them); the step's
 * own without any. */
static double around(const dctx *D, const diag_state *S, uint32_t k)
{
    double u = INFINITY;
    for (uint32_t j = k >= 2 ? k - 2 : 0; j <= k + 2 && j < D->nsteps; j++)
        if (j != k && (double)S->out->steps[j].dur_ns < u)
            u = (double)S->out->steps[j].dur_ns;
    return u < INFINITY ? u : (double)S->out->steps[k].dur_ns;
}

/* The step near time t (within its second when whole) whose trace shows
 * a rank emptying its cache (an OOM finding), one not given an OOM line
 * yet first: of the line's rank on the log's node, else of any rank of
 * that node (an engine's "TP1" counts within its pipeline stage, not the
 * run's ranks);
 * TELLER_NONE when none. */
static uint32_t oom_step(const dctx *D, const diag_state *S, int64_t t, int whole_second, int32_t rank, int32_t node)
{
    double lo, hi;
    line_window(t, whole_second, &lo, &hi);
    for (int by_node = 0; by_node < 2; by_node++) {
        uint32_t again = TELLER_NONE;
        for (uint32_t k = 0; k < D->nsteps; k++) {
            double st0 = D->step_start[k];
            if (st0 < lo || st0 >= hi)
                continue;
            for (size_t a = 0; a < S->steps[k].n; a++) {
                const cand *c = &S->steps[k].c[a];
                if (c->det != TELLER_FAULT_OOM || diag_node_of_rank(D->st, c->rank) != node ||
                    (!by_node && c->rank != rank))
                    continue;
                if (!S->steps[k].oom_line)
                    return k;
                if (again == TELLER_NONE)
                    again = k;
            }
        }
        if (again != TELLER_NONE)
            return again;
    }
    return TELLER_NONE;
}

/* Line evidence e on step k, and what it says of the step: a preemption or
 * a swap is the scheduler's decision for the step as a whole, led by its
 * first rank; a preemption costs the step its recomputation. 0, or
 * -TELLER_ERR_NOMEM. */
static int put_line(const dctx *D, diag_state *S, finds *out, uint32_t k, teller_fault det, const teller_evidence *e)
{
    teller_diag_step *ds = &S->out->steps[k];
    if (ds->pred.nev < TELLER_MAX_EVIDENCE)
        ds->pred.ev[ds->pred.nev++] = *e;
    if (det != TELLER_FAULT_PREEMPTION && det != TELLER_FAULT_KV_SWAP)
        return 0;
    const teller_step *s = teller_store_steps(D->st);
    uint32_t marker = TELLER_NONE, name = TELLER_NONE;
    int32_t r0 = INT32_MAX;
    size_t hi, lo = diag_step_rows(D->st, k, &hi);
    for (size_t i = lo; i < hi; i++)
        if (s[i].rank < r0 && s[i].marker != TELLER_NONE) {
            r0 = s[i].rank;
            marker = s[i].marker;
            name = teller_store_step_annotation(D->st, i);
        }
    if (marker != TELLER_NONE && det == TELLER_FAULT_PREEMPTION) {
        /* what the recomputation cost: the step against the steps around
         * it, which served the same requests without it */
        double dur = (double)ds->dur_ns, usual = around(D, S, k);
        cand c = {.det = TELLER_FAULT_PREEMPTION, .rank = r0, .name = name, .layer = TELLER_LAYER_ENGINE,
                  .excess = dur > usual ? dur - usual : 0, .ratio = 10, .actual = dur, .usual = usual, .event = marker,
                  .peer = -1};
        if (finds_add(out, k, &c))
            return -TELLER_ERR_NOMEM;
    }
    return 0;
}

static int on_log(void *ctx, const teller_log_record *rec)
{
    logctx *L = ctx;
    const dctx *D = L->D;
    diag_state *S = L->S;
    int fed = L->req ? teller_req_feed(L->req, rec) : 0;
    if (fed)
        return fed;
    const char *m = rec->msg.p;
    size_t n = rec->msg.n;
    /* SGLang lines carry no level: what matters is what they say */
    int notable = rec->level >= TELLER_LOGL_WARNING || rec->family == TELLER_LOG_TORCH || is_preempt_line(m, n) ||
                  has_sub(m, n, "OutOfMemory") || has_sub(m, n, "out of memory");
    teller_log_align al;
    teller_log_align_record(D->st, L->node, rec, &al);
    if (al.step == TELLER_NONE && al.time_ns == INT64_MIN)
        return 0; /* neither a time nor a collective's sequence: NCCL's INFO lines */
    /* does the record fall within the traced time at all (give or take the
     * second that whole-second times may be off by)? One without a time
     * was placed by its collective's sequence number */
    L->total++;
    if (al.time_ns == INT64_MIN || ((double)al.time_ns >= D->t_first - 2e9 && (double)al.time_ns <= D->t_last + 2e9))
        L->aligned++;
    if (has_sub(m, n, "Prefill batch.") && al.time_ns != INT64_MIN) {
        double lo, hi;
        line_window(al.time_ns, (rec->flags & TELLER_LOGF_NO_SUBSEC) != 0, &lo, &hi);
        if (hi >= D->t_first && lo <= D->t_last) {
            if (TELLER_GROW(L->pre, L->cpre, L->npre + 1))
                return -TELLER_ERR_NOMEM;
            L->pre[L->npre++] = rec->line;
        }
    }
    if (!notable)
        return 0;
    uint32_t step = al.step;
    teller_fault det = TELLER_FAULT_NONE; /* NONE: an error line, evidence for whatever the step holds */
    if (is_preempt_line(m, n)) {
        /* a step whose trace shows swapping owns the line; otherwise the
         * preemption recomputed requests: the biggest step of the second */
        int whole = (rec->flags & TELLER_LOGF_NO_SUBSEC) != 0;
        /* a whole-second line that does not say which it was (SGLang's
         * retract) is placed with the file's others: the first swap of
         * its second may be a later line's */
        int may_swap = !has_sub(m, n, "RECOMPUTE") && !has_sub(m, n, "SWAP");
        step = has_sub(m, n, "RECOMPUTE") || (whole && may_swap) ? TELLER_NONE
                                                                 : step_with(D, S, al.time_ns, whole, TELLER_FAULT_KV_SWAP);
        det = TELLER_FAULT_KV_SWAP;
        if (step == TELLER_NONE && !has_sub(m, n, "SWAP")) {
            det = TELLER_FAULT_PREEMPTION;
            if (!whole) {
                step = step_at(D, S, al.time_ns);
            } else { /* placed with the file's others once it is read (place_deferred) */
                double wlo, whi;
                line_window(al.time_ns, 1, &wlo, &whi);
                if (whi <= D->t_first || wlo > D->t_last)
                    return 0; /* no step starts in its second: it cannot be placed */
                if (TELLER_GROW(L->def, L->cdef, L->ndef + 1))
                    return -TELLER_ERR_NOMEM;
                deferred *dl = &L->def[L->ndef++];
                *dl = (deferred){.line = rec->line, .t = al.time_ns, .step = TELLER_NONE, .may_swap = may_swap};
                log_evidence(&dl->ev, L, rec, al.rank, al.time_ns);
                return 0;
            }
        } else if (step != TELLER_NONE && has_sub(m, n, "SWAP")) {
            /* the trace shows its swap; a line that does not say which it
             * was (SGLang's retract) may have taken another's swap */
            if (TELLER_GROW(L->anc, L->canc, L->nanc + 1))
                return -TELLER_ERR_NOMEM;
            L->anc[L->nanc++] = (anchor){rec->line, step};
        }
        if (step != TELLER_NONE)
            S->steps[step].claimed = 1;
    } else if (has_sub(m, n, "OutOfMemory") || has_sub(m, n, "out of memory")) {
        /* a whole-second line belongs to the step in which the trace shows
         * its rank emptying the cache, not to whichever step the middle of
         * its second fell in */
        uint32_t k = oom_step(D, S, al.time_ns, (rec->flags & TELLER_LOGF_NO_SUBSEC) != 0, al.rank, L->node);
        if (k != TELLER_NONE) {
            step = k;
            S->steps[k].oom_line = 1;
            if (TELLER_GROW(L->anc, L->canc, L->nanc + 1))
                return -TELLER_ERR_NOMEM;
            L->anc[L->nanc++] = (anchor){rec->line, k}; /* the trace shows its retry */
        }
        det = TELLER_FAULT_OOM;
    } else if (has_sub(m, n, "Watchdog caught") || has_sub(m, n, "Timeout at NCCL work")) {
        det = TELLER_FAULT_NCCL_HANG;
        if (step != TELLER_NONE && step < D->nsteps && al.rank >= 0 && !(al.flags & TELLER_LOGF_OUTSIDE_STEP)) {
            if (TELLER_GROW(L->W->v, L->W->cap, L->W->n + 1))
                return -TELLER_ERR_NOMEM;
            waited *w = &L->W->v[L->W->n++];
            *w = (waited){.step = step,
                          .rank = al.rank,
                          .src = teller_store_source_of_rank(D->st, al.rank),
                          .seq = rec->seq,
                          .ran = rec->ran_ns > 0 ? (double)rec->ran_ns : -1,
                          .at = al.time_ns != INT64_MIN ? (double)al.time_ns : (double)S->out->steps[step].start_ns};
            op_kind(m, n, w);
        }
    } else if (rec->level < TELLER_LOGL_ERROR) {
        return 0;
    }
    if (step == TELLER_NONE || step >= D->nsteps)
        return 0;
    teller_evidence e;
    log_evidence(&e, L, rec, al.rank, al.time_ns);
    return put_line(D, S, L->out, step, det, &e) ? -TELLER_ERR_NOMEM : 0;
}

/* The step of a hang lasted until the watchdog fired. */
static void hang_lasted(diag_state *S, const waited *w)
{
    teller_diag_step *ds = &S->out->steps[w->step];
    double until = w->at + w->ran - (double)ds->start_ns;
    if (until > (double)ds->dur_ns)
        ds->dur_ns = (int64_t)until;
}

/* Whether two timeouts are on the same work: its number and its kind. */
static int same_work(const waited *a, const waited *b)
{
    return a->seq == b->seq && !strcmp(a->op, b->op);
}

/* The first kernel of events [i, b), b when none. */
static size_t kernel_from(const teller_events *ev, size_t i, size_t b)
{
    while (i < b && ev->layer[i] != TELLER_LAYER_KERNEL)
        i++;
    return i;
}

/* The engine collective source q's GPU was in when a hang took it down
 * before it ran any in the step: the kernel that followed the step's
 * kernels on their stream in the earlier step that began with the same
 * kernels taking the nearest time (a CUDA graph replays a step's kernels
 * in order, and the engine picks its all-reduce's algorithm by the batch's
 * size, which the kernels' times follow: a decode step is told by a decode
 * step, not by the prefill just before it; the latest of equals); else what
 * followed the step's last kernel the last time that kernel ran on its
 * stream. The one it hung in when that is an engine collective; else
 * TELLER_NONE. */
static uint32_t engine_next(const dctx *D, int32_t q, uint32_t step)
{
    const teller_events *ev = D->ev;
    size_t lo = D->range[q], hi = D->range[q + 1], last = SIZE_MAX;
    for (size_t e = lo; e < hi; e++)
        if (ev->layer[e] == TELLER_LAYER_KERNEL && ev->step[e] == step &&
            (last == SIZE_MAX || ev->start_ns[e] > ev->start_ns[last]))
            last = e;
    if (last == SIZE_MAX)
        return TELLER_NONE;
    /* the stream's events: one run of the source's, in start order (tree.c) */
    size_t a = last, b = last + 1, first = last, n = 0;
    while (a > lo && ev->track[a - 1] == ev->track[last])
        a--;
    while (b < hi && ev->track[b] == ev->track[last])
        b++;
    double took = 0, off = INFINITY; /* the step's kernels' time; the nearest match's distance from it */
    for (size_t e = a; e < b; e++)
        if (ev->layer[e] == TELLER_LAYER_KERNEL && ev->step[e] == step) {
            if (!n++)
                first = e;
            took += (double)ev->dur_ns[e];
        }
    size_t next = b, prev_k = b; /* prev_k: the kernel before j on the stream */
    for (size_t j = kernel_from(ev, a, b); j < b; prev_k = j, j = kernel_from(ev, j + 1, b)) {
        if (ev->step[j] >= step || (prev_k < b && ev->step[prev_k] == ev->step[j]))
            continue; /* not the first kernel of an earlier step */
        size_t i = j, p = first, same = 0;
        double t = 0;
        while (same < n && i < b && p < b && ev->name[i] == ev->name[p] && ev->step[i] == ev->step[j]) {
            same++;
            t += (double)ev->dur_ns[i];
            i = kernel_from(ev, i + 1, b);
            p = kernel_from(ev, p + 1, b);
        }
        double d = fabs(log((t + 1) / (took + 1)));
        if (same == n && i < b && d <= off) {
            next = i;
            off = d;
        }
    }
    if (next == b) {
        size_t prev = b;
        for (size_t e = a; e < b; e++)
            if (ev->layer[e] == TELLER_LAYER_KERNEL && ev->name[e] == ev->name[last] && ev->step[e] < step)
                prev = e;
        next = prev < b ? kernel_from(ev, prev + 1, b) : b;
    }
    if (next == b || !(ev->flags[next] & TELLER_F_COMM))
        return TELLER_NONE;
    const teller_comm_family *fam =
        teller_comm_family_get(teller_comm_family_of(teller_store_str(D->st, ev->name[next]), NULL, 0));
    return fam && fam->match == TELLER_COMM_MATCH_ORDER ? ev->name[next] : TELLER_NONE;
}

/* A hang only the watchdog shows. PyTorch's default error handling takes
 * the process down at a collective's timeout without aborting it, so the
 * collective that never ended is not in the trace, nor the annotation of
 * the step it hung: the tree gives that step a row where the rank launched
 * work after its last marker (tree.c), and the watchdog line is placed
 * where its collective began (align.c). On a step where the collectives
 * showed no hang (comm.c finds those whose waiting kernels did end), the
 * first timeout that says how long it ran makes one: the root is the
 * member of the waiting rank's peer group (else its pipeline) that logged
 * no timeout on the step, the one whose trace stops first; when every
 * member timed out, the one that waited on other work than most did (a
 * lower SeqNum: it fell behind; the same number of another OpType: it
 * called another collective; the desync ProcessGroupNCCL's lines show),
 * the lowest; on the waiting rank's last kernel of the line's kind. The
 * step lasted until the watchdog fired, and a hang the collectives did
 * show (comm.c) waited as long as the line says. 0, or -1 out of memory. */
static int log_hangs(const dctx *D, diag_state *S, finds *out, const waits_seen *W)
{
    const teller_events *ev = D->ev;
    for (size_t i = 0; i < W->n; i++) {
        const waited *w = &W->v[i];
        int first = w->ran > 0; /* the step's first line that says how long it ran */
        for (size_t j = 0; j < i && first; j++)
            first = !(W->v[j].step == w->step && W->v[j].ran > 0);
        if (!first)
            continue;
        /* a hang the collectives show (comm.c) waited as long as the line
         * says, whatever its traced part took */
        step_acc *sa = &S->steps[w->step];
        int shown = 0;
        for (size_t a = 0; a < sa->n; a++)
            if (sa->c[a].det == TELLER_FAULT_NCCL_HANG) {
                shown = 1;
                if (sa->c[a].excess < w->ran)
                    sa->c[a].excess = sa->c[a].actual = w->ran;
            }
        if (shown)
            hang_lasted(S, w);
        int32_t q = w->src;
        if (shown || q < 0)
            continue;
        const uint32_t *g = D->peers + D->gfirst[q];
        uint32_t ng = D->gcount[q];
        if (ng < 2) {
            g = D->linked + D->pfirst[q];
            ng = D->pcount[q];
        }
        /* the work most of the group's members timed out on, its number
         * and kind; in: per source, a rank of the group's (marked at each
         * rank's first source, which is every line's src) */
        uint8_t *in = calloc(D->nsrc + 1, 1);
        if (!in)
            return -1;
        for (uint32_t m = 0; m < ng; m++)
            in[teller_store_source_of_rank(D->st, teller_store_source_c(D->st, g[m])->rank)] = 1;
        const waited *common = NULL;
        uint32_t most = 0;
        for (size_t j = 0; j < W->n; j++) {
            const waited *x = &W->v[j];
            if (x->step != w->step || x->seq < 0 || x->src < 0 || !in[x->src])
                continue;
            uint32_t c = 0;
            for (size_t j2 = 0; j2 < W->n; j2++)
                c += W->v[j2].step == w->step && W->v[j2].src >= 0 && in[W->v[j2].src] && same_work(&W->v[j2], x);
            if (c > most) {
                most = c;
                common = x;
            }
        }
        free(in);
        int32_t root = -1, behind = -1, peer = w->rank;
        int64_t stop = INT64_MAX, low = INT64_MAX;
        uint32_t nwait = 0;
        for (uint32_t m = 0; m < ng; m++) {
            int32_t r = teller_store_source_c(D->st, g[m])->rank;
            int dup = 0; /* a rank with several sources (processes) counts once */
            for (uint32_t m2 = 0; m2 < m && !dup; m2++)
                dup = teller_store_source_c(D->st, g[m2])->rank == r;
            if (dup)
                continue;
            int waits = 0, other = 0; /* timed out: on the common work, on another */
            int64_t seq = INT64_MAX;
            for (size_t j = 0; j < W->n; j++) {
                const waited *x = &W->v[j];
                if (x->step != w->step || x->rank != r)
                    continue;
                if (x->seq < 0 || !common || same_work(x, common))
                    waits = 1;
                else if (x->seq < seq) {
                    other = 1;
                    seq = x->seq;
                }
            }
            if (waits) {
                nwait++;
                if (seq == INT64_MAX && common && !same_work(w, common))
                    peer = r; /* w is the odd one's own line: a rank that waited on the common work */
                continue;
            }
            if (other) {
                if (seq < low) {
                    low = seq;
                    behind = r;
                }
                continue;
            }
            int64_t end = INT64_MIN; /* where the rank's trace stops, over its sources */
            for (uint32_t m2 = m; m2 < ng; m2++) {
                int64_t first, last;
                teller_tree_extent(D->st, g[m2], &first, &last);
                if (teller_store_source_c(D->st, g[m2])->rank == r && last > end)
                    end = last;
            }
            if (end < stop) {
                stop = end;
                root = r;
            }
        }
        if (root < 0)
            root = behind;
        if (root < 0)
            continue; /* every member waited on the same work: for a rank whose trace is not loaded */
        /* The operator: the latest kernel of the line's kind. The engines'
         * own collectives (custom all-reduce, DeepEP) have no watchdog: a
         * rank that hung in one went on enqueueing the step's work and its
         * watchdog fired on the next NCCL work, which it never ran. So when
         * the step holds no kernel of the line's kind but one of those, the
         * latest of them in the step is what the rank was in (its batch
         * sets their size, and the size the kernel); when it ran none yet,
         * the one that follows its last kernel (engine_next). */
        uint32_t name = TELLER_NONE, engine = TELLER_NONE;
        int64_t latest = INT64_MIN, latest_engine = INT64_MIN;
        int kind_in_step = 0;
        for (size_t e = D->range[q]; e < D->range[q + 1]; e++) {
            /* the line's time, minutes after the trace ends, moves onto its
             * clock by the node's offset and rate as fitted in the trace:
             * milliseconds off, so the hung step's kernels all count */
            if (!(ev->flags[e] & TELLER_F_COMM) || !(ev->flags[e] & TELLER_F_GPU) ||
                ((double)ev->start_ns[e] > w->at && ev->step[e] != w->step))
                continue;
            const char *nm = teller_store_str(D->st, ev->name[e]);
            int kind = !w->op[0] || strstr(nm, w->op);
            if (kind && ev->start_ns[e] >= latest) {
                latest = ev->start_ns[e];
                name = ev->name[e];
            }
            kind_in_step |= kind && ev->step[e] == w->step;
            const teller_comm_family *fam = teller_comm_family_get(teller_comm_family_of(nm, NULL, 0));
            if (ev->step[e] == w->step && fam && fam->match == TELLER_COMM_MATCH_ORDER &&
                ev->start_ns[e] >= latest_engine) {
                latest_engine = ev->start_ns[e];
                engine = ev->name[e];
            }
        }
        if (!kind_in_step && engine == TELLER_NONE)
            engine = engine_next(D, q, w->step);
        if (!kind_in_step && engine != TELLER_NONE)
            name = engine;
        const char *fallback = w->optype[0] ? w->optype : "collective";
        if (name == TELLER_NONE)
            name = teller_store_intern(D->st, fallback, strlen(fallback));
        if (name == TELLER_NONE)
            return -1;
        cand c = {.det = TELLER_FAULT_NCCL_HANG, .rank = root, .name = name, .layer = TELLER_LAYER_KERNEL,
                  .excess = w->ran, .ratio = 10, .actual = w->ran, .usual = 0, .event = TELLER_NONE, .members = nwait,
                  .peer = peer};
        if (finds_add(out, w->step, &c))
            return -1;
        hang_lasted(S, w);
    }
    return 0;
}

/* What the requests' replay (requests.h) says of each step's batch, as
 * bits per step into *kinds (nsteps entries, the caller frees): STEP_RECOMP
 * when it recomputed preempted work (prefill sequences that no waiting
 * request or cut chunk accounts for), STEP_DECODES when its annotation says
 * it only decoded. All zero when the annotations say nothing of the batch.
 * 0, or -1 out of memory. */
static int batch_kinds(const dctx *D, const teller_requests *R, uint8_t **kinds)
{
    if (!(*kinds = calloc(D->nsteps ? D->nsteps : 1, 1)))
        return -1;
    for (size_t k = 0; k < R->nsteps && R->steps[k].step < D->nsteps; k++)
        (*kinds)[R->steps[k].step] = (uint8_t)((R->steps[k].recompute_seqs > 0 ? STEP_RECOMP : 0) |
                                               (R->steps[k].prefill_seqs == 0 ? STEP_DECODES : 0));
    return 0;
}

/* SGLang logs one "Prefill batch." line per step that prefills: when the
 * file's lines of the traced seconds are as many as the steps whose
 * annotations do not say they only decoded (and some say so), the i-th
 * line is the i-th such step, and each is an anchor for the preemption
 * lines around it. A trace that begins or ends within a second of prefill
 * lines it does not hold has more lines than steps, and gives none. 0, or
 * -1 out of memory. */
static int prefill_anchors(logctx *L, const uint8_t *kinds)
{
    const dctx *D = L->D;
    size_t n = 0, decodes = 0;
    for (uint32_t k = 0; k < D->nsteps; k++) {
        n += !(kinds[k] & STEP_DECODES);
        decodes += (kinds[k] & STEP_DECODES) != 0;
    }
    if (!decodes || n != L->npre)
        return 0;
    size_t i = 0;
    for (uint32_t k = 0; k < D->nsteps; k++) {
        if (kinds[k] & STEP_DECODES)
            continue;
        if (TELLER_GROW(L->anc, L->canc, L->nanc + 1))
            return -1;
        L->anc[L->nanc++] = (anchor){L->pre[i++], k};
    }
    return 0;
}

/* Reads and aligns every log of the options, feeding the requests' build
 * the same records (S->req, finished by diagnose.c), one log after the
 * other; a log's whole-second preemption lines are placed once it is read,
 * which needs the requests' replay over every log: the logs after it are
 * then read for the requests alone (a second reading only of those, and
 * only when a log before the last has such lines), and not fed again when
 * the diagnosis reads them. A log that cannot be read (missing, a
 * directory, a trace) fails the diagnosis, naming the file. */
static teller_status read_logs(const dctx *D, diag_state *S, finds *out, teller_error *err)
{
    const teller_diag_opts *o = D->opts;
    if (!o->nlogs)
        return TELLER_OK;
    teller_req_opts ro = teller_req_defaults();
    ro.logs = o->logs;
    ro.nlogs = o->nlogs;
    ro.log_tz_offset_s = o->log_tz_offset_s;
    teller_status st = teller_req_begin(D->st, &ro, &S->req, err);
    if (st != TELLER_OK)
        return st;
    teller_log_opts lo = teller_req_log_opts(S->req);
    uint8_t *kinds = NULL; /* made at the first whole-second preemption line */
    waits_seen W = {0};
    size_t fed = 0;        /* the logs [0, fed) went to the requests */
    for (size_t i = 0; st == TELLER_OK && i < o->nlogs; i++) {
        const char *path = o->logs[i];
        logctx L = {.D = D,
                    .S = S,
                    .out = out,
                    .W = &W,
                    .req = i < fed ? NULL : S->req,
                    .node = teller_log_node_from_path(path),
                    .path = path};
        if (L.node < 0)
            L.node = 0;
        teller_req_set_node(S->req, L.node);
        st = teller_log_read_file(path, &lo, on_log, &L, NULL, err);
        if (i >= fed)
            fed = i + 1;
        if (st == TELLER_OK && L.ndef && !kinds) {
            for (; st == TELLER_OK && fed < o->nlogs; fed++) {
                teller_req_set_node(S->req, teller_log_node_from_path(o->logs[fed]));
                st = teller_log_read_file(o->logs[fed], &lo, teller_req_feed, S->req, NULL, err);
            }
            const teller_requests *R = NULL;
            if (st == TELLER_OK)
                st = teller_req_replay(S->req, &R, err);
            if (st == TELLER_OK && batch_kinds(D, R, &kinds))
                st = teller_error_set(err, TELLER_ERR_NOMEM, path, 0, "out of memory");
        }
        /* the whole-second preemption lines, placed once the file's other
         * lines are, go to their steps in the file's order */
        if (st == TELLER_OK && L.ndef && (prefill_anchors(&L, kinds) || place_deferred(&L, kinds)))
            st = teller_error_set(err, TELLER_ERR_NOMEM, path, 0, "out of memory");
        for (size_t j = 0; st == TELLER_OK && j < L.ndef; j++)
            if (L.def[j].step != TELLER_NONE) {
                uint32_t k = L.def[j].step;
                S->steps[k].claimed = 1;
                teller_fault det = L.def[j].may_swap && step_has(S, k, TELLER_FAULT_KV_SWAP) ? TELLER_FAULT_KV_SWAP
                                                                                              : TELLER_FAULT_PREEMPTION;
                if (put_line(D, S, out, k, det, &L.def[j].ev))
                    st = teller_error_set(err, TELLER_ERR_NOMEM, path, 0, "out of memory");
            }
        free(L.anc);
        free(L.def);
        free(L.pre);
        if (st == TELLER_OK && L.total && !L.aligned) {
            char note[600];
            snprintf(note, sizeof note,
                     "%s: none of its %d records with a time falls within 2 s of the traced steps (a log from "
                     "another run, or clocks far apart): nothing in it was used",
                     path, L.total);
            diag_add_note(S, note);
        }
    }
    if (st == TELLER_OK && log_hangs(D, S, out, &W))
        st = teller_error_set(err, TELLER_ERR_NOMEM, "(logs)", 0, "out of memory");
    free(W.v);
    if (st == TELLER_OK && !kinds) { /* the requests' replay, when no placement needed it */
        const teller_requests *R = NULL;
        st = teller_req_replay(S->req, &R, err);
    }
    free(kinds);
    return st;
}

static int logs_run(const dctx *D, diag_state *S, size_t task, finds *out)
{
    (void)task;
    teller_status st = read_logs(D, S, out, S->err);
    if (st == TELLER_OK)
        return 0;
    if (st == TELLER_ERR_NOMEM)
        return -1;
    S->status = st;
    return 1;
}

const diag_detector diag_row_logs = {.name = "logs", .scope = DIAG_PER_RUN, .round = 4, .reads = DIAG_S_STEPS,
                                     .writes = DIAG_S_STEPS | DIAG_S_OUT | DIAG_S_REQUESTS, .run = logs_run};
