/*
 * facts.c - the numbers a diagnosis states about a step and the sentence
 * they are printed in. Each number is a fact (diagnose.h teller_fact) made
 * here from the trace itself, not from a detector's internal yardstick, so
 * that a user can find it in the trace and `teller diagnose --check`
 * (src/check/) can make it again: an operator's "took" is its events' own
 * time, a host stall is a stretch in which no op ran, and "usual" is a
 * median of named steps. A detector decides what the finding is; its facts
 * say what the trace shows of it.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "judge.h"
#include "stall.h"

char *teller_fmt_dur(char *buf, size_t cap, double ns)
{
    double a = fabs(ns);
    if (a >= 1e9)
        snprintf(buf, cap, "%.3f s", ns / 1e9);
    else if (a >= 1e6)
        snprintf(buf, cap, "%.3f ms", ns / 1e6);
    else if (a >= 1e3)
        snprintf(buf, cap, "%.1f us", ns / 1e3);
    else
        snprintf(buf, cap, "%.0f ns", ns);
    return buf;
}

/* ---- making facts ---- */

/* Appends fact f to the diagnosis (its text printed from its value); its
 * index among step k's facts, or UINT32_MAX out of memory (S->nomem). */
static uint32_t push(diag_state *S, const teller_diag_step *s, teller_fact f)
{
    teller_diagnosis *d = S->out;
    if (TELLER_GROW(d->facts, S->facts_cap, d->nfacts + 1)) {
        S->nomem = 1;
        return UINT32_MAX;
    }
    teller_fmt_dur(f.text, sizeof f.text, f.value);
    d->facts[d->nfacts++] = f;
    return (uint32_t)(d->nfacts - 1 - s->first_fact);
}

static teller_fact fact(teller_fact_kind kind, uint32_t step, int32_t rank)
{
    teller_fact f;
    memset(&f, 0, sizeof f);
    f.kind = kind;
    f.step = step;
    f.rank = rank;
    f.name = f.a = f.b = TELLER_NONE;
    return f;
}

static const teller_fact *at(const diag_state *S, const teller_diag_step *s, uint32_t i)
{
    return &S->out->facts[s->first_fact + i];
}

/* Whether event i is one of an OP fact's: named name, or a compute kernel
 * when name is TELLER_NONE. */
static int op_event(const teller_events *ev, size_t i, uint32_t name)
{
    if (name != TELLER_NONE)
        return ev->name[i] == name;
    return ev->layer[i] == TELLER_LAYER_KERNEL && (ev->flags[i] & TELLER_F_GPU) && !(ev->flags[i] & TELLER_F_COMM);
}

static uint32_t fact_op(const dctx *D, diag_state *S, const teller_diag_step *s, uint32_t k, int32_t rank, uint32_t name)
{
    int32_t src = teller_store_source_of_rank(D->st, rank);
    teller_fact f = fact(TELLER_FACT_OP, k, rank);
    f.name = name;
    for (size_t i = src >= 0 ? D->range[src] : 0; src >= 0 && i < D->range[src + 1]; i++)
        if (D->ev->step[i] == k && op_event(D->ev, i, name)) {
            f.value += (double)D->ev->dur_ns[i];
            f.count++;
        }
    return push(S, s, f);
}

/* The median of the OP fact (rank, name) over the reference steps of step
 * k's group but k; UINT32_MAX when there are none (or out of memory). */
static uint32_t fact_op_usual(const dctx *D, diag_state *S, const teller_diag_step *s, uint32_t k, int32_t rank, uint32_t name)
{
    const teller_diagnosis *d = S->out;
    const teller_step_group *g = &d->groups[d->steps[k].group];
    int32_t src = teller_store_source_of_rank(D->st, rank);
    if (src < 0 || g->nref < 2)
        return UINT32_MAX;
    double *tot = calloc((size_t)D->nsteps + 1, sizeof *tot), *v = malloc(g->nref * sizeof *v);
    if (!tot || !v) {
        free(tot);
        free(v);
        S->nomem = 1;
        return UINT32_MAX;
    }
    for (size_t i = D->range[src]; i < D->range[src + 1]; i++)
        if (D->ev->step[i] < D->nsteps && op_event(D->ev, i, name))
            tot[D->ev->step[i]] += (double)D->ev->dur_ns[i];
    uint32_t n = 0;
    for (uint32_t r = 0; r < g->nref; r++) {
        uint32_t j = d->ref_steps[g->ref_first + r];
        if (j != k)
            v[n++] = tot[j];
    }
    teller_fact f = fact(TELLER_FACT_OP_USUAL, k, rank);
    f.name = name;
    f.count = n;
    f.value = n ? diag_median(v, n) : 0;
    free(tot);
    free(v);
    return n ? push(S, s, f) : UINT32_MAX;
}

