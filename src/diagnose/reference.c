/*
 * reference.c - a healthy reference run as a second yardstick (teller
 * diagnose --baseline). A run judged only against itself cannot see what
 * slows every step alike: a GPU throttled for the whole recording, a
 * kernel that regressed in every step, a one-step recording. The
 * reference run is diagnosed like any run, and what its steps that no
 * finding flags did is kept: per kind of step (tree.h teller_step_class:
 * kind and annotation family) its yardstick, and per kind, rank and
 * operator the operator's usual time in such a step (the median over
 * those steps, a step without it counting zero) and how far it strays.
 *
 * The run's row `reference` then tallies each rank's operator time per
 * step the same way and makes a candidate of every operator that took
 * longer than the reference's usual beyond three of its spreads: compute
 * kernels (three or more slowed names on one rank are one throttled GPU),
 * a collective's transfer (its shortest member: the time after the last
 * arrival, not the waiting), copies, kernel launches, allocations, a
 * synchronize's overhang past the GPU's last work, and the time no host op
 * of the process ran (holes of 100 us or more, named after the op that
 * ended the longest). A kind of step of the run is judged against the
 * reference's usual for its kind and work where the run has no yardstick
 * for a step, or where its steps are slower than the reference's as a
 * whole; its other steps keep their own yardstick and the findings judged
 * against the run (docs/DIAGNOSE.md, "Against a reference run").
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "detector.h"
#include "judge.h"
#include "teller/tree.h"

/* A host hole this long or longer counts as time no host op ran. */
#define HOLE_MIN_NS 100000
/* An operator is over its reference usual beyond this many of its spreads,
 * and by 10 % and TELLER_FAULT_MATERIAL_NS. */
#define OP_SPREADS 3.0
#define OP_SHARE   0.10
/* Slowed compute kernel names on one rank in one step that are one
 * throttled GPU (as kernels.c), each 10 % or more over. */
#define THROTTLE_NAMES 3
/* The spread of a step judged against a reference kind too small to say
 * its own, whose operators say none either (yardstick.c's prior). */
#define SPREAD_PRIOR 0.02
/* Steps a small group keeps for judging a step against those nearest in
 * work (yardstick.c's NEAR_STEPS and NEAR_WORK). */
#define REF_NEAR 4
#define REF_NEAR_WORK 1.25

/* One kind of step of the reference and its yardstick. */
typedef struct ref_group {
    teller_step_kind kind;
    char     family[48];
    uint32_t n;                 /* the steps its yardstick is made of */
    int      fitted, by_work;   /* as teller_step_group, a line only through annotation work */
    double   base_ns, per_work_ns, spread, med_ns; /* med_ns: the median of its steps */
    uint32_t nnear;             /* not fitted: its steps' work and duration */
    int64_t  near_work[REF_NEAR];
    double   near_dur[REF_NEAR];
} ref_group;

/* One operator's usual time in one kind of step on one rank: per step
 * (a step without it counting zero) and per call (over the steps with
 * it), each with its spread (1.4826 x the median absolute deviation). */
typedef struct ref_op {
    double usual, spread, per_call, call_spread; /* ns */
} ref_op;

struct teller_diag_reference {
    ref_group *g;
    size_t     ng;
    /* its first step, when no finding flagged it: its kind (an index into
     * g, SIZE_MAX none) and duration */
    size_t     first_group;
    double     first_ns;
    kmap       ops;   /* op_key -> op[] */
    ref_op    *op;
    size_t     opcap;
    size_t     steps;
};

/* One tallied operator of one source in one step. name TELLER_NONE with
 * layer OTHER: the host's holes, event the op that ended the longest; with
 * layer KERNEL: every compute kernel (as facts.c's OP facts count them). */
typedef struct rt_entry {
    uint32_t step, name, event;
    uint8_t  layer;
    double   t, longest;   /* its time in the step; its longest instance (the longest hole) */
    uint32_t count;
    int64_t  hole_from, hole_to;
} rt_entry;

typedef struct rtab {
    kmap      m;
    rt_entry *e;
    size_t    cap;
} rtab;

struct ref_state {
    rtab              *tab;   /* per source */
    busyidx            host;  /* when each source's host ops ran (each source's part built by its task) */
    kmap               xfer;  /* collective member kernel -> its instance's transfer */
    double            *xv;
    size_t             xcap;
    teller_step_class *cls;   /* per step */
    double            *usual; /* per step: the reference's usual for a step of its kind and work, 0 none */
    double            *scale; /* per step: its GPU work's scale against the reference's kind, 1 but for a kind
                               * whose usual follows its work: the usual for its work over the kind's median */
    double            *dev;   /* per (step, source): how far its operators within their usual strayed from it,
                               * the median of |time / usual - 1|; -1 none */
    const ref_group  **rg;    /* per step: the reference's group of its kind, NULL none */
    double             first; /* step 0's usual when the reference's first step, of its kind and longer than
                               * usual[0], is (classify); 0 otherwise */
};

/* ---- keys ---- */

