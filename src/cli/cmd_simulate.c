/*
 * cmd_simulate.c - `teller simulate -o DIR [options]`: one simulated case,
 * or a corpus of cases with --corpus N.
 */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "teller/sim.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: teller simulate -o DIR [options]\n"
               "  --nodes N --gpus-per-node G --tp T --pp P   topology (tp x pp = nodes x G)\n"
               "  --steps N                 engine steps (default 60)\n"
               "  --model 8b|70b|moe        model preset\n"
               "  --engine vllm|sglang      log formats and step annotations\n"
               "  --fault KIND[,KIND...]    fault kinds to inject (all: every kind)\n"
               "  --fault-rate P            share of faulty steps (default 0.3)\n"
               "  --severity S              scales fault magnitudes (default 1)\n"
               "  --seed N                  same seed, same bytes\n"
               "  --corpus N                write N cases DIR/case_0000... with a seeded workload mix\n"
               "  --log-capture             log lines as `teller run` captures them: epoch ns, a space,\n"
               "                            the line (default: the engines' lines alone)\n"
               "  --hang-abort-comm         nccl_hang as TORCH_NCCL_ASYNC_ERROR_HANDLING=2 leaves it: the\n"
               "                            waiting collectives are aborted, end and are recorded (default:\n"
               "                            PyTorch's 3, the process is taken down and what still ran is lost)\n"
               "fault kinds: slow_link nccl_hang pp_send_delay gpu_throttle kernel_regression\n"
               "  launch_latency sync_stall malloc_storm pcie_degradation kv_swap oom\n"
               "  cpu_contention preemption\n");
}

int cmd_simulate(int argc, char **argv)
{
    teller_sim_opts o = teller_sim_defaults();
    const char *out = NULL;
    int corpus = 0, topo_set = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        }
        if (!strcmp(a, "--log-capture")) {
            o.log_capture = 1;
            continue;
        }
        if (!strcmp(a, "--hang-abort-comm")) {
            o.hang_abort_comm = 1;
            continue;
        }
        if (i + 1 >= argc) {
            fprintf(stderr, "teller: simulate: %s needs a value (or is unknown)\n", a);
            return 2;
        }
        const char *v = argv[++i];
        double d;
        if (!strcmp(a, "-o")) {
            out = v;
        } else if (!strcmp(a, "--model")) {
            o.model = v;
        } else if (!strcmp(a, "--engine")) {
            o.engine = v;
        } else if (!strcmp(a, "--fault")) {
            if (cli_faults("simulate", v, &o.faults))
                return 2;
        } else {
            /* counts are integers; the rate a share; the seed any 53-bit integer */
            int share = !strcmp(a, "--fault-rate"), real = share || !strcmp(a, "--severity");
            if (cli_number("simulate", a, v, 0, share ? 1 : real ? 1e6 : 9007199254740992.0, !real, &d))
                return 2;
            if (!strcmp(a, "--nodes")) { o.nodes = (int)d; topo_set = 1; }
            else if (!strcmp(a, "--gpus-per-node")) { o.gpus_per_node = (int)d; topo_set = 1; }
            else if (!strcmp(a, "--tp")) { o.tp = (int)d; topo_set |= 2; }
            else if (!strcmp(a, "--pp")) { o.pp = (int)d; topo_set |= 4; }
            else if (!strcmp(a, "--steps")) o.steps = (int)d;
            else if (!strcmp(a, "--fault-rate")) o.fault_rate = d;
            else if (!strcmp(a, "--severity")) o.severity = d;
            else if (!strcmp(a, "--seed")) o.seed = (uint64_t)d;
            else if (!strcmp(a, "--corpus")) corpus = (int)d;
            else {
                fprintf(stderr, "teller: simulate: unknown option %s\n", a);
                return 2;
            }
        }
    }
    if (!out) {
        fprintf(stderr, "teller: simulate: -o DIR is required\n");
        usage(stderr);
        return 2;
    }
    /* topology given without tp/pp: tensor parallel within a node, pipeline across nodes */
    if ((topo_set & 1) && !(topo_set & 6)) {
        o.tp = o.gpus_per_node;
        o.pp = o.nodes;
    } else if ((topo_set & 2) && !(topo_set & 4) && o.tp > 0) {
        o.pp = o.nodes * o.gpus_per_node / o.tp;
    }
    teller_error err;
    teller_error_clear(&err);
    teller_status s = corpus ? teller_simulate_corpus(&o, corpus, out, &err) : teller_simulate(&o, out, &err);
    if (s != TELLER_OK) {
        fprintf(stderr, "teller: %s: %s\n", err.file, err.msg);
        return s == TELLER_ERR_ARG ? 2 : 1;
    }
    return 0;
}
