/*
 * test_diff.c - teller diff (src/diff): which runs can be compared, and
 * what the diff of two runs says changed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "teller/diff.h"
#include "teller/ingest.h"
#include "teller/sim.h"
#include "teller/tree.h"

/* A tree-built store of one file under ../shared/data/traces. */
static teller_store *load_shared(const char *rel)
{
    teller_store *st = teller_store_create();
    teller_error err;
    teller_error_clear(&err);
    CHECK_EQ_INT(teller_ingest_file(st, shared_path(rel), NULL, &err), TELLER_OK);
    teller_tree_opts to = teller_tree_defaults();
    CHECK_EQ_INT(teller_tree_build(st, &to, &err), TELLER_OK);
    return st;
}

/* A healthy simulated case of 2 ranks, 16 steps, into dir (a mkdtemp template). */
static void sim_pair_case(char *dir, const char *model, const char *engine, uint64_t seed)
{
    teller_sim_opts o = teller_sim_defaults();
    o.nodes = 1;
    o.gpus_per_node = 2;
    o.tp = 2;
    o.pp = 1;
    o.steps = 16;
    o.seed = seed;
    o.fault_rate = 0;
    o.model = model;
    o.engine = engine;
    sim_case(dir, &o);
}

/* teller_diff_check of two stores; frees neither. */
static teller_diff_verdict check_pair(const teller_store *ref, const teller_store *run)
{
    teller_diff_verdict v;
    teller_error err;
    teller_error_clear(&err);
    CHECK_EQ_INT(teller_diff_check(ref, run, &v, &err), TELLER_OK);
    return v;
}

static void test_check_real_pair(void)
{
    teller_store *a = load_shared("hta/trace_compare/base/base.json.gz");
    teller_store *b = load_shared("hta/trace_compare/test/test.json.gz");
    teller_diff_verdict v = check_pair(a, b);
    CHECK_EQ_INT(v.comparable, 1);
    CHECK_EQ_INT(v.common_kinds, 1);
    CHECK(v.kernel_overlap > 0.99);
    /* a run of another rank and another model is not */
    teller_store *c = load_shared("hta/trace_filter/sampled_rank-0.json.gz");
    v = check_pair(a, c);
    CHECK_EQ_INT(v.comparable, 0);
    CHECK(strstr(v.why, "another model") != NULL);
    teller_store_free(a);
    teller_store_free(b);
    teller_store_free(c);
}

static void test_check_sim(void)
{
    char a[] = "/tmp/teller_diff_a_XXXXXX", b[] = "/tmp/teller_diff_b_XXXXXX", c[] = "/tmp/teller_diff_c_XXXXXX",
         d[] = "/tmp/teller_diff_d_XXXXXX", e[] = "/tmp/teller_diff_e_XXXXXX";
    sim_pair_case(a, "8b", "vllm", 1);
    sim_pair_case(b, "8b", "vllm", 2);
    sim_pair_case(c, "70b", "vllm", 3);
    sim_pair_case(d, "moe", "vllm", 4);
    sim_pair_case(e, "8b", "sglang", 5);
    teller_store *sa = load_case_ranks(a, 0, 2), *sb = load_case_ranks(b, 0, 2), *sc = load_case_ranks(c, 0, 2);
    teller_store *sd = load_case_ranks(d, 0, 2), *se = load_case_ranks(e, 0, 2), *s1 = load_case_ranks(b, 0, 1);
    teller_store *empty = teller_store_create();
    teller_error err;
    teller_tree_opts to = teller_tree_defaults();
    CHECK_EQ_INT(teller_tree_build(empty, &to, &err), TELLER_OK);

    teller_diff_verdict v = check_pair(sa, sb);
    CHECK_EQ_INT(v.comparable, 1);
    CHECK_EQ_INT(v.why[0], 0);
    CHECK_EQ_INT(v.ref_ranks, 2);
    v = check_pair(empty, sa);
    CHECK_EQ_INT(v.comparable, 0);
    CHECK(!strcmp(v.why, "the reference holds no step"));
    v = check_pair(sa, empty);
    CHECK(!strcmp(v.why, "the run holds no step"));
    v = check_pair(sa, s1);
    CHECK(!strcmp(v.why, "the reference has 2 ranks and the run 1"));
    v = check_pair(sa, sc); /* 80 layers against 32 */
    CHECK_EQ_INT(v.comparable, 0);
    CHECK(strstr(v.why, "launches 389 kernels in the reference and 965 in the run") != NULL);
    v = check_pair(sd, sa); /* MoE against dense */
    CHECK_EQ_INT(v.comparable, 0);
    CHECK(strstr(v.why, "the reference routes tokens to experts") != NULL);
    v = check_pair(sa, se);
    CHECK(!strcmp(v.why, "the reference's steps are vLLM's and the run's SGLang's: different engines"));

    teller_store *all[] = {sa, sb, sc, sd, se, s1, empty};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        teller_store_free(all[i]);
    rm_rf(a);
    rm_rf(b);
    rm_rf(c);
    rm_rf(d);
    rm_rf(e);
}

