/*
 * tlt_chunk.h - walking the chunks of .tlt bytes (layout in
 * src/collect/tlt_format.h): the one chunk parser of the file reader
 * (tlt.c), which has the whole file, and of `teller watch` (src/watch),
 * which has what the collector flushed so far.
 */
#ifndef TELLER_TLT_CHUNK_H
#define TELLER_TLT_CHUNK_H

#include <stddef.h>
#include <stdint.h>

#include "../collect/tlt_format.h"

typedef enum tlt_next {
    TLT_NEXT_CHUNK = 0, /* a whole, intact chunk: *c holds it, *pos is past it */
    TLT_NEXT_SKIP,      /* damage (garbage, a bad header or checksum, a payload that does not
                         * decompress): *pos is past it, msg says what and how many bytes */
    TLT_NEXT_CUT,       /* the bytes end inside the chunk at *pos (a writer mid-write, or a
                         * killed one): *pos is unchanged, msg says how much is there */
    TLT_NEXT_DONE,      /* *pos is at the end */
    TLT_NEXT_NOMEM
} tlt_next;

typedef struct tlt_chunk {
    uint16_t       type;
    uint32_t       seq;
    const uint8_t *p;  /* the payload, decompressed (into the scratch, or in place) */
    size_t         n;
    size_t         at; /* CHUNK: where its payload begins; SKIP, CUT: where the damage is */
    size_t         skipped; /* SKIP: the bytes passed over */
    int            garbage; /* SKIP: 1 when they were no chunk (garbage, a bad header), 0 when a chunk */
} tlt_chunk;

/* Where a decompressed payload goes; zero-initialised, freed by the caller. */
typedef struct tlt_scratch {
    uint8_t *raw;
    size_t   cap;
} tlt_scratch;

/* Reads the chunk at *pos of d[0..len); msg (cap bytes) gets the sentence
 * for SKIP and CUT, c->at its offset. */
tlt_next tlt_chunk_next(const uint8_t *d, size_t len, size_t *pos, tlt_chunk *c, tlt_scratch *s, char *msg,
                        size_t cap);

/* The strings of a STRINGS payload, each handed to fn (ids are the file's,
 * never 0). 0; -1 malformed (the strings before the damage were handed
 * over); -2 when fn returned nonzero. */
int tlt_payload_strings(const uint8_t *p, size_t n, int (*fn)(void *ctx, uint32_t id, const char *s, size_t len),
                        void *ctx);

/* The records of a RECORDS payload: 0 with *count records of *size bytes
 * (>= TLT_REC_SIZE) at p + 8, or -1 malformed. */
int tlt_payload_records(const uint8_t *p, size_t n, uint32_t *count, size_t *size);

/* The key=value lines of a NOTE or END payload, each handed to fn. */
void tlt_payload_note(const uint8_t *p, size_t n,
                      void (*fn)(void *ctx, const char *k, size_t kl, const char *v, size_t vl), void *ctx);

/* Largest file string id a reader accepts. */
#define TLT_MAX_STRING_IDS (1u << 26)

#endif
