/*
 * tree.c - call-chain trees, ranks and nodes, collectives, clock offsets
 * and steps over a loaded store. See include/teller/tree.h for the order
 * of the passes and docs/ARCHITECTURE.md for the rules.
 *
 * Memory: the sort and the sweep borrow the not-yet-filled columns
 * (parent, first_child, next_sibling, step) as scratch, and the
 * permutation is applied in place by following cycles, so building the
 * trees adds no per-event memory beyond the correlation hash table, which
 * holds only API calls.
 */
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "teller/tree.h"
#include "tree_internal.h"
#include "../store/store_internal.h"
#include "../util/kmap.h"
#include "../util/pool.h"
#include "../util/vec.h"

teller_tree_opts teller_tree_defaults(void)
{
    teller_tree_opts o = {0};
    return o;
}

int teller_name_is_launch(const char *name)
{
    return strstr(name, "Launch") != NULL && !strstr(name, "HostFunc");
}

/* ---- pass 1: sort events by source, row, then time ---- */

/* Rows are (source, gpu?, pid, tid). Everything from here to the launch
 * links works on one source's events, [lo, hi) of the table once events
 * are grouped by source, so sources are sorted, nested and linked in
 * parallel (teller_tree_opts.jobs); a source's stages touch only its own
 * range of every column, and the result does not depend on the job count. */
typedef struct row_key {
    uint16_t source;
    uint8_t  gpu;
    int32_t  pid, tid;
} row_key;

static uint64_t row_hash(const row_key *k)
{
    uint64_t h = ((uint64_t)k->source * 0x9E3779B97F4A7C15ull) ^ ((uint64_t)(uint32_t)k->pid * 0xC2B2AE3D27D4EB4Full) ^
                 ((uint64_t)(uint32_t)k->tid * 0x165667B19E3779F9ull) ^ k->gpu;
    return h ^ (h >> 31);
}

/* Writes the row id of each event of [lo, hi) into rowid[lo..hi) and the
 * rows into *rows_out (caller frees). Returns the number of rows, or -1
 * (out of memory). */
static long assign_rows(const teller_events *ev, size_t lo, size_t hi, uint32_t *rowid, row_key **rows_out)
{
    size_t cap = 1024, nrows = 0, rcap = 0;
    row_key *rows = NULL;
    uint32_t *tab = malloc(cap * sizeof *tab);
    if (!tab)
        return -1;
    memset(tab, 0xff, cap * sizeof *tab);
    for (size_t i = lo; i < hi; i++) {
        row_key k = {ev->source[i], (uint8_t)((ev->flags[i] & TELLER_F_GPU) != 0), teller_event_pid(ev, i),
                     teller_event_tid(ev, i)};
        size_t j = row_hash(&k) & (cap - 1);
        for (;;) {
            uint32_t r = tab[j];
            if (r == TELLER_NONE) {
                if (TELLER_GROW(rows, rcap, nrows + 1)) {
                    free(tab);
                    free(rows);
                    return -1;
                }
                rows[nrows] = k;
                tab[j] = (uint32_t)nrows;
                rowid[i] = (uint32_t)nrows++;
                break;
            }
            if (rows[r].source == k.source && rows[r].gpu == k.gpu && rows[r].pid == k.pid && rows[r].tid == k.tid) {
                rowid[i] = r;
                break;
            }
            j = (j + 1) & (cap - 1);
        }
        if (nrows * 2 > cap) {
            /* grow and rehash */
            size_t ncap = cap * 2;
            uint32_t *nt = malloc(ncap * sizeof *nt);
            if (!nt) {
                free(tab);
                free(rows);
                return -1;
            }
            memset(nt, 0xff, ncap * sizeof *nt);
            for (size_t r = 0; r < nrows; r++) {
                size_t jj = row_hash(&rows[r]) & (ncap - 1);
                while (nt[jj] != TELLER_NONE)
                    jj = (jj + 1) & (ncap - 1);
                nt[jj] = (uint32_t)r;
            }
            free(tab);
            tab = nt;
            cap = ncap;
        }
    }
    free(tab);
    *rows_out = rows;
    return (long)nrows;
}

/* A row and its id, for ordering the rows of a source. */
typedef struct row_ref {
    row_key  k;
    uint32_t r;
} row_ref;

static int row_ref_cmp(const void *pa, const void *pb)
{
    const row_key *a = &((const row_ref *)pa)->k, *b = &((const row_ref *)pb)->k;
    if (a->source != b->source) return a->source < b->source ? -1 : 1;
    if (a->gpu != b->gpu) return a->gpu < b->gpu ? -1 : 1;
    if (a->pid != b->pid) return a->pid < b->pid ? -1 : 1;
    if (a->tid != b->tid) return a->tid < b->tid ? -1 : 1;
    return 0;
}

/* Orders events with equal start: longer first, then outer layer first. */
static int tie_less(const teller_events *ev, uint32_t a, uint32_t b)
{
    if (ev->dur_ns[a] != ev->dur_ns[b])
        return ev->dur_ns[a] > ev->dur_ns[b];
    if (ev->layer[a] != ev->layer[b])
        return ev->layer[a] < ev->layer[b];
    return a < b;
}

/* Sorts perm[lo..hi) by start, ties by tie_less. */
static void sort_row(const teller_events *ev, uint32_t *perm, uint32_t *tmp, size_t lo, size_t hi)
{
    teller_sort_by_key(perm + lo, tmp + lo, hi - lo, ev->start_ns);
    /* ties: insertion sort within runs of equal start */
    for (size_t i = lo + 1; i < hi; i++) {
        uint32_t x = perm[i];
        size_t j = i;
        while (j > lo && ev->start_ns[perm[j - 1]] == ev->start_ns[x] && tie_less(ev, x, perm[j - 1])) {
            perm[j] = perm[j - 1];
            j--;
        }
        perm[j] = x;
    }
}

/* Applies perm (new position k holds old event perm[k]; a permutation of
 * [lo, hi)) to the input columns in place, by cycles. perm[lo..hi) is
 * destroyed. */
static void apply_perm(teller_events *ev, uint32_t *perm, size_t lo, size_t hi)
{
    for (size_t k = lo; k < hi; k++) {
        if (perm[k] == k || perm[k] == TELLER_NONE)
            continue;
        int64_t s = ev->start_ns[k], d = ev->dur_ns[k];
        uint32_t nm = ev->name[k], co = ev->corr[k], ar = ev->args[k];
        uint8_t ly = ev->layer[k], fl = ev->flags[k];
        uint16_t so = ev->source[k];
        uint32_t tr = ev->track[k];
        size_t j = k;
        for (;;) {
            uint32_t src = perm[j];
            perm[j] = TELLER_NONE;
            if (src == k) {
                ev->start_ns[j] = s; ev->dur_ns[j] = d; ev->name[j] = nm; ev->corr[j] = co;
                ev->args[j] = ar; ev->layer[j] = ly; ev->flags[j] = fl; ev->source[j] = so;
                ev->track[j] = tr;
                break;
            }
            ev->start_ns[j] = ev->start_ns[src]; ev->dur_ns[j] = ev->dur_ns[src];
            ev->name[j] = ev->name[src]; ev->corr[j] = ev->corr[src]; ev->args[j] = ev->args[src];
            ev->layer[j] = ev->layer[src]; ev->flags[j] = ev->flags[src]; ev->source[j] = ev->source[src];
            ev->track[j] = ev->track[src];
            j = src;
        }
    }
}

/* Groups the events by source (stable: a counting sort), unless they
 * already are (one file per source appends them so); writes the range of
 * source s into [range[s], range[s+1]). Returns 0 or -1 (out of memory). */
static int group_by_source(teller_store *st, size_t *range)
{
    teller_events *ev = &st->ev;
    size_t ns = st->nsources;
    memset(range, 0, (ns + 1) * sizeof *range);
    int grouped = 1;
    for (size_t i = 0; i < ev->n; i++) {
        range[ev->source[i] + 1]++;
        grouped &= i == 0 || ev->source[i] >= ev->source[i - 1];
    }
    for (size_t s = 0; s < ns; s++)
        range[s + 1] += range[s];
    if (grouped)
        return 0;
    size_t *fill = malloc((ns ? ns : 1) * sizeof *fill);
    if (!fill)
        return -1;
    memcpy(fill, range, ns * sizeof *fill);
    uint32_t *perm = ev->step; /* scratch until the steps are cut */
    for (size_t i = 0; i < ev->n; i++)
        perm[fill[ev->source[i]]++] = (uint32_t)i;
    free(fill);
    apply_perm(ev, perm, 0, ev->n);
    return 0;
}

/* Sorts the events [lo, hi) of one source by row, then by time; the row
 * boundaries come back in *row_start (nrows+1 absolute indices, caller
 * frees). The sort borrows the parent, first_child and step columns of the
 * range as scratch. Returns 0 or -1 (out of memory). */
static int sort_source(teller_events *ev, size_t lo, size_t hi, size_t **row_start_out, long *nrows_out)
{
    uint32_t *rowid = ev->parent, *perm = ev->step, *tmp = ev->first_child; /* scratch */
    row_key *rows = NULL;
    long nrows = assign_rows(ev, lo, hi, rowid, &rows);
    if (nrows < 0)
        return -1;
    size_t nr = (size_t)nrows;
    row_ref *order = malloc((nr ? nr : 1) * sizeof *order);
    uint32_t *rank_of = malloc((nr ? nr : 1) * sizeof *rank_of);
    size_t *start = calloc(nr + 1, sizeof *start);
    size_t *fill = malloc((nr ? nr : 1) * sizeof *fill);
    if (!order || !rank_of || !start || !fill) {
        free(order); free(rank_of); free(start); free(fill); free(rows);
        return -1;
    }
    for (size_t r = 0; r < nr; r++)
        order[r] = (row_ref){rows[r], (uint32_t)r};
    teller_sort(order, nr, sizeof *order, row_ref_cmp);
    for (size_t r = 0; r < nr; r++)
        rank_of[order[r].r] = (uint32_t)r;
    /* counting sort by row position */
    for (size_t i = lo; i < hi; i++)
        start[rank_of[rowid[i]] + 1]++;
    start[0] = lo;
    for (size_t r = 0; r < nr; r++)
        start[r + 1] += start[r];
    memcpy(fill, start, nr * sizeof *fill);
    for (size_t i = lo; i < hi; i++)
        perm[fill[rank_of[rowid[i]]]++] = (uint32_t)i;
    for (size_t r = 0; r < nr; r++)
        sort_row(ev, perm, tmp, start[r], start[r + 1]);
    apply_perm(ev, perm, lo, hi);
    free(order);
    free(rank_of);
    free(fill);
    free(rows);
    *row_start_out = start;
    *nrows_out = nrows;
    return 0;
}

