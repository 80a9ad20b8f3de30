/*
 * test_diagnose_modes.c - the failure modes found on real traces, each
 * reproduced on a small hand-made trace in the real Kineto format (legacy
 * PyTorch spellings where the mode needs them) and checked fixed:
 *   (a) a device-to-host cudaMemcpyAsync that blocks until the kernels
 *       before it end is judged like a synchronize, not blamed as a copy;
 *   (b) without tensor-parallel peers, kernels are compared with calls of
 *       the same launch configuration in other steps, so a regression in a
 *       ProfilerStep#N training trace is found;
 *   (c) with one step, a host gap is judged without the step's own longest
 *       gap as the yardstick;
 *   (d) ProfilerStep#N recorded as an `Operator` (older profilers) marks steps;
 *   (e) time a thread waits while another thread of the process works (and
 *       keeps the GPU fed) is not blamed on the waiter;
 *   (h) when the host runs ahead of the GPU, the steps after a slow one
 *       are late because their kernels queue behind its work: they carry
 *       its root, and nothing when the host waits for the GPU each step,
 *       or when the fault held the host back longer than the GPU;
 *   (i) a host stall while the GPU, idle in the trace, waits for work
 *       launched before the stall (held by what the trace does not show)
 *       costs nothing;
 *   (j) of a step's host stalls, the one named is the op whose wait grew
 *       the most over its usual, not the longest gap;
 *   (k) copies slowed in both directions are one degraded link, named
 *       after the copy with the most time;
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "teller/check.h"
#include "teller/diagnose.h"
#include "teller/ingest.h"
#include "teller/load.h"
#include "teller/tree.h"

typedef struct tw {
    FILE  *f;
    int    n;
    int    corr;
    double launch_us; /* a launch call's time; 0: 5 us */
} tw;

static void tw_ev(tw *w, const char *cat, const char *name, int pid, int tid, double ts_us, double dur_us,
                  const char *args)
{
    fprintf(w->f, "%s\n{\"ph\": \"X\", \"cat\": \"%s\", \"name\": \"%s\", \"pid\": %d, \"tid\": %d, \"ts\": %.3f, "
                  "\"dur\": %.3f, \"args\": {%s}}",
            w->n++ ? "," : "", cat, name, pid, tid, ts_us, dur_us, args ? args : "");
}

/* A launch on the host thread at t (us), its kernel on stream 7 from k0 for kd us. */
static void tw_launch(tw *w, int tid, double t, const char *kernel, double k0, double kd, int grid)
{
    char a[160];
    int c = ++w->corr;
    snprintf(a, sizeof a, "\"correlation\": %d", c);
    tw_ev(w, "Runtime", "cudaLaunchKernel", 1, tid, t, w->launch_us > 0 ? w->launch_us : 5, a);
    snprintf(a, sizeof a, "\"correlation\": %d, \"device\": 0, \"stream\": 7, \"grid\": [%d, 1, 1], \"block\": [128, 1, 1]",
             c, grid);
    tw_ev(w, "Kernel", kernel, 0, 7, k0, kd, a);
}

static teller_diagnosis *diagnose_file(const char *path, teller_store **stp)
{
    teller_store *st = teller_store_create();
    teller_error err;
    teller_error_clear(&err);
    CHECK_EQ_INT(teller_ingest_file(st, path, NULL, &err), TELLER_OK);
    CHECK_EQ_INT(teller_tree_build(st, NULL, &err), TELLER_OK);
    teller_diagnosis *d = NULL;
    CHECK_EQ_INT(teller_diagnose(st, NULL, &d, &err), TELLER_OK);
    *stp = st;
    return d;
}

/* Six training steps as an older profiler writes them (`Operator` steps,
 * `Runtime`/`Kernel`/`Memcpy` categories, no distributedInfo), one rank:
 * per step an elementwise kernel, four GEMMs, and a blocking D2H copy of
 * the result. In step 3 the GEMMs regress (3x), so the copy call blocks
 * 3x longer too. */
static void write_training_trace(const char *path, int regress_step)
{
    tw w = {fopen(path, "w"), 0, 0, 0};
    CHECK(w.f != NULL);
    fputs("{\"schemaVersion\": 1, \"traceEvents\": [", w.f);
    double t = 1000000;
    for (int k = 0; k < 6; k++) {
        double slow = k == regress_step ? 3.0 : 1.0, step_dur = 20000 * slow + 3000;
        char nm[32];
        snprintf(nm, sizeof nm, "ProfilerStep#%d", 1010 + k);
        tw_ev(&w, "Operator", nm, 1, 1, t, step_dur, NULL);
        double h = t + 10, g = t + 40;
        tw_launch(&w, 1, h, "elementwise_kernel", h + 20, 30, 64);
        h += 40;
        g = h + 20;
        for (int q = 0; q < 4; q++) {
            tw_launch(&w, 1, h, "sm90_xmma_gemm_bf16_128x128", g, 5000 * slow, 132);
            h += 10;
            g += 5000 * slow;
        }
        /* the D2H copy waits for the GEMMs, then moves 4 MB in 350 us */
        char a[120];
        int c = ++w.corr;
        snprintf(a, sizeof a, "\"correlation\": %d", c);
        tw_ev(&w, "Runtime", "cudaMemcpyAsync", 1, 1, h, g + 350 - h, a);
        snprintf(a, sizeof a, "\"correlation\": %d, \"device\": 0, \"stream\": 7, \"bytes\": 4194304", c);
        tw_ev(&w, "Memcpy", "Memcpy DtoH (Device -> Pageable)", 0, 7, g, 350, a);
        t += step_dur + 500;
    }
    fputs("]}\n", w.f);
    fclose(w.f);
}

static void test_modes_training_trace(void)
{
    char path[] = "/tmp/teller_modes_XXXXXX.json";
    int fd = mkstemps(path, 5);
    CHECK(fd >= 0);
    close(fd);
    write_training_trace(path, 3);
    teller_store *st = NULL;
    teller_diagnosis *d = diagnose_file(path, &st);
    /* (d) six steps, not one */
    CHECK_EQ_INT(d ? d->n : 0, 6);
    /* (b) the regressed step is found, on the GEMM; (a) the copy that
     * waited for it is not the culprit */
    CHECK_EQ_INT(flagged(d), 1);
    if (d && d->n == 6) {
        const teller_step_pred *p = &d->steps[3].pred;
        CHECK(p->abnormal);
        CHECK(p->ncand > 0 && strstr(p->cand[0].op, "gemm") != NULL);
        CHECK(!strcmp(d->steps[3].fault, "kernel_regression") || !strcmp(d->steps[3].fault, "gpu_throttle"));
        for (int q = 0; q < p->ncand; q++)
            CHECK(strcmp(p->cand[q].op, "cudaMemcpyAsync") != 0);
    }
    teller_diagnosis_free(d);
    teller_store_free(st);
    /* the same run without the regression: nothing flagged */
    write_training_trace(path, -1);
    d = diagnose_file(path, &st);
    CHECK_EQ_INT(d ? d->n : 0, 6);
    CHECK_EQ_INT(flagged(d), 0);
    teller_diagnosis_free(d);
    teller_store_free(st);
    unlink(path);
}

