/*
 * serialize.c - a step's call-chain forest (or any set of events) as TPE
 * base tokens: one per node, "TAG/NAME", depth first, with parent, depth
 * and duration arrays. Rules and bucket edges are in include/teller/tpe.h.
 *
 * The context computes, once per store, every event's symbol (layer tag
 * and name family, family.c) and duration bucket (against the median of its
 * operator: layer and teller_name_normalize'd name, digits masked on
 * annotations, so a bucket still says "slow for this op", not "slow for a
 * GEMM"), so that serialising a step is a sort of its events plus one walk.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "teller/tree.h"
#include "tpe_internal.h"
#include "../util/kmap.h"
#include "../util/vec.h"

struct teller_tpe_ctx {
    const teller_store *st;
    teller_tpe_vocab   *v;
    uint32_t           *name_sym;  /* [events] the node's symbol, "TAG/NAME" */
    uint8_t            *bucket;    /* [events] */
};

static const char *const k_bucket_names[TELLER_TPE_BUCKETS] = {"lo", "1x", "2x", "4x", "8x"};

const char *teller_tpe_bucket_name(int b)
{
    return b >= 0 && b < TELLER_TPE_BUCKETS ? k_bucket_names[b] : "?";
}

int teller_tpe_bucket(const teller_tpe_ctx *c, uint32_t e)
{
    return c->bucket[e];
}

void teller_tpe_ctx_free(teller_tpe_ctx *c)
{
    if (!c)
        return;
    free(c->name_sym);
    free(c->bucket);
    free(c);
}

typedef struct fam_item {
    uint64_t key; /* the operator: hash of layer and normalised name */
    int64_t  dur;
    uint32_t e;
} fam_item;

static int fam_cmp(const void *a, const void *b)
{
    const fam_item *x = a, *y = b;
    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    if (x->dur != y->dur)
        return x->dur < y->dur ? -1 : 1;
    return (x->e > y->e) - (x->e < y->e);
}

static int bucket_of(int64_t dur, int64_t median)
{
    if (median <= 0)
        return 1;
    double r = (double)dur / (double)median;
    return r < 0.5 ? 0 : r < 1.41421356 ? 1 : r < 2.82842712 ? 2 : r < 5.65685425 ? 3 : 4;
}

/* The layers whose TAG carries the duration bucket: those whose duration
 * is their own work (the step, API calls, GPU work). BACKEND, FRONTEND
 * and OTHER spans include their children, whose buckets already say what
 * was slow, and their own jitter (host noise) would only split patterns
 * (measured: docs/ARCHITECTURE.md, TPE). */
static int bucketed(uint8_t layer)
{
    return layer != TELLER_LAYER_BACKEND && layer != TELLER_LAYER_FRONTEND && layer != TELLER_LAYER_OTHER;
}

static int mask_digits(uint8_t layer)
{
    return layer == TELLER_LAYER_ENGINE || layer == TELLER_LAYER_OTHER;
}

/* Events a sequence leaves out: instants and counters; Python frames when
 * the vocabulary says so (their children then hang from the nearest kept
 * ancestor). */
static int skipped(const teller_tpe_ctx *c, const teller_events *ev, uint32_t e)
{
    return (ev->flags[e] & (TELLER_F_INSTANT | TELLER_F_COUNTER)) ||
           (!c->v->opts.frames && ev->layer[e] == TELLER_LAYER_FRONTEND);
}

