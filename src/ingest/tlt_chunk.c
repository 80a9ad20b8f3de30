/*
 * tlt_chunk.c - the chunk walk shared by the .tlt reader and the watcher
 * (tlt_chunk.h). Damage is said, never fatal: garbage and bad headers are
 * skipped to the next chunk magic, a wrong checksum skips the chunk, bytes
 * that end inside a chunk are a cut the caller decides about.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include <zstd.h>

#include "tlt_chunk.h"

/* The next chunk magic at or after pos, or len. */
static size_t resync(const uint8_t *d, size_t len, size_t pos)
{
    for (; pos + 4 <= len; pos++)
        if (d[pos] == 'T' && tlt_get32(d + pos) == TLT_CHUNK_MAGIC)
            return pos;
    return len;
}

static tlt_next skip_to(const uint8_t *d, size_t len, size_t *pos, size_t from, tlt_chunk *c, char *msg, size_t cap,
                        const char *what)
{
    size_t next = resync(d, len, from);
    c->at = *pos;
    c->skipped = next - *pos;
    c->garbage = from == *pos + 1;
    snprintf(msg, cap, "%s: %zu bytes skipped", what, next - *pos);
    *pos = next;
    return TLT_NEXT_SKIP;
}

tlt_next tlt_chunk_next(const uint8_t *d, size_t len, size_t *pos, tlt_chunk *c, tlt_scratch *s, char *msg,
                        size_t cap)
{
    size_t at = *pos;
    if (at >= len)
        return TLT_NEXT_DONE;
    c->at = at;
    if (len - at < TLT_CHUNK_HEADER) {
        snprintf(msg, cap, "the bytes end inside a chunk header (%zu of %d bytes)", len - at, TLT_CHUNK_HEADER);
        return TLT_NEXT_CUT;
    }
    const uint8_t *h = d + at;
    if (tlt_get32(h) != TLT_CHUNK_MAGIC)
        return skip_to(d, len, pos, at + 1, c, msg, cap, "not a chunk");
    uint16_t flags = tlt_get16(h + 6);
    uint32_t raw = tlt_get32(h + 8), stored = tlt_get32(h + 12);
    c->type = tlt_get16(h + 4);
    c->seq = tlt_get32(h + 16);
    if (raw > TLT_CHUNK_MAX || stored > TLT_CHUNK_MAX || (!(flags & TLT_CHUNK_ZSTD) && raw != stored))
        return skip_to(d, len, pos, at + 1, c, msg, cap, "bad chunk header");
    if (len - at - TLT_CHUNK_HEADER < stored) {
        snprintf(msg, cap, "the bytes end inside a chunk (%zu of %u bytes)", len - at - TLT_CHUNK_HEADER, stored);
        return TLT_NEXT_CUT;
    }
    const uint8_t *body = h + TLT_CHUNK_HEADER;
    uLong crc = crc32(0, h, 20);
    crc = crc32(crc, body, stored);
    if ((uint32_t)crc != tlt_get32(h + 20)) {
        char what[64];
        snprintf(what, sizeof what, "chunk %u has a wrong checksum", c->seq);
        return skip_to(d, len, pos, at + 4, c, msg, cap, what);
    }
    *pos = at + TLT_CHUNK_HEADER + stored;
    c->at = at + TLT_CHUNK_HEADER;
    c->p = body;
    c->n = stored;
    if (flags & TLT_CHUNK_ZSTD) {
        if (raw > s->cap) {
            uint8_t *nb = realloc(s->raw, raw ? raw : 1);
            if (!nb)
                return TLT_NEXT_NOMEM;
            s->raw = nb;
            s->cap = raw;
        }
        size_t got = ZSTD_decompress(s->raw, raw, body, stored);
        if (ZSTD_isError(got) || got != raw) {
            c->skipped = TLT_CHUNK_HEADER + (size_t)stored;
            c->garbage = 0;
            snprintf(msg, cap, "chunk %u does not decompress; skipped", c->seq);
            return TLT_NEXT_SKIP;
        }
        c->p = s->raw;
        c->n = raw;
    }
    return TLT_NEXT_CHUNK;
}

int tlt_payload_strings(const uint8_t *p, size_t n, int (*fn)(void *ctx, uint32_t id, const char *s, size_t len),
                        void *ctx)
{
    if (n < 4)
        return -1;
    uint32_t cnt = tlt_get32(p);
    size_t off = 4;
    for (uint32_t i = 0; i < cnt; i++) {
        if (n - off < 8)
            return -1;
        uint32_t id = tlt_get32(p + off), l = tlt_get32(p + off + 4);
        off += 8;
        if (l > n - off || id == 0 || id >= TLT_MAX_STRING_IDS)
            return -1;
        if (fn(ctx, id, (const char *)p + off, l))
            return -2;
        off += l;
    }
    return 0;
}

int tlt_payload_records(const uint8_t *p, size_t n, uint32_t *count, size_t *size)
{
    if (n < 8)
        return -1;
    size_t rs = tlt_get16(p);
    uint32_t cnt = tlt_get32(p + 4);
    if (rs < TLT_REC_SIZE || (n - 8) / rs < cnt)
        return -1;
    *count = cnt;
    *size = rs;
    return 0;
}

void tlt_payload_note(const uint8_t *p, size_t n,
                      void (*fn)(void *ctx, const char *k, size_t kl, const char *v, size_t vl), void *ctx)
{
    size_t i = 0;
    while (i < n) {
        size_t e = i;
        while (e < n && p[e] != '\n')
            e++;
        const char *k = (const char *)p + i;
        const char *eq = memchr(k, '=', e - i);
        if (eq) {
            size_t kl = (size_t)(eq - k);
            fn(ctx, k, kl, eq + 1, e - i - kl - 1);
        }
        i = e + 1;
    }
}
