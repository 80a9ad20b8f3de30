/*
 * test_watch.c - `teller watch` (src/watch): steps diagnosed once each as
 * every rank finishes them, the same as the whole run's diagnosis after
 * the window, bounded memory, and the watcher's own faults: a chunk
 * written half, a collector restarted, a rank that stops writing, a
 * wedged engine, a log rotated.
 *
 * The runs are written here with the collector's own writer: two ranks,
 * a step marker (`ProfilerStep#N`) around a GEMM and an NCCL all-reduce per step,
 * flushed as the collector flushes; the trace clock moves with the steps
 * and the watcher's wall clock is handed in, so nothing here sleeps.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "teller/diagnose.h"
#include "teller/load.h"
#include "../src/collect/tlt_writer.h"
#include "../src/watch/watch.h"

#define T0 1700000000000000000LL
#define MS 1000000LL

/* One rank's collector. */
typedef struct gen {
    char       path[512];
    int        fd;
    tlt_writer w;
    tlt_strtab strs;
    tlt_rec    recs[4096];
    size_t     n;
    int64_t    t;
    uint32_t   corr, step, pid;
    int        rank;
} gen;

static void gen_open(gen *g, const char *dir, int rank, uint32_t pid, int64_t t)
{
    memset(g, 0, sizeof *g);
    snprintf(g->path, sizeof g->path, "%s/node0-%u.tlt", dir, pid);
    g->fd = open(g->path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0644);
    CHECK(g->fd >= 0);
    tlt_strtab_init(&g->strs);
    CHECK(tlt_writer_open(&g->w, g->fd, pid, t) == 0);
    char note[128];
    snprintf(note, sizeof note, "host=node0\npid=%u\nRANK=%d\n", pid, rank);
    tlt_writer_chunk(&g->w, TLT_CHUNK_NOTE, note, strlen(note));
    g->t = t;
    g->pid = pid;
    g->rank = rank;
    g->corr = 1;
}

static uint32_t name(gen *g, const char *s) { return tlt_strtab_intern(&g->strs, s, strlen(s)); }

static void launch(gen *g, const char *kern, int64_t at, int64_t gpu_at, int64_t dur)
{
    g->recs[g->n++] = (tlt_rec){.kind = TLT_REC_RUNTIME, .name = name(g, "cudaLaunchKernel"), .start = at,
                                .end = at + 5000, .dev = g->pid, .stream = g->pid, .corr = g->corr, .aux = 211};
    g->recs[g->n++] = (tlt_rec){.kind = TLT_REC_KERNEL, .name = name(g, kern), .start = gpu_at, .end = gpu_at + dur,
                                .dev = (uint32_t)g->rank, .stream = 7, .ctx = 1, .corr = g->corr,
                                .grid = {64, 1, 1}, .block = {128, 1, 1}};
    g->corr++;
}

/* One step: a GEMM of gemm_ns, an all-reduce that ends at the step's
 * common end (so ranks wait for each other), the marker around both. */
static void gen_step(gen *g, int64_t gemm_ns, int64_t end_at)
{
    char m[32];
    snprintf(m, sizeof m, "ProfilerStep#%u", g->step++);
    int64_t s = g->t;
    launch(g, "ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_tn", s + 10000, s + 20000, gemm_ns);
    int64_t ar = s + 20000 + gemm_ns + 1000;
    launch(g, "ncclDevKernel_AllReduce_Sum_bf16_RING_LL", s + 15000, ar, end_at - ar);
    g->recs[g->n++] = (tlt_rec){.kind = TLT_REC_RANGE, .name = name(g, m), .start = s, .end = end_at + 5000,
                                .dev = g->pid, .stream = g->pid};
    g->t = end_at + 100000;
}

static void gen_flush(gen *g)
{
    if (g->strs.unwritten < g->strs.n) {
        tlt_writer_strings(&g->w, &g->strs, g->strs.unwritten);
        g->strs.unwritten = g->strs.n;
    }
    tlt_writer_records(&g->w, g->recs, g->n);
    g->n = 0;
}

static void gen_close(gen *g);

