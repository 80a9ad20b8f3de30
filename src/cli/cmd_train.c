/*
 * cmd_train.c - `teller train -o MODEL [--base MODEL] [--seed N]
 * [--epochs N] [--patience N] [--val-every N]
 * [--without trace|logs|numbers]... [--trace-tokens tpe|raw]
 * [--tpe-vocab N] CASE_OR_CORPUS...`: trains the root-cause model
 * (model.h) on cases with a truth.json (`teller simulate`, `teller
 * perturb`). Every case is loaded and diagnosed by the numeric stage; each
 * step becomes a sample whose labels come from the truth, and whose trace
 * is read with one vocabulary for all cases (the model's, or with
 * --tpe-vocab N a new one whose N merges are learned on the training
 * steps' slices once every case is read). Every N-th case (default 5) is
 * held out for validation and early stopping, so a case's steps are never
 * on both sides; the calibrated model's figures on it are printed at the
 * end.
 */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "teller/diagnose.h"
#include "teller/model.h"
#include "../ingest/jdom.h"

static int has_truth(const char *dir)
{
    char p[4400];
    struct stat sb;
    snprintf(p, sizeof p, "%s/truth.json", dir);
    return stat(p, &sb) == 0;
}

static int str_cmp(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* A case directory, or the case directories of a corpus (sorted). */
static int add_cases(const char *path, cli_strs *l)
{
    if (has_truth(path))
        return cli_strs_add(l, path);
    DIR *d = opendir(path);
    if (!d) {
        fprintf(stderr, "teller train: %s: not a case directory (no truth.json) nor a corpus of them\n", path);
        return -1;
    }
    size_t first = l->n;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        char p[4200];
        snprintf(p, sizeof p, "%s/%s", path, de->d_name);
        if (de->d_name[0] != '.' && has_truth(p) && cli_strs_add(l, p)) {
            closedir(d);
            return -1;
        }
    }
    closedir(d);
    if (l->n == first) {
        fprintf(stderr, "teller train: %s holds no case directories with a truth.json\n", path);
        return -1;
    }
    qsort(l->v + first, l->n - first, sizeof *l->v, str_cmp);
    return 0;
}

/* The samples of one case, labelled from its truth, their trace's base
 * sequences read with v, appended to *s. */
