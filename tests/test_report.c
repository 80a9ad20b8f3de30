/*
 * test_report.c - the report writers (report.h) on a hand-made store with
 * hostile names, on a simulated case and on a real trace, each with a
 * hand-made diagnosis (the analysis is tested elsewhere).
 *
 * TELLER_REPORT_KEEP=DIR keeps the simulated case's report.html and
 * report.perfetto.json in DIR (for looking at them); TELLER_REPORT_BIG=1
 * makes that case 16 ranks and 200 steps.
 */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "teller/check.h"
#include "ingest/jdom.h"
#include "teller/diagnose.h"
#include "teller/ingest.h"
#include "teller/report.h"
#include "teller/sim.h"
#include "teller/tree.h"

#define HOSTILE_KERNEL "<script>alert(\"k\")</script>\x1b[31m'evil'&amp;\xff"
#define HOSTILE_EXPL   "kernel took <img src=x onerror=alert(1)> & 'more'"
#define HOSTILE_LOG    "[E] </pre><script src=http://evil/x.js></script>"
#define HOSTILE_NOTE   "</ul><SCRIPT>alert(2)</SCRIPT>"

/* A rendered output in memory. */
typedef struct buf {
    char  *p;
    size_t n;
} buf;

static void diag_init(teller_diagnosis *d, teller_diag_step *steps, size_t n)
{
    memset(d, 0, sizeof *d);
    memset(steps, 0, n * sizeof *steps);
    for (size_t i = 0; i < n; i++) {
        steps[i].pred.step = (uint32_t)i;
        steps[i].culprit_event = TELLER_NONE;
        steps[i].root_rank = -1;
        steps[i].root_node = -1;
    }
    d->steps = steps;
    d->n = n;
}

static void mark_abnormal(teller_diag_step *s, const teller_store *st, uint32_t culprit, double score,
                          const char *fault, const char *type, const char *expl)
{
    const teller_events *ev = teller_store_events(st);
    s->pred.abnormal = 1;
    s->pred.score = score;
    snprintf(s->pred.fault_type, sizeof s->pred.fault_type, "%s", type);
    snprintf(s->pred.view, sizeof s->pred.view, "vertical");
    snprintf(s->fault, sizeof s->fault, "%s", fault);
    snprintf(s->pred.explanation, sizeof s->pred.explanation, "%s", expl);
    s->culprit_event = culprit;
    if (culprit != TELLER_NONE) {
        s->root_rank = teller_store_event_rank(st, culprit);
        s->root_node = teller_store_event_node(st, culprit);
        s->pred.ncand = 1;
        s->pred.cand[0].rank = s->root_rank;
        snprintf(s->pred.cand[0].op, sizeof s->pred.cand[0].op, "%s", teller_store_str(st, ev->name[culprit]));
        snprintf(s->pred.cand[0].layer, sizeof s->pred.cand[0].layer, "%s",
                 teller_layer_tag((teller_layer)ev->layer[culprit]));
        s->pred.cand[0].score = score;
        s->culprit_ns = ev->dur_ns[culprit];
        s->culprit_base_ns = ev->dur_ns[culprit] / 3;
    }
}

/* Fills each diagnosed step's window from the store's step table. */
static void fill_windows(teller_diagnosis *d, const teller_store *st)
{
    const teller_step *s = teller_store_steps(st);
    for (size_t i = 0; i < teller_store_num_steps(st); i++) {
        teller_diag_step *ds = s[i].step < d->n ? &d->steps[s[i].step] : NULL;
        if (!ds)
            continue;
        if (ds->dur_ns == 0 || s[i].start_ns < ds->start_ns)
            ds->start_ns = s[i].start_ns;
        if (s[i].end_ns - ds->start_ns > ds->dur_ns)
            ds->dur_ns = s[i].end_ns - ds->start_ns;
    }
    for (size_t i = 0; i < d->n; i++) {
        d->steps[i].usual_ns = d->steps[i].dur_ns * 2 / 3;
        d->steps[i].excess_ns = d->steps[i].dur_ns - d->steps[i].usual_ns;
    }
}

static buf render_html(const teller_store *st, const teller_diagnosis *d, const char *title)
{
    buf b = {0};
    FILE *f = open_memstream(&b.p, &b.n);
    CHECK(f != NULL);
    if (!f)
        return b;
    teller_error err;
    teller_error_clear(&err);
    CHECK_EQ_INT(teller_report_html(st, d, NULL, title, f, &err), TELLER_OK);
    fclose(f);
    return b;
}

static buf render_perfetto(const teller_store *st, const teller_diagnosis *d)
{
    buf b = {0};
    FILE *f = open_memstream(&b.p, &b.n);
    CHECK(f != NULL);
    if (!f)
        return b;
    teller_error err;
    teller_error_clear(&err);
    CHECK_EQ_INT(teller_report_perfetto(st, d, f, &err), TELLER_OK);
    fclose(f);
    return b;
}

/* Parses the Perfetto trace b: its traceEvents array, checked to be one
 * (NULL when it is not), the document in *doc for jdom_free. */
static const jv *perfetto_events(const buf *b, jv **doc)
{
    teller_error err;
    teller_error_clear(&err);
    *doc = b->p ? jdom_parse("perfetto", b->p, b->n, &err) : NULL;
    CHECK(*doc != NULL);
    const jv *events = *doc ? jdom_get(*doc, "traceEvents") : NULL;
    CHECK(events && events->type == J_ARR);
    return events && events->type == J_ARR ? events : NULL;
}

static size_t count(const char *hay, const char *needle)
{
    size_t n = 0, len = strlen(needle);
    for (const char *p = strstr(hay, needle); p; p = strstr(p + len, needle))
        n++;
    return n;
}

/* Structural checks every HTML report must pass: no script element at all
 * (in any case), no raw control bytes, the page and its sections closed. */
static void check_html_safe(const buf *b)
{
    CHECK(b->p && b->n > 0);
    if (!b->p)
        return;
    int script = 0, ctrl = 0;
    for (size_t i = 0; i < b->n; i++) {
        unsigned char c = (unsigned char)b->p[i];
        if ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7f)
            ctrl = 1;
        if (c == '<' && i + 7 <= b->n) {
            char w[8];
            for (int k = 0; k < 7; k++)
                w[k] = (char)tolower((unsigned char)b->p[i + k]);
            w[7] = 0;
            script |= strcmp(w, "<script") == 0;
        }
    }
    CHECK(!script);
    CHECK(!ctrl);
    CHECK(strstr(b->p, "<!DOCTYPE html>") == b->p);
    CHECK(strstr(b->p, "</html>") != NULL);
    CHECK_EQ_INT(count(b->p, "<svg"), count(b->p, "</svg>"));
    CHECK_EQ_INT(count(b->p, "<section"), count(b->p, "</section>"));
    CHECK_EQ_INT(count(b->p, "<table"), count(b->p, "</table>"));
    CHECK_EQ_INT(count(b->p, "<tr"), count(b->p, "</tr>"));
    CHECK_EQ_INT(count(b->p, "<pre>"), count(b->p, "</pre>"));
    CHECK(strstr(b->p, "http://") == NULL || strstr(b->p, "http://www.w3.org/2000/svg") != NULL);
    CHECK(strstr(b->p, "src=") == NULL || strstr(b->p, "src=x") != NULL); /* only inside escaped text */
    CHECK(strstr(b->p, "<img") == NULL && strstr(b->p, "<link") == NULL);
}

