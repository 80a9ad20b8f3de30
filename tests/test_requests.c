/*
 * test_requests.c - per-request lifecycle and breakdown (requests.h) on
 * simulated vLLM cases checked against the simulator's truth.json, on
 * hand-made bad logs, on a synthetic store whose step annotations list
 * request ids, and on the real traces (which carry no ids).
 *
 * The diagnosis input here is built from the truth's abnormal steps (the
 * test checks the join of requests with abnormal steps, not the detector).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "ingest/jdom.h"
#include "teller/diagnose.h"
#include "teller/ingest.h"
#include "teller/requests.h"
#include "teller/sim.h"
#include "teller/tree.h"

/* A diagnosis holding the truth's abnormal steps. */
static teller_diagnosis *diag_from_truth(const jv *truth)
{
    const jv *steps = jdom_get(truth, "steps");
    teller_diagnosis *d = calloc(1, sizeof *d);
    d->n = steps ? steps->n : 0;
    d->steps = calloc(d->n ? d->n : 1, sizeof *d->steps);
    for (size_t i = 0; i < d->n; i++) {
        const jv *s = &steps->items[i];
        teller_diag_step *ds = &d->steps[i];
        ds->pred.step = (uint32_t)jdom_num(s, "step", 0);
        ds->pred.abnormal = jdom_bool(s, "abnormal", 0);
        snprintf(ds->fault, sizeof ds->fault, "%s", ds->pred.abnormal ? jdom_str(s, "fault", "") : "");
        ds->excess_ns = (int64_t)jdom_num(s, "excess_ns", 0);
    }
    return d;
}

static void free_diag(teller_diagnosis *d)
{
    free(d->steps);
    free(d);
}

typedef struct figures {
    int truth, found, exact, lat_n, lat_1pct, in_bounds, tp, fp, fn;
    double lat_err_sum, lat_err_max;
    double *errs;
} figures;

