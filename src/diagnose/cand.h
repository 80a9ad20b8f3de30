/*
 * cand.h - the candidate: one finding of one detector in one step, and
 * the lists findings go into. Every detector makes candidates with the
 * record below and hands them back through finds_add (or, for the few
 * rows that run alone, straight onto a step with steps_add); nothing else
 * of the diagnosis needs to be known to find something. Not a public
 * header (diagnose.h has the candidates a diagnosis keeps).
 */
#ifndef TELLER_DIAG_CAND_H
#define TELLER_DIAG_CAND_H

#include <stddef.h>
#include <stdint.h>

#include "teller/fault.h"

typedef struct cand {
    teller_fault det;     /* the kind found; TELLER_FAULT_NONE once merged into another */
    int32_t      rank;    /* -1: a rank whose trace is not loaded (a hang's missing member) */
    uint32_t     name;    /* interned operator name */
    uint8_t      layer;   /* teller_layer */
    uint32_t     event;   /* an event of the finding, TELLER_NONE if none */
    double       excess;  /* ns the finding cost the step */
    double       ratio;   /* how unusual: its time over its yardstick, or a z-like figure; >= 1 */
    double       actual, usual; /* the operator's time in the step and its yardstick's, ns */
    double       score;   /* what the finding cost the step, 0..1 (diagnose.c) */
    /* how many operations the finding is made of (one of the three, by kind) */
    uint32_t     launched; /* launch_latency: GPU operations its slowed calls launched */
    uint32_t     calls;    /* malloc_storm, oom: the slowed allocation calls */
    uint32_t     members;  /* nccl_hang: the members of the collective that waited */
    int32_t      peer;     /* transfers: the rank at the other end; a hang: a rank that waited; else -1 */
    int          both_ends; /* slow_link: its transfers cannot tell the link's two nodes apart; peer is
                             * the other node's lowest rank, the next candidate */
    /* ns the finding held its rank's host back: its slow calls' or stalls'
     * time over their usual, whatever of it the GPU's queue absorbed (zero
     * for work on the GPU); a host that runs ahead starts its next step
     * that much later (carry.c) */
    double       host_delay;
    /* copies: the time the work after the rank's slow copies of the step,
     * of every name, waited through, each moment once (copies.c) */
    double       link_wait;
    /* kernels: the rank's compute time in the step over its peers', every
     * kernel name each against its usual over the fastest peer (what a
     * throttled GPU cost, names below the bar for one slowed kernel too) */
    double       over_peers;
    /* kernel findings: the compute kernel name with the most time on the
     * rank in the step, its longest call and its time (TELLER_NONE, 0:
     * none), which names a throttled GPU (kernels.c); carried from where
     * the rank's kernels were tallied */
    uint32_t     heavy, heavy_event;
    double       heavy_t;
    int64_t      hole_from, hole_to; /* host gaps: the hole the finding is named after, ended by event */
    int64_t      ran_from, ran_to;   /* transfers: when the kernel event ran, node 0's clock (0, 0: none) */
    int          reference; /* 1: judged against the reference run's usual (reference.c), not the run's */
    /* zero for a finding of the step's own */
    int          carried;  /* 1: the previous step's finding, carried into this one (carry.c) */
    uint32_t     from;     /* carried: the step whose fault this is */
    double       late_gpu; /* carried: how late the previous step's GPU work ended, ns */
} cand;

/* How many operations c is made of, whatever its kind. */
static inline uint32_t cand_count(const cand *c) { return c->launched + c->calls + c->members; }

/* What a detector found, in the order it found it: a detector fills its
 * own list (several run at once), and the lists are added to the steps in
 * the detectors' table order, so that every step's candidates come in the
 * same order whatever ran where. */
typedef struct found {
    uint32_t step;
    cand     c;
} found;
typedef struct finds {
    found *v;
    size_t n, cap;
} finds;

/* Appends c, found in step, to f. 0, or -1 out of memory. */
int finds_add(finds *f, uint32_t step, const cand *c);

/* A step's candidates, and what the log lines placed on it claim. */
typedef struct step_acc {
    cand *c;
    size_t n, cap;
    int claimed;  /* a whole-second log line was placed here */
    int oom_line; /* an OOM line was placed here by the rank's OOM finding */
} step_acc;

/* Appends c to step k of steps (nsteps of them; a step out of range is
 * ignored). 0, or -1 out of memory. */
int steps_add(step_acc *steps, uint32_t nsteps, uint32_t k, const cand *c);
/* Adds f's candidates to their steps in order and empties f. */
int steps_add_found(step_acc *steps, uint32_t nsteps, finds *f);

/* A merge looks at all candidates of one kind on one rank in one step
 * (idx[0..n) into c) and returns the one to keep, rewritten, or SIZE_MAX
 * to keep them as they are; the others are merged into it (det NONE). */
struct dctx;
typedef size_t (*merge_fn)(const struct dctx *D, cand *c, const size_t *idx, size_t n);
/* Runs fn over every (rank) group of kind det's candidates of step s
 * judged against the run (a reference's are the row reference's own). 0,
 * or -1 out of memory. */
int merge_by_rank(const struct dctx *D, step_acc *s, teller_fault det, merge_fn fn);

#endif
