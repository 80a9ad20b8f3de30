/*
 * kmap.c - see kmap.h.
 */
#include <stdlib.h>
#include <string.h>

#include "kmap.h"
#include "vec.h"

/* Fibonacci hashing: the top log2(cap) bits of key times 2^64 / phi, which
 * every bit of the key reaches, so keys that differ only in their upper
 * half (source << 32 | name) spread in a small table too. cap is a power
 * of two. */
static size_t slot_of(uint64_t key, size_t cap)
{
    return cap > 1 ? (size_t)((key * 0x9E3779B97F4A7C15ull) >> (64 - __builtin_ctzll((unsigned long long)cap))) : 0;
}

uint32_t kmap_get(kmap *m, uint64_t key, int create)
{
    if (key == UINT64_MAX) {
        if (!m->has_max && create) {
            m->has_max = 1;
            m->v_max = (uint32_t)m->n++;
        }
        return m->has_max ? m->v_max : UINT32_MAX;
    }
    key += 1;
    if (create && (m->n + 1) * 2 > m->cap) {
        size_t nc = m->cap ? m->cap * 2 : 256;
        uint64_t *nk = calloc(nc, sizeof *nk);
        uint32_t *nv = calloc(nc, sizeof *nv);
        if (!nk || !nv) {
            free(nk);
            free(nv);
            return UINT32_MAX;
        }
        for (size_t i = 0; i < m->cap; i++) {
            if (!m->k[i])
                continue;
            size_t j = slot_of(m->k[i], nc);
            while (nk[j])
                j = (j + 1) & (nc - 1);
            nk[j] = m->k[i];
            nv[j] = m->v[i];
        }
        free(m->k);
        free(m->v);
        m->k = nk;
        m->v = nv;
        m->cap = nc;
    }
    if (!m->cap)
        return UINT32_MAX;
    size_t j = slot_of(key, m->cap);
    while (m->k[j] && m->k[j] != key)
        j = (j + 1) & (m->cap - 1);
    if (m->k[j])
        return m->v[j];
    if (!create)
        return UINT32_MAX;
    m->k[j] = key;
    m->v[j] = (uint32_t)m->n++;
    return m->v[j];
}

void *kmap_slot(kmap *m, uint64_t key, void **arr, size_t *cap, size_t size)
{
    uint32_t ix = kmap_get(m, key, 1);
    if (ix == UINT32_MAX)
        return NULL;
    if (ix >= *cap) {
        size_t old = *cap;
        if (teller_grow(arr, cap, (size_t)ix + 1, size))
            return NULL;
        memset((char *)*arr + old * size, 0, (*cap - old) * size);
    }
    return (char *)*arr + (size_t)ix * size;
}

uint64_t kmap_hash_bytes(const void *p, size_t n)
{
    const unsigned char *s = p;
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ s[i]) * 0x100000001b3ull;
    return h;
}

void kmap_keys(const kmap *m, uint64_t *keys_by_index)
{
    for (size_t i = 0; i < m->cap; i++)
        if (m->k[i])
            keys_by_index[m->v[i]] = m->k[i] - 1;
    if (m->has_max)
        keys_by_index[m->v_max] = UINT64_MAX;
}

void kmap_free(kmap *m)
{
    free(m->k);
    free(m->v);
    memset(m, 0, sizeof *m);
}