/* Simulates one vLLM case, builds its requests and scores them. */
static void score_case(const teller_sim_opts *o, figures *f)
{
    char dir[] = "/tmp/teller_req_XXXXXX";
    teller_error err;
    sim_case(dir, o);
    teller_store *st = load_case_ranks(dir, 0, o->nodes * o->gpus_per_node);
    char truth_path[4200], logs[4][4200];
    snprintf(truth_path, sizeof truth_path, "%s/truth.json", dir);
    jv *truth = jdom_load(truth_path, &err);
    CHECK(truth != NULL);
    if (!truth) {
        teller_store_free(st);
        return;
    }
    const char *lp[4];
    for (int n = 0; n < o->nodes && n < 4; n++) {
        snprintf(logs[n], sizeof logs[n], "%s/logs/node%d.log", dir, n);
        lp[n] = logs[n];
    }
    teller_diagnosis *diag = diag_from_truth(truth);
    teller_req_opts ro = teller_req_defaults();
    ro.logs = lp;
    ro.nlogs = (size_t)(o->nodes < 4 ? o->nodes : 4);
    ro.diag = diag;
    teller_requests *R = NULL;
    CHECK_EQ_INT(teller_requests_build(st, &ro, &R, &err), TELLER_OK);
    CHECK(R && !strcmp(R->source, "logs + batch composition (inferred)"));
    /* truth finish is on the trace: the end of the request's last true step
     * (all ranks), on node 0's clock; truth arrival is true time, moved onto
     * node 0's clock by step 0's start minus the first arrival (the first
     * requests arrive when step 0 is scheduled; error ~ 10-40 us). */
    const jv *treq = jdom_get(truth, "requests");
    double t0 = INFINITY;
    for (size_t i = 0; treq && i < treq->n; i++)
        t0 = fmin(t0, jdom_num(&treq->items[i], "arrival_ns", 0));
    int64_t off = R && R->nsteps ? R->steps[0].start_ns - (int64_t)t0 : 0;
    for (size_t i = 0; R && treq && i < treq->n; i++) {
        const jv *tq = &treq->items[i];
        const jv *ts = jdom_get(tq, "steps");
        f->truth++;
        const teller_request *q = teller_requests_find(R, jdom_str(tq, "id", ""));
        if (!q)
            continue;
        f->found++;
        int same = ts && ts->n == q->nsteps;
        for (size_t k = 0; same && k < ts->n; k++)
            same = (uint32_t)ts->items[k].num == q->steps[k].step;
        f->exact += same;
        int tab = jdom_bool(tq, "abnormal", 0), ab = (q->flags & TELLER_REQF_DELAYED) != 0;
        f->tp += tab && ab;
        f->fp += !tab && ab;
        f->fn += tab && !ab;
        if (!jdom_bool(tq, "finished", 0) || !same || q->latency_ns < 0 || !ts->n)
            continue;
        uint32_t last = (uint32_t)ts->items[ts->n - 1].num;
        int64_t arr = (int64_t)jdom_num(tq, "arrival_ns", 0) + off;
        int64_t tl = R->steps[last].end_ns - arr;
        double e = fabs((double)(q->latency_ns - tl)) / (double)tl;
        f->errs[f->lat_n++] = e;
        f->lat_err_sum += e;
        f->lat_err_max = fmax(f->lat_err_max, e);
        f->lat_1pct += e <= 0.01;
        f->in_bounds += arr >= q->arrival_lo_ns - 100000 && arr <= q->arrival_hi_ns + 100000;
    }
    /* bounds never cross (a captured arrival before the trace began put
     * the lower bound at the trace's start, after it) */
    for (size_t i = 0; i < R->n; i++) {
        const teller_request *q = &R->req[i];
        if (q->arrival_lo_ns != INT64_MIN && q->arrival_hi_ns != INT64_MIN)
            CHECK(q->arrival_lo_ns <= q->arrival_hi_ns);
        /* the parts add up to the latency (each moment counted once) */
        if (q->latency_ns >= 0)
            CHECK_EQ_INT(q->queue_ns + q->prefill_ns + q->decode_ns + q->stall_ns, q->latency_ns);
    }
    teller_requests_free(R);
    free_diag(diag);
    jdom_free(truth);
    teller_store_free(st);
    rm_rf(dir);
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The three vLLM cases of the figures in docs/REQUESTS.md, their log lines
 * bare (whole-second times) or as `teller run` captures them (ns times). */
static void score_vllm_cases(int log_capture, figures *f, double *med, double *p90)
{
    memset(f, 0, sizeof *f);
    f->errs = calloc(4096, sizeof *f->errs);
    teller_sim_opts o = teller_sim_defaults();
    o.engine = "vllm";
    o.faults = ((1u << TELLER_FAULT_COUNT) - 1) & ~1u & ~(1u << TELLER_FAULT_NCCL_HANG);
    o.fault_rate = 0.2;
    o.log_capture = log_capture;
    /* one node, TP 2, long enough for chunked prefill, preemption and many finishes */
    o.nodes = 1, o.gpus_per_node = 2, o.tp = 2, o.pp = 1, o.steps = 300, o.seed = 11;
    score_case(&o, f);
    o.seed = 13;
    score_case(&o, f);
    /* two nodes, TP 4 x PP 2 (clock offsets between nodes) */
    o.nodes = 2, o.gpus_per_node = 4, o.tp = 4, o.pp = 2, o.steps = 120, o.seed = 7;
    score_case(&o, f);
    qsort(f->errs, (size_t)f->lat_n, sizeof *f->errs, cmp_d);
    *med = f->lat_n ? f->errs[f->lat_n / 2] : 1;
    *p90 = f->lat_n ? f->errs[f->lat_n * 9 / 10] : 1;
    double prec = f->tp + f->fp ? (double)f->tp / (f->tp + f->fp) : 1,
           rec = f->tp + f->fn ? (double)f->tp / (f->tp + f->fn) : 1;
    printf("  requests (%s logs): %d/%d found, steps exact %d/%d (%.3f); latency vs truth over %d finished: "
           "median %.4f, mean %.4f, p90 %.4f, max %.4f, within 1%% %.3f, truth arrival inside bounds %d/%d; "
           "delayed-by-fault precision %.3f recall %.3f (diagnosis = truth's abnormal steps)\n",
           log_capture ? "captured" : "bare", f->found, f->truth, f->exact, f->truth,
           f->truth ? (double)f->exact / f->truth : 0, f->lat_n, *med, f->lat_n ? f->lat_err_sum / f->lat_n : 0,
           *p90, f->lat_err_max, f->lat_n ? (double)f->lat_1pct / f->lat_n : 0, f->in_bounds, f->lat_n, prec, rec);
    CHECK(f->truth > 100);
    CHECK_EQ_INT(f->found, f->truth);
    /* the replay is exact on these cases; the floor leaves room for a step
     * that both cuts a chunk and recomputes (docs/REQUESTS.md, Limits) */
    CHECK(f->exact >= f->truth * 95 / 100);
    CHECK(f->lat_n > 50);
    CHECK(f->in_bounds >= f->lat_n * 98 / 100);
    CHECK(prec >= 0.95 && rec >= 0.95);
}

static void test_sim_vllm(void)
{
    figures f;
    double med, p90;
    score_vllm_cases(0, &f, &med, &p90);
    /* arrival is only known to a step period (whole-second log lines), so
     * short requests can miss 1 %: the median must not, and the truth must
     * lie inside the stated bounds */
    CHECK(med <= 0.01);
    free(f.errs);
}

static void test_sim_vllm_captured(void)
{
    figures f;
    double med, p90;
    score_vllm_cases(1, &f, &med, &p90);
    /* a captured line gives the arrival to the ns: latency within 1 % for all but a few */
    CHECK(f.lat_1pct * 100 >= f.lat_n * 99);
    free(f.errs);
}

/* Simulated runs where steps reach the same token total by chance, or
 * recompute past the token budget or as one sequence, with no chunk cut:
 * every request's steps are the truth's (the 2-node case is the reported
 * one: 5 of 39 requests started a step or two early; the single-GPU cases,
 * a queue of requests and preemptions of every size, 25 of 174 and 11 of
 * 132). */
static void test_sim_steps_exact(void)
{
    teller_sim_opts o = teller_sim_defaults();
    o.engine = "vllm";
    o.fault_rate = 0.2;
    o.faults = 1u << TELLER_FAULT_PREEMPTION | 1u << TELLER_FAULT_CPU_CONTENTION;
    o.nodes = 2, o.gpus_per_node = 2, o.tp = 2, o.pp = 2, o.steps = 120, o.seed = 5150;
    figures f[3];
    memset(f, 0, sizeof f);
    for (int i = 0; i < 3; i++)
        f[i].errs = calloc(4096, sizeof *f[i].errs);
    score_case(&o, &f[0]);
    o.faults |= 1u << TELLER_FAULT_KV_SWAP;
    o.fault_rate = 0.3;
    o.nodes = 1, o.gpus_per_node = 1, o.tp = 1, o.pp = 1, o.steps = 300, o.seed = 13;
    score_case(&o, &f[1]);
    o.faults &= ~(1u << TELLER_FAULT_CPU_CONTENTION);
    o.severity = 0.3;
    o.seed = 102;
    score_case(&o, &f[2]);
    for (int i = 0; i < 3; i++) {
        printf("  case %d: steps exact %d/%d\n", i, f[i].exact, f[i].truth);
        CHECK(f[i].truth > 30);
        CHECK_EQ_INT(f[i].exact, f[i].truth);
        free(f[i].errs);
    }
}

/* Writes text to dir/name; returns the path (static per slot). */
static const char *write_file(const char *dir, const char *name, const char *text)
{
    static char paths[4][4200];
    static int slot;
    char *p = paths[slot++ % 4];
    snprintf(p, 4200, "%s/%s", dir, name);
    FILE *f = fopen(p, "w");
    CHECK(f != NULL);
    if (f) {
        fputs(text, f);
        fclose(f);
    }
    return p;
}

static void test_bad_input(void)
{
    char dir[] = "/tmp/teller_reqbad_XXXXXX";
    teller_error err;
    teller_sim_opts o = teller_sim_defaults();
    o.engine = "vllm", o.nodes = 1, o.gpus_per_node = 2, o.tp = 2, o.pp = 1, o.steps = 40, o.seed = 5, o.faults = 0;
    sim_case(dir, &o);
    teller_store *st = load_case_ranks(dir, 0, 2);
    /* the case's own log plus: an id that finishes twice, one that only
     * finishes, one received that the trace never schedules */
    char logp[4200];
    snprintf(logp, sizeof logp, "%s/logs/node0.log", dir);
    FILE *f = fopen(logp, "r");
    CHECK(f != NULL);
    char first[4096] = "";
    if (f) {
        while (fgets(first, sizeof first, f) && !strstr(first, "Received request"))
            ;
        fclose(f);
    }
    /* take the date and time of the case's first request line (vLLM header) */
    const char *info = strstr(first, "INFO ");
    char stamp[32] = "";
    if (info)
        snprintf(stamp, sizeof stamp, "%.14s", info + 5);
    char extra[2048];
    snprintf(extra, sizeof extra,
             "(APIServer pid=1) INFO %s [async_llm.py:418] Finished request cmpl-twice-0.\n"
             "(APIServer pid=1) INFO %s [async_llm.py:418] Finished request cmpl-twice-0.\n"
             "(APIServer pid=1) INFO %s [async_llm.py:418] Finished request cmpl-onlyfin-0.\n",
             stamp, stamp, stamp);
    const char *bad = write_file(dir, "node0_extra.log", extra);
    const char *logs[2] = {logp, bad};
    teller_req_opts ro = teller_req_defaults();
    ro.logs = logs;
    ro.nlogs = 2;
    teller_requests *R = NULL;
    CHECK_EQ_INT(teller_requests_build(st, &ro, &R, &err), TELLER_OK);
    const teller_request *q = R ? teller_requests_find(R, "cmpl-twice-0") : NULL;
    CHECK(q && (q->flags & TELLER_REQF_FINISH_TWICE) && (q->flags & TELLER_REQF_LOG_ONLY) && q->latency_ns == -1);
    q = R ? teller_requests_find(R, "cmpl-onlyfin-0") : NULL;
    CHECK(q && (q->flags & TELLER_REQF_NO_RECEIVE) && q->nsteps == 0 && q->latency_ns == -1);
    /* requests still running at the end of the trace: unfinished, no latency */
    int unfinished = 0;
    for (size_t i = 0; R && i < R->n; i++)
        if (R->req[i].flags & TELLER_REQF_UNFINISHED) {
            unfinished++;
            CHECK(R->req[i].latency_ns == -1 && R->req[i].finish_ns == INT64_MIN);
        }
    CHECK(unfinished > 0);
    int twice_note = 0;
    for (size_t i = 0; R && i < R->nnotes; i++)
        twice_note |= strstr(R->notes[i], "finish twice") != NULL;
    CHECK(twice_note);
    teller_requests_free(R);
    /* logs from a different run: a year earlier, no overlap: listed, not joined */
    const char *other = write_file(dir, "node0_other.log",
                                   "[2020-01-01 10:00:00] noise\n"
                                   "(APIServer pid=1) INFO 01-01 10:00:00 [logger.py:43] Received request cmpl-old-0: "
                                   "params: SamplingParams(max_tokens=5).\n"
                                   "(APIServer pid=1) INFO 01-01 10:00:01 [async_llm.py:418] Finished request cmpl-old-0.\n");
    const char *ologs[1] = {other};
    ro.logs = ologs;
    ro.nlogs = 1;
    ro.log_ref_ns = 1577872800LL * 1000000000LL; /* 2020-01-01 */
    CHECK_EQ_INT(teller_requests_build(st, &ro, &R, &err), TELLER_OK);
    q = R ? teller_requests_find(R, "cmpl-old-0") : NULL;
    CHECK(q && (q->flags & TELLER_REQF_OTHER_RUN) && q->nsteps == 0 && q->latency_ns == -1);
    int other_note = 0;
    for (size_t i = 0; R && i < R->nnotes; i++)
        other_note |= strstr(R->notes[i], "do not overlap") != NULL;
    CHECK(other_note);
    teller_requests_free(R);
    /* a log that does not exist is an I/O error, not a crash */
    const char *missing[1] = {"/nonexistent/node0.log"};
    ro.logs = missing;
    CHECK_EQ_INT(teller_requests_build(st, &ro, &R, &err), TELLER_ERR_IO);
    CHECK(R == NULL);
    teller_store_free(st);
    rm_rf(dir);
}

/* A store whose step annotations list their requests (contrib/teller_nvtx):
 * three steps on two ranks; request a in 0-2, b in 1-2. */
static void test_trace_ids(void)
{
    teller_store *st = teller_store_create();
    for (int r = 0; r < 2; r++) {
        teller_source src;
        memset(&src, 0, sizeof src);
        src.rank = r;
        src.pid = 100 + r;
        src.path = teller_store_intern(st, "mem", 3);
        uint32_t s = teller_store_add_source(st, &src);
        const char *names[3] = {"step[0] reqs=cmpl-a", "step[1] reqs=cmpl-a,cmpl-b", "step[2] reqs=cmpl-a,cmpl-b"};
        for (int k = 0; k < 3; k++) {
            teller_event_row e;
            memset(&e, 0, sizeof e);
            e.start_ns = 1000000000LL + k * 10000000LL;
            e.dur_ns = 8000000;
            e.name = teller_store_intern(st, names[k], strlen(names[k]));
            e.layer = TELLER_LAYER_ENGINE;
            e.source = (uint16_t)s;
            e.pid = e.tid = 100 + r;
            e.args = TELLER_NONE;
            CHECK(teller_store_add_event(st, &e) != TELLER_NONE);
            e.start_ns += 1000000;
            e.dur_ns = 5000000 + r * 1000000;
            e.name = teller_store_intern(st, "aten::mm", 8);
            e.layer = TELLER_LAYER_BACKEND;
            CHECK(teller_store_add_event(st, &e) != TELLER_NONE);
        }
    }
    teller_error err;
    teller_tree_opts to = teller_tree_defaults();
    CHECK_EQ_INT(teller_tree_build(st, &to, &err), TELLER_OK);
    teller_requests *R = NULL;
    CHECK_EQ_INT(teller_requests_build(st, NULL, &R, &err), TELLER_OK);
    CHECK(R && !strcmp(R->source, "trace annotations"));
    const teller_request *a = R ? teller_requests_find(R, "cmpl-a") : NULL;
    const teller_request *b = R ? teller_requests_find(R, "cmpl-b") : NULL;
    CHECK(a && a->nsteps == 3 && (a->flags & TELLER_REQF_STEPS_TRACE));
    CHECK(b && b->nsteps == 2 && b->steps[0].step == 1);
    /* both run to the trace's last step with no finish line: unfinished */
    CHECK(a && (a->flags & TELLER_REQF_UNFINISHED) && a->latency_ns == -1);
    /* shared time kept whole, attributed split by sequences (no token counts) */
    CHECK(b && b->steps[0].shared_ns > 0 && b->steps[0].attributed_ns * 2 <= b->steps[0].shared_ns + 1);
    /* the hot path descends from the marker to its longest child */
    uint32_t path[8];
    size_t n = teller_request_hot_path(st, 1, 1, path, 8);
    CHECK_EQ_INT(n, 2);
    if (n == 2)
        CHECK(!strcmp(teller_store_str(st, teller_store_events(st)->name[path[1]]), "aten::mm"));
    teller_requests_free(R);
    teller_store_free(st);
}

/* The real traces carry step annotations (batch composition) but no ids:
 * read, and said so. */
static void test_real_traces(void)
{
    const char *rel[] = {"tracelens/inference/vllm_decode_full/graph_execution.json.gz",
                         "tracelens/inference/sglang_decode/sglang_Qwen3-8B_decode.json.gz",
                         "tracelens/b200/eager_trace.json.gz"};
    for (size_t i = 0; i < 3; i++) {
        const char *p = shared_path(rel[i]);
        if (access(p, R_OK) != 0) {
            printf("  skipped %s (not present)\n", p);
            continue;
        }
        teller_store *st = teller_store_create();
        teller_error err;
        teller_ingest_opts io = teller_ingest_defaults();
        CHECK_EQ_INT(teller_ingest_file(st, p, &io, &err), TELLER_OK);
        teller_tree_opts to = teller_tree_defaults();
        CHECK_EQ_INT(teller_tree_build(st, &to, &err), TELLER_OK);
        teller_requests *R = NULL;
        CHECK_EQ_INT(teller_requests_build(st, NULL, &R, &err), TELLER_OK);
        CHECK(R && R->n == 0 && !strcmp(R->source, "none"));
        int read = 0, missing = 0;
        for (size_t k = 0; R && k < R->nnotes; k++) {
            read |= strstr(R->notes[k], "batch composition (prefill/decode sequences) for") != NULL;
            missing |= strstr(R->notes[k], "no request ids") != NULL;
        }
        CHECK(read && missing);
        /* the composition of the annotations was parsed */
        CHECK(R && R->nsteps > 0 && R->steps[0].decode_seqs >= 0);
        teller_requests_free(R);
        teller_store_free(st);
    }
}

/* The diagnosis reads the logs once, for itself and the requests: what it
 * carries is what a build of its own against the same steps gives. */
static void test_diagnosis_carries(void)
{
    char dir[] = "/tmp/teller_req_XXXXXX", log[4200];
    teller_sim_opts o = teller_sim_defaults();
    o.engine = "vllm";
    o.faults = 1u << TELLER_FAULT_PREEMPTION | 1u << TELLER_FAULT_KERNEL_REGRESSION;
    o.fault_rate = 0.2;
    o.nodes = 1, o.gpus_per_node = 2, o.tp = 2, o.pp = 1, o.steps = 120, o.seed = 5;
    sim_case(dir, &o);
    teller_store *st = load_case_ranks(dir, 0, 2);
    snprintf(log, sizeof log, "%s/logs/node0.log", dir);
    const char *lp[1] = {log};
    teller_diag_opts dop = teller_diag_defaults();
    dop.logs = lp;
    dop.nlogs = 1;
    teller_diagnosis *d = NULL, *bare = NULL;
    teller_error err;
    CHECK_EQ_INT(teller_diagnose(st, &dop, &d, &err), TELLER_OK);
    teller_requests *R = NULL;
    teller_req_opts ro = teller_req_defaults();
    ro.logs = lp;
    ro.nlogs = 1;
    ro.diag = d;
    CHECK_EQ_INT(teller_requests_build(st, &ro, &R, &err), TELLER_OK);
    const teller_requests *C = d ? d->requests : NULL;
    CHECK(C && R && C->n == R->n && R->n > 20 && !strcmp(C->source, R->source) && C->nnotes == R->nnotes);
    size_t delayed = 0;
    for (size_t i = 0; C && R && i < R->n && i < C->n; i++) {
        const teller_request *a = &C->req[i], *b = &R->req[i];
        CHECK(!strcmp(a->id, b->id) && a->flags == b->flags && a->nsteps == b->nsteps &&
              a->latency_ns == b->latency_ns && a->abnormal_ns == b->abnormal_ns && a->excess_ns == b->excess_ns &&
              !strcmp(a->cause, b->cause));
        delayed += (a->flags & TELLER_REQF_DELAYED) != 0;
        /* a cause names its worst step's own time over its usual, never a
         * sum over steps printed as one step's */
        unsigned k;
        if (d && sscanf(a->cause, "abnormal step %u:", &k) == 1 && k < d->n) {
            char want[64], ex[24];
            snprintf(want, sizeof want, "(+%s over its usual", teller_fmt_dur(ex, sizeof ex, (double)d->steps[k].excess_ns));
            CHECK(strstr(a->cause, want) != NULL);
        }
    }
    CHECK(delayed > 0); /* the breakdown read the diagnosis' abnormal steps */
    for (size_t k = 0; C && R && k < R->nnotes && k < C->nnotes; k++)
        CHECK(!strcmp(C->notes[k], R->notes[k]));
    /* without logs, no requests */
    dop.nlogs = 0;
    CHECK_EQ_INT(teller_diagnose(st, &dop, &bare, &err), TELLER_OK);
    CHECK(bare && !bare->requests);
    teller_diagnosis_free(bare);
    teller_requests_free(R);
    teller_diagnosis_free(d);
    teller_store_free(st);
    rm_rf(dir);
}

/* Builds the requests of a one-rank trace whose steps carry the vLLM
 * annotations names[0..n) (1 ms apart, from 2026-10-01 12:17:06.001) and a
 * node 0 log of log_text. NULL when the build fails. */
static teller_requests *replay_of(const char *const *names, int n, const char *log_text)
{
    char dir[] = "/tmp/teller_req_rp_XXXXXX";
    if (!mkdtemp(dir)) {
        CHECK(0);
        return NULL;
    }
    char path[600], logp[640];
    snprintf(path, sizeof path, "%s/rank0.trace.json", dir);
    snprintf(logp, sizeof logp, "%s/node0.log", dir);
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (f) {
        fputs("{\"distributedInfo\": {\"rank\": 0, \"world_size\": 1}, \"baseTimeNanoseconds\": 1790857026000000000, "
              "\"traceEvents\": [", f);
        for (int k = 0; k < n; k++) {
            double t = 1000 + 1100.0 * k;
            fprintf(f, "%s{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"%s\", \"pid\": 100, \"tid\": 100, "
                       "\"ts\": %.1f, \"dur\": 1000}", k ? ",\n" : "", names[k], t);
            fprintf(f, ",\n{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", \"pid\": 100, "
                       "\"tid\": 100, \"ts\": %.1f, \"dur\": 5, \"args\": {\"correlation\": %d}}", t + 20, k + 1);
            fprintf(f, ",\n{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"gemm_kernel\", \"pid\": 0, \"tid\": 7, "
                       "\"ts\": %.1f, \"dur\": 940, \"args\": {\"correlation\": %d, \"device\": 0, \"stream\": 7}}",
                    t + 30, k + 1);
        }
        fputs("]}\n", f);
        fclose(f);
    }
    FILE *lf = fopen(logp, "w");
    CHECK(lf != NULL);
    if (lf) {
        fputs(log_text, lf);
        fclose(lf);
    }
    teller_requests *R = NULL;
    if (f && lf) {
        teller_store *st = teller_store_create();
        teller_error err;
        teller_error_clear(&err);
        CHECK_EQ_INT(teller_ingest_file(st, path, NULL, &err), TELLER_OK);
        CHECK_EQ_INT(teller_tree_build(st, NULL, &err), TELLER_OK);
        const char *logs[] = {logp};
        teller_req_opts ro = teller_req_defaults();
        ro.logs = logs;
        ro.nlogs = 1;
        CHECK_EQ_INT(teller_requests_build(st, &ro, &R, &err), TELLER_OK);
        teller_store_free(st);
    }
    rm_rf(dir);
    return R;
}

/* Whether request id took part in steps first..last, each once, and no other. */
static int steps_are(const teller_requests *R, const char *id, uint32_t first, uint32_t last)
{
    const teller_request *q = R ? teller_requests_find(R, id) : NULL;
    if (!q || q->nsteps != last - first + 1)
        return 0;
    for (uint32_t i = 0; i < q->nsteps; i++)
        if (q->steps[i].step != first + i)
            return 0;
    return 1;
}

/* Found by review: when a step decodes fewer sequences than the step
 * before, the replay dropped the request with the fewest tokens left (r2,
 * max_tokens 3) although the log said, to the ns, that r1 (max_tokens 100,
 * stopped at end of sequence) had finished before the step began. */
static void test_finished_line_says_who_stopped(void)
{
    static const char *const steps[] = {"execute_context_2(200)_generation_0(0)", "execute_context_0(0)_generation_2(2)",
                                        "execute_context_0(0)_generation_2(2)", "execute_context_0(0)_generation_1(1)",
                                        "execute_context_0(0)_generation_0(0)", "execute_context_0(0)_generation_0(0)"};
    teller_requests *R =
        replay_of(steps, 6,
                  "1790857026000500000 (APIServer pid=1) INFO 10-01 12:17:06 [logger.py:43] Received request cmpl-r1: params: "
                  "SamplingParams(n=1, max_tokens=100), prompt_token_ids: None, lora_request: None.\n"
                  "1790857026000600000 (APIServer pid=1) INFO 10-01 12:17:06 [logger.py:43] Received request cmpl-r2: params: "
                  "SamplingParams(n=1, max_tokens=3), prompt_token_ids: None, lora_request: None.\n"
                  "1790857026004250000 (APIServer pid=1) INFO 10-01 12:17:06 [logger.py:43] Finished request cmpl-r1.\n"
                  "1790857026005350000 (APIServer pid=1) INFO 10-01 12:17:06 [logger.py:43] Finished request cmpl-r2.\n");
    CHECK(steps_are(R, "cmpl-r1", 0, 2)); /* it had finished before step 3 began */
    CHECK(steps_are(R, "cmpl-r2", 0, 3));
    teller_requests_free(R);
}

/* Whole-second vLLM lines of three requests received in the trace's
 * second, each finished after max_tokens decode steps. */
#define RECV(id, max) "(APIServer pid=1) INFO 10-01 12:17:06 [logger.py:43] Received request " id ": params: " \
                      "SamplingParams(n=1, max_tokens=" max "), prompt_token_ids: None, lora_request: None.\n"

/* Steps 0 and 1 each admit one request whole, 100 tokens in all by chance;
 * step 2 recomputes preempted work (three sequences no request accounts
 * for) and r3 arrives after it: the replay took the two totals for the
 * token budget, step 2 (past it) for a cut, and r3 for its chunk, one step
 * early (the simulator's 2-node preemption run, seed 5150: 5 of 39
 * requests). A step whose prefill sequences are all decoders next cut
 * nothing, so no budget lies below its total, and it is no cut either. */
static void test_budget_is_no_coincidence(void)
{
    static const char *const steps[] = {"execute_context_1(100)_generation_0(0)", "execute_context_1(99)_generation_1(1)",
                                        "execute_context_3(2000)_generation_2(2)", "execute_context_1(50)_generation_2(2)",
                                        "execute_context_0(0)_generation_3(3)",    "execute_context_0(0)_generation_3(3)",
                                        "execute_context_0(0)_generation_3(3)",    "execute_context_0(0)_generation_1(1)"};
    teller_requests *R = replay_of(steps, 8, RECV("cmpl-r1", "6") RECV("cmpl-r2", "6") RECV("cmpl-r3", "3"));
    CHECK(steps_are(R, "cmpl-r1", 0, 6));
    CHECK(steps_are(R, "cmpl-r2", 1, 7));
    CHECK(steps_are(R, "cmpl-r3", 3, 6));
    CHECK(R && R->nsteps == 8 && R->steps[2].recompute_seqs == 3 && !R->steps[2].truncated && R->mismatched_steps == 0);
    teller_requests_free(R);
}

/* Step 1 leaves one prefill sequence over and the next step holds a
 * prefill, as a cut chunk would; but its 502 tokens are short of the 3,000
 * step 0 took without cutting, so the budget was not filled: it recomputed
 * one sequence, and r3 starts in step 2 (the replay, knowing no budget,
 * took it for a cut and r3 for its chunk). */
static void test_cut_fills_the_budget(void)
{
    static const char *const steps[] = {"execute_context_2(3000)_generation_0(0)", "execute_context_1(500)_generation_2(2)",
                                        "execute_context_1(50)_generation_2(2)",   "execute_context_0(0)_generation_3(3)",
                                        "execute_context_0(0)_generation_3(3)",    "execute_context_0(0)_generation_3(3)",
                                        "execute_context_0(0)_generation_1(1)"};
    teller_requests *R = replay_of(steps, 7, RECV("cmpl-r1", "5") RECV("cmpl-r2", "6") RECV("cmpl-r3", "3"));
    CHECK(steps_are(R, "cmpl-r1", 0, 5));
    CHECK(steps_are(R, "cmpl-r2", 0, 6));
    CHECK(steps_are(R, "cmpl-r3", 2, 5));
    CHECK(R && R->nsteps == 7 && R->steps[1].recompute_seqs == 1 && !R->steps[1].truncated && R->mismatched_steps == 0);
    teller_requests_free(R);
}

const test_case requests_tests[] = {
    {"requests: a Finished line before a step says who stopped decoding", test_finished_line_says_who_stopped},
    {"requests: two steps reaching one token total by chance are no budget, a recompute past it no cut",
     test_budget_is_no_coincidence},
    {"requests: a cut fills the budget: one sequence over in a step short of a whole one is recomputed",
     test_cut_fills_the_budget},
    {"requests: vllm sim cases: every request found, steps vs truth, latency, delayed by a fault", test_sim_vllm},
    {"requests: vllm sim cases with `teller run`-captured logs: arrival to the ns, latency within 1 %",
     test_sim_vllm_captured},
    {"requests: vllm sim cases with chance totals and recomputation: every request's steps exact", test_sim_steps_exact},
    {"requests: bad logs (finish twice, only finish, unfinished, other run, missing file) reported", test_bad_input},
    {"requests: step annotations listing ids are used, shared and attributed time, hot path", test_trace_ids},
    {"requests: real traces: annotations read, missing request ids said", test_real_traces},
    {"requests: the diagnosis reads the logs once and carries the requests a build against it gives",
     test_diagnosis_carries},
    {NULL, NULL}};
