/*
 * align.c - a log record to the rank and step of a tree-built store.
 *
 * Rules, first that applies:
 *   1. Rank: the record's own ([rankN]:, rank=N, TPn, "[Rank N]"), or the
 *      global rank of its rank within a named process group (ProcessGroupNCCL's
 *      "[PG ... Rank N]" of a group other than the default: that group's
 *      "Process Group Ranks" in the trace), else the only rank the store has
 *      on the log's node, else unknown (-1).
 *   2. A NCCL watchdog record with a sequence number (SeqNum=N, "work: N")
 *      goes to the collective instance of that number: first one whose
 *      member kernel carries the trace's own Seq (Kineto's
 *      record_param_comms "Seq", the same counter the watchdog prints) equal
 *      to N; else, assuming the trace holds the process group's collectives
 *      from its first one, the instance with 0-based seq N-1
 *      (TELLER_LOGF_SEQ_ASSUMED), unless the line says how long its work
 *      ran and that instance's kernel on the rank ended sooner: then by
 *      time (rule 3). Only instances of the group the line names count
 *      ("[PG ... GUID G ...]", where the trace names groups), and with a
 *      known rank only those that rank took part in. The step is that
 *      rank's kernel's step (or the first member's). Limits: a trace cut in
 *      the middle of a run without Seq gives a wrong instance under the
 *      assumption; a line of the default group, or of none, takes the first
 *      group whose numbering matches.
 *   3. Otherwise by time: the record's time moved onto node 0's clock
 *      (minus the node's offset) falls inside a step of its rank (any rank
 *      when unknown); a watchdog timeout that says how long its collective
 *      ran ("ran for N milliseconds") is placed where the collective began,
 *      N ms before the line (the line comes at the watchdog's timeout,
 *      minutes after the traced time of a process taken down with it), on
 *      the rank's last step that began by then give or take 1 ms and 100
 *      ppm of N (the clock's rate and the ms the line rounds to: minutes
 *      make milliseconds, and a collective that never ended is in the last
 *      step its rank began), when that is within a second of the step's
 *      end, else by time as below; outside every step the nearest step is
 *      kept and the record flagged TELLER_LOGF_OUTSIDE_STEP. Whole-second
 *      log times are taken at the middle of their second; sub-second ones,
 *      and `teller run`'s capture times (TELLER_LOGF_CAPTURE_TIME, never
 *      NO_SUBSEC), as they are.
 *   4. No time and no sequence: step TELLER_NONE.
 */
#include <limits.h>
#include <string.h>

#include "teller/logs.h"
#include "teller/tree.h"

int32_t teller_log_node_from_path(const char *path)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    for (const char *p = base; (p = strstr(p, "node")) != NULL; p += 4) {
        const char *q = p + 4;
        int64_t v = 0;
        int nd = 0;
        while (*q >= '0' && *q <= '9' && nd < 9) {
            v = v * 10 + (*q++ - '0');
            nd++;
        }
        if (nd)
            return (int32_t)v;
    }
    return -1;
}

static int64_t node_offset(const teller_store *st, int32_t node)
{
    const teller_node *nodes = teller_store_nodes(st);
    size_t n = teller_store_num_nodes(st);
    for (size_t i = 0; i < n; i++)
        if (nodes[i].node == node)
            return nodes[i].offset_ns;
    return 0;
}

/* The only rank on a node, or -1 when none or several. */
static int32_t only_rank(const teller_store *st, int32_t node)
{
    int32_t r = -1;
    size_t ns = teller_store_num_sources(st);
    for (size_t i = 0; i < ns; i++) {
        const teller_source *s = teller_store_source_c(st, (uint32_t)i);
        if (s->node != node || s->rank < 0)
            continue;
        if (r >= 0 && r != s->rank)
            return -1;
        r = s->rank;
    }
    return r;
}

/* The global rank of rank r of the trace's process group named pg (the
 * "Process Group Ranks" of a collective of that "Process Group Name"), or
 * -1 when the trace has no such group or it has fewer ranks. */
static int32_t pg_global_rank(const teller_store *st, const teller_log_str *pg, int32_t r)
{
    const teller_comm *cm;
    for (uint32_t i = 0; (cm = teller_store_comm(st, i)) != NULL; i++) {
        const char *name = teller_store_str(st, cm->pg_name);
        if (strlen(name) != pg->n || memcmp(name, pg->p, pg->n))
            continue;
        long v;
        int32_t k = 0;
        for (const char *c = teller_store_str(st, cm->pg_ranks); teller_pg_ranks_next(&c, &v); k++)
            if (k == r)
                return v >= 0 && v <= INT32_MAX ? (int32_t)v : -1;
    }
    return -1;
}

/* Whether event e's collective is of the process group a watchdog line
 * names (pg: empty when the line names none or the default group; a
 * collective the trace names no group for may be of any). */
static int of_group(const teller_store *st, uint32_t e, const teller_log_str *pg)
{
    const teller_comm *cm = teller_store_event_comm(st, e);
    const char *name = cm ? teller_store_str(st, cm->pg_name) : "";
    return !pg->n || !name[0] || (strlen(name) == pg->n && !memcmp(name, pg->p, pg->n));
}