static int case_samples(const cli_load_opts *lo, char *dir, teller_tpe_vocab *v, teller_model_sample **s, size_t *n,
                        size_t *cap)
{
    cli_strs logs = {NULL, 0};
    teller_store *st = NULL;
    teller_diagnosis *d = NULL;
    teller_model_tracer *tr = NULL;
    jv *truth = NULL;
    int rc = -1;
    teller_error err;
    teller_error_clear(&err);
    if (cli_case_logs(dir, &logs)) {
        cli_error("train", "out of memory");
        goto done;
    }
    if (!(st = cli_load(lo, &dir, 1)))
        goto done;
    teller_diag_opts dop = teller_diag_defaults();
    dop.logs = (const char *const *)logs.v;
    dop.nlogs = logs.n;
    if (teller_diagnose(st, &dop, &d, &err) != TELLER_OK || teller_model_tracer_create(NULL, v, st, &tr, &err) != TELLER_OK) {
        fprintf(stderr, "teller: %s: %s\n", err.file, err.msg);
        goto done;
    }
    char tp[4400];
    snprintf(tp, sizeof tp, "%s/truth.json", dir);
    if (!(truth = jdom_load(tp, &err))) {
        fprintf(stderr, "teller: %s:%llu: %s\n", err.file, (unsigned long long)err.offset, err.msg);
        goto done;
    }
    const jv *ts = jdom_get(truth, "steps");
    if (!ts || ts->type != J_ARR || ts->n != d->n) {
        fprintf(stderr, "teller: %s: the truth has %zu steps, the traces %zu\n", tp, ts && ts->type == J_ARR ? ts->n : 0,
                d->n);
        goto done;
    }
    for (size_t k = 0; k < d->n; k++) {
        const jv *tv = &ts->items[k];
        if (*n == *cap) {
            size_t nc = *cap ? *cap * 2 : 1024;
            teller_model_sample *ns = realloc(*s, nc * sizeof *ns);
            if (!ns) {
                fprintf(stderr, "teller train: out of memory\n");
                goto done;
            }
            *s = ns;
            *cap = nc;
        }
        teller_model_sample *x = &(*s)[(*n)++];
        teller_model_sample_of(d, k, x);
        if (teller_model_trace_base(tr, d, k, x, &err) != TELLER_OK) {
            fprintf(stderr, "teller: %s: %s\n", dir, err.msg);
            goto done;
        }
        if (!jdom_bool(tv, "abnormal", 0))
            continue;
        teller_fault f = teller_fault_parse(jdom_str(tv, "fault", ""));
        if (f == TELLER_FAULT_COUNT) {
            fprintf(stderr, "teller: %s:%llu: step %zu has an unknown fault \"%s\"\n", tp, (unsigned long long)tv->offset, k,
                    jdom_str(tv, "fault", ""));
            goto done;
        }
        x->abnormal = 1;
        x->kind = (uint8_t)f;
        const jv *root = jdom_get(tv, "root");
        int32_t rank = (int32_t)jdom_num(root, "rank", -2);
        char want[512], have[512];
        teller_name_normalize(jdom_str(root, "op", ""), want, sizeof want);
        const teller_diag_step *ds = &d->steps[k];
        for (uint32_t q = 0; q < ds->ncands && x->root < 0; q++) {
            const teller_diag_cand *c = &d->cands[ds->first_cand + q];
            teller_name_normalize(teller_store_str(st, c->name), have, sizeof have);
            if (c->rank == rank && !strcmp(want, have))
                x->root = (int8_t)q;
        }
    }
    rc = 0;
done:
    jdom_free(truth);
    teller_model_tracer_free(tr);
    teller_diagnosis_free(d);
    teller_store_free(st);
    cli_strs_free(&logs);
    return rc;
}

/* Learns n merges on the training samples' base sequences into v (whose
 * base symbols they are). */
static int learn_vocab(teller_tpe_vocab *v, const teller_model_sample *s, size_t ns, uint32_t n)
{
    size_t k = 0;
    teller_tpe_seq *seqs = calloc(ns * TELLER_MODEL_TRACE_CANDS + 1, sizeof *seqs);
    teller_error err;
    int rc = -1;
    if (!seqs)
        goto done;
    for (size_t i = 0; i < ns; i++)
        for (int j = 0; j < TELLER_MODEL_TRACE_CANDS; j++) {
            if (!s[i].nbase[j])
                continue;
            if (teller_model_base_seq(&s[i], j, &seqs[k++], &err) != TELLER_OK)
                goto done;
        }
    teller_tpe_train_opts to = teller_tpe_train_defaults();
    to.vocab = n;
    if (teller_tpe_train(v, seqs, k, &to, &err) == TELLER_OK)
        rc = 0;
done:
    if (rc)
        fprintf(stderr, "teller train: learning the TPE vocabulary: %s\n", seqs ? err.msg : "out of memory");
    for (size_t i = 0; i < k; i++)
        teller_tpe_seq_free(&seqs[i]);
    free(seqs);
    return rc;
}

static void progress(void *ctx, int epoch, double train_loss, double val_loss, int best)
{
    (void)ctx;
    fprintf(stderr, "epoch %3d  train loss %.4f  validation loss %.4f%s\n", epoch, train_loss, val_loss, best ? "  *" : "");
}

/* --without's words, in the order of the model's bits */
static const char *const WITHOUT[] = {"trace", "logs", "numbers", NULL};
_Static_assert(TELLER_MODEL_WITHOUT_TRACE == 1 << 0 && TELLER_MODEL_WITHOUT_LOGS == 1 << 1 &&
                   TELLER_MODEL_WITHOUT_NUMBERS == 1 << 2,
               "WITHOUT's order is the bits'");
