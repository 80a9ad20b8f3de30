/*
 * eval.c - predictions against truth (../shared/BENCHMARK.md).
 *
 * Accumulators exist for all steps, for each view and for each fault kind.
 * A step belongs to the view and fault of its truth when abnormal; a normal
 * step that was flagged counts as a false positive in the view it was
 * predicted with (so per-view precision means something), and normal steps
 * count toward true negatives of the "all" bucket only.
 *
 * Operator hit: same rank and same name after teller_name_normalize.
 * Macro-F1s are over the union of classes seen in truth and prediction on
 * the abnormal steps. BLEU-4 is corpus-level with the brevity penalty and
 * no smoothing, over words (runs of letters, digits, '_', '.', ':', '%')
 * and single punctuation marks, lower-cased. Fact recall checks four facts
 * per abnormal step in the explanation: "rank N" for the true rank, the
 * normalised true operator, the fault name (or its words, "gpu throttle")
 * as a word of its own (not "oom" in "room"), and
 * a duration within 20 % of the true excess time (numbers with ns, us, µs,
 * ms or s units).
 */
#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "teller/eval.h"
#include "teller/fault.h"
#include "teller/tree.h"
#include "../ingest/jdom.h"
#include "../util/vec.h"

#define NAME_MAX_LEN 256

typedef struct cls_count {
    char     name[NAME_MAX_LEN];
    uint64_t tp, fp, fn;
} cls_count;

typedef struct classes {
    cls_count *c;
    size_t     n, cap;
} classes;

typedef struct acc {
    uint64_t steps, abnormal, tp, fp, fn, tn;
    uint64_t ft_correct, op_hit1, op_hit3, rank_hit1;
    double   facts;
    uint64_t bleu_match[4], bleu_total[4], hyp_len, ref_len;
    classes  ft, ops;
} acc;

enum { B_ALL, B_HORIZONTAL, B_VERTICAL, B_FAULT0 };
#define NBUCKETS (B_FAULT0 + TELLER_FAULT_COUNT)

/* candidate recall: first hits at positions 0 .. CAND_POS - 1 */
#define CAND_POS 16

struct teller_eval {
    int      cases, cand_cases;
    acc      b[NBUCKETS];
    uint64_t cand_abn[NBUCKETS], cand_at[NBUCKETS][CAND_POS];
};

teller_eval *teller_eval_create(void) { return calloc(1, sizeof(teller_eval)); }

void teller_eval_free(teller_eval *e)
{
    if (!e)
        return;
    for (int i = 0; i < NBUCKETS; i++) {
        free(e->b[i].ft.c);
        free(e->b[i].ops.c);
    }
    free(e);
}

static cls_count *cls_get(classes *cs, const char *name)
{
    for (size_t i = 0; i < cs->n; i++)
        if (!strcmp(cs->c[i].name, name))
            return &cs->c[i];
    if (TELLER_GROW(cs->c, cs->cap, cs->n + 1))
        return NULL;
    cls_count *c = &cs->c[cs->n++];
    memset(c, 0, sizeof *c);
    snprintf(c->name, sizeof c->name, "%s", name);
    return c;
}

/* truth and prediction labels of one item */
static void cls_add(classes *cs, const char *truth, const char *pred)
{
    cls_count *t = cls_get(cs, truth), *p = cls_get(cs, pred);
    if (!t || !p)
        return;
    if (!strcmp(truth, pred)) {
        t->tp++;
    } else {
        t->fn++;
        p->fp++;
    }
}

static double macro_f1(const classes *cs)
{
    double sum = 0;
    size_t n = 0;
    for (size_t i = 0; i < cs->n; i++) {
        const cls_count *c = &cs->c[i];
        if (c->tp + c->fp + c->fn == 0)
            continue;
        sum += 2.0 * (double)c->tp / (double)(2 * c->tp + c->fp + c->fn);
        n++;
    }
    return n ? sum / (double)n : NAN;
}

/* ---- BLEU ---- */

#define MAX_TOKENS 512

