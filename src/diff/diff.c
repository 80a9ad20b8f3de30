/*
 * diff.c - what changed between a reference run and a run (diff.h).
 *
 * Each run is cut into cells: one per (step row, operator), the time and
 * launches of that operator in that step on that rank, from one pass over
 * the events. Step rows fall into classes (kind and size) that both runs
 * share through one class table, and operators into one operator table,
 * so that the cells of both runs sort into the same (class, operator,
 * rank) groups. Each group is then one comparison: the medians of the
 * per-row times on each side, padded with zeros for the rows that lack the
 * operator, against the noise (diff.h). Memory is a few words per cell,
 * not per event.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "teller/diff.h"
#include "teller/tpe.h"
#include "teller/tree.h"
#include "diff_internal.h"
#include "../util/kmap.h"
#include "../util/vec.h"

#define MAD_SCALE 1.4826   /* MAD to a normal's standard deviation */
#define NOISE_SHARE 0.005  /* of the reference's median step: the least change said */
#define MAX_KERNELS 20     /* new and gone kernels kept */
#define MIN_ROWS 2         /* steps of a class on a rank, in each run, to judge it there */

const char *teller_diff_what_name(teller_diff_what w)
{
    static const char *const n[TELLER_DIFF_WHAT_COUNT] = {"kernel", "collective", "copy", "host", "op", "idle"};
    return (unsigned)w < TELLER_DIFF_WHAT_COUNT ? n[w] : "?";
}

/* An operator of the shared table. */
typedef struct dop {
    teller_diff_what what;
    char             label[160];
    char             name[2][160]; /* first normalised name seen in each run */
} dop;

/* A class of the shared table. */
typedef struct dcls {
    diff_kind k;
    int       by_kernels;
    int       bucket;
    uint32_t  rows[2];
} dcls;

/* One (step row, operator) of one run. */
typedef struct cell {
    uint32_t cls, op, row;
    int32_t  rank;
    int64_t  ns;
    uint32_t count;
} cell;

/* What both runs share while the diff is built. */
typedef struct dctx {
    kmap     ops;
    dop     *op;
    size_t   opcap;
    kmap     classes;
    dcls    *cls;
    size_t   clscap;
} dctx;

/* One run while the diff is built. */
typedef struct side {
    const teller_store  *st;
    teller_step_summary *sum;
    size_t               nsum;
    uint32_t            *cls_of; /* per step row: its class, UINT32_MAX for an unfinished row */
    kmap                 cellmap;
    cell                *cells;
    size_t               cellcap;
    uint32_t             finished;
} side;

static int bucket_of(int64_t v)
{
    int b = 0;
    while (v > 0) {
        v >>= 1;
        b++;
    }
    return b; /* 0 for 0; b for [2^(b-1), 2^b - 1] */
}

/* Classifies every step row of s into the shared class table; -1 out of memory. */
static int classify_rows(dctx *c, side *s, int which)
{
    const teller_step *steps = teller_store_steps(s->st);
    s->cls_of = malloc((s->nsum ? s->nsum : 1) * sizeof *s->cls_of);
    if (!s->cls_of)
        return -1;
    for (size_t i = 0; i < s->nsum; i++) {
        s->cls_of[i] = UINT32_MAX;
        if (teller_step_unfinished(&steps[i]))
            continue;
        teller_step_class sc;
        teller_step_classify(steps[i].marker == TELLER_NONE ? NULL
                                                            : teller_store_str(s->st, teller_store_step_annotation(s->st, i)),
                             &sc);
        /* a loop's iterations do the same work; other steps that state none are sized by their kernels */
        int byk = sc.work < 0 && sc.kind != TELLER_STEP_ITERATION;
        int b = sc.work >= 0 ? bucket_of(sc.work) : byk ? bucket_of((int64_t)s->sum[i].kernels) : 0;
        uint64_t key = diff_kind_key(&sc) * 131u + (uint64_t)b * 2u + (uint64_t)byk;
        dcls *d = kmap_slot(&c->classes, key, (void **)&c->cls, &c->clscap, sizeof *c->cls);
        if (!d)
            return -1;
        if (!d->rows[0] && !d->rows[1]) {
            memcpy(d->k.family, sc.family, sizeof d->k.family);
            d->k.kind = sc.kind;
            d->by_kernels = byk;
            d->bucket = b;
        }
        d->rows[which]++;
        s->cls_of[i] = kmap_get(&c->classes, key, 0);
        s->finished++;
    }
    return 0;
}

