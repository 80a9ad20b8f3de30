/*
 * model.c - the root-cause model (model.h): parameters carved from one
 * allocation (llm.c's ParameterTensors), one step's forward pass and its
 * backward pass side by side, AdamW training with early stopping on a
 * validation set, and the model file.
 *
 * Tokens: t = 0 the step token, 1 .. C the candidates, then the log lines,
 * then the trace tokens (trace.c). Each encoder layer is pre-norm:
 * x += attention(LN(x)); x += FFN_m(LN(x)) with m the token's modality
 * (step, candidate, log, trace); the tokens of a modality are one block of
 * rows, so every product is one call of nn_matmul_* over its rows
 * (OpenBLAS when the build has it, docs/MODEL.md). Attention adds a learned bias per head and layer by the
 * class of the token pair (pair_classes): the tree enters there.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "teller/logs.h"
#include "teller/model.h"
#include "teller/slice.h"
#include "nn.h"
#include "../util/kmap.h"

enum {
    MD = 64,            /* width */
    ML = 2,             /* encoder layers */
    MH = 2,             /* attention heads */
    MHID = 128,         /* feed-forward hidden width */
    MMOD = 4,           /* modalities: step, candidate, log, trace */
    MF = TELLER_CAND_FEATURES,
    MSF = TELLER_MODEL_STEP_FEATURES,
    MK = TELLER_FAULT_COUNT,
    MLAY = TELLER_LAYER_COUNT,
    MLOG = TELLER_MODEL_LOG_BUCKETS,
    MC = TELLER_DIAG_MAX_CANDS,
    MV = 2048,          /* trace symbol embeddings; the last is every symbol the vocabulary did not have */
    MDEP = 8,           /* depth embeddings (deeper: the last) */
    MBK = TELLER_TPE_BUCKETS,
    MSEG = TELLER_MODEL_TRACE_CANDS,
    MREL = TELLER_REL_COUNT,
    MNB = 7,            /* attention bias classes (pair_classes) */
    MTR = TELLER_MODEL_MAX_TRACE,
    MT = 1 + TELLER_DIAG_MAX_CANDS + TELLER_MODEL_MAX_LOGS + MTR /* tokens at most */
};

typedef struct params {
    float *wnum;  /* [MF][MD] candidate features */
    float *bnum;  /* [MD] */
    float *wstep; /* [MSF][MD] step features */
    float *edet;  /* [MK][MD] the detector's kind */
    float *elay;  /* [MLAY][MD] the candidate's layer */
    float *elog;  /* [MLOG][MD] log templates */
    float *emod;  /* [MMOD][MD] modality */
    float *ln1w, *ln1b; /* [ML][MD] */
    float *wqkv;  /* [ML][MD][3 MD] */
    float *bqkv;  /* [ML][3 MD] */
    float *wo;    /* [ML][MD][MD] */
    float *bo;    /* [ML][MD] */
    float *ln2w, *ln2b; /* [ML][MD] */
    float *w1;    /* [ML][MMOD][MD][MHID] */
    float *b1;    /* [ML][MMOD][MHID] */
    float *w2;    /* [ML][MMOD][MHID][MD] */
    float *b2;    /* [ML][MMOD][MD] */
    float *lnfw, *lnfb; /* [MD] */
    float *wab;   /* [MD] step abnormal */
    float *bab;   /* [1] */
    float *wkind; /* [MD][MK] fault kind */
    float *bkind; /* [MK] */
    float *wptr;  /* [MD] pointer over candidates */
    float *esym;  /* [MV][MD] trace token symbol */
    float *edep;  /* [MDEP][MD] its depth */
    float *ebkt;  /* [MBK][MD] its duration bucket */
    float *eseg;  /* [MSEG][MD] its slice's candidate */
    float *erel;  /* [MREL][MD] its slice relation */
    float *abias; /* [ML][MH][MNB] attention bias by pair class */
} params;

#define NTENSORS 32

static const size_t tensor_size[NTENSORS] = {
    MF * MD, MD, MSF * MD, MK * MD, MLAY * MD, MLOG * MD, MMOD * MD,
    ML * MD, ML * MD, (size_t)ML * MD * 3 * MD, ML * 3 * MD, (size_t)ML * MD * MD, ML * MD,
    ML * MD, ML * MD, (size_t)ML * MMOD * MD * MHID, ML * MMOD * MHID, (size_t)ML * MMOD * MHID * MD, ML * MMOD * MD,
    MD, MD, MD, 1, MD * MK, MK, MD,
    MV * MD, MDEP * MD, MBK * MD, MSEG * MD, MREL * MD, ML * MH * MNB,
};

static size_t num_params(void)
{
    size_t n = 0;
    for (int i = 0; i < NTENSORS; i++)
        n += tensor_size[i];
    return n;
}

static void point_params(params *p, float *mem)
{
    float **ptr[NTENSORS] = {&p->wnum, &p->bnum, &p->wstep, &p->edet, &p->elay, &p->elog, &p->emod,
                             &p->ln1w, &p->ln1b, &p->wqkv, &p->bqkv, &p->wo, &p->bo,
                             &p->ln2w, &p->ln2b, &p->w1, &p->b1, &p->w2, &p->b2,
                             &p->lnfw, &p->lnfb, &p->wab, &p->bab, &p->wkind, &p->bkind, &p->wptr,
                             &p->esym, &p->edep, &p->ebkt, &p->eseg, &p->erel, &p->abias};
    for (int i = 0; i < NTENSORS; i++) {
        *ptr[i] = mem;
        mem += tensor_size[i];
    }
}

struct teller_model {
    float *w;  /* all parameters, num_params() */
    params p;
    float  fmean[MF], fstd[MF], smean[MSF], sstd[MSF]; /* input normalisation */
    char  *vocab;      /* the TPE vocabulary file's bytes (tpe.h) */
    size_t vocab_len;
    uint32_t nsym;     /* its symbols: ids at or beyond are unknown */
    teller_model_tokens tokens;
    uint32_t without;  /* TELLER_MODEL_WITHOUT_* */
    char     recipe[TELLER_MODEL_RECIPE_MAX]; /* what trained it, NUL-terminated */
    float    veto_share; /* teller_model_veto_share */
    uint64_t id;       /* its file's checksum; 0 before it is loaded or saved */
};

/* ---- random numbers (splitmix64), deterministic on every platform ---- */

static uint64_t rng_next(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static double rng_unit(uint64_t *s) { return ((double)(rng_next(s) >> 11) + 0.5) / 9007199254740992.0; }

static float rng_normal(uint64_t *s)
{
    double u = rng_unit(s), v = rng_unit(s);
    return (float)(sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v));
}