/* One step (no markers: the whole trace) of launches every 100 us, a GPU
 * kept busy, and a 6 ms stretch in which the stepping thread runs nothing.
 * With helper set, another thread of the process launches the kernels
 * during that stretch (autograd's engine thread doing the backward); with
 * helper 2, that thread itself stalls 5 ms in it, and its op after the
 * stall is an aten::mm. With
 * gpu_span set, the step's annotation is drawn on the stream too, as
 * Kineto's gpu_user_annotation spans it: a row on the device, not work. */
static void write_gap_trace(const char *path, int helper, int gpu_span)
{
    tw w = {fopen(path, "w"), 0, 0, 0};
    CHECK(w.f != NULL);
    fputs("{\"traceEvents\": [", w.f);
    double t = 5000000, end = t + 20000;
    tw_ev(&w, "user_annotation", "ProfilerStep#7", 1, 1, t, end - t, NULL);
    if (gpu_span)
        tw_ev(&w, "gpu_user_annotation", "ProfilerStep#7", 0, 7, t + 15, end - t - 15, "\"device\": 0, \"stream\": 7");
    for (double h = t + 10; h < end - 200; h += 100) {
        int in_gap = h > t + 8000 && h < t + 14000, stalled = helper == 2 && h > t + 8500 && h < t + 13500;
        if ((in_gap && !helper) || stalled)
            continue;
        int after_stall = helper == 2 && h > t + 13500 && h < t + 13600;
        tw_ev(&w, "cpu_op", after_stall ? "aten::mm" : "aten::add", 1, in_gap ? 2 : 1, h, 20, NULL);
        tw_launch(&w, in_gap ? 2 : 1, h + 5, "vectorized_elementwise_kernel", h + 15, 80, 64);
    }
    fputs("]}\n", w.f);
    fclose(w.f);
}

static void test_modes_host_gaps(void)
{
    char path[] = "/tmp/teller_gaps_XXXXXX.json";
    int fd = mkstemps(path, 5);
    CHECK(fd >= 0);
    close(fd);
    /* (c) one step: the 6 ms stall with an idle GPU is found, also when
     * the step's annotation spans the stream; a step with no other of its
     * kind has no yardstick, but what the stall cost is a material share
     * of the rest of the step: an alarm */
    teller_store *st = NULL;
    teller_diagnosis *d = NULL;
    for (int gpu_span = 0; gpu_span <= 1; gpu_span++) {
        write_gap_trace(path, 0, gpu_span);
        d = diagnose_file(path, &st);
        CHECK_EQ_INT(d ? d->n : 0, 1);
        CHECK_EQ_INT(flagged(d), 1);
        CHECK(d && d->steps[0].usual_ns < 0);
        CHECK(!strcmp(top_kind(d, 0), "cpu_contention"));
        teller_diagnosis_free(d);
        teller_store_free(st);
    }
    /* (e) the same stretch while another thread works: not a stall */
    write_gap_trace(path, 1, 0);
    d = diagnose_file(path, &st);
    CHECK(strcmp(top_kind(d, 0), "cpu_contention") != 0);
    teller_diagnosis_free(d);
    teller_store_free(st);
    /* (f) the other thread stalls while the stepping thread waits for it:
     * the process is stalled, at the other thread's op after the stall */
    write_gap_trace(path, 2, 0);
    d = diagnose_file(path, &st);
    CHECK(!strcmp(top_kind(d, 0), "cpu_contention"));
    CHECK(!strcmp(top_op(st, d, 0), "aten::mm"));
    teller_diagnosis_free(d);
    teller_store_free(st);
    unlink(path);
}

/* Five steps of ops every 30 us on the stepping thread, each launching a
 * kernel at once on an idle GPU, with a 4 ms gap before aten::cat every
 * step (untraced Python, the same every step); with stall set, step 3 also
 * stalls 2 ms before an aten::mm. */
static void write_regular_gap_trace(const char *path, int stall)
{
    tw w = {fopen(path, "w"), 0, 0, 0};
    CHECK(w.f != NULL);
    fputs("{\"traceEvents\": [", w.f);
    for (int k = 0; k < 5; k++) {
        double t = 5000000 + 12000.0 * k;
        char nm[32];
        snprintf(nm, sizeof nm, "ProfilerStep#%d", k);
        /* the step lasts until its last op: a stall makes it longer */
        tw_ev(&w, "user_annotation", nm, 1, 1, t, 10000 + (stall && k == 3 ? 2000 : 0), NULL);
        int after_gap = 0, after_stall = 0;
        for (double h = t + 10; h < t + 10000 + (stall && k == 3 ? 2000 : 0); h += 30) {
            if (h > t + 2000 && h < t + 6000) {
                after_gap = 1;
                continue;
            }
            if (stall && k == 3 && h > t + 7000 && h < t + 9000) { /* 2 ms in which the host runs nothing */
                after_stall = 1;
                continue;
            }
            const char *op = after_gap ? "aten::cat" : after_stall ? "aten::mm" : "aten::add";
            after_gap = after_stall = 0;
            tw_ev(&w, "cpu_op", op, 1, 1, h, 20, NULL);
            tw_launch(&w, 1, h + 5, "vectorized_elementwise_kernel", h + 15, 20, 64);
        }
    }
    fputs("]}\n", w.f);
    fclose(w.f);
}

/* A gap that comes before the same op every step is that op's normal, not
 * a yardstick for every other op: the stall found beside a regular 4 ms
 * gap twice its length; the run without the stall flags nothing. */
static void test_modes_regular_gap(void)
{
    char path[] = "/tmp/teller_reggap_XXXXXX.json";
    int fd = mkstemps(path, 5);
    CHECK(fd >= 0);
    close(fd);
    teller_store *st = NULL;
    write_regular_gap_trace(path, 1);
    teller_diagnosis *d = diagnose_file(path, &st);
    CHECK_EQ_INT(d ? d->n : 0, 5);
    CHECK_EQ_INT(flagged(d), 1);
    if (d && d->n == 5) {
        CHECK(d->steps[3].pred.abnormal);
        CHECK(!strcmp(d->steps[3].fault, "cpu_contention"));
        CHECK(d->steps[3].pred.ncand > 0 && !strcmp(d->steps[3].pred.cand[0].op, "aten::mm"));
    }
    teller_diagnosis_free(d);
    teller_store_free(st);
    write_regular_gap_trace(path, 0);
    d = diagnose_file(path, &st);
    CHECK_EQ_INT(flagged(d), 0);
    teller_diagnosis_free(d);
    teller_store_free(st);
    unlink(path);
}

