/*
 * perturb.c - `teller perturb`: faults injected into a real run (perturb.h).
 *
 * For each step, with probability rate, one fault kind the step can carry
 * is drawn and turned into edits of the trace's times (retime.h): which
 * events grow, by how much, where host time is lost. All edits of the run
 * are applied in one rewrite, the case is written (kwrite.c), and the
 * truth records, per step, what was injected and how much longer the step
 * became in the rewritten trace. The physics of each kind and its limits
 * are in docs/PERTURB.md.
 */
#define _GNU_SOURCE /* memmem */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "teller/logs.h"
#include "teller/perturb.h"
#include "teller/tree.h"
#include "retime.h"
#include "../util/fsutil.h"
#include "../util/rng.h"
#include "../util/textout.h"
#include "../util/vec.h"

typedef struct root {
    int32_t     rank;
    uint32_t    ev;    /* the root event; its new duration is root_ns */
    const char *op;
    const char *layer;
    int32_t     node;  /* slow_link: the degraded node */
} root;

typedef struct pctx {
    const teller_store        *st;
    const teller_events       *ev;
    const teller_perturb_opts *o;
    rng                        r;
    uint32_t                   nsteps;
    uint32_t                  *sfirst, *sev; /* events of step k: sev[sfirst[k] .. sfirst[k+1]) */
    rt_edit                   *ed;
    size_t                     ned, edcap;
    uint32_t                  *cand; /* scratch */
    size_t                     ccap;
    int                        oom;  /* an allocation failed while gathering candidates */
    uint32_t                  *coll;  /* per event: its collective instance, or TELLER_NONE */
    const char                *engine;   /* "vllm", "sglang", "pytorch", "unknown" */
    uint32_t                   hang_step;   /* the step of an nccl_hang (the run ends there), or TELLER_NONE */
    uint32_t                   hang_kernel; /* the collective kernel the hung rank never launched */
    int32_t                    lead_node; /* the node of the lowest rank, where the scheduler runs */
    const char                *sched_log; /* that node's log (--log), or NULL */
    uint32_t                  *prefills;  /* per step k: the steps up to k whose annotations say they
                                           * prefill (write_case, for the logs), NULL before */
} pctx;

static int rank_of(const pctx *P, uint32_t i) { return teller_store_source_c(P->st, P->ev->source[i])->rank; }
static int node_of(const pctx *P, uint32_t i) { return teller_store_source_c(P->st, P->ev->source[i])->node; }
static const char *name_of(const pctx *P, uint32_t i) { return teller_store_str(P->st, P->ev->name[i]); }

/* The kind's size from the fault table (fault.h), drawn and scaled by the
 * severity as the simulator draws it: a slowdown factor, or added ns. */
static double draw_factor(pctx *P, teller_fault f)
{
    const teller_fault_def *d = teller_fault_def_of(f);
    return 1.0 + uni_in(&P->r, d->slow.lo, d->slow.hi) * P->o->severity;
}

static double draw_ns(pctx *P, teller_fault f)
{
    const teller_fault_def *d = teller_fault_def_of(f);
    return uni_in(&P->r, d->add_ns.lo, d->add_ns.hi) * P->o->severity;
}

static int edit(pctx *P, uint32_t e, uint8_t kind, int64_t d)
{
    if (d <= 0)
        return 0;
    if (TELLER_GROW(P->ed, P->edcap, P->ned + 1))
        return -1;
    P->ed[P->ned++] = (rt_edit){e, kind, d};
    return 0;
}

/* ---- what each kind can act on ---- */

static int q_kernel(const pctx *P, uint32_t i)
{
    const teller_events *ev = P->ev;
    return ev->layer[i] == TELLER_LAYER_KERNEL && (ev->flags[i] & TELLER_F_GPU) && !(ev->flags[i] & TELLER_F_COMM) &&
           ev->dur_ns[i] > 0;
}

static int is_api(const teller_events *ev, uint32_t i)
{
    return !(ev->flags[i] & TELLER_F_GPU) &&
           (ev->layer[i] == TELLER_LAYER_RUNTIME || ev->layer[i] == TELLER_LAYER_DRIVER);
}

static int q_launch(const pctx *P, uint32_t i)
{
    const teller_events *ev = P->ev;
    if (!is_api(ev, i) || ev->dur_ns[i] <= 0)
        return 0;
    for (uint32_t c = ev->first_child[i]; c != TELLER_NONE; c = ev->next_sibling[c])
        if (ev->layer[c] == TELLER_LAYER_KERNEL)
            return 1;
    return 0;
}

static int q_sync(const pctx *P, uint32_t i)
{
    return is_api(P->ev, i) && P->ev->dur_ns[i] > 0 && strstr(name_of(P, i), "ynchronize") != NULL;
}

static int q_malloc(const pctx *P, uint32_t i)
{
    const char *n = name_of(P, i);
    return is_api(P->ev, i) && P->ev->dur_ns[i] > 0 &&
           (strstr(n, "Malloc") || strstr(n, "MemAlloc") || strstr(n, "Free"));
}

static int q_host_op(const pctx *P, uint32_t i)
{
    const teller_events *ev = P->ev;
    if ((ev->flags[i] & (TELLER_F_GPU | TELLER_F_STEP)) || ev->layer[i] != TELLER_LAYER_BACKEND)
        return 0;
    uint32_t p = ev->parent[i];
    return p == TELLER_NONE || ev->layer[p] != TELLER_LAYER_BACKEND; /* outermost torch ops, not a step marker */
}

static int q_copy(const pctx *P, uint32_t i)
{
    const char *n = name_of(P, i);
    return P->ev->layer[i] == TELLER_LAYER_MEMCPY && P->ev->dur_ns[i] > 0 &&
           (strstr(n, "HtoD") || strstr(n, "DtoH") || strstr(n, "Host") || strstr(n, "H2D") || strstr(n, "D2H"));
}

/* The collective instance of a COMM kernel, or TELLER_NONE. */
static uint32_t coll_of(const pctx *P, uint32_t k) { return P->coll[k]; }

static int coll_crosses(const pctx *P, uint32_t c)
{
    const teller_collective *co = &teller_store_collectives(P->st)[c];
    const teller_coll_member *mem = teller_store_coll_members(P->st) + co->first_member;
    for (uint32_t j = 1; j < co->num_members; j++)
        if (node_of(P, mem[j].kernel) != node_of(P, mem[0].kernel))
            return 1;
    return 0;
}

static int q_cross_coll(const pctx *P, uint32_t i)
{
    if (P->ev->layer[i] != TELLER_LAYER_KERNEL || !(P->ev->flags[i] & TELLER_F_COMM))
        return 0;
    uint32_t c = coll_of(P, i);
    return c != TELLER_NONE && teller_store_collectives(P->st)[c].num_members > 1 && coll_crosses(P, c);
}

static int q_p2p(const pctx *P, uint32_t i)
{
    if (P->ev->layer[i] != TELLER_LAYER_KERNEL || !(P->ev->flags[i] & TELLER_F_COMM))
        return 0;
    const char *n = name_of(P, i);
    if (!strstr(n, "Send") && !strstr(n, "Recv"))
        return 0;
    uint32_t c = coll_of(P, i);
    return c != TELLER_NONE && teller_store_collectives(P->st)[c].num_members > 1;
}

/* Gathers the events of step k that pass q (on rank r, or any when r < 0). */
static size_t gather(pctx *P, uint32_t k, int (*q)(const pctx *, uint32_t), int r)
{
    size_t n = 0;
    for (uint32_t j = P->sfirst[k]; j < P->sfirst[k + 1]; j++) {
        uint32_t i = P->sev[j];
        if ((r < 0 || rank_of(P, i) == r) && q(P, i)) {
            if (TELLER_GROW(P->cand, P->ccap, n + 1)) {
                P->oom = 1; /* teller_perturb fails with out of memory */
                return 0;
            }
            P->cand[n++] = i;
        }
    }
    return n;
}

/* A rank drawn among those with a candidate; gathers that rank's. */
static size_t gather_rank(pctx *P, uint32_t k, int (*q)(const pctx *, uint32_t))
{
    size_t n = gather(P, k, q, -1);
    if (!n)
        return 0;
    return gather(P, k, q, rank_of(P, P->cand[uni_int(&P->r, (int)n)]));
}

static uint32_t longest(const pctx *P, const uint32_t *v, size_t n, const int64_t *extra)
{
    uint32_t best = v[0];
    int64_t bd = -1;
    for (size_t j = 0; j < n; j++) {
        int64_t d = P->ev->dur_ns[v[j]] + (extra ? extra[j] : 0);
        if (d > bd) {
            bd = d;
            best = v[j];
        }
    }
    return best;
}

/* The root among the n events v, of which event j gained w[j] ns (w NULL:
 * all slowed by one factor, so each gained in proportion to its duration):
 * the longest instance (duration plus gain) of the name whose events gained
 * the most in all, which is where the step lost its time. */
