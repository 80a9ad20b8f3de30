/*
 * cli.h - what the subcommands of the `teller` program share: loading the
 * traces a user names (files, or case directories holding them), common
 * options, and safe printing of names that come from traces.
 */
#ifndef TELLER_CLI_H
#define TELLER_CLI_H

#include <stdint.h>
#include <stdio.h>

#include "teller/ingest.h"
#include "teller/load.h"
#include "teller/store.h"
#include "teller/tree.h"

/* Options every trace-reading command accepts. */
typedef struct cli_load_opts {
    teller_load_opts load;  /* --step-pattern, --gpus-per-node, --jobs, --force, --skip-python */
    int              quiet; /* no warning summary on stderr */
} cli_load_opts;

/* Defaults: everything kept, every core, no --force. */
cli_load_opts cli_load_defaults(void);

/* Tries to consume a common option at argv[*i] (advancing *i past its
 * value). Returns 1 if consumed, 0 if not a common option, -1 on error
 * (message printed). */
int cli_common_opt(cli_load_opts *o, int argc, char **argv, int *i);

/* Loads every path as one run (teller_load_expand, then teller_load: a
 * directory loads its *.json, *.json.gz, *.sqlite and *.tlt files, also
 * under a traces/ subdirectory; inputs that cannot be one run are refused
 * unless --force), trees built. Prints errors as "teller: FILE:OFFSET:
 * what" and the first warnings. Returns the store or NULL. */
teller_store *cli_load(const cli_load_opts *o, char **paths, int npaths);
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

/* Parses the value v of option opt of command cmd as a number in [lo, hi]
 * (an integer when integral is set) into *out. 0 on success; -1, with a
 * message naming the command, option and value, on anything else. */
int cli_number(const char *cmd, const char *opt, const char *v, double lo, double hi, int integral, double *out);

/* Parses the value v of --fault of command cmd, a comma-separated list of
 * fault kinds or "all" (every kind but the first, "none"), into the bit set
 * *out (1 << teller_fault per kind). 0 on success; -1 on an unknown kind
 * (message naming the command and the kind) or when out of memory. */
int cli_faults(const char *cmd, const char *v, uint32_t *out);

/* Appends a copy of s to the string list *v (*n strings); -1 when out of memory. */
int cli_add_str(char ***v, size_t *n, const char *s);
/* Frees a string list of cli_add_str: its n strings and the list itself. */
void cli_free_strs(char **v, size_t n);
/* Appends the .log files under DIR/logs of a case directory to the list (cli_add_str). */
void cli_case_logs(const char *dir, char ***v, size_t *n);

/* Subcommands. */
int cmd_stats(int argc, char **argv);
int cmd_tree(int argc, char **argv);
int cmd_steps(int argc, char **argv);
int cmd_logs(int argc, char **argv);
int cmd_simulate(int argc, char **argv);
int cmd_perturb(int argc, char **argv);
int cmd_eval(int argc, char **argv);
int cmd_baseline(int argc, char **argv);
int cmd_diagnose(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_requests(int argc, char **argv);
int cmd_tpe(int argc, char **argv);
int cmd_slice(int argc, char **argv);
int cmd_train(int argc, char **argv);

#define CLI_COMMON_HELP                                                                 \
    "  --step-pattern REGEX  step markers (POSIX extended regex on annotation names)\n" \
    "  --gpus-per-node N     node = rank / N (default: from the trace)\n"               \
    "  --skip-python         do not load python_function events\n"                      \
    "  -j, --jobs N          threads for reading, trees and analysis (default: every core)\n" \
    "  --force               load inputs that cannot be one run anyway\n"              \
    "  -q, --quiet           no warning summary\n"

#endif