/* --trace-tokens's words, in the order of teller_model_tokens */
static const char *const TOKENS[] = {"tpe", "raw", NULL};
_Static_assert(TELLER_MODEL_TOKENS_TPE == 0 && TELLER_MODEL_TOKENS_RAW == 1, "TOKENS's order is the enum's");

/* What the command line asks of train. */
typedef struct train_args {
    cli_load_opts lo;
    const char   *out, *base, *recipe;
    uint64_t      seed;
    int           epochs, patience, val_every, vocab_n, without, tokens;
} train_args;

/* The samples: training and validation, each a growable array. */
typedef struct sample_sets {
    teller_model_sample *tr, *va;
    size_t               ntr, nva, ctr, cva;
} sample_sets;

/* Reads the options into *a and says --help and usage errors: the number
 * of cases and corpora (argv[1...]), or cli_parse's negative result. */
static int parse_args(train_args *a, int argc, char **argv)
{
    const cli_opt opts[] = {
        CLI_STR('o', NULL, &a->out, "MODEL", CLI_REQUIRED, "the model file to write"),
        CLI_STR(0, "base", &a->base, "MODEL", 0,
                "fine-tune that model (and keep its vocabulary and tokens)\n"
                "instead of starting from seeded weights"),
        CLI_STR(0, "recipe", &a->recipe, "NAME", 0,
                "what trained it, which predictions judged by the model name\n"
                "(default \"teller train\")"),
        CLI_U64(0, "seed", &a->seed, "N", 0, 4294967295.0, "the seed of the weights and of the sample order (default 1)"),
        CLI_INT(0, "epochs", &a->epochs, "N", 1, 10000, "at most N epochs"),
        CLI_INT(0, "patience", &a->patience, "N", 1, 10000, "stop after N epochs without a better validation loss"),
        CLI_INT(0, "val-every", &a->val_every, "N", 2, 1000, "every N-th case is kept for validation (default 5)"),
        CLI_CHOICE(0, "without", &a->without, WITHOUT, "trace|logs|numbers", CLI_OR,
                   "an ablation (repeatable): the model never sees that modality,\n"
                   "in training nor where it is used (the model file says so)"),
        CLI_CHOICE(0, "trace-tokens", &a->tokens, TOKENS, "tpe|raw", 0,
                   "raw: the slices' per-node tokens instead of TPE tokens"),
        CLI_INT(0, "tpe-vocab", &a->vocab_n, "N", 1, 65536,
                "TPE tokens of a vocabulary of N merges learned on the training\n"
                "steps' slices (default: the built-in vocabulary)"),
        CLI_LOAD_OPTS(&a->lo),
        CLI_END,
    };
    const cli_cmd cmd = {
        .name = "train",
        .usage = "-o MODEL [--base MODEL] [--epochs N] [options] CASE_OR_CORPUS...",
        .about = "Trains the root-cause model on cases with a truth.json (teller simulate, teller perturb);\n"
                 "every N-th case is kept for validation and early stopping.",
        .args = "  CASE_OR_CORPUS... case directories, or corpora: directories of them",
        .opts = opts,
        .min_args = 1,
        .missing = "no case given",
        .max_args = -1,
    };
    return cli_parse(&cmd, argc, argv);
}

/* The model to train: --base's, else a new one from the seed. NULL with
 * why said. */
static teller_model *start_model(const train_args *a)
{
    teller_model *m = NULL;
    teller_error err;
    teller_error_clear(&err);
    if (a->base ? teller_model_load(a->base, &m, &err) != TELLER_OK : !(m = teller_model_create(a->seed))) {
        fprintf(stderr, "teller: %s:%llu: %s\n", a->base ? err.file : "train", (unsigned long long)err.offset,
                a->base ? err.msg : "out of memory");
        return NULL;
    }
    return m;
}

