/*
 * check.h - the test harness: named tests, CHECK macros that report file
 * and line and keep going, and a closing "N passed, N failed" line.
 */
#ifndef TELLER_TEST_CHECK_H
#define TELLER_TEST_CHECK_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

extern int check_failures; /* failures in the current test */

#define CHECK(cond)                                                          \
    do {                                                                     \
        if (!(cond)) {                                                       \
            fprintf(stderr, "  %s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
            check_failures++;                                                \
        }                                                                    \
    } while (0)

#define CHECK_EQ_INT(a, b)                                                   \
    do {                                                                     \
        long long va_ = (long long)(a), vb_ = (long long)(b);                \
        if (va_ != vb_) {                                                    \
            fprintf(stderr, "  %s:%d: CHECK failed: %s == %s (%lld vs %lld)\n", __FILE__, __LINE__, #a, #b, va_, vb_); \
            check_failures++;                                                \
        }                                                                    \
    } while (0)

typedef struct test_case {
    const char *name;
    void (*fn)(void);
} test_case;

/* Each test file defines one table, terminated by {NULL, NULL}. */
extern const test_case json_tests[];
extern const test_case kineto_tests[];
extern const test_case real_trace_tests[];
extern const test_case logs_tests[];
extern const test_case sim_tests[];
extern const test_case diagnose_tests[];
extern const test_case diagnose_mode_tests[];
extern const test_case check_tests[];
extern const test_case cli_tests[];
extern const test_case nsys_tests[];
extern const test_case requests_tests[];
extern const test_case collect_tests[]; /* empty without the CUPTI headers */
extern const test_case report_tests[];
extern const test_case tpe_tests[];
extern const test_case perturb_tests[];
extern const test_case load_tests[];
extern const test_case util_tests[];
extern const test_case model_tests[];
extern const test_case mpi_tests[];
extern const test_case commfam_tests[];
extern const test_case run_tests[];
extern const test_case diff_tests[];
extern const test_case watch_tests[];
extern const test_case metrics_tests[];
extern const test_case replay_tests[];

/* Loads DIR/rank<from>..rank<to-1>.trace.json.gz (a simulated case) and
 * builds trees, CHECKing every step. */
struct teller_store;
struct teller_store *load_case_ranks(const char *dir, int from, int to);

/* Runs `teller ARGS 2>&1` (the program built beside the tests); returns
 * its exit status, its output in out (cap bytes, NUL-terminated). */
int run_cli(const char *args, char *out, size_t cap);
/* Runs `CMD 2>&1` with sh: its exit status (-1 when it did not run), its
 * output in out (cap bytes, NUL-terminated). */
int run_shell(const char *cmd, char *out, size_t cap);

/* Path of a file under ../shared/data/traces (static buffer). */
const char *shared_path(const char *rel);

/* Makes dir (a mkdtemp template) and simulates the case o into it,
 * CHECKing both. */
struct teller_sim_opts;
void sim_case(char *dir, const struct teller_sim_opts *o);
/* A simulated run's shape: nodes x gpus GPUs, tp x pp parallel, steps,
 * seed; the simulator's defaults else. */
struct teller_sim_opts sim_shape(int nodes, int gpus, int tp, int pp, int steps, uint64_t seed);
/* sim_case for a case of nodes x gpus ranks (tensor parallel inside a
 * node, pipeline across nodes) in which 30 % of the steps carry a fault of
 * any kind (nccl_hang only when hangs is 1). */
void sim_faulty(char *dir, int nodes, int gpus, int steps, uint64_t seed, int hangs);
/* Makes dir (a mkdtemp template) and simulates a healthy run into it:
 * nodes x gpus GPUs, tp x pp parallel, steps steps, the seed. */
void sim_healthy(char *dir, int nodes, int gpus, int tp, int pp, int steps, uint64_t seed);

/* The logs of the first nodes of a simulated case, DIR/logs/node0.log,
 * node1.log, ... (NODE_LOGS of them): node_logs_of fills l and returns its
 * list, which lives as long as l. */
#define NODE_LOGS 8
typedef struct node_logs {
    char        path[NODE_LOGS][4200];
    const char *v[NODE_LOGS];
} node_logs;
const char **node_logs_of(node_logs *l, const char *dir);

/* The predictions JSON of teller_diagnose(st, o) followed by its candidates
 * JSON, in a malloc'd string (NULL when the diagnosis failed, CHECKed). */
struct teller_diag_opts;
char *diagnosis_json(struct teller_store *st, const struct teller_diag_opts *o);

/* How many of d's steps are flagged abnormal (0 for NULL). */
struct teller_diagnosis;
int flagged(const struct teller_diagnosis *d);

/* The fault kind of step k's first candidate, what its detectors found
 * whether or not the step is flagged ("" when it has none or k is out of
 * range), and its operator's name (teller_store_str lifetime). */
const char *top_kind(const struct teller_diagnosis *d, size_t k);
const char *top_op(const struct teller_store *st, const struct teller_diagnosis *d, size_t k);
/* The cost its detector found for step k's first candidate, 0 without one. */
double top_cost(const struct teller_diagnosis *d, size_t k);

/* 1 when two stores hold the same strings, sources, events (every column),
 * args, comm rows, derived tables and warnings. */
struct teller_store;
int same_store(const struct teller_store *a, const struct teller_store *b);

/* The whole of a file in a malloc'd buffer (NUL after its n bytes), or NULL
 * when it cannot be read. */
char *read_file(const char *path, size_t *n);

/* Removes a test's directory and all under it (rm -rf), CHECKing that it went. */
void rm_rf(const char *dir);

#endif
