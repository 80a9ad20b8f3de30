/*
 * follow.c - the watcher's reading side: the .tlt files and log files of
 * the directories it follows, read as they grow, into each rank's records
 * and step markers (watch_internal.h).
 *
 * A .tlt file is read by appending what is new to a buffer and walking
 * the whole chunks in it (tlt_chunk.c, the file reader's walk); a chunk
 * the collector is still writing stays in the buffer until the rest
 * comes. A rank is the files of one host and RANK (the collector's NOTE),
 * so a restarted collector's new file goes on the same rank; a file with
 * no RANK is a rank of its own. A log line is taken when its newline is
 * there; a log file replaced at its path (rotated) is read to its end
 * first, one cut shorter (copied and truncated) is read again from 0.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "watch_internal.h"
#include "../logs/logs_internal.h"
#include "../util/vec.h"

#define READ_CHUNK (1u << 20)
/* the most read of one file in one pass: a long backlog (a watch begun
 * late) is taken a piece at a time, each diagnosed and released (4 MiB of
 * zstd chunks hold up to about 50 MiB of records) */
#define READ_BUDGET (4u << 20)
#define MAX_LOG_LINE (64u << 10)
#define LOG_AHEAD_NS 10000000000LL
/* a file that has not grown for this long while a newer file of its rank
 * has begun is a restarted collector's old one (two flush intervals) */
#define RESTART_QUIET_NS 2000000000LL

static int has_suffix(const char *s, const char *suf)
{
    size_t n = strlen(s), k = strlen(suf);
    return n >= k && !strcmp(s + n - k, suf);
}

static void skip(teller_watch *w, teller_watch_skip what, uint64_t n, const char *file, uint64_t at, const char *msg)
{
    w->stats.skipped++;
    if (w->o.cb.skip)
        w->o.cb.skip(w->o.cb.ctx, what, n, file, at, msg);
}

/* ---- ranks ---- */

static wrank *rank_for(teller_watch *w, const char *host, int32_t rank, const char *path)
{
    for (size_t i = 0; i < w->nranks; i++) {
        wrank *r = w->ranks[i];
        if (rank >= 0 ? r->rank == rank && !strcmp(r->host, host) : !strcmp(r->name, path))
            return r;
    }
    wrank *r = calloc(1, sizeof *r);
    if (!r || TELLER_GROW(w->ranks, w->ranks_cap, w->nranks + 1)) {
        free(r);
        return NULL;
    }
    snprintf(r->host, sizeof r->host, "%s", host);
    snprintf(r->name, sizeof r->name, "%s", path);
    r->rank = rank;
    r->last_step_wall = w->start_wall;
    tlt_strtab_init(&r->strs);
    w->ranks[w->nranks++] = r;
    w->stats.ranks++;
    return r;
}

void watch_rank_free(wrank *r)
{
    if (!r)
        return;
    tlt_strtab_free(&r->strs);
    free(r->recs);
    free(r->mk);
    free(r->is_marker);
    free(r);
}

/* 1 when the rank's name id is a step marker's (the tree's pattern). */
static int is_marker_name(teller_watch *w, wrank *r, uint32_t id)
{
    if (id >= r->is_marker_cap) {
        size_t old = r->is_marker_cap;
        if (TELLER_GROW(r->is_marker, r->is_marker_cap, (size_t)id + 1))
            return 0;
        memset(r->is_marker + old, 0, r->is_marker_cap - old);
    }
    if (!r->is_marker[id])
        r->is_marker[id] = regexec(&w->step_re, tlt_strtab_str(&r->strs, id), 0, NULL, 0) == 0 ? 1 : 2;
    return r->is_marker[id] == 1;
}

/* A range that is a step marker: kept in start order; one inside another
 * on its thread is not a step (the tree's outermost rule), one around
 * earlier ones replaces them. */
