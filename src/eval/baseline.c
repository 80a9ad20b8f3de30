/*
 * baseline.c - two reference baselines that later stages must beat.
 *
 * zscore: a step is abnormal when its duration (the longest rank's window)
 *   is more than 3 robust standard deviations (1.4826 x MAD) above the
 *   run's median; its candidates are the (rank, kernel) pairs whose time in
 *   the step exceeds their median over the run by the most.
 * gmm: the candidate stage of the paper's reference code. Units are the
 *   outermost framework ops, the kernels of graph launches, and API calls
 *   outside any op. Per (step, rank, family = layer + normalised name) nine
 *   features: duration, runtime/driver/kernel time and counts, log bytes
 *   moved, communication flag. Per family a two-component diagonal Gaussian
 *   mixture (EM) on standardised log features; a sample's suspiciousness is
 *   the posterior of the smaller component. Candidates above 0.65, top 8;
 *   a step is abnormal when it has one.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "teller/baseline.h"
#include "teller/tree.h"
#include "../util/kmap.h"
#include "../util/vec.h"

static int cmp_dbl(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(const double *v, size_t n, double *tmp)
{
    if (!n)
        return 0;
    memcpy(tmp, v, n * sizeof *v);
    teller_sort(tmp, n, sizeof *tmp, cmp_dbl);
    return n % 2 ? tmp[n / 2] : 0.5 * (tmp[n / 2 - 1] + tmp[n / 2]);
}

static int32_t source_rank(const teller_store *st, uint16_t s) { return teller_store_source_c(st, s)->rank; }

/* Per step: the longest window over ranks. */
static double *step_durations(const teller_store *st, uint32_t nsteps)
{
    double *d = calloc(nsteps ? nsteps : 1, sizeof *d);
    if (!d)
        return NULL;
    const teller_step *s = teller_store_steps(st);
    for (size_t i = 0; i < teller_store_num_steps(st); i++) {
        double w = (double)(s[i].end_ns - s[i].start_ns);
        if (s[i].step < nsteps && w > d[s[i].step])
            d[s[i].step] = w;
    }
    return d;
}

static void init_preds(teller_step_pred *p, uint32_t n)
{
    memset(p, 0, n * sizeof *p);
    for (uint32_t k = 0; k < n; k++)
        p[k].step = k;
}

