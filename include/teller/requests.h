/*
 * requests.h - per-request lifecycle, call-chain trees and latency
 * breakdown over a tree-built store and the run's service logs
 * (`teller requests`).
 *
 * A request spans many steps and a step serves many requests, so this is a
 * join. Sources, in order of precedence (docs/REQUESTS.md):
 *   1. step annotations that list their request ids (`step[N] reqs=a,b`,
 *      contrib/teller_nvtx): the steps of a request are then observed;
 *   2. the engines' request log lines (vLLM `Received request`, `Added
 *      request`, `Finished request`, `Aborted request`): ids, arrival (to
 *      the second; to the ns in a log `teller run` captured), max_tokens,
 *      finish (likewise);
 *   3. each step's batch composition from its annotation (vLLM
 *      `execute_context_<n>(<tok>)_generation_<n>(<n>)`, SGLang
 *      `step[DECODE bs=N]`): with 2, the steps of each request are inferred
 *      by replaying first-come-first-served continuous batching.
 * Which fields were inferred is said per request in `flags`.
 *
 * The result owns all its memory (teller_requests_free); strings live as
 * long as the result. Library code: nothing is printed.
 */
#ifndef TELLER_REQUESTS_H
#define TELLER_REQUESTS_H

#include <stddef.h>
#include <stdint.h>

#include "teller/diagnose.h"
#include "teller/error.h"
#include "teller/logs.h"
#include "teller/store.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Request flags: where a field came from, and what is wrong with it. */
enum {
    TELLER_REQF_STEPS_TRACE     = 1u << 0,  /* steps listed by trace annotations (observed) */
    TELLER_REQF_STEPS_INFERRED  = 1u << 1,  /* steps inferred from logs + batch composition */
    TELLER_REQF_ARRIVAL_LOG     = 1u << 2,  /* arrival bounded by a log line (whole seconds, or ns when captured) */
    TELLER_REQF_ARRIVAL_INFERRED= 1u << 3,  /* arrival narrowed/placed by the step timeline */
    TELLER_REQF_UNFINISHED      = 1u << 4,  /* no finish seen before the trace ends */
    TELLER_REQF_FINISH_TWICE    = 1u << 5,  /* two or more finish lines for the id */
    TELLER_REQF_LOG_ONLY        = 1u << 6,  /* in the logs but in no step of the trace */
    TELLER_REQF_NO_RECEIVE      = 1u << 7,  /* finish/abort line without a received/added line */
    TELLER_REQF_ABORTED         = 1u << 8,
    TELLER_REQF_OTHER_RUN       = 1u << 9,  /* its log lines lie outside the trace's time span */
    TELLER_REQF_FINISH_MISMATCH = 1u << 10, /* the Finished line disagrees with the steps (> 1 s) */
    TELLER_REQF_RECOMPUTE       = 1u << 11, /* took part in a step that recomputed preempted work */
    TELLER_REQF_DELAYED         = 1u << 12  /* spent time inside a step diagnosed abnormal */
};

/* One step a request took part in. */
typedef struct teller_req_step {
    uint32_t step;
    uint8_t  prefill;       /* 1: a prefill chunk of this request, 0: one decode token */
    int32_t  tokens;        /* its tokens in the step (prefill split evenly when inferred), -1 unknown */
    double   share;         /* tokens / the step's tokens: its part of the shared time */
    int64_t  shared_ns;     /* the step's window (earliest rank's start to last rank's end) */
    int64_t  attributed_ns; /* share * shared_ns */
} teller_req_step;

typedef struct teller_request {
    const char      *id;
    uint32_t         flags;         /* TELLER_REQF_* */
    int64_t          arrival_ns;    /* node 0's clock; INT64_MIN when unknown */
    int64_t          arrival_lo_ns; /* bounds the evidence allows */
    int64_t          arrival_hi_ns;
    int64_t          log_received_ns; /* from the log line (whole seconds, or captured ns), INT64_MIN if none */
    int64_t          log_finished_ns;
    int32_t          max_tokens;    /* from the Received line's SamplingParams, -1 if unknown */
    int64_t          finish_ns;     /* end of its last step; INT64_MIN when unfinished/unknown */
    int64_t          latency_ns;    /* finish - arrival; -1 when either is unknown */
    teller_req_step *steps;
    uint32_t         nsteps;
    uint32_t         prefill_steps;
    /* breakdown (ns); queue + prefill + decode + stall == latency */
    int64_t          queue_ns;      /* arrival to its first step's start */
    int64_t          prefill_ns;    /* windows of its prefill steps */
    int64_t          decode_ns;     /* windows of its decode steps */
    int64_t          stall_ns;      /* between its steps */
    int64_t          abnormal_ns;   /* windows of its steps diagnosed abnormal (inside prefill/decode) */
    int64_t          excess_ns;     /* the diagnosis' excess over those steps, summed */
    uint32_t         abnormal_steps; /* those steps: the abnormal ones it was scheduled in */
    int64_t          attributed_ns; /* sum of its attributed step time */
    uint32_t         worst_step;    /* abnormal step with most excess, else its longest step; TELLER_NONE */
    char             cause[256];    /* the dominant cause, one phrase */
} teller_request;

