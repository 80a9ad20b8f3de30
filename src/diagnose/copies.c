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

/* The kernels of source src by start: their event ids into *out (*n of
 * them). 0, or -1 out of memory. */
static int kernels_by_start(const dctx *D, size_t src, uint32_t **out, size_t *n)
{
    const teller_events *ev = D->ev;
    size_t k = 0;
    for (size_t i = D->range[src]; i < D->range[src + 1]; i++)
        k += (ev->flags[i] & TELLER_F_GPU) && ev->layer[i] == TELLER_LAYER_KERNEL;
    uint32_t *ids = malloc((k ? k : 1) * sizeof *ids), *tmp = malloc((k ? k : 1) * sizeof *tmp);
    if (!ids || !tmp) {
        free(ids);
        free(tmp);
        return -1;
    }
    k = 0;
    for (size_t i = D->range[src]; i < D->range[src + 1]; i++)
        if ((ev->flags[i] & TELLER_F_GPU) && ev->layer[i] == TELLER_LAYER_KERNEL)
            ids[k++] = (uint32_t)i;
    teller_sort_by_key(ids, tmp, k, ev->start_ns);
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
 * the step nothing. kr[0..n): the kernels of the copy's source by start. */
static double copy_cost(const dctx *D, const uint32_t *kr, size_t n, uint32_t i, double u, int64_t *from_out)
{
    const teller_events *ev = D->ev;
    int64_t end = ev->start_ns[i] + ev->dur_ns[i], slow_from = ev->start_ns[i] + (int64_t)u;
    size_t lo = 0, hi = n;
    while (lo < hi) { /* the first kernel starting at or after the copy's end */
        size_t mid = (lo + hi) / 2;
        if (ev->start_ns[kr[mid]] < end)
            lo = mid + 1;
        else
            hi = mid;
    }
    uint32_t p = ev->parent[i];
    int sync = p != TELLER_NONE && !(ev->flags[p] & TELLER_F_GPU) && ev->start_ns[p] + ev->dur_ns[p] >= end - 1000;
    *from_out = slow_from;
    if (sync || lo == n || ev->step[kr[lo]] != ev->step[i])
        return (double)(end - slow_from);
    uint32_t k = kr[lo];
    if (ev->track[k] != ev->track[i] && ev->start_ns[k] > end + 5000)
        return 0;
    int64_t ready = teller_ready_ns(ev, k), from = ready > slow_from ? ready : slow_from;
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

/* Per (name, step, source): its copies. */
typedef struct cp {
    double   t, bytes, slow, usual; /* slow: what its slow copies cost */
    uint32_t event, step, name;
    uint16_t src;
} cp;

/* What the row's tasks share, made once (copies_prepare): the run-wide
 * input of a per-source search, a median per (name, size) over every
 * rank's copies, merged from each source's (baseline.h). */
typedef struct copies_in {
    diag_medians usual; /* per (name, size): the copies' median duration */
} copies_in;

/* A source's copies, as the detector reads them. */
typedef struct copyscan {
    const dctx *D;
    diag_state *S;
    size_t      src;
    copies_in  *in; /* read only (diag_medians_get takes no const) */
    kmap        m;       /* (name, step, source) -> c */
    cp         *c;
    size_t      ccap;
    uint32_t   *kr;      /* kernels by (source, start), once a copy is slow */
    size_t      nkr;
    waitiv     *iv;      /* every slow copy's wait */
    size_t      niv, ivcap;
    kmap        lk;      /* (source, step) -> link */
    double     *link;    /* what the source's slow copies of each step cost together */
    size_t      lcap;
    groups      vg;      /* volumes per (name, source) */
    double     *vmeds;   /* their medians, absent steps counting zero */
} copyscan;

static uint64_t size_key(uint32_t name, int64_t bytes) { return ((uint64_t)name << 8) | (uint64_t)size_bucket(bytes); }

/* The bytes copy i moved, when it is a copy of a size; else 0. */
static int64_t copy_bytes(const teller_store *st, const teller_events *ev, size_t i)
{
    const teller_args *a = ev->layer[i] == TELLER_LAYER_MEMCPY ? teller_store_event_args(st, (uint32_t)i) : NULL;
    return a && a->bytes > 0 ? a->bytes : 0;
}

/* Source src's part of the run's usual copies (diag_part_fill): its
 * copies' durations per (name, size). */
static int copies_part(const dctx *D, const void *arg, size_t src, diag_part *part)
{
    (void)arg;
    const teller_events *ev = D->ev;
    for (size_t i = D->range[src]; i < D->range[src + 1]; i++) {
        int64_t bytes = copy_bytes(D->st, ev, i);
        if (bytes && diag_part_add(part, size_key(ev->name[i], bytes), (double)ev->dur_ns[i]))
            return -1;
    }
    return 0;
}

/* The usual duration of a copy of each name and size, over the run. */
static int copies_prepare(const dctx *D, diag_state *S)
{
    copies_in *in = S->copies = calloc(1, sizeof *S->copies);
    return in ? diag_medians_build(&in->usual, D, copies_part, NULL) : -1;
}

static void copies_release(const dctx *D, diag_state *S)
{
    (void)D;
    if (S->copies)
        diag_medians_free(&S->copies->usual);
    free(S->copies);
}

/* Every copy of the source into its (name, step) tally; a slow one (over
 * 3x its usual + 2 us) with what the work after it waited through. */
static int tally_copies(copyscan *C)
{
    const dctx *D = C->D;
    const teller_events *ev = D->ev;
    for (size_t i = D->range[C->src]; i < D->range[C->src + 1]; i++) {
        int64_t bytes = copy_bytes(D->st, ev, i);
        if (!bytes || ev->step[i] >= D->nsteps)
            continue;
        cp *x = kmap_slot(&C->m, nss_key(ev->name[i], ev->step[i], ev->source[i]), (void **)&C->c, &C->ccap, sizeof *C->c);
        if (!x)
            return -1;
        if (!x->t) {
            x->event = (uint32_t)i;
            x->step = ev->step[i];
            x->name = ev->name[i];
            x->src = ev->source[i];
        }
        double u = diag_medians_get(&C->in->usual, size_key(ev->name[i], bytes));
        x->t += (double)ev->dur_ns[i];
        x->bytes += (double)bytes;
        x->usual += u;
        if ((double)ev->dur_ns[i] <= 3 * u + 2000)
            continue;
        if (!C->kr && kernels_by_start(D, C->src, &C->kr, &C->nkr)) /* the first slow copy's */
            return -1;
        int64_t from, end = ev->start_ns[i] + ev->dur_ns[i];
        double cost = copy_cost(D, C->kr, C->nkr, (uint32_t)i, u, &from);
        x->slow += cost;
        if (cost > 0) {
            if (TELLER_GROW(C->iv, C->ivcap, C->niv + 1))
                return -1;
            C->iv[C->niv++] = (waitiv){ev->step[i], ev->source[i],
                                       next_collective(&C->S->waits, ev->source[i], ev->step[i], end), from, end};
        }
    }
    return 0;
}

/* What the source's slow copies of each step cost together. */
static int link_waits(copyscan *C)
{
    teller_sort(C->iv, C->niv, sizeof *C->iv, waitiv_cmp);
    for (size_t a = 0; a < C->niv;) {
        double *l = kmap_slot(&C->lk, (uint64_t)C->iv[a].src << 32 | C->iv[a].step, (void **)&C->link, &C->lcap,
                              sizeof *C->link);
        if (!l)
            return -1;
        a += waits_once(&C->S->waits, C->iv + a, C->niv - a, l);
    }
    return 0;
}

/* The usual volume per (name, source) over all steps, absent steps
 * counting zero: one median per (name, source), not one per (name,
 * source, step). */
static int usual_volumes(copyscan *C)
{
    const dctx *D = C->D;
    double *vols = malloc((D->nsteps ? D->nsteps : 1) * sizeof *vols);
    int rc = -1;
    if (!vols)
        return -1;
    for (size_t ix = 0; ix < C->m.n; ix++)
        if (diag_groups_add(&C->vg, ((uint64_t)C->c[ix].name << 16) | C->c[ix].src, C->c[ix].bytes))
            goto out;
    if (!(C->vmeds = malloc((C->vg.keys.n ? C->vg.keys.n : 1) * sizeof *C->vmeds)))
        goto out;
    for (size_t g = 0; g < C->vg.keys.n; g++) {
        size_t nv = 0; /* a (name, source, step) key is one per step: at most nsteps */
        for (size_t q = 0; q < C->vg.s[g].n && nv < D->nsteps; q++)
            vols[nv++] = C->vg.s[g].v[q];
        while (nv < D->nsteps)
            vols[nv++] = 0;
        C->vmeds[g] = diag_median(vols, nv);
    }
    rc = 0;
out:
    free(vols);
    return rc;
}

/* The tallies that are findings: slow copies that cost over 10 us, else a
 * volume over 4x the usual + 1 MB that cost over 20 us at the copies'
 * usual rate. */
static int copy_findings(copyscan *C, finds *out)
{
    const teller_store *st = C->D->st;
    for (size_t ix = 0; ix < C->m.n; ix++) {
        const cp *x = &C->c[ix];
        double vmed = C->vmeds[kmap_get(&C->vg.keys, ((uint64_t)x->name << 16) | x->src, 0)];
        double per_byte = x->bytes > 0 ? x->usual / x->bytes : 0;
        double extra_vol = x->bytes > 4 * vmed + 1e6 ? (x->bytes - vmed) * per_byte : 0;
        if (x->slow > 10000) {
            uint32_t li = kmap_get(&C->lk, (uint64_t)x->src << 32 | x->step, 0);
            cand cd = {.det = TELLER_FAULT_PCIE_DEGRADATION, .rank = teller_store_source_c(st, x->src)->rank, .name = x->name,
                       .layer = TELLER_LAYER_MEMCPY, .excess = x->slow, .ratio = x->t / (x->usual + 1), .actual = x->t,
                       .usual = x->usual, .event = x->event, .peer = -1, .link_wait = li != TELLER_NONE ? C->link[li] : 0};
            if (finds_add(out, x->step, &cd))
                return -1;
        } else if (extra_vol > 20000) {
            cand cd = {.det = TELLER_FAULT_KV_SWAP, .rank = teller_store_source_c(st, x->src)->rank, .name = x->name,
                       .layer = TELLER_LAYER_MEMCPY, .excess = extra_vol, .ratio = x->bytes / (vmed + 1), .actual = x->t,
                       .usual = vmed * per_byte, .event = x->event, .peer = -1};
            if (finds_add(out, x->step, &cd))
                return -1;
        }
    }
    return 0;
}

static int copies_run(const dctx *D, diag_state *S, size_t src, finds *out)
{
    copyscan C = {.D = D, .S = S, .src = src, .in = S->copies};
    int rc = tally_copies(&C) || link_waits(&C) || usual_volumes(&C) || copy_findings(&C, out) ? -1 : 0;
    kmap_free(&C.m);
    free(C.c);
    free(C.kr);
    free(C.iv);
    kmap_free(&C.lk);
    free(C.link);
    diag_groups_free(&C.vg);
    free(C.vmeds);
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

const diag_detector diag_row_copies = {.name = "copies", .scope = DIAG_PER_SOURCE, .round = 2, .reads = DIAG_S_WAITS,
                                       .writes = DIAG_S_STEPS, .prepare = copies_prepare, .run = copies_run,
                                       .merge = copies_merge, .release = copies_release};
