/*
 * test_replay.c - `teller replay` (src/watch/replay.c): what it writes reads
 * back as the events, steps and log lines it was given, moved by its shift;
 * --loop, --rotate and --keep; pacing; a stop by signal; bad inputs.
 */
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "teller/load.h"
#include "teller/sim.h"
#include "watch/replay.h"
#include "ingest/tlt_chunk.h"
#include <dirent.h>
#include <stdio.h>

/* the tests' --start-ns: 2027-01-15 08:00 UTC */
static const int64_t T_START = 1800000000000000000LL;

/* Loads names (files or directories) as one run, jobs 1. NULL on failure. */
static teller_store *load(const char *const *names, size_t n)
{
    char **files = NULL;
    size_t nf = 0;
    teller_error err;
    teller_error_clear(&err);
    teller_store *st = teller_store_create();
    teller_load_opts o = teller_load_defaults();
    o.jobs = 1;
    teller_status s = teller_load_expand(names, n, &files, &nf, &err);
    if (s == TELLER_OK)
        s = teller_load(st, (const char *const *)files, nf, &o, &err);
    if (s != TELLER_OK) {
        fprintf(stderr, "  load: %s: %s\n", err.file, err.msg);
        teller_store_free(st);
        st = NULL;
    }
    teller_load_files_free(files, nf);
    return st;
}

static teller_store *load1(const char *name) { return load(&name, 1); }

/* Replays st (and logs) into out at --speed 0 from T_START. */
static teller_status replay(const teller_store *st, const char *const *logs, size_t nlogs, const char *out,
                            replay_opts o, replay_stats *S, teller_error *err)
{
    o.out = out;
    if (o.start_ns == INT64_MIN)
        o.start_ns = T_START;
    teller_error_clear(err);
    return replay_run(st, logs, nlogs, &o, S, err);
}

static replay_opts fast(void)
{
    replay_opts o = replay_defaults();
    o.speed = 0;
    return o;
}

/* One event as the test compares it. */
typedef struct ev_key {
    int32_t     rank, pid, tid;
    uint8_t     layer;
    int64_t     start, dur;
    const char *name;
} ev_key;

static int key_cmp(const void *a, const void *b)
{
    const ev_key *x = a, *y = b;
    if (x->rank != y->rank) return x->rank < y->rank ? -1 : 1;
    if (x->layer != y->layer) return x->layer < y->layer ? -1 : 1;
    if (x->start != y->start) return x->start < y->start ? -1 : 1;
    if (x->dur != y->dur) return x->dur < y->dur ? -1 : 1;
    if (x->pid != y->pid) return x->pid < y->pid ? -1 : 1;
    if (x->tid != y->tid) return x->tid < y->tid ? -1 : 1;
    return strcmp(x->name, y->name);
}

/* Whether the collector records an event of this layer and these flags,
 * and the layer the .tlt reader gives it back in (said here again, apart
 * from the replay's own rule, so that the test checks that rule). */
static int kept_layer(uint8_t layer, uint8_t flags)
{
    switch (layer) {
    case TELLER_LAYER_KERNEL: case TELLER_LAYER_MEMCPY: case TELLER_LAYER_MEMSET: case TELLER_LAYER_SYNC:
    case TELLER_LAYER_RUNTIME: case TELLER_LAYER_DRIVER: return layer;
    default: break;
    }
    if (flags & (TELLER_F_GPU | TELLER_F_INSTANT | TELLER_F_COUNTER))
        return -1;
    if (layer == TELLER_LAYER_ENGINE || (flags & TELLER_F_STEP))
        return TELLER_LAYER_ENGINE;
    return layer == TELLER_LAYER_BACKEND && (flags & TELLER_F_COMM) ? TELLER_LAYER_BACKEND : -1;
}

/* The kept events of st, times minus shift, sorted. A sync's device is
 * what the .tlt reader can know of it: the device of its context's GPU
 * work, so unknown (-1) on a device its process ran none on. */
