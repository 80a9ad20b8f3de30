/*
 * perfetto.c - the trace re-emitted as Chrome-trace JSON with the findings
 * added (report.h).
 *
 * Perfetto's legacy JSON importer builds one slice stack per thread, so
 * complete events on one thread must nest: each either lies inside the
 * innermost open one or starts after it ends. Rows of a tree-built store
 * are sorted by start (equal starts longer first), so one sweep per row
 * with a stack of open ends decides; an event that would cross the top of
 * the stack is tried on the row's overflow threads ("(overlap k)") in
 * turn, and opens a new one when none takes it. Timestamps are written as
 * exact integers of nanoseconds, printed as microseconds with three
 * decimals, relative to the earliest event so that a double keeps them.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "teller/report.h"
#include "teller/tree.h"
#include "report_internal.h"
#include "../util/textout.h"

/* One thread track of the output and its stack of open slice ends. */
typedef struct lane {
    int64_t *ends;
    size_t   n, cap;
    int32_t  tid;
} lane;

/* The lanes of the row being written; reused from row to row. */
typedef struct lanes {
    lane  *l;
    size_t n, cap;
} lanes;

typedef struct sorted_ev {
    int64_t  start, dur;
    uint32_t e;
} sorted_ev;

static int cmp_sorted_ev(const void *a, const void *b)
{
    const sorted_ev *x = a, *y = b;
    if (x->start != y->start)
        return x->start < y->start ? -1 : 1;
    if (x->dur != y->dur)
        return x->dur > y->dur ? -1 : 1;
    return x->e < y->e ? -1 : x->e > y->e;
}

/* An event a finding points at: the culprit of a step, or the call of a
 * rank that waited for a step's root rank (rep_blame). */
typedef struct culprit_ref {
    uint32_t e;
    uint32_t step_idx; /* index into d->steps */
    int      waited;   /* 0: the culprit; 1: a waiting rank's call */
} culprit_ref;

static int cmp_culprit(const void *a, const void *b)
{
    const culprit_ref *x = a, *y = b;
    if (x->e != y->e)
        return x->e < y->e ? -1 : 1;
    if (x->waited != y->waited)
        return x->waited - y->waited;
    return x->step_idx < y->step_idx ? -1 : x->step_idx > y->step_idx;
}

/* Writes ns (relative to the origin) as microseconds with three decimals. */
static void put_us(FILE *f, int64_t ns)
{
    uint64_t a = ns < 0 ? (uint64_t)0 - (uint64_t)ns : (uint64_t)ns;
    fprintf(f, "%s%" PRIu64 ".%03u", ns < 0 ? "-" : "", a / 1000, (unsigned)(a % 1000));
}

/* Lanes a thread's slices may take: the lanes are scanned for every slice,
 * and a trace whose slices cross by the thousand (a garbled one) would make
 * that quadratic. */
enum { MAX_LANES = 64 };

/* Places a slice [s, e) on the first lane where it nests, opening a new
 * lane when none does. Returns the lane index; -2 when it nests on none of
 * MAX_LANES lanes (the slice is left out); -1 out of memory. */
static long lane_place(lanes *L, int64_t s, int64_t e)
{
    for (size_t i = 0; i < L->n; i++) {
        lane *ln = &L->l[i];
        while (ln->n && ln->ends[ln->n - 1] <= s)
            ln->n--;
        if (ln->n == 0 || ln->ends[ln->n - 1] >= e) {
            if (ln->n == ln->cap) {
                size_t nc = ln->cap ? 2 * ln->cap : 16;
                int64_t *g = realloc(ln->ends, nc * sizeof *g);
                if (!g)
                    return -1;
                ln->ends = g;
                ln->cap = nc;
            }
            ln->ends[ln->n++] = e;
            return (long)i;
        }
    }
    if (L->n == MAX_LANES)
        return -2;
    if (L->n == L->cap) {
        size_t nc = L->cap ? 2 * L->cap : 4;
        lane *g = realloc(L->l, nc * sizeof *g);
        if (!g)
            return -1;
        L->l = g;
        L->cap = nc;
    }
    lane *ln = &L->l[L->n];
    memset(ln, 0, sizeof *ln);
    ln->ends = malloc(16 * sizeof *ln->ends);
    if (!ln->ends)
        return -1;
    ln->cap = 16;
    ln->ends[ln->n++] = e;
    L->n++;
    return (long)(L->n - 1);
}

