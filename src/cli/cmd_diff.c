/*
 * cmd_diff.c - `teller diff [--json] [--html FILE] [--top N] [options]
 * REF... -- RUN...`: what changed between a reference run and a run
 * (docs/DIFF.md). Runs that cannot be compared are refused with the reason
 * (exit status 1) unless --force, which compares them anyway after
 * printing the reason as a warning.
 */
#include <inttypes.h>
#include <string.h>

#include "cli.h"
#include "teller/diagnose.h"
#include "teller/diff.h"
#include "teller/report.h"

static const char *fmt(char *buf, size_t cap, double ns, int sign)
{
    char du[32];
    teller_fmt_dur(du, sizeof du, ns);
    snprintf(buf, cap, "%s%s", sign && ns > 0 ? "+" : "", du);
    return buf;
}

static void put_class(const teller_diff_class *c)
{
    printf("%s steps \"", teller_step_kind_name(c->kind));
    cli_put_text(stdout, c->family[0] ? c->family : "(no annotation)");
    printf("\"");
    if (c->kind != TELLER_STEP_ITERATION)
        printf(" of %" PRId64 "-%" PRId64 " %s", c->size_lo, c->size_hi, c->by_kernels ? "kernels" : "tokens");
}

/* The text: worst first, numbers as the traces hold them. */
static void print_diff(const teller_diff *d, size_t top)
{
    char a[40], b[40], c[40], e[40], g[40];
    printf("reference: %d rank%s, %u step rows", d->verdict.ref_ranks, d->verdict.ref_ranks == 1 ? "" : "s",
           d->ref_rows);
    if (d->ref_device[0]) {
        printf(" on ");
        cli_put_text(stdout, d->ref_device);
    }
    printf("\nrun:       %d rank%s, %u step rows", d->verdict.run_ranks, d->verdict.run_ranks == 1 ? "" : "s",
           d->run_rows);
    if (d->run_device[0]) {
        printf(" on ");
        cli_put_text(stdout, d->run_device);
    }
    printf("\n");
    if (d->ref_unmatched || d->run_unmatched)
        printf("unmatched: %u step rows of the reference and %u of the run are of classes the other lacks\n",
               d->ref_unmatched, d->run_unmatched);
    printf("\nStep classes, changed first (median step duration, reference -> run):\n");
    for (size_t i = 0; i < d->nclasses; i++) {
        const teller_diff_class *k = &d->classes[i];
        printf("  ");
        put_class(k);
        printf(": %s -> %s (%s; spread %s / %s; %u / %u step rows)%s\n", fmt(a, sizeof a, (double)k->ref_ns, 0),
               fmt(b, sizeof b, (double)k->run_ns, 0), fmt(c, sizeof c, (double)(k->run_ns - k->ref_ns), 1),
               fmt(e, sizeof e, (double)k->ref_spread_ns, 0), fmt(g, sizeof g, (double)k->run_spread_ns, 0),
               k->ref_rows, k->run_rows,
               !k->judged ? " not judged: too few steps" : k->changed ? " changed" : " within the spread");
    }
    size_t nchanged = 0;
    while (nchanged < d->nchanges && d->changes[nchanged].changed)
        nchanged++;
    printf("\nChanges, worst first (median time per step row on the rank that moved most):\n");
    size_t shown = top && top < nchanged ? top : nchanged;
    if (!nchanged) {
        shown = d->nchanges < 5 ? d->nchanges : 5;
        printf("  none past the noise%s\n", shown ? "; the largest moves within it:" : "");
    }
    for (size_t i = 0; i < shown; i++) {
        const teller_diff_change *x = &d->changes[i];
        printf("%3zu. %s %s ", i + 1, fmt(a, sizeof a, (double)(x->run_ns - x->ref_ns), 1),
               teller_diff_what_name(x->what));
        cli_put_text(stdout, x->op);
        printf(" on rank %d in ", x->rank);
        put_class(&d->classes[x->cls]);
        printf(": %s -> %s, %g -> %g calls (noise %s; past it on %u of %u ranks)\n",
               fmt(a, sizeof a, (double)x->ref_ns, 0), fmt(b, sizeof b, (double)x->run_ns, 0), x->ref_count,
               x->run_count, fmt(c, sizeof c, (double)x->noise_ns, 0), x->ranks_changed, x->ranks);
        if (x->ref_name[0] || x->run_name[0]) {
            printf("       ");
            cli_put_text(stdout, x->ref_name[0] ? x->ref_name : x->run_name);
            if (x->ref_name[0] && x->run_name[0] && strcmp(x->ref_name, x->run_name)) {
                printf(" -> ");
                cli_put_text(stdout, x->run_name);
            }
            printf("\n");
        }
    }
    if (nchanged && shown < nchanged)
        printf("  ... %zu more (--top 0 lists all)\n", nchanged - shown);
    const teller_diff_kernel *ks[2] = {d->added, d->gone};
    size_t nk[2] = {d->nadded, d->ngone};
    for (int w = 0; w < 2; w++) {
        printf("\nKernels only the %s launched (time per step row):\n", w ? "reference" : "run");
        if (!nk[w])
            printf("  none\n");
        for (size_t i = 0; i < nk[w]; i++) {
            printf("  %10s  ", fmt(a, sizeof a, ks[w][i].ns_per_step, 0));
            cli_put_text(stdout, ks[w][i].name);
            printf("\n");
        }
    }
    printf("\nRanks, changed first (median step duration per class):\n");
    size_t nr = top && top < d->nranks ? top : d->nranks;
    for (size_t i = 0; i < nr; i++) {
        const teller_diff_rank *r = &d->ranks[i];
        printf("  rank %d, ", r->rank);
        put_class(&d->classes[r->cls]);
        printf(": %s -> %s (%s)%s\n", fmt(a, sizeof a, (double)r->ref_ns, 0), fmt(b, sizeof b, (double)r->run_ns, 0),
               fmt(c, sizeof c, (double)(r->run_ns - r->ref_ns), 1), r->changed ? " changed" : "");
    }
    printf("\nCollectives that changed (per link: operation, size, group):\n");
    size_t nc = 0;
    for (size_t i = 0; i < d->nchanges; i++) {
        const teller_diff_change *x = &d->changes[i];
        if (x->what != TELLER_DIFF_COMM || !x->changed)
            continue;
        nc++;
        printf("  ");
        cli_put_text(stdout, x->op);
        printf(" on rank %d: %s -> %s per step row (%s)\n", x->rank, fmt(a, sizeof a, (double)x->ref_ns, 0),
               fmt(b, sizeof b, (double)x->run_ns, 0), fmt(c, sizeof c, (double)(x->run_ns - x->ref_ns), 1));
    }
    if (!nc)
        printf("  none\n");
}