/* ---- pass 2: nesting and launch links ---- */

static int is_gpu_op(uint8_t layer)
{
    return teller_layer_is_gpu_work(layer) || layer == TELLER_LAYER_SYNC;
}

static int nest_cpu_rows(teller_events *ev, const size_t *row_start, long nrows)
{
    uint32_t *stack = NULL;
    size_t scap = 0;
    for (long r = 0; r < nrows; r++) {
        size_t lo = row_start[r], hi = row_start[r + 1];
        if (lo == hi || (ev->flags[lo] & TELLER_F_GPU))
            continue;
        size_t sp = 0;
        for (size_t i = lo; i < hi; i++) {
            if (ev->flags[i] & (TELLER_F_INSTANT | TELLER_F_COUNTER))
                continue; /* instants and counters stay roots */
            int64_t s = ev->start_ns[i], e = s + ev->dur_ns[i];
            while (sp > 0) {
                uint32_t t = stack[sp - 1];
                if (s >= ev->start_ns[t] && e <= ev->start_ns[t] + ev->dur_ns[t])
                    break;
                sp--;
            }
            if (sp > 0) {
                uint32_t t = stack[sp - 1];
                ev->parent[i] = t;
                ev->depth[i] = ev->depth[t] < UINT16_MAX ? (uint16_t)(ev->depth[t] + 1) : UINT16_MAX;
            }
            if (TELLER_GROW(stack, scap, sp + 1)) {
                free(stack);
                return -1;
            }
            stack[sp++] = (uint32_t)i;
        }
    }
    free(stack);
    return 0;
}

static uint64_t mix64(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    return x;
}

static int is_api_with_id(const teller_events *ev, size_t i)
{
    return (ev->layer[i] == TELLER_LAYER_RUNTIME || ev->layer[i] == TELLER_LAYER_DRIVER) && ev->corr[i];
}

/* Correlation ids are unique within a source: an open-addressing table of
 * the source's API calls keyed by correlation id, compared through the
 * columns. It lives in the source's range of the first_child column
 * (unused until build_children) whenever that is large enough, so linking
 * costs no per-event memory. Counts API calls that reuse an id in *dups.
 * Returns 0 or -1 (out of memory). */
static int link_gpu(teller_events *ev, size_t lo, size_t hi, uint64_t *dups)
{
    size_t napi = 0;
    for (size_t i = lo; i < hi; i++)
        napi += (size_t)is_api_with_id(ev, i);
    if (napi == 0)
        return 0;
    size_t cap = 64;
    while (cap < napi * 2)
        cap *= 2;
    uint32_t *tab = cap <= hi - lo ? ev->first_child + lo : malloc(cap * sizeof *tab);
    if (!tab)
        return -1;
    memset(tab, 0xff, cap * sizeof *tab);
    for (size_t i = lo; i < hi; i++) {
        if (!is_api_with_id(ev, i))
            continue;
        size_t j = mix64(ev->corr[i]) & (cap - 1);
        while (tab[j] != TELLER_NONE && ev->corr[tab[j]] != ev->corr[i])
            j = (j + 1) & (cap - 1);
        if (tab[j] == TELLER_NONE) {
            tab[j] = (uint32_t)i;
            continue;
        }
        /* the same id twice: keep the inner call if nested, else the first */
        uint32_t o = tab[j];
        int nested = ev->start_ns[i] >= ev->start_ns[o] &&
                     ev->start_ns[i] + ev->dur_ns[i] <= ev->start_ns[o] + ev->dur_ns[o];
        if (nested)
            tab[j] = (uint32_t)i;
        else
            (*dups)++;
    }
    for (size_t i = lo; i < hi; i++) {
        if (!(ev->flags[i] & TELLER_F_GPU) || !is_gpu_op(ev->layer[i]) || !ev->corr[i])
            continue;
        size_t j = mix64(ev->corr[i]) & (cap - 1);
        while (tab[j] != TELLER_NONE && ev->corr[tab[j]] != ev->corr[i])
            j = (j + 1) & (cap - 1);
        if (tab[j] == TELLER_NONE)
            continue;
        uint32_t p = tab[j];
        ev->parent[i] = p;
        ev->depth[i] = ev->depth[p] < UINT16_MAX ? (uint16_t)(ev->depth[p] + 1) : UINT16_MAX;
        /* kernels of a collective make their launch (and its op) COMM too */
        if (ev->flags[i] & TELLER_F_COMM)
            ev->flags[p] |= TELLER_F_COMM;
    }
    if (tab != ev->first_child + lo)
        free(tab);
    return 0;
}

/* Children lists of the events in [lo, hi): a parent is always of the
 * same source (CPU nesting and launch links stay inside one). */
static void build_children(teller_events *ev, size_t lo, size_t hi)
{
    for (size_t i = lo; i < hi; i++) {
        ev->first_child[i] = TELLER_NONE;
        ev->next_sibling[i] = TELLER_NONE;
    }
    for (size_t k = hi; k-- > lo;) {
        uint32_t p = ev->parent[k];
        if (p == TELLER_NONE)
            continue;
        ev->next_sibling[k] = ev->first_child[p];
        ev->first_child[p] = (uint32_t)k;
    }
}

/* Passes 1 and 2 for every source, one task per source. */
typedef struct source_pass {
    teller_events *ev;
    const size_t  *range;  /* source s holds [range[s], range[s+1]) */
    int           *failed; /* per source: out of memory */
    uint64_t      *dups;   /* per source: API calls reusing an id */
} source_pass;

static void sort_nest_link(void *ctx, size_t s)
{
    source_pass *p = ctx;
    teller_events *ev = p->ev;
    size_t lo = p->range[s], hi = p->range[s + 1], *row_start = NULL;
    long nrows = 0;
    if (sort_source(ev, lo, hi, &row_start, &nrows)) {
        p->failed[s] = 1;
        return;
    }
    for (size_t i = lo; i < hi; i++) {
        ev->parent[i] = TELLER_NONE;
        ev->depth[i] = 0;
    }
    int bad = nest_cpu_rows(ev, row_start, nrows);
    free(row_start);
    p->failed[s] = bad || link_gpu(ev, lo, hi, &p->dups[s]);
    if (!p->failed[s]) /* after link_gpu, whose table was first_child */
        build_children(ev, lo, hi);
}

/* ---- pass 3: ranks and nodes ---- */

static int assign_ranks_nodes(teller_store *st, const teller_tree_opts *o)
{
    size_t ns = st->nsources;
    /* ranks: sources without one take the lowest unused ranks, in load order */
    int32_t next = 0;
    for (size_t i = 0; i < ns; i++) {
        if (st->sources[i].rank >= 0)
            continue;
        for (;; next++) {
            int used = 0;
            for (size_t j = 0; j < ns && !used; j++)
                used = st->sources[j].rank == next;
            if (!used)
                break;
        }
        st->sources[i].rank = next++;
    }
    for (size_t i = 0; i < ns; i++)
        for (size_t j = i + 1; j < ns; j++)
            if (st->sources[i].rank == st->sources[j].rank)
                teller_store_warn(st, teller_store_str(st, st->sources[j].path), 0,
                                  "rank %d appears in more than one source", (int)st->sources[j].rank);
    /* nodes: by host name when every source has one; else rank / gpus per
     * node (option, then deviceProperties count); else all on node 0 */
    int all_hosts = ns > 0;
    for (size_t i = 0; i < ns; i++)
        all_hosts &= st->sources[i].host != 0;
    free(st->nodes);
    st->nodes = NULL;
    st->nnodes = 0;
    size_t ncap = 0;
    for (size_t i = 0; i < ns; i++) {
        teller_source *s = &st->sources[i];
        int32_t node;
        uint32_t host = s->host;
        if (all_hosts) {
            node = -1;
            for (size_t k = 0; k < st->nnodes; k++)
                if (st->nodes[k].host == host)
                    node = st->nodes[k].node;
            if (node < 0)
                node = (int32_t)st->nnodes;
        } else {
            int gpn = o->gpus_per_node > 0 ? o->gpus_per_node : s->num_devices;
            node = gpn > 0 ? s->rank / gpn : 0;
            host = 0;
        }
        s->node = node;
        int seen = 0;
        for (size_t k = 0; k < st->nnodes; k++)
            seen |= st->nodes[k].node == node;
        if (!seen) {
            if (TELLER_GROW(st->nodes, ncap, st->nnodes + 1))
                return -1;
            st->nodes[st->nnodes++] = (teller_node){node, host, 0, 0};
        }
    }
    /* nodes ordered by id */
    for (size_t i = 1; i < st->nnodes; i++)
        for (size_t j = i; j > 0 && st->nodes[j - 1].node > st->nodes[j].node; j--) {
            teller_node t = st->nodes[j];
            st->nodes[j] = st->nodes[j - 1];
            st->nodes[j - 1] = t;
        }
    return 0;
}

/* ---- pass 4: collectives ---- */

/* A communication kernel's direction from its metadata cm (NULL: none): 1
 * a send, -1 a receive, 0 a collective. */
static int comm_dir(const teller_store *st, const teller_comm *cm)
{
    const char *coll = cm ? teller_store_str(st, cm->collective) : "";
    return !strcmp(coll, "send") ? 1 : !strcmp(coll, "recv") ? -1 : 0;
}

/* Finds source s's rows into sr (malloc'd; tree_internal.h), one per
 * communication kernel, which the run-wide half of matching reads: a
 * kernel without metadata (NCCL called directly, or captured in a CUDA
 * graph) takes the process group that named kernels on the same stream
 * carry; an engine's own collective (a family matched by order), which
 * never has metadata and may run on another stream than NCCL's, else the
 * group of the source's first collective that is not a send or receive
 * (its tensor-parallel group, which the engine's all-reduce serves). 0, or
 * -1 out of memory. */