/* The X events of a Chrome-trace document nest per (pid, tid). */
typedef struct xev {
    double  pid, tid;
    int64_t ts, end;
} xev;

static int cmp_xev(const void *a, const void *b)
{
    const xev *x = a, *y = b;
    if (x->pid != y->pid)
        return x->pid < y->pid ? -1 : 1;
    if (x->tid != y->tid)
        return x->tid < y->tid ? -1 : 1;
    if (x->ts != y->ts)
        return x->ts < y->ts ? -1 : 1;
    return (x->end < y->end) - (x->end > y->end); /* longer first */
}

/* Returns the number of X events that do not nest (0 when all do). */
static size_t check_nesting(const jv *events)
{
    xev *x = malloc((events->n + 1) * sizeof *x);
    size_t n = 0, bad = 0;
    if (!x)
        return SIZE_MAX;
    for (size_t i = 0; i < events->n; i++) {
        const jv *e = &events->items[i];
        if (strcmp(jdom_str(e, "ph", ""), "X") != 0)
            continue;
        int64_t ts = llround(jdom_num(e, "ts", 0) * 1000), dur = llround(jdom_num(e, "dur", 0) * 1000);
        x[n++] = (xev){jdom_num(e, "pid", -1), jdom_num(e, "tid", -1), ts, ts + dur};
    }
    qsort(x, n, sizeof *x, cmp_xev);
    int64_t stack[512];
    size_t sp = 0;
    for (size_t i = 0; i < n; i++) {
        if (i == 0 || x[i].pid != x[i - 1].pid || x[i].tid != x[i - 1].tid)
            sp = 0;
        while (sp && stack[sp - 1] <= x[i].ts)
            sp--;
        if (sp && stack[sp - 1] < x[i].end)
            bad++;
        if (sp < 512)
            stack[sp++] = x[i].end;
    }
    free(x);
    return bad;
}

static const jv *find_event(const jv *events, const char *ph, const char *name)
{
    for (size_t i = 0; i < events->n; i++) {
        const jv *e = &events->items[i];
        if (strcmp(jdom_str(e, "ph", ""), ph) == 0 && strcmp(jdom_str(e, "name", ""), name) == 0)
            return e;
    }
    return NULL;
}

static int has_thread_name(const jv *events, const char *part)
{
    for (size_t i = 0; i < events->n; i++) {
        const jv *e = &events->items[i];
        if (strcmp(jdom_str(e, "ph", ""), "M") == 0 && strcmp(jdom_str(e, "name", ""), "thread_name") == 0 &&
            strstr(jdom_str(jdom_get(e, "args"), "name", ""), part))
            return 1;
    }
    return 0;
}

static void keep(const char *name, const buf *b)
{
    const char *dir = getenv("TELLER_REPORT_KEEP");
    if (!dir || !b->p)
        return;
    char p[1024];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "wb");
    if (f) {
        fwrite(b->p, 1, b->n, f);
        fclose(f);
    }
    fprintf(stderr, "  kept %s (%zu bytes)\n", p, b->n);
}

static uint32_t add_ev(teller_store *st, uint16_t src, const char *name, teller_layer layer, uint8_t flags,
                       int64_t start_us, int64_t dur_us, int32_t pid, int32_t tid, uint32_t corr)
{
    teller_event_row r = {0};
    r.start_ns = 1700000000000000000LL + start_us * 1000;
    r.dur_ns = dur_us * 1000;
    r.name = teller_store_intern(st, name, strlen(name));
    r.layer = (uint8_t)layer;
    r.flags = flags;
    r.source = src;
    r.pid = pid;
    r.tid = tid;
    r.corr = corr;
    r.args = TELLER_NONE;
    return teller_store_add_event(st, &r);
}

static uint32_t find_named(const teller_store *st, const char *name)
{
    const teller_events *ev = teller_store_events(st);
    for (size_t i = 0; i < ev->n; i++)
        if (strcmp(teller_store_str(st, ev->name[i]), name) == 0)
            return (uint32_t)i;
    return TELLER_NONE;
}

/* Two steps on one rank: marker > aten::mm > cudaLaunchKernel -> the
 * hostile kernel; a comm kernel; two CPU ranges on another thread that
 * overlap without nesting. */
static teller_store *hostile_store(void)
{
    teller_store *st = teller_store_create();
    teller_source src = {0};
    src.path = teller_store_intern(st, "rank0.json", 10);
    src.rank = 0;
    src.pid = 100;
    teller_store_add_source(st, &src);
    for (int s = 0; s < 2; s++) {
        int64_t t = s * 1000;
        char nm[32];
        snprintf(nm, sizeof nm, "ProfilerStep#%d", s);
        add_ev(st, 0, nm, TELLER_LAYER_ENGINE, TELLER_F_STEP, t, 900, 100, 100, 0);
        add_ev(st, 0, "aten::mm", TELLER_LAYER_BACKEND, 0, t + 10, 300, 100, 100, 0);
        add_ev(st, 0, "cudaLaunchKernel", TELLER_LAYER_RUNTIME, 0, t + 20, 10, 100, 100, (uint32_t)(1 + 2 * s));
        add_ev(st, 0, s ? "ampere_sgemm_128x64_tn" : HOSTILE_KERNEL, TELLER_LAYER_KERNEL, TELLER_F_GPU, t + 40,
               s ? 100 : 600, 0, 7, (uint32_t)(1 + 2 * s));
        add_ev(st, 0, "cudaLaunchKernel", TELLER_LAYER_RUNTIME, TELLER_F_COMM, t + 400, 10, 100, 100,
               (uint32_t)(2 + 2 * s));
        add_ev(st, 0, "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
               TELLER_LAYER_KERNEL, TELLER_F_GPU | TELLER_F_COMM, t + 700, 150, 0, 20, (uint32_t)(2 + 2 * s));
    }
    add_ev(st, 0, "worker_a", TELLER_LAYER_FRONTEND, 0, 100, 300, 100, 200, 0);
    add_ev(st, 0, "worker_b", TELLER_LAYER_FRONTEND, 0, 200, 300, 100, 200, 0);
    teller_error err;
    teller_error_clear(&err);
    CHECK_EQ_INT(teller_tree_build(st, NULL, &err), TELLER_OK);
    return st;
}