static int tokenize(const char *s, char toks[][48], int max)
{
    int n = 0;
    const unsigned char *p = (const unsigned char *)s;
    while (*p && n < max) {
        if (isspace(*p)) {
            p++;
            continue;
        }
        int len = 0;
        if (isalnum(*p) || *p == '_' || *p >= 0x80) {
            while (*p && (isalnum(*p) || *p == '_' || *p == '.' || *p == ':' || *p == '%' || *p >= 0x80)) {
                if (len < 47)
                    toks[n][len++] = (char)tolower(*p);
                p++;
            }
            /* a sentence-final '.' is punctuation, not part of the word */
            while (len > 1 && (toks[n][len - 1] == '.' || toks[n][len - 1] == ':'))
                len--;
        } else {
            toks[n][len++] = (char)*p++;
        }
        toks[n][len] = 0;
        n++;
    }
    return n;
}

static void bleu_add(acc *a, const char *hyp, const char *ref)
{
    static char h[MAX_TOKENS][48], r[MAX_TOKENS][48];
    int nh = tokenize(hyp, h, MAX_TOKENS), nr = tokenize(ref, r, MAX_TOKENS);
    a->hyp_len += (uint64_t)nh;
    a->ref_len += (uint64_t)nr;
    for (int n = 1; n <= 4; n++) {
        if (nh < n)
            continue;
        a->bleu_total[n - 1] += (uint64_t)(nh - n + 1);
        /* clipped counts: for each hyp n-gram, count in hyp and in ref */
        static unsigned char used[MAX_TOKENS];
        memset(used, 0, sizeof used);
        for (int i = 0; i + n <= nh; i++) {
            for (int j = 0; j + n <= nr; j++) {
                if (used[j])
                    continue;
                int k = 0;
                while (k < n && !strcmp(h[i + k], r[j + k]))
                    k++;
                if (k == n) {
                    used[j] = 1;
                    a->bleu_match[n - 1]++;
                    break;
                }
            }
        }
    }
}

static double bleu4(const acc *a)
{
    double logp = 0;
    for (int n = 0; n < 4; n++) {
        if (!a->bleu_total[n] || !a->bleu_match[n])
            return 0;
        logp += log((double)a->bleu_match[n] / (double)a->bleu_total[n]) / 4.0;
    }
    double bp = a->hyp_len >= a->ref_len || !a->hyp_len ? 1.0 : exp(1.0 - (double)a->ref_len / (double)a->hyp_len);
    return bp * exp(logp);
}

/* ---- facts ---- */

static int has_rank(const char *text, int rank)
{
    char pat[32];
    int n = snprintf(pat, sizeof pat, "rank %d", rank);
    for (const char *p = text; (p = strstr(p, pat)) != NULL; p++)
        if (!isdigit((unsigned char)p[n]))
            return 1;
    return 0;
}

static int ci_has(const char *text, const char *needle)
{
    size_t n = strlen(needle);
    if (!n)
        return 0;
    for (const char *p = text; *p; p++)
        if (!strncasecmp(p, needle, n))
            return 1;
    return 0;
}

/* needle, case aside, as a word of its own: neither a letter, a digit nor
 * '_' right before or after it */
static int has_word(const char *text, const char *needle)
{
    size_t n = strlen(needle);
    if (!n)
        return 0;
    for (const char *p = text; *p; p++)
        if (!strncasecmp(p, needle, n) && (p == text || !(isalnum((unsigned char)p[-1]) || p[-1] == '_')) &&
            !(isalnum((unsigned char)p[n]) || p[n] == '_'))
            return 1;
    return 0;
}

static int has_duration(const char *text, double want_ns)
{
    if (want_ns <= 0)
        return 0;
    for (const char *p = text; *p; p++) {
        if (!isdigit((unsigned char)*p) || (p > text && (isalnum((unsigned char)p[-1]) || p[-1] == '.')))
            continue;
        char *end;
        double v = strtod(p, &end);
        while (*end == ' ')
            end++;
        double scale = 0;
        if (!strncmp(end, "ms", 2))
            scale = 1e6;
        else if (!strncmp(end, "us", 2) || !strncmp(end, "\xc2\xb5s", 3))
            scale = 1e3;
        else if (!strncmp(end, "ns", 2))
            scale = 1;
        else if (end[0] == 's' && !isalpha((unsigned char)end[1]))
            scale = 1e9;
        if (scale > 0 && fabs(v * scale - want_ns) <= 0.2 * want_ns)
            return 1;
        p = end > p ? end - 1 : p;
    }
    return 0;
}

