/*
 * test_sim.c - the simulator through the same readers as real traces, the
 * evaluator on hand-made truth and predictions, and the baselines.
 */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "ingest/jdom.h"
#include "teller/baseline.h"
#include "teller/eval.h"
#include "teller/ingest.h"
#include "teller/logs.h"
#include "teller/sim.h"
#include "teller/tree.h"

static void test_sim_case_reads_back(void)
{
    char dir[] = "/tmp/teller_sim_XXXXXX";
    teller_sim_opts o = teller_sim_defaults();
    o.nodes = 2;
    o.gpus_per_node = 2;
    o.tp = 2;
    o.pp = 2;
    o.steps = 16;
    o.faults = ((1u << TELLER_FAULT_COUNT) - 1) & ~(1u | 1u << TELLER_FAULT_NCCL_HANG);
    o.seed = 7;
    teller_error err;
    teller_error_clear(&err);
    sim_case(dir, &o);
    char tp[600];
    snprintf(tp, sizeof tp, "%s/truth.json", dir);
    jv *truth = jdom_load(tp, &err);
    CHECK(truth != NULL);
    teller_store *st = load_case_ranks(dir, 0, 4);
    /* steps: the same count as the truth, every rank has each */
    const jv *steps = jdom_get(truth, "steps");
    CHECK_EQ_INT(teller_store_step_count(st), steps ? (long)steps->n : -1);
    CHECK_EQ_INT(teller_store_num_steps(st), 4 * (long)teller_store_step_count(st));
    /* every collective instance has all members of its group: TP all-reduces
     * and all-gathers 2 ranks, pipeline send/recv pairs 2 */
    size_t nc = teller_store_num_collectives(st), whole = 0;
    const teller_collective *co = teller_store_collectives(st);
    for (size_t c = 0; c < nc; c++)
        whole += co[c].num_members == 2;
    CHECK(nc > 100);
    CHECK_EQ_INT(whole, nc);
    /* clock offsets within 50 us of what the simulator applied */
    const jv *off = jdom_get(truth, "clock_offsets_ns");
    CHECK(off && off->n == 2);
    CHECK_EQ_INT(teller_store_num_nodes(st), 2);
    if (off && off->n == 2 && teller_store_num_nodes(st) == 2) {
        double est = (double)teller_store_nodes(st)[1].offset_ns, want = off->items[1].num;
        if (fabs(est - want) > 50000)
            fprintf(stderr, "  offset estimated %.0f ns, applied %.0f ns\n", est, want);
        CHECK(fabs(est - want) <= 50000);
    }
    /* kernels all linked; decode steps run as one graph launch */
    teller_tree_stats s;
    teller_tree_stats_get(st, &s);
    CHECK_EQ_INT(s.kernels_linked, s.kernels);
    CHECK(s.graph_launches > 0);
    /* the baselines predict every step and the evaluator scores them */
    teller_step_pred *p = NULL;
    size_t n = 0;
    CHECK_EQ_INT(teller_baseline_zscore(st, &p, &n, &err), TELLER_OK);
    CHECK_EQ_INT(n, teller_store_step_count(st));
    char pp[600];
    snprintf(pp, sizeof pp, "%s/pred.json", dir);
    FILE *f = fopen(pp, "w");
    teller_pred_write(f, p, n);
    fclose(f);
    free(p);
    teller_eval *e = teller_eval_create();
    CHECK_EQ_INT(teller_eval_add(e, tp, pp, &err), TELLER_OK);
    teller_eval_summary sum;
    teller_eval_summary_get(e, NULL, NULL, &sum);
    CHECK_EQ_INT(sum.steps, (long)teller_store_step_count(st));
    CHECK(sum.abnormal_steps > 0);
    teller_eval_free(e);
    teller_store_free(st);
    jdom_free(truth);
    rm_rf(dir);
}

/* Realism of the logs: every line the simulator writes is one the readers
 * recognise as a real engine, PyTorch or NCCL line (none falls back to the
 * generic family), and every family the faults need appears. */
