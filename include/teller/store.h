/*
 * store.h - the in-memory trace: one columnar event table for all ranks.
 *
 * Every later stage reads this. Readers (ingest.h) append events; the tree
 * builder (tree.h) sorts them, links call-chain trees, cuts steps and
 * matches collectives across ranks, filling the columns and tables below.
 *
 * Layout is a column store: one array per field, indexed by event number.
 * Fields that only some events have live in side tables reached through
 * the `args` column. Strings are interned once; an id of 0 is the empty
 * string. All memory belongs to the store and is released by
 * teller_store_free; every pointer handed out lives as long as the store
 * (or until the next append, for column pointers).
 */
#ifndef TELLER_STORE_H
#define TELLER_STORE_H

#include <stdint.h>
#include <stddef.h>
#include "teller/error.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TELLER_NONE UINT32_MAX /* "no event", "no entry" in index columns */
/* Every reader refuses a start outside [-TELLER_TIME_MAX / 4,
 * TELLER_TIME_MAX] ns (2^62: the year 2116; before 1934) and a duration
 * above TELLER_TIME_MAX / 4 (36 years), so that an event's end, and the
 * time between any two starts or ends, stay inside int64. */
#define TELLER_TIME_MAX ((int64_t)1 << 62)

/* 1 when an event starting at start_ns and lasting dur_ns keeps those
 * bounds (dur_ns >= 0 too), else 0: the one check every reader, and the
 * packed-store reader of teller-mpi, makes of an event's times. */
int teller_time_ok(int64_t start_ns, int64_t dur_ns);

/* The vertical view: which layer of the serving stack an event belongs to. */
typedef enum teller_layer {
    TELLER_LAYER_ENGINE = 0, /* serving loop, step and request annotations, NVTX ranges */
    TELLER_LAYER_FRONTEND,   /* Python frames (python_function) */
    TELLER_LAYER_BACKEND,    /* torch/aten C++ ops (cpu_op), aten NVTX ranges */
    TELLER_LAYER_RUNTIME,    /* cuda* / hip* runtime API calls */
    TELLER_LAYER_DRIVER,     /* cu* driver API calls */
    TELLER_LAYER_KERNEL,     /* GPU kernels */
    TELLER_LAYER_MEMCPY,     /* GPU copies */
    TELLER_LAYER_MEMSET,     /* GPU memsets */
    TELLER_LAYER_SYNC,       /* synchronisation waits (cuda_sync, CUPTI SYNCHRONIZATION) */
    TELLER_LAYER_OTHER,      /* profiler spans, overhead, instants, counters */
    TELLER_LAYER_COUNT
} teller_layer;

/* Bits of the flags column. */
enum {
    TELLER_F_GPU     = 1u << 0, /* runs on a device row: pid is the device, tid the stream */
    TELLER_F_COMM    = 1u << 1, /* belongs to a collective or p2p transfer (NCCL/RCCL) */
    TELLER_F_INSTANT = 1u << 2, /* instant event (ph "i"), dur is 0 */
    TELLER_F_COUNTER = 1u << 3, /* counter sample (ph "C") */
    TELLER_F_STEP    = 1u << 4, /* this event is a step marker */
    TELLER_F_GRAPH   = 1u << 5, /* CUDA/HIP graph launch (one launch, many kernels) */
    /* the profiler's own work (CUPTI's activity buffer requests and
     * flushes, its instrumentation and resources), which the program
     * would not have done untraced; CUDA's own (module loading, JIT, a
     * full command buffer) is not */
    TELLER_F_PROFILER = 1u << 6
};

/* Input formats a source came from. */
typedef enum teller_format {
    TELLER_FORMAT_KINETO = 0, /* PyTorch profiler / Kineto Chrome-trace JSON (.json, .json.gz) */
    TELLER_FORMAT_NSYS,       /* Nsight Systems SQLite export */
    TELLER_FORMAT_TLT         /* teller's own collector (.tlt, src/collect/tlt_format.h) */
} teller_format;

/* One source: a trace file, or one process inside a multi-process file
 * (an nsys export of a torchrun job holds one process per rank). */