static uint64_t op_key(teller_step_kind kind, const char *family, int32_t rank, uint8_t layer, const char *name)
{
    struct {
        uint64_t fam, name;
        int32_t  kind, rank, layer, pad;
    } k = {kmap_hash_bytes(family, strlen(family)), kmap_hash_bytes(name, strlen(name)), (int32_t)kind, rank, layer, 0};
    return kmap_hash_bytes(&k, sizeof k);
}

static const char *entry_name(const teller_store *st, const rt_entry *e)
{
    if (e->name == TELLER_NONE)
        return e->layer == TELLER_LAYER_KERNEL ? "(compute kernels)" : "(host idle)";
    return teller_store_str(st, e->name);
}

static int is_compute_sum(const rt_entry *e) { return e->name == TELLER_NONE && e->layer == TELLER_LAYER_KERNEL; }

static const ref_group *find_group(const teller_diag_reference *r, const teller_step_class *c)
{
    for (size_t i = 0; i < r->ng; i++)
        if (r->g[i].kind == c->kind && !strcmp(r->g[i].family, c->family))
            return &r->g[i];
    return NULL;
}

/* The reference's usual duration for a step of its kind g and work w, -1
 * when none: the line, the median, or the median of the steps nearest in
 * work. */
static double group_usual(const ref_group *g, int64_t w)
{
    if (g->fitted)
        return g->base_ns + (g->by_work && w > 0 ? g->per_work_ns * (double)w : 0);
    double v[REF_NEAR];
    uint32_t n = 0;
    for (uint32_t i = 0; i < g->nnear; i++) {
        int64_t x = g->near_work[i];
        if ((w > 0 || x > 0) && (w <= 0 || x <= 0 || fabs(log((double)x / (double)w)) > log(REF_NEAR_WORK)))
            continue;
        v[n++] = g->near_dur[i];
    }
    return n ? diag_median(v, n) : -1;
}

/* ---- the tally ---- */

static rt_entry *entry(rtab *T, uint32_t step, uint32_t name, uint8_t layer)
{
    uint32_t k[3] = {step, name, layer};
    rt_entry *e = kmap_slot(&T->m, kmap_hash_bytes(k, sizeof k), (void **)&T->e, &T->cap, sizeof *T->e);
    if (e && !e->count) {
        e->step = step;
        e->name = name;
        e->layer = layer;
        e->event = TELLER_NONE;
    }
    return e;
}

static void entry_add(rt_entry *e, double t, double own, uint32_t event)
{
    e->t += t;
    e->count++;
    if (e->event == TELLER_NONE || own > e->longest) {
        e->longest = own;
        e->event = event;
    }
}

/* What of op i counts: a collective member's transfer, a synchronize's
 * overhang past its GPU's work, else its duration; -1 not tallied. */
static double op_time(const dctx *D, const diag_state *S, uint32_t i)
{
    const teller_events *ev = D->ev;
    uint8_t L = ev->layer[i];
    int gpu = (ev->flags[i] & TELLER_F_GPU) != 0;
    if (gpu && (L == TELLER_LAYER_KERNEL || L == TELLER_LAYER_MEMCPY)) {
        uint32_t x = kmap_get(&S->ref->xfer, i, 0);
        return x != UINT32_MAX ? S->ref->xv[x] : (double)ev->dur_ns[i];
    }
    if (gpu || !is_api(L))
        return -1;
    const char *nm = teller_store_str(D->st, ev->name[i]);
    if (strstr(nm, "Synchronize"))
        return (double)diag_overhang(&S->ends, ev->source[i], ev->start_ns[i], ev->start_ns[i] + ev->dur_ns[i]);
    return teller_name_is_launch(nm) || strstr(nm, "Malloc") || strstr(nm, "alloc") || strstr(nm, "Free") ||
                   strstr(nm, "MemAlloc")
               ? (double)ev->dur_ns[i]
               : -1;
}

/* The holes of step k's window on source src in which no host op ran. */
static int tally_holes(const dctx *D, diag_state *S, rtab *T, uint16_t src, uint32_t k)
{
    const teller_step *rows = teller_store_steps(D->st);
    int32_t rank = teller_store_source_c(D->st, src)->rank;
    size_t hi, lo = diag_step_rows(D->st, k, &hi);
    for (size_t r = lo; r < hi; r++) {
        if (rows[r].rank != rank)
            continue;
        diag_hole *H = NULL;
        size_t nh = 0, cap = 0;
        if (diag_busy_holes(&S->ref->host, src, rows[r].start_ns, rows[r].end_ns, TELLER_NONE, &H, &cap, &nh))
            return -1;
        rt_entry *e = NULL;
        for (size_t h = 0; h < nh; h++) {
            double len = (double)(H[h].b - H[h].a);
            if (len < HOLE_MIN_NS || H[h].ev == TELLER_NONE)
                continue;
            if (!e && !(e = entry(T, k, TELLER_NONE, TELLER_LAYER_OTHER))) {
                free(H);
                return -1;
            }
            if (e->event == TELLER_NONE || len > e->longest)
                e->hole_from = H[h].a, e->hole_to = H[h].b;
            entry_add(e, len, len, H[h].ev);
        }
        free(H);
    }
    return 0;
}

