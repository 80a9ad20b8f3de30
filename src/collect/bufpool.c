/*
 * bufpool.c - the collector's CUPTI activity buffers, kept for reuse
 * (bufpool.h).
 */
#include "bufpool.h"

#include <stdlib.h>
#include <string.h>

void *bufpool_new(const bufpool *P)
{
    void *b = NULL;
    if (posix_memalign(&b, 8, P->size))
        return NULL;
    memset(b, 0, P->size); /* its pages resident now, not in the API call CUPTI writes it from */
    return b;
}

void *bufpool_take(bufpool *P)
{
    void *b = NULL;
    pthread_mutex_lock(&P->mu);
    if (P->n)
        b = P->buf[--P->n];
    pthread_mutex_unlock(&P->mu);
    return b ? b : bufpool_new(P);
}

void bufpool_put(bufpool *P, void *b)
{
    if (!b)
        return;
    pthread_mutex_lock(&P->mu);
    if (P->n < BUFPOOL_MAX) {
        P->buf[P->n++] = b;
        b = NULL;
    }
    pthread_mutex_unlock(&P->mu);
    free(b);
}

int bufpool_fill(bufpool *P, size_t want)
{
    if (want > BUFPOOL_MAX)
        want = BUFPOOL_MAX;
    for (;;) {
        pthread_mutex_lock(&P->mu);
        size_t n = P->n;
        pthread_mutex_unlock(&P->mu);
        if (n >= want)
            return 0;
        void *b = bufpool_new(P); /* outside the lock: a take meanwhile waits for no page fault */
        if (!b)
            return -1;
        bufpool_put(P, b);
    }
}

void bufpool_free(bufpool *P)
{
    pthread_mutex_lock(&P->mu);
    while (P->n)
        free(P->buf[--P->n]);
    pthread_mutex_unlock(&P->mu);
}
