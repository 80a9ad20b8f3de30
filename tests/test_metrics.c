/*
 * test_metrics.c - the metrics of `teller watch` (src/watch/metrics.c):
 * the text exposition's exact lines, the quantiles of a known sequence,
 * hostile labels escaped, memory bounded by the window, and the server
 * scraped over a plain socket.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <malloc.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "check.h"
#include "watch/metrics.h"

/* Checks the shape of an exposition: every line ends in \n and is a HELP,
 * a TYPE or a sample; a family's HELP and TYPE come once, before its
 * samples; a sample's name is its family's (a summary's with _sum or
 * _count); the samples of a family are together. Returns the samples. */
static int exposition_shape_ok(const char *text)
{
    char family[128] = "", type[16] = "", seen[4096] = " ";
    int  samples = 0;
    const char *p = text;
    CHECK(*text && text[strlen(text) - 1] == '\n');
    while (*p) {
        const char *eol = strchr(p, '\n');
        if (!eol)
            break;
        char line[1024];
        size_t n = (size_t)(eol - p);
        CHECK(n < sizeof line);
        if (n >= sizeof line)
            return samples;
        memcpy(line, p, n);
        line[n] = 0;
        p = eol + 1;
        char name[128], word[16];
        if (sscanf(line, "# HELP %127s", name) == 1) {
            char key[132];
            snprintf(key, sizeof key, " %s ", name);
            CHECK(!strstr(seen, key)); /* one HELP a family: its samples together */
            if (strlen(seen) + strlen(key) < sizeof seen)
                strcat(seen, key + 1);
            snprintf(family, sizeof family, "%s", name);
            type[0] = 0;
        } else if (sscanf(line, "# TYPE %127s %15s", name, word) == 2) {
            CHECK(!strcmp(name, family));
            CHECK(!strcmp(word, "counter") || !strcmp(word, "gauge") || !strcmp(word, "summary"));
            snprintf(type, sizeof type, "%s", word);
        } else {
            size_t len = strcspn(line, "{ ");
            CHECK(len > 0 && len < sizeof name && type[0]);
            memcpy(name, line, len < sizeof name ? len : 0);
            name[len < sizeof name ? len : 0] = 0;
            size_t fl = strlen(family);
            int ok = !strcmp(name, family);
            if (!strcmp(type, "summary") && !strncmp(name, family, fl))
                ok |= !strcmp(name + fl, "_sum") || !strcmp(name + fl, "_count");
            CHECK(ok);
            if (!ok)
                fprintf(stderr, "  sample '%s' outside its family '%s'\n", line, family);
            samples++;
        }
    }
    return samples;
}

/* Whether text holds line (with its \n) whole. */
static int has_line(const char *text, const char *line)
{
    size_t n = strlen(line);
    for (const char *p = text; (p = strstr(p, line)); p++)
        if ((p == text || p[-1] == '\n') && p[n] == '\n')
            return 1;
    fprintf(stderr, "  missing line: %s\n", line);
    return 0;
}

static int count_prefix(const char *text, const char *prefix)
{
    int n = 0;
    size_t l = strlen(prefix);
    for (const char *p = text; *p; p = strchr(p, '\n') + 1) {
        n += !strncmp(p, prefix, l);
        if (!strchr(p, '\n'))
            break;
    }
    return n;
}

/* Counters, gauges and the skipped items after a few steps, line by line;
 * the age of the last finding absent before it and then taken at the
 * render. */
