/*
 * test_perturb.c - faults injected into real runs (src/perturb/): the
 * trace writer reads back equal, a rate of 0 changes nothing, rewritten
 * traces keep nesting, launch order, stream order and collectives, every
 * injected step grows by its truth's excess and untouched steps keep their
 * length, same seed gives same bytes, bad input says why.
 */
#define _XOPEN_SOURCE 700
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "teller/ingest.h"
#include "teller/perturb.h"
#include "teller/sim.h"
#include "teller/tree.h"
#include "../src/ingest/jdom.h"
#include "../src/perturb/retime.h"

/* The shared real traces with step annotations; a set of ranks of one run
 * is one entry. */
static const char *const k_runs[][2] = {
    {"tracelens/b200/eager_trace.json.gz", NULL},
    {"tracelens/h100/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz", NULL},
    {"tracelens/mi300/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz", NULL},
    {"tracelens/inference/sglang_decode/sglang_Qwen3-8B_decode.json.gz", NULL},
    {"tracelens/inference/sglang_prefilldecode/sglang_Qwen3-8B_prefilldecode.json.gz", NULL},
    {"tracelens/inference/vllm_decode_full/graph_execution.json.gz", NULL},
    {"hta/nccl_parser_config/nccl_data.json.gz", NULL},
    {"hta/ns_resolution_trace/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz", NULL},
    {"hta/trace_filter/sampled_rank-0.json.gz", "hta/trace_filter/sampled_rank-1.json.gz"},
    {"hta/amd_trace/mi250_minitoy_train_ROCm6_2_kineto.json.gz", NULL},
    {"hta/trace_compare/base/base.json.gz", NULL},
    {"hta/trace_compare/test/test.json.gz", NULL},
    {"hta/critical_path/cuda_event_sync/event_sync_trace.json.gz", NULL},
    {"hta/triton_example/triton_example.json.gz", NULL},
};

static teller_store *load_paths(const char *const *paths, int n, int shared)
{
    teller_store *st = teller_store_create();
    teller_error err;
    teller_error_clear(&err);
    for (int i = 0; i < n; i++) {
        if (!paths[i])
            continue;
        teller_status s = teller_ingest_file(st, shared ? shared_path(paths[i]) : paths[i], NULL, &err);
        if (s != TELLER_OK)
            fprintf(stderr, "  %s: %s\n", paths[i], err.msg);
        CHECK_EQ_INT(s, TELLER_OK);
    }
    CHECK_EQ_INT(teller_tree_build(st, NULL, &err), TELLER_OK);
    return st;
}

static teller_store *load_run(int r) { return load_paths(k_runs[r], 2, 1); }

/* Reads back DIR/rank<R>.trace.json.gz for every rank of the original. */
static teller_store *load_written(const char *dir, const teller_store *orig)
{
    char paths[8][600];
    const char *pp[8];
    int n = (int)teller_store_num_sources(orig);
    for (int s = 0; s < n && s < 8; s++) {
        snprintf(paths[s], sizeof paths[s], "%s/rank%d.trace.json.gz", dir,
                 teller_store_source_c(orig, (uint32_t)s)->rank);
        pp[s] = paths[s];
    }
    return load_paths(pp, n, 0);
}

/* The events of a store in rank order (each source's events in store
 * order); the caller frees. */
static uint32_t *by_rank(const teller_store *st)
{
    const teller_events *ev = teller_store_events(st);
    uint32_t *v = malloc((ev->n ? ev->n : 1) * sizeof *v);
    size_t k = 0;
    for (int32_t r = 0; r < 4096 && k < ev->n; r++)
        for (size_t i = 0; i < ev->n; i++)
            if (teller_store_event_rank(st, (uint32_t)i) == r)
                v[k++] = (uint32_t)i;
    return v;
}

/* The interned "Input Dims" and "Input type" texts of event e, "" when absent. */
static const char *shape_text(const teller_store *st, uint32_t e, int types)
{
    const teller_args *a = teller_store_event_args(st, e);
    return a ? teller_store_str(st, types ? a->in_types : a->in_dims) : "";
}

/* Same events (name, times, layer, flags, ids, links, input shapes) and steps. */
static int same_trace(const teller_store *a, const teller_store *b)
{
    const teller_events *x = teller_store_events(a), *y = teller_store_events(b);
    if (x->n != y->n) {
        fprintf(stderr, "  events %zu vs %zu\n", x->n, y->n);
        return 0;
    }
    uint32_t *pa = by_rank(a), *pb = by_rank(b);
    size_t bad = 0;
    for (size_t k = 0; k < x->n; k++) {
        uint32_t i = pa[k], j = pb[k], pi = x->parent[i], pj = y->parent[j];
        int same_parent = (pi == TELLER_NONE) == (pj == TELLER_NONE) &&
                          (pi == TELLER_NONE || (x->start_ns[pi] == y->start_ns[pj] && x->name[pi] &&
                                                 !strcmp(teller_store_str(a, x->name[pi]), teller_store_str(b, y->name[pj]))));
        int same = !strcmp(teller_store_str(a, x->name[i]), teller_store_str(b, y->name[j])) &&
                   x->start_ns[i] == y->start_ns[j] && x->dur_ns[i] == y->dur_ns[j] && x->layer[i] == y->layer[j] &&
                   x->flags[i] == y->flags[j] && x->corr[i] == y->corr[j] && teller_event_pid(x, i) == teller_event_pid(y, j) &&
                   teller_event_tid(x, i) == teller_event_tid(y, j) && same_parent && x->step[i] == y->step[j] &&
                   !strcmp(shape_text(a, i, 0), shape_text(b, j, 0)) && !strcmp(shape_text(a, i, 1), shape_text(b, j, 1));
        if (!same && bad++ < 3)
            fprintf(stderr, "  event %u differs: %s / %s start %lld/%lld dur %lld/%lld layer %d/%d flags %d/%d "
                            "corr %u/%u pid %d/%d tid %d/%d step %u/%u\n",
                    i, teller_store_str(a, x->name[i]), teller_store_str(b, y->name[j]), (long long)x->start_ns[i],
                    (long long)y->start_ns[j], (long long)x->dur_ns[i], (long long)y->dur_ns[j], x->layer[i],
                    y->layer[j], x->flags[i], y->flags[j], x->corr[i], y->corr[j], teller_event_pid(x, i), teller_event_pid(y, j), teller_event_tid(x, i),
                    teller_event_tid(y, j), x->step[i], y->step[j]);
    }
    free(pa);
    free(pb);
    if (teller_store_num_steps(a) != teller_store_num_steps(b) ||
        teller_store_num_collectives(a) != teller_store_num_collectives(b))
        bad++;
    for (size_t k = 0; !bad && k < teller_store_num_steps(a); k++) {
        const teller_step *p = &teller_store_steps(a)[k], *q = &teller_store_steps(b)[k];
        bad += p->start_ns != q->start_ns || p->end_ns != q->end_ns;
    }
    return bad == 0;
}