/* Five steps of 200 ops on the stepping thread, each launching a kernel
 * at once on an idle GPU: aten::add 10 us after the op before it, every
 * tenth an aten::mm 40 us after it (its usual wait). In step 3 the host
 * stalls twice: 2000 us more before an aten::add and 1990 us more before
 * an aten::mm, whose gap (2030 us) is the longer one. */
static void write_two_stall_trace(const char *path)
{
    tw w = {fopen(path, "w"), 0, 0, 0};
    CHECK(w.f != NULL);
    fputs("{\"traceEvents\": [", w.f);
    for (int k = 0; k < 5; k++) {
        double t = 5000000 + 12000.0 * k, h = t + 10;
        char nm[32];
        snprintf(nm, sizeof nm, "ProfilerStep#%d", k);
        for (int j = 0; j < 200; j++) {
            int mm = j % 10 == 9;
            if (j)
                h += mm ? 40 : 10;
            if (k == 3 && j == 100)
                h += 2000;
            if (k == 3 && j == 159)
                h += 1990;
            tw_ev(&w, "cpu_op", mm ? "aten::mm" : "aten::add", 1, 1, h, 20, NULL);
            tw_launch(&w, 1, h + 5, "vectorized_elementwise_kernel", h + 15, 20, 64);
            h += 20;
        }
        tw_ev(&w, "user_annotation", nm, 1, 1, t, h + 20 - t, NULL); /* until its last op: the stalls make it longer */
    }
    fputs("]}\n", w.f);
    fclose(w.f);
}

/* A stall is named after the op whose wait grew the most, its gap over
 * what that op usually waits, not after the longest gap: the op that
 * always waits longer would otherwise win a tie it did not cause. */
static void test_modes_stall_over_usual_wait(void)
{
    char path[] = "/tmp/teller_twostall_XXXXXX.json";
    int fd = mkstemps(path, 5);
    CHECK(fd >= 0);
    close(fd);
    teller_store *st = NULL;
    write_two_stall_trace(path);
    teller_diagnosis *d = diagnose_file(path, &st);
    CHECK_EQ_INT(d ? d->n : 0, 5);
    CHECK_EQ_INT(flagged(d), 1);
    if (d && d->n == 5) {
        CHECK(d->steps[3].pred.abnormal);
        CHECK(!strcmp(d->steps[3].fault, "cpu_contention"));
        CHECK(d->steps[3].pred.ncand > 0 && !strcmp(d->steps[3].pred.cand[0].op, "aten::add"));
    }
    teller_diagnosis_free(d);
    teller_store_free(st);
    unlink(path);
}

/* One step whose host first queues 50 kernels of 200 us in 1.25 ms (10 ms
 * of GPU work), then launches a 10 us kernel every 100 us for 20 ms (the
 * GPU catches up and waits for the host); with stall set, the host stalls
 * 5 ms between the two, while the GPU still runs its queue. */
static void write_queued_stall_trace(const char *path, int stall)
{
    tw w = {fopen(path, "w"), 0, 0, 0};
    CHECK(w.f != NULL);
    fputs("{\"traceEvents\": [", w.f);
    double t = 5000000, h = t + 10, g = t + 20, gap = stall ? 5000 : 0;
    for (int j = 0; j < 50; j++, h += 25) {
        tw_ev(&w, "cpu_op", "aten::add", 1, 1, h, 20, NULL);
        tw_launch(&w, 1, h + 5, "gemm_kernel", g, 200, 64);
        g += 200;
    }
    h += gap;
    for (int j = 0; j < 200; j++, h += 100) {
        double k0 = h + 15 > g ? h + 15 : g;
        tw_ev(&w, "cpu_op", j ? "aten::mul" : "aten::mm", 1, 1, h, 20, NULL);
        tw_launch(&w, 1, h + 5, "vectorized_elementwise_kernel", k0, 10, 32);
        g = k0 + 10;
    }
    tw_ev(&w, "user_annotation", "ProfilerStep#7", 1, 1, t, h - t, NULL);
    fputs("]}\n", w.f);
    fclose(w.f);
}

/* One step of 1,000 kernels of 100 us on one stream, queued back to back
 * with the GPU's own 1.5 us between two; the host launches one every 10 us
 * and, with stall set, stalls 3 ms after the 500th, 40 ms before the GPU
 * reaches its launch. */
static void write_deep_queue_trace(const char *path, int stall)
{
    tw w = {fopen(path, "w"), 0, 0, 0};
    CHECK(w.f != NULL);
    fputs("{\"traceEvents\": [", w.f);
    double t = 5000000, h = t + 10, g = t + 20;
    for (int j = 0; j < 1000; j++, h += 10) {
        if (j == 500 && stall)
            h += 3000;
        double k0 = h + 8 > g ? h + 8 : g;
        tw_ev(&w, "cpu_op", j == 500 ? "aten::mm" : "aten::add", 1, 1, h, 6, NULL);
        tw_launch(&w, 1, h + 1, "gemm_kernel", k0, 100, 64);
        g = k0 + 101.5;
    }
    tw_ev(&w, "user_annotation", "ProfilerStep#7", 1, 1, t, h - t, NULL);
    fputs("]}\n", w.f);
    fclose(w.f);
}

/* A stall while the GPU still runs queued work costs nothing while it
 * lasts, and all of it later, where the GPU waits for the late host: it is
 * found at the op after it, costing about its length, a material share of
 * the step (the only one: flagged without a yardstick). One whose queue
 * outlasts the host costs nothing. */
static void test_modes_queued_stall(void)
{
    char path[] = "/tmp/teller_qstall_XXXXXX.json";
    int fd = mkstemps(path, 5);
    CHECK(fd >= 0);
    close(fd);
    teller_store *st = NULL;
    write_queued_stall_trace(path, 1);
    teller_diagnosis *d = diagnose_file(path, &st);
    CHECK_EQ_INT(d ? d->n : 0, 1);
    CHECK_EQ_INT(flagged(d), 1);
    CHECK(!strcmp(top_kind(d, 0), "cpu_contention"));
    CHECK(!strcmp(top_op(st, d, 0), "aten::mm"));
    CHECK(top_cost(d, 0) > 4.5e6 && top_cost(d, 0) < 5.1e6);
    teller_diagnosis_free(d);
    teller_store_free(st);
    write_queued_stall_trace(path, 0);
    d = diagnose_file(path, &st);
    CHECK(strcmp(top_kind(d, 0), "cpu_contention") != 0);
    teller_diagnosis_free(d);
    teller_store_free(st);
    /* absorbed whole by a deep queue, it costs nothing: the GPU's own gap
     * between two queued kernels is no time the host could give back (it
     * was counted once per kernel, 1.5 ms over this queue, and flagged
     * the step) */
    write_deep_queue_trace(path, 1);
    d = diagnose_file(path, &st);
    CHECK_EQ_INT(d ? d->n : 0, 1);
    CHECK_EQ_INT(flagged(d), 0);
    CHECK(d && (d->steps[0].ncands == 0 || top_cost(d, 0) < 1000));
    teller_diagnosis_free(d);
    teller_store_free(st);
    unlink(path);
}

