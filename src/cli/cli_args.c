/*
 * cli_args.c - option values: one strict number parser for every command,
 * so that `--threshold abc` or `--threshold 5` is an error, never a silent
 * default or an option that quietly does nothing.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli.h"

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