static int find_collectives(const teller_store *st, const size_t *range, size_t s, teller_source_summary *sr)
{
    const teller_events *ev = &st->ev;
    teller_coll_row *out = NULL;
    size_t n = 0, cap = 0;
    kmap streams = {0}; /* stream -> slot in spg: the first process group seen there */
    uint32_t *spg = NULL, src_pg = 0;
    size_t spcap = 0;
    kmap names = {0}; /* kernel name -> slot in nfam: its family + 1, classified once */
    uint8_t *nfam = NULL;
    size_t nfcap = 0;
    int bad = 0;
    for (size_t i = range[s]; i < range[s + 1]; i++) {
        if (ev->layer[i] != TELLER_LAYER_KERNEL || !(ev->flags[i] & TELLER_F_COMM))
            continue;
        const teller_comm *cm = teller_store_event_comm(st, (uint32_t)i);
        uint32_t pg = cm ? cm->pg_name : 0;
        uint32_t stream = (uint32_t)teller_event_tid(ev, i);
        uint32_t *slot = pg ? kmap_slot(&streams, stream, (void **)&spg, &spcap, sizeof *spg) : NULL;
        uint8_t *fam = kmap_slot(&names, ev->name[i], (void **)&nfam, &nfcap, sizeof *nfam);
        if ((pg && !slot) || !fam || TELLER_GROW(out, cap, n + 1)) {
            bad = 1;
            break;
        }
        if (slot && !*slot)
            *slot = pg;
        if (!*fam)
            *fam = (uint8_t)(1 + teller_comm_family_of(teller_store_str(st, ev->name[i]), NULL, 0));
        int dir = comm_dir(st, cm);
        if (pg && !src_pg && !dir)
            src_pg = pg;
        const teller_args *a = teller_store_event_args(st, (uint32_t)i);
        out[n++] = (teller_coll_row){
            .ev = (uint32_t)(i - range[s]),
            .name = ev->name[i],
            .pg = pg,
            .pg_ranks = cm ? cm->pg_ranks : 0,
            .seq = cm && cm->seq >= 0 && cm->seq < UINT32_MAX ? (uint32_t)cm->seq : TELLER_NONE,
            .step = TELLER_NONE,
            .grid = {a ? a->grid[0] : 0, a ? a->grid[1] : 0, a ? a->grid[2] : 0},
            .group_size = cm ? cm->group_size : 0,
            .dir = (int8_t)dir,
            .fam = (uint8_t)(*fam - 1),
            .elems = cm && cm->in_nelems > 0 ? cm->in_nelems : -1,
            .start = ev->start_ns[i],
            .dur = ev->dur_ns[i],
        };
    }
    for (size_t k = 0; k < n && !bad; k++) {
        if (out[k].pg)
            continue;
        uint32_t ix = kmap_get(&streams, (uint32_t)teller_event_tid(ev, range[s] + out[k].ev), 0);
        out[k].pg = ix == UINT32_MAX ? 0 : spg[ix];
        const teller_comm_family *fam = teller_comm_family_get((teller_comm_family_id)out[k].fam);
        if (!out[k].pg && fam && fam->match == TELLER_COMM_MATCH_ORDER)
            out[k].pg = src_pg;
    }
    kmap_free(&streams);
    free(spg);
    kmap_free(&names);
    free(nfam);
    sr->rows = out;
    sr->nrows = n;
    return bad ? -1 : 0;
}

typedef struct coll_item {
    uint32_t key, seq;
    int32_t  rank;
    uint32_t ev;
    uint32_t step; /* the kernel's step for a family matched by order once steps are cut, else TELLER_NONE */
    uint32_t src;
    int64_t  start, end;
} coll_item;

static int coll_item_cmp(const void *a, const void *b)
{
    const coll_item *x = a, *y = b;
    if (x->key != y->key) return x->key < y->key ? -1 : 1;
    if (x->seq != y->seq) return x->seq < y->seq ? -1 : 1;
    if (x->rank != y->rank) return x->rank < y->rank ? -1 : 1;
    return x->ev < y->ev ? -1 : x->ev > y->ev;
}

static int coll_time_cmp(const void *a, const void *b)
{
    const coll_item *x = a, *y = b;
    if (x->key != y->key) return x->key < y->key ? -1 : 1;
    if (x->step != y->step) return x->step < y->step ? -1 : 1;
    if (x->rank != y->rank) return x->rank < y->rank ? -1 : 1;
    return x->start < y->start ? -1 : x->start > y->start;
}

/* The collective's operation from an NCCL kernel name:
 * "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(...)" -> "AllReduce",
 * "ncclKernel_AllReduce_RING_LL_Sum_float(...)" -> "AllReduce". */
static size_t kernel_op(const char *name, const char **op)
{
    const char *p = strstr(name, "Kernel_");
    if (!p) {
        *op = name;
        size_t n = strcspn(name, "(<");
        return n;
    }
    p += 7;
    *op = p;
    return strcspn(p, "_(<");
}

/* The rank before (dir -1) or after (dir +1) `rank` in a process group's
 * rank list as Kineto writes it ("[1, 5, 9, 13]"), or -1. */
static int32_t pg_neighbour(const char *ranks, int32_t rank, int dir)
{
    int32_t prev = -1;
    int take_next = 0;
    long v;
    for (const char *p = ranks; teller_pg_ranks_next(&p, &v);) {
        if (take_next)
            return (int32_t)v;
        if (v == rank) {
            if (dir < 0)
                return prev;
            take_next = 1;
        }
        prev = (int32_t)v;
    }
    return -1;
}

/* 1 when a row is an engine's own collective without a recorded sequence:
 * numbered by its order in the step, keyed by its family, operation, group
 * and launch grid. */
static int by_order(const teller_coll_row *r)
{
    const teller_comm_family *fam = teller_comm_family_get((teller_comm_family_id)r->fam);
    return fam && fam->match == TELLER_COMM_MATCH_ORDER && r->seq == TELLER_NONE;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* Two ranks' engine collectives end together: within 2 us (a custom
 * all-reduce's members leave its closing barrier at once, on one node's
 * clock); kernels of unrelated groups meet that by chance. */
#define TOGETHER_NS 2000

/* The share of ends a[0..na) that some end of b (sorted) meets. */
static double ends_met(const int64_t *a, size_t na, const int64_t *b, size_t nb)
{
    size_t met = 0, j = 0;
    for (size_t i = 0; i < na; i++) {
        while (j < nb && b[j] < a[i] - TOGETHER_NS)
            j++;
        met += j < nb && b[j] <= a[i] + TOGETHER_NS;
    }
    return na ? (double)met / (double)na : 0;
}

static int32_t uf_root(int32_t *up, int32_t x)
{
    while (up[x] != x)
        x = up[x] = up[up[x]];
    return x;
}

/* A source with engine collectives, by its node: sources of one node sit
 * together, in source order. */
typedef struct node_source {
    int32_t  node;
    uint32_t src;
} node_source;

static int node_source_cmp(const void *a, const void *b)
{
    const node_source *x = a, *y = b;
    if (x->node != y->node) return x->node < y->node ? -1 : 1;
    return x->src < y->src ? -1 : x->src > y->src;
}

/* The groups of a node's ranks whose engine collectives (matched by order,
 * without a process group, DeepEP's aside) run together: data-parallel
 * replicas that share a node each all-reduce within their own tensor-
 * parallel group, which the trace names nowhere. Two sources are of one
 * group when at least half the kernels of each end with one of the
 * other's (TOGETHER_NS). Per source into grp: the lowest rank of its group,
 * or -1 where its node holds one group (or it ran none). Only sources of
 * one node are paired: the cost is the sum over nodes of their sources
 * squared, not the store's. 0, or -1 out of memory. */
static int engine_groups(const teller_store *st, const teller_source_summary *sr, int32_t *grp)
{
    size_t ns = st->nsources, nby = 0;
    int64_t **ends = calloc(ns ? ns : 1, sizeof *ends);
    size_t *nend = calloc(ns ? ns : 1, sizeof *nend);
    int32_t *up = malloc((ns ? ns : 1) * sizeof *up);
    int32_t *low = malloc((ns ? ns : 1) * sizeof *low); /* per group's root: its lowest rank */
    node_source *by = malloc((ns ? ns : 1) * sizeof *by);
    int bad = !ends || !nend || !up || !low || !by;
    for (size_t s = 0; s < ns && !bad; s++) {
        grp[s] = -1;
        up[s] = (int32_t)s;
        low[s] = INT32_MAX;
        for (size_t k = 0; k < sr[s].nrows; k++) {
            const teller_coll_row *r = &sr[s].rows[k];
            if (r->pg || !by_order(r) || r->fam == TELLER_COMM_DEEP_EP)
                continue;
            if (!ends[s] && !(ends[s] = malloc(sr[s].nrows * sizeof **ends))) {
                bad = 1;
                break;
            }
            ends[s][nend[s]++] = r->start + r->dur;
        }
        if (nend[s]) {
            teller_sort(ends[s], nend[s], sizeof **ends, cmp_i64);
            by[nby++] = (node_source){st->sources[s].node, (uint32_t)s};
        }
    }
    if (!bad)
        teller_sort(by, nby, sizeof *by, node_source_cmp);
    for (size_t lo = 0, hi; lo < nby && !bad; lo = hi) {
        for (hi = lo + 1; hi < nby && by[hi].node == by[lo].node; hi++)
            ;
        for (size_t x = lo; x < hi; x++)
            for (size_t y = x + 1; y < hi; y++) {
                uint32_t a = by[x].src, b = by[y].src;
                if (ends_met(ends[a], nend[a], ends[b], nend[b]) >= 0.5 &&
                    ends_met(ends[b], nend[b], ends[a], nend[a]) >= 0.5)
                    up[uf_root(up, (int32_t)b)] = uf_root(up, (int32_t)a);
            }
        /* a node of more than one group names each by its lowest rank */
        int several = 0;
        for (size_t x = lo; x < hi; x++) {
            int32_t r = uf_root(up, (int32_t)by[x].src), rank = st->sources[by[x].src].rank;
            several |= r != uf_root(up, (int32_t)by[lo].src);
            if (rank < low[r])
                low[r] = rank;
        }
        for (size_t x = lo; x < hi && several; x++)
            grp[by[x].src] = low[uf_root(up, (int32_t)by[x].src)];
    }
    for (size_t s = 0; ends && s < ns; s++)
        free(ends[s]);
    free(ends);
    free(nend);
    free(up);
    free(low);
    free(by);
    return bad ? -1 : 0;
}

