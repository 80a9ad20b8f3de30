/*
 * tree_internal.h - what the run-wide half of the tree build (src/tree/tree.c)
 * reads of each source: its communication kernels' rows and its step
 * markers, found per source from that source's events alone. Collective
 * matching (keys, the engines' groups, numbering, members), the clock
 * offsets, and the steps' markers and numbers read these, not the events;
 * so a process that read a rank's file can find its summary and send it
 * (teller-mpi, src/mpi/summary.h) to the one that builds the run.
 */
#ifndef TELLER_TREE_INTERNAL_H
#define TELLER_TREE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "teller/tree.h"

/* One communication kernel (TELLER_F_COMM) of a source, in event order. */
typedef struct teller_coll_row {
    uint32_t ev;         /* the kernel: its index among its source's events, in the tree's order */
    uint32_t name;       /* its name (interned) */
    uint32_t pg;         /* its process group (interned): the trace's; else that of named kernels on its
                          * stream; else, an engine's own collective, the source's first group that is
                          * not a send's or receive's; 0 none */
    uint32_t pg_ranks;   /* the trace's rank list of the group ("[0, 1]", interned), 0 none */
    uint32_t seq;        /* the trace's sequence number, TELLER_NONE when it has none */
    uint32_t step;       /* its step once steps are cut, else TELLER_NONE */
    uint32_t grid[3];    /* its launch grid: the engines' own collectives are keyed by it */
    int32_t  group_size; /* the trace's group size, 0 when absent */
    int8_t   dir;        /* 1 a send, -1 a receive, 0 a collective */
    uint8_t  fam;        /* teller_comm_family_id */
    int64_t  elems;      /* its input's elements ("In msg nelems"), -1 unknown */
    int64_t  start, dur; /* ns; start on node 0's clock once the offsets are applied */
} teller_coll_row;

/* One step marker of a source: an event of the engine or backend layer
 * whose name matches the step pattern and that no such event encloses. */
typedef struct teller_step_mark {
    uint32_t ev;         /* its index among its source's events, in the tree's order */
    uint32_t name;       /* its name (interned): the step's annotation */
    int64_t  start, end; /* ns; on node 0's clock once the offsets are applied */
    int64_t  iter;       /* teller_step_iteration of its name (its ProfilerStep number), else -1 */
} teller_step_mark;

/* A collective's member as the run-wide parts of the diagnosis read it:
 * each field its communication row's (teller_coll_row), which a process
 * that does not hold the rank receives in the rank's summary, so that
 * nothing run-wide reads another rank's kernel. */
typedef struct teller_member_row {
    int64_t  start, dur; /* its kernel's arrival and time, node 0's clock */
    int64_t  elems;      /* its input's elements ("In msg nelems"), -1 unknown */
    uint32_t step;       /* its kernel's step, TELLER_NONE none */
    uint32_t name;       /* its kernel's name */
    uint32_t pg_ranks;   /* its process group's rank list ("[0, 1]", interned), 0 none */
    uint16_t src;        /* its source */
    int8_t   dir;        /* 1 a send, -1 a receive, 0 a collective */
} teller_member_row;

/* Per member of the built store's collectives (teller_store_coll_members),
 * its row; NULL before a build. */
const teller_member_row *teller_tree_member_rows(const teller_store *st);

/* The source that holds event e of a store whose events the tree build
 * grouped by source: found from the sources' ranges (first_event), not
 * the event's own column, so a process that holds only the sources'
 * counts finds it too. */
uint32_t teller_tree_event_source(const teller_store *st, uint32_t e);

/* What the run-wide half of the tree build reads of one source: its
 * communication kernels' rows and its step markers, in event order. */
typedef struct teller_source_summary {
    teller_coll_row  *rows; /* malloc'd */
    size_t            nrows;
    teller_step_mark *marks; /* malloc'd */
    size_t            nmarks;
    uint32_t          events; /* the source's events they were found among */
    int               given;  /* found where the file was read: teller_tree_build_given takes it as it is */
} teller_source_summary;

