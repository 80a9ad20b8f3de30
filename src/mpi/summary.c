/*
 * summary.c - see summary.h. A summary is read like a file: every count is
 * bounded by the bytes left before anything it counts is read, and nothing
 * is given unless all of it is sound.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "summary.h"
#include "../store/store_internal.h"
#include "../util/kmap.h"
#include "../util/vec.h"

#define SUMMARY_MAGIC 0x326d757372726c74ull /* "tllrsum2" */

/* A row as it crosses: no padding, so no byte of it is left unwritten. */
typedef struct wire_row {
    uint32_t ev, name, pg, pg_ranks, seq, grid[3];
    int32_t  group_size;
    int8_t   dir;
    uint8_t  fam;
    uint16_t zero;
    int64_t  elems, start, dur;
} wire_row;
_Static_assert(sizeof(wire_row) == 64, "wire_row has no padding");

typedef struct wire_mark {
    uint32_t ev, name;
    int64_t  start, end, iter;
} wire_mark;
_Static_assert(sizeof(wire_mark) == 32, "wire_mark has no padding");

typedef struct wire_source {
    uint32_t events, rows, marks, zero;
} wire_source;

static size_t up8(size_t n) { return (n + 7) & ~(size_t)7; }

/* The local id of run string id in the summary's table, adding it. */
typedef struct strtab {
    kmap      ids;  /* run id -> slot in local */
    uint32_t *local;
    size_t    cap;
    uint32_t *run;  /* local id -> run id; [0] is 0 */
    size_t    n, rcap;
} strtab;

static int local_id(strtab *t, uint32_t id, uint32_t *out)
{
    if (id == 0) {
        *out = 0;
        return 0;
    }
    uint32_t *slot = kmap_slot(&t->ids, id, (void **)&t->local, &t->cap, sizeof *t->local);
    if (!slot)
        return -1;
    if (!*slot) {
        if (TELLER_GROW(t->run, t->rcap, t->n + 1))
            return -1;
        t->run[t->n] = id;
        *slot = (uint32_t)t->n++;
    }
    *out = *slot;
    return 0;
}

void *teller_summary_pack(const teller_store *st, const teller_source_summary *sr, size_t *n)
{
    size_t ns = st->nsources, nrows = 0, nmarks = 0;
    for (size_t s = 0; s < ns; s++) {
        nrows += sr[s].nrows;
        nmarks += sr[s].nmarks;
    }
    strtab t = {0};
    wire_row *rows = malloc((nrows ? nrows : 1) * sizeof *rows);
    uint32_t *mnames = malloc((nmarks ? nmarks : 1) * sizeof *mnames); /* the markers' names' local ids */
    int bad = !rows || !mnames || TELLER_GROW(t.run, t.rcap, 1);
    if (!bad)
        t.run[t.n++] = 0;
    for (size_t s = 0, k = 0; s < ns && !bad; s++)
        for (size_t r = 0; r < sr[s].nrows && !bad; r++, k++) {
            const teller_coll_row *c = &sr[s].rows[r];
            wire_row *w = &rows[k];
            *w = (wire_row){c->ev, 0, 0, 0, c->seq, {c->grid[0], c->grid[1], c->grid[2]}, c->group_size, c->dir,
                            c->fam, 0, c->elems, c->start, c->dur};
            bad = local_id(&t, c->name, &w->name) || local_id(&t, c->pg, &w->pg) ||
                  local_id(&t, c->pg_ranks, &w->pg_ranks);
        }
    for (size_t s = 0, k = 0; s < ns && !bad; s++)
        for (size_t m = 0; m < sr[s].nmarks && !bad; m++, k++)
            bad = local_id(&t, sr[s].marks[m].name, &mnames[k]);
    size_t size = 5 * sizeof(uint64_t) + (t.n - 1) * sizeof(uint32_t);
    for (size_t i = 1; i < t.n && !bad; i++)
        size += st->strs[t.run[i]].len;
    size = up8(size) + ns * sizeof(wire_source) + nrows * sizeof *rows + nmarks * sizeof(wire_mark);
    char *buf = bad ? NULL : calloc(size, 1); /* zeroed: the alignment gaps are sent too */
    if (buf) {
        uint64_t head[5] = {SUMMARY_MAGIC, t.n, ns, nrows, nmarks};
        size_t off = sizeof head;
        memcpy(buf, head, sizeof head);
        for (size_t i = 1; i < t.n; i++, off += sizeof(uint32_t)) {
            uint32_t len = (uint32_t)st->strs[t.run[i]].len;
            memcpy(buf + off, &len, sizeof len);
        }
        for (size_t i = 1; i < t.n; i++) {
            size_t len = st->strs[t.run[i]].len;
            memcpy(buf + off, teller_store_str(st, t.run[i]), len);
            off += len;
        }
        off = up8(off);
        for (size_t s = 0; s < ns; s++, off += sizeof(wire_source))
            memcpy(buf + off, &(wire_source){sr[s].events, (uint32_t)sr[s].nrows, (uint32_t)sr[s].nmarks, 0},
                   sizeof(wire_source));
        if (nrows)
            memcpy(buf + off, rows, nrows * sizeof *rows);
        off += nrows * sizeof *rows;
        for (size_t s = 0, j = 0; s < ns; s++)
            for (size_t k = 0; k < sr[s].nmarks; k++, j++, off += sizeof(wire_mark)) {
                const teller_step_mark *m = &sr[s].marks[k];
                memcpy(buf + off, &(wire_mark){m->ev, mnames[j], m->start, m->end, m->iter}, sizeof(wire_mark));
            }
        *n = size;
    }
    kmap_free(&t.ids);
    free(t.local);
    free(t.run);
    free(rows);
    free(mnames);
    return buf;
}

