/*
 * json.c - the streaming JSON tokenizer. See json.h.
 *
 * Speed matters here: a Kineto trace is hundreds of MB of mostly strings
 * and numbers. Strings are found with memchr; numbers are parsed by hand
 * into integers (timestamps exactly, without going through double).
 */
#include <stdlib.h>
#include <string.h>

#include "json.h"

static int fail(json_cur *c, const char *at, const char *msg)
{
    c->p = at;
    c->err = msg;
    return JSON_ERR;
}

int json_expect(json_cur *c, char ch)
{
    int r = json_ws(c);
    if (r)
        return r;
    if (*c->p != ch) {
        static const char *const msgs[] = {"expected ':'", "expected ','", "expected '{'", "expected '['",
                                           "unexpected character"};
        const char *m = ch == ':' ? msgs[0] : ch == ',' ? msgs[1] : ch == '{' ? msgs[2] : ch == '[' ? msgs[3] : msgs[4];
        return fail(c, c->p, m);
    }
    c->p++;
    return JSON_OK;
}

int json_string(json_cur *c, json_str *out)
{
    const char *p = c->p, *end = c->end;
    if (p >= end)
        return JSON_MORE;
    if (*p != '"')
        return fail(c, p, "expected a string");
    const char *s = ++p;
    int escaped = 0;
    for (;;) {
        const char *q = memchr(p, '"', (size_t)(end - p));
        if (!q)
            return JSON_MORE;
        /* count backslashes before the quote */
        const char *b = q;
        while (b > s && b[-1] == '\\')
            b--;
        if (b != q)
            escaped = 1;
        if (((q - b) & 1) == 0) {
            if (!escaped && memchr(s, '\\', (size_t)(q - s)))
                escaped = 1;
            out->s = s;
            out->len = (size_t)(q - s);
            out->escaped = escaped;
            c->p = q + 1;
            return JSON_OK;
        }
        p = q + 1;
    }
}

static int skip_scalar(json_cur *c)
{
    const char *p = c->p, *end = c->end;
    unsigned char ch = (unsigned char)*p;
    const char *lit = NULL;
    if (ch == 't')
        lit = "true";
    else if (ch == 'f')
        lit = "false";
    else if (ch == 'n')
        lit = "null";
    if (lit) {
        size_t n = strlen(lit);
        size_t have = (size_t)(end - p);
        if (memcmp(p, lit, have < n ? have : n) != 0)
            return fail(c, p, "bad literal");
        if (have < n)
            return JSON_MORE;
        /* a literal must be followed by a delimiter (or the window end) */
        c->p = p + n;
        return JSON_OK;
    }
    if (ch == '-' || (ch >= '0' && ch <= '9')) {
        p++;
        while (p < end) {
            ch = (unsigned char)*p;
            if ((ch >= '0' && ch <= '9') || ch == '.' || ch == 'e' || ch == 'E' || ch == '+' || ch == '-')
                p++;
            else
                break;
        }
        if (p == end)
            return JSON_MORE;
        c->p = p;
        return JSON_OK;
    }
    return fail(c, p, "unexpected character");
}

int json_skip(json_cur *c)
{
    int r = json_ws(c);
    if (r)
        return r;
    char ch = *c->p;
    if (ch == '"') {
        json_str s;
        return json_string(c, &s);
    }
    if (ch != '{' && ch != '[')
        return skip_scalar(c);
    /* a nested block: count depth, skipping strings */
    const char *p = c->p + 1, *end = c->end;
    char stack[256];
    int depth = 0;
    stack[depth++] = ch;
    while (depth > 0) {
        while (p < end && *p != '"' && *p != '{' && *p != '[' && *p != '}' && *p != ']')
            p++;
        if (p >= end)
            return JSON_MORE;
        switch (*p) {
        case '"': {
            json_cur sc = {p, end, NULL};
            json_str s;
            int rs = json_string(&sc, &s);
            if (rs)
                return rs == JSON_ERR ? fail(c, sc.p, sc.err) : rs;
            p = sc.p;
            continue;
        }
        case '{':
        case '[':
            if (depth == (int)sizeof stack)
                return fail(c, p, "nesting too deep");
            stack[depth++] = *p;
            break;
        case '}':
            if (stack[depth - 1] != '{')
                return fail(c, p, "mismatched '}'");
            depth--;
            break;
        case ']':
            if (stack[depth - 1] != '[')
                return fail(c, p, "mismatched ']'");
            depth--;
            break;
        }
        p++;
    }
    c->p = p;
    return JSON_OK;
}

