/*
 * teller.c - the `teller` program: dispatches to one subcommand per file,
 * by the table below (which is also the command list of --help).
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"

static const struct command {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *about;
} COMMANDS[] = {
    {"stats", cmd_stats, "what a trace holds: events, links, steps, collectives, layers"},
    {"tree", cmd_tree, "the call-chain trees of one step on one rank"},
    {"steps", cmd_steps, "per step and rank: duration, kernel, comm and copy time, GPU idle"},
    {"logs", cmd_logs, "service logs: records, templates, alignment to steps; Loghub accuracy"},
    {"simulate", cmd_simulate, "write a simulated multi-node case with injected faults and truth"},
    {"perturb", cmd_perturb, "inject faults into a real, healthy run: a case with truth"},
    {"diagnose", cmd_diagnose, "which steps were abnormal, where and why: summary, JSON, HTML, Perfetto"},
    {"diff", cmd_diff, "what changed between a reference run and a run: steps, operators, ranks"},
    {"eval", cmd_eval, "score predictions against truth (BENCHMARK.md metrics)"},
    {"baseline", cmd_baseline, "reference predictions: zscore or gmm (the paper's candidate stage)"},
    {"watch", cmd_watch, "diagnose a run while the collector writes it: each step as every rank ends it"},
    {"run", cmd_run, "run a program under the collector: traces, logs, manifest"},
    {"replay", cmd_replay, "write a recorded or simulated run as `teller run` would, at real time or faster"},
    {"requests", cmd_requests, "per request: lifecycle, steps, latency breakdown, call-chain tree"},
    {"tpe", cmd_tpe, "Trace Pair Encoding: train a vocabulary, encode steps, compression stats"},
    {"slice", cmd_slice, "the causal-context slice around an operator or a rank's step"},
    {"train", cmd_train, "train the root-cause model on cases with a truth.json"},
    {"calibrate", cmd_calibrate, "fit the root-cause model to your workload from healthy runs"},
};
enum { NCOMMANDS = sizeof COMMANDS / sizeof *COMMANDS };

static void usage(FILE *f)
{
    fprintf(f, "Usage: teller COMMAND [options] ...\n"
               "Diagnoses slow or hung steps of LLM inference services from profiler traces and logs.\n"
               "\nCommands:\n");
    for (int i = 0; i < NCOMMANDS; i++)
        fprintf(f, "  %-10s%s\n", COMMANDS[i].name, COMMANDS[i].about);
    fprintf(f, "\nTraces: Kineto JSON (.json, .json.gz), Nsight Systems SQLite exports, .tlt;\n"
               "a directory loads every trace file in it. 'teller COMMAND --help' for its options;\n"
               "'teller --version' for the version. Exit status: 0 done, 1 an input error (a file\n"
               "unreadable, malformed or not writable), 2 a usage error.\n");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const char *c = argv[1];
    for (int i = 0; i < NCOMMANDS; i++)
        if (!strcmp(c, COMMANDS[i].name))
            return COMMANDS[i].run(argc - 1, argv + 1);
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