static ev_key *keys_of(const teller_store *st, int64_t shift, size_t *n)
{
    const teller_events *ev = teller_store_events(st);
    ev_key *k = malloc((ev->n ? ev->n : 1) * sizeof *k);
    uint64_t *devs = calloc(teller_store_num_sources(st) + 1, sizeof *devs); /* per source: devices 0-63 worked on */
    *n = 0;
    for (size_t i = 0; devs && i < ev->n; i++)
        if (teller_layer_is_gpu_work(ev->layer[i]) && (uint32_t)teller_event_pid(ev, i) < 64)
            devs[ev->source[i]] |= 1ull << teller_event_pid(ev, i);
    for (size_t i = 0; k && devs && i < ev->n; i++) {
        int L = kept_layer(ev->layer[i], ev->flags[i]);
        if (L < 0)
            continue;
        int32_t pid = teller_event_pid(ev, i);
        if (L == TELLER_LAYER_SYNC && ((uint32_t)pid >= 64 || !(devs[ev->source[i]] >> pid & 1)))
            pid = -1;
        k[(*n)++] = (ev_key){teller_store_event_rank(st, (uint32_t)i), pid, teller_event_tid(ev, i), (uint8_t)L,
                             ev->start_ns[i] - shift, ev->dur_ns[i], teller_store_str(st, ev->name[i])};
    }
    free(devs);
    if (k)
        qsort(k, *n, sizeof *k, key_cmp);
    return k;
}

/* The replayed store holds a's kept events, moved by shift; its launch
 * links, steps and step summaries are a's. Returns the events compared. */
static size_t check_same_run(const teller_store *a, const teller_store *b, int64_t shift)
{
    size_t na = 0, nb = 0, same = 0;
    ev_key *ka = keys_of(a, 0, &na), *kb = keys_of(b, shift, &nb);
    CHECK(ka && kb);
    CHECK_EQ_INT(na, nb);
    for (size_t i = 0; ka && kb && i < na && i < nb; i++) {
        int eq = key_cmp(&ka[i], &kb[i]) == 0;
        if (!eq && same == i)
            fprintf(stderr, "  first difference at %zu: rank %d layer %d start %lld dur %lld %d/%d %s | rank %d layer "
                            "%d start %lld dur %lld %d/%d %s\n", i, ka[i].rank, ka[i].layer, (long long)ka[i].start,
                    (long long)ka[i].dur, ka[i].pid, ka[i].tid, ka[i].name, kb[i].rank, kb[i].layer,
                    (long long)kb[i].start, (long long)kb[i].dur, kb[i].pid, kb[i].tid, kb[i].name);
        same += (size_t)eq;
    }
    CHECK_EQ_INT(same, na);
    free(ka);
    free(kb);
    teller_tree_stats sa, sb;
    teller_tree_stats_get(a, &sa);
    teller_tree_stats_get(b, &sb);
    CHECK_EQ_INT(sb.kernels, sa.kernels);
    CHECK_EQ_INT(sb.kernels_linked, sa.kernels_linked);
    CHECK_EQ_INT(sb.gpu_ops_linked, sa.gpu_ops_linked);
    CHECK_EQ_INT(sb.comm_kernels, sa.comm_kernels);
    CHECK_EQ_INT(teller_store_num_steps(b), teller_store_num_steps(a));
    teller_step_summary *ua = NULL, *ub = NULL;
    size_t nua = 0, nub = 0;
    teller_error err;
    CHECK_EQ_INT(teller_step_summaries(a, &ua, &nua, &err), TELLER_OK);
    CHECK_EQ_INT(teller_step_summaries(b, &ub, &nub, &err), TELLER_OK);
    CHECK_EQ_INT(nub, nua);
    size_t steps_same = 0;
    for (size_t i = 0; i < nua && i < nub; i++) {
        ub[i].start_ns -= shift;
        steps_same += (size_t)(memcmp(&ua[i], &ub[i], sizeof ua[i]) == 0);
    }
    CHECK_EQ_INT(steps_same, nua);
    free(ua);
    free(ub);
    return na;
}

/* A 12-step case of nodes x gpus ranks (tensor parallel inside a node,
 * pipeline across nodes), its logs in the capture form or the engine's,
 * replayed and read back: the same run. */
