/*
 * inject.c - libteller_inject.so: the thin shell that the CUDA driver
 * (CUDA_INJECTION64_PATH -> InitializeInjection) and the NVTX loader
 * (NVTX_INJECTION64_PATH -> InitializeInjectionNvtx2) load into an
 * unmodified process.
 *
 * CUPTI hands us filled activity buffers on its own thread; we convert
 * them (convert.c) into a batch under one mutex and free the buffer. NVTX
 * handlers time ranges with CLOCK_REALTIME, CUPTI's default clock, and
 * take no lock in the common case: each thread that calls NVTX owns a
 * thread buffer (its push/pop stack, a cache of the names it used, and a
 * block of records it fills alone, publishing each record with a release
 * store of the block's count). A full block goes to a global queue under
 * the mutex, once per BLK_RECS records. A background thread, every
 * TELLER_FLUSH_MS, takes the CUPTI batch, the queued blocks and what each
 * thread's current block holds so far, and writes them (tlt_writer.c) to
 * DIR/HOST-PID.tlt; at exit everything is flushed and an END chunk closes
 * the file.
 *
 * Fail open: any error stops collection, leaves the process alone, and is
 * reported once on stderr and as an "error=" note in the file. After fork
 * the child writes its own file (pthread_atfork). Configuration:
 *   TELLER_TRACE_DIR   output directory (default ./teller-traces)
 *   TELLER_KINDS       comma list of kernel, runtime, runtime-all, driver,
 *                      memcpy, memset, sync, extcorr, overhead, nvtx
 *                      (default: all but runtime-all)
 *   TELLER_FLUSH_MS    flush interval (default 1000)
 *   TELLER_BUFFER_MB   size of each CUPTI activity buffer (default 8); at
 *                      most 16 times that is held between flushes, beyond
 *                      that records are dropped and counted; two buffers
 *                      wait ready, up to four are kept for reuse (bufpool.h)
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <wchar.h>

#include <cupti.h>
#include <nvtx3/nvToolsExt.h>

#include "bufpool.h"
#include "convert.h"
#include "tlt_writer.h"

#define EXPORT __attribute__((visibility("default")))

#define STACK_MAX   128  /* NVTX push/pop depth kept per thread */
#define OPEN_RANGES 4096 /* start/end ranges open at once */
#define BLK_RECS    1024 /* records per thread block (40 KiB) */
#define SLAB_BLKS   24   /* blocks per pre-faulted mapping (~1 MiB) */
#define NAME_SLOTS  64   /* per-thread name cache entries (power of two) */
#define NAME_TEXT   112  /* names shorter than this are cached */

enum { K_KERNEL = 1, K_RUNTIME = 2, K_RUNTIME_ALL = 4, K_DRIVER = 8, K_MEMCPY = 16, K_MEMSET = 32,
       K_SYNC = 64, K_EXTCORR = 128, K_OVERHEAD = 256, K_NVTX = 512 };
#define K_DEFAULT (K_KERNEL | K_RUNTIME | K_DRIVER | K_MEMCPY | K_MEMSET | K_SYNC | K_EXTCORR | K_OVERHEAD | K_NVTX)

typedef struct range_ent {
    int64_t  start;
    uint64_t payload;
    uint32_t name, dom;
    uint8_t  ptype;
} range_ent;

typedef struct open_range {
    uint64_t id; /* 0: free */
    int64_t  start;
    uint64_t payload;
    uint32_t name, dom, tid;
    uint8_t  ptype;
} open_range;

/* An NVTX record as a thread writes it: 40 bytes where tlt_rec has 72
 * (pid and the CUPTI fields are the same for all), expanded by the
 * flusher. */
typedef struct nvrec {
    int64_t  start, end;
    uint64_t payload;
    uint32_t name, dom, tid;
    uint16_t depth;
    uint8_t  kind, ptype;
} nvrec;

/* A block of NVTX records. Its thread writes recs[n] and then stores n + 1
 * with release; the flusher loads n with acquire and takes recs[done, n).
 * Records below n are never written again, so the flusher copies them
 * without a lock. A block is reused only after the flusher took all of it
 * from the full queue. */
typedef struct blk {
    struct blk      *next; /* on G.full or G.free_blks (under mu) */
    _Atomic uint32_t n;    /* records written */
    uint32_t         done; /* records the flusher took (under mu) */
    nvrec            recs[BLK_RECS];
} blk;

/* Part of a block the flusher copies outside the lock, and whether the
 * block goes back to the free list afterwards. */
typedef struct span {
    blk     *b;
    uint32_t from, to;
    int      release;
} span;

/* One cached name: the pointer NVTX passed, a copy of the text it held
 * (the same pointer may hold other text later: a reused buffer), its id. */
typedef struct name_ent {
    const char *p;
    uint32_t    id;
    char        text[NAME_TEXT];
} name_ent;

/* Per thread that called NVTX; allocated on its first call, reached through
 * one initial-exec thread-local pointer. Everything but next, cur (changed
 * under mu) and dead (under mu) belongs to the thread alone. The flusher
 * frees it after the thread exited (dead) and its last block was taken. */
typedef struct tbuf {
    struct tbuf *next; /* G.threads */
    blk         *cur;  /* block being filled, NULL after a failed refill */
    int          dead; /* the thread exited */
    int          depth;
    uint32_t     tid;
    range_ent    st[STACK_MAX];
    name_ent     names[NAME_SLOTS];
} tbuf;

/* A pointer only: the library is dlopen'ed, so initial-exec TLS comes out
 * of glibc's small static TLS surplus; 8 bytes is all we ask of it. */
static _Thread_local tbuf *my_tbuf __attribute__((tls_model("initial-exec")));

