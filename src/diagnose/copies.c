/*
 * copies.c - the copy detector (row copies): a copy's duration against the run's usual
 * for its name and size (PCIe degradation), costing only the part of its
 * slowdown that the rank's next kernel, already launched, waited through
 * (a copy that finished before the work after it was even launched delayed
 * nothing; the last GPU work of a step delays the step's end); and a
 * rank's copy volume per step against its usual volume (KV-cache swapping).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "detector.h"

static int size_bucket(int64_t bytes) { return bytes > 0 ? (int)log2((double)bytes) : 0; }

/* The run's kernels, source after source, each source's by start: their
 * event ids into *out (*n of them). 0, or -1 out of memory. */
static int kernels_by_start(const dctx *D, uint32_t **out, size_t *n)
{
    const teller_events *ev = D->ev;
    size_t k = 0;
    for (size_t i = 0; i < ev->n; i++)
        k += (ev->flags[i] & TELLER_F_GPU) && ev->layer[i] == TELLER_LAYER_KERNEL;
    uint32_t *ids = malloc((k ? k : 1) * sizeof *ids), *tmp = malloc((k ? k : 1) * sizeof *tmp);
    if (!ids || !tmp) {
        free(ids);
        free(tmp);
        return -1;
    }
    k = 0;
    for (size_t s = 0; s < D->nsrc; s++) {
        size_t first = k;
        for (size_t i = D->range[s]; i < D->range[s + 1]; i++)
            if ((ev->flags[i] & TELLER_F_GPU) && ev->layer[i] == TELLER_LAYER_KERNEL)
                ids[k++] = (uint32_t)i;
        teller_sort_by_key(ids + first, tmp, k - first, ev->start_ns);
    }
    free(tmp);
    *out = ids;
    *n = k;
    return 0;
}

/* What copy i, usually u ns, cost its step: all of its slowdown when its
 * call held the host until it ended (a synchronous copy: the launches
 * after it waited) or when no kernel of its step follows it (it ends the
 * step's GPU work); else the part that the first kernel of its step after
 * it, launched by then, waited through (a kernel that waits for a copy
 * starts when it ends): queued behind it on its stream, or on another
 * stream starting within 5 µs of its end (an event wait). A kernel of
 * another stream that started later waited for something else: HTA's
 * two-rank DDP run prefetches its embeddings on a side stream 18-25 ms
 * before the compute stream's next kernel, and a 9 ms slowdown there cost
 * the step nothing. */
static double copy_cost(const dctx *D, const uint32_t *kr, size_t n, uint32_t i, double u, int64_t *from_out)
{
    const teller_events *ev = D->ev;
    int64_t end = ev->start_ns[i] + ev->dur_ns[i], slow_from = ev->start_ns[i] + (int64_t)u;
    size_t lo = 0, hi = n;
    while (lo < hi) { /* the first kernel of the source starting at or after the copy's end */
        size_t mid = (lo + hi) / 2;
        if (ev->source[kr[mid]] < ev->source[i] || (ev->source[kr[mid]] == ev->source[i] && ev->start_ns[kr[mid]] < end))
            lo = mid + 1;
        else
            hi = mid;
    }
    uint32_t p = ev->parent[i];
    int sync = p != TELLER_NONE && !(ev->flags[p] & TELLER_F_GPU) && ev->start_ns[p] + ev->dur_ns[p] >= end - 1000;
    *from_out = slow_from;
    if (sync || lo == n || ev->source[kr[lo]] != ev->source[i] || ev->step[kr[lo]] != ev->step[i])
        return (double)(end - slow_from);
    uint32_t k = kr[lo];
    if (ev->track[k] != ev->track[i] && ev->start_ns[k] > end + 5000)
        return 0;
    int64_t ready = diag_ready_ns(ev, k), from = ready > slow_from ? ready : slow_from;
    *from_out = from;
    return end > from ? (double)(end - from) : 0;
}

/* The first collective kernel of source src in step k that starts at or
 * after t: its index in W (its wait there, how late the rank
 * arrived, is what a delay before it can have cost the step: a rank that
 * still came early would have waited for its peers anyway), else SIZE_MAX. */
static size_t next_collective(const waitidx *W, uint16_t src, uint32_t k, int64_t t)
{
    size_t j = diag_kernel_after(W, src, k, t);
    for (; j != SIZE_MAX && j < W->off[src + 1] && W->step[j] == k; j++)
        if (W->wait[j] >= 0)
            return j;
    return SIZE_MAX;
}

/* A slow copy's wait: [from, end) on its source in its step, before the
 * collective j (SIZE_MAX: none). */