static void test_html_escapes_everything_from_traces_and_logs(void)
{
    teller_store *st = hostile_store();
    CHECK_EQ_INT(teller_store_step_count(st), 2);
    uint32_t k = find_named(st, HOSTILE_KERNEL);
    CHECK(k != TELLER_NONE);
    teller_diag_step steps[2];
    teller_diagnosis d;
    diag_init(&d, steps, 2);
    fill_windows(&d, st);
    mark_abnormal(&steps[0], st, k, 0.93, "kernel_regression", "kernel", HOSTILE_EXPL);
    steps[0].pred.nev = 1;
    snprintf(steps[0].pred.ev[0].kind, sizeof steps[0].pred.ev[0].kind, "log");
    snprintf(steps[0].pred.ev[0].file, sizeof steps[0].pred.ev[0].file, "node0\"x\".log");
    snprintf(steps[0].pred.ev[0].text, sizeof steps[0].pred.ev[0].text, "%s", HOSTILE_LOG);
    steps[0].pred.ev[0].line = 42;
    steps[0].pred.ev[0].rank = 0;
    steps[0].pred.ev[0].node = 0;
    char *notes[] = {HOSTILE_NOTE, "rank 1's trace is missing"};
    d.notes = notes;
    d.nnotes = 2;

    buf b = render_html(st, &d, "report <b>title</b>");
    check_html_safe(&b);
    keep("hostile.html", &b);
    if (b.p) {
        CHECK(strstr(b.p, "&lt;script&gt;alert(&quot;k&quot;)&lt;/script&gt;\\x1b[31m&#39;evil&#39;&amp;amp;&#xfffd;"));
        CHECK(strstr(b.p, "kernel took &lt;img src=x onerror=alert(1)&gt; &amp; &#39;more&#39;"));
        CHECK(strstr(b.p, "&lt;/pre&gt;&lt;script src=http://evil/x.js&gt;&lt;/script&gt;"));
        CHECK(strstr(b.p, "&lt;/ul&gt;&lt;SCRIPT&gt;alert(2)&lt;/SCRIPT&gt;"));
        CHECK(strstr(b.p, "node0&quot;x&quot;.log:42"));
        CHECK(strstr(b.p, "<title>report &lt;b&gt;title&lt;/b&gt;</title>"));
        /* the pieces of the step section */
        CHECK(strstr(b.p, "id=\"step-0\""));
        CHECK(strstr(b.p, "id=\"step-1\"") == NULL);
        CHECK(strstr(b.p, "kernel_regression"));
        CHECK(strstr(b.p, "class=\"cul\" x="));         /* culprit drawn */
        CHECK(strstr(b.p, "class=\"gc\""));              /* comm kernel in its own colour */
        CHECK(strstr(b.p, "rank 0 \xc2\xb7 cpu 100"));   /* lanes */
        CHECK(strstr(b.p, "rank 0 \xc2\xb7 stream 7"));
        CHECK(strstr(b.p, "rank 0 \xc2\xb7 stream 20"));
        CHECK(strstr(b.p, "ms from the start of step 0"));
        CHECK(strstr(b.p, ">step 1</text>"));            /* the neighbour step */
        /* call chain: marker, op, launch, kernel, in that order */
        const char *c0 = strstr(b.p, "<ol class=\"chain\">");
        CHECK(c0 != NULL);
        if (c0) {
            const char *m = strstr(c0, "ProfilerStep#0"), *o = strstr(c0, "aten::<wbr>mm"),
                       *l = strstr(c0, "cudaLaunchKernel"), *kk = strstr(c0, "&lt;script&gt;");
            CHECK(m && o && l && kk && m < o && o < l && l < kk);
        }
        CHECK(strstr(b.p, "rank 1&#39;s trace is missing"));
        /* a diagnosis without facts gets no number of the report's own making */
        CHECK(strstr(b.p, "<p class=\"expl\" data-explains=\"0\">kernel took &lt;img"));
        CHECK(strstr(b.p, "The diagnosis states no number for this step."));
        CHECK(strstr(b.p, "% over") == NULL && strstr(b.p, "data-fact=") == NULL);
    }
    free(b.p);
    teller_store_free(st);
}

/* The text between the first `from` and the next `to` after it, as a new
 * string ("" when absent). */
static char *between(const char *hay, const char *from, const char *to)
{
    const char *a = hay ? strstr(hay, from) : NULL;
    const char *b = a ? strstr(a, to) : NULL;
    size_t n = a && b ? (size_t)(b - a) : 0;
    char *r = malloc(n + 1);
    if (!r)
        return NULL;
    if (n)
        memcpy(r, a, n);
    r[n] = 0;
    return r;
}

/* Appends fact f to step s of d (d->facts has room), its text printed as
 * the diagnosis prints it; returns its index among the step's facts. */
static uint32_t push_fact(teller_diagnosis *d, teller_diag_step *s, teller_fact f)
{
    if (!s->nfacts)
        s->first_fact = (uint32_t)d->nfacts;
    teller_fmt_dur(f.text, sizeof f.text, f.value);
    d->facts[d->nfacts++] = f;
    return s->nfacts++;
}

static void test_html_a_call_time_is_its_own_never_the_detector_figure(void)
{
    /* the culprit's own call took 600 us; the detector's internal figures
     * (1.2 ms "in the step", 400 us usual) are no fact: the chain, the
     * numbers and the timeline give the call's own time, as the step's
     * fact, and never those */
    teller_store *st = hostile_store();
    uint32_t k = find_named(st, HOSTILE_KERNEL);
    teller_diag_step steps[2];
    teller_fact facts[4];
    teller_diagnosis d;
    diag_init(&d, steps, 2);
    fill_windows(&d, st);
    d.facts = facts;
    mark_abnormal(&steps[0], st, k, 0.93, "kernel_regression", "kernel", "a slow kernel");
    steps[0].culprit_ns = 1200000;
    steps[0].culprit_base_ns = 400000;
    teller_fact f = {.kind = TELLER_FACT_EVENT, .step = 0, .rank = 0, .name = teller_store_events(st)->name[k],
                     .a = k, .b = TELLER_NONE, .value = 600000};
    CHECK_EQ_INT(push_fact(&d, &steps[0], f), 0);
    buf b = render_html(st, &d, NULL);
    check_html_safe(&b);
    char *chain = between(b.p, "<li class=\"cul\">", "</li>");
    char *box = between(b.p, "<rect class=\"cul\" x=", "</rect>");
    CHECK(chain && strstr(chain, "<span class=\"dur\"><span data-fact=\"0:0\">600.0 us</span> \xc2\xb7 device 0"));
    CHECK(box && strstr(box, "(600.0 us)</title>"));
    CHECK(b.p && strstr(b.p, "1.200 ms") == NULL && strstr(b.p, "400.0 us") == NULL);
    CHECK(b.p && strstr(b.p, "culprit time") == NULL);
    /* the numbers: the step's one fact, in words and as its text */
    char *num = between(b.p, "<h4>Numbers</h4>", "</table>");
    CHECK(num && strstr(num, "on rank 0: one call's own time</td><td class=\"n\"><span data-fact=\"0:0\">600.0 us"));
    free(num);
    free(chain);
    free(box);
    free(b.p);
    teller_store_free(st);
}

/* Three ranks; in step 1 ranks 0 and 1 launch an all-reduce that waits
 * 600 s for rank 2, which never launches it. With nranks 2, rank 2's
 * trace is not loaded at all. */
#define HANG_OP "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)"
static teller_store *hang_store(int nranks)
{
    teller_store *st = teller_store_create();
    for (int r = 0; r < nranks; r++) {
        char path[32];
        snprintf(path, sizeof path, "rank%d.json", r);
        teller_source src = {0};
        src.path = teller_store_intern(st, path, strlen(path));
        src.rank = r;
        src.pid = 100 + r;
        teller_store_add_source(st, &src);
        for (int s = 0; s < 2; s++) {
            int64_t t = s * 2000;
            char nm[32];
            snprintf(nm, sizeof nm, "ProfilerStep#%d", s);
            add_ev(st, (uint16_t)r, nm, TELLER_LAYER_ENGINE, TELLER_F_STEP, t, 1000, 100 + r, 100 + r, 0);
            add_ev(st, (uint16_t)r, "cudaLaunchKernel", TELLER_LAYER_RUNTIME, 0, t + 20, 10, 100 + r, 100 + r,
                   (uint32_t)(1 + 2 * s));
            add_ev(st, (uint16_t)r, "ampere_sgemm_128x64_tn", TELLER_LAYER_KERNEL, TELLER_F_GPU, t + 40, 300, r, 7,
                   (uint32_t)(1 + 2 * s));
            if (s == 1 && r == 2)
                continue; /* never launched */
            add_ev(st, (uint16_t)r, "cudaLaunchKernel", TELLER_LAYER_RUNTIME, TELLER_F_COMM, t + 400, 10, 100 + r,
                   100 + r, (uint32_t)(2 + 2 * s));
            add_ev(st, (uint16_t)r, HANG_OP, TELLER_LAYER_KERNEL, TELLER_F_GPU | TELLER_F_COMM, t + 420,
                   s ? 600000000 : 50, r, 13, (uint32_t)(2 + 2 * s));
        }
    }
    teller_error err;
    teller_error_clear(&err);
    CHECK_EQ_INT(teller_tree_build(st, NULL, &err), TELLER_OK);
    return st;
}

