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

/* The metrics as JSON (keys as in BENCHMARK.md), and as a readable table. */
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
} teller_eval_summary;

/* view: NULL for all steps, "horizontal" or "vertical"; fault: NULL or a
 * fault name. */
void teller_eval_summary_get(const teller_eval *e, const char *view, const char *fault, teller_eval_summary *out);

#ifdef __cplusplus
}
#endif
#endif