/* A log that cannot be read fails the diagnosis naming the file (it was
 * skipped silently, while teller requests reported it). */
static void test_modes_unreadable_log(void)
{
    char path[] = "/tmp/teller_logerr_XXXXXX.json";
    int fd = mkstemps(path, 5);
    CHECK(fd >= 0);
    close(fd);
    write_gap_trace(path, 1, 0);
    teller_store *st = teller_store_create();
    teller_error err;
    teller_error_clear(&err);
    CHECK_EQ_INT(teller_ingest_file(st, path, NULL, &err), TELLER_OK);
    CHECK_EQ_INT(teller_tree_build(st, NULL, &err), TELLER_OK);
    const char *logs[] = {"/nonexistent-dir/node0.log", "/tmp"};
    for (int i = 0; i < 2; i++) {
        teller_diag_opts o = teller_diag_defaults();
        o.logs = logs + i;
        o.nlogs = 1;
        teller_diagnosis *d = NULL;
        teller_error_clear(&err);
        CHECK(teller_diagnose(st, &o, &d, &err) != TELLER_OK);
        CHECK(d == NULL);
        CHECK(strstr(err.file, logs[i]) != NULL);
    }
    teller_store_free(st);
    unlink(path);
}

/* One step (the only one) of 300 small kernels, each launched by an op on
 * the host thread and run at once on an otherwise idle GPU, with launch
 * calls of launch_us each. */
static void write_launch_trace(const char *path, double launch_us)
{
    tw w = {fopen(path, "w"), 0, 0, launch_us};
    CHECK(w.f != NULL);
    fputs("{\"traceEvents\": [", w.f);
    double t = 7000000, gap = launch_us + 40, end = t + 300 * gap + 100;
    tw_ev(&w, "user_annotation", "ProfilerStep#3", 1, 1, t, end - t, NULL);
    for (int i = 0; i < 300; i++) {
        double h = t + 10 + i * gap;
        tw_ev(&w, "cpu_op", "aten::mul", 1, 1, h, launch_us + 10, NULL);
        tw_launch(&w, 1, h + 5, i % 2 ? "elementwise_kernel" : "reduce_kernel", h + launch_us + 8, 20, 64);
    }
    fputs("]}\n", w.f);
    fclose(w.f);
}

/* (f) a one-step trace has no other step to say what its launches usually
 * cost: launches of 60 us (a slowed host) are found against what a launch
 * costs anywhere (10 us), and what the host lost is most of the step: the
 * step is flagged without a yardstick; launches of 6 us are not found */
static void test_modes_one_step_launches(void)
{
    char path[] = "/tmp/teller_launch_XXXXXX.json";
    int fd = mkstemps(path, 5);
    CHECK(fd >= 0);
    close(fd);
    for (int slow = 0; slow <= 1; slow++) {
        write_launch_trace(path, slow ? 60 : 6);
        teller_store *st = NULL;
        teller_diagnosis *d = diagnose_file(path, &st);
        CHECK_EQ_INT(d ? d->n : 0, 1);
        CHECK_EQ_INT(flagged(d), slow);
        CHECK_EQ_INT(!strcmp(top_kind(d, 0), "launch_latency"), slow);
        if (slow)
            CHECK(!strcmp(top_op(st, d, 0), "cudaLaunchKernel"));
        teller_diagnosis_free(d);
        teller_store_free(st);
    }
    unlink(path);
}

/* Six steps, each an async 1 MB host-to-device copy (10 us) and then
 * CPU work of 400 us before a kernel reads the data; in step 3 the copy
 * takes 300 us. With queued set, the kernel was launched at once and
 * waits for the copy (the step loses the slowdown); without, the kernel
 * is launched after the CPU work, when the slow copy has long ended. */
static void write_copy_trace(const char *path, int queued)
{
    tw w = {fopen(path, "w"), 0, 0, 0};
    CHECK(w.f != NULL);
    fputs("{\"traceEvents\": [", w.f);
    double t = 3000000;
    for (int k = 0; k < 6; k++) {
        double cd = k == 3 ? 300 : 10, kstart = queued ? t + 20 + cd : t + 430;
        double step_dur = (kstart > t + 430 ? kstart : t + 430) + 500 - t;
        char nm[32], a[160];
        snprintf(nm, sizeof nm, "ProfilerStep#%d", 40 + k);
        tw_ev(&w, "user_annotation", nm, 1, 1, t, step_dur, NULL);
        int c = ++w.corr;
        snprintf(a, sizeof a, "\"correlation\": %d", c);
        tw_ev(&w, "cuda_runtime", "cudaMemcpyAsync", 1, 1, t + 10, 5, a);
        snprintf(a, sizeof a, "\"correlation\": %d, \"device\": 0, \"stream\": 7, \"bytes\": 1048576", c);
        tw_ev(&w, "gpu_memcpy", "Memcpy HtoD (Pinned -> Device)", 0, 7, t + 20, cd, a);
        tw_ev(&w, "cpu_op", "aten::to", 1, 1, t + 20, 400, NULL);
        tw_launch(&w, 1, queued ? t + 16 : t + 425, "gemv_kernel", kstart, 500, 64);
        t += step_dur + 300;
    }
    fputs("]}\n", w.f);
    fclose(w.f);
}

/* Six steps, each a 4 MB host-to-device copy (100 us) while the host
 * works 250 us before launching the kernel that reads it (500 us), then
 * a blocking 1 MB device-to-host copy of the result (60 us). In step 3 a
 * degraded link slows both: 400 us and 240 us. The kernel, launched late,
 * waited 140 us for the first; the step's end waited 180 us for the
 * second. */
