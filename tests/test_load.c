/*
 * test_load.c - the shared load path (include/teller/load.h): which names
 * become files, which inputs are refused as not one run (real traces from
 * ../shared/data/traces and simulated cases), and that reading on several
 * threads builds the same store, and the same predictions, as one.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "store/store_internal.h"
#include "teller/diagnose.h"
#include "teller/load.h"
#include "teller/predict.h"
#include "teller/sim.h"

static void copy_file(const char *from, const char *to)
{
    FILE *a = fopen(from, "rb"), *b = fopen(to, "wb");
    CHECK(a && b);
    char buf[65536];
    size_t n;
    while (a && b && (n = fread(buf, 1, sizeof buf, a)) > 0)
        CHECK(fwrite(buf, 1, n, b) == n);
    if (a)
        fclose(a);
    if (b)
        fclose(b);
}

/* Loads the files with `jobs` threads (force as given); returns the status
 * and the store in *out (NULL on failure). */
static teller_status load(const char *const *files, size_t n, int jobs, int force, teller_store **out,
                          teller_error *err)
{
    teller_store *st = teller_store_create();
    teller_load_opts o = teller_load_defaults();
    o.jobs = jobs;
    o.force = force;
    teller_error_clear(err);
    teller_status s = teller_load(st, files, n, &o, err);
    if (s != TELLER_OK) {
        teller_store_free(st);
        st = NULL;
    }
    *out = st;
    return s;
}

static int has_warning(const teller_store *st, const char *needle)
{
    for (size_t i = 0; i < teller_store_num_warning_msgs(st); i++)
        if (strstr(teller_store_warning_msg(st, i), needle))
            return 1;
    return 0;
}

/* A `teller run` directory keeps its traces under traces/ and none beside
 * them; listing the empty top level once sorted a NULL array (UBSan). */
static void test_run_directory_lists_traces_subdirectory(void)
{
    char dir[] = "/tmp/teller_load_run_XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char sub[600], a[700], b[700], note[700];
    snprintf(sub, sizeof sub, "%s/traces", dir);
    CHECK(mkdir(sub, 0777) == 0);
    snprintf(a, sizeof a, "%s/host-2.json.gz", sub);
    snprintf(b, sizeof b, "%s/host-1.json.gz", sub);
    copy_file(shared_path("hta/trace_filter/sampled_rank-0.json.gz"), a);
    copy_file(shared_path("hta/trace_filter/sampled_rank-1.json.gz"), b);
    snprintf(note, sizeof note, "%s/predictions.json", dir); /* beside the traces, not one */
    FILE *f = fopen(note, "w");
    CHECK(f != NULL);
    if (f) {
        fputs("{\"steps\": []}\n", f);
        fclose(f);
    }
    const char *names[] = {dir};
    char **files = NULL;
    size_t n = 0;
    teller_error err;
    teller_error_clear(&err);
    CHECK_EQ_INT(teller_load_expand(names, 1, &files, &n, &err), TELLER_OK);
    CHECK_EQ_INT(n, 2);
    if (n == 2) {
        CHECK(!strcmp(files[0], b)); /* sorted by name */
        CHECK(!strcmp(files[1], a));
    }
    teller_load_files_free(files, n);
    /* a directory with nothing to read is an error naming it */
    CHECK_EQ_INT(teller_load_expand((const char *const[]){sub}, 0, &files, &n, &err), TELLER_ERR_ARG);
    rm_rf(sub);
    CHECK_EQ_INT(teller_load_expand(names, 1, &files, &n, &err), TELLER_ERR_ARG);
    CHECK(!strcmp(err.file, dir));
    CHECK(strstr(err.msg, "no trace files") != NULL);
    /* and names the .json it passed over as not a trace */
    CHECK(strstr(err.msg, "1 .json file is not a trace") && strstr(err.msg, "predictions.json"));
    rm_rf(dir);
}

/* A GPT-OSS trace on B200 and a Qwen trace on H100, months apart, share no
 * collective and no moment: refused, naming both; --force reads them. */