static int add_marker(wrank *r, const tlt_rec *x, uint64_t chunk, int64_t now)
{
    wmark m = {x->start, x->end, (int32_t)x->dev, (int32_t)x->stream, chunk, now};
    size_t i = r->nmk;
    while (i > 0 && r->mk[i - 1].start > m.start)
        i--;
    if (i > 0 && r->mk[i - 1].pid == m.pid && r->mk[i - 1].tid == m.tid && r->mk[i - 1].end >= m.end)
        return 0; /* nested in the one before */
    size_t j = i;
    while (j < r->nmk && r->mk[j].pid == m.pid && r->mk[j].tid == m.tid && r->mk[j].end <= m.end)
        j++; /* markers it holds */
    if (j == i) {
        if (TELLER_GROW(r->mk, r->mk_cap, r->nmk + 1))
            return -1;
        memmove(r->mk + i + 1, r->mk + i, (r->nmk - i) * sizeof *r->mk);
        r->nmk++;
    } else {
        memmove(r->mk + i + 1, r->mk + j, (r->nmk - j) * sizeof *r->mk);
        r->nmk -= j - i - 1;
    }
    r->mk[i] = m;
    return 0;
}

static int is_cpu_kind(uint8_t k)
{
    return k == TLT_REC_RUNTIME || k == TLT_REC_DRIVER || k == TLT_REC_RANGE || k == TLT_REC_MARK ||
           k == TLT_REC_OVERHEAD || k == TLT_REC_MARKER;
}

/* ---- .tlt files ---- */

static int file_string(void *ctx, uint32_t id, const char *s, size_t len)
{
    wfile *f = ctx;
    uint32_t lid = tlt_strtab_intern(&f->strs, s, len);
    if (lid == UINT32_MAX)
        return -1;
    if (id >= f->smap_cap) {
        size_t old = f->smap_cap;
        if (TELLER_GROW(f->smap, f->smap_cap, (size_t)id + 1))
            return -1;
        memset(f->smap + old, 0, (f->smap_cap - old) * sizeof *f->smap);
    }
    f->smap[id] = lid;
    return 0;
}

typedef struct note_ctx {
    char    host[64];
    int32_t rank;
} note_ctx;

static void file_note(void *ctx, const char *k, size_t kl, const char *v, size_t vl)
{
    note_ctx *n = ctx;
    if (kl == 4 && !memcmp(k, "host", 4))
        snprintf(n->host, sizeof n->host, "%.*s", (int)(vl < sizeof n->host ? vl : sizeof n->host - 1), v);
    else if (kl == 4 && !memcmp(k, "RANK", 4) && vl && vl < 8) {
        char num[8] = {0};
        memcpy(num, v, vl);
        char *e;
        long x = strtol(num, &e, 10);
        if (*e == 0 && x >= 0)
            n->rank = (int32_t)x;
    }
}

/* The rank a file's records go to: chosen at its first NOTE (the
 * collector writes one first), else at its first records. */
static wrank *file_rank(teller_watch *w, wfile *f)
{
    if (f->rank)
        return f->rank;
    f->rank = rank_for(w, f->host, f->rank_no, f->path);
    if (f->rank) {
        f->rank->open_files++;
        if (!f->rank->pid) {
            f->rank->pid = f->pid;
            f->rank->hdr_start = f->start;
        }
    }
    return f->rank;
}

/* The rank's id of the file's string id (0 stays 0); a file id no STRINGS
 * chunk defined is `lost` (the reader says "<lost name>" for a name).
 * UINT32_MAX out of memory. */
static uint32_t rank_string(const wfile *f, wrank *r, uint32_t id, const char *lost)
{
    if (!id)
        return 0;
    const char *s = id < f->smap_cap && f->smap[id] ? tlt_strtab_str(&f->strs, f->smap[id]) : lost;
    return tlt_strtab_intern(&r->strs, s, strlen(s));
}

