/*
 * model.h - the learned root-cause model: a small transformer encoder over
 * one step's candidates (diagnose.h), trained in C, read from a versioned,
 * checksummed file, and used by teller_diagnose to decide whether a step is
 * abnormal and which candidate is its root. docs/MODEL.md has the design
 * and the figures.
 *
 * A step is a sequence of tokens of three modalities: one step token (the
 * step's own numbers), one token per candidate (its feature vector, its
 * detector's kind, its layer) and one token per log line aligned to the
 * step (its template, hashed into buckets). Each modality has its own
 * feed-forward layers (the mixture-of-transformers idea); attention is
 * shared. Heads: step abnormal (the step token), fault kind (the step
 * token, 13 kinds + normal), and a pointer over the candidate tokens. The
 * model only chooses: every number in an explanation still comes from the
 * chosen candidate's analysis.
 */
#ifndef TELLER_MODEL_H
#define TELLER_MODEL_H

#include <stddef.h>
#include <stdint.h>
#include "teller/diagnose.h"
#include "teller/error.h"
#include "teller/fault.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TELLER_MODEL_STEP_FEATURES 4   /* log2(step / usual step), log lines aligned, candidates / 16, best score */
#define TELLER_MODEL_MAX_LOGS      6   /* log tokens per step (the step's log evidence) */
#define TELLER_MODEL_LOG_BUCKETS   128 /* log templates are hashed into this many embeddings */

/* One step as the model sees it; the labels are used only by training. */
typedef struct teller_model_sample {
    float    step[TELLER_MODEL_STEP_FEATURES];
    uint32_t ncands; /* <= TELLER_DIAG_MAX_CANDS */
    float    feat[TELLER_DIAG_MAX_CANDS][TELLER_CAND_FEATURES];
    uint8_t  det[TELLER_DIAG_MAX_CANDS];   /* teller_fault the detector named */
    uint8_t  layer[TELLER_DIAG_MAX_CANDS]; /* teller_layer */
    uint32_t nlogs;
    uint16_t log[TELLER_MODEL_MAX_LOGS];   /* template buckets */
    /* labels */
    uint8_t  abnormal;
    uint8_t  kind;  /* teller_fault, NONE for a normal step */
    int8_t   root;  /* index of the true root among the candidates, -1 when none is */
} teller_model_sample;

/* Step k of a diagnosis as a sample (labels: normal, no root). The run's
 * usual step is d->usual_step_ns. */
void teller_model_sample_of(const teller_diagnosis *d, size_t k, teller_model_sample *out);

typedef struct teller_model teller_model;

/* What the model says about one step. */
typedef struct teller_model_out {
    float p_abnormal;
    float p_kind[TELLER_FAULT_COUNT];   /* over NONE and the 13 kinds */
    float p_root[TELLER_DIAG_MAX_CANDS]; /* over the sample's candidates */
} teller_model_out;

/* A fresh model, weights drawn from seed (same seed, same weights). NULL
 * when out of memory. */
teller_model *teller_model_create(uint64_t seed);
void teller_model_free(teller_model *m);

/* Reads a model file; a file that is not one, is truncated, fails its
 * checksum or was written for other dimensions is an error naming it. */
teller_status teller_model_load(const char *path, teller_model **out, teller_error *err);
/* The same from bytes in memory; name is used in errors. */
teller_status teller_model_load_bytes(const void *p, size_t n, const char *name, teller_model **out, teller_error *err);
teller_status teller_model_save(const teller_model *m, const char *path, teller_error *err);
/* The default model built into the library (`make model`); *out = NULL
 * and TELLER_OK when none was built in. */
teller_status teller_model_load_default(teller_model **out, teller_error *err);

/* Runs the model on one sample. Returns -1 when out of memory. */
int teller_model_predict(const teller_model *m, const teller_model_sample *s, teller_model_out *out);

/* Which of the sample's candidates (in the numeric stage's order) is the
 * root: the numeric stage's first (0), unless the model is confident of
 * another, P(root = c and kind = c's detector kind) normalised over the
 * candidates at least TELLER_MODEL_ROOT_CONFIDENCE. */
#define TELLER_MODEL_ROOT_CONFIDENCE 0.9
uint32_t teller_model_root(const teller_model_sample *s, const teller_model_out *o);

/* The step's score under the model: P(abnormal), except that an alarm of
 * the numeric stage (its score `numeric` >= threshold) stands, scored
 * threshold, unless the model is sure the step is normal (P below
 * TELLER_MODEL_VETO). A step is abnormal when the score >= threshold. */
#define TELLER_MODEL_VETO 0.15
double teller_model_step_score(const teller_model_out *o, double numeric, double threshold);

typedef struct teller_train_opts {
    uint64_t seed;       /* shuffling */
    int      max_epochs; /* 0: 60 */
    int      patience;   /* epochs without a better validation loss before stopping; 0: 6 */
    int      batch;      /* 0: 16 */
    float    lr;         /* 0: 1e-3 */
    float    weight_decay; /* AdamW; 0: 0.01 (negative: none) */
    int      fine_tune;  /* keep the model's feature normalisation (a --base model) */
    /* called after every epoch (may be NULL) */
    void   (*progress)(void *ctx, int epoch, double train_loss, double val_loss, int best);
    void    *ctx;
} teller_train_opts;

typedef struct teller_train_report {
    int    epochs, best_epoch;
    double train_loss, val_loss; /* at the best epoch */
    float  threshold; /* the operating point chosen on the validation steps (calibrate in model.c) */
    /* the calibrated model on the validation steps (the training steps when
     * there are none): step F1 as teller_diagnose decides (f1), of the
     * model alone (f1_model: P(abnormal) >= 0.5) and of the numeric stage
     * alone (f1_numeric: its score >= 0.5), the kind's accuracy over
     * abnormal steps, the pointer's over abnormal steps whose root is a
     * candidate */
    double f1, f1_model, f1_numeric, kind_acc, root_acc;
} teller_train_report;

/* Trains m on train (AdamW, class-weighted losses), keeping the weights of
 * the epoch with the lowest loss on val (all of train's when nval is 0),
 * then moves the abnormal head's bias so that P(abnormal) >= 0.5 is the
 * threshold with the best step F1 on val (train's when nval is 0).
 * Deterministic: same model, samples and options, same weights. */
teller_status teller_model_train(teller_model *m, const teller_model_sample *train, size_t ntrain,
                                 const teller_model_sample *val, size_t nval, const teller_train_opts *o,
                                 teller_train_report *rep, teller_error *err);

#ifdef __cplusplus
}
#endif
#endif
