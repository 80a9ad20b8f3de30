/*
 * cmd_tpe.c - `teller tpe train|encode|stats`: Trace Pair Encoding of the
 * steps of traces (include/teller/tpe.h).
 *
 *   train  --vocab V -o FILE RUN...   learns V merges over every step of
 *          every run; each argument is one run (a case directory or a file)
 *   encode [--vocab-file FILE] TRACE... the arguments are one run; tokens
 *          per step and rank, readable or --json
 *   stats  [--vocab-file FILE] RUN...   JSON: steps, nodes_per_step,
 *          tokens_before_per_step, tokens_after_per_step, reduction
 *          (1 - tokens after / nodes, the paper's figure) and
 *          reduction_tokens (1 - tokens after / tokens before)
 * encode and stats use the built-in default vocabulary
 * (teller_tpe_vocab_default) when no --vocab-file is given.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "teller/tpe.h"
#include "../util/textout.h"

typedef struct tpe_args {
    cli_load_opts load;
    int           vocab, min_count, step, rank;
    int           cross, buckets, frames, balance, json;
    const char   *out, *vocab_file;
    char        **paths;
    int           np;
} tpe_args;

/* Loads one run and appends its step sequences to *seqs. */
static int load_run(const tpe_args *a, char **paths, int np, teller_tpe_vocab *v, teller_tpe_seq **seqs, size_t *n,
                    teller_store **keep)
{
    teller_store *st = cli_load(&a->load, paths, np);
    if (!st)
        return -1;
    teller_error err;
    teller_error_clear(&err);
    teller_tpe_ctx *ctx = NULL;
    teller_tpe_seq *s = NULL;
    size_t k = 0;
    if (teller_tpe_ctx_create(st, v, &ctx, &err) || teller_tpe_serialize_steps(ctx, &s, &k, &err)) {
        cli_error("tpe", "%s", err.msg);
        teller_tpe_ctx_free(ctx);
        teller_store_free(st);
        return -1;
    }
    teller_tpe_ctx_free(ctx);
    teller_tpe_seq *grown = realloc(*seqs, (*n + k + 1) * sizeof *grown);
    if (!grown) {
        for (size_t i = 0; i < k; i++)
            teller_tpe_seq_free(&s[i]);
        free(s);
        teller_store_free(st);
        return -1;
    }
    memcpy(grown + *n, s, k * sizeof *s);
    free(s);
    *seqs = grown;
    *n += k;
    if (keep)
        *keep = st;
    else
        teller_store_free(st);
    return 0;
}

static void free_seqs(teller_tpe_seq *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        teller_tpe_seq_free(&s[i]);
    free(s);
}

static int do_train(tpe_args *a)
{
    if (cli_can_write(a->out))
        return 1;
    teller_tpe_vocab_opts vo = {a->buckets, a->cross, a->frames};
    teller_tpe_vocab *v = teller_tpe_vocab_create(&vo);
    teller_tpe_seq *seqs = NULL;
    size_t n = 0, *run_end = calloc((size_t)a->np, sizeof *run_end);
    uint32_t *w = NULL, *run = NULL;
    int rc = 1;
    if (!v || !run_end)
        goto done;
    for (int i = 0; i < a->np; i++) {
        if (load_run(a, &a->paths[i], 1, v, &seqs, &n, NULL))
            goto done;
        run_end[i] = n;
    }
    /* run weights: the largest run's tokens over this run's, at most 1000 */
    if (!(w = malloc((n ? n : 1) * sizeof *w)))
        goto done;
    double tmax = 0;
    for (int i = 0, k = 0; i < a->np; i++) {
        double t = 0;
        for (; (size_t)k < run_end[i]; k++)
            t += (double)seqs[k].n;
        tmax = t > tmax ? t : tmax;
    }
    for (int i = 0, k = 0; i < a->np; i++) {
        size_t k0 = (size_t)k;
        double t = 0;
        for (; (size_t)k < run_end[i]; k++)
            t += (double)seqs[k].n;
        double r = a->balance && t > 0 ? tmax / t + 0.5 : 1;
        for (size_t j = k0; j < run_end[i]; j++)
            w[j] = r > 1000 ? 1000 : (uint32_t)r;
    }
    teller_tpe_train_opts to = teller_tpe_train_defaults();
    to.vocab = (uint32_t)a->vocab;
    if (a->min_count > 0)
        to.min_count = (uint32_t)a->min_count;
    teller_error err;
    teller_error_clear(&err);
    size_t base = teller_tpe_vocab_size(v);
    if (!(run = malloc((n ? n : 1) * sizeof *run)))
        goto done;
    for (int i = 0, k = 0; i < a->np; i++) /* each argument is one run */
        for (; (size_t)k < run_end[i]; k++)
            run[k] = (uint32_t)i;
    if (teller_tpe_train_runs(v, seqs, w, run, n, &to, &err) || teller_tpe_vocab_save(v, a->out, &err)) {
        fprintf(stderr, "teller: %s: %s\n", err.file, err.msg);
        goto done;
    }
    fprintf(stderr, "teller tpe train: %zu steps, %zu base symbols, %zu merges -> %s\n", n, base,
            teller_tpe_vocab_merges(v), a->out);
    rc = 0;
done:
    free(run_end);
    free(run);
    free(w);
    free_seqs(seqs, n);
    teller_tpe_vocab_free(v);
    return rc;
}

