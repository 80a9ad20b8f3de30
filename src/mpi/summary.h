/*
 * summary.h - what a process that read a rank's file tells the one that
 * builds the run, besides the events: each source's summary
 * (src/tree/tree_internal.h: its communication kernels' rows and its step
 * markers), found where the file was read, so that collective matching,
 * the clock offsets and the steps' markers on process 0 read them as they
 * are. Format "tllrsum2": five 64-bit counts (a magic number, strings,
 * sources, rows, markers); the strings the rows and markers name (their
 * 32-bit lengths, then their bytes; id 0 is the empty string and is not
 * sent); from the next multiple of 8 bytes, per source its events, rows
 * and markers (four 32-bit words, the last 0); the rows, 64 bytes each,
 * and the markers, 32 bytes each (with their names), source after source;
 * nothing after. Machine
 * words are written as they are in memory: both ends run the same build.
 */
#ifndef TELLER_MPI_SUMMARY_H
#define TELLER_MPI_SUMMARY_H

#include <stddef.h>

#include "teller/error.h"
#include "teller/store.h"
#include "../tree/tree_internal.h"

/* The summary of st's sources (as teller_tree_local left it, sr one entry
 * per source) in a malloc'd buffer of *n bytes; NULL out of memory. */
void *teller_summary_pack(const teller_store *st, const teller_source_summary *sr, size_t *n);

/* Reads the summary buf (n bytes) of file `file`, whose `nsources` sources
 * are the run store's sources from s0 on: interns the strings it names into
 * st and gives their summaries in sr[s0 ...] (marked given). Anything in
 * buf that is not a whole summary of that many sources, or whose rows or
 * markers name a string, an event, a family or a time beyond their bounds
 * or out of event order, is TELLER_ERR_FORMAT naming file and the byte
 * offset, and gives nothing. */
teller_status teller_summary_read(teller_store *st, size_t s0, size_t nsources, const void *buf, size_t n,
                                  const char *file, teller_source_summary *sr, teller_error *err);

#endif