static void test_metrics_render_counts_steps_and_findings(void)
{
    teller_watch_metrics *m = teller_watch_metrics_create();
    int64_t t0 = 1000000000000;
    char *before = teller_watch_metrics_render(m, t0, NULL);
    CHECK(before && !strstr(before, "last_finding"));
    CHECK(before && has_line(before, "teller_watch_steps_total 0"));
    /* the fault table's pairs are there at 0 before any step */
    CHECK(before && has_line(before, "teller_watch_abnormal_steps_total{fault_type=\"memory\",view=\"vertical\"} 0"));
    free(before);

    for (int i = 0; i < 3; i++)
        teller_watch_metrics_step(m, TELLER_STEP_DECODE, 0.1, 0, "", "", t0 + i);
    teller_watch_metrics_step(m, TELLER_STEP_PREFILL, 1.5, 1, "communication", "horizontal", t0 + 10);
    teller_watch_metrics_step(m, TELLER_STEP_MIXED, 0.25, 1, "kernel", "vertical", t0 + 20);
    teller_watch_metrics_step(m, TELLER_STEP_MIXED, 0.5, 1, "kernel", "vertical", t0 + 30);
    teller_watch_metrics_silent_ranks(m, 2);
    teller_watch_metrics_skipped(m, TELLER_WATCH_SKIP_CHUNK, 3);
    teller_watch_metrics_skipped(m, TELLER_WATCH_SKIP_GARBAGE_BYTES, 4096);
    teller_watch_metrics_skipped(m, TELLER_WATCH_SKIP_GARBAGE_BYTES, 17);
    teller_watch_metrics_skipped(m, TELLER_WATCH_SKIP_COUNT, 99); /* out of range: ignored */

    size_t len = 0;
    char *t = teller_watch_metrics_render(m, t0 + 30 + 2500000000, &len);
    CHECK(t != NULL);
    if (!t) {
        teller_watch_metrics_free(m);
        return;
    }
    CHECK_EQ_INT(len, strlen(t));
    CHECK(has_line(t, "# TYPE teller_watch_steps_total counter"));
    CHECK(has_line(t, "teller_watch_steps_total 6"));
    CHECK(has_line(t, "teller_watch_abnormal_steps_total{fault_type=\"communication\",view=\"horizontal\"} 1"));
    CHECK(has_line(t, "teller_watch_abnormal_steps_total{fault_type=\"kernel\",view=\"vertical\"} 2"));
    CHECK(has_line(t, "teller_watch_abnormal_steps_total{fault_type=\"scheduling\",view=\"vertical\"} 0"));
    CHECK_EQ_INT(count_prefix(t, "teller_watch_abnormal_steps_total{"), 6); /* the fault table's six pairs */
    CHECK(has_line(t, "teller_watch_step_duration_seconds_count{kind=\"mixed\"} 2"));
    CHECK(has_line(t, "teller_watch_step_duration_seconds_sum{kind=\"mixed\"} 0.75"));
    CHECK(has_line(t, "teller_watch_step_duration_seconds_count{kind=\"decode\"} 3"));
    CHECK(has_line(t, "teller_watch_step_duration_seconds_sum{kind=\"decode\"} 0.30000000000000004"));
    CHECK(has_line(t, "teller_watch_step_duration_seconds{kind=\"iteration\",quantile=\"0.99\"} NaN"));
    CHECK(has_line(t, "teller_watch_step_duration_seconds_count{kind=\"other\"} 0"));
    CHECK(has_line(t, "# TYPE teller_watch_last_finding_age_seconds gauge"));
    CHECK(has_line(t, "teller_watch_last_finding_age_seconds 2.5"));
    CHECK(has_line(t, "teller_watch_hangs_total 0"));
    CHECK(has_line(t, "teller_watch_silent_ranks 2"));
    CHECK(has_line(t, "teller_watch_skipped_total{what=\"chunk\"} 3"));
    CHECK(has_line(t, "teller_watch_skipped_total{what=\"file\"} 0"));
    CHECK(has_line(t, "teller_watch_skipped_bytes_total 4113"));
    CHECK(strstr(t, "teller_watch_build_info{version=\"") != NULL);
    CHECK(strstr(t, "\nprocess_start_time_seconds 1") != NULL);
    CHECK(exposition_shape_ok(t) > 30);
    free(t);

    /* a hang is a finding too: the age starts again from it */
    teller_watch_metrics_hang(m, t0 + 5000000000);
    teller_watch_metrics_silent_ranks(m, 0);
    t = teller_watch_metrics_render(m, t0 + 5000000000, NULL);
    CHECK(t && has_line(t, "teller_watch_hangs_total 1"));
    CHECK(t && has_line(t, "teller_watch_last_finding_age_seconds 0"));
    CHECK(t && has_line(t, "teller_watch_silent_ranks 0"));
    free(t);
    teller_watch_metrics_free(m);
}

/* The quantiles of 1..100 s fed out of order are the nearest ranks 50, 90
 * and 99; sum and count over all. */
