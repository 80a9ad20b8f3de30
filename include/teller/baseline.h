/*
 * baseline.h - reference baselines for the benchmark (see src/eval/baseline.c
 * for what each does). Both fill one prediction per step of a built store;
 * *out is malloc'd and owned by the caller.
 */
#ifndef TELLER_BASELINE_H
#define TELLER_BASELINE_H

#include <stddef.h>
#include "teller/error.h"
#include "teller/predict.h"
#include "teller/store.h"

teller_status teller_baseline_zscore(const teller_store *st, teller_step_pred **out, size_t *n, teller_error *err);
teller_status teller_baseline_gmm(const teller_store *st, teller_step_pred **out, size_t *n, teller_error *err);

#endif