static void test_sim_logs_are_real_formats(void)
{
    const char *engines[] = {"vllm", "sglang"};
    for (int e = 0; e < 2; e++) {
        char dir[] = "/tmp/teller_simlog_XXXXXX";
        teller_sim_opts o = teller_sim_defaults();
        o.nodes = 2;
        o.gpus_per_node = 2;
        o.tp = 2;
        o.pp = 2;
        o.steps = 40;
        o.engine = engines[e];
        o.fault_rate = 0.5;
        o.faults = ((1u << TELLER_FAULT_COUNT) - 1) & ~1u;
        o.seed = 31;
        sim_case(dir, &o);
        long lines = 0, generic = 0, fam[TELLER_LOG_FAMILY_COUNT] = {0};
        for (int n = 0; n < 2; n++) {
            char p[600], line[8192];
            snprintf(p, sizeof p, "%s/logs/node%d.log", dir, n);
            FILE *f = fopen(p, "r");
            CHECK(f != NULL);
            while (f && fgets(line, sizeof line, f)) {
                size_t len = strcspn(line, "\n");
                teller_log_record rec;
                teller_log_parse_line(line, len, NULL, &rec);
                lines++;
                fam[rec.family]++;
                if (rec.family == TELLER_LOG_GENERIC) {
                    generic++;
                    fprintf(stderr, "  generic: %.120s\n", line);
                }
            }
            if (f)
                fclose(f);
        }
        CHECK(lines > 20);
        CHECK_EQ_INT(generic, 0);
        CHECK(fam[TELLER_LOG_NCCL] > 0);
        CHECK(fam[e == 0 ? TELLER_LOG_VLLM : TELLER_LOG_SGLANG] > 0);
        rm_rf(dir);
    }
}

static int same_file(const char *a, const char *b)
{
    FILE *x = fopen(a, "rb"), *y = fopen(b, "rb");
    int same = x && y;
    while (same) {
        int c = fgetc(x), d = fgetc(y);
        same = c == d;
        if (c == EOF || d == EOF)
            break;
    }
    if (x)
        fclose(x);
    if (y)
        fclose(y);
    return same;
}

static void test_sim_same_seed_same_bytes(void)
{
    char a[] = "/tmp/teller_simA_XXXXXX", b[] = "/tmp/teller_simB_XXXXXX";
    CHECK(mkdtemp(a) && mkdtemp(b));
    teller_sim_opts o = teller_sim_defaults();
    o.nodes = 1;
    o.gpus_per_node = 2;
    o.tp = 2;
    o.pp = 1;
    o.steps = 8;
    o.faults = ((1u << TELLER_FAULT_COUNT) - 1) & ~1u;
    o.engine = "sglang";
    o.model = "moe";
    o.seed = 42;
    teller_error err;
    CHECK_EQ_INT(teller_simulate(&o, a, &err), TELLER_OK);
    CHECK_EQ_INT(teller_simulate(&o, b, &err), TELLER_OK);
    const char *files[] = {"rank0.trace.json.gz", "rank1.trace.json.gz", "logs/node0.log", "truth.json"};
    for (size_t i = 0; i < 4; i++) {
        char pa[600], pb[600];
        snprintf(pa, sizeof pa, "%s/%s", a, files[i]);
        snprintf(pb, sizeof pb, "%s/%s", b, files[i]);
        if (!same_file(pa, pb))
            fprintf(stderr, "  %s differs\n", files[i]);
        CHECK(same_file(pa, pb));
    }
    rm_rf(a);
    rm_rf(b);
}

/* A fault scaled down to nothing leaves its step as long as the step
 * without it: the fault's own random draws come from their own stream, so
 * the step and its counterfactual draw the same jitter (before, a fault of
 * severity 1e-6 moved steps by up to 90 us and one was labelled abnormal). */
static void test_sim_vanishing_fault_costs_nothing(void)
{
    char dir[] = "/tmp/teller_simV_XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    teller_sim_opts o = teller_sim_defaults();
    o.nodes = 2;
    o.gpus_per_node = 2;
    o.tp = 2;
    o.pp = 2;
    o.steps = 40;
    o.faults = 1u << TELLER_FAULT_SYNC_STALL | 1u << TELLER_FAULT_MALLOC_STORM | 1u << TELLER_FAULT_CPU_CONTENTION |
               1u << TELLER_FAULT_LAUNCH_LATENCY;
    o.fault_rate = 0.5;
    o.severity = 1e-6;
    o.seed = 5;
    teller_error err;
    CHECK_EQ_INT(teller_simulate(&o, dir, &err), TELLER_OK);
    char tp[600];
    snprintf(tp, sizeof tp, "%s/truth.json", dir);
    jv *truth = jdom_load(tp, &err);
    CHECK(truth != NULL);
    const jv *steps = truth ? jdom_get(truth, "steps") : NULL;
    CHECK(steps && steps->n == 40);
    /* about half the steps drew one of these faults (seed 5, rate 0.5) */
    for (size_t i = 0; steps && i < steps->n; i++) {
        const jv *s = &steps->items[i];
        double d = jdom_num(s, "duration_ns", -1), e = jdom_num(s, "expected_ns", -1);
        if (fabs(d - e) > 1000)
            fprintf(stderr, "  step %zu: %.0f ns against %.0f ns\n", i, d, e);
        CHECK(d > 0 && fabs(d - e) <= 1000);
        CHECK(!jdom_bool(s, "abnormal", 1));
    }
    jdom_free(truth);
    rm_rf(dir);
}

