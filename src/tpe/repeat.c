/*
 * repeat.c - repeat runs: consecutive identical sibling subtrees (a decode
 * step's dozens of identical layers) kept once and followed by one repeat
 * token, before any merge (include/teller/tpe.h, "Repeat runs"). A learned
 * vocabulary rarely holds another workload's layer as merges; a run needs
 * none, so it compresses any workload.
 *
 * Items. The item at a base token is that token and the deeper tokens after
 * it: for a serialised node, its TAG alone, then its NAME with the node's
 * whole subtree. Items at the same depth under the same enclosing token
 * are siblings and tile their parent's tokens. A run at item i is k >= 2
 * consecutive copies of a unit of one or more sibling items with the same
 * symbols and depths. The first copy stays and is walked like any tokens
 * (runs inside it stay inside it); the other copies become one repeat
 * token, whose base tokens decoding copies from one unit length back.
 *
 * Finding runs. Prefix hashes over (symbol, depth) compare any two spans in
 * O(1); per item, the next sibling item alike (same hash, same enclosing
 * token) comes from one backward pass with a hash map. At item i the
 * candidates are its next RUN_CANDIDATES alike siblings s, unit [i, s);
 * the one whose run covers the most tokens wins, and is then checked token
 * by token (a hash collision costs the run, never a wrong decode). Linear
 * in the tokens, with the candidate cap.
 */
#include <stdlib.h>
#include <string.h>

#include "tpe_internal.h"

#define RUN_CANDIDATES 64 /* alike siblings tried as the start of the second copy */
#define RUN_MIN_COVER  3  /* base tokens (nodes) a run must stand for: it saves two tokens or more */
#define HASH_BASE      0x9e3779b97f4a7c15ull

void tpe_runs_free(tpe_runs *r)
{
    free(r->h);
    free(r->pw);
    free(r->iend);
    free(r->up);
    free(r->nsame);
    free(r->lim_end);
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
        grow(&r->nsame, nc, sizeof *r->nsame) || grow(&r->lim_end, nc, sizeof *r->lim_end) || grow(&r->lim_unit, nc, sizeof *r->lim_unit) ||
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

static inline void put(tpe_runs *r, size_t first, uint32_t sym, size_t unit)
{
    r->first[r->m] = (uint32_t)first;
    r->sym[r->m] = sym;
    r->unit[r->m] = (uint32_t)unit;
    r->m++;
}

/* Whether [i + u, e) repeats [i, i + u) symbol for symbol and depth for depth. */
static int copies_equal(const teller_tpe_seq *b, size_t i, size_t u, size_t e)
{
    return !memcmp(b->sym + i, b->sym + i + u, (e - i - u) * sizeof *b->sym) &&
           !memcmp(b->depth + i, b->depth + i + u, (e - i - u) * sizeof *b->depth);
}

int tpe_runs_collapse(tpe_runs *r, const teller_tpe_seq *b)
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
        r->h[i + 1] = r->h[i] * HASH_BASE + tpe_mix64(((uint64_t)sym[i] << 16 | dep[i]) + 1);
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
    /* the walk: base tokens, and runs whose first copy is walked in turn */
    size_t nl = 0, i = 0;
    while (i < n || nl) {
        if (nl && r->lim_end[nl - 1] <= i) {
            /* the unit is done: the other copies are one repeat token */
            nl--;
            size_t u = r->lim_unit[nl], k = r->lim_copies[nl];
            put(r, i, teller_tpe_repeat_symbol((uint32_t)k), u);
            i += (k - 1) * u;
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
            if (k >= 2 && (k - 1) * u > (best_k ? (best_k - 1) * best_u : 0)) {
                best_u = u;
                best_k = k;
            }
        }
        if (best_k && (best_k - 1) * best_u >= RUN_MIN_COVER && copies_equal(b, i, best_u, i + best_k * best_u)) {
            r->lim_end[nl] = (uint32_t)(i + best_u);
            r->lim_unit[nl] = (uint32_t)best_u;
            r->lim_copies[nl] = (uint32_t)best_k;
            nl++;
            continue; /* walk the unit from i: runs inside it stay inside it */
        }
        put(r, i, sym[i], 0);
        i++;
    }
    return 0;
}