typedef struct teller_source {
    uint32_t      path;        /* interned file path */
    teller_format format;
    int32_t       rank;        /* global rank; -1 until known */
    int32_t       world_size;  /* from distributedInfo; 0 when unknown */
    int32_t       node;        /* node (host) index, see docs/ARCHITECTURE.md */
    uint32_t      host;        /* interned host name, 0 when the trace has none */
    int32_t       pid;         /* main process id when known, else -1 */
    int32_t       num_devices; /* GPUs the process could see (deviceProperties), 0 if unknown */
    uint32_t      device_name; /* interned name of the first device, 0 if unknown */
    int64_t       base_ns;     /* epoch ns added to the file's timestamps */
    uint32_t      first_event; /* its events are [first_event, first_event+num_events): */
    uint32_t      num_events;  /* as read, and where the tree build (tree.h) grouped them */
    uint64_t      dropped;     /* records its profiler says it dropped (teller's collector counts them):
                                * what the trace shows of its GPU is incomplete */
} teller_source;

/* Collective / p2p metadata (Kineto `record_param_comms` args, copied by
 * Kineto onto the NCCL kernel; NVTX NCCL payloads). */
typedef struct teller_comm {
    uint32_t collective; /* interned "Collective name", e.g. "allreduce" */
    uint32_t pg_name;    /* interned "Process Group Name" */
    uint32_t pg_desc;    /* interned "Process Group Description" */
    uint32_t pg_ranks;   /* interned "Process Group Ranks" text, e.g. "[0, 1]" */
    uint32_t dtype;      /* interned "dtype" */
    int32_t  group_size; /* "Group size", 0 if absent */
    int64_t  in_nelems;  /* "In msg nelems", -1 if absent */
    int64_t  out_nelems; /* "Out msg nelems", -1 if absent */
    int64_t  seq;        /* "Seq" when the trace records it, else -1 */
} teller_comm;

/* Optional per-event arguments. An event's `args` column indexes this
 * table, or is TELLER_NONE. Only GPU work, collectives, events carrying
 * a request id and torch ops with input shapes get a row, so that the
 * table stays small. */
typedef struct teller_args {
    int64_t  bytes;     /* copy/set size, or message size; -1 if absent */
    uint32_t grid[3];   /* launch grid, 0 if absent */
    uint32_t block[3];  /* launch block, 0 if absent */
    uint32_t comm;      /* index into the comm table, or TELLER_NONE */
    uint32_t request;   /* interned request id carried by the event, 0 if none */
    int64_t  ext_id;    /* Kineto "External id" of a GPU event or torch op, -1 if absent */
    /* a torch op's Kineto "Input Dims" and "Input type" lists, interned as
     * the JSON text the trace wrote (e.g. "[[8, 4096], [4096, 4096]]" and
     * "[\"c10::BFloat16\", \"c10::BFloat16\"]"), 0 if absent */
    uint32_t in_dims, in_types;
} teller_args;

/* A row of the timeline: an OS process and thread, or a device and a
 * stream for GPU rows. Events name theirs by an index into the store's
 * table of them, 4 bytes an event instead of 8. */
typedef struct teller_track {
    int32_t pid; /* OS pid, or the device index for GPU rows */
    int32_t tid; /* OS tid, or the stream id for GPU rows */
} teller_track;

/* The event table. Column pointers are valid until the next append. */
typedef struct teller_events {
    size_t    n;
    int64_t  *start_ns;     /* epoch ns, on node 0's clock once tree-built */
    int64_t  *dur_ns;       /* >= 0 */
    uint32_t *name;         /* interned */
    uint8_t  *layer;        /* teller_layer */
    uint8_t  *flags;        /* TELLER_F_* */
    uint16_t *source;       /* index into the source table */
    uint32_t *track;        /* index into tracks: the event's pid and tid (teller_event_pid, _tid) */
    uint32_t *corr;         /* CUPTI/ROCm correlation id, 0 if none */
    uint32_t *args;         /* index into the args table, or TELLER_NONE */
    /* filled by teller_tree_build: */
    uint32_t *parent;       /* TELLER_NONE for roots */
    uint32_t *first_child;  /* TELLER_NONE for leaves */
    uint32_t *next_sibling; /* TELLER_NONE for the last child */
    uint16_t *depth;        /* 0 for roots */
    uint32_t *step;         /* step number, TELLER_NONE outside every step */
    /* the store's (pid, tid) pairs, in order of their first event */
    const teller_track *tracks;
    size_t              ntracks;
} teller_events;

