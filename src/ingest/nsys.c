/*
 * nsys.c - the Nsight Systems SQLite export reader (placeholder until the
 * reader lands; reports that the format is not read yet).
 */
#include "teller/ingest.h"

teller_status teller_ingest_nsys(teller_store *st, const char *path, const teller_ingest_opts *opts,
                                 teller_error *err)
{
    (void)st;
    (void)opts;
    return teller_error_set(err, TELLER_ERR_FORMAT, path, 0, "Nsight Systems exports are not read yet");
}
