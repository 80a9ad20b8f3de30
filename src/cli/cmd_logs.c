/*
 * cmd_logs.c - `teller logs`: read service logs, mine templates, align to
 * a trace's steps, or measure the miner on Loghub-2k.
 */
#include <dirent.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "teller/logs.h"
#include "../util/textout.h"

/* ---- output helpers ------------------------------------------------------ */

static char  *g_tmp;
static size_t g_tmp_cap;

static void put_json_slice(FILE *f, const char *p, size_t n)
{
    if (n + 1 > g_tmp_cap) {
        char *t = realloc(g_tmp, n + 1);
        if (!t) {
            fputs("\"\"", f);
            return;
        }
        g_tmp = t;
        g_tmp_cap = n + 1;
    }
    memcpy(g_tmp, p, n);
    g_tmp[n] = 0;
    teller_json_put(f, g_tmp);
}

typedef struct tpl_info {
    uint64_t by_level[TELLER_LOGL_COUNT];
} tpl_info;

/* Pass 1 mines every record and counts; with --json, pass 2 reads the
 * files again and writes each record with its template as it is at the
 * end, so every record of a template shows the same text and one param
 * per `<*>`. Pass 2 finds each record's id by mining the same records
 * again with a fresh miner (same input, same ids), so memory stays at the
 * templates whatever the number of records. */
typedef struct run {
    int                json;
    int                pass;
    teller_log_miner  *miner;  /* pass 1's, then the final templates */
    teller_log_miner  *replay; /* pass 2's, for the ids */
    tpl_info          *info;
    size_t             info_cap;
    const char        *file;
    uint64_t           left;   /* pass 2: records of this file pass 1 saw and not yet written */
    teller_store      *store;  /* for --align, else NULL */
    int32_t            node;
    teller_log_param   params[64];
} run;

static const char *const FLAG_NAMES[] = {"no_time",   "year_inferred", "date_inferred", "no_subsec",
                                         "truncated", "ansi",          "bad_utf8",      "wrapper_time",
                                         "outside_step", "seq_assumed", "capture_time"};

static int write_record(run *r, const teller_log_record *rec, const teller_log_match *mt);

static int on_record(void *ctx, const teller_log_record *rec)
{
    run *r = ctx;
    teller_log_match mt;
    if (r->pass == 2) {
        if (r->left == 0)
            return 1; /* the file grew since pass 1 */
        r->left--;
        if (teller_log_miner_add(r->replay, rec->key.p, rec->key.n, &mt, NULL, 0) != TELLER_OK ||
            teller_log_miner_params(r->miner, mt.template_id, rec->key.p, rec->key.n, r->params, 64,
                                    &mt.num_params) != TELLER_OK)
            return -TELLER_ERR_NOMEM;
        return write_record(r, rec, &mt);
    }
    if (teller_log_miner_add(r->miner, rec->key.p, rec->key.n, &mt, NULL, 0) != TELLER_OK)
        return -TELLER_ERR_NOMEM;
    if (mt.template_id >= r->info_cap) {
        size_t nc = r->info_cap ? r->info_cap * 2 : 256;
        while (nc <= mt.template_id)
            nc *= 2;
        tpl_info *ni = realloc(r->info, nc * sizeof *ni);
        if (!ni)
            return -TELLER_ERR_NOMEM;
        memset(ni + r->info_cap, 0, (nc - r->info_cap) * sizeof *ni);
        r->info = ni;
        r->info_cap = nc;
    }
    r->info[mt.template_id].by_level[rec->level < TELLER_LOGL_COUNT ? rec->level : 0]++;
    return 0;
}

/* One JSON object for rec, whose template (final) and params are in mt and
 * r->params. */
