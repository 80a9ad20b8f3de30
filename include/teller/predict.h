/*
 * predict.h - per-step predictions in the format of ../shared/BENCHMARK.md,
 * shared by every analysis that writes them (baselines, diagnosis).
 */
#ifndef TELLER_PREDICT_H
#define TELLER_PREDICT_H

#include <stdint.h>
#include <stdio.h>

#define TELLER_MAX_CANDIDATES 8

typedef struct teller_candidate {
    int32_t rank;
    char    op[512];    /* operator name as in the trace */
    char    layer[16];  /* "KERNEL", "RUNTIME", ... */
    double  score;
} teller_candidate;

typedef struct teller_step_pred {
    uint32_t         step;
    double           score;       /* abnormality, 0..1 */
    int              abnormal;
    char             fault_type[32];
    char             view[16];
    teller_candidate cand[TELLER_MAX_CANDIDATES];
    int              ncand;
    char             explanation[1024];
} teller_step_pred;

/* Writes {"version": 1, "steps": [...]} with every step given. */
void teller_pred_write(FILE *f, const teller_step_pred *steps, size_t n);

#endif
