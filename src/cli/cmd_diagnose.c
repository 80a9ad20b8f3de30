/*
 * cmd_diagnose.c - `teller diagnose [--log LOG...] [--json FILE] [--html FILE]
 * [--perfetto FILE] [--candidates FILE] [--model FILE | --no-model]
 * [--model-alone] TRACE_OR_CASE...`: the terminal summary (worst steps first), the
 * predictions JSON of BENCHMARK.md, the reports, and every step's
 * candidates with their feature vectors. The built-in default model judges
 * the steps when there is one; --model picks another, --no-model none;
 * --model-alone lets the model decide without the numeric stage's rules
 * (for measuring a model, docs/MODEL.md).
 * A case directory brings its logs/node*.log along.
 */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "teller/check.h"
#include "teller/diagnose.h"
#include "teller/model.h"
#include "teller/report.h"
#include "teller/requests.h"
#include <zlib.h>

int cli_add_str(char ***v, size_t *n, const char *s)
{
    char **nv = realloc(*v, (*n + 1) * sizeof **v);
    if (!nv)
        return -1;
    *v = nv;
    (*v)[(*n)++] = strdup(s);
    return 0;
}

void cli_free_strs(char **v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

/* logs/node*.log of a case directory */
void cli_case_logs(const char *dir, char ***v, size_t *n)
{
    char p[4096];
    snprintf(p, sizeof p, "%s/logs", dir);
    DIR *d = opendir(p);
    if (!d)
        return;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        size_t l = strlen(de->d_name);
        if (de->d_name[0] == '.' || l < 5 || strcmp(de->d_name + l - 4, ".log"))
            continue;
        char f[4400];
        snprintf(f, sizeof f, "%s/%s", p, de->d_name);
        cli_add_str(v, n, f);
    }
    closedir(d);
}

/* --check: every number of the diagnosis made again from the trace
 * (check.h), and of its HTML report, rendered as --html writes it, when
 * one is asked for. 0 when all agree. */
static int check_all(const teller_store *st, const teller_diagnosis *d, int html, const teller_requests *reqs,
                     const char *title)
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
            cs = teller_report_html(st, d, reqs, title, f, &err);
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
    /* worst first: what the step lost, then how sure the finding is */
    if (x->excess_ns != y->excess_ns)
        return x->excess_ns > y->excess_ns ? -1 : 1;
    if (x->pred.score != y->pred.score)
        return x->pred.score > y->pred.score ? -1 : 1;
    return x->pred.step < y->pred.step ? -1 : 1;
}

/* Writes the HTML (perfetto = 0) or Perfetto JSON report to path; a
 * path ending in .gz is gzip-compressed (Perfetto opens those directly). */
static int write_report(const char *path, int perfetto, const teller_store *st, const teller_diagnosis *d,
                        const teller_requests *reqs, const char *title)
{
    size_t n = strlen(path);
    int gz = n > 3 && !strcmp(path + n - 3, ".gz");
    FILE *f = gz ? tmpfile() : fopen(path, "w");
    if (!f) {
        fprintf(stderr, "teller: %s: cannot write\n", path);
        return -1;
    }
    teller_error err;
    teller_error_clear(&err);
    teller_status s = perfetto ? teller_report_perfetto(st, d, f, &err) : teller_report_html(st, d, reqs, title, f, &err);
    int rc = s == TELLER_OK ? 0 : -1;
    if (rc)
        fprintf(stderr, "teller: %s: %s\n", path, err.msg);
    if (!rc && gz) {
        gzFile z = gzopen(path, "wb6");
        char buf[1 << 16];
        size_t got;
        rewind(f);
        while (z && (got = fread(buf, 1, sizeof buf, f)) > 0)
            if (gzwrite(z, buf, (unsigned)got) != (int)got)
                rc = -1;
        if (!z || gzclose(z) != Z_OK)
            rc = -1;
        if (rc)
            fprintf(stderr, "teller: %s: cannot write\n", path);
    }
    if (fclose(f) != 0 && !gz)
        rc = -1;
    return rc;
}

