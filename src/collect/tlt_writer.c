/*
 * tlt_writer.c - string table, record batch and chunk writer of the .tlt
 * format (layout in tlt_format.h). Checksums are zlib's crc32; payloads
 * are compressed with zstd at a fast level and stored raw when that is not
 * smaller. Every chunk goes out in one write() so that a process killed
 * between flushes leaves whole chunks behind (a kill inside write() may
 * still cut the last one; the reader drops it).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include "tlt_writer.h"

static uint32_t hash_str(const char *s, size_t len)
{
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < len; i++)
        h = (h ^ (uint8_t)s[i]) * 16777619u;
    return h;
}

void tlt_strtab_init(tlt_strtab *t)
{
    memset(t, 0, sizeof *t);
}

void tlt_strtab_free(tlt_strtab *t)
{
    free(t->text);
    free(t->off);
    free(t->len);
    free(t->hash);
    memset(t, 0, sizeof *t);
}

static int grow(void **p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return 0;
    size_t c = *cap ? *cap : 64;
    while (c < need)
        c *= 2;
    void *np = realloc(*p, c * elem);
    if (!np)
        return -1;
    *p = np;
    *cap = c;
    return 0;
}

static int rehash(tlt_strtab *t, uint32_t cap)
{
    uint32_t *h = calloc(cap, sizeof *h);
    if (!h)
        return -1;
    for (uint32_t id = 1; id < t->n; id++) {
        uint32_t i = hash_str(t->text + t->off[id], t->len[id]) & (cap - 1);
        while (h[i])
            i = (i + 1) & (cap - 1);
        h[i] = id + 1;
    }
    free(t->hash);
    t->hash = h;
    t->hash_cap = cap;
    return 0;
}

uint32_t tlt_strtab_intern(tlt_strtab *t, const char *s, size_t len)
{
    if (t->n == 0) { /* id 0: the empty string */
        if (grow((void **)&t->off, &t->off_cap, 1, sizeof *t->off) ||
            grow((void **)&t->len, &t->len_cap, 1, sizeof *t->len) || grow((void **)&t->text, &t->text_cap, 1, 1) ||
            rehash(t, 256))
            return UINT32_MAX;
        t->off[0] = 0;
        t->len[0] = 0;
        t->text[0] = 0;
        t->text_len = 1;
        t->n = 1;
        t->unwritten = 1;
    }
    if (len == 0)
        return 0;
    if (len > UINT32_MAX / 2)
        return UINT32_MAX;
    uint32_t h = hash_str(s, len), mask = t->hash_cap - 1;
    for (uint32_t i = h & mask; t->hash[i]; i = (i + 1) & mask) {
        uint32_t id = t->hash[i] - 1;
        if (t->len[id] == len && !memcmp(t->text + t->off[id], s, len))
            return id;
    }
    if ((uint64_t)t->text_len + len + 1 > UINT32_MAX || t->n == UINT32_MAX - 1)
        return UINT32_MAX;
    if (grow((void **)&t->off, &t->off_cap, (size_t)t->n + 1, sizeof *t->off) ||
        grow((void **)&t->len, &t->len_cap, (size_t)t->n + 1, sizeof *t->len) ||
        grow((void **)&t->text, &t->text_cap, t->text_len + len + 1, 1))
        return UINT32_MAX;
    uint32_t id = t->n;
    t->off[id] = (uint32_t)t->text_len;
    t->len[id] = (uint32_t)len;
    memcpy(t->text + t->text_len, s, len);
    t->text[t->text_len + len] = 0;
    t->text_len += len + 1;
    t->n++;
    if ((uint64_t)t->n * 2 > t->hash_cap) {
        if (rehash(t, t->hash_cap * 2)) {
            t->n--; /* keep the table consistent: forget the new string */
            t->text_len -= len + 1;
            return UINT32_MAX;
        }
    } else {
        uint32_t i = h & mask;
        while (t->hash[i])
            i = (i + 1) & mask;
        t->hash[i] = id + 1;
    }
    return id;
}

const char *tlt_strtab_str(const tlt_strtab *t, uint32_t id)
{
    return id < t->n ? t->text + t->off[id] : NULL;
}

tlt_rec *tlt_batch_add(tlt_batch *b, size_t max)
{
    if (b->n >= max)
        return NULL;
    if (b->n == b->cap) {
        size_t c = b->cap ? b->cap * 2 : 4096;
        tlt_rec *nr = realloc(b->recs, c * sizeof *nr);
        if (!nr)
            return NULL;
        b->recs = nr;
        b->cap = c;
    }
    tlt_rec *r = &b->recs[b->n++];
    memset(r, 0, sizeof *r);
    return r;
}

void tlt_batch_free(tlt_batch *b)
{
    free(b->recs);
    memset(b, 0, sizeof *b);
}