static teller_status damaged(teller_error *err, const char *file, size_t off, const char *what)
{
    return teller_error_set(err, TELLER_ERR_FORMAT, file, off, "summary of its collectives and steps %s", what);
}

/* The n elements of elem bytes at *off, if they fit in size; *off moves
 * past them. */
static int fits(size_t size, size_t *off, uint64_t n, size_t elem)
{
    if (*off > size || n > (size - *off) / elem)
        return 0;
    *off += (size_t)n * elem;
    return 1;
}

/* A source's rows from the wire into got (ids: the summary's strings in the
 * store); 0, or the offset of the first bad row + 1. */
static size_t take_rows(const char *buf, size_t off, const uint32_t *ids, size_t nstr, teller_source_summary *got)
{
    for (size_t r = 0; r < got->nrows; r++, off += sizeof(wire_row)) {
        wire_row w;
        memcpy(&w, buf + off, sizeof w);
        /* the source's communication kernels, in event order */
        if (w.ev >= got->events || (r > 0 && w.ev <= got->rows[r - 1].ev) || w.name >= nstr || w.pg >= nstr ||
            w.pg_ranks >= nstr || w.dir < -1 || w.dir > 1 || w.fam >= TELLER_COMM_FAMILIES || w.group_size < 0 ||
            w.elems == 0 || w.elems < -1 || !teller_time_ok(w.start, w.dur))
            return off + 1;
        got->rows[r] = (teller_coll_row){
            .ev = w.ev,
            .name = ids[w.name],
            .pg = ids[w.pg],
            .pg_ranks = ids[w.pg_ranks],
            .seq = w.seq,
            .step = TELLER_NONE,
            .grid = {w.grid[0], w.grid[1], w.grid[2]},
            .group_size = w.group_size,
            .dir = w.dir,
            .fam = w.fam,
            .elems = w.elems,
            .start = w.start,
            .dur = w.dur,
        };
    }
    return 0;
}

/* A source's step markers from the wire into got; 0, or the offset of the
 * first bad one + 1. */
static size_t take_marks(const char *buf, size_t off, const uint32_t *ids, size_t nstr, teller_source_summary *got)
{
    for (size_t k = 0; k < got->nmarks; k++, off += sizeof(wire_mark)) {
        wire_mark w;
        memcpy(&w, buf + off, sizeof w);
        /* in event order; an end before the start, or past the bounds of
         * any trace's (the difference taken unsigned: it cannot overflow) */
        if (w.ev >= got->events || (k > 0 && w.ev <= got->marks[k - 1].ev) || w.end < w.start ||
            (uint64_t)w.end - (uint64_t)w.start > (uint64_t)TELLER_TIME_MAX / 4 ||
            !teller_time_ok(w.start, w.end - w.start) || w.iter < -1 || w.name >= nstr)
            return off + 1;
        got->marks[k] = (teller_step_mark){w.ev, ids[w.name], w.start, w.end, w.iter};
    }
    return 0;
}