static void lanes_reset(lanes *L)
{
    for (size_t i = 0; i < L->n; i++)
        free(L->l[i].ends);
    L->n = 0;
}

/* Shared state of one write: the output, what the findings point at, and
 * the thread ids handed out so far. */
typedef struct pw {
    FILE                   *f;
    const teller_store     *st;
    const teller_diagnosis *d;      /* NULL: the trace alone */
    size_t                  nsrc;   /* sources; the findings' process is nsrc + 1 */
    size_t                  ndiag;  /* d->n, 0 without d */
    int64_t                 origin; /* ns written as 0 */
    int                     first;  /* no event written yet (no comma before the next) */
    int32_t                *ntid;     /* per source: thread ids handed out */
    int32_t                *root_tid; /* per source: its thread of root markers, 0: none yet */
    culprit_ref            *cul;      /* sorted by event */
    size_t                  ncul, ncul_cap;
    rep_blame              *blame;    /* the abnormal steps whose root rank holds no culprit */
    size_t                  nblame;
    uint32_t               *blame_of; /* per step: index into blame, or TELLER_NONE */
    int64_t                *cul_pid;  /* per step: where its flow arrow ends, -1: nowhere */
    int32_t                *cul_tid;
    lanes                   L;        /* reused by every row, then by the step windows */
    sorted_ev              *tmp;      /* an unsorted row's order */
    size_t                  tmp_cap;
} pw;

static void sep(pw *w)
{
    fputs(w->first ? "\n" : ",\n", w->f);
    w->first = 0;
}

static void meta_name(pw *w, const char *what, int64_t pid, int64_t tid, const char *name)
{
    sep(w);
    fprintf(w->f, "{\"ph\":\"M\",\"name\":\"%s\",\"pid\":%" PRId64 ",\"tid\":%" PRId64 ",\"args\":{\"name\":", what,
            pid, tid);
    teller_json_put(w->f, name);
    fputs("}}", w->f);
}

static void meta_sort(pw *w, const char *what, int64_t pid, int64_t tid, int64_t index)
{
    sep(w);
    fprintf(w->f, "{\"ph\":\"M\",\"name\":\"%s\",\"pid\":%" PRId64 ",\"tid\":%" PRId64
                  ",\"args\":{\"sort_index\":%" PRId64 "}}",
            what, pid, tid, index);
}

/* Opens a teller instant named name on (pid, tid) at ns, up to its last
 * field: the caller adds args, if any, and closes it. */
static void open_instant(pw *w, const char *name, int64_t pid, int32_t tid, int64_t ns)
{
    sep(w);
    fputs("{\"ph\":\"i\",\"s\":\"t\",\"cat\":\"teller\",\"name\":", w->f);
    teller_json_put(w->f, name);
    fprintf(w->f, ",\"pid\":%" PRId64 ",\"tid\":%d,\"ts\":", pid, tid);
    put_us(w->f, ns - w->origin);
}

/* One trace event as an X (or i) event on (pid, tid). culprit_step is the
 * step whose culprit it is, waited_step the step in which it waited for
 * the root rank; UINT32_MAX for none. */