static void write_pcie_trace(const char *path)
{
    tw w = {fopen(path, "w"), 0, 0, 0};
    CHECK(w.f != NULL);
    fputs("{\"traceEvents\": [", w.f);
    double t = 3000000;
    for (int k = 0; k < 6; k++) {
        double up = k == 3 ? 400 : 100, down = k == 3 ? 240 : 60;
        double kstart = t + 20 + up > t + 285 ? t + 20 + up : t + 285, kend = kstart + 500;
        char nm[32], a[160];
        snprintf(nm, sizeof nm, "ProfilerStep#%d", k);
        tw_ev(&w, "user_annotation", nm, 1, 1, t, kend + down + 20 - t, NULL);
        int c = ++w.corr;
        snprintf(a, sizeof a, "\"correlation\": %d", c);
        tw_ev(&w, "cuda_runtime", "cudaMemcpyAsync", 1, 1, t + 10, 5, a);
        snprintf(a, sizeof a, "\"correlation\": %d, \"device\": 0, \"stream\": 7, \"bytes\": 4194304", c);
        tw_ev(&w, "gpu_memcpy", "Memcpy HtoD (Pinned -> Device)", 0, 7, t + 20, up, a);
        tw_ev(&w, "cpu_op", "aten::to", 1, 1, t + 20, 250, NULL);
        tw_launch(&w, 1, t + 275, "gemv_kernel", kstart, 500, 64);
        c = ++w.corr;
        snprintf(a, sizeof a, "\"correlation\": %d", c);
        tw_ev(&w, "cuda_runtime", "cudaMemcpyAsync", 1, 1, t + 285, kend + down - (t + 285), a);
        snprintf(a, sizeof a, "\"correlation\": %d, \"device\": 0, \"stream\": 7, \"bytes\": 1048576", c);
        tw_ev(&w, "gpu_memcpy", "Memcpy DtoH (Device -> Pinned)", 0, 7, kend, down, a);
        t = kend + down + 300;
    }
    fputs("]}\n", w.f);
    fclose(w.f);
}

/* (k) copies of both directions slowed on one rank in one step are one
 * degraded link, named after the copy with the most time (which lost the
 * most), costing what the step lost to both: the gemv waited 140 us for the
 * slow upload, and the step's end 180 us for the slow download (the step
 * took 315 us longer; the costliest copy alone said 180) */
static void test_modes_pcie_both_directions(void)
{
    char path[] = "/tmp/teller_pcie_XXXXXX.json";
    int fd = mkstemps(path, 5);
    CHECK(fd >= 0);
    close(fd);
    write_pcie_trace(path);
    teller_store *st = NULL;
    teller_diagnosis *d = diagnose_file(path, &st);
    CHECK_EQ_INT(d ? d->n : 0, 6);
    CHECK_EQ_INT(flagged(d), 1);
    if (d && d->n == 6) {
        CHECK(d->steps[3].pred.abnormal);
        CHECK(!strcmp(d->steps[3].fault, "pcie_degradation"));
        CHECK(d->steps[3].pred.ncand > 0 && !strcmp(d->steps[3].pred.cand[0].op, "Memcpy HtoD (Pinned -> Device)"));
        CHECK(d->steps[3].excess_ns > 300000 && d->steps[3].excess_ns < 340000); /* 140 + 180 us */
    }
    teller_diagnosis_free(d);
    teller_store_free(st);
    unlink(path);
}

/* (g) a slow copy costs the step only what work queued behind it waited
 * (290 us here: the kernel waited from its launch to the copy's end) */
static void test_modes_copy_cost(void)
{
    char path[] = "/tmp/teller_copy_XXXXXX.json";
    int fd = mkstemps(path, 5);
    CHECK(fd >= 0);
    close(fd);
    for (int queued = 0; queued <= 1; queued++) {
        write_copy_trace(path, queued);
        teller_store *st = NULL;
        teller_diagnosis *d = diagnose_file(path, &st);
        CHECK_EQ_INT(d ? d->n : 0, 6);
        /* the step's annotation runs on to its CPU work's end either way:
         * what the copy cost is a candidate, the step no longer */
        CHECK_EQ_INT(flagged(d), 0);
        CHECK_EQ_INT(!strcmp(top_kind(d, 3), "pcie_degradation"), queued);
        if (queued)
            CHECK(top_cost(d, 3) > 280000 && top_cost(d, 3) < 300000);
        teller_diagnosis_free(d);
        teller_store_free(st);
    }
    unlink(path);
}

/* Six training steps of one rank, four GEMMs each (5 ms, or 15 ms in
 * regress_step). With ahead, the host issues a step every 18 ms and never
 * waits: the GPU, 20 ms a step, falls further behind and each step's
 * kernels queue behind the last step's (a window runs from the step's
 * annotation to its last kernel's end). Without, each step ends with a
 * synchronize that waits for its kernels. */
static void write_ahead_trace(const char *path, int ahead, int regress_step)
{
    tw w = {fopen(path, "w"), 0, 0, 0};
    CHECK(w.f != NULL);
    fputs("{\"traceEvents\": [", w.f);
    double t = 5000000, g = t; /* the host's step start; when the GPU is free */
    for (int k = 0; k < 6; k++) {
        double slow = k == regress_step ? 3.0 : 1.0, h = t + 10;
        char nm[32];
        snprintf(nm, sizeof nm, "ProfilerStep#%d", 200 + k);
        for (int q = 0; q < 4; q++, h += 10) {
            double k0 = g > h + 10 ? g : h + 10;
            tw_launch(&w, 1, h, "sm80_xmma_gemm_f16f16_128x256", k0, 5000 * slow, 108);
            g = k0 + 5000 * slow;
        }
        double end = ahead ? t + 18000 : g + 30;
        if (!ahead)
            tw_ev(&w, "cuda_runtime", "cudaDeviceSynchronize", 1, 1, h, g + 20 - h, NULL);
        tw_ev(&w, "user_annotation", nm, 1, 1, t, end - t, NULL);
        t = end + 100;
    }
    fputs("]}\n", w.f);
    fclose(w.f);
}

/* (h) a slow step's late GPU work makes the next steps end late, not slow */
static void test_modes_carried_steps(void)
{
    char path[] = "/tmp/teller_ahead_XXXXXX.json";
    int fd = mkstemps(path, 5);
    CHECK(fd >= 0);
    close(fd);
    /* ahead and healthy (each step later than the last as the GPU falls
     * behind), ahead with step 2 slow, waiting with step 2 slow: only step
     * 2 took longer, by the 40 ms its four GEMMs ran over; the steps after
     * it end 40 ms later but take no longer (their work queued behind step
     * 2's: what a step adds to the run starts where the one before ended) */
    const int runs[][2] = {{1, -1}, {1, 2}, {0, 2}};
    for (int r = 0; r < 3; r++) {
        write_ahead_trace(path, runs[r][0], runs[r][1]);
        teller_store *st = NULL;
        teller_diagnosis *d = diagnose_file(path, &st);
        CHECK_EQ_INT(d ? d->n : 0, 6);
        CHECK_EQ_INT(flagged(d), runs[r][1] >= 0);
        if (runs[r][1] >= 0 && d && d->n == 6) {
            const teller_diag_step *s = &d->steps[2];
            CHECK(s->pred.abnormal && !strcmp(s->fault, "kernel_regression"));
            CHECK(s->pred.ncand > 0 && !strcmp(s->pred.cand[0].op, "sm80_xmma_gemm_f16f16_128x256"));
            CHECK(s->excess_ns > 39000000 && s->excess_ns < 41000000);
        }
        teller_diagnosis_free(d);
        teller_store_free(st);
    }
    unlink(path);
}

