/*
 * drain.c - online template mining in the Drain family.
 *
 * A message is split into tokens at spaces and tabs. Masking is the one
 * rule Drain's users add by regex, made general: inside a token, every
 * segment between the delimiters  = : , ; ( ) [ ] { } " ' |  that holds a
 * digit is a variable and becomes `<*>` (so "size:123," is "size:<*>,",
 * an IP, a hex address, a block id, a path with numbers are each `<*>`).
 * Masked tokens are interned; `<*>` alone is token 0. A URL's "//" after
 * "scheme:" stays text ("http://<*>:<*>").
 *
 * The prefix tree of Drain (length first, then the first depth-2 tokens,
 * tokens holding a variable going to the `<*>` branch) is kept as one hash
 * table from (length, prefix tokens) to a leaf: a list of templates. In the
 * leaf the message joins the template with the most equal constant tokens
 * if that share of its length reaches the similarity threshold (ties go to
 * the template with more wildcards, then the older); otherwise it starts a
 * new template. Joining turns every position that differs into `<*>`.
 * Template ids count up from 0 in order of creation, so the same input
 * gives the same ids. A message's parameters are one per `<*>` of its
 * template, in order: a wildcard token whole, or each masked segment of a
 * token masked inside ("<*>:<*>" gives two). Nothing is allocated per message once the tables
 * have grown: tokens and templates live in arenas owned by the miner.
 *
 * Speed: a message is read 64 bytes at a time into bit masks of its
 * spaces and digits; a token without digits is interned as it is (masking
 * cannot change it); the segments masked while interning are kept for the
 * parameters, so a message is masked once. In a leaf a template is
 * skipped, or left part way, once its constant positions cannot beat the
 * best match so far, and the scan's result is remembered by the message's
 * token ids until a template is made or generalised: a message whose ids
 * came since then takes the same template without a scan.
 */
#include <stdlib.h>
#include <string.h>

#include "teller/logs.h"
#include "../util/vec.h"

#define MAX_TOKENS 255
#define WILD 0u
/* masked segments kept from tokenizing one message; a message with more
 * is masked again for its parameters */
#define MAX_SEGS 512
/* the leaf scan's result remembered for messages of up to MEMO_TOKENS
 * tokens, in MEMO_SLOTS slots by a hash of their token ids */
#define MEMO_TOKENS 32
#define MEMO_SLOTS 1024

typedef struct tok_entry {
    uint32_t off;   /* into text */
    uint32_t len;
    uint32_t hash;
    uint8_t  var;   /* holds `<*>` */
} tok_entry;

typedef struct cluster {
    uint32_t first_tok; /* into tpl_toks */
    uint32_t ntok;
    uint32_t nwild;
    uint64_t hits;
    char    *text;      /* cached template text, NULL when stale */
} cluster;

/* A message's token ids and what the leaf scan found for them while the
 * templates were as version says: with the same ids and no template
 * changed since, the scan finds the same again. */
typedef struct memo {
    uint32_t version;   /* 0: empty */
    uint32_t nt;
    uint32_t best, best_eq, best_wild;
    uint32_t ids[MEMO_TOKENS];
} memo;

typedef struct leaf {
    uint64_t key_hash;
    uint32_t ntok;
    uint32_t prefix[2];
    uint32_t first;     /* clusters of the leaf: a linked list through next_in_leaf */
    uint32_t used;
} leaf;

struct teller_log_miner {
    uint32_t   depth;
    double     sim;
    /* interned tokens */
    char      *text;
    size_t     text_len, text_cap;
    tok_entry *toks;
    size_t     ntoks, toks_cap;
    uint32_t  *tok_table;   /* open addressing: token id + 1, 0 empty */
    size_t     tok_mask;
    /* templates */
    cluster   *cl;
    size_t     ncl, cl_cap;
    uint32_t  *next_in_leaf;
    size_t     nil_cap;
    uint32_t  *tpl_toks;
    size_t     tpl_len, tpl_cap;
    /* leaves */
    leaf      *leaves;
    size_t     leaf_mask, nleaves;
    /* counts the changes to templates (one made, one generalised) from 1 */
    uint32_t   version;
    memo      *memo;        /* MEMO_SLOTS */
    /* scratch for one message */
    char      *scratch;
    size_t     scratch_cap;
    uint32_t   ids[MAX_TOKENS];
    uint32_t   off[MAX_TOKENS], len[MAX_TOKENS];
    uint8_t    dig[MAX_TOKENS];
    /* the masked segments of token k are seg[seg0[k] .. seg0[k + 1]),
     * as offsets into the message; valid while nseg <= MAX_SEGS */
    uint32_t   seg0[MAX_TOKENS + 1];
    uint32_t   nseg;
    teller_log_param seg[MAX_SEGS];
};

