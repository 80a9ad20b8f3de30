/*
 * cli_args.c - the one option parser of every command (cli.h): a command's
 * table of cli_opt says each option's name, what its value is, where it
 * goes and its help line; cli_parse reads argv by it, every usage error is
 * "teller CMD: what" (exit 2), and --help is printed from the same table.
 * Values are strict: `--threshold abc`, `--jobs 0` or a count past an
 * int's range is an error that says what was wanted, never a silent
 * default, a cast or an option that quietly does nothing.
 */
#include <assert.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <regex.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "teller/fault.h"

/* The help's option column: names and value, then the help text. */
enum { HELP_COL = 28, MAX_OPTS = 64 };

void cli_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "teller %s: ", cmd);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

int cli_parse_exit(int r) { return r == CLI_HELP ? 0 : r == CLI_USAGE ? 2 : 1; }

/* "Usage: teller NAME FORM" for the first form, "  or:  teller NAME FORM"
 * for the others (the layout help2man reads as a synopsis). */
static void put_usage(const cli_cmd *c, FILE *f)
{
    const char *p = c->usage;
    for (int first = 1; *p; first = 0) {
        size_t n = strcspn(p, "\n");
        fprintf(f, "%s teller %s %.*s\n", first ? "Usage:" : "  or: ", c->name, (int)n, p);
        p += n + (p[n] == '\n');
    }
}

/* Text with each line after the first indented by ind. */
static void put_indented(FILE *f, const char *s, int ind)
{
    for (; *s; s++) {
        fputc(*s, f);
        if (*s == '\n' && s[1])
            fprintf(f, "%*s", ind, "");
    }
}

void cli_help(const cli_cmd *c, FILE *f)
{
    put_usage(c, f);
    fprintf(f, "%s\n", c->about);
    if (c->args)
        fprintf(f, "\nArguments:\n%s\n", c->args);
    fputs("\nOptions:\n", f);
    static const cli_opt help = CLI_BOOL('h', "help", NULL, "this help");
    for (const cli_opt *o = c->opts;; o++) {
        if (o->kind == CLI_K_END)
            o = &help;
        /* "  -x, --name ARG", "      --name ARG" (aligned with the one before), "  -x ARG" */
        char left[128];
        int n = o->letter ? snprintf(left, sizeof left, "  -%c%s", o->letter, o->name ? ", " : "")
                          : snprintf(left, sizeof left, "      ");
        if (o->name)
            n += snprintf(left + n, sizeof left - (size_t)n, "--%s%s", o->flags & CLI_NEG ? "[no-]" : "", o->name);
        if (o->arg)
            n += snprintf(left + n, sizeof left - (size_t)n, " %s%s", o->arg, o->kind == CLI_K_UNTIL ? " --" : "");
        if (n >= HELP_COL)
            fprintf(f, "%s\n%*s", left, HELP_COL, "");
        else
            fprintf(f, "%-*s", HELP_COL, left);
        put_indented(f, o->help, HELP_COL);
        fputc('\n', f);
        if (o == &help)
            break;
    }
    if (c->more)
        fprintf(f, "\n%s\n", c->more);
}

/* ---- values ---- */

/* An integer of kind CLI_K_INT or CLI_K_U64 in [o->lo, o->hi]: decimal
 * digits, a '-' first for an int, nothing else. */
static int get_integer(const cli_cmd *c, const cli_opt *o, const char *opt, const char *v)
{
    char *end = NULL;
    int ok = (v[0] >= '0' && v[0] <= '9') || (o->kind == CLI_K_INT && v[0] == '-' && v[1] >= '0' && v[1] <= '9');
    /* a u64's hi may be 2^64 - 1, which a double rounds up past every uint64_t */
    unsigned long long hi = o->hi >= 18446744073709551615.0 ? ULLONG_MAX : (unsigned long long)o->hi;
    errno = 0;
    if (o->kind == CLI_K_INT) {
        assert(o->lo >= INT_MIN && o->hi <= INT_MAX);
        long long x = ok ? strtoll(v, &end, 10) : 0;
        ok = ok && !*end && !errno && (double)x >= o->lo && (double)x <= o->hi;
        if (ok)
            *(int *)o->dst = (int)x;
    } else {
        unsigned long long x = ok ? strtoull(v, &end, 10) : 0;
        ok = ok && !*end && !errno && (double)x >= o->lo && x <= hi;
        if (ok)
            *(uint64_t *)o->dst = x;
    }
    if (!ok && o->kind == CLI_K_INT)
        cli_error(c->name, "%s wants an integer from %.0f to %.0f, not '%s'", opt, o->lo, o->hi, v);
    else if (!ok)
        cli_error(c->name, "%s wants an integer from %.0f to %llu, not '%s'", opt, o->lo, hi, v);
    return ok ? 0 : CLI_USAGE;
}