static void test_writer_reads_back_equal(void)
{
    /* every format: Kineto, and an Nsight Systems export of two processes */
    const char *const runs[][2] = {{"tracelens/b200/eager_trace.json.gz", NULL},
                                   {"hta/trace_filter/sampled_rank-0.json.gz", "hta/trace_filter/sampled_rank-1.json.gz"},
                                   {"nsys-ai/mfu_2gpu_before.sqlite", NULL},
                                   {"tracelens/mi300/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz", NULL}};
    for (size_t r = 0; r < sizeof runs / sizeof *runs; r++) {
        char dir[] = "/tmp/teller_perturb_XXXXXX";
        CHECK(mkdtemp(dir) != NULL);
        teller_store *st = load_paths(runs[r], 2, 1);
        teller_error err;
        teller_error_clear(&err);
        CHECK_EQ_INT(teller_kineto_write(st, NULL, NULL, NULL, dir, &err), TELLER_OK);
        teller_store *back = load_written(dir, st);
        int same = same_trace(st, back);
        if (!same)
            fprintf(stderr, "  %s does not read back equal\n", runs[r][0]);
        CHECK(same);
        teller_store_free(back);
        teller_store_free(st);
        rm_rf(dir);
    }
}

static void test_rate_zero_writes_the_run_unchanged(void)
{
    teller_store *st = load_run(6);
    char dir[] = "/tmp/teller_perturb_XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    teller_perturb_opts o = teller_perturb_defaults();
    o.rate = 0;
    teller_perturb_result res;
    teller_error err;
    teller_error_clear(&err);
    CHECK_EQ_INT(teller_perturb(st, &o, dir, &res, &err), TELLER_OK);
    CHECK_EQ_INT(res.injected, 0);
    CHECK_EQ_INT(res.abnormal, 0);
    teller_store *back = load_written(dir, st);
    CHECK(same_trace(st, back));
    teller_store_free(back);
    /* the run's service logs go to logs/node<N>.log unchanged */
    char log[600], copy[600], *b1 = NULL, *b2 = NULL;
    snprintf(log, sizeof log, "%s/service-node0.txt", dir);
    FILE *f = fopen(log, "w");
    CHECK(f != NULL);
    if (f) {
        fputs("INFO 05-23 08:52:35 [api_server.py:1880] Starting vLLM API server on http://0.0.0.0:8000\n", f);
        fclose(f);
    }
    const char *logs[] = {log};
    o.logs = logs;
    o.nlogs = 1;
    char again[64]; /* a new directory: dir holds a case already */
    snprintf(again, sizeof again, "%s/again", dir);
    CHECK_EQ_INT(teller_perturb(st, &o, again, &res, &err), TELLER_OK);
    snprintf(copy, sizeof copy, "%s/logs/node0.log", again);
    size_t n1 = 0, n2 = 0;
    CHECK((b1 = read_file(log, &n1)) != NULL && (b2 = read_file(copy, &n2)) != NULL);
    CHECK(n1 == n2 && n1 > 0 && b1 && b2 && !memcmp(b1, b2, n1));
    free(b1);
    free(b2);
    teller_store_free(st);
    rm_rf(dir);
}

/* Step windows over every rank, as the truth measures them. */
static void spans(const teller_store *st, int64_t *dur, uint32_t n)
{
    int64_t lo[256], hi[256];
    for (uint32_t k = 0; k < n && k < 256; k++) {
        lo[k] = INT64_MAX;
        hi[k] = INT64_MIN;
    }
    for (size_t j = 0; j < teller_store_num_steps(st); j++) {
        const teller_step *s = &teller_store_steps(st)[j];
        if (s->step >= 256)
            continue;
        if (s->start_ns < lo[s->step]) lo[s->step] = s->start_ns;
        if (s->end_ns > hi[s->step]) hi[s->step] = s->end_ns;
    }
    for (uint32_t k = 0; k < n && k < 256; k++)
        dur[k] = lo[k] <= hi[k] ? hi[k] - lo[k] : 0; /* 0: no such step */
}

/* Perturbs st with o into a fresh directory, reads the case back through
 * teller's reader and checks it: no consistency count rises; every
 * abnormal (or injected) step grew by its truth's excess within 5 % (a
 * step after an earlier fault by its excess plus the delay it inherited,
 * its expected time against its time before), and a step whose fault
 * cost nothing did not inherit a material delay (it would be carried); an
 * untouched step before the first fault is unchanged to the ns, a later
 * one changed by less than a material cost. Counts abnormal steps and the
 * kinds seen, and in *faulted (when not NULL) the steps given a fault,
 * material or not; inherited_steps counts faulty steps that inherited an
 * earlier fault's delay (their excess leaves it out). */
