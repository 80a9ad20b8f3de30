/*
 * replay.h - `teller replay`: a loaded run written out again as `teller
 * run` writes one while it goes on (docs/REPLAY.md), so that the watcher,
 * its tests and benches follow a live directory without a GPU.
 *
 * Each rank of a tree-built store becomes OUT/traces/HOST-PID.tlt, made as
 * the collector makes it (src/collect/tlt_writer.h): a header and a NOTE
 * saying who wrote it, then per flush interval of trace time a STRINGS, a
 * RECORDS and a NOTE chunk holding the records that ended in the interval,
 * and an END chunk last. The case's logs become OUT/logs/NAME.log in
 * `teller run`'s capture form ("EPOCHNS line"), each line written in the
 * interval its time falls in. Interval k is written at wall time
 * t0 + k * flush / speed. Every time is moved by one shift, so that the
 * run's first event falls at start_ns.
 *
 * Only the layers the .tlt format carries are written (what src/ingest/
 * tlt.c reads back): kernels, copies, sets, syncs, runtime and driver calls
 * with their correlation ids, host annotations (ENGINE, and any step
 * marker) as NVTX ranges, communication ops of the BACKEND layer as ranges
 * of the NCCL domain. Python frames, other torch ops, instants, GPU-row
 * annotations and OTHER are dropped.
 */
#ifndef TELLER_WATCH_REPLAY_H
#define TELLER_WATCH_REPLAY_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "teller/error.h"
#include "teller/store.h"

typedef struct replay_opts {
    const char *out;      /* the run directory: traces/ and logs/ are made in it */
    int64_t     flush_ns; /* trace time per chunk, > 0 (the collector's TELLER_FLUSH_MS) */
    double      speed;    /* trace time per wall time: 1 real time, 10 ten times faster; 0 no sleeping */
    int64_t     start_ns; /* where the run's first event goes; INT64_MIN: CLOCK_REALTIME when the replay starts */
    uint64_t    loop;     /* copies of the run back to back, >= 1 */
    uint64_t    rotate;   /* > 0: every that many step markers a rank's file ends and a new one
                           * (a new pid) begins; 0: one file per rank */
    uint64_t    keep;     /* with rotate > 0: only the newest keep files of a rank stay; 0: all */
    /* polled between chunks and while sleeping: when it turns non-zero
     * every open file gets its END chunk and replay_run returns TELLER_OK
     * with stats.stopped set; may be NULL */
    const volatile sig_atomic_t *stop;
} replay_opts;

replay_opts replay_defaults(void);

typedef struct replay_stats {
    uint64_t files;      /* .tlt files written (those --keep deleted too) */
    uint64_t records;    /* records written (correlation records included) */
    uint64_t steps;      /* step markers written (every rank's: a step of 2 ranks is 2) */
    uint64_t log_lines;  /* log lines written */
    uint64_t bytes;      /* bytes written, traces and logs */
    uint64_t cut;        /* records dropped at rotations: they began before their rank's file ended */
    uint64_t chunks;     /* flush intervals written */
    int64_t  shift_ns;   /* added to every time of the first copy */
    int64_t  period_ns;  /* between copies: the run's span plus its median gap between steps */
    int      stopped;    /* 1: ended early by opts.stop */
} replay_stats;

/* Replays st (tree-built, as teller_load leaves it) and the log files
 * logs[0..nlogs) into opts->out. Errors name the file: TELLER_ERR_IO (a
 * directory or file that cannot be made or written, a log that cannot be
 * read; a trace file that is there already), TELLER_ERR_LIMIT (correlation
 * ids that would pass 2^32 in one file, times past the readers' bounds),
 * TELLER_ERR_ARG (two logs of one name), TELLER_ERR_NOMEM. Memory does not
 * grow with opts->loop, except by each file's new step-marker names (see
 * docs/REPLAY.md). stats may be NULL. */
teller_status replay_run(const teller_store *st, const char *const *logs, size_t nlogs, const replay_opts *opts,
                         replay_stats *stats, teller_error *err);

#endif
