/*
 * test_kineto.c - the Kineto reader and the tree builder on small
 * hand-made traces: phases, timestamps, links, steps, collectives across
 * ranks, clock offsets, and bad input.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "check.h"
#include "teller/ingest.h"
#include "teller/tree.h"

static teller_store *load_mem(const char *doc, teller_status *st_out, teller_error *err)
{
    teller_store *st = teller_store_create();
    teller_error_clear(err);
    *st_out = teller_ingest_kineto_mem(st, "mem.json", doc, strlen(doc), NULL, err);
    return st;
}

static uint32_t find(const teller_store *st, const char *name)
{
    const teller_events *ev = teller_store_events(st);
    for (size_t i = 0; i < ev->n; i++)
        if (!strcmp(teller_store_str(st, ev->name[i]), name))
            return (uint32_t)i;
    return TELLER_NONE;
}

/* One rank, one step: annotation > op > launch > kernel, base time after
 * the events, a string pid, a flow, an instant, metadata. */
static const char *k_small =
    "{\"schemaVersion\": 1, \"distributedInfo\": {\"rank\": 3, \"world_size\": 4},\n"
    " \"traceEvents\": [\n"
    "  {\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"gemm\\u005fk\", \"pid\": 0, \"tid\": 7, \"ts\": 1010.5, \"dur\": 5,"
    "   \"args\": {\"correlation\": 11, \"grid\": [2, 1, 1], \"block\": [128, 1, 1], \"External id\": 5}},\n"
    "  {\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", \"pid\": 9, \"tid\": 9, \"ts\": 1003, \"dur\": 2,"
    "   \"args\": {\"correlation\": 11, \"External id\": 5}},\n"
    "  {\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::mm\", \"pid\": 9, \"tid\": 9, \"ts\": 1002, \"dur\": 4},\n"
    "  {\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"ProfilerStep#7\", \"pid\": 9, \"tid\": 9, \"ts\": 1000, \"dur\": 10},\n"
    "  {\"ph\": \"s\", \"cat\": \"ac2g\", \"id\": 11, \"pid\": 9, \"tid\": 9, \"ts\": 1003, \"name\": \"ac2g\"},\n"
    "  {\"ph\": \"i\", \"cat\": \"cpu_instant_event\", \"s\": \"t\", \"name\": \"[memory]\", \"pid\": 9, \"tid\": 9, \"ts\": 1004},\n"
    "  {\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": 9, \"tid\": 9, \"args\": {\"name\": \"main\"}},\n"
    "  {\"ph\": \"X\", \"cat\": \"Trace\", \"name\": \"PyTorch Profiler (0)\", \"pid\": \"Spans\", \"tid\": \"PyTorch Profiler\", \"ts\": 990, \"dur\": 50}\n"
    " ],\n"
    " \"baseTimeNanoseconds\": 1000000000000, \"traceName\": \"x\"}\n";

static void test_small_trace_links_and_step(void)
{
    teller_status s;
    teller_error err;
    teller_store *st = load_mem(k_small, &s, &err);
    CHECK_EQ_INT(s, TELLER_OK);
    CHECK_EQ_INT(teller_tree_build(st, NULL, &err), TELLER_OK);
    const teller_events *ev = teller_store_events(st);
    CHECK_EQ_INT(ev->n, 6);
    uint32_t k = find(st, "gemm_k"), l = find(st, "cudaLaunchKernel"), op = find(st, "aten::mm"),
             an = find(st, "ProfilerStep#7");
    CHECK(k != TELLER_NONE && l != TELLER_NONE && op != TELLER_NONE && an != TELLER_NONE);
    if (k == TELLER_NONE || l == TELLER_NONE || op == TELLER_NONE || an == TELLER_NONE) {
        teller_store_free(st);
        return;
    }
    CHECK_EQ_INT(ev->parent[k], l);
    CHECK_EQ_INT(ev->parent[l], op);
    CHECK_EQ_INT(ev->parent[op], an);
    CHECK_EQ_INT(ev->parent[an], TELLER_NONE);
    CHECK_EQ_INT(ev->depth[k], 3);
    CHECK_EQ_INT(ev->layer[k], TELLER_LAYER_KERNEL);
    CHECK_EQ_INT(ev->layer[an], TELLER_LAYER_ENGINE);
    /* base time added even though it came after traceEvents; fractional us exact */
    CHECK_EQ_INT(ev->start_ns[k], 1000000000000LL + 1010500);
    CHECK_EQ_INT(teller_store_event_rank(st, k), 3);
    CHECK_EQ_INT(teller_store_step_count(st), 1);
    CHECK_EQ_INT(ev->step[k], 0);
    const teller_args *a = teller_store_event_args(st, k);
    CHECK(a && a->grid[0] == 2 && a->block[0] == 128 && a->ext_id == 5);
    teller_store_free(st);
}