/* Eight bytes of s as a number whose lowest byte is s[0]. */
static uint64_t load8(const char *s)
{
    uint64_t w;
    memcpy(&w, s, 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    w = __builtin_bswap64(w);
#endif
    return w;
}

/* Bytes s[0..n) with n < 8 in one number: the first and last four when
 * there are four or more, else the first, middle and last byte. The same
 * bytes give the same number; different ones may too (hashing only). */
static uint64_t load_short(const char *s, size_t n)
{
    if (n >= 4) {
        uint32_t a, b;
        memcpy(&a, s, 4);
        memcpy(&b, s + n - 4, 4);
        return (uint64_t)a << 32 | b;
    }
    return n ? (uint64_t)(unsigned char)s[0] << 16 | (uint64_t)(unsigned char)s[n / 2] << 8 |
                   (unsigned char)s[n - 1]
             : 0;
}

/* A hash of s[0..n), eight bytes at a time, the last eight (or the
 * short tail) read once more where n is not a multiple of eight. */
static uint32_t hash_bytes(const char *s, size_t n)
{
    const uint64_t k = 0x9E3779B97F4A7C15u;
    uint64_t h = n * k;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        h = (h ^ load8(s + i)) * k;
        h ^= h >> 29;
    }
    if (i < n) {
        h = (h ^ (n >= 8 ? load8(s + n - 8) : load_short(s, n))) * k;
        h ^= h >> 29;
    }
    return (uint32_t)(h >> 32);
}

/* Whether a[0..n) and b[0..n) are the same bytes. */
static int same_bytes(const char *a, const char *b, size_t n)
{
    if (n < 8) {
        if (n >= 4) {
            uint32_t x0, x1, y0, y1;
            memcpy(&x0, a, 4), memcpy(&y0, b, 4), memcpy(&x1, a + n - 4, 4), memcpy(&y1, b + n - 4, 4);
            return x0 == y0 && x1 == y1;
        }
        for (size_t i = 0; i < n; i++)
            if (a[i] != b[i])
                return 0;
        return 1;
    }
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        if (load8(a + i) != load8(b + i))
            return 0;
    return i == n || load8(a + n - 8) == load8(b + n - 8);
}

/* What a byte is to the tokens: a space between them (space or tab), a
 * delimiter between the segments of one, a digit (which makes its segment
 * a variable), or none of these (0). */
enum { DELIM = 1, DIGIT = 2, SPACE = 4 };
static const unsigned char k_class[256] = {
    [' '] = SPACE, ['\t'] = SPACE, ['='] = DELIM, [':'] = DELIM, [','] = DELIM, [';'] = DELIM,
    ['('] = DELIM, [')'] = DELIM, ['['] = DELIM, [']'] = DELIM, ['{'] = DELIM, ['}'] = DELIM,
    ['"'] = DELIM, ['\''] = DELIM, ['|'] = DELIM, ['0'] = DIGIT, ['1'] = DIGIT, ['2'] = DIGIT, ['3'] = DIGIT, ['4'] = DIGIT,
    ['5'] = DIGIT, ['6'] = DIGIT, ['7'] = DIGIT, ['8'] = DIGIT, ['9'] = DIGIT,
};

static int is_delim(char c) { return k_class[(unsigned char)c] & DELIM; }

/* Adds s[0..n), of hash h and not interned yet, as the next token id;
 * UINT32_MAX when out of memory. Kept apart from intern's look-up, which
 * runs for every token of every message. */
