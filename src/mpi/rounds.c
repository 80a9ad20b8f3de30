/*
 * rounds.c - the steps process 0's build sends each reader once it has
 * cut them, and the reader's answer: the steps' GPU ends, its
 * communication kernels' steps and its cells (rounds.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rounds.h"

#define STEPS_MAGIC 0x31707473726c6c74ull /* "tllrstp1" */
#define ANSWER_MAGIC 0x31736e61726c6c74ull /* "tllrans1" */
#define UNMARKED_Q_MAGIC 0x31716e75726c6c74ull /* "tllrunq1" */
#define UNMARKED_A_MAGIC 0x31616e75726c6c74ull /* "tllruna1" */

/* A step row as it crosses: no padding, so no byte of it is left unwritten. */
typedef struct wire_span {
    int64_t  start, end;
    uint32_t step, zero;
} wire_span;
_Static_assert(sizeof(wire_span) == 24, "wire_span has no padding");
_Static_assert(sizeof(teller_step_cell) == 64, "teller_step_cell has no padding");

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

static teller_status damaged(teller_error *err, const char *what, size_t off, const char *msg)
{
    return teller_error_set(err, TELLER_ERR_FORMAT, what, off, "%s", msg);
}

/* Reads the first `words` 64-bit words of buf (n bytes) into head, the
 * first of them its magic number: a buffer too short for them, or of
 * another magic (`kind` names what it should be), is refused. */
static teller_status head_read(const void *buf, size_t n, uint64_t *head, size_t words, uint64_t magic,
                               const char *kind, const char *what, teller_error *err)
{
    if (n < words * sizeof *head)
        return damaged(err, what, 0, "cut short before its counts");
    memcpy(head, buf, words * sizeof *head);
    return head[0] == magic ? TELLER_OK
                            : teller_error_set(err, TELLER_ERR_FORMAT, what, 0, "not %s (bad magic)", kind);
}

/* Whether a first start and last end on a source's own clock can be its
 * events': none (INT64_MAX, INT64_MIN: when none may be), or a start and
 * an end a trace's events keep, in order. */
static int own_span_ok(int64_t first, int64_t end, int none_ok)
{
    if (first == INT64_MAX && end == INT64_MIN)
        return none_ok;
    return first >= -TELLER_TIME_MAX / 4 && first <= end && end <= TELLER_TIME_MAX / 4 * 5;
}

void *teller_unmarked_pack(const teller_store *st, size_t s0, size_t nsrc, const int64_t *last, size_t *n)
{
    *n = 2 * sizeof(uint64_t) + nsrc * sizeof(int64_t);
    char *buf = malloc(*n);
    if (!buf)
        return NULL;
    char *p = buf + 2 * sizeof(uint64_t);
    memcpy(buf, (uint64_t[2]){UNMARKED_Q_MAGIC, nsrc}, 2 * sizeof(uint64_t));
    for (size_t s = s0; s < s0 + nsrc; s++, p += sizeof(int64_t)) {
        int64_t own = last[s] == INT64_MIN ? INT64_MIN : last[s] + source_offset(st, (uint32_t)s);
        memcpy(p, &own, sizeof own);
    }
    return buf;
}

teller_status teller_unmarked_answer(teller_store *const *stores, size_t nstores, const void *buf, size_t n,
                                     void **out, size_t *nout, teller_error *err)
{
    const char *what = "(question from process 0)";
    size_t nsrc = 0;
    for (size_t f = 0; f < nstores; f++)
        nsrc += stores[f] ? teller_store_num_sources(stores[f]) : 0;
    uint64_t head[2];
    teller_status s = head_read(buf, n, head, 2, UNMARKED_Q_MAGIC, "a teller-mpi question", what, err);
    if (s != TELLER_OK)
        return s;
    if (head[1] != nsrc)
        return damaged(err, what, 8, "counts other sources than this process holds");
    if (n != sizeof head + nsrc * sizeof(int64_t))
        return damaged(err, what, sizeof head, "not one step end per source");
    *nout = sizeof head + nsrc * 5 * sizeof(int64_t);
    char *ans = malloc(*nout);
    if (!ans)
        return teller_error_set(err, TELLER_ERR_NOMEM, what, 0, "out of memory");
    char *a = ans + sizeof head;
    const char *p = (const char *)buf + sizeof head;
    memcpy(ans, (uint64_t[2]){UNMARKED_A_MAGIC, nsrc}, sizeof head);
    for (size_t f = 0; f < nstores; f++)
        for (uint32_t q = 0; stores[f] && q < teller_store_num_sources(stores[f]); q++) {
            int64_t last, span[5];
            memcpy(&last, p, sizeof last); /* compared with, never moved: any value is safe */
            p += sizeof last;
            teller_tree_unmarked(stores[f], q, last, span);
            memcpy(a, span, sizeof span);
            a += sizeof span;
        }
    *out = ans;
    return TELLER_OK;
}

