/*
 * test_nsys.c - the Nsight Systems SQLite reader: every export in
 * ../shared/data/traces/nsys-ai loads and matches the counts computed
 * independently by tests/tools/count_nsys.py (Python's sqlite3 module, none
 * of our code); small databases made here check the edges (bad rows,
 * missing tables, files that are not SQLite).
 */
#include <stdlib.h>
#include <string.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "teller/ingest.h"
#include "teller/tree.h"

typedef struct nsys_expect {
    const char *path;
    long procs, kernels, devices, nccl_kernels, linked, nvtx, nccl_ranges, profiler, profiler_ns, events;
} nsys_expect;

/* From `python3 tests/tools/count_nsys.py ../shared/data/traces/nsys-ai`.
 * The exports are trimmed windows: some kernels' launches fall outside, so
 * fewer kernels are linked than there are kernels. */
static const nsys_expect k_nsys[] = {
    {"nsys-ai/h100_2gpu_1s.sqlite", 2, 3442, 2, 0, 1632, 16782, 0, 0, 0, 27190},
    {"nsys-ai/mfu_2gpu_after.sqlite", 2, 3587, 2, 62, 3577, 17113, 420, 6, 8071657, 28868},
    {"nsys-ai/mfu_2gpu_before.sqlite", 2, 4010, 2, 66, 3986, 19118, 462, 6, 2009505, 32255},
    {"nsys-ai/mock.sqlite", 1, 2, 1, 0, 2, 0, 0, 25, 338875790, 38},
};

static teller_store *load_nsys(const char *rel)
{
    teller_store *st = teller_store_create();
    teller_error err;
    teller_error_clear(&err);
    teller_status s = teller_ingest_file(st, shared_path(rel), NULL, &err);
    if (s != TELLER_OK)
        fprintf(stderr, "  %s: %s\n", rel, err.msg);
    CHECK_EQ_INT(s, TELLER_OK);
    s = teller_tree_build(st, NULL, &err);
    CHECK_EQ_INT(s, TELLER_OK);
    return st;
}

/* Distinct device ids (pids of kernel rows), up to 64 devices. */
static long kernel_devices(const teller_store *st)
{
    const teller_events *ev = teller_store_events(st);
    uint64_t seen = 0;
    for (size_t i = 0; i < ev->n; i++)
        if (ev->layer[i] == TELLER_LAYER_KERNEL && teller_event_pid(ev, i) >= 0 && teller_event_pid(ev, i) < 64)
            seen |= 1ull << teller_event_pid(ev, i);
    return __builtin_popcountll(seen);
}

static long count_flagged(const teller_store *st, uint8_t layer, uint8_t flag)
{
    const teller_events *ev = teller_store_events(st);
    long n = 0;
    for (size_t i = 0; i < ev->n; i++)
        n += ev->layer[i] == layer && (ev->flags[i] & flag) == flag;
    return n;
}

