/*
 * html.c - the self-contained HTML report (report.h).
 *
 * One page, no external resources and no script: inline CSS and inline
 * SVG. Every string from a trace or a log goes through rep_html. Every
 * number the page states about a step is one of the step's facts
 * (diagnose.h teller_fact), printed as its text inside an element marked
 * data-fact="STEP:I", and every explanation sits in a <p
 * data-explains="STEP">, so that `teller diagnose --check --html` reads
 * the page as it reads the sentences (check.h); durations that are no fact
 * (an event's own time, tooltips, axes) are printed by teller_fmt_dur too.
 *
 * The SVGs have a fixed pixel size and their text an explicit font-size
 * attribute; each sits in a box that scrolls sideways, so a narrow window
 * scrolls them rather than shrinking their labels. The timelines stay
 * small on big runs: each lane draws only its main rows (the rank's
 * step-marker thread at depth 0-1, every GPU stream) inside the window,
 * and slices narrower than SMALL_PX that touch each other within a pixel
 * are merged into one rectangle, so a lane holds at most about one
 * rectangle per pixel of width whatever the number of events.
 */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "teller/report.h"
#include "teller/tree.h"
#include "report_internal.h"

/* Timeline geometry, in pixels: the width fits a step's section in the
 * page's widest layout, so that it scrolls only in narrower windows. */
#define TL_W       1140.0 /* whole width */
#define TL_X0      150.0  /* left edge of the plot (labels before) */
#define TL_X1      1130.0 /* right edge of the plot */
#define TL_TOP     30     /* band labels and the culprit marker */
#define TL_CPU_H   22     /* CPU lane: depth 0 and depth 1, 10 px each */
#define TL_GPU_H   12
#define TL_GAP     3
#define TL_AXIS_H  30
#define TL_RANKS   32     /* ranks drawn at most (a fleet's thousand lanes would read as noise) */
#define SMALL_PX   2.0    /* slices narrower than this may be merged */
#define TITLE_PX   4.0    /* slices at least this wide get a tooltip */
#define MERGE_GAP  1.0    /* ... with a neighbour less than this far */
#define BACKWALK   64     /* events before the window looked at for overlap */
#define SVG_FONT_PX 11    /* the charts' text, in pixels (drawn unscaled) */

static const char CSS[] =
    "body{font:14px/1.45 system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;margin:0 auto;max-width:1240px;"
    "padding:16px 24px;color:#1d2330;background:#fff}"
    "h1{font-size:24px;margin:8px 0 4px;overflow-wrap:break-word}h2{font-size:19px;margin:28px 0 8px;border-bottom:2px solid #e3e7ee;"
    "padding-bottom:4px}h3{font-size:16px;margin:18px 0 6px}"
    ".meta{color:#5a6478;margin:0 0 12px}"
    "table{border-collapse:collapse;margin:6px 0 12px;font-size:13px}"
    "th,td{border:1px solid #dde2ea;padding:3px 8px;text-align:left;vertical-align:top}"
    "th{background:#f3f5f9;font-weight:600}td.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}"
    "tr.root td{background:#fff3f0}"
    "code,pre,.mono{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12px}"
    "pre{background:#f6f8fa;border:1px solid #e1e4e8;padding:6px 8px;margin:2px 0 8px;white-space:pre-wrap;"
    "overflow-wrap:anywhere}"
    ".op{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12px;overflow-wrap:break-word}"
    ".tw{max-width:100%;overflow-x:auto}table.sum tr.ex td{border-top:none;padding:0 8px 8px 24px;color:#3a4256;"
    "overflow-wrap:break-word}table.sum tr:not(.ex) td{border-bottom:none}table.sum p{margin:0}"
    ".blame{font-weight:600;color:#b3161b}"
    ".step{border:1px solid #dde2ea;border-radius:6px;padding:4px 16px 12px;margin:18px 0;background:#fcfdfe}"
    ".expl{background:#fff8e6;border-left:4px solid #f0a500;padding:6px 10px;margin:8px 0}"
    ".step.slow .expl{border-left-color:#c98a00;background:#fffbef}"
    ".tag{display:inline-block;min-width:64px;font-size:11px;font-weight:600;color:#fff;background:#6b7a90;"
    "border-radius:3px;padding:0 5px;margin-right:6px;text-align:center}"
    ".tag.KERNEL{background:#3467c4}.tag.ENGINE{background:#7b4fb5}.tag.FRONTEND{background:#a68a1c}"
    ".tag.BACKEND{background:#2f8f7f}.tag.RUNTIME,.tag.DRIVER{background:#c06a14}.tag.SYNC{background:#777}"
    ".tag.MEMCPY,.tag.MEMSET{background:#3c9a3c}.tag.COMM{background:#e05a00}"
    "ol.chain{margin:4px 0 10px;padding-left:24px}ol.chain li{margin:1px 0}"
    "ol.chain li.cul{font-weight:600;color:#b3161b}.dur{color:#5a6478;margin-left:6px;white-space:nowrap}"
    ".note{color:#5a6478}"
    "svg{display:block;max-width:100%;height:auto}svg text{fill:#333}svg .ax{fill:#555}"
    ".sc{max-width:100%;overflow-x:auto;margin:4px 0}svg.fix{max-width:none}"
    ".bg{fill:#fafbfc}.band{fill:#eef1f5}.bandk{fill:#fff0c2}.grid{stroke:#d9dee6;stroke-width:.5}"
    ".sep{stroke:#b9c1cc;stroke-width:.6}"
    ".mk{fill:#7b4fb5}.le{fill:#a88bd1}.lf{fill:#e1cf7a}.lb{fill:#6cc0b0}.lr{fill:#f0a868}.ls{fill:#9a9a9a}"
    ".lo{fill:#c4c9d2}.gk{fill:#3f7fe0}.gc{fill:#f26b1d}.cc{fill:#f7a26b}.gm{fill:#3fae4a}.gs{fill:#7fcf86}"
    ".cul{fill:none;stroke:#d0021b;stroke-width:2}.culm{fill:#d0021b}"
    ".vic{fill:none;stroke:#7a3b00;stroke-width:1.5;stroke-dasharray:3 2}svg text.miss{fill:#d0021b;font-weight:600}"
    ".gap{fill:#f0a500;fill-opacity:.18;stroke:#c98a00;stroke-width:1.5;stroke-dasharray:4 2}"
    ".ok{fill:#8fa6c8}.ab{fill:#d0342c}.sl{fill:#f0a500}.usual{stroke:#1d2330;stroke-width:2;fill:none}"
    ".nys{fill:#fff;stroke:#1d2330;stroke-width:1}.cut{stroke:#fff;stroke-width:2;fill:none}"
    ".pt{font-weight:600}"
    ".legend span{display:inline-block;margin-right:14px;font-size:12px}";

/* Writing state. */
typedef struct hw {
    FILE                      *f;
    const teller_store        *st;
    const teller_diagnosis    *d;
    const teller_events       *ev;
    rep_row                   *rows;
    size_t                     nrows;
    int32_t                   *ranks;     /* distinct ranks, ascending */
    size_t                     nranks;
    size_t                    *main_row;  /* per rank: its main CPU row, SIZE_MAX if none */
    teller_step_summary       *sum;       /* per step row, may be NULL */
    size_t                     nsum;
    const teller_step         *steps;
    size_t                     nsteps;
    const teller_requests     *reqs;      /* may be NULL */
} hw;

static int cmp_i32(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

/* An abnormal step in the order of the summary. */
typedef struct worst {
    int64_t  excess_ns;
    double   score;
    uint32_t step;
    size_t   i; /* index into d->steps */
} worst;

/* Worst first: the step that cost most (its excess; a hang costs its
 * whole wait), then the higher score, then the earlier step. */
static int cmp_worst(const void *a, const void *b)
{
    const worst *x = a, *y = b;
    if (x->excess_ns != y->excess_ns)
        return x->excess_ns > y->excess_ns ? -1 : 1;
    if (x->score != y->score)
        return x->score > y->score ? -1 : 1;
    return (x->step > y->step) - (x->step < y->step);
}

/* rank's index in w->ranks (distinct, ascending), SIZE_MAX when absent */
static size_t rank_index(const hw *w, int32_t rank)
{
    size_t lo = 0, hi = w->nranks;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (w->ranks[mid] < rank)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < w->nranks && w->ranks[lo] == rank ? lo : SIZE_MAX;
}

/* [start, end) of step k over every rank; 0 when the store has no such step. */
static int step_span(const hw *w, uint32_t k, int64_t *a, int64_t *b)
{
    size_t lo = 0, hi = w->nsteps;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (w->steps[mid].step < k)
            lo = mid + 1;
        else
            hi = mid;
    }
    int found = 0;
    for (size_t i = lo; i < w->nsteps && w->steps[i].step == k; i++) {
        if (!found || w->steps[i].start_ns < *a)
            *a = w->steps[i].start_ns;
        if (!found || w->steps[i].end_ns > *b)
            *b = w->steps[i].end_ns;
        found = 1;
    }
    return found;
}

/* Picks each rank's main CPU row: the thread of its step markers, else
 * the CPU row with the most events. */
static void pick_main_rows(hw *w)
{
    const teller_events *ev = w->ev;
    for (size_t r = 0; r < w->nranks; r++) {
        w->main_row[r] = SIZE_MAX;
        for (size_t i = 0; i < w->nsteps; i++) {
            if (w->steps[i].rank != w->ranks[r] || w->steps[i].marker == TELLER_NONE)
                continue;
            size_t row = rep_row_of(w->rows, w->nrows, w->steps[i].marker);
            if (row != SIZE_MAX) {
                w->main_row[r] = row;
                break;
            }
        }
        if (w->main_row[r] != SIZE_MAX)
            continue;
        uint32_t best = 0;
        for (size_t i = 0; i < w->nrows; i++)
            if (!w->rows[i].gpu && w->rows[i].rank == w->ranks[r] && w->rows[i].n > best) {
                best = w->rows[i].n;
                w->main_row[r] = i;
            }
    }
    (void)ev;
}

/* ---- facts ------------------------------------------------------------- */

/* The number of step s's facts that the diagnosis holds (0 for a
 * hand-made diagnosis without them). */
/* Step k of the store by its number in the run (a watch window's steps
 * are numbered from its diagnosis's step_base; a diff page has none), and
 * a diagnosed step by its number in the store (what facts, summaries and
 * requests say). */
static uint32_t run_step(const hw *w, uint32_t k) { return k + (w->d ? w->d->step_base : 0); }
static uint32_t store_step(const hw *w, const teller_diag_step *s) { return (uint32_t)(s - w->d->steps); }

static uint32_t nfacts(const hw *w, const teller_diag_step *s)
{
    const teller_diagnosis *d = w->d;
    return d->facts && s->first_fact <= d->nfacts && s->nfacts <= d->nfacts - s->first_fact ? s->nfacts : 0;
}

static const teller_fact *fact_at(const hw *w, const teller_diag_step *s, uint32_t i)
{
    return &w->d->facts[s->first_fact + i];
}

/* Step s's first fact of kind on rank (any rank: INT32_MIN) about event a
 * (any: TELLER_NONE), in step k (any: UINT32_MAX); UINT32_MAX when it has
 * none. */
static uint32_t find_fact(const hw *w, const teller_diag_step *s, teller_fact_kind kind, uint32_t k, int32_t rank,
                          uint32_t a)
{
    for (uint32_t i = 0; i < nfacts(w, s); i++) {
        const teller_fact *f = fact_at(w, s, i);
        if (f->kind == kind && (k == UINT32_MAX || f->step == k) && (rank == INT32_MIN || f->rank == rank) &&
            (a == TELLER_NONE || f->a == a))
            return i;
    }
    return UINT32_MAX;
}

/* Whether f is a step's usual duration: its run's, or with --baseline the
 * reference run's. */
static int is_usual(const teller_fact *f)
{
    return f->kind == TELLER_FACT_USUAL || (f->kind == TELLER_FACT_REFERENCE && f->count2 == 0);
}

/* Step s's usual duration's fact (UINT32_MAX when it has no yardstick). */
static uint32_t usual_fact(const hw *w, const teller_diag_step *s)
{
    for (uint32_t i = 0; i < nfacts(w, s); i++)
        if (fact_at(w, s, i)->step == store_step(w, s) && is_usual(fact_at(w, s, i)))
            return i;
    return UINT32_MAX;
}

/* The fact of how much longer than its usual step s took: its duration
 * less its usual (UINT32_MAX when it has no yardstick or took less). */
