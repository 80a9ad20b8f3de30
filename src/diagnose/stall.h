/*
 * stall.h - what a host stall costs a step (stall.c): a GPU fed ahead runs
 * on from its queue through a stall and idles later, where it catches up
 * with the late host, or not at all; the cost is read from the rank's GPU
 * work walked in start order. Shared by the detectors whose findings are
 * host delays (API calls, host gaps). An operation waited for an operation
 * of another stream as TELLER_WAIT_NS and TELLER_ROUND_NS say
 * (tree_internal.h). Not a public header.
 */
#ifndef TELLER_DIAG_STALL_H
#define TELLER_DIAG_STALL_H

#include <stddef.h>
#include <stdint.h>

#include "context.h"

/* A GPU operation of the source being walked. */
typedef struct gop {
    int64_t  start, end, ready; /* ready: its launch call's end (its start without a launch) */
    uint32_t step;
    int32_t  pid, tid;          /* device and stream */
    int      peers;             /* a collective with other loaded ranks: its end is theirs too */
    size_t   wix;               /* such a collective: its kernel in the waits index (diag_gpuops_create),
                                 * else SIZE_MAX */
} gop;

/* Source s's GPU work, indexed for diag_host_delay_cost (its collectives'
 * kernels found in W); NULL when out of memory. */
typedef struct diag_gpuops diag_gpuops;
diag_gpuops *diag_gpuops_create(const dctx *D, const waitidx *W, size_t s);
void diag_gpuops_free(diag_gpuops *G);
/* The time in [a, b) in which source s's GPU (its busy index gpu) idled
 * waiting for work its host had not launched yet (idle before an operation
 * launched earlier, which waited for something the trace does not show,
 * is not). */
double diag_host_idle(const busyidx *gpu, const diag_gpuops *G, size_t s, int64_t a, int64_t b);
/* How much earlier step k (its longest rank window) would have ended had
 * source s's host not lost amt[i] ns at time at[i] (n delays, at sorted):
 * at most their sum. A collective with other loaded ranks could have
 * started earlier by at most late[j] (j its kernel in the waits index: how
 * late the rank arrived at it, or what of that other stalls have not spent)
 * plus what the collective before it on its stream (its communicator's)
 * moved, and the rank's peer group's windows end as much earlier as its
 * last collective; with late NULL no collective moves. */
double diag_host_delay_cost(const dctx *D, const diag_gpuops *G, size_t s, uint32_t k, const int64_t *at,
                            const double *amt, size_t n, const double *late);

#endif
