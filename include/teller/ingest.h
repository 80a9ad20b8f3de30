/*
 * ingest.h - readers that turn trace files into store events.
 *
 * Readers know formats and nothing of analysis. Each appends the events of
 * one file to a store and registers one source per rank the file holds.
 * A bad event is skipped with a warning in the store; a file that cannot be
 * read at all fails with an error naming the file and byte offset.
 *
 * After loading every file of a run, call teller_tree_build (tree.h).
 */
#ifndef TELLER_INGEST_H
#define TELLER_INGEST_H

#include <stdint.h>
#include <stdio.h>
#include "teller/error.h"
#include "teller/store.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct teller_ingest_opts {
    int skip_python;   /* drop python_function events (HTA does the same for speed) */
    int rank_override; /* >= 0: force this rank for the file's (single) source */
} teller_ingest_opts;

/* Default options: keep everything, ranks from the file. */
teller_ingest_opts teller_ingest_defaults(void);

/* Loads one file, detecting its format from its first bytes: SQLite
 * (Nsight Systems export), teller .tlt, gzip or plain JSON (Kineto). */
teller_status teller_ingest_file(teller_store *st, const char *path,
                                 const teller_ingest_opts *opts, teller_error *err);

/* Loads a Kineto trace from a plain or gzip-compressed file. */
teller_status teller_ingest_kineto(teller_store *st, const char *path,
                                   const teller_ingest_opts *opts, teller_error *err);

/* Loads a Kineto trace from memory (used by tests and fuzz targets); name
 * is what errors and the source record call it. */
teller_status teller_ingest_kineto_mem(teller_store *st, const char *name, const void *data,
                                       size_t len, const teller_ingest_opts *opts,
                                       teller_error *err);

/* Loads an Nsight Systems SQLite export (nsys export --type sqlite). */
teller_status teller_ingest_nsys(teller_store *st, const char *path,
                                 const teller_ingest_opts *opts, teller_error *err);

/* Loads a teller collector file (.tlt, one process). Damaged files load
 * what is valid and warn in the store about what was lost. */
teller_status teller_ingest_tlt(teller_store *st, const char *path,
                                const teller_ingest_opts *opts, teller_error *err);
/* The same from memory (tests, fuzz targets); name is what errors and the
 * source record call it. */
teller_status teller_ingest_tlt_mem(teller_store *st, const char *name, const void *data, size_t len,
                                    const teller_ingest_opts *opts, teller_error *err);

#ifdef __cplusplus
}
#endif
#endif
