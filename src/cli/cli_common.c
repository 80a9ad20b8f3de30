/*
 * cli_common.c - the common options, loading traces for the CLI (through
 * the library's load path, include/teller/load.h) and printing trace text
 * safely.
 */
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "teller/model.h"
#include "../util/textout.h"

cli_load_opts cli_load_defaults(void)
{
    cli_load_opts o;
    memset(&o, 0, sizeof o);
    o.load = teller_load_defaults();
    return o;
}

int cli_strs_add(cli_strs *l, const char *s)
{
    char *copy = strdup(s);
    char **nv = copy ? realloc(l->v, (l->n + 1) * sizeof *nv) : NULL;
    if (!nv) {
        free(copy);
        return -1;
    }
    l->v = nv;
    l->v[l->n++] = copy;
    return 0;
}

void cli_strs_free(cli_strs *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->v[i]);
    free(l->v);
    l->v = NULL;
    l->n = 0;
}

static int str_cmp(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

int cli_case_logs(const char *dir, cli_strs *l)
{
    char p[4096];
    snprintf(p, sizeof p, "%s/logs", dir);
    DIR *d = opendir(p);
    if (!d)
        return 0;
    size_t had = l->n;
    int rc = 0;
    for (struct dirent *de; rc == 0 && (de = readdir(d)) != NULL;) {
        size_t len = strlen(de->d_name);
        if (de->d_name[0] == '.' || len < 5 || strcmp(de->d_name + len - 4, ".log"))
            continue;
        char f[4400];
        snprintf(f, sizeof f, "%s/%s", p, de->d_name);
        rc = cli_strs_add(l, f);
    }
    closedir(d);
    /* the directory's order is the file system's; the name's is the same everywhere */
    qsort(l->v + had, l->n - had, sizeof *l->v, str_cmp);
    return rc;
}

int cli_arg_case_logs(void *logs, const char *a)
{
    struct stat sb;
    if (stat(a, &sb) == 0 && S_ISDIR(sb.st_mode) && cli_case_logs(a, logs)) {
        fprintf(stderr, "teller: out of memory\n");
        return CLI_FAIL;
    }
    return 0;
}

int cli_can_write(const char *path)
{
    struct stat sb;
    if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode)) {
        fprintf(stderr, "teller: %s: cannot write: a directory\n", path);
        return -1;
    }
    const char *slash = strrchr(path, '/');
    char dir[4096];
    if (!slash)
        snprintf(dir, sizeof dir, ".");
    else
        snprintf(dir, sizeof dir, "%.*s", slash == path ? 1 : (int)(slash - path), path);
    const char *why = NULL;
    if (stat(dir, &sb) != 0)
        why = strerror(errno);
    else if (!S_ISDIR(sb.st_mode))
        why = "not a directory";
    else if (access(dir, W_OK | X_OK) != 0)
        why = strerror(errno);
    if (!why)
        return 0;
    fprintf(stderr, "teller: %s: cannot write: %s: %s\n", path, dir, why);
    return -1;
}

int cli_load_model(const char *path, int none, teller_model **out)
{
    *out = NULL;
    if (none)
        return 0;
    teller_error err;
    teller_error_clear(&err);
    teller_status s = path ? teller_model_load(path, out, &err) : teller_model_load_default(out, &err);
    if (s != TELLER_OK) {
        fprintf(stderr, "teller: %s:%llu: %s\n", err.file, (unsigned long long)err.offset, err.msg);
        return -1;
    }
    return 0;
}

int cli_make_dir(const char *cmd, const char *dir)
{
    struct stat sb;
    if (mkdir(dir, 0777) == 0 || (errno == EEXIST && stat(dir, &sb) == 0 && S_ISDIR(sb.st_mode)))
        return 0;
    fprintf(stderr, "teller %s: %s: cannot create: %s\n", cmd, dir, strerror(errno));
    return -1;
}