static int get_number(const cli_cmd *c, const cli_opt *o, const char *opt, const char *v)
{
    char *end = NULL;
    errno = 0;
    double x = strtod(v, &end);
    int above = (o->flags & CLI_ABOVE) != 0;
    if (!*v || *end || errno || isnan(x) || x < o->lo || (above && x == o->lo) || x > o->hi) {
        cli_error(c->name, "%s wants a number %s %.15g %s %.15g, not '%s'", opt, above ? "above" : "from", o->lo,
                  above ? "and at most" : "to", o->hi, v);
        return CLI_USAGE;
    }
    *(double *)o->dst = x;
    return 0;
}

static int get_choice(const cli_cmd *c, const cli_opt *o, const char *opt, const char *v)
{
    int n = 0;
    for (; o->choices[n]; n++)
        if (!strcmp(v, o->choices[n])) {
            if (o->flags & CLI_OR)
                *(int *)o->dst |= 1 << n;
            else
                *(int *)o->dst = n;
            return 0;
        }
    fprintf(stderr, "teller %s: %s takes ", c->name, opt);
    for (int i = 0; i < n; i++)
        fprintf(stderr, "%s%s", i == 0 ? "" : i == n - 1 ? " or " : ", ", o->choices[i]);
    fprintf(stderr, ", not '%s'\n", v);
    return CLI_USAGE;
}

/* The same flags as the tree builder's (src/tree/tree.c), so a pattern
 * taken here is one it takes. */
static int get_regex(const cli_cmd *c, const cli_opt *o, const char *opt, const char *v)
{
    regex_t re;
    int rc = regcomp(&re, v, REG_EXTENDED | REG_NOSUB);
    if (rc) {
        char m[256];
        regerror(rc, &re, m, sizeof m);
        cli_error(c->name, "%s wants a POSIX extended regular expression, not '%s' (%s)", opt, v, m);
        return CLI_USAGE;
    }
    regfree(&re);
    *(const char **)o->dst = v;
    return 0;
}

static int add_copy(const cli_cmd *c, cli_strs *l, const char *s)
{
    if (cli_strs_add(l, s) == 0)
        return 0;
    cli_error(c->name, "out of memory");
    return CLI_FAIL;
}

/* ---- the parser ---- */

/* The option argv[*i] names, or NULL; *neg says it was --no-NAME, *inline_v
 * gets the value of --name=value. */
static const cli_opt *find_opt(const cli_cmd *c, const char *a, int *neg, const char **inline_v)
{
    *neg = 0;
    *inline_v = NULL;
    if (a[0] != '-' || !a[1])
        return NULL;
    if (a[1] != '-') {
        for (const cli_opt *o = c->opts; a[2] == 0 && o->kind != CLI_K_END; o++)
            if (o->letter == a[1])
                return o;
        return NULL;
    }
    const char *name = a + 2, *eq = strchr(name, '=');
    size_t len = eq ? (size_t)(eq - name) : strlen(name);
    for (const cli_opt *o = c->opts; o->kind != CLI_K_END; o++) {
        if (!o->name)
            continue;
        size_t ol = strlen(o->name);
        int no = (o->flags & CLI_NEG) && len == ol + 3 && !strncmp(name, "no-", 3) && !strncmp(name + 3, o->name, ol);
        if (no || (len == ol && !strncmp(name, o->name, len))) {
            *neg = no;
            *inline_v = eq ? eq + 1 : NULL;
            return o;
        }
    }
    return NULL;
}

/* Does option o (typed as opt) with its value at argv[*i + 1] (or v from
 * --name=v); advances *i past what it took. */
static int take(const cli_cmd *c, const cli_opt *o, const char *opt, int neg, const char *v, int argc, char **argv,
                int *i)
{
    if (!o->arg && v) {
        cli_error(c->name, "%s takes no value", opt);
        return CLI_USAGE;
    }
    if (o->kind == CLI_K_UNTIL) {
        int j = *i + 1, from = j;
        while (j < argc && strcmp(argv[j], "--"))
            j++;
        if (v || j == from || j >= argc) {
            cli_error(c->name, "%s wants %s and then '--'", opt, o->arg);
            return CLI_USAGE;
        }
        for (int k = from; k < j; k++)
            if (add_copy(c, o->dst, argv[k]))
                return CLI_FAIL;
        *i = j;
        return 0;
    }
    if (o->arg && !v) {
        if (*i + 1 >= argc) {
            cli_error(c->name, "%s needs a value (%s)", opt, o->arg);
            return CLI_USAGE;
        }
        v = argv[++*i];
    }
    switch (o->kind) {
    case CLI_K_FLAG:
        *(int *)o->dst = neg ? !o->set : o->set;
        return 0;
    case CLI_K_INT:
    case CLI_K_U64:
        return get_integer(c, o, opt, v);
    case CLI_K_NUM:
        return get_number(c, o, opt, v);
    case CLI_K_STR:
        *(const char **)o->dst = v;
        return 0;
    case CLI_K_REGEX:
        return get_regex(c, o, opt, v);
    case CLI_K_LIST:
        return add_copy(c, o->dst, v);
    case CLI_K_CHOICE:
        return get_choice(c, o, opt, v);
    case CLI_K_CALL:
        return o->fn(o->dst, c->name, opt, v);
    default:
        return CLI_FAIL; /* CLI_K_END and CLI_K_UNTIL never come here */
    }
}