teller_status teller_baseline_zscore(const teller_store *st, teller_step_pred **out, size_t *nout, teller_error *err)
{
    uint32_t n = teller_store_step_count(st);
    const teller_events *ev = teller_store_events(st);
    teller_step_pred *p = calloc(n ? n : 1, sizeof *p);
    double *dur = step_durations(st, n), *tmp = malloc((n ? n : 1) * sizeof *tmp);
    double *dev = malloc((n ? n : 1) * sizeof *dev);
    kmap pm = {0};
    double *tot = NULL; /* [pair][step] kernel time */
    size_t tcap = 0;
    if (!p || !dur || !tmp || !dev)
        goto oom;
    init_preds(p, n);
    for (size_t i = 0; i < ev->n; i++) {
        if (ev->layer[i] != TELLER_LAYER_KERNEL || ev->step[i] >= n)
            continue;
        uint32_t ix = kmap_get(&pm, (uint64_t)ev->source[i] << 32 | ev->name[i], 1);
        if (ix == TELLER_NONE)
            goto oom;
        if ((size_t)(ix + 1) * n > tcap) {
            size_t old = tcap;
            if (TELLER_GROW(tot, tcap, (size_t)(ix + 1) * n))
                goto oom;
            memset(tot + old, 0, (tcap - old) * sizeof *tot);
        }
        tot[(size_t)ix * n + ev->step[i]] += (double)ev->dur_ns[i];
    }
    double med = median(dur, n, tmp);
    for (uint32_t k = 0; k < n; k++)
        dev[k] = fabs(dur[k] - med);
    double mad = 1.4826 * median(dev, n, tmp) + 1e-9 * med + 1.0;
    /* per-pair medians, and the pair's name and rank for candidates */
    double *pmed = calloc(pm.n ? pm.n : 1, sizeof *pmed);
    uint64_t *pkey = calloc(pm.n ? pm.n : 1, sizeof *pkey);
    if (!pmed || !pkey) {
        free(pmed);
        free(pkey);
        goto oom;
    }
    kmap_keys(&pm, pkey);
    for (size_t ix = 0; ix < pm.n; ix++)
        pmed[ix] = median(tot + ix * n, n, tmp);
    for (uint32_t k = 0; k < n; k++) {
        double z = (dur[k] - med) / mad;
        teller_step_pred *q = &p[k];
        q->score = z > 0 ? z / (1.0 + z) : 0;
        if (z <= 3.0)
            continue;
        q->abnormal = 1;
        snprintf(q->fault_type, sizeof q->fault_type, "kernel");
        snprintf(q->view, sizeof q->view, "vertical");
        for (size_t ix = 0; ix < pm.n; ix++) {
            double ex = tot[ix * n + k] - pmed[ix];
            if (ex <= 0)
                continue;
            /* insert into the top 3 by excess */
            int pos = q->ncand < 3 ? q->ncand : 3;
            while (pos > 0 && q->cand[pos - 1].score < ex)
                pos--;
            if (pos >= 3)
                continue;
            int last = q->ncand < 3 ? q->ncand : 2;
            for (int c = last; c > pos; c--)
                q->cand[c] = q->cand[c - 1];
            teller_candidate *c = &q->cand[pos];
            c->rank = source_rank(st, (uint16_t)(pkey[ix] >> 32));
            snprintf(c->op, sizeof c->op, "%s", teller_store_str(st, (uint32_t)pkey[ix]));
            snprintf(c->layer, sizeof c->layer, "KERNEL");
            c->score = ex;
            if (q->ncand < 3)
                q->ncand++;
        }
        double top = q->ncand ? q->cand[0].score : 0;
        snprintf(q->explanation, sizeof q->explanation,
                 "Step %u took %.3f ms against a median of %.3f ms (robust z %.1f); the largest excess is %s on rank %d, "
                 "%.3f ms over its median.",
                 k, dur[k] / 1e6, med / 1e6, z, q->ncand ? q->cand[0].op : "(none)", q->ncand ? q->cand[0].rank : -1,
                 top / 1e6);
        for (int c = 0; c < q->ncand; c++)
            q->cand[c].score = top > 0 ? q->cand[c].score / top : 0;
    }
    free(pmed);
    free(pkey);
    free(dur);
    free(dev);
    free(tmp);
    free(tot);
    kmap_free(&pm);
    *out = p;
    *nout = n;
    return TELLER_OK;
oom:
    free(p);
    free(dur);
    free(dev);
    free(tmp);
    free(tot);
    kmap_free(&pm);
    return teller_error_set(err, TELLER_ERR_NOMEM, "(baseline)", 0, "out of memory");
}

/* ---- the GMM candidate stage ---- */

#define NF 9

typedef struct sample {
    uint32_t family, step;
    int32_t  rank;
    uint32_t name;  /* interned op name for the candidate */
    uint8_t  layer;
    double   x[NF];
} sample;

static int sample_cmp(const void *a, const void *b)
{
    const sample *x = a, *y = b;
    if (x->family != y->family) return x->family < y->family ? -1 : 1;
    if (x->step != y->step) return x->step < y->step ? -1 : 1;
    return x->rank < y->rank ? -1 : x->rank > y->rank;
}

/* Adds the subtree of unit u into feature vector x. */
static void unit_features(const teller_store *st, uint32_t u, double *x)
{
    const teller_events *ev = teller_store_events(st);
    uint32_t stack[256];
    int sp = 0;
    stack[sp++] = u;
    x[0] += (double)ev->dur_ns[u];
    while (sp > 0) {
        uint32_t e = stack[--sp];
        uint8_t L = ev->layer[e];
        if (L == TELLER_LAYER_RUNTIME) {
            x[1] += (double)ev->dur_ns[e];
            x[4] += 1;
        } else if (L == TELLER_LAYER_DRIVER) {
            x[2] += (double)ev->dur_ns[e];
            x[5] += 1;
        } else if (L == TELLER_LAYER_KERNEL || L == TELLER_LAYER_MEMCPY || L == TELLER_LAYER_MEMSET) {
            x[3] += (double)ev->dur_ns[e];
            x[6] += 1;
            const teller_args *a = teller_store_event_args(st, e);
            if (a && a->bytes > 0)
                x[7] += (double)a->bytes;
        }
        if (ev->flags[e] & TELLER_F_COMM)
            x[8] = 1;
        for (uint32_t c = ev->first_child[e]; c != TELLER_NONE && sp < 256; c = ev->next_sibling[c])
            stack[sp++] = c;
    }
}

/* EM for a 2-component diagonal GMM over m samples of dimension NF (already
 * standardised). Fills post[i] = P(minor component | x_i). */
