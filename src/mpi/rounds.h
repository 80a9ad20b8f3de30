/*
 * rounds.h - what crosses between teller-mpi's processes once process 0
 * has built the run from the files and their summaries (pack.h,
 * summary.h): process 0 tells each reader its sources' clock offsets and
 * their ranks' steps as the build stamped the events with them, and the
 * reader, once it has done to the events it kept what the build did
 * (teller_tree_stamp), answers with its sources' cells
 * (src/tree/tree_internal.h), which process 0 gives its store
 * (teller_step_cells_give).
 *
 * Format "tllrstp1": three 64-bit words (a magic number, the run's steps,
 * sources); per source its clock offset (ns) and the count of its rank's
 * rows (64-bit each), then those rows, 24 bytes each: start and end (ns,
 * node 0's clock, 64-bit), step (32-bit), 0 (32-bit).
 * Format "tllrcel1": three 64-bit words (a magic number, rows, sources);
 * per source one cell per row its steps gave it, in their order, 56 bytes
 * each (teller_step_cell): a source's events belong to its rank's rows'
 * steps only, so the answer is as long as the question.
 * Nothing after either. Machine words are written as they are in memory:
 * both ends run the same build.
 */
#ifndef TELLER_MPI_ROUNDS_H
#define TELLER_MPI_ROUNDS_H

#include <stddef.h>
#include <stdint.h>

#include "teller/error.h"
#include "teller/store.h"

/* The steps of sources [s0, s0 + nsrc) of the built run st, in a malloc'd
 * buffer of *n bytes; NULL out of memory. */
void *teller_steps_pack(const teller_store *st, size_t s0, size_t nsrc, size_t *n);

/* The reader's side: reads the steps buf (n bytes) for the sources of
 * stores[0 .. nstores) (NULL entries hold none), in order, does to each
 * source's events what the run's build did, and answers with their cells
 * (*out, malloc'd, *nout bytes). A buffer that is not whole, names other
 * sources than the stores hold, or whose offsets, times or steps are out
 * of bounds or out of order, is TELLER_ERR_FORMAT naming the byte offset,
 * and no event is changed. */
teller_status teller_steps_answer(teller_store *const *stores, size_t nstores, const void *buf, size_t n, void **out,
                                  size_t *nout, teller_error *err);

/* Process 0's side: gives st's sources [s0, s0 + nsrc) the cells in buf
 * (n bytes), which process `from` found. A buffer that is not whole, or
 * whose cells are out of bounds (a negative time, a count over the
 * source's events, more launches without GPU work than launches), is
 * TELLER_ERR_FORMAT naming the byte offset. While process 0 still holds
 * the sources' events, cells other than theirs are TELLER_ERR_FORMAT
 * naming the source's file. Nothing is given unless all is sound. */
teller_status teller_cells_take(teller_store *st, size_t s0, size_t nsrc, const void *buf, size_t n, int from,
                                teller_error *err);

#endif
