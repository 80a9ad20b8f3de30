/*
 * test_mpi.c - teller-mpi (src/mpi): a run read by several processes
 * writes the predictions `teller diagnose` writes, byte for byte, and a
 * file one process cannot read, or a process killed mid-run, fails the run
 * on every process, without a hang. The packed store that crosses the wire appends as the store itself.
 *
 * The runs need mpirun (Open MPI, scripts/install-deps); without it, or
 * without teller-mpi in the build, they are skipped with a message.
 */
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "diagnose/context.h"
#include "mpi/pack.h"
#include "mpi/rounds.h"
#include "store/store_internal.h"
#include "mpi/summary.h"
#include "ingest/load_internal.h"
#include "tree/tree_internal.h"
#include "teller/diagnose.h"
#include "teller/ingest.h"
#include "teller/load.h"
#include "teller/sim.h"

/* ---- the packed store and the summary of its trees ---- */

/* What read_packed keeps of each file for summaries_packed: its sources
 * and their summary. */
#define PACKED_FILES 16
typedef struct packed_run {
    size_t nsources[PACKED_FILES];
    void  *summary[PACKED_FILES];
    size_t size[PACKED_FILES];
} packed_run;

/* Cut short anywhere, a packed store (summary 0) or a summary of nsources
 * sources (summary 1) is refused, not read past its end. */
static void refused_cut_short(const void *buf, size_t n, int summary, size_t nsources)
{
    teller_source_summary *none = calloc(nsources ? nsources : 1, sizeof *none);
    for (size_t cut = 0; cut < n; cut += n / 7 + 1) {
        teller_store *scratch = teller_store_create();
        teller_error e;
        CHECK_EQ_INT(summary ? teller_summary_read(scratch, 0, nsources, buf, cut, "cut", none, &e)
                             : teller_pack_append(scratch, buf, cut, &e),
                     TELLER_ERR_FORMAT);
        teller_store_free(scratch);
    }
    teller_source_summary_free(none, nsources);
}

/* A simulated 2 x 2 case of 10 steps with a hang, into dir (a mkdtemp
 * template): its rank files in *files (teller_load_files_free), how many
 * returned. */
static size_t sim_files(char *dir, char ***files)
{
    size_t n = 0;
    teller_error err;
    sim_faulty(dir, 2, 2, 10, 5, 1);
    CHECK_EQ_INT(teller_load_expand((const char *const[]){dir}, 1, files, &n, &err), TELLER_OK);
    return n;
}

/* a teller_load reader that sends every file as teller-mpi's readers do:
 * its trees built, through a packed buffer, with its summary */
static teller_status read_packed(void *ctx, size_t i, const char *path, teller_store *into, teller_error *err)
{
    packed_run *P = ctx;
    CHECK(i < PACKED_FILES);
    if (i >= PACKED_FILES)
        return teller_error_set(err, TELLER_ERR_LIMIT, path, 0, "more files than the test keeps");
    teller_store *part = teller_store_create();
    if (!part)
        return teller_error_set(err, TELLER_ERR_NOMEM, path, 0, "out of memory");
    teller_source_summary *sr = NULL;
    teller_status s = teller_ingest_file(part, path, NULL, err);
    if (s == TELLER_OK)
        s = teller_tree_local(part, NULL, &sr, err);
    size_t n = 0, ns = 0, had = teller_store_num_sources(into), parts = teller_store_num_sources(part);
    void *buf = s == TELLER_OK ? teller_pack_store(part, &n) : NULL;
    void *sum = s == TELLER_OK ? teller_summary_pack(part, sr, &ns) : NULL;
    teller_source_summary_free(sr, parts);
    teller_store_free(part);
    if (s != TELLER_OK)
        return s;
    CHECK(buf != NULL && sum != NULL);
    if (!buf || !sum)
        return teller_error_set(err, TELLER_ERR_NOMEM, path, 0, "out of memory");
    refused_cut_short(buf, n, 0, 0);
    refused_cut_short(sum, ns, 1, parts);
    s = teller_pack_append(into, buf, n, err);
    free(buf);
    P->nsources[i] = teller_store_num_sources(into) - had;
    P->summary[i] = sum;
    P->size[i] = ns;
    return s;
}

/* teller_load_given's summaries: those read_packed kept */
static teller_status summaries_packed(void *ctx, teller_store *st, teller_source_summary *sr, teller_error *err)
{
    packed_run *P = ctx;
    teller_status s = TELLER_OK;
    for (size_t i = 0, s0 = 0; i < PACKED_FILES && P->summary[i] && s == TELLER_OK; s0 += P->nsources[i], i++)
        s = teller_summary_read(st, s0, P->nsources[i], P->summary[i], P->size[i], "summary", sr, err);
    return s;
}

/* the files loaded on 2 threads, read directly or as teller-mpi's
 * readers send them */
static teller_store *load_files(char **files, size_t n, int packed)
{
    teller_load_opts o = teller_load_defaults();
    packed_run P = {0};
    o.jobs = 2;
    if (packed) {
        o.read = read_packed;
        o.read_ctx = &P;
    }
    teller_store *st = teller_store_create();
    teller_error err;
    teller_error_clear(&err);
    CHECK_EQ_INT(teller_load_given(st, (const char *const *)files, n, &o, packed ? summaries_packed : NULL, NULL, &err),
                 TELLER_OK);
    for (size_t i = 0; i < PACKED_FILES; i++)
        free(P.summary[i]);
    return st;
}

static void test_packed_store_appends_as_the_store(void)
{
    char dir[] = "/tmp/teller_mpi_pack_XXXXXX";
    char **files = NULL;
    size_t n = sim_files(dir, &files);
    teller_store *ref = load_files(files, n, 0), *st = load_files(files, n, 1);
    CHECK(teller_store_num_collectives(ref) > 20);
    CHECK(same_store(ref, st));
    char *want = diagnosis_json(ref, NULL), *got = diagnosis_json(st, NULL);
    CHECK(want && strlen(want) > 100);
    CHECK(want && got && !strcmp(want, got));
    free(want);
    free(got);
    teller_store_free(ref);
    teller_store_free(st);
    teller_load_files_free(files, n);
    rm_rf(dir);
}

/* A source's step cells (tree_internal.h) are found from its own events:
 * with every other source's events damaged, they come out the same, and
 * no other source's cell is written. They hold what the step summaries
 * say of its rows. */
static void test_step_cells_of_own_events(void)
{
    char dir[] = "/tmp/teller_mpi_cells_XXXXXX";
    char **files = NULL;
    size_t n = sim_files(dir, &files);
    teller_error err;
    teller_store *st = load_files(files, n, 0);
    size_t nsrc = teller_store_num_sources(st), ncell = (size_t)teller_store_step_count(st) * nsrc;
    uint32_t nsteps = teller_store_step_count(st);
    CHECK(nsrc == 4 && nsteps >= 10);
    teller_step_cell *want = calloc(ncell, sizeof *want), *got = malloc(ncell * sizeof *got);
    CHECK(want && got);
    for (uint32_t q = 0; q < nsrc; q++)
        CHECK_EQ_INT(teller_step_cells_of(st, q, NULL, nsteps, want + q, nsrc), 0);
    teller_step_summary *sum = NULL;
    size_t nsum = 0;
    CHECK_EQ_INT(teller_step_summaries(st, &sum, &nsum, &err), TELLER_OK);
    int64_t kernels = 0;
    for (size_t r = 0; r < nsum; r++) {
        const teller_step_cell *c = &want[(size_t)sum[r].step * nsrc + (size_t)teller_store_source_of_rank(st, sum[r].rank)];
        CHECK(c->kernel_ns == sum[r].kernel_ns && c->comm_ns == sum[r].comm_ns && c->gpu_busy_ns == sum[r].gpu_busy_ns);
        CHECK(c->gpu_busy_ns <= c->kernel_ns + c->comm_ns + c->memcpy_ns);
        kernels += c->kernels;
    }
    CHECK(kernels > 1000);
    /* source 1 again, every other source's events changed under it */
    teller_events *ev = teller_store_events_mut(st);
    for (size_t i = 0; i < ev->n; i++)
        if (ev->source[i] != 1) {
            ev->step[i] = 0;
            ev->dur_ns[i] = 12345;
            ev->flags[i] ^= TELLER_F_COMM | TELLER_F_PROFILER;
        }
    memset(got, 0xAB, ncell * sizeof *got);
    CHECK_EQ_INT(teller_step_cells_of(st, 1, NULL, nsteps, got + 1, nsrc), 0);
    for (size_t c = 0; c < ncell; c++) {
        unsigned char blank[sizeof *got];
        memset(blank, 0xAB, sizeof blank);
        CHECK(!memcmp(&got[c], c % nsrc == 1 ? (const void *)&want[c] : (const void *)blank, sizeof *got));
    }
    free(sum);
    free(want);
    free(got);
    teller_store_free(st);
    teller_load_files_free(files, n);
    rm_rf(dir);
}

