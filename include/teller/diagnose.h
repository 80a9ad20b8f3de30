/*
 * diagnose.h - numeric candidate localization over a built store (and the
 * aligned service logs): which steps are abnormal, which operator on which
 * rank, what kind of fault, the evidence, and a grounded sentence.
 *
 * The result extends the benchmark predictions (predict.h) with what a
 * report needs: the numbers behind every sentence, the event that is the
 * culprit (for the call-chain path and the timeline) and log evidence.
 */
#ifndef TELLER_DIAGNOSE_H
#define TELLER_DIAGNOSE_H

#include <stddef.h>
#include <stdint.h>
#include "teller/error.h"
#include "teller/predict.h"
#include "teller/store.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One step's diagnosis. pred carries the benchmark fields, evidence included. */
typedef struct teller_diag_step {
    teller_step_pred pred;
    char             fault[32];     /* finer kind (BENCHMARK.md names), "" when normal */
    int64_t          start_ns;      /* earliest rank's start, node 0's clock */
    int64_t          dur_ns;        /* longest rank's window */
    int64_t          expected_ns;   /* what the run's baseline expects for this step */
    int64_t          excess_ns;     /* dur - expected (>= 0) */
    int32_t          root_rank;     /* rank of the top candidate, -1 if none */
    int32_t          root_node;
    uint32_t         culprit_event; /* an event of the top candidate, TELLER_NONE if none */
    int64_t          culprit_ns;    /* the top candidate's time in this step */
    int64_t          culprit_base_ns; /* its usual time */
} teller_diag_step;

/* A set of service logs to use as evidence: file paths; each file's node
 * comes from "node<N>" in its name (teller_log_node_from_path), else 0. */
typedef struct teller_diag_opts {
    const char *const *logs;
    size_t             nlogs;
    double             threshold; /* abnormality score above which a step is flagged; 0: default */
} teller_diag_opts;

typedef struct teller_diagnosis {
    teller_diag_step *steps; /* one per step number, in order */
    size_t            n;
    char            **notes; /* what the analysis could not see or trust, for the user */
    size_t            nnotes;
} teller_diagnosis;

teller_diag_opts teller_diag_defaults(void);

/* Diagnoses every step of a tree-built store. *out is owned by the caller
 * (teller_diagnosis_free). */
teller_status teller_diagnose(teller_store *st, const teller_diag_opts *opts, teller_diagnosis **out,
                              teller_error *err);
void teller_diagnosis_free(teller_diagnosis *d);

#ifdef __cplusplus
}
#endif
#endif