/* The diff of ref against run (CHECKed), to free with teller_diff_free. */
static teller_diff *diff_of(const teller_store *ref, const teller_store *run)
{
    teller_diff *d = NULL;
    teller_error err;
    teller_error_clear(&err);
    CHECK_EQ_INT(teller_diff_compute(ref, run, &d, &err), TELLER_OK);
    return d;
}

static void test_diff_real_pair(void)
{
    /* base and test of HTA's trace_compare: the test's second step lost the last kernel of the base's
     * (CUDAFunctor_add<int> at +174 ms) and gained torch ops (All2All_Pooled_Req 311 us, AddmmBackward0
     * 207 us, CatBackward0 11 us); two steps a side cannot tell them from the steps' spread */
    teller_store *a = load_shared("hta/trace_compare/base/base.json.gz");
    teller_store *b = load_shared("hta/trace_compare/test/test.json.gz");
    teller_diff *d = diff_of(a, b);
    if (d) {
        CHECK_EQ_INT(d->nclasses, 1);
        CHECK_EQ_INT(d->classes[0].kind, TELLER_STEP_ITERATION);
        CHECK_EQ_INT(d->classes[0].changed, 0);
        CHECK(d->nchanges >= 3);
        CHECK_EQ_INT(d->changes[0].changed, 0);
        CHECK(!strcmp(d->changes[0].ref_name, "") && !strcmp(d->changes[0].run_name, "All2All_Pooled_Req"));
        CHECK_EQ_INT(d->changes[0].run_ns - d->changes[0].ref_ns, 155500); /* 311 us in one of two steps */
        CHECK(!strcmp(d->changes[1].run_name, "AddmmBackward0"));
        CHECK_EQ_INT(d->changes[1].run_ns, 103500);
        CHECK_EQ_INT(d->nadded + d->ngone, 0); /* the same kernel names on both sides */
    }
    teller_diff_free(d);
    teller_store_free(a);
    teller_store_free(b);
}

/* Makes every kernel of rank 1 whose name holds `name` factor times longer. */
static void slow_kernel(teller_store *st, const char *name, double factor)
{
    teller_events *ev = teller_store_events_mut(st);
    for (size_t e = 0; e < ev->n; e++)
        if (ev->layer[e] == TELLER_LAYER_KERNEL && teller_store_event_rank(st, (uint32_t)e) == 1 &&
            strstr(teller_store_str(st, ev->name[e]), name))
            ev->dur_ns[e] = (int64_t)((double)ev->dur_ns[e] * factor);
}

