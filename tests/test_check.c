/*
 * test_check.c - what a step annotation says of its step, the step alarm's
 * yardstick, and the checker that makes every number of a diagnosis again
 * from the trace (include/teller/check.h): it finds nothing wrong with a
 * real diagnosis, and finds a number changed or made up; where the trace
 * lacks GPU work (a graph replay recorded without its kernels), the GPU
 * figures are unknown, not computed from the gap.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "teller/check.h"
#include "teller/diagnose.h"
#include "teller/ingest.h"
#include "teller/load.h"
#include "teller/perturb.h"
#include "teller/sim.h"
#include "teller/tree.h"

/* The engines' annotations: kind, family, work. */
static void test_check_step_classes(void)
{
    static const struct {
        const char *name;
        teller_step_kind kind;
        const char *family;
        long long work;
    } cases[] = {
        {"execute_context_5(3793)_generation_8(8)", TELLER_STEP_MIXED, "execute_context_#()_generation_#()", 3801},
        {"execute_context_0(0)_generation_12(12)", TELLER_STEP_DECODE, "execute_context_#()_generation_#()", 12},
        {"execute_context_8(1951)_generation_0(0)", TELLER_STEP_PREFILL, "execute_context_#()_generation_#()", 1951},
        /* TraceLens's spelling: the tokens are the sum of query lengths */
        {"execute_32_context_0(sq0sk0sqsq0sqsk0)_generation_32(sq32sk55086sqsq32sqsk55086)", TELLER_STEP_DECODE,
         "execute_#_context_#()_generation_#()", 32},
        {"step[DECODE bs=32]", TELLER_STEP_DECODE, "step[DECODE]", 32},
        {"step[EXTEND bs=4]", TELLER_STEP_PREFILL, "step[EXTEND]", 4},
        {"step[MIXED bs=9]", TELLER_STEP_MIXED, "step[MIXED]", 9},
        {"ProfilerStep#1010", TELLER_STEP_ITERATION, "ProfilerStep#", -1},
        {"my_loop_17", TELLER_STEP_OTHER, "my_loop_#", -1},
        {"execute_new_3_cached_5", TELLER_STEP_OTHER, "execute_new_#_cached_#", -1},
        {"execute_context_99999999(1)_generation_1(1)", TELLER_STEP_OTHER, "execute_context_#()_generation_#()", -1},
        {"", TELLER_STEP_OTHER, "", -1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        teller_step_class c;
        teller_step_classify(cases[i].name, &c);
        CHECK_EQ_INT(c.kind, cases[i].kind);
        CHECK(!strcmp(c.family, cases[i].family));
        CHECK_EQ_INT(c.work, cases[i].work);
    }
    teller_step_class c;
    teller_step_classify(NULL, &c);
    CHECK(c.kind == TELLER_STEP_OTHER && c.work == -1);
    /* some vLLM releases mark a worker step execute_new_N_cached_M: steps
     * by default, of one family */
    static const char doc[] =
        "{\"traceEvents\": ["
        "{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"execute_new_2_cached_0\", \"pid\": 1, \"tid\": 1, \"ts\": 10, \"dur\": 100},"
        "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::mm\", \"pid\": 1, \"tid\": 1, \"ts\": 20, \"dur\": 50},"
        "{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"execute_new_0_cached_2\", \"pid\": 1, \"tid\": 1, \"ts\": 200, \"dur\": 100},"
        "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::mm\", \"pid\": 1, \"tid\": 1, \"ts\": 220, \"dur\": 50}]}";
    teller_store *st = teller_store_create();
    teller_error err;
    teller_error_clear(&err);
    CHECK_EQ_INT(teller_ingest_kineto_mem(st, "vllm_worker.json", doc, sizeof doc - 1, NULL, &err), TELLER_OK);
    CHECK_EQ_INT(teller_tree_build(st, NULL, &err), TELLER_OK);
    CHECK_EQ_INT(teller_store_step_count(st), 2);
    teller_store_free(st);
}

/* A simulated faulty case diagnosed: every fact made again from the trace
 * matches and every number of every explanation is a fact or an
 * identifier; a fact changed, a made-up number in a sentence, a fact of the
 * wrong rank, are each found. */
static void test_check_diagnosis(void)
{
    char dir[] = "/tmp/teller_check_XXXXXX";
    sim_faulty(dir, 2, 2, 40, 7001, 1);
    teller_store *st = load_case_ranks(dir, 0, 4);
    teller_error err;
    teller_error_clear(&err);
    teller_diagnosis *d = NULL;
    CHECK_EQ_INT(teller_diagnose(st, NULL, &d, &err), TELLER_OK);
    if (!d) {
        teller_store_free(st);
        rm_rf(dir);
        return;
    }
    teller_check_report r = {0};
    CHECK_EQ_INT(teller_check_diagnosis(st, d, &r, &err), TELLER_OK);
    fprintf(stderr, "  %llu facts, %llu numbers, %llu mismatches%s%s\n", (unsigned long long)r.facts,
            (unsigned long long)r.numbers, (unsigned long long)r.mismatches, r.mismatches ? ": " : "", r.first);
    CHECK(flagged(d) > 0 && r.facts > 20 && r.numbers > r.facts);
    CHECK_EQ_INT(r.mismatches, 0);
    /* the first abnormal step with an OP fact */
    size_t k = 0, f = 0;
    for (; k < d->n; k++) {
        const teller_diag_step *s = &d->steps[k];
        for (f = 0; f < s->nfacts && d->facts[s->first_fact + f].kind != TELLER_FACT_OP; f++)
            ;
        if (s->pred.abnormal && f < s->nfacts)
            break;
    }
    CHECK(k < d->n);
    if (k < d->n) {
        teller_fact *x = &d->facts[d->steps[k].first_fact + f], keep = *x;
        /* a value the trace does not give, printed as it says */
        x->value += 50000;
        teller_fmt_dur(x->text, sizeof x->text, x->value);
        teller_check_report r2 = {0};
        CHECK_EQ_INT(teller_check_diagnosis(st, d, &r2, &err), TELLER_OK);
        CHECK(r2.mismatches >= 1 && strstr(r2.first, "op") != NULL);
        *x = keep;
        /* the same events on another rank */
        x->rank = x->rank == 0 ? 1 : 0;
        teller_check_report r3 = {0};
        CHECK_EQ_INT(teller_check_diagnosis(st, d, &r3, &err), TELLER_OK);
        CHECK(r3.mismatches >= 1);
        *x = keep;
        /* a number no fact holds, in the sentence */
        char *e = d->steps[k].pred.explanation, saved[sizeof d->steps[k].pred.explanation];
        memcpy(saved, e, sizeof saved);
        snprintf(e, sizeof saved, "Step %zu took 123.456 ms.", k);
        teller_check_report r4 = {0};
        CHECK_EQ_INT(teller_check_diagnosis(st, d, &r4, &err), TELLER_OK);
        CHECK(r4.mismatches == 1 && strstr(r4.first, "123.456 ms") != NULL);
        /* a count no fact or identifier of the step holds */
        snprintf(e, sizeof saved, "Its 987654 calls.");
        teller_check_report r5 = {0};
        CHECK_EQ_INT(teller_check_diagnosis(st, d, &r5, &err), TELLER_OK);
        CHECK(r5.mismatches == 1 && strstr(r5.first, "987654") != NULL);
        /* a root's name longer than a prediction's copy of it (a templated
         * kernel's 600 characters, digits in its tail) is a name, whole */
        teller_diag_cand *top = &d->cands[d->steps[k].first_cand];
        uint32_t keep_name = top->name;
        char name[601];
        for (size_t i = 0; i < 600; i++)
            name[i] = "void at::native::kernel<Array<char*, 2>, 7>_"[i % 45];
        name[600] = '\0';
        top->name = teller_store_intern(st, name, 600);
        snprintf(e, sizeof saved, "%.*s.", (int)(sizeof saved - 2), name);
        teller_check_report r8 = {0};
        CHECK_EQ_INT(teller_check_diagnosis(st, d, &r8, &err), TELLER_OK);
        CHECK_EQ_INT(r8.mismatches, 0);
        top->name = keep_name;
        memcpy(e, saved, sizeof saved);
        /* the HTML: a fact printed as another figure */
        char html[512];
        snprintf(html, sizeof html, "<td data-fact=\"%zu:%zu\">%s</td><p data-explains=\"%zu\">took 1.000 s</p>", k, f,
                 keep.text, k);
        teller_check_report r6 = {0};
        CHECK_EQ_INT(teller_check_html(st, d, html, strlen(html), &r6, &err), TELLER_OK);
        CHECK(r6.numbers == 2 && r6.mismatches == 1 && strstr(r6.first, "1.000 s") != NULL);
        snprintf(html, sizeof html, "<td data-fact=\"%zu:%zu\">9.999 ms</td>", k, f);
        teller_check_report r7 = {0};
        CHECK_EQ_INT(teller_check_html(st, d, html, strlen(html), &r7, &err), TELLER_OK);
        CHECK(r7.mismatches == 1);
    }
    teller_diagnosis_free(d);
    teller_store_free(st);
    rm_rf(dir);
}

/* SGLang's mixed steps state their batch, not their prefill tokens, so
 * their durations follow no annotation: their yardstick is the line
 * through the time their fastest rank's compute kernels took, where their
 * median does not serve. A kernel
 * regressed on one rank is then found in mixed steps; a healthy run of the
 * same shape flags none; the checker makes the new figures again. */
static void test_check_mixed_steps_by_compute(void)
{
    for (int faulty = 0; faulty < 2; faulty++) {
        char dir[] = "/tmp/teller_mixed_XXXXXX";
        teller_sim_opts o = teller_sim_defaults();
        o.nodes = 1, o.gpus_per_node = 4, o.tp = 4, o.pp = 1, o.steps = 60, o.seed = 9105;
        o.engine = "sglang";
        o.faults = faulty ? 1u << TELLER_FAULT_KERNEL_REGRESSION : 0;
        o.fault_rate = faulty ? 0.3 : 0;
        sim_case(dir, &o);
        teller_store *st = load_case_ranks(dir, 0, 4);
        teller_error err;
        teller_error_clear(&err);
        teller_diagnosis *d = NULL;
        CHECK_EQ_INT(teller_diagnose(st, NULL, &d, &err), TELLER_OK);
        int mixed = -1, mixed_flagged = 0;
        for (size_t g = 0; d && g < d->ngroups; g++)
            if (d->groups[g].kind == TELLER_STEP_MIXED && d->groups[g].n >= TELLER_DIAG_GROUP_STEPS)
                mixed = (int)g;
        CHECK(mixed >= 0);
        if (d && mixed >= 0) {
            if (faulty) /* the healthy run's few mixed steps are alike enough for a median */
                CHECK(d->groups[mixed].by_compute && d->groups[mixed].spread < 0.05);
            for (uint32_t k = 0; k < d->n; k++)
                mixed_flagged += d->steps[k].group == (uint32_t)mixed && d->steps[k].pred.abnormal;
            CHECK(faulty ? mixed_flagged > 0 : mixed_flagged == 0);
            teller_check_report r = {0};
            CHECK_EQ_INT(teller_check_diagnosis(st, d, &r, &err), TELLER_OK);
            CHECK_EQ_INT(r.mismatches, 0);
            if (faulty)
                fprintf(stderr, "  mixed group: spread %.4f, %d mixed steps flagged, %llu facts checked\n",
                        d->groups[mixed].spread, mixed_flagged, (unsigned long long)r.facts);
        }
        teller_diagnosis_free(d);
        teller_store_free(st);
        rm_rf(dir);
    }
}

/* The shared SGLang decode capture with its CUDA graph's kernels left out
 * (as some profiler settings and ROCm traces leave a graph replay): the
 * step's GPU idle time is unknown, not the whole step, and the diagnosis
 * says the trace lacks it. */
static void test_check_graph_without_kernels(void)
{
    char dir[] = "/tmp/teller_nograph_XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    teller_store *st = teller_store_create();
    teller_error err;
    teller_error_clear(&err);
    CHECK_EQ_INT(teller_ingest_file(st, shared_path("tracelens/inference/sglang_decode/sglang_Qwen3-8B_decode.json.gz"),
                                    NULL, &err),
                 TELLER_OK);
    CHECK_EQ_INT(teller_tree_build(st, NULL, &err), TELLER_OK);
    const teller_events *ev = teller_store_events(st);
    uint8_t *keep = malloc(ev->n + 1);
    size_t dropped = 0;
    CHECK(keep != NULL);
    for (size_t i = 0; keep && i < ev->n; i++) {
        uint32_t p = ev->parent[i];
        keep[i] = !((ev->flags[i] & TELLER_F_GPU) && p != TELLER_NONE && (ev->flags[p] & TELLER_F_GRAPH));
        dropped += !keep[i];
    }
    CHECK(dropped > 400); /* the graph's 544 kernels */
    CHECK_EQ_INT(teller_kineto_write(st, NULL, NULL, keep, dir, &err), TELLER_OK);
    free(keep);
    teller_store_free(st);
    st = load_case_ranks(dir, 0, 1);
    teller_step_summary *sum = NULL;
    size_t n = 0;
    CHECK_EQ_INT(teller_step_summaries(st, &sum, &n, &err), TELLER_OK);
    CHECK(n == 1 && sum && !sum[0].gpu_known && sum[0].unlaunched >= 1 && sum[0].launches > sum[0].unlaunched);
    free(sum);
    teller_diagnosis *d = NULL;
    CHECK_EQ_INT(teller_diagnose(st, NULL, &d, &err), TELLER_OK);
    int said = 0;
    for (size_t i = 0; d && i < d->nnotes; i++)
        said |= strstr(d->notes[i], "lacks GPU work") != NULL;
    CHECK(said);
    teller_diagnosis_free(d);
    teller_store_free(st);
    /* the capture as it is: every launch has its GPU work */
    st = teller_store_create();
    CHECK_EQ_INT(teller_ingest_file(st, shared_path("tracelens/inference/sglang_decode/sglang_Qwen3-8B_decode.json.gz"),
                                    NULL, &err),
                 TELLER_OK);
    CHECK_EQ_INT(teller_tree_build(st, NULL, &err), TELLER_OK);
    CHECK_EQ_INT(teller_step_summaries(st, &sum, &n, &err), TELLER_OK);
    CHECK(n == 1 && sum && sum[0].gpu_known && sum[0].unlaunched == 0);
    free(sum);
    teller_store_free(st);
    rm_rf(dir);
}

const test_case check_tests[] = {
    {"check: step annotations of vLLM, TraceLens, SGLang and PyTorch classified by kind, family and work",
     test_check_step_classes},
    {"check: every fact of a diagnosis made again from the trace; a changed fact, a made-up number are found",
     test_check_diagnosis},
    {"check: SGLang's mixed steps judged by their fastest rank's compute time, the checker agreeing",
     test_check_mixed_steps_by_compute},
    {"check: a graph replay recorded without its kernels leaves the GPU's idle time unknown, said",
     test_check_graph_without_kernels},
    {NULL, NULL},
};