static teller_tpe_vocab *load_vocab(const tpe_args *a)
{
    teller_tpe_vocab *v = NULL;
    teller_error err;
    teller_error_clear(&err);
    if (a->vocab_file ? teller_tpe_vocab_load(a->vocab_file, &v, &err) : teller_tpe_vocab_default(&v, &err)) {
        if (err.line)
            fprintf(stderr, "teller: %s:%llu: %s\n", err.file, (unsigned long long)err.line, err.msg);
        else
            fprintf(stderr, "teller: %s: %s\n", err.file, err.msg);
        return NULL;
    }
    return v;
}

static int do_encode(tpe_args *a)
{
    teller_tpe_vocab *v = load_vocab(a);
    if (!v)
        return 1;
    teller_tpe_seq *seqs = NULL;
    size_t n = 0;
    teller_store *st = NULL;
    if (load_run(a, a->paths, a->np, v, &seqs, &n, &st)) {
        teller_tpe_vocab_free(v);
        return 1;
    }
    const teller_step *steps = teller_store_steps(st);
    const teller_events *ev = teller_store_events(st);
    teller_tpe_seq enc;
    memset(&enc, 0, sizeof enc);
    teller_error err;
    teller_error_clear(&err);
    size_t tcap = (size_t)1 << 20; /* a merged token can span a whole step */
    char *text = malloc(tcap);
    int rc = text ? 0 : 1, firstout = 1;
    if (a->json)
        printf("{\"steps\": [");
    for (size_t k = 0; k < n && text; k++) {
        if ((a->step >= 0 && steps[k].step != (uint32_t)a->step) || (a->rank >= 0 && steps[k].rank != a->rank))
            continue;
        if (teller_tpe_encode(v, &seqs[k], &enc, &err)) {
            cli_error("tpe encode", "%s", err.msg);
            rc = 1;
            break;
        }
        if (a->json)
            printf("%s\n {\"step\": %u, \"rank\": %d, \"nodes\": %zu, \"tokens_before\": %zu, \"tokens\": [",
                   firstout ? "" : ",", steps[k].step, steps[k].rank, seqs[k].n, seqs[k].n);
        else
            printf("step %u rank %d: %zu nodes, %zu tokens before, %zu after\n", steps[k].step, steps[k].rank,
                   seqs[k].n, seqs[k].n, enc.n);
        firstout = 0;
        for (size_t t = 0; t < enc.n; t++) {
            teller_tpe_symbol_text(v, enc.sym[t], text, tcap);
            if (a->json) {
                printf("%s\n  {\"id\": %u, \"text\": ", t ? "," : "", enc.sym[t]);
                teller_json_put(stdout, text);
                printf(", \"parent\": %lld, \"depth\": %u, \"dur_ns\": %lld, \"bucket\": \"%s\", \"first\": %u, "
                       "\"len\": %u, \"event_name\": ",
                       enc.parent[t] == TELLER_NONE ? -1LL : (long long)enc.parent[t], enc.depth[t],
                       (long long)enc.dur_ns[t], teller_tpe_bucket_name(enc.bucket[t]), enc.first[t], enc.len[t]);
                teller_json_put(stdout, enc.event[t] == TELLER_NONE ? "" : teller_store_str(st, ev->name[enc.event[t]]));
                printf("}");
            } else {
                printf("%*s#%u %10.3f us ~%s  [%u+%u]  ", 2 * (int)(enc.depth[t] < 40 ? enc.depth[t] : 40), "",
                       enc.sym[t], (double)enc.dur_ns[t] / 1e3, teller_tpe_bucket_name(enc.bucket[t]), enc.first[t],
                       enc.len[t]);
                cli_put_text(stdout, text);
                printf("\n");
            }
        }
        if (a->json)
            printf("]}");
    }
    if (a->json)
        printf("\n]}\n");
    free(text);
    teller_tpe_seq_free(&enc);
    free_seqs(seqs, n);
    teller_store_free(st);
    teller_tpe_vocab_free(v);
    return rc;
}