static void test_diff_sim(void)
{
    char a[] = "/tmp/teller_diff_a_XXXXXX", b[] = "/tmp/teller_diff_b_XXXXXX";
    sim_pair_case(a, "8b", "vllm", 1);
    sim_pair_case(b, "8b", "vllm", 2);
    teller_store *sa = load_case_ranks(a, 0, 2), *sb = load_case_ranks(b, 0, 2), *sa2 = load_case_ranks(a, 0, 2);

    /* a run against itself: nothing moved */
    teller_diff *d = diff_of(sa, sa2);
    if (d) {
        CHECK(d->nclasses >= 1);
        CHECK_EQ_INT(d->nchanges, 0);
        for (size_t i = 0; i < d->nclasses; i++)
            CHECK_EQ_INT(d->classes[i].changed, 0);
    }
    teller_diff_free(d);

    /* two healthy seeds: decode steps matched, no move past a few percent of the step */
    d = diff_of(sa, sb);
    if (d) {
        CHECK_EQ_INT(d->classes[0].kind, TELLER_STEP_DECODE);
        CHECK(d->classes[0].ref_rows >= 20 && d->classes[0].run_rows >= 20);
        for (size_t i = 0; i < d->nchanges; i++)
            CHECK(llabs(d->changes[i].run_ns - d->changes[i].ref_ns) < d->classes[d->changes[i].cls].ref_ns / 20);
    }
    teller_diff_free(d);

    /* one kernel made 1.6x slower on rank 1: the first change names it and the rank */
    slow_kernel(sa2, "nvjet_tst_64x64_64x16_2x1_2cta_v_bz_bias_TNT", 1.6);
    d = diff_of(sa, sa2);
    if (d && d->nchanges) {
        const teller_diff_change *c = &d->changes[0];
        CHECK_EQ_INT(c->changed, 1);
        CHECK_EQ_INT(c->what, TELLER_DIFF_KERNEL);
        CHECK(!strcmp(c->run_name, "nvjet_tst_64x64_64x16_2x1_2cta_v_bz_bias_TNT"));
        CHECK_EQ_INT(c->rank, 1);
        CHECK_EQ_INT(c->ranks_changed, 1);
        CHECK(c->run_ns > c->ref_ns * 3 / 2);
    } else
        CHECK(!"no change found");
    teller_diff_free(d);
    teller_store_free(sa);
    teller_store_free(sb);
    teller_store_free(sa2);
    rm_rf(a);
    rm_rf(b);
}

static void test_diff_cli(void)
{
    char a[] = "/tmp/teller_diff_a_XXXXXX", c[] = "/tmp/teller_diff_c_XXXXXX", e[] = "/tmp/teller_diff_e_XXXXXX";
    sim_pair_case(a, "8b", "vllm", 1);
    sim_pair_case(c, "70b", "vllm", 3);
    CHECK(mkdtemp(e) != NULL);
    char empty[4200], out[16384], args[16384];
    snprintf(empty, sizeof empty, "%s/empty.json", e);
    FILE *f = fopen(empty, "w");
    CHECK(f != NULL);
    if (f) {
        fputs("{\"traceEvents\": []}\n", f);
        fclose(f);
    }
    snprintf(args, sizeof args, "diff -q '%s' -- '%s'", empty, a);
    CHECK_EQ_INT(run_cli(args, out, sizeof out), 1);
    CHECK(strstr(out, "teller diff: cannot compare: the reference holds no step (--force compares anyway)") != NULL);
    snprintf(args, sizeof args, "diff -q '%s/rank0.trace.json.gz' -- '%s'", a, a);
    CHECK_EQ_INT(run_cli(args, out, sizeof out), 1);
    CHECK(strstr(out, "cannot compare: the reference has 1 rank and the run 2") != NULL);
    snprintf(args, sizeof args, "diff -q '%s' -- '%s'", a, c);
    CHECK_EQ_INT(run_cli(args, out, sizeof out), 1);
    CHECK(strstr(out, "cannot compare: another model") != NULL);
    /* --force compares anyway, after the reason; options may follow the run */
    snprintf(args, sizeof args, "diff -q '%s' -- '%s' --force --json", a, c);
    CHECK_EQ_INT(run_cli(args, out, sizeof out), 0);
    CHECK(strstr(out, "teller diff: warning: another model") != NULL);
    CHECK(strstr(out, "\"comparable\": false") != NULL);
    snprintf(args, sizeof args, "diff -q '%s' -- '%s' --html '%s/d.html'", a, a, e);
    CHECK_EQ_INT(run_cli(args, out, sizeof out), 0);
    CHECK(strstr(out, "Step classes") != NULL);
    snprintf(args, sizeof args, "%s/d.html", e);
    size_t n = 0;
    char *h = read_file(args, &n);
    CHECK(h && strstr(h, "reference: step") && strstr(h, "run: step") && strstr(h, "</html>"));
    free(h);
    snprintf(args, sizeof args, "diff '%s'", a);
    CHECK_EQ_INT(run_cli(args, out, sizeof out), 2);
    CHECK(strstr(out, "no run given") != NULL);
    rm_rf(a);
    rm_rf(c);
    rm_rf(e);
}

