/*
 * flip.h - what the fuzz targets of teller-mpi's buffers (fuzz_pack.c,
 * fuzz_summary.c, fuzz_rounds.c) share: the input's head, up to its first 0
 * byte, read as a Kineto trace to make a real buffer from, and its tail
 * read as 4-byte groups that damage that buffer.
 */
#ifndef TELLER_FUZZ_FLIP_H
#define TELLER_FUZZ_FLIP_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "teller/ingest.h"
#include "teller/store.h"

/* The input's head (before its first 0 byte) read as a Kineto trace into
 * a fresh store, or NULL; *from receives where its tail starts. */
static inline teller_store *fuzz_trace(const uint8_t *data, size_t size, size_t *from)
{
    const uint8_t *zero = memchr(data, 0, size);
    size_t tn = zero ? (size_t)(zero - data) : size;
    *from = zero ? tn + 1 : size;
    char *trace = malloc(tn ? tn : 1); /* an exact-size copy: AddressSanitizer sees reads past its end */
    teller_store *st = trace ? teller_store_create() : NULL;
    teller_error err;
    if (trace)
        memcpy(trace, data, tn);
    if (st && teller_ingest_kineto_mem(st, "fuzz.json", trace, tn, NULL, &err) != TELLER_OK) {
        teller_store_free(st);
        st = NULL;
    }
    free(trace);
    return st;
}

/* Each group of data[from..size) flips one byte of buf (n > 0 bytes): 3
 * bytes of position, 1 of XOR mask; the last group, when its mask is 0xFF,
 * cuts the buffer short at its position instead (*keep; n otherwise).
 * Returns 1 when buf was changed or cut, else 0. */
static inline int fuzz_flip(const uint8_t *data, size_t size, size_t from, unsigned char *buf, size_t n, size_t *keep)
{
    int flipped = 0;
    *keep = n;
    for (size_t at = from; at + 4 <= size; at += 4) {
        size_t pos = ((size_t)data[at] | (size_t)data[at + 1] << 8 | (size_t)data[at + 2] << 16) % n;
        if (at + 8 > size && data[at + 3] == 0xFF) {
            *keep = pos;
            flipped = 1;
            continue;
        }
        buf[pos] ^= data[at + 3];
        flipped |= data[at + 3] != 0;
    }
    return flipped;
}

#endif
