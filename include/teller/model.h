/*
 * model.h - the learned root-cause model: a small transformer encoder over
 * one step's candidates (diagnose.h), trained in C, read from a versioned,
 * checksummed file, and used by teller_diagnose to decide whether a step is
 * abnormal and which candidate is its root. docs/MODEL.md has the design
 * and the figures.
 *
 * A step is a sequence of tokens of four modalities: one step token (the
 * step's own numbers), one token per candidate (its feature vector, its
 * detector's kind, its layer), one token per log line aligned to the step
 * (its template, hashed into buckets), and the trace tokens: the TPE
 * tokens (tpe.h) of the causal-context slice (slice.h) around each of the
 * step's first TELLER_MODEL_TRACE_CANDS candidates. Each modality has its
 * own feed-forward layers (the mixture-of-transformers idea); attention is
 * shared, with a learned bias by how two tokens are related (the same
 * token, parent and child in a slice's tree, farther in it, a trace token
 * and its candidate). Heads: step abnormal (the step token), fault kind (the step
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
#include "teller/store.h"
#include "teller/tpe.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TELLER_MODEL_STEP_FEATURES 5   /* log2(step / usual step), log lines aligned, candidates / 16, best score,
                                        * whether the step has peers (a collective with two or more members) */
#define TELLER_MODEL_MAX_LOGS      6   /* log tokens per step (the step's log evidence) */
#define TELLER_MODEL_LOG_BUCKETS   128 /* log templates are hashed into this many embeddings */
#define TELLER_MODEL_TRACE_CANDS   2   /* slices: around the step's first candidates (K) */
#define TELLER_MODEL_SLICE_EVENTS  48  /* events a slice keeps (the most relevant, slice.h) */
#define TELLER_MODEL_SLICE_BASE    (2 * TELLER_MODEL_SLICE_EVENTS) /* room for its base tokens (one a node) */
#define TELLER_MODEL_TRACE_TOKENS  24  /* trace tokens a slice gives the model (T), around its seed */
#define TELLER_MODEL_MAX_TRACE     (TELLER_MODEL_TRACE_CANDS * TELLER_MODEL_TRACE_TOKENS)
#define TELLER_MODEL_NO_PARENT     0xff /* a trace token whose parent is not among the step's tokens */

/* One step as the model sees it; the labels are used only by training. */
typedef struct teller_model_sample {
    float    step[TELLER_MODEL_STEP_FEATURES];
    uint32_t ncands; /* <= TELLER_DIAG_MAX_CANDS */
    float    feat[TELLER_DIAG_MAX_CANDS][TELLER_CAND_FEATURES];
    uint8_t  det[TELLER_DIAG_MAX_CANDS];   /* teller_fault the detector named */
    uint8_t  layer[TELLER_DIAG_MAX_CANDS]; /* teller_layer */
    uint32_t nlogs;
    uint16_t log[TELLER_MODEL_MAX_LOGS];   /* template buckets */
    /* the trace: slice j is around candidate j's event. First its base
     * sequence (teller_model_trace_base: serialised with the vocabulary
     * the run was read with, relation of each node in the slice), then the
     * tokens the model reads (teller_model_tokenize) */
    uint32_t nbase[TELLER_MODEL_TRACE_CANDS];
    uint32_t seed_pos[TELLER_MODEL_TRACE_CANDS]; /* the seed's token in the base sequence */
    uint32_t base_sym[TELLER_MODEL_TRACE_CANDS][TELLER_MODEL_SLICE_BASE];
    uint8_t  base_parent[TELLER_MODEL_TRACE_CANDS][TELLER_MODEL_SLICE_BASE]; /* TELLER_MODEL_NO_PARENT at a root */
    uint8_t  base_depth[TELLER_MODEL_TRACE_CANDS][TELLER_MODEL_SLICE_BASE];
    uint8_t  base_bucket[TELLER_MODEL_TRACE_CANDS][TELLER_MODEL_SLICE_BASE];
    uint8_t  base_rel[TELLER_MODEL_TRACE_CANDS][TELLER_MODEL_SLICE_BASE]; /* teller_slice_rel */
    uint32_t ntrace;
    uint32_t tsym[TELLER_MODEL_MAX_TRACE];   /* symbol id in the model's vocabulary (unknown: beyond it) */
    uint8_t  tdepth[TELLER_MODEL_MAX_TRACE];
    uint8_t  tbucket[TELLER_MODEL_MAX_TRACE]; /* 0..4, lo..8x */
    uint8_t  tseg[TELLER_MODEL_MAX_TRACE];    /* the slice's candidate, 0..K-1 */
    uint8_t  trel[TELLER_MODEL_MAX_TRACE];    /* the most relevant slice relation of the nodes it covers */
    uint8_t  tparent[TELLER_MODEL_MAX_TRACE]; /* index among the trace tokens, TELLER_MODEL_NO_PARENT */
    /* what teller_diagnose weighs beside the model's answer (not inputs: an
     * ablation leaves them): the numeric stage's best score, its first
     * candidate's excess share, the step's slowness (teller_diag_step) and
     * whether its first candidate is a fact (a diagnosis without a model:
     * what teller_train's validation judges as teller_diagnose would) */
    float    numeric, share, slowness;
    uint8_t  fact;
    /* labels */
    uint8_t  abnormal;
    uint8_t  kind;  /* teller_fault, NONE for a normal step */
    int8_t   root;  /* index of the true root among the candidates, -1 when none is */
} teller_model_sample;

