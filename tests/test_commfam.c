/*
 * test_commfam.c - the communication kernel families (src/tree/commfam.c):
 * names as the profiler writes them, and hand-made Kineto runs of every
 * family whose instances must line up across ranks as NCCL's do.
 *
 * The kernel names and launch shapes are the engines' own:
 *  - vLLM csrc/custom_all_reduce.cuh (and SGLang's sgl-kernel
 *    csrc/allreduce/custom_all_reduce.cuh, the same kernels in namespace
 *    vllm): cross_device_reduce_1stage/_2stage<T, ngpus>(RankData*,
 *    RankSignals, Signal*, T*, int, int), min(36, packs / 512) blocks of
 *    512 threads on the caller's stream;
 *  - SGLang sgl-kernel csrc/allreduce/trt_reduce_internal.cu (from
 *    TensorRT-LLM's customAllReduceKernels.cu): trt_llm::
 *    oneShotAllReduceKernel<T, RANKS_PER_NODE, COPY_INPUT>(AllReduceParams);
 *  - FlashInfer's trtllm_allreduce_fusion (TensorRT-LLM
 *    communicationKernels/allReduceFusionKernels.cu):
 *    allreduce_fusion_kernel_oneshot_lamport<Pattern, T, NRanks, Fp32Acc,
 *    TriggerCompletionAtEnd>(AllReduceFusionParams<T>), the name as
 *    SGLang's profiles show it;
 *  - PyTorch torch/csrc/distributed/c10d/symm_mem/CUDASymmetricMemoryOps.cu:
 *    multimem_all_reduce_kernel in an anonymous namespace, verbatim from
 *    ../shared/data/traces/tracelens/b200/eager_trace.json.gz;
 *  - DeepEP csrc/kernels/intranode.cu: deep_ep::intranode::notify_dispatch
 *    <kNumRanks> (1 + ranks blocks of 128 threads), dispatch<kNumRanks,
 *    768, kNumTMABytesPerWarp> and combine (num_sms blocks of 768), on
 *    DeepEP's own communication stream; get_dispatch_layout is local work.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "teller/diagnose.h"
#include "teller/ingest.h"
#include "teller/tree.h"

#define K_CAR "void vllm::cross_device_reduce_1stage<__nv_bfloat16, 2>(vllm::RankData*, vllm::RankSignals, vllm::Signal*, __nv_bfloat16*, int, int)"
#define K_TRT "void trt_llm::oneShotAllReduceKernel<__nv_bfloat16, 2, true>(trt_llm::AllReduceParams)"
#define K_FUSION "void flashinfer::trtllm_allreduce_fusion::allreduce_fusion_kernel_oneshot_lamport<(flashinfer::trtllm_allreduce_fusion::AllReduceFusionPattern)1, __nv_bfloat16, 2, false, false>(flashinfer::trtllm_allreduce_fusion::AllReduceFusionParams<__nv_bfloat16>)"
#define K_SYMM "void (anonymous namespace)::multimem_all_reduce_kernel<c10::BFloat16, 16>(c10::BFloat16*, unsigned long, unsigned int**, unsigned long, unsigned long)"
#define K_NOTIFY "void deep_ep::intranode::notify_dispatch<2>(int const*, int*, int const*, int*, int, int, int, bool const*, int*, int*, int, int, void**, int**, int, int)"
#define K_DISPATCH "void deep_ep::intranode::dispatch<2, 768, 8192>(int4*, float*, int*, long*, float*, int*, int*, int4 const*, float const*, long const*, float const*, bool const*, int const*, int, int, int, int, int, void**, int, int, int)"
#define K_COMBINE "void deep_ep::intranode::combine<__nv_bfloat16, 2, 768, 4096>(__nv_bfloat16*, float*, __nv_bfloat16 const*, float const*, __nv_bfloat16 const*, __nv_bfloat16 const*, int const*, int const*, int const*, int*, int, int, int, void**, int, int, int)"
#define K_LAYOUT "void deep_ep::layout::get_dispatch_layout<256, 32, 8>(long const*, int*, int*, int*, bool*, int, int, int, int)"

static void test_family_names(void)
{
    static const struct {
        const char           *name;
        teller_comm_family_id fam;
        const char           *op;
    } k[] = {
        {K_CAR, TELLER_COMM_CUSTOM_AR, "allreduce"},
        {"void vllm::cross_device_reduce_2stage<__nv_bfloat16, 8>(vllm::RankData*, vllm::RankSignals, vllm::Signal*, __nv_bfloat16*, int, int)",
         TELLER_COMM_CUSTOM_AR, "allreduce"},
        {K_TRT, TELLER_COMM_TRT_AR, "allreduce"},
        {K_FUSION, TELLER_COMM_AR_FUSION, "allreduce"},
        {K_SYMM, TELLER_COMM_SYMM_MEM, "allreduce"},
        {K_NOTIFY, TELLER_COMM_DEEP_EP, "notify_dispatch"},
        {K_DISPATCH, TELLER_COMM_DEEP_EP, "dispatch"},
        {K_COMBINE, TELLER_COMM_DEEP_EP, "combine"},
        {"ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)", TELLER_COMM_NCCL, ""},
        {"ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)", TELLER_COMM_NCCL, ""},
        /* local work: DeepEP's layout, a reduction, a norm whose parameter
         * type names a fused all-reduce */
        {K_LAYOUT, TELLER_COMM_NONE, ""},
        {"void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::MeanOps<float, float, float, float>, unsigned int, float, 4> >(at::native::ReduceOp<float, at::native::MeanOps<float, float, float, float>, unsigned int, float, 4>)",
         TELLER_COMM_NONE, ""},
        {"void flashinfer::norm::RMSNormKernel<8u, __nv_bfloat16>(flashinfer::trtllm_allreduce_fusion::AllReduceFusionParams<__nv_bfloat16>)",
         TELLER_COMM_NONE, ""},
    };
    for (size_t i = 0; i < sizeof k / sizeof *k; i++) {
        char op[64];
        teller_comm_family_id f = teller_comm_family_of(k[i].name, op, sizeof op);
        if (f != k[i].fam || strcmp(op, k[i].op))
            fprintf(stderr, "  %s: family %d op '%s'\n", k[i].name, (int)f, op);
        CHECK_EQ_INT(f, k[i].fam);
        CHECK(!strcmp(op, k[i].op));
        CHECK_EQ_INT(teller_name_is_comm(k[i].name), k[i].fam != TELLER_COMM_NONE);
    }
    CHECK(teller_comm_family_get(TELLER_COMM_DEEP_EP)->match == TELLER_COMM_MATCH_ORDER);
    CHECK(teller_comm_family_get(TELLER_COMM_NCCL)->match == TELLER_COMM_MATCH_SEQ);
    CHECK(teller_comm_family_get(TELLER_COMM_NONE) == NULL);
}

