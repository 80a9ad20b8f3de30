/*
 * rounds.h - what crosses between teller-mpi's processes while process 0
 * builds the run from the files and their summaries (pack.h, summary.h):
 * the build's two questions to the readers (teller_tree_holders), for
 * what only the events they kept say.
 *
 * Before it numbers the steps, process 0 tells each reader per source its
 * rank's last step marker's end, and the reader answers with the span of
 * what the source did after it (or of all it did, for a rank without
 * markers: teller_tree_unmarked), from which the build makes the steps
 * without a marker, and the source's extent (teller_tree_extent). Once it has cut the steps, process 0 tells each reader
 * its sources' clock offsets and their ranks' steps as the build stamps
 * events with them, and the reader, once it has done to the events it
 * kept what the build does (teller_tree_stamp), answers with per step row
 * the latest end of the row's GPU work (the build extends the step to it)
 * and the row's cell (src/tree/tree_internal.h), and each communication
 * kernel's step. Process 0's build takes them: the spans, the ends and
 * steps, and the cells, which it gives its store
 * (teller_step_cells_give).
 *
 * Format "tllrunq1": two 64-bit words (a magic number, sources); per
 * source its rank's last marker's end on the source's own clock (ns,
 * 64-bit; INT64_MIN: the rank has none).
 * Format "tllruna1": two 64-bit words (a magic number, sources); per
 * source the span's start and end on its own clock and 1 when it launched
 * work there, else 0 (INT64_MAX, INT64_MIN, 0: none), then the first start
 * and last end of all its events (INT64_MAX, INT64_MIN: none), 64-bit
 * each.
 * Format "tllrstp1": three 64-bit words (a magic number, the run's steps,
 * sources); per source its clock offset (ns) and the count of its rank's
 * rows (64-bit each), then those rows, 24 bytes each: start and end (ns,
 * node 0's clock, 64-bit), step (32-bit), 0 (32-bit).
 * Format "tllrans1": three 64-bit words (a magic number, rows, sources);
 * per source the count of its communication kernels (64-bit), then per
 * row its steps gave it, in their order, a cell (64 bytes,
 * teller_step_cell) and the end (ns, 64-bit, INT64_MIN none), then per
 * communication kernel in event order its step (32-bit, 0xFFFFFFFF none),
 * then zero bytes to a multiple of 8: a source's events belong to its
 * rank's rows' steps only, so the answer's rows are the question's.
 * Nothing after any of them. Machine words are written as they are in
 * memory: both ends run the same build.
 */
#ifndef TELLER_MPI_ROUNDS_H
#define TELLER_MPI_ROUNDS_H

#include <stddef.h>
#include <stdint.h>

#include "teller/error.h"
#include "teller/store.h"
#include "../tree/tree_internal.h"

/* The reader's side of either question (told apart by its magic number):
 * teller_unmarked_answer or teller_steps_answer. */
teller_status teller_question_answer(teller_store *const *stores, size_t nstores, const void *buf, size_t n,
                                     void **out, size_t *nout, teller_error *err);

/* The first question, for sources [s0, s0 + nsrc) of the run st whose
 * clock offsets are known: last[s] for source s (node 0's clock), in a
 * malloc'd buffer of *n bytes; NULL out of memory. */
void *teller_unmarked_pack(const teller_store *st, size_t s0, size_t nsrc, const int64_t *last, size_t *n);

/* The reader's side: reads the question buf (n bytes) for the sources of
 * stores[0 .. nstores) (NULL entries hold none), in order, and answers
 * (*out, malloc'd, *nout bytes, "tllruna1"). A buffer that is not whole
 * or names other sources than the stores hold is TELLER_ERR_FORMAT naming
 * the byte offset. */
teller_status teller_unmarked_answer(teller_store *const *stores, size_t nstores, const void *buf, size_t n,
                                     void **out, size_t *nout, teller_error *err);

/* Process 0's side: takes the answer in buf (n bytes) that process `from`
 * found for st's sources [s0, s0 + nsrc) into span[s] (node 0's clock). An
 * answer that is not whole, counts other sources, or whose spans are out
 * of bounds (a start after its end, times outside what a trace's events
 * keep, a launch flag other than 0 or 1) is TELLER_ERR_FORMAT naming the
 * byte offset, and nothing is taken. */
teller_status teller_unmarked_take(const teller_store *st, size_t s0, size_t nsrc, const void *buf, size_t n, int from,
                                   int64_t (*span)[5], teller_error *err);

/* The steps of sources [s0, s0 + nsrc) of the run st, once its build has
 * cut them, in a malloc'd
 * buffer of *n bytes; NULL out of memory. */
void *teller_steps_pack(const teller_store *st, size_t s0, size_t nsrc, size_t *n);

/* The reader's side: reads the steps buf (n bytes) for the sources of
 * stores[0 .. nstores) (NULL entries hold none), in order, does to each
 * source's events what the run's build did, and answers (*out, malloc'd,
 * *nout bytes, "tllrans1"). A buffer that is not whole, names other
 * sources than the stores hold, or whose offsets, times or steps are out
 * of bounds or out of order, is TELLER_ERR_FORMAT naming the byte offset,
 * and no event is changed. */
teller_status teller_steps_answer(teller_store *const *stores, size_t nstores, const void *buf, size_t n, void **out,
                                  size_t *nout, teller_error *err);

/* Process 0's side, while its build asks (teller_tree_holders): takes the
 * answer in buf (n bytes) that process `from` found for st's sources [s0,
 * s0 + nsrc): each row's end into end[q] (q the source, one per row of its
 * rank's spans), each communication kernel's step into sr[q].rows, the
 * cells given to st. An answer that is not whole, counts other rows or
 * kernels than the run's, or whose cells, ends or steps are out of bounds
 * (a negative time, an end past what events keep, a count over the
 * source's events, more launches without GPU work than launches, a step
 * past the run's), or that answers
 * for a source without room in end, is TELLER_ERR_FORMAT naming the byte
 * offset, and nothing is taken. While process 0 still holds the sources'
 * events, cells other than theirs are TELLER_ERR_FORMAT naming the
 * source's file (the ends and steps taken by then: the build fails). */
teller_status teller_stamps_take(teller_store *st, size_t s0, size_t nsrc, teller_source_summary *sr,
                                 int64_t *const *end, const void *buf, size_t n, int from, teller_error *err);

#endif
