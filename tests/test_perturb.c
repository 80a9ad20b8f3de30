/*
 * test_perturb.c - faults injected into real runs (src/perturb/): the
 * trace writer reads back equal, a rate of 0 changes nothing, rewritten
 * traces keep nesting, launch order, stream order, collectives and every
 * event's step, every step grows by its truth's excess and the steps the
 * truth says nothing of keep their length, same seed gives same bytes,
 * bad input says why.
 */
#define _XOPEN_SOURCE 700
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "teller/check.h"
#include "teller/diagnose.h"
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

/* What the property test compares before and after a perturbation, per
 * step as teller reads it: the duration (as the diagnosis measures it:
 * what the step added to its longest rank's run, from the later of its
 * annotation's start and the end of the rank's window of the step before
 * to the end of its last GPU work) and, per rank, how many events and kernels
 * the reader puts in the step. Steps and ranks beyond the bounds are not
 * looked at (no run here has more). */
#define PS_STEPS 64
#define PS_RANKS 8
typedef struct step_facts {
    int64_t  dur[PS_STEPS];
    uint32_t events[PS_STEPS][PS_RANKS], kernels[PS_STEPS][PS_RANKS];
} step_facts;

static void step_facts_of(const teller_store *st, step_facts *f)
{
    memset(f, 0, sizeof *f);
    int64_t prev[PS_RANKS]; /* each rank's last window's end */
    for (int r = 0; r < PS_RANKS; r++)
        prev[r] = INT64_MIN;
    for (size_t j = 0; j < teller_store_num_steps(st); j++) {
        const teller_step *s = &teller_store_steps(st)[j];
        int64_t from = s->start_ns;
        if (s->rank >= 0 && s->rank < PS_RANKS) {
            if (prev[s->rank] > from)
                from = prev[s->rank] < s->end_ns ? prev[s->rank] : s->end_ns;
            prev[s->rank] = s->end_ns;
        }
        if (s->step < PS_STEPS && s->end_ns - from > f->dur[s->step])
            f->dur[s->step] = s->end_ns - from;
    }
    const teller_events *ev = teller_store_events(st);
    for (size_t i = 0; i < ev->n; i++) {
        uint32_t k = ev->step[i];
        int32_t r = teller_store_event_rank(st, (uint32_t)i);
        if (k >= PS_STEPS || r < 0 || r >= PS_RANKS)
            continue;
        f->events[k][r]++;
        f->kernels[k][r] += ev->layer[i] == TELLER_LAYER_KERNEL && (ev->flags[i] & TELLER_F_GPU);
    }
}

/* What the property saw over the cases of one run: steps whose events
 * changed, the worst relative error of a touched step's growth against
 * its truth, the worst drift of an untouched step, and the steps given a
 * fault (material or not) and labelled abnormal. */
typedef struct keep_stats {
    int      moved, faulted, abnormal, carried;
    uint32_t seen; /* the kinds of abnormal steps with a fault of their own */
    double   worst_err, worst_drift;
} keep_stats;

/* Perturbs st with o into dir (new), reads the case back through
 * teller's reader and checks the property: no consistency count rises; per
 * step and rank the reader finds the same events and kernels (a hang: in
 * the steps before it); the truth's expected_ns is the step's duration in
 * the run given and its duration_ns the written one's; a step the truth
 * touches (a fault of its own, material or not, or a delay carried from an
 * earlier fault's step) grew by its truth's excess (duration_ns -
 * expected_ns, the excess_ns of an abnormal step) within 5 %, and every
 * other step kept its duration within 1 %. A skipped kind (the run cannot
 * carry it) is no case. */
