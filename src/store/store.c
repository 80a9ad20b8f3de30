/*
 * store.c - the columnar event table, side tables and string interning.
 *
 * Interning is an open-addressing hash table of ids over text kept in
 * large blocks; ids are dense and stable, 0 is the empty string. Event
 * columns grow together. See include/teller/store.h for the contract.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_internal.h"
#include "../util/vec.h"

#define STR_BLOCK_SIZE (1u << 20)

/* The event columns (X(name) each, as a statement): those the readers
 * fill, and the tree's, which a bare store has not. */
#define READ_COLUMNS(X) X(start_ns); X(dur_ns); X(name); X(layer); X(flags); X(source); X(track); X(corr); X(args);
#define TREE_COLUMNS(X) X(parent); X(first_child); X(next_sibling); X(depth); X(step);

static uint32_t hash_bytes(const char *s, size_t n)
{
    /* FNV-1a over 8-byte words then bytes: names are short and repeat. */
    uint64_t h = 1469598103934665603ull;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, s + i, 8);
        h = (h ^ w) * 1099511628211ull;
        h ^= h >> 29;
    }
    for (; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
    h ^= h >> 32;
    return (uint32_t)h;
}

static char *str_alloc(teller_store *st, size_t n)
{
    str_block *b = st->blocks;
    if (!b || b->size - b->used < n) {
        /* a store of a few names (a teller-mpi reader keeps one per file)
         * starts small; blocks double up to STR_BLOCK_SIZE */
        size_t sz = b ? (b->size < STR_BLOCK_SIZE ? 2 * b->size : STR_BLOCK_SIZE) : STR_BLOCK_SIZE / 16;
        if (sz < n)
            sz = n;
        str_block *nb = malloc(sizeof *nb + sz);
        if (!nb)
            return NULL;
        nb->next = st->blocks;
        nb->used = 0;
        nb->size = sz;
        st->blocks = nb;
        st->str_bytes += sizeof *nb + sz;
        b = nb;
    }
    char *p = b->data + b->used;
    b->used += n;
    return p;
}

static int rehash(teller_store *st, size_t ncap)
{
    uint32_t *t = malloc(ncap * sizeof *t);
    if (!t)
        return -1;
    memset(t, 0xff, ncap * sizeof *t);
    for (size_t id = 0; id < st->nstr; id++) {
        size_t i = st->strs[id].hash & (ncap - 1);
        while (t[i] != TELLER_NONE)
            i = (i + 1) & (ncap - 1);
        t[i] = (uint32_t)id;
    }
    free(st->htab);
    st->str_bytes += (ncap - st->hcap) * sizeof *t;
    st->htab = t;
    st->hcap = ncap;
    return 0;
}

uint32_t teller_store_intern(teller_store *st, const char *s, size_t len)
{
    if (len == 0)
        return 0;
    if (len > UINT32_MAX - 1)
        return TELLER_NONE;
    uint32_t h = hash_bytes(s, len);
    size_t mask = st->hcap - 1;
    for (size_t i = h & mask;; i = (i + 1) & mask) {
        uint32_t id = st->htab[i];
        if (id == TELLER_NONE)
            break;
        const struct str_ent *se = &st->strs[id];
        if (se->hash == h && se->len == len && memcmp(se->ptr, s, len) == 0)
            return id;
    }
    if ((st->nstr + 1) * 4 > st->hcap * 3 && rehash(st, st->hcap * 2) != 0)
        return TELLER_NONE;
    size_t old_cap = st->str_cap;
    if (TELLER_GROW(st->strs, st->str_cap, st->nstr + 1))
        return TELLER_NONE;
    st->str_bytes += (st->str_cap - old_cap) * sizeof *st->strs;
    char *p = str_alloc(st, len + 1);
    if (!p)
        return TELLER_NONE;
    memcpy(p, s, len);
    p[len] = 0;
    uint32_t id = (uint32_t)st->nstr++;
    st->strs[id] = (struct str_ent){p, (uint32_t)len, h};
    mask = st->hcap - 1;
    size_t i = h & mask;
    while (st->htab[i] != TELLER_NONE)
        i = (i + 1) & mask;
    st->htab[i] = id;
    return id;
}

size_t teller_store_num_strings(const teller_store *st) { return st->nstr; }