static struct {
    pthread_mutex_t mu; /* strings, batch, blocks, thread list, open ranges, counters */
    pthread_mutex_t io; /* the writer; taken before mu */
    pthread_mutex_t fmu;
    pthread_cond_t  fcv;
    pthread_once_t  once;
    pthread_key_t   key; /* its destructor marks a thread's buffer dead */
    volatile int    on;     /* collecting */
    int             failed; /* an error stopped collection */
    int             started, cupti_on, flusher_on, stop;
    unsigned        kinds;
    int             flush_ms;
    size_t          cupti_buf, max_recs;
    bufpool         pool; /* CUPTI's activity buffers, resident and ready (bufpool.h) */
    char            dir[2048], path[2400], host[256], error[512];
    uint32_t        pid;
    tlt_strtab      strs;
    _Atomic uint32_t nstrs; /* strs.n as of the last intern_locked, for lock-free checks */
    tlt_conv        conv;
    tlt_batch       batch, spare;
    tbuf           *threads;
    blk            *full, **full_tail; /* full blocks, oldest first */
    blk            *free_blks;
    size_t          nblk; /* blocks holding records (full or current) */
    span           *spans; /* the flusher's, under io */
    size_t          spans_cap;
    tlt_writer      w;
    int             fd;
    uint64_t        records, dropped_cupti, dropped_buffer, dropped_ranges, noted;
    uint64_t        next_range;
    open_range      open[OPEN_RANGES];
    pthread_t       flusher;
} G = {
    .mu = PTHREAD_MUTEX_INITIALIZER,
    .io = PTHREAD_MUTEX_INITIALIZER,
    .fmu = PTHREAD_MUTEX_INITIALIZER,
    .fcv = PTHREAD_COND_INITIALIZER,
    .once = PTHREAD_ONCE_INIT,
    .full_tail = &G.full,
    .fd = -1,
    .pool = BUFPOOL_INIT,
};

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Stops collection and says why, once. Safe with or without mu held: it
 * takes no lock; the reason reaches the file at the next flush. */
static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void fail(const char *fmt, ...)
{
    if (G.failed)
        return;
    G.failed = 1;
    G.on = 0;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(G.error, sizeof G.error, fmt, ap);
    va_end(ap);
    fprintf(stderr, "teller: collector disabled, the program runs on untraced: %s\n", G.error);
}

/* ---- configuration ---- */

static unsigned parse_kinds(const char *s)
{
    static const struct { const char *n; unsigned k; } names[] = {
        {"kernel", K_KERNEL}, {"runtime", K_RUNTIME}, {"runtime-all", K_RUNTIME | K_RUNTIME_ALL},
        {"driver", K_DRIVER}, {"memcpy", K_MEMCPY},   {"memset", K_MEMSET},
        {"sync", K_SYNC},     {"extcorr", K_EXTCORR}, {"overhead", K_OVERHEAD},
        {"nvtx", K_NVTX},     {"all", K_DEFAULT | K_RUNTIME_ALL},
    };
    if (!s || !*s)
        return K_DEFAULT;
    unsigned k = 0;
    while (*s) {
        size_t n = strcspn(s, ",");
        for (size_t i = 0; i < sizeof names / sizeof *names; i++)
            if (strlen(names[i].n) == n && !strncmp(s, names[i].n, n))
                k |= names[i].k;
        s += n;
        if (*s == ',')
            s++;
    }
    return k;
}

static long env_long(const char *name, long def, long lo, long hi)
{
    const char *v = getenv(name);
    if (!v || !*v)
        return def;
    char *end;
    long n = strtol(v, &end, 10);
    return *end || n < lo || n > hi ? def : n;
}

static int mkdirs(const char *d)
{
    char tmp[sizeof G.dir];
    snprintf(tmp, sizeof tmp, "%s", d);
    for (char *p = tmp + 1; *p; p++) {
        if (*p == '/') {
            *p = 0;
            if (mkdir(tmp, 0777) && errno != EEXIST)
                return -1;
            *p = '/';
        }
    }
    return mkdir(tmp, 0777) && errno != EEXIST ? -1 : 0;
}

/* ---- the file ---- */

/* Writes the NOTE with who we are. Caller holds io. */
static int write_meta(void)
{
    char note[2048];
    uint32_t v = 0;
    cuptiGetVersion(&v);
    int n = snprintf(note, sizeof note, "host=%s\npid=%u\nppid=%d\nclock=CLOCK_REALTIME\ncupti_version=%u\nflush_ms=%d\n",
                     G.host, G.pid, (int)getppid(), v, G.flush_ms);
    static const char *const envs[] = {"RANK", "LOCAL_RANK", "WORLD_SIZE", "CUDA_VISIBLE_DEVICES"};
    for (size_t i = 0; i < sizeof envs / sizeof *envs && n < (int)sizeof note; i++) {
        const char *e = getenv(envs[i]);
        if (e && strlen(e) < 256)
            n += snprintf(note + n, sizeof note - (size_t)n, "%s=%s\n", envs[i], e);
    }
    char exe[1024];
    ssize_t k = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (k > 0 && n < (int)sizeof note) {
        exe[k] = 0;
        n += snprintf(note + n, sizeof note - (size_t)n, "exe=%s\n", exe);
    }
    if (n > (int)sizeof note)
        n = (int)sizeof note;
    return tlt_writer_chunk(&G.w, TLT_CHUNK_NOTE, note, (size_t)n);
}

