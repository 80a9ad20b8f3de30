/*
 * fault.c - the one table of fault kinds (see fault.h): every fact of a
 * kind that more than one module uses, in one row per kind. What a kind
 * does to a timeline is in the simulator's and teller perturb's own rows
 * (src/sim/sim.c k_effects, src/perturb/perturb.c k_kinds).
 */
#include <stdio.h>
#include <string.h>

#include "teller/fault.h"

static const teller_fault_def k_faults[TELLER_FAULT_COUNT] = {
    [TELLER_FAULT_NONE] = {.name = "no_error", .type = "no_error", .view = "", .what = "rank %d"},
    [TELLER_FAULT_SLOW_LINK] =
        {
            .name = "slow_link",
            .type = "communication",
            .view = "horizontal",
            .what = "the inter-node link of node %d degraded, so cross-node transfers slowed down for every rank in "
                    "them",
            .by_node = 1,
            .slow = {3.0, 9.0},     /* a transfer that crosses nodes and touches the node */
            .add_ns = {0.3e6, 2e6}, /* per such transfer: retransmit timeouts */
            .sim = {.at = TELLER_FAULT_AT_NODE, .needs = TELLER_FAULT_NEEDS_CROSS},
        },
    [TELLER_FAULT_NCCL_HANG] =
        {
            .name = "nccl_hang",
            .type = "communication",
            .view = "horizontal",
            .what = "rank %d never launched its collective, so the other ranks blocked until the NCCL watchdog fired",
            .logged = 1,
            .ends_run = 1, /* its size is the watchdog's, TELLER_FAULT_WATCHDOG_NS */
            .sim = {.needs = TELLER_FAULT_NEEDS_TP},
        },
    [TELLER_FAULT_PP_SEND_DELAY] =
        {
            .name = "pp_send_delay",
            .type = "communication",
            .view = "horizontal",
            .what = "the pipeline send of rank %d stalled and the next stage idled waiting for it",
            .add_ns = {2e6, 12e6}, /* on one send */
            .sim = {.at = TELLER_FAULT_AT_SENDER, .needs = TELLER_FAULT_NEEDS_PP},
        },
    [TELLER_FAULT_GPU_THROTTLE] =
        {
            .name = "gpu_throttle",
            .type = "kernel",
            .view = "horizontal",
            .what = "GPU of rank %d ran every kernel slower (throttled clocks)",
            .slow = {0.35, 1.0}, /* every kernel of the rank */
        },
    [TELLER_FAULT_KERNEL_REGRESSION] =
        {
            .name = "kernel_regression",
            .type = "kernel",
            .view = "vertical",
            .what = "one kernel regressed on rank %d",
            .slow = {3.0, 9.0}, /* every instance of one kernel name on the rank */
        },
    [TELLER_FAULT_LAUNCH_LATENCY] =
        {
            .name = "launch_latency",
            .type = "driver_library",
            .view = "vertical",
            .what = "kernel launch calls on rank %d became slow and the GPU idled between kernels",
            .add_ns = {25e3, 90e3}, /* per launch call */
            .jitter = 0.3,
        },
    [TELLER_FAULT_SYNC_STALL] =
        {
            .name = "sync_stall",
            .type = "driver_library",
            .view = "vertical",
            .what = "a stream synchronize on rank %d blocked far longer than usual",
            .add_ns = {4e6, 30e6}, /* on a synchronize, after the GPU is done */
            .jitter = 0.2,
        },
    [TELLER_FAULT_MALLOC_STORM] =
        {
            .name = "malloc_storm",
            .type = "driver_library",
            .view = "vertical",
            .what = "the caching allocator on rank %d missed, causing many slow cudaMalloc calls",
            .add_ns = {150e3, 900e3}, /* per allocation call */
            .share = {0.2, 1.0},
            .jitter = 0.4,
        },
    [TELLER_FAULT_PCIE_DEGRADATION] =
        {
            .name = "pcie_degradation",
            .type = "memory",
            .view = "vertical",
            .what = "host-device copies on rank %d slowed down (PCIe degradation)",
            .slow = {8.0, 30.0}, /* every host-device copy of the rank */
        },
    [TELLER_FAULT_KV_SWAP] =
        {
            .name = "kv_swap",
            .type = "memory",
            .view = "vertical",
            .what = "KV cache pressure swapped blocks to host memory (rank %d leads)",
            .logged = 1,
            .sim = {.at = TELLER_FAULT_AT_LEAD, .copies = {1.0, 4.0}, .swap = {1.0, 3.0}},
        },
    [TELLER_FAULT_OOM] =
        {
            .name = "oom",
            .type = "memory",
            .view = "vertical",
            .what = "rank %d ran out of GPU memory, freed its cache and retried the step",
            .logged = 1,
            .sim = {.retry_ns = {1e6, 4e6}},
        },
    [TELLER_FAULT_CPU_CONTENTION] =
        {
            .name = "cpu_contention",
            .type = "scheduling",
            .view = "vertical",
            .what = "the host thread of rank %d was descheduled, delaying its kernel launches",
            .add_ns = {0.6e6, 3e6}, /* the size each gap takes its share of */
            .share = {0.3, 1.0},
            .perturb = {.gaps = 5},
        },
    [TELLER_FAULT_PREEMPTION] =
        {
            .name = "preemption",
            .type = "scheduling",
            .view = "vertical",
            .what = "the scheduler preempted requests and recomputed them in this step (rank %d leads)",
            .logged = 1,
            .sim = {.at = TELLER_FAULT_AT_LEAD, .tokens = {1500, 4000}},
            .perturb = {.grow = {1500.0 / 4096, 1.0}},
        },
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

void teller_fault_sentence(teller_fault f, int where, int step, const char *took, const char *over, const char *aside,
                           const char *root_op, int root_rank, int root_node, const char *root_says, char *out,
                           unsigned long cap)
{
    char what[256];
    teller_fault_what(f, where, what, sizeof what);
    int w = snprintf(out, cap, "Step %d took %s, %s: %s (%s)%s.", step, took, over, what, teller_fault_name(f), aside);
    if (root_says && w >= 0 && (unsigned long)w < cap)
        snprintf(out + w, cap - (unsigned long)w, " The root operator is %s on rank %d (node %d), %s.",
                 root_op ? root_op : "?", root_rank, root_node, root_says);
}

void teller_fault_explain(teller_fault f, int where, int step, int64_t dur_ns, int64_t expected_ns,
                          int64_t excess_ns, const char *root_op, int root_rank, int root_node, int64_t root_ns,
                          char *out, unsigned long cap)
{
    double pct = expected_ns > 0 ? 100.0 * (double)excess_ns / (double)expected_ns : 0;
    char took[48], over[128], root_says[64];
    snprintf(took, sizeof took, "%.3f ms", (double)dur_ns / 1e6);
    snprintf(over, sizeof over, "%.3f ms (%.0f%%) longer than expected", (double)excess_ns / 1e6, pct);
    snprintf(root_says, sizeof root_says, "which took %.3f ms", (double)root_ns / 1e6);
    teller_fault_sentence(f, where, step, took, over, "", root_op, root_rank, root_node, root_says, out, cap);
}
