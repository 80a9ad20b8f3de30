/*
 * loghub.c - the Loghub-2.0 accuracy measures for the template miner.
 *
 * Input: one Loghub-2k dataset directory NAME/ holding
 * NAME_2k.log_structured_corrected.csv (RFC 4180, a header row, columns
 * Content and EventTemplate among others). The Content column (the message
 * after the benchmark's own header split) is fed to a fresh miner in file
 * order; after the last line every line's template is its cluster's final
 * template, as batch Drain reports it. The raw measure
 * (teller_loghub_eval_raw) instead reads NAME_2k.log as a user has it,
 * headers included, through teller_log_read_file, and mines each record's
 * key: the header has to be found by the reader, with nothing told about
 * the dataset. Its lines are scored by template id (line i of the log is
 * row i of the CSV), the truth by its template text (one per EventId).
 *
 * The measures, as the Loghub-2.0 evaluator defines them:
 *   - templates are compared after the benchmark's normalisation (see
 *     teller_loghub_normalize), applied to the predicted and to the
 *     ground-truth template alike;
 *   - GA: lines are grouped by ground-truth template text and by predicted
 *     template text; a ground-truth group counts (all its lines) when all
 *     its lines have the same predicted template and no other line has it;
 *     GA = lines counted / lines;
 *   - PA: share of lines whose predicted template equals the ground truth.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "teller/logs.h"

/* ---- normalisation ----------------------------------------------------- */

static int norm_delim(char c)
{
    return strchr(" ,!;:=|\"'[](){}.-+@#$%&", c) != NULL && c != 0;
}

/* Replaces every `from` by `to` (to no longer than from) until none is left. */
static size_t replace_loop(char *s, size_t n, const char *from, const char *to)
{
    size_t fl = strlen(from), tl = strlen(to);
    for (;;) {
        int any = 0;
        size_t o = 0;
        for (size_t i = 0; i < n;) {
            if (i + fl <= n && !memcmp(s + i, from, fl)) {
                memmove(s + o, to, tl);
                o += tl;
                i += fl;
                any = 1;
            } else {
                s[o++] = s[i++];
            }
        }
        n = o;
        if (!any)
            return n;
    }
}

size_t teller_loghub_normalize(const char *tpl, char *out, size_t cap)
{
    if (cap == 0)
        return 0;
    size_t n = strlen(tpl);
    char *a = malloc(n + 1), *b = malloc(3 * n + 4);
    if (!a || !b) {
        free(a);
        free(b);
        out[0] = 0;
        return 0;
    }
    /* DS: trim, collapse whitespace */
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        char c = tpl[i];
        int ws = c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
        if (ws) {
            if (m && a[m - 1] != ' ')
                a[m++] = ' ';
        } else {
            a[m++] = c;
        }
    }
    while (m && a[m - 1] == ' ')
        m--;
    /* DG and WV on the tokens between delimiters */
    size_t o = 0;
    for (size_t i = 0; i < m;) {
        if (norm_delim(a[i])) {
            b[o++] = a[i++];
            continue;
        }
        size_t s0 = i;
        int all_digits = 1, has_var = 0, has_slash = 0;
        while (i < m && !norm_delim(a[i])) {
            if (a[i] < '0' || a[i] > '9')
                all_digits = 0;
            if (a[i] == '/')
                has_slash = 1;
            if (i + 2 < m && a[i] == '<' && a[i + 1] == '*' && a[i + 2] == '>')
                has_var = 1;
            i++;
        }
        if (all_digits || (has_var && !has_slash)) {
            memcpy(b + o, "<*>", 3);
            o += 3;
        } else {
            memcpy(b + o, a + s0, i - s0);
            o += i - s0;
        }
    }
    /* DV, CV, then the benchmark's final clean-ups in its order */
    o = replace_loop(b, o, "<*>.<*>", "<*>");
    o = replace_loop(b, o, "<*><*>", "<*>");
    static const char *const R[][2] = {{" #<*># ", " <*> "}, {" #<*> ", " <*> "},
                                       {"<*>:<*>", "<*>"},   {"<*>#<*>", "<*>"},
                                       {"<*>/<*>", "<*>"},   {"<*>@<*>", "<*>"},
                                       {"<*>.<*>", "<*>"},   {" \"<*>\" ", " <*> "},
                                       {" '<*>' ", " <*> "}, {"<*><*>", "<*>"}};
    for (size_t k = 0; k < sizeof R / sizeof *R; k++)
        o = replace_loop(b, o, R[k][0], R[k][1]);
    size_t w = o < cap - 1 ? o : cap - 1;
    memcpy(out, b, w);
    out[w] = 0;
    free(a);
    free(b);
    return w;
}

