/*
 * test_real_traces.c - every real trace in ../shared/data/traces loads, and
 * the counts match those computed independently by
 * tests/tools/count_kineto.py (Python's json module, none of our code).
 */
#include <string.h>

#include "check.h"
#include "teller/ingest.h"
#include "teller/tree.h"

typedef struct expect {
    const char *path;
    long events, kernels, linked, comm, steps;
} expect;

/* From `python3 tests/tools/count_kineto.py ../shared/data/traces`. Steps:
 * a trace without annotations has one fallback step. */
static const expect k_expect[] = {
    {"hta/amd_trace/mi250_minitoy_train_ROCm6_2_kineto.json.gz", 115, 14, 14, 0, 2},
    {"hta/cpu_only/rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz", 18, 0, 0, 0, 1},
    {"hta/critical_path/alexnet/benchmark_result_2869224_1695835535_trace.json.gz", 870, 79, 79, 0, 1},
    {"hta/critical_path/cuda_event_sync/event_sync_trace.json.gz", 35, 4, 4, 0, 1},
    {"hta/critical_path/cuda_event_sync_multi_stream/event_sync_trace.json.gz", 59, 3, 3, 0, 1},
    {"hta/critical_path/simple_add/benchmark_result_493459_1694039959_trace.json.gz", 840, 79, 79, 0, 1},
    {"hta/execution_trace/benchmark_simple_add_trace.json.gz", 58, 4, 4, 0, 1},
    {"hta/nccl_parser_config/nccl_data.json.gz", 26935, 2700, 2700, 21, 3},
    {"hta/ns_resolution_trace/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz", 45422, 4350, 4350, 0, 5},
    {"hta/trace_compare/base/base.json.gz", 33, 6, 2, 0, 2},
    {"hta/trace_compare/test/test.json.gz", 34, 5, 1, 0, 2},
    {"hta/trace_file_list/inference_rank_1.json.gz", 14, 4, 4, 0, 1},
    {"hta/trace_filter/sampled_rank-0.json.gz", 4811, 1154, 1154, 10, 2},
    {"hta/trace_filter/sampled_rank-1.json.gz", 4676, 1104, 1104, 10, 2},
    {"hta/triton_example/triton_example.json.gz", 10, 1, 1, 0, 1},
    {"tracelens/b200/eager_trace.json.gz", 22355, 768, 768, 74, 1},
    {"tracelens/h100/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz", 14532, 1465, 1029, 0, 1},
    {"tracelens/inference/sglang_decode/sglang_Qwen3-8B_decode.json.gz", 1471, 555, 555, 0, 1},
    {"tracelens/inference/sglang_prefilldecode/sglang_Qwen3-8B_prefilldecode.json.gz", 58712, 527, 527, 0, 1},
    {"tracelens/inference/vllm_decode_full/graph_execution.json.gz", 1539, 425, 425, 0, 1},
    {"tracelens/mi300/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz", 14806, 1516, 1053, 0, 1},
};

static teller_store *load_one(const char *rel)
{
    teller_store *st = teller_store_create();
    teller_error err;
    teller_error_clear(&err);
    teller_status s = teller_ingest_file(st, shared_path(rel), NULL, &err);
    if (s != TELLER_OK)
        fprintf(stderr, "  %s: %s\n", rel, err.msg);
    CHECK_EQ_INT(s, TELLER_OK);
    s = teller_tree_build(st, NULL, &err);
    CHECK_EQ_INT(s, TELLER_OK);
    return st;
}

static void test_every_kineto_file_matches_independent_counts(void)
{
    for (size_t i = 0; i < sizeof k_expect / sizeof *k_expect; i++) {
        const expect *x = &k_expect[i];
        teller_store *st = load_one(x->path);
        teller_tree_stats s;
        teller_tree_stats_get(st, &s);
        int bad = s.events != (uint64_t)x->events || s.kernels != (uint64_t)x->kernels ||
                  s.kernels_linked != (uint64_t)x->linked || s.comm_kernels != (uint64_t)x->comm ||
                  teller_store_step_count(st) != (uint32_t)x->steps;
        if (bad)
            fprintf(stderr, "  %s: events %llu/%ld kernels %llu/%ld linked %llu/%ld comm %llu/%ld steps %u/%ld\n",
                    x->path, (unsigned long long)s.events, x->events, (unsigned long long)s.kernels, x->kernels,
                    (unsigned long long)s.kernels_linked, x->linked, (unsigned long long)s.comm_kernels, x->comm,
                    teller_store_step_count(st), x->steps);
        CHECK(!bad);
        teller_store_free(st);
    }
}

static uint32_t max_kernels_under_graph(const teller_store *st)
{
    const teller_events *ev = teller_store_events(st);
    uint32_t best = 0;
    for (size_t i = 0; i < ev->n; i++) {
        if (!(ev->flags[i] & TELLER_F_GRAPH))
            continue;
        uint32_t k = 0;
        for (uint32_t c = ev->first_child[i]; c != TELLER_NONE; c = ev->next_sibling[c])
            k += ev->layer[c] == TELLER_LAYER_KERNEL;
        if (k > best)
            best = k;
    }
    return best;
}

