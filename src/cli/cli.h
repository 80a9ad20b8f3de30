/*
 * cli.h - what the subcommands of the `teller` program share: one
 * table-driven option parser, loading the traces a user names (files, or
 * case directories holding them), and safe printing of names that come
 * from traces.
 *
 * Exit statuses, for every command: 0 done; 1 an input error (a file
 * unreadable, malformed or not writable); 2 a usage error (an unknown
 * option, a missing or bad value, a missing argument).
 */
#ifndef TELLER_CLI_H
#define TELLER_CLI_H

#include <stdint.h>
#include <stdio.h>

#include "teller/ingest.h"
#include "teller/load.h"
#include "teller/store.h"
#include "teller/tree.h"

/* ---- options: one table per command ----
 *
 * Every command declares its options once, as an array of cli_opt ended by
 * CLI_END, and its synopsis and bare arguments in a cli_cmd; cli_parse
 * reads argv by it, and its errors and the --help text all come from it
 * (after git's parse-options). Its errors are usage errors, "teller CMD:
 * what". A value is never cast: a number past its bounds (or an int's) is
 * an error naming the option, the bounds and the value. */

typedef enum cli_kind {
    CLI_K_END = 0,
    CLI_K_FLAG,   /* no value: *(int *)dst = set */
    CLI_K_INT,    /* an integer in [lo, hi] (within an int's range) into *(int *)dst */
    CLI_K_U64,    /* a whole number in [lo, hi] into *(uint64_t *)dst */
    CLI_K_NUM,    /* a number in [lo, hi] (above lo with CLI_ABOVE) into *(double *)dst */
    CLI_K_STR,    /* the value into *(const char **)dst: it points into argv */
    CLI_K_REGEX,  /* the same, once it compiles as a POSIX extended regex */
    CLI_K_LIST,   /* repeatable: each value copied onto the list *(cli_strs *)dst */
    CLI_K_UNTIL,  /* the arguments up to a "--" copied onto the list *(cli_strs *)dst */
    CLI_K_CHOICE, /* one of the words of choices (NULL-ended): its index into *(int *)dst, or
                   * with CLI_OR, 1 << its index added to the bits *(int *)dst */
    CLI_K_CALL    /* fn(dst, command, option, value) does the work */
} cli_kind;

/* cli_opt.flags */
enum {
    CLI_REQUIRED = 1, /* an option with a value: a usage error when not given */
    CLI_NEG = 2,      /* CLI_K_FLAG: --no-NAME stores !set */
    CLI_TAIL = 4,     /* CLI_K_LIST: the bare arguments after it go to the list too */
    CLI_ABOVE = 8,    /* CLI_K_NUM: lo itself is out */
    CLI_OR = 16       /* CLI_K_CHOICE: repeatable, each word a bit */
};

/* What parsing ends in when it does not go on (cli_parse's negative results). */
enum { CLI_HELP = -1, CLI_USAGE = -2, CLI_FAIL = -3 };

/* A list of strings that it owns (cli_strs_add copies). */
typedef struct cli_strs {
    char **v;
    size_t n;
} cli_strs;

/* A CLI_K_CALL option's work on its value (NULL for an option that takes
 * none): 0, or CLI_USAGE / CLI_FAIL with the message printed. */
typedef int (*cli_fn)(void *dst, const char *cmd, const char *opt, const char *value);

typedef struct cli_opt {
    cli_kind           kind;
    char               letter;  /* -x, or 0 */
    const char        *name;    /* --name, or NULL */
    const char        *arg;     /* the value's name in the help ("N", "FILE"); NULL: takes none */
    const char        *help;    /* the help text ('\n' starts another line) */
    void              *dst;
    double             lo, hi;  /* CLI_K_INT, CLI_K_U64, CLI_K_NUM */
    int                set;     /* CLI_K_FLAG */
    int                flags;
    const char *const *choices; /* CLI_K_CHOICE */
    cli_fn             fn;      /* CLI_K_CALL */
} cli_opt;

#define CLI_FLAG(l, n, d, s, fl, h) \
    {.kind = CLI_K_FLAG, .letter = (l), .name = (n), .dst = (d), .set = (s), .flags = (fl), .help = (h)}
#define CLI_BOOL(l, n, d, h) CLI_FLAG(l, n, d, 1, 0, h)
#define CLI_INT(l, n, d, a, lo_, hi_, h) \
    {.kind = CLI_K_INT, .letter = (l), .name = (n), .dst = (d), .arg = (a), .lo = (lo_), .hi = (hi_), .help = (h)}
#define CLI_U64(l, n, d, a, lo_, hi_, h) \
    {.kind = CLI_K_U64, .letter = (l), .name = (n), .dst = (d), .arg = (a), .lo = (lo_), .hi = (hi_), .help = (h)}
