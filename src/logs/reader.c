/*
 * reader.c - the streaming log reader: bytes in, records out.
 *
 * Bytes arrive in pieces of any size. They are cut into lines; a line
 * longer than max_record_bytes keeps its first max_record_bytes bytes and
 * the rest is dropped up to the newline, so memory stays at three buffers
 * of that size whatever the input. Each line is cleaned (carriage-return
 * redraws resolved to what a terminal shows, ANSI escapes removed, other
 * control bytes turned into spaces, invalid UTF-8 bytes into '?'), binary
 * lines (a NUL, or more than a quarter of the bytes control bytes or not
 * UTF-8) are counted and skipped, and the rest is parsed by logline.c. A `teller run` capture
 * prefix ("<epoch ns> ") is left out of the cleaning and of the blank test:
 * the captured line behind it is what is cleaned and judged. A line that
 * lies whole in a fed piece and is all printable ASCII (most lines) is
 * read where it lies, copied into neither buffer.
 *
 * Python tracebacks become one record. A record whose message is
 * "Traceback (most recent call last):" opens one; the lines that follow
 * from the same process (same pid and rank) join it while they are
 * indented, blank, or chained-exception notes, and the first exception line
 * ("pkg.SomeError: text") closes it. vLLM repeats its header on every line
 * of a traceback, so this works on messages after their headers. A closed
 * traceback is held for one more line in case "During handling of the above
 * exception" follows and reopens it. Its message is all its message lines
 * joined by '\n'; its key (for template mining) is the exception line.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "logs_internal.h"

enum { TB_NONE = 0, TB_OPEN, TB_ENDED };

struct teller_log_reader {
    teller_log_opts  opts;
    parse_ctx        ctx;
    teller_log_stats stats;
    size_t           cap;      /* max_record_bytes */
    char            *line;     /* the line being assembled */
    size_t           len;
    int              overflow; /* the current line passed cap */
    char            *clean;    /* a line that needed cleaning, cleaned */
    int              stopped;
    int              cb_status; /* the teller_status a callback stopped with (it returned -status) */
    uint64_t         cb_line;   /* the line of the record it was given */
    /* the open traceback */
    int              tb;
    teller_log_record tb_rec;
    char            *tb_buf;
    size_t           tb_len;
    size_t           tb_key;   /* offset of the last exception line in tb_buf */
    size_t           tb_key_len;
    char             tb_proc[128];
    char             tb_src[256];
    /* the first lines, held back until the file's header is learned */
    int              learning;
    char            *learn_buf;
    size_t           learn_len, nlearn;
    uint32_t         learn_end[LOG_LAYOUT_SAMPLES];
    uint8_t          learn_trunc[LOG_LAYOUT_SAMPLES];
    log_layout_sampler sampler;
    log_layout       layout;
};

enum { LEARN_BYTES = 64 * 1024 };

teller_log_reader *teller_log_reader_create(const teller_log_opts *opts)
{
    teller_log_reader *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    r->opts = opts ? *opts : teller_log_defaults();
    if (r->opts.max_record_bytes == 0)
        r->opts.max_record_bytes = 64 * 1024;
    r->cap = r->opts.max_record_bytes;
    log_ctx_init(&r->ctx, &r->opts);
    r->line = malloc(r->cap + 1);
    r->clean = malloc(r->cap + 1);
    r->tb_buf = malloc(r->cap + 1);
    r->learn_buf = malloc(LEARN_BYTES);
    r->learning = 1;
    if (!r->line || !r->clean || !r->tb_buf || !r->learn_buf) {
        teller_log_reader_free(r);
        return NULL;
    }
    return r;
}

void teller_log_reader_free(teller_log_reader *r)
{
    if (!r)
        return;
    free(r->line);
    free(r->clean);
    free(r->tb_buf);
    free(r->learn_buf);
    free(r);
}

const teller_log_stats *teller_log_reader_stats(const teller_log_reader *r)
{
    return &r->stats;
}

