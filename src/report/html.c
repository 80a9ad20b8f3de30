/*
 * html.c - the self-contained HTML report (report.h).
 *
 * One page, no external resources and no script: inline CSS and inline
 * SVG. Every string from a trace or a log goes through rep_html. The
 * timelines stay small on big runs: each lane draws only its main rows
 * (the rank's step-marker thread at depth 0-1, every GPU stream) inside the
 * window, and slices narrower than SMALL_PX that touch each other within a
 * pixel are merged into one rectangle, so a lane holds at most about one
 * rectangle per pixel of width whatever the number of events.
 */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "teller/report.h"
#include "teller/tree.h"
#include "report_internal.h"

/* Timeline geometry, in SVG user units (pixels at 100%). */
#define TL_W       1200.0 /* whole width */
#define TL_X0      150.0  /* left edge of the plot (labels before) */
#define TL_X1      1190.0 /* right edge of the plot */
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
    "overflow-wrap:break-word}table.sum tr:not(.ex) td{border-bottom:none}"
    ".blame{font-weight:600;color:#b3161b}"
    ".step{border:1px solid #dde2ea;border-radius:6px;padding:4px 16px 12px;margin:18px 0;background:#fcfdfe}"
    ".expl{background:#fff8e6;border-left:4px solid #f0a500;padding:6px 10px;margin:8px 0}"
    ".tag{display:inline-block;min-width:64px;font-size:11px;font-weight:600;color:#fff;background:#6b7a90;"
    "border-radius:3px;padding:0 5px;margin-right:6px;text-align:center}"
    ".tag.KERNEL{background:#3467c4}.tag.ENGINE{background:#7b4fb5}.tag.FRONTEND{background:#a68a1c}"
    ".tag.BACKEND{background:#2f8f7f}.tag.RUNTIME,.tag.DRIVER{background:#c06a14}.tag.SYNC{background:#777}"
    ".tag.MEMCPY,.tag.MEMSET{background:#3c9a3c}.tag.COMM{background:#e05a00}"
    "ol.chain{margin:4px 0 10px;padding-left:24px}ol.chain li{margin:1px 0}"
    "ol.chain li.cul{font-weight:600;color:#b3161b}.dur{color:#5a6478;margin-left:6px;white-space:nowrap}"
    ".note{color:#5a6478}.sev{font-weight:600;color:#b3161b}"
    "svg{display:block;max-width:100%;height:auto}svg text{font:10px system-ui,sans-serif;fill:#333}"
    "svg .lbl{font-size:10.5px}svg .ax{fill:#555}"
    ".bg{fill:#fafbfc}.band{fill:#eef1f5}.bandk{fill:#fff0c2}.grid{stroke:#d9dee6;stroke-width:.5}"
    ".sep{stroke:#b9c1cc;stroke-width:.6}"
    ".mk{fill:#7b4fb5}.le{fill:#a88bd1}.lf{fill:#e1cf7a}.lb{fill:#6cc0b0}.lr{fill:#f0a868}.ls{fill:#9a9a9a}"
    ".lo{fill:#c4c9d2}.gk{fill:#3f7fe0}.gc{fill:#f26b1d}.cc{fill:#f7a26b}.gm{fill:#3fae4a}.gs{fill:#7fcf86}"
    ".cul{fill:none;stroke:#d0021b;stroke-width:2}.culm{fill:#d0021b}"
    ".vic{fill:none;stroke:#7a3b00;stroke-width:1.5;stroke-dasharray:3 2}svg text.miss{fill:#d0021b;font-weight:600}"
    ".bar{fill:#8fa6c8}.bara{fill:#d0342c}"
    ".legend span{display:inline-block;margin-right:14px;font-size:12px}"
    ".legend i{display:inline-block;width:12px;height:10px;margin-right:4px;vertical-align:-1px}";

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

/* ---- timeline ---------------------------------------------------------- */

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
            fprintf(f, " (%s)", rep_dur(du, sizeof du, w->ev->dur_ns[p->e]));
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

