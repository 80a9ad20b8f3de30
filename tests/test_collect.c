/*
 * test_collect.c - the collector without a GPU: CUPTI records built by
 * hand and walked with the real libcupti iterator through the converter;
 * the .tlt writer read back through the ingest reader, whole and damaged;
 * NVTX injection end to end with tests/nvtx_app (plain, killed, forked,
 * and under `teller run`); InitializeInjection failing open without a
 * driver. Compiled out when the CUPTI headers are absent.
 */
#include "check.h"

#ifdef TELLER_HAVE_CUPTI
#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <nvtx3/nvToolsExt.h>
#include <zstd.h>

#include "collect/bufpool.h"
#include "collect/convert.h"
#include "collect/tlt_writer.h"
#include "teller/ingest.h"
#include "teller/tree.h"

/* ---- helpers ---- */

static size_t put(uint8_t *buf, size_t off, const void *rec, size_t size)
{
    memcpy(buf + off, rec, size);
    return (off + size + 7) & ~(size_t)7;
}

static uint32_t find_ev(const teller_store *st, const char *name)
{
    const teller_events *ev = teller_store_events(st);
    for (size_t i = 0; i < ev->n; i++)
        if (!strcmp(teller_store_str(st, ev->name[i]), name))
            return (uint32_t)i;
    return TELLER_NONE;
}

static int has_warning(const teller_store *st, const char *part)
{
    for (size_t i = 0; i < teller_store_num_warning_msgs(st); i++)
        if (strstr(teller_store_warning_msg(st, i), part))
            return 1;
    return 0;
}

static char tmpdir_buf[256];
static const char *make_tmpdir(void)
{
    snprintf(tmpdir_buf, sizeof tmpdir_buf, "/tmp/teller_collect_XXXXXX");
    return mkdtemp(tmpdir_buf);
}

/* The .tlt files of a directory (up to max), full paths. */
static int list_tlt(const char *d, char out[][512], int max)
{
    DIR *dir = opendir(d);
    int n = 0;
    if (!dir)
        return 0;
    struct dirent *de;
    while ((de = readdir(dir)) && n < max) {
        size_t l = strlen(de->d_name);
        if (l > 4 && !strcmp(de->d_name + l - 4, ".tlt"))
            snprintf(out[n++], 512, "%s/%s", d, de->d_name);
    }
    closedir(dir);
    return n;
}

/* The bytes of the .tlt files in d. */
static off_t tlt_bytes(const char *d)
{
    char files[8][512];
    off_t sum = 0;
    for (int i = 0, n = list_tlt(d, files, 8); i < n; i++) {
        struct stat sb;
        if (!stat(files[i], &sb))
            sum += sb.st_size;
    }
    return sum;
}

/* Starts argv with extra environment (NAME=VALUE strings); stdout and
 * stderr go to errfile when given. Returns the pid. */
static pid_t spawn(char *const argv[], const char *const env[], const char *errfile)
{
    fflush(NULL);
    pid_t p = fork();
    if (p == 0) {
        for (int i = 0; env && env[i]; i++)
            putenv((char *)env[i]);
        if (errfile) {
            int fd = open(errfile, O_WRONLY | O_CREAT | O_TRUNC, 0644);
            if (fd >= 0) {
                dup2(fd, 1);
                dup2(fd, 2);
                close(fd);
            }
        }
        execv(argv[0], argv);
        _exit(127);
    }
    return p;
}

