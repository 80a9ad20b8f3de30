/*
 * fuzz_pack.c - libFuzzer target for the packed-store reader that teller-mpi
 * uses on what other processes send (src/mpi/pack.c): any bytes must be
 * appended or refused, never crash.
 *
 * Random bytes would stop at the magic, so the input drives a real packed
 * store: the part before the first 0 byte is read as a Kineto trace (the
 * seed corpus of fuzz/corpus/kineto serves), that store is packed, and each
 * following 4-byte group of the input flips one byte of the packed buffer
 * (3 bytes of position, 1 of XOR mask) before the buffer, cut to a length
 * the last group may also shorten, is appended to a fresh store and the
 * trees are built. An unflipped buffer must append, and give the events
 * the trace gave. Appends from an exact-size heap copy so AddressSanitizer
 * sees reads past the end.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "flip.h"
#include "mpi/pack.h"
#include "teller/ingest.h"
#include "teller/store.h"
#include "teller/tree.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t from;
    teller_store *src = fuzz_trace(data, size, &from);
    teller_error err;
    teller_error_clear(&err);
    if (!src)
        return 0;
    size_t n = 0;
    unsigned char *packed = teller_pack_store(src, &n);
    if (!packed) {
        teller_store_free(src);
        return 0;
    }
    size_t keep;
    int flipped = fuzz_flip(data, size, from, packed, n, &keep);
    unsigned char *copy = malloc(keep ? keep : 1);
    if (copy) {
        memcpy(copy, packed, keep);
        teller_store *dst = teller_store_create();
        teller_status s = dst ? teller_pack_append(dst, copy, keep, &err) : TELLER_ERR_NOMEM;
        if (s == TELLER_OK) {
            if (!flipped && teller_store_events(dst)->n != teller_store_events(src)->n) {
                fprintf(stderr, "fuzz_pack: an unflipped store appended %zu events of %zu\n",
                        teller_store_events(dst)->n, teller_store_events(src)->n);
                abort();
            }
            (void)teller_tree_build(dst, NULL, &err);
        } else if (!flipped && s != TELLER_ERR_NOMEM) {
            fprintf(stderr, "fuzz_pack: an unflipped packed store was refused: %s\n", err.msg);
            abort();
        }
        teller_store_free(dst);
        free(copy);
    }
    free(packed);
    teller_store_free(src);
    return 0;
}