static int write_record(run *r, const teller_log_record *rec, const teller_log_match *mt)
{
    teller_log_align al;
    uint32_t flags = rec->flags;
    if (r->store) {
        teller_log_align_record(r->store, r->node, rec, &al);
        flags |= al.flags;
    }
    FILE *f = stdout;
    fputs("{\"file\":", f);
    teller_json_put(f, r->file);
    fprintf(f, ",\"line\":%llu,\"lines\":%u,", (unsigned long long)rec->line, rec->num_lines);
    if (rec->time_ns == INT64_MIN)
        fputs("\"time_ns\":null", f);
    else
        fprintf(f, "\"time_ns\":%lld", (long long)rec->time_ns);
    fprintf(f, ",\"level\":\"%s\",\"family\":\"%s\",\"rank\":%d,\"pid\":%d",
            teller_log_level_name((teller_log_level)rec->level),
            teller_log_family_name((teller_log_family)rec->family), (int)rec->rank, (int)rec->pid);
    if (rec->device >= 0)
        fprintf(f, ",\"device\":%d", (int)rec->device);
    if (rec->seq >= 0)
        fprintf(f, ",\"seq\":%lld", (long long)rec->seq);
    if (rec->pg.n) {
        fputs(",\"pg\":", f);
        put_json_slice(f, rec->pg.p, rec->pg.n);
        fprintf(f, ",\"pg_rank\":%d", (int)rec->pg_rank);
    }
    if (rec->process.n) {
        fputs(",\"process\":", f);
        put_json_slice(f, rec->process.p, rec->process.n);
    }
    if (rec->source.n) {
        fputs(",\"source\":", f);
        put_json_slice(f, rec->source.p, rec->source.n);
    }
    fputs(",\"requests\":[", f);
    for (uint32_t i = 0; i < rec->num_requests; i++) {
        if (i)
            fputc(',', f);
        put_json_slice(f, rec->request[i].p, rec->request[i].n);
    }
    fprintf(f, "],\"template_id\":%u,\"template\":", mt->template_id);
    teller_json_put(f, teller_log_miner_template(r->miner, mt->template_id));
    fputs(",\"params\":[", f);
    for (uint32_t i = 0; i < mt->num_params && i < 64; i++) {
        if (i)
            fputc(',', f);
        put_json_slice(f, rec->key.p + r->params[i].off, r->params[i].len);
    }
    fputs("]", f);
    if (r->store) {
        if (al.step == TELLER_NONE)
            fputs(",\"step\":null", f);
        else
            fprintf(f, ",\"step\":%u", al.step);
        fprintf(f, ",\"step_rank\":%d", (int)al.rank);
        if (al.coll != TELLER_NONE)
            fprintf(f, ",\"collective\":%u", al.coll);
    }
    fputs(",\"flags\":[", f);
    int first = 1;
    for (size_t b = 0; b < sizeof FLAG_NAMES / sizeof *FLAG_NAMES; b++)
        if (flags & (1u << b)) {
            fprintf(f, "%s\"%s\"", first ? "" : ",", FLAG_NAMES[b]);
            first = 0;
        }
    fputs("],\"msg\":", f);
    put_json_slice(f, rec->msg.p, rec->msg.n);
    fputs("}\n", f);
    return 0;
}

/* Dec 31st 00:00 of the year before year, in epoch ns: the first MM-DD
 * stamp then falls in year (the reader moves a date more than a month
 * after the reference to the year before), and each later one in the year
 * that puts it nearest the line before (a log that runs past New Year goes
 * on into the next); it is also the date of time-only lines until a dated
 * line. */
static int64_t year_ref(int year)
{
    int64_t y = year, days = y * 365 + y / 4 - y / 100 + y / 400 - 719162 - 1;
    return days * 86400LL * 1000000000LL;
}

/* ---- Loghub ---------------------------------------------------------------- */