/* --log-capture: the same lines, each behind the node's clock at emission,
 * which the engine's own (whole-second or ns) stamp agrees with. */
static void test_sim_log_capture_prefixes_the_same_lines(void)
{
    const char *engines[] = {"vllm", "sglang"};
    for (int e = 0; e < 2; e++) {
        char a[] = "/tmp/teller_simA_XXXXXX", b[] = "/tmp/teller_simB_XXXXXX";
        CHECK(mkdtemp(a) && mkdtemp(b));
        teller_sim_opts o = teller_sim_defaults();
        o.nodes = 2, o.gpus_per_node = 2, o.tp = 2, o.pp = 2, o.steps = 30, o.seed = 9;
        o.faults = ((1u << TELLER_FAULT_COUNT) - 1) & ~1u;
        o.fault_rate = 0.5;
        o.engine = engines[e];
        teller_error err;
        CHECK_EQ_INT(teller_simulate(&o, a, &err), TELLER_OK);
        o.log_capture = 1;
        CHECK_EQ_INT(teller_simulate(&o, b, &err), TELLER_OK);
        int lines = 0, timed = 0;
        for (int n = 0; n < o.nodes; n++) {
            char pa[600], pb[600];
            snprintf(pa, sizeof pa, "%s/logs/node%d.log", a, n);
            snprintf(pb, sizeof pb, "%s/logs/node%d.log", b, n);
            FILE *fa = fopen(pa, "r"), *fb = fopen(pb, "r");
            CHECK(fa && fb);
            char la[4096], lb[4096];
            int bad = 0;
            long long prev = 0;
            while (fa && fb && fgets(la, sizeof la, fa)) {
                CHECK(fgets(lb, sizeof lb, fb) != NULL);
                char *sp = strchr(lb, ' ');
                size_t nd = sp ? (size_t)(sp - lb) : 0;
                bad |= !sp || nd < 16 || nd > 20 || strspn(lb, "0123456789") != nd || strcmp(sp + 1, la);
                long long ns = atoll(lb);
                bad |= ns < prev; /* written in order on one clock */
                prev = ns;
                teller_log_opts lo = teller_log_defaults();
                lo.ref_ns = ns;
                teller_log_record ra, rb;
                teller_log_parse_line(la, strcspn(la, "\n"), &lo, &ra);
                teller_log_parse_line(lb, strcspn(lb, "\n"), &lo, &rb);
                bad |= rb.time_ns != ns || !(rb.flags & TELLER_LOGF_CAPTURE_TIME) || ra.family != rb.family;
                if (ra.time_ns != INT64_MIN) {
                    /* the engine's stamp is the same clock cut to its second, or the same ns */
                    int64_t w = ra.flags & TELLER_LOGF_NO_SUBSEC ? 1000000000 : 1;
                    bad |= !(ra.time_ns <= ns && ns < ra.time_ns + w);
                    timed++;
                }
                if (bad)
                    fprintf(stderr, "  %s line %d: '%s' vs '%s'\n", engines[e], lines + 1, la, lb);
                if (bad)
                    break;
                lines++;
            }
            CHECK(fb && !fgets(lb, sizeof lb, fb));
            CHECK(!bad);
            if (fa)
                fclose(fa);
            if (fb)
                fclose(fb);
        }
        CHECK(lines > 20 && timed > 10);
        rm_rf(a);
        rm_rf(b);
    }
}

