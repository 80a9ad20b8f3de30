/*
 * cmd_tree.c - `teller tree [--rank R] [--step K] [--max-depth D] TRACE...`:
 * prints the call-chain trees of one step on one rank, depth first, GPU
 * work under the call that launched it.
 */

#include "cli.h"

/* Levels drawn by indentation; deeper ones say their depth instead (a
 * trace nested thousands deep would print a square of spaces). */
enum { INDENT_LEVELS = 64 };

static void print_one(const teller_store *st, uint32_t e, int depth, int64_t t0)
{
    const teller_events *ev = teller_store_events(st);
    int shown = depth < INDENT_LEVELS ? depth : INDENT_LEVELS;
    printf("%*s", shown * 2, "");
    if (depth > INDENT_LEVELS)
        printf("(depth %d) ", depth);
    printf("[%s] ", teller_layer_name((teller_layer)ev->layer[e]));
    cli_put_text(stdout, teller_store_str(st, ev->name[e]));
    printf("  %.3f us @%+.3f us", (double)ev->dur_ns[e] / 1e3, (double)(ev->start_ns[e] - t0) / 1e3);
    if (ev->flags[e] & TELLER_F_GPU)
        printf(" (device %d stream %d)", teller_event_pid(ev, e), teller_event_tid(ev, e));
    if (ev->flags[e] & TELLER_F_COMM)
        printf(" COMM");
    printf("\n");
}

/* The tree under root, depth first, down to max_depth (-1: all), walked
 * by its links rather than by recursion: a hostile trace nests deeper than
 * any stack. */
static void print_tree(const teller_store *st, uint32_t root, int max_depth, int64_t t0)
{
    const teller_events *ev = teller_store_events(st);
    uint32_t e = root;
    int depth = 0;
    for (;;) {
        print_one(st, e, depth, t0);
        if (ev->first_child[e] != TELLER_NONE && (max_depth < 0 || depth < max_depth)) {
            e = ev->first_child[e];
            depth++;
            continue;
        }
        while (e != root && ev->next_sibling[e] == TELLER_NONE) {
            e = ev->parent[e];
            depth--;
        }
        if (e == root)
            return;
        e = ev->next_sibling[e];
    }
}

int cmd_tree(int argc, char **argv)
{
    cli_load_opts o = cli_load_defaults();
    int rank = -1, step = 0, max_depth = -1;
    const cli_opt opts[] = {
        CLI_INT(0, "rank", &rank, "R", 0, 2147483647, "the rank (default: the first that has the step)"),
        CLI_INT(0, "step", &step, "K", 0, 2147483647, "the step (default 0)"),
        CLI_INT(0, "max-depth", &max_depth, "D", 0, 2147483647, "print D levels below each root (default: all)"),
        CLI_LOAD_OPTS(&o),
        CLI_END,
    };
    const cli_cmd cmd = {
        .name = "tree",
        .usage = "[--rank R] [--step K] [--max-depth D] [options] TRACE_OR_CASE...",
        .about = "The call-chain trees of one step on one rank, depth first, GPU work under the call that launched it.",
        .opts = opts,
        CLI_TRACES,
    };
    int status;
    teller_store *st = cli_parse_load(&cmd, &o, argc, argv, &status);
    if (!st)
        return status;
    const teller_step *steps = teller_store_steps(st);
    size_t ns = teller_store_num_steps(st);
    size_t row = ns;
    for (size_t k = 0; k < ns && row == ns; k++)
        if (steps[k].step == (uint32_t)step && (rank < 0 || steps[k].rank == rank))
            row = k;
    int has_rank = rank < 0;
    for (size_t q = 0; q < teller_store_num_sources(st) && !has_rank; q++)
        has_rank = teller_store_source_c(st, (uint32_t)q)->rank == rank;
    if (!has_rank) {
        fprintf(stderr, "teller tree: no rank %d in the trace; its ranks:", rank);
        for (size_t q = 0; q < teller_store_num_sources(st); q++)
            fprintf(stderr, " %d", teller_store_source_c(st, (uint32_t)q)->rank);
        fputc('\n', stderr);
        teller_store_free(st);
        return 1;
    }
    if (row == ns) {
        cli_error("tree", "no step %d%s in the trace (it has %u steps)", step,
                rank >= 0 ? " on that rank" : "", teller_store_step_count(st));
        teller_store_free(st);
        return 1;
    }
    int32_t r = steps[row].rank;
    printf("step %d, rank %d: %.3f us\n", step, r, (double)(steps[row].end_ns - steps[row].start_ns) / 1e3);
    const teller_events *ev = teller_store_events(st);
    for (size_t e = 0; e < ev->n; e++) {
        if (ev->parent[e] != TELLER_NONE || ev->step[e] != (uint32_t)step ||
            teller_store_event_rank(st, (uint32_t)e) != r || ev->layer[e] == TELLER_LAYER_OTHER)
            continue;
        print_tree(st, (uint32_t)e, max_depth, steps[row].start_ns);
    }
    teller_store_free(st);
    return 0;
}
