/*
 * logs.h - service logs: line readers, template mining, alignment to steps.
 *
 * Three layers, each usable alone:
 *   1. The reader turns a byte stream (a vLLM, SGLang, PyTorch, NCCL or any
 *      other log, in pieces of any size) into records: one per line, or one
 *      per Python traceback. Memory is bounded: a record longer than
 *      max_record_bytes is cut and flagged, binary lines are skipped and
 *      counted, ANSI colour codes are stripped, invalid UTF-8 bytes become
 *      '?'. A line captured by `teller run` ("<16-20 digit epoch ns> "
 *      in front) is read as the line behind the prefix, timed by the
 *      prefix (TELLER_LOGF_CAPTURE_TIME). A header no parser knows is
 *      learned from the file's first 64 lines (held back until then) and
 *      read off the lines that have it. Records are handed to a callback;
 *      the strings in a record live until the callback returns.
 *      teller_log_read_file reads a file (plain or gzip) this way.
 *   2. The template miner (Drain family) gives every message a template id
 *      and its parameters, online: ids are handed out in order of first
 *      appearance, so the same input always gets the same ids.
 *   3. Alignment maps a record to the rank and step of a tree-built store.
 * The formats are described in docs/ARCHITECTURE.md ("Logs").
 */
#ifndef TELLER_LOGS_H
#define TELLER_LOGS_H

#include <stdint.h>
#include <stddef.h>

#include "teller/error.h"
#include "teller/store.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Which writer a record's header came from. */
typedef enum teller_log_family {
    TELLER_LOG_GENERIC = 0, /* no known header (the fallback) */
    TELLER_LOG_VLLM,        /* vLLM logger, V0 `file.py:N]` or V1 `[file.py:N]` */
    TELLER_LOG_SGLANG,      /* SGLang `[date time TPn] ` (or its batch lines without header) */
    TELLER_LOG_TORCH,       /* PyTorch glog style, e.g. ProcessGroupNCCL watchdog */
    TELLER_LOG_NCCL,        /* NCCL's own INFO/WARN/TRACE lines and `NCCL version` */
    TELLER_LOG_UVICORN,     /* uvicorn `INFO:     ...` (access lines, startup) */
    TELLER_LOG_TRACEBACK,   /* a Python traceback, one record for many lines */
    TELLER_LOG_FAMILY_COUNT
} teller_log_family;

typedef enum teller_log_level {
    TELLER_LOGL_NONE = 0, /* not stated */
    TELLER_LOGL_TRACE,
    TELLER_LOGL_DEBUG,
    TELLER_LOGL_INFO,
    TELLER_LOGL_WARNING,
    TELLER_LOGL_ERROR,
    TELLER_LOGL_CRITICAL,
    TELLER_LOGL_COUNT
} teller_log_level;

/* Record flags. The *_INFERRED bits say which parts of time_ns did not come
 * from the line itself. */
enum {
    TELLER_LOGF_NO_TIME       = 1u << 0,  /* the line has no timestamp; time_ns is INT64_MIN */
    TELLER_LOGF_YEAR_INFERRED = 1u << 1,  /* year from the reference time */
    TELLER_LOGF_DATE_INFERRED = 1u << 2,  /* date from the last dated line, else the reference */
    TELLER_LOGF_NO_SUBSEC     = 1u << 3,  /* whole seconds only: the true time is up to 1 s later */
    TELLER_LOGF_TRUNCATED     = 1u << 4,  /* text cut at max_record_bytes */
    TELLER_LOGF_ANSI          = 1u << 5,  /* ANSI escape sequences were removed */
    TELLER_LOGF_BAD_UTF8      = 1u << 6,  /* invalid UTF-8 bytes were replaced by '?' */
    TELLER_LOGF_WRAPPER_TIME  = 1u << 7,  /* time from a docker/journald wrapper, not the logger */
    TELLER_LOGF_OUTSIDE_STEP  = 1u << 8,  /* aligned to the nearest step, not inside one */
    TELLER_LOGF_SEQ_ASSUMED   = 1u << 9,  /* SeqNum matched assuming the trace starts at SeqNum 1 */
    /* time from `teller run`'s capture prefix ("<epoch ns> " in front of
     * the line): when the line reached the capturing pipe, to the ns, on
     * the node's clock, UTC. It replaces the logger's own time (and any
     * wrapper's), so NO_SUBSEC, NO_TIME and the *_INFERRED bits are clear. */
    TELLER_LOGF_CAPTURE_TIME  = 1u << 10
};

#define TELLER_LOG_MAX_REQUESTS 4

/* A string slice. Not NUL-terminated. */
typedef struct teller_log_str {
    const char *p;
    size_t      n;
} teller_log_str;

/* One record. Slices point into the reader's buffers or into the bytes
 * being fed, and live until the callback returns (or, for
 * teller_log_parse_line, as long as the line). */
