/*
 * diag_internal.h - what the files of src/diagnose share: a candidate, the
 * diagnosis's context, the per-step lists, and the detector families'
 * entry points. diagnose.c runs them (the table there says in which round
 * and in which order their findings join the steps); baseline.c holds what
 * the run says is usual (medians, when the GPU was busy, peer groups, the
 * cost every step pays); sentences.c what the diagnosis says in words; one
 * file per detector family: kernels.c, apis.c (API calls, allocations),
 * roofline.c (kernels against the work their ops' shapes state),
 * syncs.c, copies.c, gaps.c (host gaps), comm.c (collectives and the
 * horizontal view), logs.c; carry.c the steps made late by the one
 * before them. Not a public header.
 */
#ifndef TELLER_DIAG_INTERNAL_H
#define TELLER_DIAG_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "teller/diagnose.h"
#include "teller/fault.h"
#include "teller/store.h"
#include "../util/kmap.h"
#include "../util/vec.h"

typedef struct cand {
    teller_fault det;  /* teller_fault found; TELLER_FAULT_NONE once merged into another */
    int32_t  rank;
    uint32_t name;     /* interned operator name */
    uint8_t  layer;
    double   excess;   /* ns the finding explains */
    double   sig;      /* how unusual: a ratio or z-like figure, >= 1 */
    double   actual, usual; /* the operator's time in the step and its usual time, ns */
    uint32_t event;    /* an event of the candidate */
    double   score;
    uint32_t fed;      /* launches: GPU operations the slowed calls launched; allocations: calls */
    int32_t  peer;     /* transfers: the rank at the other end, else -1 */
    /* the rest is zero for a finding of the step's own */
    int      carried;  /* 1: the previous step's finding, carried into this one (carry.c) */
    uint32_t from;     /* carried: the step whose fault this is */
    double   came;     /* carried: how late the previous step's GPU work ended, ns */
    /* ns the finding held its rank's host back: its slow calls' or stalls'
     * time over their usual, whatever of it the GPU's queue absorbed (zero
     * for work on the GPU). A host that runs ahead starts its next step
     * that much later (carry.c) */
    double   host;
    /* copies: the time the work after the rank's slow copies of the step,
     * of every name, waited through, each moment once (diag_merge_pcie) */
    double   link;
    int64_t  t0, t1;   /* host gaps: the hole the finding is named after, ended by event */
} cand;

typedef struct step_acc {
    cand    *c;
    size_t   n, cap;
    double   start; /* earliest rank's start */
    double   work;  /* compute kernel time on the lowest rank: the batch's size */
    int      claimed; /* a whole-second log line was already placed here */
    int      oom_line; /* an OOM line was placed here by the rank's OOM finding */
} step_acc;

/* When something was busy, per source: the union of some events as sorted
 * disjoint intervals [a, b), those of source s at off[s] .. off[s + 1],
 * cum the busy time before each, ev the event that opened each. */
typedef struct busyidx {
    int64_t  *a, *b, *cum;
    uint32_t *ev;
    size_t   *off;
} busyidx;

/* A stretch [a, b) in which nothing of a busy index worked, and the event
 * that ended it. */
typedef struct diag_hole {
    int64_t  a, b;
    uint32_t ev;
} diag_hole;

/* Per source, its kernels in start order (those of source s at off[s] ..
 * off[s + 1]): when each started, its step, and for a kernel of a
 * collective with two or more members how late it arrived (started after
 * the last of the other members; 0 when it was not the last), else -1. */
typedef struct waitidx {
    int64_t  *start;
    double   *wait;
    uint32_t *step;
    size_t   *off;
} waitidx;