/* A reader keeps its files in one store: each file built per source and
 * appended with its trees (teller_store_append_local) holds what the
 * files read into one store and built there hold, event for event. */
static void test_local_stores_append_as_built(void)
{
    char dir[] = "/tmp/teller_mpi_app_XXXXXX";
    char **files = NULL;
    size_t n = sim_files(dir, &files);
    teller_error err;
    teller_source_summary *sr = NULL;
    teller_store *one = teller_store_create(), *kept = teller_store_create();
    for (size_t i = 0; i < 3; i++)
        CHECK_EQ_INT(teller_ingest_file(one, files[i], NULL, &err), TELLER_OK);
    CHECK_EQ_INT(teller_tree_local(one, NULL, &sr, &err), TELLER_OK);
    teller_source_summary_free(sr, teller_store_num_sources(one));
    for (size_t i = 0; i < 3; i++) {
        teller_store *part = teller_store_create();
        CHECK_EQ_INT(teller_ingest_file(part, files[i], NULL, &err), TELLER_OK);
        CHECK_EQ_INT(teller_tree_local(part, NULL, &sr, &err), TELLER_OK);
        teller_source_summary_free(sr, teller_store_num_sources(part));
        CHECK_EQ_INT(teller_store_append_local(kept, part, &err), TELLER_OK);
        teller_store_free(part);
    }
    const teller_events *a = teller_store_events(one), *b = teller_store_events(kept);
    CHECK(a->n > 1000 && a->n == b->n);
    size_t same = 0, nested = 0;
    for (size_t i = 0; i < a->n && i < b->n; i++) {
        same += a->start_ns[i] == b->start_ns[i] && a->parent[i] == b->parent[i] &&
                a->first_child[i] == b->first_child[i] && a->next_sibling[i] == b->next_sibling[i] &&
                a->depth[i] == b->depth[i];
        nested += b->parent[i] != TELLER_NONE;
    }
    CHECK(same == a->n && nested > a->n / 4);
    for (uint32_t q = 0; q < 3; q++)
        CHECK(teller_store_source_c(one, q)->first_event == teller_store_source_c(kept, q)->first_event);
    teller_store_free(one);
    teller_store_free(kept);
    teller_load_files_free(files, n);
    rm_rf(dir);
}

/* A rank held by two sources (its file read twice, as --force keeps it):
 * its step rows sum both sources' cells and union their GPU busy time, as
 * the rank's events say. */
static void test_rank_of_two_sources(void)
{
    char dir[] = "/tmp/teller_mpi_two_XXXXXX";
    sim_faulty(dir, 2, 2, 6, 9, 0);
    char path[2][4200];
    snprintf(path[0], sizeof path[0], "%s/rank1.trace.json.gz", dir);
    snprintf(path[1], sizeof path[1], "%s/rank1.trace.json.gz", dir);
    teller_step_summary *sum[2] = {NULL, NULL};
    size_t n[2] = {0, 0};
    for (int twice = 0; twice < 2; twice++) {
        teller_store *st = teller_store_create();
        teller_error err;
        const char *const files[2] = {path[0], path[1]};
        for (int f = 0; f <= twice; f++)
            CHECK_EQ_INT(teller_ingest_file(st, files[f], NULL, &err), TELLER_OK);
        CHECK_EQ_INT(teller_tree_build(st, NULL, &err), TELLER_OK);
        CHECK_EQ_INT(teller_store_num_sources(st), (size_t)twice + 1);
        CHECK_EQ_INT(teller_step_summaries(st, &sum[twice], &n[twice], &err), TELLER_OK);
        teller_store_free(st);
    }
    /* each marker twice makes twice the rows, the second of each pair
     * holding the step's work: the run's totals tell */
    int64_t kernels[2] = {0, 0}, busy[2] = {0, 0}, launches[2] = {0, 0};
    for (int t = 0; t < 2; t++)
        for (size_t r = 0; r < n[t]; r++) {
            kernels[t] += sum[t][r].kernels;
            busy[t] += sum[t][r].gpu_busy_ns;
            launches[t] += sum[t][r].launches;
        }
    CHECK(n[0] == 6 && n[1] == 12);
    CHECK(kernels[0] > 1000 && kernels[1] == 2 * kernels[0] && launches[1] == 2 * launches[0]);
    CHECK(busy[0] > 0 && busy[1] == busy[0]);
    free(sum[0]);
    free(sum[1]);
    rm_rf(dir);
}

/* The collectives' members as the diagnosis reads them
 * (teller_tree_member_rows), each found from its communication row, which
 * a process that does not hold the rank receives, say what the member's
 * kernel says: source, name, process group, direction, elements, arrival
 * and time on node 0's clock (node 1's clock has an offset), and step. */
static void test_members_are_their_kernels(void)
{
    char dir[] = "/tmp/teller_mpi_members_XXXXXX";
    char **files = NULL;
    size_t n = sim_files(dir, &files);
    teller_error err;
    teller_store *st = teller_store_create();
    for (size_t i = 0; i < n; i++)
        CHECK_EQ_INT(teller_ingest_file(st, files[i], NULL, &err), TELLER_OK);
    CHECK_EQ_INT(teller_tree_build(st, NULL, &err), TELLER_OK);
    const teller_events *ev = teller_store_events(st);
    const teller_collective *co = teller_store_collectives(st);
    const teller_coll_member *mem = teller_store_coll_members(st);
    const teller_member_row *mr = teller_tree_member_rows(st);
    size_t compared = 0, stepped = 0, moved = 0;
    CHECK(mr != NULL);
    for (size_t c = 0; mr && c < teller_store_num_collectives(st); c++)
        for (uint32_t m = co[c].first_member; m < co[c].first_member + co[c].num_members; m++) {
            uint32_t k = mem[m].kernel;
            const teller_comm *cm = teller_store_event_comm(st, k);
            const char *coll = cm ? teller_store_str(st, cm->collective) : "";
            int8_t dir = (int8_t)(!strcmp(coll, "send") ? 1 : !strcmp(coll, "recv") ? -1 : 0);
            CHECK(mr[m].src == ev->source[k] && mr[m].name == ev->name[k] && mr[m].dir == dir);
            CHECK(mr[m].pg_ranks == (cm ? cm->pg_ranks : 0));
            CHECK(mr[m].elems == (cm && cm->in_nelems > 0 ? cm->in_nelems : -1));
            CHECK(mr[m].start == ev->start_ns[k] && mr[m].dur == ev->dur_ns[k] && mr[m].step == ev->step[k]);
            stepped += mr[m].step != TELLER_NONE;
            moved += teller_store_source_c(st, mr[m].src)->node != 0;
            compared++;
        }
    CHECK(compared > 100 && stepped > 0 && moved > 0);
    teller_store_free(st);
    teller_load_files_free(files, n);
    rm_rf(dir);
}

