/*
 * textout.c - writing text that came from traces and logs: UTF-8 checks and
 * the one JSON string writer every JSON output of the project uses.
 */
#include <stdio.h>
#include <string.h>

#include "textout.h"

/* Length of the valid UTF-8 sequence starting at p (2..4), or 0 when the
 * bytes there are not one (overlong, surrogate, beyond U+10FFFF, cut). */
int teller_utf8_seq(const unsigned char *p)
{
    unsigned char c = p[0];
    int n;
    unsigned char lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF)
        n = 2;
    else if (c >= 0xE0 && c <= 0xEF) {
        n = 3;
        if (c == 0xE0)
            lo = 0xA0;
        else if (c == 0xED)
            hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        n = 4;
        if (c == 0xF0)
            lo = 0x90;
        else if (c == 0xF4)
            hi = 0x8F;
    } else
        return 0;
    if (p[1] < lo || p[1] > hi)
        return 0;
    for (int i = 2; i < n; i++)
        if (p[i] < 0x80 || p[i] > 0xBF) /* also stops at the NUL */
            return 0;
    return n;
}

void teller_json_put_to(teller_text_sink put, void *ctx, const char *s)
{
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    char esc[8];
    put(ctx, "\"", 1);
    while (*p) {
        const unsigned char *run = p;
        while (*p >= 0x20 && *p < 0x7f && *p != '"' && *p != '\\')
            p++;
        if (p > run)
            put(ctx, (const char *)run, (size_t)(p - run));
        unsigned char c = *p;
        if (!c)
            break;
        if (c < 0x80) {
            if (c == '"' || c == '\\')
                snprintf(esc, sizeof esc, "\\%c", c);
            else if (c == '\n')
                snprintf(esc, sizeof esc, "\\n");
            else if (c == '\t')
                snprintf(esc, sizeof esc, "\\t");
            else
                snprintf(esc, sizeof esc, "\\u%04x", c);
            put(ctx, esc, strlen(esc));
            p++;
            continue;
        }
        int len = teller_utf8_seq(p);
        if (len == 0) {
            put(ctx, "\\ufffd", 6);
            p++;
        } else {
            put(ctx, (const char *)p, (size_t)len);
            p += len;
        }
    }
    put(ctx, "\"", 1);
}

static void put_file(void *ctx, const char *s, size_t n) { fwrite(s, 1, n, (FILE *)ctx); }

void teller_json_put(FILE *f, const char *s) { teller_json_put_to(put_file, f, s); }
