/*
 * run.c - one run behind one handle (include/teller/run.h): the load path
 * every command shares (load.h), the step, kernel and collective tables as
 * plain rows, and the diagnosis and reports written into memory, for
 * programs and bindings (python/) that hold a pointer, not a store.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "teller/baseline.h"
#include "teller/load.h"
#include "teller/report.h"
#include "teller/run.h"

struct teller_run {
    teller_store     *st;
    teller_diagnosis *diag;     /* the last teller_run_diagnose's, or NULL */
    teller_step_pred *base;     /* the last teller_run_baseline's predictions, or NULL */
    size_t            nbase;
    char             *title;    /* the first file's path: the HTML report's title */
};

teller_run_opts teller_run_defaults(void)
{
    teller_run_opts o;
    memset(&o, 0, sizeof o);
    return o;
}

teller_status teller_run_load(const char *const *names, size_t nnames, const teller_run_opts *opts,
                              teller_run **out, teller_error *err)
{
    teller_run_opts o = opts ? *opts : teller_run_defaults();
    *out = NULL;
    char **files = NULL;
    size_t nfiles = 0;
    teller_status s = teller_load_expand(names, nnames, &files, &nfiles, err);
    if (s != TELLER_OK)
        return s;
    teller_run *r = calloc(1, sizeof *r);
    if (r) {
        r->st = teller_store_create();
        r->title = strdup(files[0]);
    }
    if (!r || !r->st || !r->title) {
        teller_load_files_free(files, nfiles);
        teller_run_free(r);
        return teller_error_set(err, TELLER_ERR_NOMEM, "", 0, "out of memory");
    }
    teller_load_opts lo = teller_load_defaults();
    lo.jobs = o.jobs;
    lo.force = o.force;
    lo.ingest.skip_python = o.skip_python;
    lo.tree.gpus_per_node = o.gpus_per_node;
    lo.tree.step_pattern = o.step_pattern;
    s = teller_load(r->st, (const char *const *)files, nfiles, &lo, err);
    teller_load_files_free(files, nfiles);
    if (s != TELLER_OK) {
        teller_run_free(r);
        return s;
    }
    *out = r;
    return TELLER_OK;
}

void teller_run_free(teller_run *r)
{
    if (!r)
        return;
    teller_diagnosis_free(r->diag);
    free(r->base);
    free(r->title);
    teller_store_free(r->st);
    free(r);
}

const teller_store *teller_run_store(const teller_run *r) { return r->st; }

void teller_free(void *p) { free(p); }

/* The count-then-fill convention of run.h: 1 when the caller asked only
 * for the count (or gave too few rows, an argument error). */
static int count_only(size_t total, size_t cap, size_t *n, teller_status *s, teller_error *err)
{
    *n = total;
    *s = TELLER_OK;
    if (cap == 0)
        return 1;
    if (cap < total) {
        *s = teller_error_set(err, TELLER_ERR_ARG, "", 0, "%zu rows given for %zu", cap, total);
        return 1;
    }
    return 0;
}

teller_status teller_run_steps(const teller_run *r, teller_run_step *rows, size_t cap, size_t *n,
                               teller_error *err)
{
    teller_status s;
    if (count_only(teller_store_num_steps(r->st), cap, n, &s, err))
        return s;
    teller_step_summary *sum = NULL;
    size_t nsum = 0;
    s = teller_step_summaries(r->st, &sum, &nsum, err);
    if (s != TELLER_OK)
        return s;
    for (size_t i = 0; i < nsum && i < *n; i++) {
        uint32_t a = teller_store_step_annotation(r->st, i);
        rows[i].sum = sum[i];
        rows[i].annotation = a == TELLER_NONE ? 0 : a;
        teller_step_class c;
        teller_step_classify(rows[i].annotation ? teller_store_str(r->st, rows[i].annotation) : NULL, &c);
        rows[i].kind = (int32_t)c.kind;
    }
    free(sum);
    return TELLER_OK;
}

teller_status teller_run_kernels(const teller_run *r, teller_run_kernel *rows, size_t cap, size_t *n,
                                 teller_error *err)
{
    const teller_events *ev = teller_store_events(r->st);
    size_t total = 0;
    for (size_t i = 0; i < ev->n; i++)
        total += (size_t)teller_layer_is_gpu_work(ev->layer[i]);
    teller_status s;
    if (count_only(total, cap, n, &s, err))
        return s;
    size_t k = 0;
    for (size_t i = 0; i < ev->n; i++) {
        if (!teller_layer_is_gpu_work(ev->layer[i]))
            continue;
        const teller_source *src = teller_store_source_c(r->st, ev->source[i]);
        const teller_args *a = teller_store_event_args(r->st, (uint32_t)i);
        teller_run_kernel *row = &rows[k++];
        memset(row, 0, sizeof *row);
        row->start_ns = ev->start_ns[i];
        row->dur_ns = ev->dur_ns[i];
        row->bytes = a && ev->layer[i] != TELLER_LAYER_KERNEL ? a->bytes : -1;
        row->event = (uint32_t)i;
        row->name = ev->name[i];
        row->step = ev->step[i];
        row->rank = src->rank;
        row->node = src->node;
        row->device = teller_event_pid(ev, i);
        row->stream = teller_event_tid(ev, i);
        row->corr = ev->corr[i];
        row->launch = ev->parent[i] == TELLER_NONE ? 0 : ev->name[ev->parent[i]];
        row->layer = ev->layer[i];
        row->comm = (ev->flags[i] & TELLER_F_COMM) != 0;
    }
    return TELLER_OK;
}

