/*
 * report_internal.h - what the HTML and Perfetto writers share: the one
 * escaping function per output language, duration formatting, and the row
 * table (one row per thread or GPU stream of a source) over a tree-built
 * store, whose events are contiguous per row and sorted by start.
 */
#ifndef TELLER_REPORT_INTERNAL_H
#define TELLER_REPORT_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "teller/store.h"

/* Writes s as HTML text, safe in element content and in quoted attribute
 * values: & < > " ' become entities, control characters become a visible
 * "\xNN", invalid UTF-8 becomes U+FFFD. At most max bytes of s are written
 * (cut on a character boundary, followed by "..."); max 0 means all. */
void rep_html(FILE *f, const char *s, size_t max);

/* A duration for people: "812 ns", "12.4 us", "3.412 ms", "1.250 s".
 * Returns buf. */
char *rep_dur(char *buf, size_t cap, int64_t ns);

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
