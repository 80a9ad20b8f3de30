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

const test_case diff_tests[] = {
    {"diff check: the real trace_compare pair is comparable, another trace is not", test_check_real_pair},
    {"diff check: an empty reference, another rank count, model or engine are refused", test_check_sim},
    {NULL, NULL},
};
