/*
 * comm.c - the collectives (row collectives): transfers against the usual
 * for their op and size (slow links, stalled sends), instances a rank
 * never joined (hangs), slow transfers of one step merged into one link;
 * and the horizontal view (row late: who arrived last at each collective,
 * how long the others waited).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "detector.h"
#include "teller/tree.h"

typedef struct inst {
    uint32_t c;        /* collective index */
    uint32_t step;
    double   transfer; /* shortest member duration */
    double   bytes;
    int      p2p;
    uint32_t opname;   /* normalised op: its index in the run's op names (op_id) */
} inst;

/* The normalised op names of the run's collectives, each once. */
typedef struct opnames {
    char  **v;
    size_t  n, cap;
} opnames;

/* The index of name among names, added when new; UINT32_MAX out of memory. */
static uint32_t op_id(opnames *names, const char *name)
{
    for (size_t i = 0; i < names->n; i++)
        if (!strcmp(names->v[i], name))
            return (uint32_t)i;
    char *copy = strdup(name);
    if (!copy || TELLER_GROW(names->v, names->cap, names->n + 1)) {
        free(copy);
        return UINT32_MAX;
    }
    names->v[names->n] = copy;
    return (uint32_t)names->n++;
}

static void opnames_free(opnames *names)
{
    for (size_t i = 0; i < names->n; i++)
        free(names->v[i]);
    free(names->v);
}

/* The first rank of collective c's process group ("Process Group Ranks",
 * e.g. "[2, 3]") that has no member in it and whose trace is loaded; -1
 * when there is none or the trace does not list the group's ranks. A run
 * that hangs in its only step (or the first instance of its group) has no
 * complete instance to tell the missing rank from. */
static int32_t pg_missing(const dctx *D, const teller_collective *cc)
{
    const teller_coll_member *mem = teller_store_coll_members(D->st);
    uint32_t pg_ranks = D->member[cc->first_member].pg_ranks;
    const char *p = pg_ranks ? teller_store_str(D->st, pg_ranks) : NULL;
    long r;
    while (p && teller_pg_ranks_next(&p, &r)) {
        int present = 0, loaded = 0;
        for (uint32_t q = 0; q < cc->num_members; q++)
            present |= mem[cc->first_member + q].rank == r;
        for (size_t s = 0; s < teller_store_num_sources(D->st); s++)
            loaded |= teller_store_source_c(D->st, (uint32_t)s)->rank == r;
        if (!present && loaded)
            return (int32_t)r;
    }
    return -1;
}

/* Whether rank's trace had begun by t: one of its sources has an event
 * that starts by then (its extent, teller_tree_extent). */
static int traced_by(const dctx *D, int32_t rank, int64_t t)
{
    for (size_t s = 0; s < D->nsrc; s++) {
        int64_t first, end;
        teller_tree_extent(D->st, (uint32_t)s, &first, &end);
        if (teller_store_source_c(D->st, (uint32_t)s)->rank == rank && first <= t)
            return 1;
    }
    return 0;
}

/* A transfer's usual is a latency plus a time per element: usual =
 * r * (elements + E0), r the median of transfer / (elements + E0) of its
 * op; kernels without sizes use the op's median transfer. */
#define XFER_E0 131072.0

/* The run's collectives, as the detector reads them. */
typedef struct collscan {
    const dctx *D;
    size_t      nc;
    inst       *in;       /* per collective */
    kmap        km;       /* collective key -> its slot in maxm */
    uint32_t   *maxm;     /* per key: the members expected, the most seen */
    size_t      mcap;
    groups      bm;       /* per (op, sized): transfer per element */
    double     *usual, *spread; /* their medians and spreads */
    opnames     names;
} collscan;

/* How many members each key's instances have: the most seen. */
static int expected_members(collscan *C)
{
    const teller_collective *co = teller_store_collectives(C->D->st);
    for (size_t c = 0; c < C->nc; c++) {
        uint32_t ix = kmap_get(&C->km, co[c].key, 1);
        if (ix == TELLER_NONE)
            return -1;
        if (ix >= C->mcap) {
            size_t old = C->mcap;
            if (TELLER_GROW(C->maxm, C->mcap, (size_t)ix + 1))
                return -1;
            memset(C->maxm + old, 0, (C->mcap - old) * sizeof *C->maxm);
        }
        if (co[c].num_members > C->maxm[ix])
            C->maxm[ix] = co[c].num_members;
    }
    return 0;
}