static int inherited_steps;
static void check_perturbed(const teller_store *st, const char *label, const teller_perturb_opts *o, int *injected,
                            uint32_t *seen, int *faulted)
{
    teller_consistency c0;
    teller_consistency_check(st, NULL, NULL, &c0);
    uint32_t n = teller_store_step_count(st);
    int64_t before[256];
    spans(st, before, n);
    char dir[] = "/tmp/teller_perturb_XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    teller_perturb_result res;
    teller_error err;
    teller_error_clear(&err);
    CHECK_EQ_INT(teller_perturb(st, o, dir, &res, &err), TELLER_OK);
    teller_store *back = load_written(dir, st);
    teller_consistency c1;
    teller_consistency_check(back, NULL, NULL, &c1);
    int ok = c1.nesting <= c0.nesting && c1.launch <= c0.launch && c1.stream_order <= c0.stream_order &&
             c1.collective <= c0.collective;
    if (!ok)
        fprintf(stderr, "  %s seed %llu: nesting %llu/%llu launch %llu/%llu stream %llu/%llu coll %llu/%llu\n", label,
                (unsigned long long)o->seed, (unsigned long long)c1.nesting, (unsigned long long)c0.nesting,
                (unsigned long long)c1.launch, (unsigned long long)c0.launch, (unsigned long long)c1.stream_order,
                (unsigned long long)c0.stream_order, (unsigned long long)c1.collective,
                (unsigned long long)c0.collective);
    CHECK(ok);
    char tp[600];
    snprintf(tp, sizeof tp, "%s/truth.json", dir);
    jv *t = jdom_load(tp, &err);
    CHECK(t != NULL);
    const jv *steps = t ? jdom_get(t, "steps") : NULL;
    /* every step, or (after a hang) the steps up to the hung one */
    CHECK(steps && steps->n <= n && steps->n > 0);
    const jv *last = steps && steps->n ? &steps->items[steps->n - 1] : NULL;
    CHECK(steps && (steps->n == n || !strcmp(jdom_str(last, "fault", ""), "nccl_hang")));
    CHECK(steps && teller_store_step_count(back) == steps->n);
    int64_t after[256];
    spans(back, after, n);
    /* the reader estimates node clock offsets again from the rewritten
     * collectives: a node may land a few ns elsewhere, no more */
    int64_t tol = 0;
    for (size_t a = 0; a < teller_store_num_nodes(st) && a < teller_store_num_nodes(back); a++) {
        int64_t d = teller_store_nodes(st)[a].offset_ns - teller_store_nodes(back)[a].offset_ns;
        d = d < 0 ? -d : d;
        tol = d > tol ? d : tol;
    }
    CHECK(tol < 1000);
    int faulty_before = 0;
    for (size_t k = 0; steps && k < steps->n && k < 256; k++) {
        const jv *s = &steps->items[k];
        int ab = jdom_bool(s, "abnormal", 0), inj = jdom_str(s, "injected", NULL) != NULL;
        int64_t grew = after[k] - before[k];
        if (!faulty_before && !ab && !inj)
            CHECK(grew <= tol && grew >= -tol); /* nothing before it changed */
        int64_t inherited = faulty_before ? (int64_t)jdom_num(s, "expected_ns", 0) - before[k] : 0;
        faulty_before |= ab || inj;
        inherited_steps += (ab || inj) && inherited > 1000000;
        if (faulted)
            *faulted += ab || inj;
        if (ab || inj) {
            int64_t ex = (int64_t)jdom_num(s, ab ? "excess_ns" : "injected_excess_ns", -1) + inherited;
            int64_t diff = grew - ex;
            int close = (diff < 0 ? -diff : diff) * 20 <= (ex < 0 ? -ex : ex) + 20;
            if (!close)
                fprintf(stderr, "  %s seed %llu step %zu (%s): grew %lld, truth %lld\n", label,
                        (unsigned long long)o->seed, k, jdom_str(s, ab ? "fault" : "injected", "?"), (long long)grew,
                        (long long)ex);
            CHECK(close);
            /* a fault that cost nothing does not hide a material delay
             * an earlier one carried in: such a step is carried */
            if (!ab && teller_fault_material(TELLER_FAULT_KERNEL_REGRESSION, inherited, before[k])) {
                fprintf(stderr, "  %s seed %llu step %zu (%s, not material) inherited %lld ns but is normal\n", label,
                        (unsigned long long)o->seed, k, jdom_str(s, "injected", "?"), (long long)inherited);
                CHECK(0);
            }
            if (!ab)
                continue;
            (*injected)++;
            teller_fault f = teller_fault_parse(jdom_str(s, "fault", ""));
            if (f != TELLER_FAULT_COUNT)
                *seen |= 1u << f;
            if (f == TELLER_FAULT_SLOW_LINK) {
                /* a slow link's root is the degraded node's lowest rank, as the simulator names it */
                const jv *root = jdom_get(s, "root");
                int rr = (int)jdom_num(root, "rank", -1), rn = (int)jdom_num(root, "node", -1);
                for (size_t q = 0; q < teller_store_num_sources(st); q++) {
                    const teller_source *so = teller_store_source_c(st, (uint32_t)q);
                    CHECK(so->node != rn || so->rank >= rr);
                }
            }
        } else if (teller_fault_material(TELLER_FAULT_KERNEL_REGRESSION, grew, before[k])) {
            /* not abnormal: unchanged, or changed by less than a material
             * cost; or shorter, after a fault: a host that ran ahead starts
             * the step late while its GPU work, already queued, ends where
             * it did (before any fault, the check above holds it to tol) */
            fprintf(stderr, "  %s seed %llu step %zu untouched but grew %lld ns\n", label, (unsigned long long)o->seed,
                    k, (long long)grew);
            CHECK(0);
        }
    }
    jdom_free(t);
    teller_store_free(back);
    rm_rf(dir);
}

/* The property test over every shared real run with steps: several seeds
 * and rates. */
static void test_perturbed_real_runs_stay_consistent(void)
{
    int injected = 0;
    uint32_t seen = 0;
    for (size_t r = 0; r < sizeof k_runs / sizeof *k_runs; r++) {
        teller_store *st = load_run((int)r);
        int faulted = 0;
        for (uint64_t seed = 1; seed <= 4; seed++) {
            teller_perturb_opts o = teller_perturb_defaults();
            o.rate = seed % 2 ? 1.0 : 0.5;
            o.seed = seed * 7919 + r;
            check_perturbed(st, k_runs[r][0], &o, &injected, &seen, &faulted);
        }
        if (!faulted)
            fprintf(stderr, "  %s: no step given a fault in 4 cases\n", k_runs[r][0]);
        CHECK(faulted > 0); /* every run is really perturbed, not passed through */
        teller_store_free(st);
    }
    int kinds = __builtin_popcount(seen);
    fprintf(stderr, "  %d abnormal steps, %d fault kinds, %d faulty steps inherited a delay\n", injected, kinds,
            inherited_steps);
    CHECK(injected >= 20);
    /* the training run (ns_resolution) overlaps its steps: some faulty
     * step carries an earlier fault's delay, which its excess leaves out */
    CHECK(inherited_steps > 0);
    CHECK(kinds >= 5);
}

/* A healthy simulated run over two nodes with tensor and pipeline
 * parallelism carries the communication kinds the shared real traces
 * cannot: slow links and pipeline sends. */
/* A healthy simulated vLLM run into dir (a mkdtemp template): two nodes of
 * two GPUs, tensor and pipeline parallel. */
static void healthy_2x2(char *dir, int steps, uint64_t seed)
{
    sim_healthy(dir, 2, 2, 2, 2, steps, seed);
}

static void test_perturbed_multi_node_run_stays_consistent(void)
{
    char dir[] = "/tmp/teller_perturb_XXXXXX";
    healthy_2x2(dir, 30, 77);
    teller_store *st = load_case_ranks(dir, 0, 4);
    int injected = 0;
    uint32_t seen = 0;
    for (uint64_t seed = 1; seed <= 3; seed++) {
        teller_perturb_opts o = teller_perturb_defaults();
        o.rate = 0.5;
        o.seed = seed;
        o.faults = 1u << TELLER_FAULT_SLOW_LINK | 1u << TELLER_FAULT_PP_SEND_DELAY | 1u << TELLER_FAULT_GPU_THROTTLE;
        check_perturbed(st, "simulated 2x2", &o, &injected, &seen, NULL);
    }
    /* a hang ends the run at its step; the waiting ranks' nodes get the watchdog's lines */
    node_logs nl;
    const char **logs = node_logs_of(&nl, dir);
    for (uint64_t seed = 1; seed <= 2; seed++) {
        teller_perturb_opts o = teller_perturb_defaults();
        o.rate = 0.2;
        o.seed = seed;
        o.faults = 1u << TELLER_FAULT_NCCL_HANG;
        o.logs = logs;
        o.nlogs = 2;
        check_perturbed(st, "simulated 2x2 hang", &o, &injected, &seen, NULL);
    }
    fprintf(stderr, "  %d abnormal steps\n", injected);
    CHECK(seen & (1u << TELLER_FAULT_NCCL_HANG));
    CHECK(seen & (1u << TELLER_FAULT_SLOW_LINK));
    CHECK(seen & (1u << TELLER_FAULT_PP_SEND_DELAY));
    CHECK(seen & (1u << TELLER_FAULT_GPU_THROTTLE));
    teller_store_free(st);
    rm_rf(dir);
}