/* Takes the records of one RECORDS payload. 0, or -1 out of memory. */
static int take_records(teller_watch *w, wfile *f, const uint8_t *p, size_t n, uint64_t at)
{
    uint32_t cnt;
    size_t rs;
    if (tlt_payload_records(p, n, &cnt, &rs)) {
        skip(w, TELLER_WATCH_SKIP_CHUNK, 1, f->path, at, "a records chunk is malformed; skipped");
        return 0;
    }
    wrank *r = file_rank(w, f);
    if (!r || TELLER_GROW(r->recs, r->recs_cap, r->nrecs + cnt))
        return -1;
    for (uint32_t i = 0; i < cnt; i++) {
        tlt_rec x;
        tlt_rec_unpack(&x, p + 8 + (size_t)i * rs);
        /* names move from the file's ids to the rank's, and so do the
         * domains of ranges and markers (the reader tells NCCL's by them) */
        uint32_t nm = rank_string(f, r, x.name, "<lost name>");
        if (nm == UINT32_MAX)
            return -1;
        if (x.kind == TLT_REC_RANGE && (x.ctx = rank_string(f, r, x.ctx, "")) == UINT32_MAX)
            return -1;
        if (x.kind == TLT_REC_MARKER && x.val) {
            uint32_t id = rank_string(f, r, (uint32_t)x.val, "");
            if (id == UINT32_MAX)
                return -1;
            x.val = id;
        }
        x.name = nm;
        if (x.kind == TLT_REC_EXTCORR)
            x.start = r->last_ns; /* no time of its own: it goes when the records around it go */
        if (is_cpu_kind(x.kind) && x.end > r->last_ns && x.end - x.start >= 0) {
            r->last_ns = x.end;
            snprintf(r->last_op, sizeof r->last_op, "%s", tlt_strtab_str(&r->strs, nm));
        }
        if (x.kind == TLT_REC_RANGE && nm && x.start > 0 && x.end >= x.start && is_marker_name(w, r, nm) &&
            add_marker(r, &x, r->flushes, w->now))
            return -1;
        r->recs[r->nrecs++] = x;
    }
    return 0;
}

/* Walks the whole chunks in f's buffer. 0, or -1 out of memory. */
static int take_chunks(teller_watch *w, wfile *f, int64_t now)
{
    size_t pos = 0;
    if (!f->header) {
        if (f->len < TLT_HEADER_SIZE)
            return 0;
        if (memcmp(f->buf, TLT_MAGIC, 8)) {
            skip(w, TELLER_WATCH_SKIP_FILE, 1, f->path, 0, "not a teller .tlt file; not followed");
            f->dead = 1;
            return 0;
        }
        if ((uint32_t)crc32(0, f->buf, 28) != tlt_get32(f->buf + 28))
            skip(w, TELLER_WATCH_SKIP_CHUNK, 0, f->path, 28, "header checksum wrong; reading on");
        f->header = 1;
        f->pid = tlt_get32(f->buf + 12);
        f->start = (int64_t)tlt_get64(f->buf + 16);
        pos = tlt_get16(f->buf + 10);
        if (pos < TLT_HEADER_SIZE || pos > f->len)
            pos = TLT_HEADER_SIZE;
    }
    tlt_chunk c;
    char msg[160];
    for (;;) {
        size_t before = pos;
        tlt_next nx = tlt_chunk_next(f->buf, f->len, &pos, &c, &w->scratch, msg, sizeof msg);
        if (nx == TLT_NEXT_DONE || nx == TLT_NEXT_CUT)
            break;
        if (nx == TLT_NEXT_NOMEM)
            return -1;
        if (nx == TLT_NEXT_SKIP) {
            if (pos == f->len && f->len - before < TLT_CHUNK_HEADER + 4) {
                pos = before; /* the start of a chunk may be what is there: wait for the rest */
                break;
            }
            skip(w, c.garbage ? TELLER_WATCH_SKIP_GARBAGE_BYTES : TELLER_WATCH_SKIP_CHUNK, c.garbage ? c.skipped : 1,
                 f->path, f->off_base + c.at, msg);
            continue;
        }
        w->stats.chunks++;
        if (c.seq != f->expect_seq) {
            char m[96];
            snprintf(m, sizeof m, "chunks %u to %u are missing", f->expect_seq, c.seq - 1);
            skip(w, TELLER_WATCH_SKIP_CHUNK, c.seq - f->expect_seq, f->path, f->off_base + c.at, m);
        }
        f->expect_seq = c.seq + 1;
        note_ctx nc = {"", -1};
        switch (c.type) {
        case TLT_CHUNK_STRINGS:
            if (tlt_payload_strings(c.p, c.n, file_string, f) == -2)
                return -1;
            break;
        case TLT_CHUNK_RECORDS:
            if (take_records(w, f, c.p, c.n, f->off_base + c.at))
                return -1;
            break;
        case TLT_CHUNK_NOTE:
        case TLT_CHUNK_END:
            snprintf(nc.host, sizeof nc.host, "%s", f->host);
            nc.rank = f->rank_no;
            tlt_payload_note(c.p, c.n, file_note, &nc);
            if (!f->rank) {
                snprintf(f->host, sizeof f->host, "%s", nc.host);
                f->rank_no = nc.rank;
            }
            if (c.type == TLT_CHUNK_END)
                f->ended = 1;
            break;
        default: break;
        }
        wrank *r = f->rank ? f->rank : (c.type == TLT_CHUNK_RECORDS ? file_rank(w, f) : NULL);
        if (r) {
            r->flushes += c.type == TLT_CHUNK_RECORDS;
            r->last_chunk_wall = now;
        }
    }
    memmove(f->buf, f->buf + pos, f->len - pos);
    f->len -= pos;
    f->off_base += pos;
    return 0;
}

