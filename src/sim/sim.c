/*
 * sim.c - the serving simulator and fault injector. See include/teller/sim.h
 * and docs/SIMULATOR.md.
 *
 * One case is simulated in true time (ns). Each step:
 *   1. the scheduler (continuous batching, chunked prefill) picks the batch;
 *   2. every pipeline stage runs, its tensor-parallel ranks in lockstep op
 *      by op: host launches (eager steps) or one graph launch (pure decode
 *      steps), kernels queued on the stream, collectives that end for every
 *      member when the last one arrives plus the transfer time, pipeline
 *      send/recv between stages, then sampling and a stream sync;
 *   3. the step is simulated twice from the same random state, without and
 *      with its fault, so the truth knows the excess time the fault caused.
 * Events are written as Kineto JSON per rank on the rank's node clock
 * (offset and drift); log lines per node in the engines' formats.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zlib.h>

#include "teller/sim.h"
#include "sim_out.h"
#include "../util/fsutil.h"
#include "../util/rng.h"
#include "../util/vec.h"

/* ---- facts: names as real traces spell them (../shared/data/traces) ---- */

#define K_RMSNORM "void vllm::rms_norm_kernel<c10::BFloat16, 8, 2>(c10::BFloat16*, c10::BFloat16 const*, long, long, long, long, long, c10::BFloat16 const*, float, int, int)"
#define K_ADDNORM "std::enable_if<(((8)>(0)))&&vllm::_typeConvert<c10::BFloat16>::exists, void>::type vllm::fused_add_rms_norm_kernel<c10::BFloat16, 8>(c10::BFloat16*, long, c10::BFloat16*, c10::BFloat16 const*, float, int, int)"
#define K_ROTARY "void vllm::rotary_embedding_kernel<c10::BFloat16, true>(long const*, c10::BFloat16*, c10::BFloat16*, c10::BFloat16 const*, int, long, long, long, int, int, int)"
#define K_CACHE "void vllm::reshape_and_cache_flash_kernel<__nv_bfloat16, unsigned char, (vllm::Fp8KVCacheDataType)1>(__nv_bfloat16 const*, __nv_bfloat16 const*, unsigned char*, unsigned char*, long const*, long, long, long, long, long, int, int, int, float const*, float const*)"
#define K_FMHA "fmhaSm100aKernel_QkvE4m3OBfloat16H64PagedKvCausalP16VarSeqQ128Kv128PersistentContext"
#define K_GEMM_QKV "nvjet_tst_144x128_64x6_2x1_v_bz_bias_TNN"
#define K_GEMM_O "nvjet_tst_64x64_64x16_2x1_2cta_v_bz_bias_TNT"
#define K_GEMM_UP "nvjet_tst_64x16_64x16_2x4_2cta_h_bz_bias_TNT"
#define K_GEMM_HEAD "nvjet_tst_192x8_64x8_4x1_v_bz_TNT"
#define K_ACT "void vllm::act_and_mul_kernel<c10::BFloat16, &(c10::BFloat16 vllm::silu_kernel<c10::BFloat16>(c10::BFloat16 const&)), true>(c10::BFloat16*, c10::BFloat16 const*, int)"
#define K_GATHER "void at::native::vectorized_gather_kernel<16, long>(char*, char*, long*, int, long, long, long, long, bool)"
#define K_ARGMAX "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::ArgMaxOps<float>, unsigned int, long, 4> >(at::native::ReduceOp<float, at::native::ArgMaxOps<float>, unsigned int, long, 4>)"
#define K_MOE_QUANT "void tensorrt_llm::kernels::quantize_with_block_size<(tensorrt_llm::BlockScaleQuantizationType)2, __nv_bfloat16, 32, true>(int, int, int, int, __nv_bfloat16 const*, float const*, unsigned int*, unsigned int*, flashinfer::QuantizationSFLayout)"
#define K_MOE_ROUTE "void moe::dev::routing::routingRenormalize::routingIndicesHistogramScoresKernel<moe::dev::routing::routingRenormalize::KernelParams<__nv_bfloat16, __nv_bfloat16, 128, false, true, true> >(moe::dev::routing::routingRenormalize::KernelParams<__nv_bfloat16, __nv_bfloat16, 128, false, true, true>)"
#define K_MOE_OFFS "void moe::dev::routing::routingIndicesOffsetsKernel<moe::dev::routing::routingRenormalize::KernelParams<__nv_bfloat16, __nv_bfloat16, 128, false, true, true> >(moe::dev::routing::routingRenormalize::KernelParams<__nv_bfloat16, __nv_bfloat16, 128, false, true, true>)"
#define K_MOE_BMM1 "bmm_MxE4m3_MxE2m1MxE4m3_Fp32_t128x16x256u2_s3_et128x16_m128x16x32_cga1x1x1_16dp256b_rM_TN_transOut_schedP2x1x2x3_biasM_bN_tma_tmaOpt_clmp_swiGlu_dynBatch_sm100f"
#define K_MOE_BMM2 "bmm_Bfloat16_MxE2m1MxE4m3_Fp32_t128x16x256u2_s3_et128x16_m128x16x32_cga1x1x1_16dp256b_rM_TN_transOut_schedP2x1x2x3_biasM_bN_tmaOpt_clmp_dynBatch_sm100f"
#define K_MOE_FIN "void moe::dev::finalize::finalizeKernelVecLoad<moe::dev::finalize::KernelParams<cutlass::bfloat16_t, cutlass::bfloat16_t, 4, true> >(moe::dev::finalize::KernelParams<cutlass::bfloat16_t, cutlass::bfloat16_t, 4, true>)"
#define K_ALLREDUCE "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)"
/* The engines' custom all-reduce (vLLM csrc/custom_all_reduce.cuh; SGLang's
 * sgl-kernel csrc/allreduce/custom_all_reduce.cuh, the same kernels in the
 * same namespace), as the profiler demangles them: templated on the dtype
 * and the GPU count, launched with min(36, packs / 512) blocks of 512
 * threads (a pack: 16 bytes) on the current (compute) stream. */
#define K_CAR_FMT "void vllm::cross_device_reduce_%s<__nv_bfloat16, %d>(vllm::RankData*, vllm::RankSignals, vllm::Signal*, __nv_bfloat16*, int, int)"
/* The engines use it for all-reduces below this size (vLLM's and SGLang's
 * CustomAllreduce max_size: 8 MiB), inside one node, NCCL otherwise. */
#define CAR_MAX_BYTES (8.0 * 1024 * 1024)
#define K_ALLGATHER "ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)"
#define K_SENDRECV "ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)"
#define M_H2D "Memcpy HtoD (Pinned -> Device)"
#define M_D2H "Memcpy DtoH (Device -> Pinned)"

enum { STREAM_COMPUTE = 7, STREAM_NCCL = 13, STREAM_P2P = 15 };

/* ---- models ---- */

typedef struct model {
    const char *name, *hf;
    int    layers, hidden, inter, heads, kv_heads, vocab, experts, topk;
} model;

static const model k_models[] = {
    {"8b", "meta-llama/Llama-3.1-8B-Instruct", 32, 4096, 14336, 32, 8, 128256, 0, 0},
    {"70b", "meta-llama/Llama-3.1-70B-Instruct", 80, 8192, 28672, 64, 8, 128256, 0, 0},
    {"moe", "mistralai/Mixtral-8x7B-Instruct-v0.1", 32, 4096, 14336, 32, 8, 32000, 8, 2},
};

static const model *find_model(const char *n)
{
    for (size_t i = 0; i < sizeof k_models / sizeof *k_models; i++)
        if (!strcmp(k_models[i].name, n))
            return &k_models[i];
    return NULL;
}

/* H100-class throughput the durations are scaled by */
#define PEAK_FLOPS 6.0e14 /* effective bf16 flop/s */
#define HBM_BW     2.6e12 /* bytes/s */
#define NVLINK_BW  1.5e11
#define NET_BW     2.2e10 /* one 200 Gb/s NIC per GPU, effective */
#define PCIE_BW    2.2e10

/* ---- requests and the scheduler ---- */

typedef struct request {
    char     id[48];
    int64_t  arrival;
    int      prompt, output;
    int      prefilled, generated;
    int      state; /* 0 not arrived/waiting, 1 running, 2 finished */
    int      logged;
    int      abnormal;
    uint32_t *steps;
    size_t   nsteps, cap;
} request;

/* ---- one op of a step ---- */

enum op_kind { OP_COMPUTE, OP_ALLREDUCE, OP_ALLGATHER, OP_H2D, OP_D2H, OP_RECV, OP_SEND };

typedef struct op {
    uint8_t     kind;
    uint8_t     nested;  /* 1: aten::linear > t > transpose > as_strided, addmm */
    const char *cpu;     /* outer cpu op; NULL for none */
    const char *api;     /* launch call */
    const char *kernel;  /* kernel or copy name */
    double      gpu_ns;  /* base duration, or bytes for comm/copies */
    double      host_ns; /* host time of the cpu op around the launch */
    int         in_graph;
    int         custom;  /* an all-reduce through the engine's custom all-reduce, not NCCL */
} op;

/* ---- a fault instance ---- */

typedef struct fault_inst {
    teller_fault kind;
    int          rank;     /* target rank (or first rank of the node) */
    int          node;
    /* its sizes, drawn by pick_fault from the kind's row of the fault table (fault.h) */
    double       factor;   /* slow: the slowdown factor */
    int64_t      extra;    /* add_ns: the added ns */
    int          tokens;   /* sim.tokens: prefill tokens recomputed */
    int64_t      retry_ns; /* sim.retry_ns */
    double       copies;   /* sim.copies */
    int64_t      swap;     /* sim.swap, in millionths of 64 MiB */
    const char  *kernel;   /* kernel_regression target */
    int          coll;     /* nccl_hang: index of the collective in the step */
} fault_inst;

/* ---- the case ---- */

typedef struct rank_st {
    int64_t  host, gpu;
    uint32_t corr, ext;
    int      pid;
    obuf     out;
    int      first_event;
    uint32_t pg_seq;      /* c10d sequence number of the TP group */
} rank_st;

typedef struct logline {
    int64_t  t;
    int      node;
    int      step; /* the step it was written for, -1 for start-up lines */
    uint32_t line; /* 1-based line in its node's file, set when written */
    char    *text;
} logline;

/* What one step's simulation measured, for the truth. */
typedef struct step_out {
    int64_t start, end;
    int64_t root_ns;          /* duration of the root op on the root rank */
    const char *root_op;      /* name of the root operator (cpu_contention: the op after the longest gap,
                               * root_ns that gap) */
    const char *root_layer;
    int     hung;
    char    marker[128];      /* the step annotation's text */
} step_out;

/* What the truth says of one step. */
typedef struct truth_step {
    int         abnormal;
    fault_inst  f;
    int64_t     dur, clean, excess, root_ns;
    const char *root_op, *root_layer;
    int         root_rank;
} truth_step;

/* A rank's counters, kept across the clean counterfactual of a faulty step. */
typedef struct saved_rank {
    int64_t  host, gpu;
    uint32_t corr, ext, pg_seq;
} saved_rank;

typedef struct sim {
    teller_sim_opts o;
    const model    *m;
    int             world;
    rng             r;
    rng             fr;        /* a fault's own draws, seeded from r when it is picked, so that */
                               /* a faulty step and its counterfactual draw the same jitter from r */
    rank_st        *ranks;
    int64_t        *node_off;
    double         *node_drift;
    int64_t         t0, base_ns;
    request        *reqs;
    int             nreqs;
    logline        *logs;
    size_t          nlogs, logs_cap;
    int             emit;      /* 0 while simulating the clean counterfactual */
    int             cur_step;  /* the step being simulated, -1 before the first */
    int             cur_tokens; /* tokens of the step's batch: kernels' grids follow it */
    const char     *dir;
    int             nomem;     /* an allocation failed: the case is incomplete, the run fails */
    saved_rank     *saved;     /* per rank, while the counterfactual runs */
    truth_step     *ts;        /* per step */
    char          (*markers)[128]; /* per faulty step, its annotation's text (a root that is the step) */
    int             car;       /* the tensor-parallel group is inside one node of 2, 4, 6 or 8 GPUs: the
                                * engine's custom all-reduce serves its small all-reduces */
    char            car_name[2][192]; /* its one-stage and two-stage kernels for the group's size */
    struct batch   *batches;   /* per replica, the step's */
} sim;

static int rank_node(const sim *S, int r) { return r / S->o.gpus_per_node; }
/* Ranks are numbered replica by replica (dp of them), each replica's stage
 * by stage, each stage's tensor-parallel ranks in a row: a stage is
 * numbered across the run (replica x pp + its place in its pipeline). */
static int rank_stage(const sim *S, int r) { return r / S->o.tp; }
static int stage_in_pipe(const sim *S, int stage) { return stage % S->o.pp; }
static int rank_replica(const sim *S, int r) { return r / (S->o.tp * S->o.pp); }

