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
#include <stdio.h>
#include "teller/store.h"
#include "teller/tree.h"

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

/* ---- the diff ----
 *
 * Steps are matched by class: their annotation's family and kind
 * (teller_step_classify) and their size, the work the annotation states
 * (tokens, or SGLang's batch) or, when it states none, the kernels the step
 * launched, in powers of two (8-15 tokens); the iterations of a loop
 * (PyTorch's ProfilerStep#) are one class. Inside a class both runs'
 * step rows (a step on one rank) are compared per rank: for every operator
 * the median over the class's rows of its time in a row (0 in a row
 * without it), and the median step duration. An operator is a compute
 * kernel's name (teller_name_normalize, digit runs masked) and launch
 * block (not its grid, which grows with a step's tokens); a collective's
 * library, operation, message size and process group; a copy's or a host
 * API call's or framework op's family (tpe.h teller_tpe_name_family); or
 * the GPU's idle time in the step. A change is said when it
 * exceeds the noise: the robust spread (1.4826 x the median absolute
 * deviation) of the operator's per-row times and of the class's step
 * durations in either run, and half a percent of the reference's median
 * step; and only on a rank that ran the class at least twice in each run. */

/* What an operator is. */
typedef enum teller_diff_what {
    TELLER_DIFF_KERNEL = 0, /* compute kernels of one family and launch grid */
    TELLER_DIFF_COMM,       /* communication kernels of one collective, size and group */
    TELLER_DIFF_COPY,       /* copies and memsets of one family */
    TELLER_DIFF_HOST,       /* host runtime or driver calls of one family */
    TELLER_DIFF_TORCH,      /* framework ops (aten, torch) of one name: their time includes their children's */
    TELLER_DIFF_IDLE,       /* the GPU's idle time in the step (teller_step_summary.gpu_idle_ns) */
    TELLER_DIFF_WHAT_COUNT
} teller_diff_what;

/* "kernel", "collective", "copy", "host", "op", "idle"; static. */
const char *teller_diff_what_name(teller_diff_what w);

/* Steps of one class, matched across the two runs. */
typedef struct teller_diff_class {
    char             family[48]; /* annotation family, "" for steps without one */
    teller_step_kind kind;
    int              by_kernels; /* 1: sized by kernels per step (the annotation states no work); an
                                  * iteration class is not sized (size_lo = size_hi = 0) */
    int64_t          size_lo, size_hi; /* the work (or kernels) of its steps lies in [size_lo, size_hi] */
    uint32_t         ref_rows, run_rows; /* step rows (step x rank) in each run */
    int64_t          ref_ns, run_ns;     /* median step duration */
    int64_t          ref_spread_ns, run_spread_ns; /* 1.4826 x MAD of the step durations */
    int              judged;   /* some rank ran it at least twice in each run: its spreads say something; an
                                * unjudged class is listed, and none of its changes or ranks said */
    int              changed;  /* judged, and |run_ns - ref_ns| exceeds both spreads and half a percent of ref_ns */
    int32_t          rank;     /* an example to draw: the rank that changed most */
    uint32_t         ref_step, run_step; /* and on it the step whose duration is nearest the median */
} teller_diff_class;

/* One operator of one judged class whose time per step moved, past the
 * noise or not. */
typedef struct teller_diff_change {
    uint32_t         cls;      /* index into classes */
    teller_diff_what what;
    char             op[160];  /* a kernel's name with digit runs masked and its block ("nvjet_tst_#x#_..._TNT
                                * block 256x1x1"), a collective's library, operation, size and group ("nccl
                                * allreduce 8388608 B group [0, 1]"), a call's or copy's family ("Synchronize") */
    char             ref_name[160], run_name[160]; /* the kernel's or call's name (normalised) in each run, "" none */
    int32_t          rank;     /* the rank where it changed most */
    int64_t          ref_ns, run_ns;  /* median time per step row there */
    int64_t          noise_ns;        /* what a change had to exceed there */
    double           ref_count, run_count; /* median launches per step row there */
    int              changed;         /* it exceeded the noise on some rank (ranks_changed > 0) */
    int              waits;           /* a host call that waits for the GPU (a *Synchronize family): its time
                                       * follows the GPU's, so it is listed after the other changes */
    uint32_t         ranks_changed;   /* ranks where it exceeded the noise */
    uint32_t         ranks;           /* ranks of the class */
} teller_diff_change;

/* A kernel that only one run launches (by normalised name, digit runs masked). */
typedef struct teller_diff_kernel {
    char   name[160];
    double ns_per_step; /* its time over every rank, per finished step row of its run */
} teller_diff_kernel;

/* One rank's steps of one class. */
typedef struct teller_diff_rank {
    uint32_t cls;
    int32_t  rank;
    int64_t  ref_ns, run_ns; /* median step duration */
    int      changed;        /* by the class's rule */
} teller_diff_rank;

typedef struct teller_diff {
    teller_diff_verdict verdict;   /* teller_diff_check's, computed first */
    char ref_device[96], run_device[96]; /* first source's device name, "" unknown */
    uint32_t ref_rows, run_rows;   /* finished step rows */
    uint32_t ref_unmatched, run_unmatched; /* step rows of classes the other run lacks */
    teller_diff_class  *classes;  size_t nclasses;  /* matched classes: changed first, then by |run_ns - ref_ns| */
    teller_diff_change *changes;  size_t nchanges;  /* changed first, then within the noise; in each, causes
                                                     * before waits, then worst first (|run_ns - ref_ns| on
                                                     * its rank) */
    teller_diff_kernel *added;    size_t nadded;    /* kernels of the run alone, most time first */
    teller_diff_kernel *gone;     size_t ngone;     /* kernels of the reference alone */
    teller_diff_rank   *ranks;    size_t nranks;    /* per class and rank, worst first */
} teller_diff;

/* Compares run with ref (both tree-built). Runs teller_diff_check first;
 * the diff is computed whether or not they are comparable (the caller
 * decides, `teller diff --force`). *out is malloc'd: teller_diff_free.
 * TELLER_ERR_NOMEM when out of memory. */
teller_status teller_diff_compute(const teller_store *ref, const teller_store *run, teller_diff **out,
                                  teller_error *err);
void teller_diff_free(teller_diff *d);

/* Writes d as one JSON object (docs/DIFF.md has the schema); strings
 * escaped (textout.h). */
void teller_diff_json(const teller_diff *d, FILE *out);

#ifdef __cplusplus
}
#endif
#endif