/* Per step: what the batch held, as far as it is known. */
typedef struct teller_req_stepinfo {
    uint32_t step;
    int64_t  start_ns, end_ns;      /* window over all ranks */
    int32_t  prefill_seqs, prefill_tokens, decode_seqs; /* from the annotation; -1 unknown */
    int32_t  known_seqs;            /* sequences attributed to known requests */
    int32_t  recompute_seqs;        /* prefill sequences no request accounts for (recomputation) */
    int32_t  unknown_seqs;          /* decode sequences no request accounts for */
    uint8_t  truncated;             /* the last prefill chunk was cut by the token budget */
} teller_req_stepinfo;

typedef struct teller_requests {
    teller_request      *req;      /* sorted by arrival (unknown arrivals last) */
    size_t               n;
    teller_req_stepinfo *steps;    /* one per step number */
    size_t               nsteps;
    const char          *source;   /* "trace annotations", "logs + batch composition (inferred)", "none" */
    char               **notes;    /* what could not be seen or trusted */
    size_t               nnotes;
    uint32_t             mismatched_steps; /* steps where the replay disagreed with the annotation */
    char               **owned_ids; /* internal: the id strings the requests point to */
    size_t               nowned_ids;
} teller_requests;

typedef struct teller_req_opts {
    const char *const      *logs;  /* service log paths; node from "node<N>" in the name, else 0 */
    size_t                  nlogs;
    const teller_diagnosis *diag;  /* optional: abnormal steps and their faults */
    int64_t                 log_ref_ns; /* year reference for logs without one; 0: the trace's first step */
    int32_t                 log_tz_offset_s; /* the logs' local zone, seconds east of UTC (0: UTC) */
} teller_req_opts;

teller_req_opts teller_req_defaults(void);

/* Builds every request's lifecycle and breakdown. *out is the caller's
 * (teller_requests_free). Bad or inconsistent input is reported in notes
 * and flags, not as an error; errors are I/O and memory. */
teller_status teller_requests_build(const teller_store *st, const teller_req_opts *opts, teller_requests **out,
                                    teller_error *err);
void teller_requests_free(teller_requests *r);

/* The same build in phases, for a caller that reads the logs itself (the
 * diagnosis reads them once for itself and the requests): begin (the
 * steps; opts->logs only say that logs are given), then each record of
 * each log through teller_req_feed (a teller_log_fn, ctx the builder)
 * after teller_req_set_node names its log's node, then the replay (its
 * view's steps then say what each batch recomputed), then finish (flags
 * and breakdowns against diag, which may be NULL; *out is the caller's),
 * which frees the builder; teller_req_abort frees it at any point before.
 * teller_requests_build is these phases over opts->logs. */
typedef struct teller_req_builder teller_req_builder;
teller_status teller_req_begin(const teller_store *st, const teller_req_opts *opts, teller_req_builder **out,
                               teller_error *err);
/* The options its logs are read with: the year and date of lines that
 * lack them come from the trace's first step (or opts->log_ref_ns). */
teller_log_opts teller_req_log_opts(const teller_req_builder *b);
void teller_req_set_node(teller_req_builder *b, int32_t node);
int teller_req_feed(void *builder, const teller_log_record *rec);
teller_status teller_req_replay(teller_req_builder *b, const teller_requests **view, teller_error *err);
teller_status teller_req_finish(teller_req_builder *b, const teller_diagnosis *diag, teller_requests **out,
                                teller_error *err);
void teller_req_abort(teller_req_builder *b);

/* The request with this id, or NULL. */
const teller_request *teller_requests_find(const teller_requests *r, const char *id);

/* Where a step's time went on one rank: from the rank's step marker, the
 * child with the longest duration at each level, down to a leaf. Writes
 * up to cap events (marker first); returns the path length (0 when the
 * step has no marker on that rank). */
size_t teller_request_hot_path(const teller_store *st, uint32_t step, int32_t rank, uint32_t *path, size_t cap);

#ifdef __cplusplus
}
#endif
#endif
