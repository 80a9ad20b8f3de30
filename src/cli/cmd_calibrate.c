/*
 * cmd_calibrate.c - `teller calibrate -o MODEL [--base MODEL] [--cases N]
 * [--held-out N] [--rate P] [--seed N] [--epochs N] [--keep DIR]
 * HEALTHY_RUN...`: the root-cause model fitted to a user's own workload.
 * Each healthy run (a trace, or a directory of one run's traces or a case)
 * is perturbed with every fault kind it can carry (teller perturb) into
 * training cases (seeds --seed, --seed + 1, ...) and held-out cases
 * (seeds from CALIBRATE_HELD_OUT_SEED on, never a training seed); the base
 * model (the built-in one unless --base) is fine-tuned on the training
 * cases (`teller train --base`, recipe "teller calibrate"); then the
 * held-out cases are diagnosed by the numeric stage alone, the base model
 * and the calibrated one, scored (teller eval), and the figures printed
 * side by side with the steps each flags in the healthy runs themselves.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "teller/diagnose.h"
#include "teller/eval.h"
#include "teller/model.h"
#include "teller/perturb.h"

/* Held-out cases are perturbed from this seed on: training seeds (--seed
 * and the next --cases) stay below it. */
#define CALIBRATE_HELD_OUT_SEED 1000000000ull

/* What the command line asks of calibrate. */
typedef struct calib_args {
    cli_load_opts lo;
    const char   *out, *base, *keep;
    uint64_t      seed;
    double        rate;
    int           cases, held_out, epochs;
} calib_args;

/* The three judges of the held-out cases. */
enum { J_NUMERIC, J_BASE, J_CALIBRATED, NJUDGES };

static int parse_args(calib_args *a, int argc, char **argv)
{
    const cli_opt opts[] = {
        CLI_STR('o', NULL, &a->out, "MODEL", CLI_REQUIRED, "the calibrated model file to write"),
        CLI_STR(0, "base", &a->base, "MODEL", 0, "the model to fine-tune (default: the built-in one)"),
        CLI_INT(0, "cases", &a->cases, "N", 2, 10000, "training cases per run (default 20)"),
        CLI_INT(0, "held-out", &a->held_out, "N", 1, 10000, "held-out cases per run, other seeds (default 5)"),
        CLI_NUM(0, "rate", &a->rate, "P", 0, 1, CLI_ABOVE, "share of steps that get a fault (default 0.3)"),
        CLI_U64(0, "seed", &a->seed, "N", 0, 999999999.0,
                "first training seed (default 1); held-out seeds start at 1000000000"),
        CLI_INT(0, "epochs", &a->epochs, "N", 1, 10000, "at most N epochs of fine-tuning"),
        CLI_STR(0, "keep", &a->keep, "DIR", 0, "write the cases and predictions there and keep them\n"
                                               "(default: a temporary directory, removed)"),
        CLI_LOAD_OPTS(&a->lo),
        CLI_END,
    };
    const cli_cmd cmd = {
        .name = "calibrate",
        .usage = "-o MODEL [--base MODEL] [--cases N] [--held-out N] [options] HEALTHY_RUN...",
        .about = "Fits the root-cause model to your workload: perturbs healthy runs with every fault kind they\n"
                 "can carry, fine-tunes the model on them and prints, on held-out perturbed cases of the same\n"
                 "runs, the numeric stage, the base model and the calibrated one side by side (docs/MODEL.md).",
        .args = "  HEALTHY_RUN...    one run each: a trace file, or a directory of one run's traces (a case\n"
                "                    directory brings its logs/*.log)",
        .opts = opts,
        .min_args = 1,
        .missing = "no healthy run given",
        .max_args = -1,
    };
    return cli_parse(&cmd, argc, argv);
}

/* Loads one run (name: a trace, or a directory of one run's traces or a
 * case, whose log files go into *logs). NULL with why said. */
static teller_store *load_run(const calib_args *a, const char *name, cli_strs *logs)
{
    struct stat sb;
    char *path = (char *)name;
    if (stat(name, &sb) == 0 && S_ISDIR(sb.st_mode) && cli_case_logs(name, logs)) {
        cli_error("calibrate", "out of memory");
        return NULL;
    }
    return cli_load(&a->lo, &path, 1);
}

/* Perturbs run i (argument name) into n cases DIR/<what>/run<i>_<j>, seeds
 * seed0 + j; every case's directory is added to *cases. 0, or -1 with why
 * said. */
