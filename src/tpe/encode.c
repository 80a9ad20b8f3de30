/*
 * encode.c - TPE encoding by merge rank, and exact decoding.
 *
 * The encoder keeps the sequence as a linked list over base positions and a
 * min-heap of candidate pairs keyed by (merged id, position): merged ids
 * grow with merge rank, so the heap top is the earliest merge, leftmost
 * first, which gives the same tokens as applying the merges one after
 * another over the whole sequence. A merge only pushes the two new pairs
 * around it; an entry made stale by a neighbour's merge is dropped when
 * popped (its left or right symbol no longer matches the merge). O(n log n)
 * for n base tokens, no restart.
 */
#include <stdlib.h>
#include <string.h>

#include "tpe_internal.h"
#include "../util/vec.h"

struct teller_tpe_encoder {
    const teller_tpe_vocab *v;
    size_t    cap;
    uint32_t *sym, *nxt, *prv;
    uint64_t *heap;
};

teller_tpe_encoder *teller_tpe_encoder_create(const teller_tpe_vocab *v)
{
    teller_tpe_encoder *e = calloc(1, sizeof *e);
    if (e)
        e->v = v;
    return e;
}

void teller_tpe_encoder_free(teller_tpe_encoder *e)
{
    if (!e)
        return;
    free(e->sym);
    free(e->nxt);
    free(e->prv);
    free(e->heap);
    free(e);
}

static int reserve(teller_tpe_encoder *e, size_t n)
{
    if (n <= e->cap)
        return 0;
    size_t nc = e->cap ? e->cap : 1024;
    while (nc < n)
        nc *= 2;
    uint32_t *a = realloc(e->sym, nc * sizeof *a);
    if (!a)
        return -1;
    e->sym = a;
    if (!(a = realloc(e->nxt, nc * sizeof *a)))
        return -1;
    e->nxt = a;
    if (!(a = realloc(e->prv, nc * sizeof *a)))
        return -1;
    e->prv = a;
    uint64_t *h = realloc(e->heap, nc * sizeof *h);
    if (!h)
        return -1;
    e->heap = h;
    e->cap = nc;
    return 0;
}

static inline void sift_down(uint64_t *h, size_t n, size_t i)
{
    uint64_t x = h[i];
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n)
            break;
        if (c + 1 < n && h[c + 1] < h[c])
            c++;
        if (h[c] >= x)
            break;
        h[i] = h[c];
        i = c;
    }
    h[i] = x;
}

static inline void heap_add(uint64_t *h, size_t *n, uint64_t x)
{
    size_t i = (*n)++;
    while (i > 0) {
        size_t up = (i - 1) / 2;
        if (h[up] <= x)
            break;
        h[i] = h[up];
        i = up;
    }
    h[i] = x;
}

/* Runs the merges; afterwards e->sym/e->nxt describe the tokens, starting at
 * position 0. Returns -1 when out of memory. The heap starts with at most
 * n - 1 entries and each of the at most n - 1 merges pops one and pushes at
 * most two, so 2n entries always suffice. */