static int tally(const dctx *D, diag_state *S, uint16_t src)
{
    rtab *T = &S->ref->tab[src];
    const teller_events *ev = D->ev;
    for (size_t i = D->range[src]; i < D->range[src + 1]; i++) {
        if (ev->step[i] >= D->nsteps)
            continue;
        double t = op_time(D, S, (uint32_t)i);
        if (t < 0)
            continue;
        rt_entry *e = entry(T, ev->step[i], ev->name[i], ev->layer[i]);
        if (!e)
            return -1;
        entry_add(e, t, t, (uint32_t)i);
        if (ev->layer[i] == TELLER_LAYER_KERNEL && (ev->flags[i] & TELLER_F_GPU) && !(ev->flags[i] & TELLER_F_COMM)) {
            if (!(e = entry(T, ev->step[i], TELLER_NONE, TELLER_LAYER_KERNEL)))
                return -1;
            entry_add(e, t, t, (uint32_t)i);
        }
    }
    for (uint32_t k = 0; k < D->nsteps; k++)
        if (tally_holes(D, S, T, src, k))
            return -1;
    return 0;
}

/* ---- judging the run's operators against the reference ---- */

/* The kind an operator over its reference usual points to. */
static teller_fault op_fault(const teller_store *st, const rt_entry *e)
{
    if (e->name == TELLER_NONE)
        return TELLER_FAULT_CPU_CONTENTION;
    const char *nm = teller_store_str(st, e->name);
    if (e->layer == TELLER_LAYER_MEMCPY)
        return TELLER_FAULT_PCIE_DEGRADATION;
    if (e->layer == TELLER_LAYER_KERNEL) {
        if (!teller_name_is_comm(nm))
            return TELLER_FAULT_KERNEL_REGRESSION;
        return strstr(nm, "SendRecv") || strstr(nm, "Send_") || strstr(nm, "Recv_") ? TELLER_FAULT_PP_SEND_DELAY
                                                                                    : TELLER_FAULT_SLOW_LINK;
    }
    if (strstr(nm, "Synchronize"))
        return TELLER_FAULT_SYNC_STALL;
    return teller_name_is_launch(nm) ? TELLER_FAULT_LAUNCH_LATENCY : TELLER_FAULT_MALLOC_STORM;
}

static int cmp_entry(const void *x, const void *y)
{
    const rt_entry *a = *(rt_entry *const *)x, *b = *(rt_entry *const *)y;
    if (a->step != b->step)
        return a->step < b->step ? -1 : 1;
    return a->t > b->t ? -1 : a->t < b->t; /* the most time first */
}

/* The reference's usual time of e's operator on rank in a step of its
 * kind and work, and its spread in *sd; 0 when the reference never ran
 * it there, -1 when the reference has no step of its kind. */
static double ref_usual(const dctx *D, const diag_state *S, int32_t rank, const rt_entry *e, double *sd)
{
    const ref_group *g = S->ref->rg[e->step];
    double f = S->ref->scale[e->step];
    *sd = 0;
    if (!g || f <= 0)
        return -1;
    const teller_diag_reference *R = D->opts->reference;
    uint32_t ix = kmap_get((kmap *)&R->ops, op_key(g->kind, g->family, rank, e->layer, entry_name(D->st, e)), 0);
    if (ix == UINT32_MAX)
        return 0;
    const ref_op *o = &R->op[ix];
    if (e->name == TELLER_NONE && e->layer == TELLER_LAYER_OTHER) { /* a step's holes: per step */
        *sd = o->spread * f;
        return o->usual * f;
    }
    /* per call, for as many calls as the step made (its batch may launch
     * more); GPU work also as long as the step's work makes it */
    double w = (D->ev->flags[e->event] & TELLER_F_GPU) ? f : 1;
    *sd = o->call_spread * e->count * w;
    return o->per_call * e->count * w;
}

/* e against the reference's usual for its operator on rank in a step of
 * its kind (into *usual, as ref_usual): the candidate, or det NONE when it
 * is within its usual. */
static cand judge_entry(const dctx *D, const diag_state *S, int32_t rank, const rt_entry *e, double *usual)
{
    cand c = {.det = TELLER_FAULT_NONE, .rank = rank, .peer = -1};
    double sd, u = *usual = ref_usual(D, S, rank, e, &sd);
    double ex = e->t - u;
    if (u < 0 || is_compute_sum(e) || ex < OP_SPREADS * sd || ex < OP_SHARE * u || ex < TELLER_FAULT_MATERIAL_NS)
        return c;
    c.det = op_fault(D->st, e);
    c.name = e->name == TELLER_NONE ? D->ev->name[e->event] : e->name;
    c.layer = e->name == TELLER_NONE ? D->ev->layer[e->event] : e->layer;
    c.event = e->event;
    c.excess = ex;
    c.ratio = u > 0 ? e->t / u : 16;
    c.actual = e->t;
    c.usual = u;
    c.reference = 1;
    if (!(D->ev->flags[e->event] & TELLER_F_GPU))
        c.host_delay = ex;
    if (c.det == TELLER_FAULT_LAUNCH_LATENCY)
        c.launched = e->count;
    else if (c.det == TELLER_FAULT_MALLOC_STORM)
        c.calls = e->count;
    else if (c.det == TELLER_FAULT_CPU_CONTENTION)
        c.hole_from = e->hole_from, c.hole_to = e->hole_to;
    return c;
}

