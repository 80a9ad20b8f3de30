/*
 * vocab.c - the TPE vocabulary: base symbols (strings) and merged symbols
 * (pairs of earlier ids), their hash lookups, and the versioned text file
 * (format in include/teller/tpe.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tpe_internal.h"
#include "../util/kmap.h"
#include "../util/vec.h"

teller_tpe_vocab_opts teller_tpe_vocab_defaults(void)
{
    teller_tpe_vocab_opts o = {1, 1, 0};
    return o;
}

static uint32_t add_base(teller_tpe_vocab *v, const char *s, size_t len, int hashed, uint32_t cls);

/* The repeat symbols, ids 0 .. TELLER_TPE_REPEATS - 1 (tpe.h): how many
 * copies of its unit the run holds in all, unit included (at most 2, 4,
 * ... 64, or more). */
static const char *const k_repeat_names[TELLER_TPE_REPEATS] = {
    "REPEAT~2", "REPEAT~4", "REPEAT~8", "REPEAT~16", "REPEAT~32", "REPEAT~64", "REPEAT~65+"};

teller_tpe_vocab *teller_tpe_vocab_create(const teller_tpe_vocab_opts *opts)
{
    teller_tpe_vocab *v = calloc(1, sizeof *v);
    if (!v)
        return NULL;
    v->opts = opts ? *opts : teller_tpe_vocab_defaults();
    v->opts.buckets = v->opts.buckets != 0;
    v->opts.cross_levels = v->opts.cross_levels != 0;
    v->opts.frames = v->opts.frames != 0;
    for (int k = 0; k < TELLER_TPE_REPEATS; k++)
        if (add_base(v, k_repeat_names[k], strlen(k_repeat_names[k]), 0, TELLER_NONE) == TELLER_NONE) {
            teller_tpe_vocab_free(v);
            return NULL;
        }
    return v;
}

uint32_t teller_tpe_repeat_symbol(uint32_t copies)
{
    uint32_t k = 0;
    while (k < TELLER_TPE_REPEATS - 1 && copies > (2u << k))
        k++;
    return k;
}

void teller_tpe_vocab_free(teller_tpe_vocab *v)
{
    if (!v)
        return;
    free(v->left);
    free(v->right);
    free(v->cls);
    free(v->text_off);
    free(v->text_len);
    free(v->text);
    free(v->shash);
    free(v->pkey);
    free(v->pval);
    free(v);
}

teller_tpe_vocab_opts teller_tpe_vocab_options(const teller_tpe_vocab *v) { return v->opts; }
size_t teller_tpe_vocab_size(const teller_tpe_vocab *v) { return v->n; }
size_t teller_tpe_vocab_merges(const teller_tpe_vocab *v) { return v->nmerges; }

static int grow_symbols(teller_tpe_vocab *v)
{
    if (v->n >= UINT32_MAX - 1)
        return -1;
    if (v->n < v->cap)
        return 0;
    size_t nc = v->cap ? v->cap * 2 : 256;
    uint32_t *a = realloc(v->left, nc * sizeof *a);
    if (!a)
        return -1;
    v->left = a;
    if (!(a = realloc(v->right, nc * sizeof *a)))
        return -1;
    v->right = a;
    if (!(a = realloc(v->cls, nc * sizeof *a)))
        return -1;
    v->cls = a;
    if (!(a = realloc(v->text_off, nc * sizeof *a)))
        return -1;
    v->text_off = a;
    if (!(a = realloc(v->text_len, nc * sizeof *a)))
        return -1;
    v->text_len = a;
    v->cap = nc;
    return 0;
}

static int rehash_strings(teller_tpe_vocab *v, size_t cap)
{
    uint32_t *h = malloc(cap * sizeof *h);
    if (!h)
        return -1;
    memset(h, 0xff, cap * sizeof *h);
    for (size_t id = TELLER_TPE_REPEATS; id < v->n; id++) {
        if (v->left[id] != TELLER_NONE)
            continue;
        size_t j = kmap_hash_bytes(v->text + v->text_off[id], v->text_len[id]) & (cap - 1);
        while (h[j] != TELLER_NONE)
            j = (j + 1) & (cap - 1);
        h[j] = (uint32_t)id;
    }
    free(v->shash);
    v->shash = h;
    v->shcap = cap;
    return 0;
}