static void gmm2(const double (*x)[NF], size_t m, double *post)
{
    double mu[2][NF], var[2][NF], w[2] = {0.9, 0.1};
    /* init: component 0 at the mean, component 1 at the farthest sample */
    size_t far = 0;
    double best = -1;
    for (int d = 0; d < NF; d++) {
        mu[0][d] = 0;
        var[0][d] = var[1][d] = 1;
    }
    for (size_t i = 0; i < m; i++) {
        double s = 0;
        for (int d = 0; d < NF; d++)
            s += x[i][d] * x[i][d];
        if (s > best) {
            best = s;
            far = i;
        }
    }
    for (int d = 0; d < NF; d++)
        mu[1][d] = x[far][d];
    double *r = malloc(m * sizeof *r);
    if (!r) {
        memset(post, 0, m * sizeof *post);
        return;
    }
    for (int it = 0; it < 30; it++) {
        for (size_t i = 0; i < m; i++) {
            double lp[2];
            for (int k = 0; k < 2; k++) {
                lp[k] = log(w[k] + 1e-12);
                for (int d = 0; d < NF; d++) {
                    double z = x[i][d] - mu[k][d];
                    lp[k] += -0.5 * (z * z / var[k][d] + log(var[k][d]));
                }
            }
            double mx = lp[0] > lp[1] ? lp[0] : lp[1];
            double e0 = exp(lp[0] - mx), e1 = exp(lp[1] - mx);
            r[i] = e1 / (e0 + e1);
        }
        double n1 = 0;
        for (size_t i = 0; i < m; i++)
            n1 += r[i];
        double n0 = (double)m - n1;
        w[0] = n0 / (double)m;
        w[1] = n1 / (double)m;
        for (int d = 0; d < NF; d++) {
            double s0 = 0, s1 = 0;
            for (size_t i = 0; i < m; i++) {
                s0 += (1 - r[i]) * x[i][d];
                s1 += r[i] * x[i][d];
            }
            mu[0][d] = n0 > 1e-9 ? s0 / n0 : 0;
            mu[1][d] = n1 > 1e-9 ? s1 / n1 : 0;
            double v0 = 0, v1 = 0;
            for (size_t i = 0; i < m; i++) {
                double z0 = x[i][d] - mu[0][d], z1 = x[i][d] - mu[1][d];
                v0 += (1 - r[i]) * z0 * z0;
                v1 += r[i] * z1 * z1;
            }
            var[0][d] = (n0 > 1e-9 ? v0 / n0 : 1) + 1e-3;
            var[1][d] = (n1 > 1e-9 ? v1 / n1 : 1) + 1e-3;
        }
    }
    int minor = w[1] <= w[0] ? 1 : 0;
    for (size_t i = 0; i < m; i++)
        post[i] = minor ? r[i] : 1 - r[i];
    free(r);
}

static const char *fault_type_of(uint8_t layer, int comm)
{
    if (comm)
        return "communication";
    switch (layer) {
    case TELLER_LAYER_RUNTIME:
    case TELLER_LAYER_DRIVER:
    case TELLER_LAYER_SYNC: return "driver_library";
    case TELLER_LAYER_MEMCPY:
    case TELLER_LAYER_MEMSET: return "memory";
    case TELLER_LAYER_ENGINE:
    case TELLER_LAYER_FRONTEND: return "scheduling";
    default: return "kernel";
    }
}

