/*
 * trace.c - the model's trace modality (model.h): for each of a step's
 * first TELLER_MODEL_TRACE_CANDS candidates, the causal-context slice
 * (slice.h) around its event, serialised (tpe.h) into the sample's base
 * sequence; then, with the model's vocabulary, the tokens the model reads:
 * TPE tokens (or the raw base tokens), a window of
 * TELLER_MODEL_TRACE_TOKENS around the seed, each with its depth, duration
 * bucket, slice relation, candidate and parent.
 *
 * The two stages are apart so that training can read every run first and
 * learn a vocabulary on the training slices before any token is made
 * (`teller train --tpe-vocab N`); diagnosing does both at once
 * (teller_model_step).
 */
#include <stdlib.h>
#include <string.h>

#include "teller/model.h"
#include "teller/slice.h"

struct teller_model_tracer {
    const teller_model  *m;   /* NULL: base sequences only */
    const teller_store  *st;
    teller_tpe_vocab    *v;
    int                  own; /* v is the tracer's (a copy of m's) */
    teller_tpe_ctx      *ctx;
};

teller_status teller_model_tracer_create(const teller_model *m, teller_tpe_vocab *v, const teller_store *st,
                                         teller_model_tracer **out, teller_error *err)
{
    *out = NULL;
    teller_model_tracer *t = calloc(1, sizeof *t);
    if (!t)
        return teller_error_set(err, TELLER_ERR_NOMEM, "(model)", 0, "out of memory");
    t->m = m;
    t->st = st;
    t->v = v;
    teller_status s = TELLER_OK;
    if (m && (teller_model_without(m) & TELLER_MODEL_WITHOUT_TRACE)) {
        *out = t; /* no slices to read: no vocabulary, no buckets */
        return TELLER_OK;
    }
    if (!v) {
        t->own = 1;
        s = teller_model_vocab(m, &t->v, err);
    }
    if (s == TELLER_OK)
        s = teller_tpe_ctx_create(st, t->v, &t->ctx, err);
    if (s != TELLER_OK) {
        teller_model_tracer_free(t);
        return s;
    }
    *out = t;
    return TELLER_OK;
}

void teller_model_tracer_free(teller_model_tracer *t)
{
    if (!t)
        return;
    teller_tpe_ctx_free(t->ctx);
    if (t->own)
        teller_tpe_vocab_free(t->v);
    free(t);
}

teller_status teller_model_trace_base(teller_model_tracer *t, const teller_diagnosis *d, size_t k,
                                      teller_model_sample *out, teller_error *err)
{
    const teller_diag_step *ds = &d->steps[k];
    memset(out->nbase, 0, sizeof out->nbase);
    memset(out->seed_pos, 0, sizeof out->seed_pos);
    teller_slice_opts so = teller_slice_defaults();
    so.max_events = TELLER_MODEL_SLICE_EVENTS;
    for (uint32_t j = 0; j < TELLER_MODEL_TRACE_CANDS && j < ds->ncands; j++) {
        uint32_t seed = d->cands[ds->first_cand + j].event;
        if (seed == TELLER_NONE)
            continue;
        teller_slice_item *items = NULL;
        size_t ni = 0;
        teller_status s = teller_slice_build(t->st, &seed, 1, &so, &items, &ni, err);
        if (s != TELLER_OK)
            return s;
        uint32_t ev[TELLER_MODEL_SLICE_EVENTS];
        for (size_t i = 0; i < ni; i++)
            ev[i] = items[i].event;
        teller_tpe_seq seq;
        memset(&seq, 0, sizeof seq);
        if ((s = teller_tpe_serialize_events(t->ctx, ev, ni, &seq, err)) != TELLER_OK) {
            free(items);
            return s;
        }
        uint32_t n = seq.n < TELLER_MODEL_SLICE_BASE ? (uint32_t)seq.n : TELLER_MODEL_SLICE_BASE;
        for (uint32_t i = 0; i < n; i++) {
            out->base_sym[j][i] = seq.sym[i];
            /* a parent comes before its child, so it is inside the first n */
            out->base_parent[j][i] = seq.parent[i] == TELLER_NONE ? TELLER_MODEL_NO_PARENT : (uint8_t)seq.parent[i];
            out->base_depth[j][i] = (uint8_t)(seq.depth[i] < 255 ? seq.depth[i] : 255);
            out->base_bucket[j][i] = seq.bucket[i];
            out->base_rel[j][i] = TELLER_REL_SEED;
            for (size_t q = 0; q < ni; q++)
                if (items[q].event == seq.event[i]) {
                    out->base_rel[j][i] = items[q].rel;
                    break;
                }
            if (seq.event[i] == seed && !out->seed_pos[j] && (i == 0 || seq.event[i - 1] != seed))
                out->seed_pos[j] = i;
        }
        out->nbase[j] = n;
        teller_tpe_seq_free(&seq);
        free(items);
    }
    return TELLER_OK;
}

