/*
 * kineto.c - the PyTorch profiler (Kineto) Chrome-trace JSON reader.
 *
 * Streams the file through a window (plain JSON with fread, gzip with
 * zlib's gzread; a gzip file of up to 64 MiB inflated is inflated whole by
 * libdeflate instead, which is faster) and pulls one top-level value or one
 * event at a time with the tokenizer in json.c. A unit that crosses the end
 * of the window is parsed again once more bytes are in; nothing is
 * committed to the store before a unit parsed whole, so memory is bounded
 * by the window and the events kept, never by the file size.
 *
 * Formats handled (facts in ../shared/notes/formats.md): phases X, i/I, C,
 * s/t/f flows, M; current and legacy categories; relative timestamps plus
 * baseTimeNanoseconds (which may come after traceEvents) and absolute
 * epoch microseconds; string pids/tids; distributedInfo and
 * deviceProperties anywhere in the top-level object; ROCm spellings.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <libdeflate.h>
#include <zlib.h>

#include "json.h"
#include "teller/ingest.h"
#include "teller/tree.h"
#include "../store/store_internal.h"
#include "../util/kmap.h"
#include "../util/vec.h"

/* The window grows (doubling) only for a value or event larger than it.
 * It starts small because its bytes are resident at the load's peak, and
 * a larger one reads no faster (docs/SCALE.md, "The store: bytes per
 * event"). */
#define WINDOW_INITIAL (256u << 10)
#define WINDOW_MAX     (1u << 30) /* one top-level value or event may not exceed this */

enum cat_kind {
    CAT_OTHER = 0,
    CAT_KERNEL,
    CAT_MEMCPY,
    CAT_MEMSET,
    CAT_RUNTIME,
    CAT_DRIVER,
    CAT_SYNC,
    CAT_CPU_OP,
    CAT_PYTHON,
    CAT_USER_ANN,
    CAT_GPU_ANN,
    CAT_COLLECTIVE,
    CAT_FLOW_AC2G,
    CAT_OVERHEAD
};

/* One parsed event, slices into the window; committed only when whole. */
typedef struct ev_fields {
    json_str ph, name, cat, pid_s, tid_s;
    int      has_name, has_ph, has_ts, has_dur, pid_num, tid_num, has_id;
    int64_t  pid, tid, ts, dur, id;
    int      bad_type; /* a field had the wrong JSON type */
    /* args */
    int64_t  corr, ext_id, bytes, in_n, out_n, seq;
    int64_t  group_size;
    json_str coll, pg_name, pg_desc, pg_ranks, dtype, m_name;
    json_str in_dims, in_types; /* a cpu_op's "Input Dims" and "Input type" lists, as written */
    uint32_t grid[3], block[3];
} ev_fields;

typedef struct flow {
    int64_t  ts;
    int32_t  pid, tid;
    uint32_t id;
    uint8_t  start; /* 's' (on the API call) or 'f' (on the GPU op) */
} flow;

/* A torch op's input shapes, interned, until the file ends; which event
 * it belongs to is a bit in reader.shaped_ev (the k-th op with shapes is
 * the k-th set bit), which keeps the entry at 16 bytes. */
typedef struct shaped_op {
    int64_t  ext_id;
    uint32_t dims, types;
} shaped_op;

typedef struct reader {
    teller_store             *st;
    const char               *path;
    const teller_ingest_opts *opts;
    gzFile                    gz;    /* a gzip file, or */
    FILE                     *plain; /* plain JSON: zlib would pass it through, but its buffers cost 3 MB */
    char                     *buf; /* window */
    size_t                    len, cap;
    uint64_t                  base_off; /* file offset of buf[0] */
    int                       eof, owned;
    char                     *scratch; /* unescape buffer */
    size_t                    scratch_cap;
    uint16_t                  src;
    /* file-level facts, applied when the file ends */
    int      has_base;
    int64_t  base_ns;
    int64_t  rank, world;
    int      ndev;
    uint32_t host, devname;
    /* flows for the correlation fallback */
    flow    *flows;
    size_t   nflows, flows_cap;
    uint64_t gpu_without_corr, gpu_with_corr;
    uint8_t *name_comm; /* per name id: 0 unknown, 1 communication, 2 not */
    size_t   name_comm_cap;
    /* torch ops with input shapes, and the events of every torch op and
     * launch call: an op gets an args row for its shapes when the file
     * ends, if it is the innermost torch op around a launch call */
    shaped_op *shaped;
    size_t     nshaped, shaped_cap;
    uint64_t  *shaped_ev; /* bit e: event e is a torch op with shapes */
    size_t     shaped_ev_cap;
    uint32_t  *calls;
    size_t     ncalls, calls_cap;
    teller_error *err;
} reader;

static enum cat_kind cat_kind(const json_str *c)
{
    switch (c->len) {
    case 3:
        if (JSON_EQ(c, "Gpu")) return CAT_KERNEL;
        break;
    case 4:
        if (JSON_EQ(c, "ac2g")) return CAT_FLOW_AC2G;
        break;
    case 6:
        if (JSON_EQ(c, "kernel") || JSON_EQ(c, "Kernel")) return CAT_KERNEL;
        if (JSON_EQ(c, "cpu_op") || JSON_EQ(c, "hpu_op")) return CAT_CPU_OP;
        if (JSON_EQ(c, "Memcpy")) return CAT_MEMCPY;
        if (JSON_EQ(c, "Memset")) return CAT_MEMSET;
        if (JSON_EQ(c, "Driver")) return CAT_DRIVER;
        break;
    case 7:
        if (JSON_EQ(c, "Runtime")) return CAT_RUNTIME;
        break;
    case 8:
        if (JSON_EQ(c, "Operator")) return CAT_CPU_OP;
        if (JSON_EQ(c, "overhead")) return CAT_OVERHEAD;
        break;
    case 9:
        if (JSON_EQ(c, "cuda_sync") || JSON_EQ(c, "async_gpu") || JSON_EQ(c, "xpu_sync"))
            return c->s[0] == 'a' ? CAT_FLOW_AC2G : CAT_SYNC;
        break;
    case 10:
        if (JSON_EQ(c, "gpu_memcpy")) return CAT_MEMCPY;
        if (JSON_EQ(c, "gpu_memset")) return CAT_MEMSET;
        break;
    case 11:
        if (JSON_EQ(c, "cuda_driver")) return CAT_DRIVER;
        if (JSON_EQ(c, "xpu_driver")) return CAT_DRIVER;
        break;
    case 12:
        if (JSON_EQ(c, "cuda_runtime")) return CAT_RUNTIME;
        if (JSON_EQ(c, "mtia_runtime")) return CAT_RUNTIME;
        break;
    case 15:
        if (JSON_EQ(c, "python_function")) return CAT_PYTHON;
        if (JSON_EQ(c, "user_annotation")) return CAT_USER_ANN;
        if (JSON_EQ(c, "collective_comm")) return CAT_COLLECTIVE;
        break;
    case 16:
        if (JSON_EQ(c, "async_cpu_to_gpu")) return CAT_FLOW_AC2G;
        break;
    case 19:
        if (JSON_EQ(c, "gpu_user_annotation")) return CAT_GPU_ANN;
        if (JSON_EQ(c, "privateuse1_runtime")) return CAT_RUNTIME;
        break;
    default:
        break;
    }
    if (JSON_EQ(c, "xpu_runtime")) return CAT_RUNTIME;
    if (JSON_EQ(c, "privateuse1_driver")) return CAT_DRIVER;
    return CAT_OTHER;
}

