/*
 * cmd_requests.c - `teller requests [--json] [--id ID] [--slowest N]
 * TRACE_OR_CASE... [--log LOG...]`: every request's lifecycle and latency
 * breakdown (requests.h), as a table by latency, BENCHMARK.md JSON, or for
 * one id its call-chain tree with the path to where its time went. A case
 * directory brings its .log files under logs/ along; the diagnosis (diagnose.h)
 * marks abnormal steps unless --no-diagnose.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "teller/diagnose.h"
#include "teller/requests.h"
#include "../util/textout.h"

static double ms(int64_t ns) { return (double)ns / 1e6; }

static const char *flag_names[] = {"steps_from_trace", "steps_inferred", "arrival_from_log", "arrival_inferred",
                                   "unfinished", "finished_twice", "log_only", "no_received_line", "aborted",
                                   "other_run", "finish_mismatch", "recompute", "delayed"};

static void put_flags(FILE *f, uint32_t fl, int json)
{
    int first = 1;
    for (size_t b = 0; b < sizeof flag_names / sizeof *flag_names; b++)
        if (fl >> b & 1) {
            if (json)
                fprintf(f, "%s\"%s\"", first ? "" : ", ", flag_names[b]);
            else
                fprintf(f, "%s%s", first ? "" : ",", flag_names[b]);
            first = 0;
        }
}

static void put_json(const teller_requests *R)
{
    printf("{\"version\": 1, \"source\": ");
    teller_json_put(stdout, R->source);
    printf(",\n \"inferred_fields\": \"steps (when flags say steps_inferred), arrival_ns (arrival_inferred: midpoint "
           "of the bounds), per-step tokens of prefill chunks\",\n \"requests\": [");
    for (size_t i = 0; i < R->n; i++) {
        const teller_request *q = &R->req[i];
        printf("%s\n  {\"id\": ", i ? "," : "");
        teller_json_put(stdout, q->id);
        printf(", \"arrival_ns\": %lld, \"finish_ns\": %lld, \"latency_ns\": %lld, \"steps\": [",
               (long long)(q->arrival_ns == INT64_MIN ? -1 : q->arrival_ns),
               (long long)(q->finish_ns == INT64_MIN ? -1 : q->finish_ns), (long long)q->latency_ns);
        for (uint32_t k = 0; k < q->nsteps; k++)
            printf("%s%u", k ? ", " : "", q->steps[k].step);
        printf("],\n   \"breakdown\": {\"queue_ns\": %lld, \"prefill_ns\": %lld, \"decode_ns\": %lld, \"stall_ns\": %lld, "
               "\"abnormal_ns\": %lld}, \"cause\": ",
               (long long)q->queue_ns, (long long)q->prefill_ns, (long long)q->decode_ns, (long long)q->stall_ns,
               (long long)q->abnormal_ns);
        teller_json_put(stdout, q->cause);
        printf(",\n   \"arrival_lo_ns\": %lld, \"arrival_hi_ns\": %lld, \"max_tokens\": %d, \"prefill_steps\": %u, "
               "\"attributed_ns\": %lld, \"excess_ns\": %lld, \"abnormal_steps\": %u, \"abnormal\": %s, \"flags\": [",
               (long long)(q->arrival_lo_ns == INT64_MIN ? -1 : q->arrival_lo_ns),
               (long long)(q->arrival_hi_ns == INT64_MIN ? -1 : q->arrival_hi_ns), q->max_tokens, q->prefill_steps,
               (long long)q->attributed_ns, (long long)q->excess_ns, q->abnormal_steps, q->abnormal_ns > 0 ? "true" : "false");
        put_flags(stdout, q->flags, 1);
        printf("]}");
    }
    printf("\n ],\n \"notes\": [");
    for (size_t i = 0; i < R->nnotes; i++) {
        printf("%s\n  ", i ? "," : "");
        teller_json_put(stdout, R->notes[i]);
    }
    printf("\n ]}\n");
}

static int by_latency(const void *a, const void *b)
{
    const teller_request *x = *(const teller_request *const *)a, *y = *(const teller_request *const *)b;
    return x->latency_ns < y->latency_ns ? 1 : x->latency_ns > y->latency_ns ? -1 : strcmp(x->id, y->id);
}

static void put_table(const teller_requests *R, int slowest)
{
    const teller_request **v = malloc((R->n ? R->n : 1) * sizeof *v);
    if (!v)
        return;
    for (size_t i = 0; i < R->n; i++)
        v[i] = &R->req[i];
    qsort(v, R->n, sizeof *v, by_latency);
    size_t n = slowest > 0 && (size_t)slowest < R->n ? (size_t)slowest : R->n;
    printf("requests: %zu (source: %s)\n", R->n, R->source);
    printf("%-40s %10s %9s %9s %9s %9s %9s %6s  %s\n", "id", "latency_ms", "queue", "prefill", "decode", "stall",
           "abnormal", "steps", "cause [flags]");
    for (size_t i = 0; i < n; i++) {
        const teller_request *q = v[i];
        printf("%-40.40s ", q->id);
        if (q->latency_ns >= 0)
            printf("%10.3f ", ms(q->latency_ns));
        else
            printf("%10s ", "?");
        printf("%9.3f %9.3f %9.3f %9.3f %9.3f %6u  ", ms(q->queue_ns), ms(q->prefill_ns), ms(q->decode_ns),
               ms(q->stall_ns), ms(q->abnormal_ns), q->nsteps);
        cli_put_text(stdout, q->cause[0] ? q->cause : "-");
        printf(" [");
        put_flags(stdout, q->flags, 0);
        printf("]\n");
    }
    if (n < R->n)
        printf("... %zu more (--slowest N)\n", R->n - n);
    free(v);
    printf("times in ms; steps_inferred: the steps were inferred from the logs and each step's batch composition, "
           "not observed; arrival_inferred: the midpoint of what the log line and the step timeline allow\n");
}

static void put_tree(const teller_store *st, const teller_request *q,
                     const teller_diagnosis *diag)
{
    printf("request ");
    cli_put_text(stdout, q->id);
    printf("  [");
    put_flags(stdout, q->flags, 0);
    printf("]\n");
    if (q->latency_ns >= 0)
        printf("  latency %.3f ms = queue %.3f + prefill %.3f + decode %.3f + stalls %.3f; inside abnormal steps %.3f\n",
               ms(q->latency_ns), ms(q->queue_ns), ms(q->prefill_ns), ms(q->decode_ns), ms(q->stall_ns),
               ms(q->abnormal_ns));
    else
        printf("  latency unknown (no finish or no steps)\n");
    printf("  cause: ");
    cli_put_text(stdout, q->cause[0] ? q->cause : "-");
    printf("\n  steps (shared = the step's window, attributed = its token share of it):\n");
    for (uint32_t i = 0; i < q->nsteps; i++) {
        const teller_req_step *s = &q->steps[i];
        int ab = 0;
        for (size_t k = 0; diag && k < diag->n; k++)
            if (diag->steps[k].pred.step == s->step)
                ab = diag->steps[k].pred.abnormal;
        printf("  %s step %-5u %-7s tokens %-5d shared %9.3f ms  attributed %8.3f ms (%.1f%%)%s\n",
               s->step == q->worst_step ? "*" : " ", s->step, s->prefill ? "prefill" : "decode", s->tokens,
               ms(s->shared_ns), ms(s->attributed_ns), 100.0 * s->share, ab ? "  ABNORMAL" : "");
    }
    if (q->worst_step == TELLER_NONE)
        return;
    /* the path to where its time went: the worst step on every rank */
    printf("  where the time went, step %u, per rank (longest child at each level):\n", q->worst_step);
    const teller_events *ev = teller_store_events(st);
    const teller_step *rows = teller_store_steps(st);
    size_t nrows = teller_store_num_steps(st);
    for (size_t i = 0; i < nrows; i++) {
        if (rows[i].step != q->worst_step)
            continue;
        uint32_t path[64];
        size_t n = teller_request_hot_path(st, rows[i].step, rows[i].rank, path, 64);
        printf("    rank %d (%.3f ms):", rows[i].rank, ms(rows[i].end_ns - rows[i].start_ns));
        for (size_t k = 0; k < n; k++) {
            printf("%s", k ? " > " : " ");
            cli_put_text(stdout, teller_store_str(st, ev->name[path[k]]));
            printf(" (%.3f)", ms(ev->dur_ns[path[k]]));
        }
        printf("\n");
    }
}

