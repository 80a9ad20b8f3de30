/*
 * apis.c - the API-call detector (row api_calls): launches against the
 * run's median per API (launch latency), allocation calls that most steps
 * never make (allocator storms, OOM retries), each costing only the time
 * the rank's GPU idled meanwhile; and how several such findings on one
 * rank merge. A call is timed without the profiler's own work inside it
 * (TELLER_F_PROFILER: CUPTI asks for its buffers in the very call that
 * filled the last one, a stall the untraced program never has).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "detector.h"
#include "stall.h"

static int is_alloc_api(const char *nm)
{
    return !strncmp(nm, "cudaMalloc", 10) || !strncmp(nm, "cudaFree", 8) || !strncmp(nm, "cuMemAlloc", 10) ||
           !strncmp(nm, "cuMemFree", 9) || !strncmp(nm, "hipMalloc", 9) || !strncmp(nm, "hipFree", 7);
}

/* The usual time of a call of API nm: the run's median, or for a kernel
 * launch in a run too short to have a normal, at most the prior. */
static double usual_call(const dctx *D, uint32_t nm, double run_med)
{
    return diag_launch_prior(D, nm) && run_med > DIAG_LAUNCH_PRIOR_NS ? DIAG_LAUNCH_PRIOR_NS : run_med;
}

/* 1 when API call e launches GPU work whose name its source has not run
 * before in the trace: CUDA loads a kernel's module at its first launch
 * (lazy loading) and uploads a graph at its first launch, which takes
 * milliseconds to seconds once per process. 0 otherwise, -1 out of memory. */
static int first_launch(const teller_events *ev, uint32_t e, kmap *seen)
{
    for (uint32_t c = ev->first_child[e]; c != TELLER_NONE; c = ev->next_sibling[c]) {
        if (!(ev->flags[c] & TELLER_F_GPU))
            continue;
        uint64_t key = ((uint64_t)ev->source[e] << 32) | ev->name[c];
        if (kmap_get(seen, key, 0) != TELLER_NONE)
            return 0;
        return kmap_get(seen, key, 1) == TELLER_NONE ? -1 : 1;
    }
    return 0;
}

/* GPU operations launched by API call e */
static uint32_t launched(const teller_events *ev, uint32_t e)
{
    uint32_t n = 0;
    for (uint32_t c = ev->first_child[e]; c != TELLER_NONE; c = ev->next_sibling[c])
        n += (ev->flags[c] & TELLER_F_GPU) != 0;
    return n;
}

/* slow launch calls by source, step and time */
typedef struct lost_t {
    uint16_t src;
    uint32_t step, slot;
    int64_t  at;
    double   amt;
} lost_t;

static int lost_cmp(const void *x, const void *y)
{
    const lost_t *a = x, *b = y;
    if (a->src != b->src)
        return a->src < b->src ? -1 : 1;
    if (a->step != b->step)
        return a->step < b->step ? -1 : 1;
    return (a->at > b->at) - (a->at < b->at);
}

/* Per (step, source, API name): the calls over their usual time. */
typedef struct acc_t {
    double   excess, t, usual;
    double   host;                /* what all slow calls took over their usual */
    double   slow_t, slow_usual;  /* all slow calls: what they took, usually take */
    uint32_t n, event, step, name; /* n: calls that cost something */
    uint32_t fed;                 /* what all slow calls launched */
    uint32_t slow;                /* slow calls */
    size_t   grp;                 /* the last group of slow launches that counted it, + 1 */
    uint16_t src;
    int      rare;
} acc_t;

/* What the row's tasks share, made once (apis_prepare): the run-wide
 * input of a per-source search, a median and a count per API name over
 * every rank's calls, merged from each source's (baseline.h). */
typedef struct apis_in {
    busyidx      prof; /* when the profiler's own work ran, per source */
    diag_medians med;  /* per name: its calls' median duration, and the (step, source) pairs calling it */
} apis_in;