teller_model *teller_model_create(uint64_t seed)
{
    teller_model *m = calloc(1, sizeof *m);
    size_t n = num_params();
    teller_tpe_vocab *v = NULL;
    teller_error err;
    if (!m || !(m->w = calloc(n, sizeof *m->w)) || teller_tpe_vocab_default(&v, &err) != TELLER_OK ||
        teller_model_set_vocab(m, v, TELLER_MODEL_TOKENS_TPE, &err) != TELLER_OK) {
        teller_tpe_vocab_free(v);
        teller_model_free(m);
        return NULL;
    }
    teller_tpe_vocab_free(v);
    m->veto_share = (float)TELLER_MODEL_VETO_SHARE;
    point_params(&m->p, m->w);
    uint64_t s = seed;
    for (size_t i = 0; i < n; i++)
        m->w[i] = 0.02f * rng_normal(&s);
    /* layer norms start as the identity, biases at zero, and the two
     * projections into the residual stream scaled down by the depth */
    params *p = &m->p;
    for (int i = 0; i < ML * MD; i++) {
        p->ln1w[i] = p->ln2w[i] = 1;
        p->ln1b[i] = p->ln2b[i] = p->bo[i] = 0;
    }
    for (int i = 0; i < MD; i++) {
        p->lnfw[i] = 1;
        p->lnfb[i] = p->bnum[i] = 0;
    }
    memset(p->bqkv, 0, ML * 3 * MD * sizeof(float));
    memset(p->b1, 0, ML * MMOD * MHID * sizeof(float));
    memset(p->b2, 0, ML * MMOD * MD * sizeof(float));
    memset(p->bkind, 0, MK * sizeof(float));
    memset(p->abias, 0, ML * MH * MNB * sizeof(float));
    p->bab[0] = 0;
    float r = 1.0f / sqrtf(2.0f * ML);
    for (size_t i = 0; i < tensor_size[11]; i++)
        p->wo[i] *= r;
    for (size_t i = 0; i < tensor_size[17]; i++)
        p->w2[i] *= r;
    for (int i = 0; i < MF; i++)
        m->fstd[i] = 1;
    for (int i = 0; i < MSF; i++)
        m->sstd[i] = 1;
    return m;
}

void teller_model_free(teller_model *m)
{
    if (!m)
        return;
    free(m->w);
    free(m->vocab);
    free(m);
}

teller_status teller_model_set_vocab(teller_model *m, const teller_tpe_vocab *v, teller_model_tokens tok,
                                     teller_error *err)
{
    char *text;
    size_t n;
    teller_status s = teller_tpe_vocab_write(v, &text, &n, err);
    if (s != TELLER_OK)
        return s;
    free(m->vocab);
    m->vocab = text;
    m->vocab_len = n;
    m->nsym = (uint32_t)teller_tpe_vocab_size(v);
    m->tokens = tok;
    return TELLER_OK;
}

teller_status teller_model_vocab(const teller_model *m, teller_tpe_vocab **out, teller_error *err)
{
    return teller_tpe_vocab_parse(m->vocab, m->vocab_len, "(the model's vocabulary)", out, err);
}

teller_model_tokens teller_model_token_kind(const teller_model *m) { return m->tokens; }

void teller_model_set_without(teller_model *m, uint32_t without) { m->without = without; }
uint32_t teller_model_without(const teller_model *m) { return m->without; }

void teller_model_ablate(const teller_model *m, teller_model_sample *s)
{
    if (m->without & TELLER_MODEL_WITHOUT_TRACE)
        s->ntrace = 0;
    if (m->without & TELLER_MODEL_WITHOUT_LOGS) {
        s->nlogs = 0;
        s->step[1] = 0;
    }
    if (m->without & TELLER_MODEL_WITHOUT_NUMBERS) {
        memset(s->step, 0, sizeof s->step);
        memset(s->feat, 0, sizeof s->feat);
    }
}

/* ---- samples ---- */

void teller_model_sample_of(const teller_diagnosis *d, size_t k, teller_model_sample *out)
{
    const teller_diag_step *s = &d->steps[k];
    memset(out, 0, sizeof *out);
    out->root = -1;
    out->ncands = s->ncands < MC ? s->ncands : MC;
    float best = 0;
    for (uint32_t q = 0; q < out->ncands; q++) {
        const teller_diag_cand *c = &d->cands[s->first_cand + q];
        memcpy(out->feat[q], c->feat, sizeof c->feat);
        out->det[q] = (uint8_t)(c->det < TELLER_FAULT_COUNT ? c->det : 0);
        out->layer[q] = c->layer < TELLER_LAYER_COUNT ? c->layer : TELLER_LAYER_OTHER;
        if (c->score > best)
            best = (float)c->score;
    }
    double rel = d->usual_step_ns > 0 && s->dur_ns > 0 ? log2((double)s->dur_ns / (double)d->usual_step_ns) : 0;
    out->step[0] = (float)(rel < -16 ? -16 : rel > 16 ? 16 : rel);
    for (int e = 0; e < s->pred.nev && out->nlogs < TELLER_MODEL_MAX_LOGS; e++) {
        if (strcmp(s->pred.ev[e].kind, "log"))
            continue;
        /* the line's template: numbers and ids masked (Loghub's rules) */
        char tpl[512];
        size_t n = teller_loghub_normalize(s->pred.ev[e].text, tpl, sizeof tpl);
        out->log[out->nlogs++] = (uint16_t)(kmap_hash_bytes(tpl, n) % MLOG);
    }
    out->step[1] = (float)out->nlogs;
    out->step[2] = (float)out->ncands / MC;
    out->step[3] = best;
    out->step[4] = s->peer_colls > 0;
    out->numeric = best;
    out->share = out->ncands ? out->feat[0][TELLER_CF_EXCESS_SHARE] : 0;
    out->slowness = (float)s->slowness;
    out->fact = (uint8_t)(s->fact != 0);
}

/* ---- one step forward and backward ---- */

/* The embedding row of a trace symbol: its own while the model's
 * vocabulary has it, else the last row (unknown). */
static size_t sym_row(const teller_model *m, uint32_t sym)
{
    return sym < m->nsym && sym < MV - 1 ? sym : MV - 1;
}

typedef struct acts {
    int     T, nc, nl, ntr;
    uint8_t mod[MT];
    uint8_t rel[MT * MT];            /* pair classes (pair_classes) */
    float   sn[MSF], fn[MC][MF];     /* normalised inputs */
    float   x0[MT * MD];             /* embeddings */
    float   ln1[ML][MT * MD], ln1m[ML][MT], ln1r[ML][MT];
    float   qkv[ML][MT * 3 * MD];
    float   att[ML][MH * MT * MT];
    float   atty[ML][MT * MD];
    float   x1[ML][MT * MD];         /* after attention */
    float   ln2[ML][MT * MD], ln2m[ML][MT], ln2r[ML][MT];
    float   h[ML][MT * MHID], g[ML][MT * MHID];
    float   x2[ML][MT * MD];         /* layer output */
    float   lf[MT * MD], lfm[MT], lfr[MT];
    float   za, zk[MK], zp[MC];      /* logits */
} acts;

/* gradient buffers of one step's activations */
typedef struct dacts {
    float dx[MT * MD], dx1[MT * MD], dln[MT * MD], dqkv[MT * 3 * MD], datty[MT * MD], dh[MT * MHID], dg[MT * MHID];
    float dlf[MT * MD], scratch[MT];
} dacts;

/* The classes of token pairs for the attention bias: 1 a token and
 * itself; in one slice's tree, 2 parent and child, 3 two apart
 * (grandparent, sibling), 4 three or four apart, 5 farther or in another
 * tree of the slice; 6 a trace token and the candidate its slice is
 * around; 0 every other pair. Tree distances are over the trace tokens'
 * parents (a parent outside the window ends the path). */