static int perturb_run(const calib_args *a, const char *name, int i, const char *dir, const char *what,
                       uint64_t seed0, int n, cli_strs *cases)
{
    cli_strs logs = {NULL, 0};
    int rc = -1;
    teller_store *st = load_run(a, name, &logs);
    if (!st)
        goto done;
    teller_perturb_opts o = teller_perturb_defaults();
    o.rate = a->rate;
    o.logs = (const char *const *)logs.v;
    o.nlogs = logs.n;
    for (int j = 0; j < n; j++) {
        char cd[4400];
        snprintf(cd, sizeof cd, "%s/%s/run%d_%04d", dir, what, i, j);
        o.seed = seed0 + (uint64_t)j;
        teller_perturb_result res;
        teller_error err;
        teller_error_clear(&err);
        if (teller_perturb(st, &o, cd, &res, &err) != TELLER_OK) {
            fprintf(stderr, "teller calibrate: %s: %s\n", name, err.msg);
            goto done;
        }
        for (size_t k = 0; j == 0 && k < res.nnotes; k++) { /* the kinds it cannot carry, said once */
            fprintf(stderr, "teller calibrate: %s: ", name);
            cli_put_text(stderr, res.notes[k]);
            fputc('\n', stderr);
        }
        if (cli_strs_add(cases, cd)) {
            cli_error("calibrate", "out of memory");
            goto done;
        }
    }
    rc = 0;
done:
    teller_store_free(st);
    cli_strs_free(&logs);
    return rc;
}

/* Fine-tunes the base model (a file) on the training cases into a->out,
 * through `teller train`. 0, or -1 with why said. */
static int fine_tune(const calib_args *a, const char *base, const char *train_dir)
{
    char epochs[16];
    snprintf(epochs, sizeof epochs, "%d", a->epochs);
    char *argv[12] = {"train", "-o", (char *)a->out, "--base", (char *)base, "--recipe", "teller calibrate", "-q"};
    int argc = 8;
    if (a->epochs > 0) { /* else train's own default */
        argv[argc++] = "--epochs";
        argv[argc++] = epochs;
    }
    argv[argc++] = (char *)train_dir;
    return cmd_train(argc, argv) ? -1 : 0;
}

/* Diagnoses one run (a case or a healthy run: its traces and logs) by each
 * judge (models[j] NULL: the numeric stage) into OUT_j/<tag>.json when out
 * is given, and counts its steps and flagged steps. 0, or -1 with why said. */
static int judge_run(const calib_args *a, const char *name, teller_model *const *models, const char *pred_dir,
                     const char *tag, teller_eval *const *ev, long *flagged, long *steps)
{
    cli_strs logs = {NULL, 0};
    int rc = -1;
    teller_store *st = load_run(a, name, &logs);
    if (!st)
        goto done;
    for (int j = 0; j < NJUDGES; j++) {
        teller_diag_opts dop = teller_diag_defaults();
        dop.logs = (const char *const *)logs.v;
        dop.nlogs = logs.n;
        dop.model = models[j];
        dop.jobs = a->lo.load.jobs;
        teller_diagnosis *d = NULL;
        teller_error err;
        teller_error_clear(&err);
        if (teller_diagnose(st, &dop, &d, &err) != TELLER_OK) {
            fprintf(stderr, "teller calibrate: %s: %s\n", err.file, err.msg);
            goto done;
        }
        for (size_t k = 0; k < d->n; k++)
            flagged[j] += d->steps[k].pred.abnormal;
        *steps += j == 0 ? (long)d->n : 0;
        if (ev) {
            char pp[4400], tp[4400];
            snprintf(pp, sizeof pp, "%s/%d_%s.json", pred_dir, j, tag);
            snprintf(tp, sizeof tp, "%s/truth.json", name);
            FILE *f = fopen(pp, "w");
            int ok = f && teller_diag_write_preds(f, d) == TELLER_OK;
            if (f && fclose(f))
                ok = 0;
            teller_diagnosis_free(d);
            if (!ok) {
                fprintf(stderr, "teller calibrate: %s: cannot write the predictions\n", pp);
                goto done;
            }
            if (teller_eval_add(ev[j], tp, pp, &err) != TELLER_OK) {
                fprintf(stderr, "teller calibrate: %s: %s\n", err.file, err.msg);
                goto done;
            }
        } else
            teller_diagnosis_free(d);
    }
    rc = 0;
done:
    teller_store_free(st);
    cli_strs_free(&logs);
    return rc;
}

/* One judge's line of the table. */
static void print_row(const char *who, const teller_eval *e, long healthy_flagged, long healthy_steps)
{
    teller_eval_summary s;
    teller_eval_summary_get(e, NULL, NULL, &s);
    long tp = s.abnormal_steps && s.step_recall == s.step_recall ? (long)(s.step_recall * (double)s.abnormal_steps + 0.5) : 0;
    long tn = (long)(s.step_accuracy * (double)s.steps + 0.5) - tp;
    long normal = s.steps - s.abnormal_steps;
    printf("%-44s %6.3f %6.3f %6.3f %6.3f %6.3f %6ld of %-6ld %4ld of %ld\n", who, s.step_precision, s.step_recall,
           s.step_f1, s.op_ac1, s.op_ac3, normal - tn, normal, healthy_flagged, healthy_steps);
}

/* The held-out table: each judge's figures on the held-out cases and its
 * flagged steps in the healthy runs. */
