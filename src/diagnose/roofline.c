/*
 * roofline.c - the work detector (row work): a kernel name's time against what the
 * work it did should take at the trace's own throughput, for the kernels
 * no other yardstick reaches. kernels.c compares a kernel with its peers,
 * with its own launch configuration in three or more steps, or with a
 * stage of its pipeline; a one- or two-step trace of a rank without
 * peers (most profiles a TraceLens or HTA user opens) has none of them,
 * and a kernel there that regressed 4-10x goes unseen however much of
 * the step it took.
 *
 * The work comes from what the PyTorch profiler records with
 * record_shapes: each torch op's "Input Dims" and "Input type" (kept by
 * the Kineto reader in the args table). A kernel's op is its launch
 * call's innermost enclosing torch op; only two families are judged,
 * whose work the shapes state:
 *   gemm       aten::mm, addmm, bmm, matmul (2-D weight), linear and ops
 *              named *gemm* with linear's layout (x [..., K], w [N, K]):
 *              2·M·K·N flops, and the inputs' bytes plus the output's;
 *   pointwise  aten:: elementwise ops (add, mul, copy_, silu, ...): no
 *              flops, the inputs' bytes plus the largest input's (the
 *              output).
 * Per family and rank the trace's throughput is fitted as a roofline:
 * a (flop/ns) and b (bytes/ns) are the rates the fastest tenth of the
 * family's kernel time ran at (kernel names ranked by their own rate;
 * by time, so that a name with little time and overstated shapes cannot
 * set it, and a regressed name, which is slow, never does), and one call
 * is predicted to take t0 + max(flops/a, bytes/b), t0 the rank's launch
 * floor (the tenth percentile of its judged calls). A name's calls run
 * some factor over their prediction (small GEMMs and latency-bound
 * kernels further than large ones); its usual factor is the median of
 * the family's other names (weighted by predicted time), so that a name
 * holding most of the family's work (a prefill's one large GEMM) is
 * still judged against the others. A name whose calls in a step ran 3x
 * or more over that (on the healthy shared traces a name costing over 1 %
 * of the kernel time runs under 2x; perturb's regressions are 4-10x) is a
 * kernel_regression costing its time over the usual; the score then asks
 * that this be material (docs/DIAGNOSE.md, "Kernels against their work").
 */
#include <stdlib.h>
#include <string.h>

#include "../ingest/json.h"
#include "detector.h"

enum { FAM_GEMM = 0, FAM_POINTWISE, NFAM };
enum { MAX_INPUTS = 16, MAX_RANK = 8 };

/* the thresholds (docs/DIAGNOSE.md) */
#define ROOF_SIG 3.0          /* a name's time over its usual factor of the roofline */
#define ROOF_MIN_EXCESS 10000 /* ns, as kernels.c */
#define ROOF_TOP_SHARE 0.1    /* the fastest share of the family's time that sets the roofline */
#define ROOF_FLOOR_Q 0.1      /* the quantile of call times taken as the launch floor */

/* One input of an op: its dims (ndim -1: not a tensor with integer dims
 * and a known element size) and element size in bytes. */
typedef struct op_input {
    int    ndim;
    double d[MAX_RANK];
    double esize;
} op_input;

/* ---- reading the shapes ---- */

/* A json cursor over the whole of a NUL-terminated text. */
static json_cur text_cur(const char *text) { return (json_cur){text, text + strlen(text), NULL}; }

/* One input's dims at c into x: a list of at most MAX_RANK non-negative
 * integers written as at most 13 digits is a tensor's; anything else (a
 * nested list, a string, a decimal) leaves x->ndim -1. Moves c past the
 * value; JSON_OK, or the tokenizer's status when the text is not JSON. */
