/*
 * nsys.c - the Nsight Systems SQLite export reader (`nsys export --type sqlite`).
 *
 * The export is a relational database: one table per kind of activity,
 * names in StringIds, processes and threads packed into 64-bit "global
 * ids". This reader opens it read-only and immutable (nothing in the file
 * is ever written or locked, so a read-only or hostile file is safe), and
 * streams each activity table once through a prepared statement, appending
 * one store event per row. Facts about the schema are in
 * ../shared/notes/formats.md, section 2.
 *
 * Tables read, each optional (nsys creates tables lazily):
 *   CUPTI_ACTIVITY_KIND_KERNEL, _MEMCPY, _MEMSET, _SYNCHRONIZATION  GPU rows
 *   CUPTI_ACTIVITY_KIND_RUNTIME   runtime (eventClass 0) and driver (1) calls
 *   NVTX_EVENTS                   completed ranges (eventType 59 and 60)
 *   PROFILER_OVERHEAD, and CUPTI_ACTIVITY_KIND_OVERHEAD rows whose type's
 *   label in ENUM_CUPTI_OVERHEAD_TYPE says "(Profiler)": the profiler's
 *   own work (TELLER_F_PROFILER), on processes that have a source
 *   StringIds, ENUM_CUDA_MEMCPY_OPER, ENUM_CUDA_MEM_KIND, ENUM_CUPTI_OVERHEAD_TYPE,
 *   TARGET_INFO_SESSION_START_TIME, TARGET_INFO_SYSTEM_ENV,
 *   TARGET_INFO_GPU, TARGET_INFO_CUDA_DEVICE  names and file-level facts
 * A file with none of KERNEL, RUNTIME and NVTX_EVENTS is not a trace.
 *
 * Sources: one per OS process with CUDA activity (a torchrun job captured
 * in one file holds one process per rank). Rows of all tables are
 * attributed to their process through the PID bits of globalPid or
 * globalTid; GPU rows keep pid = device and tid = stream like Kineto's, so
 * the tree builder links them to their launch by (source, correlationId).
 * Events of a multi-process file are regrouped per source at the end so
 * that each source's [first_event, first_event+num_events) is contiguous.
 *
 * Times are integer ns on the capture's clock and are moved to epoch ns
 * with TARGET_INFO_SESSION_START_TIME, see session_base().
 */
#include <stdlib.h>
#include <string.h>
#include <sqlite3.h>

#include "teller/ingest.h"
#include "teller/tree.h"
#include "../util/vec.h"

/* Timestamps below 0, or past the bounds of teller_time_ok (store.h), are
 * nonsense in any export; refusing them keeps every later sum (start + dur
 * + epoch base) inside int64. */

/* Global ids: (vm << 48) | (pid << 24) | tid. */
static int32_t gid_pid(int64_t g) { return (int32_t)(((uint64_t)g >> 24) & 0xFFFFFF); }
static int32_t gid_tid(int64_t g) { return (int32_t)((uint64_t)g & 0xFFFFFF); }

enum {
    T_KERNEL = 0, T_RUNTIME, T_MEMCPY, T_MEMSET, T_SYNC, T_NVTX, T_STRINGS,
    T_ENUM_MEMCPY, T_ENUM_MEMKIND, T_SESSION, T_SYSENV, T_GPU, T_CUDA_DEVICE,
    T_OVERHEAD, T_PROFILER, T_ENUM_OVERHEAD,
    T_COUNT
};

static const char *const k_tables[T_COUNT] = {
    "CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_RUNTIME", "CUPTI_ACTIVITY_KIND_MEMCPY",
    "CUPTI_ACTIVITY_KIND_MEMSET", "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", "NVTX_EVENTS", "StringIds",
    "ENUM_CUDA_MEMCPY_OPER", "ENUM_CUDA_MEM_KIND", "TARGET_INFO_SESSION_START_TIME",
    "TARGET_INFO_SYSTEM_ENV", "TARGET_INFO_GPU", "TARGET_INFO_CUDA_DEVICE",
    "CUPTI_ACTIVITY_KIND_OVERHEAD", "PROFILER_OVERHEAD", "ENUM_CUPTI_OVERHEAD_TYPE",
};

/* Small enums (copy kinds, memory kinds) are read into fixed tables. */
#define ENUM_N   32
#define ENUM_LEN 40

/* Kineto's spellings, so that names compare across formats. Memcpy kinds
 * use CUPTI's numbering, which nsys keeps (ENUM_CUDA_MEMCPY_OPER); memory
 * kinds use nsys's own numbering (ENUM_CUDA_MEM_KIND: 0 is Pageable). */
static const char *const k_copy_kind[] = {"Unknown", "HtoD", "DtoH", "HtoA", "AtoH", "AtoA",
                                          "AtoD",    "DtoA", "DtoD", "HtoH", "PtoP"};
static const char *const k_mem_kind[] = {"Pageable", "Pinned", "Device", "Array",
                                         "Managed",  "Device Static", "Managed Static", "Unknown"};
static const char *const k_sync_kind[] = {"Unknown Sync", "Event Sync", "Stream Wait Event", "Stream Sync",
                                          "Context Sync"};

typedef struct proc {
    int32_t  pid;
    uint16_t src;
} proc;

typedef struct reader {
    teller_store             *st;
    const char               *path;
    const teller_ingest_opts *opts;
    teller_error             *err;
    sqlite3                  *db;
    int                       has[T_COUNT];
    sqlite3_stmt             *str_stmt; /* SELECT value FROM StringIds WHERE id = ? */
    /* StringIds id -> interned id, open addressing; key = id << 1 | stripped */
    uint64_t *skeys;
    uint32_t *svals; /* TELLER_NONE: empty slot */
    size_t    scap, sn;
    /* processes with a source, sorted by pid */
    proc   *procs;
    size_t  nprocs, procs_cap;
    size_t  last_proc;
    uint8_t *name_comm; /* per name id: 0 unknown, 1 communication, 2 not */
    size_t   name_comm_cap;
    int64_t  min_start; /* smallest raw start kept, for session_base() */
    uint64_t nvtx_orphans;
    /* NVTX domains: domainId -> interned name (from eventType 75 rows) */
    struct domain { int64_t id; uint32_t name; } *doms;
    size_t    ndom, dom_cap;
    uint32_t  nccl_name;
    char copy_code[ENUM_N][ENUM_LEN];  /* "HtoD" */
    char copy_label[ENUM_N][ENUM_LEN]; /* "Host-to-Device" */
    char mem_label[ENUM_N][ENUM_LEN];  /* "Pageable" */
    uint8_t  profiler_type[ENUM_N];    /* per overhead type: its label says "(Profiler)" */
    uint32_t sync_name[5];
} reader;

/* ---- errors ---- */