#define CLI_NUM(l, n, d, a, lo_, hi_, fl, h)                                                                          \
    {.kind = CLI_K_NUM, .letter = (l), .name = (n), .dst = (d), .arg = (a), .lo = (lo_), .hi = (hi_), .flags = (fl), \
     .help = (h)}
#define CLI_STR(l, n, d, a, fl, h) \
    {.kind = CLI_K_STR, .letter = (l), .name = (n), .dst = (d), .arg = (a), .flags = (fl), .help = (h)}
#define CLI_REGEX(l, n, d, a, h) {.kind = CLI_K_REGEX, .letter = (l), .name = (n), .dst = (d), .arg = (a), .help = (h)}
#define CLI_LIST(l, n, d, a, fl, h) \
    {.kind = CLI_K_LIST, .letter = (l), .name = (n), .dst = (d), .arg = (a), .flags = (fl), .help = (h)}
#define CLI_UNTIL(l, n, d, a, h) {.kind = CLI_K_UNTIL, .letter = (l), .name = (n), .dst = (d), .arg = (a), .help = (h)}
#define CLI_CHOICE(l, n, d, c, a, fl, h)                                                                          \
    {.kind = CLI_K_CHOICE, .letter = (l), .name = (n), .dst = (d), .choices = (c), .arg = (a), .flags = (fl), \
     .help = (h)}
#define CLI_CALL(l, n, f, d, a, h) \
    {.kind = CLI_K_CALL, .letter = (l), .name = (n), .fn = (f), .dst = (d), .arg = (a), .help = (h)}
#define CLI_END {.kind = CLI_K_END}

/* A command: what its help says, its options, its bare arguments. */
typedef struct cli_cmd {
    const char    *name;     /* "stats", "tpe train": in messages and the help */
    const char    *usage;    /* the synopsis after "teller NAME ", one form a line */
    const char    *about;    /* what the command does */
    const char    *args;     /* the bare arguments explained, or NULL */
    const char    *more;     /* a closing paragraph, or NULL */
    const cli_opt *opts;
    int            min_args; /* fewer bare arguments is a usage error ... */
    const char    *missing;  /* ... that says this ("no trace given") */
    int            max_args; /* more is one too; -1: any number */
    int            stop;     /* the first bare argument ends the options (teller run's command) */
    /* Called with each bare argument in order (not those a CLI_TAIL list
     * takes), beside the options' own work: 0, or CLI_USAGE / CLI_FAIL with
     * the message printed. NULL: none. */
    int (*arg)(void *ctx, const char *a);
    void *ctx;
} cli_cmd;

/* Parses argv[1..argc) (argv[0] is the command's name) by cmd. Options
 * come anywhere before a "--", as -x VALUE, --name VALUE or --name=VALUE;
 * -h and --help print the help. Returns the number of bare arguments, moved
 * to argv[1..] in their order; or CLI_HELP (the help is on stdout),
 * CLI_USAGE (a usage error was printed) or CLI_FAIL (an error was
 * printed). */
int cli_parse(const cli_cmd *cmd, int argc, char **argv);
/* The exit status for a negative cli_parse result: 0, 2 or 1. */
int cli_parse_exit(int r);
/* Prints cmd's help to f: "Usage:" lines, what it does, its arguments,
 * one line per option (help2man reads this layout). */
void cli_help(const cli_cmd *cmd, FILE *f);
/* Prints "teller CMD: " and the message on stderr, then a newline. */
void cli_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Appends a copy of s; -1 when out of memory. */
int cli_strs_add(cli_strs *l, const char *s);
/* Frees the strings and the list; the list is empty after. */
void cli_strs_free(cli_strs *l);
/* Appends the .log files under DIR/logs of a case directory, sorted by
 * name; a directory without logs/ adds none. -1 when out of memory. */
int cli_case_logs(const char *dir, cli_strs *l);
/* cli_cmd.arg of the commands whose case directories bring their logs: a
 * bare argument that is a directory adds its logs (cli_case_logs) to the
 * cli_strs logs. */
int cli_arg_case_logs(void *logs, const char *a);

/* CLI_K_CALL for --fault: a comma-separated list of fault kinds or "all"
 * (every kind but the first, "none") into the bit set *(uint32_t *)dst
 * (1 << teller_fault per kind). */
int cli_faults(void *dst, const char *cmd, const char *opt, const char *value);
/* "Fault kinds: ..." (teller_fault_name of each but "none"), wrapped, for
 * the help of the commands that take --fault. */
const char *cli_fault_kinds(void);

/* Can path be written, as far as its directory says: 0, or -1 with
 * "teller: PATH: cannot write: why" printed. A command checks its outputs
 * before the work, not after it. */
int cli_can_write(const char *path);
/* fopen(path, "w"), saying why not ("teller: PATH: cannot write: why")
 * when it fails. */
FILE *cli_open_out(const char *path);
/* Closes f, opened by cli_open_out: 0, or -1 when a write or the close
 * failed, said as cli_open_out says it. */