/* A source's API calls, as the detector reads them. */
typedef struct apiscan {
    const dctx *D;
    diag_state *S;
    size_t      src;
    apis_in    *in;              /* read only (diag_medians_get takes no const) */
    groups      step_durs;       /* call durations per (name, step, source) */
    double     *step_med;        /* their medians */
    kmap        slot;            /* (name, step, source) -> acc */
    acc_t      *acc;
    size_t      acap;
    lost_t     *lost;            /* every slow launch call: the host time it lost, where, and its slot */
    size_t      nlost, lcap;
} apiscan;

/* What API call i took without the profiler's own work inside it. */
static double call_ns(const dctx *D, const apis_in *in, size_t i)
{
    const teller_events *ev = D->ev;
    return diag_idle_in(&in->prof, ev->source[i], ev->start_ns[i], ev->start_ns[i] + ev->dur_ns[i]);
}

/* The run's median call of API name nm. */
static double run_median(apis_in *in, uint32_t nm) { return diag_medians_get(&in->med, nm); }

/* Source src's part of the run's medians (diag_part_fill): its calls'
 * durations per name, and per name the steps that call it. */
static int apis_part(const dctx *D, const void *arg, size_t src, diag_part *part)
{
    const teller_events *ev = D->ev;
    const apis_in *in = arg;
    kmap steps = {0}; /* (name, step) pairs seen */
    int rc = -1;
    for (size_t i = D->range[src]; i < D->range[src + 1]; i++) {
        if (!is_api(ev->layer[i]))
            continue;
        uint32_t nm = ev->name[i];
        if (diag_part_add(part, nm, call_ns(D, in, i)))
            goto out;
        if (ev->step[i] < D->nsteps) {
            size_t before = steps.n;
            if (kmap_get(&steps, (uint64_t)ev->step[i] << 32 | nm, 1) == TELLER_NONE ||
                (steps.n > before && diag_part_count(part, nm, 1)))
                goto out;
        }
    }
    rc = 0;
out:
    kmap_free(&steps);
    return rc;
}

/* Each API's median call over the run, and how many (step, source) pairs
 * call it. */
static int apis_prepare(const dctx *D, diag_state *S)
{
    apis_in *in = S->apis = calloc(1, sizeof *S->apis);
    if (!in || diag_busy_build(&in->prof, D, DIAG_BUSY_PROFILER, NULL))
        return -1;
    return diag_medians_build(&in->med, D, apis_part, in);
}

static void apis_release(const dctx *D, diag_state *S)
{
    (void)D;
    if (S->apis) {
        diag_busy_free(&S->apis->prof);
        diag_medians_free(&S->apis->med);
    }
    free(S->apis);
}

/* Each API's median call per step on the source. */
static int step_medians(apiscan *A)
{
    const dctx *D = A->D;
    const teller_events *ev = D->ev;
    for (size_t i = D->range[A->src]; i < D->range[A->src + 1]; i++)
        if (is_api(ev->layer[i]) && ev->step[i] < D->nsteps &&
            diag_groups_add(&A->step_durs, nss_key(ev->name[i], ev->step[i], ev->source[i]), call_ns(D, A->in, i)))
            return -1;
    return (A->step_med = diag_groups_medians(&A->step_durs)) ? 0 : -1;
}

/* The median call of name in step k on source src. */
static double step_median(apiscan *A, uint32_t name, uint32_t k, uint16_t src)
{
    return A->step_med[kmap_get(&A->step_durs.keys, nss_key(name, k, src), 0)];
}

/* Every call of the source over its usual into its (step, name) tally:
 * what it took over its usual, and what of that the GPU idled for; a slow
 * launch of a step whose calls are slow as a whole also into A->lost. */
