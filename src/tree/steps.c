/*
 * steps.c - per-step, per-rank time accounting over a built store:
 * kernel, communication and copy time, and GPU idle time as the step
 * window minus the union of GPU work over every stream, and how late its
 * GPU work ended for queueing behind earlier steps'. Each source's part is
 * found from its own events (teller_step_cells_of), one cell per step; the
 * summaries read the cells of the step table's rows.
 */
#include <stdlib.h>
#include <string.h>

#include "teller/tree.h"
#include "tree_internal.h"
#include "../store/store_internal.h"
#include "../util/vec.h"

/* One GPU operation of a source: its step's cell, start and end. */
typedef struct ival {
    uint32_t step;
    int64_t  s, e;
} ival;

static int ival_cmp(const void *a, const void *b)
{
    const ival *x = a, *y = b;
    if (x->step != y->step) return x->step < y->step ? -1 : 1;
    return x->s < y->s ? -1 : x->s > y->s;
}

/* The GPU busy time of iv[a]'s step, iv[0..n) sorted by ival_cmp: the
 * union of its operations' spans, iv[a, *b). */
static int64_t step_busy(const ival *iv, size_t n, size_t a, size_t *b)
{
    int64_t busy = 0, cs = iv[a].s, ce = iv[a].e;
    for (*b = a + 1; *b < n && iv[*b].step == iv[a].step; ++*b) {
        if (iv[*b].s > ce) {
            busy += ce - cs;
            cs = iv[*b].s;
            ce = iv[*b].e;
        } else if (iv[*b].e > ce) {
            ce = iv[*b].e;
        }
    }
    return busy + ce - cs;
}

/* Where a step's cell is: its index among steps[0..n) (ascending), or,
 * with steps NULL, the step itself when below n; UINT32_MAX nowhere. */
static uint32_t slot_of(const uint32_t *steps, uint32_t n, uint32_t step)
{
    if (!steps)
        return step < n ? step : UINT32_MAX;
    uint32_t lo = 0, hi = n;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (steps[mid] < step)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && steps[lo] == step ? lo : UINT32_MAX;
}

/* Source s's cells being found: its events [q, q + n), where each step's
 * cell is (slot_of), and the cells, stride apart. */
typedef struct cell_scan {
    const teller_store *st;
    uint32_t            s;
    size_t              q, n;
    const uint32_t     *steps;
    uint32_t            nsteps;
    teller_step_cell   *cells;
    size_t              stride;
} cell_scan;

/* The launch calls of the source's steps: each counted in its cell, and
 * those with no GPU work under them. launch: per string, 0 not yet asked,
 * 1 a launch, 2 not. */
static void count_launches(const cell_scan *C, uint8_t *launch)
{
    const teller_events *ev = teller_store_events(C->st);
    for (size_t i = C->q; i < C->q + C->n; i++) {
        if ((ev->layer[i] != TELLER_LAYER_RUNTIME && ev->layer[i] != TELLER_LAYER_DRIVER) || ev->source[i] != C->s)
            continue;
        uint32_t j = slot_of(C->steps, C->nsteps, ev->step[i]);
        if (j == UINT32_MAX)
            continue;
        uint8_t *l = &launch[ev->name[i]];
        if (!*l)
            *l = teller_name_is_launch(teller_store_str(C->st, ev->name[i])) ? 1 : 2;
        if (*l != 1)
            continue;
        int work = 0;
        for (uint32_t c = ev->first_child[i]; c != TELLER_NONE && !work; c = ev->next_sibling[c])
            work = (ev->flags[c] & TELLER_F_GPU) != 0;
        teller_step_cell *cell = &C->cells[j * C->stride];
        cell->launches++;
        cell->unlaunched += !work;
    }
}

/* The last operation seen on one stream (queued_ends). */
typedef struct lastop {
    int32_t  pid, tid;
    int64_t  end;
    uint32_t step;
    int64_t  delay; /* how much earlier it could have ended, had its step's predecessors ended earlier */
} lastop;

/* The delay a predecessor passes to an operation of step k: unbounded
 * from an earlier step's work (what an earlier end would change), else its
 * own (work of a later step, launched by another thread while this step's
 * still was, queues behind the same earlier work). */
static int64_t passed(const lastop *p, uint32_t k) { return p->step < k ? INT64_MAX : p->delay; }

/* Each cell's queued_end (teller_step_cell): walking the source's GPU work
 * in start order, an operation launched before the operation before it
 * on its stream ended (queued behind it), or that started when an
 * operation of another stream ended (it waited for it, TELLER_WAIT_NS),
 * could have started earlier by as much as that predecessor, down to its
 * launch call's end; work of an earlier step could have ended any
 * earlier. 0, or -1 out of memory. */