teller_status teller_tpe_ctx_create(const teller_store *st, teller_tpe_vocab *v, teller_tpe_ctx **out,
                                    teller_error *err)
{
    *out = NULL;
    const teller_events *ev = teller_store_events(st);
    size_t n = ev->n;
    teller_tpe_ctx *c = calloc(1, sizeof *c);
    fam_item *fam = NULL;
    uint64_t *mkey = NULL, *mop = NULL;
    uint32_t *mval = NULL;
    size_t mcap = 64;
    if (!c)
        goto oom;
    c->st = st;
    c->v = v;
    c->name_sym = malloc((n ? n : 1) * sizeof *c->name_sym);
    c->bucket = malloc(n ? n : 1);
    fam = malloc((n ? n : 1) * sizeof *fam);
    while (mcap < 4096)
        mcap *= 2;
    mkey = malloc(mcap * sizeof *mkey);
    mval = malloc(mcap * sizeof *mval);
    mop = malloc(mcap * sizeof *mop);
    if (!c->name_sym || !c->bucket || !fam || !mkey || !mval || !mop)
        goto oom;
    memset(mkey, 0xff, mcap * sizeof *mkey);
    /* the layer symbols first, in layer order (the symbols the names a
     * vocabulary does not know merge as), so that symbol ids do not depend
     * on which layer a run happens to show first */
    for (int L = 0; L < TELLER_LAYER_COUNT; L++) {
        const char *tag = teller_layer_tag((teller_layer)L);
        if (teller_tpe_vocab_intern(v, tag, strlen(tag)) == TELLER_NONE)
            goto oom;
    }
    /* node symbols and operator keys: one pass per distinct (name id, layer) */
    size_t used = 0, nfam = 0;
    char norm[1024];
    for (size_t i = 0; i < n; i++) {
        uint8_t L = ev->layer[i] < TELLER_LAYER_COUNT ? ev->layer[i] : TELLER_LAYER_OTHER;
        uint64_t key = ((uint64_t)ev->name[i] << 4) | L;
        size_t j = tpe_mix64(key) & (mcap - 1);
        while (mkey[j] != UINT64_MAX && mkey[j] != key)
            j = (j + 1) & (mcap - 1);
        uint64_t op;
        if (mkey[j] != key) {
            const char *name = teller_store_str(st, ev->name[i]);
            uint32_t sym = TELLER_NONE; /* no symbol for frames no sequence holds (a layer, so in the key) */
            if (v->opts.frames || L != TELLER_LAYER_FRONTEND) { /* "TAG/NAME" */
                const char *tag = teller_layer_tag((teller_layer)L);
                size_t tl = strlen(tag);
                memcpy(norm, tag, tl);
                norm[tl] = '/';
                size_t len = tl + 1 + teller_tpe_name_family((teller_layer)L, name, norm + tl + 1, sizeof norm - tl - 1);
                if ((sym = teller_tpe_vocab_intern(v, norm, len)) == TELLER_NONE)
                    goto oom;
            }
            /* the operator behind the bucket median */
            size_t len = teller_name_normalize(name, norm, sizeof norm);
            if (mask_digits(L)) {
                size_t w = 0;
                for (size_t r = 0; r < len; r++) {
                    int dig = norm[r] >= '0' && norm[r] <= '9';
                    if (!dig)
                        norm[w++] = norm[r];
                    else if (r == 0 || !(norm[r - 1] >= '0' && norm[r - 1] <= '9'))
                        norm[w++] = '#';
                }
                len = w;
            }
            op = tpe_mix64(kmap_hash_bytes(norm, len) + L);
            mkey[j] = key;
            mval[j] = sym;
            mop[j] = op;
            if (++used * 2 > mcap) { /* grow the map */
                size_t nc = mcap * 2;
                uint64_t *k2 = malloc(nc * sizeof *k2), *o2 = malloc(nc * sizeof *o2);
                uint32_t *v2 = malloc(nc * sizeof *v2);
                if (!k2 || !v2 || !o2) {
                    free(k2);
                    free(v2);
                    free(o2);
                    goto oom;
                }
                memset(k2, 0xff, nc * sizeof *k2);
                for (size_t q = 0; q < mcap; q++) {
                    if (mkey[q] == UINT64_MAX)
                        continue;
                    size_t t = tpe_mix64(mkey[q]) & (nc - 1);
                    while (k2[t] != UINT64_MAX)
                        t = (t + 1) & (nc - 1);
                    k2[t] = mkey[q];
                    v2[t] = mval[q];
                    o2[t] = mop[q];
                }
                free(mkey);
                free(mval);
                free(mop);
                mkey = k2;
                mval = v2;
                mop = o2;
                mcap = nc;
            }
            c->name_sym[i] = sym;
        } else {
            c->name_sym[i] = mval[j];
            op = mop[j];
        }
        c->bucket[i] = 1;
        if (!(ev->flags[i] & (TELLER_F_INSTANT | TELLER_F_COUNTER)))
            fam[nfam++] = (fam_item){op, ev->dur_ns[i], (uint32_t)i};
    }
    /* family medians -> buckets */
    teller_sort(fam, nfam, sizeof *fam, fam_cmp);
    for (size_t a = 0; a < nfam;) {
        size_t b = a;
        while (b < nfam && fam[b].key == fam[a].key)
            b++;
        size_t m = b - a;
        int64_t med = m % 2 ? fam[a + m / 2].dur : fam[a + m / 2 - 1].dur / 2 + fam[a + m / 2].dur / 2;
        for (size_t k = a; k < b; k++)
            c->bucket[fam[k].e] = (uint8_t)bucket_of(fam[k].dur, med);
        a = b;
    }
    free(fam);
    free(mkey);
    free(mval);
    free(mop);
    *out = c;
    return TELLER_OK;
oom:
    free(fam);
    free(mkey);
    free(mval);
    free(mop);
    teller_tpe_ctx_free(c);
    return teller_error_set(err, TELLER_ERR_NOMEM, "(tpe)", 0, "out of memory");
}

