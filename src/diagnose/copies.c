/*
 * copies.c - the copy detector: a copy's duration against the run's usual
 * for its name and size (PCIe degradation), and a rank's copy volume per
 * step against its usual volume (KV-cache swapping).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diag_internal.h"

static int size_bucket(int64_t bytes) { return bytes > 0 ? (int)log2((double)bytes) : 0; }

int diag_detect_copies(const dctx *D, finds *out)
{
    const teller_events *ev = D->ev;
    teller_store *st = D->st;
    groups bm = {0}, vg = {0}; /* durations per (name, size); volumes per (name, source) */
    kmap m = {0};
    int rc = -1;
    typedef struct cp {
        double t, bytes, slow, usual;
        uint32_t event, step, name;
        uint16_t src;
    } cp;
    cp *c = NULL;
    size_t ccap = 0;
    /* usual duration of a copy of this name and size */
    for (size_t i = 0; i < ev->n; i++) {
        const teller_args *a = ev->layer[i] == TELLER_LAYER_MEMCPY ? teller_store_event_args(st, (uint32_t)i) : NULL;
        if (!a || a->bytes <= 0)
            continue;
        if (diag_groups_add(&bm, ((uint64_t)ev->name[i] << 8) | (uint64_t)size_bucket(a->bytes), (double)ev->dur_ns[i]))
            goto oom;
    }
    double *usual = diag_groups_medians(&bm);
    if (!usual)
        goto oom;
    for (size_t i = 0; i < ev->n; i++) {
        const teller_args *a = ev->layer[i] == TELLER_LAYER_MEMCPY ? teller_store_event_args(st, (uint32_t)i) : NULL;
        if (!a || a->bytes <= 0 || ev->step[i] >= D->nsteps)
            continue;
        cp *x = kmap_slot(&m, nss_key(ev->name[i], ev->step[i], ev->source[i]), (void **)&c, &ccap, sizeof *c);
        if (!x)
            goto oom2;
        if (!x->t) {
            x->event = (uint32_t)i;
            x->step = ev->step[i];
            x->name = ev->name[i];
            x->src = ev->source[i];
        }
        double u = usual[kmap_get(&bm.keys, ((uint64_t)ev->name[i] << 8) | (uint64_t)size_bucket(a->bytes), 0)];
        x->t += (double)ev->dur_ns[i];
        x->bytes += (double)a->bytes;
        x->usual += u;
        if ((double)ev->dur_ns[i] > 3 * u + 2000)
            x->slow += (double)ev->dur_ns[i] - u;
    }
    /* usual volume per (name, source) over all steps, absent steps counting
     * zero: one median per (name, source), not one per (name, source, step) */
    double *vols = malloc((D->nsteps ? D->nsteps : 1) * sizeof *vols), *vmeds = NULL;
    if (!vols)
        goto oom2;
    for (size_t ix = 0; ix < m.n; ix++)
        if (diag_groups_add(&vg, ((uint64_t)c[ix].name << 16) | c[ix].src, c[ix].bytes))
            goto oom3;
    if (!(vmeds = malloc((vg.keys.n ? vg.keys.n : 1) * sizeof *vmeds)))
        goto oom3;
    for (size_t g = 0; g < vg.keys.n; g++) {
        size_t nv = 0; /* a (name, source, step) key is one per step: at most nsteps */
        for (size_t q = 0; q < vg.s[g].n && nv < D->nsteps; q++)
            vols[nv++] = vg.s[g].v[q];
        while (nv < D->nsteps)
            vols[nv++] = 0;
        vmeds[g] = diag_median(vols, nv);
    }
    for (size_t ix = 0; ix < m.n; ix++) {
        cp *x = &c[ix];
        double vmed = vmeds[kmap_get(&vg.keys, ((uint64_t)x->name << 16) | x->src, 0)];
        double per_byte = x->bytes > 0 ? x->usual / x->bytes : 0;
        double extra_vol = x->bytes > 4 * vmed + 1e6 ? (x->bytes - vmed) * per_byte : 0;
        if (x->slow > 10000) {
            cand cd = {TELLER_FAULT_PCIE_DEGRADATION, teller_store_source_c(st, x->src)->rank, x->name, TELLER_LAYER_MEMCPY, x->slow,
                       x->t / (x->usual + 1), x->t, x->usual, x->event, 0, 0, -1};
            if (diag_finds_add(out, x->step, &cd))
                goto oom3;
        } else if (extra_vol > 20000) {
            cand cd = {TELLER_FAULT_KV_SWAP, teller_store_source_c(st, x->src)->rank, x->name, TELLER_LAYER_MEMCPY, extra_vol,
                       x->bytes / (vmed + 1), x->t, x->t - extra_vol, x->event, 0, 0, -1};
            if (diag_finds_add(out, x->step, &cd))
                goto oom3;
        }
    }
    rc = 0;
oom3:
    free(vols);
    free(vmeds);
oom2:
    free(usual);
oom:
    free(c);
    diag_groups_free(&bm);
    diag_groups_free(&vg);
    kmap_free(&m);
    return rc;
}
