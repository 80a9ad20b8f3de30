/*
 * fault.c - the one table of fault kinds (see fault.h).
 */
#include <stdio.h>
#include <string.h>

#include "teller/fault.h"

static const teller_fault_def k_faults[TELLER_FAULT_COUNT] = {
    {"no_error", "no_error", "", "rank %d", 0, 0, 0, 0, 0, 0},
    {"slow_link", "communication", "horizontal",
     "the inter-node link of node %d degraded, so cross-node transfers slowed down for every rank in them", 1, 0,
     3.0, 9.0, 0.3e6, 2e6},
    {"nccl_hang", "communication", "horizontal",
     "rank %d never launched its collective, so the other ranks blocked until the NCCL watchdog fired", 0, 1,
     0, 0, 0, 0},
    {"pp_send_delay", "communication", "horizontal",
     "the pipeline send of rank %d stalled and the next stage idled waiting for it", 0, 0, 0, 0, 2e6, 12e6},
    {"gpu_throttle", "kernel", "horizontal",
     "GPU of rank %d ran every kernel slower (throttled clocks)", 0, 0,
     0.35, 1.0, 0, 0},
    {"kernel_regression", "kernel", "vertical", "one kernel regressed on rank %d", 0, 0, 3.0, 9.0, 0, 0},
    {"launch_latency", "driver_library", "vertical",
     "kernel launch calls on rank %d became slow and the GPU idled between kernels", 0, 0, 0, 0, 25e3, 90e3},
    {"sync_stall", "driver_library", "vertical", "a stream synchronize on rank %d blocked far longer than usual", 0, 0,
     0, 0, 4e6, 30e6},
    {"malloc_storm", "driver_library", "vertical",
     "the caching allocator on rank %d missed, causing many slow cudaMalloc calls", 0, 0, 0, 0, 150e3, 900e3},
    {"pcie_degradation", "memory", "vertical", "host-device copies on rank %d slowed down (PCIe degradation)", 0, 0,
     8.0, 30.0, 0, 0},
    {"kv_swap", "memory", "vertical", "KV cache pressure swapped blocks to host memory (rank %d leads)", 0, 1,
     0, 0, 0, 0},
    {"oom", "memory", "vertical", "rank %d ran out of GPU memory, freed its cache and retried the step", 0, 1,
     0, 0, 0, 0},
    {"cpu_contention", "scheduling", "vertical",
     "the host thread of rank %d was descheduled, delaying its kernel launches", 0, 0, 0, 0, 0.6e6, 3e6},
    {"preemption", "scheduling", "vertical",
     "the scheduler preempted requests and recomputed them in this step (rank %d leads)", 0, 1, 0, 0, 0, 0},
};

const teller_fault_def *teller_fault_def_of(teller_fault f)
{
    return &k_faults[(unsigned)f < TELLER_FAULT_COUNT ? f : TELLER_FAULT_NONE];
}

const char *teller_fault_name(teller_fault f) { return teller_fault_def_of(f)->name; }
const char *teller_fault_type(teller_fault f) { return teller_fault_def_of(f)->type; }
const char *teller_fault_view(teller_fault f) { return teller_fault_def_of(f)->view; }

teller_fault teller_fault_parse(const char *name)
{
    for (int f = 1; f < TELLER_FAULT_COUNT; f++)
        if (!strcmp(name, k_faults[f].name))
            return (teller_fault)f;
    return TELLER_FAULT_COUNT;
}

void teller_fault_what(teller_fault f, int where, char *out, unsigned long cap)
{
    snprintf(out, cap, teller_fault_def_of(f)->what, where);
}

int teller_fault_material(teller_fault f, long long excess_ns, long long clean_ns)
{
    if (f == TELLER_FAULT_NONE || (unsigned)f >= TELLER_FAULT_COUNT)
        return 0;
    if (k_faults[f].logged)
        return 1;
    return excess_ns >= TELLER_FAULT_MATERIAL_NS && (double)excess_ns >= TELLER_FAULT_MATERIAL_SHARE * (double)clean_ns;
}

void teller_fault_explain(teller_fault f, int where, int step, int64_t dur_ns, int64_t expected_ns,
                          int64_t excess_ns, const char *root_op, int root_rank, int root_node, int64_t root_ns,
                          char *out, unsigned long cap)
{
    double ex = (double)excess_ns / 1e6, dur = (double)dur_ns / 1e6;
    double pct = expected_ns > 0 ? 100.0 * (double)excess_ns / (double)expected_ns : 0;
    char head[256];
    teller_fault_what(f, where, head, sizeof head);
    snprintf(out, cap,
             "Step %d took %.3f ms, %.3f ms (%.0f%%) longer than expected: %s (%s). The root operator is %s on rank %d "
             "(node %d), which took %.3f ms.",
             step, dur, ex, pct, head, teller_fault_name(f), root_op ? root_op : "?", root_rank, root_node,
             (double)root_ns / 1e6);
}
