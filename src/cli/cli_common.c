/*
 * cli_common.c - the common options, loading traces for the CLI (through
 * the library's load path, include/teller/load.h) and printing trace text
 * safely.
 */
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "../util/textout.h"

cli_load_opts cli_load_defaults(void)
{
    cli_load_opts o;
    memset(&o, 0, sizeof o);
    o.load = teller_load_defaults();
    return o;
}

int cli_common_opt(cli_load_opts *o, int argc, char **argv, int *i)
{
    const char *a = argv[*i];
    if (!strcmp(a, "--step-pattern") || !strcmp(a, "--gpus-per-node") || !strcmp(a, "--jobs") || !strcmp(a, "-j")) {
        if (*i + 1 >= argc) {
            fprintf(stderr, "teller: %s needs a value\n", a);
            return -1;
        }
        const char *v = argv[++*i];
        double x;
        if (!strcmp(a, "--step-pattern"))
            o->load.tree.step_pattern = v;
        else if (!strcmp(a, "--gpus-per-node")) {
            if (cli_number(argv[0], a, v, 1, 1 << 20, 1, &x))
                return -1;
            o->load.tree.gpus_per_node = (int)x;
        } else {
            if (cli_number(argv[0], a, v, 1, 1024, 1, &x))
                return -1;
            o->load.jobs = (int)x;
        }
        return 1;
    }
    if (!strcmp(a, "--force")) {
        o->load.force = 1;
        return 1;
    }
    if (!strcmp(a, "--skip-python")) {
        o->load.ingest.skip_python = 1;
        return 1;
    }
    if (!strcmp(a, "-q") || !strcmp(a, "--quiet")) {
        o->quiet = 1;
        return 1;
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

teller_status (*cli_loader)(teller_store *, const char *const *, size_t, const teller_load_opts *, teller_error *) = teller_load;

teller_store *cli_load(const cli_load_opts *o, char **paths, int npaths)
{
    char **files = NULL;
    size_t nfiles = 0;
    teller_error err;
    teller_error_clear(&err);
    if (teller_load_expand((const char *const *)paths, (size_t)(npaths > 0 ? npaths : 0), &files, &nfiles, &err) !=
        TELLER_OK) {
        fprintf(stderr, "teller: %s: %s\n", err.file, err.msg);
        return NULL;
    }
    teller_store *st = teller_store_create();
    if (!st) {
        fprintf(stderr, "teller: out of memory\n");
        teller_load_files_free(files, nfiles);
        return NULL;
    }
    teller_load_opts lo = o->load;
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
    if (s != TELLER_OK) {
        fprintf(stderr, "teller: %s:%llu: ", err.file, (unsigned long long)err.offset);
        cli_put_text(stderr, err.msg);
        fputc('\n', stderr);
        if (s == TELLER_ERR_ARG)
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
