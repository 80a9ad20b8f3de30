/*
 * metrics_sample.c - the metrics of `teller watch` (src/watch/metrics.c) in
 * a state where every family has samples: steps of each kind, abnormal
 * ones of two fault types and one with a hostile name, a hang, silent
 * ranks, skipped items. For the checks that need a real exposition from
 * outside the test binary: the dashboard's metric names (test_metrics.c)
 * and the clients of tests/metrics_clients.sh (curl, promtool).
 *
 * usage: metrics_sample                       print the exposition
 *        metrics_sample --serve HOSTPORT SECONDS
 *                  serve it, print the port, stop after SECONDS
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "watch/metrics.h"

int main(int argc, char **argv)
{
    int serve = argc == 4 && !strcmp(argv[1], "--serve");
    if (argc != 1 && !serve) {
        fprintf(stderr, "usage: metrics_sample [--serve HOSTPORT SECONDS]\n");
        return 2;
    }
    teller_watch_metrics *m = teller_watch_metrics_create();
    if (!m) {
        fprintf(stderr, "metrics_sample: out of memory\n");
        return 1;
    }
    int64_t now = teller_watch_metrics_now_ns();
    for (int i = 0; i < 200; i++) {
        teller_step_kind k = (teller_step_kind)(i % 5);
        int abnormal = i % 17 == 0;
        teller_watch_metrics_step(m, k, 0.02 + 0.001 * (i % 13) + (abnormal ? 0.3 : 0), abnormal,
                                  i % 2 ? "communication" : "kernel", i % 2 ? "horizontal" : "vertical", now);
    }
    teller_watch_metrics_step(m, TELLER_STEP_DECODE, 0.5, 1, "<td>\"a\\b\nc\x1b[0m", "vertical", now);
    teller_watch_metrics_hang(m, now);
    teller_watch_metrics_silent_ranks(m, 1);
    teller_watch_metrics_skipped(m, TELLER_WATCH_SKIP_CHUNK, 2);
    teller_watch_metrics_skipped(m, TELLER_WATCH_SKIP_FILE, 1);
    teller_watch_metrics_skipped(m, TELLER_WATCH_SKIP_GARBAGE_BYTES, 513);
    int rc = 0;
    if (serve) {
        teller_error err;
        if (teller_watch_metrics_serve(m, argv[2], &err) != TELLER_OK) {
            fprintf(stderr, "metrics_sample: %s\n", err.msg);
            rc = 1;
        } else {
            printf("%u\n", (unsigned)teller_watch_metrics_port(m));
            fflush(stdout);
            sleep((unsigned)atoi(argv[3]));
        }
    } else {
        char *t = teller_watch_metrics_render(m, now + 1500000000, NULL);
        if (t)
            fputs(t, stdout);
        else
            rc = 1;
        free(t);
    }
    teller_watch_metrics_free(m);
    return rc;
}