static void test_unrelated_traces_are_refused(void)
{
    char b200[4096], h100[4096];
    snprintf(b200, sizeof b200, "%s", shared_path("tracelens/b200/eager_trace.json.gz"));
    snprintf(h100, sizeof h100, "%s", shared_path("tracelens/h100/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz"));
    const char *files[] = {b200, h100};
    teller_store *st;
    teller_error err;
    for (int jobs = 1; jobs <= 2; jobs++) {
        CHECK_EQ_INT(load(files, 2, jobs, 0, &st, &err), TELLER_ERR_ARG);
        CHECK(!strcmp(err.file, b200));
        CHECK(strstr(err.msg, h100) != NULL);
        CHECK(strstr(err.msg, "share no collective and do not overlap in time") != NULL);
        CHECK(strstr(err.msg, "2025-") != NULL && strstr(err.msg, "2026-") != NULL);
    }
    CHECK_EQ_INT(load(files, 2, 2, 1, &st, &err), TELLER_OK);
    CHECK(st && teller_store_num_sources(st) == 2);
    teller_store_free(st);
}

/* Two ranks of one training job (HTA's sampled traces) are one run; so are
 * the two processes of one Nsight Systems export, while two exports that
 * each hold ranks 0 and 1 are not. */
static void test_ranks_of_one_job_load_together(void)
{
    char r0[4096], r1[4096], before[4096], after[4096];
    snprintf(r0, sizeof r0, "%s", shared_path("hta/trace_filter/sampled_rank-0.json.gz"));
    snprintf(r1, sizeof r1, "%s", shared_path("hta/trace_filter/sampled_rank-1.json.gz"));
    snprintf(before, sizeof before, "%s", shared_path("nsys-ai/mfu_2gpu_before.sqlite"));
    snprintf(after, sizeof after, "%s", shared_path("nsys-ai/mfu_2gpu_after.sqlite"));
    teller_store *st;
    teller_error err;
    CHECK_EQ_INT(load((const char *const[]){r0, r1}, 2, 2, 0, &st, &err), TELLER_OK);
    if (st) {
        CHECK_EQ_INT(teller_store_num_sources(st), 2);
        CHECK_EQ_INT(teller_store_source_c(st, 0)->rank, 0);
        CHECK_EQ_INT(teller_store_source_c(st, 1)->rank, 1);
        teller_store_free(st);
    }
    CHECK_EQ_INT(load((const char *const[]){before}, 1, 2, 0, &st, &err), TELLER_OK);
    teller_store_free(st);
    CHECK_EQ_INT(load((const char *const[]){before, after}, 2, 2, 0, &st, &err), TELLER_ERR_ARG);
    CHECK(strstr(err.msg, "is also in") != NULL && strstr(err.msg, after) != NULL);
}

/* The same file named twice (here by two spellings of its path) is read
 * once, with a warning; it is not a second rank with an empty step. */
static void test_same_file_twice_is_read_once(void)
{
    char a[4096], b[4200];
    snprintf(a, sizeof a, "%s", shared_path("hta/trace_filter/sampled_rank-1.json.gz"));
    const char *slash = strrchr(a, '/');
    snprintf(b, sizeof b, "%.*s/./%s", (int)(slash - a), a, slash + 1);
    teller_store *one, *two;
    teller_error err;
    CHECK_EQ_INT(load((const char *const[]){a}, 1, 1, 0, &one, &err), TELLER_OK);
    for (int jobs = 1; jobs <= 2; jobs++) {
        CHECK_EQ_INT(load((const char *const[]){a, b}, 2, jobs, 0, &two, &err), TELLER_OK);
        if (!one || !two)
            continue;
        CHECK_EQ_INT(teller_store_num_sources(two), 1);
        CHECK_EQ_INT(teller_store_events(two)->n, teller_store_events(one)->n);
        CHECK_EQ_INT(teller_store_step_count(two), teller_store_step_count(one));
        CHECK(has_warning(two, "read once"));
        CHECK(!has_warning(one, "read once"));
        teller_store_free(two);
    }
    teller_store_free(one);
}

/* A simulated case loads as one run; the case plus a copy of its own rank 0
 * file (another file holding rank 0) does not. */
