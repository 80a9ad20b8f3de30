/*
 * align_accuracy.c - how often teller_log_align_record maps a simulated
 * log record to the step the simulator wrote it for (truth.json
 * "log_steps"), per log family.
 *   align_accuracy CORPUS_DIR        (case directories with truth.json)
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ingest/jdom.h"
#include "teller/ingest.h"
#include "teller/logs.h"
#include "teller/tree.h"

typedef struct ctx {
    const teller_store *st;
    int32_t             node;
    const jv           *map;   /* [[line, step], ...] */
    long                total[TELLER_LOG_FAMILY_COUNT], exact[TELLER_LOG_FAMILY_COUNT], near[TELLER_LOG_FAMILY_COUNT];
} ctx;

static int truth_step(const jv *map, uint64_t line)
{
    size_t lo = 0, hi = map ? map->n : 0; /* sorted by line */
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        double l = map->items[mid].items[0].num;
        if (l < (double)line)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (map && lo < map->n && map->items[lo].items[0].num == (double)line)
        return (int)map->items[lo].items[1].num;
    return -1;
}

static int on_rec(void *p, const teller_log_record *rec)
{
    ctx *c = p;
    int want = truth_step(c->map, rec->line);
    if (want < 0)
        return 0;
    teller_log_align al;
    teller_log_align_record(c->st, c->node, rec, &al);
    c->total[rec->family]++;
    if (al.step != TELLER_NONE && (int)al.step == want)
        c->exact[rec->family]++;
    if (al.step != TELLER_NONE && abs((int)al.step - want) <= 2)
        c->near[rec->family]++;
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: align_accuracy CORPUS_DIR\n");
        return 2;
    }
    DIR *d = opendir(argv[1]);
    if (!d) {
        fprintf(stderr, "align_accuracy: cannot open %s\n", argv[1]);
        return 1;
    }
    ctx c;
    memset(&c, 0, sizeof c);
    struct dirent *de;
    int cases = 0;
    while ((de = readdir(d)) != NULL) {
        if (strncmp(de->d_name, "case_", 5))
            continue;
        char p[4096];
        snprintf(p, sizeof p, "%s/%s/truth.json", argv[1], de->d_name);
        teller_error err;
        jv *t = jdom_load(p, &err);
        if (!t)
            continue;
        teller_store *st = teller_store_create();
        for (int r = 0;; r++) {
            snprintf(p, sizeof p, "%s/%s/rank%d.trace.json.gz", argv[1], de->d_name, r);
            FILE *f = fopen(p, "rb");
            if (!f)
                break;
            fclose(f);
            teller_ingest_file(st, p, NULL, &err);
        }
        teller_tree_build(st, NULL, &err);
        const jv *ls = jdom_get(t, "log_steps");
        for (int n = 0;; n++) {
            char key[32];
            snprintf(key, sizeof key, "node%d", n);
            const jv *map = jdom_get(ls, key);
            if (!map)
                break;
            snprintf(p, sizeof p, "%s/%s/logs/node%d.log", argv[1], de->d_name, n);
            FILE *f = fopen(p, "rb");
            if (!f)
                continue;
            teller_log_opts lo = teller_log_defaults();
            lo.ref_ns = teller_store_num_steps(st) ? teller_store_steps(st)[0].start_ns : 0;
            teller_log_reader *r = teller_log_reader_create(&lo);
            c.st = st;
            c.node = n;
            c.map = map;
            char buf[1 << 16];
            size_t got;
            while ((got = fread(buf, 1, sizeof buf, f)) > 0)
                teller_log_reader_feed(r, buf, got, on_rec, &c, &err);
            teller_log_reader_finish(r, on_rec, &c, &err);
            teller_log_reader_free(r);
            fclose(f);
        }
        teller_store_free(st);
        jdom_free(t);
        cases++;
    }
    closedir(d);
    printf("log alignment on %d simulated cases: records mapped to the step they were written for\n", cases);
    printf("%-10s %8s %10s %12s\n", "family", "records", "exact", "within 2");
    long T = 0, E = 0, N = 0;
    for (int f = 0; f < TELLER_LOG_FAMILY_COUNT; f++) {
        if (!c.total[f])
            continue;
        printf("%-10s %8ld %10.3f %12.3f\n", teller_log_family_name((teller_log_family)f), c.total[f],
               (double)c.exact[f] / (double)c.total[f], (double)c.near[f] / (double)c.total[f]);
        T += c.total[f];
        E += c.exact[f];
        N += c.near[f];
    }
    if (T)
        printf("%-10s %8ld %10.3f %12.3f\n", "all", T, (double)E / (double)T, (double)N / (double)T);
    return 0;
}
