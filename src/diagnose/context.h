/*
 * context.h - what the parts of src/diagnose share: the run's context,
 * made once before any detector runs and read-only after (dctx), and the
 * state the diagnosis builds as it goes (diag_state): the indexes the
 * detector table's rows make for each other, the steps' candidates, the
 * diagnosis being written. A row of the table (detector.h) reads the
 * context and writes only the parts of the state its row says it writes.
 * Not a public header.
 */
#ifndef TELLER_DIAG_CONTEXT_H
#define TELLER_DIAG_CONTEXT_H

#include <stddef.h>
#include <stdint.h>

#include "baseline.h"
#include "cand.h"
#include "teller/diagnose.h"
#include "teller/store.h"
#include "../tree/tree_internal.h"

/* The run, as every detector reads it. */
typedef struct dctx {
    teller_store        *st;      /* rows of round 4 and later may intern strings into it (the logs) */
    const teller_events *ev;
    const teller_diag_opts *opts;
    uint32_t             nsteps;
    size_t               nsrc;
    int                  jobs;    /* the threads the diagnosis runs on (--jobs, else the cores) */
    size_t              *range;   /* source s holds events [range[s], range[s + 1]) (the tree build groups them) */
    uint32_t            *mrow;    /* per (step, source): the row of its step annotation in the step table, or TELLER_NONE */
    double              *step_start; /* per step: its earliest rank's start, node 0's clock */
    teller_step_cell    *cell;    /* per (step, source): what it did, found from its own events */
    int64_t             *src_dur;    /* per (step, source): what the step added to its run (step_windows) */
    double              *step_work;  /* per step: the compute kernel time of the lowest rank (the batch's size) */
    double               t_first, t_last; /* the traced steps' span, node 0's clock */
    /* peer groups: ranks that share all-reduce/all-gather collectives do
     * identical work; pipelines: ranks linked by any collective */
    int32_t             *group;   /* per source: its peer group (union-find root) */
    uint32_t            *peers;   /* the sources, grouped by peer group, in source order inside a group */
    uint32_t            *gfirst, *gcount; /* per source: where its group starts in peers, and its size */
    int32_t             *pipe;    /* per source: its pipeline */
    uint32_t            *linked;  /* the sources, grouped by pipeline */
    uint32_t            *pfirst, *pcount; /* per source: where its pipeline starts in linked, and its size */
    int                  apart;   /* some ranks share no pipeline (data-parallel replicas, unlinked traces) */
    const teller_member_row *member; /* per member of the store's collectives: its row (teller_tree_member_rows) */
} dctx;

/* What the diagnosis builds as it goes. Each index is written by one row
 * of the detector table, in its round (detector.h says which), and read
 * by the rows of later rounds. */
typedef struct diag_state {
    step_acc         *steps;      /* per step: its candidates (written as each row's findings are added) */
    teller_diagnosis *out;        /* the diagnosis being written: notes, evidence, step durations */
    busyidx           gpu;        /* when each source's GPU was busy (row gpu_busy) */
    endidx            ends;       /* when each source's GPU work ended (row gpu_busy) */
    waitidx           waits;      /* each source's kernels and how late each collective's arrived (row waits) */
    double           *wait_left;  /* per kernel of waits: the lateness host stalls have not spent yet (row waits;
                                   * spent by api_calls, then host_gaps: a stall before a collective costs at
                                   * most how late the rank arrived there, together) */
    int32_t          *step_tid;   /* per source: its stepping thread (row host_busy) */
    busyidx           host;       /* when each source's threads other than its stepping one worked (row host_busy) */
    struct ktab      *kernel_tally; /* per source: its kernel time per (step, name) (row kernel_tally) */
    double           *expo;       /* per (step, source): how much of the window queued behind earlier steps (row exposure) */
    uint8_t          *gpu_known;  /* per (step, source): 0 when the trace lacks its GPU work (row coverage) */
    uint32_t         *late_last, *late_insts; /* per (step, source): collectives it started last at; per step: */
    double           *late_wait;  /* its collectives; per (step, source): its peers' wait for it (row late) */
    /* where the trace lacks GPU work (row coverage): step rows, their
     * launches and those without GPU work, records the profilers dropped,
     * findings left out */
    size_t            cov_rows, cov_launches, cov_unlaunched, cov_dropped, cov_left;
    struct teller_req_builder *req; /* with logs: the requests, read with them (row logs), finished at the end */
    teller_status     status;     /* a row's failure other than memory, and what it says */
    teller_error     *err;
    /* the judging of one step after another (row carried): the previous
     * step's root, how late its GPU work ended and its host started this
     * step, when it was flagged (prev.det NONE otherwise), and what it
     * carried into the step being judged */
    cand              prev;
    double            prev_late, prev_late_host, carry_in;
    busyidx           any;        /* when each source's GPU or any of its host ops worked (facts.c, each source's
                                   * part made when a step of it is explained) */
    /* row reference: each source's operator time per step, and what it
     * needs; made when the run is judged against a reference or is one */
    struct ref_state *ref;
    /* what the tasks of a per-source row share: the run-wide input its
     * prepare found, read by that row's tasks alone (its file says what) */
    struct apis_in   *apis;
    struct syncs_in  *syncs;
    struct copies_in *copies;
    int               ref_make;   /* the run is a reference being made (teller_diag_reference_make) */
    size_t            groups_cap, facts_cap; /* of out->groups, out->facts */
    int               nomem;      /* an allocation failed where no status could be returned */
} diag_state;

static inline int32_t rank_of(const dctx *D, uint32_t e) { return teller_store_event_rank(D->st, e); }
static inline int is_api(uint8_t L) { return L == TELLER_LAYER_RUNTIME || L == TELLER_LAYER_DRIVER; }
/* the node of a loaded rank, -1 when no loaded source has it */
static inline int32_t diag_node_of_rank(const teller_store *st, int32_t rank)
{
    int32_t q = teller_store_source_of_rank(st, rank);
    return q < 0 ? -1 : teller_store_source_c(st, (uint32_t)q)->node;
}
/* The (name, step, source) key of per-step tallies: names below 2^28,
 * steps below 2^22 and sources below 2^14 keep keys apart. */
static inline uint64_t nss_key(uint32_t name, uint32_t step, uint16_t src)
{
    return ((uint64_t)(name & 0xFFFFFFF) << 36) | ((uint64_t)(step & 0x3FFFFF) << 14) | (src & 0x3FFF);
}

/* kernels.c: on c, a finding on source s in step k, the step's heaviest
 * compute kernel there (cand.h heavy), from the kernel_tally row's state. */
void diag_heaviest(const diag_state *S, size_t s, uint32_t k, cand *c);

/* notes.c: the notes on what the run did not let the diagnosis see */
void diag_add_note(diag_state *S, const char *text);
void diag_notes(const dctx *D, diag_state *S);

#endif