/* One step of one rank: a copy launched at the step's start, twenty small
 * host ops with a 2 ms stall before the eleventh, then ten GEMMs launched
 * on the copy's stream. With held the copy starts 9 ms after its launch
 * on a GPU the trace shows idle (held by work the trace does not show, as
 * on TraceLens's ROCm vLLM graph trace, whose first copy starts 7.8 ms
 * after its launch), and the GEMMs queue behind it: the stall delays
 * nothing. Without, the copy runs at once and the GEMMs wait for their
 * late launches: the stall delays the step's end by its length. */
static void write_held_device_trace(const char *path, int held)
{
    tw w = {fopen(path, "w"), 0, 0, 0};
    CHECK(w.f != NULL);
    fputs("{\"traceEvents\": [", w.f);
    double t = 5000000, h = t + 10, g;
    char a[160];
    int c = ++w.corr;
    tw_ev(&w, "cpu_op", "aten::copy_", 1, 1, h, 20, NULL);
    snprintf(a, sizeof a, "\"correlation\": %d", c);
    tw_ev(&w, "cuda_runtime", "cudaMemcpyAsync", 1, 1, h + 5, 5, a);
    g = held ? t + 9000 : h + 15;
    snprintf(a, sizeof a, "\"correlation\": %d, \"device\": 0, \"stream\": 7, \"bytes\": 65536", c);
    tw_ev(&w, "gpu_memcpy", "Memcpy HtoD (Host -> Device)", 0, 7, g, 50, a);
    g += 50;
    h += 30;
    for (int j = 0; j < 20; j++, h += 30) {
        if (j == 10)
            h += 2000;
        tw_ev(&w, "cpu_op", "aten::slice", 1, 1, h, 20, NULL);
    }
    for (int j = 0; j < 10; j++, h += 30) {
        double k0 = g > h + 15 ? g : h + 15;
        tw_ev(&w, "cpu_op", "aten::mm", 1, 1, h, 20, NULL);
        tw_launch(&w, 1, h + 5, "sm80_xmma_gemm_f16f16_128x256", k0, 100, 108);
        g = k0 + 100;
    }
    tw_ev(&w, "user_annotation", "ProfilerStep#1", 1, 1, t, h - t, NULL);
    fputs("]}\n", w.f);
    fclose(w.f);
}

/* (i) a host stall costs the GPU's idle time only where the GPU waited for
 * work the host had not launched: 2 ms of a one-step trace, flagged; held,
 * nothing, and no finding */
static void test_modes_stall_held_device(void)
{
    char path[] = "/tmp/teller_held_XXXXXX.json";
    int fd = mkstemps(path, 5);
    CHECK(fd >= 0);
    close(fd);
    for (int held = 0; held <= 1; held++) {
        write_held_device_trace(path, held);
        teller_store *st = NULL;
        teller_diagnosis *d = diagnose_file(path, &st);
        CHECK_EQ_INT(d ? d->n : 0, 1);
        CHECK_EQ_INT(flagged(d), !held);
        CHECK_EQ_INT(!strcmp(top_kind(d, 0), "cpu_contention"), !held);
        teller_diagnosis_free(d);
        teller_store_free(st);
    }
    unlink(path);
}

/* Six training steps of one rank whose host runs ahead: it issues a step
 * every 5 ms, the GPU takes 20.4 ms (four 100 us elementwise kernels, then
 * four 5 ms GEMMs), so each step's kernels queue further behind the last
 * step's. With slow, step 0's launch calls take 2 ms each instead of 5 us:
 * the GPU waits for the elementwise kernels' launches (it has nothing
 * else to run yet), not for the GEMMs' (it still runs the one before), so
 * step 0's GPU work ends ~8 ms late while the host starts step 1 ~16 ms
 * late, and every later step is shorter than without the fault. */
static void write_ahead_launch_trace(const char *path, int slow)
{
    tw w = {fopen(path, "w"), 0, 0, 0};
    CHECK(w.f != NULL);
    fputs("{\"traceEvents\": [", w.f);
    double t = 5000000, g = t; /* the host's step start; when the GPU is free */
    for (int k = 0; k < 6; k++) {
        w.launch_us = slow && k == 0 ? 2000 : 5;
        double h = t + 10;
        for (int q = 0; q < 8; q++, h += w.launch_us + 5) {
            double kd = q < 4 ? 100 : 5000, k0 = g > h + w.launch_us + 5 ? g : h + w.launch_us + 5;
            tw_launch(&w, 1, h, q < 4 ? "vectorized_elementwise_kernel" : "sm80_xmma_gemm_f16f16_128x256", k0, kd,
                      q < 4 ? 64 : 108);
            g = k0 + kd;
        }
        double end = h + 10 > t + 5000 ? h + 10 : t + 5000;
        char nm[32];
        snprintf(nm, sizeof nm, "ProfilerStep#%d", 300 + k);
        tw_ev(&w, "user_annotation", nm, 1, 1, t, end - t, NULL);
        t = end + 100;
    }
    fputs("]}\n", w.f);
    fclose(w.f);
}

/* (h) a fault that held the host back longer than the GPU carries nothing
 * into the steps after it: they started later by more than their GPU work
 * ended later */
static void test_modes_carried_host_delay(void)
{
    char path[] = "/tmp/teller_ahead_XXXXXX.json";
    int fd = mkstemps(path, 5);
    CHECK(fd >= 0);
    close(fd);
    teller_diagnosis *d[2] = {NULL, NULL};
    teller_store *st[2] = {NULL, NULL};
    for (int slow = 0; slow <= 1; slow++) {
        write_ahead_launch_trace(path, slow);
        d[slow] = diagnose_file(path, &st[slow]);
        CHECK_EQ_INT(d[slow] ? d[slow]->n : 0, 6);
    }
    CHECK_EQ_INT(flagged(d[0]), 0);
    if (d[1] && d[1]->n == 6) {
        CHECK(d[1]->steps[0].pred.abnormal && !strcmp(d[1]->steps[0].fault, "launch_latency"));
        for (uint32_t k = 1; d[0] && d[0]->n == 6 && k < 6; k++) {
            /* the physics the test is about: each later step's window (its
             * annotation to its last kernel) is shorter than without the fault */
            CHECK(teller_store_steps(st[1])[k].end_ns - teller_store_steps(st[1])[k].start_ns <
                  teller_store_steps(st[0])[k].end_ns - teller_store_steps(st[0])[k].start_ns);
            CHECK(!d[1]->steps[k].pred.abnormal);
        }
    }
    for (int slow = 0; slow <= 1; slow++) {
        teller_diagnosis_free(d[slow]);
        teller_store_free(st[slow]);
    }
    unlink(path);
}

