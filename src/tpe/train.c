/*
 * train.c - TPE training: word-level BPE over base token sequences, with
 * their repeat runs collapsed first (repeat.c), as the encoder sees them.
 *
 * First the names the merges will know are chosen: those that at least
 * min_runs runs hold (a name one workload alone shows teaches merges no
 * other workload can use); every other name pairs as its layer's symbol,
 * in training as in encoding (tpe.h, "Known names").
 *
 * All distinct sequences (identical ones are counted once, with the sum of
 * their weights), collapsed, are laid end to end in one array of positions
 * linked as doubly linked lists; a merge overwrites the left position's
 * symbol and unlinks the right one, so positions keep their own parent and
 * depth (the merged token keeps the first token's); a repeat token merges
 * with nothing. Each pair has a count and a list of positions
 * where it was seen (entries go stale and are checked when used: a
 * position's symbol only ever changes to a newer id, so a stale entry can
 * never look valid again). A lazy max-heap orders pairs by count, then
 * lower left id, then lower right id: an entry whose count is out of date
 * is re-pushed with the current count when it reaches the top, and pairs
 * whose count grows get a new entry, so the top valid entry is the best
 * pair. A merge touches only the neighbours of its occurrences: no recount.
 */
#include <stdlib.h>
#include <string.h>

#include "tpe_internal.h"
#include "../util/vec.h"

teller_tpe_train_opts teller_tpe_train_defaults(void)
{
    teller_tpe_train_opts o = {256, 2, 3};
    return o;
}

typedef struct heap_ent {
    int64_t  cnt;
    uint32_t a, b, pid;
} heap_ent;

typedef struct trainer {
    int       cross;
    /* positions */
    size_t    np;
    uint32_t *sym, *nxt, *prv, *par, *wt;
    uint16_t *dep;
    /* pairs */
    size_t    npairs, pcap;
    uint32_t *pa, *pb, *stamp;
    int64_t  *cnt;
    uint32_t **occ;
    uint32_t *occn, *occcap;
    uint64_t *hkey; /* (a << 32 | b) -> pid */
    uint32_t *hval;
    size_t    hcap;
    heap_ent *heap;
    size_t    nheap, heapcap;
    /* one merge's scratch: the pairs whose count grew, its occurrences */
    uint32_t *touched, *work;
    size_t    ntouched, tcap, wcap;
} trainer;

/* Whether positions p, q (adjacent) may merge: never with a repeat token. */
static int allowed(const trainer *t, uint32_t p, uint32_t q)
{
    return !tpe_is_repeat(t->sym[p]) && !tpe_is_repeat(t->sym[q]) &&
           (t->cross || (t->par[p] == t->par[q] && t->dep[p] == t->dep[q]));
}

static int heap_before(const heap_ent *x, const heap_ent *y)
{
    if (x->cnt != y->cnt)
        return x->cnt > y->cnt;
    if (x->a != y->a)
        return x->a < y->a;
    return x->b < y->b;
}

static int heap_push(trainer *t, uint32_t pid)
{
    if (TELLER_GROW(t->heap, t->heapcap, t->nheap + 1))
        return -1;
    heap_ent e = {t->cnt[pid], t->pa[pid], t->pb[pid], pid};
    size_t i = t->nheap++;
    while (i > 0) {
        size_t up = (i - 1) / 2;
        if (!heap_before(&e, &t->heap[up]))
            break;
        t->heap[i] = t->heap[up];
        i = up;
    }
    t->heap[i] = e;
    return 0;
}

static heap_ent heap_pop(trainer *t)
{
    heap_ent top = t->heap[0], last = t->heap[--t->nheap];
    size_t i = 0, n = t->nheap;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n)
            break;
        if (c + 1 < n && heap_before(&t->heap[c + 1], &t->heap[c]))
            c++;
        if (!heap_before(&t->heap[c], &last))
            break;
        t->heap[i] = t->heap[c];
        i = c;
    }
    if (n)
        t->heap[i] = last;
    return top;
}

static int rehash(trainer *t, size_t cap)
{
    uint64_t *k = malloc(cap * sizeof *k);
    uint32_t *v = malloc(cap * sizeof *v);
    if (!k || !v) {
        free(k);
        free(v);
        return -1;
    }
    memset(k, 0xff, cap * sizeof *k);
    for (size_t p = 0; p < t->npairs; p++) {
        uint64_t key = ((uint64_t)t->pa[p] << 32) | t->pb[p];
        size_t j = tpe_mix64(key) & (cap - 1);
        while (k[j] != UINT64_MAX)
            j = (j + 1) & (cap - 1);
        k[j] = key;
        v[j] = (uint32_t)p;
    }
    free(t->hkey);
    free(t->hval);
    t->hkey = k;
    t->hval = v;
    t->hcap = cap;
    return 0;
}

