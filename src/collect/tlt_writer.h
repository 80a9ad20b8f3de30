/*
 * tlt_writer.h - the collector's side of the .tlt format (tlt_format.h):
 * a string table that interns names and remembers which are not written
 * yet, a batch of records, and a writer that turns them into checksummed,
 * zstd-compressed chunks on a file descriptor.
 *
 * Nothing here locks: the collector (inject.c) holds its mutex around the
 * table and the batch, and writes batches it swapped out from one thread at
 * a time. Nothing here prints. Needs no CUPTI, so tests and benches use it
 * directly.
 */
#ifndef TELLER_TLT_WRITER_H
#define TELLER_TLT_WRITER_H

#include <stddef.h>
#include <stdint.h>

#include "tlt_format.h"

/* Interned strings. Id 0 is the empty string; ids are dense. */
typedef struct tlt_strtab {
    char     *text;      /* all strings, NUL-terminated, back to back */
    size_t    text_len, text_cap;
    uint32_t *off;       /* per id: offset into text */
    uint32_t *len;       /* per id: length */
    size_t    off_cap, len_cap;
    uint32_t  n;
    uint32_t *hash;      /* open addressing: id + 1, 0 empty */
    uint32_t  hash_cap;  /* power of two */
    uint32_t  unwritten; /* ids >= this are not in any STRINGS chunk yet */
} tlt_strtab;

void tlt_strtab_init(tlt_strtab *t);
void tlt_strtab_free(tlt_strtab *t);
/* The id of s[0..len), adding it when new; UINT32_MAX when out of memory. */
uint32_t tlt_strtab_intern(tlt_strtab *t, const char *s, size_t len);
/* The text of an id (valid until the next intern), or NULL. */
const char *tlt_strtab_str(const tlt_strtab *t, uint32_t id);

/* Records waiting for the next flush. */
typedef struct tlt_batch {
    tlt_rec *recs;
    size_t   n, cap;
} tlt_batch;

/* Appends a record slot (zeroed); NULL when out of memory or when the batch
 * already holds max records (the caller counts a drop). */
tlt_rec *tlt_batch_add(tlt_batch *b, size_t max);
void tlt_batch_free(tlt_batch *b);

typedef struct tlt_writer {
    int      fd;
    uint32_t seq;
    void    *cctx;  /* ZSTD_CCtx */
    uint8_t *buf;   /* raw payload scratch */
    size_t   buf_cap;
    uint8_t *out;   /* header + compressed payload scratch */
    size_t   out_cap;
    int      level; /* zstd level */
} tlt_writer;

/* Takes an open descriptor and writes the file header. 0 on success, -1
 * with errno set. */
int tlt_writer_open(tlt_writer *w, int fd, uint32_t pid, int64_t start_ns);
/* Writes one chunk (compressed when that is smaller). 0 or -1 (errno). */
int tlt_writer_chunk(tlt_writer *w, uint16_t type, const void *payload, size_t len);
/* Writes the strings with ids in [from, t->n) as one STRINGS chunk (none
 * when the range is empty). 0 or -1. */
int tlt_writer_strings(tlt_writer *w, const tlt_strtab *t, uint32_t from);
/* Writes recs as one RECORDS chunk (none when n is 0). 0 or -1. */
int tlt_writer_records(tlt_writer *w, const tlt_rec *recs, size_t n);
/* Packing into memory, for writers of .tlt bytes other than a file (the
 * watcher's window images): the file header (pid, start ns,
 * CLOCK_REALTIME) at out (TLT_HEADER_SIZE bytes); a chunk's header at h
 * with its checksum, its stored payload already at h + TLT_CHUNK_HEADER;
 * an uncompressed chunk (header and payload) at out, which has room for
 * TLT_CHUNK_HEADER + n bytes, returning what it wrote. */
void tlt_header_pack(uint8_t *out, uint32_t pid, int64_t start_ns);
void tlt_chunk_seal(uint8_t *h, uint16_t type, uint16_t flags, uint32_t raw, uint32_t stored, uint32_t seq);
size_t tlt_chunk_pack(uint8_t *out, uint16_t type, uint32_t seq, const void *payload, uint32_t n);

/* Frees scratch memory; does not close the descriptor. */
void tlt_writer_free(tlt_writer *w);

#endif
