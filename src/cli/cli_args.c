/*
 * cli_args.c - option values: one strict number parser for every command,
 * so that `--threshold abc` or `--threshold 5` is an error, never a silent
 * default or an option that quietly does nothing; and the one parser of
 * --fault lists, shared by simulate and perturb.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "teller/fault.h"

int cli_number(const char *cmd, const char *opt, const char *v, double lo, double hi, int integral, double *out)
{
    char *end = NULL;
    errno = 0;
    double x = v ? strtod(v, &end) : NAN;
    if (!v || !*v || *end || errno || isnan(x) || x < lo || x > hi || (integral && x != floor(x))) {
        fprintf(stderr, "teller: %s: %s wants %s from %.15g to %.15g, not '%s'\n", cmd, opt,
                integral ? "an integer" : "a number", lo, hi, v ? v : "");
        return -1;
    }
    *out = x;
    return 0;
}

int cli_faults(const char *cmd, const char *v, uint32_t *out)
{
    uint32_t faults = 0;
    char *copy = strdup(v), *save = NULL;
    if (!copy)
        return -1;
    for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (!strcmp(tok, "all")) {
            faults |= ((1u << TELLER_FAULT_COUNT) - 1) & ~1u;
            continue;
        }
        teller_fault f = teller_fault_parse(tok);
        if (f == TELLER_FAULT_COUNT) {
            fprintf(stderr, "teller: %s: unknown fault kind '%s' (see --help)\n", cmd, tok);
            free(copy);
            return -1;
        }
        faults |= 1u << f;
    }
    free(copy);
    *out = faults;
    return 0;
}
