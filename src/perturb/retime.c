/*
 * retime.c - the time rewrite of src/perturb (see retime.h for the rules).
 *
 * One sweep over every event in order of its old start (GPU, then step
 * annotations, then other CPU events on equal starts). What a CPU thread
 * does to its events is kept as a list of points per thread, each "at old
 * time p, D ns more from here on": fault edits are known before the sweep;
 * the points of calls that wait for the GPU, of threads that waited for
 * another thread, and of steps held back for their other threads' events
 * are added while sweeping, when what they waited for has its new time.
 * Every dependency points from an earlier old time to a later one (launch
 * before kernel, op before the next op of its stream, GPU work before the
 * call that waited for it, the members of a collective before its end, a
 * step's start and its events before its end), so one sweep settles
 * everything.
 */
#include <stdlib.h>
#include <string.h>

#include "retime.h"
#include "../util/vec.h"

/* A GPU op that started within LAUNCH_BOUND of its launch call, or more
 * than GAP_BOUND after the previous op of its stream when its launch call
 * ended after that op did (the stream ran dry before the launch came), was
 * waiting for its launch: it moves with the launch. One that queued behind
 * other work (its launch done before the op ahead of it ended: a few µs of
 * the GPU's own spacing after it are not a wait) only moves when the
 * launch comes later than LAUNCH_FLOOR before its start. */
#define GAP_BOUND_NS    2000
#define LAUNCH_BOUND_NS 20000
#define LAUNCH_FLOOR_NS 5000
/* A GPU op that started within CROSS_BOUND after an op of another stream
 * of its process ended waited for it (an event the stream waited on: the
 * NCCL stream waits for the compute that made its input). */
#define CROSS_BOUND_NS  2000
/* A CPU thread that had no host op running and starts one within
 * HANDOFF_BOUND after a host op of another thread of its process ended,
 * and after its own last one ended before that, was woken by it: it waits
 * for that op wherever it now ends (autograd's engine thread starts the
 * backward pass 0.1-0.4 ms after the stepping thread calls backward(), and
 * the stepping thread goes on 0.2-1.7 ms after the engine's last op, on
 * HTA's training traces). */
#define HANDOFF_BOUND_NS 2000000

typedef struct pt {
    int64_t p, d;
} pt;

/* Points of one CPU thread: sorted by p, with prefix sums of d. */
typedef struct ptlist {
    pt      *v;
    int64_t *sum;
    size_t   n, cap, scap;
} ptlist;

typedef struct row {
    uint32_t first, n;
    uint8_t  gpu;
    ptlist   fixed, derived;
    int64_t  last_op_end; /* old end of the last outermost host op the sweep passed */
    int64_t  last_start;  /* old start of the last event the sweep passed */
    uint32_t *pending; /* waiting calls seen but not settled */
    size_t    npend, pcap;
} row;

typedef struct rt {
    const teller_store  *st;
    const teller_events *ev;
    size_t   n;
    row     *rows;
    size_t   nrows;
    uint32_t *row_of, *prev_op, *coll_of;
    int64_t  *ns, *ne, *extra, *end_extra, *fault_d;
    uint8_t  *done, *waiter;
    /* collectives */
    uint32_t *coll_cnt;
    int64_t  *coll_extra;
    /* per source: GPU ops by old end, prefix max of new ends */
    uint32_t *byend;
    int64_t  *pmax;
    size_t   *src_first, *src_filled;
    /* per source: outermost host ops of CPU threads by old end (in the
     * same order as byend), those of source s at hop_first[s] .. hop_first[s + 1] */
    uint32_t *hops;
    size_t   *hop_first;
    size_t   nsrc;
    /* step markers of each rank by start: those of rank group g (grp[source])
     * at mk[mk_first[g] .. mk_first[g + 1]); mk_done[g], the first whose end
     * is not settled yet; per marker, the latest new start of another
     * thread's event of its step (mk_in) and of the gap before it (mk_gap) */
    uint32_t *mk, *grp;
    size_t   *mk_first, *mk_done, ngrp;
    int64_t  *mk_in, *mk_gap;
    /* steps: old end over every rank, new end once known (INT64_MIN before);
     * the markers and GPU ops of step k: step_ev[step_first[k] .. step_first[k+1]) */
    uint32_t nsteps;
    int64_t *step_old_end, *step_new_end;
    uint32_t *step_first, *step_ev;
} rt;

enum { W_NONE = 0, W_SYNC = 1, W_COPY = 2 };

static int64_t end_of(const teller_events *ev, uint32_t i) { return ev->start_ns[i] + ev->dur_ns[i]; }

static int is_gpu_op(const teller_events *ev, uint32_t i)
{
    return (ev->flags[i] & TELLER_F_GPU) && teller_layer_is_gpu_work(ev->layer[i]);
}

static void pl_prefix(ptlist *l, size_t from)
{
    for (size_t i = from; i < l->n; i++)
        l->sum[i] = (i ? l->sum[i - 1] : 0) + l->v[i].d;
}

static int pl_add(ptlist *l, int64_t p, int64_t d)
{
    if (TELLER_GROW(l->v, l->cap, l->n + 1) || TELLER_GROW(l->sum, l->scap, l->n + 1))
        return -1;
    size_t at = l->n;
    while (at > 0 && l->v[at - 1].p > p) /* rare: a later call settled first */
        at--;
    memmove(l->v + at + 1, l->v + at, (l->n - at) * sizeof *l->v);
    l->v[at] = (pt){p, d};
    l->n++;
    pl_prefix(l, at);
    return 0;
}

