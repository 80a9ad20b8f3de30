/*
 * requests.c - per-request lifecycle and latency breakdown (requests.h).
 *
 * Three passes over what the run carries:
 *   1. the step table: each step's window over all ranks and its batch
 *      composition parsed from the step annotation (and request ids when
 *      the annotation lists them, as contrib/teller_nvtx does);
 *   2. the service logs: request lines by id, with times moved onto node
 *      0's clock by the log aligner;
 *   3. the join: observed ids from annotations win; otherwise the steps are
 *      inferred by replaying first-come-first-served continuous batching
 *      against each step's composition (docs/REQUESTS.md explains the
 *      replay and its limits). Then every request's breakdown.
 * Nothing here reads a simulator's truth.
 */
#include <assert.h>
#include <ctype.h>
#include <stdarg.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "teller/logs.h"
#include "teller/requests.h"
#include "teller/tree.h"
#include "../util/kmap.h"
#include "../util/vec.h"

#define SEC_NS 1000000000LL

/* ---- a growable request set with an id index ---- */

typedef struct rq {
    teller_request   r;
    size_t           cap;
    int64_t          fin_log_first;
    int64_t          fin_by;     /* the latest its Finished line says it can have finished, INT64_MIN unknown */
    uint32_t         nfinish;
    uint32_t         order;      /* first log line order, for FCFS */
    int              seen_recv;
} rq;

typedef struct reqset {
    rq       *v;
    size_t    n, cap;
    uint32_t *slot; /* open addressing: index + 1, 0 empty */
    size_t    nslot;
    char    **strs; /* owned id strings */
    size_t    nstrs, strs_cap;
} reqset;

static int rehash(reqset *S, size_t nslot)
{
    uint32_t *slot = calloc(nslot, sizeof *slot);
    if (!slot)
        return -1;
    for (size_t i = 0; i < S->n; i++) {
        const char *id = S->v[i].r.id;
        size_t h = (size_t)kmap_hash_bytes(id, strlen(id)) & (nslot - 1);
        while (slot[h])
            h = (h + 1) & (nslot - 1);
        slot[h] = (uint32_t)i + 1;
    }
    free(S->slot);
    S->slot = slot;
    S->nslot = nslot;
    return 0;
}

/* The request of id[0..n); created when absent. NULL when out of memory. */
static rq *reqset_get(reqset *S, const char *id, size_t n, int create)
{
    if (S->nslot) {
        size_t h = (size_t)kmap_hash_bytes(id, n) & (S->nslot - 1);
        while (S->slot[h]) {
            rq *q = &S->v[S->slot[h] - 1];
            if (strlen(q->r.id) == n && !memcmp(q->r.id, id, n))
                return q;
            h = (h + 1) & (S->nslot - 1);
        }
    }
    if (!create)
        return NULL;
    if ((S->n + 1) * 2 > S->nslot && rehash(S, S->nslot ? S->nslot * 2 : 64))
        return NULL;
    if (TELLER_GROW(S->v, S->cap, S->n + 1) || TELLER_GROW(S->strs, S->strs_cap, S->nstrs + 1))
        return NULL;
    char *s = malloc(n + 1);
    if (!s)
        return NULL;
    memcpy(s, id, n);
    s[n] = 0;
    S->strs[S->nstrs++] = s;
    rq *q = &S->v[S->n];
    memset(q, 0, sizeof *q);
    q->r.id = s;
    q->r.arrival_ns = q->r.arrival_lo_ns = q->r.arrival_hi_ns = INT64_MIN;
    q->r.log_received_ns = q->r.log_finished_ns = q->r.finish_ns = q->fin_by = INT64_MIN;
    q->r.max_tokens = -1;
    q->r.latency_ns = -1;
    q->r.worst_step = TELLER_NONE;
    q->fin_log_first = INT64_MIN;
    q->order = (uint32_t)S->n;
    size_t h = (size_t)kmap_hash_bytes(id, n) & (S->nslot - 1);
    while (S->slot[h])
        h = (h + 1) & (S->nslot - 1);
    S->slot[h] = (uint32_t)S->n + 1;
    S->n++;
    return q;
}

static int add_step(rq *q, uint32_t step, int prefill, int32_t tokens)
{
    if (TELLER_GROW(q->r.steps, q->cap, (size_t)q->r.nsteps + 1))
        return -1;
    teller_req_step *s = &q->r.steps[q->r.nsteps++];
    memset(s, 0, sizeof *s);
    s->step = step;
    s->prefill = (uint8_t)prefill;
    s->tokens = tokens;
    q->r.prefill_steps += prefill != 0;
    return 0;
}

/* ---- notes ---- */