static void put_event(pw *w, uint32_t e, int64_t pid, int32_t tid, uint32_t culprit_step, uint32_t waited_step)
{
    const teller_events *ev = teller_store_events(w->st);
    FILE *f = w->f;
    int instant = (ev->flags[e] & TELLER_F_INSTANT) != 0;
    sep(w);
    fprintf(f, "{\"ph\":\"%s\",\"cat\":\"%s\",\"name\":", instant ? "i" : "X",
            teller_layer_name((teller_layer)ev->layer[e]));
    teller_json_put(f, teller_store_str(w->st, ev->name[e]));
    fprintf(f, ",\"pid\":%" PRId64 ",\"tid\":%d,\"ts\":", pid, tid);
    put_us(f, ev->start_ns[e] - w->origin);
    if (instant)
        fputs(",\"s\":\"t\"", f);
    else {
        fputs(",\"dur\":", f);
        put_us(f, ev->dur_ns[e]);
    }
    if (culprit_step != UINT32_MAX)
        fputs(",\"cname\":\"terrible\"", f);
    fputs(",\"args\":{", f);
    int n = 0;
    if (ev->step[e] != TELLER_NONE)
        fprintf(f, "%s\"step\":%u", n++ ? "," : "", ev->step[e]);
    if (ev->corr[e])
        fprintf(f, "%s\"correlation\":%u", n++ ? "," : "", ev->corr[e]);
    const teller_args *a = teller_store_event_args(w->st, e);
    if (a) {
        if (a->grid[0])
            fprintf(f, "%s\"grid\":[%u,%u,%u]", n++ ? "," : "", a->grid[0], a->grid[1], a->grid[2]);
        if (a->block[0])
            fprintf(f, "%s\"block\":[%u,%u,%u]", n++ ? "," : "", a->block[0], a->block[1], a->block[2]);
        if (a->bytes >= 0)
            fprintf(f, "%s\"bytes\":%" PRId64, n++ ? "," : "", a->bytes);
        if (a->ext_id >= 0)
            fprintf(f, "%s\"External id\":%" PRId64, n++ ? "," : "", a->ext_id);
        if (a->request) {
            fprintf(f, "%s\"request\":", n++ ? "," : "");
            teller_json_put(f, teller_store_str(w->st, a->request));
        }
    }
    const teller_comm *c = teller_store_event_comm(w->st, e);
    if (c) {
        fprintf(f, "%s\"collective\":", n++ ? "," : "");
        teller_json_put(f, teller_store_str(w->st, c->collective));
        if (c->pg_name) {
            fputs(",\"process_group\":", f);
            teller_json_put(f, teller_store_str(w->st, c->pg_name));
        }
        if (c->seq >= 0)
            fprintf(f, ",\"seq\":%" PRId64, c->seq);
    }
    if (culprit_step != UINT32_MAX)
        fprintf(f, "%s\"teller_culprit\":\"step %u\"", n++ ? "," : "", culprit_step);
    if (waited_step != UINT32_MAX)
        fprintf(f, "%s\"teller_waited\":\"step %u\"", n++ ? "," : "", waited_step);
    fputs("}}", f);
}

/* The process name of a source: "rank R (node N)". */
static void source_name(const teller_source *s, uint32_t i, char *buf, size_t cap)
{
    if (s->rank >= 0)
        snprintf(buf, cap, "rank %d (node %d)", s->rank, s->node);
    else
        snprintf(buf, cap, "source %u", i);
}

/* Collects what the findings point at: the culprits of abnormal steps
 * (only ever on the root rank: rep_blame) and the calls that waited for a
 * root rank that has none, sorted by event for lookup while writing. -1
 * when out of memory. */
static int collect_culprits(pw *w)
{
    const teller_events *ev = teller_store_events(w->st);
    for (size_t i = 0; i < w->ndiag; i++) {
        const teller_diag_step *s = &w->d->steps[i];
        w->cul_pid[i] = -1;
        w->cul_tid[i] = -1;
        w->blame_of[i] = TELLER_NONE;
        if (!s->pred.abnormal)
            continue;
        rep_blame b;
        rep_blame_of(w->st, s, &b);
        if (b.culprit != TELLER_NONE) {
            if (!(ev->flags[b.culprit] & TELLER_F_COUNTER))
                w->cul[w->ncul++] = (culprit_ref){b.culprit, (uint32_t)i, 0};
            continue;
        }
        rep_blame *g = realloc(w->blame, (w->nblame + 1) * sizeof *g);
        culprit_ref *gc = w->ncul + b.nvictims >= w->ncul_cap
                              ? realloc(w->cul, (w->ncul_cap += b.nvictims) * sizeof *gc)
                              : w->cul;
        if (gc)
            w->cul = gc;
        if (g)
            w->blame = g;
        if (!g || !gc)
            return -1;
        w->blame[w->nblame] = b;
        w->blame_of[i] = (uint32_t)w->nblame++;
        for (size_t v = 0; v < b.nvictims; v++)
            w->cul[w->ncul++] = (culprit_ref){b.victims[v], (uint32_t)i, 1};
    }
    if (w->ncul > 1)
        qsort(w->cul, w->ncul, sizeof *w->cul, cmp_culprit);
    return 0;
}