typedef struct dctx {
    teller_store       *st;
    const teller_events *ev;
    uint32_t            nsteps;
    int32_t             nranks_max;
    step_acc           *steps;
    int32_t            *group;   /* per source: peer group id (union-find root) */
    uint32_t           *peers;   /* the sources, grouped by peer group, in source order inside a group */
    uint32_t           *gfirst, *gcount; /* per source: where its group starts in peers, and its size */
    int32_t            *pipe;    /* per source: its pipeline, the ranks linked to it by any collective */
    uint32_t           *linked;  /* the sources, grouped by pipeline, as peers are by peer group */
    uint32_t           *pfirst, *pcount; /* per source: where its pipeline starts in linked, and its size */
    size_t              nsrc;
    double              t_first, t_last; /* the traced steps' span, node 0's clock */
    uint32_t           *mrow;    /* per (step, source): the row of its step annotation in the step table, or TELLER_NONE */
    size_t             *range;   /* source s holds events [range[s], range[s + 1]) (the tree build groups them) */
    busyidx             gpu;     /* when each source's GPU was busy */
    busyidx             host;    /* when each source's threads other than its stepping one worked (gaps.c) */
    int32_t            *step_tid; /* per source: its stepping thread, the thread of its step markers (gaps.c) */
    waitidx             waits;   /* each source's kernels and how late each collective's arrived */
    double             *wait_left; /* per kernel of waits: the lateness host stalls have not yet
                                    * spent (apis.c in round 2, then gaps.c in round 3) */
    int                 nomem;   /* an allocation failed where no status could be returned */
    struct teller_req_builder *req; /* with logs: the requests, read with them (requests.h), to finish
                                     * once the steps are judged */
    teller_diagnosis   *out;
    /* the horizontal view, per (step, source): collectives at which the
     * source arrived last and its peers' wait for it; per step: collectives */
    uint32_t           *late_last, *late_insts;
    double             *late_wait;
    /* per (step, source): how much of the rank's window its GPU work spent
     * queued behind earlier steps' work (carry.c) */
    double             *expo;
    size_t              groups_cap; /* of out->groups */
    size_t              facts_cap;  /* of out->facts */
    uint8_t            *gpu_known; /* per (step, source): 0 when the trace lacks its GPU work (diagnose.c) */
    busyidx             any;     /* when each source's GPU or any of its host threads worked, made for the
                                  * first slow step no finding explains (facts.c) */
} dctx;


/* What a detector found, in the order it found it. Detectors run on
 * several threads, each into its own list; the lists are then added to the
 * steps one after the other in a fixed order (add_found), so every step's
 * candidates come in the same order whatever ran where. */
typedef struct found {
    uint32_t step;
    cand     c;
} found;
typedef struct finds {
    found *v;
    size_t n, cap;
} finds;


/* Samples grouped by a 64-bit key, for the median of each group. */
typedef struct samples {
    double *v;
    size_t n, cap;
} samples;
typedef struct groups {
    kmap keys; /* key -> index into s */
    samples *s;
    size_t cap;
} groups;

/* A kernel name's time in one step on one source (kernels.c). */
typedef struct ktot {
    double   t;
    uint32_t count, event;
    uint64_t cfgs; /* the sum of its calls' launch configurations' keys: the same calls, the same sum */
} ktot;

/* One source's kernel time per (step, name), and what that time usually
 * is; built by diag_kernels_tally on the source's own thread, read by every
 * source's diag_kernels_judge. tot, keys, ref and noref are indexed as m, in
 * the order the (step, name) pairs first appear in the source's events. */
typedef struct ktab {
    kmap      m;     /* (step << 28 | name) -> index */
    ktot     *tot;   /* time, calls and first call */
    uint64_t *keys;
    double   *ref;   /* the sum of its calls' usual times */
    double   *tref;  /* the time of its calls that have one */
    uint8_t  *noref; /* some call had no usual time */
    size_t    cap, kcap;
} ktab;


/* A merge looks at all candidates of one kind on one rank in one step
 * (idx[0..n) into c) and returns the one to keep, rewritten, or SIZE_MAX
 * to keep them as they are. */
typedef size_t (*merge_fn)(const dctx *D, cand *c, const size_t *idx, size_t n);

static inline int32_t rank_of(const dctx *D, uint32_t e) { return teller_store_event_rank(D->st, e); }
static inline int is_api(uint8_t L) { return L == TELLER_LAYER_RUNTIME || L == TELLER_LAYER_DRIVER; }
/* When GPU operation i could have started: its launch call's end, never
 * after its own start (its start when nothing on the host launched it). */
static inline int64_t diag_ready_ns(const teller_events *ev, uint32_t i)
{
    uint32_t p = ev->parent[i];
    int64_t ready = p != TELLER_NONE && !(ev->flags[p] & TELLER_F_GPU) ? ev->start_ns[p] + ev->dur_ns[p] : ev->start_ns[i];
    return ready < ev->start_ns[i] ? ready : ev->start_ns[i];
}
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

