/*
 * bench_collect.c - what the collector costs, as far as a CPU can measure:
 *   1. an NVTX push/pop pair in tests/nvtx_app with libteller_inject.so
 *      injected versus without (NVTX's no-op stubs), in ns and as a ratio;
 *   2. converting one CUPTI record (libcupti iterator + tlt_convert into a
 *      batch, as the buffer-completed callback does), ns per record;
 *   3. writing it (pack, zstd, checksum, write to /dev/null), ns per record.
 * Usage: bench_collect [PAIRS] (default 2,000,000). Prints one line per
 * number; bench/run.sh calls it.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "collect/convert.h"
#include "collect/tlt_writer.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Runs nvtx_app bench PAIRS, optionally injected; its ns per pair, or -1. */
static double nvtx_pair_ns(long pairs, const char *dir)
{
    int p[2];
    if (pipe(p))
        return -1;
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        dup2(p[1], 1);
        close(p[0]);
        close(p[1]);
        if (dir) {
            setenv("NVTX_INJECTION64_PATH", TELLER_INJECT_LIB, 1);
            setenv("TELLER_TRACE_DIR", dir, 1);
        } else {
            unsetenv("NVTX_INJECTION64_PATH");
        }
        char n[32];
        snprintf(n, sizeof n, "%ld", pairs);
        execl(TELLER_NVTX_APP, TELLER_NVTX_APP, "bench", n, (char *)NULL);
        _exit(127);
    }
    close(p[1]);
    char buf[64] = {0};
    ssize_t k = read(p[0], buf, sizeof buf - 1);
    close(p[0]);
    int st = 0;
    waitpid(pid, &st, 0);
    return k > 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0 ? atof(buf) : -1;
}

static double best_of(int runs, long pairs, const char *dir)
{
    double best = -1;
    for (int i = 0; i < runs; i++) {
        double v = nvtx_pair_ns(pairs, dir);
        if (v >= 0 && (best < 0 || v < best))
            best = v;
    }
    return best;
}

int main(int argc, char **argv)
{
    long pairs = argc > 1 ? atol(argv[1]) : 2000000;
    char dir[] = "/tmp/teller_bench_XXXXXX";
    if (!mkdtemp(dir))
        return 1;
    double base = best_of(3, pairs, NULL), inj = best_of(3, pairs, dir);
    printf("nvtx push/pop pair: %.1f ns without injection, %.1f ns with libteller_inject.so (+%.1f ns, ratio %.1fx)\n",
           base, inj, inj - base, base > 0 ? inj / base : 0.0);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "bench_collect: could not remove %s\n", dir);

    /* a buffer of launch + kernel pairs, as a decode step produces */
    const size_t nrec = 200000;
    size_t cap = nrec * (sizeof(CUpti_ActivityKernel10) + 16);
    uint8_t *buf = aligned_alloc(8, (cap + 7) & ~(size_t)7);
    if (!buf)
        return 1;
    static const char *const names[] = {"ampere_bf16_s16816gemm_bf16_128x128", "flash_fwd_kernel",
                                        "rms_norm_kernel", "ncclDevKernel_AllReduce_Sum_bf16_RING_LL"};
    size_t off = 0;
    for (size_t i = 0; i < nrec; i += 2) {
        CUpti_ActivityAPI a;
        memset(&a, 0, sizeof a);
        a.kind = CUPTI_ACTIVITY_KIND_RUNTIME;
        a.cbid = CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000;
        a.start = 1700000000000000000ull + i * 1000;
        a.end = a.start + 500;
        a.processId = 100;
        a.threadId = 101;
        a.correlationId = (uint32_t)i;
        memcpy(buf + off, &a, sizeof a);
        off = (off + sizeof a + 7) & ~(size_t)7;
        CUpti_ActivityKernel10 k;
        memset(&k, 0, sizeof k);
        k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
        k.start = a.start + 2000;
        k.end = k.start + 3000;
        k.streamId = 7;
        k.correlationId = (uint32_t)i;
        k.gridX = k.gridY = k.gridZ = 1;
        k.blockX = 128;
        k.name = names[(i / 2) % 4];
        memcpy(buf + off, &k, sizeof k);
        off = (off + sizeof k + 7) & ~(size_t)7;
    }
    tlt_strtab strs;
    tlt_strtab_init(&strs);
    tlt_conv *cv = malloc(sizeof *cv);
    tlt_conv_init(cv, &strs);
    tlt_batch b = {0};
    double best = 1e9;
    for (int run = 0; run < 5; run++) {
        b.n = 0;
        double t0 = now_s();
        CUpti_Activity *rec = NULL;
        while (cuptiActivityGetNextRecord(buf, off, &rec) == CUPTI_SUCCESS) {
            tlt_rec *o = tlt_batch_add(&b, SIZE_MAX);
            if (!o || tlt_convert(cv, rec, o) <= 0)
                return 1;
        }
        double dt = (now_s() - t0) * 1e9 / (double)nrec;
        if (dt < best)
            best = dt;
    }
    printf("CUPTI record conversion: %.1f ns per record (libcupti iterator + convert, %zu records)\n", best, b.n);

    int fd = open("/dev/null", O_WRONLY);
    tlt_writer w;
    best = 1e9;
    for (int run = 0; run < 5; run++) {
        double t0 = now_s();
        if (tlt_writer_open(&w, fd, 1, 0) || tlt_writer_strings(&w, &strs, 1) || tlt_writer_records(&w, b.recs, b.n))
            return 1;
        double dt = (now_s() - t0) * 1e9 / (double)b.n;
        if (dt < best)
            best = dt;
        tlt_writer_free(&w);
    }
    printf("tlt write: %.1f ns per record (pack + zstd level 1 + crc32 + write)\n", best);
    close(fd);
    free(b.recs);
    free(cv);
    tlt_strtab_free(&strs);
    free(buf);
    return 0;
}
