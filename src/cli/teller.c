/*
 * teller.c - the `teller` program: dispatches to one subcommand per file.
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: teller COMMAND [options] ...\n"
               "commands:\n"
               "  stats   what a trace holds: events, links, steps, collectives, layers\n"
               "  tree    the call-chain trees of one step on one rank\n"
               "  steps   per step and rank: duration, kernel, comm and copy time, GPU idle\n"
               "  logs    service logs: records, templates, alignment to steps; Loghub accuracy\n"
               "  simulate  write a simulated multi-node case with injected faults and truth\n"
               "  perturb   inject faults into a real, healthy run: a case with truth\n"
               "  diagnose  which steps were abnormal, where and why: summary, JSON, HTML, Perfetto\n"
               "  eval      score predictions against truth (BENCHMARK.md metrics)\n"
               "  baseline  reference predictions: zscore or gmm (the paper's candidate stage)\n"
               "  run     run a program under the collector: traces, logs, manifest\n"
               "  requests  per request: lifecycle, steps, latency breakdown, call-chain tree\n"
               "  tpe     Trace Pair Encoding: train a vocabulary, encode steps, compression stats\n"
               "  slice   the causal-context slice around an operator or a rank's step\n"
               "  train   train the root-cause model on cases with a truth.json\n"
               "Traces: Kineto JSON (.json, .json.gz), Nsight Systems SQLite exports, .tlt;\n"
               "a directory loads every trace file in it. 'teller COMMAND --help' for options;\n"
               "'teller --version' for the version.\n");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const char *c = argv[1];
    if (!strcmp(c, "stats"))
        return cmd_stats(argc - 1, argv + 1);
    if (!strcmp(c, "tree"))
        return cmd_tree(argc - 1, argv + 1);
    if (!strcmp(c, "steps"))
        return cmd_steps(argc - 1, argv + 1);
    if (!strcmp(c, "logs"))
        return cmd_logs(argc - 1, argv + 1);
    if (!strcmp(c, "simulate"))
        return cmd_simulate(argc - 1, argv + 1);
    if (!strcmp(c, "perturb"))
        return cmd_perturb(argc - 1, argv + 1);
    if (!strcmp(c, "eval"))
        return cmd_eval(argc - 1, argv + 1);
    if (!strcmp(c, "baseline"))
        return cmd_baseline(argc - 1, argv + 1);
    if (!strcmp(c, "diagnose"))
        return cmd_diagnose(argc - 1, argv + 1);
    if (!strcmp(c, "run"))
        return cmd_run(argc - 1, argv + 1);
    if (!strcmp(c, "tpe"))
        return cmd_tpe(argc - 1, argv + 1);
    if (!strcmp(c, "slice"))
        return cmd_slice(argc - 1, argv + 1);
    if (!strcmp(c, "requests"))
        return cmd_requests(argc - 1, argv + 1);
    if (!strcmp(c, "train"))
        return cmd_train(argc - 1, argv + 1);
    if (!strcmp(c, "--version") || !strcmp(c, "version")) {
        printf("teller %s\n", TELLER_VERSION);
        return 0;
    }
    if (!strcmp(c, "-h") || !strcmp(c, "--help") || !strcmp(c, "help")) {
        usage(stdout);
        return 0;
    }
    fprintf(stderr, "teller: unknown command '%s'\n", c);
    usage(stderr);
    return 2;
}