/* Sum of d over points with p < t (le = 0) or p <= t (le = 1). */
static int64_t pl_sum(const ptlist *l, int64_t t, int le)
{
    size_t lo = 0, hi = l->n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (l->v[mid].p < t || (le && l->v[mid].p == t))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo ? l->sum[lo - 1] : 0;
}

static int64_t shift(const row *r, int64_t t, int le) { return pl_sum(&r->fixed, t, le) + pl_sum(&r->derived, t, le); }

/* Adds d to the end of event x and of its ancestors on the thread that
 * end when it does. */
static void grow_end(rt *R, uint32_t x, int64_t d)
{
    const teller_events *ev = R->ev;
    int64_t e = end_of(ev, x);
    R->end_extra[x] += d;
    for (uint32_t a = ev->parent[x]; a != TELLER_NONE && R->row_of[a] == R->row_of[x] && end_of(ev, a) == e;
         a = ev->parent[a])
        R->end_extra[a] += d;
}

static void coll_finish(rt *R, uint32_t c)
{
    const teller_collective *co = &teller_store_collectives(R->st)[c];
    const teller_coll_member *mem = teller_store_coll_members(R->st) + co->first_member;
    const teller_events *ev = R->ev;
    int64_t L = INT64_MIN, Ln = INT64_MIN;
    for (uint32_t j = 0; j < co->num_members; j++) {
        uint32_t k = mem[j].kernel;
        int64_t a = ev->start_ns[k], an = R->done[k] ? R->ns[k] : a;
        if (a > L) L = a;
        if (an > Ln) Ln = an;
    }
    for (uint32_t j = 0; j < co->num_members; j++) {
        uint32_t k = mem[j].kernel;
        if (R->done[k] != 1) /* 0: not reached yet, 2: end settled */
            continue;
        int64_t e = end_of(ev, k), after = e - L;
        int64_t tail = after < ev->dur_ns[k] ? after : ev->dur_ns[k];
        int64_t a = R->ns[k] + tail + R->coll_extra[c], b = e + (Ln - L) + R->coll_extra[c];
        /* a member that ended before the last one arrived (an instance the
         * trace's own times do not make one: a mismatched Seq) waited for
         * nobody: it keeps its duration */
        R->ne[k] = after < 0 ? R->ns[k] + ev->dur_ns[k] + R->coll_extra[c] : a > b ? a : b;
        R->done[k] = 2;
    }
}

/* The new end of GPU op g (reached: done 1 or 2). */
static int64_t need_end(rt *R, uint32_t g)
{
    if (R->done[g] == 2)
        return R->ne[g];
    if (R->done[g] == 0) /* never reached: only when the input breaks time order */
        return end_of(R->ev, g);
    if (R->coll_of[g] != TELLER_NONE) {
        coll_finish(R, R->coll_of[g]); /* early: the members not reached count with their old start */
        return R->ne[g];
    }
    R->ne[g] = R->ns[g] + R->ev->dur_ns[g] + R->extra[g];
    R->done[g] = 2;
    return R->ne[g];
}

/* The op of another stream of i's process that ended last at or before
 * i's start, when i started within CROSS_BOUND of it; else TELLER_NONE.
 * Times written in µs with three decimals round start and duration apart,
 * so an end up to CROSS_SLACK after i's start still counts as before it. */
#define CROSS_SLACK_NS 1000
static uint32_t cross_wait(const rt *R, uint32_t i)
{
    const teller_events *ev = R->ev;
    int64_t s = ev->start_ns[i];
    size_t lo = R->src_first[ev->source[i]], a = lo, b = R->src_first[ev->source[i] + 1];
    while (a < b) {
        size_t mid = (a + b) / 2;
        if (end_of(ev, R->byend[mid]) <= s + CROSS_SLACK_NS)
            a = mid + 1;
        else
            b = mid;
    }
    for (size_t k = a; k > lo && a - k < 8; k--) {
        uint32_t x = R->byend[k - 1];
        if (s - end_of(ev, x) > CROSS_BOUND_NS)
            return TELLER_NONE;
        if (R->row_of[x] != R->row_of[i] && ev->start_ns[x] < s)
            return x;
    }
    return TELLER_NONE;
}

/* Settles a call that waits for the GPU: its end follows the GPU work it
 * waited for, and its thread shifts by the difference. */
static int settle(rt *R, uint32_t y)
{
    const teller_events *ev = R->ev;
    row *rw = &R->rows[R->row_of[y]];
    int64_t T = end_of(ev, y), s = ev->start_ns[y], dur = ev->dur_ns[y];
    int64_t w_old = INT64_MIN, w_new = INT64_MIN;
    if (R->waiter[y] == W_SYNC) {
        uint16_t src = ev->source[y];
        size_t lo = R->src_first[src], hi = R->src_first[src + 1], a = lo, b = hi;
        while (a < b) {
            size_t mid = (a + b) / 2;
            if (end_of(ev, R->byend[mid]) <= T)
                a = mid + 1;
            else
                b = mid;
        }
        if (a > lo) {
            for (size_t j = R->src_filled[src]; j < a; j++) {
                int64_t e = need_end(R, R->byend[j]);
                R->pmax[j] = j > lo && R->pmax[j - 1] > e ? R->pmax[j - 1] : e;
            }
            if (a > R->src_filled[src])
                R->src_filled[src] = a;
            w_old = end_of(ev, R->byend[a - 1]);
            w_new = R->pmax[a - 1];
        }
    } else {
        for (uint32_t c = ev->first_child[y]; c != TELLER_NONE; c = ev->next_sibling[c]) {
            if (!is_gpu_op(ev, c) || end_of(ev, c) > T || ev->layer[c] == TELLER_LAYER_KERNEL)
                continue;
            int64_t e = end_of(ev, c), en = need_end(R, c);
            if (e > w_old) w_old = e;
            if (en > w_new) w_new = en;
        }
    }
    int64_t target = R->ns[y] + dur;
    if (w_old != INT64_MIN) {
        int64_t tail = T - w_old < dur ? T - w_old : dur;
        int64_t intrinsic = w_old <= s ? dur : tail;
        target = R->ns[y] + intrinsic;
        if (w_new + tail > target)
            target = w_new + tail;
    }
    target += R->fault_d[y];
    int64_t d = target - (T + shift(rw, T, 0));
    if (d == 0)
        return 0;
    if (pl_add(&rw->derived, T, d))
        return -1;
    grow_end(R, y, d);
    return 0;
}