/* Opens DIR/HOST-PID.tlt (or -PID.N when taken). Caller holds io. */
static int open_file(void)
{
    for (int i = 0; i < 100; i++) {
        if (i == 0)
            snprintf(G.path, sizeof G.path, "%s/%s-%u.tlt", G.dir, G.host, G.pid);
        else
            snprintf(G.path, sizeof G.path, "%s/%s-%u.%d.tlt", G.dir, G.host, G.pid, i);
        G.fd = open(G.path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (G.fd >= 0)
            break;
        if (errno != EEXIST) {
            fail("cannot create %s: %s", G.path, strerror(errno));
            return -1;
        }
    }
    if (G.fd < 0) {
        fail("cannot create a trace file in %s", G.dir);
        return -1;
    }
    if (tlt_writer_open(&G.w, G.fd, G.pid, now_ns()) || write_meta()) {
        fail("cannot write %s: %s", G.path, strerror(errno));
        return -1;
    }
    return 0;
}

/* Writes counters when they changed (or always when end), as NOTE or END.
 * Caller holds io. */
static int write_counts(int end)
{
    pthread_mutex_lock(&G.mu);
    uint64_t rec = G.records, dc = G.dropped_cupti, db = G.dropped_buffer, dr = G.dropped_ranges;
    pthread_mutex_unlock(&G.mu);
    uint64_t sum = rec ^ (dc * 3) ^ (db * 7) ^ (dr * 11);
    if (!end && sum == G.noted && !G.error[0])
        return 0;
    G.noted = sum;
    char note[1024];
    int n = snprintf(note, sizeof note, "records=%llu\ndropped_cupti=%llu\ndropped_buffer=%llu\ndropped_ranges=%llu\n",
                     (unsigned long long)rec, (unsigned long long)dc, (unsigned long long)db,
                     (unsigned long long)dr);
    if (G.error[0] && n < (int)sizeof note)
        n += snprintf(note + n, sizeof note - (size_t)n, "error=%s\n", G.error);
    if (n > (int)sizeof note)
        n = (int)sizeof note;
    return tlt_writer_chunk(&G.w, end ? TLT_CHUNK_END : TLT_CHUNK_NOTE, note, (size_t)n);
}

/* ---- thread blocks ---- */

/* Puts an emptied block on the free list. Caller holds mu. */
static void put_free(blk *b)
{
    b->next = G.free_blks;
    G.free_blks = b;
}

/* Notes recs[done, to) of a block for the flusher to copy. Caller holds
 * mu and io. -1 when out of memory (the records are dropped). */
static int add_span(size_t *n, blk *k, uint32_t to, int release)
{
    if (*n == G.spans_cap) {
        size_t c = G.spans_cap ? G.spans_cap * 2 : 64;
        span *ns = realloc(G.spans, c * sizeof *ns);
        if (!ns) {
            G.dropped_buffer += to - k->done;
            k->done = to;
            if (release) {
                G.nblk--;
                put_free(k);
            }
            return -1;
        }
        G.spans = ns;
        G.spans_cap = c;
    }
    G.spans[(*n)++] = (span){k, k->done, to, release};
    k->done = to;
    return 0;
}

/* Notes every NVTX record written so far: the full blocks (oldest first),
 * then what each thread's current block holds, so that one thread's
 * records keep their order. Frees the buffers of threads that exited.
 * Returns the number of spans. Caller holds mu and io. */
static size_t snapshot_blocks(void)
{
    size_t n = 0;
    while (G.full) {
        blk *k = G.full;
        G.full = k->next;
        add_span(&n, k, BLK_RECS, 1);
    }
    G.full_tail = &G.full;
    for (tbuf **pp = &G.threads; *pp;) {
        tbuf *t = *pp;
        if (t->cur)
            add_span(&n, t->cur, atomic_load_explicit(&t->cur->n, memory_order_acquire), t->dead);
        if (!t->dead) {
            pp = &t->next;
            continue;
        }
        *pp = t->next;
        free(t);
    }
    return n;
}

/* Copies the spans into batch b as full records. No lock: the records are
 * published and no thread writes them again. */
static uint64_t copy_spans(tlt_batch *b, size_t nspans, uint64_t *dropped)
{
    uint64_t taken = 0;
    for (size_t i = 0; i < nspans; i++) {
        const span *sp = &G.spans[i];
        for (uint32_t j = sp->from; j < sp->to; j++) {
            const nvrec *r = &sp->b->recs[j];
            tlt_rec *o = tlt_batch_add(b, SIZE_MAX); /* admitted already: blocks count against max_recs */
            if (!o) {
                *dropped += sp->to - j;
                break;
            }
            o->kind = r->kind;
            o->sub = r->ptype;
            o->aux = r->depth;
            o->name = r->name;
            o->start = r->start;
            o->end = r->end;
            o->dev = G.pid;
            o->stream = r->tid;
            o->ctx = r->dom;
            o->val = r->payload;
            taken++;
        }
    }
    return taken;
}

/* Queues the thread's full block and gives it an empty one, within the
 * memory budget (max_recs records held by blocks and the CUPTI batch
 * together). Empty blocks come from mappings made with MAP_POPULATE: a
 * thread writing into fresh memory would take a page fault every hundred
 * records, which costs more than the records. Blocks are never unmapped,
 * only reused, so the budget also bounds what is mapped. NULL when over
 * budget or out of memory: the caller drops the record (counted here). */
static blk *refill(tbuf *t)
{
    pthread_mutex_lock(&G.mu);
    blk *k = t->cur;
    if (k) {
        k->next = NULL;
        *G.full_tail = k;
        G.full_tail = &k->next;
        t->cur = NULL;
    }
    k = NULL;
    if ((G.nblk + 1) * BLK_RECS + G.batch.n <= G.max_recs) {
        if (!G.free_blks) {
            pthread_mutex_unlock(&G.mu); /* populating takes a while */
            blk *slab = mmap(NULL, SLAB_BLKS * sizeof *slab, PROT_READ | PROT_WRITE,
                             MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
            pthread_mutex_lock(&G.mu);
            for (int i = 0; slab != MAP_FAILED && i < SLAB_BLKS; i++)
                put_free(&slab[i]);
        }
        /* again: other threads may have taken blocks, and CUPTI's batch
         * grown, while the lock was let go for the mapping */
        k = (G.nblk + 1) * BLK_RECS + G.batch.n <= G.max_recs ? G.free_blks : NULL;
        if (k)
            G.free_blks = k->next;
    }
    if (k) {
        atomic_store_explicit(&k->n, 0, memory_order_relaxed);
        k->done = 0;
        t->cur = k;
        G.nblk++;
    } else {
        G.dropped_buffer++;
    }
    pthread_mutex_unlock(&G.mu);
    return k;
}

static void thread_gone(void *p)
{
    tbuf *t = p;
    pthread_mutex_lock(&G.mu);
    t->dead = 1; /* the flusher takes its last records and frees it */
    pthread_mutex_unlock(&G.mu);
    my_tbuf = NULL;
}

/* The calling thread's buffer, made on its first NVTX call; NULL when out
 * of memory (the caller drops the event). */
static tbuf *register_thread(void)
{
    tbuf *t = calloc(1, sizeof *t);
    if (!t) {
        pthread_mutex_lock(&G.mu);
        G.dropped_buffer++;
        pthread_mutex_unlock(&G.mu);
        return NULL;
    }
    t->tid = (uint32_t)syscall(SYS_gettid);
    pthread_mutex_lock(&G.mu);
    t->next = G.threads;
    G.threads = t;
    pthread_mutex_unlock(&G.mu);
    pthread_setspecific(G.key, t);
    my_tbuf = t;
    return t;
}

static inline tbuf *me(void)
{
    tbuf *t = my_tbuf;
    return t ? t : register_thread();
}

/* Swaps the batch out, adds the threads' NVTX records and writes them:
 * new strings first, then records. Every name a taken record refers to was
 * interned before the record was published, so it is in the strings
 * written here or before. */
static void flush_now(int end)
{
    pthread_mutex_lock(&G.io);
    if (G.fd < 0) {
        pthread_mutex_unlock(&G.io);
        return;
    }
    int bad = 0;
    pthread_mutex_lock(&G.mu);
    tlt_batch b = G.batch;
    G.batch = G.spare;
    G.batch.n = 0;
    size_t nspans = snapshot_blocks();
    if (G.strs.unwritten < G.strs.n) {
        bad |= tlt_writer_strings(&G.w, &G.strs, G.strs.unwritten);
        G.strs.unwritten = G.strs.n;
    }
    pthread_mutex_unlock(&G.mu);
    uint64_t dropped = 0, taken = copy_spans(&b, nspans, &dropped);
    if (!bad)
        bad |= tlt_writer_records(&G.w, b.recs, b.n);
    b.n = 0;
    pthread_mutex_lock(&G.mu);
    G.spare = b;
    G.records += taken;
    G.dropped_buffer += dropped;
    for (size_t i = 0; i < nspans; i++) {
        if (G.spans[i].release) {
            G.nblk--;
            put_free(G.spans[i].b);
        }
    }
    pthread_mutex_unlock(&G.mu);
    if (!bad)
        bad |= write_counts(end);
    if (bad) {
        fail("cannot write %s: %s", G.path, strerror(errno));
        close(G.fd);
        G.fd = -1;
    }
    if (end && G.fd >= 0) {
        close(G.fd);
        G.fd = -1;
    }
    pthread_mutex_unlock(&G.io);
}

static void *flusher(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&G.fmu);
    while (!G.stop) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        int64_t ns = ts.tv_nsec + (int64_t)G.flush_ms * 1000000;
        ts.tv_sec += ns / 1000000000;
        ts.tv_nsec = ns % 1000000000;
        pthread_cond_timedwait(&G.fcv, &G.fmu, &ts);
        if (G.stop)
            break;
        pthread_mutex_unlock(&G.fmu);
        if (G.cupti_on)
            cuptiActivityFlushAll(0);
        flush_now(0);
        if (G.cupti_on)
            bufpool_fill(&G.pool, 2); /* out of memory: CUPTI's next request makes its own */
        pthread_mutex_lock(&G.fmu);
    }
    pthread_mutex_unlock(&G.fmu);
    return NULL;
}