static teller_status db_fail(reader *r, const char *what)
{
    int code = sqlite3_errcode(r->db);
    teller_status s = code == SQLITE_NOMEM ? TELLER_ERR_NOMEM
                      : code == SQLITE_IOERR ? TELLER_ERR_IO
                                             : TELLER_ERR_FORMAT;
    if (code == SQLITE_NOTADB)
        return teller_error_set(r->err, s, r->path, 0, "not an SQLite database (%s)", sqlite3_errmsg(r->db));
    return teller_error_set(r->err, s, r->path, 0, "%s: %s", what, sqlite3_errmsg(r->db));
}

static teller_status oom(reader *r)
{
    return teller_error_set(r->err, TELLER_ERR_NOMEM, r->path, 0, "out of memory");
}

/* ---- strings ---- */

static uint64_t mix64(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    return x;
}

static int smap_grow(reader *r)
{
    size_t ncap = r->scap ? r->scap * 2 : 256;
    uint64_t *nk = malloc(ncap * sizeof *nk);
    uint32_t *nv = malloc(ncap * sizeof *nv);
    if (!nk || !nv) {
        free(nk);
        free(nv);
        return -1;
    }
    memset(nv, 0xff, ncap * sizeof *nv);
    for (size_t i = 0; i < r->scap; i++) {
        if (r->svals[i] == TELLER_NONE)
            continue;
        size_t j = mix64(r->skeys[i]) & (ncap - 1);
        while (nv[j] != TELLER_NONE)
            j = (j + 1) & (ncap - 1);
        nk[j] = r->skeys[i];
        nv[j] = r->svals[i];
    }
    free(r->skeys);
    free(r->svals);
    r->skeys = nk;
    r->svals = nv;
    r->scap = ncap;
    return 0;
}

/* Length of a CUDA API name without its version suffix:
 * "cudaLaunchKernel_v7000" -> 16. */
static size_t strip_version(const char *s, size_t n)
{
    size_t d = n;
    while (d > 0 && s[d - 1] >= '0' && s[d - 1] <= '9')
        d--;
    if (d < n && d >= 3 && s[d - 1] == 'v' && s[d - 2] == '_')
        return d - 2;
    return n;
}

/* The string map's value for an id that has no string. */
#define NO_STRING (TELLER_NONE - 1)

/* Sets *out to the interned text of StringIds row `id` (without a version
 * suffix when strip is set). Returns 1 when found, 0 when the id has no
 * string (or there is no StringIds table), -1 on a database error or out
 * of memory (*fatal tells which was set in r->err). */
static int string_id(reader *r, int64_t id, int strip, uint32_t *out, teller_status *fatal)
{
    if (!r->str_stmt)
        return 0;
    uint64_t key = ((uint64_t)id << 1) | (uint64_t)(strip != 0);
    if (r->scap) {
        size_t j = mix64(key) & (r->scap - 1);
        while (r->svals[j] != TELLER_NONE) {
            if (r->skeys[j] == key) {
                *out = r->svals[j];
                return *out != NO_STRING;
            }
            j = (j + 1) & (r->scap - 1);
        }
    }
    /* miss: look it up once, remember the answer (also "no such string") */
    uint32_t v = NO_STRING;
    sqlite3_reset(r->str_stmt);
    sqlite3_bind_int64(r->str_stmt, 1, id);
    int rc = sqlite3_step(r->str_stmt);
    if (rc == SQLITE_ROW) {
        const char *s = (const char *)sqlite3_column_text(r->str_stmt, 0);
        if (s) {
            size_t n = (size_t)sqlite3_column_bytes(r->str_stmt, 0);
            if (strip)
                n = strip_version(s, n);
            v = teller_store_intern(r->st, s, n);
            if (v == TELLER_NONE) {
                *fatal = oom(r);
                return -1;
            }
        }
    } else if (rc != SQLITE_DONE) {
        *fatal = db_fail(r, "reading StringIds");
        return -1;
    }
    sqlite3_reset(r->str_stmt);
    if ((r->sn + 1) * 2 > r->scap && smap_grow(r)) {
        *fatal = oom(r);
        return -1;
    }
    size_t j = mix64(key) & (r->scap - 1);
    while (r->svals[j] != TELLER_NONE)
        j = (j + 1) & (r->scap - 1);
    r->skeys[j] = key;
    r->svals[j] = v;
    r->sn++;
    *out = v;
    return v != NO_STRING;
}

/* Marks names that are communication work, classifying each distinct
 * name once. Returns 0, or -1 when out of memory. */
static int is_comm(reader *r, uint32_t name, int *comm)
{
    if (name >= r->name_comm_cap) {
        size_t old = r->name_comm_cap;
        if (TELLER_GROW(r->name_comm, r->name_comm_cap, (size_t)name + 1))
            return -1;
        memset(r->name_comm + old, 0, r->name_comm_cap - old);
    }
    if (!r->name_comm[name])
        r->name_comm[name] = teller_name_is_comm(teller_store_str(r->st, name)) ? 1 : 2;
    *comm = r->name_comm[name] == 1;
    return 0;
}

/* ---- processes and sources ---- */

/* The source of process pid; creates it when `create` is set. Returns
 * TELLER_NONE when the process has none (and create is 0), or on failure
 * with *fatal set. */
static uint32_t source_of(reader *r, int32_t pid, int create, teller_status *fatal)
{
    if (r->last_proc < r->nprocs && r->procs[r->last_proc].pid == pid)
        return r->procs[r->last_proc].src;
    size_t lo = 0, hi = r->nprocs;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (r->procs[mid].pid < pid)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < r->nprocs && r->procs[lo].pid == pid) {
        r->last_proc = lo;
        return r->procs[lo].src;
    }
    if (!create)
        return TELLER_NONE;
    uint32_t si = teller_store_begin_source(r->st, r->path, TELLER_FORMAT_NSYS);
    if (si != TELLER_NONE)
        teller_store_source(r->st, si)->pid = pid;
    if (si == TELLER_NONE || TELLER_GROW(r->procs, r->procs_cap, r->nprocs + 1)) {
        *fatal = teller_error_set(r->err, TELLER_ERR_LIMIT, r->path, 0, "too many sources or out of memory");
        return TELLER_NONE;
    }
    memmove(r->procs + lo + 1, r->procs + lo, (r->nprocs - lo) * sizeof *r->procs);
    r->procs[lo] = (proc){pid, (uint16_t)si};
    r->nprocs++;
    r->last_proc = lo;
    return si;
}

/* ---- schema ---- */

