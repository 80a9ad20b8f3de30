/*
 * predict.h - per-step predictions in the format of ../shared/BENCHMARK.md,
 * shared by every analysis that writes them (baselines, diagnosis).
 */
#ifndef TELLER_PREDICT_H
#define TELLER_PREDICT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define TELLER_MAX_CANDIDATES 8

typedef struct teller_candidate {
    int32_t rank;
    char    op[512];    /* operator name as in the trace */
    char    layer[16];  /* "KERNEL", "RUNTIME", ... */
    double  score;
} teller_candidate;

#define TELLER_MAX_EVIDENCE 6

/* A log line (or a trace fact) that supports a finding. */
typedef struct teller_evidence {
    char     kind[8];   /* "log" or "trace" */
    int32_t  node;      /* log: the node whose log holds it; -1 otherwise */
    int32_t  rank;      /* -1 when unknown */
    uint64_t line;      /* log: 1-based line number; trace: event index */
    int64_t  time_ns;   /* on node 0's clock, INT64_MIN when unknown */
    char     file[256]; /* log file */
    char     text[512]; /* verbatim (truncated) line, or a trace fact */
} teller_evidence;

typedef struct teller_step_pred {
    uint32_t         step;
    double           score;       /* abnormality, 0..1 */
    int              abnormal;
    char             fault_type[32];
    char             view[16];
    teller_candidate cand[TELLER_MAX_CANDIDATES];
    int              ncand;
    teller_evidence  ev[TELLER_MAX_EVIDENCE]; /* log lines and trace facts behind the finding */
    int              nev;
    char             explanation[1024];
} teller_step_pred;

/* Writes {"version": 1, "steps": [...]} with every step given, evidence included. */
void teller_pred_write(FILE *f, const teller_step_pred *steps, size_t n);

/* Writes more of a prediction: called with i = SIZE_MAX before "steps" (top-level members, each
 * written as `"key": value,\n`), and after each step's fields with i its index (members written as
 * `, "key": value`). */
typedef void (*teller_pred_extra)(FILE *f, void *ctx, size_t i);
/* One step's object, as teller_pred_write writes it (no newline), with
 * extra's members for index i (extra NULL: none): a line of `teller watch
 * --json`. */
void teller_pred_write_step(FILE *f, const teller_step_pred *p, teller_pred_extra extra, void *ctx, size_t i);
/* teller_pred_write with extra members from extra (NULL: none). */
void teller_pred_write_ex(FILE *f, const teller_step_pred *steps, size_t n, teller_pred_extra extra, void *ctx);

#endif