static uint32_t intern_new(teller_log_miner *m, const char *s, size_t n, int var, uint32_t h)
{
    if ((m->ntoks + 1) * 2 > m->tok_mask + 1) { /* grow the table */
        size_t ncap = (m->tok_mask + 1) * 2;
        uint32_t *nt = calloc(ncap, sizeof *nt);
        if (!nt)
            return UINT32_MAX;
        for (size_t k = 0; k < m->ntoks; k++) {
            size_t j = m->toks[k].hash & (ncap - 1);
            while (nt[j])
                j = (j + 1) & (ncap - 1);
            nt[j] = (uint32_t)k + 1;
        }
        free(m->tok_table);
        m->tok_table = nt;
        m->tok_mask = ncap - 1;
    }
    if (TELLER_GROW(m->toks, m->toks_cap, m->ntoks + 1) ||
        TELLER_GROW(m->text, m->text_cap, m->text_len + n + 1))
        return UINT32_MAX;
    size_t i = h & m->tok_mask;
    while (m->tok_table[i])
        i = (i + 1) & m->tok_mask;
    memcpy(m->text + m->text_len, s, n);
    m->text[m->text_len + n] = 0;
    tok_entry *t = &m->toks[m->ntoks];
    t->off = (uint32_t)m->text_len;
    t->len = (uint32_t)n;
    t->hash = h;
    t->var = (uint8_t)var;
    m->text_len += n + 1;
    m->tok_table[i] = (uint32_t)m->ntoks + 1;
    return (uint32_t)m->ntoks++;
}

/* Interns s[0..n); returns the id or UINT32_MAX when out of memory. */
static uint32_t intern(teller_log_miner *m, const char *s, size_t n, int var)
{
    uint32_t h = hash_bytes(s, n);
    for (size_t i = h & m->tok_mask;; i = (i + 1) & m->tok_mask) {
        uint32_t e = m->tok_table[i];
        if (!e)
            return intern_new(m, s, n, var, h);
        const tok_entry *t = &m->toks[e - 1];
        if (t->hash == h && t->len == n && same_bytes(m->text + t->off, s, n))
            return e - 1;
    }
}

teller_log_miner *teller_log_miner_create(const teller_miner_opts *opts)
{
    teller_log_miner *m = calloc(1, sizeof *m);
    if (!m)
        return NULL;
    m->depth = opts && opts->depth ? opts->depth : 4;
    if (m->depth < 2)
        m->depth = 2;
    if (m->depth > 4)
        m->depth = 4;
    m->sim = opts && opts->similarity > 0 ? opts->similarity : 0.7;
    m->tok_mask = 1023;
    m->tok_table = calloc(m->tok_mask + 1, sizeof *m->tok_table);
    m->leaf_mask = 255;
    m->leaves = calloc(m->leaf_mask + 1, sizeof *m->leaves);
    m->version = 1;
    m->memo = calloc(MEMO_SLOTS, sizeof *m->memo);
    if (!m->tok_table || !m->leaves || !m->memo || intern_new(m, "<*>", 3, 1, hash_bytes("<*>", 3)) != WILD) {
        teller_log_miner_free(m);
        return NULL;
    }
    return m;
}

void teller_log_miner_free(teller_log_miner *m)
{
    if (!m)
        return;
    for (size_t i = 0; i < m->ncl; i++)
        free(m->cl[i].text);
    free(m->text);
    free(m->toks);
    free(m->tok_table);
    free(m->cl);
    free(m->next_in_leaf);
    free(m->tpl_toks);
    free(m->leaves);
    free(m->memo);
    free(m->scratch);
    free(m);
}

static uint64_t leaf_hash(uint32_t ntok, const uint32_t *pre, uint32_t npre)
{
    uint64_t h = 0x9e3779b97f4a7c15ull ^ ntok;
    for (uint32_t i = 0; i < npre; i++)
        h = (h ^ pre[i]) * 0x100000001b3ull;
    return h ^ (h >> 29);
}