/* The build's question to the readers (src/mpi/rounds.h), as a reader
 * and process 0 play it: a reader that kept file 2's store (rank 2, on
 * node 1: its clock has an offset) takes the run's steps for its source
 * and answers with its rows' GPU ends, its communication kernels' steps
 * and its cells, which the run takes: the ends are what the build extended
 * the steps to, the steps the rows', the cells what the diagnosis reads as
 * its own; damaged steps are refused with no event changed, a damaged
 * answer refused naming where, or the file. */
static void test_readers_answer_the_build(void)
{
    char dir[] = "/tmp/teller_mpi_round_XXXXXX";
    char **files = NULL;
    size_t n = sim_files(dir, &files);
    teller_error err;
    teller_store *run = teller_store_create(), *kept = teller_store_create();
    for (size_t i = 0; i < n; i++)
        CHECK_EQ_INT(teller_ingest_file(run, files[i], NULL, &err), TELLER_OK);
    size_t nsrc = teller_store_num_sources(run);
    teller_source_summary *sr = calloc(nsrc, sizeof *sr), *ksr = NULL;
    CHECK_EQ_INT(teller_tree_build_given(run, NULL, sr, NULL, &err), TELLER_OK);
    CHECK_EQ_INT(teller_ingest_file(kept, files[2], NULL, &err), TELLER_OK);
    CHECK_EQ_INT(teller_tree_local(kept, NULL, &ksr, &err), TELLER_OK);
    teller_source_summary_free(ksr, 1);
    char *want = diagnosis_json(run, NULL);
    size_t ns = 0, na = 0;
    unsigned char *steps = teller_steps_pack(run, 2, 1, &ns);
    CHECK(steps && ns > 100);
    /* damaged steps: refused, the kept events as they were: the magic,
     * the sources, the rows' count, row 0's end before its start, its step
     * past the run's, its zero word, row 1's step that does not rise (head
     * 24 bytes, a source's counts 16, rows 24 each) */
    const teller_events *kev = teller_store_events(kept);
    int64_t first = kev->start_ns[0];
    static const struct { size_t at; unsigned char x; } bad[] = {{0, 1}, {16, 1}, {32, 1}, {55, 0x80},
                                                                 {59, 0x80}, {60, 1}, {80, 1}};
    unsigned char *ans = NULL;
    for (size_t b = 0; steps && b < sizeof bad / sizeof *bad; b++) {
        steps[bad[b].at] ^= bad[b].x;
        CHECK_EQ_INT(teller_steps_answer(&kept, 1, steps, ns, (void **)&ans, &na, &err), TELLER_ERR_FORMAT);
        steps[bad[b].at] ^= bad[b].x;
        CHECK(kev->start_ns[0] == first);
    }
    for (size_t cut = 0; steps && cut < ns; cut += ns / 7 + 1)
        CHECK_EQ_INT(teller_steps_answer(&kept, 1, steps, cut, (void **)&ans, &na, &err), TELLER_ERR_FORMAT);
    int64_t offset;
    memcpy(&offset, steps + 24, sizeof offset); /* node 1's: its events move by it */
    CHECK(offset != 0);
    CHECK_EQ_INT(teller_steps_answer(&kept, 1, steps, ns, (void **)&ans, &na, &err), TELLER_OK);
    CHECK(kev->start_ns[0] == first - offset);
    uint32_t nsteps = teller_store_step_count(run);
    size_t rows = sr[2].nrows, ncomm_at = 24, cell0 = 32, steps0 = cell0 + (size_t)nsteps * 72;
    CHECK(rows > 10);
    /* rank 2 has a row in every step; its kernels' steps fill 8 bytes */
    CHECK(ans && na == steps0 + (rows * 4 + 7) / 8 * 8);
    int64_t *end[8] = {0};
    CHECK(nsrc == 4);
    end[2] = malloc(((size_t)nsteps + 1) * sizeof *end[2]);
    uint32_t *had = malloc((rows + 1) * sizeof *had);
    for (size_t r = 0; r < rows; r++) {
        had[r] = sr[2].rows[r].step;
        sr[2].rows[r].step = 7777;
    }
    /* an answer out of bounds is refused naming where, and one not the
     * events' naming the file: a cell's compute time's sign, its kernels
     * one more, its queued end and its row's end past the bounds, a
     * kernel's step past the run's, the kernels' count, a padding byte, a
     * byte cut or added (a cell 64 bytes, an end 8) */
    struct { size_t at; unsigned char x; int file; } dam[] = {
        {cell0 + 7, 0x80, 0}, {cell0 + 40, 1, 1}, {cell0 + 56 + 7, 0x7F, 0}, {cell0 + 64 + 7, 0x7F, 0},
        {steps0 + 2, 0x40, 0}, {ncomm_at, 1, 0}, {na - 1, rows % 2 ? 1 : 0, 0}};
    for (size_t d = 0; ans && d < sizeof dam / sizeof *dam; d++) {
        if (!dam[d].x)
            continue; /* no padding */
        ans[dam[d].at] ^= dam[d].x;
        CHECK_EQ_INT(teller_stamps_take(run, 2, 1, sr, end, ans, na, 1, &err), TELLER_ERR_FORMAT);
        if (dam[d].file)
            CHECK(!strcmp(err.file, files[2]));
        else
            CHECK(strstr(err.file, "(answer from process 1)") != NULL && err.offset <= dam[d].at);
        ans[dam[d].at] ^= dam[d].x;
    }
    CHECK_EQ_INT(teller_stamps_take(run, 2, 1, sr, end, ans, na - 1, 1, &err), TELLER_ERR_FORMAT);
    unsigned char *more = malloc(na + 8);
    memcpy(more, ans, na);
    memset(more + na, 0, 8);
    CHECK_EQ_INT(teller_stamps_take(run, 2, 1, sr, end, more, na + 8, 1, &err), TELLER_ERR_FORMAT);
    free(more);
    CHECK_EQ_INT(teller_stamps_take(run, 2, 1, sr, end, ans, na, 1, &err), TELLER_OK);
    for (size_t r = 0; r < rows; r++)
        CHECK(sr[2].rows[r].step == had[r]);
    /* the build extended each of rank 2's steps to its GPU work's end */
    size_t count, worked = 0;
    const teller_step *sp = teller_tree_spans(run, 2, &count), *all = teller_store_steps(run);
    CHECK(count == nsteps);
    for (size_t k = 0; k < count; k++)
        for (size_t r = 0; r < teller_store_num_steps(run); r++)
            if (all[r].rank == 2 && all[r].step == sp[k].step) {
                CHECK(all[r].end_ns == (end[2][k] > sp[k].end_ns ? end[2][k] : sp[k].end_ns));
                worked += end[2][k] != INT64_MIN;
            }
    CHECK(worked == count);
    char *got = diagnosis_json(run, NULL);
    CHECK(want && got && !strcmp(want, got));
    /* given cells are what the run reads of the source */
    teller_step_cell mark[64];
    CHECK(nsteps <= 64);
    for (uint32_t k = 0; k < nsteps && k < 64; k++)
        mark[k] = (teller_step_cell){.kernels = 12345};
    CHECK_EQ_INT(teller_step_cells_give(run, 2, mark), 0);
    teller_step_summary *sum = NULL;
    size_t nsum = 0, marked = 0;
    CHECK_EQ_INT(teller_step_summaries(run, &sum, &nsum, &err), TELLER_OK);
    for (size_t r = 0; r < nsum; r++)
        marked += sum[r].kernels == 12345;
    CHECK_EQ_INT(marked, nsteps);
    free(sum);
    free(want);
    free(got);
    free(steps);
    free(ans);
    free(end[2]);
    free(had);
    teller_source_summary_free(sr, nsrc);
    teller_store_free(kept);
    teller_store_free(run);
    teller_load_files_free(files, n);
    rm_rf(dir);
}

