/*
 * version.c - the library's version (include/teller/teller.h), from the
 * version.h CMake generates for the build.
 */
#include "teller/teller.h"

const char *teller_version(void) { return TELLER_VERSION_STRING; }

uint32_t teller_version_number(void) { return TELLER_VERSION_NUMBER; }