static int emit(teller_log_reader *r, const teller_log_record *rec, teller_log_fn fn, void *ctx)
{
    r->stats.records++;
    r->stats.by_family[rec->family < TELLER_LOG_FAMILY_COUNT ? rec->family : 0]++;
    if (rec->flags & TELLER_LOGF_TRUNCATED)
        r->stats.truncated++;
    if (rec->flags & TELLER_LOGF_NO_TIME)
        r->stats.no_time++;
    int rc = fn ? fn(ctx, rec) : 0;
    if (rc) {
        r->stopped = 1;
        if (rc < 0 && !r->cb_status) {
            r->cb_status = rc >= -(int)TELLER_ERR_LIMIT ? -rc : (int)TELLER_ERR_ARG;
            r->cb_line = rec->line;
        }
    }
    return r->stopped;
}

static int tb_flush(teller_log_reader *r, teller_log_fn fn, void *ctx)
{
    if (r->tb == TB_NONE)
        return 0;
    r->tb = TB_NONE;
    teller_log_record *t = &r->tb_rec;
    t->msg.p = r->tb_buf;
    t->msg.n = r->tb_len;
    t->key.p = r->tb_buf + r->tb_key;
    t->key.n = r->tb_key_len;
    t->num_requests = 0;
    log_find_requests(t->msg.p, t->msg.n, t);
    return emit(r, t, fn, ctx);
}

static void tb_append(teller_log_reader *r, const teller_log_record *rec)
{
    size_t need = rec->msg.n + (r->tb_len ? 1 : 0);
    r->tb_rec.num_lines++;
    if (r->tb_len + need > r->cap) {
        r->tb_rec.flags |= TELLER_LOGF_TRUNCATED;
        return;
    }
    if (r->tb_len)
        r->tb_buf[r->tb_len++] = '\n';
    memcpy(r->tb_buf + r->tb_len, rec->msg.p, rec->msg.n);
    r->tb_len += rec->msg.n;
    r->tb_rec.flags |= rec->flags & (TELLER_LOGF_ANSI | TELLER_LOGF_BAD_UTF8 | TELLER_LOGF_TRUNCATED);
}

/* Makes room for a last line of n bytes (at most cap: lines are cut
 * there) after what the traceback holds, by cutting the frames at its end
 * to a line "...": the exception line, the record's key, always stays. */
static void tb_make_room(teller_log_reader *r, size_t n)
{
    static const char cut[] = "...";
    if (r->tb_len + 1 + n <= r->cap)
        return;
    size_t keep = r->cap >= n + sizeof cut + 1 ? r->cap - n - sizeof cut - 1 : 0, p = 0;
    for (size_t i = keep < r->tb_len ? keep : r->tb_len; i > 0; i--)
        if (r->tb_buf[i - 1] == '\n') {
            p = i - 1;
            break;
        }
    if (p > 0)
        p++; /* after the newline that ends the frames kept */
    memcpy(r->tb_buf + p, cut, sizeof cut - 1);
    r->tb_len = p + sizeof cut - 1;
    if (r->tb_len + 1 + n > r->cap) /* no room for even the cut line */
        r->tb_len = 0;
    r->tb_rec.flags |= TELLER_LOGF_TRUNCATED;
}

static void copy_slice(teller_log_str *dst, char *buf, size_t cap)
{
    size_t n = dst->n < cap ? dst->n : cap;
    if (n)
        memcpy(buf, dst->p, n);
    dst->p = buf;
    dst->n = n;
}

static void tb_open(teller_log_reader *r, const teller_log_record *rec)
{
    r->tb = TB_OPEN;
    r->tb_rec = *rec;
    r->tb_rec.family = TELLER_LOG_TRACEBACK;
    if (r->tb_rec.level < TELLER_LOGL_ERROR)
        r->tb_rec.level = TELLER_LOGL_ERROR;
    r->tb_rec.num_lines = 0;
    r->tb_rec.pg = (teller_log_str){0}; /* a traceback names no group */
    r->tb_rec.pg_rank = -1;
    copy_slice(&r->tb_rec.process, r->tb_proc, sizeof r->tb_proc);
    copy_slice(&r->tb_rec.source, r->tb_src, sizeof r->tb_src);
    r->tb_len = 0;
    tb_append(r, rec);
    r->tb_key = 0;
    r->tb_key_len = r->tb_len;
}

static int same_process(const teller_log_record *a, const teller_log_record *b)
{
    return a->pid == b->pid && a->rank == b->rank;
}

