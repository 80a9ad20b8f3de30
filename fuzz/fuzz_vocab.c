/*
 * fuzz_vocab.c - libFuzzer target for the TPE vocabulary reader: any bytes
 * must give a vocabulary or an error, never a crash. A parsed vocabulary is
 * exercised by encoding and decoding a small sequence with it. The hash on
 * the end line would stop almost every mutation, so for inputs of odd
 * length the target first rewrites it to match (as fuzz_tlt.c does with
 * checksums), which lets the fuzzer reach the symbol and merge lines;
 * inputs of even length keep their hash and exercise the damage path.
 * Parses from an exact-size heap copy so AddressSanitizer sees reads past
 * the end.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "teller/tpe.h"

/* Rewrites the hash of a last line "end XXXXXXXXXXXXXXXX\n". */
static void fix_hash(char *d, size_t n)
{
    if (n < 21 || d[n - 1] != '\n')
        return;
    size_t at = n - 21;
    if (memcmp(d + at, "end ", 4) || (at > 0 && d[at - 1] != '\n'))
        return;
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < at; i++) {
        h ^= (unsigned char)d[i];
        h *= 0x100000001b3ull;
    }
    static const char hex[] = "0123456789abcdef";
    for (int k = 0; k < 16; k++)
        d[at + 4 + (size_t)k] = hex[(h >> (60 - 4 * k)) & 15];
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *copy = malloc(size ? size : 1);
    if (!copy)
        return 0;
    memcpy(copy, data, size);
    if (size % 2)
        fix_hash(copy, size);
    teller_tpe_vocab *v = NULL;
    teller_error err;
    if (teller_tpe_vocab_parse(copy, size, "fuzz", &v, &err) == TELLER_OK) {
        /* exercise the lookups the encoder uses */
        size_t n = teller_tpe_vocab_size(v);
        teller_tpe_seq s, enc;
        memset(&s, 0, sizeof s);
        memset(&enc, 0, sizeof enc);
        if (n > TELLER_TPE_REPEATS && teller_tpe_seq_alloc(&s, 8, &err) == TELLER_OK) {
            /* base symbols only (a sequence holding a repeat symbol is refused);
             * the same two twice, so that a repeat run forms too */
            for (size_t i = 0; i < 8; i++) {
                s.sym[i] = (uint32_t)(TELLER_TPE_REPEATS + i % 4 % (n - TELLER_TPE_REPEATS));
                s.parent[i] = TELLER_NONE;
                s.event[i] = TELLER_NONE;
            }
            if (teller_tpe_encode(v, &s, &enc, &err) == TELLER_OK) {
                teller_tpe_seq dec;
                memset(&dec, 0, sizeof dec);
                teller_tpe_decode(v, &enc, &dec, &err);
                teller_tpe_seq_free(&dec);
            }
            char text[128];
            teller_tpe_symbol_text(v, (uint32_t)(n - 1), text, sizeof text);
        }
        teller_tpe_seq_free(&s);
        teller_tpe_seq_free(&enc);
        teller_tpe_vocab_free(v);
    }
    free(copy);
    return 0;
}
