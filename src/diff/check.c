/*
 * check.c - can two runs be compared at all (include/teller/diff.h)?
 *
 * A diff of two runs that are not the same workload lists every kernel as
 * changed and means nothing, so it is refused with the reason before any
 * matching: the rules and thresholds are in docs/DIFF.md. Each run is
 * summed up once into a profile (ranks, engine, step kinds with their
 * kernels per step, compute time per kernel family), and the profiles are
 * compared. Nothing here depends on the diff's own output.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "teller/diff.h"
#include "teller/tpe.h"
#include "teller/tree.h"
#include "diff_internal.h"
#include "../util/kmap.h"
#include "../util/vec.h"

const char *diff_engine_of(const char *family)
{
    if (!strncmp(family, "execute_", 8))
        return "vLLM";
    if (!strncmp(family, "step[", 5))
        return "SGLang";
    return NULL;
}

int diff_count_ranks(const teller_store *st, int32_t *world)
{
    size_t n = teller_store_num_sources(st);
    int c = 0;
    *world = 0;
    for (size_t i = 0; i < n; i++) {
        const teller_source *s = teller_store_source_c(st, (uint32_t)i);
        int dup = 0;
        for (size_t j = 0; j < i && !dup; j++)
            dup = teller_store_source_c(st, (uint32_t)j)->rank == s->rank;
        c += !dup;
        if (s->world_size > *world)
            *world = s->world_size;
    }
    return c;
}

uint64_t *diff_kernel_ns(const teller_store *st, int with_comm)
{
    const teller_events *ev = teller_store_events(st);
    size_t nstr = teller_store_num_strings(st);
    uint64_t *by = calloc(nstr ? nstr : 1, sizeof *by);
    if (!by)
        return NULL;
    for (size_t i = 0; i < ev->n; i++)
        if (ev->layer[i] == TELLER_LAYER_KERNEL && (with_comm || !(ev->flags[i] & TELLER_F_COMM)))
            by[ev->name[i]] += (uint64_t)ev->dur_ns[i];
    return by;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

/* One run summed up for the check. */
typedef struct profile {
    int32_t     ranks, world;
    const char *engine;     /* of the most steps; NULL when no engine's annotation */
    kmap        kinds;      /* diff_kind_key -> index into kind[] */
    diff_kind  *kind;
    size_t      kcap;
    uint32_t   *kernels;    /* per kind, kernels of its steps in order (kind_first[k] .. + count) */
    uint64_t    steps;      /* finished step rows */
} profile;

static void profile_free(profile *p)
{
    kmap_free(&p->kinds);
    free(p->kind);
    free(p->kernels);
}

/* Fills p from st; -1 when out of memory. */
static int profile_build(const teller_store *st, profile *p)
{
    memset(p, 0, sizeof *p);
    p->ranks = diff_count_ranks(st, &p->world);
    teller_step_summary *sum = NULL;
    size_t nsum = 0;
    teller_error e;
    if (teller_step_summaries(st, &sum, &nsum, &e) != TELLER_OK)
        return -1;
    uint32_t *kind_of = malloc((nsum ? nsum : 1) * sizeof *kind_of);
    if (!kind_of) {
        free(sum);
        return -1;
    }
    const teller_step *steps = teller_store_steps(st);
    size_t nk = 0;
    uint64_t vllm = 0, sglang = 0;
    for (size_t i = 0; i < nsum; i++) {
        kind_of[i] = UINT32_MAX;
        if (teller_step_unfinished(&steps[i]))
            continue;
        teller_step_class c;
        teller_step_classify(
            steps[i].marker == TELLER_NONE ? NULL : teller_store_str(st, teller_store_step_annotation(st, i)), &c);
        diff_kind *k = kmap_slot(&p->kinds, diff_kind_key(&c), (void **)&p->kind, &p->kcap, sizeof *p->kind);
        if (!k) {
            free(sum);
            free(kind_of);
            return -1;
        }
        if (!k->steps) {
            memcpy(k->family, c.family, sizeof k->family);
            k->kind = c.kind;
        }
        kind_of[i] = kmap_get(&p->kinds, diff_kind_key(&c), 0);
        k->steps++;
        nk = p->kinds.n;
        p->steps++;
        const char *eng = diff_engine_of(c.family);
        vllm += eng && eng[0] == 'v';
        sglang += eng && eng[0] == 'S';
    }
    p->engine = vllm > sglang ? "vLLM" : sglang ? "SGLang" : NULL;
    /* kernels per step, grouped by kind, for their medians */
    p->kernels = malloc((p->steps ? p->steps : 1) * sizeof *p->kernels);
    if (!p->kernels) {
        free(sum);
        free(kind_of);
        return -1;
    }
    uint64_t at = 0;
    for (size_t k = 0; k < nk; k++) {
        p->kind[k].first = at;
        at += p->kind[k].steps;
        p->kind[k].steps = 0;
    }
    for (size_t i = 0; i < nsum; i++)
        if (kind_of[i] != UINT32_MAX) {
            diff_kind *k = &p->kind[kind_of[i]];
            p->kernels[k->first + k->steps++] = sum[i].kernels;
        }
    for (size_t k = 0; k < nk; k++) {
        diff_kind *d = &p->kind[k];
        teller_sort(p->kernels + d->first, d->steps, sizeof *p->kernels, cmp_u32);
        d->median_kernels = d->steps ? p->kernels[d->first + d->steps / 2] : 0;
    }
    free(sum);
    free(kind_of);
    return 0;
}