static uint32_t fact_event(const dctx *D, diag_state *S, const teller_diag_step *s, uint32_t k, uint32_t e)
{
    teller_fact f = fact(TELLER_FACT_EVENT, k, rank_of(D, e));
    f.a = e;
    f.name = D->ev->name[e];
    f.value = (double)D->ev->dur_ns[e];
    return push(S, s, f);
}

static uint32_t fact_diff(diag_state *S, const teller_diag_step *s, uint32_t a, uint32_t b)
{
    teller_fact f = fact(TELLER_FACT_DIFF, at(S, s, a)->step, at(S, s, a)->rank);
    f.a = a;
    f.b = b;
    f.value = at(S, s, a)->value - at(S, s, b)->value;
    return push(S, s, f);
}

/* How long blocking call e went on after its rank's last GPU work that had
 * ended by its end. */
static uint32_t fact_overhang(const dctx *D, diag_state *S, const teller_diag_step *s, uint32_t k, uint32_t e)
{
    const teller_events *ev = D->ev;
    uint16_t src = ev->source[e];
    int64_t end = ev->start_ns[e] + ev->dur_ns[e], last = ev->start_ns[e];
    for (size_t i = D->range[src]; i < D->range[src + 1]; i++) {
        int64_t ie = ev->start_ns[i] + ev->dur_ns[i];
        if ((ev->flags[i] & TELLER_F_GPU) && teller_layer_is_gpu_work(ev->layer[i]) && ie <= end && ie > last)
            last = ie;
    }
    teller_fact f = fact(TELLER_FACT_OVERHANG, k, rank_of(D, e));
    f.a = e;
    f.value = (double)(end - last);
    return push(S, s, f);
}

static uint32_t fact_span(const dctx *D, diag_state *S, const teller_diag_step *s, teller_fact_kind kind, uint32_t k, int32_t rank,
                          int64_t t0, int64_t t1, uint32_t b)
{
    teller_fact f = fact(kind, k, rank);
    f.t0 = t0;
    f.t1 = t1;
    f.b = b;
    if (kind == TELLER_FACT_GPU_IDLE) {
        int32_t src = teller_store_source_of_rank(D->st, rank);
        f.value = src >= 0 ? diag_idle_in(&S->gpu, (uint16_t)src, t0, t1) : 0;
    } else {
        f.value = (double)(t1 - t0);
    }
    return push(S, s, f);
}

/* what step k added to rank's run: its window's end less the later of
 * its start and the end of the rank's window of the step before */
static uint32_t fact_step(const dctx *D, diag_state *S, const teller_diag_step *s, uint32_t k, int32_t rank)
{
    const teller_step *rows = teller_store_steps(D->st);
    size_t hi, lo = diag_step_rows(D->st, k, &hi);
    teller_fact f = fact(TELLER_FACT_STEP, k, rank);
    for (size_t i = lo; i < hi; i++) {
        if (rows[i].rank != rank)
            continue;
        int64_t from = rows[i].start_ns;
        for (uint32_t j = k; j-- > 0;) { /* the rank's last window before */
            size_t phi, plo = diag_step_rows(D->st, j, &phi), p = plo;
            while (p < phi && rows[p].rank != rank)
                p++;
            if (p == phi)
                continue;
            if (rows[p].end_ns > from)
                from = rows[p].end_ns < rows[i].end_ns ? rows[p].end_ns : rows[i].end_ns;
            break;
        }
        f.value = (double)(rows[i].end_ns - from);
    }
    return push(S, s, f);
}

/* ---- the sentence ---- */

typedef struct line {
    char  *b;
    size_t cap, n;
} line;

static void say(line *L, const char *fmt, ...)
{
    if (L->n + 1 >= L->cap)
        return;
    va_list ap;
    va_start(ap, fmt);
    int w = vsnprintf(L->b + L->n, L->cap - L->n, fmt, ap);
    va_end(ap);
    if (w > 0)
        L->n = L->n + (size_t)w < L->cap ? L->n + (size_t)w : L->cap - 1;
}

/* A number of the reference run: the usual of a step of step k's kind
 * (op 0), or of operator name on rank in such a step (op 1). */
static uint32_t fact_reference(diag_state *S, const teller_diag_step *s, uint32_t k, int32_t rank, uint32_t name, int op,
                               double value)
{
    uint32_t steps;
    diag_ref_how how;
    diag_reference_kind(S, k, &steps, &how);
    teller_fact f = fact(TELLER_FACT_REFERENCE, k, rank);
    f.name = name;
    f.count = steps;
    f.count2 = (uint32_t)op;
    f.value = value;
    return push(S, s, f);
}

static const char *txt(const diag_state *S, const teller_diag_step *s, uint32_t i)
{
    return i == UINT32_MAX ? "?" : at(S, s, i)->text;
}

static const char *name_of(const dctx *D, uint32_t name) { return teller_store_str(D->st, name); }