static void test_every_export_matches_independent_counts(void)
{
    for (size_t i = 0; i < sizeof k_nsys / sizeof *k_nsys; i++) {
        const nsys_expect *x = &k_nsys[i];
        teller_store *st = load_nsys(x->path);
        teller_tree_stats s;
        teller_tree_stats_get(st, &s);
        long nvtx = (long)(s.by_layer[TELLER_LAYER_ENGINE] + s.by_layer[TELLER_LAYER_BACKEND]);
        /* NCCL-domain ranges are the only BACKEND ranges flagged COMM here */
        long nccl_ranges = count_flagged(st, TELLER_LAYER_BACKEND, TELLER_F_COMM);
        /* the profiler's own work; CUDA's own overhead rows (h100's 198
         * "Command Buffer Full", mock's module loading) are not read */
        long profiler = count_flagged(st, TELLER_LAYER_OTHER, TELLER_F_PROFILER);
        int bad = (long)teller_store_num_sources(st) != x->procs || (long)s.kernels != x->kernels ||
                  kernel_devices(st) != x->devices || (long)s.comm_kernels != x->nccl_kernels ||
                  (long)s.kernels_linked != x->linked || nvtx != x->nvtx || nccl_ranges != x->nccl_ranges ||
                  profiler != x->profiler || (long)s.profiler != x->profiler || s.profiler_ns != x->profiler_ns ||
                  (long)s.events != x->events;
        if (bad)
            fprintf(stderr,
                    "  %s: procs %zu/%ld kernels %llu/%ld devices %ld/%ld nccl %llu/%ld linked %llu/%ld nvtx %ld/%ld "
                    "nccl ranges %ld/%ld profiler %ld/%ld (%lld/%ld ns) events %llu/%ld\n",
                    x->path, teller_store_num_sources(st), x->procs, (unsigned long long)s.kernels, x->kernels,
                    kernel_devices(st), x->devices, (unsigned long long)s.comm_kernels, x->nccl_kernels,
                    (unsigned long long)s.kernels_linked, x->linked, nvtx, x->nvtx, nccl_ranges, x->nccl_ranges,
                    profiler, x->profiler, (long long)s.profiler_ns, x->profiler_ns, (unsigned long long)s.events,
                    x->events);
        CHECK(!bad);
        CHECK_EQ_INT(teller_store_num_warnings(st), 0);
        /* every source is an nsys process whose events are contiguous */
        uint64_t total = 0;
        for (uint32_t k = 0; k < teller_store_num_sources(st); k++) {
            const teller_source *so = teller_store_source_c(st, k);
            CHECK_EQ_INT(so->format, TELLER_FORMAT_NSYS);
            CHECK(so->pid > 0);
            CHECK_EQ_INT(so->first_event, total);
            total += so->num_events;
        }
        CHECK_EQ_INT(total, s.events);
        teller_store_free(st);
    }
}

static void test_mfu_before_kernels_devices_nccl(void)
{
    /* the numbers: 4010 kernels on 2 devices, 66 of them NCCL */
    teller_store *st = load_nsys("nsys-ai/mfu_2gpu_before.sqlite");
    teller_tree_stats s;
    teller_tree_stats_get(st, &s);
    CHECK_EQ_INT(s.kernels, 4010);
    CHECK_EQ_INT(kernel_devices(st), 2);
    CHECK_EQ_INT(s.comm_kernels, 66);
    teller_store_free(st);
}

static int has_name(const teller_store *st, uint8_t layer, const char *name)
{
    const teller_events *ev = teller_store_events(st);
    for (size_t i = 0; i < ev->n; i++)
        if (ev->layer[i] == layer && !strcmp(teller_store_str(st, ev->name[i]), name))
            return 1;
    return 0;
}

static int any_name_contains(const teller_store *st, uint8_t layer, const char *part)
{
    const teller_events *ev = teller_store_events(st);
    for (size_t i = 0; i < ev->n; i++)
        if (ev->layer[i] == layer && strstr(teller_store_str(st, ev->name[i]), part))
            return 1;
    return 0;
}