static void test_sim_rejects_impossible_options(void)
{
    teller_error err;
    teller_sim_opts o = teller_sim_defaults();
    o.tp = 3; /* does not divide 8 GPUs */
    CHECK_EQ_INT(teller_sim_check(&o, &err), TELLER_ERR_ARG);
    CHECK(strstr(err.msg, "tp") != NULL);
    o = teller_sim_defaults();
    o.steps = 0;
    CHECK_EQ_INT(teller_sim_check(&o, &err), TELLER_ERR_ARG);
    o = teller_sim_defaults();
    o.model = "13b";
    CHECK_EQ_INT(teller_sim_check(&o, &err), TELLER_ERR_ARG);
    CHECK_EQ_INT(teller_fault_parse("nope"), TELLER_FAULT_COUNT);
    CHECK_EQ_INT(teller_fault_parse("slow_link"), TELLER_FAULT_SLOW_LINK);
}

/* The fault table has a whole row for every kind: a name that parses
 * back, a type and view, a sentence with one number in it, and ranges that
 * run upwards. A kind added to the enum without its row fails here. */
static void test_fault_table_rows_are_whole(void)
{
    static const char *const types[] = {"communication", "kernel", "driver_library", "memory", "scheduling"};
    for (int f = 1; f < TELLER_FAULT_COUNT; f++) {
        const teller_fault_def *d = teller_fault_def_of((teller_fault)f);
        CHECK(d->name && d->type && d->view && d->what);
        if (!d->name || !d->type || !d->view || !d->what)
            continue;
        CHECK_EQ_INT(teller_fault_parse(d->name), f);
        int typed = 0;
        for (size_t t = 0; t < sizeof types / sizeof *types; t++)
            typed |= !strcmp(d->type, types[t]);
        CHECK(typed);
        CHECK(!strcmp(d->view, "horizontal") || !strcmp(d->view, "vertical"));
        const char *pc = strchr(d->what, '%');
        CHECK(pc && pc[1] == 'd' && !strchr(pc + 1, '%'));
        const teller_fault_range *r[] = {&d->slow,       &d->add_ns,        &d->share,         &d->sim.tokens,
                                         &d->sim.retry_ns, &d->sim.copies, &d->sim.swap, &d->perturb.grow};
        int sized = 0;
        for (size_t i = 0; i < sizeof r / sizeof *r; i++) {
            CHECK(r[i]->lo >= 0 && r[i]->lo <= r[i]->hi);
            sized |= r[i]->hi > 0;
        }
        /* a kind costs time by a size of its own, or is the watchdog's or the log's */
        CHECK(sized || d->ends_run);
        CHECK(d->jitter >= 0 && d->jitter < 1);
    }
    CHECK(!strcmp(teller_fault_name(TELLER_FAULT_COUNT), "no_error"));
}

/* The truth's sentence is the one frame around the numbers, formatted as
 * truth files have them (eval's BLEU reads those bytes). */
static void test_fault_sentence_frame(void)
{
    char out[1024];
    teller_fault_explain(TELLER_FAULT_SLOW_LINK, 1, 17, 12345678, 9135000, 3210678, "ncclDevKernel_SendRecv", 4, 1,
                         1234567, out, sizeof out);
    CHECK(!strcmp(out, "Step 17 took 12.346 ms, 3.211 ms (35%) longer than expected: the inter-node link of node 1 "
                       "degraded, so cross-node transfers slowed down for every rank in them (slow_link). The root "
                       "operator is ncclDevKernel_SendRecv on rank 4 (node 1), which took 1.235 ms."));
    teller_fault_explain(TELLER_FAULT_SYNC_STALL, 3, 2, 5000000, 0, 5000000, NULL, 3, 0, 4000000, out, sizeof out);
    CHECK(!strcmp(out, "Step 2 took 5.000 ms, 5.000 ms (0%) longer than expected: a stream synchronize on rank 3 "
                       "blocked far longer than usual (sync_stall). The root operator is ? on rank 3 (node 0), which "
                       "took 4.000 ms."));
    teller_fault_sentence(TELLER_FAULT_GPU_THROTTLE, 2, 9, "8 ms on rank 2", "3 ms more than usual", "", "gemm", 2, 0,
                          "which took 6 ms", out, sizeof out);
    CHECK(!strcmp(out, "Step 9 took 8 ms on rank 2, 3 ms more than usual: GPU of rank 2 ran every kernel slower "
                       "(throttled clocks) (gpu_throttle). The root operator is gemm on rank 2 (node 0), which took 6 "
                       "ms."));
    teller_fault_sentence(TELLER_FAULT_NCCL_HANG, 1, 3, "2 s on rank 0", "1 s more than usual", ", carried", NULL, -1,
                          -1, NULL, out, sizeof out);
    const char *tail = "(nccl_hang), carried.";
    CHECK(strstr(out, "Step 3 took 2 s on rank 0, 1 s more than usual: ") == out && strlen(out) > strlen(tail) &&
          !strcmp(out + strlen(out) - strlen(tail), tail) && !strstr(out, "root operator"));
}