static int note(teller_requests *R, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int note(teller_requests *R, const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    char **n = realloc(R->notes, (R->nnotes + 1) * sizeof *n);
    if (!n)
        return -1;
    R->notes = n;
    size_t len = strlen(buf);
    if (!(n[R->nnotes] = malloc(len + 1)))
        return -1;
    memcpy(n[R->nnotes++], buf, len + 1);
    return 0;
}

/* ---- step annotations ---- */

/* The batch composition a step annotation states (tree.h
 * teller_step_classify): vLLM's sequences and tokens; SGLang's
 * step[DECODE bs=N] all N decoding (EXTEND/MIXED give only the total). */
static void parse_marker(const char *m, teller_req_stepinfo *si)
{
    teller_step_class c;
    teller_step_classify(m, &c);
    si->prefill_seqs = c.prefill_seqs;
    si->prefill_tokens = c.prefill_tokens;
    si->decode_seqs = c.decode_seqs;
}

/* ---- logs ---- */

typedef struct log_ctx {
    const teller_store *st;
    reqset             *S;
    teller_requests    *R;
    int32_t             node;
    uint64_t            request_lines, preempt_lines, id_lines_no_time;
    int64_t             tmin, tmax;
    uint32_t            order;
} log_ctx;

static int has(const teller_log_str *m, const char *w)
{
    size_t n = strlen(w);
    if (m->n < n)
        return 0;
    for (size_t i = 0; i + n <= m->n; i++)
        if (m->p[i] == w[0] && !memcmp(m->p + i, w, n))
            return 1;
    return 0;
}

static int on_record(void *vctx, const teller_log_record *rec)
{
    log_ctx *c = vctx;
    if (has(&rec->msg, "is preempted") || has(&rec->msg, "Retract requests"))
        c->preempt_lines++;
    if (!rec->num_requests)
        return 0;
    int kind = has(&rec->msg, "Received request") ? 1 : has(&rec->msg, "Added request") ? 2
             : has(&rec->msg, "Finished request") ? 3 : has(&rec->msg, "Aborted request") ? 4 : 0;
    if (!kind)
        return 0;
    teller_log_align al;
    teller_log_align_record(c->st, c->node, rec, &al);
    if (al.time_ns == INT64_MIN) {
        c->id_lines_no_time++;
        return 0;
    }
    /* the aligner puts a whole-second time at the middle of its second; the bounds want its start.
     * A `teller run` capture time (TELLER_LOGF_CAPTURE_TIME) is never NO_SUBSEC: exact, [t, t+1 ns) */
    if (rec->flags & TELLER_LOGF_NO_SUBSEC)
        al.time_ns -= SEC_NS / 2;
    rq *q = reqset_get(c->S, rec->request[0].p, rec->request[0].n, 1);
    if (!q)
        return -TELLER_ERR_NOMEM;
    c->request_lines++;
    if (al.time_ns < c->tmin)
        c->tmin = al.time_ns;
    if (al.time_ns > c->tmax)
        c->tmax = al.time_ns;
    int64_t hi = al.time_ns + ((rec->flags & TELLER_LOGF_NO_SUBSEC) ? SEC_NS : 1);
    if (kind == 1 || kind == 2) {
        if (!q->seen_recv) {
            q->seen_recv = 1;
            q->order = c->order++;
            q->r.log_received_ns = al.time_ns;
            q->r.arrival_lo_ns = al.time_ns;
            q->r.arrival_hi_ns = hi;
        } else if (kind == 1 && al.time_ns < q->r.arrival_lo_ns) {
            q->r.log_received_ns = q->r.arrival_lo_ns = al.time_ns;
        }
        q->r.flags |= TELLER_REQF_ARRIVAL_LOG;
        if (kind == 1) {
            for (size_t i = 0; i + 11 < rec->msg.n; i++)
                if (!memcmp(rec->msg.p + i, "max_tokens=", 11) && isdigit((unsigned char)rec->msg.p[i + 11])) {
                    /* the digits within the message (its slice may lie in a
                     * buffer that goes on, unterminated) */
                    long long v = 0;
                    for (size_t j = i + 11; j < rec->msg.n && isdigit((unsigned char)rec->msg.p[j]) && v <= INT32_MAX; j++)
                        v = v * 10 + (rec->msg.p[j] - '0');
                    if (v <= INT32_MAX) /* past that: no bound the replay can use */
                        q->r.max_tokens = (int32_t)v;
                    break;
                }
        }
    } else {
        if (kind == 4)
            q->r.flags |= TELLER_REQF_ABORTED;
        if (q->nfinish++ == 0) {
            q->r.log_finished_ns = al.time_ns;
            /* a whole-second stamp reads as its second's middle: it may have finished until the second's end */
            q->fin_by = al.time_ns == INT64_MIN ? INT64_MIN
                                                : al.time_ns + (rec->flags & TELLER_LOGF_NO_SUBSEC ? SEC_NS / 2 : 0);
        } else
            q->r.flags |= TELLER_REQF_FINISH_TWICE;
    }
    return 0;
}

/* ---- the replay ---- */

static int cmp_order(const void *a, const void *b)
{
    const rq *x = *(rq *const *)a, *y = *(rq *const *)b;
    if (x->r.arrival_lo_ns != y->r.arrival_lo_ns)
        return x->r.arrival_lo_ns < y->r.arrival_lo_ns ? -1 : 1;
    return x->order < y->order ? -1 : x->order > y->order;
}

/* Whether step k shows a cut prefill chunk plainly: it holds a prefill,
 * the next step holds one too (where the chunk continues), and exactly one
 * of its prefill sequences is not a decoder in the next step (the cut
 * chunk; a step that recomputed leaves more over, and a decoder finishing
 * in the step would hide one more). */
static int cut_candidate(const teller_requests *R, size_t k)
{
    const teller_req_stepinfo *a = &R->steps[k];
    if (a->prefill_tokens < 0 || a->decode_seqs < 0 || a->prefill_seqs <= 0 || k + 1 >= R->nsteps)
        return 0;
    const teller_req_stepinfo *b = &R->steps[k + 1];
    return b->prefill_seqs > 0 && b->decode_seqs >= 0 && a->prefill_seqs - (b->decode_seqs - a->decode_seqs) == 1;
}

/* The token budget per step, if the run shows one: the largest step token
 * total that at least two cut candidates reach, 0 when none. *least: the
 * least the budget can be, the largest total of a step whose prefill
 * sequences are all decoders in the next step (it cut nothing and
 * recomputed nothing, so it was within the budget); a total below it is
 * no budget, however many steps reach it by chance. */
static int64_t token_budget(const teller_requests *R, int64_t *least)
{
    *least = 0;
    for (size_t k = 0; k + 1 < R->nsteps; k++) {
        const teller_req_stepinfo *a = &R->steps[k];
        int64_t t = (int64_t)a->prefill_tokens + a->decode_seqs;
        if (a->prefill_tokens >= 0 && a->prefill_seqs >= 0 && a->decode_seqs >= 0 && R->steps[k + 1].decode_seqs >= 0 &&
            a->prefill_seqs <= R->steps[k + 1].decode_seqs - a->decode_seqs && t > *least)
            *least = t;
    }
    int64_t best = 0;
    for (size_t k = 0; k < R->nsteps; k++) {
        if (!cut_candidate(R, k))
            continue;
        int64_t t = (int64_t)R->steps[k].prefill_tokens + R->steps[k].decode_seqs;
        if (t <= best || t < *least)
            continue;
        for (size_t j = k + 1; j < R->nsteps; j++)
            if (cut_candidate(R, j) && (int64_t)R->steps[j].prefill_tokens + R->steps[j].decode_seqs == t) {
                best = t;
                break;
            }
    }
    return best;
}

/* The replay between steps: the running decoders (indices into ord), the
 * tokens each request has left to decode (max_tokens, -1 unknown), the
 * next request waiting, the request whose prefill chunk was cut (-1
 * none), and the run's token budget (token_budget). */
typedef struct replay_state {
    rq     **ord;
    size_t   nord;
    size_t  *dec, nd;
    int32_t *left;
    size_t   next;
    long     carry;
    int64_t  budget, least;
} replay_state;

/* Fits the running decoders to step si's annotation. More than it says
 * means some stopped before max_tokens (EOS): dropped are those whose
 * Finished line says they had finished before the step began, else those
 * with the fewest tokens left, most likely to have stopped. Fewer are
 * decoders no request accounts for (unknown_seqs), unless the step is an
 * idle engine's dummy decode. 1 when the replay disagreed. */
static int fit_decoders(replay_state *S, teller_req_stepinfo *si)
{
    if ((size_t)si->decode_seqs < S->nd) {
        while ((size_t)si->decode_seqs < S->nd) {
            size_t w = 0;
            int done_w = 0;
            for (size_t j = 0; j < S->nd; j++) {
                const rq *q = S->ord[S->dec[j]];
                int done = q->fin_by != INT64_MIN && q->fin_by <= si->start_ns;
                int fewer = S->left[S->dec[j]] >= 0 && (S->left[S->dec[w]] < 0 || S->left[S->dec[j]] < S->left[S->dec[w]]);
                if (j == 0 || done > done_w || (done == done_w && fewer)) {
                    w = j;
                    done_w = done;
                }
            }
            for (size_t j = w; j + 1 < S->nd; j++)
                S->dec[j] = S->dec[j + 1];
            S->nd--;
        }
        return 1;
    }
    if ((size_t)si->decode_seqs > S->nd && !(S->nd == 0 && si->prefill_seqs == 0 && si->decode_seqs == 1))
        si->unknown_seqs = si->decode_seqs - (int32_t)S->nd;
    return 0;
}

/* Gives every running decoder its token of step k, *fin: how many of them
 * reached their max_tokens. 0, or -1 out of memory. */
static int decode_step(replay_state *S, uint32_t k, size_t *fin)
{
    *fin = 0;
    for (size_t j = 0; j < S->nd; j++) {
        if (add_step(S->ord[S->dec[j]], k, 0, 1))
            return -1;
        if (S->left[S->dec[j]] > 0 && --S->left[S->dec[j]] == 0)
            (*fin)++;
    }
    return 0;
}

/* How many prefills step k completed, from the next step's decoders
 * (nrun: the decoders that go on past this step); at the last step, every
 * chunk. */
static int32_t completions(const teller_requests *R, size_t k, size_t nrun)
{
    if (k + 1 >= R->nsteps || R->steps[k + 1].decode_seqs < 0)
        return R->steps[k].prefill_seqs;
    int32_t c = R->steps[k + 1].decode_seqs - (int32_t)nrun;
    if (R->steps[k + 1].prefill_seqs == 0 && R->steps[k + 1].decode_seqs == 1 && nrun == 0)
        c = c > 0 ? c : 0; /* a dummy decode of an idle engine */
    return c < 0 ? 0 : c;
}

/* Splits step k's prefill sequences that did not complete (of c that did)
 * into a cut chunk (*trunc) and recomputation of preempted work, sets the
 * step's recompute_seqs and truncated, and returns how many waiting
 * requests it admitted. A cut chunk continues in the next step, so that
 * step must hold a prefill; and the scheduler cut it where the budget ran
 * out, so the step's total is the budget (while the budget is unknown, no
 * less than its least). A total past the budget is recomputation on top of
 * what was scheduled: no cut is taken there (the scheduled part would have
 * to fill the budget to the token too). */
static int32_t split_prefills(const teller_requests *R, const replay_state *S, size_t k, int32_t c, int32_t *trunc)
{
    teller_req_stepinfo *si = &R->steps[k];
    int32_t n = si->prefill_seqs, have = S->carry >= 0, phantom = 0;
    int32_t diff = n - c;
    int64_t total = si->prefill_tokens >= 0 ? (int64_t)si->prefill_tokens + si->decode_seqs : -1;
    int next_prefills = k + 1 < R->nsteps && R->steps[k + 1].prefill_seqs > 0;
    int filled = S->budget ? total == S->budget : total < 0 || total >= S->least;
    *trunc = 0;
    if (diff > 0) {
        *trunc = next_prefills && filled && (diff == 1 || S->budget);
        phantom = diff - *trunc;
    }
    int32_t admit = n - have - phantom;
    if (admit < 0) {
        phantom += admit;
        admit = 0;
    }
    if (phantom < 0)
        phantom = 0;
    si->recompute_seqs = phantom;
    si->truncated = (uint8_t)*trunc;
    return admit;
}

/* Admits up to admit waiting requests in arrival order into step k, each
 * prefilling `each` tokens, and bounds their arrival by the steps: how
 * many it admitted, or -1 out of memory. */
static int32_t admit_waiting(teller_requests *R, replay_state *S, size_t k, int32_t admit, int32_t each)
{
    const teller_req_stepinfo *si = &R->steps[k];
    int32_t got = 0;
    while (got < admit && S->next < S->nord) {
        rq *q = S->ord[S->next];
        /* a request whose log line is later than this step cannot be in it */
        if (q->r.arrival_lo_ns != INT64_MIN && q->r.arrival_lo_ns > si->end_ns)
            break;
        if (add_step(q, (uint32_t)k, 1, each))
            return -1;
        /* arrival: after the previous step was scheduled (it would have been taken then),
         * unless that step's budget was exhausted; never after this one started */
        int64_t lo = k > 0 && !R->steps[k - 1].truncated ? R->steps[k - 1].start_ns : INT64_MIN;
        if (k == 0)
            lo = si->start_ns; /* waiting before the trace began: queueing before it is unseen */
        if (q->r.arrival_lo_ns == INT64_MIN || lo > q->r.arrival_lo_ns)
            q->r.arrival_lo_ns = lo;
        if (q->r.arrival_hi_ns == INT64_MIN || si->start_ns < q->r.arrival_hi_ns)
            q->r.arrival_hi_ns = si->start_ns;
        if (q->r.arrival_lo_ns > q->r.arrival_hi_ns) /* its log line came before the trace began: that time stands */
            q->r.arrival_lo_ns = q->r.arrival_hi_ns;
        q->r.flags |= TELLER_REQF_ARRIVAL_INFERRED;
        S->next++;
        got++;
    }
    return got;
}

/* The decoders of the next step: those with tokens left, the carried
 * request unless it is cut again, and the requests admitted from
 * first_new on, but for the one whose chunk was cut (cut: the step cut
 * one), which is carried instead. */
static void next_state(replay_state *S, size_t first_new, int cut)
{
    size_t nd2 = 0;
    for (size_t j = 0; j < S->nd; j++)
        if (S->left[S->dec[j]] != 0)
            S->dec[nd2++] = S->dec[j];
    S->nd = nd2;
    long last = S->next > first_new ? (long)(S->next - 1) : S->carry;
    long newcarry = cut ? last : -1;
    if (S->carry >= 0 && S->carry != newcarry)
        S->dec[S->nd++] = (size_t)S->carry;
    for (size_t i = first_new; i < S->next; i++)
        if ((long)i != newcarry)
            S->dec[S->nd++] = i;
    S->carry = newcarry;
}

/* Replays step k: decoders, then the cut prefill, then admissions, and
 * counts the step as mismatched when the replay disagreed with its
 * annotation (once). 0, or -1 out of memory. */
static int replay_step(teller_requests *R, replay_state *S, size_t k)
{
    teller_req_stepinfo *si = &R->steps[k];
    if (si->prefill_seqs < 0 || si->decode_seqs < 0) {
        R->mismatched_steps++;
        return 0;
    }
    int off = fit_decoders(S, si);
    size_t fin;
    if (decode_step(S, (uint32_t)k, &fin))
        return -1;
    int32_t trunc;
    int32_t admit = split_prefills(R, S, k, completions(R, k, S->nd - fin), &trunc);
    int32_t have = S->carry >= 0;
    int32_t each = si->prefill_tokens >= 0 && si->prefill_seqs > 0 ? si->prefill_tokens / si->prefill_seqs : -1;
    size_t first_new = S->next;
    if (have && add_step(S->ord[S->carry], (uint32_t)k, 1, each))
        return -1;
    int32_t got = admit_waiting(R, S, k, admit, each);
    if (got < 0)
        return -1;
    si->unknown_seqs += admit - got;
    si->known_seqs = (int32_t)S->nd + have + got;
    off |= admit - got || si->unknown_seqs;
    R->mismatched_steps += (uint32_t)off;
    next_state(S, first_new, trunc && have + admit > 0);
    return 0;
}

/* Replays FCFS continuous batching: at each step every running decoder
 * gets one token, then the prefill that was cut by the token budget
 * continues, then waiting requests are admitted in arrival order. The
 * numbers of admissions and cut chunks come from the composition of this
 * step and the next (decoders next = decoders now - finished now + prefills
 * completed now); prefill sequences no request accounts for are
 * recomputation of preempted work. Requests still decoding or prefilling
 * at the end are marked unfinished. 0, or -1 out of memory. */
static int replay(teller_requests *R, rq **ord, size_t nord)
{
    replay_state S = {.ord = ord, .nord = nord, .carry = -1};
    S.dec = malloc((nord + 1) * sizeof *S.dec);
    S.left = malloc((nord + 1) * sizeof *S.left);
    int rc = -1;
    if (S.dec && S.left) {
        S.budget = token_budget(R, &S.least);
        for (size_t i = 0; i < nord; i++)
            S.left[i] = ord[i]->r.max_tokens;
        rc = 0;
        for (size_t k = 0; rc == 0 && k < R->nsteps; k++)
            rc = replay_step(R, &S, k);
    }
    if (rc == 0) {
        for (size_t j = 0; j < S.nd; j++)
            ord[S.dec[j]]->r.flags |= TELLER_REQF_UNFINISHED;
        if (S.carry >= 0)
            ord[S.carry]->r.flags |= TELLER_REQF_UNFINISHED;
    }
    free(S.dec);
    free(S.left);
    return rc;
}

/* ---- breakdown ---- */

static const teller_diag_step *diag_step(const teller_diagnosis *d, uint32_t step)
{
    if (!d)
        return NULL;
    if (step < d->n && d->steps[step].pred.step == step)
        return &d->steps[step];
    for (size_t i = 0; i < d->n; i++)
        if (d->steps[i].pred.step == step)
            return &d->steps[i];
    return NULL;
}

static void breakdown(teller_requests *R, teller_request *q, const teller_diagnosis *diag)
{
    if (!q->nsteps)
        return;
    int64_t worst_ex = -1, worst_len = -1, counted_to = INT64_MIN;
    for (uint32_t i = 0; i < q->nsteps; i++) {
        teller_req_step *s = &q->steps[i];
        const teller_req_stepinfo *si = &R->steps[s->step];
        s->shared_ns = si->end_ns - si->start_ns;
        /* the phases count each moment once: a step's window overlaps the
         * one before when its host began while the GPU still ran the last
         * (or the ranks are offset), and the parts must add up to the
         * latency */
        int64_t from = si->start_ns > counted_to ? si->start_ns : counted_to;
        int64_t own = si->end_ns > from ? si->end_ns - from : 0;
        if (si->end_ns > counted_to)
            counted_to = si->end_ns;
        int64_t tot = si->prefill_tokens >= 0 && si->decode_seqs >= 0 ? (int64_t)si->prefill_tokens + si->decode_seqs : -1;
        int32_t seqs = si->prefill_seqs >= 0 && si->decode_seqs >= 0 ? si->prefill_seqs + si->decode_seqs : -1;
        if (s->tokens >= 0 && tot > 0)
            s->share = (double)s->tokens / (double)tot;
        else
            s->share = seqs > 0 ? 1.0 / seqs : 0.0;
        s->attributed_ns = (int64_t)(s->share * (double)s->shared_ns);
        q->attributed_ns += s->attributed_ns;
        if (s->prefill)
            q->prefill_ns += own;
        else
            q->decode_ns += own;
        if (si->recompute_seqs > 0)
            q->flags |= TELLER_REQF_RECOMPUTE;
        const teller_diag_step *d = diag_step(diag, s->step);
        if (d && d->pred.abnormal) {
            q->abnormal_ns += own;
            q->excess_ns += d->excess_ns;
            q->abnormal_steps++;
            q->flags |= TELLER_REQF_DELAYED;
            if (d->excess_ns > worst_ex) {
                worst_ex = d->excess_ns;
                q->worst_step = s->step;
            }
        } else if (worst_ex < 0 && s->shared_ns > worst_len) {
            worst_len = s->shared_ns;
            q->worst_step = s->step;
        }
    }
    const teller_req_stepinfo *first = &R->steps[q->steps[0].step];
    const teller_req_stepinfo *last = &R->steps[q->steps[q->nsteps - 1].step];
    if (!(q->flags & TELLER_REQF_UNFINISHED))
        q->finish_ns = last->end_ns;
    if (q->arrival_lo_ns != INT64_MIN && q->arrival_hi_ns != INT64_MIN) {
        int64_t lo = q->arrival_lo_ns, hi = q->arrival_hi_ns;
        if (lo > hi)
            lo = hi; /* contradicting evidence: trust the step */
        q->arrival_ns = lo + (hi - lo) / 2;
    } else if (q->arrival_hi_ns != INT64_MIN) {
        q->arrival_ns = q->arrival_hi_ns;
    } else {
        q->arrival_ns = first->start_ns; /* no log line: queueing unseen */
        q->flags |= TELLER_REQF_ARRIVAL_INFERRED;
    }
    if (q->arrival_ns > first->start_ns)
        q->arrival_ns = first->start_ns;
    q->queue_ns = first->start_ns - q->arrival_ns;
    if (q->log_finished_ns != INT64_MIN && q->finish_ns != INT64_MIN &&
        (q->log_finished_ns > q->finish_ns + SEC_NS || q->log_finished_ns + SEC_NS < q->finish_ns))
        q->flags |= TELLER_REQF_FINISH_MISMATCH;
    int finished = q->finish_ns != INT64_MIN;
    if (finished) {
        q->latency_ns = q->finish_ns - q->arrival_ns;
        q->stall_ns = q->latency_ns - q->queue_ns - q->prefill_ns - q->decode_ns;
        if (q->stall_ns < 0)
            q->stall_ns = 0;
    }
    /* the dominant cause: an abnormal step that cost 5 % of the latency or
     * more, or any abnormal step of a request that never finished (stuck
     * in a hang, say) */
    if (q->excess_ns > 0 && q->worst_step != TELLER_NONE && (!finished || q->excess_ns * 20 >= q->latency_ns)) {
        const teller_diag_step *d = diag_step(diag, q->worst_step);
        char op[96] = "";
        if (d && d->pred.ncand)
            snprintf(op, sizeof op, " at rank %d %.80s", d->pred.cand[0].rank, d->pred.cand[0].op);
        /* the step's own time over its usual; a sum over several steps is said as one */
        char own[24], all[24], more[64] = "";
        teller_fmt_dur(own, sizeof own, d ? (double)d->excess_ns : 0);
        if (q->abnormal_steps > 1)
            snprintf(more, sizeof more, "; %u abnormal steps, +%s in all", q->abnormal_steps,
                     teller_fmt_dur(all, sizeof all, (double)q->excess_ns));
        snprintf(q->cause, sizeof q->cause, "abnormal step %u: %.31s%s (+%s over its usual%s)",
                 q->worst_step + (diag ? diag->step_base : 0),
                 d && d->fault[0] ? d->fault : d ? d->pred.fault_type : "fault", op, own, more);
        return;
    }
    if (!finished)
        return;
    const char *what[4] = {"queue (waiting for a batch slot)", "prefill", "decode", "stalls between its steps"};
    int64_t v[4] = {q->queue_ns, q->prefill_ns, q->decode_ns, q->stall_ns};
    int b = 0;
    for (int i = 1; i < 4; i++)
        if (v[i] > v[b])
            b = i;
    snprintf(q->cause, sizeof q->cause, "%s", what[b]);
}

/* ---- the build ---- */

teller_req_opts teller_req_defaults(void)
{
    teller_req_opts o;
    memset(&o, 0, sizeof o);
    return o;
}

static void reqset_free(reqset *S, int keep_strs)
{
    if (!keep_strs) {
        for (size_t i = 0; i < S->n; i++)
            free(S->v[i].r.steps);
        for (size_t i = 0; i < S->nstrs; i++)
            free(S->strs[i]);
        free(S->strs);
        free(S->v);
    }
    free(S->slot);
}

/* Reads "reqs=a,b,c" of a shim annotation into the requests. Returns the
 * number of ids, or -1 when out of memory. */
static int trace_ids(reqset *S, const char *m, uint32_t step)
{
    const char *p = strstr(m, "reqs=");
    if (!p)
        return 0;
    p += 5;
    int n = 0;
    while (*p) {
        const char *e = p;
        while (*e && *e != ',' && *e != ' ')
            e++;
        if (e > p) {
            rq *q = reqset_get(S, p, (size_t)(e - p), 1);
            if (!q)
                return -1;
            if (!q->r.nsteps || q->r.steps[q->r.nsteps - 1].step != step) {
                if (add_step(q, step, 0, -1)) /* phase unknown from the annotation */
                    return -1;
            }
            q->r.flags |= TELLER_REQF_STEPS_TRACE;
            n++;
        }
        if (*e != ',')
            break;
        p = e + 1;
    }
    return n;
}

static int cmp_req(const void *a, const void *b)
{
    const teller_request *x = a, *y = b;
    int64_t ax = x->arrival_ns == INT64_MIN ? INT64_MAX : x->arrival_ns;
    int64_t ay = y->arrival_ns == INT64_MIN ? INT64_MAX : y->arrival_ns;
    if (ax != ay)
        return ax < ay ? -1 : 1;
    return strcmp(x->id, y->id);
}

/* The state of one build between its phases (requests.h). */
struct teller_req_builder {
    const teller_store *st;
    teller_req_opts     o;
    teller_requests    *R;
    reqset              S;
    log_ctx             c;      /* the logs' request lines */
    uint32_t            nst;
    int                 markers, id_steps, sglang, full16;
    size_t              before; /* requests the annotations named, before the logs */
    int64_t             span_lo, span_hi;
    int                 replayed; /* the phases' order (requests.h): feed before, finish after */
};

void teller_req_abort(teller_req_builder *b)
{
    if (!b)
        return;
    reqset_free(&b->S, 0);
    teller_requests_free(b->R);
    free(b);
}

teller_status teller_req_begin(const teller_store *st, const teller_req_opts *opts, teller_req_builder **out,
                               teller_error *err)
{
    *out = NULL;
    teller_req_builder *b = calloc(1, sizeof *b);
    teller_requests *R = b ? (b->R = calloc(1, sizeof *R)) : NULL;
    if (!R) {
        free(b);
        return teller_error_set(err, TELLER_ERR_NOMEM, "requests", 0, "out of memory");
    }
    b->st = st;
    b->o = opts ? *opts : teller_req_defaults();
    reqset *S = &b->S;
    /* 1. steps */
    uint32_t nst = b->nst = teller_store_step_count(st);
    const teller_step *rows = teller_store_steps(st);
    size_t nrows = teller_store_num_steps(st);
    R->nsteps = nst;
    R->steps = calloc(nst ? nst : 1, sizeof *R->steps);
    if (!R->steps)
        goto oom;
    for (uint32_t k = 0; k < nst; k++) {
        R->steps[k].step = k;
        R->steps[k].start_ns = INT64_MAX;
        R->steps[k].end_ns = INT64_MIN;
        R->steps[k].prefill_seqs = R->steps[k].prefill_tokens = R->steps[k].decode_seqs = -1;
    }
    for (size_t i = 0; i < nrows; i++) {
        const teller_step *s = &rows[i];
        if (s->step >= nst)
            continue;
        teller_req_stepinfo *si = &R->steps[s->step];
        if (s->start_ns < si->start_ns)
            si->start_ns = s->start_ns;
        if (s->end_ns > si->end_ns)
            si->end_ns = s->end_ns;
        if (s->marker != TELLER_NONE && si->known_seqs != -2) {
            const char *m = teller_store_str(st, teller_store_step_annotation(st, i));
            b->markers++;
            parse_marker(m, si);
            b->sglang |= !strncmp(m, "step[", 5);
            /* ids from the annotation, once per step */
            if (strstr(m, "reqs=")) {
                int n = trace_ids(S, m, s->step);
                if (n < 0)
                    goto oom;
                b->id_steps += n > 0;
                b->full16 += n >= 16;
            }
        }
        if (s->marker != TELLER_NONE)
            si->known_seqs = -2; /* marks "annotation seen" until the replay sets it */
    }
    for (uint32_t k = 0; k < nst; k++)
        R->steps[k].known_seqs = 0;
    if (!nst && note(R, "the trace has no steps: nothing to join requests with"))
        goto oom;
    if (nst && !b->markers && note(R, "the trace has no step annotations (fallback step): no batch composition, "
                                      "request steps cannot be inferred"))
        goto oom;
    if (b->markers) {
        uint32_t parsed = 0;
        for (uint32_t k = 0; k < nst; k++)
            parsed += R->steps[k].prefill_seqs >= 0 && R->steps[k].decode_seqs >= 0;
        if (note(R, "read %d step annotations: batch composition (prefill/decode sequences) for %u of %u steps; "
                    "request ids in annotations: %s",
                 b->markers, parsed, nst, b->id_steps ? "yes" : "none"))
            goto oom;
    }
    b->span_lo = nst ? R->steps[0].start_ns : 0;
    b->span_hi = nst ? R->steps[nst - 1].end_ns : 0;
    b->before = S->n;
    b->c = (log_ctx){.st = st, .S = S, .R = R, .tmin = INT64_MAX, .tmax = INT64_MIN};
    *out = b;
    return TELLER_OK;
oom:
    teller_req_abort(b);
    return teller_error_set(err, TELLER_ERR_NOMEM, "requests", 0, "out of memory");
}

int teller_req_feed(void *builder, const teller_log_record *rec)
{
    teller_req_builder *b = builder;
    assert(!b->replayed);
    return on_record(&b->c, rec);
}

void teller_req_set_node(teller_req_builder *b, int32_t node)
{
    b->c.node = node < 0 ? 0 : node;
}

teller_status teller_req_replay(teller_req_builder *b, const teller_requests **view, teller_error *err)
{
    assert(!b->replayed);
    b->replayed = 1;
    teller_requests *R = b->R;
    reqset *S = &b->S;
    log_ctx *c = &b->c;
    rq **ord = NULL;
    /* 2. logs */
    int other_run = 0;
    if (b->o.nlogs) {
        if (!c->request_lines && note(R, "the logs hold no request lines with ids (vLLM needs --enable-log-requests; "
                                         "SGLang's access lines carry no id)"))
            goto oom;
        if (c->id_lines_no_time && note(R, "%llu request lines without a timestamp were ignored",
                                        (unsigned long long)c->id_lines_no_time))
            goto oom;
        if (c->request_lines && b->nst &&
            (c->tmax < b->span_lo - 2 * SEC_NS || c->tmin > b->span_hi + 2 * SEC_NS)) {
            other_run = 1;
            for (size_t i = b->before; i < S->n; i++)
                S->v[i].r.flags |= TELLER_REQF_OTHER_RUN;
            if (note(R, "the logs' request lines (%.3f s to %.3f s) do not overlap the trace (%.3f s to %.3f s): "
                        "a different run? they are listed but not joined",
                     (double)c->tmin / 1e9, (double)c->tmax / 1e9, (double)b->span_lo / 1e9, (double)b->span_hi / 1e9))
                goto oom;
        }
        if (c->preempt_lines && note(R, "%llu preemption/retraction lines in the logs (they name no request id); "
                                        "recomputation is located from the batch composition",
                                     (unsigned long long)c->preempt_lines))
            goto oom;
    }
    /* 3. join */
    if (b->id_steps) {
        R->source = "trace annotations";
        if (b->full16 && note(R, "%d step annotations list 16 ids, the shim's cap: their id lists may be cut", b->full16))
            goto oom;
    } else if (S->n && !other_run && b->markers) {
        R->source = "logs + batch composition (inferred)";
        ord = malloc(S->n * sizeof *ord);
        if (!ord)
            goto oom;
        size_t nord = 0;
        for (size_t i = 0; i < S->n; i++)
            if (S->v[i].seen_recv)
                ord[nord++] = &S->v[i];
        teller_sort(ord, nord, sizeof *ord, cmp_order);
        int unknown_len = 0;
        for (size_t i = 0; i < nord; i++)
            unknown_len += ord[i]->r.max_tokens < 0;
        if (unknown_len && note(R, "%d requests have no max_tokens in the logs: their finish comes from the "
                                   "decode counts only", unknown_len))
            goto oom;
        if (b->sglang && note(R, "SGLang step annotations give the batch size only (no prefill/decode split for "
                                 "EXTEND/MIXED): those steps cannot be attributed"))
            goto oom;
        if (replay(R, ord, nord))
            goto oom;
        for (size_t i = 0; i < nord; i++)
            if (ord[i]->r.nsteps)
                ord[i]->r.flags |= TELLER_REQF_STEPS_INFERRED;
        if (R->mismatched_steps &&
            note(R, "%u steps disagreed with the replay of the logged requests (requests missing from the logs, "
                    "early stops, or unparsed annotations): their attribution is approximate",
                 R->mismatched_steps))
            goto oom;
    } else {
        R->source = "none";
        if (b->nst && b->markers && !S->n &&
            note(R, "no request ids in the trace annotations or logs: per-request lifecycle is not recoverable "
                    "(run with contrib/teller_nvtx or vLLM --enable-log-requests)"))
            goto oom;
    }
    free(ord);
    *view = R;
    return TELLER_OK;
oom:
    free(ord);
    return teller_error_set(err, TELLER_ERR_NOMEM, "requests", 0, "out of memory");
}

teller_status teller_req_finish(teller_req_builder *b, const teller_diagnosis *diag, teller_requests **out,
                                teller_error *err)
{
    *out = NULL;
    assert(b->replayed);
    teller_requests *R = b->R;
    reqset *S = &b->S;
    /* flags that need the whole picture, then breakdowns */
    uint32_t never = 0, twice = 0, no_recv = 0;
    for (size_t i = 0; i < S->n; i++) {
        teller_request *q = &S->v[i].r;
        if (!S->v[i].seen_recv && (S->v[i].nfinish || !(q->flags & TELLER_REQF_STEPS_TRACE)))
            q->flags |= TELLER_REQF_NO_RECEIVE;
        if (!q->nsteps)
            q->flags |= TELLER_REQF_LOG_ONLY;
        if (q->flags & TELLER_REQF_STEPS_TRACE) {
            /* observed steps: finished when the logs say so, or when its last step is not the trace's last */
            if (q->nsteps && q->steps[q->nsteps - 1].step + 1 >= b->nst && !S->v[i].nfinish)
                q->flags |= TELLER_REQF_UNFINISHED;
        }
        if (q->flags & TELLER_REQF_LOG_ONLY && !(q->flags & TELLER_REQF_OTHER_RUN) && !S->v[i].nfinish)
            q->flags |= TELLER_REQF_UNFINISHED;
        breakdown(R, q, diag);
        never += (q->flags & TELLER_REQF_UNFINISHED) != 0;
        twice += (q->flags & TELLER_REQF_FINISH_TWICE) != 0;
        no_recv += (q->flags & TELLER_REQF_NO_RECEIVE) != 0;
    }
    if (never && note(R, "%u requests have no finish within the trace (latency unknown)", never))
        goto oom;
    if (twice && note(R, "%u requests finish twice in the logs (the first is kept)", twice))
        goto oom;
    if (no_recv && note(R, "%u requests have no received/added line (arrival unknown: queueing unseen)", no_recv))
        goto oom;
    if (!diag && S->n && note(R, "no diagnosis given: abnormal_ns is 0 for every request"))
        goto oom;
    /* hand over */
    R->n = S->n;
    R->req = malloc((S->n ? S->n : 1) * sizeof *R->req);
    if (!R->req)
        goto oom;
    for (size_t i = 0; i < S->n; i++)
        R->req[i] = S->v[i].r;
    teller_sort(R->req, R->n, sizeof *R->req, cmp_req);
    R->owned_ids = S->strs; /* the id strings move into the result */
    R->nowned_ids = S->nstrs;
    free(S->v);
    reqset_free(S, 1);
    free(b);
    *out = R;
    return TELLER_OK;
oom:
    R->n = 0; /* the requests are still the set's */
    teller_req_abort(b);
    return teller_error_set(err, TELLER_ERR_NOMEM, "requests", 0, "out of memory");
}

teller_log_opts teller_req_log_opts(const teller_req_builder *b)
{
    teller_log_opts lo = teller_log_defaults();
    lo.ref_ns = b->o.log_ref_ns ? b->o.log_ref_ns : b->span_lo;
    lo.tz_offset_s = b->o.log_tz_offset_s;
    return lo;
}

teller_status teller_requests_build(const teller_store *st, const teller_req_opts *opts, teller_requests **out,
                                    teller_error *err)
{
    *out = NULL;
    teller_req_builder *b;
    teller_status status = teller_req_begin(st, opts, &b, err);
    if (status != TELLER_OK)
        return status;
    teller_log_opts lo = teller_req_log_opts(b);
    for (size_t i = 0; i < b->o.nlogs; i++) {
        teller_req_set_node(b, teller_log_node_from_path(b->o.logs[i]));
        if ((status = teller_log_read_file(b->o.logs[i], &lo, teller_req_feed, b, NULL, err)) != TELLER_OK) {
            teller_req_abort(b);
            return status;
        }
    }
    const teller_requests *view;
    if ((status = teller_req_replay(b, &view, err)) != TELLER_OK) {
        teller_req_abort(b);
        return status;
    }
    return teller_req_finish(b, b->o.diag, out, err);
}

void teller_requests_free(teller_requests *r)
{
    if (!r)
        return;
    for (size_t i = 0; r->req && i < r->n; i++)
        free(r->req[i].steps);
    for (size_t i = 0; i < r->nowned_ids; i++)
        free(r->owned_ids[i]);
    free(r->owned_ids);
    for (size_t i = 0; i < r->nnotes; i++)
        free(r->notes[i]);
    free(r->notes);
    free(r->req);
    free(r->steps);
    free(r);
}

const teller_request *teller_requests_find(const teller_requests *r, const char *id)
{
    for (size_t i = 0; r && i < r->n; i++)
        if (!strcmp(r->req[i].id, id))
            return &r->req[i];
    return NULL;
}

size_t teller_request_hot_path(const teller_store *st, uint32_t step, int32_t rank, uint32_t *path, size_t cap)
{
    const teller_step *rows = teller_store_steps(st);
    size_t nrows = teller_store_num_steps(st);
    const teller_events *ev = teller_store_events(st);
    uint32_t e = TELLER_NONE;
    for (size_t i = 0; i < nrows; i++)
        if (rows[i].step == step && rows[i].rank == rank) {
            e = rows[i].marker;
            break;
        }
    size_t n = 0;
    while (e != TELLER_NONE && n < cap) {
        path[n++] = e;
        uint32_t best = TELLER_NONE;
        for (uint32_t c = ev->first_child[e]; c != TELLER_NONE; c = ev->next_sibling[c])
            if (best == TELLER_NONE || ev->dur_ns[c] > ev->dur_ns[best])
                best = c;
        e = best;
    }
    return n;
}
