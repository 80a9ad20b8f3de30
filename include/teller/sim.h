/*
 * sim.h - the workload simulator with fault injection (`teller simulate`).
 *
 * Writes one case in the layout of ../shared/BENCHMARK.md: a gzip Kineto
 * trace per global rank, a service log per node and truth.json. The
 * physics (continuous batching, per-layer op sequences with real kernel and
 * op names, CUDA graphs for decode, collectives that end when the last rank
 * arrives, node clock offsets and drift) and every fault kind are described
 * in docs/SIMULATOR.md. Same options and seed, same bytes.
 */
#ifndef TELLER_SIM_H
#define TELLER_SIM_H

#include <stdint.h>
#include "teller/error.h"
#include "teller/fault.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct teller_sim_opts {
    int         nodes;          /* >= 1 */
    int         gpus_per_node;  /* >= 1 */
    int         tp, pp;         /* a replica's tensor- and pipeline-parallel sizes */
    int         dp;             /* data-parallel replicas, each its own tp x pp group of consecutive
                                 * ranks, requests spread over them; tp * pp * dp == nodes * gpus_per_node */
    int         steps;          /* >= 1 */
    const char *model;          /* "8b", "70b", "moe" */
    const char *engine;         /* "vllm" or "sglang" */
    uint32_t    faults;         /* bit (1 << teller_fault) per allowed kind; 0: none */
    double      fault_rate;     /* share of faulty steps, 0..1 */
    double      severity;       /* scales fault magnitudes; 1.0 is the default */
    uint64_t    seed;
    int         log_capture;    /* 1: each log line as `teller run` captures it, "<epoch ns> " in
                                 * front (the node's clock when it was written); 0 (default): bare */
    int         hang_abort_comm; /* nccl_hang as TORCH_NCCL_ASYNC_ERROR_HANDLING=2 leaves it: the watchdog
                                  * aborts the communicator, the waiting kernels end and the process
                                  * records them; 0 (default, PyTorch's 3): the process is taken down,
                                  * and what was still running then (the waiting ranks' collective, their
                                  * synchronize, the step's annotation) is never written */
    int         nccl_only;      /* 1: every all-reduce through NCCL, as with vLLM's
                                 * --disable-custom-all-reduce; 0 (default): the engine's custom all-reduce
                                 * serves those under 8 MiB of a tensor-parallel group inside one node */
} teller_sim_opts;

teller_sim_opts teller_sim_defaults(void);

/* Checks the options; TELLER_ERR_ARG with a message when impossible. */
teller_status teller_sim_check(const teller_sim_opts *o, teller_error *err);

/* Simulates one case into dir (created if missing). */
teller_status teller_simulate(const teller_sim_opts *o, const char *dir, teller_error *err);

/* Simulates n cases into dir/case_0000 ..., each with a workload and fault
 * mix drawn from base->seed; base gives the fault set, rate and severity,
 * and with keep_topology its nodes, GPUs, tp, pp and dp (the mix draws them
 * all the same, so that a corpus keeps every other draw). */
teller_status teller_simulate_corpus(const teller_sim_opts *base, int keep_topology, int n, const char *dir,
                                     teller_error *err);

#ifdef __cplusplus
}
#endif
#endif