static uint32_t excess_fact(const hw *w, const teller_diag_step *s)
{
    uint32_t n = nfacts(w, s);
    for (uint32_t i = 0; i < n; i++) {
        const teller_fact *f = fact_at(w, s, i);
        if (f->kind == TELLER_FACT_DIFF && f->a < n && f->b < n && fact_at(w, s, f->a)->kind == TELLER_FACT_STEP &&
            is_usual(fact_at(w, s, f->b)))
            return i;
    }
    return UINT32_MAX;
}

/* Writes step s's fact i as the checker reads it: its text alone in an
 * element marked with the step's index and the fact's. */
static void put_fact(const hw *w, const teller_diag_step *s, uint32_t i)
{
    fprintf(w->f, "<span data-fact=\"%zu:%u\">", (size_t)(s - w->d->steps), i);
    rep_html(w->f, fact_at(w, s, i)->text, 0);
    fputs("</span>", w->f);
}

/* Event e's own duration: as step s's fact when it has one of it. */
static void put_event_dur(const hw *w, const teller_diag_step *s, uint32_t e)
{
    uint32_t i = find_fact(w, s, TELLER_FACT_EVENT, UINT32_MAX, INT32_MIN, e);
    char du[32];
    if (i != UINT32_MAX)
        put_fact(w, s, i);
    else
        fputs(teller_fmt_dur(du, sizeof du, (double)w->ev->dur_ns[e]), w->f);
}

/* Step s's duration: the fact of its longest rank's window when it has one. */
static void put_step_dur(const hw *w, const teller_diag_step *s)
{
    uint32_t i = find_fact(w, s, TELLER_FACT_STEP, store_step(w, s), s->dur_rank, TELLER_NONE);
    char du[32];
    if (i != UINT32_MAX)
        put_fact(w, s, i);
    else
        fputs(teller_fmt_dur(du, sizeof du, (double)s->dur_ns), w->f);
}

/* The kind of step s ("other" when the diagnosis has no group for it). */
static teller_step_kind kind_of(const hw *w, const teller_diag_step *s)
{
    return s->group < w->d->ngroups && w->d->groups ? w->d->groups[s->group].kind : TELLER_STEP_OTHER;
}

/* ---- timeline ---------------------------------------------------------- */

/* Opens a chart of width x height pixels, drawn at that size in a box
 * that scrolls sideways when the window is narrower (so that its labels
 * keep their size), with its font size stated for every text in it; the
 * caller writes its aria-label's text and closes the tag with "\">". */
static void svg_open(FILE *f, double width, int height)
{
    fprintf(f, "<div class=\"sc\"><svg class=\"fix\" viewBox=\"0 0 %.0f %d\" width=\"%.0f\" height=\"%d\" "
               "font-size=\"%d\" font-family=\"system-ui,sans-serif\" xmlns=\"http://www.w3.org/2000/svg\" "
               "role=\"img\" aria-label=\"",
            width, height, width, height, SVG_FONT_PX);
}

static void svg_close(FILE *f)
{
    fputs("</svg></div>\n", f);
}

/* Fill classes of the timeline (CSS above). */
enum { C_MK, C_LE, C_LF, C_LB, C_LR, C_LS, C_LO, C_GK, C_GC, C_CC, C_GM, C_GS, C_COUNT };
static const char *const CLS[C_COUNT] = {"mk", "le", "lf", "lb", "lr", "ls", "lo", "gk", "gc", "cc", "gm", "gs"};

/* A timeline being drawn. Rectangles too narrow for a tooltip are
 * collected per class into one path per lane (a fifth of the bytes of a
 * <rect> each); wider ones are written as <rect> with a <title>. */
typedef struct tl {
    FILE   *f;
    int64_t w0, w1; /* window, ns */
    double  scale;  /* px per ns */
    char   *path[C_COUNT];
    size_t  plen[C_COUNT], pcap[C_COUNT];
} tl;

/* Appends a rectangle to the path of class c; 0 when out of memory. */
static int path_rect(tl *t, int c, double x, int y, double wd, int h)
{
    char seg[96];
    int n = snprintf(seg, sizeof seg, "M%.1f %dh%.1fv%dh-%.1fz", x, y, wd, h, wd);
    if (n <= 0 || (size_t)n >= sizeof seg)
        return 0;
    if (t->plen[c] + (size_t)n + 1 > t->pcap[c]) {
        size_t nc = t->pcap[c] ? 2 * t->pcap[c] : 4096;
        while (nc < t->plen[c] + (size_t)n + 1)
            nc *= 2;
        char *g = realloc(t->path[c], nc);
        if (!g)
            return 0;
        t->path[c] = g;
        t->pcap[c] = nc;
    }
    memcpy(t->path[c] + t->plen[c], seg, (size_t)n + 1);
    t->plen[c] += (size_t)n;
    return 1;
}

/* Writes and empties the lane's paths. */
static void path_flush(tl *t)
{
    for (int c = 0; c < C_COUNT; c++)
        if (t->plen[c]) {
            fprintf(t->f, "<path class=\"%s\" d=\"%s\"/>", CLS[c], t->path[c]);
            t->plen[c] = 0;
        }
}

static double tl_x(const tl *t, int64_t ns)
{
    if (ns < t->w0)
        ns = t->w0;
    if (ns > t->w1)
        ns = t->w1;
    return TL_X0 + (double)(ns - t->w0) * t->scale;
}

/* A rectangle waiting to be written, grown by merging small neighbours. */
typedef struct pend {
    int         live;
    double      x0, x1;
    int         y, h;
    int         cls;
    uint32_t    count;
    uint32_t    e;     /* the event when count == 1 */
    int         small; /* may take more */
} pend;

static void pend_flush(const hw *w, tl *t, pend *p)
{
    FILE *f = t->f;
    if (!p->live)
        return;
    double wd = p->x1 - p->x0;
    if (wd < 0.5)
        wd = 0.5;
    p->live = 0;
    if (wd < TITLE_PX && path_rect(t, p->cls, p->x0, p->y, wd, p->h))
        return;
    fprintf(f, "<rect x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"%d\" class=\"%s\"", p->x0, p->y, wd, p->h,
            CLS[p->cls]);
    if (wd >= TITLE_PX) {
        fputs("><title>", f);
        if (p->count == 1) {
            char nm[256], du[32];
            teller_name_normalize(teller_store_str(w->st, w->ev->name[p->e]), nm, sizeof nm);
            rep_html(f, nm, 200);
            fprintf(f, " (%s)", teller_fmt_dur(du, sizeof du, (double)w->ev->dur_ns[p->e]));
        } else
            fprintf(f, "%u events", p->count);
        fputs("</title></rect>", f);
    } else
        fputs("/>", f);
}

static int ev_class(const teller_events *ev, uint32_t e)
{
    uint8_t fl = ev->flags[e];
    if (fl & TELLER_F_GPU) {
        if (fl & TELLER_F_COMM)
            return C_GC;
        switch (ev->layer[e]) {
        case TELLER_LAYER_KERNEL: return C_GK;
        case TELLER_LAYER_MEMCPY: return C_GM;
        case TELLER_LAYER_MEMSET: return C_GS;
        case TELLER_LAYER_SYNC: return C_LS;
        default: return C_LO;
        }
    }
    if (fl & TELLER_F_STEP)
        return C_MK;
    if (fl & TELLER_F_COMM)
        return C_CC;
    switch (ev->layer[e]) {
    case TELLER_LAYER_ENGINE: return C_LE;
    case TELLER_LAYER_FRONTEND: return C_LF;
    case TELLER_LAYER_BACKEND: return C_LB;
    case TELLER_LAYER_RUNTIME:
    case TELLER_LAYER_DRIVER: return C_LR;
    case TELLER_LAYER_SYNC: return C_LS;
    default: return C_LO;
    }
}

/* Adds one event to the lane's pending rectangle (sub-row sub). */
static void lane_add(const hw *w, tl *t, pend *p, uint32_t e, int y, int h)
{
    const teller_events *ev = w->ev;
    int64_t s = ev->start_ns[e], en = s + ev->dur_ns[e];
    if (en < t->w0 || s > t->w1 || (ev->flags[e] & TELLER_F_COUNTER))
        return;
    double x0 = tl_x(t, s), x1 = tl_x(t, en);
    int cls = ev_class(ev, e);
    int small = x1 - x0 < SMALL_PX;
    if (p->live && p->small && small && p->cls == cls && x0 <= p->x1 + MERGE_GAP) {
        if (x1 > p->x1)
            p->x1 = x1;
        if (x0 < p->x0)
            p->x0 = x0;
        p->count++;
        p->small = p->x1 - p->x0 < 4 * SMALL_PX; /* stop growing a merged bar past a few px */
        return;
    }
    pend_flush(w, t, p);
    *p = (pend){1, x0, x1, y, h, cls, 1, e, small};
}

/* Calls lane_add for the events of a row that fall in the window: those
 * starting inside it, plus the enclosing ones that started before (the
 * ancestors of the first, and up to BACKWALK events just before it). CPU
 * rows keep depth 0 and 1. Returns the number of events seen in the window. */
static size_t draw_row(const hw *w, tl *t, size_t ri, int y, int cpu, pend *p, int dry)
{
    const rep_row *row = &w->rows[ri];
    const teller_events *ev = w->ev;
    uint32_t lo = row->first, end = row->first + row->n;
    size_t seen = 0;
    if (row->sorted) {
        uint32_t a = row->first, b = end;
        while (a < b) {
            uint32_t mid = a + (b - a) / 2;
            if (ev->start_ns[mid] < t->w0)
                a = mid + 1;
            else
                b = mid;
        }
        lo = a;
        uint32_t back = lo - row->first > BACKWALK ? lo - BACKWALK : row->first;
        /* ancestors beyond the back-walk, outermost first */
        if (cpu && lo < end) {
            uint32_t chain[8];
            int nc = 0;
            for (uint32_t q = ev->parent[lo]; q != TELLER_NONE && nc < 8; q = ev->parent[q])
                if (q >= row->first && q < back && ev->depth[q] <= 1)
                    chain[nc++] = q;
            for (int i = nc - 1; i >= 0; i--) {
                seen++;
                if (!dry)
                    lane_add(w, t, &p[ev->depth[chain[i]]], chain[i], y + 10 * ev->depth[chain[i]], 9);
            }
        }
        for (uint32_t e = back; e < lo; e++) {
            if (ev->start_ns[e] + ev->dur_ns[e] <= t->w0 || (cpu && ev->depth[e] > 1))
                continue;
            seen++;
            if (!dry)
                lane_add(w, t, cpu ? &p[ev->depth[e]] : p, e, cpu ? y + 10 * ev->depth[e] : y, cpu ? 9 : TL_GPU_H - 2);
        }
    }
    for (uint32_t e = lo; e < end; e++) {
        if (row->sorted && ev->start_ns[e] > t->w1)
            break;
        if (ev->start_ns[e] > t->w1 || ev->start_ns[e] + ev->dur_ns[e] < t->w0 || (cpu && ev->depth[e] > 1))
            continue;
        seen++;
        if (!dry)
            lane_add(w, t, cpu ? &p[ev->depth[e]] : p, e, cpu ? y + 10 * ev->depth[e] : y, cpu ? 9 : TL_GPU_H - 2);
    }
    return seen;
}

/* A tick step of 1, 2 or 5 times a power of ten giving at most about n
 * ticks over span. */
static double nice_step(double span, int n)
{
    double raw = span / n, p = 1e-9;
    while (p * 10 <= raw)
        p *= 10;
    if (p >= raw)
        return p;
    if (2 * p >= raw)
        return 2 * p;
    if (5 * p >= raw)
        return 5 * p;
    return 10 * p;
}

typedef struct tl_lane {
    size_t  row;
    int     cpu;
    size_t  rank; /* index into w->ranks */
    int     y, h;
} tl_lane;

/* Outlines event e with class cls ("cul": the culprit, with its marker
 * above the plot; "vic": a rank that waited) on its lane, or on its
 * rank's CPU lane when its thread or depth is not drawn; the tooltip
 * gives the event's own duration. */
