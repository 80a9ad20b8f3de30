/*
 * check.c - every number a diagnosis states, made again from the trace
 * (see check.h). The definitions are diagnose.h teller_fact's, repeated
 * here on the store's events, step table and collectives with nothing of
 * src/diagnose/ but the public results, so that a fact the diagnosis got
 * wrong, or a sentence that prints a number no fact holds, is caught.
 */
#define _GNU_SOURCE /* memmem */
#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "teller/check.h"
#include "teller/tree.h"

static void mismatch(teller_check_report *r, const char *fmt, ...)
{
    if (!r->mismatches++) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(r->first, sizeof r->first, fmt, ap);
        va_end(ap);
    }
}

static int cmp_dbl(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* the median of v[0..n), n > 0: the middle value, or the mean of the two
 * middle ones; v is sorted */
static double median(double *v, size_t n)
{
    qsort(v, n, sizeof *v, cmp_dbl);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

typedef struct chk {
    const teller_store   *st;
    const teller_events  *ev;
    const teller_diagnosis *d;
    teller_check_report  *r;
    double               *tot; /* per step, scratch */
    double               *v;   /* scratch, as many as steps (and pairs) */
    size_t                vcap;
    int                   nomem;
} chk;

/* the events of rank's source: [*lo, *hi); 0 when the rank is not loaded */
static int rank_events(const chk *C, int32_t rank, size_t *lo, size_t *hi)
{
    int32_t s = teller_store_source_of_rank(C->st, rank);
    if (s < 0)
        return 0;
    const teller_source *so = teller_store_source_c(C->st, (uint32_t)s);
    *lo = so->first_event;
    *hi = (size_t)so->first_event + so->num_events;
    return 1;
}

static int is_gpu_work(const teller_events *ev, size_t i)
{
    return (ev->flags[i] & TELLER_F_GPU) && teller_layer_is_gpu_work(ev->layer[i]);
}

static int is_host_op(const teller_events *ev, size_t i)
{
    return !(ev->flags[i] & TELLER_F_GPU) && teller_layer_is_host_op(ev->layer[i]);
}

/* rank's window of step k: its step marker's start to the later of the
 * marker's end and the end of the GPU work launched in the step; without a
 * marker, its events of the step from the first host event's start to the
 * last end. -1 when the rank has no event in the step. */
static double window(const chk *C, uint32_t k, int32_t rank, int64_t *w0, int64_t *w1)
{
    const teller_events *ev = C->ev;
    size_t lo, hi;
    if (!rank_events(C, rank, &lo, &hi))
        return -1;
    int64_t ms = INT64_MAX, me = INT64_MIN, hs = INT64_MAX, end = INT64_MIN, gend = INT64_MIN;
    for (size_t i = lo; i < hi; i++) {
        if (ev->step[i] != k)
            continue;
        int64_t e = ev->start_ns[i] + ev->dur_ns[i];
        if ((ev->flags[i] & TELLER_F_STEP) && ev->start_ns[i] < ms) {
            ms = ev->start_ns[i];
            me = e;
        }
        if (!(ev->flags[i] & TELLER_F_GPU) && ev->start_ns[i] < hs)
            hs = ev->start_ns[i];
        if (e > end)
            end = e;
        if (is_gpu_work(ev, i) && e > gend)
            gend = e;
    }
    if (end == INT64_MIN)
        return -1;
    *w0 = ms != INT64_MAX ? ms : hs != INT64_MAX ? hs : INT64_MIN;
    *w1 = ms != INT64_MAX ? (gend > me ? gend : me) : end;
    if (*w0 == INT64_MIN)
        return -1;
    return (double)(*w1 - *w0);
}

/* what step k added to rank's run: its window's end less the later of its
 * start and the end of the rank's last window before it; -1 when the rank
 * has no event in the step */
static double added(const chk *C, uint32_t k, int32_t rank)
{
    int64_t a, b, pa, pb;
    if (window(C, k, rank, &a, &b) < 0)
        return -1;
    for (uint32_t j = k; j-- > 0;)
        if (window(C, j, rank, &pa, &pb) >= 0) {
            if (pb > a)
                a = pb < b ? pb : b;
            break;
        }
    return (double)(b - a);
}

/* the step's duration: its longest rank's */
static double step_dur(const chk *C, uint32_t k)
{
    double best = -1;
    for (size_t s = 0; s < teller_store_num_sources(C->st); s++) {
        double w = added(C, k, teller_store_source_c(C->st, (uint32_t)s)->rank);
        if (w > best)
            best = w;
    }
    return best;
}

/* The rank step k took longest on (added), the lowest of those tied; -1
 * when no rank has an event in it. */
static int32_t longest_rank(const chk *C, uint32_t k)
{
    double best = -1;
    int32_t who = -1;
    for (size_t q = 0; q < teller_store_num_sources(C->st); q++) {
        int32_t r = teller_store_source_c(C->st, (uint32_t)q)->rank;
        double w = added(C, k, r);
        if (w >= 0 && (w > best || (w == best && r < who))) {
            best = w;
            who = r;
        }
    }
    return who;
}

/* What step k did, by the marker that states the most work, else the one
 * of the rank it took longest on, else the lowest rank's that says it; its
 * work the marker's, else the kernels launched in the step on that rank. */
static void step_class(const chk *C, uint32_t k, teller_step_class *cls)
{
    const teller_step *rows = teller_store_steps(C->st);
    int32_t rank = longest_rank(C, k);
    size_t pick = SIZE_MAX;
    int64_t most = -1;
    for (size_t i = 0; i < teller_store_num_steps(C->st); i++) {
        if (rows[i].step != k || rows[i].marker == TELLER_NONE)
            continue;
        teller_step_classify(teller_store_str(C->st, teller_store_step_annotation(C->st, i)), cls);
        if (pick == SIZE_MAX || cls->work > most || (cls->work == most && rows[i].rank == rank && rows[pick].rank != rank)) {
            pick = i;
            most = cls->work;
        }
    }
    if (pick == SIZE_MAX) {
        teller_step_classify(NULL, cls);
        return;
    }
    teller_step_classify(teller_store_str(C->st, teller_store_step_annotation(C->st, pick)), cls);
    size_t lo, hi;
    if (cls->work < 0 && rank_events(C, rows[pick].rank, &lo, &hi)) {
        cls->work = 0;
        for (size_t j = lo; j < hi; j++)
            cls->work += C->ev->step[j] == k && C->ev->layer[j] == TELLER_LAYER_KERNEL && (C->ev->flags[j] & TELLER_F_GPU);
    }
}

/* The time the compute kernels of step k's fastest rank took, -1 when
 * fewer than two ranks ran any (a group's work when by_compute). */
static int64_t compute_work(const chk *C, uint32_t k)
{
    int64_t best = -1;
    int ran = 0;
    for (size_t q = 0; q < teller_store_num_sources(C->st); q++) {
        const teller_source *so = teller_store_source_c(C->st, (uint32_t)q);
        int64_t t = 0;
        for (size_t i = so->first_event; i < (size_t)so->first_event + so->num_events; i++)
            if (C->ev->step[i] == k && C->ev->layer[i] == TELLER_LAYER_KERNEL && (C->ev->flags[i] & TELLER_F_GPU) &&
                !(C->ev->flags[i] & TELLER_F_COMM))
                t += C->ev->dur_ns[i];
        if (t > 0) {
            ran++;
            if (best < 0 || t < best)
                best = t;
        }
    }
    return ran >= 2 ? best : -1;
}

static int grow(chk *C, size_t n)
{
    if (n <= C->vcap)
        return 0;
    double *v = realloc(C->v, n * sizeof *v);
    if (!v) {
        C->nomem = 1;
        return -1;
    }
    C->v = v;
    C->vcap = n;
    return 0;
}

/* The usual duration of step k as its group's yardstick states it: the
 * median of its reference steps, or the Theil-Sen line through them, or
 * the median of its nearest steps. -1 when it cannot be made. */
static double usual(chk *C, uint32_t k)
{
    const teller_diagnosis *d = C->d;
    const teller_diag_step *s = &d->steps[k];
    const teller_step_group *g = &d->groups[s->group];
    teller_step_class ck, cj;
    step_class(C, k, &ck);
    if (!g->fitted) {
        if (!s->near_n || grow(C, s->near_n))
            return -1;
        for (uint32_t i = 0; i < s->near_n; i++)
            C->v[i] = step_dur(C, d->near_steps[s->near_first + i]);
        return median(C->v, s->near_n);
    }
    uint32_t n = g->nref, m = n > 256 ? 256 : n;
    const uint32_t *ks = d->ref_steps + g->ref_first;
    double *dur = C->tot; /* per step */
    int64_t *work = malloc((n ? n : 1) * sizeof *work);
    if (!work || grow(C, (size_t)m * m / 2 + n + 1)) {
        free(work);
        C->nomem = 1;
        return -1;
    }
    for (uint32_t i = 0; i < n; i++) {
        step_class(C, ks[i], &cj);
        if (cj.kind != ck.kind || strcmp(cj.family, ck.family)) {
            mismatch(C->r, "step %u's yardstick holds step %u, which is another kind of step", k, ks[i]);
            free(work);
            return -1;
        }
        work[i] = g->by_compute ? compute_work(C, ks[i]) : cj.work;
        dur[ks[i]] = step_dur(C, ks[i]);
    }
    double base, slope = 0;
    if (g->by_work) {
        size_t np = 0;
        for (uint32_t i = 0; i < m; i++)
            for (uint32_t j = i + 1; j < m; j++) {
                uint32_t a = (uint32_t)((uint64_t)i * n / m), b = (uint32_t)((uint64_t)j * n / m);
                if (work[a] != work[b])
                    C->v[np++] = (dur[ks[b]] - dur[ks[a]]) / (double)(work[b] - work[a]);
            }
        slope = np ? median(C->v, np) : 0;
    }
    for (uint32_t i = 0; i < n; i++)
        C->v[i] = dur[ks[i]] - slope * (double)work[i];
    base = n ? median(C->v, n) : 0;
    free(work);
    int64_t wk = g->by_compute ? compute_work(C, k) : ck.work;
    return base + (g->by_work && wk > 0 ? slope * (double)wk : 0);
}

static int op_event(const teller_events *ev, size_t i, uint32_t name)
{
    if (name != TELLER_NONE)
        return ev->name[i] == name;
    return ev->layer[i] == TELLER_LAYER_KERNEL && (ev->flags[i] & TELLER_F_GPU) && !(ev->flags[i] & TELLER_F_COMM);
}

/* the time of rank's events named name in each step, into C->tot */
static void op_times(chk *C, int32_t rank, uint32_t name)
{
    size_t lo, hi;
    memset(C->tot, 0, (C->d->n + 1) * sizeof *C->tot);
    if (!rank_events(C, rank, &lo, &hi))
        return;
    for (size_t i = lo; i < hi; i++)
        if (C->ev->step[i] < C->d->n && op_event(C->ev, i, name))
            C->tot[C->ev->step[i]] += (double)C->ev->dur_ns[i];
}

/* whether anything of rank (GPU work when gpu, host ops when host) runs
 * inside (t0, t1) */
static int busy_in(const chk *C, int32_t rank, int64_t t0, int64_t t1, int gpu, int host)
{
    size_t lo, hi;
    if (!rank_events(C, rank, &lo, &hi))
        return 0;
    for (size_t i = lo; i < hi; i++) {
        if (C->ev->dur_ns[i] <= 0 || !((gpu && is_gpu_work(C->ev, i)) || (host && is_host_op(C->ev, i))))
            continue;
        if (C->ev->start_ns[i] < t1 && C->ev->start_ns[i] + C->ev->dur_ns[i] > t0)
            return 1;
    }
    return 0;
}

static int cmp_ival(const void *a, const void *b)
{
    const int64_t *x = a, *y = b;
    return (x[0] > y[0]) - (x[0] < y[0]);
}

/* the time in [t0, t1) in which rank's GPU ran nothing */
static double gpu_idle(chk *C, int32_t rank, int64_t t0, int64_t t1)
{
    size_t lo, hi, n = 0;
    if (t1 <= t0)
        return 0;
    if (!rank_events(C, rank, &lo, &hi))
        return (double)(t1 - t0);
    int64_t *iv = malloc(2 * (hi - lo + 1) * sizeof *iv);
    if (!iv) {
        C->nomem = 1;
        return -1;
    }
    for (size_t i = lo; i < hi; i++) {
        int64_t a = C->ev->start_ns[i], b = a + C->ev->dur_ns[i];
        if (C->ev->dur_ns[i] > 0 && is_gpu_work(C->ev, i) && a < t1 && b > t0) {
            iv[2 * n] = a < t0 ? t0 : a;
            iv[2 * n + 1] = b > t1 ? t1 : b;
            n++;
        }
    }
    qsort(iv, n, 2 * sizeof *iv, cmp_ival);
    int64_t busy = 0, cur = t0;
    for (size_t j = 0; j < n; j++) {
        int64_t a = iv[2 * j] > cur ? iv[2 * j] : cur, b = iv[2 * j + 1];
        if (b > a) {
            busy += b - a;
            cur = b;
        }
    }
    free(iv);
    return (double)(t1 - t0 - busy);
}

/* how long blocking call e went on after the last GPU work of its source
 * that had ended by its end */
static double overhang(const chk *C, uint32_t e)
{
    const teller_events *ev = C->ev;
    int64_t end = ev->start_ns[e] + ev->dur_ns[e], last = ev->start_ns[e];
    size_t lo, hi;
    if (!rank_events(C, teller_store_event_rank(C->st, e), &lo, &hi))
        return -1;
    for (size_t i = lo; i < hi; i++) {
        int64_t ie = ev->start_ns[i] + ev->dur_ns[i];
        if (is_gpu_work(ev, i) && ie <= end && ie > last)
            last = ie;
    }
    return (double)(end - last);
}

/* collectives of step k with two or more members: how many, at how many
 * rank started last, and how long the others waited for it */
static void late(const chk *C, uint32_t k, int32_t rank, uint32_t *n, uint32_t *last, double *wait)
{
    const teller_collective *co = teller_store_collectives(C->st);
    const teller_coll_member *mem = teller_store_coll_members(C->st);
    *n = *last = 0;
    *wait = 0;
    for (size_t c = 0; c < teller_store_num_collectives(C->st); c++) {
        if (co[c].num_members < 2)
            continue;
        uint32_t lm = co[c].first_member;
        for (uint32_t m = co[c].first_member; m < co[c].first_member + co[c].num_members; m++)
            if (C->ev->start_ns[mem[m].kernel] > C->ev->start_ns[mem[lm].kernel])
                lm = m;
        if (C->ev->step[mem[lm].kernel] != k)
            continue;
        (*n)++;
        if (mem[lm].rank != rank)
            continue;
        (*last)++;
        for (uint32_t m = co[c].first_member; m < co[c].first_member + co[c].num_members; m++)
            *wait += (double)(C->ev->start_ns[mem[lm].kernel] - C->ev->start_ns[mem[m].kernel]);
    }
}

/* Makes fact i of step s again: its value, or NAN when the trace does not
 * give it (said in r). vals: the step's facts made so far. */
static double remake(chk *C, const teller_diag_step *s, uint32_t i, const double *vals)
{
    const teller_fact *f = &C->d->facts[s->first_fact + i];
    const teller_events *ev = C->ev;
    int64_t w0, w1;
    switch (f->kind) {
    case TELLER_FACT_STEP:
        return added(C, f->step, f->rank);
    case TELLER_FACT_USUAL: {
        double u = usual(C, f->step);
        return u > 0 ? (double)llround(u) : NAN;
    }
    case TELLER_FACT_EVENT:
        if (f->a >= ev->n || teller_store_event_rank(C->st, f->a) != f->rank || ev->step[f->a] != f->step)
            return NAN;
        return (double)ev->dur_ns[f->a];
    case TELLER_FACT_OP: {
        size_t lo, hi;
        double t = 0;
        uint32_t n = 0;
        if (!rank_events(C, f->rank, &lo, &hi))
            return NAN;
        for (size_t j = lo; j < hi; j++)
            if (ev->step[j] == f->step && op_event(ev, j, f->name)) {
                t += (double)ev->dur_ns[j];
                n++;
            }
        return n == f->count ? t : NAN;
    }
    case TELLER_FACT_OP_USUAL: {
        const teller_step_group *g = &C->d->groups[C->d->steps[f->step].group];
        op_times(C, f->rank, f->name);
        uint32_t n = 0;
        if (grow(C, g->nref + 1))
            return NAN;
        for (uint32_t q = 0; q < g->nref; q++) {
            uint32_t j = C->d->ref_steps[g->ref_first + q];
            if (j != f->step)
                C->v[n++] = C->tot[j];
        }
        return n && n == f->count ? median(C->v, n) : NAN;
    }
    case TELLER_FACT_HOLE:
        if (f->t1 <= f->t0 || busy_in(C, f->rank, f->t0, f->t1, 0, 1) ||
            (f->b != TELLER_NONE && (f->b >= ev->n || ev->start_ns[f->b] != f->t1)))
            return NAN;
        return (double)(f->t1 - f->t0);
    case TELLER_FACT_GPU_IDLE:
        return gpu_idle(C, f->rank, f->t0, f->t1);
    case TELLER_FACT_OVERHANG:
        return f->a < ev->n ? overhang(C, f->a) : NAN;
    case TELLER_FACT_LATE: {
        uint32_t n, last;
        double w;
        late(C, f->step, f->rank, &n, &last, &w);
        return n == f->count2 && last == f->count ? w : NAN;
    }
    case TELLER_FACT_DIFF:
        return f->a < i && f->b < i ? vals[f->a] - vals[f->b] : NAN;
    case TELLER_FACT_REFERENCE:
        return NAN; /* not made again: the reference run's trace is not here */
    case TELLER_FACT_QUIET:
        if (f->t1 <= f->t0 || busy_in(C, f->rank, f->t0, f->t1, 1, 1) || window(C, f->step, f->rank, &w0, &w1) < 0 ||
            f->t0 < w0 || f->t1 > w1)
            return NAN;
        return (double)(f->t1 - f->t0);
    }
    return NAN;
}

/* ---- the numbers of a sentence ---- */

/* Whether integer x is one the step may state: its step, its facts'
 * steps, ranks, the nodes of those ranks, counts; its candidates' ranks
 * and their nodes; its group's sizes, its work and the steps its usual is
 * made of. */
static int identifier(const chk *C, const teller_diag_step *s, long long x)
{
    const teller_diagnosis *d = C->d;
    const teller_step_group *g = &d->groups[s->group];
    if (x == s->pred.step || x == s->root_rank || x == s->root_node || x == s->dur_rank || x == g->n || x == g->nref ||
        x == s->work)
        return 1;
    for (uint32_t i = 0; i < s->near_n; i++)
        if (x == d->near_steps[s->near_first + i])
            return 1;
    for (int i = 0; i < s->pred.ncand; i++) {
        int32_t src = s->pred.cand[i].rank >= 0 ? teller_store_source_of_rank(C->st, s->pred.cand[i].rank) : -1;
        if (x == s->pred.cand[i].rank || (src >= 0 && x == teller_store_source_c(C->st, (uint32_t)src)->node))
            return 1;
    }
    for (uint32_t i = 0; i < s->nfacts; i++) {
        const teller_fact *f = &d->facts[s->first_fact + i];
        int32_t src = f->rank >= 0 ? teller_store_source_of_rank(C->st, f->rank) : -1;
        if (x == f->step || x == f->rank || x == f->count || x == f->count2 ||
            (src >= 0 && x == teller_store_source_c(C->st, (uint32_t)src)->node))
            return 1;
    }
    return 0;
}

/* Blanks in t every occurrence of s. */
static void blank_text(char *t, const char *s)
{
    size_t n = strlen(s);
    for (char *p = t; n && (p = strstr(p, s)) != NULL; p += n)
        memset(p, ' ', n);
}

/* Blanks in t every occurrence of name, and of the normalized name an
 * explanation says for a long one (an operator's name may hold digits). */
static void blank(char *t, const char *name)
{
    blank_text(t, name);
    if (strlen(name) > TELLER_EXPLAIN_NAME_MAX) {
        char norm[TELLER_EXPLAIN_NAME_MAX + 1];
        teller_name_normalize(name, norm, sizeof norm);
        blank_text(t, norm);
    }
}

/* Reads every number of text (step s's explanation, or its HTML
 * rendering) and matches it to the step's facts and identifiers. */
static void check_text(chk *C, const teller_diag_step *s, const char *text, const char *where)
{
    char *t = strdup(text);
    if (!t) {
        C->nomem = 1;
        return;
    }
    char *log = strstr(t, " Log: \"");
    if (log)
        *log = '\0'; /* a quoted log line is the log's, not a number of ours */
    /* the candidates' whole names (a prediction's copy may be cut short) */
    for (uint32_t i = 0; i < s->ncands; i++)
        blank(t, teller_store_str(C->st, C->d->cands[s->first_cand + i].name));
    for (uint32_t i = 0; i < s->nfacts; i++) {
        const teller_fact *f = &C->d->facts[s->first_fact + i];
        if (f->name != TELLER_NONE)
            blank(t, teller_store_str(C->st, f->name));
        if ((f->kind == TELLER_FACT_EVENT || f->kind == TELLER_FACT_OVERHANG) && f->a < C->ev->n)
            blank(t, teller_store_str(C->st, C->ev->name[f->a]));
        if (f->kind == TELLER_FACT_HOLE && f->b < C->ev->n)
            blank(t, teller_store_str(C->st, C->ev->name[f->b]));
    }
    for (char *p = t; *p; p++) {
        if (!isdigit((unsigned char)*p) || (p > t && (isalnum((unsigned char)p[-1]) || p[-1] == '_' || p[-1] == '.')))
            continue;
        char *q = p;
        while (isdigit((unsigned char)*q) || (*q == '.' && isdigit((unsigned char)q[1])))
            q++;
        const char *units[] = {" s", " ms", " us", " ns"};
        size_t ul = 0;
        for (size_t u = 0; u < 4 && !ul; u++) {
            size_t n = strlen(units[u]);
            if (!strncmp(q, units[u], n) && !isalnum((unsigned char)q[n]))
                ul = n;
        }
        C->r->numbers++;
        if (ul) {
            size_t len = (size_t)(q - p) + ul;
            int found = 0;
            for (uint32_t i = 0; i < s->nfacts && !found; i++) {
                const char *ft = C->d->facts[s->first_fact + i].text;
                found = strlen(ft) == len && !strncmp(ft, p, len);
            }
            if (!found)
                mismatch(C->r, "%s of step %u: \"%.*s\" is no fact of the step", where, s->pred.step, (int)len, p);
            p = q + ul - 1;
        } else {
            if (memchr(p, '.', (size_t)(q - p)) || !identifier(C, s, strtoll(p, NULL, 10)))
                mismatch(C->r, "%s of step %u: \"%.*s\" is no fact or identifier of the step", where, s->pred.step,
                         (int)(q - p), p);
            p = q - 1;
        }
    }
    free(t);
}

teller_status teller_check_diagnosis(const teller_store *st, const teller_diagnosis *d, teller_check_report *r,
                                     teller_error *err)
{
    chk C = {.st = st, .ev = teller_store_events(st), .d = d, .r = r};
    C.tot = calloc(d->n + 1, sizeof *C.tot);
    double *vals = NULL;
    size_t vcap = 0;
    if (!C.tot)
        goto oom;
    for (size_t k = 0; k < d->n && !C.nomem; k++) {
        const teller_diag_step *s = &d->steps[k];
        if (s->nfacts > vcap) {
            free(vals);
            if (!(vals = malloc((vcap = s->nfacts) * sizeof *vals)))
                goto oom;
        }
        for (uint32_t i = 0; i < s->nfacts; i++) {
            const teller_fact *f = &d->facts[s->first_fact + i];
            if (f->kind == TELLER_FACT_REFERENCE) { /* the reference run's trace is not here */
                vals[i] = f->value;
                r->reference++;
                continue;
            }
            double v = remake(&C, s, i, vals);
            vals[i] = v;
            r->facts++;
            char text[24];
            teller_fmt_dur(text, sizeof text, v);
            if (v != v || fabs(v - f->value) > 0.5 + 1e-9 * fabs(f->value) || strcmp(text, f->text))
                mismatch(r, "step %zu, fact %u (%s, rank %d): the diagnosis says %s, the trace gives %s", k, i,
                         teller_fact_kind_name(f->kind), f->rank, f->text, v == v ? text : "no such fact");
        }
        if (s->pred.explanation[0])
            check_text(&C, s, s->pred.explanation, "the explanation");
    }
    if (C.nomem)
        goto oom;
    free(C.tot);
    free(C.v);
    free(vals);
    return TELLER_OK;
oom:
    free(C.tot);
    free(C.v);
    free(vals);
    return teller_error_set(err, TELLER_ERR_NOMEM, "(check)", 0, "out of memory");
}

/* ---- the HTML report ---- */

/* The text of HTML h[0..n) with its tags dropped and the entities the
 * report writes read back (&amp; &lt; &gt; &quot; &#39;); malloc'd. */
static char *html_text(const char *h, size_t n)
{
    char *t = malloc(n + 1);
    size_t w = 0;
    if (!t)
        return NULL;
    static const char *const ent[][2] = {{"&amp;", "&"}, {"&lt;", "<"}, {"&gt;", ">"}, {"&quot;", "\""}, {"&#39;", "'"}};
    for (size_t i = 0; i < n;) {
        if (h[i] == '<') {
            const char *gt = memchr(h + i, '>', n - i);
            i = gt ? (size_t)(gt - h) + 1 : n;
            continue;
        }
        size_t e = 0;
        while (e < 5 && strncmp(h + i, ent[e][0], strlen(ent[e][0])))
            e++;
        if (h[i] == '&' && e < 5) {
            t[w++] = ent[e][1][0];
            i += strlen(ent[e][0]);
            continue;
        }
        t[w++] = h[i++];
    }
    t[w] = '\0';
    return t;
}

teller_status teller_check_html(const teller_store *st, const teller_diagnosis *d, const char *html, size_t n,
                                teller_check_report *r, teller_error *err)
{
    chk C = {.st = st, .ev = teller_store_events(st), .d = d, .r = r};
    const char *end = html + n;
    /* numbers marked as facts */
    const char *fk = "data-fact=\"";
    for (const char *p = html; (p = memmem(p, (size_t)(end - p), fk, strlen(fk))) != NULL; p += strlen(fk)) {
        unsigned long step = 0, i = 0;
        const char *q = p + strlen(fk), *gt = memchr(q, '>', (size_t)(end - q)), *lt;
        if (sscanf(q, "%lu:%lu", &step, &i) != 2 || !gt || !(lt = memchr(gt, '<', (size_t)(end - gt)))) {
            mismatch(r, "HTML: a data-fact attribute that names no fact: %.40s", p);
            continue;
        }
        r->numbers++;
        if (step >= d->n || i >= d->steps[step].nfacts) {
            mismatch(r, "HTML: data-fact %lu:%lu names no fact", step, i);
            continue;
        }
        const teller_fact *f = &d->facts[d->steps[step].first_fact + i];
        size_t len = (size_t)(lt - gt - 1);
        if (len != strlen(f->text) || strncmp(gt + 1, f->text, len))
            mismatch(r, "HTML: step %lu's fact %lu prints \"%.*s\", the diagnosis says %s", step, i, (int)len, gt + 1,
                     f->text);
    }
    /* explanations, each read as its sentence is */
    const char *ek = "data-explains=\"";
    for (const char *p = html; (p = memmem(p, (size_t)(end - p), ek, strlen(ek))) != NULL; p += strlen(ek)) {
        unsigned long step = 0;
        const char *q = p + strlen(ek), *gt = memchr(q, '>', (size_t)(end - q)), *close;
        if (sscanf(q, "%lu", &step) != 1 || step >= d->n || !gt ||
            !(close = memmem(gt, (size_t)(end - gt), "</p>", 4))) {
            mismatch(r, "HTML: an explanation of no step: %.40s", p);
            continue;
        }
        char *t = html_text(gt + 1, (size_t)(close - gt - 1));
        if (!t)
            return teller_error_set(err, TELLER_ERR_NOMEM, "(check)", 0, "out of memory");
        check_text(&C, &d->steps[step], t, "the HTML explanation");
        free(t);
        if (C.nomem)
            return teller_error_set(err, TELLER_ERR_NOMEM, "(check)", 0, "out of memory");
    }
    return TELLER_OK;
}