static int start_flusher(void)
{
    G.stop = 0;
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old); /* the app's signals never land on our thread */
    int e = pthread_create(&G.flusher, NULL, flusher, NULL);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (e) {
        fail("cannot start the flush thread: %s", strerror(e));
        return -1;
    }
    G.flusher_on = 1;
    return 0;
}

static void finish(void)
{
    if (G.flusher_on) {
        pthread_mutex_lock(&G.fmu);
        G.stop = 1;
        pthread_cond_signal(&G.fcv);
        pthread_mutex_unlock(&G.fmu);
        pthread_join(G.flusher, NULL);
        G.flusher_on = 0;
    }
    if (G.cupti_on)
        cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    G.on = 0;
    flush_now(1);
    bufpool_free(&G.pool);
}

/* ---- fork ---- */

/* Every lock, so that none is held in the child by a thread it does not
 * have: the flush thread's too (it never holds it with the others), or a
 * fork while it held it would leave the child's flush thread and its exit
 * waiting for it forever. */
static void before_fork(void)
{
    pthread_mutex_lock(&G.fmu);
    pthread_mutex_lock(&G.io);
    pthread_mutex_lock(&G.mu);
    pthread_mutex_lock(&G.pool.mu);
}

static void after_fork_parent(void)
{
    pthread_mutex_unlock(&G.pool.mu);
    pthread_mutex_unlock(&G.mu);
    pthread_mutex_unlock(&G.io);
    pthread_mutex_unlock(&G.fmu);
}

/* The child keeps the string table (names on its thread's stack and in
 * its name cache stay valid) but not the parent's records, file, flush
 * thread or the buffers of the parent's other threads, which do not exist
 * here. */