static int tally_calls(apiscan *A)
{
    const dctx *D = A->D;
    diag_state *S = A->S;
    const teller_events *ev = D->ev;
    const teller_store *st = D->st;
    size_t total_pairs = teller_store_num_steps(st); /* (step, rank) pairs that exist */
    kmap seen = {0};
    int rc = -1;
    for (size_t i = D->range[A->src]; i < D->range[A->src + 1]; i++) {
        if (!is_api(ev->layer[i]) || ev->step[i] >= D->nsteps)
            continue;
        uint32_t nm = ev->name[i];
        /* allocation calls absent from most steps are expected not to happen at all */
        int rare = is_alloc_api(teller_store_str(st, nm)) && diag_medians_count(&A->in->med, nm) * 4 < total_pairs;
        if (diag_blocks_on_gpu(st, nm))
            continue; /* the sync detector judges these */
        int first = first_launch(ev, (uint32_t)i, &seen);
        if (first < 0)
            goto out;
        if (first)
            continue; /* loading the kernel's module (or uploading a graph) is no latency fault */
        double d = call_ns(D, A->in, i), usual = usual_call(D, nm, run_median(A->in, nm));
        /* a call is slow over 2x its usual + 4 us; what it then cost is
         * all it took over its usual */
        double ex = rare ? d : d > 2.0 * usual + 4000.0 ? d - usual : 0;
        if (ex <= 0)
            continue;
        acc_t *a = kmap_slot(&A->slot, nss_key(nm, ev->step[i], ev->source[i]), (void **)&A->acc, &A->acap, sizeof *A->acc);
        if (!a)
            goto out;
        if (!a->slow++) {
            a->event = (uint32_t)i;
            a->step = ev->step[i];
            a->name = nm;
            a->src = ev->source[i];
            a->rare = rare;
        }
        /* what the API's slow calls launched, whatever they cost: the
         * API a rank's slowed launches are named after */
        a->fed += launched(ev, (uint32_t)i);
        a->host += ex;
        a->slow_t += d;
        a->slow_usual += rare ? 0 : usual;
        /* the walk of cost_slow_launches for the steps whose calls of the
         * API are slow as a whole (the finding's test), not for every tail */
        if (!is_alloc_api(teller_store_str(st, nm)) && step_median(A, nm, ev->step[i], ev->source[i]) > 2.0 * usual + 4000.0) {
            if (TELLER_GROW(A->lost, A->lcap, A->nlost + 1))
                goto out;
            A->lost[A->nlost++] =
                (lost_t){ev->source[i], ev->step[i], (uint32_t)(a - A->acc), ev->start_ns[i] + ev->dur_ns[i], ex};
        }
        double idle = diag_idle_in(&S->gpu, ev->source[i], ev->start_ns[i], ev->start_ns[i] + ev->dur_ns[i]);
        if (ex > idle)
            ex = idle; /* the GPU went on with earlier work meanwhile */
        if (ex <= 0)
            continue;
        ex -= diag_spend_lateness(&S->waits, S->wait_left, ev->source[i], ev->step[i], ev->start_ns[i] + ev->dur_ns[i], ex);
        if (ex <= 0)
            continue;
        if (!a->n)
            a->event = (uint32_t)i; /* the first call that cost something */
        a->n++;
        a->excess += ex;
        a->t += d;
        a->usual += rare ? 0 : usual;
    }
    rc = 0;
out:
    kmap_free(&seen);
    return rc;
}

/* A host slowed in its launch calls launched everything after them late;
 * the GPU's idle time during the calls misses what a GPU fed ahead ran on
 * from its queue and idled for later, where it caught up with the host.
 * What a step's slow launches on a rank cost is at least how much earlier
 * the step would have ended had the host not lost that time (stall.c),
 * shared among their APIs by what each lost. */