/* One communication kernel of a hand-made step: its name, stream, grid,
 * block and duration (µs). */
typedef struct kspec {
    const char *name;
    int         stream, grid, block;
    double      dur;
} kspec;

/* Writes DIR/rank<r>.json for ranks 0..1: steps ProfilerStep#first[r] ..
 * #(nsteps - 1), 1 ms apart, each a gemm of 100 us then the n kernels of
 * ks on their streams, launched under cpu_op `host`. A kernel starts at
 * its slot (130 + 100 i us into the step) or when the rank's GPU is free,
 * and ends for every rank that runs it when the last one has run its
 * time: a collective. A step's annotation ends 20 us after its rank's
 * last kernel (its synchronize). Rank skip_rank skips kernel skip_k of step
 * skip_step; in step slow_step the gemm of rank slow_rank takes slow_us
 * more. A kernel starts after its launch. */
typedef struct runspec {
    const kspec *ks;
    int          n, nsteps;
    const char  *host;
    int          first[2];
    int          skip_rank, skip_step, skip_k;
    int          slow_rank, slow_step;
    double       slow_us;
    double       period_us; /* between steps; 0: 1000 */
    int          host_waits_k; /* >= 0: after launching kernel host_waits_k the host waits (a CPU-side
                                * spin, no event) until that kernel ends, then launches the rest */
} runspec;