static int rehash_pairs(teller_tpe_vocab *v, size_t cap)
{
    uint64_t *k = malloc(cap * sizeof *k);
    uint32_t *val = malloc(cap * sizeof *val);
    if (!k || !val) {
        free(k);
        free(val);
        return -1;
    }
    memset(k, 0xff, cap * sizeof *k);
    for (size_t id = 0; id < v->n; id++) {
        if (v->left[id] == TELLER_NONE)
            continue;
        uint64_t key = ((uint64_t)v->left[id] << 32) | v->right[id];
        size_t j = tpe_mix64(key) & (cap - 1);
        while (k[j] != UINT64_MAX)
            j = (j + 1) & (cap - 1);
        k[j] = key;
        val[j] = (uint32_t)id;
    }
    free(v->pkey);
    free(v->pval);
    v->pkey = k;
    v->pval = val;
    v->pcap = cap;
    return 0;
}

static uint32_t find_string(const teller_tpe_vocab *v, const char *s, size_t len, size_t *slot)
{
    if (!v->shcap)
        return TELLER_NONE;
    size_t j = kmap_hash_bytes(s, len) & (v->shcap - 1);
    for (;;) {
        uint32_t id = v->shash[j];
        if (id == TELLER_NONE) {
            if (slot)
                *slot = j;
            return TELLER_NONE;
        }
        if (v->text_len[id] == len && !memcmp(v->text + v->text_off[id], s, len))
            return id;
        j = (j + 1) & (v->shcap - 1);
    }
}

/* The layer part of a node's symbol "TAG/NAME": its length, or 0 when s
 * has no '/' after a non-empty prefix (a layer symbol, or a hand-made one:
 * those merge as themselves). */
static size_t layer_part(const char *s, size_t len)
{
    const char *sl = memchr(s, '/', len);
    return sl && sl > s ? (size_t)(sl - s) : 0;
}

uint32_t teller_tpe_vocab_intern(teller_tpe_vocab *v, const char *s, size_t len)
{
    uint32_t id = find_string(v, s, len, NULL);
    if (id != TELLER_NONE)
        return id;
    /* a new name: the merges know it by its layer until training says otherwise */
    size_t tl = layer_part(s, len);
    uint32_t cls = tl ? teller_tpe_vocab_intern(v, s, tl) : TELLER_NONE;
    if (tl && cls == TELLER_NONE)
        return TELLER_NONE;
    return add_base(v, s, len, 1, cls);
}

uint32_t teller_tpe_vocab_merges_as(const teller_tpe_vocab *v, uint32_t id)
{
    return id < v->n ? v->cls[id] : TELLER_NONE;
}

/* Appends a base symbol that merges as cls (TELLER_NONE: as itself);
 * hashed: findable by its text (every base symbol but the repeat symbols,
 * so that no name ever interns to one). */
static uint32_t add_base(teller_tpe_vocab *v, const char *s, size_t len, int hashed, uint32_t cls)
{
    uint32_t id;
    if (len > UINT32_MAX / 2 || v->text_n + len + 1 > UINT32_MAX)
        return TELLER_NONE;
    /* keep the string table at most half full (base symbols only count, but n bounds them) */
    if ((v->n + 1) * 2 > v->shcap && rehash_strings(v, v->shcap ? v->shcap * 2 : 1024))
        return TELLER_NONE;
    if (grow_symbols(v) || TELLER_GROW(v->text, v->text_cap, v->text_n + len + 1))
        return TELLER_NONE;
    id = (uint32_t)v->n++;
    memcpy(v->text + v->text_n, s, len);
    v->text[v->text_n + len] = 0;
    v->text_off[id] = (uint32_t)v->text_n;
    v->text_len[id] = (uint32_t)len;
    v->left[id] = v->right[id] = TELLER_NONE;
    v->cls[id] = cls == TELLER_NONE ? id : cls;
    v->text_n += len + 1;
    if (hashed) {
        size_t slot = 0;
        find_string(v, s, len, &slot);
        v->shash[slot] = id;
    }
    return id;
}