static int run_merges(teller_tpe_encoder *e, const teller_tpe_seq *b)
{
    size_t n = b->n;
    if (reserve(e, 2 * n + 2))
        return -1;
    const teller_tpe_vocab *v = e->v;
    int cross = v->opts.cross_levels;
    const uint32_t *par = b->parent;
    const uint16_t *dep = b->depth;
    uint32_t *sym = e->sym, *nxt = e->nxt, *prv = e->prv;
    uint64_t *h = e->heap;
    size_t nh = 0;
    memcpy(sym, b->sym, n * sizeof *sym);
    for (size_t i = 0; i < n; i++) {
        nxt[i] = i + 1 < n ? (uint32_t)i + 1 : TELLER_NONE;
        prv[i] = i ? (uint32_t)i - 1 : TELLER_NONE;
    }
    if (!v->nmerges)
        return 0;
    for (size_t i = 0; i + 1 < n; i++) {
        if (!cross && (par[i] != par[i + 1] || dep[i] != dep[i + 1]))
            continue;
        uint32_t c = tpe_pair_lookup(v, sym[i], sym[i + 1]);
        if (c != TELLER_NONE)
            h[nh++] = ((uint64_t)c << 32) | i;
    }
    for (size_t i = nh / 2; i-- > 0;)
        sift_down(h, nh, i);
    while (nh) {
        uint64_t top = h[0];
        h[0] = h[--nh];
        if (nh)
            sift_down(h, nh, 0);
        uint32_t c = (uint32_t)(top >> 32), p = (uint32_t)top, q = nxt[p];
        if (q == TELLER_NONE || sym[p] != v->left[c] || sym[q] != v->right[c])
            continue; /* stale: a neighbour merged first */
        uint32_t r = nxt[q];
        sym[p] = c;
        sym[q] = TELLER_NONE;
        nxt[p] = r;
        if (r != TELLER_NONE)
            prv[r] = p;
        uint32_t pp = prv[p];
        if (pp != TELLER_NONE && (cross || (par[pp] == par[p] && dep[pp] == dep[p]))) {
            uint32_t m = tpe_pair_lookup(v, sym[pp], c);
            if (m != TELLER_NONE)
                heap_add(h, &nh, ((uint64_t)m << 32) | pp);
        }
        if (r != TELLER_NONE && (cross || (par[r] == par[p] && dep[r] == dep[p]))) {
            uint32_t m = tpe_pair_lookup(v, c, sym[r]);
            if (m != TELLER_NONE)
                heap_add(h, &nh, ((uint64_t)m << 32) | p);
        }
    }
    return 0;
}

size_t teller_tpe_encode_syms(teller_tpe_encoder *e, const teller_tpe_seq *base, uint32_t *out)
{
    if (!base->n || run_merges(e, base))
        return 0;
    size_t k = 0;
    for (uint32_t p = 0; p != TELLER_NONE; p = e->nxt[p])
        out[k++] = e->sym[p];
    return k;
}

static int check_base(const teller_tpe_vocab *v, const teller_tpe_seq *b)
{
    for (size_t i = 0; i < b->n; i++)
        if (b->sym[i] >= v->n || (b->parent[i] != TELLER_NONE && b->parent[i] >= i))
            return -1;
    return 0;
}

teller_status teller_tpe_encode(const teller_tpe_vocab *v, const teller_tpe_seq *base, teller_tpe_seq *out,
                                teller_error *err)
{
    if (check_base(v, base))
        return teller_error_set(err, TELLER_ERR_ARG, "(tpe)", 0,
                                "sequence holds a symbol outside the vocabulary or a parent not before its child");
    teller_tpe_encoder *e = teller_tpe_encoder_create(v);
    uint32_t *tok_of = malloc((base->n ? base->n : 1) * sizeof *tok_of);
    teller_status st = TELLER_OK;
    if (!e || !tok_of || (base->n && run_merges(e, base)))
        goto oom;
    size_t k = 0;
    if (base->n)
        for (uint32_t p = 0; p != TELLER_NONE; p = e->nxt[p])
            k++;
    if ((st = teller_tpe_seq_alloc(out, k, err)))
        goto done;
    size_t nb = base->n ? base->n : 1;
    out->nbase = base->n;
    out->base_parent = malloc(nb * sizeof *out->base_parent);
    out->base_ddepth = malloc(nb * sizeof *out->base_ddepth);
    out->base_dur_ns = malloc(nb * sizeof *out->base_dur_ns);
    out->base_event = malloc(nb * sizeof *out->base_event);
    if (!out->base_parent || !out->base_ddepth || !out->base_dur_ns || !out->base_event)
        goto oom;
    k = 0;
    if (base->n)
        for (uint32_t p = 0; p != TELLER_NONE; p = e->nxt[p], k++) {
            uint32_t end = e->nxt[p] == TELLER_NONE ? (uint32_t)base->n : e->nxt[p];
            int64_t d = 0;
            for (uint32_t i = p; i < end; i++) {
                tok_of[i] = (uint32_t)k;
                d += base->dur_ns[i];
                out->base_ddepth[i] = (int32_t)base->depth[i] - (int32_t)base->depth[p];
            }
            out->sym[k] = e->sym[p];
            out->first[k] = p;
            out->len[k] = end - p;
            out->depth[k] = base->depth[p];
            out->dur_ns[k] = d;
            out->event[k] = base->event ? base->event[p] : TELLER_NONE;
            /* the parent precedes p, so its token is already numbered */
            out->parent[k] = base->parent[p] == TELLER_NONE ? TELLER_NONE : tok_of[base->parent[p]];
        }
    memcpy(out->base_parent, base->parent, base->n * sizeof *base->parent);
    memcpy(out->base_dur_ns, base->dur_ns, base->n * sizeof *base->dur_ns);
    for (size_t i = 0; i < base->n; i++)
        out->base_event[i] = base->event ? base->event[i] : TELLER_NONE;
    goto done;
oom:
    teller_tpe_seq_free(out);
    st = teller_error_set(err, TELLER_ERR_NOMEM, "(tpe)", 0, "out of memory while encoding");
done:
    teller_tpe_encoder_free(e);
    free(tok_of);
    return st;
}

