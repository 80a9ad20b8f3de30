/*
 * fuzz_json.c - libFuzzer target for the streaming JSON tokenizer (src/ingest/json.h).
 *
 * The input is copied into a heap buffer of exactly its size, so AddressSanitizer
 * catches any read past the window end. Every entry point is driven:
 *   - json_skip over the input as a sequence of values;
 *   - json_string, json_int, json_milli and json_double at the start;
 *   - a walk with json_obj_next/json_arr_next that unescapes every key and
 *     string value, and a scan that unescapes every string found in the bytes;
 * and these properties are checked (abort() on a violation, which libFuzzer
 * reports as a crash):
 *   - the cursor never leaves [start, end], on any return;
 *   - streaming: for a value a reader accepts whole, every shorter window
 *     (every cut of the input before the value's end) gives JSON_MORE. Not
 *     JSON_OK, which would accept a truncated value, and not JSON_ERR, which
 *     would make the Kineto reader fail where a chunk boundary splits a value;
 *   - the numeric readers agree with each other on plain decimals;
 *   - json_unescape never writes past its capacity (exact-size heap buffers),
 *     NUL-terminates, never grows the text, and copies escape-free text as is.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ingest/json.h"

#define REQUIRE(cond)                                                              \
    do {                                                                           \
        if (!(cond)) {                                                             \
            fprintf(stderr, "fuzz_json: property failed: %s (line %d)\n", #cond, __LINE__); \
            abort();                                                               \
        }                                                                          \
    } while (0)

/* Cuts tried per value: all of them up to this length, else a sample. */
#define ALL_CUTS_UP_TO 512
#define SAMPLED_CUTS   64

typedef int (*reader_fn)(json_cur *c, void *out);

static int rd_skip(json_cur *c, void *out) { (void)out; return json_skip(c); }
static int rd_string(json_cur *c, void *out) { return json_string(c, (json_str *)out); }
static int rd_int(json_cur *c, void *out) { return json_int(c, (int64_t *)out); }
static int rd_milli(json_cur *c, void *out) { return json_milli(c, (int64_t *)out); }
static int rd_double(json_cur *c, void *out) { return json_double(c, (double *)out); }

/* Runs rd on [p, end) and checks the cursor stays inside. */
static int run_reader(reader_fn rd, const char *p, const char *end, json_cur *c, void *out)
{
    *c = (json_cur){p, end, NULL};
    int r = rd(c, out);
    REQUIRE(r == JSON_OK || r == JSON_MORE || r == JSON_ERR);
    REQUIRE(c->p >= p && c->p <= end);
    if (r == JSON_ERR)
        REQUIRE(c->err != NULL);
    return r;
}

/* The streaming property: rd accepted [p, p+len) up to p+used; every cut
 * before p+used must ask for more bytes. */
static void check_cuts(reader_fn rd, const char *p, size_t used)
{
    size_t step = used <= ALL_CUTS_UP_TO ? 1 : used / SAMPLED_CUTS + 1;
    for (size_t cut = 0; cut < used; cut += step) {
        json_cur c;
        union { json_str s; int64_t i; double d; } out;
        /* a fresh exact-size copy, so ASan flags a read past the cut */
        char *w = malloc(cut ? cut : 1);
        if (!w)
            return;
        memcpy(w, p, cut);
        int r = run_reader(rd, w, w + cut, &c, &out);
        free(w);
        REQUIRE(r == JSON_MORE);
    }
    /* a sample also takes the last cuts, right before the end */
    for (size_t k = used > 8 ? used - 8 : 0; step > 1 && k < used; k++) {
        json_cur c;
        union { json_str s; int64_t i; double d; } out;
        char *w = malloc(k ? k : 1);
        if (!w)
            return;
        memcpy(w, p, k);
        int r = run_reader(rd, w, w + k, &c, &out);
        free(w);
        REQUIRE(r == JSON_MORE);
    }
}

/* json_unescape into exact-size buffers of several capacities. */
static void check_unescape(const json_str *s)
{
    size_t caps[5] = {s->len + 8, s->len + 1, s->len / 2 + 1, 1, 0};
    long full = -2;
    for (int i = 0; i < 5; i++) {
        size_t cap = caps[i];
        char *out = malloc(cap ? cap : 1);
        if (!out)
            return;
        long n = json_unescape(s, out, cap);
        REQUIRE(n >= -1);
        if (n >= 0) {
            REQUIRE((size_t)n < cap);
            REQUIRE(out[n] == 0);
            REQUIRE((size_t)n <= s->len); /* escapes never grow the text */
            if (!s->escaped) {
                REQUIRE((size_t)n == s->len);
                REQUIRE(memcmp(out, s->s, s->len) == 0);
            }
        }
        if (i == 0)
            full = n;
        else if (n >= 0)
            REQUIRE(full == n); /* a smaller buffer may fail, never differ */
        free(out);
    }
    if (!s->escaped)
        REQUIRE(full == (long)s->len); /* plain text always fits len + 8 */
}