/* Adds st's compute kernel time per family into share[slot][side]; the
 * total into *total. -1 when out of memory. */
static int family_time(const teller_store *st, int side, kmap *fams, double (**share)[2], size_t *cap, double *total,
                       double *moe)
{
    size_t nstr = teller_store_num_strings(st);
    uint64_t *by_name = diff_kernel_ns(st, 0);
    if (!by_name)
        return -1;
    *total = 0;
    *moe = 0;
    for (size_t id = 0; id < nstr; id++) {
        if (!by_name[id])
            continue;
        char fam[256];
        size_t n = teller_tpe_name_family(TELLER_LAYER_KERNEL, teller_store_str(st, (uint32_t)id), fam, sizeof fam);
        double(*s)[2] = kmap_slot(fams, kmap_hash_bytes(fam, n), (void **)share, cap, sizeof **share);
        if (!s) {
            free(by_name);
            return -1;
        }
        (*s)[side] += (double)by_name[id];
        if (!strncmp(fam, "moe", 3))
            *moe += (double)by_name[id];
        *total += (double)by_name[id];
    }
    free(by_name);
    return 0;
}

/* The compute kernels' time-weighted family overlap, or -1 when either
 * side has none; -2 when out of memory. moe[side] gets the share of the
 * side's compute time in the moe families (expert routing and experts). */
static double kernel_overlap(const teller_store *ref, const teller_store *run, double moe[2])
{
    kmap fams = {0};
    double(*share)[2] = NULL;
    size_t cap = 0;
    double t0 = 0, t1 = 0, o = -2;
    if (family_time(ref, 0, &fams, &share, &cap, &t0, &moe[0]) == 0 &&
        family_time(run, 1, &fams, &share, &cap, &t1, &moe[1]) == 0) {
        o = -1;
        moe[0] = t0 > 0 ? moe[0] / t0 : 0;
        moe[1] = t1 > 0 ? moe[1] / t1 : 0;
        if (t0 > 0 && t1 > 0) {
            o = 0;
            for (size_t f = 0; f < fams.n; f++) {
                double a = share[f][0] / t0, b = share[f][1] / t1;
                o += a < b ? a : b;
            }
        }
    }
    kmap_free(&fams);
    free(share);
    return o;
}