static void write_run(const char *dir, const runspec *R)
{
    FILE *f[2];
    for (int r = 0; r < 2; r++) {
        char path[600];
        snprintf(path, sizeof path, "%s/rank%d.json", dir, r);
        f[r] = fopen(path, "w");
        CHECK(f[r] != NULL);
    }
    if (!f[0] || !f[1]) {
        for (int r = 0; r < 2; r++)
            if (f[r])
                fclose(f[r]);
        return;
    }
    int corr[2] = {0, 0};
    for (int r = 0; r < 2; r++)
        fprintf(f[r], "{\"distributedInfo\": {\"rank\": %d, \"world_size\": 2}, \"traceEvents\": [\n", r);
    for (int k = 0; k < R->nsteps; k++) {
        /* pass 0 finds when each rank's GPU work ends, for its marker (the
         * step ends at its synchronize); pass 1 writes */
        double t = (R->period_us > 0 ? R->period_us : 1000.0) * k, done[2] = {0, 0};
        for (int pass = 0; pass < 2; pass++) {
            double avail[2], host[2] = {t + 30, t + 30};
            int in[2];
            for (int r = 0; r < 2; r++) {
                in[r] = k >= R->first[r];
                double g = 100 + (r == R->slow_rank && k == R->slow_step ? R->slow_us : 0);
                avail[r] = t + 20 + g;
                if (!in[r] || !pass)
                    continue;
                corr[r]++;
                fprintf(f[r],
                        "{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"ProfilerStep#%d\",\"pid\":10,\"tid\":10,\"ts\":%.3f,\"dur\":%.3f},\n"
                        "{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaLaunchKernel\",\"pid\":10,\"tid\":10,\"ts\":%.3f,\"dur\":5,\"args\":{\"correlation\":%d}},\n"
                        "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"gemm\",\"pid\":0,\"tid\":7,\"ts\":%.3f,\"dur\":%.3f,\"args\":{\"correlation\":%d,\"grid\":[8,1,1],\"block\":[128,1,1]}},\n",
                        k, t, done[r] + 20 - t, t + 10, corr[r], t + 20, avail[r] - t - 20, corr[r]);
            }
            for (int i = 0; i < R->n; i++) {
                int runs[2];
                double start[2], end = 0;
                for (int r = 0; r < 2; r++) {
                    runs[r] = in[r] && !(r == R->skip_rank && k == R->skip_step && i == R->skip_k);
                    start[r] = t + 130 + 100 * i > avail[r] ? t + 130 + 100 * i : avail[r];
                    if (start[r] < host[r] + 15)
                        start[r] = host[r] + 15;
                    if (runs[r] && start[r] + R->ks[i].dur > end)
                        end = start[r] + R->ks[i].dur;
                }
                for (int r = 0; r < 2; r++) {
                    if (!runs[r])
                        continue;
                    avail[r] = end;
                    double h = host[r];
                    host[r] = i == R->host_waits_k ? end + 10 : h + 40;
                    if (!pass)
                        continue;
                    corr[r]++;
                    fprintf(f[r],
                            "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"%s\",\"pid\":10,\"tid\":10,\"ts\":%.3f,\"dur\":20},\n"
                            "{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaLaunchKernel\",\"pid\":10,\"tid\":10,\"ts\":%.3f,\"dur\":5,\"args\":{\"correlation\":%d}},\n"
                            "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"%s\",\"pid\":0,\"tid\":%d,\"ts\":%.3f,\"dur\":%.3f,\"args\":{\"correlation\":%d,\"grid\":[%d,1,1],\"block\":[%d,1,1]}},\n",
                            R->host, h, h + 10, corr[r], R->ks[i].name, R->ks[i].stream, start[r], end - start[r], corr[r],
                            R->ks[i].grid, R->ks[i].block);
                }
            }
            for (int r = 0; r < 2; r++)
                done[r] = avail[r];
        }
    }
    for (int r = 0; r < 2; r++) {
        /* a closing instant keeps the array's last element comma-free */
        fprintf(f[r], "{\"ph\":\"i\",\"cat\":\"cpu_instant_event\",\"name\":\"end\",\"pid\":10,\"tid\":10,\"ts\":%.3f,\"s\":\"t\"}\n]}\n",
                1000.0 * R->nsteps);
        fclose(f[r]);
    }
}