static int do_stats(tpe_args *a)
{
    teller_tpe_vocab *v = load_vocab(a);
    if (!v)
        return 1;
    teller_tpe_seq *seqs = NULL;
    size_t n = 0;
    for (int i = 0; i < a->np; i++)
        if (load_run(a, &a->paths[i], 1, v, &seqs, &n, NULL)) {
            free_seqs(seqs, n);
            teller_tpe_vocab_free(v);
            return 1;
        }
    teller_tpe_encoder *e = teller_tpe_encoder_create(v);
    size_t maxn = 1;
    for (size_t k = 0; k < n; k++)
        if (seqs[k].n > maxn)
            maxn = seqs[k].n;
    uint32_t *buf = malloc(maxn * sizeof *buf);
    if (!e || !buf) {
        free(buf);
        teller_tpe_encoder_free(e);
        free_seqs(seqs, n);
        teller_tpe_vocab_free(v);
        return 1;
    }
    double nodes = 0, before = 0, after = 0;
    size_t used = 0;
    for (size_t k = 0; k < n; k++) {
        if (!seqs[k].n)
            continue;
        used++;
        nodes += (double)seqs[k].n;
        before += (double)seqs[k].n;
        after += (double)teller_tpe_encode_syms(e, &seqs[k], buf);
    }
    double d = used ? (double)used : 1;
    printf("{\"steps\": %zu, \"nodes_per_step\": %.1f, \"tokens_before_per_step\": %.1f, "
           "\"tokens_after_per_step\": %.1f, \"reduction\": %.4f, \"reduction_tokens\": %.4f, "
           "\"vocab_merges\": %zu, \"vocab_symbols\": %zu}\n",
           used, nodes / d, before / d, after / d, nodes > 0 ? 1 - after / nodes : 0,
           before > 0 ? 1 - after / before : 0, teller_tpe_vocab_merges(v), teller_tpe_vocab_size(v));
    free(buf);
    teller_tpe_encoder_free(e);
    free_seqs(seqs, n);
    teller_tpe_vocab_free(v);
    return 0;
}

