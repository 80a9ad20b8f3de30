/*
 * sim_out.h - buffered writers for the simulator: JSON text into a gzip
 * stream (one per rank), and log lines collected per node and written in
 * time order. Used by src/sim/ and by the trace writer of src/perturb/.
 */
#ifndef TELLER_SIM_OUT_H
#define TELLER_SIM_OUT_H

#include <stddef.h>
#include <stdint.h>
#include <zlib.h>

typedef struct obuf {
    char  *b;
    size_t n, cap;
    gzFile gz;   /* NULL: kept in memory */
    int    failed;
} obuf;

void ob_init(obuf *o, gzFile gz);
void ob_raw(obuf *o, const char *s, size_t n);
void ob_s(obuf *o, const char *s);           /* raw C string */
void ob_jstr(obuf *o, const char *s);        /* JSON string literal with quotes (util/textout rules) */
void ob_i64(obuf *o, int64_t v);
void ob_us(obuf *o, int64_t ns);             /* ns as microseconds with 3 decimals */
void ob_fmt(obuf *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void ob_flush(obuf *o);                      /* to the gzip stream */
void ob_free(obuf *o);

#endif