static int name_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int loghub(const char *dir, const teller_miner_opts *mo, int raw)
{
    DIR *d = opendir(dir);
    if (!d) {
        fprintf(stderr, "teller: %s: cannot open directory\n", dir);
        return 1;
    }
    char *names[256];
    int n = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL && n < 256) {
        if (de->d_name[0] == '.')
            continue;
        char p[4096];
        struct stat sb;
        snprintf(p, sizeof p, "%s/%s/%s_2k.log_structured_corrected.csv", dir, de->d_name, de->d_name);
        if (stat(p, &sb) == 0)
            names[n++] = strdup(de->d_name);
    }
    closedir(d);
    qsort(names, (size_t)n, sizeof *names, name_cmp);
    printf(raw ? "Loghub-2k, raw NAME_2k.log files (headers found by the reader), scored by template id;\n"
                 "GA and PA as Loghub-2.0 defines them\n"
               : "Loghub-2k, Content column fed to the miner; GA and PA as Loghub-2.0 defines them\n");
    printf("%-12s %6s %7s %7s %7s %7s %9s\n", "dataset", "lines", "truth", "found", "GA", "PA", "lines/s");
    double sga = 0, spa = 0;
    int ok = 0, rc = 0;
    for (int i = 0; i < n; i++) {
        char p[4096];
        snprintf(p, sizeof p, "%s/%s", dir, names[i]);
        teller_loghub_result res;
        teller_error err;
        teller_error_clear(&err);
        teller_status st = raw ? teller_loghub_eval_raw(p, mo, &res, &err) : teller_loghub_eval(p, mo, &res, &err);
        if (st != TELLER_OK) {
            fprintf(stderr, "teller: %s: %s\n", err.file, err.msg);
            rc = 1;
        } else {
            printf("%-12s %6u %7u %7u %7.3f %7.3f %9.0f\n", res.name, res.lines, res.truth_groups,
                   res.found_groups, res.ga, res.pa, res.seconds > 0 ? res.lines / res.seconds : 0.0);
            sga += res.ga;
            spa += res.pa;
            ok++;
        }
        free(names[i]);
    }
    if (ok)
        printf("%-12s %6s %7s %7s %7.3f %7.3f\n", "average", "", "", "", sga / ok, spa / ok);
    return rc;
}

/* ---- reading the logs ------------------------------------------------------ */

/* How every log file is read: the options of the command line. */
typedef struct read_opts {
    int     tz;   /* --tz-offset */
    int64_t ref;  /* reference time of dates without a year; 0: each file's mtime */
    int     node; /* --node, or -1 for the file name's */
} read_opts;

/* The start of the earliest event of the store, or 0 when it has none: the
 * reference time of the logs aligned to it when no --year is given. */
static int64_t first_event_ns(const teller_store *st)
{
    const teller_events *ev = teller_store_events(st);
    int64_t mn = INT64_MAX;
    for (size_t e = 0; e < ev->n; e++)
        if (ev->start_ns[e] < mn)
            mn = ev->start_ns[e];
    return ev->n ? mn : 0;
}

/* Reads one log file through on_record in r's current pass; its counts go
 * to *s. Returns 0, or 1 after reporting why the file could not be read. */
static int read_log(run *r, const char *path, uint64_t records, const read_opts *ro, teller_log_stats *s)
{
    teller_log_opts o = teller_log_defaults();
    o.tz_offset_s = ro->tz;
    o.ref_ns = ro->ref;
    struct stat sb;
    if (!ro->ref && stat(path, &sb) == 0)
        o.ref_ns = (int64_t)sb.st_mtime * 1000000000LL;
    r->file = path;
    r->left = records;
    r->node = ro->node >= 0 ? ro->node : teller_log_node_from_path(path);
    if (r->node < 0)
        r->node = 0;
    teller_error err;
    teller_error_clear(&err);
    if (teller_log_read_file(path, &o, on_record, r, s, &err) != TELLER_OK) {
        fprintf(stderr, "teller: %s: %s\n", err.file[0] ? err.file : path, err.msg);
        return 1;
    }
    return 0;
}

/* Adds one file's counts to the total. */
static void add_stats(teller_log_stats *total, const teller_log_stats *s)
{
    total->lines += s->lines;
    total->records += s->records;
    total->blank += s->blank;
    total->binary += s->binary;
    total->bad_utf8 += s->bad_utf8;
    total->ansi += s->ansi;
    total->truncated += s->truncated;
    total->no_time += s->no_time;
    for (int fam = 0; fam < TELLER_LOG_FAMILY_COUNT; fam++)
        total->by_family[fam] += s->by_family[fam];
}