/* A matched member's source and end, for the clock offsets. */
typedef struct member_end {
    uint32_t src;
    int64_t  end;
} member_end;

/* The key of an engine's own collective (by_order) into buf: its family,
 * operation, group (without a process group, the node's ranks that run
 * them together: the all-reduces over NVLink, all but DeepEP's, never
 * leave it) and launch grid. */
static void order_key(const teller_store *st, const teller_coll_row *r, int32_t node, int32_t egrp, char *buf,
                      size_t cap)
{
    char op[64], grp[160];
    teller_comm_family_of(teller_store_str(st, r->name), op, sizeof op);
    if (r->pg)
        snprintf(grp, sizeof grp, " pg %.120s", teller_store_str(st, r->pg));
    else if (r->fam != TELLER_COMM_DEEP_EP && egrp >= 0)
        snprintf(grp, sizeof grp, " node %d ranks from %d", node, egrp);
    else if (r->fam != TELLER_COMM_DEEP_EP)
        snprintf(grp, sizeof grp, " node %d", node);
    else
        grp[0] = 0;
    snprintf(buf, cap, "fam %s %s%s grid %u,%u,%u", teller_comm_family_get((teller_comm_family_id)r->fam)->name, op,
             grp, r->grid[0], r->grid[1], r->grid[2]);
}

/* Collectives are matched by (key, seq): the key is the process group
 * when the trace names it (Kineto copies it onto the NCCL kernel), else
 * the NCCL operation from the kernel name; seq is the trace's own sequence
 * number when recorded, else the order of the rank's kernels of that key.
 * The engines' own kernels (custom all-reduce, DeepEP: families matched by
 * order, commfam.c) have no sequence: their key is the family, operation,
 * process group and launch grid (ranks launch one instance with one grid),
 * and with by_step (steps are cut) seq is their order within the step,
 * numbered on from the most any rank ran in the key's steps before, so
 * that a kernel one rank lacks, or a rank whose profile began a step
 * later, shifts no other step's instances. Before steps are cut they
 * number in the run's order, which is enough for the clock offsets.
 * *ordered counts the kernels of such families. egrp (per source) takes
 * engine_groups on the first call and is read as it is on the second
 * (by_step): between the two the clock offsets move every source of a node
 * by one offset, and the groups compare only the kernel ends of one node's
 * sources with each other, so they cannot change; cutting steps changes
 * no kernel.
 * A send or recv in a group of more than two ranks (a pipeline's stages)
 * is a transfer between two of them, which Kineto does not name: it is
 * taken to go from a stage to the next in the group's rank list, as an
 * inference pipeline passes its activations (a training pipeline's
 * backward sends go the other way and are matched wrongly). Keys are
 * interned in row order, whatever the threads. With mend, *mend receives
 * per member its source and end (malloc'd). */
static int match_collectives(teller_store *st, const teller_source_summary *sr, int jobs, int by_step, int32_t *egrp,
                             size_t *ordered, member_end **mend)
{
    size_t ns = st->nsources;
    coll_item *items = NULL;
    size_t nitems = 0, icap = 0;
    kmap keys = {0}; /* process group, or 2^32 + kernel name -> slot in key_of: its key, once made */
    uint32_t *key_of = NULL;
    size_t kcap = 0;
    int bad = !by_step && engine_groups(st, sr, egrp);
    /* one item per row: sized once, so never copied to grow */
    for (size_t s = 0; s < ns && !bad; s++)
        icap += sr[s].nrows;
    if (!bad && icap && !(items = malloc(icap * sizeof *items)))
        bad = 1;
    char buf[256];
    *ordered = 0;
    for (size_t s = 0; s < ns && !bad; s++)
        for (size_t k = 0; k < sr[s].nrows && !bad; k++) {
            const teller_coll_row *r = &sr[s].rows[k];
            int32_t me = st->sources[s].rank;
            coll_item it = {0,          r->seq,  me, st->sources[s].first_event + r->ev, TELLER_NONE, (uint32_t)s,
                            r->start, r->start + r->dur};
            if (by_order(r)) {
                order_key(st, r, st->sources[s].node, egrp[s], buf, sizeof buf);
                it.key = teller_store_intern(st, buf, strlen(buf));
                it.step = by_step ? r->step : TELLER_NONE;
                bad = it.key == TELLER_NONE;
                items[nitems++] = it;
                ++*ordered;
                continue;
            }
            int32_t peer = r->dir && r->group_size > 2
                               ? pg_neighbour(teller_store_str(st, r->pg_ranks), me, r->dir)
                               : -1;
            /* the key's text, but for pipeline transfers, depends on the
             * group or the kernel's name alone: made once per group or name */
            uint32_t *known = peer >= 0 ? NULL
                                        : kmap_slot(&keys, r->pg ? r->pg : 1ull << 32 | r->name, (void **)&key_of,
                                                    &kcap, sizeof *key_of);
            it.key = known ? *known : 0;
            if (!it.key) {
                const char *op;
                size_t oplen = kernel_op(teller_store_str(st, r->name), &op);
                if (r->pg && peer >= 0)
                    snprintf(buf, sizeof buf, "pg %s p2p %d>%d", teller_store_str(st, r->pg),
                             r->dir > 0 ? me : peer, r->dir > 0 ? peer : me);
                else if (r->pg)
                    snprintf(buf, sizeof buf, "pg %s", teller_store_str(st, r->pg));
                else
                    snprintf(buf, sizeof buf, "op %.*s", (int)(oplen < 200 ? oplen : 200), op);
                it.key = teller_store_intern(st, buf, strlen(buf));
                if (known)
                    *known = it.key;
            }
            bad = (peer < 0 && !known) || it.key == TELLER_NONE;
            items[nitems++] = it;
        }
    kmap_free(&keys);
    free(key_of);
    if (bad)
        goto oom;
    /* number the kernels without a recorded seq by time within (key, step,
     * rank), each step of a key from the most any rank ran in its steps
     * before (base) */
    int unnumbered = 0;
    for (size_t a = 0; a < nitems && !unnumbered; a++)
        unnumbered = items[a].seq == TELLER_NONE;
    if (unnumbered)
        teller_sort_jobs(jobs, items, nitems, sizeof *items, coll_time_cmp);
    uint32_t count = 0, base = 0, most = 0;
    for (size_t a = 0; unnumbered && a < nitems; a++) {
        int new_key = a == 0 || items[a].key != items[a - 1].key;
        if (new_key || items[a].step != items[a - 1].step) {
            base = new_key ? 0 : base + most;
            most = 0;
        }
        if (new_key || items[a].step != items[a - 1].step || items[a].rank != items[a - 1].rank)
            count = 0;
        if (items[a].seq == TELLER_NONE)
            items[a].seq = base + count;
        if (++count > most)
            most = count;
    }
    teller_sort_jobs(jobs, items, nitems, sizeof *items, coll_item_cmp);
    free(st->colls);
    free(st->members);
    st->colls = NULL;
    st->members = NULL;
    st->ncolls = st->nmembers = 0;
    /* every item is a member, of at most as many collectives */
    st->colls = malloc((nitems ? nitems : 1) * sizeof *st->colls);
    st->members = malloc((nitems ? nitems : 1) * sizeof *st->members);
    if (!st->colls || !st->members || (mend && !(*mend = malloc((nitems ? nitems : 1) * sizeof **mend))))
        goto oom;
    for (size_t a = 0; a < nitems;) {
        size_t b = a;
        while (b < nitems && items[b].key == items[a].key && items[b].seq == items[a].seq)
            b++;
        st->colls[st->ncolls++] =
            (teller_collective){items[a].key, items[a].seq, (uint32_t)st->nmembers, (uint32_t)(b - a)};
        for (size_t k = a; k < b; k++) {
            if (mend)
                (*mend)[st->nmembers] = (member_end){items[k].src, items[k].end};
            st->members[st->nmembers++] = (teller_coll_member){items[k].rank, items[k].ev};
        }
        a = b;
    }
    free(items);
    return 0;
oom:
    free(items);
    return -1;
}

/* Each member's row (teller_tree_member_rows), found from the member's
 * kernel index alone: its source by the sources' ranges
 * (teller_tree_event_source), its row among
 * the source's rows (in event order) by the kernel's index in it. The
 * rows are on node 0's clock, their steps set. 0, or -1 out of memory. */
static int member_rows(teller_store *st, const size_t *range, const teller_source_summary *sr)
{
    free(st->member_rows);
    if (!(st->member_rows = malloc((st->nmembers ? st->nmembers : 1) * sizeof *st->member_rows)))
        return -1;
    for (size_t m = 0; m < st->nmembers; m++) {
        uint32_t k = st->members[m].kernel;
        size_t s = teller_tree_event_source(st, k), a = 0, b = sr[s].nrows;
        while (a < b) {
            size_t mid = (a + b) / 2;
            if (sr[s].rows[mid].ev < k - range[s])
                a = mid + 1;
            else
                b = mid;
        }
        const teller_coll_row *r = &sr[s].rows[a];
        st->member_rows[m] = (teller_member_row){r->start, r->dur, r->elems, r->step, r->name, r->pg_ranks,
                                                 (uint16_t)s, r->dir};
    }
    return 0;
}

/* ---- pass 5: clock offsets ---- */

static int64_t median_i64(int64_t *v, size_t n)
{
    teller_sort(v, n, sizeof *v, cmp_i64);
    return n % 2 ? v[n / 2] : v[n / 2 - 1] + (v[n / 2] - v[n / 2 - 1]) / 2;
}

static size_t node_index(const teller_store *st, int32_t node)
{
    for (size_t k = 0; k < st->nnodes; k++)
        if (st->nodes[k].node == node)
            return k;
    return 0;
}

/* One node's median member end in one collective. */
typedef struct node_end {
    uint32_t node; /* index into st->nodes */
    uint32_t coll;
    int64_t  end;
} node_end;

static int node_end_cmp(const void *a, const void *b)
{
    const node_end *x = a, *y = b;
    if (x->coll != y->coll) return x->coll < y->coll ? -1 : 1;
    if (x->node != y->node) return x->node < y->node ? -1 : 1;
    return x->end < y->end ? -1 : x->end > y->end;
}