static void pair_classes(const teller_model_sample *s, acts *a)
{
    int T = a->T, t0 = 1 + a->nc + a->nl, ntr = a->ntr;
    memset(a->rel, 0, (size_t)T * T);
    for (int t = 0; t < T; t++)
        a->rel[t * T + t] = 1;
    /* ancestors of each trace token, nearest first: anc[i][d] at distance d + 1 */
    uint8_t anc[MTR][MTR], nanc[MTR];
    for (int i = 0; i < ntr; i++) {
        nanc[i] = 0;
        for (int q = s->tparent[i]; q != TELLER_MODEL_NO_PARENT && q < ntr && nanc[i] < MTR; q = s->tparent[q])
            anc[i][nanc[i]++] = (uint8_t)q;
    }
    for (int i = 0; i < ntr; i++) {
        int c = 1 + s->tseg[i];
        if (c < 1 + a->nc)
            a->rel[(t0 + i) * T + c] = a->rel[c * T + t0 + i] = 6;
        for (int j = 0; j < ntr; j++) {
            if (j == i || s->tseg[j] != s->tseg[i])
                continue;
            /* the distance through the nearest common ancestor (or one
             * being the other's) */
            int dist = 99;
            for (int x = -1; x < nanc[i]; x++) {
                int ai = x < 0 ? i : anc[i][x];
                for (int y = -1; y < nanc[j]; y++)
                    if ((y < 0 ? j : anc[j][y]) == ai && x + y + 2 < dist)
                        dist = x + y + 2;
            }
            a->rel[(t0 + i) * T + t0 + j] = (uint8_t)(dist == 1 ? 2 : dist == 2 ? 3 : dist <= 4 ? 4 : 5);
        }
    }
}

static void forward(const teller_model *m, const teller_model_sample *s, acts *a)
{
    const params *p = &m->p;
    int nc = (int)(s->ncands < MC ? s->ncands : MC), nl = (int)(s->nlogs < TELLER_MODEL_MAX_LOGS ? s->nlogs : TELLER_MODEL_MAX_LOGS);
    int ntr = (int)(s->ntrace < MTR ? s->ntrace : MTR);
    int T = 1 + nc + nl + ntr;
    a->T = T;
    a->nc = nc;
    a->nl = nl;
    a->ntr = ntr;
    /* embeddings */
    for (int j = 0; j < MSF; j++)
        a->sn[j] = (s->step[j] - m->smean[j]) / m->sstd[j];
    nn_linear_fwd(a->x0, a->sn, p->wstep, p->emod, MSF, MD);
    a->mod[0] = 0;
    for (int i = 0; i < nc; i++) {
        float *x = a->x0 + (1 + i) * MD;
        for (int j = 0; j < MF; j++)
            a->fn[i][j] = (s->feat[i][j] - m->fmean[j]) / m->fstd[j];
        nn_linear_fwd(x, a->fn[i], p->wnum, p->bnum, MF, MD);
        const float *ed = p->edet + (s->det[i] % MK) * MD, *el = p->elay + (s->layer[i] % MLAY) * MD, *em = p->emod + MD;
        for (int c = 0; c < MD; c++)
            x[c] += ed[c] + el[c] + em[c];
        a->mod[1 + i] = 1;
    }
    for (int i = 0; i < nl; i++) {
        float *x = a->x0 + (1 + nc + i) * MD;
        const float *eg = p->elog + (s->log[i] % MLOG) * MD, *em = p->emod + 2 * MD;
        for (int c = 0; c < MD; c++)
            x[c] = eg[c] + em[c];
        a->mod[1 + nc + i] = 2;
    }
    for (int i = 0; i < ntr; i++) {
        float *x = a->x0 + (1 + nc + nl + i) * MD;
        const float *es = p->esym + sym_row(m, s->tsym[i]) * MD, *ed = p->edep + (s->tdepth[i] < MDEP ? s->tdepth[i] : MDEP - 1) * MD;
        const float *eb = p->ebkt + (s->tbucket[i] % MBK) * MD, *eg = p->eseg + (s->tseg[i] % MSEG) * MD;
        const float *er = p->erel + (s->trel[i] % MREL) * MD, *em = p->emod + 3 * MD;
        for (int c = 0; c < MD; c++)
            x[c] = es[c] + ed[c] + eb[c] + eg[c] + er[c] + em[c];
        a->mod[1 + nc + nl + i] = 3;
    }
    pair_classes(s, a);
    /* encoder; every product takes all the step's rows at once (a
     * modality's feed-forward its block of rows) */
    int blk[MMOD + 1] = {0, 1, 1 + nc, 1 + nc + nl, T}; /* rows of the step, candidate, log, trace tokens */
    for (int l = 0; l < ML; l++) {
        const float *xin = l ? a->x2[l - 1] : a->x0;
        for (int t = 0; t < T; t++)
            nn_layernorm_fwd(a->ln1[l] + t * MD, &a->ln1m[l][t], &a->ln1r[l][t], xin + t * MD, p->ln1w + l * MD,
                             p->ln1b + l * MD, MD);
        nn_matmul_fwd(a->qkv[l], a->ln1[l], p->wqkv + (size_t)l * MD * 3 * MD, p->bqkv + l * 3 * MD, T, MD, 3 * MD);
        nn_attention_fwd(a->atty[l], a->att[l], a->qkv[l], a->rel, p->abias + l * MH * MNB, MNB, T, MD, MH);
        nn_matmul_fwd(a->x1[l], a->atty[l], p->wo + (size_t)l * MD * MD, p->bo + l * MD, T, MD, MD);
        for (int t = 0; t < T; t++) {
            for (int c = 0; c < MD; c++)
                a->x1[l][t * MD + c] += xin[t * MD + c];
            nn_layernorm_fwd(a->ln2[l] + t * MD, &a->ln2m[l][t], &a->ln2r[l][t], a->x1[l] + t * MD, p->ln2w + l * MD,
                             p->ln2b + l * MD, MD);
        }
        for (int md = 0; md < MMOD; md++) {
            int t0 = blk[md], rows = blk[md + 1] - blk[md];
            size_t lm = (size_t)l * MMOD + (size_t)md;
            if (rows <= 0)
                continue;
            nn_matmul_fwd(a->h[l] + t0 * MHID, a->ln2[l] + t0 * MD, p->w1 + lm * MD * MHID, p->b1 + lm * MHID, rows, MD, MHID);
            nn_gelu_fwd(a->g[l] + t0 * MHID, a->h[l] + t0 * MHID, rows * MHID);
            nn_matmul_fwd(a->x2[l] + t0 * MD, a->g[l] + t0 * MHID, p->w2 + lm * MHID * MD, p->b2 + lm * MD, rows, MHID, MD);
        }
        for (int k = 0; k < T * MD; k++)
            a->x2[l][k] += a->x1[l][k];
    }
    for (int t = 0; t < T; t++)
        nn_layernorm_fwd(a->lf + t * MD, &a->lfm[t], &a->lfr[t], a->x2[ML - 1] + t * MD, p->lnfw, p->lnfb, MD);
    /* heads */
    nn_linear_fwd(&a->za, a->lf, p->wab, p->bab, MD, 1);
    nn_linear_fwd(a->zk, a->lf, p->wkind, p->bkind, MD, MK);
    for (int i = 0; i < nc; i++)
        nn_linear_fwd(&a->zp[i], a->lf + (1 + i) * MD, p->wptr, NULL, MD, 1);
}

/* class weights of the losses (unit_weights: all 1, for the gradient test) */
typedef struct lossw {
    float ab[2];   /* normal, abnormal */
    float kind[MK];
} lossw;

static double log_clamped(double x) { return log(x > 1e-12 ? x : 1e-12); }

/* The loss of one forward pass; with g, its gradient added into g's
 * parameters (dl: scratch for the activations' gradients). */