static void after_fork_child(void)
{
    pthread_mutex_unlock(&G.pool.mu);
    pthread_mutex_unlock(&G.mu);
    pthread_mutex_unlock(&G.io);
    pthread_mutex_unlock(&G.fmu);
    pthread_cond_init(&G.fcv, NULL);
    G.flusher_on = 0;
    G.pid = (uint32_t)getpid();
    G.batch.n = 0;
    while (G.full) {
        blk *k = G.full;
        G.full = k->next;
        put_free(k);
    }
    G.full_tail = &G.full;
    G.nblk = 0;
    for (tbuf *t = G.threads, *next; t; t = next) {
        next = t->next;
        if (t == my_tbuf)
            continue;
        if (t->cur)
            put_free(t->cur);
        free(t);
    }
    G.threads = my_tbuf;
    if (my_tbuf) {
        my_tbuf->next = NULL;
        my_tbuf->tid = (uint32_t)syscall(SYS_gettid);
        if (my_tbuf->cur) {
            atomic_store_explicit(&my_tbuf->cur->n, 0, memory_order_relaxed);
            my_tbuf->cur->done = 0;
            G.nblk = 1;
        }
    }
    G.records = G.dropped_cupti = G.dropped_buffer = G.dropped_ranges = G.noted = 0;
    if (G.fd >= 0) {
        close(G.fd);
        G.fd = -1;
        tlt_writer_free(&G.w);
    }
    if (G.failed)
        return;
    pthread_mutex_lock(&G.io);
    int ok = open_file() == 0 && tlt_writer_strings(&G.w, &G.strs, 1) == 0;
    G.strs.unwritten = G.strs.n;
    pthread_mutex_unlock(&G.io);
    if (!ok) {
        fail("cannot write %s after fork: %s", G.path, strerror(errno));
        return;
    }
    start_flusher();
}

/* ---- start ---- */

static void start_once(void)
{
    G.pid = (uint32_t)getpid();
    G.kinds = parse_kinds(getenv("TELLER_KINDS"));
    G.flush_ms = (int)env_long("TELLER_FLUSH_MS", 1000, 1, 3600000);
    G.cupti_buf = (size_t)env_long("TELLER_BUFFER_MB", 8, 1, 1024) << 20;
    G.max_recs = G.cupti_buf * 16 / sizeof(tlt_rec);
    G.pool.size = G.cupti_buf;
    const char *d = getenv("TELLER_TRACE_DIR");
    snprintf(G.dir, sizeof G.dir, "%s", d && *d ? d : "teller-traces");
    if (gethostname(G.host, sizeof G.host - 1))
        snprintf(G.host, sizeof G.host, "unknown");
    for (char *p = G.host; *p; p++)
        if (*p == '/')
            *p = '_';
    tlt_strtab_init(&G.strs);
    tlt_conv_init(&G.conv, &G.strs);
    if (tlt_strtab_intern(&G.strs, "", 0) == UINT32_MAX) {
        fail("out of memory");
        return;
    }
    atomic_store(&G.nstrs, G.strs.n);
    if (pthread_key_create(&G.key, thread_gone)) {
        fail("cannot create a thread key");
        return;
    }
    if (mkdirs(G.dir)) {
        fail("cannot create %s: %s", G.dir, strerror(errno));
        return;
    }
    pthread_mutex_lock(&G.io);
    int r = open_file();
    pthread_mutex_unlock(&G.io);
    if (r)
        return;
    if (atexit(finish) || pthread_atfork(before_fork, after_fork_parent, after_fork_child)) {
        fail("cannot register exit and fork handlers");
        return;
    }
    if (start_flusher())
        return;
    G.started = 1;
    G.on = 1;
}

static int start(void)
{
    pthread_once(&G.once, start_once);
    return G.started && !G.failed;
}

/* ---- CUPTI ---- */

static void CUPTIAPI buf_request(uint8_t **buf, size_t *size, size_t *max_records)
{
    void *p = G.on ? bufpool_take(&G.pool) : NULL;
    *max_records = 0;
    if (!p) {
        *buf = NULL; /* CUPTI drops the records and counts them */
        *size = 0;
        return;
    }
    *buf = p;
    *size = G.cupti_buf;
}

static void CUPTIAPI buf_complete(CUcontext ctx, uint32_t stream, uint8_t *buf, size_t size, size_t valid)
{
    (void)size;
    size_t dropped = 0;
    cuptiActivityGetNumDroppedRecords(ctx, stream, &dropped);
    pthread_mutex_lock(&G.mu);
    G.dropped_cupti += dropped;
    if (G.on && buf) {
        CUpti_Activity *rec = NULL;
        while (cuptiActivityGetNextRecord(buf, valid, &rec) == CUPTI_SUCCESS) {
            tlt_rec *o = tlt_batch_add(&G.batch, G.max_recs - G.nblk * BLK_RECS); /* refill keeps it >= 0 */
            if (!o) {
                G.dropped_buffer++;
                continue;
            }
            int r = tlt_convert(&G.conv, rec, o);
            if (r <= 0) {
                G.batch.n--;
                if (r < 0)
                    G.dropped_buffer++;
                continue;
            }
            G.records++;
        }
    }
    pthread_mutex_unlock(&G.mu);
    bufpool_put(&G.pool, buf);
}

/* Turns collection off again after a failed enable; errors ignored. */
static void cupti_off(void)
{
    static const CUpti_ActivityKind all[] = {
        CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_ACTIVITY_KIND_DRIVER,
        CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMSET, CUPTI_ACTIVITY_KIND_SYNCHRONIZATION,
        CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION, CUPTI_ACTIVITY_KIND_OVERHEAD};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        cuptiActivityDisable(all[i]);
    G.cupti_on = 0;
}

static int enable_apis(int driver)
{
    uint32_t n = driver ? CUPTI_DRIVER_TRACE_CBID_SIZE : CUPTI_RUNTIME_TRACE_CBID_SIZE;
    for (uint32_t id = 1; id < n; id++) {
        char name[128];
        if (tlt_api_name(driver ? CUPTI_CB_DOMAIN_DRIVER_API : CUPTI_CB_DOMAIN_RUNTIME_API, id, name, sizeof name))
            continue;
        if (!(driver ? tlt_driver_api_wanted(name) : tlt_runtime_api_wanted(name)))
            continue;
        CUptiResult r = driver ? cuptiActivityEnableDriverApi(id, 1) : cuptiActivityEnableRuntimeApi(id, 1);
        if (r != CUPTI_SUCCESS)
            return (int)r;
    }
    return 0;
}