static void check_keeps_steps(const teller_store *st, const char *label, const teller_perturb_opts *o, const char *dir,
                              keep_stats *ks)
{
    teller_consistency c0;
    teller_consistency_check(st, NULL, NULL, &c0);
    step_facts before, after;
    step_facts_of(st, &before);
    teller_perturb_result res;
    teller_error err;
    teller_error_clear(&err);
    teller_status rc = teller_perturb(st, o, dir, &res, &err);
    if (rc == TELLER_ERR_ARG && strstr(err.msg, "no step of the run can carry"))
        return;
    CHECK_EQ_INT(rc, TELLER_OK);
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
    step_facts_of(back, &after);
    char tp[600];
    snprintf(tp, sizeof tp, "%s/truth.json", dir);
    jv *t = jdom_load(tp, &err);
    CHECK(t != NULL);
    const jv *steps = t ? jdom_get(t, "steps") : NULL;
    uint32_t n = teller_store_step_count(st);
    /* every step, or (after a hang) the steps up to the hung one */
    CHECK(steps && steps->n <= n && steps->n > 0);
    const jv *last = steps && steps->n ? &steps->items[steps->n - 1] : NULL;
    int hang = last && !strcmp(jdom_str(last, "fault", ""), "nccl_hang");
    CHECK(steps && (steps->n == n || hang));
    CHECK(steps && teller_store_step_count(back) == steps->n);
    /* the reader estimates node clock offsets again from the rewritten
     * collectives: a node may land a few ns elsewhere, no more */
    int64_t tol = 0;
    for (size_t a = 0; a < teller_store_num_nodes(st) && a < teller_store_num_nodes(back); a++) {
        int64_t d = teller_store_nodes(st)[a].offset_ns - teller_store_nodes(back)[a].offset_ns;
        d = d < 0 ? -d : d;
        tol = d > tol ? d : tol;
    }
    CHECK(tol < 1000);
    for (size_t k = 0; steps && k < steps->n && k < PS_STEPS; k++) {
        const jv *s = &steps->items[k];
        int ab = jdom_bool(s, "abnormal", 0), inj = jdom_str(s, "injected", NULL) != NULL;
        int carried = jdom_num(s, "carried_from", -1) >= 0;
        if (!(hang && k + 1 == steps->n)) { /* the hung step lost what never happened */
            int moved = 0;
            for (int r = 0; r < PS_RANKS; r++)
                if (before.events[k][r] != after.events[k][r] || before.kernels[k][r] != after.kernels[k][r]) {
                    if (!moved)
                        fprintf(stderr, "  %s seed %llu step %zu rank %d: %u events, %u kernels; were %u, %u\n", label,
                                (unsigned long long)o->seed, k, r, after.events[k][r], after.kernels[k][r],
                                before.events[k][r], before.kernels[k][r]);
                    moved = 1;
                }
            ks->moved += moved;
            CHECK(!moved);
        }
        int64_t expected = (int64_t)jdom_num(s, "expected_ns", -1), duration = (int64_t)jdom_num(s, "duration_ns", -1);
        int64_t grew = after.dur[k] - before.dur[k], ex = duration - expected;
        int64_t e_off = expected - before.dur[k], d_off = duration - after.dur[k];
        if ((e_off < 0 ? -e_off : e_off) > tol || (d_off < 0 ? -d_off : d_off) > tol) {
            fprintf(stderr, "  %s seed %llu step %zu: truth says %lld ns expected, %lld ns now; the trace %lld, %lld\n",
                    label, (unsigned long long)o->seed, k, (long long)expected, (long long)duration,
                    (long long)before.dur[k], (long long)after.dur[k]);
            CHECK(0);
        }
        if (ab)
            CHECK_EQ_INT(jdom_num(s, "excess_ns", -1), ex);
        ks->faulted += inj || (ab && !carried);
        ks->abnormal += ab;
        ks->carried += carried;
        teller_fault f = teller_fault_parse(jdom_str(s, "fault", ""));
        if (ab && !carried && f != TELLER_FAULT_COUNT)
            ks->seen |= 1u << f;
        if (ab && f == TELLER_FAULT_SLOW_LINK) {
            /* a slow link's root is the degraded node's lowest rank, as the simulator names it */
            const jv *root = jdom_get(s, "root");
            int rr = (int)jdom_num(root, "rank", -1), rn = (int)jdom_num(root, "node", -1);
            for (size_t q = 0; q < teller_store_num_sources(st); q++) {
                const teller_source *so = teller_store_source_c(st, (uint32_t)q);
                CHECK(so->node != rn || so->rank >= rr);
            }
        }
        int64_t diff = grew - ex;
        diff = diff < 0 ? -diff : diff;
        if (ab || inj || carried) {
            double rel = (double)diff / (double)((ex < 0 ? -ex : ex) + 1);
            if (diff > 20 && rel > ks->worst_err)
                ks->worst_err = rel;
            if (diff * 20 > (ex < 0 ? -ex : ex) + 20) {
                fprintf(stderr, "  %s seed %llu step %zu (%s): grew %lld ns, truth %lld\n", label,
                        (unsigned long long)o->seed, k, jdom_str(s, ab ? "fault" : "injected", "carried"),
                        (long long)grew, (long long)ex);
                CHECK(0);
            }
        } else {
            int64_t g = grew < 0 ? -grew : grew;
            double rel = before.dur[k] > 0 ? (double)g / (double)before.dur[k] : 0;
            if (g > tol && rel > ks->worst_drift)
                ks->worst_drift = rel;
            if (g > tol && g * 100 > before.dur[k]) {
                fprintf(stderr, "  %s seed %llu step %zu untouched but grew %lld ns of %lld\n", label,
                        (unsigned long long)o->seed, k, (long long)grew, (long long)before.dur[k]);
                CHECK(0);
            }
        }
    }
    jdom_free(t);
    teller_store_free(back);
}

