/*
 * check.h - makes every number a diagnosis states again from the trace
 * and checks that it prints nothing else (`teller diagnose --check`).
 *
 * Each number of an explanation is one of its step's facts (diagnose.h
 * teller_fact). The checker repeats each fact's definition on the events,
 * the step table and the collectives of the store the diagnosis was made
 * from, independently of how the diagnosis computed it, and compares the
 * value and its printed text; then it reads every number of every
 * explanation and requires it to be a fact's text or one of the step's
 * identifiers (its step, ranks, nodes, counts). The HTML report's numbers
 * are checked against the facts they name (report.h).
 */
#ifndef TELLER_CHECK_H
#define TELLER_CHECK_H

#include <stddef.h>
#include <stdint.h>

#include "teller/diagnose.h"
#include "teller/error.h"
#include "teller/store.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct teller_check_report {
    uint64_t facts;      /* facts made again from the trace */
    uint64_t numbers;    /* numbers read in explanations and reports, each matched to a fact or an identifier */
    uint64_t mismatches; /* facts whose value the trace does not give, and numbers that are no fact */
    uint64_t reference;  /* facts of a reference run (TELLER_FACT_REFERENCE): not made again here */
    char     first[512]; /* the first mismatch, in words ("" when none) */
} teller_check_report;

/* Checks every fact and every explanation of d, made from st (tree-built);
 * adds to *r (zero it first). TELLER_ERR_NOMEM when out of memory. */
teller_status teller_check_diagnosis(const teller_store *st, const teller_diagnosis *d, teller_check_report *r,
                                     teller_error *err);

/* Checks an HTML report of d, made from st (html[0..n)): every element it
 * marks as a fact (`data-fact="STEP:I"`, the I-th fact of step STEP)
 * prints that fact's text, and every paragraph it marks as a step's
 * explanation (`<p data-explains="STEP">`) prints no number that is not
 * one of the step's facts or identifiers. Adds to *r; TELLER_ERR_NOMEM
 * when out of memory. */
teller_status teller_check_html(const teller_store *st, const teller_diagnosis *d, const char *html, size_t n,
                                teller_check_report *r, teller_error *err);

#ifdef __cplusplus
}
#endif
#endif