/* Finds or creates the leaf for (ntok, prefix). NULL when out of memory. */
static leaf *get_leaf(teller_log_miner *m, uint32_t ntok, const uint32_t *pre, uint32_t npre)
{
    uint64_t h = leaf_hash(ntok, pre, npre);
    for (;;) {
        size_t i = h & m->leaf_mask;
        for (;;) {
            leaf *l = &m->leaves[i];
            if (!l->used)
                break;
            if (l->key_hash == h && l->ntok == ntok && (npre < 1 || l->prefix[0] == pre[0]) &&
                (npre < 2 || l->prefix[1] == pre[1]))
                return l;
            i = (i + 1) & m->leaf_mask;
        }
        if ((m->nleaves + 1) * 2 <= m->leaf_mask + 1) {
            leaf *l = &m->leaves[i];
            l->used = 1;
            l->key_hash = h;
            l->ntok = ntok;
            l->prefix[0] = npre > 0 ? pre[0] : 0;
            l->prefix[1] = npre > 1 ? pre[1] : 0;
            l->first = UINT32_MAX;
            m->nleaves++;
            return l;
        }
        size_t ncap = (m->leaf_mask + 1) * 2;
        leaf *nl = calloc(ncap, sizeof *nl);
        if (!nl)
            return NULL;
        for (size_t k = 0; k <= m->leaf_mask; k++) {
            if (!m->leaves[k].used)
                continue;
            size_t j = m->leaves[k].key_hash & (ncap - 1);
            while (nl[j].used)
                j = (j + 1) & (ncap - 1);
            nl[j] = m->leaves[k];
        }
        free(m->leaves);
        m->leaves = nl;
        m->leaf_mask = ncap - 1;
    }
}

/* Masks the token t[0..n) into out (room for 3n bytes): every segment
 * between delimiters that holds a digit becomes `<*>`, and each such
 * `<*>` is a slot: when slots is not NULL, the message bytes under it (as
 * offsets from base) go to slots[*nslot] while *nslot < max, and *nslot
 * counts them all. Returns the masked length; *var says a slot was made.
 * A segment starts the token or follows a delimiter or a URL's "//", so
 * two slots are never adjacent. */
static size_t mask_token(const char *t, size_t n, char *out, int *var, teller_log_param *slots,
                         uint32_t *nslot, uint32_t max, uint32_t base)
{
    size_t o = 0;
    *var = 0;
    for (size_t j = 0; j < n;) {
        if (is_delim(t[j])) {
            out[o++] = t[j++];
            continue;
        }
        /* a URL's "//" after its scheme is not part of the host */
        if (j + 1 < n && t[j] == '/' && t[j + 1] == '/' && o && out[o - 1] == ':') {
            out[o++] = '/';
            out[o++] = '/';
            j += 2;
        }
        size_t s0 = j;
        int dig = 0;
        for (int k; j < n && !((k = k_class[(unsigned char)t[j]]) & DELIM); j++)
            dig |= k & DIGIT; /* not SPACE: the last token takes the rest of the line, spaces and all */
        if (!dig) {
            memcpy(out + o, t + s0, j - s0);
            o += j - s0;
        } else {
            memcpy(out + o, "<*>", 3);
            o += 3;
            if (slots && *nslot < max) {
                slots[*nslot].off = base + (uint32_t)s0;
                slots[*nslot].len = (uint32_t)(j - s0);
            }
            (*nslot)++;
            *var = 1;
        }
    }
    return o;
}

/* Makes sure scratch holds a masked token of a message n bytes long:
 * masking turns a one-character segment into "<*>", so three times. */
static int scratch_for(teller_log_miner *m, size_t n)
{
    if (m->scratch_cap >= 3 * n + 8)
        return 0;
    char *s = realloc(m->scratch, 3 * n + 8);
    if (!s)
        return -1;
    m->scratch = s;
    m->scratch_cap = 3 * n + 8;
    return 0;
}

/* The bytes of w (s[0] lowest, as load8 gives them) that equal c, as
 * the top bit of each: exact, as no sum carries out of its byte. */
static uint64_t bytes_eq(uint64_t w, unsigned char c)
{
    const uint64_t low7 = 0x7f7f7f7f7f7f7f7fu;
    uint64_t x = w ^ (0x0101010101010101u * c);
    return ~(((x & low7) + low7) | x | low7);
}

/* The bytes of w that are '0' to '9', as the top bit of each. */
static uint64_t bytes_digit(uint64_t w)
{
    const uint64_t low7 = 0x7f7f7f7f7f7f7f7fu;
    uint64_t x = w & low7; /* x + 0x50 reaches 0x80 from '0' on, x + 0x46 from ':' on */
    return (x + 0x5050505050505050u) & ~(x + 0x4646464646464646u) & ~w & ~low7;
}

/* Bit k of the result is the top bit of byte k of x (a bytes_* mask):
 * the multiply gathers the eight bits into the top byte, no two of its
 * partial products sharing a bit. */