/* The kinds the property runs one at a time; every kind together is one
 * more case. */
static const teller_fault k_kinds[] = {
    TELLER_FAULT_GPU_THROTTLE,     TELLER_FAULT_KERNEL_REGRESSION, TELLER_FAULT_LAUNCH_LATENCY,
    TELLER_FAULT_SYNC_STALL,       TELLER_FAULT_CPU_CONTENTION,    TELLER_FAULT_MALLOC_STORM,
    TELLER_FAULT_PCIE_DEGRADATION, TELLER_FAULT_SLOW_LINK,         TELLER_FAULT_PP_SEND_DELAY,
    TELLER_FAULT_NCCL_HANG,        TELLER_FAULT_PREEMPTION,        TELLER_FAULT_COUNT /* all */};

/* Runs the property on st (with its nlogs service logs) for every kind,
 * one fixed seed per (run, kind): the first of a few that gives some step
 * a fault, at rate 0.5 (a run of one step: 1, and no case of every kind,
 * which would be one of the others). Prints the run's figures; returns
 * them in *ks. */
static void keeps_steps_every_kind(const teller_store *st, const char *label, const char **logs, size_t nlogs,
                                   uint64_t salt, keep_stats *ks)
{
    memset(ks, 0, sizeof *ks);
    char parent[] = "/tmp/teller_perturb_XXXXXX", dir[64];
    CHECK(mkdtemp(parent) != NULL);
    int one_step = teller_store_step_count(st) == 1;
    for (size_t q = 0; q < sizeof k_kinds / sizeof *k_kinds && !(one_step && k_kinds[q] == TELLER_FAULT_COUNT); q++) {
        teller_perturb_opts o = teller_perturb_defaults();
        o.rate = one_step ? 1.0 : 0.5;
        o.logs = logs;
        o.nlogs = nlogs;
        o.faults = k_kinds[q] == TELLER_FAULT_COUNT ? 0 : 1u << k_kinds[q];
        for (uint64_t seed = 1; seed <= 8; seed++) {
            o.seed = salt * 1000 + q * 10 + seed;
            snprintf(dir, sizeof dir, "%s/%llu", parent, (unsigned long long)o.seed);
            keep_stats one = {0};
            check_keeps_steps(st, label, &o, dir, &one);
            ks->moved += one.moved;
            ks->faulted += one.faulted;
            ks->abnormal += one.abnormal;
            ks->carried += one.carried;
            ks->seen |= one.seen;
            ks->worst_err = one.worst_err > ks->worst_err ? one.worst_err : ks->worst_err;
            ks->worst_drift = one.worst_drift > ks->worst_drift ? one.worst_drift : ks->worst_drift;
            if (one.faulted)
                break;
        }
    }
    rm_rf(parent);
    fprintf(stderr, "  %-48.48s %3d faulty, %3d abnormal (%2d carried), %d moved, growth err %.2f %%, drift %.2f %%\n",
            label, ks->faulted, ks->abnormal, ks->carried, ks->moved, 100 * ks->worst_err, 100 * ks->worst_drift);
}

/* The property over every shared real run with steps and every fault
 * kind it can carry. */
static void test_perturbed_real_runs_keep_steps(void)
{
    int abnormal = 0, carried = 0;
    for (size_t r = 0; r < sizeof k_runs / sizeof *k_runs; r++) {
        teller_store *st = load_run((int)r);
        keep_stats ks;
        keeps_steps_every_kind(st, k_runs[r][0], NULL, 0, r, &ks);
        CHECK(ks.faulted > 0); /* every run is really perturbed, not passed through */
        abnormal += ks.abnormal;
        carried += ks.carried;
        teller_store_free(st);
    }
    CHECK(abnormal >= 20);
    CHECK(carried > 0); /* the training runs overlap their steps: some delay is carried */
}

/* A training run in the shape of a 2021 ResNet-50 recording (PyTorch 1.9's
 * Kineto categories: Operator, Runtime, Kernel, Memcpy; the step
 * annotation is an Operator), its times from a small model of the loop:
 * per step the data loader, a forward pass launched asynchronously, a
 * loss.item() (a device-to-host copy into pageable memory, which blocks,
 * then a stream synchronize), the backward pass on autograd's engine
 * thread, the optimizer. The GPU is the bottleneck: each step's forward
 * kernels queue behind the last step's backward, item() waits for them,
 * and the backward and optimizer kernels run on into the next step. */
