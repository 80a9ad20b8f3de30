/*
 * metrics.c - the metrics of `teller watch` in the operators' convention:
 * what the watcher saw and found, rendered in the Prometheus text
 * exposition format 0.0.4 and served at GET /metrics by libmicrohttpd
 * (docs/METRICS.md lists every metric).
 *
 * The watcher's thread calls teller_watch_metrics_step once per diagnosed
 * step and the setters for what it knows beyond steps; the server's thread
 * renders on each scrape. One mutex guards the whole state; a render holds
 * it only to copy the state (about 50 KiB) and sorts and prints the copy,
 * so the watcher never waits on a scrape.
 *
 * Memory is fixed at create: the durations a kind's quantiles are taken
 * over live in a ring of TELLER_WATCH_METRICS_WINDOW per kind, and the
 * (fault type, view) label pairs in a table of TELLER_WATCH_METRICS_PAIRS,
 * so that a watcher running for days, or fed hostile names, does not grow.
 */
#include <arpa/inet.h>
#include <assert.h>
#include <errno.h>
#include <math.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "metrics.h"
#include "teller/fault.h"
#include "teller/version.h"
#include "../util/clock.h"
#include "../util/textout.h"
#include "../util/vec.h"

/* teller_step_kind's values run from TELLER_STEP_OTHER (0) to
 * TELLER_STEP_ITERATION */
#define KINDS (TELLER_STEP_ITERATION + 1)
#define LABEL_MAX 64 /* a label's bytes with its NUL */

/* The last TELLER_WATCH_METRICS_WINDOW durations of one step kind, and the
 * sum and count of all of them. */
typedef struct duration_ring {
    double   v[TELLER_WATCH_METRICS_WINDOW];
    uint32_t next; /* where the next duration goes */
    uint32_t n;    /* durations held, up to the window */
    uint64_t count;
    double   sum;
} duration_ring;

typedef struct label_pair {
    char     fault_type[LABEL_MAX];
    char     view[LABEL_MAX];
    uint64_t steps;
} label_pair;

/* What the metrics say: copied whole by a render, so that the copy is
 * sorted and printed with the mutex released. */
typedef struct metrics_state {
    uint64_t      steps;
    duration_ring rings[KINDS];
    label_pair    pairs[TELLER_WATCH_METRICS_PAIRS];
    size_t        npairs;
    uint64_t      hangs;
    int           found;     /* a finding was made: found_ns holds when */
    int64_t       found_ns;
    uint32_t      silent;
    uint64_t      skipped[TELLER_WATCH_SKIP_COUNT];
    double        start_s;   /* the process's start, Unix seconds */
} metrics_state;

struct teller_watch_metrics {
    pthread_mutex_t    mu; /* guards s */
    metrics_state      s;
    struct MHD_Daemon *daemon; /* NULL when not serving */
    uint16_t           port;
};

/* The `what` labels of teller_watch_skipped_total, by teller_watch_skip;
 * NULL for what is counted in a metric of its own. */
static const char *const k_skip_label[TELLER_WATCH_SKIP_COUNT] = {
    [TELLER_WATCH_SKIP_CHUNK] = "chunk",
    [TELLER_WATCH_SKIP_FILE] = "file",
    [TELLER_WATCH_SKIP_LOG] = "log",
    [TELLER_WATCH_SKIP_GARBAGE_BYTES] = NULL,
};

/* the quantiles, in thousandths: exact ranks in integers */
static const unsigned k_quantiles[] = {500, 900, 990};

int64_t teller_watch_metrics_now_ns(void) { return teller_mono_ns(); }

/* Copies s into a label of LABEL_MAX bytes, cut there. */
static void label_copy(char *dst, const char *s)
{
    size_t n = strnlen(s ? s : "", LABEL_MAX - 1);
    memcpy(dst, s ? s : "", n);
    dst[n] = 0;
}

static label_pair *pair_find(metrics_state *s, const char *ft, const char *vw)
{
    for (size_t i = 0; i < s->npairs; i++)
        if (!strcmp(s->pairs[i].fault_type, ft) && !strcmp(s->pairs[i].view, vw))
            return &s->pairs[i];
    return NULL;
}

/* The pair (fault_type, view) of s, added when new. The table's last row
 * is kept for ("other", "other"): once the rest is full, a new pair is
 * counted there. */
