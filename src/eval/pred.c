/*
 * pred.c - writing predictions (see predict.h).
 */
#include "teller/predict.h"
#include "teller/store.h"

static void put_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(f, "\\%c", *p);
        else if (*p < 0x20)
            fprintf(f, "\\u%04x", *p);
        else
            fputc(*p, f);
    }
    fputc('"', f);
}

void teller_pred_write(FILE *f, const teller_step_pred *s, size_t n)
{
    fprintf(f, "{\"version\": 1,\n \"steps\": [");
    for (size_t i = 0; i < n; i++) {
        const teller_step_pred *p = &s[i];
        fprintf(f, "%s\n  {\"step\": %u, \"score\": %.4f, \"abnormal\": %s, \"fault_type\": ", i ? "," : "", p->step,
                p->score, p->abnormal ? "true" : "false");
        put_str(f, p->abnormal ? p->fault_type : "no_error");
        if (p->abnormal) {
            fprintf(f, ", \"view\": ");
            put_str(f, p->view);
        }
        fprintf(f, ", \"candidates\": [");
        for (int c = 0; c < p->ncand; c++) {
            fprintf(f, "%s{\"rank\": %d, \"op\": ", c ? ", " : "", p->cand[c].rank);
            put_str(f, p->cand[c].op);
            fprintf(f, ", \"layer\": ");
            put_str(f, p->cand[c].layer);
            fprintf(f, ", \"score\": %.4f}", p->cand[c].score);
        }
        fprintf(f, "], \"evidence\": [], \"explanation\": ");
        put_str(f, p->explanation);
        fprintf(f, "}");
    }
    fprintf(f, "\n ]}\n");
}