/* The operator of event e, created in the shared table when new; UINT32_MAX
 * when e is none of the diff's or out of memory (*oom set). */
static uint32_t op_of(dctx *c, const teller_store *st, uint32_t e, int which, int *oom)
{
    const teller_events *ev = teller_store_events(st);
    uint8_t layer = ev->layer[e];
    const char *name = teller_store_str(st, ev->name[e]);
    const teller_args *a = teller_store_event_args(st, e);
    char label[160], fam[128];
    teller_diff_what what;
    if (layer == TELLER_LAYER_KERNEL && (ev->flags[e] & TELLER_F_COMM)) {
        /* a collective: its library, operation, message size and group */
        what = TELLER_DIFF_COMM;
        const teller_comm *cm = teller_store_event_comm(st, e);
        char op[48] = "";
        const teller_comm_family *cf = teller_comm_family_get(teller_comm_family_of(name, op, sizeof op));
        const char *coll = cm && cm->collective ? teller_store_str(st, cm->collective) : op;
        if (!*coll) {
            teller_tpe_name_family(TELLER_LAYER_KERNEL, name, fam, sizeof fam);
            coll = fam;
        }
        const char *group = cm ? teller_store_str(st, cm->pg_ranks ? cm->pg_ranks : cm->pg_name) : "";
        char size[40] = "";
        if (a && a->bytes >= 0)
            snprintf(size, sizeof size, " %lld B", (long long)a->bytes);
        /* a label past its room is cut: the name is the key, and names that long differ sooner */
        if (snprintf(label, sizeof label, "%s %s%s%s%s", cf ? cf->name : "comm", coll, size, *group ? " group " : "",
                     group) < 0)
            label[0] = 0;
    } else if (layer == TELLER_LAYER_KERNEL) {
        /* a compute kernel: its name with digit runs masked (tile sizes and template numbers do not split
         * it) and its block; not its grid, which grows with the tokens of the step */
        what = TELLER_DIFF_KERNEL;
        teller_name_normalize(name, fam, sizeof fam);
        teller_name_mask_digits(fam);
        int n = a && a->block[0]
                    ? snprintf(label, sizeof label, "%s block %ux%ux%u", fam, a->block[0], a->block[1], a->block[2])
                    : snprintf(label, sizeof label, "%s", fam);
        if (n < 0) /* past its room a label is cut, as above */
            label[0] = 0;
    } else if (layer == TELLER_LAYER_MEMCPY || layer == TELLER_LAYER_MEMSET) {
        what = TELLER_DIFF_COPY;
        teller_tpe_name_family((teller_layer)layer, name, label, sizeof label);
    } else if (layer == TELLER_LAYER_RUNTIME || layer == TELLER_LAYER_DRIVER || layer == TELLER_LAYER_BACKEND) {
        what = layer == TELLER_LAYER_BACKEND ? TELLER_DIFF_TORCH : TELLER_DIFF_HOST;
        teller_tpe_name_family((teller_layer)layer, name, label, sizeof label);
    } else
        return UINT32_MAX;
    uint64_t key = kmap_hash_bytes(label, strlen(label)) * 7u + (uint64_t)what;
    dop *o = kmap_slot(&c->ops, key, (void **)&c->op, &c->opcap, sizeof *c->op);
    if (!o) {
        *oom = 1;
        return UINT32_MAX;
    }
    if (!o->label[0]) {
        o->what = what;
        memcpy(o->label, label, sizeof label);
    }
    if (!o->name[which][0])
        teller_name_normalize(name, o->name[which], sizeof o->name[which]);
    return kmap_get(&c->ops, key, 0);
}

/* The step row of (step, rank): rows are ordered by step, then rank. */
static size_t row_of(const teller_step *steps, size_t n, uint32_t step, int32_t rank)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (steps[mid].step < step || (steps[mid].step == step && steps[mid].rank < rank))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && steps[lo].step == step && steps[lo].rank == rank ? lo : SIZE_MAX;
}

static cell *cell_at(side *s, uint32_t row, uint32_t op)
{
    cell *x = kmap_slot(&s->cellmap, ((uint64_t)row << 32) | op, (void **)&s->cells, &s->cellcap, sizeof *s->cells);
    if (x && !x->count && !x->ns) {
        x->row = row;
        x->op = op;
        x->cls = s->cls_of[row];
        x->rank = teller_store_steps(s->st)[row].rank;
    }
    return x;
}

/* One pass over s's events into cells; -1 out of memory. The operator of
 * a name (and launch grid, or comm record) is looked up once per distinct
 * pair through memo. */
