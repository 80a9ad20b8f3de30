/*
 * consist.c - the checks a rewritten trace must still pass (perturb.h):
 * nesting on CPU threads, launch before GPU op, stream order, and
 * collectives that end only after their last member arrived. The tree
 * build made the links (parents, launches, collective members); this file
 * only measures times against them.
 */
#include "teller/perturb.h"

static int is_op(const teller_events *ev, size_t i)
{
    return (ev->flags[i] & TELLER_F_GPU) && teller_layer_is_gpu_work(ev->layer[i]);
}

void teller_consistency_check(const teller_store *st, const int64_t *start, const int64_t *dur,
                              teller_consistency *out)
{
    const teller_events *ev = teller_store_events(st);
    const int64_t *S = start ? start : ev->start_ns, *D = dur ? dur : ev->dur_ns;
    *out = (teller_consistency){0};
    size_t prev = SIZE_MAX; /* previous GPU op of the current GPU row */
    for (size_t i = 0; i < ev->n; i++) {
        uint32_t p = ev->parent[i];
        int gpu = (ev->flags[i] & TELLER_F_GPU) != 0;
        if (p != TELLER_NONE && !gpu) {
            if (S[i] < S[p] || S[i] + D[i] > S[p] + D[p])
                out->nesting++;
        }
        if (p != TELLER_NONE && is_op(ev, i) && !(ev->flags[p] & TELLER_F_GPU) && S[i] < S[p])
            out->launch++;
        /* rows are contiguous after the tree build: a new row resets prev */
        if (i > 0 && (ev->source[i] != ev->source[i - 1] || ev->track[i] != ev->track[i - 1] ||
                      ((ev->flags[i] ^ ev->flags[i - 1]) & TELLER_F_GPU)))
            prev = SIZE_MAX;
        if (is_op(ev, i)) {
            if (prev != SIZE_MAX && S[i] < S[prev] + D[prev])
                out->stream_order++;
            prev = i;
        }
    }
    const teller_collective *co = teller_store_collectives(st);
    const teller_coll_member *mem = teller_store_coll_members(st);
    for (size_t c = 0; c < teller_store_num_collectives(st); c++) {
        int64_t last = INT64_MIN;
        for (uint32_t j = 0; j < co[c].num_members; j++) {
            uint32_t k = mem[co[c].first_member + j].kernel;
            if (S[k] > last)
                last = S[k];
        }
        for (uint32_t j = 0; j < co[c].num_members; j++) {
            uint32_t k = mem[co[c].first_member + j].kernel;
            out->collective += S[k] + D[k] < last;
        }
    }
}