/* Settles the pending waits of a row that ended by t (all of them when
 * t is INT64_MAX), earliest end first. */
static int settle_row(rt *R, row *rw, int64_t t)
{
    for (;;) {
        size_t best = rw->npend;
        for (size_t k = 0; k < rw->npend; k++) {
            int64_t e = end_of(R->ev, rw->pending[k]);
            if (e <= t && (best == rw->npend || e < end_of(R->ev, rw->pending[best])))
                best = k;
        }
        if (best == rw->npend)
            return 0;
        uint32_t y = rw->pending[best];
        rw->pending[best] = rw->pending[--rw->npend];
        if (settle(R, y))
            return -1;
    }
}

/* The new end of step k over every rank: the latest new end of its step
 * markers and of its GPU work. Called when the sweep has passed every old
 * end of the step, after the waits that ended by then were settled. */
static int64_t step_new_end(rt *R, uint32_t k)
{
    if (R->step_new_end[k] != INT64_MIN)
        return R->step_new_end[k];
    const teller_events *ev = R->ev;
    int64_t best = INT64_MIN;
    for (uint32_t j = R->step_first[k]; j < R->step_first[k + 1]; j++) {
        uint32_t i = R->step_ev[j];
        int64_t e = is_gpu_op(ev, i) ? need_end(R, i)
                                     : end_of(ev, i) + shift(&R->rows[R->row_of[i]], end_of(ev, i), 0) + R->end_extra[i];
        if (e > best)
            best = e;
    }
    return R->step_new_end[k] = best;
}

/* The latest new end, on i's thread, of the events before i that had
 * ended by old time s (a bounded look back). */
static int64_t thread_free_at(rt *R, uint32_t i, int64_t s)
{
    const teller_events *ev = R->ev;
    const row *rw = &R->rows[R->row_of[i]];
    int64_t best = INT64_MIN;
    for (uint32_t j = i, seen = 0; j > rw->first && seen < 64; j--, seen++) {
        uint32_t p = j - 1;
        int64_t e = end_of(ev, p);
        if (e > s)
            continue;
        e += shift(rw, e, 0) + R->end_extra[p];
        if (e > best)
            best = e;
    }
    return best;
}

/* An op a thread's work runs on, on a CPU row. */
static int is_host_op(const teller_events *ev, uint32_t i)
{
    return !(ev->flags[i] & TELLER_F_GPU) && teller_layer_is_host_op(ev->layer[i]);
}

/* An op that a thread runs on its own: a host op whose parent is none, not
 * a host op, or the step marker (older profilers record ProfilerStep#N as
 * an op, and a step would otherwise be one op that never hands off). */
static int is_outer_host_op(const teller_events *ev, uint32_t i)
{
    if (!is_host_op(ev, i) || (ev->flags[i] & TELLER_F_STEP))
        return 0;
    uint32_t p = ev->parent[i];
    return p == TELLER_NONE || !is_host_op(ev, p) || (ev->flags[p] & TELLER_F_STEP);
}

/* The host op of another thread of i's process whose end woke i's thread
 * (HANDOFF_BOUND above), when i is the thread's first event since: the
 * last such op to end at or before i's old start, after the thread's own
 * last host op ended and after the thread's previous event started, with
 * the thread's next host op (i or one after it) starting within the bound
 * after it; TELLER_NONE when none. */
static uint32_t woken_by(const rt *R, uint32_t i)
{
    const teller_events *ev = R->ev;
    const row *rw = &R->rows[R->row_of[i]];
    int64_t s = ev->start_ns[i];
    size_t lo = R->hop_first[ev->source[i]], hi = R->hop_first[ev->source[i] + 1], p = lo, q = hi;
    while (p < q) {
        size_t mid = (p + q) / 2;
        if (end_of(ev, R->hops[mid]) <= s)
            p = mid + 1;
        else
            q = mid;
    }
    uint32_t x = TELLER_NONE;
    for (size_t j = p; j > lo && x == TELLER_NONE; j--) {
        uint32_t h = R->hops[j - 1];
        int64_t e = end_of(ev, h);
        if (e < s - HANDOFF_BOUND_NS || e < rw->last_op_end || e <= rw->last_start)
            return TELLER_NONE;
        if (R->row_of[h] != R->row_of[i] && teller_event_pid(ev, h) == teller_event_pid(ev, i))
            x = h;
    }
    if (x == TELLER_NONE)
        return TELLER_NONE;
    for (uint32_t j = i; j < rw->first + rw->n && ev->start_ns[j] - end_of(ev, x) <= HANDOFF_BOUND_NS; j++)
        if (is_outer_host_op(ev, j))
            return x;
    return TELLER_NONE;
}