static void test_names_and_facts(void)
{
    teller_store *st = load_nsys("nsys-ai/mfu_2gpu_before.sqlite");
    /* runtime names lose their version suffix; driver calls are their own layer */
    CHECK(has_name(st, TELLER_LAYER_RUNTIME, "cudaLaunchKernel"));
    CHECK(!any_name_contains(st, TELLER_LAYER_RUNTIME, "_v7000"));
    CHECK(has_name(st, TELLER_LAYER_RUNTIME, "cudaMemcpyAsync"));
    /* only the last suffix goes: cudaStreamGetCaptureInfo_v2 is the API's name */
    CHECK(has_name(st, TELLER_LAYER_RUNTIME, "cudaStreamGetCaptureInfo_v2"));
    teller_tree_stats s;
    teller_tree_stats_get(st, &s);
    CHECK_EQ_INT(s.by_layer[TELLER_LAYER_DRIVER], 530 + 544);
    /* copies, sets and syncs are named as Kineto names them */
    CHECK(has_name(st, TELLER_LAYER_MEMCPY, "Memcpy HtoD (Pageable -> Device)"));
    CHECK(has_name(st, TELLER_LAYER_MEMCPY, "Memcpy DtoD (Device -> Device)"));
    CHECK(has_name(st, TELLER_LAYER_MEMSET, "Memset (Device)"));
    CHECK(has_name(st, TELLER_LAYER_SYNC, "Stream Wait Event"));
    /* emit_nvtx ranges keep the op name only */
    CHECK(has_name(st, TELLER_LAYER_BACKEND, "aten::empty_strided"));
    CHECK(!any_name_contains(st, TELLER_LAYER_BACKEND, "op_id"));
    CHECK(has_name(st, TELLER_LAYER_BACKEND, "ncclGroupStart"));
    const teller_source *so = teller_store_source_c(st, 0);
    CHECK(!strcmp(teller_store_str(st, so->host), "modal"));
    CHECK_EQ_INT(so->node, 0);
    /* epoch = t - systemClockNs + utcEpochNs (TARGET_INFO_SESSION_START_TIME) */
    CHECK_EQ_INT(so->base_ns, 1779782330176752435ll - 28254349605ll);
    const teller_events *ev = teller_store_events(st);
    int64_t lo = INT64_MAX;
    for (size_t i = 0; i < ev->n; i++)
        if (ev->start_ns[i] < lo)
            lo = ev->start_ns[i];
    /* the window starts 60.11 s on the capture clock, 31.9 s into the session */
    CHECK(lo >= 1779782330176752435ll + 31000000000ll && lo <= 1779782330176752435ll + 33000000000ll);
    teller_store_free(st);

    /* mock.sqlite counts from the session start and has the GPU tables */
    st = load_nsys("nsys-ai/mock.sqlite");
    so = teller_store_source_c(st, 0);
    CHECK_EQ_INT(so->base_ns, 1776781226557295056ll);
    CHECK_EQ_INT(so->num_devices, 1);
    CHECK(!strcmp(teller_store_str(st, so->device_name), "NVIDIA GeForce RTX 3080"));
    CHECK(!strcmp(teller_store_str(st, so->host), "DESKTOP-KBEMEQS"));
    CHECK_EQ_INT(so->pid, 91186);
    CHECK(has_name(st, TELLER_LAYER_MEMCPY, "Memcpy DtoH (Device -> Pinned)"));
    CHECK(has_name(st, TELLER_LAYER_SYNC, "Stream Wait Event") || has_name(st, TELLER_LAYER_SYNC, "Stream Sync"));
    teller_store_free(st);
}

static void test_two_processes_two_ranks_collectives(void)
{
    teller_store *st = load_nsys("nsys-ai/mfu_2gpu_before.sqlite");
    CHECK_EQ_INT(teller_store_num_sources(st), 2);
    /* ranks follow pid order: 144 is rank 0, 145 rank 1 */
    for (uint32_t k = 0; k < 2; k++) {
        const teller_source *so = teller_store_source_c(st, k);
        CHECK_EQ_INT(so->rank, so->pid == 144 ? 0 : 1);
        CHECK(so->pid == 144 || so->pid == 145);
    }
    /* every kernel sits in its process's source, on that process's device */
    const teller_events *ev = teller_store_events(st);
    for (size_t i = 0; i < ev->n; i++)
        if (ev->layer[i] == TELLER_LAYER_KERNEL && teller_event_pid(ev, i) != teller_store_event_rank(st, (uint32_t)i)) {
            CHECK(!"kernel of device d belongs to rank d");
            break;
        }
    /* the SendRecv kernels pair up across both ranks */
    size_t nc = teller_store_num_collectives(st), matched = 0, sendrecv = 0;
    const teller_collective *co = teller_store_collectives(st);
    const teller_coll_member *mem = teller_store_coll_members(st);
    for (size_t c = 0; c < nc; c++) {
        const char *kname = teller_store_str(st, ev->name[mem[co[c].first_member].kernel]);
        if (!strstr(kname, "ncclDevKernel_SendRecv"))
            continue;
        sendrecv++;
        if (co[c].num_members >= 2 && mem[co[c].first_member].rank != mem[co[c].first_member + 1].rank)
            matched++;
    }
    CHECK(sendrecv > 0);
    CHECK(matched > 0);
    CHECK_EQ_INT(matched, 33); /* 66 SendRecv kernels, 33 on each rank */
    teller_store_free(st);
}

