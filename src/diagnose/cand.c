/*
 * cand.c - the lists candidates go into (cand.h).
 */
#include <stdlib.h>
#include <string.h>

#include "cand.h"
#include "../util/vec.h"

int finds_add(finds *f, uint32_t step, const cand *c)
{
    if (TELLER_GROW(f->v, f->cap, f->n + 1))
        return -1;
    f->v[f->n].step = step;
    f->v[f->n++].c = *c;
    return 0;
}

int steps_add(step_acc *steps, uint32_t nsteps, uint32_t k, const cand *c)
{
    if (k >= nsteps)
        return 0;
    step_acc *s = &steps[k];
    if (TELLER_GROW(s->c, s->cap, s->n + 1))
        return -1;
    s->c[s->n++] = *c;
    return 0;
}

int steps_add_found(step_acc *steps, uint32_t nsteps, finds *f)
{
    int rc = 0;
    for (size_t i = 0; i < f->n && !rc; i++)
        rc = steps_add(steps, nsteps, f->v[i].step, &f->v[i].c);
    free(f->v);
    memset(f, 0, sizeof *f);
    return rc;
}

int merge_by_rank(const struct dctx *D, step_acc *s, teller_fault det, merge_fn fn)
{
    size_t *idx = NULL, cap = 0;
    for (size_t a = 0; a < s->n; a++) {
        if (s->c[a].det != det || s->c[a].reference)
            continue;
        size_t n = 0;
        for (size_t b = 0; b < s->n; b++) {
            if (s->c[b].det != det || s->c[b].rank != s->c[a].rank || s->c[b].reference)
                continue;
            if (TELLER_GROW(idx, cap, n + 1)) {
                free(idx);
                return -1;
            }
            idx[n++] = b;
        }
        size_t keep = fn(D, s->c, idx, n);
        if (keep == SIZE_MAX)
            continue;
        for (size_t q = 0; q < n; q++)
            if (idx[q] != keep)
                s->c[idx[q]].det = TELLER_FAULT_NONE;
    }
    free(idx);
    return 0;
}
