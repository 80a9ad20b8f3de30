/*
 * cmd_eval.c - `teller eval --truth T [--pred P] [--candidates C] [--json]` and
 * `teller baseline zscore|gmm -o OUT CASE_OR_CORPUS`.
 *
 * T and P are files, or a case directory (T/truth.json), or a corpus:
 * T a directory of cases, P a directory holding one <case>.json each.
 * C (the candidates of `teller diagnose --candidates`) pairs the same way.
 */
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "teller/baseline.h"
#include "teller/eval.h"

static int is_dir(const char *p)
{
    struct stat sb;
    return stat(p, &sb) == 0 && S_ISDIR(sb.st_mode);
}

static int name_cmp(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Case directories (holding truth.json) under dir, sorted; NULL-terminated. */
static char **list_cases(const char *dir, int *n)
{
    DIR *d = opendir(dir);
    *n = 0;
    if (!d)
        return NULL;
    char **v = NULL;
    int cap = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (de->d_name[0] == '.')
            continue;
        char p[4096];
        snprintf(p, sizeof p, "%s/%s/truth.json", dir, de->d_name);
        struct stat sb;
        if (stat(p, &sb) != 0)
            continue;
        if (*n + 1 >= cap) {
            cap = cap ? cap * 2 : 64;
            char **nv = realloc(v, (size_t)cap * sizeof *v);
            if (!nv)
                break;
            v = nv;
        }
        v[(*n)++] = strdup(de->d_name);
    }
    closedir(d);
    if (v) {
        qsort(v, (size_t)*n, sizeof *v, name_cmp);
        v[*n] = NULL;
    }
    return v;
}

