/*
 * baseline.c - what the run itself says is usual, for every detector to
 * compare with (baseline.h): medians of grouped samples, when each rank's
 * GPU (or its other threads) was busy and when its GPU work ended (each
 * source's part found from its own events), how late each collective's
 * kernel arrived after its peers (a host stall before it cost no more),
 * the tensor-parallel peer groups, and the cost that most steps pay (taken
 * off every finding); and the table's rows that build the run's indexes:
 * coverage, gpu_busy, waits.
 */
#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "detector.h"
#include "teller/tree.h"
#include "../util/pool.h"

int diag_cmp_dbl(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* (baseline.h) A selection, linear on average, instead of a sort (the
 * medians were a tenth of the diagnosis's CPU). A range that does not
 * shrink fast enough (values made to defeat the median-of-three pivot) is
 * sorted instead, so no input makes it quadratic. */
double diag_select(double *v, size_t n, size_t k)
{
    size_t lo = 0, hi = n; /* k lies in [lo, hi) */
    unsigned rounds = 16;
    for (size_t m = n; m > 1; m >>= 1)
        rounds += 2;
    while (hi - lo > 16) {
        if (!rounds--) {
            teller_sort(v + lo, hi - lo, sizeof *v, diag_cmp_dbl);
            return v[k];
        }
        double a = v[lo], b = v[lo + (hi - lo) / 2], c = v[hi - 1];
        double p = a < b ? (b < c ? b : a < c ? c : a) : (a < c ? a : b < c ? c : b);
        /* three ways: [lo, lt) below p, [lt, gt) equal to it, [gt, hi) above */
        size_t lt = lo, i = lo, gt = hi;
        while (i < gt) {
            double x = v[i];
            if (x < p) {
                v[i++] = v[lt];
                v[lt++] = x;
            } else if (x > p) {
                v[i] = v[--gt];
                v[gt] = x;
            } else {
                i++;
            }
        }
        if (k < lt)
            hi = lt;
        else if (k >= gt)
            lo = gt;
        else
            return p;
    }
    for (size_t i = lo + 1; i < hi; i++) { /* a short range: insertion */
        double x = v[i];
        size_t j = i;
        for (; j > lo && v[j - 1] > x; j--)
            v[j] = v[j - 1];
        v[j] = x;
    }
    return v[k];
}

/* The largest of v[0..n), n > 0: after diag_select(v, n, k), the (k - 1)-th
 * smallest is the largest of v[0..k). */
static double largest(const double *v, size_t n)
{
    double m = v[0];
    for (size_t i = 1; i < n; i++)
        if (v[i] > m)
            m = v[i];
    return m;
}

/* median of v[0..n) (reorders v) */
double diag_median(double *v, size_t n)
{
    if (!n)
        return 0;
    double hi = diag_select(v, n, n / 2);
    return n % 2 ? hi : 0.5 * (largest(v, n / 2) + hi);
}

double diag_median_zeros(samples *s, size_t n, double *low)
{
    if (low)
        *low = 0;
    if (!n)
        return 0;
    /* n - s->n zeros, then the samples in order: the middle positions
     * p0 <= p1 of the n values, among the samples once past the zeros */
    size_t zeros = n > s->n ? n - s->n : 0, p0 = (n - 1) / 2, p1 = n / 2;
    double v0 = 0, v1 = 0;
    if (p1 >= zeros) {
        v1 = diag_select(s->v, s->n, p1 - zeros);
        if (p0 >= zeros)
            v0 = p0 == p1 ? v1 : largest(s->v, p1 - zeros);
    }
    if (low)
        *low = v0;
    return 0.5 * (v0 + v1);
}

int diag_groups_add(groups *g, uint64_t key, double x)
{
    samples *s = kmap_slot(&g->keys, key, (void **)&g->s, &g->cap, sizeof *g->s);
    if (!s || TELLER_GROW(s->v, s->cap, s->n + 1))
        return -1;
    s->v[s->n++] = x;
    return 0;
}

/* The median of each group, indexed as g->keys (reorders the samples);
 * NULL when out of memory. */
double *diag_groups_medians(groups *g)
{
    double *med = calloc(g->keys.n ? g->keys.n : 1, sizeof *med);
    if (med)
        for (size_t ix = 0; ix < g->keys.n; ix++)
            med[ix] = diag_median(g->s[ix].v, g->s[ix].n);
    return med;
}

/* How far each group's samples stray from its median med[ix] anyway:
 * 1.4826 x their median absolute deviation (the standard deviation of
 * normal samples, and unmoved by the few a fault slowed); NULL when out of
 * memory. */
double *diag_groups_spreads(const groups *g, const double *med)
{
    size_t most = 1;
    for (size_t ix = 0; ix < g->keys.n; ix++)
        if (g->s[ix].n > most)
            most = g->s[ix].n;
    double *sp = calloc(g->keys.n ? g->keys.n : 1, sizeof *sp), *dev = malloc(most * sizeof *dev);
    if (!sp || !dev) {
        free(sp);
        free(dev);
        return NULL;
    }
    for (size_t ix = 0; ix < g->keys.n; ix++) {
        for (size_t q = 0; q < g->s[ix].n; q++)
            dev[q] = fabs(g->s[ix].v[q] - med[ix]);
        sp[ix] = 1.4826 * diag_median(dev, g->s[ix].n);
    }
    free(dev);
    return sp;
}

void diag_groups_free(groups *g)
{
    for (size_t ix = 0; ix < g->keys.n && ix < g->cap; ix++)
        free(g->s[ix].v);
    free(g->s);
    kmap_free(&g->keys);
}

/* ---- when the GPU was busy ---- */

/* A host call or a host gap costs the step only the time the rank's GPU
 * had nothing to do meanwhile: a slow launch while the GPU is still busy
 * with earlier work, a copy call blocked until the kernels before it end,
 * or a thread waiting while another thread keeps the GPU fed, delay
 * nothing. The index below answers "how long was the GPU idle in [a, b)". */

/* Whether event i counts as busy: GPU work (kernels, copies, memsets: not
 * the annotations drawn on a stream, which span whole steps whether the GPU
 * worked or idled), the outermost host ops of the source's threads other
 * than its stepping thread, or either of any thread. */
static int busy_counts(const teller_events *ev, uint32_t i, diag_busy_what what, const int32_t *step_tid)
{
    if (ev->dur_ns[i] <= 0)
        return 0;
    if (what == DIAG_BUSY_PROFILER)
        return (ev->flags[i] & TELLER_F_PROFILER) != 0;
    int gpu = (ev->flags[i] & TELLER_F_GPU) != 0;
    if (gpu)
        return (what == DIAG_BUSY_GPU || what == DIAG_BUSY_ANY) && teller_layer_is_gpu_work(ev->layer[i]);
    if (what == DIAG_BUSY_GPU || !teller_layer_is_host_op(ev->layer[i]) ||
        (what == DIAG_BUSY_OTHER_THREADS && teller_event_tid(ev, i) == step_tid[ev->source[i]]))
        return 0;
    uint32_t p = ev->parent[i];
    return p == TELLER_NONE || !teller_layer_is_host_op(ev->layer[p]);
}

int diag_busy_init(busyidx *B, size_t nsrc)
{
    B->nsrc = nsrc;
    B->part = calloc(nsrc ? nsrc : 1, sizeof *B->part);
    return B->part ? 0 : -1;
}

int diag_busy_part(busyidx *B, const dctx *D, diag_busy_what what, const int32_t *step_tid, size_t s)
{
    const teller_events *ev = D->ev;
    busypart *P = &B->part[s];
    size_t lo = D->range[s], hi = D->range[s + 1], n = 0;
    for (size_t i = lo; i < hi; i++)
        n += (size_t)busy_counts(ev, (uint32_t)i, what, step_tid);
    size_t cap = n ? n : 1;
    uint32_t *ids = malloc(cap * sizeof *ids), *tmp = malloc(cap * sizeof *tmp);
    int64_t *m = malloc(cap * (3 * sizeof *m + sizeof *P->ev)); /* a, b, cum, then ev */
    if (!ids || !tmp || !m) {
        free(ids);
        free(tmp);
        free(m);
        return -1;
    }
    *P = (busypart){.a = m, .b = m + cap, .cum = m + 2 * cap, .ev = (uint32_t *)(m + 3 * cap)};
    teller_prefault(ids, n * sizeof *ids); /* written whole below */
    size_t w = 0;
    for (size_t i = lo; i < hi; i++)
        if (busy_counts(ev, (uint32_t)i, what, step_tid))
            ids[w++] = (uint32_t)i;
    /* in start order (stable: events of one start keep their order), then
     * merged */
    teller_sort_by_key(ids, tmp, n, ev->start_ns);
    int64_t cum = 0;
    for (size_t j = 0; j < n; j++) {
        int64_t a = ev->start_ns[ids[j]], b = a + ev->dur_ns[ids[j]];
        if (P->n && a <= P->b[P->n - 1]) {
            if (b > P->b[P->n - 1]) {
                cum += b - P->b[P->n - 1];
                P->b[P->n - 1] = b;
            }
            continue;
        }
        P->a[P->n] = a;
        P->b[P->n] = b;
        P->cum[P->n] = cum;
        P->ev[P->n++] = ids[j];
        cum += b - a;
    }
    free(ids);
    free(tmp);
    /* far fewer intervals than events, most of all on a busy GPU: b, cum
     * and ev moved down behind a's last, and the block cut to their size */
    if (P->n < cap) {
        size_t k = P->n ? P->n : 1;
        memmove(m + k, P->b, P->n * sizeof *m);
        memmove(m + 2 * k, P->cum, P->n * sizeof *m);
        memmove(m + 3 * k, P->ev, P->n * sizeof *P->ev);
        int64_t *fit = realloc(m, k * (3 * sizeof *m + sizeof *P->ev));
        m = fit ? fit : m;
        *P = (busypart){.a = m, .b = m + k, .cum = m + 2 * k, .ev = (uint32_t *)(m + 3 * k), .n = P->n};
    }
    return 0;
}

typedef struct busy_run {
    busyidx        *B;
    const dctx     *D;
    diag_busy_what  what;
    const int32_t  *step_tid;
    int            *failed; /* per source: its part's build failed */
} busy_run;

static void busy_task(void *ctx, size_t s)
{
    busy_run *R = ctx;
    R->failed[s] = diag_busy_part(R->B, R->D, R->what, R->step_tid, s) != 0;
}

int diag_busy_build(busyidx *B, const dctx *D, diag_busy_what what, const int32_t *step_tid)
{
    int *failed = calloc(D->nsrc + 1, sizeof *failed), rc = failed ? diag_busy_init(B, D->nsrc) : -1;
    if (!rc)
        teller_parallel_for(D->jobs, D->nsrc, busy_task, &(busy_run){B, D, what, step_tid, failed});
    for (size_t s = 0; s < D->nsrc && !rc; s++)
        rc = failed[s] ? -1 : 0;
    free(failed);
    return rc;
}

int diag_waits_build(waitidx *W, const dctx *D)
{
    const teller_events *ev = D->ev;
    size_t ns = D->nsrc, n = 0;
    memset(W, 0, sizeof *W);
    for (size_t i = 0; i < ev->n; i++)
        if (ev->layer[i] == TELLER_LAYER_KERNEL)
            n++;
    W->off = calloc(ns + 1, sizeof *W->off);
    uint32_t *kev = malloc((n ? n : 1) * sizeof *kev), *tmp = malloc((n ? n : 1) * sizeof *tmp);
    W->start = malloc((n ? n : 1) * sizeof *W->start);
    W->wait = malloc((n ? n : 1) * sizeof *W->wait);
    W->step = malloc((n ? n : 1) * sizeof *W->step);
    if (!W->off || !kev || !tmp || !W->start || !W->wait || !W->step) {
        free(kev);
        free(tmp);
        return -1;
    }
    /* each written whole below */
    teller_prefault(kev, n * sizeof *kev);
    teller_prefault(W->start, n * sizeof *W->start);
    teller_prefault(W->wait, n * sizeof *W->wait);
    teller_prefault(W->step, n * sizeof *W->step);
    /* the events are grouped by source: each source's kernels in start
     * order, not a member of a collective (-1) until the collectives say
     * how late they came */
    size_t w = 0;
    for (size_t s = 0; s < ns; s++) {
        W->off[s] = w;
        for (size_t i = D->range[s]; i < D->range[s + 1]; i++)
            if (ev->layer[i] == TELLER_LAYER_KERNEL)
                kev[w++] = (uint32_t)i;
        teller_sort_by_key(kev + W->off[s], tmp, w - W->off[s], ev->start_ns);
    }
    W->off[ns] = w;
    free(tmp);
    for (size_t j = 0; j < w; j++) {
        W->start[j] = ev->start_ns[kev[j]];
        W->wait[j] = -1;
        W->step[j] = ev->step[kev[j]];
    }
    const teller_collective *co = teller_store_collectives(D->st);
    const teller_coll_member *mem = teller_store_coll_members(D->st);
    for (size_t c = 0; c < teller_store_num_collectives(D->st); c++) {
        if (co[c].num_members < 2)
            continue;
        /* the last and the second last to arrive (start) */
        const teller_member_row *dm = D->member + co[c].first_member;
        int64_t last = INT64_MIN, second = INT64_MIN;
        for (uint32_t m = 0; m < co[c].num_members; m++) {
            int64_t t = dm[m].start;
            if (t > last) {
                second = last;
                last = t;
            } else if (t > second) {
                second = t;
            }
        }
        for (uint32_t m = 0; m < co[c].num_members; m++) {
            uint32_t k = mem[co[c].first_member + m].kernel;
            int64_t t = dm[m].start;
            size_t lo = W->off[dm[m].src], hi = W->off[dm[m].src + 1], end = hi;
            while (lo < hi) { /* the kernel's place: the first of its start, then k itself */
                size_t mid = (lo + hi) / 2;
                if (W->start[mid] < t)
                    lo = mid + 1;
                else
                    hi = mid;
            }
            while (lo < end && W->start[lo] == t && kev[lo] != k)
                lo++;
            if (lo == end || kev[lo] != k)
                continue;
            int64_t others = t == last ? second : last;
            W->wait[lo] = t > others ? (double)(t - others) : 0;
        }
    }
    free(kev);
    return 0;
}

void diag_waits_free(waitidx *W)
{
    free(W->start);
    free(W->wait);
    free(W->step);
    free(W->off);
    memset(W, 0, sizeof *W);
}

size_t diag_step_rows(const teller_store *st, uint32_t k, size_t *hi)
{
    const teller_step *steps = teller_store_steps(st);
    size_t n = teller_store_num_steps(st), lo = 0, h = n;
    while (lo < h) {
        size_t mid = (lo + h) / 2;
        if (steps[mid].step < k)
            lo = mid + 1;
        else
            h = mid;
    }
    for (*hi = lo; *hi < n && steps[*hi].step == k; (*hi)++)
        ;
    return lo;
}

size_t diag_kernel_after(const waitidx *W, uint16_t src, uint32_t k, int64_t t)
{
    size_t lo = W->off[src], hi = W->off[src + 1];
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (W->start[mid] < t)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < W->off[src + 1] && W->step[lo] == k ? lo : SIZE_MAX;
}

size_t diag_wait_after(const waitidx *W, uint16_t src, uint32_t k, int64_t t)
{
    size_t j = diag_kernel_after(W, src, k, t);
    return j != SIZE_MAX && W->wait[j] >= 0 ? j : SIZE_MAX;
}

double *diag_waits_left(const waitidx *W, size_t nsrc)
{
    size_t n = W->off[nsrc];
    double *left = malloc((n ? n : 1) * sizeof *left);
    if (left && n) {
        teller_prefault(left, n * sizeof *left);
        memcpy(left, W->wait, n * sizeof *left);
    }
    return left;
}

double diag_spend_lateness(const waitidx *W, double *left, uint16_t src, uint32_t k, int64_t t, double x)
{
    size_t j = diag_wait_after(W, src, k, t);
    if (j == SIZE_MAX || x <= 0)
        return 0;
    double cost = x < left[j] ? x : left[j];
    left[j] -= cost;
    return x - cost;
}

int diag_ends_init(endidx *E, size_t nsrc)
{
    E->nsrc = nsrc;
    E->part = calloc(nsrc ? nsrc : 1, sizeof *E->part);
    return E->part ? 0 : -1;
}

int diag_ends_part(endidx *E, const dctx *D, size_t s)
{
    const teller_events *ev = D->ev;
    endpart *P = &E->part[s];
    size_t lo = D->range[s], hi = D->range[s + 1], n = 0;
    for (size_t i = lo; i < hi; i++)
        n += teller_layer_is_gpu_work(ev->layer[i]) != 0;
    size_t cap = n ? n : 1;
    int64_t *end_of = malloc(cap * sizeof *end_of), *end = malloc(cap * sizeof *end); /* end_of in event order */
    uint32_t *pos = malloc(cap * sizeof *pos), *tmp = malloc(cap * sizeof *tmp);
    int rc = end_of && end && pos && tmp ? 0 : -1;
    if (!rc) {
        size_t w = 0;
        for (size_t i = lo; i < hi; i++)
            if (teller_layer_is_gpu_work(ev->layer[i])) {
                pos[w] = (uint32_t)w;
                end_of[w++] = ev->start_ns[i] + ev->dur_ns[i];
            }
        teller_sort_by_key(pos, tmp, n, end_of);
        for (size_t j = 0; j < n; j++)
            end[j] = end_of[pos[j]];
        *P = (endpart){.end = end, .n = n};
    } else {
        free(end);
    }
    free(end_of);
    free(pos);
    free(tmp);
    return rc;
}

void diag_ends_free(endidx *E)
{
    for (size_t s = 0; E->part && s < E->nsrc; s++)
        free(E->part[s].end);
    free(E->part);
    memset(E, 0, sizeof *E);
}

int64_t diag_overhang(const endidx *E, uint16_t src, int64_t start, int64_t end)
{
    const endpart *P = &E->part[src];
    assert(P->end);
    size_t lo = 0, hi = P->n;
    while (lo < hi) { /* past the last GPU end at or before the call's end */
        size_t mid = (lo + hi) / 2;
        if (P->end[mid] <= end)
            lo = mid + 1;
        else
            hi = mid;
    }
    int64_t last = lo ? P->end[lo - 1] : INT64_MIN;
    return end - (last > start ? last : start);
}

void diag_busy_free(busyidx *B)
{
    for (size_t s = 0; B->part && s < B->nsrc; s++)
        free(B->part[s].a);
    free(B->part);
    memset(B, 0, sizeof *B);
}

/* busy time of part P before t */
static int64_t busy_before(const busypart *P, int64_t t)
{
    size_t lo = 0, hi = P->n;
    while (lo < hi) { /* the first interval starting at or after t */
        size_t mid = (lo + hi) / 2;
        if (P->a[mid] < t)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (!lo)
        return 0;
    size_t j = lo - 1; /* the last interval starting before t */
    int64_t end = P->b[j] < t ? P->b[j] : t;
    return P->cum[j] + (end - P->a[j]);
}

int diag_busy_holes(const busyidx *B, uint16_t src, int64_t a, int64_t b, uint32_t last, diag_hole **H, size_t *cap,
                    size_t *nh)
{
    const busypart *P = &B->part[src];
    assert(P->a);
    size_t lo = 0, hi = P->n;
    while (lo < hi) { /* the first interval ending after a */
        size_t mid = (lo + hi) / 2;
        if (P->b[mid] <= a)
            lo = mid + 1;
        else
            hi = mid;
    }
    int64_t cur = a;
    for (size_t j = lo; j < P->n && P->a[j] < b; j++) {
        if (P->a[j] > cur) {
            if (TELLER_GROW(*H, *cap, *nh + 1))
                return -1;
            (*H)[(*nh)++] = (diag_hole){cur, P->a[j], P->ev[j]};
        }
        if (P->b[j] > cur)
            cur = P->b[j];
    }
    if (b > cur) {
        if (TELLER_GROW(*H, *cap, *nh + 1))
            return -1;
        (*H)[(*nh)++] = (diag_hole){cur, b, last};
    }
    return 0;
}

/* how long source src was idle in [a, b) */
double diag_idle_in(const busyidx *B, uint16_t src, int64_t a, int64_t b)
{
    const busypart *P = &B->part[src];
    assert(P->a);
    if (b <= a)
        return 0;
    return (double)((b - a) - (busy_before(P, b) - busy_before(P, a)));
}

/* ---- peer groups: ranks that share all-reduce / all-gather collectives;
 * pipelines: ranks linked by any collective, send/recv too ---- */

static int32_t uf_find(int32_t *p, int32_t x)
{
    while (p[x] != x)
        x = p[x] = p[p[x]];
    return x;
}

/* Each group's members, by a counting sort on the group (root[s], its
 * root's source index): *members holds the sources grouped, in source
 * order inside a group; (*first)[s], (*count)[s] where source s's group
 * starts in it and its size. 0, or -1 out of memory. */
static int list_members(size_t ns, const int32_t *root, uint32_t **members, uint32_t **first, uint32_t **count)
{
    *members = malloc((ns ? ns : 1) * sizeof **members);
    *first = calloc(ns + 1, sizeof **first);
    *count = calloc(ns + 1, sizeof **count);
    uint32_t *at = calloc(ns + 1, sizeof *at); /* per group: members placed so far */
    if (!*members || !*first || !*count || !at) {
        free(at);
        return -1;
    }
    for (size_t s = 0; s < ns; s++)
        (*count)[root[s]]++;
    for (size_t g = 1; g < ns; g++) /* roots first: first, count per group root */
        (*first)[g] = (*first)[g - 1] + (*count)[g - 1];
    for (size_t s = 0; s < ns; s++) {
        uint32_t g = (uint32_t)root[s];
        (*members)[(*first)[g] + at[g]++] = (uint32_t)s;
    }
    for (size_t s = 0; s < ns; s++) { /* then per source, from its root (a root's is its own) */
        (*first)[s] = (*first)[root[s]];
        (*count)[s] = (*count)[root[s]];
    }
    free(at);
    return 0;
}

int diag_build_groups(dctx *D)
{
    size_t ns = teller_store_num_sources(D->st);
    for (size_t s = 0; s < ns; s++)
        D->group[s] = D->pipe[s] = (int32_t)s;
    const teller_collective *co = teller_store_collectives(D->st);
    for (size_t c = 0; c < teller_store_num_collectives(D->st); c++) {
        if (co[c].num_members < 2)
            continue;
        const teller_member_row *dm = D->member + co[c].first_member;
        const char *nm = teller_store_str(D->st, dm[0].name);
        int p2p = strstr(nm, "SendRecv") || strstr(nm, "Send") == nm;
        uint16_t a = dm[0].src;
        for (uint32_t m = 1; m < co[c].num_members; m++) {
            uint16_t b = dm[m].src;
            int32_t ra = uf_find(D->pipe, a), rb = uf_find(D->pipe, b);
            if (ra != rb)
                D->pipe[rb] = ra;
            if (p2p)
                continue;
            ra = uf_find(D->group, a);
            rb = uf_find(D->group, b);
            if (ra != rb)
                D->group[rb] = ra;
        }
    }
    for (size_t s = 0; s < ns; s++) {
        D->group[s] = uf_find(D->group, (int32_t)s);
        D->pipe[s] = uf_find(D->pipe, (int32_t)s);
    }
    /* ranks in pipelines apart: sources of two ranks that no collectives link */
    D->apart = 0;
    for (size_t s = 1; s < ns && !D->apart; s++)
        D->apart = D->pipe[s] != D->pipe[0] &&
                   teller_store_source_c(D->st, (uint32_t)s)->rank != teller_store_source_c(D->st, 0)->rank;
    return list_members(ns, D->group, &D->peers, &D->gfirst, &D->gcount) ||
                   list_members(ns, D->pipe, &D->linked, &D->pfirst, &D->pcount)
               ? -1
               : 0;
}

/* ---- the run's normal ---- */

/* Whether finding c is judged against the run's other steps: not when
 * it states a fact (a log line, a collective that never completed), nor
 * when its yardstick is a prior because the run is too short to have one
 * (kernel launches in a run of fewer than three steps, apis.c: a launch
 * slowdown in both steps of a two-step run is not its normal), nor when it
 * was judged against a reference run (reference.c). */
static int run_judged(const dctx *D, const cand *c)
{
    return c->det != TELLER_FAULT_NONE && !c->reference && !teller_fault_def_of(c->det)->logged &&
           !(c->det == TELLER_FAULT_LAUNCH_LATENCY && diag_launch_prior(D, c->name));
}

/* A cost that most steps pay is the run's normal: for each (kind, rank,
 * operator), the median excess over all steps (a step without the finding
 * counting zero) is taken off every step's finding judged against the
 * run; with two steps, the lower of the two. A single step has nothing to
 * tell the usual from the fault. */
int diag_subtract_run_normal(const dctx *D, step_acc *steps)
{
    if (D->nsteps < 2)
        return 0;
    groups g = {0};
    for (uint32_t k = 0; k < D->nsteps; k++)
        for (size_t a = 0; a < steps[k].n; a++) {
            const cand *c = &steps[k].c[a];
            if (run_judged(D, c) &&
                diag_groups_add(&g, ((uint64_t)c->det << 52) | ((uint64_t)(uint16_t)c->rank << 32) | c->name, c->excess)) {
                diag_groups_free(&g);
                return -1;
            }
        }
    double *base = calloc(g.keys.n ? g.keys.n : 1, sizeof *base);
    if (!base) {
        diag_groups_free(&g);
        return -1;
    }
    for (size_t ix = 0; ix < g.keys.n; ix++) {
        double low, med = diag_median_zeros(&g.s[ix], D->nsteps, &low);
        base[ix] = D->nsteps == 2 ? low : med;
    }
    for (uint32_t k = 0; k < D->nsteps; k++)
        for (size_t a = 0; a < steps[k].n; a++) {
            cand *c = &steps[k].c[a];
            if (!run_judged(D, c))
                continue;
            uint32_t ix = kmap_get(&g.keys, ((uint64_t)c->det << 52) | ((uint64_t)(uint16_t)c->rank << 32) | c->name, 0);
            c->excess = ix == TELLER_NONE || c->excess <= base[ix] ? 0 : c->excess - base[ix];
        }
    free(base);
    diag_groups_free(&g);
    return 0;
}

/* ---- calls, priors ---- */

static int name_has(const teller_store *st, uint32_t name, const char *s)
{
    return strstr(teller_store_str(st, name), s) != NULL;
}

int diag_blocks_on_gpu(const teller_store *st, uint32_t name)
{
    return name_has(st, name, "Synchronize") || name_has(st, name, "Memcpy");
}

int diag_launch_prior(const dctx *D, uint32_t name) { return D->nsteps < 3 && name_has(D->st, name, "LaunchKernel"); }

/* ---- the rows that build the run's indexes ---- */

/* Where the trace lacks GPU work (a launch with none under it, a profiler
 * that dropped records), what the GPU did is unknown: a host stall's cost,
 * the GPU's idle time while it lasted, and a synchronize's wait past the
 * GPU's last work cannot be told from the trace, so those findings are
 * left out there (its merge) and a note says where. */
static int coverage_run(const dctx *D, diag_state *S, size_t i, finds *out)
{
    (void)i;
    (void)out;
    const teller_step *rows = teller_store_steps(D->st);
    size_t n = teller_store_num_steps(D->st);
    teller_step_cell *agg = malloc((n + 1) * sizeof *agg); /* per row, over its rank's sources */
    uint8_t *known = malloc(n + 1);
    S->gpu_known = malloc((size_t)D->nsteps * D->nsrc + 1);
    if (!agg || !known || !S->gpu_known || teller_step_rows(D->st, D->cell, agg, known)) {
        free(agg);
        free(known);
        return -1;
    }
    memset(S->gpu_known, 1, (size_t)D->nsteps * D->nsrc + 1);
    for (size_t r = 0; r < n; r++) {
        int32_t src = teller_store_source_of_rank(D->st, rows[r].rank);
        if (known[r] || src < 0 || rows[r].step >= D->nsteps)
            continue;
        S->gpu_known[(size_t)rows[r].step * D->nsrc + (size_t)src] = 0;
        S->cov_rows++;
        S->cov_launches += agg[r].launches;
        S->cov_unlaunched += agg[r].unlaunched;
    }
    free(agg);
    free(known);
    for (size_t q = 0; q < D->nsrc; q++)
        S->cov_dropped += teller_store_source_c(D->st, (uint32_t)q)->dropped;
    return 0;
}

static int coverage_merge(const dctx *D, diag_state *S, uint32_t k)
{
    step_acc *sa = &S->steps[k];
    for (size_t a = 0; S->cov_rows && a < sa->n; a++) {
        cand *c = &sa->c[a];
        int32_t src = teller_store_source_of_rank(D->st, c->rank);
        if (src >= 0 && !S->gpu_known[(size_t)k * D->nsrc + (size_t)src] &&
            (c->det == TELLER_FAULT_LAUNCH_LATENCY || c->det == TELLER_FAULT_CPU_CONTENTION ||
             c->det == TELLER_FAULT_SYNC_STALL)) {
            c->det = TELLER_FAULT_NONE;
            S->cov_left++;
        }
    }
    return 0;
}

static int coverage_merged(const dctx *D, diag_state *S)
{
    (void)D;
    if (!S->cov_rows)
        return 0;
    char note[400];
    int w = snprintf(note, sizeof note, "the trace lacks GPU work of %zu step row%s (step and rank): ", S->cov_rows,
                     S->cov_rows == 1 ? "" : "s");
    if (S->cov_unlaunched)
        w += snprintf(note + w, sizeof note - (size_t)w,
                      "%zu of their %zu launch calls have none in it (a graph replay recorded without its "
                      "kernels, a capture window that cut the GPU's work)%s",
                      S->cov_unlaunched, S->cov_launches, S->cov_dropped ? "; " : "");
    if (S->cov_dropped && w > 0 && (size_t)w < sizeof note)
        w += snprintf(note + w, sizeof note - (size_t)w, "the profiler says it dropped %zu records", S->cov_dropped);
    if (w > 0 && (size_t)w < sizeof note)
        snprintf(note + w, sizeof note - (size_t)w,
                 ": what their GPU did is unknown, so host stalls there (%zu finding%s) are not judged", S->cov_left,
                 S->cov_left == 1 ? "" : "s");
    diag_add_note(S, note);
    return S->nomem ? -1 : 0;
}

static void coverage_release(const dctx *D, diag_state *S)
{
    (void)D;
    free(S->gpu_known);
}

const diag_detector diag_row_coverage = {
    .name = "coverage", .scope = DIAG_PER_RUN, .round = 1, .writes = DIAG_S_COVERAGE | DIAG_S_STEPS | DIAG_S_OUT,
    .run = coverage_run, .merge = coverage_merge, .merged = coverage_merged, .release = coverage_release};

/* A host call or a host gap costs the step only the time the rank's GPU
 * had nothing to do meanwhile, and a blocking call only what it went on
 * past its GPU's last work: the indexes of when each source's GPU worked
 * and when its work ended, a task per source building its parts. */
static int gpu_busy_prepare(const dctx *D, diag_state *S)
{
    return diag_busy_init(&S->gpu, D->nsrc) || diag_ends_init(&S->ends, D->nsrc) ? -1 : 0;
}

static int gpu_busy_run(const dctx *D, diag_state *S, size_t src, finds *out)
{
    (void)out;
    return diag_busy_part(&S->gpu, D, DIAG_BUSY_GPU, NULL, src) || diag_ends_part(&S->ends, D, src) ? -1 : 0;
}

static void gpu_busy_release(const dctx *D, diag_state *S)
{
    (void)D;
    diag_busy_free(&S->gpu);
    diag_ends_free(&S->ends);
}

const diag_detector diag_row_gpu_busy = {.name = "gpu_busy", .scope = DIAG_PER_SOURCE, .round = 1,
                                         .writes = DIAG_S_GPU_BUSY, .prepare = gpu_busy_prepare,
                                         .run = gpu_busy_run, .release = gpu_busy_release};

/* How late each collective's kernel arrived after the other members, and
 * a copy of it for the host stalls before them to spend. */
static int waits_run(const dctx *D, diag_state *S, size_t i, finds *out)
{
    (void)i;
    (void)out;
    if (diag_waits_build(&S->waits, D) || !(S->wait_left = diag_waits_left(&S->waits, D->nsrc)))
        return -1;
    return 0;
}

static void waits_release(const dctx *D, diag_state *S)
{
    (void)D;
    diag_waits_free(&S->waits);
    free(S->wait_left);
}

const diag_detector diag_row_waits = {.name = "waits", .scope = DIAG_PER_RUN, .round = 1,
                                      .writes = DIAG_S_WAITS | DIAG_S_WAIT_LEFT, .run = waits_run,
                                      .release = waits_release};
