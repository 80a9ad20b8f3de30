/*
 * load.c - the files a user names, read as one run (include/teller/load.h).
 *
 * Reading is the slow part of every command, and the files of a run are
 * independent until the tree builder matches collectives across them, so
 * each file is read into a store of its own on a pool of threads
 * (util/pool.h), and the stores are appended to the run's store strictly in
 * the order the files were given (teller_store_append interns their strings
 * in their own id order). The run's store is therefore the one a single
 * thread reading file after file would build, id for id, and so is every
 * result computed from it. Appending is done by whichever thread finds the
 * next file in order ready, one thread at a time; a file may be read only
 * while fewer than 2 x jobs files wait to be appended, which bounds the
 * memory held in per-file stores. A per-file store, once appended, is
 * emptied and reused for a later file (teller_store_reset); the readers'
 * scratch buffers (a whole inflated file) pass from one reading to the
 * next, so there are no more of them than threads reading; once every file
 * has taken its own, those given back are freed at once, beside the other
 * threads' reading, not after the last file; and the run's
 * store is grown once to the size the files read so far predict, so that
 * neither is grown (copied) and faulted in again file after file.
 *
 * A file whose turn to be appended has come when a thread starts reading it
 * (the first file, and any other whose predecessors are all appended by
 * then) is read straight into the run's store: no copy. So is every file
 * with one thread, or one file. Per-file stores are bare (store_internal.h):
 * the tree's columns are made by the append.
 */
#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "teller/load.h"
#include "load_internal.h"
#include "../store/store_internal.h"
#include "../util/pool.h"
#include "../util/vec.h"

teller_load_opts teller_load_defaults(void)
{
    teller_load_opts o;
    memset(&o, 0, sizeof o);
    o.ingest = teller_ingest_defaults();
    o.tree = teller_tree_defaults();
    return o;
}

/* ---- names -> files ---- */

/* A .json file in a directory is taken only if it looks like a trace (a
 * predictions or metrics file beside the traces is not one). */