EXPORT int InitializeInjection(void)
{
    if (!start())
        return 1;
    uint32_t v = 0;
    if (cuptiGetVersion(&v) != CUPTI_SUCCESS || v / 10000 != CUPTI_API_VERSION / 10000) {
        fail("libcupti API version %u, built against %u", v, (unsigned)CUPTI_API_VERSION);
        return 1;
    }
    if (!(G.kinds & ~K_NVTX))
        return 1;
    bufpool_fill(&G.pool, 2); /* before the first request; out of memory: requests make their own */
    CUptiResult r = cuptiActivityRegisterCallbacks(buf_request, buf_complete);
    const char *what = "cuptiActivityRegisterCallbacks";
    static const struct { unsigned k; CUpti_ActivityKind a; const char *n; } kinds[] = {
        {K_KERNEL, CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, "CONCURRENT_KERNEL"},
        {K_MEMCPY, CUPTI_ACTIVITY_KIND_MEMCPY, "MEMCPY"},
        {K_MEMSET, CUPTI_ACTIVITY_KIND_MEMSET, "MEMSET"},
        {K_SYNC, CUPTI_ACTIVITY_KIND_SYNCHRONIZATION, "SYNCHRONIZATION"},
        {K_EXTCORR, CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION, "EXTERNAL_CORRELATION"},
        {K_OVERHEAD, CUPTI_ACTIVITY_KIND_OVERHEAD, "OVERHEAD"},
        {K_RUNTIME_ALL, CUPTI_ACTIVITY_KIND_RUNTIME, "RUNTIME"},
    };
    G.cupti_on = 1;
    for (size_t i = 0; r == CUPTI_SUCCESS && i < sizeof kinds / sizeof *kinds; i++) {
        if (G.kinds & kinds[i].k) {
            r = cuptiActivityEnable(kinds[i].a);
            what = kinds[i].n;
        }
    }
    if (r == CUPTI_SUCCESS && (G.kinds & K_RUNTIME) && !(G.kinds & K_RUNTIME_ALL)) {
        r = (CUptiResult)enable_apis(0);
        what = "runtime API selection";
    }
    if (r == CUPTI_SUCCESS && (G.kinds & K_DRIVER)) {
        r = (CUptiResult)enable_apis(1);
        what = "driver API selection";
    }
    if (r != CUPTI_SUCCESS) {
        const char *msg = NULL;
        cuptiGetResultString(r, &msg);
        cupti_off();
        fail("CUPTI %s failed: %s (%d)%s", what, msg ? msg : "?", (int)r,
             r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED ? "; another profiler holds CUPTI" : "");
    }
    return 1;
}

/* ---- NVTX ---- */

/* A wide string as UTF-8 (BMP and beyond), truncated to the buffer. */
static size_t wide_to_utf8(const wchar_t *w, char *out, size_t cap)
{
    size_t n = 0;
    for (; w && *w && n + 4 < cap; w++) {
        uint32_t c = (uint32_t)*w;
        if (c < 0x80) {
            out[n++] = (char)c;
        } else if (c < 0x800) {
            out[n++] = (char)(0xc0 | c >> 6);
            out[n++] = (char)(0x80 | (c & 0x3f));
        } else if (c < 0x10000) {
            out[n++] = (char)(0xe0 | c >> 12);
            out[n++] = (char)(0x80 | ((c >> 6) & 0x3f));
            out[n++] = (char)(0x80 | (c & 0x3f));
        } else {
            out[n++] = (char)(0xf0 | (c >> 18 & 7));
            out[n++] = (char)(0x80 | ((c >> 12) & 0x3f));
            out[n++] = (char)(0x80 | ((c >> 6) & 0x3f));
            out[n++] = (char)(0x80 | (c & 0x3f));
        }
    }
    out[n] = 0;
    return n;
}

/* Interns a name; 0 when out of memory. Caller holds mu. */
static uint32_t intern_locked(const char *s, size_t len)
{
    uint32_t id = tlt_strtab_intern(&G.strs, s, len);
    atomic_store_explicit(&G.nstrs, G.strs.n, memory_order_release);
    return id == UINT32_MAX ? 0 : id;
}

static uint32_t intern(const char *s, size_t len)
{
    pthread_mutex_lock(&G.mu);
    uint32_t id = intern_locked(s, len);
    pthread_mutex_unlock(&G.mu);
    return id;
}

/* The id of an ASCII name. The common case, a name this thread used before
 * from the same pointer with the same text, takes no lock: one cache slot
 * per pointer, checked against a copy of the text because the pointer may
 * be a buffer the program reuses for other names. */
static uint32_t name_id(tbuf *t, const char *s)
{
    if (!*s)
        return 0;
    name_ent *c = &t->names[((uintptr_t)s * 0x9e3779b97f4a7c15ull) >> (64 - 6)];
    if (c->p == s && !strcmp(c->text, s))
        return c->id;
    size_t len = strlen(s);
    uint32_t id = intern(s, len);
    if (id && len < NAME_TEXT) {
        c->p = s;
        c->id = id;
        memcpy(c->text, s, len + 1);
    }
    return id;
}

static uint32_t wide_id(const wchar_t *w)
{
    char buf[1024];
    size_t n = wide_to_utf8(w, buf, sizeof buf);
    return intern(buf, n);
}

/* Name and payload of event attributes. */
static uint32_t attr_name(tbuf *t, const nvtxEventAttributes_t *a, uint64_t *payload, uint8_t *ptype)
{
    *payload = 0;
    *ptype = 0;
    if (!a)
        return 0;
    if (a->payloadType >= NVTX_PAYLOAD_TYPE_UNSIGNED_INT64 && a->payloadType <= NVTX_PAYLOAD_TYPE_FLOAT) {
        *ptype = (uint8_t)a->payloadType;
        memcpy(payload, &a->payload, sizeof *payload < sizeof a->payload ? sizeof *payload : sizeof a->payload);
    }
    switch (a->messageType) {
    case NVTX_MESSAGE_TYPE_ASCII:
        return a->message.ascii ? name_id(t, a->message.ascii) : 0;
    case NVTX_MESSAGE_TYPE_UNICODE:
        return wide_id(a->message.unicode);
    case NVTX_MESSAGE_TYPE_REGISTERED: {
        uintptr_t id = (uintptr_t)a->message.registered;
        return id < atomic_load_explicit(&G.nstrs, memory_order_relaxed) ? (uint32_t)id : 0;
    }
    default:
        return 0;
    }
}