teller_status teller_baseline_gmm(const teller_store *st, teller_step_pred **out, size_t *nout, teller_error *err)
{
    uint32_t n = teller_store_step_count(st);
    const teller_events *ev = teller_store_events(st);
    teller_step_pred *p = calloc(n ? n : 1, sizeof *p);
    sample *sm = NULL;
    size_t ns = 0, scap = 0;
    kmap fam = {0}, slot = {0};
    if (!p)
        goto oom;
    init_preds(p, n);
    char buf[512];
    for (size_t i = 0; i < ev->n; i++) {
        if (ev->step[i] >= n)
            continue;
        uint8_t L = ev->layer[i];
        uint32_t par = ev->parent[i];
        int unit = 0;
        if (L == TELLER_LAYER_BACKEND)
            unit = par == TELLER_NONE || ev->layer[par] != TELLER_LAYER_BACKEND;
        else if (L == TELLER_LAYER_KERNEL || L == TELLER_LAYER_MEMCPY || L == TELLER_LAYER_MEMSET)
            unit = par != TELLER_NONE && (ev->flags[par] & TELLER_F_GRAPH);
        else if (L == TELLER_LAYER_RUNTIME || L == TELLER_LAYER_DRIVER)
            unit = par == TELLER_NONE || ev->layer[par] != TELLER_LAYER_BACKEND;
        if (!unit)
            continue;
        teller_name_normalize(teller_store_str(st, ev->name[i]), buf, sizeof buf);
        uint32_t nid = teller_store_intern((teller_store *)st, buf, strlen(buf));
        if (nid == TELLER_NONE)
            goto oom;
        uint32_t f = kmap_get(&fam, (uint64_t)L << 32 | nid, 1);
        int32_t rank = source_rank(st, ev->source[i]);
        uint32_t sl = kmap_get(&slot, ((uint64_t)f << 40) ^ ((uint64_t)ev->step[i] << 16) ^ (uint64_t)(uint16_t)rank, 1);
        if (f == TELLER_NONE || sl == TELLER_NONE)
            goto oom;
        if (sl >= ns) {
            if (TELLER_GROW(sm, scap, sl + 1))
                goto oom;
            memset(&sm[ns], 0, (sl + 1 - ns) * sizeof *sm);
            ns = sl + 1;
            sm[sl].family = f;
            sm[sl].step = ev->step[i];
            sm[sl].rank = rank;
            sm[sl].name = ev->name[i];
            sm[sl].layer = L;
        }
        unit_features(st, (uint32_t)i, sm[sl].x);
    }
    teller_sort(sm, ns, sizeof *sm, sample_cmp);
    double (*x)[NF] = malloc((ns ? ns : 1) * sizeof *x);
    double *post = malloc((ns ? ns : 1) * sizeof *post);
    if (!x || !post) {
        free(x);
        free(post);
        goto oom;
    }
    for (size_t a = 0; a < ns;) {
        size_t b = a;
        while (b < ns && sm[b].family == sm[a].family)
            b++;
        size_t m = b - a;
        if (m >= 8) {
            for (int d = 0; d < NF; d++) {
                double mean = 0, sd = 0;
                for (size_t i = a; i < b; i++)
                    mean += log1p(sm[i].x[d]);
                mean /= (double)m;
                for (size_t i = a; i < b; i++) {
                    double z = log1p(sm[i].x[d]) - mean;
                    sd += z * z;
                }
                sd = sqrt(sd / (double)m) + 1e-6;
                for (size_t i = a; i < b; i++)
                    x[i - a][d] = (log1p(sm[i].x[d]) - mean) / sd;
            }
            gmm2((const double(*)[NF])x, m, post);
            for (size_t i = a; i < b; i++) {
                double s = post[i - a];
                if (s <= 0.65)
                    continue;
                teller_step_pred *q = &p[sm[i].step];
                int pos = q->ncand < TELLER_MAX_CANDIDATES ? q->ncand : TELLER_MAX_CANDIDATES;
                while (pos > 0 && q->cand[pos - 1].score < s)
                    pos--;
                if (pos >= TELLER_MAX_CANDIDATES)
                    continue;
                int last = q->ncand < TELLER_MAX_CANDIDATES ? q->ncand : TELLER_MAX_CANDIDATES - 1;
                for (int c = last; c > pos; c--)
                    q->cand[c] = q->cand[c - 1];
                teller_candidate *c = &q->cand[pos];
                c->rank = sm[i].rank;
                snprintf(c->op, sizeof c->op, "%s", teller_store_str(st, sm[i].name));
                snprintf(c->layer, sizeof c->layer, "%s", teller_layer_tag((teller_layer)sm[i].layer));
                c->score = s;
                if (q->ncand < TELLER_MAX_CANDIDATES)
                    q->ncand++;
                if (pos == 0) {
                    snprintf(q->fault_type, sizeof q->fault_type, "%s", fault_type_of(sm[i].layer, sm[i].x[8] > 0));
                    snprintf(q->view, sizeof q->view, "%s", sm[i].x[8] > 0 ? "horizontal" : "vertical");
                }
            }
        }
        a = b;
    }
    for (uint32_t k = 0; k < n; k++) {
        teller_step_pred *q = &p[k];
        q->abnormal = q->ncand > 0;
        q->score = q->ncand ? q->cand[0].score : 0;
        if (q->abnormal)
            snprintf(q->explanation, sizeof q->explanation,
                     "Step %u: %s on rank %d is the most suspicious operator (GMM score %.2f).", k, q->cand[0].op,
                     q->cand[0].rank, q->cand[0].score);
    }
    free(x);
    free(post);
    free(sm);
    kmap_free(&fam);
    kmap_free(&slot);
    *out = p;
    *nout = n;
    return TELLER_OK;
oom:
    free(p);
    free(sm);
    kmap_free(&fam);
    kmap_free(&slot);
    return teller_error_set(err, TELLER_ERR_NOMEM, "(baseline)", 0, "out of memory");
}