static uint64_t pack8(uint64_t x)
{
    return ((x >> 7) * 0x0102040810204080u) >> 56;
}

/* Splits msg into tokens at spaces and tabs into m->off/m->len (the last
 * of MAX_TOKENS takes the rest), and m->dig (a token holds a digit).
 * Returns the count. The message is read 64 bytes at a time into two bit
 * masks, spaces and digits, and the tokens are the runs between spaces. */
static int split(teller_log_miner *m, const char *msg, size_t n)
{
    int nt = 0, open = 0, dig = 0;
    size_t b = 0; /* the open token's first byte */
    for (size_t base = 0; base < n; base += 64) {
        size_t len = n - base < 64 ? n - base : 64, k = 0;
        uint64_t sp = 0, dg = 0;
        for (; k + 8 <= len; k += 8) {
            uint64_t w = load8(msg + base + k);
            sp |= pack8(bytes_eq(w, ' ') | bytes_eq(w, '\t')) << k;
            dg |= pack8(bytes_digit(w)) << k;
        }
        for (; k < len; k++) {
            unsigned c = k_class[(unsigned char)msg[base + k]];
            sp |= (uint64_t)((c & SPACE) != 0) << k;
            dg |= (uint64_t)((c & DIGIT) != 0) << k;
        }
        uint64_t valid = len == 64 ? ~(uint64_t)0 : ((uint64_t)1 << len) - 1;
        size_t pos = 0;
        for (;;) {
            uint64_t ahead = valid & (~(uint64_t)0 << pos);
            if (!open) {
                if (!(~sp & ahead))
                    break;
                pos = (size_t)__builtin_ctzll(~sp & ahead);
                b = base + pos;
                if (nt == MAX_TOKENS - 1) { /* the last token: the rest of the line, spaces and all */
                    size_t e = n;
                    dig = 0;
                    for (size_t j = b; j < n; j++)
                        dig |= (k_class[(unsigned char)msg[j]] & DIGIT) != 0;
                    while (e > b && (k_class[(unsigned char)msg[e - 1]] & SPACE))
                        e--;
                    m->off[nt] = (uint32_t)b;
                    m->len[nt] = (uint32_t)(e - b);
                    m->dig[nt] = (uint8_t)dig;
                    return nt + 1;
                }
                open = 1;
                dig = 0;
                ahead = valid & (~(uint64_t)0 << pos);
            }
            uint64_t end = sp & ahead;
            dig |= (dg & ahead & (end ? (end & (0 - end)) - 1 : ~(uint64_t)0)) != 0;
            if (!end)
                break; /* the token goes on into the next block */
            pos = (size_t)__builtin_ctzll(end);
            m->off[nt] = (uint32_t)b;
            m->len[nt] = (uint32_t)(base + pos - b);
            m->dig[nt] = (uint8_t)dig;
            nt++;
            open = 0;
        }
    }
    if (open) {
        m->off[nt] = (uint32_t)b;
        m->len[nt] = (uint32_t)(n - b);
        m->dig[nt] = (uint8_t)dig;
        nt++;
    }
    return nt;
}

/* Splits msg into tokens and masks them into m->ids, keeping the masked
 * segments in m->seg. Returns the count, or -1 when out of memory. */
static int tokenize(teller_log_miner *m, const char *msg, size_t n)
{
    if (scratch_for(m, n))
        return -1;
    int nt = split(m, msg, n);
    m->nseg = 0;
    for (int k = 0; k < nt; k++) {
        const char *t = msg + m->off[k];
        size_t tn = m->len[k];
        int var = 0;
        m->seg0[k] = m->nseg;
        if (m->dig[k]) { /* else masking leaves it as it is */
            uint32_t kept = m->nseg < MAX_SEGS ? m->nseg : MAX_SEGS, ns = 0;
            tn = mask_token(t, tn, m->scratch, &var, m->seg + kept, &ns, MAX_SEGS - kept, m->off[k]);
            t = m->scratch;
            m->nseg += ns;
        }
        uint32_t id = intern(m, t, tn, var);
        if (id == UINT32_MAX)
            return -1;
        m->ids[k] = id;
    }
    m->seg0[nt] = m->nseg;
    return nt;
}

static void mark_stale(cluster *c)
{
    free(c->text);
    c->text = NULL;
}

