/*
 * header.c - a log file's own header layout, learned from its first lines.
 *
 * Loggers teller does not know (Java's log4j, Android's logcat, Apache,
 * a site's own format) still put the same fields in front of every
 * message: a date, a time, a pid, a level, a component. Left in the
 * message they split templates (a weekday that changes) or hide them. The
 * reader (reader.c) holds back the first lines of a file, and for the
 * lines no known header matched (GENERIC), cuts the start of each message
 * into fields and gives every field a class:
 *
 *   NUMERIC  digits, or digits with - / : . , T Z + between them (a date,
 *            a time, a pid: "03-17", "18:01:47,978", "1702")
 *   MONTH    an English month or weekday name ("Jun", "Sun")
 *   LEVEL    a level word (INFO, warn, [notice], "E" as logcat writes it)
 *   BRACKET  a [...] field (nested brackets and spaces inside allowed)
 *   COMP     a token ending in ':' ("dfs.DataNode$PacketResponder:",
 *            "sshd[24200]:"); a component ends a header
 *   DASH     a lone "-"
 *   COLUMN   a word that ends at a '|', before " - " or before two
 *            blanks (pipe-, dash- or space-padded columns: Python
 *            logging's "time - name - LEVEL", a fixed-width component)
 *   WORD     anything else: message text, never header
 *
 * The layout is the longest run of positions, from the first, where one
 * class that may be a header (all but WORD) holds in at least 90 % of the
 * sampled lines; it stops after a COMP. It is kept only when it has an
 * anchor, a position whose field is a level or holds a time of day
 * ("hh:mm") in 90 % of the lines, and when at least 8 lines were sampled.
 * So a file whose messages start with varying words, or with numbers but
 * no time or level, learns nothing, and known formats are never touched.
 * A line is stripped only when every field of the layout matches its
 * class; the level of a LEVEL field becomes the record's level and the
 * date and time the header states (see header_time) the record's time.
 */
#include <string.h>

#include "logs_internal.h"

enum { C_WORD = 0, C_NUMERIC, C_MONTH, C_LEVEL, C_BRACKET, C_COMP, C_DASH, C_COLUMN };

/* A field's facts besides its class. */
typedef struct field {
    size_t  start; /* its first byte */
    size_t  end;   /* one past its last byte */
    uint8_t cls;
    uint8_t time;  /* holds "d:dd" */
    uint8_t level; /* teller_log_level of a LEVEL field */
} field;

static int lower(char c) { return c >= 'A' && c <= 'Z' ? c + 32 : c; }

static int eq_nocase(const char *s, size_t n, const char *w)
{
    size_t l = strlen(w);
    if (n != l)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (lower(s[i]) != w[i])
            return 0;
    return 1;
}

/* The level a word names, case aside, with an optional ':' after it. */
static int level_of(const char *s, size_t n)
{
    static const struct {
        const char *w;
        uint8_t     l;
    } W[] = {{"trace", TELLER_LOGL_TRACE},      {"verbose", TELLER_LOGL_TRACE},
             {"debug", TELLER_LOGL_DEBUG},      {"info", TELLER_LOGL_INFO},
             {"notice", TELLER_LOGL_INFO},      {"warn", TELLER_LOGL_WARNING},
             {"warning", TELLER_LOGL_WARNING},  {"error", TELLER_LOGL_ERROR},
             {"err", TELLER_LOGL_ERROR},        {"severe", TELLER_LOGL_ERROR},
             {"crit", TELLER_LOGL_CRITICAL},    {"critical", TELLER_LOGL_CRITICAL},
             {"fatal", TELLER_LOGL_CRITICAL},   {"alert", TELLER_LOGL_CRITICAL},
             {"emerg", TELLER_LOGL_CRITICAL}};
    if (n && s[n - 1] == ':')
        n--;
    if (n == 1) { /* logcat's one-letter levels */
        switch (s[0]) {
        case 'V': return TELLER_LOGL_TRACE;
        case 'D': return TELLER_LOGL_DEBUG;
        case 'I': return TELLER_LOGL_INFO;
        case 'W': return TELLER_LOGL_WARNING;
        case 'E': return TELLER_LOGL_ERROR;
        case 'F': case 'A': return TELLER_LOGL_CRITICAL;
        default: return 0;
        }
    }
    for (size_t k = 0; k < sizeof W / sizeof *W; k++)
        if (eq_nocase(s, n, W[k].w))
            return W[k].l;
    return 0;
}