/* An operator's name as an explanation says it: whole, or normalized
 * (tree.h teller_name_normalize: no template or parameter lists) when it
 * is longer than TELLER_EXPLAIN_NAME_MAX, so that a sentence is not cut
 * inside a name (a 1,849-character fbgemm kernel name fills it). */
static const char *said_name(const dctx *D, uint32_t name, char *buf, size_t cap)
{
    const char *s = name_of(D, name);
    if (strlen(s) <= TELLER_EXPLAIN_NAME_MAX)
        return s;
    teller_name_normalize(s, buf, cap);
    return buf;
}

/* "decode", "iteration": what a step's kind is called ("such" for an
 * annotation of another family) */
static const char *kind_word(const teller_step_group *g)
{
    return g->kind == TELLER_STEP_OTHER ? "such" : teller_step_kind_name(g->kind);
}

/* The step's duration against its usual: "Step 16 took 4.089 ms on rank
 * 2, 900.5 us more than usual (3.189 ms: the median of its 68 decode
 * steps)". Returns the fact of the time over usual (UINT32_MAX none). */
static uint32_t say_step(const dctx *D, diag_state *S, line *took, line *L, teller_diag_step *s, uint32_t k)
{
    const teller_diagnosis *d = S->out;
    const teller_step_group *g = &d->groups[s->group];
    uint32_t fd = fact_step(D, S, s, k, s->dur_rank);
    say(took, "%s on rank %d", txt(S, s, fd), s->dur_rank);
    if (s->usual_ns < 0) {
        if (g->by_compute)
            say(L, "a %s step in which fewer than two ranks ran compute kernels (no yardstick)", kind_word(g));
        else
            say(L, "the only %s step of its kind in the run (no yardstick)", kind_word(g));
        return UINT32_MAX;
    }
    teller_fact u = fact(TELLER_FACT_USUAL, k, s->dur_rank);
    u.value = (double)s->usual_ns;
    uint32_t fu = s->by_reference ? fact_reference(S, s, k, s->dur_rank, TELLER_NONE, 0, u.value) : push(S, s, u);
    if (fd == UINT32_MAX || fu == UINT32_MAX)
        return UINT32_MAX;
    int slower = at(S, s, fd)->value >= at(S, s, fu)->value;
    uint32_t fo = slower ? fact_diff(S, s, fd, fu) : fact_diff(S, s, fu, fd);
    const char *kw = kind_word(g);
    if (s->by_reference) {
        uint32_t steps;
        diag_ref_how how;
        diag_reference_kind(S, k, &steps, &how);
        if (how == DIAG_REF_FIRST)
            say(L, "%s %s than in the reference run (%s: its first step, as this is the recording's first)",
                txt(S, s, fo), slower ? "more" : "less", txt(S, s, fu));
        else if (how == DIAG_REF_LINE)
            say(L, "%s %s than in the reference run (%s: the line through its %u %s steps at this one's work)",
                txt(S, s, fo), slower ? "more" : "less", txt(S, s, fu), steps, kw);
        else if (how == DIAG_REF_MEDIAN)
            say(L, "%s %s than in the reference run (%s: the median of its %u %s steps)", txt(S, s, fo),
                slower ? "more" : "less", txt(S, s, fu), steps, kw);
        else if (steps == 1)
            say(L, "%s %s than in the reference run (%s: its %s step)", txt(S, s, fo), slower ? "more" : "less",
                txt(S, s, fu), kw);
        else
            say(L, "%s %s than in the reference run (%s: the median of its %s steps nearest to it in work, of %u)",
                txt(S, s, fo), slower ? "more" : "less", txt(S, s, fu), kw, steps);
        return slower ? fo : UINT32_MAX;
    }
    say(L, "%s %s than usual (%s: ", txt(S, s, fo), slower ? "more" : "less", txt(S, s, fu));
    char wk[48] = "";
    if (s->work >= 0) /* the annotation's tokens or batch, else the kernels the step launched */
        snprintf(wk, sizeof wk,
                 !strncmp(g->family, "step[", 5) ? "batch of %lld" : strstr(g->family, "context_") ? "%lld tokens"
                                                                                              : "%lld kernels",
                 (long long)s->work);
    if (g->fitted && g->by_compute) {
        uint32_t fw = fact_op(D, S, s, k, s->work_rank, TELLER_NONE);
        say(L, "the line through %s%u %s steps by the time their fastest rank's compute kernels took, here %s on rank %d)",
            g->nref < g->n ? "the " : "its ", g->nref, kw, txt(S, s, fw), s->work_rank);
    } else if (g->fitted && g->by_work)
        say(L, "the line through %s%u %s steps at its %s)", g->nref < g->n ? "the " : "its ", g->nref, kw, wk);
    else if (g->fitted)
        say(L, "the median of %s%u %s steps%s)", g->nref < g->n ? "the " : "its ", g->nref, kw,
            g->nref < g->n ? " that no finding flags" : "");
    else if (s->near_n == 1)
        say(L, "step %u, the %s step nearest to it%s)", d->near_steps[s->near_first] + D->opts->step_base, kw, s->work >= 0 ? " in work" : "");
    else {
        say(L, "the median of steps");
        for (uint32_t i = 0; i < s->near_n; i++)
            say(L, "%s %u", i == 0 ? "" : i + 1 == s->near_n ? " and" : ",",
                d->near_steps[s->near_first + i] + D->opts->step_base);
        say(L, ", the %s steps nearest to it%s)", kw, s->work >= 0 ? " in work" : "");
    }
    return slower ? fo : UINT32_MAX;
}