/* ---- the window ---- */

static teller_status fail_at(reader *r, teller_status code, const char *at, const char *msg)
{
    uint64_t off = r->base_off + (uint64_t)(at - r->buf);
    return teller_error_set(r->err, code, r->path, off, "%s", msg);
}

/* Drops buf[0..keep), reads more. Returns TELLER_OK, or an error. */
static teller_status refill(reader *r, size_t keep)
{
    if (!r->gz && !r->plain) {
        r->eof = 1;
        return TELLER_OK;
    }
    memmove(r->buf, r->buf + keep, r->len - keep);
    r->base_off += keep;
    r->len -= keep;
    if (r->len == r->cap) {
        if (r->cap >= WINDOW_MAX)
            return teller_error_set(r->err, TELLER_ERR_LIMIT, r->path, r->base_off,
                                    "a single JSON value is larger than %u MiB", WINDOW_MAX >> 20);
        char *nb = realloc(r->buf, r->cap * 2);
        if (!nb)
            return teller_error_set(r->err, TELLER_ERR_NOMEM, r->path, r->base_off, "out of memory");
        r->buf = nb;
        r->cap *= 2;
    }
    while (r->len < r->cap) {
        size_t want = r->cap - r->len;
        if (want > (1u << 30))
            want = 1u << 30;
        if (r->plain) {
            size_t n = fread(r->buf + r->len, 1, want, r->plain);
            if (n < want && ferror(r->plain))
                return teller_error_set(r->err, TELLER_ERR_IO, r->path, r->base_off + r->len + n,
                                        "cannot read the file: %s", strerror(errno));
            r->len += n;
            if (n < want) {
                r->eof = 1;
                break;
            }
            continue;
        }
        int n = gzread(r->gz, r->buf + r->len, (unsigned)want);
        if (n < 0) {
            int zerr;
            const char *m = gzerror(r->gz, &zerr);
            return teller_error_set(r->err, zerr == Z_DATA_ERROR ? TELLER_ERR_FORMAT : TELLER_ERR_IO, r->path,
                                    r->base_off + r->len, "corrupt gzip data: %s", m);
        }
        if (n == 0) {
            int zerr;
            const char *m = gzerror(r->gz, &zerr);
            if (zerr != Z_OK && zerr != Z_STREAM_END)
                return teller_error_set(r->err, TELLER_ERR_TRUNCATED, r->path, r->base_off + r->len,
                                        "gzip stream ends early: %s", m);
            r->eof = 1;
            break;
        }
        r->len += (size_t)n;
        if ((size_t)n < want) {
            /* gzread returns short only at the end or on error; check which next call */
            continue;
        }
    }
    return TELLER_OK;
}

/* Interns a slice, unescaping when needed. TELLER_NONE on a bad escape or
 * out of memory. */
static uint32_t intern_str(reader *r, const json_str *s)
{
    if (!s->escaped)
        return teller_store_intern(r->st, s->s, s->len);
    if (s->len + 8 > r->scratch_cap) {
        size_t c = s->len + 8 > 4096 ? s->len + 8 : 4096;
        char *nb = realloc(r->scratch, c);
        if (!nb)
            return TELLER_NONE;
        r->scratch = nb;
        r->scratch_cap = c;
    }
    long n = json_unescape(s, r->scratch, r->scratch_cap);
    if (n < 0)
        return TELLER_NONE;
    return teller_store_intern(r->st, r->scratch, (size_t)n);
}

/* ---- parsing one event ---- */

static int parse_grid(json_cur *c, uint32_t out[3], int *bad)
{
    int r = json_ws(c);
    if (r)
        return r;
    if (*c->p != '[') {
        *bad = 1;
        return json_skip(c);
    }
    c->p++;
    for (int i = 0, done = 0;; i++) {
        if ((r = json_arr_next(c, i == 0, &done)))
            return r;
        if (done)
            return JSON_OK;
        int64_t v = 0;
        if ((r = json_ws(c)))
            return r;
        if (*c->p == '-' || (*c->p >= '0' && *c->p <= '9')) {
            if ((r = json_int(c, &v)))
                return r;
            if (i < 3)
                out[i] = v > 0 && v < UINT32_MAX ? (uint32_t)v : 0;
        } else {
            *bad = 1;
            if ((r = json_skip(c)))
                return r;
        }
    }
}

/* Reads a number value, or a string holding a decimal integer (ROCm
 * traces write "bytes": "9216"); skips a value of another type and notes it. */
static int num_field(json_cur *c, int64_t *out, int *bad)
{
    int r = json_ws(c);
    if (r)
        return r;
    char ch = *c->p;
    if (ch == '-' || (ch >= '0' && ch <= '9'))
        return json_int(c, out);
    if (ch == '"') {
        json_str s;
        if ((r = json_string(c, &s)))
            return r;
        int64_t v = 0;
        size_t i = 0;
        for (; i < s.len && s.s[i] >= '0' && s.s[i] <= '9' && v <= (INT64_MAX - 9) / 10; i++)
            v = v * 10 + (s.s[i] - '0');
        if (i == s.len && s.len > 0)
            *out = v;
        else
            *bad = 1;
        return JSON_OK;
    }
    *bad = 1;
    return json_skip(c);
}

static int str_field(json_cur *c, json_str *out, int *bad)
{
    int r = json_ws(c);
    if (r)
        return r;
    if (*c->p == '"')
        return json_string(c, out);
    *bad = 1;
    return json_skip(c);
}

/* A list value kept as the JSON text it was written as; anything else is
 * skipped (a wrong type, not an error). */
static int list_field(json_cur *c, json_str *out, int *bad)
{
    int r = json_ws(c);
    if (r)
        return r;
    if (*c->p != '[') {
        *bad = 1;
        return json_skip(c);
    }
    const char *s0 = c->p;
    if ((r = json_skip(c)))
        return r;
    out->s = s0;
    out->len = (size_t)(c->p - s0);
    out->escaped = 0;
    return JSON_OK;
}