/* A tick step of 1, 2 or 5 times a power of ten giving at most ~10 ticks. */
static double nice_step(double span)
{
    double raw = span / 10.0, p = 1e-9;
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
 * rank's CPU lane when its thread or depth is not drawn. ns is the time
 * the tooltip gives. */
static void outline(const hw *w, const tl *t, const tl_lane *ln, size_t nl, uint32_t e, const char *cls,
                    int64_t ns)
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
    fprintf(f, " (%s%s)</title></rect>", rep_dur(du, sizeof du, ns), cul ? " in this step" : "");
    if (cul)
        fprintf(f, "<path class=\"culm\" d=\"M%.1f %d l-5 -8 h10 z\"/>", (x0 + x1) / 2, TL_TOP - 14);
    fputc('\n', f);
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

/* draw: per rank (w->ranks' index), whether its lanes are drawn */
static int timeline(hw *w, const teller_diag_step *s, const rep_blame *bl, const uint8_t *draw)
{
    FILE *f = w->f;
    uint32_t k = s->pred.step;
    int64_t k0 = 0, k1 = 0;
    if (s->dur_ns > 0) {
        k0 = s->start_ns;
        k1 = s->start_ns + s->dur_ns;
    } else if (!step_span(w, k, &k0, &k1)) {
        fputs("<p class=\"note\">No time window is known for this step; no timeline.</p>\n", f);
        return 0;
    }
    /* a step whose trace ends long before the step did (a hang the
     * watchdog took the process down in: nothing after it was recorded)
     * is drawn as far as the trace goes */
    int64_t a = 0, b = 0;
    if (s->dur_ns > 0 && step_span(w, k, &a, &b) && b > k0 && (double)(b - k0) * 100 < (double)s->dur_ns) {
        char held[32], all[32];
        fprintf(f, "<p class=\"note\">The trace holds the first %s of this step's %s: what came after was never "
                   "recorded.</p>\n",
                rep_dur(held, sizeof held, b - k0), rep_dur(all, sizeof all, s->dur_ns));
        k1 = b;
    }
    if (k1 <= k0)
        k1 = k0 + 1000;
    int64_t len = k1 - k0, w0 = k0 - len / 8, w1 = k1 + len / 8;
    if (k > 0 && step_span(w, k - 1, &a, &b) && a < w0)
        w0 = a;
    if (step_span(w, k + 1, &a, &b) && b > w1)
        w1 = b;
    /* neighbours give context, not the scale */
    if (w0 < k0 - 3 * len / 2)
        w0 = k0 - 3 * len / 2;
    if (w1 > k1 + 3 * len / 2)
        w1 = k1 + 3 * len / 2;
    tl t = {f, w0, w1, (TL_X1 - TL_X0) / (double)(w1 - w0), {0}, {0}, {0}};

    /* Lanes: per rank, its main CPU thread then its GPU streams with work here. */
    size_t cap = w->nrows + 1, nl = 0;
    tl_lane *ln = malloc(cap * sizeof *ln);
    if (!ln)
        return -1;
    int y = TL_TOP;
    /* rank order; of a fleet's few, the root rank's lanes first */
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
            if (draw_row(w, &t, i, 0, 0, NULL, 1) == 0)
                continue;
            ln[nl++] = (tl_lane){i, 0, r, y, TL_GPU_H};
            y += TL_GPU_H + TL_GAP;
        }
        y += 4;
    }
    int height = y + TL_AXIS_H;

    fprintf(f, "<svg viewBox=\"0 0 %.0f %d\" width=\"%.0f\" height=\"%d\" xmlns=\"http://www.w3.org/2000/svg\" "
               "role=\"img\" aria-label=\"timeline of step %u\">\n",
            TL_W, height, TL_W, height, k);
    fprintf(f, "<rect class=\"bg\" x=\"%.0f\" y=\"%d\" width=\"%.0f\" height=\"%d\"/>\n", TL_X0, TL_TOP - 14,
            TL_X1 - TL_X0, y - TL_TOP + 14);
    /* step bands */
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
        if (bb < w0 || ba > w1)
            continue;
        double x0 = tl_x(&t, ba), x1 = tl_x(&t, bb);
        fprintf(f, "<rect class=\"%s\" x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"%d\"/>", dk ? "band" : "bandk", x0,
                TL_TOP - 14, x1 - x0 > 0.5 ? x1 - x0 : 0.5, y - TL_TOP + 14);
        fprintf(f, "<text x=\"%.1f\" y=\"%d\"%s>step %u</text>\n", x0 + 3, TL_TOP - 4,
                dk ? "" : " font-weight=\"600\"", j);
    }
    /* grid and axis, in ms from the start of step k (in s past 10 s, so
     * that a hung step's ticks read 100, not 100000) */
    int in_s = w1 - w0 > 10 * (int64_t)1000000000;
    double span_ms = (double)(w1 - w0) / 1e6, st_ms = nice_step(span_ms);
    double first = (double)(w0 - k0) / 1e6;
    long i0 = (long)(first / st_ms);
    if ((double)i0 * st_ms < first)
        i0++;
    for (long i = i0;; i++) {
        double ms = (double)i * st_ms;
        int64_t ns = k0 + (int64_t)(ms * 1e6);
        if (ns > w1)
            break;
        double x = tl_x(&t, ns);
        fprintf(f, "<line class=\"grid\" x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\"/>", x, TL_TOP - 14, x, y + 3);
        fprintf(f, "<text class=\"ax\" x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%g</text>\n", x, y + 14,
                in_s ? ms / 1000 : ms);
    }
    fprintf(f, "<text class=\"ax\" x=\"%.0f\" y=\"%d\" text-anchor=\"end\">%s from the start of step %u</text>\n",
            TL_X1, y + 27, in_s ? "s" : "ms", k);

    /* lanes */
    size_t prev_rank = SIZE_MAX;
    for (size_t l = 0; l < nl; l++) {
        const rep_row *row = &w->rows[ln[l].row];
        if (prev_rank != SIZE_MAX && ln[l].rank != prev_rank)
            fprintf(f, "<line class=\"sep\" x1=\"0\" y1=\"%d\" x2=\"%.0f\" y2=\"%d\"/>\n", ln[l].y - 3, TL_X1,
                    ln[l].y - 3);
        prev_rank = ln[l].rank;
        if (ln[l].cpu)
            fprintf(f, "<text class=\"lbl\" x=\"4\" y=\"%d\">rank %d \xc2\xb7 cpu %d</text>\n", ln[l].y + 14, row->rank,
                    row->tid);
        else
            fprintf(f, "<text class=\"lbl\" x=\"4\" y=\"%d\">rank %d \xc2\xb7 stream %d</text>\n", ln[l].y + 9,
                    row->rank, row->tid);
        pend p[2] = {{0}, {0}};
        draw_row(w, &t, ln[l].row, ln[l].y + (ln[l].cpu ? 0 : 1), ln[l].cpu, p, 0);
        pend_flush(w, &t, &p[0]);
        pend_flush(w, &t, &p[1]);
        path_flush(&t);
        fputc('\n', f);
    }

    /* the culprit (only ever on the root rank, rep_blame), or the root
     * rank's missing call and the ranks that waited for it */
    if (bl->culprit != TELLER_NONE)
        outline(w, &t, ln, nl, bl->culprit, "cul", s->culprit_ns);
    for (size_t v = 0; v < bl->nvictims; v++)
        outline(w, &t, ln, nl, bl->victims[v], "vic", w->ev->dur_ns[bl->victims[v]]);
    if (bl->missing) {
        size_t r = rank_index(w, s->root_rank);
        for (size_t l = 0; l < nl && r != SIZE_MAX; l++)
            if (ln[l].rank == r) {
                char nm[256];
                teller_name_normalize(s->pred.cand[0].op, nm, sizeof nm);
                fprintf(f, "<text class=\"miss\" x=\"%.1f\" y=\"%d\">never launched ", tl_x(&t, k0) + 3,
                        ln[l].y + (ln[l].cpu ? 14 : 9));
                rep_html(f, nm, 80);
                fputs("</text>\n", f);
                break;
            }
    }
    fputs("</svg>\n", f);
    free(ln);
    for (int cl = 0; cl < C_COUNT; cl++)
        free(t.path[cl]);
    return 0;
}