static int is_continuation(const teller_log_record *rec)
{
    const char *m = rec->msg.p;
    size_t n = rec->msg.n;
    if (n == 0 || m[0] == ' ' || m[0] == '\t' || m[0] == '^' || m[0] == '~')
        return 1;
    static const char *const K[] = {"Traceback (most recent call last):",
                                    "During handling of the above exception",
                                    "The above exception was the direct cause"};
    for (size_t k = 0; k < sizeof K / sizeof *K; k++) {
        size_t l = strlen(K[k]);
        if (n >= l && !memcmp(m, K[k], l))
            return 1;
    }
    return 0;
}

static int is_chain_note(const teller_log_record *rec)
{
    return (rec->msg.n >= 10 && !memcmp(rec->msg.p, "During han", 10)) ||
           (rec->msg.n >= 10 && !memcmp(rec->msg.p, "The above ", 10));
}

/* How many bytes s[0..n) starts with that are printable ASCII (0x20 to
 * 0x7e): eight at a time, where a word's byte below 0x20 shows as a borrow
 * into its top bit and one above 0x7e as a carry into it or its own. */
static size_t plain_run(const char *s, size_t n)
{
    const uint64_t ones = 0x0101010101010101u, tops = 0x8080808080808080u;
    size_t i = 0;
    for (uint64_t w; i + 8 <= n; i += 8) {
        memcpy(&w, s + i, 8);
        if ((((w - 0x20 * ones) & ~w) | (w + ones) | w) & tops)
            break;
    }
    while (i < n && (unsigned char)s[i] >= 0x20 && (unsigned char)s[i] < 0x7f)
        i++;
    return i;
}

/* Cleans raw[0..n): *line is raw itself when it is all printable ASCII
 * (most lines: nothing to clean, nothing to copy), else r->clean with the
 * cleaned bytes. Returns the length, or SIZE_MAX for a binary line.
 * Random bytes without a NUL are about 10 % control bytes and 45 % bytes
 * that are not UTF-8: counting both, such a line is binary (a text line in
 * another 8-bit encoding has a few such bytes, not a quarter). */
static size_t clean_line(teller_log_reader *r, const char *raw, size_t n, uint32_t *flags,
                         const char **line)
{
    if (plain_run(raw, n) == n) {
        *line = raw;
        return n;
    }
    *line = r->clean;
    /* `teller run`'s capture prefix is kept as it is; what follows it is
     * the captured line, and a redraw inside that must not lose the prefix */
    size_t pre = log_capture_prefix(raw, n, NULL);
    memcpy(r->clean, raw, pre);
    raw += pre;
    n -= pre;
    /* a carriage return inside the line redraws it: keep what is shown last */
    const char *cr = NULL;
    for (const char *p = raw; (p = memchr(p, '\r', (size_t)(raw + n - p))) != NULL; p++)
        if (p + 1 < raw + n)
            cr = p;
    if (cr) {
        n -= (size_t)(cr + 1 - raw);
        raw = cr + 1;
    }
    size_t ctrl = 0, o = pre; /* control bytes and bytes that are not UTF-8 */
    char *out = r->clean;
    for (size_t i = 0; i < n;) {
        unsigned char c = (unsigned char)raw[i];
        if (c >= 0x20 && c < 0x7f) { /* plain ASCII, copied a run at a time */
            size_t k = plain_run(raw + i, n - i);
            memcpy(out + o, raw + i, k);
            o += k;
            i += k;
            continue;
        }
        if (c == 0)
            return SIZE_MAX;
        if (c == 0x1b) { /* ESC: CSI "ESC [ ... final", OSC "ESC ] ... BEL|ESC \", else 2 bytes */
            *flags |= TELLER_LOGF_ANSI;
            i++;
            if (i < n && raw[i] == '[') {
                i++;
                while (i < n && !((unsigned char)raw[i] >= 0x40 && (unsigned char)raw[i] <= 0x7e))
                    i++;
                i++;
            } else if (i < n && raw[i] == ']') {
                while (i < n && raw[i] != 7 && !(raw[i] == 0x1b && i + 1 < n && raw[i + 1] == '\\'))
                    i++;
                i += i < n && raw[i] == 7 ? 1 : 2;
            } else {
                i++;
            }
            continue;
        }
        if (c < 0x20 || c == 0x7f) {
            if (c != '\t' && c != '\r')
                ctrl++;
            out[o++] = ' ';
            i++;
            continue;
        }
        if (c < 0x80) {
            out[o++] = (char)c;
            i++;
            continue;
        }
        /* UTF-8: validate one sequence */
        size_t len = c >= 0xf0 && c <= 0xf4 ? 4 : c >= 0xe0 ? 3 : c >= 0xc2 && c < 0xe0 ? 2 : 0;
        int ok = len > 0 && i + len <= n;
        for (size_t k = 1; ok && k < len; k++)
            ok = ((unsigned char)raw[i + k] & 0xc0) == 0x80;
        if (ok && len == 3) {
            unsigned char c1 = (unsigned char)raw[i + 1];
            ok = !(c == 0xe0 && c1 < 0xa0) && !(c == 0xed && c1 >= 0xa0);
        }
        if (ok && len == 4) {
            unsigned char c1 = (unsigned char)raw[i + 1];
            ok = !(c == 0xf0 && c1 < 0x90) && !(c == 0xf4 && c1 >= 0x90);
        }
        if (ok) {
            memcpy(out + o, raw + i, len);
            o += len;
            i += len;
        } else {
            *flags |= TELLER_LOGF_BAD_UTF8;
            out[o++] = '?';
            ctrl++;
            i++;
        }
    }
    if (ctrl * 4 > n)
        return SIZE_MAX;
    return o;
}

