/*
 * watch.h - `teller watch`: the diagnosis of a run while it is written.
 *
 * A watcher follows directories the collector writes (DIR/traces/ *.tlt as
 * they are flushed, DIR/logs/ *.log as lines arrive; a bare directory of
 * .tlt files too), keeps each rank's records of the last steps, and
 * diagnoses each step once every rank has finished it: through the same
 * load, tree and diagnosis as `teller diagnose`, on a window of the last
 * `window` steps before it (the yardsticks' steps) and the steps finished
 * since. Records of steps that left the window are released, so memory
 * does not grow with the run. A step stays unfinished on a rank that
 * stops: after hang_after of no step finished on it while a peer went on,
 * or on any rank, the watcher says where each rank stopped.
 *
 * Nothing here prints: what it finds and what it skipped reach the
 * caller's callbacks. docs/WATCH.md says how it works and what it costs.
 */
#ifndef TELLER_WATCH_H
#define TELLER_WATCH_H

#include <stddef.h>
#include <stdint.h>

#include "teller/diagnose.h"
#include "teller/error.h"
#include "teller/load.h"

/* What the watcher skipped (watch callbacks, the `what` label of the
 * metric teller_watch_skipped_total; bytes are counted apart, in
 * teller_watch_skipped_bytes_total). */
typedef enum teller_watch_skip {
    TELLER_WATCH_SKIP_CHUNK = 0,     /* a chunk skipped or lost: a bad checksum, malformed, missing, or
                                      * cut short where its file ended: one a chunk */
    TELLER_WATCH_SKIP_FILE,          /* a file not followed (no .tlt, unreadable): one a file */
    TELLER_WATCH_SKIP_LOG,           /* a log cut shorter under the watcher, read again: one a time */
    TELLER_WATCH_SKIP_GARBAGE_BYTES, /* bytes passed over to find the next chunk: one a byte */
    TELLER_WATCH_SKIP_COUNT
} teller_watch_skip;

/* Where a rank stopped, when the watcher says it hangs. */
typedef struct teller_watch_stop {
    int32_t  rank;      /* -1 when its files do not say */
    char     host[64];
    uint64_t done;      /* steps it finished: it is in step `done` */
    int64_t  last_ns;   /* the end of its latest record (trace clock), 0 when none */
    char     last_op[160]; /* the host call or range that ended last, "" when none */
    double   silent_s;  /* seconds since it last finished a step (or since the watch began) */
    int      stuck;     /* 1: it is one of the ranks that stopped */
} teller_watch_stop;

typedef struct teller_watch_hang {
    uint64_t                 step;  /* the step the stuck ranks did not finish */
    int                      all;   /* 1: no rank finishes steps any more (a wedged engine) */
    const teller_watch_stop *ranks; /* every rank, stuck or not */
    size_t                   nranks;
    char                     text[512]; /* the sentence */
} teller_watch_hang;

typedef struct teller_watch_cb {
    /* one diagnosed step: d->steps[k] of the window diagnosis d over store
     * st, whose step numbers are the run's (d->steps[k].pred.step);
     * flushed_wall_ns is when the watcher read the chunk that finished it
     * (CLOCK_REALTIME), for latency */
    void (*step)(void *ctx, const teller_store *st, const teller_diagnosis *d, size_t k, int64_t flushed_wall_ns);
    /* a hang found, once per stall; the ranks array lives for the call */
    void (*hang)(void *ctx, const teller_watch_hang *h);
    /* what was skipped or could not be read (n of what), the file, where,
     * the sentence */
    void (*skip)(void *ctx, teller_watch_skip what, uint64_t n, const char *file, uint64_t at, const char *msg);
    void *ctx;
} teller_watch_cb;

typedef struct teller_watch_opts {
    const char *const *dirs;  /* what to follow: `teller run` output or .tlt directories */
    size_t             ndirs;
    uint32_t           window;    /* steps before the ones diagnosed that make the yardsticks (64) */
    uint32_t           batch;     /* the most steps diagnosed in one window (256) */
    int64_t            hang_ns;   /* a rank that finishes no step for this long while another did,
                                   * or every rank, is said to hang (10 s) */
    teller_load_opts   load;      /* tree options (--gpus-per-node, --step-pattern), jobs, force */
    teller_diag_opts   diag;      /* its logs are the watcher's own */
    teller_watch_cb    cb;
} teller_watch_opts;

teller_watch_opts teller_watch_defaults(void);

typedef struct teller_watch teller_watch;

/* Starts watching; nothing is read yet. *out is the caller's
 * (teller_watch_free). Errors: a directory that does not exist; out of
 * memory. */
teller_status teller_watch_open(const teller_watch_opts *opts, teller_watch **out, teller_error *err);

/* Reads what was written since the last call (a long backlog a few pieces
 * a call) and diagnoses the steps that every rank finished; now_wall_ns is
 * CLOCK_REALTIME. With final, what has
 * been read is all there will be: every step is diagnosed, the last as the
 * trace leaves it. Errors only for what stops the watch (out of memory, a
 * window that cannot be diagnosed); damage in the files is skipped. */
teller_status teller_watch_poll(teller_watch *w, int64_t now_wall_ns, int final, teller_error *err);

/* 1 when every rank's files have ended cleanly (an END chunk): a poll
 * with final then diagnoses the rest; 0 while no rank was seen. */
int teller_watch_ended(const teller_watch *w);

/* The last window diagnosed (for a report on demand): its store and
 * diagnosis, NULL before the first; valid until the next poll. */
const teller_store *teller_watch_last_store(const teller_watch *w);
const teller_diagnosis *teller_watch_last_diagnosis(const teller_watch *w);

/* Counts for the summary and tests. */
typedef struct teller_watch_stats {
    uint64_t steps;        /* diagnosed */
    uint64_t windows;      /* diagnoses run */
    uint64_t ranks, files; /* seen */
    uint64_t records_held; /* records held now, every rank */
    uint64_t chunks, skipped;
    uint64_t log_lines_held;
    uint32_t silent_ranks; /* ranks not ended whose files brought nothing for hang_ns */
} teller_watch_stats;
void teller_watch_stats_get(const teller_watch *w, teller_watch_stats *out);

void teller_watch_free(teller_watch *w);

#endif