/* Appends one record to the thread's block; no lock unless the block is
 * full. */
static void emit(tbuf *t, uint8_t kind, const range_ent *e, int64_t end, uint32_t tid, uint16_t depth)
{
    blk *k = t->cur;
    uint32_t n = k ? atomic_load_explicit(&k->n, memory_order_relaxed) : BLK_RECS;
    if (n == BLK_RECS) {
        if (!(k = refill(t)))
            return;
        n = 0;
    }
    nvrec *r = &k->recs[n];
    r->start = e->start;
    r->end = end;
    r->payload = e->payload;
    r->name = e->name;
    r->dom = e->dom;
    r->tid = tid;
    r->depth = depth;
    r->kind = kind;
    r->ptype = e->ptype;
    atomic_store_explicit(&k->n, n + 1, memory_order_release);
}

static void count_drop(uint64_t *counter)
{
    pthread_mutex_lock(&G.mu);
    (*counter)++;
    pthread_mutex_unlock(&G.mu);
}

static int push(uint32_t dom, const char *ascii, const wchar_t *wide, const nvtxEventAttributes_t *a)
{
    if (!G.on)
        return -1;
    tbuf *t = me();
    if (!t)
        return -1;
    range_ent e;
    e.start = now_ns();
    e.dom = dom;
    if (ascii) {
        e.name = name_id(t, ascii);
        e.payload = 0;
        e.ptype = 0;
    } else if (wide) {
        e.name = wide_id(wide);
        e.payload = 0;
        e.ptype = 0;
    } else {
        e.name = attr_name(t, a, &e.payload, &e.ptype);
    }
    if (t->depth < STACK_MAX)
        t->st[t->depth] = e;
    return t->depth++;
}

static int pop(uint32_t dom)
{
    tbuf *t = my_tbuf;
    if (!t || t->depth <= 0)
        return -1;
    int64_t end = now_ns();
    if (t->depth > STACK_MAX) {
        t->depth--;
        if (G.on)
            count_drop(&G.dropped_ranges);
        return t->depth;
    }
    /* the innermost open range of this domain */
    int i = t->depth - 1;
    while (i >= 0 && t->st[i].dom != dom)
        i--;
    if (i < 0)
        return -1;
    range_ent e = t->st[i];
    if (i < t->depth - 1) /* a range of another domain was pushed after it */
        memmove(&t->st[i], &t->st[i + 1], (size_t)(t->depth - 1 - i) * sizeof *t->st);
    t->depth--;
    if (G.on)
        emit(t, TLT_REC_RANGE, &e, end, t->tid, (uint16_t)i);
    return i;
}

static nvtxRangeId_t range_start(uint32_t dom, const char *ascii, const nvtxEventAttributes_t *a)
{
    if (!G.on)
        return 0;
    tbuf *t = me();
    if (!t)
        return 0;
    range_ent e = {0};
    e.start = now_ns();
    e.dom = dom;
    e.name = ascii ? name_id(t, ascii) : attr_name(t, a, &e.payload, &e.ptype);
    pthread_mutex_lock(&G.mu);
    uint64_t id = ++G.next_range;
    open_range *o = &G.open[id % OPEN_RANGES];
    if (o->id)
        G.dropped_ranges++; /* overwritten: more than OPEN_RANGES open at once */
    o->id = id;
    o->start = e.start;
    o->dom = dom;
    o->tid = t->tid;
    o->name = e.name;
    o->payload = e.payload;
    o->ptype = e.ptype;
    pthread_mutex_unlock(&G.mu);
    return id;
}

static void range_end(nvtxRangeId_t id)
{
    if (!G.on || !id)
        return;
    tbuf *t = me();
    if (!t)
        return;
    int64_t end = now_ns();
    pthread_mutex_lock(&G.mu);
    open_range *o = &G.open[id % OPEN_RANGES];
    range_ent e = {0};
    uint32_t tid = 0;
    int found = o->id == id;
    if (found) {
        e.start = o->start;
        e.payload = o->payload;
        e.name = o->name;
        e.dom = o->dom;
        e.ptype = o->ptype;
        tid = o->tid;
        o->id = 0;
    } else {
        G.dropped_ranges++;
    }
    pthread_mutex_unlock(&G.mu);
    if (found)
        emit(t, TLT_REC_RANGE, &e, end, tid, 0); /* on the starting thread's row */
}

static void mark(uint32_t dom, const char *ascii, const nvtxEventAttributes_t *a)
{
    if (!G.on)
        return;
    tbuf *t = me();
    if (!t)
        return;
    range_ent e = {0};
    e.start = now_ns();
    e.dom = dom;
    e.name = ascii ? name_id(t, ascii) : attr_name(t, a, &e.payload, &e.ptype);
    emit(t, TLT_REC_MARK, &e, e.start, t->tid, (uint16_t)t->depth);
}

static uint32_t dom_id(nvtxDomainHandle_t d) { return (uint32_t)(uintptr_t)d; }