static void refuse(teller_diff_verdict *out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void refuse(teller_diff_verdict *out, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(out->why, sizeof out->why, fmt, ap);
    va_end(ap);
    out->comparable = 0;
}

teller_status teller_diff_check(const teller_store *ref, const teller_store *run, teller_diff_verdict *out,
                                teller_error *err)
{
    memset(out, 0, sizeof *out);
    out->comparable = 1;
    out->kernel_overlap = -1;
    profile p[2];
    if (profile_build(ref, &p[0]) != 0)
        return teller_error_set(err, TELLER_ERR_NOMEM, NULL, 0, "out of memory checking the reference");
    if (profile_build(run, &p[1]) != 0) {
        profile_free(&p[0]);
        return teller_error_set(err, TELLER_ERR_NOMEM, NULL, 0, "out of memory checking the run");
    }
    out->ref_ranks = p[0].ranks;
    out->run_ranks = p[1].ranks;
    /* the common kind with the most steps on both sides */
    size_t best = SIZE_MAX, best_steps = 0;
    for (size_t k = 0; k < p[0].kinds.n; k++) {
        uint32_t j = kmap_get(&p[1].kinds, diff_kind_key_of(&p[0].kind[k]), 0);
        if (j == UINT32_MAX)
            continue;
        out->common_kinds++;
        size_t s = p[0].kind[k].steps < p[1].kind[j].steps ? p[0].kind[k].steps : p[1].kind[j].steps;
        if (s > best_steps) {
            best_steps = s;
            best = k;
        }
    }
    if (best != SIZE_MAX) {
        uint32_t a = p[0].kind[best].median_kernels;
        uint32_t b = p[1].kind[kmap_get(&p[1].kinds, diff_kind_key_of(&p[0].kind[best]), 0)].median_kernels;
        if (a && b)
            out->kernel_ratio = a > b ? (double)a / b : (double)b / a;
    }
    double moe[2] = {0, 0};
    out->kernel_overlap = kernel_overlap(ref, run, moe);
    teller_status rc = TELLER_OK;
    if (out->kernel_overlap == -2) {
        rc = teller_error_set(err, TELLER_ERR_NOMEM, NULL, 0, "out of memory checking kernels");
    } else if (!teller_store_events(ref)->n || !p[0].steps) {
        refuse(out, "the reference holds no step");
    } else if (!teller_store_events(run)->n || !p[1].steps) {
        refuse(out, "the run holds no step");
    } else if (p[0].ranks != p[1].ranks) {
        refuse(out, "the reference has %d rank%s and the run %d", p[0].ranks, p[0].ranks == 1 ? "" : "s",
               p[1].ranks);
    } else if (p[0].world && p[1].world && p[0].world != p[1].world) {
        refuse(out, "the reference records a world size of %d and the run %d", p[0].world, p[1].world);
    } else if (p[0].engine && p[1].engine && strcmp(p[0].engine, p[1].engine)) {
        refuse(out, "the reference's steps are %s's and the run's %s's: different engines", p[0].engine,
               p[1].engine);
    } else if (!out->common_kinds) {
        const diff_kind *a = &p[0].kind[0], *b = &p[1].kind[0];
        refuse(out, "no step kind in common: the reference's steps are %s \"%s\", the run's %s \"%s\"",
               teller_step_kind_name(a->kind), a->family, teller_step_kind_name(b->kind), b->family);
    } else if (out->kernel_overlap >= 0 && out->kernel_overlap < TELLER_DIFF_MIN_OVERLAP) {
        refuse(out,
               "another model: only %.0f%% of the compute kernels' time is in kernel families both runs have "
               "(at least %.0f%% for the same model)",
               100 * out->kernel_overlap, 100 * TELLER_DIFF_MIN_OVERLAP);
    } else if ((moe[0] >= TELLER_DIFF_MIN_MOE) != (moe[1] >= TELLER_DIFF_MIN_MOE) && (moe[0] == 0 || moe[1] == 0)) {
        int r = moe[1] > 0;
        refuse(out, "another model: the %s routes tokens to experts (moe kernels, %.1f%% of its compute time) and the %s "
               "has no moe kernel", r ? "run" : "reference", 100 * moe[r], r ? "reference" : "run");
    } else if (out->kernel_ratio > TELLER_DIFF_MAX_KERNEL_RATIO) {
        const diff_kind *a = &p[0].kind[best];
        const diff_kind *b = &p[1].kind[kmap_get(&p[1].kinds, diff_kind_key_of(a), 0)];
        refuse(out,
               "another model: a %s step \"%s\" launches %u kernels in the reference and %u in the run "
               "(more than %.1fx apart: other layers)",
               teller_step_kind_name(a->kind), a->family, a->median_kernels, b->median_kernels,
               TELLER_DIFF_MAX_KERNEL_RATIO);
    }
    profile_free(&p[0]);
    profile_free(&p[1]);
    return rc;
}