/* The event named name on rank r in step k, or TELLER_NONE. */
static uint32_t find_on(const teller_store *st, const char *name, int32_t r, uint32_t k)
{
    const teller_events *ev = teller_store_events(st);
    for (size_t i = 0; i < ev->n; i++)
        if (ev->step[i] == k && teller_store_event_rank(st, (uint32_t)i) == r &&
            strcmp(teller_store_str(st, ev->name[i]), name) == 0)
            return (uint32_t)i;
    return TELLER_NONE;
}

/* A hand-made diagnosis of the hang store: step 0 a small kernel finding
 * with the higher score, step 1 the hang blamed on rank 2 with the given
 * culprit event (the analysis may point at a waiting rank's kernel or at
 * nothing). */
static void hang_diagnosis(teller_diagnosis *d, teller_diag_step *steps, const teller_store *st, uint32_t culprit)
{
    diag_init(d, steps, 2);
    fill_windows(d, st);
    mark_abnormal(&steps[0], st, find_on(st, "ampere_sgemm_128x64_tn", 0, 0), 1.0, "kernel_regression", "kernel",
                  "a slow GEMM on rank 0");
    steps[0].usual_ns = 2000000;
    steps[0].excess_ns = 100000;
    teller_diag_step *s = &steps[1];
    s->pred.abnormal = 1;
    s->pred.score = 0.9;
    snprintf(s->pred.fault_type, sizeof s->pred.fault_type, "communication");
    snprintf(s->fault, sizeof s->fault, "nccl_hang");
    snprintf(s->pred.explanation, sizeof s->pred.explanation, "rank 2 never joined the all-reduce");
    s->pred.ncand = 1;
    s->pred.cand[0].rank = 2;
    snprintf(s->pred.cand[0].op, sizeof s->pred.cand[0].op, "%s", HANG_OP);
    snprintf(s->pred.cand[0].layer, sizeof s->pred.cand[0].layer, "KERNEL");
    s->pred.cand[0].score = 0.9;
    s->root_rank = 2;
    s->root_node = 0;
    s->culprit_event = culprit;
    s->culprit_ns = 600000000000LL;
    s->culprit_base_ns = 50000;
    s->usual_ns = 1000000;
    s->excess_ns = 600000000000LL;
}

/* Every "+N%" in the text is below 10000 %. */
static int percentages_sane(const char *p)
{
    for (const char *q = p ? strchr(p, '+') : NULL; q; q = strchr(q + 1, '+')) {
        char *end;
        double v = strtod(q + 1, &end);
        if (end > q + 1 && *end == '%' && v >= 10000)
            return 0;
    }
    return 1;
}

static void test_html_hang_blames_the_rank_that_never_launched(void)
{
    teller_store *st = hang_store(3);
    uint32_t victim = find_on(st, HANG_OP, 0, 1);
    CHECK(victim != TELLER_NONE && find_on(st, HANG_OP, 2, 1) == TELLER_NONE);
    /* the analysis points at a waiting rank's kernel, then at nothing */
    uint32_t culprits[2] = {victim, TELLER_NONE};
    for (int v = 0; v < 2; v++) {
        teller_diag_step steps[2];
        teller_diagnosis d;
        hang_diagnosis(&d, steps, st, culprits[v]);
        buf b = render_html(st, &d, "hang");
        check_html_safe(&b);
        if (v == 0)
            keep("hang.html", &b);
        char *sec = between(b.p, "id=\"step-1\"", "</section>");
        CHECK(sec && *sec);
        if (sec) {
            CHECK(strstr(sec, "Rank 2 never launched"));
            CHECK(strstr(sec, "in step 1; ranks 0, 1 waited up to 600.000 s."));
            char *svg = between(sec, "aria-label=\"timeline", "</svg>");
            CHECK(svg && strstr(svg, "<text class=\"miss\"") != NULL); /* on rank 2's lane */
            CHECK(svg && *svg && strstr(svg, "<rect class=\"cul\"") == NULL); /* no culprit box on a victim */
            CHECK(svg && count(svg, "<rect class=\"vic\"") == 2);
            CHECK(strstr(sec, "<li class=\"cul\">") == NULL); /* nor a chain ending in one */
            free(svg);
            CHECK(strstr(sec, "no record of this step") == NULL); /* rank 2 has step 1, without the op */
            CHECK((strstr(sec, "on rank 0, not on the root rank") != NULL) == (v == 0));
        }
        /* the hang costs most: first in the summary and the sections */
        CHECK(b.p && strstr(b.p, "href=\"#step-1\"") < strstr(b.p, "href=\"#step-0\""));
        CHECK(b.p && strstr(b.p, "id=\"step-1\"") < strstr(b.p, "id=\"step-0\""));
        CHECK(percentages_sane(b.p));
        free(sec);
        free(b.p);
    }
    teller_store_free(st);
    /* without rank 2's trace the page cannot say it never launched */
    st = hang_store(2);
    teller_diag_step steps[2];
    teller_diagnosis d;
    hang_diagnosis(&d, steps, st, TELLER_NONE);
    buf b = render_html(st, &d, "hang, rank 2 not loaded");
    check_html_safe(&b);
    CHECK(b.p && strstr(b.p, "Rank 2 is the root, but its trace was not loaded"));
    CHECK(b.p && strstr(b.p, "; ranks 0, 1 waited up to 600.000 s."));
    CHECK(b.p && strstr(b.p, "never launched") == NULL);
    free(b.p);
    b = render_perfetto(st, &d);
    CHECK(b.p && strstr(b.p, "\"root_never_launched\":false,\"root_trace_loaded\":false"));
    CHECK(b.p && strstr(b.p, "\"teller_root\"") == NULL);
    CHECK(b.p && count(b.p, "\"ph\":\"f\"") == 1); /* step 0's flow only: step 1's has nowhere to land */
    free(b.p);
    teller_store_free(st);
}

/* A fleet: 40 ranks, 39 of them waiting for rank 2. The timeline draws 32,
 * the root rank's lanes first, and says so; the table of ranks lists the
 * same ones. */