/* ---- one case ---- */

typedef struct pstep {
    const jv *v;
    int       abnormal;
} pstep;

static const char *norm(const char *s, char *buf, size_t cap)
{
    teller_name_normalize(s ? s : "", buf, cap);
    return buf;
}

static void add_step(teller_eval *e, const jv *t, const jv *p, acc *bucket[], int nb)
{
    int tab = jdom_bool(t, "abnormal", 0);
    int pab = p ? jdom_bool(p, "abnormal", 0) : 0;
    for (int i = 0; i < nb; i++) {
        acc *a = bucket[i];
        a->steps++;
        if (tab) {
            a->abnormal++;
            if (pab)
                a->tp++;
            else
                a->fn++;
        } else if (pab) {
            a->fp++;
        } else {
            a->tn++;
        }
    }
    (void)e;
    if (!tab)
        return;
    const char *tft = jdom_str(t, "fault_type", "");
    const char *pft = pab ? jdom_str(p, "fault_type", "no_error") : "no_error";
    const jv *root = jdom_get(t, "root");
    int trank = (int)jdom_num(root, "rank", -1);
    char tn[NAME_MAX_LEN], pn[NAME_MAX_LEN];
    norm(jdom_str(root, "op", ""), tn, sizeof tn);
    const jv *cands = p ? jdom_get(p, "candidates") : NULL;
    int hit1 = 0, hit3 = 0, rank1 = 0;
    const char *top1 = "(none)";
    char top1buf[NAME_MAX_LEN];
    if (pab && cands && cands->type == J_ARR) {
        for (size_t c = 0; c < cands->n && c < 3; c++) {
            const jv *cv = &cands->items[c];
            int r = (int)jdom_num(cv, "rank", -2);
            norm(jdom_str(cv, "op", ""), pn, sizeof pn);
            int hit = r == trank && !strcmp(pn, tn);
            if (c == 0) {
                hit1 = hit;
                rank1 = r == trank;
                snprintf(top1buf, sizeof top1buf, "%s", pn);
                top1 = top1buf;
            }
            hit3 |= hit;
        }
    }
    const char *expl = p ? jdom_str(p, "explanation", "") : "";
    const char *fault = jdom_str(t, "fault", "");
    char words[64];
    snprintf(words, sizeof words, "%s", fault);
    for (char *q = words; *q; q++)
        if (*q == '_')
            *q = ' ';
    int facts = has_rank(expl, trank) + ci_has(expl, tn) +
                (has_word(expl, fault) || has_word(expl, words)) +
                has_duration(expl, jdom_num(t, "excess_ns", 0));
    for (int i = 0; i < nb; i++) {
        acc *a = bucket[i];
        a->ft_correct += (uint64_t)!strcmp(tft, pft);
        cls_add(&a->ft, tft, pft);
        cls_add(&a->ops, tn, top1);
        a->op_hit1 += (uint64_t)hit1;
        a->op_hit3 += (uint64_t)hit3;
        a->rank_hit1 += (uint64_t)rank1;
        a->facts += facts / 4.0;
        bleu_add(a, expl, jdom_str(t, "explanation", ""));
    }
}