int cli_close_out(FILE *f, const char *path);

/* A directory of the command's own (a scratch directory) created: 0, or
 * -1 with "teller CMD: DIR: cannot create: why" printed. An existing
 * directory is fine. */
int cli_make_dir(const char *cmd, const char *dir);
/* Removes the directory and everything under it (links are removed, not
 * followed): 0, or -1 when something could not be removed. */
int cli_rm_rf(const char *path);

/* The root-cause model that judges the steps (model.h): path's, else the
 * built-in one (NULL when there is none); NULL with none (--no-model). 0,
 * or -1 with why said. */
struct teller_model;
int cli_load_model(const char *path, int none, struct teller_model **out);

/* ---- loading traces ---- */

/* Options every trace-reading command accepts. */
typedef struct cli_load_opts {
    teller_load_opts load;  /* --step-pattern, --gpus-per-node, --jobs, --force, --skip-python */
    int              quiet; /* no warning summary on stderr */
} cli_load_opts;

/* Defaults: everything kept, every core, no --force. */
cli_load_opts cli_load_defaults(void);

/* The table rows of the options every trace-reading command accepts, into
 * the cli_load_opts *o. */
#define CLI_LOAD_OPTS(o)                                                                                          \
    CLI_REGEX(0, "step-pattern", &(o)->load.tree.step_pattern, "REGEX",                                        \
              "step markers (POSIX extended regex on annotation names)"),                                      \
        CLI_INT(0, "gpus-per-node", &(o)->load.tree.gpus_per_node, "N", 1, 1 << 20,                             \
                "node = rank / N (default: from the trace)"),                                                  \
        CLI_BOOL(0, "skip-python", &(o)->load.ingest.skip_python, "do not load python_function events"),       \
        CLI_INT('j', "jobs", &(o)->load.jobs, "N", 1, 1024,                                                     \
                "threads for reading, trees and analysis (default: every core)"),                              \
        CLI_BOOL(0, "force", &(o)->load.force, "load inputs that cannot be one run anyway"),                   \
        CLI_BOOL('q', "quiet", &(o)->quiet, "no warning summary")

/* cli_cmd.args of a command whose bare arguments are one run's traces. */
#define CLI_TRACE_ARGS                                                                          \
    "  TRACE_OR_CASE...  trace files (Kineto JSON .json or .json.gz, Nsight Systems SQLite\n" \
    "                    export, .tlt) or directories of them (also under traces/): one run"
/* The cli_cmd fields of such a command: one trace or more. */
#define CLI_TRACES .args = CLI_TRACE_ARGS, .min_args = 1, .missing = "no trace given", .max_args = -1

/* Loads every path as one run (teller_load_expand, then teller_load: a
 * directory loads its *.json, *.json.gz, *.sqlite and *.tlt files, also
 * under a traces/ subdirectory; a directory without any says which of its
 * subdirectories hold some; inputs that cannot be one run are refused
 * unless --force), trees built. Prints errors as "teller: FILE:OFFSET:
 * what" and the first warnings. Returns the store or NULL. */
teller_store *cli_load(const cli_load_opts *o, char **paths, int npaths);
/* cli_parse by cmd, then cli_load of its bare arguments with o (which
 * cmd's table fills): the store, or NULL with *status the command's exit
 * status (0 after --help). */
teller_store *cli_parse_load(const cli_cmd *cmd, const cli_load_opts *o, int argc, char **argv, int *status);
/* The teller_load that cli_load calls: teller_load itself, unless a
 * program around the subcommands reads the files some other way (teller-mpi
 * sets its own, src/mpi/teller_mpi.c). */
extern teller_status (*cli_loader)(teller_store *st, const char *const *files, size_t n, const teller_load_opts *opts,
                                   teller_error *err);

/* Prints a trace-provided string with control characters escaped (C0 and
 * DEL as \xNN; C1 controls, line separators and bidirectional overrides as
 * \uNNNN), so that a hostile kernel name cannot drive the terminal or
 * reorder what it shows. */
void cli_put_text(FILE *f, const char *s);

/* Subcommands. */
int cmd_stats(int argc, char **argv);
int cmd_tree(int argc, char **argv);
int cmd_steps(int argc, char **argv);
int cmd_logs(int argc, char **argv);
int cmd_watch(int argc, char **argv);
int cmd_simulate(int argc, char **argv);
int cmd_perturb(int argc, char **argv);
int cmd_eval(int argc, char **argv);
int cmd_baseline(int argc, char **argv);
int cmd_diagnose(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_replay(int argc, char **argv);
int cmd_requests(int argc, char **argv);
int cmd_tpe(int argc, char **argv);
int cmd_slice(int argc, char **argv);
int cmd_train(int argc, char **argv);
int cmd_calibrate(int argc, char **argv);
int cmd_diff(int argc, char **argv);

#endif
