/*
 * diagnose.c - numeric candidate localization (see diagnose.h).
 *
 * Every detector compares what a step did with what the run itself says is
 * normal, in a way that does not move with the batch (so a long prefill is
 * not an anomaly):
 *   peers     a kernel's time on a rank against the fastest tensor-parallel
 *             peer in the same step (peers do identical work); the peer
 *             groups come from the collectives the ranks share;
 *   per call  an API call's duration against the run's median for that API
 *             (launch latency); rare APIs (cudaMalloc, cudaFree) against zero;
 *   sync      a synchronize's overhang past the rank's last GPU work;
 *   copies    copy bandwidth against the run's median (PCIe), and copy volume
 *             against the rank's usual volume per step (swapping);
 *   host      gaps between consecutive host ops on the stepping thread
 *             against the rank's usual gap (descheduling);
 *   links     a collective's transfer time (the last arriver's duration)
 *             against the usual for its operation and message size; one slow
 *             pair is a stalled send, several pairs a slow link; a collective
 *             that a rank never joined, or that ran for seconds, is a hang;
 *   logs      preemption, OOM and watchdog lines, aligned to steps.
 * Each finding is a candidate (rank, operator, layer) with the excess time
 * it explains and how unusual it is; a step's score is its best candidate's.
 * The thresholds were set on a tuning corpus (seeds kept apart from the ones
 * reported) and are documented in docs/DIAGNOSE.md.
 */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "teller/diagnose.h"
#include "teller/fault.h"
#include "teller/logs.h"
#include "teller/model.h"
#include "teller/tree.h"
#include "../util/kmap.h"
#include "../util/pool.h"
#include "../util/vec.h"

typedef struct cand {
    teller_fault det;  /* teller_fault found; TELLER_FAULT_NONE once merged into another */
    int32_t  rank;
    uint32_t name;     /* interned operator name */
    uint8_t  layer;
    double   excess;   /* ns the finding explains */
    double   sig;      /* how unusual: a ratio or z-like figure, >= 1 */
    double   actual, usual; /* the operator's time in the step and its usual time, ns */
    uint32_t event;    /* an event of the candidate */
    double   score;
    uint32_t fed;      /* launches: GPU operations the slowed calls launched; allocations: calls */
    int32_t  peer;     /* transfers: the rank at the other end, else -1 */
} cand;

typedef struct step_acc {
    cand    *c;
    size_t   n, cap;
    double   start; /* earliest rank's start */
    double   work;  /* compute kernel time on the lowest rank: the batch's size */
    int      claimed; /* a whole-second log line was already placed here */
} step_acc;

/* When something was busy, per source: the union of some events as sorted
 * disjoint intervals [a, b), those of source s at off[s] .. off[s + 1],
 * cum the busy time before each. */
typedef struct busyidx {
    int64_t *a, *b, *cum;
    size_t  *off;
} busyidx;

typedef struct dctx {
    teller_store       *st;
    const teller_events *ev;
    uint32_t            nsteps;
    int32_t             nranks_max;
    step_acc           *steps;
    int32_t            *group;   /* per source: peer group id (union-find root) */
    size_t              nsrc;
    double              t_first, t_last; /* the traced steps' span, node 0's clock */
    int64_t            *mstart;  /* per (step, source): the step's start on that rank */
    size_t             *range;   /* source s holds events [range[s], range[s + 1]) (the tree build groups them) */
    busyidx             gpu;     /* when each source's GPU was busy */
    int                 nomem;   /* an allocation failed where no status could be returned */
    teller_diagnosis   *out;
    /* the horizontal view, per (step, source): collectives at which the
     * source arrived last and its peers' wait for it; per step: collectives */
    uint32_t           *late_last, *late_insts;
    double             *late_wait;
} dctx;

static int add_cand(dctx *D, uint32_t step, const cand *c)
{
    if (step >= D->nsteps)
        return 0;
    step_acc *s = &D->steps[step];
    if (TELLER_GROW(s->c, s->cap, s->n + 1))
        return -1;
    s->c[s->n++] = *c;
    return 0;
}

/* What a detector found, in the order it found it. Detectors run on
 * several threads, each into its own list; the lists are then added to the
 * steps one after the other in a fixed order (add_found), so every step's
 * candidates come in the same order whatever ran where. */
typedef struct found {
    uint32_t step;
    cand     c;
} found;
typedef struct finds {
    found *v;
    size_t n, cap;
} finds;

static int finds_add(finds *f, uint32_t step, const cand *c)
{
    if (TELLER_GROW(f->v, f->cap, f->n + 1))
        return -1;
    f->v[f->n].step = step;
    f->v[f->n++].c = *c;
    return 0;
}

/* adds f's candidates to their steps and empties f */
static int add_found(dctx *D, finds *f)
{
    int rc = 0;
    for (size_t i = 0; i < f->n && !rc; i++)
        rc = add_cand(D, f->v[i].step, &f->v[i].c);
    free(f->v);
    memset(f, 0, sizeof *f);
    return rc;
}

static int32_t rank_of(const dctx *D, uint32_t e) { return teller_store_event_rank(D->st, e); }