static double loss_backward(const teller_model *m, const teller_model_sample *s, const acts *a, const lossw *w,
                            params *g, dacts *dl)
{
    int nc = a->nc, T = a->T, y = s->abnormal ? 1 : 0, kind = s->kind < MK ? s->kind : 0;
    double pa = 1.0 / (1.0 + exp(-(double)a->za));
    double loss = -w->ab[y] * (y ? log_clamped(pa) : log_clamped(1 - pa));
    float dza = (float)(w->ab[y] * (pa - y));
    float pk[MK], dzk[MK], pp[MC], dzp[MC];
    nn_softmax(pk, a->zk, MK);
    loss -= w->kind[kind] * log_clamped(pk[kind]);
    for (int k = 0; k < MK; k++)
        dzk[k] = w->kind[kind] * (pk[k] - (k == kind));
    int ptr = y && s->root >= 0 && s->root < nc;
    if (ptr) {
        nn_softmax(pp, a->zp, nc);
        loss -= log_clamped(pp[s->root]);
        for (int i = 0; i < nc; i++)
            dzp[i] = pp[i] - (i == s->root);
    }
    if (!g)
        return loss;
    const params *p = &m->p;
    /* heads */
    memset(dl->dlf, 0, sizeof(float) * (size_t)T * MD);
    nn_linear_bwd(dl->dlf, g->wab, g->bab, &dza, a->lf, p->wab, MD, 1);
    nn_linear_bwd(dl->dlf, g->wkind, g->bkind, dzk, a->lf, p->wkind, MD, MK);
    for (int i = 0; ptr && i < nc; i++)
        nn_linear_bwd(dl->dlf + (1 + i) * MD, g->wptr, NULL, &dzp[i], a->lf + (1 + i) * MD, p->wptr, MD, 1);
    memset(dl->dx, 0, sizeof(float) * (size_t)T * MD);
    for (int t = 0; t < T; t++)
        nn_layernorm_bwd(dl->dx + t * MD, g->lnfw, g->lnfb, dl->dlf + t * MD, a->x2[ML - 1] + t * MD, a->lfm[t], a->lfr[t],
                         p->lnfw, MD);
    /* encoder, last layer first; dl->dx holds d(layer output) */
    int blk[MMOD + 1] = {0, 1, 1 + nc, 1 + nc + a->nl, T};
    for (int l = ML - 1; l >= 0; l--) {
        const float *xin = l ? a->x2[l - 1] : a->x0;
        /* x2 = x1 + FFN_m(LN2(x1)) */
        memcpy(dl->dx1, dl->dx, sizeof(float) * (size_t)T * MD);
        memset(dl->dh, 0, sizeof(float) * (size_t)T * MHID);
        memset(dl->dg, 0, sizeof(float) * (size_t)T * MHID);
        memset(dl->dln, 0, sizeof(float) * (size_t)T * MD);
        for (int md = 0; md < MMOD; md++) {
            int t0 = blk[md], rows = blk[md + 1] - blk[md];
            size_t lm = (size_t)l * MMOD + (size_t)md;
            if (rows <= 0)
                continue;
            nn_matmul_bwd(dl->dg + t0 * MHID, g->w2 + lm * MHID * MD, g->b2 + lm * MD, dl->dx + t0 * MD, a->g[l] + t0 * MHID,
                          p->w2 + lm * MHID * MD, rows, MHID, MD);
            nn_gelu_bwd(dl->dh + t0 * MHID, a->h[l] + t0 * MHID, dl->dg + t0 * MHID, rows * MHID);
            nn_matmul_bwd(dl->dln + t0 * MD, g->w1 + lm * MD * MHID, g->b1 + lm * MHID, dl->dh + t0 * MHID,
                          a->ln2[l] + t0 * MD, p->w1 + lm * MD * MHID, rows, MD, MHID);
        }
        for (int t = 0; t < T; t++)
            nn_layernorm_bwd(dl->dx1 + t * MD, g->ln2w + l * MD, g->ln2b + l * MD, dl->dln + t * MD, a->x1[l] + t * MD,
                             a->ln2m[l][t], a->ln2r[l][t], p->ln2w + l * MD, MD);
        /* x1 = xin + Wo . attention(qkv(LN1(xin))) */
        memcpy(dl->dx, dl->dx1, sizeof(float) * (size_t)T * MD);
        memset(dl->datty, 0, sizeof(float) * (size_t)T * MD);
        memset(dl->dqkv, 0, sizeof(float) * (size_t)T * 3 * MD);
        memset(dl->dln, 0, sizeof(float) * (size_t)T * MD);
        nn_matmul_bwd(dl->datty, g->wo + (size_t)l * MD * MD, g->bo + l * MD, dl->dx1, a->atty[l], p->wo + (size_t)l * MD * MD,
                      T, MD, MD);
        nn_attention_bwd(dl->dqkv, g->abias + l * MH * MNB, dl->scratch, dl->datty, a->qkv[l], a->att[l], a->rel, MNB, T,
                         MD, MH);
        nn_matmul_bwd(dl->dln, g->wqkv + (size_t)l * MD * 3 * MD, g->bqkv + l * 3 * MD, dl->dqkv, a->ln1[l],
                      p->wqkv + (size_t)l * MD * 3 * MD, T, MD, 3 * MD);
        for (int t = 0; t < T; t++)
            nn_layernorm_bwd(dl->dx + t * MD, g->ln1w + l * MD, g->ln1b + l * MD, dl->dln + t * MD, xin + t * MD,
                             a->ln1m[l][t], a->ln1r[l][t], p->ln1w + l * MD, MD);
    }
    /* embeddings */
    nn_linear_bwd(NULL, g->wstep, g->emod, dl->dx, a->sn, p->wstep, MSF, MD);
    for (int t = 1; t < T; t++) {
        const float *d = dl->dx + t * MD;
        float *em = g->emod + a->mod[t] * MD, *e2;
        if (a->mod[t] == 1) {
            int i = t - 1;
            nn_linear_bwd(NULL, g->wnum, g->bnum, d, a->fn[i], p->wnum, MF, MD);
            float *ed = g->edet + (s->det[i] % MK) * MD;
            e2 = g->elay + (s->layer[i] % MLAY) * MD;
            for (int c = 0; c < MD; c++)
                ed[c] += d[c];
        } else if (a->mod[t] == 2) {
            e2 = g->elog + (s->log[t - 1 - nc] % MLOG) * MD;
        } else {
            int i = t - 1 - nc - a->nl;
            e2 = g->esym + sym_row(m, s->tsym[i]) * MD;
            float *ed = g->edep + (s->tdepth[i] < MDEP ? s->tdepth[i] : MDEP - 1) * MD;
            float *eb = g->ebkt + (s->tbucket[i] % MBK) * MD, *eg = g->eseg + (s->tseg[i] % MSEG) * MD;
            float *er = g->erel + (s->trel[i] % MREL) * MD;
            for (int c = 0; c < MD; c++) {
                ed[c] += d[c];
                eb[c] += d[c];
                eg[c] += d[c];
                er[c] += d[c];
            }
        }
        for (int c = 0; c < MD; c++) {
            em[c] += d[c];
            e2[c] += d[c];
        }
    }
    return loss;
}

static const lossw unit_weights = {{1, 1}, {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}};

int teller_model_predict(const teller_model *m, const teller_model_sample *s, teller_model_out *out)
{
    acts *a = malloc(sizeof *a);
    if (!a)
        return -1;
    forward(m, s, a);
    memset(out, 0, sizeof *out);
    out->p_abnormal = (float)(1.0 / (1.0 + exp(-(double)a->za)));
    nn_softmax(out->p_kind, a->zk, MK);
    if (a->nc)
        nn_softmax(out->p_root, a->zp, a->nc);
    free(a);
    return 0;
}