/* Pass 1 over every log (mining and counting into *total), then with
 * --json pass 2 (writing the records). Returns 0, or 1 after reporting an
 * error. */
static int read_logs(run *r, char **logs, int nlogs, const teller_miner_opts *mo, const read_opts *ro,
                     teller_log_stats *total)
{
    int rc = 0;
    uint64_t *records = calloc((size_t)nlogs, sizeof *records); /* per file, pass 1's count */
    for (r->pass = 1; records && r->pass <= 1 + r->json && rc == 0; r->pass++) {
        if (r->pass == 2 && !(r->replay = teller_log_miner_create(mo)))
            break;
        for (int k = 0; k < nlogs && rc == 0; k++) {
            teller_log_stats s;
            rc = read_log(r, logs[k], records[k], ro, &s);
            if (rc || r->pass == 2)
                continue;
            if (s.binary)
                fprintf(stderr, "teller: warning: %s: %llu of its %llu lines skipped as binary\n", logs[k],
                        (unsigned long long)s.binary, (unsigned long long)s.lines);
            records[k] = s.records;
            add_stats(total, &s);
        }
    }
    if (!records || (r->json && rc == 0 && !r->replay)) {
        cli_error("logs", "out of memory");
        rc = 1;
    }
    free(records);
    return rc;
}

/* ---- the summary ------------------------------------------------------------- */

/* The counts of every file together; on stderr with --json, whose stdout
 * is the records. */
static void print_totals(const run *r, const teller_log_stats *total)
{
    FILE *sf = r->json ? stderr : stdout;
    fprintf(sf, "%llu lines, %llu records (", (unsigned long long)total->lines,
            (unsigned long long)total->records);
    for (int fam = 0; fam < TELLER_LOG_FAMILY_COUNT; fam++)
        fprintf(sf, "%s%s %llu", fam ? ", " : "", teller_log_family_name((teller_log_family)fam),
                (unsigned long long)total->by_family[fam]);
    fprintf(sf, "), %u templates; skipped: %llu blank, %llu binary; kept: %llu bad UTF-8, "
                "%llu ANSI, %llu truncated, %llu without time\n",
            teller_log_miner_count(r->miner), (unsigned long long)total->blank,
            (unsigned long long)total->binary, (unsigned long long)total->bad_utf8,
            (unsigned long long)total->ansi, (unsigned long long)total->truncated,
            (unsigned long long)total->no_time);
}

/* The templates by count, descending (ties by id), each with the most
 * severe level of its records. */
static void print_templates(const run *r)
{
    uint32_t nt = teller_log_miner_count(r->miner);
    uint32_t *order = malloc((nt + 1) * sizeof *order);
    for (uint32_t i = 0; order && i < nt; i++)
        order[i] = i;
    /* insertion sort keeps it simple and stable */
    for (uint32_t i = 1; order && i < nt; i++) {
        uint32_t x = order[i], j = i;
        while (j > 0 && teller_log_miner_hits(r->miner, order[j - 1]) < teller_log_miner_hits(r->miner, x)) {
            order[j] = order[j - 1];
            j--;
        }
        order[j] = x;
    }
    printf("%8s %-8s %5s  %s\n", "count", "level", "id", "template");
    for (uint32_t i = 0; order && i < nt; i++) {
        uint32_t id = order[i];
        int lv = 0;
        for (int l = TELLER_LOGL_COUNT - 1; l > 0; l--)
            if (id < r->info_cap && r->info[id].by_level[l]) {
                lv = l;
                break;
            }
        printf("%8llu %-8s %5u  ", (unsigned long long)teller_log_miner_hits(r->miner, id),
               lv ? teller_log_level_name((teller_log_level)lv) : "-", id);
        cli_put_text(stdout, teller_log_miner_template(r->miner, id));
        putchar('\n');
    }
    free(order);
}