static teller_store *load_run(const char *dir)
{
    teller_store *st = teller_store_create();
    teller_error err;
    teller_error_clear(&err);
    for (int r = 0; r < 2; r++) {
        char path[600];
        snprintf(path, sizeof path, "%s/rank%d.json", dir, r);
        CHECK_EQ_INT(teller_ingest_file(st, path, NULL, &err), TELLER_OK);
    }
    CHECK_EQ_INT(teller_tree_build(st, NULL, &err), TELLER_OK);
    return st;
}

/* The collectives whose kernels are named `name`: how many, and how many
 * have both ranks. */
static void count_instances(const teller_store *st, const char *name, size_t *n, size_t *pairs)
{
    const teller_collective *co = teller_store_collectives(st);
    const teller_coll_member *mem = teller_store_coll_members(st);
    const teller_events *ev = teller_store_events(st);
    *n = *pairs = 0;
    for (size_t c = 0; c < teller_store_num_collectives(st); c++) {
        if (strcmp(teller_store_str(st, ev->name[mem[co[c].first_member].kernel]), name))
            continue;
        ++*n;
        int both = co[c].num_members == 2;
        for (uint32_t m = 0; both && m < co[c].num_members; m++) {
            uint32_t e = mem[co[c].first_member + m].kernel;
            /* members of one instance ran in one step, at one place in it */
            both = ev->step[e] == ev->step[mem[co[c].first_member].kernel] &&
                   ev->start_ns[e] == ev->start_ns[mem[co[c].first_member].kernel];
        }
        *pairs += (size_t)both;
    }
}

static void rm_run(const char *dir)
{
    char path[600];
    for (int r = 0; r < 2; r++) {
        snprintf(path, sizeof path, "%s/rank%d.json", dir, r);
        unlink(path);
    }
    rmdir(dir);
}

/* Every family's kernels are collectives: two per step on each of two
 * ranks pair up, step by step, and count as the step's comm time. */