static void NVTX_API h_MarkEx(const nvtxEventAttributes_t *a) { mark(0, NULL, a); }
static void NVTX_API h_MarkA(const char *m) { mark(0, m ? m : "", NULL); }
static nvtxRangeId_t NVTX_API h_RangeStartEx(const nvtxEventAttributes_t *a) { return range_start(0, NULL, a); }
static nvtxRangeId_t NVTX_API h_RangeStartA(const char *m) { return range_start(0, m ? m : "", NULL); }
static void NVTX_API h_RangeEnd(nvtxRangeId_t id) { range_end(id); }
static int NVTX_API h_RangePushEx(const nvtxEventAttributes_t *a) { return push(0, NULL, NULL, a); }
static int NVTX_API h_RangePushA(const char *m) { return push(0, m ? m : "", NULL, NULL); }
static int NVTX_API h_RangePushW(const wchar_t *m) { return push(0, NULL, m ? m : L"", NULL); }
static int NVTX_API h_RangePop(void) { return pop(0); }
static void NVTX_API h_DomainMarkEx(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a) { mark(dom_id(d), NULL, a); }
static nvtxRangeId_t NVTX_API h_DomainRangeStartEx(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a)
{
    return range_start(dom_id(d), NULL, a);
}
static void NVTX_API h_DomainRangeEnd(nvtxDomainHandle_t d, nvtxRangeId_t id)
{
    (void)d;
    range_end(id);
}
static int NVTX_API h_DomainRangePushEx(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a)
{
    return push(dom_id(d), NULL, NULL, a);
}
static int NVTX_API h_DomainRangePop(nvtxDomainHandle_t d) { return pop(dom_id(d)); }

static nvtxStringHandle_t NVTX_API h_DomainRegisterStringA(nvtxDomainHandle_t d, const char *s)
{
    (void)d;
    if (!G.on || !s)
        return NULL;
    return (nvtxStringHandle_t)(uintptr_t)intern(s, strlen(s));
}

static nvtxStringHandle_t NVTX_API h_DomainRegisterStringW(nvtxDomainHandle_t d, const wchar_t *s)
{
    (void)d;
    if (!G.on || !s)
        return NULL;
    return (nvtxStringHandle_t)(uintptr_t)wide_id(s);
}

static nvtxDomainHandle_t NVTX_API h_DomainCreateA(const char *name)
{
    if (!G.on)
        return NULL;
    if (!name || !*name)
        name = "<unnamed domain>";
    return (nvtxDomainHandle_t)(uintptr_t)intern(name, strlen(name));
}

static nvtxDomainHandle_t NVTX_API h_DomainCreateW(const wchar_t *name)
{
    char buf[1024];
    wide_to_utf8(name, buf, sizeof buf);
    return h_DomainCreateA(buf);
}

static void NVTX_API h_DomainDestroy(nvtxDomainHandle_t d) { (void)d; }

static int set_slot(NvtxGetExportTableFunc_t get, NvtxCallbackModule mod, unsigned id, NvtxFunctionPointer fn)
{
    const NvtxExportTableCallbacks *cb = (const NvtxExportTableCallbacks *)get(NVTX_ETID_CALLBACKS);
    NvtxFunctionTable table = NULL;
    unsigned int size = 0;
    if (!cb || !cb->GetModuleFunctionTable || !cb->GetModuleFunctionTable(mod, &table, &size) || !table)
        return -1;
    if (id >= size + 1 || !table[id])
        return -1;
    *table[id] = fn;
    return 0;
}

#define SLOT(mod, id, fn) (set_slot(get, mod, id, (NvtxFunctionPointer)(void (*)(void))(fn)) == 0)

EXPORT int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get)
{
    if (!get || !start() || !(G.kinds & K_NVTX))
        return 0; /* NVTX turns its calls into no-ops */
    int ok = SLOT(NVTX_CB_MODULE_CORE, NVTX_CBID_CORE_MarkEx, h_MarkEx) &&
             SLOT(NVTX_CB_MODULE_CORE, NVTX_CBID_CORE_MarkA, h_MarkA) &&
             SLOT(NVTX_CB_MODULE_CORE, NVTX_CBID_CORE_RangeStartEx, h_RangeStartEx) &&
             SLOT(NVTX_CB_MODULE_CORE, NVTX_CBID_CORE_RangeStartA, h_RangeStartA) &&
             SLOT(NVTX_CB_MODULE_CORE, NVTX_CBID_CORE_RangeEnd, h_RangeEnd) &&
             SLOT(NVTX_CB_MODULE_CORE, NVTX_CBID_CORE_RangePushEx, h_RangePushEx) &&
             SLOT(NVTX_CB_MODULE_CORE, NVTX_CBID_CORE_RangePushA, h_RangePushA) &&
             SLOT(NVTX_CB_MODULE_CORE, NVTX_CBID_CORE_RangePushW, h_RangePushW) &&
             SLOT(NVTX_CB_MODULE_CORE, NVTX_CBID_CORE_RangePop, h_RangePop) &&
             SLOT(NVTX_CB_MODULE_CORE2, NVTX_CBID_CORE2_DomainMarkEx, h_DomainMarkEx) &&
             SLOT(NVTX_CB_MODULE_CORE2, NVTX_CBID_CORE2_DomainRangeStartEx, h_DomainRangeStartEx) &&
             SLOT(NVTX_CB_MODULE_CORE2, NVTX_CBID_CORE2_DomainRangeEnd, h_DomainRangeEnd) &&
             SLOT(NVTX_CB_MODULE_CORE2, NVTX_CBID_CORE2_DomainRangePushEx, h_DomainRangePushEx) &&
             SLOT(NVTX_CB_MODULE_CORE2, NVTX_CBID_CORE2_DomainRangePop, h_DomainRangePop) &&
             SLOT(NVTX_CB_MODULE_CORE2, NVTX_CBID_CORE2_DomainRegisterStringA, h_DomainRegisterStringA) &&
             SLOT(NVTX_CB_MODULE_CORE2, NVTX_CBID_CORE2_DomainRegisterStringW, h_DomainRegisterStringW) &&
             SLOT(NVTX_CB_MODULE_CORE2, NVTX_CBID_CORE2_DomainCreateA, h_DomainCreateA) &&
             SLOT(NVTX_CB_MODULE_CORE2, NVTX_CBID_CORE2_DomainCreateW, h_DomainCreateW) &&
             SLOT(NVTX_CB_MODULE_CORE2, NVTX_CBID_CORE2_DomainDestroy, h_DomainDestroy);
    if (!ok) {
        fail("the NVTX export table lacks a slot this collector needs");
        return 0;
    }
    return 1;
}
