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
static int add_cases(const char *path, char ***v, size_t *n)
{
    if (has_truth(path))
        return cli_add_str(v, n, path);
    DIR *d = opendir(path);
    if (!d) {
        fprintf(stderr, "teller: train: %s: not a case directory (no truth.json) nor a corpus of them\n", path);
        return -1;
    }
    size_t first = *n;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        char p[4200];
        snprintf(p, sizeof p, "%s/%s", path, de->d_name);
        if (de->d_name[0] != '.' && has_truth(p) && cli_add_str(v, n, p)) {
            closedir(d);
            return -1;
        }
    }
    closedir(d);
    if (*n == first) {
        fprintf(stderr, "teller: train: %s holds no case directories with a truth.json\n", path);
        return -1;
    }
    qsort(*v + first, *n - first, sizeof **v, str_cmp);
    return 0;
}

/* The samples of one case, labelled from its truth, their trace's base
 * sequences read with v, appended to *s. */
static int case_samples(const cli_load_opts *lo, char *dir, teller_tpe_vocab *v, teller_model_sample **s, size_t *n,
                        size_t *cap)
{
    char **logs = NULL;
    size_t nlogs = 0;
    cli_case_logs(dir, &logs, &nlogs);
    teller_store *st = cli_load(lo, &dir, 1);
    teller_diagnosis *d = NULL;
    teller_model_tracer *tr = NULL;
    jv *truth = NULL;
    int rc = -1;
    teller_error err;
    teller_error_clear(&err);
    if (!st)
        goto done;
    teller_diag_opts dop = teller_diag_defaults();
    dop.logs = (const char *const *)logs;
    dop.nlogs = nlogs;
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
                fprintf(stderr, "teller: train: out of memory\n");
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
    cli_free_strs(logs, nlogs);
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
        fprintf(stderr, "teller: train: learning the TPE vocabulary: %s\n", seqs ? err.msg : "out of memory");
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

int cmd_train(int argc, char **argv)
{
    cli_load_opts lo = cli_load_defaults();
    lo.quiet = 1;
    const char *out = NULL, *base = NULL;
    double seed = 1, epochs = 0, patience = 0, val_every = 5, vocab_n = 0;
    uint32_t without = 0;
    teller_model_tokens tokens = TELLER_MODEL_TOKENS_TPE;
    teller_tpe_vocab *v = NULL;
    char **cases = NULL;
    size_t ncases = 0;
    int rc = 2;
    teller_model_sample *tr = NULL, *va = NULL;
    teller_model *m = NULL;
    for (int i = 1; i < argc; i++) {
        int r = cli_common_opt(&lo, argc, argv, &i);
        if (r < 0)
            goto done;
        if (r)
            continue;
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            printf("usage: teller train -o MODEL [--base MODEL] [--seed N] [--epochs N] [--patience N]\n"
                   "                    [--val-every N] [--without trace|logs|numbers]...\n"
                   "                    [--trace-tokens tpe|raw] [--tpe-vocab N] CASE_OR_CORPUS...\n"
                   "  cases with a truth.json (teller simulate, teller perturb), or corpora of them;\n"
                   "  every N-th case (default 5) is kept for validation and early stopping;\n"
                   "  --base MODEL fine-tunes that model (and keeps its vocabulary and tokens)\n"
                   "  instead of starting from seeded weights;\n"
                   "  --without trace|logs|numbers (repeatable): an ablation, the model never sees\n"
                   "  that modality, in training nor where it is used (the model file says so);\n"
                   "  --trace-tokens raw: the slices' per-node tokens instead of TPE tokens;\n"
                   "  --tpe-vocab N: TPE tokens of a vocabulary of N merges learned on the training\n"
                   "  steps' slices (default: the built-in vocabulary)\n" CLI_COMMON_HELP);
            rc = 0;
            goto done;
        }
        if ((!strcmp(a, "-o") || !strcmp(a, "--base") || !strcmp(a, "--seed") || !strcmp(a, "--epochs") ||
             !strcmp(a, "--patience") || !strcmp(a, "--val-every") || !strcmp(a, "--without") ||
             !strcmp(a, "--trace-tokens") || !strcmp(a, "--tpe-vocab")) &&
            i + 1 >= argc) {
            fprintf(stderr, "teller: train: %s needs a value\n", a);
            goto done;
        }
        if (!strcmp(a, "-o"))
            out = argv[++i];
        else if (!strcmp(a, "--base"))
            base = argv[++i];
        else if (!strcmp(a, "--seed")) {
            if (cli_number("train", a, argv[++i], 0, 4294967295.0, 1, &seed))
                goto done;
        } else if (!strcmp(a, "--epochs")) {
            if (cli_number("train", a, argv[++i], 1, 10000, 1, &epochs))
                goto done;
        } else if (!strcmp(a, "--patience")) {
            if (cli_number("train", a, argv[++i], 1, 10000, 1, &patience))
                goto done;
        } else if (!strcmp(a, "--val-every")) {
            if (cli_number("train", a, argv[++i], 2, 1000, 1, &val_every))
                goto done;
        } else if (!strcmp(a, "--without")) {
            const char *w = argv[++i];
            if (!strcmp(w, "trace"))
                without |= TELLER_MODEL_WITHOUT_TRACE;
            else if (!strcmp(w, "logs"))
                without |= TELLER_MODEL_WITHOUT_LOGS;
            else if (!strcmp(w, "numbers"))
                without |= TELLER_MODEL_WITHOUT_NUMBERS;
            else {
                fprintf(stderr, "teller: train: --without takes trace, logs or numbers, not %s\n", w);
                goto done;
            }
        } else if (!strcmp(a, "--trace-tokens")) {
            const char *w = argv[++i];
            if (!strcmp(w, "tpe"))
                tokens = TELLER_MODEL_TOKENS_TPE;
            else if (!strcmp(w, "raw"))
                tokens = TELLER_MODEL_TOKENS_RAW;
            else {
                fprintf(stderr, "teller: train: --trace-tokens takes tpe or raw, not %s\n", w);
                goto done;
            }
        } else if (!strcmp(a, "--tpe-vocab")) {
            if (cli_number("train", a, argv[++i], 1, 65536, 1, &vocab_n))
                goto done;
        } else if (a[0] == '-') {
            fprintf(stderr, "teller: train: unknown option %s\n", a);
            goto done;
        } else if (add_cases(a, &cases, &ncases)) {
            rc = 1;
            goto done;
        }
    }
    if (!out || !ncases) {
        fprintf(stderr, "teller: train: usage: teller train -o MODEL [options] CASE_OR_CORPUS...\n");
        goto done;
    }
    if ((vocab_n > 0 || tokens == TELLER_MODEL_TOKENS_RAW) && (base || (vocab_n > 0 && tokens == TELLER_MODEL_TOKENS_RAW))) {
        fprintf(stderr, "teller: train: --tpe-vocab and --trace-tokens raw exclude each other and --base (a base "
                        "model keeps its vocabulary and tokens)\n");
        goto done;
    }
    rc = 1;
    teller_error err;
    teller_error_clear(&err);
    if (base ? teller_model_load(base, &m, &err) != TELLER_OK : !(m = teller_model_create((uint64_t)seed))) {
        fprintf(stderr, "teller: %s:%llu: %s\n", base ? err.file : "train", (unsigned long long)err.offset,
                base ? err.msg : "out of memory");
        goto done;
    }
    /* one vocabulary reads every case: the model's, or a new one (learned
     * below; for raw tokens, base symbols alone) */
    if (vocab_n > 0 || tokens == TELLER_MODEL_TOKENS_RAW) {
        teller_tpe_vocab_opts vo = teller_tpe_vocab_defaults();
        if (!(v = teller_tpe_vocab_create(&vo))) {
            fprintf(stderr, "teller: train: out of memory\n");
            goto done;
        }
    } else if (teller_model_vocab(m, &v, &err) != TELLER_OK) {
        fprintf(stderr, "teller: %s: %s\n", err.file, err.msg);
        goto done;
    }
    size_t ntr = 0, nva = 0, ctr = 0, cva = 0;
    for (size_t i = 0; i < ncases; i++) {
        int val = ncases > 1 && i % (size_t)val_every == (size_t)val_every - 1;
        if (case_samples(&lo, cases[i], v, val ? &va : &tr, val ? &nva : &ntr, val ? &cva : &ctr))
            goto done;
    }
    fprintf(stderr, "teller: train: %zu cases, %zu training steps, %zu validation steps\n", ncases, ntr, nva);
    if (vocab_n > 0 && learn_vocab(v, tr, ntr, (uint32_t)vocab_n))
        goto done;
    if (teller_model_set_vocab(m, v, base ? teller_model_token_kind(m) : tokens, &err) != TELLER_OK) {
        fprintf(stderr, "teller: train: %s\n", err.msg);
        goto done;
    }
    teller_model_set_without(m, teller_model_without(m) | without);
    /* the trace tokens, and what they cover */
    size_t nbase = 0, ntok = 0;
    for (size_t i = 0; i < ntr + nva; i++) {
        teller_model_sample *x = i < ntr ? &tr[i] : &va[i - ntr];
        if (teller_model_tokenize(m, v, x, &err) != TELLER_OK) {
            fprintf(stderr, "teller: train: %s\n", err.msg);
            goto done;
        }
        for (int j = 0; j < TELLER_MODEL_TRACE_CANDS; j++)
            nbase += x->nbase[j];
        ntok += x->ntrace;
        teller_model_ablate(m, x);
    }
    fprintf(stderr, "teller: train: %s tokens, vocabulary of %zu symbols (%zu merges); %.1f base tokens a step, %.1f "
                    "trace tokens read\n",
            teller_model_token_kind(m) == TELLER_MODEL_TOKENS_RAW ? "raw" : "TPE", teller_tpe_vocab_size(v),
            teller_tpe_vocab_merges(v), ntr + nva ? (double)nbase / (double)(ntr + nva) : 0,
            ntr + nva ? (double)ntok / (double)(ntr + nva) : 0);
    teller_train_opts to = {0};
    to.seed = (uint64_t)seed;
    to.max_epochs = (int)epochs;
    to.patience = (int)patience;
    to.fine_tune = base != NULL;
    to.progress = progress;
    teller_train_report rep;
    if (teller_model_train(m, tr, ntr, va, nva, &to, &rep, &err) != TELLER_OK ||
        teller_model_save(m, out, &err) != TELLER_OK) {
        fprintf(stderr, "teller: %s: %s\n", err.file, err.msg);
        goto done;
    }
    printf("trained %d epochs, kept epoch %d (training loss %.4f, validation loss %.4f, abnormal from P %.2f): %s\n",
           rep.epochs, rep.best_epoch, rep.train_loss, rep.val_loss, rep.threshold, out);
    printf("validation: step F1 %.3f (the model alone %.3f, the numeric stage %.3f), kind accuracy %.3f, root accuracy "
           "%.3f\n",
           rep.f1, rep.f1_model, rep.f1_numeric, rep.kind_acc, rep.root_acc);
    rc = 0;
done:
    teller_model_free(m);
    teller_tpe_vocab_free(v);
    free(tr);
    free(va);
    cli_free_strs(cases, ncases);
    return rc;
}
