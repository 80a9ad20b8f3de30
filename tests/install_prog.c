/*
 * install_prog.c - a program built against an installed teller by
 * tests/install.sh, with nothing but `pkg-config --cflags --libs teller`:
 * loads the traces it is given through the run handle (run.h), prints
 * what it found and the library's version, and shows that a missing file
 * comes back as an error naming it.
 *
 * usage: install_prog TRACE...
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <teller/teller.h>

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: install_prog TRACE...\n");
        return 2;
    }
    if (strcmp(teller_version(), TELLER_VERSION_STRING) != 0 || teller_version_number() != TELLER_VERSION_NUMBER) {
        fprintf(stderr, "library %s, headers %s\n", teller_version(), TELLER_VERSION_STRING);
        return 1;
    }
    teller_error err;
    teller_run *run = NULL;
    if (teller_run_load((const char *const *)argv + 1, (size_t)argc - 1, NULL, &run, &err) != TELLER_OK) {
        fprintf(stderr, "%s:%llu: %s\n", err.file, (unsigned long long)err.offset, err.msg);
        return 1;
    }
    size_t nk = 0, ns = 0;
    if (teller_run_kernels(run, NULL, 0, &nk, &err) != TELLER_OK || teller_run_steps(run, NULL, 0, &ns, &err) != TELLER_OK)
        return 1;
    teller_run_kernel *k = malloc((nk ? nk : 1) * sizeof *k);
    if (!k || teller_run_kernels(run, k, nk, &nk, &err) != TELLER_OK)
        return 1;
    int64_t busy = 0;
    for (size_t i = 0; i < nk; i++)
        busy += k[i].dur_ns;
    printf("teller %s: %zu sources, %zu kernels (%.3f ms), %zu step rows\n", teller_version(),
           teller_store_num_sources(teller_run_store(run)), nk, (double)busy / 1e6, ns);
    free(k);
    teller_run_free(run);

    const char *missing = "no/such/trace.json";
    if (teller_run_load(&missing, 1, NULL, &run, &err) == TELLER_OK || strcmp(err.file, missing) != 0) {
        fprintf(stderr, "a missing file was not an error naming it\n");
        return 1;
    }
    printf("missing: %s: %s (%s)\n", err.file, err.msg, teller_status_str(err.code));
    return 0;
}