/* ---- CSV --------------------------------------------------------------- */

/* Reads one RFC 4180 field at *p (unquoting in place into dst). Returns the
 * terminator: ',' , '\n' or 0 at the end. */
static char csv_field(char **p, char *end, char **dst_start, size_t *dst_len)
{
    char *s = *p, *d = s;
    *dst_start = d;
    if (s < end && *s == '"') {
        s++;
        for (;;) {
            if (s >= end)
                break;
            if (*s == '"') {
                if (s + 1 < end && s[1] == '"') {
                    *d++ = '"';
                    s += 2;
                    continue;
                }
                s++;
                break;
            }
            *d++ = *s++;
        }
    }
    while (s < end && *s != ',' && *s != '\n' && *s != '\r')
        *d++ = *s++;
    *dst_len = (size_t)(d - *dst_start);
    char t = 0;
    if (s < end) {
        t = *s == ',' ? ',' : '\n';
        if (*s == '\r')
            s++;
        if (s < end && (*s == '\n' || *s == ','))
            s++;
    }
    *p = s;
    return t;
}

typedef struct row {
    const char *content;
    const char *truth;
    uint32_t    cluster;
    uint32_t    truth_group;
    uint32_t    pred_group;
} row;

static int cmp_str_idx(const void *a, const void *b, const char *const *keys)
{
    return strcmp(keys[*(const uint32_t *)a], keys[*(const uint32_t *)b]);
}

static const char *const *g_keys; /* for qsort: the strings being grouped */
static int cmp_keys(const void *a, const void *b) { return cmp_str_idx(a, b, g_keys); }

/* Group ids by equal strings: out[i] = group of keys[i]; returns #groups. */
static uint32_t group_by(const char *const *keys, uint32_t n, uint32_t *out, uint32_t *order)
{
    for (uint32_t i = 0; i < n; i++)
        order[i] = i;
    g_keys = keys;
    qsort(order, n, sizeof *order, cmp_keys);
    uint32_t g = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (i && strcmp(keys[order[i]], keys[order[i - 1]]))
            g++;
        out[order[i]] = g;
    }
    return n ? g + 1 : 0;
}

/* Raw input: the records of NAME_2k.log, each line given its record's
 * cluster (a traceback's lines share one). */
typedef struct raw_ctx {
    teller_log_miner *m;
    row              *rows;
    size_t            nrows;
} raw_ctx;

static int on_raw(void *ctx, const teller_log_record *rec)
{
    raw_ctx *c = ctx;
    teller_log_match mt;
    if (teller_log_miner_add(c->m, rec->key.p, rec->key.n, &mt, NULL, 0) != TELLER_OK)
        return -TELLER_ERR_NOMEM;
    for (uint64_t l = rec->line; l < rec->line + rec->num_lines && l - 1 < c->nrows; l++)
        c->rows[l - 1].cluster = mt.template_id;
    return 0;
}

/* The dataset's name, the last component of dir, into name; returns the
 * length of dir without its trailing slashes. */