/* A fake holder of one source: the kept store answers as a reader does,
 * its answer to the steps damaged at byte `flip` when that is not 0, its
 * span without a marker another when `other`. */
typedef struct fake_holder {
    teller_store *kept;
    size_t        src; /* the source it holds */
    size_t        flip;
    int           other;
} fake_holder;

static teller_status fake_unmarked(void *ctx, teller_store *st, const teller_source_summary *sr, const int64_t *last,
                                   int64_t (*span)[5], teller_error *err)
{
    (void)sr;
    fake_holder *H = ctx;
    size_t nq = 0, na = 0;
    unsigned char *q = teller_unmarked_pack(st, H->src, 1, last, &nq), *ans = NULL;
    teller_status s = q ? teller_unmarked_answer(&H->kept, 1, q, nq, (void **)&ans, &na, err) : TELLER_ERR_NOMEM;
    if (s == TELLER_OK)
        s = teller_unmarked_take(st, H->src, 1, ans, na, 1, span, err);
    if (H->other) { /* a span that is sound, and not the events' */
        span[H->src][0] = 1000;
        span[H->src][1] = 2000;
        span[H->src][2] = 1;
    }
    free(q);
    free(ans);
    return s;
}

static teller_status fake_stamped(void *ctx, teller_store *st, teller_source_summary *sr, int64_t *const *end,
                                  teller_error *err)
{
    fake_holder *H = ctx;
    size_t ns = 0, na = 0;
    unsigned char *steps = teller_steps_pack(st, H->src, 1, &ns), *ans = NULL;
    teller_status s = steps ? teller_steps_answer(&H->kept, 1, steps, ns, (void **)&ans, &na, err) : TELLER_ERR_NOMEM;
    if (s == TELLER_OK && H->flip && H->flip < na)
        ans[H->flip] ^= 1;
    if (s == TELLER_OK)
        s = teller_stamps_take(st, H->src, 1, sr, end, ans, na, 1, err);
    free(steps);
    free(ans);
    return s;
}

/* The build asks the holder of a given source (teller_tree_holders) and
 * builds the run a plain build does from its answers; an answer whose
 * end, step or span is not the events' fails the build naming the file. */
static void test_build_takes_holders_answers(void)
{
    char dir[] = "/tmp/teller_mpi_holders_XXXXXX";
    char **files = NULL;
    size_t n = 0;
    teller_error err;
    teller_sim_opts o = sim_shape(2, 2, 2, 2, 10, 5); /* hangs only: ranks taken down mid-step */
    o.fault_rate = 0.5;
    o.faults = 1u << TELLER_FAULT_NCCL_HANG;
    sim_case(dir, &o);
    CHECK_EQ_INT(teller_load_expand((const char *const[]){dir}, 1, &files, &n, &err), TELLER_OK);
    teller_store *plain = load_files(files, n, 0);
    char *want = diagnosis_json(plain, NULL);
    /* the holder of a rank the hang took down mid-step: its unfinished
     * step comes from its answer (one source per file) */
    size_t held = n, rows = teller_store_num_steps(plain);
    const teller_step *all = teller_store_steps(plain);
    for (size_t r = 0; r < rows && held == n; r++)
        for (size_t k = 0; teller_step_unfinished(&all[r]) && k < n; k++)
            held = teller_store_source_c(plain, (uint32_t)k)->rank == all[r].rank ? k : held;
    CHECK(held < n);
    /* its answer to the steps damaged at the end of row 0 (after the
     * 24-byte head, the count and a cell), then at its first kernel's step
     * (past a cell and an end per row, one per step); another span */
    size_t flips[] = {0, 24 + 8 + 64, 24 + 8 + (size_t)teller_store_step_count(plain) * 72, 0};
    for (int t = 0; held < n && t < 4; t++) {
        teller_store *run = teller_store_create(), *kept = teller_store_create();
        for (size_t i = 0; i < n; i++)
            CHECK_EQ_INT(teller_ingest_file(run, files[i], NULL, &err), TELLER_OK);
        teller_source_summary *ksr = NULL, *sr = calloc(teller_store_num_sources(run), sizeof *sr);
        CHECK_EQ_INT(teller_ingest_file(kept, files[held], NULL, &err), TELLER_OK);
        CHECK_EQ_INT(teller_tree_local(kept, NULL, &ksr, &err), TELLER_OK);
        size_t sn = 0;
        void *sum = teller_summary_pack(kept, ksr, &sn);
        CHECK(sum && teller_summary_read(run, held, 1, sum, sn, files[held], sr, &err) == TELLER_OK);
        fake_holder H = {kept, held, flips[t], t == 3};
        teller_tree_holders h = {fake_unmarked, fake_stamped, &H};
        teller_status got = teller_tree_build_given(run, NULL, sr, &h, &err);
        if (t == 0) {
            CHECK_EQ_INT(got, TELLER_OK);
            char *json = diagnosis_json(run, NULL);
            CHECK(want && json && !strcmp(want, json));
            free(json);
        } else {
            CHECK_EQ_INT(got, TELLER_ERR_FORMAT);
            CHECK(!strcmp(err.file, files[held]) && strstr(err.msg, "its holder") != NULL);
        }
        free(sum);
        teller_source_summary_free(ksr, 1);
        teller_source_summary_free(sr, teller_store_num_sources(run));
        teller_store_free(kept);
        teller_store_free(run);
    }
    free(want);
    teller_store_free(plain);
    teller_load_files_free(files, n);
    rm_rf(dir);
}

/* The build's first question (src/mpi/rounds.h) and its answer are input
 * like any file: damaged, cut short or lengthened, each is refused naming
 * where, and the answer's span comes onto node 0's clock. */