typedef struct tr_out {
    FILE   *f;
    int     n, corr;
    int64_t gpu; /* end of the stream's last op, µs */
} tr_out;

static void tr_ev(tr_out *T, const char *cat, const char *name, int gpu, int tid, int64_t ts, int64_t dur, int corr)
{
    fprintf(T->f, "%s{\"ph\":\"X\",\"cat\":\"%s\",\"name\":\"%s\",\"pid\":%d,\"tid\":%d,\"ts\":%lld,\"dur\":%lld", T->n++ ? ",\n" : "",
            cat, name, gpu ? 0 : 10, gpu ? 7 : tid, (long long)ts, (long long)dur);
    if (corr)
        fprintf(T->f, ",\"args\":{\"correlation\":%d,\"external id\":%d}", corr, corr);
    fputs("}", T->f);
}

/* An op at t on thread tid that launches a kernel of kdur µs: it starts 2
 * µs after its launch call returns, or 1 µs after the op ahead of it. */
static int64_t tr_launch(tr_out *T, int tid, const char *op, int64_t t, const char *kernel, int64_t kdur)
{
    int c = ++T->corr;
    tr_ev(T, "Operator", op, 0, tid, t, 30, 0);
    tr_ev(T, "Runtime", "cudaLaunchKernel", 0, tid, t + 10, 6, c);
    int64_t s = t + 18 > T->gpu + 1 ? t + 18 : T->gpu + 1;
    tr_ev(T, "Kernel", kernel, 1, 0, s, kdur, c);
    T->gpu = s + kdur;
    return t + 30;
}

static teller_store *resnet_like_run(void)
{
    char *doc = NULL;
    size_t len = 0;
    tr_out T = {open_memstream(&doc, &len), 0, 0, 0};
    CHECK(T.f != NULL);
    if (!T.f)
        return NULL;
    fputs("{\"schemaVersion\": 1, \"traceEvents\": [\n", T.f);
    int64_t t = 1000;
    for (int k = 0; k < 6; k++) {
        int64_t m0 = t;
        tr_ev(&T, "Operator", "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", 0, 1, t + 5, 800, 0);
        t += 810;
        for (int j = 0; j < 12; j++)
            t = tr_launch(&T, 1, "aten::conv2d", t, "implicit_convolve_sgemm", 120) + 5;
        t = tr_launch(&T, 1, "aten::nll_loss_forward", t, "nll_loss_forward_reduce_cuda_kernel_2d", 20) + 5;
        /* loss.item(): the copy runs after the forward pass, the call returns 5 µs after it */
        int c = ++T.corr;
        int64_t cs = t + 8, ks = cs + 8 > T.gpu + 1 ? cs + 8 : T.gpu + 1, ce = ks + 3 + 5;
        tr_ev(&T, "Memcpy", "Memcpy DtoH (Device -> Pageable)", 1, 0, ks, 3, c);
        T.gpu = ks + 3;
        tr_ev(&T, "Runtime", "cudaMemcpyAsync", 0, 1, cs, ce - cs, c);
        tr_ev(&T, "Runtime", "cudaStreamSynchronize", 0, 1, ce + 1, 3, ++T.corr);
        tr_ev(&T, "Operator", "aten::_local_scalar_dense", 0, 1, t + 4, ce + 4 - (t + 4) + 2, 0);
        tr_ev(&T, "Operator", "aten::item", 0, 1, t, ce + 8 - t, 0);
        t = ce + 15;
        tr_ev(&T, "Operator", "aten::ones_like", 0, 1, t, 15, 0);
        /* autograd's engine thread starts the backward pass 150 µs later */
        int64_t b = t + 165;
        for (int j = 0; j < 12; j++)
            b = tr_launch(&T, 2, "autograd::engine::evaluate_function: ConvolutionBackward0", b, "wgrad_alg0_engine",
                          200) + 15;
        /* the stepping thread goes on 250 µs after the engine's last op */
        t = b - 15 + 250;
        int64_t o0 = t;
        for (int j = 0; j < 4; j++)
            t = tr_launch(&T, 1, "aten::_foreach_add_", t + 5, "multi_tensor_apply_kernel", 60);
        tr_ev(&T, "Operator", "Optimizer.step#SGD.step", 0, 1, o0, t + 5 - o0, 0);
        char name[32];
        snprintf(name, sizeof name, "ProfilerStep#%d", 20 + k);
        tr_ev(&T, "Operator", name, 0, 1, m0, t + 20 - m0, 0);
        t += 50;
    }
    fputs("]}\n", T.f);
    fclose(T.f);
    teller_store *st = teller_store_create();
    teller_error err;
    teller_error_clear(&err);
    CHECK_EQ_INT(teller_ingest_kineto_mem(st, "resnet50_like.json", doc, len, NULL, &err), TELLER_OK);
    CHECK_EQ_INT(teller_tree_build(st, NULL, &err), TELLER_OK);
    free(doc);
    return st;
}

