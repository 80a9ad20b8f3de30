/*
 * test_run.c - the run handle (include/teller/run.h): its tables against
 * the store it holds, the count-then-fill convention, the outputs it
 * renders and the errors it returns (also run under ASan by make test).
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "teller/teller.h"

static teller_run *load_run(const char *dir)
{
    teller_run *r = NULL;
    teller_error err;
    teller_error_clear(&err);
    CHECK_EQ_INT(teller_run_load(&dir, 1, NULL, &r, &err), TELLER_OK);
    return r;
}

static void test_run_tables_are_the_stores_rows(void)
{
    char dir[] = "/tmp/teller_run_tables_XXXXXX";
    sim_faulty(dir, 1, 2, 8, 5, 0);
    teller_run *r = load_run(dir);
    if (!r) {
        rm_rf(dir);
        return;
    }
    const teller_store *st = teller_run_store(r);
    const teller_events *ev = teller_store_events(st);
    teller_error err;
    size_t n = 0, gpu = 0, comm = 0;
    for (size_t i = 0; i < ev->n; i++) {
        gpu += (size_t)teller_layer_is_gpu_work(ev->layer[i]);
        comm += (size_t)(teller_layer_is_gpu_work(ev->layer[i]) && (ev->flags[i] & TELLER_F_COMM));
    }
    CHECK_EQ_INT(teller_run_kernels(r, NULL, 0, &n, &err), TELLER_OK);
    CHECK_EQ_INT(n, gpu);
    CHECK(gpu > 100);
    teller_run_kernel *k = calloc(n, sizeof *k);
    CHECK(k != NULL);
    /* too few rows: an argument error, nothing written past them */
    CHECK_EQ_INT(teller_run_kernels(r, k, n - 1, &n, &err), TELLER_ERR_ARG);
    CHECK_EQ_INT(teller_run_kernels(r, k, n, &n, &err), TELLER_OK);
    size_t ncomm = 0, ranks[2] = {0, 0};
    for (size_t i = 0; k && i < n; i++) {
        uint32_t e = k[i].event;
        CHECK(teller_layer_is_gpu_work(ev->layer[e]));
        CHECK_EQ_INT(k[i].start_ns, ev->start_ns[e]);
        CHECK_EQ_INT(k[i].name, ev->name[e]);
        CHECK_EQ_INT(k[i].step, ev->step[e]);
        CHECK_EQ_INT(k[i].stream, teller_event_tid(ev, e));
        CHECK(k[i].rank == 0 || k[i].rank == 1);
        ranks[k[i].rank & 1]++;
        ncomm += k[i].comm;
        /* every simulated GPU op hangs under the call that issued it; a kernel's is a launch */
        CHECK(k[i].launch != 0 && k[i].launch == ev->name[ev->parent[e]]);
        if (k[i].layer == TELLER_LAYER_KERNEL)
            CHECK(teller_name_is_launch(teller_store_str(st, k[i].launch)));
    }
    CHECK_EQ_INT(ncomm, comm);
    CHECK(ranks[0] > 0 && ranks[1] > 0);
    free(k);

    CHECK_EQ_INT(teller_run_steps(r, NULL, 0, &n, &err), TELLER_OK);
    CHECK_EQ_INT(n, teller_store_num_steps(st));
    teller_run_step *s = calloc(n, sizeof *s);
    CHECK_EQ_INT(teller_run_steps(r, s, n, &n, &err), TELLER_OK);
    const teller_step *steps = teller_store_steps(st);
    for (size_t i = 0; s && i < n; i++) {
        CHECK_EQ_INT(s[i].sum.step, steps[i].step);
        CHECK_EQ_INT(s[i].sum.rank, steps[i].rank);
        CHECK(s[i].sum.dur_ns > 0 && s[i].sum.kernel_ns > 0);
        if (steps[i].marker != TELLER_NONE)
            CHECK_EQ_INT(s[i].annotation, ev->name[steps[i].marker]);
    }
    free(s);

    CHECK_EQ_INT(teller_run_collectives(r, NULL, 0, &n, &err), TELLER_OK);
    size_t members = 0;
    const teller_collective *cs = teller_store_collectives(st);
    for (size_t c = 0; c < teller_store_num_collectives(st); c++)
        members += cs[c].num_members;
    CHECK_EQ_INT(n, members);
    CHECK(n > 0);
    teller_run_coll *c = calloc(n, sizeof *c);
    CHECK_EQ_INT(teller_run_collectives(r, c, n, &n, &err), TELLER_OK);
    for (size_t i = 0; c && i < n; i++) {
        CHECK(ev->flags[c[i].kernel] & TELLER_F_COMM);
        CHECK_EQ_INT(c[i].start_ns, ev->start_ns[c[i].kernel]);
        CHECK_EQ_INT(c[i].members, cs[c[i].instance].num_members);
    }
    free(c);
    teller_run_free(r);
    rm_rf(dir);
}