/* "whose 3 calls took 1.234 ms in step 7; its other 40 decode steps have
 * a median of 0.400 ms": the OP facts of (rank, name) in step k. Returns
 * the fact of its time over the median (UINT32_MAX none). */
static uint32_t say_op(const dctx *D, diag_state *S, line *L, teller_diag_step *s, uint32_t k, int32_t rank, uint32_t name, int self)
{
    uint32_t fo = fact_op(D, S, s, k, rank, name), fu = fact_op_usual(D, S, s, k, rank, name);
    if (fo == UINT32_MAX)
        return UINT32_MAX;
    const teller_fact *o = at(S, s, fo);
    const teller_step_group *g = &S->out->groups[S->out->steps[k].group];
    const char *in = self ? "this step" : "step";
    if (o->count == 1)
        say(L, "which took %s in %s", o->text, in);
    else
        say(L, "whose %u %s took %s in %s", o->count, name == TELLER_NONE ? "kernels" : "calls", o->text, in);
    if (!self)
        say(L, " %u", k);
    if (fu == UINT32_MAX)
        return UINT32_MAX;
    const teller_fact *u = at(S, s, fu);
    if (u->value > 0)
        say(L, "; its other %u %s steps have a median of %s", u->count, kind_word(g), u->text);
    else
        say(L, "; most of its other %u %s steps have none", u->count, kind_word(g));
    return at(S, s, fo)->value > at(S, s, fu)->value ? fact_diff(S, s, fo, fu) : UINT32_MAX;
}

/* The longest event named name in step k on any rank but `not`, of a
 * rank that waited in a collective its root never joined. */
static uint32_t longest_wait(const dctx *D, uint32_t k, uint32_t name, int32_t not)
{
    uint32_t best = TELLER_NONE;
    for (size_t i = 0; i < D->ev->n; i++)
        if (D->ev->step[i] == k && D->ev->name[i] == name && rank_of(D, (uint32_t)i) != not &&
            (best == TELLER_NONE || D->ev->dur_ns[i] > D->ev->dur_ns[best]))
            best = (uint32_t)i;
    return best;
}

/* The peer of the rank's tensor-parallel group (not the rank) whose time
 * in name in step k was least; -1 when it has none. */
static int32_t fastest_peer(const dctx *D, int32_t rank, uint32_t k, uint32_t name)
{
    int32_t src = teller_store_source_of_rank(D->st, rank), best = -1;
    double bt = INFINITY;
    if (src < 0 || D->gcount[src] < 2)
        return -1;
    for (uint32_t q = D->gfirst[src]; q < D->gfirst[src] + D->gcount[src]; q++) {
        uint32_t p = D->peers[q];
        if ((int32_t)p == src)
            continue;
        double t = 0;
        for (size_t i = D->range[p]; i < D->range[p + 1]; i++)
            if (D->ev->step[i] == k && D->ev->name[i] == name)
                t += (double)D->ev->dur_ns[i];
        if (t > 0 && t < bt) {
            bt = t;
            best = teller_store_source_c(D->st, p)->rank;
        }
    }
    return best;
}

/* Where the members of a collective its root never launched waited: "rank
 * 3 waited 600.000 s in it" into L; returns that wait's fact (UINT32_MAX
 * none). */
static uint32_t say_hang(const dctx *D, diag_state *S, line *L, teller_diag_step *s, uint32_t k, const cand *c)
{
    uint32_t w = longest_wait(D, k, c->name, c->rank);
    if (w == TELLER_NONE) {
        say(L, "the other members waited until the watchdog fired");
        return UINT32_MAX;
    }
    uint32_t fw = fact_event(D, S, s, k, w);
    say(L, "rank %d waited %s in it", rank_of(D, w), txt(S, s, fw));
    return fw;
}

/* What the root operator of finding c (no hang) did, by what the finding
 * is, into L ("which took ..."); returns what of the step it explains (a
 * fact, UINT32_MAX none). dur: the fact of the step's duration. */
/* A finding judged against the reference run (reference.c): the
 * operator's time in step k against its usual there. Returns the fact of
 * the difference (UINT32_MAX none). */