static void gen_end(gen *g)
{
    gen_flush(g);
    const char *end = "dropped_cupti=0\ndropped_buffer=0\ndropped_ranges=0\n";
    tlt_writer_chunk(&g->w, TLT_CHUNK_END, end, strlen(end));
    gen_close(g);
}

static void gen_close(gen *g)
{
    tlt_writer_free(&g->w);
    tlt_strtab_free(&g->strs);
    close(g->fd);
}

/* Two ranks' steps k: 10 ms GEMMs, slow ones 30 ms on rank 1. */
static void two_steps(gen *g, int slow)
{
    int64_t gemm1 = slow ? 30 * MS : 10 * MS;
    int64_t end = (g[0].t > g[1].t ? g[0].t : g[1].t) + 20000 + gemm1 + 3 * MS;
    gen_step(&g[0], 10 * MS, end);
    gen_step(&g[1], gemm1, end);
}

/* What the callbacks saw. */
typedef struct seen {
    int      steps[4096];  /* times each step was handed over */
    int      abnormal[4096];
    int      nhang, hang_all;
    int      hang_stuck[8];
    uint64_t hang_step;
    char     hang_op[160];
    int      skips;
    char     skip_msg[256];
} seen;

static void on_step(void *ctx, const teller_store *st, const teller_diagnosis *d, size_t k, int64_t flushed)
{
    (void)st;
    (void)flushed;
    seen *s = ctx;
    uint32_t g = d->steps[k].pred.step;
    if (g < 4096) {
        s->steps[g]++;
        s->abnormal[g] = d->steps[k].pred.abnormal;
    }
}

static void on_hang(void *ctx, const teller_watch_hang *h)
{
    seen *s = ctx;
    s->nhang++;
    s->hang_all = h->all;
    s->hang_step = h->step;
    for (size_t i = 0; i < h->nranks && i < 8; i++) {
        s->hang_stuck[i] = h->ranks[i].stuck;
        if (h->ranks[i].stuck)
            snprintf(s->hang_op, sizeof s->hang_op, "%s", h->ranks[i].last_op);
    }
}

static void on_skip(void *ctx, teller_watch_skip what, uint64_t n, const char *file, uint64_t at, const char *msg)
{
    (void)what;
    (void)n;
    (void)file;
    (void)at;
    seen *s = ctx;
    s->skips++;
    snprintf(s->skip_msg, sizeof s->skip_msg, "%s", msg);
}

static teller_watch *watch_dir(const char *dir, seen *s, uint32_t window, uint32_t batch)
{
    static const char *dirs[1];
    dirs[0] = dir;
    teller_watch_opts o = teller_watch_defaults();
    o.dirs = dirs;
    o.ndirs = 1;
    o.window = window;
    o.batch = batch;
    o.hang_ns = 5000 * MS;
    o.load.jobs = 1;
    o.diag.jobs = 1;
    o.cb = (teller_watch_cb){on_step, on_hang, on_skip, s};
    teller_watch *w = NULL;
    teller_error err;
    CHECK(teller_watch_open(&o, &w, &err) == TELLER_OK);
    return w;
}

static char *tmpdir(char *buf)
{
    strcpy(buf, "/tmp/teller_watch_XXXXXX");
    return mkdtemp(buf);
}

static void rm_dir(const char *dir)
{
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK(system(cmd) == 0);
}

/* Two ranks' collectors writing into a fresh directory (its traces/
 * when sub), and a watch of it. */
typedef struct fx {
    char          dir[64];
    gen           g[2];
    seen          s;
    teller_watch *w;
} fx;

static fx *fx_open(const char *sub, uint32_t window, uint32_t batch)
{
    static fx f;
    memset(&f, 0, sizeof f);
    CHECK(tmpdir(f.dir) != NULL);
    char traces[128];
    snprintf(traces, sizeof traces, "%s%s%s", f.dir, sub ? "/" : "", sub ? sub : "");
    if (sub)
        CHECK(mkdir(traces, 0755) == 0);
    gen_open(&f.g[0], traces, 0, 100, T0);
    gen_open(&f.g[1], traces, 1, 101, T0);
    f.w = watch_dir(f.dir, &f.s, window, batch);
    return &f;
}

static void fx_free(fx *f)
{
    teller_watch_free(f->w);
    rm_dir(f->dir);
}

