/*
 * fault.h - the fault kinds of the benchmark (../shared/BENCHMARK.md), in
 * one table shared by the simulator, the diagnosis, the evaluator and every
 * other module that names a fault: its name, the paper's fault type, the
 * view it belongs to, and the reference sentence that says what happened.
 *
 * What a kind does to a timeline is one row per kind in each of the two
 * modules that apply faults, indexed by teller_fault and sized from this
 * table: src/sim/sim.c `k_effects` (hooks into the simulated step) and
 * src/perturb/perturb.c `k_kinds` (edits of a recorded trace). The two
 * cannot be one: one builds a timeline, the other rewrites a given one.
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

typedef struct teller_fault_def {
    const char *name; /* "slow_link"; "no_error" for NONE */
    const char *type; /* the paper's label: no_error, communication, kernel, driver_library, memory, scheduling */
    const char *view; /* "horizontal" or "vertical"; "" for NONE */
    const char *what; /* what happened, one printf %d: the node for slow_link (by_node), else the root rank */
    int         by_node;
    int         logged;  /* the engine or PyTorch writes log lines for it (a fact an operator sees
                          * whatever it cost the step) */
    /* How big it is, drawn uniformly and scaled by the severity S, for the
     * simulator and teller perturb alike: the affected work runs
     * 1 + [slow_lo, slow_hi] * S times as long, and/or [add_lo_ns, add_hi_ns]
     * * S ns are added (per call, per transfer or per gap, as the kind
     * says). Zero where the kind has no such size of its own (a hang's is
     * the watchdog's; oom, kv_swap and preemption are sized in blocks and
     * tokens by the simulator). */
    double      slow_lo, slow_hi;
    double      add_lo_ns, add_hi_ns;
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
/* The reference explanation of one faulty step, the sentence frame truth
 * files carry: "Step 17 took 12.345 ms, 3.210 ms (35%) longer than
 * expected: <what> (<name>). The root operator is <op> on rank R (node N),
 * which took 1.234 ms." where is as for teller_fault_what. */
void teller_fault_explain(teller_fault f, int where, int step, int64_t dur_ns, int64_t expected_ns,
                          int64_t excess_ns, const char *root_op, int root_rank, int root_node, int64_t root_ns,
                          char *out, unsigned long cap);

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