/* Moving one source's events, and its summary, onto node 0's clock, on
 * the pool. */
typedef struct clock_shift {
    teller_events   *ev;
    const size_t    *range;
    const int64_t   *offset; /* per source: its node's offset */
    teller_source_summary *sr;
} clock_shift;

static void shift_source(void *ctx, size_t s)
{
    const clock_shift *c = ctx;
    for (size_t i = c->range[s]; i < c->range[s + 1]; i++)
        c->ev->start_ns[i] -= c->offset[s];
    for (size_t k = 0; k < c->sr[s].nrows; k++)
        c->sr[s].rows[k].start -= c->offset[s];
    for (size_t k = 0; k < c->sr[s].nmarks; k++) {
        c->sr[s].marks[k].start -= c->offset[s];
        c->sr[s].marks[k].end -= c->offset[s];
    }
}

/* A node's clock offset is the median, over the collectives it shares with
 * an already known node, of (its members' median end) - (the first known
 * node's median end - that node's offset); nodes are taken in index order,
 * round after round, so that a node sharing nothing with node 0 chains
 * through others. Each collective's per-node medians are computed once,
 * and each node looks only at its own collectives: cost O(members log
 * members + nodes x their collectives) per round, not nodes^2 x every
 * collective's members. The members' ends are mend (match_collectives),
 * not the events. */
static int estimate_offsets(teller_store *st, const size_t *range, int jobs, const member_end *mend,
                            teller_source_summary *sr)
{
    size_t nn = st->nnodes, ns = st->nsources;
    if (nn < 2)
        return 0;
    teller_events *ev = &st->ev;
    int *known = calloc(nn, sizeof *known);
    uint32_t *srcnode = malloc((ns ? ns : 1) * sizeof *srcnode);
    size_t *first = calloc(st->ncolls + 1, sizeof *first); /* per collective: its medians */
    size_t *by_node = calloc(nn + 1, sizeof *by_node);      /* per node: its entries */
    node_end *me = NULL, *med = NULL;
    uint32_t *node_list = NULL;
    int64_t *diffs = NULL;
    size_t nme = 0, mcap = 0, nmed = 0, dcap = 0;
    if (!known || !srcnode || !first || !by_node)
        goto oom;
    for (size_t s = 0; s < ns; s++)
        srcnode[s] = (uint32_t)node_index(st, st->sources[s].node);
    /* member ends by (collective, node), then one median per node */
    for (size_t c = 0; c < st->ncolls; c++) {
        const teller_collective *co = &st->colls[c];
        if (co->num_members < 2)
            continue;
        for (uint32_t m = 0; m < co->num_members; m++) {
            const member_end *e = &mend[co->first_member + m];
            if (TELLER_GROW(me, mcap, nme + 1))
                goto oom;
            me[nme++] = (node_end){srcnode[e->src], (uint32_t)c, e->end};
        }
    }
    teller_sort(me, nme, sizeof *me, node_end_cmp);
    med = malloc((nme ? nme : 1) * sizeof *med);
    if (!med)
        goto oom;
    for (size_t a = 0; a < nme;) {
        size_t b = a;
        while (b < nme && me[b].coll == me[a].coll && me[b].node == me[a].node)
            b++;
        size_t k = b - a; /* sorted: the median of median_i64 */
        int64_t mid = k % 2 ? me[a + k / 2].end : me[a + k / 2 - 1].end + (me[a + k / 2].end - me[a + k / 2 - 1].end) / 2;
        med[nmed++] = (node_end){me[a].node, me[a].coll, mid};
        first[me[a].coll + 1]++;
        by_node[me[a].node + 1]++;
        a = b;
    }
    free(me);
    me = NULL;
    for (size_t c = 0; c < st->ncolls; c++)
        first[c + 1] += first[c];
    for (size_t n = 0; n < nn; n++)
        by_node[n + 1] += by_node[n];
    /* med[] is in (collective, node) order, so first[c] indexes it; node_list
     * holds, per node, its entries of med[] in collective order */
    node_list = malloc((nmed ? nmed : 1) * sizeof *node_list);
    size_t *fill = malloc((nn ? nn : 1) * sizeof *fill);
    if (!node_list || !fill) {
        free(fill);
        goto oom;
    }
    memcpy(fill, by_node, nn * sizeof *fill);
    for (size_t i = 0; i < nmed; i++)
        node_list[fill[med[i].node]++] = (uint32_t)i;
    free(fill);
    known[0] = 1;
    for (int round = 0; round < (int)nn; round++) {
        int progress = 0;
        for (size_t n = 1; n < nn; n++) {
            if (known[n])
                continue;
            size_t nd = 0;
            for (size_t q = by_node[n]; q < by_node[n + 1]; q++) {
                const node_end *mine = &med[node_list[q]];
                /* the first known node of this collective, in index order */
                for (size_t r = first[mine->coll]; r < first[mine->coll + 1]; r++) {
                    if (!known[med[r].node])
                        continue;
                    if (TELLER_GROW(diffs, dcap, nd + 1))
                        goto oom;
                    diffs[nd++] = mine->end - (med[r].end - st->nodes[med[r].node].offset_ns);
                    break;
                }
            }
            if (nd) {
                int64_t off = median_i64(diffs, nd);
                /* beyond a quarter of the bound on times (36 years), moving
                 * the events could take them past any trace's: left as is */
                if (off < -TELLER_TIME_MAX / 4 || off > TELLER_TIME_MAX / 4) {
                    teller_store_warn(st, "(trace)", 0,
                                      "node %d's clock is %.0f s from node 0's, more than a trace's times allow; "
                                      "not corrected",
                                      (int)st->nodes[n].node, (double)off / 1e9);
                    off = 0;
                }
                st->nodes[n].offset_ns = off;
                st->nodes[n].offset_samples = (uint32_t)nd;
                known[n] = 1;
                progress = 1;
            }
        }
        if (!progress)
            break;
    }
    for (size_t n = 1; n < nn; n++)
        if (!known[n])
            teller_store_warn(st, "(trace)", 0,
                              "node %d shares no collective with node 0; its clock offset is unknown (taken as 0)",
                              (int)st->nodes[n].node);
    /* move every node onto node 0's clock */
    int64_t *offset = malloc((ns ? ns : 1) * sizeof *offset);
    if (!offset)
        goto oom;
    for (size_t s = 0; s < ns; s++)
        offset[s] = st->nodes[srcnode[s]].offset_ns;
    teller_parallel_for(jobs, ns, shift_source, &(clock_shift){ev, range, offset, sr});
    free(offset);
    free(known);
    free(srcnode);
    free(first);
    free(by_node);
    free(med);
    free(node_list);
    free(diffs);
    return 0;
oom:
    free(known);
    free(srcnode);
    free(first);
    free(by_node);
    free(me);
    free(med);
    free(node_list);
    free(diffs);
    return -1;
}

/* ---- pass 6: steps ---- */

/* Built-in step markers, see docs/ARCHITECTURE.md. */
/* Step markers are annotations (user_annotation, NVTX ranges) or, in
 * traces of older PyTorch profilers, `Operator` events (ProfilerStep#N was
 * recorded as an op there), read into the BACKEND layer. */
static int can_mark_step(uint8_t layer) { return layer == TELLER_LAYER_ENGINE || layer == TELLER_LAYER_BACKEND; }

static const char *const k_step_patterns =
    "^ProfilerStep#[0-9]+$|^execute_([0-9]+_)?context_|^execute_new_[0-9]+_cached_|^step\\[";

const char *teller_step_pattern_default(void) { return k_step_patterns; }

/* pattern (NULL: the built-in one) compiled into re; else TELLER_ERR_ARG. */
static teller_status step_regex(const char *pattern, regex_t *re, teller_error *err)
{
    int rc = regcomp(re, pattern ? pattern : k_step_patterns, REG_EXTENDED | REG_NOSUB);
    if (!rc)
        return TELLER_OK;
    char m[256];
    regerror(rc, re, m, sizeof m);
    return teller_error_set(err, TELLER_ERR_ARG, "--step-pattern", 0, "bad regular expression: %s", m);
}

/* Per name id: 1 when it matches re, 2 when not, 0 untested; each name of
 * an event that could mark a step, in a source whose summary is not
 * given, tested once (names are interned). NULL out of memory. */
static uint8_t *marker_names(const teller_store *st, const size_t *range, const teller_source_summary *sr,
                             const regex_t *re)
{
    const teller_events *ev = &st->ev;
    uint8_t *is = calloc(st->nstr ? st->nstr : 1, 1);
    for (size_t s = 0; is && s < st->nsources; s++)
        for (size_t i = range[s]; !sr[s].given && i < range[s + 1]; i++)
            if (can_mark_step(ev->layer[i]) && !(ev->flags[i] & TELLER_F_GPU) && !is[ev->name[i]])
                is[ev->name[i]] = regexec(re, teller_store_str(st, ev->name[i]), 0, NULL, 0) == 0 ? 1 : 2;
    return is;
}

/* Finds source s's step markers into sr (malloc'd): its events of a layer
 * that marks steps, on the host, whose names are marker names (is, from
 * marker_names) and that no such event encloses (outermost markers only).
 * 0, or -1 out of memory. */
static int find_marks(const teller_store *st, const size_t *range, size_t s, const uint8_t *is,
                      teller_source_summary *sr)
{
    const teller_events *ev = &st->ev;
    size_t cap = 0;
    for (size_t i = range[s]; i < range[s + 1]; i++) {
        if (!can_mark_step(ev->layer[i]) || (ev->flags[i] & TELLER_F_GPU) || is[ev->name[i]] != 1)
            continue;
        int nested = 0;
        for (uint32_t p = ev->parent[i]; p != TELLER_NONE && !nested; p = ev->parent[p])
            nested = can_mark_step(ev->layer[p]) && is[ev->name[p]] == 1;
        if (nested)
            continue;
        if (TELLER_GROW(sr->marks, cap, sr->nmarks + 1))
            return -1;
        sr->marks[sr->nmarks++] = (teller_step_mark){(uint32_t)(i - range[s]), ev->name[i], ev->start_ns[i],
                                                     ev->start_ns[i] + ev->dur_ns[i],
                                                     teller_step_iteration(teller_store_str(st, ev->name[i]))};
    }
    return 0;
}