static void test_families_pair_across_ranks(void)
{
    static const kspec fams[][3] = {
        {{K_CAR, 7, 1, 512, 12}, {K_CAR, 7, 1, 512, 12}},
        {{K_TRT, 7, 1, 512, 14}, {K_TRT, 7, 1, 512, 14}},
        {{K_FUSION, 7, 4, 1024, 16}, {K_FUSION, 7, 4, 1024, 16}},
        {{K_SYMM, 7, 8, 1024, 10}, {K_SYMM, 7, 8, 1024, 10}},
        {{K_NOTIFY, 21, 3, 128, 8}, {K_DISPATCH, 21, 20, 768, 40}, {K_COMBINE, 21, 20, 768, 35}},
    };
    static const int nk[] = {2, 2, 2, 2, 3};
    for (size_t f = 0; f < sizeof nk / sizeof *nk; f++) {
        char dir[] = "/tmp/teller_commfam_XXXXXX";
        CHECK(mkdtemp(dir) != NULL);
        runspec R = {fams[f], nk[f], 3, f == 4 ? "DeepEP::Buffer::dispatch" : "vllm::all_reduce", {0, 0}, -1, -1, -1, -1, -1, 0, 0, -1};
        write_run(dir, &R);
        teller_store *st = load_run(dir);
        teller_tree_stats s;
        teller_tree_stats_get(st, &s);
        CHECK_EQ_INT(s.comm_kernels, 2 * 3 * (uint64_t)nk[f]);
        size_t n, pairs;
        count_instances(st, fams[f][0].name, &n, &pairs);
        size_t same = fams[f][0].name == fams[f][1].name ? 2 : 1;
        CHECK_EQ_INT(n, 3 * same);
        CHECK_EQ_INT(pairs, 3 * same);
        teller_step_summary *sum = NULL;
        size_t ns = 0;
        teller_error err;
        teller_error_clear(&err);
        CHECK_EQ_INT(teller_step_summaries(st, &sum, &ns, &err), TELLER_OK);
        CHECK_EQ_INT(ns, 6);
        for (size_t i = 0; i < ns; i++) {
            int64_t want = 0;
            for (int k = 0; k < nk[f]; k++)
                want += (int64_t)(fams[f][k].dur * 1000);
            CHECK_EQ_INT(sum[i].comm_ns, want);
            CHECK_EQ_INT(sum[i].kernel_ns, 100000);
        }
        free(sum);
        teller_store_free(st);
        rm_run(dir);
    }
}

/* A step ends with its GPU work on every rank, also on one whose profile
 * began an iteration later (its steps numbered from 1): rank 1's last
 * step launches a kernel that runs 450 us past its annotation. */
static void test_step_ends_with_its_gpu_work(void)
{
    char dir[] = "/tmp/teller_commfam_XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    for (int r = 0; r < 2; r++) {
        char path[600];
        snprintf(path, sizeof path, "%s/rank%d.json", dir, r);
        FILE *f = fopen(path, "w");
        CHECK(f != NULL);
        if (!f)
            return;
        fprintf(f, "{\"distributedInfo\": {\"rank\": %d, \"world_size\": 2}, \"traceEvents\": [\n", r);
        for (int k = r; k < 3; k++) {
            double t = 1000.0 * k, dur = r == 1 && k == 2 ? 500 : 50;
            fprintf(f,
                    "{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"ProfilerStep#%d\",\"pid\":10,\"tid\":10,\"ts\":%.3f,\"dur\":100},\n"
                    "{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaLaunchKernel\",\"pid\":10,\"tid\":10,\"ts\":%.3f,\"dur\":5,\"args\":{\"correlation\":%d}},\n"
                    "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"gemm\",\"pid\":0,\"tid\":7,\"ts\":%.3f,\"dur\":%.3f,\"args\":{\"correlation\":%d}}%s\n",
                    k, t, t + 10, k + 1, t + 50, dur, k + 1, k == 2 ? "" : ",");
        }
        fprintf(f, "]}\n");
        fclose(f);
    }
    teller_store *st = load_run(dir);
    const teller_step *rows = teller_store_steps(st);
    const teller_events *ev = teller_store_events(st);
    CHECK_EQ_INT(teller_store_num_steps(st), 5);
    for (size_t r = 0; r < teller_store_num_steps(st); r++) {
        int64_t last = INT64_MIN;
        for (size_t i = 0; i < ev->n; i++)
            if ((ev->flags[i] & TELLER_F_GPU) && ev->step[i] == rows[r].step &&
                teller_store_event_rank(st, (uint32_t)i) == rows[r].rank && ev->start_ns[i] + ev->dur_ns[i] > last)
                last = ev->start_ns[i] + ev->dur_ns[i];
        CHECK(last != INT64_MIN && rows[r].end_ns == last);
        static const uint32_t step[] = {0, 1, 1, 2, 2};
        static const int32_t rank[] = {0, 0, 1, 0, 1};
        CHECK(r < 5 && rows[r].step == step[r] && rows[r].rank == rank[r]);
    }
    teller_store_free(st);
    rm_run(dir);
}

