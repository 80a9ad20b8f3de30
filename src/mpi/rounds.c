/*
 * rounds.c - the steps process 0 sends each reader once the run is built,
 * and the cells the reader answers with (rounds.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rounds.h"
#include "../tree/tree_internal.h"

#define STEPS_MAGIC 0x31707473726c6c74ull /* "tllrstp1" */
#define CELLS_MAGIC 0x316c6563726c6c74ull /* "tllrcel1" */

/* A step row as it crosses: no padding, so no byte of it is left unwritten. */
typedef struct wire_span {
    int64_t  start, end;
    uint32_t step, zero;
} wire_span;
_Static_assert(sizeof(wire_span) == 24, "wire_span has no padding");
_Static_assert(sizeof(teller_step_cell) == 56, "teller_step_cell has no padding");

/* The clock offset of source s's node: what the build subtracted from its
 * events. */
static int64_t source_offset(const teller_store *st, uint32_t s)
{
    const teller_node *nd = teller_store_nodes(st);
    for (size_t k = 0; k < teller_store_num_nodes(st); k++)
        if (nd[k].node == teller_store_source_c(st, s)->node)
            return nd[k].offset_ns;
    return 0;
}

void *teller_steps_pack(const teller_store *st, size_t s0, size_t nsrc, size_t *n)
{
    size_t rows = 0, count;
    for (size_t s = s0; s < s0 + nsrc; s++) {
        teller_tree_spans(st, teller_store_source_c(st, (uint32_t)s)->rank, &count);
        rows += count;
    }
    *n = 3 * sizeof(uint64_t) + nsrc * 2 * sizeof(uint64_t) + rows * sizeof(wire_span);
    char *buf = malloc(*n), *p = buf;
    if (!buf)
        return NULL;
    uint64_t head[3] = {STEPS_MAGIC, teller_store_step_count(st), nsrc};
    memcpy(p, head, sizeof head);
    p += sizeof head;
    for (size_t s = s0; s < s0 + nsrc; s++) {
        const teller_step *rk = teller_tree_spans(st, teller_store_source_c(st, (uint32_t)s)->rank, &count);
        uint64_t src[2] = {(uint64_t)source_offset(st, (uint32_t)s), count};
        memcpy(p, src, sizeof src);
        p += sizeof src;
        for (size_t k = 0; k < count; k++, p += sizeof(wire_span))
            memcpy(p, &(wire_span){rk[k].start_ns, rk[k].end_ns, rk[k].step, 0}, sizeof(wire_span));
    }
    return buf;
}

static teller_status damaged(teller_error *err, const char *what, size_t off, const char *msg)
{
    return teller_error_set(err, TELLER_ERR_FORMAT, what, off, "%s", msg);
}

/* Whether a row's span can be one the build made: an event's start or
 * end (teller_time_ok's bounds), a rank's span of them without a marker,
 * moved by a clock offset of at most a quarter of TELLER_TIME_MAX. */
static int span_ok(int64_t start, int64_t end)
{
    return start >= -TELLER_TIME_MAX / 2 && end >= start && end <= TELLER_TIME_MAX / 2 * 3;
}

/* Whether count elements of size bytes fit in the n - *off bytes left;
 * moves *off past them when they do. */
static int fits(size_t n, size_t *off, uint64_t count, size_t size)
{
    if (count > (n - *off) / size)
        return 0;
    *off += (size_t)count * size;
    return 1;
}

/* Checks the steps buf (n bytes) for nsrc sources; on success their rows
 * in *rows. */