/* The pair id of (a, b), created when create is set; TELLER_NONE when
 * absent (or out of memory, which *oom reports). */
static uint32_t pair_id(trainer *t, uint32_t a, uint32_t b, int create, int *oom)
{
    uint64_t key = ((uint64_t)a << 32) | b;
    size_t j = tpe_mix64(key) & (t->hcap - 1);
    while (t->hkey[j] != UINT64_MAX) {
        if (t->hkey[j] == key)
            return t->hval[j];
        j = (j + 1) & (t->hcap - 1);
    }
    if (!create)
        return TELLER_NONE;
    if ((t->npairs + 1) * 2 > t->hcap) {
        if (rehash(t, t->hcap * 2)) {
            *oom = 1;
            return TELLER_NONE;
        }
        return pair_id(t, a, b, create, oom);
    }
    if (t->npairs == t->pcap) {
        size_t nc = t->pcap ? t->pcap * 2 : 4096;
        void *p;
#define RE(f)                                                \
    if (!(p = realloc(t->f, nc * sizeof *t->f))) {           \
        *oom = 1;                                            \
        return TELLER_NONE;                                  \
    }                                                        \
    t->f = p;
        RE(pa) RE(pb) RE(stamp) RE(cnt) RE(occ) RE(occn) RE(occcap)
#undef RE
        t->pcap = nc;
    }
    uint32_t id = (uint32_t)t->npairs++;
    t->pa[id] = a;
    t->pb[id] = b;
    t->stamp[id] = 0;
    t->cnt[id] = 0;
    t->occ[id] = NULL;
    t->occn[id] = t->occcap[id] = 0;
    t->hkey[j] = key;
    t->hval[j] = id;
    return id;
}

static int add_occ(trainer *t, uint32_t a, uint32_t b, uint32_t pos, uint32_t w, uint32_t stamp, uint32_t **touched,
                   size_t *ntouched, size_t *tcap)
{
    int oom = 0;
    uint32_t id = pair_id(t, a, b, 1, &oom);
    if (oom)
        return -1;
    if (t->occn[id] == t->occcap[id]) {
        uint32_t nc = t->occcap[id] ? t->occcap[id] * 2 : 4;
        uint32_t *p = realloc(t->occ[id], nc * sizeof *p);
        if (!p)
            return -1;
        t->occ[id] = p;
        t->occcap[id] = nc;
    }
    t->occ[id][t->occn[id]++] = pos;
    t->cnt[id] += w;
    if (touched && t->stamp[id] != stamp) {
        t->stamp[id] = stamp;
        if (TELLER_GROW(*touched, *tcap, *ntouched + 1))
            return -1;
        (*touched)[(*ntouched)++] = id;
    }
    return 0;
}

static void dec(trainer *t, uint32_t a, uint32_t b, uint32_t w)
{
    int oom = 0;
    uint32_t id = pair_id(t, a, b, 0, &oom);
    if (id != TELLER_NONE)
        t->cnt[id] -= w;
}

static void trainer_free(trainer *t)
{
    free(t->sym);
    free(t->nxt);
    free(t->prv);
    free(t->par);
    free(t->wt);
    free(t->dep);
    for (size_t p = 0; p < t->npairs; p++)
        free(t->occ[p]);
    free(t->pa);
    free(t->pb);
    free(t->stamp);
    free(t->cnt);
    free(t->occ);
    free(t->occn);
    free(t->occcap);
    free(t->hkey);
    free(t->hval);
    free(t->heap);
    free(t->touched);
    free(t->work);
}

static uint64_t seq_hash(const teller_tpe_seq *s)
{
    uint64_t h = 0x9e3779b97f4a7c15ull ^ s->n;
    for (size_t i = 0; i < s->n; i++)
        h = tpe_mix64(h ^ (((uint64_t)s->sym[i] << 32) | ((uint64_t)s->depth[i] << 16))) + s->parent[i];
    return h;
}

