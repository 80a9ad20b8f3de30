/*
 * error.c - filling teller_error records. See include/teller/error.h.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "teller/error.h"

teller_status teller_error_set(teller_error *err, teller_status code, const char *file,
                               uint64_t offset, const char *fmt, ...)
{
    if (!err)
        return code;
    err->code = code;
    snprintf(err->file, sizeof err->file, "%s", file ? file : "");
    err->offset = offset;
    err->line = 0;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
    return code;
}

void teller_error_clear(teller_error *err)
{
    if (err)
        memset(err, 0, sizeof *err);
}

const char *teller_status_str(teller_status code)
{
    switch (code) {
    case TELLER_OK: return "ok";
    case TELLER_ERR_IO: return "i/o error";
    case TELLER_ERR_FORMAT: return "format error";
    case TELLER_ERR_TRUNCATED: return "truncated input";
    case TELLER_ERR_NOMEM: return "out of memory";
    case TELLER_ERR_ARG: return "bad argument";
    case TELLER_ERR_LIMIT: return "limit exceeded";
    }
    return "unknown error";
}
