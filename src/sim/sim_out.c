/*
 * sim_out.c - see sim_out.h.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim_out.h"
#include "../util/textout.h"

#define FLUSH_AT (1u << 20)

void ob_init(obuf *o, gzFile gz)
{
    memset(o, 0, sizeof *o);
    o->gz = gz;
}

static void reserve(obuf *o, size_t extra)
{
    if (o->n + extra <= o->cap)
        return;
    size_t c = o->cap ? o->cap * 2 : 1u << 16;
    while (c < o->n + extra)
        c *= 2;
    char *nb = realloc(o->b, c);
    if (!nb) {
        o->failed = 1;
        return;
    }
    o->b = nb;
    o->cap = c;
}

void ob_flush(obuf *o)
{
    if (!o->gz || o->n == 0)
        return;
    if (gzwrite(o->gz, o->b, (unsigned)o->n) != (int)o->n)
        o->failed = 1;
    o->n = 0;
}

void ob_raw(obuf *o, const char *s, size_t n)
{
    reserve(o, n);
    if (o->failed)
        return;
    memcpy(o->b + o->n, s, n);
    o->n += n;
    if (o->gz && o->n >= FLUSH_AT)
        ob_flush(o);
}

void ob_s(obuf *o, const char *s) { ob_raw(o, s, strlen(s)); }

static void ob_sink(void *ctx, const char *s, size_t n) { ob_raw(ctx, s, n); }

void ob_jstr(obuf *o, const char *s) { teller_json_put_to(ob_sink, o, s); }

void ob_i64(obuf *o, int64_t v)
{
    char tmp[24];
    int i = 23;
    uint64_t u = v < 0 ? (uint64_t)(-(v + 1)) + 1 : (uint64_t)v;
    tmp[i] = 0;
    do {
        tmp[--i] = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (v < 0)
        tmp[--i] = '-';
    ob_raw(o, tmp + i, (size_t)(23 - i));
}

void ob_us(obuf *o, int64_t ns)
{
    if (ns < 0) {
        ob_raw(o, "-", 1);
        ns = -ns;
    }
    ob_i64(o, ns / 1000);
    char f[4] = {'.', (char)('0' + ns % 1000 / 100), (char)('0' + ns % 100 / 10), (char)('0' + ns % 10)};
    ob_raw(o, f, 4);
}

void ob_fmt(obuf *o, const char *fmt, ...)
{
    char tmp[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    ob_raw(o, tmp, (size_t)n < sizeof tmp ? (size_t)n : sizeof tmp - 1);
}

void ob_free(obuf *o)
{
    free(o->b);
    memset(o, 0, sizeof *o);
}