static int parse_args(json_cur *c, ev_fields *f)
{
    int r = json_ws(c);
    if (r)
        return r;
    if (*c->p != '{') {
        f->bad_type = 1;
        return json_skip(c);
    }
    c->p++;
    for (int first = 1;;) {
        json_str k;
        int done;
        if ((r = json_obj_next(c, &first, &k, &done)))
            return r;
        if (done)
            return JSON_OK;
        int64_t v;
        switch (k.len) {
        case 4:
            if (JSON_EQ(&k, "name")) { r = str_field(c, &f->m_name, &f->bad_type); break; }
            if (JSON_EQ(&k, "grid")) { r = parse_grid(c, f->grid, &f->bad_type); break; }
            r = json_skip(c);
            break;
        case 5:
            if (JSON_EQ(&k, "bytes")) { r = num_field(c, &f->bytes, &f->bad_type); break; }
            if (JSON_EQ(&k, "block")) { r = parse_grid(c, f->block, &f->bad_type); break; }
            if (JSON_EQ(&k, "dtype")) { r = str_field(c, &f->dtype, &f->bad_type); break; }
            r = json_skip(c);
            break;
        case 3:
            if (JSON_EQ(&k, "Seq")) { r = num_field(c, &f->seq, &f->bad_type); break; }
            r = json_skip(c);
            break;
        case 10:
            if (JSON_EQ(&k, "Group size")) {
                v = 0;
                r = num_field(c, &v, &f->bad_type);
                f->group_size = v;
                break;
            }
            if (JSON_EQ(&k, "Input Dims")) { r = list_field(c, &f->in_dims, &f->bad_type); break; }
            if (JSON_EQ(&k, "Input type")) { r = list_field(c, &f->in_types, &f->bad_type); break; }
            r = json_skip(c);
            break;
        case 11:
            if (JSON_EQ(&k, "External id") || JSON_EQ(&k, "external id")) {
                r = num_field(c, &f->ext_id, &f->bad_type);
                break;
            }
            if (JSON_EQ(&k, "correlation")) { r = num_field(c, &f->corr, &f->bad_type); break; }
            r = json_skip(c);
            break;
        case 13:
            if (JSON_EQ(&k, "In msg nelems")) { r = num_field(c, &f->in_n, &f->bad_type); break; }
            r = json_skip(c);
            break;
        case 14:
            if (JSON_EQ(&k, "Out msg nelems")) { r = num_field(c, &f->out_n, &f->bad_type); break; }
            r = json_skip(c);
            break;
        case 15:
            if (JSON_EQ(&k, "Collective name")) { r = str_field(c, &f->coll, &f->bad_type); break; }
            r = json_skip(c);
            break;
        case 18:
            if (JSON_EQ(&k, "Process Group Name")) { r = str_field(c, &f->pg_name, &f->bad_type); break; }
            r = json_skip(c);
            break;
        case 19:
            if (JSON_EQ(&k, "Process Group Ranks")) {
                /* a string like "[0, 1]"; Kineto's on-demand writer may emit a list */
                if ((r = json_ws(c)))
                    return r;
                if (*c->p == '[') {
                    const char *s0 = c->p;
                    if ((r = json_skip(c)))
                        return r;
                    f->pg_ranks.s = s0;
                    f->pg_ranks.len = (size_t)(c->p - s0);
                    f->pg_ranks.escaped = 0;
                    break;
                }
                r = str_field(c, &f->pg_ranks, &f->bad_type);
                break;
            }
            r = json_skip(c);
            break;
        case 25:
            if (JSON_EQ(&k, "Process Group Description")) {
                r = str_field(c, &f->pg_desc, &f->bad_type);
                break;
            }
            r = json_skip(c);
            break;
        default:
            r = json_skip(c);
            break;
        }
        if (r)
            return r;
    }
}

/* pid and tid: a number, or a string (numeric strings become numbers). */
static int id_field(json_cur *c, int64_t *num, json_str *s, int *is_num, int *bad)
{
    int r = json_ws(c);
    if (r)
        return r;
    char ch = *c->p;
    if (ch == '-' || (ch >= '0' && ch <= '9')) {
        *is_num = 1;
        return json_int(c, num);
    }
    if (ch == '"') {
        *is_num = 0;
        return json_string(c, s);
    }
    *bad = 1;
    return json_skip(c);
}

static int ts_field(json_cur *c, int64_t *out, int *has, int *bad)
{
    int r = json_ws(c);
    if (r)
        return r;
    char ch = *c->p;
    if (ch == '-' || (ch >= '0' && ch <= '9')) {
        *has = 1;
        return json_milli(c, out);
    }
    if (ch == '"') {
        /* some writers quote timestamps */
        json_str s;
        if ((r = json_string(c, &s)))
            return r;
        json_cur sc = {s.s, s.s + s.len, NULL};
        char tmp[48];
        if (s.len == 0 || s.len >= sizeof tmp - 1) {
            *bad = 1;
            return JSON_OK;
        }
        /* parse from a copy with a terminator so the number can end */
        memcpy(tmp, s.s, s.len);
        tmp[s.len] = ' ';
        sc.p = tmp;
        sc.end = tmp + s.len + 1;
        if (json_milli(&sc, out) != JSON_OK || sc.p != tmp + s.len) {
            *bad = 1;
            return JSON_OK;
        }
        *has = 1;
        return JSON_OK;
    }
    *bad = 1;
    return json_skip(c);
}

static int parse_event(json_cur *c, ev_fields *f)
{
    memset(f, 0, sizeof *f);
    f->corr = f->ext_id = f->bytes = f->in_n = f->out_n = f->seq = -1;
    int r = json_ws(c);
    if (r)
        return r;
    if (*c->p != '{') {
        c->err = "an event must be an object";
        return JSON_ERR;
    }
    c->p++;
    for (int first = 1;;) {
        json_str k;
        int done;
        if ((r = json_obj_next(c, &first, &k, &done)))
            return r;
        if (done)
            return JSON_OK;
        if (k.len == 2 && k.s[0] == 'p' && k.s[1] == 'h') {
            r = str_field(c, &f->ph, &f->bad_type);
            f->has_ph = f->ph.len > 0;
        } else if (k.len == 2 && k.s[0] == 't' && k.s[1] == 's') {
            r = ts_field(c, &f->ts, &f->has_ts, &f->bad_type);
        } else if (k.len == 2 && k.s[0] == 'i' && k.s[1] == 'd') {
            r = json_ws(c);
            if (!r) {
                if (*c->p == '"') {
                    json_str s;
                    r = json_string(c, &s);
                    if (!r) {
                        /* string ids: numeric text of up to 17 digits, or
                         * a hash of the text kept apart from numbers */
                        int64_t v = 0;
                        size_t i = 0;
                        for (; i < s.len && i < 17 && isdigit((unsigned char)s.s[i]); i++)
                            v = v * 10 + (s.s[i] - '0');
                        f->id = i == s.len && s.len ? v : (int64_t)((kmap_hash_bytes(s.s, s.len) & ((1ull << 62) - 1)) | (1ull << 62));
                        f->has_id = 1;
                    }
                } else {
                    int bad = 0;
                    r = num_field(c, &f->id, &bad);
                    f->has_id = !bad;
                }
            }
        } else if (JSON_EQ(&k, "name")) {
            r = str_field(c, &f->name, &f->bad_type);
            f->has_name = f->name.s != NULL;
        } else if (JSON_EQ(&k, "cat")) {
            r = str_field(c, &f->cat, &f->bad_type);
        } else if (JSON_EQ(&k, "pid")) {
            r = id_field(c, &f->pid, &f->pid_s, &f->pid_num, &f->bad_type);
        } else if (JSON_EQ(&k, "tid")) {
            r = id_field(c, &f->tid, &f->tid_s, &f->tid_num, &f->bad_type);
        } else if (JSON_EQ(&k, "dur")) {
            r = ts_field(c, &f->dur, &f->has_dur, &f->bad_type);
        } else if (JSON_EQ(&k, "args")) {
            r = parse_args(c, f);
        } else {
            r = json_skip(c);
        }
        if (r)
            return r;
    }
}

