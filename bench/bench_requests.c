/*
 * bench_requests.c - speed of `teller requests` (requests.h): 10,000
 * requests over 2,000 steps and 16 ranks, on a synthetic store built with
 * the store API and a vLLM request log written to a temporary file. Each
 * step admits 5 requests (one 100-token prefill chunk each) that then
 * decode for 20 steps, so every step holds ~100 sequences.
 * Prints one line of key=value pairs; target: seconds < 5.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "teller/requests.h"
#include "teller/tree.h"

#define RANKS 16
#define STEPS 2000
#define NEW   5
#define TOKS  20

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(void)
{
    const int64_t base = 1767225600LL * 1000000000LL; /* 2026-01-01 00:00:00 UTC */
    const int64_t period = 5000000;                   /* 5 ms per step */
    teller_store *st = teller_store_create();
    if (!st)
        return 1;
    uint32_t mm = teller_store_intern(st, "aten::mm", 8);
    for (int r = 0; r < RANKS; r++) {
        teller_source src;
        memset(&src, 0, sizeof src);
        src.rank = r;
        src.pid = 1000 + r;
        src.path = teller_store_intern(st, "synthetic", 9);
        uint32_t s = teller_store_add_source(st, &src);
        for (int k = 0; k < STEPS; k++) {
            int dec = NEW * (k < TOKS ? k : TOKS);
            char name[96];
            int n = snprintf(name, sizeof name, "execute_context_%d(%d)_generation_%d(%d)", NEW, NEW * 100, dec, dec);
            teller_event_row e;
            memset(&e, 0, sizeof e);
            e.start_ns = base + 500000 + k * period;
            e.dur_ns = period - 400000;
            e.name = teller_store_intern(st, name, (size_t)n);
            e.layer = TELLER_LAYER_ENGINE;
            e.source = (uint16_t)s;
            e.pid = e.tid = 1000 + r;
            e.args = TELLER_NONE;
            teller_store_add_event(st, &e);
            for (int c = 0; c < 2; c++) {
                e.start_ns += 100000;
                e.dur_ns = 1500000;
                e.name = mm;
                e.layer = TELLER_LAYER_BACKEND;
                teller_store_add_event(st, &e);
            }
        }
    }
    teller_error err;
    teller_tree_opts to = teller_tree_defaults();
    if (teller_tree_build(st, &to, &err) != TELLER_OK)
        return 1;
    char path[] = "/tmp/bench_requests_XXXXXX";
    int fd = mkstemp(path);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!f)
        return 1;
    for (int k = 0; k < STEPS; k++)
        for (int j = 0; j < NEW; j++) {
            int64_t t = base + k * period; /* arrives just before step k */
            time_t sec = (time_t)(t / 1000000000LL);
            struct tm tm;
            gmtime_r(&sec, &tm);
            fprintf(f, "(APIServer pid=1) INFO %02d-%02d %02d:%02d:%02d [logger.py:43] Received request cmpl-%08d: "
                       "params: SamplingParams(n=1, max_tokens=%d), prompt_token_ids: None.\n",
                    tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, k * NEW + j, TOKS);
        }
    fclose(f);
    const char *logs[1] = {path};
    teller_req_opts ro = teller_req_defaults();
    ro.logs = logs;
    ro.nlogs = 1;
    teller_requests *R = NULL;
    double t0 = now_s();
    teller_status s = teller_requests_build(st, &ro, &R, &err);
    double t1 = now_s();
    unlink(path);
    if (s != TELLER_OK) {
        fprintf(stderr, "bench_requests: %s\n", err.msg);
        return 1;
    }
    /* check the join: request i was admitted at step i / NEW and ran 1 + TOKS steps (or to the end) */
    size_t exact = 0;
    for (size_t i = 0; i < R->n; i++) {
        const teller_request *q = &R->req[i];
        int id = atoi(q->id + 5), k0 = id / NEW, want = k0 + 1 + TOKS <= STEPS ? 1 + TOKS : STEPS - k0;
        exact += q->nsteps == (uint32_t)want && q->steps[0].step == (uint32_t)k0;
    }
    printf("requests=%zu steps=%zu ranks=%d seconds=%.3f exact=%zu target_seconds=5 verdict=%s\n", R->n, R->nsteps,
           RANKS, t1 - t0, exact, t1 - t0 < 5 ? "PASS" : "FALL_SHORT");
    teller_requests_free(R);
    teller_store_free(st);
    return 0;
}