teller_status teller_tpe_decode(const teller_tpe_vocab *v, const teller_tpe_seq *enc, teller_tpe_seq *out,
                                teller_error *err)
{
    if (!enc->base_parent || !enc->base_ddepth || !enc->base_dur_ns || !enc->base_event)
        return teller_error_set(err, TELLER_ERR_ARG, "(tpe)", 0, "not an encoded sequence");
    teller_status st = teller_tpe_seq_alloc(out, enc->nbase, err);
    if (st)
        return st;
    uint32_t *stack = NULL, *tok_of = malloc((enc->nbase ? enc->nbase : 1) * sizeof *tok_of);
    size_t scap = 0, pos = 0;
    if (!tok_of)
        goto oom;
    for (size_t k = 0; k < enc->n; k++) {
        if (enc->first[k] != pos || enc->len[k] == 0 || enc->len[k] > enc->nbase - pos)
            goto bad;
        /* expand the symbol through the merges, left to right */
        size_t sp = 0, start = pos;
        int64_t d = 0;
        if (TELLER_GROW(stack, scap, 1))
            goto oom;
        stack[sp++] = enc->sym[k];
        while (sp) {
            uint32_t s = stack[--sp];
            if (s >= v->n)
                goto bad;
            if (v->left[s] != TELLER_NONE) {
                if (TELLER_GROW(stack, scap, sp + 2))
                    goto oom;
                stack[sp++] = v->right[s];
                stack[sp++] = v->left[s];
                continue;
            }
            if (pos >= start + enc->len[k])
                goto bad;
            int64_t dd = (int64_t)enc->depth[k] + enc->base_ddepth[pos];
            if (dd < 0 || dd > UINT16_MAX)
                goto bad;
            out->sym[pos] = s;
            out->depth[pos] = (uint16_t)dd;
            out->parent[pos] = enc->base_parent[pos];
            out->dur_ns[pos] = enc->base_dur_ns[pos];
            out->event[pos] = enc->base_event[pos];
            out->first[pos] = (uint32_t)pos;
            out->len[pos] = 1;
            tok_of[pos] = (uint32_t)k;
            d += enc->base_dur_ns[pos];
            pos++;
        }
        /* the token must agree with its interior */
        uint32_t bp = out->parent[start];
        if (pos != start + enc->len[k] || enc->base_ddepth[start] != 0 || d != enc->dur_ns[k] ||
            (bp == TELLER_NONE ? enc->parent[k] != TELLER_NONE : (bp >= start || enc->parent[k] != tok_of[bp])))
            goto bad;
    }
    if (pos != enc->nbase)
        goto bad;
    free(stack);
    free(tok_of);
    return TELLER_OK;
bad:
    free(stack);
    free(tok_of);
    teller_tpe_seq_free(out);
    return teller_error_set(err, TELLER_ERR_FORMAT, "(tpe)", 0, "encoded sequence is inconsistent with its vocabulary");
oom:
    free(stack);
    free(tok_of);
    teller_tpe_seq_free(out);
    return teller_error_set(err, TELLER_ERR_NOMEM, "(tpe)", 0, "out of memory while decoding");
}