teller_status teller_eval_add(teller_eval *e, const char *truth_path, const char *pred_path, teller_error *err)
{
    jv *t = jdom_load(truth_path, err);
    if (!t)
        return err ? err->code : TELLER_ERR_FORMAT;
    jv *p = jdom_load(pred_path, err);
    if (!p) {
        jdom_free(t);
        return err ? err->code : TELLER_ERR_FORMAT;
    }
    teller_status st = TELLER_OK;
    const jv *ts = jdom_get(t, "steps"), *ps = jdom_get(p, "steps");
    pstep *by_step = NULL;
    if (!ts || ts->type != J_ARR) {
        st = teller_error_set(err, TELLER_ERR_FORMAT, truth_path, t->offset, "no \"steps\" array");
        goto done;
    }
    if (!ps || ps->type != J_ARR) {
        st = teller_error_set(err, TELLER_ERR_FORMAT, pred_path, p->offset, "no \"steps\" array");
        goto done;
    }
    /* index predictions by step number; check them */
    size_t nsteps = ts->n;
    by_step = calloc(nsteps + 1, sizeof *by_step);
    if (!by_step) {
        st = teller_error_set(err, TELLER_ERR_NOMEM, pred_path, 0, "out of memory");
        goto done;
    }
    for (size_t i = 0; i < ts->n; i++) {
        double k = jdom_num(&ts->items[i], "step", -1);
        if (k != (double)i) {
            st = teller_error_set(err, TELLER_ERR_FORMAT, truth_path, ts->items[i].offset,
                                  "steps[%zu] has \"step\": %g; truth steps must be 0, 1, 2, ... in order", i, k);
            goto done;
        }
    }
    for (size_t i = 0; i < ps->n; i++) {
        const jv *v = &ps->items[i];
        double k = jdom_num(v, "step", -1);
        if (k < 0 || k != floor(k) || k >= (double)nsteps) {
            st = teller_error_set(err, TELLER_ERR_FORMAT, pred_path, v->offset,
                                  "prediction steps[%zu] names step %g, which the truth does not have (0..%zu)", i, k,
                                  nsteps ? nsteps - 1 : 0);
            goto done;
        }
        const jv *ab = jdom_get(v, "abnormal");
        if (!ab || ab->type != J_BOOL) {
            st = teller_error_set(err, TELLER_ERR_FORMAT, pred_path, v->offset,
                                  "prediction for step %g has no boolean \"abnormal\"", k);
            goto done;
        }
        if (by_step[(size_t)k].v) {
            st = teller_error_set(err, TELLER_ERR_FORMAT, pred_path, v->offset, "step %g is predicted twice", k);
            goto done;
        }
        by_step[(size_t)k].v = v;
    }
    for (size_t k = 0; k < nsteps; k++) {
        if (!by_step[k].v) {
            st = teller_error_set(err, TELLER_ERR_FORMAT, pred_path, 0,
                                  "step %zu is missing from the predictions (every step must appear)", k);
            goto done;
        }
    }
    for (size_t k = 0; k < nsteps; k++) {
        const jv *tv = &ts->items[k], *pv = by_step[k].v;
        acc *bk[3];
        int nb = 0;
        bk[nb++] = &e->b[B_ALL];
        const char *view = jdom_bool(tv, "abnormal", 0) ? jdom_str(tv, "view", "") : jdom_str(pv, "view", "");
        if (!jdom_bool(tv, "abnormal", 0) && !jdom_bool(pv, "abnormal", 0))
            view = "";
        if (!strcmp(view, "horizontal"))
            bk[nb++] = &e->b[B_HORIZONTAL];
        else if (!strcmp(view, "vertical"))
            bk[nb++] = &e->b[B_VERTICAL];
        if (jdom_bool(tv, "abnormal", 0)) {
            teller_fault f = teller_fault_parse(jdom_str(tv, "fault", ""));
            if (f < TELLER_FAULT_COUNT)
                bk[nb++] = &e->b[B_FAULT0 + f];
        }
        add_step(e, tv, pv, bk, nb);
    }
    e->cases++;
done:
    free(by_step);
    jdom_free(t);
    jdom_free(p);
    return st;
}

