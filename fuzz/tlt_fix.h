/*
 * tlt_fix.h - what the .tlt fuzz targets share: checksums rewritten so
 * that mutations reach past the first chunk (fuzz_tlt.c says when).
 */
#ifndef TELLER_FUZZ_TLT_FIX_H
#define TELLER_FUZZ_TLT_FIX_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "collect/tlt_format.h"

/* Rewrites the header's and each chunk's checksum of d[0..n), walking the
 * chunk headers as the writer lays them out. */
static inline void fix_checksums(uint8_t *d, size_t n)
{
    if (n < TLT_HEADER_SIZE)
        return;
    tlt_put32(d + 28, (uint32_t)crc32(0, d, 28));
    size_t pos = TLT_HEADER_SIZE;
    while (pos + TLT_CHUNK_HEADER <= n) {
        uint8_t *h = d + pos;
        tlt_put32(h, TLT_CHUNK_MAGIC);
        uint32_t stored = tlt_get32(h + 12);
        if (stored > n - pos - TLT_CHUNK_HEADER)
            break;
        uLong c = crc32(0, h, 20);
        c = crc32(c, h + TLT_CHUNK_HEADER, stored);
        tlt_put32(h + 20, (uint32_t)c);
        pos += TLT_CHUNK_HEADER + stored;
    }
}

/* The fuzzer's bytes as a .tlt file: prefixed with the magic when they
 * lack it; checksums rewritten for odd lengths (inputs of even length keep
 * theirs and exercise the damage paths). malloc'd, exactly *n bytes (so
 * AddressSanitizer sees reads past the end); NULL out of memory. */
static inline uint8_t *tlt_fuzz_file(const uint8_t *data, size_t size, size_t *n)
{
    int has_magic = size >= 8 && !memcmp(data, TLT_MAGIC, 8);
    *n = has_magic ? size : size + 8;
    uint8_t *buf = malloc(*n ? *n : 1);
    if (!buf)
        return NULL;
    if (!has_magic)
        memcpy(buf, TLT_MAGIC, 8);
    memcpy(buf + (has_magic ? 0 : 8), data, size);
    if (size & 1)
        fix_checksums(buf, *n);
    return buf;
}

#endif