static int fill_cells(dctx *c, side *s, int which, uint32_t idle_op)
{
    const teller_events *ev = teller_store_events(s->st);
    const teller_step *steps = teller_store_steps(s->st);
    kmap memo = {0};
    uint32_t *memo_op = NULL; /* op + 1; UINT32_MAX: none of the diff's */
    size_t memo_cap = 0;
    uint32_t last_step = TELLER_NONE;
    uint16_t last_src = UINT16_MAX;
    size_t row = SIZE_MAX;
    int oom = 0;
    for (size_t e = 0; e < ev->n && !oom; e++) {
        uint8_t layer = ev->layer[e];
        if (ev->step[e] == TELLER_NONE || !(teller_layer_is_gpu_work(layer) || teller_layer_is_host_op(layer)))
            continue;
        if (ev->step[e] != last_step || ev->source[e] != last_src) {
            last_step = ev->step[e];
            last_src = ev->source[e];
            row = row_of(steps, s->nsum, last_step, teller_store_source_c(s->st, last_src)->rank);
        }
        if (row == SIZE_MAX || s->cls_of[row] == UINT32_MAX)
            continue;
        const teller_args *a = teller_store_event_args(s->st, (uint32_t)e);
        uint64_t mk = ((uint64_t)ev->name[e] << 8 | layer) * 0x9E3779B97F4A7C15ull;
        if (a && (ev->flags[e] & TELLER_F_COMM))
            mk ^= (uint64_t)a->comm * 0xC2B2AE3D27D4EB4Full ^ (uint64_t)a->bytes;
        else if (a && layer == TELLER_LAYER_KERNEL)
            mk ^= kmap_hash_bytes(a->block, sizeof a->block);
        uint32_t *m = kmap_slot(&memo, mk, (void **)&memo_op, &memo_cap, sizeof *memo_op);
        if (!m) {
            oom = 1;
            break;
        }
        if (!*m) {
            uint32_t o = op_of(c, s->st, (uint32_t)e, which, &oom);
            *m = o == UINT32_MAX ? UINT32_MAX : o + 1;
        }
        if (*m == UINT32_MAX)
            continue;
        cell *x = cell_at(s, (uint32_t)row, *m - 1);
        if (!x) {
            oom = 1;
            break;
        }
        x->ns += ev->dur_ns[e];
        x->count++;
    }
    kmap_free(&memo);
    free(memo_op);
    for (size_t r = 0; r < s->nsum && !oom; r++) {
        if (s->cls_of[r] == UINT32_MAX || !s->sum[r].gpu_known || s->sum[r].gpu_idle_ns <= 0)
            continue;
        cell *x = cell_at(s, (uint32_t)r, idle_op);
        if (!x) {
            oom = 1;
            break;
        }
        x->ns += s->sum[r].gpu_idle_ns;
        x->count = 1;
    }
    return oom ? -1 : 0;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* The median of sorted v[0..n), n > 0. */
static int64_t median_sorted(const int64_t *v, size_t n)
{
    return n % 2 ? v[n / 2] : v[n / 2 - 1] + (v[n / 2] - v[n / 2 - 1]) / 2;
}

/* Median and 1.4826 x MAD of v[0..n) (sorted in place; scratch of n). */
static void med_spread(int64_t *v, size_t n, int64_t *scratch, int64_t *med, int64_t *spread)
{
    *med = *spread = 0;
    if (!n)
        return;
    teller_sort(v, n, sizeof *v, cmp_i64);
    int64_t m = median_sorted(v, n);
    for (size_t i = 0; i < n; i++)
        scratch[i] = v[i] > m ? v[i] - m : m - v[i];
    teller_sort(scratch, n, sizeof *scratch, cmp_i64);
    int64_t mad = median_sorted(scratch, n);
    *med = m;
    *spread = (int64_t)llround(MAD_SCALE * (double)mad);
}

/* Cells by class, operator, rank, row. */
static int cmp_cell(const void *a, const void *b)
{
    const cell *x = a, *y = b;
    if (x->cls != y->cls)
        return x->cls < y->cls ? -1 : 1;
    if (x->op != y->op)
        return x->op < y->op ? -1 : 1;
    if (x->rank != y->rank)
        return x->rank < y->rank ? -1 : 1;
    return (x->row > y->row) - (x->row < y->row);
}

/* The rows of one class on one rank in one run (rank INT32_MIN: every rank). */
typedef struct rowset {
    uint32_t cls;
    int32_t  rank;
    uint32_t n;
    int64_t  med, spread; /* step duration */
    uint32_t example;     /* the row nearest the median */
    uint32_t gpu_unknown; /* rows whose GPU work the trace lacks (teller_step_summary.gpu_known 0) */
} rowset;

static int cmp_rowset(const void *a, const void *b)
{
    const rowset *x = a, *y = b;
    if (x->cls != y->cls)
        return x->cls < y->cls ? -1 : 1;
    return (x->rank > y->rank) - (x->rank < y->rank);
}

static const rowset *find_rowset(const rowset *rs, size_t n, uint32_t cls, int32_t rank)
{
    rowset key = {.cls = cls, .rank = rank};
    return n ? bsearch(&key, rs, n, sizeof *rs, cmp_rowset) : NULL;
}

/* A step row with its class and rank, for sorting. */
typedef struct rref {
    uint32_t cls;
    int32_t  rank;
    uint32_t row;
} rref;

static int cmp_rref(const void *a, const void *b)
{
    const rref *x = a, *y = b;
    if (x->cls != y->cls)
        return x->cls < y->cls ? -1 : 1;
    if (x->rank != y->rank)
        return x->rank < y->rank ? -1 : 1;
    return (x->row > y->row) - (x->row < y->row);
}

/* Fills o from the rows p[0..n) (one class; one rank or all). */
static void rowset_of(const side *s, const rref *p, size_t n, int64_t *v, rowset *o)
{
    o->gpu_unknown = 0;
    for (size_t q = 0; q < n; q++) {
        v[q] = s->sum[p[q].row].dur_ns;
        o->gpu_unknown += !s->sum[p[q].row].gpu_known;
    }
    med_spread(v, n, v + n, &o->med, &o->spread);
    o->cls = p[0].cls;
    o->n = (uint32_t)n;
    o->example = p[0].row;
    int64_t best = INT64_MAX;
    for (size_t q = 0; q < n; q++) {
        int64_t d = s->sum[p[q].row].dur_ns - o->med;
        d = d < 0 ? -d : d;
        if (d < best) {
            best = d;
            o->example = p[q].row;
        }
    }
}

/* Per (class, rank) of s, and per class over every rank (rank INT32_MIN):
 * rows, median step duration and spread, the example row; sorted by class
 * and rank. *out is malloc'd; -1 out of memory. */
static int rowsets(const side *s, rowset **out, size_t *nout)
{
    size_t n = s->finished;
    rref *p = malloc((n ? n : 1) * sizeof *p);
    int64_t *v = malloc((n ? n : 1) * 2 * sizeof *v);
    rowset *rs = malloc((2 * n + 1) * sizeof *rs);
    if (!p || !v || !rs) {
        free(p);
        free(v);
        free(rs);
        return -1;
    }
    const teller_step *steps = teller_store_steps(s->st);
    size_t k = 0;
    for (size_t r = 0; r < s->nsum; r++)
        if (s->cls_of[r] != UINT32_MAX)
            p[k++] = (rref){s->cls_of[r], steps[r].rank, (uint32_t)r};
    teller_sort(p, k, sizeof *p, cmp_rref);
    size_t nrs = 0;
    for (size_t i = 0; i < k;) {
        size_t j = i;
        while (j < k && p[j].cls == p[i].cls)
            j++;
        rowset_of(s, p + i, j - i, v, &rs[nrs]);
        rs[nrs++].rank = INT32_MIN;
        for (size_t a = i; a < j;) {
            size_t b = a;
            while (b < j && p[b].rank == p[a].rank)
                b++;
            rowset_of(s, p + a, b - a, v, &rs[nrs]);
            rs[nrs++].rank = p[a].rank;
            a = b;
        }
        i = j;
    }
    free(p);
    free(v);
    *out = rs;
    *nout = nrs;
    return 0;
}

/* Median and spread of one group's per-row values: the cells' k values,
 * padded with zeros to n rows. */
static void group_stats(const cell *g, size_t k, size_t n, int64_t *v, int64_t *med, int64_t *spread, double *count)
{
    memset(v, 0, n * sizeof *v);
    for (size_t i = 0; i < k && i < n; i++)
        v[i] = g[i].ns;
    med_spread(v, n, v + n, med, spread);
    memset(v, 0, n * sizeof *v);
    for (size_t i = 0; i < k && i < n; i++)
        v[i] = g[i].count;
    teller_sort(v, n, sizeof *v, cmp_i64);
    *count = !n ? 0 : n % 2 ? (double)v[n / 2] : ((double)v[n / 2 - 1] + (double)v[n / 2]) / 2;
}

static int same_group(const cell *a, const cell *b)
{
    return a->cls == b->cls && a->op == b->op && a->rank == b->rank;
}

/* Per (class, op), the worst rank so far. */
typedef struct agg {
    int      live;
    int32_t  rank;
    int64_t  ref_ns, run_ns, noise_ns;
    double   ref_count, run_count;
    uint32_t ranks_changed, ranks;
} agg;

static int64_t abs64(int64_t x) { return x < 0 ? -x : x; }

static int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }

