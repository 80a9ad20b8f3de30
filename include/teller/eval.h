/*
 * eval.h - the evaluator of ../shared/BENCHMARK.md: predictions against
 * truth, every metric over all steps, per view and per fault kind.
 */
#ifndef TELLER_EVAL_H
#define TELLER_EVAL_H

#include <stdio.h>
#include "teller/error.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct teller_eval teller_eval;

teller_eval *teller_eval_create(void);
void teller_eval_free(teller_eval *e);

/* Adds one case: truth.json and the predictions file. Errors name the file
 * and the step or field that is wrong; nothing is added then. */
teller_status teller_eval_add(teller_eval *e, const char *truth_path, const char *pred_path, teller_error *err);

/* Adds one case's candidates (`teller diagnose --candidates`): for every
 * truly abnormal step, the position of the first candidate that is the
 * true root (same rank, same normalised operator), for candidate
 * recall@K. The truth's steps must all be there, in order. */
teller_status teller_eval_add_candidates(teller_eval *e, const char *truth_path, const char *cand_path, teller_error *err);

/* The metrics as JSON (keys as in BENCHMARK.md), and as a readable table;
 * candidate recall ("candidate_recall") only when candidates were added,
 * and only it when no predictions were. */
void teller_eval_write_json(const teller_eval *e, FILE *f);
void teller_eval_write_table(const teller_eval *e, FILE *f);

/* Headline numbers, for tests and benchmarks. A figure with nothing to
 * count (recall in a view without abnormal steps, precision when nothing
 * was flagged) is NaN: null in the JSON, n/a in the table. */
typedef struct teller_eval_summary {
    int    cases;
    long   steps, abnormal_steps;
    double step_f1, step_precision, step_recall, step_accuracy;
    double fault_type_accuracy, fault_type_macro_f1;
    double op_ac1, op_ac3, op_macro_f1, rank_ac1;
    double fact_recall, bleu4;
    long   cand_steps;   /* abnormal steps of the cases added with teller_eval_add_candidates */
    double cand_recall1, cand_recall3, cand_recall8, cand_recall16; /* root among the first K candidates */
} teller_eval_summary;

/* view: NULL for all steps, "horizontal" or "vertical"; fault: NULL or a
 * fault name. */
void teller_eval_summary_get(const teller_eval *e, const char *view, const char *fault, teller_eval_summary *out);

#ifdef __cplusplus
}
#endif
#endif
