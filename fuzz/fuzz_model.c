/*
 * fuzz_model.c - libFuzzer target for the model file reader: any bytes must
 * give a model or an error, never a crash. Two modes, by the input's first
 * byte:
 *   - even: the rest of the input is the file. For inputs of odd length the
 *     checksum at the end is first rewritten to match (as fuzz_vocab.c does
 *     with its hash), so that mutations reach the dimension, size, recipe,
 *     veto share, vocabulary and value checks.
 *   - odd: the rest is a list of edits to the built-in model (a real file,
 *     larger than libFuzzer's inputs): a u32 length to cut it to (0: keep
 *     it), then (u32 offset, u8 byte) pairs; the checksum is then made to
 *     match, so every field of a whole file is in reach. Without a built-in
 *     model this mode is the first.
 * A model that loads is run on one small step with two trace tokens. Parses
 * from an exact-size heap copy so AddressSanitizer sees reads past the end.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "teller/model.h"

/* the bytes of src/model/default.tmod (src/model/model.c) */
extern const unsigned char teller_default_model[];
extern const size_t teller_default_model_len;

static uint32_t get_u32(const uint8_t *b)
{
    return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}

/* The FNV-1a 64 of all but the last 8 bytes, written into them. */
static void fix_checksum(unsigned char *b, size_t n)
{
    if (n < 8)
        return;
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n - 8; i++) {
        h ^= b[i];
        h *= 0x100000001b3ull;
    }
    for (int k = 0; k < 8; k++)
        b[n - 8 + (size_t)k] = (unsigned char)(h >> (8 * k));
}

/* The built-in model edited as data says; NULL when out of memory. */
static unsigned char *edited_default(const uint8_t *data, size_t size, size_t *n)
{
    size_t len = teller_default_model_len;
    if (size >= 4 && get_u32(data) && get_u32(data) < len)
        len = get_u32(data);
    unsigned char *b = malloc(len ? len : 1);
    if (!b)
        return NULL;
    memcpy(b, teller_default_model, len);
    for (size_t i = 4; i + 5 <= size; i += 5) {
        uint32_t at = get_u32(data + i);
        if (len)
            b[at % len] = data[i + 4];
    }
    fix_checksum(b, len);
    *n = len;
    return b;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!size)
        return 0;
    unsigned char *copy;
    size_t n = size - 1;
    if (data[0] % 2 && teller_default_model_len) {
        copy = edited_default(data + 1, size - 1, &n);
    } else {
        copy = malloc(n ? n : 1);
        if (copy) {
            memcpy(copy, data + 1, n);
            if (n % 2 && n >= 8)
                fix_checksum(copy, n);
        }
    }
    if (!copy)
        return 0;
    teller_model *m = NULL;
    teller_error err;
    if (teller_model_load_bytes(copy, n, "fuzz", &m, &err) == TELLER_OK) {
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