static void test_case_plus_its_rank0_again_is_refused(void)
{
    char dir[] = "/tmp/teller_load_case_XXXXXX";
    sim_faulty(dir, 2, 2, 6, 77, 0);
    char copy[700], orig[700];
    snprintf(orig, sizeof orig, "%s/rank0.trace.json.gz", dir);
    snprintf(copy, sizeof copy, "%s/extra", dir);
    CHECK(mkdir(copy, 0777) == 0);
    snprintf(copy, sizeof copy, "%s/extra/rank0.trace.json.gz", dir);
    copy_file(orig, copy);
    char **files = NULL;
    size_t n = 0;
    teller_error err;
    CHECK_EQ_INT(teller_load_expand((const char *const[]){dir}, 1, &files, &n, &err), TELLER_OK);
    CHECK_EQ_INT(n, 4);
    teller_store *st;
    CHECK_EQ_INT(load((const char *const *)files, n, 2, 0, &st, &err), TELLER_OK);
    teller_store_free(st);
    char **more = realloc(files, (n + 1) * sizeof *files);
    CHECK(more != NULL);
    if (more) {
        files = more;
        files[n] = copy;
        CHECK_EQ_INT(load((const char *const *)files, n + 1, 2, 0, &st, &err), TELLER_ERR_ARG);
        CHECK(!strcmp(err.file, orig));
        CHECK(strstr(err.msg, "rank 0 is also in") != NULL && strstr(err.msg, copy) != NULL);
        files[n] = NULL;
    }
    teller_load_files_free(files, n);
    rm_rf(dir);
}

/* With several threads, the first unreadable file in the order given is
 * the error, as with one. */
static void test_first_bad_file_in_order_is_the_error(void)
{
    char dir[] = "/tmp/teller_load_bad_XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char bad1[700], bad2[700], good[4096];
    snprintf(bad1, sizeof bad1, "%s/a.json", dir);
    snprintf(bad2, sizeof bad2, "%s/b.json", dir);
    snprintf(good, sizeof good, "%s", shared_path("hta/trace_filter/sampled_rank-0.json.gz"));
    FILE *f = fopen(bad1, "w");
    if (f) {
        fputs("{\"traceEvents\": [ {\"ph\": ", f);
        fclose(f);
    }
    f = fopen(bad2, "w");
    if (f) {
        fputs("not json", f);
        fclose(f);
    }
    teller_store *st;
    teller_error err;
    for (int jobs = 1; jobs <= 3; jobs++) {
        CHECK(load((const char *const[]){good, bad1, bad2, good}, 4, jobs, 0, &st, &err) != TELLER_OK);
        CHECK(!strcmp(err.file, bad1));
    }
    rm_rf(dir);
}

/* Writes a small Kineto trace of one rank to dir/NAME: 3 steps, each with
 * one kernel (an NCCL all-reduce when nccl, else a GEMM), clocks moved by
 * off_us, on host `host` of a job of `world` ranks. Returns the path
 * (static buffer per slot). */
static const char *write_rank(const char *dir, int slot, int rank, int world, const char *host, int64_t off_us,
                              int nccl)
{
    static char paths[4][700];
    snprintf(paths[slot], sizeof paths[slot], "%s/r%d_%d.json", dir, slot, rank);
    FILE *f = fopen(paths[slot], "w");
    CHECK(f != NULL);
    if (!f)
        return paths[slot];
    fprintf(f, "{\"distributedInfo\": {\"rank\": %d, \"world_size\": %d}, \"host_name\": \"%s\", "
               "\"deviceProperties\": [{\"name\": \"H200\"}], \"traceEvents\": [", rank, world, host);
    for (int step = 0; step < 3; step++) {
        int64_t t0 = 1700000000000000 + step * 10000 + off_us;
        fprintf(f,
                "%s{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"ProfilerStep#%d\",\"pid\":1,\"tid\":1,"
                "\"ts\":%lld,\"dur\":1000},"
                "{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaLaunchKernel\",\"pid\":1,\"tid\":1,\"ts\":%lld,"
                "\"dur\":5,\"args\":{\"correlation\":%d}},"
                "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"%s\",\"pid\":0,\"tid\":7,\"ts\":%lld,\"dur\":100,"
                "\"args\":{\"correlation\":%d}}",
                step ? "," : "", step, (long long)t0, (long long)(t0 + 10), 100 + step,
                nccl ? "ncclDevKernel_AllReduce_Sum_bf16_RING_LL" : "sm90_xmma_gemm_bf16", (long long)(t0 + 50),
                100 + step);
    }
    fputs("]}\n", f);
    fclose(f);
    return paths[slot];
}

/* Two hosts whose clocks are an hour apart share collectives: one run (the
 * clock offset is estimated from them). The same traces with no collective
 * are two runs; so are traces that record different world sizes. */