/* Where CPU event i lies among the step markers of its rank, by the
 * reader's rule (in the last marker that started at or before it, when it
 * started before that marker ended): the index into R->mk, with *in 1 for
 * inside that marker's step, 0 for the gap before that marker (the index
 * one past the rank's last for after it). */
static size_t mk_place(const rt *R, uint32_t i, int *in)
{
    const teller_events *ev = R->ev;
    size_t g = R->grp[ev->source[i]], lo = R->mk_first[g], a = lo, b = R->mk_first[g + 1];
    int64_t s = ev->start_ns[i];
    while (a < b) {
        size_t mid = (a + b) / 2;
        if (ev->start_ns[R->mk[mid]] <= s)
            a = mid + 1;
        else
            b = mid;
    }
    *in = a > lo && s < end_of(ev, R->mk[a - 1]);
    return *in ? a - 1 : a;
}

/* The new end of marker j (its row settled up to its old end). */
static int64_t mk_new_end(const rt *R, size_t j)
{
    uint32_t m = R->mk[j];
    int64_t e = end_of(R->ev, m);
    return e + shift(&R->rows[R->row_of[m]], e, 0) + R->end_extra[m];
}

/* Settles the ends of the markers of rank group g that ended by t, in
 * order: a marker ends no earlier than its step's events on other threads
 * now start (the thread that steps waits for the helpers it started, and
 * an event of the step must not fall into the next one). */
static int mk_close(rt *R, size_t g, int64_t t)
{
    for (; R->mk_done[g] < R->mk_first[g + 1]; R->mk_done[g]++) {
        size_t j = R->mk_done[g];
        uint32_t m = R->mk[j];
        int64_t e = end_of(R->ev, m);
        if (e > t)
            return 0;
        row *rw = &R->rows[R->row_of[m]];
        if (settle_row(R, rw, e))
            return -1;
        if (R->mk_in[j] == INT64_MIN)
            continue;
        int64_t need = R->mk_in[j] + 1 - mk_new_end(R, j);
        if (need > 0) {
            if (pl_add(&rw->derived, e, need))
                return -1;
            grow_end(R, m, need);
        }
    }
    return 0;
}

/* Where the reader put CPU event i (not a marker) among its rank's
 * markers bounds where it may start, for a thread other than the
 * marker's: inside a step no earlier than the step's marker now starts, in
 * a gap no earlier than the marker before it now ends (*lb, INT64_MIN for
 * no bound); its new start goes into the returned slot (mk_in or mk_gap of
 * the marker it must start before; NULL for none), which holds that marker
 * back. */
static int64_t *mk_keep(rt *R, uint32_t i, int64_t *lb)
{
    const teller_events *ev = R->ev;
    int in;
    size_t j = mk_place(R, i, &in), g = R->grp[ev->source[i]];
    uint32_t ri = R->row_of[i];
    *lb = INT64_MIN;
    if (in) {
        uint32_t m = R->mk[j];
        if (R->row_of[m] == ri)
            return NULL;
        *lb = R->ns[m];
        return &R->mk_in[j];
    }
    if (j > R->mk_first[g] && R->row_of[R->mk[j - 1]] != ri)
        *lb = mk_new_end(R, j - 1);
    return j < R->mk_first[g + 1] && R->row_of[R->mk[j]] != ri ? &R->mk_gap[j] : NULL;
}

typedef struct okey {
    int64_t  s;
    uint32_t cls; /* 0 GPU, 1 step marker, 2 other CPU: in that order on equal starts */
    uint32_t i;
} okey;

static int okey_cmp(const void *a, const void *b)
{
    const okey *x = a, *y = b;
    if (x->s != y->s) return x->s < y->s ? -1 : 1;
    if (x->cls != y->cls) return x->cls < y->cls ? -1 : 1;
    return x->i < y->i ? -1 : x->i > y->i;
}

static const teller_events *g_ev; /* for the by-end sort only */
static int byend_cmp(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    if (g_ev->source[x] != g_ev->source[y]) return g_ev->source[x] < g_ev->source[y] ? -1 : 1;
    int64_t ex = end_of(g_ev, x), ey = end_of(g_ev, y);
    if (ex != ey) return ex < ey ? -1 : 1;
    return x < y ? -1 : x > y;
}

static void rt_free(rt *R)
{
    for (size_t r = 0; r < R->nrows; r++) {
        free(R->rows[r].fixed.v);
        free(R->rows[r].fixed.sum);
        free(R->rows[r].derived.v);
        free(R->rows[r].derived.sum);
        free(R->rows[r].pending);
    }
    free(R->rows);
    free(R->row_of);
    free(R->prev_op);
    free(R->coll_of);
    free(R->ne);
    free(R->extra);
    free(R->end_extra);
    free(R->fault_d);
    free(R->done);
    free(R->waiter);
    free(R->coll_cnt);
    free(R->coll_extra);
    free(R->byend);
    free(R->pmax);
    free(R->src_first);
    free(R->src_filled);
    free(R->hops);
    free(R->hop_first);
    free(R->mk);
    free(R->grp);
    free(R->mk_first);
    free(R->mk_done);
    free(R->mk_in);
    free(R->mk_gap);
    free(R->step_old_end);
    free(R->step_new_end);
    free(R->step_first);
    free(R->step_ev);
}

