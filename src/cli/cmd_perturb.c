/*
 * cmd_perturb.c - `teller perturb -o CASE_DIR [options] TRACE_OR_CASE...`:
 * faults injected into a real, healthy run, written as a benchmark case.
 * A case directory brings its .log files under logs/ along, as for diagnose.
 */

#include "cli.h"
#include "teller/perturb.h"

int cmd_perturb(int argc, char **argv)
{
    cli_load_opts lo = cli_load_defaults();
    teller_perturb_opts o = teller_perturb_defaults();
    const char *out = NULL;
    cli_strs logs = {NULL, 0};
    const cli_opt opts[] = {
        CLI_STR('o', NULL, &out, "CASE_DIR", CLI_REQUIRED, "the case to write"),
        CLI_CALL(0, "fault", cli_faults, &o.faults, "KIND[,KIND...]", "fault kinds to inject (all: every kind, the default)"),
        CLI_NUM(0, "rate", &o.rate, "P", 0, 1, 0, "share of steps that get a fault (default 0.3)"),
        CLI_NUM(0, "severity", &o.severity, "S", 0, 100, CLI_ABOVE, "scales fault magnitudes (default 1, at most 100)"),
        CLI_U64(0, "seed", &o.seed, "N", 0, 18446744073709551615.0, "same input and seed, same bytes (default 1)"),
        CLI_LIST(0, "log", &logs, "LOG", 0,
                 "a service log of the run, copied to logs/node<N>.log\n"
                 "(N from node<N> in its name, else the order given); repeatable;\n"
                 "a case directory brings its logs/*.log"),
        CLI_BOOL(0, "hang-teardown", &o.hang_teardown,
                 "nccl_hang as PyTorch's default (TORCH_NCCL_ASYNC_ERROR_HANDLING=3)\n"
                 "leaves a collector's trace: what still ran at the teardown is not\n"
                 "written, only the watchdog's lines show it (default: as =2, the\n"
                 "waiting collectives aborted and written)"),
        CLI_LOAD_OPTS(&lo),
        CLI_END,
    };
    const cli_cmd cmd = {
        .name = "perturb",
        .usage = "-o CASE_DIR [options] TRACE_OR_CASE...",
        .about = "Injects faults into a real, healthy run and writes it as a benchmark case: rank<R>.trace.json.gz\n"
                 "per rank, logs/, truth.json (../shared/BENCHMARK.md). Kinds a run cannot carry are skipped\n"
                 "with a note; docs/PERTURB.md has the physics.",
        .more = cli_fault_kinds(),
        .opts = opts,
        CLI_TRACES,
        .arg = cli_arg_case_logs,
        .ctx = &logs,
    };
    int np = cli_parse(&cmd, argc, argv), rc = 1;
    if (np < 0) {
        rc = cli_parse_exit(np);
        goto done;
    }
    o.logs = (const char **)logs.v;
    o.nlogs = logs.n;
    teller_store *st = cli_load(&lo, argv + 1, np);
    if (!st)
        goto done;
    teller_perturb_result res;
    teller_error err;
    teller_error_clear(&err);
    teller_status s = teller_perturb(st, &o, out, &res, &err);
    for (size_t k = 0; k < res.nnotes; k++) {
        fputs("teller perturb: note: ", stderr);
        cli_put_text(stderr, res.notes[k]);
        fputc('\n', stderr);
    }
    if (s != TELLER_OK) {
        fprintf(stderr, "teller: %s:%llu: %s\n", err.file, (unsigned long long)err.offset, err.msg);
        rc = 1;
    } else {
        if (!lo.quiet) {
            printf("%s: %u steps, %u with a fault, %u abnormal (%u inherited a delay)", out, res.steps, res.injected,
                   res.abnormal, res.carried);
            for (int f = 1; f < TELLER_FAULT_COUNT; f++)
                if (res.by_fault[f])
                    printf(", %s %u", teller_fault_name((teller_fault)f), res.by_fault[f]);
            printf("\n");
        }
        rc = 0;
    }
    teller_store_free(st);
done:
    cli_strs_free(&logs);
    return rc;
}