static uint32_t say_against_reference(const dctx *D, diag_state *S, line *L, teller_diag_step *s, uint32_t k, const cand *c)
{
    const char *kw = kind_word(&S->out->groups[s->group]);
    uint32_t steps;
    diag_ref_how how;
    diag_reference_kind(S, k, &steps, &how);
    uint32_t fr;
    switch (c->det) {
    case TELLER_FAULT_GPU_THROTTLE: {
        uint32_t fo = fact_op(D, S, s, k, c->rank, c->name), fa = fact_op(D, S, s, k, c->rank, TELLER_NONE);
        fr = fact_reference(S, s, k, c->rank, TELLER_NONE, 1, c->usual);
        say(L, "its heaviest kernel, which took %s in this step; all its kernels took %s together against %s in the "
               "reference run's usual %s step",
            txt(S, s, fo), txt(S, s, fa), txt(S, s, fr), kw);
        return fa != UINT32_MAX && at(S, s, fa)->value > c->usual ? fact_diff(S, s, fa, fr) : UINT32_MAX;
    }
    case TELLER_FAULT_SYNC_STALL: {
        uint32_t fe = c->event != TELLER_NONE ? fact_event(D, S, s, k, c->event) : UINT32_MAX;
        uint32_t fh = c->event != TELLER_NONE ? fact_overhang(D, S, s, k, c->event) : UINT32_MAX;
        say(L, "which took %s, %s of it after its GPU's last work had ended", txt(S, s, fe), txt(S, s, fh));
        break;
    }
    case TELLER_FAULT_PREEMPTION: {
        uint32_t fa = fact_op(D, S, s, k, c->rank, TELLER_NONE);
        fr = fact_reference(S, s, k, c->rank, TELLER_NONE, 1, c->usual);
        say(L, "whose step did more work than it states: the compute kernels of every rank grew together (on rank %d "
               "they took %s against %s in the reference run's usual %s step); no log line was given to confirm a "
               "preemption",
            c->rank, txt(S, s, fa), txt(S, s, fr), kw);
        return fa != UINT32_MAX && at(S, s, fa)->value > c->usual ? fact_diff(S, s, fa, fr) : UINT32_MAX;
    }
    case TELLER_FAULT_CPU_CONTENTION: {
        uint32_t fh = fact_span(D, S, s, TELLER_FACT_HOLE, k, c->rank, c->hole_from, c->hole_to, c->event);
        say(L, "before which no thread of its process ran an op for %s", txt(S, s, fh));
        fr = fact_reference(S, s, k, c->rank, TELLER_NONE, 1, c->usual);
        say(L, "; in the reference run its usual %s step held %s of such holes", kw, txt(S, s, fr));
        return UINT32_MAX;
    }
    case TELLER_FAULT_SLOW_LINK:
    case TELLER_FAULT_PP_SEND_DELAY:
        say(L, "whose transfers (their time once the last member had arrived)");
        break;
    default: {
        uint32_t fo = fact_op(D, S, s, k, c->rank, c->name);
        if (fo == UINT32_MAX)
            return UINT32_MAX;
        const teller_fact *o = at(S, s, fo);
        if (o->count == 1)
            say(L, "which took %s in this step", o->text);
        else
            say(L, "whose %u calls took %s in this step", o->count, o->text);
        fr = fact_reference(S, s, k, c->rank, c->name, 1, c->usual);
        say(L, "; in the reference run's %u %s step%s they took %s a step", steps, kw, steps == 1 ? "" : "s", txt(S, s, fr));
        return fr != UINT32_MAX && at(S, s, fo)->value > c->usual ? fact_diff(S, s, fo, fr) : UINT32_MAX;
    }
    }
    fr = fact_reference(S, s, k, c->rank, c->name, 1, c->usual);
    say(L, "; in the reference run's %u %s step%s that came to %s a step", steps, kw, steps == 1 ? "" : "s", txt(S, s, fr));
    return UINT32_MAX;
}