/* Source src's operators of each step against the reference: a candidate
 * each, the slowed compute kernels of a step one throttled GPU when
 * THROTTLE_NAMES or more. */
static int compare(const dctx *D, diag_state *S, uint16_t src, finds *out)
{
    const rtab *T = &S->ref->tab[src];
    int32_t rank = teller_store_source_c(D->st, src)->rank;
    size_t n = T->m.n;
    rt_entry **v = malloc((n ? n : 1) * sizeof *v);
    cand *c = malloc((n ? n : 1) * sizeof *c);
    double *u = malloc((n ? n : 1) * sizeof *u), *rel = malloc((n ? n : 1) * sizeof *rel);
    int rc = v && c && u && rel ? 0 : -1;
    for (size_t i = 0; i < n && !rc; i++)
        v[i] = &T->e[i];
    if (!rc)
        qsort(v, n, sizeof *v, cmp_entry);
    for (size_t i = 0; i < n && !rc; i++)
        c[i] = judge_entry(D, S, rank, v[i], &u[i]);
    for (size_t a = 0, b; a < n && !rc; a = b) {
        size_t all = SIZE_MAX, heavy = SIZE_MAX; /* every compute kernel; the slowed one with the most time */
        uint32_t slowed = 0;
        for (b = a; b < n && v[b]->step == v[a]->step; b++) {
            if (is_compute_sum(v[b]))
                all = b;
            if (c[b].det == TELLER_FAULT_KERNEL_REGRESSION && !slowed++)
                heavy = b;
        }
        /* every compute kernel against the reference's */
        int throttled = slowed >= THROTTLE_NAMES && all != SIZE_MAX && u[all] > 0 && v[all]->t > u[all];
        if (throttled) {
            cand thr = c[heavy];
            thr.det = TELLER_FAULT_GPU_THROTTLE;
            thr.actual = v[all]->t;
            thr.usual = u[all];
            thr.excess = v[all]->t - u[all];
            thr.ratio = v[all]->t / u[all];
            rc = finds_add(out, v[a]->step, &thr);
        }
        size_t nrel = 0;
        for (size_t q = a; q < b && !rc; q++) {
            if (c[q].det != TELLER_FAULT_NONE && !(throttled && c[q].det == TELLER_FAULT_KERNEL_REGRESSION))
                rc = finds_add(out, v[q]->step, &c[q]);
            if (c[q].det == TELLER_FAULT_NONE && v[q]->name != TELLER_NONE && u[q] >= TELLER_FAULT_MATERIAL_NS)
                rel[nrel++] = fabs(v[q]->t / u[q] - 1);
        }
        if (nrel)
            S->ref->dev[(size_t)v[a]->step * D->nsrc + src] = diag_median(rel, nrel);
    }
    free(v);
    free(c);
    free(u);
    free(rel);
    return rc;
}

static int is_transfer(const cand *c)
{
    return c->reference && (c->det == TELLER_FAULT_SLOW_LINK || c->det == TELLER_FAULT_PP_SEND_DELAY);
}

/* Slowed transfers of three or more ranks in step k, across nodes, are
 * one degraded link (as comm.c merges the run's own): named on the
 * receiving (higher) node's lowest rank, at the operator that lost the
 * most; what they cost together is the most one of them lost (they ran
 * at once). Two ranks' are the two ends of one transfer, both kept. */
static void merge_link(const dctx *D, step_acc *sa)
{
    size_t n = 0, best = SIZE_MAX;
    int32_t node_lo = INT32_MAX, node_hi = -1, root = INT32_MAX;
    for (size_t a = 0; a < sa->n; a++) {
        if (!is_transfer(&sa->c[a]))
            continue;
        int32_t node = diag_node_of_rank(D->st, sa->c[a].rank);
        node_lo = node < node_lo ? node : node_lo;
        node_hi = node > node_hi ? node : node_hi;
        n++;
        if (best == SIZE_MAX || sa->c[a].excess > sa->c[best].excess)
            best = a;
    }
    if (n < 3 || node_lo == node_hi)
        return;
    for (size_t a = 0; a < sa->n; a++)
        if (is_transfer(&sa->c[a]) && diag_node_of_rank(D->st, sa->c[a].rank) == node_hi && sa->c[a].rank < root)
            root = sa->c[a].rank;
    cand link = sa->c[best];
    for (size_t a = 0; a < sa->n; a++)
        if (is_transfer(&sa->c[a])) {
            if (sa->c[a].rank == root && sa->c[a].name == link.name)
                link.event = sa->c[a].event;
            sa->c[a].det = TELLER_FAULT_NONE;
        }
    link.det = TELLER_FAULT_SLOW_LINK;
    link.rank = root;
    sa->c[best] = link;
}

/* Every rank that ran compute kernels in step k slowed them together
 * against the reference (a throttle on each): more work than the step's
 * annotation states, as when the engine recomputes preempted requests,
 * rather than every GPU throttled at once. The throttles become one
 * preemption on the lowest rank, named after its step annotation. */