static int same_row(const teller_events *ev, size_t a, size_t b)
{
    return ev->source[a] == ev->source[b] && ((ev->flags[a] ^ ev->flags[b]) & TELLER_F_GPU) == 0 &&
           ev->track[a] == ev->track[b];
}

/* The markers and GPU ops of each step (step_first, step_ev) and each
 * step's old end over every rank (step_old_end; step_new_end unknown yet). */
static int index_steps(rt *R)
{
    const teller_events *ev = R->ev;
    R->step_old_end = malloc((R->nsteps + 1) * sizeof *R->step_old_end);
    R->step_new_end = malloc((R->nsteps + 1) * sizeof *R->step_new_end);
    R->step_first = calloc((size_t)R->nsteps + 2, sizeof *R->step_first);
    if (!R->step_old_end || !R->step_new_end || !R->step_first)
        return -1;
    for (uint32_t k = 0; k < R->nsteps; k++)
        R->step_old_end[k] = R->step_new_end[k] = INT64_MIN;
    for (size_t j = 0; j < teller_store_num_steps(R->st); j++) {
        const teller_step *sp = &teller_store_steps(R->st)[j];
        if (sp->end_ns > R->step_old_end[sp->step])
            R->step_old_end[sp->step] = sp->end_ns;
    }
    for (size_t pass = 0; pass < 2; pass++) {
        for (size_t i = 0; i < R->n; i++) {
            uint32_t k = ev->step[i];
            if (k == TELLER_NONE || !(is_gpu_op(ev, (uint32_t)i) || (ev->flags[i] & TELLER_F_STEP)))
                continue;
            if (pass == 0)
                R->step_first[k + 1]++;
            else
                R->step_ev[R->step_first[k]++] = (uint32_t)i;
        }
        if (pass == 0) {
            for (uint32_t k = 0; k < R->nsteps; k++)
                R->step_first[k + 1] += R->step_first[k];
            size_t nstep_ev = R->step_first[R->nsteps];
            if (!(R->step_ev = malloc((nstep_ev ? nstep_ev : 1) * sizeof *R->step_ev)))
                return -1;
        }
    }
    /* the fill advanced each start to the next one's: shift back */
    for (uint32_t k = R->nsteps; k > 0; k--)
        R->step_first[k] = R->step_first[k - 1];
    R->step_first[0] = 0;
    return 0;
}

/* The rows (the tree build left each (source, gpu, pid, tid) row
 * contiguous), the GPU op before each event on its row, each kernel's
 * collective instance, and the calls that wait for the GPU. */
static int index_rows(rt *R)
{
    const teller_events *ev = R->ev;
    size_t n = R->n, rcap = 0;
    for (size_t i = 0; i < n; i++) {
        if (i == 0 || !same_row(ev, i - 1, i)) {
            if (TELLER_GROW(R->rows, rcap, R->nrows + 1))
                return -1;
            memset(&R->rows[R->nrows], 0, sizeof *R->rows);
            R->rows[R->nrows].first = (uint32_t)i;
            R->rows[R->nrows].gpu = (ev->flags[i] & TELLER_F_GPU) != 0;
            R->nrows++;
        }
        R->row_of[i] = (uint32_t)(R->nrows - 1);
        R->rows[R->nrows - 1].n++;
    }
    for (size_t r = 0; r < R->nrows; r++) {
        uint32_t last = TELLER_NONE;
        for (uint32_t i = R->rows[r].first; i < R->rows[r].first + R->rows[r].n; i++) {
            R->prev_op[i] = last;
            if (is_gpu_op(ev, i))
                last = i;
        }
        R->rows[r].last_op_end = R->rows[r].last_start = INT64_MIN;
    }
    for (size_t i = 0; i < n; i++)
        R->coll_of[i] = TELLER_NONE;
    const teller_collective *co = teller_store_collectives(R->st);
    const teller_coll_member *mem = teller_store_coll_members(R->st);
    for (size_t c = 0; c < teller_store_num_collectives(R->st); c++)
        for (uint32_t j = 0; j < co[c].num_members; j++)
            R->coll_of[mem[co[c].first_member + j].kernel] = (uint32_t)c;
    for (size_t i = 0; i < n; i++) {
        if (ev->flags[i] & TELLER_F_GPU)
            continue;
        if (ev->layer[i] != TELLER_LAYER_RUNTIME && ev->layer[i] != TELLER_LAYER_DRIVER)
            continue;
        if (strstr(teller_store_str(R->st, ev->name[i]), "ynchronize")) {
            R->waiter[i] = W_SYNC;
            continue;
        }
        for (uint32_t c = ev->first_child[i]; c != TELLER_NONE; c = ev->next_sibling[c])
            if (is_gpu_op(ev, c) && ev->layer[c] != TELLER_LAYER_KERNEL && end_of(ev, c) <= end_of(ev, i))
                R->waiter[i] = W_COPY;
    }
    return 0;
}

/* Per source, its GPU ops by old end (byend, with the prefix max of new
 * ends filled as the sweep needs it) and its outermost host ops by old
 * end (hops). */