static void test_run_renders_what_it_made(void)
{
    char dir[] = "/tmp/teller_run_render_XXXXXX";
    sim_faulty(dir, 1, 2, 8, 6, 0);
    teller_run *r = load_run(dir);
    if (!r) {
        rm_rf(dir);
        return;
    }
    teller_error err;
    char *out = NULL;
    size_t len = 0;
    CHECK_EQ_INT(teller_run_render(r, TELLER_RUN_PREDICTIONS, &out, &len, &err), TELLER_ERR_ARG);
    CHECK(strstr(err.msg, "no diagnosis") != NULL);
    CHECK(out == NULL);
    CHECK_EQ_INT(teller_run_render(r, (teller_run_output)99, &out, &len, &err), TELLER_ERR_ARG);
    CHECK_EQ_INT(teller_run_baseline(r, "median", &err), TELLER_ERR_ARG);
    CHECK(strstr(err.msg, "zscore or gmm") != NULL);

    const teller_diagnosis *d = NULL;
    /* twice: the second replaces the first (ASan sees the first freed) */
    CHECK_EQ_INT(teller_run_diagnose(r, NULL, &d, &err), TELLER_OK);
    CHECK_EQ_INT(teller_run_diagnose(r, NULL, &d, &err), TELLER_OK);
    CHECK(d && d->n == 8);
    static const struct {
        teller_run_output what;
        const char       *starts;
    } outs[] = {{TELLER_RUN_PREDICTIONS, "{\"version\": 1"},
                {TELLER_RUN_CANDIDATES, "{\"version\": 1, \"features\""},
                {TELLER_RUN_HTML, "<!DOCTYPE html>"},
                {TELLER_RUN_PERFETTO, "{"}};
    for (size_t i = 0; i < sizeof outs / sizeof *outs; i++) {
        CHECK_EQ_INT(teller_run_render(r, outs[i].what, &out, &len, &err), TELLER_OK);
        CHECK(out && len > 100 && strlen(out) == len && !strncmp(out, outs[i].starts, strlen(outs[i].starts)));
        teller_free(out);
    }
    CHECK_EQ_INT(teller_run_render(r, TELLER_RUN_BASELINE, &out, &len, &err), TELLER_ERR_ARG);
    CHECK_EQ_INT(teller_run_baseline(r, "gmm", &err), TELLER_OK);
    CHECK_EQ_INT(teller_run_baseline(r, "zscore", &err), TELLER_OK);
    CHECK_EQ_INT(teller_run_render(r, TELLER_RUN_BASELINE, &out, &len, &err), TELLER_OK);
    CHECK(out && strstr(out, "\"steps\"") != NULL);
    teller_free(out);
    teller_run_free(r);
    rm_rf(dir);
}

static void test_run_load_errors_name_the_file(void)
{
    teller_run *r = (teller_run *)&r;
    teller_error err;
    const char *missing = "/no/such/trace.json.gz";
    CHECK_EQ_INT(teller_run_load(&missing, 1, NULL, &r, &err), TELLER_ERR_IO);
    CHECK(r == NULL);
    CHECK(!strcmp(err.file, missing));
    char path[] = "/tmp/teller_run_bad_XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    const char bad[] = "{\"traceEvents\": [{\"ph\": \"X\", \"name\": \"k\", \"ts\": 1, \"dur\": 2}, {\"ph\": ]}";
    CHECK(fd >= 0 && write(fd, bad, sizeof bad - 1) == (ssize_t)(sizeof bad - 1));
    if (fd >= 0)
        close(fd);
    const char *p = path;
    CHECK(teller_run_load(&p, 1, NULL, &r, &err) != TELLER_OK);
    CHECK(!strcmp(err.file, path));
    CHECK(err.offset > 40 && err.offset < sizeof bad);
    CHECK_EQ_INT(teller_run_load(NULL, 0, NULL, &r, &err), TELLER_ERR_ARG);
    unlink(path);
    CHECK(!strcmp(teller_version(), TELLER_VERSION_STRING));
    CHECK_EQ_INT(teller_version_number(), TELLER_VERSION_NUMBER);
}

const test_case run_tests[] = {
    {"run tables are the store's rows, counted then filled", test_run_tables_are_the_stores_rows},
    {"run renders what it made, and says what it has not", test_run_renders_what_it_made},
    {"run load errors name the file and offset", test_run_load_errors_name_the_file},
    {NULL, NULL},
};