/* diagnose.c: candidates into the steps, or into a detector's own list */
int diag_add_cand(dctx *D, uint32_t step, const cand *c);
int diag_finds_add(finds *f, uint32_t step, const cand *c);

/* baseline.c: what the run says is usual */
int diag_cmp_dbl(const void *a, const void *b);
/* The k-th smallest of v[0..n) (k < n), the value a sort would put at
 * v[k]; v is reordered, with no larger value before v[k] and no smaller
 * one after it. */
double diag_select(double *v, size_t n, size_t k);
double diag_median(double *v, size_t n);
/* The median of n values, s's samples (reordered here) and n - s->n zeros;
 * in *low, when given, the lower of the two middle values. */
double diag_median_zeros(samples *s, size_t n, double *low);
int diag_groups_add(groups *g, uint64_t key, double x);
double *diag_groups_medians(groups *g);
double *diag_groups_spreads(const groups *g, const double *med);
void diag_groups_free(groups *g);
/* What a busy index holds: GPU work; the outermost host ops of each
 * source's threads but its stepping one (step_tid); either, of every
 * thread. */
typedef enum diag_busy_what { DIAG_BUSY_GPU, DIAG_BUSY_OTHER_THREADS, DIAG_BUSY_ANY } diag_busy_what;
int diag_busy_build(busyidx *B, const dctx *D, diag_busy_what what, const int32_t *step_tid);
void diag_busy_free(busyidx *B);
/* The holes of [a, b) on source src that no busy interval covers, appended
 * to *H (*nh of them, grown), each with the event that ended it: the one
 * whose busy interval starts where the hole ends, or `last` for a hole
 * that runs to b. 0, or -1 out of memory. */
int diag_busy_holes(const busyidx *B, uint16_t src, int64_t a, int64_t b, uint32_t last, diag_hole **H, size_t *cap,
                    size_t *nh);
double diag_idle_in(const busyidx *B, uint16_t src, int64_t a, int64_t b);
int diag_build_groups(dctx *D);
int diag_waits_build(dctx *D);
void diag_waits_free(waitidx *W);
/* The first kernel of source src that starts at or after t, when it is
 * of step k: its index in D->waits, else SIZE_MAX. */
/* Step k's rows of the step table (ordered by step, then rank): the first,
 * and in *hi the one past the last. */
size_t diag_step_rows(const dctx *D, uint32_t k, size_t *hi);
size_t diag_kernel_after(const dctx *D, uint16_t src, uint32_t k, int64_t t);
/* The same, when that kernel is a member of a collective, else SIZE_MAX
 * (another kernel came first, or none). */
size_t diag_wait_after(const dctx *D, uint16_t src, uint32_t k, int64_t t);
/* A copy of the lateness of every kernel, for a detector to spend (free
 * it); NULL out of memory. */
double *diag_waits_left(const dctx *D);
/* How much of a host delay of x ns in step k of source src, ending at t,
 * cost nothing: when the first kernel after it is a collective's (a
 * pipeline stage's recv, a tensor-parallel all-reduce), the delay held
 * the collective back only as far as this rank arrived after the other
 * members (a rank that still came early would have waited for them
 * anyway). Spends what it costs from left, so that several delays before
 * one collective cost at most its lateness together. */
double diag_absorb(const dctx *D, double *left, uint16_t src, uint32_t k, int64_t t, double x);
int diag_subtract_run_normal(dctx *D);

/* the detector families: each returns 0, or -1 out of memory */
int diag_kernels_tally(const dctx *D, size_t s, ktab *K);
int diag_kernels_judge(const dctx *D, size_t s, ktab *K, finds *out);
void diag_ktab_free(ktab *K);
size_t diag_merge_throttle(const dctx *D, cand *c, const size_t *idx, size_t n);
int diag_blocks_on_gpu(const teller_store *st, uint32_t name);
int diag_detect_apis(const dctx *D, finds *out);
/* 1 when API nm's calls are held to the launch prior (apis.c): a kernel
 * launch in a run of fewer than three steps, which cannot say what its own
 * launches usually cost. */