teller_status teller_unmarked_take(const teller_store *st, size_t s0, size_t nsrc, const void *buf, size_t n, int from,
                                   int64_t (*span)[5], teller_error *err)
{
    char what[64];
    snprintf(what, sizeof what, "(answer from process %d)", from);
    uint64_t head[2];
    teller_status s = head_read(buf, n, head, 2, UNMARKED_A_MAGIC, "a teller-mpi answer", what, err);
    if (s != TELLER_OK)
        return s;
    if (head[1] != nsrc)
        return damaged(err, what, 8, "counts other sources than the run gave it");
    if (n != sizeof head + nsrc * 5 * sizeof(int64_t))
        return damaged(err, what, sizeof head, "not one span per source");
    for (size_t q = 0, at = sizeof head; q < nsrc; q++, at += 5 * sizeof(int64_t)) {
        int64_t v[5];
        memcpy(v, (const char *)buf + at, sizeof v);
        if (!own_span_ok(v[0], v[1], v[2] == 0) || (v[2] != 0 && v[2] != 1) || !own_span_ok(v[3], v[4], 1))
            return damaged(err, what, at, "a span out of bounds");
    }
    for (size_t q = 0, at = sizeof head; q < nsrc; q++, at += 5 * sizeof(int64_t)) {
        int64_t *v = span[s0 + q], off = source_offset(st, (uint32_t)(s0 + q));
        memcpy(v, (const char *)buf + at, 5 * sizeof *v);
        for (int w = 0; w < 5; w += 3) /* onto node 0's clock */
            if (v[w] <= v[w + 1]) {
                v[w] -= off;
                v[w + 1] -= off;
            }
    }
    return TELLER_OK;
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
    teller_status s = head_read(buf, n, head, 3, STEPS_MAGIC, "teller-mpi steps", what, err);
    if (s != TELLER_OK)
        return s;
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

/* Whether event i is a communication kernel: a row of its source. */
static int comm_kernel(const teller_events *ev, size_t i)
{
    return ev->layer[i] == TELLER_LAYER_KERNEL && (ev->flags[i] & TELLER_F_COMM);
}

/* Source q's communication kernels (its rows, in event order). */
static uint64_t comm_kernels(const teller_store *st, uint32_t q)
{
    const teller_events *ev = teller_store_events(st);
    const teller_source *so = teller_store_source_c(st, q);
    uint64_t n = 0;
    for (size_t i = so->first_event; i < (size_t)so->first_event + so->num_events; i++)
        n += comm_kernel(ev, i);
    return n;
}

/* A source's part of the answer: its communication kernels' count, then
 * per row a cell and an end, then per kernel its step, to 8 bytes. */
static size_t part_size(uint64_t rows, uint64_t ncomm)
{
    return sizeof(uint64_t) + (size_t)rows * (sizeof(teller_step_cell) + sizeof(int64_t)) +
           ((size_t)ncomm * sizeof(uint32_t) + 7) / 8 * 8;
}

/* Source q's part of the answer at a, its events moved and stamped with
 * the count rows of wire at p. 0, or -1 out of memory. */
static int answer_source(teller_store *st, uint32_t q, const char *p, uint64_t offset, uint64_t count,
                         uint64_t ncomm, char *a)
{
    teller_step *rk = malloc((count ? count : 1) * sizeof *rk);
    uint32_t *steps = malloc((count ? count : 1) * sizeof *steps);
    int64_t *end = malloc((count ? count : 1) * sizeof *end);
    teller_step_cell *cells = malloc((count ? count : 1) * sizeof *cells);
    int rc = -1;
    if (!rk || !steps || !end || !cells)
        goto done;
    for (uint64_t k = 0; k < count; k++, p += sizeof(wire_span)) {
        wire_span w;
        memcpy(&w, p, sizeof w);
        rk[k] = (teller_step){w.step, teller_store_source_c(st, q)->rank, TELLER_NONE, w.start, w.end};
        steps[k] = w.step;
    }
    teller_tree_stamp(st, q, (int64_t)offset, rk, count, end);
    if (teller_step_cells_of(st, q, steps, (uint32_t)count, cells, 1))
        goto done;
    memcpy(a, &ncomm, sizeof ncomm);
    a += sizeof ncomm;
    for (uint64_t k = 0; k < count; k++) {
        memcpy(a, &cells[k], sizeof *cells);
        memcpy(a + sizeof *cells, &end[k], sizeof *end);
        a += sizeof *cells + sizeof *end;
    }
    const teller_events *ev = teller_store_events(st);
    const teller_source *so = teller_store_source_c(st, q);
    uint64_t c = 0;
    for (size_t i = so->first_event; i < (size_t)so->first_event + so->num_events; i++)
        if (comm_kernel(ev, i))
            memcpy(a + c++ * sizeof(uint32_t), &ev->step[i], sizeof(uint32_t));
    memset(a + c * sizeof(uint32_t), 0, part_size(count, ncomm) - part_size(count, 0) - c * sizeof(uint32_t));
    rc = 0;
done:
    free(rk);
    free(steps);
    free(end);
    free(cells);
    return rc;
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
    /* the rows bound the answer: a cell and an end each, in the rows' order */
    const char *p = (const char *)buf + 3 * sizeof(uint64_t);
    *nout = 3 * sizeof(uint64_t);
    for (size_t f = 0; f < nstores; f++)
        for (uint32_t q = 0; stores[f] && q < teller_store_num_sources(stores[f]); q++) {
            uint64_t src[2];
            memcpy(src, p, sizeof src);
            p += sizeof src + src[1] * sizeof(wire_span);
            *nout += part_size(src[1], comm_kernels(stores[f], q));
        }
    char *ans = malloc(*nout);
    if (!ans)
        return teller_error_set(err, TELLER_ERR_NOMEM, "(steps from process 0)", 0, "out of memory");
    char *a = ans + 3 * sizeof(uint64_t);
    memcpy(ans, (uint64_t[3]){ANSWER_MAGIC, rows, nsrc}, 3 * sizeof(uint64_t));
    p = (const char *)buf + 3 * sizeof(uint64_t);
    for (size_t f = 0; f < nstores && s == TELLER_OK; f++)
        for (uint32_t q = 0; stores[f] && q < teller_store_num_sources(stores[f]) && s == TELLER_OK; q++) {
            uint64_t src[2], ncomm = comm_kernels(stores[f], q);
            memcpy(src, p, sizeof src);
            p += sizeof src;
            if (answer_source(stores[f], q, p, src[0], src[1], ncomm, a))
                s = teller_error_set(err, TELLER_ERR_NOMEM, "(steps from process 0)", 0, "out of memory");
            p += src[1] * sizeof(wire_span);
            a += part_size(src[1], ncomm);
        }
    if (s != TELLER_OK) {
        free(ans);
        return s;
    }
    *out = ans;
    return TELLER_OK;
}

/* Whether a row's GPU work's end, or a cell's queued end, can be one
 * stamping found: none, or an event's end moved by a clock offset
 * (span_ok's bounds). */
static int end_ok(int64_t e) { return e == INT64_MIN || span_ok(e, e); }

/* Whether cell c of a source of `events` events is in bounds. */
static int cell_ok(const teller_step_cell *c, uint32_t events)
{
    return c->kernel_ns >= 0 && c->comm_ns >= 0 && c->memcpy_ns >= 0 && c->gpu_busy_ns >= 0 && c->profiler_ns >= 0 &&
           c->kernels <= events && c->launches <= events && c->unlaunched <= c->launches && !c->pad &&
           end_ok(c->queued_end);
}

/* Checks the answer buf (n bytes) for st's sources [s0, s0 + nsrc), their
 * rows sr, each with room for its ends in end (NULL: not asked about). */
static teller_status answer_check(const teller_store *st, size_t s0, size_t nsrc, const teller_source_summary *sr,
                                  int64_t *const *end, const char *buf, size_t n, const char *what, teller_error *err)
{
    size_t rows = 0, count;
    for (size_t q = s0; q < s0 + nsrc; q++) {
        teller_tree_spans(st, teller_store_source_c(st, (uint32_t)q)->rank, &count);
        rows += count;
    }
    uint64_t head[3];
    teller_status s = head_read(buf, n, head, 3, ANSWER_MAGIC, "a teller-mpi answer", what, err);
    if (s != TELLER_OK)
        return s;
    if (head[1] != rows || head[2] != nsrc)
        return damaged(err, what, 8, "counts other rows or sources than the run gave it");
    size_t at = sizeof head;
    uint32_t nsteps = teller_store_step_count(st);
    for (size_t q = s0; q < s0 + nsrc; q++) {
        const teller_source *so = teller_store_source_c(st, (uint32_t)q);
        teller_tree_spans(st, so->rank, &count);
        uint64_t ncomm;
        if (!end[q])
            return damaged(err, what, at, "answers for a source the build did not ask about");
        if (n - at < sizeof ncomm)
            return damaged(err, what, at, "cut short in a source's count");
        memcpy(&ncomm, buf + at, sizeof ncomm);
        if (ncomm != sr[q].nrows)
            return damaged(err, what, at, "counts other communication kernels than the source's summary");
        if (n - at < part_size(count, ncomm))
            return damaged(err, what, at, "cut short in a source's cells or steps");
        at += sizeof ncomm;
        for (size_t k = 0; k < count; k++, at += sizeof(teller_step_cell) + sizeof(int64_t)) {
            teller_step_cell c;
            int64_t e;
            memcpy(&c, buf + at, sizeof c);
            memcpy(&e, buf + at + sizeof c, sizeof e);
            if (!cell_ok(&c, so->num_events))
                return damaged(err, what, at, "a cell out of bounds");
            if (!end_ok(e))
                return damaged(err, what, at + sizeof c, "a row's end out of bounds");
        }
        for (size_t r = 0; r < ncomm; r++, at += sizeof(uint32_t)) {
            uint32_t k;
            memcpy(&k, buf + at, sizeof k);
            if (k >= nsteps && k != TELLER_NONE)
                return damaged(err, what, at, "a kernel's step out of bounds");
        }
        for (; at % 8; at++)
            if (buf[at])
                return damaged(err, what, at, "a padding byte that is not 0");
    }
    if (at != n)
        return damaged(err, what, at, "bytes past its end");
    return TELLER_OK;
}

teller_status teller_stamps_take(teller_store *st, size_t s0, size_t nsrc, teller_source_summary *sr,
                                 int64_t *const *end, const void *buf, size_t n, int from, teller_error *err)
{
    char what[64];
    snprintf(what, sizeof what, "(answer from process %d)", from);
    teller_status s = answer_check(st, s0, nsrc, sr, end, buf, n, what, err);
    if (s != TELLER_OK)
        return s;
    uint32_t nsteps = teller_store_step_count(st);
    size_t at = 3 * sizeof(uint64_t), count;
    teller_step_cell *own = malloc(((size_t)nsteps + 1) * sizeof *own), *got = malloc(((size_t)nsteps * nsrc + 1) * sizeof *got);
    s = own && got ? TELLER_OK : teller_error_set(err, TELLER_ERR_NOMEM, what, 0, "out of memory");
    for (size_t k = 0; got && k < (size_t)nsteps * nsrc; k++) /* a step without a row: a cell of nothing */
        got[k] = (teller_step_cell){.queued_end = INT64_MIN};
    for (size_t q = s0; q < s0 + nsrc && s == TELLER_OK; q++) {
        const teller_source *so = teller_store_source_c(st, (uint32_t)q);
        const teller_step *rk = teller_tree_spans(st, so->rank, &count);
        teller_step_cell *mine = got + (q - s0) * nsteps; /* its steps' cells, a step without a row none */
        at += sizeof(uint64_t);
        for (size_t k = 0; k < count; k++, at += sizeof(teller_step_cell) + sizeof(int64_t)) {
            memcpy(&mine[rk[k].step], (const char *)buf + at, sizeof *mine);
            memcpy(&end[q][k], (const char *)buf + at + sizeof *mine, sizeof(int64_t));
        }
        for (size_t r = 0; r < sr[q].nrows; r++, at += sizeof(uint32_t))
            memcpy(&sr[q].rows[r].step, (const char *)buf + at, sizeof(uint32_t));
        at = (at + 7) / 8 * 8;
        /* process 0 still holds the events: the cells must be theirs */
        if (teller_step_cells_of(st, (uint32_t)q, NULL, nsteps, own, 1))
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

teller_status teller_question_answer(teller_store *const *stores, size_t nstores, const void *buf, size_t n,
                                     void **out, size_t *nout, teller_error *err)
{
    uint64_t magic = 0;
    if (n >= sizeof magic)
        memcpy(&magic, buf, sizeof magic);
    return magic == UNMARKED_Q_MAGIC ? teller_unmarked_answer(stores, nstores, buf, n, out, nout, err)
                                     : teller_steps_answer(stores, nstores, buf, n, out, nout, err);
}