int teller_model_out_valid(const teller_model_out *o, uint32_t ncands)
{
    int ok = o->p_abnormal >= 0 && o->p_abnormal <= 1;
    for (int k = 0; k < TELLER_FAULT_COUNT; k++)
        ok &= o->p_kind[k] >= 0 && o->p_kind[k] <= 1;
    for (uint32_t c = 0; c < ncands && c < TELLER_DIAG_MAX_CANDS; c++)
        ok &= o->p_root[c] >= 0 && o->p_root[c] <= 1;
    return ok;
}

uint32_t teller_model_root(const teller_model_sample *s, const teller_model_out *o, double confidence, double share)
{
    uint32_t nc = s->ncands < MC ? s->ncands : MC, best = 0;
    if (confidence > 0 && share >= TELLER_MODEL_VETO_SHARE)
        return 0;
    double q[MC], sum = 0;
    for (uint32_t c = 0; c < nc; c++) {
        q[c] = (double)o->p_root[c] * o->p_kind[s->det[c] % MK];
        sum += q[c];
        if (q[c] > q[best])
            best = c;
    }
    return sum > 0 && q[best] >= confidence * sum ? best : 0;
}

double teller_model_step_score(const teller_model_out *o, double numeric, double share, double veto_share,
                               double threshold, int fact)
{
    double p = o->p_abnormal;
    if (numeric < threshold)
        return p < numeric ? p : numeric;
    if (p >= threshold)
        return p;
    return p >= TELLER_MODEL_VETO || share >= veto_share ? threshold : fact ? numeric : p;
}

static double mean_loss(const teller_model *m, const teller_model_sample *s, size_t n, const lossw *w, acts *a)
{
    double sum = 0;
    for (size_t i = 0; i < n; i++) {
        forward(m, &s[i], a);
        sum += loss_backward(m, &s[i], a, w, NULL, NULL);
    }
    return n ? sum / (double)n : 0;
}

/* ---- training ---- */

size_t nn_model_num_params(void) { return num_params(); }

int nn_model_tensors(size_t *off, size_t *n, int max)
{
    size_t at = 0;
    int k = 0;
    for (; k < NTENSORS && k < max; k++) {
        off[k] = at;
        n[k] = tensor_size[k];
        at += tensor_size[k];
    }
    return k;
}
float *nn_model_weights(teller_model *m) { return m->w; }

double nn_model_loss_grad(const teller_model *m, const teller_model_sample *s, float *grad)
{
    acts *a = malloc(sizeof *a);
    dacts *dl = malloc(sizeof *dl);
    double loss = NAN;
    if (a && dl) {
        forward(m, s, a);
        params g;
        if (grad) {
            memset(grad, 0, num_params() * sizeof *grad);
            point_params(&g, grad);
        }
        loss = loss_backward(m, s, a, &unit_weights, grad ? &g : NULL, dl);
    }
    free(a);
    free(dl);
    return loss;
}

/* mean and spread of every input over the training samples: what the
 * model file keeps so that any later input is scaled the same way */
static void fit_normalisation(teller_model *m, const teller_model_sample *s, size_t n)
{
    double fs[MF] = {0}, fq[MF] = {0}, ss[MSF] = {0}, sq[MSF] = {0}, nf = 0;
    for (size_t i = 0; i < n; i++) {
        for (int j = 0; j < MSF; j++) {
            ss[j] += s[i].step[j];
            sq[j] += (double)s[i].step[j] * s[i].step[j];
        }
        for (uint32_t c = 0; c < s[i].ncands && c < MC; c++, nf++)
            for (int j = 0; j < MF; j++) {
                fs[j] += s[i].feat[c][j];
                fq[j] += (double)s[i].feat[c][j] * s[i].feat[c][j];
            }
    }
    for (int j = 0; j < MF; j++) {
        double mu = nf ? fs[j] / nf : 0, var = nf ? fq[j] / nf - mu * mu : 1;
        m->fmean[j] = (float)mu;
        m->fstd[j] = var > 1e-8 ? (float)sqrt(var) : 1.0f;
    }
    for (int j = 0; j < MSF; j++) {
        double mu = n ? ss[j] / (double)n : 0, var = n ? sq[j] / (double)n - mu * mu : 1;
        m->smean[j] = (float)mu;
        m->sstd[j] = var > 1e-8 ? (float)sqrt(var) : 1.0f;
    }
}

/* Rare classes weigh more: sqrt(n / (classes * count)), within [0.2, 5]. */
static void fit_weights(lossw *w, const teller_model_sample *s, size_t n)
{
    double cab[2] = {0}, ck[MK] = {0};
    for (size_t i = 0; i < n; i++) {
        cab[s[i].abnormal ? 1 : 0]++;
        ck[s[i].kind < MK ? s[i].kind : 0]++;
    }
    int present = 0;
    for (int k = 0; k < MK; k++)
        present += ck[k] > 0;
    for (int y = 0; y < 2; y++) {
        double x = cab[y] ? sqrt((double)n / (2.0 * cab[y])) : 1;
        w->ab[y] = (float)(x < 0.2 ? 0.2 : x > 5 ? 5 : x);
    }
    for (int k = 0; k < MK; k++) {
        double x = ck[k] ? sqrt((double)n / (present * ck[k])) : 1;
        w->kind[k] = (float)(x < 0.2 ? 0.2 : x > 5 ? 5 : x);
    }
}

/* The operating point: the threshold on P(abnormal), among 0.05, 0.06,
 * ..., 0.95, that gives the best step F1 on the samples (when several do,
 * the middle of the first and the last; a step without candidates is
 * normal, as in teller_diagnose).
 * The abnormal head's bias is moved by its logit, so that P >= 0.5 after
 * the move is P >= the threshold before it. Returns the threshold. */
static float calibrate(teller_model *m, const teller_model_sample *s, size_t n, acts *a)
{
    size_t pos = 0, tp[91] = {0}, pp[91] = {0};
    for (size_t i = 0; i < n; i++) {
        pos += s[i].abnormal != 0;
        if (!s[i].ncands)
            continue;
        forward(m, &s[i], a);
        double p = 1.0 / (1.0 + exp(-(double)a->za));
        for (int k = 0; k < 91 && p >= 0.05 + 0.01 * k - 1e-9; k++) {
            pp[k]++;
            tp[k] += s[i].abnormal != 0;
        }
    }
    int first = 0, last = 0;
    double bf = -1;
    for (int k = 0; k < 91; k++) {
        double f = pos + pp[k] ? 2.0 * (double)tp[k] / (double)(pos + pp[k]) : 0;
        if (f > bf + 1e-12) {
            bf = f;
            first = last = k;
        } else if (f > bf - 1e-12) {
            last = k;
        }
    }
    double t = 0.05 + 0.005 * (first + last);
    m->p.bab[0] -= (float)log(t / (1 - t));
    return (float)t;
}

/* A step's score as teller_diagnose's verdict leaves it: one that is no
 * fact is at most the step's slowness. */
static double judged(const teller_model_sample *s, double score)
{
    return s->fact || score <= s->slowness ? score : s->slowness;
}

/* The calibrated model's figures on samples: step F1 as teller_diagnose
 * decides (a step without candidates is normal), of the model alone
 * (P >= 0.5, no numeric alarm standing) and of the numeric stage alone
 * (its best score, numeric, >= 0.5), and over the abnormal steps the kind's accuracy
 * and, where the root is a candidate, the pointer's. */
