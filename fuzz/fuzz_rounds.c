/*
 * fuzz_rounds.c - libFuzzer target for what teller-mpi's processes send
 * each other while the run is built (src/mpi/rounds.c): the steps process
 * 0 sends a reader, and the answer the reader sends back. Any bytes must
 * be taken or refused, never crash.
 *
 * As fuzz_summary does, the input drives real buffers: the part before
 * the first 0 byte is read as a Kineto trace twice, one store built as the
 * run (teller_tree_build_given, its summaries kept), one kept as a reader
 * keeps it (teller_tree_local); the run's steps are packed, flipped by the
 * input's tail (flip.h) and answered by the kept store; its answer,
 * flipped by the same tail, is taken by the run. Unflipped, both must be
 * taken.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "flip.h"
#include "mpi/rounds.h"
#include "teller/tree.h"
#include "tree/tree_internal.h"

/* buf (n bytes) flipped by the tail, in an exact-size heap copy (*keep
 * bytes; NULL out of memory); *flipped says whether it changed. */
static unsigned char *flipped_copy(const uint8_t *data, size_t size, size_t from, unsigned char *buf, size_t n,
                                   size_t *keep, int *flipped)
{
    *flipped = fuzz_flip(data, size, from, buf, n, keep);
    unsigned char *copy = malloc(*keep ? *keep : 1);
    if (copy)
        memcpy(copy, buf, *keep);
    return copy;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t from;
    teller_store *run = fuzz_trace(data, size, &from), *kept = run ? fuzz_trace(data, size, &from) : NULL;
    teller_source_summary *sr = NULL, *rsr = kept ? calloc(teller_store_num_sources(run) + 1, sizeof *rsr) : NULL;
    teller_error err;
    size_t ns = kept ? teller_store_num_sources(kept) : 0, n = 0, cn = 0, keep, ckeep;
    unsigned char *steps = NULL, *cells = NULL, *copy = NULL, *ccopy = NULL;
    int64_t **end = calloc(ns + 1, sizeof *end);
    int built = kept && rsr && end && teller_tree_build_given(run, NULL, rsr, NULL, &err) == TELLER_OK;
    for (size_t q = 0; built && q < ns; q++) /* each source's rows at most the run's */
        built = (end[q] = malloc((teller_store_num_steps(run) + 1) * sizeof *end[q])) != NULL;
    if (built && teller_tree_local(kept, NULL, &sr, &err) == TELLER_OK && teller_store_num_sources(run) == ns &&
        (steps = teller_steps_pack(run, 0, ns, &n))) {
        int flipped, cflipped;
        copy = flipped_copy(data, size, from, steps, n, &keep, &flipped);
        teller_status s =
            copy ? teller_steps_answer(&kept, 1, copy, keep, (void **)&cells, &cn, &err) : TELLER_ERR_NOMEM;
        if (!flipped && s != TELLER_OK && s != TELLER_ERR_NOMEM) {
            fprintf(stderr, "fuzz_rounds: unflipped steps were refused: %s\n", err.msg);
            abort();
        }
        if (s == TELLER_OK && (ccopy = flipped_copy(data, size, from, cells, cn, &ckeep, &cflipped))) {
            s = teller_stamps_take(run, 0, ns, rsr, end, ccopy, ckeep, 1, &err);
            if (!flipped && !cflipped && s != TELLER_OK && s != TELLER_ERR_NOMEM) {
                fprintf(stderr, "fuzz_rounds: an unflipped answer was refused: %s\n", err.msg);
                abort();
            }
        }
    }
    free(steps);
    free(copy);
    free(cells);
    free(ccopy);
    teller_source_summary_free(sr, ns);
    teller_source_summary_free(rsr, run ? teller_store_num_sources(run) : 0);
    for (size_t q = 0; end && q < ns; q++)
        free(end[q]);
    free(end);
    teller_store_free(run);
    teller_store_free(kept);
    return 0;
}