/* String pids/tids ("Spans", "Traces", "GPU 0 Counters"), and numbers past
 * 32 bits, become negative ids derived from a hash of the text (30 bits: distinct texts of one trace
 * stay apart but with odds of 2^-30 a pair), not from the text's id in the
 * store: a file read into a store of its own and appended (teller_load on
 * several threads) must give the rows it gives read into the run's store. */
static int32_t row_id(reader *r, int is_num, int64_t num, const json_str *s)
{
    char digits[24];
    const char *text = digits;
    if (is_num && num >= INT32_MIN && num <= INT32_MAX)
        return (int32_t)num;
    if (is_num) { /* a number past 32 bits (a pthread id): as its text, so that no two such meet */
        snprintf(digits, sizeof digits, "%lld", (long long)num);
    } else {
        uint32_t id = intern_str(r, s);
        text = id == TELLER_NONE ? "" : teller_store_str(r->st, id);
        char *end;
        errno = 0;
        long long v = strtoll(text, &end, 10);
        if ((isdigit((unsigned char)text[0]) || (text[0] == '-' && isdigit((unsigned char)text[1]))) && !*end &&
            !errno && v >= INT32_MIN && v <= INT32_MAX)
            return (int32_t)v; /* "7" is thread 7, as 7 is */
    }
    return -2 - (int32_t)(kmap_hash_bytes(text, strlen(text)) & 0x3fffffff);
}

static uint64_t pos_of(reader *r, const char *p) { return r->base_off + (uint64_t)(p - r->buf); }

/* Keeps a launch flow ('s' on the API call, 'f' on the GPU op) for the
 * correlation fallback (link_flows). Returns 0, or -1 when out of memory. */
static int keep_flow(reader *r, const ev_fields *f, char ph, enum cat_kind ck)
{
    if (ck != CAT_FLOW_AC2G || !f->has_id || !f->has_ts || ph == 't')
        return 0; /* fwdbwd and other flows carry no launch link */
    if (r->gpu_with_corr && !r->gpu_without_corr)
        return 0; /* this file links by args.correlation: flows are not needed */
    if (TELLER_GROW(r->flows, r->flows_cap, r->nflows + 1))
        return -1;
    r->flows[r->nflows++] = (flow){f->ts, row_id(r, f->pid_num, f->pid, &f->pid_s),
                                   row_id(r, f->tid_num, f->tid, &f->tid_s), (uint32_t)f->id, ph == 's'};
    return 0;
}

/* Whether an event of phase X, i, I or C is kept, its duration into *dur;
 * one skipped is warned of, except a Python frame under skip_python. */
static int event_kept(reader *r, const ev_fields *f, char ph, enum cat_kind ck, const char *at, int64_t *dur)
{
    teller_store *st = r->st;
    if (!f->has_name || !f->has_ts) {
        teller_store_warn(st, r->path, pos_of(r, at), "event without \"name\" or \"ts\"; skipped");
        return 0;
    }
    if (ck == CAT_PYTHON && r->opts->skip_python)
        return 0;
    *dur = 0;
    if (ph == 'X') {
        if (!f->has_dur)
            teller_store_warn(st, r->path, pos_of(r, at), "complete event without \"dur\"; taken as 0");
        else
            *dur = f->dur;
        if (*dur < 0) {
            teller_store_warn(st, r->path, pos_of(r, at), "negative duration; event skipped");
            return 0;
        }
    }
    if (!teller_time_ok(f->ts, *dur)) {
        teller_store_warn(st, r->path, pos_of(r, at), "time past the year 2116; event skipped");
        return 0;
    }
    return 1;
}

/* Whether a Kineto "overhead" event named n is the profiler's own work
 * (CUPTI's buffer flushes and activity buffer requests, its
 * instrumentation and resources): every one but those named as Kineto
 * names CUDA's own, which happen untraced too (module and function
 * loading, the JIT, a full command buffer). */
static int profiler_overhead(const json_str *n)
{
    return !JSON_EQ(n, "Driver Compiler") && !JSON_EQ(n, "Runtime Triggered Module Loading") &&
           !JSON_EQ(n, "Lazy Function Loading") && !JSON_EQ(n, "Command Buffer Full");
}

/* The layer and flags the category and phase give row; an event with
 * collective metadata is communication. Returns whether the event is a
 * GPU op (kernel, copy or set), which has a correlation id to count. */
static int classify(const ev_fields *f, char ph, enum cat_kind ck, teller_event_row *row)
{
    int gpu_op = 0;
    switch (ck) {
    case CAT_KERNEL: row->layer = TELLER_LAYER_KERNEL; row->flags |= TELLER_F_GPU; gpu_op = 1; break;
    case CAT_MEMCPY: row->layer = TELLER_LAYER_MEMCPY; row->flags |= TELLER_F_GPU; gpu_op = 1; break;
    case CAT_MEMSET: row->layer = TELLER_LAYER_MEMSET; row->flags |= TELLER_F_GPU; gpu_op = 1; break;
    case CAT_SYNC: row->layer = TELLER_LAYER_SYNC; row->flags |= TELLER_F_GPU; break;
    case CAT_RUNTIME: row->layer = TELLER_LAYER_RUNTIME; break;
    case CAT_DRIVER: row->layer = TELLER_LAYER_DRIVER; break;
    case CAT_CPU_OP: row->layer = TELLER_LAYER_BACKEND; break;
    case CAT_COLLECTIVE: row->layer = TELLER_LAYER_BACKEND; row->flags |= TELLER_F_COMM; break;
    case CAT_PYTHON: row->layer = TELLER_LAYER_FRONTEND; break;
    case CAT_USER_ANN: row->layer = TELLER_LAYER_ENGINE; break;
    case CAT_GPU_ANN: row->layer = TELLER_LAYER_ENGINE; row->flags |= TELLER_F_GPU; break;
    case CAT_OVERHEAD:
        if (f->has_name && profiler_overhead(&f->name))
            row->flags |= TELLER_F_PROFILER;
        break;
    default: break;
    }
    if (ph == 'i' || ph == 'I') {
        row->flags |= TELLER_F_INSTANT;
        row->layer = TELLER_LAYER_OTHER;
        row->flags &= (uint8_t)~TELLER_F_GPU;
    } else if (ph == 'C') {
        row->flags |= TELLER_F_COUNTER;
        row->layer = TELLER_LAYER_OTHER;
        row->flags &= (uint8_t)~TELLER_F_GPU;
    }
    if (f->coll.s)
        row->flags |= TELLER_F_COMM;
    return gpu_op;
}

/* The flags row's name gives it: communication (NCCL and the like) and a
 * graph launch. Returns 0, or -1 when out of memory. */