typedef struct marker {
    int32_t  rank;
    int64_t  start, end;
    uint32_t ev;
    uint32_t name; /* teller_step_mark.name; TELLER_NONE without a marker event */
    int64_t  iter; /* teller_step_mark.iter; -1 without a marker event */
} marker;

static int marker_cmp(const void *a, const void *b)
{
    const marker *x = a, *y = b;
    if (x->rank != y->rank) return x->rank < y->rank ? -1 : 1;
    if (x->start != y->start) return x->start < y->start ? -1 : 1;
    return x->ev < y->ev ? -1 : x->ev > y->ev;
}

static int step_cmp(const void *a, const void *b)
{
    const teller_step *x = a, *y = b;
    if (x->step != y->step) return x->step < y->step ? -1 : 1;
    return x->rank < y->rank ? -1 : x->rank > y->rank;
}

/* Stamps the events [lo, hi) of one source with their steps: rows are
 * its rank's steps (count of them) sorted by start, as stamping reads
 * them (each its marker's span, not yet extended to its GPU work), their
 * numbers rising with their start. A host event belongs to the last step
 * that started at or before it, when it starts before that step's end; GPU
 * work to the step of its launch. end[p], when end is given, receives the
 * latest end of row p's GPU work (INT64_MIN: none). */
static void stamp_source(teller_events *ev, size_t lo_ev, size_t hi_ev, const teller_step *rows, size_t count,
                         int64_t *end)
{
    for (size_t k = 0; end && k < count; k++)
        end[k] = INT64_MIN;
    for (size_t i = lo_ev; i < hi_ev; i++) {
        ev->step[i] = TELLER_NONE;
        if (ev->flags[i] & TELLER_F_GPU)
            continue;
        size_t lo = 0, h = count;
        while (lo < h) {
            size_t mid = (lo + h) / 2;
            if (rows[mid].start_ns <= ev->start_ns[i])
                lo = mid + 1;
            else
                h = mid;
        }
        if (lo > 0 && ev->start_ns[i] < rows[lo - 1].end_ns)
            ev->step[i] = rows[lo - 1].step;
    }
    for (size_t i = lo_ev; i < hi_ev; i++) {
        if (!(ev->flags[i] & TELLER_F_GPU))
            continue;
        uint32_t par = ev->parent[i];
        if (par == TELLER_NONE || ev->step[par] == TELLER_NONE)
            continue;
        uint32_t k = ev->step[i] = ev->step[par];
        if (!end)
            continue;
        size_t lo = 0, h = count; /* its row: the numbers rise with the rows */
        while (lo < h) {
            size_t mid = (lo + h) / 2;
            if (rows[mid].step < k)
                lo = mid + 1;
            else
                h = mid;
        }
        int64_t e = ev->start_ns[i] + ev->dur_ns[i];
        if (lo < count && rows[lo].step == k && e > end[lo])
            end[lo] = e;
    }
}

/* Stamping the sources' events on the pool, each with its rank's rows
 * (st->spans, as st->steps before their ends are extended). */
typedef struct step_stamp {
    teller_store *st;
    const size_t *range;
    int64_t     **end;   /* per source: the latest end of its GPU work per row of its rank (NULL: no memory) */
    size_t       *first; /* per source: its rank's first row */
} step_stamp;

static void stamp_steps(void *ctx, size_t s)
{
    step_stamp *p = ctx;
    size_t count;
    const teller_step *rows = teller_tree_spans(p->st, p->st->sources[s].rank, &count);
    p->first[s] = (size_t)(rows - p->st->spans);
    if ((p->end[s] = malloc((count ? count : 1) * sizeof *p->end[s])))
        stamp_source(&p->st->ev, p->range[s], p->range[s + 1], rows, count, p->end[s]);
}

void teller_tree_unmarked(const teller_store *st, uint32_t s, int64_t last, int64_t span[5])
{
    const teller_events *ev = &st->ev;
    int marked = last != INT64_MIN;
    int64_t a = INT64_MAX, b = INT64_MIN, launched = 0, first = INT64_MAX, end = INT64_MIN;
    size_t lo = st->sources[s].first_event, hi = lo + st->sources[s].num_events;
    for (size_t i = lo; i < hi; i++) {
        if (ev->start_ns[i] < first) first = ev->start_ns[i];
        if (ev->start_ns[i] + ev->dur_ns[i] > end) end = ev->start_ns[i] + ev->dur_ns[i];
        if (ev->layer[i] == TELLER_LAYER_OTHER || (marked && (ev->start_ns[i] < last || (ev->flags[i] & TELLER_F_GPU))))
            continue;
        if (ev->start_ns[i] < a) a = ev->start_ns[i];
        if (ev->start_ns[i] + ev->dur_ns[i] > b) b = ev->start_ns[i] + ev->dur_ns[i];
        launched |= marked && (ev->layer[i] == TELLER_LAYER_RUNTIME || ev->layer[i] == TELLER_LAYER_DRIVER) &&
                    strstr(teller_store_str(st, ev->name[i]), "Launch") != NULL;
    }
    span[0] = a;
    span[1] = b;
    span[2] = launched;
    span[3] = first;
    span[4] = end;
}

void teller_tree_extent(const teller_store *st, uint32_t s, int64_t *first, int64_t *end)
{
    *first = st->extent && s < st->nsources ? st->extent[s][0] : INT64_MAX;
    *end = st->extent && s < st->nsources ? st->extent[s][1] : INT64_MIN;
}

/* With holders, each given source's span (teller_tree_unmarked) as its
 * holder found it; while the store holds the source's events too, it must
 * be what they say. */
static teller_status ask_unmarked(teller_store *st, const teller_source_summary *sr, const teller_tree_holders *h,
                                  const int64_t *last, int64_t (*span)[5], teller_error *err)
{
    teller_status s = h->unmarked(h->ctx, st, sr, last, span, err);
    for (size_t k = 0; k < st->nsources && s == TELLER_OK; k++) {
        int64_t own[5];
        if (!sr[k].given)
            continue;
        teller_tree_unmarked(st, (uint32_t)k, last[k], own);
        if (memcmp(own, span[k], sizeof own))
            s = teller_error_set(err, TELLER_ERR_FORMAT, teller_store_str(st, st->sources[k].path), 0,
                                 "the span without a marker its holder found is not its events'");
    }
    return s;
}

/* The steps without a marker event, at most one per rank, added to
 * mk[0..*nmk) (sorted by rank and start):
 *   - a rank with no marker gets one fallback step spanning its events
 *     ("whole trace");
 *   - a rank taken down in the middle of a step (PyTorch's watchdog ends
 *     the process at a collective's timeout, without aborting it) stops
 *     after its last marker began a step: the step's annotation never
 *     ended, so was never written, but the work it launched before the
 *     hang was. A rank that launched GPU work after its last marker gets a
 *     step for that unfinished one, from its first host event after the
 *     marker to the end of its last; its GPU work joins it through the
 *     launches. (No trace in ../shared/data launches anything after its
 *     last step.)
 * A rank's sources widen its one step (for the unfinished one, those that
 * launched). With holders, a given source's span is its holder's. */
static teller_status eventless_steps(teller_store *st, const teller_source_summary *sr,
                                     const teller_tree_holders *holders, marker **mk, size_t *nmk, size_t *mcap,
                                     teller_error *err)
{
    size_t n0 = *nmk, ns = st->nsources;
    int64_t *last = malloc((ns ? ns : 1) * sizeof *last), (*span)[5] = malloc((ns ? ns : 1) * sizeof *span);
    int asked = 0;
    teller_status s = last && span ? TELLER_OK : TELLER_ERR_NOMEM;
    for (size_t k = 0; k < ns && s == TELLER_OK; k++) {
        int32_t rank = st->sources[k].rank;
        size_t lo = 0, hi = n0;
        while (lo < hi) {
            size_t mid = (lo + hi) / 2;
            if ((*mk)[mid].rank < rank)
                lo = mid + 1;
            else
                hi = mid;
        }
        last[k] = INT64_MIN; /* the rank's last marker's end; none: unmarked */
        for (size_t q = lo; q < n0 && (*mk)[q].rank == rank; q++)
            if ((*mk)[q].end > last[k])
                last[k] = (*mk)[q].end;
        asked |= holders && sr[k].given;
        if (!(holders && sr[k].given))
            teller_tree_unmarked(st, (uint32_t)k, last[k], span[k]);
    }
    if (s == TELLER_OK && asked && (s = ask_unmarked(st, sr, holders, last, span, err)) != TELLER_OK)
        goto done;
    free(st->extent);
    st->extent = NULL;
    if (s == TELLER_OK && !(st->extent = malloc((ns ? ns : 1) * sizeof *st->extent)))
        s = TELLER_ERR_NOMEM;
    for (size_t k = 0; k < ns && s == TELLER_OK; k++) {
        st->extent[k][0] = span[k][3];
        st->extent[k][1] = span[k][4];
    }
    for (size_t k = 0; k < ns && s == TELLER_OK; k++) {
        int32_t rank = st->sources[k].rank;
        int64_t a = span[k][0], b = span[k][1];
        if (a > b || (last[k] != INT64_MIN && !span[k][2]))
            continue;
        size_t q = n0;
        while (q < *nmk && (*mk)[q].rank != rank)
            q++;
        if (q == *nmk) {
            if (TELLER_GROW(*mk, *mcap, *nmk + 1)) {
                s = TELLER_ERR_NOMEM;
                break;
            }
            (*mk)[(*nmk)++] = (marker){rank, a, b, TELLER_NONE, TELLER_NONE, -1};
        } else {
            if (a < (*mk)[q].start) (*mk)[q].start = a;
            if (b > (*mk)[q].end) (*mk)[q].end = b;
        }
    }
    if (s == TELLER_ERR_NOMEM)
        s = teller_error_set(err, TELLER_ERR_NOMEM, "(trace)", 0, "out of memory");
done:
    free(last);
    free(span);
    return s;
}

/* Numbers the steps mk[0..n) (sorted by rank and start) into num: by
 * iteration when every annotation is a ProfilerStep#N and each rank's N
 * rise with time (the place of N among every rank's N: a rank whose profile
 * began an iteration later lines up with the others by iteration, not by
 * its first step), else each rank's steps in order; a step without an
 * annotation follows its rank's step before it. 0, or -1 out of memory. */