static void check_sim_roundtrip(int nodes, int gpus, uint64_t seed, int log_capture)
{
    char dir[] = "/tmp/teller_replay_sim_XXXXXX", out[4200];
    teller_sim_opts o = teller_sim_defaults();
    o.nodes = nodes;
    o.gpus_per_node = o.tp = gpus;
    o.pp = nodes;
    o.steps = 12;
    o.seed = seed;
    o.log_capture = log_capture;
    sim_case(dir, &o);
    snprintf(out, sizeof out, "%s/out", dir);
    teller_store *a = load1(dir);
    CHECK(a != NULL);
    char lp[2][4200];
    const char *logs[2] = {lp[0], lp[1]};
    int nlogs = 0;
    for (int n = 0; n < 2; n++) {
        snprintf(lp[nlogs], sizeof lp[nlogs], "%s/logs/node%d.log", dir, n);
        nlogs += access(lp[nlogs], R_OK) == 0;
    }
    CHECK_EQ_INT(nlogs, o.nodes);
    replay_stats S;
    teller_error err;
    CHECK_EQ_INT(replay(a, logs, (size_t)nlogs, out, fast(), &S, &err), TELLER_OK);
    teller_store *b = load1(out);
    CHECK(b != NULL);
    if (a && b) {
        CHECK(check_same_run(a, b, S.shift_ns) > 1000);
        CHECK_EQ_INT(teller_store_step_count(b), o.steps);
        CHECK_EQ_INT(teller_store_num_warnings(b), 0); /* every file ends with END */
        /* the node clocks come out as they went in */
        CHECK_EQ_INT(teller_store_num_nodes(b), teller_store_num_nodes(a));
        for (size_t i = 0; i < teller_store_num_nodes(a) && i < teller_store_num_nodes(b); i++)
            CHECK_EQ_INT(teller_store_nodes(b)[i].offset_ns, teller_store_nodes(a)[i].offset_ns);
    }
    /* the logs: every line, in the capture form, at its time moved by the shift */
    for (int n = 0; n < nlogs; n++) {
        char p[4400];
        snprintf(p, sizeof p, "%s/logs/node%d.log", out, n);
        size_t la = 0, lb = 0;
        char *ta = read_file(logs[n], &la), *tb = read_file(p, &lb);
        CHECK(ta && tb);
        size_t lines = 0, same = 0;
        for (char *x = ta, *y = tb; x && y && *x && *y; lines++) {
            char *ex = strchr(x, '\n'), *ey = strchr(y, '\n');
            if (!ex || !ey)
                break;
            char *rest = NULL;
            long long t = strtoll(y, &rest, 10);
            if (log_capture) {
                char *xr = NULL;
                long long tx = strtoll(x, &xr, 10);
                same += (size_t)(t - S.shift_ns == tx && ex - xr == ey - rest && !memcmp(xr, rest, (size_t)(ex - xr)));
            } else {
                same += (size_t)(t > 0 && *rest == ' ' && ex - x == ey - rest - 1 && !memcmp(x, rest + 1, (size_t)(ex - x)));
            }
            x = ex + 1;
            y = ey + 1;
        }
        CHECK(lines >= 2);
        CHECK_EQ_INT(same, lines);
        CHECK_EQ_INT(S.log_lines >= lines, 1);
        free(ta);
        free(tb);
    }
    teller_store_free(a);
    teller_store_free(b);
    rm_rf(dir);
}

static void test_replay_sim_two_ranks_reads_back_the_same(void) { check_sim_roundtrip(1, 2, 1, 1); }

static void test_replay_sim_two_nodes_keeps_clock_offsets(void) { check_sim_roundtrip(2, 1, 7, 0); }