static void test_unmarked_question_refused_when_damaged(void)
{
    char dir[] = "/tmp/teller_mpi_unmarked_XXXXXX";
    char **files = NULL;
    size_t n = sim_files(dir, &files);
    teller_error err;
    teller_store *run = load_files(files, n, 0), *kept = teller_store_create();
    teller_source_summary *ksr = NULL;
    CHECK_EQ_INT(teller_ingest_file(kept, files[2], NULL, &err), TELLER_OK);
    CHECK_EQ_INT(teller_tree_local(kept, NULL, &ksr, &err), TELLER_OK);
    teller_source_summary_free(ksr, 1);
    int64_t last[4] = {0, 0, INT64_MIN, 0}, span[4][5], own[5];
    size_t nq = 0, na = 0;
    unsigned char *q = teller_unmarked_pack(run, 2, 1, last, &nq), *ans = NULL;
    CHECK(q && nq == 24);
    for (size_t at = 0; q && at < 16; at += 8) { /* the magic, the sources */
        q[at] ^= 1;
        CHECK_EQ_INT(teller_question_answer(&kept, 1, q, nq, (void **)&ans, &na, &err), TELLER_ERR_FORMAT);
        CHECK(err.offset == at);
        q[at] ^= 1;
    }
    CHECK_EQ_INT(teller_question_answer(&kept, 1, q, nq - 1, (void **)&ans, &na, &err), TELLER_ERR_FORMAT);
    CHECK_EQ_INT(teller_question_answer(&kept, 1, q, nq, (void **)&ans, &na, &err), TELLER_OK);
    CHECK(ans && na == 16 + 40);
    /* a rank without markers: every event of a known layer, and every
     * event, on node 1's clock */
    teller_tree_unmarked(kept, 0, INT64_MIN, own);
    int64_t off = 0;
    for (size_t k = 0; k < teller_store_num_nodes(run); k++)
        if (teller_store_nodes(run)[k].node == teller_store_source_c(run, 2)->node)
            off = teller_store_nodes(run)[k].offset_ns;
    CHECK(off != 0 && own[0] < own[1] && own[3] <= own[0] && own[4] >= own[1]);
    /* damaged: the magic, the count, the start after the end, the launch
     * flag 2, the extent's end before its start; cut short; lengthened */
    struct { size_t at; int64_t v; } bad[] = {{0, 1}, {8, 2}, {16, INT64_MAX - 1}, {32, 2}, {48, INT64_MIN + 1}};
    for (size_t b = 0; ans && b < sizeof bad / sizeof *bad; b++) {
        int64_t keep;
        memcpy(&keep, ans + bad[b].at, sizeof keep);
        memcpy(ans + bad[b].at, &bad[b].v, sizeof keep);
        CHECK_EQ_INT(teller_unmarked_take(run, 2, 1, ans, na, 1, span, &err), TELLER_ERR_FORMAT);
        CHECK(strstr(err.file, "(answer from process 1)") != NULL && err.offset == (bad[b].at < 16 ? bad[b].at : 16));
        memcpy(ans + bad[b].at, &keep, sizeof keep);
    }
    CHECK_EQ_INT(teller_unmarked_take(run, 2, 1, ans, na - 1, 1, span, &err), TELLER_ERR_FORMAT);
    unsigned char *more = malloc(na + 8);
    memcpy(more, ans, na);
    memset(more + na, 0, 8);
    CHECK_EQ_INT(teller_unmarked_take(run, 2, 1, more, na + 8, 1, span, &err), TELLER_ERR_FORMAT);
    free(more);
    CHECK_EQ_INT(teller_unmarked_take(run, 2, 1, ans, na, 1, span, &err), TELLER_OK);
    CHECK(span[2][0] == own[0] - off && span[2][1] == own[1] - off && span[2][2] == 0);
    CHECK(span[2][3] == own[3] - off && span[2][4] == own[4] - off);
    free(q);
    free(ans);
    teller_store_free(kept);
    teller_store_free(run);
    teller_load_files_free(files, n);
    rm_rf(dir);
}

/* A summary (src/mpi/summary.h) is input like any file: a damaged one is
 * refused naming the file and where, and one found over other events than
 * its source holds fails the tree build. */
static void test_summary_refused_when_damaged(void)
{
    char dir[] = "/tmp/teller_mpi_sum_XXXXXX";
    sim_faulty(dir, 2, 2, 6, 9, 0);
    char path[4200];
    snprintf(path, sizeof path, "%s/rank0.trace.json.gz", dir);
    teller_store *part = teller_store_create();
    teller_source_summary *sr = NULL;
    teller_error err;
    teller_error_clear(&err);
    CHECK_EQ_INT(teller_ingest_file(part, path, NULL, &err), TELLER_OK);
    CHECK_EQ_INT(teller_tree_local(part, NULL, &sr, &err), TELLER_OK);
    size_t n = 0, nrows = sr ? sr[0].nrows : 0, nmarks = sr ? sr[0].nmarks : 0;
    unsigned char *sum = teller_summary_pack(part, sr, &n);
    CHECK(sum != NULL && nrows > 10 && nmarks == 6);
    teller_source_summary_free(sr, 1);
    teller_store_free(part);
    /* one source (16 bytes), its rows (64 bytes each), its markers (32) */
    size_t marks_at = n - nmarks * 32, rows_at = marks_at - nrows * 64, src_at = rows_at - 16;
    /* where: 0 the magic, 1 the first row, 2 the source, 3 the second
     * marker; the byte within it; the element whose offset the error gives
     * starts there */
    static const struct { int where; size_t byte; uint64_t value; int width; const char *what; } bad[] = {
        {0, 0, 0x316d757372726c75ull, 8, "is not one"},
        {1, 0, 0xFFFFFFF0u, 4, "holds a row out of bounds"},                      /* its event */
        {1, 37, 200, 1, "holds a row out of bounds"},                             /* its family */
        {1, 40, 0, 8, "holds a row out of bounds"},                               /* its elements */
        {1, 48, (uint64_t)TELLER_TIME_MAX + 1, 8, "holds a row out of bounds"},   /* its start */
        {2, 4, 0xFFFFFFFFu, 4, "counts more rows or markers than it holds"},     /* its row count */
        {3, 16, (uint64_t)INT64_MIN, 8, "holds a step marker out of bounds"},     /* its end */
        {3, 0, 0, 4, "holds a step marker out of bounds"},                        /* its event: the first's */
        {3, 4, 0xFFFFFFF0u, 4, "holds a step marker out of bounds"},              /* its name */
    };
    for (size_t k = 0; sum && k < sizeof bad / sizeof *bad; k++) {
        size_t elem = bad[k].where == 0   ? 0
                      : bad[k].where == 1 ? rows_at
                      : bad[k].where == 2 ? src_at
                                          : marks_at + 32;
        unsigned char *copy = malloc(n);
        memcpy(copy, sum, n);
        memcpy(copy + elem + bad[k].byte, &bad[k].value, (size_t)bad[k].width);
        teller_store *st = teller_store_create();
        teller_source_summary got = {0};
        teller_error_clear(&err);
        CHECK_EQ_INT(teller_summary_read(st, 0, 1, copy, n, path, &got, &err), TELLER_ERR_FORMAT);
        CHECK(strstr(err.msg, bad[k].what) != NULL && !strcmp(err.file, path));
        CHECK_EQ_INT(err.offset, elem);
        CHECK(!got.given && got.rows == NULL && got.marks == NULL);
        teller_store_free(st);
        free(copy);
    }
    /* another count of sources than the store's; a byte past its end */
    teller_store *st = teller_store_create();
    teller_source_summary two[2] = {{0}};
    CHECK_EQ_INT(teller_summary_read(st, 0, 2, sum, n, path, two, &err), TELLER_ERR_FORMAT);
    unsigned char *longer = calloc(n + 8, 1);
    memcpy(longer, sum, n);
    CHECK_EQ_INT(teller_summary_read(st, 0, 1, longer, n + 8, path, two, &err), TELLER_ERR_FORMAT);
    CHECK(strstr(err.msg, "has bytes past its end") && err.offset == n);
    free(longer);
    teller_store_free(st);
    /* whole, it builds the tree from what it says: its first row, a custom
     * all-reduce, told of NCCL's family with a sequence, is keyed by its
     * process group; with one event more counted, or a row naming another
     * event, the build names the file */
    for (int k = 0; sum && k < 4; k++) {
        unsigned char *copy = malloc(n);
        memcpy(copy, sum, n);
        uint32_t events, ev = 0;
        memcpy(&events, copy + src_at, sizeof events);
        events += k == 2;
        memcpy(copy + src_at, &events, sizeof events);
        if (k == 1) { /* its family (byte 37) NCCL's, with a sequence (byte 16) */
            copy[rows_at + 37] = TELLER_COMM_NCCL;
            memset(copy + rows_at + 16, 7, 1);
            memset(copy + rows_at + 17, 0, 3);
        }
        if (k == 3) {
            memcpy(&ev, copy + rows_at, sizeof ev);
            ev++;
            memcpy(copy + rows_at, &ev, sizeof ev);
        }
        st = teller_store_create();
        teller_source_summary one = {0};
        CHECK_EQ_INT(teller_ingest_file(st, path, NULL, &err), TELLER_OK);
        teller_status s = teller_summary_read(st, 0, 1, copy, n, path, &one, &err);
        CHECK_EQ_INT(s, TELLER_OK);
        CHECK(one.given && one.nrows == nrows && one.nmarks == nmarks);
        s = teller_tree_build_given(st, NULL, &one, NULL, &err);
        CHECK_EQ_INT(s, k >= 2 ? TELLER_ERR_FORMAT : TELLER_OK);
        if (k >= 2)
            CHECK(strstr(err.msg, "its summary does not match its events") && !strcmp(err.file, path));
        else
            CHECK(teller_store_num_collectives(st) > 10 && teller_store_num_steps(st) == 6);
        /* the key of the first row's kernel's collective */
        const char *key = "";
        memcpy(&ev, copy + rows_at, sizeof ev);
        for (size_t c = 0; s == TELLER_OK && c < teller_store_num_collectives(st); c++) {
            const teller_collective *co = &teller_store_collectives(st)[c];
            for (uint32_t m = 0; m < co->num_members; m++)
                if (teller_store_coll_members(st)[co->first_member + m].kernel == ev)
                    key = teller_store_str(st, co->key);
        }
        CHECK(k >= 2 || !strncmp(key, k == 1 ? "pg " : "fam custom_ar ", k == 1 ? 3 : 14));
        free(one.rows);
        free(one.marks);
        teller_store_free(st);
        free(copy);
    }
    free(sum);
    rm_rf(dir);
}