static void test_html_fleet_timeline_draws_the_root_and_those_near_it(void)
{
    teller_store *st = hang_store(40);
    teller_diag_step steps[2];
    teller_diagnosis d;
    hang_diagnosis(&d, steps, st, TELLER_NONE);
    buf b = render_html(st, &d, "hang, 40 ranks");
    check_html_safe(&b);
    keep("hang40.html", &b);
    char *sec = between(b.p, "id=\"step-1\"", "</section>");
    CHECK(sec && strstr(sec, "Timeline of 32 of the 40 ranks") && strstr(sec, "--perfetto"));
    char *svg = between(sec, "aria-label=\"timeline", "</svg>");
    CHECK(svg && strstr(svg, ">rank 2 \xc2\xb7 cpu") && strstr(svg, "<text class=\"miss\""));
    CHECK(svg && strstr(svg, ">rank 2 \xc2\xb7 cpu") < strstr(svg, ">rank 0 \xc2\xb7 cpu")); /* the root first */
    CHECK(svg && strstr(svg, ">rank 31 \xc2\xb7 cpu") && !strstr(svg, ">rank 32 \xc2\xb7 cpu"));
    CHECK(svg && count(svg, "<rect class=\"vic\"") == 31); /* the waiting ranks drawn */
    char *tab = between(sec, "<th>rank</th><th>node</th><th>window</th>", "</table>");
    CHECK(tab && count(tab, "<tr") == 32 && strstr(tab, "<tr class=\"root\"><td class=\"n\">2</td>"));
    CHECK(tab && strstr(tab, "<tr><td class=\"n\">31</td>") && !strstr(tab, "<tr><td class=\"n\">32</td>"));
    free(tab);
    free(svg);
    free(sec);
    free(b.p);
    teller_store_free(st);
}

/* The height of the overview bar whose tooltip starts with title, or -1. */
static double bar_height(const char *html, const char *title)
{
    const char *t = html ? strstr(html, title) : NULL;
    if (!t)
        return -1;
    const char *r = t;
    while (r > html && strncmp(r, "<rect ", 6) != 0)
        r--;
    const char *h = strstr(r, "height=\"");
    return h && h < t ? strtod(h + 8, NULL) : -1;
}

static void test_html_layout_wraps_names_and_scales_the_step_chart(void)
{
    teller_store *st = hang_store(3);
    teller_diag_step steps[2];
    teller_diagnosis d;
    hang_diagnosis(&d, steps, st, TELLER_NONE);
    snprintf(steps[1].pred.explanation, sizeof steps[1].pred.explanation,
             "rank 2 never launched " HANG_OP "; the usual all-reduce takes 4.897 ms.");
    buf b = render_html(st, &d, NULL);
    check_html_safe(&b);
    /* names wrap at their separators, never mid-word; numbers stay whole */
    char *op = between(b.p, ".op{", "}");
    CHECK(op && strstr(op, "overflow-wrap:break-word"));
    CHECK(b.p && strstr(b.p, "break-all") == NULL);
    CHECK(b.p && strstr(b.p, "<td class=\"op\">ncclDevKernel_<wbr>AllReduce_<wbr>Sum_<wbr>bf16_<wbr>RING_<wbr>LL"
                             "<wbr>(ncclDevKernelArgsStorage<wbr>&lt;4096ul&gt;)</td>"));
    CHECK(b.p && strstr(b.p, "takes 4.897 ms."));
    /* every table scrolls inside its own box rather than widening the page,
     * and the summary keeps the explanation out of its columns */
    CHECK(b.p && strstr(b.p, ".tw{max-width:100%;overflow-x:auto}"));
    CHECK(b.p && count(b.p, "<table") == count(b.p, "<div class=\"tw\"><table"));
    CHECK(b.p && strstr(b.p, "<tr class=\"ex\"><td colspan=\"7\"><p data-explains=\"1\">rank 2 never launched"));
    /* the step chart: a 600 s hang does not flatten a 1 ms step; its bar is
     * cut at the top of the scale (three times the other step's usual, 2
     * ms, on a nice tick), and the panel says where */
    char *chart = between(b.p, "aria-label=\"step times", "</svg>");
    double h0 = bar_height(chart, "<title>step 0 ("), h1 = bar_height(chart, "<title>step 1 (");
    CHECK(h0 > 10 && h1 >= h0 && h1 <= 64);
    CHECK(chart && strstr(chart, "bars cut at 6.000 ms") && strstr(chart, "<path class=\"cut\" d=\"M"));
    CHECK(chart && strstr(chart, "<title>step 1 (other): 600.000 s, usual 1.000 ms; abnormal: nccl_hang</title>"));
    free(chart);
    free(op);
    free(b.p);
    teller_store_free(st);
}

static void test_perfetto_hang_points_at_the_root_rank_not_a_victim(void)
{
    teller_store *st = hang_store(3);
    uint32_t culprits[2] = {find_on(st, HANG_OP, 0, 1), TELLER_NONE};
    for (int v = 0; v < 2; v++) {
        teller_diag_step steps[2];
        teller_diagnosis d;
        hang_diagnosis(&d, steps, st, culprits[v]);
        buf b = render_perfetto(st, &d);
        jv *doc;
        const jv *events = perfetto_events(&b, &doc);
        if (events) {
            CHECK_EQ_INT(check_nesting(events), 0);
            double root_pid = -1;
            int waited = 0, culprit1 = 0;
            for (size_t i = 0; i < events->n; i++) {
                const jv *e = &events->items[i];
                const jv *a = jdom_get(e, "args");
                if (strcmp(jdom_str(e, "name", ""), "process_name") == 0 &&
                    strcmp(jdom_str(a, "name", ""), "rank 2 (node 0)") == 0)
                    root_pid = jdom_num(e, "pid", -1);
                if (strcmp(jdom_str(a, "teller_waited", ""), "step 1") == 0) {
                    waited++;
                    CHECK(strcmp(jdom_str(e, "name", ""), HANG_OP) == 0);
                }
                culprit1 += strcmp(jdom_str(a, "teller_culprit", ""), "step 1") == 0;
            }
            CHECK(root_pid >= 0);
            CHECK_EQ_INT(waited, 2);
            CHECK_EQ_INT(culprit1, 0);
            /* the root's marker on rank 2's process, and the flow ends there */
            const jv *mk = find_event(events, "i", "rank 2 never launched ncclDevKernel_AllReduce_Sum_bf16_RING_LL (step 1)");
            CHECK(mk && jdom_num(mk, "pid", -2) == root_pid);
            const jv *fl = NULL;
            for (size_t i = 0; i < events->n; i++) {
                const jv *e = &events->items[i];
                if (strcmp(jdom_str(e, "ph", ""), "f") == 0 && jdom_num(e, "id", 0) == 2)
                    fl = e;
            }
            CHECK(fl && mk && jdom_num(fl, "pid", -1) == root_pid && jdom_num(fl, "tid", -1) == jdom_num(mk, "tid", -2) &&
                  jdom_num(fl, "ts", -1) == jdom_num(mk, "ts", -2));
            const jv *fi = find_event(events, "i", "step 1: nccl_hang");
            const jv *args = fi ? jdom_get(fi, "args") : NULL;
            CHECK(args && jdom_bool(args, "root_never_launched", 0) == 1);
            const jv *wr = args ? jdom_get(args, "waiting_ranks") : NULL;
            CHECK(wr && wr->type == J_ARR && wr->n == 2 && wr->items[0].num == 0 && wr->items[1].num == 1);
            /* step 0's culprit is on its root rank and keeps its flow */
            CHECK(find_event(events, "f", "teller culprit") != NULL);
        }
        jdom_free(doc);
        free(b.p);
    }
    teller_store_free(st);
}

