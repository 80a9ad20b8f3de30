/*
 * diff.h - what changed between a reference run and a run of the same
 * workload (docs/DIFF.md).
 *
 * teller_diff_check says whether two tree-built stores can be compared at
 * all, and when not, one sentence why. It is independent of the diff
 * itself: `teller diff` and `teller diagnose --baseline` both call it.
 */
#ifndef TELLER_DIFF_H
#define TELLER_DIFF_H

#include <stddef.h>
#include <stdint.h>
#include "teller/error.h"
#include "teller/store.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Refusal thresholds of teller_diff_check (docs/DIFF.md says where they
 * come from). */
#define TELLER_DIFF_MIN_OVERLAP 0.5      /* compute kernel families' time-weighted overlap below: another model */
#define TELLER_DIFF_MIN_MOE 0.01      /* moe kernels' share of compute time in one run, none in the other: MoE vs dense */
#define TELLER_DIFF_MAX_KERNEL_RATIO 1.5 /* median kernels per step of a common kind apart by more: another model */

/* What teller_diff_check found. */
typedef struct teller_diff_verdict {
    int    comparable;     /* 1: the two can be compared; 0: why says why not */
    char   why[384];       /* one sentence, "" when comparable; names come from the traces (escape them) */
    int32_t ref_ranks, run_ranks;   /* distinct ranks */
    uint32_t common_kinds;          /* step kinds (annotation family + kind) both hold */
    double kernel_overlap; /* sum over compute kernel families (tpe.h's NAME families of non-COMM kernels) of
                            * the smaller of their two shares of compute kernel time, 0..1; -1 when either
                            * run has no compute kernel */
    double kernel_ratio;   /* larger over smaller median kernels per step in the common step kind with the
                            * most steps, >= 1; 0 when not known */
} teller_diff_verdict;

/* Checks whether ref (the reference) and run, both tree-built
 * (teller_tree_build), can be compared, in this order:
 *   - either holds no event or no step: "the reference holds no step";
 *   - a different number of ranks (or recorded world sizes);
 *   - the step annotations of different engines (vLLM's execute_...,
 *     SGLang's step[...]);
 *   - no step kind (teller_step_classify: family and kind; steps without an
 *     annotation are one kind) in common;
 *   - another model: the compute kernels' time-weighted family overlap
 *     below TELLER_DIFF_MIN_OVERLAP, moe kernels (expert routing) taking
 *     TELLER_DIFF_MIN_MOE of one run's compute time and absent from the
 *     other's, or the median kernels per step of the
 *     commonest shared kind apart by more than TELLER_DIFF_MAX_KERNEL_RATIO.
 * The first that holds fills out->why and sets comparable to 0. A refusal
 * is not an error: TELLER_OK either way; TELLER_ERR_NOMEM when out of
 * memory. */
teller_status teller_diff_check(const teller_store *ref, const teller_store *run, teller_diff_verdict *out,
                                teller_error *err);

#ifdef __cplusplus
}
#endif
#endif