typedef struct teller_log_record {
    uint64_t       line;       /* 1-based number of the first input line */
    uint32_t       num_lines;  /* input lines in the record (>1 for tracebacks) */
    uint32_t       flags;      /* TELLER_LOGF_* */
    int64_t        time_ns;    /* epoch ns (UTC after tz_offset_s); INT64_MIN when none */
    uint8_t        family;     /* teller_log_family */
    uint8_t        level;      /* teller_log_level */
    int32_t        pid;        /* -1 when unknown */
    int32_t        rank;       /* global rank when the line says it ([rankN], rank=N, TPn), else -1 */
    int32_t        pg_rank;    /* rank within pg when a ProcessGroupNCCL tag names a group other
                                * than the default, else -1 */
    teller_log_str pg;         /* that group's name (PG GUID), else empty */
    int32_t        device;     /* NCCL's cudaDev in `[dev]`, else -1 */
    int64_t        seq;        /* NCCL watchdog SeqNum / work number, else -1 */
    int64_t        ran_ns;     /* a watchdog timeout's "ran for N milliseconds": how long the
                                * collective had run when the line was written, else -1 */
    teller_log_str process;    /* e.g. "EngineCore_DP0", "RayWorkerWrapper", NCCL host */
    teller_log_str source;     /* "file.py:123" when the header has it */
    teller_log_str msg;        /* the message (for tracebacks: every line, '\n'-joined) */
    teller_log_str key;        /* what templates are mined from: msg, or a traceback's last line */
    uint32_t       num_requests;
    teller_log_str request[TELLER_LOG_MAX_REQUESTS]; /* cmpl-..., chatcmpl-..., SGLang rid */
} teller_log_record;

typedef struct teller_log_opts {
    int64_t  ref_ns;           /* reference time: gives the year (and date) lines lack */
    int32_t  tz_offset_s;      /* the logger's local zone, seconds east of UTC (0: UTC) */
    uint32_t max_record_bytes; /* 0: 64 KiB */
} teller_log_opts;

teller_log_opts teller_log_defaults(void);

/* Counts over everything fed so far. */
typedef struct teller_log_stats {
    uint64_t lines;       /* input lines (newline-terminated, plus a final partial one) */
    uint64_t records;     /* records delivered */
    uint64_t blank;       /* empty lines, skipped */
    uint64_t binary;      /* binary lines (a NUL, or over a quarter control bytes or not UTF-8), skipped */
    uint64_t bad_utf8;    /* lines with invalid UTF-8, kept */
    uint64_t ansi;        /* lines with ANSI escapes, kept stripped */
    uint64_t truncated;   /* records cut at max_record_bytes */
    uint64_t no_time;     /* records without a timestamp */
    uint64_t by_family[TELLER_LOG_FAMILY_COUNT];
} teller_log_stats;

/* Called for every record. Returns 0 to go on; a positive value stops
 * reading (feed and finish then return TELLER_OK early); a negative one,
 * -status (e.g. -TELLER_ERR_NOMEM when the callback could not allocate),
 * stops reading and makes feed, finish and teller_log_read_file return
 * that status, the error naming the record's line. */
typedef int (*teller_log_fn)(void *ctx, const teller_log_record *rec);

typedef struct teller_log_reader teller_log_reader;

/* NULL when out of memory. opts may be NULL (defaults). */
teller_log_reader *teller_log_reader_create(const teller_log_opts *opts);
void teller_log_reader_free(teller_log_reader *r);
/* Feeds the next len bytes; complete records go to fn. */
teller_status teller_log_reader_feed(teller_log_reader *r, const void *buf, size_t len,
                                     teller_log_fn fn, void *ctx, teller_error *err);
/* End of input: flushes the last partial line and any open traceback. */
teller_status teller_log_reader_finish(teller_log_reader *r, teller_log_fn fn, void *ctx,
                                       teller_error *err);
const teller_log_stats *teller_log_reader_stats(const teller_log_reader *r);

/* Reads the log file at path (plain, or gzip-compressed: read as if plain)
 * through a reader made with opts and hands its records to fn. stats (may
 * be NULL) receives the reader's counts. Errors, each naming the file:
 * TELLER_ERR_IO when it cannot be opened or read; TELLER_ERR_ARG for a
 * directory; TELLER_ERR_FORMAT for a trace (Nsight Systems SQLite, .tlt,
 * Kineto/Chrome JSON), another compression, or a file whose non-blank
 * lines are more binary than not (found at its end, so its text lines'
 * records were handed out); TELLER_ERR_NOMEM; or the status a callback
 * stopped with. Records already handed out before an error stay handed
 * out. The binary lines of a file that is read are in stats->binary. */
teller_status teller_log_read_file(const char *path, const teller_log_opts *opts, teller_log_fn fn,
                                   void *ctx, teller_log_stats *stats, teller_error *err);

