/*
 * teller_mpi.c - `mpirun -n P teller-mpi diagnose [options] TRACE_OR_CASE...`:
 * `teller diagnose`, its rank files read by P processes (Open MPI).
 *
 * Process 0 runs `teller diagnose` itself (src/cli/cmd_diagnose.c: the same
 * options, the same output). Its load (cli_loader) first tells the other
 * processes the files and the reading options (a broadcast); file i is
 * read by process i * P / n (consecutive files: the ranks of a node stay
 * together). Each process reads its files on its own threads, a batch of
 * one file per thread at a time, packs each file's store (pack.h) and sends
 * it to process 0, or why it could not read it. Process 0 reads its own share and takes the others' through
 * teller_load's reader (load.h): the files are appended in the order given,
 * exactly as one process's threads append them, so the run's store, and
 * every byte written from it, is that of `teller diagnose`.
 *
 * Failures end every process: a process that cannot read a file prints
 * which and exits 1; process 0 reports the first file in order that could
 * not be read, as `teller diagnose` does, receives (and drops) whatever was
 * still sent to it, so no sender waits forever, and exits 1; every process
 * waits at a barrier before it ends, so that mpirun does not stop process 0
 * before it has said so. Process 0 announces each load (`--baseline` loads
 * the reference first, then the run) and, when it is done, that there is
 * nothing more to read, also when it stopped before loading (bad options,
 * --help, a missing name). A process that stalls without dying
 * stalls the run: process 0 then says every TELLER_MPI_WAIT seconds (60 by
 * default) which file it is waiting for, from which process.
 *
 * Each reader also builds its files' trees and sends each file's summary
 * (summary.h: its collectives' rows and step markers), which process 0's
 * tree build takes as it is, and keeps its files' stores. The build asks
 * the readers twice (teller_tree_holders, rounds.h) for what only their
 * events say: the span after each rank's last step marker, then, given
 * the run's steps and clock offsets, which the reader moves and stamps
 * its events with as the build does, the steps' GPU ends, its
 * communication kernels' steps and its per-(step, source) cells. A reader
 * answers until process 0 sends a 0, as it does once its load is over or
 * has failed. What this is not yet (docs/SCALE.md): process 0 still
 * receives every event and does the rest of the analysis on them.
 */
#include <mpi.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef __GLIBC__
#include <malloc.h> /* mallopt */
#endif

#include "teller/ingest.h"
#include "teller/load.h"
#include "../cli/cli.h"
#include "../ingest/load_internal.h"
#include "../store/store_internal.h"
#include "../util/clock.h"
#include "../util/pool.h"
#include "pack.h"
#include "rounds.h"
#include "summary.h"

#define CHUNK ((size_t)1 << 30) /* bytes per message at most: MPI counts are ints */

static int me, nproc;
static int threaded;  /* MPI may be called from the load's threads, one at a time */
static pthread_mutex_t mpi_mu = PTHREAD_MUTEX_INITIALIZER;
static double wait_note_s = 60; /* how often process 0 says what it waits for (TELLER_MPI_WAIT) */

/* What every process must know before reading: sent by process 0. */
typedef struct plan {
    uint64_t           n;         /* files; 0: nothing to read, stop */
    uint64_t           names_len; /* their paths, each with its NUL, then a byte per file: 1 for a
                                   * repeat (teller_load_same_files), which nobody reads or sends,
                                   * then the step pattern with its NUL */
    uint64_t           pattern_len; /* of the step pattern; 0: the built-in one */
    teller_ingest_opts ingest;
    int32_t            jobs;
} plan;

/* Sent before each file's packed store and the summary of its
 * collectives (summary.h): their sizes, or why there are none. */
typedef struct file_head {
    uint64_t     size, summary_size;
    teller_error err; /* code TELLER_OK, or the reader's error */
} file_head;

static int owner(size_t i, size_t n) { return (int)(i * (size_t)nproc / n); }

/* The largest tag this MPI allows (at least 32767): file i is tag i, and
 * the build's questions to the readers (rounds.h) are the largest. */
static size_t tag_bound(void)
{
    int *ub = NULL, flag = 0;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &ub, &flag);
    return flag && ub ? (size_t)*ub : 32767;
}

/* The messages of a buffer of size bytes: CHUNK bytes each at most, as
 * recv_buffer takes them. */
static size_t chunks(uint64_t size) { return (size + CHUNK - 1) / CHUNK; }

