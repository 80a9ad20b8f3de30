/*
 * slice.h - dependency-aware causal-context slices (PAPER.md item 3).
 *
 * Around seed events (a candidate operator, or the marker of a rank's
 * step), a slice collects the events that explain them, each with the
 * relation that brought it in and a relevance weight:
 *
 *   relation     weight  what
 *   seed          1.00   the seed itself
 *   launch        0.95   the runtime/driver call that launched a seed GPU op
 *   ancestor      0.90   parent; x0.9 per further level (0.81, 0.73, ...)
 *   peer          0.85   the same collective's kernel on every other rank
 *                        (teller_store_collectives members), the horizontal
 *                        view; x the weight of the kernel it pairs with (a
 *                        seed's peers 0.85, a child kernel's 0.68); not for
 *                        neighbours
 *   child         0.80   children; x0.8 per further level below a seed
 *   peer_launch   0.70   (x the same) the launch of a peer kernel ("never launched" vs
 *                        "launched but stuck" shows in it)
 *   neighbour     0.70   the nearest events on the same thread or stream at
 *                        the same depth, before and after; x0.7 for the second
 *   launch_prev   0.60   the event before a seed kernel's launch on the CPU
 *                        thread: what kept the launch late
 * The paper names these relations (parent and children, temporal
 * neighbours, communication relation, ancestors) but gives no numbers; the
 * order above is ours: direct causes of a late GPU op first, the horizontal
 * relation next, then structure, then time. An event reached twice keeps its
 * highest weight. When more than max_events are found, the highest weights
 * stay (ties: nearer in time to the first seed, then lower event id); the
 * result is ordered by start time. Descendants are explored breadth first
 * and at most max_events of them per seed.
 */
#ifndef TELLER_SLICE_H
#define TELLER_SLICE_H

#include <stddef.h>
#include <stdint.h>

#include "teller/error.h"
#include "teller/store.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum teller_slice_rel {
    TELLER_REL_SEED = 0,
    TELLER_REL_LAUNCH,
    TELLER_REL_ANCESTOR,
    TELLER_REL_PEER,
    TELLER_REL_CHILD,
    TELLER_REL_PEER_LAUNCH,
    TELLER_REL_NEIGHBOUR,
    TELLER_REL_LAUNCH_PREV,
    TELLER_REL_COUNT
} teller_slice_rel;

/* "seed", "launch", ... */
const char *teller_slice_rel_name(teller_slice_rel r);
/* The base weight of a relation (the table above). */
float teller_slice_rel_weight(teller_slice_rel r);

typedef struct teller_slice_opts {
    uint32_t max_events; /* bound on the slice (default 256) */
    uint32_t neighbours; /* temporal neighbours each side (default 2) */
} teller_slice_opts;

teller_slice_opts teller_slice_defaults(void);

typedef struct teller_slice_item {
    uint32_t event;
    uint8_t  rel;    /* teller_slice_rel */
    float    weight;
} teller_slice_item;

/* Builds the slice around seeds. *out (malloc'd, caller frees) holds *n
 * items in start-time order. */
teller_status teller_slice_build(const teller_store *st, const uint32_t *seeds, size_t nseeds,
                                 const teller_slice_opts *opts, teller_slice_item **out, size_t *n,
                                 teller_error *err);

/* Seeds for `teller slice`: on rank `rank` in step `step`, the longest event
 * whose normalised name (teller_name_normalize) equals op, or whose raw
 * name contains it; with op NULL, the step's marker (or, for a fallback
 * step, its longest root). TELLER_NONE when nothing matches. */
uint32_t teller_slice_find_seed(const teller_store *st, uint32_t step, int32_t rank, const char *op);

#ifdef __cplusplus
}
#endif
#endif
