/*
 * tree.h - call-chain trees, steps and collectives over a loaded store.
 *
 * teller_tree_build runs once after every file of a run is loaded:
 *   1. sorts the event table by (source, pid, tid, start, longer first);
 *   2. nests CPU ranges per thread by time containment;
 *   3. hangs GPU work under the runtime/driver call that launched it, by
 *      correlation id within the source (one graph launch -> many kernels);
 *   4. assigns ranks and nodes, matches collectives across ranks and
 *      estimates per-node clock offsets from collective departures, then
 *      moves every node onto node 0's clock;
 *   5. cuts steps from engine annotations (or the fallback) and stamps
 *      every event with its step.
 * The rules are documented in docs/ARCHITECTURE.md.
 */
#ifndef TELLER_TREE_H
#define TELLER_TREE_H

#include "teller/error.h"
#include "teller/store.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct teller_tree_opts {
    const char *step_pattern;  /* POSIX extended regex for step markers; NULL: built-in set */
    int         gpus_per_node; /* > 0: node = rank / gpus_per_node (overrides the trace) */
    int         jobs;          /* threads for the per-source parts (sort, nesting, launch
                                * links, children lists, finding NCCL kernels, stamping
                                * steps); <= 1: the caller's thread only. The result is the
                                * same whatever the count. */
} teller_tree_opts;

teller_tree_opts teller_tree_defaults(void);
/* The built-in step-marker pattern (a POSIX extended regex), used when
 * step_pattern is NULL. */
const char *teller_step_pattern_default(void);

teller_status teller_tree_build(teller_store *st, const teller_tree_opts *opts, teller_error *err);

/* Numbers computed by teller_tree_build for `teller stats`. */
typedef struct teller_tree_stats {
    uint64_t events;
    uint64_t kernels;         /* KERNEL layer */
    uint64_t kernels_linked;  /* kernels whose parent is their launching API call */
    uint64_t gpu_ops;         /* kernels + memcpy + memset */
    uint64_t gpu_ops_linked;
    uint64_t comm_kernels;    /* kernels flagged COMM */
    uint64_t graph_launches;  /* API calls that launched a graph */
    uint64_t max_graph_fanout;/* most GPU ops under one graph launch */
    uint64_t by_layer[TELLER_LAYER_COUNT];
    uint64_t profiler;        /* records of the profiler's own work (TELLER_F_PROFILER) */
    int64_t  profiler_ns;     /* their time together */
    uint32_t max_depth;
} teller_tree_stats;

void teller_tree_stats_get(const teller_store *st, teller_tree_stats *out);

/* Per step and rank: where the time went. */
typedef struct teller_step_summary {
    uint32_t step;
    int32_t  rank;
    int32_t  node;
    int64_t  start_ns;
    int64_t  dur_ns;      /* step window: marker start to the end of its last GPU work */
    int64_t  kernel_ns;   /* sum of compute kernel durations (not COMM) */
    int64_t  comm_ns;     /* sum of COMM kernel durations */
    int64_t  memcpy_ns;   /* sum of copy and memset durations */
    int64_t  gpu_busy_ns; /* union of all GPU work over all streams */
    int64_t  gpu_idle_ns; /* dur_ns - gpu_busy_ns */
    uint32_t kernels;     /* kernels launched in the step */
    uint32_t launches;    /* API calls that launch GPU work (teller_name_is_launch) */
    uint32_t unlaunched;  /* of those, the ones with no GPU work in the trace (a graph replay recorded
                           * without its kernels, a capture window that cut the GPU's work) */
    int      gpu_known;   /* 0 when the trace lacks GPU work of the step (unlaunched > 0, or its
                           * profiler says it dropped records): gpu_busy_ns and gpu_idle_ns are then
                           * what the trace holds, not what the GPU did */
} teller_step_summary;

/* Computes one summary per row of the step table (same order). *out is
 * malloc'd; the caller frees it. */
teller_status teller_step_summaries(const teller_store *st, teller_step_summary **out, size_t *n,
                                    teller_error *err);

/* The kind of work a step annotation says its step did. */
typedef enum teller_step_kind {
    TELLER_STEP_OTHER = 0, /* an annotation of another family, or none */
    TELLER_STEP_PREFILL,   /* only new sequences' prompts */
    TELLER_STEP_DECODE,    /* only running sequences' next tokens */
    TELLER_STEP_MIXED,     /* both in one batch */
    TELLER_STEP_ITERATION  /* PyTorch's ProfilerStep#N: a training or inference loop's iteration */
} teller_step_kind;

/* What a step annotation says of its step (stepclass.c): vLLM's
 * `execute_[N_]context_P(T...)_generation_D(...)`, SGLang's
 * `step[DECODE|EXTEND|MIXED bs=N]`, PyTorch's `ProfilerStep#N`. */
