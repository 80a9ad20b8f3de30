/*
 * replay.c - a loaded run written out as `teller run` writes one, chunk by
 * chunk, at real time or faster (replay.h; the rules are in
 * docs/REPLAY.md).
 *
 * Each rank's events of the layers the .tlt format carries are made into
 * records once, on the rank's own clock (the tree build's clock offset
 * added back, so that reading the replay estimates it again), and sorted
 * by their end: the collector gets a record when it completes. A replay
 * then walks every rank's array with a cursor (copy, index), once per copy
 * of --loop, and hands each record to the file of its rank in the flush
 * interval its end falls in. Nothing but the cursor, the open file's string
 * table and one interval's batch changes as it goes, so memory does not
 * grow with the number of copies.
 *
 * Correlation ids are renumbered per file: (copy * span + id - lowest) -
 * base + 1, where base is the lowest such value a file can still see when
 * it begins (a suffix minimum over the end-ordered array), so that ids are
 * unique in a file, start near 1 in each rotated file and launches keep
 * their GPU work. String ids are the file's own (a tlt_strtab per file).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "replay.h"
#include "../collect/tlt_writer.h"
#include "../logs/logs_internal.h"
#include "../util/clock.h"
#include "../util/fsutil.h"
#include "../util/vec.h"
#include "teller/logs.h"
#include "teller/tree.h"

/* rrec.bits */
enum { R_STEP = 1, R_ITER = 2, R_NCCL = 4 };

/* One record to replay, as the first copy has it before the shift. */
typedef struct rrec {
    tlt_rec  r;    /* times on the rank's own clock; name a store string id; corr as read */
    int64_t  num;  /* a GPU op's external id (-1: none); a ProfilerStep#N marker's N */
    uint32_t seq;  /* the event's index: ties of end and start keep the store's order */
    uint8_t  bits;
} rrec;

/* A rank: its records, where the replay is in them, its open file. */
typedef struct rrank {
    uint32_t  src;
    rrec     *rec;    /* by end */
    uint32_t *sufmin; /* n + 1: the least corr - cmin of rec[i..n) that has one, UINT32_MAX none */
    size_t    n;
    uint32_t  cmin;
    uint64_t  cspan;  /* correlation ids one copy uses: highest - cmin + 1 */
    char      host[64];
    int32_t   pid0;   /* the source's pid, -1 unknown */
    int32_t   rank, world;
    uint64_t  copy;   /* the cursor: rec[i] of copy `copy` is next */
    size_t    i;
    int       done;   /* every copy written */
    int       killed; /* its trace ends inside a step (a process taken down, as by PyTorch's
                       * watchdog): its last file gets no END chunk, as a killed collector's */
    /* the open file (fd >= 0) */
    int         fd;
    char        path[4352];
    tlt_writer  w;
    tlt_strtab  strs;
    uint32_t   *sid;  /* per store string: its id in the file, UINT32_MAX not yet */
    tlt_batch   batch;
    uint32_t    pid, nccl;
    uint64_t    base, file_steps, file_recs, noted;
    int64_t     cut;  /* records that began before this (copy time) were the previous file's */
    char      **kept; /* with --keep: the rank's files, oldest first */
    size_t      nkept;
} rrank;

/* A log: its lines, their times, where the replay is in them. */
typedef struct rlog {
    const char *path;
    char       *text;
    size_t     *line; /* n + 1 offsets: line j is text[line[j], line[j + 1]) */
    int64_t    *t;    /* each line's time on its node's clock */
    size_t      n;
    FILE       *out;
    char        outpath[4352];
    uint64_t    copy;
    size_t      i;
    int64_t     last; /* the interval of the line written last */
    int         done;
} rlog;

typedef struct rp {
    const teller_store *st;
    const replay_opts  *o;
    replay_stats       *S;
    teller_error       *err;
    rrank              *r;
    size_t              nr;
    rlog               *lg;
    size_t              nl;
    size_t              nstr;
    int64_t             T0, span, P, shift, F;
    int64_t             iter_lo, iter_hi, iter_span; /* ProfilerStep#N: the run's least and most N, and
                                                       * how far a copy moves them (hi - lo + 1) */
    uint32_t            next_pid;
} rp;

replay_opts replay_defaults(void)
{
    replay_opts o;
    memset(&o, 0, sizeof o);
    o.flush_ns = 1000000000;
    o.speed = 1;
    o.start_ns = INT64_MIN;
    o.loop = 1;
    return o;
}

