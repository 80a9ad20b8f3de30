/*
 * ingest.c - picks the reader for a file from its first bytes.
 *
 * SQLite files start with "SQLite format 3\0" (Nsight Systems exports),
 * teller collector files with "\x89TLT\r\n\x1a\n" (src/collect/tlt_format.h);
 * everything else goes to the Kineto reader, which reads gzip and plain
 * JSON alike.
 */
#include <stdio.h>
#include <string.h>

#include "teller/ingest.h"

teller_status teller_ingest_file(teller_store *st, const char *path, const teller_ingest_opts *opts,
                                 teller_error *err)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return teller_error_set(err, TELLER_ERR_IO, path, 0, "cannot open the file");
    char head[16] = {0};
    size_t n = fread(head, 1, sizeof head, f);
    fclose(f);
    if (n == 0)
        return teller_error_set(err, TELLER_ERR_FORMAT, path, 0, "the file is empty");
    if (n == sizeof head && memcmp(head, "SQLite format 3", 16) == 0)
        return teller_ingest_nsys(st, path, opts, err);
    if (n >= 8 && memcmp(head, "\x89TLT\r\n\x1a\n", 8) == 0)
        return teller_ingest_tlt(st, path, opts, err);
    return teller_ingest_kineto(st, path, opts, err);
}