/* Overwrites the first int64 equal to was in buf (n bytes) with now; 0
 * when none is there. */
static int overwrite_i64(unsigned char *buf, size_t n, int64_t was, int64_t now)
{
    for (size_t i = 0; i + sizeof was <= n; i += sizeof was) /* columns start at multiples of 8 */
        if (!memcmp(buf + i, &was, sizeof was)) {
            memcpy(buf + i, &now, sizeof now);
            return 1;
        }
    return 0;
}

/* Found by fuzz_pack: one flipped byte gave an event that ends past
 * INT64_MAX, and the tree build's start + dur overflowed. A packed store
 * keeps the bounds a trace keeps (teller_time_ok), or is refused with the
 * event and where its start lies. */
static void test_packed_store_keeps_the_trace_bounds(void)
{
    static const char doc[] = "{\"traceEvents\": ["
                              "{\"ph\": \"X\", \"name\": \"a\", \"pid\": 1, \"tid\": 1, \"ts\": 4242, \"dur\": 7777},"
                              "{\"ph\": \"X\", \"name\": \"b\", \"pid\": 1, \"tid\": 1, \"ts\": 5151, \"dur\": 1}]}";
    static const struct { int64_t was, now; const char *what; } bad[] = {
        {7777000, INT64_MAX - 5, "lasts 9223372036854775802 ns"},            /* ends past INT64_MAX */
        {7777000, TELLER_TIME_MAX / 4 + 1, "lasts 1152921504606846977 ns"}, /* just too long */
        {7777000, -1, "lasts -1 ns"},
        {4242000, INT64_MIN + 5, "starts at -9223372036854775803 ns"},
        {4242000, TELLER_TIME_MAX + 1, "starts at 4611686018427387905 ns"},
    };
    teller_store *src = teller_store_create();
    teller_error err;
    teller_error_clear(&err);
    CHECK_EQ_INT(teller_ingest_kineto_mem(src, "bounds.json", doc, sizeof doc - 1, NULL, &err), TELLER_OK);
    size_t n = 0;
    unsigned char *packed = teller_pack_store(src, &n);
    CHECK(packed != NULL);
    for (size_t k = 0; packed && k < sizeof bad / sizeof *bad; k++) {
        unsigned char *copy = malloc(n);
        memcpy(copy, packed, n);
        CHECK(overwrite_i64(copy, n, bad[k].was, bad[k].now));
        teller_store *dst = teller_store_create();
        teller_error_clear(&err);
        CHECK_EQ_INT(teller_pack_append(dst, copy, n, &err), TELLER_ERR_FORMAT);
        CHECK(strstr(err.msg, "event 0 ") && strstr(err.msg, bad[k].what));
        CHECK(err.offset > 0 && err.offset < n);
        CHECK_EQ_INT(teller_store_events(dst)->n, 0);
        teller_store_free(dst);
        /* the edges of the bounds are kept */
        int64_t edge = bad[k].was == 7777000 ? (bad[k].now < 0 ? 0 : TELLER_TIME_MAX / 4)
                                             : (bad[k].now < 0 ? -TELLER_TIME_MAX / 4 : TELLER_TIME_MAX);
        memcpy(copy, packed, n);
        CHECK(overwrite_i64(copy, n, bad[k].was, edge));
        dst = teller_store_create();
        CHECK_EQ_INT(teller_pack_append(dst, copy, n, &err), TELLER_OK);
        CHECK_EQ_INT(teller_store_events(dst)->n, 2);
        teller_store_free(dst);
        free(copy);
    }
    free(packed);
    teller_store_free(src);
}

/* ---- teller-mpi under mpirun ---- */

#ifdef TELLER_MPI
/* 1, after saying so, when mpirun is not on the PATH: the test is skipped */
static int mpirun_missing(void)
{
    if (system("command -v mpirun >/dev/null 2>&1") == 0)
        return 0;
    fprintf(stderr, "  skipped: mpirun not found (scripts/install-deps installs Open MPI)\n");
    return 1;
}

/* Runs CMD with stdout and stderr into OUT.out and OUT.err (within 300 s);
 * returns its exit status, -1 when killed. */