static teller_status poll_at(teller_watch *w, int64_t wall, int final)
{
    teller_error err;
    teller_status s = teller_watch_poll(w, wall, final, &err);
    if (s != TELLER_OK)
        fprintf(stderr, "  poll: %s: %s\n", err.file, err.msg);
    return s;
}

/* n healthy steps on both ranks, one flush, a poll a second later. */
static void run_steps(fx *f, int n, int64_t *wall)
{
    for (int k = 0; k < n; k++)
        two_steps(f->g, 0);
    gen_flush(&f->g[0]);
    gen_flush(&f->g[1]);
    CHECK(poll_at(f->w, *wall += 1000 * MS, 0) == TELLER_OK);
}

/* The whole run's diagnosis of dir: abnormal per step into ab. */
static size_t offline(const char *dir, int *ab, size_t cap)
{
    teller_store *st = teller_store_create();
    const char *names[1] = {dir};
    char **files = NULL;
    size_t nf = 0;
    teller_error err;
    CHECK(teller_load_expand(names, 1, &files, &nf, &err) == TELLER_OK);
    teller_load_opts lo = teller_load_defaults();
    lo.jobs = 1;
    CHECK(teller_load(st, (const char *const *)files, nf, &lo, &err) == TELLER_OK);
    teller_diag_opts dop = teller_diag_defaults();
    dop.jobs = 1;
    teller_diagnosis *d = NULL;
    CHECK(teller_diagnose(st, &dop, &d, &err) == TELLER_OK);
    size_t n = d ? d->n : 0;
    for (size_t k = 0; k < n && k < cap; k++)
        ab[k] = d->steps[k].pred.abnormal;
    teller_diagnosis_free(d);
    teller_store_free(st);
    teller_load_files_free(files, nf);
    return n;
}

static void test_steps_once_as_offline(void)
{
    fx *f = fx_open(NULL, 16, 8);
    gen *g = f->g;
    seen *s = &f->s;
    teller_watch *w = f->w;
    int64_t wall = T0;
    const int nsteps = 120;
    for (int k = 0; k < nsteps; k++) {
        two_steps(g, k % 37 == 30);
        if (k % 5 == 4) { /* a flush every five steps */
            gen_flush(&g[0]);
            gen_flush(&g[1]);
            wall += 1000 * MS;
            CHECK(poll_at(w, wall, 0) == TELLER_OK);
        }
    }
    gen_end(&g[0]);
    gen_end(&g[1]);
    CHECK(poll_at(w, wall + MS, 0) == TELLER_OK);
    CHECK(teller_watch_ended(w));
    CHECK(poll_at(w, wall + 2 * MS, 1) == TELLER_OK);
    int ab[4096] = {0};
    size_t n = offline(f->dir, ab, 4096);
    CHECK_EQ_INT(n, nsteps);
    int once = 1, same = 1, nab = 0;
    for (int k = 0; k < nsteps; k++) {
        once &= s->steps[k] == 1;
        if (k >= 16)
            same &= s->abnormal[k] == ab[k];
        nab += s->abnormal[k];
    }
    CHECK(once);
    CHECK(same);
    CHECK(nab >= 3);                    /* the slow steps 30, 67, 104 */
    CHECK(s->abnormal[67] && s->abnormal[104]);
    CHECK_EQ_INT(s->nhang, 0);
    teller_watch_stats ws;
    teller_watch_stats_get(w, &ws);
    CHECK(ws.records_held <= (16 + 8 + 5) * 5 * 2); /* the window, a batch and a flush: 5 records a step */
    fx_free(f);
}

/* Appends the first `n` bytes of src's new part to dst (the collector
 * caught mid-write). */
static void copy_part(const char *src, int dst, off_t *done, off_t upto)
{
    int fd = open(src, O_RDONLY);
    CHECK(fd >= 0);
    char buf[65536];
    off_t at = *done;
    while (at < upto) {
        ssize_t k = pread(fd, buf, (size_t)(upto - at < (off_t)sizeof buf ? upto - at : (off_t)sizeof buf), at);
        if (k <= 0)
            break;
        CHECK(write(dst, buf, (size_t)k) == k);
        at += k;
    }
    *done = at;
    close(fd);
}