static uint32_t say_root(const dctx *D, diag_state *S, line *L, teller_diag_step *s, uint32_t k, const cand *c, uint32_t dur)
{
    uint32_t from = c->carried ? c->from : k;
    uint32_t ex = UINT32_MAX;
    if (c->reference && !c->carried)
        return say_against_reference(D, S, L, s, k, c);
    switch (c->det) {
    case TELLER_FAULT_GPU_THROTTLE: {
        uint32_t fo = fact_op(D, S, s, from, c->rank, c->name);
        say(L, "its heaviest kernel, which took %s in %s step; all its kernels ", txt(S, s, fo), c->carried ? "that" : "this");
        uint32_t fa = fact_op(D, S, s, from, c->rank, TELLER_NONE), fu = fact_op_usual(D, S, s, from, c->rank, TELLER_NONE);
        say(L, "took %s together", txt(S, s, fa));
        if (fu != UINT32_MAX && fa != UINT32_MAX) {
            say(L, " against %s in the median of its other %u %s steps", txt(S, s, fu), at(S, s, fu)->count,
                kind_word(&S->out->groups[S->out->steps[from].group]));
            if (at(S, s, fa)->value > at(S, s, fu)->value)
                ex = fact_diff(S, s, fa, fu);
        }
        break;
    }
    case TELLER_FAULT_SYNC_STALL: {
        uint32_t fe = c->event != TELLER_NONE ? fact_event(D, S, s, from, c->event) : UINT32_MAX;
        uint32_t fh = c->event != TELLER_NONE ? fact_overhang(D, S, s, from, c->event) : UINT32_MAX;
        say(L, "which took %s, %s of it after its GPU's last work had ended", txt(S, s, fe), txt(S, s, fh));
        ex = fh;
        break;
    }
    case TELLER_FAULT_CPU_CONTENTION: {
        uint32_t fh = fact_span(D, S, s, TELLER_FACT_HOLE, from, c->rank, c->hole_from, c->hole_to, c->event);
        uint32_t fi = fact_span(D, S, s, TELLER_FACT_GPU_IDLE, from, c->rank, c->hole_from, c->hole_to, TELLER_NONE);
        say(L, "before which no thread of its process ran an op for %s; its GPU idled %s of that time", txt(S, s, fh),
            txt(S, s, fi));
        ex = fi;
        break;
    }
    case TELLER_FAULT_PREEMPTION: {
        /* the steps around it served the same requests without recomputing */
        say(L, "which took %s", c->event != TELLER_NONE ? txt(S, s, fact_event(D, S, s, from, c->event)) : "?");
        uint32_t j = UINT32_MAX;
        for (uint32_t q = k >= 2 ? k - 2 : 0; q <= k + 2 && q < D->nsteps; q++)
            if (q != k && (j == UINT32_MAX || S->out->steps[q].dur_ns < S->out->steps[j].dur_ns))
                j = q;
        if (j != UINT32_MAX && dur != UINT32_MAX) {
            uint32_t fj = fact_step(D, S, s, j, S->out->steps[j].dur_rank);
            if (fj != UINT32_MAX && at(S, s, dur)->value > at(S, s, fj)->value) {
                ex = fact_diff(S, s, dur, fj);
                say(L, "; step %u, the shortest of the steps on either side, took %s, %s less", j + D->opts->step_base,
                    txt(S, s, fj),
                    txt(S, s, ex));
            }
        }
        break;
    }
    default:
        ex = say_op(D, S, L, s, from, c->rank, c->name, !c->carried);
        if (c->det == TELLER_FAULT_KERNEL_REGRESSION) {
            int32_t p = fastest_peer(D, c->rank, from, c->name);
            if (p >= 0) {
                uint32_t fp = fact_op(D, S, s, from, p, c->name);
                say(L, "; on its tensor-parallel peer rank %d they took %s", p, txt(S, s, fp));
            }
        }
        break;
    }
    return c->carried ? UINT32_MAX : ex;
}

/* How the recording ends in last step k on rank: "the profiler stopped in
 * it" when the profiler's own span ("PyTorch Profiler (N)") ends inside
 * the step's window, "the recording ends in it" when nothing of the rank
 * starts after the window; NULL otherwise (or not the last step). */
static const char *recording_end(const dctx *D, uint32_t k, int32_t rank)
{
    if (k + 1 != D->nsteps)
        return NULL;
    const teller_step *rows = teller_store_steps(D->st);
    size_t hi, lo = diag_step_rows(D->st, k, &hi);
    int32_t src = teller_store_source_of_rank(D->st, rank);
    for (size_t r = lo; src >= 0 && r < hi; r++) {
        if (rows[r].rank != rank)
            continue;
        int after = 0;
        for (size_t i = D->range[src]; i < D->range[src + 1]; i++) {
            int64_t e = D->ev->start_ns[i] + D->ev->dur_ns[i];
            if (D->ev->layer[i] == TELLER_LAYER_OTHER && !strncmp(name_of(D, D->ev->name[i]), "PyTorch Profiler", 16) &&
                e >= rows[r].start_ns && e <= rows[r].end_ns)
                return "the profiler stopped in it, so part of its time may be the profiler's own";
            after |= D->ev->start_ns[i] > rows[r].end_ns;
        }
        return after ? NULL : "the recording ends in it";
    }
    return NULL;
}