/* Posts the sends of a buffer to process `to` into req; returns how many. */
static size_t send_buffer(const char *b, uint64_t size, int to, int tag, MPI_Request *req)
{
    size_t r = 0;
    for (size_t off = 0; off < size; off += CHUNK) {
        size_t len = size - off < CHUNK ? size - off : CHUNK;
        MPI_Isend(b + off, (int)len, MPI_BYTE, to, tag, MPI_COMM_WORLD, &req[r++]);
    }
    return r;
}

/* Posts the sends of *size, then of the buffer b of that many bytes, to
 * process `to`; returns how many requests (1 + chunks(*size)). */
static size_t send_sized(const uint64_t *size, const char *b, int to, int tag, MPI_Request *req)
{
    MPI_Isend(size, (int)sizeof *size, MPI_BYTE, to, tag, MPI_COMM_WORLD, req);
    return 1 + send_buffer(b, *size, to, tag, req + 1);
}

/* ---- process 0 ---- */

typedef struct remote {
    size_t                    n;
    const char *const        *files;
    uint8_t                  *received; /* per file: its messages were taken */
    const teller_ingest_opts *ingest;
    uint64_t                  bytes, summary_bytes; /* received so far (under mpi_mu with threads) */
    uint64_t                  answer_bytes;         /* of them, the readers' answers to the build's questions */
    size_t                   *nsources; /* per file: the sources its store holds */
    char                    **summary;  /* per file another process read: the summary of its collectives */
    uint64_t                 *summary_size;
} remote;

/* Receives len bytes of file `path` from process `from` with tag. With
 * the load's threads it does not hold mpi_mu while it waits: a reader
 * sends a batch of files only once process 0 has taken its earlier ones,
 * which another thread may be taking meanwhile. Every wait_note_s seconds
 * of waiting it says so: a process that stalls is named. */
static void recv_bytes(void *p, size_t len, int from, int tag, const char *path)
{
    MPI_Request rq;
    if (threaded)
        pthread_mutex_lock(&mpi_mu);
    MPI_Irecv(p, (int)len, MPI_BYTE, from, tag, MPI_COMM_WORLD, &rq);
    int64_t t0 = teller_mono_ns();
    double next = wait_note_s;
    for (;;) {
        int done = 0;
        MPI_Test(&rq, &done, MPI_STATUS_IGNORE);
        if (threaded)
            pthread_mutex_unlock(&mpi_mu);
        if (done)
            return;
        nanosleep(&(struct timespec){0, 20000}, NULL);
        double waited = (double)(teller_mono_ns() - t0) / 1e9;
        if (waited >= next) {
            fprintf(stderr, "teller-mpi: process 0 has waited %.0f s for %s from process %d\n", waited, path, from);
            next += wait_note_s;
        }
        if (threaded)
            pthread_mutex_lock(&mpi_mu);
    }
}

/* Receives a buffer of size bytes (malloc'd) in messages of CHUNK bytes
 * at most. */