/* The ResNet-shaped run holds what the property needs: six steps, their
 * windows overlapping (the GPU runs into the next step), then the
 * property for every kind. */
static void test_perturbed_resnet_like_run_keeps_steps(void)
{
    teller_store *st = resnet_like_run();
    CHECK_EQ_INT(teller_store_step_count(st), 6);
    const teller_step *sp = teller_store_steps(st);
    int overlap = 0;
    for (size_t j = 1; j < teller_store_num_steps(st); j++)
        overlap += sp[j].start_ns < sp[j - 1].end_ns;
    CHECK(overlap >= 4);
    keep_stats ks;
    keeps_steps_every_kind(st, "hand-made ResNet-50 shape", NULL, 0, 99, &ks);
    CHECK(ks.faulted >= 6);
    teller_store_free(st);
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

/* The property on a healthy simulated run over two nodes, tensor and
 * pipeline parallel, with its logs: it carries the kinds the shared real
 * traces cannot (slow links, pipeline sends, hangs, preemption). */
static void test_perturbed_multi_node_run_keeps_steps(void)
{
    char dir[] = "/tmp/teller_perturb_XXXXXX";
    healthy_2x2(dir, 16, 77);
    teller_store *st = load_case_ranks(dir, 0, 4);
    node_logs nl;
    keep_stats ks;
    keeps_steps_every_kind(st, "simulated 2x2", node_logs_of(&nl, dir), 2, 77, &ks);
    const teller_fault want[] = {TELLER_FAULT_NCCL_HANG, TELLER_FAULT_SLOW_LINK, TELLER_FAULT_PP_SEND_DELAY,
                                 TELLER_FAULT_GPU_THROTTLE, TELLER_FAULT_PREEMPTION};
    for (size_t k = 0; k < sizeof want / sizeof *want; k++)
        CHECK(ks.seen & (1u << want[k]));
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
 * other. old_profiler writes it as PyTorch 1.8-1.9 did, the step
 * annotation an Operator like the ops. */
static teller_store *handoff_run(int old_profiler)
{
    const char *mark = old_profiler ? "Operator" : "user_annotation", *op = old_profiler ? "Operator" : "cpu_op";
    char trace[2048];
    int n = snprintf(
        trace, sizeof trace,
        "{\"traceEvents\": [\n"
        "{\"ph\":\"X\",\"cat\":\"%s\",\"name\":\"ProfilerStep#1\",\"pid\":10,\"tid\":10,\"ts\":0,\"dur\":1000},\n"
        "{\"ph\":\"X\",\"cat\":\"%s\",\"name\":\"aten::mm\",\"pid\":10,\"tid\":10,\"ts\":10,\"dur\":20},\n"
        "{\"ph\":\"X\",\"cat\":\"%s\",\"name\":\"aten::ones_like\",\"pid\":10,\"tid\":10,\"ts\":40,\"dur\":20},\n"
        "{\"ph\":\"X\",\"cat\":\"%s\",\"name\":\"autograd::engine::evaluate_function: MmBackward0\",\"pid\":10,"
        "\"tid\":11,\"ts\":200,\"dur\":300},\n"
        "{\"ph\":\"X\",\"cat\":\"%s\",\"name\":\"aten::_foreach_mul_\",\"pid\":10,\"tid\":10,\"ts\":700,\"dur\":50}\n"
        "]}\n",
        mark, op, op, op, op);
    teller_store *st = teller_store_create();
    teller_error err;
    teller_error_clear(&err);
    CHECK_EQ_INT(teller_ingest_kineto_mem(st, "rank0", trace, (size_t)n, NULL, &err), TELLER_OK);
    CHECK_EQ_INT(teller_tree_build(st, NULL, &err), TELLER_OK);
    return st;
}

/* A thread woken by another thread's op waits for that op wherever it now
 * ends: host time before the gradient seed delays the backward pass on the
 * engine's thread, and host time in the backward pass delays the
 * optimizer on the stepping thread (before, each thread moved by its own
 * edits alone: a stretch with no op on any thread opened where the
 * engine's thread ran ahead, or the two threads' work overlapped). The
 * same when the step annotation is an op, as older profilers wrote it
 * (the step is no op that hands off). */
static void test_a_woken_thread_waits_for_the_op_that_woke_it(void)
{
    for (int old_profiler = 0; old_profiler < 2; old_profiler++) {
        teller_store *st = handoff_run(old_profiler);
        const teller_events *ev = teller_store_events(st);
        int64_t *start = malloc(ev->n * sizeof *start), *dur = malloc(ev->n * sizeof *dur), o = ORIGIN(st);
        teller_error err;
        teller_error_clear(&err);
        uint32_t seed = find_ev(st, 0, "aten::ones_like", 0);
        uint32_t bw = find_ev(st, 0, "autograd::engine::evaluate_function: MmBackward0", 0);
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
}

/* A thread that waited for another thread's op takes up, in that wait,
 * the delay it had before it: the stepping thread (10) hands the step to a
 * helper (11) whose synchronize waits for a 375 µs kernel the stepping
 * thread launched, and goes on 195 µs after the helper returns. 100 µs of
 * host time before the hand-off start the helper's synchronize later, but
 * the kernel ends where it did, so the synchronize returns when it did and
 * the stepping thread goes on when it did. */
static void test_a_wait_for_another_thread_takes_up_a_delay(void)
{
    static const char trace[] =
        "{\"traceEvents\": [\n"
        "{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"ProfilerStep#1\",\"pid\":10,\"tid\":10,\"ts\":0,\"dur\":1000},\n"
        "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::mm\",\"pid\":10,\"tid\":10,\"ts\":10,\"dur\":20},\n"
        "{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaLaunchKernel\",\"pid\":10,\"tid\":10,\"ts\":15,\"dur\":5,"
        "\"args\":{\"correlation\":1}},\n"
        "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"gemm_a\",\"pid\":0,\"tid\":7,\"ts\":25,\"dur\":375,\"args\":{\"correlation\":1}},\n"
        "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::ones_like\",\"pid\":10,\"tid\":10,\"ts\":40,\"dur\":20},\n"
        "{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaStreamSynchronize\",\"pid\":10,\"tid\":11,\"ts\":200,\"dur\":205,"
        "\"args\":{\"correlation\":2}},\n"
        "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::_foreach_mul_\",\"pid\":10,\"tid\":10,\"ts\":600,\"dur\":50}\n"
        "]}\n";
    teller_store *st = teller_store_create();
    teller_error err;
    teller_error_clear(&err);
    CHECK_EQ_INT(teller_ingest_kineto_mem(st, "rank0", trace, sizeof trace - 1, NULL, &err), TELLER_OK);
    CHECK_EQ_INT(teller_tree_build(st, NULL, &err), TELLER_OK);
    const teller_events *ev = teller_store_events(st);
    int64_t *start = malloc(ev->n * sizeof *start), *dur = malloc(ev->n * sizeof *dur), o = ORIGIN(st);
    uint32_t sync = find_ev(st, 0, "cudaStreamSynchronize", 0), opt = find_ev(st, 0, "aten::_foreach_mul_", 0);
    rt_edit e = {find_ev(st, 0, "aten::ones_like", 0), RT_GAP, 100 * US};
    CHECK_EQ_INT(rt_apply(st, &e, 1, start, dur, &err), TELLER_OK);
    CHECK_EQ_INT(start[sync] - o, 300 * US);
    CHECK_EQ_INT(start[sync] + dur[sync] - o, 405 * US);
    CHECK_EQ_INT(start[opt] - o, 600 * US);
    CHECK(consistent(st, start, dur));
    free(start);
    free(dur);
    teller_store_free(st);
}

/* The reader puts a host event in the step whose annotation, on its
 * rank, started last before it and had not ended. An event of another
 * thread keeps its step whichever thread moves: a watchdog's query after
 * the step (woken by nothing: 2.5 ms after the last op) that the step's
 * longer annotation would now cover starts after it ends, and another
 * thread's op in the next step, which now starts later, starts in it; a
 * helper's copy that a gap pushes past the step's end holds the
 * annotation back; a helper's op in the idle time between steps that a
 * gap pushes past the next step's start holds that step back. */
static void test_other_threads_keep_their_steps(void)
{
    static const char trace[] =
        "{\"traceEvents\": [\n"
        "{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"ProfilerStep#1\",\"pid\":10,\"tid\":10,\"ts\":0,\"dur\":10000},\n"
        "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::mm\",\"pid\":10,\"tid\":10,\"ts\":10,\"dur\":20},\n"
        "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::copy_\",\"pid\":10,\"tid\":12,\"ts\":9000,\"dur\":10},\n"
        "{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaEventQuery\",\"pid\":10,\"tid\":13,\"ts\":11500,\"dur\":2},\n"
        "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::zero_\",\"pid\":10,\"tid\":12,\"ts\":11700,\"dur\":10},\n"
        "{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"ProfilerStep#2\",\"pid\":10,\"tid\":10,\"ts\":12000,\"dur\":8000},\n"
        "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::mm\",\"pid\":10,\"tid\":10,\"ts\":12010,\"dur\":20},\n"
        "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::add_\",\"pid\":10,\"tid\":14,\"ts\":14500,\"dur\":10}\n"
        "]}\n";
    teller_store *st = teller_store_create();
    teller_error err;
    teller_error_clear(&err);
    CHECK_EQ_INT(teller_ingest_kineto_mem(st, "rank0", trace, sizeof trace - 1, NULL, &err), TELLER_OK);
    CHECK_EQ_INT(teller_tree_build(st, NULL, &err), TELLER_OK);
    const teller_events *ev = teller_store_events(st);
    int64_t *start = malloc(ev->n * sizeof *start), *dur = malloc(ev->n * sizeof *dur), o = ORIGIN(st);
    uint32_t m1 = find_ev(st, 0, "ProfilerStep#1", 0), m2 = find_ev(st, 0, "ProfilerStep#2", 0);
    uint32_t copy = find_ev(st, 0, "aten::copy_", 0), query = find_ev(st, 0, "cudaEventQuery", 0);
    uint32_t zero = find_ev(st, 0, "aten::zero_", 0), add = find_ev(st, 0, "aten::add_", 0);
    /* 3 ms of host time in step 1: its annotation ends at 13 ms, past the
     * query, and step 2 starts 2 ms after it (an engine steps when the last
     * step is done), past the helper's op in step 2 */
    rt_edit e = {find_ev(st, 0, "aten::mm", 0), RT_GAP, 3000 * US};
    CHECK_EQ_INT(rt_apply(st, &e, 1, start, dur, &err), TELLER_OK);
    CHECK_EQ_INT(start[m1] + dur[m1] - o, 13000 * US);
    CHECK_EQ_INT(start[m2] - o, 15000 * US);
    CHECK(start[query] >= start[m1] + dur[m1] && start[query] < start[m2]);
    CHECK(start[copy] < start[m1] + dur[m1]);
    CHECK(start[add] >= start[m2] && start[add] < start[m2] + dur[m2]);
    /* 1.1 ms before the helper's copy: step 1 lasts until it starts */
    e = (rt_edit){copy, RT_GAP, 1100 * US};
    CHECK_EQ_INT(rt_apply(st, &e, 1, start, dur, &err), TELLER_OK);
    CHECK_EQ_INT(start[copy] - o, 10100 * US);
    CHECK(start[m1] + dur[m1] > start[copy]);
    /* 0.4 ms before the helper's op between the steps: step 2 starts after it */
    e = (rt_edit){zero, RT_GAP, 400 * US};
    CHECK_EQ_INT(rt_apply(st, &e, 1, start, dur, &err), TELLER_OK);
    CHECK_EQ_INT(start[zero] - o, 12100 * US);
    CHECK(start[m2] > start[zero]);
    CHECK(start[m1] + dur[m1] <= start[zero]);
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

/* The healthy case st of dir (its first nlogs node logs given) with
 * preemption drawn at rate (seed 3) into dir/perturbed: the written case,
 * loaded, and its truth.json in *truth (the caller frees both). */
static teller_store *preempted_case(const char *dir, const teller_store *st, double rate, size_t nlogs, jv **truth)
{
    node_logs nl;
    teller_perturb_opts o = teller_perturb_defaults();
    o.rate = rate;
    o.seed = 3;
    o.faults = 1u << TELLER_FAULT_PREEMPTION;
    o.logs = node_logs_of(&nl, dir);
    o.nlogs = nlogs;
    char out[700];
    snprintf(out, sizeof out, "%s/perturbed", dir);
    teller_error err;
    teller_error_clear(&err);
    CHECK_EQ_INT(teller_perturb(st, &o, out, NULL, &err), TELLER_OK);
    teller_store *pt = load_written(out, st);
    snprintf(out, sizeof out, "%s/perturbed/truth.json", dir);
    *truth = jdom_load(out, &err);
    return pt;
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
    jv *t = NULL;
    teller_store *pt = preempted_case(dir, st, 0.5, 2, &t);
    static int64_t before[64][4], after[64][4];
    compute_ns(st, before);
    compute_ns(pt, after);
    int64_t most[4] = {0};
    for (int k = 0; k < 64; k++)
        for (int r = 0; r < 4; r++)
            most[r] = before[k][r] > most[r] ? before[k][r] : most[r];
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

/* A preempted step diagnosed without its log line: every rank's compute
 * kernels grew, which the kernels' yardsticks take for more work, so no
 * finding explains the slow step; what is said of it names their growth
 * (SGLang's decode annotations state the batch its steps are judged by).
 * With the log, the warning perturb wrote is found at its step. */
static void test_unlogged_preemption_is_said(void)
{
    char dir[] = "/tmp/teller_perturb_XXXXXX";
    teller_sim_opts so = teller_sim_defaults();
    so.engine = "sglang";
    so.nodes = 1;
    so.gpus_per_node = 4;
    so.tp = so.pp = 2;
    so.steps = 40;
    so.fault_rate = 0;
    so.seed = 5;
    sim_case(dir, &so);
    teller_store *st = load_case_ranks(dir, 0, 4);
    jv *t = NULL;
    teller_store *pt = preempted_case(dir, st, 0.15, 1, &t);
    teller_error err;
    teller_error_clear(&err);
    teller_diagnosis *d = NULL;
    teller_diag_opts dopt = teller_diag_defaults();
    CHECK_EQ_INT(teller_diagnose(pt, &dopt, &d, &err), TELLER_OK);
    const jv *steps = t ? jdom_get(t, "steps") : NULL;
    int said = 0;
    for (size_t k = 0; d && steps && k < steps->n && k < d->n; k++) {
        const teller_diag_step *s = &d->steps[k];
        if (!strcmp(jdom_str(&steps->items[k], "fault", ""), "preemption")) {
            CHECK(s->slow && !s->pred.abnormal);
            said += strstr(s->pred.explanation, "its compute kernels on rank") != NULL;
        }
    }
    CHECK(said >= 2);
    teller_check_report r = {0};
    CHECK_EQ_INT(teller_check_diagnosis(pt, d, &r, &err), TELLER_OK);
    CHECK(r.facts > 0 && r.mismatches == 0);
    /* with its log, each warning lies among SGLang's "Prefill batch."
     * lines where its step ran (they share whole seconds), and the
     * diagnosis finds each preemption at its step and nowhere else */
    char log[760];
    snprintf(log, sizeof log, "%s/perturbed/logs/node0.log", dir);
    const char *logs[] = {log};
    dopt.logs = logs;
    dopt.nlogs = 1;
    teller_diagnosis *dl = NULL;
    CHECK_EQ_INT(teller_diagnose(pt, &dopt, &dl, &err), TELLER_OK);
    for (size_t k = 0; dl && steps && k < steps->n && k < dl->n; k++)
        CHECK_EQ_INT(!strcmp(dl->steps[k].fault, "preemption"),
                     !strcmp(jdom_str(&steps->items[k], "fault", ""), "preemption"));
    teller_diagnosis_free(dl);
    jdom_free(t);
    teller_diagnosis_free(d);
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
    {"perturb: every kind on every shared real run keeps steps; steps grow by the truth's excess",
     test_perturbed_real_runs_keep_steps},
    {"perturb: every kind on a ResNet-shaped run (host ahead, one blocking copy per step) keeps steps",
     test_perturbed_resnet_like_run_keeps_steps},
    {"perturb: every kind on a multi-node run keeps steps; it carries slow links and pipeline sends",
     test_perturbed_multi_node_run_keeps_steps},
    {"perturb: preemption writes vLLM's warning into the scheduler node's log at the step's time", test_preemption_writes_the_engine_warning},
    {"perturb: a preempted step recomputes a prefill the size of the run's largest", test_preemption_recomputes_a_prefill},
    {"perturb: a preempted step's warning lies among the prefill lines where it ran; unlogged, it is said slow",
     test_unlogged_preemption_is_said},
    {"perturb: same seed, same bytes", test_same_seed_same_bytes},
    {"perturb: a torn-down hang's truth lasts until the watchdog; a member that did not wait keeps its time",
     test_hangs_and_mismatched_members_keep_sane_times},
    {"perturb: teller perturb CASE_DIR brings the case's logs along", test_cli_case_brings_its_logs},
    {"perturb: bad input says why", test_bad_input_says_why},
    {"perturb: peers wait at the collective for a slow rank; syncs and parents follow", test_peers_wait_for_a_slow_rank},
    {"perturb: a late launch moves only kernels that waited for it", test_a_late_launch_moves_only_kernels_that_waited_for_it},
    {"perturb: a thread woken by another thread's op waits for it wherever it now ends", test_a_woken_thread_waits_for_the_op_that_woke_it},
    {"perturb: a thread that waited for another thread's op takes up a delay it had", test_a_wait_for_another_thread_takes_up_a_delay},
    {"perturb: other threads' events keep their steps when either thread moves", test_other_threads_keep_their_steps},
    {"perturb: the consistency check sees each kind of break", test_consistency_check_sees_breaks},
    {NULL, NULL},
};
