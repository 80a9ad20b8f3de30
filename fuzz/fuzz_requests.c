/*
 * fuzz_requests.c - libFuzzer target for the request lifecycles: the
 * input is a service log, read by the log reader into the requests
 * builder (teller_req_begin, teller_req_feed), then replayed against a
 * fixed eight-step vLLM trace and finished, as `teller requests` and the
 * diagnosis do. The log is fed in two pieces (split at its first byte's
 * value) from an exact-size heap copy, so that a read past its end is
 * caught. The seeds (fuzz/corpus/requests/) are vLLM request lines in the
 * trace's second, which reach the replay.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "teller/ingest.h"
#include "teller/requests.h"
#include "teller/tree.h"

/* One rank, eight steps of one kernel each, from 2026-10-01 12:17:06 UTC
 * (the seeds' second); vLLM's step annotations with prefills and decodes. */
static teller_store *trace(void)
{
    static const char *const steps[] = {
        "execute_context_2(200)_generation_0(0)", "execute_context_1(99)_generation_2(2)",
        "execute_context_3(2000)_generation_2(2)", "execute_context_1(50)_generation_2(2)",
        "execute_context_0(0)_generation_3(3)",    "execute_context_0(0)_generation_3(3)",
        "execute_context_0(0)_generation_2(2)",    "execute_context_0(0)_generation_1(1)"};
    char json[8192];
    int w = snprintf(json, sizeof json,
                     "{\"distributedInfo\": {\"rank\": 0, \"world_size\": 1}, "
                     "\"baseTimeNanoseconds\": 1790857026000000000, \"traceEvents\": [");
    for (int k = 0; k < 8 && w > 0 && (size_t)w < sizeof json; k++) {
        double t = 1000 + 1100.0 * k;
        w += snprintf(json + w, sizeof json - (size_t)w,
                      "%s{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"%s\", \"pid\": 100, \"tid\": 100, "
                      "\"ts\": %.1f, \"dur\": 1000},"
                      "{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", \"pid\": 100, "
                      "\"tid\": 100, \"ts\": %.1f, \"dur\": 5, \"args\": {\"correlation\": %d}},"
                      "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"gemm_kernel\", \"pid\": 0, \"tid\": 7, "
                      "\"ts\": %.1f, \"dur\": 940, \"args\": {\"correlation\": %d, \"device\": 0, \"stream\": 7}}",
                      k ? "," : "", steps[k], t, t + 20, k + 1, t + 30, k + 1);
    }
    if (w <= 0 || (size_t)w + 3 > sizeof json)
        abort();
    memcpy(json + w, "]}", 3);
    teller_store *st = teller_store_create();
    teller_error err;
    teller_ingest_opts io = teller_ingest_defaults();
    if (!st || teller_ingest_kineto_mem(st, "rank0.json", json, strlen(json), &io, &err) != TELLER_OK ||
        teller_tree_build(st, NULL, &err) != TELLER_OK)
        abort(); /* the harness's own trace must load */
    return st;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static teller_store *st;
    if (!st)
        st = trace();
    const char *logs[] = {"node0.log"};
    teller_req_opts o = teller_req_defaults();
    o.logs = logs;
    o.nlogs = 1;
    teller_req_builder *b = NULL;
    teller_error err;
    if (teller_req_begin(st, &o, &b, &err) != TELLER_OK)
        return 0;
    teller_log_opts lo = teller_req_log_opts(b);
    lo.max_record_bytes = 512;
    teller_log_reader *r = teller_log_reader_create(&lo);
    uint8_t *buf = malloc(size ? size : 1);
    int ok = r && buf;
    if (ok) {
        memcpy(buf, data, size);
        size_t cut = size ? buf[0] % (size + 1) : 0;
        teller_req_set_node(b, 0);
        ok = teller_log_reader_feed(r, buf, cut, teller_req_feed, b, &err) == TELLER_OK &&
             teller_log_reader_feed(r, buf + cut, size - cut, teller_req_feed, b, &err) == TELLER_OK &&
             teller_log_reader_finish(r, teller_req_feed, b, &err) == TELLER_OK;
    }
    teller_log_reader_free(r);
    free(buf);
    const teller_requests *view;
    if (!ok || teller_req_replay(b, &view, &err) != TELLER_OK) {
        teller_req_abort(b);
        return 0;
    }
    teller_requests *R = NULL;
    if (teller_req_finish(b, NULL, &R, &err) == TELLER_OK)
        teller_requests_free(R);
    return 0;
}