const char *teller_store_str(const teller_store *st, uint32_t id)
{
    if (id >= st->nstr)
        return "";
    return st->strs[id].ptr;
}

size_t teller_store_str_bytes(const teller_store *st) { return st->str_bytes; }

teller_store *teller_store_create(void)
{
    teller_store *st = calloc(1, sizeof *st);
    if (!st)
        return NULL;
    if (rehash(st, 1024) != 0) {
        free(st);
        return NULL;
    }
    /* id 0 is the empty string; it is not in htab: intern("") returns 0 directly */
    if (TELLER_GROW(st->strs, st->str_cap, 1)) {
        teller_store_free(st);
        return NULL;
    }
    st->strs[0] = (struct str_ent){"", 0, 0};
    st->nstr = 1;
    return st;
}

void teller_store_free(teller_store *st)
{
    if (!st)
        return;
    for (str_block *b = st->blocks, *n; b; b = n) {
        n = b->next;
        free(b);
    }
    free(st->strs);
    free(st->htab);
    free(st->sources);
    teller_events *e = &st->ev;
    free(e->start_ns);
    free(e->dur_ns);
    free(e->name);
    free(e->layer);
    free(e->flags);
    free(e->source);
    free(e->track);
    free(st->tracks);
    kmap_free(&st->track_map);
    free(e->corr);
    free(e->args);
    free(e->parent);
    free(e->first_child);
    free(e->next_sibling);
    free(e->depth);
    free(e->step);
    free(st->args);
    free(st->comms);
    free(st->steps);
    free(st->spans);
    free(st->step_names);
    free(st->cells);
    free(st->cells_given);
    free(st->colls);
    free(st->members);
    free(st->member_rows);
    free(st->extent);
    free(st->nodes);
    for (size_t i = 0; i < st->nwarn_msgs; i++)
        free(st->warn_msgs[i]);
    free(st->scratch);
    free(st);
}

void *teller_store_scratch(teller_store *st, size_t n)
{
    if (n > st->scratch_cap) {
        /* a quarter more than asked: the next file of a run is seldom
         * larger by more, and growing again would fault in fresh pages */
        size_t cap = n + n / 4;
        free(st->scratch); /* contents are not kept: no copy */
        st->scratch = malloc(cap);
        st->scratch_cap = st->scratch ? cap : 0;
        teller_prefault(st->scratch, n); /* it is written whole */
    }
    return st->scratch;
}

void teller_store_drop_scratch(teller_store *st)
{
    free(st->scratch);
    st->scratch = NULL;
    st->scratch_cap = 0;
}

uint32_t teller_store_add_source(teller_store *st, const teller_source *src)
{
    if (st->nsources >= UINT16_MAX || TELLER_GROW(st->sources, st->sources_cap, st->nsources + 1))
        return TELLER_NONE;
    st->sources[st->nsources] = *src;
    return (uint32_t)st->nsources++;
}

uint32_t teller_store_begin_source(teller_store *st, const char *path, teller_format format)
{
    teller_source src = {0};
    src.path = teller_store_intern(st, path, strlen(path));
    if (src.path == TELLER_NONE)
        return TELLER_NONE;
    src.format = format;
    src.rank = -1;
    src.node = -1;
    src.pid = -1;
    src.first_event = (uint32_t)st->ev.n;
    return teller_store_add_source(st, &src);
}

size_t teller_store_num_sources(const teller_store *st) { return st->nsources; }
teller_source *teller_store_source(teller_store *st, uint32_t i) { return &st->sources[i]; }
const teller_source *teller_store_source_c(const teller_store *st, uint32_t i) { return &st->sources[i]; }

int32_t teller_store_source_of_rank(const teller_store *st, int32_t rank)
{
    for (size_t q = 0; q < st->nsources; q++)
        if (st->sources[q].rank == rank)
            return (int32_t)q;
    return -1;
}