/* A template was made or generalised: every remembered scan is stale. */
static void templates_changed(teller_log_miner *m)
{
    if (++m->version == 0) { /* wrapped: forget all, as an old version may come round */
        memset(m->memo, 0, MEMO_SLOTS * sizeof *m->memo);
        m->version = 1;
    }
}

/* The message's bytes under each `<*>` of cluster c, in order, for a
 * message already split into m->off/m->len (nt tokens, as many as c has):
 * a wildcard token is one slot, whole; a token masked inside gives one
 * slot per masked segment; a constant token none. kept: the message was
 * tokenized into c, so a constant of c is the message's own token and
 * its segments are in m->seg when they all fit. */
static uint32_t slot_params(teller_log_miner *m, const char *msg, const cluster *c, int nt,
                            teller_log_param *params, uint32_t max, int kept)
{
    if (kept && m->nseg > MAX_SEGS)
        kept = 0;
    uint32_t np = 0;
    const uint32_t *t = m->tpl_toks + c->first_tok;
    for (int i = 0; i < nt; i++) {
        if (t[i] == WILD) {
            if (params && np < max) {
                params[np].off = m->off[i];
                params[np].len = m->len[i];
            }
            np++;
        } else if (m->toks[t[i]].var && kept) {
            for (uint32_t k = m->seg0[i]; k < m->seg0[i + 1]; k++, np++)
                if (params && np < max)
                    params[np] = m->seg[k];
        } else if (m->toks[t[i]].var) {
            int var;
            mask_token(msg + m->off[i], m->len[i], m->scratch, &var, params, &np, max, m->off[i]);
        }
    }
    return np;
}

teller_status teller_log_miner_add(teller_log_miner *m, const char *msg, size_t len,
                                   teller_log_match *out, teller_log_param *params,
                                   uint32_t max_params)
{
    if (len > UINT32_MAX)
        len = UINT32_MAX;
    int nt = tokenize(m, msg, len);
    if (nt < 0)
        return TELLER_ERR_NOMEM;
    uint32_t npre = m->depth - 2;
    if (npre > (uint32_t)nt)
        npre = (uint32_t)nt;
    uint32_t pre[2] = {0, 0};
    for (uint32_t i = 0; i < npre; i++)
        pre[i] = m->toks[m->ids[i]].var ? WILD : m->ids[i];
    leaf *l = get_leaf(m, (uint32_t)nt, pre, npre);
    if (!l)
        return TELLER_ERR_NOMEM;

    /* a message seen before with no template changed since: the scan
     * would find what it found then */
    uint32_t best = UINT32_MAX, best_eq = 0, best_wild = 0;
    memo *mo = NULL;
    if (nt <= MEMO_TOKENS) {
        uint64_t h = (uint64_t)nt * 0x9E3779B97F4A7C15u;
        for (int i = 0; i < nt; i++)
            h = (h ^ m->ids[i]) * 0x100000001b3u;
        mo = &m->memo[(h ^ h >> 32) & (MEMO_SLOTS - 1)];
    }
    if (mo && mo->version == m->version && mo->nt == (uint32_t)nt &&
        !memcmp(mo->ids, m->ids, (size_t)nt * sizeof *m->ids)) {
        best = mo->best;
        best_eq = mo->best_eq;
        best_wild = mo->best_wild;
    } else {
        for (uint32_t c = l->first; c != UINT32_MAX; c = m->next_in_leaf[c]) {
            /* a template beats the best so far with more equal constants, or
             * as many and more wildcards (ties go to the older); it can match
             * at most its constant positions, so it is skipped when they are
             * too few and left once too many of them differ */
            uint32_t nwild = m->cl[c].nwild, most = (uint32_t)nt - nwild;
            uint32_t need = best == UINT32_MAX ? 0 : best_eq + (nwild <= best_wild);
            if (most < need)
                continue;
            const uint32_t *t = m->tpl_toks + m->cl[c].first_tok;
            uint32_t slack = most - need, lost = 0;
            int i = 0;
            for (; i < nt; i++)
                if (t[i] != m->ids[i] && t[i] != WILD && ++lost > slack)
                    break;
            if (i == nt) { /* every constant position was seen: most - lost equal, need or more */
                best = c;
                best_eq = most - lost;
                best_wild = nwild;
            }
        }
        if (mo) {
            mo->version = m->version;
            mo->nt = (uint32_t)nt;
            memcpy(mo->ids, m->ids, (size_t)nt * sizeof *m->ids);
            mo->best = best;
            mo->best_eq = best_eq;
            mo->best_wild = best_wild;
        }
    }
    /* the share is taken over the template's constant positions: a template
     * that has already generalised is not penalised for its wildcards */
    int join = best != UINT32_MAX &&
               (nt == 0 || (double)best_eq >= m->sim * (double)(nt - (int)best_wild));
    if (join) {
        cluster *c = &m->cl[best];
        uint32_t *t = m->tpl_toks + c->first_tok;
        int changed = 0;
        for (int i = 0; i < nt; i++)
            if (t[i] != WILD && t[i] != m->ids[i]) {
                t[i] = WILD;
                c->nwild++;
                changed = 1;
            }
        if (changed) {
            mark_stale(c);
            templates_changed(m);
        }
    } else {
        if (TELLER_GROW(m->cl, m->cl_cap, m->ncl + 1) ||
            TELLER_GROW(m->next_in_leaf, m->nil_cap, m->ncl + 1) ||
            TELLER_GROW(m->tpl_toks, m->tpl_cap, m->tpl_len + (size_t)nt + 1))
            return TELLER_ERR_NOMEM;
        cluster *c = &m->cl[m->ncl];
        memset(c, 0, sizeof *c);
        c->first_tok = (uint32_t)m->tpl_len;
        c->ntok = (uint32_t)nt;
        for (int i = 0; i < nt; i++) {
            m->tpl_toks[m->tpl_len + (size_t)i] = m->ids[i];
            c->nwild += m->ids[i] == WILD;
        }
        m->tpl_len += (size_t)nt;
        /* append at the tail so that ties go to the older template */
        m->next_in_leaf[m->ncl] = UINT32_MAX;
        if (l->first == UINT32_MAX) {
            l->first = (uint32_t)m->ncl;
        } else {
            uint32_t k = l->first;
            while (m->next_in_leaf[k] != UINT32_MAX)
                k = m->next_in_leaf[k];
            m->next_in_leaf[k] = (uint32_t)m->ncl;
        }
        best = (uint32_t)m->ncl++;
        templates_changed(m);
    }
    cluster *c = &m->cl[best];
    c->hits++;
    uint32_t np = slot_params(m, msg, c, nt, params, max_params, 1);
    if (out) {
        out->template_id = best;
        out->num_params = np;
    }
    return TELLER_OK;
}