static void test_perfetto_is_json_with_findings_and_nesting(void)
{
    teller_store *st = hostile_store();
    uint32_t k = find_named(st, HOSTILE_KERNEL);
    teller_diag_step steps[2];
    teller_diagnosis d;
    diag_init(&d, steps, 2);
    fill_windows(&d, st);
    mark_abnormal(&steps[0], st, k, 0.93, "kernel_regression", "kernel", HOSTILE_EXPL);

    buf b = render_perfetto(st, &d);
    jv *doc;
    const jv *events = perfetto_events(&b, &doc);
    if (events) {
        CHECK_EQ_INT(check_nesting(events), 0);
        /* the annotation */
        const jv *fi = find_event(events, "i", "step 0: kernel_regression");
        CHECK(fi != NULL);
        const jv *args = fi ? jdom_get(fi, "args") : NULL;
        CHECK(args != NULL);
        if (args) {
            CHECK(fabs(jdom_num(args, "score", 0) - 0.93) < 1e-9);
            CHECK(strcmp(jdom_str(args, "fault_type", ""), "kernel") == 0);
            CHECK(strcmp(jdom_str(args, "fault", ""), "kernel_regression") == 0);
            CHECK_EQ_INT(jdom_num(args, "rank", -1), 0);
            CHECK(strcmp(jdom_str(args, "op", ""), HOSTILE_KERNEL) != 0); /* \xff became U+FFFD */
            CHECK(strcmp(jdom_str(args, "op", ""), "<script>alert(\"k\")</script>\x1b[31m'evil'&amp;\xef\xbf\xbd") == 0);
            CHECK(strcmp(jdom_str(args, "explanation", ""), HOSTILE_EXPL) == 0);
        }
        /* the culprit, verbatim but for the invalid byte, marked */
        const jv *kx = NULL;
        for (size_t i = 0; i < events->n && !kx; i++)
            if (strcmp(jdom_str(jdom_get(&events->items[i], "args"), "teller_culprit", ""), "step 0") == 0)
                kx = &events->items[i];
        CHECK(kx != NULL);
        if (kx) {
            CHECK(strcmp(jdom_str(kx, "ph", ""), "X") == 0);
            CHECK(strcmp(jdom_str(kx, "name", ""), "<script>alert(\"k\")</script>\x1b[31m'evil'&amp;\xef\xbf\xbd") == 0);
            CHECK(fabs(jdom_num(kx, "dur", 0) - 600.0) < 1e-9);
            /* the flow ends on the culprit's thread at its start */
            const jv *fs = find_event(events, "s", "teller culprit"), *ff = find_event(events, "f", "teller culprit");
            CHECK(fs && ff);
            if (fs && ff) {
                CHECK(jdom_num(fs, "id", -1) == jdom_num(ff, "id", -2));
                CHECK(jdom_num(ff, "pid", -1) == jdom_num(kx, "pid", -2));
                CHECK(jdom_num(ff, "tid", -1) == jdom_num(kx, "tid", -2));
                CHECK(jdom_num(ff, "ts", -1) == jdom_num(kx, "ts", -2));
            }
        }
        CHECK(find_event(events, "X", "step 0: kernel_regression (0.93)") != NULL);
        /* names: processes per rank, threads and streams, the overlap thread */
        int proc = 0;
        for (size_t i = 0; i < events->n; i++)
            if (strcmp(jdom_str(&events->items[i], "name", ""), "process_name") == 0 &&
                strcmp(jdom_str(jdom_get(&events->items[i], "args"), "name", ""), "rank 0 (node 0)") == 0)
                proc++;
        CHECK_EQ_INT(proc, 1);
        CHECK(has_thread_name(events, "stream 7 (device 0)"));
        CHECK(has_thread_name(events, "thread 200 (overlap 1)"));
        CHECK(has_thread_name(events, "teller findings"));
        /* timestamps: microseconds with three decimals from the earliest event */
        const jv *w1 = find_event(events, "X", "worker_b");
        CHECK(w1 && fabs(jdom_num(w1, "ts", 0) - 200.0) < 1e-9);
        CHECK(strstr(b.p, "\"ts\":200.000,") != NULL);
    }
    jdom_free(doc);
    free(b.p);
    /* no diagnosis: the trace alone */
    b = render_perfetto(st, NULL);
    perfetto_events(&b, &doc);
    CHECK(b.p && strstr(b.p, "teller findings") == NULL);
    jdom_free(doc);
    free(b.p);
    teller_store_free(st);
}

static void test_nesting_checker_catches_crossing_slices(void)
{
    /* the checker the tests rely on must fail on a crossing pair */
    const char *bad = "{\"traceEvents\":[{\"ph\":\"X\",\"pid\":1,\"tid\":1,\"ts\":0,\"dur\":10},"
                      "{\"ph\":\"X\",\"pid\":1,\"tid\":1,\"ts\":5,\"dur\":10}]}";
    teller_error err;
    jv *doc = jdom_parse("bad", bad, strlen(bad), &err);
    CHECK(doc != NULL);
    if (doc)
        CHECK_EQ_INT(check_nesting(jdom_get(doc, "traceEvents")), 1);
    jdom_free(doc);
}

/* The longest event of a layer on a rank in a step, or TELLER_NONE. */
static uint32_t longest(const teller_store *st, uint32_t step, int32_t rank, teller_layer layer, int comm)
{
    const teller_events *ev = teller_store_events(st);
    uint32_t best = TELLER_NONE;
    for (size_t i = 0; i < ev->n; i++) {
        if (ev->step[i] != step || ev->layer[i] != layer || teller_store_event_rank(st, (uint32_t)i) != rank ||
            !!(ev->flags[i] & TELLER_F_COMM) != comm)
            continue;
        if (best == TELLER_NONE || ev->dur_ns[i] > ev->dur_ns[best])
            best = (uint32_t)i;
    }
    return best;
}