static void test_metrics_summary_quantiles_of_a_known_sequence(void)
{
    teller_watch_metrics *m = teller_watch_metrics_create();
    for (int i = 0; i < 100; i++)
        teller_watch_metrics_step(m, TELLER_STEP_DECODE, (double)(i * 37 % 100 + 1), 0, NULL, NULL, i);
    teller_watch_metrics_step(m, TELLER_STEP_PREFILL, 0.125, 0, NULL, NULL, 200);
    /* not a duration: counted as a step, not in the summary */
    teller_watch_metrics_step(m, TELLER_STEP_PREFILL, -1.0, 0, NULL, NULL, 201);
    char *t = teller_watch_metrics_render(m, 300, NULL);
    CHECK(t != NULL);
    if (t) {
        CHECK(has_line(t, "teller_watch_step_duration_seconds{kind=\"decode\",quantile=\"0.5\"} 50"));
        CHECK(has_line(t, "teller_watch_step_duration_seconds{kind=\"decode\",quantile=\"0.9\"} 90"));
        CHECK(has_line(t, "teller_watch_step_duration_seconds{kind=\"decode\",quantile=\"0.99\"} 99"));
        CHECK(has_line(t, "teller_watch_step_duration_seconds_sum{kind=\"decode\"} 5050"));
        CHECK(has_line(t, "teller_watch_step_duration_seconds_count{kind=\"decode\"} 100"));
        CHECK(has_line(t, "teller_watch_step_duration_seconds{kind=\"prefill\",quantile=\"0.5\"} 0.125"));
        CHECK(has_line(t, "teller_watch_step_duration_seconds{kind=\"prefill\",quantile=\"0.99\"} 0.125"));
        CHECK(has_line(t, "teller_watch_step_duration_seconds_count{kind=\"prefill\"} 1"));
        CHECK(has_line(t, "teller_watch_steps_total 102"));
        CHECK(has_line(t, "# TYPE teller_watch_step_duration_seconds summary"));
        CHECK(exposition_shape_ok(t) > 0);
    }
    free(t);
    teller_watch_metrics_free(m);
}

/* Names with quotes, backslashes, a newline, HTML, an escape byte and a
 * byte that is not UTF-8 come out as the format says: \" \\ \n escaped,
 * valid UTF-8 as it is, the bad byte as U+FFFD; a long one cut; more pairs
 * than the table holds go to ("other", "other"). */
static void test_metrics_hostile_labels_are_escaped(void)
{
    teller_watch_metrics *m = teller_watch_metrics_create();
    teller_watch_metrics_step(m, TELLER_STEP_DECODE, 1, 1, "<script>\"a\\b\nc\x1b[31m\xff", "</td>\xc3\xa9", 5);
    char longname[200];
    memset(longname, 'x', sizeof longname - 1);
    longname[sizeof longname - 1] = 0;
    teller_watch_metrics_step(m, TELLER_STEP_DECODE, 1, 1, longname, "vertical", 6);
    char *t = teller_watch_metrics_render(m, 10, NULL);
    CHECK(t != NULL);
    if (t) {
        CHECK(has_line(t, "teller_watch_abnormal_steps_total{fault_type=\"<script>\\\"a\\\\b\\nc\x1b[31m\xEF\xBF\xBD\","
                          "view=\"</td>\xc3\xa9\"} 1"));
        char want[200];
        snprintf(want, sizeof want, "teller_watch_abnormal_steps_total{fault_type=\"%.63s\",view=\"vertical\"} 1",
                 longname);
        CHECK(has_line(t, want));
        CHECK(exposition_shape_ok(t) > 0);
    }
    free(t);

    /* the table holds 64 pairs, the last ("other", "other") */
    for (int i = 0; i < 100; i++) {
        char ft[16];
        snprintf(ft, sizeof ft, "type%d", i);
        teller_watch_metrics_step(m, TELLER_STEP_OTHER, 1, 1, ft, "v", 20 + i);
    }
    t = teller_watch_metrics_render(m, 200, NULL);
    CHECK(t && count_prefix(t, "teller_watch_abnormal_steps_total{") == TELLER_WATCH_METRICS_PAIRS);
    /* 6 of the table + 2 above + 55 of type0..54 fill 63 rows; type55..99 go to the last */
    CHECK(t && has_line(t, "teller_watch_abnormal_steps_total{fault_type=\"type54\",view=\"v\"} 1"));
    CHECK(t && !strstr(t, "type55"));
    CHECK(t && has_line(t, "teller_watch_abnormal_steps_total{fault_type=\"other\",view=\"other\"} 45"));
    CHECK(t && has_line(t, "teller_watch_steps_total 102"));
    free(t);
    teller_watch_metrics_free(m);
}