static void file_close(wfile *f)
{
    if (f->fd >= 0)
        close(f->fd);
    f->fd = -1;
    if (f->rank && f->rank->open_files > 0 && !f->closed) {
        f->rank->open_files--;
        if (f->ended)
            f->rank->ended_files++;
    }
    f->closed = 1;
    free(f->buf);
    f->buf = NULL;
    f->len = f->cap = 0;
    free(f->smap);
    f->smap = NULL;
    f->smap_cap = 0;
    tlt_strtab_free(&f->strs);
}

void watch_file_free(wfile *f)
{
    if (!f)
        return;
    if (f->fd >= 0)
        close(f->fd);
    free(f->buf);
    free(f->smap);
    tlt_strtab_free(&f->strs);
    free(f->path);
    free(f);
}

/* Reads what is new in f. 0, or -1 out of memory. */
static int file_read(teller_watch *w, wfile *f, int64_t now)
{
    if (f->fd < 0)
        return 0;
    int grew = 0;
    size_t budget = READ_BUDGET;
    for (;;) {
        if (budget < READ_CHUNK) {
            w->backlog = 1;
            break;
        }
        budget -= READ_CHUNK;
        if (TELLER_GROW(f->buf, f->cap, f->len + READ_CHUNK))
            return -1;
        ssize_t k = read(f->fd, f->buf + f->len, READ_CHUNK);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            break;
        f->len += (size_t)k;
        grew = 1;
        if (f->len >= (size_t)4 * READ_CHUNK && take_chunks(w, f, now))
            return -1; /* a long backlog: walk it as it comes */
    }
    if (grew)
        f->last_grow_wall = now;
    if (take_chunks(w, f, now))
        return -1;
    struct stat sb;
    if (f->ended || f->dead || (fstat(f->fd, &sb) == 0 && sb.st_nlink == 0 && !grew)) {
        if (!f->ended && !f->dead && f->len)
            skip(w, TELLER_WATCH_SKIP_CHUNK, 1, f->path, f->off_base, "the file was removed with a chunk cut short; that chunk is lost");
        file_close(f);
    }
    return 0;
}

static int open_tlt(teller_watch *w, const char *path, const struct stat *sb)
{
    wfile *f = calloc(1, sizeof *f);
    if (!f || TELLER_GROW(w->files, w->files_cap, w->nfiles + 1) || !(f->path = strdup(path))) {
        free(f);
        return -1;
    }
    f->fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    f->dev = sb->st_dev;
    f->ino = sb->st_ino;
    f->rank_no = -1;
    f->last_grow_wall = w->now;
    tlt_strtab_init(&f->strs);
    w->files[w->nfiles++] = f;
    w->stats.files++;
    if (f->fd < 0) {
        char m[160];
        snprintf(m, sizeof m, "cannot open: %s", strerror(errno));
        skip(w, TELLER_WATCH_SKIP_FILE, 1, path, 0, m);
        f->closed = 1;
    }
    return 0;
}