int teller_store_reserve_events(teller_store *st, size_t need)
{
    if (need <= st->ev_cap)
        return 0;
    if (need >= TELLER_NONE)
        return -1;
    size_t ncap = st->ev_cap ? st->ev_cap + st->ev_cap / 2 : 4096;
    if (ncap < need)
        ncap = need;
    if (ncap >= TELLER_NONE)
        ncap = TELLER_NONE - 1;
    teller_events *e = &st->ev;
#define COL(f)                                                   \
    do {                                                         \
        size_t c = st->ev_cap;                                   \
        if (teller_grow((void **)&e->f, &c, ncap, sizeof *e->f)) \
            return -1;                                           \
    } while (0)
    READ_COLUMNS(COL)
    if (!st->bare) {
        TREE_COLUMNS(COL)
    }
#undef COL
    st->ev_cap = ncap;
    return 0;
}

int teller_store_reserve_args(teller_store *st, size_t need)
{
    return need >= TELLER_NONE ? -1 : TELLER_GROW(st->args, st->args_cap, need);
}

teller_status teller_store_append_local(teller_store *dst, const teller_store *src, teller_error *err)
{
    size_t e0 = dst->ev.n;
    teller_status s = teller_store_append(dst, src, err);
    if (s != TELLER_OK || dst->bare || src->bare)
        return s;
    const teller_events *se = &src->ev;
    teller_events *de = &dst->ev;
    for (size_t i = 0; i < se->n; i++) {
        de->parent[e0 + i] = se->parent[i] == TELLER_NONE ? TELLER_NONE : se->parent[i] + (uint32_t)e0;
        de->first_child[e0 + i] = se->first_child[i] == TELLER_NONE ? TELLER_NONE : se->first_child[i] + (uint32_t)e0;
        de->next_sibling[e0 + i] = se->next_sibling[i] == TELLER_NONE ? TELLER_NONE : se->next_sibling[i] + (uint32_t)e0;
        de->depth[e0 + i] = se->depth[i];
    }
    return TELLER_OK;
}

void teller_store_fit(teller_store *st)
{
    teller_events *e = &st->ev;
    size_t n = e->n ? e->n : 1;
    /* a shrinking realloc that fails leaves the column as it was */
#define COL(f)                                          \
    do {                                                \
        void *p = realloc(e->f, n * sizeof *e->f);      \
        if (p)                                          \
            e->f = p;                                   \
    } while (0)
    if (n < st->ev_cap) {
        READ_COLUMNS(COL)
        if (!st->bare) {
            TREE_COLUMNS(COL)
        }
        st->ev_cap = n;
    }
#undef COL
    void *a = st->nargs < st->args_cap ? realloc(st->args, (st->nargs ? st->nargs : 1) * sizeof *st->args) : NULL;
    if (a) {
        st->args = a;
        st->args_cap = st->nargs ? st->nargs : 1;
    }
}

void teller_store_reset(teller_store *st)
{
    /* strings: keep the newest block (emptied), the table and the id array */
    str_block *keep = st->blocks;
    if (keep) {
        for (str_block *b = keep->next, *n; b; b = n) {
            n = b->next;
            free(b);
        }
        keep->next = NULL;
        keep->used = 0;
        st->str_bytes = sizeof *keep + keep->size + st->hcap * sizeof *st->htab + st->str_cap * sizeof *st->strs;
    }
    memset(st->htab, 0xff, st->hcap * sizeof *st->htab);
    st->nstr = 1;
    st->nsources = 0;
    st->ev.n = 0;
    st->ev.ntracks = 0;
    kmap_free(&st->track_map);
    st->nargs = 0;
    st->ncomms = 0;
    for (size_t i = 0; i < st->nwarn_msgs; i++)
        free(st->warn_msgs[i]);
    st->nwarn_msgs = 0;
    st->nwarn = 0;
}

/* Maps the pages of event rows [lo, hi) of every column before they are
 * written (vec.h: teller_prefault). */
static void prefault_rows(teller_store *st, size_t lo, size_t hi)
{
    teller_events *e = &st->ev;
#define COL(f) teller_prefault(e->f + lo, (hi - lo) * sizeof *e->f)
    READ_COLUMNS(COL)
    if (!st->bare) {
        TREE_COLUMNS(COL)
    }
#undef COL
}

/* Rows are mapped a block at a time as readers add them: when row i
 * starts a block, or the array moved (its capacity changed from old_cap),
 * the rows from i to the end of the block (or of the capacity) are to be
 * mapped; the end of those, or i when none are. */
enum { PREFAULT_ROWS = 16384 };

