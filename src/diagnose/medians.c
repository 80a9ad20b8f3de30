/*
 * medians.c - run-wide medians from per-source parts (baseline.h): each
 * source's samples and counts under 64-bit keys are found from its own
 * events on the pool, then merged into each key's median over the run and
 * its count. The rows that judge every source against the whole run read
 * their run-wide input this way: API calls (apis.c), synchronizes'
 * overhangs (syncs.c), copies (copies.c).
 */
#include <stdlib.h>

#include "context.h"
#include "../util/pool.h"

int diag_part_add(diag_part *p, uint64_t key, double x) { return diag_groups_add(&p->g, key, x); }

int diag_part_count(diag_part *p, uint64_t key, size_t n)
{
    size_t *c = kmap_slot(&p->g.keys, key, (void **)&p->count, &p->ccap, sizeof *p->count);
    if (!c)
        return -1;
    *c += n;
    return 0;
}

/* The samples and count of index ix of part p: a key made by a count
 * alone has no slot in p->g.s, one made by samples alone none in p->count. */
static samples *part_samples(diag_part *p, size_t ix) { return ix < p->g.cap ? &p->g.s[ix] : NULL; }
static size_t part_count(const diag_part *p, size_t ix) { return ix < p->ccap ? p->count[ix] : 0; }

static void part_free(diag_part *p)
{
    diag_groups_free(&p->g);
    free(p->count);
}

typedef struct fill_run {
    const dctx    *D;
    diag_part_fill fill;
    const void    *arg;
    diag_part     *part;
    int           *failed; /* per source: its fill ran out of memory */
} fill_run;

static void fill_task(void *ctx, size_t s)
{
    fill_run *R = ctx;
    R->failed[s] = R->fill(R->D, R->arg, s, &R->part[s]);
}

/* M from the parts P[0..np): the keys in the order the parts first name
 * them, part after part; per key the sum of its counts and the median of
 * all its samples, gathered into one array (each part's samples freed as
 * they are copied). The order of the samples in the array changes no
 * median (baseline.h). 0, or -1 out of memory. */
static int merge_parts(diag_medians *M, diag_part *P, size_t np)
{
    size_t *total = NULL, tcap = 0, ccap = 0, most = 0, all = 0; /* total: per key, its samples */
    uint64_t *keys = NULL;
    size_t *end = NULL; /* per key: the end of its samples in v */
    double *v = NULL;
    int rc = -1;
    for (size_t p = 0; p < np; p++)
        if (P[p].g.keys.n > most)
            most = P[p].g.keys.n;
    if (!(keys = malloc((most + 1) * sizeof *keys)))
        goto out;
    for (size_t p = 0; p < np; p++) {
        kmap_keys(&P[p].g.keys, keys);
        for (size_t ix = 0; ix < P[p].g.keys.n; ix++) {
            size_t *c = kmap_slot(&M->keys, keys[ix], (void **)&M->count, &ccap, sizeof *M->count);
            size_t *t = kmap_slot(&M->keys, keys[ix], (void **)&total, &tcap, sizeof *total);
            if (!c || !t)
                goto out;
            const samples *s = part_samples(&P[p], ix);
            *c += part_count(&P[p], ix);
            *t += s ? s->n : 0;
            all += s ? s->n : 0;
        }
    }
    size_t nk = M->keys.n;
    if (!(end = malloc((nk + 1) * sizeof *end)) || !(v = malloc((all ? all : 1) * sizeof *v)) ||
        !(M->med = calloc(nk ? nk : 1, sizeof *M->med)))
        goto out;
    for (size_t k = 0, at = 0; k < nk; at += total[k++])
        end[k] = at; /* where key k's samples start; moved on as they are copied, it is where they end */
    for (size_t p = 0; p < np; p++) {
        kmap_keys(&P[p].g.keys, keys);
        for (size_t ix = 0; ix < P[p].g.keys.n; ix++) {
            const samples *s = part_samples(&P[p], ix);
            size_t k = kmap_get(&M->keys, keys[ix], 0);
            for (size_t q = 0; s && q < s->n; q++)
                v[end[k]++] = s->v[q];
        }
        part_free(&P[p]);
        P[p] = (diag_part){0};
    }
    for (size_t k = 0; k < nk; k++)
        M->med[k] = diag_median(v + end[k] - total[k], total[k]);
    rc = 0;
out:
    free(total);
    free(keys);
    free(end);
    free(v);
    return rc;
}

int diag_medians_build(diag_medians *M, const dctx *D, diag_part_fill fill, const void *arg)
{
    diag_part *part = calloc(D->nsrc + 1, sizeof *part);
    int *failed = calloc(D->nsrc + 1, sizeof *failed), rc = -1;
    if (part && failed) {
        teller_parallel_for(D->jobs, D->nsrc, fill_task, &(fill_run){D, fill, arg, part, failed});
        rc = 0;
        for (size_t s = 0; s < D->nsrc && !rc; s++)
            rc = failed[s] ? -1 : 0;
        if (!rc)
            rc = merge_parts(M, part, D->nsrc);
    }
    for (size_t s = 0; part && s < D->nsrc; s++)
        part_free(&part[s]);
    free(part);
    free(failed);
    return rc;
}

double diag_medians_get(diag_medians *M, uint64_t key)
{
    uint32_t ix = kmap_get(&M->keys, key, 0);
    return ix != TELLER_NONE ? M->med[ix] : 0;
}

size_t diag_medians_count(diag_medians *M, uint64_t key)
{
    uint32_t ix = kmap_get(&M->keys, key, 0);
    return ix != TELLER_NONE ? M->count[ix] : 0;
}

void diag_medians_free(diag_medians *M)
{
    kmap_free(&M->keys);
    free(M->med);
    free(M->count);
}