/* Walks one value, unescaping every key and string. Returns a json status. */
static int walk(json_cur *c, int depth)
{
    const char *start = c->p;
    int r = json_ws(c);
    if (r)
        return r;
    char ch = *c->p;
    if (depth > 64)
        return json_skip(c);
    if (ch == '{') {
        c->p++;
        for (int first = 1;;) {
            json_str k;
            int done;
            if ((r = json_obj_next(c, &first, &k, &done)))
                return r;
            REQUIRE(c->p <= c->end);
            if (done)
                return JSON_OK;
            REQUIRE(k.s > start && k.s + k.len < c->end); /* the closing quote is inside */
            check_unescape(&k);
            if ((r = walk(c, depth + 1)))
                return r;
        }
    }
    if (ch == '[') {
        c->p++;
        for (int first = 1;; first = 0) {
            int done;
            if ((r = json_arr_next(c, first, &done)))
                return r;
            REQUIRE(c->p <= c->end);
            if (done)
                return JSON_OK;
            if ((r = walk(c, depth + 1)))
                return r;
        }
    }
    if (ch == '"') {
        json_str s;
        if ((r = json_string(c, &s)))
            return r;
        REQUIRE(s.s > start && s.s + s.len < c->end);
        check_unescape(&s);
        return JSON_OK;
    }
    return json_skip(c);
}

/* The numeric readers share one scanner: they end at the same byte and
 * ask for more bytes together. On short plain decimals (no exponent) their
 * values agree; out-of-range errors may differ (json_double has none). */
static void check_numbers(const char *p, const char *end)
{
    json_cur c;
    int64_t i = 0, m = 0;
    double d = 0;
    int ri = run_reader(rd_int, p, end, &c, &i);
    const char *ei = c.p;
    int rm = run_reader(rd_milli, p, end, &c, &m);
    const char *em = c.p;
    int rdd = run_reader(rd_double, p, end, &c, &d);
    const char *ed = c.p;
    REQUIRE((ri == JSON_MORE) == (rdd == JSON_MORE) && (rm == JSON_MORE) == (rdd == JSON_MORE));
    if (rdd == JSON_ERR)
        REQUIRE(ri == JSON_ERR && rm == JSON_ERR);
    if (ri != JSON_OK || rm != JSON_OK || rdd != JSON_OK)
        return;
    REQUIRE(ei == em && em == ed);
    size_t n = (size_t)(ei - p);
    int plain = n < 16;
    for (const char *q = p; q < ei; q++)
        if (*q == 'e' || *q == 'E')
            plain = 0;
    if (!plain)
        return;
    /* int truncates, milli rounds at the 4th decimal: within one unit */
    REQUIRE(m - i * 1000 <= 1000 && i * 1000 - m <= 1000);
    /* milli is exact; the double within its rounding (up to 1e18: 2^-52 relative) */
    double dm = d * 1000.0 - (double)m, am = m < 0 ? -(double)m : (double)m;
    REQUIRE(dm <= 1.0 + am * 1e-15 && -dm <= 1.0 + am * 1e-15);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *buf = malloc(size ? size : 1);
    if (!buf)
        return 0;
    memcpy(buf, data, size);
    const char *end = buf + size;
    json_cur c;

    /* 1. json_skip over the input as a sequence of values */
    const char *p = buf;
    for (int n = 0; p < end && n < 4096; n++) {
        int r = run_reader(rd_skip, p, end, &c, NULL);
        if (r != JSON_OK)
            break;
        REQUIRE(c.p > p);
        if (n < 4) /* the cut property on the first few values (costly) */
            check_cuts(rd_skip, p, (size_t)(c.p - p));
        p = c.p;
        /* values in a sequence may be separated by commas */
        while (p < end && (*p == ',' || *p == ' ' || *p == '\n'))
            p++;
    }

    /* 2. the scalar readers at the start */
    json_str s;
    if (run_reader(rd_string, buf, end, &c, &s) == JSON_OK) {
        REQUIRE(s.s == buf + 1 && s.s + s.len + 1 == c.p);
        check_unescape(&s);
        check_cuts(rd_string, buf, (size_t)(c.p - buf));
    }
    int64_t v;
    double d;
    if (run_reader(rd_int, buf, end, &c, &v) == JSON_OK)
        check_cuts(rd_int, buf, (size_t)(c.p - buf));
    if (run_reader(rd_milli, buf, end, &c, &v) == JSON_OK)
        check_cuts(rd_milli, buf, (size_t)(c.p - buf));
    if (run_reader(rd_double, buf, end, &c, &d) == JSON_OK)
        check_cuts(rd_double, buf, (size_t)(c.p - buf));
    check_numbers(buf, end);

    /* 3. a structured walk that unescapes every key and string */
    c = (json_cur){buf, end, NULL};
    (void)walk(&c, 0);
    REQUIRE(c.p >= buf && c.p <= end);

    /* 4. every string found in the bytes, left to right */
    for (p = buf; p < end;) {
        const char *q = memchr(p, '"', (size_t)(end - p));
        if (!q)
            break;
        int r = run_reader(rd_string, q, end, &c, &s);
        if (r == JSON_MORE)
            break; /* no closing quote after q: later starts cost O(n) each */
        if (r == JSON_OK) {
            check_unescape(&s);
            p = c.p;
        } else {
            p = q + 1;
        }
        /* numbers right after a string (a key's value) */
        while (p < end && (*p == ':' || *p == ' '))
            p++;
        if (p < end && (*p == '-' || (*p >= '0' && *p <= '9')))
            check_numbers(p, end);
    }

    free(buf);
    return 0;
}