static void print_table(teller_model *const *models, teller_eval *const *ev, const long *hflag, long hsteps)
{
    teller_eval_summary s;
    teller_eval_summary_get(ev[0], NULL, NULL, &s);
    printf("\nheld out: %d cases, %ld steps, %ld abnormal\n", s.cases, s.steps, s.abnormal_steps);
    printf("%-44s %6s %6s %6s %6s %6s %16s %s\n", "judge", "P", "R", "F1", "AC@1", "AC@3", "false alarms",
           "healthy flagged");
    for (int j = 0; j < NJUDGES; j++) {
        char who[128] = "the numeric stage";
        if (models[j])
            teller_model_label(teller_model_id(models[j]), teller_model_recipe(models[j]), who, sizeof who);
        print_row(who, ev[j], hflag[j], hsteps);
    }
}

/* Perturbs, fine-tunes and judges, in dir. 0, or -1 with why said. */
static int calibrate(const calib_args *a, char **runs, int nruns, const char *dir, teller_model *base)
{
    cli_strs test = {NULL, 0}, ignored = {NULL, 0};
    teller_model *models[NJUDGES] = {NULL, base, NULL};
    teller_eval *ev[NJUDGES] = {NULL};
    long hflag[NJUDGES] = {0}, tflag[NJUDGES] = {0}, hsteps = 0, tsteps = 0;
    int rc = -1;
    char train_dir[4200], saved[4200], pred_dir[4200];
    const char *base_path = a->base;
    snprintf(train_dir, sizeof train_dir, "%s/train", dir);
    snprintf(pred_dir, sizeof pred_dir, "%s/pred", dir);
    teller_error err;
    teller_error_clear(&err);
    for (int i = 0; i < nruns; i++)
        if (perturb_run(a, runs[i], i, dir, "train", a->seed + 1000ull * (uint64_t)i, a->cases, &ignored) ||
            perturb_run(a, runs[i], i, dir, "held_out", CALIBRATE_HELD_OUT_SEED + 1000ull * (uint64_t)i, a->held_out,
                        &test))
            goto done;
    if (!base_path) { /* the built-in model, as a file for teller train --base */
        snprintf(saved, sizeof saved, "%s/base.tmod", dir);
        if (teller_model_save(base, saved, &err) != TELLER_OK) {
            fprintf(stderr, "teller calibrate: %s: %s\n", err.file, err.msg);
            goto done;
        }
        base_path = saved;
    }
    if (fine_tune(a, base_path, train_dir))
        goto done;
    if (teller_model_load(a->out, &models[J_CALIBRATED], &err) != TELLER_OK) {
        fprintf(stderr, "teller calibrate: %s: %s\n", err.file, err.msg);
        goto done;
    }
    if (cli_make_dir("calibrate", pred_dir))
        goto done;
    for (int j = 0; j < NJUDGES; j++)
        if (!(ev[j] = teller_eval_create())) {
            cli_error("calibrate", "out of memory");
            goto done;
        }
    for (size_t c = 0; c < test.n; c++) {
        const char *tag = strrchr(test.v[c], '/') + 1;
        if (judge_run(a, test.v[c], models, pred_dir, tag, ev, tflag, &tsteps))
            goto done;
    }
    for (int i = 0; i < nruns; i++)
        if (judge_run(a, runs[i], models, NULL, NULL, NULL, hflag, &hsteps))
            goto done;
    print_table(models, ev, hflag, hsteps);
    rc = 0;
done:
    for (int j = 0; j < NJUDGES; j++)
        teller_eval_free(ev[j]);
    teller_model_free(models[J_CALIBRATED]);
    cli_strs_free(&test);
    cli_strs_free(&ignored);
    return rc;
}

int cmd_calibrate(int argc, char **argv)
{
    calib_args a = {.lo = cli_load_defaults(), .seed = 1, .rate = 0.3, .cases = 20, .held_out = 5};
    a.lo.quiet = 1;
    teller_model *base = NULL;
    char tmp[4200] = "";
    int np = parse_args(&a, argc, argv);
    if (np < 0)
        return cli_parse_exit(np);
    teller_error err;
    teller_error_clear(&err);
    if (a.base ? teller_model_load(a.base, &base, &err) : teller_model_load_default(&base, &err)) {
        fprintf(stderr, "teller: %s:%llu: %s\n", err.file, (unsigned long long)err.offset, err.msg);
        return 1;
    }
    if (!base) {
        cli_error("calibrate", "this teller has no built-in model: give one with --base");
        return 2;
    }
    int rc = 1;
    if (cli_can_write(a.out))
        goto done;
    if (a.keep) {
        if (cli_make_dir("calibrate", a.keep))
            goto done;
        snprintf(tmp, sizeof tmp, "%s", a.keep);
    } else {
        const char *t = getenv("TMPDIR");
        snprintf(tmp, sizeof tmp, "%s/teller_calibrate_XXXXXX", t && *t ? t : "/tmp");
        if (!mkdtemp(tmp)) {
            fprintf(stderr, "teller calibrate: %s: cannot create a temporary directory\n", tmp);
            goto done;
        }
    }
    rc = calibrate(&a, argv + 1, np, tmp, base) ? 1 : 0;
    if (!a.keep && cli_rm_rf(tmp))
        fprintf(stderr, "teller calibrate: %s: could not remove it all\n", tmp);
done:
    teller_model_free(base);
    return rc;
}