static int run(const char *cmd, const char *out)
{
    char line[8192];
    snprintf(line, sizeof line, "timeout 300 %s >'%s.out' 2>'%s.err'", cmd, out, out);
    int st = system(line);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* mpirun as the tests run it: any user (root in containers), more
 * processes than cores, no leak report from Open MPI's own allocations
 * under LeakSanitizer */
#define MPIRUN "env ASAN_OPTIONS=detect_leaks=0 mpirun --allow-run-as-root --oversubscribe -x ASAN_OPTIONS -n"

/* What `teller diagnose` writes: the predictions, the candidates, the HTML
 * report and the Perfetto trace. */
static const char *const outputs[] = {"--json", "--candidates", "--html", "--perfetto"};
static const char *const suffixes[] = {"json", "cands.json", "html", "perfetto.json.gz"};
enum { NOUT = 4 };

/* Runs PROG (a command line up to the subcommand) as `PROG diagnose -q
 * OPTS` writing the first nout outputs as DIR/NAME.<suffix> on INPUTS; 0
 * when it succeeded. */
static int diagnose_into(const char *prog, const char *opts, const char *dir, const char *name, int nout,
                         const char *inputs)
{
    char cmd[4096], out[256];
    int n = snprintf(cmd, sizeof cmd, "%s diagnose -q %s", prog, opts);
    for (int k = 0; k < nout; k++)
        n += snprintf(cmd + n, sizeof cmd - (size_t)n, " %s '%s/%s.%s'", outputs[k], dir, name, suffixes[k]);
    snprintf(cmd + n, sizeof cmd - (size_t)n, " %s", inputs);
    snprintf(out, sizeof out, "%s/%s", dir, name);
    return run(cmd, out);
}

/* `teller diagnose -j 1` (one thread reading file after file) on INPUTS
 * against `teller-mpi diagnose` with 1, 2 and 4 processes: the same bytes in the predictions and candidates, and with
 * reports 1 in the HTML report and the Perfetto trace too */
static void same_as_teller(const char *inputs, const char *tmp, int reports)
{
    char prog[512], path[300];
    int nout = reports ? NOUT : 2;
    snprintf(prog, sizeof prog, "'%s'", TELLER_CLI);
    CHECK_EQ_INT(diagnose_into(prog, "-j 1", tmp, "ref", nout, inputs), 0);
    char *want[NOUT] = {0};
    size_t nwant[NOUT] = {0};
    for (int k = 0; k < nout; k++) {
        snprintf(path, sizeof path, "%s/ref.%s", tmp, suffixes[k]);
        want[k] = read_file(path, &nwant[k]);
        CHECK(want[k] && nwant[k] > 50);
    }
    for (int np = 1; np <= 4; np *= 2) {
        char name[16];
        snprintf(name, sizeof name, "mpi%d", np);
        snprintf(prog, sizeof prog, MPIRUN " %d '%s'", np, TELLER_MPI);
        CHECK_EQ_INT(diagnose_into(prog, "", tmp, name, nout, inputs), 0);
        for (int k = 0; k < nout; k++) {
            size_t n = 0;
            snprintf(path, sizeof path, "%s/%s.%s", tmp, name, suffixes[k]);
            char *have = read_file(path, &n);
            int same = want[k] && have && n == nwant[k] && !memcmp(want[k], have, n);
            CHECK(same);
            if (!same)
                fprintf(stderr, "  teller-mpi -n %d on %s: %s differs from teller diagnose's\n", np, inputs, outputs[k]);
            free(have);
        }
    }
    for (int k = 0; k < nout; k++)
        free(want[k]);
}

static void test_mpi_predictions_are_teller_diagnose(void)
{
    if (mpirun_missing())
        return;
    char dir[] = "/tmp/teller_mpi_sim_XXXXXX", tmp[] = "/tmp/teller_mpi_out_XXXXXX";
    CHECK(mkdtemp(tmp) != NULL);
    sim_faulty(dir, 4, 4, 12, 14, 1);
    char inputs[1024];
    snprintf(inputs, sizeof inputs, "'%s'", dir);
    same_as_teller(inputs, tmp, 1);
    /* a file named twice (alone, then in its directory), the repeat in a
     * reader's share with files after it: read once, and no process waits
     * for it (a reader used to send it and wait for process 0 to take it) */
    snprintf(inputs, sizeof inputs, "'%s/rank12.trace.json.gz' '%s'", dir, dir);
    same_as_teller(inputs, tmp, 0);
    /* the repeat last, with no step pattern: its flag is the announcement's
     * last byte (a reader once took it for a path's end, read the file and
     * waited for process 0 to take it) */
    snprintf(inputs, sizeof inputs, "'%s' '%s/rank3.trace.json.gz'", dir, dir);
    same_as_teller(inputs, tmp, 0);
    /* a reference run, loaded first: two loads, each with its round */
    snprintf(inputs, sizeof inputs, "--baseline '%s' '%s'", dir, dir);
    same_as_teller(inputs, tmp, 0);
    /* real multi-rank traces: two Kineto ranks, an NCCL trace, a 2-GPU nsys export */
    snprintf(inputs, sizeof inputs, "'%s'", shared_path("hta/trace_filter"));
    same_as_teller(inputs, tmp, 0);
    snprintf(inputs, sizeof inputs, "'%s'", shared_path("hta/nccl_parser_config"));
    same_as_teller(inputs, tmp, 0);
    snprintf(inputs, sizeof inputs, "'%s'", shared_path("nsys-ai/mfu_2gpu_before.sqlite"));
    same_as_teller(inputs, tmp, 0);
    /* ranks a hang took down mid-step, held by readers: their unfinished
     * steps, and their cells of the steps they never reached */
    char hang[] = "/tmp/teller_mpi_hang_XXXXXX";
    teller_sim_opts o = sim_shape(2, 2, 2, 2, 10, 1); /* two ranks never reach the last step */
    o.fault_rate = 0.5;
    o.faults = 1u << TELLER_FAULT_NCCL_HANG;
    sim_case(hang, &o);
    snprintf(inputs, sizeof inputs, "'%s'", hang);
    same_as_teller(inputs, tmp, 0);
    rm_rf(hang);
    rm_rf(dir);
    rm_rf(tmp);
}

static void test_mpi_unreadable_file_fails_every_process(void)
{
    if (mpirun_missing())
        return;
    char dir[] = "/tmp/teller_mpi_bad_XXXXXX", cmd[4096], out[256], path[300];
    sim_faulty(dir, 2, 4, 6, 3, 0);
    /* rank 6's file (read by process 3 of 4) is cut to its first bytes */
    snprintf(path, sizeof path, "%s/rank6.trace.json.gz", dir);
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL);
    if (f) {
        fputs("{\"traceEvents\": [", f);
        fclose(f);
    }
    snprintf(out, sizeof out, "%s/run", dir);
    snprintf(cmd, sizeof cmd, MPIRUN " 4 '%s' diagnose -q --json '%s/p.json' '%s'", TELLER_MPI, dir, dir);
    CHECK(run(cmd, out) > 0); /* failed, not killed by the timeout */
    snprintf(path, sizeof path, "%s.err", out);
    size_t nerr = 0;
    char *err = read_file(path, &nerr);
    CHECK(err && strstr(err, "process 3 cannot read its file") && strstr(err, "rank6.trace.json.gz"));
    CHECK(err && strstr(err, "teller: ") && strstr(err, "rank6.trace.json.gz:"));
    free(err);
    /* a file named that does not exist: refused before anything is read */
    snprintf(cmd, sizeof cmd, MPIRUN " 2 '%s' diagnose -q '%s/rank0.trace.json.gz' '%s/rank99.trace.json.gz'", TELLER_MPI,
             dir, dir);
    CHECK(run(cmd, out) > 0);
    err = read_file(path, &nerr);
    CHECK(err && strstr(err, "rank99.trace.json.gz"));
    free(err);
    rm_rf(dir);
}

