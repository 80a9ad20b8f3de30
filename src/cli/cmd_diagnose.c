/*
 * cmd_diagnose.c - `teller diagnose [--log LOG...] [--json FILE] [--html FILE]
 * [--perfetto FILE] [--candidates FILE] [--model FILE | --no-model]
 * [--model-alone] TRACE_OR_CASE...`: the terminal summary (worst steps first), the
 * predictions JSON of BENCHMARK.md, the reports, and every step's
 * candidates with their feature vectors. The built-in default model judges
 * the steps when there is one; --model picks another, --no-model none;
 * --model-alone lets the model decide without the numeric stage's rules
 * (for measuring a model, docs/MODEL.md).
 * A case directory brings its .log files under logs/ along.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "teller/check.h"
#include "teller/diagnose.h"
#include "teller/diff.h"
#include "teller/model.h"
#include "teller/report.h"
#include "teller/requests.h"
#include <zlib.h>

/* --check: every number of the diagnosis made again from the trace
 * (check.h), and of its HTML report, rendered as --html writes it, when
 * one is asked for. 0 when all agree. */
static int check_all(const teller_store *st, const teller_diagnosis *d, int html, const char *title)
{
    teller_check_report r = {0};
    teller_error err;
    teller_error_clear(&err);
    teller_status cs = teller_check_diagnosis(st, d, &r, &err);
    if (cs == TELLER_OK && html) {
        char *h = NULL;
        size_t n = 0;
        FILE *f = open_memstream(&h, &n);
        if (!f)
            cs = teller_error_set(&err, TELLER_ERR_NOMEM, "(check)", 0, "out of memory");
        else {
            cs = teller_report_html(st, d, d->requests, title, f, &err);
            if (fclose(f) != 0 && cs == TELLER_OK)
                cs = teller_error_set(&err, TELLER_ERR_NOMEM, "(check)", 0, "out of memory");
        }
        if (cs == TELLER_OK)
            cs = teller_check_html(st, d, h, n, &r, &err);
        free(h);
    }
    if (cs != TELLER_OK) {
        fprintf(stderr, "teller: %s: %s\n", err.file, err.msg);
        return -1;
    }
    printf("\ncheck: %llu facts made again from the trace, %llu numbers read, %llu mismatch%s\n",
           (unsigned long long)r.facts, (unsigned long long)r.numbers, (unsigned long long)r.mismatches,
           r.mismatches == 1 ? "" : "es");
    if (r.reference)
        printf("check: %llu facts of the reference run (--baseline) taken as it gave them\n",
               (unsigned long long)r.reference);
    if (r.mismatches) {
        printf("check: first: ");
        cli_put_text(stdout, r.first);
        printf("\n");
    }
    return r.mismatches ? -1 : 0;
}

static int step_cmp(const void *a, const void *b)
{
    const teller_diag_step *x = *(const teller_diag_step *const *)a, *y = *(const teller_diag_step *const *)b;
    /* abnormal first, the worst first: what the step lost, then how sure
     * the finding is (a step slower than usual that no finding flags
     * lost time too, and comes after) */
    if (x->pred.abnormal != y->pred.abnormal)
        return x->pred.abnormal ? -1 : 1;
    if (x->excess_ns != y->excess_ns)
        return x->excess_ns > y->excess_ns ? -1 : 1;
    if (x->pred.score != y->pred.score)
        return x->pred.score > y->pred.score ? -1 : 1;
    return x->pred.step < y->pred.step ? -1 : 1;
}

/* The files diagnose writes. */
typedef enum out_kind { OUT_PREDS, OUT_CANDS, OUT_HTML, OUT_PERFETTO } out_kind;

/* Writes what the temporary file f holds to path, gzip-compressed: 0, or
 * -1 with why said. */
static int gzip_to(FILE *f, const char *path)
{
    gzFile z = gzopen(path, "wb6");
    int rc = z && !ferror(f) ? 0 : -1;
    char buf[1 << 16];
    size_t got;
    rewind(f);
    while (rc == 0 && (got = fread(buf, 1, sizeof buf, f)) > 0)
        if (gzwrite(z, buf, (unsigned)got) != (int)got)
            rc = -1;
    if (z && gzclose(z) != Z_OK)
        rc = -1;
    if (rc)
        fprintf(stderr, "teller: %s: cannot write: %s\n", path, z ? "a write failed" : strerror(errno));
    return rc;
}

/* Writes one output to path: 0, or -1 with why said. A report's path
 * ending in .gz is gzip-compressed (Perfetto opens those directly). */
