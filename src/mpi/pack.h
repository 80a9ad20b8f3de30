/*
 * pack.h - a store just read from one file, as one flat buffer, for
 * teller-mpi (src/mpi/teller_mpi.c) to send from the process that read the
 * file to the one that builds the run.
 *
 * The buffer holds what teller_store_append reads of a store: its strings,
 * sources, event columns (those the readers fill), args and comm rows, and
 * warnings; nothing the tree build derives. It is read in place: no column
 * is copied before the append. Machine words are written as they are in
 * memory: both ends must run the same build on the same architecture.
 */
#ifndef TELLER_MPI_PACK_H
#define TELLER_MPI_PACK_H

#include <stddef.h>

#include "teller/error.h"
#include "teller/store.h"

/* Packs st (read, not tree-built) into a malloc'd buffer of *n bytes;
 * NULL when out of memory. */
void *teller_pack_store(const teller_store *st, size_t *n);

/* Appends the store packed in buf (n bytes) to dst, as teller_store_append
 * appends a store. TELLER_ERR_FORMAT when buf is not a whole packed store. */
teller_status teller_pack_append(teller_store *dst, const void *buf, size_t n, teller_error *err);

#endif