static void outline(const hw *w, const tl *t, const tl_lane *ln, size_t nl, uint32_t e, const char *cls)
{
    FILE *f = t->f;
    size_t row = rep_row_of(w->rows, w->nrows, e);
    const tl_lane *hit = NULL;
    int cy = 0, ch = 0;
    for (size_t l = 0; l < nl && row != SIZE_MAX; l++) {
        if (ln[l].row != row)
            continue;
        if (!ln[l].cpu) {
            hit = &ln[l];
            cy = ln[l].y;
            ch = TL_GPU_H;
        } else if (w->ev->depth[e] <= 1) {
            hit = &ln[l];
            cy = ln[l].y - 1 + 10 * w->ev->depth[e];
            ch = 11;
        }
    }
    if (!hit && row != SIZE_MAX) {
        size_t r = rank_index(w, w->rows[row].rank);
        for (size_t l = 0; l < nl && r != SIZE_MAX; l++)
            if (ln[l].cpu && ln[l].rank == r) {
                hit = &ln[l];
                cy = ln[l].y - 1;
                ch = TL_CPU_H - 1;
            }
    }
    int64_t cs = w->ev->start_ns[e], ce = cs + w->ev->dur_ns[e];
    if (!hit || ce < t->w0 || cs > t->w1)
        return;
    double x0 = tl_x(t, cs), x1 = tl_x(t, ce);
    if (x1 - x0 < 3) {
        x0 -= 1.5;
        x1 = x0 + 3;
    }
    char du[32];
    int cul = strcmp(cls, "cul") == 0;
    fprintf(f, "<rect class=\"%s\" x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"%d\"><title>%s: ", cls, x0, cy,
            x1 - x0, ch, cul ? "culprit" : "waited");
    rep_html(f, teller_store_str(w->st, w->ev->name[e]), 300);
    fprintf(f, " (%s)</title></rect>", teller_fmt_dur(du, sizeof du, (double)w->ev->dur_ns[e]));
    if (cul)
        fprintf(f, "<path class=\"culm\" d=\"M%.1f %d l-5 -8 h10 z\"/>", (x0 + x1) / 2, TL_TOP - 14);
    fputc('\n', f);
}

/* The stretches step s's facts name (a HOLE: no host op of the process
 * ran; a QUIET one: neither that nor GPU work), drawn over every lane of
 * their rank with the fact's text in the tooltip. */
static void gaps(const hw *w, const teller_diag_step *s, const tl *t, const tl_lane *ln, size_t nl)
{
    for (uint32_t i = 0; i < nfacts(w, s); i++) {
        const teller_fact *g = fact_at(w, s, i);
        if ((g->kind != TELLER_FACT_HOLE && g->kind != TELLER_FACT_QUIET) || g->t1 < t->w0 || g->t0 > t->w1)
            continue;
        size_t r = rank_index(w, g->rank);
        int y0 = -1, y1 = -1;
        for (size_t l = 0; l < nl && r != SIZE_MAX; l++)
            if (ln[l].rank == r) {
                if (y0 < 0)
                    y0 = ln[l].y - 2;
                y1 = ln[l].y + ln[l].h + 1;
            }
        if (y0 < 0)
            continue;
        double x0 = tl_x(t, g->t0), x1 = tl_x(t, g->t1);
        fprintf(t->f, "<rect class=\"gap\" x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"%d\"><title>rank %d: %s for ",
                x0, y0, x1 - x0 > 1 ? x1 - x0 : 1, y1 - y0, g->rank,
                g->kind == TELLER_FACT_HOLE ? "no host op" : "neither GPU work nor a host op");
        rep_html(t->f, g->text, 0);
        fputs("</title></rect>\n", t->f);
    }
}

/* Marks rank (w->ranks' index) to be drawn, while fewer than TL_RANKS are. */
static void pick_rank(const hw *w, int32_t rank, uint8_t *draw, size_t *n)
{
    size_t r = rank_index(w, rank);
    if (r != SIZE_MAX && !draw[r] && *n < TL_RANKS) {
        draw[r] = 1;
        (*n)++;
    }
}

/* The ranks a step's timeline draws: every one up to TL_RANKS; past that,
 * the root rank, the rank of a culprit elsewhere, the ranks that waited,
 * then the ranks nearest the root's (its node's, its pipeline neighbours;
 * the lowest when no rank is the root). Writes the heading, and which
 * ranks were drawn. */
static void timeline_ranks(const hw *w, const teller_diag_step *s, const rep_blame *bl, uint8_t *draw)
{
    size_t n = 0;
    memset(draw, w->nranks <= TL_RANKS, w->nranks);
    if (w->nranks <= TL_RANKS) {
        fputs("<h4>Timeline of every rank</h4>\n", w->f);
        return;
    }
    pick_rank(w, s->root_rank, draw, &n);
    pick_rank(w, bl->other_rank, draw, &n);
    for (size_t v = 0; v < bl->nvictims; v++)
        pick_rank(w, teller_store_event_rank(w->st, bl->victims[v]), draw, &n);
    size_t at = rank_index(w, s->root_rank), lo = at == SIZE_MAX ? 0 : at, hi = lo + 1;
    while (n < TL_RANKS && (lo > 0 || hi < w->nranks)) { /* outwards from the root's index */
        if (lo > 0)
            pick_rank(w, w->ranks[--lo], draw, &n);
        if (hi < w->nranks)
            pick_rank(w, w->ranks[hi++], draw, &n);
    }
    fprintf(w->f, "<h4>Timeline of %zu of the %zu ranks</h4>\n<p class=\"note\">%s, here and in the table of ranks "
                  "below; the Perfetto trace (<code>teller diagnose --perfetto</code>) has every rank.</p>\n",
            n, w->nranks,
            at == SIZE_MAX ? "The lowest ranks"
                           : "The root rank first, then the ranks that waited for it and those nearest it");
}

/* The span of step s, [*k0, *k1], and the window its timeline shows,
 * [*w0, *w1]: an eighth of the span on each side, widened to the
 * neighbouring steps but never past one and a half spans. A step whose
 * trace ends long before the step did (a hang the watchdog took the
 * process down in: nothing after it was recorded) is drawn as far as the
 * trace goes, with a note saying so. Returns 0, after a note, when no time
 * window is known for the step. */
static int timeline_window(const hw *w, const teller_diag_step *s, int64_t *k0, int64_t *k1, int64_t *w0,
                           int64_t *w1)
{
    FILE *f = w->f;
    uint32_t k = store_step(w, s);
    *k0 = *k1 = 0;
    if (s->dur_ns > 0) {
        *k0 = s->start_ns;
        *k1 = s->start_ns + s->dur_ns;
    } else if (!step_span(w, k, k0, k1)) {
        fputs("<p class=\"note\">No time window is known for this step; no timeline.</p>\n", f);
        return 0;
    }
    int64_t a = 0, b = 0;
    if (s->dur_ns > 0 && step_span(w, k, &a, &b) && b > *k0 && (double)(b - *k0) * 100 < (double)s->dur_ns) {
        char held[32];
        fprintf(f, "<p class=\"note\">The trace holds the first %s of this step's ",
                teller_fmt_dur(held, sizeof held, (double)(b - *k0)));
        put_step_dur(w, s);
        fputs(": what came after was never recorded.</p>\n", f);
        *k1 = b;
    }
    if (*k1 <= *k0)
        *k1 = *k0 + 1000;
    int64_t len = *k1 - *k0;
    *w0 = *k0 - len / 8;
    *w1 = *k1 + len / 8;
    if (k > 0 && step_span(w, k - 1, &a, &b) && a < *w0)
        *w0 = a;
    if (step_span(w, k + 1, &a, &b) && b > *w1)
        *w1 = b;
    /* neighbours give context, not the scale */
    if (*w0 < *k0 - 3 * len / 2)
        *w0 = *k0 - 3 * len / 2;
    if (*w1 > *k1 + 3 * len / 2)
        *w1 = *k1 + 3 * len / 2;
    return 1;
}

/* The lanes of the ranks drawn (draw: per rank, w->ranks' index), into ln
 * (room for w->nrows + 1): per rank, its main CPU thread then its GPU
 * streams with work in the window; of a fleet's few, the root rank's
 * lanes first. Returns their number; *bottom is the y below the last. */
static size_t timeline_lanes(const hw *w, const teller_diag_step *s, const uint8_t *draw, tl *t, tl_lane *ln,
                             int *bottom)
{
    size_t nl = 0;
    int y = TL_TOP;
    size_t top = w->nranks > TL_RANKS ? rank_index(w, s->root_rank) : SIZE_MAX;
    for (size_t q = 0; q < w->nranks + (top != SIZE_MAX); q++) {
        size_t r = top == SIZE_MAX ? q : q == 0 ? top : q - 1;
        if (!draw[r] || (q > 0 && r == top))
            continue;
        if (w->main_row[r] != SIZE_MAX) {
            ln[nl++] = (tl_lane){w->main_row[r], 1, r, y, TL_CPU_H};
            y += TL_CPU_H + TL_GAP;
        }
        for (size_t i = 0; i < w->nrows; i++) {
            if (!w->rows[i].gpu || w->rows[i].rank != w->ranks[r])
                continue;
            if (draw_row(w, t, i, 0, 0, NULL, 1) == 0)
                continue;
            ln[nl++] = (tl_lane){i, 0, r, y, TL_GPU_H};
            y += TL_GPU_H + TL_GAP;
        }
        y += 4;
    }
    *bottom = y;
    return nl;
}

/* The bands of step k ([k0, k1]) and of its neighbours inside the window,
 * each labelled with its step, down to y. */
static void step_bands(const hw *w, const tl *t, uint32_t k, int64_t k0, int64_t k1, int y)
{
    for (int dk = -1; dk <= 1; dk++) {
        if ((dk < 0 && k == 0) || (dk > 0 && k == UINT32_MAX))
            continue;
        uint32_t j = (uint32_t)((int64_t)k + dk);
        int64_t ba, bb;
        if (dk == 0) {
            ba = k0;
            bb = k1;
        } else if (!step_span(w, j, &ba, &bb))
            continue;
        if (bb < t->w0 || ba > t->w1)
            continue;
        double x0 = tl_x(t, ba), x1 = tl_x(t, bb);
        fprintf(t->f, "<rect class=\"%s\" x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"%d\"/>", dk ? "band" : "bandk",
                x0, TL_TOP - 14, x1 - x0 > 0.5 ? x1 - x0 : 0.5, y - TL_TOP + 14);
        fprintf(t->f, "<text x=\"%.1f\" y=\"%d\"%s>step %u</text>\n", x0 + 3, TL_TOP - 4,
                dk ? "" : " font-weight=\"600\"", run_step(w, j));
    }
}

/* The grid and axis below y, in ms from the start of step k (k0); in s
 * past 10 s, so that a hung step's ticks read 100, not 100000. */
static void time_axis(const tl *t, uint32_t k, int64_t k0, int y)
{
    FILE *f = t->f;
    int in_s = t->w1 - t->w0 > 10 * (int64_t)1000000000;
    double span_ms = (double)(t->w1 - t->w0) / 1e6, st_ms = nice_step(span_ms, 10);
    double first = (double)(t->w0 - k0) / 1e6;
    long i0 = (long)(first / st_ms);
    if ((double)i0 * st_ms < first)
        i0++;
    for (long i = i0;; i++) {
        double ms = (double)i * st_ms;
        int64_t ns = k0 + (int64_t)(ms * 1e6);
        if (ns > t->w1)
            break;
        double x = tl_x(t, ns);
        fprintf(f, "<line class=\"grid\" x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\"/>", x, TL_TOP - 14, x, y + 3);
        fprintf(f, "<text class=\"ax\" x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%g</text>\n", x, y + 14,
                in_s ? ms / 1000 : ms);
    }
    fprintf(f, "<text class=\"ax\" x=\"%.0f\" y=\"%d\" text-anchor=\"end\">%s from the start of step %u</text>\n",
            TL_X1, y + 27, in_s ? "s" : "ms", k);
}

/* Every lane: its label and its slices, with a rule between ranks. */
static void draw_lanes(const hw *w, tl *t, const tl_lane *ln, size_t nl)
{
    FILE *f = t->f;
    size_t prev_rank = SIZE_MAX;
    for (size_t l = 0; l < nl; l++) {
        const rep_row *row = &w->rows[ln[l].row];
        if (prev_rank != SIZE_MAX && ln[l].rank != prev_rank)
            fprintf(f, "<line class=\"sep\" x1=\"0\" y1=\"%d\" x2=\"%.0f\" y2=\"%d\"/>\n", ln[l].y - 3, TL_X1,
                    ln[l].y - 3);
        prev_rank = ln[l].rank;
        if (ln[l].cpu)
            fprintf(f, "<text x=\"4\" y=\"%d\">rank %d \xc2\xb7 cpu %d</text>\n", ln[l].y + 14, row->rank,
                    row->tid);
        else
            fprintf(f, "<text x=\"4\" y=\"%d\">rank %d \xc2\xb7 stream %d</text>\n", ln[l].y + 9,
                    row->rank, row->tid);
        pend p[2] = {{0}, {0}};
        draw_row(w, t, ln[l].row, ln[l].y + (ln[l].cpu ? 0 : 1), ln[l].cpu, p, 0);
        pend_flush(w, t, &p[0]);
        pend_flush(w, t, &p[1]);
        path_flush(t);
        fputc('\n', f);
    }
}

/* What the diagnosis blames, over the lanes: the culprit (only ever on the
 * root rank, rep_blame), the ranks that waited, the step's gaps, and the
 * root rank's missing call at the step's start k0. */
