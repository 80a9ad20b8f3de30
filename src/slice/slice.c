/*
 * slice.c - causal-context slices around seed events. Relations, weights
 * and the bound are documented in include/teller/slice.h.
 *
 * Items live in one array with an event -> item hash, so an event reached
 * by two relations is one item that keeps the higher weight.
 */
#include <stdlib.h>
#include <string.h>

#include "teller/slice.h"
#include "teller/tree.h"
#include "../util/vec.h"

static const char *const k_rel_names[TELLER_REL_COUNT] = {"seed",  "launch",      "ancestor",  "peer",
                                                          "child", "peer_launch", "neighbour", "launch_prev"};
static const float k_rel_weight[TELLER_REL_COUNT] = {1.00f, 0.95f, 0.90f, 0.85f, 0.80f, 0.70f, 0.70f, 0.60f};

const char *teller_slice_rel_name(teller_slice_rel r)
{
    return r < TELLER_REL_COUNT ? k_rel_names[r] : "?";
}

float teller_slice_rel_weight(teller_slice_rel r)
{
    return r < TELLER_REL_COUNT ? k_rel_weight[r] : 0.0f;
}

teller_slice_opts teller_slice_defaults(void)
{
    teller_slice_opts o = {256, 2};
    return o;
}

typedef struct slicer {
    const teller_store  *st;
    const teller_events *ev;
    teller_slice_item   *items;
    size_t               n, cap;
    uint32_t            *hkey, *hval; /* event -> item */
    size_t               hcap;
    int                  oom;
} slicer;

static size_t hslot(const slicer *s, uint32_t e)
{
    size_t j = ((uint64_t)e * 0x9e3779b97f4a7c15ull >> 20) & (s->hcap - 1);
    while (s->hkey[j] != TELLER_NONE && s->hkey[j] != e)
        j = (j + 1) & (s->hcap - 1);
    return j;
}

static void add(slicer *s, uint32_t e, teller_slice_rel rel, float w)
{
    if (s->oom || e == TELLER_NONE)
        return;
    if ((s->n + 1) * 2 > s->hcap) {
        size_t nc = s->hcap ? s->hcap * 2 : 1024;
        uint32_t *k = malloc(nc * sizeof *k), *v = malloc(nc * sizeof *v);
        if (!k || !v) {
            free(k);
            free(v);
            s->oom = 1;
            return;
        }
        memset(k, 0xff, nc * sizeof *k);
        free(s->hkey);
        free(s->hval);
        s->hkey = k;
        s->hval = v;
        s->hcap = nc;
        for (size_t i = 0; i < s->n; i++) {
            size_t j = hslot(s, s->items[i].event);
            s->hkey[j] = s->items[i].event;
            s->hval[j] = (uint32_t)i;
        }
    }
    size_t j = hslot(s, e);
    if (s->hkey[j] == e) {
        teller_slice_item *it = &s->items[s->hval[j]];
        if (w > it->weight) {
            it->weight = w;
            it->rel = (uint8_t)rel;
        }
        return;
    }
    if (TELLER_GROW(s->items, s->cap, s->n + 1)) {
        s->oom = 1;
        return;
    }
    s->hkey[j] = e;
    s->hval[j] = (uint32_t)s->n;
    s->items[s->n++] = (teller_slice_item){e, (uint8_t)rel, w};
}

static int same_row(const teller_events *ev, uint32_t a, uint32_t b)
{
    return ev->source[a] == ev->source[b] && ev->track[a] == ev->track[b] &&
           (ev->flags[a] & TELLER_F_GPU) == (ev->flags[b] & TELLER_F_GPU);
}

/* The k nearest events on e's thread or stream at e's depth, each side.
 * Events are sorted by row, then start, so they are found by walking the
 * index; leaving the row, or going above e's depth (leaving its parent),
 * stops the walk. */
static void neighbours(slicer *s, uint32_t e, uint32_t k, teller_slice_rel rel, float w0)
{
    const teller_events *ev = s->ev;
    for (int dir = -1; dir <= 1; dir += 2) {
        float w = w0;
        uint32_t found = 0;
        int64_t i = (int64_t)e + dir;
        for (int steps = 0; found < k && i >= 0 && (size_t)i < ev->n && steps < 100000; i += dir, steps++) {
            uint32_t c = (uint32_t)i;
            if (!same_row(ev, c, e) || ev->depth[c] < ev->depth[e])
                break;
            if (ev->depth[c] != ev->depth[e] || (ev->flags[c] & (TELLER_F_INSTANT | TELLER_F_COUNTER)))
                continue;
            add(s, c, rel, w);
            w *= 0.7f;
            found++;
        }
    }
}