static void test_same_seed_same_bytes(void)
{
    teller_store *st = load_run(8);
    char d1[] = "/tmp/teller_perturb_XXXXXX", d2[] = "/tmp/teller_perturb_XXXXXX";
    CHECK(mkdtemp(d1) && mkdtemp(d2));
    teller_perturb_opts o = teller_perturb_defaults();
    o.rate = 1;
    o.seed = 99;
    teller_error err;
    teller_error_clear(&err);
    CHECK_EQ_INT(teller_perturb(st, &o, d1, NULL, &err), TELLER_OK);
    CHECK_EQ_INT(teller_perturb(st, &o, d2, NULL, &err), TELLER_OK);
    const char *files[] = {"truth.json", "rank0.trace.json.gz", "rank1.trace.json.gz"};
    for (size_t i = 0; i < 3; i++) {
        char p1[600], p2[600], *b1 = NULL, *b2 = NULL;
        size_t n1 = 0, n2 = 0;
        snprintf(p1, sizeof p1, "%s/%s", d1, files[i]);
        snprintf(p2, sizeof p2, "%s/%s", d2, files[i]);
        CHECK((b1 = read_file(p1, &n1)) != NULL && (b2 = read_file(p2, &n2)) != NULL);
        CHECK(n1 == n2 && n1 > 0 && b1 && b2 && !memcmp(b1, b2, n1));
        free(b1);
        free(b2);
    }
    /* another seed, another case; d2 holds one, so it goes first: the
     * output directory must be new or empty */
    o.seed = 100;
    CHECK_EQ_INT(teller_perturb(st, &o, d2, NULL, &err), TELLER_ERR_ARG);
    CHECK(strstr(err.msg, "already holds files") != NULL);
    rm_rf(d2);
    CHECK_EQ_INT(teller_perturb(st, &o, d2, NULL, &err), TELLER_OK);
    char p1[600], p2[600], *b1 = NULL, *b2 = NULL;
    size_t n1 = 0, n2 = 0;
    snprintf(p1, sizeof p1, "%s/truth.json", d1);
    snprintf(p2, sizeof p2, "%s/truth.json", d2);
    CHECK((b1 = read_file(p1, &n1)) != NULL && (b2 = read_file(p2, &n2)) != NULL);
    CHECK(n1 != n2 || memcmp(b1, b2, n1));
    free(b1);
    free(b2);
    teller_store_free(st);
    rm_rf(d1);
    rm_rf(d2);
}

static int has_note(const teller_perturb_result *res, const char *s)
{
    for (size_t k = 0; k < res->nnotes; k++)
        if (strstr(res->notes[k], s))
            return 1;
    return 0;
}

static void test_bad_input_says_why(void)
{
    char dir[] = "/tmp/teller_perturb_XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    teller_perturb_opts o = teller_perturb_defaults();
    teller_perturb_result res;
    teller_error err;
    /* no step annotations: an error, not an empty case */
    const char *nsys[] = {"nsys-ai/mfu_2gpu_before.sqlite"};
    teller_store *st = load_paths(nsys, 1, 1);
    teller_error_clear(&err);
    CHECK_EQ_INT(teller_perturb(st, &o, dir, &res, &err), TELLER_ERR_ARG);
    CHECK(strstr(err.msg, "no step annotations") != NULL);
    teller_store_free(st);
    /* one rank of an 8-rank run: a note; kinds it cannot carry: notes */
    st = load_run(0);
    teller_error_clear(&err);
    CHECK_EQ_INT(teller_perturb(st, &o, dir, &res, &err), TELLER_OK);
    CHECK(has_note(&res, "one of a 8-rank run"));
    CHECK(has_note(&res, "slow_link skipped"));
    CHECK(has_note(&res, "oom skipped"));
    /* only kinds the run cannot carry: an error */
    o.faults = 1u << TELLER_FAULT_SLOW_LINK | 1u << TELLER_FAULT_MALLOC_STORM;
    teller_error_clear(&err);
    CHECK_EQ_INT(teller_perturb(st, &o, dir, &res, &err), TELLER_ERR_ARG);
    teller_store_free(st);
    /* a CPU-only trace (steps, no GPU work) carries none of the kinds: an error */
    const char *cpu[] = {"hta/cpu_only/rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz"};
    st = load_paths(cpu, 1, 1);
    o = teller_perturb_defaults();
    teller_error_clear(&err);
    CHECK_EQ_INT(teller_perturb(st, &o, dir, &res, &err), TELLER_ERR_ARG);
    CHECK(strstr(err.msg, "no step of the run can carry") != NULL);
    teller_store_free(st);
    /* unknown fault names are not parsed into a kind */
    CHECK_EQ_INT(teller_fault_parse("slow_lnk"), TELLER_FAULT_COUNT);
    rm_rf(dir);
}

/* `teller perturb CASE_DIR` brings the case's logs/node*.log along (as
 * diagnose does): a simulated vLLM case can carry preemption, whose warning
 * lands in node 0's log, and node 1's log is copied unchanged. */
static void test_cli_case_brings_its_logs(void)
{
    char dir[] = "/tmp/teller_perturb_XXXXXX";
    healthy_2x2(dir, 6, 5);
    char out[600], cmd[2000], p1[700], p2[700], *a = NULL, *b = NULL;
    size_t na = 0, nb = 0;
    snprintf(out, sizeof out, "%s/perturbed", dir);
    snprintf(cmd, sizeof cmd, "'%s' perturb -q -o '%s' --fault preemption --rate 1 --seed 2 '%s' 2>/dev/null", TELLER_CLI,
             out, dir);
    CHECK_EQ_INT(system(cmd), 0);
    snprintf(p1, sizeof p1, "%s/logs/node0.log", out);
    CHECK((a = read_file(p1, &na)) != NULL);
    CHECK(a && strstr(a, "is preempted by PreemptionMode.RECOMPUTE") != NULL);
    free(a);
    snprintf(p1, sizeof p1, "%s/logs/node1.log", dir);
    snprintf(p2, sizeof p2, "%s/logs/node1.log", out);
    CHECK((a = read_file(p1, &na)) != NULL && (b = read_file(p2, &nb)) != NULL);
    CHECK(a && b && na == nb && !memcmp(a, b, na));
    free(a);
    free(b);
    rm_rf(dir);
}