static int flag_by_name(reader *r, teller_event_row *row)
{
    uint32_t name = row->name;
    if (row->layer != TELLER_LAYER_OTHER && row->layer != TELLER_LAYER_FRONTEND) {
        /* classify each distinct name once: names repeat millions of times */
        if (name >= r->name_comm_cap) {
            size_t old = r->name_comm_cap;
            if (TELLER_GROW(r->name_comm, r->name_comm_cap, (size_t)name + 1))
                return -1;
            memset(r->name_comm + old, 0, r->name_comm_cap - old);
        }
        if (!r->name_comm[name])
            r->name_comm[name] = teller_name_is_comm(teller_store_str(r->st, name)) ? 1 : 2;
        if (r->name_comm[name] == 1)
            row->flags |= TELLER_F_COMM;
    }
    if ((row->layer == TELLER_LAYER_RUNTIME || row->layer == TELLER_LAYER_DRIVER) &&
        strstr(teller_store_str(r->st, name), "GraphLaunch"))
        row->flags |= TELLER_F_GRAPH;
    return 0;
}

/* Counts GPU ops with and without a correlation id: the file links by
 * args.correlation when its first GPU op has one, and the flows kept so
 * far are dropped then. */
static void count_correlation(reader *r, int gpu_op, uint32_t corr)
{
    if (gpu_op && corr == 0)
        r->gpu_without_corr++;
    if (gpu_op && corr != 0 && !r->gpu_with_corr++ && !r->gpu_without_corr) {
        free(r->flows);
        r->flows = NULL;
        r->nflows = r->flows_cap = 0;
    }
}

/* Keeps what shape_rows needs when the file ends, for the work a torch
 * op's kernels do (src/diagnose/roofline.c): a torch op's input shapes and
 * types, and the event of every torch op and launch call. Returns 0, or -1
 * when out of memory. */
static int keep_for_shapes(reader *r, const ev_fields *f, enum cat_kind ck)
{
    uint32_t at_ev = (uint32_t)teller_store_events(r->st)->n; /* this event's index once added */
    if (ck == CAT_CPU_OP && f->in_dims.s && f->in_types.s) {
        size_t word = at_ev / 64, old = r->shaped_ev_cap;
        if (TELLER_GROW(r->shaped, r->shaped_cap, r->nshaped + 1) || TELLER_GROW(r->shaped_ev, r->shaped_ev_cap, word + 1))
            return -1;
        memset(r->shaped_ev + old, 0, (r->shaped_ev_cap - old) * sizeof *r->shaped_ev);
        shaped_op *o = &r->shaped[r->nshaped];
        *o = (shaped_op){.ext_id = f->ext_id};
        if ((o->dims = intern_str(r, &f->in_dims)) == TELLER_NONE || (o->types = intern_str(r, &f->in_types)) == TELLER_NONE)
            return -1;
        r->shaped_ev[word] |= 1ull << at_ev % 64;
        r->nshaped++;
    }
    if (ck == CAT_CPU_OP || ck == CAT_RUNTIME || ck == CAT_DRIVER) {
        if (TELLER_GROW(r->calls, r->calls_cap, r->ncalls + 1))
            return -1;
        r->calls[r->ncalls++] = at_ev;
    }
    return 0;
}

/* The args row of a GPU op or collective into *args: its size, launch
 * geometry, external id and collective metadata (bad metadata is warned of
 * and left out). Returns 0, or -1 when out of memory. */
static int add_args(reader *r, const ev_fields *f, const char *at, uint32_t *args)
{
    teller_store *st = r->st;
    teller_args a = {0};
    a.bytes = f->bytes;
    memcpy(a.grid, f->grid, sizeof a.grid);
    memcpy(a.block, f->block, sizeof a.block);
    a.comm = TELLER_NONE;
    a.ext_id = f->ext_id;
    if (f->coll.s) {
        teller_comm cm = {0};
        cm.collective = intern_str(r, &f->coll);
        cm.pg_name = f->pg_name.s ? intern_str(r, &f->pg_name) : 0;
        cm.pg_desc = f->pg_desc.s ? intern_str(r, &f->pg_desc) : 0;
        cm.pg_ranks = f->pg_ranks.s ? intern_str(r, &f->pg_ranks) : 0;
        cm.dtype = f->dtype.s ? intern_str(r, &f->dtype) : 0;
        cm.group_size = f->group_size > 0 && f->group_size < INT32_MAX ? (int32_t)f->group_size : 0;
        cm.in_nelems = f->in_n;
        cm.out_nelems = f->out_n;
        cm.seq = f->seq;
        if (cm.collective == TELLER_NONE || cm.pg_name == TELLER_NONE || cm.pg_desc == TELLER_NONE ||
            cm.pg_ranks == TELLER_NONE || cm.dtype == TELLER_NONE) {
            teller_store_warn(st, r->path, pos_of(r, at), "bad collective metadata ignored");
        } else if ((a.comm = teller_store_add_comm(st, &cm)) == TELLER_NONE) {
            return -1;
        }
    }
    return (*args = teller_store_add_args(st, &a)) == TELLER_NONE ? -1 : 0;
}

/* Commits a parsed event to the store: a flow is kept for the fallback
 * link, metadata dropped, any other phase skipped with a warning; an X, i,
 * I or C event becomes a row. Returns 0, or -1 when out of memory. */
static int commit_event(reader *r, const ev_fields *f, const char *at)
{
    teller_store *st = r->st;
    if (!f->has_ph || f->ph.len != 1) {
        teller_store_warn(st, r->path, pos_of(r, at), "event without a valid \"ph\"; skipped");
        return 0;
    }
    char ph = f->ph.s[0];
    if (f->bad_type)
        teller_store_warn(st, r->path, pos_of(r, at), "event field of the wrong type ignored");
    enum cat_kind ck = cat_kind(&f->cat);
    if (ph == 'M') {
        /* process_name, thread_name, process_labels, sort indexes: names for
         * display only; the reader keeps none of them today. */
        return 0;
    }
    if (ph == 's' || ph == 'f' || ph == 't')
        return keep_flow(r, f, ph, ck);
    if (ph != 'X' && ph != 'i' && ph != 'I' && ph != 'C') {
        teller_store_warn(st, r->path, pos_of(r, at), "unsupported phase '%c'; event skipped", ph);
        return 0;
    }
    int64_t dur;
    if (!event_kept(r, f, ph, ck, at, &dur))
        return 0;
    uint32_t name = intern_str(r, &f->name);
    if (name == TELLER_NONE) {
        teller_store_warn(st, r->path, pos_of(r, at), "bad escape in event name; event skipped");
        return 0;
    }
    teller_event_row row = {0};
    row.start_ns = f->ts;
    row.dur_ns = dur;
    row.name = name;
    row.source = r->src;
    row.pid = row_id(r, f->pid_num, f->pid, &f->pid_s);
    row.tid = row_id(r, f->tid_num, f->tid, &f->tid_s);
    row.corr = f->corr > 0 && f->corr < UINT32_MAX ? (uint32_t)f->corr : 0;
    row.args = TELLER_NONE;
    row.layer = TELLER_LAYER_OTHER;
    int gpu_op = classify(f, ph, ck, &row);
    if (flag_by_name(r, &row))
        return -1;
    count_correlation(r, gpu_op, row.corr);
    if (keep_for_shapes(r, f, ck))
        return -1;
    if ((gpu_op || f->coll.s) && add_args(r, f, at, &row.args))
        return -1;
    return teller_store_add_event(st, &row) == TELLER_NONE ? -1 : 0;
}