/* write() all of it, retrying on EINTR and short writes. */
static int write_all(int fd, const uint8_t *p, size_t n)
{
    while (n) {
        ssize_t k = write(fd, p, n);
        if (k < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        p += k;
        n -= (size_t)k;
    }
    return 0;
}

int tlt_writer_open(tlt_writer *w, int fd, uint32_t pid, int64_t start_ns)
{
    memset(w, 0, sizeof *w);
    w->fd = fd;
    w->level = 1;
    w->cctx = ZSTD_createCCtx();
    if (!w->cctx) {
        errno = ENOMEM;
        return -1;
    }
    uint8_t h[TLT_HEADER_SIZE];
    tlt_header_pack(h, pid, start_ns);
    return write_all(fd, h, sizeof h);
}

void tlt_header_pack(uint8_t *out, uint32_t pid, int64_t start_ns)
{
    memcpy(out, TLT_MAGIC, 8);
    tlt_put16(out + 8, TLT_VERSION);
    tlt_put16(out + 10, TLT_HEADER_SIZE);
    tlt_put32(out + 12, pid);
    tlt_put64(out + 16, (uint64_t)start_ns);
    tlt_put32(out + 24, 0);
    tlt_put32(out + 28, (uint32_t)crc32(0, out, 28));
}

void tlt_chunk_seal(uint8_t *h, uint16_t type, uint16_t flags, uint32_t raw, uint32_t stored, uint32_t seq)
{
    tlt_put32(h, TLT_CHUNK_MAGIC);
    tlt_put16(h + 4, type);
    tlt_put16(h + 6, flags);
    tlt_put32(h + 8, raw);
    tlt_put32(h + 12, stored);
    tlt_put32(h + 16, seq);
    uLong crc = crc32(0, h, 20);
    crc = crc32(crc, h + TLT_CHUNK_HEADER, (uInt)stored);
    tlt_put32(h + 20, (uint32_t)crc);
}

size_t tlt_chunk_pack(uint8_t *out, uint16_t type, uint32_t seq, const void *payload, uint32_t n)
{
    if (n)
        memcpy(out + TLT_CHUNK_HEADER, payload, n);
    tlt_chunk_seal(out, type, 0, n, n, seq);
    return TLT_CHUNK_HEADER + (size_t)n;
}

int tlt_writer_chunk(tlt_writer *w, uint16_t type, const void *payload, size_t len)
{
    if (len > TLT_CHUNK_MAX) {
        errno = EFBIG;
        return -1;
    }
    size_t bound = ZSTD_compressBound(len);
    size_t need = TLT_CHUNK_HEADER + (bound > len ? bound : len);
    if (need > w->out_cap) {
        uint8_t *no = realloc(w->out, need);
        if (!no) {
            errno = ENOMEM;
            return -1;
        }
        w->out = no;
        w->out_cap = need;
    }
    uint8_t *h = w->out, *body = w->out + TLT_CHUNK_HEADER;
    uint16_t flags = 0;
    size_t stored = len;
    if (len >= 64) {
        size_t c = ZSTD_compressCCtx(w->cctx, body, bound, payload, len, w->level);
        if (!ZSTD_isError(c) && c < len) {
            stored = c;
            flags = TLT_CHUNK_ZSTD;
        }
    }
    if (!flags && len)
        memcpy(body, payload, len);
    tlt_chunk_seal(h, type, flags, (uint32_t)len, (uint32_t)stored, w->seq++);
    return write_all(w->fd, w->out, TLT_CHUNK_HEADER + stored);
}

static int reserve_buf(tlt_writer *w, size_t need)
{
    if (need <= w->buf_cap)
        return 0;
    size_t c = w->buf_cap ? w->buf_cap : 65536;
    while (c < need)
        c *= 2;
    uint8_t *nb = realloc(w->buf, c);
    if (!nb) {
        errno = ENOMEM;
        return -1;
    }
    w->buf = nb;
    w->buf_cap = c;
    return 0;
}

int tlt_writer_strings(tlt_writer *w, const tlt_strtab *t, uint32_t from)
{
    if (from == 0)
        from = 1; /* the empty string is implicit */
    if (from >= t->n)
        return 0;
    /* split so that no chunk exceeds TLT_CHUNK_MAX */
    while (from < t->n) {
        size_t len = 4;
        uint32_t to = from;
        while (to < t->n && len + 8 + t->len[to] <= TLT_CHUNK_MAX / 2)
            len += 8 + t->len[to++];
        if (to == from) { /* a single absurd string: skip it */
            from++;
            continue;
        }
        if (reserve_buf(w, len))
            return -1;
        uint8_t *p = w->buf;
        tlt_put32(p, to - from);
        p += 4;
        for (uint32_t id = from; id < to; id++) {
            tlt_put32(p, id);
            tlt_put32(p + 4, t->len[id]);
            memcpy(p + 8, t->text + t->off[id], t->len[id]);
            p += 8 + t->len[id];
        }
        if (tlt_writer_chunk(w, TLT_CHUNK_STRINGS, w->buf, len))
            return -1;
        from = to;
    }
    return 0;
}

int tlt_writer_records(tlt_writer *w, const tlt_rec *recs, size_t n)
{
    const size_t per = (TLT_CHUNK_MAX - 8) / TLT_REC_SIZE;
    while (n) {
        size_t k = n < per ? n : per;
        if (reserve_buf(w, 8 + k * TLT_REC_SIZE))
            return -1;
        tlt_put16(w->buf, TLT_REC_SIZE);
        tlt_put16(w->buf + 2, 0);
        tlt_put32(w->buf + 4, (uint32_t)k);
        for (size_t i = 0; i < k; i++)
            tlt_rec_pack(w->buf + 8 + i * TLT_REC_SIZE, &recs[i]);
        if (tlt_writer_chunk(w, TLT_CHUNK_RECORDS, w->buf, 8 + k * TLT_REC_SIZE))
            return -1;
        recs += k;
        n -= k;
    }
    return 0;
}

void tlt_writer_free(tlt_writer *w)
{
    ZSTD_freeCCtx(w->cctx);
    free(w->buf);
    free(w->out);
    w->cctx = NULL;
    w->buf = w->out = NULL;
    w->buf_cap = w->out_cap = 0;
}