static teller_status steps_check(const char *buf, size_t n, size_t nsrc, size_t *rows, teller_error *err)
{
    const char *what = "(steps from process 0)";
    uint64_t head[3];
    if (n < sizeof head)
        return damaged(err, what, 0, "cut short before its counts");
    memcpy(head, buf, sizeof head);
    if (head[0] != STEPS_MAGIC)
        return damaged(err, what, 0, "not teller-mpi steps (bad magic)");
    if (head[1] > UINT32_MAX || head[2] != nsrc)
        return damaged(err, what, 8, "counts other steps or sources than this process holds");
    size_t off = sizeof head;
    *rows = 0;
    for (size_t s = 0; s < nsrc; s++) {
        uint64_t src[2];
        size_t at = off;
        if (!fits(n, &off, 2, sizeof(uint64_t)))
            return damaged(err, what, at, "cut short in a source's counts");
        memcpy(src, buf + at, sizeof src);
        int64_t offset = (int64_t)src[0];
        if (offset < -TELLER_TIME_MAX / 4 || offset > TELLER_TIME_MAX / 4)
            return damaged(err, what, at, "a clock offset out of bounds");
        at = off;
        if (!fits(n, &off, src[1], sizeof(wire_span)))
            return damaged(err, what, at, "counts more rows than it holds");
        *rows += src[1];
        wire_span prev = {0};
        for (uint64_t k = 0; k < src[1]; k++, at += sizeof(wire_span)) {
            wire_span w;
            memcpy(&w, buf + at, sizeof w);
            if (!span_ok(w.start, w.end) || w.step >= head[1] || w.zero)
                return damaged(err, what, at, "a row's times or step out of bounds");
            if (k > 0 && (w.start < prev.start || w.step <= prev.step)) /* stamping searches them */
                return damaged(err, what, at, "rows out of order");
            prev = w;
        }
    }
    if (off != n)
        return damaged(err, what, off, "bytes past its end");
    return TELLER_OK;
}

teller_status teller_steps_answer(teller_store *const *stores, size_t nstores, const void *buf, size_t n, void **out,
                                  size_t *nout, teller_error *err)
{
    size_t nsrc = 0, rows = 0;
    for (size_t f = 0; f < nstores; f++)
        nsrc += stores[f] ? teller_store_num_sources(stores[f]) : 0;
    teller_status s = steps_check(buf, n, nsrc, &rows, err);
    if (s != TELLER_OK)
        return s;
    /* the rows bound the answer: cells, one per row, in the rows' order */
    *nout = 3 * sizeof(uint64_t) + rows * sizeof(teller_step_cell);
    char *ans = malloc(*nout), *a = ans + 3 * sizeof(uint64_t);
    const char *p = (const char *)buf + 3 * sizeof(uint64_t);
    if (!ans)
        return teller_error_set(err, TELLER_ERR_NOMEM, "(steps from process 0)", 0, "out of memory");
    memcpy(ans, (uint64_t[3]){CELLS_MAGIC, rows, nsrc}, 3 * sizeof(uint64_t));
    for (size_t f = 0; f < nstores && s == TELLER_OK; f++)
        for (uint32_t q = 0; stores[f] && q < teller_store_num_sources(stores[f]) && s == TELLER_OK; q++) {
            uint64_t src[2];
            memcpy(src, p, sizeof src);
            p += sizeof src;
            teller_step *rk = malloc((src[1] ? src[1] : 1) * sizeof *rk);
            uint32_t *steps = malloc((src[1] ? src[1] : 1) * sizeof *steps);
            for (uint64_t k = 0; rk && steps && k < src[1]; k++, p += sizeof(wire_span)) {
                wire_span w;
                memcpy(&w, p, sizeof w);
                rk[k] = (teller_step){w.step, teller_store_source_c(stores[f], q)->rank, TELLER_NONE, w.start, w.end};
                steps[k] = w.step;
            }
            if (rk && steps)
                teller_tree_stamp(stores[f], q, (int64_t)src[0], rk, src[1]);
            /* straight into the answer: its cells start 8-byte aligned */
            if (!rk || !steps || teller_step_cells_of(stores[f], q, steps, (uint32_t)src[1], (teller_step_cell *)a, 1))
                s = teller_error_set(err, TELLER_ERR_NOMEM, "(steps from process 0)", 0, "out of memory");
            a += src[1] * sizeof(teller_step_cell);
            free(rk);
            free(steps);
        }
    if (s != TELLER_OK) {
        free(ans);
        return s;
    }
    *out = ans;
    return TELLER_OK;
}

