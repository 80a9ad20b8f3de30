/*
 * summary.h - what a process that read a rank's file tells the one that
 * builds the run about its collectives, besides the events: each source's
 * rows (src/tree/tree_internal.h), found where the file was read, so that
 * collective matching and the clock offsets on process 0 read them as
 * they are. Format "tllrsum1": four 64-bit counts (a magic number, strings,
 * sources, rows), then each section starting at a multiple of 8 bytes: the
 * strings the rows name (their lengths, then their bytes; id 0 is the empty
 * string and is not sent), per source its events and rows (two 32-bit
 * counts), then the rows, 56 bytes each. Machine words are written as they
 * are in memory: both ends run the same build.
 */
#ifndef TELLER_MPI_SUMMARY_H
#define TELLER_MPI_SUMMARY_H

#include <stddef.h>

#include "teller/error.h"
#include "teller/store.h"
#include "../tree/tree_internal.h"

/* The summary of st's sources (as teller_tree_rows left it, sr one entry
 * per source) in a malloc'd buffer of *n bytes; NULL out of memory. */
void *teller_summary_pack(const teller_store *st, const teller_source_rows *sr, size_t *n);

/* Reads the summary buf (n bytes) of file `file`, whose `nsources` sources
 * are the run store's sources from s0 on: interns the strings it names into
 * st and gives their rows in sr[s0 ...] (marked given). Anything in buf that
 * is not a whole summary of that many sources, or whose rows name a string,
 * an event, a family or a time beyond their bounds, is TELLER_ERR_FORMAT
 * naming file and the byte offset, and gives nothing. */
teller_status teller_summary_read(teller_store *st, size_t s0, size_t nsources, const void *buf, size_t n,
                                  const char *file, teller_source_rows *sr, teller_error *err);

#endif
