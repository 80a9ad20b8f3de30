/*
 * cmd_watch.c - `teller watch [options] DIR...`: diagnoses a run while the
 * collector writes it (src/watch/watch.h), one line per abnormal step as
 * it happens, a hang as soon as it is one.
 *
 * Each DIR is what `teller run -o DIR` writes (DIR/traces/ *.tlt,
 * DIR/logs/ *.log) or a directory of .tlt files; one per node. The watch
 * ends when every rank's files have ended (the service exited cleanly),
 * on SIGINT or SIGTERM, or at once with --once (what is there now, as a
 * recorded run: every step diagnosed, then exit). --html FILE writes the
 * report of the last window diagnosed every --html-every seconds, on
 * SIGUSR1 and at the end.
 */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "teller/model.h"
#include "teller/report.h"
#include "../util/textout.h"
#include "../watch/metrics.h"
#include "../watch/watch.h"

static volatile sig_atomic_t g_stop, g_html;

static void on_stop(int sig)
{
    (void)sig;
    g_stop = 1;
}

static void on_html(int sig)
{
    (void)sig;
    g_html = 1;
}

static int64_t wall_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

#define LAT_KEEP 100000 /* latencies kept for the summary's quantiles */

typedef struct watch_args {
    cli_load_opts o;
    int           json, all, once, poll_ms;
    uint64_t      window, batch;
    double        hang_s, html_every, spreads, progress;
    const char   *html, *listen, *model_path;
    int           no_model;
} watch_args;

typedef struct printer {
    const watch_args     *a;
    teller_watch_metrics *metrics; /* NULL without --listen */
    uint64_t          steps, abnormal, hangs;
    double           *lat;  /* seconds from the read of a step's last marker to its line */
    size_t            nlat;
    uint64_t          lat_seen;
} printer;

static void put_latency(FILE *f, void *ctx, size_t i)
{
    (void)i;
    fprintf(f, ", \"latency_s\": %.3f", *(const double *)ctx);
}

static void on_step(void *ctx, const teller_store *st, const teller_diagnosis *d, size_t k, int64_t flushed)
{
    printer *p = ctx;
    (void)st;
    const teller_diag_step *s = &d->steps[k];
    double lat = flushed ? (double)(wall_ns() - flushed) / 1e9 : NAN;
    p->steps++;
    p->abnormal += (uint64_t)s->pred.abnormal;
    if (p->metrics)
        teller_watch_metrics_step(p->metrics, s->group < d->ngroups ? d->groups[s->group].kind : TELLER_STEP_OTHER,
                                  s->dur_ns >= 0 ? (double)s->dur_ns / 1e9 : -1, s->pred.abnormal,
                                  s->pred.fault_type, s->pred.view, teller_watch_metrics_now_ns());
    if (flushed && p->lat) {
        /* the first LAT_KEEP, then a reservoir over all */
        uint64_t j = p->lat_seen++;
        if (p->nlat < LAT_KEEP)
            p->lat[p->nlat++] = lat;
        else if ((j = (j * 2654435761u) % p->lat_seen) < LAT_KEEP)
            p->lat[j] = lat;
    }
    if (!s->pred.abnormal && !p->a->all)
        return;
    if (p->a->json) {
        teller_pred_write_step(stdout, &s->pred, isnan(lat) ? NULL : put_latency, &lat, k);
        fputc('\n', stdout);
    } else if (s->pred.abnormal) {
        printf("step %u  %s/%s  rank %d  ", s->pred.step, s->pred.fault_type, s->fault, s->root_rank);
        cli_put_text(stdout, s->pred.ncand ? s->pred.cand[0].op : "");
        printf("\n  ");
        cli_put_text(stdout, s->pred.explanation);
        printf("\n");
    } else {
        printf("step %u  normal\n", s->pred.step);
    }
    fflush(stdout);
}