typedef struct teller_step_class {
    teller_step_kind kind;
    char    family[48];      /* the annotation with digit runs as '#' and what parentheses hold dropped,
                              * so that the steps of one engine loop share it: "ProfilerStep#",
                              * "execute_context_#()_generation_#()", "step[DECODE]" */
    int32_t prefill_seqs;    /* new sequences, -1 unknown */
    int32_t prefill_tokens;  /* their tokens, -1 unknown */
    int32_t decode_seqs;     /* running sequences, -1 unknown */
    int64_t work;            /* tokens processed (prompt tokens + decoders), or SGLang's batch size; -1 unknown */
} teller_step_class;

/* Classifies an annotation's name (NULL or "" for a step without one). */
void teller_step_classify(const char *annotation, teller_step_class *out);
/* N of a PyTorch "ProfilerStep#N" annotation, or -1 for any other name
 * (digits only after the '#', within an int64). */
int64_t teller_step_iteration(const char *annotation);
/* "prefill", "decode", "mixed", "iteration", "other"; static storage. */
const char *teller_step_kind_name(teller_step_kind k);

/* Normalises an operator name for comparison and grouping: drops the
 * parameter list and template arguments, return types and qualifiers
 * before the name ("void ", "std::enable_if<...>::type "), and CUDA API
 * version suffixes ("_v7000"). "void vllm::rotary_embedding_kernel<c10::
 * BFloat16, true>(long const*, ...)" -> "vllm::rotary_embedding_kernel".
 * Writes at most cap bytes (NUL-terminated); returns the length. */
size_t teller_name_normalize(const char *name, char *out, size_t cap);
/* Each run of digits of s becomes one '#', in place (names of one family
 * that differ by sizes, ids or versions); returns the new length. */
size_t teller_name_mask_digits(char *s);

/* True when an API call of that name launches GPU work: a kernel (any
 * launch variant, CUDA or HIP, runtime or driver) or a graph; not a host
 * function. */
int teller_name_is_launch(const char *name);

/* True when a name looks like communication work (NCCL/RCCL kernels and
 * ops, record_param_comms, nccl:* annotations, c10d ops, the kernels of
 * every communication family below). */
int teller_name_is_comm(const char *name);

/* The families of communication kernels (commfam.c; the table, with the
 * source each name was checked against, is in docs/ARCHITECTURE.md). */
typedef enum teller_comm_family_id {
    TELLER_COMM_NONE = 0,
    TELLER_COMM_NCCL,      /* "nccl" anywhere in the name, any case */
    TELLER_COMM_RCCL,      /* "rccl" */
    TELLER_COMM_CUSTOM_AR, /* vllm::cross_device_reduce_1stage/_2stage (vLLM, SGLang's sgl-kernel) */
    TELLER_COMM_TRT_AR,    /* oneShotAllReduceKernel, twoShotAllReduceKernel (TensorRT-LLM, sgl-kernel) */
    TELLER_COMM_AR_FUSION, /* allreduce_fusion_kernel_* (TensorRT-LLM, FlashInfer) */
    TELLER_COMM_SYMM_MEM,  /* one_shot_all_reduce, two_shot_all_reduce, multimem_* (PyTorch) */
    TELLER_COMM_DEEP_EP,   /* deep_ep::{intranode,internode,internode_ll}::dispatch, combine, notify_* */
    TELLER_COMM_FAMILIES
} teller_comm_family_id;

/* How a family's instances line up across ranks. */
typedef enum teller_comm_match {
    TELLER_COMM_MATCH_SEQ,  /* the trace's sequence number (PyTorch's record_param_comms "Seq"), else
                             * the order of the rank's kernels of the key in the run */
    TELLER_COMM_MATCH_ORDER /* the order of the rank's kernels of the family's operation within a
                             * step, kernels of one launch grid together */
} teller_comm_match;

typedef struct teller_comm_family {
    const char       *name;    /* "nccl", "custom_ar", "deep_ep", ... */
    const char       *library; /* who launches the kernels */
    teller_comm_match match;
} teller_comm_family;

/* The family of a kernel name, TELLER_COMM_NONE when it is none; when op
 * is not NULL it receives (cap bytes) the operation the name states for
 * the engines' families ("allreduce", "allgather", DeepEP's "dispatch",
 * "combine", "notify_dispatch", ...), "" for NCCL and RCCL, whose
 * operation the tree reads from "ncclDevKernel_OP_...". */
teller_comm_family_id teller_comm_family_of(const char *name, char *op, size_t cap);
/* The family's row; NULL for TELLER_COMM_NONE or out of range. Static. */
const teller_comm_family *teller_comm_family_get(teller_comm_family_id fam);

#ifdef __cplusplus
}
#endif
#endif