/* ---- sections ---------------------------------------------------------- */

static void put_legend(FILE *f)
{
    static const char *items[][2] = {
        {"mk", "step marker"},   {"le", "engine"},      {"lf", "python"},       {"lb", "torch op"},
        {"lr", "CUDA API"},      {"cc", "comm op (CPU)"}, {"gk", "kernel"},     {"gc", "comm kernel"},
        {"gm", "copy"},          {"gs", "memset"},      {"ls", "sync"},         {"lo", "other"},
        {"bandk", "the step"},   {"band", "neighbour steps"},
    };
    fputs("<div class=\"legend\">", f);
    for (size_t i = 0; i < sizeof items / sizeof *items; i++)
        fprintf(f, "<span><svg width=\"12\" height=\"10\" style=\"display:inline-block;vertical-align:-1px;"
                   "margin-right:4px\"><rect class=\"%s\" width=\"12\" height=\"10\"/></svg>%s</span>",
                items[i][0], items[i][1]);
    fputs("<span><svg width=\"12\" height=\"10\" style=\"display:inline-block;vertical-align:-1px;margin-right:4px\">"
          "<rect class=\"cul\" x=\"1\" y=\"1\" width=\"10\" height=\"8\"/></svg>culprit</span>"
          "<span><svg width=\"12\" height=\"10\" style=\"display:inline-block;vertical-align:-1px;margin-right:4px\">"
          "<rect class=\"vic\" x=\"1\" y=\"1\" width=\"10\" height=\"8\"/></svg>waited for the root rank</span></div>\n",
          f);
}

