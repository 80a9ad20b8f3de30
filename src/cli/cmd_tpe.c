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
    long          vocab, min_count, step, rank;
    int           cross, buckets, frames, balance, json;
    const char   *out, *vocab_file;
    char        **paths;
    int           np;
} tpe_args;

static int want_num(const char *cmd, const char *opt, const char *v, long *out)
{
    char *end;
    *out = v ? strtol(v, &end, 10) : 0;
    if (!v || *end || !*v || *out < 0 || *out > INT32_MAX) {
        fprintf(stderr, "teller: tpe %s: %s wants a number from 0 to %d\n", cmd, opt, INT32_MAX);
        return -1;
    }
    return 0;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: teller tpe train --vocab V -o FILE [--min-count N] [--no-cross] [--no-buckets] [--frames]\n"
               "                        RUN...\n"
               "       teller tpe encode [--vocab-file FILE] [--step K] [--rank R] [--json] TRACE...\n"
               "       teller tpe stats [--vocab-file FILE] RUN...\n"
               "  train, stats: each argument is one run (a case directory or a trace file)\n"
               "  encode: the arguments together are one run\n"
               "  --vocab-file F   the vocabulary (default: the built-in one, learned by make vocab)\n"
               "  --vocab V        merged tokens to learn (base symbols come on top)\n"
               "  --min-count N    stop when the best pair occurs fewer than N times (default 2)\n"
               "  --no-cross       merges stay inside one level (same parent and depth);\n"
               "                   by default they may span a parent-child boundary, as in the paper\n"
               "  --no-buckets     no duration bucket on TAG tokens\n"
               "  --frames         Python frames are nodes (by default they are left out)\n"
               "  --no-balance     every step counts once (by default every run weighs as much as\n"
               "                   the largest, up to 1000x, so a one-step trace is not drowned)\n" CLI_COMMON_HELP);
}

static int parse(const char *cmd, int argc, char **argv, tpe_args *a)
{
    for (int i = 1; i < argc; i++) {
        int r = cli_common_opt(&a->load, argc, argv, &i);
        if (r < 0)
            return -1;
        if (r)
            continue;
        const char *s = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(s, "--vocab")) {
            if (want_num(cmd, s, v, &a->vocab))
                return -1;
            i++;
        } else if (!strcmp(s, "--min-count")) {
            if (want_num(cmd, s, v, &a->min_count))
                return -1;
            i++;
        } else if (!strcmp(s, "--step")) {
            if (want_num(cmd, s, v, &a->step))
                return -1;
            i++;
        } else if (!strcmp(s, "--rank")) {
            if (want_num(cmd, s, v, &a->rank))
                return -1;
            i++;
        } else if (!strcmp(s, "-o") || !strcmp(s, "--vocab-file")) {
            if (!v) {
                fprintf(stderr, "teller: tpe %s: %s needs a file\n", cmd, s);
                return -1;
            }
            if (s[1] == 'o')
                a->out = v;
            else
                a->vocab_file = v;
            i++;
        } else if (!strcmp(s, "--cross") || !strcmp(s, "--no-cross"))
            a->cross = s[2] == 'c';
        else if (!strcmp(s, "--no-buckets"))
            a->buckets = 0;
        else if (!strcmp(s, "--frames") || !strcmp(s, "--no-frames"))
            a->frames = s[2] == 'f';
        else if (!strcmp(s, "--balance") || !strcmp(s, "--no-balance"))
            a->balance = s[2] == 'b';
        else if (!strcmp(s, "--json"))
            a->json = 1;
        else if (!strcmp(s, "-h") || !strcmp(s, "--help")) {
            usage(stdout);
            return 1;
        } else if (s[0] == '-' && s[1]) {
            fprintf(stderr, "teller: tpe %s: unknown option %s\n", cmd, s);
            return -1;
        } else
            a->paths[a->np++] = argv[i];
    }
    if (!a->np) {
        fprintf(stderr, "teller: tpe %s: no traces given\n", cmd);
        return -1;
    }
    return 0;
}

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
        fprintf(stderr, "teller: %s\n", err.msg);
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
    if (!a->out || a->vocab < 0) {
        fprintf(stderr, "teller: tpe train: needs --vocab V and -o FILE\n");
        return 2;
    }
    teller_tpe_vocab_opts vo = {a->buckets, a->cross, a->frames};
    teller_tpe_vocab *v = teller_tpe_vocab_create(&vo);
    teller_tpe_seq *seqs = NULL;
    size_t n = 0, *run_end = calloc((size_t)a->np, sizeof *run_end);
    uint32_t *w = NULL;
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
    if (teller_tpe_train_weighted(v, seqs, w, n, &to, &err) || teller_tpe_vocab_save(v, a->out, &err)) {
        fprintf(stderr, "teller: %s: %s\n", err.file, err.msg);
        goto done;
    }
    fprintf(stderr, "teller: tpe train: %zu steps, %zu base symbols, %zu merges -> %s\n", n, base,
            teller_tpe_vocab_merges(v), a->out);
    rc = 0;
done:
    free(run_end);
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
            fprintf(stderr, "teller: %s\n", err.msg);
            rc = 1;
            break;
        }
        if (a->json)
            printf("%s\n {\"step\": %u, \"rank\": %d, \"nodes\": %zu, \"tokens_before\": %zu, \"tokens\": [",
                   firstout ? "" : ",", steps[k].step, steps[k].rank, seqs[k].n / 2, seqs[k].n);
        else
            printf("step %u rank %d: %zu nodes, %zu tokens before, %zu after\n", steps[k].step, steps[k].rank,
                   seqs[k].n / 2, seqs[k].n, enc.n);
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
        nodes += (double)seqs[k].n / 2;
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
    if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    const char *sub = argv[1];
    if (strcmp(sub, "train") && strcmp(sub, "encode") && strcmp(sub, "stats")) {
        fprintf(stderr, "teller: tpe: unknown subcommand '%s'\n", sub);
        usage(stderr);
        return 2;
    }
    tpe_args a;
    memset(&a, 0, sizeof a);
    a.load = cli_load_defaults();
    a.vocab = -1;
    a.step = a.rank = -1;
    teller_tpe_vocab_opts dv = teller_tpe_vocab_defaults();
    a.buckets = dv.buckets;
    a.cross = dv.cross_levels;
    a.frames = dv.frames;
    a.balance = 1;
    a.paths = calloc((size_t)argc + 1, sizeof *a.paths);
    if (!a.paths)
        return 1;
    int r = parse(sub, argc - 1, argv + 1, &a);
    int rc = r < 0 ? 2 : r > 0 ? 0 : !strcmp(sub, "train") ? do_train(&a) : !strcmp(sub, "encode") ? do_encode(&a)
                                                                                                    : do_stats(&a);
    free(a.paths);
    return rc;
}