/* ---- top-level values ---- */

static int parse_distributed(json_cur *c, reader *r)
{
    int rr = json_ws(c);
    if (rr)
        return rr;
    if (*c->p != '{')
        return json_skip(c);
    c->p++;
    int64_t rank = -1, world = 0;
    for (int first = 1;;) {
        json_str k;
        int done, bad = 0;
        if ((rr = json_obj_next(c, &first, &k, &done)))
            return rr;
        if (done)
            break;
        if (JSON_EQ(&k, "rank"))
            rr = num_field(c, &rank, &bad);
        else if (JSON_EQ(&k, "world_size"))
            rr = num_field(c, &world, &bad);
        else
            rr = json_skip(c);
        if (rr)
            return rr;
    }
    if (rank >= 0 && rank < 1000000)
        r->rank = rank;
    if (world > 0 && world < 100000000)
        r->world = world;
    return JSON_OK;
}

static int parse_devices(json_cur *c, reader *r)
{
    int rr = json_ws(c);
    if (rr)
        return rr;
    if (*c->p != '[')
        return json_skip(c);
    c->p++;
    int n = 0;
    json_str first = {0};
    for (int i = 0;; i++) {
        int done;
        if ((rr = json_arr_next(c, i == 0, &done)))
            return rr;
        if (done)
            break;
        if ((rr = json_ws(c)))
            return rr;
        if (*c->p != '{') {
            if ((rr = json_skip(c)))
                return rr;
            continue;
        }
        c->p++;
        for (int kfirst = 1;;) {
            json_str k;
            int d2, bad = 0;
            if ((rr = json_obj_next(c, &kfirst, &k, &d2)))
                return rr;
            if (d2)
                break;
            if (n == 0 && JSON_EQ(&k, "name"))
                rr = str_field(c, &first, &bad);
            else
                rr = json_skip(c);
            if (rr)
                return rr;
        }
        n++;
    }
    r->ndev = n;
    if (first.s) {
        uint32_t id = intern_str(r, &first);
        r->devname = id == TELLER_NONE ? 0 : id;
    }
    return JSON_OK;
}

/* Handles one top-level key's value (not traceEvents). */
static int parse_top_value(json_cur *c, reader *r, const json_str *k)
{
    int bad = 0, rr;
    if (JSON_EQ(k, "distributedInfo"))
        return parse_distributed(c, r);
    if (JSON_EQ(k, "deviceProperties"))
        return parse_devices(c, r);
    if (JSON_EQ(k, "baseTimeNanoseconds")) {
        int64_t v = 0;
        if ((rr = num_field(c, &v, &bad)))
            return rr;
        if (!bad) {
            r->has_base = 1;
            r->base_ns = v;
        } else {
            teller_store_warn(r->st, r->path, pos_of(r, c->p), "baseTimeNanoseconds is not a number; ignored");
        }
        return JSON_OK;
    }
    if (JSON_EQ(k, "host_name") || JSON_EQ(k, "hostname")) {
        json_str s = {0};
        if ((rr = str_field(c, &s, &bad)))
            return rr;
        if (s.s) {
            uint32_t id = intern_str(r, &s);
            r->host = id == TELLER_NONE ? 0 : id;
        }
        return JSON_OK;
    }
    return json_skip(c);
}

/* "rank3", "rank-3", "rank_3" in the file's base name. */
static int64_t rank_from_path(const char *path)
{
    const char *b = strrchr(path, '/');
    b = b ? b + 1 : path;
    for (const char *p = b; (p = strstr(p, "rank")) != NULL; p += 4) {
        const char *q = p + 4;
        if (*q == '-' || *q == '_')
            q++;
        if (isdigit((unsigned char)*q))
            return strtol(q, NULL, 10);
    }
    return -1;
}

static int flow_cmp(const void *a, const void *b)
{
    const flow *x = a, *y = b;
    if (x->start != y->start) return x->start < y->start ? -1 : 1;
    if (x->pid != y->pid) return x->pid < y->pid ? -1 : 1;
    if (x->tid != y->tid) return x->tid < y->tid ? -1 : 1;
    if (x->ts != y->ts) return x->ts < y->ts ? -1 : 1;
    return 0;
}

/* Events that lack args.correlation get it from the ac2g flow that points
 * at them (same row, same timestamp): 'f' for GPU ops, 's' for API calls. */
static void link_flows(reader *r, uint32_t first)
{
    if (r->nflows == 0)
        return;
    teller_sort(r->flows, r->nflows, sizeof *r->flows, flow_cmp);
    teller_events *ev = teller_store_events_mut(r->st);
    for (size_t i = first; i < ev->n; i++) {
        if (ev->corr[i])
            continue;
        uint8_t L = ev->layer[i];
        int gpu = L == TELLER_LAYER_KERNEL || L == TELLER_LAYER_MEMCPY || L == TELLER_LAYER_MEMSET;
        int api = L == TELLER_LAYER_RUNTIME || L == TELLER_LAYER_DRIVER;
        if (!gpu && !api)
            continue;
        flow key = {ev->start_ns[i], teller_event_pid(ev, i), teller_event_tid(ev, i), 0, (uint8_t)api};
        flow *hit = bsearch(&key, r->flows, r->nflows, sizeof *r->flows, flow_cmp);
        if (hit) {
            ev->corr[i] = hit->id;
            if (gpu)
                r->gpu_without_corr--;
        }
    }
}

