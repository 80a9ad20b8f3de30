/*
 * tlt.c - the reader of teller's own collector files (.tlt, layout in
 * src/collect/tlt_format.h), one source per file (one file per process).
 *
 * Events are mapped as the Kineto reader maps the same CUPTI activity:
 * kernels, copies, sets and syncs are GPU rows (pid = device, tid =
 * stream), runtime and driver calls CPU rows with their correlation id,
 * NVTX ranges the ENGINE layer (the NCCL domain BACKEND + COMM). Times are
 * CLOCK_REALTIME ns, already epoch.
 *
 * The file is read whole, in two passes: chunks to a record array and a
 * string map, then records to events (external ids and context->device
 * need every record first). Damage is never fatal: a cut chunk ends the
 * read, a bad checksum skips a chunk, garbage is skipped to the next chunk
 * magic; each loss becomes a store warning saying what was lost.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "tlt_chunk.h"
#include "teller/ingest.h"
#include "teller/tree.h"
#include "../util/vec.h"

typedef struct treader {
    teller_store *st;
    const char   *path;
    const uint8_t *d;
    size_t        len;
    uint32_t     *smap; /* file string id -> store id (0: unknown) */
    size_t        smap_cap;
    tlt_rec      *recs;
    size_t        nrecs, recs_cap;
    int           got_end;
    uint32_t      host;
    int32_t       rank;
    uint64_t      dropped_cupti, dropped_buffer, dropped_ranges, lost_names;
    char          error[256];
} treader;

static int add_string(void *ctx, uint32_t id, const char *s, size_t l)
{
    treader *r = ctx;
    if (id >= r->smap_cap) {
        size_t old = r->smap_cap;
        if (TELLER_GROW(r->smap, r->smap_cap, (size_t)id + 1))
            return -1;
        memset(r->smap + old, 0, (r->smap_cap - old) * sizeof *r->smap);
    }
    uint32_t sid = teller_store_intern(r->st, s, l);
    if (sid == TELLER_NONE)
        return -1;
    r->smap[id] = sid;
    return 0;
}

static int parse_records(treader *r, const uint8_t *p, size_t n)
{
    uint32_t cnt;
    size_t rs;
    if (tlt_payload_records(p, n, &cnt, &rs))
        return -1;
    if (TELLER_GROW(r->recs, r->recs_cap, r->nrecs + cnt))
        return -2;
    for (uint32_t i = 0; i < cnt; i++)
        tlt_rec_unpack(&r->recs[r->nrecs++], p + 8 + (size_t)i * rs);
    return 0;
}

static void note_kv(void *ctx, const char *k, size_t kl, const char *v, size_t vl)
{
    treader *r = ctx;
    char num[32] = {0};
    memcpy(num, v, vl < sizeof num - 1 ? vl : sizeof num - 1);
    unsigned long long u = strtoull(num, NULL, 10);
    if (kl == 4 && !memcmp(k, "host", 4)) {
        uint32_t id = teller_store_intern(r->st, v, vl);
        r->host = id == TELLER_NONE ? 0 : id;
    } else if (kl == 4 && !memcmp(k, "RANK", 4) && vl && vl < 8) {
        r->rank = (int32_t)u;
    } else if (kl == 13 && !memcmp(k, "dropped_cupti", 13)) {
        r->dropped_cupti = u;
    } else if (kl == 14 && !memcmp(k, "dropped_buffer", 14)) {
        r->dropped_buffer = u;
    } else if (kl == 14 && !memcmp(k, "dropped_ranges", 14)) {
        r->dropped_ranges = u;
    } else if (kl == 5 && !memcmp(k, "error", 5)) {
        snprintf(r->error, sizeof r->error, "%.*s", (int)(vl < 200 ? vl : 200), v);
    }
}