/* Two ranks on two nodes, node 1's clock 250 us ahead: the collective's
 * departures give the offset back, and the steps line up. */
static char *two_rank_doc(int rank, int64_t clock_off_us, int64_t late_us)
{
    char *buf = malloc(1 << 16);
    size_t o = 0;
    o += (size_t)snprintf(buf + o, 1 << 16, "{\"distributedInfo\": {\"rank\": %d}, \"deviceProperties\": [{\"name\": \"H200\"}],"
                                            " \"traceEvents\": [", rank);
    for (int step = 0; step < 3; step++) {
        int64_t t0 = 1000000 + step * 10000 + clock_off_us;
        int64_t arrive = t0 + 100 + (rank == 1 ? late_us : 0);
        int64_t depart = t0 + 100 + late_us + 50; /* everyone leaves when the last arrives */
        o += (size_t)snprintf(buf + o, (1 << 16) - o,
            "%s{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"execute_context_%d(1)_generation_0(0)\",\"pid\":1,\"tid\":1,\"ts\":%lld,\"dur\":1000},"
            "{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaLaunchKernel\",\"pid\":1,\"tid\":1,\"ts\":%lld,\"dur\":5,\"args\":{\"correlation\":%d}},"
            "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)\",\"pid\":0,\"tid\":40,\"ts\":%lld,\"dur\":%lld,"
            "\"args\":{\"correlation\":%d,\"Collective name\":\"allreduce\",\"Process Group Name\":\"0\",\"Group size\":2}}",
            step ? "," : "", step, (long long)t0, (long long)(arrive - 10), 100 + step, (long long)arrive,
            (long long)(depart - arrive), 100 + step);
    }
    snprintf(buf + o, (1 << 16) - o, "]}");
    return buf;
}

static void test_two_nodes_collectives_and_offsets(void)
{
    teller_store *st = teller_store_create();
    teller_error err;
    teller_error_clear(&err);
    char *d0 = two_rank_doc(0, 0, 30), *d1 = two_rank_doc(1, 250, 30);
    CHECK_EQ_INT(teller_ingest_kineto_mem(st, "rank0.json", d0, strlen(d0), NULL, &err), TELLER_OK);
    CHECK_EQ_INT(teller_ingest_kineto_mem(st, "rank1.json", d1, strlen(d1), NULL, &err), TELLER_OK);
    free(d0);
    free(d1);
    CHECK_EQ_INT(teller_tree_build(st, NULL, &err), TELLER_OK); /* 1 GPU per node from deviceProperties */
    CHECK_EQ_INT(teller_store_num_nodes(st), 2);
    CHECK_EQ_INT(teller_store_nodes(st)[1].offset_ns, 250000);
    CHECK_EQ_INT(teller_store_num_collectives(st), 3);
    const teller_collective *co = teller_store_collectives(st);
    for (size_t c = 0; c < teller_store_num_collectives(st); c++)
        CHECK_EQ_INT(co[c].num_members, 2);
    CHECK_EQ_INT(teller_store_step_count(st), 3);
    CHECK_EQ_INT(teller_store_num_steps(st), 6);
    const teller_step *s = teller_store_steps(st);
    /* after alignment step k starts at the same time on both ranks */
    CHECK_EQ_INT(s[0].start_ns, s[1].start_ns);
    CHECK_EQ_INT(s[4].start_ns, s[5].start_ns);
    teller_store_free(st);
}