static int reference_merge(const dctx *D, diag_state *S, uint32_t k)
{
    if (!S->ref || !D->opts->reference)
        return 0;
    step_acc *sa = &S->steps[k];
    merge_link(D, sa);
    size_t ran = 0, thr = 0, first = SIZE_MAX;
    for (size_t q = 0; q < D->nsrc; q++)
        ran += D->cell[(size_t)k * D->nsrc + q].kernel_ns > 0;
    for (size_t a = 0; a < sa->n; a++)
        if (sa->c[a].reference && sa->c[a].det == TELLER_FAULT_GPU_THROTTLE) {
            thr++;
            if (first == SIZE_MAX || sa->c[a].rank < sa->c[first].rank)
                first = a;
        }
    if (ran < 2 || thr < ran)
        return 0;
    const teller_step *rows = teller_store_steps(D->st);
    size_t hi, lo = diag_step_rows(D->st, k, &hi);
    uint32_t marker = TELLER_NONE, name = TELLER_NONE;
    for (size_t r = lo; r < hi && marker == TELLER_NONE; r++)
        if (rows[r].rank == sa->c[first].rank) {
            marker = rows[r].marker;
            name = teller_store_step_annotation(D->st, r);
        }
    if (marker == TELLER_NONE)
        return 0;
    cand p = sa->c[first];
    for (size_t a = 0; a < sa->n; a++)
        if (sa->c[a].reference && sa->c[a].det == TELLER_FAULT_GPU_THROTTLE) {
            if (sa->c[a].excess > p.excess)
                p.excess = sa->c[a].excess;
            sa->c[a].det = TELLER_FAULT_NONE;
        }
    p.det = TELLER_FAULT_PREEMPTION;
    p.name = name;
    p.layer = TELLER_LAYER_ENGINE;
    p.event = marker;
    sa->c[first] = p;
    return 0;
}

/* ---- the row ---- */

/* Each collective member kernel's transfer: its instance's shortest
 * member (what remains once the last member arrived). */
static int index_transfers(const dctx *D, struct ref_state *R)
{
    const teller_collective *co = teller_store_collectives(D->st);
    const teller_coll_member *mem = teller_store_coll_members(D->st);
    for (size_t c = 0; c < teller_store_num_collectives(D->st); c++) {
        if (co[c].num_members < 2)
            continue;
        double x = INFINITY;
        for (uint32_t m = 0; m < co[c].num_members; m++)
            if ((double)D->member[co[c].first_member + m].dur < x)
                x = (double)D->member[co[c].first_member + m].dur;
        for (uint32_t m = 0; m < co[c].num_members; m++) {
            double *slot = kmap_slot(&R->xfer, mem[co[c].first_member + m].kernel, (void **)&R->xv, &R->xcap, sizeof *R->xv);
            if (!slot)
                return -1;
            *slot = x;
        }
    }
    return 0;
}

/* A batch of new prompts whose annotation states their number, not
 * their tokens (SGLang's EXTEND and MIXED), says nothing of its work that
 * another run's steps could be matched by. */
static int unmatched_work(const teller_step_class *c)
{
    return (c->kind == TELLER_STEP_PREFILL || c->kind == TELLER_STEP_MIXED) && c->prefill_tokens < 0;
}

/* Each step's kind, and the reference's group and scale for it. */
static int classify(const dctx *D, const teller_diagnosis *d, struct ref_state *R)
{
    uint32_t ns = D->nsteps ? D->nsteps : 1;
    R->cls = malloc(ns * sizeof *R->cls);
    R->scale = calloc(ns, sizeof *R->scale);
    R->usual = calloc(ns, sizeof *R->usual);
    R->rg = calloc(ns, sizeof *R->rg);
    R->dev = malloc(ns * (D->nsrc + 1) * sizeof *R->dev);
    if (!R->cls || !R->scale || !R->usual || !R->rg || !R->dev)
        return -1;
    for (size_t i = 0; i < ns * (D->nsrc + 1); i++)
        R->dev[i] = -1;
    for (uint32_t k = 0; k < D->nsteps; k++) {
        diag_step_class(D, k, d->steps[k].dur_rank, &R->cls[k]);
        const teller_diag_reference *ref = D->opts->reference;
        const ref_group *g = ref && !unmatched_work(&R->cls[k]) ? find_group(ref, &R->cls[k]) : NULL;
        double u = g ? group_usual(g, R->cls[k].work) : -1;
        if (g && u > 0 && g->med_ns > 0) {
            R->rg[k] = g;
            R->usual[k] = u;
            R->scale[k] = g->fitted && g->by_work ? u / g->med_ns : 1;
            /* a recording's first step holds what starting the profiler
             * cost, in the reference's as in this one's: the first step of
             * a kind the reference's first step was is usual up to that */
            if (k == 0 && ref->first_group < ref->ng && g == &ref->g[ref->first_group] && ref->first_ns > u)
                R->first = ref->first_ns;
        }
    }
    return 0;
}

static void ref_state_free(struct ref_state *R, size_t nsrc)
{
    if (!R)
        return;
    for (size_t s = 0; R->tab && s < nsrc; s++) {
        kmap_free(&R->tab[s].m);
        free(R->tab[s].e);
    }
    free(R->tab);
    diag_busy_free(&R->host);
    kmap_free(&R->xfer);
    free(R->xv);
    free(R->cls);
    free(R->scale);
    free(R->usual);
    free(R->rg);
    free(R->dev);
    free(R);
}