static int is_gpu_op(uint8_t L)
{
    return L == TELLER_LAYER_KERNEL || L == TELLER_LAYER_MEMCPY || L == TELLER_LAYER_MEMSET || L == TELLER_LAYER_SYNC;
}

typedef struct order_ctx_item {
    teller_slice_item it;
    int64_t           key1; /* distance or start */
} order_item;

static int by_relevance(const void *a, const void *b)
{
    const order_item *x = a, *y = b;
    if (x->it.weight != y->it.weight)
        return x->it.weight > y->it.weight ? -1 : 1;
    if (x->key1 != y->key1)
        return x->key1 < y->key1 ? -1 : 1;
    return (x->it.event > y->it.event) - (x->it.event < y->it.event);
}

static int by_time(const void *a, const void *b)
{
    const order_item *x = a, *y = b;
    if (x->key1 != y->key1)
        return x->key1 < y->key1 ? -1 : 1;
    return (x->it.event > y->it.event) - (x->it.event < y->it.event);
}

teller_status teller_slice_build(const teller_store *st, const uint32_t *seeds, size_t nseeds,
                                 const teller_slice_opts *opts, teller_slice_item **out, size_t *nout,
                                 teller_error *err)
{
    *out = NULL;
    *nout = 0;
    teller_slice_opts o = opts ? *opts : teller_slice_defaults();
    if (o.max_events == 0)
        o.max_events = 1;
    slicer s;
    memset(&s, 0, sizeof s);
    s.st = st;
    s.ev = teller_store_events(st);
    const teller_events *ev = s.ev;
    uint32_t *queue = NULL, *coll_of = NULL;
    size_t qcap = 0;
    order_item *ord = NULL;
    for (size_t k = 0; k < nseeds; k++)
        if (seeds[k] >= ev->n)
            return teller_error_set(err, TELLER_ERR_ARG, "(slice)", 0, "seed event %u does not exist", seeds[k]);
    for (size_t k = 0; k < nseeds && !s.oom; k++) {
        uint32_t e = seeds[k];
        add(&s, e, TELLER_REL_SEED, 1.0f);
        /* up: the launch of a GPU op, then ancestors */
        uint32_t p = ev->parent[e];
        float w = 0.9f;
        if (p != TELLER_NONE && is_gpu_op(ev->layer[e]) &&
            (ev->layer[p] == TELLER_LAYER_RUNTIME || ev->layer[p] == TELLER_LAYER_DRIVER)) {
            add(&s, p, TELLER_REL_LAUNCH, k_rel_weight[TELLER_REL_LAUNCH]);
            neighbours(&s, p, 1, TELLER_REL_LAUNCH_PREV, k_rel_weight[TELLER_REL_LAUNCH_PREV]);
            p = ev->parent[p];
            w *= 0.9f;
        }
        for (; p != TELLER_NONE; p = ev->parent[p], w *= 0.9f)
            add(&s, p, TELLER_REL_ANCESTOR, w);
        /* down: breadth first, at most max_events descendants */
        size_t qh = 0, qt = 0;
        if (TELLER_GROW(queue, qcap, 1)) {
            s.oom = 1;
            break;
        }
        queue[qt++] = e;
        size_t taken = 0;
        while (qh < qt && taken < o.max_events && !s.oom) {
            uint32_t x = queue[qh++];
            int lvl = ev->depth[x] - ev->depth[e] + 1;
            float cw = k_rel_weight[TELLER_REL_CHILD];
            for (int l = 1; l < lvl; l++)
                cw *= 0.8f;
            for (uint32_t c = ev->first_child[x]; c != TELLER_NONE && taken < o.max_events; c = ev->next_sibling[c]) {
                if (ev->flags[c] & (TELLER_F_INSTANT | TELLER_F_COUNTER))
                    continue;
                add(&s, c, TELLER_REL_CHILD, cw);
                taken++;
                if (TELLER_GROW(queue, qcap, qt + 1)) {
                    s.oom = 1;
                    break;
                }
                queue[qt++] = c;
            }
        }
        neighbours(&s, e, o.neighbours, TELLER_REL_NEIGHBOUR, k_rel_weight[TELLER_REL_NEIGHBOUR]);
    }
    /* the horizontal relation: peers of every COMM kernel in the slice */
    size_t ncoll = teller_store_num_collectives(st);
    if (!s.oom && ncoll) {
        const teller_collective *co = teller_store_collectives(st);
        const teller_coll_member *mem = teller_store_coll_members(st);
        coll_of = malloc(ev->n * sizeof *coll_of);
        if (!coll_of)
            s.oom = 1;
        else {
            memset(coll_of, 0xff, ev->n * sizeof *coll_of);
            for (size_t c = 0; c < ncoll; c++)
                for (uint32_t m = co[c].first_member; m < co[c].first_member + co[c].num_members; m++)
                    if (mem[m].kernel < ev->n)
                        coll_of[mem[m].kernel] = (uint32_t)c;
            size_t n0 = s.n;
            for (size_t i = 0; i < n0 && !s.oom; i++) {
                uint32_t e = s.items[i].event;
                float base = s.items[i].weight;
                if (coll_of[e] == TELLER_NONE || s.items[i].rel == TELLER_REL_PEER ||
                    s.items[i].rel == TELLER_REL_NEIGHBOUR)
                    continue;
                const teller_collective *c = &co[coll_of[e]];
                for (uint32_t m = c->first_member; m < c->first_member + c->num_members; m++) {
                    uint32_t k = mem[m].kernel;
                    if (k == e || k >= ev->n)
                        continue;
                    add(&s, k, TELLER_REL_PEER, base * k_rel_weight[TELLER_REL_PEER]);
                    add(&s, ev->parent[k], TELLER_REL_PEER_LAUNCH, base * k_rel_weight[TELLER_REL_PEER_LAUNCH]);
                }
            }
        }
    }
    if (s.oom)
        goto oom;
    ord = malloc((s.n ? s.n : 1) * sizeof *ord);
    if (!ord)
        goto oom;
    int64_t t0 = nseeds ? ev->start_ns[seeds[0]] : 0;
    for (size_t i = 0; i < s.n; i++) {
        int64_t d = ev->start_ns[s.items[i].event] - t0;
        ord[i] = (order_item){s.items[i], d < 0 ? -d : d};
    }
    size_t keep = s.n;
    if (keep > o.max_events) {
        teller_sort(ord, s.n, sizeof *ord, by_relevance);
        keep = o.max_events;
    }
    for (size_t i = 0; i < keep; i++)
        ord[i].key1 = ev->start_ns[ord[i].it.event];
    teller_sort(ord, keep, sizeof *ord, by_time);
    for (size_t i = 0; i < keep; i++)
        s.items[i] = ord[i].it;
    *out = s.items;
    *nout = keep;
    s.items = NULL;
    free(ord);
    free(queue);
    free(coll_of);
    free(s.hkey);
    free(s.hval);
    return TELLER_OK;
oom:
    free(ord);
    free(queue);
    free(coll_of);
    free(s.items);
    free(s.hkey);
    free(s.hval);
    return teller_error_set(err, TELLER_ERR_NOMEM, "(slice)", 0, "out of memory while slicing");
}

uint32_t teller_slice_find_seed(const teller_store *st, uint32_t step, int32_t rank, const char *op)
{
    const teller_events *ev = teller_store_events(st);
    if (!op) {
        const teller_step *steps = teller_store_steps(st);
        for (size_t k = 0; k < teller_store_num_steps(st); k++)
            if (steps[k].step == step && steps[k].rank == rank && steps[k].marker != TELLER_NONE)
                return steps[k].marker;
    }
    uint32_t best = TELLER_NONE;
    char norm[1024];
    for (size_t i = 0; i < ev->n; i++) {
        if (ev->step[i] != step || teller_store_event_rank(st, (uint32_t)i) != rank ||
            (ev->flags[i] & (TELLER_F_INSTANT | TELLER_F_COUNTER)))
            continue;
        if (op) {
            const char *name = teller_store_str(st, ev->name[i]);
            teller_name_normalize(name, norm, sizeof norm);
            if (strcmp(norm, op) && !strstr(name, op))
                continue;
        } else if (ev->parent[i] != TELLER_NONE && ev->step[ev->parent[i]] == step)
            continue;
        if (best == TELLER_NONE || ev->dur_ns[i] > ev->dur_ns[best])
            best = (uint32_t)i;
    }
    return best;
}