/* Compares every (class, operator, rank) group of the two runs into the
 * aggregates per (class, operator); -1 out of memory. */
static int compare_groups(side *s, const rowset *const rs[2], const size_t nrs[2], const uint32_t *matched,
                          uint32_t idle_op, kmap *aggs, agg **agg_arr, size_t *agg_cap)
{
    size_t nc[2] = {s[0].cellmap.n, s[1].cellmap.n};
    teller_sort(s[0].cells, nc[0], sizeof *s[0].cells, cmp_cell);
    teller_sort(s[1].cells, nc[1], sizeof *s[1].cells, cmp_cell);
    size_t most = 1;
    for (int w = 0; w < 2; w++)
        for (size_t i = 0; i < nrs[w]; i++)
            if (rs[w][i].n > most)
                most = rs[w][i].n;
    int64_t *v = malloc(2 * most * sizeof *v);
    if (!v)
        return -1;
    size_t i = 0, j = 0;
    while (i < nc[0] || j < nc[1]) {
        const cell *a = i < nc[0] ? &s[0].cells[i] : NULL, *b = j < nc[1] ? &s[1].cells[j] : NULL;
        const cell *key = !a ? b : !b ? a : cmp_cell(a, b) <= 0 ? a : b;
        size_t ka = 0, kb = 0;
        while (i + ka < nc[0] && same_group(&s[0].cells[i + ka], key))
            ka++;
        while (j + kb < nc[1] && same_group(&s[1].cells[j + kb], key))
            kb++;
        const cell *ga = s[0].cells + i, *gb = s[1].cells + j;
        i += ka;
        j += kb;
        if (matched[key->cls] == UINT32_MAX)
            continue;
        const rowset *ra = find_rowset(rs[0], nrs[0], key->cls, key->rank);
        const rowset *rb = find_rowset(rs[1], nrs[1], key->cls, key->rank);
        const rowset *all = find_rowset(rs[0], nrs[0], key->cls, INT32_MIN);
        if (!ra || !rb || !all || ra->n < MIN_ROWS || rb->n < MIN_ROWS)
            continue; /* a rank that ran the class in one run only, or too few times to judge */
        if (key->op == idle_op && (ra->gpu_unknown || rb->gpu_unknown))
            continue; /* idle time that the trace does not know */
        int64_t ma, sa, mb, sb;
        double ca, cb;
        group_stats(ga, ka, ra->n, v, &ma, &sa, &ca);
        group_stats(gb, kb, rb->n, v, &mb, &sb, &cb);
        int64_t noise = max64(max64(sa, sb), max64(ra->spread, rb->spread));
        noise = max64(noise, (int64_t)(NOISE_SHARE * (double)all->med));
        agg *g = kmap_slot(aggs, (uint64_t)key->cls << 32 | key->op, (void **)agg_arr, agg_cap, sizeof **agg_arr);
        if (!g) {
            free(v);
            return -1;
        }
        int64_t d = mb - ma;
        g->ranks++;
        g->ranks_changed += abs64(d) > noise;
        if (!g->live || abs64(d) > abs64(g->run_ns - g->ref_ns)) {
            *g = (agg){1, key->rank, ma, mb, noise, ca, cb, g->ranks_changed, g->ranks};
        }
    }
    free(v);
    return 0;
}

