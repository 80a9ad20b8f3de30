/*
 * run.h - one run behind one handle, for programs and language bindings
 * (the Python package, python/) that want tables and reports rather than
 * the store's columns:
 *
 *   teller_run_load       names (files, directories) -> a loaded, tree-built
 *                         run, as every `teller` command loads its traces
 *   teller_run_steps      per step and rank: where the time went
 *   teller_run_kernels    every kernel, copy and memset, one row each
 *   teller_run_collectives every member of every matched collective
 *   teller_run_diagnose   the diagnosis (diagnose.h), kept in the run
 *   teller_run_reference  what the run says is usual, for diagnosing another against it
 *   teller_run_baseline   a reference baseline's predictions, kept in the run
 *   teller_run_render     predictions, candidates, HTML or Perfetto, in memory
 *
 * Every call returns a teller_status and fills the caller's teller_error
 * (file, offset, message) on failure; none prints or exits. The tables are
 * copied into the caller's rows with the count-then-fill convention: a
 * call with cap 0 (rows may be NULL) sets *n to the number of rows; a call
 * with cap >= *n fills them. Names in rows are interned string ids: their
 * text is teller_store_str(teller_run_store(run), id). A run is used from
 * one thread at a time; its calls spread their own work over opts.jobs
 * threads.
 */
#ifndef TELLER_RUN_H
#define TELLER_RUN_H

#include <stddef.h>
#include <stdint.h>

#include "teller/diagnose.h"
#include "teller/error.h"
#include "teller/store.h"
#include "teller/tree.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct teller_run teller_run;

/* How a run is loaded: the CLI's common options (README, "Commands"). */
typedef struct teller_run_opts {
    int32_t     jobs;          /* threads for loading and analysis; <= 0: the cores this process may use */
    int32_t     force;         /* 1: load inputs that teller_load_check_run (load.h) refuses */
    int32_t     skip_python;   /* 1: leave out python_function events */
    int32_t     gpus_per_node; /* > 0: node = rank / gpus_per_node (overrides the traces) */
    const char *step_pattern;  /* POSIX extended regex for step markers; NULL: the built-in set */
} teller_run_opts;

teller_run_opts teller_run_defaults(void);

/* Expands names (teller_load_expand: a directory gives its traces) and
 * loads them as one run (teller_load), refusing inputs that cannot be one
 * run unless opts->force. opts NULL: the defaults. The first error is the
 * error: its file, byte offset and message. *out is freed with
 * teller_run_free. */
teller_status teller_run_load(const char *const *names, size_t nnames, const teller_run_opts *opts,
                              teller_run **out, teller_error *err);
/* Frees the run, its store, its diagnosis and baseline. Accepts NULL. */
void teller_run_free(teller_run *r);

/* The run's store (store.h): its strings, sources, warnings and columns.
 * Lives as long as the run. */
const teller_store *teller_run_store(const teller_run *r);

/* One row of teller_run_steps: a step on a rank. */
typedef struct teller_run_step {
    teller_step_summary sum;        /* tree.h: its window, kernel, comm, copy and idle time */
    uint32_t            annotation; /* interned name of its step marker, 0 when it has none */
    int32_t             kind;       /* teller_step_kind of the annotation */
} teller_run_step;

/* Every step of every rank, by step then rank. TELLER_ERR_NOMEM, else OK. */
teller_status teller_run_steps(const teller_run *r, teller_run_step *rows, size_t cap, size_t *n,
                               teller_error *err);