/* Simulates o into dir (made from its template) and loads its truth.json
 * (CHECKed; the caller frees it and removes dir). */
static jv *sim_truth(char *dir, const teller_sim_opts *o)
{
    sim_case(dir, o);
    char tp[600];
    snprintf(tp, sizeof tp, "%s/truth.json", dir);
    teller_error err;
    jv *truth = jdom_load(tp, &err);
    CHECK(truth != NULL);
    return truth;
}

/* The simulator draws a kind only where its row's needs are met, strikes
 * the rank its row's target names, and a kind that ends the run only in
 * the run's second half. */
static void test_sim_draws_by_the_fault_table(void)
{
    struct {
        int nodes, gpus, tp, pp;
    } shapes[] = {{1, 2, 1, 2}, {1, 2, 2, 1}, {2, 2, 2, 2}, {2, 2, 4, 1}};
    int seen[TELLER_FAULT_COUNT] = {0};
    for (size_t sh = 0; sh < sizeof shapes / sizeof *shapes; sh++) {
        char dir[] = "/tmp/teller_simT_XXXXXX";
        teller_sim_opts o = teller_sim_defaults();
        o.nodes = shapes[sh].nodes, o.gpus_per_node = shapes[sh].gpus, o.tp = shapes[sh].tp, o.pp = shapes[sh].pp;
        o.steps = 40;
        o.fault_rate = 0.9;
        o.faults = ((1u << TELLER_FAULT_COUNT) - 1) & ~1u;
        o.seed = 300 + sh;
        jv *truth = sim_truth(dir, &o);
        const jv *steps = truth ? jdom_get(truth, "steps") : NULL;
        int world = o.nodes * o.gpus_per_node, cross = o.nodes > 1;
        for (size_t i = 0; steps && i < steps->n; i++) {
            const jv *s = &steps->items[i];
            const char *name = jdom_str(s, "fault", jdom_str(s, "injected", NULL));
            if (!name)
                continue;
            teller_fault f = teller_fault_parse(name);
            CHECK(f != TELLER_FAULT_COUNT);
            if (f == TELLER_FAULT_COUNT)
                continue;
            const teller_fault_def *d = teller_fault_def_of(f);
            seen[f]++;
            int bad = ((d->sim.needs & TELLER_FAULT_NEEDS_CROSS) && !cross) ||
                      ((d->sim.needs & TELLER_FAULT_NEEDS_TP) && o.tp < 2) ||
                      ((d->sim.needs & TELLER_FAULT_NEEDS_PP) && o.pp < 2) || (d->ends_run && (int)i < o.steps / 2);
            const jv *root = jdom_get(s, "root");
            if (root) {
                int rank = (int)jdom_num(root, "rank", -1);
                bad |= d->sim.at == TELLER_FAULT_AT_LEAD && rank != 0;
                bad |= d->sim.at == TELLER_FAULT_AT_NODE && (rank % o.gpus_per_node || rank == 0);
                bad |= d->sim.at == TELLER_FAULT_AT_SENDER && rank >= world - o.tp;
            }
            if (bad)
                fprintf(stderr, "  %dx%d tp %d pp %d: %s at step %zu\n", o.nodes, o.gpus_per_node, o.tp, o.pp, name, i);
            CHECK(!bad);
        }
        jdom_free(truth);
        rm_rf(dir);
    }
    /* every kind was drawn somewhere */
    for (int f = 1; f < TELLER_FAULT_COUNT; f++) {
        if (!seen[f])
            fprintf(stderr, "  %s never drawn\n", teller_fault_name((teller_fault)f));
        CHECK(seen[f] > 0);
    }
}

/* More pipeline stages than the model has layers (the 8B's 32 over 40
 * stages): a stage without layers has no collective to hang in, so a hang
 * drawn on one of its ranks is moved to a stage with layers, and every
 * hang the truth records happened (its watchdog lines are in the log). */