/* The one vocabulary that reads every case: the model's, or a new one
 * (its merges learned later; for raw tokens, base symbols alone). NULL
 * with why said. */
static teller_tpe_vocab *start_vocab(const train_args *a, teller_model *m)
{
    teller_tpe_vocab *v = NULL;
    teller_error err;
    teller_error_clear(&err);
    if (a->vocab_n > 0 || a->tokens == TELLER_MODEL_TOKENS_RAW) {
        teller_tpe_vocab_opts vo = teller_tpe_vocab_defaults();
        if (!(v = teller_tpe_vocab_create(&vo)))
            fprintf(stderr, "teller train: out of memory\n");
    } else if (teller_model_vocab(m, &v, &err) != TELLER_OK) {
        fprintf(stderr, "teller: %s: %s\n", err.file, err.msg);
    }
    return v;
}

/* Every case's samples, every val_every-th case's (when there are several)
 * into validation, the rest into training: 0, or -1 with why said. */
static int read_cases(const train_args *a, const cli_strs *cases, teller_tpe_vocab *v, sample_sets *ss)
{
    for (size_t i = 0; i < cases->n; i++) {
        int val = cases->n > 1 && i % (size_t)a->val_every == (size_t)a->val_every - 1;
        if (case_samples(&a->lo, cases->v[i], v, val ? &ss->va : &ss->tr, val ? &ss->nva : &ss->ntr,
                         val ? &ss->cva : &ss->ctr))
            return -1;
    }
    fprintf(stderr, "teller train: %zu cases, %zu training steps, %zu validation steps\n", cases->n, ss->ntr, ss->nva);
    return 0;
}

/* Reads every sample's trace into the model's tokens, hides what the
 * model goes without, and says what the tokens cover: 0, or -1 with why
 * said. */
static int tokenize_samples(const teller_model *m, const teller_tpe_vocab *v, sample_sets *ss)
{
    teller_error err;
    teller_error_clear(&err);
    size_t nbase = 0, ntok = 0, n = ss->ntr + ss->nva;
    for (size_t i = 0; i < n; i++) {
        teller_model_sample *x = i < ss->ntr ? &ss->tr[i] : &ss->va[i - ss->ntr];
        if (teller_model_tokenize(m, v, x, &err) != TELLER_OK) {
            fprintf(stderr, "teller train: %s\n", err.msg);
            return -1;
        }
        for (int j = 0; j < TELLER_MODEL_TRACE_CANDS; j++)
            nbase += x->nbase[j];
        ntok += x->ntrace;
        teller_model_ablate(m, x);
    }
    fprintf(stderr, "teller train: %s tokens, vocabulary of %zu symbols (%zu merges); %.1f base tokens a step, %.1f "
                    "trace tokens read\n",
            teller_model_token_kind(m) == TELLER_MODEL_TOKENS_RAW ? "raw" : "TPE", teller_tpe_vocab_size(v),
            teller_tpe_vocab_merges(v), n ? (double)nbase / (double)n : 0, n ? (double)ntok / (double)n : 0);
    return 0;
}

/* Trains m on the samples, writes it to --o's file and prints its figures
 * on the validation cases: 0, or -1 with why said. */
