/*
 * steps.c - per-step, per-rank time accounting over a built store:
 * kernel, communication and copy time, and GPU idle time as the step
 * window minus the union of GPU work over every stream. Each source's
 * part is found from its own events (teller_step_cells_of), one cell per
 * step; the summaries read the cells of the step table's rows.
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

int teller_step_cells_of(const teller_store *st, uint32_t s, const uint32_t *steps, uint32_t nsteps,
                         teller_step_cell *cells, size_t stride)
{
    const teller_events *ev = teller_store_events(st);
    const teller_source *so = teller_store_source_c(st, s);
    cell_scan C = {st, s, so->first_event, so->num_events, steps, nsteps, cells, stride};
    if (C.q > ev->n || C.n > ev->n - C.q)
        C.q = C.n = 0;
    for (uint32_t k = 0; k < nsteps; k++)
        cells[k * stride] = (teller_step_cell){0};
    uint8_t *launch = calloc(teller_store_num_strings(st) + 1, 1);
    ival *iv = NULL;
    size_t niv = 0, icap = 0;
    if (!launch)
        return -1;
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
    /* each step's GPU busy time: the union of its operations' spans */
    teller_sort(iv, niv, sizeof *iv, ival_cmp);
    for (size_t a = 0, b; a < niv; a = b) {
        int64_t busy = 0, cs = iv[a].s, ce = iv[a].e;
        for (b = a + 1; b < niv && iv[b].step == iv[a].step; b++) {
            if (iv[b].s > ce) {
                busy += ce - cs;
                cs = iv[b].s;
                ce = iv[b].e;
            } else if (iv[b].e > ce) {
                ce = iv[b].e;
            }
        }
        cells[iv[a].step * stride].gpu_busy_ns = busy + ce - cs;
    }
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

teller_status teller_step_summaries(const teller_store *st, teller_step_summary **out, size_t *nout,
                                    teller_error *err)
{
    size_t n = teller_store_num_steps(st), nsrc = teller_store_num_sources(st);
    const teller_step *steps = teller_store_steps(st);
    uint32_t nsteps = teller_store_step_count(st);
    teller_step_summary *sum = calloc(n ? n : 1, sizeof *sum);
    teller_step_cell *cells = malloc(((size_t)nsteps * nsrc + 1) * sizeof *cells);
    int bad = !sum || !cells;
    for (uint32_t s = 0; s < nsrc && !bad; s++)
        bad = teller_step_cells(st, s, nsteps, cells);
    if (bad) {
        free(sum);
        free(cells);
        return teller_error_set(err, TELLER_ERR_NOMEM, "(trace)", 0, "out of memory");
    }
    for (size_t k = 0; k < n; k++) {
        sum[k].step = steps[k].step;
        sum[k].rank = steps[k].rank;
        sum[k].start_ns = steps[k].start_ns;
        sum[k].dur_ns = steps[k].end_ns - steps[k].start_ns;
        int32_t q = teller_store_source_of_rank(st, steps[k].rank);
        const teller_source *so = q < 0 ? NULL : teller_store_source_c(st, (uint32_t)q);
        sum[k].node = so ? so->node : 0;
        sum[k].gpu_known = !so || !so->dropped;
        /* a source whose profiler dropped records lacks GPU work in every step */
        if (so && steps[k].step < nsteps) {
            const teller_step_cell *c = &cells[(size_t)steps[k].step * nsrc + (size_t)q];
            sum[k].kernel_ns = c->kernel_ns;
            sum[k].comm_ns = c->comm_ns;
            sum[k].memcpy_ns = c->memcpy_ns;
            sum[k].gpu_busy_ns = c->gpu_busy_ns;
            sum[k].kernels = c->kernels;
            sum[k].launches = c->launches;
            sum[k].unlaunched = c->unlaunched;
            sum[k].gpu_known = teller_step_cell_gpu_known(c, so);
        }
        int64_t idle = sum[k].dur_ns - sum[k].gpu_busy_ns;
        sum[k].gpu_idle_ns = idle > 0 ? idle : 0;
    }
    free(cells);
    *out = sum;
    *nout = n;
    return TELLER_OK;
}