static void mark_blame(const hw *w, const teller_diag_step *s, const rep_blame *bl, const tl *t, const tl_lane *ln,
                       size_t nl, int64_t k0)
{
    if (bl->culprit != TELLER_NONE)
        outline(w, t, ln, nl, bl->culprit, "cul");
    for (size_t v = 0; v < bl->nvictims; v++)
        outline(w, t, ln, nl, bl->victims[v], "vic");
    gaps(w, s, t, ln, nl);
    if (!bl->missing)
        return;
    size_t r = rank_index(w, s->root_rank);
    for (size_t l = 0; l < nl && r != SIZE_MAX; l++)
        if (ln[l].rank == r) {
            char nm[256];
            teller_name_normalize(s->pred.cand[0].op, nm, sizeof nm);
            fprintf(t->f, "<text class=\"miss\" x=\"%.1f\" y=\"%d\">never launched ", tl_x(t, k0) + 3,
                    ln[l].y + (ln[l].cpu ? 14 : 9));
            rep_html(t->f, nm, 80);
            fputs("</text>\n", t->f);
            break;
        }
}

/* The timeline of step s (draw: per rank, w->ranks' index, whether its
 * lanes are drawn). Returns 0, or -1 when out of memory. */
static int timeline(hw *w, const teller_diag_step *s, const rep_blame *bl, const uint8_t *draw)
{
    FILE *f = w->f;
    uint32_t k = store_step(w, s);
    int64_t k0, k1, w0, w1;
    if (!timeline_window(w, s, &k0, &k1, &w0, &w1))
        return 0;
    tl t = {f, w0, w1, (TL_X1 - TL_X0) / (double)(w1 - w0), {0}, {0}, {0}};
    tl_lane *ln = malloc((w->nrows + 1) * sizeof *ln);
    if (!ln)
        return -1;
    int y;
    size_t nl = timeline_lanes(w, s, draw, &t, ln, &y);
    svg_open(f, TL_W, y + TL_AXIS_H);
    fprintf(f, "timeline of step %u\">\n", run_step(w, k));
    fprintf(f, "<rect class=\"bg\" x=\"%.0f\" y=\"%d\" width=\"%.0f\" height=\"%d\"/>\n", TL_X0, TL_TOP - 14,
            TL_X1 - TL_X0, y - TL_TOP + 14);
    step_bands(w, &t, k, k0, k1, y);
    time_axis(&t, run_step(w, k), k0, y);
    draw_lanes(w, &t, ln, nl);
    mark_blame(w, s, bl, &t, ln, nl, k0);
    svg_close(f);
    free(ln);
    for (int cl = 0; cl < C_COUNT; cl++)
        free(t.path[cl]);
    return 0;
}

/* ---- sections ---------------------------------------------------------- */

/* A legend entry: a 12 x 10 swatch holding the SVG shapes given, then its words. */
static void swatch(FILE *f, const char *shapes, const char *words)
{
    fprintf(f, "<span><svg width=\"12\" height=\"10\" style=\"display:inline-block;vertical-align:-1px;"
               "margin-right:4px\">%s</svg>%s</span>",
            shapes, words);
}

/* The timeline's legend; full: with the culprit and the ranks that
 * waited; gap: with the stretch in which nothing ran. */
static void put_legend(FILE *f, int full, int gap)
{
    static const char *items[][2] = {
        {"mk", "step marker"},   {"le", "engine"},      {"lf", "python"},       {"lb", "torch op"},
        {"lr", "CUDA API"},      {"cc", "comm op (CPU)"}, {"gk", "kernel"},     {"gc", "comm kernel"},
        {"gm", "copy"},          {"gs", "memset"},      {"ls", "sync"},         {"lo", "other"},
        {"bandk", "the step"},   {"band", "neighbour steps"},
    };
    fputs("<div class=\"legend\">", f);
    for (size_t i = 0; i < sizeof items / sizeof *items; i++) {
        char r[64];
        snprintf(r, sizeof r, "<rect class=\"%s\" width=\"12\" height=\"10\"/>", items[i][0]);
        swatch(f, r, items[i][1]);
    }
    if (full) {
        swatch(f, "<rect class=\"cul\" x=\"1\" y=\"1\" width=\"10\" height=\"8\"/>", "culprit");
        swatch(f, "<rect class=\"vic\" x=\"1\" y=\"1\" width=\"10\" height=\"8\"/>", "waited for the root rank");
    }
    if (gap)
        swatch(f, "<rect class=\"gap\" x=\"1\" y=\"1\" width=\"10\" height=\"8\"/>",
               "nothing ran (the stretch the explanation names)");
    fputs("</div>\n", f);
}

/* When the root rank holds no culprit event: what is known of it, and
 * the ranks that waited, as evidence. */
static void no_culprit(hw *w, const teller_diag_step *s, const rep_blame *b)
{
    FILE *f = w->f;
    const teller_events *ev = w->ev;
    if (s->root_rank < 0 || s->pred.ncand <= 0) {
        fputs("<p class=\"note\">The analysis named no culprit event.</p>\n", f);
        return;
    }
    fprintf(f, "<p class=\"blame\">Rank %d ", s->root_rank);
    if (b->missing)
        fputs("never launched <span class=\"op\">", f);
    else if (b->unloaded)
        fputs("is the root, but its trace was not loaded; it is blamed for <span class=\"op\">", f);
    else
        fputs("is the root; the analysis names no event of it for <span class=\"op\">", f);
    rep_html_name(f, s->pred.cand[0].op, 400);
    fprintf(f, "</span> in step %u", s->pred.step);
    if (b->nvictims) {
        uint32_t longest = b->victims[0];
        fprintf(f, "; rank%s ", b->nvictims == 1 ? "" : "s");
        for (size_t v = 0; v < b->nvictims; v++) {
            fprintf(f, "%s%d", v ? ", " : "", teller_store_event_rank(w->st, b->victims[v]));
            if (ev->dur_ns[b->victims[v]] > ev->dur_ns[longest])
                longest = b->victims[v];
        }
        fputs(" waited up to ", f);
        put_event_dur(w, s, longest);
    }
    fputs(".</p>\n", f);
    if (b->other_rank >= 0)
        fprintf(f, "<p class=\"note\">The event the analysis pointed at is on rank %d, not on the root rank; it is "
                   "not drawn as the culprit.</p>\n",
                b->other_rank);
    if (!b->nvictims)
        return;
    fputs("<div class=\"tw\"><table><tr><th>waiting rank (evidence)</th><th>node</th><th>operator</th><th>where</th>"
          "<th>waited</th></tr>\n",
          f);
    for (size_t v = 0; v < b->nvictims; v++) {
        uint32_t e = b->victims[v];
        fprintf(f, "<tr><td class=\"n\">%d</td><td class=\"n\">%d</td><td class=\"op\">",
                teller_store_event_rank(w->st, e), teller_store_event_node(w->st, e));
        rep_html_name(f, teller_store_str(w->st, ev->name[e]), 400);
        if (ev->flags[e] & TELLER_F_GPU)
            fprintf(f, "</td><td>device %d stream %d", teller_event_pid(ev, e), teller_event_tid(ev, e));
        else
            fprintf(f, "</td><td>thread %d", teller_event_tid(ev, e));
        fputs("</td><td class=\"n\">", f);
        put_event_dur(w, s, e);
        fputs("</td></tr>\n", f);
    }
    fputs("</table></div>\n", f);
}

/* Step s's OP fact of the events named name on rank in its step or the
 * step its finding came from (UINT32_MAX when it has none). */
static uint32_t op_fact(const hw *w, const teller_diag_step *s, int32_t rank, uint32_t name)
{
    for (uint32_t i = 0; i < nfacts(w, s); i++) {
        const teller_fact *g = fact_at(w, s, i);
        if (g->kind == TELLER_FACT_OP && g->rank == rank && g->name == name)
            return i;
    }
    return UINT32_MAX;
}

static void call_chain(hw *w, const teller_diag_step *s, const rep_blame *b)
{
    FILE *f = w->f;
    const teller_events *ev = w->ev;
    uint32_t c = b->culprit;
    if (c == TELLER_NONE) {
        no_culprit(w, s, b);
        return;
    }
    uint32_t chain[256];
    int n = 0;
    for (uint32_t q = c; q != TELLER_NONE && q < ev->n && n < 256; q = ev->parent[q])
        chain[n++] = q;
    /* start from the outermost step marker on the path, if any */
    int top = n - 1, marker = -1;
    for (int i = n - 1; i >= 0; i--)
        if (ev->flags[chain[i]] & TELLER_F_STEP) {
            marker = i;
            break;
        }
    if (marker >= 0)
        top = marker;
    if (top < n - 1)
        fprintf(f, "<p class=\"note\">%d enclosing frame%s above the step marker not shown.</p>\n", n - 1 - top,
                n - 1 - top == 1 ? "" : "s");
    else if (marker < 0)
        fputs("<p class=\"note\">The path does not pass through a step marker; shown from its root.</p>\n", f);
    fputs("<ol class=\"chain\">\n", f);
    for (int i = top; i >= 0; i--) {
        uint32_t e = chain[i];
        int32_t rank = teller_store_event_rank(w->st, e);
        const char *tag = teller_layer_tag((teller_layer)ev->layer[e]);
        fprintf(f, "<li%s><span class=\"tag %s\">%s</span><span class=\"op\">", i == 0 ? " class=\"cul\"" : "", tag,
                tag);
        rep_html_name(f, teller_store_str(w->st, ev->name[e]), 400);
        /* each call's own time; the culprit's operator's time in the
         * step only as the fact the explanation states */
        fputs("</span><span class=\"dur\">", f);
        put_event_dur(w, s, e);
        uint32_t of = i == 0 ? op_fact(w, s, rank, ev->name[e]) : UINT32_MAX;
        if (of != UINT32_MAX && fact_at(w, s, of)->count > 1) {
            fprintf(f, " (its %u calls in step %u: ", fact_at(w, s, of)->count, fact_at(w, s, of)->step + w->d->step_base);
            put_fact(w, s, of);
            fputc(')', f);
        }
        if (ev->flags[e] & TELLER_F_GPU)
            fprintf(f, " \xc2\xb7 device %d stream %d", teller_event_pid(ev, e), teller_event_tid(ev, e));
        else
            fprintf(f, " \xc2\xb7 thread %d", teller_event_tid(ev, e));
        fprintf(f, " \xc2\xb7 rank %d", rank);
        if (ev->flags[e] & TELLER_F_STEP)
            fputs(" \xc2\xb7 step marker", f);
        if (i == 0)
            fputs(" \xc2\xb7 culprit", f);
        fputs("</span></li>\n", f);
    }
    fputs("</ol>\n", f);
}

/* What step s's fact i is, in words, for the table of its numbers. */
static void fact_label(const hw *w, const teller_diag_step *s, uint32_t i)
{
    FILE *f = w->f;
    const teller_fact *g = fact_at(w, s, i);
    const char *nm = g->name != TELLER_NONE ? teller_store_str(w->st, g->name) : NULL;
    uint32_t n = nfacts(w, s);
    switch (g->kind) {
    case TELLER_FACT_STEP:
        fprintf(f, "step %u's window on rank %d", g->step + w->d->step_base, g->rank);
        break;
    case TELLER_FACT_USUAL:
        fputs("what a step of its kind and work usually takes", f);
        break;
    case TELLER_FACT_EVENT:
    case TELLER_FACT_OVERHANG:
        if (g->a < w->ev->n) {
            fputs("<span class=\"op\">", f);
            rep_html_name(f, teller_store_str(w->st, w->ev->name[g->a]), 200);
            fputs("</span> ", f);
        }
        fprintf(f, "on rank %d: %s", g->rank,
                g->kind == TELLER_FACT_EVENT ? "one call's own time" : "the part after its GPU's last work had ended");
        break;
    case TELLER_FACT_OP:
    case TELLER_FACT_OP_USUAL:
        if (nm) {
            fputs("<span class=\"op\">", f);
            rep_html_name(f, nm, 200);
            fputs("</span>", f);
        } else
            fputs("every compute kernel", f);
        if (g->kind == TELLER_FACT_OP)
            fprintf(f, " on rank %d in step %u: %u %s together", g->rank, g->step + w->d->step_base, g->count,
                    g->count == 1 ? "call" : "calls");
        else
            fprintf(f, " on rank %d: the median over %u other steps of its kind", g->rank, g->count);
        break;
    case TELLER_FACT_HOLE:
        fprintf(f, "rank %d: no host op of its process ran", g->rank);
        if (g->b < w->ev->n) {
            fputs(", until <span class=\"op\">", f);
            rep_html_name(f, teller_store_str(w->st, w->ev->name[g->b]), 200);
            fputs("</span>", f);
        }
        break;
    case TELLER_FACT_GPU_IDLE:
        fprintf(f, "rank %d: its GPU ran nothing, in that stretch", g->rank);
        break;
    case TELLER_FACT_LATE:
        fprintf(f, "rank %d started last at %u of %u collectives: its peers' wait for it", g->rank, g->count,
                g->count2);
        break;
    case TELLER_FACT_QUIET:
        fprintf(f, "rank %d: neither GPU work nor a host op ran (the longest such stretch of step %u)", g->rank,
                g->step + w->d->step_base);
        break;
    case TELLER_FACT_REFERENCE:
        if (nm) {
            fputs("<span class=\"op\">", f);
            rep_html_name(f, nm, 200);
            fprintf(f, "</span> on rank %d", g->rank);
        } else if (g->count2)
            fprintf(f, "every compute kernel on rank %d", g->rank);
        else
            fputs("a step of its kind and work", f);
        fprintf(f, ": its usual in the reference run, over its %u steps of that kind", g->count);
        break;
    case TELLER_FACT_DIFF:
        if (g->a < n && g->b < n && fact_at(w, s, g->a)->kind == TELLER_FACT_STEP && is_usual(fact_at(w, s, g->b)))
            fputs("over its usual: ", f);
        fprintf(f, "row %u minus row %u", g->a + 1, g->b + 1);
        break;
    }
}

