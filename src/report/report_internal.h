/*
 * report_internal.h - what the HTML and Perfetto writers share: the one
 * escaping function per output language, what they blame, and the row
 * table (one row per thread or GPU stream of a source) over a tree-built
 * store, whose events are contiguous per row and sorted by start.
 */
#ifndef TELLER_REPORT_INTERNAL_H
#define TELLER_REPORT_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "teller/diagnose.h"
#include "teller/store.h"

/* Writes s as HTML text, safe in element content and in quoted attribute
 * values: & < > " ' become entities, control characters become a visible
 * "\xNN", invalid UTF-8 becomes U+FFFD. At most max bytes of s are written
 * (cut on a character boundary, followed by "..."); max 0 means all. */
void rep_html(FILE *f, const char *s, size_t max);

/* rep_html with a <wbr> where an operator name may wrap: after '_', '/',
 * ':' (not between the two of "::"), ',' and '.' before a letter, and
 * before '(' and '<'. For HTML element content only (not attributes, not
 * SVG titles). */
void rep_html_name(FILE *f, const char *s, size_t max);

/* What the reports blame for a diagnosed step, from its top candidate.
 * The culprit event is outlined (HTML) and pointed at (Perfetto) only
 * when it lies on the root rank, or when no root rank is named. When it
 * does not (culprit_event is TELLER_NONE or on another rank, as for a
 * rank that never launched a collective its peers wait in), nothing is
 * drawn as the culprit; the ranks that waited in the top operator are
 * listed instead as evidence: per other rank, its longest event of that
 * operator in the step, kept when it lasted at least half the step's
 * excess and longer than the culprit's usual time. */
#define REP_MAX_VICTIMS 64
typedef struct rep_blame {
    uint32_t culprit;    /* the event to outline, TELLER_NONE when none lies on the root rank */
    int      missing;    /* no culprit, and the root rank's trace (loaded) has no event of the top
                          * operator in the step: it never launched it */
    int      unloaded;   /* no culprit, and no trace of the root rank was loaded */
    int32_t  other_rank; /* the rank of a culprit_event that is not on the root rank, else -1 */
    uint32_t victims[REP_MAX_VICTIMS]; /* the waiting ranks' events, by rank */
    size_t   nvictims;
    int64_t  waited_ns;  /* the longest of them */
} rep_blame;

/* Fills *b for step s (one pass over the events when there is no culprit
 * on the root rank; free otherwise). */
void rep_blame_of(const teller_store *st, const teller_diag_step *s, rep_blame *b);

/* One row: a CPU thread or a GPU stream of one source. */
typedef struct rep_row {
    uint32_t first, n; /* events [first, first+n) */
    uint16_t source;
    uint8_t  gpu;
    uint8_t  sorted;   /* starts are non-decreasing inside the row */
    int32_t  pid, tid;
    int32_t  rank, node;
} rep_row;

/* Cuts the event table into rows (a new row wherever source, GPU flag, pid
 * or tid changes). *rows is malloc'd. -1 when out of memory. */
int rep_rows(const teller_store *st, rep_row **rows, size_t *n);

/* The row holding event e (binary search on first), or SIZE_MAX. */
size_t rep_row_of(const rep_row *rows, size_t n, uint32_t e);

#endif