static int seq_equal(const teller_tpe_seq *x, const teller_tpe_seq *y)
{
    return x->n == y->n && !memcmp(x->sym, y->sym, x->n * sizeof *x->sym) &&
           !memcmp(x->parent, y->parent, x->n * sizeof *x->parent) &&
           !memcmp(x->depth, y->depth, x->n * sizeof *x->depth);
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

teller_status teller_tpe_train(teller_tpe_vocab *v, const teller_tpe_seq *seqs, size_t nseqs,
                               const teller_tpe_train_opts *opts, teller_error *err)
{
    return teller_tpe_train_runs(v, seqs, NULL, NULL, nseqs, opts, err);
}

teller_status teller_tpe_train_weighted(teller_tpe_vocab *v, const teller_tpe_seq *seqs, const uint32_t *weights,
                                        size_t nseqs, const teller_tpe_train_opts *opts, teller_error *err)
{
    return teller_tpe_train_runs(v, seqs, weights, NULL, nseqs, opts, err);
}

/* Step 0: the names the merges know by their own symbol: the base symbols
 * that at least min_runs runs hold (runs[k] the run of sequence k; NULL:
 * every sequence its own run), sequences of weight 0 left out. Counted
 * with one hash set of (symbol, run). A name once known stays known. */
static teller_status mark_known(teller_tpe_vocab *v, const teller_tpe_seq *seqs, const uint32_t *weights,
                                const uint32_t *runs, size_t nseqs, uint32_t min_runs, teller_error *err)
{
    if (min_runs <= 1) {
        for (size_t k = 0; k < nseqs; k++)
            for (size_t i = 0; i < seqs[k].n && !(weights && !weights[k]); i++)
                if (seqs[k].sym[i] < v->n)
                    tpe_vocab_set_known(v, seqs[k].sym[i]);
        return TELLER_OK;
    }
    size_t total = 0, cap = 64;
    for (size_t k = 0; k < nseqs; k++)
        total += weights && !weights[k] ? 0 : seqs[k].n;
    while (cap < total * 2)
        cap *= 2;
    uint64_t *set = malloc(cap * sizeof *set);
    uint32_t *nruns = calloc(v->n ? v->n : 1, sizeof *nruns);
    if (!set || !nruns) {
        free(set);
        free(nruns);
        return teller_error_set(err, TELLER_ERR_NOMEM, "(tpe)", 0, "out of memory while training");
    }
    memset(set, 0xff, cap * sizeof *set);
    for (size_t k = 0; k < nseqs; k++) {
        if (weights && !weights[k])
            continue;
        uint64_t run = runs ? runs[k] : (uint64_t)k;
        for (size_t i = 0; i < seqs[k].n; i++) {
            uint32_t sym = seqs[k].sym[i];
            if (sym >= v->n)
                continue; /* lay_out reports it */
            uint64_t key = ((uint64_t)sym << 32) ^ run; /* runs beyond 32 bits only cost a collision's count */
            size_t j = tpe_mix64(key) & (cap - 1);
            while (set[j] != UINT64_MAX && set[j] != key)
                j = (j + 1) & (cap - 1);
            if (set[j] == key)
                continue;
            set[j] = key;
            if (++nruns[sym] == min_runs)
                tpe_vocab_set_known(v, sym);
        }
    }
    free(set);
    free(nruns);
    return TELLER_OK;
}

/* Step 1: the distinct sequences of two tokens or more with a weight
 * (uniq[u] indexes seqs; weight[u] sums the weights of its copies), and
 * their tokens in all (*total). *uniq and *weight are the caller's to free. */
static teller_status distinct_seqs(const teller_tpe_seq *seqs, const uint32_t *weights, size_t nseqs, uint32_t **uniq,
                                   uint32_t **weight, size_t *nuniq, size_t *total, teller_error *err)
{
    size_t dcap = 16;
    while (dcap < nseqs * 2)
        dcap *= 2;
    *uniq = malloc((nseqs ? nseqs : 1) * sizeof **uniq);
    *weight = malloc((nseqs ? nseqs : 1) * sizeof **weight);
    uint32_t *dh = malloc(dcap * sizeof *dh); /* open addressing: index into uniq */
    if (!*uniq || !*weight || !dh) {
        free(dh);
        return TELLER_ERR_NOMEM;
    }
    memset(dh, 0xff, dcap * sizeof *dh);
    teller_status st = TELLER_OK;
    for (size_t s = 0; s < nseqs; s++) {
        uint32_t w = weights ? weights[s] : 1;
        if (seqs[s].n < 2 || w == 0)
            continue;
        size_t j = seq_hash(&seqs[s]) & (dcap - 1);
        while (dh[j] != TELLER_NONE && !seq_equal(&seqs[(*uniq)[dh[j]]], &seqs[s]))
            j = (j + 1) & (dcap - 1);
        if (dh[j] != TELLER_NONE) {
            (*weight)[dh[j]] = (*weight)[dh[j]] > UINT32_MAX - w ? UINT32_MAX : (*weight)[dh[j]] + w;
            continue;
        }
        if (*total + seqs[s].n >= UINT32_MAX) {
            st = teller_error_set(err, TELLER_ERR_LIMIT, "(tpe)", 0, "training input over 4G distinct tokens");
            break;
        }
        dh[j] = (uint32_t)*nuniq;
        (*weight)[*nuniq] = w;
        (*uniq)[(*nuniq)++] = (uint32_t)s;
        *total += seqs[s].n;
    }
    free(dh);
    return st;
}

/* Step 2: the positions of the distinct sequences, collapsed, end to end
 * (total base tokens at most), each with its sequence's weight, and an
 * empty pair table. */
static teller_status lay_out(trainer *t, const teller_tpe_vocab *v, const teller_tpe_seq *seqs, const uint32_t *uniq,
                             const uint32_t *weight, size_t nuniq, size_t total, teller_error *err)
{
    size_t m = total ? total : 1;
    t->sym = malloc(m * sizeof *t->sym);
    t->nxt = malloc(m * sizeof *t->nxt);
    t->prv = malloc(m * sizeof *t->prv);
    t->par = malloc(m * sizeof *t->par);
    t->wt = malloc(m * sizeof *t->wt);
    t->dep = malloc(m * sizeof *t->dep);
    t->hcap = 1u << 16;
    t->hkey = malloc(t->hcap * sizeof *t->hkey);
    t->hval = malloc(t->hcap * sizeof *t->hval);
    if (!t->sym || !t->nxt || !t->prv || !t->par || !t->wt || !t->dep || !t->hkey || !t->hval)
        return TELLER_ERR_NOMEM;
    memset(t->hkey, 0xff, t->hcap * sizeof *t->hkey);
    tpe_runs runs;
    memset(&runs, 0, sizeof runs);
    teller_status st = TELLER_OK;
    size_t pos = 0, based = 0; /* positions; base tokens before this sequence */
    for (size_t u = 0; u < nuniq && st == TELLER_OK; u++) {
        const teller_tpe_seq *s = &seqs[uniq[u]];
        for (size_t i = 0; i < s->n && st == TELLER_OK; i++)
            if (s->sym[i] >= v->n || tpe_is_repeat(s->sym[i]))
                st = teller_error_set(err, TELLER_ERR_ARG, "(tpe)", 0,
                                      "symbol %u is not in the vocabulary or is a repeat symbol", s->sym[i]);
        if (st == TELLER_OK && tpe_runs_collapse(&runs, s))
            st = TELLER_ERR_NOMEM;
        for (size_t i = 0; st == TELLER_OK && i < runs.m; i++, pos++) {
            uint32_t f = runs.first[i];
            t->sym[pos] = tpe_key(v, runs.sym[i]); /* a name the merges do not know pairs as its layer */
            t->prv[pos] = i ? (uint32_t)pos - 1 : TELLER_NONE;
            t->nxt[pos] = i + 1 < runs.m ? (uint32_t)pos + 1 : TELLER_NONE;
            /* parents compare by base token, which need not be a position */
            t->par[pos] = s->parent[f] == TELLER_NONE ? TELLER_NONE : (uint32_t)(based + s->parent[f]);
            t->dep[pos] = s->depth[f];
            t->wt[pos] = weight[u];
        }
        based += s->n;
    }
    t->np = pos;
    tpe_runs_free(&runs);
    return st;
}

/* Step 3: every adjacent pair that may merge counted, and those seen
 * min_count times or more on the heap. Returns 0, or -1 when out of memory. */
static int count_pairs(trainer *t, uint32_t min_count)
{
    for (size_t p = 0; p < t->np; p++)
        if (t->nxt[p] != TELLER_NONE && allowed(t, (uint32_t)p, t->nxt[p]) &&
            add_occ(t, t->sym[p], t->sym[t->nxt[p]], (uint32_t)p, t->wt[p], 0, NULL, NULL, NULL))
            return -1;
    for (size_t p = 0; p < t->npairs; p++)
        if (t->cnt[p] >= min_count && heap_push(t, (uint32_t)p))
            return -1;
    return 0;
}

/* Merges every occurrence of pair pid (a, b) into token c: the pairs
 * around each lose its weight, the new pairs with c gain it and are listed
 * in t->touched under stamp. Returns 0, or -1 when out of memory. */
static int merge_pair(trainer *t, uint32_t pid, uint32_t a, uint32_t b, uint32_t c, uint32_t stamp)
{
    /* take the occurrence list: new pairs all contain c, so none is this one */
    size_t nocc = t->occn[pid];
    if (TELLER_GROW(t->work, t->wcap, nocc + 1))
        return -1;
    memcpy(t->work, t->occ[pid], nocc * sizeof *t->work);
    free(t->occ[pid]);
    t->occ[pid] = NULL;
    t->occn[pid] = t->occcap[pid] = 0;
    if (a == b) /* overlapping runs merge left to right, as the encoder does */
        qsort(t->work, nocc, sizeof *t->work, cmp_u32);
    t->ntouched = 0;
    for (size_t k = 0; k < nocc; k++) {
        uint32_t p = t->work[k];
        if (t->sym[p] != a)
            continue;
        uint32_t q = t->nxt[p];
        if (q == TELLER_NONE || t->sym[q] != b || !allowed(t, p, q))
            continue;
        uint32_t w = t->wt[p], pp = t->prv[p], r = t->nxt[q];
        if (pp != TELLER_NONE && allowed(t, pp, p))
            dec(t, t->sym[pp], a, w);
        if (r != TELLER_NONE && allowed(t, q, r))
            dec(t, b, t->sym[r], w);
        t->cnt[pid] -= w;
        t->sym[p] = c;
        t->sym[q] = TELLER_NONE;
        t->nxt[p] = r;
        if (r != TELLER_NONE)
            t->prv[r] = p;
        if (pp != TELLER_NONE && allowed(t, pp, p) &&
            add_occ(t, t->sym[pp], c, pp, w, stamp, &t->touched, &t->ntouched, &t->tcap))
            return -1;
        if (r != TELLER_NONE && allowed(t, p, r) &&
            add_occ(t, c, t->sym[r], p, w, stamp, &t->touched, &t->ntouched, &t->tcap))
            return -1;
    }
    return 0;
}

/* Step 4: up to o->vocab merges into v, the best valid pair first, until
 * none occurs o->min_count times. Returns 0, or -1 when out of memory. */
static int learn_merges(trainer *t, teller_tpe_vocab *v, const teller_tpe_train_opts *o)
{
    uint32_t stamp = 0, learned = 0;
    while (learned < o->vocab && t->nheap) {
        heap_ent top = heap_pop(t);
        int64_t now = t->cnt[top.pid];
        if (now != top.cnt) {
            if (now < top.cnt && now >= (int64_t)o->min_count && heap_push(t, top.pid))
                return -1;
            continue;
        }
        if (now < (int64_t)o->min_count)
            break;
        uint32_t c = tpe_vocab_add_merge(v, top.a, top.b);
        if (c == TELLER_NONE)
            return -1;
        learned++;
        stamp++;
        if (merge_pair(t, top.pid, top.a, top.b, c, stamp))
            return -1;
        for (size_t k = 0; k < t->ntouched; k++)
            if (t->cnt[t->touched[k]] >= (int64_t)o->min_count && heap_push(t, t->touched[k]))
                return -1;
    }
    return 0;
}

teller_status teller_tpe_train_runs(teller_tpe_vocab *v, const teller_tpe_seq *seqs, const uint32_t *weights,
                                    const uint32_t *runs, size_t nseqs, const teller_tpe_train_opts *opts,
                                    teller_error *err)
{
    teller_tpe_train_opts o = opts ? *opts : teller_tpe_train_defaults();
    if (o.min_count < 1)
        o.min_count = 1;
    trainer t;
    memset(&t, 0, sizeof t);
    t.cross = v->opts.cross_levels;
    uint32_t *uniq = NULL, *weight = NULL;
    size_t nuniq = 0, total = 0;
    teller_status st = mark_known(v, seqs, weights, runs, nseqs, o.min_runs, err);
    if (st == TELLER_OK)
        st = distinct_seqs(seqs, weights, nseqs, &uniq, &weight, &nuniq, &total, err);
    if (st == TELLER_OK)
        st = lay_out(&t, v, seqs, uniq, weight, nuniq, total, err);
    if (st == TELLER_OK && (count_pairs(&t, o.min_count) || learn_merges(&t, v, &o)))
        st = TELLER_ERR_NOMEM;
    if (st == TELLER_ERR_NOMEM) /* the stages set err for every other failure */
        st = teller_error_set(err, TELLER_ERR_NOMEM, "(tpe)", 0, "out of memory while training");
    free(uniq);
    free(weight);
    trainer_free(&t);
    return st;
}