static void test_rank_override_needs_one_process(void)
{
    teller_ingest_opts o = teller_ingest_defaults();
    o.rank_override = 3;
    teller_store *st = teller_store_create();
    teller_error err;
    teller_error_clear(&err);
    CHECK_EQ_INT(teller_ingest_nsys(st, shared_path("nsys-ai/mfu_2gpu_before.sqlite"), &o, &err), TELLER_ERR_ARG);
    CHECK(strstr(err.msg, "2") != NULL);
    teller_store_free(st);
    st = teller_store_create();
    CHECK_EQ_INT(teller_ingest_nsys(st, shared_path("nsys-ai/mock.sqlite"), &o, &err), TELLER_OK);
    CHECK_EQ_INT(teller_store_source_c(st, 0)->rank, 3);
    teller_store_free(st);
}

/* ---- hand-made databases ---- */

/* Creates a fresh database file in /tmp from SQL; path gets its name. */
static int make_db(char *path, size_t cap, const char *sql)
{
    snprintf(path, cap, "/tmp/teller_nsys_XXXXXX");
    int fd = mkstemp(path);
    if (fd < 0)
        return -1;
    close(fd);
    sqlite3 *db = NULL;
    int rc = sqlite3_open(path, &db);
    if (rc == SQLITE_OK)
        rc = sqlite3_exec(db, sql, NULL, NULL, NULL);
    sqlite3_close(db);
    return rc == SQLITE_OK ? 0 : -1;
}

static void test_database_without_trace_tables_fails(void)
{
    char path[64];
    CHECK_EQ_INT(make_db(path, sizeof path, "CREATE TABLE recipes(id INTEGER, name TEXT);"
                                            "INSERT INTO recipes VALUES (1, 'bread');"), 0);
    teller_store *st = teller_store_create();
    teller_error err;
    teller_error_clear(&err);
    CHECK_EQ_INT(teller_ingest_file(st, path, NULL, &err), TELLER_ERR_FORMAT);
    CHECK(strstr(err.msg, "CUPTI_ACTIVITY_KIND_KERNEL") && strstr(err.msg, "NVTX_EVENTS"));
    CHECK(!strcmp(err.file, path));
    CHECK_EQ_INT(teller_store_events(st)->n, 0);
    teller_store_free(st);
    unlink(path);
}

static void test_non_sqlite_file_fails_cleanly(void)
{
    char path[64];
    snprintf(path, sizeof path, "/tmp/teller_nsys_XXXXXX");
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    static const char junk[] = "this is not a database, only some text that is long enough to be a page "
                               "header and then some more text to fill the first hundred bytes of the file";
    CHECK(write(fd, junk, sizeof junk) == (ssize_t)sizeof junk);
    close(fd);
    teller_store *st = teller_store_create();
    teller_error err;
    teller_error_clear(&err);
    teller_status s = teller_ingest_nsys(st, path, NULL, &err);
    CHECK_EQ_INT(s, TELLER_ERR_FORMAT);
    CHECK(strstr(err.msg, "not an SQLite database") != NULL);
    CHECK(!strcmp(err.file, path));
    teller_store_free(st);
    unlink(path);
    /* a missing file is an i/o error naming it */
    st = teller_store_create();
    CHECK_EQ_INT(teller_ingest_nsys(st, "/tmp/teller_nsys_no_such_file.sqlite", NULL, &err), TELLER_ERR_IO);
    CHECK(!strcmp(err.file, "/tmp/teller_nsys_no_such_file.sqlite"));
    teller_store_free(st);
}