static int number_steps(const marker *mk, size_t n, uint32_t *num)
{
    int64_t *it = malloc((n ? n : 1) * sizeof *it), *all = malloc((n ? n : 1) * sizeof *all);
    if (!it || !all) {
        free(it);
        free(all);
        return -1;
    }
    size_t na = 0;
    int by_iter = 1;
    for (size_t k = 0; k < n; k++) {
        it[k] = mk[k].iter;
        if (mk[k].ev != TELLER_NONE && it[k] < 0)
            by_iter = 0;
        for (size_t j = k; by_iter && it[k] >= 0 && j-- > 0 && mk[j].rank == mk[k].rank;)
            if (it[j] >= 0) {
                by_iter = it[j] < it[k];
                break;
            }
        if (it[k] >= 0)
            all[na++] = it[k];
    }
    teller_sort(all, na, sizeof *all, cmp_i64);
    size_t nu = 0;
    for (size_t a = 0; a < na; a++)
        if (nu == 0 || all[a] != all[nu - 1])
            all[nu++] = all[a];
    for (size_t k = 0; k < n; k++) {
        int same = k > 0 && mk[k - 1].rank == mk[k].rank;
        if (by_iter && it[k] >= 0) {
            size_t lo = 0, hi = nu;
            while (lo < hi) {
                size_t mid = (lo + hi) / 2;
                if (all[mid] < it[k])
                    lo = mid + 1;
                else
                    hi = mid;
            }
            num[k] = (uint32_t)lo;
        } else {
            num[k] = same ? num[k - 1] + 1 : 0;
        }
    }
    free(it);
    free(all);
    return 0;
}

/* With holders, each given source's steps' ends (end[s], per row of its
 * rank's spans) and rows' steps as its holder found them; while the store
 * holds the source's events too, each must be what they say. */
static teller_status ask_holders(teller_store *st, const size_t *range, teller_source_summary *sr,
                                 const teller_tree_holders *h, int64_t **end, teller_error *err)
{
    size_t ns = st->nsources, count;
    int64_t **got = calloc(ns + 1, sizeof *got);
    teller_status s = got ? TELLER_OK : TELLER_ERR_NOMEM;
    for (size_t k = 0; k < ns && s == TELLER_OK; k++) {
        teller_tree_spans(st, st->sources[k].rank, &count);
        if (sr[k].given && !(got[k] = malloc((count ? count : 1) * sizeof *got[k])))
            s = TELLER_ERR_NOMEM;
    }
    if (s != TELLER_OK) {
        s = teller_error_set(err, TELLER_ERR_NOMEM, "(trace)", 0, "out of memory");
        goto done;
    }
    s = h->stamped(h->ctx, st, sr, got, err);
    for (size_t k = 0; k < ns && s == TELLER_OK; k++) {
        if (!got[k])
            continue;
        teller_tree_spans(st, st->sources[k].rank, &count);
        int same = !memcmp(got[k], end[k], count * sizeof *got[k]);
        for (size_t r = 0; r < sr[k].nrows && same; r++)
            same = sr[k].rows[r].step == st->ev.step[range[k] + sr[k].rows[r].ev];
        if (!same)
            s = teller_error_set(err, TELLER_ERR_FORMAT, teller_store_str(st, st->sources[k].path), 0,
                                 "the steps its holder stamped are not its events'");
        free(end[k]);
        end[k] = got[k];
        got[k] = NULL;
    }
done:
    for (size_t k = 0; got && k < ns; k++)
        free(got[k]);
    free(got);
    return s;
}

static teller_status cut_steps(teller_store *st, const size_t *range, teller_source_summary *sr,
                               const teller_tree_holders *holders, int jobs, teller_error *err)
{
    size_t ns = st->nsources;
    teller_events *ev = &st->ev;
    marker *mk = NULL;
    size_t nmk = 0, mcap = 0;
    for (size_t s = 0; s < ns; s++)
        for (size_t k = 0; k < sr[s].nmarks; k++) {
            const teller_step_mark *m = &sr[s].marks[k];
            uint32_t i = (uint32_t)range[s] + m->ev;
            if (TELLER_GROW(mk, mcap, nmk + 1))
                goto oom;
            mk[nmk++] = (marker){st->sources[s].rank, m->start, m->end, i, m->name, m->iter};
            ev->flags[i] |= TELLER_F_STEP;
        }
    teller_sort(mk, nmk, sizeof *mk, marker_cmp);
    teller_status es = eventless_steps(st, sr, holders, &mk, &nmk, &mcap, err);
    if (es != TELLER_OK) {
        free(mk);
        return es;
    }
    teller_sort(mk, nmk, sizeof *mk, marker_cmp);
    free(st->steps);
    free(st->step_names);
    st->step_names = NULL;
    st->steps = malloc((nmk ? nmk : 1) * sizeof *st->steps);
    uint32_t *num = malloc((nmk ? nmk : 1) * sizeof *num);
    if (!st->steps || !num || number_steps(mk, nmk, num)) {
        free(num);
        goto oom;
    }
    st->nsteps = nmk;
    st->step_count = 0;
    for (size_t k = 0; k < nmk; k++) {
        st->steps[k] = (teller_step){num[k], mk[k].rank, mk[k].ev, mk[k].start, mk[k].end};
        if (num[k] + 1 > st->step_count)
            st->step_count = num[k] + 1;
    }
    free(num);
    /* as stamping reads them, for a process that holds a rank's events;
     * cells given for other steps are gone */
    free(st->cells);
    free(st->cells_given);
    st->cells = NULL;
    st->cells_given = NULL;
    free(st->spans);
    if (!(st->spans = malloc((nmk ? nmk : 1) * sizeof *st->spans)))
        goto oom;
    memcpy(st->spans, st->steps, nmk * sizeof *st->spans);
    /* stamp every source's events on the pool, then take the latest end of
     * each step's GPU work (a maximum: the order does not matter) */
    step_stamp sp = {st, range, calloc(ns ? ns : 1, sizeof *sp.end), calloc(ns ? ns : 1, sizeof *sp.first)};
    int bad = !sp.end || !sp.first;
    if (!bad)
        teller_parallel_for(jobs, ns, stamp_steps, &sp);
    for (size_t s = 0; s < ns && !bad; s++)
        bad = sp.end[s] == NULL;
    teller_status hs = !bad && holders ? ask_holders(st, range, sr, holders, sp.end, err) : TELLER_OK;
    for (size_t s = 0; s < ns && !bad && hs == TELLER_OK; s++)
        for (size_t k = sp.first[s]; k < nmk && st->steps[k].rank == st->sources[s].rank; k++)
            if (sp.end[s][k - sp.first[s]] > st->steps[k].end_ns)
                st->steps[k].end_ns = sp.end[s][k - sp.first[s]];
    for (size_t s = 0; sp.end && s < ns; s++)
        free(sp.end[s]);
    free(sp.end);
    free(sp.first);
    if (bad)
        goto oom;
    if (hs != TELLER_OK) {
        free(mk);
        return hs;
    }
    /* by step, then rank, each row with its annotation's name (step_cmp
     * reads the row, first in the pair) */
    struct named {
        teller_step row;
        uint32_t    name;
    } *nm = malloc((nmk ? nmk : 1) * sizeof *nm);
    if (!nm || !(st->step_names = malloc((nmk ? nmk : 1) * sizeof *st->step_names))) {
        free(nm);
        goto oom;
    }
    for (size_t k = 0; k < nmk; k++)
        nm[k] = (struct named){st->steps[k], mk[k].name};
    teller_sort(nm, nmk, sizeof *nm, step_cmp);
    for (size_t k = 0; k < nmk; k++) {
        st->steps[k] = nm[k].row;
        st->step_names[k] = nm[k].name;
    }
    free(nm);
    free(mk);
    return TELLER_OK;
oom:
    free(mk);
    return teller_error_set(err, TELLER_ERR_NOMEM, "(trace)", 0, "out of memory");
}

/* Groups a store's events by source once reading is over: range[s]
 * receives where source s begins (ns + 1 entries), as do the sources'
 * first_event and num_events. 0, or -1 out of memory. */
static int group_sources(teller_store *st, size_t *range)
{
    teller_store_drop_scratch(st);
    if (group_by_source(st, range))
        return -1;
    for (size_t s = 0; s < st->nsources; s++) {
        st->sources[s].first_event = (uint32_t)range[s];
        st->sources[s].num_events = (uint32_t)(range[s + 1] - range[s]);
    }
    return 0;
}

/* 1 when a given summary names source k's events as they are: found
 * over as many events, a row for each communication kernel, each naming
 * one with its name, times, elements, rank list and direction, each marker
 * a host event of a layer that marks steps, with its times. (Process 0 of
 * teller-mpi holds the events its summaries were found among: a reader
 * that built its trees otherwise is caught here.) */
static int summary_matches(const teller_store *st, const size_t *range, size_t k, const teller_source_summary *sr)
{
    const teller_events *ev = &st->ev;
    size_t lo = range[k], comm = 0;
    if (sr->events != range[k + 1] - lo)
        return 0;
    for (size_t i = lo; i < range[k + 1]; i++)
        comm += ev->layer[i] == TELLER_LAYER_KERNEL && (ev->flags[i] & TELLER_F_COMM);
    int ok = comm == sr->nrows;
    for (size_t r = 0; r < sr->nrows && ok; r++) {
        const teller_coll_row *c = &sr->rows[r];
        size_t i = lo + c->ev;
        const teller_comm *cm = teller_store_event_comm(st, (uint32_t)i);
        ok = ev->layer[i] == TELLER_LAYER_KERNEL && (ev->flags[i] & TELLER_F_COMM) && ev->name[i] == c->name &&
             ev->start_ns[i] == c->start && ev->dur_ns[i] == c->dur &&
             c->elems == (cm && cm->in_nelems > 0 ? cm->in_nelems : -1) && c->pg_ranks == (cm ? cm->pg_ranks : 0) &&
             c->dir == comm_dir(st, cm);
    }
    for (size_t m = 0; m < sr->nmarks && ok; m++) {
        const teller_step_mark *mk = &sr->marks[m];
        size_t i = lo + mk->ev;
        ok = can_mark_step(ev->layer[i]) && !(ev->flags[i] & TELLER_F_GPU) && ev->name[i] == mk->name &&
             ev->start_ns[i] == mk->start && ev->start_ns[i] + ev->dur_ns[i] == mk->end;
    }
    return ok;
}

