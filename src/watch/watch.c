/*
 * watch.c - the watcher's stream (watch.h): which steps every rank has
 * finished, the window they are diagnosed in, what is released after,
 * and when a rank, or every rank, is said to hang.
 *
 * A step is finished on a rank once its marker is in and a later flush of
 * the rank came (the collector flushes GPU records as they complete, so
 * the work a step launched is in by the flush after its marker), or 2 s
 * passed without one (an idle service writes nothing), or the rank's
 * files ended. The steps every rank finished are diagnosed in a
 * window that also holds the `window` steps before them: each rank's
 * records of those steps are written as one .tlt image (the records whose
 * host side starts inside the window's markers, and the GPU work those
 * launched) and read by the file reader through teller_load, so the
 * window is read, tree-built and diagnosed as `teller diagnose` would.
 * Then the records before the next window are released.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "watch_internal.h"
#include "teller/ingest.h"
#include "teller/tree.h"
#include "../util/vec.h"

#define BACKLOG_PASSES 8
/* A step whose marker came this long ago is finished even if no later
 * flush came: the collector writes nothing while the service is idle, and
 * it flushed what was pending within its interval (two default ones). */
#define QUIET_NS 2000000000LL

teller_watch_opts teller_watch_defaults(void)
{
    teller_watch_opts o;
    memset(&o, 0, sizeof o);
    o.window = 64;
    o.batch = 256;
    o.hang_ns = 10000000000LL;
    o.load = teller_load_defaults();
    o.diag = teller_diag_defaults();
    return o;
}

teller_status teller_watch_open(const teller_watch_opts *opts, teller_watch **out, teller_error *err)
{
    *out = NULL;
    for (size_t i = 0; i < opts->ndirs; i++) {
        struct stat sb;
        if (stat(opts->dirs[i], &sb) || !S_ISDIR(sb.st_mode))
            return teller_error_set(err, TELLER_ERR_IO, opts->dirs[i], 0, "not a directory");
    }
    if (opts->ndirs == 0)
        return teller_error_set(err, TELLER_ERR_ARG, "(arguments)", 0, "no directory to watch");
    teller_watch *w = calloc(1, sizeof *w);
    if (!w)
        return teller_error_set(err, TELLER_ERR_NOMEM, "(watch)", 0, "out of memory");
    w->o = *opts;
    if (w->o.window == 0)
        w->o.window = 1;
    if (w->o.batch == 0)
        w->o.batch = 1;
    const char *pat = opts->load.tree.step_pattern ? opts->load.tree.step_pattern : teller_step_pattern_default();
    int rc = regcomp(&w->step_re, pat, REG_EXTENDED | REG_NOSUB);
    if (rc) {
        char m[256];
        regerror(rc, &w->step_re, m, sizeof m);
        free(w);
        return teller_error_set(err, TELLER_ERR_ARG, "--step-pattern", 0, "bad regular expression: %s", m);
    }
    const char *tmp = getenv("TMPDIR");
    snprintf(w->tmpdir, sizeof w->tmpdir, "%s/teller-watch-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(w->tmpdir)) {
        teller_status s = teller_error_set(err, TELLER_ERR_IO, w->tmpdir, 0, "cannot make a directory: %s",
                                           strerror(errno));
        regfree(&w->step_re);
        free(w);
        return s;
    }
    *out = w;
    return TELLER_OK;
}

/* ---- finished steps ---- */

/* Moves each rank's count of finished steps on; the steps every rank that
 * is waited for finished are [0, return) (with final, the steps any rank
 * has: the run ends, nothing more will come). */