/* A Kineto trace of rank 0 into path: two ProfilerStep# iterations, each
 * launching one kernel of the given name and duration (us). */
static void hostile_trace(const char *path, const char *kernel, int dur_us)
{
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (!f)
        return;
    fputs("{\"distributedInfo\": {\"rank\": 0}, \"deviceProperties\": [{\"name\": \"H100\"}], \"traceEvents\": [\n", f);
    for (int k = 0; k < 2; k++) {
        int t0 = k * 1000;
        fprintf(f,
                "{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"ProfilerStep#%d\", \"pid\": 1, \"tid\": 1, "
                "\"ts\": %d, \"dur\": 900},\n"
                "{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", \"pid\": 1, \"tid\": 1, "
                "\"ts\": %d, \"dur\": 5, \"args\": {\"correlation\": %d}},\n"
                "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"%s\", \"pid\": 0, \"tid\": 7, \"ts\": %d, "
                "\"dur\": %d, \"args\": {\"correlation\": %d, \"device\": 0, \"stream\": 7, \"grid\": [1, 1, 1], "
                "\"block\": [128, 1, 1]}}%s\n",
                k, t0, t0 + 10, k + 1, kernel, t0 + 20, dur_us, k + 1, k ? "" : ",");
    }
    fputs("]}\n", f);
    fclose(f);
}

static void test_diff_hostile_names(void)
{
    char dir[] = "/tmp/teller_diff_h_XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char ref[4200], run[4200], html[4200], args[16000], out[65536];
    snprintf(ref, sizeof ref, "%s/ref.json", dir);
    snprintf(run, sizeof run, "%s/run.json", dir);
    snprintf(html, sizeof html, "%s/d.html", dir);
    /* ESC to drive the terminal, a quote to leave an HTML attribute (kept through name normalising,
     * which drops what parentheses and a template's <...> hold) */
    const char *evil = "x\\u001b[31m\\\"onmouseover=alert(1)";
    hostile_trace(ref, evil, 10);
    hostile_trace(run, evil, 400);
    snprintf(args, sizeof args, "diff -q '%s' -- '%s' --html '%s'", ref, run, html);
    CHECK_EQ_INT(run_cli(args, out, sizeof out), 0);
    CHECK(strstr(out, "kernel x\\x1b[##m\"onmouseover=alert") != NULL); /* ESC shown, not sent */
    CHECK(strchr(out, 0x1b) == NULL);
    size_t n = 0;
    char *h = read_file(html, &n);
    CHECK(h && strstr(h, "&quot;onmouseover=alert") && !strstr(h, "\"onmouseover") && !strchr(h, 0x1b));
    free(h);
    snprintf(args, sizeof args, "diff -q --json '%s' -- '%s'", ref, run);
    CHECK_EQ_INT(run_cli(args, out, sizeof out), 0);
    CHECK(strstr(out, "\"run_name\": \"x\\u001b[31m\\\"onmouseover=alert") != NULL);
    CHECK(strchr(out, 0x1b) == NULL);
    rm_rf(dir);
}

const test_case diff_tests[] = {
    {"diff check: the real trace_compare pair is comparable, another trace is not", test_check_real_pair},
    {"diff check: an empty reference, another rank count, model or engine are refused", test_check_sim},
    {"diff: the real trace_compare pair's moves are the torch ops the test gained", test_diff_real_pair},
    {"diff: a run against itself, two healthy seeds, and one kernel slowed on one rank", test_diff_sim},
    {"diff: a hostile kernel name is escaped in the text, the page and the JSON", test_diff_hostile_names},
    {"diff cli: refusals exit 1 with the reason, --force goes through, --html writes both timelines", test_diff_cli},
    {NULL, NULL},
};