static void test_shared_collectives_join_distant_clocks(void)
{
    char dir[] = "/tmp/teller_load_clock_XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    const int64_t hour_us = 3600ll * 1000000;
    teller_store *st;
    teller_error err;
    const char *a = write_rank(dir, 0, 0, 2, "node-a", 0, 1), *b = write_rank(dir, 1, 1, 2, "node-b", hour_us, 1);
    CHECK_EQ_INT(load((const char *const[]){a, b}, 2, 2, 0, &st, &err), TELLER_OK);
    if (st) {
        CHECK_EQ_INT(teller_store_num_nodes(st), 2);
        CHECK(teller_store_nodes(st)[1].offset_ns > 3599 * 1000000000ll);
        teller_store_free(st);
    }
    a = write_rank(dir, 0, 0, 2, "node-a", 0, 0);
    b = write_rank(dir, 1, 1, 2, "node-b", hour_us, 0);
    CHECK_EQ_INT(load((const char *const[]){a, b}, 2, 2, 0, &st, &err), TELLER_ERR_ARG);
    CHECK(!strcmp(err.file, a));
    CHECK(strstr(err.msg, b) && strstr(err.msg, "host node-b") && strstr(err.msg, "share no collective"));
    b = write_rank(dir, 1, 1, 2, "node-a", 0, 0); /* same host, same time: one run without collectives */
    CHECK_EQ_INT(load((const char *const[]){a, b}, 2, 2, 0, &st, &err), TELLER_OK);
    teller_store_free(st);
    b = write_rank(dir, 1, 1, 4, "node-a", 0, 1);
    CHECK_EQ_INT(load((const char *const[]){a, b}, 2, 1, 0, &st, &err), TELLER_ERR_ARG);
    CHECK(strstr(err.msg, "world size 2 here, 4 in") != NULL);
    rm_rf(dir);
}

/* The predictions and candidates JSON of a diagnosis on `jobs` threads,
 * with the case's logs, in a malloc'd string. */
static char *predictions(teller_store *st, const char *dir, int jobs)
{
    node_logs nl;
    const char **logs = node_logs_of(&nl, dir);
    teller_diag_opts dop = teller_diag_defaults();
    dop.logs = logs;
    dop.nlogs = 2;
    dop.jobs = jobs;
    return diagnosis_json(st, &dop);
}

/* Reading on 1, 2 or 3 threads builds the same store, column for column and
 * string id for string id, and the diagnosis on as many threads writes the
 * same predictions and candidates, byte for byte, as on one. */
static void test_jobs_give_identical_store_and_predictions(void)
{
    char dir[] = "/tmp/teller_load_jobs_XXXXXX";
    sim_faulty(dir, 2, 4, 12, 77, 0);
    char **files = NULL;
    size_t n = 0;
    teller_error err;
    CHECK_EQ_INT(teller_load_expand((const char *const[]){dir}, 1, &files, &n, &err), TELLER_OK);
    CHECK_EQ_INT(n, 8);
    teller_store *ref, *st;
    CHECK_EQ_INT(load((const char *const *)files, n, 1, 0, &ref, &err), TELLER_OK);
    for (int jobs = 2; jobs <= 3; jobs++) {
        CHECK_EQ_INT(load((const char *const *)files, n, jobs, 0, &st, &err), TELLER_OK);
        if (!ref || !st)
            continue;
        CHECK(same_store(ref, st)); /* before the diagnosis, which adds to a store */
        char *want = predictions(ref, dir, 1), *got = predictions(st, dir, jobs);
        CHECK(want && strlen(want) > 100 && strstr(want, "kernel_regression"));
        CHECK(want && got && !strcmp(want, got));
        free(want);
        free(got);
        teller_store_free(st);
        teller_store_free(ref);
        CHECK_EQ_INT(load((const char *const *)files, n, 1, 0, &ref, &err), TELLER_OK);
    }
    teller_store_free(ref);
    teller_load_files_free(files, n);
    rm_rf(dir);
}

/* The same on real multi-rank traces (two Kineto ranks, a 2-GPU Nsight
 * export, two HTA ranks of a comparison): 1 and 3 threads for loading and
 * the detectors, the same store and the same predictions and candidates. */
