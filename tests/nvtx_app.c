/*
 * nvtx_app.c - a small program that uses the NVTX v3 headers the way
 * engines and NCCL do, for the collector's end-to-end tests and bench.
 * Without NVTX_INJECTION64_PATH every call is a no-op.
 *
 *   nvtx_app basic      nested push/pop, an NCCL-domain range with a
 *                       payload, a registered string, a mark, a start/end
 *                       range that ends on another nesting level, a wide push
 *   nvtx_app loop       "iter N" ranges every millisecond until killed
 *   nvtx_app fork       a range in the parent, one in a forked child
 *   nvtx_app bench N    N push/pop pairs; prints nanoseconds per pair
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <nvtx3/nvToolsExt.h>

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void basic(void)
{
    nvtxRangePushA("step 0");
    nvtxRangePushA("prefill");
    nvtxDomainHandle_t nccl = nvtxDomainCreateA("NCCL");
    nvtxEventAttributes_t a;
    memset(&a, 0, sizeof a);
    a.version = NVTX_VERSION;
    a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    a.messageType = NVTX_MESSAGE_TYPE_ASCII;
    a.message.ascii = "ncclAllReduce";
    a.payloadType = NVTX_PAYLOAD_TYPE_UNSIGNED_INT64;
    a.payload.ullValue = 4096;
    nvtxDomainRangePushEx(nccl, &a);
    nvtxDomainRangePop(nccl);
    nvtxRangePop(); /* prefill */
    nvtxDomainHandle_t eng = nvtxDomainCreateA("engine");
    nvtxStringHandle_t dec = nvtxDomainRegisterStringA(eng, "decode");
    memset(&a, 0, sizeof a);
    a.version = NVTX_VERSION;
    a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
    a.message.registered = dec;
    nvtxRangeId_t r = nvtxRangeStartA("async request 7");
    nvtxDomainRangePushEx(eng, &a);
    nvtxMarkA("checkpoint");
    nvtxDomainRangePop(eng);
    nvtxRangeEnd(r);
    nvtxRangePushW(L"wide \u00e9");
    nvtxRangePop();
    nvtxRangePop(); /* step 0 */
}

static void loop(void)
{
    char name[32];
    for (long i = 0;; i++) {
        snprintf(name, sizeof name, "iter %ld", i);
        nvtxRangePushA(name);
        usleep(1000);
        nvtxRangePop();
    }
}

static void forked(void)
{
    nvtxRangePushA("parent");
    fflush(stdout);
    pid_t p = fork();
    if (p == 0) {
        nvtxRangePushA("child");
        nvtxRangePop();
        exit(0);
    }
    int status = 0;
    if (p > 0)
        waitpid(p, &status, 0);
    nvtxRangePop();
    printf("child %d\n", (int)p);
}

static void bench(long n)
{
    nvtxRangePushA("warm");
    nvtxRangePop();
    double t0 = now_s();
    for (long i = 0; i < n; i++) {
        nvtxRangePushA("bench range");
        nvtxRangePop();
    }
    double t1 = now_s();
    printf("%.2f\n", (t1 - t0) * 1e9 / (double)n);
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "basic";
    if (!strcmp(mode, "basic"))
        basic();
    else if (!strcmp(mode, "loop"))
        loop();
    else if (!strcmp(mode, "fork"))
        forked();
    else if (!strcmp(mode, "bench"))
        bench(argc > 2 ? atol(argv[2]) : 1000000);
    else
        return 2;
    return 0;
}
