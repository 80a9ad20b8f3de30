/*
 * repeat.c - repeat runs: consecutive identical sibling subtrees (a decode
 * step's dozens of identical layers) kept once and followed by repeat
 * tokens, before any merge (include/teller/tpe.h, "Repeat runs"). A learned
 * vocabulary rarely holds another workload's layer as merges; a run needs
 * none, so it compresses any workload.
 *
 * Items. The item at a base token is that token and the deeper tokens after
 * it: for a serialised node, its TAG alone, then its NAME with the node's
 * whole subtree. Items at the same depth under the same enclosing token
 * are siblings and tile their parent's tokens. A run at item i is k >= 2
 * consecutive copies of a unit of one or more sibling items whose tokens
 * agree in class (the symbol without its duration bucket, so that one op
 * slower in layer 17 does not end the run) and depth. The first copy stays
 * and is walked like any tokens (runs inside it stay inside it); the later
 * copies become repeat tokens that copy the base tokens one unit length
 * back. A token whose symbol differs from the one a unit back (its
 * duration bucket changed) stays as a literal, and the copy goes on after
 * it with a "REPEAT~+" token: decoding is a plain copy, exact. The first
 * repeat token of a run carries the run's copies in all (bucketed).
 *
 * Finding runs. Prefix hashes over (class, depth) compare any two spans in
 * O(1); per item, the next sibling item alike (same hash, same enclosing
 * token) comes from one backward pass with a hash map. At item i the
 * candidates are its next RUN_CANDIDATES alike siblings s, unit [i, s);
 * the one whose run covers the most tokens wins, if its repeat tokens and
 * literals are at most half the tokens it covers. A hash collision can only
 * make a poor run (more literals), never a wrong decode, since copies are
 * checked symbol by symbol. Linear in the tokens, with the candidate cap.
 */
#include <stdlib.h>
#include <string.h>

#include "tpe_internal.h"

#define RUN_CANDIDATES 64 /* alike siblings tried as the start of the second copy */
#define RUN_MIN_COVER  4  /* base tokens a run must cover */
#define HASH_BASE      0x9e3779b97f4a7c15ull

void tpe_runs_free(tpe_runs *r)
{
    free(r->h);
    free(r->pw);
    free(r->iend);
    free(r->up);
    free(r->nsame);
    free(r->lim_end);
    free(r->lim_run);
    free(r->lim_unit);
    free(r->lim_copies);
    free(r->mkey);
    free(r->mval);
    free(r->mgen);
    free(r->first);
    free(r->sym);
    free(r->unit);
    memset(r, 0, sizeof *r);
}

static int grow(void *pp, size_t n, size_t size)
{
    void **p = pp, *a = realloc(*p, n * size);
    if (!a)
        return -1;
    *p = a;
    return 0;
}

static int reserve(tpe_runs *r, size_t n)
{
    if (n <= r->cap)
        return 0;
    size_t nc = r->cap ? r->cap : 1024;
    while (nc < n)
        nc *= 2;
    if (grow(&r->h, nc + 1, sizeof *r->h) || grow(&r->pw, nc + 1, sizeof *r->pw) ||
        grow(&r->iend, nc, sizeof *r->iend) || grow(&r->up, nc, sizeof *r->up) ||
        grow(&r->nsame, nc, sizeof *r->nsame) || grow(&r->lim_end, nc, sizeof *r->lim_end) ||
        grow(&r->lim_run, nc, sizeof *r->lim_run) || grow(&r->lim_unit, nc, sizeof *r->lim_unit) ||
        grow(&r->lim_copies, nc, sizeof *r->lim_copies) || grow(&r->mkey, 2 * nc, sizeof *r->mkey) ||
        grow(&r->mval, 2 * nc, sizeof *r->mval) || grow(&r->first, nc, sizeof *r->first) ||
        grow(&r->sym, nc, sizeof *r->sym) || grow(&r->unit, nc, sizeof *r->unit))
        return -1;
    uint32_t *g = calloc(2 * nc, sizeof *g); /* stamps start over with the table */
    if (!g)
        return -1;
    free(r->mgen);
    r->mgen = g;
    r->gen = 0;
    r->cap = nc;
    r->pw[0] = 1;
    for (size_t i = 1; i <= nc; i++)
        r->pw[i] = r->pw[i - 1] * HASH_BASE;
    return 0;
}

/* Hash of the base tokens [a, a + len). */
static inline uint64_t span(const tpe_runs *r, size_t a, size_t len)
{
    return r->h[a + len] - r->h[a] * r->pw[len];
}

static inline void put(tpe_runs *r, uint32_t first, uint32_t sym, uint32_t unit)
{
    r->first[r->m] = first;
    r->sym[r->m] = sym;
    r->unit[r->m] = unit;
    r->m++;
}

