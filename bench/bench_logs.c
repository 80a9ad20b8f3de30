/*
 * bench_logs.c - template-mining throughput on one core.
 *
 * usage: bench_logs FILE
 * Reads FILE (a log, one record per line) through the streaming reader and
 * mines every record's template, single-threaded, and prints
 * "lines=N seconds=S lines_per_s=R templates=T" (one line, key=value) for
 * bench/run.sh. A second figure, mine_only, times the miner alone on the
 * records' messages, to separate parsing from mining.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "teller/logs.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static int on_record(void *ctx, const teller_log_record *rec)
{
    teller_log_miner *m = ctx;
    teller_log_match mt;
    teller_log_param p[16];
    return teller_log_miner_add(m, rec->key.p, rec->key.n, &mt, p, 16) != TELLER_OK;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: bench_logs FILE\n");
        return 2;
    }
    FILE *f = fopen(argv[1], "rb");
    if (!f) {
        fprintf(stderr, "bench_logs: cannot open %s\n", argv[1]);
        return 1;
    }
    fseek(f, 0, SEEK_END);
    long sz = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)sz + 1);
    if (!buf || fread(buf, 1, (size_t)sz, f) != (size_t)sz) {
        fprintf(stderr, "bench_logs: cannot read %s\n", argv[1]);
        return 1;
    }
    fclose(f);

    /* reader + miner, as `teller logs` runs them */
    teller_log_opts o = teller_log_defaults();
    o.ref_ns = 1735689600000000000LL;
    teller_log_reader *r = teller_log_reader_create(&o);
    teller_log_miner *m = teller_log_miner_create(NULL);
    if (!r || !m)
        return 1;
    double t0 = now();
    for (long off = 0; off < sz; off += 1 << 20) {
        size_t n = (size_t)(sz - off < (1 << 20) ? sz - off : (1 << 20));
        teller_log_reader_feed(r, buf + off, n, on_record, m, NULL);
    }
    teller_log_reader_finish(r, on_record, m, NULL);
    double t1 = now();
    uint64_t lines = teller_log_reader_stats(r)->lines;

    /* miner alone on raw lines */
    teller_log_miner *m2 = teller_log_miner_create(NULL);
    double t2 = now();
    uint64_t n2 = 0;
    for (char *p = buf, *end = buf + sz; p < end;) {
        char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t len = (size_t)((nl ? nl : end) - p);
        teller_log_match mt;
        teller_log_miner_add(m2, p, len, &mt, NULL, 0);
        n2++;
        p += len + 1;
    }
    double t3 = now();
    printf("lines=%llu seconds=%.4f lines_per_s=%.0f templates=%u mine_only_lines_per_s=%.0f bytes=%ld\n",
           (unsigned long long)lines, t1 - t0, lines / (t1 - t0), teller_log_miner_count(m),
           n2 / (t3 - t2), sz);
    teller_log_reader_free(r);
    teller_log_miner_free(m);
    teller_log_miner_free(m2);
    free(buf);
    return 0;
}