/* Step k of a diagnosis as a sample (labels: normal, no root), without
 * its trace. The run's usual step is d->usual_step_ns. */
void teller_model_sample_of(const teller_diagnosis *d, size_t k, teller_model_sample *out);

typedef struct teller_model teller_model;

/* The trace tokens: raw per-node tokens (the base sequence as it is) or
 * TPE tokens (repeat runs collapsed and merges applied, tpe.h). */
typedef enum teller_model_tokens { TELLER_MODEL_TOKENS_TPE = 0, TELLER_MODEL_TOKENS_RAW = 1 } teller_model_tokens;

/* The trace of one loaded run: its duration buckets and a vocabulary that
 * learns the run's new names (tpe.h teller_tpe_ctx). With m (v NULL): a
 * copy of m's vocabulary, the tracer's, and teller_model_step runs m
 * (a model without the trace modality reads no trace: neither is made);
 * with v (m NULL): v, borrowed, for base sequences alone (training reads
 * every run with one vocabulary). The store (and v) must outlive it. */
typedef struct teller_model_tracer teller_model_tracer;
teller_status teller_model_tracer_create(const teller_model *m, teller_tpe_vocab *v, const teller_store *st,
                                         teller_model_tracer **out, teller_error *err);
void teller_model_tracer_free(teller_model_tracer *t);
/* Fills the sample's base sequences: the slice (TELLER_MODEL_SLICE_EVENTS
 * events) around the event of each of step k's first
 * TELLER_MODEL_TRACE_CANDS candidates, serialised (an empty one for a
 * candidate without an event), its first TELLER_MODEL_SLICE_BASE tokens.
 * d must be the diagnosis of the tracer's store. */
teller_status teller_model_trace_base(teller_model_tracer *t, const teller_diagnosis *d, size_t k,
                                      teller_model_sample *out, teller_error *err);

/* Slice j's base sequence of the sample as a TPE sequence (into *out,
 * which holds nothing before; the caller frees it with
 * teller_tpe_seq_free): what a vocabulary is learned on and encodes. */
teller_status teller_model_base_seq(const teller_model_sample *s, int j, teller_tpe_seq *out, teller_error *err);

/* The model's vocabulary (a new copy each call, caller frees): the one to
 * read a run with. */
teller_status teller_model_vocab(const teller_model *m, teller_tpe_vocab **out, teller_error *err);
/* Makes v (copied) the model's vocabulary and tok its tokens; done before
 * training, with the vocabulary the training runs were read with (it knows
 * their names). */