/* A hand-made rank (times in µs): a step annotation over two matmuls and
 * an all-reduce launched from one thread, then a stream synchronize. gemm_b
 * queues behind gemm_a; the NCCL kernel waits for gemm_b (it starts 1 µs
 * after gemm_b ends, on another stream); every rank's all-reduce ends at
 * 390 when the last one arrives; the synchronize returns 5 µs after. */
static size_t hand_rank(char *buf, size_t cap, int rank, double nccl_start, double gemm_b)
{
    return (size_t)snprintf(
        buf, cap,
        "{\"distributedInfo\": {\"rank\": %d, \"world_size\": 2}, \"traceEvents\": [\n"
        "{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"ProfilerStep#1\",\"pid\":10,\"tid\":10,\"ts\":0,\"dur\":1000},\n"
        "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::mm\",\"pid\":10,\"tid\":10,\"ts\":10,\"dur\":20},\n"
        "{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaLaunchKernel\",\"pid\":10,\"tid\":10,\"ts\":15,\"dur\":5,\"args\":{\"correlation\":1}},\n"
        "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::mm\",\"pid\":10,\"tid\":10,\"ts\":40,\"dur\":20},\n"
        "{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaLaunchKernel\",\"pid\":10,\"tid\":10,\"ts\":45,\"dur\":5,\"args\":{\"correlation\":2}},\n"
        "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"record_param_comms\",\"pid\":10,\"tid\":10,\"ts\":70,\"dur\":20},\n"
        "{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaLaunchKernel\",\"pid\":10,\"tid\":10,\"ts\":75,\"dur\":5,\"args\":{\"correlation\":3}},\n"
        "{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaStreamSynchronize\",\"pid\":10,\"tid\":10,\"ts\":100,\"dur\":295,\"args\":{\"correlation\":4}},\n"
        "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"gemm_a\",\"pid\":0,\"tid\":7,\"ts\":20,\"dur\":100,\"args\":{\"correlation\":1}},\n"
        "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"gemm_b\",\"pid\":0,\"tid\":7,\"ts\":%.3f,\"dur\":%.3f,\"args\":{\"correlation\":2}},\n"
        "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"ncclDevKernel_AllReduce_Sum_f32_RING_LL\",\"pid\":0,\"tid\":13,\"ts\":%.3f,"
        "\"dur\":%.3f,\"args\":{\"correlation\":3,\"Collective name\":\"allreduce\",\"Process Group Name\":\"0\",\"Group size\":2}}\n"
        "]}\n",
        rank, gemm_b, 220 - gemm_b, nccl_start, 390 - nccl_start);
}

/* No break of any kind in the run retimed to start/dur (NULL: as loaded). */
static int consistent(const teller_store *st, const int64_t *start, const int64_t *dur)
{
    teller_consistency c;
    teller_consistency_check(st, start, dur, &c);
    return c.nesting == 0 && c.launch == 0 && c.stream_order == 0 && c.collective == 0;
}

/* The hand-made run: rank 0's all-reduce starts at nccl0 µs, rank 1's at
 * 300; gemm_b, queued behind gemm_a (20-120 µs), starts at gemm_b µs and
 * ends at 220 on both. */
static teller_store *hand_run_at(double nccl0, double gemm_b)
{
    teller_store *st = teller_store_create();
    teller_error err;
    teller_error_clear(&err);
    char buf[4096];
    size_t n = hand_rank(buf, sizeof buf, 0, nccl0, gemm_b);
    CHECK_EQ_INT(teller_ingest_kineto_mem(st, "rank0", buf, n, NULL, &err), TELLER_OK);
    n = hand_rank(buf, sizeof buf, 1, 300, gemm_b);
    CHECK_EQ_INT(teller_ingest_kineto_mem(st, "rank1", buf, n, NULL, &err), TELLER_OK);
    CHECK_EQ_INT(teller_tree_build(st, NULL, &err), TELLER_OK);
    return st;
}

static teller_store *hand_run(void) { return hand_run_at(221, 121); }

/* The event of rank r named name (the k-th in time). */
static uint32_t find_ev(const teller_store *st, int r, const char *name, int k)
{
    const teller_events *ev = teller_store_events(st);
    for (uint32_t i = 0; i < ev->n; i++)
        if (teller_store_event_rank(st, i) == r && !strcmp(teller_store_str(st, ev->name[i]), name) && k-- == 0)
            return i;
    return TELLER_NONE;
}

#define US 1000
#define ORIGIN(st) (teller_store_events(st)->start_ns[find_ev(st, 0, "ProfilerStep#1", 0)])

static void test_peers_wait_for_a_slow_rank(void)
{
    teller_store *st = hand_run();
    const teller_events *ev = teller_store_events(st);
    CHECK_EQ_INT(teller_store_num_collectives(st), 1);
    int64_t *start = malloc(ev->n * sizeof *start), *dur = malloc(ev->n * sizeof *dur), o = ORIGIN(st);
    teller_error err;
    teller_error_clear(&err);
    /* no edit: every time as it was */
    CHECK_EQ_INT(rt_apply(st, NULL, 0, start, dur, &err), TELLER_OK);
    for (size_t i = 0; i < ev->n; i++)
        CHECK(start[i] == ev->start_ns[i] && dur[i] == ev->dur_ns[i]);
    /* gemm_a on rank 0 takes 200 µs longer */
    rt_edit e = {find_ev(st, 0, "gemm_a", 0), RT_STRETCH, 200 * US};
    CHECK_EQ_INT(rt_apply(st, &e, 1, start, dur, &err), TELLER_OK);
    uint32_t b0 = find_ev(st, 0, "gemm_b", 0), n0 = find_ev(st, 0, "ncclDevKernel_AllReduce_Sum_f32_RING_LL", 0);
    uint32_t n1 = find_ev(st, 1, "ncclDevKernel_AllReduce_Sum_f32_RING_LL", 0);
    uint32_t s1 = find_ev(st, 1, "cudaStreamSynchronize", 0), m1 = find_ev(st, 1, "ProfilerStep#1", 0);
    CHECK_EQ_INT(start[b0] - o, 321 * US);             /* queued behind gemm_a */
    CHECK_EQ_INT(start[n0] - o, 421 * US);             /* waited for gemm_b on the other stream */
    CHECK_EQ_INT(start[n1] + dur[n1] - o, 511 * US);  /* rank 1 waits: 390 + 121 */
    CHECK_EQ_INT(start[n0] + dur[n0] - o, 511 * US);
    CHECK_EQ_INT(start[s1] + dur[s1] - o, 516 * US);  /* its synchronize returns 5 µs after */
    CHECK_EQ_INT(start[m1] + dur[m1] - o, 1121 * US); /* and its step annotation grows with it */
    CHECK_EQ_INT(start[find_ev(st, 1, "gemm_b", 0)], ev->start_ns[find_ev(st, 1, "gemm_b", 0)]);
    CHECK(consistent(st, start, dur));
    free(start);
    free(dur);
    teller_store_free(st);
}

