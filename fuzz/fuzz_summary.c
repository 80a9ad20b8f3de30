/*
 * fuzz_summary.c - libFuzzer target for the reader of the summaries that
 * teller-mpi's processes send with each rank file (src/mpi/summary.c: the
 * communication kernels' rows and the step markers): any bytes must give
 * summaries the tree build takes, or be refused, never crash.
 *
 * As fuzz_pack does, the input drives a real summary: the part before the
 * first 0 byte is read as a Kineto trace (the seed corpus of
 * fuzz/corpus/kineto serves), its summary is found (teller_tree_local) and
 * packed, and each following 4-byte group flips one byte of the summary (3
 * bytes of position, 1 of XOR mask), or, the last, cuts it short. The summary
 * is then read, from an exact-size heap copy, against the trace read again,
 * and the trees are built from it. An unflipped summary must be taken and
 * give the collectives and steps a plain build finds.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "flip.h"
#include "mpi/summary.h"
#include "teller/ingest.h"
#include "teller/store.h"
#include "teller/tree.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t from;
    teller_store *src = fuzz_trace(data, size, &from), *dst = src ? fuzz_trace(data, size, &from) : NULL,
                 *plain = dst ? fuzz_trace(data, size, &from) : NULL;
    teller_source_summary *sr = NULL, *got = NULL;
    teller_error err;
    size_t ns = src ? teller_store_num_sources(src) : 0, n = 0;
    unsigned char *sum = plain && teller_tree_local(src, NULL, &sr, &err) == TELLER_OK
                             ? teller_summary_pack(src, sr, &n)
                             : NULL;
    if (sum) {
        size_t keep;
        int flipped = fuzz_flip(data, size, from, sum, n, &keep);
        unsigned char *copy = malloc(keep ? keep : 1);
        got = calloc(ns ? ns : 1, sizeof *got);
        if (copy && got) {
            memcpy(copy, sum, keep);
            teller_status s = teller_summary_read(dst, 0, ns, copy, keep, "fuzz.json", got, &err);
            if (s == TELLER_OK)
                s = teller_tree_build_given(dst, NULL, got, NULL, &err);
            if (!flipped && s != TELLER_OK && s != TELLER_ERR_NOMEM) {
                fprintf(stderr, "fuzz_summary: an unflipped summary was refused: %s\n", err.msg);
                abort();
            }
            if (!flipped && s == TELLER_OK && teller_tree_build(plain, NULL, &err) == TELLER_OK &&
                (teller_store_num_collectives(plain) != teller_store_num_collectives(dst) ||
                 teller_store_num_steps(plain) != teller_store_num_steps(dst))) {
                fprintf(stderr, "fuzz_summary: an unflipped summary gave %zu collectives and %zu steps, a plain build %zu and %zu\n",
                        teller_store_num_collectives(dst), teller_store_num_steps(dst),
                        teller_store_num_collectives(plain), teller_store_num_steps(plain));
                abort();
            }
        }
        free(copy);
    }
    free(sum);
    teller_source_summary_free(sr, ns);
    teller_source_summary_free(got, ns);
    teller_store_free(src);
    teller_store_free(dst);
    teller_store_free(plain);
    return 0;
}