static void test_sim_hang_only_where_a_collective_runs(void)
{
    for (uint64_t seed = 1; seed <= 4; seed++) {
        char dir[] = "/tmp/teller_simH_XXXXXX";
        teller_sim_opts o = teller_sim_defaults();
        o.nodes = 40, o.gpus_per_node = 2, o.tp = 2, o.pp = 40;
        o.steps = 6;
        o.fault_rate = 1;
        o.faults = 1u << TELLER_FAULT_NCCL_HANG;
        o.seed = seed;
        jv *truth = sim_truth(dir, &o);
        const jv *steps = truth ? jdom_get(truth, "steps") : NULL;
        int hangs = 0;
        for (size_t i = 0; steps && i < steps->n; i++) {
            const jv *root = jdom_get(&steps->items[i], "root");
            if (!root)
                continue;
            int rank = (int)jdom_num(root, "rank", -1);
            CHECK(rank >= 0 && rank / o.tp < 32);
            char log[700];
            snprintf(log, sizeof log, "%s/logs/node%d.log", dir, rank / o.gpus_per_node);
            size_t len = 0;
            char *text = read_file(log, &len);
            CHECK(text && strstr(text, "Watchdog caught collective operation timeout"));
            free(text);
            hangs++;
        }
        CHECK_EQ_INT(hangs, 1);
        jdom_free(truth);
        rm_rf(dir);
    }
}

/* Data-parallel replicas: every collective's members are of one replica,
 * each replica's tensor-parallel group is a process group of its own, and
 * the replicas run batches of their own (their annotations differ). */
static void test_sim_replicas(void)
{
    char dir[] = "/tmp/teller_simDP_XXXXXX";
    teller_sim_opts o = teller_sim_defaults();
    o.nodes = 4, o.gpus_per_node = 2, o.tp = 2, o.pp = 1, o.dp = 4;
    o.steps = 20;
    o.faults = 0;
    o.seed = 21;
    jv *truth = sim_truth(dir, &o);
    CHECK(truth != NULL && (int)jdom_num(jdom_get(truth, "workload"), "dp", 1) == 4);
    jdom_free(truth);
    teller_store *st = load_case_ranks(dir, 0, 8);
    const teller_collective *co = teller_store_collectives(st);
    const teller_coll_member *mem = teller_store_coll_members(st);
    size_t across = 0, n = teller_store_num_collectives(st);
    for (size_t c = 0; c < n; c++)
        for (uint32_t m = 1; m < co[c].num_members; m++)
            across += mem[co[c].first_member + m].rank / 2 != mem[co[c].first_member].rank / 2;
    CHECK(n > 0);
    CHECK_EQ_INT(across, 0);
    const teller_comm *cm;
    int groups = 0;
    for (uint32_t i = 0; (cm = teller_store_comm(st, i)) != NULL; i++)
        groups |= 1 << (atoi(teller_store_str(st, cm->pg_name)) & 15);
    CHECK_EQ_INT(groups & 0x1E, 0x1E); /* groups 1..4: one per replica */
    const teller_step *rows = teller_store_steps(st);
    int differ = 0;
    for (size_t i = 0; i + 1 < teller_store_num_steps(st); i++)
        if (rows[i].marker != TELLER_NONE && rows[i + 1].step == rows[i].step && rows[i + 1].marker != TELLER_NONE)
            differ += strcmp(teller_store_str(st, teller_store_events(st)->name[rows[i].marker]),
                             teller_store_str(st, teller_store_events(st)->name[rows[i + 1].marker])) != 0;
    CHECK(differ > 0);
    teller_store_free(st);
    rm_rf(dir);
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    fputs(text, f);
    fclose(f);
}

/* Four steps: two faults. The prediction finds step 1 exactly, misses step
 * 3, and flags normal step 2. */
static const char *k_truth =
    "{\"version\": 1, \"steps\": ["
    "{\"step\": 0, \"abnormal\": false, \"fault_type\": \"no_error\"},"
    "{\"step\": 1, \"abnormal\": true, \"view\": \"horizontal\", \"fault_type\": \"communication\", \"fault\": \"slow_link\","
    " \"excess_ns\": 4000000, \"root\": {\"rank\": 5, \"node\": 1, \"op\": \"ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)\", \"layer\": \"KERNEL\"},"
    " \"explanation\": \"the link of node 1 degraded on rank 5\"},"
    "{\"step\": 2, \"abnormal\": false, \"fault_type\": \"no_error\"},"
    "{\"step\": 3, \"abnormal\": true, \"view\": \"vertical\", \"fault_type\": \"kernel\", \"fault\": \"kernel_regression\","
    " \"excess_ns\": 1000000, \"root\": {\"rank\": 0, \"node\": 0, \"op\": \"nvjet_tst_64x64\", \"layer\": \"KERNEL\"},"
    " \"explanation\": \"x\"}]}";
