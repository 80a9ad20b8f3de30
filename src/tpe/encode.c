/*
 * encode.c - TPE encoding: repeat runs collapsed (repeat.c), then merges by
 * merge rank; and exact decoding.
 *
 * The encoder keeps the sequence as a linked list over base positions and
 * candidate pairs in buckets by merged id (ids grow with merge rank), taken
 * in increasing id, which gives the same tokens as applying the merges one
 * after another over the whole sequence (see run_merges). A merge only adds
 * the two new pairs around it; an entry made stale by a neighbour's merge
 * is dropped when taken (its left or right symbol no longer matches). No
 * restart after a merge, no heap: linear in the tokens.
 */
#include <stdlib.h>
#include <string.h>

#include "tpe_internal.h"
#include "../util/vec.h"

struct teller_tpe_encoder {
    const teller_tpe_vocab *v;
    tpe_runs  runs;                /* the collapsed sequence the merges run over */
    size_t    cap;                 /* positions */
    uint32_t *sym, *nxt, *prv, *work;
    uint32_t *ent_pos, *ent_next;  /* [3 * cap] bucket entries */
    size_t    nent;
    size_t    vcap;                /* symbols */
    uint32_t *head;                /* [vcap] first entry of each merged id's bucket */
    uint64_t *bits;                /* [vcap / 64] non-empty buckets */
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
    tpe_runs_free(&e->runs);
    free(e->sym);
    free(e->nxt);
    free(e->prv);
    free(e->work);
    free(e->ent_pos);
    free(e->ent_next);
    free(e->head);
    free(e->bits);
    free(e);
}

static int grow_u32(uint32_t **p, size_t n)
{
    uint32_t *a = realloc(*p, n * sizeof *a);
    if (!a)
        return -1;
    *p = a;
    return 0;
}

static int reserve(teller_tpe_encoder *e, size_t n, size_t nsym)
{
    if (n > e->cap) {
        size_t nc = e->cap ? e->cap : 1024;
        while (nc < n)
            nc *= 2;
        if (grow_u32(&e->sym, nc) || grow_u32(&e->nxt, nc) || grow_u32(&e->prv, nc) || grow_u32(&e->work, 3 * nc) ||
            grow_u32(&e->ent_pos, 3 * nc) || grow_u32(&e->ent_next, 3 * nc))
            return -1;
        e->cap = nc;
    }
    if (nsym > e->vcap) {
        size_t nc = (nsym + 63) / 64 * 64;
        uint64_t *bits = calloc(nc / 64, sizeof *bits);
        if (!bits || grow_u32(&e->head, nc)) {
            free(bits);
            return -1;
        }
        memset(e->head, 0xff, nc * sizeof *e->head);
        free(e->bits);
        e->bits = bits;
        e->vcap = nc;
    }
    return 0;
}