static uint64_t finished(teller_watch *w, int final)
{
    uint64_t all = final ? 0 : UINT64_MAX;
    int any = 0;
    for (size_t i = 0; i < w->nranks; i++) {
        wrank *r = w->ranks[i];
        int ended = final || watch_rank_ended(r);
        uint64_t d = r->done;
        while (d - r->mk_base < r->nmk && (ended || r->mk[d - r->mk_base].flush + 1 < r->flushes ||
                                            w->now - r->mk[d - r->mk_base].read_wall >= QUIET_NS))
            d++;
        if (d > r->done) {
            r->done = d;
            r->last_step_wall = w->now;
            if (r->left && d > w->next)
                r->left = 0; /* it caught up */
        }
        if (r->left || r->mk_base + r->nmk == 0)
            continue; /* not waited for, or no step yet: a process that runs none, or one not begun */
        any = 1;
        if (final ? r->done > all : r->done < all)
            all = r->done;
    }
    return any ? all : 0;
}

/* ---- the window ---- */

typedef struct image {
    uint8_t *d;
    size_t   n, cap;
} image;

static int img_chunk(image *m, uint16_t type, uint32_t seq, const void *p, size_t n)
{
    if (n > TLT_CHUNK_MAX || TELLER_GROW(m->d, m->cap, m->n + TLT_CHUNK_HEADER + n))
        return -1;
    m->n += tlt_chunk_pack(m->d + m->n, type, seq, p, (uint32_t)n);
    return 0;
}