int cli_parse(const cli_cmd *c, int argc, char **argv)
{
    unsigned char given[MAX_OPTS] = {0};
    const cli_opt *tail = NULL;
    int nargs = 0, opts_done = 0, nopts = 0;
    while (c->opts[nopts].kind != CLI_K_END)
        nopts++;
    assert(nopts <= MAX_OPTS);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!opts_done && (!strcmp(a, "-h") || !strcmp(a, "--help"))) {
            cli_help(c, stdout);
            return CLI_HELP;
        }
        if (!opts_done && !strcmp(a, "--")) {
            opts_done = 1;
            continue;
        }
        int neg = 0;
        const char *v = NULL;
        const cli_opt *o = opts_done ? NULL : find_opt(c, a, &neg, &v);
        if (o) {
            char opt[128];
            if (a[1] == '-')
                snprintf(opt, sizeof opt, "--%s%s", neg ? "no-" : "", o->name);
            else
                snprintf(opt, sizeof opt, "-%c", o->letter);
            int r = take(c, o, opt, neg, v, argc, argv, &i);
            if (r)
                return r;
            given[o - c->opts] = 1;
            if (o->flags & CLI_TAIL)
                tail = o;
            continue;
        }
        if (!opts_done && a[0] == '-' && a[1]) {
            cli_error(c->name, "unknown option '%s' ('teller %s --help' lists them)", a, c->name);
            return CLI_USAGE;
        }
        if (tail) {
            if (add_copy(c, tail->dst, a))
                return CLI_FAIL;
            continue;
        }
        if (c->arg) {
            int r = c->arg(c->ctx, a);
            if (r)
                return r;
        }
        argv[1 + nargs++] = argv[i];
        if (c->stop)
            opts_done = 1;
    }
    for (const cli_opt *o = c->opts; o->kind != CLI_K_END; o++)
        if ((o->flags & CLI_REQUIRED) && !given[o - c->opts]) {
            if (o->name)
                cli_error(c->name, "--%s %s is required", o->name, o->arg);
            else
                cli_error(c->name, "-%c %s is required", o->letter, o->arg);
            return CLI_USAGE;
        }
    if (nargs < c->min_args) {
        cli_error(c->name, "%s", c->missing);
        put_usage(c, stderr);
        return CLI_USAGE;
    }
    if (c->max_args >= 0 && nargs > c->max_args) {
        cli_error(c->name, "unexpected argument '%s'", argv[1 + c->max_args]);
        put_usage(c, stderr);
        return CLI_USAGE;
    }
    return nargs;
}

/* ---- shared option values ---- */

int cli_faults(void *dst, const char *cmd, const char *opt, const char *value)
{
    uint32_t faults = 0;
    char *copy = strdup(value), *save = NULL;
    if (!copy) {
        cli_error(cmd, "out of memory");
        return CLI_FAIL;
    }
    for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (!strcmp(tok, "all")) {
            faults |= ((1u << TELLER_FAULT_COUNT) - 1) & ~1u;
            continue;
        }
        teller_fault f = teller_fault_parse(tok);
        if (f == TELLER_FAULT_COUNT) {
            cli_error(cmd, "%s: unknown fault kind '%s' (see --help)", opt, tok);
            free(copy);
            return CLI_USAGE;
        }
        faults |= 1u << f;
    }
    free(copy);
    *(uint32_t *)dst = faults;
    return 0;
}

const char *cli_fault_kinds(void)
{
    static char text[1024];
    if (text[0])
        return text;
    size_t n = (size_t)snprintf(text, sizeof text, "Fault kinds:");
    int col = (int)n;
    for (int f = 1; f < TELLER_FAULT_COUNT && n < sizeof text; f++) {
        const char *name = teller_fault_name((teller_fault)f);
        int wrap = col + 1 + (int)strlen(name) > 78;
        int w = snprintf(text + n, sizeof text - n, "%s%s", wrap ? "\n  " : " ", name);
        n += (size_t)w;
        col = wrap ? w - 1 : col + w;
    }
    return text;
}