/* Parses the number at c->p into mantissa digits. Shared by the readers:
 * ip = integer part, frac = first 4 fraction digits (scaled to 4 places),
 * more = nonzero digits beyond those, neg, exp10 (exponent, 0 if none). */
typedef struct num_parts {
    uint64_t ip;
    uint32_t frac4;
    int      neg;
    int      has_exp;
    int      big; /* integer part did not fit 64 bits unsigned */
    const char *s, *e;
} num_parts;

static int parse_num(json_cur *c, num_parts *n)
{
    int r = json_ws(c);
    if (r)
        return r;
    const char *p = c->p, *end = c->end;
    memset(n, 0, sizeof *n);
    n->s = p;
    if (*p == '-') {
        n->neg = 1;
        p++;
    }
    if (p >= end)
        return JSON_MORE;
    if (*p < '0' || *p > '9')
        return fail(c, c->p, "expected a number");
    /* exact while the integer part fits 64 bits unsigned (19 digits and
     * more: an epoch time in ns is 19 digits) */
    while (p < end && *p >= '0' && *p <= '9') {
        if (!n->big && n->ip <= (UINT64_MAX - 9) / 10)
            n->ip = n->ip * 10 + (uint64_t)(*p - '0');
        else
            n->big = 1;
        p++;
    }
    if (p < end && *p == '.') {
        p++;
        int fd = 0;
        if (p < end && (*p < '0' || *p > '9'))
            return fail(c, p, "expected a digit after '.'");
        while (p < end && *p >= '0' && *p <= '9') {
            if (fd < 4)
                n->frac4 = n->frac4 * 10 + (uint32_t)(*p - '0');
            fd++;
            p++;
        }
        for (; fd < 4; fd++)
            n->frac4 *= 10;
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
        n->has_exp = 1;
        p++;
        if (p < end && (*p == '+' || *p == '-'))
            p++;
        if (p < end && (*p < '0' || *p > '9'))
            return fail(c, p, "expected an exponent");
        while (p < end && *p >= '0' && *p <= '9')
            p++;
    }
    if (p >= end)
        return JSON_MORE; /* the number might go on in the next chunk */
    n->e = p;
    c->p = p;
    return JSON_OK;
}

/* The number's value by strtod, whatever its length (a number of more
 * digits than a double holds still has its exponent at the end); 0, or -1
 * out of memory. */
static int parts_double(const num_parts *n, double *out)
{
    char buf[64], *b = buf;
    size_t len = (size_t)(n->e - n->s);
    if (len >= sizeof buf && !(b = malloc(len + 1)))
        return -1;
    memcpy(b, n->s, len);
    b[len] = 0;
    *out = strtod(b, NULL);
    if (b != buf)
        free(b);
    return 0;
}

int json_int(json_cur *c, int64_t *out)
{
    num_parts n;
    int r = parse_num(c, &n);
    if (r)
        return r;
    if (n.has_exp || n.big) {
        double d;
        if (parts_double(&n, &d))
            return fail(c, n.s, "out of memory reading a number");
        if (!(d > -9.2e18 && d < 9.2e18))
            return fail(c, n.s, "number out of range");
        *out = (int64_t)d;
        return JSON_OK;
    }
    if (n.ip > (uint64_t)INT64_MAX + (uint64_t)n.neg)
        return fail(c, n.s, "number out of range");
    *out = n.neg ? (int64_t)(0 - n.ip) : (int64_t)n.ip;
    return JSON_OK;
}