static teller_status list_tables(reader *r)
{
    sqlite3_stmt *q = NULL;
    if (sqlite3_prepare_v2(r->db, "SELECT name FROM sqlite_master WHERE type = 'table'", -1, &q, NULL) != SQLITE_OK)
        return db_fail(r, "reading the schema");
    int rc;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        const char *n = (const char *)sqlite3_column_text(q, 0);
        for (int t = 0; n && t < T_COUNT; t++)
            if (!strcmp(n, k_tables[t]))
                r->has[t] = 1;
    }
    sqlite3_finalize(q);
    if (rc != SQLITE_DONE)
        return db_fail(r, "reading the schema");
    return TELLER_OK;
}

/* `col` when table has that column, else "NULL" (schemas differ across
 * nsys versions; a missing optional column reads as NULL). */
static const char *col_or_null(reader *r, int t, const char *col)
{
    sqlite3_stmt *q = NULL;
    int found = 0;
    if (sqlite3_prepare_v2(r->db, "SELECT 1 FROM pragma_table_info(?1) WHERE name = ?2", -1, &q, NULL) == SQLITE_OK) {
        sqlite3_bind_text(q, 1, k_tables[t], -1, SQLITE_STATIC);
        sqlite3_bind_text(q, 2, col, -1, SQLITE_STATIC);
        found = sqlite3_step(q) == SQLITE_ROW;
    }
    sqlite3_finalize(q);
    return found ? col : "NULL";
}

static teller_status prepare(reader *r, const char *sql, int t, sqlite3_stmt **out)
{
    if (sqlite3_prepare_v2(r->db, sql, -1, out, NULL) != SQLITE_OK) {
        char what[96];
        snprintf(what, sizeof what, "unexpected layout of table %s", k_tables[t]);
        return db_fail(r, what);
    }
    return TELLER_OK;
}

/* Copies a column's text into a fixed buffer ("" when NULL). */
static void copy_text(char *dst, size_t cap, sqlite3_stmt *q, int col)
{
    const char *s = (const char *)sqlite3_column_text(q, col);
    snprintf(dst, cap, "%s", s ? s : "");
}

/* "CUDA_MEMCPY_KIND_UVM_HTOD" -> "UVM HtoD": Kineto's spelling of a copy kind. */
static void copy_code_from_enum(char *dst, size_t cap, const char *name)
{
    const char *p = strstr(name, "KIND_");
    p = p ? p + 5 : name;
    size_t o = 0;
    while (*p && o + 1 < cap) {
        size_t n = strcspn(p, "_");
        if (n == 4 && p[1] == 'T' && p[2] == 'O') {
            /* XTOY -> XtoY */
            char w[5] = {p[0], 't', 'o', p[3], 0};
            o += (size_t)snprintf(dst + o, cap - o, "%s%s", o ? " " : "", w);
        } else if (n == 7 && !strncmp(p, "UNKNOWN", 7)) {
            o += (size_t)snprintf(dst + o, cap - o, "%sUnknown", o ? " " : "");
        } else {
            o += (size_t)snprintf(dst + o, cap - o, "%s%.*s", o ? " " : "", (int)n, p);
        }
        if (o >= cap)
            o = cap - 1;
        p += n;
        if (*p == '_')
            p++;
    }
    dst[o] = 0;
}

static teller_status load_enums(reader *r)
{
    for (int i = 0; i < ENUM_N; i++) {
        snprintf(r->copy_code[i], ENUM_LEN, "%s",
                 i < (int)(sizeof k_copy_kind / sizeof *k_copy_kind) ? k_copy_kind[i] : "Unknown");
        snprintf(r->mem_label[i], ENUM_LEN, "%s",
                 i < (int)(sizeof k_mem_kind / sizeof *k_mem_kind) ? k_mem_kind[i] : "Unknown");
        r->copy_label[i][0] = 0;
    }
    sqlite3_stmt *q = NULL;
    if (r->has[T_ENUM_MEMCPY] &&
        sqlite3_prepare_v2(r->db, "SELECT id, name, label FROM ENUM_CUDA_MEMCPY_OPER", -1, &q, NULL) == SQLITE_OK) {
        while (sqlite3_step(q) == SQLITE_ROW) {
            int64_t id = sqlite3_column_int64(q, 0);
            if (id < 0 || id >= ENUM_N || !sqlite3_column_text(q, 1))
                continue;
            copy_code_from_enum(r->copy_code[id], ENUM_LEN, (const char *)sqlite3_column_text(q, 1));
            copy_text(r->copy_label[id], ENUM_LEN, q, 2);
        }
    }
    sqlite3_finalize(q);
    q = NULL;
    if (r->has[T_ENUM_MEMKIND] &&
        sqlite3_prepare_v2(r->db, "SELECT id, label FROM ENUM_CUDA_MEM_KIND", -1, &q, NULL) == SQLITE_OK) {
        while (sqlite3_step(q) == SQLITE_ROW) {
            int64_t id = sqlite3_column_int64(q, 0);
            if (id >= 0 && id < ENUM_N && sqlite3_column_text(q, 1))
                copy_text(r->mem_label[id], ENUM_LEN, q, 1);
        }
    }
    sqlite3_finalize(q);
    q = NULL;
    if (r->has[T_ENUM_OVERHEAD] &&
        sqlite3_prepare_v2(r->db, "SELECT id, label FROM ENUM_CUPTI_OVERHEAD_TYPE", -1, &q, NULL) == SQLITE_OK) {
        while (sqlite3_step(q) == SQLITE_ROW) {
            int64_t id = sqlite3_column_int64(q, 0);
            const char *label = (const char *)sqlite3_column_text(q, 1);
            if (id >= 0 && id < ENUM_N && label)
                r->profiler_type[id] = strstr(label, "(Profiler)") != NULL;
        }
    }
    sqlite3_finalize(q);
    for (int i = 0; i < 5; i++)
        if ((r->sync_name[i] = teller_store_intern(r->st, k_sync_kind[i], strlen(k_sync_kind[i]))) == TELLER_NONE)
            return oom(r);
    r->nccl_name = teller_store_intern(r->st, "NCCL", 4);
    return r->nccl_name == TELLER_NONE ? oom(r) : TELLER_OK;
}

/* NVTX domains from DomainCreate rows (eventType 75: domainId and the
 * domain's name in text or textId). */