/* The earliest event or finding: the output's time 0. */
static int64_t trace_origin(const teller_events *ev, const teller_diagnosis *d, size_t ndiag)
{
    int64_t origin = INT64_MAX;
    for (size_t i = 0; i < ev->n; i++)
        if (ev->start_ns[i] < origin)
            origin = ev->start_ns[i];
    for (size_t i = 0; i < ndiag; i++)
        if (d->steps[i].pred.abnormal && d->steps[i].start_ns < origin)
            origin = d->steps[i].start_ns;
    return origin == INT64_MAX ? 0 : origin;
}

/* One process per source, named and sorted by rank. */
static void write_processes(pw *w)
{
    for (size_t s = 0; s < w->nsrc; s++) {
        const teller_source *src = teller_store_source_c(w->st, (uint32_t)s);
        char name[96];
        source_name(src, (uint32_t)s, name, sizeof name);
        meta_name(w, "process_name", (int64_t)s + 1, 0, name);
        meta_sort(w, "process_sort_index", (int64_t)s + 1, 0, src->rank >= 0 ? src->rank : (int64_t)s + 100000);
    }
}

/* The order of a row's events: NULL when the store keeps them sorted (in
 * place), else sorted into w->tmp. -1 when out of memory. */
static int row_order(pw *w, const rep_row *row, const sorted_ev **order)
{
    *order = NULL;
    if (row->sorted)
        return 0;
    const teller_events *ev = teller_store_events(w->st);
    if (row->n > w->tmp_cap) {
        sorted_ev *g = realloc(w->tmp, row->n * sizeof *g);
        if (!g)
            return -1;
        w->tmp = g;
        w->tmp_cap = row->n;
    }
    for (uint32_t k = 0; k < row->n; k++) {
        uint32_t e = row->first + k;
        w->tmp[k] = (sorted_ev){ev->start_ns[e], ev->dur_ns[e], e};
    }
    qsort(w->tmp, row->n, sizeof *w->tmp, cmp_sorted_ev);
    *order = w->tmp;
    return 0;
}

/* Names and sorts the thread of a row's new lane li: the row's own name
 * for the first, "(overlap li)" after it. Returns its tid. */
static int32_t open_lane(pw *w, const rep_row *row, const char *base, long li)
{
    int64_t pid = (int64_t)row->source + 1;
    int32_t tid = ++w->ntid[row->source];
    char name[128];
    if (li == 0)
        snprintf(name, sizeof name, "%s", base);
    else
        snprintf(name, sizeof name, "%s (overlap %ld)", base, li);
    meta_name(w, "thread_name", pid, tid, name);
    meta_sort(w, "thread_sort_index", pid, tid, (row->gpu ? 1000000 : 0) + tid);
    return tid;
}

/* Whether event e, written on (pid, tid), is a culprit (*cstep: the first
 * step it is the culprit of) or a call that waited for a root rank
 * (*vstep: the first such step); UINT32_MAX for neither. A culprit's
 * place is kept as the end of its step window's flow arrow. */
static void culprit_mark(pw *w, uint32_t e, int64_t pid, int32_t tid, uint32_t *cstep, uint32_t *vstep)
{
    *cstep = *vstep = UINT32_MAX;
    size_t lo = 0, hi = w->ncul;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (w->cul[mid].e < e)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (size_t c = lo; c < w->ncul && w->cul[c].e == e; c++) {
        uint32_t si = w->cul[c].step_idx;
        if (w->cul[c].waited) {
            if (*vstep == UINT32_MAX)
                *vstep = w->d->steps[si].pred.step;
            continue;
        }
        w->cul_pid[si] = pid;
        w->cul_tid[si] = tid;
        if (*cstep == UINT32_MAX)
            *cstep = w->d->steps[si].pred.step;
    }
}

/* Writes the events of one row on as many lanes (threads) as their nesting
 * needs, and an instant on its first lane when slices were left out. -1
 * when out of memory. */