/* Pass 1: chunks into records and strings. Returns 0, or -1 out of memory. */
static int read_chunks(treader *r)
{
    teller_store *st = r->st;
    size_t pos = tlt_get16(r->d + 10);
    if (pos < TLT_HEADER_SIZE || pos > r->len)
        pos = TLT_HEADER_SIZE;
    uint32_t expect_seq = 0;
    int warned_type = 0;
    tlt_scratch sc = {0};
    tlt_chunk c;
    char msg[160];
    for (;;) {
        tlt_next nx = tlt_chunk_next(r->d, r->len, &pos, &c, &sc, msg, sizeof msg);
        if (nx == TLT_NEXT_DONE)
            break;
        if (nx == TLT_NEXT_NOMEM) {
            free(sc.raw);
            return -1;
        }
        if (nx == TLT_NEXT_CUT) {
            teller_store_warn(st, r->path, c.at,
                              "%s: the process was probably killed while writing; that chunk is lost", msg);
            break;
        }
        if (nx == TLT_NEXT_SKIP) {
            teller_store_warn(st, r->path, c.at, "%s", msg);
            continue;
        }
        if (c.seq != expect_seq)
            teller_store_warn(st, r->path, c.at, "chunks %u to %u are missing", expect_seq, c.seq - 1);
        expect_seq = c.seq + 1;
        int res = 0;
        switch (c.type) {
        case TLT_CHUNK_STRINGS: res = tlt_payload_strings(c.p, c.n, add_string, r); break;
        case TLT_CHUNK_RECORDS: res = parse_records(r, c.p, c.n); break;
        case TLT_CHUNK_NOTE: tlt_payload_note(c.p, c.n, note_kv, r); break;
        case TLT_CHUNK_END:
            tlt_payload_note(c.p, c.n, note_kv, r);
            r->got_end = 1;
            break;
        default:
            if (!warned_type++)
                teller_store_warn(st, r->path, c.at, "chunk type %u unknown (a newer writer?); skipped", c.type);
            break;
        }
        if (res == -2) {
            free(sc.raw);
            return -1;
        }
        if (res == -1)
            teller_store_warn(st, r->path, c.at, "chunk %u is malformed; the rest of it is skipped", c.seq);
    }
    free(sc.raw);
    return 0;
}

typedef struct corr_pair {
    uint32_t key;
    uint64_t val;
} corr_pair;

static int pair_cmp(const void *a, const void *b)
{
    const corr_pair *x = a, *y = b;
    return x->key < y->key ? -1 : x->key > y->key;
}

static const corr_pair *pair_find(const corr_pair *v, size_t n, uint32_t key)
{
    corr_pair k = {key, 0};
    return n ? bsearch(&k, v, n, sizeof *v, pair_cmp) : NULL;
}

static uint32_t name_of(treader *r, uint32_t fid)
{
    if (fid == 0)
        return 0;
    if (fid < r->smap_cap && r->smap[fid])
        return r->smap[fid];
    r->lost_names++;
    return teller_store_intern(r->st, "<lost name>", 11);
}

/* CUPTI marker pairs: START and END records with the same id. */
typedef struct marker_ref {
    uint32_t id;
    uint32_t idx;
} marker_ref;

/* Whether a CUPTI overhead record of this kind (CUpti_ActivityOverheadKind)
 * is the profiler's own work: its buffer flushes (1 << 16),
 * instrumentation (2 << 16), resources (3 << 16), activity buffer
 * requests (7 << 16) and UVM activity set-up (8 << 16). CUDA's module and
 * function loading, its JIT and a full command buffer happen untraced too. */
static int profiler_overhead(uint32_t kind)
{
    switch (kind >> 16) {
    case 1: case 2: case 3: case 7: case 8:
        return (kind & 0xFFFF) == 0;
    default:
        return 0;
    }
}

