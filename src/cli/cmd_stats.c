/*
 * cmd_stats.c - `teller stats [--json] TRACE...`: what was loaded, how much
 * of it is linked, steps and collectives, by layer.
 */

#include "cli.h"

static int count_ranks(const teller_store *st)
{
    size_t n = teller_store_num_sources(st);
    int c = 0;
    for (size_t i = 0; i < n; i++) {
        int dup = 0;
        for (size_t j = 0; j < i && !dup; j++)
            dup = teller_store_source_c(st, (uint32_t)j)->rank == teller_store_source_c(st, (uint32_t)i)->rank;
        c += !dup;
    }
    return c;
}

int cmd_stats(int argc, char **argv)
{
    cli_load_opts o = cli_load_defaults();
    int json = 0;
    const cli_opt opts[] = {
        CLI_BOOL(0, "json", &json, "one JSON object instead of the table"),
        CLI_LOAD_OPTS(&o),
        CLI_END,
    };
    const cli_cmd cmd = {
        .name = "stats",
        .usage = "[options] TRACE_OR_CASE...",
        .about = "What a trace holds: events, links, steps, collectives, layers, clock offsets.",
        .opts = opts,
        CLI_TRACES,
    };
    int status;
    teller_store *st = cli_parse_load(&cmd, &o, argc, argv, &status);
    if (!st)
        return status;
    teller_tree_stats s;
    teller_tree_stats_get(st, &s);
    size_t ncoll = teller_store_num_collectives(st), matched = 0;
    const teller_collective *co = teller_store_collectives(st);
    const teller_coll_member *mem = teller_store_coll_members(st);
    for (size_t c = 0; c < ncoll; c++) {
        int multi = 0;
        for (uint32_t m = 1; m < co[c].num_members && !multi; m++)
            multi = mem[co[c].first_member + m].rank != mem[co[c].first_member].rank;
        matched += (size_t)multi;
    }
    int ranks = count_ranks(st);
    if (json) {
        printf("{\"events\": %llu, \"kernels\": %llu, \"kernels_linked\": %llu, \"gpu_ops\": %llu, "
               "\"gpu_ops_linked\": %llu, \"ranks\": %d, \"nodes\": %zu, \"steps\": %u, \"comm_kernels\": %llu, "
               "\"collectives\": %zu, \"collective_instances\": %zu, \"graph_launches\": %llu, "
               "\"max_graph_fanout\": %llu, \"max_depth\": %u, \"warnings\": %llu, \"string_bytes\": %zu, "
               "\"profiler_records\": %llu, \"profiler_ns\": %lld, \"by_layer\": {",
               (unsigned long long)s.events, (unsigned long long)s.kernels, (unsigned long long)s.kernels_linked,
               (unsigned long long)s.gpu_ops, (unsigned long long)s.gpu_ops_linked, ranks,
               teller_store_num_nodes(st), teller_store_step_count(st), (unsigned long long)s.comm_kernels, matched,
               ncoll, (unsigned long long)s.graph_launches, (unsigned long long)s.max_graph_fanout, s.max_depth,
               (unsigned long long)teller_store_num_warnings(st), teller_store_str_bytes(st),
               (unsigned long long)s.profiler, (long long)s.profiler_ns);
        for (int l = 0; l < TELLER_LAYER_COUNT; l++)
            printf("%s\"%s\": %llu", l ? ", " : "", teller_layer_name((teller_layer)l),
                   (unsigned long long)s.by_layer[l]);
        printf("}, \"clock_offsets_ns\": {");
        const teller_node *nodes = teller_store_nodes(st);
        for (size_t k = 0; k < teller_store_num_nodes(st); k++)
            printf("%s\"%d\": %lld", k ? ", " : "", nodes[k].node, (long long)nodes[k].offset_ns);
        printf("}}\n");
    } else {
        printf("events            %llu\n", (unsigned long long)s.events);
        printf("ranks             %d on %zu node(s)\n", ranks, teller_store_num_nodes(st));
        printf("steps             %u\n", teller_store_step_count(st));
        printf("kernels           %llu (%llu linked to their launch)\n", (unsigned long long)s.kernels,
               (unsigned long long)s.kernels_linked);
        printf("gpu ops           %llu (%llu linked)\n", (unsigned long long)s.gpu_ops,
               (unsigned long long)s.gpu_ops_linked);
        printf("comm kernels      %llu\n", (unsigned long long)s.comm_kernels);
        printf("collectives       %zu matched across ranks, %zu instances\n", matched, ncoll);
        printf("graph launches    %llu (largest fans out to %llu GPU ops)\n", (unsigned long long)s.graph_launches,
               (unsigned long long)s.max_graph_fanout);
        printf("max depth         %u\n", s.max_depth);
        if (s.profiler)
            printf("profiler's work   %llu records, %.3f ms (CUPTI's buffer requests and flushes, its "
                   "instrumentation: not the program's)\n",
                   (unsigned long long)s.profiler, (double)s.profiler_ns / 1e6);
        printf("by layer         ");
        for (int l = 0; l < TELLER_LAYER_COUNT; l++)
            if (s.by_layer[l])
                printf(" %s=%llu", teller_layer_name((teller_layer)l), (unsigned long long)s.by_layer[l]);
        printf("\n");
        const teller_node *nodes = teller_store_nodes(st);
        for (size_t k = 1; k < teller_store_num_nodes(st); k++)
            printf("node %d clock     %+.3f us against node %d (%u collectives)\n", nodes[k].node,
                   (double)nodes[k].offset_ns / 1e3, nodes[0].node, nodes[k].offset_samples);
        if (teller_store_num_warnings(st))
            printf("warnings          %llu\n", (unsigned long long)teller_store_num_warnings(st));
    }
    teller_store_free(st);
    return 0;
}
