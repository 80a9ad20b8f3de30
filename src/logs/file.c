/*
 * file.c - one log file through the streaming reader.
 *
 * The file is read through zlib's gzread, which passes plain bytes through
 * and inflates gzip (a rotated `app.log.1.gz`) on the fly, so both read
 * the same. What is not a log is refused by name before any record goes
 * out: a directory, an Nsight Systems SQLite export, a teller .tlt capture,
 * a Kineto / Chrome-trace JSON (plain or gzip), an xz, zstd or bzip2
 * file (named, to be decompressed first). A file whose lines are mostly
 * binary (another compression, an image, random bytes: more binary lines
 * than text ones, reader.c says which are) ends in an error rather than in
 * records made of its few lines that pass for text; the binary lines of a
 * text log are skipped and counted (teller_log_stats.binary) for the caller
 * to say. A callback that stops with -status (see teller_log_fn) makes this
 * call return that status.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

#include "logs_internal.h"
#include "../collect/tlt_format.h"

enum { CHUNK = 1 << 18 };

static const char *find_in(const char *s, size_t n, const char *lit)
{
    size_t l = strlen(lit);
    for (size_t i = 0; i + l <= n; i++)
        if (s[i] == lit[0] && !memcmp(s + i, lit, l))
            return s + i;
    return NULL;
}

/* What the first bytes of a file are when not a log (a trace, another
 * compression), or NULL. A
 * JSON trace is an object or array whose first chunk names traceEvents or
 * holds Chrome-trace events ("ph"); a JSON-lines log does neither. */
static const char *not_a_log(const char *s, size_t n)
{
    if (n >= 16 && !memcmp(s, "SQLite format 3", 16))
        return "an Nsight Systems SQLite export, not a log (give it as a trace)";
    if (n >= 8 && !memcmp(s, TLT_MAGIC, 8))
        return "a teller .tlt capture, not a log (give it as a trace)";
    if (n >= 6 && !memcmp(s, "\xfd" "7zXZ\0", 6))
        return "xz-compressed (only gzip is read as it is; decompress it first)";
    if (n >= 4 && !memcmp(s, "\x28\xb5\x2f\xfd", 4))
        return "zstd-compressed (only gzip is read as it is; decompress it first)";
    if (n >= 4 && !memcmp(s, "BZh", 3) && s[3] >= '1' && s[3] <= '9')
        return "bzip2-compressed (only gzip is read as it is; decompress it first)";
    size_t i = 0;
    while (i < n && (s[i] == ' ' || s[i] == '\t' || s[i] == '\r' || s[i] == '\n'))
        i++;
    if (i < n && (s[i] == '{' || s[i] == '[') &&
        (find_in(s + i, n - i, "\"traceEvents\"") || find_in(s + i, n - i, "\"ph\":\"") ||
         find_in(s + i, n - i, "\"ph\": \"")))
        return "a Kineto / Chrome-trace JSON, not a log (give it as a trace)";
    return NULL;
}

/* The caller's callback, and whether it asked to stop: the rest of the
 * file is then not read. */
typedef struct relay {
    teller_log_fn fn;
    void         *ctx;
    int           stop;
} relay;

static int relay_record(void *ctx, const teller_log_record *rec)
{
    relay *r = ctx;
    int rc = r->fn ? r->fn(r->ctx, rec) : 0;
    if (rc)
        r->stop = 1;
    return rc;
}

teller_status teller_log_read_file(const char *path, const teller_log_opts *opts, teller_log_fn fn,
                                   void *ctx, teller_log_stats *stats, teller_error *err)
{
    if (stats)
        memset(stats, 0, sizeof *stats);
    if (!path)
        return teller_error_set(err, TELLER_ERR_ARG, "", 0, "log reader: no path");
    struct stat sb;
    if (stat(path, &sb) != 0)
        return teller_error_set(err, TELLER_ERR_IO, path, 0, "cannot open log");
    if (S_ISDIR(sb.st_mode))
        return teller_error_set(err, TELLER_ERR_ARG, path, 0, "is a directory, not a log file");
    gzFile gz = gzopen(path, "rb");
    if (!gz)
        return teller_error_set(err, TELLER_ERR_IO, path, 0, "cannot open log");
    teller_log_reader *r = teller_log_reader_create(opts);
    char *buf = malloc(CHUNK);
    if (!r || !buf) {
        gzclose(gz);
        free(buf);
        teller_log_reader_free(r);
        return teller_error_set(err, TELLER_ERR_NOMEM, path, 0, "out of memory");
    }
    teller_status st = TELLER_OK;
    uint64_t off = 0;
    relay rl = {fn, ctx, 0};
    while (!rl.stop) {
        int got = gzread(gz, buf, CHUNK);
        if (got < 0) {
            int zerr;
            const char *m = gzerror(gz, &zerr);
            st = teller_error_set(err, TELLER_ERR_IO, path, off, "read failed: %s",
                                  zerr == Z_ERRNO ? "I/O error" : m);
            break;
        }
        if (got == 0) {
            int zerr;
            gzerror(gz, &zerr);
            if (zerr == Z_BUF_ERROR) /* the gzip stream stops before its end */
                st = teller_error_set(err, TELLER_ERR_FORMAT, path, off,
                                      "the gzip stream ends early, after %llu bytes of text: the file is cut short",
                                      (unsigned long long)off);
            break;
        }
        if (off == 0) {
            const char *kind = not_a_log(buf, (size_t)got);
            if (kind) {
                st = teller_error_set(err, TELLER_ERR_FORMAT, path, 0, "is %s", kind);
                break;
            }
        }
        st = teller_log_reader_feed(r, buf, (size_t)got, relay_record, &rl, err);
        off += (uint64_t)got;
        if (st != TELLER_OK)
            break;
    }
    if (st == TELLER_OK && !rl.stop)
        st = teller_log_reader_finish(r, relay_record, &rl, err);
    if (st != TELLER_OK && err && !err->file[0])
        snprintf(err->file, sizeof err->file, "%s", path);
    const teller_log_stats *s = teller_log_reader_stats(r);
    if (st == TELLER_OK && s->binary > 0 && s->binary * 2 > s->lines - s->blank)
        st = teller_error_set(err, TELLER_ERR_FORMAT, path, 0,
                              "not a text log: %llu of its %llu lines are binary (NUL, control bytes or not "
                              "UTF-8): binary, or compressed other than gzip",
                              (unsigned long long)s->binary, (unsigned long long)(s->lines - s->blank));
    if (stats)
        *stats = *s;
    teller_log_reader_free(r);
    gzclose(gz);
    free(buf);
    return st;
}