/* One row of teller_run_kernels: a kernel, copy or memset. */
typedef struct teller_run_kernel {
    int64_t  start_ns;  /* epoch ns on node 0's clock */
    int64_t  dur_ns;
    int64_t  bytes;     /* a copy's or memset's size, -1 unknown or a kernel */
    uint32_t event;     /* its index in the store's event table */
    uint32_t name;      /* interned */
    uint32_t step;      /* TELLER_NONE outside every step */
    int32_t  rank;      /* -1 unknown */
    int32_t  node;
    int32_t  device;
    int32_t  stream;
    uint32_t corr;      /* correlation id, 0 none */
    uint32_t launch;    /* interned name of the API call that launched it, 0 when not linked */
    uint8_t  layer;     /* TELLER_LAYER_KERNEL, _MEMCPY or _MEMSET */
    uint8_t  comm;      /* 1: part of a collective or p2p transfer */
    uint8_t  pad[2];
} teller_run_kernel;

/* Every GPU kernel, copy and memset of the run, in the store's order (by
 * source, then device and stream, then time). */
teller_status teller_run_kernels(const teller_run *r, teller_run_kernel *rows, size_t cap, size_t *n,
                                 teller_error *err);

/* One row of teller_run_collectives: one rank's part in one collective. */
typedef struct teller_run_coll {
    uint32_t instance; /* index of the collective instance (teller_store_collectives) */
    uint32_t key;      /* interned matching key: process group (or stream) and op */
    uint32_t seq;      /* the instance's order within its key */
    uint32_t members;  /* ranks taking part */
    int32_t  rank;
    uint32_t kernel;   /* the rank's communication kernel (event index) */
    uint32_t name;     /* interned kernel name */
    uint32_t op;       /* interned collective name from the trace ("allreduce"), 0 unknown */
    int64_t  start_ns; /* the kernel's start and duration */
    int64_t  dur_ns;
    int64_t  bytes;    /* message size, -1 unknown */
    uint32_t step;     /* the kernel's step, TELLER_NONE outside every step */
    uint32_t pad;
} teller_run_coll;

/* Every member of every matched collective, instance after instance. */
teller_status teller_run_collectives(const teller_run *r, teller_run_coll *rows, size_t cap, size_t *n,
                                     teller_error *err);

/* Diagnoses the run (teller_diagnose with opts; NULL: the defaults, no
 * logs, no model) and keeps the diagnosis in the run, replacing one made
 * before. *out (may be NULL) gets it: it lives until the next
 * teller_run_diagnose or teller_run_free. A log that cannot be read is
 * the error, naming it. */
teller_status teller_run_diagnose(teller_run *r, const teller_diag_opts *opts, const teller_diagnosis **out,
                                  teller_error *err);

/* What the run, as a healthy reference, says is usual
 * (teller_diag_reference_make with the defaults), for diagnosing another
 * run against it (teller_diag_opts.reference); *out is the caller's
 * (teller_diag_reference_free). */
teller_status teller_run_reference(teller_run *r, teller_diag_reference **out, teller_error *err);

/* Makes the predictions of a reference baseline (baseline.h: "zscore" or
 * "gmm") and keeps them in the run. TELLER_ERR_ARG for another name. */
teller_status teller_run_baseline(teller_run *r, const char *which, teller_error *err);

/* What teller_run_render writes. */
typedef enum teller_run_output {
    TELLER_RUN_PREDICTIONS = 0, /* the diagnosis's predictions JSON (teller_diag_write_preds) */
    TELLER_RUN_CANDIDATES,      /* its candidates JSON (teller_diag_write_candidates) */
    TELLER_RUN_HTML,            /* the HTML report (report.h), title the first file's name */
    TELLER_RUN_PERFETTO,        /* the trace with the findings (report.h), uncompressed */
    TELLER_RUN_BASELINE         /* the baseline's predictions JSON (teller_pred_write) */
} teller_run_output;

/* Writes one output into memory: *out (NUL-terminated, *len bytes
 * without the NUL) is freed with teller_free. TELLER_ERR_ARG when the
 * output needs a diagnosis (or a baseline) the run has not made. */
teller_status teller_run_render(const teller_run *r, teller_run_output what, char **out, size_t *len,
                                teller_error *err);

/* Frees memory the library handed to the caller to free (teller_run_render).
 * Accepts NULL. */
void teller_free(void *p);

#ifdef __cplusplus
}
#endif
#endif
