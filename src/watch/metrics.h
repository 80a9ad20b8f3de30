/*
 * metrics.h - the metrics of `teller watch`: counters and gauges the
 * watcher updates after each diagnosed step, rendered in the Prometheus
 * text exposition format 0.0.4 and served over HTTP (docs/METRICS.md).
 * See metrics.c.
 *
 * One handle holds every metric in memory fixed at create: a ring of the
 * last TELLER_WATCH_METRICS_WINDOW durations per step kind, a table of at
 * most TELLER_WATCH_METRICS_PAIRS (fault type, view) label pairs. Every
 * call is thread-safe (one mutex): the watcher's thread updates, the HTTP
 * server's thread renders.
 */
#ifndef TELLER_WATCH_METRICS_H
#define TELLER_WATCH_METRICS_H

#include <stddef.h>
#include <stdint.h>

#include "teller/error.h"
#include "teller/tree.h"
#include "watch.h"

/* The durations a step kind's quantiles are taken over: its last 1024
 * steps (8 KiB a kind). */
#define TELLER_WATCH_METRICS_WINDOW 1024
/* The (fault type, view) pairs counted apart: the fault table's six, and
 * room for more. Abnormal steps of a pair beyond are counted under
 * fault_type="other", view="other". Each label is cut at 63 bytes. */
#define TELLER_WATCH_METRICS_PAIRS 64

typedef struct teller_watch_metrics teller_watch_metrics;

/* A handle with every metric at zero, the process start time taken now;
 * NULL when out of memory. Free with teller_watch_metrics_free. */
teller_watch_metrics *teller_watch_metrics_create(void);

/* Stops the server if one runs (waits for its thread and its requests
 * under way to end), then frees m. NULL is fine. */
void teller_watch_metrics_free(teller_watch_metrics *m);

/* The clock every now_ns below is read on: CLOCK_MONOTONIC, in ns. The
 * server renders with it, so the watcher passes its values. */
int64_t teller_watch_metrics_now_ns(void);

/* One diagnosed step: its kind, how long it took (seconds; a negative or
 * not finite value counts the step but not its duration), whether it is
 * abnormal and then its fault type and view as in predictions
 * (BENCHMARK.md: "communication", "horizontal"; ignored for a normal
 * step, NULL read as ""). An abnormal step is a finding, made at now_ns. */
void teller_watch_metrics_step(teller_watch_metrics *m, teller_step_kind kind, double seconds, int abnormal,
                               const char *fault_type, const char *view, int64_t now_ns);

/* A hang reported (ranks silent past the timeout): a finding, at now_ns. */
void teller_watch_metrics_hang(teller_watch_metrics *m, int64_t now_ns);

/* How many ranks are silent now (a gauge: the last value set holds). */
void teller_watch_metrics_silent_ranks(teller_watch_metrics *m, uint32_t n);

/* n more of what the watcher skipped (what out of range: ignored). */
void teller_watch_metrics_skipped(teller_watch_metrics *m, teller_watch_skip what, uint64_t n);

/* Every metric in the text exposition format 0.0.4, at now_ns (the age of
 * the last finding is taken from it): a malloc'd NUL-terminated string the
 * caller frees, its length in *len when len is not NULL; NULL when out of
 * memory. */
char *teller_watch_metrics_render(teller_watch_metrics *m, int64_t now_ns, size_t *len);

/* Serves GET /metrics on hostport ("127.0.0.1:9464", "[::1]:9464", a
 * numeric address; port 0 picks a free port, see teller_watch_metrics_port)
 * from libmicrohttpd's own thread, until teller_watch_metrics_free. Other
 * paths answer 404, other methods than GET and HEAD 405. TELLER_ERR_ARG
 * for an address that does not parse or a second call, TELLER_ERR_IO when
 * the socket cannot be bound or the server started; err says which. */
teller_status teller_watch_metrics_serve(teller_watch_metrics *m, const char *hostport, teller_error *err);

/* The port the server listens on; 0 when it does not run. */
uint16_t teller_watch_metrics_port(const teller_watch_metrics *m);

#endif