static size_t dataset_name(const char *dir, char *name, size_t cap)
{
    size_t dl = strlen(dir);
    while (dl > 1 && dir[dl - 1] == '/')
        dl--;
    size_t b = dl;
    while (b > 0 && dir[b - 1] != '/')
        b--;
    snprintf(name, cap, "%.*s", (int)(dl - b), dir + b);
    return dl;
}

/* The whole file at path into a buffer of *len + 1 bytes the caller frees. */
static teller_status read_whole(const char *path, char **out, size_t *len, teller_error *err)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return teller_error_set(err, TELLER_ERR_IO, path, 0, "cannot open");
    fseek(f, 0, SEEK_END);
    long sz = ftell(f);
    fseek(f, 0, SEEK_SET);
    if (sz < 0 || sz > (1L << 30)) {
        fclose(f);
        return teller_error_set(err, TELLER_ERR_LIMIT, path, 0, "unusable size");
    }
    char *buf = malloc((size_t)sz + 1);
    if (!buf || fread(buf, 1, (size_t)sz, f) != (size_t)sz) {
        fclose(f);
        free(buf);
        return teller_error_set(err, buf ? TELLER_ERR_IO : TELLER_ERR_NOMEM, path, 0, "cannot read");
    }
    fclose(f);
    *out = buf;
    *len = (size_t)sz;
    return TELLER_OK;
}

/* Reads the CSV's header row at *p: the indexes of its Content and
 * EventTemplate columns, -1 for one it lacks. */
static void csv_header(char **p, char *end, int *ccontent, int *ctpl)
{
    *ccontent = *ctpl = -1;
    for (int col = 0;; col++) {
        char *fs;
        size_t fl;
        char t = csv_field(p, end, &fs, &fl);
        if (fl == 7 && !memcmp(fs, "Content", 7))
            *ccontent = col;
        if (fl == 13 && !memcmp(fs, "EventTemplate", 13))
            *ctpl = col;
        if (t != ',')
            break;
    }
}

/* The data rows from *p to end: each row's content and ground-truth
 * template, NUL-terminated in place; a row lacking either is skipped.
 * *rows is the caller's to free, also on TELLER_ERR_NOMEM. */
static teller_status csv_rows(char *p, char *end, int ccontent, int ctpl, row **rows, size_t *nrows)
{
    size_t cap = 0;
    while (p < end) {
        char *content = NULL, *tpl = NULL;
        for (int col = 0;; col++) {
            char *fs;
            size_t fl;
            char t = csv_field(&p, end, &fs, &fl);
            if (col == ccontent || col == ctpl) {
                fs[fl] = 0; /* the terminator byte is behind the unquoted text */
                if (col == ccontent)
                    content = fs;
                else
                    tpl = fs;
            }
            if (t != ',')
                break;
        }
        if (!content || !tpl)
            continue;
        if (*nrows == cap) {
            cap = cap ? cap * 2 : 2048;
            row *nr = realloc(*rows, cap * sizeof **rows);
            if (!nr)
                return TELLER_ERR_NOMEM;
            *rows = nr;
        }
        (*rows)[*nrows].content = content;
        (*rows)[*nrows].truth = tpl;
        (*nrows)++;
    }
    return TELLER_OK;
}

/* Mines every row into m, giving each its cluster: the Content column in
 * file order, or with raw the log at raw_path (the log as a user has it:
 * headers and all, through the reader), where a line no record covers
 * keeps UINT32_MAX. */
static teller_status mine(teller_log_miner *m, row *rows, size_t nrows, const char *raw_path, teller_error *err)
{
    if (raw_path) {
        for (size_t i = 0; i < nrows; i++)
            rows[i].cluster = UINT32_MAX;
        raw_ctx rc = {m, rows, nrows};
        return teller_log_read_file(raw_path, NULL, on_raw, &rc, NULL, err);
    }
    teller_status st = TELLER_OK;
    for (size_t i = 0; st == TELLER_OK && i < nrows; i++) {
        teller_log_match mt;
        st = teller_log_miner_add(m, rows[i].content, strlen(rows[i].content), &mt, NULL, 0);
        rows[i].cluster = mt.template_id;
    }
    return st;
}