static void score_samples(const teller_model *m, const teller_model_sample *s, size_t n, acts *a,
                          double veto_share, teller_train_report *rep)
{
    size_t pos = 0, pp = 0, tp = 0, mpp = 0, mtp = 0, npp = 0, ntp = 0, kind_hit = 0, ptr_n = 0, ptr_hit = 0;
    for (size_t i = 0; i < n; i++) {
        pos += s[i].abnormal != 0;
        if (!s[i].ncands)
            continue;
        int nflag = judged(&s[i], s[i].numeric) >= 0.5;
        npp += nflag;
        ntp += nflag && s[i].abnormal;
        forward(m, &s[i], a);
        teller_model_out o; /* as teller_diagnose judges the step */
        o.p_abnormal = (float)(1.0 / (1.0 + exp(-(double)a->za)));
        int flag = judged(&s[i], teller_model_step_score(&o, s[i].numeric, s[i].share, veto_share, 0.5, s[i].fact)) >= 0.5,
            mflag = o.p_abnormal >= 0.5f;
        pp += flag;
        tp += flag && s[i].abnormal;
        mpp += mflag;
        mtp += mflag && s[i].abnormal;
        if (!s[i].abnormal)
            continue;
        int k = 0;
        for (int j = 1; j < MK; j++)
            k = a->zk[j] > a->zk[k] ? j : k;
        kind_hit += k == s[i].kind;
        if (s[i].root >= 0 && s[i].root < a->nc) {
            int r = 0;
            for (int j = 1; j < a->nc; j++)
                r = a->zp[j] > a->zp[r] ? j : r;
            ptr_n++;
            ptr_hit += r == s[i].root;
        }
    }
    rep->f1 = pos + pp ? 2.0 * (double)tp / (double)(pos + pp) : 0;
    rep->f1_model = pos + mpp ? 2.0 * (double)mtp / (double)(pos + mpp) : 0;
    rep->f1_numeric = pos + npp ? 2.0 * (double)ntp / (double)(pos + npp) : 0;
    rep->kind_acc = pos ? (double)kind_hit / (double)pos : 0;
    rep->root_acc = ptr_n ? (double)ptr_hit / (double)ptr_n : 0;
}

/* The veto share among TELLER_MODEL_VETO_SHARES (the model's own first,
 * then the others from small to large) with the best step F1 on the
 * samples, the first when several tie; *rep gets its figures. */
static double best_veto_share(const teller_model *m, const teller_model_sample *s, size_t n, acts *a,
                              teller_train_report *rep)
{
    static const double shares[] = TELLER_MODEL_VETO_SHARES;
    double best = m->veto_share;
    score_samples(m, s, n, a, best, rep);
    for (size_t i = 0; i < sizeof shares / sizeof *shares; i++) {
        teller_train_report r = {0};
        score_samples(m, s, n, a, shares[i], &r);
        if (r.f1 > rep->f1 + 1e-12) {
            *rep = r;
            best = shares[i];
        }
    }
    return best;
}

teller_status teller_model_train(teller_model *m, const teller_model_sample *train, size_t ntrain,
                                 const teller_model_sample *val, size_t nval, const teller_train_opts *o,
                                 teller_train_report *rep, teller_error *err)
{
    int max_epochs = o->max_epochs > 0 ? o->max_epochs : 60, patience = o->patience > 0 ? o->patience : 6;
    int batch = o->batch > 0 ? o->batch : 16;
    float lr = o->lr > 0 ? o->lr : o->fine_tune ? 1e-4f : 1e-3f, wd = o->weight_decay > 0 ? o->weight_decay : o->weight_decay < 0 ? 0 : 0.01f;
    if (!ntrain)
        return teller_error_set(err, TELLER_ERR_ARG, "(train)", 0, "no training samples");
    if (!o->fine_tune)
        fit_normalisation(m, train, ntrain);
    lossw w;
    fit_weights(&w, train, ntrain);
    size_t n = num_params();
    float *grad = calloc(n, sizeof *grad), *am = calloc(n, sizeof *am), *av = calloc(n, sizeof *av);
    float *best = malloc(n * sizeof *best);
    size_t *order = malloc(ntrain * sizeof *order);
    acts *a = malloc(sizeof *a);
    dacts *dl = malloc(sizeof *dl);
    if (!grad || !am || !av || !best || !order || !a || !dl) {
        free(grad), free(am), free(av), free(best), free(order), free(a), free(dl);
        return teller_error_set(err, TELLER_ERR_NOMEM, "(train)", 0, "out of memory");
    }
    params g;
    point_params(&g, grad);
    memcpy(best, m->w, n * sizeof *best);
    for (size_t i = 0; i < ntrain; i++)
        order[i] = i;
    uint64_t rng = o->seed;
    /* fine-tuning keeps the base's weights (epoch 0) unless an epoch does
     * better on the validation steps, and keeps the base itself unless the
     * tuned model's step F1 on them is higher than the base's (w0) */
    double best_loss = INFINITY, best_train = 0;
    teller_train_report base_rep = {0};
    float *w0 = NULL;
    if (o->fine_tune && nval) {
        if (!(w0 = malloc(n * sizeof *w0))) {
            free(grad), free(am), free(av), free(best), free(order), free(a), free(dl);
            return teller_error_set(err, TELLER_ERR_NOMEM, "(train)", 0, "out of memory");
        }
        memcpy(w0, m->w, n * sizeof *w0);
        best_loss = mean_loss(m, val, nval, &w, a);
        best_train = mean_loss(m, train, ntrain, &w, a);
        base_rep.train_loss = best_train;
        base_rep.val_loss = best_loss;
    }
    int best_epoch = 0, since = 0, epoch = 0;
    long t = 0;
    while (epoch < max_epochs && since < patience) {
        epoch++;
        for (size_t i = ntrain; i > 1; i--) {
            size_t j = (size_t)(rng_next(&rng) % i), x = order[i - 1];
            order[i - 1] = order[j];
            order[j] = x;
        }
        double sum = 0;
        for (size_t b0 = 0; b0 < ntrain; b0 += (size_t)batch) {
            size_t b1 = b0 + (size_t)batch < ntrain ? b0 + (size_t)batch : ntrain;
            memset(grad, 0, n * sizeof *grad);
            for (size_t i = b0; i < b1; i++) {
                forward(m, &train[order[i]], a);
                sum += loss_backward(m, &train[order[i]], a, &w, &g, dl);
            }
            /* mean over the batch, clipped to a global norm of 1 */
            double norm = 0, sc = 1.0 / (double)(b1 - b0);
            for (size_t k = 0; k < n; k++)
                norm += (double)grad[k] * grad[k] * sc * sc;
            norm = sqrt(norm);
            if (norm > 1)
                sc /= norm;
            t++;
            double c1 = 1 - pow(0.9, (double)t), c2 = 1 - pow(0.999, (double)t);
            for (size_t k = 0; k < n; k++) {
                float gk = (float)(grad[k] * sc);
                am[k] = 0.9f * am[k] + 0.1f * gk;
                av[k] = 0.999f * av[k] + 0.001f * gk * gk;
                double mh = am[k] / c1, vh = av[k] / c2;
                m->w[k] -= (float)(lr * (mh / (sqrt(vh) + 1e-8) + wd * m->w[k]));
            }
        }
        double tl = sum / (double)ntrain, vl = nval ? mean_loss(m, val, nval, &w, a) : tl;
        int better = vl < best_loss - 1e-6;
        if (better) {
            best_loss = vl;
            best_train = tl;
            best_epoch = epoch;
            since = 0;
            memcpy(best, m->w, n * sizeof *best);
        } else {
            since++;
        }
        if (o->progress)
            o->progress(o->ctx, epoch, tl, vl, better);
    }
    memcpy(m->w, best, n * sizeof *best);
    const teller_model_sample *cs = nval ? val : train;
    size_t ncs = nval ? nval : ntrain;
    float thr = calibrate(m, cs, ncs, a);
    teller_train_report r = {0};
    double share = w0 ? best_veto_share(m, val, nval, a, &r) : m->veto_share;
    if (!w0)
        score_samples(m, cs, ncs, a, share, &r);
    r.threshold = thr;
    r.epochs = epoch;
    r.best_epoch = best_epoch;
    r.train_loss = best_train;
    r.val_loss = best_loss;
    if (w0) { /* the base's weights, at their own best share, unless the tuned ones do better */
        memcpy(best, m->w, n * sizeof *best);
        memcpy(m->w, w0, n * sizeof *w0);
        double bshare = best_veto_share(m, val, nval, a, &base_rep);
        if (r.f1 > base_rep.f1)
            memcpy(m->w, best, n * sizeof *best);
        else {
            double tuned = r.f1;
            r = base_rep;
            r.kept_base = 1;
            r.epochs = epoch;
            r.f1_tuned = tuned;
            share = bshare;
        }
        m->veto_share = (float)share;
    }
    if (rep)
        *rep = r;
    free(grad), free(am), free(av), free(best), free(order), free(a), free(dl), free(w0);
    return TELLER_OK;
}

