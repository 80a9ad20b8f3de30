/*
 * fuzz_kineto.c - libFuzzer target for the Kineto reader, the tree builder
 * and the diagnosis.
 *
 * Loads the input with teller_ingest_kineto_mem (from an exact-size heap copy,
 * so AddressSanitizer sees reads past the end), and when it loads, builds the
 * trees, computes what `teller stats` and `teller steps` print and diagnoses
 * it (every detector, on one thread). An input of odd length is loaded
 * twice, as rank 0 and rank 1 on two nodes, so that
 * collective matching across ranks and the clock-offset estimate run too.
 * Library code must never crash, leak or hit undefined behaviour on any input;
 * a few invariants of the result are checked with abort().
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "teller/diagnose.h"
#include "teller/ingest.h"
#include "teller/store.h"
#include "teller/tree.h"

#define REQUIRE(cond)                                                                 \
    do {                                                                              \
        if (!(cond)) {                                                                \
            fprintf(stderr, "fuzz_kineto: property failed: %s (line %d)\n", #cond, __LINE__); \
            abort();                                                                  \
        }                                                                             \
    } while (0)

static void check_store(const teller_store *st)
{
    const teller_events *ev = teller_store_events(st);
    teller_tree_stats ts;
    teller_tree_stats_get(st, &ts);
    REQUIRE(ts.events == ev->n);
    REQUIRE(ts.kernels_linked <= ts.kernels && ts.gpu_ops_linked <= ts.gpu_ops);
    for (size_t i = 0; i < ev->n; i++) {
        REQUIRE(ev->dur_ns[i] >= 0);
        REQUIRE(ev->layer[i] < TELLER_LAYER_COUNT);
        REQUIRE(ev->source[i] < teller_store_num_sources(st));
        uint32_t p = ev->parent[i];
        REQUIRE(p == TELLER_NONE || p < ev->n);
        REQUIRE(p == TELLER_NONE || ev->depth[i] > 0);
        REQUIRE(ev->first_child[i] == TELLER_NONE || ev->first_child[i] < ev->n);
        REQUIRE(ev->next_sibling[i] == TELLER_NONE || ev->next_sibling[i] < ev->n);
        REQUIRE(ev->step[i] == TELLER_NONE || ev->step[i] < teller_store_step_count(st));
        (void)teller_store_str(st, ev->name[i]);
        (void)teller_store_event_args(st, (uint32_t)i);
        (void)teller_store_event_comm(st, (uint32_t)i);
    }
    size_t nsteps = teller_store_num_steps(st);
    const teller_step *steps = teller_store_steps(st);
    for (size_t k = 0; k < nsteps; k++)
        REQUIRE(steps[k].marker == TELLER_NONE || steps[k].marker < ev->n);
    const teller_collective *co = teller_store_collectives(st);
    for (size_t k = 0; k < teller_store_num_collectives(st); k++)
        for (uint32_t m = 0; m < co[k].num_members; m++)
            REQUIRE(teller_store_coll_members(st)[co[k].first_member + m].kernel < ev->n);

    teller_step_summary *sum = NULL;
    size_t n = 0;
    teller_error err;
    if (teller_step_summaries(st, &sum, &n, &err) == TELLER_OK) {
        REQUIRE(n == nsteps);
        for (size_t k = 0; k < n; k++)
            REQUIRE(sum[k].gpu_busy_ns >= 0);
    }
    free(sum);
}

/* The diagnosis reads what the reader kept (names, args, a torch op's
 * input shapes as the trace wrote them: src/diagnose/roofline.c parses
 * them): on one thread, every step judged, every root a loaded event. */
static void check_diagnosis(teller_store *st)
{
    teller_diag_opts o = teller_diag_defaults();
    o.jobs = 1;
    teller_diagnosis *d = NULL;
    teller_error err;
    teller_error_clear(&err);
    if (teller_diagnose(st, &o, &d, &err) != TELLER_OK)
        return;
    REQUIRE(d->n == teller_store_step_count(st));
    for (size_t k = 0; k < d->n; k++)
        REQUIRE(d->steps[k].culprit_event == TELLER_NONE || d->steps[k].culprit_event < teller_store_events(st)->n);
    teller_diagnosis_free(d);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *buf = malloc(size ? size : 1);
    if (!buf)
        return 0;
    memcpy(buf, data, size);
    teller_store *st = teller_store_create();
    if (!st) {
        free(buf);
        return 0;
    }
    int two_ranks = size & 1;
    teller_ingest_opts io = teller_ingest_defaults();
    teller_tree_opts to = teller_tree_defaults();
    teller_error err;
    teller_error_clear(&err);
    if (two_ranks)
        io.rank_override = 0;
    teller_status s = teller_ingest_kineto_mem(st, "fuzz-rank0.json", buf, size, &io, &err);
    if (s == TELLER_OK && two_ranks) {
        io.rank_override = 1;
        to.gpus_per_node = 1;
        s = teller_ingest_kineto_mem(st, "fuzz-rank1.json", buf, size, &io, &err);
    }
    if (s != TELLER_OK) {
        REQUIRE(err.code == s && err.msg[0] != 0);
    } else if (teller_tree_build(st, &to, &err) == TELLER_OK) {
        check_store(st);
        check_diagnosis(st);
    }
    for (size_t i = 0; i < teller_store_num_warning_msgs(st); i++)
        (void)strlen(teller_store_warning_msg(st, i));
    teller_store_free(st);
    free(buf);
    return 0;
}
