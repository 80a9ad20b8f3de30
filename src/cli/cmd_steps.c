/*
 * cmd_steps.c - `teller steps [--json] TRACE...`: per step and rank, the
 * start, duration, kernel time, communication time and GPU idle time.
 */
#include <stdlib.h>

#include "cli.h"
#include "../util/textout.h"

int cmd_steps(int argc, char **argv)
{
    cli_load_opts o = cli_load_defaults();
    int json = 0;
    const cli_opt opts[] = {
        CLI_BOOL(0, "json", &json, "one JSON object of every step instead of the table"),
        CLI_LOAD_OPTS(&o),
        CLI_END,
    };
    const cli_cmd cmd = {
        .name = "steps",
        .usage = "[options] TRACE_OR_CASE...",
        .about = "Per step and rank: start, duration, kernel, communication and copy time, GPU idle time.",
        .opts = opts,
        CLI_TRACES,
    };
    int status;
    teller_store *st = cli_parse_load(&cmd, &o, argc, argv, &status);
    if (!st)
        return status;
    teller_step_summary *sum = NULL;
    size_t n = 0;
    teller_error err;
    teller_error_clear(&err);
    if (teller_step_summaries(st, &sum, &n, &err) != TELLER_OK) {
        cli_error("steps", "%s", err.msg);
        teller_store_free(st);
        return 1;
    }
    const teller_step *steps = teller_store_steps(st);
    if (json)
        printf("{\"steps\": [");
    else
        printf("%5s %5s %5s %14s %12s %12s %12s %12s %12s %8s  %s\n", "step", "rank", "node", "start_us", "dur_us",
               "kernel_us", "comm_us", "copy_us", "gpu_idle_us", "kernels", "marker");
    size_t unknown = 0, unlaunched = 0, launches = 0;
    for (size_t k = 0; k < n; k++) {
        const teller_step_summary *s = &sum[k];
        const char *marker = steps[k].marker != TELLER_NONE
                                 ? teller_store_str(st, teller_store_step_annotation(st, k))
                             : teller_step_unfinished(&steps[k]) ? "(unfinished: the trace ends in it)"
                                                                 : "(whole trace: no step annotation)";
        if (json) {
            printf("%s\n  {\"step\": %u, \"rank\": %d, \"node\": %d, \"start_ns\": %lld, \"dur_ns\": %lld, "
                   "\"kernel_ns\": %lld, \"comm_ns\": %lld, \"memcpy_ns\": %lld, ",
                   k ? "," : "", s->step, s->rank, s->node, (long long)s->start_ns, (long long)s->dur_ns,
                   (long long)s->kernel_ns, (long long)s->comm_ns, (long long)s->memcpy_ns);
            /* what depends on GPU work the trace lacks is unknown, not computed from the gap */
            if (s->gpu_known)
                printf("\"gpu_busy_ns\": %lld, \"gpu_idle_ns\": %lld, ", (long long)s->gpu_busy_ns, (long long)s->gpu_idle_ns);
            else
                printf("\"gpu_busy_ns\": null, \"gpu_idle_ns\": null, ");
            printf("\"kernels\": %u, \"launches\": %u, \"launches_without_gpu_work\": %u, \"marker\": ", s->kernels,
                   s->launches, s->unlaunched);
            teller_json_put(stdout, marker);
            printf("}");
        } else {
            char idle[32] = "?";
            if (s->gpu_known)
                snprintf(idle, sizeof idle, "%.3f", (double)s->gpu_idle_ns / 1e3);
            printf("%5u %5d %5d %14.3f %12.3f %12.3f %12.3f %12.3f %12s %8u  ", s->step, s->rank, s->node,
                   (double)s->start_ns / 1e3, (double)s->dur_ns / 1e3, (double)s->kernel_ns / 1e3,
                   (double)s->comm_ns / 1e3, (double)s->memcpy_ns / 1e3, idle, s->kernels);
            cli_put_text(stdout, marker);
            printf("\n");
        }
    }
    for (size_t k = 0; k < n; k++) {
        unknown += !sum[k].gpu_known;
        unlaunched += sum[k].unlaunched;
        launches += sum[k].launches;
    }
    if (json)
        printf("\n]}\n");
    else if (unknown)
        printf("? : the trace lacks GPU work of %zu step row%s (%zu of %zu launch calls have no GPU work in it: a graph "
               "recorded without its kernels, a capture window that cut the GPU's work; or its profiler dropped "
               "records): its GPU idle time is unknown\n",
               unknown, unknown == 1 ? "" : "s", unlaunched, launches);
    free(sum);
    teller_store_free(st);
    return 0;
}
