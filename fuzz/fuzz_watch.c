/*
 * fuzz_watch.c - libFuzzer target for the watcher's reading side
 * (src/watch/follow.c): a .tlt file that arrives in two pieces, split
 * where the input's first byte says, and the same bytes as a log file;
 * polled after each piece, then once more as the end of the run.
 *
 * The input past the first byte is the file, prefixed with the .tlt magic
 * when it lacks it; odd lengths get their checksums rewritten (tlt_fix.h)
 * so that mutations reach the records, the markers and the windows.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tlt_fix.h"
#include "watch/watch.h"

static char g_dir[64], g_tlt[128], g_log[128];

static int append(const char *path, const uint8_t *d, size_t n)
{
    FILE *f = fopen(path, "ab");
    if (!f)
        return -1;
    size_t k = fwrite(d, 1, n, f);
    return fclose(f) || k != n ? -1 : 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    if (!g_dir[0]) {
        char logs[96], traces[96];
        snprintf(g_dir, sizeof g_dir, "/tmp/fuzz_watch_XXXXXX");
        if (!mkdtemp(g_dir))
            abort();
        snprintf(traces, sizeof traces, "%s/traces", g_dir);
        snprintf(logs, sizeof logs, "%s/logs", g_dir);
        if (mkdir(traces, 0700) || mkdir(logs, 0700))
            abort();
        snprintf(g_tlt, sizeof g_tlt, "%s/node0-1.tlt", traces);
        snprintf(g_log, sizeof g_log, "%s/stdout.log", logs);
    }
    unlink(g_tlt);
    unlink(g_log);
    size_t n;
    uint8_t *buf = tlt_fuzz_file(data + 1, size - 1, &n);
    if (!buf)
        return 0;
    size_t split = n * data[0] / 255;
    const char *dirs[1] = {g_dir};
    teller_watch_opts o = teller_watch_defaults();
    o.dirs = dirs;
    o.ndirs = 1;
    o.window = 4;
    o.batch = 4;
    o.hang_ns = 1000000000LL;
    o.load.jobs = 1;
    o.diag.jobs = 1;
    teller_watch *w = NULL;
    teller_error err;
    if (teller_watch_open(&o, &w, &err) != TELLER_OK)
        abort();
    int64_t now = 1700000000000000000LL;
    if (append(g_tlt, buf, split) == 0 && append(g_log, buf, split) == 0) {
        teller_watch_poll(w, now, 0, &err);
        if (append(g_tlt, buf + split, n - split) == 0 && append(g_log, buf + split, n - split) == 0) {
            teller_watch_poll(w, now + 2000000000LL, 0, &err);
            teller_watch_poll(w, now + 4000000000LL, 1, &err);
        }
    }
    teller_watch_free(w);
    free(buf);
    return 0;
}
