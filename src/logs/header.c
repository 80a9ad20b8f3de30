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
 *   COLUMN   a word that ends at a '|' (pipe-separated columns)
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
 * class; the level of a LEVEL field becomes the record's level.
 */
#include <string.h>

#include "logs_internal.h"

enum { C_WORD = 0, C_NUMERIC, C_MONTH, C_LEVEL, C_BRACKET, C_COMP, C_DASH, C_COLUMN };

/* A field's facts besides its class. */
typedef struct field {
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

/* The field at s[i] (i at its first byte); n is the end of the text. */
static field next_field(const char *s, size_t n, size_t i)
{
    field f = {i, C_WORD, 0, 0};
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
    else if (j < n && s[j] == '|')
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

size_t log_layout_strip(const log_layout *L, const char *s, size_t n, uint8_t *level)
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
    return e;
}
