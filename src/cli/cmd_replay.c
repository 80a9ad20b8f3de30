/*
 * cmd_replay.c - `teller replay CASE... -o DIR [options]`: writes a loaded
 * run into DIR as `teller run` would while it goes on, chunk by chunk, at
 * real time or faster (src/watch/replay.h, docs/REPLAY.md). The feed of
 * `teller watch`'s tests and benches.
 */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "../watch/replay.h"

static volatile sig_atomic_t stop_sig;

static void on_stop(int sig) { stop_sig = sig; }

int cmd_replay(int argc, char **argv)
{
    cli_load_opts lo = cli_load_defaults();
    replay_opts o = replay_defaults();
    cli_strs logs = {0};
    int flush_ms = 1000, keep = 0;
    uint64_t start = 0;
    const cli_opt opts[] = {
        CLI_STR('o', NULL, &o.out, "DIR", CLI_REQUIRED, "the run directory to write (traces/, logs/)"),
        CLI_INT(0, "flush-ms", &flush_ms, "MS", 1, 3600000,
                "trace time per chunk, as the collector's TELLER_FLUSH_MS (default 1000)"),
        CLI_NUM(0, "speed", &o.speed, "X", 0, 1e9, 0,
                "trace time per wall time: 1 real time (default), 10 ten times\nfaster, 0 as fast as it writes"),
        CLI_U64(0, "start-ns", &start, "T", 1, 4611686018427387904.0 / 2,
                "the run's first event at epoch ns T (default: now)"),
        CLI_U64(0, "loop", &o.loop, "N", 1, 1e12,
                "the run N times back to back (ProfilerStep#N numbers keep rising)"),
        CLI_U64(0, "rotate", &o.rotate, "STEPS", 1, 1e12,
                "every STEPS step markers a rank's file ends and a new one (a new\npid) begins, as a restarted "
                "collector writes"),
        CLI_INT(0, "keep", &keep, "K", 1, 1000000, "with --rotate: only the newest K files of each rank stay"),
        CLI_LOAD_OPTS(&lo),
        CLI_END,
    };
    const cli_cmd cmd = {
        .name = "replay",
        .usage = "-o DIR [options] TRACE_OR_CASE...",
        .about = "Writes a recorded or simulated run into DIR as `teller run` writes one while it goes on:\n"
                 "DIR/traces/HOST-PID.tlt per rank, flushed chunk by chunk, and the case's logs in\n"
                 "DIR/logs in the capture form, at real time or faster.",
        .more = "Only what the collector records is written: GPU work, syncs, runtime and driver calls,\n"
                "annotations and communication ops (docs/REPLAY.md). SIGINT or SIGTERM ends every file\n"
                "with its END chunk.",
        .opts = opts,
        CLI_TRACES,
        .arg = cli_arg_case_logs,
        .ctx = &logs,
    };
    int r = cli_parse(&cmd, argc, argv);
    if (r < 0) {
        cli_strs_free(&logs);
        return cli_parse_exit(r);
    }
    if (keep && !o.rotate) {
        cli_error("replay", "--keep wants --rotate");
        cli_strs_free(&logs);
        return 2;
    }
    o.keep = (uint64_t)keep;
    o.flush_ns = (int64_t)flush_ms * 1000000;
    if (start)
        o.start_ns = (int64_t)start;
    teller_store *st = cli_load(&lo, argv + 1, r);
    if (!st) {
        cli_strs_free(&logs);
        return 1;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop; /* no SA_RESTART: a sleep ends at once */
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    o.stop = &stop_sig;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    replay_stats S;
    teller_error err;
    teller_error_clear(&err);
    teller_status s = replay_run(st, (const char *const *)logs.v, logs.n, &o, &S, &err);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    teller_store_free(st);
    cli_strs_free(&logs);
    if (s != TELLER_OK) {
        fprintf(stderr, "teller: %s: %s\n", err.file, err.msg);
        return 1;
    }
    double wall = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    fprintf(stderr,
            "teller replay: %s%llu files, %llu records, %llu step markers, %llu log lines, %.1f MB in %.2f s "
            "(%.1f MB/s, %.0f markers/s); %llu records cut at rotations\n",
            S.stopped ? "stopped by a signal: " : "", (unsigned long long)S.files, (unsigned long long)S.records,
            (unsigned long long)S.steps, (unsigned long long)S.log_lines, (double)S.bytes / 1e6, wall,
            wall > 0 ? (double)S.bytes / 1e6 / wall : 0, wall > 0 ? (double)S.steps / wall : 0,
            (unsigned long long)S.cut);
    return 0;
}