static void on_hang(void *ctx, const teller_watch_hang *h)
{
    printer *p = ctx;
    p->hangs++;
    if (p->metrics)
        teller_watch_metrics_hang(p->metrics, teller_watch_metrics_now_ns());
    if (p->a->json) {
        printf("{\"hang\": {\"step\": %llu, \"all\": %s, \"text\": ", (unsigned long long)h->step,
               h->all ? "true" : "false");
        teller_json_put(stdout, h->text);
        printf(", \"ranks\": [");
        for (size_t i = 0; i < h->nranks; i++) {
            const teller_watch_stop *r = &h->ranks[i];
            printf("%s{\"rank\": %d, \"host\": ", i ? ", " : "", r->rank);
            teller_json_put(stdout, r->host);
            printf(", \"steps_done\": %llu, \"stuck\": %s, \"silent_s\": %.1f, \"last_op\": ",
                   (unsigned long long)r->done, r->stuck ? "true" : "false", r->silent_s);
            teller_json_put(stdout, r->last_op);
            printf(", \"last_ns\": %lld}", (long long)r->last_ns);
        }
        printf("]}}\n");
    } else {
        printf("HANG at step %llu: ", (unsigned long long)h->step);
        cli_put_text(stdout, h->text);
        printf("\n");
        for (size_t i = 0; i < h->nranks; i++) {
            const teller_watch_stop *r = &h->ranks[i];
            printf("  rank %d (", r->rank);
            cli_put_text(stdout, r->host);
            printf(")%s: %llu steps done, none for %.1f s; its last host call ended: ", r->stuck ? " STUCK" : "",
                   (unsigned long long)r->done, r->silent_s);
            cli_put_text(stdout, r->last_op[0] ? r->last_op : "(none)");
            printf("\n");
        }
    }
    fflush(stdout);
}

static void on_skip(void *ctx, teller_watch_skip what, uint64_t n, const char *file, uint64_t at, const char *msg)
{
    printer *p = ctx;
    if (p->metrics)
        teller_watch_metrics_skipped(p->metrics, what, n);
    fprintf(stderr, "teller watch: warning: ");
    cli_put_text(stderr, file);
    fprintf(stderr, ":%llu: %s\n", (unsigned long long)at, msg);
}

static void write_html(const teller_watch *w, const char *path)
{
    const teller_store *st = teller_watch_last_store(w);
    const teller_diagnosis *d = teller_watch_last_diagnosis(w);
    if (!st || !d)
        return;
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = cli_open_out(tmp);
    if (!f)
        return;
    teller_error err;
    teller_error_clear(&err);
    teller_status s = teller_report_html(st, d, d->requests, "teller watch: the last steps", f, &err);
    if (fclose(f) || s != TELLER_OK || rename(tmp, path))
        fprintf(stderr, "teller watch: %s: cannot write the report\n", path);
}

/* Resident memory of this process, in KiB (0 when /proc does not say). */
static unsigned long rss_kib(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    unsigned long size = 0, pages = 0;
    if (f) {
        if (fscanf(f, "%lu %lu", &size, &pages) != 2)
            pages = 0;
        fclose(f);
    }
    return pages * (unsigned long)(sysconf(_SC_PAGESIZE) / 1024);
}