static int read_dims(json_cur *c, op_input *x)
{
    x->ndim = -1;
    x->esize = 0;
    json_cur t = *c;
    int nd = 0, done = 0;
    if (*t.p == '[') {
        t.p++;
        for (int first = 1; !json_arr_next(&t, first, &done) && !done; first = 0) {
            const char *num = t.p;
            int64_t v;
            if (nd == MAX_RANK || json_int(&t, &v) || t.p - num > 13 ||
                strspn(num, "0123456789") < (size_t)(t.p - num))
                break;
            x->d[nd++] = (double)v;
        }
        if (done)
            x->ndim = nd;
    }
    return json_skip(c);
}

/* "[[8, 4096], [], [[1], [2]], ...]" into in[] (read_dims), at most
 * MAX_INPUTS of them: their number, or -1 when the text is not a list. */
static int parse_dims(const char *text, op_input *in)
{
    json_cur c = text_cur(text);
    int n = 0, done = 0;
    if (json_expect(&c, '['))
        return -1;
    for (int first = 1; n < MAX_INPUTS; first = 0) {
        if (json_arr_next(&c, first, &done))
            return -1;
        if (done)
            break;
        if (read_dims(&c, &in[n++]))
            return -1;
    }
    return n;
}

/* The bytes of an element of a type Kineto names, 0 when unknown. */
static double elem_size(const char *s, size_t n)
{
    static const struct {
        const char *name;
        double      size;
    } types[] = {{"float", 4},       {"double", 8},          {"c10::Half", 2},     {"c10::BFloat16", 2},
                 {"long int", 8},    {"int", 4},             {"short int", 2},     {"bool", 1},
                 {"unsigned char", 1}, {"signed char", 1},   {"c10::Float8_e4m3fn", 1}, {"c10::Float8_e4m3fnuz", 1},
                 {"c10::Float8_e5m2", 1}, {"c10::Float8_e5m2fnuz", 1}};
    for (size_t k = 0; k < sizeof types / sizeof *types; k++)
        if (strlen(types[k].name) == n && !memcmp(types[k].name, s, n))
            return types[k].size;
    return 0;
}

/* "[\"float\", \"\", ...]": each input's element size into in[0..n). */
static void parse_types(const char *text, op_input *in, int n)
{
    json_cur c = text_cur(text);
    int done = 0;
    if (json_expect(&c, '['))
        return;
    for (int k = 0; k < n; k++) {
        if (json_arr_next(&c, k == 0, &done) || done)
            return;
        json_str t;
        if (*c.p != '"') {
            if (json_skip(&c))
                return;
        } else if (json_string(&c, &t)) {
            return;
        } else if (!t.escaped) {
            in[k].esize = elem_size(t.s, t.len);
        }
    }
}

static double numel(const op_input *x, int from, int to)
{
    double v = 1;
    for (int k = from; k < to; k++)
        v *= x->d[k];
    return v;
}

static int tensor(const op_input *x, int ndim) { return x->ndim == ndim && x->esize > 0; }

/* the pointwise ops, without the aten:: prefix and a trailing '_' */
static int is_pointwise(const char *op)
{
    static const char *const names[] = {"add", "sub", "mul", "div", "neg", "abs", "exp", "log", "sqrt",
                                        "rsqrt", "pow", "reciprocal", "sigmoid", "tanh", "silu", "gelu",
                                        "relu", "cos", "sin", "where", "clamp", "copy", "fill", "masked_fill"};
    size_t n = strlen(op);
    if (n && op[n - 1] == '_')
        n--;
    for (size_t k = 0; k < sizeof names / sizeof *names; k++)
        if (strlen(names[k]) == n && !memcmp(names[k], op, n))
            return 1;
    return 0;
}

/* The work of one call of torch op `op` with inputs in[0..n): its family,
 * flops and bytes; -1 when the op is of neither family or its shapes do
 * not fit it. */
