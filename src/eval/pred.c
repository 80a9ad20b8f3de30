/*
 * pred.c - writing predictions (see predict.h).
 */
#include <stdint.h>

#include "teller/predict.h"
#include "teller/store.h"
#include "../util/textout.h"


void teller_pred_write_step(FILE *f, const teller_step_pred *p, teller_pred_extra extra, void *ctx, size_t i)
{
    fprintf(f, "{\"step\": %u, \"score\": %.4f, \"abnormal\": %s, \"fault_type\": ", p->step, p->score,
            p->abnormal ? "true" : "false");
    teller_json_put(f, p->abnormal ? p->fault_type : "no_error");
    if (p->abnormal) {
        fprintf(f, ", \"view\": ");
        teller_json_put(f, p->view);
    }
    fprintf(f, ", \"candidates\": [");
    for (int c = 0; c < p->ncand; c++) {
        fprintf(f, "%s{\"rank\": %d, \"op\": ", c ? ", " : "", p->cand[c].rank);
        teller_json_put(f, p->cand[c].op);
        fprintf(f, ", \"layer\": ");
        teller_json_put(f, p->cand[c].layer);
        fprintf(f, ", \"score\": %.4f}", p->cand[c].score);
    }
    fprintf(f, "], \"evidence\": [");
    for (int e = 0; e < p->nev && e < TELLER_MAX_EVIDENCE; e++) {
        const teller_evidence *ev = &p->ev[e];
        fprintf(f, "%s{\"kind\": ", e ? ", " : "");
        teller_json_put(f, ev->kind);
        fprintf(f, ", \"node\": %d, \"rank\": %d, \"line\": %llu, \"file\": ", ev->node, ev->rank,
                (unsigned long long)ev->line);
        teller_json_put(f, ev->file);
        fprintf(f, ", \"text\": ");
        teller_json_put(f, ev->text);
        fprintf(f, "}");
    }
    fprintf(f, "], \"explanation\": ");
    teller_json_put(f, p->explanation);
    if (extra)
        extra(f, ctx, i);
    fprintf(f, "}");
}

void teller_pred_write(FILE *f, const teller_step_pred *s, size_t n)
{
    teller_pred_write_ex(f, s, n, NULL, NULL);
}

void teller_pred_write_ex(FILE *f, const teller_step_pred *s, size_t n, teller_pred_extra extra, void *ctx)
{
    fprintf(f, "{\"version\": 1,\n");
    if (extra)
        extra(f, ctx, SIZE_MAX);
    fprintf(f, " \"steps\": [");
    for (size_t i = 0; i < n; i++) {
        fprintf(f, "%s\n  ", i ? "," : "");
        teller_pred_write_step(f, &s[i], extra, ctx, i);
    }
    fprintf(f, "\n ]}\n");
}