/* The explanation of abnormal step k, whose top finding is c. */
void diag_explain(const dctx *D, diag_state *S, teller_diag_step *s, const cand *c)
{
    uint32_t k = s->pred.step;
    line L = {s->pred.explanation, sizeof s->pred.explanation, 0};
    s->first_fact = (uint32_t)S->out->nfacts;
    int32_t node = diag_node_of_rank(D->st, c->rank);
    char took[96] = "", over[800] = "", aside[128] = "", root[800] = "", said[TELLER_EXPLAIN_NAME_MAX + 1];
    line T = {took, sizeof took, 0}, O = {over, sizeof over, 0}, R = {root, sizeof root, 0};
    uint32_t fover = say_step(D, S, &T, &O, s, k);
    if (c->carried)
        snprintf(aside, sizeof aside, ", carried from step %u: this step's GPU work queued behind that step's, which ended late",
                 c->from + D->opts->step_base);
    /* a hang's root never launched the collective: a rank whose trace is
     * not loaded is no operator of the trace */
    int hang = c->det == TELLER_FAULT_NCCL_HANG;
    if (hang && c->rank >= 0)
        say(&R, "which it never launched; ");
    uint32_t ex = hang ? say_hang(D, S, &R, s, k, c)
                       : say_root(D, S, &R, s, k, c, 0 /* say_step's first fact: the step's duration */);
    teller_fault_sentence(c->det, teller_fault_def_of(c->det)->by_node ? node : c->rank, (int)(k + D->opts->step_base), took, over, aside,
                          said_name(D, c->name, said, sizeof said), c->rank, node, hang && c->rank < 0 ? NULL : root,
                          L.b, L.cap);
    L.n = strlen(L.b);
    if (hang && c->rank < 0)
        say(&L, " A rank whose trace is not loaded never launched %s; %s.", said_name(D, c->name, said, sizeof said), root);
    if (fover != UINT32_MAX && ex != UINT32_MAX && at(S, s, ex)->value > 0) {
        if (at(S, s, ex)->value >= at(S, s, fover)->value)
            say(&L, " That covers all of the step's excess.");
        else
            say(&L, " That is %s of the step's %s; %s of it no finding explains.", txt(S, s, ex), txt(S, s, fover),
                txt(S, s, fact_diff(S, s, fover, ex)));
    }
    if (c->det == TELLER_FAULT_SLOW_LINK && c->both_ends)
        say(&L, " Its transfers cannot tell the link's two ends apart: it may be the link of node %d (rank %d).",
            diag_node_of_rank(D->st, c->peer), c->peer);
    /* the horizontal view: the root's rank arrived last at most of the
     * step's collectives */
    int32_t src = c->rank >= 0 ? teller_store_source_of_rank(D->st, c->rank) : -1;
    if (src >= 0 && S->late_insts[k] >= 2) {
        size_t cell = (size_t)k * D->nsrc + (size_t)src;
        if (S->late_last[cell] * 2 > S->late_insts[k]) {
            teller_fact f = fact(TELLER_FACT_LATE, k, c->rank);
            f.count = S->late_last[cell];
            f.count2 = S->late_insts[k];
            f.value = S->late_wait[cell];
            uint32_t fl = push(S, s, f);
            say(&L, " Rank %d arrived last at %u of %u collectives, its peers waiting %s for it.", c->rank, f.count,
                f.count2, txt(S, s, fl));
            if (s->pred.nev < TELLER_MAX_EVIDENCE) {
                teller_evidence *e = &s->pred.ev[s->pred.nev++];
                memset(e, 0, sizeof *e);
                snprintf(e->kind, sizeof e->kind, "trace");
                e->node = node;
                e->rank = c->rank;
                e->line = c->event != TELLER_NONE ? c->event : 0;
                e->time_ns = s->start_ns;
                snprintf(e->text, sizeof e->text,
                         "rank %d arrived last at %u of the step's %u collectives; its peers waited %s for it in all",
                         c->rank, f.count, f.count2, txt(S, s, fl));
            }
        }
    }
    const char *end = recording_end(D, k, s->dur_rank);
    if (end)
        say(&L, " It is the recording's last step: %s.", end);
    /* the first log line, quoted */
    for (int i = 0; i < s->pred.nev; i++)
        if (!strcmp(s->pred.ev[i].kind, "log")) {
            say(&L, " Log: \"%.300s\"", s->pred.ev[i].text);
            break;
        }
    s->nfacts = (uint32_t)(S->out->nfacts - s->first_fact);
}

/* The profiler's own work inside step k on source src (TELLER_F_PROFILER),
 * said when it took a material time: the records named as its longest. */
static void profiler_work(const dctx *D, diag_state *S, line *L, teller_diag_step *s, uint32_t k, int32_t src)
{
    const teller_events *ev = D->ev;
    uint32_t top = TELLER_NONE;
    for (size_t i = src >= 0 ? D->range[src] : 0; src >= 0 && i < D->range[src + 1]; i++)
        if (ev->step[i] == k && (ev->flags[i] & TELLER_F_PROFILER) && (top == TELLER_NONE || ev->dur_ns[i] > ev->dur_ns[top]))
            top = (uint32_t)i;
    if (top == TELLER_NONE)
        return;
    int64_t sum = 0;
    for (size_t i = D->range[src]; i < D->range[src + 1]; i++)
        sum += ev->step[i] == k && ev->name[i] == ev->name[top] ? ev->dur_ns[i] : 0;
    if (sum < TELLER_FAULT_MATERIAL_NS)
        return;
    uint32_t fo = fact_op(D, S, s, k, s->dur_rank, ev->name[top]);
    say(L, "; the profiler's own work took %s of it (%u \"%s\" record%s), time the program untraced would not have spent",
        txt(S, s, fo), at(S, s, fo)->count, teller_store_str(D->st, ev->name[top]), at(S, s, fo)->count == 1 ? "" : "s");
}

