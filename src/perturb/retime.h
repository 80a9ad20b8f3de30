/*
 * retime.h - rewriting the times of a tree-built store as a fault would
 * (private to src/perturb/). docs/PERTURB.md has the rules.
 *
 * An edit makes one event longer (STRETCH) or puts host time in front of
 * one CPU event (GAP). The rewrite then moves everything the edit
 * reaches, in one sweep over the events in time order:
 *  - on a CPU thread, everything that starts at or after the edit point
 *    shifts, and events that contain the point grow, so parents still
 *    enclose their children;
 *  - a thread woken by a host op of another thread of its process (it
 *    started one within 2 ms after that op ended, idle since before)
 *    resumes as long after that op's new end as it did, or when its own
 *    work before the wait is done: the wait takes up a delay either way;
 *  - a GPU op starts at max(its launch's new start + launch latency, the
 *    previous op on its stream's new end + the gap it had), so a kernel
 *    never starts before its launch and stream order is kept; a kernel that
 *    queued behind others does not move with a late launch until the queue
 *    is gone; an op that started right when an op of another stream of its
 *    process ended (an event wait) starts no earlier than that op's new end,
 *    and neither its launch nor the idle gap before it on its own stream
 *    holds it back (it waited for that op, not for them);
 *  - a call that waits for the GPU (a synchronize, a copy that returns
 *    when done) ends when the GPU work it waited for ends, plus the tail it
 *    had; its thread shifts by the difference;
 *  - a collective ends for every member when the last member arrives plus
 *    the time it took after that, plus any extra transfer time;
 *  - a step whose annotation started after the previous step had ended on
 *    every rank (an engine that schedules a step when the last one is done)
 *    starts as long after the previous step's new end as it did, or when
 *    its thread is free: a rank that lagged catches up in its idle time;
 *  - every host event stays in the step the reader put it in (the last
 *    step annotation of its rank that started before it and had not
 *    ended), or between the same two steps: an event of another thread
 *    than the annotation's starts no earlier than its step now starts (or
 *    the step before it now ends), and a step annotation ends after, and
 *    starts after, the other threads' events of its step and of the gap
 *    before it. GPU work belongs to its launch's step, so it keeps its step.
 * Nothing is added, removed or reordered: names, ids, links stay as they
 * were, and every new time is at or after the old one for starts.
 */
#ifndef TELLER_PERTURB_RETIME_H
#define TELLER_PERTURB_RETIME_H

#include <stddef.h>
#include <stdint.h>

#include "teller/error.h"
#include "teller/store.h"

enum { RT_STRETCH = 0, RT_GAP = 1 };

typedef struct rt_edit {
    uint32_t ev;   /* the event */
    uint8_t  kind; /* RT_STRETCH: ev lasts d longer (a collective kernel: the whole instance's
                    * transfer takes d longer); RT_GAP: d of host time before ev (CPU only) */
    int64_t  d;    /* ns, > 0 */
} rt_edit;

/* Applies edits to the store's times (node 0's clock, as tree-built) and
 * writes the new start and duration of every event to start[] and dur[]
 * (ev->n entries each, caller-owned). Zero edits reproduce the store's
 * times exactly. */
teller_status rt_apply(const teller_store *st, const rt_edit *edits, size_t nedits, int64_t *start, int64_t *dur,
                       teller_error *err);

#endif