static int cost_slow_launches(apiscan *A)
{
    const dctx *D = A->D;
    lost_t *lost = A->lost;
    acc_t *acc = A->acc;
    size_t nlost = A->nlost;
    int64_t *at = malloc((nlost + 1) * sizeof *at);
    double *amt = malloc((nlost + 1) * sizeof *amt);
    diag_gpuops *G = NULL;
    int rc = -1;
    if (!at || !amt)
        goto out;
    teller_sort(lost, nlost, sizeof *lost, lost_cmp);
    for (size_t q = 0, r; q < nlost; q = r) {
        size_t n = 0;
        for (r = q; r < nlost && lost[r].src == lost[q].src && lost[r].step == lost[q].step; r++) {
            at[n] = lost[r].at;
            amt[n++] = lost[r].amt;
        }
        if (q == 0 || lost[q].src != lost[q - 1].src) {
            diag_gpuops_free(G);
            if (!(G = diag_gpuops_create(D, &A->S->waits, lost[q].src)))
                goto out;
        }
        double cost = diag_host_delay_cost(D, G, lost[q].src, lost[q].step, at, amt, n, A->S->waits.wait), had = 0, all = 0;
        for (size_t j = q; j < r; j++)
            if (acc[lost[j].slot].grp != q + 1) { /* each API once */
                acc[lost[j].slot].grp = q + 1;
                had += acc[lost[j].slot].excess;
                all += acc[lost[j].slot].host;
            }
        if (cost <= had || all <= 0)
            continue;
        for (size_t j = q; j < r; j++)
            if (acc[lost[j].slot].grp == q + 1) {
                acc_t *a = &acc[lost[j].slot];
                a->grp = 0;
                a->excess += (cost - had) * a->host / all;
                if (a->t <= 0) { /* none cost anything by the GPU's idling: all slow calls say how slow */
                    a->t = a->slow_t;
                    a->usual = a->slow_usual;
                }
            }
    }
    rc = 0;
out:
    free(at);
    free(amt);
    diag_gpuops_free(G);
    return rc;
}

/* The tallies that are findings, in tally order. */
static int api_findings(apiscan *A, finds *out)
{
    const dctx *D = A->D;
    const teller_store *st = D->st;
    for (size_t ix = 0; ix < A->slot.n; ix++) {
        const acc_t *a = &A->acc[ix];
        /* rare allocations are a finding even when they cost the step
         * nothing (the GPU waited for a peer meanwhile): an OOM's frees are
         * facts its log line confirms */
        if (a->excess <= 0 && !a->rare)
            continue;
        int det = is_alloc_api(teller_store_str(st, a->name)) ? TELLER_FAULT_MALLOC_STORM : TELLER_FAULT_LAUNCH_LATENCY;
        /* slow calls are a fault when the step's calls are slow as a whole
         * (its median call), not when a tail of calls is: every run has
         * launches and allocations that wait on a lock or a page fault;
         * a rare allocation is judged against not happening at all */
        double run_med = usual_call(D, a->name, run_median(A->in, a->name));
        if (!a->rare && step_median(A, a->name, a->step, a->src) <= 2.0 * run_med + 4000.0)
            continue;
        double usual = a->usual > 0 ? a->usual : 1000.0;
        cand c = {.det = det, .rank = teller_store_source_c(st, a->src)->rank, .name = a->name,
                  .layer = D->ev->layer[a->event], .excess = a->excess, .ratio = a->t / usual, .actual = a->t,
                  .usual = a->usual, .event = a->event, .peer = -1, .host_delay = a->host};
        if (det == TELLER_FAULT_MALLOC_STORM)
            c.calls = a->slow;
        else
            c.launched = a->fed;
        if (finds_add(out, a->step, &c))
            return -1;
    }
    return 0;
}

static int api_calls_run(const dctx *D, diag_state *S, size_t src, finds *out)
{
    apiscan A = {.D = D, .S = S, .src = src, .in = S->apis};
    int rc = step_medians(&A) || tally_calls(&A) || cost_slow_launches(&A) || api_findings(&A, out) ? -1 : 0;
    free(A.acc);
    free(A.lost);
    diag_groups_free(&A.step_durs);
    free(A.step_med);
    kmap_free(&A.slot);
    return rc;
}

