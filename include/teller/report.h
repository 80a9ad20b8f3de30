/*
 * report.h - the report writers: a self-contained HTML page and a Perfetto
 * (Chrome-trace JSON) re-emission of the trace with the findings on top.
 *
 * Both read a tree-built store and a diagnosis (diagnose.h) and write to a
 * caller's stream; they never print elsewhere and never close the stream.
 * Every string that comes from a trace or a log (kernel names, log lines,
 * file names, explanations) is escaped for the output's language, so a
 * hostile name cannot inject markup or break the JSON.
 */
#ifndef TELLER_REPORT_H
#define TELLER_REPORT_H

#include <stdio.h>

#include "teller/diagnose.h"
#include "teller/diff.h"
#include "teller/requests.h"
#include "teller/error.h"
#include "teller/store.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Abnormal steps given a full section (timeline, call chain, evidence) in
 * the HTML report; the rest are listed in the summary only. */
#define TELLER_REPORT_MAX_STEPS 20
/* Steps slower than usual that no finding explains given a short section
 * (explanation, timeline of the longest rank, numbers). */
#define TELLER_REPORT_MAX_SLOW 10

/* Writes the HTML report: a summary of the abnormal steps (worst first:
 * the largest excess_ns, then the highest score) and of the steps slower
 * than usual that no finding explains; a chart of every step's time
 * against its usual (usual_ns), one panel per kind of step (tree.h
 * teller_step_kind), abnormal steps red, slow ones amber, with a legend;
 * then for each of the worst TELLER_REPORT_MAX_STEPS abnormal steps an SVG
 * timeline of every rank around the step (and its neighbours), the call
 * chain from the step marker down to the culprit, its numbers, the
 * evidence; then for the worst TELLER_REPORT_MAX_SLOW slow ones a short
 * section; then the diagnosis notes. Every number it states about a step
 * is one of the step's facts (diagnose.h teller_fact), marked
 * data-fact="STEP:I", and every explanation is a <p data-explains="STEP">,
 * STEP being the step's index in d->steps, for teller_check_html (check.h).
 * The culprit is the diagnosis's culprit_event, drawn only when it lies
 * on root_rank; otherwise the page says that root_rank never launched the
 * top candidate's operator (when its trace has no call of it in the step)
 * and lists the ranks that waited in it as evidence. With reqs (may be
 * NULL), each abnormal step also lists the requests it delayed. No
 * network, no external resources; readable without scripts; its charts
 * keep their pixel size (and their text 11 px) in a box that scrolls in a
 * narrow window. title may be NULL. TELLER_ERR_IO when the stream fails,
 * TELLER_ERR_NOMEM when memory runs out. */
teller_status teller_report_html(const teller_store *st, const teller_diagnosis *d, const teller_requests *reqs,
                                 const char *title, FILE *out, teller_error *err);

/* Changes listed in the HTML page of a diff. */
#define TELLER_REPORT_MAX_CHANGES 30

/* Writes the HTML page of a diff (diff.h) of run against ref, the stores
 * it was computed from: the verdict of teller_diff_check, the step classes
 * and the changes worst first, the kernels new and gone, and the timelines
 * of one matched step of the first class (the worst), on the rank that
 * moved most: the reference's above the run's, on the same time scale.
 * Self-contained, like teller_report_html; title may be NULL.
 * TELLER_ERR_IO when the stream fails, TELLER_ERR_NOMEM out of memory. */
teller_status teller_report_html_diff(const teller_diff *d, const teller_store *ref, const teller_store *run,
                                      const char *title, FILE *out, teller_error *err);

/* Writes the trace of every rank as Chrome-trace JSON for Perfetto
 * (ui.perfetto.dev) and chrome://tracing: one process per source named
 * "rank R (node N)", one thread per CPU thread and per GPU stream, complete
 * ("X") events that nest per thread (events that would not nest go to an
 * extra "(overlap k)" thread), timestamps in microseconds with three
 * decimals relative to the earliest event (its epoch time is in
 * otherData.teller_origin_ns). Counters are left out. The findings are
 * added on a "teller findings" process: an instant per abnormal step with
 * args {score, fault_type, fault, rank, op, explanation}, a slice over the
 * step window, and a flow arrow from that slice to the culprit event,
 * which also carries args.teller_culprit. As in the HTML, a culprit_event
 * that is not on root_rank is not marked: the arrow then ends on an instant
 * on root_rank's process, the instant's args add {root_never_launched,
 * waiting_ranks, waited_ms}, and the waiting ranks' calls carry
 * args.teller_waited. d may be NULL (trace only). */
teller_status teller_report_perfetto(const teller_store *st, const teller_diagnosis *d, FILE *out,
                                     teller_error *err);

#ifdef __cplusplus
}
#endif
#endif
