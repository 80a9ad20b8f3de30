/*
 * tlt_format.h - the .tlt trace file: what the collector writes and the
 * ingest reader (src/ingest/tlt.c) reads. No CUPTI types here, so the
 * reader builds without the CUDA toolkit.
 *
 * A file is a 32-byte header followed by self-describing chunks, all
 * little-endian:
 *
 *   header  magic[8] "\x89TLT\r\n\x1a\n", u16 version, u16 header size,
 *           u32 pid, i64 start ns (CLOCK_REALTIME), u32 clock (0: REALTIME),
 *           u32 crc32 of the 28 bytes before it
 *   chunk   u32 magic "TLTC", u16 type, u16 flags (bit 0: zstd),
 *           u32 raw length, u32 stored length, u32 sequence number,
 *           u32 crc32 of the 20 header bytes before it and the stored payload,
 *           then the stored payload
 *
 * Payloads (after decompression):
 *   STRINGS  u32 count, then count x {u32 id, u32 len, len bytes}; ids are
 *            defined before any RECORDS chunk that uses them
 *   RECORDS  u16 record size, u16 0, u32 count, then count records; a
 *            reader takes the first TLT_REC_SIZE bytes of a longer record
 *            (a newer writer appends fields) and skips a shorter one
 *   NOTE     text lines "key=value\n": host, pid, rank, cupti_version,
 *            dropped_cupti, dropped_buffer, error (counts are cumulative)
 *   END      like NOTE; written once by a clean exit
 *
 * A flush writes STRINGS, RECORDS and (when a count changed) NOTE with one
 * write() each, so a killed process loses at most the data since the last
 * flush; a reader stops at the first chunk that is cut short, skips a chunk
 * whose checksum is wrong, and resynchronises on the next chunk magic.
 */
#ifndef TELLER_TLT_FORMAT_H
#define TELLER_TLT_FORMAT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define TLT_MAGIC        "\x89TLT\r\n\x1a\n"
#define TLT_VERSION      1
#define TLT_HEADER_SIZE  32
#define TLT_CHUNK_MAGIC  0x43544c54u /* "TLTC" read as little-endian u32 */
#define TLT_CHUNK_HEADER 24
#define TLT_CHUNK_ZSTD   1u
#define TLT_CHUNK_MAX    (256u << 20) /* no chunk payload is larger (raw or stored) */

enum tlt_chunk_type {
    TLT_CHUNK_STRINGS = 1,
    TLT_CHUNK_RECORDS = 2,
    TLT_CHUNK_NOTE    = 3,
    TLT_CHUNK_END     = 4
};

/* Record kinds. CUPTI ones keep the CUPTI record's fields; NVTX ones come
 * from our NVTX injection. */
enum tlt_rec_kind {
    TLT_REC_KERNEL  = 1, /* dev, stream, ctx, corr, grid, block; aux registers/thread; val graph node id; sub launch type */
    TLT_REC_RUNTIME = 2, /* dev = pid, stream = tid, corr; aux cbid; val return value */
    TLT_REC_DRIVER  = 3, /* as RUNTIME */
    TLT_REC_MEMCPY  = 4, /* dev, stream, ctx, corr; val bytes; sub copy kind; aux src kind << 8 | dst kind; grid[0] graph id */
    TLT_REC_MEMSET  = 5, /* dev, stream, ctx, corr; val bytes; aux memory kind; grid[0] value; grid[1] graph id */
    TLT_REC_SYNC    = 6, /* stream, ctx, corr; sub sync type; grid[0] CUDA event id; val return value; dev unknown (0xffffffff) */
    TLT_REC_EXTCORR = 7, /* corr; sub external kind; val external id; no time */
    TLT_REC_OVERHEAD= 8, /* grid[0] overhead kind (CUpti_ActivityOverheadKind); aux object kind; dev/stream object ids (pid/tid or device/stream); ctx */
    TLT_REC_MARKER  = 9, /* CUPTI Marker2: start = timestamp; ctx marker id; sub flags; val domain string id; dev/stream pid/tid */
    TLT_REC_RANGE   = 10,/* NVTX range: dev = pid, stream = tid, ctx = domain string id (0 default), aux depth, sub payload type, val payload */
    TLT_REC_MARK    = 11 /* NVTX mark: as RANGE with end == start */
};

/* One record, in memory; on disk the same fields in this order,
 * little-endian, TLT_REC_SIZE bytes. */
typedef struct tlt_rec {
    uint8_t  kind;
    uint8_t  sub;
    uint16_t aux;
    uint32_t name;  /* string id, 0 = none */
    int64_t  start; /* ns, CLOCK_REALTIME */
    int64_t  end;
    uint32_t corr;
    uint32_t dev;
    uint32_t stream;
    uint32_t ctx;
    uint64_t val;
    uint32_t grid[3];
    uint32_t block[3];
} tlt_rec;

#define TLT_REC_SIZE 72
#define TLT_NO_DEVICE 0xffffffffu

static inline void tlt_put16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); }
static inline void tlt_put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}
static inline void tlt_put64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}
static inline uint16_t tlt_get16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
static inline uint32_t tlt_get32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static inline uint64_t tlt_get64(const uint8_t *p) { return tlt_get32(p) | (uint64_t)tlt_get32(p + 4) << 32; }

/* The in-memory record has no padding and the file's field order, so on a
 * little-endian machine packing is one copy. */
_Static_assert(sizeof(tlt_rec) == TLT_REC_SIZE && offsetof(tlt_rec, name) == 4 && offsetof(tlt_rec, start) == 8 &&
                   offsetof(tlt_rec, corr) == 24 && offsetof(tlt_rec, val) == 40 && offsetof(tlt_rec, grid) == 48 &&
                   offsetof(tlt_rec, block) == 60,
               "tlt_rec must match the file layout");

/* Serialises r into TLT_REC_SIZE bytes at p. */
static inline void tlt_rec_pack(uint8_t *p, const tlt_rec *r)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    memcpy(p, r, TLT_REC_SIZE);
#else
    p[0] = r->kind;
    p[1] = r->sub;
    tlt_put16(p + 2, r->aux);
    tlt_put32(p + 4, r->name);
    tlt_put64(p + 8, (uint64_t)r->start);
    tlt_put64(p + 16, (uint64_t)r->end);
    tlt_put32(p + 24, r->corr);
    tlt_put32(p + 28, r->dev);
    tlt_put32(p + 32, r->stream);
    tlt_put32(p + 36, r->ctx);
    tlt_put64(p + 40, r->val);
    for (int i = 0; i < 3; i++) {
        tlt_put32(p + 48 + 4 * i, r->grid[i]);
        tlt_put32(p + 60 + 4 * i, r->block[i]);
    }
#endif
}

static inline void tlt_rec_unpack(tlt_rec *r, const uint8_t *p)
{
    r->kind = p[0];
    r->sub = p[1];
    r->aux = tlt_get16(p + 2);
    r->name = tlt_get32(p + 4);
    r->start = (int64_t)tlt_get64(p + 8);
    r->end = (int64_t)tlt_get64(p + 16);
    r->corr = tlt_get32(p + 24);
    r->dev = tlt_get32(p + 28);
    r->stream = tlt_get32(p + 32);
    r->ctx = tlt_get32(p + 36);
    r->val = tlt_get64(p + 40);
    for (int i = 0; i < 3; i++) {
        r->grid[i] = tlt_get32(p + 48 + 4 * i);
        r->block[i] = tlt_get32(p + 60 + 4 * i);
    }
}

#endif