/* Instances line up within a step: rank 1's profile begins a step later
 * (its ProfilerStep#1 is the run's step 1), and rank 0 lacks one
 * all-reduce of step 1. In the run's order every later all-reduce would
 * pair with the wrong one; by step, steps 1 and 2 pair as they ran and
 * step 1's all-reduce that rank 0 skipped is the one short of a member. */
static void test_instances_line_up_by_step(void)
{
    char dir[] = "/tmp/teller_commfam_XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    static const kspec ks[] = {{K_CAR, 7, 1, 512, 12}, {K_CAR, 7, 1, 512, 12}, {K_CAR, 7, 1, 512, 12}};
    runspec R = {ks, 3, 3, "vllm::all_reduce", {0, 1}, 0, 1, 0, -1, -1, 0, 0, -1};
    write_run(dir, &R);
    teller_store *st = load_run(dir);
    const teller_collective *co = teller_store_collectives(st);
    const teller_coll_member *mem = teller_store_coll_members(st);
    const teller_events *ev = teller_store_events(st);
    size_t by_step[3][3] = {{0}}; /* step x members */
    for (size_t c = 0; c < teller_store_num_collectives(st); c++) {
        uint32_t k = mem[co[c].first_member].kernel;
        if (ev->step[k] < 3 && co[c].num_members < 3)
            by_step[ev->step[k]][co[c].num_members]++;
    }
    /* step 0: rank 0 alone, 3 instances; step 1: rank 0 skipped its
     * first all-reduce, so 2 in pairs and the last one of rank 1 alone
     * (numbered in order, the rank with fewer runs out first); step 2: 3 pairs */
    CHECK_EQ_INT(by_step[0][1], 3);
    CHECK_EQ_INT(by_step[1][2], 2);
    CHECK_EQ_INT(by_step[1][1], 1);
    CHECK_EQ_INT(by_step[2][2], 3);
    CHECK_EQ_INT(by_step[2][1], 0);
    teller_store_free(st);
    rm_run(dir);
}

/* Kernels of one launch grid line up together: when a rank lacks a small
 * all-reduce (one block), the large ones (36 blocks) that follow it in the
 * step still pair with their peers. */
static void test_grid_keeps_instances_apart(void)
{
    char dir[] = "/tmp/teller_commfam_XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    static const kspec ks[] = {{K_CAR, 7, 1, 512, 12}, {K_CAR, 7, 36, 512, 30}};
    runspec R = {ks, 2, 3, "vllm::all_reduce", {0, 0}, 1, 2, 0, -1, -1, 0, 0, -1};
    write_run(dir, &R);
    teller_store *st = load_run(dir);
    const teller_collective *co = teller_store_collectives(st);
    const teller_coll_member *mem = teller_store_coll_members(st);
    const teller_events *ev = teller_store_events(st);
    size_t big = 0, big_pairs = 0;
    for (size_t c = 0; c < teller_store_num_collectives(st); c++) {
        const teller_args *a = teller_store_event_args(st, mem[co[c].first_member].kernel);
        if (!a || a->grid[0] != 36)
            continue;
        big++;
        big_pairs += co[c].num_members == 2 && ev->dur_ns[mem[co[c].first_member].kernel] == 30000 &&
                     ev->dur_ns[mem[co[c].first_member + 1].kernel] == 30000;
    }
    CHECK_EQ_INT(big, 3);
    CHECK_EQ_INT(big_pairs, 3);
    teller_store_free(st);
    rm_run(dir);
}

/* A hang in a custom all-reduce: in the last step rank 1 never launches it
 * and rank 0's spins until it is torn down 10 s later. The collectives
 * row finds the instance short of rank 1, and names rank 1 the root. */