static char *recv_buffer(uint64_t size, int from, int tag, const char *path)
{
    char *b = malloc(size ? size : 1);
    if (!b) { /* the sender waits on this file: there is no clean way on */
        fprintf(stderr, "teller-mpi: process 0: out of memory receiving %llu bytes\n", (unsigned long long)size);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    for (size_t off = 0; off < size; off += CHUNK)
        recv_bytes(b + off, size - off < CHUNK ? size - off : CHUNK, from, tag, path);
    return b;
}

/* Receives file i's header and, when it was read, its packed store and
 * its summary (malloc'd buffers in *buf and *sum). */
static void recv_file(size_t i, size_t n, const char *path, file_head *h, char **buf, char **sum)
{
    int from = owner(i, n);
    *buf = *sum = NULL;
    recv_bytes(h, sizeof *h, from, (int)i, path);
    /* what crosses is input like a file: its texts end in the struct */
    h->err.file[sizeof h->err.file - 1] = 0;
    h->err.msg[sizeof h->err.msg - 1] = 0;
    if (h->err.code != TELLER_OK)
        return;
    *buf = recv_buffer(h->size, from, (int)i, path);
    *sum = recv_buffer(h->summary_size, from, (int)i, path);
}

/* teller_load's reader on process 0: its own files from disk, the others'
 * from the process that read them */
static teller_status read_remote(void *ctx, size_t i, const char *path, teller_store *into, teller_error *err)
{
    remote *R = ctx;
    size_t had = teller_store_num_sources(into);
    if (owner(i, R->n) == 0) {
        teller_status s = teller_ingest_file(into, path, R->ingest, err);
        R->nsources[i] = teller_store_num_sources(into) - had;
        return s;
    }
    file_head h;
    char *buf, *sum;
    recv_file(i, R->n, path, &h, &buf, &sum);
    R->received[i] = 1;
    if (threaded)
        pthread_mutex_lock(&mpi_mu);
    R->bytes += sizeof h + (h.err.code == TELLER_OK ? h.size + h.summary_size : 0);
    R->summary_bytes += h.err.code == TELLER_OK ? h.summary_size : 0;
    if (threaded)
        pthread_mutex_unlock(&mpi_mu);
    if (h.err.code != TELLER_OK) {
        *err = h.err;
        return h.err.code;
    }
    teller_status s = teller_pack_append(into, buf, h.size, err);
    free(buf);
    R->nsources[i] = teller_store_num_sources(into) - had;
    R->summary[i] = sum;
    R->summary_size[i] = h.summary_size;
    return s;
}

static void remote_free(remote *R)
{
    for (size_t i = 0; R->summary && i < R->n; i++)
        free(R->summary[i]);
    free(R->summary);
    free(R->summary_size);
    free(R->nsources);
    free(R->received);
}

/* teller_load's summaries on process 0: those of the files the others
 * read, for their sources (files append their sources in order) */
static teller_status remote_summaries(void *ctx, teller_store *st, teller_source_summary *sr, teller_error *err)
{
    remote *R = ctx;
    teller_status s = TELLER_OK;
    for (size_t i = 0, s0 = 0; i < R->n && s == TELLER_OK; s0 += R->nsources[i], i++)
        if (R->summary[i])
            s = teller_summary_read(st, s0, R->nsources[i], R->summary[i], R->summary_size[i], R->files[i], sr,
                                    err);
    return s;
}

/* One of the build's questions (teller_tree_holders, rounds.h): what each
 * reader is asked, made for its sources, and where its answer goes. */
typedef struct question {
    void *(*make)(const teller_store *st, size_t s0, size_t nsrc, const struct question *q, size_t *n);
    teller_status (*take)(teller_store *st, size_t s0, size_t nsrc, const void *buf, size_t n, int from,
                          const struct question *q, teller_error *err);
    const int64_t          *last;  /* unmarked: per source, its rank's last marker's end */
    int64_t               (*span)[5];
    teller_source_summary  *sr;    /* stamped */
    int64_t *const         *end;
} question;

/* Asks every reader q for its sources and takes each answer; with q NULL,
 * a 0 that tells each reader there is no more (the load is over). Every
 * reader's answer is taken, so that none waits forever; the first refused
 * is the error. */
static teller_status ask_readers(teller_store *st, remote *R, const question *q, teller_error *err)
{
    int tag = (int)tag_bound();
    size_t *s0 = calloc((size_t)nproc + 1, sizeof *s0);
    uint64_t *size = calloc((size_t)nproc + 1, sizeof *size);
    char **buf = calloc((size_t)nproc + 1, sizeof *buf);
    if (!s0 || !size || !buf) {
        fprintf(stderr, "teller-mpi: process 0: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    for (size_t i = 0; i < R->n; i++) /* each process's sources follow the earlier processes' */
        s0[owner(i, R->n) + 1] += R->nsources[i];
    for (int p = 1; p <= nproc; p++)
        s0[p] += s0[p - 1];
    size_t nreq = 0;
    for (int p = 1; p < nproc; p++) {
        buf[p] = q ? q->make(st, s0[p], s0[p + 1] - s0[p], q, &size[p]) : NULL;
        if (q && !buf[p]) {
            fprintf(stderr, "teller-mpi: process 0: out of memory\n");
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        nreq += 1 + chunks(size[p]);
    }
    MPI_Request *req = malloc((nreq + 1) * sizeof *req);
    if (!req) {
        fprintf(stderr, "teller-mpi: process 0: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    nreq = 0;
    for (int p = 1; p < nproc; p++)
        nreq += send_sized(&size[p], buf[p], p, tag, req + nreq);
    teller_status s = TELLER_OK;
    for (int p = 1; q && p < nproc; p++) {
        uint64_t n;
        recv_bytes(&n, sizeof n, p, tag, "its files' answer");
        char *ans = recv_buffer(n, p, tag, "its files' answer");
        R->bytes += sizeof n + n;
        R->answer_bytes += n;
        teller_error e;
        teller_status t = q->take(st, s0[p], s0[p + 1] - s0[p], ans, n, p, q, &e);
        if (t != TELLER_OK && s == TELLER_OK) {
            *err = e;
            s = t;
        }
        free(ans);
    }
    MPI_Waitall((int)nreq, req, MPI_STATUSES_IGNORE);
    for (int p = 0; p < nproc; p++)
        free(buf[p]);
    free(buf);
    free(size);
    free(req);
    free(s0);
    return s;
}

static void *unmarked_make(const teller_store *st, size_t s0, size_t nsrc, const question *q, size_t *n)
{
    return teller_unmarked_pack(st, s0, nsrc, q->last, n);
}

static teller_status unmarked_take(teller_store *st, size_t s0, size_t nsrc, const void *buf, size_t n, int from,
                                   const question *q, teller_error *err)
{
    return teller_unmarked_take(st, s0, nsrc, buf, n, from, q->span, err);
}

static void *stamped_make(const teller_store *st, size_t s0, size_t nsrc, const question *q, size_t *n)
{
    (void)q;
    return teller_steps_pack(st, s0, nsrc, n);
}

static teller_status stamped_take(teller_store *st, size_t s0, size_t nsrc, const void *buf, size_t n, int from,
                                  const question *q, teller_error *err)
{
    return teller_stamps_take(st, s0, nsrc, q->sr, q->end, buf, n, from, err);
}

/* teller_tree_holders on process 0: the readers hold the given sources */
static teller_status holders_unmarked(void *ctx, teller_store *st, const teller_source_summary *sr,
                                      const int64_t *last, int64_t (*span)[5], teller_error *err)
{
    (void)sr;
    question q = {.make = unmarked_make, .take = unmarked_take, .last = last, .span = span};
    return ask_readers(st, ctx, &q, err);
}

static teller_status holders_stamped(void *ctx, teller_store *st, teller_source_summary *sr, int64_t *const *end,
                                     teller_error *err)
{
    question q = {.make = stamped_make, .take = stamped_take, .sr = sr, .end = end};
    return ask_readers(st, ctx, &q, err);
}

static void announce(const plan *p, char *names)
{
    MPI_Bcast((void *)p, (int)sizeof *p, MPI_BYTE, 0, MPI_COMM_WORLD);
    if (p->n)
        MPI_Bcast(names, (int)p->names_len, MPI_BYTE, 0, MPI_COMM_WORLD);
}

/* cli_loader on process 0 */
static teller_status mpi_load(teller_store *st, const char *const *files, size_t n, const teller_load_opts *opts,
                              teller_error *err)
{
    if (n == 0) /* an empty plan would end the readers */
        return teller_load_given(st, files, n, opts, NULL, NULL, err);
    plan p;
    memset(&p, 0, sizeof p);
    p.n = n;
    p.ingest = opts->ingest;
    p.jobs = opts->jobs;
    const char *pattern = opts->tree.step_pattern;
    p.pattern_len = pattern ? strlen(pattern) + 1 : 0;
    for (size_t i = 0; i < n; i++)
        p.names_len += strlen(files[i]) + 1;
    p.names_len += n + p.pattern_len;
    char *names = malloc(p.names_len ? p.names_len : 1);
    size_t *same_as = malloc((n ? n : 1) * sizeof *same_as);
    remote R = {.n = n,
                .files = files,
                .received = calloc(n ? n : 1, 1),
                .ingest = &opts->ingest,
                .nsources = calloc(n ? n : 1, sizeof *R.nsources),
                .summary = calloc(n ? n : 1, sizeof *R.summary),
                .summary_size = calloc(n ? n : 1, sizeof *R.summary_size)};
    teller_status bad = TELLER_OK;
    if (!names || !same_as || !R.received || !R.nsources || !R.summary || !R.summary_size ||
        teller_load_same_files(files, n, same_as, NULL))
        bad = teller_error_set(err, TELLER_ERR_NOMEM, "(arguments)", 0, "out of memory");
    else if (n >= tag_bound() || p.names_len > INT32_MAX)
        bad = teller_error_set(err, TELLER_ERR_LIMIT, "(arguments)", 0, "too many files for one MPI run (%zu)", n);
    if (bad != TELLER_OK) {
        free(names);
        free(same_as);
        remote_free(&R);
        return bad;
    }
    size_t at = 0;
    for (size_t i = 0; i < n; i++) {
        size_t len = strlen(files[i]) + 1;
        memcpy(names + at, files[i], len);
        at += len;
    }
    for (size_t i = 0; i < n; i++) /* teller_load reads a repeat's first name only */
        names[at + i] = same_as[i] < n;
    if (pattern)
        memcpy(names + at + n, pattern, p.pattern_len);
    announce(&p, names);
    free(names);
    teller_load_opts lo = *opts;
    lo.read = read_remote;
    lo.read_ctx = &R;
    if (!threaded)
        lo.jobs = 1;
    teller_tree_holders holders = {holders_unmarked, holders_stamped, &R};
    teller_status s = teller_load_given(st, files, n, &lo, remote_summaries, &holders, err);
    /* a file teller_load did not ask for (it stopped at an error) is still
     * sent, but for a repeat: take it, so its sender ends */
    for (size_t i = 0; i < n; i++) {
        if (owner(i, n) == 0 || R.received[i] || same_as[i] < n)
            continue;
        file_head h;
        char *buf, *sum;
        recv_file(i, n, files[i], &h, &buf, &sum);
        free(buf);
        free(sum);
    }
    free(same_as);
    ask_readers(NULL, &R, NULL, err); /* the readers answer questions until this */
    /* bench/scale.sh reads what crossed the wire from here */
    if (getenv("TELLER_MPI_STATS"))
        fprintf(stderr,
                "teller-mpi: %d processes, %zu files; process 0 received %llu bytes, %llu of them summaries, %llu of "
                "them answers\n",
                nproc, n, (unsigned long long)R.bytes, (unsigned long long)R.summary_bytes,
                (unsigned long long)R.answer_bytes);
    remote_free(&R);
    return s;
}

/* ---- the other processes ---- */

typedef struct share {
    const plan   *p;
    const teller_tree_opts *tree; /* jobs 1: each file is one task */
    char        **files;
    const char   *repeat; /* per file: 1 for a repeat, not read */
    size_t        lo;    /* this process reads files lo, lo + 1, ... */
    size_t        first; /* the batch being read starts at file lo + first */
    file_head    *head;  /* per file of the share */
    char        **buf;   /* per file: its packed store */
    char        **sum;   /* per file: the summary of its collectives */
    teller_store **part; /* per file of the batch being read: its store, once packed (NULL: none) */
} share;

static void read_pack(void *ctx, size_t b)
{
    share *S = ctx;
    size_t k = S->first + b;
    file_head *h = &S->head[k];
    const char *path = S->files[S->lo + k];
    memset(h, 0, sizeof *h);
    teller_error_clear(&h->err);
    if (S->repeat[S->lo + k])
        return;
    teller_store *st = teller_store_create();
    if (!st) {
        teller_error_set(&h->err, TELLER_ERR_NOMEM, path, 0, "out of memory");
        return;
    }
    /* its trees built as the run's build will build them (the summary names
     * events by that order), packed with its summary, then kept */
    teller_source_summary *sr = NULL;
    teller_status rs = teller_ingest_file(st, path, &S->p->ingest, &h->err);
    if (rs == TELLER_OK && (rs = teller_tree_local(st, S->tree, &sr, &h->err)) != TELLER_OK)
        snprintf(h->err.file, sizeof h->err.file, "%s", path); /* it said "(trace)" */
    if (rs == TELLER_OK) {
        size_t n = 0, ns = 0;
        S->buf[k] = teller_pack_store(st, &n);
        S->sum[k] = S->buf[k] ? teller_summary_pack(st, sr, &ns) : NULL;
        h->size = n;
        h->summary_size = ns;
        if (!S->sum[k])
            teller_error_set(&h->err, TELLER_ERR_NOMEM, path, 0, "out of memory packing the file");
    }
    teller_source_summary_free(sr, teller_store_num_sources(st));
    if (h->err.code == TELLER_OK)
        S->part[k] = st;
    else
        teller_store_free(st);
}

/* Posts the sends of files [a, b) of the share; returns their requests
 * (malloc'd, *nreq of them) and sets *rc to 1 when one could not be read. */
static MPI_Request *send_batch(share *S, size_t a, size_t b, int *nreq, int *rc)
{
    size_t n = 0;
    for (size_t k = a; k < b; k++)
        n += !S->repeat[S->lo + k] + (S->head[k].err.code == TELLER_OK ? chunks(S->head[k].size) + chunks(S->head[k].summary_size) : 0);
    MPI_Request *req = malloc((n ? n : 1) * sizeof *req);
    if (!req) {
        fprintf(stderr, "teller-mpi: process %d: out of memory\n", me);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    size_t r = 0;
    for (size_t k = a; k < b; k++) {
        file_head *h = &S->head[k];
        int tag = (int)(S->lo + k);
        if (S->repeat[S->lo + k])
            continue;
        MPI_Isend(h, (int)sizeof *h, MPI_BYTE, 0, tag, MPI_COMM_WORLD, &req[r++]);
        if (h->err.code != TELLER_OK) {
            fprintf(stderr, "teller-mpi: process %d cannot read its file %s: %s:%llu: %s\n", me, S->files[S->lo + k],
                    h->err.file, (unsigned long long)h->err.offset, h->err.msg);
            *rc = 1;
            continue;
        }
        r += send_buffer(S->buf[k], h->size, 0, tag, &req[r]);
        r += send_buffer(S->sum[k], h->summary_size, 0, tag, &req[r]);
    }
    *nreq = (int)r;
    return req;
}

/* The reader's side of the build's questions (rounds.h): process 0's
 * questions about the sources of the store it kept, each answered, until
 * process 0 sends 0 (the load is over, or failed). A question it cannot
 * take ends the run: process 0 waits for the answer. */
static void answer_questions(teller_store *kept)
{
    int tag = (int)tag_bound();
    for (;;) {
        uint64_t n, cn = 0;
        MPI_Recv(&n, (int)sizeof n, MPI_BYTE, 0, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        if (n == 0)
            return;
        char *buf = malloc(n), *ans = NULL;
        if (!buf) {
            fprintf(stderr, "teller-mpi: process %d: out of memory\n", me);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        for (size_t off = 0; off < n; off += CHUNK)
            MPI_Recv(buf + off, (int)(n - off < CHUNK ? n - off : CHUNK), MPI_BYTE, 0, tag, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
        teller_error err;
        size_t cz = 0;
        if (teller_question_answer(&kept, 1, buf, n, (void **)&ans, &cz, &err) != TELLER_OK) {
            fprintf(stderr, "teller-mpi: process %d cannot take the build's question: %s:%llu: %s\n", me, err.file,
                    (unsigned long long)err.offset, err.msg);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        cn = cz;
        free(buf);
        size_t nreq = 1 + chunks(cn);
        MPI_Request *req = malloc(nreq * sizeof *req);
        if (!req) {
            fprintf(stderr, "teller-mpi: process %d: out of memory\n", me);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        send_sized(&cn, ans, 0, tag, req);
        MPI_Waitall((int)nreq, req, MPI_STATUSES_IGNORE);
        free(req);
        free(ans);
    }
}

/* Reads this process's share of the files of one load process 0 announces
 * and sends it; returns 1 when a file could not be read, 0, or -1 when
 * process 0 announced that nothing more is to be read. Files are
 * read `jobs` at a time; a batch is sent while the next one is read, and
 * its buffers are freed once process 0 has taken it, so that a reader
 * holds at most two batches of packed files, whatever its share. */
static int serve(void)
{
    plan p;
    MPI_Bcast(&p, (int)sizeof p, MPI_BYTE, 0, MPI_COMM_WORLD);
    if (p.n == 0)
        return -1;
    char *names = malloc(p.names_len);
    char **files = calloc(p.n, sizeof *files);
    if (!names || !files) {
        /* process 0 waits for this process's files: it must not wait forever */
        fprintf(stderr, "teller-mpi: process %d: out of memory\n", me);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    MPI_Bcast(names, (int)p.names_len, MPI_BYTE, 0, MPI_COMM_WORLD);
    size_t n = p.n, lo = n, hi = n;
    /* the paths (each with its NUL), a flag byte per file, the pattern with
     * its NUL: the last path and the pattern end where they must */
    names[p.names_len - n - p.pattern_len - 1] = 0;
    if (p.pattern_len)
        names[p.names_len - 1] = 0;
    for (size_t i = 0, at = 0; i < n; i++) {
        files[i] = names + at;
        at += strlen(files[i]) + 1;
        if (owner(i, n) == me && lo == n)
            lo = i;
        if (owner(i, n) == me)
            hi = i + 1;
    }
    size_t mine = lo < hi ? hi - lo : 0, at = 0;
    for (size_t i = 0; i < n; i++)
        at += strlen(files[i]) + 1;
    teller_tree_opts tree = teller_tree_defaults();
    tree.step_pattern = p.pattern_len ? names + at + n : NULL;
    share S = {.p = &p,
               .tree = &tree,
               .files = files,
               .repeat = names + at,
               .lo = lo,
               .head = calloc(mine ? mine : 1, sizeof *S.head),
               .buf = calloc(mine ? mine : 1, sizeof *S.buf),
               .sum = calloc(mine ? mine : 1, sizeof *S.sum),
               .part = calloc(mine ? mine : 1, sizeof *S.part)};
    /* the share's stores in one, file after file, for the build's
     * questions: as the run's store holds them */
    teller_store *kept = teller_store_create();
    teller_error err;
    if (!S.head || !S.buf || !S.sum || !S.part || !kept) {
        fprintf(stderr, "teller-mpi: process %d: out of memory\n", me);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    int jobs = p.jobs > 0 ? p.jobs : teller_num_cores(), rc = 0, nprev = 0;
    MPI_Request *prev = NULL;
    size_t prev_a = 0;
    for (size_t a = 0; a < mine; a += (size_t)jobs) {
        size_t b = a + (size_t)jobs < mine ? a + (size_t)jobs : mine;
        S.first = a;
        teller_parallel_for(jobs, b - a, read_pack, &S);
        for (size_t k = a; k < b; k++) {
            if (S.part[k] && teller_store_append_local(kept, S.part[k], &err) != TELLER_OK) {
                fprintf(stderr, "teller-mpi: process %d: %s\n", me, err.msg);
                MPI_Abort(MPI_COMM_WORLD, 1);
            }
            teller_store_free(S.part[k]);
            S.part[k] = NULL;
        }
        int ncur = 0;
        MPI_Request *cur = send_batch(&S, a, b, &ncur, &rc);
        if (prev) {
            MPI_Waitall(nprev, prev, MPI_STATUSES_IGNORE);
            for (size_t k = prev_a; k < a; k++) {
                free(S.buf[k]);
                free(S.sum[k]);
            }
            free(prev);
        }
        prev = cur;
        nprev = ncur;
        prev_a = a;
    }
    if (prev) {
        MPI_Waitall(nprev, prev, MPI_STATUSES_IGNORE);
        for (size_t k = prev_a; k < mine; k++) {
            free(S.buf[k]);
            free(S.sum[k]);
        }
        free(prev);
    }
    teller_store_fit(kept);
    answer_questions(kept);
    teller_store_free(kept);
    free(S.part);
    free(S.head);
    free(S.buf);
    free(S.sum);
    free(files);
    free(names);
    return rc;
}

int main(int argc, char **argv)
{
    int provided = MPI_THREAD_SINGLE;
    if (MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided) != MPI_SUCCESS) {
        fprintf(stderr, "teller-mpi: MPI could not start\n");
        return 1;
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &nproc);
    threaded = provided >= MPI_THREAD_SERIALIZED;
    const char *w = getenv("TELLER_MPI_WAIT");
    if (w && atof(w) > 0)
        wait_note_s = atof(w);
    int rc = 0;
    if (me != 0) {
#ifdef M_MMAP_THRESHOLD
        /* a reader's store grows file after file: columns of a MB or more
         * are mapped, so that growing one moves its pages, not copies them */
        mallopt(M_MMAP_THRESHOLD, 1 << 20);
#endif
        /* one load per plan (--baseline loads the reference first) */
        for (int r; (r = serve()) >= 0;)
            rc |= r;
    } else if (argc < 2 || strcmp(argv[1], "diagnose") != 0) {
        fprintf(stderr, "usage: mpirun -n P teller-mpi diagnose [options] TRACE_OR_CASE...\n"
                        "  the options and output of 'teller diagnose'; the rank files are read by the P processes\n");
        rc = 2;
    } else {
        cli_loader = mpi_load;
        rc = cmd_diagnose(argc - 1, argv + 1);
    }
    if (me == 0) { /* nothing more to read */
        plan none = {0};
        announce(&none, NULL);
    }
    /* no process ends before process 0 has written its output: mpirun
     * stops the job at the first exit with a failure */
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
    return rc;
}