static int index_by_end(rt *R)
{
    const teller_events *ev = R->ev;
    size_t n = R->n, nops = 0, nh = 0;
    for (size_t i = 0; i < n; i++)
        if (is_gpu_op(ev, (uint32_t)i)) {
            nops++;
            R->src_first[ev->source[i] + 1]++;
        }
    for (size_t s = 0; s < R->nsrc; s++)
        R->src_first[s + 1] += R->src_first[s];
    R->byend = malloc((nops ? nops : 1) * sizeof *R->byend);
    R->pmax = malloc((nops ? nops : 1) * sizeof *R->pmax);
    R->hop_first = calloc(R->nsrc + 1, sizeof *R->hop_first);
    if (!R->byend || !R->pmax || !R->hop_first)
        return -1;
    nops = 0;
    for (size_t i = 0; i < n; i++)
        if (is_gpu_op(ev, (uint32_t)i))
            R->byend[nops++] = (uint32_t)i;
    g_ev = ev;
    teller_sort(R->byend, nops, sizeof *R->byend, byend_cmp);
    for (size_t s = 0; s < R->nsrc; s++)
        R->src_filled[s] = R->src_first[s];
    for (size_t i = 0; i < n; i++)
        if (is_outer_host_op(ev, (uint32_t)i)) {
            nh++;
            R->hop_first[ev->source[i] + 1]++;
        }
    for (size_t s = 0; s < R->nsrc; s++)
        R->hop_first[s + 1] += R->hop_first[s];
    if (!(R->hops = malloc((nh ? nh : 1) * sizeof *R->hops)))
        return -1;
    nh = 0;
    for (size_t i = 0; i < n; i++)
        if (is_outer_host_op(ev, (uint32_t)i))
            R->hops[nh++] = (uint32_t)i;
    teller_sort(R->hops, nh, sizeof *R->hops, byend_cmp);
    return 0;
}

/* The step markers of each rank (its sources are one group, named by the
 * first), by start. */
static int index_markers(rt *R)
{
    const teller_events *ev = R->ev;
    const teller_step *steps = teller_store_steps(R->st);
    size_t nmk = 0;
    R->ngrp = R->nsrc;
    R->grp = malloc((R->nsrc ? R->nsrc : 1) * sizeof *R->grp);
    R->mk_first = calloc(R->nsrc + 2, sizeof *R->mk_first);
    R->mk_done = calloc(R->nsrc + 1, sizeof *R->mk_done);
    if (!R->grp || !R->mk_first || !R->mk_done)
        return -1;
    for (size_t a = 0; a < R->nsrc; a++) {
        size_t g = 0;
        while (g < a &&
               teller_store_source_c(R->st, (uint32_t)g)->rank != teller_store_source_c(R->st, (uint32_t)a)->rank)
            g++;
        R->grp[a] = (uint32_t)g;
    }
    for (size_t j = 0; j < teller_store_num_steps(R->st); j++)
        if (steps[j].marker != TELLER_NONE) {
            R->mk_first[R->grp[ev->source[steps[j].marker]] + 2]++;
            nmk++;
        }
    for (size_t g = 0; g < R->ngrp; g++)
        R->mk_first[g + 2] += R->mk_first[g + 1];
    R->mk = malloc((nmk ? nmk : 1) * sizeof *R->mk);
    R->mk_in = malloc((nmk ? nmk : 1) * sizeof *R->mk_in);
    R->mk_gap = malloc((nmk ? nmk : 1) * sizeof *R->mk_gap);
    if (!R->mk || !R->mk_in || !R->mk_gap)
        return -1;
    for (size_t j = 0; j < teller_store_num_steps(R->st); j++)
        if (steps[j].marker != TELLER_NONE)
            R->mk[R->mk_first[R->grp[ev->source[steps[j].marker]] + 1]++] = steps[j].marker;
    for (size_t g = 0; g < R->ngrp; g++) {
        R->mk_done[g] = R->mk_first[g];
        /* by start: the step table's order (step number) is nearly that already */
        for (size_t j = R->mk_first[g] + 1; j < R->mk_first[g + 1]; j++)
            for (size_t q = j; q > R->mk_first[g] && ev->start_ns[R->mk[q - 1]] > ev->start_ns[R->mk[q]]; q--) {
                uint32_t t = R->mk[q];
                R->mk[q] = R->mk[q - 1];
                R->mk[q - 1] = t;
            }
    }
    for (size_t j = 0; j < nmk; j++)
        R->mk_in[j] = R->mk_gap[j] = INT64_MIN;
    return 0;
}

/* The faults' edits, before the sweep: a GPU op's or a collective's extra
 * time, a thread's points of host time, a waiting call's own extra. */
static int add_edits(rt *R, const rt_edit *edits, size_t nedits)
{
    const teller_events *ev = R->ev;
    for (size_t k = 0; k < nedits; k++) {
        const rt_edit *E = &edits[k];
        if (E->ev >= R->n || E->d <= 0)
            continue;
        uint32_t x = E->ev;
        row *rw = &R->rows[R->row_of[x]];
        if (ev->flags[x] & TELLER_F_GPU) {
            if (E->kind != RT_STRETCH)
                continue;
            if (R->coll_of[x] != TELLER_NONE) {
                if (E->d > R->coll_extra[R->coll_of[x]])
                    R->coll_extra[R->coll_of[x]] = E->d;
            } else {
                R->extra[x] += E->d;
            }
        } else if (E->kind == RT_GAP) {
            if (pl_add(&rw->fixed, ev->start_ns[x], E->d))
                return -1;
        } else if (R->waiter[x]) {
            R->fault_d[x] += E->d;
        } else if (ev->dur_ns[x] > 0) {
            if (pl_add(&rw->fixed, end_of(ev, x), E->d))
                return -1;
            grow_end(R, x, E->d);
        }
    }
    return 0;
}

/* Where step marker i (old start s) may start: when the engine starts a
 * step once the previous one is done on every rank, that long after the
 * previous step's new end, or when its thread is free (a rank that lagged
 * catches up in its idle time); and after what other threads did in the
 * gap before it. */