static uint32_t heaviest(const pctx *P, const uint32_t *v, size_t n, const int64_t *w)
{
    uint32_t best = v[0];
    int64_t best_t = -1, best_d = -1;
    for (size_t j = 0; j < n; j++) {
        int64_t t = 0, d = P->ev->dur_ns[v[j]] + (w ? w[j] : 0);
        for (size_t q = 0; q < n; q++)
            if (P->ev->name[v[q]] == P->ev->name[v[j]])
                t += w ? w[q] : P->ev->dur_ns[v[q]];
        if (t > best_t || (t == best_t && d > best_d)) {
            best_t = t;
            best_d = d;
            best = v[j];
        }
    }
    return best;
}

/* Stretches each of the n events v by the slowdown factor f: its duration
 * times f - 1 is added. -1 when out of memory. */
static int stretch_all(pctx *P, const uint32_t *v, size_t n, double f)
{
    for (size_t j = 0; j < n; j++)
        if (edit(P, v[j], RT_STRETCH, (int64_t)((double)P->ev->dur_ns[v[j]] * (f - 1))))
            return -1;
    return 0;
}

/* ---- the kinds: each checks (apply 0) or injects (apply 1) ---- */

typedef int (*injector)(pctx *P, uint32_t k, int apply, root *rt);

static int set_root(pctx *P, root *rt, uint32_t e)
{
    rt->ev = e;
    rt->rank = rank_of(P, e);
    rt->node = node_of(P, e);
    rt->op = name_of(P, e);
    rt->layer = teller_layer_tag((teller_layer)P->ev->layer[e]);
    return 1;
}

static int inj_kernel_regression(pctx *P, uint32_t k, int apply, root *rt)
{
    if (!apply)
        return gather(P, k, q_kernel, -1) > 0;
    size_t n = gather_rank(P, k, q_kernel);
    if (!n)
        return 0; /* out of memory (P->oom) */
    /* the kernel under a random point of the rank's kernel time: big kernels regress visibly */
    int64_t total = 0;
    for (size_t j = 0; j < n; j++)
        total += P->ev->dur_ns[P->cand[j]];
    int64_t at = (int64_t)(uni(&P->r) * (double)total);
    uint32_t pick = P->cand[n - 1];
    for (size_t j = 0; j < n; j++) {
        at -= P->ev->dur_ns[P->cand[j]];
        if (at < 0) {
            pick = P->cand[j];
            break;
        }
    }
    double f = draw_factor(P, TELLER_FAULT_KERNEL_REGRESSION);
    /* every instance of the picked kernel's name regresses; the root is the
     * longest of them, the picked one among equals */
    uint32_t name = P->ev->name[pick], best = pick;
    size_t m = 0;
    for (size_t j = 0; j < n; j++)
        if (P->ev->name[P->cand[j]] == name)
            P->cand[m++] = P->cand[j];
    if (stretch_all(P, P->cand, m, f))
        return -1;
    for (size_t j = 0; j < m; j++)
        if (P->ev->dur_ns[P->cand[j]] > P->ev->dur_ns[best])
            best = P->cand[j];
    return set_root(P, rt, best);
}

static int inj_gpu_throttle(pctx *P, uint32_t k, int apply, root *rt)
{
    if (!apply)
        return gather(P, k, q_kernel, -1) > 0;
    size_t n = gather_rank(P, k, q_kernel);
    if (!n)
        return 0; /* out of memory (P->oom) */
    if (stretch_all(P, P->cand, n, draw_factor(P, TELLER_FAULT_GPU_THROTTLE)))
        return -1;
    /* the root: the longest instance of the kernel name with the most time */
    return set_root(P, rt, heaviest(P, P->cand, n, NULL));
}

/* Every event of one rank in step k that passes q lasts a drawn time
 * longer (jittered per event by the row's jitter). The root: the slowest
 * call, or with by_name the slowest call of the name that gained the most
 * in all. */
static int inj_stretch_each(pctx *P, uint32_t k, int apply, root *rt, int (*q)(const pctx *, uint32_t),
                            teller_fault kind, int by_name)
{
    if (!apply)
        return gather(P, k, q, -1) > 0;
    size_t n = gather_rank(P, k, q);
    if (!n)
        return 0; /* out of memory (P->oom) */
    double base = draw_ns(P, kind), jitter = teller_fault_def_of(kind)->jitter;
    int64_t *extra = malloc(n * sizeof *extra);
    if (!extra)
        return -1;
    for (size_t j = 0; j < n; j++) {
        extra[j] = (int64_t)(base * (jitter > 0 ? jit(&P->r, jitter) : 1.0));
        if (edit(P, P->cand[j], RT_STRETCH, extra[j])) {
            free(extra);
            return -1;
        }
    }
    uint32_t best = by_name ? heaviest(P, P->cand, n, extra) : longest(P, P->cand, n, extra);
    free(extra);
    return set_root(P, rt, best);
}

static int inj_launch_latency(pctx *P, uint32_t k, int apply, root *rt)
{
    /* the root names the launch API that cost the most (a vLLM step makes more
     * cudaLaunchKernel calls than cuLaunchKernelEx ones), not the one call
     * that the jitter happened to make slowest */
    return inj_stretch_each(P, k, apply, rt, q_launch, TELLER_FAULT_LAUNCH_LATENCY, 1);
}

static int inj_malloc_storm(pctx *P, uint32_t k, int apply, root *rt)
{
    return inj_stretch_each(P, k, apply, rt, q_malloc, TELLER_FAULT_MALLOC_STORM, 0);
}

static int inj_sync_stall(pctx *P, uint32_t k, int apply, root *rt)
{
    if (!apply)
        return gather(P, k, q_sync, -1) > 0;
    size_t n = gather_rank(P, k, q_sync);
    if (!n)
        return 0; /* out of memory (P->oom) */
    uint32_t e = P->cand[uni_int(&P->r, (int)n)];
    if (edit(P, e, RT_STRETCH, (int64_t)draw_ns(P, TELLER_FAULT_SYNC_STALL)))
        return -1;
    return set_root(P, rt, e);
}

static int inj_cpu_contention(pctx *P, uint32_t k, int apply, root *rt)
{
    if (!apply)
        return gather(P, k, q_host_op, -1) > 0;
    size_t n = gather_rank(P, k, q_host_op);
    if (!n)
        return 0; /* out of memory (P->oom) */
    const teller_fault_def *d = teller_fault_def_of(TELLER_FAULT_CPU_CONTENTION);
    int gaps = 1 + uni_int(&P->r, d->perturb.gaps);
    double size = draw_ns(P, TELLER_FAULT_CPU_CONTENTION);
    int64_t best_gap = -1;
    uint32_t best = P->cand[0];
    for (int g = 0; g < gaps; g++) {
        uint32_t e = P->cand[uni_int(&P->r, (int)n)];
        int64_t gap = (int64_t)(uni_in(&P->r, d->share.lo, d->share.hi) * size); /* a share, as the simulator's */
        if (edit(P, e, RT_GAP, gap))
            return -1;
        if (gap > best_gap) {
            best_gap = gap;
            best = e;
        }
    }
    return set_root(P, rt, best);
}

static int inj_pcie(pctx *P, uint32_t k, int apply, root *rt)
{
    if (!apply)
        return gather(P, k, q_copy, -1) > 0;
    size_t n = gather_rank(P, k, q_copy);
    if (!n)
        return 0; /* out of memory (P->oom) */
    if (stretch_all(P, P->cand, n, draw_factor(P, TELLER_FAULT_PCIE_DEGRADATION)))
        return -1;
    /* the root: the copy name (a direction and memory kind) that lost the
     * most time, as for a throttled GPU */
    return set_root(P, rt, heaviest(P, P->cand, n, NULL));
}

/* The transfer part of a collective: from the last arrival to the end. */
static int64_t coll_transfer(const pctx *P, uint32_t c)
{
    const teller_collective *co = &teller_store_collectives(P->st)[c];
    const teller_coll_member *mem = teller_store_coll_members(P->st) + co->first_member;
    int64_t last = INT64_MIN, end = INT64_MIN;
    for (uint32_t j = 0; j < co->num_members; j++) {
        uint32_t e = mem[j].kernel;
        if (P->ev->start_ns[e] > last) last = P->ev->start_ns[e];
        if (P->ev->start_ns[e] + P->ev->dur_ns[e] > end) end = P->ev->start_ns[e] + P->ev->dur_ns[e];
    }
    return end > last ? end - last : 0;
}