teller_status teller_model_base_seq(const teller_model_sample *s, int j, teller_tpe_seq *out, teller_error *err)
{
    uint32_t nb = s->nbase[j];
    memset(out, 0, sizeof *out);
    teller_status st = teller_tpe_seq_alloc(out, nb, err);
    if (st != TELLER_OK)
        return st;
    for (uint32_t i = 0; i < nb; i++) {
        out->sym[i] = s->base_sym[j][i];
        out->parent[i] = s->base_parent[j][i] == TELLER_MODEL_NO_PARENT ? TELLER_NONE : s->base_parent[j][i];
        out->depth[i] = s->base_depth[j][i];
        out->bucket[i] = s->base_bucket[j][i];
        out->first[i] = i;
        out->len[i] = 1;
        out->event[i] = TELLER_NONE;
    }
    return TELLER_OK;
}

teller_status teller_model_tokenize(const teller_model *m, const teller_tpe_vocab *v, teller_model_sample *s,
                                    teller_error *err)
{
    int raw = teller_model_token_kind(m) == TELLER_MODEL_TOKENS_RAW;
    s->ntrace = 0;
    for (uint32_t j = 0; j < TELLER_MODEL_TRACE_CANDS; j++) {
        uint32_t nb = s->nbase[j];
        if (!nb)
            continue;
        teller_tpe_seq base, enc;
        memset(&enc, 0, sizeof enc);
        teller_status st = teller_model_base_seq(s, (int)j, &base, err);
        if (st != TELLER_OK)
            return st;
        if (!raw && (st = teller_tpe_encode(v, &base, &enc, err)) != TELLER_OK) {
            teller_tpe_seq_free(&base);
            return st;
        }
        const teller_tpe_seq *e = raw ? &base : &enc;
        /* the window: T tokens around the token that covers the seed */
        size_t ps = 0, n = e->n, T = TELLER_MODEL_TRACE_TOKENS;
        while (ps + 1 < n && e->first[ps] + e->len[ps] <= s->seed_pos[j])
            ps++;
        size_t w0 = ps > T / 2 ? ps - T / 2 : 0;
        if (n > T && w0 > n - T)
            w0 = n - T;
        size_t w1 = w0 + T < n ? w0 + T : n;
        uint32_t off = s->ntrace;
        for (size_t q = w0; q < w1; q++) {
            uint32_t x = s->ntrace++;
            s->tsym[x] = e->sym[q];
            s->tdepth[x] = (uint8_t)(e->depth[q] < 255 ? e->depth[q] : 255);
            s->tbucket[x] = e->bucket[q];
            s->tseg[x] = (uint8_t)j;
            /* the most relevant relation it covers (slice.h's order): a
             * merged token holding the seed is the seed's */
            s->trel[x] = TELLER_REL_COUNT - 1;
            for (uint32_t b = e->first[q]; b < e->first[q] + e->len[q] && b < nb; b++)
                if (s->base_rel[j][b] < s->trel[x])
                    s->trel[x] = s->base_rel[j][b];
            s->tparent[x] = e->parent[q] != TELLER_NONE && e->parent[q] >= w0 && e->parent[q] < w1
                                ? (uint8_t)(off + e->parent[q] - w0)
                                : TELLER_MODEL_NO_PARENT;
        }
        teller_tpe_seq_free(&base);
        teller_tpe_seq_free(&enc);
    }
    return TELLER_OK;
}

teller_status teller_model_step(teller_model_tracer *t, const teller_diagnosis *d, size_t k, teller_model_sample *s,
                                teller_model_out *o, teller_error *err)
{
    teller_model_sample_of(d, k, s);
    teller_status st = TELLER_OK;
    if (t->ctx) {
        st = teller_model_trace_base(t, d, k, s, err);
        if (st == TELLER_OK)
            st = teller_model_tokenize(t->m, t->v, s, err);
    } else { /* a model without the trace */
        memset(s->nbase, 0, sizeof s->nbase);
        memset(s->seed_pos, 0, sizeof s->seed_pos);
        s->ntrace = 0;
    }
    if (st == TELLER_OK)
        teller_model_ablate(t->m, s);
    if (st == TELLER_OK && teller_model_predict(t->m, s, o))
        st = teller_error_set(err, TELLER_ERR_NOMEM, "(model)", 0, "out of memory");
    return st;
}