/* When the root rank holds no culprit event: what is known of it, and
 * the ranks that waited, as evidence. */
static void no_culprit(hw *w, const teller_diag_step *s, const rep_blame *b)
{
    FILE *f = w->f;
    const teller_events *ev = w->ev;
    char du[32];
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
        fprintf(f, "; rank%s ", b->nvictims == 1 ? "" : "s");
        for (size_t v = 0; v < b->nvictims; v++)
            fprintf(f, "%s%d", v ? ", " : "", teller_store_event_rank(w->st, b->victims[v]));
        fprintf(f, " waited %s", rep_dur(du, sizeof du, b->waited_ns));
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
        fprintf(f, "</td><td class=\"n\">%s</td></tr>\n", rep_dur(du, sizeof du, ev->dur_ns[e]));
    }
    fputs("</table></div>\n", f);
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
        char du[32];
        const char *tag = teller_layer_tag((teller_layer)ev->layer[e]);
        fprintf(f, "<li%s><span class=\"tag %s\">%s</span><span class=\"op\">", i == 0 ? " class=\"cul\"" : "", tag,
                tag);
        rep_html_name(f, teller_store_str(w->st, ev->name[e]), 400);
        /* the culprit's time is the diagnosis's (the numbers say the
         * same); this one call's own time only beside it */
        if (i == 0 && s->culprit_ns > 0 && s->culprit_ns != ev->dur_ns[e]) {
            char d2[32];
            fprintf(f, "</span><span class=\"dur\">%s in this step (this call %s)", rep_dur(du, sizeof du, s->culprit_ns),
                    rep_dur(d2, sizeof d2, ev->dur_ns[e]));
        } else
            fprintf(f, "</span><span class=\"dur\">%s", rep_dur(du, sizeof du, i == 0 && s->culprit_ns > 0 ? s->culprit_ns : ev->dur_ns[e]));
        if (ev->flags[e] & TELLER_F_GPU)
            fprintf(f, " \xc2\xb7 device %d stream %d", teller_event_pid(ev, e), teller_event_tid(ev, e));
        else
            fprintf(f, " \xc2\xb7 thread %d", teller_event_tid(ev, e));
        fprintf(f, " \xc2\xb7 rank %d", teller_store_event_rank(w->st, e));
        if (ev->flags[e] & TELLER_F_STEP)
            fputs(" \xc2\xb7 step marker", f);
        if (i == 0)
            fputs(" \xc2\xb7 culprit", f);
        fputs("</span></li>\n", f);
    }
    fputs("</ol>\n", f);
}