static int wait_exit(pid_t p)
{
    int status = 0;
    if (waitpid(p, &status, 0) < 0)
        return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* ---- converter ---- */

static void test_converter_reproduces_fields_through_libcupti_iterator(void)
{
    static uint8_t buf[4096] __attribute__((aligned(8)));
    memset(buf, 0, sizeof buf);
    size_t off = 0;

    CUpti_ActivityKernel10 k;
    memset(&k, 0, sizeof k);
    k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
    k.registersPerThread = 40;
    k.start = 1700000000000000100ull;
    k.end = 1700000000000005100ull;
    k.deviceId = 3;
    k.contextId = 9;
    k.streamId = 17;
    k.gridX = 128, k.gridY = 2, k.gridZ = 1;
    k.blockX = 256, k.blockY = 1, k.blockZ = 1;
    k.correlationId = 4242;
    k.name = "ampere_bf16_gemm";
    k.launchType = 0;
    k.graphNodeId = 77;
    off = put(buf, off, &k, sizeof k);

    CUpti_ActivityAPI api;
    memset(&api, 0, sizeof api);
    api.kind = CUPTI_ACTIVITY_KIND_RUNTIME;
    api.cbid = CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000;
    api.start = 1700000000000000000ull;
    api.end = 1700000000000000050ull;
    api.processId = 1234;
    api.threadId = 1240;
    api.correlationId = 4242;
    api.returnValue = 0;
    off = put(buf, off, &api, sizeof api);

    CUpti_ActivityMemcpy6 m;
    memset(&m, 0, sizeof m);
    m.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
    m.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_HTOD;
    m.srcKind = CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE;
    m.dstKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
    m.bytes = 1 << 20;
    m.start = 1700000000000010000ull;
    m.end = 1700000000000020000ull;
    m.deviceId = 3;
    m.contextId = 9;
    m.streamId = 7;
    m.correlationId = 4243;
    m.graphId = 5;
    off = put(buf, off, &m, sizeof m);

    CUpti_ActivityMarker2 mk;
    memset(&mk, 0, sizeof mk);
    mk.kind = CUPTI_ACTIVITY_KIND_MARKER;
    mk.flags = CUPTI_ACTIVITY_FLAG_MARKER_START;
    mk.timestamp = 1700000000000000001ull;
    mk.id = 55;
    mk.objectKind = CUPTI_ACTIVITY_OBJECT_THREAD;
    mk.objectId.pt.processId = 1234;
    mk.objectId.pt.threadId = 1240;
    mk.name = "step 3";
    mk.domain = "vllm";
    off = put(buf, off, &mk, sizeof mk);
    CUpti_ActivityMarker2 mk_end = mk;
    mk_end.flags = CUPTI_ACTIVITY_FLAG_MARKER_END;
    mk_end.timestamp = 1700000000000900000ull;
    mk_end.name = NULL; /* END records carry no name */
    mk_end.domain = NULL;
    off = put(buf, off, &mk_end, sizeof mk_end);

    CUpti_ActivityExternalCorrelation ec;
    memset(&ec, 0, sizeof ec);
    ec.kind = CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION;
    ec.externalKind = CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0;
    ec.externalId = 0x1122334455ull;
    ec.correlationId = 4242;
    off = put(buf, off, &ec, sizeof ec);

    CUpti_ActivitySynchronization2 sy;
    memset(&sy, 0, sizeof sy);
    sy.kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
    sy.type = CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE;
    sy.start = 1700000000000030000ull;
    sy.end = 1700000000000040000ull;
    sy.correlationId = 4250;
    sy.contextId = 9;
    sy.streamId = 17;
    sy.cudaEventId = 3;
    off = put(buf, off, &sy, sizeof sy);

    CUpti_ActivityMemset4 ms;
    memset(&ms, 0, sizeof ms);
    ms.kind = CUPTI_ACTIVITY_KIND_MEMSET;
    ms.value = 0xab;
    ms.bytes = 4096;
    ms.start = 1700000000000050000ull;
    ms.end = 1700000000000050500ull;
    ms.deviceId = 3;
    ms.contextId = 9;
    ms.streamId = 17;
    ms.correlationId = 4251;
    ms.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
    off = put(buf, off, &ms, sizeof ms);

    CUpti_ActivityOverhead3 ov;
    memset(&ov, 0, sizeof ov);
    ov.kind = CUPTI_ACTIVITY_KIND_OVERHEAD;
    ov.overheadKind = CUPTI_ACTIVITY_OVERHEAD_CUPTI_INSTRUMENTATION;
    ov.objectKind = CUPTI_ACTIVITY_OBJECT_THREAD;
    ov.objectId.pt.processId = 1234;
    ov.objectId.pt.threadId = 1241;
    ov.start = 1700000000000060000ull;
    ov.end = 1700000000000070000ull;
    off = put(buf, off, &ov, sizeof ov);

    tlt_strtab strs;
    tlt_strtab_init(&strs);
    tlt_conv *cv = malloc(sizeof *cv);
    tlt_conv_init(cv, &strs);
    tlt_rec out[16];
    int n = 0;
    CUpti_Activity *rec = NULL;
    CUptiResult r;
    while ((r = cuptiActivityGetNextRecord(buf, off, &rec)) == CUPTI_SUCCESS && n < 16) {
        int c = tlt_convert(cv, rec, &out[n]);
        CHECK_EQ_INT(c, 1);
        n += c > 0;
    }
    CHECK_EQ_INT(r, CUPTI_ERROR_MAX_LIMIT_REACHED);
    CHECK_EQ_INT(n, 9);
    if (n != 9)
        goto done;
    const tlt_rec *o = &out[0];
    CHECK_EQ_INT(o->kind, TLT_REC_KERNEL);
    CHECK(!strcmp(tlt_strtab_str(&strs, o->name), "ampere_bf16_gemm"));
    CHECK_EQ_INT(o->start, 1700000000000000100ll);
    CHECK_EQ_INT(o->end, 1700000000000005100ll);
    CHECK_EQ_INT(o->dev, 3);
    CHECK_EQ_INT(o->ctx, 9);
    CHECK_EQ_INT(o->stream, 17);
    CHECK_EQ_INT(o->corr, 4242);
    CHECK_EQ_INT(o->aux, 40);
    CHECK_EQ_INT(o->val, 77);
    CHECK(o->grid[0] == 128 && o->grid[1] == 2 && o->grid[2] == 1);
    CHECK(o->block[0] == 256 && o->block[1] == 1 && o->block[2] == 1);
    o = &out[1];
    CHECK_EQ_INT(o->kind, TLT_REC_RUNTIME);
    CHECK(!strcmp(tlt_strtab_str(&strs, o->name), "cudaLaunchKernel"));
    CHECK_EQ_INT(o->aux, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000);
    CHECK_EQ_INT(o->start, 1700000000000000000ll);
    CHECK_EQ_INT(o->end, 1700000000000000050ll);
    CHECK_EQ_INT(o->dev, 1234);
    CHECK_EQ_INT(o->stream, 1240);
    CHECK_EQ_INT(o->corr, 4242);
    CHECK_EQ_INT(o->val, 0);
    o = &out[2];
    CHECK_EQ_INT(o->kind, TLT_REC_MEMCPY);
    CHECK(!strcmp(tlt_strtab_str(&strs, o->name), "Memcpy HtoD (Pageable -> Device)"));
    CHECK_EQ_INT(o->sub, CUPTI_ACTIVITY_MEMCPY_KIND_HTOD);
    CHECK_EQ_INT(o->aux, CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE << 8 | CUPTI_ACTIVITY_MEMORY_KIND_DEVICE);
    CHECK_EQ_INT(o->val, 1 << 20);
    CHECK_EQ_INT(o->start, 1700000000000010000ll);
    CHECK_EQ_INT(o->end, 1700000000000020000ll);
    CHECK(o->dev == 3 && o->ctx == 9 && o->stream == 7 && o->corr == 4243 && o->grid[0] == 5);
    o = &out[3];
    CHECK_EQ_INT(o->kind, TLT_REC_MARKER);
    CHECK_EQ_INT(o->sub, CUPTI_ACTIVITY_FLAG_MARKER_START);
    CHECK(!strcmp(tlt_strtab_str(&strs, o->name), "step 3"));
    CHECK(!strcmp(tlt_strtab_str(&strs, (uint32_t)o->val), "vllm"));
    CHECK_EQ_INT(o->start, 1700000000000000001ll);
    CHECK(o->ctx == 55 && o->dev == 1234 && o->stream == 1240);
    o = &out[4];
    CHECK_EQ_INT(o->kind, TLT_REC_MARKER);
    CHECK_EQ_INT(o->sub, CUPTI_ACTIVITY_FLAG_MARKER_END);
    CHECK_EQ_INT(o->name, 0);
    CHECK_EQ_INT(o->val, 0);
    CHECK(o->ctx == 55 && o->start == 1700000000000900000ll);
    o = &out[5];
    CHECK_EQ_INT(o->kind, TLT_REC_EXTCORR);
    CHECK_EQ_INT(o->sub, CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0);
    CHECK_EQ_INT(o->val, 0x1122334455ll);
    CHECK_EQ_INT(o->corr, 4242);
    o = &out[6];
    CHECK_EQ_INT(o->kind, TLT_REC_SYNC);
    CHECK(!strcmp(tlt_strtab_str(&strs, o->name), "Stream Sync"));
    CHECK_EQ_INT(o->sub, CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE);
    CHECK(o->start == 1700000000000030000ll && o->end == 1700000000000040000ll);
    CHECK(o->corr == 4250 && o->ctx == 9 && o->stream == 17 && o->grid[0] == 3 && o->dev == TLT_NO_DEVICE);
    o = &out[7];
    CHECK_EQ_INT(o->kind, TLT_REC_MEMSET);
    CHECK(!strcmp(tlt_strtab_str(&strs, o->name), "Memset (Device)"));
    CHECK(o->val == 4096 && o->grid[0] == 0xab && o->aux == CUPTI_ACTIVITY_MEMORY_KIND_DEVICE);
    CHECK(o->dev == 3 && o->ctx == 9 && o->stream == 17 && o->corr == 4251);
    CHECK(o->start == 1700000000000050000ll && o->end == 1700000000000050500ll);
    o = &out[8];
    CHECK_EQ_INT(o->kind, TLT_REC_OVERHEAD);
    CHECK(!strcmp(tlt_strtab_str(&strs, o->name), "CUPTI overhead: instrumentation"));
    CHECK(o->dev == 1234 && o->stream == 1241 && o->aux == CUPTI_ACTIVITY_OBJECT_THREAD);
    CHECK_EQ_INT(o->grid[0], CUPTI_ACTIVITY_OVERHEAD_CUPTI_INSTRUMENTATION);

    /* a kind we do not keep is skipped and counted */
    CUpti_Activity other = {CUPTI_ACTIVITY_KIND_CONTEXT};
    CHECK_EQ_INT(tlt_convert(cv, &other, &out[0]), 0);
    CHECK_EQ_INT(cv->skipped, 1);
done:
    free(cv);
    tlt_strtab_free(&strs);
}

static void test_default_api_selection_keeps_launches_copies_syncs(void)
{
    char name[128];
    CHECK_EQ_INT(tlt_api_name(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000, name,
                              sizeof name), 0);
    CHECK(!strcmp(name, "cudaGraphLaunch"));
    static const char *const yes[] = {"cudaLaunchKernel", "cudaLaunchKernelExC", "cudaGraphLaunch",
                                      "cudaMemcpyAsync", "cudaMemsetAsync", "cudaMalloc", "cudaFreeAsync",
                                      "cudaHostAlloc", "cudaStreamSynchronize", "cudaDeviceSynchronize",
                                      "cudaEventSynchronize", "cudaStreamWaitEvent"};
    static const char *const no[] = {"cudaGetDevice", "cudaEventRecord", "cudaPeekAtLastError",
                                     "cudaStreamIsCapturing", "cudaGetLastError"};
    for (size_t i = 0; i < sizeof yes / sizeof *yes; i++)
        CHECK(tlt_runtime_api_wanted(yes[i]));
    for (size_t i = 0; i < sizeof no / sizeof *no; i++)
        CHECK(!tlt_runtime_api_wanted(no[i]));
    CHECK(tlt_driver_api_wanted("cuLaunchKernel") && tlt_driver_api_wanted("cuLaunchKernelEx") &&
          tlt_driver_api_wanted("cuGraphLaunch") && !tlt_driver_api_wanted("cuMemAlloc"));
    /* every selected runtime id has a name CUPTI knows; a few dozen, not hundreds */
    int sel = 0;
    for (uint32_t id = 1; id < CUPTI_RUNTIME_TRACE_CBID_SIZE; id++)
        if (!tlt_api_name(CUPTI_CB_DOMAIN_RUNTIME_API, id, name, sizeof name) && tlt_runtime_api_wanted(name))
            sel++;
    CHECK(sel > 30 && sel < 200);
}

/* ---- writer and reader ---- */

/* Writes a small trace to a memory file: launch + kernel (ext id), memcpy,
 * sync, an NCCL-domain range under an engine range, a mark; two flushes. */
static uint8_t *write_sample(size_t *len)
{
    char path[] = "/tmp/teller_tlt_XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0)
        return NULL;
    unlink(path);
    tlt_writer w;
    tlt_strtab t;
    tlt_strtab_init(&t);
    tlt_writer_open(&w, fd, 4321, 1000);
    const char *note = "host=node7\npid=4321\nRANK=2\n";
    tlt_writer_chunk(&w, TLT_CHUNK_NOTE, note, strlen(note));
    uint32_t step = tlt_strtab_intern(&t, "step 0", 6), nccl = tlt_strtab_intern(&t, "NCCL", 4),
             ar = tlt_strtab_intern(&t, "ncclAllReduce", 13), launch = tlt_strtab_intern(&t, "cudaLaunchKernel", 16),
             kern = tlt_strtab_intern(&t, "gemm_kernel", 11);
    tlt_rec r[8];
    memset(r, 0, sizeof r);
    r[0] = (tlt_rec){.kind = TLT_REC_RANGE, .name = step, .start = 5000, .end = 90000, .dev = 4321, .stream = 4330};
    r[1] = (tlt_rec){.kind = TLT_REC_RANGE, .name = ar, .start = 6000, .end = 7000, .dev = 4321, .stream = 4330,
                     .ctx = nccl, .val = 4096, .sub = 1, .aux = 1};
    r[2] = (tlt_rec){.kind = TLT_REC_RUNTIME, .name = launch, .start = 8000, .end = 8100, .dev = 4321,
                     .stream = 4330, .corr = 77, .aux = 211};
    r[3] = (tlt_rec){.kind = TLT_REC_EXTCORR, .corr = 77, .val = 999, .sub = 3};
    tlt_writer_strings(&w, &t, 1);
    t.unwritten = t.n;
    tlt_writer_records(&w, r, 4);
    uint32_t cpy = tlt_strtab_intern(&t, "Memcpy HtoD (Pageable -> Device)", 32),
             sync = tlt_strtab_intern(&t, "Stream Sync", 11), mk = tlt_strtab_intern(&t, "checkpoint", 10);
    r[0] = (tlt_rec){.kind = TLT_REC_KERNEL, .name = kern, .start = 9000, .end = 20000, .dev = 1, .stream = 7,
                     .ctx = 3, .corr = 77, .grid = {4, 1, 1}, .block = {128, 1, 1}};
    r[1] = (tlt_rec){.kind = TLT_REC_MEMCPY, .name = cpy, .start = 21000, .end = 22000, .dev = 1, .stream = 7,
                     .ctx = 3, .corr = 78, .val = 65536};
    r[2] = (tlt_rec){.kind = TLT_REC_SYNC, .name = sync, .start = 22000, .end = 23000, .dev = TLT_NO_DEVICE,
                     .stream = 7, .ctx = 3, .corr = 79};
    r[3] = (tlt_rec){.kind = TLT_REC_MARK, .name = mk, .start = 30000, .end = 30000, .dev = 4321, .stream = 4330};
    tlt_writer_strings(&w, &t, t.unwritten);
    t.unwritten = t.n;
    tlt_writer_records(&w, r, 4);
    const char *end = "records=8\ndropped_cupti=0\ndropped_buffer=0\ndropped_ranges=0\n";
    tlt_writer_chunk(&w, TLT_CHUNK_END, end, strlen(end));
    tlt_writer_free(&w);
    tlt_strtab_free(&t);
    off_t sz = lseek(fd, 0, SEEK_END);
    uint8_t *buf = malloc((size_t)sz);
    if (buf && pread(fd, buf, (size_t)sz, 0) != sz) {
        free(buf);
        buf = NULL;
    }
    close(fd);
    *len = (size_t)sz;
    return buf;
}

static void test_tlt_reader_maps_records_like_kineto(void)
{
    size_t len = 0;
    uint8_t *d = write_sample(&len);
    CHECK(d != NULL);
    if (!d)
        return;
    teller_store *st = teller_store_create();
    teller_error err;
    teller_error_clear(&err);
    CHECK_EQ_INT(teller_ingest_tlt_mem(st, "node7-4321.tlt", d, len, NULL, &err), TELLER_OK);
    CHECK_EQ_INT(teller_store_num_warnings(st), 0);
    const teller_events *ev = teller_store_events(st);
    CHECK_EQ_INT(ev->n, 7);
    uint32_t k = find_ev(st, "gemm_kernel"), l = find_ev(st, "cudaLaunchKernel"), ar = find_ev(st, "ncclAllReduce"),
             s = find_ev(st, "step 0"), sy = find_ev(st, "Stream Sync"), cp = find_ev(st, "Memcpy HtoD (Pageable -> Device)"),
             mk = find_ev(st, "checkpoint");
    CHECK(k != TELLER_NONE && l != TELLER_NONE && ar != TELLER_NONE && s != TELLER_NONE && sy != TELLER_NONE &&
          cp != TELLER_NONE && mk != TELLER_NONE);
    if (k == TELLER_NONE || l == TELLER_NONE || ar == TELLER_NONE || s == TELLER_NONE || sy == TELLER_NONE ||
        cp == TELLER_NONE || mk == TELLER_NONE)
        goto out;
    CHECK_EQ_INT(ev->layer[k], TELLER_LAYER_KERNEL);
    CHECK(ev->flags[k] & TELLER_F_GPU);
    CHECK(teller_event_pid(ev, k) == 1 && teller_event_tid(ev, k) == 7 && ev->corr[k] == 77);
    CHECK(ev->start_ns[k] == 9000 && ev->dur_ns[k] == 11000);
    const teller_args *a = teller_store_event_args(st, k);
    CHECK(a && a->grid[0] == 4 && a->block[0] == 128 && a->ext_id == 999 && a->bytes == -1);
    CHECK_EQ_INT(ev->layer[l], TELLER_LAYER_RUNTIME);
    CHECK(!(ev->flags[l] & TELLER_F_GPU) && teller_event_pid(ev, l) == 4321 && teller_event_tid(ev, l) == 4330 && ev->corr[l] == 77);
    CHECK_EQ_INT(ev->layer[ar], TELLER_LAYER_BACKEND);
    CHECK(ev->flags[ar] & TELLER_F_COMM);
    CHECK_EQ_INT(ev->layer[s], TELLER_LAYER_ENGINE);
    CHECK_EQ_INT(ev->layer[sy], TELLER_LAYER_SYNC);
    CHECK(teller_event_pid(ev, sy) == 1 && teller_event_tid(ev, sy) == 7 && (ev->flags[sy] & TELLER_F_GPU)); /* device from its context */
    CHECK_EQ_INT(ev->layer[cp], TELLER_LAYER_MEMCPY);
    a = teller_store_event_args(st, cp);
    CHECK(a && a->bytes == 65536);
    CHECK(ev->flags[mk] & TELLER_F_INSTANT);
    const teller_source *so = teller_store_source_c(st, 0);
    CHECK(so->format == TELLER_FORMAT_TLT && so->pid == 4321 && so->rank == 2);
    CHECK(!strcmp(teller_store_str(st, so->host), "node7"));
    /* the tree hangs the kernel under its launch and the launch under the step range */
    CHECK_EQ_INT(teller_tree_build(st, NULL, &err), TELLER_OK);
    ev = teller_store_events(st);
    k = find_ev(st, "gemm_kernel");
    l = find_ev(st, "cudaLaunchKernel");
    s = find_ev(st, "step 0");
    CHECK_EQ_INT(ev->parent[k], l);
    CHECK_EQ_INT(ev->parent[l], s);
out:
    teller_store_free(st);
    free(d);
}

/* CUPTI's overhead records are the profiler's own work when their kind is
 * the profiler's (an activity buffer request, 7 << 16), not when it is
 * CUDA's own (lazy function loading, 5 << 16). */
static void test_tlt_flags_the_profilers_own_work(void)
{
    char path[] = "/tmp/teller_tlt_XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    if (fd < 0)
        return;
    unlink(path);
    tlt_writer w;
    tlt_strtab t;
    tlt_strtab_init(&t);
    tlt_writer_open(&w, fd, 4321, 1000);
    uint32_t req = tlt_strtab_intern(&t, "CUPTI overhead: activity buffer request", 39),
             lazy = tlt_strtab_intern(&t, "CUPTI overhead: lazy function loading", 37);
    tlt_rec r[2] = {
        {.kind = TLT_REC_OVERHEAD, .name = req, .start = 1000, .end = 5000, .dev = 4321, .stream = 4330, .grid = {7u << 16}},
        {.kind = TLT_REC_OVERHEAD, .name = lazy, .start = 6000, .end = 7000, .dev = 4321, .stream = 4330, .grid = {5u << 16}}};
    tlt_writer_strings(&w, &t, 1);
    tlt_writer_records(&w, r, 2);
    tlt_writer_chunk(&w, TLT_CHUNK_END, "records=2\n", 10);
    tlt_writer_free(&w);
    tlt_strtab_free(&t);
    off_t sz = lseek(fd, 0, SEEK_END);
    uint8_t *buf = sz > 0 ? malloc((size_t)sz) : NULL;
    CHECK(buf && pread(fd, buf, (size_t)sz, 0) == sz);
    close(fd);
    teller_store *st = teller_store_create();
    teller_error err;
    teller_error_clear(&err);
    CHECK_EQ_INT(buf ? teller_ingest_tlt_mem(st, "node7-4321.tlt", buf, (size_t)sz, NULL, &err) : TELLER_ERR_IO, TELLER_OK);
    uint32_t a = find_ev(st, "CUPTI overhead: activity buffer request"), b = find_ev(st, "CUPTI overhead: lazy function loading");
    const teller_events *ev = teller_store_events(st);
    CHECK(a != TELLER_NONE && b != TELLER_NONE);
    if (a != TELLER_NONE && b != TELLER_NONE) {
        CHECK(ev->flags[a] & TELLER_F_PROFILER);
        CHECK(!(ev->flags[b] & TELLER_F_PROFILER));
        CHECK_EQ_INT(ev->layer[a], TELLER_LAYER_OTHER);
    }
    teller_store_free(st);
    free(buf);
}

static void test_tlt_truncated_anywhere_reads_a_prefix(void)
{
    size_t len = 0;
    uint8_t *d = write_sample(&len);
    if (!d) {
        CHECK(0);
        return;
    }
    size_t prev = 0;
    int monotone = 1, bad_status = 0, silent = 0;
    for (size_t cut = 0; cut <= len; cut++) {
        teller_store *st = teller_store_create();
        teller_error err;
        teller_status s = teller_ingest_tlt_mem(st, "cut.tlt", d, cut, NULL, &err);
        size_t n = teller_store_events(st)->n;
        if (cut >= 8 && s != TELLER_OK)
            bad_status++;
        if (n < prev)
            monotone = 0;
        if (cut >= 8 && cut < len && teller_store_num_warnings(st) == 0)
            silent++; /* every cut says what it lost */
        prev = n;
        teller_store_free(st);
    }
    CHECK_EQ_INT(bad_status, 0);
    CHECK(monotone);
    CHECK_EQ_INT(silent, 0);
    CHECK_EQ_INT(prev, 7);
    free(d);
}

static void test_tlt_bad_checksum_and_newer_version(void)
{
    size_t len = 0;
    uint8_t *d = write_sample(&len);
    if (!d) {
        CHECK(0);
        return;
    }
    /* find the second RECORDS chunk and flip a payload byte */
    size_t pos = TLT_HEADER_SIZE, target = 0;
    int recs = 0;
    while (pos + TLT_CHUNK_HEADER <= len) {
        if (tlt_get16(d + pos + 4) == TLT_CHUNK_RECORDS && ++recs == 2)
            target = pos;
        pos += TLT_CHUNK_HEADER + tlt_get32(d + pos + 12);
    }
    CHECK(target != 0);
    d[target + TLT_CHUNK_HEADER + 3] ^= 0x55;
    teller_store *st = teller_store_create();
    teller_error err;
    CHECK_EQ_INT(teller_ingest_tlt_mem(st, "bad.tlt", d, len, NULL, &err), TELLER_OK);
    CHECK_EQ_INT(teller_store_events(st)->n, 3); /* the first flush only */
    CHECK(has_warning(st, "wrong checksum"));
    teller_store_free(st);
    d[target + TLT_CHUNK_HEADER + 3] ^= 0x55;

    /* a newer version: warned, read as far as understood */
    tlt_put16(d + 8, TLT_VERSION + 1);
    st = teller_store_create();
    CHECK_EQ_INT(teller_ingest_tlt_mem(st, "new.tlt", d, len, NULL, &err), TELLER_OK);
    CHECK_EQ_INT(teller_store_events(st)->n, 7);
    CHECK(has_warning(st, "format version"));
    teller_store_free(st);

    /* not a .tlt at all */
    st = teller_store_create();
    CHECK_EQ_INT(teller_ingest_tlt_mem(st, "x.tlt", "hello world", 11, NULL, &err), TELLER_ERR_FORMAT);
    teller_store_free(st);
    free(d);
}

/* All records of a .tlt file in file order (chunks walked by hand, zstd
 * payloads decompressed), or NULL. Assumes an intact file. */
static tlt_rec *read_tlt_records(const char *path, size_t *n)
{
    *n = 0;
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    uint8_t *d = NULL, *raw = NULL;
    tlt_rec *out = NULL;
    size_t len = 0, cap = 0, got;
    uint8_t tmp[65536];
    while ((got = fread(tmp, 1, sizeof tmp, f)) > 0) {
        uint8_t *nd = realloc(d, len + got);
        if (!nd)
            goto fail;
        d = nd;
        memcpy(d + len, tmp, got);
        len += got;
    }
    for (size_t pos = TLT_HEADER_SIZE; pos + TLT_CHUNK_HEADER <= len;) {
        const uint8_t *h = d + pos;
        uint32_t rawlen = tlt_get32(h + 8), stored = tlt_get32(h + 12);
        if (tlt_get32(h) != TLT_CHUNK_MAGIC || pos + TLT_CHUNK_HEADER + stored > len)
            goto fail;
        const uint8_t *body = h + TLT_CHUNK_HEADER;
        if (tlt_get16(h + 4) == TLT_CHUNK_RECORDS) {
            free(raw);
            raw = malloc(rawlen ? rawlen : 1);
            if (!raw)
                goto fail;
            if (tlt_get16(h + 6) & TLT_CHUNK_ZSTD) {
                if (ZSTD_decompress(raw, rawlen, body, stored) != rawlen)
                    goto fail;
            } else {
                memcpy(raw, body, rawlen);
            }
            uint32_t size = tlt_get16(raw), count = tlt_get32(raw + 4);
            if (size < TLT_REC_SIZE || 8 + (size_t)count * size > rawlen)
                goto fail;
            if (*n + count > cap) {
                cap = (*n + count) * 2;
                tlt_rec *no = realloc(out, cap * sizeof *out);
                if (!no)
                    goto fail;
                out = no;
            }
            for (uint32_t i = 0; i < count; i++)
                tlt_rec_unpack(&out[(*n)++], raw + 8 + (size_t)i * size);
        }
        pos += TLT_CHUNK_HEADER + stored;
    }
    fclose(f);
    free(d);
    free(raw);
    return out;
fail:
    fclose(f);
    free(d);
    free(raw);
    free(out);
    *n = 0;
    return NULL;
}

/* ---- NVTX injection end to end ---- */

static teller_store *load_dir(const char *dir, int expect_files)
{
    char files[8][512];
    int n = list_tlt(dir, files, 8);
    CHECK_EQ_INT(n, expect_files);
    teller_store *st = teller_store_create();
    for (int i = 0; i < n; i++) {
        teller_error err;
        teller_error_clear(&err);
        CHECK_EQ_INT(teller_ingest_file(st, files[i], NULL, &err), TELLER_OK);
    }
    return st;
}

static void test_nvtx_injection_end_to_end(void)
{
    const char *dir = make_tmpdir();
    if (!dir) {
        CHECK(0);
        return;
    }
    char env_dir[300];
    snprintf(env_dir, sizeof env_dir, "TELLER_TRACE_DIR=%s", dir);
    const char *env[] = {"NVTX_INJECTION64_PATH=" TELLER_INJECT_LIB, env_dir, NULL};
    char *argv[] = {TELLER_NVTX_APP, "basic", NULL};
    CHECK_EQ_INT(wait_exit(spawn(argv, env, NULL)), 0);
    teller_store *st = load_dir(dir, 1);
    CHECK_EQ_INT(teller_store_num_warnings(st), 0);
    const teller_events *ev = teller_store_events(st);
    uint32_t step = find_ev(st, "step 0"), pre = find_ev(st, "prefill"), ar = find_ev(st, "ncclAllReduce"),
             dec = find_ev(st, "decode"), mk = find_ev(st, "checkpoint"), as = find_ev(st, "async request 7"),
             wide = find_ev(st, "wide \xc3\xa9");
    CHECK(step != TELLER_NONE && pre != TELLER_NONE && ar != TELLER_NONE && dec != TELLER_NONE &&
          mk != TELLER_NONE && as != TELLER_NONE && wide != TELLER_NONE);
    CHECK_EQ_INT(ev->n, 7);
    if (ev->n == 7 && ar != TELLER_NONE && step != TELLER_NONE && mk != TELLER_NONE) {
        CHECK_EQ_INT(ev->layer[ar], TELLER_LAYER_BACKEND);
        CHECK(ev->flags[ar] & TELLER_F_COMM);
        CHECK_EQ_INT(ev->layer[step], TELLER_LAYER_ENGINE);
        CHECK(ev->flags[mk] & TELLER_F_INSTANT);
        CHECK(teller_event_pid(ev, step) == teller_store_source_c(st, 0)->pid && teller_event_tid(ev, step) > 0);
        /* wall-clock ns: within a minute of now */
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        int64_t now = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
        CHECK(ev->start_ns[step] > now - 60000000000ll && ev->start_ns[step] <= now);
        teller_error err;
        CHECK_EQ_INT(teller_tree_build(st, NULL, &err), TELLER_OK);
        ev = teller_store_events(st);
        step = find_ev(st, "step 0");
        pre = find_ev(st, "prefill");
        ar = find_ev(st, "ncclAllReduce");
        dec = find_ev(st, "decode");
        as = find_ev(st, "async request 7");
        CHECK_EQ_INT(ev->parent[pre], step);
        CHECK_EQ_INT(ev->parent[ar], pre);
        CHECK_EQ_INT(ev->parent[dec], as);
        CHECK_EQ_INT(ev->parent[as], step);
        CHECK_EQ_INT(ev->depth[ar], 2);
    }
    teller_store_free(st);
    rm_rf(dir);
}

/* Several threads push and pop at once, each more ranges than one block of
 * the collector's per-thread buffer holds, while the flusher takes
 * partial blocks every few milliseconds and threads exit before the
 * process does. Every range must come back, on its own thread, inside its
 * own thread's outer range. */
#define NVTX_THREADS 8
#define NVTX_ITERS   3000

static void *nvtx_worker(void *arg)
{
    int id = (int)(intptr_t)arg;
    char outer[32], inner[32];
    snprintf(outer, sizeof outer, "outer %d", id);
    snprintf(inner, sizeof inner, "inner %d", id);
    nvtxDomainHandle_t dom = nvtxDomainCreateA("NCCL");
    nvtxEventAttributes_t a;
    memset(&a, 0, sizeof a);
    a.version = NVTX_VERSION;
    a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    a.messageType = NVTX_MESSAGE_TYPE_ASCII;
    a.message.ascii = "ncclAllReduce";
    a.payloadType = NVTX_PAYLOAD_TYPE_UNSIGNED_INT64;
    for (int i = 0; i < NVTX_ITERS; i++) {
        nvtxRangePushA(outer);
        nvtxRangePushA(inner);
        a.payload.ullValue = (uint64_t)id << 32 | (uint64_t)i;
        nvtxDomainRangePushEx(dom, &a);
        nvtxDomainRangePop(dom);
        nvtxRangePop();
        nvtxRangePop();
    }
    return NULL;
}

static void test_nvtx_threads_keep_their_own_nesting(void)
{
    const char *dir = make_tmpdir();
    if (!dir) {
        CHECK(0);
        return;
    }
    fflush(NULL);
    pid_t p = fork();
    if (p == 0) {
        setenv("NVTX_INJECTION64_PATH", TELLER_INJECT_LIB, 1);
        setenv("TELLER_TRACE_DIR", dir, 1);
        setenv("TELLER_FLUSH_MS", "3", 1);
        pthread_t th[NVTX_THREADS];
        int made = 0;
        for (int i = 0; i < NVTX_THREADS; i++)
            made += pthread_create(&th[i], NULL, nvtx_worker, (void *)(intptr_t)i) == 0;
        for (int i = 0; i < made; i++)
            pthread_join(th[i], NULL);
        exit(made == NVTX_THREADS ? 0 : 3); /* atexit: the last records and END */
    }
    CHECK_EQ_INT(wait_exit(p), 0);
    teller_store *st = load_dir(dir, 1);
    CHECK_EQ_INT(teller_store_num_warnings(st), 0);
    teller_error err;
    CHECK_EQ_INT(teller_tree_build(st, NULL, &err), TELLER_OK);
    const teller_events *ev = teller_store_events(st);
    CHECK_EQ_INT(ev->n, (size_t)NVTX_THREADS * NVTX_ITERS * 3);
    int outer_tid[NVTX_THREADS], counts[NVTX_THREADS][2], nccl = 0;
    memset(counts, 0, sizeof counts);
    for (int i = 0; i < NVTX_THREADS; i++)
        outer_tid[i] = -1;
    int bad_parent = 0, bad_depth = 0, bad_tid = 0;
    for (size_t i = 0; i < ev->n; i++) {
        const char *name = teller_store_str(st, ev->name[i]);
        uint32_t par = ev->parent[i];
        int id = -1;
        char want[32];
        if (!strcmp(name, "ncclAllReduce")) { /* under an inner range of its own thread */
            nccl++;
            if (par == TELLER_NONE || strncmp(teller_store_str(st, ev->name[par]), "inner ", 6) ||
                teller_event_tid(ev, par) != teller_event_tid(ev, i))
                bad_parent++;
            if (ev->depth[i] != 2)
                bad_depth++;
        } else if (sscanf(name, "outer %d", &id) == 1 && id >= 0 && id < NVTX_THREADS) {
            counts[id][0]++;
            if (outer_tid[id] < 0)
                outer_tid[id] = teller_event_tid(ev, i);
            if (outer_tid[id] != teller_event_tid(ev, i))
                bad_tid++;
            if (par != TELLER_NONE || ev->depth[i] != 0)
                bad_depth++;
        } else if (sscanf(name, "inner %d", &id) == 1 && id >= 0 && id < NVTX_THREADS) {
            counts[id][1]++;
            snprintf(want, sizeof want, "outer %d", id);
            if (par == TELLER_NONE || strcmp(teller_store_str(st, ev->name[par]), want) || teller_event_tid(ev, par) != teller_event_tid(ev, i))
                bad_parent++;
            if (ev->depth[i] != 1)
                bad_depth++;
        }
    }
    CHECK_EQ_INT(nccl, NVTX_THREADS * NVTX_ITERS);
    for (int i = 0; i < NVTX_THREADS; i++) {
        CHECK_EQ_INT(counts[i][0], NVTX_ITERS);
        CHECK_EQ_INT(counts[i][1], NVTX_ITERS);
        for (int j = i + 1; j < NVTX_THREADS; j++)
            CHECK(outer_tid[i] != outer_tid[j]); /* one row per thread */
    }
    CHECK_EQ_INT(bad_parent, 0);
    CHECK_EQ_INT(bad_depth, 0);
    CHECK_EQ_INT(bad_tid, 0);
    teller_store_free(st);

    /* The records themselves: every NCCL range kept its 64-bit payload and
     * type, and one thread's records are in the order it made them. */
    char files[1][512];
    size_t nrec = 0;
    tlt_rec *recs = list_tlt(dir, files, 1) == 1 ? read_tlt_records(files[0], &nrec) : NULL;
    CHECK(recs != NULL);
    int next[NVTX_THREADS] = {0}, bad_payload = 0, bad_order = 0, bad_row = 0;
    uint32_t row[NVTX_THREADS] = {0};
    for (size_t i = 0; recs && i < nrec; i++) {
        const tlt_rec *r = &recs[i];
        if (r->kind != TLT_REC_RANGE || !r->ctx)
            continue;
        uint64_t id = r->val >> 32, it = r->val & 0xffffffffu;
        if (r->sub != NVTX_PAYLOAD_TYPE_UNSIGNED_INT64 || id >= NVTX_THREADS || r->aux != 2) {
            bad_payload++;
            continue;
        }
        if ((int)it != next[id]++)
            bad_order++;
        if (!row[id])
            row[id] = r->stream;
        if (row[id] != r->stream)
            bad_row++;
    }
    for (int i = 0; i < NVTX_THREADS; i++)
        CHECK_EQ_INT(next[i], NVTX_ITERS);
    CHECK_EQ_INT(bad_payload, 0);
    CHECK_EQ_INT(bad_order, 0);
    CHECK_EQ_INT(bad_row, 0);
    free(recs);
    rm_rf(dir);
}

static void test_sigkill_loses_at_most_the_last_flush(void)
{
    const char *dir = make_tmpdir();
    if (!dir) {
        CHECK(0);
        return;
    }
    char env_dir[300];
    snprintf(env_dir, sizeof env_dir, "TELLER_TRACE_DIR=%s", dir);
    const char *env[] = {"NVTX_INJECTION64_PATH=" TELLER_INJECT_LIB, env_dir, "TELLER_FLUSH_MS=50", NULL};
    char *argv[] = {TELLER_NVTX_APP, "loop", NULL};
    pid_t p = spawn(argv, env, NULL);
    /* killed once its file has grown over three flushes, however slowly
     * the machine runs it (a loaded machine under ASan is slow to start) */
    off_t last = 0;
    int grew = 0;
    for (int t = 0; t < 600 && grew < 3; t++) {
        struct timespec ts = {0, 50 * 1000000L};
        nanosleep(&ts, NULL);
        off_t now = tlt_bytes(dir);
        grew += now > last;
        last = now;
    }
    kill(p, SIGKILL);
    CHECK_EQ_INT(wait_exit(p), 128 + SIGKILL);
    teller_store *st = load_dir(dir, 1);
    const teller_events *ev = teller_store_events(st);
    /* iterations 0..n-1, each whole and in order: a prefix of what ran */
    CHECK(ev->n >= 3); /* one iteration a millisecond; flushed every 50 ms */
    int prefix = 1;
    for (size_t i = 0; i < ev->n; i++) {
        char want[32];
        snprintf(want, sizeof want, "iter %zu", i);
        if (strcmp(teller_store_str(st, ev->name[i]), want))
            prefix = 0;
    }
    CHECK(prefix);
    CHECK(has_warning(st, "did not exit cleanly"));
    teller_store_free(st);
    rm_rf(dir);
}

static void test_fork_child_writes_its_own_file(void)
{
    const char *dir = make_tmpdir();
    if (!dir) {
        CHECK(0);
        return;
    }
    char env_dir[300], out[320];
    snprintf(env_dir, sizeof env_dir, "TELLER_TRACE_DIR=%s", dir);
    snprintf(out, sizeof out, "%s/out.txt", dir);
    const char *env[] = {"NVTX_INJECTION64_PATH=" TELLER_INJECT_LIB, env_dir, NULL};
    char *argv[] = {TELLER_NVTX_APP, "fork", NULL};
    CHECK_EQ_INT(wait_exit(spawn(argv, env, out)), 0);
    char files[8][512];
    int n = list_tlt(dir, files, 8);
    CHECK_EQ_INT(n, 2);
    int parents = 0, children = 0;
    for (int i = 0; i < n; i++) {
        teller_store *st = teller_store_create();
        teller_error err;
        CHECK_EQ_INT(teller_ingest_file(st, files[i], NULL, &err), TELLER_OK);
        CHECK_EQ_INT(teller_store_num_warnings(st), 0);
        const teller_events *ev = teller_store_events(st);
        if (ev->n == 1 && !strcmp(teller_store_str(st, ev->name[0]), "parent"))
            parents++;
        if (ev->n == 1 && !strcmp(teller_store_str(st, ev->name[0]), "child"))
            children++;
        CHECK_EQ_INT(teller_event_pid(ev, 0), teller_store_source_c(st, 0)->pid);
        teller_store_free(st);
    }
    CHECK(parents == 1 && children == 1);
    rm_rf(dir);
}

/* Without a driver CUPTI cannot enable activity: the collector must say so
 * once and leave the process alone. */
static void test_cupti_without_driver_fails_open(void)
{
    const char *dir = make_tmpdir();
    if (!dir) {
        CHECK(0);
        return;
    }
    char errf[320];
    snprintf(errf, sizeof errf, "%s/stderr.txt", dir);
    fflush(NULL);
    pid_t p = fork();
    if (p == 0) {
        int fd = open(errf, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        dup2(fd, 2);
        setenv("TELLER_TRACE_DIR", dir, 1);
        void *h = dlopen(TELLER_INJECT_LIB, RTLD_NOW | RTLD_LOCAL);
        int (*init)(void) = NULL;
        void *sym = h ? dlsym(h, "InitializeInjection") : NULL;
        memcpy(&init, &sym, sizeof init < sizeof sym ? sizeof init : sizeof sym); /* POSIX dlsym idiom */
        if (init && init() == 1)
            exit(0); /* atexit: the collector writes its note and closes the file */
        _exit(3);
    }
    CHECK_EQ_INT(wait_exit(p), 0);
    FILE *f = fopen(errf, "r");
    char line[512] = {0};
    int lines = 0;
    while (f && fgets(line, sizeof line, f))
        if (strstr(line, "teller: collector disabled"))
            lines++;
    if (f)
        fclose(f);
    CHECK_EQ_INT(lines, 1);
    teller_store *st = load_dir(dir, 1);
    CHECK(has_warning(st, "the collector stopped: CUPTI"));
    teller_store_free(st);
    rm_rf(dir);
}

/* Pages of b (its whole pages) that are not resident. */
static size_t pages_out(void *b, size_t size)
{
    size_t pg = (size_t)sysconf(_SC_PAGESIZE);
    uintptr_t lo = ((uintptr_t)b + pg - 1) / pg * pg, hi = ((uintptr_t)b + size) / pg * pg;
    size_t n = (hi - lo) / pg, out = 0;
    unsigned char *v = malloc(n ? n : 1);
    if (!v || mincore((void *)lo, hi - lo, v)) {
        free(v);
        return (size_t)-1;
    }
    for (size_t i = 0; i < n; i++)
        out += !(v[i] & 1);
    free(v);
    return out;
}

/* CUPTI asks for its buffers in the application's API calls: one of fresh
 * pages cost a launch 4.4-5.5 ms on an H200 VM (docs/COLLECTOR.md). The
 * pool's buffers are resident, are reused, and it keeps a bounded number. */
static void test_cupti_buffers_come_resident_and_are_reused(void)
{
    bufpool P = BUFPOOL_INIT;
    P.size = (size_t)4 << 20;
    CHECK_EQ_INT(bufpool_fill(&P, 2), 0);
    CHECK_EQ_INT(P.n, 2);
    void *b = bufpool_take(&P);
    CHECK(b != NULL);
    CHECK_EQ_INT(P.n, 1);
    CHECK_EQ_INT(pages_out(b, P.size), 0);
    bufpool_put(&P, b);
    CHECK(bufpool_take(&P) == b); /* the one given back is the next one taken */
    void *fresh[BUFPOOL_MAX + 2] = {b};
    for (size_t i = 1; i < BUFPOOL_MAX + 2; i++) {
        fresh[i] = bufpool_take(&P); /* the pool's one, then new ones */
        CHECK(fresh[i] != NULL);
        CHECK_EQ_INT(pages_out(fresh[i], P.size), 0);
    }
    CHECK_EQ_INT(P.n, 0);
    for (size_t i = 0; i < BUFPOOL_MAX + 2; i++)
        bufpool_put(&P, fresh[i]); /* the last two are freed */
    CHECK_EQ_INT(P.n, BUFPOOL_MAX);
    CHECK_EQ_INT(bufpool_fill(&P, BUFPOOL_MAX + 5), 0);
    CHECK_EQ_INT(P.n, BUFPOOL_MAX);
    bufpool_free(&P);
    CHECK_EQ_INT(P.n, 0);
    bufpool_put(&P, NULL);
    CHECK_EQ_INT(P.n, 0);
}

static void test_teller_run_captures_logs_manifest_and_exit_code(void)
{
    const char *dir = make_tmpdir();
    if (!dir) {
        CHECK(0);
        return;
    }
    char out[300], log[320];
    snprintf(out, sizeof out, "%s/run", dir);
    snprintf(log, sizeof log, "%s/term.txt", dir);
    char *argv[] = {TELLER_CLI, "run", "-o", out, "--", TELLER_NVTX_APP, "fork", NULL};
    CHECK_EQ_INT(wait_exit(spawn(argv, NULL, log)), 0);
    char tr[320];
    snprintf(tr, sizeof tr, "%s/traces", out);
    teller_store *st = load_dir(tr, 2);
    CHECK(find_ev(st, "parent") != TELLER_NONE && find_ev(st, "child") != TELLER_NONE);
    teller_store_free(st);
    char p[400];
    snprintf(p, sizeof p, "%s/manifest.json", out);
    FILE *f = fopen(p, "r");
    CHECK(f != NULL);
    if (f) {
        char buf[8192] = {0};
        size_t n = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        CHECK(n > 0 && strstr(buf, "\"host\"") && strstr(buf, "\"command\"") && strstr(buf, "nvtx_app") &&
              strstr(buf, "\"gpus\""));
    }
    snprintf(p, sizeof p, "%s/logs/stdout.log", out);
    f = fopen(p, "r");
    CHECK(f != NULL);
    if (f) {
        char line[256] = {0};
        CHECK(fgets(line, sizeof line, f) != NULL);
        /* "<19-digit epoch ns> child <pid>" */
        char *end;
        long long ns = strtoll(line, &end, 10);
        CHECK(ns > 1600000000000000000ll && !strncmp(end, " child ", 7));
        fclose(f);
    }
    /* the terminal still got the line, and then what was written */
    f = fopen(log, "r");
    if (f) {
        char line[256] = {0}, all[2048] = {0};
        CHECK(fgets(line, sizeof line, f) && !strncmp(line, "child ", 6));
        rewind(f);
        CHECK(fread(all, 1, sizeof all - 1, f) > 0);
        CHECK(strstr(all, ": 2 trace files,") && strstr(all, "next: teller diagnose"));
        fclose(f);
    }
    /* the exit code is the command's */
    char *argv2[] = {TELLER_CLI, "run", "-o", out, "--", TELLER_NVTX_APP, "no-such-mode", NULL};
    CHECK_EQ_INT(wait_exit(spawn(argv2, NULL, log)), 2);
    rm_rf(dir);
}

const test_case collect_tests[] = {
    {"collect: converter reproduces every field through the libcupti iterator",
     test_converter_reproduces_fields_through_libcupti_iterator},
    {"collect: default API selection keeps launches, copies, allocations, syncs",
     test_default_api_selection_keeps_launches_copies_syncs},
    {"collect: tlt reader maps records like the Kineto reader", test_tlt_reader_maps_records_like_kineto},
    {"collect: tlt reader flags the profiler's own overhead, not CUDA's", test_tlt_flags_the_profilers_own_work},
    {"collect: tlt truncated anywhere reads a prefix and says so", test_tlt_truncated_anywhere_reads_a_prefix},
    {"collect: tlt bad checksum skips a chunk, newer version warns", test_tlt_bad_checksum_and_newer_version},
    {"collect: NVTX injection end to end (ranges, domains, nesting)", test_nvtx_injection_end_to_end},
    {"collect: NVTX from many threads at once keeps each thread's ranges and nesting",
     test_nvtx_threads_keep_their_own_nesting},
    {"collect: SIGKILL loses at most the last flush", test_sigkill_loses_at_most_the_last_flush},
    {"collect: fork child writes its own file", test_fork_child_writes_its_own_file},
    {"collect: CUPTI buffers come resident from a bounded pool and are reused",
     test_cupti_buffers_come_resident_and_are_reused},
    {"collect: CUPTI without a driver fails open, once", test_cupti_without_driver_fails_open},
    {"collect: teller run captures logs, manifest and exit code",
     test_teller_run_captures_logs_manifest_and_exit_code},
    {NULL, NULL}};

#else
const test_case collect_tests[] = {{NULL, NULL}};
#endif
