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
#include <stdio.h>
#include "teller/error.h"
#include "teller/fault.h"
#include "teller/predict.h"
#include "teller/store.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * A candidate root cause: one finding of one detector in one step (a rank,
 * an operator, the fault kind the detector names), with the numbers behind
 * it and one fixed feature vector whose meaning is the same whatever the
 * detector (a learned ranker reads it; the list is in its order below).
 * Ratios are taken as log2 so that 2x and 0.5x are equally far from 1x;
 * shares are clamped to [0, 1].
 */
enum {
    TELLER_CF_EXCESS_SHARE = 0, /* excess / the step's duration */
    TELLER_CF_LOG2_SIG,         /* log2 of how unusual (the detector's ratio to baseline, >= 1), at most 16 */
    TELLER_CF_LOG2_ACTUAL,      /* log2((actual + 1 us) / (usual + 1 us)), clamped to [-16, 16] */
    TELLER_CF_LOG10_EXCESS_US,  /* log10(1 + excess in us) */
    TELLER_CF_SCORE,            /* the numeric stage's score, 0..1 */
    TELLER_CF_ORDER,            /* position in the step's ranking / the step's candidates (0 = first) */
    TELLER_CF_RANK,             /* rank / ranks loaded (0 when the rank is not loaded) */
    TELLER_CF_NODE,             /* node / nodes loaded */
    TELLER_CF_CROSS_NODE,       /* 1 when the finding has a peer rank on another node */
    TELLER_CF_LATE_SHARE,       /* share of the step's collectives at which the rank arrived last */
    TELLER_CF_WAIT_SHARE,       /* its peers' wait for it at those collectives / the step's duration */
    TELLER_CF_HAS_LOG,          /* 1 when log lines were aligned to the step */
    TELLER_CF_STEP_LOG2_REL,    /* log2(step duration / the run's median step duration), clamped to [-16, 16] */
    TELLER_CF_LOG2_FED,         /* log2(1 + launches fed by slowed calls / allocation calls / collective members) */
    TELLER_CF_NOT_LOADED,       /* 1 when the rank's trace is not loaded (a hang's missing rank) */
    TELLER_CAND_FEATURES
};

/* Names of the features ("excess_share", ...), static storage; NULL out of range. */
const char *teller_cand_feature_name(int f);

/* At most this many candidates are kept per step, the best first. */
#define TELLER_DIAG_MAX_CANDS 16

typedef struct teller_diag_cand {
    teller_fault det;       /* the kind the detector names */
    int32_t      rank;      /* -1: a rank whose trace is not loaded */
    int32_t      node;      /* -1 when unknown */
    uint32_t     name;      /* interned operator name: valid as long as the store */
    uint8_t      layer;     /* teller_layer */
    uint32_t     event;     /* an event of the candidate, TELLER_NONE if none */
    double       excess_ns; /* what the finding explains */
    double       actual_ns, usual_ns; /* the operator's time in the step and its usual time */
    double       score;     /* the numeric stage's score */
    float        feat[TELLER_CAND_FEATURES];
} teller_diag_cand;

/* One step's diagnosis. pred carries the benchmark fields, evidence included.
 * With a model, its root comes first (model.h teller_model_root), the rest
 * in the numeric stage's order, and pred.score is
 * its probability that the step is abnormal. */
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
    uint32_t         first_cand;    /* its candidates: teller_diagnosis.cands[first_cand ..], best first */
    uint32_t         ncands;        /* one per (rank, operator), at most TELLER_DIAG_MAX_CANDS */
    uint32_t         peer_colls;    /* its collectives with two or more members: 0 when its ranks had no
                                     * peers to keep waiting (a single rank), so late and wait shares are 0 */
} teller_diag_step;

/* A set of service logs to use as evidence: file paths; each file's node
 * comes from "node<N>" in its name (teller_log_node_from_path), else 0. */
struct teller_model;

typedef struct teller_diag_opts {
    const char *const *logs;
    size_t             nlogs;
    int32_t            log_tz_offset_s; /* the logs' local zone, seconds east of UTC (0: UTC) */
    double             threshold; /* abnormality score above which a step is flagged; 0: default */
    /* the root-cause model (model.h) that judges each step and picks its
     * root among the candidates; NULL: the numeric stage alone */
    const struct teller_model *model;
    /* with a model: it decides alone (a step is abnormal at P >= 0.5, its
     * root the model's choice however unsure; no numeric alarm stands),
     * for measuring a model or an ablation, not for use */
    int model_alone;
    /* threads for the per-rank work of the detectors; <= 0: the cores this
     * process may use. The diagnosis does not depend on it, byte for byte. */
    int jobs;
} teller_diag_opts;

typedef struct teller_diagnosis {
    teller_diag_step *steps; /* one per step number, in order */
    size_t            n;
    teller_diag_cand *cands; /* every step's candidates, step after step */
    size_t            ncands;
    int64_t           usual_step_ns; /* the run's median step duration */
    int               model;   /* 1 when a model judged the steps (scores are its probabilities) */
    char            **notes; /* what the analysis could not see or trust, for the user */
    size_t            nnotes;
    struct teller_requests *requests; /* with logs: each request's lifecycle and breakdown against
                                       * these steps (requests.h), read with the logs; else NULL;
                                       * teller_diagnosis_free frees it */
} teller_diagnosis;

teller_diag_opts teller_diag_defaults(void);

/* Diagnoses every step of a tree-built store. *out is owned by the caller
 * (teller_diagnosis_free). */
teller_status teller_diagnose(teller_store *st, const teller_diag_opts *opts, teller_diagnosis **out,
                              teller_error *err);
void teller_diagnosis_free(teller_diagnosis *d);

/* Writes every step's prediction (d->steps[k].pred) as teller_pred_write
 * does: the predictions JSON that `teller eval` scores. TELLER_ERR_NOMEM
 * (nothing written) when out of memory. */
teller_status teller_diag_write_preds(FILE *f, const teller_diagnosis *d);

/* Writes every step's candidates as JSON: {"version": 1, "features":
 * [names], "steps": [{"step": K, "candidates": [{"rank", "node", "op",
 * "layer", "fault", "score", "excess_ns", "features": [...]}]}]}. The store
 * is the one diagnosed (operator names). */
void teller_diag_write_candidates(FILE *f, const teller_store *st, const teller_diagnosis *d);

#ifdef __cplusplus
}
#endif
#endif