/* A kernel name's time in each run. */
typedef struct kname {
    char   name[160];
    double ns[2];
} kname;

/* Adds st's compute and communication kernel time per masked normalised
 * name into the shared table (per finished step row later: the time of
 * kernels outside every step counts too); -1 out of memory. */
static int kernel_names(const teller_store *st, int which, kmap *m, kname **arr, size_t *cap)
{
    size_t nstr = teller_store_num_strings(st);
    uint64_t *by = diff_kernel_ns(st, 1);
    if (!by)
        return -1;
    for (size_t id = 0; id < nstr; id++) {
        if (!by[id])
            continue;
        char nm[160];
        teller_name_normalize(teller_store_str(st, (uint32_t)id), nm, sizeof nm);
        teller_name_mask_digits(nm);
        kname *k = kmap_slot(m, kmap_hash_bytes(nm, strlen(nm)), (void **)arr, cap, sizeof **arr);
        if (!k) {
            free(by);
            return -1;
        }
        memcpy(k->name, nm, sizeof nm);
        k->ns[which] += (double)by[id];
    }
    free(by);
    return 0;
}

static int cmp_kernel(const void *a, const void *b)
{
    const teller_diff_kernel *x = a, *y = b;
    if (x->ns_per_step != y->ns_per_step)
        return x->ns_per_step > y->ns_per_step ? -1 : 1;
    return strcmp(x->name, y->name);
}