static teller_status run(reader *r)
{
    enum { TOP_START, TOP_OBJ, EVENTS, TOP_END } state = TOP_START;
    int bare = 0, first = 1, top_first = 1;
    size_t pos = 0;
    teller_store *st = r->st;
    for (;;) {
        json_cur c = {r->buf + pos, r->buf + r->len, NULL};
        const char *mark = c.p;
        int res;
        if (state == TOP_START) {
            res = json_ws(&c);
            if (res == JSON_OK) {
                if (*c.p == '{') {
                    state = TOP_OBJ;
                    first = 1;
                } else if (*c.p == '[') {
                    state = EVENTS;
                    bare = 1;
                    first = 1;
                } else {
                    return fail_at(r, TELLER_ERR_FORMAT, c.p, "not a trace: expected '{' or '[' at the start");
                }
                c.p++;
                pos = (size_t)(c.p - r->buf);
                continue;
            }
        } else if (state == TOP_OBJ) {
            json_str k;
            int done, tf = top_first; /* committed only when the whole unit parsed */
            res = json_obj_next(&c, &tf, &k, &done);
            if (res == JSON_OK) {
                if (done) {
                    state = TOP_END;
                } else if (JSON_EQ(&k, "traceEvents")) {
                    res = json_expect(&c, '[');
                    if (res == JSON_OK) {
                        state = EVENTS;
                        first = 1;
                    }
                } else {
                    res = parse_top_value(&c, r, &k);
                }
                if (res == JSON_OK)
                    top_first = tf;
            }
        } else if (state == EVENTS) {
            int done;
            res = json_arr_next(&c, first, &done);
            if (res == JSON_OK) {
                if (done) {
                    state = bare ? TOP_END : TOP_OBJ;
                } else {
                    ev_fields f;
                    const char *at = c.p;
                    res = parse_event(&c, &f);
                    if (res == JSON_OK) {
                        if (commit_event(r, &f, at) != 0)
                            return teller_error_set(r->err, TELLER_ERR_NOMEM, r->path, pos_of(r, at),
                                                    "out of memory");
                        first = 0;
                    }
                }
            }
        } else { /* TOP_END: only white space may follow */
            res = json_ws(&c);
            if (res == JSON_OK) {
                teller_store_warn(st, r->path, pos_of(r, c.p), "data after the end of the trace ignored");
                return TELLER_OK;
            }
            if (r->eof)
                return TELLER_OK;
            pos = r->len;
            teller_status s = refill(r, pos);
            if (s)
                return s;
            pos = 0;
            continue;
        }
        if (res == JSON_OK) {
            pos = (size_t)(c.p - r->buf);
            continue;
        }
        if (res == JSON_ERR)
            return fail_at(r, TELLER_ERR_FORMAT, c.p, c.err ? c.err : "invalid JSON");
        /* JSON_MORE: keep from the mark, read more, parse the unit again */
        if (r->eof)
            return teller_error_set(r->err, TELLER_ERR_TRUNCATED, r->path, r->base_off + r->len,
                                    "the trace ends early (truncated JSON)");
        teller_status s = refill(r, (size_t)(mark - r->buf));
        if (s)
            return s;
        pos = 0;
    }
}

static int64_t end_ns(const teller_events *ev, uint32_t e) { return ev->start_ns[e] + ev->dur_ns[e]; }

static int is_launch(const teller_events *ev, uint32_t e)
{
    return ev->layer[e] == TELLER_LAYER_RUNTIME || ev->layer[e] == TELLER_LAYER_DRIVER;
}

/* The order in which torch ops and launch calls (events of the store,
 * ctx) nest: by thread, then start; at the same start an op holds a call
 * that starts with it, and the outer op (the later end) comes first; then
 * file order, so that no two events are equal. */
static int nest_cmp(const void *a, const void *b, void *ctx)
{
    const teller_events *ev = ctx;
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    const teller_track *tx = &ev->tracks[ev->track[x]], *ty = &ev->tracks[ev->track[y]];
    if (tx->pid != ty->pid)
        return (uint32_t)tx->pid < (uint32_t)ty->pid ? -1 : 1;
    if (tx->tid != ty->tid)
        return (uint32_t)tx->tid < (uint32_t)ty->tid ? -1 : 1;
    if (ev->start_ns[x] != ev->start_ns[y])
        return ev->start_ns[x] < ev->start_ns[y] ? -1 : 1;
    int lx = is_launch(ev, x), ly = is_launch(ev, y);
    if (lx != ly)
        return lx - ly;
    int64_t ex = end_ns(ev, x), ey = end_ns(ev, y);
    if (ex != ey)
        return ex > ey ? -1 : 1;
    return x < y ? -1 : 1;
}

static int bit_set(const uint64_t *bits, uint32_t e) { return (int)(bits[e / 64] >> e % 64 & 1); }

/* Args rows for the shapes of the torch ops that launched work (the
 * innermost torch op around a launch call on its thread, the op the
 * diagnosis reads a kernel's work from): most torch ops with shapes
 * launch nothing themselves, and a row each would cost them 56 bytes. This runs with the whole file in
 * the store, at the read's memory peak, so the calls are sorted in place
 * and each buffer goes as soon as it is done with. 0, or -1 out of
 * memory. */
static int shape_rows(reader *r)
{
    if (!r->nshaped)
        return 0;
    teller_events *ev = teller_store_events_mut(r->st);
    uint64_t *launched = calloc(r->shaped_ev_cap, sizeof *launched);
    uint32_t *open = NULL; /* the ops around the current call, outermost first */
    size_t depth = 0, open_cap = 0;
    if (!launched)
        return -1;
    teller_sort_r(r->calls, r->ncalls, sizeof *r->calls, nest_cmp, ev);
    for (size_t i = 0; i < r->ncalls; i++) {
        uint32_t e = r->calls[i], prev = i ? r->calls[i - 1] : 0;
        if (i && ev->track[e] != ev->track[prev])
            depth = 0;
        while (depth && end_ns(ev, open[depth - 1]) < ev->start_ns[e])
            depth--; /* ended before it */
        if (!is_launch(ev, e)) {
            if (TELLER_GROW(open, open_cap, depth + 1)) {
                free(open);
                free(launched);
                return -1;
            }
            open[depth++] = e;
            continue;
        }
        size_t d = depth;
        while (d && end_ns(ev, open[d - 1]) < end_ns(ev, e))
            d--; /* ends inside it: not around it */
        uint32_t op = d ? open[d - 1] : 0;
        if (d && op / 64 < r->shaped_ev_cap && bit_set(r->shaped_ev, op))
            launched[op / 64] |= 1ull << op % 64;
    }
    free(open);
    free(r->calls);
    r->calls = NULL;
    r->ncalls = r->calls_cap = 0;
    size_t k = 0; /* r->shaped[k]: the op of the next set bit */
    for (size_t w = 0; w < r->shaped_ev_cap; w++) {
        for (uint64_t bits = r->shaped_ev[w]; bits; bits &= bits - 1, k++) {
            uint32_t e = (uint32_t)(w * 64 + (size_t)__builtin_ctzll(bits));
            if (!bit_set(launched, e))
                continue;
            const shaped_op *o = &r->shaped[k];
            teller_args a = {.bytes = -1, .comm = TELLER_NONE, .ext_id = o->ext_id, .in_dims = o->dims, .in_types = o->types};
            uint32_t row = teller_store_add_args(r->st, &a);
            if (row == TELLER_NONE) {
                free(launched);
                return -1;
            }
            ev->args[e] = row;
        }
    }
    free(launched);
    return 0;
}