/* ---- log files ---- */

static int log_take_line(wlog *l, const char *s, size_t n, int64_t now_trace)
{
    /* `teller run`'s capture form, as the log reader reads it */
    int64_t t;
    if (!log_capture_prefix(s, n, &t))
        t = l->nlines ? l->lines[l->nlines - 1].t : now_trace;
    if (TELLER_GROW(l->lines, l->lines_cap, l->nlines + 1))
        return -1;
    char *c = malloc(n + 1);
    if (!c)
        return -1;
    memcpy(c, s, n);
    c[n] = 0;
    l->lines[l->nlines++] = (wline){t, ++l->lnum, c, n};
    if (t > l->max_t)
        l->max_t = t;
    return 0;
}

/* Reads new lines of l; a replaced file is read to its end, then the new
 * one from its start; a shorter one from 0 again. A log already read past
 * the traces (now_trace, 0 before any) by LOG_AHEAD_NS waits for them: a
 * watcher behind the service holds no more of it than that. 0, or -1 out
 * of memory. */
static int log_read(teller_watch *w, wlog *l, int64_t now_trace)
{
    if (now_trace && l->nlines && l->max_t > now_trace + LOG_AHEAD_NS)
        return 0;
    struct stat sb;
    int at_path = stat(l->path, &sb) == 0;
    if (l->fd < 0) {
        if (!at_path)
            return 0;
        l->fd = open(l->path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
        if (l->fd < 0)
            return 0;
        l->ino = sb.st_ino;
        l->off = 0;
        l->lnum = 0;
    }
    struct stat own;
    if (fstat(l->fd, &own) == 0 && (off_t)l->off > own.st_size) {
        skip(w, TELLER_WATCH_SKIP_LOG, 1, l->path, l->off, "the log was cut shorter (copied and truncated?): read again from its start");
        lseek(l->fd, 0, SEEK_SET);
        l->off = 0;
        l->lnum = 0;
        l->plen = 0;
    }
    char buf[65536];
    for (;;) {
        ssize_t k = read(l->fd, buf, sizeof buf);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            break;
        l->off += (uint64_t)k;
        for (ssize_t i = 0; i < k; i++) {
            if (buf[i] == '\n') {
                if (log_take_line(l, l->part, l->plen, now_trace))
                    return -1;
                l->plen = 0;
            } else if (l->plen < MAX_LOG_LINE) {
                if (TELLER_GROW(l->part, l->part_cap, l->plen + 1))
                    return -1;
                l->part[l->plen++] = buf[i];
            }
        }
        if (now_trace && l->max_t > now_trace + LOG_AHEAD_NS)
            return 0; /* far enough: the rest when the traces come */
    }
    if (at_path && sb.st_ino != l->ino) { /* rotated: the old one is read, the new one is next */
        close(l->fd);
        l->fd = -1;
        l->plen = 0;
        return log_read(w, l, now_trace);
    }
    return 0;
}

void watch_log_free(wlog *l)
{
    if (!l)
        return;
    if (l->fd >= 0)
        close(l->fd);
    for (size_t i = 0; i < l->nlines; i++)
        free(l->lines[i].s);
    free(l->lines);
    free(l->part);
    free(l->path);
    free(l);
}

/* ---- directories ---- */

static int known_tlt(const teller_watch *w, const char *path, const struct stat *sb)
{
    for (size_t i = w->nfiles; i-- > 0;)
        if (w->files[i]->dev == sb->st_dev && w->files[i]->ino == sb->st_ino && !strcmp(w->files[i]->path, path))
            return 1;
    return 0;
}

static int scan_dir(teller_watch *w, size_t di, const char *dir, int logs)
{
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    struct dirent *e;
    int rc = 0;
    char path[PATH_MAX];
    while (!rc && (e = readdir(d))) {
        if (e->d_name[0] == '.' || !has_suffix(e->d_name, logs ? ".log" : ".tlt"))
            continue;
        if (snprintf(path, sizeof path, "%s/%s", dir, e->d_name) >= (int)sizeof path)
            continue;
        struct stat sb;
        if (stat(path, &sb) || !S_ISREG(sb.st_mode))
            continue;
        if (logs) {
            int have = 0;
            for (size_t i = 0; i < w->nlogs && !have; i++)
                have = !strcmp(w->logs[i]->path, path);
            if (have)
                continue;
            wlog *l = calloc(1, sizeof *l);
            if (!l || TELLER_GROW(w->logs, w->logs_cap, w->nlogs + 1) || !(l->path = strdup(path))) {
                free(l);
                rc = -1;
                break;
            }
            l->fd = -1;
            l->dir = di;
            w->logs[w->nlogs++] = l;
        } else if (!known_tlt(w, path, &sb)) {
            rc = open_tlt(w, path, &sb);
        }
    }
    closedir(d);
    return rc;
}

int watch_read(teller_watch *w, int64_t now, int hold)
{
    char dir[PATH_MAX];
    size_t first = w->nfiles;
    for (size_t i = 0; i < w->o.ndirs; i++) {
        const char *d = w->o.dirs[i];
        struct stat sb;
        int sub = snprintf(dir, sizeof dir, "%s/traces", d) < (int)sizeof dir && stat(dir, &sb) == 0 &&
                  S_ISDIR(sb.st_mode);
        if (scan_dir(w, i, sub ? dir : d, 0))
            return -1;
        if (snprintf(dir, sizeof dir, "%s/logs", d) < (int)sizeof dir && scan_dir(w, i, dir, 1))
            return -1;
    }
    /* new files in name order, as `teller diagnose` reads them */
    for (size_t i = first + 1; i < w->nfiles; i++)
        for (size_t j = i; j > first && strcmp(w->files[j - 1]->path, w->files[j]->path) > 0; j--) {
            wfile *t = w->files[j];
            w->files[j] = w->files[j - 1];
            w->files[j - 1] = t;
        }
    /* with hold, a rank a batch of steps ahead of the slowest one waits for
     * it: its steps cannot be diagnosed before, and a backlog read evenly
     * by bytes would pile them up */
    uint64_t floor = UINT64_MAX;
    for (size_t i = 0; hold && i < w->nranks; i++) {
        const wrank *r = w->ranks[i];
        uint64_t held = r->mk_base + r->nmk;
        if (!r->left && !watch_rank_ended(r) && held > 0 && held < floor)
            floor = held;
    }
    for (size_t i = 0; i < w->nfiles; i++) {
        const wrank *r = w->files[i]->rank;
        if (floor != UINT64_MAX && r && r->mk_base + r->nmk > floor + w->o.batch) {
            w->held_back = 1;
            continue;
        }
        if (file_read(w, w->files[i], now))
            return -1;
    }
    int64_t t = 0;
    for (size_t i = 0; i < w->nranks; i++)
        if (w->ranks[i]->last_ns > t)
            t = w->ranks[i]->last_ns;
    for (size_t i = 0; i < w->nlogs; i++)
        if (log_read(w, w->logs[i], t))
            return -1;
    /* a file of a rank that has a newer one, and no growth since: the
     * collector was restarted; what it was writing is lost */
    for (size_t i = 0; i < w->nfiles; i++) {
        wfile *f = w->files[i];
        if (f->closed || !f->rank || now - f->last_grow_wall < RESTART_QUIET_NS)
            continue;
        for (size_t j = i + 1; j < w->nfiles; j++)
            if (w->files[j]->rank == f->rank && w->files[j]->header && !f->closed) {
                if (f->len)
                    skip(w, TELLER_WATCH_SKIP_CHUNK, 1, f->path, f->off_base,
                         "a newer file of its rank began while this one ends inside a chunk: that chunk is lost");
                file_close(f);
            }
    }
    return 0;
}

int watch_rank_ended(const wrank *r) { return r->open_files == 0 && r->ended_files > 0; }