static int looks_like_trace(const char *path)
{
    size_t l = strlen(path);
    if (l < 5 || strcmp(path + l - 5, ".json"))
        return 1;
    struct stat sb;
    if (stat(path, &sb) != 0 || !S_ISREG(sb.st_mode))
        return 1; /* let the reader say why (a pipe is not opened: it would wait for a writer) */
    FILE *f = fopen(path, "rb");
    if (!f)
        return 1; /* let the reader say why */
    static const size_t head_size = 65536;
    char *head = malloc(head_size);
    if (!head) {
        fclose(f);
        return 1;
    }
    size_t n = fread(head, 1, head_size - 1, f);
    fclose(f);
    head[n] = 0;
    const char *p = head;
    while (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t')
        p++;
    int yes = *p == '[' || strstr(head, "\"traceEvents\"") != NULL;
    free(head);
    return yes;
}

static int is_trace_name(const char *n)
{
    size_t l = strlen(n);
    return (l > 5 && !strcmp(n + l - 5, ".json")) || (l > 8 && !strcmp(n + l - 8, ".json.gz")) ||
           (l > 7 && !strcmp(n + l - 7, ".sqlite")) || (l > 4 && !strcmp(n + l - 4, ".tlt"));
}

static int name_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int push_path(char ***list, size_t *n, size_t *cap, const char *dir, const char *name)
{
    if (TELLER_GROW(*list, *cap, *n + 1))
        return -1;
    size_t len = (dir ? strlen(dir) + 1 : 0) + strlen(name) + 1;
    char *p = malloc(len);
    if (!p)
        return -1;
    if (dir)
        snprintf(p, len, "%s/%s", dir, name);
    else
        memcpy(p, name, len);
    (*list)[(*n)++] = p;
    return 0;
}

/* Appends the trace files of directory d (sorted by name) to *list; a
 * directory that cannot be opened adds nothing. *rejected counts the .json
 * files that do not look like traces, the last of them named in
 * rejected_name (cap bytes). 0 or -1 (out of memory). */
static int collect_dir(const char *d, char ***list, size_t *n, size_t *cap, int *rejected, char *rejected_name,
                       size_t name_cap)
{
    DIR *dir = opendir(d);
    if (!dir)
        return 0;
    size_t first = *n;
    struct dirent *de;
    int rc = 0;
    while (!rc && (de = readdir(dir)) != NULL) {
        if (de->d_name[0] == '.' || !is_trace_name(de->d_name) || !strcmp(de->d_name, "truth.json"))
            continue;
        char full[4096];
        snprintf(full, sizeof full, "%s/%s", d, de->d_name);
        if (looks_like_trace(full)) {
            rc = push_path(list, n, cap, d, de->d_name);
        } else {
            (*rejected)++;
            snprintf(rejected_name, name_cap, "%s", full);
        }
    }
    closedir(dir);
    if (!rc && *n > first)
        teller_sort(*list + first, *n - first, sizeof **list, name_cmp);
    return rc;
}

void teller_load_files_free(char **files, size_t n)
{
    for (size_t i = 0; files && i < n; i++)
        free(files[i]);
    free(files);
}

teller_status teller_load_expand(const char *const *names, size_t nnames, char ***files_out, size_t *nfiles_out,
                                 teller_error *err)
{
    char **files = NULL;
    size_t n = 0, cap = 0;
    *files_out = NULL;
    *nfiles_out = 0;
    for (size_t i = 0; i < nnames; i++) {
        struct stat sb;
        if (stat(names[i], &sb) != 0) {
            teller_load_files_free(files, n);
            return teller_error_set(err, TELLER_ERR_IO, names[i], 0, "no such file or directory");
        }
        if (!S_ISDIR(sb.st_mode)) {
            if (push_path(&files, &n, &cap, NULL, names[i]))
                goto oom;
            continue;
        }
        size_t before = n, l = strlen(names[i]) + 8;
        char *sub = malloc(l);
        if (!sub)
            goto oom;
        snprintf(sub, l, "%s/traces", names[i]);
        int rejected = 0;
        char rej[4096] = "";
        int bad = collect_dir(names[i], &files, &n, &cap, &rejected, rej, sizeof rej) ||
                  collect_dir(sub, &files, &n, &cap, &rejected, rej, sizeof rej);
        free(sub);
        if (bad)
            goto oom;
        if (n == before) {
            teller_load_files_free(files, n);
            if (rejected)
                return teller_error_set(err, TELLER_ERR_ARG, names[i], 0,
                                        "no trace files in this directory: %d .json file%s not a trace (%s: neither "
                                        "a JSON array nor an object with \"traceEvents\")",
                                        rejected, rejected == 1 ? " is" : "s are", rej);
            return teller_error_set(err, TELLER_ERR_ARG, names[i], 0,
                                    "no trace files (*.json, *.json.gz, *.sqlite, *.tlt) in this directory");
        }
    }
    if (n == 0)
        return teller_error_set(err, TELLER_ERR_ARG, "(arguments)", 0, "no trace given");
    *files_out = files;
    *nfiles_out = n;
    return TELLER_OK;
oom:
    teller_load_files_free(files, n);
    return teller_error_set(err, TELLER_ERR_NOMEM, "(arguments)", 0, "out of memory");
}

/* ---- files -> one store ---- */

typedef struct load_run {
    const char *const      *files;
    size_t                  n;
    const teller_load_opts *o;
    teller_store           *st;      /* the run's store; only the appending thread touches it */
    const size_t           *same_as; /* per file: index of an earlier name of the same file, or n */
    const uint64_t         *bytes;   /* per file: size */
    uint64_t                total, done;
    teller_store          **part;    /* per file: read, waiting to be appended */
    teller_status          *status;  /* per file */
    teller_error           *errs;    /* per file */
    uint8_t                *ready;   /* per file: read (or skipped), part/status set */
    size_t                  appended;/* files [0, appended) are in st */
    size_t                  window;  /* a file i is read only once i < appended + window */
    teller_store          **spare;   /* emptied per-file stores to reuse */
    size_t                  nspare;
    struct scratch { void *p; size_t cap; } *scratch; /* readers' scratch buffers, */
    size_t                  nscratch;                  /* one per reading thread at most */
    size_t                  taken;   /* files past taking a spare store and scratch (or not needing them): */
                                     /* at n, a store or scratch given back is freed, not kept */
    int                     appending, failed;
    teller_error            fail;    /* the error to return when failed */
    pthread_mutex_t         mu;
    pthread_cond_t          cv;
} load_run;

/* Reads file i into `into`, through the caller's reader when it has one. */
static teller_status read_file(const teller_load_opts *o, size_t i, const char *path, teller_store *into, teller_error *err)
{
    return o->read ? o->read(o->read_ctx, i, path, into, err) : teller_ingest_file(into, path, &o->ingest, err);
}

/* Puts file k (read, or a repeat) into the run's store; the caller holds
 * no lock but is the only appending thread. Returns TELLER_OK or the
 * error, in *e. */
static teller_status put_file(load_run *r, size_t k, teller_store *part, teller_status read, teller_error *e)
{
    teller_status s = read;
    if (s != TELLER_OK)
        *e = r->errs[k];
    else if (r->same_as[k] < r->n)
        teller_store_warn(r->st, r->files[k], 0, "the same file as %s: read once", r->files[r->same_as[k]]);
    else if (part) {
        /* grow the run's store once, to what the files so far predict */
        size_t need = r->st->ev.n + part->ev.n, nargs = r->st->nargs + part->nargs;
        uint64_t seen = r->done + r->bytes[k];
        if (need > r->st->ev_cap && seen > 0 && r->total > seen) {
            double scale = (double)r->total / (double)seen;
            size_t want = (size_t)((double)need * scale), want_args = (size_t)((double)nargs * scale);
            if (want < TELLER_NONE && want_args < TELLER_NONE) {
                /* a failure here only means growing as it goes */
                (void)teller_store_reserve_events(r->st, want);
                (void)teller_store_reserve_args(r->st, want_args);
            }
        }
        s = teller_store_append(r->st, part, e);
    }
    if (r->same_as[k] == r->n) /* a repeat was never counted in the total */
        r->done += r->bytes[k];
    if (s == TELLER_OK && r->o->progress)
        r->o->progress(r->o->progress_ctx, r->files[k], r->done, r->total);
    return s;
}

static void read_one(void *ctx, size_t i)
{
    load_run *r = ctx;
    pthread_mutex_lock(&r->mu);
    while (!r->failed && i >= r->appended + r->window)
        pthread_cond_wait(&r->cv, &r->mu);
    int stop = r->failed;
    /* every file before i is in the run's store, and nothing is appended
     * to it before i is: i is read straight into it, without a copy */
    int direct = r->appended == i, reads = !stop && r->same_as[i] == r->n;
    if (!reads)
        r->taken++;
    pthread_mutex_unlock(&r->mu);
    teller_store *part = NULL, *into = NULL;
    teller_status s = TELLER_OK;
    if (reads) {
        teller_error_clear(&r->errs[i]);
        pthread_mutex_lock(&r->mu);
        if (!direct)
            part = r->nspare ? r->spare[--r->nspare] : NULL;
        struct scratch sc = r->nscratch ? r->scratch[--r->nscratch] : (struct scratch){NULL, 0};
        r->taken++;
        pthread_mutex_unlock(&r->mu);
        if (!direct && !part && (part = teller_store_create()))
            part->bare = 1;
        into = direct ? r->st : part;
        if (into) { /* the scratch goes with the thread, not with the store that waits */
            into->scratch = sc.p;
            into->scratch_cap = sc.cap;
        } else {
            free(sc.p);
        }
        s = into ? read_file(r->o, i, r->files[i], into, &r->errs[i])
                 : teller_error_set(&r->errs[i], TELLER_ERR_NOMEM, r->files[i], 0, "out of memory");
    }
    pthread_mutex_lock(&r->mu);
    void *drop = NULL; /* a scratch no later file will take: freed now, beside the others' work */
    if (into && into->scratch) {
        if (r->taken < r->n)
            r->scratch[r->nscratch++] = (struct scratch){into->scratch, into->scratch_cap};
        else
            drop = into->scratch;
        into->scratch = NULL;
        into->scratch_cap = 0;
    }
    r->part[i] = part;
    r->status[i] = s;
    r->ready[i] = 1;
    if (r->appending) { /* the appending thread will take it */
        pthread_mutex_unlock(&r->mu);
        free(drop);
        return;
    }
    r->appending = 1;
    pthread_mutex_unlock(&r->mu);
    free(drop);
    pthread_mutex_lock(&r->mu);
    while (!r->failed && r->appended < r->n && r->ready[r->appended]) {
        size_t k = r->appended;
        teller_store *p = r->part[k];
        r->part[k] = NULL;
        teller_status rs = r->status[k];
        int keep = r->taken < r->n; /* a later file may take p */
        pthread_mutex_unlock(&r->mu);
        teller_error e;
        teller_status ps = put_file(r, k, p, rs, &e);
        if (p && keep) {
            teller_store_reset(p);
        } else {
            teller_store_free(p);
            p = NULL;
        }
        pthread_mutex_lock(&r->mu);
        if (p)
            r->spare[r->nspare++] = p; /* at most one per file in flight */
        if (ps != TELLER_OK) {
            r->failed = 1;
            r->fail = e;
        }
        r->appended = k + 1;
        pthread_cond_broadcast(&r->cv);
    }
    r->appending = 0;
    pthread_mutex_unlock(&r->mu);
}

int teller_load_same_files(const char *const *files, size_t n, size_t *same_as, uint64_t *bytes)
{
    dev_t *dev = malloc((n ? n : 1) * sizeof *dev);
    ino_t *ino = malloc((n ? n : 1) * sizeof *ino);
    if (!dev || !ino) {
        free(dev);
        free(ino);
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        struct stat sb;
        int known = stat(files[i], &sb) == 0;
        same_as[i] = n;
        dev[i] = known ? sb.st_dev : 0;
        ino[i] = known ? sb.st_ino : 0;
        if (bytes)
            bytes[i] = known ? (uint64_t)sb.st_size : 0;
        for (size_t j = 0; known && j < i && same_as[i] == n; j++)
            if (same_as[j] == n && ino[j] && dev[j] == dev[i] && ino[j] == ino[i])
                same_as[i] = j;
    }
    free(dev);
    free(ino);
    return 0;
}

teller_status teller_load(teller_store *st, const char *const *files, size_t n, const teller_load_opts *opts,
                          teller_error *err)
{
    return teller_load_given(st, files, n, opts, NULL, NULL, err);
}

teller_status teller_load_given(teller_store *st, const char *const *files, size_t n, const teller_load_opts *opts,
                                teller_load_summaries_fn summaries, const teller_tree_holders *holders,
                                teller_error *err)
{
    teller_load_opts def = teller_load_defaults();
    const teller_load_opts *o = opts ? opts : &def;
    int jobs = o->jobs > 0 ? o->jobs : teller_num_cores();
    if (n == 0)
        return teller_error_set(err, TELLER_ERR_ARG, "(arguments)", 0, "no trace given");
    size_t *same_as = malloc(n * sizeof *same_as);
    uint64_t *bytes = calloc(n, sizeof *bytes);
    load_run r;
    memset(&r, 0, sizeof r);
    r.part = calloc(n, sizeof *r.part);
    r.status = calloc(n, sizeof *r.status);
    r.errs = malloc(n * sizeof *r.errs);
    r.ready = calloc(n, 1);
    r.spare = calloc(n, sizeof *r.spare);
    r.scratch = calloc(n, sizeof *r.scratch);
    teller_status s = TELLER_OK;
    /* the same file named twice (by any path) is read once */
    if (!same_as || !bytes || !r.part || !r.status || !r.errs || !r.ready || !r.spare || !r.scratch ||
        teller_load_same_files(files, n, same_as, bytes)) {
        s = teller_error_set(err, TELLER_ERR_NOMEM, "(arguments)", 0, "out of memory");
        goto done;
    }
    for (size_t i = 0; i < n; i++)
        if (same_as[i] == n)
            r.total += bytes[i];
    r.files = files;
    r.n = n;
    r.o = o;
    r.st = st;
    r.same_as = same_as;
    r.bytes = bytes;
    r.window = 2 * (size_t)jobs;
    if (jobs <= 1 || n == 1) {
        /* one thread: straight into the run's store */
        for (size_t i = 0; i < n && s == TELLER_OK; i++) {
            teller_status rs = TELLER_OK;
            if (same_as[i] == n) {
                teller_error_clear(&r.errs[i]);
                rs = read_file(o, i, files[i], st, &r.errs[i]);
            }
            teller_error e;
            s = put_file(&r, i, NULL, rs, &e);
            if (s != TELLER_OK && err)
                *err = e;
        }
    } else {
        pthread_mutex_init(&r.mu, NULL);
        pthread_cond_init(&r.cv, NULL);
        teller_parallel_for(jobs, n, read_one, &r);
        pthread_cond_destroy(&r.cv);
        pthread_mutex_destroy(&r.mu);
        if (r.failed) {
            if (err)
                *err = r.fail;
            s = r.fail.code;
        }
    }
    if (s != TELLER_OK)
        goto done;
    teller_tree_opts to = o->tree;
    to.jobs = jobs;
    teller_source_summary *sr = summaries ? calloc(st->nsources ? st->nsources : 1, sizeof *sr) : NULL;
    if (summaries && !sr)
        s = teller_error_set(err, TELLER_ERR_NOMEM, "(trace)", 0, "out of memory");
    else if (summaries)
        s = summaries(o->read_ctx, st, sr, err);
    if (s == TELLER_OK)
        s = teller_tree_build_given(st, &to, sr, holders, err);
    teller_source_summary_free(sr, st->nsources);
    if (s == TELLER_OK && !o->force)
        s = teller_load_check_run(st, err);
done:
    for (size_t i = 0; r.part && i < n; i++)
        teller_store_free(r.part[i]);
    for (size_t i = 0; i < r.nspare; i++)
        teller_store_free(r.spare[i]);
    free(r.spare);
    for (size_t i = 0; i < r.nscratch; i++)
        free(r.scratch[i].p);
    free(r.scratch);
    free(same_as);
    free(bytes);
    free(r.part);
    free(r.status);
    free(r.errs);
    free(r.ready);
    return s;
}

/* ---- can these be one run? ---- */

static size_t uf_find(size_t *up, size_t a)
{
    while (up[a] != a)
        a = up[a] = up[up[a]];
    return a;
}

static void uf_join(size_t *up, size_t a, size_t b)
{
    a = uf_find(up, a);
    b = uf_find(up, b);
    if (a != b)
        up[a > b ? a : b] = a < b ? a : b;
}

typedef struct span {
    int64_t lo, hi;
    size_t  src;
} span;

static int span_cmp(const void *a, const void *b)
{
    const span *x = a, *y = b;
    if (x->lo != y->lo)
        return x->lo < y->lo ? -1 : 1;
    return x->src < y->src ? -1 : x->src > y->src;
}

/* "2025-12-31 13:55 UTC, host h" for a source (buf of 160 bytes) */
static const char *describe(const teller_store *st, const span *sp, char *buf, size_t cap)
{
    const teller_source *so = teller_store_source_c(st, (uint32_t)sp->src);
    time_t t = (time_t)(sp->lo / 1000000000);
    struct tm tm;
    char when[48] = "no time";
    if (gmtime_r(&t, &tm))
        strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S UTC", &tm);
    if (so->host)
        snprintf(buf, cap, "from %s on host %s", when, teller_store_str(st, so->host));
    else
        snprintf(buf, cap, "from %s", when);
    return buf;
}

typedef struct ranked {
    int32_t  rank;
    uint32_t src;
} ranked;

static int ranked_cmp(const void *a, const void *b)
{
    const ranked *x = a, *y = b;
    if (x->rank != y->rank)
        return x->rank < y->rank ? -1 : 1;
    return x->src < y->src ? -1 : x->src > y->src;
}

teller_status teller_load_check_run(const teller_store *st, teller_error *err)
{
    size_t ns = teller_store_num_sources(st);
    if (ns < 2)
        return TELLER_OK;
    /* the same rank in two files: sort by rank, look at neighbours */
    ranked *rk = malloc(ns * sizeof *rk);
    if (!rk)
        return teller_error_set(err, TELLER_ERR_NOMEM, "(trace)", 0, "out of memory");
    size_t nrk = 0;
    for (size_t i = 0; i < ns; i++)
        if (teller_store_source_c(st, (uint32_t)i)->rank >= 0)
            rk[nrk++] = (ranked){teller_store_source_c(st, (uint32_t)i)->rank, (uint32_t)i};
    teller_sort(rk, nrk, sizeof *rk, ranked_cmp);
    for (size_t k = 0; k < nrk; k++) {
        const teller_source *a = teller_store_source_c(st, rk[k].src);
        for (size_t j = k + 1; j < nrk && rk[j].rank == rk[k].rank; j++) {
            const teller_source *b = teller_store_source_c(st, rk[j].src);
            if (a->path == b->path)
                continue; /* one file's processes: the tree builder warns */
            free(rk);
            return teller_error_set(err, TELLER_ERR_ARG, teller_store_str(st, a->path), 0,
                                    "rank %d is also in %s: these files cannot be one run", (int)a->rank,
                                    teller_store_str(st, b->path));
        }
    }
    free(rk);
    /* different world sizes: every recorded one against the first */
    const teller_source *w = NULL;
    for (size_t i = 0; i < ns; i++) {
        const teller_source *b = teller_store_source_c(st, (uint32_t)i);
        if (b->world_size <= 0)
            continue;
        if (!w)
            w = b;
        else if (b->world_size != w->world_size && b->path != w->path)
            return teller_error_set(err, TELLER_ERR_ARG, teller_store_str(st, w->path), 0,
                                    "world size %d here, %d in %s: these files cannot be one run",
                                    (int)w->world_size, (int)b->world_size, teller_store_str(st, b->path));
    }
    /* sources belong together when one file holds them, their time spans
     * overlap, or a collective has members on both */
    size_t *up = malloc(ns * sizeof *up);
    span *sp = malloc(ns * sizeof *sp);
    if (!up || !sp) {
        free(up);
        free(sp);
        return teller_error_set(err, TELLER_ERR_NOMEM, "(trace)", 0, "out of memory");
    }
    for (size_t s = 0; s < ns; s++) {
        up[s] = s;
        sp[s] = (span){INT64_MAX, INT64_MIN, s};
    }
    const teller_events *ev = teller_store_events(st);
    for (size_t i = 0; i < ev->n; i++) {
        span *x = &sp[ev->source[i]];
        int64_t e = ev->start_ns[i] + ev->dur_ns[i];
        if (ev->start_ns[i] < x->lo)
            x->lo = ev->start_ns[i];
        if (e > x->hi)
            x->hi = e;
    }
    for (size_t i = 1; i < ns; i++) /* one file's sources are added one after the other */
        if (teller_store_source_c(st, (uint32_t)i)->path == teller_store_source_c(st, (uint32_t)(i - 1))->path)
            uf_join(up, i - 1, i);
    const teller_collective *co = teller_store_collectives(st);
    const teller_coll_member *mem = teller_store_coll_members(st);
    for (size_t c = 0; c < teller_store_num_collectives(st); c++)
        for (uint32_t m = 1; m < co[c].num_members; m++)
            uf_join(up, ev->source[mem[co[c].first_member].kernel], ev->source[mem[co[c].first_member + m].kernel]);
    span *by_time = malloc(ns * sizeof *by_time);
    if (!by_time) {
        free(up);
        free(sp);
        return teller_error_set(err, TELLER_ERR_NOMEM, "(trace)", 0, "out of memory");
    }
    memcpy(by_time, sp, ns * sizeof *sp);
    teller_sort(by_time, ns, sizeof *by_time, span_cmp);
    size_t run = ns; /* the source whose span reaches furthest so far */
    for (size_t k = 0; k < ns; k++) {
        if (by_time[k].lo > by_time[k].hi)
            continue; /* no events: nothing to judge by */
        if (run < ns && by_time[k].lo <= sp[run].hi)
            uf_join(up, run, by_time[k].src);
        if (run == ns || by_time[k].hi > sp[run].hi)
            run = by_time[k].src;
    }
    free(by_time);
    size_t a = ns, b = ns;
    for (size_t s = 0; s < ns && b == ns; s++) {
        if (sp[s].lo > sp[s].hi)
            continue;
        if (a == ns)
            a = s;
        else if (uf_find(up, s) != uf_find(up, a))
            b = s;
    }
    teller_status rc = TELLER_OK;
    if (b < ns) {
        char da[160], db[160];
        rc = teller_error_set(err, TELLER_ERR_ARG, teller_store_str(st, teller_store_source_c(st, (uint32_t)a)->path), 0,
                              "(%s) and %s (%s) share no collective and do not overlap in time: "
                              "these files cannot be one run",
                              describe(st, &sp[a], da, sizeof da),
                              teller_store_str(st, teller_store_source_c(st, (uint32_t)b)->path),
                              describe(st, &sp[b], db, sizeof db));
    }
    free(up);
    free(sp);
    return rc;
}