static int queued_ends(const cell_scan *C)
{
    const teller_events *ev = teller_store_events(C->st);
    size_t n = 0, nl = 0, lcap = 0;
    for (size_t i = C->q; i < C->q + C->n; i++) /* counted first: the ids are the GPU operations' */
        n += (ev->flags[i] & TELLER_F_GPU) && teller_layer_is_gpu_work(ev->layer[i]) &&
             slot_of(C->steps, C->nsteps, ev->step[i]) != UINT32_MAX;
    uint32_t *ids = malloc((n ? n : 1) * sizeof *ids), *tmp = malloc((n ? n : 1) * sizeof *tmp);
    lastop *ls = NULL;
    int rc = -1;
    if (!ids || !tmp)
        goto done;
    n = 0;
    for (size_t i = C->q; i < C->q + C->n; i++)
        if ((ev->flags[i] & TELLER_F_GPU) && teller_layer_is_gpu_work(ev->layer[i]) &&
            slot_of(C->steps, C->nsteps, ev->step[i]) != UINT32_MAX)
            ids[n++] = (uint32_t)i;
    teller_sort_by_key(ids, tmp, n, ev->start_ns);
    for (size_t k = 0; k < n; k++) {
        uint32_t i = ids[k], step = ev->step[i];
        int64_t start = ev->start_ns[i], end = start + ev->dur_ns[i], ready = teller_ready_ns(ev, i);
        int32_t pid = teller_event_pid(ev, i), tid = teller_event_tid(ev, i);
        int64_t from = -1; /* the delay its predecessors pass on; -1: it waited for none */
        size_t own = nl;
        for (size_t q = 0; q < nl; q++) {
            if (ls[q].pid == pid && ls[q].tid == tid) {
                own = q;
                if (ready < ls[q].end && passed(&ls[q], step) > from)
                    from = passed(&ls[q], step);
            } else if (ls[q].end >= start - TELLER_WAIT_NS - TELLER_ROUND_NS && ls[q].end <= start + TELLER_ROUND_NS &&
                       passed(&ls[q], step) > from) {
                from = passed(&ls[q], step);
            }
        }
        int64_t slack = start - ready, delay = from < 0 ? 0 : from < slack ? from : slack;
        if (own == nl) {
            if (TELLER_GROW(ls, lcap, nl + 1))
                goto done;
            nl++;
        }
        ls[own] = (lastop){pid, tid, end, step, delay};
        int64_t *q = &C->cells[slot_of(C->steps, C->nsteps, step) * C->stride].queued_end;
        if (end - delay > *q)
            *q = end - delay;
    }
    rc = 0;
done:
    free(ids);
    free(tmp);
    free(ls);
    return rc;
}

int teller_step_cells_of(const teller_store *st, uint32_t s, const uint32_t *steps, uint32_t nsteps,
                         teller_step_cell *cells, size_t stride)
{
    const teller_events *ev = teller_store_events(st);
    const teller_source *so = teller_store_source_c(st, s);
    cell_scan C = {st, s, so->first_event, so->num_events, steps, nsteps, cells, stride};
    if (C.q > ev->n || C.n > ev->n - C.q)
        C.q = C.n = 0;
    for (uint32_t k = 0; k < nsteps; k++)
        cells[k * stride] = (teller_step_cell){.queued_end = INT64_MIN};
    uint8_t *launch = calloc(teller_store_num_strings(st) + 1, 1);
    ival *iv = NULL;
    size_t niv = 0, icap = 0;
    if (!launch || queued_ends(&C)) {
        free(launch);
        return -1;
    }
    count_launches(&C, launch);
    free(launch);
    for (size_t i = C.q; i < C.q + C.n; i++) {
        uint32_t j = ev->source[i] == s ? slot_of(steps, nsteps, ev->step[i]) : UINT32_MAX;
        if (j == UINT32_MAX)
            continue;
        teller_step_cell *cell = &cells[j * stride];
        if ((ev->flags[i] & TELLER_F_PROFILER) && ev->dur_ns[i] > 0)
            cell->profiler_ns += ev->dur_ns[i];
        if (!(ev->flags[i] & TELLER_F_GPU) || !teller_layer_is_gpu_work(ev->layer[i]))
            continue;
        if (ev->layer[i] == TELLER_LAYER_KERNEL) {
            cell->kernels++;
            if (ev->flags[i] & TELLER_F_COMM)
                cell->comm_ns += ev->dur_ns[i];
            else
                cell->kernel_ns += ev->dur_ns[i];
        } else {
            cell->memcpy_ns += ev->dur_ns[i];
        }
        if (TELLER_GROW(iv, icap, niv + 1)) {
            free(iv);
            return -1;
        }
        iv[niv++] = (ival){j, ev->start_ns[i], ev->start_ns[i] + ev->dur_ns[i]};
    }
    teller_sort(iv, niv, sizeof *iv, ival_cmp);
    for (size_t a = 0, b; a < niv; a = b)
        cells[iv[a].step * stride].gpu_busy_ns = step_busy(iv, niv, a, &b);
    free(iv);
    return 0;
}