static void test_a_late_launch_moves_only_kernels_that_waited_for_it(void)
{
    teller_store *st = hand_run();
    const teller_events *ev = teller_store_events(st);
    int64_t *start = malloc(ev->n * sizeof *start), *dur = malloc(ev->n * sizeof *dur), o = ORIGIN(st);
    teller_error err;
    teller_error_clear(&err);
    uint32_t mm1 = find_ev(st, 1, "aten::mm", 1), b1 = find_ev(st, 1, "gemm_b", 0);
    uint32_t l1 = find_ev(st, 1, "cudaLaunchKernel", 1), a1 = find_ev(st, 1, "gemm_a", 0);
    /* 50 µs of host time before the second matmul: its launch moves, its
     * kernel was queued 76 µs behind gemm_a and does not */
    rt_edit e = {mm1, RT_GAP, 50 * US};
    CHECK_EQ_INT(rt_apply(st, &e, 1, start, dur, &err), TELLER_OK);
    CHECK_EQ_INT(start[l1] - o, 95 * US);
    CHECK_EQ_INT(start[b1] - o, 121 * US);
    CHECK_EQ_INT(start[a1] - o, 20 * US);
    /* 150 µs: the launch comes after the queue emptied; the kernel now waits
     * for it (launch + 5 µs) */
    e.d = 150 * US;
    CHECK_EQ_INT(rt_apply(st, &e, 1, start, dur, &err), TELLER_OK);
    CHECK_EQ_INT(start[l1] - o, 195 * US);
    CHECK_EQ_INT(start[b1] - o, 200 * US);
    /* the annotation grew around the gap; nothing crosses */
    CHECK_EQ_INT(start[find_ev(st, 1, "ProfilerStep#1", 0)] - o, 0);
    CHECK(consistent(st, start, dur));
    free(start);
    free(dur);
    teller_store_free(st);
    /* gemm_b 4.5 µs after gemm_a, not 1: the GPU's own spacing, not a wait
     * for its launch, which ended 70 µs before gemm_a did; the 50 µs gap
     * leaves it where it was, 150 µs still brings it to launch + 5 µs */
    st = hand_run_at(221, 124.5);
    ev = teller_store_events(st);
    start = malloc(ev->n * sizeof *start);
    dur = malloc(ev->n * sizeof *dur);
    o = ORIGIN(st);
    b1 = find_ev(st, 1, "gemm_b", 0);
    e = (rt_edit){find_ev(st, 1, "aten::mm", 1), RT_GAP, 50 * US};
    CHECK_EQ_INT(rt_apply(st, &e, 1, start, dur, &err), TELLER_OK);
    CHECK_EQ_INT(start[b1] - o, 124500);
    e.d = 150 * US;
    CHECK_EQ_INT(rt_apply(st, &e, 1, start, dur, &err), TELLER_OK);
    CHECK_EQ_INT(start[b1] - o, 200 * US);
    CHECK(consistent(st, start, dur));
    free(start);
    free(dur);
    teller_store_free(st);
    /* rank 0's all-reduce was launched at 75 µs and started right after
     * gemm_b ended at 220 on the other stream (1 µs after, or 1 ns before
     * as rounded times can have it): it waited for gemm_b, not for its
     * launch, so 100 µs of host time before the launch leaves it, and the
     * collective's end, where they were */
    const double at[] = {221, 219.999};
    for (size_t k = 0; k < 2; k++) {
        st = hand_run_at(at[k], 121);
        ev = teller_store_events(st);
        start = malloc(ev->n * sizeof *start);
        dur = malloc(ev->n * sizeof *dur);
        o = ORIGIN(st);
        uint32_t l0 = find_ev(st, 0, "cudaLaunchKernel", 2), n0 = find_ev(st, 0, "ncclDevKernel_AllReduce_Sum_f32_RING_LL", 0);
        rt_edit e0 = {find_ev(st, 0, "record_param_comms", 0), RT_GAP, 100 * US};
        CHECK_EQ_INT(rt_apply(st, &e0, 1, start, dur, &err), TELLER_OK);
        CHECK_EQ_INT(start[l0] - o, 175 * US);
        CHECK_EQ_INT(start[n0], ev->start_ns[n0]);
        CHECK_EQ_INT(start[n0] + dur[n0] - o, 390 * US);
        CHECK(consistent(st, start, dur));
        free(start);
        free(dur);
        teller_store_free(st);
    }
}

/* One process, two threads, as a training step's backward pass runs: the
 * stepping thread (10) makes the loss's gradient seed and calls
 * backward(); autograd's engine thread (11) starts the backward pass 140
 * µs later; the stepping thread goes on (the optimizer) 200 µs after the
 * engine's last op. No launch, no GPU: the threads wait only for each
 * other. */
static teller_store *handoff_run(void)
{
    static const char trace[] =
        "{\"traceEvents\": [\n"
        "{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"ProfilerStep#1\",\"pid\":10,\"tid\":10,\"ts\":0,\"dur\":1000},\n"
        "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::mm\",\"pid\":10,\"tid\":10,\"ts\":10,\"dur\":20},\n"
        "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::ones_like\",\"pid\":10,\"tid\":10,\"ts\":40,\"dur\":20},\n"
        "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"autograd::engine::evaluate_function: MmBackward0\",\"pid\":10,"
        "\"tid\":11,\"ts\":200,\"dur\":300},\n"
        "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::_foreach_mul_\",\"pid\":10,\"tid\":10,\"ts\":700,\"dur\":50}\n"
        "]}\n";
    teller_store *st = teller_store_create();
    teller_error err;
    teller_error_clear(&err);
    CHECK_EQ_INT(teller_ingest_kineto_mem(st, "rank0", trace, sizeof trace - 1, NULL, &err), TELLER_OK);
    CHECK_EQ_INT(teller_tree_build(st, NULL, &err), TELLER_OK);
    return st;
}

/* A thread woken by another thread's op waits for that op wherever it now
 * ends: host time before the gradient seed delays the backward pass on the
 * engine's thread, and host time in the backward pass delays the
 * optimizer on the stepping thread (before, each thread moved by its own
 * edits alone: a stretch with no op on any thread opened where the
 * engine's thread ran ahead, or the two threads' work overlapped). */