static void test_custom_all_reduce_hang(void)
{
    char dir[] = "/tmp/teller_commfam_XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    static const kspec ks[] = {{K_CAR, 7, 1, 512, 12}, {K_CAR, 7, 1, 512, 12}};
    runspec R = {ks, 2, 4, "vllm::all_reduce", {0, 0}, 1, 3, 1, -1, -1, 0, 0, -1};
    write_run(dir, &R);
    /* rank 0's last all-reduce waited 10 s: rewrite its duration */
    char path[600], *buf = NULL;
    snprintf(path, sizeof path, "%s/rank0.json", dir);
    FILE *f = fopen(path, "r");
    CHECK(f != NULL);
    size_t cap = 1 << 16, len = f ? fread(buf = malloc(cap), 1, cap - 1, f) : 0;
    if (f)
        fclose(f);
    if (buf) {
        buf[len] = 0;
        char *last = NULL;
        for (char *p = strstr(buf, "\"ts\":3230.000,\"dur\":12.000"); p; p = strstr(p + 1, "\"ts\":3230.000,\"dur\":12.000"))
            last = p;
        CHECK(last != NULL);
        f = last ? fopen(path, "w") : NULL;
        if (f) {
            fwrite(buf, 1, (size_t)(last - buf), f);
            fprintf(f, "\"ts\":3230.000,\"dur\":10000000.000%s", last + strlen("\"ts\":3230.000,\"dur\":12.000"));
            fclose(f);
        }
    }
    free(buf);
    teller_store *st = load_run(dir);
    teller_diagnosis *d = NULL;
    teller_error err;
    teller_error_clear(&err);
    CHECK_EQ_INT(teller_diagnose(st, NULL, &d, &err), TELLER_OK);
    int found = 0;
    for (size_t k = 0; d && k < d->n; k++) {
        const teller_step_pred *p = &d->steps[k].pred;
        if (p->abnormal && p->ncand > 0 && !strcmp(d->steps[k].fault, "nccl_hang")) {
            found = p->cand[0].rank == 1 && strstr(p->cand[0].op, "cross_device_reduce_1stage") != NULL;
            CHECK_EQ_INT(p->step, 3);
        }
    }
    CHECK(found);
    teller_diagnosis_free(d);
    teller_store_free(st);
    rm_run(dir);
}

/* Expert parallelism: DeepEP's notify_dispatch, dispatch and combine in
 * every step; in step 5 rank 1's gemm runs 400 us long, so rank 0 waits
 * in the dispatch for it. The wait is communication, not a slow dispatch:
 * the step's root is rank 1 and its gemm, and rank 0's wait is comm time. */
static void test_expert_parallel_slow_rank(void)
{
    char dir[] = "/tmp/teller_commfam_XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    static const kspec ks[] = {{K_NOTIFY, 21, 3, 128, 8}, {K_DISPATCH, 21, 20, 768, 40}, {K_COMBINE, 21, 20, 768, 35}};
    runspec R = {.ks = ks, .n = 3, .nsteps = 10, .host = "DeepEP::Buffer::dispatch", .first = {0, 0},
                 .skip_rank = -1, .skip_step = -1, .skip_k = -1, .slow_rank = 1, .slow_step = 5, .slow_us = 400,
                 .host_waits_k = -1};
    write_run(dir, &R);
    teller_store *st = load_run(dir);
    teller_diagnosis *d = NULL;
    teller_error err;
    teller_error_clear(&err);
    CHECK_EQ_INT(teller_diagnose(st, NULL, &d, &err), TELLER_OK);
    for (size_t k = 0; d && k < d->n; k++) {
        const teller_step_pred *p = &d->steps[k].pred;
        CHECK_EQ_INT(p->abnormal, p->step == 5);
        if (p->step == 5) {
            CHECK(p->ncand > 0 && p->cand[0].rank == 1 && !strcmp(p->cand[0].op, "gemm"));
        }
    }
    teller_diagnosis_free(d);
    /* rank 0's wait is its comm time (its notify_dispatch waits from its
     * slot, 130 us, until rank 1's gemm ends at 520 us: 390 us over the
     * 83 us of the three kernels), its compute stays 100 us */
    teller_step_summary *sum = NULL;
    size_t ns = 0;
    CHECK_EQ_INT(teller_step_summaries(st, &sum, &ns, &err), TELLER_OK);
    for (size_t i = 0; i < ns; i++) {
        if (sum[i].rank != 0)
            continue;
        CHECK_EQ_INT(sum[i].kernel_ns, 100000);
        CHECK_EQ_INT(sum[i].comm_ns, sum[i].step == 5 ? 473000 : 83000);
    }
    free(sum);
    teller_store_free(st);
    rm_run(dir);
}