int cli_rm_rf(const char *path)
{
    struct stat sb;
    if (lstat(path, &sb))
        return errno == ENOENT ? 0 : -1;
    if (!S_ISDIR(sb.st_mode))
        return unlink(path) ? -1 : 0;
    DIR *d = opendir(path);
    if (!d)
        return -1;
    int rc = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
            continue;
        size_t n = strlen(path) + strlen(de->d_name) + 2;
        char *p = malloc(n);
        if (!p) {
            rc = -1;
            break;
        }
        snprintf(p, n, "%s/%s", path, de->d_name);
        rc |= cli_rm_rf(p);
        free(p);
    }
    closedir(d);
    return rmdir(path) ? -1 : rc;
}

FILE *cli_open_out(const char *path)
{
    FILE *f = fopen(path, "w");
    if (!f)
        fprintf(stderr, "teller: %s: cannot write: %s\n", path, strerror(errno));
    return f;
}

int cli_close_out(FILE *f, const char *path)
{
    int bad = ferror(f);
    if (fclose(f) != 0 || bad) {
        fprintf(stderr, "teller: %s: cannot write: %s\n", path, bad ? "a write failed" : strerror(errno));
        return -1;
    }
    return 0;
}

/* "[=========           ] 45%  name" on one line of stderr. */
static void progress(void *ctx, const char *what, uint64_t done, uint64_t total)
{
    (void)ctx;
    int w = 30, n = total > 0 ? (int)((double)done / (double)total * w) : w;
    const char *base = strrchr(what, '/');
    fprintf(stderr, "\rloading [%.*s%*s] %3d%%  %-40.40s", n, "==============================", w - n, "",
            total > 0 ? (int)(100.0 * (double)done / (double)total) : 100, base ? base + 1 : what);
    fflush(stderr);
}

/* After "teller: DIR: no trace files ...": the subdirectories of dir that
 * hold traces as a directory named on the command line is read (at its
 * top or under traces/), so that the user can give them. */
static void name_trace_subdirs(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    cli_strs subs = {NULL, 0};
    for (struct dirent *de; (de = readdir(d)) != NULL;) {
        char p[4400];
        struct stat sb;
        snprintf(p, sizeof p, "%s/%s", dir, de->d_name);
        if (de->d_name[0] == '.' || stat(p, &sb) != 0 || !S_ISDIR(sb.st_mode))
            continue;
        const char *one = p;
        char **files = NULL;
        size_t n = 0;
        teller_error e;
        if (teller_load_expand(&one, 1, &files, &n, &e) == TELLER_OK && n > 0 && cli_strs_add(&subs, de->d_name)) {
            teller_load_files_free(files, n);
            break;
        }
        teller_load_files_free(files, n);
    }
    closedir(d);
    if (subs.n) {
        qsort(subs.v, subs.n, sizeof *subs.v, str_cmp);
        fputs("; its subdirectories ", stderr);
        enum { SHOWN = 4 };
        for (size_t i = 0; i < subs.n && i < SHOWN; i++) {
            fputs(i == 0 ? "" : i + 1 == subs.n ? " and " : ", ", stderr);
            cli_put_text(stderr, subs.v[i]);
            fputc('/', stderr);
        }
        if (subs.n > SHOWN)
            fprintf(stderr, " and %zu more", subs.n - SHOWN);
        fputs(" hold some: give them", stderr);
    }
    cli_strs_free(&subs);
}

teller_status (*cli_loader)(teller_store *, const char *const *, size_t, const teller_load_opts *, teller_error *) = teller_load;