static size_t prefault_end(size_t i, size_t cap, size_t old_cap)
{
    if (i % PREFAULT_ROWS && cap == old_cap)
        return i;
    size_t end = (i / PREFAULT_ROWS + 1) * PREFAULT_ROWS;
    return end < cap ? end : cap;
}

/* The index of (pid, tid) in the store's track table, added when new;
 * TELLER_NONE when out of memory. */
static uint32_t track_of(teller_store *st, int32_t pid, int32_t tid)
{
    teller_events *e = &st->ev;
    /* room first, so that every index the map hands out has its row */
    if (TELLER_GROW(st->tracks, st->tracks_cap, e->ntracks + 1))
        return TELLER_NONE;
    e->tracks = st->tracks;
    uint32_t t = kmap_get(&st->track_map, (uint64_t)(uint32_t)pid << 32 | (uint32_t)tid, 1);
    if (t == UINT32_MAX)
        return TELLER_NONE;
    if (t == e->ntracks)
        st->tracks[e->ntracks++] = (teller_track){pid, tid};
    return t;
}

uint32_t teller_store_add_event(teller_store *st, const teller_event_row *r)
{
    size_t i = st->ev.n, cap = st->ev_cap;
    uint32_t track; /* after the row's room: a failure leaves no track without an event */
    if (teller_store_reserve_events(st, i + 1) || (track = track_of(st, r->pid, r->tid)) == TELLER_NONE)
        return TELLER_NONE;
    teller_events *e = &st->ev;
    size_t ahead = prefault_end(i, st->ev_cap, cap);
    if (ahead > i)
        prefault_rows(st, i, ahead);
    e->start_ns[i] = r->start_ns;
    e->dur_ns[i] = r->dur_ns;
    e->name[i] = r->name;
    e->layer[i] = r->layer;
    e->flags[i] = r->flags;
    e->source[i] = r->source;
    e->track[i] = track;
    e->corr[i] = r->corr;
    e->args[i] = r->args;
    if (!st->bare) {
        e->parent[i] = TELLER_NONE;
        e->first_child[i] = TELLER_NONE;
        e->next_sibling[i] = TELLER_NONE;
        e->depth[i] = 0;
        e->step[i] = TELLER_NONE;
    }
    e->n = i + 1;
    return (uint32_t)i;
}

int teller_time_ok(int64_t start_ns, int64_t dur_ns)
{
    return start_ns >= -TELLER_TIME_MAX / 4 && start_ns <= TELLER_TIME_MAX && dur_ns >= 0 &&
           dur_ns <= TELLER_TIME_MAX / 4;
}

const teller_events *teller_store_events(const teller_store *st) { return &st->ev; }
teller_events *teller_store_events_mut(teller_store *st) { return &st->ev; }

uint32_t teller_store_add_args(teller_store *st, const teller_args *a)
{
    size_t cap = st->args_cap;
    if (st->nargs >= TELLER_NONE - 1 || TELLER_GROW(st->args, st->args_cap, st->nargs + 1))
        return TELLER_NONE;
    size_t ahead = prefault_end(st->nargs, st->args_cap, cap);
    if (ahead > st->nargs)
        teller_prefault(st->args + st->nargs, (ahead - st->nargs) * sizeof *st->args);
    st->args[st->nargs] = *a;
    return (uint32_t)st->nargs++;
}

const teller_args *teller_store_args(const teller_store *st, uint32_t i)
{
    return i < st->nargs ? &st->args[i] : NULL;
}

uint32_t teller_store_add_comm(teller_store *st, const teller_comm *c)
{
    if (st->ncomms >= TELLER_NONE - 1 || TELLER_GROW(st->comms, st->comms_cap, st->ncomms + 1))
        return TELLER_NONE;
    st->comms[st->ncomms] = *c;
    return (uint32_t)st->ncomms++;
}

const teller_comm *teller_store_comm(const teller_store *st, uint32_t i)
{
    return i < st->ncomms ? &st->comms[i] : NULL;
}

const teller_args *teller_store_event_args(const teller_store *st, uint32_t e)
{
    return e < st->ev.n ? teller_store_args(st, st->ev.args[e]) : NULL;
}

const teller_comm *teller_store_event_comm(const teller_store *st, uint32_t e)
{
    const teller_args *a = teller_store_event_args(st, e);
    return a ? teller_store_comm(st, a->comm) : NULL;
}

