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
#include "teller/tree.h"

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

/* A number a diagnosis states, with what it is made of in the trace, so
 * that anyone can find it there and `teller diagnose --check`
 * (include/teller/check.h) can make it again from the trace. Every number
 * of an explanation, of the HTML report and of the predictions' step
 * fields is one of its step's facts, printed by teller_fmt_dur. */
typedef enum teller_fact_kind {
    TELLER_FACT_STEP = 1,  /* what step added to rank's run: the end of its window (its marker's end or
                            * that of the last GPU work launched in it, whichever is later) less the
                            * later of its marker's start and the end of the rank's window of the step
                            * before (a host that runs ahead queues a step's work behind the last
                            * step's); the longest rank's is the step's duration */
    TELLER_FACT_USUAL,     /* step's usual duration (teller_diag_step.usual_ns, its group's yardstick) */
    TELLER_FACT_EVENT,     /* event a's own duration */
    TELLER_FACT_OP,        /* the events named name on rank in step: their time together and count;
                            * name TELLER_NONE: every compute kernel (not communication) */
    TELLER_FACT_OP_USUAL,  /* the median of that OP fact over the steps of step's group that its
                            * yardstick is made of (teller_step_group.ref_steps), step left out, a step
                            * without such events counting zero; count: those steps */
    TELLER_FACT_HOLE,      /* [t0, t1) on rank, a stretch in which no host op of its process ran (no
                            * framework op, runtime or driver call on any thread), ended by event b */
    TELLER_FACT_GPU_IDLE,  /* the time in [t0, t1) in which rank's GPU ran no kernel, copy or memset */
    TELLER_FACT_OVERHANG,  /* how long event a, a call that blocks on the GPU, went on after the last GPU
                            * work of rank that had ended by its end (its whole duration if none had
                            * ended since it began) */
    TELLER_FACT_LATE,      /* rank started last at count of step's count2 collectives with two or more
                            * members; value: how long the other members had waited for it, summed */
    TELLER_FACT_DIFF,      /* fact a minus fact b, both of the same step's facts (indices) */
    TELLER_FACT_QUIET,     /* [t0, t1) inside step's window on rank in which neither its GPU nor any host
                            * op of its process ran: the longest such stretch of the window */
    TELLER_FACT_REFERENCE  /* a number of the reference run (teller_diag_opts.reference), which the run's
                            * trace cannot give; count: the reference's steps of step's kind. count2 0:
                            * what a step of that kind and work usually took there; 1: the usual time per
                            * such step there of operator name on rank (TELLER_NONE: every compute
                            * kernel; a collective's kernels: their time after the last member arrived;
                            * a synchronize: its time past the GPU's last work) */
} teller_fact_kind;

typedef struct teller_fact {
    teller_fact_kind kind;
    uint32_t step;
    int32_t  rank;
    uint32_t name;         /* OP, OP_USUAL: interned name, TELLER_NONE for every compute kernel */
    uint32_t a, b;         /* events (EVENT, OVERHANG: a; HOLE: b) or, for DIFF, fact indices; else TELLER_NONE */
    int64_t  t0, t1;       /* HOLE, GPU_IDLE, QUIET */
    double   value;        /* ns */
    uint32_t count, count2;
    char     text[24];     /* value as printed (teller_fmt_dur) */
} teller_fact;

/* A fact kind's name in the predictions JSON ("step", "usual", ...,
 * "reference"); "?" for another value. */
const char *teller_fact_kind_name(teller_fact_kind k);

/* An explanation names an operator whole when its name is this long or
 * shorter, else by its normalized name (tree.h teller_name_normalize). */
#define TELLER_EXPLAIN_NAME_MAX 256

/* How every diagnosis printer writes a duration in ns: "1.234 s", "12.345
 * ms", "123.4 us", "56 ns". Returns buf. */
char *teller_fmt_dur(char *buf, size_t cap, double ns);

/* The steps of one kind in the run (the same annotation family and kind,
 * tree.h teller_step_class) and what such a step usually takes: the
 * yardstick a step is judged slow against (src/diagnose/yardstick.c). */