teller_store *cli_load(const cli_load_opts *o, char **paths, int npaths)
{
    char **files = NULL;
    size_t nfiles = 0;
    teller_error err;
    teller_error_clear(&err);
    if (teller_load_expand((const char *const *)paths, (size_t)(npaths > 0 ? npaths : 0), &files, &nfiles, &err) !=
        TELLER_OK) {
        fprintf(stderr, "teller: %s: %s", err.file, err.msg);
        struct stat sb;
        if (err.code == TELLER_ERR_ARG && stat(err.file, &sb) == 0 && S_ISDIR(sb.st_mode))
            name_trace_subdirs(err.file);
        fputc('\n', stderr);
        return NULL;
    }
    teller_store *st = teller_store_create();
    if (!st) {
        fprintf(stderr, "teller: out of memory\n");
        teller_load_files_free(files, nfiles);
        return NULL;
    }
    teller_load_opts lo = o->load;
    lo.force = 1; /* the run check is made below, so that its refusal alone says how to force it */
    /* a progress bar on stderr for long inputs, when someone is watching */
    uint64_t total = 0;
    for (size_t i = 0; i < nfiles; i++) {
        struct stat sb;
        if (stat(files[i], &sb) == 0)
            total += (uint64_t)sb.st_size;
    }
    int bar = !o->quiet && isatty(STDERR_FILENO) && total > (32u << 20);
    if (bar)
        lo.progress = progress;
    teller_status s = cli_loader(st, (const char *const *)files, nfiles, &lo, &err);
    if (bar)
        fputc('\n', stderr);
    teller_load_files_free(files, nfiles);
    int refused = s == TELLER_OK && !o->load.force && teller_load_check_run(st, &err) != TELLER_OK;
    if (s != TELLER_OK || refused) {
        fprintf(stderr, "teller: %s:%llu: ", err.file, (unsigned long long)err.offset);
        cli_put_text(stderr, err.msg);
        fputc('\n', stderr);
        if (refused)
            fprintf(stderr, "teller: --force reads them as one run anyway\n");
        teller_store_free(st);
        return NULL;
    }
    uint64_t nw = teller_store_num_warnings(st);
    if (nw && !o->quiet) {
        size_t shown = teller_store_num_warning_msgs(st);
        if (shown > 5)
            shown = 5;
        for (size_t i = 0; i < shown; i++) {
            fputs("teller: warning: ", stderr);
            cli_put_text(stderr, teller_store_warning_msg(st, i));
            fputc('\n', stderr);
        }
        if (nw > shown)
            fprintf(stderr, "teller: %llu warnings in all\n", (unsigned long long)nw);
    }
    return st;
}

teller_store *cli_parse_load(const cli_cmd *cmd, const cli_load_opts *o, int argc, char **argv, int *status)
{
    int n = cli_parse(cmd, argc, argv);
    if (n < 0) {
        *status = cli_parse_exit(n);
        return NULL;
    }
    teller_store *st = cli_load(o, argv + 1, n);
    *status = st ? 0 : 1;
    return st;
}

/* The code point of the UTF-8 sequence at p that a terminal would act on
 * rather than show: C1 controls (U+0080-U+009F: CSI is U+009B), line and
 * paragraph separators (U+2028, U+2029), and the bidirectional overrides
 * and isolates (U+202A-U+202E, U+2066-U+2069), which reorder what follows
 * on the line; 0 for anything else. *len gets the sequence's length. */
static unsigned acting_code_point(const unsigned char *p, int *len)
{
    if (p[0] == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f) {
        *len = 2;
        return p[1];
    }
    if (p[0] == 0xe2 && p[1] && p[2]) {
        unsigned cp = 0x2000u | ((p[1] & 0x3fu) << 6) | (p[2] & 0x3fu);
        if ((p[1] == 0x80 && (cp == 0x2028 || cp == 0x2029 || (cp >= 0x202a && cp <= 0x202e))) ||
            (p[1] == 0x81 && cp >= 0x2066 && cp <= 0x2069)) {
            *len = 3;
            return cp;
        }
    }
    return 0;
}

void cli_put_text(FILE *f, const char *s)
{
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        int len;
        unsigned cp = acting_code_point(p, &len);
        if (*p < 0x20 || *p == 0x7f) {
            fprintf(f, "\\x%02x", *p);
        } else if (cp) {
            fprintf(f, "\\u%04x", cp);
            p += len - 1;
        } else {
            fputc(*p, f);
        }
    }
}