static const char *k_pred =
    "{\"version\": 1, \"steps\": ["
    "{\"step\": 0, \"abnormal\": false},"
    "{\"step\": 1, \"abnormal\": true, \"fault_type\": \"communication\", \"view\": \"horizontal\","
    " \"candidates\": [{\"rank\": 5, \"op\": \"ncclDevKernel_SendRecv\", \"score\": 0.9}],"
    " \"explanation\": \"the link of node 1 degraded on rank 5, slow_link, 4.1 ms\"},"
    "{\"step\": 2, \"abnormal\": true, \"fault_type\": \"kernel\", \"view\": \"vertical\", \"candidates\": []},"
    "{\"step\": 3, \"abnormal\": false}]}";

/* Makes dir (a mkdtemp template) and writes truth and pred into it; t and p
 * (600 bytes each) receive their paths. */
static void write_case_files(char *dir, char *t, char *p, const char *truth, const char *pred)
{
    CHECK(mkdtemp(dir) != NULL);
    snprintf(t, 600, "%s/truth.json", dir);
    snprintf(p, 600, "%s/pred.json", dir);
    write_file(t, truth);
    write_file(p, pred);
}

static void test_eval_metrics_by_hand(void)
{
    char dir[] = "/tmp/teller_eval_XXXXXX", t[600], p[600];
    write_case_files(dir, t, p, k_truth, k_pred);
    teller_eval *e = teller_eval_create();
    teller_error err;
    teller_error_clear(&err);
    CHECK_EQ_INT(teller_eval_add(e, t, p, &err), TELLER_OK);
    teller_eval_summary s;
    teller_eval_summary_get(e, NULL, NULL, &s);
    CHECK_EQ_INT(s.steps, 4);
    CHECK_EQ_INT(s.abnormal_steps, 2);
    CHECK(fabs(s.step_precision - 0.5) < 1e-9); /* 1 of 2 flagged */
    CHECK(fabs(s.step_recall - 0.5) < 1e-9);    /* 1 of 2 found */
    CHECK(fabs(s.step_accuracy - 0.5) < 1e-9);
    CHECK(fabs(s.op_ac1 - 0.5) < 1e-9);         /* normalised names match on step 1 */
    CHECK(fabs(s.rank_ac1 - 0.5) < 1e-9);
    CHECK(fabs(s.fault_type_accuracy - 0.5) < 1e-9);
    /* step 1 names rank, op? no (normalised op text absent), fault yes, 4.1 ms within 20% of 4 ms: 3/4; step 3: 0 */
    CHECK(fabs(s.fact_recall - 0.375) < 1e-9);
    teller_eval_summary_get(e, "horizontal", NULL, &s);
    CHECK_EQ_INT(s.abnormal_steps, 1);
    CHECK(fabs(s.step_f1 - 1.0) < 1e-9);
    teller_eval_summary_get(e, NULL, "kernel_regression", &s);
    CHECK(fabs(s.step_recall) < 1e-9);
    teller_eval_free(e);
    /* a prediction that names a step the truth does not have */
    write_file(p, "{\"steps\": [{\"step\": 9, \"abnormal\": false}]}");
    e = teller_eval_create();
    CHECK_EQ_INT(teller_eval_add(e, t, p, &err), TELLER_ERR_FORMAT);
    CHECK(strstr(err.msg, "step 9") != NULL);
    /* malformed JSON: the position is given */
    write_file(p, "{\"steps\": [{\"step\": 0, \"abnormal\": tru}]}");
    CHECK_EQ_INT(teller_eval_add(e, t, p, &err), TELLER_ERR_FORMAT);
    CHECK(err.offset > 0);
    teller_eval_free(e);
    unlink(t);
    unlink(p);
    rmdir(dir);
}

/* A view without faulty steps and a run with nothing flagged have no
 * recall or precision: null in the JSON, n/a in the table, not 0. */