/* Whether cell c of a source of `events` events is in bounds. */
static int cell_ok(const teller_step_cell *c, uint32_t events)
{
    return c->kernel_ns >= 0 && c->comm_ns >= 0 && c->memcpy_ns >= 0 && c->gpu_busy_ns >= 0 && c->profiler_ns >= 0 &&
           c->kernels <= events && c->launches <= events && c->unlaunched <= c->launches && !c->pad;
}

teller_status teller_cells_take(teller_store *st, size_t s0, size_t nsrc, const void *buf, size_t n, int from,
                                teller_error *err)
{
    char what[64];
    snprintf(what, sizeof what, "(cells from process %d)", from);
    size_t rows = 0, count;
    for (size_t q = s0; q < s0 + nsrc; q++) {
        teller_tree_spans(st, teller_store_source_c(st, (uint32_t)q)->rank, &count);
        rows += count;
    }
    uint64_t head[3];
    if (n < sizeof head)
        return damaged(err, what, 0, "cut short before its counts");
    memcpy(head, buf, sizeof head);
    if (head[0] != CELLS_MAGIC)
        return damaged(err, what, 0, "not teller-mpi cells (bad magic)");
    if (head[1] != rows || head[2] != nsrc)
        return damaged(err, what, 8, "counts other rows or sources than the run gave it");
    if (n - sizeof head != rows * sizeof(teller_step_cell)) /* the store's counts: no overflow */
        return damaged(err, what, sizeof head, "not as many cells as it counts");
    uint32_t nsteps = teller_store_step_count(st);
    size_t at = sizeof head;
    teller_step_cell *own = malloc(((size_t)nsteps + 1) * sizeof *own), *got = calloc((size_t)nsteps * nsrc + 1, sizeof *got);
    teller_status s = own && got ? TELLER_OK : teller_error_set(err, TELLER_ERR_NOMEM, what, 0, "out of memory");
    for (size_t q = s0; q < s0 + nsrc && s == TELLER_OK; q++) {
        const teller_source *so = teller_store_source_c(st, (uint32_t)q);
        const teller_step *rk = teller_tree_spans(st, so->rank, &count);
        teller_step_cell *mine = got + (q - s0) * nsteps; /* its steps' cells, a step without a row none */
        for (size_t k = 0; k < count && s == TELLER_OK; k++, at += sizeof(teller_step_cell)) {
            memcpy(&mine[rk[k].step], (const char *)buf + at, sizeof *mine);
            if (!cell_ok(&mine[rk[k].step], so->num_events))
                s = damaged(err, what, at, "a cell out of bounds");
        }
        /* process 0 still holds the events: the cells must be theirs */
        if (s == TELLER_OK && teller_step_cells_of(st, (uint32_t)q, NULL, nsteps, own, 1))
            s = teller_error_set(err, TELLER_ERR_NOMEM, what, 0, "out of memory");
        for (uint32_t k = 0; k < nsteps && s == TELLER_OK; k++)
            if (memcmp(&mine[k], &own[k], sizeof *own))
                s = teller_error_set(err, TELLER_ERR_FORMAT, teller_store_str(st, so->path), 0,
                                     "the cells of step %u from process %d are not its events'", k, from);
    }
    for (size_t q = s0; q < s0 + nsrc && s == TELLER_OK; q++)
        if (teller_step_cells_give(st, (uint32_t)q, got + (q - s0) * nsteps))
            s = teller_error_set(err, TELLER_ERR_NOMEM, what, 0, "out of memory");
    free(own);
    free(got);
    return s;
}
