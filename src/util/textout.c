/*
 * textout.c - writing text that came from traces and logs: UTF-8 checks and
 * the one JSON string writer every JSON output of the project uses.
 */
#include <stdio.h>

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

void teller_json_put(FILE *f, const char *s)
{
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    fputc('"', f);
    while (*p) {
        unsigned char c = *p;
        if (c < 0x80) {
            if (c == '"' || c == '\\')
                fprintf(f, "\\%c", c);
            else if (c == '\n')
                fputs("\\n", f);
            else if (c == '\t')
                fputs("\\t", f);
            else if (c < 0x20 || c == 0x7f)
                fprintf(f, "\\u%04x", c);
            else
                fputc(c, f);
            p++;
            continue;
        }
        int len = teller_utf8_seq(p);
        if (len == 0) {
            fputs("\\ufffd", f);
            p++;
        } else {
            fwrite(p, 1, (size_t)len, f);
            p += len;
        }
    }
    fputc('"', f);
}