static void test_half_chunk_waits(void)
{
    char dir[64], side[64];
    CHECK(tmpdir(dir) != NULL);
    CHECK(tmpdir(side) != NULL);
    gen g[2];
    gen_open(&g[0], side, 0, 100, T0); /* rank 0 is written beside, then copied in pieces */
    gen_open(&g[1], dir, 1, 101, T0);
    char dst[512];
    snprintf(dst, sizeof dst, "%s/node0-100.tlt", dir);
    int out = open(dst, O_WRONLY | O_CREAT | O_APPEND, 0644);
    off_t done = 0;
    static seen s;
    memset(&s, 0, sizeof s);
    teller_watch *w = watch_dir(dir, &s, 4, 4);
    int64_t wall = T0;
    for (int round = 0; round < 6; round++) {
        for (int k = 0; k < 3; k++)
            two_steps(g, 0);
        gen_flush(&g[0]);
        gen_flush(&g[1]);
        struct stat sb;
        CHECK(stat(g[0].path, &sb) == 0);
        off_t half = done + (sb.st_size - done) / 2;
        copy_part(g[0].path, out, &done, half); /* half the flush */
        wall += 1000 * MS;
        CHECK(poll_at(w, wall, 0) == TELLER_OK);
        copy_part(g[0].path, out, &done, sb.st_size);
        wall += 10 * MS;
        CHECK(poll_at(w, wall, 0) == TELLER_OK);
    }
    gen_end(&g[0]);
    gen_end(&g[1]);
    struct stat sb;
    CHECK(stat(g[0].path, &sb) == 0);
    copy_part(g[0].path, out, &done, sb.st_size);
    close(out);
    CHECK(poll_at(w, wall + MS, 1) == TELLER_OK);
    int all = 1;
    for (int k = 0; k < 18; k++)
        all &= s.steps[k] == 1;
    CHECK(all);
    CHECK_EQ_INT(s.skips, 0); /* a chunk in two pieces is waited for, not skipped */
    teller_watch_free(w);
    rm_dir(dir);
    rm_dir(side);
}

static void test_restart_goes_on(void)
{
    fx *f = fx_open(NULL, 4, 4);
    gen *g = f->g;
    seen *s = &f->s;
    teller_watch *w = f->w;
    int64_t wall = T0;
    run_steps(f, 10, &wall);
    /* rank 0's collector is killed mid-write (half a chunk, no END) and
     * starts again in a new file; the steps go on */
    for (int k = 0; k < 2; k++)
        two_steps(g, 0);
    g[0].n = 0; /* lost with the process */
    CHECK(write(g[0].fd, "TLTC\x02\x00\x00\x00\x40\x00\x00\x00", 12) == 12);
    gen_close(&g[0]);
    gen_flush(&g[1]);
    int64_t t = g[0].t;
    uint32_t step = g[0].step;
    gen_open(&g[0], f->dir, 0, 200, t);
    g[0].step = step;
    for (int k = 0; k < 10; k++) {
        two_steps(g, 0);
        gen_flush(&g[0]);
        gen_flush(&g[1]);
        CHECK(poll_at(w, wall += 1000 * MS, 0) == TELLER_OK);
    }
    gen_end(&g[0]);
    gen_end(&g[1]);
    CHECK(poll_at(w, wall += 1000 * MS, 0) == TELLER_OK);
    CHECK(teller_watch_ended(w));
    CHECK(poll_at(w, wall + MS, 1) == TELLER_OK);
    int twice = 0, seen_after = 0;
    for (int k = 0; k < 40; k++) {
        twice += s->steps[k] > 1;
        seen_after += k >= 12 && s->steps[k] == 1;
    }
    CHECK_EQ_INT(twice, 0);
    CHECK_EQ_INT(seen_after, 10); /* the steps after the restart */
    CHECK(s->skips >= 1);          /* the lost half chunk is said */
    fx_free(f);
}