int cmd_diagnose(int argc, char **argv)
{
    cli_load_opts o = cli_load_defaults();
    const char *json = NULL, *html = NULL, *perfetto = NULL, *cands = NULL, *model_path = NULL;
    int no_model = 0, model_alone = 0, check = 0;
    teller_model *model = NULL;
    char **logs = NULL, **paths = calloc((size_t)argc + 1, sizeof *paths);
    size_t nlogs = 0;
    int np = 0, rc = 0;
    double threshold = 0, spreads = -1;
    int32_t tz_offset = 0;
    if (!paths)
        return 1;
    for (int i = 1; i < argc; i++) {
        int r = cli_common_opt(&o, argc, argv, &i);
        if (r < 0) {
            rc = 2;
            goto done;
        }
        if (r)
            continue;
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            printf("usage: teller diagnose [--log LOG...] [--json FILE] [--html FILE] [--perfetto FILE]\n"
                   "                       [--candidates FILE] [--model FILE | --no-model] [--model-alone]\n"
                   "                       [--threshold T]\n"
                   "                       [options] TRACE_OR_CASE...\n"
                   "  a case directory brings its logs/node*.log; --log adds service logs\n"
                   "  (a log's node comes from node<N> in its name)\n"
                   "  --tz-offset S: the logs' local zone in seconds east of UTC (default 0: UTC)\n"
                   "  --candidates FILE: every step's candidates and their features as JSON\n"
                   "  --check: make every number of the diagnosis (and of the --html report) again from\n"
                   "  the trace; exit 1 when one does not match\n"
                   "  --spreads K: a step whose findings are not facts (a hang, a log line) is abnormal only\n"
                   "  when it took longer than its kind usually does by K of its kind's spreads (default 3)\n"
                   "  --model FILE: the root-cause model to use (default: the built-in one, if any);\n"
                   "  --no-model: the numeric stage alone\n"
                   "  --model-alone: the model decides alone (P(abnormal) >= 0.5, its own root; no\n"
                   "  numeric alarm stands): for measuring a model or an ablation\n" CLI_COMMON_HELP);
            goto done;
        }
        if ((!strcmp(a, "--log") || !strcmp(a, "--json") || !strcmp(a, "--html") || !strcmp(a, "--perfetto") ||
             !strcmp(a, "--threshold") || !strcmp(a, "--candidates") || !strcmp(a, "--model") ||
             !strcmp(a, "--tz-offset") || !strcmp(a, "--spreads")) &&
            i + 1 >= argc) {
            fprintf(stderr, "teller: diagnose: %s needs a value\n", a);
            rc = 2;
            goto done;
        }
        if (!strcmp(a, "--log"))
            cli_add_str(&logs, &nlogs, argv[++i]);
        else if (!strcmp(a, "--json"))
            json = argv[++i];
        else if (!strcmp(a, "--html"))
            html = argv[++i];
        else if (!strcmp(a, "--perfetto"))
            perfetto = argv[++i];
        else if (!strcmp(a, "--candidates"))
            cands = argv[++i];
        else if (!strcmp(a, "--model"))
            model_path = argv[++i];
        else if (!strcmp(a, "--no-model"))
            no_model = 1;
        else if (!strcmp(a, "--check"))
            check = 1;
        else if (!strcmp(a, "--model-alone"))
            model_alone = 1;
        else if (!strcmp(a, "--tz-offset")) {
            double tz;
            if (cli_number("diagnose", a, argv[++i], -86400, 86400, 1, &tz)) {
                rc = 2;
                goto done;
            }
            tz_offset = (int32_t)tz;
        } else if (!strcmp(a, "--spreads")) {
            if (cli_number("diagnose", a, argv[++i], 0, 100, 0, &spreads)) {
                rc = 2;
                goto done;
            }
        } else if (!strcmp(a, "--threshold")) {
            /* scores are in [0, 1]: a threshold above 1 would flag nothing */
            if (cli_number("diagnose", a, argv[++i], 0.001, 1, 0, &threshold)) {
                rc = 2;
                goto done;
            }
        } else if (a[0] == '-' && a[1]) {
            fprintf(stderr, "teller: diagnose: unknown option %s\n", a);
            rc = 2;
            goto done;
        } else {
            paths[np++] = argv[i];
            struct stat sb;
            if (stat(argv[i], &sb) == 0 && S_ISDIR(sb.st_mode))
                cli_case_logs(argv[i], &logs, &nlogs);
        }
    }
    if (no_model && (model_path || model_alone)) {
        fprintf(stderr, "teller: diagnose: --no-model excludes --model and --model-alone\n");
        rc = 2;
        goto done;
    }
    if (!no_model) {
        teller_error merr;
        teller_error_clear(&merr);
        teller_status ms = model_path ? teller_model_load(model_path, &model, &merr) : teller_model_load_default(&model, &merr);
        if (ms != TELLER_OK) {
            fprintf(stderr, "teller: %s:%llu: %s\n", merr.file, (unsigned long long)merr.offset, merr.msg);
            rc = 1;
            goto done;
        }
    }
    teller_store *st = cli_load(&o, paths, np);
    if (!st) {
        rc = 1;
        goto done;
    }
    teller_diag_opts dop = teller_diag_defaults();
    dop.model = model;
    dop.model_alone = model_alone;
    dop.logs = (const char *const *)logs;
    dop.nlogs = nlogs;
    dop.log_tz_offset_s = tz_offset;
    dop.jobs = o.load.jobs;
    if (threshold > 0)
        dop.threshold = threshold;
    if (spreads >= 0)
        dop.spreads = spreads;
    teller_diagnosis *d = NULL;
    teller_error err;
    teller_error_clear(&err);
    if (teller_diagnose(st, &dop, &d, &err) != TELLER_OK) {
        fprintf(stderr, "teller: %s: %s\n", err.file, err.msg);
        teller_store_free(st);
        rc = 1;
        goto done;
    }
    /* terminal summary: worst steps first */
    size_t nab = 0;
    const teller_diag_step **order = malloc((d->n ? d->n : 1) * sizeof *order);
    for (size_t k = 0; order && k < d->n; k++) {
        order[k] = &d->steps[k];
        nab += (size_t)d->steps[k].pred.abnormal;
    }
    if (order)
        qsort(order, d->n, sizeof *order, step_cmp);
    size_t nranks = teller_store_num_sources(st);
    printf("%zu step%s, %zu abnormal, %zu rank%s%s%s\n", d->n, d->n == 1 ? "" : "s", nab, nranks,
           nranks == 1 ? "" : "s", nlogs ? "" : " (no logs given)", d->model ? " (judged by the model)" : "");
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
    /* steps slower than their usual that no finding flags: said, never a green row */
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
    free(order);
    if (json) {
        FILE *f = fopen(json, "w");
        if (!f) {
            fprintf(stderr, "teller: %s: cannot write\n", json);
            rc = 1;
        } else {
            if (teller_diag_write_preds(f, d) != TELLER_OK) {
                fprintf(stderr, "teller: %s: out of memory\n", json);
                rc = 1;
            }
            fclose(f);
        }
    }
    if (cands) {
        FILE *f = fopen(cands, "w");
        if (!f) {
            fprintf(stderr, "teller: %s: cannot write\n", cands);
            rc = 1;
        } else {
            teller_diag_write_candidates(f, st, d);
            if (fclose(f) != 0) {
                fprintf(stderr, "teller: %s: cannot write\n", cands);
                rc = 1;
            }
        }
    }
    /* the report lists the requests each abnormal step delayed, when the
     * logs let teller reconstruct them (the diagnosis did, reading them) */
    if (html && write_report(html, 0, st, d, d->requests, paths[0]))
        rc = 1;
    if (perfetto && write_report(perfetto, 1, st, d, NULL, paths[0]))
        rc = 1;
    if (check && check_all(st, d, html != NULL, d->requests, paths[0]) && !rc)
        rc = 1;
    if (html || perfetto || json || cands)
        printf("\nwritten:%s%s%s%s%s%s%s%s\n", json ? " " : "", json ? json : "", html ? " " : "", html ? html : "",
               perfetto ? " " : "", perfetto ? perfetto : "", cands ? " " : "", cands ? cands : "");
    teller_diagnosis_free(d);
    teller_store_free(st);
done:
    teller_model_free(model);
    cli_free_strs(logs, nlogs);
    free(paths);
    return rc;
}