teller_status teller_eval_add_candidates(teller_eval *e, const char *truth_path, const char *cand_path, teller_error *err)
{
    jv *t = jdom_load(truth_path, err);
    if (!t)
        return err ? err->code : TELLER_ERR_FORMAT;
    jv *c = jdom_load(cand_path, err);
    if (!c) {
        jdom_free(t);
        return err ? err->code : TELLER_ERR_FORMAT;
    }
    teller_status st = TELLER_OK;
    const jv *ts = jdom_get(t, "steps"), *cs = jdom_get(c, "steps");
    if (!ts || ts->type != J_ARR) {
        st = teller_error_set(err, TELLER_ERR_FORMAT, truth_path, t->offset, "no \"steps\" array");
        goto done;
    }
    if (!cs || cs->type != J_ARR || cs->n != ts->n) {
        st = teller_error_set(err, TELLER_ERR_FORMAT, cand_path, c->offset,
                              "no \"steps\" array of the truth's %zu steps", ts->n);
        goto done;
    }
    for (size_t k = 0; k < ts->n; k++) {
        const jv *list = jdom_get(&cs->items[k], "candidates");
        if (jdom_num(&cs->items[k], "step", -1) != (double)k || jdom_num(&ts->items[k], "step", -1) != (double)k) {
            st = teller_error_set(err, TELLER_ERR_FORMAT, cand_path, cs->items[k].offset,
                                  "steps[%zu] is not step %zu (steps must be 0, 1, 2, ... in order)", k, k);
            goto done;
        }
        if (!list || list->type != J_ARR) {
            st = teller_error_set(err, TELLER_ERR_FORMAT, cand_path, cs->items[k].offset,
                                  "step %zu has no \"candidates\" array", k);
            goto done;
        }
    }
    uint64_t abn[NBUCKETS] = {0}, at[NBUCKETS][CAND_POS] = {{0}};
    for (size_t k = 0; k < ts->n; k++) {
        const jv *tv = &ts->items[k];
        if (!jdom_bool(tv, "abnormal", 0))
            continue;
        const jv *root = jdom_get(tv, "root"), *list = jdom_get(&cs->items[k], "candidates");
        int trank = (int)jdom_num(root, "rank", -1), pos = -1;
        char tn[NAME_MAX_LEN], pn[NAME_MAX_LEN];
        norm(jdom_str(root, "op", ""), tn, sizeof tn);
        for (size_t q = 0; q < list->n && q < CAND_POS && pos < 0; q++)
            if ((int)jdom_num(&list->items[q], "rank", -2) == trank &&
                !strcmp(norm(jdom_str(&list->items[q], "op", ""), pn, sizeof pn), tn))
                pos = (int)q;
        teller_fault f = teller_fault_parse(jdom_str(tv, "fault", ""));
        int bk[2] = {B_ALL, f < TELLER_FAULT_COUNT ? B_FAULT0 + (int)f : -1};
        for (int i = 0; i < 2; i++) {
            if (bk[i] < 0)
                continue;
            abn[bk[i]]++;
            if (pos >= 0)
                at[bk[i]][pos]++;
        }
    }
    for (int b = 0; b < NBUCKETS; b++) {
        e->cand_abn[b] += abn[b];
        for (int q = 0; q < CAND_POS; q++)
            e->cand_at[b][q] += at[b][q];
    }
    e->cand_cases++;
done:
    jdom_free(t);
    jdom_free(c);
    return st;
}

/* NaN where a figure has nothing to count (no abnormal steps in a view, no
 * step flagged): "null" in JSON, "n/a" in the table, never a made-up 0 */
static double ratio(uint64_t a, uint64_t b) { return b ? (double)a / (double)b : NAN; }

static void summarize(const acc *a, teller_eval_summary *s)
{
    memset(s, 0, sizeof *s);
    s->steps = (long)a->steps;
    s->abnormal_steps = (long)a->abnormal;
    s->step_accuracy = ratio(a->tp + a->tn, a->steps);
    s->step_precision = ratio(a->tp, a->tp + a->fp);
    s->step_recall = ratio(a->tp, a->tp + a->fn);
    s->step_f1 = ratio(2 * a->tp, 2 * a->tp + a->fp + a->fn);
    s->fault_type_accuracy = ratio(a->ft_correct, a->abnormal);
    s->fault_type_macro_f1 = macro_f1(&a->ft);
    s->op_ac1 = ratio(a->op_hit1, a->abnormal);
    s->op_ac3 = ratio(a->op_hit3, a->abnormal);
    s->op_macro_f1 = macro_f1(&a->ops);
    s->rank_ac1 = ratio(a->rank_hit1, a->abnormal);
    s->fact_recall = a->abnormal ? a->facts / (double)a->abnormal : NAN;
    s->bleu4 = a->abnormal ? bleu4(a) : NAN;
}

/* the share of abnormal steps of bucket b whose root is among the first k candidates */
static double cand_recall(const teller_eval *e, int b, int k)
{
    uint64_t hit = 0;
    for (int q = 0; q < k && q < CAND_POS; q++)
        hit += e->cand_at[b][q];
    return ratio(hit, e->cand_abn[b]);
}