int teller_step_cells(const teller_store *st, uint32_t s, uint32_t nsteps, teller_step_cell *cells)
{
    if (!st->cells_given || !st->cells_given[s] || nsteps != st->step_count)
        return teller_step_cells_of(st, s, NULL, nsteps, cells + s, st->nsources);
    for (uint32_t k = 0; k < nsteps; k++)
        cells[(size_t)k * st->nsources + s] = st->cells[(size_t)k * st->nsources + s];
    return 0;
}

int teller_step_cells_give(teller_store *st, uint32_t s, const teller_step_cell *cells)
{
    size_t n = (size_t)st->step_count * st->nsources;
    if (!st->cells_given) {
        st->cells = malloc((n ? n : 1) * sizeof *st->cells);
        st->cells_given = calloc(st->nsources ? st->nsources : 1, 1);
        if (!st->cells || !st->cells_given) {
            free(st->cells);
            free(st->cells_given);
            st->cells = NULL;
            st->cells_given = NULL;
            return -1;
        }
    }
    for (uint32_t k = 0; k < st->step_count; k++)
        st->cells[(size_t)k * st->nsources + s] = cells[k];
    st->cells_given[s] = 1;
    return 0;
}

/* The sources of rank, ascending, among order[0..n) (the sources sorted
 * by rank, then index): the first, and in *count how many. */
static size_t rank_sources(const teller_store *st, const uint32_t *order, size_t n, int32_t rank, size_t *count)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (st->sources[order[mid]].rank < rank)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (*count = 0; lo + *count < n && st->sources[order[lo + *count]].rank == rank;)
        ++*count;
    return lo;
}

static int rank_cmp(const void *a, const void *b, void *ctx)
{
    const teller_store *st = ctx;
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    int32_t rx = st->sources[x].rank, ry = st->sources[y].rank;
    return rx != ry ? (rx < ry ? -1 : 1) : (x > y) - (x < y);
}

/* The sources sorted by rank, then index (malloc'd); NULL out of memory. */
static uint32_t *sources_by_rank(const teller_store *st)
{
    uint32_t *order = malloc((st->nsources ? st->nsources : 1) * sizeof *order);
    if (!order)
        return NULL;
    for (uint32_t q = 0; q < st->nsources; q++)
        order[q] = q;
    teller_sort_r(order, st->nsources, sizeof *order, rank_cmp, (void *)st);
    return order;
}

int teller_step_rows(const teller_store *st, const teller_step_cell *cells, teller_step_cell *rows, uint8_t *known)
{
    size_t nsrc = st->nsources;
    uint32_t *order = sources_by_rank(st);
    if (!order)
        return -1;
    for (size_t r = 0; r < st->nsteps; r++) {
        const teller_step *row = &st->steps[r];
        size_t count, first = rank_sources(st, order, nsrc, row->rank, &count);
        int32_t q0 = teller_store_source_of_rank(st, row->rank);
        /* a source whose profiler dropped records lacks GPU work in every step */
        known[r] = q0 < 0 || !st->sources[q0].dropped;
        rows[r] = (teller_step_cell){0};
        for (size_t j = first; j < first + count && row->step < st->step_count; j++) {
            const teller_step_cell *c = &cells[(size_t)row->step * nsrc + order[j]];
            rows[r].kernel_ns += c->kernel_ns;
            rows[r].comm_ns += c->comm_ns;
            rows[r].memcpy_ns += c->memcpy_ns;
            rows[r].profiler_ns += c->profiler_ns;
            rows[r].gpu_busy_ns = count == 1 ? c->gpu_busy_ns : 0;
            rows[r].kernels += c->kernels;
            rows[r].launches += c->launches;
            rows[r].unlaunched += c->unlaunched;
        }
        known[r] &= !rows[r].unlaunched;
    }
    free(order);
    return 0;
}

/* A row index by its rank (then index), for the rows of a rank. */
static int row_rank_cmp(const void *a, const void *b, void *ctx)
{
    const teller_store *st = ctx;
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    int32_t rx = st->steps[x].rank, ry = st->steps[y].rank;
    return rx != ry ? (rx < ry ? -1 : 1) : (x > y) - (x < y);
}

/* The GPU busy time of the rows of a rank held by several sources (a file
 * named twice with --force, several processes of one rank in a file): the
 * union of their GPU work, which their cells cannot give, from their
 * events (one pass over each such source's). 0, or -1 out of memory. */