/* ---- main ------------------------------------------------------------------ */

int cmd_logs(int argc, char **argv)
{
    cli_load_opts lo = cli_load_defaults();
    teller_miner_opts mo = {0, 0};
    run r;
    memset(&r, 0, sizeof r);
    cli_strs traces = {NULL, 0};
    int year = 0, node = -1, tz = 0, raw = 0, rc = 0;
    const char *loghub_dir = NULL;
    const cli_opt opts[] = {
        CLI_BOOL(0, "json", &r.json,
                 "one JSON object per record: line, time_ns, level, rank,\n"
                 "template_id, template, params, family, ... (+ step with --align)"),
        CLI_UNTIL(0, "align", &traces, "TRACE...",
                  "load traces (files or case directories) up to '--' and give\n"
                  "each record its step (rules: docs/ARCHITECTURE.md, Logs)"),
        CLI_INT(0, "node", &node, "N", 0, 1000000,
                "the node the logs were written on (default: 'node<N>' in\n"
                "the file name, else 0)"),
        CLI_INT(0, "year", &year, "Y", 1970, 9999,
                "year of the first timestamp without one (default: the file's\n"
                "mtime, or the trace's first event with --align); later\n"
                "ones run on past New Year"),
        CLI_INT(0, "tz-offset", &tz, "S", -86400, 86400, "the logger's zone in seconds east of UTC (default 0)"),
        CLI_STR(0, "loghub", &loghub_dir, "DIR", 0,
                "GA and PA of the miner on every Loghub-2k dataset in DIR\n"
                "(feeds the Content column)"),
        CLI_BOOL(0, "raw", &raw,
                 "with --loghub: read the raw NAME_2k.log files instead, headers\n"
                 "and all, and score by template id"),
        CLI_NUM(0, "similarity", &mo.similarity, "F", 0, 1, CLI_ABOVE, "miner threshold (default 0.7)"),
        CLI_LOAD_OPTS(&lo),
        CLI_END,
    };
    const cli_cmd cmd = {
        .name = "logs",
        .usage = "[options] LOG...\n"
                 "--align TRACE_OR_CASE... -- [options] LOG...\n"
                 "--loghub DIR [--raw]",
        .about = "Reads vLLM, SGLang, PyTorch, NCCL and other logs (plain or gzip); one record per line\n"
                 "(one per Python traceback); mines templates (Drain family). Without --json: a summary\n"
                 "of templates by count and level.",
        .args = "  LOG...            log files; a file that is mostly binary is refused, and the binary\n"
                "                    lines of a text log are skipped and counted",
        .opts = opts,
        .max_args = -1,
    };
    int nlogs = cli_parse(&cmd, argc, argv);
    read_opts ro = {tz, year ? year_ref(year) : 0, node};
    teller_log_stats total;
    memset(&total, 0, sizeof total);
    if (nlogs < 0) {
        rc = cli_parse_exit(nlogs);
    } else if (loghub_dir) {
        rc = loghub(loghub_dir, &mo, raw);
    } else if (nlogs == 0) {
        cli_error(cmd.name, "no log given");
        rc = 2;
    } else if (traces.n && !(r.store = cli_load(&lo, traces.v, (int)traces.n))) {
        rc = 1;
    } else if (!(r.miner = teller_log_miner_create(&mo))) {
        cli_error(cmd.name, "out of memory");
        rc = 1;
    } else {
        if (r.store && !year)
            ro.ref = first_event_ns(r.store);
        rc = read_logs(&r, argv + 1, nlogs, &mo, &ro, &total);
    }
    if (rc == 0 && r.miner) {
        print_totals(&r, &total);
        if (!r.json)
            print_templates(&r);
    }
    teller_log_miner_free(r.miner);
    teller_log_miner_free(r.replay);
    teller_store_free(r.store);
    free(r.info);
    cli_strs_free(&traces);
    free(g_tmp);
    g_tmp = NULL;
    g_tmp_cap = 0;
    return rc;
}