/* Finding each source's summary, on the pool; given ones are kept. */
typedef struct source_find {
    const teller_store    *st;
    const size_t          *range;
    const uint8_t         *is_marker; /* marker_names */
    teller_source_summary *sr;
    int                   *failed;
} source_find;

static void find_source(void *ctx, size_t s)
{
    source_find *f = ctx;
    if (f->sr[s].given)
        return;
    f->sr[s].events = (uint32_t)(f->range[s + 1] - f->range[s]);
    f->failed[s] =
        find_collectives(f->st, f->range, s, &f->sr[s]) || find_marks(f->st, f->range, s, f->is_marker, &f->sr[s]);
}

/* Passes 1 to 3 (sort, nesting, launch links) on every source, on jobs
 * threads; dups (per source) receives the API calls reusing an id. 0, or
 * -1 out of memory. */
static int build_sources(teller_store *st, const size_t *range, int jobs, int *failed, uint64_t *dups)
{
    teller_parallel_for(jobs, st->nsources, sort_nest_link, &(source_pass){&st->ev, range, failed, dups});
    int bad = 0;
    for (size_t s = 0; s < st->nsources; s++)
        bad |= failed[s];
    return bad ? -1 : 0;
}

/* Every source's summary not given (pass 4's rows, pass 7's markers) found
 * into sr, on jobs threads. 0, or -1 out of memory. */
static int find_summaries(const teller_store *st, const size_t *range, const regex_t *re, int jobs,
                          teller_source_summary *sr, int *failed)
{
    uint8_t *is = marker_names(st, range, sr, re);
    if (!is)
        return -1;
    teller_parallel_for(jobs, st->nsources, find_source, &(source_find){st, range, is, sr, failed});
    free(is);
    int bad = 0;
    for (size_t s = 0; s < st->nsources; s++)
        bad |= failed[s];
    return bad ? -1 : 0;
}

/* The per-source half of the build: events grouped by source (range),
 * passes 1 to 3 on each source, and the summaries not given found into
 * sr, on jobs threads. failed and dups: one entry per source (dups: the
 * API calls reusing an id). 0, or -1 out of memory. */
static int build_local(teller_store *st, const regex_t *re, int jobs, size_t *range, int *failed, uint64_t *dups,
                       teller_source_summary *sr)
{
    if (group_sources(st, range) || build_sources(st, range, jobs, failed, dups))
        return -1;
    return find_summaries(st, range, re, jobs, sr, failed);
}

teller_status teller_tree_local(teller_store *st, const teller_tree_opts *opts, teller_source_summary **out,
                                teller_error *err)
{
    size_t ns = st->nsources;
    regex_t re;
    teller_status s = step_regex(opts ? opts->step_pattern : NULL, &re, err);
    if (s != TELLER_OK)
        return s;
    int jobs = opts ? opts->jobs : 1;
    size_t *range = malloc((ns + 1) * sizeof *range);
    int *failed = calloc(ns ? ns : 1, sizeof *failed);
    uint64_t *dups = calloc(ns ? ns : 1, sizeof *dups);
    teller_source_summary *sr = calloc(ns ? ns : 1, sizeof *sr);
    int bad = !range || !failed || !dups || !sr || build_local(st, &re, jobs, range, failed, dups, sr);
    regfree(&re);
    free(range);
    free(failed);
    free(dups);
    if (bad) {
        teller_source_summary_free(sr, ns);
        return teller_error_set(err, TELLER_ERR_NOMEM, "(trace)", 0, "out of memory while building its trees");
    }
    *out = sr;
    return TELLER_OK;
}

const teller_step *teller_tree_spans(const teller_store *st, int32_t rank, size_t *count)
{
    size_t n = st->spans ? st->nsteps : 0, lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (st->spans[mid].rank < rank)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (*count = 0; lo + *count < n && st->spans[lo + *count].rank == rank;)
        ++*count;
    return st->spans ? st->spans + lo : NULL;
}

void teller_tree_stamp(teller_store *st, uint32_t s, int64_t offset_ns, const teller_step *rows, size_t count,
                       int64_t *end)
{
    teller_events *ev = &st->ev;
    size_t lo = st->sources[s].first_event, hi = lo + st->sources[s].num_events;
    for (size_t i = lo; i < hi; i++)
        ev->start_ns[i] -= offset_ns;
    stamp_source(ev, lo, hi, rows, count, end);
}

const teller_member_row *teller_tree_member_rows(const teller_store *st) { return st->member_rows; }

uint32_t teller_tree_event_source(const teller_store *st, uint32_t e)
{
    size_t lo = 0, hi = st->nsources;
    while (lo < hi) { /* the first source that begins past e */
        size_t mid = (lo + hi) / 2;
        if (st->sources[mid].first_event <= e)
            lo = mid + 1;
        else
            hi = mid;
    }
    return (uint32_t)(lo - 1);
}

void teller_source_summary_free(teller_source_summary *sr, size_t n)
{
    for (size_t s = 0; sr && s < n; s++) {
        free(sr[s].rows);
        free(sr[s].marks);
    }
    free(sr);
}

teller_status teller_tree_build(teller_store *st, const teller_tree_opts *opts, teller_error *err)
{
    return teller_tree_build_given(st, opts, NULL, NULL, err);
}

teller_status teller_tree_build_given(teller_store *st, const teller_tree_opts *opts, teller_source_summary *given,
                                      const teller_tree_holders *holders, teller_error *err)
{
    teller_tree_opts def = teller_tree_defaults();
    const teller_tree_opts *o = opts ? opts : &def;
    teller_events *ev = &st->ev;
    size_t ns = st->nsources;
    regex_t re;
    teller_status s = step_regex(o->step_pattern, &re, err);
    if (s != TELLER_OK)
        return s;
    size_t *range = malloc((ns + 1) * sizeof *range);
    int *failed = calloc(ns ? ns : 1, sizeof *failed);
    uint64_t *dups = calloc(ns ? ns : 1, sizeof *dups);
    int32_t *egrp = malloc((ns ? ns : 1) * sizeof *egrp); /* per source: engine_groups, for both matchings */
    teller_source_summary *sr = given ? given : calloc(ns ? ns : 1, sizeof *sr);
    member_end *mend = NULL;
    size_t ordered = 0;
    if (!range || !failed || !dups || !egrp || !sr || build_local(st, &re, o->jobs, range, failed, dups, sr))
        s = teller_error_set(err, TELLER_ERR_NOMEM, "(trace)", 0, "out of memory while building the trees");
    regfree(&re);
    uint64_t ndup = 0;
    for (size_t k = 0; s == TELLER_OK && k < ns; k++)
        ndup += dups[k];
    if (ndup)
        teller_store_warn(st, "(trace)", 0,
                          "%llu API calls reuse a correlation id already seen; GPU work links to the first",
                          (unsigned long long)ndup);
    for (size_t k = 0; given && k < ns && s == TELLER_OK; k++)
        if (sr[k].given && !summary_matches(st, range, k, &sr[k]))
            s = teller_error_set(err, TELLER_ERR_FORMAT, teller_store_str(st, st->sources[k].path), 0,
                                 "its summary does not match its events");
    if (s == TELLER_OK && (assign_ranks_nodes(st, o) || match_collectives(st, sr, o->jobs, 0, egrp, &ordered, &mend) ||
                           estimate_offsets(st, range, o->jobs, mend, sr)))
        s = teller_error_set(err, TELLER_ERR_NOMEM, "(trace)", 0, "out of memory while matching collectives");
    free(mend);
    if (s == TELLER_OK)
        s = cut_steps(st, range, sr, holders, o->jobs, err);
    /* the rows' steps, known now (a holder's from it): the engines' own
     * collectives line up within steps */
    for (size_t k = 0; s == TELLER_OK && k < ns; k++)
        for (size_t r = 0; !(holders && sr[k].given) && r < sr[k].nrows; r++)
            sr[k].rows[r].step = ev->step[range[k] + sr[k].rows[r].ev];
    if (s == TELLER_OK && ordered && match_collectives(st, sr, o->jobs, 1, egrp, &ordered, NULL))
        s = teller_error_set(err, TELLER_ERR_NOMEM, "(trace)", 0, "out of memory while matching collectives");
    if (s == TELLER_OK && member_rows(st, range, sr))
        s = teller_error_set(err, TELLER_ERR_NOMEM, "(trace)", 0, "out of memory");
    if (!given)
        teller_source_summary_free(sr, ns);
    free(range);
    free(failed);
    free(dups);
    free(egrp);
    return s;
}

void teller_tree_stats_get(const teller_store *st, teller_tree_stats *out)
{
    memset(out, 0, sizeof *out);
    const teller_events *ev = &st->ev;
    out->events = ev->n;
    for (size_t i = 0; i < ev->n; i++) {
        uint8_t L = ev->layer[i];
        out->by_layer[L < TELLER_LAYER_COUNT ? L : TELLER_LAYER_OTHER]++;
        if (ev->depth[i] > out->max_depth)
            out->max_depth = ev->depth[i];
        int launched = ev->parent[i] != TELLER_NONE &&
                       (ev->layer[ev->parent[i]] == TELLER_LAYER_RUNTIME || ev->layer[ev->parent[i]] == TELLER_LAYER_DRIVER);
        if (L == TELLER_LAYER_KERNEL) {
            out->kernels++;
            out->kernels_linked += (uint64_t)launched;
            if (ev->flags[i] & TELLER_F_COMM)
                out->comm_kernels++;
        }
        if (teller_layer_is_gpu_work(L)) {
            out->gpu_ops++;
            out->gpu_ops_linked += (uint64_t)launched;
        }
        if (ev->flags[i] & TELLER_F_PROFILER) {
            out->profiler++;
            out->profiler_ns += ev->dur_ns[i];
        }
        if (ev->flags[i] & TELLER_F_GRAPH) {
            out->graph_launches++;
            uint64_t fan = 0;
            for (uint32_t c = ev->first_child[i]; c != TELLER_NONE; c = ev->next_sibling[c])
                fan += (ev->flags[c] & TELLER_F_GPU) != 0;
            if (fan > out->max_graph_fanout)
                out->max_graph_fanout = fan;
        }
    }
}