typedef struct waitiv {
    uint32_t step;
    uint16_t src;
    size_t   j;
    int64_t  from, end;
} waitiv;

static int waitiv_cmp(const void *a, const void *b)
{
    const waitiv *x = a, *y = b;
    if (x->src != y->src) return x->src < y->src ? -1 : 1;
    if (x->step != y->step) return x->step < y->step ? -1 : 1;
    if (x->j != y->j) return x->j < y->j ? -1 : 1;
    return (x->from > y->from) - (x->from < y->from);
}

/* What the waits iv[0..) of one source in one step (sorted by waitiv_cmp)
 * cost together, added to *cost: each moment once, and before a
 * collective at most how late the rank arrived at it. Returns how many of
 * iv were theirs (iv[0]'s source and step). */
static size_t waits_once(const waitidx *W, const waitiv *iv, size_t n, double *cost)
{
    size_t b = 0;
    while (b < n && iv[b].src == iv[0].src && iv[b].step == iv[0].step) {
        int64_t to = INT64_MIN;
        double before = 0; /* the waits before one collective (or none) */
        size_t e = b;
        for (; e < n && iv[e].src == iv[b].src && iv[e].step == iv[b].step && iv[e].j == iv[b].j; e++) {
            int64_t from = iv[e].from > to ? iv[e].from : to;
            if (iv[e].end > from)
                before += (double)(iv[e].end - from);
            if (iv[e].end > to)
                to = iv[e].end;
        }
        if (iv[b].j != SIZE_MAX && before > W->wait[iv[b].j])
            before = W->wait[iv[b].j];
        *cost += before;
        b = e;
    }
    return b;
}

static int copies_run(const dctx *D, diag_state *S, size_t task, finds *out)
{
    (void)task;
    const teller_events *ev = D->ev;
    const teller_store *st = D->st;
    groups bm = {0}, vg = {0}; /* durations per (name, size); volumes per (name, source) */
    kmap m = {0};
    uint32_t *kr = NULL; /* kernels by (source, start), once a copy is slow */
    size_t nkr = 0;
    int rc = -1;
    typedef struct cp {
        double t, bytes, slow, usual;
        uint32_t event, step, name;
        uint16_t src;
    } cp;
    cp *c = NULL;
    size_t ccap = 0;
    waitiv *iv = NULL; /* every slow copy's wait */
    size_t niv = 0, ivcap = 0;
    /* usual duration of a copy of this name and size */
    for (size_t i = 0; i < ev->n; i++) {
        const teller_args *a = ev->layer[i] == TELLER_LAYER_MEMCPY ? teller_store_event_args(st, (uint32_t)i) : NULL;
        if (!a || a->bytes <= 0)
            continue;
        if (diag_groups_add(&bm, ((uint64_t)ev->name[i] << 8) | (uint64_t)size_bucket(a->bytes), (double)ev->dur_ns[i]))
            goto oom;
    }
    double *usual = diag_groups_medians(&bm);
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
        if ((double)ev->dur_ns[i] > 3 * u + 2000) {
            if (!kr && kernels_by_start(D, &kr, &nkr)) /* the first slow copy's */
                goto oom2;
            int64_t from, end = ev->start_ns[i] + ev->dur_ns[i];
            double cost = copy_cost(D, kr, nkr, (uint32_t)i, u, &from);
            x->slow += cost;
            if (cost > 0) {
                if (TELLER_GROW(iv, ivcap, niv + 1))
                    goto oom2;
                iv[niv++] = (waitiv){ev->step[i], ev->source[i], next_collective(&S->waits, ev->source[i], ev->step[i], end),
                                     from, end};
            }
        }
    }
    /* what each source's slow copies of each step cost together */
    kmap lk = {0};
    double *link = NULL;
    size_t lcap = 0;
    teller_sort(iv, niv, sizeof *iv, waitiv_cmp);
    for (size_t a = 0; a < niv;) {
        double *l = kmap_slot(&lk, (uint64_t)iv[a].src << 32 | iv[a].step, (void **)&link, &lcap, sizeof *link);
        if (!l) {
            kmap_free(&lk);
            free(link);
            goto oom2;
        }
        a += waits_once(&S->waits, iv + a, niv - a, l);
    }
    /* usual volume per (name, source) over all steps, absent steps counting
     * zero: one median per (name, source), not one per (name, source, step) */
    double *vols = malloc((D->nsteps ? D->nsteps : 1) * sizeof *vols), *vmeds = NULL;
    if (!vols)
        goto oom2;
    for (size_t ix = 0; ix < m.n; ix++)
        if (diag_groups_add(&vg, ((uint64_t)c[ix].name << 16) | c[ix].src, c[ix].bytes))
            goto oom3;
    if (!(vmeds = malloc((vg.keys.n ? vg.keys.n : 1) * sizeof *vmeds)))
        goto oom3;
    for (size_t g = 0; g < vg.keys.n; g++) {
        size_t nv = 0; /* a (name, source, step) key is one per step: at most nsteps */
        for (size_t q = 0; q < vg.s[g].n && nv < D->nsteps; q++)
            vols[nv++] = vg.s[g].v[q];
        while (nv < D->nsteps)
            vols[nv++] = 0;
        vmeds[g] = diag_median(vols, nv);
    }
    for (size_t ix = 0; ix < m.n; ix++) {
        cp *x = &c[ix];
        double vmed = vmeds[kmap_get(&vg.keys, ((uint64_t)x->name << 16) | x->src, 0)];
        double per_byte = x->bytes > 0 ? x->usual / x->bytes : 0;
        double extra_vol = x->bytes > 4 * vmed + 1e6 ? (x->bytes - vmed) * per_byte : 0;
        if (x->slow > 10000) {
            uint32_t li = kmap_get(&lk, (uint64_t)x->src << 32 | x->step, 0);
            cand cd = {.det = TELLER_FAULT_PCIE_DEGRADATION, .rank = teller_store_source_c(st, x->src)->rank, .name = x->name,
                       .layer = TELLER_LAYER_MEMCPY, .excess = x->slow, .ratio = x->t / (x->usual + 1), .actual = x->t,
                       .usual = x->usual, .event = x->event, .peer = -1, .link_wait = li != TELLER_NONE ? link[li] : 0};
            if (finds_add(out, x->step, &cd))
                goto oom3;
        } else if (extra_vol > 20000) {
            cand cd = {.det = TELLER_FAULT_KV_SWAP, .rank = teller_store_source_c(st, x->src)->rank, .name = x->name,
                       .layer = TELLER_LAYER_MEMCPY, .excess = extra_vol, .ratio = x->bytes / (vmed + 1), .actual = x->t,
                       .usual = vmed * per_byte, .event = x->event, .peer = -1};
            if (finds_add(out, x->step, &cd))
                goto oom3;
        }
    }
    rc = 0;