/* Rank r of two data-parallel replicas, each a run of its own (no
 * collective links them): per step a GEMM called four times whose grid
 * follows the batch, new every step, so no launch configuration has a
 * usual time. In step 2 rank 0's batch is the larger and its GEMMs take
 * twice rank 1's. */
static void write_replica_trace(const char *path, int rank)
{
    tw w = {fopen(path, "w"), 0, 0, 0};
    CHECK(w.f != NULL);
    fprintf(w.f, "{\"schemaVersion\": 1, \"distributedInfo\": {\"rank\": %d, \"world_size\": 2}, \"traceEvents\": [", rank);
    double t = 1000000;
    for (int k = 0; k < 4; k++) {
        double d = k == 2 && rank == 0 ? 800 : 400;
        char nm[32];
        snprintf(nm, sizeof nm, "ProfilerStep#%d", 20 + k);
        tw_ev(&w, "user_annotation", nm, 1, 1, t, 4 * d + 200, NULL);
        for (int q = 0; q < 4; q++)
            tw_launch(&w, 1, t + 10 + 10 * q, "sm90_xmma_gemm_bf16_128x128", t + 50 + d * q, d, 100 + 10 * k + rank);
        t += 4000;
    }
    fputs("]}\n", w.f);
    fclose(w.f);
}

/* Kernels of a rank without tensor-parallel peers and without a usual
 * time are compared with the other stages of its pipeline (ranks linked
 * to it by a send or recv), never with a rank no collective links it to:
 * a data-parallel replica runs another batch, and across a fleet of them
 * the fastest would be the yardstick of every rank (as before). */
static void test_modes_replicas_not_compared(void)
{
    char p0[] = "/tmp/teller_replica0_XXXXXX.json", p1[] = "/tmp/teller_replica1_XXXXXX.json";
    int f0 = mkstemps(p0, 5), f1 = mkstemps(p1, 5);
    CHECK(f0 >= 0 && f1 >= 0);
    close(f0);
    close(f1);
    write_replica_trace(p0, 0);
    write_replica_trace(p1, 1);
    const char *files[] = {p0, p1};
    teller_store *st = teller_store_create();
    teller_load_opts o = teller_load_defaults();
    o.jobs = 1;
    teller_error err;
    teller_error_clear(&err);
    CHECK_EQ_INT(teller_load(st, files, 2, &o, &err), TELLER_OK);
    CHECK_EQ_INT(teller_store_num_sources(st), 2);
    teller_diagnosis *d = NULL;
    CHECK_EQ_INT(teller_diagnose(st, NULL, &d, &err), TELLER_OK);
    CHECK_EQ_INT(d ? d->n : 0, 4);
    CHECK_EQ_INT(flagged(d), 0); /* step 2 was a kernel_regression of rank 0 against rank 1 */
    teller_diagnosis_free(d);
    teller_store_free(st);
    unlink(p0);
    unlink(p1);
}


/* Six training iterations of one rank: per step an elementwise kernel and
 * four GEMMs launched at once, each step annotation ending with its last
 * kernel. dur[k]: each GEMM's time in step k (us); launch[k]: each launch
 * call's time in step k; open: nothing runs for that long at the start of
 * the first step (the profiler starting); tail: nothing runs for that long
 * at the end of the last step (the profiler stopping, a host gone quiet). */
static void write_iter_trace(const char *path, const double *gemm, const double *launch, double open, double tail)
{
    tw w = {fopen(path, "w"), 0, 0, 0};
    CHECK(w.f != NULL);
    fputs("{\"schemaVersion\": 1, \"traceEvents\": [", w.f);
    double t = 2000000;
    for (int k = 0; k < 6; k++) {
        w.launch_us = launch[k];
        double h = t + 10 + (k ? 0 : open), g = h + 20;
        for (int q = 0; q < 5; q++, h += w.launch_us + 5) {
            double k0 = g > h + w.launch_us ? g : h + w.launch_us, kd = q ? gemm[k] : 30;
            tw_launch(&w, 1, h, q ? "sm90_xmma_gemm_bf16_128x128" : "elementwise_kernel", k0, kd, q ? 132 : 64);
            g = k0 + kd;
        }
        double end = g + 20 + (k == 5 ? tail : 0);
        char nm[32];
        snprintf(nm, sizeof nm, "ProfilerStep#%d", 50 + k);
        tw_ev(&w, "user_annotation", nm, 1, 1, t, end - t, NULL);
        t = end + 100;
    }
    fputs("]}\n", w.f);
    fclose(w.f);
}

/* (l) the step is the unit of alarm: slow launch calls in the fastest
 * step of the run (it runs a smaller batch) are a candidate, not an alarm;
 * nor in a step within how far the run's steps stray anyway; in a step
 * slower than the others by far more than that, they flag it. */
static void test_modes_step_alarm(void)
{
    char path[] = "/tmp/teller_alarm_XXXXXX.json";
    int fd = mkstemps(path, 5);
    CHECK(fd >= 0);
    close(fd);
    const double fast[6] = {2000, 5000, 5050, 4950, 5020, 4980}, lfast[6] = {300, 5, 5, 5, 5, 5};
    const double even[6] = {5000, 4800, 5200, 4900, 5100, 5000}, leven[6] = {5, 5, 5, 40, 5, 5};
    const double slow[6] = {5000, 5050, 4950, 5020, 4980, 5000}, lslow[6] = {5, 5, 5, 2000, 5, 5};
    const double *runs[3][2] = {{fast, lfast}, {even, leven}, {slow, lslow}};
    for (int r = 0; r < 3; r++) {
        write_iter_trace(path, runs[r][0], runs[r][1], 0, 0);
        teller_store *st = NULL;
        teller_diagnosis *d = diagnose_file(path, &st);
        CHECK_EQ_INT(d ? d->n : 0, 6);
        uint32_t k = r == 0 ? 0 : 3;
        CHECK(!strcmp(top_kind(d, k), "launch_latency")); /* found every time */
        CHECK_EQ_INT(flagged(d), r == 2);
        if (d && d->n == 6) {
            CHECK_EQ_INT(d->steps[k].pred.abnormal, r == 2);
            CHECK_EQ_INT(d->steps[k].slow, r == 2);
            CHECK(d->steps[k].usual_ns > 0);
            if (r == 0) /* the fastest step is no slower than usual */
                CHECK(d->steps[k].excess_ns == 0 && d->steps[k].dur_ns < d->steps[k].usual_ns);
        }
        teller_diagnosis_free(d);
        teller_store_free(st);
    }
    unlink(path);
}

