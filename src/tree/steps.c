/*
 * steps.c - per-step, per-rank time accounting over a built store:
 * kernel, communication and copy time, and GPU idle time as the step
 * window minus the union of GPU work over every stream.
 */
#include <stdlib.h>
#include <string.h>

#include "teller/tree.h"
#include "../util/vec.h"

typedef struct ival {
    uint32_t row; /* index into the step table */
    int64_t  s, e;
} ival;

static int ival_cmp(const void *a, const void *b)
{
    const ival *x = a, *y = b;
    if (x->row != y->row) return x->row < y->row ? -1 : 1;
    return x->s < y->s ? -1 : x->s > y->s;
}

/* Row of (step, rank) in the step table, sorted by (step, rank). */
static size_t find_row(const teller_step *steps, size_t n, uint32_t step, int32_t rank)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (steps[mid].step < step || (steps[mid].step == step && steps[mid].rank < rank))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && steps[lo].step == step && steps[lo].rank == rank ? lo : n;
}

teller_status teller_step_summaries(const teller_store *st, teller_step_summary **out, size_t *nout,
                                    teller_error *err)
{
    size_t n = teller_store_num_steps(st);
    const teller_step *steps = teller_store_steps(st);
    const teller_events *ev = teller_store_events(st);
    teller_step_summary *sum = calloc(n ? n : 1, sizeof *sum);
    ival *iv = NULL;
    size_t niv = 0, icap = 0;
    if (!sum)
        return teller_error_set(err, TELLER_ERR_NOMEM, "(trace)", 0, "out of memory");
    for (size_t k = 0; k < n; k++) {
        sum[k].step = steps[k].step;
        sum[k].rank = steps[k].rank;
        sum[k].start_ns = steps[k].start_ns;
        sum[k].dur_ns = steps[k].end_ns - steps[k].start_ns;
        int32_t q = teller_store_source_of_rank(st, steps[k].rank);
        sum[k].node = q < 0 ? 0 : teller_store_source_c(st, (uint32_t)q)->node;
    }
    /* launches with no GPU work in the trace; a source whose profiler
     * dropped records lacks GPU work in every step */
    uint8_t *launch = calloc(teller_store_num_strings(st) + 1, 1); /* per name: 1 launch, 2 not */
    if (!launch) {
        free(sum);
        return teller_error_set(err, TELLER_ERR_NOMEM, "(trace)", 0, "out of memory");
    }
    for (size_t k = 0; k < n; k++) {
        int32_t q = teller_store_source_of_rank(st, steps[k].rank);
        sum[k].gpu_known = q < 0 || !teller_store_source_c(st, (uint32_t)q)->dropped;
    }
    for (size_t i = 0; i < ev->n; i++) {
        if ((ev->layer[i] != TELLER_LAYER_RUNTIME && ev->layer[i] != TELLER_LAYER_DRIVER) || ev->step[i] == TELLER_NONE)
            continue;
        uint8_t *l = &launch[ev->name[i]];
        if (!*l)
            *l = teller_name_is_launch(teller_store_str(st, ev->name[i])) ? 1 : 2;
        if (*l != 1)
            continue;
        size_t row = find_row(steps, n, ev->step[i], teller_store_event_rank(st, (uint32_t)i));
        if (row == n)
            continue;
        int work = 0;
        for (uint32_t c = ev->first_child[i]; c != TELLER_NONE && !work; c = ev->next_sibling[c])
            work = (ev->flags[c] & TELLER_F_GPU) != 0;
        sum[row].launches++;
        if (!work) {
            sum[row].unlaunched++;
            sum[row].gpu_known = 0;
        }
    }
    free(launch);
    for (size_t i = 0; i < ev->n; i++) {
        if (!(ev->flags[i] & TELLER_F_GPU) || ev->step[i] == TELLER_NONE || !teller_layer_is_gpu_work(ev->layer[i]))
            continue;
        int32_t rank = teller_store_event_rank(st, (uint32_t)i);
        size_t row = find_row(steps, n, ev->step[i], rank);
        if (row == n)
            continue;
        if (ev->layer[i] == TELLER_LAYER_KERNEL) {
            sum[row].kernels++;
            if (ev->flags[i] & TELLER_F_COMM)
                sum[row].comm_ns += ev->dur_ns[i];
            else
                sum[row].kernel_ns += ev->dur_ns[i];
        } else {
            sum[row].memcpy_ns += ev->dur_ns[i];
        }
        if (TELLER_GROW(iv, icap, niv + 1)) {
            free(sum);
            free(iv);
            return teller_error_set(err, TELLER_ERR_NOMEM, "(trace)", 0, "out of memory");
        }
        iv[niv++] = (ival){(uint32_t)row, ev->start_ns[i], ev->start_ns[i] + ev->dur_ns[i]};
    }
    teller_sort(iv, niv, sizeof *iv, ival_cmp);
    for (size_t a = 0; a < niv;) {
        uint32_t row = iv[a].row;
        int64_t busy = 0, cs = iv[a].s, ce = iv[a].e;
        size_t b = a + 1;
        for (; b < niv && iv[b].row == row; b++) {
            if (iv[b].s > ce) {
                busy += ce - cs;
                cs = iv[b].s;
                ce = iv[b].e;
            } else if (iv[b].e > ce) {
                ce = iv[b].e;
            }
        }
        busy += ce - cs;
        sum[row].gpu_busy_ns = busy;
        a = b;
    }
    for (size_t k = 0; k < n; k++) {
        int64_t idle = sum[k].dur_ns - sum[k].gpu_busy_ns;
        sum[k].gpu_idle_ns = idle > 0 ? idle : 0;
    }
    free(iv);
    *out = sum;
    *nout = n;
    return TELLER_OK;
}