static int write_row(pw *w, const rep_row *row)
{
    const teller_events *ev = teller_store_events(w->st);
    int64_t pid = (int64_t)row->source + 1;
    char base[96];
    if (row->gpu)
        snprintf(base, sizeof base, "stream %d (device %d)", row->tid, row->pid);
    else
        snprintf(base, sizeof base, "thread %d", row->tid);
    const sorted_ev *order;
    if (row_order(w, row, &order) != 0)
        return -1;
    lanes_reset(&w->L);
    int32_t lane_tid[MAX_LANES];
    size_t nlane_tid = 0;
    uint64_t left_out = 0; /* slices that crossed MAX_LANES others */
    int64_t left_at = 0;
    for (uint32_t k = 0; k < row->n; k++) {
        uint32_t e = order ? order[k].e : row->first + k;
        if (ev->flags[e] & TELLER_F_COUNTER)
            continue;
        int64_t s0 = ev->start_ns[e];
        int64_t e0 = s0 + ((ev->flags[e] & TELLER_F_INSTANT) ? 0 : ev->dur_ns[e]);
        long li = lane_place(&w->L, s0, e0);
        if (li == -2) {
            if (!left_out++)
                left_at = s0;
            continue;
        }
        if (li < 0)
            return -1;
        if ((size_t)li >= nlane_tid)
            lane_tid[nlane_tid++] = open_lane(w, row, base, li);
        uint32_t cstep, vstep;
        culprit_mark(w, e, pid, lane_tid[li], &cstep, &vstep);
        put_event(w, e, pid, lane_tid[li], cstep, vstep);
    }
    if (left_out && nlane_tid) { /* said where the row's first lane is, at the first left out */
        char name[192];
        snprintf(name, sizeof name, "teller: %" PRIu64 " slices of %s left out: each crossed %d others", left_out,
                 base, (int)MAX_LANES);
        open_instant(w, name, pid, lane_tid[0], left_at);
        fputs("}", w->f);
    }
    return 0;
}

/* The instant of abnormal step i on the findings' first thread, with the
 * diagnosis and, when its root rank holds no culprit, the ranks that
 * waited for it. */
static void step_instant(pw *w, size_t i, int64_t fpid)
{
    const teller_diag_step *s = &w->d->steps[i];
    FILE *out = w->f;
    char name[128];
    snprintf(name, sizeof name, "step %u: %s", s->pred.step, s->fault[0] ? s->fault : s->pred.fault_type);
    open_instant(w, name, fpid, 1, s->start_ns);
    fprintf(out, ",\"args\":{\"step\":%u,\"score\":%.4f,\"fault_type\":", s->pred.step, s->pred.score);
    teller_json_put(out, s->pred.fault_type);
    fputs(",\"fault\":", out);
    teller_json_put(out, s->fault);
    fprintf(out, ",\"rank\":%d,\"node\":%d,\"op\":", s->root_rank, s->root_node);
    teller_json_put(out, s->pred.ncand > 0 ? s->pred.cand[0].op : "");
    fputs(",\"layer\":", out);
    teller_json_put(out, s->pred.ncand > 0 ? s->pred.cand[0].layer : "");
    fprintf(out, ",\"dur_ms\":%.6f,\"usual_ms\":%.6f,\"excess_ms\":%.6f,\"explanation\":", (double)s->dur_ns / 1e6,
            (double)s->usual_ns / 1e6, (double)s->excess_ns / 1e6);
    teller_json_put(out, s->pred.explanation);
    if (w->blame_of[i] != TELLER_NONE) {
        const rep_blame *b = &w->blame[w->blame_of[i]];
        fprintf(out, ",\"root_never_launched\":%s,\"root_trace_loaded\":%s,\"waiting_ranks\":[",
                b->missing ? "true" : "false", b->unloaded ? "false" : "true");
        for (size_t v = 0; v < b->nvictims; v++)
            fprintf(out, "%s%d", v ? "," : "", teller_store_event_rank(w->st, b->victims[v]));
        fprintf(out, "],\"waited_ms\":%.6f", (double)b->waited_ns / 1e6);
    }
    fputs("}}", out);
}

/* For abnormal step i whose root rank holds no culprit event and is
 * loaded: a marker on that rank's own process (its thread of root
 * markers, opened on first use), which the step's flow arrow ends at. */