static void test_replay_real_two_rank_traces_read_back_the_same(void)
{
    const char *sets[] = {"hta/trace_filter", "nsys-ai/mfu_2gpu_after.sqlite"};
    for (size_t s = 0; s < 2; s++) {
        char dir[] = "/tmp/teller_replay_real_XXXXXX", out[4200];
        CHECK(mkdtemp(dir) != NULL);
        snprintf(out, sizeof out, "%s/out", dir);
        teller_store *a = load1(shared_path(sets[s]));
        CHECK(a != NULL);
        replay_stats S;
        teller_error err;
        CHECK_EQ_INT(a ? replay(a, NULL, 0, out, fast(), &S, &err) : TELLER_ERR_IO, TELLER_OK);
        teller_store *b = load1(out);
        CHECK(b != NULL);
        if (a && b) {
            CHECK(check_same_run(a, b, S.shift_ns) > 2000);
            CHECK_EQ_INT(teller_store_num_sources(b), 2);
            CHECK(teller_store_step_count(b) >= 1);
        }
        teller_store_free(a);
        teller_store_free(b);
        rm_rf(dir);
    }
}

/* Every event of one name of a store, the count. */
static size_t count_name(const teller_store *st, const char *name)
{
    const teller_events *ev = teller_store_events(st);
    size_t n = 0;
    for (size_t i = 0; i < ev->n; i++)
        n += !strcmp(teller_store_str(st, ev->name[i]), name);
    return n;
}

static void test_replay_loop_renumbers_profiler_steps(void)
{
    char dir[] = "/tmp/teller_replay_loop_XXXXXX", out[4200];
    CHECK(mkdtemp(dir) != NULL);
    snprintf(out, sizeof out, "%s/out", dir);
    teller_store *a = load1(shared_path("hta/trace_filter")); /* ProfilerStep#551, #552 on two ranks */
    CHECK(a != NULL);
    replay_opts o = fast();
    o.loop = 3;
    replay_stats S;
    teller_error err;
    CHECK_EQ_INT(a ? replay(a, NULL, 0, out, o, &S, &err) : TELLER_ERR_IO, TELLER_OK);
    teller_store *b = load1(out);
    CHECK(b != NULL);
    if (a && b) {
        CHECK_EQ_INT(S.steps, 3 * 2 * 2);
        CHECK(S.period_ns > 0);
        /* three copies, the numbers rising: the tree numbers steps by them */
        CHECK_EQ_INT(teller_store_step_count(b), 3 * teller_store_step_count(a));
        CHECK_EQ_INT(count_name(b, "ProfilerStep#551"), 2);
        CHECK_EQ_INT(count_name(b, "ProfilerStep#554"), 2);
        CHECK_EQ_INT(count_name(b, "ProfilerStep#556"), 2);
        const teller_step *sp = teller_store_steps(b);
        for (size_t i = 0; i < teller_store_num_steps(b); i++) {
            const char *m = teller_store_str(b, teller_store_events(b)->name[sp[i].marker]);
            CHECK_EQ_INT(strtol(m + 13, NULL, 10), 551 + (long)sp[i].step);
        }
        /* correlation ids unique in each file: every copy's launches keep their kernels */
        teller_tree_stats sa, sb;
        teller_tree_stats_get(a, &sa);
        teller_tree_stats_get(b, &sb);
        CHECK_EQ_INT(sb.kernels, 3 * sa.kernels);
        CHECK_EQ_INT(sb.kernels_linked, 3 * sa.kernels_linked);
        CHECK_EQ_INT(teller_store_num_warnings(b), 0);
    }
    teller_store_free(a);
    teller_store_free(b);
    rm_rf(dir);
}

/* A healthy 2-rank case of `steps` steps simulated into dir (a mkdtemp
 * template), out set to dir/out; the case loaded (NULL, CHECKed, when not). */
static teller_store *healthy_case(char *dir, char *out, size_t cap, int steps)
{
    sim_healthy(dir, 1, 2, 2, 1, steps, 3);
    snprintf(out, cap, "%s/out", dir);
    teller_store *a = load1(dir);
    CHECK(a != NULL);
    return a;
}

