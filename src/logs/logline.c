/*
 * logline.c - one log line into a record: wrappers, headers, time, rank,
 * request ids. The streaming reader (reader.c) calls parse_line_ctx for
 * every cleaned line; teller_log_parse_line is the same for one line.
 *
 * A line is peeled from the outside in. First `teller run`'s capture
 * prefix ("<epoch ns> ", whose time wins over every other), then the
 * wrappers that deployment tools add (docker's ISO timestamp, journald's
 * "Mon DD hh:mm:ss host proc[pid]: ", docker compose's "name | ", Ray's and
 * vLLM's process prefixes "(Name pid=N[, ip=A])", torchrun's "[rankN]:",
 * mpirun's "[N] "), then the header of the logger that wrote it (vLLM, uvicorn, SGLang,
 * PyTorch glog, NCCL), and what is left is the message. Every matcher
 * either consumes a well-formed piece or leaves the position alone, so a
 * line that matches nothing is a GENERIC record with the whole line as its
 * message. The formats and their sources are in ../shared/notes/formats.md
 * section 4.
 */
#include <limits.h>
#include <stddef.h>
#include <string.h>

#include "logs_internal.h"

/* ---- small scanners --------------------------------------------------- */

static int is_digit(char c) { return c >= '0' && c <= '9'; }
static int is_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
static int is_alnum(char c) { return is_digit(c) || is_alpha(c); }

/* k digits at s[i..]; -1 when not all digits or past n. */
static int digits(const char *s, size_t n, size_t i, int k)
{
    if (i + (size_t)k > n)
        return -1;
    int v = 0;
    for (int j = 0; j < k; j++) {
        if (!is_digit(s[i + j]))
            return -1;
        v = v * 10 + (s[i + j] - '0');
    }
    return v;
}

/* A run of 1..18 digits at s[*i]; advances *i. -1 if none. */
static int64_t number(const char *s, size_t n, size_t *i)
{
    size_t j = *i;
    int64_t v = 0;
    while (j < n && is_digit(s[j]) && j - *i < 18)
        v = v * 10 + (s[j++] - '0');
    if (j == *i)
        return -1;
    *i = j;
    return v;
}

static int starts(const char *s, size_t n, size_t i, const char *lit)
{
    size_t l = strlen(lit);
    return i + l <= n && (l == 0 || (s[i] == lit[0] && !memcmp(s + i, lit, l)));
}

/* The first lit in s[0..n). memchr looks for the literal's first
 * character that is not a lower-case letter or a space (rarer in log text,
 * so fewer false starts), only where the literal would fit, and each start
 * is checked by its first character, then whole. */
static const char *find(const char *s, size_t n, const char *lit)
{
    size_t l = strlen(lit), a = 0;
    if (l == 0 || n < l)
        return NULL;
    while (a + 1 < l && ((lit[a] >= 'a' && lit[a] <= 'z') || lit[a] == ' '))
        a++;
    const char *end = s + n - (l - 1 - a); /* one past the last place for lit[a] */
    for (const char *p = s + a; p < end && (p = memchr(p, lit[a], (size_t)(end - p))) != NULL; p++)
        if (p[-(ptrdiff_t)a] == lit[0] && !memcmp(p - a, lit, l))
            return p - a;
    return NULL;
}

/* "HH:MM:SS" at s[i]; fills t and returns 8, or 0. */
static int hms(const char *s, size_t n, size_t i, log_time *t)
{
    int h = digits(s, n, i, 2), mi = digits(s, n, i + 3, 2), se = digits(s, n, i + 6, 2);
    if (h < 0 || mi < 0 || se < 0 || s[i + 2] != ':' || s[i + 5] != ':' || h > 23 || mi > 59 ||
        se > 60)
        return 0;
    t->h = h;
    t->mi = mi;
    t->s = se;
    t->have = 1;
    return 8;
}

/* Optional fraction ".ddd" or ",ddd" at s[*i] (up to 9 digits kept). */
static void frac(const char *s, size_t n, size_t *i, log_time *t)
{
    if (*i + 1 < n && (s[*i] == '.' || s[*i] == ',') && is_digit(s[*i + 1])) {
        size_t j = *i + 1;
        int64_t v = 0;
        int k = 0;
        while (j < n && is_digit(s[j])) {
            if (k < 9) {
                v = v * 10 + (s[j] - '0');
                k++;
            }
            j++;
        }
        while (k++ < 9)
            v *= 10;
        t->ns = v;
        t->subsec = 1;
        *i = j;
    }
}

/* "YYYY-MM-DD" at s[i] into t; returns 10 or 0. */
static int ymd(const char *s, size_t n, size_t i, log_time *t)
{
    if (i + 10 > n || s[i + 4] != '-' || s[i + 7] != '-')
        return 0;
    int y = digits(s, n, i, 4), mo = digits(s, n, i + 5, 2), d = digits(s, n, i + 8, 2);
    if (y < 0 || mo < 1 || mo > 12 || d < 1 || d > 31)
        return 0;
    t->y = y;
    t->mo = mo;
    t->d = d;
    t->has_year = t->has_date = 1;
    return 10;
}

static const char *const MONTHS[12] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                       "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};