/* The flush interval a time (copy time, on the rank's clock) is written
 * in: 0 for what precedes the run (written when the files are made), k >=
 * 1 for [T0 + (k-1) F, T0 + k F). */
static int64_t interval_of(const rp *R, int64_t t) { return t < R->T0 ? 0 : (t - R->T0) / R->F + 1; }

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

static int rrec_cmp(const void *a, const void *b)
{
    const rrec *x = a, *y = b;
    if (x->r.end != y->r.end)
        return x->r.end < y->r.end ? -1 : 1;
    if (x->r.start != y->r.start)
        return x->r.start < y->r.start ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* The record kind an event becomes, and its bits; 0: the collector would
 * not have recorded it. */
static uint8_t kind_of(uint8_t layer, uint8_t flags, uint8_t *bits)
{
    *bits = 0;
    switch (layer) {
    case TELLER_LAYER_KERNEL: return TLT_REC_KERNEL;
    case TELLER_LAYER_MEMCPY: return TLT_REC_MEMCPY;
    case TELLER_LAYER_MEMSET: return TLT_REC_MEMSET;
    case TELLER_LAYER_SYNC: return TLT_REC_SYNC;
    case TELLER_LAYER_RUNTIME: return TLT_REC_RUNTIME;
    case TELLER_LAYER_DRIVER: return TLT_REC_DRIVER;
    default: break;
    }
    if (flags & (TELLER_F_GPU | TELLER_F_INSTANT | TELLER_F_COUNTER))
        return 0;
    if (flags & TELLER_F_STEP) {
        *bits = R_STEP;
        return TLT_REC_RANGE;
    }
    if (layer == TELLER_LAYER_ENGINE)
        return TLT_REC_RANGE;
    if (layer == TELLER_LAYER_BACKEND && (flags & TELLER_F_COMM)) {
        *bits = R_NCCL;
        return TLT_REC_RANGE;
    }
    return 0;
}

/* A host name fit for a file name and a NOTE line. */
static void put_host(char *out, size_t cap, const char *h)
{
    size_t n = 0;
    for (; h[n] && n + 1 < cap; n++) {
        char c = h[n];
        int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
                 c == '_' || c == '-';
        out[n] = ok ? c : '_';
    }
    out[n] = 0;
}

/* The clock offset the tree build took off the events of a node. */
static int64_t node_offset(const teller_store *st, int32_t node)
{
    const teller_node *nd = teller_store_nodes(st);
    for (size_t i = 0; i < teller_store_num_nodes(st); i++)
        if (nd[i].node == node)
            return nd[i].offset_ns;
    return 0;
}

static teller_status nomem(rp *R) { return teller_error_set(R->err, TELLER_ERR_NOMEM, "replay", 0, "out of memory"); }

/* The records of source s into k. */
static teller_status build_rank(rp *R, uint32_t s, rrank *k)
{
    const teller_store *st = R->st;
    const teller_events *ev = teller_store_events(st);
    const teller_source *so = teller_store_source_c(st, s);
    int64_t off = node_offset(st, so->node);
    size_t cap = 0;
    k->src = s;
    k->fd = -1;
    k->pid0 = so->pid > 0 ? so->pid : -1;
    k->rank = so->rank;
    k->world = so->world_size;
    const teller_step *sp = teller_store_steps(st);
    for (size_t i = 0; i < teller_store_num_steps(st); i++)
        if (sp[i].rank == so->rank && sp[i].marker == TELLER_NONE && sp[i].step > 0)
            k->killed = 1;
    if (so->host)
        put_host(k->host, sizeof k->host, teller_store_str(st, so->host));
    if (!k->host[0])
        snprintf(k->host, sizeof k->host, "node%d", so->node >= 0 ? so->node : (int)s);
    uint32_t cmax = 0;
    k->cmin = UINT32_MAX;
    for (size_t e = so->first_event; e < (size_t)so->first_event + so->num_events; e++) {
        uint8_t bits;
        uint8_t kind = kind_of(ev->layer[e], ev->flags[e], &bits);
        if (!kind)
            continue;
        if (TELLER_GROW(k->rec, cap, k->n + 1))
            return nomem(R);
        rrec *q = &k->rec[k->n++];
        memset(q, 0, sizeof *q);
        q->seq = (uint32_t)e;
        q->bits = bits;
        q->num = -1;
        tlt_rec *x = &q->r;
        int32_t pid = teller_event_pid(ev, e), tid = teller_event_tid(ev, e);
        x->kind = kind;
        x->name = ev->name[e];
        x->start = ev->start_ns[e] + off;
        x->end = x->start + ev->dur_ns[e];
        x->dev = (uint32_t)pid;
        x->stream = (uint32_t)tid;
        if (kind != TLT_REC_RANGE && ev->corr[e]) {
            x->corr = ev->corr[e];
            k->cmin = x->corr < k->cmin ? x->corr : k->cmin;
            cmax = x->corr > cmax ? x->corr : cmax;
        }
        const teller_args *a = teller_store_event_args(st, (uint32_t)e);
        if (kind == TLT_REC_KERNEL || kind == TLT_REC_MEMCPY || kind == TLT_REC_MEMSET) {
            x->ctx = (uint32_t)pid + 1; /* the reader finds a sync's device by its context */
            if (a && kind == TLT_REC_KERNEL) {
                memcpy(x->grid, a->grid, sizeof x->grid);
                memcpy(x->block, a->block, sizeof x->block);
            } else if (a && a->bytes > 0) {
                x->val = (uint64_t)a->bytes;
            }
            if (a && a->ext_id >= 0)
                q->num = a->ext_id;
        } else if (kind == TLT_REC_SYNC) {
            x->dev = TLT_NO_DEVICE;
            x->ctx = pid >= 0 ? (uint32_t)pid + 1 : 0;
        } else if (bits & R_STEP) {
            int64_t it = teller_step_iteration(teller_store_str(st, x->name));
            if (it >= 0) {
                q->bits |= R_ITER;
                q->num = it;
                R->iter_lo = it < R->iter_lo ? it : R->iter_lo;
                R->iter_hi = it > R->iter_hi ? it : R->iter_hi;
            }
        }
    }
    teller_sort(k->rec, k->n, sizeof *k->rec, rrec_cmp);
    k->cspan = k->cmin == UINT32_MAX ? 0 : (uint64_t)cmax - k->cmin + 1;
    k->sufmin = malloc((k->n + 1) * sizeof *k->sufmin);
    if (!k->sufmin)
        return nomem(R);
    k->sufmin[k->n] = UINT32_MAX;
    for (size_t i = k->n; i-- > 0;) {
        uint32_t c = k->rec[i].r.corr ? k->rec[i].r.corr - k->cmin : UINT32_MAX;
        k->sufmin[i] = c < k->sufmin[i + 1] ? c : k->sufmin[i + 1];
    }
    return TELLER_OK;
}

static int step_rank_cmp(const void *a, const void *b)
{
    const teller_step *x = a, *y = b;
    if (x->rank != y->rank)
        return x->rank < y->rank ? -1 : 1;
    return x->start_ns < y->start_ns ? -1 : x->start_ns > y->start_ns;
}

/* The median time between a rank's steps (end to next start), 0 when
 * there is none or it is negative. */
static int64_t median_gap(const teller_store *st)
{
    size_t n = teller_store_num_steps(st), m = 0, ng = 0;
    const teller_step *sp = teller_store_steps(st);
    teller_step *v = malloc((n ? n : 1) * sizeof *v);
    int64_t *g = malloc((n ? n : 1) * sizeof *g);
    int64_t med = 0;
    if (v && g) {
        for (size_t i = 0; i < n; i++)
            if (sp[i].marker != TELLER_NONE)
                v[m++] = sp[i];
        teller_sort(v, m, sizeof *v, step_rank_cmp); /* the table is by step, then rank */
        for (size_t i = 1; i < m; i++)
            if (v[i].rank == v[i - 1].rank)
                g[ng++] = v[i].start_ns - v[i - 1].end_ns;
        teller_sort(g, ng, sizeof *g, cmp_i64);
        med = ng ? g[ng / 2] : 0;
    }
    free(v);
    free(g);
    return med > 0 ? med : 0;
}

/* ---- the files ---- */

static teller_status io_error(rp *R, const char *path, const char *what)
{
    return teller_error_set(R->err, TELLER_ERR_IO, path, 0, "cannot %s: %s", what, strerror(errno));
}

/* Writes the new strings, the batch and, when the count changed or at the
 * end, the counts (NOTE, or END). */
static teller_status flush_file(rp *R, rrank *k, int end)
{
    if (tlt_writer_strings(&k->w, &k->strs, k->strs.unwritten) ||
        tlt_writer_records(&k->w, k->batch.recs, k->batch.n))
        return io_error(R, k->path, "write");
    k->strs.unwritten = k->strs.n;
    k->file_recs += k->batch.n;
    R->S->records += k->batch.n;
    k->batch.n = 0;
    if (!end && k->file_recs == k->noted)
        return TELLER_OK;
    k->noted = k->file_recs;
    char note[256];
    int n = snprintf(note, sizeof note, "records=%llu\ndropped_cupti=0\ndropped_buffer=0\ndropped_ranges=0\n",
                     (unsigned long long)k->file_recs);
    if (tlt_writer_chunk(&k->w, end ? TLT_CHUNK_END : TLT_CHUNK_NOTE, note, (size_t)n))
        return io_error(R, k->path, "write");
    return TELLER_OK;
}

/* Ends the open file: the last chunks and END when `end`, else as a
 * killed process leaves it. */
static teller_status close_file(rp *R, rrank *k, int end)
{
    if (k->fd < 0)
        return TELLER_OK;
    teller_status s = end ? flush_file(R, k, 1) : TELLER_OK;
    struct stat sb;
    if (fstat(k->fd, &sb) == 0)
        R->S->bytes += (uint64_t)sb.st_size;
    if (close(k->fd) && s == TELLER_OK)
        s = io_error(R, k->path, "write");
    k->fd = -1;
    tlt_writer_free(&k->w);
    tlt_strtab_free(&k->strs);
    k->batch.n = 0;
    return s;
}

/* Opens the rank's next file, HOST-PID.tlt with pid k->pid, written as
 * from start_ns: its header and the NOTE saying who wrote it. With --keep,
 * deletes the rank's oldest file beyond the newest keep. */
static teller_status open_file(rp *R, rrank *k, int64_t start_ns)
{
    snprintf(k->path, sizeof k->path, "%s/traces/%s-%u.tlt", R->o->out, k->host, k->pid);
    k->fd = open(k->path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (k->fd < 0)
        return errno == EEXIST ? teller_error_set(R->err, TELLER_ERR_IO, k->path, 0,
                                                  "exists already: replay into a new directory")
                               : io_error(R, k->path, "create");
    tlt_strtab_init(&k->strs);
    memset(k->sid, 0xff, R->nstr * sizeof *k->sid);
    k->file_steps = k->file_recs = k->noted = 0;
    if (tlt_writer_open(&k->w, k->fd, k->pid, start_ns)) {
        teller_status s = io_error(R, k->path, "write");
        close_file(R, k, 0);
        return s;
    }
    char note[512];
    int n = snprintf(note, sizeof note, "host=%s\npid=%u\nclock=CLOCK_REALTIME\nflush_ms=%lld\nreplay=1\n", k->host,
                     k->pid, (long long)(R->F / 1000000));
    if (k->rank >= 0)
        n += snprintf(note + n, sizeof note - (size_t)n, "RANK=%d\n", k->rank);
    if (k->world > 0)
        n += snprintf(note + n, sizeof note - (size_t)n, "WORLD_SIZE=%d\n", k->world);
    k->nccl = tlt_strtab_intern(&k->strs, "NCCL", 4);
    if (k->nccl == UINT32_MAX)
        return nomem(R);
    if (tlt_writer_chunk(&k->w, TLT_CHUNK_NOTE, note, (size_t)n))
        return io_error(R, k->path, "write");
    R->S->files++;
    if (R->o->keep) {
        char *p = strdup(k->path);
        if (!p)
            return nomem(R);
        k->kept[k->nkept++] = p;
        if (k->nkept > R->o->keep) {
            if (unlink(k->kept[0]) && errno != ENOENT)
                return io_error(R, k->kept[0], "delete");
            free(k->kept[0]);
            memmove(k->kept, k->kept + 1, --k->nkept * sizeof *k->kept);
        }
    }
    return TELLER_OK;
}

/* The file's id of store string `name`, or of the marker's renumbered
 * name in a later copy; UINT32_MAX out of memory. */
static uint32_t file_name(rp *R, rrank *k, const rrec *q, uint64_t copy)
{
    if ((q->bits & R_ITER) && copy) {
        char b[48];
        int n = snprintf(b, sizeof b, "ProfilerStep#%lld", (long long)(q->num + (int64_t)copy * R->iter_span));
        return tlt_strtab_intern(&k->strs, b, (size_t)n);
    }
    uint32_t *id = &k->sid[q->r.name];
    if (*id == UINT32_MAX) {
        const char *s = teller_store_str(R->st, q->r.name);
        *id = tlt_strtab_intern(&k->strs, s, strlen(s));
    }
    return *id;
}

/* Adds record q of copy `copy` to the rank's batch (and before a GPU op
 * its external correlation). *rotate: the file is to end after it. */
static teller_status emit(rp *R, rrank *k, const rrec *q, uint64_t copy, int *rotate)
{
    int64_t off = (int64_t)copy * R->P;
    *rotate = 0;
    if (q->r.start + off < k->cut) {
        R->S->cut++;
        return TELLER_OK;
    }
    tlt_rec x = q->r;
    x.start += off + R->shift;
    x.end += off + R->shift;
    if ((x.name = file_name(R, k, q, copy)) == UINT32_MAX)
        return nomem(R);
    if (x.corr) {
        uint64_t g = copy * k->cspan + (x.corr - k->cmin) - k->base + 1;
        if (g > UINT32_MAX)
            return teller_error_set(R->err, TELLER_ERR_LIMIT, k->path, 0,
                                    "correlation ids would pass 2^32 in this file: --rotate with fewer steps");
        x.corr = (uint32_t)g;
    }
    if (x.kind == TLT_REC_RANGE) {
        if (q->bits & R_NCCL)
            x.ctx = k->nccl;
        if (k->pid0 >= 0 && (int32_t)x.dev == k->pid0)
            x.dev = k->pid;
    } else if ((x.kind == TLT_REC_RUNTIME || x.kind == TLT_REC_DRIVER) && k->pid0 >= 0 &&
               (int32_t)x.dev == k->pid0) {
        x.dev = k->pid;
    }
    if (q->num >= 0 && x.corr && (x.kind == TLT_REC_KERNEL || x.kind == TLT_REC_MEMCPY || x.kind == TLT_REC_MEMSET)) {
        tlt_rec *c = tlt_batch_add(&k->batch, SIZE_MAX);
        if (!c)
            return nomem(R);
        c->kind = TLT_REC_EXTCORR;
        c->corr = x.corr;
        c->val = (uint64_t)q->num;
    }
    tlt_rec *o = tlt_batch_add(&k->batch, SIZE_MAX);
    if (!o)
        return nomem(R);
    *o = x;
    if (q->bits & R_STEP) {
        R->S->steps++;
        *rotate = R->o->rotate && ++k->file_steps == R->o->rotate;
    }
    return TELLER_OK;
}

/* Ends the rank's file at `cut` (copy time) and begins the next one, as a
 * collector restarted then would: a new pid, string and correlation ids
 * afresh from the records still to come. */
static teller_status rotate_file(rp *R, rrank *k, int64_t cut)
{
    teller_status s = close_file(R, k, 1);
    if (s != TELLER_OK)
        return s;
    k->pid = R->next_pid++;
    k->cut = cut;
    k->base = k->sufmin[k->i] != UINT32_MAX ? k->copy * k->cspan + k->sufmin[k->i]
                                            : (k->copy + 1) * k->cspan + k->sufmin[0];
    return open_file(R, k, cut + R->shift);
}

/* Writes what the rank has up to interval iv, then flushes; closes the
 * file after the last copy. */
static teller_status feed_rank(rp *R, rrank *k, int64_t iv)
{
    teller_status s = TELLER_OK;
    while (!k->done && s == TELLER_OK) {
        const rrec *q = &k->rec[k->i];
        uint64_t copy = k->copy;
        if (interval_of(R, q->r.end + (int64_t)copy * R->P) > iv)
            break;
        if (++k->i == k->n) {
            k->i = 0;
            k->done = ++k->copy == R->o->loop;
        }
        int rot;
        s = emit(R, k, q, copy, &rot);
        if (s == TELLER_OK && rot && !k->done)
            s = rotate_file(R, k, q->r.end + (int64_t)copy * R->P);
    }
    if (s == TELLER_OK)
        s = flush_file(R, k, 0);
    if (s == TELLER_OK && k->done)
        s = close_file(R, k, !k->killed);
    return s;
}

/* The interval of the rank's next record, INT64_MAX when done. */
static int64_t rank_next(const rp *R, const rrank *k)
{
    return k->done ? INT64_MAX : interval_of(R, k->rec[k->i].r.end + (int64_t)k->copy * R->P);
}

/* ---- the logs ---- */

typedef struct log_times {
    int64_t *t;
    size_t   n;
} log_times;

static int on_record(void *ctx, const teller_log_record *rec)
{
    log_times *L = ctx;
    if (!(rec->flags & TELLER_LOGF_NO_TIME) && rec->line >= 1 && rec->line <= L->n)
        L->t[rec->line - 1] = rec->time_ns;
    return 0;
}

/* Reads a log whole: its lines, and their times as the log reader reads
 * them (a line without one takes the line's before it; lines before the
 * first timed one take its time, or the run's start). */
static teller_status load_log(rp *R, rlog *L)
{
    gzFile f = gzopen(L->path, "rb");
    if (!f)
        return io_error(R, L->path, "open");
    size_t len = 0, cap = 0;
    for (;;) {
        if (TELLER_GROW(L->text, cap, len + 65536 + 1)) {
            gzclose(f);
            return nomem(R);
        }
        int got = gzread(f, L->text + len, 65536);
        if (got < 0) {
            gzclose(f);
            return teller_error_set(R->err, TELLER_ERR_IO, L->path, len, "read error");
        }
        if (got == 0)
            break;
        len += (size_t)got;
    }
    gzclose(f);
    size_t lcap = 0;
    if (TELLER_GROW(L->line, lcap, 1))
        return nomem(R);
    L->line[0] = 0;
    for (size_t p = 0; p < len;) {
        const char *nl = memchr(L->text + p, '\n', len - p);
        p = nl ? (size_t)(nl - L->text) + 1 : len;
        if (TELLER_GROW(L->line, lcap, L->n + 2))
            return nomem(R);
        L->line[++L->n] = p;
    }
    L->t = malloc((L->n ? L->n : 1) * sizeof *L->t);
    if (!L->t)
        return nomem(R);
    for (size_t j = 0; j < L->n; j++)
        L->t[j] = INT64_MIN;
    teller_log_opts lo = teller_log_defaults();
    lo.ref_ns = R->T0;
    log_times lt = {L->t, L->n};
    teller_status s = teller_log_read_file(L->path, &lo, on_record, &lt, NULL, R->err);
    if (s != TELLER_OK)
        return s;
    int64_t prev = INT64_MIN;
    for (size_t j = 0; j < L->n; j++)
        if (L->t[j] != INT64_MIN && prev == INT64_MIN)
            prev = L->t[j];
    if (prev == INT64_MIN)
        prev = R->T0;
    for (size_t j = 0; j < L->n; j++) {
        if (L->t[j] == INT64_MIN)
            L->t[j] = prev;
        prev = L->t[j];
    }
    return TELLER_OK;
}

static int64_t log_next(const rp *R, const rlog *L)
{
    if (L->done)
        return INT64_MAX;
    int64_t iv = interval_of(R, L->t[L->i] + (int64_t)L->copy * R->P);
    return iv > L->last ? iv : L->last;
}

/* Writes the log's lines up to interval iv in the capture form. */
static teller_status feed_log(rp *R, rlog *L, int64_t iv)
{
    while (!L->done && log_next(R, L) <= iv) {
        L->last = log_next(R, L);
        const char *s = L->text + L->line[L->i];
        size_t n = L->line[L->i + 1] - L->line[L->i];
        if (n && s[n - 1] == '\n')
            n--;
        size_t pre = log_capture_prefix(s, n, NULL);
        int w = fprintf(L->out, "%lld ", (long long)(L->t[L->i] + (int64_t)L->copy * R->P + R->shift));
        if (w < 0 || fwrite(s + pre, 1, n - pre, L->out) != n - pre || fputc('\n', L->out) == EOF)
            return io_error(R, L->outpath, "write");
        R->S->bytes += (uint64_t)w + n - pre + 1;
        R->S->log_lines++;
        if (++L->i == L->n) {
            L->i = 0;
            L->done = ++L->copy == R->o->loop;
        }
    }
    return fflush(L->out) ? io_error(R, L->outpath, "write") : TELLER_OK;
}

static teller_status open_logs(rp *R, const char *const *logs, size_t nlogs)
{
    R->lg = calloc(nlogs ? nlogs : 1, sizeof *R->lg);
    if (!R->lg)
        return nomem(R);
    for (size_t i = 0; i < nlogs; i++) {
        rlog *L = &R->lg[R->nl++];
        L->path = logs[i];
        const char *base = strrchr(logs[i], '/');
        base = base ? base + 1 : logs[i];
        for (size_t j = 0; j < i; j++) {
            const char *b = strrchr(logs[j], '/');
            if (!strcmp(b ? b + 1 : logs[j], base))
                return teller_error_set(R->err, TELLER_ERR_ARG, logs[i], 0, "a second log named %s (the first: %s)",
                                        base, logs[j]);
        }
        teller_status s = load_log(R, L);
        if (s != TELLER_OK)
            return s;
        L->done = L->n == 0;
        snprintf(L->outpath, sizeof L->outpath, "%s/logs/%s", R->o->out, base);
        int fd = open(L->outpath, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd < 0)
            return errno == EEXIST ? teller_error_set(R->err, TELLER_ERR_IO, L->outpath, 0,
                                                      "exists already: replay into a new directory")
                                   : io_error(R, L->outpath, "create");
        if (!(L->out = fdopen(fd, "w"))) {
            close(fd);
            return io_error(R, L->outpath, "create");
        }
    }
    return TELLER_OK;
}

/* ---- the replay ---- */

/* Sleeps until `at` (CLOCK_MONOTONIC ns); 1 when stopped meanwhile. */
static int sleep_until(int64_t at, const volatile sig_atomic_t *stop)
{
    struct timespec ts = {(time_t)(at / 1000000000), (long)(at % 1000000000)};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
        if (stop && *stop)
            return 1;
    return 0;
}

static teller_status prepare(rp *R, const char *const *logs, size_t nlogs)
{
    const teller_store *st = R->st;
    const replay_opts *o = R->o;
    size_t ns = teller_store_num_sources(st);
    R->nstr = teller_store_num_strings(st);
    R->r = calloc(ns ? ns : 1, sizeof *R->r);
    if (!R->r)
        return nomem(R);
    R->iter_lo = INT64_MAX;
    R->iter_hi = INT64_MIN;
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    uint32_t maxpid = 0;
    for (uint32_t s = 0; s < ns; s++) {
        rrank *k = &R->r[R->nr++];
        teller_status e = build_rank(R, s, k);
        if (e != TELLER_OK)
            return e;
        for (size_t i = 0; i < k->n; i++) {
            lo = k->rec[i].r.start < lo ? k->rec[i].r.start : lo;
            hi = k->rec[i].r.end > hi ? k->rec[i].r.end : hi;
        }
        if (k->pid0 > 0 && (uint32_t)k->pid0 > maxpid)
            maxpid = (uint32_t)k->pid0;
        if (!(k->sid = malloc((R->nstr ? R->nstr : 1) * sizeof *k->sid)))
            return nomem(R);
        if (o->keep && !(k->kept = calloc(o->keep + 1, sizeof *k->kept)))
            return nomem(R);
        if (!o->rotate && k->cspan && o->loop > UINT32_MAX / k->cspan)
            return teller_error_set(R->err, TELLER_ERR_LIMIT, teller_store_str(st, teller_store_source_c(st, s)->path),
                                    0,
                                    "%llu copies of %llu correlation ids would pass 2^32 in one file: --rotate "
                                    "to begin new files",
                                    (unsigned long long)o->loop, (unsigned long long)k->cspan);
    }
    if (lo > hi)
        return teller_error_set(R->err, TELLER_ERR_FORMAT,
                                ns ? teller_store_str(st, teller_store_source_c(st, 0)->path) : "replay", 0,
                                "nothing to replay: no event of a kind the collector records");
    R->iter_span = R->iter_lo <= R->iter_hi ? R->iter_hi - R->iter_lo + 1 : 0;
    /* pids: the source's when known and not taken on its host, else new ones */
    R->next_pid = maxpid + 1;
    for (size_t i = 0; i < R->nr; i++) {
        rrank *k = &R->r[i];
        int taken = k->pid0 <= 0;
        for (size_t j = 0; j < i && !taken; j++)
            taken = R->r[j].pid0 == k->pid0 && !strcmp(R->r[j].host, k->host);
        k->pid = taken ? R->next_pid++ : (uint32_t)k->pid0;
    }
    R->T0 = lo;
    R->span = hi - lo;
    R->P = R->span + median_gap(st);
    R->F = o->flush_ns;
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    int64_t start = o->start_ns != INT64_MIN ? o->start_ns : (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
    R->shift = start - lo;
    /* the last copy's last time must stay inside the readers' bounds */
    if (start <= 0 || R->P <= 0 || (o->loop > 1 && (o->loop - 1) > (uint64_t)(TELLER_TIME_MAX / 2 / R->P)) ||
        start > TELLER_TIME_MAX / 2 || R->span > TELLER_TIME_MAX / 4)
        return teller_error_set(R->err, TELLER_ERR_LIMIT, "replay", 0,
                                "the replayed times would leave the range a reader accepts (start %lld ns, "
                                "%llu copies of %lld ns)",
                                (long long)start, (unsigned long long)o->loop, (long long)R->P);
    R->S->shift_ns = R->shift;
    R->S->period_ns = R->P;
    char d[4200];
    snprintf(d, sizeof d, "%s/traces", o->out);
    if (teller_mkdir_p(d, 0777))
        return io_error(R, d, "create the directory");
    if (nlogs) {
        snprintf(d, sizeof d, "%s/logs", o->out);
        if (teller_mkdir_p(d, 0777))
            return io_error(R, d, "create the directory");
    }
    return open_logs(R, logs, nlogs);
}

static teller_status replay_loop(rp *R)
{
    const replay_opts *o = R->o;
    teller_status s = TELLER_OK;
    for (size_t i = 0; i < R->nr && s == TELLER_OK; i++) {
        R->r[i].done = R->r[i].n == 0;
        if (!R->r[i].done)
            s = open_file(R, &R->r[i], R->T0 + R->shift);
    }
    for (size_t i = 0; i < R->nl && s == TELLER_OK; i++)
        s = feed_log(R, &R->lg[i], 0);
    int64_t t0 = teller_mono_ns(), iv = 0;
    while (s == TELLER_OK) {
        int64_t next = INT64_MAX;
        for (size_t i = 0; i < R->nr; i++) {
            int64_t x = rank_next(R, &R->r[i]);
            next = x < next ? x : next;
        }
        for (size_t i = 0; i < R->nl; i++) {
            int64_t x = log_next(R, &R->lg[i]);
            next = x < next ? x : next;
        }
        if (next == INT64_MAX)
            break;
        iv = next > iv + 1 ? next : iv + 1;
        if (o->stop && *o->stop)
            break;
        if (o->speed > 0 && sleep_until(t0 + (int64_t)((double)iv * (double)R->F / o->speed), o->stop))
            break;
        for (size_t i = 0; i < R->nr && s == TELLER_OK; i++)
            if (R->r[i].fd >= 0)
                s = feed_rank(R, &R->r[i], iv);
        for (size_t i = 0; i < R->nl && s == TELLER_OK; i++)
            s = feed_log(R, &R->lg[i], iv);
        R->S->chunks++;
    }
    R->S->stopped = s == TELLER_OK && o->stop && *o->stop;
    return s;
}

teller_status replay_run(const teller_store *st, const char *const *logs, size_t nlogs, const replay_opts *opts,
                         replay_stats *stats, teller_error *err)
{
    replay_stats local;
    rp R = {.st = st, .o = opts, .S = stats ? stats : &local, .err = err};
    memset(R.S, 0, sizeof *R.S);
    if (opts->flush_ns <= 0 || opts->loop < 1 || !(opts->speed >= 0) || (opts->keep && !opts->rotate))
        return teller_error_set(err, TELLER_ERR_ARG, "replay", 0,
                                "flush interval, copies, speed or --keep without --rotate out of range");
    teller_status s = prepare(&R, logs, nlogs);
    if (s == TELLER_OK)
        s = replay_loop(&R);
    /* a stop or the end: every file ends as a clean exit leaves it */
    for (size_t i = 0; i < R.nr; i++) {
        rrank *k = &R.r[i];
        teller_status c = close_file(&R, k, s == TELLER_OK);
        s = s == TELLER_OK ? c : s;
        for (size_t j = 0; j < k->nkept; j++)
            free(k->kept[j]);
        free(k->kept);
        free(k->rec);
        free(k->sufmin);
        free(k->sid);
        tlt_batch_free(&k->batch);
    }
    for (size_t i = 0; i < R.nl; i++) {
        rlog *L = &R.lg[i];
        if (L->out && fclose(L->out) && s == TELLER_OK)
            s = io_error(&R, L->outpath, "write");
        free(L->text);
        free(L->line);
        free(L->t);
    }
    free(R.r);
    free(R.lg);
    return s;
}
