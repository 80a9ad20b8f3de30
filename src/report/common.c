/*
 * common.c - escaping, blame and the row table shared by the report
 * writers (report_internal.h). Names from traces are stored verbatim
 * (docs/ARCHITECTURE.md); this is where they are made safe for HTML and
 * JSON, in one place each.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "report_internal.h"
#include "../util/textout.h"


/* Where a name may wrap: after '_', '/', ':' (not inside "::"), ',' and '.'
 * before a letter (so "4.897" stays whole), and before '(' and '<'. */
static int wrap_after(unsigned char c, unsigned char next)
{
    if (!next)
        return 0;
    switch (c) {
    case '_':
    case '/': return 1;
    case ':': return next != ':';
    case ',': return next != ' ';
    case '.': return (next | 0x20) >= 'a' && (next | 0x20) <= 'z';
    default: return 0;
    }
}

/* rep_html and rep_html_name: with wbr, a <wbr> at each place wrap_after
 * and before '(' and '<' allow. */
static void html_text(FILE *f, const char *s, size_t max, int wbr)
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
            if (wbr && done && (c == '(' || c == '<'))
                fputs("<wbr>", f);
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
            if (wbr && wrap_after(c, p[1]))
                fputs("<wbr>", f);
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

void rep_html(FILE *f, const char *s, size_t max)
{
    html_text(f, s, max, 0);
}

void rep_html_name(FILE *f, const char *s, size_t max)
{
    html_text(f, s, max, 1);
}

/* The top candidate's operator matched against an event name: the
 * candidate keeps at most sizeof op - 1 bytes of it. */
static int is_top_op(const teller_diag_step *s, const char *name)
{
    return strncmp(name, s->pred.cand[0].op, sizeof s->pred.cand[0].op - 1) == 0;
}

void rep_blame_of(const teller_store *st, const teller_diag_step *s, rep_blame *b)
{
    const teller_events *ev = teller_store_events(st);
    uint32_t c = s->culprit_event;
    memset(b, 0, sizeof *b);
    b->culprit = TELLER_NONE;
    b->other_rank = -1;
    if (c != TELLER_NONE && c < ev->n) {
        int32_t r = teller_store_event_rank(st, c);
        if (s->root_rank < 0 || r == s->root_rank) {
            b->culprit = c;
            return;
        }
        b->other_rank = r;
    }
    if (s->root_rank < 0 || s->pred.ncand <= 0)
        return;
    /* The root rank holds no event of the culprit: look at the operator
     * in this step on every rank. */
    uint32_t k = s->pred.step;
    int root_has = 0;
    for (size_t i = 0; i < ev->n; i++) {
        if (ev->step[i] != k || !is_top_op(s, teller_store_str(st, ev->name[i])))
            continue;
        int32_t r = teller_store_event_rank(st, (uint32_t)i);
        if (r == s->root_rank) {
            root_has = 1;
            continue;
        }
        size_t v = 0;
        while (v < b->nvictims && teller_store_event_rank(st, b->victims[v]) != r)
            v++;
        if (v == b->nvictims) {
            if (v == REP_MAX_VICTIMS)
                continue;
            b->nvictims++;
            b->victims[v] = (uint32_t)i;
        } else if (ev->dur_ns[i] > ev->dur_ns[b->victims[v]])
            b->victims[v] = (uint32_t)i;
    }
    int loaded = teller_store_source_of_rank(st, s->root_rank) >= 0;
    b->missing = loaded && !root_has;
    b->unloaded = !loaded;
    /* waiting ranks: their call of the operator lasted at least half the
     * step's excess and longer than its usual time */
    size_t n = 0;
    for (size_t v = 0; v < b->nvictims; v++) {
        int64_t d = ev->dur_ns[b->victims[v]];
        if (2 * d >= s->excess_ns && d > s->culprit_base_ns)
            b->victims[n++] = b->victims[v];
    }
    b->nvictims = n;
    /* by rank (insertion sort: at most REP_MAX_VICTIMS) */
    for (size_t i = 1; i < n; i++)
        for (size_t j = i; j > 0 && teller_store_event_rank(st, b->victims[j]) <
                                    teller_store_event_rank(st, b->victims[j - 1]); j--) {
            uint32_t t = b->victims[j];
            b->victims[j] = b->victims[j - 1];
            b->victims[j - 1] = t;
        }
    for (size_t v = 0; v < n; v++)
        if (ev->dur_ns[b->victims[v]] > b->waited_ns)
            b->waited_ns = ev->dur_ns[b->victims[v]];
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
        if (cur && cur->source == ev->source[i] && cur->gpu == gpu && cur->pid == teller_event_pid(ev, i) &&
            cur->tid == teller_event_tid(ev, i)) {
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
                         .pid = teller_event_pid(ev, i), .tid = teller_event_tid(ev, i), .rank = src ? src->rank : -1,
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
