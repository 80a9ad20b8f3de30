/*
 * cmd_simulate.c - `teller simulate -o DIR [options]`: one simulated case,
 * or a corpus of cases with --corpus N.
 */

#include "cli.h"
#include "teller/sim.h"

int cmd_simulate(int argc, char **argv)
{
    teller_sim_opts o = teller_sim_defaults();
    const char *out = NULL;
    int corpus = 0, nodes = 0, gpus = 0, tp = 0, pp = 0, dp = 0; /* 0: not given */
    const int most = 2147483647;
    const cli_opt opts[] = {
        CLI_STR('o', NULL, &out, "DIR", CLI_REQUIRED, "the case directory (or the corpus's, with --corpus)"),
        CLI_INT(0, "nodes", &nodes, "N", 1, most, "nodes (topology: tp x pp x dp = nodes x gpus-per-node)"),
        CLI_INT(0, "gpus-per-node", &gpus, "G", 1, most, "GPUs per node"),
        CLI_INT(0, "tp", &tp, "T", 1, most, "tensor-parallel size (default: a node's GPUs)"),
        CLI_INT(0, "pp", &pp, "P", 1, most, "pipeline-parallel size (default: the nodes a replica spans)"),
        CLI_INT(0, "dp", &dp, "D", 1, most,
                "data-parallel replicas, each its own tp x pp group, requests\n"
                "spread over them (default 1)"),
        CLI_INT(0, "steps", &o.steps, "N", 1, most, "engine steps (default 60)"),
        CLI_STR(0, "model", &o.model, "8b|70b|moe", 0, "model preset"),
        CLI_STR(0, "engine", &o.engine, "vllm|sglang", 0, "log formats and step annotations"),
        CLI_CALL(0, "fault", cli_faults, &o.faults, "KIND[,KIND...]", "fault kinds to inject (all: every kind)"),
        CLI_NUM(0, "fault-rate", &o.fault_rate, "P", 0, 1, 0, "share of faulty steps (default 0.3)"),
        CLI_NUM(0, "severity", &o.severity, "S", 0, 1e6, CLI_ABOVE, "scales fault magnitudes (default 1)"),
        CLI_U64(0, "seed", &o.seed, "N", 0, 9007199254740992.0, "same seed, same bytes"),
        CLI_INT(0, "corpus", &corpus, "N", 0, most, "write N cases DIR/case_0000... with a seeded workload mix (the topology too, unless given)"),
        CLI_BOOL(0, "log-capture", &o.log_capture,
                 "log lines as `teller run` captures them: epoch ns, a space,\n"
                 "the line (default: the engines' lines alone)"),
        CLI_BOOL(0, "hang-abort-comm", &o.hang_abort_comm,
                 "nccl_hang as TORCH_NCCL_ASYNC_ERROR_HANDLING=2 leaves it: the\n"
                 "waiting collectives are aborted, end and are recorded (default:\n"
                 "PyTorch's 3, the process is taken down and what still ran is lost)"),
        CLI_BOOL(0, "nccl-only", &o.nccl_only,
                 "every all-reduce through NCCL, as vLLM's --disable-custom-all-reduce\n"
                 "(default: the engine's custom all-reduce under 8 MiB, inside a node)"),
        CLI_END,
    };
    const cli_cmd cmd = {
        .name = "simulate",
        .usage = "-o DIR [options]",
        .about = "Writes a simulated multi-node case with injected faults and its truth, or a corpus of them.",
        .more = cli_fault_kinds(),
        .opts = opts,
        .max_args = 0,
    };
    int r = cli_parse(&cmd, argc, argv);
    if (r < 0)
        return cli_parse_exit(r);
    int topo_set = (nodes || gpus) | (tp ? 2 : 0) | (pp ? 4 : 0);
    if (nodes)
        o.nodes = nodes;
    if (gpus)
        o.gpus_per_node = gpus;
    if (tp)
        o.tp = tp;
    if (pp)
        o.pp = pp;
    if (dp)
        o.dp = dp;
    /* topology given without tp/pp: tensor parallel within a node, pipeline
     * across a replica's share of the nodes */
    if ((topo_set & 1) && !(topo_set & 6)) {
        o.tp = o.gpus_per_node;
        o.pp = o.nodes / o.dp > 0 ? o.nodes / o.dp : 1;
    } else if ((topo_set & 2) && !(topo_set & 4) && o.tp > 0) {
        long long pp_fit = (long long)o.nodes * o.gpus_per_node / o.tp / o.dp; /* too large: the check refuses it */
        o.pp = pp_fit > most ? most : (int)pp_fit;
    }
    teller_error err;
    teller_error_clear(&err);
    teller_status s = corpus ? teller_simulate_corpus(&o, topo_set != 0 || dp, corpus, out, &err)
                             : teller_simulate(&o, out, &err);
    if (s != TELLER_OK) {
        fprintf(stderr, "teller: %s: %s\n", err.file, err.msg);
        return s == TELLER_ERR_ARG ? 2 : 1;
    }
    return 0;
}