static int write_output(const char *path, out_kind kind, const teller_store *st, const teller_diagnosis *d,
                        const char *title)
{
    size_t n = strlen(path);
    int gz = (kind == OUT_HTML || kind == OUT_PERFETTO) && n > 3 && !strcmp(path + n - 3, ".gz");
    FILE *f = gz ? tmpfile() : cli_open_out(path);
    if (!f) {
        if (gz)
            fprintf(stderr, "teller: %s: cannot write: no temporary file: %s\n", path, strerror(errno));
        return -1;
    }
    teller_error err;
    teller_error_clear(&err);
    teller_status s = TELLER_OK;
    if (kind == OUT_PREDS)
        s = teller_diag_write_preds(f, d) == TELLER_OK ? TELLER_OK
                                                      : teller_error_set(&err, TELLER_ERR_NOMEM, path, 0, "out of memory");
    else if (kind == OUT_CANDS)
        teller_diag_write_candidates(f, st, d);
    else if (kind == OUT_HTML)
        s = teller_report_html(st, d, d->requests, title, f, &err);
    else
        s = teller_report_perfetto(st, d, f, &err);
    if (s != TELLER_OK) {
        fprintf(stderr, "teller: %s: %s\n", path, err.msg);
        fclose(f);
        return -1;
    }
    if (!gz)
        return cli_close_out(f, path);
    int rc = gzip_to(f, path);
    fclose(f);
    return rc;
}

/* What the command line asks of diagnose. */
typedef struct diag_args {
    cli_load_opts o;
    const char   *json, *html, *perfetto, *cands, *model_path;
    int           no_model, model_alone, check, tz_offset;
    double        threshold, spreads; /* 0 and -1: the library's defaults */
    cli_strs      logs;               /* owned */
    cli_strs      baseline;           /* owned: the reference run's traces */
} diag_args;

/* The outputs asked for, in the order they are written; an absent one has
 * a NULL path. */
typedef struct out_spec {
    const char *path;
    out_kind    kind;
} out_spec;
enum { NOUTS = 4 };

static void outputs(const diag_args *a, out_spec outs[NOUTS])
{
    outs[0] = (out_spec){a->json, OUT_PREDS};
    outs[1] = (out_spec){a->html, OUT_HTML};
    outs[2] = (out_spec){a->perfetto, OUT_PERFETTO};
    outs[3] = (out_spec){a->cands, OUT_CANDS};
}

/* Reads the options into *a and says --help and usage errors: the number
 * of traces (argv[1...]), or cli_parse's negative result. */
static int parse_args(diag_args *a, int argc, char **argv)
{
    const cli_opt opts[] = {
        CLI_LIST(0, "log", &a->logs, "LOG", 0,
                 "a service log (repeatable; its node from node<N> in its name);\n"
                 "a case directory brings its logs/*.log"),
        CLI_INT(0, "tz-offset", &a->tz_offset, "S", -86400, 86400,
                "the logs' local zone in seconds east of UTC (default 0: UTC)"),
        CLI_STR(0, "json", &a->json, "FILE", 0, "the predictions (../shared/BENCHMARK.md)"),
        CLI_STR(0, "html", &a->html, "FILE", 0, "the HTML report"),
        CLI_STR(0, "perfetto", &a->perfetto, "FILE", 0, "the trace with the findings, for Perfetto (.gz: compressed)"),
        CLI_STR(0, "candidates", &a->cands, "FILE", 0, "every step's candidates and their features as JSON"),
        CLI_STR(0, "model", &a->model_path, "FILE", 0, "the root-cause model to use (default: the built-in one, if any)"),
        CLI_BOOL(0, "no-model", &a->no_model, "the numeric stage alone"),
        CLI_BOOL(0, "model-alone", &a->model_alone,
                 "the model decides alone (P(abnormal) >= 0.5, its own root; no\n"
                 "numeric alarm stands): for measuring a model or an ablation"),
        /* scores are in [0, 1]: a threshold above 1 would flag nothing */
        CLI_NUM(0, "threshold", &a->threshold, "T", 0.001, 1, 0, "the score from which a step is abnormal"),
        CLI_NUM(0, "spreads", &a->spreads, "K", 0, 100, 0,
                "the step alarm: a step whose findings are not facts (a hang, a log\n"
                "line) is abnormal only when it took longer than its kind usually\n"
                "does by K of its kind's spreads (default 3)"),
        CLI_LIST(0, "baseline", &a->baseline, "REF", 0,
                 "a healthy reference run of the same workload (a trace or a case\n"
                 "directory; repeatable for its files): its steps are a second\n"
                 "yardstick, so that what slows every step alike shows; one of\n"
                 "another model, engine or rank count is refused (--force: used)"),
        CLI_BOOL(0, "check", &a->check,
                 "make every number of the diagnosis (and of --html's report) again\n"
                 "from the trace; exit 1 when one does not match"),
        CLI_LOAD_OPTS(&a->o),
        CLI_END,
    };
    const cli_cmd cmd = {
        .name = "diagnose",
        .usage = "[--log LOG]... [--json FILE] [--html FILE] [--perfetto FILE] [options] TRACE_OR_CASE...",
        .about = "Which steps were abnormal, where and why: the terminal summary (worst steps first),\n"
                 "the predictions JSON, the HTML and Perfetto reports.",
        .opts = opts,
        CLI_TRACES,
        .arg = cli_arg_case_logs,
        .ctx = &a->logs,
    };
    return cli_parse(&cmd, argc, argv);
}