/* Normalised template texts, in one buffer *normbuf the caller frees:
 * pred[i] the predicted template of row i (its cluster's; "" for none),
 * truth[i] its ground truth. */
static teller_status normalise(const teller_log_miner *m, const row *rows, size_t nrows, char **normbuf,
                               const char **pred, const char **truth)
{
    uint32_t ncl = teller_log_miner_count(m);
    size_t total = 0;
    for (uint32_t c = 0; c < ncl; c++)
        total += strlen(teller_log_miner_template(m, c)) + 1;
    for (size_t i = 0; i < nrows; i++)
        total += strlen(rows[i].truth) + 1;
    *normbuf = malloc(total + 1);
    const char **cltext = calloc(ncl + 1, sizeof *cltext);
    if (!*normbuf || !cltext) {
        free(cltext);
        return TELLER_ERR_NOMEM;
    }
    size_t o = 0;
    for (uint32_t c = 0; c < ncl; c++) {
        const char *t = teller_log_miner_template(m, c);
        cltext[c] = *normbuf + o;
        o += teller_loghub_normalize(t, *normbuf + o, strlen(t) + 1) + 1;
    }
    for (size_t i = 0; i < nrows; i++) {
        truth[i] = *normbuf + o;
        o += teller_loghub_normalize(rows[i].truth, *normbuf + o, strlen(rows[i].truth) + 1) + 1;
        pred[i] = rows[i].cluster < ncl ? cltext[rows[i].cluster] : "";
    }
    free(cltext);
    return TELLER_OK;
}

/* GA into res, with the truth and found group counts: the truth grouped
 * by its template text as the file gives it, the prediction by its
 * normalised text or, with raw, by template id (a line no record covered
 * is a group of its own). */
static teller_status group_accuracy(const row *rows, size_t nrows, uint32_t ncl, const char **pred, int raw,
                                    teller_loghub_result *res)
{
    const char **ttext = calloc(nrows + 1, sizeof *ttext);
    uint32_t *tg = calloc(nrows + 1, sizeof *tg), *pg = calloc(nrows + 1, sizeof *pg);
    uint32_t *order = calloc(nrows + 1, sizeof *order);
    uint32_t *cnt = calloc(ncl + nrows + 1, sizeof *cnt), *tsize = calloc(nrows + 1, sizeof *tsize);
    teller_status st = TELLER_ERR_NOMEM;
    if (!ttext || !tg || !pg || !order || !cnt || !tsize)
        goto done;
    for (size_t i = 0; i < nrows; i++)
        ttext[i] = rows[i].truth;
    res->truth_groups = group_by(ttext, (uint32_t)nrows, tg, order);
    if (raw) {
        for (size_t i = 0; i < nrows; i++)
            pg[i] = rows[i].cluster < ncl ? rows[i].cluster : ncl + (uint32_t)i;
        res->found_groups = ncl;
    } else {
        res->found_groups = group_by(pred, (uint32_t)nrows, pg, order);
    }
    /* a truth group counts when all its lines are in one predicted group,
     * of the same size */
    for (size_t i = 0; i < nrows; i++) {
        cnt[pg[i]]++;
        tsize[tg[i]]++;
    }
    uint32_t *tpred = order; /* predicted group of a truth group, or UINT32_MAX-1 if mixed */
    for (size_t g = 0; g < res->truth_groups; g++)
        tpred[g] = UINT32_MAX;
    for (size_t i = 0; i < nrows; i++) {
        uint32_t g = tg[i];
        if (tpred[g] == UINT32_MAX)
            tpred[g] = pg[i];
        else if (tpred[g] != pg[i])
            tpred[g] = UINT32_MAX - 1;
    }
    uint64_t good = 0;
    for (size_t g = 0; g < res->truth_groups; g++)
        if (tpred[g] < UINT32_MAX - 1 && cnt[tpred[g]] == tsize[g])
            good += tsize[g];
    res->ga = nrows ? (double)good / (double)nrows : 0;
    st = TELLER_OK;
done:
    free(ttext);
    free(tg);
    free(pg);
    free(order);
    free(cnt);
    free(tsize);
    return st;
}

