/*
 * cands.c - the records a diagnosis writes (diagnose.h): its predictions
 * JSON, which `teller eval` scores; and its candidate records, the names of
 * the feature vector's entries and the candidates' JSON, which a learned
 * ranker and `teller eval --candidates` (candidate recall@K) read.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "teller/diagnose.h"
#include "teller/fault.h"
#include "teller/model.h"
#include "../util/textout.h"

static const char *const feature_names[TELLER_CAND_FEATURES] = {
    [TELLER_CF_EXCESS_SHARE] = "excess_share",   [TELLER_CF_LOG2_SIG] = "log2_sig",
    [TELLER_CF_LOG2_ACTUAL] = "log2_actual",     [TELLER_CF_LOG10_EXCESS_US] = "log10_excess_us",
    [TELLER_CF_SCORE] = "score",                 [TELLER_CF_ORDER] = "order",
    [TELLER_CF_RANK] = "rank",                   [TELLER_CF_NODE] = "node",
    [TELLER_CF_CROSS_NODE] = "cross_node",       [TELLER_CF_LATE_SHARE] = "late_share",
    [TELLER_CF_WAIT_SHARE] = "wait_share",       [TELLER_CF_HAS_LOG] = "has_log",
    [TELLER_CF_STEP_LOG2_REL] = "step_log2_rel", [TELLER_CF_LOG2_FED] = "log2_fed",
    [TELLER_CF_NOT_LOADED] = "not_loaded",
};

const char *teller_cand_feature_name(int f)
{
    return f >= 0 && f < TELLER_CAND_FEATURES ? feature_names[f] : NULL;
}

const char *teller_fact_kind_name(teller_fact_kind k)
{
    static const char *const names[] = {
        [TELLER_FACT_STEP] = "step",         [TELLER_FACT_USUAL] = "usual",       [TELLER_FACT_EVENT] = "event",
        [TELLER_FACT_OP] = "op",             [TELLER_FACT_OP_USUAL] = "op_usual", [TELLER_FACT_HOLE] = "hole",
        [TELLER_FACT_GPU_IDLE] = "gpu_idle", [TELLER_FACT_OVERHANG] = "overhang", [TELLER_FACT_LATE] = "late",
        [TELLER_FACT_DIFF] = "diff",         [TELLER_FACT_QUIET] = "quiet",       [TELLER_FACT_REFERENCE] = "reference",
    };
    return (unsigned)k < sizeof names / sizeof *names && names[k] ? names[k] : "?";
}

void teller_diag_judge(const teller_diagnosis *d, char *buf, size_t n)
{
    if (d->model)
        teller_model_label(d->model_id, d->model_recipe, buf, n);
    else
        snprintf(buf, n, "the numeric stage");
}

/* What a diagnosis adds to the benchmark's predictions: who judged, the
 * run's kinds of step and their yardsticks, and per step its duration,
 * kind and usual. */