static int inj_slow_link(pctx *P, uint32_t k, int apply, root *rt)
{
    size_t n = gather(P, k, q_cross_coll, -1);
    if (!apply || !n)
        return n > 0;
    /* a link between two nodes slows both ends alike: the degraded node is
     * drawn among the crossing kernels' nodes other than the first, as the
     * simulator draws it (node 1.. of the run), so both name it the same way */
    int lowest = INT32_MAX, node;
    for (size_t j = 0; j < n; j++)
        if (node_of(P, P->cand[j]) < lowest)
            lowest = node_of(P, P->cand[j]);
    size_t others = 0;
    for (size_t j = 0; j < n; j++)
        others += node_of(P, P->cand[j]) != lowest;
    size_t pick = (size_t)uni_int(&P->r, (int)others);
    node = lowest;
    for (size_t j = 0; j < n; j++)
        if (node_of(P, P->cand[j]) != lowest && pick-- == 0) {
            node = node_of(P, P->cand[j]);
            break;
        }
    double f = draw_factor(P, TELLER_FAULT_SLOW_LINK);
    int64_t extra = (int64_t)draw_ns(P, TELLER_FAULT_SLOW_LINK);
    uint32_t first = TELLER_NONE;
    for (size_t j = 0; j < n; j++) {
        uint32_t e = P->cand[j], c = coll_of(P, e);
        const teller_collective *co = &teller_store_collectives(P->st)[c];
        const teller_coll_member *mem = teller_store_coll_members(P->st) + co->first_member;
        int on = 0;
        uint32_t mine = TELLER_NONE;
        for (uint32_t q = 0; q < co->num_members; q++)
            if (node_of(P, mem[q].kernel) == node) {
                on = 1;
                if (mine == TELLER_NONE || rank_of(P, mem[q].kernel) < rank_of(P, mine))
                    mine = mem[q].kernel;
            }
        if (!on || mem[0].kernel != e) /* once per instance, through its first member */
            continue;
        if (edit(P, e, RT_STRETCH, (int64_t)((double)coll_transfer(P, c) * (f - 1)) + extra))
            return -1;
        /* the root: the node's lowest rank in a slowed transfer (the simulator's
         * "first rank of the node"), at its first slowed kernel */
        if (first == TELLER_NONE || rank_of(P, mine) < rank_of(P, first) ||
            (rank_of(P, mine) == rank_of(P, first) && P->ev->start_ns[mine] < P->ev->start_ns[first]))
            first = mine;
    }
    if (first == TELLER_NONE)
        return 0;
    set_root(P, rt, first);
    rt->node = node;
    return 1;
}

static int inj_pp_send_delay(pctx *P, uint32_t k, int apply, root *rt)
{
    size_t n = gather(P, k, q_p2p, -1);
    if (!apply || !n)
        return n > 0;
    uint32_t e = P->cand[uni_int(&P->r, (int)n)], c = coll_of(P, e);
    const teller_collective *co = &teller_store_collectives(P->st)[c];
    const teller_coll_member *mem = teller_store_coll_members(P->st) + co->first_member;
    uint32_t sender = mem[0].kernel; /* the lowest rank: the earlier stage */
    for (uint32_t q = 1; q < co->num_members; q++)
        if (rank_of(P, mem[q].kernel) < rank_of(P, sender))
            sender = mem[q].kernel;
    if (edit(P, sender, RT_STRETCH, (int64_t)draw_ns(P, TELLER_FAULT_PP_SEND_DELAY)))
        return -1;
    return set_root(P, rt, sender);
}

/* A collective kernel of an instance with two or more members. */
static int q_coll(const pctx *P, uint32_t i)
{
    if (P->ev->layer[i] != TELLER_LAYER_KERNEL || !(P->ev->flags[i] & TELLER_F_COMM))
        return 0;
    uint32_t c = coll_of(P, i);
    return c != TELLER_NONE && teller_store_collectives(P->st)[c].num_members > 1;
}

/* One rank never launches a collective: the others wait in it until the
 * watchdog fires and the run ends. The edit makes the instance 10 min
 * longer for its members; teller_perturb then leaves out what never
 * happened (the hung rank from that launch on, every rank after the step)
 * and writes the watchdog's lines. */
static int inj_nccl_hang(pctx *P, uint32_t k, int apply, root *rt)
{
    size_t n = gather(P, k, q_coll, -1);
    if (!apply || !n)
        return n > 0;
    uint32_t c = coll_of(P, P->cand[uni_int(&P->r, (int)n)]);
    const teller_collective *co = &teller_store_collectives(P->st)[c];
    uint32_t h = teller_store_coll_members(P->st)[co->first_member + (uint32_t)uni_int(&P->r, (int)co->num_members)].kernel;
    if (edit(P, h, RT_STRETCH, TELLER_FAULT_WATCHDOG_NS))
        return -1;
    P->hang_step = k;
    P->hang_kernel = h;
    return set_root(P, rt, h);
}

/* The step annotation of step k on the lowest rank that has one. */
static uint32_t lead_marker(const pctx *P, uint32_t k)
{
    const teller_step *steps = teller_store_steps(P->st);
    for (size_t j = 0; j < teller_store_num_steps(P->st); j++)
        if (steps[j].step == k && steps[j].marker != TELLER_NONE)
            return steps[j].marker; /* the table is ordered by (step, rank) */
    return TELLER_NONE;
}

/* The compute-kernel time of step k on rank r. */
static int64_t kernel_ns(const pctx *P, uint32_t k, int r)
{
    int64_t t = 0;
    for (uint32_t j = P->sfirst[k]; j < P->sfirst[k + 1]; j++) {
        uint32_t i = P->sev[j];
        if (rank_of(P, i) == r && q_kernel(P, i))
            t += P->ev->dur_ns[i];
    }
    return t;
}

/* The scheduler preempted sequences and recomputes them in this step: a
 * prefill of their prompts and of the tokens they had generated, on every
 * rank, and the engine's warning in the scheduler node's log (written
 * after the rewrite, preemption_lines). A recomputation fills much of the
 * step's token budget, as the run's largest prefill did: the simulator
 * recomputes 1.5-4 k tokens against its 4 k budget. Perturb cannot add
 * tokens, so the step's compute kernels on each rank grow together by that
 * share (the row's perturb.grow, times the severity) of the most compute
 * time a step of the run spent on the rank. (Stretching the step's own
 * kernels alone would leave a decode step lighter than the prefills around
 * it: a recomputation no engine does.) */
static int inj_preemption(pctx *P, uint32_t k, int apply, root *rt)
{
    int serving = !strcmp(P->engine, "vllm") || !strcmp(P->engine, "sglang");
    if (!serving || !P->sched_log || lead_marker(P, k) == TELLER_NONE)
        return 0;
    size_t n = gather(P, k, q_kernel, -1);
    if (!apply || !n)
        return n > 0;
    const teller_fault_range *grow = &teller_fault_def_of(TELLER_FAULT_PREEMPTION)->perturb.grow;
    double share = uni_in(&P->r, grow->lo, grow->hi) * P->o->severity;
    for (size_t src = 0; src < teller_store_num_sources(P->st); src++) {
        int r = teller_store_source_c(P->st, (uint32_t)src)->rank;
        int64_t own = kernel_ns(P, k, r), most = 0;
        for (uint32_t j = 0; j < P->nsteps; j++) {
            int64_t t = kernel_ns(P, j, r);
            most = t > most ? t : most;
        }
        n = gather(P, k, q_kernel, r);
        if (n && own > 0 && stretch_all(P, P->cand, n, 1.0 + share * (double)most / (double)own))
            return -1; /* (kernels that took no time have no share to grow) */
    }
    return set_root(P, rt, lead_marker(P, k));
}

/* ---- the case ---- */