/* The per-source half of teller_tree_build on a store just read (not
 * bare: it builds the trees): sorts, nests and links each source's events
 * as teller_tree_build does and finds its summary with the step pattern of
 * opts (*out: one entry per source, malloc'd; teller_source_summary_free).
 * A bad step pattern is TELLER_ERR_ARG. */
teller_status teller_tree_local(teller_store *st, const teller_tree_opts *opts, teller_source_summary **out,
                                teller_error *err);

/* The processes that hold the given sources' events (teller-mpi), asked
 * twice by the build, for what only those events say.
 *
 * unmarked: before it numbers the steps, told per source its rank's last
 * step marker's end (last[s], node 0's clock; INT64_MIN: the rank has
 * none), each answers for each given source s what teller_tree_unmarked
 * says (span[s], node 0's clock).
 *
 * stamped: once it has cut the steps, told each given source's clock
 * offset and its rank's steps (teller_tree_spans), each stamps the
 * source's events as the build stamps its own (teller_tree_stamp) and
 * answers with, per given source s, end[s][j] for row j of its rank's
 * spans (the latest end of the row's GPU work, INT64_MIN none), the step
 * of each of its rows (sr[s].rows[r].step) and its cells, which it gives
 * st (teller_step_cells_give). */
typedef struct teller_tree_holders {
    teller_status (*unmarked)(void *ctx, teller_store *st, const teller_source_summary *sr, const int64_t *last,
                              int64_t (*span)[5], teller_error *err);
    teller_status (*stamped)(void *ctx, teller_store *st, teller_source_summary *sr, int64_t *const *end,
                             teller_error *err);
    void *ctx;
} teller_tree_holders;

/* What source s says of its rank's step without a marker, the rank's last
 * marker ending at `last` (INT64_MIN: it has none): span[0] and span[1]
 * the first start and last end of its events of a known layer (not
 * TELLER_LAYER_OTHER; those that start at or after `last` and are not GPU
 * work, when it has one), INT64_MAX and INT64_MIN when none; span[2] 1
 * when one of them is a launch call (it launched work after its last
 * marker), else 0; and span[3] and span[4] the first start and last end of
 * all its events (its extent, teller_tree_extent), INT64_MAX and INT64_MIN
 * when it has none. The source's times and `last` on one clock. */
void teller_tree_unmarked(const teller_store *st, uint32_t s, int64_t last, int64_t span[5]);

/* Where source s's trace begins and ends on node 0's clock: the first
 * start and last end of its events, as the build found them (or their
 * holder, teller_tree_holders); INT64_MAX and INT64_MIN for a source
 * without events or a store not built. */
void teller_tree_extent(const teller_store *st, uint32_t s, int64_t *first, int64_t *end);

/* teller_tree_build, taking the summaries of the sources marked given in
 * sr (one entry per source) and finding the others' into it; with
 * holders, the given sources' spans without a marker, steps' ends, rows'
 * steps and cells are theirs. sr stays the caller's, changed by the build:
 * every summary moved onto node 0's clock, its rows' steps set. A given
 * summary that does not name its source's events as they are (as many
 * events, a row for each communication kernel, with its name, times,
 * elements, rank list and direction, each marker's times), or a holder's
 * answer that is not its events' while the store holds them, is a format
 * error naming the source's file. */
teller_status teller_tree_build_given(teller_store *st, const teller_tree_opts *opts, teller_source_summary *sr,
                                      const teller_tree_holders *holders, teller_error *err);

void teller_source_summary_free(teller_source_summary *sr, size_t n);

/* Rank's steps as the build stamped its events with them (*count rows,
 * none before a build), by start: each its marker's span (not extended to
 * its GPU work) and its number. */
const teller_step *teller_tree_spans(const teller_store *st, int32_t rank, size_t *count);

/* Does to source s's events what the run's build did where the run is
 * built elsewhere (teller-mpi): moves them onto node 0's clock (start -
 * offset_ns, the source's node's offset) and stamps them with their steps,
 * rows being its rank's of teller_tree_spans (count of them, on node 0's
 * clock); end[j] receives the latest end of row j's GPU work (INT64_MIN:
 * none). The store's trees are built (teller_tree_local). */