teller_status teller_tpe_seq_alloc(teller_tpe_seq *s, size_t n, teller_error *err)
{
    teller_tpe_seq_free(s);
    size_t m = n ? n : 1;
    s->sym = calloc(m, sizeof *s->sym);
    s->parent = calloc(m, sizeof *s->parent);
    s->depth = calloc(m, sizeof *s->depth);
    s->dur_ns = calloc(m, sizeof *s->dur_ns);
    s->first = calloc(m, sizeof *s->first);
    s->len = calloc(m, sizeof *s->len);
    s->event = calloc(m, sizeof *s->event);
    s->unit = calloc(m, sizeof *s->unit);
    s->bucket = calloc(m, sizeof *s->bucket);
    if (!s->sym || !s->parent || !s->depth || !s->dur_ns || !s->first || !s->len || !s->event || !s->unit ||
        !s->bucket) {
        teller_tpe_seq_free(s);
        return teller_error_set(err, TELLER_ERR_NOMEM, "(tpe)", 0, "out of memory");
    }
    memset(s->bucket, 1, m); /* 1x */
    s->n = s->nbase = n;
    return TELLER_OK;
}

void teller_tpe_seq_free(teller_tpe_seq *s)
{
    if (!s)
        return;
    free(s->sym);
    free(s->parent);
    free(s->depth);
    free(s->dur_ns);
    free(s->first);
    free(s->len);
    free(s->event);
    free(s->unit);
    free(s->bucket);
    free(s->base_parent);
    free(s->base_ddepth);
    free(s->base_dur_ns);
    free(s->base_event);
    free(s->base_bucket);
    free(s->base_sym);
    memset(s, 0, sizeof *s);
}

typedef struct mem_item {
    int64_t  start;
    uint32_t e;
} mem_item;

static int mem_cmp(const void *a, const void *b)
{
    const mem_item *x = a, *y = b;
    if (x->start != y->start)
        return x->start < y->start ? -1 : 1;
    return (x->e > y->e) - (x->e < y->e);
}

/* Serialises the members (event ids, grp[e] == g for each) as a forest.
 * loc is scratch indexed by event: it receives each member's position in
 * the members array. */
static teller_status ser_group(const teller_tpe_ctx *c, mem_item *mem, size_t m, const uint32_t *grp, uint32_t g,
                               uint32_t *loc, teller_tpe_seq *out, teller_error *err)
{
    const teller_events *ev = teller_store_events(c->st);
    teller_status s = teller_tpe_seq_alloc(out, m, err);
    if (s)
        return s;
    teller_sort(mem, m, sizeof *mem, mem_cmp);
    uint32_t *fp = malloc((m ? m : 1) * sizeof *fp);
    uint32_t *fc = malloc((m ? m : 1) * sizeof *fc);
    uint32_t *ns = malloc((m ? m : 1) * sizeof *ns);
    uint32_t *tok = malloc((m ? m : 1) * sizeof *tok);
    if (!fp || !fc || !ns || !tok) {
        free(fp);
        free(fc);
        free(ns);
        free(tok);
        teller_tpe_seq_free(out);
        return teller_error_set(err, TELLER_ERR_NOMEM, "(tpe)", 0, "out of memory");
    }
    for (size_t k = 0; k < m; k++)
        loc[mem[k].e] = (uint32_t)k;
    for (size_t k = 0; k < m; k++) {
        uint32_t p = ev->parent[mem[k].e];
        while (p != TELLER_NONE && grp[p] != g)
            p = ev->parent[p];
        fp[k] = p == TELLER_NONE ? TELLER_NONE : loc[p];
        fc[k] = ns[k] = TELLER_NONE;
    }
    /* children and roots in time order: prepend while walking backwards */
    uint32_t root = TELLER_NONE;
    for (size_t k = m; k-- > 0;) {
        uint32_t *head = fp[k] == TELLER_NONE ? &root : &fc[fp[k]];
        ns[k] = *head;
        *head = (uint32_t)k;
    }
    size_t t = 0;
    uint32_t depth = 0, cur = root;
    while (cur != TELLER_NONE) {
        uint32_t e = mem[cur].e;
        uint8_t L = ev->layer[e] < TELLER_LAYER_COUNT ? ev->layer[e] : TELLER_LAYER_OTHER;
        uint32_t par = fp[cur] == TELLER_NONE ? TELLER_NONE : tok[fp[cur]];
        uint16_t d = depth > UINT16_MAX ? UINT16_MAX : (uint16_t)depth;
        tok[cur] = (uint32_t)t;
        out->sym[t] = c->name_sym[e];
        out->bucket[t] = c->v->opts.buckets && bucketed(L) ? c->bucket[e] : 1;
        out->parent[t] = par;
        out->depth[t] = d;
        out->dur_ns[t] = ev->dur_ns[e];
        out->first[t] = (uint32_t)t;
        out->len[t] = 1;
        out->event[t] = e;
        t++;
        if (fc[cur] != TELLER_NONE) {
            cur = fc[cur];
            depth++;
            continue;
        }
        while (cur != TELLER_NONE && ns[cur] == TELLER_NONE) {
            cur = fp[cur];
            depth--;
        }
        if (cur != TELLER_NONE)
            cur = ns[cur];
    }
    free(fp);
    free(fc);
    free(ns);
    free(tok);
    return TELLER_OK;
}

