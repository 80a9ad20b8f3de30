/*
 * bufpool.h - the collector's CUPTI activity buffers, kept for reuse.
 * CUPTI asks for a buffer in the application's own thread, inside the API
 * call that filled the last one; a buffer of fresh pages then costs that
 * call a page fault per page as CUPTI writes it (on an H200 VM, 4.4-5.5 ms
 * for 8 MB, inside a decode step). The pool hands out buffers whose pages
 * are already resident: filled ahead on the flush thread, taken back once
 * their records are converted. Not a public header.
 */
#ifndef TELLER_BUFPOOL_H
#define TELLER_BUFPOOL_H

#include <pthread.h>
#include <stddef.h>

#define BUFPOOL_MAX 4 /* buffers kept at most; more are freed as they come back */

typedef struct bufpool {
    pthread_mutex_t mu;
    size_t          size; /* bytes a buffer */
    size_t          n;
    void           *buf[BUFPOOL_MAX];
} bufpool;

#define BUFPOOL_INIT {.mu = PTHREAD_MUTEX_INITIALIZER}

/* A buffer of P's size with its pages touched, NULL out of memory. */
void *bufpool_new(const bufpool *P);
/* A kept buffer, else a new one; NULL out of memory. */
void *bufpool_take(bufpool *P);
/* Keeps b for the next take, or frees it when BUFPOOL_MAX are kept. */
void bufpool_put(bufpool *P, void *b);
/* Makes new buffers until `want` (at most BUFPOOL_MAX) are kept; 0, or -1
 * out of memory. Call it outside the application's threads. */
int bufpool_fill(bufpool *P, size_t want);
/* Frees every kept buffer. */
void bufpool_free(bufpool *P);

#endif