uint32_t tpe_vocab_add_merge(teller_tpe_vocab *v, uint32_t l, uint32_t r)
{
    if ((v->nmerges + 1) * 2 > v->pcap && rehash_pairs(v, v->pcap ? v->pcap * 2 : 1024))
        return TELLER_NONE;
    if (grow_symbols(v))
        return TELLER_NONE;
    uint32_t id = (uint32_t)v->n++;
    v->left[id] = l;
    v->right[id] = r;
    v->cls[id] = id;
    v->text_off[id] = v->text_len[id] = 0;
    v->nmerges++;
    uint64_t key = ((uint64_t)l << 32) | r;
    size_t j = tpe_mix64(key) & (v->pcap - 1);
    while (v->pkey[j] != UINT64_MAX)
        j = (j + 1) & (v->pcap - 1);
    v->pkey[j] = key;
    v->pval[j] = id;
    return id;
}

int teller_tpe_vocab_symbol(const teller_tpe_vocab *v, uint32_t id, const char **text, uint32_t *left,
                            uint32_t *right)
{
    if (id >= v->n)
        return -1;
    if (v->left[id] == TELLER_NONE) {
        if (text)
            *text = v->text + v->text_off[id];
        return 0;
    }
    if (left)
        *left = v->left[id];
    if (right)
        *right = v->right[id];
    return 1;
}

/* Appends the base texts under id, joined by ' ', into out; iterative (a
 * merge chain can be as deep as the vocabulary), with a small stack on the
 * C stack and a heap one beyond it. */
size_t teller_tpe_symbol_text(const teller_tpe_vocab *v, uint32_t id, char *out, size_t cap)
{
    uint32_t small[64], *stack = small, *heap = NULL;
    size_t sp = 0, scap = sizeof small / sizeof *small, len = 0;
    int cut = 0;
    if (cap)
        out[0] = 0;
    if (id >= v->n)
        return 0;
    stack[sp++] = id;
    while (sp) {
        uint32_t s = stack[--sp];
        if (v->left[s] != TELLER_NONE) {
            if (sp + 2 > scap) {
                size_t nc = scap * 2;
                uint32_t *g = realloc(heap, nc * sizeof *g);
                if (!g) {
                    cut = 1; /* out of memory: shown cut */
                    break;
                }
                if (!heap)
                    memcpy(g, small, sp * sizeof *g);
                heap = stack = g;
                scap = nc;
            }
            stack[sp++] = v->right[s];
            stack[sp++] = v->left[s];
            continue;
        }
        const char *t = v->text + v->text_off[s];
        size_t tl = v->text_len[s] + (len ? 1 : 0);
        if (!cut && cap && len + tl < cap) {
            if (len)
                out[len] = ' ';
            memcpy(out + len + (len ? 1 : 0), t, v->text_len[s]);
            out[len + tl] = 0;
        } else
            cut = 1;
        len += tl;
    }
    free(heap);
    if (cut && cap >= 4) {
        size_t at = strlen(out);
        memcpy(out + (at + 4 <= cap ? at : cap - 4), "...", 4);
    }
    return len;
}

/* ---- the file ---- */

typedef struct wbuf {
    char  *p;
    size_t n, cap;
    int    oom;
} wbuf;