static void test_a_woken_thread_waits_for_the_op_that_woke_it(void)
{
    teller_store *st = handoff_run();
    const teller_events *ev = teller_store_events(st);
    int64_t *start = malloc(ev->n * sizeof *start), *dur = malloc(ev->n * sizeof *dur), o = ORIGIN(st);
    teller_error err;
    teller_error_clear(&err);
    uint32_t seed = find_ev(st, 0, "aten::ones_like", 0), bw = find_ev(st, 0, "autograd::engine::evaluate_function: MmBackward0", 0);
    uint32_t opt = find_ev(st, 0, "aten::_foreach_mul_", 0);
    CHECK_EQ_INT(rt_apply(st, NULL, 0, start, dur, &err), TELLER_OK);
    for (size_t i = 0; i < ev->n; i++)
        CHECK(start[i] == ev->start_ns[i] && dur[i] == ev->dur_ns[i]);
    rt_edit e = {seed, RT_GAP, 100 * US};
    CHECK_EQ_INT(rt_apply(st, &e, 1, start, dur, &err), TELLER_OK);
    CHECK_EQ_INT(start[bw] - o, 300 * US);
    CHECK_EQ_INT(start[opt] - o, 800 * US);
    e = (rt_edit){bw, RT_GAP, 100 * US};
    CHECK_EQ_INT(rt_apply(st, &e, 1, start, dur, &err), TELLER_OK);
    CHECK_EQ_INT(start[bw] - o, 300 * US);
    CHECK_EQ_INT(start[opt] - o, 800 * US);
    CHECK_EQ_INT(start[seed] - o, 40 * US);
    CHECK(consistent(st, start, dur));
    free(start);
    free(dur);
    teller_store_free(st);
}

/* The checker the property tests rely on sees each kind of break. */
static void test_consistency_check_sees_breaks(void)
{
    teller_store *st = hand_run();
    const teller_events *ev = teller_store_events(st);
    int64_t *start = malloc(ev->n * sizeof *start), *dur = malloc(ev->n * sizeof *dur);
    CHECK(consistent(st, NULL, NULL));
    teller_consistency c;
    uint32_t mm = find_ev(st, 0, "aten::mm", 0), ga = find_ev(st, 0, "gemm_a", 0), gb = find_ev(st, 0, "gemm_b", 0);
    uint32_t n0 = find_ev(st, 0, "ncclDevKernel_AllReduce_Sum_f32_RING_LL", 0);
    struct {
        uint32_t ev;
        int64_t  ds, dd;
        int      which;
    } breaks[] = {
        {mm, 0, -15 * US, 0},  /* the matmul op ends before its launch call inside it */
        {ga, -10 * US, 0, 1},  /* gemm_a starts before its launch */
        {gb, -5 * US, 0, 2},   /* gemm_b starts before gemm_a ends */
        {n0, 200 * US, 0, 3},  /* rank 0 arrives after the all-reduce ended on rank 1 */
    };
    for (size_t b = 0; b < sizeof breaks / sizeof *breaks; b++) {
        memcpy(start, ev->start_ns, ev->n * sizeof *start);
        memcpy(dur, ev->dur_ns, ev->n * sizeof *dur);
        start[breaks[b].ev] += breaks[b].ds;
        dur[breaks[b].ev] += breaks[b].dd;
        teller_consistency_check(st, start, dur, &c);
        uint64_t got[4] = {c.nesting, c.launch, c.stream_order, c.collective};
        for (int k = 0; k < 4; k++)
            CHECK_EQ_INT(got[k] > 0, k == breaks[b].which);
    }
    free(start);
    free(dur);
    teller_store_free(st);
}

/* vLLM's warning lands in the scheduler node's log, between the lines
 * before and after the step, with the step's time; without the log the
 * kind is skipped with a note. */