int cmd_diff(int argc, char **argv)
{
    cli_load_opts o = cli_load_defaults();
    int json = 0, top = 10;
    const char *html = NULL;
    const cli_opt opts[] = {
        CLI_BOOL(0, "json", &json, "one JSON object instead of the text (docs/DIFF.md)"),
        CLI_STR(0, "html", &html, "FILE", 0, "an HTML page: the changes and one matched step's two timelines"),
        CLI_INT(0, "top", &top, "N", 0, 1 << 30, "changes and ranks listed (default 10; 0: all)"),
        CLI_LOAD_OPTS(&o),
        CLI_END,
    };
    const cli_cmd cmd = {
        .name = "diff",
        .usage = "[options] REF... -- RUN...",
        .about = "What changed between a reference run and a run of the same workload: step classes, the\n"
                 "operators whose time per step changed, worst first, kernels new and gone, ranks, collectives.",
        .args = "  REF...            the reference run: trace files or case directories\n"
                "  RUN...            the run to compare with it, the same, after --",
        .more = "Runs that cannot be compared (no step, another rank count, engine or model, no step kind in\n"
                "common) are refused with the reason; --force compares them anyway.",
        .opts = opts,
        .min_args = 1,
        .missing = "no reference given",
        .max_args = -1,
    };
    /* options anywhere: the reference's part and the run's are parsed alike */
    int sep = 1;
    while (sep < argc && strcmp(argv[sep], "--"))
        sep++;
    int nref = cli_parse(&cmd, sep, argv);
    if (nref < 0)
        return cli_parse_exit(nref);
    if (sep >= argc - 1) {
        cli_error("diff", "no run given: REF... -- RUN...");
        return 2;
    }
    char **runv = argv + sep; /* runv[0] stands for the command's name */
    runv[0] = argv[0];
    int nrun = cli_parse(&cmd, argc - sep, runv);
    if (nrun < 0)
        return cli_parse_exit(nrun);
    if (html && cli_can_write(html))
        return 1;
    teller_store *ref = cli_load(&o, argv + 1, nref);
    if (!ref)
        return 1;
    teller_store *run = cli_load(&o, runv + 1, nrun);
    if (!run) {
        teller_store_free(ref);
        return 1;
    }
    teller_diff *d = NULL;
    teller_error err;
    teller_error_clear(&err);
    int status = 0;
    if (teller_diff_compute(ref, run, &d, &err) != TELLER_OK) {
        fprintf(stderr, "teller diff: %s\n", err.msg);
        status = 1;
    } else if (!d->verdict.comparable && !o.load.force) {
        fprintf(stderr, "teller diff: cannot compare: ");
        cli_put_text(stderr, d->verdict.why);
        fprintf(stderr, " (--force compares anyway)\n");
        status = 1;
    } else {
        if (!d->verdict.comparable) {
            fprintf(stderr, "teller diff: warning: ");
            cli_put_text(stderr, d->verdict.why);
            fprintf(stderr, "; compared anyway (--force)\n");
        }
        if (json)
            teller_diff_json(d, stdout);
        else
            print_diff(d, (size_t)top);
        if (html) {
            FILE *f = cli_open_out(html);
            if (!f)
                status = 1;
            else if (teller_report_html_diff(d, ref, run, NULL, f, &err) != TELLER_OK) {
                fprintf(stderr, "teller: %s: %s\n", html, err.msg);
                fclose(f);
                status = 1;
            } else if (cli_close_out(f, html) != 0)
                status = 1;
        }
    }
    teller_diff_free(d);
    teller_store_free(ref);
    teller_store_free(run);
    return status;
}