int diag_launch_prior(const dctx *D, uint32_t nm);
size_t diag_merge_launches(const dctx *D, cand *c, const size_t *idx, size_t n);
size_t diag_classify_malloc(const dctx *D, cand *c, const size_t *idx, size_t n);
int diag_detect_sync(const dctx *D, finds *out);
int diag_detect_copies(const dctx *D, finds *out);
size_t diag_merge_pcie(const dctx *D, cand *c, const size_t *idx, size_t n);
/* roofline.c: kernels without another yardstick against the work their
 * torch ops' shapes state, at the trace's own throughput */
int diag_detect_roofline(const dctx *D, finds *out);
/* Each source's stepping thread (the thread of its step markers) and the
 * busy index of its other threads (D->step_tid, D->host), for the host
 * gaps. */
int diag_host_busy_build(dctx *D);
/* Source s's host gaps (D->host built); its findings in event order. */
int diag_detect_gaps(const dctx *D, size_t s, finds *out);
int diag_detect_comm(dctx *D);
/* Merges a step's transfer findings into one slow link; -1 when out of memory. */
int diag_merge_links(dctx *D);
int diag_late_tables(dctx *D);
teller_status diag_read_logs(dctx *D, const teller_diag_opts *o, teller_error *err);
/* carry.c: fills source s's cells of D->expo (allocated, zero, by the
 * caller); 0, or -1 out of memory */
int diag_carry_exposure(const dctx *D, size_t s);
/* What step k's duration owes to the previous step's GPU work ending x ns
 * late while the host of rank `rank` started it host ns late (negative:
 * the step would have lasted longer). */
double diag_carried(const dctx *D, uint32_t k, double x, double host, int32_t rank);
/* Source s's GPU work in start order, for diag_host_delay_cost; NULL when
 * out of memory. */
typedef struct diag_gpuops diag_gpuops;
diag_gpuops *diag_gpuops_create(const dctx *D, size_t s);
void diag_gpuops_free(diag_gpuops *G);
/* The time in [a, b) in which source s's GPU idled waiting for work its
 * host had not launched yet (idle before an operation launched earlier,
 * which waited for something the trace does not show, is not). */
double diag_host_idle(const dctx *D, const diag_gpuops *G, size_t s, int64_t a, int64_t b);
/* How much earlier step k (its longest rank window) would have ended had
 * source s's host not lost amt[i] ns at time at[i] (n delays, at sorted):
 * at most their sum. A collective with other loaded ranks could have
 * started earlier by at most late[j] (j its kernel in D->waits: how late
 * the rank arrived at it, or what of that other stalls have not spent)
 * plus what the collective before it on its stream (its communicator's)
 * moved, and the rank's peer group's windows end as much earlier as its
 * last collective; with late NULL no collective moves. */
double diag_host_delay_cost(const dctx *D, const diag_gpuops *G, size_t s, uint32_t k, const int64_t *at,
                            const double *amt, size_t n, const double *late);

/* yardstick.c: each step's kind and usual duration (out->groups,
 * out->group_steps, out->ref_steps, each step's group, work, usual_ns,
 * excess_ns), the steps' dur_ns first; flagged[k]: a finding of step k's
 * own flags it (a group's reference is its steps not flagged, when there
 * are enough). 0, or -1 out of memory. */
int diag_yardsticks(dctx *D, const uint8_t *flagged);
/* How far step k is past the step alarm (its usual plus `spreads` of its
 * kind's spreads, at least 1 % and 20 us over): 0.5 at the edge, towards 1
 * beyond, 0 when no slower than usual or without a yardstick. */
double diag_slowness(const teller_diagnosis *d, uint32_t k, double spreads);

/* sentences.c: the notes on what the run did not let the diagnosis see */
void diag_add_note(dctx *D, const char *text);
void diag_notes(dctx *D);
/* facts.c: the explanation of abnormal step s, whose top finding is c, and
 * of a step slower than its usual that no finding explains, with the facts
 * their numbers are (s->first_fact, s->nfacts) */
void diag_explain(dctx *D, teller_diag_step *s, const cand *c);
void diag_explain_slow(dctx *D, teller_diag_step *s);

#endif