static void test_small_export_links_and_skips_bad_rows(void)
{
    /* one process (pid 7, tid 9), one kernel launched by cudaLaunchKernel
     * (corr 5), one graph launch, one NVTX step around them; and bad rows:
     * a kernel that ends before it starts, one without a name, one without
     * a process, one whose start is text, a runtime call with an unknown
     * name id */
    const char *sql =
        "CREATE TABLE StringIds(id INTEGER PRIMARY KEY, value TEXT NOT NULL);"
        "INSERT INTO StringIds VALUES (1,'cudaLaunchKernel_v7000'),(2,'void gemm<float>(int)'),(3,'gemm'),"
        "  (4,'cudaGraphLaunch_v10000'),(5,'ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096>)');"
        "CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL(start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER,"
        "  streamId INTEGER, correlationId INTEGER, globalPid INTEGER, demangledName INTEGER, shortName INTEGER,"
        "  gridX INTEGER, gridY INTEGER, gridZ INTEGER, blockX INTEGER, blockY INTEGER, blockZ INTEGER);"
        "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES"
        "  (2000, 2500, 0, 7, 5, 117440512, 2, 3, 4, 2, 1, 128, 1, 1),"
        "  (3000, 2900, 0, 7, 6, 117440512, 2, 3, 1, 1, 1, 1, 1, 1),"
        "  (3000, 3100, 0, 7, 6, 117440512, 99, 98, 1, 1, 1, 1, 1, 1),"
        "  (3000, 3100, 0, 7, 6, NULL, 2, 3, 1, 1, 1, 1, 1, 1),"
        "  ('garbage', '3100', 0, 7, 6, 117440512, 2, 3, 1, 1, 1, 1, 1, 1),"
        "  (3200, 3300, 0, 7, 8, 117440512, 5, 5, 1, 1, 1, 1, 1, 1);"
        "CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME(start INTEGER NOT NULL, end INTEGER NOT NULL,"
        "  eventClass INTEGER NOT NULL, globalTid INTEGER, correlationId INTEGER, nameId INTEGER NOT NULL,"
        "  returnValue INTEGER NOT NULL, callchainId INTEGER);"
        "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES"
        "  (1100, 1200, 0, 117440521, 5, 1, 0, NULL),"
        "  (1300, 1400, 0, 117440521, 8, 4, 0, NULL),"
        "  (1500, 1600, 0, 117440521, 9, 77, 0, NULL);"
        "CREATE TABLE NVTX_EVENTS(start INTEGER NOT NULL, end INTEGER, eventType INTEGER NOT NULL, text TEXT,"
        "  globalTid INTEGER, textId INTEGER, domainId INTEGER);"
        "INSERT INTO NVTX_EVENTS VALUES (1000, 1700, 59, 'step[0]', 117440521, NULL, 0),"
        "  (1050, 1060, 34, 'a mark', 117440521, NULL, 0),"
        "  (1800, NULL, 59, 'never ends', 117440521, NULL, 0);";
    char path[64];
    CHECK_EQ_INT(make_db(path, sizeof path, sql), 0);
    chmod(path, 0444); /* read-only files load */
    struct stat before, after;
    CHECK_EQ_INT(stat(path, &before), 0);
    teller_store *st = teller_store_create();
    teller_error err;
    teller_error_clear(&err);
    CHECK_EQ_INT(teller_ingest_nsys(st, path, NULL, &err), TELLER_OK);
    CHECK_EQ_INT(teller_tree_build(st, NULL, &err), TELLER_OK);
    CHECK_EQ_INT(stat(path, &after), 0);
    CHECK_EQ_INT(before.st_size, after.st_size);
    CHECK_EQ_INT(before.st_mtime, after.st_mtime);
    /* kernel + NCCL kernel + 2 runtime calls + 1 NVTX range */
    const teller_events *ev = teller_store_events(st);
    CHECK_EQ_INT(ev->n, 5);
    CHECK_EQ_INT(teller_store_num_warnings(st), 6);
    CHECK_EQ_INT(teller_store_num_sources(st), 1);
    CHECK_EQ_INT(teller_store_source_c(st, 0)->pid, 7);
    CHECK_EQ_INT(teller_store_source_c(st, 0)->rank, 0);
    CHECK_EQ_INT(teller_store_source_c(st, 0)->base_ns, 0);
    int kernel_ok = 0, graph_ok = 0, step_ok = 0;
    for (uint32_t i = 0; i < ev->n; i++) {
        const char *nm = teller_store_str(st, ev->name[i]);
        if (!strcmp(nm, "void gemm<float>(int)")) {
            uint32_t p = ev->parent[i];
            const teller_args *a = teller_store_event_args(st, i);
            kernel_ok = p != TELLER_NONE && !strcmp(teller_store_str(st, ev->name[p]), "cudaLaunchKernel") &&
                        ev->flags[i] == TELLER_F_GPU && teller_event_pid(ev, i) == 0 && teller_event_tid(ev, i) == 7 && a && a->grid[0] == 4 &&
                        a->grid[1] == 2 && a->block[0] == 128 && ev->dur_ns[i] == 500 &&
                        ev->parent[p] != TELLER_NONE && ev->layer[ev->parent[p]] == TELLER_LAYER_ENGINE;
        } else if (!strcmp(nm, "cudaGraphLaunch")) {
            graph_ok = (ev->flags[i] & TELLER_F_GRAPH) && (ev->flags[i] & TELLER_F_COMM) &&
                       ev->first_child[i] != TELLER_NONE && (ev->flags[ev->first_child[i]] & TELLER_F_COMM);
        } else if (!strcmp(nm, "step[0]")) {
            step_ok = (ev->flags[i] & TELLER_F_STEP) && ev->layer[i] == TELLER_LAYER_ENGINE;
        }
    }
    CHECK(kernel_ok);
    CHECK(graph_ok);
    CHECK(step_ok);
    CHECK_EQ_INT(teller_store_step_count(st), 1);
    teller_store_free(st);
    chmod(path, 0644);
    unlink(path);
}