static teller_status load_domains(reader *r)
{
    if (!r->has[T_NVTX])
        return TELLER_OK;
    char sql[256];
    snprintf(sql, sizeof sql, "SELECT domainId, text, %s FROM NVTX_EVENTS WHERE eventType = 75",
             col_or_null(r, T_NVTX, "textId"));
    sqlite3_stmt *q = NULL;
    if (sqlite3_prepare_v2(r->db, sql, -1, &q, NULL) != SQLITE_OK)
        return TELLER_OK; /* no domainId column: every range is in the default domain */
    teller_status s = TELLER_OK;
    int rc;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        uint32_t name = TELLER_NONE;
        const char *t = (const char *)sqlite3_column_text(q, 1);
        if (t) {
            name = teller_store_intern(r->st, t, (size_t)sqlite3_column_bytes(q, 1));
            if (name == TELLER_NONE) {
                s = oom(r);
                break;
            }
        } else if (sqlite3_column_type(q, 2) != SQLITE_NULL) {
            int got = string_id(r, sqlite3_column_int64(q, 2), 0, &name, &s);
            if (got < 0)
                break;
            if (!got)
                name = TELLER_NONE;
        }
        if (name == TELLER_NONE)
            continue;
        if (TELLER_GROW(r->doms, r->dom_cap, r->ndom + 1)) {
            s = oom(r);
            break;
        }
        r->doms[r->ndom].id = sqlite3_column_int64(q, 0);
        r->doms[r->ndom++].name = name;
    }
    if (s == TELLER_OK && rc != SQLITE_ROW && rc != SQLITE_DONE)
        s = db_fail(r, "reading NVTX_EVENTS");
    sqlite3_finalize(q);
    return s;
}

/* ---- rows ---- */

/* Reads a row's start and end (columns c, c+1) into *start and *dur.
 * Warns and returns 0 when the row cannot be used. */
static int row_time(reader *r, sqlite3_stmt *q, int c, int t, int64_t rowid, int64_t *start, int64_t *dur)
{
    if (sqlite3_column_type(q, c) == SQLITE_NULL || sqlite3_column_type(q, c + 1) == SQLITE_NULL) {
        teller_store_warn(r->st, r->path, (uint64_t)rowid, "%s row %lld has no start or end; skipped", k_tables[t],
                          (long long)rowid);
        return 0;
    }
    if (sqlite3_column_type(q, c) != SQLITE_INTEGER || sqlite3_column_type(q, c + 1) != SQLITE_INTEGER) {
        teller_store_warn(r->st, r->path, (uint64_t)rowid, "%s row %lld has a start or end that is not an integer; "
                          "skipped", k_tables[t], (long long)rowid);
        return 0;
    }
    int64_t s = sqlite3_column_int64(q, c), e = sqlite3_column_int64(q, c + 1);
    /* capture-clock times are never negative; both >= 0, e - s cannot overflow */
    if (s < 0 || e < 0 || (e >= s && !teller_time_ok(s, e - s))) {
        teller_store_warn(r->st, r->path, (uint64_t)rowid, "%s row %lld has a timestamp out of range; skipped",
                          k_tables[t], (long long)rowid);
        return 0;
    }
    if (e < s) {
        teller_store_warn(r->st, r->path, (uint64_t)rowid, "%s row %lld ends before it starts; skipped", k_tables[t],
                          (long long)rowid);
        return 0;
    }
    *start = s;
    *dur = e - s;
    return 1;
}

/* A correlation id, 0 when absent or out of range. */
static uint32_t row_corr(sqlite3_stmt *q, int c)
{
    int64_t v = sqlite3_column_int64(q, c);
    return v > 0 && v < UINT32_MAX ? (uint32_t)v : 0;
}

static uint32_t dim(sqlite3_stmt *q, int c)
{
    int64_t v = sqlite3_column_int64(q, c);
    return v > 0 && v < UINT32_MAX ? (uint32_t)v : 0;
}

/* Appends an event (and its args row when a is not NULL). */
static teller_status add_event(reader *r, teller_event_row *row, const teller_args *a)
{
    if (row->layer != TELLER_LAYER_OTHER) {
        int comm;
        if (is_comm(r, row->name, &comm))
            return oom(r);
        if (comm)
            row->flags |= TELLER_F_COMM;
    }
    row->args = TELLER_NONE;
    if (a && (row->args = teller_store_add_args(r->st, a)) == TELLER_NONE)
        return oom(r);
    if (teller_store_add_event(r->st, row) == TELLER_NONE)
        return oom(r);
    if (row->start_ns < r->min_start)
        r->min_start = row->start_ns;
    return TELLER_OK;
}

static teller_args gpu_args(int64_t bytes)
{
    teller_args a = {0};
    a.bytes = bytes;
    a.comm = TELLER_NONE;
    a.ext_id = -1;
    return a;
}

/* The source of a row's process from a globalPid/globalTid column; warns
 * when the column is NULL. TELLER_NONE with *fatal == TELLER_OK: skip. */
static uint32_t row_source(reader *r, sqlite3_stmt *q, int c, int t, int64_t rowid, int create, teller_status *fatal)
{
    if (sqlite3_column_type(q, c) == SQLITE_NULL) {
        teller_store_warn(r->st, r->path, (uint64_t)rowid, "%s row %lld names no process; skipped", k_tables[t],
                          (long long)rowid);
        return TELLER_NONE;
    }
    return source_of(r, gid_pid(sqlite3_column_int64(q, c)), create, fatal);
}

static teller_status step_fail(reader *r, int t)
{
    char what[96];
    snprintf(what, sizeof what, "reading %s", k_tables[t]);
    return db_fail(r, what);
}

static teller_status read_kernels(reader *r)
{
    char sql[512];
    snprintf(sql, sizeof sql,
             "SELECT rowid, start, end, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s FROM CUPTI_ACTIVITY_KIND_KERNEL",
             col_or_null(r, T_KERNEL, "deviceId"), col_or_null(r, T_KERNEL, "streamId"),
             col_or_null(r, T_KERNEL, "correlationId"), col_or_null(r, T_KERNEL, "globalPid"),
             col_or_null(r, T_KERNEL, "demangledName"), col_or_null(r, T_KERNEL, "shortName"),
             col_or_null(r, T_KERNEL, "gridX"), col_or_null(r, T_KERNEL, "gridY"), col_or_null(r, T_KERNEL, "gridZ"),
             col_or_null(r, T_KERNEL, "blockX"), col_or_null(r, T_KERNEL, "blockY"),
             col_or_null(r, T_KERNEL, "blockZ"));
    sqlite3_stmt *q;
    teller_status s = prepare(r, sql, T_KERNEL, &q);
    if (s)
        return s;
    int rc;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        int64_t rowid = sqlite3_column_int64(q, 0), start, dur;
        if (!row_time(r, q, 1, T_KERNEL, rowid, &start, &dur))
            continue;
        uint32_t name = 0;
        int got = 0;
        for (int c = 7; c <= 8 && got == 0; c++) /* demangledName, then shortName */
            if (sqlite3_column_type(q, c) != SQLITE_NULL)
                got = string_id(r, sqlite3_column_int64(q, c), 0, &name, &s);
        if (got < 0)
            break;
        if (!got) {
            teller_store_warn(r->st, r->path, (uint64_t)rowid, "%s row %lld has no kernel name; skipped",
                              k_tables[T_KERNEL], (long long)rowid);
            continue;
        }
        uint32_t src = row_source(r, q, 6, T_KERNEL, rowid, 1, &s);
        if (src == TELLER_NONE) {
            if (s)
                break;
            continue;
        }
        teller_event_row row = {start, dur, name, TELLER_LAYER_KERNEL, TELLER_F_GPU, (uint16_t)src,
                                (int32_t)sqlite3_column_int64(q, 3), (int32_t)sqlite3_column_int64(q, 4),
                                row_corr(q, 5), TELLER_NONE};
        teller_args a = gpu_args(-1);
        for (int i = 0; i < 3; i++) {
            a.grid[i] = dim(q, 9 + i);
            a.block[i] = dim(q, 12 + i);
        }
        if ((s = add_event(r, &row, &a)))
            break;
    }
    if (s == TELLER_OK && rc != SQLITE_ROW && rc != SQLITE_DONE)
        s = step_fail(r, T_KERNEL);
    sqlite3_finalize(q);
    return s;
}