oom3:
    free(vols);
    free(vmeds);
    kmap_free(&lk);
    free(link);
oom2:
    free(usual);
oom:
    free(iv);
    free(c);
    diag_groups_free(&bm);
    diag_groups_free(&vg);
    kmap_free(&m);
    free(kr);
    return rc;
}

/* Copies of two or more names slowed on one rank in one step (host to
 * device and back) are one degraded link, which slows every copy alike:
 * the copy name with the most time on the rank lost the most and names
 * the finding, as the heaviest kernel names a throttled GPU. Its cost is
 * what they cost together (link: each moment of waiting once, before a
 * collective no more than the rank's lateness there), or the most any
 * one name cost when that is more. Summed per name, a wait when one copy
 * queues behind the other came to up to twice what the step lost; the
 * most any one name cost alone left out the others' waits, half of a
 * degraded link's cost on single-GPU runs. */
static size_t merge_pcie(const dctx *D, cand *c, const size_t *idx, size_t n)
{
    (void)D;
    if (n < 2)
        return SIZE_MAX;
    size_t heavy = idx[0];
    double cost = 0;
    for (size_t q = 0; q < n; q++) {
        if (c[idx[q]].actual > c[heavy].actual)
            heavy = idx[q];
        if (c[idx[q]].excess > cost)
            cost = c[idx[q]].excess;
    }
    if (c[heavy].link_wait > cost)
        cost = c[heavy].link_wait;
    c[heavy].excess = cost;
    return heavy;
}

/* Engine-wide copy volume (swapping on every rank) is one finding, led by
 * the lowest rank, costing the most any rank's swap cost. */
static void lead_swap(step_acc *s)
{
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
        return;
    for (size_t a = 0; a < s->n; a++)
        if (s->c[a].det == TELLER_FAULT_KV_SWAP && a != lead)
            s->c[a].det = TELLER_FAULT_NONE;
    s->c[lead].excess = sum;
}

static int copies_merge(const dctx *D, diag_state *S, uint32_t k)
{
    if (merge_by_rank(D, &S->steps[k], TELLER_FAULT_PCIE_DEGRADATION, merge_pcie))
        return -1;
    lead_swap(&S->steps[k]);
    return 0;
}

const diag_detector diag_row_copies = {.name = "copies", .scope = DIAG_PER_RUN, .round = 2, .reads = DIAG_S_WAITS,
                                       .writes = DIAG_S_STEPS, .run = copies_run, .merge = copies_merge};