static int cmp_dbl(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* median of v[0..n) (reorders v) */
static double median_of(double *v, size_t n)
{
    if (!n)
        return 0;
    teller_sort(v, n, sizeof *v, cmp_dbl);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Samples grouped by a 64-bit key, for the median of each group. */
typedef struct samples {
    double *v;
    size_t n, cap;
} samples;
typedef struct groups {
    kmap keys; /* key -> index into s */
    samples *s;
    size_t cap;
} groups;

static int groups_add(groups *g, uint64_t key, double x)
{
    samples *s = kmap_slot(&g->keys, key, (void **)&g->s, &g->cap, sizeof *g->s);
    if (!s || TELLER_GROW(s->v, s->cap, s->n + 1))
        return -1;
    s->v[s->n++] = x;
    return 0;
}

/* The median of each group, indexed as g->keys (reorders the samples);
 * NULL when out of memory. */
static double *groups_medians(groups *g)
{
    double *med = calloc(g->keys.n ? g->keys.n : 1, sizeof *med);
    if (med)
        for (size_t ix = 0; ix < g->keys.n; ix++)
            med[ix] = median_of(g->s[ix].v, g->s[ix].n);
    return med;
}

static void groups_free(groups *g)
{
    for (size_t ix = 0; ix < g->keys.n && ix < g->cap; ix++)
        free(g->s[ix].v);
    free(g->s);
    kmap_free(&g->keys);
}

/* The (name, step, source) key of per-step tallies: names below 2^28,
 * steps below 2^22 and sources below 2^14 keep keys apart. */
static uint64_t nss_key(uint32_t name, uint32_t step, uint16_t src)
{
    return ((uint64_t)(name & 0xFFFFFFF) << 36) | ((uint64_t)(step & 0x3FFFFF) << 14) | (src & 0x3FFF);
}

/* ---- when the GPU was busy ---- */

/* A host call or a host gap costs the step only the time the rank's GPU
 * had nothing to do meanwhile: a slow launch while the GPU is still busy
 * with earlier work, a copy call blocked until the kernels before it end,
 * or a thread waiting while another thread keeps the GPU fed, delay
 * nothing. The index below answers "how long was the GPU idle in [a, b)". */

static int cmp_iv(const void *x, const void *y)
{
    const int64_t *a = x, *b = y;
    return a[0] < b[0] ? -1 : a[0] > b[0];
}

static int is_api(uint8_t L) { return L == TELLER_LAYER_RUNTIME || L == TELLER_LAYER_DRIVER; }
static int is_host_op(uint8_t L) { return L == TELLER_LAYER_BACKEND || is_api(L); }

/* Whether event i counts as busy: without step_tid GPU work; with it, the
 * outermost host ops of the source's threads other than its stepping thread. */
static int busy_counts(const teller_events *ev, uint32_t i, const int32_t *step_tid)
{
    if (ev->dur_ns[i] <= 0)
        return 0;
    if (!step_tid)
        return (ev->flags[i] & TELLER_F_GPU) != 0;
    if ((ev->flags[i] & TELLER_F_GPU) || !is_host_op(ev->layer[i]) || ev->tid[i] == step_tid[ev->source[i]])
        return 0;
    uint32_t p = ev->parent[i];
    return p == TELLER_NONE || !is_host_op(ev->layer[p]);
}

static int busy_build(busyidx *B, const dctx *D, const int32_t *step_tid)
{
    const teller_events *ev = D->ev;
    size_t ns = D->nsrc, n = 0;
    memset(B, 0, sizeof *B);
    B->off = calloc(ns + 2, sizeof *B->off);
    if (!B->off)
        return -1;
    for (size_t i = 0; i < ev->n; i++)
        if (busy_counts(ev, (uint32_t)i, step_tid)) {
            B->off[ev->source[i] + 2]++;
            n++;
        }
    /* intervals grouped by source (counting sort), then sorted and merged in place */
    int64_t *iv = malloc((n ? n : 1) * 2 * sizeof *iv);
    B->a = malloc((n ? n : 1) * sizeof *B->a);
    B->b = malloc((n ? n : 1) * sizeof *B->b);
    B->cum = malloc((n ? n : 1) * sizeof *B->cum);
    if (!iv || !B->a || !B->b || !B->cum) {
        free(iv);
        return -1;
    }
    for (size_t s = 0; s < ns; s++)
        B->off[s + 2] += B->off[s + 1];
    for (size_t i = 0; i < ev->n; i++)
        if (busy_counts(ev, (uint32_t)i, step_tid)) {
            size_t at = B->off[ev->source[i] + 1]++;
            iv[2 * at] = ev->start_ns[i];
            iv[2 * at + 1] = ev->start_ns[i] + ev->dur_ns[i];
        }
    /* off[s] .. off[s + 1] now bound source s; merge each run in place */
    size_t w = 0, lo = 0;
    for (size_t s = 0; s < ns; s++) {
        size_t hi = B->off[s + 1]; /* the source's original end, overwritten below */
        teller_sort(iv + 2 * lo, hi - lo, 2 * sizeof *iv, cmp_iv);
        B->off[s] = w;
        int64_t cum = 0;
        for (size_t j = lo; j < hi; j++) {
            int64_t a = iv[2 * j], b = iv[2 * j + 1];
            if (w > B->off[s] && a <= B->b[w - 1]) {
                if (b > B->b[w - 1]) {
                    cum += b - B->b[w - 1];
                    B->b[w - 1] = b;
                }
                continue;
            }
            B->a[w] = a;
            B->b[w] = b;
            B->cum[w] = cum;
            cum += b - a;
            w++;
        }
        B->off[s + 1] = w;
        lo = hi;
    }
    free(iv);
    return 0;
}

static void busy_free(busyidx *B)
{
    free(B->a);
    free(B->b);
    free(B->cum);
    free(B->off);
}

/* busy time of source src before t */
static int64_t busy_before(const busyidx *B, uint16_t src, int64_t t)
{
    size_t lo = B->off[src], hi = B->off[src + 1];
    while (lo < hi) { /* the first interval starting at or after t */
        size_t mid = (lo + hi) / 2;
        if (B->a[mid] < t)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == B->off[src])
        return 0;
    size_t j = lo - 1; /* the last interval starting before t */
    int64_t end = B->b[j] < t ? B->b[j] : t;
    return B->cum[j] + (end - B->a[j]);
}

/* The span [*x, *y) from the first to the last busy time of source src
 * inside [a, b); 0 when it was idle throughout. */
static int busy_span(const busyidx *B, uint16_t src, int64_t a, int64_t b, int64_t *x, int64_t *y)
{
    size_t lo = B->off[src], hi = B->off[src + 1];
    while (lo < hi) { /* the first interval ending after a */
        size_t mid = (lo + hi) / 2;
        if (B->b[mid] <= a)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == B->off[src + 1] || B->a[lo] >= b)
        return 0;
    *x = B->a[lo] > a ? B->a[lo] : a;
    size_t j = lo;
    while (j + 1 < B->off[src + 1] && B->a[j + 1] < b)
        j++;
    *y = B->b[j] < b ? B->b[j] : b;
    return 1;
}

/* how long source src was idle in [a, b) */
static double idle_in(const busyidx *B, uint16_t src, int64_t a, int64_t b)
{
    if (b <= a)
        return 0;
    return (double)((b - a) - (busy_before(B, src, b) - busy_before(B, src, a)));
}

/* ---- peer groups: ranks that share all-reduce / all-gather collectives ---- */

static int32_t uf_find(int32_t *p, int32_t x)
{
    while (p[x] != x)
        x = p[x] = p[p[x]];
    return x;
}

static void build_groups(dctx *D)
{
    size_t ns = teller_store_num_sources(D->st);
    for (size_t s = 0; s < ns; s++)
        D->group[s] = (int32_t)s;
    const teller_collective *co = teller_store_collectives(D->st);
    const teller_coll_member *mem = teller_store_coll_members(D->st);
    for (size_t c = 0; c < teller_store_num_collectives(D->st); c++) {
        if (co[c].num_members < 2)
            continue;
        const char *nm = teller_store_str(D->st, D->ev->name[mem[co[c].first_member].kernel]);
        if (strstr(nm, "SendRecv") || strstr(nm, "Send") == nm)
            continue;
        uint16_t a = D->ev->source[mem[co[c].first_member].kernel];
        for (uint32_t m = 1; m < co[c].num_members; m++) {
            uint16_t b = D->ev->source[mem[co[c].first_member + m].kernel];
            int32_t ra = uf_find(D->group, a), rb = uf_find(D->group, b);
            if (ra != rb)
                D->group[rb] = ra;
        }
    }
    for (size_t s = 0; s < ns; s++)
        D->group[s] = uf_find(D->group, (int32_t)s);
}

/* ---- detector: kernels against peers ---- */

typedef struct ktot {
    double   t;
    uint32_t count, event;
} ktot;

/* The key of a kernel call's launch configuration on its source: name,
 * grid and block. Calls with the same configuration do the same work in
 * a real trace (the grid follows the problem size), whatever the step. */
static uint64_t config_key(const teller_store *st, const teller_events *ev, uint32_t i)
{
    const teller_args *a = teller_store_event_args(st, i);
    uint32_t k[8] = {ev->source[i], ev->name[i], 0, 0, 0, 0, 0, 0};
    if (a)
        memcpy(k + 2, a->grid, 6 * sizeof *k);
    return kmap_hash_bytes(k, sizeof k);
}

/* Per launch configuration: call durations, and in how many steps it ran. */
typedef struct cfg_acc {
    samples  d;
    uint32_t steps, last_step;
} cfg_acc;

/* One source's kernel time per (step, name), and what that time usually
 * is; built by kernels_tally on the source's own thread, read by every
 * source's kernels_judge. tot, keys, ref and noref are indexed as m, in
 * the order the (step, name) pairs first appear in the source's events. */
typedef struct ktab {
    kmap      m;     /* (step << 28 | name) -> index */
    ktot     *tot;   /* time, calls and first call */
    uint64_t *keys;
    double   *ref;   /* the sum of its calls' usual times */
    uint8_t  *noref; /* some call had no usual time */
    size_t    cap, kcap;
} ktab;

static uint64_t kt_key(uint32_t step, uint32_t name) { return ((uint64_t)step << 28) | (name & 0xFFFFFFF); }

static void ktab_free(ktab *K)
{
    kmap_free(&K->m);
    free(K->tot);
    free(K->keys);
    free(K->ref);
    free(K->noref);
    memset(K, 0, sizeof *K);
}

static int is_compute_kernel(const dctx *D, size_t i)
{
    const teller_events *ev = D->ev;
    return ev->layer[i] == TELLER_LAYER_KERNEL && !(ev->flags[i] & TELLER_F_COMM) && ev->step[i] < D->nsteps;
}

/* Tallies the compute kernels of source s into K. 0, or -1 out of memory. */
static int kernels_tally(const dctx *D, size_t s, ktab *K)
{
    const teller_events *ev = D->ev;
    size_t lo = D->range[s], hi = D->range[s + 1];
    kmap cm = {0};
    cfg_acc *cfg = NULL;
    size_t ccap = 0;
    double *cmed = NULL;
    int rc = -1;
    for (size_t i = lo; i < hi; i++) {
        if (!is_compute_kernel(D, i))
            continue;
        uint64_t key = kt_key(ev->step[i], ev->name[i]);
        ktot *t = kmap_slot(&K->m, key, (void **)&K->tot, &K->cap, sizeof *K->tot);
        uint32_t ix = kmap_get(&K->m, key, 0);
        if (!t || (ix >= K->kcap && TELLER_GROW(K->keys, K->kcap, (size_t)ix + 1)))
            goto done;
        K->keys[ix] = key;
        t->t += (double)ev->dur_ns[i];
        if (!t->count++)
            t->event = (uint32_t)i;
        cfg_acc *ca = kmap_slot(&cm, config_key(D->st, ev, (uint32_t)i), (void **)&cfg, &ccap, sizeof *cfg);
        if (!ca || TELLER_GROW(ca->d.v, ca->d.cap, ca->d.n + 1))
            goto done;
        ca->d.v[ca->d.n++] = (double)ev->dur_ns[i];
        if (!ca->steps || ca->last_step != ev->step[i]) {
            ca->steps++;
            ca->last_step = ev->step[i];
        }
    }
    /* the usual time of a call of each configuration: its median, when it
     * ran in three steps or more and its calls agree (median absolute
     * deviation within a quarter of the median); else 0, no reference: a
     * configuration whose time varies with the batch says nothing */
    if (!(cmed = calloc(cm.n ? cm.n : 1, sizeof *cmed)))
        goto done;
    for (size_t ix = 0; ix < cm.n; ix++) {
        samples *d = &cfg[ix].d;
        if (cfg[ix].steps < 3)
            continue;
        double med = median_of(d->v, d->n);
        for (size_t q = 0; q < d->n; q++)
            d->v[q] = fabs(d->v[q] - med);
        if (median_of(d->v, d->n) <= 0.25 * med)
            cmed[ix] = med;
    }
    /* what each (step, name) usually takes: the sum of its calls' usual times */
    K->ref = calloc(K->m.n ? K->m.n : 1, sizeof *K->ref);
    K->noref = calloc(K->m.n ? K->m.n : 1, 1);
    if (!K->ref || !K->noref)
        goto done;
    for (size_t i = lo; i < hi; i++) {
        if (!is_compute_kernel(D, i))
            continue;
        uint32_t ix = kmap_get(&K->m, kt_key(ev->step[i], ev->name[i]), 0);
        double u = cmed[kmap_get(&cm, config_key(D->st, ev, (uint32_t)i), 0)];
        K->ref[ix] += u;
        K->noref[ix] |= u <= 0;
    }
    rc = 0;
done:
    for (size_t ix = 0; ix < cm.n && cfg; ix++)
        free(cfg[ix].d.v);
    free(cfg);
    free(cmed);
    kmap_free(&cm);
    return rc;
}

/* Source s's kernel names against its peers' (K: every source's tally):
 * the excess of each over the fastest peer in the step, or without peers
 * over its usual time. 0, or -1 out of memory. */
static int kernels_judge(const dctx *D, size_t s, ktab *K, finds *out)
{
    const ktab *me = &K[s];
    for (size_t ix = 0; ix < me->m.n; ix++) {
        uint64_t key = me->keys[ix];
        double best = INFINITY;
        int peers = 0;
        for (size_t p = 0; p < D->nsrc; p++) {
            if (p == s || D->group[p] != D->group[s])
                continue;
            uint32_t pi = kmap_get(&K[p].m, key, 0);
            if (pi == TELLER_NONE)
                continue;
            peers++;
            if (K[p].tot[pi].t < best)
                best = K[p].tot[pi].t;
        }
        if (!peers) {
            /* no tensor-parallel peer: compare with the same rank's calls of
             * the same launch configuration in the run */
            if (me->noref[ix])
                continue;
            best = me->ref[ix];
        }
        const ktot *t = &me->tot[ix];
        if (t->t <= best * 1.15 || t->t - best < 10000)
            continue;
        cand c = {TELLER_FAULT_KERNEL_REGRESSION, teller_store_source_c(D->st, (uint32_t)s)->rank, (uint32_t)(key & 0xFFFFFFF),
                  TELLER_LAYER_KERNEL, t->t - best, t->t / best, t->t, best, t->event, 0, 0, -1};
        if (finds_add(out, (uint32_t)(key >> 28), &c))
            return -1;
    }
    return 0;
}


/* ---- detector: API calls ---- */

static int name_has(const teller_store *st, uint32_t name, const char *s)
{
    return strstr(teller_store_str(st, name), s) != NULL;
}

/* Calls that return only when earlier GPU work is done: synchronizes, and
 * copies (a device-to-host or pageable copy waits for the kernels before
 * it). Their time is judged by how long they went on past that work. */
static int blocks_on_gpu(const teller_store *st, uint32_t name)
{
    return name_has(st, name, "Synchronize") || name_has(st, name, "Memcpy");
}

static int is_alloc_api(const char *nm)
{
    return !strncmp(nm, "cudaMalloc", 10) || !strncmp(nm, "cudaFree", 8) || !strncmp(nm, "cuMemAlloc", 10) ||
           !strncmp(nm, "cuMemFree", 9) || !strncmp(nm, "hipMalloc", 9) || !strncmp(nm, "hipFree", 7);
}

/* 1 when API call e launches GPU work whose name its source has not run
 * before in the trace: CUDA loads a kernel's module at its first launch
 * (lazy loading) and uploads a graph at its first launch, which takes
 * milliseconds to seconds once per process. 0 otherwise, -1 out of memory. */
static int first_launch(const teller_events *ev, uint32_t e, kmap *seen)
{
    for (uint32_t c = ev->first_child[e]; c != TELLER_NONE; c = ev->next_sibling[c]) {
        if (!(ev->flags[c] & TELLER_F_GPU))
            continue;
        uint64_t key = ((uint64_t)ev->source[e] << 32) | ev->name[c];
        if (kmap_get(seen, key, 0) != TELLER_NONE)
            return 0;
        return kmap_get(seen, key, 1) == TELLER_NONE ? -1 : 1;
    }
    return 0;
}

/* GPU operations launched by API call e */
static uint32_t launched(const teller_events *ev, uint32_t e)
{
    uint32_t n = 0;
    for (uint32_t c = ev->first_child[e]; c != TELLER_NONE; c = ev->next_sibling[c])
        n += (ev->flags[c] & TELLER_F_GPU) != 0;
    return n;
}

static int detect_apis(const dctx *D, finds *out)
{
    const teller_events *ev = D->ev;
    teller_store *st = D->st;
    size_t nstr_guess = 0;
    for (size_t i = 0; i < ev->n; i++)
        if (is_api(ev->layer[i]) && ev->name[i] + 1 > nstr_guess)
            nstr_guess = ev->name[i] + 1;
    /* per API name: call durations -> median; how many (step, rank) pairs use it */
    groups durs = {0}, step_durs = {0}; /* per name; per (name, step, source) */
    double *med = NULL, *step_med = NULL;
    size_t *use = calloc(nstr_guess ? nstr_guess : 1, sizeof *use); /* (step, source) pairs calling it */
    kmap pairs = {0}, slot = {0}, seen = {0};
    if (!use)
        goto oom;
    for (size_t i = 0; i < ev->n; i++) {
        if (!is_api(ev->layer[i]))
            continue;
        uint32_t nm = ev->name[i];
        if (groups_add(&durs, nm, (double)ev->dur_ns[i]) ||
            (ev->step[i] < D->nsteps && groups_add(&step_durs, nss_key(nm, ev->step[i], ev->source[i]), (double)ev->dur_ns[i])))
            goto oom;
        if (ev->step[i] < D->nsteps) {
            size_t before = pairs.n;
            if (kmap_get(&pairs, nss_key(nm, ev->step[i], ev->source[i]), 1) == TELLER_NONE)
                goto oom;
            use[nm] += pairs.n > before;
        }
    }
    if (!(med = groups_medians(&durs)) || !(step_med = groups_medians(&step_durs)))
        goto oom;
    /* (step, rank) pairs that exist */
    size_t total_pairs = teller_store_num_steps(st);
    /* per (step, source, name): excess over the usual per-call time */
    typedef struct acc_t {
        double   excess, t, usual;
        uint32_t n, event, step, name, fed;
        uint16_t src;
        int      rare;
    } acc_t;
    acc_t *acc = NULL;
    size_t acap = 0;
    for (size_t i = 0; i < ev->n; i++) {
        if (!is_api(ev->layer[i]) || ev->step[i] >= D->nsteps)
            continue;
        uint32_t nm = ev->name[i];
        /* allocation calls absent from most steps are expected not to happen at all */
        int rare = is_alloc_api(teller_store_str(st, nm)) && use[nm] * 4 < total_pairs;
        if (blocks_on_gpu(st, nm))
            continue; /* the sync detector judges these */
        int first = first_launch(ev, (uint32_t)i, &seen);
        if (first < 0)
            goto oom2;
        if (first)
            continue; /* loading the kernel's module (or uploading a graph) is no latency fault */
        double d = (double)ev->dur_ns[i], usual = med[kmap_get(&durs.keys, nm, 0)];
        double ex = rare ? d : d - 2.0 * usual - 4000.0;
        double idle = idle_in(&D->gpu, ev->source[i], ev->start_ns[i], ev->start_ns[i] + ev->dur_ns[i]);
        if (ex > idle)
            ex = idle; /* the GPU went on with earlier work meanwhile */
        if (ex <= 0)
            continue;
        acc_t *a = kmap_slot(&slot, nss_key(nm, ev->step[i], ev->source[i]), (void **)&acc, &acap, sizeof *acc);
        if (!a)
            goto oom2;
        if (!a->n) {
            a->event = (uint32_t)i;
            a->step = ev->step[i];
            a->name = nm;
            a->src = ev->source[i];
            a->rare = rare;
        }
        a->n++;
        a->excess += ex;
        a->t += d;
        a->usual += rare ? 0 : usual;
        a->fed += launched(ev, (uint32_t)i);
    }
    for (size_t ix = 0; ix < slot.n; ix++) {
        acc_t *a = &acc[ix];
        if (!a->n)
            continue;
        int det = is_alloc_api(teller_store_str(st, a->name)) ? TELLER_FAULT_MALLOC_STORM : TELLER_FAULT_LAUNCH_LATENCY;
        /* slow calls are a fault when the step's calls are slow as a whole
         * (its median call), not when a tail of calls is: every run has
         * launches and allocations that wait on a lock or a page fault;
         * a rare allocation is judged against not happening at all */
        double run_med = med[kmap_get(&durs.keys, a->name, 0)];
        if (!a->rare && step_med[kmap_get(&step_durs.keys, nss_key(a->name, a->step, a->src), 0)] <= 2.0 * run_med + 4000.0)
            continue;
        double usual = a->usual > 0 ? a->usual : 1000.0;
        cand c = {det, teller_store_source_c(st, a->src)->rank, a->name, ev->layer[a->event], a->excess,
                  a->t / usual, a->t, a->usual, a->event, 0, det == TELLER_FAULT_MALLOC_STORM ? a->n : a->fed, -1};
        if (finds_add(out, a->step, &c))
            goto oom2;
    }
    free(acc);
    free(use);
    groups_free(&durs);
    groups_free(&step_durs);
    free(med);
    free(step_med);
    kmap_free(&pairs);
    kmap_free(&slot);
    kmap_free(&seen);
    return 0;
oom2:
    free(acc);
oom:
    free(use);
    groups_free(&durs);
    groups_free(&step_durs);
    free(med);
    free(step_med);
    kmap_free(&pairs);
    kmap_free(&slot);
    kmap_free(&seen);
    return -1;
}



/* ---- merging candidates that are one finding ---- */

/* A merge looks at all candidates of one kind on one rank in one step
 * (idx[0..n) into c) and returns the one to keep, rewritten, or SIZE_MAX
 * to keep them as they are. */
typedef size_t (*merge_fn)(const dctx *D, cand *c, const size_t *idx, size_t n);

static int merge_groups(dctx *D, teller_fault det, merge_fn fn)
{
    size_t *idx = NULL, cap = 0;
    for (uint32_t k = 0; k < D->nsteps; k++) {
        step_acc *s = &D->steps[k];
        for (size_t a = 0; a < s->n; a++) {
            if (s->c[a].det != det)
                continue;
            size_t n = 0;
            for (size_t b = 0; b < s->n; b++) {
                if (s->c[b].det != det || s->c[b].rank != s->c[a].rank)
                    continue;
                if (TELLER_GROW(idx, cap, n + 1)) {
                    free(idx);
                    return -1;
                }
                idx[n++] = b;
            }
            size_t keep = fn(D, s->c, idx, n);
            if (keep == SIZE_MAX)
                continue;
            for (size_t q = 0; q < n; q++)
                if (idx[q] != keep)
                    s->c[idx[q]].det = TELLER_FAULT_NONE;
        }
    }
    free(idx);
    return 0;
}

/* Three or more slowed kernel names on one rank are one throttled GPU,
 * named after the kernel that lost the most. */
static size_t merge_throttle(const dctx *D, cand *c, const size_t *idx, size_t n)
{
    (void)D;
    if (n < 3)
        return SIZE_MAX;
    size_t best = idx[0];
    double sum = 0, ratio_sum = 0;
    for (size_t q = 0; q < n; q++) {
        sum += c[idx[q]].excess;
        ratio_sum += c[idx[q]].sig;
        if (c[idx[q]].excess > c[best].excess)
            best = idx[q];
    }
    c[best].det = TELLER_FAULT_GPU_THROTTLE;
    c[best].excess = sum;
    c[best].sig = ratio_sum / (double)n;
    return best;
}

/* Slow launches of several APIs on one rank are one finding, named after
 * the API whose slowed calls launched the most GPU work (a graph launch
 * feeds hundreds of kernels; in eager steps the most used launch call). */
static size_t merge_launches(const dctx *D, cand *c, const size_t *idx, size_t n)
{
    (void)D;
    size_t best = idx[0];
    double ex = 0, t = 0, u = 0;
    for (size_t q = 0; q < n; q++) {
        const cand *x = &c[idx[q]];
        ex += x->excess;
        t += x->actual;
        u += x->usual;
        if (x->fed > c[best].fed || (x->fed == c[best].fed && x->excess > c[best].excess))
            best = idx[q];
    }
    c[best].excess = ex;
    if (u > 0)
        c[best].sig = t / u;
    return best;
}

/* Allocation calls on one rank: emptying the cache (five or more frees,
 * more than allocations) after an allocation is an OOM retry; otherwise an
 * allocator storm. Named after the allocation call. */
static size_t classify_malloc(const dctx *D, cand *c, const size_t *idx, size_t n)
{
    size_t mi = SIZE_MAX;
    double sum = 0;
    uint32_t frees = 0, mallocs = 0;
    for (size_t q = 0; q < n; q++) {
        const cand *x = &c[idx[q]];
        sum += x->excess;
        if (strstr(teller_store_str(D->st, x->name), "Free")) {
            frees += x->fed;
        } else {
            mallocs += x->fed;
            mi = idx[q];
        }
    }
    if (mi == SIZE_MAX)
        return SIZE_MAX;
    c[mi].excess = sum;
    c[mi].det = frees >= 5 && frees > mallocs ? TELLER_FAULT_OOM : TELLER_FAULT_MALLOC_STORM;
    return mi;
}

/* A host stall on a rank whose step also shows an allocator or OOM
 * finding is that finding's handling, not contention. Engine-wide copy
 * volume (swapping on every rank) is one finding, led by the lowest rank. */
static void absorb(dctx *D)
{
    for (uint32_t k = 0; k < D->nsteps; k++) {
        step_acc *s = &D->steps[k];
        for (size_t a = 0; a < s->n; a++) {
            if (s->c[a].det != TELLER_FAULT_OOM && s->c[a].det != TELLER_FAULT_MALLOC_STORM)
                continue;
            for (size_t b = 0; b < s->n; b++)
                if (s->c[b].det == TELLER_FAULT_CPU_CONTENTION && s->c[b].rank == s->c[a].rank) {
                    s->c[a].excess += s->c[b].excess;
                    s->c[b].det = TELLER_FAULT_NONE;
                }
        }
        size_t lead = SIZE_MAX;
        double sum = 0;
        int n = 0;
        for (size_t a = 0; a < s->n; a++) {
            if (s->c[a].det != TELLER_FAULT_KV_SWAP)
                continue;
            n++;
            if (s->c[a].excess > sum)
                sum = s->c[a].excess;
            if (lead == SIZE_MAX || s->c[a].rank < s->c[lead].rank)
                lead = a;
        }
        if (n < 2)
            continue;
        for (size_t a = 0; a < s->n; a++)
            if (s->c[a].det == TELLER_FAULT_KV_SWAP && a != lead)
                s->c[a].det = TELLER_FAULT_NONE;
        s->c[lead].excess = sum;
    }
}

/* ---- detector: synchronize overhang ---- */

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* A synchronize's overhang: how long it went on after the last GPU work
 * of its rank that had finished by then (0 when it returned as that work
 * finished). Stalls are overhangs far above the run's usual. */
static int detect_sync(const dctx *D, finds *out)
{
    const teller_events *ev = D->ev;
    size_t ns = D->nsrc;
    /* GPU end times per source, sorted */
    size_t *cnt = calloc(ns + 1, sizeof *cnt);
    int64_t *ends = NULL;
    double *over = NULL;
    size_t nover = 0, ocap = 0;
    if (!cnt)
        return -1;
    for (size_t i = 0; i < ev->n; i++) {
        uint8_t L = ev->layer[i];
        if (L == TELLER_LAYER_KERNEL || L == TELLER_LAYER_MEMCPY || L == TELLER_LAYER_MEMSET)
            cnt[ev->source[i] + 1]++;
    }
    for (size_t s = 0; s < ns; s++)
        cnt[s + 1] += cnt[s];
    ends = malloc((cnt[ns] ? cnt[ns] : 1) * sizeof *ends);
    size_t *fill = malloc((ns ? ns : 1) * sizeof *fill);
    if (!ends || !fill) {
        free(cnt);
        free(ends);
        free(fill);
        return -1;
    }
    memcpy(fill, cnt, ns * sizeof *fill);
    for (size_t i = 0; i < ev->n; i++) {
        uint8_t L = ev->layer[i];
        if (L == TELLER_LAYER_KERNEL || L == TELLER_LAYER_MEMCPY || L == TELLER_LAYER_MEMSET)
            ends[fill[ev->source[i]]++] = ev->start_ns[i] + ev->dur_ns[i];
    }
    for (size_t s = 0; s < ns; s++)
        teller_sort(ends + cnt[s], cnt[s + 1] - cnt[s], sizeof *ends, cmp_i64);
    int rc = 0;
    for (int pass = 0; pass < 2 && !rc; pass++) {
        double usual = pass ? median_of(over, nover) : 0;
        for (size_t i = 0; i < ev->n; i++) {
            if (!is_api(ev->layer[i]) || ev->step[i] >= D->nsteps || !blocks_on_gpu(D->st, ev->name[i]))
                continue;
            uint16_t src = ev->source[i];
            int64_t start = ev->start_ns[i], end = start + ev->dur_ns[i];
            /* the last GPU end at or before the sync's end */
            size_t lo = cnt[src], hi = cnt[src + 1];
            while (lo < hi) {
                size_t mid = (lo + hi) / 2;
                if (ends[mid] <= end)
                    lo = mid + 1;
                else
                    hi = mid;
            }
            int64_t last = lo > cnt[src] ? ends[lo - 1] : INT64_MIN;
            double o = (double)(end - (last > start ? last : start));
            if (pass == 0) {
                if (TELLER_GROW(over, ocap, nover + 1)) {
                    rc = -1;
                    break;
                }
                over[nover++] = o;
                continue;
            }
            double ex = o - 3 * usual - 20000;
            if (ex <= 0)
                continue;
            cand cd = {TELLER_FAULT_SYNC_STALL, rank_of(D, (uint32_t)i), ev->name[i], ev->layer[i], ex, o / (usual + 1000),
                       (double)ev->dur_ns[i], (double)ev->dur_ns[i] - ex, (uint32_t)i, 0, 0, -1};
            if (finds_add(out, ev->step[i], &cd)) {
                rc = -1;
                break;
            }
        }
    }
    free(cnt);
    free(ends);
    free(fill);
    free(over);
    return rc;
}

/* ---- detector: copies ---- */

static int size_bucket(int64_t bytes) { return bytes > 0 ? (int)log2((double)bytes) : 0; }

static int detect_copies(const dctx *D, finds *out)
{
    const teller_events *ev = D->ev;
    teller_store *st = D->st;
    groups bm = {0};
    kmap m = {0};
    typedef struct cp {
        double t, bytes, slow, usual;
        uint32_t event, step, name;
        uint16_t src;
    } cp;
    cp *c = NULL;
    size_t ccap = 0;
    /* usual duration of a copy of this name and size */
    for (size_t i = 0; i < ev->n; i++) {
        const teller_args *a = ev->layer[i] == TELLER_LAYER_MEMCPY ? teller_store_event_args(st, (uint32_t)i) : NULL;
        if (!a || a->bytes <= 0)
            continue;
        if (groups_add(&bm, ((uint64_t)ev->name[i] << 8) | (uint64_t)size_bucket(a->bytes), (double)ev->dur_ns[i]))
            goto oom;
    }
    double *usual = groups_medians(&bm);
    if (!usual)
        goto oom;
    for (size_t i = 0; i < ev->n; i++) {
        const teller_args *a = ev->layer[i] == TELLER_LAYER_MEMCPY ? teller_store_event_args(st, (uint32_t)i) : NULL;
        if (!a || a->bytes <= 0 || ev->step[i] >= D->nsteps)
            continue;
        cp *x = kmap_slot(&m, nss_key(ev->name[i], ev->step[i], ev->source[i]), (void **)&c, &ccap, sizeof *c);
        if (!x)
            goto oom2;
        if (!x->t) {
            x->event = (uint32_t)i;
            x->step = ev->step[i];
            x->name = ev->name[i];
            x->src = ev->source[i];
        }
        double u = usual[kmap_get(&bm.keys, ((uint64_t)ev->name[i] << 8) | (uint64_t)size_bucket(a->bytes), 0)];
        x->t += (double)ev->dur_ns[i];
        x->bytes += (double)a->bytes;
        x->usual += u;
        if ((double)ev->dur_ns[i] > 3 * u + 2000)
            x->slow += (double)ev->dur_ns[i] - u;
    }
    /* usual volume per (name, source) over all steps, absent steps counting zero */
    double *vols = malloc((D->nsteps ? D->nsteps : 1) * sizeof *vols);
    if (!vols)
        goto oom2;
    for (size_t ix = 0; ix < m.n; ix++) {
        cp *x = &c[ix];
        size_t nv = 0;
        for (size_t j = 0; j < m.n; j++)
            if (c[j].name == x->name && c[j].src == x->src && nv < D->nsteps)
                vols[nv++] = c[j].bytes;
        while (nv < D->nsteps)
            vols[nv++] = 0;
        double vmed = median_of(vols, nv);
        double per_byte = x->bytes > 0 ? x->usual / x->bytes : 0;
        double extra_vol = x->bytes > 4 * vmed + 1e6 ? (x->bytes - vmed) * per_byte : 0;
        if (x->slow > 10000) {
            cand cd = {TELLER_FAULT_PCIE_DEGRADATION, teller_store_source_c(st, x->src)->rank, x->name, TELLER_LAYER_MEMCPY, x->slow,
                       x->t / (x->usual + 1), x->t, x->usual, x->event, 0, 0, -1};
            if (finds_add(out, x->step, &cd))
                goto oom3;
        } else if (extra_vol > 20000) {
            cand cd = {TELLER_FAULT_KV_SWAP, teller_store_source_c(st, x->src)->rank, x->name, TELLER_LAYER_MEMCPY, extra_vol,
                       x->bytes / (vmed + 1), x->t, x->t - extra_vol, x->event, 0, 0, -1};
            if (finds_add(out, x->step, &cd))
                goto oom3;
        }
    }
    free(vols);
    free(usual);
    free(c);
    groups_free(&bm);
    kmap_free(&m);
    return 0;
oom3:
    free(vols);
oom2:
    free(usual);
oom:
    free(c);
    groups_free(&bm);
    kmap_free(&m);
    return -1;
}

/* ---- detector: host gaps on the stepping thread ---- */

static int detect_gaps(const dctx *D, finds *out)
{
    const teller_events *ev = D->ev;
    size_t ns = teller_store_num_sources(D->st);
    /* the stepping thread of each source: the thread of its step markers */
    int32_t *tid = malloc((ns ? ns : 1) * sizeof *tid);
    busyidx others = {0}; /* the source's other threads at work */
    groups gaps = {0}; /* per source: every gap, for its median */
    /* the longest gap of each (step, source): a gap every step has is normal */
    double *stepmax = calloc((size_t)D->nsteps * (ns ? ns : 1) + 1, sizeof *stepmax);
    double *usual_max = calloc(ns ? ns : 1, sizeof *usual_max);
    size_t *nmax = calloc(ns ? ns : 1, sizeof *nmax); /* steps with a gap, per source */
    if (!tid || !stepmax || !usual_max || !nmax)
        goto oom;
    for (size_t s = 0; s < ns; s++)
        tid[s] = INT32_MIN;
    const teller_step *steps = teller_store_steps(D->st);
    for (size_t k = 0; k < teller_store_num_steps(D->st); k++) {
        uint32_t mk = steps[k].marker;
        if (mk != TELLER_NONE)
            tid[ev->source[mk]] = ev->tid[mk];
    }
    if (busy_build(&others, D, tid))
        goto oom;
    /* events are sorted by (source, pid, tid, start): a sweep sees each
     * thread in time order */
    for (int pass = 0; pass < 2; pass++) {
        double *usual = NULL;
        if (pass) {
            usual = malloc((ns ? ns : 1) * sizeof *usual);
            if (!usual)
                goto oom;
            double *med = groups_medians(&gaps), *col = malloc((D->nsteps ? D->nsteps : 1) * sizeof *col);
            if (!med || !col) {
                free(med);
                free(col);
                free(usual);
                goto oom;
            }
            for (size_t s = 0; s < ns; s++) {
                uint32_t ix = kmap_get(&gaps.keys, s, 0);
                usual[s] = ix == TELLER_NONE ? 0 : med[ix];
                size_t nc = 0;
                for (uint32_t k = 0; k < D->nsteps; k++)
                    if (stepmax[(size_t)k * ns + s] > 0)
                        col[nc++] = stepmax[(size_t)k * ns + s];
                /* the yardstick must not be the step's own longest gap (the
                 * stall itself): with three steps or more the median, with two
                 * their sum (the other step's is taken out below), with one none */
                nmax[s] = nc;
                usual_max[s] = nc >= 3 ? median_of(col, nc) : nc == 2 ? col[0] + col[1] : 0;
            }
            free(med);
            free(col);
        }
        int64_t prev_end = 0;
        uint32_t prev_step = TELLER_NONE;
        uint16_t prev_src = UINT16_MAX;
        double best_gap = 0, sum_ex = 0;
        uint32_t best_ev = TELLER_NONE;
        for (size_t i = 0; i <= ev->n; i++) {
            int boundary = i == ev->n;
            if (!boundary) {
                uint16_t s = ev->source[i];
                if (ev->tid[i] != tid[s] || (ev->flags[i] & TELLER_F_GPU) || !is_host_op(ev->layer[i]))
                    continue;
                uint32_t p = ev->parent[i];
                if (p != TELLER_NONE && is_host_op(ev->layer[p]))
                    continue; /* not outermost */
                boundary = s != prev_src || ev->step[i] != prev_step;
            }
            if (boundary) {
                if (pass && best_ev != TELLER_NONE && sum_ex > 0) {
                    uint16_t s = prev_src;
                    cand c = {TELLER_FAULT_CPU_CONTENTION, teller_store_source_c(D->st, s)->rank, ev->name[best_ev],
                              ev->layer[best_ev], sum_ex, best_gap / (usual[s] + 1000), best_gap, usual[s], best_ev, 0, 0, -1};
                    if (finds_add(out, prev_step, &c)) {
                        free(usual);
                        goto oom;
                    }
                }
                best_gap = sum_ex = 0;
                best_ev = TELLER_NONE;
                if (i == ev->n)
                    break;
                prev_src = ev->source[i];
                prev_step = ev->step[i];
                /* the first op's gap counts from the step's start on this rank */
                int64_t ms = prev_step < D->nsteps ? D->mstart[(size_t)prev_step * D->nsrc + prev_src] : INT64_MIN;
                if (ms == INT64_MIN || ms > ev->start_ns[i]) {
                    prev_end = ev->start_ns[i] + ev->dur_ns[i];
                    continue;
                }
                prev_end = ms;
            }
            double g = (double)(ev->start_ns[i] - prev_end);
            int64_t prev_gap_end = prev_end, e = ev->start_ns[i] + ev->dur_ns[i];
            if (e > prev_end)
                prev_end = e;
            if (prev_step >= D->nsteps || g <= 0)
                continue;
            uint16_t s = ev->source[i];
            if (!pass) {
                if (groups_add(&gaps, s, g))
                    goto oom;
                double *mx = &stepmax[(size_t)prev_step * ns + s];
                if (g > *mx)
                    *mx = g;
                continue;
            }
            double thr = 40 * usual[s] + 100000,
                   um = nmax[s] == 2 ? usual_max[s] - stepmax[(size_t)prev_step * ns + s] : usual_max[s];
            if (thr < 3 * um)
                thr = 3 * um;
            /* with fewer than three steps the thread's usual stalls are
             * unknown: only a gap longer than a scheduler time slice
             * (milliseconds) says the thread was descheduled */
            if (D->nsteps < 3 && thr < 1e6)
                thr = 1e6;
            if (g > thr) {
                /* what the gap cost: the time the GPU idled in it, outside the
                 * stretch in which another thread of the process (autograd's
                 * engine, a data loader) was working: a thread waiting on
                 * another's work is not stalled */
                int64_t x, y;
                double idle = busy_span(&others, s, prev_gap_end, ev->start_ns[i], &x, &y)
                                  ? idle_in(&D->gpu, s, prev_gap_end, x) + idle_in(&D->gpu, s, y, ev->start_ns[i])
                                  : idle_in(&D->gpu, s, prev_gap_end, ev->start_ns[i]);
                sum_ex += g - usual[s] < idle ? g - usual[s] : idle;
                if (g > best_gap) {
                    best_gap = g;
                    best_ev = (uint32_t)i;
                }
            }
        }
        free(usual);
    }
    groups_free(&gaps);
    busy_free(&others);
    free(tid);
    free(stepmax);
    free(usual_max);
    free(nmax);
    return 0;
oom:
    groups_free(&gaps);
    busy_free(&others);
    free(tid);
    free(stepmax);
    free(usual_max);
    free(nmax);
    return -1;
}

/* ---- running the detectors ---- */

/* The detectors on the pool, in two rounds: the first needs only the
 * store (when each GPU was busy, copies, syncs, each source's kernel
 * tally), the second the first's results (API calls and host gaps cost
 * only the GPU's idle time; each source's kernels are judged against its
 * peers' tallies). Each task writes only its own slots of R. */
typedef struct drun {
    dctx  *D;
    ktab  *kt;   /* per source */
    finds *kf;   /* per source: kernel findings */
    finds  apis, sync, copies, gaps;
    int   *rc;   /* per task of a round */
} drun;

enum { ROUND1_TASKS = 3, ROUND2_TASKS = 2 }; /* tasks besides the per-source ones */

static void round1(void *ctx, size_t i)
{
    drun *R = ctx;
    switch (i) {
    case 0: R->rc[i] = busy_build(&R->D->gpu, R->D, NULL); break;
    case 1: R->rc[i] = detect_copies(R->D, &R->copies); break;
    case 2: R->rc[i] = detect_sync(R->D, &R->sync); break;
    default: R->rc[i] = kernels_tally(R->D, i - ROUND1_TASKS, &R->kt[i - ROUND1_TASKS]);
    }
}

static void round2(void *ctx, size_t i)
{
    drun *R = ctx;
    switch (i) {
    case 0: R->rc[i] = detect_apis(R->D, &R->apis); break;
    case 1: R->rc[i] = detect_gaps(R->D, &R->gaps); break;
    default: R->rc[i] = kernels_judge(R->D, i - ROUND2_TASKS, R->kt, &R->kf[i - ROUND2_TASKS]);
    }
}

/* Runs every detector but the collectives' on jobs threads and adds what
 * they found to the steps, in the order one thread running them one after
 * the other would have (kernels source by source, API calls, syncs,
 * copies, host gaps). 0, or -1 out of memory. */
static int run_detectors(dctx *D, int jobs)
{
    size_t ns = D->nsrc;
    drun R = {D, calloc(ns + 1, sizeof *R.kt), calloc(ns + 1, sizeof *R.kf), {0}, {0}, {0}, {0},
              calloc(ns + ROUND1_TASKS, sizeof *R.rc)};
    int rc = -1;
    if (!R.kt || !R.kf || !R.rc)
        goto done;
    teller_parallel_for(jobs, ns + ROUND1_TASKS, round1, &R);
    for (size_t i = 0; i < ns + ROUND1_TASKS; i++)
        if (R.rc[i])
            goto done;
    teller_parallel_for(jobs, ns + ROUND2_TASKS, round2, &R);
    for (size_t i = 0; i < ns + ROUND2_TASKS; i++)
        if (R.rc[i])
            goto done;
    rc = 0;
    for (size_t s = 0; s < ns && !rc; s++)
        rc = add_found(D, &R.kf[s]);
    if (!rc)
        rc = add_found(D, &R.apis) || add_found(D, &R.sync) || add_found(D, &R.copies) || add_found(D, &R.gaps) ? -1 : 0;
done:
    for (size_t s = 0; s < ns && R.kt && R.kf; s++) {
        ktab_free(&R.kt[s]);
        free(R.kf[s].v);
    }
    free(R.kt);
    free(R.kf);
    free(R.apis.v);
    free(R.sync.v);
    free(R.copies.v);
    free(R.gaps.v);
    free(R.rc);
    return rc;
}

/* ---- detector: collectives (links, stalled sends, hangs) ---- */

typedef struct inst {
    uint32_t c;        /* collective index */
    uint32_t step;
    double   transfer; /* shortest member duration */
    double   bytes;
    int      p2p;
    uint32_t opname;   /* normalised op, interned */
} inst;

static int detect_comm(dctx *D)
{
    teller_store *st = D->st;
    const teller_events *ev = D->ev;
    const teller_collective *co = teller_store_collectives(st);
    const teller_coll_member *mem = teller_store_coll_members(st);
    size_t nc = teller_store_num_collectives(st);
    inst *in = malloc((nc ? nc : 1) * sizeof *in);
    if (!in)
        return -1;
    /* expected members per key: the most seen */
    kmap km = {0};
    groups bm = {0}; /* per op: transfer per element */
    uint32_t *maxm = NULL;
    size_t mcap = 0;
    for (size_t c = 0; c < nc; c++) {
        uint32_t ix = kmap_get(&km, co[c].key, 1);
        if (ix == TELLER_NONE) {
            free(in);
            return -1;
        }
        if (ix >= mcap) {
            size_t old = mcap;
            if (TELLER_GROW(maxm, mcap, (size_t)ix + 1)) {
                free(in);
                kmap_free(&km);
                return -1;
            }
            memset(maxm + old, 0, (mcap - old) * sizeof *maxm);
        }
        if (co[c].num_members > maxm[ix])
            maxm[ix] = co[c].num_members;
    }
    char buf[256];
    for (size_t c = 0; c < nc; c++) {
        inst *x = &in[c];
        x->c = (uint32_t)c;
        uint32_t k0 = mem[co[c].first_member].kernel;
        x->step = ev->step[k0];
        x->transfer = INFINITY;
        for (uint32_t m = 0; m < co[c].num_members; m++) {
            uint32_t k = mem[co[c].first_member + m].kernel;
            if ((double)ev->dur_ns[k] < x->transfer)
                x->transfer = (double)ev->dur_ns[k];
            if (ev->step[k] < x->step)
                x->step = ev->step[k];
        }
        const teller_comm *cm = teller_store_event_comm(st, k0);
        x->bytes = cm && cm->in_nelems > 0 ? (double)cm->in_nelems : -1;
        teller_name_normalize(teller_store_str(st, ev->name[k0]), buf, sizeof buf);
        x->p2p = strstr(buf, "SendRecv") != NULL || (cm && (!strcmp(teller_store_str(st, cm->collective), "send") ||
                                                            !strcmp(teller_store_str(st, cm->collective), "recv")));
        x->opname = teller_store_intern(st, buf, strlen(buf));
        if (x->opname == TELLER_NONE)
            goto oom;
    }
    /* usual transfer per op: a latency plus a time per element,
     * usual = r * (elements + E0) with r the median of transfer / (elements + E0);
     * kernels without sizes use the op's median transfer */
    const double E0 = 131072.0;
    for (size_t c = 0; c < nc; c++) {
        inst *x = &in[c];
        if (groups_add(&bm, ((uint64_t)x->opname << 1) | (x->bytes > 0),
                       x->bytes > 0 ? x->transfer / (x->bytes + E0) : x->transfer))
            goto oom;
    }
    double *usual = groups_medians(&bm);
    if (!usual)
        goto oom;
    for (size_t c = 0; c < nc; c++) {
        inst *x = &in[c];
        if (x->step >= D->nsteps)
            continue;
        uint32_t ix = kmap_get(&bm.keys, ((uint64_t)x->opname << 1) | (x->bytes > 0), 0);
        double u = ix == TELLER_NONE ? x->transfer : x->bytes > 0 ? usual[ix] * (x->bytes + E0) : usual[ix];
        const teller_collective *cc = &co[c];
        uint32_t exp_members = maxm[kmap_get(&km, cc->key, 0)];
        uint32_t k0 = mem[cc->first_member].kernel;
        if (cc->num_members < exp_members || x->transfer > 5e9) {
            /* hang: who is missing? the ranks of the key's other instances */
            int32_t missing = -1;
            for (size_t c2 = 0; c2 < nc && missing < 0; c2++) {
                if (co[c2].key != cc->key || co[c2].num_members != exp_members)
                    continue;
                for (uint32_t m = 0; m < co[c2].num_members && missing < 0; m++) {
                    int32_t r = mem[co[c2].first_member + m].rank;
                    int present = 0;
                    for (uint32_t q = 0; q < cc->num_members; q++)
                        present |= mem[cc->first_member + q].rank == r;
                    if (!present)
                        missing = r;
                }
            }
            if (missing >= 0 || x->transfer > 5e9) {
                /* the root is the rank that never launched the collective: it has
                 * no event for it (-1 when that rank's trace is not loaded); the
                 * ranks that waited are the evidence (peer: one of them) */
                cand cd = {TELLER_FAULT_NCCL_HANG, missing, ev->name[k0], TELLER_LAYER_KERNEL, x->transfer,
                           x->transfer / (u + 1), 0, u, TELLER_NONE, 0, cc->num_members, mem[cc->first_member].rank};
                if (add_cand(D, x->step, &cd))
                    goto oom2;
                continue;
            }
        }
        /* one member alone cannot tell its transfer from its wait for peers */
        double ex = x->transfer - 2.5 * u - 50000;
        if (ex <= 0 || cc->num_members < 2)
            continue;
        /* a slow transfer: on which side? the receiving member, or the one on a higher node */
        uint32_t pick = cc->first_member;
        for (uint32_t m = 0; m < cc->num_members; m++) {
            uint32_t e = mem[cc->first_member + m].kernel, pe = mem[pick].kernel;
            const teller_comm *cm = teller_store_event_comm(st, e);
            int is_recv = cm && !strcmp(teller_store_str(st, cm->collective), "recv");
            int is_send = cm && !strcmp(teller_store_str(st, cm->collective), "send");
            if (x->p2p) {
                /* the sender is the root of a stalled send; kept as the first pick */
                if (is_send) {
                    pick = cc->first_member + m;
                    break;
                }
                (void)is_recv;
            } else if (teller_store_event_node(st, e) > teller_store_event_node(st, pe)) {
                pick = cc->first_member + m;
            }
        }
        uint32_t e = mem[pick].kernel;
        int32_t peer = -1, peer_node = INT32_MAX; /* the other end: the member on the lowest node */
        for (uint32_t m = 0; m < cc->num_members; m++) {
            uint32_t q = cc->first_member + m;
            int32_t nd = teller_store_event_node(st, mem[q].kernel);
            if (q != pick && nd < peer_node) {
                peer = mem[q].rank;
                peer_node = nd;
            }
        }
        cand cd = {x->p2p ? TELLER_FAULT_PP_SEND_DELAY : TELLER_FAULT_SLOW_LINK, mem[pick].rank, ev->name[e], TELLER_LAYER_KERNEL, ex,
                   x->transfer / (u + 1), x->transfer, u, e, 0, 0, peer};
        if (add_cand(D, x->step, &cd))
            goto oom2;
    }
    free(usual);
    groups_free(&bm);
    kmap_free(&km);
    free(maxm);
    free(in);
    return 0;
oom2:
    free(usual);
oom:
    groups_free(&bm);
    kmap_free(&km);
    free(maxm);
    free(in);
    return -1;
}

/* Several slow pipeline transfers in one step, or slow cross-node
 * collectives, are one degraded link; the root is on the node they share,
 * the receiving (higher) node when they share more than one. */
static void merge_links(dctx *D)
{
    for (uint32_t k = 0; k < D->nsteps; k++) {
        step_acc *s = &D->steps[k];
        int n = 0, cross = 0;
        size_t best = 0;
        double sum = 0;
        for (size_t a = 0; a < s->n; a++) {
            if (s->c[a].det != TELLER_FAULT_PP_SEND_DELAY && s->c[a].det != TELLER_FAULT_SLOW_LINK)
                continue;
            n++;
            sum += s->c[a].excess;
            cross |= s->c[a].det == TELLER_FAULT_SLOW_LINK;
            if (!n || s->c[a].excess >= s->c[best].excess || (s->c[best].det != TELLER_FAULT_PP_SEND_DELAY && s->c[best].det != TELLER_FAULT_SLOW_LINK))
                best = a;
        }
        if (n == 0 || (n == 1 && !cross))
            continue;
        /* one stalled send among healthy ones stays a send stall */
        cand t = s->c[best];
        int32_t hi = -1;
        for (size_t a = 0; a < s->n; a++) {
            if (s->c[a].det != TELLER_FAULT_PP_SEND_DELAY && s->c[a].det != TELLER_FAULT_SLOW_LINK)
                continue;
            /* both ends of the transfer count: the root is on the receiving (higher) node */
            for (size_t q = 0; q < teller_store_num_sources(D->st); q++) {
                const teller_source *so = teller_store_source_c(D->st, (uint32_t)q);
                if ((so->rank == s->c[a].rank || so->rank == s->c[a].peer) && so->node > hi)
                    hi = so->node;
            }
            s->c[a].det = TELLER_FAULT_NONE;
        }
        /* the lowest rank of that node */
        int32_t root = INT32_MAX;
        for (size_t q = 0; q < teller_store_num_sources(D->st); q++) {
            const teller_source *so = teller_store_source_c(D->st, (uint32_t)q);
            if (so->node == hi && so->rank < root)
                root = so->rank;
        }
        t.det = TELLER_FAULT_SLOW_LINK;
        t.excess = sum;
        t.rank = root == INT32_MAX ? t.rank : root;
        s->c[best] = t;
    }
}

/* ---- logs ---- */

typedef struct logctx {
    dctx       *D;
    int32_t     node;
    const char *path;
    int         aligned, total;
} logctx;

static int has_sub(const char *m, size_t n, const char *pat);

static int is_preempt_line(const char *m, size_t n)
{
    static const char *const pats[] = {"is preempted by PreemptionMode", "Retract requests", "retracted"};
    for (size_t i = 0; i < 3; i++) {
        size_t l = strlen(pats[i]);
        for (size_t j = 0; j + l <= n; j++)
            if (!memcmp(m + j, pats[i], l))
                return 1;
    }
    return 0;
}

static int has_sub(const char *m, size_t n, const char *pat)
{
    size_t l = strlen(pat);
    for (size_t j = 0; j + l <= n; j++)
        if (!memcmp(m + j, pat, l))
            return 1;
    return 0;
}

static void add_evidence(teller_diag_step *s, const logctx *L, const teller_log_record *rec, int32_t rank,
                         int64_t t)
{
    if (s->pred.nev >= TELLER_MAX_EVIDENCE)
        return;
    teller_evidence *e = &s->pred.ev[s->pred.nev++];
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

/* Preemption lines often have whole-second times (the aligner puts them at
 * the middle of their second): the step they mean is the one that did the
 * most GPU work (recomputing preempted requests is a large prefill) among
 * the steps starting within that second, not yet claimed by another line.
 * With an exact time it is the first unclaimed step starting from then. */
static uint32_t step_in_second(dctx *D, int64_t t, int whole_second)
{
    if (!whole_second) {
        /* an exact time (e.g. captured by teller run): the scheduler logs its
         * decision just before the step it shapes starts */
        for (uint32_t k = 0; k < D->nsteps; k++)
            if (!D->steps[k].claimed && D->steps[k].start >= (double)t - 1e6 && D->steps[k].start < (double)t + 50e6)
                return k;
        return TELLER_NONE;
    }
    uint32_t best = TELLER_NONE;
    double bestw = -1, lo = whole_second ? (double)t - 0.55e9 : (double)t - 50e6,
           hi = whole_second ? (double)t + 0.55e9 : (double)t + 50e6;
    for (uint32_t k = 0; k < D->nsteps; k++) {
        double st0 = D->steps[k].start;
        if (st0 < lo || st0 >= hi || D->steps[k].claimed)
            continue;
        if (D->steps[k].work > bestw) {
            bestw = D->steps[k].work;
            best = k;
        }
    }
    return best;
}

/* The unclaimed step near time t (within its second when whole) that
 * already holds a trace finding of kind det. */
static uint32_t step_with(dctx *D, int64_t t, int whole_second, teller_fault det)
{
    double lo = whole_second ? (double)t - 0.55e9 : (double)t - 50e6,
           hi = whole_second ? (double)t + 0.55e9 : (double)t + 50e6;
    for (uint32_t k = 0; k < D->nsteps; k++) {
        double st0 = D->steps[k].start;
        if (st0 < lo || st0 >= hi || D->steps[k].claimed)
            continue;
        for (size_t a = 0; a < D->steps[k].n; a++)
            if (D->steps[k].c[a].det == det)
                return k;
    }
    return TELLER_NONE;
}

static int on_log(void *ctx, const teller_log_record *rec)
{
    logctx *L = ctx;
    dctx *D = L->D;
    L->total++;
    const char *m = rec->msg.p;
    size_t n = rec->msg.n;
    /* SGLang lines carry no level: what matters is what they say */
    int notable = rec->level >= TELLER_LOGL_WARNING || rec->family == TELLER_LOG_TORCH || is_preempt_line(m, n) ||
                  has_sub(m, n, "OutOfMemory") || has_sub(m, n, "out of memory");
    teller_log_align al;
    teller_log_align_record(D->st, L->node, rec, &al);
    if (al.step == TELLER_NONE && al.time_ns == INT64_MIN)
        return 0;
    /* does the record fall within the traced time at all (give or take the
     * second that whole-second times may be off by)? */
    if (al.time_ns != INT64_MIN && (double)al.time_ns >= D->t_first - 2e9 && (double)al.time_ns <= D->t_last + 2e9)
        L->aligned++;
    if (!notable)
        return 0;
    uint32_t step = al.step;
    teller_fault det = TELLER_FAULT_NONE; /* NONE: an error line, evidence for whatever the step holds */
    if (is_preempt_line(m, n)) {
        /* a step whose trace shows swapping owns the line; otherwise the
         * preemption recomputed requests: the biggest step of the second */
        int whole = (rec->flags & TELLER_LOGF_NO_SUBSEC) != 0;
        step = has_sub(m, n, "RECOMPUTE") ? TELLER_NONE : step_with(D, al.time_ns, whole, TELLER_FAULT_KV_SWAP);
        det = TELLER_FAULT_KV_SWAP;
        if (step == TELLER_NONE && !has_sub(m, n, "SWAP")) {
            step = step_in_second(D, al.time_ns, whole);
            det = TELLER_FAULT_PREEMPTION;
        }
        if (step != TELLER_NONE)
            D->steps[step].claimed = 1;
    } else if (has_sub(m, n, "OutOfMemory") || has_sub(m, n, "out of memory")) {
        det = TELLER_FAULT_OOM;
    } else if (has_sub(m, n, "Watchdog caught") || has_sub(m, n, "Timeout at NCCL work")) {
        det = TELLER_FAULT_NCCL_HANG;
    } else if (rec->level < TELLER_LOGL_ERROR) {
        return 0;
    }
    if (step == TELLER_NONE || step >= D->nsteps)
        return 0;
    teller_diag_step *ds = &D->out->steps[step];
    add_evidence(ds, L, rec, al.rank, al.time_ns);
    if (det == TELLER_FAULT_PREEMPTION || det == TELLER_FAULT_KV_SWAP) {
        /* the scheduler's decision: the step as a whole, led by the first rank */
        const teller_step *s = teller_store_steps(D->st);
        uint32_t marker = TELLER_NONE;
        int32_t r0 = INT32_MAX;
        for (size_t i = 0; i < teller_store_num_steps(D->st); i++)
            if (s[i].step == step && s[i].rank < r0 && s[i].marker != TELLER_NONE) {
                r0 = s[i].rank;
                marker = s[i].marker;
            }
        if (marker != TELLER_NONE && det == TELLER_FAULT_PREEMPTION) {
            cand c = {TELLER_FAULT_PREEMPTION, r0, D->ev->name[marker], TELLER_LAYER_ENGINE, 0, 10, 0, 0, marker, 0, 0, -1};
            c.excess = 0;
            if (add_cand(D, step, &c))
                return -TELLER_ERR_NOMEM;
        }
    }
    return 0;
}

static void add_note(dctx *D, const char *text);

/* Reads and aligns every log of o; a log that cannot be read (missing, a
 * directory, a trace) fails the diagnosis, naming the file. */
static teller_status read_logs(dctx *D, const teller_diag_opts *o, teller_error *err)
{
    for (size_t i = 0; i < o->nlogs; i++) {
        const char *path = o->logs[i];
        teller_log_opts lo = teller_log_defaults();
        const teller_step *s = teller_store_steps(D->st);
        lo.ref_ns = teller_store_num_steps(D->st) ? s[0].start_ns : 0;
        logctx L = {D, teller_log_node_from_path(path), path, 0, 0};
        if (L.node < 0)
            L.node = 0;
        teller_status st = teller_log_read_file(path, &lo, on_log, &L, NULL, err);
        if (st != TELLER_OK)
            return st;
        if (L.total && !L.aligned) {
            char note[600];
            snprintf(note, sizeof note, "%s: none of its %d records falls within 2 s of the traced steps (a log from "
                     "another run, or clocks far apart): nothing in it was used", path, L.total);
            add_note(D, note);
        }
    }
    return TELLER_OK;
}

/* ---- scoring and results ---- */

static void add_note(dctx *D, const char *text)
{
    teller_diagnosis *d = D->out;
    char **nn = realloc(d->notes, (d->nnotes + 1) * sizeof *nn);
    char *t = nn ? strdup(text) : NULL;
    if (nn)
        d->notes = nn;
    if (!t) {
        D->nomem = 1;
        return;
    }
    d->notes[d->nnotes++] = t;
}

/* A finding's score is what it cost the step: its excess against the
 * step's duration, scaled so that a cost of TELLER_FAULT_MATERIAL_SHARE of
 * the step scores 0.5 (the default threshold), damped below
 * TELLER_FAULT_MATERIAL_NS, and only when the operator was clearly unusual
 * (25 % over its usual time or more counts in full). How unusual alone never
 * flags a step: a call 3x its median that cost 4 us of a 20 ms step is not
 * a fault. Hangs and preemptions are facts the logs or the collectives
 * state; OOM and swapping confirmed by a log line count at least 0.95. */
static double cand_score(const cand *c, double step_dur, int has_log)
{
    if (c->det == TELLER_FAULT_NCCL_HANG || c->det == TELLER_FAULT_PREEMPTION)
        return 0.99;
    double rel = step_dur > 0 ? c->excess / step_dur : 0;
    double unusual = c->sig > 1 ? log(c->sig) / log(1.25) : 0;
    double s = (1.0 - exp(-log(2.0) * rel / TELLER_FAULT_MATERIAL_SHARE)) * (unusual < 1 ? unusual : 1);
    if (c->excess < TELLER_FAULT_MATERIAL_NS)
        s *= c->excess > 0 ? c->excess / TELLER_FAULT_MATERIAL_NS : 0;
    if (has_log && (c->det == TELLER_FAULT_OOM || c->det == TELLER_FAULT_KV_SWAP))
        s = s < 0.95 ? 0.95 : s;
    return s;
}

/* A cost that most steps pay is the run's normal: for each (kind, rank,
 * operator), the median excess over all steps (a step without the finding
 * counting zero) is taken off every step's finding; with two steps, the
 * lower of the two. A single step has nothing to tell the usual from the
 * fault. Findings stated
 * by logs or by a collective that never completed are facts, not costs. */
static int subtract_run_normal(dctx *D)
{
    if (D->nsteps < 2)
        return 0;
    groups g = {0};
    for (uint32_t k = 0; k < D->nsteps; k++)
        for (size_t a = 0; a < D->steps[k].n; a++) {
            const cand *c = &D->steps[k].c[a];
            if (c->det != TELLER_FAULT_NONE && !teller_fault_def_of(c->det)->logged &&
                groups_add(&g, ((uint64_t)c->det << 52) | ((uint64_t)(uint16_t)c->rank << 32) | c->name, c->excess)) {
                groups_free(&g);
                return -1;
            }
        }
    double *base = calloc(g.keys.n ? g.keys.n : 1, sizeof *base);
    if (!base) {
        groups_free(&g);
        return -1;
    }
    for (size_t ix = 0; ix < g.keys.n; ix++) {
        samples *sm = &g.s[ix];
        teller_sort(sm->v, sm->n, sizeof *sm->v, cmp_dbl);
        /* the median of nsteps values: nsteps - n zeros, then the sorted samples */
        size_t zeros = D->nsteps > sm->n ? D->nsteps - sm->n : 0, p0 = (D->nsteps - 1) / 2, p1 = D->nsteps / 2;
        double v0 = p0 < zeros ? 0 : sm->v[p0 - zeros], v1 = p1 < zeros ? 0 : sm->v[p1 - zeros];
        base[ix] = D->nsteps == 2 ? v0 : 0.5 * (v0 + v1);
    }
    for (uint32_t k = 0; k < D->nsteps; k++)
        for (size_t a = 0; a < D->steps[k].n; a++) {
            cand *c = &D->steps[k].c[a];
            if (c->det == TELLER_FAULT_NONE || teller_fault_def_of(c->det)->logged)
                continue;
            uint32_t ix = kmap_get(&g.keys, ((uint64_t)c->det << 52) | ((uint64_t)(uint16_t)c->rank << 32) | c->name, 0);
            c->excess = ix == TELLER_NONE || c->excess <= base[ix] ? 0 : c->excess - base[ix];
        }
    free(base);
    groups_free(&g);
    return 0;
}

static int cand_cmp(const void *a, const void *b)
{
    const cand *x = a, *y = b;
    if (x->score != y->score)
        return x->score > y->score ? -1 : 1;
    if (x->excess != y->excess)
        return x->excess > y->excess ? -1 : 1;
    return x->rank < y->rank ? -1 : x->rank > y->rank;
}

static void fmt_ms(char *b, size_t n, double ns)
{
    if (ns >= 1e9)
        snprintf(b, n, "%.3f s", ns / 1e9);
    else if (ns >= 1e6)
        snprintf(b, n, "%.3f ms", ns / 1e6);
    else
        snprintf(b, n, "%.1f us", ns / 1e3);
}

/* the source of a loaded rank, -1 when no loaded source has it */
static int32_t source_of_rank(const teller_store *st, int32_t rank)
{
    for (size_t q = 0; q < teller_store_num_sources(st); q++)
        if (teller_store_source_c(st, (uint32_t)q)->rank == rank)
            return (int32_t)q;
    return -1;
}

/* the node of a loaded rank, -1 when no loaded source has it */
static int32_t node_of_rank(const teller_store *st, int32_t rank)
{
    int32_t q = source_of_rank(st, rank);
    return q < 0 ? -1 : teller_store_source_c(st, (uint32_t)q)->node;
}

static void explain(dctx *D, teller_diag_step *s, const cand *c)
{
    char what[256], dur[32], ex[32], act[32], usual[32];
    int32_t node = node_of_rank(D->st, c->rank);
    teller_fault_what(c->det, teller_fault_def_of(c->det)->by_node ? node : c->rank, what, sizeof what);
    fmt_ms(dur, sizeof dur, (double)s->dur_ns);
    fmt_ms(ex, sizeof ex, (double)s->excess_ns);
    fmt_ms(act, sizeof act, c->actual);
    fmt_ms(usual, sizeof usual, c->usual);
    int n;
    if (c->det == TELLER_FAULT_NCCL_HANG) {
        /* the root never ran the operator: say who waited, not what it "took" */
        if (c->rank < 0)
            n = snprintf(s->pred.explanation, sizeof s->pred.explanation,
                         "Step %u took %s, %s longer than expected: a rank whose trace is not loaded never launched "
                         "its collective, so the %u loaded member(s) (rank %d among them) blocked in %s until the "
                         "NCCL watchdog fired (nccl_hang).",
                         s->pred.step, dur, ex, c->fed, c->peer, teller_store_str(D->st, c->name));
        else
            n = snprintf(s->pred.explanation, sizeof s->pred.explanation,
                         "Step %u took %s, %s longer than expected: %s (nccl_hang). The root operator is %s on rank %d "
                         "(node %d), which it never launched; rank %d and the other %u member(s) waited %s for it.",
                         s->pred.step, dur, ex, what, teller_store_str(D->st, c->name), c->rank, node, c->peer,
                         c->fed ? c->fed - 1 : 0, ex);
    } else {
        n = snprintf(s->pred.explanation, sizeof s->pred.explanation,
                     "Step %u took %s, %s longer than expected: %s (%s). The root operator is %s on rank %d (node %d), "
                     "which took %s against a usual %s.",
                     s->pred.step, dur, ex, what, teller_fault_name(c->det), teller_store_str(D->st, c->name), c->rank, node,
                     act, usual);
    }
    if (s->pred.nev > 0 && n > 0 && (size_t)n < sizeof s->pred.explanation - 40)
        snprintf(s->pred.explanation + n, sizeof s->pred.explanation - (size_t)n, " Log: \"%.300s\"", s->pred.ev[0].text);
}

/* The horizontal view of every step: at each collective of the step with
 * two or more members, who arrived last (started its kernel last) and how
 * long the others waited for it. Returns -1 when out of memory. */
static int late_tables(dctx *D)
{
    const teller_events *ev = D->ev;
    const teller_collective *co = teller_store_collectives(D->st);
    const teller_coll_member *mem = teller_store_coll_members(D->st);
    size_t cells = (size_t)D->nsteps * D->nsrc;
    D->late_last = calloc(cells + 1, sizeof *D->late_last);
    D->late_insts = calloc(D->nsteps + 1, sizeof *D->late_insts);
    D->late_wait = calloc(cells + 1, sizeof *D->late_wait);
    if (!D->late_last || !D->late_insts || !D->late_wait)
        return -1;
    for (size_t c = 0; c < teller_store_num_collectives(D->st); c++) {
        if (co[c].num_members < 2)
            continue;
        uint32_t lk = mem[co[c].first_member].kernel;
        for (uint32_t m = 0; m < co[c].num_members; m++) {
            uint32_t k = mem[co[c].first_member + m].kernel;
            if (ev->start_ns[k] > ev->start_ns[lk])
                lk = k;
        }
        uint32_t step = ev->step[lk];
        if (step >= D->nsteps)
            continue;
        double w = 0;
        for (uint32_t m = 0; m < co[c].num_members; m++)
            w += (double)(ev->start_ns[lk] - ev->start_ns[mem[co[c].first_member + m].kernel]);
        size_t cell = (size_t)step * D->nsrc + ev->source[lk];
        D->late_last[cell]++;
        D->late_wait[cell] += w;
        D->late_insts[step]++;
    }
    return 0;
}

/* When the step's root rank was the last to arrive at most of the step's
 * collectives (late_tables), that is trace evidence for the finding. */
static void late_arrivals(dctx *D, teller_diagnosis *d)
{
    const teller_events *ev = D->ev;
    for (uint32_t k = 0; k < D->nsteps; k++) {
        teller_diag_step *s = &d->steps[k];
        if (!s->pred.abnormal || s->culprit_event == TELLER_NONE || D->late_insts[k] < 2 ||
            s->pred.nev >= TELLER_MAX_EVIDENCE)
            continue;
        uint16_t src = ev->source[s->culprit_event];
        size_t cell = (size_t)k * D->nsrc + src;
        if (D->late_last[cell] * 2 <= D->late_insts[k])
            continue;
        char w[32];
        fmt_ms(w, sizeof w, D->late_wait[cell]);
        teller_evidence *e = &s->pred.ev[s->pred.nev++];
        memset(e, 0, sizeof *e);
        snprintf(e->kind, sizeof e->kind, "trace");
        e->node = teller_store_source_c(D->st, src)->node;
        e->rank = teller_store_source_c(D->st, src)->rank;
        e->line = s->culprit_event;
        e->time_ns = s->start_ns;
        snprintf(e->text, sizeof e->text,
                 "rank %d arrived last at %u of the step's %u collectives; its peers waited %s for it in all", e->rank,
                 D->late_last[cell], D->late_insts[k], w);
        size_t n = strlen(s->pred.explanation);
        if (n + 8 < sizeof s->pred.explanation)
            snprintf(s->pred.explanation + n, sizeof s->pred.explanation - n, " Rank %d arrived last at %u of %u collectives, "
                     "its peers waiting %s for it.", e->rank, D->late_last[cell], D->late_insts[k], w);
    }
}

/* x in [lo, hi]; 0 for a NaN (a figure a detector left undefined) */
static float clampf(double x, double lo, double hi) { return (float)(x != x ? 0 : x < lo ? lo : x > hi ? hi : x); }
static double nonneg(double x) { return x > 0 ? x : 0; }

/* The feature vector of candidate c, the a-th of n in step k (diagnose.h
 * lists the features). src: the rank's source, -1 when not loaded. */
static void cand_features(const dctx *D, const teller_diag_step *s, uint32_t k, const cand *c, size_t a, size_t n,
                          int32_t src, int32_t node, double ranks, double nodes, double med_step, float *f)
{
    double dur = (double)s->dur_ns;
    double cell_last = 0, cell_wait = 0;
    if (src >= 0) {
        cell_last = D->late_last[(size_t)k * D->nsrc + (size_t)src];
        cell_wait = D->late_wait[(size_t)k * D->nsrc + (size_t)src];
    }
    int32_t peer_node = c->peer >= 0 ? node_of_rank(D->st, c->peer) : -1;
    f[TELLER_CF_EXCESS_SHARE] = clampf(dur > 0 ? c->excess / dur : 0, 0, 1);
    f[TELLER_CF_LOG2_SIG] = clampf(c->sig > 1 ? log2(c->sig) : 0, 0, 16);
    f[TELLER_CF_LOG2_ACTUAL] = clampf(log2((nonneg(c->actual) + 1000) / (nonneg(c->usual) + 1000)), -16, 16);
    f[TELLER_CF_LOG10_EXCESS_US] = clampf(log10(1 + nonneg(c->excess) / 1000), 0, 16);
    f[TELLER_CF_SCORE] = clampf(c->score, 0, 1);
    f[TELLER_CF_ORDER] = n ? (float)a / (float)n : 0;
    f[TELLER_CF_RANK] = c->rank >= 0 && ranks > 0 ? (float)(c->rank / ranks) : 0;
    f[TELLER_CF_NODE] = node >= 0 && nodes > 0 ? (float)(node / nodes) : 0;
    f[TELLER_CF_CROSS_NODE] = peer_node >= 0 && node >= 0 && peer_node != node;
    f[TELLER_CF_LATE_SHARE] = D->late_insts[k] ? clampf(cell_last / D->late_insts[k], 0, 1) : 0;
    f[TELLER_CF_WAIT_SHARE] = clampf(dur > 0 ? cell_wait / dur : 0, 0, 1);
    f[TELLER_CF_HAS_LOG] = s->pred.nev > 0;
    f[TELLER_CF_STEP_LOG2_REL] = clampf(med_step > 0 && dur > 0 ? log2(dur / med_step) : 0, -16, 16);
    f[TELLER_CF_LOG2_FED] = (float)log2(1.0 + c->fed);
    f[TELLER_CF_NOT_LOADED] = src < 0;
}

static void diag_free_ctx(dctx *D)
{
    if (D->steps)
        for (uint32_t k = 0; k < D->nsteps; k++)
            free(D->steps[k].c);
    free(D->steps);
    free(D->group);
    free(D->mstart);
    free(D->range);
    free(D->late_last);
    free(D->late_insts);
    free(D->late_wait);
    busy_free(&D->gpu);
}

teller_diag_opts teller_diag_defaults(void)
{
    teller_diag_opts o = {0};
    o.threshold = 0.5;
    return o;
}

void teller_diagnosis_free(teller_diagnosis *d)
{
    if (!d)
        return;
    for (size_t i = 0; i < d->nnotes; i++)
        free(d->notes[i]);
    free(d->notes);
    free(d->steps);
    free(d->cands);
    free(d);
}

teller_status teller_diagnose(teller_store *st, const teller_diag_opts *opts, teller_diagnosis **out, teller_error *err)
{
    teller_diag_opts def = teller_diag_defaults();
    const teller_diag_opts *o = opts ? opts : &def;
    double threshold = o->threshold > 0 ? o->threshold : def.threshold;
    dctx D = {0};
    D.st = st;
    D.ev = teller_store_events(st);
    D.nsteps = teller_store_step_count(st);
    D.steps = calloc(D.nsteps ? D.nsteps : 1, sizeof *D.steps);
    D.group = calloc(teller_store_num_sources(st) + 1, sizeof *D.group);
    teller_diagnosis *d = calloc(1, sizeof *d);
    if (!D.steps || !D.group || !d)
        goto oom;
    d->steps = calloc(D.nsteps ? D.nsteps : 1, sizeof *d->steps);
    if (!d->steps)
        goto oom;
    d->n = D.nsteps;
    D.out = d;
    const teller_step *steps = teller_store_steps(st);
    for (uint32_t k = 0; k < D.nsteps; k++) {
        d->steps[k].pred.step = k;
        d->steps[k].root_rank = -1;
        d->steps[k].root_node = -1;
        d->steps[k].culprit_event = TELLER_NONE;
        d->steps[k].start_ns = INT64_MAX;
    }
    for (size_t i = 0; i < teller_store_num_steps(st); i++) {
        teller_diag_step *s = &d->steps[steps[i].step];
        int64_t w = steps[i].end_ns - steps[i].start_ns;
        if (w > s->dur_ns)
            s->dur_ns = w;
        if (steps[i].start_ns < s->start_ns)
            s->start_ns = steps[i].start_ns;
    }
    D.t_first = INFINITY;
    D.t_last = -INFINITY;
    for (uint32_t k = 0; k < D.nsteps; k++) {
        D.steps[k].start = (double)d->steps[k].start_ns;
        if (D.steps[k].start < D.t_first)
            D.t_first = D.steps[k].start;
        if (D.steps[k].start + (double)d->steps[k].dur_ns > D.t_last)
            D.t_last = D.steps[k].start + (double)d->steps[k].dur_ns;
    }
    D.nsrc = teller_store_num_sources(st);
    /* the tree build grouped the events by source */
    D.range = calloc(D.nsrc + 1, sizeof *D.range);
    if (!D.range)
        goto oom;
    for (size_t i = 0; i < D.ev->n; i++) {
        if (i && D.ev->source[i] < D.ev->source[i - 1]) {
            diag_free_ctx(&D);
            teller_diagnosis_free(d);
            return teller_error_set(err, TELLER_ERR_ARG, "(diagnose)", 0, "events are not grouped by source: build the trees first");
        }
        D.range[D.ev->source[i] + 1]++;
    }
    for (size_t s = 0; s < D.nsrc; s++)
        D.range[s + 1] += D.range[s];
    D.mstart = malloc(((size_t)D.nsteps * D.nsrc + 1) * sizeof *D.mstart);
    if (!D.mstart)
        goto oom;
    for (size_t c = 0; c < (size_t)D.nsteps * D.nsrc; c++) {
        D.mstart[c] = INT64_MIN;
    }
    for (size_t i = 0; i < teller_store_num_steps(st); i++) {
        uint32_t mk = steps[i].marker;
        if (mk == TELLER_NONE)
            continue;
        size_t c = (size_t)steps[i].step * D.nsrc + D.ev->source[mk];
        D.mstart[c] = steps[i].start_ns;
    }
    {
        int32_t low = INT32_MAX;
        for (size_t s = 0; s < teller_store_num_sources(st); s++)
            if (teller_store_source_c(st, (uint32_t)s)->rank < low)
                low = teller_store_source_c(st, (uint32_t)s)->rank;
        for (size_t i = 0; i < D.ev->n; i++)
            if (D.ev->layer[i] == TELLER_LAYER_KERNEL && !(D.ev->flags[i] & TELLER_F_COMM) &&
                D.ev->step[i] < D.nsteps && rank_of(&D, (uint32_t)i) == low)
                D.steps[D.ev->step[i]].work += (double)D.ev->dur_ns[i];
    }
    build_groups(&D);
    if (run_detectors(&D, o->jobs > 0 ? o->jobs : teller_num_cores()) || detect_comm(&D))
        goto oom;
    if (merge_groups(&D, TELLER_FAULT_KERNEL_REGRESSION, merge_throttle) || merge_groups(&D, TELLER_FAULT_LAUNCH_LATENCY, merge_launches) ||
        merge_groups(&D, TELLER_FAULT_MALLOC_STORM, classify_malloc))
        goto oom;
    absorb(&D);
    merge_links(&D);
    teller_status lst = read_logs(&D, o, err);
    if (lst == TELLER_ERR_NOMEM)
        goto oom;
    if (lst != TELLER_OK) {
        diag_free_ctx(&D);
        teller_diagnosis_free(d);
        return lst;
    }
    if (subtract_run_normal(&D))
        goto oom;
    /* what could not be seen */
    int has_markers = 0;
    for (size_t i = 0; i < teller_store_num_steps(st); i++)
        has_markers |= steps[i].marker != TELLER_NONE;
    if (!has_markers)
        add_note(&D, "no step annotations were found: each rank's whole trace is one step, so per-step findings are coarse");
    int lone = 1;
    for (size_t s = 0; s < teller_store_num_sources(st); s++)
        lone &= D.group[s] == (int32_t)s;
    if (teller_store_num_sources(st) > 1 && lone)
        add_note(&D, "no rank shares a tensor-parallel collective with another: kernels are not compared across peers");
    if (teller_store_num_sources(st) == 1)
        add_note(&D, "a single rank: communication is seen from one side only, and kernels have no peers to compare with");
    if (D.nsteps < 4)
        add_note(&D, "fewer than four steps: what is usual comes from within the same steps, so findings are tentative");
    for (size_t s = 0; s < teller_store_num_sources(st); s++) {
        const teller_source *so = teller_store_source_c(st, (uint32_t)s);
        if (so->world_size > 0 && (size_t)so->world_size > teller_store_num_sources(st) && s == 0) {
            char note[200];
            snprintf(note, sizeof note, "the trace names %d ranks but %zu were loaded: the others are not seen",
                     so->world_size, teller_store_num_sources(st));
            add_note(&D, note);
        }
    }
    /* rank the candidates of every step; the feature vectors need the
     * horizontal view, the run's usual step and the ranks' places */
    if (late_tables(&D))
        goto oom;
    double med_step = 0, ranks = 0, nodes = 0;
    {
        double *durs = malloc((D.nsteps ? D.nsteps : 1) * sizeof *durs);
        if (!durs)
            goto oom;
        for (uint32_t k = 0; k < D.nsteps; k++)
            durs[k] = (double)d->steps[k].dur_ns;
        med_step = median_of(durs, D.nsteps);
        free(durs);
        d->usual_step_ns = (int64_t)med_step;
        d->model = o->model != NULL;
        for (size_t q = 0; q < D.nsrc; q++) {
            const teller_source *so = teller_store_source_c(st, (uint32_t)q);
            if (so->rank + 1 > ranks)
                ranks = so->rank + 1;
            if (so->node + 1 > nodes)
                nodes = so->node + 1;
        }
    }
    size_t cands_cap = 0;
    for (uint32_t k = 0; k < D.nsteps; k++) {
        step_acc *sa = &D.steps[k];
        teller_diag_step *s = &d->steps[k];
        size_t w = 0;
        for (size_t a = 0; a < sa->n; a++)
            if (sa->c[a].det != TELLER_FAULT_NONE)
                sa->c[w++] = sa->c[a];
        sa->n = w;
        for (size_t a = 0; a < sa->n; a++)
            sa->c[a].score = cand_score(&sa->c[a], (double)s->dur_ns, s->pred.nev > 0);
        teller_sort(sa->c, sa->n, sizeof *sa->c, cand_cmp);
        /* the step's candidates: one per (rank, operator), best first;
         * idx: each one's finding in sa->c */
        s->first_cand = (uint32_t)d->ncands;
        size_t idx[TELLER_DIAG_MAX_CANDS];
        for (size_t a = 0; a < sa->n && s->ncands < TELLER_DIAG_MAX_CANDS; a++) {
            const cand *c = &sa->c[a];
            int dup = 0;
            for (uint32_t q = s->first_cand; q < s->first_cand + s->ncands; q++)
                dup |= d->cands[q].rank == c->rank && d->cands[q].name == c->name;
            if (dup)
                continue;
            if (TELLER_GROW(d->cands, cands_cap, d->ncands + 1))
                goto oom;
            teller_diag_cand *dc = &d->cands[d->ncands++];
            int32_t src = source_of_rank(st, c->rank);
            dc->det = c->det;
            dc->rank = c->rank;
            dc->node = c->event != TELLER_NONE ? teller_store_event_node(st, c->event) : node_of_rank(st, c->rank);
            dc->name = c->name;
            dc->layer = c->layer;
            dc->event = c->event;
            dc->excess_ns = c->excess;
            dc->actual_ns = c->actual;
            dc->usual_ns = c->usual;
            dc->score = c->score;
            cand_features(&D, s, k, c, a, sa->n, src, dc->node, ranks, nodes, med_step, dc->feat);
            idx[s->ncands++] = a;
        }
        teller_diag_cand *sc = d->cands + s->first_cand;
        double pscore[TELLER_DIAG_MAX_CANDS];
        for (uint32_t q = 0; q < s->ncands; q++)
            pscore[q] = sc[q].score;
        s->pred.score = s->ncands ? sc[0].score : 0;
        if (o->model && s->ncands) {
            /* the model judges the step and orders the candidates by how
             * likely each is the root with the kind its detector names */
            teller_model_sample smp;
            teller_model_out mo;
            teller_model_sample_of(d, k, &smp);
            if (teller_model_predict(o->model, &smp, &mo))
                goto oom;
            double joint[TELLER_DIAG_MAX_CANDS];
            for (uint32_t q = 0; q < s->ncands; q++) {
                joint[q] = log(mo.p_root[q] + 1e-30) + log(mo.p_kind[sc[q].det] + 1e-30);
                pscore[q] = mo.p_root[q];
            }
            for (uint32_t q = 1; q < s->ncands; q++) /* insertion sort: stable, at most 16 */
                for (uint32_t r = q; r > 0 && joint[r] > joint[r - 1]; r--) {
                    teller_diag_cand tc = sc[r];
                    sc[r] = sc[r - 1];
                    sc[r - 1] = tc;
                    double tj = joint[r], tp = pscore[r];
                    joint[r] = joint[r - 1], pscore[r] = pscore[r - 1];
                    joint[r - 1] = tj, pscore[r - 1] = tp;
                    size_t ti = idx[r];
                    idx[r] = idx[r - 1];
                    idx[r - 1] = ti;
                }
            s->pred.score = mo.p_abnormal;
        }
        s->pred.abnormal = s->pred.score >= threshold;
        for (uint32_t q = 0; q < s->ncands && s->pred.ncand < TELLER_MAX_CANDIDATES; q++) {
            teller_candidate *tc = &s->pred.cand[s->pred.ncand++];
            tc->rank = sc[q].rank;
            snprintf(tc->op, sizeof tc->op, "%s", teller_store_str(st, sc[q].name));
            snprintf(tc->layer, sizeof tc->layer, "%s", teller_layer_tag((teller_layer)sc[q].layer));
            tc->score = pscore[q];
        }
        if (!s->ncands)
            continue;
        const cand *top = &sa->c[idx[0]];
        s->root_rank = top->rank;
        s->culprit_event = top->event;
        s->culprit_ns = (int64_t)top->actual;
        s->culprit_base_ns = (int64_t)top->usual;
        s->root_node = top->event != TELLER_NONE ? teller_store_event_node(st, top->event) : node_of_rank(st, top->rank);
        double ex = top->excess < (double)s->dur_ns ? top->excess : (double)s->dur_ns;
        s->excess_ns = (int64_t)ex;
        s->expected_ns = s->dur_ns - s->excess_ns;
        if (s->pred.abnormal) {
            snprintf(s->fault, sizeof s->fault, "%s", teller_fault_name(top->det));
            snprintf(s->pred.fault_type, sizeof s->pred.fault_type, "%s", teller_fault_type(top->det));
            snprintf(s->pred.view, sizeof s->pred.view, "%s", teller_fault_view(top->det));
            explain(&D, s, top);
        }
    }
    late_arrivals(&D, d);
    if (D.nomem)
        goto oom;
    diag_free_ctx(&D);
    *out = d;
    return TELLER_OK;
oom:
    diag_free_ctx(&D);
    teller_diagnosis_free(d);
    return teller_error_set(err, TELLER_ERR_NOMEM, "(diagnose)", 0, "out of memory");
}