/* Kineto's copy name: "Memcpy HtoD (Pageable -> Device)". Without memory
 * kinds the halves of the copy kind's label stand in ("Host -> Device"). */
static void memcpy_name(reader *r, char *buf, size_t cap, int64_t ck, int64_t sk, int64_t dk)
{
    const char *code = ck >= 0 && ck < ENUM_N ? r->copy_code[ck] : "Unknown";
    const char *label = ck >= 0 && ck < ENUM_N ? r->copy_label[ck] : "";
    const char *to = strstr(label, "-to-");
    if (sk >= 0 && sk < ENUM_N && dk >= 0 && dk < ENUM_N)
        snprintf(buf, cap, "Memcpy %s (%s -> %s)", code, r->mem_label[sk], r->mem_label[dk]);
    else if (to)
        snprintf(buf, cap, "Memcpy %s (%.*s -> %s)", code, (int)(to - label), label, to + 4);
    else
        snprintf(buf, cap, "Memcpy %s", code);
}

static int64_t int_or(sqlite3_stmt *q, int c, int64_t dflt)
{
    return sqlite3_column_type(q, c) == SQLITE_NULL ? dflt : sqlite3_column_int64(q, c);
}

/* MEMCPY, MEMSET and SYNCHRONIZATION share their first columns. */
static teller_status read_gpu_ops(reader *r, int t)
{
    char sql[512];
    const char *extra1 = "NULL", *extra2 = "NULL", *extra3 = "NULL";
    if (t == T_MEMCPY) {
        extra1 = col_or_null(r, t, "copyKind");
        extra2 = col_or_null(r, t, "srcKind");
        extra3 = col_or_null(r, t, "dstKind");
    } else if (t == T_MEMSET) {
        extra1 = col_or_null(r, t, "memKind");
    } else {
        extra1 = col_or_null(r, t, "syncType");
        extra2 = col_or_null(r, t, "deprecatedSyncType");
    }
    const char *bytes = t == T_SYNC ? "NULL" : col_or_null(r, t, "bytes");
    snprintf(sql, sizeof sql, "SELECT rowid, start, end, %s, %s, %s, %s, %s, %s, %s, %s FROM %s",
             col_or_null(r, t, "deviceId"), col_or_null(r, t, "streamId"), col_or_null(r, t, "correlationId"),
             col_or_null(r, t, "globalPid"), bytes, extra1, extra2, extra3, k_tables[t]);
    sqlite3_stmt *q;
    teller_status s = prepare(r, sql, t, &q);
    if (s)
        return s;
    int rc;
    char nbuf[160];
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        int64_t rowid = sqlite3_column_int64(q, 0), start, dur;
        if (!row_time(r, q, 1, t, rowid, &start, &dur))
            continue;
        uint32_t src = row_source(r, q, 6, t, rowid, 1, &s);
        if (src == TELLER_NONE) {
            if (s)
                break;
            continue;
        }
        uint32_t name;
        uint8_t layer;
        if (t == T_SYNC) {
            int64_t k = int_or(q, 8, int_or(q, 9, 0));
            name = r->sync_name[k >= 0 && k < 5 ? k : 0];
            layer = TELLER_LAYER_SYNC;
        } else {
            if (t == T_MEMCPY) {
                memcpy_name(r, nbuf, sizeof nbuf, int_or(q, 8, 0), int_or(q, 9, -1), int_or(q, 10, -1));
                layer = TELLER_LAYER_MEMCPY;
            } else {
                int64_t k = int_or(q, 8, -1);
                snprintf(nbuf, sizeof nbuf, "Memset (%s)", k >= 0 && k < ENUM_N ? r->mem_label[k] : "Unknown");
                layer = TELLER_LAYER_MEMSET;
            }
            if ((name = teller_store_intern(r->st, nbuf, strlen(nbuf))) == TELLER_NONE) {
                s = oom(r);
                break;
            }
        }
        teller_event_row row = {start, dur, name, layer, TELLER_F_GPU, (uint16_t)src,
                                (int32_t)sqlite3_column_int64(q, 3), (int32_t)sqlite3_column_int64(q, 4),
                                row_corr(q, 5), TELLER_NONE};
        teller_args a = gpu_args(int_or(q, 7, -1));
        if ((s = add_event(r, &row, t == T_SYNC ? NULL : &a)))
            break;
    }
    if (s == TELLER_OK && rc != SQLITE_ROW && rc != SQLITE_DONE)
        s = step_fail(r, t);
    sqlite3_finalize(q);
    return s;
}

static teller_status read_runtime(reader *r)
{
    char sql[512];
    snprintf(sql, sizeof sql, "SELECT rowid, start, end, %s, %s, %s, %s FROM CUPTI_ACTIVITY_KIND_RUNTIME",
             col_or_null(r, T_RUNTIME, "eventClass"), col_or_null(r, T_RUNTIME, "globalTid"),
             col_or_null(r, T_RUNTIME, "correlationId"), col_or_null(r, T_RUNTIME, "nameId"));
    sqlite3_stmt *q;
    teller_status s = prepare(r, sql, T_RUNTIME, &q);
    if (s)
        return s;
    int rc;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        int64_t rowid = sqlite3_column_int64(q, 0), start, dur;
        if (!row_time(r, q, 1, T_RUNTIME, rowid, &start, &dur))
            continue;
        uint32_t name = 0;
        int got = sqlite3_column_type(q, 6) == SQLITE_NULL ? 0 : string_id(r, sqlite3_column_int64(q, 6), 1, &name, &s);
        if (got < 0)
            break;
        if (!got) {
            teller_store_warn(r->st, r->path, (uint64_t)rowid, "%s row %lld has no function name; skipped",
                              k_tables[T_RUNTIME], (long long)rowid);
            continue;
        }
        uint32_t src = row_source(r, q, 4, T_RUNTIME, rowid, 1, &s);
        if (src == TELLER_NONE) {
            if (s)
                break;
            continue;
        }
        int64_t g = sqlite3_column_int64(q, 4);
        /* eventClass 1 is TRACE_PROCESS_EVENT_CUDA_DRIVER, 0 the runtime */
        uint8_t layer = sqlite3_column_int64(q, 3) == 1 ? TELLER_LAYER_DRIVER : TELLER_LAYER_RUNTIME;
        uint8_t flags = strstr(teller_store_str(r->st, name), "GraphLaunch") ? TELLER_F_GRAPH : 0;
        teller_event_row row = {start, dur, name, layer, flags, (uint16_t)src, gid_pid(g), gid_tid(g),
                                row_corr(q, 5), TELLER_NONE};
        if ((s = add_event(r, &row, NULL)))
            break;
    }
    if (s == TELLER_OK && rc != SQLITE_ROW && rc != SQLITE_DONE)
        s = step_fail(r, T_RUNTIME);
    sqlite3_finalize(q);
    return s;
}

