/*
 * common.c - escaping, durations and the row table shared by the report
 * writers (report_internal.h). Names from traces are stored verbatim
 * (docs/ARCHITECTURE.md); this is where they are made safe for HTML and
 * JSON, in one place each.
 */
#include <stdint.h>
#include <stdlib.h>

#include "report_internal.h"
#include "../util/textout.h"


void rep_html(FILE *f, const char *s, size_t max)
{
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    size_t done = 0;
    while (*p) {
        unsigned char c = *p;
        int len = c < 0x80 ? 1 : teller_utf8_seq(p);
        if (max && done + (len ? (size_t)len : 1) > max) {
            fputs("...", f);
            return;
        }
        if (c < 0x80) {
            switch (c) {
            case '&': fputs("&amp;", f); break;
            case '<': fputs("&lt;", f); break;
            case '>': fputs("&gt;", f); break;
            case '"': fputs("&quot;", f); break;
            case '\'': fputs("&#39;", f); break;
            case '\n':
            case '\t': fputc(c, f); break;
            default:
                if (c < 0x20 || c == 0x7f)
                    fprintf(f, "\\x%02x", c);
                else
                    fputc(c, f);
            }
            p++;
            done++;
        } else if (len == 0) {
            fputs("&#xfffd;", f);
            p++;
            done++;
        } else if (c == 0xC2 && p[1] < 0xA0) { /* C1 control characters */
            fprintf(f, "\\u%04x", p[1]);
            p += 2;
            done += 2;
        } else {
            fwrite(p, 1, (size_t)len, f);
            p += len;
            done += (size_t)len;
        }
    }
}


char *rep_dur(char *buf, size_t cap, int64_t ns)
{
    double a = ns < 0 ? -(double)ns : (double)ns;
    if (a >= 1e9)
        snprintf(buf, cap, "%.3f s", (double)ns / 1e9);
    else if (a >= 1e6)
        snprintf(buf, cap, "%.3f ms", (double)ns / 1e6);
    else if (a >= 1e3)
        snprintf(buf, cap, "%.1f us", (double)ns / 1e3);
    else
        snprintf(buf, cap, "%lld ns", (long long)ns);
    return buf;
}

int rep_rows(const teller_store *st, rep_row **rows, size_t *n)
{
    const teller_events *ev = teller_store_events(st);
    size_t cap = 64, k = 0;
    rep_row *r = malloc(cap * sizeof *r);
    if (!r)
        return -1;
    for (size_t i = 0; i < ev->n; i++) {
        uint8_t gpu = (ev->flags[i] & TELLER_F_GPU) != 0;
        rep_row *cur = k ? &r[k - 1] : NULL;
        if (cur && cur->source == ev->source[i] && cur->gpu == gpu && cur->pid == ev->pid[i] && cur->tid == ev->tid[i]) {
            if (ev->start_ns[i] < ev->start_ns[i - 1])
                cur->sorted = 0;
            cur->n++;
            continue;
        }
        if (k == cap) {
            rep_row *g = realloc(r, 2 * cap * sizeof *r);
            if (!g) {
                free(r);
                return -1;
            }
            r = g;
            cap *= 2;
        }
        const teller_source *src = teller_store_source_c(st, ev->source[i]);
        r[k] = (rep_row){.first = (uint32_t)i, .n = 1, .source = ev->source[i], .gpu = gpu, .sorted = 1,
                         .pid = ev->pid[i], .tid = ev->tid[i], .rank = src ? src->rank : -1,
                         .node = src ? src->node : -1};
        k++;
    }
    *rows = r;
    *n = k;
    return 0;
}

size_t rep_row_of(const rep_row *rows, size_t n, uint32_t e)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (rows[mid].first <= e)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0 || e >= rows[lo - 1].first + rows[lo - 1].n)
        return SIZE_MAX;
    return lo - 1;
}