static void test_b200_vllm_eager(void)
{
    teller_store *st = load_one("tracelens/b200/eager_trace.json.gz");
    teller_tree_stats s;
    teller_tree_stats_get(st, &s);
    CHECK_EQ_INT(s.kernels, 768);
    CHECK_EQ_INT(s.kernels_linked, 768);
    /* one NCCL all-gather and 73 all-reduces through PyTorch's symmetric
     * memory (vLLM's symm_mem communicator on NVLink SHARP) */
    CHECK_EQ_INT(s.comm_kernels, 74);
    CHECK_EQ_INT(teller_store_step_count(st), 1);
    const teller_step *step = teller_store_steps(st);
    CHECK(!strncmp(teller_store_str(st, teller_store_events(st)->name[step[0].marker]), "execute_context_1(", 18));
    CHECK_EQ_INT(teller_store_source_c(st, 0)->world_size, 8);
    CHECK_EQ_INT(teller_store_source_c(st, 0)->num_devices, 8);
    /* the NCCL kernel carries its collective metadata */
    const teller_events *ev = teller_store_events(st);
    int found = 0;
    for (size_t i = 0; i < ev->n; i++) {
        if (ev->layer[i] != TELLER_LAYER_KERNEL || !(ev->flags[i] & TELLER_F_COMM))
            continue;
        const teller_comm *c = teller_store_event_comm(st, (uint32_t)i);
        found = c && !strcmp(teller_store_str(st, c->collective), "_allgather_base") &&
                !strcmp(teller_store_str(st, c->pg_name), "3") && c->in_nelems == 25136 && c->group_size == 8;
    }
    CHECK(found);
    /* each symmetric-memory all-reduce is a collective of its own (one
     * rank traced: one member each), numbered in the step's order */
    size_t symm = 0;
    const teller_collective *co = teller_store_collectives(st);
    for (size_t c = 0; c < teller_store_num_collectives(st); c++) {
        uint32_t k = teller_store_coll_members(st)[co[c].first_member].kernel;
        if (teller_comm_family_of(teller_store_str(st, ev->name[k]), NULL, 0) != TELLER_COMM_SYMM_MEM)
            continue;
        CHECK_EQ_INT(co[c].num_members, 1);
        /* the NCCL all-gather's group on the same stream: vLLM's TP group */
        CHECK(!strncmp(teller_store_str(st, co[c].key), "fam symm_mem allreduce pg 3 grid ", 33));
        symm++;
    }
    CHECK_EQ_INT(symm, 73);
    teller_store_free(st);
}

static void test_graph_launch_fanout(void)
{
    teller_store *st = load_one("tracelens/inference/vllm_decode_full/graph_execution.json.gz");
    CHECK_EQ_INT(max_kernels_under_graph(st), 421);
    teller_store_free(st);
    st = load_one("tracelens/inference/sglang_decode/sglang_Qwen3-8B_decode.json.gz");
    CHECK_EQ_INT(max_kernels_under_graph(st), 544);
    teller_store_free(st);
}

static void test_legacy_and_rocm_layers(void)
{
    /* legacy spellings (Kernel, Runtime, async_gpu) and ROCm (hip*) map to
     * the same layers as current traces */
    teller_store *st = load_one("hta/trace_file_list/inference_rank_1.json.gz");
    teller_tree_stats s;
    teller_tree_stats_get(st, &s);
    CHECK_EQ_INT(s.by_layer[TELLER_LAYER_KERNEL], 4);
    CHECK_EQ_INT(s.by_layer[TELLER_LAYER_RUNTIME], 8);
    CHECK_EQ_INT(s.kernels_linked, 4);
    teller_store_free(st);
    st = load_one("tracelens/mi300/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz");
    teller_tree_stats_get(st, &s);
    CHECK_EQ_INT(s.by_layer[TELLER_LAYER_RUNTIME], 1707);
    CHECK_EQ_INT(s.by_layer[TELLER_LAYER_FRONTEND], 4266);
    CHECK_EQ_INT(s.by_layer[TELLER_LAYER_BACKEND], 4619);
    teller_store_free(st);
}

static void test_two_ranks_of_one_job(void)
{
    teller_store *st = teller_store_create();
    teller_error err;
    teller_error_clear(&err);
    CHECK_EQ_INT(teller_ingest_file(st, shared_path("hta/trace_filter/sampled_rank-0.json.gz"), NULL, &err), TELLER_OK);
    CHECK_EQ_INT(teller_ingest_file(st, shared_path("hta/trace_filter/sampled_rank-1.json.gz"), NULL, &err), TELLER_OK);
    CHECK_EQ_INT(teller_tree_build(st, NULL, &err), TELLER_OK);
    CHECK_EQ_INT(teller_store_num_sources(st), 2);
    CHECK_EQ_INT(teller_store_source_c(st, 1)->rank, 1);
    /* 10 NCCL kernels on each rank pair up */
    size_t nc = teller_store_num_collectives(st), pairs = 0;
    const teller_collective *co = teller_store_collectives(st);
    for (size_t c = 0; c < nc; c++)
        pairs += co[c].num_members == 2;
    CHECK_EQ_INT(pairs, 10);
    teller_store_free(st);
}

const test_case real_trace_tests[] = {
    {"real: every Kineto file loads and matches independent counts", test_every_kineto_file_matches_independent_counts},
    {"real: b200 vLLM eager step, 768 kernels linked, NCCL metadata", test_b200_vllm_eager},
    {"real: one graph launch fans out to 421 (vLLM) and 544 (SGLang) kernels", test_graph_launch_fanout},
    {"real: legacy and ROCm spellings land in the same layers", test_legacy_and_rocm_layers},
    {"real: two ranks of one job match their collectives", test_two_ranks_of_one_job},
    {NULL, NULL},
};