typedef struct teller_step_group {
    teller_step_kind kind;
    char     family[48];
    uint32_t first, n;    /* its steps: teller_diagnosis.group_steps[first .. first + n), in step order */
    uint32_t ref_first, nref; /* the steps its fit is made of: teller_diagnosis.ref_steps[ref_first ..
                           * + nref), in step order: those no finding of their own flags, when there are
                           * three or more, else all its steps; a line is fitted through them however
                           * few they are */
    int      by_work;     /* 1: a step's usual duration follows its work (a line fitted through the
                           * group's steps, Theil-Sen); 0: the group's median */
    int      by_compute;  /* by_work where the work is no annotation's but the time the compute
                           * kernels of the step's fastest rank took (teller_diag_step.work, in ns):
                           * an annotation that states none that the duration follows, in a run of
                           * two or more ranks */
    int      fitted;      /* 1: the group has TELLER_DIAG_GROUP_STEPS steps or more and base_ns,
                           * per_work_ns and spread are its reference steps'; 0: each step is judged
                           * against the steps of its kind nearest in work (teller_diag_step.near_first) */
    double   base_ns, per_work_ns; /* fitted: usual duration of a step of work W: base_ns + per_work_ns * W */
    double   spread;      /* how far its steps stray from their usual anyway, relative: 1.4826 x the
                           * median absolute relative deviation when fitted; else a prior */
} teller_step_group;

/* Steps a group needs for a yardstick of its own (a median or a line, and
 * a spread); a smaller group's steps are judged against their nearest. */
#define TELLER_DIAG_GROUP_STEPS 5

/* One step's diagnosis. pred carries the benchmark fields, evidence included.
 * With a model, its root comes first (model.h teller_model_root), the rest
 * in the numeric stage's order, and pred.score is
 * its probability that the step is abnormal. */
typedef struct teller_diag_step {
    teller_step_pred pred;
    char             fault[32];     /* finer kind (BENCHMARK.md names), "" when normal */
    int64_t          start_ns;      /* earliest rank's start, node 0's clock */
    int64_t          dur_ns;        /* what the step added to its longest rank's run (TELLER_FACT_STEP) */
    int32_t          dur_rank;      /* the rank whose window that is */
    uint32_t         group;         /* its kind: teller_diagnosis.groups[group] */
    int64_t          work;          /* the work its annotation states (tokens, batch), else the kernels its
                                     * annotation's rank launched; in a group by_compute, the ns its
                                     * fastest rank's compute kernels took (work_rank), -1 unknown */
    int32_t          work_rank;     /* by_compute: the rank whose compute time work is, else -1 */
    int64_t          usual_ns;      /* what a step of its kind and work usually takes; -1 when it has no
                                     * yardstick (the only step of its kind, or none near its work) */
    uint32_t         near_first, near_n; /* in a group too small to fit: usual_ns is the median duration of
                                     * the steps teller_diagnosis.near_steps[near_first .. + near_n) */
    int64_t          excess_ns;     /* dur - usual (>= 0); 0 without a yardstick */
    int              by_reference;  /* 1: usual_ns is the reference run's (teller_diag_opts.reference): the
                                     * run's own yardstick had none, or judged the step less slow */
    double           spread;        /* the relative spread the step is judged with: its group's, or with
                                     * by_reference the reference's group of its kind */
    int64_t          explained_ns;  /* what its top finding accounts for: its cost, at most excess_ns
                                     * when the step has a yardstick */
    double           slowness;      /* how far past the step alarm (its usual plus --spreads of its kind's
                                     * spreads, at least 1 % and 20 us over) it is: 0.5 at the edge, towards
                                     * 1 beyond, 0 when no slower than usual or without a yardstick */
    int              slow;          /* slowness >= 0.5 */
    int              fact;          /* its top finding is a fact that needs no yardstick (a hang, a log
                                     * line; a blocking wait in a step without a yardstick): its score is
                                     * the finding's; else pred.score is at most slowness */
    int32_t          root_rank;     /* rank of the top candidate, -1 if none */
    int32_t          root_node;
    uint32_t         culprit_event; /* an event of the top candidate, TELLER_NONE if none */
    int64_t          culprit_ns;    /* the top candidate's time in this step */
    int64_t          culprit_base_ns; /* its usual time */
    uint32_t         first_cand;    /* its candidates: teller_diagnosis.cands[first_cand ..], best first */
    uint32_t         ncands;        /* one per (rank, operator), at most TELLER_DIAG_MAX_CANDS */
    uint32_t         peer_colls;    /* its collectives with two or more members: 0 when its ranks had no
                                     * peers to keep waiting (a single rank), so late and wait shares are 0 */
    uint32_t         first_fact, nfacts; /* the numbers it states: teller_diagnosis.facts[first_fact ..] */
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
    /* the step alarm: a step whose findings are not facts (a hang, a log
     * line) is abnormal only when it took longer than its usual by more
     * than this many of its kind's spreads (and 1 % and 20 us); negative:
     * the default, TELLER_DIAG_SPREADS (teller_diag_defaults) */
    double spreads;
    /* a healthy reference run (teller_diag_reference_make): its steps of
     * each kind are a second yardstick, and each operator's usual time in
     * them a second usual, so that what slows every step alike shows;
     * NULL: the run alone */
    const struct teller_diag_reference *reference;
    /* the number in the run of the store's step 0 (`teller watch` diagnoses
     * a window of a longer run): added to every step number the diagnosis
     * says (pred.step, the explanations); 0 for a whole run */
    uint32_t step_base;
} teller_diag_opts;

