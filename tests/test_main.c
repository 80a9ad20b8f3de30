/*
 * test_main.c - runs every test table, or those whose name contains argv[1].
 * Ends with "N passed, N failed" and exits non-zero on any failure.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "store/store_internal.h"
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

int run_cli(const char *args, char *out, size_t cap)
{
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "'%s' %s", TELLER_CLI, args);
    return run_shell(cmd, out, cap);
}

int run_shell(const char *cmd, char *out, size_t cap)
{
    char full[8192];
    snprintf(full, sizeof full, "%s 2>&1", cmd);
    FILE *p = popen(full, "r");
    if (!p)
        return -1;
    size_t n = fread(out, 1, cap - 1, p);
    out[n] = 0;
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

void sim_case(char *dir, const teller_sim_opts *o)
{
    CHECK(mkdtemp(dir) != NULL);
    teller_error err;
    teller_error_clear(&err);
    CHECK_EQ_INT(teller_simulate(o, dir, &err), TELLER_OK);
}

teller_sim_opts sim_shape(int nodes, int gpus, int tp, int pp, int steps, uint64_t seed)
{
    teller_sim_opts o = teller_sim_defaults();
    o.nodes = nodes;
    o.gpus_per_node = gpus;
    o.tp = tp;
    o.pp = pp;
    o.steps = steps;
    o.seed = seed;
    return o;
}

void sim_faulty(char *dir, int nodes, int gpus, int steps, uint64_t seed, int hangs)
{
    teller_sim_opts o = sim_shape(nodes, gpus, gpus, nodes, steps, seed);
    o.fault_rate = 0.3;
    o.faults = ((1u << TELLER_FAULT_COUNT) - 1) & ~(1u | (hangs ? 0 : 1u << TELLER_FAULT_NCCL_HANG));
    sim_case(dir, &o);
}

void sim_healthy(char *dir, int nodes, int gpus, int tp, int pp, int steps, uint64_t seed)
{
    teller_sim_opts o = sim_shape(nodes, gpus, tp, pp, steps, seed);
    o.fault_rate = 0;
    sim_case(dir, &o);
}

const char **node_logs_of(node_logs *l, const char *dir)
{
    for (int n = 0; n < NODE_LOGS; n++) {
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

int flagged(const teller_diagnosis *d)
{
    int n = 0;
    for (size_t k = 0; d && k < d->n; k++)
        n += d->steps[k].pred.abnormal;
    return n;
}

static const teller_diag_cand *first_cand(const teller_diagnosis *d, size_t k)
{
    return d && k < d->n && d->steps[k].ncands ? &d->cands[d->steps[k].first_cand] : NULL;
}

const char *top_kind(const teller_diagnosis *d, size_t k)
{
    const teller_diag_cand *c = first_cand(d, k);
    return c ? teller_fault_name(c->det) : "";
}

const char *top_op(const teller_store *st, const teller_diagnosis *d, size_t k)
{
    const teller_diag_cand *c = first_cand(d, k);
    return c ? teller_store_str(st, c->name) : "";
}

double top_cost(const teller_diagnosis *d, size_t k)
{
    const teller_diag_cand *c = first_cand(d, k);
    return c ? c->excess_ns : 0;
}

/* memcmp that accepts empty (NULL) arrays */
static int mem_eq(const void *a, const void *b, size_t n)
{
    return n == 0 || !memcmp(a, b, n);
}

int same_store(const teller_store *a, const teller_store *b)
{
    int same = a->nstr == b->nstr && a->nsources == b->nsources && a->nargs == b->nargs &&
               a->ncomms == b->ncomms && a->ev.n == b->ev.n && a->nsteps == b->nsteps && a->ncolls == b->ncolls &&
               a->nmembers == b->nmembers && a->nnodes == b->nnodes && a->nwarn == b->nwarn;
    if (!same)
        return 0;
    for (size_t i = 0; i < a->nstr; i++)
        same &= a->strs[i].len == b->strs[i].len && mem_eq(a->strs[i].ptr, b->strs[i].ptr, a->strs[i].len);
    size_t n = a->ev.n;
#define COLS_EQ(f) mem_eq(a->ev.f, b->ev.f, n * sizeof *a->ev.f)
    same &= COLS_EQ(start_ns) && COLS_EQ(dur_ns) && COLS_EQ(name) && COLS_EQ(layer) && COLS_EQ(flags) &&
            COLS_EQ(source) && COLS_EQ(corr) && COLS_EQ(args) && COLS_EQ(parent) &&
            COLS_EQ(first_child) && COLS_EQ(next_sibling) && COLS_EQ(depth) && COLS_EQ(step);
#undef COLS_EQ
    /* tracks by their pid and tid: their indices follow the order events were added in */
    for (size_t i = 0; i < n && same; i++)
        same = teller_event_pid(&a->ev, i) == teller_event_pid(&b->ev, i) &&
               teller_event_tid(&a->ev, i) == teller_event_tid(&b->ev, i);
    /* field by field where a struct has padding */
    for (size_t i = 0; i < a->nsources; i++) {
        const teller_source *x = &a->sources[i], *y = &b->sources[i];
        same &= x->path == y->path && x->format == y->format && x->rank == y->rank &&
                x->world_size == y->world_size && x->node == y->node && x->host == y->host && x->pid == y->pid &&
                x->num_devices == y->num_devices && x->device_name == y->device_name && x->base_ns == y->base_ns &&
                x->first_event == y->first_event && x->num_events == y->num_events;
    }
    for (size_t i = 0; i < a->nsteps; i++) {
        const teller_step *x = &a->steps[i], *y = &b->steps[i];
        same &= x->step == y->step && x->rank == y->rank && x->marker == y->marker && x->start_ns == y->start_ns &&
                x->end_ns == y->end_ns;
    }
    for (size_t i = 0; i < a->nnodes; i++) {
        const teller_node *x = &a->nodes[i], *y = &b->nodes[i];
        same &= x->node == y->node && x->host == y->host && x->offset_ns == y->offset_ns &&
                x->offset_samples == y->offset_samples;
    }
    same &= mem_eq(a->args, b->args, a->nargs * sizeof *a->args) &&
            mem_eq(a->comms, b->comms, a->ncomms * sizeof *a->comms) &&
            mem_eq(a->colls, b->colls, a->ncolls * sizeof *a->colls) &&
            mem_eq(a->members, b->members, a->nmembers * sizeof *a->members);
    for (size_t i = 0; i < a->nwarn_msgs; i++)
        same &= !strcmp(a->warn_msgs[i], b->warn_msgs[i]);
    return same;
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
    const test_case *tables[] = {json_tests, kineto_tests, real_trace_tests, nsys_tests, logs_tests, sim_tests, diagnose_tests, diagnose_mode_tests, check_tests, cli_tests,
                                     collect_tests, report_tests, tpe_tests, requests_tests, perturb_tests, load_tests, util_tests, model_tests, mpi_tests,
                                     commfam_tests, run_tests, diff_tests, watch_tests, metrics_tests, replay_tests};
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