static int process_line(teller_log_reader *r, const char *raw, size_t n, int truncated,
                        teller_log_fn fn, void *ctx)
{
    r->stats.lines++;
    while (n && raw[n - 1] == '\r')
        n--;
    uint32_t flags = truncated ? TELLER_LOGF_TRUNCATED : 0;
    const char *line;
    size_t m = clean_line(r, raw, n, &flags, &line);
    if (m == SIZE_MAX) {
        r->stats.binary++;
        return 0;
    }
    if (flags & TELLER_LOGF_ANSI)
        r->stats.ansi++;
    if (flags & TELLER_LOGF_BAD_UTF8)
        r->stats.bad_utf8++;
    size_t b = log_capture_prefix(line, m, NULL); /* a captured empty line is blank too */
    while (b < m && (line[b] == ' ' || line[b] == '\t'))
        b++;
    if (b == m) {
        r->stats.blank++;
        return 0; /* a blank line never closes nor extends a traceback */
    }
    teller_log_record rec;
    log_parse_line_ctx(&r->ctx, line, m, &rec);
    rec.line = r->stats.lines;
    rec.flags |= flags;

    if (r->tb != TB_NONE && same_process(&r->tb_rec, &rec)) {
        if (r->tb == TB_OPEN && is_continuation(&rec)) {
            tb_append(r, &rec);
            return 0;
        }
        if (r->tb == TB_OPEN && log_is_exception_line(rec.msg.p, rec.msg.n)) {
            tb_make_room(r, rec.msg.n);
            size_t at = r->tb_len + (r->tb_len ? 1 : 0);
            tb_append(r, &rec);
            if (at + rec.msg.n <= r->tb_len) {
                r->tb_key = at;
                r->tb_key_len = rec.msg.n;
            }
            r->tb = TB_ENDED;
            return 0;
        }
        if (r->tb == TB_ENDED && is_chain_note(&rec)) {
            tb_append(r, &rec);
            r->tb = TB_OPEN;
            return 0;
        }
    }
    if (r->tb != TB_NONE && (r->tb == TB_ENDED || same_process(&r->tb_rec, &rec)) &&
        tb_flush(r, fn, ctx))
        return 1;
    if (rec.family == TELLER_LOG_TRACEBACK ||
        (rec.msg.n >= 34 && !memcmp(rec.msg.p, "Traceback (most recent call last):", 34))) {
        if (r->tb != TB_NONE && tb_flush(r, fn, ctx))
            return 1;
        tb_open(r, &rec);
        return 0;
    }
    return emit(r, &rec, fn, ctx);
}

/* A held-back line's message goes to the header sampler when no known
 * header matched it and it is not indented (a stack frame, a wrapped
 * continuation: lines that have no header of their own). Parsing here
 * must not move the reader's date. */