static void test_nvtx_only_capture_and_domains(void)
{
    /* no CUDA tables: the NVTX processes become the sources; the NCCL
     * domain (named by its DomainCreate row) is BACKEND and COMM */
    const char *sql =
        "CREATE TABLE StringIds(id INTEGER PRIMARY KEY, value TEXT NOT NULL);"
        "INSERT INTO StringIds VALUES (1,'ncclAllReduce'),(2,'NCCL');"
        "CREATE TABLE NVTX_EVENTS(start INTEGER NOT NULL, end INTEGER, eventType INTEGER NOT NULL, text TEXT,"
        "  globalTid INTEGER, textId INTEGER, domainId INTEGER);"
        "INSERT INTO NVTX_EVENTS VALUES (0, NULL, 75, NULL, 117440521, 2, 3),"
        "  (10, 20, 59, NULL, 117440521, 1, 3),"
        "  (5, 30, 60, 'aten::mm, op_id = 4', 117440521, NULL, 0),"
        "  (1, 40, 59, 'decode', 134217738, NULL, 0),"
        "  (50, 40, 59, 'backwards', 134217738, NULL, 0);";
    char path[64];
    CHECK_EQ_INT(make_db(path, sizeof path, sql), 0);
    teller_store *st = teller_store_create();
    teller_error err;
    teller_error_clear(&err);
    CHECK_EQ_INT(teller_ingest_file(st, path, NULL, &err), TELLER_OK);
    CHECK_EQ_INT(teller_store_num_sources(st), 2);
    CHECK_EQ_INT(teller_store_num_warnings(st), 1);
    CHECK(has_name(st, TELLER_LAYER_BACKEND, "ncclAllReduce"));
    CHECK_EQ_INT(count_flagged(st, TELLER_LAYER_BACKEND, TELLER_F_COMM), 1);
    CHECK(has_name(st, TELLER_LAYER_BACKEND, "aten::mm"));
    CHECK(has_name(st, TELLER_LAYER_ENGINE, "decode"));
    CHECK_EQ_INT(teller_store_events(st)->n, 3);
    teller_store_free(st);
    unlink(path);
}

const test_case nsys_tests[] = {
    {"nsys: every export loads and matches independent counts", test_every_export_matches_independent_counts},
    {"nsys: mfu_2gpu_before has 4010 kernels on 2 devices, 66 NCCL", test_mfu_before_kernels_devices_nccl},
    {"nsys: names as Kineto spells them, host and epoch times", test_names_and_facts},
    {"nsys: two processes become two ranks whose SendRecv kernels match", test_two_processes_two_ranks_collectives},
    {"nsys: a rank override needs a file of one process", test_rank_override_needs_one_process},
    {"nsys: a database without trace tables is a format error", test_database_without_trace_tables_fails},
    {"nsys: a file that is not SQLite fails cleanly", test_non_sqlite_file_fails_cleanly},
    {"nsys: kernel links to its launch; bad rows are skipped with warnings", test_small_export_links_and_skips_bad_rows},
    {"nsys: NVTX-only capture, NCCL domain and aten ranges", test_nvtx_only_capture_and_domains},
    {NULL, NULL},
};