static void test_jobs_give_identical_diagnosis_on_real_traces(void)
{
    const char *const rel[] = {"hta/trace_filter", "nsys-ai/h100_2gpu_1s.sqlite", "hta/trace_compare/base"};
    for (size_t t = 0; t < sizeof rel / sizeof *rel; t++) {
        char **files = NULL;
        size_t n = 0;
        teller_error err;
        const char *name = shared_path(rel[t]);
        CHECK_EQ_INT(teller_load_expand(&name, 1, &files, &n, &err), TELLER_OK);
        teller_store *one = NULL, *three = NULL;
        CHECK_EQ_INT(load((const char *const *)files, n, 1, 0, &one, &err), TELLER_OK);
        CHECK_EQ_INT(load((const char *const *)files, n, 3, 0, &three, &err), TELLER_OK);
        if (one && three) {
            CHECK(same_store(one, three));
            teller_diag_opts o = teller_diag_defaults();
            o.jobs = 1;
            char *want = diagnosis_json(one, &o);
            o.jobs = 3;
            char *got = diagnosis_json(three, &o);
            CHECK(want && got && strlen(want) > 100 && !strcmp(want, got));
            free(want);
            free(got);
        }
        teller_store_free(one);
        teller_store_free(three);
        teller_load_files_free(files, n);
    }
}

/* The store API lets events of several sources come interleaved; the tree
 * builder groups them by source (stably) before its per-source passes, so
 * the trees are those of the same events appended source by source. */
static void test_interleaved_sources_build_same_trees(void)
{
    const char *p = shared_path("nsys-ai/mfu_2gpu_after.sqlite");
    teller_store *a = teller_store_create(), *b = teller_store_create();
    teller_error err;
    teller_error_clear(&err);
    CHECK_EQ_INT(teller_ingest_file(a, p, NULL, &err), TELLER_OK);
    CHECK_EQ_INT(teller_store_num_sources(a), 2);
    /* b: a's strings, sources and side tables, events taken alternately
     * from the two sources (each source's own order kept) */
    for (size_t id = 1; id < a->nstr; id++)
        CHECK_EQ_INT(teller_store_intern(b, a->strs[id].ptr, a->strs[id].len), id);
    for (size_t i = 0; i < a->nsources; i++) { /* as a reader leaves them before its events: the build sets them */
        teller_source so = a->sources[i];
        so.first_event = so.num_events = 0;
        teller_store_add_source(b, &so);
    }
    for (size_t i = 0; i < a->ncomms; i++)
        teller_store_add_comm(b, &a->comms[i]);
    for (size_t i = 0; i < a->nargs; i++)
        teller_store_add_args(b, &a->args[i]);
    const teller_events *ev = teller_store_events(a);
    size_t next[2] = {0, 0};
    while (next[0] < ev->n || next[1] < ev->n) {
        for (uint16_t s = 0; s < 2; s++) {
            while (next[s] < ev->n && ev->source[next[s]] != s)
                next[s]++;
            if (next[s] == ev->n)
                continue;
            size_t i = next[s]++;
            teller_event_row r = {ev->start_ns[i], ev->dur_ns[i], ev->name[i], ev->layer[i], ev->flags[i],
                                  ev->source[i], teller_event_pid(ev, i), teller_event_tid(ev, i), ev->corr[i], ev->args[i]};
            teller_store_add_event(b, &r);
        }
    }
    int interleaved = 0;
    for (size_t i = 1; i < b->ev.n; i++)
        interleaved |= b->ev.source[i] < b->ev.source[i - 1];
    CHECK(interleaved);
    teller_tree_opts o = teller_tree_defaults();
    CHECK_EQ_INT(teller_tree_build(a, &o, &err), TELLER_OK);
    o.jobs = 2;
    CHECK_EQ_INT(teller_tree_build(b, &o, &err), TELLER_OK);
    CHECK(same_store(a, b));
    teller_store_free(a);
    teller_store_free(b);
}

const test_case load_tests[] = {
    {"load: run directory lists its traces/ subdirectory", test_run_directory_lists_traces_subdirectory},
    {"load: unrelated traces are refused", test_unrelated_traces_are_refused},
    {"load: ranks of one job load together", test_ranks_of_one_job_load_together},
    {"load: same file twice is read once", test_same_file_twice_is_read_once},
    {"load: case plus its rank0 again is refused", test_case_plus_its_rank0_again_is_refused},
    {"load: first bad file in order is the error", test_first_bad_file_in_order_is_the_error},
    {"load: shared collectives join distant clocks", test_shared_collectives_join_distant_clocks},
    {"load: jobs give identical store, predictions and candidates", test_jobs_give_identical_store_and_predictions},
    {"load: jobs give identical diagnosis on real multi-rank traces", test_jobs_give_identical_diagnosis_on_real_traces},
    {"load: interleaved sources build the same trees", test_interleaved_sources_build_same_trees},
    {NULL, NULL},
};