static void test_silent_rank_hangs(void)
{
    fx *f = fx_open(NULL, 4, 4);
    gen *g = f->g;
    seen *s = &f->s;
    teller_watch *w = f->w;
    int64_t wall = T0;
    run_steps(f, 6, &wall);
    /* rank 1 stops writing; rank 0 goes on with its host side (its last
     * steps count as finished 2 s after their markers came) */
    for (int k = 0; k < 8; k++) {
        gen_step(&g[0], 10 * MS, g[0].t + 20 * MS);
        gen_flush(&g[0]);
        CHECK(poll_at(w, wall += 1000 * MS, 0) == TELLER_OK);
    }
    CHECK_EQ_INT(s->nhang, 1); /* said once, 5 s after rank 0 finished step 6 */
    CHECK_EQ_INT(s->hang_all, 0);
    CHECK_EQ_INT(s->hang_step, 6);
    CHECK(!s->hang_stuck[0] && s->hang_stuck[1]);
    CHECK(poll_at(w, wall += 1000 * MS, 0) == TELLER_OK);
    CHECK_EQ_INT(s->nhang, 1);
    gen_close(&g[0]);
    gen_close(&g[1]);
    fx_free(f);
}

static void test_wedged_engine(void)
{
    fx *f = fx_open(NULL, 4, 4);
    gen *g = f->g;
    seen *s = &f->s;
    teller_watch *w = f->w;
    int64_t wall = T0;
    run_steps(f, 6, &wall);
    /* no requests: no step and nothing begun is idle, not a hang */
    for (int k = 0; k < 8; k++)
        CHECK(poll_at(w, wall += 1000 * MS, 0) == TELLER_OK);
    CHECK_EQ_INT(s->nhang, 0);
    /* both block in a synchronize: their collectors still flush what
     * came before it, then nothing that ends a step */
    for (int r = 0; r < 2; r++) {
        g[r].recs[g[r].n++] = (tlt_rec){.kind = TLT_REC_RUNTIME, .name = name(&g[r], "cudaLaunchKernel"),
                                        .start = g[r].t, .end = g[r].t + 5000, .dev = g[r].pid, .stream = g[r].pid,
                                        .corr = 9999, .aux = 211};
        gen_flush(&g[r]);
    }
    for (int k = 0; k < 4; k++)
        CHECK(poll_at(w, wall += 1000 * MS, 0) == TELLER_OK);
    CHECK_EQ_INT(s->nhang, 0); /* 4 s: not yet */
    for (int k = 0; k < 3; k++)
        CHECK(poll_at(w, wall += 1000 * MS, 0) == TELLER_OK);
    CHECK_EQ_INT(s->nhang, 1);
    CHECK_EQ_INT(s->hang_all, 1);
    CHECK(s->hang_stuck[0] && s->hang_stuck[1]);
    CHECK(!strcmp(s->hang_op, "cudaLaunchKernel"));
    gen_close(&g[0]);
    gen_close(&g[1]);
    fx_free(f);
}

static void test_log_rotated(void)
{
    char dir[64], logs[128], path[192], old[192];
    CHECK(tmpdir(dir) != NULL);
    snprintf(logs, sizeof logs, "%s/logs", dir);
    CHECK(mkdir(logs, 0755) == 0);
    char traces[128];
    snprintf(traces, sizeof traces, "%s/traces", dir);
    CHECK(mkdir(traces, 0755) == 0);
    gen g[2];
    gen_open(&g[0], traces, 0, 100, T0);
    gen_open(&g[1], traces, 1, 101, T0);
    static seen s;
    memset(&s, 0, sizeof s);
    teller_watch *w = watch_dir(dir, &s, 64, 64);
    snprintf(path, sizeof path, "%s/stdout.log", logs);
    snprintf(old, sizeof old, "%s/stdout.log.1", logs);
    FILE *f = fopen(path, "w");
    int64_t wall = T0;
    for (int k = 0; k < 10; k++) {
        two_steps(g, 0);
        fprintf(f, "%lld INFO step line %d\n", (long long)g[0].t, k);
        fflush(f);
        if (k == 4) { /* rotated: renamed, a new file at the path */
            gen_flush(&g[0]);
            gen_flush(&g[1]);
            CHECK(poll_at(w, wall += 1000 * MS, 0) == TELLER_OK);
            fprintf(f, "%lld INFO written after the last read\n", (long long)g[0].t);
            fclose(f);
            CHECK(rename(path, old) == 0);
            f = fopen(path, "w");
            fprintf(f, "99999999999999999999 a time past int64 is no time: the line before's\n");
        }
    }
    fclose(f);
    gen_flush(&g[0]);
    gen_flush(&g[1]);
    CHECK(poll_at(w, wall += 1000 * MS, 0) == TELLER_OK);
    teller_watch_stats ws;
    teller_watch_stats_get(w, &ws);
    CHECK_EQ_INT(ws.log_lines_held, 12); /* every line once: the old file's last one too */
    gen_close(&g[0]);
    gen_close(&g[1]);
    teller_watch_free(w);
    rm_dir(dir);
}