void teller_tree_stamp(teller_store *st, uint32_t s, int64_t offset_ns, const teller_step *rows, size_t count,
                       int64_t *end);

/* What one source did in one step, found from that source's events alone
 * (steps.c): the unit the run-wide parts of the diagnosis and the step
 * summaries read instead of other ranks' events. Its GPU work is that of
 * device rows (TELLER_F_GPU): kernels, copies, memsets. */
typedef struct teller_step_cell {
    int64_t  kernel_ns;   /* its compute kernels' time (not TELLER_F_COMM) */
    int64_t  comm_ns;     /* its communication kernels' time */
    int64_t  memcpy_ns;   /* its copies' and memsets' time */
    int64_t  gpu_busy_ns; /* the union of its GPU work over every stream */
    int64_t  profiler_ns; /* the profiler's own work in it (TELLER_F_PROFILER), any thread */
    uint32_t kernels;     /* its kernels */
    uint32_t launches;    /* its calls that launch GPU work (teller_name_is_launch) */
    uint32_t unlaunched;  /* of those, the ones with no GPU work under them in the trace */
    uint32_t pad;         /* 0 */
    int64_t  queued_end;  /* the latest end its GPU work would have had, had every earlier step's work
                           * ended at once (queued behind its stream's operation before it, or waiting
                           * for another stream's, an operation could have started earlier by as much,
                           * down to its launch call's end); INT64_MIN when it has none */
} teller_step_cell;

/* When GPU operation i could have started: its launch call's end, never
 * after its own start (its start when nothing on the host launched it). */
static inline int64_t teller_ready_ns(const teller_events *ev, uint32_t i)
{
    uint32_t p = ev->parent[i];
    int64_t ready = p != TELLER_NONE && !(ev->flags[p] & TELLER_F_GPU) ? ev->start_ns[p] + ev->dur_ns[p] : ev->start_ns[i];
    return ready < ev->start_ns[i] ? ready : ev->start_ns[i];
}

/* The rule by which a GPU operation waited for one of another stream: it
 * started within TELLER_WAIT_NS after the other's end, or TELLER_ROUND_NS
 * before it (Kineto rounds start and duration apart; the diagnosis's
 * host-stall costs read it too, and perturb's retime follows the same
 * rule). */
#define TELLER_WAIT_NS  2000
#define TELLER_ROUND_NS 1000

/* Fills the cells of source s from its events alone (those its
 * teller_source names, the tree build having grouped them): cell j at
 * cells[j * stride], for j < nsteps, of step j when steps is NULL, else
 * of step steps[j] (steps ascending). An event of a step without a cell
 * counts nowhere. 0, or -1 out of memory. */
int teller_step_cells_of(const teller_store *st, uint32_t s, const uint32_t *steps, uint32_t nsteps,
                         teller_step_cell *cells, size_t stride);

/* The cells of source s, cells[k * nsrc + s] for each step k < nsteps:
 * those given for it (teller_step_cells_give), else found from its events
 * (teller_step_cells_of). 0, or -1 out of memory. */
int teller_step_cells(const teller_store *st, uint32_t s, uint32_t nsteps, teller_step_cell *cells);

/* Gives the store source s's cells, one per step of the run (its
 * step_count, built), found where its events are (teller-mpi: the process
 * that read its file). 0, or -1 out of memory. */
int teller_step_cells_give(teller_store *st, uint32_t s, const teller_step_cell *cells);

/* Per row r of st's step table, its figures in rows[r], summed over the
 * cells (per (step, source), as teller_step_cells) of every source of its
 * rank; gpu_busy_ns its one source's, 0 for a rank of several (a union is
 * no sum); queued_end 0 (a source's alone: no row reads it); known[r]:
 * whether the trace holds the row's GPU work (no launch without it, and
 * the profiler of the rank's first source dropped no records). 0, or -1
 * out of memory. */
int teller_step_rows(const teller_store *st, const teller_step_cell *cells, teller_step_cell *rows, uint8_t *known);


#endif