/* ---- the model file ----
 * Little-endian throughout: "TLRMODEL", u32 version, 21 u32 dimensions
 * (width, layers, heads, hidden, modalities, candidate features, step
 * features, kinds, layers of the trace, log buckets, candidates, log
 * tokens; symbol embeddings, depths, duration buckets, slices, slice
 * relations, attention bias classes, trace tokens a slice, slice events,
 * base tokens a slice), u64 parameter count, u32 the trace tokens (0 TPE,
 * 1 raw), u32 the inputs left out (TELLER_MODEL_WITHOUT_*), the recipe
 * (TELLER_MODEL_RECIPE_MAX bytes, NUL-padded), f32 the veto's share
 * (teller_model_veto_share), u64 the vocabulary's
 * length and its bytes (a TPE vocabulary file, tpe.h), the normalisation
 * (f32 candidate feature means, spreads, step feature means, spreads), the
 * f32 parameters, and the FNV-1a 64 hash of every byte before it, which
 * is the model's id. Version 1 had no trace modality, version 2 no recipe
 * and no peers among the step's features. */

#define MODEL_MAGIC   "TLRMODEL"
#define MODEL_VERSION 3
#define NDIMS         21
#define MAX_VOCAB     ((size_t)16 << 20) /* bytes; a larger vocabulary is not a model's */

static const uint32_t model_dims[NDIMS] = {MD,   ML,  MH,   MHID, MMOD, MF,  MSF, MK, MLAY, MLOG, MC,
                                           TELLER_MODEL_MAX_LOGS, MV, MDEP, MBK, MSEG, MREL, MNB,
                                           TELLER_MODEL_TRACE_TOKENS, TELLER_MODEL_SLICE_EVENTS, TELLER_MODEL_SLICE_BASE};

enum { HEADER = 8 + 4 + 4 * NDIMS + 8 + 4 + 4 + TELLER_MODEL_RECIPE_MAX + 4 + 8 }; /* up to the vocabulary's bytes */
enum { RECIPE_AT = 8 + 4 + 4 * NDIMS + 8 + 4 + 4, SHARE_AT = RECIPE_AT + TELLER_MODEL_RECIPE_MAX, VLEN_AT = SHARE_AT + 4 };

static size_t file_size(size_t vocab_len) { return HEADER + vocab_len + 4 * (2 * MF + 2 * MSF) + 4 * num_params() + 8; }

static void put_u32(unsigned char *b, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        b[i] = (unsigned char)(v >> (8 * i));
}

static uint32_t get_u32(const unsigned char *b)
{
    return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}

static void put_u64(unsigned char *b, uint64_t v)
{
    put_u32(b, (uint32_t)v);
    put_u32(b + 4, (uint32_t)(v >> 32));
}

static uint64_t get_u64(const unsigned char *b) { return get_u32(b) | (uint64_t)get_u32(b + 4) << 32; }

static void put_floats(unsigned char **b, const float *x, size_t n)
{
    for (size_t i = 0; i < n; i++, *b += 4) {
        uint32_t u;
        memcpy(&u, &x[i], 4);
        put_u32(*b, u);
    }
}

/* 0, or -1 when a value is not finite */
static int get_floats(const unsigned char **b, float *x, size_t n)
{
    int bad = 0;
    for (size_t i = 0; i < n; i++, *b += 4) {
        uint32_t u = get_u32(*b);
        memcpy(&x[i], &u, 4);
        bad |= !isfinite(x[i]);
    }
    return bad ? -1 : 0;
}

teller_status teller_model_save(teller_model *m, const char *path, teller_error *err)
{
    size_t size = file_size(m->vocab_len);
    unsigned char *buf = malloc(size), *b = buf;
    if (!buf)
        return teller_error_set(err, TELLER_ERR_NOMEM, path, 0, "out of memory");
    memcpy(b, MODEL_MAGIC, 8);
    put_u32(b + 8, MODEL_VERSION);
    b += 12;
    for (int i = 0; i < NDIMS; i++, b += 4)
        put_u32(b, model_dims[i]);
    put_u64(b, num_params());
    put_u32(b + 8, (uint32_t)m->tokens);
    put_u32(b + 12, m->without);
    memset(b + 16, 0, TELLER_MODEL_RECIPE_MAX);
    memcpy(b + 16, m->recipe, strlen(m->recipe));
    b += 16 + TELLER_MODEL_RECIPE_MAX;
    put_floats(&b, &m->veto_share, 1);
    put_u64(b, m->vocab_len);
    b += 8;
    memcpy(b, m->vocab, m->vocab_len);
    b += m->vocab_len;
    put_floats(&b, m->fmean, MF);
    put_floats(&b, m->fstd, MF);
    put_floats(&b, m->smean, MSF);
    put_floats(&b, m->sstd, MSF);
    put_floats(&b, m->w, num_params());
    uint64_t id = kmap_hash_bytes(buf, (size_t)(b - buf));
    put_u64(b, id);
    FILE *f = fopen(path, "wb");
    int ok = f && fwrite(buf, 1, size, f) == size;
    if (f && fclose(f) != 0)
        ok = 0;
    free(buf);
    if (ok)
        m->id = id; /* what it is known by from now on */
    return ok ? TELLER_OK : teller_error_set(err, TELLER_ERR_IO, path, 0, "cannot write the model file");
}