static void root_marker(pw *w, size_t i)
{
    const teller_diag_step *s = &w->d->steps[i];
    if (w->blame_of[i] == TELLER_NONE || s->root_rank < 0)
        return;
    size_t rs = 0;
    while (rs < w->nsrc && teller_store_source_c(w->st, (uint32_t)rs)->rank != s->root_rank)
        rs++;
    if (rs == w->nsrc)
        return;
    if (!w->root_tid[rs]) {
        w->root_tid[rs] = ++w->ntid[rs];
        meta_name(w, "thread_name", (int64_t)rs + 1, w->root_tid[rs], "teller: root of a finding");
        meta_sort(w, "thread_sort_index", (int64_t)rs + 1, w->root_tid[rs], -1);
    }
    char op[256], name[128];
    teller_name_normalize(s->pred.ncand > 0 ? s->pred.cand[0].op : "", op, sizeof op);
    if (w->blame[w->blame_of[i]].missing)
        snprintf(name, sizeof name, "rank %d never launched %.80s (step %u)", s->root_rank, op, s->pred.step);
    else
        snprintf(name, sizeof name, "rank %d: root of step %u", s->root_rank, s->pred.step);
    open_instant(w, name, (int64_t)rs + 1, w->root_tid[rs], s->start_ns);
    fprintf(w->f, ",\"args\":{\"teller_root\":\"step %u\"}}", s->pred.step);
    w->cul_pid[i] = (int64_t)rs + 1;
    w->cul_tid[i] = w->root_tid[rs];
}

/* The window of abnormal step win->e as a slice on (fpid, tid), and its
 * flow arrow to the culprit's start, or to the root rank's marker. */
static void step_window(pw *w, const sorted_ev *win, int64_t fpid, int32_t tid)
{
    const teller_events *ev = teller_store_events(w->st);
    const teller_diag_step *s = &w->d->steps[win->e];
    FILE *out = w->f;
    char name[128];
    snprintf(name, sizeof name, "step %u: %s (%.2f)", s->pred.step, s->fault[0] ? s->fault : s->pred.fault_type,
             s->pred.score);
    sep(w);
    fputs("{\"ph\":\"X\",\"cat\":\"teller\",\"name\":", out);
    teller_json_put(out, name);
    fprintf(out, ",\"pid\":%" PRId64 ",\"tid\":%d,\"ts\":", fpid, tid);
    put_us(out, win->start - w->origin);
    fputs(",\"dur\":", out);
    put_us(out, win->dur);
    fputs(",\"args\":{\"explanation\":", out);
    teller_json_put(out, s->pred.explanation);
    fputs("}}", out);
    uint32_t si = win->e;
    if (w->cul_pid[si] < 0)
        return;
    int64_t to = w->blame_of[si] == TELLER_NONE ? ev->start_ns[s->culprit_event] : s->start_ns;
    sep(w);
    fprintf(out, "{\"ph\":\"s\",\"cat\":\"teller\",\"name\":\"teller culprit\",\"id\":%u,\"pid\":%" PRId64
                 ",\"tid\":%d,\"ts\":",
            si + 1, fpid, tid);
    put_us(out, win->start - w->origin);
    fputs("}", out);
    sep(w);
    fprintf(out, "{\"ph\":\"f\",\"bp\":\"e\",\"cat\":\"teller\",\"name\":\"teller culprit\",\"id\":%u,\"pid\":%" PRId64
                 ",\"tid\":%d,\"ts\":",
            si + 1, w->cul_pid[si], w->cul_tid[si]);
    put_us(out, to - w->origin);
    fputs("}", out);
}

/* The abnormal step windows in start order, nesting by the same rule as a
 * row's slices on threads 2.. of the findings' process. -1 when out of
 * memory. */