static void test_eval_undefined_figures(void)
{
    char dir[] = "/tmp/teller_evalna_XXXXXX", t[600], p[600];
    write_case_files(dir, t, p,
                     "{\"version\": 1, \"steps\": [{\"step\": 0, \"abnormal\": false, \"fault_type\": \"no_error\"},"
                     "{\"step\": 1, \"abnormal\": true, \"view\": \"vertical\", \"fault_type\": \"kernel\", "
                     "\"fault\": \"kernel_regression\", \"excess_ns\": 1000000, \"root\": {\"rank\": 0, \"node\": 0, "
                     "\"op\": \"k\", \"layer\": \"KERNEL\"}, \"explanation\": \"x\"}]}",
                     "{\"steps\": [{\"step\": 0, \"abnormal\": false}, {\"step\": 1, \"abnormal\": false}]}");
    teller_eval *e = teller_eval_create();
    teller_error err;
    teller_error_clear(&err);
    CHECK_EQ_INT(teller_eval_add(e, t, p, &err), TELLER_OK);
    teller_eval_summary s;
    teller_eval_summary_get(e, NULL, NULL, &s);
    CHECK(isnan(s.step_precision));
    CHECK(fabs(s.step_recall) < 1e-9);
    teller_eval_summary_get(e, "horizontal", NULL, &s);
    CHECK(isnan(s.step_recall) && isnan(s.op_ac1) && isnan(s.fact_recall));
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    teller_eval_write_json(e, f);
    fclose(f);
    const char *h = buf ? strstr(buf, "\"horizontal\": {") : NULL;
    CHECK(h && strstr(h, "\"recall\": null") && strstr(buf, "\"precision\": null"));
    CHECK(buf && !strstr(buf, "nan"));
    free(buf);
    f = open_memstream(&buf, &len);
    teller_eval_write_table(e, f);
    fclose(f);
    h = buf ? strstr(buf, "view horizontal") : NULL;
    CHECK(h && strstr(h, "n/a") && !strstr(buf, "nan"));
    free(buf);
    teller_eval_free(e);
    unlink(t);
    unlink(p);
    rmdir(dir);
}

static void test_name_normalisation(void)
{
    char b[256];
    teller_name_normalize("void vllm::rotary_embedding_kernel<c10::BFloat16, true>(long const*, int)", b, sizeof b);
    CHECK(!strcmp(b, "vllm::rotary_embedding_kernel"));
    teller_name_normalize("ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)", b, sizeof b);
    CHECK(!strcmp(b, "ncclDevKernel_AllReduce_Sum_bf16_RING_LL"));
    teller_name_normalize("cudaLaunchKernel_v7000", b, sizeof b);
    CHECK(!strcmp(b, "cudaLaunchKernel"));
    teller_name_normalize("Memcpy HtoD (Pinned -> Device)", b, sizeof b);
    CHECK(!strcmp(b, "Memcpy HtoD (Pinned -> Device)"));
    teller_name_normalize("std::enable_if<(((8)>(0))), void>::type vllm::fused_add_rms_norm_kernel<c10::BFloat16, 8>(c10::BFloat16*)", b, sizeof b);
    CHECK(!strcmp(b, "vllm::fused_add_rms_norm_kernel"));
}

const test_case sim_tests[] = {
    {"sim: a simulated case reads back: steps, whole collectives, clock offsets", test_sim_case_reads_back},
    {"sim: same seed, same bytes", test_sim_same_seed_same_bytes},
    {"sim: a fault scaled to nothing costs its step nothing (the fault draws apart from the jitter)",
     test_sim_vanishing_fault_costs_nothing},
    {"sim: --log-capture puts the node's clock in front of the same lines",
     test_sim_log_capture_prefixes_the_same_lines},
    {"sim: every log line is a real engine, PyTorch or NCCL format", test_sim_logs_are_real_formats},
    {"sim: impossible options are refused with a message", test_sim_rejects_impossible_options},
    {"sim: a kind is drawn where its row's needs are met, at its row's target", test_sim_draws_by_the_fault_table},
    {"sim: a hang is drawn only where a collective runs, and happens", test_sim_hang_only_where_a_collective_runs},
    {"sim: --dp replicas have their own collectives, groups and batches", test_sim_replicas},
    {"fault table: every kind has a whole row", test_fault_table_rows_are_whole},
    {"fault table: the truth's sentence is one frame around formatted numbers", test_fault_sentence_frame},
    {"eval: metrics on hand-made truth and predictions; bad files name the step", test_eval_metrics_by_hand},
    {"eval: figures with nothing to count are null in JSON and n/a in the table", test_eval_undefined_figures},
    {"names: normalisation drops templates, parameters and API versions", test_name_normalisation},
    {NULL, NULL},
};