static void sample_line(teller_log_reader *r, const char *raw, size_t n)
{
    while (n && raw[n - 1] == '\r')
        n--;
    uint32_t flags = 0;
    const char *line;
    size_t m = clean_line(r, raw, n, &flags, &line);
    if (m == SIZE_MAX)
        return;
    parse_ctx c = r->ctx;
    c.layout = NULL;
    teller_log_record rec;
    log_parse_line_ctx(&c, line, m, &rec);
    if (rec.family == TELLER_LOG_GENERIC && rec.msg.n && rec.msg.p[0] != ' ')
        log_layout_sample(&r->sampler, rec.msg.p, rec.msg.n);
}

/* Learns the header from the held-back lines, then reads them. */
static int end_learning(teller_log_reader *r, teller_log_fn fn, void *ctx)
{
    r->learning = 0;
    log_layout_learn(&r->sampler, &r->layout);
    if (r->layout.n)
        r->ctx.layout = &r->layout;
    size_t b = 0;
    for (size_t i = 0; i < r->nlearn && !r->stopped; i++) {
        process_line(r, r->learn_buf + b, r->learn_end[i] - b, r->learn_trunc[i], fn, ctx);
        b = r->learn_end[i];
    }
    r->nlearn = r->learn_len = 0;
    return r->stopped;
}

/* A whole input line: held back while learning, else read. */
static int take_line(teller_log_reader *r, const char *raw, size_t n, int truncated, teller_log_fn fn,
                     void *ctx)
{
    if (r->learning) {
        if (r->nlearn < LOG_LAYOUT_SAMPLES && r->learn_len + n <= LEARN_BYTES) {
            memcpy(r->learn_buf + r->learn_len, raw, n);
            r->learn_len += n;
            r->learn_end[r->nlearn] = (uint32_t)r->learn_len;
            r->learn_trunc[r->nlearn] = (uint8_t)truncated;
            r->nlearn++;
            sample_line(r, raw, n);
            return r->nlearn < LOG_LAYOUT_SAMPLES ? 0 : end_learning(r, fn, ctx);
        }
        if (end_learning(r, fn, ctx))
            return 1;
    }
    return process_line(r, raw, n, truncated, fn, ctx);
}

/* A callback that returned -status stopped the reading: that status comes
 * back from every later feed and finish. */
static teller_status callback_status(const teller_log_reader *r, teller_error *err)
{
    if (!r->cb_status)
        return TELLER_OK;
    teller_status st = teller_error_set(err, (teller_status)r->cb_status, "", 0,
                                        "record callback failed at line %llu: %s",
                                        (unsigned long long)r->cb_line,
                                        teller_status_str((teller_status)r->cb_status));
    if (err)
        err->line = r->cb_line;
    return st;
}

teller_status teller_log_reader_feed(teller_log_reader *r, const void *buf, size_t len,
                                     teller_log_fn fn, void *ctx, teller_error *err)
{
    if (!r || (!buf && len))
        return teller_error_set(err, TELLER_ERR_ARG, "", 0, "log reader: no reader or buffer");
    const char *p = buf, *end = p + len;
    while (p < end && !r->stopped) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t chunk = (size_t)((nl ? nl : end) - p);
        if (nl && r->len == 0 && chunk <= r->cap) {
            /* a whole line in the input and nothing pending: read in place */
            take_line(r, p, chunk, 0, fn, ctx);
            p = nl + 1;
            continue;
        }
        size_t room = r->cap - r->len;
        size_t take = chunk < room ? chunk : room;
        if (chunk > room)
            r->overflow = 1;
        if (take)
            memcpy(r->line + r->len, p, take);
        r->len += take;
        if (!nl)
            break;
        take_line(r, r->line, r->len, r->overflow, fn, ctx);
        r->len = 0;
        r->overflow = 0;
        p = nl + 1;
    }
    return callback_status(r, err);
}

teller_status teller_log_reader_finish(teller_log_reader *r, teller_log_fn fn, void *ctx,
                                       teller_error *err)
{
    if (!r)
        return teller_error_set(err, TELLER_ERR_ARG, "", 0, "log reader: no reader");
    if (!r->stopped && (r->len || r->overflow)) {
        take_line(r, r->line, r->len, r->overflow, fn, ctx);
        r->len = 0;
        r->overflow = 0;
    }
    if (!r->stopped && r->learning)
        end_learning(r, fn, ctx);
    if (!r->stopped)
        tb_flush(r, fn, ctx);
    return callback_status(r, err);
}