static void test_bad_input_errors_with_offsets(void)
{
    struct {
        const char *doc;
        teller_status want;
    } cases[] = {
        {"", TELLER_ERR_TRUNCATED},
        {"{\"traceEvents\": [{\"ph\": \"X\", \"name\": \"a\", \"ts\": 1, \"dur\"", TELLER_ERR_TRUNCATED},
        {"garbage", TELLER_ERR_FORMAT},
        {"{\"traceEvents\": [1, 2]}", TELLER_ERR_FORMAT},
        {"{\"traceEvents\": [{\"ph\": \"X\" \"name\": \"a\"}]}", TELLER_ERR_FORMAT},
        {"{\"traceEvents\": [{\"ph\": \"X\", \"name\": \"a\", \"ts\": 1, \"dur\": 1}}", TELLER_ERR_FORMAT},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        teller_status s;
        teller_error err;
        teller_store *st = load_mem(cases[i].doc, &s, &err);
        if (s != cases[i].want)
            fprintf(stderr, "  case %zu: got %d (%s)\n", i, s, err.msg);
        CHECK_EQ_INT(s, cases[i].want);
        CHECK(err.msg[0] != 0);
        CHECK(err.offset <= strlen(cases[i].doc));
        teller_store_free(st);
    }
}

static void test_bad_events_are_skipped_with_warnings(void)
{
    const char *doc =
        "{\"traceEvents\": ["
        "{\"ph\": \"X\", \"name\": \"neg\", \"pid\": 1, \"tid\": 1, \"ts\": 5, \"dur\": -3},"
        "{\"ph\": \"Q\", \"name\": \"unknown phase\", \"pid\": 1, \"tid\": 1, \"ts\": 5},"
        "{\"ph\": \"X\", \"name\": 42, \"pid\": 1, \"tid\": 1, \"ts\": 5, \"dur\": 1},"
        "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", \"pid\": 0, \"tid\": 7, \"ts\": \"oops\", \"dur\": 1},"
        "{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", \"pid\": 1, \"tid\": 1, \"ts\": 10, \"dur\": 2, \"args\": {\"correlation\": 9}},"
        "{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", \"pid\": 1, \"tid\": 1, \"ts\": 20, \"dur\": 2, \"args\": {\"correlation\": 9}},"
        "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"<script>\\u001b[31m\", \"pid\": 0, \"tid\": 7, \"ts\": 30, \"dur\": 1, \"args\": {\"correlation\": \"9\"}},"
        "{\"ph\": \"X\", \"name\": \"ok\", \"pid\": 1, \"tid\": 1, \"ts\": 40, \"dur\": 1}"
        "]}";
    teller_status s;
    teller_error err;
    teller_store *st = load_mem(doc, &s, &err);
    CHECK_EQ_INT(s, TELLER_OK);
    CHECK_EQ_INT(teller_tree_build(st, NULL, &err), TELLER_OK);
    CHECK_EQ_INT(teller_store_events(st)->n, 4); /* two launches, the hostile kernel, "ok" */
    CHECK(teller_store_num_warnings(st) >= 5);
    CHECK(find(st, "<script>\x1b[31m") != TELLER_NONE);
    teller_store_free(st);
}

/* Found by review: "7" as a tid was a hash, not thread 7; a tid past 32
 * bits was cut to its low bits (thread 4294967297 became thread 1); a number
 * of more than 63 characters lost its exponent (1.000...1e6 read as 1); a
 * time past 2116 overflowed start + dur; a base time that is no number was
 * dropped without a word. */
static void test_ids_numbers_and_times_read_as_written(void)
{
    const char *doc =
        "{\"baseTimeNanoseconds\": \"abc\", \"traceEvents\": ["
        "{\"ph\": \"X\", \"name\": \"a\", \"pid\": \"1\", \"tid\": \"7\", \"ts\": 10, \"dur\": 1},"
        "{\"ph\": \"X\", \"name\": \"b\", \"pid\": 1, \"tid\": 7, \"ts\": 20, \"dur\": 1},"
        "{\"ph\": \"X\", \"name\": \"c\", \"pid\": 1, \"tid\": 4294967297, \"ts\": 30, \"dur\": 1},"
        "{\"ph\": \"X\", \"name\": \"d\", \"pid\": 1, \"tid\": 1, \"ts\": 40, \"dur\": 1},"
        "{\"ph\": \"X\", \"name\": \"long\", \"pid\": 1, \"tid\": 1, \"ts\": "
        "1.00000000000000000000000000000000000000000000000000000000000000000000001e6, \"dur\": 1},"
        "{\"ph\": \"X\", \"name\": \"far\", \"pid\": 1, \"tid\": 1, \"ts\": 9e15, \"dur\": 9e15}"
        "]}";
    teller_status s;
    teller_error err;
    teller_store *st = load_mem(doc, &s, &err);
    CHECK_EQ_INT(s, TELLER_OK);
    const teller_events *ev = teller_store_events(st);
    uint32_t a = find(st, "a"), b = find(st, "b"), c = find(st, "c"), d = find(st, "d"), l = find(st, "long");
    CHECK(a != TELLER_NONE && b != TELLER_NONE && c != TELLER_NONE && d != TELLER_NONE && l != TELLER_NONE);
    if (a != TELLER_NONE && b != TELLER_NONE && c != TELLER_NONE && d != TELLER_NONE && l != TELLER_NONE) {
        CHECK_EQ_INT(teller_event_tid(ev, a), 7);
        CHECK_EQ_INT(ev->track[a], ev->track[b]); /* one thread */
        CHECK(teller_event_tid(ev, c) != teller_event_tid(ev, d));
        CHECK_EQ_INT(ev->start_ns[l], 1000000000);
    }
    CHECK(find(st, "far") == TELLER_NONE);
    CHECK(teller_store_num_warnings(st) >= 2); /* the base time, the far event */
    teller_store_free(st);
}

/* A gzip file bigger than the reader's window: the same events as the
 * in-memory read, so units split across refills are parsed again whole. */
static void test_streaming_matches_memory(void)
{
    size_t cap = 24u << 20, o = 0;
    char *doc = malloc(cap);
    o += (size_t)snprintf(doc, cap, "{\"traceEvents\": [");
    int n = 0;
    while (o < cap - 4096) {
        o += (size_t)snprintf(doc + o, cap - o,
                              "%s{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::op_%d \\\"q\\\"\", \"pid\": 1, "
                              "\"tid\": 1, \"ts\": %d.%03d, \"dur\": 0.5, \"args\": {\"Input Dims\": [[1, 2], [3]]}}",
                              n ? "," : "", n % 97, n, n % 1000);
        n++;
    }
    o += (size_t)snprintf(doc + o, cap - o, "]}");
    char path[] = "/tmp/teller_test_XXXXXX.json.gz";
    int fd = mkstemps(path, 8);
    CHECK(fd >= 0);
    close(fd);
    gzFile gz = gzopen(path, "wb1");
    gzwrite(gz, doc, (unsigned)o);
    gzclose(gz);
    /* the same text as two gzip members: too unusual for the whole-file
     * inflate, so it streams through zlib's window (24 MB > the 256 KiB
     * window: refilled many times) */
    char path2[] = "/tmp/teller_test_XXXXXX.json.gz";
    fd = mkstemps(path2, 8);
    CHECK(fd >= 0);
    close(fd);
    gz = gzopen(path2, "wb1");
    gzwrite(gz, doc, (unsigned)(o / 2));
    gzclose(gz);
    gz = gzopen(path2, "ab1");
    gzwrite(gz, doc + o / 2, (unsigned)(o - o / 2));
    gzclose(gz);
    /* and as plain JSON, which streams without zlib */
    char path3[] = "/tmp/teller_test_XXXXXX.json";
    fd = mkstemps(path3, 5);
    CHECK(fd >= 0);
    CHECK(write(fd, doc, o) == (ssize_t)o);
    close(fd);
    teller_store *a = teller_store_create(), *b = teller_store_create(), *a2 = teller_store_create(),
                 *a3 = teller_store_create();
    teller_error err;
    teller_error_clear(&err);
    CHECK_EQ_INT(teller_ingest_kineto(a, path, NULL, &err), TELLER_OK);
    CHECK_EQ_INT(teller_ingest_kineto(a2, path2, NULL, &err), TELLER_OK);
    CHECK_EQ_INT(teller_ingest_kineto(a3, path3, NULL, &err), TELLER_OK);
    CHECK_EQ_INT(teller_ingest_kineto_mem(b, "mem", doc, o, NULL, &err), TELLER_OK);
    unlink(path2);
    const teller_events *ea = teller_store_events(a), *eb = teller_store_events(b), *e2 = teller_store_events(a2),
                        *e3 = teller_store_events(a3);
    CHECK_EQ_INT(ea->n, (size_t)n);
    CHECK_EQ_INT(eb->n, (size_t)n);
    CHECK_EQ_INT(e2->n, (size_t)n);
    CHECK_EQ_INT(e3->n, (size_t)n);
    int same = ea->n == eb->n && e2->n == eb->n && e3->n == eb->n;
    for (size_t i = 0; same && i < ea->n; i++)
        same = ea->start_ns[i] == eb->start_ns[i] && e2->start_ns[i] == eb->start_ns[i] &&
               e3->start_ns[i] == eb->start_ns[i] &&
               !strcmp(teller_store_str(a, ea->name[i]), teller_store_str(b, eb->name[i])) &&
               !strcmp(teller_store_str(a2, e2->name[i]), teller_store_str(b, eb->name[i])) &&
               !strcmp(teller_store_str(a3, e3->name[i]), teller_store_str(b, eb->name[i]));
    CHECK(same);
    teller_store_free(a2);
    teller_store_free(a3);
    /* truncated plain JSON: the error says where the text ends */
    CHECK(truncate(path3, (off_t)(o / 2)) == 0);
    teller_store *c3 = teller_store_create();
    CHECK_EQ_INT(teller_ingest_kineto(c3, path3, NULL, &err), TELLER_ERR_TRUNCATED);
    CHECK_EQ_INT(err.offset, o / 2);
    teller_store_free(c3);
    unlink(path3);
    /* truncated gzip: a clear error, not a crash */
    gz = gzopen(path, "wb1");
    gzwrite(gz, doc, (unsigned)o);
    gzclose(gz);
    FILE *f = fopen(path, "r+b");
    fseek(f, 0, SEEK_END);
    long sz = ftell(f);
    CHECK(ftruncate(fileno(f), sz / 2) == 0);
    fclose(f);
    teller_store *c = teller_store_create();
    teller_status s = teller_ingest_kineto(c, path, NULL, &err);
    CHECK(s == TELLER_ERR_TRUNCATED || s == TELLER_ERR_FORMAT);
    CHECK(err.offset > 0);
    unlink(path);
    free(doc);
    teller_store_free(a);
    teller_store_free(b);
    teller_store_free(c);
}

/* A legacy trace without args.correlation links kernels to launches by ac2g
 * flows; string flow ids are told apart by their text, not their length,
 * and a numeric id too long for 64 bits is hashed, not overflowed. */
static void test_flow_string_ids(void)
{
    static const char *doc =
        "{\"traceEvents\": [\n"
        " {\"ph\": \"X\", \"cat\": \"Runtime\", \"name\": \"cudaLaunchKernel\", \"pid\": 9, \"tid\": 9, \"ts\": 1003, \"dur\": 2},\n"
        " {\"ph\": \"X\", \"cat\": \"Kernel\", \"name\": \"k1\", \"pid\": 0, \"tid\": 7, \"ts\": 1010, \"dur\": 5},\n"
        " {\"ph\": \"X\", \"cat\": \"Runtime\", \"name\": \"cudaLaunchKernel\", \"pid\": 9, \"tid\": 9, \"ts\": 2003, \"dur\": 2},\n"
        " {\"ph\": \"X\", \"cat\": \"Kernel\", \"name\": \"k2\", \"pid\": 0, \"tid\": 7, \"ts\": 2010, \"dur\": 5},\n"
        " {\"ph\": \"s\", \"cat\": \"ac2g\", \"id\": \"a1\", \"pid\": 9, \"tid\": 9, \"ts\": 1003},\n"
        " {\"ph\": \"f\", \"cat\": \"ac2g\", \"id\": \"a1\", \"bp\": \"e\", \"pid\": 0, \"tid\": 7, \"ts\": 1010},\n"
        " {\"ph\": \"s\", \"cat\": \"ac2g\", \"id\": \"3137639223372036854775807376\", \"pid\": 9, \"tid\": 9, \"ts\": 2003},\n"
        " {\"ph\": \"f\", \"cat\": \"ac2g\", \"id\": \"b2\", \"bp\": \"e\", \"pid\": 0, \"tid\": 7, \"ts\": 2010}\n"
        "]}\n";
    teller_status s;
    teller_error err;
    teller_store *st = load_mem(doc, &s, &err);
    CHECK_EQ_INT(s, TELLER_OK);
    CHECK_EQ_INT(teller_tree_build(st, NULL, &err), TELLER_OK);
    const teller_events *ev = teller_store_events(st);
    uint32_t k1 = find(st, "k1"), k2 = find(st, "k2");
    CHECK(k1 != TELLER_NONE && k2 != TELLER_NONE);
    if (k1 != TELLER_NONE && k2 != TELLER_NONE) {
        CHECK(ev->parent[k1] != TELLER_NONE && ev->start_ns[ev->parent[k1]] == 1003000);
        CHECK_EQ_INT(ev->parent[k2], TELLER_NONE); /* its flow id matches no launch's */
    }
    teller_store_free(st);
}

/* A 19-digit baseTimeNanoseconds (any epoch time in ns) is exact, as a
 * number or a string; one past int64 is an error, not a wrapped time. */
static void test_base_time_19_digits_exact(void)
{
    const char *bases[] = {"1735689600123456789", "\"1735689600123456789\""};
    for (int i = 0; i < 2; i++) {
        char doc[600];
        snprintf(doc, sizeof doc,
                 "{\"traceEvents\": [{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::mm\", \"pid\": 1, "
                 "\"tid\": 1, \"ts\": 1.001, \"dur\": 1}], \"baseTimeNanoseconds\": %s}",
                 bases[i]);
        teller_status s;
        teller_error err;
        teller_store *st = load_mem(doc, &s, &err);
        CHECK_EQ_INT(s, TELLER_OK);
        const teller_events *ev = teller_store_events(st);
        CHECK(ev->n == 1 && ev->start_ns[0] == 1735689600123456789LL + 1001);
        teller_store_free(st);
    }
    teller_status s;
    teller_error err;
    teller_store *st = load_mem("{\"traceEvents\": [], \"baseTimeNanoseconds\": 9223372036854775808}", &s, &err);
    CHECK_EQ_INT(s, TELLER_ERR_FORMAT);
    teller_store_free(st);
}

/* A torch op's "Input Dims" and "Input type" (record_shapes) are kept as
 * the JSON text the trace wrote, when it has both lists and is the
 * innermost torch op around a launch call (an op that launched nothing
 * itself gets no row); a value of the wrong type is ignored with a
 * warning. */
static void test_op_shapes_kept_as_written(void)
{
    const char *doc =
        "{\"traceEvents\": [\n"
        "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::mm\", \"pid\": 1, \"tid\": 1, \"ts\": 1, \"dur\": 4,"
        " \"args\": {\"External id\": 9, \"Input Dims\": [[8, 4096], [4096, 1024]],"
        " \"Input type\": [\"c10::BFloat16\", \"c10::BFloat16\"]}},\n"
        "{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", \"pid\": 1, \"tid\": 1, \"ts\": 2,"
        " \"dur\": 1, \"args\": {\"correlation\": 5}},\n"
        "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::linear\", \"pid\": 1, \"tid\": 1, \"ts\": 5, \"dur\": 1,"
        " \"args\": {\"External id\": 10, \"Input Dims\": [[8, 4096], [1024, 4096], [1024]],"
        " \"Input type\": [\"float\", \"float\", \"float\"]}},\n"
        "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::add\", \"pid\": 1, \"tid\": 1, \"ts\": 6, \"dur\": 1,"
        " \"args\": {\"Input Dims\": [[8], [8]]}},\n"
        "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::mul\", \"pid\": 1, \"tid\": 1, \"ts\": 8, \"dur\": 1,"
        " \"args\": {\"Input Dims\": \"[[8]]\", \"Input type\": [\"float\"]}}\n"
        "]}";
    teller_status s;
    teller_error err;
    teller_store *st = load_mem(doc, &s, &err);
    CHECK_EQ_INT(s, TELLER_OK);
    const teller_args *mm = teller_store_event_args(st, find(st, "aten::mm"));
    CHECK(mm != NULL);
    if (mm) {
        CHECK(!strcmp(teller_store_str(st, mm->in_dims), "[[8, 4096], [4096, 1024]]"));
        CHECK(!strcmp(teller_store_str(st, mm->in_types), "[\"c10::BFloat16\", \"c10::BFloat16\"]"));
        CHECK_EQ_INT(mm->ext_id, 9);
    }
    CHECK(teller_store_event_args(st, find(st, "aten::linear")) == NULL);
    CHECK(teller_store_event_args(st, find(st, "aten::add")) == NULL);
    CHECK(teller_store_event_args(st, find(st, "aten::mul")) == NULL);
    CHECK_EQ_INT(teller_store_num_warnings(st), 1);
    teller_store_free(st);
}

/* Which torch ops keep their shapes does not depend on the order the file
 * lists events in: on each thread, the innermost op around a launch call
 * (of two ops that start together the one that ends first; of two equal
 * ops the later in the file), not one the call outlasts, not one on
 * another thread. */
static void test_innermost_op_keeps_shapes_any_order(void)
{
#define OP(name, tid, ts, dur)                                                                                     \
    "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"" name "\", \"pid\": 1, \"tid\": " #tid ", \"ts\": " #ts   \
    ", \"dur\": " #dur ", \"args\": {\"Input Dims\": [[2]], \"Input type\": [\"float\"]}}"
#define CALL(tid, ts, dur)                                                                                         \
    "{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", \"pid\": 1, \"tid\": " #tid        \
    ", \"ts\": " #ts ", \"dur\": " #dur "}"
    const char *doc = "{\"traceEvents\": [\n"
                      CALL(1, 51, 1) ",\n" CALL(2, 12, 1) ",\n" OP("twin_a", 1, 50, 5) ",\n" CALL(1, 10, 2) ",\n"
                      OP("inner", 1, 10, 10) ",\n" OP("other_thread", 2, 100, 5) ",\n" CALL(1, 44, 3) ",\n"
                      OP("outlasted", 1, 40, 5) ",\n" OP("twin_b", 1, 50, 5) ",\n" OP("outer", 1, 10, 20) ",\n"
                      OP("thread_two", 2, 10, 20) ",\n" CALL(1, 101, 1) "\n]}";
#undef OP
#undef CALL
    teller_status s;
    teller_error err;
    teller_store *st = load_mem(doc, &s, &err);
    CHECK_EQ_INT(s, TELLER_OK);
    const char *keep[] = {"inner", "twin_b", "thread_two"};
    const char *drop[] = {"outer", "twin_a", "outlasted", "other_thread"};
    for (size_t i = 0; i < sizeof keep / sizeof *keep; i++) {
        const teller_args *a = teller_store_event_args(st, find(st, keep[i]));
        CHECK(a != NULL && !strcmp(teller_store_str(st, a->in_dims), "[[2]]"));
    }
    for (size_t i = 0; i < sizeof drop / sizeof *drop; i++)
        CHECK(teller_store_event_args(st, find(st, drop[i])) == NULL);
    teller_store_free(st);
}

/* Events name their (pid, tid) by a track: one per distinct pair, (-1, -1)
 * (the one pair whose map key is all ones) included, and every event
 * reads its own pair back; appending maps the tracks. */
static void test_tracks_one_per_pair(void)
{
    const int32_t pairs[][2] = {{-1, -1}, {0, 0}, {-1, -1}, {7, -1}, {0, 0}, {-1, 7}, {-1, -1}};
    size_t n = sizeof pairs / sizeof *pairs;
    teller_store *st = teller_store_create(), *all = teller_store_create();
    teller_error err;
    teller_error_clear(&err);
    for (size_t i = 0; i < n; i++) {
        teller_event_row r = {.start_ns = (int64_t)i, .pid = pairs[i][0], .tid = pairs[i][1], .args = TELLER_NONE};
        CHECK_EQ_INT(teller_store_add_event(st, &r), i);
    }
    CHECK_EQ_INT(teller_store_add_event(all, &(teller_event_row){.pid = 7, .tid = -1, .args = TELLER_NONE}), 0);
    CHECK_EQ_INT(teller_store_append(all, st, &err), TELLER_OK);
    const teller_events *ev = teller_store_events(st), *ea = teller_store_events(all);
    CHECK_EQ_INT(ev->ntracks, 4);
    CHECK_EQ_INT(ea->ntracks, 4);
    for (size_t i = 0; i < n; i++) {
        CHECK(teller_event_pid(ev, i) == pairs[i][0] && teller_event_tid(ev, i) == pairs[i][1]);
        CHECK(teller_event_pid(ea, i + 1) == pairs[i][0] && teller_event_tid(ea, i + 1) == pairs[i][1]);
    }
    CHECK(ev->track[0] == ev->track[2] && ev->track[0] == ev->track[6] && ev->track[1] == ev->track[4]);
    teller_store_free(st);
    teller_store_free(all);
}

const test_case kineto_tests[] = {
    {"kineto: ids, long numbers and far times read as written", test_ids_numbers_and_times_read_as_written},
    {"kineto: a 19-digit baseTimeNanoseconds is exact; past int64 is an error", test_base_time_19_digits_exact},
    {"kineto: kernel links to its launch by correlation id, op and step by time", test_small_trace_links_and_step},
    {"kineto: a torch op's input shapes are kept as the trace wrote them", test_op_shapes_kept_as_written},
    {"kineto: the innermost torch op around a launch keeps its shapes, in any file order", test_innermost_op_keeps_shapes_any_order},
    {"store: one track per (pid, tid) pair, appended by pair", test_tracks_one_per_pair},
    {"tree: collectives match across two nodes and the clock offset comes back", test_two_nodes_collectives_and_offsets},
    {"kineto: truncated, garbage and malformed traces fail with a position", test_bad_input_errors_with_offsets},
    {"kineto: bad events are skipped with warnings, hostile names kept verbatim", test_bad_events_are_skipped_with_warnings},
    {"kineto: streamed gzip and plain JSON larger than the window read like memory", test_streaming_matches_memory},
    {"kineto: legacy ac2g flows link by their string ids' text", test_flow_string_ids},
    {NULL, NULL},
};