/* In slow step k (s) that no finding explains: when the compute kernels
 * of the rank it took longest on ran over their median in the other steps
 * of its kind by a quarter of its excess or more, says so (more work than the
 * step's annotation states, or every kernel slower: the trace alone does
 * not tell which); nothing where the kind's yardstick already follows
 * the compute kernels' time. */
static void compute_grew(const dctx *D, diag_state *S, line *L, teller_diag_step *s, uint32_t k)
{
    const teller_step_group *g = &S->out->groups[s->group];
    if (g->by_compute || s->excess_ns <= 0)
        return;
    size_t keep = S->out->nfacts;
    uint32_t fa = fact_op(D, S, s, k, s->dur_rank, TELLER_NONE), fu = fact_op_usual(D, S, s, k, s->dur_rank, TELLER_NONE);
    if (fa == UINT32_MAX || fu == UINT32_MAX || at(S, s, fa)->value - at(S, s, fu)->value < 0.25 * (double)s->excess_ns) {
        S->out->nfacts = keep; /* not said: no fact */
        return;
    }
    say(L, "; its compute kernels on rank %d took %s against %s in the median of its other %u %s steps", s->dur_rank,
        txt(S, s, fa), txt(S, s, fu), at(S, s, fu)->count, kind_word(g));
}

/* Step k is slower than its usual beyond the alarm, and no finding flags
 * it: it is said, with where the trace shows neither GPU work nor a host
 * op on its longest rank and how far its compute kernels grew there. */
void diag_explain_slow(const dctx *D, diag_state *S, teller_diag_step *s)
{
    uint32_t k = s->pred.step;
    line L = {s->pred.explanation, sizeof s->pred.explanation, 0};
    s->first_fact = (uint32_t)S->out->nfacts;
    char took[96] = "", over[800] = "";
    line T = {took, sizeof took, 0}, O = {over, sizeof over, 0};
    say_step(D, S, &T, &O, s, k);
    say(&L, "Step %u took %s, %s; no finding explains it", k + D->opts->step_base, took, over);
    const teller_step *rows = teller_store_steps(D->st);
    size_t hi, lo = diag_step_rows(D->st, k, &hi);
    int32_t src = teller_store_source_of_rank(D->st, s->dur_rank);
    if (src >= 0 && !S->gpu_known[(size_t)k * D->nsrc + (size_t)src]) {
        say(&L, "; the trace lacks its GPU work on rank %d, so what the GPU did is unknown.", s->dur_rank);
        s->nfacts = (uint32_t)(S->out->nfacts - s->first_fact);
        return;
    }
    for (size_t i = lo; src >= 0 && i < hi; i++) {
        if (rows[i].rank != s->dur_rank)
            continue;
        /* the index is built lazily, a part for each source explained */
        if ((!S->any.part && diag_busy_init(&S->any, D->nsrc)) ||
            (!S->any.part[src].a && diag_busy_part(&S->any, D, DIAG_BUSY_ANY, NULL, (size_t)src))) {
            S->nomem = 1;
            break;
        }
        diag_hole *H = NULL;
        size_t hcap = 0, nh = 0, best = SIZE_MAX;
        if (diag_busy_holes(&S->any, (uint16_t)src, rows[i].start_ns, rows[i].end_ns, TELLER_NONE, &H, &hcap, &nh)) {
            S->nomem = 1;
            break;
        }
        for (size_t h = 0; h < nh; h++)
            if (best == SIZE_MAX || H[h].b - H[h].a > H[best].b - H[best].a)
                best = h;
        if (best != SIZE_MAX && H[best].b - H[best].a >= TELLER_FAULT_MATERIAL_NS) {
            uint32_t fq = fact_span(D, S, s, TELLER_FACT_QUIET, k, s->dur_rank, H[best].a, H[best].b, TELLER_NONE);
            const char *where = H[best].b == rows[i].end_ns ? "at its end"
                                : H[best].a == rows[i].start_ns ? "at its start" : "inside it";
            say(&L, ": rank %d ran neither GPU work nor a host op for %s %s", s->dur_rank, txt(S, s, fq), where);
        }
        free(H);
        break;
    }
    if (src >= 0)
        compute_grew(D, S, &L, s, k);
    profiler_work(D, S, &L, s, k, src);
    say(&L, ".");
    const char *last = recording_end(D, k, s->dur_rank);
    if (last)
        say(&L, " It is the recording's last step: %s.", last);
    s->nfacts = (uint32_t)(S->out->nfacts - s->first_fact);
}