teller_status teller_model_set_vocab(teller_model *m, const teller_tpe_vocab *v, teller_model_tokens tok,
                                     teller_error *err);
teller_model_tokens teller_model_token_kind(const teller_model *m);

/* Inputs a model never sees (an ablation, `teller train --without`): kept
 * in the model file, taken away from every sample it reads. */
enum { TELLER_MODEL_WITHOUT_TRACE = 1, TELLER_MODEL_WITHOUT_LOGS = 2, TELLER_MODEL_WITHOUT_NUMBERS = 4 };
void teller_model_set_without(teller_model *m, uint32_t without);
uint32_t teller_model_without(const teller_model *m);
/* Takes away what the model does not see: the trace tokens, the log
 * tokens (and the step's log count), the numbers (the step's four and
 * every candidate's features; the candidates keep their kind and layer). */
void teller_model_ablate(const teller_model *m, teller_model_sample *s);
/* The sample's trace tokens from its base sequences: encoded with v (the
 * vocabulary the base sequences were serialised with: the model's, grown
 * by the run's new names) unless the model reads raw tokens, then the
 * TELLER_MODEL_TRACE_TOKENS tokens around each slice's seed. */
teller_status teller_model_tokenize(const teller_model *m, const teller_tpe_vocab *v, teller_model_sample *s,
                                    teller_error *err);

/* What the model says about one step. */
typedef struct teller_model_out {
    float p_abnormal;
    float p_kind[TELLER_FAULT_COUNT];   /* over NONE and the 13 kinds */
    float p_root[TELLER_DIAG_MAX_CANDS]; /* over the sample's candidates */
} teller_model_out;

/* Whether every probability of o (ncands of p_root) is a number in [0, 1]:
 * a model file whose weights are finite but huge loads, and its sums then
 * overflow to NaN; such an answer is no opinion. */
int teller_model_out_valid(const teller_model_out *o, uint32_t ncands);

/* A fresh model, weights drawn from seed (same seed, same weights), the
 * built-in TPE vocabulary and TPE tokens. NULL when out of memory. */
teller_model *teller_model_create(uint64_t seed);
void teller_model_free(teller_model *m);

/* Who a model is, for the predictions to say who judged: its recipe (the
 * name of what trained it, `teller train --recipe`, at most
 * TELLER_MODEL_RECIPE_MAX - 1 bytes) and its id, the checksum of its file
 * (0 for a model neither loaded nor saved). */
#define TELLER_MODEL_RECIPE_MAX 64
void teller_model_set_recipe(teller_model *m, const char *recipe);
const char *teller_model_recipe(const teller_model *m);
uint64_t teller_model_id(const teller_model *m);
/* How every report names a model: "model 0123456789abcdef (RECIPE)", from
 * its id and recipe; into buf of n bytes (96 hold it). */
void teller_model_label(uint64_t id, const char *recipe, char *buf, size_t n);

/* Reads a model file; a file that is not one, is truncated, fails its
 * checksum, was written by another version or for other dimensions, or
 * holds a vocabulary that does not parse is an error naming it. */
teller_status teller_model_load(const char *path, teller_model **out, teller_error *err);
/* The same from bytes in memory; name is used in errors. */
teller_status teller_model_load_bytes(const void *p, size_t n, const char *name, teller_model **out, teller_error *err);
/* Writes the model file; the model's id becomes the file's checksum. */
teller_status teller_model_save(teller_model *m, const char *path, teller_error *err);
/* The default model built into the library (`make model`); *out = NULL
 * and TELLER_OK when none was built in. */
teller_status teller_model_load_default(teller_model **out, teller_error *err);

/* Runs the model on one sample. Returns -1 when out of memory. */
int teller_model_predict(const teller_model *m, const teller_model_sample *s, teller_model_out *out);
/* Step k of d (the diagnosis of the tracer's store) as the tracer's model
 * sees it: *s its sample (teller_model_sample_of, its trace base and
 * tokens, less what the model leaves out), *o the model's answer. */