int teller_pg_ranks_next(const char **cursor, long *rank)
{
    const char *p = *cursor;
    while (*p && (*p < '0' || *p > '9'))
        p++;
    if (!*p) {
        *cursor = p;
        return 0;
    }
    char *end;
    *rank = strtol(p, &end, 10);
    *cursor = end;
    return 1;
}

int32_t teller_store_event_rank(const teller_store *st, uint32_t e)
{
    return st->sources[st->ev.source[e]].rank;
}

int32_t teller_store_event_node(const teller_store *st, uint32_t e)
{
    return st->sources[st->ev.source[e]].node;
}

size_t teller_store_num_steps(const teller_store *st) { return st->nsteps; }
const teller_step *teller_store_steps(const teller_store *st) { return st->steps; }
uint32_t teller_store_step_count(const teller_store *st) { return st->step_count; }
uint32_t teller_store_step_annotation(const teller_store *st, size_t i)
{
    return st->step_names && i < st->nsteps ? st->step_names[i] : TELLER_NONE;
}
size_t teller_store_num_collectives(const teller_store *st) { return st->ncolls; }
const teller_collective *teller_store_collectives(const teller_store *st) { return st->colls; }
const teller_coll_member *teller_store_coll_members(const teller_store *st) { return st->members; }
size_t teller_store_num_nodes(const teller_store *st) { return st->nnodes; }
const teller_node *teller_store_nodes(const teller_store *st) { return st->nodes; }

