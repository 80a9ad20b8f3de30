/*
 * perturb.h - fault injection into a real, healthy run (`teller perturb`).
 *
 * Takes a tree-built store of a run in any format teller reads, picks
 * steps at a rate, injects a fault kind of fault.h into each by rewriting
 * times as the fault would (stretched kernels, calls, copies; host gaps;
 * everything after them shifted on its thread and stream; peers waiting at
 * the next collective), and writes a case in ../shared/BENCHMARK.md's
 * shape: rank<R>.trace.json.gz per rank, logs/node<N>.log, truth.json.
 * Nothing is added to the trace (an nccl_hang leaves out what never
 * happened: the run ends at its step); a kind the run cannot carry is
 * skipped with a note. Same store, options and seed, same bytes.
 * docs/PERTURB.md says what each kind does and what it cannot imitate.
 */
#ifndef TELLER_PERTURB_H
#define TELLER_PERTURB_H

#include <stddef.h>
#include <stdint.h>

#include "teller/error.h"
#include "teller/fault.h"
#include "teller/store.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct teller_perturb_opts {
    uint32_t           faults;   /* bit (1 << teller_fault) per allowed kind; 0: every kind */
    double             rate;     /* share of steps that get a fault, 0..1 */
    double             severity; /* scales every magnitude; 1.0 is the default */
    uint64_t           seed;
    const char *const *logs;     /* service logs of the run, copied to logs/node<N>.log (N from
                                  * "node<N>" in the name, else their order) with the lines faults
                                  * write added in time order; may be NULL */
    size_t             nlogs;
    int                hang_teardown; /* nccl_hang as PyTorch's default error handling leaves a collector's
                                       * trace (TORCH_NCCL_ASYNC_ERROR_HANDLING=3): what was still running
                                       * when the watchdog took the process down (the waiting collective,
                                       * its synchronize, the step's annotation) is not written, so only
                                       * the watchdog's lines show the hang; 0 (default): as =2 leaves it,
                                       * the waiting kernels aborted, ended and written */
} teller_perturb_opts;

teller_perturb_opts teller_perturb_defaults(void);

#define TELLER_PERTURB_MAX_NOTES 32

/* What a run of teller_perturb did. */
typedef struct teller_perturb_result {
    uint32_t steps;                          /* distinct steps of the run */
    uint32_t injected;                       /* steps that got a fault */
    uint32_t abnormal;                       /* steps labelled abnormal in the truth: steps that grew
                                              * by a material time (fault.h), by their own fault or
                                              * by an earlier one's */
    uint32_t carried;                        /* of those, steps named for an earlier faulty step,
                                              * whose delay grew them more than any fault of their
                                              * own did */
    uint32_t by_fault[TELLER_FAULT_COUNT];   /* abnormal steps per injected kind */
    size_t   nnotes;                         /* notes kept (at most TELLER_PERTURB_MAX_NOTES) */
    char     notes[TELLER_PERTURB_MAX_NOTES][256];
} teller_perturb_result;

/* Perturbs the tree-built store st and writes the case into dir (created
 * if missing). A run without step annotations, a rate outside 0..1 or a
 * fault set the run cannot carry at all is TELLER_ERR_ARG. res may be
 * NULL. The store is not changed. */
teller_status teller_perturb(const teller_store *st, const teller_perturb_opts *o, const char *dir,
                             teller_perturb_result *res, teller_error *err);

/* Writes every source of a tree-built store as DIR/rank<R>.trace.json.gz,
 * Kineto JSON that teller's reader reads back to the same events. start
 * and dur (ev->n entries, node 0's clock) replace the store's times when
 * not NULL; times are written on each node's own clock. keep (ev->n
 * entries, NULL: all) leaves out the events whose entry is 0. */
teller_status teller_kineto_write(const teller_store *st, const int64_t *start, const int64_t *dur,
                                  const uint8_t *keep, const char *dir, teller_error *err);

/* What teller's own reading of a trace relies on, counted where it fails. */
typedef struct teller_consistency {
    uint64_t nesting;       /* CPU events not inside their parent */
    uint64_t launch;        /* GPU ops that start before the call that launched them */
    uint64_t stream_order;  /* GPU ops that start before the previous op on their stream ends */
    uint64_t collective;    /* collective members that end before the last member arrives */
} teller_consistency;

/* Checks the store's times, or start[]/dur[] in their place when not NULL. */
void teller_consistency_check(const teller_store *st, const int64_t *start, const int64_t *dur,
                              teller_consistency *out);

#ifdef __cplusplus
}
#endif
#endif
