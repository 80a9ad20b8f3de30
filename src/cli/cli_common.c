/*
 * cli_common.c - loading traces for the CLI and printing trace text safely.
 */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "../util/textout.h"

int cli_common_opt(cli_load_opts *o, int argc, char **argv, int *i)
{
    const char *a = argv[*i];
    if (!strcmp(a, "--step-pattern") || !strcmp(a, "--gpus-per-node")) {
        if (*i + 1 >= argc) {
            fprintf(stderr, "teller: %s needs a value\n", a);
            return -1;
        }
        const char *v = argv[++*i];
        if (a[2] == 's') {
            o->tree.step_pattern = v;
        } else {
            char *end;
            long n = strtol(v, &end, 10);
            if (*end || n <= 0 || n > 1 << 20) {
                fprintf(stderr, "teller: --gpus-per-node wants a positive number, not '%s'\n", v);
                return -1;
            }
            o->tree.gpus_per_node = (int)n;
        }
        return 1;
    }
    if (!strcmp(a, "--skip-python")) {
        o->ingest.skip_python = 1;
        return 1;
    }
    if (!strcmp(a, "-q") || !strcmp(a, "--quiet")) {
        o->quiet = 1;
        return 1;
    }
    return 0;
}

/* A .json file in a directory is taken only if it looks like a trace (a
 * predictions or metrics file beside the traces is not one). */
static int looks_like_trace(const char *path)
{
    size_t l = strlen(path);
    if (l < 5 || strcmp(path + l - 5, ".json"))
        return 1;
    FILE *f = fopen(path, "rb");
    if (!f)
        return 1; /* let the reader say why */
    char head[65536];
    size_t n = fread(head, 1, sizeof head - 1, f);
    fclose(f);
    head[n] = 0;
    const char *p = head;
    while (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t')
        p++;
    return *p == '[' || strstr(head, "\"traceEvents\"") != NULL;
}

static int is_trace_name(const char *n)
{
    size_t l = strlen(n);
    return (l > 5 && !strcmp(n + l - 5, ".json")) || (l > 8 && !strcmp(n + l - 8, ".json.gz")) ||
           (l > 7 && !strcmp(n + l - 7, ".sqlite")) || (l > 4 && !strcmp(n + l - 4, ".tlt"));
}

static int name_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Appends the trace files of directory d (sorted by name) to *list. */
static int collect_dir(const char *d, char ***list, int *n, int *cap)
{
    DIR *dir = opendir(d);
    if (!dir)
        return 0;
    int first = *n;
    struct dirent *de;
    while ((de = readdir(dir)) != NULL) {
        if (de->d_name[0] == '.' || !is_trace_name(de->d_name) || !strcmp(de->d_name, "truth.json"))
            continue;
        char full[4096];
        snprintf(full, sizeof full, "%s/%s", d, de->d_name);
        if (!looks_like_trace(full))
            continue;
        if (*n == *cap) {
            *cap = *cap ? *cap * 2 : 16;
            char **nl = realloc(*list, (size_t)*cap * sizeof **list);
            if (!nl) {
                closedir(dir);
                return -1;
            }
            *list = nl;
        }
        size_t len = strlen(d) + strlen(de->d_name) + 2;
        char *p = malloc(len);
        if (!p) {
            closedir(dir);
            return -1;
        }
        snprintf(p, len, "%s/%s", d, de->d_name);
        (*list)[(*n)++] = p;
    }
    closedir(dir);
    qsort(*list + first, (size_t)(*n - first), sizeof **list, name_cmp);
    return 0;
}

/* "[=========           ] 45%  name" on one line of stderr. */
static void progress(const char *what, off_t done, off_t total)
{
    int w = 30, n = total > 0 ? (int)((double)done / (double)total * w) : w;
    const char *base = strrchr(what, '/');
    fprintf(stderr, "\rloading [%.*s%*s] %3d%%  %-40.40s", n, "==============================", w - n, "",
            total > 0 ? (int)(100.0 * (double)done / (double)total) : 100, base ? base + 1 : what);
    fflush(stderr);
}

teller_store *cli_load(const cli_load_opts *o, char **paths, int npaths)
{
    char **files = NULL;
    int nfiles = 0, cap = 0;
    for (int i = 0; i < npaths; i++) {
        struct stat sb;
        if (stat(paths[i], &sb) != 0) {
            fprintf(stderr, "teller: %s: no such file or directory\n", paths[i]);
            goto fail;
        }
        if (S_ISDIR(sb.st_mode)) {
            int before = nfiles;
            size_t l = strlen(paths[i]) + 8;
            char *sub = malloc(l);
            if (!sub)
                goto fail;
            snprintf(sub, l, "%s/traces", paths[i]);
            if (collect_dir(paths[i], &files, &nfiles, &cap) || collect_dir(sub, &files, &nfiles, &cap)) {
                free(sub);
                goto fail;
            }
            free(sub);
            if (nfiles == before) {
                fprintf(stderr, "teller: %s: no trace files (*.json, *.json.gz, *.sqlite, *.tlt) in this directory\n",
                        paths[i]);
                goto fail;
            }
            continue;
        }
        if (nfiles == cap) {
            cap = cap ? cap * 2 : 16;
            char **nl = realloc(files, (size_t)cap * sizeof *files);
            if (!nl)
                goto fail;
            files = nl;
        }
        if (!(files[nfiles] = strdup(paths[i])))
            goto fail;
        nfiles++;
    }
    if (nfiles == 0) {
        fprintf(stderr, "teller: no trace given\n");
        goto fail;
    }
    teller_store *st = teller_store_create();
    if (!st) {
        fprintf(stderr, "teller: out of memory\n");
        goto fail;
    }
    teller_error err;
    /* a progress bar on stderr for long inputs, when someone is watching */
    off_t total = 0, done = 0;
    for (int i = 0; i < nfiles; i++) {
        struct stat sb;
        if (stat(files[i], &sb) == 0)
            total += sb.st_size;
    }
    int bar = !o->quiet && isatty(STDERR_FILENO) && total > (32 << 20);
    for (int i = 0; i < nfiles; i++) {
        if (bar)
            progress(files[i], done, total);
        teller_error_clear(&err);
        if (teller_ingest_file(st, files[i], &o->ingest, &err) != TELLER_OK) {
            if (bar)
                fputc('\n', stderr);
            fprintf(stderr, "teller: %s:%llu: %s\n", err.file, (unsigned long long)err.offset, err.msg);
            teller_store_free(st);
            goto fail;
        }
        struct stat sb;
        if (stat(files[i], &sb) == 0)
            done += sb.st_size;
    }
    if (bar) {
        progress("building trees", done, total);
        fputc('\n', stderr);
    }
    teller_error_clear(&err);
    if (teller_tree_build(st, &o->tree, &err) != TELLER_OK) {
        fprintf(stderr, "teller: %s:%llu: %s\n", err.file, (unsigned long long)err.offset, err.msg);
        teller_store_free(st);
        goto fail;
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
    for (int i = 0; i < nfiles; i++)
        free(files[i]);
    free(files);
    return st;
fail:
    for (int i = 0; i < nfiles; i++)
        free(files[i]);
    free(files);
    return NULL;
}

void cli_put_text(FILE *f, const char *s)
{
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p < 0x20 || *p == 0x7f)
            fprintf(f, "\\x%02x", *p);
        else
            fputc(*p, f);
    }
}