/* The profiler's own work: every row of PROFILER_OVERHEAD (t T_PROFILER),
 * the rows of CUPTI_ACTIVITY_KIND_OVERHEAD of a profiler's type (t
 * T_OVERHEAD); CUDA's own (module loading, JIT, a full command buffer) is
 * left out. Rows of processes without a source are skipped. */
static teller_status read_overhead(reader *r, int t)
{
    char sql[512];
    snprintf(sql, sizeof sql, "SELECT rowid, start, end, %s, %s, %s FROM %s", col_or_null(r, t, "globalTid"),
             col_or_null(r, t, "nameId"), col_or_null(r, t, "overheadType"), k_tables[t]);
    sqlite3_stmt *q;
    teller_status s = prepare(r, sql, t, &q);
    if (s)
        return s;
    int rc;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        int64_t rowid = sqlite3_column_int64(q, 0), start, dur, type = sqlite3_column_int64(q, 5);
        if (t == T_OVERHEAD && (type < 0 || type >= ENUM_N || !r->profiler_type[type]))
            continue;
        if (!row_time(r, q, 1, t, rowid, &start, &dur))
            continue;
        uint32_t src = row_source(r, q, 3, t, rowid, 0, &s);
        if (src == TELLER_NONE) {
            if (s)
                break;
            continue;
        }
        uint32_t name = 0;
        int got = sqlite3_column_type(q, 4) == SQLITE_NULL ? 0 : string_id(r, sqlite3_column_int64(q, 4), 0, &name, &s);
        if (got < 0)
            break;
        if (!got && (name = teller_store_intern(r->st, "profiler overhead", 17)) == TELLER_NONE) {
            s = oom(r);
            break;
        }
        int64_t g = sqlite3_column_int64(q, 3);
        teller_event_row row = {start, dur, name, TELLER_LAYER_OTHER, TELLER_F_PROFILER, (uint16_t)src, gid_pid(g),
                                gid_tid(g), 0, TELLER_NONE};
        if ((s = add_event(r, &row, NULL)))
            break;
    }
    if (s == TELLER_OK && rc != SQLITE_ROW && rc != SQLITE_DONE)
        s = step_fail(r, t);
    sqlite3_finalize(q);
    return s;
}

/* PyTorch's emit_nvtx writes "aten::view, op_id = 314290" (and sizes):
 * the op's name is the text before the first ", ". Cutting it keeps one
 * interned name per op, as in Kineto traces, instead of one per call. */
static size_t nvtx_name_len(const char *s, size_t n)
{
    if (n > 6 && !strncmp(s, "aten::", 6)) {
        const char *c = memchr(s, ',', n);
        if (c)
            return (size_t)(c - s);
    }
    return n;
}

static teller_status read_nvtx(reader *r)
{
    /* an NVTX-only capture has no CUDA process: its NVTX processes are the sources */
    int create = r->nprocs == 0;
    char sql[512];
    snprintf(sql, sizeof sql,
             "SELECT rowid, start, end, text, %s, %s, %s FROM NVTX_EVENTS WHERE eventType IN (59, 60)",
             col_or_null(r, T_NVTX, "textId"), col_or_null(r, T_NVTX, "domainId"),
             col_or_null(r, T_NVTX, "globalTid"));
    sqlite3_stmt *q;
    teller_status s = prepare(r, sql, T_NVTX, &q);
    if (s)
        return s;
    int rc;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        int64_t rowid = sqlite3_column_int64(q, 0), start, dur;
        if (!row_time(r, q, 1, T_NVTX, rowid, &start, &dur))
            continue;
        if (dur == 0)
            continue; /* an empty range encloses nothing */
        uint32_t src = row_source(r, q, 6, T_NVTX, rowid, create, &s);
        if (src == TELLER_NONE) {
            if (s)
                break;
            if (sqlite3_column_type(q, 6) != SQLITE_NULL)
                r->nvtx_orphans++;
            continue;
        }
        uint32_t name = 0;
        const char *text = (const char *)sqlite3_column_text(q, 3);
        if (text) {
            size_t n = nvtx_name_len(text, (size_t)sqlite3_column_bytes(q, 3));
            if ((name = teller_store_intern(r->st, text, n)) == TELLER_NONE) {
                s = oom(r);
                break;
            }
        } else {
            int got = sqlite3_column_type(q, 4) == SQLITE_NULL ? 0
                                                                : string_id(r, sqlite3_column_int64(q, 4), 0, &name, &s);
            if (got < 0)
                break;
            if (!got) {
                teller_store_warn(r->st, r->path, (uint64_t)rowid, "%s row %lld has no text; skipped",
                                  k_tables[T_NVTX], (long long)rowid);
                continue;
            }
        }
        const char *nm = teller_store_str(r->st, name);
        int nccl = 0;
        int64_t dom = int_or(q, 5, 0);
        if (dom != 0) {
            size_t k = 0;
            while (k < r->ndom && r->doms[k].id != dom)
                k++;
            if (k < r->ndom)
                nccl = r->doms[k].name == r->nccl_name;
            else /* windowed exports lose the DomainCreate row: NCCL's ranges are its API names */
                nccl = !strncmp(nm, "nccl", 4);
        }
        int64_t g = sqlite3_column_int64(q, 6);
        teller_event_row row = {start, dur, name, TELLER_LAYER_ENGINE, 0, (uint16_t)src, gid_pid(g), gid_tid(g), 0,
                                TELLER_NONE};
        if (nccl) {
            row.layer = TELLER_LAYER_BACKEND;
            row.flags |= TELLER_F_COMM;
        } else if (!strncmp(nm, "aten::", 6)) {
            row.layer = TELLER_LAYER_BACKEND;
        }
        if ((s = add_event(r, &row, NULL)))
            break;
    }
    if (s == TELLER_OK && rc != SQLITE_ROW && rc != SQLITE_DONE)
        s = step_fail(r, T_NVTX);
    sqlite3_finalize(q);
    return s;
}

/* ---- file-level facts ---- */

