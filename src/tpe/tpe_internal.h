/*
 * tpe_internal.h - what the TPE sources share: the vocabulary's layout and
 * its pair lookup, which the encoder calls once per candidate pair, and the
 * repeat-run finder that training and encoding both run first.
 */
#ifndef TELLER_TPE_INTERNAL_H
#define TELLER_TPE_INTERNAL_H

#include <stdint.h>

#include "teller/tpe.h"

struct teller_tpe_vocab {
    teller_tpe_vocab_opts opts;
    size_t    n, cap;      /* symbols */
    uint32_t *left;        /* [n] TELLER_NONE for base symbols */
    uint32_t *right;       /* [n] */
    uint32_t *cls;         /* [n] the symbol it merges as: itself, or for a base symbol the merges do not
                            * know (a name too few training runs held), its layer's symbol (tpe.h) */
    uint32_t *text_off;    /* [n] base symbols: offset of the NUL-terminated text in text */
    uint32_t *text_len;    /* [n] */
    char     *text;
    size_t    text_n, text_cap;
    size_t    nmerges;
    uint32_t *shash;       /* string -> id, open addressing, TELLER_NONE empty */
    size_t    shcap;
    uint64_t *pkey;        /* (left << 32 | right) -> merged id, UINT64_MAX empty */
    uint32_t *pval;
    size_t    pcap;
};

static inline uint64_t tpe_mix64(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    x ^= x >> 33;
    return x;
}

/* The merged symbol of (l, r), or TELLER_NONE. Merged ids grow with merge
 * rank, so a smaller id is an earlier merge. */
static inline uint32_t tpe_pair_lookup(const struct teller_tpe_vocab *v, uint32_t l, uint32_t r)
{
    if (!v->pcap)
        return TELLER_NONE;
    uint64_t k = ((uint64_t)l << 32) | r;
    size_t m = v->pcap - 1, j = tpe_mix64(k) & m;
    for (;;) {
        uint64_t q = v->pkey[j];
        if (q == k)
            return v->pval[j];
        if (q == UINT64_MAX)
            return TELLER_NONE;
        j = (j + 1) & m;
    }
}

/* The symbol a base or merged symbol s pairs as in merges (tpe.h,
 * "Known names"); TELLER_NONE stays TELLER_NONE (a position merged away). */
static inline uint32_t tpe_key(const struct teller_tpe_vocab *v, uint32_t s)
{
    return s == TELLER_NONE ? s : v->cls[s];
}

/* Marks base symbol id as one the merges know by its own name. */
static inline void tpe_vocab_set_known(struct teller_tpe_vocab *v, uint32_t id)
{
    v->cls[id] = id;
}

/* The default vocabulary file's bytes (generated from src/tpe/default.vocab
 * by src/tpe/embed_vocab.cmake). */
extern const unsigned char tpe_default_vocab[];
extern const size_t tpe_default_vocab_len;

/* 1 for the repeat symbols (ids below TELLER_TPE_REPEATS), which never merge. */
static inline int tpe_is_repeat(uint32_t sym)
{
    return sym < TELLER_TPE_REPEATS;
}

/* Scratch for finding repeat runs (repeat.c), reused across sequences:
 * no allocation per sequence once warm. */
typedef struct tpe_runs {
    size_t    cap;                 /* base tokens */
    uint64_t *h, *pw;              /* [cap + 1] prefix hashes of (symbol, depth), powers of the base */
    uint32_t *iend, *up, *nsame;   /* [cap] item end, enclosing token, next sibling item alike */
    uint32_t *lim_end, *lim_unit;  /* [cap] units being walked: their end and length, */
    uint32_t *lim_copies;          /* and their run's copies */
    uint64_t *mkey;                /* [2 cap] item -> latest position, for nsame */
    uint32_t *mval, *mgen;
    uint32_t  gen;
    /* the collapsed sequence: m tokens */
    size_t    m;
    uint32_t *first;               /* [cap] first base token */
    uint32_t *sym;                 /* [cap] the base symbol, or a repeat symbol */
    uint32_t *unit;                /* [cap] a repeat token: the unit's length in base tokens; 0 otherwise */
} tpe_runs;

/* Collapses b's runs of identical sibling items into r (m, first, sym,
 * unit); see repeat.c. -1 when out of memory. */
int tpe_runs_collapse(tpe_runs *r, const teller_tpe_seq *b);
void tpe_runs_free(tpe_runs *r);

/* Appends the merged symbol (l, r); returns its id or TELLER_NONE (out of memory). */
uint32_t tpe_vocab_add_merge(struct teller_tpe_vocab *v, uint32_t l, uint32_t r);

#endif
