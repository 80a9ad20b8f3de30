/*
 * fault.h - the fault kinds of the benchmark (../shared/BENCHMARK.md), in
 * one table shared by the simulator, the diagnosis, the evaluator and every
 * other module that names a fault: its name, the paper's fault type, the
 * view it belongs to, the sentence that says what happened, how big it
 * is and what a run needs to carry it.
 *
 * What a kind does to a timeline is one row per kind in each of the two
 * modules that apply faults, indexed by teller_fault and sized from this
 * table: src/sim/sim.c `k_effects` (hooks into the simulated step) and
 * src/perturb/perturb.c `k_kinds` (edits of a recorded trace). The two
 * cannot be one: one builds a timeline, the other rewrites a given one.
 * Adding a kind is its value below, its row here and those two rows
 * (docs/SIMULATOR.md, "Adding a fault kind").
 */
#ifndef TELLER_FAULT_H
#define TELLER_FAULT_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum teller_fault {
    TELLER_FAULT_NONE = 0,
    TELLER_FAULT_SLOW_LINK,
    TELLER_FAULT_NCCL_HANG,
    TELLER_FAULT_PP_SEND_DELAY,
    TELLER_FAULT_GPU_THROTTLE,
    TELLER_FAULT_KERNEL_REGRESSION,
    TELLER_FAULT_LAUNCH_LATENCY,
    TELLER_FAULT_SYNC_STALL,
    TELLER_FAULT_MALLOC_STORM,
    TELLER_FAULT_PCIE_DEGRADATION,
    TELLER_FAULT_KV_SWAP,
    TELLER_FAULT_OOM,
    TELLER_FAULT_CPU_CONTENTION,
    TELLER_FAULT_PREEMPTION,
    TELLER_FAULT_COUNT
} teller_fault;

/* A size drawn uniformly from [lo, hi] for each faulty step; {0, 0}: the
 * kind has no such size. */
typedef struct teller_fault_range {
    double lo, hi;
} teller_fault_range;

/* The rank a simulated fault strikes. (teller perturb finds its own among
 * the events of the step that can carry the kind.) */
typedef enum teller_fault_target {
    TELLER_FAULT_AT_RANK = 0, /* a rank drawn among all */
    TELLER_FAULT_AT_NODE,     /* the first rank of a node drawn among all but node 0 */
    TELLER_FAULT_AT_SENDER,   /* a rank drawn among those whose pipeline stage sends to a next one */
    TELLER_FAULT_AT_LEAD      /* rank 0, where the engine's scheduler runs */
} teller_fault_target;

/* What a simulated run must have for the simulator to draw a kind
 * (teller_fault_def.sim.needs, a mask). */
#define TELLER_FAULT_NEEDS_CROSS 1u /* a collective or a pipeline send between two nodes */
#define TELLER_FAULT_NEEDS_TP    2u /* tensor-parallel collectives (tp > 1) */
#define TELLER_FAULT_NEEDS_PP    4u /* pipeline stages (pp > 1) */

/* One kind: every fact the modules that name, inject or grade a fault
 * share. Rows are written with designated initialisers (src/fault/fault.c);
 * a field left out is zero: the kind has no such size or need. */