static int reference_prepare(const dctx *D, diag_state *S)
{
    if (!D->opts->reference && !S->ref_make)
        return 0;
    struct ref_state *R = calloc(1, sizeof *R);
    if (!R)
        return -1;
    S->ref = R;
    R->tab = calloc(D->nsrc + 1, sizeof *R->tab);
    if (!R->tab || diag_busy_init(&R->host, D->nsrc) || index_transfers(D, R) || classify(D, S->out, R))
        return -1;
    return 0;
}

static int reference_run(const dctx *D, diag_state *S, size_t src, finds *out)
{
    if (!S->ref)
        return 0;
    if (diag_busy_part(&S->ref->host, D, DIAG_BUSY_HOST, NULL, src) || tally(D, S, (uint16_t)src))
        return -1;
    return D->opts->reference ? compare(D, S, (uint16_t)src, out) : 0;
}

static void reference_release(const dctx *D, diag_state *S)
{
    ref_state_free(S->ref, D->nsrc);
    S->ref = NULL;
}

const diag_detector diag_row_reference = {.name = "reference", .scope = DIAG_PER_SOURCE, .round = 2,
                                          .reads = DIAG_S_GPU_BUSY, .writes = DIAG_S_REFERENCE | DIAG_S_STEPS,
                                          .prepare = reference_prepare, .run = reference_run,
                                          .merge = reference_merge, .release = reference_release};

/* ---- the step's yardstick against the reference ---- */

/* How far step k's named operators that kept within their usual strayed
 * from the reference's anyway, on the rank where they strayed least (a fault
 * moves one rank's operators, or its own ones; the rank it left alone
 * shows how far two recordings differ), -1 unknown: the spread of a step
 * against a reference whose kind has too few steps to measure its own. */
static double op_spread(const dctx *D, const diag_state *S, uint32_t k)
{
    double least = -1;
    for (size_t q = 0; q < D->nsrc; q++) {
        double x = S->ref->dev[(size_t)k * D->nsrc + q];
        if (x >= 0 && (least < 0 || x < least))
            least = x;
    }
    return least >= 0 ? 1.4826 * least : -1;
}

/* The spread against an unfitted reference kind rg: the larger of how
 * far its own steps strayed (near_spread) and of ops, the operators'
 * spread (op_spread, -1 unknown); a prior when neither is known. */
static double unfitted_spread(const ref_group *rg, double ops)
{
    if (ops >= 0)
        return ops > rg->spread ? ops : rg->spread;
    return rg->spread > 0 ? rg->spread : SPREAD_PRIOR;
}

/* The spread a kind of step g of the run is judged with against the
 * reference's kind rg: rg's own when it has enough steps to measure it,
 * else the median of its steps' operator spreads (op_spread), else a
 * prior. v: scratch, overwritten. */
static double group_spread(const dctx *D, const diag_state *S, const teller_step_group *g, const ref_group *rg, double *v)
{
    if (rg->fitted)
        return rg->spread;
    uint32_t n = 0;
    for (uint32_t i = 0; i < g->n; i++) {
        uint32_t k = S->out->group_steps[g->first + i];
        double x = S->ref->rg[k] ? op_spread(D, S, k) : -1;
        if (x >= 0)
            v[n++] = x;
    }
    return unfitted_spread(rg, n ? diag_median(v, n) : -1);
}

/* Step k's usual from the reference's first step (classify), 0 when it
 * has none: step 0 of a run judged against a reference alone. */
static double first_usual(const struct ref_state *R, uint32_t k)
{
    return R && k == 0 ? R->first : 0;
}

/* Step s against the reference's usual for its kind and work. */
static teller_diag_step against_reference(const dctx *D, const diag_state *S, const teller_diag_step *s, uint32_t k)
{
    const ref_group *g = S->ref->rg[k];
    teller_diag_step alt = *s;
    double first = first_usual(S->ref, k);
    alt.usual_ns = (int64_t)llround(first > 0 ? first : S->ref->usual[k]);
    alt.excess_ns = s->dur_ns > alt.usual_ns ? s->dur_ns - alt.usual_ns : 0;
    alt.spread = g->fitted ? g->spread : unfitted_spread(g, op_spread(D, S, k));
    alt.by_reference = 1;
    return alt;
}

/* (judge.h) A step its own run judges keeps only the findings judged
 * against the run: in a healthy pair of runs the operators of a kind
 * differ by their batches (a new collective, a slower GEMM), which the
 * run's own detectors measure against steps of the same run. */