/* Each instance's step, transfer (its shortest member), size and op; and
 * each op's usual transfer per element. */
static int instances(collscan *C)
{
    const teller_store *st = C->D->st;
    const teller_collective *co = teller_store_collectives(st);
    char buf[256];
    for (size_t c = 0; c < C->nc; c++) {
        inst *x = &C->in[c];
        const teller_member_row *dm = C->D->member + co[c].first_member;
        x->c = (uint32_t)c;
        x->step = dm[0].step;
        x->transfer = INFINITY;
        for (uint32_t m = 0; m < co[c].num_members; m++) {
            if ((double)dm[m].dur < x->transfer)
                x->transfer = (double)dm[m].dur;
            if (dm[m].step < x->step)
                x->step = dm[m].step;
        }
        x->bytes = (double)dm[0].elems;
        teller_name_normalize(teller_store_str(st, dm[0].name), buf, sizeof buf);
        x->p2p = strstr(buf, "SendRecv") != NULL || dm[0].dir;
        x->opname = op_id(&C->names, buf);
        if (x->opname == UINT32_MAX)
            return -1;
    }
    for (size_t c = 0; c < C->nc; c++) {
        inst *x = &C->in[c];
        if (diag_groups_add(&C->bm, ((uint64_t)x->opname << 1) | (x->bytes > 0),
                            x->bytes > 0 ? x->transfer / (x->bytes + XFER_E0) : x->transfer))
            return -1;
    }
    C->usual = diag_groups_medians(&C->bm);
    C->spread = C->usual ? diag_groups_spreads(&C->bm, C->usual) : NULL;
    return C->spread ? 0 : -1;
}

/* Instance x when short of a member, or running for seconds: a hang, its
 * root the rank that never launched it (the ranks of the key's other
 * instances, else of its process group; -1 when that rank's trace is not
 * loaded), the ranks that waited the evidence. 1 when x is a hang (or a
 * member whose trace had not begun yet), 0 when it is judged as a
 * transfer, -1 out of memory. */