/* Days since 1970-01-01 of a civil date (proleptic Gregorian). */
int64_t log_days_from_civil(int64_t y, int m, int d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

/* Civil year of a day number. */
static int year_of_day(int64_t z)
{
    z += 719468;
    int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    int64_t doe = z - era * 146097;
    int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    int64_t mp = (5 * doy + 2) / 153;
    int m = (int)(mp < 10 ? mp + 3 : mp - 9);
    return (int)(yoe + era * 400 + (m <= 2));
}

/* An upper-case level word at s[i] (WARNING before WARN); its length in
 * *len. Picked by the first letter: this runs at several places of
 * every line. */
static int level_word(const char *s, size_t n, size_t i, size_t *len)
{
    const char *w;
    size_t l;
    int lv;
    if (i >= n)
        return 0;
    switch (s[i]) {
    case 'D': w = "DEBUG", l = 5, lv = TELLER_LOGL_DEBUG; break;
    case 'I': w = "INFO", l = 4, lv = TELLER_LOGL_INFO; break;
    case 'W':
        w = "WARNING", l = 7, lv = TELLER_LOGL_WARNING;
        if (i + l > n || memcmp(s + i, w, l))
            w = "WARN", l = 4;
        break;
    case 'E': w = "ERROR", l = 5, lv = TELLER_LOGL_ERROR; break;
    case 'C': w = "CRITICAL", l = 8, lv = TELLER_LOGL_CRITICAL; break;
    case 'T': w = "TRACE", l = 5, lv = TELLER_LOGL_TRACE; break;
    default: return 0;
    }
    if (i + l > n || memcmp(s + i, w, l))
        return 0;
    *len = l;
    return lv;
}

/* ---- wrappers ---------------------------------------------------------- */

/* `teller run`'s capture prefix (src/cli/cmd_run.c): the epoch ns at which
 * the line reached the pipe, 16 to 20 digits, and one space, at the very
 * start of the line. Returns its length and puts the time in *ns (may be
 * NULL); 0 when the line has none or the number does not fit an int64. */
size_t log_capture_prefix(const char *s, size_t n, int64_t *ns)
{
    size_t j = 0;
    if (n < 17 || !is_digit(s[0]) || !is_digit(s[15])) /* most lines, at once */
        return 0;
    while (j < n && is_digit(s[j]))
        j++;
    if (j < 16 || j > 20 || j >= n || s[j] != ' ')
        return 0;
    int64_t v = 0;
    for (size_t k = 0; k < j; k++) {
        int d = s[k] - '0';
        if (v > (INT64_MAX - d) / 10)
            return 0;
        v = v * 10 + d;
    }
    if (ns)
        *ns = v;
    return j + 1;
}

/* docker --timestamps: "2026-05-12T08:01:39.331095044Z " */
static size_t wrap_docker(const char *s, size_t n, size_t i, log_time *t)
{
    log_time x = {0};
    if (!ymd(s, n, i, &x) || i + 10 >= n || s[i + 10] != 'T' || !hms(s, n, i + 11, &x))
        return 0;
    size_t j = i + 19;
    frac(s, n, &j, &x);
    if (j < n && s[j] == 'Z') {
        x.utc = 1;
        j++;
    }
    if (j >= n || s[j] != ' ')
        return 0;
    *t = x;
    return j + 1 - i;
}

/* journald: "Sep 22 23:46:42 host proc[PID]: " */
static size_t wrap_journald(const char *s, size_t n, size_t i, log_time *t, int32_t *pid)
{
    if (i + 16 > n || s[i + 3] != ' ')
        return 0;
    int mo = 0;
    for (int k = 0; k < 12; k++)
        if (!memcmp(s + i, MONTHS[k], 3))
            mo = k + 1;
    if (!mo || s[i + 3] != ' ')
        return 0;
    size_t j = i + 4;
    if (s[j] == ' ')
        j++;
    size_t d0 = j;
    int64_t d = number(s, n, &j);
    if (d < 1 || d > 31 || j - d0 > 2 || j >= n || s[j] != ' ')
        return 0;
    log_time x = {0};
    if (!hms(s, n, j + 1, &x))
        return 0;
    j += 9;
    if (j >= n || s[j] != ' ')
        return 0;
    j++;
    while (j < n && s[j] != ' ') /* host */
        j++;
    if (j >= n)
        return 0;
    j++;
    size_t p0 = j;
    while (j < n && s[j] != '[' && s[j] != ':' && s[j] != ' ')
        j++;
    if (j == p0 || j >= n)
        return 0;
    int64_t p = -1;
    if (s[j] == '[') {
        j++;
        p = number(s, n, &j);
        if (p < 0 || j >= n || s[j] != ']')
            return 0;
        j++;
    }
    if (j + 1 >= n || s[j] != ':' || s[j + 1] != ' ')
        return 0;
    x.mo = mo;
    x.d = (int)d;
    x.has_date = 1;
    *t = x;
    if (p >= 0 && p <= INT32_MAX)
        *pid = (int32_t)p;
    return j + 2 - i;
}

/* docker compose: "service-name-1  | " */
static size_t wrap_compose(const char *s, size_t n, size_t i)
{
    size_t j = i;
    while (j < n && (is_alnum(s[j]) || s[j] == '_' || s[j] == '-' || s[j] == '.'))
        j++;
    if (j == i || j >= n || s[j] != ' ')
        return 0;
    while (j < n && s[j] == ' ')
        j++;
    if (j + 1 >= n || s[j] != '|' || s[j + 1] != ' ')
        return 0;
    return j + 2 - i;
}

/* "(Name pid=N)", "(Name rank=R pid=N)", "(Name pid=N, ip=A)" + space. */
static size_t wrap_process(const char *s, size_t n, size_t i, teller_log_record *r)
{
    if (i >= n || s[i] != '(')
        return 0;
    size_t j = i + 1, name0 = j;
    while (j < n && (is_alnum(s[j]) || s[j] == '_' || s[j] == '-' || s[j] == '.'))
        j++;
    if (j == name0 || j >= n || s[j] != ' ')
        return 0;
    size_t name1 = j;
    int32_t pid = -1, rank = -1;
    int any = 0;
    while (j < n && s[j] != ')') {
        while (j < n && (s[j] == ' ' || s[j] == ','))
            j++;
        size_t k0 = j;
        while (j < n && is_alpha(s[j]))
            j++;
        if (j >= n || s[j] != '=' || j == k0)
            return 0;
        size_t klen = j - k0;
        j++;
        size_t v0 = j;
        while (j < n && s[j] != ',' && s[j] != ')' && s[j] != ' ')
            j++;
        if (j == v0)
            return 0;
        size_t vi = v0;
        int64_t v = -1;
        if (is_digit(s[v0])) {
            v = number(s, n, &vi);
            if (vi != j)
                v = -1;
        }
        if (klen == 3 && !memcmp(s + k0, "pid", 3) && v >= 0 && v <= INT32_MAX)
            pid = (int32_t)v;
        if (klen == 4 && !memcmp(s + k0, "rank", 4) && v >= 0 && v <= INT32_MAX)
            rank = (int32_t)v;
        any = 1;
    }
    if (!any || j + 1 >= n || s[j] != ')' || s[j + 1] != ' ')
        return 0;
    r->process.p = s + name0;
    r->process.n = name1 - name0;
    r->pid = pid;
    if (rank >= 0)
        r->rank = rank;
    return j + 2 - i;
}

/* torchrun's "[rankN]:" (optionally followed by a space). */
static size_t wrap_rank(const char *s, size_t n, size_t i, int32_t *rank)
{
    if (!starts(s, n, i, "[rank"))
        return 0;
    size_t j = i + 5;
    int64_t v = number(s, n, &j);
    if (v < 0 || v > INT32_MAX || j + 1 >= n || s[j] != ']' || s[j + 1] != ':')
        return 0;
    *rank = (int32_t)v;
    j += 2;
    if (j < n && s[j] == ' ')
        j++;
    return j - i;
}

/* mpirun's "[N] " in front of another bracketed header. */
static size_t wrap_mpirun(const char *s, size_t n, size_t i)
{
    if (i >= n || s[i] != '[')
        return 0;
    size_t j = i + 1;
    if (number(s, n, &j) < 0 || j + 2 >= n || s[j] != ']' || s[j + 1] != ' ' || s[j + 2] != '[')
        return 0;
    return j + 2 - i;
}

/* ---- headers ----------------------------------------------------------- */

/* vLLM: "LEVEL MM-DD HH:MM:SS [file.py:N] " or "LEVEL MM-DD HH:MM:SS file.py:N] ". */
static size_t hdr_vllm(const char *s, size_t n, size_t i, teller_log_record *r, log_time *t)
{
    size_t ll;
    int lv = level_word(s, n, i, &ll);
    if (!lv || i + ll >= n || s[i + ll] != ' ')
        return 0;
    size_t j = i + ll + 1;
    int mo = digits(s, n, j, 2), d = digits(s, n, j + 3, 2);
    if (mo < 1 || mo > 12 || d < 1 || d > 31 || s[j + 2] != '-')
        return 0;
    log_time x = {0};
    if (j + 5 >= n || s[j + 5] != ' ' || !hms(s, n, j + 6, &x))
        return 0;
    j += 14;
    frac(s, n, &j, &x); /* not printed by vLLM's format, accepted if present */
    if (j >= n || s[j] != ' ')
        return 0;
    j++;
    int bracket = j < n && s[j] == '[';
    size_t f0 = j + (size_t)bracket, k = f0;
    while (k < n && s[k] != ']' && s[k] != ' ')
        k++;
    if (k >= n || s[k] != ']' || k == f0)
        return 0;
    /* must end in ":digits" */
    size_t c = k;
    while (c > f0 && is_digit(s[c - 1]))
        c--;
    if (c == k || c == f0 || s[c - 1] != ':')
        return 0;
    x.mo = mo;
    x.d = d;
    x.has_date = 1;
    *t = x;
    r->level = (uint8_t)lv;
    r->source.p = s + f0;
    r->source.n = k - f0;
    r->family = TELLER_LOG_VLLM;
    k++;
    if (k < n && s[k] == ' ')
        k++;
    return k - i;
}

/* uvicorn: "INFO:     message" */
static size_t hdr_uvicorn(const char *s, size_t n, size_t i, teller_log_record *r)
{
    size_t ll;
    int lv = level_word(s, n, i, &ll);
    if (!lv || i + ll + 1 >= n || s[i + ll] != ':' || s[i + ll + 1] != ' ')
        return 0;
    size_t j = i + ll + 1;
    while (j < n && s[j] == ' ')
        j++;
    r->level = (uint8_t)lv;
    r->family = TELLER_LOG_UVICORN;
    return j - i;
}

/* "[YYYY-MM-DD HH:MM:SS(.f)( TAGn)*] " or "[HH:MM:SS( TAGn)*] " (SGLang;
 * NCCL's WARN timestamp has the same shape without tags). */
static size_t hdr_bracket_time(const char *s, size_t n, size_t i, teller_log_record *r, log_time *t,
                               int *tags)
{
    if (i >= n || s[i] != '[')
        return 0;
    log_time x = {0};
    size_t j = i + 1;
    int64_t tp = -1; /* a TPn tag's n, taken once the header is whole */
    if (ymd(s, n, j, &x)) {
        if (j + 10 >= n || s[j + 10] != ' ')
            return 0;
        j += 11;
    }
    if (!hms(s, n, j, &x))
        return 0;
    j += 8;
    frac(s, n, &j, &x);
    *tags = 0;
    while (j < n && s[j] == ' ') {
        j++;
        size_t a0 = j;
        while (j < n && s[j] >= 'A' && s[j] <= 'Z')
            j++;
        size_t a1 = j;
        int64_t v = number(s, n, &j);
        if (a1 == a0 || v < 0)
            return 0;
        if (a1 - a0 == 2 && !memcmp(s + a0, "TP", 2) && v <= INT32_MAX)
            tp = v;
        (*tags)++;
    }
    if (j + 1 >= n || s[j] != ']' || s[j + 1] != ' ')
        return 0;
    if (tp >= 0)
        r->rank = (int32_t)tp;
    *t = x;
    return j + 2 - i;
}

/* PyTorch glog in brackets: "[E ProcessGroupNCCL.cpp:607] " or
 * "[E1206 18:44:12.715298746 ProcessGroupNCCL.cpp:607] ". */
static size_t hdr_glog(const char *s, size_t n, size_t i, teller_log_record *r, log_time *t)
{
    if (i + 3 >= n || s[i] != '[')
        return 0;
    int lv;
    switch (s[i + 1]) {
    case 'I': lv = TELLER_LOGL_INFO; break;
    case 'W': lv = TELLER_LOGL_WARNING; break;
    case 'E': lv = TELLER_LOGL_ERROR; break;
    case 'F': lv = TELLER_LOGL_CRITICAL; break;
    default: return 0;
    }
    size_t j = i + 2;
    log_time x = {0};
    if (is_digit(s[j])) {
        size_t d0 = j;
        int64_t md = number(s, n, &j);
        if (j - d0 < 3 || j - d0 > 4 || md < 0)
            return 0;
        int mo = (int)(md / 100), d = (int)(md % 100);
        if (mo < 1 || mo > 12 || d < 1 || d > 31 || j >= n || s[j] != ' ' || !hms(s, n, j + 1, &x))
            return 0;
        j += 9;
        frac(s, n, &j, &x);
        x.mo = mo;
        x.d = d;
        x.has_date = 1;
        /* classic glog puts a thread id here */
        if (j + 1 < n && s[j] == ' ' && is_digit(s[j + 1])) {
            size_t k = j + 1;
            number(s, n, &k);
            if (k < n && s[k] == ' ')
                j = k;
        }
    }
    if (j >= n || s[j] != ' ')
        return 0;
    j++;
    size_t f0 = j;
    while (j < n && s[j] != ']' && s[j] != ' ')
        j++;
    if (j >= n || s[j] != ']' || !memchr(s + f0, ':', j - f0))
        return 0;
    r->source.p = s + f0;
    r->source.n = j - f0;
    r->level = (uint8_t)lv;
    r->family = TELLER_LOG_TORCH;
    *t = x;
    j++;
    if (j < n && s[j] == ' ')
        j++;
    return j - i;
}

/* NCCL: "host:pid:tid [dev] [ms] [file:line [(func)]] NCCL LEVEL msg",
 * or a bare "NCCL INFO msg", or "NCCL version ...". */
static size_t hdr_nccl(const char *s, size_t n, size_t i, teller_log_record *r)
{
    size_t j = i;
    /* what the host part says, taken once the level word is found */
    const char *host = NULL;
    size_t host_n = 0, src0 = 0, src1 = 0;
    int64_t pid = -1, dev = -1;
    if (starts(s, n, i, "NCCL version ")) {
        r->family = TELLER_LOG_NCCL;
        r->level = TELLER_LOGL_INFO;
        return 0; /* the whole line is the message */
    }
    if (!starts(s, n, i, "NCCL ")) {
        size_t h0 = j;
        while (j < n && s[j] != ' ')
            j++;
        /* token must end in ":pid:tid" */
        size_t e = j, c2 = e;
        while (c2 > h0 && is_digit(s[c2 - 1]))
            c2--;
        if (c2 == e || c2 == h0 || s[c2 - 1] != ':')
            return 0;
        size_t c1 = c2 - 1;
        while (c1 > h0 && is_digit(s[c1 - 1]))
            c1--;
        if (c1 == c2 - 1 || c1 == h0 || s[c1 - 1] != ':')
            return 0;
        size_t pp = c1;
        pid = number(s, n, &pp);
        if (j + 2 >= n || s[j + 1] != '[')
            return 0;
        size_t k = j + 2;
        dev = number(s, n, &k);
        if (dev < 0 || k + 1 >= n || s[k] != ']' || s[k + 1] != ' ')
            return 0;
        const char *nc = find(s + k, n - k, " NCCL ");
        if (!nc)
            return 0;
        src0 = k + 2;
        src1 = (size_t)(nc - s);
        /* TRACE lines carry milliseconds first */
        size_t q = src0;
        while (q < src1 && (is_digit(s[q]) || s[q] == '.'))
            q++;
        if (q > src0 && q < src1 && s[q] == ' ')
            src0 = q + 1;
        host = s + h0;
        host_n = c1 - 1 - h0;
        j = src1 + 1;
    }
    /* at "NCCL LEVEL " */
    j += 5;
    static const struct {
        const char *w;
        int l;
    } L[] = {{"INFO ", TELLER_LOGL_INFO},   {"WARN ", TELLER_LOGL_WARNING},
             {"TRACE ", TELLER_LOGL_TRACE}, {"CALL ", TELLER_LOGL_DEBUG},
             {"ABORT ", TELLER_LOGL_CRITICAL}};
    for (size_t k = 0; k < sizeof L / sizeof *L; k++)
        if (starts(s, n, j, L[k].w)) {
            if (host) {
                r->process.p = host;
                r->process.n = host_n;
                if (pid >= 0 && pid <= INT32_MAX)
                    r->pid = (int32_t)pid;
                if (dev <= INT32_MAX)
                    r->device = (int32_t)dev;
                if (src1 > src0) {
                    r->source.p = s + src0;
                    r->source.n = src1 - src0;
                }
            }
            r->family = TELLER_LOG_NCCL;
            r->level = (uint8_t)L[k].l;
            return j + strlen(L[k].w) - i;
        }
    return 0;
}

/* Whether s[i] may start what unknown_prefix looks for: every header it
 * tries and the level word begin with a level word, a '[', "NCCL " or
 * an NCCL host token (one ending in a digit, then " ["). Only the first
 * bytes are looked at, so most fields of a line are passed over at once. */
static int header_may_start(const char *s, size_t n, size_t i)
{
    size_t ll;
    if (s[i] == '[' || s[i] == 'N' || level_word(s, n, i, &ll))
        return 1;
    const char *sp = memchr(s + i, ' ', n - i);
    size_t j = sp ? (size_t)(sp - s) : n;
    return j > i && j + 2 < n && s[j + 1] == '[' && is_digit(s[j - 1]);
}

/* An unknown prefix before a known header or a level word: a launcher's
 * "[1] " before an NCCL line, a date before a uvicorn line. Up to four
 * fields that each hold a digit or are bracketed are passed over to find
 * a header that the line does not start with; what they are is not
 * known, except that "YYYY-MM-DD[T ]hh:mm:ss[.f]" at the start is the
 * time when the header found has none. A known header is read as if the
 * line started there (returns the bytes up to the message); an upper-case
 * level word (INFO, WARN, ERROR ...), there or first on the line, is only taken as the level, the
 * message left whole (returns 0), so that a file's learned header
 * (header.c) still sees the whole line. Message text never has the
 * digit-or-bracket fields in front that this needs. */
static size_t unknown_prefix(const char *s, size_t n, size_t i, teller_log_record *r, log_time *t)
{
    size_t j = i, ll;
    int lv = level_word(s, n, i, &ll);
    if (lv && i + ll < n && s[i + ll] == ' ') { /* "ERROR message": a level first */
        r->level = (uint8_t)lv;
        return 0;
    }
    for (int f = 0; f < 4 && j < n; f++) {
        size_t e = j;
        int ok = 0;
        if (s[j] == '[') {
            const char *c = memchr(s + j, ']', n - j);
            e = c ? (size_t)(c - s) + 1 : j;
            ok = c != NULL;
        }
        if (!ok) {
            while (e < n && s[e] != ' ' && s[e] != '\t') {
                ok |= is_digit(s[e]);
                e++;
            }
        }
        size_t q = e;
        while (q < n && (s[q] == ' ' || s[q] == '\t'))
            q++;
        if (!ok || q == e || q >= n)
            return 0;
        if (!header_may_start(s, n, q)) {
            j = q;
            continue;
        }
        teller_log_record tmp = *r;
        log_time tt = {0};
        size_t k;
        lv = 0;
        if ((k = hdr_vllm(s, n, q, &tmp, &tt)) || (k = hdr_uvicorn(s, n, q, &tmp)) ||
            (k = hdr_glog(s, n, q, &tmp, &tt)) || (k = hdr_nccl(s, n, q, &tmp)) ||
            tmp.family != TELLER_LOG_GENERIC ||
            ((lv = level_word(s, n, q, &ll)) && (q + ll == n || s[q + ll] == ' ' || s[q + ll] == ':'))) {
            if (!tt.have) {
                /* a date and time the prefix starts with */
                log_time pt = {0};
                if (ymd(s, n, i, &pt) && i + 10 < n && (s[i + 10] == ' ' || s[i + 10] == 'T') &&
                    hms(s, n, i + 11, &pt)) {
                    size_t fj = i + 19;
                    frac(s, n, &fj, &pt);
                    tt = pt;
                }
            }
            *t = tt;
            if (lv) {
                r->level = (uint8_t)lv;
                return 0;
            }
            *r = tmp;
            return q + k - i;
        }
        j = q;
    }
    return 0;
}

/* ---- message facts ----------------------------------------------------- */

/* A Python exception line: "pkg.mod.NameError: text" or "NameError". */
int log_is_exception_line(const char *s, size_t n)
{
    size_t j = 0;
    if (j >= n || !(is_alpha(s[j]) || s[j] == '_'))
        return 0;
    while (j < n && (is_alnum(s[j]) || s[j] == '_' || s[j] == '.' ||
                     (s[j] == ':' && j + 1 < n && s[j + 1] == ':' && (j += 1))))
        j++;
    if (j < n && s[j] != ':')
        return 0;
    if (j < n && j + 1 < n && s[j + 1] != ' ')
        return 0;
    static const char *const SUF[] = {"Error", "Exception", "Exit", "Interrupt", "Warning",
                                      "Failure"};
    for (size_t k = 0; k < sizeof SUF / sizeof *SUF; k++) {
        size_t l = strlen(SUF[k]);
        if (j >= l && !memcmp(s + j - l, SUF[k], l))
            return 1;
    }
    return 0;
}

static void add_request(teller_log_record *r, const char *p, size_t l)
{
    if (r->num_requests >= TELLER_LOG_MAX_REQUESTS || l == 0)
        return;
    for (uint32_t k = 0; k < r->num_requests; k++)
        if (r->request[k].n == l && !memcmp(r->request[k].p, p, l))
            return;
    r->request[r->num_requests].p = p;
    r->request[r->num_requests].n = l;
    r->num_requests++;
}

static int id_char(char c) { return is_alnum(c) || c == '_' || c == '-'; }

/* Request ids: "cmpl-<id>", "chatcmpl-<id>" (vLLM/OpenAI), "rid=<id>",
 * "rid='<id>'" (SGLang). An id ends at the first character outside
 * [A-Za-z0-9_-]; a trailing '-' is dropped. */
void log_find_requests(const char *s, size_t n, teller_log_record *r)
{
    for (const char *p = s; (p = find(p, (size_t)(s + n - p), "cmpl-")) != NULL; p += 5) {
        const char *b = p;
        if (b - s >= 4 && !memcmp(b - 4, "chat", 4))
            b -= 4;
        if (b > s && is_alnum(b[-1]))
            continue;
        const char *e = p + 5;
        while (e < s + n && id_char(*e))
            e++;
        while (e > p + 5 && e[-1] == '-')
            e--;
        if (e > p + 5)
            add_request(r, b, (size_t)(e - b));
    }
    for (const char *p = s; (p = find(p, (size_t)(s + n - p), "rid=")) != NULL; p += 4) {
        if (p > s && (is_alnum(p[-1]) || p[-1] == '_'))
            continue;
        const char *b = p + 4;
        if (b < s + n && (*b == '\'' || *b == '"'))
            b++;
        const char *e = b;
        while (e < s + n && id_char(*e))
            e++;
        if (e > b)
            add_request(r, b, (size_t)(e - b));
    }
}

/* The NCCL work a watchdog line names: "SeqNum=N", "at NCCL work: N",
 * "watchdog at work: N". */
static int64_t find_seq(const char *s, size_t n)
{
    static const char *const K[] = {"SeqNum=", "Timeout at NCCL work: ", "watchdog at work: "};
    for (size_t k = 0; k < sizeof K / sizeof *K; k++) {
        const char *p = find(s, n, K[k]);
        if (p) {
            size_t i = (size_t)(p - s) + strlen(K[k]);
            int64_t v = number(s, n, &i);
            if (v >= 0)
                return v;
        }
    }
    return -1;
}

/* "... ran for N milliseconds before timing out": the watchdog's elapsed
 * time of the collective, in ns, else -1. */
static int64_t find_ran(const char *s, size_t n)
{
    const char *p = find(s, n, " ran for ");
    if (!p)
        return -1;
    size_t i = (size_t)(p - s) + 9;
    int64_t v = number(s, n, &i);
    return v >= 0 && v <= INT64_MAX / 1000000 && starts(s, n, i, " milliseconds") ? v * 1000000 : -1;
}

/* The "[Rank N]", "[PG G Rank N]" or "[PG ID I PG GUID G(desc) Rank N]"
 * tag ProcessGroupNCCL starts its messages with. N is the rank within the
 * group: a global rank for the default group (G "0", or "default_pg"), and
 * taken as one for the bare "[Rank N]" of older releases; for any other
 * group r->pg is G and r->pg_rank N, and align.c finds the global rank
 * from the trace's group of that name. */
static void find_pg_tag(const char *s, size_t n, teller_log_record *r)
{
    if (n < 7 || s[0] != '[')
        return;
    const char *e = memchr(s, ']', n < 128 ? n : 128);
    if (!e)
        return;
    size_t m = (size_t)(e - s);
    const char *p = find(s, m, "Rank ");
    if (!p)
        return;
    size_t i = (size_t)(p - s) + 5;
    int64_t v = number(s, n, &i);
    if (v < 0 || v > INT32_MAX || s + i != e)
        return;
    const char *g = find(s, m, "PG GUID ");
    g = g ? g + 8 : starts(s, m, 1, "PG ") ? s + 4 : NULL;
    if (!g) { /* the bare tag */
        r->rank = (int32_t)v;
        return;
    }
    size_t gn = 0;
    while (g + gn < p && g[gn] != ' ' && g[gn] != '(')
        gn++;
    int deflt = (gn == 1 && g[0] == '0') || (g[gn] == '(' && starts(g, (size_t)(p - g), gn, "(default_pg)"));
    if (deflt) {
        r->rank = (int32_t)v;
    } else if (gn) {
        r->pg.p = g;
        r->pg.n = gn;
        r->pg_rank = (int32_t)v;
    }
}

/* ---- time -------------------------------------------------------------- */

static int64_t to_ns(const parse_ctx *c, const log_time *t, int64_t day, uint32_t *flags)
{
    int64_t sec = day * 86400 + t->h * 3600 + t->mi * 60 + t->s;
    if (!t->utc)
        sec -= c->tz_offset_s;
    /* dates that int64 nanoseconds cannot hold (years past 2262) are no time */
    if (sec < -9000000000LL || sec > 9000000000LL) {
        *flags |= TELLER_LOGF_NO_TIME;
        return INT64_MIN;
    }
    return sec * 1000000000 + t->ns;
}

/* Turns the parts of a time into epoch ns and flags, updating the context's
 * last date. */
static void resolve_time(parse_ctx *c, const log_time *t, teller_log_record *r)
{
    if (!t->have) {
        r->flags |= TELLER_LOGF_NO_TIME;
        r->time_ns = INT64_MIN;
        return;
    }
    int64_t tod = t->h * 3600 + t->mi * 60 + t->s;
    int64_t day;
    if (t->has_date) {
        int y = t->y;
        if (!t->has_year && c->last_day != INT64_MIN) {
            /* after a timed line, the year that puts the date nearest its
             * date: a log that runs past New Year goes on into the next */
            y = year_of_day(c->last_day);
            int64_t d = log_days_from_civil(y, t->mo, t->d);
            y += d < c->last_day - 183 ? 1 : d > c->last_day + 183 ? -1 : 0;
            r->flags |= TELLER_LOGF_YEAR_INFERRED;
        } else if (!t->has_year) {
            y = c->ref_year;
            /* a December line read against a January reference is last year's */
            if (c->ref_day != INT64_MIN &&
                log_days_from_civil(y, t->mo, t->d) > c->ref_day + 31)
                y--;
            r->flags |= TELLER_LOGF_YEAR_INFERRED;
        }
        day = log_days_from_civil(y, t->mo, t->d);
    } else {
        r->flags |= TELLER_LOGF_DATE_INFERRED | TELLER_LOGF_YEAR_INFERRED;
        day = c->last_day != INT64_MIN ? c->last_day : (c->ref_day != INT64_MIN ? c->ref_day : 0);
        if (c->last_day != INT64_MIN && c->last_tod - tod > 12 * 3600)
            day++; /* time went back by more than half a day: midnight passed */
    }
    c->last_day = day;
    c->last_tod = tod;
    if (!t->subsec)
        r->flags |= TELLER_LOGF_NO_SUBSEC;
    r->time_ns = to_ns(c, t, day, &r->flags);
}

void log_ctx_init(parse_ctx *c, const teller_log_opts *o)
{
    c->tz_offset_s = o ? o->tz_offset_s : 0;
    int64_t ref = o ? o->ref_ns : 0;
    c->ref_day = ref ? (ref >= 0 ? ref / 86400000000000LL : -((-ref + 86399999999999LL) / 86400000000000LL))
                     : INT64_MIN;
    c->ref_year = c->ref_day != INT64_MIN ? year_of_day(c->ref_day) : 1970;
    c->last_day = INT64_MIN;
    c->last_tod = 0;
    c->layout = NULL;
}

/* ---- the line ---------------------------------------------------------- */

void log_parse_line_ctx(parse_ctx *c, const char *s, size_t n, teller_log_record *r)
{
    memset(r, 0, sizeof *r);
    r->pid = r->rank = r->device = r->pg_rank = -1;
    r->seq = -1;
    r->ran_ns = -1;
    r->num_lines = 1;
    log_time wt = {0}, t = {0};
    int64_t cap_ns = 0;
    size_t cap = log_capture_prefix(s, n, &cap_ns);
    size_t i = cap, k;

    /* wrappers, outside in */
    for (int guard = 0; guard < 8; guard++) {
        if ((k = wrap_docker(s, n, i, &wt)) || (k = wrap_journald(s, n, i, &wt, &r->pid)) ||
            (k = wrap_process(s, n, i, r)) || (k = wrap_rank(s, n, i, &r->rank)) ||
            (k = wrap_mpirun(s, n, i)) || (k = wrap_compose(s, n, i))) {
            i += k;
            continue;
        }
        break;
    }

    /* a tqdm bar glued in front of a vLLM line */
    const char *bar = find(s + i, n - i, "%|");
    if (bar) {
        for (const char *q = bar; q < s + n; q++) {
            teller_log_record tmp = *r;
            log_time tt = {0};
            if (is_alpha(*q) && q[-1] != ' ' && (k = hdr_vllm(s, n, (size_t)(q - s), &tmp, &tt))) {
                i = (size_t)(q - s);
                break;
            }
        }
    }

    int tags = 0;
    if ((k = hdr_vllm(s, n, i, r, &t)) || (k = hdr_uvicorn(s, n, i, r)) || (k = hdr_glog(s, n, i, r, &t))) {
        i += k;
    } else if ((k = hdr_bracket_time(s, n, i, r, &t, &tags))) {
        i += k;
        teller_log_record tmp = *r;
        size_t k2 = tags == 0 ? hdr_nccl(s, n, i, &tmp) : 0;
        if (tmp.family == TELLER_LOG_NCCL) {
            *r = tmp;
            i += k2;
        } else {
            r->family = TELLER_LOG_SGLANG;
            size_t k3 = hdr_uvicorn(s, n, i, &tmp); /* SGLang re-formats uvicorn lines */
            if (k3) {
                r->level = tmp.level;
                i += k3;
            }
        }
    } else {
        i += hdr_nccl(s, n, i, r);
        if (r->family == TELLER_LOG_GENERIC)
            i += unknown_prefix(s, n, i, r, &t);
    }

    r->msg.p = s + i;
    r->msg.n = n - i;
    while (r->msg.n && (r->msg.p[r->msg.n - 1] == ' ' || r->msg.p[r->msg.n - 1] == '\t'))
        r->msg.n--;
    const char *m = r->msg.p;
    size_t mn = r->msg.n;

    if (r->family == TELLER_LOG_GENERIC) {
        log_time ht = {0};
        size_t h = log_layout_strip(c->layout, m, mn, &r->level, &ht);
        if (ht.have && !t.have)
            t = ht;
        m += h;
        mn -= h;
        r->msg.p = m;
        r->msg.n = mn;
        if (starts(m, mn, 0, "Traceback (most recent call last):")) {
            r->family = TELLER_LOG_TRACEBACK;
            r->level = TELLER_LOGL_ERROR;
        } else if (starts(m, mn, 0, "Prefill batch") || starts(m, mn, 0, "Decode batch")) {
            r->family = TELLER_LOG_SGLANG;
        } else if ((starts(m, mn, 0, "Exception raised from ") &&
                    find(m, mn, "ProcessGroupNCCL")) ||
                   starts(m, mn, 0, "terminate called after throwing an instance of 'c10::")) {
            r->family = TELLER_LOG_TORCH;
            r->level = TELLER_LOGL_ERROR;
        } else if (log_is_exception_line(m, mn)) {
            r->level = TELLER_LOGL_ERROR;
        }
    }
    if (wt.have && (!t.have || (wt.subsec && !t.subsec))) {
        t = wt;
        r->flags |= TELLER_LOGF_WRAPPER_TIME;
    }
    resolve_time(c, &t, r); /* also for a captured line: it keeps the last date current */
    if (cap) {
        r->time_ns = cap_ns;
        r->flags &= ~(uint32_t)(TELLER_LOGF_NO_TIME | TELLER_LOGF_YEAR_INFERRED | TELLER_LOGF_DATE_INFERRED |
                                TELLER_LOGF_NO_SUBSEC | TELLER_LOGF_WRAPPER_TIME);
        r->flags |= TELLER_LOGF_CAPTURE_TIME;
    }

    if (r->rank < 0 && r->family == TELLER_LOG_TORCH)
        find_pg_tag(m, mn, r);
    if (r->family == TELLER_LOG_TORCH || find(m, mn, "SeqNum=")) {
        r->seq = find_seq(m, mn);
        r->ran_ns = find_ran(m, mn);
    }
    log_find_requests(m, mn, r);
    r->key = r->msg;
}

void teller_log_parse_line(const char *line, size_t len, const teller_log_opts *opts,
                           teller_log_record *out)
{
    parse_ctx c;
    log_ctx_init(&c, opts);
    log_parse_line_ctx(&c, line, len, out);
}

teller_log_opts teller_log_defaults(void)
{
    teller_log_opts o = {0, 0, 64 * 1024};
    return o;
}

const char *teller_log_family_name(teller_log_family f)
{
    static const char *const N[TELLER_LOG_FAMILY_COUNT] = {"generic", "vllm",    "sglang",
                                                            "torch",   "nccl",    "uvicorn",
                                                            "traceback"};
    return (unsigned)f < TELLER_LOG_FAMILY_COUNT ? N[f] : "?";
}

const char *teller_log_level_name(teller_log_level l)
{
    static const char *const N[TELLER_LOGL_COUNT] = {"",        "TRACE", "DEBUG",   "INFO",
                                                      "WARNING", "ERROR", "CRITICAL"};
    return (unsigned)l < TELLER_LOGL_COUNT ? N[l] : "?";
}