/* DeepEP's CPU side waits for notify_dispatch's counters before it
 * launches the dispatch: no event on the host while it spins. When rank 1
 * runs its gemm 3 ms long, rank 0's host waits that long for the
 * collective: a wait for its peer, not a descheduled thread. The GPU ran
 * the collective all through the gap, so the gap cost nothing (a host
 * stall costs what the GPU lost): no host stall on rank 0, and rank 1's
 * gemm, not rank 0's 3 ms notify_dispatch, is the root. */
static void test_host_wait_for_communication(void)
{
    char dir[] = "/tmp/teller_commfam_XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    static const kspec ks[] = {{K_NOTIFY, 21, 3, 128, 8}, {K_DISPATCH, 21, 20, 768, 40}, {K_COMBINE, 21, 20, 768, 35}};
    runspec R = {.ks = ks, .n = 3, .nsteps = 10, .host = "DeepEP::Buffer::dispatch", .first = {0, 0},
                 .skip_rank = -1, .skip_step = -1, .skip_k = -1, .slow_rank = 1, .slow_step = 5, .slow_us = 3000,
                 .period_us = 5000, .host_waits_k = 0};
    write_run(dir, &R);
    teller_store *st = load_run(dir);
    teller_diagnosis *d = NULL;
    teller_error err;
    teller_error_clear(&err);
    CHECK_EQ_INT(teller_diagnose(st, NULL, &d, &err), TELLER_OK);
    int contention = 0, root = 0;
    for (size_t k = 0; d && k < d->n; k++) {
        const teller_diag_step *s = &d->steps[k];
        for (uint32_t q = 0; q < s->ncands; q++)
            contention += d->cands[s->first_cand + q].det == TELLER_FAULT_CPU_CONTENTION &&
                          d->cands[s->first_cand + q].rank == 0;
        if (s->pred.step == 5)
            root = s->pred.abnormal && s->pred.ncand > 0 && s->pred.cand[0].rank == 1 &&
                   !strcmp(s->pred.cand[0].op, "gemm");
    }
    CHECK_EQ_INT(contention, 0);
    CHECK(root);
    teller_diagnosis_free(d);
    teller_store_free(st);
    rm_run(dir);
}

const test_case commfam_tests[] = {
    {"commfam: engine kernels are collectives by family, local work is not", test_family_names},
    {"commfam: each family's kernels pair across ranks step by step and count as comm time",
     test_families_pair_across_ranks},
    {"commfam: instances line up within a step, not in the run's order", test_instances_line_up_by_step},
    {"commfam: a step ends with its GPU work, on a rank whose profile began a step later too",
     test_step_ends_with_its_gpu_work},
    {"commfam: kernels of one launch grid line up together", test_grid_keeps_instances_apart},
    {"commfam: a rank that never launches a custom all-reduce is the hang's root", test_custom_all_reduce_hang},
    {"commfam: a slow rank under DeepEP's dispatch and combine is the root, its peers' wait communication",
     test_expert_parallel_slow_rank},
    {"commfam: a host that waits for a collective to end waits for its peers, not for the CPU",
     test_host_wait_for_communication},
    {NULL, NULL},
};