static void test_reports_on_a_simulated_case(void)
{
    int big = getenv("TELLER_REPORT_BIG") != NULL;
    char dir[] = "/tmp/teller_report_XXXXXX";
    teller_sim_opts o = teller_sim_defaults();
    o.nodes = 2;
    o.gpus_per_node = big ? 8 : 2;
    o.tp = big ? 8 : 2;
    o.pp = 2;
    o.steps = big ? 200 : 10;
    o.seed = 11;
    teller_error err;
    teller_error_clear(&err);
    sim_case(dir, &o);
    int world = o.nodes * o.gpus_per_node;
    teller_store *st = load_case_ranks(dir, 0, world);
    uint32_t nsteps = teller_store_step_count(st);
    CHECK_EQ_INT(nsteps, (uint32_t)o.steps);
    teller_diag_step *steps = calloc(nsteps ? nsteps : 1, sizeof *steps);
    teller_diagnosis d;
    diag_init(&d, steps, nsteps);
    fill_windows(&d, st);
    /* step 4: a slow kernel on rank 3; step 6: a late all-reduce on rank 1;
     * the big case also marks every 7th step */
    uint32_t k4 = longest(st, 4, 3, TELLER_LAYER_KERNEL, 0), c6 = longest(st, 6, 1, TELLER_LAYER_KERNEL, 1);
    CHECK(k4 != TELLER_NONE && c6 != TELLER_NONE);
    mark_abnormal(&steps[4], st, k4, 0.97, "kernel_regression", "kernel",
                  "Step 4 took longer than expected; on rank 3 the kernel ran 3x its usual time.");
    mark_abnormal(&steps[6], st, c6, 0.71, "slow_link", "communication",
                  "Step 6: the all-reduce on rank 1 waited for its peers.");
    steps[6].excess_ns = steps[4].excess_ns / 2; /* step 4 costs more */
    steps[4].pred.nev = 2;
    snprintf(steps[4].pred.ev[0].kind, sizeof steps[4].pred.ev[0].kind, "log");
    snprintf(steps[4].pred.ev[0].file, sizeof steps[4].pred.ev[0].file, "%s/node1.log", dir);
    steps[4].pred.ev[0].line = 1234;
    steps[4].pred.ev[0].rank = 3;
    steps[4].pred.ev[0].node = 1;
    snprintf(steps[4].pred.ev[0].text, sizeof steps[4].pred.ev[0].text,
             "WARNING 03-14 10:22:31 [gpu_worker.py:211] GPU 1 clocks throttled (thermal)");
    snprintf(steps[4].pred.ev[1].kind, sizeof steps[4].pred.ev[1].kind, "trace");
    steps[4].pred.ev[1].line = k4;
    steps[4].pred.ev[1].rank = 3;
    steps[4].pred.ev[1].node = -1;
    snprintf(steps[4].pred.ev[1].text, sizeof steps[4].pred.ev[1].text, "kernel 3.0x its median over 40 steps");
    if (big)
        for (uint32_t s = 7; s < nsteps; s += 7) {
            uint32_t e = longest(st, s, (int32_t)(s % 16), TELLER_LAYER_KERNEL, 0);
            mark_abnormal(&steps[s], st, e, 0.5 + (double)(s % 10) / 25, "gpu_throttle", "kernel",
                          "a slow kernel, hand-made finding for the size check");
            steps[s].excess_ns /= 4; /* costing less than steps 4 and 6 */
        }
    char *notes[] = {"This diagnosis was made by hand for a test; no analysis ran."};
    d.notes = notes;
    d.nnotes = 1;

    buf h = render_html(st, &d, "teller report: simulated 2-node case");
    check_html_safe(&h);
    if (h.p) {
        CHECK(strstr(h.p, "id=\"step-4\"") && strstr(h.p, "id=\"step-6\""));
        CHECK(strstr(h.p, "id=\"step-4\"") < strstr(h.p, "id=\"step-6\"")); /* worst (longest excess) first */
        CHECK(strstr(h.p, "rank 3 \xc2\xb7 stream"));
        CHECK(strstr(h.p, "class=\"root\"")); /* the per-rank table marks rank 3 */
        CHECK(strstr(h.p, "node1.log:1234"));
        CHECK(strstr(h.p, "trace event "));
        if (big)
            CHECK(strstr(h.p, "more are in the summary only") != NULL);
        CHECK(h.n < (big ? 4u << 20 : 1u << 20));
    }
    keep("report.html", &h);
    buf p = render_perfetto(st, &d);
    jv *doc = p.p ? jdom_parse("perfetto", p.p, p.n, &err) : NULL;
    CHECK(doc != NULL);
    const jv *events = doc ? jdom_get(doc, "traceEvents") : NULL;
    CHECK(events && events->n > teller_store_events(st)->n / 2);
    if (events) {
        CHECK_EQ_INT(check_nesting(events), 0);
        CHECK(find_event(events, "i", "step 4: kernel_regression") != NULL);
        CHECK(find_event(events, "i", "step 6: slow_link") != NULL);
    }
    keep("report.perfetto.json", &p);
    if (big)
        fprintf(stderr, "  16 ranks x %u steps: %zu events, html %zu bytes, perfetto %zu bytes\n", nsteps,
                teller_store_events(st)->n, h.n, p.n);
    jdom_free(doc);
    free(h.p);
    free(p.p);
    free(steps);
    teller_store_free(st);
}

/* Runs tests/tools/check_html.py on the HTML in b (written to path);
 * its exit status. */
static int check_html_py(const char *path, const char *html, size_t n)
{
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL);
    if (!f)
        return -1;
    fwrite(html, 1, n, f);
    fclose(f);
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "python3 '%s/tests/tools/check_html.py' '%s' >/dev/null", TELLER_SOURCE_DIR, path);
    return system(cmd);
}

/* The number of distinct kinds of step among d's steps. */
static int kinds_of(const teller_diagnosis *d)
{
    int seen[8] = {0}, n = 0;
    for (size_t i = 0; i < d->n; i++) {
        teller_step_kind k = d->steps[i].group < d->ngroups ? d->groups[d->steps[i].group].kind : TELLER_STEP_OTHER;
        if ((unsigned)k < 8 && !seen[k]++)
            n++;
    }
    return n;
}

/* Replaces the first `from` after `after` in h with `to` (same length);
 * 0 when there is none. */
static int tamper(char *h, const char *after, const char *from, const char *to)
{
    char *a = strstr(h, after), *p = a ? strstr(a, from) : NULL;
    if (!p || strlen(from) != strlen(to))
        return 0;
    memcpy(p, to, strlen(to));
    return 1;
}

/* A simulated faulty run (a hang among its faults), diagnosed and
 * rendered: every number the page marks is its step's fact and every
 * explanation reads as its sentence (teller_check_html finds no mismatch),
 * and a fact or an explanation changed is caught; the step chart has one
 * panel per kind of step present and a legend; each step slower than usual
 * that no finding explains has a section; the page is legible at 800 px
 * (check_html.py), and is not once its charts shrink or their fonts do. */