typedef struct facts {
    int      has_session;
    int64_t  utc_ns, clock_ns; /* clock_ns < 0: unknown */
    uint32_t host, devname;
    int32_t  ndev;
} facts;

/* Runs a one-row query; returns the statement on a row (caller finalizes), else NULL. */
static sqlite3_stmt *one_row(reader *r, const char *sql)
{
    sqlite3_stmt *q = NULL;
    if (sqlite3_prepare_v2(r->db, sql, -1, &q, NULL) != SQLITE_OK || sqlite3_step(q) != SQLITE_ROW) {
        sqlite3_finalize(q);
        return NULL;
    }
    return q;
}

static uint32_t intern_col(reader *r, sqlite3_stmt *q, int c)
{
    const char *s = (const char *)sqlite3_column_text(q, c);
    if (!s)
        return 0;
    uint32_t id = teller_store_intern(r->st, s, (size_t)sqlite3_column_bytes(q, c));
    return id == TELLER_NONE ? 0 : id;
}

static void read_facts(reader *r, facts *f)
{
    char sql[256];
    sqlite3_stmt *q;
    memset(f, 0, sizeof *f);
    f->clock_ns = -1;
    if (r->has[T_SESSION]) {
        snprintf(sql, sizeof sql, "SELECT utcEpochNs, %s FROM TARGET_INFO_SESSION_START_TIME",
                 col_or_null(r, T_SESSION, "systemClockNs"));
        if ((q = one_row(r, sql))) {
            int64_t u = int_or(q, 0, -1), c = int_or(q, 1, -1);
            if (u >= 0 && u <= TELLER_TIME_MAX) {
                f->has_session = 1;
                f->utc_ns = u;
                f->clock_ns = c >= 0 && c <= TELLER_TIME_MAX ? c : -1;
            } else {
                teller_store_warn(r->st, r->path, 0, "session start time out of range; times stay on the capture clock");
            }
            sqlite3_finalize(q);
        }
    }
    if (r->has[T_SYSENV] && (q = one_row(r, "SELECT value FROM TARGET_INFO_SYSTEM_ENV WHERE name = 'Hostname'"))) {
        f->host = intern_col(r, q, 0);
        sqlite3_finalize(q);
    }
    if (r->has[T_GPU]) {
        snprintf(sql, sizeof sql, "SELECT COUNT(*), (SELECT %s FROM TARGET_INFO_GPU ORDER BY %s LIMIT 1) FROM TARGET_INFO_GPU",
                 col_or_null(r, T_GPU, "name"), col_or_null(r, T_GPU, "id"));
        if ((q = one_row(r, sql))) {
            int64_t n = sqlite3_column_int64(q, 0);
            f->ndev = n > 0 && n < INT32_MAX ? (int32_t)n : 0;
            f->devname = intern_col(r, q, 1);
            sqlite3_finalize(q);
        }
    }
    if (f->ndev == 0 && r->has[T_CUDA_DEVICE]) {
        const char *g = col_or_null(r, T_CUDA_DEVICE, "gpuId");
        snprintf(sql, sizeof sql, "SELECT COUNT(%s%s) FROM TARGET_INFO_CUDA_DEVICE", strcmp(g, "NULL") ? "DISTINCT " : "",
                 strcmp(g, "NULL") ? g : "*");
        if ((q = one_row(r, sql))) {
            int64_t n = sqlite3_column_int64(q, 0);
            f->ndev = n > 0 && n < INT32_MAX ? (int32_t)n : 0;
            sqlite3_finalize(q);
        }
    }
}

/* Epoch ns to add to the file's timestamps. TARGET_INFO_SESSION_START_TIME
 * holds the session start twice: utcEpochNs on the UTC clock and
 * systemClockNs on the capture clock that every event uses, so
 * epoch = t - systemClockNs + utcEpochNs. Verified on the real exports in
 * data/traces/nsys-ai: events lie in ANALYSIS_DETAILS [startTime,
 * stopTime], and startTime == systemClockNs. Exports whose times already
 * count from the session start (mock.sqlite: the "Profiling has started"
 * diagnostic at 0, every event below systemClockNs) add utcEpochNs alone.
 * Without the table times stay on the capture clock (base 0). */
static int64_t session_base(const reader *r, const facts *f)
{
    if (!f->has_session)
        return 0;
    if (f->clock_ns >= 0 && r->min_start >= f->clock_ns)
        return f->utc_ns - f->clock_ns;
    return f->utc_ns;
}

/* ---- finishing ---- */

/* Swaps elements a and b of a column of `size`-byte values. */
static void swap_at(void *col, size_t size, size_t a, size_t b)
{
    unsigned char t[8], *pa = (unsigned char *)col + a * size, *pb = (unsigned char *)col + b * size;
    memcpy(t, pa, size);
    memcpy(pa, pb, size);
    memcpy(pb, t, size);
}

/* Regroups events [first, n) by source, in source order, keeping the
 * order within each source; src0 is this file's first source (the reader
 * added its sources one after another). Returns 0 or -1 (out of memory). */
static int regroup(reader *r, uint32_t first, uint16_t src0)
{
    teller_events *ev = teller_store_events_mut(r->st);
    size_t m = ev->n - first;
    uint32_t *dest = malloc((m ? m : 1) * sizeof *dest);
    size_t *off = calloc(r->nprocs + 1, sizeof *off);
    if (!dest || !off) {
        free(dest);
        free(off);
        return -1;
    }
    for (size_t i = 0; i < m; i++)
        off[ev->source[first + i] - src0 + 1]++;
    for (size_t k = 0; k < r->nprocs; k++)
        off[k + 1] += off[k];
    for (size_t i = 0; i < m; i++)
        dest[i] = (uint32_t)off[ev->source[first + i] - src0]++;
    /* apply by swapping along cycles: each swap puts one event in place */
    for (size_t i = 0; i < m; i++) {
        while (dest[i] != i) {
            size_t a = first + i, b = first + dest[i];
            swap_at(ev->start_ns, sizeof *ev->start_ns, a, b);
            swap_at(ev->dur_ns, sizeof *ev->dur_ns, a, b);
            swap_at(ev->name, sizeof *ev->name, a, b);
            swap_at(ev->layer, sizeof *ev->layer, a, b);
            swap_at(ev->flags, sizeof *ev->flags, a, b);
            swap_at(ev->source, sizeof *ev->source, a, b);
            swap_at(ev->track, sizeof *ev->track, a, b);
            swap_at(ev->corr, sizeof *ev->corr, a, b);
            swap_at(ev->args, sizeof *ev->args, a, b);
            uint32_t t = dest[dest[i]];
            dest[dest[i]] = dest[i];
            dest[i] = t;
        }
    }
    free(dest);
    free(off);
    return 0;
}