static int hold_marker(rt *R, uint32_t i, int64_t s)
{
    const teller_events *ev = R->ev;
    row *rw = &R->rows[R->row_of[i]];
    uint32_t k = ev->step[i];
    if (k != TELLER_NONE && k > 0 && s >= R->step_old_end[k - 1]) {
        for (size_t r = 0; r < R->nrows; r++)
            if (!R->rows[r].gpu && settle_row(R, &R->rows[r], s))
                return -1;
        int64_t target = step_new_end(R, k - 1) + (s - R->step_old_end[k - 1]);
        int64_t free_at = thread_free_at(R, i, s);
        if (free_at > target)
            target = free_at;
        int64_t d = target - (s + shift(rw, s, 1));
        if (d != 0 && pl_add(&rw->derived, s, d))
            return -1;
    }
    int in;
    size_t j = mk_place(R, i, &in);
    int64_t d = in && R->mk[j] == i && R->mk_gap[j] != INT64_MIN ? R->mk_gap[j] + 1 - (s + shift(rw, s, 1)) : 0;
    if (d > 0 && pl_add(&rw->derived, s, d))
        return -1;
    return 0;
}

/* CPU event i (old start s, not a marker) whose thread another thread's
 * host op woke (woken_by): from i on the thread moves as far as that op's
 * end now does, or as keeps it after its own work before the wait; the
 * wait (from the op's old end w) takes up the difference, either way. */
static int follow_waker(rt *R, uint32_t i, int64_t s)
{
    uint32_t x = woken_by(R, i);
    if (x == TELLER_NONE)
        return 0;
    row *rw = &R->rows[R->row_of[i]], *rx = &R->rows[R->row_of[x]];
    int64_t w = end_of(R->ev, x);
    if (settle_row(R, rx, w))
        return -1;
    int64_t moved = shift(rx, w, 0) + R->end_extra[x], free_at = thread_free_at(R, i, w);
    if (free_at != INT64_MIN && free_at - s > moved)
        moved = free_at - s;
    int64_t d = moved - shift(rw, s, 0); /* a fault's host time right before i comes on top */
    if (d != 0 && pl_add(&rw->derived, w, d))
        return -1;
    return 0;
}

/* The sweep reaches CPU event i: what ended on its thread before it is
 * settled, then its new start follows its thread's points, the step rules
 * and the thread that woke it. */
static int sweep_cpu(rt *R, uint32_t i)
{
    const teller_events *ev = R->ev;
    int64_t s = ev->start_ns[i];
    row *rw = &R->rows[R->row_of[i]];
    int marker = (ev->flags[i] & TELLER_F_STEP) != 0;
    if (settle_row(R, rw, s) || mk_close(R, R->grp[ev->source[i]], s))
        return -1;
    if (marker ? hold_marker(R, i, s) : follow_waker(R, i, s))
        return -1;
    if (is_outer_host_op(ev, i) && end_of(ev, i) > rw->last_op_end)
        rw->last_op_end = end_of(ev, i);
    rw->last_start = s;
    int64_t lb = INT64_MIN, *slot = marker ? NULL : mk_keep(R, i, &lb);
    if (lb != INT64_MIN && lb > s + shift(rw, s, 1) && pl_add(&rw->derived, s, lb - (s + shift(rw, s, 1))))
        return -1;
    R->ns[i] = s + shift(rw, s, 1);
    if (slot && R->ns[i] > *slot)
        *slot = R->ns[i];
    R->done[i] = 1;
    if (R->waiter[i]) {
        if (TELLER_GROW(rw->pending, rw->pcap, rw->npend + 1))
            return -1;
        rw->pending[rw->npend++] = i;
    }
    return 0;
}

/* The sweep reaches GPU op i: it starts after its launch (unless it was
 * queued), after the op before it on its stream and after the op of
 * another stream it waited for; a collective's members end together once
 * all are reached. */
static void sweep_gpu(rt *R, uint32_t i)
{
    const teller_events *ev = R->ev;
    int64_t s = ev->start_ns[i], ns = s;
    uint32_t L = ev->parent[i], prev = R->prev_op[i];
    int64_t gap = prev == TELLER_NONE ? INT64_MAX : s - end_of(ev, prev);
    uint32_t x = cross_wait(R, i);
    if (L != TELLER_NONE && !(ev->flags[L] & TELLER_F_GPU) && R->done[L] && ev->start_ns[L] <= s) {
        int64_t a = s - ev->start_ns[L];
        /* after a gap on its stream it waited for its launch, unless it
         * waited for an op of another stream (an NCCL kernel behind the
         * compute that made its input, launched long before) */
        int queued = prev != TELLER_NONE && end_of(ev, L) <= end_of(ev, prev);
        int bound = (gap > GAP_BOUND_NS && x == TELLER_NONE && !queued) || a <= LAUNCH_BOUND_NS;
        if (!bound && a > LAUNCH_FLOOR_NS)
            a = LAUNCH_FLOOR_NS;
        if (R->ns[L] + a > ns)
            ns = R->ns[L] + a;
    }
    if (prev != TELLER_NONE) {
        /* the idle gap before it on its stream was its wait for the other
         * stream's op, which the bound below carries; it is not kept */
        int64_t b = need_end(R, prev) + (x != TELLER_NONE && gap > GAP_BOUND_NS ? 0 : gap);
        if (b > ns)
            ns = b;
    }
    if (x != TELLER_NONE) {
        int64_t c = need_end(R, x) + (s - end_of(ev, x));
        if (c > ns)
            ns = c;
    }
    R->ns[i] = ns;
    R->done[i] = 1;
    uint32_t c = R->coll_of[i];
    if (c != TELLER_NONE && ++R->coll_cnt[c] == teller_store_collectives(R->st)[c].num_members)
        coll_finish(R, c);
}