teller_status teller_summary_read(teller_store *st, size_t s0, size_t nsources, const void *data, size_t size,
                                  const char *file, teller_source_summary *sr, teller_error *err)
{
    const char *buf = data;
    uint64_t head[5];
    if (size < sizeof head)
        return damaged(err, file, 0, "cut short");
    memcpy(head, buf, sizeof head);
    if (head[0] != SUMMARY_MAGIC)
        return damaged(err, file, 0, "is not one");
    if (head[2] != nsources)
        return damaged(err, file, 16, "names another count of sources than its store");
    /* every section must fit before anything of it is read */
    size_t off = sizeof head, lens = off;
    uint64_t nstr = head[1], nrows = head[3], nmarks = head[4];
    if (nstr == 0) /* id 0, the empty string, is always there */
        return damaged(err, file, 8, "counts no strings");
    if (!fits(size, &off, nstr - 1, sizeof(uint32_t)))
        return damaged(err, file, 8, "cut short");
    uint32_t *ids = malloc(nstr * sizeof *ids);
    teller_source_summary *got = calloc(nsources ? nsources : 1, sizeof *got);
    teller_status s = TELLER_OK;
    if (!ids || !got) {
        s = teller_error_set(err, TELLER_ERR_NOMEM, file, 0, "out of memory");
        goto done;
    }
    ids[0] = 0;
    for (size_t i = 1; i < nstr && s == TELLER_OK; i++) {
        uint32_t len;
        memcpy(&len, buf + lens + (i - 1) * sizeof len, sizeof len);
        if (len > size - off)
            s = damaged(err, file, lens + (i - 1) * sizeof len, "cut short");
        else if ((ids[i] = teller_store_intern(st, buf + off, len)) == TELLER_NONE)
            s = teller_error_set(err, TELLER_ERR_NOMEM, file, 0, "out of memory");
        off += len;
    }
    off = up8(off);
    size_t src_at = off, rows_at, marks_at;
    int whole = fits(size, &off, nsources, sizeof(wire_source));
    rows_at = off;
    whole = whole && fits(size, &off, nrows, sizeof(wire_row));
    marks_at = off;
    whole = whole && fits(size, &off, nmarks, sizeof(wire_mark));
    if (s == TELLER_OK && !whole)
        s = damaged(err, file, src_at, "cut short");
    else if (s == TELLER_OK && off != size)
        s = damaged(err, file, off, "has bytes past its end");
    uint64_t rows = 0, marks = 0;
    for (size_t k = 0; k < nsources && s == TELLER_OK; k++) {
        wire_source ws;
        memcpy(&ws, buf + src_at + k * sizeof ws, sizeof ws);
        rows += ws.rows;
        marks += ws.marks;
        got[k] = (teller_source_summary){NULL, ws.rows, NULL, ws.marks, ws.events, 1};
        if (rows > nrows || marks > nmarks || ws.rows > ws.events || ws.marks > ws.events)
            s = damaged(err, file, src_at + k * sizeof ws, "counts more rows or markers than it holds");
        else if (!(got[k].rows = malloc((ws.rows ? ws.rows : 1) * sizeof *got[k].rows)) ||
                 !(got[k].marks = malloc((ws.marks ? ws.marks : 1) * sizeof *got[k].marks)))
            s = teller_error_set(err, TELLER_ERR_NOMEM, file, 0, "out of memory");
    }
    if (s == TELLER_OK && (rows != nrows || marks != nmarks))
        s = damaged(err, file, 24, "counts other rows or markers than its sources");
    for (size_t k = 0, bad; k < nsources && s == TELLER_OK; k++) {
        if ((bad = take_rows(buf, rows_at, ids, nstr, &got[k])) || (bad = take_marks(buf, marks_at, ids, nstr, &got[k])))
            s = damaged(err, file, bad - 1, bad - 1 < marks_at ? "holds a row out of bounds" : "holds a step marker out of bounds");
        rows_at += got[k].nrows * sizeof(wire_row);
        marks_at += got[k].nmarks * sizeof(wire_mark);
    }
    if (s == TELLER_OK) {
        for (size_t k = 0; k < nsources; k++) {
            free(sr[s0 + k].rows);
            free(sr[s0 + k].marks);
            sr[s0 + k] = got[k];
        }
        free(got);
        got = NULL;
    }
done:
    teller_source_summary_free(got, nsources);
    free(ids);
    return s;
}