/* Event i's pid and tid. */
static inline int32_t teller_event_pid(const teller_events *ev, size_t i) { return ev->tracks[ev->track[i]].pid; }
static inline int32_t teller_event_tid(const teller_events *ev, size_t i) { return ev->tracks[ev->track[i]].tid; }

/* One step on one rank (table ordered by step, then rank). */
typedef struct teller_step {
    uint32_t step;    /* 0, 1, 2, ... in the order the steps ran */
    int32_t  rank;
    uint32_t marker;  /* the annotation event, or TELLER_NONE: the fallback or the unfinished step */
    int64_t  start_ns;
    int64_t  end_ns;  /* end of the marker, extended to the last GPU work it launched */
} teller_step;

/* A row without a marker event past step 0: the unfinished step a rank's
 * trace ends in (it launched work after its last marker; step 0 without a
 * marker is the fallback of a rank that had none). */
static inline int teller_step_unfinished(const teller_step *s) { return s->marker == TELLER_NONE && s->step > 0; }

/* One participant of a matched collective. */
typedef struct teller_coll_member {
    int32_t  rank;
    uint32_t kernel;  /* the COMM kernel event on that rank */
} teller_coll_member;

/* One collective instance matched across ranks. */
typedef struct teller_collective {
    uint32_t key;          /* interned matching key: process group (or stream) + op */
    uint32_t seq;          /* 0-based order of this instance within its key */
    uint32_t first_member; /* members are [first_member, first_member+num_members) */
    uint32_t num_members;
} teller_collective;

/* One node (host) and its estimated clock offset against node 0. */
typedef struct teller_node {
    int32_t  node;
    uint32_t host;          /* interned, 0 when unknown */
    int64_t  offset_ns;     /* this node's clock minus node 0's; subtracted from its events */
    uint32_t offset_samples;/* collectives the estimate came from (0: not estimated) */
} teller_node;

typedef struct teller_store teller_store;

/* Creates an empty store. NULL when out of memory. */
teller_store *teller_store_create(void);
/* Frees the store and everything it handed out. Accepts NULL. */
void teller_store_free(teller_store *st);

/* Interns s[0..len) and returns its id (0 for the empty string), or
 * TELLER_NONE when out of memory. */
uint32_t teller_store_intern(teller_store *st, const char *s, size_t len);
/* The NUL-terminated text of an id; lives as long as the store. */
const char *teller_store_str(const teller_store *st, uint32_t id);
/* How many strings are interned: ids are below it. */
size_t teller_store_num_strings(const teller_store *st);
/* Bytes held by interned strings (text plus table), for memory reports. */
size_t teller_store_str_bytes(const teller_store *st);

/* Sources. add returns the new index, or TELLER_NONE (out of memory, or more
 * than 65535 sources). The pointer from get lives until the next add. */
uint32_t teller_store_add_source(teller_store *st, const teller_source *src);
/* Adds a source for the file at path as every reader starts one: rank,
 * node and pid unknown (-1), first_event the current number of events.
 * Returns its index, or TELLER_NONE (out of memory, too many sources). */
uint32_t teller_store_begin_source(teller_store *st, const char *path, teller_format format);
size_t teller_store_num_sources(const teller_store *st);
teller_source *teller_store_source(teller_store *st, uint32_t i);
const teller_source *teller_store_source_c(const teller_store *st, uint32_t i);
/* The first source holding `rank`, or -1 when no loaded source has it. */
int32_t teller_store_source_of_rank(const teller_store *st, int32_t rank);

/* A row for appending one event. */
typedef struct teller_event_row {
    int64_t  start_ns;
    int64_t  dur_ns;
    uint32_t name;
    uint8_t  layer;
    uint8_t  flags;
    uint16_t source;
    int32_t  pid;
    int32_t  tid;
    uint32_t corr;
    uint32_t args;
} teller_event_row;