/* Slow launches of several APIs on one rank are one finding, named after
 * the API whose slowed calls launched the most GPU work (a graph launch
 * feeds hundreds of kernels; in eager steps the most used launch call). */
static size_t merge_launches(const dctx *D, cand *c, const size_t *idx, size_t n)
{
    (void)D;
    size_t best = idx[0];
    double ex = 0, t = 0, u = 0, host = 0;
    for (size_t q = 0; q < n; q++) {
        const cand *x = &c[idx[q]];
        ex += x->excess;
        host += x->host_delay;
        t += x->actual;
        u += x->usual;
        if (x->launched > c[best].launched || (x->launched == c[best].launched && x->excess > c[best].excess))
            best = idx[q];
    }
    c[best].excess = ex;
    c[best].host_delay = host;
    if (u > 0)
        c[best].ratio = t / u;
    return best;
}

/* Allocation calls on one rank: emptying the cache (five or more frees,
 * more than allocations) after an allocation is an OOM retry; otherwise an
 * allocator storm. Named after the allocation call. */
static size_t classify_malloc(const dctx *D, cand *c, const size_t *idx, size_t n)
{
    size_t mi = SIZE_MAX;
    double sum = 0, host = 0;
    uint32_t frees = 0, mallocs = 0;
    for (size_t q = 0; q < n; q++) {
        const cand *x = &c[idx[q]];
        sum += x->excess;
        host += x->host_delay;
        if (strstr(teller_store_str(D->st, x->name), "Free")) {
            frees += x->calls;
        } else {
            mallocs += x->calls;
            mi = idx[q];
        }
    }
    if (mi == SIZE_MAX)
        return SIZE_MAX;
    c[mi].excess = sum;
    c[mi].host_delay = host;
    c[mi].det = frees >= 5 && frees > mallocs ? TELLER_FAULT_OOM : TELLER_FAULT_MALLOC_STORM;
    return mi;
}

/* A host stall on a rank whose step also shows an allocator or OOM finding
 * is that finding's handling (an OOM retry empties the cache between its
 * calls), not contention: it folds into it. */
static void fold_stalls_into_allocations(step_acc *s)
{
    for (size_t a = 0; a < s->n; a++) {
        if ((s->c[a].det != TELLER_FAULT_OOM && (s->c[a].det != TELLER_FAULT_MALLOC_STORM || s->c[a].excess <= 0)) ||
            s->c[a].reference)
            continue; /* allocations that cost nothing handled nothing, unless they were an OOM's */
        for (size_t b = 0; b < s->n; b++)
            if (s->c[b].det == TELLER_FAULT_CPU_CONTENTION && s->c[b].rank == s->c[a].rank && !s->c[b].reference) {
                s->c[a].excess += s->c[b].excess;
                s->c[b].det = TELLER_FAULT_NONE;
            }
    }
}

static int api_calls_merge(const dctx *D, diag_state *S, uint32_t k)
{
    if (merge_by_rank(D, &S->steps[k], TELLER_FAULT_LAUNCH_LATENCY, merge_launches) ||
        merge_by_rank(D, &S->steps[k], TELLER_FAULT_MALLOC_STORM, classify_malloc))
        return -1;
    fold_stalls_into_allocations(&S->steps[k]);
    return 0;
}

const diag_detector diag_row_api_calls = {
    .name = "api_calls", .scope = DIAG_PER_SOURCE, .round = 2,
    .reads = DIAG_S_GPU_BUSY | DIAG_S_WAITS | DIAG_S_WAIT_LEFT, .writes = DIAG_S_WAIT_LEFT | DIAG_S_STEPS,
    .prepare = apis_prepare, .run = api_calls_run, .merge = api_calls_merge, .release = apis_release};
