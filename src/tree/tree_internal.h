/*
 * tree_internal.h - what collective matching reads of a communication
 * kernel (src/tree/tree.c). Rows are found per source, from that source's
 * events alone; the run-wide half of matching (keys, the engines' groups,
 * numbering, members) and the clock offsets read rows, not events.
 */
#ifndef TELLER_TREE_INTERNAL_H
#define TELLER_TREE_INTERNAL_H

#include <stdint.h>

/* One communication kernel (TELLER_F_COMM) of a source, in event order. */
typedef struct teller_coll_row {
    uint32_t ev;         /* the kernel: its index in the store */
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

#endif