static uint32_t coll_by_seq(const teller_store *st, int64_t seq, const teller_log_str *pg, int32_t rank, int assumed,
                            uint32_t *kernel)
{
    const teller_collective *cs = teller_store_collectives(st);
    const teller_coll_member *mem = teller_store_coll_members(st);
    size_t nc = teller_store_num_collectives(st);
    for (size_t c = 0; c < nc; c++) {
        if (assumed && (int64_t)cs[c].seq != seq - 1)
            continue;
        /* a watchdog counts its process group's NCCL work: the engines' own
         * collectives (numbered by their order in a step) are none of it */
        const teller_comm_family *fam = teller_comm_family_get(teller_comm_family_of(
            teller_store_str(st, teller_store_events(st)->name[mem[cs[c].first_member].kernel]), NULL, 0));
        if ((fam && fam->match == TELLER_COMM_MATCH_ORDER) || !of_group(st, mem[cs[c].first_member].kernel, pg))
            continue;
        uint32_t pick = TELLER_NONE;
        int seq_ok = assumed;
        for (uint32_t k = 0; k < cs[c].num_members; k++) {
            const teller_coll_member *m = &mem[cs[c].first_member + k];
            if (!assumed) {
                const teller_comm *cm = teller_store_event_comm(st, m->kernel);
                if (cm && cm->seq == seq)
                    seq_ok = 1;
            }
            if (rank < 0 ? pick == TELLER_NONE : m->rank == rank)
                pick = m->kernel;
        }
        if (seq_ok && pick != TELLER_NONE) {
            *kernel = pick;
            return (uint32_t)c;
        }
    }
    return TELLER_NONE;
}

/* Whether the kernel of an instance found by an assumed sequence number
 * can be the work a watchdog line names that says how long its work ran
 * without ending: it lasted that long, give or take a second and 100 ppm
 * (an aborted work's kernel ends at the abort; one whose process was taken
 * down is never written). A kernel that ended sooner is another work: the
 * trace numbers the group's collectives otherwise than assumed. */
static int ran_as_long(const teller_events *ev, uint32_t kernel, const teller_log_record *rec)
{
    return rec->ran_ns <= 0 || ev->dur_ns[kernel] >= rec->ran_ns - 1000000000 - rec->ran_ns / 10000;
}

void teller_log_align_record(const teller_store *st, int32_t node, const teller_log_record *rec,
                             teller_log_align *out)
{
    memset(out, 0, sizeof *out);
    out->step = TELLER_NONE;
    out->coll = TELLER_NONE;
    out->rank = rec->rank >= 0 ? rec->rank : rec->pg_rank >= 0 ? pg_global_rank(st, &rec->pg, rec->pg_rank) : -1;
    if (out->rank < 0)
        out->rank = only_rank(st, node);
    out->time_ns = INT64_MIN;
    if (rec->time_ns != INT64_MIN) {
        out->time_ns = rec->time_ns - node_offset(st, node);
        if (rec->flags & TELLER_LOGF_NO_SUBSEC)
            out->time_ns += 500000000;
        if (rec->ran_ns > 0)
            out->time_ns -= rec->ran_ns;
    }

    if (rec->seq >= 0) {
        uint32_t kernel = TELLER_NONE;
        uint32_t c = coll_by_seq(st, rec->seq, &rec->pg, out->rank, 0, &kernel);
        if (c == TELLER_NONE && rec->seq >= 1) {
            c = coll_by_seq(st, rec->seq, &rec->pg, out->rank, 1, &kernel);
            if (c != TELLER_NONE)
                out->flags |= TELLER_LOGF_SEQ_ASSUMED;
        }
        const teller_events *ev = teller_store_events(st);
        if (c != TELLER_NONE && (out->flags & TELLER_LOGF_SEQ_ASSUMED) && !ran_as_long(ev, kernel, rec)) {
            c = TELLER_NONE;
            out->flags &= ~TELLER_LOGF_SEQ_ASSUMED;
        }
        if (c != TELLER_NONE) {
            out->coll = c;
            out->step = ev->step ? ev->step[kernel] : TELLER_NONE;
            if (out->step != TELLER_NONE)
                return;
        }
    }
    if (out->time_ns == INT64_MIN)
        return;
    const teller_step *steps = teller_store_steps(st);
    size_t n = teller_store_num_steps(st);
    if (rec->ran_ns > 0 && out->rank >= 0) {
        int64_t tol = 1000000 + rec->ran_ns / 10000, t = out->time_ns;
        size_t pick = SIZE_MAX;
        for (size_t i = 0; i < n; i++)
            if (steps[i].rank == out->rank && steps[i].start_ns <= t + tol &&
                (pick == SIZE_MAX || steps[i].step > steps[pick].step))
                pick = i;
        /* the collective began in that step, or within a second of its
         * traced end (the GPU queue behind a torn-down rank's last host
         * event); later, the line is of another run or time: by time */
        if (pick != SIZE_MAX && t <= steps[pick].end_ns + 1000000000 + tol) {
            out->step = steps[pick].step;
            return;
        }
    }
    int64_t best_d = INT64_MAX;
    for (size_t i = 0; i < n; i++) {
        if (out->rank >= 0 && steps[i].rank != out->rank)
            continue;
        int64_t t = out->time_ns, d;
        if (t >= steps[i].start_ns && t <= steps[i].end_ns)
            d = 0;
        else
            d = t < steps[i].start_ns ? steps[i].start_ns - t : t - steps[i].end_ns;
        if (d < best_d) {
            best_d = d;
            out->step = steps[i].step;
        }
    }
    if (out->step != TELLER_NONE && best_d > 0)
        out->flags |= TELLER_LOGF_OUTSIDE_STEP;
}