static teller_status ingest(reader *r)
{
    teller_store *st = r->st;
    uint32_t first = (uint32_t)teller_store_events(st)->n;
    uint32_t si = teller_store_begin_source(st, r->path, TELLER_FORMAT_KINETO);
    if (si == TELLER_NONE)
        return teller_error_set(r->err, TELLER_ERR_LIMIT, r->path, 0, "too many sources or out of memory");
    r->src = (uint16_t)si;
    r->rank = -1;
    teller_status s = run(r);
    if (s)
        return s;
    link_flows(r, first);
    if (shape_rows(r))
        return teller_error_set(r->err, TELLER_ERR_NOMEM, r->path, 0, "out of memory");
    if (r->gpu_without_corr)
        teller_store_warn(st, r->path, 0, "%llu GPU operations carry no correlation id and cannot be linked",
                          (unsigned long long)r->gpu_without_corr);
    teller_events *ev = teller_store_events_mut(st);
    for (size_t i = first; r->has_base && i < ev->n; i++) {
        int64_t t;
        if (__builtin_add_overflow(ev->start_ns[i], r->base_ns, &t) || !teller_time_ok(t, ev->dur_ns[i])) {
            teller_store_warn(st, r->path, 0, "baseTimeNanoseconds %lld puts events past the year 2116; ignored",
                              (long long)r->base_ns);
            r->has_base = 0;
        }
    }
    if (r->has_base) {
        for (size_t i = first; i < ev->n; i++)
            ev->start_ns[i] += r->base_ns;
    }
    teller_source *so = teller_store_source(st, si);
    so->num_events = (uint32_t)(ev->n - first);
    so->base_ns = r->has_base ? r->base_ns : 0;
    if (r->opts->rank_override >= 0)
        so->rank = r->opts->rank_override;
    else if (r->rank >= 0)
        so->rank = (int32_t)r->rank;
    else
        so->rank = (int32_t)rank_from_path(r->path);
    so->world_size = (int32_t)r->world;
    so->num_devices = r->ndev;
    so->device_name = r->devname;
    so->host = r->host;
    /* the CPU process: the most common non-negative pid of CPU events */
    for (size_t i = first; i < ev->n; i++) {
        if (!(ev->flags[i] & TELLER_F_GPU) && teller_event_pid(ev, i) > 0 && ev->layer[i] != TELLER_LAYER_OTHER) {
            so->pid = teller_event_pid(ev, i);
            break;
        }
    }
    return TELLER_OK;
}

teller_ingest_opts teller_ingest_defaults(void)
{
    teller_ingest_opts o = {0};
    o.rank_override = -1;
    return o;
}

static void reader_free(reader *r)
{
    if (r->owned)
        free(r->buf);
    free(r->scratch);
    free(r->flows);
    free(r->name_comm);
    free(r->shaped);
    free(r->shaped_ev);
    free(r->calls);
}

/* A gzip file that inflates to at most this many bytes is inflated whole
 * by libdeflate (faster than zlib's inflate, docs/SCALE.md) and parsed
 * from memory. Larger files, files of several gzip members and
 * damaged ones stream through zlib's gzread, which keeps memory to the
 * window and says where a damaged stream ends; plain JSON streams through
 * the window too. */
#define WHOLE_GZIP_MAX (64u << 20)

/* The inflated text of the gzip file f (open, any position; *len bytes,
 * in the store's scratch buffer) when it is one gzip member of at most
 * WHOLE_GZIP_MAX bytes that inflates cleanly; NULL otherwise (then the file
 * is streamed, and any error is found there). */
static char *inflate_whole(teller_store *st, FILE *f, size_t *len)
{
    unsigned char tail[4];
    char *out = NULL;
    long size = 0;
    uint32_t isize = 0;
    int ok = fseek(f, 0, SEEK_END) == 0 && (size = ftell(f)) >= 18 && size <= (long)WHOLE_GZIP_MAX &&
             fseek(f, size - 4, SEEK_SET) == 0 && fread(tail, 1, 4, f) == 4;
    if (ok) {
        /* one buffer: the inflated text, then the file */
        isize = (uint32_t)tail[0] | (uint32_t)tail[1] << 8 | (uint32_t)tail[2] << 16 | (uint32_t)tail[3] << 24;
        ok = isize > 0 && isize <= WHOLE_GZIP_MAX && (out = teller_store_scratch(st, (size_t)isize + (size_t)size)) &&
             fseek(f, 0, SEEK_SET) == 0 && fread(out + isize, 1, (size_t)size, f) == (size_t)size;
    }
    struct libdeflate_decompressor *d = ok ? libdeflate_alloc_decompressor() : NULL;
    size_t used_in = 0, used_out = 0;
    ok = d && libdeflate_gzip_decompress_ex(d, out + isize, (size_t)size, out, isize, &used_in, &used_out) ==
                  LIBDEFLATE_SUCCESS &&
         used_in == (size_t)size && used_out == isize;
    libdeflate_free_decompressor(d);
    if (!ok)
        return NULL;
    *len = used_out;
    return out;
}

/* Room in an empty store for the events of len bytes of JSON before they
 * are read, so that its columns are not grown (copied, and faulted in
 * again) as the events come: one event per KINETO_BYTES_PER_EVENT bytes,
 * fewer bytes than any Kineto trace here spends on one (300-340 on the
 * bench and shared traces). Room not written costs address space, not
 * memory. A store that holds events already is a run's, which teller_load
 * grows to what its files predict; a failure only means growing as the
 * events come. */
#define KINETO_BYTES_PER_EVENT 256

static void reserve_for(teller_store *st, size_t len)
{
    size_t n = len / KINETO_BYTES_PER_EVENT;
    if (st->ev.n == 0 && n > 0 && n < TELLER_NONE)
        (void)teller_store_reserve_events(st, n);
}

teller_status teller_ingest_kineto(teller_store *st, const char *path, const teller_ingest_opts *opts,
                                   teller_error *err)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return teller_error_set(err, TELLER_ERR_IO, path, 0, "cannot open the file");
    /* gzip's magic, as zlib tells a gzip stream from a plain file */
    int c0 = getc(f), c1 = getc(f), gz = c0 == 0x1f && c1 == 0x8b;
    size_t whole_len;
    const char *whole = gz ? inflate_whole(st, f, &whole_len) : NULL;
    if (whole) {
        fclose(f);
        reserve_for(st, whole_len);
        return teller_ingest_kineto_mem(st, path, whole, whole_len, opts, err);
    }
    teller_ingest_opts def = teller_ingest_defaults();
    reader r = {0};
    r.st = st;
    r.path = path;
    r.opts = opts ? opts : &def;
    r.err = err;
    if (gz) {
        fclose(f);
        if (!(r.gz = gzopen(path, "rb")))
            return teller_error_set(err, TELLER_ERR_IO, path, 0, "cannot open the file");
        gzbuffer(r.gz, 1u << 20);
    } else {
        if (fseek(f, 0, SEEK_END) == 0) {
            long size = ftell(f);
            reserve_for(st, size > 0 ? (size_t)size : 0);
        }
        rewind(f);
        r.plain = f;
    }
    r.cap = WINDOW_INITIAL;
    r.buf = malloc(r.cap);
    r.owned = 1;
    teller_status s;
    if (!r.buf)
        s = teller_error_set(err, TELLER_ERR_NOMEM, path, 0, "out of memory");
    else if ((s = refill(&r, 0)) == TELLER_OK)
        s = ingest(&r);
    if (r.gz)
        gzclose(r.gz);
    else
        fclose(r.plain);
    reader_free(&r);
    return s;
}

teller_status teller_ingest_kineto_mem(teller_store *st, const char *name, const void *data, size_t len,
                                       const teller_ingest_opts *opts, teller_error *err)
{
    teller_ingest_opts def = teller_ingest_defaults();
    reader r = {0};
    r.st = st;
    r.path = name;
    r.opts = opts ? opts : &def;
    r.err = err;
    r.buf = (char *)data; /* never written: refill() does nothing without gz */
    r.len = len;
    r.cap = len;
    r.eof = 1;
    teller_status s = ingest(&r);
    reader_free(&r);
    return s;
}