static void diag_extra(FILE *f, void *ctx, size_t i)
{
    const teller_diagnosis *d = ctx;
    if (i == SIZE_MAX) {
        if (d->model) {
            fprintf(f, " \"judged_by\": {\"by\": \"model\", \"model\": \"%016llx\", \"recipe\": ",
                    (unsigned long long)d->model_id);
            teller_json_put(f, d->model_recipe);
            fprintf(f, "},\n");
        } else
            fprintf(f, " \"judged_by\": {\"by\": \"numeric stage\"},\n");
        fprintf(f, " \"step_kinds\": [");
        for (size_t g = 0; g < d->ngroups; g++) {
            const teller_step_group *sg = &d->groups[g];
            fprintf(f, "%s\n  {\"kind\": \"%s\", \"family\": ", g ? "," : "", teller_step_kind_name(sg->kind));
            teller_json_put(f, sg->family);
            fprintf(f, ", \"steps\": %u, \"fitted\": %s, \"by_work\": %s, \"by_compute\": %s, \"base_ns\": %.0f, \"per_work_ns\": %.6g, "
                    "\"spread\": %.6g}",
                    sg->n, sg->fitted ? "true" : "false", sg->by_work ? "true" : "false", sg->by_compute ? "true" : "false", sg->base_ns, sg->per_work_ns,
                    sg->spread);
        }
        fprintf(f, "],\n");
        return;
    }
    const teller_diag_step *s = &d->steps[i];
    fprintf(f, ", \"facts\": [");
    for (uint32_t q = 0; q < s->nfacts; q++) {
        const teller_fact *x = &d->facts[s->first_fact + q];
        fprintf(f, "%s{\"kind\": \"%s\", \"step\": %u, \"rank\": %d, \"value_ns\": %.0f, \"text\": \"%s\"", q ? ", " : "",
                teller_fact_kind_name(x->kind), x->step, x->rank, x->value, x->text);
        if (x->kind == TELLER_FACT_OP || x->kind == TELLER_FACT_OP_USUAL || x->kind == TELLER_FACT_LATE ||
            x->kind == TELLER_FACT_REFERENCE)
            fprintf(f, ", \"count\": %u", x->count);
        if (x->kind == TELLER_FACT_LATE)
            fprintf(f, ", \"of\": %u", x->count2);
        if (x->kind == TELLER_FACT_REFERENCE)
            fprintf(f, ", \"of\": \"%s\"", x->count2 ? "operator" : "step");
        if (x->kind == TELLER_FACT_DIFF)
            fprintf(f, ", \"of\": [%u, %u]", x->a, x->b);
        if (x->kind == TELLER_FACT_HOLE || x->kind == TELLER_FACT_GPU_IDLE || x->kind == TELLER_FACT_QUIET)
            fprintf(f, ", \"from_ns\": %lld, \"to_ns\": %lld", (long long)x->t0, (long long)x->t1);
        fprintf(f, "}");
    }
    fprintf(f, "]");
    fprintf(f, ", \"duration_ns\": %lld, \"duration_rank\": %d, \"step_kind\": %u, \"work\": %lld, \"usual_ns\": %lld, "
            "\"excess_ns\": %lld, \"explained_ns\": %lld, \"slow\": %s, \"by_reference\": %s",
            (long long)s->dur_ns, s->dur_rank, s->group, (long long)s->work, (long long)s->usual_ns,
            (long long)s->excess_ns, (long long)s->explained_ns, s->slow ? "true" : "false",
            s->by_reference ? "true" : "false");
}

teller_status teller_diag_write_preds(FILE *f, const teller_diagnosis *d)
{
    teller_step_pred *p = malloc((d->n ? d->n : 1) * sizeof *p);
    if (!p)
        return TELLER_ERR_NOMEM;
    for (size_t k = 0; k < d->n; k++)
        p[k] = d->steps[k].pred;
    teller_pred_write_ex(f, p, d->n, diag_extra, (void *)d);
    free(p);
    return TELLER_OK;
}

void teller_diag_write_candidates(FILE *f, const teller_store *st, const teller_diagnosis *d)
{
    fprintf(f, "{\"version\": 1, \"features\": [");
    for (int i = 0; i < TELLER_CAND_FEATURES; i++)
        fprintf(f, "%s\"%s\"", i ? ", " : "", feature_names[i]);
    fprintf(f, "],\n\"steps\": [");
    for (size_t k = 0; k < d->n; k++) {
        const teller_diag_step *s = &d->steps[k];
        fprintf(f, "%s\n{\"step\": %u, \"candidates\": [", k ? "," : "", s->pred.step);
        for (uint32_t q = 0; q < s->ncands; q++) {
            const teller_diag_cand *c = &d->cands[s->first_cand + q];
            fprintf(f, "%s\n  {\"rank\": %d, \"node\": %d, \"op\": ", q ? "," : "", c->rank, c->node);
            teller_json_put(f, teller_store_str(st, c->name));
            fprintf(f, ", \"layer\": \"%s\", \"fault\": \"%s\", \"score\": %.6g, \"excess_ns\": %.0f, \"features\": [",
                    teller_layer_tag((teller_layer)c->layer), teller_fault_name(c->det), c->score, c->excess_ns);
            for (int i = 0; i < TELLER_CAND_FEATURES; i++)
                fprintf(f, "%s%.6g", i ? ", " : "", (double)c->feat[i]);
            fprintf(f, "]}");
        }
        fprintf(f, "]}");
    }
    fprintf(f, "\n]}\n");
}
