/*
 * cmd_slice.c - `teller slice --step K --rank R [--op NAME] TRACE...`: the
 * causal-context slice (include/teller/slice.h) around one operator (the
 * longest on that rank in that step whose normalised name is NAME or whose
 * name contains it) or around the whole step, in time order. With
 * --tokens, also the slice as TPE tokens (include/teller/tpe.h) under the
 * built-in vocabulary or --vocab-file FILE: what a model is fed.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "teller/slice.h"
#include "teller/tpe.h"
#include "../util/textout.h"

/* The slice's events as encoded TPE tokens, printed after the events (one
 * line each, or a JSON array); 0 on success. */
static int put_tokens(const teller_store *st, const teller_slice_item *items, size_t n, const char *vocab_file,
                      int json)
{
    teller_error err;
    teller_error_clear(&err);
    teller_tpe_vocab *v = NULL;
    teller_tpe_ctx *c = NULL;
    teller_tpe_seq base, enc;
    memset(&base, 0, sizeof base);
    memset(&enc, 0, sizeof enc);
    uint32_t *evs = malloc((n ? n : 1) * sizeof *evs);
    size_t tcap = (size_t)1 << 16;
    char *text = malloc(tcap);
    int rc = 1;
    if (!evs || !text)
        goto done;
    for (size_t i = 0; i < n; i++)
        evs[i] = items[i].event;
    if ((vocab_file ? teller_tpe_vocab_load(vocab_file, &v, &err) : teller_tpe_vocab_default(&v, &err)) ||
        teller_tpe_ctx_create(st, v, &c, &err) || teller_tpe_serialize_events(c, evs, n, &base, &err) ||
        teller_tpe_encode(v, &base, &enc, &err)) {
        fprintf(stderr, "teller: %s: %s\n", err.file[0] ? err.file : "tpe", err.msg);
        goto done;
    }
    if (json)
        printf("\n,\"nodes\": %zu, \"tokens\": [", base.n / 2);
    else
        printf("\n%zu tokens for %zu nodes:\n", enc.n, base.n / 2);
    for (size_t t = 0; t < enc.n; t++) {
        teller_tpe_symbol_text(v, enc.sym[t], text, tcap);
        if (json) {
            printf("%s\n  {\"id\": %u, \"depth\": %u, \"first\": %u, \"len\": %u, \"bucket\": \"%s\", \"text\": ",
                   t ? "," : "", enc.sym[t], enc.depth[t], enc.first[t], enc.len[t],
                   teller_tpe_bucket_name(enc.bucket[t]));
            teller_json_put(stdout, text);
            printf("}");
        } else {
            printf("%*s#%u ~%s  ", 2 * (int)(enc.depth[t] < 40 ? enc.depth[t] : 40), "", enc.sym[t],
                   teller_tpe_bucket_name(enc.bucket[t]));
            cli_put_text(stdout, text);
            printf("\n");
        }
    }
    if (json)
        printf("\n]");
    rc = 0;
done:
    free(evs);
    free(text);
    teller_tpe_seq_free(&base);
    teller_tpe_seq_free(&enc);
    teller_tpe_ctx_free(c);
    teller_tpe_vocab_free(v);
    return rc;
}

int cmd_slice(int argc, char **argv)
{
    cli_load_opts o = cli_load_defaults();
    int step = 0, rank = 0, max = 0, json = 0, tokens = 0;
    const char *op = NULL, *vocab_file = NULL;
    const int most = 2147483647;
    const cli_opt opts[] = {
        CLI_INT(0, "step", &step, "K", 0, most, "the step (default 0)"),
        CLI_INT(0, "rank", &rank, "R", 0, most, "the rank (default 0)"),
        CLI_STR(0, "op", &op, "NAME", 0,
                "seed: the longest event named NAME (normalised) or containing NAME;\n"
                "without it, the step's marker (the whole rank's step)"),
        CLI_INT(0, "max", &max, "N", 1, most, "at most N events (default 256)"),
        CLI_BOOL(0, "tokens", &tokens, "also the slice as TPE tokens, under the built-in vocabulary"),
        CLI_STR(0, "vocab-file", &vocab_file, "F", 0, "... or under vocabulary F (implies --tokens)"),
        CLI_BOOL(0, "json", &json, "JSON instead of the table"),
        CLI_LOAD_OPTS(&o),
        CLI_END,
    };
    const cli_cmd cmd = {
        .name = "slice",
        .usage = "--step K --rank R [--op NAME] [--tokens] [--json] [options] TRACE_OR_CASE...",
        .about = "The causal-context slice around one operator of a rank's step, or around the whole step,\n"
                 "in time order; with --tokens, also as the TPE tokens a model is fed.",
        .opts = opts,
        CLI_TRACES,
    };
    int status;
    teller_store *st = cli_parse_load(&cmd, &o, argc, argv, &status);
    if (!st)
        return status;
    tokens |= vocab_file != NULL;
    uint32_t seed = teller_slice_find_seed(st, (uint32_t)step, (int32_t)rank, op);
    if (seed == TELLER_NONE) {
        cli_error(cmd.name, "no %s on rank %d in step %d", op ? "matching event" : "step", rank, step);
        teller_store_free(st);
        return 1;
    }
    teller_slice_opts so = teller_slice_defaults();
    if (max > 0)
        so.max_events = (uint32_t)max;
    teller_slice_item *items = NULL;
    size_t n = 0;
    teller_error err;
    teller_error_clear(&err);
    if (teller_slice_build(st, &seed, 1, &so, &items, &n, &err)) {
        cli_error(cmd.name, "%s", err.msg);
        teller_store_free(st);
        return 1;
    }
    const teller_events *ev = teller_store_events(st);
    int64_t t0 = ev->start_ns[seed];
    if (json)
        printf("{\"seed\": %u, \"events\": [", seed);
    else
        printf("%12s %12s %5s %-11s %6s %-8s  %s\n", "start_us", "dur_us", "rank", "relation", "weight", "layer",
               "name");
    for (size_t i = 0; i < n; i++) {
        uint32_t e = items[i].event;
        const char *name = teller_store_str(st, ev->name[e]);
        if (json) {
            printf("%s\n  {\"event\": %u, \"rank\": %d, \"relation\": \"%s\", \"weight\": %.3f, \"layer\": \"%s\", "
                   "\"start_ns\": %lld, \"dur_ns\": %lld, \"name\": ",
                   i ? "," : "", e, teller_store_event_rank(st, e), teller_slice_rel_name((teller_slice_rel)items[i].rel),
                   items[i].weight, teller_layer_tag((teller_layer)ev->layer[e]), (long long)ev->start_ns[e],
                   (long long)ev->dur_ns[e]);
            teller_json_put(stdout, name);
            printf("}");
        } else {
            printf("%+12.3f %12.3f %5d %-11s %6.3f %-8s  ", (double)(ev->start_ns[e] - t0) / 1e3,
                   (double)ev->dur_ns[e] / 1e3, teller_store_event_rank(st, e),
                   teller_slice_rel_name((teller_slice_rel)items[i].rel), items[i].weight,
                   teller_layer_tag((teller_layer)ev->layer[e]));
            cli_put_text(stdout, name);
            printf("\n");
        }
    }
    if (json)
        printf("\n]");
    int rc = tokens ? put_tokens(st, items, n, vocab_file, json) : 0;
    if (json)
        printf("}\n");
    free(items);
    teller_store_free(st);
    return rc;
}