/* The step's facts, each with what it is; its candidates; the ranks the
 * timeline draws (draw), their windows and kernel time as the step's facts
 * where it has them. */
static void numbers(hw *w, const teller_diag_step *s, const rep_blame *bl, const uint8_t *draw)
{
    FILE *f = w->f;
    uint32_t n = nfacts(w, s);
    if (!n)
        fputs("<p class=\"note\">The diagnosis states no number for this step.</p>\n", f);
    else {
        fputs("<div class=\"tw\"><table><tr><th>#</th><th>what, in the trace</th><th>value</th></tr>\n", f);
        for (uint32_t i = 0; i < n; i++) {
            fprintf(f, "<tr><td class=\"n\">%u</td><td>", i + 1);
            fact_label(w, s, i);
            fputs("</td><td class=\"n\">", f);
            put_fact(w, s, i);
            fputs("</td></tr>\n", f);
        }
        fputs("</table></div>\n", f);
    }

    if (s->pred.ncand > 0) {
        fputs("<div class=\"tw\"><table><tr><th>#</th><th>rank</th><th>layer</th><th>operator</th><th>score</th></tr>\n",
              f);
        for (int i = 0; i < s->pred.ncand && i < TELLER_MAX_CANDIDATES; i++) {
            const teller_candidate *c = &s->pred.cand[i];
            fprintf(f, "<tr><td class=\"n\">%d</td><td class=\"n\">%d</td><td>", i + 1, c->rank);
            rep_html(f, c->layer, 16);
            fputs("</td><td class=\"op\">", f);
            rep_html_name(f, c->op, 0);
            fprintf(f, "</td><td class=\"n\">%.3f</td></tr>\n", c->score);
        }
        fputs("</table></div>\n", f);
    }

    /* per rank, from the step summaries */
    if (!w->sum)
        return;
    int any = 0;
    for (size_t i = 0; i < w->nsum; i++) {
        const teller_step_summary *m = &w->sum[i];
        if (m->step != store_step(w, s))
            continue;
        size_t r = rank_index(w, m->rank);
        if (r != SIZE_MAX && !draw[r])
            continue;
        if (!any)
            fputs("<div class=\"tw\"><table><tr><th>rank</th><th>node</th><th>window</th><th>kernels</th><th>comm</th><th>copies</th>"
                  "<th>GPU idle</th><th>kernel count</th></tr>\n",
                  f);
        any = 1;
        char c[32];
        fprintf(f, "<tr%s><td class=\"n\">%d</td><td class=\"n\">%d</td><td class=\"n\">",
                m->rank == s->root_rank ? " class=\"root\"" : "", m->rank, m->node);
        uint32_t fw = find_fact(w, s, TELLER_FACT_STEP, m->step, m->rank, TELLER_NONE);
        if (fw != UINT32_MAX)
            put_fact(w, s, fw);
        else
            fputs(teller_fmt_dur(c, sizeof c, (double)m->dur_ns), f);
        fputs("</td><td class=\"n\">", f);
        uint32_t fk = UINT32_MAX;
        for (uint32_t j = 0; j < n && fk == UINT32_MAX; j++) {
            const teller_fact *g = fact_at(w, s, j);
            if (g->kind == TELLER_FACT_OP && g->name == TELLER_NONE && g->rank == m->rank && g->step == m->step)
                fk = j;
        }
        if (fk != UINT32_MAX)
            put_fact(w, s, fk);
        else
            fputs(teller_fmt_dur(c, sizeof c, (double)m->kernel_ns), f);
        fprintf(f, "</td><td class=\"n\">%s</td>", teller_fmt_dur(c, sizeof c, (double)m->comm_ns));
        fprintf(f, "<td class=\"n\">%s</td>", teller_fmt_dur(c, sizeof c, (double)m->memcpy_ns));
        fprintf(f, "<td class=\"n\">%s</td><td class=\"n\">%u</td></tr>\n",
                teller_fmt_dur(c, sizeof c, (double)m->gpu_idle_ns), m->kernels);
    }
    if (any && bl->missing) {
        int seen = 0;
        for (size_t i = 0; i < w->nsum; i++)
            seen |= w->sum[i].step == store_step(w, s) && w->sum[i].rank == s->root_rank;
        if (!seen)
            fprintf(f, "<tr class=\"root\"><td class=\"n\">%d</td><td class=\"n\">%d</td><td colspan=\"6\">no record of "
                       "this step in its trace</td></tr>\n",
                    s->root_rank, s->root_node);
    }
    if (any)
        fputs("</table></div>\n", f);
}

static void evidence(hw *w, const teller_diag_step *s)
{
    FILE *f = w->f;
    if (s->pred.nev <= 0) {
        fputs("<p class=\"note\">No log line or trace fact was attached to this finding.</p>\n", f);
        return;
    }
    for (int i = 0; i < s->pred.nev && i < TELLER_MAX_EVIDENCE; i++) {
        const teller_evidence *e = &s->pred.ev[i];
        fputs("<div><span class=\"tag\">", f);
        rep_html(f, e->kind, sizeof e->kind);
        fputs("</span><code>", f);
        if (strcmp(e->kind, "log") == 0 || e->file[0]) {
            rep_html(f, e->file, 0);
            fprintf(f, ":%" PRIu64, e->line);
        } else
            fprintf(f, "trace event %" PRIu64, e->line);
        fputs("</code>", f);
        if (e->rank >= 0)
            fprintf(f, " rank %d", e->rank);
        if (e->node >= 0)
            fprintf(f, " node %d", e->node);
        fputs("<pre>", f);
        rep_html(f, e->text, 0);
        fputs("</pre></div>\n", f);
    }
}

/* ---- the step chart ---------------------------------------------------- */

/* Geometry of the step chart, in pixels: narrow enough for an 800 px
 * window without scrolling. */
#define CH_W     720.0
#define CH_X0    70.0   /* left edge of the plot (time labels before) */
#define CH_X1    712.0
#define CH_HEAD  20     /* a panel's title line */
#define CH_H     64     /* a panel's plot */
#define CH_GAP   10
#define CH_AXIS  24
#define CH_CLIP  3.0    /* a panel's scale stops at this many times its 90th percentile */