/* draw: the ranks of the timeline, the only ones the per-rank table lists */
static void numbers(hw *w, const teller_diag_step *s, const rep_blame *bl, const uint8_t *draw)
{
    FILE *f = w->f;
    char a[32], b[32];
    fputs("<div class=\"tw\"><table><tr><th>quantity</th><th>value</th><th>usual</th></tr>\n", f);
    fprintf(f, "<tr><td>step time (longest rank)</td><td class=\"n\">%s</td><td class=\"n\">%s</td></tr>\n",
            rep_dur(a, sizeof a, s->dur_ns), s->usual_ns >= 0 ? rep_dur(b, sizeof b, s->usual_ns) : "no yardstick");
    if (s->usual_ns > 0) {
        fprintf(f, "<tr><td>over usual</td><td class=\"n sev\">%s</td><td class=\"n\">", rep_dur(a, sizeof a, s->excess_ns));
        /* beyond 100 times the usual, a ratio; never a percentage in the millions */
        double r = (double)(s->usual_ns + s->excess_ns) / (double)s->usual_ns;
        double pct = 100.0 * (double)s->excess_ns / (double)s->usual_ns;
        if (r < 100)
            fprintf(f, "+%.*f%% over usual", pct < 10 ? 1 : 0, pct);
        else
            fprintf(f, "%s the usual", rep_times(b, sizeof b, r));
        fputs("</td></tr>\n", f);
    }
    if (bl->missing)
        fprintf(f, "<tr><td>culprit time in this step</td><td class=\"n sev\">not launched on rank %d</td>"
                   "<td class=\"n\">%s</td></tr>\n",
                s->root_rank, rep_dur(b, sizeof b, s->culprit_base_ns));
    else {
        fprintf(f, "<tr><td>culprit time in this step</td><td class=\"n\">%s</td><td class=\"n\">%s",
                rep_dur(a, sizeof a, s->culprit_ns), rep_dur(b, sizeof b, s->culprit_base_ns));
        if (s->culprit_base_ns > 0)
            fprintf(f, " (%s)", rep_times(a, sizeof a, (double)s->culprit_ns / (double)s->culprit_base_ns));
        fputs("</td></tr>\n", f);
    }
    if (bl->nvictims)
        fprintf(f, "<tr><td>longest wait of another rank</td><td class=\"n\">%s</td><td></td></tr>\n",
                rep_dur(a, sizeof a, bl->waited_ns));
    fprintf(f, "<tr><td>abnormality score</td><td class=\"n\">%.3f</td><td></td></tr>\n", s->pred.score);
    fprintf(f, "<tr><td>root rank / node</td><td class=\"n\">%d / %d</td><td></td></tr>\n</table></div>\n",
            s->root_rank, s->root_node);

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
        if (m->step != s->pred.step)
            continue;
        size_t r = rank_index(w, m->rank);
        if (r != SIZE_MAX && !draw[r])
            continue;
        if (!any)
            fputs("<div class=\"tw\"><table><tr><th>rank</th><th>node</th><th>window</th><th>kernels</th><th>comm</th><th>copies</th>"
                  "<th>GPU idle</th><th>kernel count</th></tr>\n",
                  f);
        any = 1;
        char c1[32], c2[32], c3[32], c4[32], c5[32];
        fprintf(f, "<tr%s><td class=\"n\">%d</td><td class=\"n\">%d</td><td class=\"n\">%s</td><td class=\"n\">%s</td>"
                   "<td class=\"n\">%s</td><td class=\"n\">%s</td><td class=\"n\">%s</td><td class=\"n\">%u</td></tr>\n",
                m->rank == s->root_rank ? " class=\"root\"" : "", m->rank, m->node, rep_dur(c1, sizeof c1, m->dur_ns),
                rep_dur(c2, sizeof c2, m->kernel_ns), rep_dur(c3, sizeof c3, m->comm_ns),
                rep_dur(c4, sizeof c4, m->memcpy_ns), rep_dur(c5, sizeof c5, m->gpu_idle_ns), m->kernels);
    }
    if (any && bl->missing) {
        int seen = 0;
        for (size_t i = 0; i < w->nsum; i++)
            seen |= w->sum[i].step == s->pred.step && w->sum[i].rank == s->root_rank;
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

/* "1 ms", "100 s": the label of a power of ten of nanoseconds. */
static void decade_label(char *buf, size_t cap, int e)
{
    static const char *const unit[] = {"ns", "us", "ms", "s"};
    int u = e / 3 < 3 ? e / 3 : 3;
    long m = 1;
    for (int i = 3 * u; i < e; i++)
        m *= 10;
    snprintf(buf, cap, "%ld %s", m, unit[u]);
}

/* Bars of every step's time on a log scale (one hung step of minutes
 * would flatten a linear one), with a grid line per power of ten;
 * abnormal ones red, linking to their section. */
static void overview(hw *w, const size_t *has_section)
{
    FILE *f = w->f;
    const teller_diagnosis *d = w->d;
    if (d->n == 0)
        return;
    size_t cols = d->n < 1040 ? d->n : 1040;
    int64_t *hmax = calloc(cols, sizeof *hmax);
    size_t *pick = malloc(cols * sizeof *pick);
    if (!hmax || !pick) {
        free(hmax);
        free(pick);
        return;
    }
    int64_t top = 1, low = INT64_MAX;
    for (size_t c = 0; c < cols; c++)
        pick[c] = SIZE_MAX;
    for (size_t i = 0; i < d->n; i++) {
        size_t c = i * cols / d->n;
        const teller_diag_step *s = &d->steps[i];
        /* a column shows its worst step: abnormal before normal, then longer */
        int better = pick[c] == SIZE_MAX ||
                     (s->pred.abnormal && !d->steps[pick[c]].pred.abnormal) ||
                     (s->pred.abnormal == d->steps[pick[c]].pred.abnormal && s->dur_ns > hmax[c]);
        if (better) {
            pick[c] = i;
            hmax[c] = s->dur_ns;
        }
        if (s->dur_ns > top)
            top = s->dur_ns;
        if (s->dur_ns > 0 && s->dur_ns < low)
            low = s->dur_ns;
    }
    if (low > top)
        low = top;
    /* the scale: from a decade under the power of ten at or below the
     * shortest step (so that every bar has at least a decade of height)
     * to the power at or above the longest */
    int e0 = 0, e1 = 0;
    for (double p = 100; p <= (double)low && e0 < 18; p *= 10)
        e0++;
    for (double p = 1; p < (double)top && e1 < 18; p *= 10)
        e1++;
    if (e1 <= e0)
        e1 = e0 + 1;
    const int H = 100;
    double bw = (TL_X1 - TL_X0) / (double)cols;
    char du[32];
    fprintf(f, "<svg viewBox=\"0 0 %.0f %d\" width=\"%.0f\" height=\"%d\" xmlns=\"http://www.w3.org/2000/svg\" "
               "role=\"img\" aria-label=\"step times, log scale\">\n",
            TL_W, H + 26, TL_W, H + 26);
    fprintf(f, "<text class=\"lbl\" x=\"4\" y=\"14\">step time</text><text class=\"ax\" x=\"4\" y=\"28\">log scale</text>"
               "<text class=\"ax\" x=\"4\" y=\"42\">max %s</text>\n",
            rep_dur(du, sizeof du, top));
    for (int e = e0; e <= e1; e++) {
        double y = H + 4 - (double)H * (e - e0) / (e1 - e0);
        decade_label(du, sizeof du, e);
        fprintf(f, "<line class=\"grid\" x1=\"%.0f\" y1=\"%.1f\" x2=\"%.0f\" y2=\"%.1f\"/><text class=\"ax\" x=\"%.0f\" "
                   "y=\"%.1f\" text-anchor=\"end\">%s</text>\n",
                TL_X0, y, TL_X1, y, TL_X0 - 4, y + 3.5, du);
    }
    for (size_t c = 0; c < cols; c++) {
        size_t i = pick[c];
        if (i == SIZE_MAX)
            continue;
        const teller_diag_step *s = &d->steps[i];
        double h = s->dur_ns > 0 ? (double)H * (log10((double)s->dur_ns) - e0) / (e1 - e0) : 0;
        if (h < 1)
            h = 1;
        int link = s->pred.abnormal && has_section[i];
        if (link)
            fprintf(f, "<a href=\"#step-%u\">", s->pred.step);
        fprintf(f, "<rect class=\"%s\" x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%.1f\"><title>step %u: %s%s</title>"
                   "</rect>",
                s->pred.abnormal ? "bara" : "bar", TL_X0 + (double)c * bw, H + 4 - h, bw > 1.5 ? bw - 0.5 : bw, h,
                s->pred.step, rep_dur(du, sizeof du, s->dur_ns), s->pred.abnormal ? " (abnormal)" : "");
        if (link)
            fputs("</a>", f);
    }
    fprintf(f, "\n<text class=\"ax\" x=\"%.0f\" y=\"%d\">step %u</text><text class=\"ax\" x=\"%.0f\" y=\"%d\" "
               "text-anchor=\"end\">step %u</text>\n</svg>\n",
            TL_X0, H + 18, d->steps[0].pred.step, TL_X1, H + 18, d->steps[d->n - 1].pred.step);
    free(hmax);
    free(pick);
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
            n += r->req[i].steps[j].step == s->pred.step;
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
            if (q->steps[j].step != s->pred.step)
                continue;
            char a[32], b[32];
            fputs("<tr><td><code>", f);
            rep_html(f, q->id, 120);
            fprintf(f, "</code></td><td>%s</td><td>%s</td><td>", q->latency_ns >= 0 ? rep_dur(a, sizeof a, q->latency_ns) : "?",
                    rep_dur(b, sizeof b, q->steps[j].attributed_ns));
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

static int step_section(hw *w, const teller_diag_step *s)
{
    FILE *f = w->f;
    char du[32];
    fprintf(f, "<section class=\"step\" id=\"step-%u\">\n<h3>Step %u \xe2\x80\x94 ", s->pred.step, s->pred.step);
    rep_html(f, fault_of(s), 0);
    fputs(" (", f);
    rep_html(f, s->pred.fault_type, 0);
    fprintf(f, "), score %.3f, +%s</h3>\n", s->pred.score, rep_dur(du, sizeof du, s->excess_ns));
    fputs("<div class=\"expl\">", f);
    if (s->pred.explanation[0])
        rep_html(f, s->pred.explanation, 0);
    else
        fputs("<span class=\"note\">No explanation.</span>", f);
    fputs("</div>\n", f);
    rep_blame b;
    rep_blame_of(w->st, s, &b);
    uint8_t *draw = malloc(w->nranks + 1);
    if (!draw)
        return -1;
    timeline_ranks(w, s, &b, draw);
    if (timeline(w, s, &b, draw) != 0) {
        free(draw);
        return -1;
    }
    put_legend(f);
    fputs(b.culprit != TELLER_NONE || s->root_rank < 0 ? "<h4>Call chain to the culprit</h4>\n"
                                                         : "<h4>The root rank and the ranks that waited</h4>\n",
          f);
    call_chain(w, s, &b);
    fputs("<h4>Numbers</h4>\n", f);
    numbers(w, s, &b, draw);
    free(draw);
    fputs("<h4>Evidence</h4>\n", f);
    evidence(w, s);
    if (w->reqs)
        delayed_requests(w, s);
    fputs("</section>\n", f);
    return 0;
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
    worst *order = malloc((d->n + 1) * sizeof *order);
    size_t *has_section = calloc(d->n + 1, sizeof *has_section);
    w.ranks = malloc((nsrc + 1) * sizeof *w.ranks);
    w.main_row = malloc((nsrc + 1) * sizeof *w.main_row);
    teller_status status = TELLER_OK;
    if (!order || !has_section || !w.ranks || !w.main_row || rep_rows(st, &w.rows, &w.nrows) != 0) {
        status = teller_error_set(err, TELLER_ERR_NOMEM, "html", 0, "out of memory");
        goto done;
    }
    for (size_t i = 0; i < nsrc; i++) {
        int32_t r = teller_store_source_c(st, (uint32_t)i)->rank;
        int dup = 0;
        for (size_t j = 0; j < w.nranks; j++)
            dup |= w.ranks[j] == r;
        if (!dup)
            w.ranks[w.nranks++] = r;
    }
    qsort(w.ranks, w.nranks, sizeof *w.ranks, cmp_i32);
    pick_main_rows(&w);
    {
        teller_error e2;
        teller_error_clear(&e2);
        if (w.nsteps && teller_step_summaries(st, &w.sum, &w.nsum, &e2) != TELLER_OK) {
            w.sum = NULL;
            w.nsum = 0;
        }
    }

    size_t nab = 0;
    for (size_t i = 0; i < d->n; i++)
        if (d->steps[i].pred.abnormal)
            order[nab++] = (worst){d->steps[i].excess_ns, d->steps[i].pred.score, d->steps[i].pred.step, i};
    qsort(order, nab, sizeof *order, cmp_worst);
    size_t shown = nab < TELLER_REPORT_MAX_STEPS ? nab : TELLER_REPORT_MAX_STEPS;
    for (size_t i = 0; i < shown; i++)
        has_section[order[i].i] = 1;

    FILE *f = out;
    if (!title || !*title)
        title = "teller diagnosis";
    fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
          "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>",
          f);
    rep_html(f, title, 0);
    fprintf(f, "</title>\n<style>%s</style>\n</head>\n<body>\n<h1>", CSS);
    rep_html_name(f, title, 0);
    fputs("</h1>\n", f);
    {
        int64_t t0 = INT64_MAX, t1 = INT64_MIN;
        for (size_t i = 0; i < w.ev->n; i++) {
            if (w.ev->start_ns[i] < t0)
                t0 = w.ev->start_ns[i];
            if (w.ev->start_ns[i] + w.ev->dur_ns[i] > t1)
                t1 = w.ev->start_ns[i] + w.ev->dur_ns[i];
        }
        char du[32];
        fprintf(f, "<p class=\"meta\">%zu rank%s on %zu node%s \xc2\xb7 %u step%s \xc2\xb7 %zu events \xc2\xb7 %s of trace",
                w.nranks, w.nranks == 1 ? "" : "s", teller_store_num_nodes(st),
                teller_store_num_nodes(st) == 1 ? "" : "s", teller_store_step_count(st),
                teller_store_step_count(st) == 1 ? "" : "s", w.ev->n,
                rep_dur(du, sizeof du, w.ev->n ? t1 - t0 : 0));
        if (teller_store_num_warnings(st))
            fprintf(f, " \xc2\xb7 %" PRIu64 " events skipped with warnings", teller_store_num_warnings(st));
        fputs("</p>\n", f);
    }

    fputs("<h2>Summary</h2>\n", f);
    if (nab == 0)
        fprintf(f, "<p>No abnormal step among %zu diagnosed.</p>\n", d->n);
    else {
        fprintf(f, "<p><b>%zu</b> of %zu steps abnormal, worst first.</p>\n", nab, d->n);
        /* the explanation on a row of its own under its finding: as a
         * column it would not let the table fit a narrow window */
        fputs("<div class=\"tw\"><table class=\"sum\"><tr><th>step</th><th>score</th><th>fault (type)</th>"
              "<th>rank (node)</th><th>operator</th><th>excess</th></tr>\n",
              f);
        for (size_t i = 0; i < nab; i++) {
            const teller_diag_step *s = &d->steps[order[i].i];
            char du[32];
            if (has_section[order[i].i])
                fprintf(f, "<tr><td class=\"n\"><a href=\"#step-%u\">%u</a></td>", s->pred.step, s->pred.step);
            else
                fprintf(f, "<tr><td class=\"n\">%u</td>", s->pred.step);
            fprintf(f, "<td class=\"n\">%.3f</td><td>", s->pred.score);
            rep_html(f, fault_of(s), 0);
            if (s->fault[0]) {
                fputs(" <span class=\"note\">(", f);
                rep_html(f, s->pred.fault_type, 0);
                fputs(")</span>", f);
            }
            fprintf(f, "</td><td class=\"n\">%d (%d)</td><td class=\"op\">", s->root_rank, s->root_node);
            rep_html_name(f, s->pred.ncand > 0 ? s->pred.cand[0].op : "", 160);
            fprintf(f, "</td><td class=\"n\">%s</td></tr>\n<tr class=\"ex\"><td colspan=\"6\">",
                    rep_dur(du, sizeof du, s->excess_ns));
            rep_html_name(f, s->pred.explanation, 0);
            fputs("</td></tr>\n", f);
        }
        fputs("</table></div>\n", f);
    }
    overview(&w, has_section);

    if (nab) {
        fputs("<h2>Abnormal steps</h2>\n", f);
        if (nab > shown)
            fprintf(f, "<p class=\"note\">The %zu worst steps are shown in detail; %zu more are in the summary only.</p>\n",
                    shown, nab - shown);
        for (size_t i = 0; i < shown; i++)
            if (step_section(&w, &d->steps[order[i].i]) != 0) {
                status = teller_error_set(err, TELLER_ERR_NOMEM, "html", 0, "out of memory");
                goto done;
            }
    }

    fputs("<h2>Notes</h2>\n", f);
    if (d->nnotes == 0)
        fputs("<p class=\"note\">The analysis reported nothing it could not see.</p>\n", f);
    else {
        fputs("<ul>\n", f);
        for (size_t i = 0; i < d->nnotes; i++) {
            fputs("<li>", f);
            rep_html(f, d->notes[i], 0);
            fputs("</li>\n", f);
        }
        fputs("</ul>\n", f);
    }
    fputs("<p class=\"note\">Written by teller. Times are on node 0's clock; every name above is quoted from the "
          "traces and logs as recorded.</p>\n</body>\n</html>\n",
          f);
    if (fflush(f) != 0 || ferror(f))
        status = teller_error_set(err, TELLER_ERR_IO, "html", 0, "write failed");

done:
    free(order);
    free(has_section);
    free(w.ranks);
    free(w.main_row);
    free(w.rows);
    free(w.sum);
    return status;
}
