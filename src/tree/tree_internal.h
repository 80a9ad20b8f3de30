/*
 * tree_internal.h - what collective matching reads of a communication
 * kernel (src/tree/tree.c). Rows are found per source, from that source's
 * events alone; the run-wide half of matching (keys, the engines' groups,
 * numbering, members) and the clock offsets read rows, not events. So a
 * process that read a rank's file can find its rows and send them
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
    int64_t  start, dur; /* ns; start on node 0's clock once the offsets are applied */
} teller_coll_row;

/* One source's rows. */
typedef struct teller_source_rows {
    teller_coll_row *rows;   /* malloc'd */
    size_t           n;
    uint32_t         events; /* the source's events they were found among */
    int              given;  /* found where the file was read: teller_tree_build_rows takes them as they are */
} teller_source_rows;

/* The per-source half of teller_tree_build on a store just read (not
 * bare: sorting borrows the tree's columns): groups and sorts its events
 * as teller_tree_build does, and finds each source's rows (*out: one entry
 * per source, malloc'd; teller_source_rows_free). */
teller_status teller_tree_rows(teller_store *st, int jobs, teller_source_rows **out, teller_error *err);

/* teller_tree_build, taking the rows of the sources marked given in sr (one
 * entry per source) and finding the others' into it; sr stays the
 * caller's. A given source whose events are not as many as its rows were
 * found among is a format error naming its file. */
teller_status teller_tree_build_rows(teller_store *st, const teller_tree_opts *opts, teller_source_rows *sr,
                                     teller_error *err);

void teller_source_rows_free(teller_source_rows *sr, size_t n);

#endif