void teller_eval_summary_get(const teller_eval *e, const char *view, const char *fault, teller_eval_summary *out)
{
    int b = B_ALL;
    if (view && !strcmp(view, "horizontal"))
        b = B_HORIZONTAL;
    else if (view && !strcmp(view, "vertical"))
        b = B_VERTICAL;
    if (fault) {
        teller_fault f = teller_fault_parse(fault);
        b = f < TELLER_FAULT_COUNT ? B_FAULT0 + f : B_ALL;
    }
    summarize(&e->b[b], out);
    out->cases = e->cases;
    out->cand_steps = (long)e->cand_abn[b];
    out->cand_recall1 = cand_recall(e, b, 1);
    out->cand_recall3 = cand_recall(e, b, 3);
    out->cand_recall8 = cand_recall(e, b, 8);
    out->cand_recall16 = cand_recall(e, b, 16);
}

static void json_num(FILE *f, const char *key, double v, const char *after)
{
    if (isnan(v))
        fprintf(f, "\"%s\": null%s", key, after);
    else
        fprintf(f, "\"%s\": %.4f%s", key, v, after);
}

/* The figures of s as JSON members; nl goes between the groups. */
static void json_fields(FILE *f, const teller_eval_summary *s, const char *nl)
{
    fprintf(f, "\"steps\": %ld, \"abnormal_steps\": %ld,%s\"step\": {", s->steps, s->abnormal_steps, nl);
    json_num(f, "accuracy", s->step_accuracy, ", ");
    json_num(f, "precision", s->step_precision, ", ");
    json_num(f, "recall", s->step_recall, ", ");
    json_num(f, "f1", s->step_f1, "},");
    fprintf(f, "%s\"fault_type\": {", nl);
    json_num(f, "accuracy", s->fault_type_accuracy, ", ");
    json_num(f, "macro_f1", s->fault_type_macro_f1, "},");
    fprintf(f, "%s\"operator\": {", nl);
    json_num(f, "ac1", s->op_ac1, ", ");
    json_num(f, "ac3", s->op_ac3, ", ");
    json_num(f, "macro_f1", s->op_macro_f1, "},");
    fprintf(f, "%s\"rank\": {", nl);
    json_num(f, "ac1", s->rank_ac1, "},");
    fprintf(f, "%s\"explanation\": {", nl);
    json_num(f, "fact_recall", s->fact_recall, ", ");
    json_num(f, "bleu4", s->bleu4, "}");
}

static void json_block(FILE *f, const acc *a)
{
    teller_eval_summary s;
    summarize(a, &s);
    fputc('{', f);
    json_fields(f, &s, " ");
    fputc('}', f);
}

static void json_cand(FILE *f, const teller_eval *e, int b)
{
    fprintf(f, "{\"abnormal_steps\": %llu, ", (unsigned long long)e->cand_abn[b]);
    json_num(f, "at1", cand_recall(e, b, 1), ", ");
    json_num(f, "at3", cand_recall(e, b, 3), ", ");
    json_num(f, "at8", cand_recall(e, b, 8), ", ");
    json_num(f, "at16", cand_recall(e, b, 16), "}");
}

/* "candidate_recall": {all..., "by_fault": {...}} */
static void json_cands(FILE *f, const teller_eval *e)
{
    fprintf(f, "\"candidate_recall\": {\"cases\": %d, \"all\": ", e->cand_cases);
    json_cand(f, e, B_ALL);
    fprintf(f, ",\n   \"by_fault\": {");
    int first = 1;
    for (int k = 1; k < TELLER_FAULT_COUNT; k++) {
        if (!e->cand_abn[B_FAULT0 + k])
            continue;
        fprintf(f, "%s\n   \"%s\": ", first ? "" : ",", teller_fault_name((teller_fault)k));
        json_cand(f, e, B_FAULT0 + k);
        first = 0;
    }
    fprintf(f, "}}");
}