/* Scores the mined rows into res: GA, and PA (lines whose normalised
 * predicted template equals their normalised ground truth). */
static teller_status score(const teller_log_miner *m, const row *rows, size_t nrows, int raw,
                           teller_loghub_result *res)
{
    const char **pred = calloc(nrows + 1, sizeof *pred), **truth = calloc(nrows + 1, sizeof *truth);
    char *normbuf = NULL;
    teller_status st = pred && truth ? normalise(m, rows, nrows, &normbuf, pred, truth) : TELLER_ERR_NOMEM;
    if (st == TELLER_OK)
        st = group_accuracy(rows, nrows, teller_log_miner_count(m), pred, raw, res);
    if (st == TELLER_OK) {
        uint64_t pa = 0;
        for (size_t i = 0; i < nrows; i++)
            pa += !strcmp(pred[i], truth[i]);
        res->lines = (uint32_t)nrows;
        res->pa = nrows ? (double)pa / (double)nrows : 0;
    }
    free(normbuf);
    free(pred);
    free(truth);
    return st;
}

static teller_status eval(const char *dir, const teller_miner_opts *opts, int raw,
                          teller_loghub_result *res, teller_error *err)
{
    memset(res, 0, sizeof *res);
    size_t dl = dataset_name(dir, res->name, sizeof res->name);
    char path[4096];
    snprintf(path, sizeof path, "%.*s/%s_2k.log_structured_corrected.csv", (int)dl, dir, res->name);
    char *buf = NULL;
    size_t sz = 0;
    teller_status st = read_whole(path, &buf, &sz, err);
    if (st != TELLER_OK)
        return st;
    char *p = buf, *end = buf + sz;
    int ccontent, ctpl;
    csv_header(&p, end, &ccontent, &ctpl);
    if (ccontent < 0 || ctpl < 0) {
        free(buf);
        return teller_error_set(err, TELLER_ERR_FORMAT, path, 0, "no Content/EventTemplate columns");
    }
    row *rows = NULL;
    size_t nrows = 0;
    st = csv_rows(p, end, ccontent, ctpl, &rows, &nrows);
    teller_log_miner *m = st == TELLER_OK ? teller_log_miner_create(opts) : NULL;
    if (!m)
        st = TELLER_ERR_NOMEM;
    if (raw)
        snprintf(path, sizeof path, "%.*s/%s_2k.log", (int)dl, dir, res->name);
    clock_t t0 = clock();
    int read_failed = 0; /* the raw log could not be read: the reader said why */
    if (st == TELLER_OK) {
        st = mine(m, rows, nrows, raw ? path : NULL, err);
        read_failed = raw && st != TELLER_OK;
    }
    res->seconds = (double)(clock() - t0) / CLOCKS_PER_SEC;
    if (st == TELLER_OK)
        st = score(m, rows, nrows, raw, res);
    if (st != TELLER_OK && !read_failed)
        teller_error_set(err, st, path, 0, "out of memory");
    teller_log_miner_free(m);
    free(rows);
    free(buf);
    return st;
}

teller_status teller_loghub_eval(const char *dir, const teller_miner_opts *opts,
                                 teller_loghub_result *res, teller_error *err)
{
    return eval(dir, opts, 0, res, err);
}

teller_status teller_loghub_eval_raw(const char *dir, const teller_miner_opts *opts,
                                     teller_loghub_result *res, teller_error *err)
{
    return eval(dir, opts, 1, res, err);
}
