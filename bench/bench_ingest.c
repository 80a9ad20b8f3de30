/*
 * bench_ingest.c - how fast and how lean a Kineto trace loads.
 *
 * Times teller_load (the path every command takes: read, trees, the
 * one-run check) on one file (wall clock, CLOCK_MONOTONIC, one job) and
 * measures the peak resident memory the load added, from VmHWM in
 * /proc/self/status before and after. The interned
 * strings are reported apart: the memory target is "bytes per event plus
 * the strings", since string bytes grow with distinct names, not events.
 *
 * Output is one "key value" pair a line, for bench/run.sh to read:
 *   file, file_bytes, events, steps, warnings, seconds, mb_per_s,
 *   hwm_before_bytes, hwm_after_bytes, str_bytes, bytes_per_event
 * MB is 10^6 bytes. Exit status is 0 unless the file failed to load.
 *
 * usage: bench_ingest FILE
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "teller/load.h"

/* Peak resident set size in bytes (VmHWM), or 0 when /proc is not there. */
static unsigned long long vm_hwm(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    if (!f)
        return 0;
    char line[256];
    unsigned long long kb = 0;
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "VmHWM:", 6) == 0) {
            kb = strtoull(line + 6, NULL, 10);
            break;
        }
    }
    fclose(f);
    return kb * 1024;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s FILE\n", argv[0]);
        return 2;
    }
    const char *path = argv[1];
    struct stat sb;
    if (stat(path, &sb) != 0) {
        perror(path);
        return 1;
    }

    teller_store *st = teller_store_create();
    if (!st) {
        fprintf(stderr, "bench_ingest: out of memory\n");
        return 1;
    }
    teller_load_opts lo = teller_load_defaults();
    lo.jobs = 1;
    teller_error err;
    teller_error_clear(&err);

    unsigned long long hwm0 = vm_hwm();
    double t0 = now_s();
    teller_status s = teller_load(st, &path, 1, &lo, &err);
    double t2 = now_s();
    unsigned long long hwm1 = vm_hwm();
    if (s != TELLER_OK) {
        fprintf(stderr, "bench_ingest: %s:%llu: %s\n", err.file, (unsigned long long)err.offset, err.msg);
        teller_store_free(st);
        return 1;
    }

    size_t n = teller_store_events(st)->n;
    size_t str = teller_store_str_bytes(st);
    double secs = t2 - t0;
    double grown = (double)hwm1 - (double)hwm0 - (double)str;
    printf("file %s\n", path);
    printf("file_bytes %lld\n", (long long)sb.st_size);
    printf("events %zu\n", n);
    printf("steps %u\n", teller_store_step_count(st));
    printf("warnings %llu\n", (unsigned long long)teller_store_num_warnings(st));
    printf("seconds %.3f\n", secs);
    printf("mb_per_s %.1f\n", secs > 0 ? (double)sb.st_size / 1e6 / secs : 0.0);
    printf("hwm_before_bytes %llu\n", hwm0);
    printf("hwm_after_bytes %llu\n", hwm1);
    printf("str_bytes %zu\n", str);
    printf("bytes_per_event %.1f\n", n ? grown / (double)n : 0.0);
    teller_store_free(st);
    return 0;
}