/* The kernels of one run alone into *out (most time first, MAX_KERNELS at most). */
static int only_in(const kname *k, size_t n, int which, uint32_t rows, teller_diff_kernel **out, size_t *nout)
{
    size_t c = 0;
    for (size_t i = 0; i < n; i++)
        c += k[i].ns[which] > 0 && k[i].ns[!which] == 0;
    *out = calloc(c ? c : 1, sizeof **out);
    if (!*out)
        return -1;
    *nout = 0;
    for (size_t i = 0; i < n; i++)
        if (k[i].ns[which] > 0 && k[i].ns[!which] == 0) {
            teller_diff_kernel *o = &(*out)[(*nout)++];
            memcpy(o->name, k[i].name, sizeof o->name);
            o->ns_per_step = k[i].ns[which] / (rows ? rows : 1);
        }
    teller_sort(*out, *nout, sizeof **out, cmp_kernel);
    if (*nout > MAX_KERNELS)
        *nout = MAX_KERNELS;
    return 0;
}

static int cmp_change(const void *a, const void *b)
{
    const teller_diff_change *x = a, *y = b;
    if (x->changed != y->changed)
        return x->changed ? -1 : 1;
    if (x->waits != y->waits)
        return x->waits ? 1 : -1;
    int64_t dx = abs64(x->run_ns - x->ref_ns), dy = abs64(y->run_ns - y->ref_ns);
    if (dx != dy)
        return dx > dy ? -1 : 1;
    if (x->cls != y->cls)
        return x->cls < y->cls ? -1 : 1;
    return strcmp(x->op, y->op);
}

/* Class indices: changed first, then the larger move, then the lower index. */
static int cmp_class_ix(const void *a, const void *b, void *ctx)
{
    uint32_t i = *(const uint32_t *)a, j = *(const uint32_t *)b;
    const teller_diff_class *x = (const teller_diff_class *)ctx + i, *y = (const teller_diff_class *)ctx + j;
    if (x->changed != y->changed)
        return x->changed ? -1 : 1;
    int64_t dx = abs64(x->run_ns - x->ref_ns), dy = abs64(y->run_ns - y->ref_ns);
    if (dx != dy)
        return dx > dy ? -1 : 1;
    return (i > j) - (i < j);
}

static int cmp_rank(const void *a, const void *b)
{
    const teller_diff_rank *x = a, *y = b;
    if (x->changed != y->changed)
        return x->changed ? -1 : 1;
    int64_t dx = abs64(x->run_ns - x->ref_ns), dy = abs64(y->run_ns - y->ref_ns);
    if (dx != dy)
        return dx > dy ? -1 : 1;
    if (x->cls != y->cls)
        return x->cls < y->cls ? -1 : 1;
    return (x->rank > y->rank) - (x->rank < y->rank);
}

static void device_of(const teller_store *st, char *out, size_t cap)
{
    out[0] = 0;
    for (size_t i = 0; i < teller_store_num_sources(st) && !out[0]; i++) {
        uint32_t id = teller_store_source_c(st, (uint32_t)i)->device_name;
        if (id)
            snprintf(out, cap, "%s", teller_store_str(st, id));
    }
}

/* A class's changed rule: the move exceeds both runs' spreads and half a
 * percent of the reference. */
static int moved(int64_t ref, int64_t run, int64_t sa, int64_t sb)
{
    int64_t d = abs64(run - ref);
    return d > sa && d > sb && (double)d > NOISE_SHARE * (double)ref;
}

void teller_diff_free(teller_diff *d)
{
    if (!d)
        return;
    free(d->classes);
    free(d->changes);
    free(d->added);
    free(d->gone);
    free(d->ranks);
    free(d);
}