/* 2: abnormal; 1: slower than usual, no finding explains it; 0: neither */
static int status_of(const teller_diag_step *s)
{
    return s->pred.abnormal ? 2 : s->slow ? 1 : 0;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* "20 ms": an axis label of ns, in the unit of the scale's top. */
static void axis_label(char *buf, size_t cap, double ns, double top)
{
    double u = top >= 1e9 ? 1e9 : top >= 1e6 ? 1e6 : top >= 1e3 ? 1e3 : 1;
    snprintf(buf, cap, "%g %s", ns / u, u == 1e9 ? "s" : u == 1e6 ? "ms" : u == 1e3 ? "us" : "ns");
}

/* A chart panel's geometry: its scale and where its plot and bars are. */
typedef struct panel {
    double top;      /* ns at the top of the plot */
    double tick;     /* ns between grid lines */
    int    cut;      /* the scale stops short of the longest step */
    int    yt, base; /* the plot's top and bottom */
    double bw, wd;   /* a column's width, a bar's */
} panel;

/* The steps of kind k: each one's longer of its time and its usual into
 * v[0, return), the worst into pick[c] for each of the cols columns (or
 * SIZE_MAX), and how many are abnormal, slow and without a yardstick. */
static size_t pick_columns(const hw *w, teller_step_kind k, size_t cols, size_t *pick, int64_t *v, size_t *nab,
                           size_t *nslow, size_t *nnone)
{
    const teller_diagnosis *d = w->d;
    size_t m = 0;
    *nab = *nslow = *nnone = 0;
    for (size_t c = 0; c < cols; c++)
        pick[c] = SIZE_MAX;
    for (size_t i = 0; i < d->n; i++) {
        const teller_diag_step *s = &d->steps[i];
        if (kind_of(w, s) != k)
            continue;
        v[m++] = s->usual_ns > s->dur_ns ? s->usual_ns : s->dur_ns;
        *nab += status_of(s) == 2;
        *nslow += status_of(s) == 1;
        *nnone += s->usual_ns < 0;
        /* a column shows its worst step: abnormal, then slow, then the largest excess, then the longest */
        size_t c = i * cols / d->n, p = pick[c];
        const teller_diag_step *o = p != SIZE_MAX ? &d->steps[p] : NULL;
        if (!o || status_of(s) > status_of(o) ||
            (status_of(s) == status_of(o) &&
             (s->excess_ns > o->excess_ns || (s->excess_ns == o->excess_ns && s->dur_ns > o->dur_ns))))
            pick[c] = i;
    }
    return m;
}

/* The panel's scale over the m values v (sorted here): from 0 to the
 * longest, unless a few steps (a hang) would flatten the rest: then cut
 * at CH_CLIP times the 90th percentile; rounded up to whole ticks. */
static void panel_scale(int64_t *v, size_t m, panel *pn)
{
    qsort(v, m, sizeof *v, cmp_i64);
    double top = (double)v[m - 1], p90 = (double)v[(m - 1) * 9 / 10];
    pn->cut = p90 > 0 && top > CH_CLIP * p90;
    if (pn->cut)
        top = CH_CLIP * p90;
    if (top <= 0)
        top = 1000;
    pn->tick = nice_step(top, 3);
    pn->top = ceil(top / pn->tick - 1e-9) * pn->tick;
}

/* Each column's bar: its step's time, coloured by its status, with a
 * tooltip, linked to the step's section when it has one. */
static void panel_bars(hw *w, teller_step_kind k, size_t cols, const uint8_t *section, const size_t *pick,
                       const panel *pn)
{
    FILE *f = w->f;
    char du[32], du2[32];
    for (size_t c = 0; c < cols; c++) {
        size_t i = pick[c];
        if (i == SIZE_MAX)
            continue;
        const teller_diag_step *s = &w->d->steps[i];
        static const char *const cls[] = {"ok", "sl", "ab"};
        double h = s->dur_ns > 0 ? (double)CH_H * ((double)s->dur_ns < pn->top ? (double)s->dur_ns : pn->top) / pn->top
                                 : 0;
        if (h < 1)
            h = 1;
        if (section[i])
            fprintf(f, "<a href=\"#step-%u\">", s->pred.step);
        fprintf(f, "<rect class=\"%s\" x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%.1f\"><title>step %u (%s): %s, ",
                cls[status_of(s)], CH_X0 + (double)c * pn->bw, pn->base - h, pn->wd, h, s->pred.step,
                teller_step_kind_name(k), teller_fmt_dur(du, sizeof du, (double)s->dur_ns));
        if (s->usual_ns >= 0)
            fprintf(f, "usual %s", teller_fmt_dur(du2, sizeof du2, (double)s->usual_ns));
        else
            fputs("no yardstick", f);
        fputs(status_of(s) == 2 ? "; abnormal: " : status_of(s) == 1 ? "; slower than usual, no finding explains it" : "", f);
        if (status_of(s) == 2)
            rep_html(f, s->fault[0] ? s->fault : s->pred.fault_type, 0);
        fputs("</title></rect>", f);
        if (section[i])
            fputs("</a>", f);
    }
    fputc('\n', f);
}

/* The marks over the bars: the usual ticks, the steps without a
 * yardstick and the cut bars, each kind of mark one path. */
static void panel_marks(hw *w, size_t cols, const size_t *pick, const panel *pn)
{
    FILE *f = w->f;
    static const char *const marks[] = {"usual", "nys", "cut"};
    for (int kind = 0; kind < 3; kind++) {
        int open = 0;
        for (size_t c = 0; c < cols; c++) {
            size_t i = pick[c];
            if (i == SIZE_MAX)
                continue;
            const teller_diag_step *s = &w->d->steps[i];
            double x = CH_X0 + (double)c * pn->bw,
                   h = (double)CH_H * ((double)s->dur_ns < pn->top ? (double)s->dur_ns : pn->top) / pn->top;
            if (kind == 0 && (s->usual_ns < 0 || (double)s->usual_ns > pn->top))
                continue;
            if ((kind == 1 && s->usual_ns >= 0) || (kind == 2 && (double)s->dur_ns <= pn->top))
                continue;
            if (!open)
                fprintf(f, "<path class=\"%s\" d=\"", marks[kind]);
            open = 1;
            if (kind == 0) /* the usual: a tick across the bar, a pixel wider on each side */
                fprintf(f, "M%.1f %.1fh%.1f", x - 1, pn->base - (double)CH_H * (double)s->usual_ns / pn->top, pn->wd + 2);
            else if (kind == 1) /* no yardstick: a diamond above the bar */
                fprintf(f, "M%.1f %.1fl3 3l-3 3l-3 -3z", x + pn->wd / 2, pn->base - h - 9);
            else /* cut: a white slash through the bar's top */
                fprintf(f, "M%.1f %dl%.1f -4", x, pn->yt + 8, pn->wd);
        }
        if (open)
            fputs("\"/>\n", f);
    }
}

/* One panel of the chart: the steps of kind k at the run's columns. pick
 * and v are scratch (cols and d->n entries); y is the panel's top. */
static void chart_panel(hw *w, teller_step_kind k, size_t cols, const uint8_t *section, size_t *pick, int64_t *v,
                        int y)
{
    FILE *f = w->f;
    size_t nab, nslow, nnone;
    size_t m = pick_columns(w, k, cols, pick, v, &nab, &nslow, &nnone);
    panel pn;
    panel_scale(v, m, &pn);
    pn.yt = y + CH_HEAD;
    pn.base = pn.yt + CH_H;
    pn.bw = (CH_X1 - CH_X0) / (double)cols;
    pn.wd = pn.bw > 1.5 ? pn.bw - 0.5 : pn.bw;
    char du[32];
    fprintf(f, "<g class=\"panel\" data-kind=\"%s\">\n<text x=\"%.0f\" y=\"%d\"><tspan class=\"pt\">%s steps</tspan>: %zu",
            teller_step_kind_name(k), CH_X0, y + 13, teller_step_kind_name(k), m);
    if (nab)
        fprintf(f, " \xc2\xb7 %zu abnormal", nab);
    if (nslow)
        fprintf(f, " \xc2\xb7 %zu slow, unexplained", nslow);
    if (nnone)
        fprintf(f, " \xc2\xb7 %zu without a yardstick", nnone);
    if (pn.cut)
        fprintf(f, " \xc2\xb7 bars cut at %s", teller_fmt_dur(du, sizeof du, pn.top));
    fputs("</text>\n", f);
    for (int j = 0; (double)j * pn.tick <= pn.top * (1 + 1e-9); j++) {
        double gy = pn.base - (double)CH_H * j * pn.tick / pn.top;
        axis_label(du, sizeof du, j * pn.tick, pn.top);
        fprintf(f, "<line class=\"grid\" x1=\"%.0f\" y1=\"%.1f\" x2=\"%.0f\" y2=\"%.1f\"/><text class=\"ax\" x=\"%.0f\" "
                   "y=\"%.1f\" text-anchor=\"end\">%s</text>\n",
                CH_X0, gy, CH_X1, gy, CH_X0 - 4, gy + 4, du);
    }
    panel_bars(w, k, cols, section, pick, &pn);
    panel_marks(w, cols, pick, &pn);
    fputs("</g>\n", f);
}

/* Every step's time against its usual, one panel per kind of step
 * (prefill, decode, ...) on the run's step axis; section: per step,
 * whether it has a section to link to. At most one column per pixel: a
 * column of several steps shows its worst. */
static void step_chart(hw *w, const uint8_t *section)
{
    FILE *f = w->f;
    const teller_diagnosis *d = w->d;
    if (d->n == 0)
        return;
    static const teller_step_kind order[] = {TELLER_STEP_PREFILL, TELLER_STEP_DECODE, TELLER_STEP_MIXED,
                                             TELLER_STEP_ITERATION, TELLER_STEP_OTHER};
    size_t count[5] = {0}, npanels = 0;
    for (size_t i = 0; i < d->n; i++)
        for (int p = 0; p < 5; p++)
            count[p] += kind_of(w, &d->steps[i]) == order[p];
    for (int p = 0; p < 5; p++)
        npanels += count[p] > 0;
    size_t cols = d->n < (size_t)(CH_X1 - CH_X0) ? d->n : (size_t)(CH_X1 - CH_X0);
    size_t *pick = malloc(cols * sizeof *pick);
    int64_t *v = malloc(d->n * sizeof *v);
    if (!pick || !v) {
        free(pick);
        free(v);
        return;
    }
    int height = 4 + (int)npanels * (CH_HEAD + CH_H + CH_GAP) + CH_AXIS;
    svg_open(f, CH_W, height);
    fputs("step times against their usual, by kind of step\">\n", f);
    int y = 4;
    for (int p = 0; p < 5; p++)
        if (count[p]) {
            chart_panel(w, order[p], cols, section, pick, v, y);
            y += CH_HEAD + CH_H + CH_GAP;
        }
    /* the step axis, shared by the panels */
    double bw = (CH_X1 - CH_X0) / (double)cols, st = round(nice_step((double)d->n, 8));
    if (st < 1)
        st = 1;
    fprintf(f, "<text class=\"ax\" x=\"%.0f\" y=\"%d\" text-anchor=\"end\">step</text>", CH_X0 - 4, y + 6);
    for (double t = 0; t < (double)d->n; t += st) {
        size_t i = (size_t)t;
        double x = CH_X0 + ((double)(i * cols / d->n) + 0.5) * bw;
        fprintf(f, "<line class=\"grid\" x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\"/><text class=\"ax\" x=\"%.1f\" "
                   "y=\"%d\" text-anchor=\"middle\">%u</text>",
                x, y - CH_GAP, x, y - CH_GAP + 4, x, y + 6, d->steps[i].pred.step);
    }
    fputc('\n', f);
    svg_close(f);
    fputs("<div class=\"legend\">", f);
    swatch(f, "<rect class=\"ab\" width=\"12\" height=\"10\"/>", "abnormal: a finding explains it");
    swatch(f, "<rect class=\"sl\" width=\"12\" height=\"10\"/>", "slower than usual, no finding explains it");
    swatch(f, "<rect class=\"ok\" width=\"12\" height=\"10\"/>", "as usual");
    swatch(f, "<path class=\"usual\" d=\"M0 5h12\"/>", "its usual: what a step of its kind and work takes");
    swatch(f, "<path class=\"nys\" d=\"M6 1l4 4l-4 4l-4 -4z\"/>", "no yardstick (nothing of its kind to compare)");
    swatch(f, "<rect class=\"ok\" width=\"12\" height=\"10\"/><path class=\"cut\" d=\"M0 6l12 -4\"/>",
           "cut at the panel's top (its tooltip gives its time)");
    fputs("</div>\n<p class=\"note\">One panel per kind of step, each on its own time scale from 0, on the run's "
          "step axis.",
          f);
    if (cols < d->n)
        fprintf(f, " A column covers up to %zu steps and shows the worst of them (abnormal, then slow, then the "
                   "largest excess).",
                (d->n + cols - 1) / cols);
    fputs("</p>\n", f);
    free(pick);
    free(v);
}

static const char *fault_of(const teller_diag_step *s)
{
    return s->fault[0] ? s->fault : s->pred.fault_type;
}

/* The requests served in this step, slowest first: the ones it delayed. */
static void delayed_requests(hw *w, const teller_diag_step *s)
{
    FILE *f = w->f;
    const teller_requests *r = w->reqs;
    size_t n = 0, shown = 0;
    for (size_t i = 0; i < r->n; i++)
        for (uint32_t j = 0; j < r->req[i].nsteps; j++)
            n += r->req[i].steps[j].step == store_step(w, s);
    fprintf(f, "<h4>Requests delayed</h4>\n");
    if (!n) {
        fputs("<p class=\"note\">No known request was served in this step.</p>\n", f);
        return;
    }
    fprintf(f, "<p>%zu request(s) were served in this step (", n);
    rep_html(f, r->source, 0);
    fputs(").</p>\n<div class=\"tw\"><table><tr><th>request</th><th>latency</th><th>its share of the step</th>"
          "<th>dominant cause</th></tr>\n",
          f);
    for (size_t i = 0; i < r->n && shown < 20; i++) {
        const teller_request *q = &r->req[i];
        for (uint32_t j = 0; j < q->nsteps; j++) {
            if (q->steps[j].step != store_step(w, s))
                continue;
            char a[32], b[32];
            fputs("<tr><td><code>", f);
            rep_html(f, q->id, 120);
            fprintf(f, "</code></td><td>%s</td><td>%s</td><td>",
                    q->latency_ns >= 0 ? teller_fmt_dur(a, sizeof a, (double)q->latency_ns) : "?",
                    teller_fmt_dur(b, sizeof b, (double)q->steps[j].attributed_ns));
            rep_html(f, q->cause, 0);
            fputs("</td></tr>\n", f);
            shown++;
            break;
        }
    }
    fputs("</table></div>\n", f);
    if (n > shown)
        fprintf(f, "<p class=\"note\">%zu more not listed.</p>\n", n - shown);
}

/* Step s's explanation as the checker reads it (html.c's header), with
 * <wbr> in names where wrap is set. */
static void put_explanation(const hw *w, const teller_diag_step *s, const char *cls, int wrap)
{
    FILE *f = w->f;
    fprintf(f, "<p%s%s%s data-explains=\"%zu\">", cls ? " class=\"" : "", cls ? cls : "", cls ? "\"" : "",
            (size_t)(s - w->d->steps));
    if (!s->pred.explanation[0])
        fputs("<span class=\"note\">No explanation.</span>", f);
    else if (wrap)
        rep_html_name(f, s->pred.explanation, 0);
    else
        rep_html(f, s->pred.explanation, 0);
    fputs("</p>\n", f);
}

/* A table cell with step s's fact i, or a dash when it has none. */
static void fact_cell(const hw *w, const teller_diag_step *s, uint32_t i)
{
    fputs("<td class=\"n\">", w->f);
    if (i != UINT32_MAX)
        put_fact(w, s, i);
    else
        fputs("\xe2\x80\x93", w->f);
    fputs("</td>", w->f);
}

/* "+12.345 ms over its usual" in a step's heading, when it has that fact. */
static void put_excess(const hw *w, const teller_diag_step *s)
{
    uint32_t x = excess_fact(w, s);
    if (x == UINT32_MAX)
        return;
    fputs(" \xc2\xb7 +", w->f);
    put_fact(w, s, x);
    fputs(" over its usual", w->f);
}

/* An abnormal step's section (full: the timeline of its ranks, the call
 * chain to its culprit, its numbers, the evidence, the requests it
 * delayed), or a slow one's that no finding explains (short: the
 * explanation, the timeline of its longest rank with the stretch the
 * explanation names, its numbers). */
static int step_section(hw *w, const teller_diag_step *s, int full)
{
    FILE *f = w->f;
    fprintf(f, "<section class=\"step%s\" id=\"step-%u\">\n<h3>Step %u \xe2\x80\x94 ", full ? "" : " slow",
            s->pred.step, s->pred.step);
    if (full) {
        rep_html(f, fault_of(s), 0);
        fputs(" (", f);
        rep_html(f, s->pred.fault_type, 0);
        fputs(")", f);
    } else
        fputs("slower than usual, no finding explains it", f);
    fprintf(f, " \xc2\xb7 %s step", teller_step_kind_name(kind_of(w, s)));
    put_excess(w, s);
    if (full)
        fprintf(f, " \xc2\xb7 score %.3f", s->pred.score);
    fputs("</h3>\n", f);
    put_explanation(w, s, "expl", 0);
    rep_blame b;
    if (full)
        rep_blame_of(w->st, s, &b);
    else { /* nothing is blamed for it */
        memset(&b, 0, sizeof b);
        b.culprit = TELLER_NONE;
        b.other_rank = -1;
    }
    uint8_t *draw = malloc(w->nranks + 1);
    if (!draw)
        return -1;
    size_t longest = rank_index(w, s->dur_rank);
    if (full || longest == SIZE_MAX)
        timeline_ranks(w, s, &b, draw);
    else {
        memset(draw, 0, w->nranks);
        draw[longest] = 1;
        fprintf(f, "<h4>Timeline of rank %d, the longest</h4>\n", s->dur_rank);
    }
    if (timeline(w, s, &b, draw) != 0) {
        free(draw);
        return -1;
    }
    put_legend(f, full,
               find_fact(w, s, TELLER_FACT_HOLE, UINT32_MAX, INT32_MIN, TELLER_NONE) != UINT32_MAX ||
                   find_fact(w, s, TELLER_FACT_QUIET, UINT32_MAX, INT32_MIN, TELLER_NONE) != UINT32_MAX);
    if (full) {
        fputs(b.culprit != TELLER_NONE || s->root_rank < 0 ? "<h4>Call chain to the culprit</h4>\n"
                                                             : "<h4>The root rank and the ranks that waited</h4>\n",
              f);
        call_chain(w, s, &b);
    }
    fputs("<h4>Numbers</h4>\n", f);
    numbers(w, s, &b, draw);
    free(draw);
    if (full) {
        fputs("<h4>Evidence</h4>\n", f);
        evidence(w, s);
        if (w->reqs)
            delayed_requests(w, s);
    }
    fputs("</section>\n", f);
    return 0;
}

/* The summary of the abnormal steps, worst first (order[0..n)), each
 * explanation on a row of its own: as a column it would not let the table
 * fit a narrow window. */
static void summary_abnormal(hw *w, const worst *order, size_t n, const uint8_t *section)
{
    FILE *f = w->f;
    fputs("<div class=\"tw\"><table class=\"sum\"><tr><th>step</th><th>kind</th><th>score</th><th>fault (type)</th>"
          "<th>rank (node)</th><th>operator</th><th>over its usual</th></tr>\n",
          f);
    for (size_t i = 0; i < n; i++) {
        const teller_diag_step *s = &w->d->steps[order[i].i];
        if (section[order[i].i])
            fprintf(f, "<tr><td class=\"n\"><a href=\"#step-%u\">%u</a></td>", s->pred.step, s->pred.step);
        else
            fprintf(f, "<tr><td class=\"n\">%u</td>", s->pred.step);
        fprintf(f, "<td>%s</td><td class=\"n\">%.3f</td><td>", teller_step_kind_name(kind_of(w, s)), s->pred.score);
        rep_html(f, fault_of(s), 0);
        if (s->fault[0]) {
            fputs(" <span class=\"note\">(", f);
            rep_html(f, s->pred.fault_type, 0);
            fputs(")</span>", f);
        }
        fprintf(f, "</td><td class=\"n\">%d (%d)</td><td class=\"op\">", s->root_rank, s->root_node);
        rep_html_name(f, s->pred.ncand > 0 ? s->pred.cand[0].op : "", 160);
        fputs("</td>", f);
        fact_cell(w, s, excess_fact(w, s));
        fputs("</tr>\n<tr class=\"ex\"><td colspan=\"7\">", f);
        put_explanation(w, s, NULL, 1);
        fputs("</td></tr>\n", f);
    }
    fputs("</table></div>\n", f);
}

/* The steps slower than usual that no finding explains, worst first. */
static void summary_slow(hw *w, const worst *order, size_t n, const uint8_t *section)
{
    FILE *f = w->f;
    fputs("<div class=\"tw\"><table class=\"sum\"><tr><th>step</th><th>kind</th><th>took</th><th>usual</th>"
          "<th>over its usual</th></tr>\n",
          f);
    for (size_t i = 0; i < n; i++) {
        const teller_diag_step *s = &w->d->steps[order[i].i];
        if (section[order[i].i])
            fprintf(f, "<tr><td class=\"n\"><a href=\"#step-%u\">%u</a></td>", s->pred.step, s->pred.step);
        else
            fprintf(f, "<tr><td class=\"n\">%u</td>", s->pred.step);
        fprintf(f, "<td>%s</td>", teller_step_kind_name(kind_of(w, s)));
        fact_cell(w, s, find_fact(w, s, TELLER_FACT_STEP, store_step(w, s), s->dur_rank, TELLER_NONE));
        fact_cell(w, s, usual_fact(w, s));
        fact_cell(w, s, excess_fact(w, s));
        fputs("</tr>\n<tr class=\"ex\"><td colspan=\"5\">", f);
        put_explanation(w, s, NULL, 1);
        fputs("</td></tr>\n", f);
    }
    fputs("</table></div>\n", f);
}

/* The distinct ranks of the store's sources, ascending, and each one's
 * main CPU row. */
static void find_ranks(hw *w)
{
    size_t nsrc = teller_store_num_sources(w->st);
    for (size_t i = 0; i < nsrc; i++) {
        int32_t r = teller_store_source_c(w->st, (uint32_t)i)->rank;
        int dup = 0;
        for (size_t j = 0; j < w->nranks; j++)
            dup |= w->ranks[j] == r;
        if (!dup)
            w->ranks[w->nranks++] = r;
    }
    qsort(w->ranks, w->nranks, sizeof *w->ranks, cmp_i32);
    pick_main_rows(w);
}

/* The steps the page lists, worst first: the abnormal ones into
 * order[0, *nab), then the slow ones no finding explains after them
 * (*nslow); section[i] marks step i as one shown in detail (the first
 * TELLER_REPORT_MAX_STEPS and TELLER_REPORT_MAX_SLOW of each). */
static void order_steps(const teller_diagnosis *d, worst *order, uint8_t *section, size_t *nab, size_t *nslow)
{
    *nab = *nslow = 0;
    for (size_t i = 0; i < d->n; i++)
        if (d->steps[i].pred.abnormal)
            order[(*nab)++] = (worst){d->steps[i].excess_ns, d->steps[i].pred.score, d->steps[i].pred.step, i};
    for (size_t i = 0; i < d->n; i++)
        if (status_of(&d->steps[i]) == 1)
            order[*nab + (*nslow)++] = (worst){d->steps[i].excess_ns, 0, d->steps[i].pred.step, i};
    worst *slow = order + *nab;
    qsort(order, *nab, sizeof *order, cmp_worst);
    qsort(slow, *nslow, sizeof *slow, cmp_worst);
    for (size_t i = 0; i < *nab && i < TELLER_REPORT_MAX_STEPS; i++)
        section[order[i].i] = 1;
    for (size_t i = 0; i < *nslow && i < TELLER_REPORT_MAX_SLOW; i++)
        section[slow[i].i] = 1;
}

/* The page's head, up to and including the <h1> of its title. */
static void page_head(FILE *f, const char *title)
{
    fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
          "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>",
          f);
    rep_html(f, title, 0);
    fprintf(f, "</title>\n<style>%s</style>\n</head>\n<body>\n<h1>", CSS);
    rep_html_name(f, title, 0);
    fputs("</h1>\n", f);
}