/* (m) no slow step left silent: the last of six steps ends 74 ms after its
 * last kernel with nothing running (the profiler stopping); no finding
 * explains it, and it is said, with the quiet stretch at its end as a fact
 * and that it is the recording's last step. */
static void test_modes_slow_step_said(void)
{
    char path[] = "/tmp/teller_quiet_XXXXXX.json";
    int fd = mkstemps(path, 5);
    CHECK(fd >= 0);
    close(fd);
    const double gemm[6] = {5000, 5050, 4950, 5020, 4980, 5000}, launch[6] = {5, 5, 5, 5, 5, 5};
    write_iter_trace(path, gemm, launch, 0, 74000);
    teller_store *st = NULL;
    teller_diagnosis *d = diagnose_file(path, &st);
    CHECK_EQ_INT(d ? d->n : 0, 6);
    CHECK_EQ_INT(flagged(d), 0);
    if (d && d->n == 6) {
        const teller_diag_step *s = &d->steps[5];
        CHECK(s->slow && !s->pred.abnormal);
        CHECK(strstr(s->pred.explanation, "no finding explains it") != NULL);
        CHECK(strstr(s->pred.explanation, "74.020 ms at its end") != NULL); /* from its last kernel */
        CHECK(strstr(s->pred.explanation, "the recording's last step") != NULL);
        CHECK(strstr(s->pred.explanation, "compute kernels") == NULL); /* they took their usual time */
        int quiet = 0;
        for (uint32_t i = 0; i < s->nfacts; i++)
            quiet |= d->facts[s->first_fact + i].kind == TELLER_FACT_QUIET && d->facts[s->first_fact + i].value == 74.02e6;
        CHECK(quiet);
        for (uint32_t k = 0; k < 5; k++)
            CHECK(!d->steps[k].slow && !d->steps[k].pred.explanation[0]);
        teller_check_report r = {0};
        teller_error err;
        CHECK_EQ_INT(teller_check_diagnosis(st, d, &r, &err), TELLER_OK);
        CHECK(r.facts > 0 && r.mismatches == 0);
    }
    teller_diagnosis_free(d);
    teller_store_free(st);
    unlink(path);
}

/* Against a reference, a recording's first step is judged by the
 * reference's first step when that one was longer than the reference's
 * usual: both hold what starting the profiler cost. In both runs the host
 * is quiet for the first 12 ms of the first step; the run's GEMMs take
 * 5.6 ms where the reference's took 5 ms, but in its first step. Its
 * first step is not slow; the others are. */
static void test_modes_reference_first_step(void)
{
    char rpath[] = "/tmp/teller_ref_first_XXXXXX.json", path[] = "/tmp/teller_run_first_XXXXXX.json";
    int fd = mkstemps(rpath, 5), fd2 = mkstemps(path, 5);
    CHECK(fd >= 0 && fd2 >= 0);
    close(fd);
    close(fd2);
    const double ref[6] = {5000, 5000, 5010, 4990, 5000, 5005}, run[6] = {5000, 5600, 5610, 5590, 5600, 5605},
                 launch[6] = {5, 5, 5, 5, 5, 5};
    write_iter_trace(rpath, ref, launch, 12000, 0);
    write_iter_trace(path, run, launch, 12000, 0);
    teller_store *rs = NULL, *st = NULL;
    teller_diagnosis *rd = diagnose_file(rpath, &rs);
    teller_diagnosis_free(rd);
    teller_error err;
    teller_error_clear(&err);
    teller_diag_reference *ref_made = NULL;
    CHECK_EQ_INT(teller_diag_reference_make(rs, NULL, &ref_made, &err), TELLER_OK);
    teller_diagnosis_free(diagnose_file(path, &st));
    teller_diag_opts o = teller_diag_defaults();
    o.reference = ref_made;
    teller_diagnosis *d = NULL;
    CHECK_EQ_INT(teller_diagnose(st, &o, &d, &err), TELLER_OK);
    CHECK_EQ_INT(d ? d->n : 0, 6);
    if (d && d->n == 6) {
        CHECK(d->steps[0].by_reference && !d->steps[0].slow && !d->steps[0].pred.abnormal);
        CHECK(d->steps[0].usual_ns == d->steps[0].dur_ns);
        for (uint32_t k = 1; k < 6; k++)
            CHECK(d->steps[k].by_reference && d->steps[k].slow);
    }
    teller_diagnosis_free(d);
    teller_diag_reference_free(ref_made);
    teller_store_free(st);
    teller_store_free(rs);
    unlink(rpath);
    unlink(path);
}

const test_case diagnose_mode_tests[] = {
    {"diagnose modes: the fastest step and a step within its run's spread are not slow; a slow one is flagged",
     test_modes_step_alarm},
    {"diagnose modes: a slow step no finding explains is said, with where nothing ran and that it is the last",
     test_modes_slow_step_said},
    {"diagnose modes: against a reference, the first step is judged by the reference's first", test_modes_reference_first_step},
    {"diagnose modes: an unreadable log (missing, a directory) fails naming the file", test_modes_unreadable_log},
    {"diagnose modes: old-profiler training steps; regression found, blocked copy and first launch not blamed",
     test_modes_training_trace},
    {"diagnose modes: one-step host stall found; waiting on another thread is not a stall, its stall is", test_modes_host_gaps},
    {"diagnose modes: a gap before the same op every step is that op's normal; a stall beside it is found",
     test_modes_regular_gap},
    {"diagnose modes: a stall is named after the op whose wait grew the most over its usual", test_modes_stall_over_usual_wait},
    {"diagnose modes: a stall while the GPU runs its queue costs where the GPU later waits, nothing when absorbed",
     test_modes_queued_stall},
    {"diagnose modes: one-step launches judged against what a launch costs anywhere", test_modes_one_step_launches},
    {"diagnose modes: a slow copy costs only what queued behind it waited", test_modes_copy_cost},
    {"diagnose modes: copies slowed both ways on a rank are one finding, named after the heavier", test_modes_pcie_both_directions},
    {"diagnose modes: steps queued behind a slow step's GPU work carry its root", test_modes_carried_steps},
    {"diagnose modes: a fault that delayed the host more than the GPU carries nothing into later steps",
     test_modes_carried_host_delay},
    {"diagnose modes: a host stall while the GPU waits for work launched before it costs nothing",
     test_modes_stall_held_device},
    {"diagnose modes: a rank without peers is not compared with a replica no collective links it to",
     test_modes_replicas_not_compared},
    {NULL, NULL},
};