void teller_eval_write_json(const teller_eval *e, FILE *f)
{
    if (e->cand_cases && !e->cases) {
        fputc('{', f);
        json_cands(f, e);
        fprintf(f, "}\n");
        return;
    }
    teller_eval_summary s;
    summarize(&e->b[B_ALL], &s);
    fprintf(f, "{\"cases\": %d, ", e->cases);
    json_fields(f, &s, "\n ");
    fprintf(f, ",\n \"by_view\": {\"horizontal\": ");
    json_block(f, &e->b[B_HORIZONTAL]);
    fprintf(f, ",\n   \"vertical\": ");
    json_block(f, &e->b[B_VERTICAL]);
    fprintf(f, "},\n \"by_fault\": {");
    int first = 1;
    for (int k = 1; k < TELLER_FAULT_COUNT; k++) {
        if (!e->b[B_FAULT0 + k].steps)
            continue;
        fprintf(f, "%s\n   \"%s\": ", first ? "" : ",", teller_fault_name((teller_fault)k));
        json_block(f, &e->b[B_FAULT0 + k]);
        first = 0;
    }
    fputc('}', f);
    if (e->cand_cases) {
        fprintf(f, ",\n ");
        json_cands(f, e);
    }
    fprintf(f, "}\n");
}

/* a table cell: the figure, or n/a where it has nothing to count */
static void cell(FILE *f, const char *sep, double v)
{
    if (isnan(v))
        fprintf(f, "%s%5s", sep, "n/a");
    else
        fprintf(f, "%s%5.3f", sep, v);
}

static void table_row(FILE *f, const char *name, const acc *a, int with_step)
{
    teller_eval_summary s;
    summarize(a, &s);
    if (with_step) {
        fprintf(f, "%-20s %6ld %6ld", name, s.steps, s.abnormal_steps);
        cell(f, "  ", s.step_precision);
        cell(f, " ", s.step_recall);
        cell(f, " ", s.step_f1);
    } else {
        fprintf(f, "%-20s %6s %6ld  %5s", name, "", s.abnormal_steps, "");
        cell(f, " ", s.step_recall);
        fprintf(f, " %5s", "");
    }
    cell(f, "  ", s.fault_type_accuracy);
    cell(f, " ", s.fault_type_macro_f1);
    cell(f, "  ", s.op_ac1);
    cell(f, " ", s.op_ac3);
    cell(f, " ", s.op_macro_f1);
    cell(f, "  ", s.rank_ac1);
    cell(f, "  ", s.fact_recall);
    cell(f, " ", s.bleu4);
    fputc('\n', f);
}

static void cand_row(FILE *f, const char *name, const teller_eval *e, int b)
{
    fprintf(f, "%-20s %6llu", name, (unsigned long long)e->cand_abn[b]);
    cell(f, "  ", cand_recall(e, b, 1));
    cell(f, " ", cand_recall(e, b, 3));
    cell(f, " ", cand_recall(e, b, 8));
    cell(f, " ", cand_recall(e, b, 16));
    fputc('\n', f);
}

static void cand_table(const teller_eval *e, FILE *f)
{
    fprintf(f, "candidate recall@K, %d case(s)\n%-20s %6s  %5s %5s %5s %5s\n", e->cand_cases, "", "abn", "@1", "@3", "@8",
            "@16");
    cand_row(f, "all", e, B_ALL);
    for (int k = 1; k < TELLER_FAULT_COUNT; k++)
        if (e->cand_abn[B_FAULT0 + k])
            cand_row(f, teller_fault_name((teller_fault)k), e, B_FAULT0 + k);
}

void teller_eval_write_table(const teller_eval *e, FILE *f)
{
    if (e->cand_cases && !e->cases) {
        cand_table(e, f);
        return;
    }
    fprintf(f, "%d case(s)\n%-20s %6s %6s  %5s %5s %5s  %5s %5s  %5s %5s %5s  %5s  %5s %5s\n", e->cases, "", "steps",
            "abn", "prec", "rec", "F1", "FTacc", "FTmF1", "opAC1", "opAC3", "opmF1", "rkAC1", "facts", "BLEU");
    table_row(f, "all", &e->b[B_ALL], 1);
    table_row(f, "view horizontal", &e->b[B_HORIZONTAL], 1);
    table_row(f, "view vertical", &e->b[B_VERTICAL], 1);
    for (int k = 1; k < TELLER_FAULT_COUNT; k++)
        if (e->b[B_FAULT0 + k].steps)
            table_row(f, teller_fault_name((teller_fault)k), &e->b[B_FAULT0 + k], 0);
    if (e->cand_cases) {
        fputc('\n', f);
        cand_table(e, f);
    }
}