/* The page's head and title, and the line of what the run holds: ranks,
 * nodes, steps, events and the time they span. */
static void put_head(const hw *w, const char *title)
{
    FILE *f = w->f;
    page_head(f, title);
    int64_t t0 = INT64_MAX, t1 = INT64_MIN;
    for (size_t i = 0; i < w->ev->n; i++) {
        if (w->ev->start_ns[i] < t0)
            t0 = w->ev->start_ns[i];
        if (w->ev->start_ns[i] + w->ev->dur_ns[i] > t1)
            t1 = w->ev->start_ns[i] + w->ev->dur_ns[i];
    }
    char du[32];
    size_t nodes = teller_store_num_nodes(w->st);
    uint32_t steps = teller_store_step_count(w->st);
    fprintf(f, "<p class=\"meta\">%zu rank%s on %zu node%s \xc2\xb7 %u step%s \xc2\xb7 %zu events \xc2\xb7 %s of trace",
            w->nranks, w->nranks == 1 ? "" : "s", nodes, nodes == 1 ? "" : "s", steps, steps == 1 ? "" : "s",
            w->ev->n, teller_fmt_dur(du, sizeof du, w->ev->n ? (double)(t1 - t0) : 0));
    if (teller_store_num_warnings(w->st))
        fprintf(f, " \xc2\xb7 %" PRIu64 " events skipped with warnings", teller_store_num_warnings(w->st));
    char judge[128];
    teller_diag_judge(w->d, judge, sizeof judge);
    fputs(" \xc2\xb7 judged by ", f);
    rep_html(f, judge, 0);
    fputs("</p>\n", f);
}

/* The summary tables: the abnormal steps (order[0, nab)) and the slow ones
 * no finding explains (slow[0, nslow)). */
static void put_summary(hw *w, const worst *order, size_t nab, const worst *slow, size_t nslow,
                        const uint8_t *section)
{
    FILE *f = w->f;
    fputs("<h2>Summary</h2>\n", f);
    if (nab == 0)
        fprintf(f, "<p>No abnormal step among %zu diagnosed.</p>\n", w->d->n);
    else {
        fprintf(f, "<p><b>%zu</b> of %zu steps abnormal, worst first.</p>\n", nab, w->d->n);
        summary_abnormal(w, order, nab, section);
    }
    if (nslow) {
        fprintf(f, "<p><b>%zu</b> step%s slower than usual that no finding explains, worst first.</p>\n", nslow,
                nslow == 1 ? "" : "s");
        summary_slow(w, slow, nslow, section);
    }
}

/* The detailed sections of the first `shown` of order[0, n), under
 * heading: full ones (abnormal steps) or short ones (slow steps), which
 * name the rest `worst steps` or `slowest`. Returns 0, or -1 when out of
 * memory. */
static int step_sections(hw *w, const char *heading, const char *rest, const worst *order, size_t n, size_t shown,
                         int full)
{
    FILE *f = w->f;
    fprintf(f, "<h2>%s</h2>\n", heading);
    if (n > shown)
        fprintf(f, "<p class=\"note\">The %zu %s are shown in detail; %zu more are in the summary only.</p>\n", shown,
                rest, n - shown);
    for (size_t i = 0; i < shown; i++)
        if (step_section(w, &w->d->steps[order[i].i], full) != 0)
            return -1;
    return 0;
}

/* The notes of the analysis, and the page's end. */
static void put_notes(const hw *w)
{
    FILE *f = w->f;
    fputs("<h2>Notes</h2>\n", f);
    if (w->d->nnotes == 0)
        fputs("<p class=\"note\">The analysis reported nothing it could not see.</p>\n", f);
    else {
        fputs("<ul>\n", f);
        for (size_t i = 0; i < w->d->nnotes; i++) {
            fputs("<li>", f);
            rep_html(f, w->d->notes[i], 0);
            fputs("</li>\n", f);
        }
        fputs("</ul>\n", f);
    }
    fputs("<p class=\"note\">Written by teller. Times are on node 0's clock; every name above is quoted from the "
          "traces and logs as recorded.</p>\n</body>\n</html>\n",
          f);
}

teller_status teller_report_html(const teller_store *st, const teller_diagnosis *d, const teller_requests *reqs,
                                 const char *title, FILE *out, teller_error *err)
{
    if (!st || !d || !out)
        return teller_error_set(err, TELLER_ERR_ARG, "html", 0, "no store, diagnosis or output stream");
    hw w = {0};
    w.f = out;
    w.st = st;
    w.d = d;
    w.reqs = reqs;
    w.ev = teller_store_events(st);
    w.steps = teller_store_steps(st);
    w.nsteps = teller_store_num_steps(st);
    size_t nsrc = teller_store_num_sources(st);
    worst *order = malloc((d->n + 1) * sizeof *order); /* the abnormal steps, then the slow ones */
    uint8_t *section = calloc(d->n + 1, 1);
    w.ranks = malloc((nsrc + 1) * sizeof *w.ranks);
    w.main_row = malloc((nsrc + 1) * sizeof *w.main_row);
    teller_status status = TELLER_OK;
    if (!order || !section || !w.ranks || !w.main_row || rep_rows(st, &w.rows, &w.nrows) != 0) {
        status = teller_error_set(err, TELLER_ERR_NOMEM, "html", 0, "out of memory");
        goto done;
    }
    find_ranks(&w);
    teller_error e2; /* the summaries are optional: without them a step has no table of ranks */
    teller_error_clear(&e2);
    if (w.nsteps && teller_step_summaries(st, &w.sum, &w.nsum, &e2) != TELLER_OK) {
        w.sum = NULL;
        w.nsum = 0;
    }
    size_t nab, nslow;
    order_steps(d, order, section, &nab, &nslow);
    const worst *slow = order + nab;
    size_t shown = nab < TELLER_REPORT_MAX_STEPS ? nab : TELLER_REPORT_MAX_STEPS;
    size_t shown_slow = nslow < TELLER_REPORT_MAX_SLOW ? nslow : TELLER_REPORT_MAX_SLOW;

    put_head(&w, title && *title ? title : "teller diagnosis");
    put_summary(&w, order, nab, slow, nslow, section);
    fputs("<h2>Step times</h2>\n", out);
    step_chart(&w, section);
    if ((nab && step_sections(&w, "Abnormal steps", "worst steps", order, nab, shown, 1) != 0) ||
        (nslow && step_sections(&w, "Slower than usual, unexplained", "slowest", slow, nslow, shown_slow, 0) != 0)) {
        status = teller_error_set(err, TELLER_ERR_NOMEM, "html", 0, "out of memory");
        goto done;
    }
    put_notes(&w);
    if (fflush(out) != 0 || ferror(out))
        status = teller_error_set(err, TELLER_ERR_IO, "html", 0, "write failed");

done:
    free(order);
    free(section);
    free(w.ranks);
    free(w.main_row);
    free(w.rows);
    free(w.sum);
    return status;
}

