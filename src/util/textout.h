/*
 * textout.h - see textout.c.
 */
#ifndef TELLER_TEXTOUT_H
#define TELLER_TEXTOUT_H

#include <stddef.h>
#include <stdio.h>

/* The length (2-4) of the valid UTF-8 sequence starting at p (p[0] >= 0x80),
 * or 0 when it is not one. Reads at most up to the first byte that breaks it. */
int teller_utf8_seq(const unsigned char *p);

/* Writes s as a JSON string literal with its quotes; control characters as
 * \u00XX, invalid UTF-8 as \ufffd, so the output is always valid JSON. */
void teller_json_put(FILE *f, const char *s);

/* The same writer into any sink (an in-memory buffer, a gzip stream). */
typedef void (*teller_text_sink)(void *ctx, const char *s, size_t n);
void teller_json_put_to(teller_text_sink put, void *ctx, const char *s);

#endif