static int has_time(const char *s, size_t n)
{
    for (size_t i = 1; i + 2 < n; i++)
        if (s[i] == ':' && s[i - 1] >= '0' && s[i - 1] <= '9' && s[i + 1] >= '0' && s[i + 1] <= '9' &&
            s[i + 2] >= '0' && s[i + 2] <= '9')
            return 1;
    return 0;
}

static int is_name(const char *s, size_t n)
{
    static const char *const N[] = {"jan", "feb", "mar", "apr", "may", "jun", "jul", "aug",
                                    "sep", "oct", "nov", "dec", "mon", "tue", "wed", "thu",
                                    "fri", "sat", "sun"};
    if (n && s[n - 1] == ',')
        n--;
    for (size_t k = 0; k < sizeof N / sizeof *N; k++)
        if (eq_nocase(s, n, N[k]))
            return 1;
    return 0;
}

/* " - " at s[j]: Python logging's column separator ("%(asctime)s -
 * %(name)s - %(levelname)s - %(message)s"). */
static int dash_follows(const char *s, size_t n, size_t j)
{
    if (j >= n || s[j] != ' ')
        return 0;
    while (j < n && s[j] == ' ')
        j++;
    return j + 1 < n && s[j] == '-' && s[j + 1] == ' ';
}

/* The field at s[i] (i at its first byte); n is the end of the text. */
static field next_field(const char *s, size_t n, size_t i)
{
    field f = {i, i, C_WORD, 0, 0};
    size_t j = i;
    if (s[i] == '[') {
        int depth = 0;
        for (j = i; j < n; j++) {
            depth += s[j] == '[';
            depth -= s[j] == ']';
            if (depth == 0)
                break;
        }
        if (j < n) {
            j++;
            if (j < n && s[j] == ':')
                j++;
            if (j == n || s[j] == ' ' || s[j] == '\t' || s[j] == '|') {
                f.end = j;
                f.cls = C_BRACKET;
                f.time = (uint8_t)has_time(s + i, j - i);
                size_t b = i + 1, e = j - (s[j - 1] == ':' ? 2 : 1);
                while (b < e && s[b] == ' ')
                    b++;
                while (e > b && s[e - 1] == ' ')
                    e--;
                int lv = e - b > 1 ? level_of(s + b, e - b) : 0;
                if (lv) {
                    f.cls = C_LEVEL;
                    f.level = (uint8_t)lv;
                }
                return f;
            }
        }
        j = i; /* no closing bracket before a space: an ordinary token */
    }
    while (j < n && s[j] != ' ' && s[j] != '\t' && s[j] != '|')
        j++;
    f.end = j;
    const char *t = s + i;
    size_t l = j - i;
    int digit = 0, other = 0;
    for (size_t k = 0; k < l; k++) {
        if (t[k] >= '0' && t[k] <= '9')
            digit = 1;
        else if (!strchr("-/:.,TZ+", t[k]))
            other = 1;
    }
    f.time = (uint8_t)has_time(t, l);
    int lv = level_of(t, l);
    if (l == 1 && t[0] == '-')
        f.cls = C_DASH;
    else if (digit && !other)
        f.cls = C_NUMERIC;
    else if (lv) {
        f.cls = C_LEVEL;
        f.level = (uint8_t)lv;
    } else if (is_name(t, l))
        f.cls = C_MONTH;
    else if ((j < n && s[j] == '|') || dash_follows(s, n, j) || (j + 1 < n && s[j] == ' ' && s[j + 1] == ' '))
        f.cls = C_COLUMN;
    else if (l > 1 && t[l - 1] == ':')
        f.cls = C_COMP;
    return f;
}

/* Up to max fields of s; returns how many, the byte after each in ends. */
static size_t fields(const char *s, size_t n, field *out, size_t max)
{
    size_t i = 0, k = 0;
    while (k < max) {
        while (i < n && (s[i] == ' ' || s[i] == '\t' || s[i] == '|'))
            i++;
        if (i >= n)
            break;
        out[k] = next_field(s, n, i);
        i = out[k].end;
        k++;
    }
    return k;
}

void log_layout_sample(log_layout_sampler *ls, const char *s, size_t n)
{
    if (ls->n >= LOG_LAYOUT_SAMPLES)
        return;
    field f[LOG_LAYOUT_MAX + 1];
    size_t k = fields(s, n, f, LOG_LAYOUT_MAX + 1);
    uint8_t *row = ls->cls[ls->n];
    for (size_t j = 0; j <= LOG_LAYOUT_MAX; j++)
        row[j] = j < k ? (uint8_t)(f[j].cls | (f[j].time ? 0x80 : 0)) : 0xff;
    ls->n++;
}