/* Tokens the copies [a, e) of a unit of u tokens become: pieces and literals. */
static size_t copy_tokens(const uint32_t *sym, size_t a, size_t e, size_t u)
{
    size_t out = 0;
    int in_piece = 0;
    for (size_t j = a; j < e; j++) {
        int same = sym[j] == sym[j - u];
        out += !same || !in_piece;
        in_piece = same;
    }
    return out;
}

int tpe_runs_collapse(tpe_runs *r, const struct teller_tpe_vocab *v, const teller_tpe_seq *b)
{
    size_t n = b->n;
    r->m = 0;
    if (reserve(r, n + 1))
        return -1;
    const uint32_t *sym = b->sym;
    const uint16_t *dep = b->depth;
    /* prefix hashes; enclosing token (nearest earlier shallower) */
    uint32_t *stk = r->lim_end; /* free until the walk */
    size_t sp = 0;
    r->h[0] = 0;
    for (size_t i = 0; i < n; i++) {
        r->h[i + 1] = r->h[i] * HASH_BASE + tpe_mix64(v->cls[sym[i]] + ((uint64_t)dep[i] << 48) + 1);
        while (sp && dep[stk[sp - 1]] >= dep[i])
            sp--;
        r->up[i] = sp ? stk[sp - 1] : TELLER_NONE;
        stk[sp++] = (uint32_t)i;
    }
    /* item ends: the first later token no deeper */
    sp = 0;
    for (size_t i = n; i-- > 0;) {
        while (sp && dep[stk[sp - 1]] > dep[i])
            sp--;
        r->iend[i] = sp ? stk[sp - 1] : (uint32_t)n;
        stk[sp++] = (uint32_t)i;
    }
    /* next alike sibling item */
    if (++r->gen == 0) {
        memset(r->mgen, 0, 2 * r->cap * sizeof *r->mgen);
        r->gen = 1;
    }
    size_t mask = 2 * r->cap - 1;
    for (size_t i = n; i-- > 0;) {
        size_t len = r->iend[i] - i;
        uint64_t key = tpe_mix64(span(r, i, len) ^ tpe_mix64(len + ((uint64_t)r->up[i] << 32)));
        size_t j = key & mask;
        while (r->mgen[j] == r->gen && r->mkey[j] != key)
            j = (j + 1) & mask;
        r->nsame[i] = r->mgen[j] == r->gen ? r->mval[j] : TELLER_NONE;
        r->mgen[j] = r->gen;
        r->mkey[j] = key;
        r->mval[j] = (uint32_t)i;
    }
    /* the walk: literals, and runs whose first copy is walked in turn */
    size_t nl = 0, i = 0;
    while (i < n || nl) {
        if (nl && r->lim_end[nl - 1] <= i) {
            /* the unit is done: its copies, as repeat tokens and literals */
            nl--;
            size_t a = r->lim_end[nl], e = r->lim_run[nl], u = r->lim_unit[nl];
            uint32_t rep = teller_tpe_repeat_symbol(r->lim_copies[nl]);
            for (size_t j = a; j < e;) {
                if (sym[j] != sym[j - u]) {
                    put(r, (uint32_t)j, sym[j], 0);
                    j++;
                    continue;
                }
                put(r, (uint32_t)j, rep, (uint32_t)u);
                rep = 0; /* "REPEAT~+" from here on */
                while (j < e && sym[j] == sym[j - u])
                    j++;
            }
            i = e;
            continue;
        }
        size_t lim = nl ? r->lim_end[nl - 1] : n, best_u = 0, best_k = 0;
        uint16_t d = dep[i];
        int tries = 0;
        for (uint32_t s = r->nsame[i]; s != TELLER_NONE && tries < RUN_CANDIDATES; s = r->nsame[s], tries++) {
            size_t u = s - i;
            if (s + u > lim)
                break;
            if (r->up[s] != r->up[i] || dep[s] != d)
                continue;
            uint64_t hu = span(r, i, u);
            size_t e = s;
            while (e + u <= lim && e < n && dep[e] == d && span(r, e, u) == hu && (e + u == n || dep[e + u] <= d))
                e += u;
            size_t k = (e - i) / u;
            if (k >= 2 && (k - 1) * u > (best_k > 1 ? (best_k - 1) * best_u : 0)) {
                best_u = u;
                best_k = k;
            }
        }
        size_t cover = best_k > 1 ? (best_k - 1) * best_u : 0;
        if (cover >= RUN_MIN_COVER &&
            2 * copy_tokens(sym, i + best_u, i + best_k * best_u, best_u) <= cover) {
            r->lim_end[nl] = (uint32_t)(i + best_u);
            r->lim_run[nl] = (uint32_t)(i + best_k * best_u);
            r->lim_unit[nl] = (uint32_t)best_u;
            r->lim_copies[nl] = best_k > UINT32_MAX ? UINT32_MAX : (uint32_t)best_k;
            nl++;
            continue; /* walk the unit from i: runs inside it stay inside it */
        }
        put(r, (uint32_t)i, sym[i], 0);
        i++;
    }
    return 0;
}