/* Appends an event; returns its index or TELLER_NONE when out of memory. */
uint32_t teller_store_add_event(teller_store *st, const teller_event_row *row);
/* The event columns. */
const teller_events *teller_store_events(const teller_store *st);
teller_events *teller_store_events_mut(teller_store *st);

/* Side tables. add returns the index or TELLER_NONE when out of memory. */
uint32_t teller_store_add_args(teller_store *st, const teller_args *a);
const teller_args *teller_store_args(const teller_store *st, uint32_t i);
uint32_t teller_store_add_comm(teller_store *st, const teller_comm *c);
const teller_comm *teller_store_comm(const teller_store *st, uint32_t i);
/* The args of event e, or NULL when it has none. */
const teller_args *teller_store_event_args(const teller_store *st, uint32_t e);
/* The comm record of event e, or NULL. */
const teller_comm *teller_store_event_comm(const teller_store *st, uint32_t e);
/* The next rank of a process group's rank list as Kineto writes it
 * (teller_comm.pg_ranks, "[1, 5, 9, 13]"), read from *cursor, which moves
 * past it: 1 with *rank set, 0 at the list's end. */
int teller_pg_ranks_next(const char **cursor, long *rank);

/* Rank and node of event e (through its source). */
int32_t teller_store_event_rank(const teller_store *st, uint32_t e);
int32_t teller_store_event_node(const teller_store *st, uint32_t e);

/* Appends everything src holds (strings, sources, events, args, comm
 * records, warnings) to dst, as if the files read into src had been read
 * into dst after dst's own: string ids are interned into dst in src's id
 * order, so the result is the same store, id for id, as reading every file
 * into dst one after the other. Both stores must be fresh from the readers
 * (no teller_tree_build yet). src is not changed. TELLER_ERR_LIMIT when the
 * sources would not fit (65535), TELLER_ERR_NOMEM; dst may then hold part
 * of src and should be freed. */
teller_status teller_store_append(teller_store *dst, const teller_store *src, teller_error *err);

/* Derived tables, filled by teller_tree_build. */
size_t teller_store_num_steps(const teller_store *st);        /* rows: step x rank */
const teller_step *teller_store_steps(const teller_store *st);
uint32_t teller_store_step_count(const teller_store *st);     /* distinct step numbers */
/* The name of step row i's annotation (its marker event's), TELLER_NONE
 * for a row without one: read it here, not from the marker event, which a
 * process that builds the run from other processes' summaries need not
 * hold. */
uint32_t teller_store_step_annotation(const teller_store *st, size_t i);
size_t teller_store_num_collectives(const teller_store *st);
const teller_collective *teller_store_collectives(const teller_store *st);
const teller_coll_member *teller_store_coll_members(const teller_store *st);
size_t teller_store_num_nodes(const teller_store *st);
const teller_node *teller_store_nodes(const teller_store *st);

/* Warnings: readers report skipped events here instead of failing. Counted
 * always; the first TELLER_MAX_WARNINGS messages are kept. */
#define TELLER_MAX_WARNINGS 64
void teller_store_warn(teller_store *st, const char *file, uint64_t offset, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
uint64_t teller_store_num_warnings(const teller_store *st);
size_t teller_store_num_warning_msgs(const teller_store *st);
const char *teller_store_warning_msg(const teller_store *st, size_t i);

/* Work a GPU does: kernels, copies and memsets. Not the annotations that
 * profilers also draw on device rows (Kineto's gpu_user_annotation spans a
 * whole step on its stream), nor synchronisation waits. */
static inline int teller_layer_is_gpu_work(uint8_t layer)
{
    return layer == TELLER_LAYER_KERNEL || layer == TELLER_LAYER_MEMCPY || layer == TELLER_LAYER_MEMSET;
}

/* Work a host thread does: a framework op or a runtime or driver call. */
static inline int teller_layer_is_host_op(uint8_t layer)
{
    return layer == TELLER_LAYER_BACKEND || layer == TELLER_LAYER_RUNTIME || layer == TELLER_LAYER_DRIVER;
}

/* Short lower-case name of a layer ("kernel", ...). */
const char *teller_layer_name(teller_layer l);
/* The upper-case tag of a layer as truth and predictions spell it ("KERNEL"). */
const char *teller_layer_tag(teller_layer l);

#ifdef __cplusplus
}
#endif
#endif