/* Fills the classes, ranks and changes of d from the built sides. */
static int assemble(teller_diff *d, dctx *c, side *s, const rowset *const rs[2], const size_t nrs[2], uint32_t idle_op)
{
    size_t ncls = c->classes.n;
    uint32_t *matched = malloc((ncls ? ncls : 1) * sizeof *matched);
    d->classes = calloc(ncls ? ncls : 1, sizeof *d->classes);
    d->ranks = calloc(nrs[0] ? nrs[0] : 1, sizeof *d->ranks);
    if (!matched || !d->classes || !d->ranks) {
        free(matched);
        return -1;
    }
    for (size_t k = 0; k < ncls; k++) {
        const dcls *x = &c->cls[k];
        matched[k] = UINT32_MAX;
        if (!x->rows[0] || !x->rows[1]) {
            d->ref_unmatched += x->rows[0];
            d->run_unmatched += x->rows[1];
            continue;
        }
        const rowset *a = find_rowset(rs[0], nrs[0], (uint32_t)k, INT32_MIN);
        const rowset *b = find_rowset(rs[1], nrs[1], (uint32_t)k, INT32_MIN);
        teller_diff_class *o = &d->classes[d->nclasses];
        matched[k] = (uint32_t)d->nclasses++;
        memcpy(o->family, x->k.family, sizeof o->family);
        o->kind = x->k.kind;
        o->by_kernels = x->by_kernels;
        o->size_lo = x->bucket ? (int64_t)1 << (x->bucket - 1) : 0;
        o->size_hi = x->bucket ? ((int64_t)1 << x->bucket) - 1 : 0;
        o->ref_rows = x->rows[0];
        o->run_rows = x->rows[1];
        o->ref_ns = a->med;
        o->run_ns = b->med;
        o->ref_spread_ns = a->spread;
        o->run_spread_ns = b->spread;
        o->rank = INT32_MIN;
        /* per rank; the example is the rank that moved most */
        int64_t worst = -1;
        for (size_t i = 0; i < nrs[0]; i++) {
            const rowset *ra = &rs[0][i];
            if (ra->cls != k || ra->rank == INT32_MIN)
                continue;
            const rowset *rb = find_rowset(rs[1], nrs[1], (uint32_t)k, ra->rank);
            if (!rb)
                continue;
            int judged = ra->n >= MIN_ROWS && rb->n >= MIN_ROWS;
            o->judged |= judged;
            teller_diff_rank *r = &d->ranks[d->nranks++];
            *r = (teller_diff_rank){matched[k], ra->rank, ra->med, rb->med,
                                    judged && moved(ra->med, rb->med, ra->spread, rb->spread)};
            if (abs64(rb->med - ra->med) > worst) {
                worst = abs64(rb->med - ra->med);
                o->rank = ra->rank;
                o->ref_step = teller_store_steps(s[0].st)[ra->example].step;
                o->run_step = teller_store_steps(s[1].st)[rb->example].step;
            }
        }
        o->changed = o->judged && moved(a->med, b->med, a->spread, b->spread);
    }
    kmap aggs = {0};
    agg *ag = NULL;
    size_t agcap = 0;
    int rc = compare_groups(s, rs, nrs, matched, idle_op, &aggs, &ag, &agcap);
    if (rc == 0) {
        uint64_t *keys = malloc((aggs.n ? aggs.n : 1) * sizeof *keys);
        d->changes = calloc(aggs.n ? aggs.n : 1, sizeof *d->changes);
        if (!keys || !d->changes)
            rc = -1;
        else {
            kmap_keys(&aggs, keys);
            for (size_t i = 0; i < aggs.n; i++) {
                if (ag[i].run_ns == ag[i].ref_ns)
                    continue;
                uint32_t k = (uint32_t)(keys[i] >> 32), op = (uint32_t)keys[i];
                const dop *o = &c->op[op];
                teller_diff_change *x = &d->changes[d->nchanges++];
                x->cls = matched[k];
                x->what = o->what;
                memcpy(x->op, o->label, sizeof x->op);
                memcpy(x->ref_name, o->name[0], sizeof x->ref_name);
                memcpy(x->run_name, o->name[1], sizeof x->run_name);
                x->rank = ag[i].rank;
                x->ref_ns = ag[i].ref_ns;
                x->run_ns = ag[i].run_ns;
                x->noise_ns = ag[i].noise_ns;
                x->ref_count = ag[i].ref_count;
                x->run_count = ag[i].run_count;
                x->ranks_changed = ag[i].ranks_changed;
                x->changed = ag[i].ranks_changed > 0;
                x->waits = o->what == TELLER_DIFF_HOST && strstr(o->label, "Synchronize") != NULL;
                x->ranks = ag[i].ranks;
            }
        }
        free(keys);
    }
    kmap_free(&aggs);
    free(ag);
    free(matched);
    if (rc != 0)
        return -1;
    /* the classes sorted; indices in changes and ranks follow */
    uint32_t *by = malloc((d->nclasses ? d->nclasses : 1) * sizeof *by);
    uint32_t *order = malloc((d->nclasses ? d->nclasses : 1) * sizeof *order);
    teller_diff_class *sorted = malloc((d->nclasses ? d->nclasses : 1) * sizeof *sorted);
    if (!by || !order || !sorted) {
        free(by);
        free(order);
        free(sorted);
        return -1;
    }
    for (uint32_t i = 0; i < d->nclasses; i++)
        by[i] = i;
    teller_sort_r(by, d->nclasses, sizeof *by, cmp_class_ix, d->classes);
    for (uint32_t i = 0; i < d->nclasses; i++) {
        sorted[i] = d->classes[by[i]];
        order[by[i]] = i;
    }
    free(d->classes);
    d->classes = sorted;
    for (size_t i = 0; i < d->nchanges; i++)
        d->changes[i].cls = order[d->changes[i].cls];
    for (size_t i = 0; i < d->nranks; i++)
        d->ranks[i].cls = order[d->ranks[i].cls];
    free(by);
    free(order);
    teller_sort(d->changes, d->nchanges, sizeof *d->changes, cmp_change);
    teller_sort(d->ranks, d->nranks, sizeof *d->ranks, cmp_rank);
    return 0;
}