/* ---- the diff's page (teller_report_html_diff) ------------------------- */

/* Sets up w over st for drawing timelines; -1 out of memory. */
static int hw_open(hw *w, const teller_store *st, FILE *f)
{
    memset(w, 0, sizeof *w);
    w->f = f;
    w->st = st;
    w->ev = teller_store_events(st);
    w->steps = teller_store_steps(st);
    w->nsteps = teller_store_num_steps(st);
    size_t nsrc = teller_store_num_sources(st);
    w->ranks = malloc((nsrc + 1) * sizeof *w->ranks);
    w->main_row = malloc((nsrc + 1) * sizeof *w->main_row);
    if (!w->ranks || !w->main_row || rep_rows(st, &w->rows, &w->nrows) != 0)
        return -1;
    find_ranks(w);
    return 0;
}

static void hw_close(hw *w)
{
    free(w->ranks);
    free(w->main_row);
    free(w->rows);
}

/* The timeline of step k on rank (its main CPU thread and its GPU
 * streams) over [w0, w0 + span]: both of a diff's timelines get the same
 * span, so that their lengths compare. label starts the aria label. -1 out
 * of memory. */
static int rank_timeline(hw *w, int32_t rank, uint32_t k, int64_t w0, int64_t span, const char *label)
{
    FILE *f = w->f;
    size_t r = rank_index(w, rank);
    int64_t k0 = 0, k1 = 0;
    for (size_t i = 0; i < w->nsteps; i++)
        if (w->steps[i].step == k && w->steps[i].rank == rank) {
            k0 = w->steps[i].start_ns;
            k1 = w->steps[i].end_ns;
        }
    if (r == SIZE_MAX || k1 <= k0) {
        fputs("<p class=\"note\">No time window is known for this step; no timeline.</p>\n", f);
        return 0;
    }
    tl t = {f, w0, w0 + span, (TL_X1 - TL_X0) / (double)span, {0}, {0}, {0}};
    tl_lane *ln = malloc((w->nrows + 1) * sizeof *ln);
    if (!ln)
        return -1;
    size_t nl = 0;
    int y = TL_TOP;
    if (w->main_row[r] != SIZE_MAX) {
        ln[nl++] = (tl_lane){w->main_row[r], 1, r, y, TL_CPU_H};
        y += TL_CPU_H + TL_GAP;
    }
    for (size_t i = 0; i < w->nrows; i++)
        if (w->rows[i].gpu && w->rows[i].rank == rank && draw_row(w, &t, i, 0, 0, NULL, 1) > 0) {
            ln[nl++] = (tl_lane){i, 0, r, y, TL_GPU_H};
            y += TL_GPU_H + TL_GAP;
        }
    svg_open(f, TL_W, y + TL_AXIS_H);
    fprintf(f, "%s: step %u on rank %d\">\n", label, run_step(w, k), rank);
    fprintf(f, "<rect class=\"bg\" x=\"%.0f\" y=\"%d\" width=\"%.0f\" height=\"%d\"/>\n", TL_X0, TL_TOP - 14,
            TL_X1 - TL_X0, y - TL_TOP + 14);
    step_bands(w, &t, k, k0, k1, y);
    time_axis(&t, run_step(w, k), k0, y);
    draw_lanes(w, &t, ln, nl);
    svg_close(f);
    free(ln);
    for (int cl = 0; cl < C_COUNT; cl++)
        free(t.path[cl]);
    return 0;
}

/* The span of step k on rank in w, 0 when unknown. */
static int64_t step_len(const hw *w, int32_t rank, uint32_t k, int64_t *k0)
{
    for (size_t i = 0; i < w->nsteps; i++)
        if (w->steps[i].step == k && w->steps[i].rank == rank) {
            *k0 = w->steps[i].start_ns;
            return w->steps[i].end_ns - w->steps[i].start_ns;
        }
    return 0;
}

static void put_class_name(FILE *f, const teller_diff_class *c)
{
    fprintf(f, "%s steps <span class=\"op\">", teller_step_kind_name(c->kind));
    rep_html_name(f, c->family[0] ? c->family : "(no annotation)", 0);
    fputs("</span>", f);
    if (c->kind != TELLER_STEP_ITERATION)
        fprintf(f, " of %" PRId64 "-%" PRId64 " %s", c->size_lo, c->size_hi, c->by_kernels ? "kernels" : "tokens");
}

static void put_dur_cell(FILE *f, double ns, int sign)
{
    char du[32];
    teller_fmt_dur(du, sizeof du, ns);
    fprintf(f, "<td class=\"n\">%s%s</td>", sign && ns > 0 ? "+" : "", du);
}

teller_status teller_report_html_diff(const teller_diff *d, const teller_store *ref, const teller_store *run,
                                      const char *title, FILE *out, teller_error *err)
{
    if (!d || !ref || !run || !out)
        return teller_error_set(err, TELLER_ERR_ARG, "html", 0, "no diff, store or output stream");
    FILE *f = out;
    page_head(f, title && *title ? title : "teller diff");
    fprintf(f, "<p class=\"meta\">reference: %d rank%s \xc2\xb7 %u step rows", d->verdict.ref_ranks,
            d->verdict.ref_ranks == 1 ? "" : "s", d->ref_rows);
    if (d->ref_device[0]) {
        fputs(" \xc2\xb7 ", f);
        rep_html(f, d->ref_device, 0);
    }
    fprintf(f, "<br>run: %d rank%s \xc2\xb7 %u step rows", d->verdict.run_ranks, d->verdict.run_ranks == 1 ? "" : "s",
            d->run_rows);
    if (d->run_device[0]) {
        fputs(" \xc2\xb7 ", f);
        rep_html(f, d->run_device, 0);
    }
    fputs("</p>\n", f);
    if (!d->verdict.comparable) {
        fputs("<p class=\"expl\">These runs cannot be compared: ", f);
        rep_html(f, d->verdict.why, 0);
        fputs(". Compared anyway (--force).</p>\n", f);
    }
    fputs("<h2>Step classes</h2>\n<div class=\"tw\"><table><tr><th>steps</th><th>rows (ref / run)</th>"
          "<th>median ref</th><th>median run</th><th>change</th><th>spread ref / run</th><th></th></tr>\n",
          f);
    for (size_t i = 0; i < d->nclasses; i++) {
        const teller_diff_class *c = &d->classes[i];
        fputs("<tr><td>", f);
        put_class_name(f, c);
        fprintf(f, "</td><td class=\"n\">%u / %u</td>", c->ref_rows, c->run_rows);
        put_dur_cell(f, (double)c->ref_ns, 0);
        put_dur_cell(f, (double)c->run_ns, 0);
        put_dur_cell(f, (double)(c->run_ns - c->ref_ns), 1);
        char a[32], b[32];
        fprintf(f, "<td class=\"n\">%s / %s</td><td>%s</td></tr>\n", teller_fmt_dur(a, sizeof a, (double)c->ref_spread_ns),
                teller_fmt_dur(b, sizeof b, (double)c->run_spread_ns), !c->judged ? "not judged: too few steps" : c->changed ? "changed" : "within the spread");
    }
    size_t nchanged = 0;
    while (nchanged < d->nchanges && d->changes[nchanged].changed)
        nchanged++;
    size_t shown = nchanged ? nchanged : d->nchanges < 5 ? d->nchanges : 5;
    fputs("</table></div>\n<h2>Changes, worst first</h2>\n", f);
    if (!nchanged)
        fprintf(f, "<p class=\"note\">No operator's time per step moved past its noise%s</p>\n",
                shown ? "; the largest moves within it:" : ".");
    if (shown)
        fputs("<div class=\"tw\"><table><tr><th>#</th><th>operator</th><th>steps</th><th>rank</th><th>ref</th>"
              "<th>run</th><th>change</th><th>noise</th><th>calls</th><th>ranks past the noise</th></tr>\n",
              f);
    for (size_t i = 0; i < shown && i < TELLER_REPORT_MAX_CHANGES; i++) {
        const teller_diff_change *c = &d->changes[i];
        fprintf(f, "<tr><td class=\"n\">%zu</td><td><span class=\"tag\">%s</span><span class=\"op\">", i + 1,
                teller_diff_what_name(c->what));
        rep_html_name(f, c->op, 0);
        fputs("</span>", f);
        if (c->ref_name[0] || c->run_name[0]) {
            fputs("<br><span class=\"note op\">", f);
            rep_html_name(f, c->ref_name[0] ? c->ref_name : c->run_name, 160);
            if (c->ref_name[0] && c->run_name[0] && strcmp(c->ref_name, c->run_name)) {
                fputs(" \xe2\x86\x92 ", f);
                rep_html_name(f, c->run_name, 160);
            }
            fputs("</span>", f);
        }
        fputs("</td><td>", f);
        put_class_name(f, &d->classes[c->cls]);
        fprintf(f, "</td><td class=\"n\">%d</td>", c->rank);
        put_dur_cell(f, (double)c->ref_ns, 0);
        put_dur_cell(f, (double)c->run_ns, 0);
        put_dur_cell(f, (double)(c->run_ns - c->ref_ns), 1);
        put_dur_cell(f, (double)c->noise_ns, 0);
        fprintf(f, "<td class=\"n\">%g \xe2\x86\x92 %g</td><td class=\"n\">%u of %u</td></tr>\n", c->ref_count,
                c->run_count, c->ranks_changed, c->ranks);
    }
    if (shown)
        fputs("</table></div>\n", f);
    const teller_diff_kernel *ks[2] = {d->added, d->gone};
    size_t nk[2] = {d->nadded, d->ngone};
    for (int w = 0; w < 2; w++) {
        fprintf(f, "<h2>Kernels %s</h2>\n", w ? "only the reference launched" : "only the run launched");
        if (!nk[w])
            fputs("<p class=\"note\">None.</p>\n", f);
        for (size_t i = 0; i < nk[w]; i++) {
            fputs("<div><span class=\"op\">", f);
            rep_html_name(f, ks[w][i].name, 0);
            char du[32];
            fprintf(f, "</span><span class=\"dur\">%s per step row</span></div>\n",
                    teller_fmt_dur(du, sizeof du, ks[w][i].ns_per_step));
        }
    }
    teller_status status = TELLER_OK;
    if (d->nclasses && d->classes[0].rank != INT32_MIN) {
        const teller_diff_class *c = &d->classes[0];
        hw a, b;
        int oa = hw_open(&a, ref, f), ob = hw_open(&b, run, f);
        int64_t a0 = 0, b0 = 0;
        int64_t la = oa ? 0 : step_len(&a, c->rank, c->ref_step, &a0);
        int64_t lb = ob ? 0 : step_len(&b, c->rank, c->run_step, &b0);
        int64_t span = (la > lb ? la : lb) * 5 / 4 + 1000;
        fputs("<h2>One step of the first class, reference above run</h2>\n<p class=\"note\">", f);
        put_class_name(f, c);
        fprintf(f, ", rank %d: the steps nearest each run's median, on the same time scale.</p>\n", c->rank);
        if (oa || ob || rank_timeline(&a, c->rank, c->ref_step, a0 - span / 10, span, "reference") != 0 ||
            rank_timeline(&b, c->rank, c->run_step, b0 - span / 10, span, "run") != 0)
            status = teller_error_set(err, TELLER_ERR_NOMEM, "html", 0, "out of memory");
        put_legend(f, 0, 0);
        hw_close(&a);
        hw_close(&b);
    }
    fputs("</body>\n</html>\n", f);
    if (status == TELLER_OK && (fflush(out) != 0 || ferror(out)))
        status = teller_error_set(err, TELLER_ERR_IO, "html", 0, "write failed");
    return status;
}