static void test_garbage_skipped(void)
{
    fx *f = fx_open(NULL, 4, 4);
    gen *g = f->g;
    seen *s = &f->s;
    teller_watch *w = f->w;
    int64_t wall = T0;
    for (int k = 0; k < 8; k++) {
        two_steps(g, 0);
        gen_flush(&g[0]);
        gen_flush(&g[1]);
        if (k == 3) /* hostile bytes between two chunks */
            CHECK(write(g[1].fd, "<script>\x1b[2J garbage TLT", 25) == 25);
        CHECK(poll_at(w, wall += 1000 * MS, 0) == TELLER_OK);
    }
    char junk[600];
    snprintf(junk, sizeof junk, "%s/node9-1.tlt", f->dir);
    FILE *jf = fopen(junk, "w");
    fputs("not a trace at all, but long enough to have a header", jf);
    fclose(jf);
    gen_end(&g[0]);
    gen_end(&g[1]);
    CHECK(poll_at(w, wall += 1000 * MS, 0) == TELLER_OK);
    CHECK(poll_at(w, wall + MS, 1) == TELLER_OK);
    CHECK(s->skips >= 2);
    int all = 1;
    for (int k = 0; k < 8; k++)
        all &= s->steps[k] == 1;
    CHECK(all);
    fx_free(f);
}

/* A process that runs no steps (an API server under the collector) is in
 * no window: only its last 10 s are held, however long it runs. */
static void test_stepless_process_bounded(void)
{
    fx *f = fx_open(NULL, 4, 4);
    gen x;
    gen_open(&x, f->dir, 7, 300, T0);
    int64_t wall = T0;
    for (int k = 0; k < 60; k++) {
        for (int j = 0; j < 100; j++, x.t += 10 * MS)
            x.recs[x.n++] = (tlt_rec){.kind = TLT_REC_RUNTIME, .name = name(&x, "cudaMemcpyAsync"), .start = x.t,
                                      .end = x.t + 5000, .dev = x.pid, .stream = x.pid, .corr = x.corr++, .aux = 41};
        gen_flush(&x);
        run_steps(f, 2, &wall);
    }
    teller_watch_stats ws;
    teller_watch_stats_get(f->w, &ws);
    CHECK(ws.records_held < 1100 + (4 + 4 + 2) * 5 * 2); /* its last 10 s (1000 calls) and the window */
    CHECK(f->s.steps[100] == 1);                          /* the steps went on */
    gen_close(&x);
    gen_close(&f->g[0]);
    gen_close(&f->g[1]);
    fx_free(f);
}

const test_case watch_tests[] = {
    {"watch: every step once, as the whole run's diagnosis after the window; memory held to the window",
     test_steps_once_as_offline},
    {"watch: a chunk written half is waited for, not skipped", test_half_chunk_waits},
    {"watch: a collector restarted goes on in its new file, the lost chunk said, no step twice",
     test_restart_goes_on},
    {"watch: a rank that stops writing while its peer goes on hangs, said once", test_silent_rank_hangs},
    {"watch: a wedged engine (every rank stops finishing steps) hangs after the timeout, with the last call",
     test_wedged_engine},
    {"watch: a rotated log is read to its end, then the new one", test_log_rotated},
    {"watch: a process that runs no steps is held to its last 10 s", test_stepless_process_bounded},
    {"watch: garbage between chunks and a file that is no trace are skipped and said", test_garbage_skipped},
    {NULL, NULL},
};