static label_pair *pair_of(metrics_state *s, const char *fault_type, const char *view)
{
    char ft[LABEL_MAX], vw[LABEL_MAX];
    label_copy(ft, fault_type);
    label_copy(vw, view);
    label_pair *p = pair_find(s, ft, vw);
    if (p)
        return p;
    if (s->npairs >= TELLER_WATCH_METRICS_PAIRS - 1) {
        label_copy(ft, "other");
        label_copy(vw, "other");
        if ((p = pair_find(s, ft, vw)))
            return p;
    }
    assert(s->npairs < TELLER_WATCH_METRICS_PAIRS);
    p = &s->pairs[s->npairs++];
    memcpy(p->fault_type, ft, sizeof ft);
    memcpy(p->view, vw, sizeof vw);
    p->steps = 0;
    return p;
}

teller_watch_metrics *teller_watch_metrics_create(void)
{
    teller_watch_metrics *m = calloc(1, sizeof *m);
    if (!m)
        return NULL;
    if (pthread_mutex_init(&m->mu, NULL) != 0) {
        free(m);
        return NULL;
    }
    /* every pair of the fault table at 0, so that rate() sees a series'
     * first abnormal step as an increase */
    for (int f = TELLER_FAULT_NONE + 1; f < TELLER_FAULT_COUNT; f++) {
        const teller_fault_def *d = teller_fault_def_of((teller_fault)f);
        pair_of(&m->s, d->type, d->view);
    }
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    m->s.start_s = (double)ts.tv_sec + ts.tv_nsec / 1e9;
    return m;
}

void teller_watch_metrics_free(teller_watch_metrics *m)
{
    if (!m)
        return;
    if (m->daemon)
        MHD_stop_daemon(m->daemon); /* joins its thread, closes the listening socket */
    pthread_mutex_destroy(&m->mu);
    free(m);
}

void teller_watch_metrics_step(teller_watch_metrics *m, teller_step_kind kind, double seconds, int abnormal,
                               const char *fault_type, const char *view, int64_t now_ns)
{
    if ((int)kind < 0 || (int)kind >= KINDS)
        kind = TELLER_STEP_OTHER;
    pthread_mutex_lock(&m->mu);
    m->s.steps++;
    if (isfinite(seconds) && seconds >= 0) {
        duration_ring *r = &m->s.rings[kind];
        r->v[r->next] = seconds;
        r->next = (r->next + 1) % TELLER_WATCH_METRICS_WINDOW;
        if (r->n < TELLER_WATCH_METRICS_WINDOW)
            r->n++;
        r->count++;
        r->sum += seconds;
    }
    if (abnormal) {
        pair_of(&m->s, fault_type, view)->steps++;
        m->s.found = 1;
        m->s.found_ns = now_ns;
    }
    pthread_mutex_unlock(&m->mu);
}

void teller_watch_metrics_hang(teller_watch_metrics *m, int64_t now_ns)
{
    pthread_mutex_lock(&m->mu);
    m->s.hangs++;
    m->s.found = 1;
    m->s.found_ns = now_ns;
    pthread_mutex_unlock(&m->mu);
}

void teller_watch_metrics_silent_ranks(teller_watch_metrics *m, uint32_t n)
{
    pthread_mutex_lock(&m->mu);
    m->s.silent = n;
    pthread_mutex_unlock(&m->mu);
}

void teller_watch_metrics_skipped(teller_watch_metrics *m, teller_watch_skip what, uint64_t n)
{
    if ((int)what < 0 || what >= TELLER_WATCH_SKIP_COUNT)
        return;
    pthread_mutex_lock(&m->mu);
    m->s.skipped[what] += n;
    pthread_mutex_unlock(&m->mu);
}

/* ---- the text exposition format ---- */

/* A label value between its quotes: backslash, double quote and line feed
 * escaped as the format says (\\, \", \n); every other byte of valid UTF-8
 * as it is; bytes that are not UTF-8 as U+FFFD, since the format is
 * UTF-8 and Prometheus rejects a scrape that is not. */
