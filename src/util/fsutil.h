/*
 * fsutil.h - small file-system helpers shared by the writers of cases
 * (the simulator, the perturber) and the CLI.
 */
#ifndef TELLER_FSUTIL_H
#define TELLER_FSUTIL_H

#include <sys/types.h>

/* Creates the directory `path` and every missing parent with `mode` (before
 * the umask), like `mkdir -p`; directories that exist already are fine.
 * Paths longer than 4095 bytes are cut there. Returns 0, or -1 with errno set
 * by the mkdir that failed. */
int teller_mkdir_p(const char *path, mode_t mode);

/* Whether `path` is a directory holding anything (1), or does not exist or
 * is empty (0); -1 when it is something else, or cannot be read. */
int teller_dir_has_files(const char *path);

#endif