teller_status teller_model_load_bytes(const void *p, size_t n, const char *name, teller_model **out, teller_error *err)
{
    const unsigned char *b = p;
    *out = NULL;
    if (n < 8 || memcmp(b, MODEL_MAGIC, 8))
        return teller_error_set(err, TELLER_ERR_FORMAT, name, 0, "not a teller model file (no TLRMODEL magic)");
    if (n < 12)
        return teller_error_set(err, TELLER_ERR_TRUNCATED, name, n, "truncated model file: %zu bytes, the header alone is %d",
                                n, HEADER);
    if (get_u32(b + 8) != MODEL_VERSION)
        return teller_error_set(err, TELLER_ERR_FORMAT, name, 8,
                                "model file version %u; this teller reads version %d (train the model again)",
                                get_u32(b + 8), MODEL_VERSION);
    if (n < HEADER)
        return teller_error_set(err, TELLER_ERR_TRUNCATED, name, n, "truncated model file: %zu bytes, the header alone is %d",
                                n, HEADER);
    for (int i = 0; i < NDIMS; i++)
        if (get_u32(b + 12 + 4 * i) != model_dims[i])
            return teller_error_set(err, TELLER_ERR_FORMAT, name, (uint64_t)(12 + 4 * i),
                                    "model dimension %d is %u, this teller's model has %u (written by another version)", i,
                                    get_u32(b + 12 + 4 * i), model_dims[i]);
    const unsigned char *h = b + 12 + 4 * NDIMS;
    uint64_t vlen = get_u64(b + VLEN_AT);
    uint32_t tok = get_u32(h + 8), without = get_u32(h + 12);
    if (get_u64(h) != num_params() || vlen > MAX_VOCAB || n > file_size((size_t)vlen))
        return teller_error_set(err, TELLER_ERR_FORMAT, name, (uint64_t)(12 + 4 * NDIMS),
                                "model file holds %llu parameters and a %llu-byte vocabulary in %zu bytes, this teller's "
                                "model %zu parameters",
                                (unsigned long long)get_u64(h), (unsigned long long)vlen, n, num_params());
    if (n < file_size((size_t)vlen))
        return teller_error_set(err, TELLER_ERR_TRUNCATED, name, n, "truncated model file: %zu bytes of %zu", n,
                                file_size((size_t)vlen));
    if (get_u64(b + n - 8) != kmap_hash_bytes(b, n - 8))
        return teller_error_set(err, TELLER_ERR_FORMAT, name, n - 8, "model file checksum mismatch: the file is corrupt");
    if (tok != TELLER_MODEL_TOKENS_TPE && tok != TELLER_MODEL_TOKENS_RAW)
        return teller_error_set(err, TELLER_ERR_FORMAT, name, (uint64_t)(h + 8 - b), "model file names trace tokens %u", tok);
    if (without & ~(uint32_t)(TELLER_MODEL_WITHOUT_TRACE | TELLER_MODEL_WITHOUT_LOGS | TELLER_MODEL_WITHOUT_NUMBERS))
        return teller_error_set(err, TELLER_ERR_FORMAT, name, (uint64_t)(h + 12 - b), "model file leaves out inputs %#x",
                                without);
    if (!memchr(b + RECIPE_AT, 0, TELLER_MODEL_RECIPE_MAX))
        return teller_error_set(err, TELLER_ERR_FORMAT, name, RECIPE_AT, "model file's recipe is not a string");
    float vshare;
    const unsigned char *sp = b + SHARE_AT;
    if (get_floats(&sp, &vshare, 1) || !(vshare > 0 && vshare <= 1))
        return teller_error_set(err, TELLER_ERR_FORMAT, name, SHARE_AT, "model file's veto share is not in (0, 1]");
    teller_model *m = teller_model_create(0);
    if (!m)
        return teller_error_set(err, TELLER_ERR_NOMEM, name, 0, "out of memory");
    teller_tpe_vocab *v = NULL;
    teller_error verr;
    teller_status vs = teller_tpe_vocab_parse((const char *)b + HEADER, (size_t)vlen, name, &v, &verr);
    if (vs != TELLER_OK || teller_model_set_vocab(m, v, (teller_model_tokens)tok, &verr) != TELLER_OK) {
        teller_tpe_vocab_free(v);
        teller_model_free(m);
        return vs == TELLER_ERR_NOMEM ? teller_error_set(err, vs, name, 0, "out of memory")
                                      : teller_error_set(err, TELLER_ERR_FORMAT, name, HEADER,
                                                         "model file's TPE vocabulary: %s", verr.msg);
    }
    teller_tpe_vocab_free(v);
    m->without = without;
    teller_model_set_recipe(m, (const char *)b + RECIPE_AT);
    m->veto_share = vshare;
    m->id = get_u64(b + n - 8);
    b += HEADER + vlen;
    if (get_floats(&b, m->fmean, MF) || get_floats(&b, m->fstd, MF) || get_floats(&b, m->smean, MSF) ||
        get_floats(&b, m->sstd, MSF) || get_floats(&b, m->w, num_params())) {
        teller_model_free(m);
        return teller_error_set(err, TELLER_ERR_FORMAT, name, 0, "model file holds a value that is not a finite number");
    }
    for (int j = 0; j < MF; j++)
        if (!(m->fstd[j] > 0)) {
            teller_model_free(m);
            return teller_error_set(err, TELLER_ERR_FORMAT, name, 0, "model file has a feature spread that is not positive");
        }
    for (int j = 0; j < MSF; j++)
        if (!(m->sstd[j] > 0)) {
            teller_model_free(m);
            return teller_error_set(err, TELLER_ERR_FORMAT, name, 0, "model file has a feature spread that is not positive");
        }
    *out = m;
    return TELLER_OK;
}

void teller_model_set_recipe(teller_model *m, const char *recipe)
{
    snprintf(m->recipe, sizeof m->recipe, "%s", recipe);
}

const char *teller_model_recipe(const teller_model *m) { return m->recipe; }

double teller_model_veto_share(const teller_model *m) { return m->veto_share; }

uint64_t teller_model_id(const teller_model *m) { return m->id; }

void teller_model_label(uint64_t id, const char *recipe, char *buf, size_t n)
{
    snprintf(buf, n, "model %016llx (%s)", (unsigned long long)id, recipe[0] ? recipe : "no recipe named");
}

teller_status teller_model_load(const char *path, teller_model **out, teller_error *err)
{
    *out = NULL;
    FILE *f = fopen(path, "rb");
    if (!f)
        return teller_error_set(err, TELLER_ERR_IO, path, 0, "cannot open the model file");
    /* the header first: it says how long the file is, so a huge foreign
     * file is refused without reading it all (and a model costs its size) */
    unsigned char head[HEADER];
    size_t n = fread(head, 1, HEADER, f), cap = n < HEADER ? n : file_size((size_t)get_u64(head + HEADER - 8));
    if (n == HEADER && (get_u64(head + HEADER - 8) > MAX_VOCAB || memcmp(head, MODEL_MAGIC, 8)))
        cap = HEADER; /* load_bytes names what is wrong */
    cap++; /* one byte more shows trailing bytes */
    unsigned char *buf = malloc(cap);
    if (!buf) {
        fclose(f);
        return teller_error_set(err, TELLER_ERR_NOMEM, path, 0, "out of memory");
    }
    memcpy(buf, head, n < cap ? n : cap);
    if (n == HEADER)
        n += fread(buf + n, 1, cap - n, f);
    int rerr = ferror(f);
    fclose(f);
    teller_status st = rerr ? teller_error_set(err, TELLER_ERR_IO, path, n, "cannot read the model file")
                            : teller_model_load_bytes(buf, n, path, out, err);
    free(buf);
    return st;
}

/* the bytes of src/model/default.tmod, embedded at build time (empty when
 * no default model was built) */
extern const unsigned char teller_default_model[];
extern const size_t teller_default_model_len;

teller_status teller_model_load_default(teller_model **out, teller_error *err)
{
    *out = NULL;
    if (!teller_default_model_len)
        return TELLER_OK;
    return teller_model_load_bytes(teller_default_model, teller_default_model_len, "(built-in default model)", out, err);
}