void log_layout_learn(const log_layout_sampler *ls, log_layout *L)
{
    memset(L, 0, sizeof *L);
    if (ls->n < 8)
        return;
    size_t need = (ls->n * 9 + 9) / 10, p = 0;
    int anchor = 0;
    for (size_t j = 0; j < LOG_LAYOUT_MAX; j++) {
        size_t count[8] = {0}, timed = 0, level = 0;
        for (size_t i = 0; i < ls->n; i++) {
            uint8_t c = ls->cls[i][j];
            if (c == 0xff)
                continue;
            count[c & 0x7f]++;
            timed += (c & 0x80) != 0;
            level += (c & 0x7f) == C_LEVEL;
        }
        int best = 0;
        for (int c = 1; c < 8; c++)
            if (count[c] > count[best])
                best = c;
        if (best == C_WORD || count[best] < need)
            break;
        L->cls[j] = (uint8_t)best;
        p = j + 1;
        anchor |= timed >= need || level >= need;
        if (best == C_COMP)
            break;
    }
    /* the message must go on after the header in most lines */
    size_t after = 0;
    for (size_t i = 0; i < ls->n; i++)
        after += ls->cls[i][p] != 0xff;
    if (anchor && after * 2 >= ls->n)
        L->n = (uint8_t)p;
}

/* ---- the time a header states ------------------------------------------ */

static int dig(char c) { return c >= '0' && c <= '9'; }

/* k digits at s[i] (all within [i, e)), else -1. */
static int num(const char *s, size_t e, size_t i, int k)
{
    int v = 0;
    if (i + (size_t)k > e)
        return -1;
    for (int j = 0; j < k; j++) {
        if (!dig(s[i + (size_t)j]))
            return -1;
        v = v * 10 + (s[i + (size_t)j] - '0');
    }
    return v;
}

/* The digit run at s[i] ends at i + k: not followed by another digit. */
static int ends(const char *s, size_t e, size_t i, int k)
{
    return i + (size_t)k >= e || !dig(s[i + (size_t)k]);
}

static int month_of(const char *s, size_t e, size_t i)
{
    static const char *const M[12] = {"jan", "feb", "mar", "apr", "may", "jun",
                                      "jul", "aug", "sep", "oct", "nov", "dec"};
    if (i + 3 > e || (i + 3 < e && ((s[i + 3] | 32) >= 'a' && (s[i + 3] | 32) <= 'z')))
        return 0;
    for (int k = 0; k < 12; k++)
        if (lower(s[i]) == M[k][0] && lower(s[i + 1]) == M[k][1] && lower(s[i + 2]) == M[k][2])
            return k + 1;
    return 0;
}

/* Reads the date and time in s[b, e) (the header) into x, the first of
 * each part only. Dates are taken when unambiguous: YYYY-MM-DD (also
 * / or .), YYYYMMDD, MM-DD (as vLLM and logcat write it), 2/2/2 digits
 * only when the first cannot be a month (YY/MM/DD) or the last cannot be a
 * day (MM/DD/YY), a month name then a day; a time is h:mm:ss or hh:mm:ss
 * with a fraction after '.', ',' or ':', and a 4-digit year right after
 * it as ctime writes it. Runs are read from their start only, so digits
 * inside a pid or a thread name are no date. */