int cmd_requests(int argc, char **argv)
{
    cli_load_opts o = cli_load_defaults();
    int json = 0, slowest = 0, use_diag = 1, rc = 1;
    const char *id = NULL;
    cli_strs logs = {NULL, 0};
    const cli_opt opts[] = {
        CLI_BOOL(0, "json", &json, "every request as JSON (../shared/BENCHMARK.md)"),
        CLI_STR(0, "id", &id, "ID", 0, "one request: its steps, and the path to where its time went"),
        CLI_INT(0, "slowest", &slowest, "N", 1, 2147483647, "the table's N slowest requests"),
        CLI_FLAG(0, "no-diagnose", &use_diag, 0, 0, "do not mark the abnormal steps (no diagnosis)"),
        CLI_LIST(0, "log", &logs, "LOG...", CLI_TAIL,
                 "logs (node from 'node<N>' in the name): this one and every\n"
                 "argument after it; a case directory brings its logs/*.log"),
        CLI_LOAD_OPTS(&o),
        CLI_END,
    };
    const cli_cmd cmd = {
        .name = "requests",
        .usage = "[--json | --id ID | --slowest N] [options] TRACE_OR_CASE... [--log LOG...]",
        .about = "Per request: lifecycle, steps, latency breakdown (queue, prefill, decode, stalls,\n"
                 "abnormal steps), as a table by latency, as JSON, or for one id its call-chain tree.",
        .opts = opts,
        CLI_TRACES,
        .arg = cli_arg_case_logs,
        .ctx = &logs,
    };
    int np = cli_parse(&cmd, argc, argv);
    if (np < 0) {
        rc = cli_parse_exit(np);
        goto out;
    }
    if (json && (id || slowest)) { /* the JSON is every request, whole */
        cli_error(cmd.name, "--json writes every request; it takes neither --id nor --slowest");
        rc = 2;
        goto out;
    }
    teller_store *st = cli_load(&o, argv + 1, np);
    if (!st)
        goto out;
    teller_error err;
    teller_error_clear(&err);
    teller_diagnosis *diag = NULL;
    if (use_diag) {
        teller_diag_opts d = teller_diag_defaults();
        d.logs = (const char *const *)logs.v;
        d.nlogs = logs.n;
        if (teller_diagnose(st, &d, &diag, &err) != TELLER_OK) {
            cli_error(cmd.name, "diagnosis failed (%s); continuing without it", err.msg);
            diag = NULL;
            teller_error_clear(&err);
        }
    }
    teller_req_opts ro = teller_req_defaults();
    ro.logs = (const char *const *)logs.v;
    ro.nlogs = logs.n;
    ro.diag = diag;
    teller_requests *R = NULL;
    teller_status rs = TELLER_OK;
    if (diag && diag->requests) { /* the diagnosis read the logs and built them against its steps */
        R = diag->requests;
        diag->requests = NULL;
    } else {
        rs = teller_requests_build(st, &ro, &R, &err);
    }
    if (rs != TELLER_OK) {
        fprintf(stderr, "teller: %s:%llu: %s\n", err.file, (unsigned long long)err.offset, err.msg);
    } else if (id) {
        const teller_request *q = teller_requests_find(R, id);
        if (!q) {
            cli_error(cmd.name, "no request '%s' in the trace or logs", id);
        } else {
            put_tree(st, q, diag);
            rc = 0;
        }
    } else {
        if (json)
            put_json(R);
        else
            put_table(R, slowest);
        rc = 0;
    }
    if (R && !json)
        for (size_t i = 0; i < R->nnotes; i++) {
            fprintf(stderr, "teller requests: note: ");
            cli_put_text(stderr, R->notes[i]);
            fprintf(stderr, "\n");
        }
    teller_requests_free(R);
    teller_diagnosis_free(diag);
    teller_store_free(st);
out:
    cli_strs_free(&logs);
    return rc;
}