static void test_replay_rotate_starts_new_files_and_keep_deletes_old(void)
{
    char dir[] = "/tmp/teller_replay_rot_XXXXXX", out[4200];
    teller_store *a = healthy_case(dir, out, sizeof out, 10);
    replay_opts o = fast();
    o.loop = 3;
    o.rotate = 5;
    o.keep = 2;
    replay_stats S;
    teller_error err;
    CHECK_EQ_INT(a ? replay(a, NULL, 0, out, o, &S, &err) : TELLER_ERR_IO, TELLER_OK);
    CHECK_EQ_INT(S.files, 2 * 6); /* 30 steps a rank, 5 a file */
    char tdir[4300];
    snprintf(tdir, sizeof tdir, "%s/traces", out);
    char **files = NULL;
    size_t nf = 0;
    teller_error_clear(&err);
    CHECK_EQ_INT(teller_load_expand((const char *const[]){tdir}, 1, &files, &nf, &err), TELLER_OK);
    CHECK_EQ_INT(nf, 2 * 2); /* the newest 2 of each rank */
    teller_tree_stats sa;
    teller_tree_stats_get(a, &sa);
    for (size_t i = 0; i < nf; i++) {
        /* each file a whole process's trace: END, its own strings, its own
         * correlation ids from the start, 5 steps */
        teller_store *f = load1(files[i]);
        CHECK(f != NULL);
        if (!f)
            continue;
        CHECK_EQ_INT(teller_store_num_warnings(f), 0);
        CHECK_EQ_INT(teller_store_step_count(f), 5);
        teller_tree_stats sf;
        teller_tree_stats_get(f, &sf);
        CHECK(sf.kernels > 0);
        CHECK_EQ_INT(sf.kernels_linked, sf.kernels);
        const teller_events *ev = teller_store_events(f);
        uint32_t lo = UINT32_MAX;
        for (size_t e = 0; e < ev->n; e++)
            if (ev->corr[e] && ev->corr[e] < lo)
                lo = ev->corr[e];
        CHECK(lo < 50);
        /* the pid in the name is the header's */
        const char *dash = strrchr(files[i], '-');
        CHECK_EQ_INT(teller_store_source_c(f, 0)->pid, dash ? atol(dash + 1) : -1);
        teller_store_free(f);
    }
    teller_load_files_free(files, nf);
    teller_store_free(a);
    rm_rf(dir);
}

/* A one-step Kineto trace of one rank: two launches and their kernels,
 * the first kernel named json_name (a JSON string's inside), the
 * correlation ids c1 and c2. */
static void write_small_trace(const char *path, const char *json_name, uint32_t c1, uint32_t c2)
{
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (!f)
        return;
    fprintf(f, "{\"baseTimeNanoseconds\": 1790000000000000000, \"traceEvents\": ["
               "{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"ProfilerStep#1\", \"pid\": 7, "
               "\"tid\": 7, \"ts\": 0, \"dur\": 1000}");
    for (int i = 0; i < 2; i++)
        fprintf(f, ",{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", \"pid\": 7, "
                   "\"tid\": 7, \"ts\": %d, \"dur\": 5, \"args\": {\"correlation\": %u}},"
                   "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"%s\", \"pid\": 0, \"tid\": 7, \"ts\": %d, "
                   "\"dur\": 100, \"args\": {\"device\": 0, \"stream\": 7, \"correlation\": %u, \"grid\": [3, 2, 1], "
                   "\"block\": [128, 1, 1]}}",
                10 + 200 * i, i ? c2 : c1, i ? "k2" : json_name, 20 + 200 * i, i ? c2 : c1);
    fputs("]}\n", f);
    fclose(f);
}

