/*
 * logs_internal.h - what the files of src/logs share: the parse context
 * (reference time, last date seen) and the pieces of a timestamp.
 */
#ifndef TELLER_LOGS_INTERNAL_H
#define TELLER_LOGS_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "teller/logs.h"

/* The parts of a timestamp as a line states them. */
typedef struct log_time {
    int     have;       /* a time of day was found */
    int     has_date;   /* month and day */
    int     has_year;
    int     subsec;     /* ns was stated */
    int     utc;        /* ends in Z: no zone correction */
    int     y, mo, d, h, mi, s;
    int64_t ns;
} log_time;

/* A file's own header, learned by header.c: the class of each of its
 * first n fields. */
enum { LOG_LAYOUT_MAX = 12, LOG_LAYOUT_SAMPLES = 64 };

typedef struct log_layout {
    uint8_t n;
    uint8_t cls[LOG_LAYOUT_MAX];
} log_layout;

/* The field classes of the sampled lines' messages (0xff past the end). */
typedef struct log_layout_sampler {
    size_t  n;
    uint8_t cls[LOG_LAYOUT_SAMPLES][LOG_LAYOUT_MAX + 1];
} log_layout_sampler;

void log_layout_sample(log_layout_sampler *ls, const char *s, size_t n);
void log_layout_learn(const log_layout_sampler *ls, log_layout *L);
/* Bytes of s that are the learned header (and the blanks after it), 0 when
 * the line does not have it; *level gets a LEVEL field's level, *t the
 * date and time the header states (untouched when it states none). */
size_t log_layout_strip(const log_layout *L, const char *s, size_t n, uint8_t *level, log_time *t);

typedef struct parse_ctx {
    int32_t tz_offset_s;
    int     ref_year;
    int64_t ref_day;   /* days since the epoch of the reference, INT64_MIN when none */
    int64_t last_day;  /* date of the last timed line, INT64_MIN before one */
    int64_t last_tod;  /* its second of the day */
    const log_layout *layout; /* the file's learned header, NULL when none */
} parse_ctx;

void log_ctx_init(parse_ctx *c, const teller_log_opts *o);
void log_parse_line_ctx(parse_ctx *c, const char *s, size_t n, teller_log_record *r);
size_t log_capture_prefix(const char *s, size_t n, int64_t *ns);
int log_is_exception_line(const char *s, size_t n);
void log_find_requests(const char *s, size_t n, teller_log_record *r);
int64_t log_days_from_civil(int64_t y, int m, int d);

#endif
