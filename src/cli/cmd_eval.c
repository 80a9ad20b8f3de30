/*
 * cmd_eval.c - `teller eval --truth T [--pred P] [--candidates C] [--json]` and
 * `teller baseline zscore|gmm -o OUT CASE_OR_CORPUS`.
 *
 * T and P are files, or a case directory (T/truth.json), or a corpus:
 * T a directory of cases, P a directory holding one <case>.json each.
 * C (the candidates of `teller diagnose --candidates`) pairs the same way.
 */
#include <dirent.h>
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
            fprintf(stderr, "teller: eval: %s is a corpus of %d case%s: its predictions must be a directory of "
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
        fprintf(stderr, "teller: eval: %s is one case: its predictions must be a file, and %s is a directory\n",
                truth, other);
        return -2;
    }
    char **cases = list_cases(truth, &n);
    if (!n) {
        fprintf(stderr, "teller: eval: %s holds no case directories with a truth.json\n", truth);
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
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--json"))
            json = 1;
        else if ((!strcmp(a, "--truth") || !strcmp(a, "--pred") || !strcmp(a, "-o")) && i + 1 < argc)
            *(a[1] == 'o' ? &out : a[2] == 't' ? &truth : &pred) = argv[++i];
        else if (!strcmp(a, "--candidates") && i + 1 < argc)
            cands = argv[++i];
        else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            printf("usage: teller eval --truth TRUTH [--pred PRED] [--candidates CANDS] [--json] [-o METRICS.json]\n"
                   "  TRUTH, PRED: truth.json and predictions files; or a case directory and a file;\n"
                   "  or a corpus directory of cases and a directory of <case>.json predictions\n"
                   "  CANDS: `teller diagnose --candidates` output, paired like PRED: candidate recall@K\n");
            return 0;
        } else {
            fprintf(stderr, "teller: eval: unknown option %s\n", a);
            return 2;
        }
    }
    if (!truth || (!pred && !cands)) {
        fprintf(stderr, "teller: eval: --truth and --pred (or --candidates) are required\n");
        return 2;
    }
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
        FILE *f = fopen(out, "w");
        if (!f) {
            fprintf(stderr, "teller: %s: cannot write\n", out);
            rc = 1;
        } else {
            teller_eval_write_json(e, f);
            fclose(f);
        }
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
        FILE *f = outpath ? fopen(outpath, "w") : stdout;
        if (!f) {
            fprintf(stderr, "teller: %s: cannot write\n", outpath);
            rc = 1;
        } else {
            teller_pred_write(f, p, n);
            if (f != stdout)
                fclose(f);
        }
    }
    free(p);
    teller_store_free(st);
    return rc;
}

int cmd_baseline(int argc, char **argv)
{
    cli_load_opts o = cli_load_defaults();
    o.quiet = 1;
    const char *out = NULL, *which = NULL;
    char *input = NULL;
    for (int i = 1; i < argc; i++) {
        int r = cli_common_opt(&o, argc, argv, &i);
        if (r < 0)
            return 2;
        if (r)
            continue;
        if (!strcmp(argv[i], "-o") && i + 1 < argc)
            out = argv[++i];
        else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            printf("usage: teller baseline zscore|gmm [-o OUT] CASE_OR_CORPUS\n"
                   "  a case: predictions to OUT (default stdout); a corpus: OUT/<case>.json each\n" CLI_COMMON_HELP);
            return 0;
        } else if (!which)
            which = argv[i];
        else if (!input)
            input = argv[i];
        else {
            fprintf(stderr, "teller: baseline: unexpected argument %s\n", argv[i]);
            return 2;
        }
    }
    baseline_fn fn = which && !strcmp(which, "zscore") ? teller_baseline_zscore
                     : which && !strcmp(which, "gmm") ? teller_baseline_gmm
                                                       : NULL;
    if (!fn || !input) {
        fprintf(stderr, "teller: baseline: usage: teller baseline zscore|gmm [-o OUT] CASE_OR_CORPUS\n");
        return 2;
    }
    char tp[4096];
    snprintf(tp, sizeof tp, "%s/truth.json", input);
    struct stat sb;
    if (!is_dir(input) || stat(tp, &sb) == 0)
        return run_one(fn, &o, input, out);
    int n;
    char **cases = list_cases(input, &n);
    if (!n || !out) {
        fprintf(stderr, "teller: baseline: %s\n", !n ? "no cases in the corpus" : "a corpus needs -o OUTDIR");
        free_list(cases, n);
        return 2;
    }
    mkdir(out, 0755);
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