static void test_replay_refuses_correlation_ids_past_2_32(void)
{
    char dir[] = "/tmp/teller_replay_wrap_XXXXXX", p[4200], out[4200];
    CHECK(mkdtemp(dir) != NULL);
    snprintf(p, sizeof p, "%s/rank0.trace.json", dir);
    snprintf(out, sizeof out, "%s/out", dir);
    write_small_trace(p, "k1", 1, 4000000000u); /* one copy spans 4e9 ids: two do not fit */
    teller_store *a = load1(p);
    CHECK(a != NULL);
    replay_opts o = fast();
    o.loop = 2;
    replay_stats S;
    teller_error err;
    CHECK_EQ_INT(a ? replay(a, NULL, 0, out, o, &S, &err) : TELLER_OK, TELLER_ERR_LIMIT);
    CHECK(strstr(err.msg, "2^32") && strstr(err.msg, "--rotate"));
    /* refused before writing: no trace file was made */
    char **files = NULL;
    size_t nf = 0;
    CHECK(teller_load_expand((const char *const[]){out}, 1, &files, &nf, &err) != TELLER_OK);
    teller_load_files_free(files, nf);
    o.loop = 1;
    rm_rf(out);
    CHECK_EQ_INT(a ? replay(a, NULL, 0, out, o, &S, &err) : TELLER_ERR_IO, TELLER_OK);
    teller_store_free(a);
    rm_rf(dir);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void test_replay_paces_chunks_by_speed(void)
{
    char dir[] = "/tmp/teller_replay_pace_XXXXXX", out[4200];
    teller_store *a = healthy_case(dir, out, sizeof out, 6);
    replay_stats S;
    teller_error err;
    /* the run's period first (at --speed 0), then enough copies to span
     * 2.5 s of trace: 3 chunks of 1 s, the last written at 3 * 1 s / 10 */
    CHECK_EQ_INT(a ? replay(a, NULL, 0, out, fast(), &S, &err) : TELLER_ERR_IO, TELLER_OK);
    rm_rf(out);
    replay_opts o = replay_defaults();
    o.speed = 10;
    o.loop = S.period_ns > 0 ? (uint64_t)(2500000000LL / S.period_ns) + 1 : 1;
    double t0 = now_s();
    CHECK_EQ_INT(a ? replay(a, NULL, 0, out, o, &S, &err) : TELLER_ERR_IO, TELLER_OK);
    double wall = now_s() - t0;
    CHECK_EQ_INT(S.chunks, 3);
    CHECK(wall >= 0.29);
    CHECK(wall < 3);
    teller_store_free(a);
    rm_rf(dir);
}

/* Whether directory d exists and holds an entry besides . and .. */
static int dir_has_entry(const char *d)
{
    DIR *h = opendir(d);
    int found = 0;
    for (struct dirent *e; h && !found && (e = readdir(h));)
        found = strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
    if (h)
        closedir(h);
    return found;
}

static void test_replay_sigterm_ends_every_file(void)
{
    char dir[] = "/tmp/teller_replay_sig_XXXXXX", out[4200];
    sim_healthy(dir, 1, 2, 2, 1, 20, 3);
    snprintf(out, sizeof out, "%s/out", dir);
    pid_t p = fork();
    if (p == 0) {
        int fd = open("/dev/null", O_WRONLY);
        dup2(fd, 2);
        execl(TELLER_CLI, TELLER_CLI, "replay", "-q", "--speed", "1", "--flush-ms", "50", "--loop", "1000", "-o", out,
              dir, (char *)NULL);
        _exit(127);
    }
    CHECK(p > 0);
    /* its handler is set before it writes a file: signal once one is there
     * (a loaded machine may take long to start it) */
    char traces[4300];
    snprintf(traces, sizeof traces, "%s/traces", out);
    for (int i = 0; i < 3000 && !dir_has_entry(traces); i++)
        usleep(10000);
    usleep(100000);
    kill(p, SIGTERM);
    int status = 0;
    CHECK_EQ_INT(waitpid(p, &status, 0), p);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    teller_store *b = load1(out);
    CHECK(b != NULL);
    if (b) {
        CHECK_EQ_INT(teller_store_num_sources(b), 2);
        CHECK(teller_store_events(b)->n > 0);
        CHECK_EQ_INT(teller_store_num_warnings(b), 0); /* no "no end chunk" */
        /* it stopped early: far from 1000 copies */
        CHECK(teller_store_step_count(b) < 1000);
    }
    teller_store_free(b);
    rm_rf(dir);
}

static void test_replay_hostile_names_and_untimed_log_lines(void)
{
    char dir[] = "/tmp/teller_replay_hostile_XXXXXX", p[4400], out[4200], args[9000], txt[8192];
    CHECK(mkdtemp(dir) != NULL);
    snprintf(out, sizeof out, "%s/out", dir);
    snprintf(p, sizeof p, "%s/logs", dir);
    CHECK(mkdir(p, 0777) == 0);
    /* a kernel name with markup, escapes, a terminal control and a
     * right-to-left override, in JSON escapes */
    static const char hostile[] = "k<script>alert(1)</script>\"\\\x1b[31m\xe2\x80\xae|%s%n";
    snprintf(p, sizeof p, "%s/rank0.trace.json", dir);
    write_small_trace(p, "k<script>alert(1)</script>\\\"\\\\\\u001b[31m\\u202e|%s%n", 9, 10);
    /* capture-form lines, one untimed line after the first, one before any */
    snprintf(p, sizeof p, "%s/logs/node0.log", dir);
    FILE *f = fopen(p, "w");
    CHECK(f != NULL);
    if (f) {
        fputs("preamble without a time\n"
              "1790000000000000100 first <b>line</b>\n"
              "   continued without a time\n"
              "1790000000000000900 second\n", f);
        fclose(f);
    }
    snprintf(args, sizeof args, "replay -q --speed 0 --start-ns 1800000000000000000 -o '%s' '%s'", out, dir);
    CHECK_EQ_INT(run_cli(args, txt, sizeof txt), 0);
    teller_store *b = load1(out);
    CHECK(b != NULL);
    if (b) {
        CHECK_EQ_INT(count_name(b, hostile), 1);
        teller_tree_stats sb;
        teller_tree_stats_get(b, &sb);
        CHECK_EQ_INT(sb.kernels_linked, 2);
        const teller_events *ev = teller_store_events(b);
        for (size_t i = 0; i < ev->n; i++)
            if (ev->layer[i] == TELLER_LAYER_KERNEL && ev->start_ns[i] < T_START + 100000) {
                CHECK_EQ_INT(ev->start_ns[i], T_START + 20000);
                CHECK_EQ_INT(teller_store_event_args(b, (uint32_t)i)->grid[0], 3);
            }
    }
    teller_store_free(b);
    snprintf(p, sizeof p, "%s/logs/node0.log", out);
    size_t loglen = 0;
    char *log = read_file(p, &loglen);
    CHECK(log != NULL);
    if (log)
        CHECK(!strcmp(log, "1800000000000000100 preamble without a time\n"
                           "1800000000000000100 first <b>line</b>\n"
                           "1800000000000000100    continued without a time\n"
                           "1800000000000000900 second\n"));
    free(log);
    /* the output's files are there already: refused, naming the file */
    CHECK_EQ_INT(run_cli(args, txt, sizeof txt), 1);
    CHECK(strstr(txt, "exists already") && strstr(txt, "/out/"));
    rm_rf(dir);
}

static void test_replay_bad_inputs_say_which_file(void)
{
    char dir[] = "/tmp/teller_replay_bad_XXXXXX", p[4200], args[9000], txt[8192];
    CHECK(mkdtemp(dir) != NULL);
    snprintf(p, sizeof p, "%s/rank0.trace.json", dir);
    FILE *f = fopen(p, "w");
    CHECK(f != NULL);
    if (f) {
        fputs("{\"traceEvents\": [{\"ph\": \"X\", \"name\": ", f);
        fclose(f);
    }
    snprintf(args, sizeof args, "replay -q --speed 0 -o '%s/out' '%s'", dir, p);
    CHECK_EQ_INT(run_cli(args, txt, sizeof txt), 1);
    CHECK(strstr(txt, "rank0.trace.json") != NULL);
    /* an output directory under a file cannot be made */
    char sim[] = "/tmp/teller_replay_bado_XXXXXX";
    sim_healthy(sim, 1, 2, 2, 1, 3, 3);
    snprintf(args, sizeof args, "replay -q --speed 0 -o '%s/out' '%s'", p, sim);
    CHECK_EQ_INT(run_cli(args, txt, sizeof txt), 1);
    CHECK(strstr(txt, "cannot create the directory") && strstr(txt, "rank0.trace.json/out/traces"));
    snprintf(args, sizeof args, "replay -q --keep 2 -o '%s/out' '%s'", dir, sim);
    CHECK_EQ_INT(run_cli(args, txt, sizeof txt), 2);
    CHECK(strstr(txt, "--keep wants --rotate") != NULL);
    rm_rf(sim);
    rm_rf(dir);
}

/* Of the .tlt files under dir/traces: how many end with an END chunk, and
 * how many there are. */
static int files_ended(const char *dir, int *nfiles)
{
    char td[4300], path[4600];
    snprintf(td, sizeof td, "%s/traces", dir);
    DIR *d = opendir(td);
    int ended = 0;
    *nfiles = 0;
    struct dirent *e;
    while (d && (e = readdir(d))) {
        if (!strstr(e->d_name, ".tlt"))
            continue;
        snprintf(path, sizeof path, "%s/%s", td, e->d_name);
        FILE *f = fopen(path, "rb");
        uint8_t *buf = malloc(64u << 20);
        size_t n = f && buf ? fread(buf, 1, 64u << 20, f) : 0;
        if (f)
            fclose(f);
        size_t pos = TLT_HEADER_SIZE;
        tlt_scratch sc = {0};
        tlt_chunk c;
        char msg[160];
        int last = 0;
        while (buf && tlt_chunk_next(buf, n, &pos, &c, &sc, msg, sizeof msg) == TLT_NEXT_CHUNK)
            last = c.type;
        ended += last == TLT_CHUNK_END;
        (*nfiles)++;
        free(sc.raw);
        free(buf);
    }
    if (d)
        closedir(d);
    return ended;
}

/* A run whose processes the watchdog took down mid-step leaves files with
 * no END, as killed collectors do; a run that ended cleanly, END in each. */
static void test_replay_taken_down_no_end(void)
{
    for (int hang = 0; hang < 2; hang++) {
        char dir[] = "/tmp/teller_replay_down_XXXXXX", out[4200], args[9000], txt[4096];
        teller_sim_opts o = teller_sim_defaults();
        o.nodes = 1;
        o.gpus_per_node = o.tp = 2;
        o.pp = 1;
        o.steps = 12;
        o.seed = 5;
        o.faults = hang ? 1u << TELLER_FAULT_NCCL_HANG : 0;
        o.fault_rate = hang ? 1 : 0;
        sim_case(dir, &o);
        snprintf(out, sizeof out, "%s/out", dir);
        snprintf(args, sizeof args, "replay -q --speed 0 -o '%s' '%s'", out, dir);
        CHECK_EQ_INT(run_cli(args, txt, sizeof txt), 0);
        int n = 0, ended = files_ended(out, &n);
        CHECK_EQ_INT(n, 2);
        CHECK_EQ_INT(ended, hang ? 0 : 2);
        snprintf(args, sizeof args, "rm -rf '%s'", dir);
        CHECK(system(args) == 0);
    }
}

const test_case replay_tests[] = {
    {"replay: a run taken down mid-step leaves no END; a clean one ends every file", test_replay_taken_down_no_end},
    {"replay: a 2-rank simulated case reads back as the same events, steps and log lines",
     test_replay_sim_two_ranks_reads_back_the_same},
    {"replay: a 2-node simulated case keeps its node clock offsets", test_replay_sim_two_nodes_keeps_clock_offsets},
    {"replay: real 2-rank Kineto and nsys traces read back the same", test_replay_real_two_rank_traces_read_back_the_same},
    {"replay: --loop renumbers ProfilerStep#N and keeps correlation ids unique", test_replay_loop_renumbers_profiler_steps},
    {"replay: --rotate ends files and begins new ones afresh, --keep deletes the oldest",
     test_replay_rotate_starts_new_files_and_keep_deletes_old},
    {"replay: correlation ids past 2^32 in one file are refused", test_replay_refuses_correlation_ids_past_2_32},
    {"replay: chunks are written at k * flush / speed", test_replay_paces_chunks_by_speed},
    {"replay: SIGTERM ends every file with END", test_replay_sigterm_ends_every_file},
    {"replay: hostile kernel names pass byte for byte, untimed log lines follow the line before",
     test_replay_hostile_names_and_untimed_log_lines},
    {"replay: bad input and an unwritable output say which file", test_replay_bad_inputs_say_which_file},
    {NULL, NULL},
};