int diag_reference_yardsticks(const dctx *D, diag_state *S, double spreads)
{
    if (!D->opts->reference || !S->ref)
        return 0;
    teller_diagnosis *d = S->out;
    double *v = malloc((D->nsteps + 1) * sizeof *v);
    if (!v)
        return -1;
    char lack[200] = "";
    size_t nlack = 0, at = 0, nbatch = 0;
    for (size_t gi = 0; gi < d->ngroups; gi++) {
        const teller_step_group *g = &d->groups[gi];
        uint32_t n = 0;
        const ref_group *rg = NULL;
        uint32_t k0 = 0;
        for (uint32_t i = 0; i < g->n; i++) {
            uint32_t k = d->group_steps[g->first + i];
            if (S->ref->rg[k]) {
                rg = S->ref->rg[k];
                k0 = k;
                v[n++] = (double)d->steps[k].dur_ns / S->ref->usual[k];
            }
        }
        if (!rg && unmatched_work(&S->ref->cls[d->group_steps[g->first]]))
            nbatch++;
        else if (!rg && nlack++ < 3 && at < sizeof lack)
            at += (size_t)snprintf(lack + at, sizeof lack - at, "%s%s", nlack > 1 ? ", " : "", g->family);
        /* the kind's median step against its usual in the reference,
         * beyond the step alarm's edge (yardstick.c diag_slowness) */
        int slower = 0;
        if (rg) {
            double over = diag_median(v, n) - 1, edge = spreads * group_spread(D, S, g, rg, v);
            if (edge < TELLER_FAULT_MATERIAL_SHARE)
                edge = TELLER_FAULT_MATERIAL_SHARE;
            slower = over >= edge && over * S->ref->usual[k0] >= TELLER_FAULT_MATERIAL_NS;
        }
        for (uint32_t i = 0; i < g->n; i++) {
            uint32_t k = d->group_steps[g->first + i];
            teller_diag_step *s = &d->steps[k];
            if (S->ref->rg[k] && (slower || s->usual_ns < 0))
                *s = against_reference(D, S, s, k);
            else /* judged against the run, by what the run itself says is usual */
                for (size_t a = 0; a < S->steps[k].n; a++)
                    if (S->steps[k].c[a].reference)
                        S->steps[k].c[a].det = TELLER_FAULT_NONE;
        }
    }
    free(v);
    if (nlack) {
        char note[400];
        snprintf(note, sizeof note,
                 "%zu of the run's %zu kind%s of step ha%s no step of its kind and work in the reference run (%s%s): "
                 "judged against the run alone",
                 nlack, d->ngroups, d->ngroups == 1 ? "" : "s", nlack == 1 ? "s" : "ve", lack, nlack > 3 ? ", ..." : "");
        diag_add_note(S, note);
    }
    if (nbatch)
        diag_add_note(S, "the run's prefill and mixed steps state how many prompts they batch, not their tokens: "
                         "no reference step can be matched to them by work, so they are judged against the run alone");
    return S->nomem ? -1 : 0;
}

int diag_reference_kind(const diag_state *S, uint32_t k, uint32_t *steps, diag_ref_how *how)
{
    const ref_group *g = S->ref ? S->ref->rg[k] : NULL;
    *steps = g ? g->n : 0;
    *how = first_usual(S->ref, k) > 0 ? DIAG_REF_FIRST
           : !g || !g->fitted      ? DIAG_REF_NEAR
           : g->by_work            ? DIAG_REF_LINE
                                   : DIAG_REF_MEDIAN;
    return g != NULL;
}

/* ---- making a reference ---- */

/* The median of v[0..n) and n0 zeros beside them, and 1.4826 x their
 * median absolute deviation in *sd. v is overwritten. */
static double median_zeros_sd(double *v, size_t n, size_t n0, double *sd)
{
    size_t all = n + n0;
    for (size_t i = n; i < all; i++)
        v[i] = 0;
    double m = diag_median(v, all);
    for (size_t i = 0; i < all; i++)
        v[i] = fabs(v[i] - m);
    *sd = 1.4826 * diag_median(v, all);
    return m;
}

/* How far the steps of an unfitted kind g stray from those nearest them
 * in work: 1.4826 x the median, over its steps that have such others, of
 * the step's relative distance from their median; 0 when none has (a
 * kind of one step, or of steps all of other works). */
static double near_spread(const ref_group *g)
{
    double dev[REF_NEAR], v[REF_NEAR];
    uint32_t nd = 0;
    for (uint32_t i = 0; i < g->nnear; i++) {
        uint32_t n = 0;
        for (uint32_t j = 0; j < g->nnear; j++) {
            int64_t a = g->near_work[i], b = g->near_work[j];
            if (j != i && ((a <= 0 && b <= 0) || (a > 0 && b > 0 && fabs(log((double)a / (double)b)) <= log(REF_NEAR_WORK))))
                v[n++] = g->near_dur[j];
        }
        double m = n ? diag_median(v, n) : 0;
        if (m > 0)
            dev[nd++] = fabs(g->near_dur[i] - m) / m;
    }
    return nd ? 1.4826 * diag_median(dev, nd) : 0;
}

