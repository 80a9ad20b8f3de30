/*
 * load_internal.h - teller_load for a caller that found some sources'
 * summaries where their files were read (teller-mpi, src/mpi).
 */
#ifndef TELLER_LOAD_INTERNAL_H
#define TELLER_LOAD_INTERNAL_H

#include "teller/load.h"
#include "../tree/tree_internal.h"

/* Called with opts->read_ctx once every file is in the store, before the
 * tree is built, with one zeroed entry per source: gives the summaries of
 * the sources it has (marked given); the tree finds the others'. */
typedef teller_status (*teller_load_summaries_fn)(void *ctx, teller_store *st, teller_source_summary *sr,
                                                  teller_error *err);

/* teller_load, the tree built from the summaries `summaries` gives (NULL:
 * teller_load itself), asking holders (NULL: none) for what only the
 * given sources' events say (teller_tree_build_given). */
teller_status teller_load_given(teller_store *st, const char *const *files, size_t n, const teller_load_opts *opts,
                                teller_load_summaries_fn summaries, const teller_tree_holders *holders,
                                teller_error *err);

#endif
