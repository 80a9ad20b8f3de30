/*
 * fuzz_rounds.c - libFuzzer target for what teller-mpi's processes send
 * each other while the run is built (src/mpi/rounds.c): the build's two
 * questions process 0 sends a reader (the span after each rank's last
 * marker, the steps), and the answers the reader sends back. Any bytes
 * must be taken or refused, never crash.
 *
 * As fuzz_summary does, the input drives real buffers: the part before
 * the first 0 byte is read as a Kineto trace twice, one store built as the
 * run (teller_tree_build_given, its summaries kept), one kept as a reader
 * keeps it (teller_tree_local); each question is packed, flipped by the
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

/* The build's first question: per source its rank's last marker's end
 * (the run's first step's, or none, by the input), flipped by the tail,
 * answered by the kept store; the answer, flipped, taken by the run.
 * Unflipped, both must be taken. */
static void unmarked_round(const uint8_t *data, size_t size, size_t from, teller_store *run, teller_store *kept,
                           size_t ns)
{
    int64_t *last = malloc((ns + 1) * sizeof *last), (*span)[5] = malloc((ns + 1) * sizeof *span);
    size_t n = 0, an = 0, keep, akeep;
    unsigned char *q = NULL, *copy = NULL, *ans = NULL, *acopy = NULL;
    teller_error err;
    const teller_step *steps = teller_store_steps(run);
    for (size_t s = 0; last && s < ns; s++)
        last[s] = (from + s) % 2 && teller_store_num_steps(run) ? steps[0].end_ns : INT64_MIN;
    if (last && span && (q = teller_unmarked_pack(run, 0, ns, last, &n))) {
        int flipped, aflipped;
        copy = flipped_copy(data, size, from, q, n, &keep, &flipped);
        teller_status s =
            copy ? teller_question_answer(&kept, 1, copy, keep, (void **)&ans, &an, &err) : TELLER_ERR_NOMEM;
        if (!flipped && s != TELLER_OK && s != TELLER_ERR_NOMEM) {
            fprintf(stderr, "fuzz_rounds: an unflipped question was refused: %s\n", err.msg);
            abort();
        }
        if (s == TELLER_OK && (acopy = flipped_copy(data, size, from, ans, an, &akeep, &aflipped))) {
            s = teller_unmarked_take(run, 0, ns, acopy, akeep, 1, span, &err);
            if (!flipped && !aflipped && s != TELLER_OK && s != TELLER_ERR_NOMEM) {
                fprintf(stderr, "fuzz_rounds: an unflipped span was refused: %s\n", err.msg);
                abort();
            }
        }
    }
    free(last);
    free(span);
    free(q);
    free(copy);
    free(ans);
    free(acopy);
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
    if (built && teller_tree_local(kept, NULL, &sr, &err) == TELLER_OK && teller_store_num_sources(run) == ns)
        unmarked_round(data, size, from, run, kept, ns);
    if (built && sr && teller_store_num_sources(run) == ns && (steps = teller_steps_pack(run, 0, ns, &n))) {
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