static void test_preemption_writes_the_engine_warning(void)
{
    teller_store *st = load_run(0); /* vLLM on B200 */
    char dir[] = "/tmp/teller_perturb_XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    int64_t t0 = teller_store_steps(st)[0].start_ns;
    char log[600];
    snprintf(log, sizeof log, "%s/vllm-node0.log", dir);
    FILE *f = fopen(log, "w");
    CHECK(f != NULL);
    for (int k = 0; f && k < 2; k++) {
        time_t sec = (time_t)(t0 / 1000000000) + (k ? 41 : -19);
        struct tm tm;
        gmtime_r(&sec, &tm);
        fprintf(f, "INFO %02d-%02d %02d:%02d:%02d [loggers.py:271] Engine 000: Avg prompt throughput: %d.0 tokens/s\n",
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, k);
    }
    if (f)
        fclose(f);
    teller_perturb_opts o = teller_perturb_defaults();
    o.rate = 1;
    o.faults = 1u << TELLER_FAULT_PREEMPTION;
    teller_perturb_result res;
    teller_error err;
    teller_error_clear(&err);
    /* no log: nothing to write the warning into */
    CHECK_EQ_INT(teller_perturb(st, &o, dir, &res, &err), TELLER_ERR_ARG);
    CHECK(has_note(&res, "preemption skipped"));
    const char *logs[] = {log};
    o.logs = logs;
    o.nlogs = 1;
    teller_error_clear(&err);
    char out[64]; /* dir holds the log */
    snprintf(out, sizeof out, "%s/case", dir);
    CHECK_EQ_INT(teller_perturb(st, &o, out, &res, &err), TELLER_OK);
    CHECK_EQ_INT(res.by_fault[TELLER_FAULT_PREEMPTION], 1);
    char path[600], *text = NULL;
    size_t n = 0;
    snprintf(path, sizeof path, "%s/logs/node0.log", out);
    CHECK((text = read_file(path, &n)) != NULL);
    if (text) {
        time_t sec = (time_t)(t0 / 1000000000);
        struct tm tm;
        gmtime_r(&sec, &tm);
        char want[128];
        snprintf(want, sizeof want, "\nWARNING %02d-%02d %02d:%02d:%02d [scheduler.py:1089] Sequence group 100 is preempted",
                 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
        const char *w = strstr(text, want);
        CHECK(w != NULL);
        CHECK(w && strstr(text, "throughput: 0.0") < w && strstr(w, "throughput: 1.0") != NULL);
    }
    free(text);
    /* the truth: the step annotation on rank 0, a scheduling fault */
    snprintf(path, sizeof path, "%s/truth.json", out);
    jv *t = jdom_load(path, &err);
    const jv *s0 = t ? &jdom_get(t, "steps")->items[0] : NULL;
    CHECK(s0 && jdom_bool(s0, "abnormal", 0) && !strcmp(jdom_str(s0, "fault_type", ""), "scheduling"));
    CHECK(s0 && !strncmp(jdom_str(jdom_get(s0, "root"), "op", ""), "execute_context_1(", 18));
    jdom_free(t);
    teller_store_free(st);
    rm_rf(dir);
}

/* Compute-kernel time per (step, rank) of st, ranks 0-3 and steps < 64. */
static void compute_ns(const teller_store *st, int64_t t[64][4])
{
    const teller_events *ev = teller_store_events(st);
    memset(t, 0, 64 * sizeof *t);
    for (size_t i = 0; i < ev->n; i++) {
        int r = teller_store_source_c(st, ev->source[i])->rank;
        if (ev->layer[i] == TELLER_LAYER_KERNEL && (ev->flags[i] & TELLER_F_GPU) && !(ev->flags[i] & TELLER_F_COMM) &&
            ev->step[i] < 64 && r >= 0 && r < 4)
            t[ev->step[i]][r] += ev->dur_ns[i];
    }
}

/* A preempted step recomputes the preempted requests: a prefill that
 * fills much of the token budget, as the run's largest prefill did. On
 * every rank its compute kernels grow by 0.375-1x the most compute time a
 * step of the run spent there, so a decode step becomes as heavy as a
 * prefill (stretching its own kernels 1.3-2x kept it the lightest of its
 * second). */
static void test_preemption_recomputes_a_prefill(void)
{
    char dir[] = "/tmp/teller_perturb_XXXXXX";
    healthy_2x2(dir, 12, 5);
    teller_store *st = load_case_ranks(dir, 0, 4);
    node_logs nl;
    teller_perturb_opts o = teller_perturb_defaults();
    o.rate = 0.5;
    o.seed = 3;
    o.faults = 1u << TELLER_FAULT_PREEMPTION;
    o.logs = node_logs_of(&nl, dir);
    o.nlogs = 2;
    char out[700];
    snprintf(out, sizeof out, "%s/perturbed", dir);
    teller_perturb_result res;
    teller_error err;
    teller_error_clear(&err);
    CHECK_EQ_INT(teller_perturb(st, &o, out, &res, &err), TELLER_OK);
    teller_store *pt = load_written(out, st);
    static int64_t before[64][4], after[64][4];
    compute_ns(st, before);
    compute_ns(pt, after);
    int64_t most[4] = {0};
    for (int k = 0; k < 64; k++)
        for (int r = 0; r < 4; r++)
            most[r] = before[k][r] > most[r] ? before[k][r] : most[r];
    snprintf(out, sizeof out, "%s/perturbed/truth.json", dir);
    jv *t = jdom_load(out, &err);
    const jv *steps = t ? jdom_get(t, "steps") : NULL;
    int preempted = 0;
    for (size_t k = 0; steps && k < steps->n && k < 64; k++) {
        int pre = !strcmp(jdom_str(&steps->items[k], "fault", ""), "preemption");
        preempted += pre;
        for (int r = 0; r < 4; r++) {
            int64_t grew = after[k][r] - before[k][r];
            if (pre)
                CHECK(grew >= (int64_t)(0.375 * (double)most[r]) - 1000 && grew <= most[r] + 1000);
            else
                CHECK(grew == 0);
        }
    }
    CHECK(preempted >= 2);
    jdom_free(t);
    teller_store_free(pt);
    teller_store_free(st);
    rm_rf(dir);
}

/* Found by review on hta/trace_filter's two ranks: a torn-down hang's
 * truth said its step took -7.5e18 ns (no rank kept the step's annotation);
 * a collective member that ended before the last member arrived (one of the
 * trace's own mismatched instances) lost 10 ms of its 39.6 ms. */
static void test_hangs_and_mismatched_members_keep_sane_times(void)
{
    teller_store *st = load_run(8);
    char dir[] = "/tmp/teller_perturb_XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char out[64];
    teller_perturb_opts o = teller_perturb_defaults();
    o.rate = 1;
    o.seed = 2;
    o.faults = 1u << TELLER_FAULT_NCCL_HANG;
    o.hang_teardown = 1;
    teller_error err;
    teller_error_clear(&err);
    snprintf(out, sizeof out, "%s/hang", dir);
    CHECK_EQ_INT(teller_perturb(st, &o, out, NULL, &err), TELLER_OK);
    char path[128];
    snprintf(path, sizeof path, "%s/truth.json", out);
    jv *t = jdom_load(path, &err);
    const jv *steps = t ? jdom_get(t, "steps") : NULL;
    int hung = 0;
    for (size_t k = 0; steps && k < steps->n; k++)
        if (jdom_bool(&steps->items[k], "abnormal", 0)) {
            hung++;
            CHECK(jdom_num(&steps->items[k], "duration_ns", 0) > 600e9); /* until the watchdog fired */
            CHECK(jdom_num(&steps->items[k], "excess_ns", 0) > 590e9);
        }
    CHECK_EQ_INT(hung, 1);
    jdom_free(t);
    o.faults = 1u << TELLER_FAULT_GPU_THROTTLE;
    o.hang_teardown = 0;
    snprintf(out, sizeof out, "%s/throttle", dir);
    CHECK_EQ_INT(teller_perturb(st, &o, out, NULL, &err), TELLER_OK);
    teller_store *back = load_written(out, st);
    const teller_events *a = teller_store_events(st), *b = teller_store_events(back);
    int64_t was = -1, now = -1;
    for (size_t i = 0; i < a->n; i++)
        if (a->corr[i] == 7035472 && (a->flags[i] & TELLER_F_COMM) && a->layer[i] == TELLER_LAYER_KERNEL)
            was = a->dur_ns[i];
    for (size_t i = 0; i < b->n; i++)
        if (b->corr[i] == 7035472 && (b->flags[i] & TELLER_F_COMM) && b->layer[i] == TELLER_LAYER_KERNEL)
            now = b->dur_ns[i];
    CHECK(was > 39000000);
    CHECK_EQ_INT(now, was);
    teller_store_free(back);
    teller_store_free(st);
    rm_rf(dir);
}

const test_case perturb_tests[] = {
    {"perturb: the Kineto writer reads back equal (Kineto, nsys, ROCm)", test_writer_reads_back_equal},
    {"perturb: rate 0 writes the run unchanged; its logs are copied", test_rate_zero_writes_the_run_unchanged},
    {"perturb: perturbed real runs stay consistent; steps grow by the truth's excess", test_perturbed_real_runs_stay_consistent},
    {"perturb: a multi-node run carries slow links and pipeline sends, consistently", test_perturbed_multi_node_run_stays_consistent},
    {"perturb: preemption writes vLLM's warning into the scheduler node's log at the step's time", test_preemption_writes_the_engine_warning},
    {"perturb: a preempted step recomputes a prefill the size of the run's largest", test_preemption_recomputes_a_prefill},
    {"perturb: same seed, same bytes", test_same_seed_same_bytes},
    {"perturb: a torn-down hang's truth lasts until the watchdog; a member that did not wait keeps its time",
     test_hangs_and_mismatched_members_keep_sane_times},
    {"perturb: teller perturb CASE_DIR brings the case's logs along", test_cli_case_brings_its_logs},
    {"perturb: bad input says why", test_bad_input_says_why},
    {"perturb: peers wait at the collective for a slow rank; syncs and parents follow", test_peers_wait_for_a_slow_rank},
    {"perturb: a late launch moves only kernels that waited for it", test_a_late_launch_moves_only_kernels_that_waited_for_it},
    {"perturb: a thread woken by another thread's op waits for it wherever it now ends", test_a_woken_thread_waits_for_the_op_that_woke_it},
    {"perturb: the consistency check sees each kind of break", test_consistency_check_sees_breaks},
    {NULL, NULL},
};