static int train_and_save(const train_args *a, teller_model *m, const sample_sets *ss)
{
    teller_error err;
    teller_error_clear(&err);
    teller_train_opts to = {0};
    to.seed = a->seed;
    to.max_epochs = a->epochs;
    to.patience = a->patience;
    to.fine_tune = a->base != NULL;
    to.progress = progress;
    teller_model_set_recipe(m, a->recipe);
    teller_train_report rep;
    if (teller_model_train(m, ss->tr, ss->ntr, ss->va, ss->nva, &to, &rep, &err) != TELLER_OK ||
        teller_model_save(m, a->out, &err) != TELLER_OK) {
        fprintf(stderr, "teller: %s: %s\n", err.file, err.msg);
        return -1;
    }
    if (rep.kept_base)
        printf("trained %d epochs, kept the base model's weights (training loss %.4f, validation loss %.4f): tuned, its "
               "validation step F1 was %.3f, no higher than the base's: %s, model %016llx (%s)\n",
               rep.epochs, rep.train_loss, rep.val_loss, rep.f1_tuned, a->out, (unsigned long long)teller_model_id(m),
               a->recipe);
    else
        printf("trained %d epochs, kept epoch %d (training loss %.4f, validation loss %.4f, abnormal from P %.2f): %s, "
               "model %016llx (%s)\n",
               rep.epochs, rep.best_epoch, rep.train_loss, rep.val_loss, rep.threshold, a->out,
               (unsigned long long)teller_model_id(m), a->recipe);
    printf("validation: step F1 %.3f (the model alone %.3f, the numeric stage %.3f), kind accuracy %.3f, root accuracy "
           "%.3f; it vetoes findings under %.2f of the step\n",
           rep.f1, rep.f1_model, rep.f1_numeric, rep.kind_acc, rep.root_acc, teller_model_veto_share(m));

    return 0;
}

/* Reads the cases, sets the model's vocabulary (learning it first with
 * --tpe-vocab), tokenizes, trains and saves: 0, or -1 with why said. */
static int train(const train_args *a, const cli_strs *cases, teller_model *m, teller_tpe_vocab *v, sample_sets *ss)
{
    teller_error err;
    teller_error_clear(&err);
    if (read_cases(a, cases, v, ss))
        return -1;
    if (a->vocab_n > 0 && learn_vocab(v, ss->tr, ss->ntr, (uint32_t)a->vocab_n))
        return -1;
    teller_model_tokens tokens = a->base ? teller_model_token_kind(m) : (teller_model_tokens)a->tokens;
    if (teller_model_set_vocab(m, v, tokens, &err) != TELLER_OK) {
        fprintf(stderr, "teller train: %s\n", err.msg);
        return -1;
    }
    teller_model_set_without(m, teller_model_without(m) | (uint32_t)a->without);
    if (tokenize_samples(m, v, ss))
        return -1;
    return train_and_save(a, m, ss);
}

int cmd_train(int argc, char **argv)
{
    train_args a = {.lo = cli_load_defaults(), .seed = 1, .val_every = 5, .tokens = TELLER_MODEL_TOKENS_TPE,
                    .recipe = "teller train"};
    a.lo.quiet = 1;
    cli_strs cases = {NULL, 0};
    sample_sets ss = {0};
    teller_model *m = NULL;
    teller_tpe_vocab *v = NULL;
    int rc = 1;
    int np = parse_args(&a, argc, argv);
    if (np < 0) {
        rc = cli_parse_exit(np);
        goto done;
    }
    if ((a.vocab_n > 0 || a.tokens == TELLER_MODEL_TOKENS_RAW) &&
        (a.base || (a.vocab_n > 0 && a.tokens == TELLER_MODEL_TOKENS_RAW))) {
        cli_error("train", "--tpe-vocab and --trace-tokens raw exclude each other and --base (a base model keeps its "
                           "vocabulary and tokens)");
        rc = 2;
        goto done;
    }
    if (strlen(a.recipe) >= TELLER_MODEL_RECIPE_MAX) {
        cli_error("train", "--recipe takes at most %d bytes", TELLER_MODEL_RECIPE_MAX - 1);
        rc = 2;
        goto done;
    }
    if (cli_can_write(a.out))
        goto done;
    for (int i = 1; i <= np; i++)
        if (add_cases(argv[i], &cases))
            goto done;
    if (!(m = start_model(&a)) || !(v = start_vocab(&a, m)))
        goto done;
    rc = train(&a, &cases, m, v, &ss) ? 1 : 0;
done:
    teller_model_free(m);
    teller_tpe_vocab_free(v);
    free(ss.tr);
    free(ss.va);
    cli_strs_free(&cases);
    return rc;
}
