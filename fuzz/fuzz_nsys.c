/*
 * fuzz_nsys.c - libFuzzer target for the Nsight Systems SQLite reader and
 * the tree builder.
 *
 * SQLite reads files, not memory, so each input is written to a fresh
 * temporary file (mkstemp in /tmp, unlinked afterwards), loaded with
 * teller_ingest_nsys and, when it loads, tree-built. The reader opens the
 * file read-only and immutable, so nothing the input holds can make it
 * write. Library code must never crash, leak or hit undefined behaviour on
 * any input; a few invariants of the result are checked with abort().
 *
 * Seeds: small exports (the hand-made databases of tests/test_nsys.c are a
 * good start; real exports exceed fuzz/run.sh's -max_len).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "teller/ingest.h"
#include "teller/store.h"
#include "teller/tree.h"

#define REQUIRE(cond)                                                                \
    do {                                                                             \
        if (!(cond)) {                                                               \
            fprintf(stderr, "fuzz_nsys: property failed: %s (line %d)\n", #cond, __LINE__); \
            abort();                                                                 \
        }                                                                            \
    } while (0)

static void check_store(const teller_store *st)
{
    const teller_events *ev = teller_store_events(st);
    teller_tree_stats ts;
    teller_tree_stats_get(st, &ts);
    REQUIRE(ts.events == ev->n);
    REQUIRE(ts.kernels_linked <= ts.kernels);
    uint64_t in_sources = 0;
    for (uint32_t s = 0; s < teller_store_num_sources(st); s++) {
        const teller_source *so = teller_store_source_c(st, s);
        REQUIRE(so->format == TELLER_FORMAT_NSYS && so->rank >= 0);
        in_sources += so->num_events;
    }
    REQUIRE(in_sources == ev->n);
    for (size_t i = 0; i < ev->n; i++) {
        REQUIRE(ev->dur_ns[i] >= 0);
        REQUIRE(ev->layer[i] < TELLER_LAYER_COUNT);
        REQUIRE(ev->source[i] < teller_store_num_sources(st));
        REQUIRE(ev->parent[i] == TELLER_NONE || ev->parent[i] < ev->n);
        REQUIRE(ev->step[i] == TELLER_NONE || ev->step[i] < teller_store_step_count(st));
        (void)teller_store_str(st, ev->name[i]);
        (void)teller_store_event_args(st, (uint32_t)i);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[] = "/tmp/fuzz_nsys_XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0)
        return 0;
    size_t off = 0;
    while (off < size) {
        ssize_t n = write(fd, data + off, size - off);
        if (n <= 0)
            break;
        off += (size_t)n;
    }
    close(fd);
    if (off == size) {
        teller_store *st = teller_store_create();
        if (st) {
            teller_error err;
            teller_error_clear(&err);
            teller_status s = teller_ingest_nsys(st, path, NULL, &err);
            if (s != TELLER_OK)
                REQUIRE(err.code == s && err.msg[0] != 0);
            else if (teller_tree_build(st, NULL, &err) == TELLER_OK)
                check_store(st);
            for (size_t i = 0; i < teller_store_num_warning_msgs(st); i++)
                (void)strlen(teller_store_warning_msg(st, i));
            teller_store_free(st);
        }
    }
    unlink(path);
    return 0;
}