static int multi_busy(const teller_store *st, teller_step_cell *rows)
{
    const teller_events *ev = &st->ev;
    size_t nsrc = st->nsources, n = st->nsteps;
    uint32_t *order = sources_by_rank(st), *ridx = malloc((n + 1) * sizeof *ridx);
    int64_t *busy = malloc(((size_t)st->step_count + 1) * sizeof *busy);
    ival *iv = NULL;
    size_t icap = 0;
    int rc = order && ridx && busy ? 0 : -1;
    for (uint32_t r = 0; !rc && r < n; r++)
        ridx[r] = r;
    if (!rc)
        teller_sort_r(ridx, n, sizeof *ridx, row_rank_cmp, (void *)st);
    for (size_t j = 0, c = 1; !rc && j < nsrc; j += c) {
        int32_t rank = st->sources[order[j]].rank;
        for (c = 1; j + c < nsrc && st->sources[order[j + c]].rank == rank; c++)
            ;
        if (c < 2)
            continue;
        size_t niv = 0;
        for (size_t q = j; q < j + c && !rc; q++) {
            const teller_source *so = &st->sources[order[q]];
            for (size_t i = so->first_event; i < (size_t)so->first_event + so->num_events && i < ev->n && !rc; i++)
                if ((ev->flags[i] & TELLER_F_GPU) && teller_layer_is_gpu_work(ev->layer[i]) &&
                    ev->step[i] < st->step_count && !(rc = TELLER_GROW(iv, icap, niv + 1)))
                    iv[niv++] = (ival){ev->step[i], ev->start_ns[i], ev->start_ns[i] + ev->dur_ns[i]};
        }
        for (uint32_t k = 0; k < st->step_count; k++)
            busy[k] = 0;
        if (!rc)
            teller_sort(iv, niv, sizeof *iv, ival_cmp);
        for (size_t a = 0, b; !rc && a < niv; a = b)
            busy[iv[a].step] = step_busy(iv, niv, a, &b);
        size_t lo = 0, hi = n; /* the rank's rows in ridx */
        while (lo < hi) {
            size_t mid = (lo + hi) / 2;
            if (st->steps[ridx[mid]].rank < rank)
                lo = mid + 1;
            else
                hi = mid;
        }
        for (; !rc && lo < n && st->steps[ridx[lo]].rank == rank; lo++)
            if (st->steps[ridx[lo]].step < st->step_count)
                rows[ridx[lo]].gpu_busy_ns = busy[st->steps[ridx[lo]].step];
    }
    free(order);
    free(ridx);
    free(busy);
    free(iv);
    return rc;
}

teller_status teller_step_summaries(const teller_store *st, teller_step_summary **out, size_t *nout,
                                    teller_error *err)
{
    size_t n = teller_store_num_steps(st), nsrc = teller_store_num_sources(st);
    const teller_step *steps = teller_store_steps(st);
    uint32_t nsteps = teller_store_step_count(st);
    teller_step_summary *sum = calloc(n ? n : 1, sizeof *sum);
    teller_step_cell *cells = malloc(((size_t)nsteps * nsrc + 1) * sizeof *cells), *rows = malloc((n + 1) * sizeof *rows);
    uint8_t *known = malloc(n + 1);
    int bad = !sum || !cells || !rows || !known;
    for (uint32_t s = 0; s < nsrc && !bad; s++)
        bad = teller_step_cells(st, s, nsteps, cells);
    if (!bad)
        bad = teller_step_rows(st, cells, rows, known) || multi_busy(st, rows);
    free(cells);
    if (bad) {
        free(sum);
        free(rows);
        free(known);
        return teller_error_set(err, TELLER_ERR_NOMEM, "(trace)", 0, "out of memory");
    }
    for (size_t k = 0; k < n; k++) {
        int32_t q = teller_store_source_of_rank(st, steps[k].rank);
        sum[k] = (teller_step_summary){.step = steps[k].step,
                                       .rank = steps[k].rank,
                                       .node = q < 0 ? 0 : teller_store_source_c(st, (uint32_t)q)->node,
                                       .start_ns = steps[k].start_ns,
                                       .dur_ns = steps[k].end_ns - steps[k].start_ns,
                                       .kernel_ns = rows[k].kernel_ns,
                                       .comm_ns = rows[k].comm_ns,
                                       .memcpy_ns = rows[k].memcpy_ns,
                                       .gpu_busy_ns = rows[k].gpu_busy_ns,
                                       .kernels = rows[k].kernels,
                                       .launches = rows[k].launches,
                                       .unlaunched = rows[k].unlaunched,
                                       .gpu_known = known[k]};
        int64_t idle = sum[k].dur_ns - sum[k].gpu_busy_ns;
        sum[k].gpu_idle_ns = idle > 0 ? idle : 0;
    }
    free(rows);
    free(known);
    *out = sum;
    *nout = n;
    return TELLER_OK;
}