int json_milli(json_cur *c, int64_t *out)
{
    num_parts n;
    int r = parse_num(c, &n);
    if (r)
        return r;
    if (n.has_exp || n.big || n.ip > 9000000000000000ull) {
        double d;
        if (parts_double(&n, &d))
            return fail(c, n.s, "out of memory reading a number");
        d *= 1000.0;
        if (!(d > -9.2e18 && d < 9.2e18))
            return fail(c, n.s, "number out of range");
        *out = (int64_t)(d < 0 ? d - 0.5 : d + 0.5);
        return JSON_OK;
    }
    uint64_t v = n.ip * 1000 + n.frac4 / 10 + (n.frac4 % 10 >= 5 ? 1 : 0);
    *out = n.neg ? -(int64_t)v : (int64_t)v;
    return JSON_OK;
}

int json_double(json_cur *c, double *out)
{
    num_parts n;
    int r = parse_num(c, &n);
    if (r)
        return r;
    if (parts_double(&n, out))
        return fail(c, n.s, "out of memory reading a number");
    return JSON_OK;
}

int json_obj_next(json_cur *c, int *first, json_str *key, int *done)
{
    int r = json_ws(c);
    if (r)
        return r;
    if (*c->p == '}') {
        c->p++;
        *done = 1;
        return JSON_OK;
    }
    if (!*first) {
        if (*c->p != ',')
            return fail(c, c->p, "expected ',' or '}'");
        c->p++;
        if ((r = json_ws(c)))
            return r;
    }
    *done = 0;
    if ((r = json_string(c, key)))
        return r;
    if ((r = json_expect(c, ':')))
        return r;
    *first = 0;
    return JSON_OK;
}

int json_arr_next(json_cur *c, int first, int *done)
{
    int r = json_ws(c);
    if (r)
        return r;
    if (*c->p == ']') {
        c->p++;
        *done = 1;
        return JSON_OK;
    }
    *done = 0;
    if (!first) {
        if (*c->p != ',')
            return fail(c, c->p, "expected ',' or ']'");
        c->p++;
        return json_ws(c);
    }
    return JSON_OK;
}

static int hex4(const char *p, unsigned *v)
{
    unsigned x = 0;
    for (int i = 0; i < 4; i++) {
        char ch = p[i];
        x <<= 4;
        if (ch >= '0' && ch <= '9')
            x |= (unsigned)(ch - '0');
        else if (ch >= 'a' && ch <= 'f')
            x |= (unsigned)(ch - 'a' + 10);
        else if (ch >= 'A' && ch <= 'F')
            x |= (unsigned)(ch - 'A' + 10);
        else
            return -1;
    }
    *v = x;
    return 0;
}

static size_t put_utf8(char *o, unsigned cp)
{
    if (cp < 0x80) {
        o[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (char)(0xC0 | (cp >> 6));
        o[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (char)(0xE0 | (cp >> 12));
        o[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        o[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    o[0] = (char)(0xF0 | (cp >> 18));
    o[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    o[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    o[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

long json_unescape(const json_str *s, char *out, size_t cap)
{
    const char *p = s->s, *end = s->s + s->len;
    size_t o = 0;
    while (p < end) {
        if (o + 5 > cap)
            return -1;
        if (*p != '\\') {
            out[o++] = *p++;
            continue;
        }
        if (++p >= end)
            return -1;
        char e = *p++;
        switch (e) {
        case '"': out[o++] = '"'; break;
        case '\\': out[o++] = '\\'; break;
        case '/': out[o++] = '/'; break;
        case 'b': out[o++] = '\b'; break;
        case 'f': out[o++] = '\f'; break;
        case 'n': out[o++] = '\n'; break;
        case 'r': out[o++] = '\r'; break;
        case 't': out[o++] = '\t'; break;
        case 'u': {
            unsigned cp;
            if (end - p < 4 || hex4(p, &cp))
                return -1;
            p += 4;
            if (cp >= 0xD800 && cp <= 0xDBFF) {
                unsigned lo;
                if (end - p >= 6 && p[0] == '\\' && p[1] == 'u' && hex4(p + 2, &lo) == 0 && lo >= 0xDC00 &&
                    lo <= 0xDFFF) {
                    p += 6;
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                } else {
                    cp = 0xFFFD;
                }
            } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
                cp = 0xFFFD;
            }
            o += put_utf8(out + o, cp);
            break;
        }
        default:
            return -1;
        }
    }
    if (o >= cap)
        return -1;
    out[o] = 0;
    return (long)o;
}