/* Pushes position p as a candidate for merge c. */
static inline void bucket_add(teller_tpe_encoder *e, uint32_t c, uint32_t p)
{
    uint32_t k = (uint32_t)e->nent++;
    e->ent_pos[k] = p;
    e->ent_next[k] = e->head[c];
    e->head[c] = k;
    e->bits[c >> 6] |= 1ull << (c & 63);
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

/* Collapses the runs, then runs the merges over the collapsed sequence
 * (positions are its tokens: e->runs.first gives their base tokens);
 * afterwards e->sym/e->nxt describe the tokens, starting at position 0.
 * Repeat symbols are in no merge, so they stay tokens of their own.
 * Returns -1 when out of memory.
 *
 * Candidates wait in one bucket per merged id (a bitmap marks the non-empty
 * ones). A merge of id c only creates pairs whose merges come after c, so
 * the buckets are taken once each, in increasing id: the same order as
 * applying the merges one after another. Inside a bucket, occurrences of a
 * pair (l, r) with l != r cannot overlap, so their order does not matter;
 * for l == r ("a a a") they are taken left to right. O(n + V/64) for n base
 * tokens and V symbols, no heap. At most n - 1 + 2(n - 1) entries. */
static int run_merges(teller_tpe_encoder *e, const teller_tpe_seq *b)
{
    const teller_tpe_vocab *v = e->v;
    if (tpe_runs_collapse(&e->runs, b))
        return -1;
    size_t n = e->runs.m;
    if (reserve(e, n + 2, v->n))
        return -1;
    int cross = v->opts.cross_levels;
    const uint32_t *par = b->parent, *at = e->runs.first;
    const uint16_t *dep = b->depth;
    uint32_t *sym = e->sym, *nxt = e->nxt, *prv = e->prv;
    memcpy(sym, e->runs.sym, n * sizeof *sym);
    for (size_t i = 0; i < n; i++) {
        nxt[i] = i + 1 < n ? (uint32_t)i + 1 : TELLER_NONE;
        prv[i] = i ? (uint32_t)i - 1 : TELLER_NONE;
    }
    if (!v->nmerges)
        return 0;
    e->nent = 0;
    for (size_t i = 0; i + 1 < n; i++) {
        if (!cross && (par[at[i]] != par[at[i + 1]] || dep[at[i]] != dep[at[i + 1]]))
            continue;
        uint32_t c = tpe_pair_lookup(v, tpe_key(v, sym[i]), tpe_key(v, sym[i + 1]));
        if (c != TELLER_NONE)
            bucket_add(e, c, (uint32_t)i);
    }
    size_t nw = (v->n + 63) / 64;
    for (size_t w = 0; w < nw; w++) {
        while (e->bits[w]) {
            uint32_t c = (uint32_t)(w * 64 + (size_t)__builtin_ctzll(e->bits[w]));
            e->bits[w] &= e->bits[w] - 1;
            uint32_t l = v->left[c], r0 = v->right[c];
            /* the bucket's positions, in the order to merge them */
            size_t m = 0;
            for (uint32_t k = e->head[c]; k != TELLER_NONE; k = e->ent_next[k])
                e->work[m++] = e->ent_pos[k];
            e->head[c] = TELLER_NONE;
            if (l == r0)
                qsort(e->work, m, sizeof *e->work, cmp_u32);
            for (size_t k = 0; k < m; k++) {
                uint32_t p = e->work[k], q = nxt[p];
                if (q == TELLER_NONE || tpe_key(v, sym[p]) != l || tpe_key(v, sym[q]) != r0)
                    continue; /* stale: a neighbour merged first */
                uint32_t r = nxt[q];
                sym[p] = c;
                sym[q] = TELLER_NONE;
                nxt[p] = r;
                if (r != TELLER_NONE)
                    prv[r] = p;
                uint32_t pp = prv[p];
                if (pp != TELLER_NONE && (cross || (par[at[pp]] == par[at[p]] && dep[at[pp]] == dep[at[p]]))) {
                    uint32_t x = tpe_pair_lookup(v, tpe_key(v, sym[pp]), c);
                    if (x != TELLER_NONE)
                        bucket_add(e, x, pp);
                }
                if (r != TELLER_NONE && (cross || (par[at[r]] == par[at[p]] && dep[at[r]] == dep[at[p]]))) {
                    uint32_t x = tpe_pair_lookup(v, c, tpe_key(v, sym[r]));
                    if (x != TELLER_NONE)
                        bucket_add(e, x, p);
                }
            }
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
        if (b->sym[i] >= v->n || tpe_is_repeat(b->sym[i]) || b->bucket[i] >= TELLER_TPE_BUCKETS ||
            (b->parent[i] != TELLER_NONE && b->parent[i] >= i))
            return -1;
    return 0;
}

/* How unusual a duration bucket is: 1x not at all, then lo, 2x, 4x, 8x. A
 * token's bucket is the most unusual of its base tokens'. */
static int unusual(uint8_t b)
{
    return b == 1 ? 0 : b == 0 ? 1 : b;
}

teller_status teller_tpe_encode(const teller_tpe_vocab *v, const teller_tpe_seq *base, teller_tpe_seq *out,
                                teller_error *err)
{
    if (check_base(v, base))
        return teller_error_set(err, TELLER_ERR_ARG, "(tpe)", 0,
                                "sequence holds a symbol outside the vocabulary, a repeat symbol, a bucket over 4 "
                                "or a parent not before its child");
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
    out->base_bucket = malloc(nb * sizeof *out->base_bucket);
    out->base_sym = malloc(nb * sizeof *out->base_sym);
    if (!out->base_parent || !out->base_ddepth || !out->base_dur_ns || !out->base_event || !out->base_bucket ||
        !out->base_sym)
        goto oom;
    k = 0;
    if (base->n)
        for (uint32_t p = 0; p != TELLER_NONE; p = e->nxt[p], k++) {
            uint32_t f = e->runs.first[p];
            uint32_t end = e->nxt[p] == TELLER_NONE ? (uint32_t)base->n : e->runs.first[e->nxt[p]];
            int64_t d = 0;
            uint8_t bk = 1;
            for (uint32_t i = f; i < end; i++) {
                tok_of[i] = (uint32_t)k;
                d += base->dur_ns[i];
                out->base_ddepth[i] = (int32_t)base->depth[i] - (int32_t)base->depth[f];
                if (unusual(base->bucket[i]) > unusual(bk))
                    bk = base->bucket[i];
            }
            out->bucket[k] = bk;
            out->sym[k] = e->sym[p];
            out->first[k] = f;
            out->len[k] = end - f;
            out->unit[k] = e->runs.unit[p];
            out->depth[k] = base->depth[f];
            out->dur_ns[k] = d;
            out->event[k] = base->event ? base->event[f] : TELLER_NONE;
            /* the parent precedes f, so its token is already numbered */
            out->parent[k] = base->parent[f] == TELLER_NONE ? TELLER_NONE : tok_of[base->parent[f]];
        }
    memcpy(out->base_parent, base->parent, base->n * sizeof *base->parent);
    memcpy(out->base_dur_ns, base->dur_ns, base->n * sizeof *base->dur_ns);
    memcpy(out->base_bucket, base->bucket, base->n * sizeof *base->bucket);
    memcpy(out->base_sym, base->sym, base->n * sizeof *base->sym);
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

/* Base token pos of the decoded sequence, inside token k, whose expansion
 * through the merges gave s: its symbol, structure and bucket from the
 * side arrays. -1 when the symbol is not s or a name s stands for (a layer
 * symbol stands for the names the merges do not know), or its depth or
 * bucket is out of range. */
static int put_base(const teller_tpe_vocab *v, teller_tpe_seq *out, const teller_tpe_seq *enc, size_t k, size_t pos,
                    uint32_t s)
{
    int64_t dd = (int64_t)enc->depth[k] + enc->base_ddepth[pos];
    uint32_t b = enc->base_sym[pos];
    if (dd < 0 || dd > UINT16_MAX || b >= v->n || tpe_is_repeat(b) || tpe_key(v, b) != tpe_key(v, s))
        return -1;
    out->sym[pos] = b;
    out->depth[pos] = (uint16_t)dd;
    out->parent[pos] = enc->base_parent[pos];
    out->dur_ns[pos] = enc->base_dur_ns[pos];
    out->event[pos] = enc->base_event[pos];
    out->bucket[pos] = enc->base_bucket[pos];
    out->first[pos] = (uint32_t)pos;
    out->len[pos] = 1;
    return out->bucket[pos] < TELLER_TPE_BUCKETS ? 0 : -1;
}

teller_status teller_tpe_decode(const teller_tpe_vocab *v, const teller_tpe_seq *enc, teller_tpe_seq *out,
                                teller_error *err)
{
    if (!enc->base_parent || !enc->base_ddepth || !enc->base_dur_ns || !enc->base_event || !enc->base_bucket ||
        !enc->base_sym || !enc->unit)
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
        size_t sp = 0, start = pos, end = pos + enc->len[k], u = enc->unit[k];
        if (tpe_is_repeat(enc->sym[k]) != (u != 0) || u > start)
            goto bad;
        /* a repeat token copies the base symbols one unit back */
        for (; u && pos < end; pos++)
            if (put_base(v, out, enc, k, pos, out->sym[pos - u]) || out->sym[pos] != out->sym[pos - u])
                goto bad;
        /* any other expands through the merges, left to right */
        if (TELLER_GROW(stack, scap, 1))
            goto oom;
        if (!u)
            stack[sp++] = enc->sym[k];
        while (sp) {
            uint32_t s = stack[--sp];
            if (s >= v->n || tpe_is_repeat(s))
                goto bad;
            if (v->left[s] != TELLER_NONE) {
                if (TELLER_GROW(stack, scap, sp + 2))
                    goto oom;
                stack[sp++] = v->right[s];
                stack[sp++] = v->left[s];
                continue;
            }
            if (pos >= end || put_base(v, out, enc, k, pos, s))
                goto bad;
            pos++;
        }
        /* the token must agree with its interior */
        int64_t d = 0;
        uint8_t bk = 1;
        for (size_t i = start; i < pos; i++) {
            tok_of[i] = (uint32_t)k;
            d += out->dur_ns[i];
            if (unusual(out->bucket[i]) > unusual(bk))
                bk = out->bucket[i];
        }
        uint32_t bp = out->parent[start];
        if (pos != end || enc->base_ddepth[start] != 0 || d != enc->dur_ns[k] || bk != enc->bucket[k] ||
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