typedef struct teller_fault_def {
    const char *name; /* "slow_link"; "no_error" for NONE */
    const char *type; /* the paper's label: no_error, communication, kernel, driver_library, memory, scheduling */
    const char *view; /* "horizontal" or "vertical"; "" for NONE */
    const char *what; /* what happened, one printf %d: the node for slow_link (by_node), else the root rank */
    int         by_node;
    int         logged;   /* the engine or PyTorch writes log lines for it (a fact an operator sees
                           * whatever it cost the step) */
    int         ends_run; /* nothing runs after the faulty step (nccl_hang): the simulator draws it
                           * in the run's second half only, so that the run has steps before it */
    /* How big it is, drawn per faulty step for the simulator and teller
     * perturb alike; S is the severity. */
    teller_fault_range slow;   /* the affected work runs 1 + x * S times as long (a factor) */
    teller_fault_range add_ns; /* x * S ns more (per call, transfer, gap or wait, as the kind says) */
    teller_fault_range share;  /* each event takes x of the add_ns drawn for the step (a share): the
                                * gaps of cpu_contention (both), the simulator's missed allocations of
                                * malloc_storm */
    double             jitter; /* each slowed call's added ns times a lognormal factor of this sigma:
                                * the simulator's launch_latency and sync_stall, teller perturb's
                                * launch_latency and malloc_storm; 0: none */
    /* The simulator's own (src/sim/sim.c, pick_fault) */
    struct {
        teller_fault_target at;
        uint32_t            needs;     /* TELLER_FAULT_NEEDS_* */
        teller_fault_range  tokens;    /* preemption: x * S prefill tokens recomputed (tokens) */
        teller_fault_range  retry_ns;  /* oom: x ns (not scaled) of host time before the step is retried */
        teller_fault_range  copies;    /* kv_swap: 2 + floor(x) block copies per rank (not scaled) */
        teller_fault_range  swap;      /* kv_swap: each copy moves x * S times 64 MiB for the stage,
                                        * split over its ranks (in 64 MiB units, kept to a millionth) */
    } sim;
    /* teller perturb's own (src/perturb/perturb.c) */
    struct {
        int                gaps; /* cpu_contention: 1 .. gaps host gaps per step (a count) */
        teller_fault_range grow; /* preemption: the step's compute kernels on each rank grow by x * S of
                                  * the most compute time a step of the run spent on it (a share; the
                                  * simulator's tokens over its 4096-token budget) */
    } perturb;
} teller_fault_def;

/* The definition of f; NONE's for a value out of range. Static storage. */
const teller_fault_def *teller_fault_def_of(teller_fault f);
const char *teller_fault_name(teller_fault f);
const char *teller_fault_type(teller_fault f);
const char *teller_fault_view(teller_fault f);
/* Parses a fault name (not "no_error"); TELLER_FAULT_COUNT when unknown. */
teller_fault teller_fault_parse(const char *name);
/* "the inter-node link of node 1 degraded ..." into out (cap bytes);
 * where is the node for a by_node kind, else the rank. */
void teller_fault_what(teller_fault f, int where, char *out, unsigned long cap);
/* The one sentence frame of an explanation, around texts the caller
 * formatted: "Step <step> took <took>, <over>: <what> (<name>)<aside>."
 * and, unless root_says is NULL, " The root operator is <root_op> on rank
 * R (node N), <root_says>." into out (cap bytes); where is as for
 * teller_fault_what, root_op NULL is "?". Truth files and the diagnosis
 * both say a step's fault through it. */
void teller_fault_sentence(teller_fault f, int where, int step, const char *took, const char *over, const char *aside,
                           const char *root_op, int root_rank, int root_node, const char *root_says, char *out,
                           unsigned long cap);
/* The reference explanation of one faulty step that truth files carry:
 * teller_fault_sentence with "12.345 ms" for took, "3.210 ms (35%) longer
 * than expected" for over and "which took 1.234 ms" for root_says. */
void teller_fault_explain(teller_fault f, int where, int step, int64_t dur_ns, int64_t expected_ns,
                          int64_t excess_ns, const char *root_op, int root_rank, int root_node, int64_t root_ns,
                          char *out, unsigned long cap);

/* How long the peers of a collective that a rank never launched wait
 * before PyTorch's NCCL watchdog fires (its default timeout, 10 min). */
#define TELLER_FAULT_WATCHDOG_NS 600000000000LL

/* The share of a step's clean duration that an injected fault must cost
 * before the step counts as abnormal, and the floor in ns under which no
 * cost counts: a fault that moved the step by less is within the noise
 * steps have anyway (the diagnosis judges findings on the same scale). */
#define TELLER_FAULT_MATERIAL_SHARE 0.01
#define TELLER_FAULT_MATERIAL_NS    20000
/* Whether a fault of kind f that made a step excess_ns longer than its
 * clean duration clean_ns makes the step abnormal: a logged kind always,
 * another when its cost is material (the two figures above). */
int teller_fault_material(teller_fault f, long long excess_ns, long long clean_ns);

#ifdef __cplusplus
}
#endif
#endif