static int op_work(const char *op, const op_input *in, int n, double *flops, double *bytes)
{
    double inb = 0, big = 0;
    for (int k = 0; k < n; k++) {
        if (in[k].ndim < 0 || in[k].esize <= 0)
            continue;
        double b = numel(&in[k], 0, in[k].ndim) * in[k].esize;
        inb += b;
        if (b > big)
            big = b;
    }
    const op_input *x = NULL, *w = NULL;
    double bt = 1, m = 0, k = 0, nn = 0;
    if (!strcmp(op, "aten::mm") && n >= 2 && tensor(&in[0], 2) && tensor(&in[1], 2) && in[0].d[1] == in[1].d[0]) {
        x = &in[0], w = &in[1], m = x->d[0], k = x->d[1], nn = w->d[1];
    } else if (!strcmp(op, "aten::addmm") && n >= 3 && tensor(&in[1], 2) && tensor(&in[2], 2) &&
               in[1].d[1] == in[2].d[0]) {
        x = &in[1], w = &in[2], m = x->d[0], k = x->d[1], nn = w->d[1];
    } else if (!strcmp(op, "aten::bmm") && n >= 2 && tensor(&in[0], 3) && tensor(&in[1], 3) &&
               in[0].d[0] == in[1].d[0] && in[0].d[2] == in[1].d[1]) {
        x = &in[0], w = &in[1], bt = x->d[0], m = x->d[1], k = x->d[2], nn = w->d[2];
    } else if (!strcmp(op, "aten::matmul") && n >= 2 && in[0].ndim >= 1 && in[0].esize > 0 && tensor(&in[1], 2) &&
               in[0].d[in[0].ndim - 1] == in[1].d[0]) {
        x = &in[0], w = &in[1], m = numel(x, 0, x->ndim - 1), k = w->d[0], nn = w->d[1];
    } else if ((!strcmp(op, "aten::linear") || strstr(op, "gemm")) && n >= 2 && in[0].ndim >= 1 && in[0].esize > 0 &&
               tensor(&in[1], 2) && in[0].d[in[0].ndim - 1] == in[1].d[1]) {
        x = &in[0], w = &in[1], m = numel(x, 0, x->ndim - 1), k = w->d[1], nn = w->d[0];
    }
    if (x) {
        *flops = 2 * bt * m * k * nn;
        *bytes = inb + bt * m * nn * x->esize;
        return *flops > 0 && *flops < 1e21 ? FAM_GEMM : -1;
    }
    if (!strncmp(op, "aten::", 6) && is_pointwise(op + 6) && big > 0 && big < 1e15) {
        *flops = 0;
        *bytes = inb + big;
        return FAM_POINTWISE;
    }
    return -1;
}

/* The torch op that launched kernel i: the innermost op enclosing its
 * launch call, when that is a torch op with input shapes; else
 * TELLER_NONE (a graph launch's kernels have no op of their own; a
 * kernel launched from Python, Triton's, none that states its work). */
static uint32_t kernel_op(const dctx *D, uint32_t i)
{
    const teller_events *ev = D->ev;
    uint32_t l = ev->parent[i];
    if (l == TELLER_NONE || !is_api(ev->layer[l]) || (ev->flags[l] & TELLER_F_GRAPH))
        return TELLER_NONE;
    for (uint32_t e = ev->parent[l]; e != TELLER_NONE; e = ev->parent[e]) {
        if (ev->layer[e] == TELLER_LAYER_FRONTEND)
            return TELLER_NONE;
        if (ev->layer[e] != TELLER_LAYER_BACKEND)
            continue;
        const teller_args *a = teller_store_event_args(D->st, e);
        return a && a->in_dims && a->in_types ? e : TELLER_NONE;
    }
    return TELLER_NONE;
}

/* ---- the fit ---- */

/* One judged call; one (family, kernel name) of a source, over its
 * steps; one (step, family, kernel name). */
typedef struct rcall {
    uint32_t key, event;
    double   flops, bytes, t, pred;
} rcall;
typedef struct rname {
    uint32_t name, fam;
    double   flops, bytes, t, pred;
} rname;
typedef struct rstep {
    uint32_t key, step, longest;
    double   t, pred;
} rstep;