teller_status teller_run_collectives(const teller_run *r, teller_run_coll *rows, size_t cap, size_t *n,
                                     teller_error *err)
{
    size_t nc = teller_store_num_collectives(r->st);
    const teller_collective *cs = teller_store_collectives(r->st);
    const teller_coll_member *ms = teller_store_coll_members(r->st);
    size_t total = 0;
    for (size_t c = 0; c < nc; c++)
        total += cs[c].num_members;
    teller_status s;
    if (count_only(total, cap, n, &s, err))
        return s;
    const teller_events *ev = teller_store_events(r->st);
    size_t k = 0;
    for (size_t c = 0; c < nc; c++) {
        for (uint32_t m = 0; m < cs[c].num_members; m++) {
            const teller_coll_member *mb = &ms[cs[c].first_member + m];
            const teller_comm *cm = teller_store_event_comm(r->st, mb->kernel);
            const teller_args *a = teller_store_event_args(r->st, mb->kernel);
            teller_run_coll *row = &rows[k++];
            memset(row, 0, sizeof *row);
            row->instance = (uint32_t)c;
            row->key = cs[c].key;
            row->seq = cs[c].seq;
            row->members = cs[c].num_members;
            row->rank = mb->rank;
            row->kernel = mb->kernel;
            row->name = ev->name[mb->kernel];
            row->op = cm ? cm->collective : 0;
            row->start_ns = ev->start_ns[mb->kernel];
            row->dur_ns = ev->dur_ns[mb->kernel];
            row->bytes = a ? a->bytes : -1;
            row->step = ev->step[mb->kernel];
        }
    }
    return TELLER_OK;
}

teller_status teller_run_diagnose(teller_run *r, const teller_diag_opts *opts, const teller_diagnosis **out,
                                  teller_error *err)
{
    teller_diag_opts o = opts ? *opts : teller_diag_defaults();
    teller_diagnosis *d = NULL;
    teller_status s = teller_diagnose(r->st, &o, &d, err);
    if (s != TELLER_OK)
        return s;
    teller_diagnosis_free(r->diag);
    r->diag = d;
    if (out)
        *out = d;
    return TELLER_OK;
}

teller_status teller_run_reference(teller_run *r, teller_diag_reference **out, teller_error *err)
{
    return teller_diag_reference_make(r->st, NULL, out, err);
}

teller_status teller_run_baseline(teller_run *r, const char *which, teller_error *err)
{
    teller_status (*fn)(const teller_store *, teller_step_pred **, size_t *, teller_error *) =
        !which                    ? NULL
        : !strcmp(which, "zscore") ? teller_baseline_zscore
        : !strcmp(which, "gmm")    ? teller_baseline_gmm
                                   : NULL;
    if (!fn)
        return teller_error_set(err, TELLER_ERR_ARG, "", 0, "the baseline is zscore or gmm, not '%s'",
                                which ? which : "(none)");
    teller_step_pred *p = NULL;
    size_t np = 0;
    teller_status s = fn(r->st, &p, &np, err);
    if (s != TELLER_OK)
        return s;
    free(r->base);
    r->base = p;
    r->nbase = np;
    return TELLER_OK;
}

teller_status teller_run_render(const teller_run *r, teller_run_output what, char **out, size_t *len,
                                teller_error *err)
{
    *out = NULL;
    *len = 0;
    if ((unsigned)what > TELLER_RUN_BASELINE)
        return teller_error_set(err, TELLER_ERR_ARG, "", 0, "no output %d", (int)what);
    if (what == TELLER_RUN_BASELINE ? !r->base : !r->diag)
        return teller_error_set(err, TELLER_ERR_ARG, "", 0, "the run has no %s yet",
                                what == TELLER_RUN_BASELINE ? "baseline" : "diagnosis");
    char *buf = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);
    if (!f)
        return teller_error_set(err, TELLER_ERR_NOMEM, "", 0, "out of memory");
    teller_status s = TELLER_OK;
    switch (what) {
    case TELLER_RUN_PREDICTIONS:
        s = teller_diag_write_preds(f, r->diag);
        break;
    case TELLER_RUN_CANDIDATES:
        teller_diag_write_candidates(f, r->st, r->diag);
        break;
    case TELLER_RUN_HTML:
        s = teller_report_html(r->st, r->diag, r->diag->requests, r->title, f, err);
        break;
    case TELLER_RUN_PERFETTO:
        s = teller_report_perfetto(r->st, r->diag, f, err);
        break;
    case TELLER_RUN_BASELINE:
        teller_pred_write(f, r->base, r->nbase);
        break;
    }
    /* a memory stream fails only when it cannot grow */
    int bad = ferror(f);
    if (fclose(f) != 0 || bad) {
        free(buf);
        return s != TELLER_OK ? s : teller_error_set(err, TELLER_ERR_NOMEM, "", 0, "out of memory");
    }
    if (s != TELLER_OK) {
        free(buf);
        return s == TELLER_ERR_NOMEM && err && !err->msg[0]
                   ? teller_error_set(err, TELLER_ERR_NOMEM, "", 0, "out of memory")
                   : s;
    }
    *out = buf;
    *len = n;
    return TELLER_OK;
}