static teller_status finish(reader *r, uint32_t first)
{
    teller_store *st = r->st;
    if (r->nvtx_orphans)
        teller_store_warn(st, r->path, 0, "%llu NVTX ranges of processes without CUDA activity skipped",
                          (unsigned long long)r->nvtx_orphans);
    if (r->nprocs == 0) {
        teller_store_warn(st, r->path, 0, "the export holds no CUDA activity and no NVTX ranges");
        return TELLER_OK;
    }
    if (r->opts->rank_override >= 0 && r->nprocs > 1)
        return teller_error_set(r->err, TELLER_ERR_ARG, r->path, 0,
                                "a rank override needs a file of one process; this one holds %zu", r->nprocs);
    facts f;
    read_facts(r, &f);
    int64_t base = session_base(r, &f);
    teller_events *ev = teller_store_events_mut(st);
    for (size_t i = first; base && i < ev->n; i++) {
        int64_t t;
        if (__builtin_add_overflow(ev->start_ns[i], base, &t) || !teller_time_ok(t, ev->dur_ns[i])) {
            teller_store_warn(st, r->path, 0, "the session start puts events past the year 2116; times stay on the "
                                              "capture clock");
            base = 0;
        }
    }
    for (size_t i = first; i < ev->n; i++)
        ev->start_ns[i] += base;
    uint16_t src0 = UINT16_MAX;
    for (size_t k = 0; k < r->nprocs; k++)
        if (r->procs[k].src < src0)
            src0 = r->procs[k].src;
    if (r->nprocs > 1 && regroup(r, first, src0))
        return oom(r);
    ev = teller_store_events_mut(st);
    uint32_t at = first;
    for (size_t si = src0; si < src0 + r->nprocs; si++) {
        teller_source *so = teller_store_source(st, (uint32_t)si);
        uint32_t n = 0;
        while (at + n < ev->n && ev->source[at + n] == si)
            n++;
        so->first_event = at;
        so->num_events = n;
        at += n;
    }
    for (size_t k = 0; k < r->nprocs; k++) {
        teller_source *so = teller_store_source(st, r->procs[k].src);
        /* The rank is the process's place in pid order: torchrun starts
         * its workers in rank order, so their pids ascend with the rank.
         * A job spread over several files (one per node) numbers each
         * file from 0 again; the tree builder warns about duplicate ranks. */
        so->rank = r->opts->rank_override >= 0 ? r->opts->rank_override : (int32_t)k;
        so->node = -1;
        so->base_ns = base;
        so->host = f.host;
        so->num_devices = f.ndev;
        so->device_name = f.devname;
    }
    return TELLER_OK;
}

/* ---- entry point ---- */

/* "file:" URI for a path, with the characters URIs reserve escaped. */
static char *make_uri(const char *path)
{
    size_t n = strlen(path);
    char *u = malloc(3 * n + 32);
    if (!u)
        return NULL;
    size_t o = (size_t)sprintf(u, "file:%s", path[0] == '/' ? "//" : "");
    for (const unsigned char *p = (const unsigned char *)path; *p; p++) {
        if (*p == '%' || *p == '?' || *p == '#' || *p <= ' ' || *p >= 0x7f)
            o += (size_t)sprintf(u + o, "%%%02X", *p);
        else
            u[o++] = (char)*p;
    }
    strcpy(u + o, "?immutable=1");
    return u;
}

teller_status teller_ingest_nsys(teller_store *st, const char *path, const teller_ingest_opts *opts,
                                 teller_error *err)
{
    teller_ingest_opts def = teller_ingest_defaults();
    reader r = {0};
    r.st = st;
    r.path = path;
    r.opts = opts ? opts : &def;
    r.err = err;
    r.min_start = INT64_MAX;
    r.last_proc = SIZE_MAX;
    char *uri = make_uri(path);
    if (!uri)
        return oom(&r);
    /* read-only and immutable: SQLite neither writes, locks nor replays a journal */
    int rc = sqlite3_open_v2(uri, &r.db, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, NULL);
    free(uri);
    teller_status s = TELLER_OK;
    if (rc != SQLITE_OK) {
        s = teller_error_set(err, rc == SQLITE_NOMEM ? TELLER_ERR_NOMEM : TELLER_ERR_IO, path, 0,
                             "cannot open the file as an SQLite database: %s",
                             r.db ? sqlite3_errmsg(r.db) : sqlite3_errstr(rc));
        sqlite3_close(r.db);
        return s;
    }
    /* a hostile schema may not run SQL functions or write shadow tables */
    sqlite3_db_config(r.db, SQLITE_DBCONFIG_DEFENSIVE, 1, (int *)NULL);
#ifdef SQLITE_DBCONFIG_TRUSTED_SCHEMA
    sqlite3_db_config(r.db, SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0, (int *)NULL);
#endif
    uint32_t first = (uint32_t)teller_store_events(st)->n;
    if ((s = list_tables(&r)))
        goto done;
    if (!r.has[T_KERNEL] && !r.has[T_RUNTIME] && !r.has[T_NVTX]) {
        s = teller_error_set(err, TELLER_ERR_FORMAT, path, 0,
                             "not an Nsight Systems export with CUDA or NVTX data: none of the tables %s, %s, %s "
                             "is present",
                             k_tables[T_KERNEL], k_tables[T_RUNTIME], k_tables[T_NVTX]);
        goto done;
    }
    if (r.has[T_STRINGS] &&
        sqlite3_prepare_v2(r.db, "SELECT value FROM StringIds WHERE id = ?", -1, &r.str_stmt, NULL) != SQLITE_OK) {
        s = db_fail(&r, "unexpected layout of table StringIds");
        goto done;
    }
    if ((s = load_enums(&r)) || (s = load_domains(&r)))
        goto done;
    if (r.has[T_KERNEL] && (s = read_kernels(&r)))
        goto done;
    if (r.has[T_MEMCPY] && (s = read_gpu_ops(&r, T_MEMCPY)))
        goto done;
    if (r.has[T_MEMSET] && (s = read_gpu_ops(&r, T_MEMSET)))
        goto done;
    if (r.has[T_SYNC] && (s = read_gpu_ops(&r, T_SYNC)))
        goto done;
    if (r.has[T_RUNTIME] && (s = read_runtime(&r)))
        goto done;
    if (r.has[T_NVTX] && (s = read_nvtx(&r)))
        goto done;
    if (r.has[T_OVERHEAD] && (s = read_overhead(&r, T_OVERHEAD)))
        goto done;
    if (r.has[T_PROFILER] && (s = read_overhead(&r, T_PROFILER)))
        goto done;
    s = finish(&r, first);
done:
    sqlite3_finalize(r.str_stmt);
    sqlite3_close(r.db);
    free(r.skeys);
    free(r.svals);
    free(r.procs);
    free(r.name_comm);
    free(r.doms);
    return s;
}
