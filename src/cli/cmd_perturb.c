/*
 * cmd_perturb.c - `teller perturb -o CASE_DIR [options] TRACE_OR_CASE...`:
 * faults injected into a real, healthy run, written as a benchmark case.
 * A case directory brings its logs/node*.log along, as for diagnose.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "teller/perturb.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: teller perturb -o CASE_DIR [options] TRACE_OR_CASE...\n"
               "  --fault KIND[,KIND...]    fault kinds to inject (all: every kind, the default)\n"
               "  --rate P                  share of steps that get a fault (default 0.3)\n"
               "  --severity S              scales fault magnitudes (default 1, at most 100)\n"
               "  --seed N                  same input and seed, same bytes (default 1)\n"
               "  --log LOG                 a service log of the run, copied to logs/node<N>.log\n"
               "                            (N from node<N> in its name, else the order given); repeatable;\n"
               "                            a case directory brings its logs/node*.log\n"
               "  --hang-teardown           nccl_hang as PyTorch's default (TORCH_NCCL_ASYNC_ERROR_HANDLING=3)\n"
               "                            leaves a collector's trace: what still ran at the teardown is not\n"
               "                            written, only the watchdog's lines show it (default: as =2, the\n"
               "                            waiting collectives aborted and written)\n" CLI_COMMON_HELP
               "Writes rank<R>.trace.json.gz per rank, logs/, truth.json (../shared/BENCHMARK.md).\n"
               "Kinds a run cannot carry are skipped with a note; docs/PERTURB.md has the physics.\n"
               "fault kinds: slow_link nccl_hang pp_send_delay gpu_throttle kernel_regression\n"
               "  launch_latency sync_stall malloc_storm pcie_degradation kv_swap oom\n"
               "  cpu_contention preemption\n");
}

static int str_cmp(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static int num(const char *opt, const char *v, double *out)
{
    char *end;
    *out = strtod(v, &end);
    if (!*v || *end) {
        fprintf(stderr, "teller: perturb: %s wants a number, not '%s'\n", opt, v);
        return -1;
    }
    return 0;
}

int cmd_perturb(int argc, char **argv)
{
    cli_load_opts lo = cli_load_defaults();
    teller_perturb_opts o = teller_perturb_defaults();
    const char *out = NULL;
    char **paths = calloc((size_t)argc, sizeof *paths);
    char **logs = NULL;
    int npaths = 0, rc = 2;
    size_t nlogs = 0;
    if (!paths) {
        fprintf(stderr, "teller: out of memory\n");
        goto done;
    }
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            rc = 0;
            goto done;
        }
        int c = cli_common_opt(&lo, argc, argv, &i);
        if (c < 0)
            goto done;
        if (c > 0)
            continue;
        if (a[0] != '-') {
            paths[npaths++] = argv[i];
            struct stat sb;
            if (stat(a, &sb) == 0 && S_ISDIR(sb.st_mode)) {
                size_t had = nlogs;
                cli_case_logs(a, &logs, &nlogs);
                if (nlogs > had) /* not the directory's order */
                    qsort(logs + had, nlogs - had, sizeof *logs, str_cmp);
            }
            continue;
        }
        if (!strcmp(a, "--hang-teardown")) {
            o.hang_teardown = 1;
            continue;
        }
        if (i + 1 >= argc) {
            fprintf(stderr, "teller: perturb: %s needs a value (or is unknown)\n", a);
            goto done;
        }
        const char *v = argv[++i];
        double d;
        if (!strcmp(a, "-o")) {
            out = v;
        } else if (!strcmp(a, "--log")) {
            if (cli_add_str(&logs, &nlogs, v)) {
                fprintf(stderr, "teller: out of memory\n");
                goto done;
            }
        } else if (!strcmp(a, "--fault")) {
            if (cli_faults("perturb", v, &o.faults))
                goto done;
        } else if (!strcmp(a, "--seed")) {
            char *end;
            o.seed = strtoull(v, &end, 10);
            if (!*v || *end) {
                fprintf(stderr, "teller: perturb: --seed wants a whole number, not '%s'\n", v);
                goto done;
            }
        } else if (!strcmp(a, "--rate") || !strcmp(a, "--severity")) {
            if (num(a, v, &d))
                goto done;
            if (a[2] == 'r')
                o.rate = d;
            else
                o.severity = d;
        } else {
            fprintf(stderr, "teller: perturb: unknown option %s (see --help)\n", a);
            goto done;
        }
    }
    if (!out || !npaths) {
        usage(stderr);
        goto done;
    }
    o.logs = (const char **)logs;
    o.nlogs = nlogs;
    teller_store *st = cli_load(&lo, paths, npaths);
    if (!st) {
        rc = 1;
        goto done;
    }
    teller_perturb_result res;
    teller_error err;
    teller_error_clear(&err);
    teller_status s = teller_perturb(st, &o, out, &res, &err);
    for (size_t k = 0; k < res.nnotes; k++) {
        fputs("teller: perturb: note: ", stderr);
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
    free(paths);
    cli_free_strs(logs, nlogs);
    return rc;
}