static int judge_hang(collscan *C, const inst *x, double u, finds *out)
{
    const dctx *D = C->D;
    const teller_collective *co = teller_store_collectives(D->st);
    const teller_coll_member *mem = teller_store_coll_members(D->st);
    const teller_collective *cc = &co[x->c];
    uint32_t exp_members = C->maxm[kmap_get(&C->km, cc->key, 0)];
    if (cc->num_members >= exp_members && x->transfer <= 5e9)
        return 0;
    int32_t missing = -1;
    for (size_t c2 = 0; c2 < C->nc && missing < 0; c2++) {
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
    if (missing < 0)
        missing = pg_missing(D, cc);
    const teller_member_row *dm = D->member + cc->first_member;
    int64_t t0 = INT64_MAX;
    for (uint32_t m = 0; m < cc->num_members; m++)
        if (dm[m].start < t0)
            t0 = dm[m].start;
    if (missing >= 0 && x->transfer <= 5e9) {
        if (!traced_by(D, missing, t0))
            return 1; /* the missing rank's trace began after it: not traced yet, not a hang */
    }
    if (missing < 0 && x->transfer <= 5e9)
        return 0;
    cand cd = {.det = TELLER_FAULT_NCCL_HANG, .rank = missing, .name = dm[0].name,
               .layer = TELLER_LAYER_KERNEL, .excess = x->transfer, .ratio = x->transfer / (u + 1), .usual = u,
               .event = TELLER_NONE, .members = cc->num_members, .peer = mem[cc->first_member].rank};
    return finds_add(out, x->step, &cd) ? -1 : 1;
}

static int32_t src_node(const teller_store *st, uint16_t src) { return teller_store_source_c(st, src)->node; }

/* Instance x as a transfer against its op's usual u (spread sd): one
 * member alone cannot tell its transfer from its wait for peers; a slow
 * transfer cost what it took over its usual and how far the op's
 * transfers stray anyway (three spreads), not only what it took over the
 * bound that called it slow. Its root is the sender of a stalled send, or
 * the member on the highest node; its peer the member on the lowest. */
static int judge_transfer(const collscan *C, const inst *x, double u, double sd, finds *out)
{
    const teller_store *st = C->D->st;
    const teller_coll_member *mem = teller_store_coll_members(st);
    const teller_collective *cc = &teller_store_collectives(st)[x->c];
    const teller_member_row *dm = C->D->member;
    double ex = x->transfer - u - 3 * sd;
    if (x->transfer <= 2.5 * u + 50000 || ex <= 50000 || cc->num_members < 2)
        return 0;
    uint32_t pick = cc->first_member;
    for (uint32_t m = 0; m < cc->num_members; m++) {
        uint32_t q = cc->first_member + m;
        if (x->p2p) {
            if (dm[q].dir > 0) {
                pick = q;
                break;
            }
        } else if (src_node(st, dm[q].src) > src_node(st, dm[pick].src)) {
            pick = q;
        }
    }
    uint32_t e = mem[pick].kernel;
    int32_t peer = -1, peer_node = INT32_MAX;
    for (uint32_t m = 0; m < cc->num_members; m++) {
        uint32_t q = cc->first_member + m;
        int32_t nd = src_node(st, dm[q].src);
        if (q != pick && nd < peer_node) {
            peer = mem[q].rank;
            peer_node = nd;
        }
    }
    cand cd = {.det = x->p2p ? TELLER_FAULT_PP_SEND_DELAY : TELLER_FAULT_SLOW_LINK, .rank = mem[pick].rank,
               .name = dm[pick].name, .layer = TELLER_LAYER_KERNEL, .excess = ex, .ratio = x->transfer / (u + 1),
               .actual = x->transfer, .usual = u, .event = e, .peer = peer, .ran_from = dm[pick].start,
               .ran_to = dm[pick].start + dm[pick].dur};
    return finds_add(out, x->step, &cd);
}

static int collectives_run(const dctx *D, diag_state *S, size_t task, finds *out)
{
    (void)S;
    (void)task;
    collscan C = {.D = D, .nc = teller_store_num_collectives(D->st)};
    int rc = -1;
    if (!(C.in = malloc((C.nc ? C.nc : 1) * sizeof *C.in)) || expected_members(&C) || instances(&C))
        goto out;
    for (size_t c = 0; c < C.nc; c++) {
        const inst *x = &C.in[c];
        if (x->step >= D->nsteps)
            continue;
        uint32_t ix = kmap_get(&C.bm.keys, ((uint64_t)x->opname << 1) | (x->bytes > 0), 0);
        double scale = x->bytes > 0 ? x->bytes + XFER_E0 : 1;
        double u = ix == TELLER_NONE ? x->transfer : C.usual[ix] * scale;
        double sd = ix == TELLER_NONE ? 0 : C.spread[ix] * scale;
        int hang = judge_hang(&C, x, u, out);
        if (hang < 0 || (!hang && judge_transfer(&C, x, u, sd, out)))
            goto out;
    }
    rc = 0;
out:
    free(C.usual);
    free(C.spread);
    diag_groups_free(&C.bm);
    kmap_free(&C.km);
    free(C.maxm);
    free(C.in);
    opnames_free(&C.names);
    return rc;
}

/* Several slow pipeline transfers in one step, or slow cross-node
 * collectives, are one degraded link; the root is on the node they share
 * (link_root). */
static int is_transfer(const cand *c)
{
    return (c->det == TELLER_FAULT_PP_SEND_DELAY || c->det == TELLER_FAULT_SLOW_LINK) && !c->reference;
}

/* a transfer candidate: its operator name, its place in the step and
 * when its kernel ran (a candidate without one spans nothing) */
typedef struct xfer {
    uint32_t name;
    size_t   at;
    int64_t  start, end;
} xfer;

static int cmp_start(const void *x, const void *y)
{
    const xfer *a = x, *b = y;
    return a->start != b->start ? (a->start < b->start ? -1 : 1) : (a->at > b->at) - (a->at < b->at);
}

/* What slowed transfers cost the step together: transfers that ran at
 * the same time (each tensor-parallel rank sending its share to the next
 * stage) held it back once, by the slowest of them; transfers one after
 * the other (a layer's all-reduce, then the next layer's) add up. idx is
 * sorted by start. */
static double transfers_cost(const step_acc *s, const xfer *idx, size_t n)
{
    double sum = 0;
    for (size_t a = 0; a < n;) {
        double most = s->c[idx[a].at].excess;
        int64_t end = idx[a].end;
        size_t b = a + 1;
        for (; b < n && idx[b].start < end; b++) {
            if (s->c[idx[b].at].excess > most)
                most = s->c[idx[b].at].excess;
            if (idx[b].end > end)
                end = idx[b].end;
        }
        sum += most;
        a = b;
    }
    return sum;
}

static int cmp_xfer(const void *x, const void *y)
{
    const xfer *a = x, *b = y;
    return a->name != b->name ? (a->name < b->name ? -1 : 1) : (a->at > b->at) - (a->at < b->at);
}

static int32_t cand_node(const teller_store *st, int32_t rank)
{
    int32_t src = rank >= 0 ? teller_store_source_of_rank(st, rank) : -1;
    return src >= 0 ? teller_store_source_c(st, (uint32_t)src)->node : -1;
}

/* The lowest rank of node n, or -1 when no rank is on it. */
static int32_t node_first_rank(const teller_store *st, int32_t n)
{
    int32_t root = INT32_MAX;
    for (size_t q = 0; q < teller_store_num_sources(st); q++) {
        const teller_source *so = teller_store_source_c(st, (uint32_t)q);
        if (n >= 0 && so->node == n && so->rank < root)
            root = so->rank;
    }
    return root == INT32_MAX ? -1 : root;
}

/* The degraded link's node among step s's transfer candidates, marked
 * settled: the node the most of them touch at either end (a node's link
 * slows its transfers to both neighbours of a pipeline, so the node they
 * share is the one between them); the higher (receiving) node when two
 * touch as many (one link's two ends, which its transfers cannot tell
 * apart), the other one then in *other. Each as its lowest rank; -1 when
 * no candidate's node is known, *other -1 when the node is clear; -2 out
 * of memory. */
static int32_t link_root(const teller_store *st, step_acc *s, int32_t *other)
{
    int32_t (*ends)[2] = malloc((s->n ? s->n : 1) * sizeof *ends); /* per transfer: its two ends' nodes */
    size_t n = 0;
    if (!ends)
        return -2;
    for (size_t a = 0; a < s->n; a++)
        if (is_transfer(&s->c[a])) {
            ends[n][0] = cand_node(st, s->c[a].rank);
            ends[n][1] = cand_node(st, s->c[a].peer);
            n++;
            s->c[a].det = TELLER_FAULT_NONE;
        }
    int32_t best = -1, second = -1;
    uint32_t best_n = 0, second_n = 0;
    for (size_t a = 0; a < n; a++)
        for (int e = 0; e < 2; e++) {
            int32_t x = ends[a][e];
            if (x < 0 || x == best || x == second || (e == 1 && ends[a][1] == ends[a][0]))
                continue;
            uint32_t touch = 0;
            for (size_t b = 0; b < n; b++)
                touch += ends[b][0] == x || ends[b][1] == x;
            if (touch > best_n || (touch == best_n && x > best)) {
                second = best, second_n = best_n;
                best = x, best_n = touch;
            } else if (touch > second_n || (touch == second_n && x > second)) {
                second = x, second_n = touch;
            }
        }
    free(ends);
    *other = second >= 0 && second_n == best_n ? node_first_rank(st, second) : -1;
    return node_first_rank(st, best);
}

/* Several slow pipeline transfers in step k, or slow cross-node
 * collectives, are one degraded link (above). 0, or -1 out of memory. */
static int collectives_merge(const dctx *D, diag_state *S, uint32_t k)
{
    xfer *idx = NULL;
    size_t icap = 0;
    step_acc *s = &S->steps[k];
    size_t n = 0;
    int cross = 0;
    for (size_t a = 0; a < s->n; a++) {
        if (!is_transfer(&s->c[a]))
            continue;
        if (n == icap) {
            xfer *g = realloc(idx, (icap = icap ? 2 * icap : 64) * sizeof *idx);
            if (!g) {
                free(idx);
                return -1;
            }
            idx = g;
        }
        idx[n++] = (xfer){s->c[a].name, a, s->c[a].ran_from, s->c[a].ran_to};
        cross |= s->c[a].det == TELLER_FAULT_SLOW_LINK;
    }
    /* one stalled send among healthy ones stays a send stall */
    if (n == 0 || (n == 1 && !cross)) {
        free(idx);
        return 0;
    }
    qsort(idx, n, sizeof *idx, cmp_start);
    double sum = transfers_cost(s, idx, n);
    /* The root operator is the one whose transfers lost the step the
     * most time together (a slow link slows every all-reduce of every
     * layer, not one large all-gather), at its costliest instance. */
    qsort(idx, n, sizeof *idx, cmp_xfer);
    size_t best = idx[0].at;
    double best_sum = -1;
    for (size_t a = 0; a < n;) {
        size_t b = a, top = idx[a].at;
        double op = 0;
        for (; b < n && idx[b].name == idx[a].name; b++) {
            op += s->c[idx[b].at].excess;
            if (s->c[idx[b].at].excess > s->c[top].excess)
                top = idx[b].at;
        }
        if (op > best_sum) {
            best_sum = op;
            best = top;
        }
        a = b;
    }
    cand t = s->c[best];
    int32_t other, root = link_root(D->st, s, &other);
    if (root == -2) {
        free(idx);
        return -1;
    }
    t.det = TELLER_FAULT_SLOW_LINK;
    t.excess = sum;
    t.rank = root < 0 ? t.rank : root;
    s->c[best] = t;
    free(idx);
    if (other < 0)
        return 0;
    /* both ends said: the other end's node, next (the same cost, a hair
     * less, so that it ranks right after) */
    s->c[best].both_ends = 1;
    s->c[best].peer = other;
    t.rank = other;
    t.peer = s->c[best].rank;
    t.excess = nextafter(sum, 0);
    return steps_add(S->steps, D->nsteps, k, &t);
}

const diag_detector diag_row_collectives = {.name = "collectives", .scope = DIAG_PER_RUN, .round = 1,
                                            .writes = DIAG_S_STEPS, .run = collectives_run,
                                            .merge = collectives_merge};

/* The horizontal view of every step: at each collective of the step with
 * two or more members, who arrived last (started its kernel last) and how
 * long the others waited for it. */
static int late_run(const dctx *D, diag_state *S, size_t task, finds *out)
{
    (void)task;
    (void)out;
    const teller_collective *co = teller_store_collectives(D->st);
    size_t cells = (size_t)D->nsteps * D->nsrc;
    S->late_last = calloc(cells + 1, sizeof *S->late_last);
    S->late_insts = calloc(D->nsteps + 1, sizeof *S->late_insts);
    S->late_wait = calloc(cells + 1, sizeof *S->late_wait);
    if (!S->late_last || !S->late_insts || !S->late_wait)
        return -1;
    for (size_t c = 0; c < teller_store_num_collectives(D->st); c++) {
        if (co[c].num_members < 2)
            continue;
        const teller_member_row *dm = D->member + co[c].first_member, *last = dm;
        for (uint32_t m = 0; m < co[c].num_members; m++)
            if (dm[m].start > last->start)
                last = &dm[m];
        uint32_t step = last->step;
        if (step >= D->nsteps)
            continue;
        double w = 0;
        for (uint32_t m = 0; m < co[c].num_members; m++)
            w += (double)(last->start - dm[m].start);
        size_t cell = (size_t)step * D->nsrc + last->src;
        S->late_last[cell]++;
        S->late_wait[cell] += w;
        S->late_insts[step]++;
    }
    return 0;
}

static void late_release(const dctx *D, diag_state *S)
{
    (void)D;
    free(S->late_last);
    free(S->late_insts);
    free(S->late_wait);
}

const diag_detector diag_row_late = {.name = "late", .scope = DIAG_PER_RUN, .round = 1, .writes = DIAG_S_LATE,
                                     .run = late_run, .release = late_release};