/* Writes text to dir/name, executable; its path in path. 0 when written. */
static int write_script(const char *dir, const char *name, const char *text, char *path, size_t cap)
{
    snprintf(path, cap, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    int bad = fputs(text, f) < 0;
    bad |= fclose(f) != 0;
    return bad || chmod(path, 0755) ? -1 : 0;
}

/* Whether a live process (not a zombie) runs prog with mark in its arguments. */
static int alive_with(const char *prog, const char *mark)
{
    DIR *d = opendir("/proc");
    int found = 0;
    for (struct dirent *e; d && !found && (e = readdir(d));) {
        if (e->d_name[0] < '1' || e->d_name[0] > '9')
            continue;
        char path[300], buf[8192];
        snprintf(path, sizeof path, "/proc/%s/stat", e->d_name);
        FILE *f = fopen(path, "r");
        size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
        if (f)
            fclose(f);
        buf[n] = 0;
        const char *paren = strrchr(buf, ')'); /* "pid (comm) S ...": the state after the name */
        if (!paren || paren[1] != ' ' || paren[2] == 'Z')
            continue;
        snprintf(path, sizeof path, "/proc/%s/cmdline", e->d_name);
        f = fopen(path, "r");
        n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
        if (f)
            fclose(f);
        buf[n] = 0;
        if (strcmp(buf, prog)) /* argv[0]: mpirun's own arguments name the run too */
            continue;
        for (size_t i = 0; i < n; i++)
            buf[i] = buf[i] ? buf[i] : ' ';
        found = strstr(buf, mark) != NULL;
    }
    if (d)
        closedir(d);
    return found;
}

static double mono_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* A process taken down by SIGKILL 0.2 s into the run: the others do not
 * wait forever for its files (mpirun ends them), and the rank is named.
 * mpirun itself (Open MPI 4.1) once hung on a PMIx error after every
 * process had ended, under ASan: that is its teardown, not teller, so once
 * no process of the run is left and the rank was named it is ended here. */
static void test_mpi_killed_process_fails_the_run(void)
{
    if (mpirun_missing())
        return;
    char dir[] = "/tmp/teller_mpi_kill_XXXXXX", cmd[4096], path[300], out[300];
    sim_faulty(dir, 2, 4, 6, 3, 0);
    CHECK_EQ_INT(write_script(dir, "kill2.sh",
                              "#!/bin/sh\nif [ \"$OMPI_COMM_WORLD_RANK\" = 2 ]; then (sleep 0.2; kill -9 $$) & fi\n"
                              "exec \"$@\"\n",
                              path, sizeof path),
                 0);
    snprintf(out, sizeof out, "%s/run.out", dir);
    snprintf(cmd, sizeof cmd, MPIRUN " 4 '%s' '%s' diagnose -q --json '%s/p.json' '%s' >'%s' 2>&1", path, TELLER_MPI,
             dir, dir, out);
    pid_t p = fork();
    if (p == 0) {
        setpgid(0, 0);
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    CHECK(p > 0);
    int status = 0, done = 0, lingered = 0;
    size_t n = 0;
    char *text = NULL;
    for (double t0 = mono_s(); p > 0 && !done && mono_s() - t0 < 120;) {
        usleep(100000);
        if (waitpid(p, &status, WNOHANG) == p) {
            done = 1;
            break;
        }
        free(text);
        text = read_file(out, &n);
        if (mono_s() - t0 > 20 && text && strstr(text, "rank 2") && !alive_with(TELLER_MPI, dir))
            lingered = done = 1; /* every process gone, the rank named: mpirun's own teardown hangs */
    }
    if (p > 0 && (!done || lingered)) {
        kill(-p, SIGKILL);
        waitpid(p, &status, 0);
    }
    CHECK(done);
    CHECK(lingered || (WIFEXITED(status) && WEXITSTATUS(status) != 0));
    CHECK(!alive_with(TELLER_MPI, dir));
    free(text);
    text = read_file(out, &n);
    /* Open MPI: "mpirun noticed that process rank 2 with PID ... exited on signal 9 (Killed)" */
    CHECK(text && strstr(text, "rank 2") && strstr(text, "signal 9"));
    if (lingered)
        fprintf(stderr, "  note: mpirun outlived the run's processes; ended by the test\n");
    free(text);
    rm_rf(dir);
}

/* A process that stalls without dying (SIGSTOPped by a watcher in its
 * wrapper once it has a rank file open, until process 0 has spoken): the
 * run waits for it, and process 0 says every TELLER_MPI_WAIT seconds which
 * file it waits for and from which process; the run then ends as usual. */
static void test_mpi_stalled_process_is_named(void)
{
    if (mpirun_missing())
        return;
    if (access("/usr/bin/python3", X_OK)) { /* the watcher; a shim's start-up (pyenv) is too slow to catch the read */
        fprintf(stderr, "  skipped: /usr/bin/python3 not found\n");
        return;
    }
    char dir[] = "/tmp/teller_mpi_stall_XXXXXX", cmd[4096], path[300], out[256];
    sim_faulty(dir, 2, 4, 600, 5, 0); /* 3 MB files: a read long enough to be caught open */
    /* stopped while it reads a rank file; let go once process 0 has said
     * what it waits for (run.err), or after 60 s */
    static const char watcher[] = "import os, signal, sys, time\n"
                                  "pid, said, t0 = int(sys.argv[1]), sys.argv[2], time.time()\n"
                                  "def waited():\n"
                                  "    try:\n"
                                  "        return 'has waited' in open(said).read()\n"
                                  "    except OSError:\n"
                                  "        return False\n"
                                  "while time.time() - t0 < 120:\n"
                                  "    for fd in os.listdir('/proc/%d/fd' % pid) if os.path.isdir('/proc/%d' % pid) else sys.exit(1):\n"
                                  "        try:\n"
                                  "            if os.readlink('/proc/%d/fd/%s' % (pid, fd)).endswith('.trace.json.gz'):\n"
                                  "                os.kill(pid, signal.SIGSTOP)\n"
                                  "                t1 = time.time()\n"
                                  "                while not waited() and time.time() - t1 < 60:\n"
                                  "                    time.sleep(0.05)\n"
                                  "                os.kill(pid, signal.SIGCONT)\n"
                                  "                sys.exit(0)\n"
                                  "        except OSError:\n"
                                  "            pass\n"
                                  "    time.sleep(0.001)\n";
    char wrapper[1024];
    snprintf(wrapper, sizeof wrapper,
             "#!/bin/sh\nif [ \"$OMPI_COMM_WORLD_RANK\" = 2 ]; then /usr/bin/python3 '%s/stop.py' $$ '%s/run.err' & fi\n"
             "exec \"$@\"\n",
             dir, dir);
    CHECK_EQ_INT(write_script(dir, "stop.py", watcher, path, sizeof path), 0);
    CHECK_EQ_INT(write_script(dir, "stall2.sh", wrapper, path, sizeof path), 0);
    snprintf(out, sizeof out, "%s/run", dir);
    snprintf(cmd, sizeof cmd, "env TELLER_MPI_WAIT=1 " MPIRUN " 4 '%s' '%s' diagnose -q --json '%s/p.json' '%s'", path,
             TELLER_MPI, dir, dir);
    CHECK_EQ_INT(run(cmd, out), 0);
    snprintf(path, sizeof path, "%s.err", out);
    size_t n = 0;
    char *err = read_file(path, &n);
    CHECK(err && strstr(err, "teller-mpi: process 0 has waited ") && strstr(err, ".trace.json.gz from process 2\n"));
    free(err);
    rm_rf(dir);
}

#endif

const test_case mpi_tests[] = {
    {"mpi: a packed store and its summary build the run as the store itself; cut short, each is refused",
     test_packed_store_appends_as_the_store},
    {"mpi: a source's step cells are found from its own events alone", test_step_cells_of_own_events},
    {"mpi: the collectives' members the diagnosis reads, found from rows, say what their kernels say", test_members_are_their_kernels},
    {"mpi: a reader's files, built one by one and appended with their trees, are as if built in one store",
     test_local_stores_append_as_built},
    {"mpi: a rank held by two sources sums their cells and unions their GPU busy time", test_rank_of_two_sources},
    {"mpi: a reader stamps its kept events for the build; its ends, steps and cells are the run's; damaged, refused",
     test_readers_answer_the_build},
    {"mpi: the build's question of a span without a marker and its answer, damaged, are refused naming where",
     test_unmarked_question_refused_when_damaged},
    {"mpi: the build takes a holder's answers; an end, step or span not the events' fails it naming the file",
     test_build_takes_holders_answers},
    {"mpi: a damaged summary is refused naming the file and where; one of other events fails the tree build",
     test_summary_refused_when_damaged},
    {"mpi: a packed store keeps the bounds on times a trace keeps, or is refused naming the event",
     test_packed_store_keeps_the_trace_bounds},
#ifdef TELLER_MPI
    {"mpi: teller-mpi -n 1, 2, 4 writes what teller diagnose writes (simulated 16 ranks with reports, a file named twice, a reference, real traces, ranks a hang took down)",
     test_mpi_predictions_are_teller_diagnose},
    {"mpi: a file one process cannot read fails the run on every process, no hang", test_mpi_unreadable_file_fails_every_process},
    {"mpi: a process killed mid-run ends the run, named by mpirun, no process left waiting",
     test_mpi_killed_process_fails_the_run},
    {"mpi: a process that stalls is named while process 0 waits for its file", test_mpi_stalled_process_is_named},
#endif
    {NULL, NULL},
};