typedef struct wpair {
    double v, w;
} wpair;
static int wpair_cmp(const void *a, const void *b)
{
    const wpair *x = a, *y = b;
    return x->v < y->v ? -1 : x->v > y->v;
}

/* The value below which a share q of the weight of p[0..n) lies (sorted
 * here); 0 when there is none. */
static double weighted_quantile(wpair *p, size_t n, double q)
{
    double tot = 0, c = 0;
    teller_sort(p, n, sizeof *p, wpair_cmp);
    for (size_t k = 0; k < n; k++)
        tot += p[k].w;
    for (size_t k = 0; k < n; k++)
        if ((c += p[k].w) >= q * tot && c > 0)
            return p[k].v;
    return n ? p[n - 1].v : 0;
}

/* Whether source s has no yardstick of kernels.c: no tensor-parallel
 * peer, no peerless stage of its pipeline, and too few steps for a
 * launch configuration's usual time. */
static int unjudged(const dctx *D, size_t s)
{
    if (D->nsteps >= 3 || D->gcount[s] > 1)
        return 0;
    for (uint32_t q = D->pfirst[s]; q < D->pfirst[s] + D->pcount[s]; q++)
        if (D->linked[q] != s && D->gcount[D->linked[q]] <= 1)
            return 0;
    return 1;
}

/* Source s's judged calls into *calls (*n of them, grown) and their
 * names into nm / *names; 0, or -1 out of memory. */
static int collect_calls(const dctx *D, size_t s, rcall **calls, size_t *n, size_t *ccap, kmap *nm, rname **names,
                         size_t *ncap)
{
    const teller_events *ev = D->ev;
    op_input in[MAX_INPUTS];
    for (size_t i = D->range[s]; i < D->range[s + 1]; i++) {
        if (ev->layer[i] != TELLER_LAYER_KERNEL || (ev->flags[i] & TELLER_F_COMM) || ev->step[i] >= D->nsteps ||
            ev->dur_ns[i] <= 0)
            continue;
        uint32_t op = kernel_op(D, (uint32_t)i);
        if (op == TELLER_NONE)
            continue;
        const teller_args *a = teller_store_event_args(D->st, op);
        int ni = parse_dims(teller_store_str(D->st, a->in_dims), in);
        if (ni <= 0)
            continue;
        parse_types(teller_store_str(D->st, a->in_types), in, ni);
        double fl, by;
        int fam = op_work(teller_store_str(D->st, ev->name[op]), in, ni, &fl, &by);
        if (fam < 0)
            continue;
        uint64_t key = ((uint64_t)ev->name[i] << 1) | (uint64_t)fam;
        rname *r = kmap_slot(nm, key, (void **)names, ncap, sizeof **names);
        if (!r || TELLER_GROW(*calls, *ccap, *n + 1))
            return -1;
        r->name = ev->name[i];
        r->fam = (uint32_t)fam;
        r->flops += fl;
        r->bytes += by;
        r->t += (double)ev->dur_ns[i];
        (*calls)[(*n)++] = (rcall){.key = kmap_get(nm, key, 0), .event = (uint32_t)i, .flops = fl, .bytes = by,
                                   .t = (double)ev->dur_ns[i]};
    }
    return 0;
}