static void test_html_of_a_diagnosis_prints_its_facts_and_reads_at_800px(void)
{
    char dir[] = "/tmp/teller_report_XXXXXX";
    sim_faulty(dir, 2, 2, 60, 14, 1);
    teller_store *st = load_case_ranks(dir, 0, 4);
    teller_error err;
    teller_error_clear(&err);
    teller_diagnosis *d = NULL;
    CHECK_EQ_INT(teller_diagnose(st, NULL, &d, &err), TELLER_OK);
    if (!d) {
        teller_store_free(st);
        rm_rf(dir);
        return;
    }
    CHECK(flagged(d) > 0);
    buf h = render_html(st, d, "diagnosed");
    check_html_safe(&h);
    keep("diagnosed.html", &h);
    teller_check_report r = {0};
    CHECK_EQ_INT(teller_check_html(st, d, h.p, h.n, &r, &err), TELLER_OK);
    CHECK_EQ_INT(r.mismatches, 0);
    if (r.mismatches)
        fprintf(stderr, "  first mismatch: %s\n", r.first);
    CHECK(r.numbers > 50);
    CHECK(count(h.p, "data-fact=\"") > 20);

    /* one panel per kind, a legend under the chart */
    char *chart = between(h.p, "aria-label=\"step times", "</p>");
    CHECK(chart && (int)count(chart, "<g class=\"panel\" data-kind=\"") == kinds_of(d));
    CHECK(chart && strstr(chart, "<div class=\"legend\">") && strstr(chart, "abnormal: a finding explains it") &&
          strstr(chart, "slower than usual, no finding explains it") && strstr(chart, "its usual: "));
    CHECK(kinds_of(d) >= 3); /* prefill, decode, mixed, and the hang's step without an annotation */
    free(chart);
    size_t nslow = 0;
    for (size_t i = 0; i < d->n; i++)
        nslow += d->steps[i].slow && !d->steps[i].pred.abnormal;
    CHECK_EQ_INT(count(h.p, "<section class=\"step slow\""), nslow < TELLER_REPORT_MAX_SLOW ? nslow : TELLER_REPORT_MAX_SLOW);

    /* a fact's text changed, or a number slipped into an explanation */
    char *t = malloc(h.n + 1);
    if (t) {
        memcpy(t, h.p, h.n + 1);
        char *m = strstr(t, "<span data-fact=\"");
        char *v = m ? strchr(m, '>') : NULL;
        CHECK(v && isdigit((unsigned char)v[1]));
        if (v && isdigit((unsigned char)v[1]))
            v[1] = v[1] == '9' ? '1' : (char)(v[1] + 1);
        memset(&r, 0, sizeof r);
        CHECK_EQ_INT(teller_check_html(st, d, t, h.n, &r, &err), TELLER_OK);
        CHECK_EQ_INT(r.mismatches, 1);
        memcpy(t, h.p, h.n + 1);
        CHECK(tamper(t, "<p class=\"expl\" data-explains=\"", "took ", "9 ms "));
        memset(&r, 0, sizeof r);
        CHECK_EQ_INT(teller_check_html(st, d, t, h.n, &r, &err), TELLER_OK);
        CHECK(r.mismatches >= 1);

        /* legible at 800 px: so the page, not once its charts shrink to
         * the window or their text is smaller */
        char path[600];
        snprintf(path, sizeof path, "%s/report.html", dir);
        CHECK_EQ_INT(check_html_py(path, h.p, h.n), 0);
        memcpy(t, h.p, h.n + 1);
        CHECK(tamper(t, "<style>", "svg.fix{max-width:none}", "svg.fix{max-width:100%}"));
        CHECK(check_html_py(path, t, h.n) != 0);
        memcpy(t, h.p, h.n + 1);
        CHECK(tamper(t, "<section class=\"step\"", "font-size=\"11\"", "font-size=\"8\" "));
        CHECK(check_html_py(path, t, h.n) != 0);
        free(t);
    }
    free(h.p);
    teller_diagnosis_free(d);
    teller_store_free(st);
    rm_rf(dir);
}

static void test_reports_on_the_real_vllm_trace(void)
{
    teller_store *st = teller_store_create();
    teller_error err;
    teller_error_clear(&err);
    CHECK_EQ_INT(teller_ingest_file(st, shared_path("tracelens/b200/eager_trace.json.gz"), NULL, &err), TELLER_OK);
    CHECK_EQ_INT(teller_tree_build(st, NULL, &err), TELLER_OK);
    uint32_t nsteps = teller_store_step_count(st);
    CHECK(nsteps >= 1);
    teller_diag_step *steps = calloc(nsteps ? nsteps : 1, sizeof *steps);
    teller_diagnosis d;
    diag_init(&d, steps, nsteps);
    fill_windows(&d, st);
    uint32_t k = nsteps ? longest(st, 0, teller_store_source_c(st, 0)->rank, TELLER_LAYER_KERNEL, 0) : TELLER_NONE;
    CHECK(k != TELLER_NONE);
    if (nsteps)
        mark_abnormal(&steps[0], st, k, 0.8, "kernel_regression", "kernel", "Hand-made finding on the real trace.");

    buf h = render_html(st, &d, "eager_trace");
    check_html_safe(&h);
    keep("eager_trace.html", &h);
    CHECK(h.p && strstr(h.p, "id=\"step-0\"") && strstr(h.p, "class=\"cul\" x="));
    CHECK(h.p && strstr(h.p, nsteps == 1 ? " 1 step \xc2\xb7 " : " steps \xc2\xb7 "));
    buf p = render_perfetto(st, &d);
    jv *doc = p.p ? jdom_parse("perfetto", p.p, p.n, &err) : NULL;
    CHECK(doc != NULL);
    const jv *events = doc ? jdom_get(doc, "traceEvents") : NULL;
    CHECK(events && events->type == J_ARR);
    if (events && events->type == J_ARR) {
        CHECK_EQ_INT(check_nesting(events), 0);
        CHECK(events->n >= teller_store_events(st)->n);
    }
    jdom_free(doc);
    free(h.p);
    free(p.p);
    free(steps);
    teller_store_free(st);
}

/* Found by review: slices of one thread that all cross each other took a
 * lane each, every slice scanning every lane (120,000 of them: 23 s), and
 * past 1024 lanes shared the last, crossing on one thread. At most 64 lanes
 * now; the rest are left out, and an instant says how many. */
static void test_perfetto_crossing_slices_stay_nested_and_are_counted(void)
{
    teller_store *st = teller_store_create();
    teller_source src = {0};
    src.path = teller_store_intern(st, "rank0.json", 10);
    src.pid = 100;
    teller_store_add_source(st, &src);
    for (int i = 0; i < 300; i++)
        add_ev(st, 0, "crossing", TELLER_LAYER_BACKEND, 0, i, 301, 100, 100, 0);
    teller_error err;
    teller_error_clear(&err);
    CHECK_EQ_INT(teller_tree_build(st, NULL, &err), TELLER_OK);
    buf b = render_perfetto(st, NULL);
    jv *doc;
    const jv *events = perfetto_events(&b, &doc);
    if (events) {
        CHECK_EQ_INT(check_nesting(events), 0);
        size_t slices = 0;
        for (size_t i = 0; i < events->n; i++)
            slices += !strcmp(jdom_str(&events->items[i], "name", ""), "crossing");
        CHECK_EQ_INT(slices, 64);
        CHECK(strstr(b.p, "236 slices of") != NULL);
    }
    jdom_free(doc);
    free(b.p);
    teller_store_free(st);
}

const test_case report_tests[] = {
    {"report perfetto: slices that all cross stay nested, at most 64 lanes, the rest counted",
     test_perfetto_crossing_slices_stay_nested_and_are_counted},
    {"report html escapes everything from traces and logs", test_html_escapes_everything_from_traces_and_logs},
    {"report perfetto is JSON with findings, culprit flow and nesting threads",
     test_perfetto_is_json_with_findings_and_nesting},
    {"report nesting checker catches crossing slices", test_nesting_checker_catches_crossing_slices},
    {"report html: a call's time is its own in chain, numbers and timeline, never the detector's figure",
     test_html_a_call_time_is_its_own_never_the_detector_figure},
    {"report html hang blames the rank that never launched, victims as evidence, costliest first",
     test_html_hang_blames_the_rank_that_never_launched},
    {"report html: a fleet's timeline draws 32 ranks, the root rank's first, and the table of ranks the same",
     test_html_fleet_timeline_draws_the_root_and_those_near_it},
    {"report html layout wraps names at separators, boxes tables, cuts a hang's bar in the step chart",
     test_html_layout_wraps_names_and_scales_the_step_chart},
    {"report perfetto hang points at the root rank, not at a waiting rank",
     test_perfetto_hang_points_at_the_root_rank_not_a_victim},
    {"report both outputs on a simulated case", test_reports_on_a_simulated_case},
    {"report valid JSON and HTML on the real vLLM trace", test_reports_on_the_real_vllm_trace},
    {"report html of a diagnosis: its numbers are its facts (checked, tampering caught), a panel per step kind, "
     "legible at 800 px",
     test_html_of_a_diagnosis_prints_its_facts_and_reads_at_800px},
    {NULL, NULL},
};