static void note(teller_perturb_result *res, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note(teller_perturb_result *res, const char *fmt, ...)
{
    if (res->nnotes >= TELLER_PERTURB_MAX_NOTES)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(res->notes[res->nnotes++], sizeof res->notes[0], fmt, ap);
    va_end(ap);
}

/* Per step k, as teller's reader and diagnosis measure it in the times
 * start and dur of the events keep keeps (all: NULL): its duration len[k],
 * the most it added to a rank's run (a rank's window runs from the step
 * marker's start to the end of the marker or of the step's GPU work on
 * that rank, a step without a marker spanning its rank's host events of
 * the step; it adds from the later of its start and the end of the rank's
 * window before), and end[k], the latest end of a rank's window. -1 when
 * out of memory. */
static int windows(const teller_store *st, const int64_t *start, const int64_t *dur, const uint8_t *keep,
                   int64_t *len, int64_t *end, uint32_t nsteps)
{
    const teller_events *ev = teller_store_events(st);
    const teller_step *steps = teller_store_steps(st);
    size_t nrows = teller_store_num_steps(st);
    int64_t *w = malloc(2 * (nrows ? nrows : 1) * sizeof *w); /* per row of the step table: start, end */
    if (!w)
        return -1;
    for (size_t j = 0; j < nrows; j++) {
        uint32_t m = steps[j].marker, k = steps[j].step;
        int64_t s = INT64_MAX, e = INT64_MIN;
        if (m != TELLER_NONE && (!keep || keep[m])) {
            s = start[m];
            e = start[m] + dur[m];
        }
        for (uint32_t q = 0; m == TELLER_NONE && q < teller_store_num_sources(st); q++) {
            /* a step without a marker (a rank's only step, or the one it
             * was taken down in) spans its rank's host events of the step,
             * as the reader cuts it */
            const teller_source *so = teller_store_source_c(st, q);
            for (size_t i = so->first_event; so->rank == steps[j].rank && i < so->first_event + so->num_events; i++)
                if (!(ev->flags[i] & TELLER_F_GPU) && ev->layer[i] != TELLER_LAYER_OTHER && ev->step[i] == k &&
                    (!keep || keep[i])) {
                    if (start[i] < s) s = start[i];
                    if (start[i] + dur[i] > e) e = start[i] + dur[i];
                }
        }
        w[2 * j] = s;
        w[2 * j + 1] = e;
    }
    for (size_t i = 0; i < ev->n; i++) {
        uint32_t k = ev->step[i];
        if (!(ev->flags[i] & TELLER_F_GPU) || k == TELLER_NONE || (keep && !keep[i]))
            continue;
        /* the row of (k, rank): the step table is sorted by step, then rank */
        int32_t r = teller_store_event_rank(st, (uint32_t)i);
        size_t lo = 0, hi = nrows;
        while (lo < hi) {
            size_t mid = (lo + hi) / 2;
            if (steps[mid].step < k || (steps[mid].step == k && steps[mid].rank < r))
                lo = mid + 1;
            else
                hi = mid;
        }
        if (lo < nrows && steps[lo].step == k && steps[lo].rank == r && start[i] + dur[i] > w[2 * lo + 1])
            w[2 * lo + 1] = start[i] + dur[i];
    }
    for (uint32_t k = 0; k < nsteps; k++) {
        len[k] = 0;
        end[k] = INT64_MIN;
    }
    /* what a step added to its rank's run: from the later of its window's
     * start and the end of the rank's window of the step before (a host
     * that runs ahead queues a step's GPU work behind the last step's), as
     * the diagnosis measures it; per source, its last window's end */
    size_t ns = teller_store_num_sources(st);
    int64_t *prev = malloc((ns ? ns : 1) * sizeof *prev);
    if (!prev) {
        free(w);
        return -1;
    }
    for (size_t q = 0; q < ns; q++)
        prev[q] = INT64_MIN;
    for (size_t j = 0; j < nrows; j++) {
        uint32_t k = steps[j].step;
        if (w[2 * j] > w[2 * j + 1])
            continue; /* a rank that kept nothing of the step */
        int32_t q = teller_store_source_of_rank(st, steps[j].rank);
        int64_t from = w[2 * j];
        if (q >= 0) {
            if (prev[q] > from)
                from = prev[q] < w[2 * j + 1] ? prev[q] : w[2 * j + 1];
            prev[q] = w[2 * j + 1];
        }
        if (k >= nsteps)
            continue;
        if (w[2 * j + 1] - from > len[k]) len[k] = w[2 * j + 1] - from;
        if (w[2 * j + 1] > end[k]) end[k] = w[2 * j + 1];
    }
    free(prev);
    free(w);
    return 0;
}

static int64_t node_offset_of(const teller_store *st, int32_t node)
{
    const teller_node *nd = teller_store_nodes(st);
    for (size_t k = 0; k < teller_store_num_nodes(st); k++)
        if (nd[k].node == node)
            return nd[k].offset_ns;
    return 0;
}

/* Whether the run's Python frames are SGLang's (sglang/srt/...). */
static int sglang_frames(const teller_store *st)
{
    const teller_events *ev = teller_store_events(st);
    for (size_t i = 0; i < ev->n; i++)
        if (ev->layer[i] == TELLER_LAYER_FRONTEND && strstr(teller_store_str(st, ev->name[i]), "sglang/srt/"))
            return 1;
    return 0;
}

static const char *engine_of(const teller_store *st)
{
    for (size_t j = 0; j < teller_store_num_steps(st); j++) {
        uint32_t a = teller_store_step_annotation(st, j);
        if (a == TELLER_NONE)
            continue;
        const char *n = teller_store_str(st, a);
        if (!strncmp(n, "execute_", 8)) /* a model runner's step: vLLM's, or SGLang's traced the same way */
            return sglang_frames(st) ? "sglang" : "vllm";
        if (!strncmp(n, "step[", 5))
            return "sglang";
        if (!strncmp(n, "ProfilerStep", 12))
            return "pytorch";
    }
    return "unknown";
}

/* The duration of step k in the run with every edit but P->ed[a .. b)
 * (a fault's own), into *dur_k. */
static teller_status without_edits(const pctx *P, size_t a, size_t b, const uint8_t *keep, uint32_t k, int64_t *dur_k,
                                   teller_error *err)
{
    const teller_store *st = P->st;
    size_t n = teller_store_events(st)->n, ne = P->ned - (b - a);
    rt_edit *ed = malloc((ne ? ne : 1) * sizeof *ed);
    int64_t *start = malloc((n ? n : 1) * sizeof *start), *dur = malloc((n ? n : 1) * sizeof *dur);
    int64_t *len = malloc(2 * ((size_t)P->nsteps + 1) * sizeof *len);
    teller_status rc = TELLER_OK;
    if (!ed || !start || !dur || !len) {
        rc = teller_error_set(err, TELLER_ERR_NOMEM, "(perturb)", 0, "out of memory");
        goto done;
    }
    memcpy(ed, P->ed, a * sizeof *ed);
    memcpy(ed + a, P->ed + b, (P->ned - b) * sizeof *ed);
    if ((rc = rt_apply(st, ed, ne, start, dur, err)) != TELLER_OK)
        goto done;
    if (windows(st, start, dur, keep, len, len + P->nsteps, P->nsteps)) {
        rc = teller_error_set(err, TELLER_ERR_NOMEM, "(perturb)", 0, "out of memory");
        goto done;
    }
    *dur_k = len[k];
done:
    free(ed);
    free(start);
    free(dur);
    free(len);
    return rc;
}

typedef struct tstep {
    teller_fault f;        /* the fault drawn for this step, TELLER_FAULT_NONE: none */
    root         rt;
    size_t       ed0, ed1; /* its fault's edits: P.ed[ed0 .. ed1) */
    int64_t      own;      /* ns the step lost to its own fault */
    int64_t      excess;   /* ns the step grew by in the written trace (its expected time: its duration in
                            * the run given) */
    int64_t      carried;  /* >= 0: the faulty step whose effect changed this one more than its own fault
                            * did (when abnormal, that step's fault and root are the label); -1 none */
    int          abnormal;
} tstep;

/* The truth of the first nsteps steps, whose durations in the written
 * trace are len[]; dur[] the events' new durations. */
static teller_status write_truth(const pctx *P, const char *dir, const tstep *ts, uint32_t nsteps, const int64_t *len,
                                 const int64_t *dur, teller_error *err)
{
    const teller_store *st = P->st;
    char path[4096];
    snprintf(path, sizeof path, "%s/truth.json", dir);
    FILE *f = fopen(path, "w");
    if (!f)
        return teller_error_set(err, TELLER_ERR_IO, path, 0, "cannot write");
    int nodes = 0, nranks = (int)teller_store_num_sources(st);
    for (size_t s = 0; s < teller_store_num_sources(st); s++)
        if (teller_store_source_c(st, (uint32_t)s)->node + 1 > nodes)
            nodes = teller_store_source_c(st, (uint32_t)s)->node + 1;
    fprintf(f, "{\"version\": 1,\n \"workload\": {\"engine\": \"%s\", \"model\": \"unknown\", \"nodes\": %d, "
               "\"ranks\": %d, \"seed\": %llu, \"perturbed\": true, \"rate\": %.4f, \"severity\": %.4f, \"inputs\": [",
            engine_of(st), nodes, nranks, (unsigned long long)P->o->seed, P->o->rate, P->o->severity);
    for (size_t s = 0; s < teller_store_num_sources(st); s++) {
        fputs(s ? ", " : "", f);
        teller_json_put(f, teller_store_str(st, teller_store_source_c(st, (uint32_t)s)->path));
    }
    fprintf(f, "]},\n \"clock_offsets_ns\": [");
    const teller_node *nd = teller_store_nodes(st);
    for (size_t n = 0; n < teller_store_num_nodes(st); n++)
        fprintf(f, "%s%lld", n ? ", " : "", (long long)nd[n].offset_ns);
    fprintf(f, "],\n \"steps\": [");
    for (uint32_t k = 0; k < nsteps; k++) {
        const tstep *t = &ts[k], *src = t->carried >= 0 ? &ts[t->carried] : t; /* the label's fault and root */
        int64_t nd_ = len[k];
        fprintf(f, "%s\n  {\"step\": %u, \"abnormal\": %s, \"duration_ns\": %lld, \"expected_ns\": %lld", k ? "," : "",
                k, t->abnormal ? "true" : "false", (long long)nd_, (long long)(nd_ - t->excess));
        if (t->carried >= 0)
            fprintf(f, ", \"carried_from\": %lld", (long long)t->carried);
        /* a fault injected here whose cost stayed within the noise is named, not counted */
        if (t->f != TELLER_FAULT_NONE && (!t->abnormal || src != t))
            fprintf(f, ", \"injected\": \"%s\", \"injected_excess_ns\": %lld", teller_fault_name(t->f),
                    (long long)t->own);
        if (!t->abnormal) {
            fprintf(f, ", \"fault_type\": \"no_error\"}");
            continue;
        }
        const teller_fault_def *d = teller_fault_def_of(src->f);
        char ex[1024];
        const root *rt = &src->rt;
        teller_fault_explain(src->f, d->by_node ? rt->node : rt->rank, (int)k, nd_, nd_ - t->excess, t->excess, rt->op,
                             rt->rank, node_of(P, rt->ev), dur[rt->ev], ex, sizeof ex);
        fprintf(f, ", \"view\": \"%s\", \"fault_type\": \"%s\", \"fault\": \"%s\", \"excess_ns\": %lld, "
                   "\"root\": {\"rank\": %d, \"node\": %d, \"op\": ",
                d->view, d->type, d->name, (long long)t->excess, rt->rank, node_of(P, rt->ev));
        teller_json_put(f, rt->op);
        fprintf(f, ", \"layer\": \"%s\"}, \"explanation\": ", rt->layer);
        teller_json_put(f, ex);
        fprintf(f, "}");
    }
    fprintf(f, "\n ],\n \"requests\": []}\n");
    if (fclose(f) != 0)
        return teller_error_set(err, TELLER_ERR_IO, path, 0, "write failed");
    return TELLER_OK;
}

/* The node log i is for: node<N> in its file name, else its place in
 * the list. */
static long log_node(const teller_perturb_opts *o, size_t i)
{
    const char *base = strrchr(o->logs[i], '/'), *nn;
    base = base ? base + 1 : o->logs[i];
    if ((nn = strstr(base, "node")) && nn[4] >= '0' && nn[4] <= '9')
        return strtol(nn + 4, NULL, 10);
    return (long)i;
}

/* A line added to a node's log: its time on that node's clock and text;
 * before is the 1-based line of the log it goes in front of (0: the end).
 * A preemption line also goes in front of the pre-th "Prefill batch." line
 * of the traced time (counted from 0; UINT32_MAX: none), at pre_before. */
typedef struct logline {
    int32_t  node;
    int64_t  t;
    uint64_t before, pre_before;
    uint32_t pre;
    char     text[768];
} logline;

/* The scheduler node's traced time, on its clock, and how many of the
 * steps prefill by their annotations: SGLang logs one "Prefill batch."
 * line for each, in step order (log_findings.c anchors preemption lines
 * by them the same way). */
typedef struct prefill_span {
    int32_t  node;
    int64_t  lo, hi;
    uint32_t steps, prefilling;
} prefill_span;

typedef struct place_ctx {
    logline            *ins;
    size_t              n;
    const prefill_span *ps;
    uint32_t            npre; /* the "Prefill batch." lines of the traced time seen */
} place_ctx;

/* Each added line goes in front of the first record of a later second; a
 * preemption line in front of the "Prefill batch." line of the first step
 * after its own that prefills, when that comes sooner (a whole second
 * holds many steps, and the lines of a log are in time order). */
static int place_cb(void *ctx, const teller_log_record *rec)
{
    place_ctx *pc = ctx;
    if (rec->time_ns == INT64_MIN)
        return 0;
    for (size_t j = 0; j < pc->n; j++)
        if (!pc->ins[j].before && rec->time_ns / 1000000000 > pc->ins[j].t / 1000000000)
            pc->ins[j].before = rec->line;
    int64_t end = (rec->flags & TELLER_LOGF_NO_SUBSEC) && rec->time_ns < INT64_MAX - 1000000000
                      ? rec->time_ns + 1000000000
                      : rec->time_ns; /* a whole second's line may be anywhere in it */
    if (pc->ps && pc->ps->node == pc->ins[0].node && end >= pc->ps->lo && rec->time_ns <= pc->ps->hi &&
        rec->msg.n && memmem(rec->msg.p, rec->msg.n, "Prefill batch.", 14)) {
        for (size_t j = 0; j < pc->n; j++)
            if (pc->ins[j].pre == pc->npre && !pc->ins[j].pre_before)
                pc->ins[j].pre_before = rec->line;
        pc->npre++;
    }
    return 0;
}

/* Once the log is read: the prefill lines count as anchors only when
 * they are one per prefilling step and some step only decodes; a line
 * earlier in time never goes after a later one. */
static void place_finish(const place_ctx *pc)
{
    int anchored = pc->ps && pc->ps->node == pc->ins[0].node && pc->npre == pc->ps->prefilling &&
                   pc->ps->prefilling < pc->ps->steps;
    for (size_t j = 0; anchored && j < pc->n; j++)
        if (pc->ins[j].pre_before && (!pc->ins[j].before || pc->ins[j].pre_before < pc->ins[j].before))
            pc->ins[j].before = pc->ins[j].pre_before;
    for (size_t j = pc->n - 1; j-- > 0;)
        if (pc->ins[j + 1].before && (!pc->ins[j].before || pc->ins[j + 1].before < pc->ins[j].before))
            pc->ins[j].before = pc->ins[j + 1].before;
}

/* Copies the --log files to logs/node<N>.log, with the added lines of
 * their node in time order. */
static teller_status copy_logs(const teller_perturb_opts *o, const char *dir, logline *ins, size_t nins,
                               const prefill_span *ps, teller_error *err)
{
    if (!o->nlogs)
        return TELLER_OK;
    char sub[4096];
    snprintf(sub, sizeof sub, "%s/logs", dir);
    if (teller_mkdir_p(sub, 0755))
        return teller_error_set(err, TELLER_ERR_IO, sub, 0, "cannot create the directory");
    for (size_t i = 0; i < o->nlogs; i++) {
        long node = log_node(o, i);
        char path[4200];
        snprintf(path, sizeof path, "%s/node%ld.log", sub, node);
        struct stat sb;
        if (stat(path, &sb) == 0)
            return teller_error_set(err, TELLER_ERR_ARG, o->logs[i], 0, "a second log for node %ld", node);
        size_t first = 0, n = 0; /* this node's lines: ins[first .. first+n) (grouped by node) */
        while (first < nins && ins[first].node != node)
            first++;
        while (first + n < nins && ins[first + n].node == node)
            n++;
        if (n) {
            place_ctx pc = {ins + first, n, ps, 0};
            teller_log_opts lo = teller_log_defaults();
            lo.ref_ns = ins[first].t;
            teller_status r = teller_log_read_file(o->logs[i], &lo, place_cb, &pc, NULL, err);
            if (r != TELLER_OK)
                return r;
            place_finish(&pc);
        }
        FILE *in = fopen(o->logs[i], "rb");
        if (!in)
            return teller_error_set(err, TELLER_ERR_IO, o->logs[i], 0, "cannot read");
        FILE *out = fopen(path, "wb");
        if (!out) {
            fclose(in);
            return teller_error_set(err, TELLER_ERR_IO, path, 0, "cannot write");
        }
        int bad = 0, c, at_start = 1;
        uint64_t line = 1;
        size_t next = 0;
        while ((c = fgetc(in)) != EOF) {
            for (; at_start && next < n && ins[first + next].before == line; next++)
                bad |= fprintf(out, "%s\n", ins[first + next].text) < 0;
            bad |= fputc(c, out) == EOF;
            at_start = c == '\n';
            line += (uint64_t)at_start;
        }
        if (next < n && !at_start)
            bad |= fputc('\n', out) == EOF;
        for (; next < n; next++)
            bad |= fprintf(out, "%s\n", ins[first + next].text) < 0;
        bad |= ferror(in);
        fclose(in);
        if (fclose(out) != 0 || bad)
            return teller_error_set(err, TELLER_ERR_IO, path, 0, "copy failed");
    }
    return TELLER_OK;
}

/* The engine's preemption warning for step k at time t of the node's
 * clock, in the header style of the run's own log (vLLM puts the source in
 * brackets since 0.8). Logger times are taken as UTC. */
static void preemption_line(const pctx *P, const char *log_path, uint32_t k, int64_t t, char *out, size_t cap)
{
    time_t sec = (time_t)(t / 1000000000);
    struct tm tm;
    gmtime_r(&sec, &tm);
    if (!strcmp(P->engine, "sglang")) {
        snprintf(out, cap,
                 "[%04d-%02d-%02d %02d:%02d:%02d TP0] KV cache pool is full. Retract requests. #retracted_reqs: %u, "
                 "#new_token_ratio: 0.7021 -> 1.0000",
                 tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, 1 + k % 7);
        return;
    }
    int bracket = 0;
    FILE *f = fopen(log_path, "rb");
    char buf[4096];
    for (int lines = 0; f && !bracket && lines < 200 && fgets(buf, sizeof buf, f); lines++)
        bracket = strstr(buf, " [") && strstr(buf, ".py:") && strstr(buf, "] ") && strstr(buf, " [") < strstr(buf, ".py:");
    if (f)
        fclose(f);
    snprintf(out, cap,
             "WARNING %02d-%02d %02d:%02d:%02d %sscheduler.py:1089] Sequence group %u is preempted by "
             "PreemptionMode.RECOMPUTE mode because there is not enough KV cache space. This can affect the "
             "end-to-end performance. Increase gpu_memory_utilization or tensor_parallel_size to provide more KV "
             "cache memory. total_num_cumulative_preemption=%u",
             tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, bracket ? "[" : "", 100 + k, 1 + k / 3);
}

static int logline_cmp(const void *a, const void *b)
{
    const logline *x = a, *y = b;
    if (x->node != y->node) return x->node < y->node ? -1 : 1;
    return x->t < y->t ? -1 : x->t > y->t;
}

/* What a hang leaves in the traces: the hung rank's events that had ended
 * before the launch it never made, and every rank's events up to the end
 * of the hung step (old end_k); what never ended is left out. Torn down
 * (teardown), a member that waited never ended anything from the start
 * of its kernel of the hung collective on: only what ended before it is
 * kept (the watchdog, not the collective, ended the wait). 0, or -1 out of
 * memory. */
static int hang_keep(const pctx *P, int64_t end_k, int teardown, uint8_t *keep)
{
    const teller_events *ev = P->ev;
    uint32_t h = P->hang_kernel, L = ev->parent[h];
    int32_t hr = rank_of(P, h);
    int64_t H = L != TELLER_NONE && !(ev->flags[L] & TELLER_F_GPU) ? ev->start_ns[L] : ev->start_ns[h];
    size_t ns = teller_store_num_sources(P->st);
    int64_t *cut = malloc((ns ? ns : 1) * sizeof *cut); /* per source: where a torn-down member stopped */
    if (!cut)
        return -1;
    for (size_t q = 0; q < ns; q++)
        cut[q] = INT64_MAX;
    if (teardown) {
        const teller_collective *co = &teller_store_collectives(P->st)[P->coll[h]];
        const teller_coll_member *mem = teller_store_coll_members(P->st) + co->first_member;
        for (uint32_t j = 0; j < co->num_members; j++)
            for (size_t q = 0; q < ns; q++)
                if (mem[j].kernel != h && teller_store_source_c(P->st, (uint32_t)q)->rank == mem[j].rank &&
                    ev->start_ns[mem[j].kernel] < cut[q])
                    cut[q] = ev->start_ns[mem[j].kernel];
    }
    for (size_t i = 0; i < ev->n; i++) {
        int64_t s = ev->start_ns[i], e = s + ev->dur_ns[i];
        int gpu = (ev->flags[i] & TELLER_F_GPU) != 0;
        uint32_t k = ev->step[i];
        int drop = (k != TELLER_NONE && k > P->hang_step) || s > end_k || (!gpu && e > end_k && k != P->hang_step) ||
                   e > cut[ev->source[i]];
        if (rank_of(P, (uint32_t)i) == hr)
            drop |= s >= H || (!gpu && e > H);
        keep[i] = (uint8_t)!drop;
    }
    free(cut);
    return 0;
}

/* PyTorch's ProcessGroupNCCL watchdog lines (glog style) for the member m
 * of the hung collective: the timeout (w 0), then the exception (w 1). */
static void watchdog_line(const pctx *P, uint32_t m, int w, int64_t t, char *out, size_t cap)
{
    const teller_comm *cm = teller_store_event_comm(P->st, m);
    uint32_t c = P->coll[m];
    const teller_collective *co = &teller_store_collectives(P->st)[c];
    const teller_coll_member *mem = teller_store_coll_members(P->st) + co->first_member;
    int32_t rank = rank_of(P, m), local = 0;
    for (uint32_t j = 0; j < co->num_members; j++)
        local += mem[j].rank < rank;
    long long seq = cm && cm->seq >= 0 ? cm->seq : (long long)co->seq + 1;
    char op[64] = "ALLREDUCE";
    const char *nm = name_of(P, m);
    if (cm && cm->collective) {
        snprintf(op, sizeof op, "%s", teller_store_str(P->st, cm->collective));
        for (char *q = op; *q; q++)
            *q = (char)(*q >= 'a' && *q <= 'z' ? *q - 32 : *q);
    } else if (strstr(nm, "AllGather")) {
        snprintf(op, sizeof op, "_ALLGATHER_BASE");
    } else if (strstr(nm, "ReduceScatter")) {
        snprintf(op, sizeof op, "_REDUCE_SCATTER_BASE");
    } else if (strstr(nm, "Broadcast")) {
        snprintf(op, sizeof op, "BROADCAST");
    } else if (strstr(nm, "SendRecv")) {
        snprintf(op, sizeof op, "SEND");
    }
    time_t sec = (time_t)(t / 1000000000);
    struct tm tm;
    gmtime_r(&sec, &tm);
    const char *pg = cm && cm->pg_name ? teller_store_str(P->st, cm->pg_name) : "0";
    int n = snprintf(out, cap, "[rank%d]:[E%02d%02d %02d:%02d:%02d.%09lld ProcessGroupNCCL.cpp:632] [PG ID %s PG GUID %s Rank %d] ",
                     rank, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (long long)(t % 1000000000), pg,
                     pg, local);
    if (n < 0 || (size_t)n >= cap)
        return;
    if (w == 0)
        snprintf(out + n, cap - (size_t)n,
                 "Watchdog caught collective operation timeout: WorkNCCL(SeqNum=%lld, OpType=%s, NumelIn=%lld, "
                 "NumelOut=%lld, Timeout(ms)=600000) ran for 600047 milliseconds before timing out.",
                 seq, op, cm && cm->in_nelems >= 0 ? (long long)cm->in_nelems : 0LL,
                 cm && cm->out_nelems >= 0 ? (long long)cm->out_nelems : 0LL);
    else
        snprintf(out + n, cap - (size_t)n,
                 "Exception (either an error or timeout) detected by watchdog at work: %lld, last enqueued NCCL work: "
                 "%lld, last completed NCCL work: %lld.",
                 seq, seq, seq - 1);
}

/* ---- the log lines faults write ---- */

/* The lines added to the logs, grown as faults add them. */
typedef struct linebuf {
    logline *v;
    size_t   n, cap;
} linebuf;

/* A new line of node's log at time t (that node's clock), its text empty;
 * NULL when out of memory. */
static logline *add_line(linebuf *b, int32_t node, int64_t t)
{
    if (TELLER_GROW(b->v, b->cap, b->n + 1))
        return NULL;
    logline *L = &b->v[b->n++];
    memset(L, 0, sizeof *L);
    L->node = node;
    L->t = t;
    L->pre = UINT32_MAX;
    return L;
}

/* preemption: the engine's warning at step k's annotation's new start, in
 * the log of the lowest rank's node (the scheduler's). */
static int preemption_lines(const pctx *P, uint32_t k, const tstep *t, const int64_t *start, linebuf *out,
                            teller_perturb_result *res)
{
    (void)res;
    logline *L = add_line(out, P->lead_node, start[t->rt.ev] + node_offset_of(P->st, P->lead_node));
    if (!L)
        return -1;
    L->pre = P->prefills[k]; /* the first step after k that prefills: its line's index */
    preemption_line(P, P->sched_log, k, L->t, L->text, sizeof L->text);
    return 0;
}

/* nccl_hang: the watchdog's two lines for each member that waited, in its
 * node's log when one was given (else a note says so), a timeout after it
 * started waiting. */
static int hang_lines(const pctx *P, uint32_t k, const tstep *t, const int64_t *start, linebuf *out,
                      teller_perturb_result *res)
{
    (void)k;
    (void)t;
    const teller_perturb_opts *o = P->o;
    const teller_collective *co = &teller_store_collectives(P->st)[P->coll[P->hang_kernel]];
    const teller_coll_member *mem = teller_store_coll_members(P->st) + co->first_member;
    const teller_comm_family *fam = teller_comm_family_get(teller_comm_family_of(name_of(P, P->hang_kernel), NULL, 0));
    if (fam && fam->match == TELLER_COMM_MATCH_ORDER) {
        /* no watchdog watches an engine's own collective; one fires only
         * on the NCCL work queued behind it, which this trace cannot say */
        note(res, "nccl_hang: the hung collective is %s's (%s), which no watchdog watches: no watchdog lines are "
                  "written", fam->library, fam->name);
        return 0;
    }
    for (uint32_t j = 0; j < co->num_members; j++) {
        uint32_t m = mem[j].kernel;
        if (m == P->hang_kernel)
            continue;
        int32_t node = node_of(P, m);
        int has = 0;
        for (size_t i = 0; i < o->nlogs; i++)
            has |= log_node(o, i) == node;
        if (!has) {
            note(res, "nccl_hang: no log for node %d was given, so its watchdog lines are not written", node);
            continue;
        }
        for (int w = 0; w < 2; w++) {
            logline *L = add_line(out, node,
                                  start[m] + TELLER_FAULT_WATCHDOG_NS + 47000000 + w * 1000000 +
                                      node_offset_of(P->st, node));
            if (!L)
                return -1;
            watchdog_line(P, m, w, L->t, L->text, sizeof L->text);
        }
    }
    return 0;
}

/* ---- the kinds ---- */

/* What each kind does to a run: its injector (NULL: not imitated), the
 * log lines it writes once the times are rewritten (start: the events'
 * new starts; -1 out of memory), and why a run may not carry it. */
typedef struct kind {
    injector    fn;
    int       (*lines)(const pctx *P, uint32_t k, const tstep *t, const int64_t *start, linebuf *out,
                       teller_perturb_result *res);
    const char *needs;
} kind;

static const kind k_kinds[TELLER_FAULT_COUNT] = {
    [TELLER_FAULT_SLOW_LINK] = {inj_slow_link, NULL, "no collective crosses nodes (one node, or one rank of the run)"},
    [TELLER_FAULT_NCCL_HANG] = {inj_nccl_hang, hang_lines,
                                "no collective matched across ranks (one rank of the run, or none)"},
    [TELLER_FAULT_PP_SEND_DELAY] = {inj_pp_send_delay, NULL, "no pipeline send/recv kernel matched across ranks"},
    [TELLER_FAULT_GPU_THROTTLE] = {inj_gpu_throttle, NULL, "no compute kernels"},
    [TELLER_FAULT_KERNEL_REGRESSION] = {inj_kernel_regression, NULL, "no compute kernels"},
    [TELLER_FAULT_LAUNCH_LATENCY] = {inj_launch_latency, NULL, "no kernel launch calls linked to kernels"},
    [TELLER_FAULT_SYNC_STALL] = {inj_sync_stall, NULL, "no synchronize calls"},
    [TELLER_FAULT_MALLOC_STORM] = {inj_malloc_storm, NULL,
                                   "no cudaMalloc/cudaFree calls to slow down (none are invented)"},
    [TELLER_FAULT_PCIE_DEGRADATION] = {inj_pcie, NULL, "no host-device copies"},
    [TELLER_FAULT_KV_SWAP] = {NULL, NULL, "its evidence is block-sized swap copies no healthy run has (simulator "
                                          "only; see docs/PERTURB.md)"},
    [TELLER_FAULT_OOM] = {NULL, NULL, "its evidence is a failed allocation no healthy run has, and engines die on it "
                                      "(simulator only; see docs/PERTURB.md)"},
    [TELLER_FAULT_CPU_CONTENTION] = {inj_cpu_contention, NULL, "no torch ops on a host thread"},
    [TELLER_FAULT_PREEMPTION] = {inj_preemption, preemption_lines,
                                 "needs a vLLM or SGLang run (step annotations) and the service log of the node of "
                                 "its lowest rank (--log)"},
};

/* ---- teller_perturb, stage by stage ---- */

teller_perturb_opts teller_perturb_defaults(void)
{
    teller_perturb_opts o = {0};
    o.rate = 0.3;
    o.severity = 1.0;
    o.seed = 1;
    return o;
}

/* The run's first input, what errors about the whole run name. */
static const char *run_where(const teller_store *st)
{
    return teller_store_num_sources(st) ? teller_store_str(st, teller_store_source_c(st, 0)->path) : "(trace)";
}

/* Whether the run and the options allow any fault at all: step
 * annotations, and a kind asked for that perturb imitates. Notes the kinds
 * asked for that it does not, and a run given in part. */
static teller_status check_run(const teller_store *st, uint32_t allowed, teller_perturb_result *res,
                               teller_error *err)
{
    const teller_step *steps = teller_store_steps(st);
    const char *where = run_where(st);
    int marked = 0;
    for (size_t j = 0; j < teller_store_num_steps(st); j++)
        marked |= steps[j].marker != TELLER_NONE;
    if (!marked)
        return teller_error_set(err, TELLER_ERR_ARG, where, 0,
                                "the run has no step annotations (ProfilerStep#N, vLLM execute_..., SGLang step[...]); "
                                "name them with --step-pattern");
    int possible = 0;
    for (int f = 1; f < TELLER_FAULT_COUNT; f++) {
        if (!(allowed & (1u << f)))
            continue;
        if (k_kinds[f].fn)
            possible = 1;
        else
            note(res, "%s skipped: %s", teller_fault_name((teller_fault)f), k_kinds[f].needs);
    }
    if (!possible)
        return teller_error_set(err, TELLER_ERR_ARG, "(options)", 0, "no fault kind asked for can be imitated");
    for (size_t s = 0; s < teller_store_num_sources(st); s++) {
        const teller_source *so = teller_store_source_c(st, (uint32_t)s);
        if (so->world_size > (int32_t)teller_store_num_sources(st))
            note(res, "rank %d is one of a %d-rank run and only %zu rank(s) were given: nobody waits for it at "
                 "collectives, so horizontal faults show on it alone", so->rank, so->world_size,
                 teller_store_num_sources(st));
    }
    return TELLER_OK;
}

/* Sets up P for store st: the run's engine, the scheduler's node and log,
 * each event's collective instance and the events of each step. -1 when
 * out of memory (what was allocated is P's to free). */
static int pctx_open(pctx *P, const teller_store *st, const teller_perturb_opts *o)
{
    const teller_events *ev = teller_store_events(st);
    size_t n = ev->n;
    memset(P, 0, sizeof *P);
    P->st = st;
    P->ev = ev;
    P->o = o;
    rng_seed(&P->r, o->seed);
    P->nsteps = teller_store_step_count(st);
    P->engine = engine_of(st);
    P->hang_step = P->hang_kernel = TELLER_NONE;
    int32_t lead_rank = INT32_MAX;
    for (size_t s = 0; s < teller_store_num_sources(st); s++)
        if (teller_store_source_c(st, (uint32_t)s)->rank < lead_rank) {
            lead_rank = teller_store_source_c(st, (uint32_t)s)->rank;
            P->lead_node = teller_store_source_c(st, (uint32_t)s)->node;
        }
    for (size_t i = 0; i < o->nlogs; i++)
        if (log_node(o, i) == P->lead_node)
            P->sched_log = o->logs[i];
    P->sfirst = calloc((size_t)P->nsteps + 2, sizeof *P->sfirst);
    P->sev = malloc((n ? n : 1) * sizeof *P->sev);
    P->coll = malloc((n ? n : 1) * sizeof *P->coll);
    uint32_t *pos = malloc(((size_t)P->nsteps + 1) * sizeof *pos);
    if (!P->sfirst || !P->sev || !P->coll || !pos) {
        free(pos);
        return -1;
    }
    for (size_t i = 0; i < n; i++)
        P->coll[i] = TELLER_NONE;
    const teller_collective *co = teller_store_collectives(st);
    const teller_coll_member *mem = teller_store_coll_members(st);
    for (size_t c = 0; c < teller_store_num_collectives(st); c++)
        for (uint32_t j = 0; j < co[c].num_members; j++)
            P->coll[mem[co[c].first_member + j].kernel] = (uint32_t)c;
    /* events by step */
    for (size_t i = 0; i < n; i++)
        if (ev->step[i] != TELLER_NONE)
            P->sfirst[ev->step[i] + 1]++;
    for (uint32_t k = 0; k < P->nsteps; k++)
        P->sfirst[k + 1] += P->sfirst[k];
    memcpy(pos, P->sfirst, ((size_t)P->nsteps + 1) * sizeof *pos);
    for (size_t i = 0; i < n; i++)
        if (ev->step[i] != TELLER_NONE)
            P->sev[pos[ev->step[i]]++] = (uint32_t)i;
    free(pos);
    return 0;
}

static void pctx_free(pctx *P)
{
    free(P->prefills);
    free(P->sfirst);
    free(P->sev);
    free(P->ed);
    free(P->cand);
    free(P->coll);
}

/* Per step, which kinds allowed it can carry, then at the rate one of
 * them, drawn and injected into ts[k] (none after a hang: the run has
 * ended). Returns the kinds some step could carry, or -1 when out of
 * memory. */
static int64_t draw_faults(pctx *P, uint32_t allowed, tstep *ts, teller_perturb_result *res)
{
    uint32_t ever = 0;
    for (uint32_t k = 0; k < P->nsteps; k++) {
        uint32_t can = 0;
        for (int f = 1; f < TELLER_FAULT_COUNT; f++)
            if ((allowed & (1u << f)) && k_kinds[f].fn && k_kinds[f].fn(P, k, 0, NULL) > 0)
                can |= 1u << f;
        ever |= can;
        if (P->hang_step != TELLER_NONE || !(uni(&P->r) < P->o->rate) || !can)
            continue;
        int cnt = __builtin_popcount(can), pick = uni_int(&P->r, cnt), f = 1;
        for (;; f++)
            if ((can & (1u << f)) && pick-- == 0)
                break;
        size_t ed0 = P->ned;
        int got = k_kinds[f].fn(P, k, 1, &ts[k].rt);
        if (got < 0)
            return -1;
        if (got) {
            ts[k].f = (teller_fault)f;
            ts[k].ed0 = ed0;
            ts[k].ed1 = P->ned;
            res->injected++;
        }
    }
    return P->oom ? -1 : (int64_t)ever;
}

/* A step's truth is what happened to it in the written trace: its excess
 * is how much longer it became than in the run given (old durations
 * od[], new nd[]), counted once, whatever made it so. Its own fault cost it
 * what it took against the same run without that one fault (as the
 * simulator measures a fault); the rest is what earlier faults did to it
 * (where steps overlap, a step's late GPU work delays the next one, and a
 * host that ran ahead starts the next one late). The larger names the
 * step: its own kind, or carried from the last faulty step before it (not
 * from a logged kind: a hang ends the run, and a preempted serving step
 * does not overlap the next). It is abnormal when it grew by a material
 * cost (fault.h; a logged kind always). A step that earlier faults changed
 * materially is carried even when it did not grow: a host that starts a
 * step late while its GPU work ends where it did shortens it. */
static teller_status label_steps(const pctx *P, tstep *ts, uint32_t nout, const int64_t *od_, const int64_t *nd_,
                                 const uint8_t *keep, teller_perturb_result *res, teller_error *err)
{
    teller_status rc;
    for (uint32_t k = 0, last = TELLER_NONE; k < nout; k++) {
        teller_fault f = ts[k].f;
        int64_t od = od_[k], nd = nd_[k];
        int from = last != TELLER_NONE && !teller_fault_def_of(ts[last].f)->logged;
        int64_t clean = f == TELLER_FAULT_NONE ? nd : od; /* the step without its own fault */
        if (f != TELLER_FAULT_NONE && from && !teller_fault_def_of(f)->logged &&
            (rc = without_edits(P, ts[k].ed0, ts[k].ed1, keep, k, &clean, err)) != TELLER_OK)
            return rc;
        int64_t inherited = clean - od;
        ts[k].own = nd - clean;
        ts[k].excess = nd - od;
        if (f != TELLER_FAULT_NONE && (!from || teller_fault_def_of(f)->logged || ts[k].own >= inherited)) {
            ts[k].abnormal = teller_fault_material(f, ts[k].excess, od);
            res->abnormal += (uint32_t)ts[k].abnormal;
            res->by_fault[f] += (uint32_t)ts[k].abnormal;
            last = k;
        } else if (from && teller_fault_material(ts[last].f, inherited < 0 ? -inherited : inherited, od)) {
            ts[k].carried = last;
            ts[k].abnormal = teller_fault_material(ts[last].f, ts[k].excess, od);
            res->abnormal += (uint32_t)ts[k].abnormal;
            res->carried += (uint32_t)ts[k].abnormal;
        } else if (f != TELLER_FAULT_NONE) {
            last = k;
        }
    }
    return TELLER_OK;
}

/* P->prefills (per step, how many steps up to it prefill by their lead
 * annotations: the steps table is ordered by (step, rank)), and the
 * scheduler node's traced time and counts into *ps, from the new times.
 * 0, or -1 out of memory. */
static int prefill_steps(pctx *P, const int64_t *start, const int64_t *dur, prefill_span *ps)
{
    const teller_step *rows = teller_store_steps(P->st);
    size_t nrows = teller_store_num_steps(P->st);
    if (!(P->prefills = calloc((size_t)P->nsteps + 1, sizeof *P->prefills)))
        return -1;
    int64_t off = node_offset_of(P->st, P->lead_node);
    *ps = (prefill_span){P->lead_node, INT64_MAX, INT64_MIN, P->nsteps, 0};
    uint32_t last = TELLER_NONE;
    for (size_t j = 0; j < nrows; j++) {
        uint32_t k = rows[j].step, m = rows[j].marker;
        if (k >= P->nsteps || m == TELLER_NONE)
            continue;
        if (start[m] + off < ps->lo)
            ps->lo = start[m] + off;
        if (start[m] + dur[m] + off > ps->hi)
            ps->hi = start[m] + dur[m] + off;
        if (k == last)
            continue;
        last = k;
        teller_step_class c;
        teller_step_classify(name_of(P, m), &c);
        P->prefills[k] = c.kind != TELLER_STEP_DECODE;
    }
    for (uint32_t k = 0; k < P->nsteps; k++) {
        ps->prefilling += P->prefills[k];
        P->prefills[k] = ps->prefilling;
    }
    return 0;
}

/* Writes the case into dir, which must be new or empty: the traces with
 * the new times (start, dur; keep: what a hang left, NULL all), the logs
 * with the lines the faults add, the truth of the first nout steps (win:
 * the steps' old and new windows, as teller_perturb lays them out). */
static teller_status write_case(pctx *P, const char *dir, const tstep *ts, uint32_t nout, const int64_t *start,
                                const int64_t *dur, uint8_t *keep, const int64_t *win, teller_perturb_result *res,
                                teller_error *err)
{
    const teller_perturb_opts *o = P->o;
    int full = teller_dir_has_files(dir);
    if (full)
        return teller_error_set(err, full < 0 ? TELLER_ERR_IO : TELLER_ERR_ARG, dir, 0,
                                full < 0 ? "not a directory that can be read"
                                         : "already holds files: give a new or empty directory (a case's files would "
                                           "mix with them)");
    if (teller_mkdir_p(dir, 0755))
        return teller_error_set(err, TELLER_ERR_IO, dir, 0, "cannot create the directory");
    if (o->hang_teardown && P->hang_step != TELLER_NONE && hang_keep(P, win[P->nsteps + P->hang_step], 1, keep))
        return teller_error_set(err, TELLER_ERR_NOMEM, "(trace)", 0, "out of memory");
    teller_status rc = teller_kineto_write(P->st, start, dur, keep, dir, err);
    if (rc != TELLER_OK)
        return rc;
    prefill_span ps;
    if (prefill_steps(P, start, dur, &ps))
        return teller_error_set(err, TELLER_ERR_NOMEM, "(trace)", 0, "out of memory");
    linebuf lines = {0};
    for (uint32_t k = 0; k < P->nsteps && rc == TELLER_OK; k++)
        if (ts[k].f != TELLER_FAULT_NONE && k_kinds[ts[k].f].lines &&
            k_kinds[ts[k].f].lines(P, k, &ts[k], start, &lines, res))
            rc = teller_error_set(err, TELLER_ERR_NOMEM, "(trace)", 0, "out of memory");
    if (rc == TELLER_OK) {
        teller_sort(lines.v, lines.n, sizeof *lines.v, logline_cmp);
        rc = copy_logs(o, dir, lines.v, lines.n, &ps, err);
    }
    free(lines.v);
    if (rc == TELLER_OK)
        rc = write_truth(P, dir, ts, nout, win + 2 * P->nsteps, dur, err);
    return rc;
}

teller_status teller_perturb(const teller_store *st, const teller_perturb_opts *o, const char *dir,
                             teller_perturb_result *res_out, teller_error *err)
{
    teller_perturb_result res_local;
    teller_perturb_result *res = res_out ? res_out : &res_local;
    memset(res, 0, sizeof *res);
    if (!(o->rate >= 0 && o->rate <= 1) || !(o->severity > 0 && o->severity <= 100))
        return teller_error_set(err, TELLER_ERR_ARG, "(options)", 0,
                                "rate must be within 0..1 and severity above 0 and at most 100");
    uint32_t allowed = o->faults ? o->faults : ((1u << TELLER_FAULT_COUNT) - 2);
    teller_status rc = check_run(st, allowed, res, err);
    if (rc != TELLER_OK)
        return rc;

    const teller_events *ev = teller_store_events(st);
    size_t n = ev->n;
    pctx P;
    int64_t *start = malloc((n ? n : 1) * sizeof *start), *dur = malloc((n ? n : 1) * sizeof *dur);
    uint8_t *keep = NULL;
    int64_t *win = NULL;
    tstep *ts = NULL;
    if (pctx_open(&P, st, o) || !start || !dur)
        goto oom;
    res->steps = P.nsteps;
    win = malloc(4 * (P.nsteps ? P.nsteps : 1) * sizeof *win); /* per step: old length, old end, new length, new end */
    ts = calloc(P.nsteps ? P.nsteps : 1, sizeof *ts);
    if (!win || !ts)
        goto oom;
    for (uint32_t k = 0; k < P.nsteps; k++)
        ts[k].carried = -1;

    int64_t ever = draw_faults(&P, allowed, ts, res);
    if (ever < 0)
        goto oom;
    for (int f = 1; f < TELLER_FAULT_COUNT; f++)
        if ((allowed & (1u << f)) && k_kinds[f].fn && !(ever & (1u << f)))
            note(res, "%s skipped: %s", teller_fault_name((teller_fault)f), k_kinds[f].needs);
    if (!ever && o->rate > 0) {
        rc = teller_error_set(err, TELLER_ERR_ARG, run_where(st), 0,
                              "no step of the run can carry any of the fault kinds asked for (the notes say why)");
        goto done;
    }

    if ((rc = rt_apply(st, P.ed, P.ned, start, dur, err)) != TELLER_OK)
        goto done;
    if (windows(st, ev->start_ns, ev->dur_ns, NULL, win, win + P.nsteps, P.nsteps))
        goto oom;
    if (P.hang_step != TELLER_NONE) {
        /* the steps' windows are the run's as it happened: the hung step
         * lasts until the watchdog fires, torn down or not */
        if (!(keep = malloc(n ? n : 1)) || hang_keep(&P, win[P.nsteps + P.hang_step], 0, keep))
            goto oom;
    }
    if (windows(st, start, dur, keep, win + 2 * P.nsteps, win + 3 * P.nsteps, P.nsteps))
        goto oom;
    /* the steps in the case: all, or those up to a hang */
    uint32_t nout = P.hang_step != TELLER_NONE ? P.hang_step + 1 : P.nsteps;
    if ((rc = label_steps(&P, ts, nout, win, win + 2 * P.nsteps, keep, res, err)) != TELLER_OK)
        goto done;
    rc = write_case(&P, dir, ts, nout, start, dur, keep, win, res, err);
    goto done;
oom:
    rc = teller_error_set(err, TELLER_ERR_NOMEM, "(trace)", 0, "out of memory");
done:
    free(start);
    free(dur);
    free(win);
    free(ts);
    free(keep);
    pctx_free(&P);
    return rc;
}