/* Parses one line (no newline; ANSI and UTF-8 clean-up are the reader's job)
 * into *out. Time-only lines take their date from opts->ref_ns. Never fails:
 * unknown lines are GENERIC. */
void teller_log_parse_line(const char *line, size_t len, const teller_log_opts *opts,
                           teller_log_record *out);

const char *teller_log_family_name(teller_log_family f);
const char *teller_log_level_name(teller_log_level l);

/* ---- template mining (Drain family) ---------------------------------- */

typedef struct teller_log_miner teller_log_miner;

typedef struct teller_miner_opts {
    uint32_t depth;      /* prefix-tree depth including the length level; 0: 4 */
    double   similarity; /* share of the template's constant tokens a message must match; 0: 0.7 */
} teller_miner_opts;

/* A parameter: the message bytes under one `<*>` of the template (a
 * token that is `<*>` whole, or one masked segment inside a token:
 * "<*>:<*>" has two). */
typedef struct teller_log_param {
    uint32_t off, len;
} teller_log_param;

typedef struct teller_log_match {
    uint32_t template_id;  /* 0, 1, 2, ... in order of first appearance */
    uint32_t num_params;   /* parameters found (the first max_params are stored) */
} teller_log_match;

teller_log_miner *teller_log_miner_create(const teller_miner_opts *opts);
void teller_log_miner_free(teller_log_miner *m);
/* Mines one message. params (may be NULL) receives up to max_params
 * parameter slices into msg. TELLER_ERR_NOMEM on allocation failure. */
teller_status teller_log_miner_add(teller_log_miner *m, const char *msg, size_t len,
                                   teller_log_match *out, teller_log_param *params,
                                   uint32_t max_params);
/* The parameters of msg (a message mined into template id earlier) under
 * the template as it is now: one per `<*>` of its current text, in order,
 * so early records of a template read the same slots as later ones. Up to
 * max_params go to params; *num_params counts them all. TELLER_ERR_ARG when
 * msg does not have the template's token count or id is unknown. */
teller_status teller_log_miner_params(teller_log_miner *m, uint32_t id, const char *msg, size_t len,
                                      teller_log_param *params, uint32_t max_params, uint32_t *num_params);
uint32_t teller_log_miner_count(const teller_log_miner *m);  /* templates */
/* The current text of a template (tokens joined by one space, wildcards
 * `<*>`); lives until the next teller_log_miner_add. */
const char *teller_log_miner_template(const teller_log_miner *m, uint32_t id);
uint64_t teller_log_miner_hits(const teller_log_miner *m, uint32_t id);

/* The Loghub-2.0 benchmark's template normalisation (whitespace, digit
 * tokens, word+variable, consecutive variables) into out (cap bytes incl.
 * NUL; output is cut to fit). Returns the length written. */
size_t teller_loghub_normalize(const char *tpl, char *out, size_t cap);

/* Loghub-2k evaluation of the miner on one dataset directory
 * (NAME/NAME_2k.log_structured_corrected.csv); the Content column is fed. */
typedef struct teller_loghub_result {
    char     name[64];
    uint32_t lines;
    uint32_t truth_groups;
    uint32_t found_groups;
    double   ga; /* grouping accuracy */
    double   pa; /* parsing accuracy */
    double   seconds;
} teller_loghub_result;

teller_status teller_loghub_eval(const char *dataset_dir, const teller_miner_opts *opts,
                                 teller_loghub_result *out, teller_error *err);
/* The same on NAME/NAME_2k.log read whole through teller_log_read_file
 * (headers included, as a user has the file); each record's key is mined,
 * and lines are grouped by template id. */
teller_status teller_loghub_eval_raw(const char *dataset_dir, const teller_miner_opts *opts,
                                     teller_loghub_result *out, teller_error *err);

/* ---- alignment to a tree-built store ---------------------------------- */

typedef struct teller_log_align {
    int32_t  rank;   /* the record's rank, else the only rank of its node, else -1 */
    uint32_t step;   /* step number, or TELLER_NONE when the store has no steps */
    uint32_t coll;   /* collective instance for a watchdog SeqNum, else TELLER_NONE */
    uint32_t flags;  /* TELLER_LOGF_OUTSIDE_STEP, TELLER_LOGF_SEQ_ASSUMED */
    int64_t  time_ns;/* the record's time on node 0's clock (a watchdog timeout's: when its
                      * collective began, rec->ran_ns before it), INT64_MIN when none */
} teller_log_align;

/* Maps rec (a line of a log written on node `node`) to rank and step.
 * The rules and their limits are in docs/ARCHITECTURE.md ("Logs"). */
void teller_log_align_record(const teller_store *st, int32_t node, const teller_log_record *rec,
                             teller_log_align *out);

/* The node a log file belongs to from its name: "node<N>" anywhere in the
 * base name gives N; -1 otherwise. */
int32_t teller_log_node_from_path(const char *path);

#ifdef __cplusplus
}
#endif
#endif