/* Past the window the quantiles see only the last 1024 steps of a kind,
 * sum and count still all of them, and stepping allocates nothing. */
static void test_metrics_window_bounds_memory(void)
{
    teller_watch_metrics *m = teller_watch_metrics_create();
    int n_old = 5000 - TELLER_WATCH_METRICS_WINDOW;
    for (int i = 0; i < n_old; i++)
        teller_watch_metrics_step(m, TELLER_STEP_DECODE, 1000.0, 0, NULL, NULL, i);
    for (int i = 1; i <= TELLER_WATCH_METRICS_WINDOW; i++)
        teller_watch_metrics_step(m, TELLER_STEP_DECODE, (double)i, 0, NULL, NULL, n_old + i);
    char *t = teller_watch_metrics_render(m, 10000, NULL);
    CHECK(t != NULL);
    if (t) {
        /* nearest ranks of 1..1024: ceil(0.5 * 1024) = 512, ceil(0.99 * 1024) = 1014 */
        CHECK(has_line(t, "teller_watch_step_duration_seconds{kind=\"decode\",quantile=\"0.5\"} 512"));
        CHECK(has_line(t, "teller_watch_step_duration_seconds{kind=\"decode\",quantile=\"0.9\"} 922"));
        CHECK(has_line(t, "teller_watch_step_duration_seconds{kind=\"decode\",quantile=\"0.99\"} 1014"));
        CHECK(has_line(t, "teller_watch_step_duration_seconds_count{kind=\"decode\"} 5000"));
        char want[128];
        snprintf(want, sizeof want, "teller_watch_step_duration_seconds_sum{kind=\"decode\"} %d",
                 n_old * 1000 + TELLER_WATCH_METRICS_WINDOW * (TELLER_WATCH_METRICS_WINDOW + 1) / 2);
        CHECK(has_line(t, want));
    }
    free(t);
    /* 100k more steps of every kind and fault pair: the heap stays as it was */
    size_t before = mallinfo2().uordblks;
    for (int i = 0; i < 100000; i++)
        teller_watch_metrics_step(m, (teller_step_kind)(i % 5), i * 1e-3, i % 3 == 0, "kernel", "vertical", i);
    CHECK_EQ_INT(mallinfo2().uordblks, before);
    teller_watch_metrics_free(m);
}

/* contrib/grafana/teller-watch.json passes tests/tools/check_dashboard.py
 * (its schema, its grid and variables, and every metric it reads rendered
 * by metrics_sample); a copy with a misspelt metric, and one without
 * panels, do not. */
static void test_metrics_dashboard_reads_rendered_metrics(void)
{
    char dir[] = "/tmp/teller_dash_XXXXXX", cmd[8192], out[8192];
    CHECK(mkdtemp(dir) != NULL);
    const char *dash = TELLER_SOURCE_DIR "/contrib/grafana/teller-watch.json";
    const char *schema = TELLER_SOURCE_DIR "/contrib/grafana/dashboard.schema.json";
    const char *tool = TELLER_SOURCE_DIR "/tests/tools/check_dashboard.py";
    snprintf(cmd, sizeof cmd, "'%s' > '%s/sample.prom'", TELLER_METRICS_SAMPLE, dir);
    CHECK_EQ_INT(run_shell(cmd, out, sizeof out), 0);
    snprintf(cmd, sizeof cmd, "/usr/bin/python3 '%s' '%s' '%s' '%s/sample.prom'", tool, dash, schema, dir);
    int rc = run_shell(cmd, out, sizeof out);
    CHECK_EQ_INT(rc, 0);
    if (rc)
        fprintf(stderr, "%s", out);
    CHECK(strstr(out, "teller_watch_abnormal_steps_total") && strstr(out, "teller_watch_step_duration_seconds"));

    snprintf(cmd, sizeof cmd, "sed 's/teller_watch_silent_ranks{/teller_watch_silent_rank{/' '%s' > '%s/bad.json' && "
                              "/usr/bin/python3 '%s' '%s/bad.json' '%s' '%s/sample.prom'", dash, dir, tool, dir, schema, dir);
    CHECK_EQ_INT(run_shell(cmd, out, sizeof out), 1);
    CHECK(strstr(out, "metric teller_watch_silent_rank is not in the exposition") != NULL);
    snprintf(cmd, sizeof cmd, "sed 's/\"panels\":/\"panes\":/' '%s' > '%s/bad.json' && "
                              "/usr/bin/python3 '%s' '%s/bad.json' '%s' '%s/sample.prom'", dash, dir, tool, dir, schema, dir);
    CHECK_EQ_INT(run_shell(cmd, out, sizeof out), 1);
    CHECK(strstr(out, "schema: (top): 'panels' is a required property") != NULL);
    rm_rf(dir);
}

