/*
 * detector.h - a row of the detector table. Every part of the diagnosis
 * that reads the trace to build an index or to find something is one row,
 * defined in its own file (`const diag_detector diag_row_NAME = {...}`) and
 * listed once in detectors.def; diagnose.c runs the table and knows no row
 * by name. A row says in which round it runs, whether once for the run or
 * once per source, what of the state it reads and writes (the order of
 * the rounds makes it safe, and a test checks the table against it), and
 * how it merges its own findings of a step.
 *
 * Rounds: 1 to 3 run at once on the pool (--jobs), each row's tasks
 * writing only their own findings list and the state their row writes;
 * then every row's findings join the steps in table order (a per-source
 * row's source after source), every row's merge runs on every step in
 * table order, and every row's merged hook once. Round 4 rows run after the merges, once, in table order;
 * round 5 rows run for each step in step order while the steps are judged,
 * after the step before is judged (their i is the step).
 * Not a public header.
 */
#ifndef TELLER_DIAG_DETECTOR_H
#define TELLER_DIAG_DETECTOR_H

#include <stddef.h>
#include <stdint.h>

#include "cand.h"
#include "context.h"

typedef enum diag_scope { DIAG_PER_RUN, DIAG_PER_SOURCE, DIAG_PER_STEP } diag_scope;

/* The parts of diag_state a row reads or writes. */
enum {
    DIAG_S_GPU_BUSY     = 1u << 0,  /* gpu, ends */
    DIAG_S_WAITS        = 1u << 1,  /* waits */
    DIAG_S_WAIT_LEFT    = 1u << 2,  /* wait_left */
    DIAG_S_HOST_BUSY    = 1u << 3,  /* step_tid, host */
    DIAG_S_KERNEL_TALLY = 1u << 4,  /* kernel_tally */
    DIAG_S_EXPOSURE     = 1u << 5,  /* expo */
    DIAG_S_COVERAGE     = 1u << 6,  /* gpu_known */
    DIAG_S_LATE         = 1u << 7,  /* late_last, late_insts, late_wait */
    DIAG_S_STEPS        = 1u << 8,  /* steps: the candidates (rewritten by merges; a row's findings join them
                                     * through its list, which is no write) */
    DIAG_S_OUT          = 1u << 9,  /* out: evidence, notes, step durations */
    DIAG_S_REQUESTS     = 1u << 10, /* req */
    DIAG_S_CARRY        = 1u << 11, /* prev, prev_late, prev_late_host, carry_in (row carried, step after step) */
    DIAG_S_REFERENCE    = 1u << 12, /* ref */
};

typedef struct diag_detector {
    const char *name;
    diag_scope  scope;
    int         round;   /* 1 to 5 (above) */
    uint32_t    reads;   /* DIAG_S_* of the state it reads */
    uint32_t    writes;  /* DIAG_S_* of the state it writes (its findings list aside) */
    /* Before the row's round, on the calling thread (which may hand
     * per-source parts of it to the pool, as diag_medians_build does):
     * what its tasks share (an array of one slot a source). 0, or -1 out
     * of memory. NULL: none. */
    int (*prepare)(const dctx *D, diag_state *S);
    /* Runs task i (0 for a run-wide row; the source; the step) into out.
     * 0; -1 out of memory; 1 when it failed otherwise, S->status and
     * S->err saying how. NULL: a row that only merges. */
    int (*run)(const dctx *D, diag_state *S, size_t i, finds *out);
    /* Merges the row's findings of step k that are one finding. 0, or -1
     * out of memory. NULL: none. */
    int (*merge)(const dctx *D, diag_state *S, uint32_t k);
    /* Once every step is merged: what the row says of the run (a note).
     * 0, or -1 out of memory. NULL: nothing. */
    int (*merged)(const dctx *D, diag_state *S);
    /* Round 5: once step k is judged, its top finding top (abnormal or
     * not) and whether it flagged the step. NULL: nothing. */
    void (*judged)(const dctx *D, diag_state *S, uint32_t k, const cand *top, int abnormal);
    /* Frees what the row's run left in the state. NULL: nothing. */
    void (*release)(const dctx *D, diag_state *S);
} diag_detector;

/* The table, in the order findings join the steps and merges run. */
#define DIAG_ROW(name) extern const diag_detector diag_row_##name;
#include "detectors.def"
#undef DIAG_ROW
extern const diag_detector *const diag_table[];
extern const size_t diag_table_size;

#endif