static void wput(wbuf *b, const char *s, size_t n)
{
    if (b->oom || TELLER_GROW(b->p, b->cap, b->n + n + 1)) {
        b->oom = 1;
        return;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
}

static void wprintf_(wbuf *b, const char *fmt, unsigned long long x, unsigned long long y, unsigned long long z)
{
    char tmp[96];
    int k = snprintf(tmp, sizeof tmp, fmt, x, y, z);
    wput(b, tmp, (size_t)k);
}

teller_status teller_tpe_vocab_write(const teller_tpe_vocab *v, char **out, size_t *n, teller_error *err)
{
    wbuf b = {0};
    *out = NULL;
    *n = 0;
    wprintf_(&b, "teller-tpe-vocab %llu\n", TELLER_TPE_VERSION, 0, 0);
    wprintf_(&b, "options buckets=%llu cross=%llu frames=%llu\n", (unsigned)v->opts.buckets,
             (unsigned)v->opts.cross_levels, (unsigned)v->opts.frames);
    wprintf_(&b, "symbols %llu\n", v->n - TELLER_TPE_REPEATS, 0, 0);
    for (size_t id = TELLER_TPE_REPEATS; id < v->n; id++) {
        if (v->left[id] != TELLER_NONE) {
            wprintf_(&b, "m %llu %llu\n", v->left[id], v->right[id], 0);
            continue;
        }
        wput(&b, v->cls[id] == id ? "b " : "u ", 2);
        const unsigned char *s = (const unsigned char *)v->text + v->text_off[id];
        for (size_t k = 0; k < v->text_len[id]; k++) {
            char e[5];
            if (s[k] == '\\')
                wput(&b, "\\\\", 2);
            else if (s[k] <= ' ' || s[k] == 0x7f) {
                snprintf(e, sizeof e, "\\x%02x", s[k]);
                wput(&b, e, 4);
            } else
                wput(&b, (const char *)s + k, 1);
        }
        wput(&b, "\n", 1);
    }
    uint64_t h = b.oom ? 0 : kmap_hash_bytes(b.p, b.n);
    char tail[40];
    int k = snprintf(tail, sizeof tail, "end %016llx\n", (unsigned long long)h);
    wput(&b, tail, (size_t)k);
    if (b.oom) {
        free(b.p);
        return teller_error_set(err, TELLER_ERR_NOMEM, "(tpe)", 0, "out of memory writing the vocabulary");
    }
    *out = b.p;
    *n = b.n;
    return TELLER_OK;
}

teller_status teller_tpe_vocab_save(const teller_tpe_vocab *v, const char *path, teller_error *err)
{
    char *p;
    size_t n;
    if (teller_tpe_vocab_write(v, &p, &n, err) != TELLER_OK)
        return teller_error_set(err, TELLER_ERR_NOMEM, path, 0, "out of memory writing the vocabulary");
    FILE *f = fopen(path, "wb");
    if (!f) {
        free(p);
        return teller_error_set(err, TELLER_ERR_IO, path, 0, "cannot create the vocabulary file");
    }
    size_t w = fwrite(p, 1, n, f);
    int bad = fclose(f) != 0 || w != n;
    free(p);
    if (bad)
        return teller_error_set(err, TELLER_ERR_IO, path, 0, "cannot write the vocabulary file");
    return TELLER_OK;
}

/* One line of data: [*pos, end of line); returns 0 when there is no
 * complete line (no newline before the end). */
static int next_line(const char *d, size_t n, size_t *pos, const char **ls, size_t *ll)
{
    if (*pos >= n)
        return 0;
    const char *nl = memchr(d + *pos, '\n', n - *pos);
    if (!nl)
        return 0;
    *ls = d + *pos;
    *ll = (size_t)(nl - *ls);
    *pos = (size_t)(nl - d) + 1;
    return 1;
}

static int parse_u64(const char **p, const char *e, unsigned long long *out)
{
    const char *s = *p;
    unsigned long long x = 0;
    if (s >= e || *s < '0' || *s > '9')
        return -1;
    while (s < e && *s >= '0' && *s <= '9') {
        if (x > (UINT64_MAX - 9) / 10)
            return -1;
        x = x * 10 + (unsigned long long)(*s - '0');
        s++;
    }
    *p = s;
    *out = x;
    return 0;
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

teller_status teller_tpe_vocab_parse(const char *d, size_t n, const char *name, teller_tpe_vocab **out,
                                     teller_error *err)
{
    *out = NULL;
    size_t pos = 0, line = 0, ll = 0;
    const char *ls = NULL;
    teller_status st = TELLER_OK;
    teller_tpe_vocab *v = NULL;
    char *tmp = NULL;
#define FAIL(code, ...)                                                          \
    do {                                                                         \
        st = teller_error_set(err, code, name, (uint64_t)(ls ? ls - d : 0), __VA_ARGS__); \
        if (err) err->line = line;                                               \
        goto done;                                                               \
    } while (0)
#define LINE(what)                                                               \
    do {                                                                         \
        if (!next_line(d, n, &pos, &ls, &ll))                                    \
            FAIL(TELLER_ERR_TRUNCATED, "vocabulary file ends before its %s", what); \
        line++;                                                                  \
    } while (0)
    LINE("header");
    const char magic[] = "teller-tpe-vocab ";
    if (ll < sizeof magic - 1 || memcmp(ls, magic, sizeof magic - 1))
        FAIL(TELLER_ERR_FORMAT, "not a teller TPE vocabulary (no 'teller-tpe-vocab VERSION' header)");
    {
        const char *p = ls + sizeof magic - 1;
        unsigned long long ver = 0;
        if (parse_u64(&p, ls + ll, &ver) || p != ls + ll)
            FAIL(TELLER_ERR_FORMAT, "bad vocabulary version field");
        if (ver == 1)
            FAIL(TELLER_ERR_FORMAT, "vocabulary version 1 holds raw names, not name families: learn it again "
                                    "(teller tpe train)");
        if (ver == 2)
            FAIL(TELLER_ERR_FORMAT, "vocabulary version 2 spells duration buckets in TAG symbols and has no "
                                    "repeat symbols; its merges fit sequences this build no longer makes: learn it "
                                    "again (teller tpe train)");
        if (ver == 3)
            FAIL(TELLER_ERR_FORMAT, "vocabulary version 3 has a TAG and a NAME token per node; this build makes "
                                    "one token per node, so its merges fit no sequence: learn it again (teller tpe "
                                    "train)");
        if (ver != TELLER_TPE_VERSION)
            FAIL(TELLER_ERR_FORMAT, "vocabulary version %llu is not supported (this build reads version %d)", ver,
                 TELLER_TPE_VERSION);
    }
    LINE("options");
    teller_tpe_vocab_opts o = teller_tpe_vocab_defaults();
    {
        char buf[64];
        if (ll >= sizeof buf)
            FAIL(TELLER_ERR_FORMAT, "bad options line");
        memcpy(buf, ls, ll);
        buf[ll] = 0;
        int b = -1, c = -1, f = -1, used = 0;
        if (sscanf(buf, "options buckets=%d cross=%d frames=%d%n", &b, &c, &f, &used) != 3 || (size_t)used != ll ||
            b < 0 || b > 1 || c < 0 || c > 1 || f < 0 || f > 1)
            FAIL(TELLER_ERR_FORMAT, "bad options line (want 'options buckets=0|1 cross=0|1 frames=0|1')");
        o.buckets = b;
        o.cross_levels = c;
        o.frames = f;
    }
    LINE("symbol count");
    unsigned long long nsym = 0;
    {
        const char *p = ls + 8;
        if (ll < 9 || memcmp(ls, "symbols ", 8) || parse_u64(&p, ls + ll, &nsym) || p != ls + ll)
            FAIL(TELLER_ERR_FORMAT, "bad symbol count line");
        if (nsym >= UINT32_MAX - TELLER_TPE_REPEATS)
            FAIL(TELLER_ERR_LIMIT, "symbol count %llu is over the limit", nsym);
    }
    v = teller_tpe_vocab_create(&o);
    if (!v)
        FAIL(TELLER_ERR_NOMEM, "out of memory");
    for (unsigned long long id = TELLER_TPE_REPEATS; id < nsym + TELLER_TPE_REPEATS; id++) {
        if (!next_line(d, n, &pos, &ls, &ll))
            FAIL(TELLER_ERR_TRUNCATED, "vocabulary file ends after %llu of its %llu symbols (truncated)",
                 id - TELLER_TPE_REPEATS, nsym);
        line++;
        if (ll >= 2 && ls[0] == 'm' && ls[1] == ' ') {
            const char *p = ls + 2, *e = ls + ll;
            unsigned long long l = 0, r = 0;
            if (parse_u64(&p, e, &l) || p >= e || *p++ != ' ' || parse_u64(&p, e, &r) || p != e)
                FAIL(TELLER_ERR_FORMAT, "bad merge line");
            if (l >= id || r >= id)
                FAIL(TELLER_ERR_FORMAT, "merge %llu refers to symbol %llu, not an earlier one", id, l >= id ? l : r);
            if (tpe_is_repeat((uint32_t)l) || tpe_is_repeat((uint32_t)r))
                FAIL(TELLER_ERR_FORMAT, "merge %llu joins a repeat symbol (they never merge)", id);
            if (tpe_pair_lookup(v, (uint32_t)l, (uint32_t)r) != TELLER_NONE)
                FAIL(TELLER_ERR_FORMAT, "merge (%llu, %llu) appears twice", l, r);
            if (tpe_vocab_add_merge(v, (uint32_t)l, (uint32_t)r) == TELLER_NONE)
                FAIL(TELLER_ERR_NOMEM, "out of memory");
        } else if (ll >= 2 && (ls[0] == 'b' || ls[0] == 'u') && ls[1] == ' ') {
            free(tmp);
            tmp = malloc(ll + 1);
            if (!tmp)
                FAIL(TELLER_ERR_NOMEM, "out of memory");
            size_t tl = 0;
            for (size_t k = 2; k < ll; k++) {
                char c = ls[k];
                if ((unsigned char)c <= ' ' || c == 0x7f)
                    FAIL(TELLER_ERR_FORMAT, "unescaped control byte or space in a symbol");
                if (c != '\\') {
                    tmp[tl++] = c;
                    continue;
                }
                if (k + 1 < ll && ls[k + 1] == '\\') {
                    tmp[tl++] = '\\';
                    k++;
                    continue;
                }
                int h1, h2;
                if (k + 3 >= ll + 0 || ls[k + 1] != 'x' || (h1 = hexval(ls[k + 2])) < 0 ||
                    (h2 = hexval(ls[k + 3])) < 0)
                    FAIL(TELLER_ERR_FORMAT, "bad escape in a symbol");
                tmp[tl++] = (char)(h1 * 16 + h2);
                k += 3;
            }
            if (find_string(v, tmp, tl, NULL) != TELLER_NONE)
                FAIL(TELLER_ERR_FORMAT, "base symbol %llu appears twice", id);
            uint32_t cls = TELLER_NONE; /* 'b': merges as itself */
            if (ls[0] == 'u') {
                /* 'u': merges as its layer, an earlier base symbol */
                size_t pl = layer_part(tmp, tl);
                if (!pl || (cls = find_string(v, tmp, pl, NULL)) == TELLER_NONE || v->cls[cls] != cls)
                    FAIL(TELLER_ERR_FORMAT, "symbol %llu ('u') has no earlier layer symbol to merge as", id);
            }
            if (add_base(v, tmp, tl, 1, cls) == TELLER_NONE)
                FAIL(TELLER_ERR_NOMEM, "out of memory");
        } else
            FAIL(TELLER_ERR_FORMAT, "symbol line %llu is neither 'b TEXT', 'u TEXT' nor 'm LEFT RIGHT'",
                 id - TELLER_TPE_REPEATS);
    }
    size_t hashed = pos;
    LINE("end line");
    {
        unsigned long long want = 0;
        int used = 0;
        char buf[40];
        if (ll >= sizeof buf)
            FAIL(TELLER_ERR_FORMAT, "bad end line");
        memcpy(buf, ls, ll);
        buf[ll] = 0;
        if (ll != 20 || sscanf(buf, "end %16llx%n", &want, &used) != 1 || used != 20)
            FAIL(TELLER_ERR_FORMAT, "bad end line (want 'end' and a 16-digit hash)");
        if (kmap_hash_bytes(d, hashed) != want)
            FAIL(TELLER_ERR_FORMAT, "vocabulary file is corrupt (hash mismatch)");
    }
    if (pos != n)
        FAIL(TELLER_ERR_FORMAT, "bytes after the end line");
    *out = v;
    v = NULL;
done:
    free(tmp);
    teller_tpe_vocab_free(v);
    return st;
#undef FAIL
#undef LINE
}

teller_status teller_tpe_vocab_load(const char *path, teller_tpe_vocab **out, teller_error *err)
{
    *out = NULL;
    FILE *f = fopen(path, "rb");
    if (!f)
        return teller_error_set(err, TELLER_ERR_IO, path, 0, "cannot open the vocabulary file");
    char *d = NULL;
    size_t n = 0, cap = 0;
    for (;;) {
        if (TELLER_GROW(d, cap, n + 65536)) {
            fclose(f);
            free(d);
            return teller_error_set(err, TELLER_ERR_NOMEM, path, 0, "out of memory");
        }
        size_t r = fread(d + n, 1, cap - n, f);
        n += r;
        if (r == 0)
            break;
    }
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        free(d);
        return teller_error_set(err, TELLER_ERR_IO, path, 0, "cannot read the vocabulary file");
    }
    teller_status s = teller_tpe_vocab_parse(d, n, path, out, err);
    free(d);
    return s;
}

teller_status teller_tpe_vocab_default(teller_tpe_vocab **out, teller_error *err)
{
    return teller_tpe_vocab_parse((const char *)tpe_default_vocab, tpe_default_vocab_len, "(built-in vocabulary)",
                                  out, err);
}
