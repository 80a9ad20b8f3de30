/*
 * diff_json.c - a diff as one JSON object (diff.h; the schema is in
 * docs/DIFF.md). Every string from a trace goes through teller_json_put.
 */
#include <inttypes.h>
#include <stdio.h>

#include "teller/diff.h"
#include "../util/textout.h"

static void put_size(FILE *f, const teller_diff_class *c)
{
    fprintf(f, "\"size_by\": \"%s\", \"size_lo\": %" PRId64 ", \"size_hi\": %" PRId64,
            c->kind == TELLER_STEP_ITERATION ? "none" : c->by_kernels ? "kernels" : "work", c->size_lo, c->size_hi);
}

void teller_diff_json(const teller_diff *d, FILE *f)
{
    const teller_diff_verdict *v = &d->verdict;
    fprintf(f, "{\"comparable\": %s, \"why\": ", v->comparable ? "true" : "false");
    teller_json_put(f, v->why);
    fprintf(f, ", \"kernel_overlap\": %.4f, \"kernel_ratio\": %.4f, \"ref\": {\"ranks\": %d, \"step_rows\": %u, "
               "\"unmatched_rows\": %u, \"device\": ",
            v->kernel_overlap, v->kernel_ratio, v->ref_ranks, d->ref_rows, d->ref_unmatched);
    teller_json_put(f, d->ref_device);
    fprintf(f, "}, \"run\": {\"ranks\": %d, \"step_rows\": %u, \"unmatched_rows\": %u, \"device\": ", v->run_ranks,
            d->run_rows, d->run_unmatched);
    teller_json_put(f, d->run_device);
    fputs("},\n \"classes\": [", f);
    for (size_t i = 0; i < d->nclasses; i++) {
        const teller_diff_class *c = &d->classes[i];
        fprintf(f, "%s\n  {\"family\": ", i ? "," : "");
        teller_json_put(f, c->family);
        fprintf(f, ", \"kind\": \"%s\", ", teller_step_kind_name(c->kind));
        put_size(f, c);
        fprintf(f,
                ", \"ref_rows\": %u, \"run_rows\": %u, \"ref_ns\": %" PRId64 ", \"run_ns\": %" PRId64
                ", \"ref_spread_ns\": %" PRId64 ", \"run_spread_ns\": %" PRId64 ", \"judged\": %s, \"changed\": %s, "
                "\"rank\": %d, "
                "\"ref_step\": %u, \"run_step\": %u}",
                c->ref_rows, c->run_rows, c->ref_ns, c->run_ns, c->ref_spread_ns, c->run_spread_ns,
                c->judged ? "true" : "false", c->changed ? "true" : "false", c->rank, c->ref_step, c->run_step);
    }
    fputs("],\n \"changes\": [", f);
    for (size_t i = 0; i < d->nchanges; i++) {
        const teller_diff_change *c = &d->changes[i];
        fprintf(f, "%s\n  {\"class\": %u, \"what\": \"%s\", \"op\": ", i ? "," : "", c->cls,
                teller_diff_what_name(c->what));
        teller_json_put(f, c->op);
        fputs(", \"ref_name\": ", f);
        teller_json_put(f, c->ref_name);
        fputs(", \"run_name\": ", f);
        teller_json_put(f, c->run_name);
        fprintf(f,
                ", \"rank\": %d, \"ref_ns\": %" PRId64 ", \"run_ns\": %" PRId64 ", \"delta_ns\": %" PRId64
                ", \"noise_ns\": %" PRId64 ", \"changed\": %s, \"waits\": %s, \"ref_count\": %g, \"run_count\": %g, \"ranks_changed\": %u, "
                "\"ranks\": %u}",
                c->rank, c->ref_ns, c->run_ns, c->run_ns - c->ref_ns, c->noise_ns, c->changed ? "true" : "false", c->waits ? "true" : "false", c->ref_count, c->run_count,
                c->ranks_changed, c->ranks);
    }
    const teller_diff_kernel *ks[2] = {d->added, d->gone};
    size_t nk[2] = {d->nadded, d->ngone};
    for (int w = 0; w < 2; w++) {
        fprintf(f, "],\n \"%s\": [", w ? "kernels_gone" : "kernels_new");
        for (size_t i = 0; i < nk[w]; i++) {
            fprintf(f, "%s{\"name\": ", i ? ", " : "");
            teller_json_put(f, ks[w][i].name);
            fprintf(f, ", \"ns_per_step\": %.0f}", ks[w][i].ns_per_step);
        }
    }
    fputs("],\n \"ranks\": [", f);
    for (size_t i = 0; i < d->nranks; i++) {
        const teller_diff_rank *r = &d->ranks[i];
        fprintf(f, "%s\n  {\"class\": %u, \"rank\": %d, \"ref_ns\": %" PRId64 ", \"run_ns\": %" PRId64
                   ", \"changed\": %s}",
                i ? "," : "", r->cls, r->rank, r->ref_ns, r->run_ns, r->changed ? "true" : "false");
    }
    fputs("]}\n", f);
}