#define TELLER_DIAG_SPREADS 3.0

typedef struct teller_diagnosis {
    teller_diag_step *steps; /* one per step number, in order */
    size_t            n;
    teller_diag_cand *cands; /* every step's candidates, step after step */
    size_t            ncands;
    teller_fact      *facts; /* every step's facts, step after step */
    size_t            nfacts;
    int64_t           usual_step_ns; /* the run's median step duration */
    teller_step_group *groups;       /* the kinds of step of the run */
    size_t            ngroups;
    uint32_t         *group_steps;   /* every group's steps, group after group */
    uint32_t         *ref_steps;     /* every group's reference steps, group after group */
    uint32_t         *near_steps;    /* the steps small groups' steps are judged against */
    uint32_t          step_base; /* teller_diag_opts.step_base: steps[k].pred.step is k + step_base */
    int               model;   /* 1 when a model judged the steps (scores are its probabilities) */
    uint64_t          model_id;        /* then its id (model.h teller_model_id) */
    char              model_recipe[64]; /* and its recipe (teller_model_recipe, TELLER_MODEL_RECIPE_MAX) */
    char            **notes; /* what the analysis could not see or trust, for the user */
    size_t            nnotes;
    struct teller_requests *requests; /* with logs: each request's lifecycle and breakdown against
                                       * these steps (requests.h), read with the logs; else NULL;
                                       * teller_diagnosis_free frees it */
} teller_diagnosis;

teller_diag_opts teller_diag_defaults(void);

/* Who judged the steps, for a summary's line: "the numeric stage" or
 * "model 0123456789abcdef (RECIPE)"; into buf of n bytes (96 hold it). */
void teller_diag_judge(const teller_diagnosis *d, char *buf, size_t n);

/* What a healthy reference run says is usual (src/diagnose/reference.c):
 * its kinds of step with their yardsticks, and per kind, rank and
 * operator the operator's usual time in such a step. */
typedef struct teller_diag_reference teller_diag_reference;

/* Diagnoses the tree-built reference run ref with opts (its reference
 * ignored) and keeps what it says is usual: the steps no finding of their
 * own flags. *out is owned by the caller (teller_diag_reference_free). */
teller_status teller_diag_reference_make(teller_store *ref, const teller_diag_opts *opts, teller_diag_reference **out,
                                         teller_error *err);
/* Its steps, those its yardsticks are made of; its kinds of step. */
size_t teller_diag_reference_steps(const teller_diag_reference *r);
size_t teller_diag_reference_kinds(const teller_diag_reference *r);
void teller_diag_reference_free(teller_diag_reference *r);

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