/* The diagnosis options the command line sets; the logs stay a's. */
static teller_diag_opts diag_opts(const diag_args *a, const teller_model *model)
{
    teller_diag_opts dop = teller_diag_defaults();
    dop.model = model;
    dop.model_alone = a->model_alone;
    dop.logs = (const char *const *)a->logs.v;
    dop.nlogs = a->logs.n;
    dop.log_tz_offset_s = a->tz_offset;
    dop.jobs = a->o.load.jobs;
    if (a->threshold > 0)
        dop.threshold = a->threshold;
    if (a->spreads >= 0)
        dop.spreads = a->spreads;
    return dop;
}

/* The reference run of --baseline (NULL without it): loaded, or NULL
 * with why said in *rc = 1. */
static teller_store *load_reference(const diag_args *a, int *rc)
{
    *rc = 0;
    if (!a->baseline.n)
        return NULL;
    teller_store *st = cli_load(&a->o, a->baseline.v, (int)a->baseline.n);
    *rc = st == NULL;
    return st;
}

/* Whether the reference ref can judge the run st (teller_diff_check): 0
 * when it can; when not, why is said, and 1 returned unless --force,
 * which says it as a warning and goes on. */
static int check_comparable(const diag_args *a, const teller_store *ref, const teller_store *st)
{
    teller_diff_verdict v;
    teller_error err;
    teller_error_clear(&err);
    if (teller_diff_check(ref, st, &v, &err) != TELLER_OK) {
        fprintf(stderr, "teller: %s: %s\n", err.file, err.msg);
        return 1;
    }
    if (v.comparable)
        return 0;
    fprintf(stderr, "teller diagnose: %s: ", a->o.load.force ? "warning" : "the reference cannot judge this run");
    cli_put_text(stderr, v.why);
    fprintf(stderr, "%s\n", a->o.load.force ? " (--force: judged against it anyway)" : " (--force judges against it anyway)");
    return !a->o.load.force;
}

/* What the reference run ref says is usual, diagnosed with dop, into
 * *out. 0, or 1 with why said. */
static int make_reference(const diag_args *a, teller_store *ref, const teller_diag_opts *dop, teller_diag_reference **out)
{
    teller_diag_opts o = *dop;
    o.logs = NULL;
    o.nlogs = 0;
    o.model = NULL;
    teller_error err;
    teller_error_clear(&err);
    if (teller_diag_reference_make(ref, &o, out, &err) != TELLER_OK) {
        fprintf(stderr, "teller: %s: %s\n", err.file, err.msg);
        return 1;
    }
    if (!teller_diag_reference_steps(*out)) {
        fprintf(stderr, "teller diagnose: %s: the reference run has no step to compare with\n", a->baseline.v[0]);
        return 1;
    }
    return 0;
}

/* The summary's first line and the ten worst abnormal steps (what they
 * lost, then how sure the finding is), with how many more there are. */
static void print_worst(const teller_store *st, const teller_diagnosis *d, size_t nlogs)
{
    size_t nab = 0;
    const teller_diag_step **order = malloc((d->n ? d->n : 1) * sizeof *order);
    for (size_t k = 0; order && k < d->n; k++) {
        order[k] = &d->steps[k];
        nab += (size_t)d->steps[k].pred.abnormal;
    }
    if (order)
        qsort(order, d->n, sizeof *order, step_cmp);
    size_t nranks = teller_store_num_sources(st);
    char judge[128];
    teller_diag_judge(d, judge, sizeof judge);
    printf("%zu step%s, %zu abnormal, %zu rank%s%s; judged by %s\n", d->n, d->n == 1 ? "" : "s", nab, nranks,
           nranks == 1 ? "" : "s", nlogs ? "" : " (no logs given)", judge);
    for (size_t k = 0; order && k < d->n && k < 10 && order[k]->pred.abnormal; k++) {
        const teller_diag_step *s = order[k];
        printf("\nstep %u  score %.2f  %s/%s  rank %d  ", s->pred.step, s->pred.score, s->pred.fault_type, s->fault,
               s->root_rank);
        cli_put_text(stdout, s->pred.ncand ? s->pred.cand[0].op : "");
        printf("\n  ");
        cli_put_text(stdout, s->pred.explanation);
        printf("\n");
    }
    if (nab > 10)
        printf("\n... %zu more abnormal steps (see --json / --html)\n", nab - 10);
    free(order);
}

