/*
 * test_main.c - runs every test table, or those whose name contains argv[1].
 * Ends with "N passed, N failed" and exits non-zero on any failure.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "teller/diagnose.h"
#include "teller/ingest.h"
#include "teller/sim.h"
#include "teller/tree.h"

int check_failures;

const char *shared_path(const char *rel)
{
    static char buf[4096];
    const char *base = getenv("TELLER_SHARED");
    snprintf(buf, sizeof buf, "%s/data/traces/%s", base ? base : TELLER_SHARED_DIR, rel);
    return buf;
}

void sim_case(char *dir, const teller_sim_opts *o)
{
    CHECK(mkdtemp(dir) != NULL);
    teller_error err;
    teller_error_clear(&err);
    CHECK_EQ_INT(teller_simulate(o, dir, &err), TELLER_OK);
}

void sim_faulty(char *dir, int nodes, int gpus, int steps, uint64_t seed, int hangs)
{
    teller_sim_opts o = teller_sim_defaults();
    o.nodes = nodes;
    o.gpus_per_node = gpus;
    o.tp = gpus;
    o.pp = nodes;
    o.steps = steps;
    o.fault_rate = 0.3;
    o.faults = ((1u << TELLER_FAULT_COUNT) - 1) & ~(1u | (hangs ? 0 : 1u << TELLER_FAULT_NCCL_HANG));
    o.seed = seed;
    sim_case(dir, &o);
}

const char **node_logs_of(node_logs *l, const char *dir)
{
    for (int n = 0; n < 2; n++) {
        snprintf(l->path[n], sizeof l->path[n], "%s/logs/node%d.log", dir, n);
        l->v[n] = l->path[n];
    }
    return l->v;
}

char *diagnosis_json(teller_store *st, const teller_diag_opts *o)
{
    teller_diagnosis *d = NULL;
    teller_error err;
    teller_error_clear(&err);
    CHECK_EQ_INT(teller_diagnose(st, o, &d, &err), TELLER_OK);
    if (!d)
        return NULL;
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (f) {
        CHECK_EQ_INT(teller_diag_write_preds(f, d), TELLER_OK);
        teller_diag_write_candidates(f, st, d);
        fclose(f);
    }
    teller_diagnosis_free(d);
    return text;
}

char *read_file(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    long l = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
    char *b = l >= 0 && fseek(f, 0, SEEK_SET) == 0 ? malloc((size_t)l + 1) : NULL;
    if (b && fread(b, 1, (size_t)l, f) != (size_t)l) {
        free(b);
        b = NULL;
    }
    fclose(f);
    if (b) {
        b[l] = 0;
        *n = (size_t)l;
    }
    return b;
}

void rm_rf(const char *dir)
{
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK(system(cmd) == 0);
}

teller_store *load_case_ranks(const char *dir, int from, int to)
{
    teller_store *st = teller_store_create();
    teller_error err;
    teller_error_clear(&err);
    for (int r = from; r < to; r++) {
        char p[4200];
        snprintf(p, sizeof p, "%s/rank%d.trace.json.gz", dir, r);
        CHECK_EQ_INT(teller_ingest_file(st, p, NULL, &err), TELLER_OK);
    }
    CHECK_EQ_INT(teller_tree_build(st, NULL, &err), TELLER_OK);
    return st;
}

int main(int argc, char **argv)
{
    /* the tests read the real traces and logs in ../shared/data: without
     * them, say so once rather than fail (or crash) test by test */
    const char *base = getenv("TELLER_SHARED");
    char probe[4200];
    snprintf(probe, sizeof probe, "%s/data/traces/SHA256SUMS", base ? base : TELLER_SHARED_DIR);
    if (access(probe, R_OK) != 0) {
        fprintf(stderr, "teller_tests: %s is missing: the tests read the real data in shared/ (a read-only "
                        "folder beside the checkout, or set TELLER_SHARED to it)\n", probe);
        return 2;
    }
    const test_case *tables[] = {json_tests, kineto_tests, real_trace_tests, nsys_tests, logs_tests, sim_tests, diagnose_tests, diagnose_mode_tests, cli_tests,
                                    collect_tests, report_tests, tpe_tests, requests_tests, perturb_tests, load_tests, model_tests, mpi_tests};
    int passed = 0, failed = 0;
    for (size_t t = 0; t < sizeof tables / sizeof *tables; t++) {
        for (const test_case *c = tables[t]; c->name; c++) {
            if (argc > 1 && !strstr(c->name, argv[1]))
                continue;
            check_failures = 0;
            c->fn();
            if (check_failures) {
                printf("FAIL %s\n", c->name);
                failed++;
            } else {
                printf("ok   %s\n", c->name);
                passed++;
            }
        }
    }
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