teller_status teller_diff_compute(const teller_store *ref, const teller_store *run, teller_diff **out,
                                  teller_error *err)
{
    *out = NULL;
    teller_diff *d = calloc(1, sizeof *d);
    if (!d)
        return teller_error_set(err, TELLER_ERR_NOMEM, NULL, 0, "out of memory");
    teller_status st = teller_diff_check(ref, run, &d->verdict, err);
    if (st != TELLER_OK) {
        free(d);
        return st;
    }
    device_of(ref, d->ref_device, sizeof d->ref_device);
    device_of(run, d->run_device, sizeof d->run_device);
    dctx c = {0};
    side s[2] = {{.st = ref}, {.st = run}};
    rowset *rs[2] = {NULL, NULL};
    size_t nrs[2] = {0, 0};
    kmap kn = {0};
    kname *karr = NULL;
    size_t kcap = 0;
    int bad = 0;
    for (int w = 0; w < 2 && !bad; w++)
        bad = teller_step_summaries(s[w].st, &s[w].sum, &s[w].nsum, err) != TELLER_OK ||
              classify_rows(&c, &s[w], w) != 0;
    /* the GPU's idle time is an operator of its own */
    uint64_t idle_key = kmap_hash_bytes("GPU idle", 8) * 7u + TELLER_DIFF_IDLE;
    dop *idle = bad ? NULL : kmap_slot(&c.ops, idle_key, (void **)&c.op, &c.opcap, sizeof *c.op);
    bad = bad || !idle;
    if (!bad) {
        idle->what = TELLER_DIFF_IDLE;
        snprintf(idle->label, sizeof idle->label, "GPU idle");
    }
    uint32_t idle_op = bad ? 0 : kmap_get(&c.ops, idle_key, 0);
    for (int w = 0; w < 2 && !bad; w++)
        bad = fill_cells(&c, &s[w], w, idle_op) != 0 || rowsets(&s[w], &rs[w], &nrs[w]) != 0 ||
              kernel_names(s[w].st, w, &kn, &karr, &kcap) != 0;
    if (!bad) {
        d->ref_rows = s[0].finished;
        d->run_rows = s[1].finished;
        const rowset *const crs[2] = {rs[0], rs[1]};
        bad = assemble(d, &c, s, crs, nrs, idle_op) != 0 || only_in(karr, kn.n, 1, d->run_rows, &d->added, &d->nadded) != 0 ||
              only_in(karr, kn.n, 0, d->ref_rows, &d->gone, &d->ngone) != 0;
    }
    for (int w = 0; w < 2; w++) {
        free(s[w].sum);
        free(s[w].cls_of);
        kmap_free(&s[w].cellmap);
        free(s[w].cells);
        free(rs[w]);
    }
    kmap_free(&c.ops);
    free(c.op);
    kmap_free(&c.classes);
    free(c.cls);
    kmap_free(&kn);
    free(karr);
    if (bad) {
        teller_diff_free(d);
        return teller_error_set(err, TELLER_ERR_NOMEM, NULL, 0, "out of memory comparing the runs");
    }
    *out = d;
    return TELLER_OK;
}