/* The steps slower than their usual that no finding flags (said, never a
 * green row), the first ten of them, then the diagnosis's notes. */
static void print_slow_and_notes(const teller_diagnosis *d)
{
    size_t nslow = 0;
    for (size_t k = 0; k < d->n; k++) {
        const teller_diag_step *s = &d->steps[k];
        if (!s->slow || s->pred.abnormal)
            continue;
        if (nslow++ == 0)
            printf("\nslower than usual, no finding flags them:\n");
        if (nslow > 10)
            continue;
        printf("  ");
        cli_put_text(stdout, s->pred.explanation);
        printf("\n");
    }
    if (nslow > 10)
        printf("  ... %zu more (see --json / --html)\n", nslow - 10);
    for (size_t i = 0; i < d->nnotes; i++) {
        printf("note: ");
        cli_put_text(stdout, d->notes[i]);
        printf("\n");
    }
}

/* Writes every output asked for and lists those written: 0, or 1 when one
 * failed (the others are still written). The report lists the requests
 * each abnormal step delayed when the logs let teller reconstruct them
 * (the diagnosis did, reading them). */
static int write_outputs(const diag_args *a, const teller_store *st, const teller_diagnosis *d, const char *title)
{
    out_spec outs[NOUTS];
    outputs(a, outs);
    int rc = 0, nwritten = 0;
    for (size_t i = 0; i < NOUTS; i++) {
        if (!outs[i].path)
            continue;
        if (write_output(outs[i].path, outs[i].kind, st, d, title)) {
            rc = 1;
            continue;
        }
        printf("%s %s", nwritten++ ? "" : "\nwritten:", outs[i].path);
    }
    if (nwritten)
        printf("\n");
    return rc;
}

/* Loads and diagnoses the traces, then prints, writes and checks what a
 * asks for: the command's exit status. Every output's path is checked
 * before the traces are read, so a bad one costs no load. */
static int diagnose_traces(const diag_args *a, const teller_model *model, char **paths, int np)
{
    out_spec outs[NOUTS];
    outputs(a, outs);
    for (size_t i = 0; i < NOUTS; i++)
        if (outs[i].path && cli_can_write(outs[i].path))
            return 1;
    teller_diag_opts dop = diag_opts(a, model);
    teller_diag_reference *ref = NULL;
    int rc;
    teller_store *rst = load_reference(a, &rc), *st = rc ? NULL : cli_load(&a->o, paths, np);
    if (!rc && !st)
        rc = 1;
    if (!rc && rst)
        rc = check_comparable(a, rst, st) || make_reference(a, rst, &dop, &ref);
    teller_store_free(rst);
    if (rc) {
        teller_diag_reference_free(ref);
        teller_store_free(st);
        return 1;
    }
    dop.reference = ref;
    teller_diagnosis *d = NULL;
    teller_error err;
    teller_error_clear(&err);
    teller_status ds = teller_diagnose(st, &dop, &d, &err);
    if (ref && ds == TELLER_OK) {
        printf("against the reference run ");
        cli_put_text(stdout, a->baseline.v[0]);
        size_t ns = teller_diag_reference_steps(ref), nk = teller_diag_reference_kinds(ref);
        printf("%s: %zu step%s of %zu kind%s\n", a->baseline.n > 1 ? " ..." : "", ns, ns == 1 ? "" : "s", nk,
               nk == 1 ? "" : "s");
    }
    teller_diag_reference_free(ref);
    if (ds != TELLER_OK) {
        fprintf(stderr, "teller: %s: %s\n", err.file, err.msg);
        teller_store_free(st);
        return 1;
    }
    print_worst(st, d, a->logs.n);
    print_slow_and_notes(d);
    rc = write_outputs(a, st, d, paths[0]);
    if (a->check && check_all(st, d, a->html != NULL, paths[0]))
        rc = 1;
    teller_diagnosis_free(d);
    teller_store_free(st);
    return rc;
}

int cmd_diagnose(int argc, char **argv)
{
    diag_args a = {.o = cli_load_defaults(), .spreads = -1};
    teller_model *model = NULL;
    int rc = 1;
    int np = parse_args(&a, argc, argv);
    if (np < 0)
        rc = cli_parse_exit(np);
    else if (a.no_model && (a.model_path || a.model_alone)) {
        cli_error("diagnose", "--no-model excludes --model and --model-alone");
        rc = 2;
    } else if (cli_load_model(a.model_path, a.no_model, &model) == 0)
        rc = diagnose_traces(&a, model, argv + 1, np);
    teller_model_free(model);
    cli_strs_free(&a.logs);
    cli_strs_free(&a.baseline);
    return rc;
}
