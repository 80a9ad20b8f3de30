/*
 * fault.h - the fault kinds of the benchmark (../shared/BENCHMARK.md), in
 * one table shared by the simulator, the diagnosis, the evaluator and every
 * other module that names a fault: its name, the paper's fault type, the
 * view it belongs to, and the reference sentence that says what happened.
 */
#ifndef TELLER_FAULT_H
#define TELLER_FAULT_H

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

#ifdef __cplusplus
}
#endif
#endif