static void header_time(const char *s, size_t b, size_t e, log_time *x)
{
    for (size_t i = b; i < e; i++) {
        if (i > b && (dig(s[i - 1]) || ((s[i - 1] | 32) >= 'a' && (s[i - 1] | 32) <= 'z')))
            continue; /* only at the start of a run */
        int v;
        if (!x->have && dig(s[i])) {
            int hl = i + 1 < e && dig(s[i + 1]) ? 2 : 1;
            int h = num(s, e, i, hl), mi = num(s, e, i + (size_t)hl + 1, 2), se = num(s, e, i + (size_t)hl + 4, 2);
            if (h >= 0 && h <= 23 && mi >= 0 && mi <= 59 && se >= 0 && se <= 60 && s[i + (size_t)hl] == ':' &&
                s[i + (size_t)hl + 3] == ':' && ends(s, e, i + (size_t)hl + 4, 2)) {
                x->have = 1;
                x->h = h;
                x->mi = mi;
                x->s = se;
                size_t j = i + (size_t)hl + 6;
                if (j + 1 < e && (s[j] == '.' || s[j] == ',' || s[j] == ':') && dig(s[j + 1])) {
                    int64_t f = 0;
                    int k = 0;
                    for (j++; j < e && dig(s[j]); j++)
                        if (k < 9) {
                            f = f * 10 + (s[j] - '0');
                            k++;
                        }
                    while (k++ < 9)
                        f *= 10;
                    x->ns = f;
                    x->subsec = 1;
                }
                /* ctime's year after the time: "Sun Dec 04 04:47:44 2005" */
                size_t q = j;
                while (q < e && s[q] == ' ')
                    q++;
                int yr = num(s, e, q, 4);
                if (q > j && !x->has_year && x->has_date && yr >= 1970 && yr <= 2200 && ends(s, e, q, 4)) {
                    x->y = yr;
                    x->has_year = 1;
                    j = q + 4;
                }
                i = j - 1;
                continue;
            }
        }
        if (x->has_date && x->has_year)
            continue;
        int y = num(s, e, i, 4);
        if (!x->has_date && y >= 1970 && y <= 2200 && i + 10 <= e && (s[i + 4] == '-' || s[i + 4] == '/' ||
                                                                     s[i + 4] == '.') &&
            s[i + 7] == s[i + 4] && ends(s, e, i + 8, 2)) {
            int mo = num(s, e, i + 5, 2), d = num(s, e, i + 8, 2);
            if (mo >= 1 && mo <= 12 && d >= 1 && d <= 31) {
                x->y = y, x->mo = mo, x->d = d, x->has_date = x->has_year = 1;
                i += 9;
                continue;
            }
        }
        if (!x->has_date && y >= 1970 && y <= 2200 && (v = num(s, e, i + 4, 4)) >= 0 && ends(s, e, i, 8)) {
            int mo = v / 100, d = v % 100;
            if (mo >= 1 && mo <= 12 && d >= 1 && d <= 31) {
                x->y = y, x->mo = mo, x->d = d, x->has_date = x->has_year = 1;
                i += 7;
                continue;
            }
        }
        if (!x->has_date && (v = num(s, e, i, 2)) >= 0 && i + 5 <= e && (s[i + 2] == '-' || s[i + 2] == '/')) {
            int a = v, c = num(s, e, i + 3, 2), z = -1;
            int three = i + 8 <= e && s[i + 5] == s[i + 2] && (z = num(s, e, i + 6, 2)) >= 0 && ends(s, e, i + 6, 2);
            if (c >= 0 && (three || ends(s, e, i + 3, 2))) {
                int yy = -1, mo = -1, d = -1;
                if (!three && a >= 1 && a <= 12 && c >= 1 && c <= 31)
                    mo = a, d = c;
                else if (three && a > 12 && c >= 1 && c <= 12 && z >= 1 && z <= 31)
                    yy = a, mo = c, d = z;
                else if (three && z > 31 && a >= 1 && a <= 12 && c >= 1 && c <= 31)
                    yy = z, mo = a, d = c;
                if (mo > 0) {
                    x->mo = mo, x->d = d, x->has_date = 1;
                    if (yy >= 0)
                        x->y = 2000 + yy, x->has_year = 1;
                    i += three ? 7 : 4;
                    continue;
                }
            }
        }
        if (!x->has_date && (v = month_of(s, e, i)) > 0) {
            size_t j = i + 3;
            while (j < e && s[j] == ' ')
                j++;
            int hl = j + 1 < e && dig(s[j + 1]) ? 2 : 1, d = num(s, e, j, hl);
            if (j > i + 3 && d >= 1 && d <= 31 && ends(s, e, j, hl)) {
                x->mo = v, x->d = d, x->has_date = 1;
                i = j + (size_t)hl - 1;
                continue;
            }
        }
    }
}

size_t log_layout_strip(const log_layout *L, const char *s, size_t n, uint8_t *level, log_time *t)
{
    if (!L || !L->n)
        return 0;
    field f[LOG_LAYOUT_MAX];
    if (fields(s, n, f, L->n) != L->n)
        return 0;
    uint8_t lv = 0;
    for (size_t j = 0; j < L->n; j++) {
        if (f[j].cls != L->cls[j])
            return 0;
        if (f[j].level && !lv)
            lv = f[j].level;
    }
    size_t e = f[L->n - 1].end;
    while (e < n && (s[e] == ' ' || s[e] == '\t' || s[e] == '|'))
        e++;
    if (lv)
        *level = lv;
    log_time x = {0};
    header_time(s, f[0].start, f[L->n - 1].end, &x);
    if (x.have)
        *t = x;
    return e;
}