static void progress(const printer *p, const teller_watch *w)
{
    teller_watch_stats ws;
    teller_watch_stats_get(w, &ws);
    fprintf(stderr, "teller watch: %llu steps, %llu abnormal, %llu hangs; holding %llu records, %llu log lines; RSS %lu KiB\n",
            (unsigned long long)p->steps, (unsigned long long)p->abnormal, (unsigned long long)p->hangs,
            (unsigned long long)ws.records_held, (unsigned long long)ws.log_lines_held, rss_kib());
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void summary(const printer *p, const teller_watch *w)
{
    teller_watch_stats ws;
    teller_watch_stats_get(w, &ws);
    fprintf(stderr, "teller watch: %llu steps diagnosed in %llu windows, %llu abnormal, %llu hangs; %llu ranks, %llu files, "
                    "%llu chunks, %llu skipped",
            (unsigned long long)p->steps, (unsigned long long)ws.windows, (unsigned long long)p->abnormal,
            (unsigned long long)p->hangs, (unsigned long long)ws.ranks, (unsigned long long)ws.files,
            (unsigned long long)ws.chunks, (unsigned long long)ws.skipped);
    if (p->nlat) {
        double *v = malloc(p->nlat * sizeof *v);
        if (v) {
            memcpy(v, p->lat, p->nlat * sizeof *v);
            qsort(v, p->nlat, sizeof *v, cmp_double);
            fprintf(stderr, "; latency from reading a step's last marker to its line: p50 %.3f s, p99 %.3f s",
                    v[p->nlat / 2], v[(size_t)((double)(p->nlat - 1) * 0.99)]);
            free(v);
        }
    }
    fprintf(stderr, "\n");
}

/* Watches the directories argv[1..n] as a asks, the steps judged by
 * model (NULL: the numeric stage). The exit status. */
static int watch_run(watch_args a, const teller_model *model, char **argv, int n)
{
    if (a.html && cli_can_write(a.html))
        return 1;
    printer p = {&a, NULL, 0, 0, 0, malloc(LAT_KEEP * sizeof(double)), 0, 0};
    teller_error err;
    teller_error_clear(&err);
    if (a.listen) {
        if (!(p.metrics = teller_watch_metrics_create()) ||
            teller_watch_metrics_serve(p.metrics, a.listen, &err) != TELLER_OK) {
            fprintf(stderr, "teller: %s: %s\n", p.metrics ? err.file : "(metrics)", p.metrics ? err.msg : "out of memory");
            teller_watch_metrics_free(p.metrics);
            free(p.lat);
            return 1;
        }
        fprintf(stderr, "teller watch: metrics at http://%s/metrics (port %u)\n", a.listen,
                (unsigned)teller_watch_metrics_port(p.metrics));
    }
    teller_watch_opts wo = teller_watch_defaults();
    wo.dirs = (const char *const *)argv + 1;
    wo.ndirs = (size_t)n;
    wo.window = (uint32_t)a.window;
    wo.batch = (uint32_t)a.batch;
    wo.hang_ns = (int64_t)(a.hang_s * 1e9);
    wo.load = a.o.load;
    wo.diag.jobs = a.o.load.jobs;
    wo.diag.model = model;
    if (a.spreads >= 0)
        wo.diag.spreads = a.spreads;
    wo.cb = (teller_watch_cb){on_step, on_hang, on_skip, &p};
    teller_watch *w = NULL;
    if (teller_watch_open(&wo, &w, &err) != TELLER_OK) {
        fprintf(stderr, "teller: %s: %s\n", err.file, err.msg);
        teller_watch_metrics_free(p.metrics);
        free(p.lat);
        return err.code == TELLER_ERR_ARG ? 2 : 1;
    }
    char judge[128] = "the numeric stage";
    if (model)
        teller_model_label(teller_model_id(model), teller_model_recipe(model), judge, sizeof judge);
    fprintf(stderr, "teller watch: steps judged by %s\n", judge);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sa.sa_handler = on_html;
    sigaction(SIGUSR1, &sa, NULL);
    int rc = 0;
    int64_t last_html = wall_ns(), last_progress = last_html;
    for (;;) {
        int final = a.once || teller_watch_ended(w);
        if (teller_watch_poll(w, wall_ns(), final, &err) != TELLER_OK) {
            fprintf(stderr, "teller: %s:%llu: %s\n", err.file, (unsigned long long)err.offset, err.msg);
            rc = 1;
            break;
        }
        if (p.metrics) {
            teller_watch_stats ws;
            teller_watch_stats_get(w, &ws);
            teller_watch_metrics_silent_ranks(p.metrics, ws.silent_ranks);
        }
        if (final)
            break;
        if (g_stop) { /* the end of the watch: what was read is all, its last steps diagnosed */
            a.once = 1;
            continue;
        }
        int64_t now = wall_ns();
        if (a.progress > 0 && (double)(now - last_progress) / 1e9 >= a.progress) {
            last_progress = now;
            progress(&p, w);
        }
        if (a.html && (g_html || (a.html_every > 0 && (double)(now - last_html) / 1e9 >= a.html_every))) {
            g_html = 0;
            last_html = now;
            write_html(w, a.html);
        }
        struct timespec ts = {a.poll_ms / 1000, (long)(a.poll_ms % 1000) * 1000000L};
        nanosleep(&ts, NULL);
    }
    if (a.html)
        write_html(w, a.html);
    summary(&p, w);
    teller_watch_free(w);
    teller_watch_metrics_free(p.metrics);
    free(p.lat);
    return rc;
}

int cmd_watch(int argc, char **argv)
{
    watch_args a;
    memset(&a, 0, sizeof a);
    a.o = cli_load_defaults();
    a.poll_ms = 100;
    a.window = 64;
    a.batch = 256;
    a.hang_s = 10;
    a.spreads = -1;
    const cli_opt opts[] = {
        CLI_BOOL(0, "once", &a.once, "diagnose what is there now, every step, and exit (a recorded run)"),
        CLI_BOOL(0, "json", &a.json, "JSON lines: each step as in the predictions JSON, each hang as {\"hang\": ...}"),
        CLI_BOOL(0, "all", &a.all, "a line for every step, not only the abnormal ones"),
        CLI_U64(0, "window", &a.window, "N", 1, 100000, "steps before the diagnosed ones that judge them (default 64)"),
        CLI_U64(0, "batch", &a.batch, "N", 1, 100000, "the most steps diagnosed in one window (default 256)"),
        CLI_NUM(0, "hang-after", &a.hang_s, "S", 0, 86400, CLI_ABOVE,
                "a rank that finishes no step for S seconds while a peer did, or every\n"
                "rank, hangs (default 10)"),
        CLI_INT(0, "poll-ms", &a.poll_ms, "MS", 1, 60000, "how often the files are read (default 100)"),
        CLI_STR(0, "html", &a.html, "FILE", 0, "the report of the last window: every --html-every s, on SIGUSR1, at the end"),
        CLI_NUM(0, "html-every", &a.html_every, "S", 0, 86400, 0, "seconds between reports (default 0: SIGUSR1 and the end only)"),
        CLI_STR(0, "listen", &a.listen, "ADDR",  0,
                "serve Prometheus metrics at http://ADDR/metrics (127.0.0.1:9464,\n"
                "[::1]:9464; port 0: any free one, said on stderr)"),
        CLI_NUM(0, "progress", &a.progress, "S", 0, 86400, 0,
                "a status line on stderr every S seconds: steps, records and log lines\n"
                "held, resident memory (default 0: none)"),
        CLI_NUM(0, "spreads", &a.spreads, "K", 0, 100, 0, "the step alarm, as in teller diagnose (default 3)"),
        CLI_STR(0, "model", &a.model_path, "FILE", 0, "the root-cause model to use (default: the built-in one, if any)"),
        CLI_BOOL(0, "no-model", &a.no_model, "the numeric stage alone"),
        CLI_LOAD_OPTS(&a.o),
        CLI_END,
    };
    const cli_cmd cmd = {
        .name = "watch",
        .usage = "[--json] [--once] [--html FILE] [options] DIR...",
        .about = "Diagnoses a run while the collector writes it: each step once every rank has\n"
                 "finished it, one line per abnormal step; a rank, or every rank, that stops\n"
                 "finishing steps is said to hang, with where each stopped.",
        .args = "DIR  a `teller run -o DIR` directory (traces/*.tlt, logs/*.log) or a directory of .tlt files",
        .opts = opts,
        .min_args = 1,
        .missing = "no directory given",
        .max_args = -1,
    };
    int n = cli_parse(&cmd, argc, argv);
    if (n < 0)
        return cli_parse_exit(n);
    if (a.no_model && a.model_path) {
        cli_error("watch", "--no-model excludes --model");
        return 2;
    }
    teller_model *model = NULL;
    if (cli_load_model(a.model_path, a.no_model, &model))
        return 1;
    int rc = watch_run(a, model, argv, n);
    teller_model_free(model);
    return rc;
}
