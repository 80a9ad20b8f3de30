/*
 * watch_internal.h - what the watcher's files share: the followed files
 * and logs (follow.c) and the ranks they feed, which the stream
 * (watch.c) cuts into windows and diagnoses.
 */
#ifndef TELLER_WATCH_INTERNAL_H
#define TELLER_WATCH_INTERNAL_H

#include <limits.h>
#include <regex.h>
#include <sys/types.h>

#include "watch.h"
#include "../collect/tlt_writer.h"
#include "../ingest/tlt_chunk.h"

/* A step marker of a rank: its range, its thread, and the RECORDS chunk of
 * the rank that brought it (a later one means its GPU work is in). */
typedef struct wmark {
    int64_t  start, end;
    int32_t  pid, tid;
    uint64_t flush;
    int64_t  read_wall; /* when the watcher read it */
} wmark;

/* One rank: the records of its files (names as the rank's own ids) of the
 * steps still in the window, and its step markers. */
typedef struct wrank {
    char       host[64];
    char       name[PATH_MAX]; /* its first file: what the window's store calls it */
    int32_t    rank;           /* the collector's RANK, -1 none */
    uint32_t   pid;
    int64_t    hdr_start;
    tlt_strtab strs;
    uint8_t   *is_marker;      /* per name id: 0 not tested, 1 a step marker, 2 not */
    size_t     is_marker_cap;
    tlt_rec   *recs;
    size_t     nrecs, recs_cap;
    wmark     *mk;             /* its markers from step mk_base on, in start order */
    size_t     nmk, mk_cap;
    uint64_t   mk_base;
    uint64_t   done;           /* its steps [0, done) are finished */
    uint64_t   flushes;        /* RECORDS chunks its files brought */
    int64_t    last_chunk_wall, last_step_wall;
    int64_t    begun_after, begun_wall; /* host work after the marker ending begun_after, seen since */
    int64_t    last_ns;        /* the latest end of its host records (trace clock) */
    char       last_op[160];   /* the name of that record */
    int        open_files, ended_files;
    int        left;           /* said to hang while its peers went on: not waited for */
} wrank;

typedef struct wfile {
    char      *path;
    int        fd;
    dev_t      dev;
    ino_t      ino;
    uint8_t   *buf;            /* bytes read, not yet whole chunks */
    size_t     len, cap;
    uint64_t   off_base;       /* file offset of buf[0] */
    int        header, ended, dead, closed;
    uint32_t   pid;
    int64_t    start;
    uint32_t   expect_seq;
    tlt_strtab strs;           /* the file's names */
    uint32_t  *smap;           /* file string id -> strs id */
    size_t     smap_cap;
    char       host[64];
    int32_t    rank_no;
    wrank     *rank;
    int64_t    last_grow_wall;
} wfile;

typedef struct wline {
    int64_t  t;    /* trace clock (the capture's epoch ns), else the line before's */
    uint64_t lnum; /* its line number in its file (1-based) */
    char    *s;
    size_t   n;
} wline;

typedef struct wlog {
    char    *path;
    size_t   dir;   /* which followed directory */
    int      fd;
    ino_t    ino;
    uint64_t off;
    uint64_t lnum;  /* lines taken from the file now open */
    char    *part;  /* a line without its newline yet */
    size_t   plen, part_cap;
    wline   *lines; /* lines of the window and after, in file order */
    int64_t  max_t; /* the latest time of a line read */
    size_t   nlines, lines_cap;
} wlog;

struct teller_watch {
    teller_watch_opts  o;
    regex_t            step_re;
    int64_t            start_wall, now;
    wfile            **files;
    size_t             nfiles, files_cap;
    wrank            **ranks;
    size_t             nranks, ranks_cap;
    wlog             **logs;
    size_t             nlogs, logs_cap;
    tlt_scratch        scratch;
    uint64_t           next;        /* the first step not diagnosed */
    int64_t            next_first_wall; /* when the first rank finished step `next`, 0 none */
    int                backlog;     /* the last read left bytes unread (READ_BUDGET) */
    int                held_back;   /* the last read left a rank's files unread: it was ahead */
    int                final_done;  /* the last window was diagnosed as the trace ends */
    uint64_t           hang_said;   /* 1 + the step a hang was said for, 0 none */
    char               tmpdir[PATH_MAX]; /* the window's log files */
    teller_store      *last_st;
    teller_diagnosis  *last_d;
    teller_watch_stats stats;
};

/* follow.c */
/* Reads what is new; with hold, not the files of a rank a batch of steps
 * ahead of the slowest (held_back says some were left). */
int  watch_read(teller_watch *w, int64_t now_wall, int hold);
int  watch_rank_ended(const wrank *r);
void watch_rank_free(wrank *r);
void watch_file_free(wfile *f);
void watch_log_free(wlog *l);

#endif