/* A pipeline stage's share of the model's layers. */
static int stage_layers(const sim *S, int stage)
{
    int st = stage_in_pipe(S, stage);
    return S->m->layers / S->o.pp + (st < S->m->layers % S->o.pp ? 1 : 0);
}

/* true time -> the rank's node clock */
static int64_t local_ns(const sim *S, int node, int64_t t)
{
    return t + S->node_off[node] + (int64_t)(S->node_drift[node] * (double)(t - S->t0));
}

/* ---- trace output ---- */

static void ev_begin(sim *S, int r, const char *ph, const char *cat, const char *name, int gpu, int tid, int64_t t,
                     int64_t dur)
{
    rank_st *R = &S->ranks[r];
    obuf *o = &R->out;
    ob_s(o, R->first_event ? "\n  {\"ph\": \"" : ",\n  {\"ph\": \"");
    R->first_event = 0;
    ob_s(o, ph);
    ob_s(o, "\", \"cat\": \"");
    ob_s(o, cat);
    ob_s(o, "\", \"name\": ");
    ob_jstr(o, name);
    ob_s(o, ", \"pid\": ");
    ob_i64(o, gpu ? r % S->o.gpus_per_node : R->pid);
    ob_s(o, ", \"tid\": ");
    ob_i64(o, gpu ? tid : R->pid);
    ob_s(o, ", \"ts\": ");
    ob_us(o, local_ns(S, rank_node(S, r), t) - S->base_ns);
    if (ph[0] == 'X') {
        ob_s(o, ", \"dur\": ");
        ob_us(o, dur < 0 ? 0 : dur);
    }
}

static void ev_end(sim *S, int r) { ob_s(&S->ranks[r].out, "}"); }

/* a CPU range with an External id */
static void ev_cpu(sim *S, int r, const char *cat, const char *name, int64_t t, int64_t dur, uint32_t ext)
{
    if (!S->emit)
        return;
    ev_begin(S, r, "X", cat, name, 0, 0, t, dur);
    if (ext) {
        ob_s(&S->ranks[r].out, ", \"args\": {\"External id\": ");
        ob_i64(&S->ranks[r].out, ext);
        ob_s(&S->ranks[r].out, "}");
    }
    ev_end(S, r);
}

static void ev_api(sim *S, int r, const char *cat, const char *name, int64_t t, int64_t dur, uint32_t corr,
                   uint32_t ext, int cbid)
{
    if (!S->emit)
        return;
    ev_begin(S, r, "X", cat, name, 0, 0, t, dur);
    ob_fmt(&S->ranks[r].out, ", \"args\": {\"External id\": %u, \"cbid\": %d, \"correlation\": %u}", ext, cbid, corr);
    ev_end(S, r);
}

/* comm metadata as Kineto copies it from record_param_comms. Process
 * groups are named as PyTorch names them, by creation order on every
 * rank: "0" the world, then one tensor-parallel group per stage (of every
 * replica, rank_stage's numbering), then one pipeline group per replica
 * and tensor-parallel index. */
typedef struct comm_md {
    const char *coll;
    int64_t     in_n, out_n;
    int         group_size, group_start, group_stride, pg;
} comm_md;

static void put_comm_md(sim *S, obuf *o, const comm_md *c)
{
    ob_fmt(o, ", \"Collective name\": \"%s\", \"In msg nelems\": %lld, \"Out msg nelems\": %lld, \"Group size\": %d, "
              "\"dtype\": \"BFloat16\", \"Process Group Name\": \"%d\", \"Process Group Description\": \"undefined\", "
              "\"Process Group Ranks\": \"[",
           c->coll, (long long)c->in_n, (long long)c->out_n, c->group_size, c->pg);
    for (int i = 0; i < c->group_size; i++)
        ob_fmt(o, "%s%d", i ? ", " : "", c->group_start + i * c->group_stride);
    ob_s(o, "]\"");
    (void)S;
}

/* A GPU op; a kernel's grid and block: grid 0 for the default (a tile
 * per 64 tokens and 16 column blocks, as a GEMM's grid grows, 256 threads). */
static void ev_gpu_grid(sim *S, int r, const char *cat, const char *name, int stream, int64_t t, int64_t dur,
                        uint32_t corr, uint32_t ext, int64_t bytes, const comm_md *md, int grid, int block)
{
    if (!S->emit)
        return;
    ev_begin(S, r, "X", cat, name, 1, stream, t, dur);
    obuf *o = &S->ranks[r].out;
    ob_fmt(o, ", \"args\": {\"External id\": %u, \"device\": %d, \"context\": 1, \"stream\": %d, \"correlation\": %u", ext,
           r % S->o.gpus_per_node, stream, corr);
    if (bytes >= 0)
        ob_fmt(o, ", \"bytes\": %lld", (long long)bytes);
    if (!strcmp(cat, "kernel"))
        ob_fmt(o, ", \"grid\": [%d, 1, 1], \"block\": [%d, 1, 1]", grid ? grid : 16 * ((S->cur_tokens + 63) / 64),
               grid ? block : 256);
    if (md)
        put_comm_md(S, o, md);
    ob_s(o, "}");
    ev_end(S, r);
}

static void ev_gpu(sim *S, int r, const char *cat, const char *name, int stream, int64_t t, int64_t dur, uint32_t corr,
                   uint32_t ext, int64_t bytes, const comm_md *md)
{
    ev_gpu_grid(S, r, cat, name, stream, t, dur, corr, ext, bytes, md, 0, 0);
}

/* ---- logs ---- */

static void add_log(sim *S, int node, int64_t t, const char *text)
{
    if (!S->emit)
        return;
    size_t n = strlen(text);
    char *c = TELLER_GROW(S->logs, S->logs_cap, S->nlogs + 1) ? NULL : malloc(n + 1);
    if (!c) {
        S->nomem = 1;
        return;
    }
    memcpy(c, text, n + 1);
    S->logs[S->nlogs++] = (logline){t, node, S->cur_step, 0, c};
}

/* The engine's log header at true time t on a node. proc is a process
 * prefix like "(VllmWorker rank=1 pid=7)" or NULL. */