teller_status teller_tpe_serialize_events(teller_tpe_ctx *c, const uint32_t *events, size_t n, teller_tpe_seq *out,
                                          teller_error *err)
{
    const teller_events *ev = teller_store_events(c->st);
    size_t nev = ev->n;
    uint32_t *grp = malloc((nev ? nev : 1) * sizeof *grp);
    uint32_t *loc = malloc((nev ? nev : 1) * sizeof *loc);
    mem_item *mem = malloc((n ? n : 1) * sizeof *mem);
    if (!grp || !loc || !mem) {
        free(grp);
        free(loc);
        free(mem);
        return teller_error_set(err, TELLER_ERR_NOMEM, "(tpe)", 0, "out of memory");
    }
    memset(grp, 0xff, nev * sizeof *grp);
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t e = events[i];
        if (e >= nev || grp[e] == 0 || skipped(c, ev, e))
            continue;
        grp[e] = 0;
        mem[m++] = (mem_item){ev->start_ns[e], e};
    }
    teller_status s = ser_group(c, mem, m, grp, 0, loc, out, err);
    free(grp);
    free(loc);
    free(mem);
    return s;
}

teller_status teller_tpe_serialize_steps(teller_tpe_ctx *c, teller_tpe_seq **out, size_t *nout, teller_error *err)
{
    *out = NULL;
    *nout = 0;
    const teller_store *st = c->st;
    const teller_events *ev = teller_store_events(st);
    const teller_step *steps = teller_store_steps(st);
    size_t nrows = teller_store_num_steps(st), nev = ev->n;
    uint32_t *grp = malloc((nev ? nev : 1) * sizeof *grp);
    uint32_t *loc = malloc((nev ? nev : 1) * sizeof *loc);
    size_t *cnt = calloc(nrows + 1, sizeof *cnt);
    mem_item *mem = malloc((nev ? nev : 1) * sizeof *mem);
    teller_tpe_seq *seqs = calloc(nrows ? nrows : 1, sizeof *seqs);
    teller_status s = TELLER_OK;
    if (!grp || !loc || !cnt || !mem || !seqs) {
        s = teller_error_set(err, TELLER_ERR_NOMEM, "(tpe)", 0, "out of memory");
        goto done;
    }
    /* row of each event: steps are ordered by (step, rank) */
    for (size_t i = 0; i < nev; i++) {
        grp[i] = TELLER_NONE;
        if (ev->step[i] == TELLER_NONE || skipped(c, ev, (uint32_t)i))
            continue;
        uint32_t k = ev->step[i];
        int32_t r = teller_store_event_rank(st, (uint32_t)i);
        size_t lo = 0, hi = nrows;
        while (lo < hi) {
            size_t mid = (lo + hi) / 2;
            if (steps[mid].step < k || (steps[mid].step == k && steps[mid].rank < r))
                lo = mid + 1;
            else
                hi = mid;
        }
        if (lo < nrows && steps[lo].step == k && steps[lo].rank == r) {
            grp[i] = (uint32_t)lo;
            cnt[lo + 1]++;
        }
    }
    for (size_t r = 0; r < nrows; r++)
        cnt[r + 1] += cnt[r];
    {
        size_t *fill = malloc((nrows ? nrows : 1) * sizeof *fill);
        if (!fill) {
            s = teller_error_set(err, TELLER_ERR_NOMEM, "(tpe)", 0, "out of memory");
            goto done;
        }
        memcpy(fill, cnt, nrows * sizeof *fill);
        for (size_t i = 0; i < nev; i++)
            if (grp[i] != TELLER_NONE)
                mem[fill[grp[i]]++] = (mem_item){ev->start_ns[i], (uint32_t)i};
        free(fill);
    }
    for (size_t r = 0; r < nrows && s == TELLER_OK; r++)
        s = ser_group(c, mem + cnt[r], cnt[r + 1] - cnt[r], grp, (uint32_t)r, loc, &seqs[r], err);
    if (s == TELLER_OK) {
        *out = seqs;
        *nout = nrows;
        seqs = NULL;
    }
done:
    if (seqs)
        for (size_t r = 0; r < nrows; r++)
            teller_tpe_seq_free(&seqs[r]);
    free(seqs);
    free(grp);
    free(loc);
    free(cnt);
    free(mem);
    return s;
}