static int u64_cmp(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static int is_gpu_kind(uint8_t k)
{
    return k == TLT_REC_KERNEL || k == TLT_REC_MEMCPY || k == TLT_REC_MEMSET || k == TLT_REC_SYNC ||
           k == TLT_REC_EXTCORR;
}

/* The .tlt image of rank r's records of [t0, t1]: host records starting
 * inside, the GPU work and correlations their calls launched. 0 or -1. */
static int rank_image(const wrank *r, int64_t t0, int64_t t1, image *m)
{
    uint64_t *corr = NULL;
    size_t nc = 0, cc = 0;
    uint8_t *raw = NULL;
    size_t rn = 0, rc = 0;
    int rv = -1;
    m->n = 0;
    if (TELLER_GROW(m->d, m->cap, TLT_HEADER_SIZE))
        goto out;
    tlt_header_pack(m->d, r->pid, r->hdr_start);
    m->n = TLT_HEADER_SIZE;
    char note[256];
    int k = r->rank >= 0 ? snprintf(note, sizeof note, "host=%s\nRANK=%d\n", r->host, (int)r->rank)
                         : snprintf(note, sizeof note, "host=%s\n", r->host);
    if (img_chunk(m, TLT_CHUNK_NOTE, 0, note, (size_t)k))
        goto out;
    /* strings: every name of the rank (ids 1..) */
    size_t sn = 4;
    for (uint32_t i = 1; i < r->strs.n; i++)
        sn += 8 + r->strs.len[i];
    if (TELLER_GROW(raw, rc, sn))
        goto out;
    tlt_put32(raw, r->strs.n ? r->strs.n - 1 : 0);
    rn = 4;
    for (uint32_t i = 1; i < r->strs.n; i++) {
        tlt_put32(raw + rn, i);
        tlt_put32(raw + rn + 4, r->strs.len[i]);
        memcpy(raw + rn + 8, r->strs.text + r->strs.off[i], r->strs.len[i]);
        rn += 8 + r->strs.len[i];
    }
    if (img_chunk(m, TLT_CHUNK_STRINGS, 1, raw, rn))
        goto out;
    for (size_t i = 0; i < r->nrecs; i++) {
        const tlt_rec *x = &r->recs[i];
        if ((x->kind == TLT_REC_RUNTIME || x->kind == TLT_REC_DRIVER) && x->corr && x->start >= t0 &&
            x->start <= t1) {
            if (TELLER_GROW(corr, cc, nc + 1))
                goto out;
            corr[nc++] = x->corr;
        }
    }
    teller_sort(corr, nc, sizeof *corr, u64_cmp);
    rn = 8;
    for (size_t i = 0; i < r->nrecs; i++) {
        const tlt_rec *x = &r->recs[i];
        int keep;
        if (is_gpu_kind(x->kind) && x->corr) {
            uint64_t c = x->corr;
            keep = nc && bsearch(&c, corr, nc, sizeof *corr, u64_cmp) != NULL;
        } else {
            keep = x->start >= t0 && x->start <= t1;
        }
        if (!keep)
            continue;
        if (TELLER_GROW(raw, rc, rn + TLT_REC_SIZE))
            goto out;
        tlt_rec_pack(raw + rn, x);
        rn += TLT_REC_SIZE;
    }
    tlt_put16(raw, TLT_REC_SIZE);
    tlt_put16(raw + 2, 0);
    tlt_put32(raw + 4, (uint32_t)((rn - 8) / TLT_REC_SIZE));
    if (img_chunk(m, TLT_CHUNK_RECORDS, 2, raw, rn) || img_chunk(m, TLT_CHUNK_END, 3, NULL, 0))
        goto out;
    rv = 0;
out:
    free(corr);
    free(raw);
    return rv;
}

typedef struct window {
    teller_watch *w;
    wrank       **ranks;
    image        *img;
    size_t        n;
    char        **logs;  /* the window's copies of the logs, one per followed log */
    uint64_t    **lnum;  /* per copy, per line: its line in the log */
    size_t       *nlnum; /* per copy: its lines */
    size_t        nlogs;
} window;

static teller_status read_image(void *ctx, size_t i, const char *path, teller_store *into, teller_error *err)
{
    window *win = ctx;
    return teller_ingest_tlt_mem(into, path, win->img[i].d, win->img[i].n, &win->w->o.load.ingest, err);
}

/* Writes each log's lines of [t0, t1] into the watcher's directory, under
 * the log's own name (its node comes from it), for the diagnosis; keeps
 * which line of the log each written line is. Lines after the window's
 * last step wait for the window of the steps they come in (a watchdog's
 * line about a later step would land on this window's last). 0, or -1
 * (errno). */
static int window_logs(teller_watch *w, window *win, int64_t t0, int64_t t1)
{
    if (w->nlogs == 0)
        return 0;
    if (!(win->logs = calloc(w->nlogs, sizeof *win->logs)) || !(win->lnum = calloc(w->nlogs, sizeof *win->lnum)) ||
        !(win->nlnum = calloc(w->nlogs, sizeof *win->nlnum)))
        return -1;
    for (size_t i = 0; i < w->nlogs; i++) {
        wlog *l = w->logs[i];
        const char *base = strrchr(l->path, '/');
        base = base ? base + 1 : l->path;
        char dir[PATH_MAX + 32], path[PATH_MAX + 64];
        snprintf(dir, sizeof dir, "%s/%zu", w->tmpdir, l->dir);
        if ((mkdir(dir, 0700) && errno != EEXIST) ||
            snprintf(path, sizeof path, "%s/%s", dir, base) >= (int)sizeof path ||
            !(win->logs[i] = strdup(path)) || !(win->lnum[i] = malloc((l->nlines + 1) * sizeof **win->lnum)))
            return -1;
        win->nlogs++;
        FILE *f = fopen(path, "w");
        if (!f)
            return -1;
        size_t *n = &win->nlnum[i];
        for (size_t j = 0; j < l->nlines; j++)
            if (l->lines[j].t >= t0 && l->lines[j].t <= t1) {
                fwrite(l->lines[j].s, 1, l->lines[j].n, f);
                fputc('\n', f);
                win->lnum[i][(*n)++] = l->lines[j].lnum;
            }
        if (fclose(f))
            return -1;
    }
    return 0;
}

/* Evidence from the window's copies of the logs names the logs and their
 * line numbers. */
static void evidence_to_logs(const teller_watch *w, const window *win, teller_step_pred *p)
{
    for (int e = 0; e < p->nev && e < TELLER_MAX_EVIDENCE; e++) {
        teller_evidence *ev = &p->ev[e];
        for (size_t i = 0; i < win->nlogs; i++)
            if (!strcmp(ev->file, win->logs[i])) {
                if (ev->line >= 1 && ev->line <= win->nlnum[i])
                    ev->line = win->lnum[i][ev->line - 1];
                snprintf(ev->file, sizeof ev->file, "%s", w->logs[i]->path);
                break;
            }
    }
}

/* Diagnoses steps [s0, s1] (through the end of what was read with final),
 * hands steps from w->next on to the callback. */
static teller_status diagnose_window(teller_watch *w, uint64_t s0, uint64_t s1, int final, teller_error *err)
{
    window win = {w, calloc(w->nranks ? w->nranks : 1, sizeof *win.ranks),
                  calloc(w->nranks ? w->nranks : 1, sizeof *win.img), 0, NULL, NULL, NULL, 0};
    char **names = calloc(w->nranks ? w->nranks : 1, sizeof *names);
    teller_store *st = NULL;
    teller_diagnosis *d = NULL;
    teller_status s = TELLER_OK;
    int64_t t_first = INT64_MAX, t_last = INT64_MIN;
    if (!win.ranks || !win.img || !names) {
        s = teller_error_set(err, TELLER_ERR_NOMEM, "(watch)", 0, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < w->nranks; i++) {
        wrank *r = w->ranks[i];
        uint64_t held = r->mk_base + r->nmk;
        if (r->left || s0 < r->mk_base || s0 >= held || (!final && s1 >= held))
            continue; /* it does not hold these steps */
        int64_t t0 = r->mk[s0 - r->mk_base].start;
        /* at the end, all it has after its last marker too (a step it was
         * taken down in) */
        int64_t t1 = final && s1 + 1 >= held ? INT64_MAX : r->mk[s1 - r->mk_base].end;
        if (rank_image(r, t0, t1, &win.img[win.n])) {
            s = teller_error_set(err, TELLER_ERR_NOMEM, "(watch)", 0, "out of memory");
            goto out;
        }
        if (t0 < t_first)
            t_first = t0;
        if (t1 > t_last)
            t_last = t1;
        win.ranks[win.n] = r;
        names[win.n] = r->name;
        win.n++;
    }
    if (win.n == 0)
        goto out;
    if (window_logs(w, &win, t_first - 1000000000LL, t_last)) {
        s = teller_error_set(err, TELLER_ERR_IO, w->tmpdir, 0, "cannot write the window's logs: %s", strerror(errno));
        goto out;
    }
    teller_load_opts lo = w->o.load;
    lo.read = read_image;
    lo.read_ctx = &win;
    lo.progress = NULL;
    if (!(st = teller_store_create())) {
        s = teller_error_set(err, TELLER_ERR_NOMEM, "(watch)", 0, "out of memory");
        goto out;
    }
    if ((s = teller_load(st, (const char *const *)names, win.n, &lo, err)) != TELLER_OK)
        goto out;
    teller_diag_opts dop = w->o.diag;
    dop.logs = (const char *const *)win.logs;
    dop.nlogs = win.nlogs;
    dop.step_base = (uint32_t)s0;
    if ((s = teller_diagnose(st, &dop, &d, err)) != TELLER_OK)
        goto out;
    w->stats.windows++;
    for (size_t k = 0; k < d->n; k++) {
        uint64_t g = d->steps[k].pred.step;
        if (g < w->next || (!final && g > s1))
            continue;
        evidence_to_logs(w, &win, &d->steps[k].pred);
        w->stats.steps++;
        int64_t flushed = 0; /* when the last rank's marker of it was read */
        for (size_t i = 0; i < win.n; i++) {
            const wrank *r = win.ranks[i];
            if (g >= r->mk_base && g - r->mk_base < r->nmk && r->mk[g - r->mk_base].read_wall > flushed)
                flushed = r->mk[g - r->mk_base].read_wall;
        }
        if (w->o.cb.step)
            w->o.cb.step(w->o.cb.ctx, st, d, k, flushed);
        if (g + 1 > w->next)
            w->next = g + 1;
    }
    teller_diagnosis_free(w->last_d);
    teller_store_free(w->last_st);
    w->last_st = st;
    w->last_d = d;
    st = NULL;
    d = NULL;
out:
    for (size_t i = 0; i < win.n; i++)
        free(win.img[i].d);
    free(win.img);
    free(win.ranks);
    free(names);
    for (size_t i = 0; win.logs && i < w->nlogs; i++) {
        if (win.logs[i])
            unlink(win.logs[i]);
        free(win.logs[i]);
        free(win.lnum[i]);
    }
    free(win.logs);
    free(win.lnum);
    free(win.nlnum);
    teller_diagnosis_free(d);
    teller_store_free(st);
    return s;
}

/* Lets go of each rank's records and markers before step keep, and of log
 * lines before the earliest of those. */
static void release(teller_watch *w, uint64_t keep)
{
    int64_t t_min = INT64_MAX;
    for (size_t i = 0; i < w->nranks; i++) {
        wrank *r = w->ranks[i];
        uint64_t k = keep;
        if (r->left && r->nmk) /* waited for no more: keep the step it is in */
            k = r->mk_base + r->nmk - 1;
        if (k > r->mk_base + r->nmk)
            k = r->mk_base + r->nmk;
        if (k <= r->mk_base)
            continue;
        size_t drop = (size_t)(k - r->mk_base);
        int64_t t = drop < r->nmk ? r->mk[drop].start : r->mk[r->nmk - 1].end + 1;
        size_t j = 0;
        for (size_t i2 = 0; i2 < r->nrecs; i2++)
            if (r->recs[i2].start >= t)
                r->recs[j++] = r->recs[i2];
        r->nrecs = j;
        memmove(r->mk, r->mk + drop, (r->nmk - drop) * sizeof *r->mk);
        r->nmk -= drop;
        r->mk_base = k;
        if (t < t_min)
            t_min = t;
    }
    if (t_min == INT64_MAX)
        return;
    t_min -= 1000000000LL; /* the window keeps a second of lines before its first step */
    for (size_t i = 0; i < w->nlogs; i++) {
        wlog *l = w->logs[i];
        size_t j = 0; /* not always in time order: a line without a time takes the one before's */
        for (size_t i2 = 0; i2 < l->nlines; i2++) {
            if (l->lines[i2].t < t_min)
                free(l->lines[i2].s);
            else
                l->lines[j++] = l->lines[i2];
        }
        l->nlines = j;
    }
}

/* A rank with no step marker yet (a process that runs none, or one still
 * warming up) is in no window: of its records only the last UNSTEPPED_NS
 * are kept, for the step it may begin. */
#define UNSTEPPED_NS 10000000000LL

static void trim_unstepped(teller_watch *w)
{
    for (size_t i = 0; i < w->nranks; i++) {
        wrank *r = w->ranks[i];
        if (r->mk_base + r->nmk > 0 || r->last_ns <= UNSTEPPED_NS)
            continue;
        size_t j = 0;
        for (size_t k = 0; k < r->nrecs; k++)
            if (r->recs[k].start >= r->last_ns - UNSTEPPED_NS)
                r->recs[j++] = r->recs[k];
        r->nrecs = j;
    }
}

/* ---- hangs ---- */

static void say_hang(teller_watch *w, int all)
{
    teller_watch_stop *sp = calloc(w->nranks ? w->nranks : 1, sizeof *sp);
    if (!sp)
        return;
    teller_watch_hang h;
    memset(&h, 0, sizeof h);
    h.step = w->next;
    h.all = all;
    h.ranks = sp;
    h.nranks = w->nranks;
    size_t nstuck = 0, len = 0;
    char who[256] = "";
    for (size_t i = 0; i < w->nranks; i++) {
        const wrank *r = w->ranks[i];
        teller_watch_stop *p = &sp[i];
        p->rank = r->rank;
        snprintf(p->host, sizeof p->host, "%s", r->host);
        p->done = r->done;
        p->last_ns = r->last_ns;
        snprintf(p->last_op, sizeof p->last_op, "%s", r->last_op);
        p->silent_s = (double)(w->now - r->last_step_wall) / 1e9;
        p->stuck = r->done <= w->next && !watch_rank_ended(r);
        if (p->stuck) {
            nstuck++;
            if (len < sizeof who - 40)
                len += (size_t)snprintf(who + len, sizeof who - len, "%s%d", len ? ", " : "", (int)r->rank);
        }
    }
    double wait = (double)w->o.hang_ns / 1e9;
    if (all)
        snprintf(h.text, sizeof h.text,
                 "no rank has finished a step for %.0f s: every rank stopped in step %llu (a wedged engine: a "
                 "process blocked in a synchronize or a collective)",
                 wait, (unsigned long long)w->next);
    else
        snprintf(h.text, sizeof h.text,
                 "rank%s %s did not finish step %llu within %.0f s of a peer finishing it: %s hang%s there",
                 nstuck == 1 ? "" : "s", who, (unsigned long long)w->next, wait, nstuck == 1 ? "it" : "they",
                 nstuck == 1 ? "s" : "");
    if (w->o.cb.hang)
        w->o.cb.hang(w->o.cb.ctx, &h);
    free(sp);
}

/* A hang: ranks that did not finish step `next` hang_ns after a peer did;
 * or no rank finishing a step for hang_ns while one of them began work
 * after its last step (a service with no requests runs no steps and
 * begins nothing: it is idle, not wedged). */
static void check_hang(teller_watch *w)
{
    size_t waited = 0, past = 0, begun = 0;
    int64_t last = w->start_wall, since = 0;
    for (size_t i = 0; i < w->nranks; i++) {
        wrank *r = w->ranks[i];
        if (watch_rank_ended(r) || r->mk_base + r->nmk == 0)
            continue;
        waited++;
        if (r->done > w->next)
            past++;
        if (r->last_step_wall > last)
            last = r->last_step_wall;
        if (r->nmk && r->last_ns > r->mk[r->nmk - 1].end) {
            if (r->begun_after != r->mk[r->nmk - 1].end) { /* since when: the first poll that saw it */
                r->begun_after = r->mk[r->nmk - 1].end;
                r->begun_wall = w->now;
            }
            if (!begun++ || r->begun_wall < since)
                since = r->begun_wall;
        }
    }
    if (waited == 0 || w->hang_said == w->next + 1)
        return;
    if (past == 0 && begun && w->now - last >= w->o.hang_ns && w->now - since >= w->o.hang_ns) {
        w->hang_said = w->next + 1;
        say_hang(w, 1);
    } else if (past > 0 && past < waited && w->next_first_wall && w->now - w->next_first_wall >= w->o.hang_ns) {
        w->hang_said = w->next + 1;
        say_hang(w, 0);
    }
}

/* After a hang was said on some ranks, ranks that went on by a whole
 * batch of steps are not kept waiting: the stuck ones are left out. */
static void leave_stuck(teller_watch *w)
{
    if (w->hang_said != w->next + 1)
        return;
    uint64_t ahead = 0;
    for (size_t i = 0; i < w->nranks; i++)
        if (w->ranks[i]->done > ahead)
            ahead = w->ranks[i]->done;
    if (ahead < w->next + w->o.batch)
        return;
    for (size_t i = 0; i < w->nranks; i++) {
        wrank *r = w->ranks[i];
        if (r->done <= w->next && !watch_rank_ended(r) && r->mk_base + r->nmk > 0)
            r->left = 1;
    }
}

static teller_status diagnose_ready(teller_watch *w, int64_t now, int final, teller_error *err);

/* The first step of the window that diagnoses w->next: `window` steps
 * before it, or the earliest every waited-for rank still holds. */
static uint64_t window_start(const teller_watch *w)
{
    uint64_t s0 = w->next > w->o.window ? w->next - w->o.window : 0;
    for (size_t i = 0; i < w->nranks; i++)
        if (!w->ranks[i]->left && w->ranks[i]->nmk && w->ranks[i]->mk_base > s0)
            s0 = w->ranks[i]->mk_base;
    return s0;
}

teller_status teller_watch_poll(teller_watch *w, int64_t now, int final, teller_error *err)
{
    w->now = now;
    if (!w->start_wall)
        w->start_wall = now;
    /* a backlog a piece at a time: all of it at the end, else a few pieces
     * a poll, so that the caller's clock work (hangs, reports) goes on */
    int hold = 1;
    for (int pass = 0; final || pass < BACKLOG_PASSES; pass++) {
        w->backlog = w->held_back = 0;
        if (watch_read(w, now, hold))
            return teller_error_set(err, TELLER_ERR_NOMEM, "(watch)", 0, "out of memory");
        teller_status s = diagnose_ready(w, now, final && !w->backlog && !w->held_back, err);
        if (s != TELLER_OK)
            return s;
        if (!w->backlog && !w->held_back)
            break;
        hold = w->backlog; /* the slow ranks have nothing more: read the others whatever they lead by */
    }
    if (!final) {
        trim_unstepped(w);
        check_hang(w);
        leave_stuck(w);
    }
    uint64_t held = 0;
    uint32_t silent = 0;
    for (size_t i = 0; i < w->nranks; i++) {
        const wrank *r = w->ranks[i];
        held += r->nrecs;
        silent += !watch_rank_ended(r) && now - (r->last_chunk_wall ? r->last_chunk_wall : w->start_wall) >= w->o.hang_ns;
    }
    w->stats.records_held = held;
    w->stats.silent_ranks = silent;
    uint64_t lines = 0;
    for (size_t i = 0; i < w->nlogs; i++)
        lines += w->logs[i]->nlines;
    w->stats.log_lines_held = lines;
    return TELLER_OK;
}

/* Diagnoses the steps every rank finished, a batch at a time. */
static teller_status diagnose_ready(teller_watch *w, int64_t now, int final, teller_error *err)
{
    for (;;) {
        uint64_t ready = finished(w, final);
        for (size_t i = 0; !w->next_first_wall && i < w->nranks; i++)
            if (w->ranks[i]->done > w->next)
                w->next_first_wall = now;
        if (ready <= w->next)
            break;
        uint64_t s1 = ready - 1;
        if (s1 - w->next >= w->o.batch)
            s1 = w->next + w->o.batch - 1;
        int last = final && s1 == ready - 1;
        teller_status s = diagnose_window(w, window_start(w), s1, last, err);
        if (s != TELLER_OK)
            return s;
        w->final_done = last;
        if (w->next <= s1)
            w->next = s1 + 1;
        w->next_first_wall = 0;
        release(w, w->next > w->o.window ? w->next - w->o.window : 0);
    }
    /* the end of what was read: once more with the last step as the trace
     * leaves it (a step a rank was taken down in has no marker) */
    if (final && !w->final_done && w->next > 0) {
        teller_status s = diagnose_window(w, window_start(w), w->next - 1, 1, err);
        if (s != TELLER_OK)
            return s;
        w->final_done = 1;
    }
    return TELLER_OK;
}

int teller_watch_ended(const teller_watch *w)
{
    if (w->nranks == 0)
        return 0;
    for (size_t i = 0; i < w->nranks; i++)
        if (!watch_rank_ended(w->ranks[i]))
            return 0;
    return 1;
}

const teller_store *teller_watch_last_store(const teller_watch *w) { return w->last_st; }
const teller_diagnosis *teller_watch_last_diagnosis(const teller_watch *w) { return w->last_d; }

void teller_watch_stats_get(const teller_watch *w, teller_watch_stats *out) { *out = w->stats; }

void teller_watch_free(teller_watch *w)
{
    if (!w)
        return;
    for (size_t i = 0; i < w->nfiles; i++)
        watch_file_free(w->files[i]);
    free(w->files);
    for (size_t i = 0; i < w->nranks; i++)
        watch_rank_free(w->ranks[i]);
    free(w->ranks);
    for (size_t i = 0; i < w->nlogs; i++)
        watch_log_free(w->logs[i]);
    free(w->logs);
    free(w->scratch.raw);
    regfree(&w->step_re);
    teller_diagnosis_free(w->last_d);
    teller_store_free(w->last_st);
    char d[PATH_MAX + 32];
    for (size_t i = 0; i < w->o.ndirs; i++) {
        snprintf(d, sizeof d, "%s/%zu", w->tmpdir, i);
        rmdir(d);
    }
    rmdir(w->tmpdir);
    free(w);
}
