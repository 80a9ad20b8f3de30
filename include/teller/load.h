/*
 * load.h - the load path every command shares: the files a user names,
 * read as one run.
 *
 *   teller_load_expand  names -> trace files (a directory gives its
 *                       traces, also those under traces/)
 *   teller_load         files -> one tree-built store: the same file named
 *                       twice is read once (with a warning); files are read
 *                       on a pool of threads, each into its own store, and
 *                       appended in the order given, so the store is the
 *                       same, id for id, whatever the number of threads;
 *                       trees are built (per-source passes on the same
 *                       threads); then teller_load_check_run, unless forced.
 *   teller_load_check_run  refuses inputs that cannot be one run.
 *
 * docs/SCALE.md says what runs in parallel and what it costs.
 */
#ifndef TELLER_LOAD_H
#define TELLER_LOAD_H

#include <stddef.h>
#include <stdint.h>
#include "teller/error.h"
#include "teller/ingest.h"
#include "teller/store.h"
#include "teller/tree.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct teller_load_opts {
    teller_ingest_opts ingest;
    teller_tree_opts   tree;  /* tree.jobs is set from jobs below */
    int                jobs;  /* threads; <= 0: the cores this process may use */
    int                force; /* 1: keep inputs that teller_load_check_run refuses */
    /* Called after each file is in the store (from whichever thread
     * appended it, one call at a time), with the bytes of the files read
     * so far and in all. NULL: no calls. */
    void (*progress)(void *ctx, const char *path, uint64_t done_bytes, uint64_t total_bytes);
    void *progress_ctx;
    /* Reads file i of the list (path) into the store `into` (the run's, or
     * an empty one of its own), as teller_ingest_file would; called from
     * the load's threads, once per file, several files at a time. NULL:
     * teller_ingest_file. teller-mpi (src/mpi) hands in here the files
     * other processes read. */
    teller_status (*read)(void *ctx, size_t i, const char *path, teller_store *into, teller_error *err);
    void *read_ctx;
} teller_load_opts;

teller_load_opts teller_load_defaults(void);

/* Expands names into trace files: a file stays as named; a directory gives
 * its *.json (only those that look like traces: a predictions or truth file
 * beside them is not one), *.json.gz, *.sqlite and *.tlt files, then those
 * of its traces/ subdirectory, each group sorted by name. *files (n
 * strings) is malloc'd; free it with teller_load_files_free. Errors:
 * a name that does not exist, a directory without traces, no names. */
teller_status teller_load_expand(const char *const *names, size_t nnames, char ***files, size_t *nfiles,
                                 teller_error *err);
void teller_load_files_free(char **files, size_t n);

/* Loads files into st (an empty store) as one run; see the top of this
 * file. The first file (in the order given) that cannot be read is the
 * error, as when reading them one by one. */
teller_status teller_load(teller_store *st, const char *const *files, size_t n, const teller_load_opts *opts,
                          teller_error *err);

/* Which of files[0..n) name a file named before (the same device and
 * inode, by any path): same_as[i] is the index of its first name, or n;
 * bytes (may be NULL) gets each file's size. teller_load reads a file once
 * and skips its repeats. 0, or -1 out of memory. */
int teller_load_same_files(const char *const *files, size_t n, size_t *same_as, uint64_t *bytes);

/* Checks that the sources of a tree-built store can be one run. Refused,
 * with TELLER_ERR_ARG and a message naming two files:
 *   - two files that hold the same rank;
 *   - two files that record different world sizes;
 *   - files that fall apart into groups sharing no collective instance
 *     and no moment of time (sources of one file always belong together;
 *     two sources belong together when their time spans overlap or a
 *     matched collective has members on both), e.g. traces of two hosts a
 *     year apart.
 * TELLER_OK otherwise. */
teller_status teller_load_check_run(const teller_store *st, teller_error *err);

#ifdef __cplusplus
}
#endif
#endif