void teller_store_warn(teller_store *st, const char *file, uint64_t offset, const char *fmt, ...)
{
    st->nwarn++;
    if (st->nwarn_msgs >= TELLER_MAX_WARNINGS)
        return;
    char body[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(body, sizeof body, fmt, ap);
    va_end(ap);
    size_t n = strlen(file) + strlen(body) + 32;
    char *m = malloc(n);
    if (!m)
        return;
    snprintf(m, n, "%s:%llu: %s", file, (unsigned long long)offset, body);
    st->warn_msgs[st->nwarn_msgs++] = m;
}

uint64_t teller_store_num_warnings(const teller_store *st) { return st->nwarn; }
size_t teller_store_num_warning_msgs(const teller_store *st) { return st->nwarn_msgs; }
const char *teller_store_warning_msg(const teller_store *st, size_t i)
{
    return i < st->nwarn_msgs ? st->warn_msgs[i] : "";
}

const char *teller_layer_name(teller_layer l)
{
    static const char *const names[TELLER_LAYER_COUNT] = {
        "engine", "frontend", "backend", "runtime", "driver",
        "kernel", "memcpy", "memset", "sync", "other"};
    return (unsigned)l < TELLER_LAYER_COUNT ? names[l] : "?";
}

const char *teller_layer_tag(teller_layer l)
{
    static const char *const tags[TELLER_LAYER_COUNT] = {
        "ENGINE", "FRONTEND", "BACKEND", "RUNTIME", "DRIVER",
        "KERNEL", "MEMCPY", "MEMSET", "SYNC", "OTHER"};
    return (unsigned)l < TELLER_LAYER_COUNT ? tags[l] : "OTHER";
}

teller_status teller_store_append(teller_store *dst, const teller_store *src, teller_error *err)
{
    if (dst->nsources + src->nsources > UINT16_MAX)
        return teller_error_set(err, TELLER_ERR_LIMIT, "(trace)", 0, "more than %d sources in one run",
                                UINT16_MAX);
    if (dst->ev.n + src->ev.n >= TELLER_NONE || dst->nargs + src->nargs >= TELLER_NONE ||
        dst->ncomms + src->ncomms >= TELLER_NONE)
        return teller_error_set(err, TELLER_ERR_LIMIT, "(trace)", 0, "more than %u events in one run",
                                TELLER_NONE - 1);
    uint32_t *map = malloc(src->nstr * sizeof *map);
    uint32_t *tmap = malloc((src->ev.ntracks ? src->ev.ntracks : 1) * sizeof *tmap); /* src's tracks in dst */
    if (!map || !tmap)
        goto oom;
    map[0] = 0;
    for (size_t id = 1; id < src->nstr; id++)
        if ((map[id] = teller_store_intern(dst, src->strs[id].ptr, src->strs[id].len)) == TELLER_NONE)
            goto oom;
    for (size_t t = 0; t < src->ev.ntracks; t++)
        if ((tmap[t] = track_of(dst, src->ev.tracks[t].pid, src->ev.tracks[t].tid)) == TELLER_NONE)
            goto oom;
    size_t s0 = dst->nsources, e0 = dst->ev.n, a0 = dst->nargs, c0 = dst->ncomms;
    if (TELLER_GROW(dst->comms, dst->comms_cap, c0 + src->ncomms) ||
        TELLER_GROW(dst->args, dst->args_cap, a0 + src->nargs) ||
        TELLER_GROW(dst->sources, dst->sources_cap, s0 + src->nsources) ||
        teller_store_reserve_events(dst, e0 + src->ev.n))
        goto oom;
    for (size_t i = 0; i < src->ncomms; i++) {
        teller_comm c = src->comms[i];
        c.collective = map[c.collective];
        c.pg_name = map[c.pg_name];
        c.pg_desc = map[c.pg_desc];
        c.pg_ranks = map[c.pg_ranks];
        c.dtype = map[c.dtype];
        dst->comms[c0 + i] = c;
    }
    dst->ncomms += src->ncomms;
    if (src->nargs) /* else dst->args may be NULL, and NULL + 0 is undefined */
        teller_prefault(dst->args + a0, src->nargs * sizeof *dst->args);
    for (size_t i = 0; i < src->nargs; i++) {
        teller_args a = src->args[i];
        if (a.comm != TELLER_NONE)
            a.comm += (uint32_t)c0;
        a.request = map[a.request];
        a.in_dims = map[a.in_dims];
        a.in_types = map[a.in_types];
        dst->args[a0 + i] = a;
    }
    dst->nargs += src->nargs;
    for (size_t i = 0; i < src->nsources; i++) {
        teller_source so = src->sources[i];
        so.path = map[so.path];
        so.host = map[so.host];
        so.device_name = map[so.device_name];
        so.first_event += (uint32_t)e0;
        dst->sources[s0 + i] = so;
    }
    dst->nsources += src->nsources;
    const teller_events *se = &src->ev;
    teller_events *de = &dst->ev;
    size_t n = se->n;
    if (n == 0)
        goto warnings; /* no columns to copy (they may not exist) */
    prefault_rows(dst, e0, e0 + n);
    memcpy(de->start_ns + e0, se->start_ns, n * sizeof *se->start_ns);
    memcpy(de->dur_ns + e0, se->dur_ns, n * sizeof *se->dur_ns);
    memcpy(de->layer + e0, se->layer, n * sizeof *se->layer);
    memcpy(de->flags + e0, se->flags, n * sizeof *se->flags);
    memcpy(de->corr + e0, se->corr, n * sizeof *se->corr);
    for (size_t i = 0; i < n; i++) {
        de->name[e0 + i] = map[se->name[i]];
        de->track[e0 + i] = tmap[se->track[i]];
        de->source[e0 + i] = (uint16_t)(se->source[i] + s0);
        de->args[e0 + i] = se->args[i] == TELLER_NONE ? TELLER_NONE : se->args[i] + (uint32_t)a0;
    }
    if (!dst->bare) {
        memset(de->parent + e0, 0xff, n * sizeof *de->parent);
        memset(de->first_child + e0, 0xff, n * sizeof *de->first_child);
        memset(de->next_sibling + e0, 0xff, n * sizeof *de->next_sibling);
        memset(de->depth + e0, 0, n * sizeof *de->depth);
        memset(de->step + e0, 0xff, n * sizeof *de->step);
    }
    de->n = e0 + n;
warnings:
    dst->nwarn += src->nwarn;
    for (size_t i = 0; i < src->nwarn_msgs && dst->nwarn_msgs < TELLER_MAX_WARNINGS; i++) {
        char *m = strdup(src->warn_msgs[i]);
        if (!m)
            break; /* the count stays right; only the text is lost */
        dst->warn_msgs[dst->nwarn_msgs++] = m;
    }
    free(map);
    free(tmap);
    return TELLER_OK;
oom:
    free(map);
    free(tmap);
    return teller_error_set(err, TELLER_ERR_NOMEM, "(trace)", 0, "out of memory while merging traces");
}