static void log_header(const sim *S, int node, int64_t t, const char *level, const char *src, const char *proc,
                       int tp_rank, char *out, size_t cap)
{
    int64_t l = local_ns(S, node, t);
    time_t sec = (time_t)(l / 1000000000);
    struct tm tm;
    gmtime_r(&sec, &tm);
    if (!strcmp(S->o.engine, "sglang")) {
        if (tp_rank >= 0)
            snprintf(out, cap, "[%04d-%02d-%02d %02d:%02d:%02d TP%d] ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                     tm.tm_hour, tm.tm_min, tm.tm_sec, tp_rank);
        else
            snprintf(out, cap, "[%04d-%02d-%02d %02d:%02d:%02d] ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                     tm.tm_hour, tm.tm_min, tm.tm_sec);
        return;
    }
    snprintf(out, cap, "%s%s%s %02d-%02d %02d:%02d:%02d [%s] ", proc ? proc : "", proc ? " " : "", level,
             tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, src);
}

static void log_engine(sim *S, int node, int64_t t, const char *level, const char *src, const char *proc, int tp_rank,
                       const char *msg)
{
    char line[2048], hdr[256];
    log_header(S, node, t, level, src, proc, tp_rank, hdr, sizeof hdr);
    snprintf(line, sizeof line, "%s%s", hdr, msg);
    add_log(S, node, t, line);
}

/* PyTorch ProcessGroupNCCL glog-style line of the rank's tensor-parallel
 * group, named as the trace names it (put_comm_md: 1 + the stage) */
static void log_pg(sim *S, int rank, int64_t t, const char *msg)
{
    int node = rank_node(S, rank);
    int64_t l = local_ns(S, node, t);
    time_t sec = (time_t)(l / 1000000000);
    struct tm tm;
    gmtime_r(&sec, &tm);
    char line[1024];
    snprintf(line, sizeof line, "[rank%d]:[E%02d%02d %02d:%02d:%02d.%09lld ProcessGroupNCCL.cpp:632] [PG ID %d PG GUID %d Rank %d] %s",
             rank, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (long long)(l % 1000000000),
             1 + rank_stage(S, rank), 1 + rank_stage(S, rank), rank % S->o.tp, msg);
    add_log(S, node, t, line);
}

static void worker_proc(const sim *S, int rank, char *out, size_t cap)
{
    if (!strcmp(S->o.engine, "vllm"))
        snprintf(out, cap, "(VllmWorker rank=%d pid=%d)", rank, S->ranks[rank].pid);
    else
        out[0] = 0;
}

/* ---- building a step's ops ---- */

typedef struct batch {
    int prefill_tokens, prefill_seqs, decode_seqs;
    int64_t decode_ctx; /* sum of context lengths of decode sequences */
    int64_t prefill_ctx; /* sum over prefill chunks of (chunk * context) */
    int graph;          /* pure decode: one CUDA graph launch */
} batch;

static double gemm_ns(double tokens, double k, double n, int tp)
{
    double flops = 2.0 * tokens * k * n / tp, bytes = 2.0 * k * n / tp + 2.0 * tokens * (k + n / tp);
    double t = flops / PEAK_FLOPS;
    double b = bytes / HBM_BW;
    return (t > b ? t : b) * 1e9 + 2500.0;
}

static double mem_ns(double bytes) { return bytes / HBM_BW * 1e9 + 1800.0; }

/* A tensor-parallel all-reduce of `bytes`: the engine's custom all-reduce
 * below its size limit (the one-stage kernel for two GPUs, or under 512 KiB
 * on four, 256 KiB on six or eight; vLLM's and sgl-kernel's
 * CustomAllreduce::allreduce), else NCCL's through record_param_comms. */
static size_t all_reduce(const sim *S, op *o, double bytes, int g)
{
    if (S->car && bytes < CAR_MAX_BYTES) {
        int tp = S->o.tp, one = tp == 2 || (tp <= 4 && bytes < 512 * 1024) || bytes < 256 * 1024;
        *o = (op){OP_ALLREDUCE, 0, !strcmp(S->o.engine, "sglang") ? "sgl_kernel::all_reduce" : "vllm::all_reduce",
                  "cudaLaunchKernel", S->car_name[one ? 0 : 1], bytes, 18000, g, 1};
        return 1;
    }
    *o = (op){OP_ALLREDUCE, 0, "record_param_comms", "cudaLaunchKernel", K_ALLREDUCE, bytes, 25000, g, 0};
    return 1;
}

static size_t build_ops(const sim *S, const batch *b, int stage, op *ops)
{
    const model *m = S->m;
    int tp = S->o.tp, pp = S->o.pp, at = stage_in_pipe(S, stage);
    double T = b->prefill_tokens + b->decode_seqs;
    double h = m->hidden, hd = (double)m->hidden / m->heads, kvh = m->kv_heads;
    int layers = stage_layers(S, stage);
    size_t n = 0;
    int g = b->graph;
#define ADD(...) (ops[n++] = (op){__VA_ARGS__, 0})
    ADD(OP_H2D, 0, "aten::copy_", "cudaMemcpyAsync", M_H2D, T * 16 + 4096, 9000, 0);
    ADD(OP_H2D, 0, "aten::copy_", "cudaMemcpyAsync", M_H2D, T * 8 + 2048, 7000, 0);
    if (at > 0)
        ADD(OP_RECV, 0, "record_param_comms", "cudaLaunchKernel", K_SENDRECV, T * h * 2, 12000, 0);
    else
        ADD(OP_COMPUTE, 0, "aten::embedding", "cudaLaunchKernel", K_GATHER, mem_ns(T * h * 2), 15000, g);
    for (int l = 0; l < layers; l++) {
        int first = at == 0 && l == 0;
        ADD(OP_COMPUTE, 0, first ? "_C::rms_norm" : "_C::fused_add_rms_norm", "cudaLaunchKernel",
            first ? K_RMSNORM : K_ADDNORM, mem_ns(T * h * 2 * 3), 14000, g);
        ADD(OP_COMPUTE, 1, "aten::linear", "cuLaunchKernelEx", K_GEMM_QKV,
            gemm_ns(T, h, h + 2 * kvh * hd, tp), 30000, g);
        ADD(OP_COMPUTE, 0, "_C::rotary_embedding", "cudaLaunchKernel", K_ROTARY, mem_ns(T * h * 2 * 2 / tp), 14000, g);
        ADD(OP_COMPUTE, 0, "vllm::unified_attention_with_output", "cudaLaunchKernel", K_CACHE,
            mem_ns(T * kvh * hd * 4 / tp), 20000, g);
        double attn = 4.0 * (double)b->prefill_ctx * h / tp / PEAK_FLOPS * 1e9 +
                      (double)b->decode_ctx * 2 * kvh * hd * 2 / tp / HBM_BW * 1e9 + 4000.0;
        ADD(OP_COMPUTE, 0, NULL, "cuLaunchKernelEx", K_FMHA, attn, 9000, g);
        ADD(OP_COMPUTE, 1, "aten::linear", "cuLaunchKernelEx", K_GEMM_O, gemm_ns(T, h, h, tp), 30000, g);
        if (tp > 1)
            n += all_reduce(S, ops + n, T * h * 2, g);
        ADD(OP_COMPUTE, 0, "_C::fused_add_rms_norm", "cudaLaunchKernel", K_ADDNORM, mem_ns(T * h * 2 * 3), 14000, g);
        if (m->experts) {
            double per = gemm_ns(T * m->topk / m->experts + 1, h, 2.0 * m->inter, tp);
            ADD(OP_COMPUTE, 0, "vllm::moe_forward", "cudaLaunchKernelExC", K_MOE_QUANT, mem_ns(T * h * 2), 40000, g);
            ADD(OP_COMPUTE, 0, NULL, "cudaLaunchKernelExC", K_MOE_ROUTE, mem_ns(T * m->experts * 4) + 2000, 9000, g);
            ADD(OP_COMPUTE, 0, NULL, "cudaLaunchKernelExC", K_MOE_OFFS, 3000, 9000, g);
            ADD(OP_COMPUTE, 0, NULL, "cuLaunchKernelEx", K_MOE_BMM1, per * m->experts * 0.6, 12000, g);
            ADD(OP_COMPUTE, 0, NULL, "cuLaunchKernelEx", K_MOE_BMM2, per * m->experts * 0.35, 12000, g);
            ADD(OP_COMPUTE, 0, NULL, "cudaLaunchKernelExC", K_MOE_FIN, mem_ns(T * h * 2 * m->topk), 9000, g);
        } else {
            ADD(OP_COMPUTE, 1, "aten::linear", "cuLaunchKernelEx", K_GEMM_UP, gemm_ns(T, h, 2.0 * m->inter, tp), 30000, g);
            ADD(OP_COMPUTE, 0, "_C::silu_and_mul", "cudaLaunchKernel", K_ACT, mem_ns(T * m->inter * 2 * 3 / tp), 14000, g);
            ADD(OP_COMPUTE, 1, "aten::linear", "cuLaunchKernelEx", K_GEMM_O, gemm_ns(T, m->inter, h, tp), 30000, g);
        }
        if (tp > 1)
            n += all_reduce(S, ops + n, T * h * 2, g);
    }
    if (at < pp - 1) {
        ADD(OP_SEND, 0, "record_param_comms", "cudaLaunchKernel", K_SENDRECV, T * h * 2, 12000, 0);
    } else {
        double seqs = b->prefill_seqs + b->decode_seqs;
        ADD(OP_COMPUTE, 0, "_C::fused_add_rms_norm", "cudaLaunchKernel", K_ADDNORM, mem_ns(seqs * h * 2 * 3), 14000, g);
        ADD(OP_COMPUTE, 1, "aten::linear", "cuLaunchKernelEx", K_GEMM_HEAD, gemm_ns(seqs, h, m->vocab, tp), 30000, g);
        if (tp > 1)
            ADD(OP_ALLGATHER, 0, "record_param_comms", "cudaLaunchKernel", K_ALLGATHER, seqs * m->vocab * 2.0 / tp,
                25000, g);
        ADD(OP_COMPUTE, 0, "aten::argmax", "cudaLaunchKernel", K_ARGMAX, mem_ns(seqs * m->vocab * 4), 16000, 0);
        ADD(OP_D2H, 0, "aten::copy_", "cudaMemcpyAsync", M_D2H, seqs * 8 + 64, 9000, 0);
    }
#undef ADD
    return n;
}

static size_t max_ops(const sim *S) { return (size_t)(S->m->layers / S->o.pp + 2) * 20 + 32; }

/* ---- simulating one step ---- */

typedef struct coll_state {
    int64_t arrive;
    uint32_t corr, ext;
    int64_t  launch_t;
} coll_state;

static const char *step_marker(const sim *S, const batch *b, char *buf, size_t cap)
{
    if (!strcmp(S->o.engine, "sglang")) {
        snprintf(buf, cap, "step[%s bs=%d]", b->prefill_seqs ? (b->decode_seqs ? "MIXED" : "EXTEND") : "DECODE",
                 b->prefill_seqs + b->decode_seqs);
    } else {
        snprintf(buf, cap, "execute_context_%d(%d)_generation_%d(%d)", b->prefill_seqs, b->prefill_tokens,
                 b->decode_seqs, b->decode_seqs);
    }
    return buf;
}

/* ---- what each fault does to a step ----
 *
 * sim_step below computes the clean timeline. A fault changes it only at the
 * points listed in sim_effect, through its own row of k_effects (indexed by
 * the kinds of include/teller/fault.h, whose row says how big the fault is
 * and where it can strike: pick_fault draws from it): a row fills the points
 * it acts at and leaves the others NULL, so adding a kind is its row in
 * fault.c, one row here and the hooks it names (docs/SIMULATOR.md, "Adding a
 * fault kind"). Each hook is called for the step's fault only, with the rank
 * in question; it decides whether that rank is affected and, where the
 * affected call is the step's root, records it in the step_out. Hooks draw
 * from the fault's own random state, so where sim_step calls them is part of
 * the output: same seed, same bytes. */

#define ROOT_NAMES 32
typedef struct fx {
    sim                    *S;
    const fault_inst       *F;
    const teller_fault_def *d; /* F's row of the fault table */
    step_out               *out;
    /* time per operator name of the ops a gpu_op fault slowed (root_time) */
    const char *name[ROOT_NAMES];
    int64_t     ns[ROOT_NAMES];
    int         n;
} fx;

/* A transfer: a collective among ranks first .. first + n - 1 (peer -1), or
 * a send from first to peer (n 2). */
typedef struct xfer_site {
    int first, n, peer;
    int cross; /* its ranks are on more than one node */
} xfer_site;

typedef struct sim_effect {
    /* Draws what the kind strikes beyond its rank (a collective, a kernel
     * name) into F, from S->r, when the fault is picked. */
    void (*pick)(sim *S, fault_inst *F);
    /* Pipeline stage st's ranks stand at the start of the forward (oom). */
    void (*stage_begin)(fx *c, int st);
    /* Rank r launches its CUDA graph at its host time with a call of *dur ns
     * (launch_latency, cpu_contention). */
    void (*graph_launch)(fx *c, int r, int64_t *dur);
    /* Rank r's host is about to run op p (cpu_contention). */
    void (*host_op)(fx *c, int r, const op *p);
    /* Rank r's launch call of op p lasts *dur ns (launch_latency). */
    void (*launch)(fx *c, int r, const op *p, int64_t *dur);
    /* Host time op p spends before its launch, from t, writing its own
     * events (malloc_storm); ext is the op's External id. */
    int64_t (*in_op)(fx *c, int r, const op *p, int64_t t, uint32_t ext);
    /* Op p (kernel or copy) on rank r runs *d ns before jitter; returns 1
     * when the fault slowed it (gpu_throttle, kernel_regression,
     * pcie_degradation): the root is the name whose slowed ops took the
     * most time (root_time). */
    int (*gpu_op)(fx *c, int r, const op *p, double *d);
    /* Whether rank r never launches the stage's coll-th collective (nccl_hang). */
    int (*skips_coll)(fx *c, int r, int coll);
    /* The transfer time t (ns) of x (slow_link, pp_send_delay). */
    double (*transfer)(fx *c, const xfer_site *x, double t);
    /* Rank r's communication kernel (a collective: peer -1; a send to peer)
     * ran dur ns (the root of slow_link, pp_send_delay). */
    void (*comm_done)(fx *c, int r, int peer, const char *kernel, int64_t dur);
    /* Stage st has launched its last op and not yet synchronised (kv_swap). */
    void (*stage_end)(fx *c, int st);
    /* Rank r's stream synchronize, called at t, returns at *end (sync_stall). */
    void (*sync)(fx *c, int r, int64_t t, int64_t *end);
    /* The engine's log lines of step k, which starts at t (preemption, kv_swap). */
    void (*log)(sim *S, const fault_inst *F, int k, int64_t t);
    int         recomputes; /* the step recomputes F->extra prefill tokens (preemption) */
    int         root_is_step; /* the root operator is the step annotation (preemption) */
    const char *root_op;    /* the root when the step never reached the faulty call */
    const char *root_layer; /* NULL: RUNTIME for a cuda* root, else KERNEL */
} sim_effect;

static int on_rank(const fx *c, int r) { return c->F->rank == r; }

/* A slowed op of a gpu_op fault ran dur ns: the root is the operator name
 * whose slowed ops took the most time in the step, as a profiler shows
 * them (the GEMMs of two layers' projections with one tile shape are one
 * kernel name), and root_ns that time. */
static void root_time(fx *c, const char *name, int64_t dur)
{
    int i = 0;
    while (i < c->n && strcmp(c->name[i], name))
        i++;
    if (i == c->n) {
        if (c->n == ROOT_NAMES)
            return;
        c->name[c->n] = name;
        c->ns[c->n++] = 0;
    }
    c->ns[i] += dur;
    step_out *o = c->out;
    if (!o->root_op || !strcmp(o->root_op, name) || c->ns[i] > o->root_ns) {
        o->root_op = name;
        o->root_ns = c->ns[i];
    }
}

static void set_root(fx *c, const char *op, int64_t ns)
{
    c->out->root_op = op;
    c->out->root_ns = ns;
}

/* oom: the allocation fails before the forward, the cache is emptied and the step retried */
static void oom_stage_begin(fx *c, int st)
{
    sim *S = c->S;
    const fault_inst *F = c->F;
    if (rank_stage(S, F->rank) != st)
        return;
    rank_st *R = &S->ranks[F->rank];
    uint32_t ext = ++R->ext;
    int64_t t = R->host;
    ev_cpu(S, F->rank, "cpu_op", "aten::empty", t, 260000, ext);
    uint32_t corr = ++R->corr;
    ev_api(S, F->rank, "cuda_runtime", "cudaMalloc", t + 8000, 240000, corr, ext, 20);
    set_root(c, "cudaMalloc", 240000);
    int nfree = 20 + uni_int(&S->fr, 40);
    int64_t tf = t + 280000;
    for (int q = 0; q < nfree; q++) {
        int64_t d = (int64_t)(uni_in(&S->fr, 40000, 400000) * S->o.severity);
        corr = ++R->corr;
        ev_api(S, F->rank, "cuda_runtime", "cudaFree", tf, d, corr, 0, 22);
        tf += d + 3000;
    }
    R->host = tf + F->retry_ns;
    char proc[64], msg[512];
    worker_proc(S, F->rank, proc, sizeof proc);
    snprintf(msg, sizeof msg,
             "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU %d has a total capacity of 79.19 GiB "
             "of which 1.06 GiB is free. Including non-PyTorch memory, this process has 78.11 GiB memory in use. Of the "
             "allocated memory 75.02 GiB is allocated by PyTorch, and 1.47 GiB is reserved by PyTorch but unallocated.",
             F->rank % S->o.gpus_per_node);
    log_engine(S, rank_node(S, F->rank), t + 250000, "ERROR", "gpu_model_runner.py:2031", proc[0] ? proc : NULL,
               F->rank % S->o.tp, msg);
    log_engine(S, rank_node(S, F->rank), t + 260000, "WARNING", "gpu_worker.py:412", proc[0] ? proc : NULL,
               F->rank % S->o.tp, "Freeing the KV cache blocks of preempted sequences and retrying the step after an out-of-memory error.");
}

/* launch_latency: every launch call of the rank is slower, the graph launch by F->extra, the others by
 * it times the row's jitter */
static void slow_graph_launch(fx *c, int r, int64_t *dur)
{
    if (!on_rank(c, r))
        return;
    *dur += c->F->extra;
    if (*dur > c->out->root_ns)
        set_root(c, "cudaGraphLaunch", *dur);
}

static void slow_launch(fx *c, int r, const op *p, int64_t *dur)
{
    if (!on_rank(c, r) || p->kind == OP_H2D || p->kind == OP_D2H)
        return;
    *dur += (int64_t)((double)c->F->extra * jit(&c->S->fr, c->d->jitter));
    if (!strcmp(p->api, "cudaLaunchKernel") && *dur > c->out->root_ns)
        set_root(c, p->api, *dur);
}

/* cpu_contention: the host thread is descheduled for a gap (the row's share of F->extra) before some of
 * its calls; the root is the op after the longest gap, its root_ns that gap */
static void descheduled(fx *c, int r, double p, const char *op, const char *layer)
{
    if (!on_rank(c, r) || !(uni(&c->S->fr) < p))
        return;
    int64_t gap = (int64_t)(uni_in(&c->S->fr, c->d->share.lo, c->d->share.hi) * (double)c->F->extra);
    c->S->ranks[r].host += gap;
    if (gap > c->out->root_ns) {
        set_root(c, op, gap);
        c->out->root_layer = layer;
    }
}

static void contended_graph_launch(fx *c, int r, int64_t *dur)
{
    (void)dur;
    descheduled(c, r, 0.5, "cudaGraphLaunch", "RUNTIME");
}

static void contended_host_op(fx *c, int r, const op *p)
{
    descheduled(c, r, 0.12, p->cpu ? p->cpu : p->api, p->cpu ? "BACKEND" : "RUNTIME");
}

/* malloc_storm: the caching allocator misses inside a quarter of the rank's ops, each miss the row's
 * share of F->extra */
static int64_t storm_in_op(fx *c, int r, const op *p, int64_t t, uint32_t ext)
{
    sim *S = c->S;
    (void)p;
    if (!on_rank(c, r) || !(uni(&S->fr) < 0.25))
        return 0;
    int64_t malloc_t = (int64_t)(uni_in(&S->fr, c->d->share.lo, c->d->share.hi) * (double)c->F->extra);
    rank_st *R = &S->ranks[r];
    uint32_t corr = ++R->corr;
    ev_cpu(S, r, "cpu_op", "aten::empty", t + 2000, malloc_t + 6000, ext);
    ev_api(S, r, "cuda_runtime", "cudaMalloc", t + 4000, malloc_t, corr, ext, 20);
    set_root(c, "cudaMalloc", c->out->root_ns + malloc_t);
    return malloc_t;
}

static int is_copy(const op *p) { return p->kind == OP_H2D || p->kind == OP_D2H; }

/* gpu_throttle: every kernel of the rank; the root is the kernel name that
 * lost the most time, the one with the most time (root_time) */
static int throttled(fx *c, int r, const op *p, double *d)
{
    if (!on_rank(c, r) || is_copy(p))
        return 0;
    *d *= c->F->factor;
    return 1;
}

/* kernel_regression: one of the kernel names a layer runs on every model */
static void pick_regressed(sim *S, fault_inst *F)
{
    static const char *const ks[] = {K_GEMM_QKV, K_GEMM_O, K_FMHA, K_ROTARY, K_ADDNORM, K_CACHE};
    F->kernel = ks[uni_int(&S->r, (int)(sizeof ks / sizeof *ks))];
}

static int regressed(fx *c, int r, const op *p, double *d)
{
    if (!on_rank(c, r) || p->kernel != c->F->kernel)
        return 0;
    *d *= c->F->factor;
    return 1;
}

/* pcie_degradation: every copy of the rank; the root is the copy name that
 * lost the most time, the one with the most time (root_time) */
static int slow_copy(fx *c, int r, const op *p, double *d)
{
    if (!on_rank(c, r) || !is_copy(p))
        return 0;
    *d *= c->F->factor;
    return 1;
}

/* nccl_hang: one of the two all-reduces per layer of the rank's stage; a
 * rank of a stage without layers (more stages than layers) is moved to
 * the same place in a stage with some, whose collectives can hang */
static void pick_hung(sim *S, fault_inst *F)
{
    int st = rank_stage(S, F->rank);
    if (stage_layers(S, st) == 0) {
        int first = st - stage_in_pipe(S, st);
        F->rank = (first + stage_in_pipe(S, st) % S->m->layers) * S->o.tp + F->rank % S->o.tp;
        F->node = rank_node(S, F->rank);
        st = rank_stage(S, F->rank);
    }
    F->coll = uni_int(&S->r, 2 * stage_layers(S, st));
}

static int hangs(fx *c, int r, int coll) { return on_rank(c, r) && coll == c->F->coll; }

/* slow_link: transfers that cross nodes and touch the node take F->factor as long plus F->extra */
static int site_on_node(const sim *S, const xfer_site *x, int node)
{
    if (x->peer >= 0)
        return rank_node(S, x->first) == node || rank_node(S, x->peer) == node;
    for (int k = 0; k < x->n; k++)
        if (rank_node(S, x->first + k) == node)
            return 1;
    return 0;
}

static double slow_link_transfer(fx *c, const xfer_site *x, double t)
{
    if (x->cross && site_on_node(c->S, x, c->F->node))
        t = t * c->F->factor + (double)c->F->extra;
    return t;
}

/* the root: the first slowed kernel (a collective of a group that spans
 * nodes, on the node, or a send across it) */
static void slow_link_done(fx *c, int r, int peer, const char *kernel, int64_t dur)
{
    const sim *S = c->S;
    int node = c->F->node, a = rank_node(S, r), g0 = rank_stage(S, r) * S->o.tp;
    if (c->out->root_op)
        return;
    if (peer < 0 ? a == node && rank_node(S, g0) != rank_node(S, g0 + S->o.tp - 1)
                 : a != rank_node(S, peer) && (a == node || rank_node(S, peer) == node))
        set_root(c, kernel, dur);
}

static double delayed_send(fx *c, const xfer_site *x, double t)
{
    if (x->peer >= 0 && on_rank(c, x->first))
        t += (double)c->F->extra;
    return t;
}

static void delayed_send_done(fx *c, int r, int peer, const char *kernel, int64_t dur)
{
    if (peer >= 0 && on_rank(c, r))
        set_root(c, kernel, dur);
}

static void stalled_sync(fx *c, int r, int64_t t, int64_t *end)
{
    if (!on_rank(c, r))
        return;
    int64_t stall = (int64_t)((double)c->F->extra * jit(&c->S->fr, c->d->jitter));
    *end += stall;
    if (stall)
        set_root(c, "cudaStreamSynchronize", *end - t);
}

/* kv_swap: every rank of the stage copies blocks out to host at the end of the step */
static void swap_out(fx *c, int st)
{
    sim *S = c->S;
    const fault_inst *F = c->F;
    int tp = S->o.tp;
    for (int r = st * tp; r < (st + 1) * tp; r++) {
        rank_st *R = &S->ranks[r];
        int nswap = 2 + (int)F->copies;
        for (int q = 0; q < nswap; q++) {
            uint32_t ext = ++R->ext, corr = ++R->corr;
            int64_t bytes = (int64_t)(64.0 * 1048576 * (double)F->swap / 1e6 / tp);
            ev_cpu(S, r, "cpu_op", "aten::copy_", R->host, 14000, ext);
            ev_api(S, r, "cuda_runtime", "cudaMemcpyAsync", R->host + 5000, 7000, corr, ext, 41);
            int64_t start = R->gpu > R->host + 8000 ? R->gpu : R->host + 8000;
            int64_t dur = (int64_t)((double)bytes / PCIE_BW * 1e9 * jit(&S->fr, 0.05));
            ev_gpu(S, r, "gpu_memcpy", M_D2H, STREAM_COMPUTE, start, dur, corr, ext, bytes, NULL);
            R->gpu = start + dur;
            R->host += 16000;
            if (r == F->rank)
                set_root(c, M_D2H, c->out->root_ns + dur);
        }
    }
}

/* The scheduler's line for preempted sequences: vLLM's (mode RECOMPUTE or
 * SWAP) or SGLang's retract line, which counts retracted requests. */
static void log_preempted(sim *S, int k, int64_t t, const char *mode, int retracted)
{
    char msg[768];
    if (!strcmp(S->o.engine, "vllm")) {
        snprintf(msg, sizeof msg,
                 "Sequence group %d is preempted by PreemptionMode.%s mode because there is not enough KV cache space. "
                 "This can affect the end-to-end performance. Increase gpu_memory_utilization or tensor_parallel_size to "
                 "provide more KV cache memory. total_num_cumulative_preemption=%d",
                 100 + k, mode, 1 + k / 3);
        log_engine(S, 0, t, "WARNING", "scheduler.py:1089", NULL, -1, msg);
    } else {
        snprintf(msg, sizeof msg, "KV cache pool is full. Retract requests. #retracted_reqs: %d, #new_token_ratio: 0.7021 -> 1.0000",
                 retracted);
        log_engine(S, 0, t, "WARNING", "", NULL, 0, msg);
    }
}

static void log_recompute(sim *S, const fault_inst *F, int k, int64_t t)
{
    log_preempted(S, k, t, "RECOMPUTE", 1 + F->tokens / 2000);
}

static void log_swap(sim *S, const fault_inst *F, int k, int64_t t)
{
    log_preempted(S, k, t, "SWAP", 1 + (int)(F->swap / 2000));
}

static const sim_effect k_effects[TELLER_FAULT_COUNT] = {
    [TELLER_FAULT_SLOW_LINK] = {.transfer = slow_link_transfer, .comm_done = slow_link_done},
    [TELLER_FAULT_NCCL_HANG] = {.pick = pick_hung, .skips_coll = hangs, .root_op = K_ALLREDUCE},
    [TELLER_FAULT_PP_SEND_DELAY] = {.transfer = delayed_send, .comm_done = delayed_send_done, .root_op = K_SENDRECV},
    [TELLER_FAULT_GPU_THROTTLE] = {.gpu_op = throttled},
    [TELLER_FAULT_KERNEL_REGRESSION] = {.pick = pick_regressed, .gpu_op = regressed},
    [TELLER_FAULT_LAUNCH_LATENCY] = {.graph_launch = slow_graph_launch, .launch = slow_launch,
                                     .root_op = "cudaLaunchKernel", .root_layer = "RUNTIME"},
    [TELLER_FAULT_SYNC_STALL] = {.sync = stalled_sync, .root_op = "cudaStreamSynchronize", .root_layer = "RUNTIME"},
    [TELLER_FAULT_MALLOC_STORM] = {.in_op = storm_in_op, .root_op = "cudaMalloc", .root_layer = "RUNTIME"},
    [TELLER_FAULT_PCIE_DEGRADATION] = {.gpu_op = slow_copy, .root_op = M_H2D, .root_layer = "MEMCPY"},
    [TELLER_FAULT_KV_SWAP] = {.stage_end = swap_out, .log = log_swap, .root_op = M_D2H, .root_layer = "MEMCPY"},
    [TELLER_FAULT_OOM] = {.stage_begin = oom_stage_begin, .root_op = "cudaMalloc", .root_layer = "RUNTIME"},
    [TELLER_FAULT_CPU_CONTENTION] = {.graph_launch = contended_graph_launch, .host_op = contended_host_op},
    [TELLER_FAULT_PREEMPTION] = {.log = log_recompute, .recomputes = 1, .root_is_step = 1, .root_layer = "ENGINE"},
};

/* The row of F's kind; the empty row (no effect anywhere) for no fault. */
static const sim_effect *effect_of(const fault_inst *F) { return &k_effects[F ? F->kind : TELLER_FAULT_NONE]; }

/* per-stage transfer time of a collective in a TP group */
static int64_t xfer_ns(fx *c, const sim_effect *e, int first_rank, int n, double bytes, int allreduce)
{
    const sim *S = c->S;
    int cross = rank_node(S, first_rank) != rank_node(S, first_rank + n - 1);
    double bw = cross ? NET_BW : NVLINK_BW, lat = cross ? 22000 : 7000;
    double v = allreduce ? 2.0 * (n - 1) / n * bytes : (double)(n - 1) / n * bytes * n;
    double t = v / bw * 1e9 + lat;
    xfer_site x = {first_rank, n, -1, cross};
    if (e->transfer)
        t = e->transfer(c, &x, t);
    return (int64_t)t;
}

static int64_t p2p_ns(fx *c, const sim_effect *e, int from, int to, double bytes)
{
    const sim *S = c->S;
    int cross = rank_node(S, from) != rank_node(S, to);
    double t = bytes / (cross ? NET_BW : NVLINK_BW) * 1e9 + (cross ? 20000 : 6000);
    xfer_site x = {from, 2, to, cross};
    if (e->transfer)
        t = e->transfer(c, &x, t);
    return (int64_t)t;
}

/* One pipeline stage's pass through a step: its ranks r0 .. r0 + tp - 1
 * run the stage's ops in lockstep (sim_step). Arrays are per tensor-parallel
 * index i (rank r0 + i). */
typedef struct stage {
    sim              *S;
    const sim_effect *e;
    fx               *c;
    step_out         *out;
    int               st, r0, tp;
    int64_t           t0;          /* the step's start */
    coll_state       *cs;          /* the comm kernel each rank has launched and waits in */
    int64_t          *send_arrive; /* when its send kernel started */
    int64_t          *send_done;   /* when its send ended: the next stage's receive ends with it */
    int64_t          *mstart;      /* its step annotation's start */
    int64_t          *fw_start;    /* its model runner's start */
    int64_t          *graph_t;     /* when the kernels of its CUDA graph can start */
    uint32_t         *graph_corr;  /* its graph launch's correlation id */
    int               hung_rank;   /* the rank that never launched a collective (nccl_hang), -1 */
    int               coll_index;  /* the stage's collectives so far, for nccl_hang */
} stage;

/* The stage's ranks come out of the python scheduler into the model runner. */
static void stage_begin(stage *g)
{
    sim *S = g->S;
    for (int i = 0; i < g->tp; i++) {
        rank_st *R = &S->ranks[g->r0 + i];
        R->host = g->t0 + (int64_t)uni_in(&S->r, 8000, 40000);
        if (R->gpu < R->host)
            R->gpu = R->host;
        g->mstart[i] = R->host;
        R->host += (int64_t)uni_in(&S->r, 20000, 60000); /* python up to the model runner */
        g->fw_start[i] = R->host;
    }
    if (g->e->stage_begin)
        g->e->stage_begin(g->c, g->st);
}

/* Every rank of the stage launches its CUDA graph (at its first graph op). */
static void graph_launch(stage *g)
{
    sim *S = g->S;
    for (int i = 0; i < g->tp; i++) {
        int r = g->r0 + i;
        rank_st *R = &S->ranks[r];
        int64_t d = (int64_t)(uni_in(&S->r, 9000, 18000));
        if (g->e->graph_launch)
            g->e->graph_launch(g->c, r, &d);
        uint32_t corr = ++R->corr;
        ev_api(S, r, "cuda_runtime", "cudaGraphLaunch", R->host, d, corr, ++R->ext, 311);
        g->graph_t[i] = R->host + 4000;
        g->graph_corr[i] = corr;
        R->host += d + 2000;
    }
}

/* Rank r0 + i issues op p on its host: the cpu op around its launch and the
 * launch call (an op of a CUDA graph was launched with the graph). Sets
 * *corr and returns when its GPU work can start. */
static int64_t op_issue(stage *g, int i, const op *p, uint32_t ext, uint32_t *corr)
{
    sim *S = g->S;
    const sim_effect *e = g->e;
    int r = g->r0 + i;
    rank_st *R = &S->ranks[r];
    if (p->in_graph) {
        *corr = g->graph_corr[i];
        return g->graph_t[i];
    }
    if (e->host_op)
        e->host_op(g->c, r, p);
    int64_t host = (int64_t)(p->host_ns * jit(&S->r, 0.15));
    int64_t launch = (int64_t)uni_in(&S->r, 4500, 9000);
    if (e->launch)
        e->launch(g->c, r, p, &launch);
    int64_t t = R->host;
    int64_t inside = e->in_op ? e->in_op(g->c, r, p, t, ext) : 0;
    int64_t t_launch = t + inside + host * 6 / 10;
    int64_t total = inside + host + launch;
    if (p->cpu && !strcmp(p->cpu, "record_param_comms")) {
        ev_cpu(S, r, "cpu_op", "record_param_comms", t, total, ext);
        ev_cpu(S, r, "user_annotation",
               p->kind == OP_ALLGATHER ? "nccl:_all_gather_base"
                                       : p->kind == OP_ALLREDUCE ? "nccl:all_reduce"
                                                                 : p->kind == OP_SEND ? "nccl:send" : "nccl:recv",
               t + host / 4, total - host / 4 - 500, ext);
    } else if (p->nested) {
        ev_cpu(S, r, "cpu_op", p->cpu, t, total, ext);
        int64_t q = host / 10;
        ev_cpu(S, r, "cpu_op", "aten::t", t + q, 2 * q, ext);
        ev_cpu(S, r, "cpu_op", "aten::transpose", t + q + 300, 2 * q - 600, ext);
        ev_cpu(S, r, "cpu_op", "aten::as_strided", t + q + 700, q / 2, ext);
        ev_cpu(S, r, "cpu_op", "aten::addmm", t + 4 * q, total - 4 * q - 300, ext);
    } else if (p->cpu) {
        ev_cpu(S, r, "cpu_op", p->cpu, t, total, ext);
    }
    *corr = ++R->corr;
    int driver = !strcmp(p->api, "cuLaunchKernelEx");
    ev_api(S, r, driver ? "cuda_driver" : "cuda_runtime", p->api, t_launch, launch, *corr, ext,
           driver ? 652 : (!strcmp(p->api, "cudaMemcpyAsync") ? 41 : 211));
    R->host = t + total + (int64_t)uni_in(&S->r, 800, 3000);
    return t_launch + 2500;
}

/* Op p (a kernel or a copy) runs on rank r's compute stream from start. */
static void op_run(stage *g, int r, const op *p, int64_t start, uint32_t corr, uint32_t ext)
{
    sim *S = g->S;
    double d;
    const char *cat = "kernel";
    int64_t bytes = -1;
    if (p->kind == OP_H2D || p->kind == OP_D2H) {
        bytes = (int64_t)p->gpu_ns;
        d = (double)bytes / PCIE_BW * 1e9 + 1500;
        cat = "gpu_memcpy";
    } else {
        d = p->gpu_ns;
    }
    int root = g->e->gpu_op ? g->e->gpu_op(g->c, r, p, &d) : 0;
    int64_t dur = (int64_t)(d * jit(&S->r, 0.06));
    if (root)
        root_time(g->c, p->kernel, dur);
    ev_gpu(S, r, cat, p->kernel, STREAM_COMPUTE, start, dur, corr, ext, bytes, NULL);
    S->ranks[r].gpu = start + dur;
}

/* The stage's ranks have launched collective p: it ends for every member
 * when the last one arrives plus the transfer time. A member that never
 * came (nccl_hang) blocks the others until the watchdog fires on each, and
 * the step hangs: returns 1. */
static int coll_end(stage *g, const op *p)
{
    sim *S = g->S;
    int tp = g->tp, r0 = g->r0, hung_rank = g->hung_rank;
    int64_t last = 0;
    int missing = hung_rank >= 0;
    for (int i = 0; i < tp; i++)
        if (r0 + i != hung_rank && g->cs[i].arrive > last)
            last = g->cs[i].arrive;
    int64_t x = xfer_ns(g->c, g->e, r0, tp, p->gpu_ns, p->kind == OP_ALLREDUCE);
    comm_md md = {p->kind == OP_ALLREDUCE ? "allreduce" : "_allgather_base", (int64_t)(p->gpu_ns / 2),
                  (int64_t)(p->gpu_ns / 2 * (p->kind == OP_ALLGATHER ? tp : 1)), tp, r0, 1, 1 + g->st};
    int packs = (int)(p->gpu_ns / 16), car_grid = (packs + 511) / 512 < 36 ? (packs + 511) / 512 : 36;
    for (int i = 0; i < tp; i++) {
        int r = r0 + i;
        const coll_state *cs = &g->cs[i];
        if (r == hung_rank)
            continue;
        if (!p->custom)
            S->ranks[r].pg_seq++;
        int64_t end = missing ? cs->arrive + TELLER_FAULT_WATCHDOG_NS : last + x + (int64_t)uni_in(&S->r, 0, 1500);
        /* a hung custom all-reduce spins until the process is taken down:
         * nothing aborts it, and a kernel that never ended is not written */
        if (!missing || (S->o.hang_abort_comm && !p->custom))
            ev_gpu_grid(S, r, "kernel", p->kernel, p->custom ? STREAM_COMPUTE : STREAM_NCCL, cs->arrive,
                        end - cs->arrive, cs->corr, cs->ext, -1, p->in_graph || p->custom ? NULL : &md,
                        p->custom ? (car_grid > 0 ? car_grid : 1) : 0, 512);
        S->ranks[r].gpu = end;
        if (g->e->comm_done)
            g->e->comm_done(g->c, r, -1, p->kernel, end - cs->arrive);
    }
    if (!missing) {
        g->coll_index++;
        return 0;
    }
    g->out->hung = 1;
    g->out->root_op = p->kernel;
    for (int i = 0; i < tp; i++) {
        int r = r0 + i;
        if (r == hung_rank)
            continue;
        char msg[512];
        /* behind a hung custom all-reduce the rank went on enqueueing the
         * step's work: its watchdog fires on the step's next NCCL
         * collective (the logits' all-gather), which never started */
        uint32_t seq = S->ranks[r].pg_seq + (p->custom ? 1 : 0);
        int64_t fired = g->cs[i].arrive + TELLER_FAULT_WATCHDOG_NS;
        long long gin = (long long)S->cur_tokens * S->m->vocab / tp, gout = gin * tp;
        snprintf(msg, sizeof msg,
                 "Watchdog caught collective operation timeout: WorkNCCL(SeqNum=%u, OpType=%s, NumelIn=%lld, "
                 "NumelOut=%lld, Timeout(ms)=600000) ran for 600047 milliseconds before timing out.",
                 seq, p->kind == OP_ALLREDUCE && !p->custom ? "ALLREDUCE" : "_ALLGATHER_BASE",
                 p->custom ? gin : (long long)md.in_n, p->custom ? gout : (long long)md.out_n);
        log_pg(S, r, fired + 47000000, msg);
        snprintf(msg, sizeof msg,
                 "Exception (either an error or timeout) detected by watchdog at work: %u, last enqueued NCCL "
                 "work: %u, last completed NCCL work: %u.",
                 seq, seq, seq - 1);
        log_pg(S, r, fired + 48000000, msg);
    }
    return 1;
}

/* The metadata of a pipeline transfer (send or recv) of the stage's i-th
 * tensor-parallel rank: its pipeline group is its replica's ranks of that
 * index, named after every tensor-parallel group (put_comm_md). */
static comm_md pipe_md(const stage *g, const char *coll, const op *p, int i)
{
    const sim *S = g->S;
    int tp = S->o.tp, pp = S->o.pp, d = rank_replica(S, g->r0);
    return (comm_md){coll, (int64_t)(p->gpu_ns / 2), (int64_t)(p->gpu_ns / 2), pp, d * tp * pp + i, tp,
                     1 + S->o.dp * pp + d * tp + i};
}

/* The stage's ranks have launched send p to the next stage, which posted
 * its receive early: the transfer ends both. */
static void send_end(stage *g, const op *p)
{
    sim *S = g->S;
    int tp = g->tp;
    for (int i = 0; i < tp; i++) {
        int r = g->r0 + i;
        int64_t arrive = g->send_arrive[i];
        int64_t end = arrive + p2p_ns(g->c, g->e, r, r + tp, p->gpu_ns);
        g->send_done[i] = end;
        comm_md md = pipe_md(g, "send", p, i);
        ev_gpu(S, r, "kernel", p->kernel, STREAM_P2P, arrive, end - arrive, g->cs[i].corr, g->cs[i].ext, -1, &md);
        S->ranks[r].gpu = end;
        if (g->e->comm_done)
            g->e->comm_done(g->c, r, r + tp, p->kernel, end - arrive);
    }
}

/* The stage's ranks have launched receive p: it ends with the previous
 * stage's send. */
static void recv_end(stage *g, const op *p)
{
    sim *S = g->S;
    int tp = g->tp;
    for (int i = 0; i < tp; i++) {
        int r = g->r0 + i;
        const coll_state *cs = &g->cs[i];
        int64_t end = g->send_done[i] > cs->arrive ? g->send_done[i] : cs->arrive + 5000;
        comm_md md = pipe_md(g, "recv", p, i);
        ev_gpu(S, r, "kernel", p->kernel, STREAM_P2P, cs->arrive, end - cs->arrive, cs->corr, cs->ext, -1, &md);
        S->ranks[r].gpu = end;
    }
}

/* Runs op p on every rank of the stage: issued on each host, then on the
 * GPU, a communication op once all have launched it. Returns 1 when the
 * step hangs in it. */
static int stage_op(stage *g, const op *p)
{
    sim *S = g->S;
    int is_coll = p->kind == OP_ALLREDUCE || p->kind == OP_ALLGATHER;
    for (int i = 0; i < g->tp; i++) {
        int r = g->r0 + i;
        rank_st *R = &S->ranks[r];
        if (g->hung_rank == r)
            continue;
        uint32_t ext = p->in_graph ? 0 : ++R->ext, corr;
        int64_t ready = op_issue(g, i, p, ext, &corr);
        int64_t start = ready > R->gpu ? ready : R->gpu;
        if (is_coll && g->e->skips_coll && g->e->skips_coll(g->c, r, g->coll_index)) {
            g->hung_rank = r; /* never launches it, nor anything after */
            continue;
        }
        if (is_coll || p->kind == OP_RECV || p->kind == OP_SEND) {
            if (p->kind == OP_SEND)
                g->send_arrive[i] = start;
            g->cs[i] = (coll_state){start, corr, ext, ready};
            continue;
        }
        op_run(g, r, p, start, corr, ext);
    }
    if (is_coll)
        return coll_end(g, p);
    if (p->kind == OP_SEND)
        send_end(g, p);
    else if (p->kind == OP_RECV)
        recv_end(g, p);
    return 0;
}

/* Sampling is done: each rank waits for its GPU, then the python epilogue
 * and the step annotation close the step. */
static void stage_end(stage *g, const char *marker)
{
    sim *S = g->S;
    step_out *out = g->out;
    for (int i = 0; i < g->tp; i++) {
        int r = g->r0 + i;
        rank_st *R = &S->ranks[r];
        if (r == g->hung_rank) {
            /* stuck on the host before the collective: the step never ends */
            out->end = g->t0 + TELLER_FAULT_WATCHDOG_NS;
            continue;
        }
        if (out->hung && !S->o.hang_abort_comm)
            continue; /* taken down while waiting: the rest of the step was never written */
        uint32_t ext = ++R->ext, corr = ++R->corr;
        int64_t t = R->host;
        int64_t done = R->gpu > t ? R->gpu : t;
        int64_t end = done + 4000;
        if (g->e->sync)
            g->e->sync(g->c, r, t, &end);
        ev_api(S, r, "cuda_runtime", "cudaStreamSynchronize", t, end - t, corr, ext, 131);
        if (S->emit) {
            ev_begin(S, r, "X", "cuda_sync", "Stream Sync", 1, STREAM_COMPUTE, t, end - t);
            ob_fmt(&R->out,
                   ", \"args\": {\"External id\": %u, \"cuda_sync_kind\": \"Stream Sync\", \"stream\": %d, "
                   "\"correlation\": %u, \"device\": %d, \"context\": 1}",
                   ext, STREAM_COMPUTE, corr, r % S->o.gpus_per_node);
            ev_end(S, r);
        }
        R->host = end + (int64_t)uni_in(&S->r, 40000, 140000);
        int64_t fw = g->fw_start[i];
        if (S->emit) {
            ev_cpu(S, r, "python_function", "vllm/v1/worker/gpu_model_runner.py(2174): execute_model", fw - 6000,
                   R->host - fw - 4000, 0);
            ev_cpu(S, r, "python_function", "torch/nn/modules/module.py(1773): _call_impl", fw + 60000,
                   t - fw - 70000 > 0 ? t - fw - 70000 : 0, 0);
            ev_cpu(S, r, "user_annotation", marker, g->mstart[i], R->host + 3000 - g->mstart[i], 0);
        }
        R->host += 3000;
        if (R->host > out->end)
            out->end = R->host;
    }
}

/* Simulates a step for every rank starting at true time t0, with fault F
 * (NULL: the clean step) acting through its k_effects row, stage after
 * stage: the ranks come into the model runner, run the stage's ops (a graph
 * launch at the first op of a CUDA graph) and synchronise. Fills out. */
static void sim_step(sim *S, const batch *b, const fault_inst *F, int64_t t0, int replica, step_out *out)
{
    S->cur_tokens = b->prefill_tokens + b->decode_seqs;
    int tp = S->o.tp, pp = S->o.pp;
    fx c = {.S = S, .F = F, .d = teller_fault_def_of(F ? F->kind : TELLER_FAULT_NONE), .out = out};
    stage g = {.S = S, .e = effect_of(F), .c = &c, .out = out, .tp = tp, .t0 = t0};
    op *ops = malloc(max_ops(S) * sizeof *ops);
    g.cs = malloc((size_t)tp * sizeof *g.cs);
    int64_t *per = calloc(5 * (size_t)tp, sizeof *per); /* the stage's arrays of int64 */
    g.graph_corr = calloc((size_t)tp, sizeof *g.graph_corr);
    memset(out, 0, sizeof *out);
    out->start = t0;
    out->end = t0;
    if (!ops || !g.cs || !per || !g.graph_corr)
        S->nomem = 1;
    else {
        g.send_arrive = per;
        g.send_done = per + tp;
        g.mstart = per + 2 * tp;
        g.fw_start = per + 3 * tp;
        g.graph_t = per + 4 * tp;
    }
    step_marker(S, b, out->marker, sizeof out->marker);
    for (int st = replica * pp; st < (replica + 1) * pp && !S->nomem && !out->hung; st++) {
        size_t nops = build_ops(S, b, st, ops);
        g.st = st;
        g.r0 = st * tp;
        g.coll_index = 0;
        g.hung_rank = -1;
        stage_begin(&g);
        for (size_t oi = 0; oi < nops; oi++) {
            if (ops[oi].in_graph && (oi == 0 || !ops[oi - 1].in_graph))
                graph_launch(&g);
            if (stage_op(&g, &ops[oi]))
                break;
        }
        if (g.e->stage_end)
            g.e->stage_end(&c, st);
        stage_end(&g, out->marker);
    }
    free(ops);
    free(g.cs);
    free(per);
    free(g.graph_corr);
}

/* ---- the scheduler: continuous batching with chunked prefill ---- */

#define MAX_BATCH_TOKENS 4096
#define MAX_RUNNING      128

static void make_requests(sim *S, int nsteps)
{
    /* enough requests to keep every replica busy: arrivals over the run,
     * request i served by replica i % dp (the front end's round robin) */
    S->nreqs = (24 + nsteps / 2) * S->o.dp;
    S->reqs = calloc((size_t)S->nreqs, sizeof *S->reqs);
    if (!S->reqs) {
        S->nomem = 1;
        S->nreqs = 0;
        return;
    }
    int64_t t = S->t0;
    for (int i = 0; i < S->nreqs; i++) {
        request *q = &S->reqs[i];
        if (i >= 8)
            t += (int64_t)(-log(1.0 - uni(&S->r) + 1e-12) * 40e6 / S->o.dp); /* ~25 req/s a replica */
        q->arrival = t;
        q->prompt = (int)(300 * jit(&S->r, 0.8)) + 16;
        if (q->prompt > 6000)
            q->prompt = 6000;
        q->output = (int)(60 * jit(&S->r, 0.6)) + 4;
        if (q->output > 400)
            q->output = 400;
        snprintf(q->id, sizeof q->id, "cmpl-%016llx%08x-0", (unsigned long long)rng_next(&S->r),
                 (unsigned)(rng_next(&S->r) >> 32));
    }
}

/* Adds (sign 1) or takes off (-1) the prefill of tokens recomputed
 * sequences to batch b (preemption). */
static void recompute(batch *b, int tokens, int sign)
{
    b->prefill_tokens += sign * tokens;
    b->prefill_seqs += sign * (1 + tokens / 800);
    b->prefill_ctx += sign * ((int64_t)tokens * tokens / 2);
}

/* Picks replica d's batch of a step at time now; records which requests
 * took part. */
static void schedule(sim *S, uint32_t step, int64_t now, int d, batch *b, int extra_recompute)
{
    memset(b, 0, sizeof *b);
    int running = 0, budget = MAX_BATCH_TOKENS, dp = S->o.dp;
    for (int i = d; i < S->nreqs; i += dp)
        running += S->reqs[i].state == 1;
    for (int i = d; i < S->nreqs && budget > 0; i += dp) {
        request *q = &S->reqs[i];
        if (q->state == 2 || q->arrival > now)
            continue;
        if (q->state == 0) {
            if (running >= MAX_RUNNING)
                continue;
            q->state = 1;
            running++;
        }
        if (q->prefilled < q->prompt) {
            int chunk = q->prompt - q->prefilled;
            if (chunk > budget)
                chunk = budget;
            b->prefill_tokens += chunk;
            b->prefill_seqs++;
            b->prefill_ctx += (int64_t)chunk * (q->prefilled + chunk / 2);
            q->prefilled += chunk;
            budget -= chunk;
        } else {
            b->decode_seqs++;
            b->decode_ctx += q->prompt + q->generated;
            budget--;
            q->generated++;
        }
        if (TELLER_GROW(q->steps, q->cap, q->nsteps + 1) == 0)
            q->steps[q->nsteps++] = step;
    }
    if (extra_recompute)
        recompute(b, extra_recompute, 1);
    b->graph = b->prefill_seqs == 0 && b->decode_seqs > 0;
    if (b->prefill_seqs == 0 && b->decode_seqs == 0) {
        /* idle engine: a dummy decode of one sequence keeps the step well formed */
        b->decode_seqs = 1;
        b->decode_ctx = 16;
        b->graph = 1;
    }
}

static void finish_requests(sim *S, int64_t now)
{
    for (int i = 0; i < S->nreqs; i++) {
        request *q = &S->reqs[i];
        if (q->state == 1 && q->prefilled >= q->prompt && q->generated >= q->output) {
            q->state = 2;
            if (!strcmp(S->o.engine, "vllm")) {
                char msg[128];
                snprintf(msg, sizeof msg, "Finished request %s.", q->id);
                log_engine(S, 0, now, "INFO", "async_llm.py:418", "(APIServer pid=3646)", -1, msg);
            }
        }
    }
}

/* ---- fault choice ---- */

/* Whether the run has what the kind's row needs (fault.h, sim.needs). */
static int fault_applicable(const sim *S, const teller_fault_def *d)
{
    uint32_t needs = d->sim.needs;
    /* a collective or a send crosses nodes: a replica's ranks span them */
    int cross = rank_node(S, 0) != rank_node(S, S->o.tp * S->o.pp - 1);
    return !((needs & TELLER_FAULT_NEEDS_CROSS) && !cross) && !((needs & TELLER_FAULT_NEEDS_TP) && S->o.tp < 2) &&
           !((needs & TELLER_FAULT_NEEDS_PP) && S->o.pp < 2);
}

/* A fault of the kind for the step: its rank (drawn among all first, then
 * narrowed by the row's target), what its k_effects row picks, then each
 * size its row has, in the order of the row's fields; the fault's own
 * random state is seeded last. The order of the draws is the output's. */
static void pick_fault(sim *S, teller_fault kind, fault_inst *F)
{
    const teller_fault_def *d = teller_fault_def_of(kind);
    double sev = S->o.severity;
    memset(F, 0, sizeof *F);
    F->kind = kind;
    F->rank = uni_int(&S->r, S->world);
    switch (d->sim.at) {
    case TELLER_FAULT_AT_RANK:
        break;
    case TELLER_FAULT_AT_NODE:
        F->rank = (1 + uni_int(&S->r, S->o.nodes - 1)) * S->o.gpus_per_node;
        break;
    case TELLER_FAULT_AT_SENDER: { /* a rank of a stage before its pipeline's last */
        int senders = (S->o.pp - 1) * S->o.tp, i = uni_int(&S->r, S->o.dp * senders);
        F->rank = i / senders * S->o.tp * S->o.pp + i % senders;
        break;
    }
    case TELLER_FAULT_AT_LEAD:
        F->rank = 0;
        break;
    }
    F->node = rank_node(S, F->rank);
    if (k_effects[kind].pick)
        k_effects[kind].pick(S, F);
    if (d->slow.hi > 0)
        F->factor = 1.0 + uni_in(&S->r, d->slow.lo, d->slow.hi) * sev;
    if (d->add_ns.hi > 0)
        F->extra = (int64_t)(uni_in(&S->r, d->add_ns.lo, d->add_ns.hi) * sev);
    if (d->sim.tokens.hi > 0)
        F->tokens = (int)(uni_in(&S->r, d->sim.tokens.lo, d->sim.tokens.hi) * sev);
    if (d->sim.retry_ns.hi > 0)
        F->retry_ns = (int64_t)uni_in(&S->r, d->sim.retry_ns.lo, d->sim.retry_ns.hi);
    if (d->sim.copies.hi > 0)
        F->copies = uni_in(&S->r, d->sim.copies.lo, d->sim.copies.hi);
    if (d->sim.swap.hi > 0)
        F->swap = (int64_t)(uni_in(&S->r, d->sim.swap.lo, d->sim.swap.hi) * sev * 1e6);
    rng_seed(&S->fr, rng_next(&S->r));
}

/* ---- writing the case ---- */

static int log_cmp(const void *a, const void *b)
{
    const logline *x = a, *y = b;
    if (x->node != y->node) return x->node < y->node ? -1 : 1;
    if (x->t != y->t) return x->t < y->t ? -1 : 1;
    return 0;
}

/* The root's layer: the row's, else by its name. */
static const char *layer_of_root(teller_fault k, const char *op)
{
    const char *l = k_effects[k].root_layer;
    return l ? l : op && !strncmp(op, "cuda", 4) ? "RUNTIME" : "KERNEL";
}

static void explain(const sim *S, int step, const truth_step *t, char *out, size_t cap)
{
    const fault_inst *f = &t->f;
    teller_fault_explain(f->kind, teller_fault_def_of(f->kind)->by_node ? f->node : t->root_rank, step, t->dur,
                         t->clean, t->excess, t->root_op, t->root_rank, rank_node(S, t->root_rank), t->root_ns, out,
                         cap);
}

static void write_json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            fputc('\\', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

static teller_status write_truth(sim *S, int nsteps, teller_error *err)
{
    const truth_step *ts = S->ts;
    char path[4096];
    snprintf(path, sizeof path, "%s/truth.json", S->dir);
    FILE *f = fopen(path, "w");
    if (!f)
        return teller_error_set(err, TELLER_ERR_IO, path, 0, "cannot write");
    fprintf(f, "{\"version\": 1,\n \"workload\": {\"engine\": \"%s\", \"model\": \"%s\", \"nodes\": %d, "
               "\"gpus_per_node\": %d, \"tp\": %d, \"pp\": %d, ",
            S->o.engine, S->m->hf, S->o.nodes, S->o.gpus_per_node, S->o.tp, S->o.pp);
    if (S->o.dp > 1)
        fprintf(f, "\"dp\": %d, ", S->o.dp);
    fprintf(f, "\"seed\": %llu},\n", (unsigned long long)S->o.seed);
    fprintf(f, " \"clock_offsets_ns\": [");
    for (int n = 0; n < S->o.nodes; n++)
        fprintf(f, "%s%lld", n ? ", " : "", (long long)(S->node_off[n] - S->node_off[0]));
    fprintf(f, "],\n \"steps\": [");
    for (int k = 0; k < nsteps; k++) {
        const truth_step *t = &ts[k];
        fprintf(f, "%s\n  {\"step\": %d, \"abnormal\": %s, \"duration_ns\": %lld, \"expected_ns\": %lld", k ? "," : "",
                k, t->abnormal ? "true" : "false", (long long)t->dur, (long long)t->clean);
        if (!t->abnormal) {
            /* a fault injected here whose cost stayed within the noise is named, not counted */
            if (t->f.kind != TELLER_FAULT_NONE)
                fprintf(f, ", \"injected\": \"%s\", \"injected_excess_ns\": %lld", teller_fault_name(t->f.kind),
                        (long long)t->excess);
            fprintf(f, ", \"fault_type\": \"no_error\"}");
            continue;
        }
        char ex[1024];
        explain(S, k, t, ex, sizeof ex);
        fprintf(f, ", \"view\": \"%s\", \"fault_type\": \"%s\", \"fault\": \"%s\", \"excess_ns\": %lld, "
                   "\"root\": {\"rank\": %d, \"node\": %d, \"op\": ",
                teller_fault_view(t->f.kind), teller_fault_type(t->f.kind), teller_fault_name(t->f.kind),
                (long long)t->excess, t->root_rank, rank_node(S, t->root_rank));
        write_json_str(f, t->root_op ? t->root_op : "");
        fprintf(f, ", \"layer\": \"%s\"}, \"explanation\": ", t->root_layer);
        write_json_str(f, ex);
        fprintf(f, "}");
    }
    /* which step each log line was written for: the alignment's truth */
    fprintf(f, "\n ],\n \"log_steps\": {");
    for (int n = 0; n < S->o.nodes; n++) {
        fprintf(f, "%s\"node%d\": [", n ? ", " : "", n);
        int first_l = 1;
        for (size_t i = 0; i < S->nlogs; i++) {
            if (S->logs[i].node != n || S->logs[i].step < 0)
                continue;
            fprintf(f, "%s[%u, %d]", first_l ? "" : ", ", S->logs[i].line, S->logs[i].step);
            first_l = 0;
        }
        fprintf(f, "]");
    }
    fprintf(f, "},\n \"requests\": [");
    int first = 1;
    for (int i = 0; i < S->nreqs; i++) {
        request *q = &S->reqs[i];
        if (!q->nsteps)
            continue;
        int ab = 0;
        for (size_t j = 0; j < q->nsteps; j++)
            ab |= ts[q->steps[j]].abnormal;
        fprintf(f, "%s\n  {\"id\": \"%s\", \"arrival_ns\": %lld, \"prompt_tokens\": %d, \"output_tokens\": %d, "
                   "\"finished\": %s, \"abnormal\": %s, \"steps\": [",
                first ? "" : ",", q->id, (long long)q->arrival, q->prompt, q->output, q->state == 2 ? "true" : "false",
                ab ? "true" : "false");
        for (size_t j = 0; j < q->nsteps; j++)
            fprintf(f, "%s%u", j ? ", " : "", q->steps[j]);
        fprintf(f, "]}");
        first = 0;
    }
    fprintf(f, "\n ]}\n");
    if (fclose(f) != 0)
        return teller_error_set(err, TELLER_ERR_IO, path, 0, "write failed");
    return TELLER_OK;
}

static void write_headers(sim *S)
{
    for (int r = 0; r < S->world; r++) {
        obuf *o = &S->ranks[r].out;
        ob_fmt(o, "{\n  \"schemaVersion\": 1,\n  \"deviceProperties\": [");
        for (int d = 0; d < S->o.gpus_per_node; d++)
            ob_fmt(o, "%s\n    {\"id\": %d, \"name\": \"NVIDIA H100 80GB HBM3\", \"totalGlobalMem\": 84929347584, "
                      "\"computeMajor\": 9, \"computeMinor\": 0, \"maxThreadsPerBlock\": 1024, \"numSms\": 132}",
                   d ? "," : "", d);
        ob_fmt(o, "\n  ],\n  \"distributedInfo\": {\"backend\": \"nccl\", \"rank\": %d, \"world_size\": %d, "
                  "\"nccl_version\": \"2.21.5\"},\n  \"record_shapes\": 0,\n  \"with_stack\": 1,\n  \"displayTimeUnit\": \"ms\",\n"
                  "  \"baseTimeNanoseconds\": %lld,\n  \"traceEvents\": [",
               r, S->world, (long long)S->base_ns);
        S->ranks[r].first_event = 1;
    }
}

static void startup_logs(sim *S)
{
    for (int r = 0; r < S->world; r++) {
        int node = rank_node(S, r);
        int64_t t = S->t0 - 40000000000LL + r * 1000000LL;
        char line[512], proc[64], host[32];
        worker_proc(S, r, proc, sizeof proc);
        snprintf(host, sizeof host, "gpu-node-%02d", node);
        snprintf(line, sizeof line, "%s%s%s:%d:%d [%d] NCCL INFO comm 0x7f%08x rank %d nranks %d cudaDev %d busId %d000 - Init COMPLETE",
                 proc, proc[0] ? " " : "", host, S->ranks[r].pid, S->ranks[r].pid + 17,
                 r % S->o.gpus_per_node, (unsigned)(0x1000 * (r + 1)), r % S->o.tp, S->o.tp, r % S->o.gpus_per_node,
                 (r % S->o.gpus_per_node) * 16 + 0x18);
        add_log(S, node, t, line);
        if (r % S->o.gpus_per_node == 0) {
            snprintf(line, sizeof line, "NCCL version 2.21.5+cuda12.4");
            add_log(S, node, t - 1000, line);
        }
    }
    if (!strcmp(S->o.engine, "vllm")) {
        log_engine(S, 0, S->t0 - 30000000000LL, "WARNING", "config.py:1404", "(APIServer pid=3646)", -1,
                   "Possibly too large swap space. 4.00 GiB out of the 15.59 GiB total CPU memory is allocated for the swap space.");
        log_engine(S, 0, S->t0 - 20000000000LL, "INFO", "api_server.py:1880", "(APIServer pid=3646)", -1,
                   "Starting vLLM API server 0 on http://0.0.0.0:8000");
    } else {
        log_engine(S, 0, S->t0 - 30000000000LL, "INFO", "", NULL, 0,
                   "Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16, avail mem=61.23 GB, mem usage=15.06 GB.");
        log_engine(S, 0, S->t0 - 20000000000LL, "INFO", "", NULL, -1,
                   "The server is fired up and ready to roll!");
    }
}

static void step_logs(sim *S, int k, const batch *b, int64_t t, const fault_inst *F, int64_t *last_metrics)
{
    char msg[768];
    /* request arrivals in this step's window */
    for (int i = 0; i < S->nreqs; i++) {
        request *q = &S->reqs[i];
        if (q->logged || q->arrival > t)
            continue;
        q->logged = 1;
        if (!strcmp(S->o.engine, "vllm")) {
            snprintf(msg, sizeof msg,
                     "Received request %s: params: SamplingParams(n=1, presence_penalty=0.0, frequency_penalty=0.0, "
                     "repetition_penalty=1.0, temperature=0.7, top_p=0.95, top_k=0, min_p=0.0, seed=None, stop=[], "
                     "max_tokens=%d), prompt_token_ids: None, lora_request: None.",
                     q->id, q->output);
            log_engine(S, 0, q->arrival, "INFO", "logger.py:43", "(APIServer pid=3646)", -1, msg);
            snprintf(msg, sizeof msg, "Added request %s.", q->id);
            log_engine(S, 0, q->arrival + 400000, "INFO", "async_llm.py:270", "(APIServer pid=3646)", -1, msg);
        } else {
            snprintf(msg, sizeof msg, "INFO:     10.0.3.7:%d - \"POST /v1/completions HTTP/1.1\" 200 OK", 40000 + i);
            log_engine(S, 0, q->arrival, "INFO", "", NULL, -1, msg);
        }
    }
    int running = 0, waiting = 0;
    for (int i = 0; i < S->nreqs; i++) {
        running += S->reqs[i].state == 1;
        waiting += S->reqs[i].state == 0 && S->reqs[i].arrival <= t;
    }
    if (!strcmp(S->o.engine, "sglang")) {
        if (b->prefill_seqs) {
            snprintf(msg, sizeof msg,
                     "Prefill batch. #new-seq: %d, #new-token: %d, #cached-token: 0, token usage: %.2f, #running-req: %d, #queue-req: %d",
                     b->prefill_seqs, b->prefill_tokens, 0.05 + 0.002 * running, running - b->prefill_seqs, waiting);
            log_engine(S, 0, t, "INFO", "", NULL, 0, msg);
        } else if (k % 40 == 0) {
            snprintf(msg, sizeof msg,
                     "Decode batch. #running-req: %d, #token: %lld, token usage: %.2f, cuda graph: True, gen throughput (token/s): %.2f, #queue-req: %d",
                     b->decode_seqs, (long long)b->decode_ctx, 0.05 + 0.002 * running, b->decode_seqs * 38.5, waiting);
            log_engine(S, 0, t, "INFO", "", NULL, 0, msg);
        }
    } else if (t - *last_metrics >= 5000000000LL) {
        snprintf(msg, sizeof msg,
                 "Engine 000: Avg prompt throughput: %.1f tokens/s, Avg generation throughput: %.1f tokens/s, Running: %d reqs, "
                 "Waiting: %d reqs, GPU KV cache usage: %.1f%%, Prefix cache hit rate: 0.0%%",
                 b->prefill_tokens * 25.0, b->decode_seqs * 30.0, running, waiting, 8.0 + 0.3 * running);
        log_engine(S, 0, t, "INFO", "loggers.py:271", "(APIServer pid=3646)", -1, msg);
        *last_metrics = t;
    }
    if (k % 37 == 11) /* benign noise */
        log_engine(S, 0, t, "WARNING", "protocol.py:72", "(APIServer pid=3646)", -1,
                   "The following fields were present in the request but ignored: {'stream_options'}");
    if (effect_of(F)->log)
        effect_of(F)->log(S, F, k, t);
}

static void sim_free(sim *S)
{
    if (S->ranks)
        for (int r = 0; r < S->world; r++) {
            if (S->ranks[r].out.gz) /* a case given up on before its traces were closed */
                gzclose(S->ranks[r].out.gz);
            ob_free(&S->ranks[r].out);
        }
    free(S->ranks);
    free(S->node_off);
    free(S->node_drift);
    if (S->reqs)
        for (int i = 0; i < S->nreqs; i++)
            free(S->reqs[i].steps);
    free(S->reqs);
    for (size_t i = 0; i < S->nlogs; i++)
        free(S->logs[i].text);
    free(S->logs);
    free(S->saved);
    free(S->ts);
    free(S->markers);
    free(S->batches);
}

teller_sim_opts teller_sim_defaults(void)
{
    teller_sim_opts o = {0};
    o.nodes = 2;
    o.gpus_per_node = 4;
    o.tp = 4;
    o.pp = 2;
    o.dp = 1;
    o.steps = 60;
    o.model = "8b";
    o.engine = "vllm";
    o.faults = 0;
    o.fault_rate = 0.3;
    o.severity = 1.0;
    o.seed = 1;
    return o;
}

teller_status teller_sim_check(const teller_sim_opts *o, teller_error *err)
{
    if (o->nodes < 1 || o->nodes > 64 || o->gpus_per_node < 1 || o->gpus_per_node > 16)
        return teller_error_set(err, TELLER_ERR_ARG, "simulate", 0, "--nodes must be 1..64 and --gpus-per-node 1..16");
    if (o->tp < 1 || o->pp < 1 || o->dp < 1 || (long long)o->tp * o->pp * o->dp != o->nodes * o->gpus_per_node)
        return teller_error_set(err, TELLER_ERR_ARG, "simulate", 0,
                                "tp (%d) x pp (%d) x dp (%d) must equal the GPUs in the run (%d nodes x %d GPUs = %d)",
                                o->tp, o->pp, o->dp, o->nodes, o->gpus_per_node, o->nodes * o->gpus_per_node);
    if (o->steps < 1 || o->steps > 100000)
        return teller_error_set(err, TELLER_ERR_ARG, "simulate", 0, "--steps must be 1..100000, not %d", o->steps);
    if (!find_model(o->model))
        return teller_error_set(err, TELLER_ERR_ARG, "simulate", 0, "unknown --model '%s' (8b, 70b, moe)", o->model);
    if (strcmp(o->engine, "vllm") && strcmp(o->engine, "sglang"))
        return teller_error_set(err, TELLER_ERR_ARG, "simulate", 0, "unknown --engine '%s' (vllm, sglang)", o->engine);
    if (!(o->fault_rate >= 0 && o->fault_rate <= 1))
        return teller_error_set(err, TELLER_ERR_ARG, "simulate", 0, "--fault-rate must be within 0..1");
    if (!(o->severity > 0 && o->severity <= 100))
        return teller_error_set(err, TELLER_ERR_ARG, "simulate", 0, "--severity must be positive");
    return TELLER_OK;
}

/* Kineto floors its base time to a 7,889,238 s boundary so doubles keep ns. */
#define KINETO_BASE_PERIOD_NS 7889238000000000LL

/* Sets up the case: its clocks, its ranks' trace files with their
 * headers, the start-up log lines and the requests. On an error what was
 * made is left for sim_free. */
static teller_status sim_open(sim *S, const teller_sim_opts *o, const char *dir, teller_error *err)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/logs", dir);
    if (teller_mkdir_p(path, 0755) != 0)
        return teller_error_set(err, TELLER_ERR_IO, dir, 0, "cannot create the case directory");
    S->o = *o;
    S->m = find_model(o->model);
    S->world = o->nodes * o->gpus_per_node;
    S->dir = dir;
    /* the engines turn their custom all-reduce off across nodes and for
     * other group sizes (vLLM's and SGLang's CustomAllreduce) */
    S->car = !o->nccl_only && o->tp <= o->gpus_per_node && (o->tp == 2 || o->tp == 4 || o->tp == 6 || o->tp == 8);
    snprintf(S->car_name[0], sizeof S->car_name[0], K_CAR_FMT, "1stage", o->tp);
    snprintf(S->car_name[1], sizeof S->car_name[1], K_CAR_FMT, "2stage", o->tp);
    rng_seed(&S->r, o->seed * 0x9E3779B97F4A7C15ull + 12345);
    S->t0 = 1795000000000000000LL + (int64_t)(o->seed % 1000) * 3600000000000LL;
    S->base_ns = S->t0 / KINETO_BASE_PERIOD_NS * KINETO_BASE_PERIOD_NS;
    S->ranks = calloc((size_t)S->world, sizeof *S->ranks);
    S->node_off = calloc((size_t)o->nodes, sizeof *S->node_off);
    S->node_drift = calloc((size_t)o->nodes, sizeof *S->node_drift);
    S->saved = calloc((size_t)S->world, sizeof *S->saved);
    S->ts = calloc((size_t)o->steps, sizeof *S->ts);
    S->markers = calloc((size_t)o->steps, sizeof *S->markers);
    S->batches = calloc((size_t)o->dp, sizeof *S->batches);
    if (!S->ranks || !S->node_off || !S->node_drift || !S->saved || !S->ts || !S->markers || !S->batches)
        return teller_error_set(err, TELLER_ERR_NOMEM, dir, 0, "out of memory");
    for (int n = 0; n < o->nodes; n++) {
        /* NTP-synchronised hosts: offsets of up to a few ms, drift of a ppm or two */
        S->node_off[n] = (int64_t)uni_in(&S->r, -3e6, 3e6);
        S->node_drift[n] = uni_in(&S->r, -1.5e-6, 1.5e-6);
    }
    for (int r = 0; r < S->world; r++) {
        S->ranks[r].pid = 2000 + (int)(rng_next(&S->r) % 60000);
        snprintf(path, sizeof path, "%s/rank%d.trace.json.gz", dir, r);
        gzFile gz = gzopen(path, "wb1");
        if (!gz)
            return teller_error_set(err, TELLER_ERR_IO, path, 0, "cannot create");
        ob_init(&S->ranks[r].out, gz);
    }
    S->emit = 1;
    S->cur_step = -1;
    write_headers(S);
    startup_logs(S);
    make_requests(S, o->steps);
    return TELLER_OK;
}

/* Whether step k of nsteps carries a fault, drawn into F: at the fault
 * rate (never step 0), of a kind drawn among those asked for that the run
 * can carry (one that ends the run only in its second half). */
static int draw_fault(sim *S, int k, int nsteps, fault_inst *F)
{
    const teller_sim_opts *o = &S->o;
    if (k == 0 || !o->faults || !(uni(&S->r) < o->fault_rate))
        return 0;
    teller_fault cand[TELLER_FAULT_COUNT];
    int nc = 0;
    for (int f = 1; f < TELLER_FAULT_COUNT; f++) {
        const teller_fault_def *d = teller_fault_def_of((teller_fault)f);
        if ((o->faults >> f & 1) && fault_applicable(S, d) && (!d->ends_run || k >= nsteps / 2))
            cand[nc++] = (teller_fault)f;
    }
    if (!nc)
        return 0;
    pick_fault(S, cand[uni_int(&S->r, nc)], F);
    return 1;
}

/* The counterfactual of a faulty step that starts at t: the same step from
 * the same state without fault F (batch b without what F added to it),
 * written nowhere; the random state and the ranks' counters are put back
 * after it. */
static void sim_clean_step(sim *S, const batch *b, const fault_inst *F, int64_t t, step_out *clean)
{
    int d = rank_replica(S, F->rank);
    rng saved_rng = S->r;
    for (int r = 0; r < S->world; r++)
        S->saved[r] = (saved_rank){S->ranks[r].host, S->ranks[r].gpu, S->ranks[r].corr, S->ranks[r].ext,
                                   S->ranks[r].pg_seq};
    S->emit = 0;
    batch bc = *b;
    if (effect_of(F)->recomputes) {
        recompute(&bc, F->tokens, -1);
        bc.graph = bc.prefill_seqs == 0 && bc.decode_seqs > 0;
    }
    sim_step(S, &bc, NULL, t, d, clean);
    S->r = saved_rng;
    for (int r = 0; r < S->world; r++) {
        S->ranks[r].host = S->saved[r].host;
        S->ranks[r].gpu = S->saved[r].gpu;
        S->ranks[r].corr = S->saved[r].corr;
        S->ranks[r].ext = S->saved[r].ext;
        S->ranks[r].pg_seq = S->saved[r].pg_seq;
    }
    S->emit = 1;
}

/* The truth of step k, simulated as out; for a faulty step, its fault F
 * (else NULL) and clean, its counterfactual. */
static void record_truth(sim *S, int k, const fault_inst *F, const step_out *out, const step_out *clean)
{
    truth_step *T = &S->ts[k];
    T->dur = out->end - out->start;
    T->clean = F ? clean->end - clean->start : T->dur;
    if (!F)
        return;
    const sim_effect *e = effect_of(F);
    T->f = *F;
    T->excess = T->dur - T->clean;
    T->abnormal = teller_fault_material(F->kind, T->excess, T->clean);
    T->root_rank = F->rank;
    T->root_ns = out->root_ns;
    memcpy(S->markers[k], out->marker, sizeof S->markers[k]);
    T->root_op = e->root_is_step ? S->markers[k] : out->root_op ? out->root_op : e->root_op ? e->root_op : "";
    T->root_layer = out->root_layer ? out->root_layer : layer_of_root(F->kind, T->root_op);
}

/* Step k of every replica at once, from time t: each replica's own batch
 * (bs), the fault F (or NULL) in its rank's replica. out is the step as a
 * whole: it ends with its slowest replica, and its root, marker and hang
 * are the faulty replica's (replica 0's without a fault); the faulty
 * replica's counterfactual clean likewise ends no sooner than the others.
 * Replicas start their steps together, as engines whose data-parallel
 * ranks agree on each step's batch sizes first (vLLM's DP coordination). */
static void sim_replicas(sim *S, int k, const batch *bs, const fault_inst *F, int64_t t, int64_t *last_metrics,
                         step_out *out, step_out *clean)
{
    int fd = F ? rank_replica(S, F->rank) : 0;
    memset(out, 0, sizeof *out);
    if (F)
        sim_clean_step(S, &bs[fd], F, t, clean);
    step_logs(S, k, &bs[0], t, F, last_metrics);
    int64_t end = t;
    for (int d = 0; d < S->o.dp && !S->nomem; d++) {
        step_out o;
        sim_step(S, &bs[d], F, t, d, &o);
        if (d == fd)
            *out = o;
        else if (o.end > end)
            end = o.end;
    }
    if (out->end < end)
        out->end = end;
    if (F && clean->end < end)
        clean->end = end;
}

/* Simulates the steps, each after the last with an idle gap; returns how
 * many the case has (a hang ends it). */
static int sim_steps(sim *S)
{
    int nsteps = S->o.steps;
    int64_t t = S->t0, last_metrics = S->t0;
    for (int k = 0; k < nsteps; k++) {
        fault_inst F, *Fp = draw_fault(S, k, nsteps, &F) ? &F : NULL;
        S->cur_step = k;
        for (int d = 0; d < S->o.dp; d++)
            schedule(S, (uint32_t)k, t, d, &S->batches[d],
                     Fp && effect_of(Fp)->recomputes && rank_replica(S, Fp->rank) == d ? Fp->tokens : 0);
        step_out clean, out;
        sim_replicas(S, k, S->batches, Fp, t, &last_metrics, &out, &clean);
        if (S->nomem)
            break;
        record_truth(S, k, Fp, &out, &clean);
        finish_requests(S, out.end);
        if (out.hung)
            return k + 1;
        t = out.end + (int64_t)uni_in(&S->r, 150000, 450000);
    }
    return nsteps;
}

/* Ends and closes every rank's trace; st is the status so far, returned
 * unless a trace fails to close. */
static teller_status close_traces(sim *S, teller_status st, teller_error *err)
{
    for (int r = 0; r < S->world; r++) {
        obuf *ob = &S->ranks[r].out;
        ob_fmt(ob, "\n  ],\n  \"traceName\": \"rank%d.trace.json\"\n}\n", r);
        ob_flush(ob);
        int failed = ob->failed;
        if (gzclose(ob->gz) != Z_OK || failed)
            st = teller_error_set(err, TELLER_ERR_IO, S->dir, 0, "writing rank %d's trace failed", r);
        ob->gz = NULL;
    }
    return st;
}

/* Writes logs/node<N>.log, each node's lines in time order, and numbers
 * them for the truth's log_steps. */
static teller_status write_logs(sim *S, teller_error *err)
{
    char path[4096];
    teller_sort(S->logs, S->nlogs, sizeof *S->logs, log_cmp);
    for (int n = 0; n < S->o.nodes; n++) {
        snprintf(path, sizeof path, "%s/logs/node%d.log", S->dir, n);
        FILE *f = fopen(path, "w");
        if (!f)
            return teller_error_set(err, TELLER_ERR_IO, path, 0, "cannot create");
        uint32_t line = 0;
        for (size_t i = 0; i < S->nlogs; i++)
            if (S->logs[i].node == n) {
                /* `teller run` puts the arrival time in front: the node's clock at emission */
                if (S->o.log_capture)
                    fprintf(f, "%lld ", (long long)local_ns(S, n, S->logs[i].t));
                fprintf(f, "%s\n", S->logs[i].text);
                S->logs[i].line = ++line;
            }
        if (fclose(f) != 0)
            return teller_error_set(err, TELLER_ERR_IO, path, 0, "write failed");
    }
    return TELLER_OK;
}

teller_status teller_simulate(const teller_sim_opts *o, const char *dir, teller_error *err)
{
    teller_status st = teller_sim_check(o, err);
    if (st)
        return st;
    sim S;
    memset(&S, 0, sizeof S);
    if ((st = sim_open(&S, o, dir, err)) != TELLER_OK) {
        sim_free(&S);
        return st;
    }
    int nsteps = sim_steps(&S);
    st = S.nomem ? teller_error_set(err, TELLER_ERR_NOMEM, dir, 0, "out of memory while simulating") : TELLER_OK;
    st = close_traces(&S, st, err);
    if (st == TELLER_OK)
        st = write_logs(&S, err);
    if (st == TELLER_OK)
        st = write_truth(&S, nsteps, err);
    sim_free(&S);
    return st;
}

teller_status teller_simulate_corpus(const teller_sim_opts *base, int keep_topology, int n, const char *dir,
                                     teller_error *err)
{
    if (n < 1 || n > 100000)
        return teller_error_set(err, TELLER_ERR_ARG, "simulate", 0, "--corpus wants 1..100000 cases");
    rng r;
    rng_seed(&r, base->seed ^ 0xC0FFEEull);
    static const char *const models[] = {"8b", "8b", "8b", "moe", "moe", "70b"};
    for (int i = 0; i < n; i++) {
        teller_sim_opts o = *base;
        o.engine = uni(&r) < 0.6 ? "vllm" : "sglang";
        o.model = models[uni_int(&r, 6)];
        o.nodes = uni(&r) < 0.3 ? 1 : 2;
        o.gpus_per_node = uni(&r) < 0.5 ? 2 : 4;
        int world = o.nodes * o.gpus_per_node;
        if (o.nodes == 1)
            o.tp = uni(&r) < 0.7 ? world : world / 2;
        else
            o.tp = uni(&r) < 0.3 ? world : o.gpus_per_node;
        o.pp = world / o.tp;
        if (keep_topology) {
            o.nodes = base->nodes;
            o.gpus_per_node = base->gpus_per_node;
            o.tp = base->tp;
            o.pp = base->pp;
        }
        o.steps = 24 + uni_int(&r, 25);
        o.severity = base->severity * uni_in(&r, 0.6, 1.4);
        o.seed = rng_next(&r) % 1000000007ull;
        if (!o.faults)
            o.faults = ((1u << TELLER_FAULT_COUNT) - 1) & ~1u;
        char sub[4096];
        snprintf(sub, sizeof sub, "%s/case_%04d", dir, i);
        teller_status st = teller_simulate(&o, sub, err);
        if (st)
            return st;
    }
    return TELLER_OK;
}