int cmd_tpe(int argc, char **argv)
{
    tpe_args a;
    memset(&a, 0, sizeof a);
    a.load = cli_load_defaults();
    a.step = a.rank = -1;
    teller_tpe_vocab_opts dv = teller_tpe_vocab_defaults();
    a.buckets = dv.buckets;
    a.cross = dv.cross_levels;
    a.frames = dv.frames;
    a.balance = 1;
    const int most = 2147483647;
    const char *vocab_help = "the vocabulary (default: the built-in one, learned by make vocab)";
    const cli_opt train_opts[] = {
        {.kind = CLI_K_INT, .name = "vocab", .dst = &a.vocab, .arg = "V", .lo = 0, .hi = most, .flags = CLI_REQUIRED,
         .help = "merged tokens to learn (base symbols come on top)"},
        CLI_STR('o', NULL, &a.out, "FILE", CLI_REQUIRED, "the vocabulary to write"),
        CLI_INT(0, "min-count", &a.min_count, "N", 0, most, "stop when the best pair occurs fewer than N times (default 2)"),
        CLI_FLAG(0, "cross", &a.cross, 1, CLI_NEG,
                 "merges may span a parent-child boundary, as in the paper (default);\n"
                 "--no-cross: they stay inside one level (same parent and depth)"),
        CLI_FLAG(0, "buckets", &a.buckets, 1, CLI_NEG, "a duration bucket on the tokens of timed layers (default)"),
        CLI_FLAG(0, "frames", &a.frames, 1, CLI_NEG, "Python frames are nodes (by default they are left out)"),
        CLI_FLAG(0, "balance", &a.balance, 1, CLI_NEG,
                 "every run weighs as much as the largest, up to 1000x, so a one-step\n"
                 "trace is not drowned (default); --no-balance: every step counts once"),
        CLI_LOAD_OPTS(&a.load),
        CLI_END,
    };
    const cli_opt encode_opts[] = {
        CLI_STR(0, "vocab-file", &a.vocab_file, "FILE", 0, vocab_help),
        CLI_INT(0, "step", &a.step, "K", 0, most, "only step K"),
        CLI_INT(0, "rank", &a.rank, "R", 0, most, "only rank R"),
        CLI_BOOL(0, "json", &a.json, "JSON instead of the listing"),
        CLI_LOAD_OPTS(&a.load),
        CLI_END,
    };
    const cli_opt stats_opts[] = {
        CLI_STR(0, "vocab-file", &a.vocab_file, "FILE", 0, vocab_help),
        CLI_LOAD_OPTS(&a.load),
        CLI_END,
    };
    const char *runs = "  RUN...            each one run: a case directory or a trace file";
    const cli_cmd subs[] = {
        {.name = "tpe train",
         .usage = "--vocab V -o FILE [options] RUN...",
         .about = "Learns V merges over every step of every run.",
         .args = runs,
         .opts = train_opts,
         .min_args = 1,
         .missing = "no run given",
         .max_args = -1},
        {.name = "tpe encode",
         .usage = "[--vocab-file FILE] [--step K] [--rank R] [--json] [options] TRACE_OR_CASE...",
         .about = "The tokens of each step and rank of one run, readable or as JSON.",
         .opts = encode_opts,
         CLI_TRACES},
        {.name = "tpe stats",
         .usage = "[--vocab-file FILE] [options] RUN...",
         .about = "JSON: steps, nodes_per_step, tokens_before_per_step, tokens_after_per_step, reduction\n"
                  "(1 - tokens after / nodes, the paper's figure) and reduction_tokens (1 - tokens after /\n"
                  "tokens before).",
         .args = runs,
         .opts = stats_opts,
         .min_args = 1,
         .missing = "no run given",
         .max_args = -1},
    };
    const cli_opt no_opts[] = {CLI_END};
    const cli_cmd tpe = {
        .name = "tpe",
        .usage = "train --vocab V -o FILE [options] RUN...\n"
                 "encode [--vocab-file FILE] [--step K] [--rank R] [--json] [options] TRACE_OR_CASE...\n"
                 "stats [--vocab-file FILE] [options] RUN...",
        .about = "Trace Pair Encoding of the steps of traces (include/teller/tpe.h); encode and stats use the\n"
                 "built-in vocabulary unless --vocab-file. 'teller tpe SUBCOMMAND --help' lists its options.",
        .opts = no_opts,
        .min_args = 1,
        .missing = "which one? train, encode or stats",
        .max_args = -1,
        .stop = 1,
    };
    int n = cli_parse(&tpe, argc, argv);
    if (n < 0)
        return cli_parse_exit(n);
    size_t k = 0, nsubs = sizeof subs / sizeof *subs;
    while (k < nsubs && strcmp(argv[1], subs[k].name + strlen("tpe ")))
        k++;
    if (k == nsubs) {
        cli_error(tpe.name, "no subcommand '%s': train, encode or stats", argv[1]);
        return 2;
    }
    /* argv[1..n] are the subcommand, then its options and arguments */
    int np = cli_parse(&subs[k], n, argv + 1);
    if (np < 0)
        return cli_parse_exit(np);
    a.paths = argv + 2;
    a.np = np;
    return k == 0 ? do_train(&a) : k == 1 ? do_encode(&a) : do_stats(&a);
}