static int step_windows(pw *w, int64_t fpid)
{
    size_t nab = 0;
    sorted_ev *win = malloc((w->ndiag + 1) * sizeof *win);
    if (!win)
        return -1;
    for (size_t i = 0; i < w->ndiag; i++) {
        const teller_diag_step *s = &w->d->steps[i];
        if (s->pred.abnormal)
            win[nab++] = (sorted_ev){s->start_ns, s->dur_ns > 0 ? s->dur_ns : 0, (uint32_t)i};
    }
    qsort(win, nab, sizeof *win, cmp_sorted_ev);
    lanes_reset(&w->L);
    int32_t nwin_tid = 1; /* tids 2.. are the window lanes */
    for (size_t k = 0; k < nab; k++) {
        long li = lane_place(&w->L, win[k].start, win[k].start + win[k].dur);
        if (li == -2)
            continue; /* crossing MAX_LANES other windows: its instant still marks it */
        if (li < 0) {
            free(win);
            return -1;
        }
        int32_t tid = 2 + (int32_t)li;
        if (tid > nwin_tid) {
            nwin_tid = tid;
            if (li > 0) {
                char name[64];
                snprintf(name, sizeof name, "abnormal step windows (overlap %ld)", li);
                meta_name(w, "thread_name", fpid, tid, name);
            }
        }
        step_window(w, &win[k], fpid, tid);
    }
    free(win);
    return 0;
}

/* The findings' own process: an instant per abnormal step (and a marker
 * on a root rank without a culprit), then the step windows. -1 when out
 * of memory. */
static int write_findings(pw *w)
{
    int64_t fpid = (int64_t)w->nsrc + 1;
    meta_name(w, "process_name", fpid, 0, "teller findings");
    meta_sort(w, "process_sort_index", fpid, 0, -1);
    meta_name(w, "thread_name", fpid, 1, "teller findings");
    meta_name(w, "thread_name", fpid, 2, "abnormal step windows");
    for (size_t i = 0; i < w->ndiag; i++) {
        if (!w->d->steps[i].pred.abnormal)
            continue;
        step_instant(w, i, fpid);
        root_marker(w, i);
    }
    return step_windows(w, fpid);
}

teller_status teller_report_perfetto(const teller_store *st, const teller_diagnosis *d, FILE *out, teller_error *err)
{
    if (!st || !out)
        return teller_error_set(err, TELLER_ERR_ARG, "perfetto", 0, "no store or no output stream");
    size_t nsrc = teller_store_num_sources(st);
    size_t ndiag = d ? d->n : 0;
    pw w = {.f = out, .st = st, .d = d, .nsrc = nsrc, .ndiag = ndiag, .first = 1, .ncul_cap = ndiag + 1};
    rep_row *rows = NULL;
    size_t nrows = 0;
    w.ntid = calloc(nsrc + 1, sizeof *w.ntid);
    w.root_tid = calloc(nsrc + 1, sizeof *w.root_tid);
    w.cul = malloc(w.ncul_cap * sizeof *w.cul);
    w.blame_of = malloc((ndiag + 1) * sizeof *w.blame_of);
    w.cul_pid = malloc((ndiag + 1) * sizeof *w.cul_pid);
    w.cul_tid = malloc((ndiag + 1) * sizeof *w.cul_tid);
    int ok = w.ntid && w.root_tid && w.cul && w.blame_of && w.cul_pid && w.cul_tid &&
             rep_rows(st, &rows, &nrows) == 0 && collect_culprits(&w) == 0;
    if (ok) {
        w.origin = trace_origin(teller_store_events(st), d, ndiag);
        fprintf(out,
                "{\"displayTimeUnit\":\"ms\",\"otherData\":{\"generator\":\"teller\",\"teller_origin_ns\":\"%" PRId64
                "\"},\n\"traceEvents\":[",
                w.origin);
        write_processes(&w);
        for (size_t r = 0; ok && r < nrows; r++)
            ok = write_row(&w, &rows[r]) == 0;
        if (ok && d)
            ok = write_findings(&w) == 0;
    }
    teller_status status = TELLER_OK;
    if (!ok)
        status = teller_error_set(err, TELLER_ERR_NOMEM, "perfetto", 0, "out of memory");
    else {
        fputs("\n]}\n", out);
        if (fflush(out) != 0 || ferror(out))
            status = teller_error_set(err, TELLER_ERR_IO, "perfetto", 0, "write failed");
    }
    lanes_reset(&w.L);
    free(w.L.l);
    free(w.tmp);
    free(rows);
    free(w.ntid);
    free(w.root_tid);
    free(w.cul);
    free(w.blame);
    free(w.blame_of);
    free(w.cul_pid);
    free(w.cul_tid);
    return status;
}