/* Source s's findings into out. 0, or -1 out of memory. */
static int judge_source(const dctx *D, const diag_state *S, size_t s, finds *out)
{
    const teller_events *ev = D->ev;
    rcall *calls = NULL;
    rname *names = NULL;
    rstep *steps = NULL;
    wpair *wp = NULL;
    double *durs = NULL;
    size_t ncalls = 0, ccap = 0, ncap = 0, scap = 0;
    kmap nm = {0}, sm = {0};
    int rc = -1;
    if (collect_calls(D, s, &calls, &ncalls, &ccap, &nm, &names, &ncap))
        goto done;
    rc = 0;
    if (nm.n < 3)
        goto done;
    rc = -1;
    if (!(durs = malloc(ncalls * sizeof *durs)) || !(wp = malloc(nm.n * sizeof *wp)))
        goto done;
    for (size_t c = 0; c < ncalls; c++)
        durs[c] = calls[c].t;
    double t0 = diag_select(durs, ncalls, (size_t)(ROOF_FLOOR_Q * (double)(ncalls - 1)));
    /* per family, the roofline: the rates (flops, bytes per ns) the
     * fastest tenth of the family's time ran at */
    double rate[NFAM][2] = {{0}};
    for (uint32_t f = 0; f < NFAM; f++)
        for (int kind = 0; kind < 2; kind++) {
            size_t np = 0;
            for (size_t x = 0; x < nm.n; x++) {
                double work = kind ? names[x].bytes : names[x].flops;
                if (names[x].fam == f && work > 0 && names[x].t > 0)
                    wp[np++] = (wpair){work / names[x].t, names[x].t};
            }
            rate[f][kind] = np ? weighted_quantile(wp, np, 1 - ROOF_TOP_SHARE) : 0;
        }
    /* each call's predicted time, summed per name and per (step, name) */
    for (size_t c = 0; c < ncalls; c++) {
        rcall *k = &calls[c];
        rname *r = &names[k->key];
        double pa = rate[r->fam][0] > 0 ? k->flops / rate[r->fam][0] : 0;
        double pb = rate[r->fam][1] > 0 ? k->bytes / rate[r->fam][1] : 0;
        k->pred = t0 + (pa > pb ? pa : pb);
        r->pred += k->pred;
        uint32_t step = ev->step[k->event];
        rstep *st = kmap_slot(&sm, ((uint64_t)step << 32) | k->key, (void **)&steps, &scap, sizeof *steps);
        if (!st)
            goto done;
        if (st->t == 0 || ev->dur_ns[k->event] > ev->dur_ns[st->longest])
            st->longest = k->event;
        st->key = k->key;
        st->step = step;
        st->t += k->t;
        st->pred += k->pred;
    }
    /* each (step, name) against its name's usual factor over the
     * roofline: the median of the family's other names */
    rc = 0;
    int32_t rank = teller_store_source_c(D->st, (uint32_t)s)->rank;
    for (size_t ix = 0; ix < sm.n && !rc; ix++) {
        const rstep *st = &steps[ix];
        const rname *r = &names[st->key];
        size_t np = 0;
        for (size_t y = 0; y < nm.n; y++)
            if (y != st->key && names[y].fam == r->fam && names[y].pred > 0)
                wp[np++] = (wpair){names[y].t / names[y].pred, names[y].pred};
        double u = np >= 2 ? weighted_quantile(wp, np, 0.5) * st->pred : 0;
        if (u <= 0 || st->t < ROOF_SIG * u || st->t - u < ROOF_MIN_EXCESS)
            continue;
        cand c = {.det = TELLER_FAULT_KERNEL_REGRESSION, .rank = rank, .name = r->name, .layer = TELLER_LAYER_KERNEL,
                  .excess = st->t - u, .ratio = st->t / u, .actual = st->t, .usual = u, .event = st->longest,
                  .peer = -1};
        diag_heaviest(S, s, st->step, &c);
        rc = finds_add(out, st->step, &c);
    }
done:
    kmap_free(&nm);
    kmap_free(&sm);
    free(calls);
    free(names);
    free(steps);
    free(wp);
    free(durs);
    return rc;
}

static int work_run(const dctx *D, diag_state *S, size_t src, finds *out)
{
    return unjudged(D, src) ? judge_source(D, S, src, out) : 0;
}

/* round 2: its findings carry their step's heaviest kernel, of the tally */
const diag_detector diag_row_work = {.name = "work", .scope = DIAG_PER_SOURCE, .round = 2,
                                     .reads = DIAG_S_KERNEL_TALLY, .run = work_run};