/* ---- the server, over a plain socket ---- */

/* Sends req to 127.0.0.1:port (or ::1 when v6) and reads the answer until
 * the server closes, 5 s at most; a malloc'd string, NULL on failure. */
static char *http_exchange(int v6, uint16_t port, const char *req)
{
    int fd = socket(v6 ? AF_INET6 : AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        return NULL;
    struct timeval tv = {5, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    struct sockaddr_storage sa = {0};
    socklen_t salen;
    if (v6) {
        struct sockaddr_in6 *a = (struct sockaddr_in6 *)&sa;
        a->sin6_family = AF_INET6;
        a->sin6_port = htons(port);
        a->sin6_addr = in6addr_loopback;
        salen = sizeof *a;
    } else {
        struct sockaddr_in *a = (struct sockaddr_in *)&sa;
        a->sin_family = AF_INET;
        a->sin_port = htons(port);
        a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        salen = sizeof *a;
    }
    char *out = NULL;
    if (connect(fd, (struct sockaddr *)&sa, salen) == 0 && send(fd, req, strlen(req), 0) == (ssize_t)strlen(req)) {
        size_t cap = 1 << 16, n = 0;
        out = malloc(cap + 1);
        ssize_t r;
        while (out && n < cap && (r = recv(fd, out + n, cap - n, 0)) > 0)
            n += (size_t)r;
        if (out)
            out[n] = 0;
    }
    close(fd);
    return out;
}

static int open_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    int n = 0;
    if (!d)
        return -1;
    while (readdir(d))
        n++;
    closedir(d);
    return n;
}

static const char k_content_type[] = "\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\n";

/* GET /metrics on 127.0.0.1:0 answers 200 with the exposition's content
 * type and the metrics; another path 404, POST 405; a bad or busy address
 * a clear error; free closes everything serve opened. */
static void test_metrics_served_over_http(void)
{
    int fds = open_fds();
    teller_watch_metrics *m = teller_watch_metrics_create();
    teller_error err;
    CHECK_EQ_INT(teller_watch_metrics_port(m), 0);
    CHECK_EQ_INT(teller_watch_metrics_serve(m, "127.0.0.1:0", &err), TELLER_OK);
    uint16_t port = teller_watch_metrics_port(m);
    CHECK(port != 0);
    teller_watch_metrics_step(m, TELLER_STEP_DECODE, 0.5, 1, "memory", "vertical", teller_watch_metrics_now_ns());

    char *r = http_exchange(0, port, "GET /metrics HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
    CHECK(r != NULL);
    if (r) {
        CHECK(!strncmp(r, "HTTP/1.1 200 ", 13));
        CHECK(strstr(r, k_content_type) != NULL);
        const char *body = strstr(r, "\r\n\r\n");
        CHECK(body && strstr(body, "\nteller_watch_steps_total 1\n"));
        CHECK(body && strstr(body, "\nteller_watch_abnormal_steps_total{fault_type=\"memory\",view=\"vertical\"} 1\n"));
        CHECK(body && strstr(body, "\nteller_watch_last_finding_age_seconds "));
        CHECK(body && exposition_shape_ok(body + 4) > 30);
    }
    free(r);
    /* and with curl, a real client */
    char cmd[256], out[1 << 14];
    snprintf(cmd, sizeof cmd, "curl -sS -i --max-time 5 http://127.0.0.1:%u/metrics", (unsigned)port);
    CHECK_EQ_INT(run_shell(cmd, out, sizeof out), 0);
    CHECK(!strncmp(out, "HTTP/1.1 200 ", 13) && strstr(out, k_content_type));
    CHECK(strstr(out, "\nteller_watch_steps_total 1\n") != NULL);
    snprintf(cmd, sizeof cmd, "curl -sS -o /dev/null -w '%%{http_code}' --max-time 5 http://127.0.0.1:%u/", (unsigned)port);
    CHECK_EQ_INT(run_shell(cmd, out, sizeof out), 0);
    CHECK(!strcmp(out, "404"));

    r = http_exchange(0, port, "GET /other HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
    CHECK(r && !strncmp(r, "HTTP/1.1 404 ", 13));
    CHECK(r && !strstr(r, "teller_watch_"));
    free(r);
    r = http_exchange(0, port, "POST /metrics HTTP/1.1\r\nHost: localhost\r\nContent-Length: 2\r\nConnection: close\r\n\r\nab");
    CHECK(r && !strncmp(r, "HTTP/1.1 405 ", 13));
    CHECK(r && strstr(r, "\r\nAllow: GET, HEAD\r\n"));
    free(r);
    r = http_exchange(0, port, "HEAD /metrics HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
    CHECK(r && !strncmp(r, "HTTP/1.1 200 ", 13) && strstr(r, k_content_type));
    CHECK(r && !strstr(r, "teller_watch_steps_total"));
    free(r);

    /* a second serve on the same handle, and another handle on the busy port */
    CHECK_EQ_INT(teller_watch_metrics_serve(m, "127.0.0.1:0", &err), TELLER_ERR_ARG);
    teller_watch_metrics *m2 = teller_watch_metrics_create();
    char busy[32];
    snprintf(busy, sizeof busy, "127.0.0.1:%u", (unsigned)port);
    CHECK_EQ_INT(teller_watch_metrics_serve(m2, busy, &err), TELLER_ERR_IO);
    CHECK(strstr(err.msg, busy) && strstr(err.msg, "in use"));
    const char *bad[] = {"", "127.0.0.1", "localhost:9464", "::1:9464", "[::1]9464", "[::1:9464", "127.0.0.1:65536",
                         "127.0.0.1:-1", "127.0.0.1:", "1.2.3.4.5:80", "127.0.0.1:80x", "[127.0.0.1]:80"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        CHECK_EQ_INT(teller_watch_metrics_serve(m2, bad[i], &err), TELLER_ERR_ARG);
        CHECK(strstr(err.msg, "IPv4:PORT or [IPv6]:PORT") != NULL);
    }
    CHECK_EQ_INT(teller_watch_metrics_port(m2), 0);
    /* IPv6 where the machine has it */
    int probe = socket(AF_INET6, SOCK_STREAM, 0);
    struct sockaddr_in6 a6 = {.sin6_family = AF_INET6, .sin6_addr = IN6ADDR_LOOPBACK_INIT};
    int have_v6 = probe >= 0 && bind(probe, (struct sockaddr *)&a6, sizeof a6) == 0;
    if (probe >= 0)
        close(probe);
    if (have_v6) {
        CHECK_EQ_INT(teller_watch_metrics_serve(m2, "[::1]:0", &err), TELLER_OK);
        r = http_exchange(1, teller_watch_metrics_port(m2), "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
        CHECK(r && !strncmp(r, "HTTP/1.1 200 ", 13) && strstr(r, "\nteller_watch_steps_total 0\n"));
        free(r);
    } else {
        fprintf(stderr, "  (no IPv6 loopback here: [::1] not tried)\n");
    }
    teller_watch_metrics_free(m2);
    teller_watch_metrics_free(m);
    CHECK_EQ_INT(open_fds(), fds);
}

const test_case metrics_tests[] = {
    {"metrics render counts steps and findings", test_metrics_render_counts_steps_and_findings},
    {"metrics summary quantiles of a known sequence", test_metrics_summary_quantiles_of_a_known_sequence},
    {"metrics hostile labels are escaped", test_metrics_hostile_labels_are_escaped},
    {"metrics window bounds memory", test_metrics_window_bounds_memory},
    {"metrics served over http", test_metrics_served_over_http},
    {"metrics dashboard reads rendered metrics", test_metrics_dashboard_reads_rendered_metrics},
    {NULL, NULL},
};