/* One sweep over every event in order of its old start (GPU, then step
 * markers, then other CPU events on equal starts), then what is left to
 * settle: markers' ends and waiting calls. */
static int sweep(rt *R)
{
    const teller_events *ev = R->ev;
    size_t n = R->n;
    okey *order = malloc((n ? n : 1) * sizeof *order);
    if (!order)
        return -1;
    for (size_t i = 0; i < n; i++)
        order[i] = (okey){ev->start_ns[i], (ev->flags[i] & TELLER_F_GPU) ? 0u : (ev->flags[i] & TELLER_F_STEP) ? 1u : 2u,
                          (uint32_t)i};
    teller_sort(order, n, sizeof *order, okey_cmp);
    int bad = 0;
    for (size_t q = 0; q < n && !bad; q++) {
        uint32_t i = order[q].i;
        if (!R->rows[R->row_of[i]].gpu)
            bad = sweep_cpu(R, i);
        else if (is_gpu_op(ev, i)) /* annotations and sync records on GPU rows follow afterwards */
            sweep_gpu(R, i);
    }
    free(order);
    for (size_t g = 0; g < R->ngrp && !bad; g++)
        bad = mk_close(R, g, INT64_MAX);
    for (size_t r = 0; r < R->nrows && !bad; r++)
        if (!R->rows[r].gpu)
            bad = settle_row(R, &R->rows[r], INT64_MAX);
    return bad;
}

/* The new durations, from the settled points and ends; then the other
 * records on GPU rows: a sync record follows its call, the rest the op
 * before them on their stream. */
static void ends(rt *R, int64_t *dur)
{
    const teller_events *ev = R->ev;
    int64_t *start = R->ns;
    for (size_t i = 0; i < R->n; i++) {
        const row *rw = &R->rows[R->row_of[i]];
        if (!rw->gpu) {
            int64_t e = end_of(ev, (uint32_t)i) + shift(rw, end_of(ev, (uint32_t)i), 0) + R->end_extra[i];
            dur[i] = e > start[i] ? e - start[i] : 0;
        } else if (is_gpu_op(ev, (uint32_t)i)) {
            dur[i] = need_end(R, (uint32_t)i) - start[i];
        }
    }
    for (size_t i = 0; i < R->n; i++) {
        if (!R->rows[R->row_of[i]].gpu || is_gpu_op(ev, (uint32_t)i))
            continue;
        uint32_t p = ev->parent[i], prev = R->prev_op[i];
        if (p != TELLER_NONE && !(ev->flags[p] & TELLER_F_GPU)) {
            start[i] = ev->start_ns[i] + (start[p] - ev->start_ns[p]);
            int64_t e = end_of(ev, (uint32_t)i) + (start[p] + dur[p] - end_of(ev, p));
            dur[i] = e > start[i] ? e - start[i] : 0;
        } else {
            int64_t d = prev == TELLER_NONE ? 0 : start[prev] + dur[prev] - end_of(ev, prev);
            start[i] = ev->start_ns[i] + d;
            dur[i] = ev->dur_ns[i];
        }
    }
}

teller_status rt_apply(const teller_store *st, const rt_edit *edits, size_t nedits, int64_t *start, int64_t *dur,
                       teller_error *err)
{
    const teller_events *ev = teller_store_events(st);
    size_t n = ev->n, nc = teller_store_num_collectives(st);
    rt R;
    memset(&R, 0, sizeof R);
    R.st = st;
    R.ev = ev;
    R.n = n;
    R.ns = start;
    R.nsrc = teller_store_num_sources(st);
    R.nsteps = teller_store_step_count(st);
    size_t nn = n ? n : 1;
    R.row_of = malloc(nn * sizeof *R.row_of);
    R.prev_op = malloc(nn * sizeof *R.prev_op);
    R.coll_of = malloc(nn * sizeof *R.coll_of);
    R.ne = calloc(nn, sizeof *R.ne);
    R.extra = calloc(nn, sizeof *R.extra);
    R.end_extra = calloc(nn, sizeof *R.end_extra);
    R.fault_d = calloc(nn, sizeof *R.fault_d);
    R.done = calloc(nn, 1);
    R.waiter = calloc(nn, 1);
    R.coll_cnt = calloc(nc ? nc : 1, sizeof *R.coll_cnt);
    R.coll_extra = calloc(nc ? nc : 1, sizeof *R.coll_extra);
    R.src_first = calloc(R.nsrc + 1, sizeof *R.src_first);
    R.src_filled = calloc(R.nsrc + 1, sizeof *R.src_filled);
    int bad = !R.row_of || !R.prev_op || !R.coll_of || !R.ne || !R.extra || !R.end_extra || !R.fault_d || !R.done ||
              !R.waiter || !R.coll_cnt || !R.coll_extra || !R.src_first || !R.src_filled;
    bad = bad || index_steps(&R) || index_rows(&R) || index_by_end(&R) || index_markers(&R) ||
          add_edits(&R, edits, nedits) || sweep(&R);
    if (!bad)
        ends(&R, dur);
    rt_free(&R);
    return bad ? teller_error_set(err, TELLER_ERR_NOMEM, "(trace)", 0, "out of memory") : TELLER_OK;
}
