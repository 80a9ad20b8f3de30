/*
 * json.h - a streaming, zero-copy JSON pull tokenizer.
 *
 * In the style of Perfetto's json::Iterator: the caller holds a window of
 * input [p, end) and pulls one value at a time. Strings come back as slices
 * into the window (unescaped only when they contain a backslash); nested
 * values the caller does not want are skipped without building anything.
 * Every function returns JSON_OK, JSON_MORE (the window ends inside the
 * value: feed more bytes and retry from the caller's mark) or JSON_ERR
 * (cur->p points at the offending byte). Nothing is allocated.
 */
#ifndef TELLER_JSON_H
#define TELLER_JSON_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

enum { JSON_OK = 0, JSON_MORE = 1, JSON_ERR = 2 };

typedef struct json_cur {
    const char *p;
    const char *end;
    const char *err; /* static message set with JSON_ERR */
} json_cur;

typedef struct json_str {
    const char *s;
    size_t      len;
    int         escaped; /* contains a backslash: call json_unescape */
} json_str;

/* Skips white space; JSON_MORE when the window ends first. */
static inline int json_ws(json_cur *c)
{
    const char *p = c->p, *end = c->end;
    while (p < end && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t'))
        p++;
    c->p = p;
    return p < end ? JSON_OK : JSON_MORE;
}
/* Expects byte ch after white space and consumes it. */
int json_expect(json_cur *c, char ch);
/* Reads a string; c->p must be at '"'. */
int json_string(json_cur *c, json_str *out);
/* Skips any value. */
int json_skip(json_cur *c);
/* Reads a number as int64; decimals are truncated toward zero. */
int json_int(json_cur *c, int64_t *out);
/* Reads a number scaled by 1000 and rounded to an integer, exactly for
 * decimals (microseconds with 3+ decimals -> nanoseconds). */
int json_milli(json_cur *c, int64_t *out);
/* Reads a number as double. */
int json_double(json_cur *c, double *out);
/* Inside an object: reads the next key and the ':' after it, or reports
 * the end of the object (*done = 1, '}' consumed). *first must be 1 before
 * the first key; the call clears it, and requires a ',' between members. */
int json_obj_next(json_cur *c, int *first, json_str *key, int *done);
/* After '[' or an element: *done is 1 at ']' (consumed); otherwise the
 * cursor is at the next element. first must be 1 for the first call. */
int json_arr_next(json_cur *c, int first, int *done);

/* Unescapes s into out (capacity cap, NUL-terminated); returns the length,
 * or -1 on a bad escape or when out is too small. \u escapes become UTF-8,
 * lone surrogates U+FFFD. */
long json_unescape(const json_str *s, char *out, size_t cap);

/* True when the slice equals the literal. */
static inline int json_eq(const json_str *s, const char *lit, size_t n)
{
    return s->len == n && memcmp(s->s, lit, n) == 0;
}
#define JSON_EQ(s, lit) json_eq((s), (lit), sizeof(lit) - 1)

#endif
