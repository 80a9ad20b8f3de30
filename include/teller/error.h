/*
 * error.h - status codes and the error record every library call fills.
 *
 * Library code never prints and never exits. A call that fails returns a
 * non-zero teller_status and, when the caller passed a teller_error, fills it
 * with a message and the position of the problem (file and byte offset, or
 * line). The CLI turns that into "teller: FILE:OFFSET: message".
 */
#ifndef TELLER_ERROR_H
#define TELLER_ERROR_H

#include <stdint.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum teller_status {
    TELLER_OK = 0,
    TELLER_ERR_IO,        /* cannot open, read or write a file */
    TELLER_ERR_FORMAT,    /* input is not what the reader expects */
    TELLER_ERR_TRUNCATED, /* input ends early */
    TELLER_ERR_NOMEM,     /* an allocation failed */
    TELLER_ERR_ARG,       /* the caller passed something unusable */
    TELLER_ERR_LIMIT      /* input exceeds a documented limit */
} teller_status;

/* Where a problem is. offset is a byte offset in the (decompressed) input;
 * line is 1-based and 0 when unknown. */
typedef struct teller_error {
    teller_status code;
    char          file[512];
    uint64_t      offset;
    uint64_t      line;
    char          msg[512];
} teller_error;

/* Fills err (if non-NULL) and returns code. printf-style message. */
teller_status teller_error_set(teller_error *err, teller_status code, const char *file,
                               uint64_t offset, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

/* Resets err to TELLER_OK with empty fields. */
void teller_error_clear(teller_error *err);

/* A short constant name for a status ("format error", ...). */
const char *teller_status_str(teller_status code);

#ifdef __cplusplus
}
#endif
#endif