static void free_list(char **v, int n)
{
    for (int i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

typedef teller_status (*add_fn)(teller_eval *, const char *, const char *, teller_error *);

/* Adds truth (a file, a case directory or a corpus) paired with other (a
 * file, or a directory of <case>.json for a corpus). -1 on error (err set),
 * -2 when a corpus has no cases (reported). */
static int add_all(teller_eval *e, add_fn add, const char *truth, const char *other, teller_error *err)
{
    char tp[4096], pp[4096];
    snprintf(tp, sizeof tp, "%s/truth.json", truth);
    struct stat sb;
    if (is_dir(truth) && !is_dir(other)) {
        int n;
        char **cases = stat(tp, &sb) != 0 ? list_cases(truth, &n) : NULL;
        if (cases) { /* a corpus, paired with what is not a directory of predictions */
            free_list(cases, n);
            fprintf(stderr, "teller eval: %s is a corpus of %d case%s: its predictions must be a directory of "
                            "<case>.json, and %s is not one\n",
                    truth, n, n == 1 ? "" : "s", other);
            return -2;
        }
        return add(e, tp, other, err) == TELLER_OK ? 0 : -1;
    }
    if (!is_dir(truth))
        return add(e, truth, other, err) == TELLER_OK ? 0 : -1;
    int n, rc = 0;
    if (stat(tp, &sb) == 0) { /* one case, paired with a directory */
        fprintf(stderr, "teller eval: %s is one case: its predictions must be a file, and %s is a directory\n",
                truth, other);
        return -2;
    }
    char **cases = list_cases(truth, &n);
    if (!n) {
        fprintf(stderr, "teller eval: %s holds no case directories with a truth.json\n", truth);
        return -2;
    }
    for (int i = 0; i < n && !rc; i++) {
        snprintf(tp, sizeof tp, "%s/%s/truth.json", truth, cases[i]);
        snprintf(pp, sizeof pp, "%s/%s.json", other, cases[i]);
        if (add(e, tp, pp, err) != TELLER_OK)
            rc = -1;
    }
    free_list(cases, n);
    return rc;
}

int cmd_eval(int argc, char **argv)
{
    const char *truth = NULL, *pred = NULL, *cands = NULL, *out = NULL;
    int json = 0;
    const cli_opt opts[] = {
        CLI_STR(0, "truth", &truth, "TRUTH", CLI_REQUIRED, "truth.json, a case directory, or a corpus of cases"),
        CLI_STR(0, "pred", &pred, "PRED", 0,
                "predictions: a file (for a truth file or a case), or a directory\n"
                "of <case>.json (for a corpus)"),
        CLI_STR(0, "candidates", &cands, "CANDS", 0, "`teller diagnose --candidates` output, paired like PRED: candidate recall@K"),
        CLI_BOOL(0, "json", &json, "the metrics as JSON instead of the table"),
        CLI_STR('o', NULL, &out, "METRICS.json", 0, "also write the metrics as JSON there"),
        CLI_END,
    };
    const cli_cmd cmd = {
        .name = "eval",
        .usage = "--truth TRUTH [--pred PRED] [--candidates CANDS] [--json] [-o METRICS.json]",
        .about = "Scores predictions against the truth: the metrics of ../shared/BENCHMARK.md, per view and fault kind.",
        .opts = opts,
        .max_args = 0,
    };
    int r = cli_parse(&cmd, argc, argv);
    if (r < 0)
        return cli_parse_exit(r);
    if (!pred && !cands) {
        cli_error(cmd.name, "--pred or --candidates is required");
        return 2;
    }
    if (out && cli_can_write(out))
        return 1;
    teller_eval *e = teller_eval_create();
    if (!e)
        return 1;
    teller_error err;
    teller_error_clear(&err);
    int rc = pred ? add_all(e, teller_eval_add, truth, pred, &err) : 0;
    if (!rc && cands)
        rc = add_all(e, teller_eval_add_candidates, truth, cands, &err);
    if (rc == -2) {
        teller_eval_free(e);
        return 1;
    }
    if (rc) {
        fprintf(stderr, "teller: %s:%llu: %s\n", err.file, (unsigned long long)err.offset, err.msg);
        teller_eval_free(e);
        return 1;
    }
    if (json)
        teller_eval_write_json(e, stdout);
    else
        teller_eval_write_table(e, stdout);
    if (out) {
        FILE *f = cli_open_out(out);
        if (f)
            teller_eval_write_json(e, f);
        if (!f || cli_close_out(f, out))
            rc = 1;
    }
    teller_eval_free(e);
    return rc;
}

typedef teller_status (*baseline_fn)(const teller_store *, teller_step_pred **, size_t *, teller_error *);

static int run_one(baseline_fn fn, const cli_load_opts *o, char *casedir, const char *outpath)
{
    teller_store *st = cli_load(o, &casedir, 1);
    if (!st)
        return 1;
    teller_step_pred *p = NULL;
    size_t n = 0;
    teller_error err;
    teller_error_clear(&err);
    int rc = 0;
    if (fn(st, &p, &n, &err) != TELLER_OK) {
        fprintf(stderr, "teller: %s: %s\n", casedir, err.msg);
        rc = 1;
    } else {
        FILE *f = outpath ? cli_open_out(outpath) : stdout;
        if (f)
            teller_pred_write(f, p, n);
        if (!f || (f != stdout && cli_close_out(f, outpath)))
            rc = 1;
    }
    free(p);
    teller_store_free(st);
    return rc;
}

int cmd_baseline(int argc, char **argv)
{
    cli_load_opts o = cli_load_defaults();
    o.quiet = 1;
    const char *out = NULL;
    const cli_opt opts[] = {
        CLI_STR('o', NULL, &out, "OUT", 0, "a case: the predictions file (default stdout); a corpus: a directory"),
        CLI_LOAD_OPTS(&o),
        CLI_END,
    };
    const cli_cmd cmd = {
        .name = "baseline",
        .usage = "zscore|gmm [-o OUT] CASE_OR_CORPUS",
        .about = "Reference predictions: zscore or gmm (the paper's candidate stage) for a case, or for\n"
                 "every case of a corpus (OUT/<case>.json each).",
        .args = "  zscore|gmm        the baseline\n"
                "  CASE_OR_CORPUS    a case directory, or a corpus: a directory of them",
        .opts = opts,
        .min_args = 2,
        .missing = "wants the baseline (zscore or gmm) and a case or corpus",
        .max_args = 2,
    };
    int r = cli_parse(&cmd, argc, argv);
    if (r < 0)
        return cli_parse_exit(r);
    const char *which = argv[1];
    char *input = argv[2];
    baseline_fn fn = !strcmp(which, "zscore") ? teller_baseline_zscore : !strcmp(which, "gmm") ? teller_baseline_gmm : NULL;
    if (!fn) {
        cli_error(cmd.name, "the baseline is zscore or gmm, not '%s'", which);
        return 2;
    }
    char tp[4096];
    snprintf(tp, sizeof tp, "%s/truth.json", input);
    struct stat sb;
    if (!is_dir(input) || stat(tp, &sb) == 0)
        return out && cli_can_write(out) ? 1 : run_one(fn, &o, input, out);
    if (!out) {
        cli_error(cmd.name, "%s is a corpus: its predictions need -o OUTDIR", input);
        return 2;
    }
    int n;
    char **cases = list_cases(input, &n);
    if (!n) {
        fprintf(stderr, "teller: %s: no case directories with a truth.json\n", input);
        free_list(cases, n);
        return 1;
    }
    if (mkdir(out, 0755) != 0 && errno != EEXIST) {
        fprintf(stderr, "teller: %s: cannot create: %s\n", out, strerror(errno));
        free_list(cases, n);
        return 1;
    }
    int rc = 0;
    for (int i = 0; i < n && !rc; i++) {
        char cd[4096], op[4096];
        snprintf(cd, sizeof cd, "%s/%s", input, cases[i]);
        snprintf(op, sizeof op, "%s/%s.json", out, cases[i]);
        rc = run_one(fn, &o, cd, op);
    }
    free_list(cases, n);
    return rc;
}
