/*
 * fuzz_tlt.c - libFuzzer target for the .tlt reader and the tree builder.
 *
 * The input is prefixed with the .tlt magic when it lacks it. Checksums
 * would stop almost every mutation at the first chunk, so for inputs of
 * odd length the target first rewrites the header and chunk checksums
 * (walking chunk headers as the writer lays them out), which lets the
 * fuzzer reach the decompression, string, record and event code; inputs of
 * even length keep their checksums and exercise the damage paths. Loads
 * from an exact-size heap copy so AddressSanitizer sees reads past the end.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tlt_fix.h"
#include "teller/ingest.h"
#include "teller/store.h"
#include "teller/tree.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t n;
    uint8_t *buf = tlt_fuzz_file(data, size, &n);
    if (!buf)
        return 0;
    teller_store *st = teller_store_create();
    if (st) {
        teller_error err;
        teller_error_clear(&err);
        if (teller_ingest_tlt_mem(st, "fuzz.tlt", buf, n, NULL, &err) == TELLER_OK) {
            const teller_events *ev = teller_store_events(st);
            for (size_t i = 0; i < ev->n; i++)
                if (ev->dur_ns[i] < 0 || ev->layer[i] >= TELLER_LAYER_COUNT)
                    abort();
            teller_tree_build(st, NULL, &err);
        } else if (err.msg[0] == 0) {
            abort();
        }
        teller_store_free(st);
    }
    free(buf);
    return 0;
}