static int make_groups(const teller_diagnosis *d, teller_diag_reference *r, double *v)
{
    r->g = calloc(d->ngroups ? d->ngroups : 1, sizeof *r->g);
    if (!r->g)
        return -1;
    r->ng = d->ngroups;
    for (size_t i = 0; i < d->ngroups; i++) {
        const teller_step_group *sg = &d->groups[i];
        ref_group *g = &r->g[i];
        g->kind = sg->kind;
        memcpy(g->family, sg->family, sizeof g->family);
        g->n = sg->nref;
        for (uint32_t q = 0; q < sg->nref; q++)
            v[q] = (double)d->steps[d->ref_steps[sg->ref_first + q]].dur_ns;
        double sd;
        g->med_ns = median_zeros_sd(v, sg->nref, 0, &sd);
        g->fitted = sg->fitted;
        g->spread = sg->spread;
        if (sg->fitted && sg->by_work && !sg->by_compute) {
            g->by_work = 1;
            g->base_ns = sg->base_ns;
            g->per_work_ns = sg->per_work_ns;
        } else if (sg->fitted) { /* the median: a compute line moves with what slows the run */
            g->base_ns = g->med_ns;
            if (sg->by_compute && g->med_ns > 0)
                g->spread = sd / g->med_ns;
        }
        for (uint32_t q = 0; q < sg->nref && q < REF_NEAR; q++) {
            const teller_diag_step *st = &d->steps[d->ref_steps[sg->ref_first + q]];
            g->near_work[g->nnear] = st->work;
            g->near_dur[g->nnear++] = (double)st->dur_ns;
        }
        if (!g->fitted)
            g->spread = near_spread(g);
    }
    return 0;
}

/* Every (kind, rank, operator)'s usual time per step over its kind's
 * reference steps. */
static int make_ops(const dctx *D, const diag_state *S, teller_diag_reference *r)
{
    const teller_diagnosis *d = S->out;
    uint8_t *is_ref = calloc(D->nsteps + 1, 1);
    groups gs = {0}, pc = {0}; /* per op key: time per step; per call */
    kmap kind_of = {0}; /* op key -> its group */
    uint32_t *gi = NULL;
    size_t gicap = 0;
    int rc = -1;
    if (!is_ref)
        goto done;
    for (size_t i = 0; i < d->ngroups; i++)
        for (uint32_t q = 0; q < d->groups[i].nref; q++)
            is_ref[d->ref_steps[d->groups[i].ref_first + q]] = 1;
    for (size_t s = 0; s < D->nsrc; s++) {
        const rtab *T = &S->ref->tab[s];
        int32_t rank = teller_store_source_c(D->st, (uint32_t)s)->rank;
        for (size_t i = 0; i < T->m.n; i++) {
            const rt_entry *e = &T->e[i];
            if (!is_ref[e->step])
                continue;
            uint32_t g = d->steps[e->step].group;
            uint64_t key = op_key(d->groups[g].kind, d->groups[g].family, rank, e->layer, entry_name(D->st, e));
            uint32_t *slot = kmap_slot(&kind_of, key, (void **)&gi, &gicap, sizeof *gi);
            if (!slot || diag_groups_add(&gs, key, e->t) || diag_groups_add(&pc, key, e->t / e->count))
                goto done;
            *slot = g;
        }
    }
    uint64_t *keys = malloc((gs.keys.n ? gs.keys.n : 1) * sizeof *keys);
    double *v = malloc((D->nsteps + 1) * sizeof *v);
    if (!keys || !v) {
        free(keys);
        free(v);
        goto done;
    }
    kmap_keys(&gs.keys, keys);
    rc = 0;
    for (size_t ix = 0; ix < gs.keys.n && !rc; ix++) {
        const samples *sm = &gs.s[ix];
        uint32_t nref = d->groups[gi[kmap_get(&kind_of, keys[ix], 0)]].nref;
        ref_op *o = kmap_slot(&r->ops, keys[ix], (void **)&r->op, &r->opcap, sizeof *r->op);
        if (!o) {
            rc = -1;
            break;
        }
        size_t n = sm->n < nref ? sm->n : nref;
        memcpy(v, sm->v, n * sizeof *v);
        o->usual = median_zeros_sd(v, n, nref - n, &o->spread);
        const samples *cs = &pc.s[kmap_get(&pc.keys, keys[ix], 0)];
        memcpy(v, cs->v, n * sizeof *v);
        o->per_call = median_zeros_sd(v, n, 0, &o->call_spread);
    }
    free(keys);
    free(v);
done:
    free(is_ref);
    free(gi);
    kmap_free(&kind_of);
    diag_groups_free(&gs);
    diag_groups_free(&pc);
    return rc;
}

int diag_reference_keep(const dctx *D, const diag_state *S, teller_diag_reference **out)
{
    teller_diag_reference *r = calloc(1, sizeof *r);
    double *v = malloc((D->nsteps + 1) * sizeof *v);
    if (!r || !v || !S->ref || make_groups(S->out, r, v) || make_ops(D, S, r)) {
        free(v);
        teller_diag_reference_free(r);
        return -1;
    }
    free(v);
    for (size_t i = 0; i < r->ng; i++)
        r->steps += r->g[i].n;
    r->first_group = SIZE_MAX;
    if (S->out->n && !S->out->steps[0].pred.abnormal) {
        r->first_group = S->out->steps[0].group;
        r->first_ns = (double)S->out->steps[0].dur_ns;
    }
    *out = r;
    return 0;
}

size_t teller_diag_reference_steps(const teller_diag_reference *r) { return r ? r->steps : 0; }
size_t teller_diag_reference_kinds(const teller_diag_reference *r) { return r ? r->ng : 0; }

void teller_diag_reference_free(teller_diag_reference *r)
{
    if (!r)
        return;
    free(r->g);
    kmap_free(&r->ops);
    free(r->op);
    free(r);
}