uint32_t teller_log_miner_count(const teller_log_miner *m)
{
    return (uint32_t)m->ncl;
}

uint64_t teller_log_miner_hits(const teller_log_miner *m, uint32_t id)
{
    return id < m->ncl ? m->cl[id].hits : 0;
}

teller_status teller_log_miner_params(teller_log_miner *m, uint32_t id, const char *msg, size_t len,
                                      teller_log_param *params, uint32_t max_params, uint32_t *num_params)
{
    *num_params = 0;
    if (id >= m->ncl)
        return TELLER_ERR_ARG;
    if (len > UINT32_MAX)
        len = UINT32_MAX;
    if (scratch_for(m, len))
        return TELLER_ERR_NOMEM;
    int nt = split(m, msg, len);
    const cluster *c = &m->cl[id];
    if ((uint32_t)nt != c->ntok)
        return TELLER_ERR_ARG;
    *num_params = slot_params(m, msg, c, nt, params, max_params, 0);
    return TELLER_OK;
}

const char *teller_log_miner_template(const teller_log_miner *m, uint32_t id)
{
    if (id >= m->ncl)
        return "";
    cluster *c = &((teller_log_miner *)m)->cl[id];
    if (!c->text) {
        const uint32_t *t = m->tpl_toks + c->first_tok;
        size_t n = 1;
        for (uint32_t i = 0; i < c->ntok; i++)
            n += m->toks[t[i]].len + 1;
        c->text = malloc(n);
        if (!c->text)
            return "";
        size_t o = 0;
        for (uint32_t i = 0; i < c->ntok; i++) {
            if (i)
                c->text[o++] = ' ';
            memcpy(c->text + o, m->text + m->toks[t[i]].off, m->toks[t[i]].len);
            o += m->toks[t[i]].len;
        }
        c->text[o] = 0;
    }
    return c->text;
}
