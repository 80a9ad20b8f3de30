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

/* Shared state of one write. */
typedef struct pw {
    FILE               *f;
    const teller_store *st;
    int64_t             origin;
    int                 first; /* no event written yet (no comma before the next) */
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

teller_status teller_report_perfetto(const teller_store *st, const teller_diagnosis *d, FILE *out, teller_error *err)
{
    if (!st || !out)
        return teller_error_set(err, TELLER_ERR_ARG, "perfetto", 0, "no store or no output stream");
    const teller_events *ev = teller_store_events(st);
    size_t nsrc = teller_store_num_sources(st);
    size_t ndiag = d ? d->n : 0;
    rep_row *rows = NULL;
    size_t nrows = 0;
    int32_t *ntid = calloc(nsrc + 1, sizeof *ntid);
    int32_t *root_tid = calloc(nsrc + 1, sizeof *root_tid); /* per source: its thread of root markers, 0: none yet */
    size_t ncul_cap = ndiag + 1, nblame = 0;
    culprit_ref *cul = malloc(ncul_cap * sizeof *cul);
    rep_blame *blame = NULL; /* the abnormal steps whose root rank holds no culprit */
    uint32_t *blame_of = malloc((ndiag + 1) * sizeof *blame_of); /* per step: index into blame, or TELLER_NONE */
    int64_t *cul_pid = malloc((ndiag + 1) * sizeof *cul_pid);
    int32_t *cul_tid = malloc((ndiag + 1) * sizeof *cul_tid);
    sorted_ev *tmp = NULL;
    size_t tmp_cap = 0;
    lanes L = {0};
    teller_status status = TELLER_OK;
    if (!ntid || !root_tid || !cul || !blame_of || !cul_pid || !cul_tid || rep_rows(st, &rows, &nrows) != 0) {
        status = teller_error_set(err, TELLER_ERR_NOMEM, "perfetto", 0, "out of memory");
        goto done;
    }

    /* Culprits of abnormal steps (only ever on the root rank: rep_blame)
     * and the calls that waited for a root rank that has none, sorted by
     * event for lookup while writing. */
    size_t ncul = 0;
    for (size_t i = 0; i < ndiag; i++) {
        const teller_diag_step *s = &d->steps[i];
        cul_pid[i] = -1;
        cul_tid[i] = -1;
        blame_of[i] = TELLER_NONE;
        if (!s->pred.abnormal)
            continue;
        rep_blame b;
        rep_blame_of(st, s, &b);
        if (b.culprit != TELLER_NONE) {
            if (!(ev->flags[b.culprit] & TELLER_F_COUNTER))
                cul[ncul++] = (culprit_ref){b.culprit, (uint32_t)i, 0};
            continue;
        }
        rep_blame *g = realloc(blame, (nblame + 1) * sizeof *g);
        culprit_ref *gc = ncul + b.nvictims >= ncul_cap ? realloc(cul, (ncul_cap += b.nvictims) * sizeof *gc) : cul;
        if (gc)
            cul = gc;
        if (g)
            blame = g;
        if (!g || !gc) {
            status = teller_error_set(err, TELLER_ERR_NOMEM, "perfetto", 0, "out of memory");
            goto done;
        }
        blame[nblame] = b;
        blame_of[i] = (uint32_t)nblame++;
        for (size_t v = 0; v < b.nvictims; v++)
            cul[ncul++] = (culprit_ref){b.victims[v], (uint32_t)i, 1};
    }
    if (ncul > 1)
        qsort(cul, ncul, sizeof *cul, cmp_culprit);

    /* Origin: the earliest event or finding. */
    int64_t origin = INT64_MAX;
    for (size_t i = 0; i < ev->n; i++)
        if (ev->start_ns[i] < origin)
            origin = ev->start_ns[i];
    for (size_t i = 0; i < ndiag; i++)
        if (d->steps[i].pred.abnormal && d->steps[i].start_ns < origin)
            origin = d->steps[i].start_ns;
    if (origin == INT64_MAX)
        origin = 0;

    pw w = {out, st, origin, 1};
    fprintf(out, "{\"displayTimeUnit\":\"ms\",\"otherData\":{\"generator\":\"teller\",\"teller_origin_ns\":\"%" PRId64
                 "\"},\n\"traceEvents\":[",
            origin);

    /* One process per source. */
    for (size_t s = 0; s < nsrc; s++) {
        const teller_source *src = teller_store_source_c(st, (uint32_t)s);
        char name[96];
        source_name(src, (uint32_t)s, name, sizeof name);
        meta_name(&w, "process_name", (int64_t)s + 1, 0, name);
        meta_sort(&w, "process_sort_index", (int64_t)s + 1, 0, src->rank >= 0 ? src->rank : (int64_t)s + 100000);
    }

    for (size_t r = 0; r < nrows; r++) {
        const rep_row *row = &rows[r];
        int64_t pid = (int64_t)row->source + 1;
        char base[96];
        if (row->gpu)
            snprintf(base, sizeof base, "stream %d (device %d)", row->tid, row->pid);
        else
            snprintf(base, sizeof base, "thread %d", row->tid);
        /* The order of events in the row: as stored when sorted, else sorted here. */
        const sorted_ev *order = NULL;
        if (!row->sorted) {
            if (row->n > tmp_cap) {
                sorted_ev *g = realloc(tmp, row->n * sizeof *g);
                if (!g) {
                    status = teller_error_set(err, TELLER_ERR_NOMEM, "perfetto", 0, "out of memory");
                    goto done;
                }
                tmp = g;
                tmp_cap = row->n;
            }
            for (uint32_t k = 0; k < row->n; k++) {
                uint32_t e = row->first + k;
                tmp[k] = (sorted_ev){ev->start_ns[e], ev->dur_ns[e], e};
            }
            qsort(tmp, row->n, sizeof *tmp, cmp_sorted_ev);
            order = tmp;
        }
        lanes_reset(&L);
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
            long li = lane_place(&L, s0, e0);
            if (li == -2) {
                if (!left_out++)
                    left_at = s0;
                continue;
            }
            if (li < 0) {
                status = teller_error_set(err, TELLER_ERR_NOMEM, "perfetto", 0, "out of memory");
                goto done;
            }
            if ((size_t)li >= nlane_tid) { /* a new lane: name its thread */
                char name[128];
                int32_t tid = ++ntid[row->source];
                if (li == 0)
                    snprintf(name, sizeof name, "%s", base);
                else
                    snprintf(name, sizeof name, "%s (overlap %ld)", base, li);
                meta_name(&w, "thread_name", pid, tid, name);
                meta_sort(&w, "thread_sort_index", pid, tid, (row->gpu ? 1000000 : 0) + tid);
                lane_tid[nlane_tid++] = tid;
            }
            /* Is it a culprit, or a call that waited for a root rank? */
            uint32_t cstep = UINT32_MAX, vstep = UINT32_MAX;
            if (ncul) {
                size_t lo = 0, hi = ncul;
                while (lo < hi) {
                    size_t mid = (lo + hi) / 2;
                    if (cul[mid].e < e)
                        lo = mid + 1;
                    else
                        hi = mid;
                }
                for (size_t c = lo; c < ncul && cul[c].e == e; c++) {
                    uint32_t si = cul[c].step_idx;
                    if (cul[c].waited) {
                        if (vstep == UINT32_MAX)
                            vstep = d->steps[si].pred.step;
                        continue;
                    }
                    cul_pid[si] = pid;
                    cul_tid[si] = lane_tid[li];
                    if (cstep == UINT32_MAX)
                        cstep = d->steps[si].pred.step;
                }
            }
            put_event(&w, e, pid, lane_tid[li], cstep, vstep);
        }
        if (left_out && nlane_tid) { /* said where the row's first lane is, at the first left out */
            char name[192];
            snprintf(name, sizeof name, "teller: %" PRIu64 " slices of %s left out: each crossed %d others",
                     left_out, base, (int)MAX_LANES);
            sep(&w);
            fputs("{\"ph\":\"i\",\"s\":\"t\",\"cat\":\"teller\",\"name\":", out);
            teller_json_put(out, name);
            fprintf(out, ",\"pid\":%" PRId64 ",\"tid\":%d,\"ts\":", pid, lane_tid[0]);
            put_us(out, left_at - origin);
            fputs("}", out);
        }
    }

    /* The findings. */
    if (d) {
        int64_t fpid = (int64_t)nsrc + 1;
        meta_name(&w, "process_name", fpid, 0, "teller findings");
        meta_sort(&w, "process_sort_index", fpid, 0, -1);
        meta_name(&w, "thread_name", fpid, 1, "teller findings");
        meta_name(&w, "thread_name", fpid, 2, "abnormal step windows");
        /* Instants, one per abnormal step. */
        for (size_t i = 0; i < ndiag; i++) {
            const teller_diag_step *s = &d->steps[i];
            if (!s->pred.abnormal)
                continue;
            sep(&w);
            fprintf(out, "{\"ph\":\"i\",\"s\":\"t\",\"cat\":\"teller\",\"name\":");
            char name[128];
            snprintf(name, sizeof name, "step %u: %s", s->pred.step, s->fault[0] ? s->fault : s->pred.fault_type);
            teller_json_put(out, name);
            fprintf(out, ",\"pid\":%" PRId64 ",\"tid\":1,\"ts\":", fpid);
            put_us(out, s->start_ns - origin);
            fprintf(out, ",\"args\":{\"step\":%u,\"score\":%.4f,\"fault_type\":", s->pred.step, s->pred.score);
            teller_json_put(out, s->pred.fault_type);
            fputs(",\"fault\":", out);
            teller_json_put(out, s->fault);
            fprintf(out, ",\"rank\":%d,\"node\":%d,\"op\":", s->root_rank, s->root_node);
            teller_json_put(out, s->pred.ncand > 0 ? s->pred.cand[0].op : "");
            fputs(",\"layer\":", out);
            teller_json_put(out, s->pred.ncand > 0 ? s->pred.cand[0].layer : "");
            fprintf(out, ",\"dur_ms\":%.6f,\"usual_ms\":%.6f,\"excess_ms\":%.6f,\"explanation\":",
                    (double)s->dur_ns / 1e6, (double)s->usual_ns / 1e6, (double)s->excess_ns / 1e6);
            teller_json_put(out, s->pred.explanation);
            if (blame_of[i] != TELLER_NONE) {
                const rep_blame *b = &blame[blame_of[i]];
                fprintf(out, ",\"root_never_launched\":%s,\"root_trace_loaded\":%s,\"waiting_ranks\":[",
                        b->missing ? "true" : "false", b->unloaded ? "false" : "true");
                for (size_t v = 0; v < b->nvictims; v++)
                    fprintf(out, "%s%d", v ? "," : "", teller_store_event_rank(st, b->victims[v]));
                fprintf(out, "],\"waited_ms\":%.6f", (double)b->waited_ns / 1e6);
            }
            fputs("}}", out);
            /* a root rank without a culprit event: its marker, on its own process */
            size_t rs = nsrc;
            if (blame_of[i] != TELLER_NONE && s->root_rank >= 0)
                for (rs = 0; rs < nsrc && teller_store_source_c(st, (uint32_t)rs)->rank != s->root_rank; rs++)
                    ;
            if (rs == nsrc)
                continue;
            if (!root_tid[rs]) {
                root_tid[rs] = ++ntid[rs];
                meta_name(&w, "thread_name", (int64_t)rs + 1, root_tid[rs], "teller: root of a finding");
                meta_sort(&w, "thread_sort_index", (int64_t)rs + 1, root_tid[rs], -1);
            }
            char op[256];
            teller_name_normalize(s->pred.ncand > 0 ? s->pred.cand[0].op : "", op, sizeof op);
            if (blame[blame_of[i]].missing)
                snprintf(name, sizeof name, "rank %d never launched %.80s (step %u)", s->root_rank, op, s->pred.step);
            else
                snprintf(name, sizeof name, "rank %d: root of step %u", s->root_rank, s->pred.step);
            sep(&w);
            fputs("{\"ph\":\"i\",\"s\":\"t\",\"cat\":\"teller\",\"name\":", out);
            teller_json_put(out, name);
            fprintf(out, ",\"pid\":%zu,\"tid\":%d,\"ts\":", rs + 1, root_tid[rs]);
            put_us(out, s->start_ns - origin);
            fprintf(out, ",\"args\":{\"teller_root\":\"step %u\"}}", s->pred.step);
            cul_pid[i] = (int64_t)rs + 1;
            cul_tid[i] = root_tid[rs];
        }
        /* Step windows as slices (nesting by the same rule), each with a
         * flow arrow to its culprit. Abnormal steps in start order. */
        size_t nab = 0;
        sorted_ev *win = malloc((ndiag + 1) * sizeof *win);
        if (!win) {
            status = teller_error_set(err, TELLER_ERR_NOMEM, "perfetto", 0, "out of memory");
            goto done;
        }
        for (size_t i = 0; i < ndiag; i++)
            if (d->steps[i].pred.abnormal)
                win[nab++] = (sorted_ev){d->steps[i].start_ns, d->steps[i].dur_ns > 0 ? d->steps[i].dur_ns : 0,
                                         (uint32_t)i};
        qsort(win, nab, sizeof *win, cmp_sorted_ev);
        lanes_reset(&L);
        int32_t nwin_tid = 1; /* tids 2.. are the window lanes */
        for (size_t k = 0; k < nab; k++) {
            const teller_diag_step *s = &d->steps[win[k].e];
            long li = lane_place(&L, win[k].start, win[k].start + win[k].dur);
            if (li == -2)
                continue; /* crossing MAX_LANES other windows: its instant above still marks it */
            if (li < 0) {
                free(win);
                status = teller_error_set(err, TELLER_ERR_NOMEM, "perfetto", 0, "out of memory");
                goto done;
            }
            int32_t tid = 2 + (int32_t)li;
            if (tid > nwin_tid) {
                nwin_tid = tid;
                if (li > 0) {
                    char name[64];
                    snprintf(name, sizeof name, "abnormal step windows (overlap %ld)", li);
                    meta_name(&w, "thread_name", fpid, tid, name);
                }
            }
            char name[128];
            snprintf(name, sizeof name, "step %u: %s (%.2f)", s->pred.step, s->fault[0] ? s->fault : s->pred.fault_type,
                     s->pred.score);
            sep(&w);
            fputs("{\"ph\":\"X\",\"cat\":\"teller\",\"name\":", out);
            teller_json_put(out, name);
            fprintf(out, ",\"pid\":%" PRId64 ",\"tid\":%d,\"ts\":", fpid, tid);
            put_us(out, win[k].start - origin);
            fputs(",\"dur\":", out);
            put_us(out, win[k].dur);
            fputs(",\"args\":{\"explanation\":", out);
            teller_json_put(out, s->pred.explanation);
            fputs("}}", out);
            uint32_t si = win[k].e;
            if (cul_pid[si] >= 0) {
                /* to the culprit's start, or to the root rank's marker */
                int64_t to = blame_of[si] == TELLER_NONE ? ev->start_ns[s->culprit_event] : s->start_ns;
                sep(&w);
                fprintf(out, "{\"ph\":\"s\",\"cat\":\"teller\",\"name\":\"teller culprit\",\"id\":%u,\"pid\":%" PRId64
                             ",\"tid\":%d,\"ts\":",
                        si + 1, fpid, tid);
                put_us(out, win[k].start - origin);
                fputs("}", out);
                sep(&w);
                fprintf(out, "{\"ph\":\"f\",\"bp\":\"e\",\"cat\":\"teller\",\"name\":\"teller culprit\",\"id\":%u,\"pid\":%"
                             PRId64 ",\"tid\":%d,\"ts\":",
                        si + 1, cul_pid[si], cul_tid[si]);
                put_us(out, to - origin);
                fputs("}", out);
            }
        }
        free(win);
    }
    fputs("\n]}\n", out);
    if (fflush(out) != 0 || ferror(out))
        status = teller_error_set(err, TELLER_ERR_IO, "perfetto", 0, "write failed");

done:
    lanes_reset(&L);
    free(L.l);
    free(tmp);
    free(rows);
    free(ntid);
    free(root_tid);
    free(cul);
    free(blame);
    free(blame_of);
    free(cul_pid);
    free(cul_tid);
    return status;
}