static void put_label(FILE *f, const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        if (*p == '\\' || *p == '"') {
            fputc('\\', f);
            fputc(*p++, f);
        } else if (*p == '\n') {
            fputs("\\n", f);
            p++;
        } else if (*p < 0x80) {
            fputc(*p++, f);
        } else {
            int n = teller_utf8_seq(p);
            if (n) {
                fwrite(p, 1, (size_t)n, f);
                p += n;
            } else {
                fputs("\xEF\xBF\xBD", f);
                p++;
            }
        }
    }
}

/* A sample's value: NaN, +Inf, -Inf as the format spells them, else the
 * shortest of %.15g..%.17g that reads back as v. */
static void put_value(FILE *f, double v)
{
    if (isnan(v)) {
        fputs("NaN", f);
        return;
    }
    if (isinf(v)) {
        fputs(v > 0 ? "+Inf" : "-Inf", f);
        return;
    }
    char b[32];
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(b, sizeof b, "%.*g", prec, v);
        if (strtod(b, NULL) == v)
            break;
    }
    fputs(b, f);
}

static void put_family(FILE *f, const char *name, const char *type, const char *help)
{
    fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The summary of one kind: quantiles by nearest rank (the value at
 * ceil(q n) in the sorted window), NaN while the window is empty. Sorts
 * the window of s, a render's copy. */
static void put_summary(FILE *f, metrics_state *s, teller_step_kind k)
{
    duration_ring *r = &s->rings[k];
    const char *name = "teller_watch_step_duration_seconds";
    teller_sort(r->v, r->n, sizeof *r->v, cmp_double);
    for (size_t q = 0; q < sizeof k_quantiles / sizeof *k_quantiles; q++) {
        double v = NAN;
        if (r->n) {
            size_t rank = ((size_t)k_quantiles[q] * r->n + 999) / 1000; /* ceil(q n), >= 1 */
            v = r->v[rank - 1];
        }
        fprintf(f, "%s{kind=\"", name);
        put_label(f, teller_step_kind_name(k));
        fprintf(f, "\",quantile=\"%g\"} ", k_quantiles[q] / 1000.0);
        put_value(f, v);
        fputc('\n', f);
    }
    fprintf(f, "%s_sum{kind=\"", name);
    put_label(f, teller_step_kind_name(k));
    fputs("\"} ", f);
    put_value(f, r->sum);
    fprintf(f, "\n%s_count{kind=\"", name);
    put_label(f, teller_step_kind_name(k));
    fprintf(f, "\"} %llu\n", (unsigned long long)r->count);
}

/* Every family of s (a render's copy), each family's samples together. */
static void put_all(FILE *f, metrics_state *s, int64_t now_ns)
{
    put_family(f, "teller_watch_steps_total", "counter", "Steps diagnosed, once every rank finished them.");
    fprintf(f, "teller_watch_steps_total %llu\n", (unsigned long long)s->steps);

    put_family(f, "teller_watch_abnormal_steps_total", "counter",
               "Steps diagnosed abnormal, by fault type and view (BENCHMARK.md's labels).");
    for (size_t i = 0; i < s->npairs; i++) {
        fputs("teller_watch_abnormal_steps_total{fault_type=\"", f);
        put_label(f, s->pairs[i].fault_type);
        fputs("\",view=\"", f);
        put_label(f, s->pairs[i].view);
        fprintf(f, "\"} %llu\n", (unsigned long long)s->pairs[i].steps);
    }

    char help[160];
    snprintf(help, sizeof help,
             "Step duration by step kind; quantiles over the kind's last %d steps, sum and count over all.",
             TELLER_WATCH_METRICS_WINDOW);
    put_family(f, "teller_watch_step_duration_seconds", "summary", help);
    for (int k = 0; k < KINDS; k++)
        put_summary(f, s, (teller_step_kind)k);

    put_family(f, "teller_watch_hangs_total", "counter", "Hangs reported: ranks silent past the timeout.");
    fprintf(f, "teller_watch_hangs_total %llu\n", (unsigned long long)s->hangs);

    /* absent until the first finding (see docs/METRICS.md) */
    if (s->found) {
        put_family(f, "teller_watch_last_finding_age_seconds", "gauge",
                   "Seconds since the last finding (an abnormal step or a hang).");
        fputs("teller_watch_last_finding_age_seconds ", f);
        put_value(f, (double)(now_ns - s->found_ns) / 1e9);
        fputc('\n', f);
    }

    put_family(f, "teller_watch_silent_ranks", "gauge", "Ranks that have written nothing for the timeout, now.");
    fprintf(f, "teller_watch_silent_ranks %u\n", (unsigned)s->silent);

    put_family(f, "teller_watch_skipped_total", "counter",
               "What the watcher skipped: chunks (bad, missing or cut short), files not followed, logs read again.");
    for (int w = 0; w < TELLER_WATCH_SKIP_COUNT; w++)
        if (k_skip_label[w])
            fprintf(f, "teller_watch_skipped_total{what=\"%s\"} %llu\n", k_skip_label[w],
                    (unsigned long long)s->skipped[w]);
    put_family(f, "teller_watch_skipped_bytes_total", "counter",
               "Bytes the watcher passed over to find the next chunk.");
    fprintf(f, "teller_watch_skipped_bytes_total %llu\n",
            (unsigned long long)s->skipped[TELLER_WATCH_SKIP_GARBAGE_BYTES]);

    put_family(f, "teller_watch_build_info", "gauge", "The teller version of the watcher; always 1.");
    fputs("teller_watch_build_info{version=\"", f);
    put_label(f, TELLER_VERSION_STRING);
    fputs("\"} 1\n", f);

    put_family(f, "process_start_time_seconds", "gauge", "Start time of the process since the Unix epoch in seconds.");
    fputs("process_start_time_seconds ", f);
    put_value(f, s->start_s);
    fputc('\n', f);
}

char *teller_watch_metrics_render(teller_watch_metrics *m, int64_t now_ns, size_t *len)
{
    /* the state copied under the mutex (about 50 KiB, microseconds),
     * sorted and printed after */
    metrics_state *snap = malloc(sizeof *snap);
    char  *buf = NULL;
    size_t n = 0;
    FILE  *f = snap ? open_memstream(&buf, &n) : NULL;
    if (!f) {
        free(snap);
        return NULL;
    }
    pthread_mutex_lock(&m->mu);
    *snap = m->s;
    pthread_mutex_unlock(&m->mu);
    put_all(f, snap, now_ns);
    free(snap);
    int bad = ferror(f);
    if (fclose(f) != 0 || bad) {
        free(buf);
        return NULL;
    }
    if (len)
        *len = n;
    return buf;
}

/* ---- the HTTP server ---- */

static enum MHD_Result reply_text(struct MHD_Connection *c, unsigned status, const char *text)
{
    struct MHD_Response *r =
        MHD_create_response_from_buffer(strlen(text), (void *)(uintptr_t)text, MHD_RESPMEM_PERSISTENT);
    if (!r)
        return MHD_NO;
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/plain; charset=utf-8");
    if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
        MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
    enum MHD_Result ret = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return ret;
}

/* One request, on the server's thread: its body, if any, is not read. */
static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                              const char *version, const char *upload, size_t *upload_size, void **req)
{
    (void)version, (void)upload, (void)upload_size, (void)req;
    teller_watch_metrics *m = cls;
    if (strcmp(method, MHD_HTTP_METHOD_GET) && strcmp(method, MHD_HTTP_METHOD_HEAD))
        return reply_text(c, MHD_HTTP_METHOD_NOT_ALLOWED, "only GET and HEAD are served\n");
    if (strcmp(url, "/metrics"))
        return reply_text(c, MHD_HTTP_NOT_FOUND, "not found: the metrics are at /metrics\n");
    size_t n = 0;
    char  *body = teller_watch_metrics_render(m, teller_watch_metrics_now_ns(), &n);
    if (!body)
        return reply_text(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory\n");
    struct MHD_Response *r = MHD_create_response_from_buffer_with_free_callback(n, body, free);
    if (!r) {
        free(body);
        return MHD_NO;
    }
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8");
    enum MHD_Result ret = MHD_queue_response(c, MHD_HTTP_OK, r);
    MHD_destroy_response(r);
    return ret;
}

/* Parses "A.B.C.D:PORT" or "[IPV6]:PORT" into *sa; 0, or -1 with err set. */
static int parse_hostport(const char *hp, struct sockaddr_storage *sa, socklen_t *salen, teller_error *err)
{
    char host[64];
    const char *port;
    int v6 = hp[0] == '[';
    if (v6) {
        const char *close = strchr(hp, ']');
        if (!close || close[1] != ':' || (size_t)(close - hp - 1) >= sizeof host)
            goto bad;
        memcpy(host, hp + 1, (size_t)(close - hp - 1));
        host[close - hp - 1] = 0;
        port = close + 2;
    } else {
        const char *colon = strrchr(hp, ':');
        if (!colon || (size_t)(colon - hp) >= sizeof host || memchr(hp, ':', (size_t)(colon - hp)))
            goto bad;
        memcpy(host, hp, (size_t)(colon - hp));
        host[colon - hp] = 0;
        port = colon + 1;
    }
    unsigned long p = 0;
    size_t digits = strspn(port, "0123456789");
    if (digits == 0 || digits > 5 || port[digits] || (p = strtoul(port, NULL, 10)) > 65535)
        goto bad;
    memset(sa, 0, sizeof *sa);
    if (v6) {
        struct sockaddr_in6 *a = (struct sockaddr_in6 *)sa;
        a->sin6_family = AF_INET6;
        a->sin6_port = htons((uint16_t)p);
        if (inet_pton(AF_INET6, host, &a->sin6_addr) != 1)
            goto bad;
        *salen = sizeof *a;
    } else {
        struct sockaddr_in *a = (struct sockaddr_in *)sa;
        a->sin_family = AF_INET;
        a->sin_port = htons((uint16_t)p);
        if (inet_pton(AF_INET, host, &a->sin_addr) != 1)
            goto bad;
        *salen = sizeof *a;
    }
    return 0;
bad:
    teller_error_set(err, TELLER_ERR_ARG, NULL, 0,
                     "listen address '%s': expected a numeric IPv4:PORT or [IPv6]:PORT, port 0-65535 "
                     "(127.0.0.1:9464, [::1]:9464)", hp);
    return -1;
}

teller_status teller_watch_metrics_serve(teller_watch_metrics *m, const char *hostport, teller_error *err)
{
    if (m->daemon)
        return teller_error_set(err, TELLER_ERR_ARG, NULL, 0, "the metrics are served already (port %u)",
                                (unsigned)m->port);
    struct sockaddr_storage sa;
    socklen_t salen = 0;
    if (parse_hostport(hostport ? hostport : "", &sa, &salen, err) != 0)
        return TELLER_ERR_ARG;
    /* our own listening socket: bind's errno makes the message, and a
     * port 0 resolves before the server starts */
    int fd = socket(sa.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return teller_error_set(err, TELLER_ERR_IO, NULL, 0, "listen on %s: socket: %s", hostport, strerror(errno));
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (sa.ss_family == AF_INET6)
        setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
    struct sockaddr_storage got;
    socklen_t gotlen = sizeof got;
    if (bind(fd, (struct sockaddr *)&sa, salen) != 0 || listen(fd, 16) != 0 ||
        getsockname(fd, (struct sockaddr *)&got, &gotlen) != 0) {
        int e = errno;
        close(fd);
        return teller_error_set(err, TELLER_ERR_IO, NULL, 0, "listen on %s: %s", hostport, strerror(e));
    }
    uint16_t port = ntohs(got.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&got)->sin6_port
                                                    : ((struct sockaddr_in *)&got)->sin_port);
    /* epoll or poll on Linux (not select, whose fds stop at 1024); a slow
     * or stuck client is dropped after 10 s; 32 clients at once */
    unsigned flags = MHD_USE_AUTO_INTERNAL_THREAD | (sa.ss_family == AF_INET6 ? MHD_USE_IPv6 : 0);
    m->daemon = MHD_start_daemon(flags, 0, NULL, NULL, handle, m, MHD_OPTION_LISTEN_SOCKET, fd,
                                 MHD_OPTION_CONNECTION_TIMEOUT, 10u, MHD_OPTION_CONNECTION_LIMIT, 32u,
                                 MHD_OPTION_END);
    if (!m->daemon) {
        close(fd); /* a daemon that did not start leaves it open; one stopped closes it */
        return teller_error_set(err, TELLER_ERR_IO, NULL, 0, "listen on %s: libmicrohttpd did not start", hostport);
    }
    m->port = port;
    return TELLER_OK;
}

uint16_t teller_watch_metrics_port(const teller_watch_metrics *m) { return m->daemon ? m->port : 0; }