teller_status teller_model_step(teller_model_tracer *t, const teller_diagnosis *d, size_t k, teller_model_sample *s,
                                teller_model_out *o, teller_error *err);

/* Which of the sample's candidates (in the numeric stage's order) is the
 * root: the numeric stage's first (0), unless the model is confident of
 * another, P(root = c and kind = c's detector kind) normalised over the
 * candidates at least `confidence` (TELLER_MODEL_ROOT_CONFIDENCE as
 * teller_diagnose uses the model; 0: the model's own choice), and the
 * first explains less of the step than TELLER_MODEL_VETO_SHARE (`share`,
 * its TELLER_CF_EXCESS_SHARE; as the veto below: the model does not
 * overrule a large finding). With confidence 0 the share is not asked. */
#define TELLER_MODEL_ROOT_CONFIDENCE 0.9
uint32_t teller_model_root(const teller_model_sample *s, const teller_model_out *o, double confidence, double share);

/* The step's score under the model. The model only takes alarms away: an
 * alarm of the numeric stage (its score `numeric` >= threshold) stands,
 * scored threshold (or P when higher), unless the model is sure the step
 * is normal (P below TELLER_MODEL_VETO) and the numeric stage's first
 * candidate explains little of the step (its excess share, `share`, the
 * candidate's TELLER_CF_EXCESS_SHARE, under `veto_share`: the model's,
 * teller_model_veto_share, TELLER_MODEL_VETO_SHARE unless calibrated) —
 * then the score is P, unless the alarm is a fact (teller_diag_step.fact:
 * a hang, a log line, what the trace states): the model does not veto
 * what the trace says, and the score stays `numeric`. A step the numeric
 * stage does not flag scores the smaller of P and its numeric score. Why
 * each condition: docs/MODEL.md (a finding of a tenth of the step is not
 * noise on any workload; the steps the model added on the tuning cases
 * were mostly false alarms). A step is abnormal when the score >=
 * threshold. */
#define TELLER_MODEL_VETO       0.12
#define TELLER_MODEL_VETO_SHARE 0.1
double teller_model_step_score(const teller_model_out *o, double numeric, double share, double veto_share,
                               double threshold, int fact);
/* The largest share of the step a finding the model vetoes may explain:
 * TELLER_MODEL_VETO_SHARE, or what fine-tuning on a user's cases chose
 * (teller_train_opts.fine_tune). */
double teller_model_veto_share(const teller_model *m);

typedef struct teller_train_opts {
    uint64_t seed;       /* shuffling */
    int      max_epochs; /* 0: 60 */
    int      patience;   /* epochs without a better validation loss before stopping; 0: 6 */
    int      batch;      /* 0: 16 */
    float    lr;         /* 0: 1e-3 */
    float    weight_decay; /* AdamW; 0: 0.01 (negative: none) */
    int      fine_tune;  /* a --base model: keep its feature normalisation, and its weights (best
                          * epoch 0) unless an epoch's validation loss is lower than theirs; then
                          * the veto's share (TELLER_MODEL_VETO_SHARES) is chosen on the validation
                          * steps, and the base's weights kept unless the tuned ones do better */
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
    /* fine-tuning (with validation steps): 1 when the base's weights were
     * kept, every figure above theirs, because the tuned model's step F1
     * (f1_tuned, at its best veto share) was no higher; the share chosen
     * is the model's teller_model_veto_share */
    int    kept_base;
    double f1_tuned;
} teller_train_report;

/* The shares fine-tuning chooses the veto's among: the largest share of
 * the step a vetoed finding may explain (1: any). */
#define TELLER_MODEL_VETO_SHARES {TELLER_MODEL_VETO_SHARE, 0.2, 0.3, 0.5, 1.0}

/* Trains m on train (AdamW, class-weighted losses), keeping the weights of
 * the epoch with the lowest loss on val (all of train's when nval is 0;
 * fine-tuning, the model's own weights count as epoch 0, and the model is
 * left as it was unless the tuned one's step F1 on val is higher),
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