static int marker_cmp(const void *a, const void *b)
{
    const marker_ref *x = a, *y = b;
    if (x->id != y->id)
        return x->id < y->id ? -1 : 1;
    return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* Pass 2: records to events. Returns 0 or -1 (out of memory). */
static int emit_events(treader *r, uint16_t src)
{
    teller_store *st = r->st;
    corr_pair *ext = NULL, *ctxdev = NULL;
    marker_ref *marks = NULL;
    size_t next = 0, next_cap = 0, nctx = 0, ctx_cap = 0, nmarks = 0, marks_cap = 0;
    int rc = -1;
    uint32_t nccl = teller_store_intern(st, "NCCL", 4);
    for (size_t i = 0; i < r->nrecs; i++) {
        const tlt_rec *x = &r->recs[i];
        if (x->kind == TLT_REC_EXTCORR) {
            if (TELLER_GROW(ext, next_cap, next + 1))
                goto out;
            ext[next++] = (corr_pair){x->corr, x->val};
        } else if (x->kind == TLT_REC_KERNEL || x->kind == TLT_REC_MEMCPY || x->kind == TLT_REC_MEMSET) {
            if (nctx == 0 || ctxdev[nctx - 1].key != x->ctx) {
                if (TELLER_GROW(ctxdev, ctx_cap, nctx + 1))
                    goto out;
                ctxdev[nctx++] = (corr_pair){x->ctx, x->dev};
            }
        } else if (x->kind == TLT_REC_MARKER && !(x->sub & 1)) {
            if (TELLER_GROW(marks, marks_cap, nmarks + 1))
                goto out;
            marks[nmarks++] = (marker_ref){x->ctx, (uint32_t)i};
        }
    }
    teller_sort(ext, next, sizeof *ext, pair_cmp);
    teller_sort(ctxdev, nctx, sizeof *ctxdev, pair_cmp);
    teller_sort(marks, nmarks, sizeof *marks, marker_cmp);
    uint64_t bad_time = 0, unknown = 0;
    for (size_t i = 0; i < r->nrecs; i++) {
        const tlt_rec *x = &r->recs[i];
        teller_event_row row = {0};
        row.source = src;
        row.args = TELLER_NONE;
        row.start_ns = x->start;
        /* hostile files: an end before the start, or one so far away that
         * the difference overflows, is a bad time (checked below) */
        row.dur_ns = x->start > 0 && x->end >= x->start ? x->end - x->start : -1;
        row.corr = x->corr;
        row.pid = (int32_t)x->dev;
        row.tid = (int32_t)x->stream;
        int gpu_op = 0;
        switch (x->kind) {
        case TLT_REC_KERNEL: row.layer = TELLER_LAYER_KERNEL; gpu_op = 1; break;
        case TLT_REC_MEMCPY: row.layer = TELLER_LAYER_MEMCPY; gpu_op = 1; break;
        case TLT_REC_MEMSET: row.layer = TELLER_LAYER_MEMSET; gpu_op = 1; break;
        case TLT_REC_SYNC: {
            row.layer = TELLER_LAYER_SYNC;
            row.flags = TELLER_F_GPU;
            const corr_pair *d = pair_find(ctxdev, nctx, x->ctx);
            row.pid = d ? (int32_t)d->val : -1;
            break;
        }
        case TLT_REC_RUNTIME: row.layer = TELLER_LAYER_RUNTIME; break;
        case TLT_REC_DRIVER: row.layer = TELLER_LAYER_DRIVER; break;
        case TLT_REC_RANGE:
            row.layer = TELLER_LAYER_ENGINE;
            if (x->ctx && name_of(r, x->ctx) == nccl)
                row.layer = TELLER_LAYER_BACKEND, row.flags = TELLER_F_COMM;
            break;
        case TLT_REC_MARK:
            row.layer = TELLER_LAYER_OTHER;
            row.flags = TELLER_F_INSTANT;
            row.dur_ns = 0;
            break;
        case TLT_REC_OVERHEAD:
            row.layer = TELLER_LAYER_OTHER;
            if (profiler_overhead(x->grid[0]))
                row.flags = TELLER_F_PROFILER;
            break;
        case TLT_REC_MARKER: {
            if (x->sub & 1) { /* instantaneous */
                row.layer = TELLER_LAYER_OTHER;
                row.flags = TELLER_F_INSTANT;
                row.dur_ns = 0;
                break;
            }
            if (!(x->sub & 2))
                continue; /* END records are consumed by their START */
            marker_ref key = {x->ctx, (uint32_t)i};
            marker_ref *m = bsearch(&key, marks, nmarks, sizeof *marks, marker_cmp);
            if (!m || m + 1 >= marks + nmarks || m[1].id != x->ctx || !(r->recs[m[1].idx].sub & 4))
                continue; /* no end: an open range at the end of the trace */
            int64_t e = r->recs[m[1].idx].start; /* a bad time as for the other records */
            row.dur_ns = x->start > 0 && e >= x->start ? e - x->start : -1;
            row.layer = TELLER_LAYER_ENGINE;
            if (x->val && name_of(r, (uint32_t)x->val) == nccl)
                row.layer = TELLER_LAYER_BACKEND, row.flags = TELLER_F_COMM;
            break;
        }
        case TLT_REC_EXTCORR: continue;
        default: unknown++; continue;
        }
        if (gpu_op)
            row.flags |= TELLER_F_GPU;
        if (x->start <= 0 || !teller_time_ok(x->start, row.dur_ns)) {
            bad_time++;
            continue;
        }
        row.name = name_of(r, x->name);
        if (row.name == TELLER_NONE)
            goto out;
        if (row.layer != TELLER_LAYER_OTHER && row.layer != TELLER_LAYER_ENGINE &&
            teller_name_is_comm(teller_store_str(st, row.name)))
            row.flags |= TELLER_F_COMM;
        if ((row.layer == TELLER_LAYER_RUNTIME || row.layer == TELLER_LAYER_DRIVER) &&
            strstr(teller_store_str(st, row.name), "GraphLaunch"))
            row.flags |= TELLER_F_GRAPH;
        if (gpu_op) {
            teller_args a = {0};
            a.bytes = x->kind == TLT_REC_KERNEL ? -1 : (int64_t)x->val;
            if (x->kind == TLT_REC_KERNEL) {
                memcpy(a.grid, x->grid, sizeof a.grid);
                memcpy(a.block, x->block, sizeof a.block);
            }
            a.comm = TELLER_NONE;
            const corr_pair *e = pair_find(ext, next, x->corr);
            a.ext_id = e ? (int64_t)e->val : -1;
            if ((row.args = teller_store_add_args(st, &a)) == TELLER_NONE)
                goto out;
        }
        if (teller_store_add_event(st, &row) == TELLER_NONE)
            goto out;
    }
    if (bad_time)
        teller_store_warn(st, r->path, 0, "%llu records without valid timestamps skipped",
                          (unsigned long long)bad_time);
    if (unknown)
        teller_store_warn(st, r->path, 0, "%llu records of unknown kinds skipped (a newer writer?)",
                          (unsigned long long)unknown);
    rc = 0;
out:
    free(ext);
    free(ctxdev);
    free(marks);
    return rc;
}

teller_status teller_ingest_tlt_mem(teller_store *st, const char *name, const void *data, size_t len,
                                    const teller_ingest_opts *opts, teller_error *err)
{
    const uint8_t *d = data;
    if (len < 8 || memcmp(d, TLT_MAGIC, 8) != 0)
        return teller_error_set(err, TELLER_ERR_FORMAT, name, 0, "not a teller .tlt file");
    treader r = {0};
    r.st = st;
    r.path = name;
    r.d = d;
    r.len = len;
    r.rank = -1;
    uint32_t first = (uint32_t)teller_store_events(st)->n;
    uint32_t si = teller_store_begin_source(st, name, TELLER_FORMAT_TLT);
    if (si == TELLER_NONE)
        return teller_error_set(err, TELLER_ERR_LIMIT, name, 0, "too many sources or out of memory");
    teller_status s = TELLER_OK;
    if (len < TLT_HEADER_SIZE) {
        teller_store_warn(st, name, len, "the file ends inside its header: no events");
        return TELLER_OK;
    }
    uint16_t version = tlt_get16(d + 8);
    if ((uint32_t)crc32(0, d, 28) != tlt_get32(d + 28))
        teller_store_warn(st, name, 28, "header checksum wrong; reading on");
    if (version > TLT_VERSION)
        teller_store_warn(st, name, 8, "written by format version %u, this reader knows %u: unknown parts skipped",
                          version, TLT_VERSION);
    if (read_chunks(&r) || emit_events(&r, (uint16_t)si)) {
        s = teller_error_set(err, TELLER_ERR_NOMEM, name, 0, "out of memory");
    } else {
        if (!r.got_end)
            teller_store_warn(st, name, len,
                              "no end chunk: the process did not exit cleanly; what it traced after its last "
                              "flush is lost");
        teller_store_source(st, si)->dropped = r.dropped_cupti + r.dropped_buffer;
        if (r.dropped_cupti || r.dropped_buffer || r.dropped_ranges)
            teller_store_warn(st, name, 0,
                              "the collector dropped records: %llu by CUPTI, %llu over its buffer limit, %llu "
                              "NVTX ranges",
                              (unsigned long long)r.dropped_cupti, (unsigned long long)r.dropped_buffer,
                              (unsigned long long)r.dropped_ranges);
        if (r.error[0])
            teller_store_warn(st, name, 0, "the collector stopped: %s", r.error);
        if (r.lost_names)
            teller_store_warn(st, name, 0, "%llu records name strings that were lost",
                              (unsigned long long)r.lost_names);
    }
    const teller_events *ev = teller_store_events(st);
    teller_source *so = teller_store_source(st, si);
    so->num_events = (uint32_t)(ev->n - first);
    so->pid = (int32_t)tlt_get32(d + 12);
    so->host = r.host;
    if (opts && opts->rank_override >= 0)
        so->rank = opts->rank_override;
    else
        so->rank = r.rank;
    free(r.smap);
    free(r.recs);
    return s;
}

teller_status teller_ingest_tlt(teller_store *st, const char *path, const teller_ingest_opts *opts,
                                teller_error *err)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return teller_error_set(err, TELLER_ERR_IO, path, 0, "cannot open the file");
    uint8_t *buf = NULL;
    size_t len = 0, cap = 0;
    for (;;) {
        if (len == cap) {
            size_t c = cap ? cap * 2 : 1u << 20;
            uint8_t *nb = realloc(buf, c);
            if (!nb) {
                free(buf);
                fclose(f);
                return teller_error_set(err, TELLER_ERR_NOMEM, path, len, "out of memory");
            }
            buf = nb;
            cap = c;
        }
        size_t k = fread(buf + len, 1, cap - len, f);
        len += k;
        if (k == 0)
            break;
    }
    int ioerr = ferror(f);
    fclose(f);
    teller_status s;
    if (ioerr)
        s = teller_error_set(err, TELLER_ERR_IO, path, len, "read error");
    else
        s = teller_ingest_tlt_mem(st, path, buf, len, opts, err);
    free(buf);
    return s;
}
