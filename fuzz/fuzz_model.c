/*
 * fuzz_model.c - libFuzzer target for the model file reader: any bytes must
 * give a model or an error, never a crash. The checksum at the end would
 * stop almost every mutation, so for inputs of odd length the target first
 * rewrites it to match (as fuzz_vocab.c does with its hash), which lets the
 * fuzzer reach the dimension, size, vocabulary and value checks. A model
 * that loads is run on one small step with two trace tokens. Parses from an exact-size heap copy so
 * AddressSanitizer sees reads past the end.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "teller/model.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    unsigned char *copy = malloc(size ? size : 1);
    if (!copy)
        return 0;
    memcpy(copy, data, size);
    if (size % 2 && size >= 8) {
        uint64_t h = 0xcbf29ce484222325ull;
        for (size_t i = 0; i < size - 8; i++) {
            h ^= copy[i];
            h *= 0x100000001b3ull;
        }
        for (int k = 0; k < 8; k++)
            copy[size - 8 + (size_t)k] = (unsigned char)(h >> (8 * k));
    }
    teller_model *m = NULL;
    teller_error err;
    if (teller_model_load_bytes(copy, size, "fuzz", &m, &err) == TELLER_OK) {
        teller_model_sample s;
        memset(&s, 0, sizeof s);
        s.ncands = 2;
        s.nlogs = 1;
        s.ntrace = 2; /* a slice of two tokens, the second under the first */
        s.tsym[1] = 60000;
        s.tparent[0] = TELLER_MODEL_NO_PARENT;
        teller_model_out o;
        teller_model_predict(m, &s, &o);
        teller_model_free(m);
    }
    free(copy);
    return 0;
}
