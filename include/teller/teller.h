/*
 * teller.h - the whole public API in one include, and the library's
 * version. A program built against an installed teller:
 *
 *   #include <teller/teller.h>
 *   cc prog.c $(pkg-config --cflags --libs teller)
 *
 * Every header is also usable alone. The shared library (libteller.so)
 * exports exactly the functions these headers declare.
 */
#ifndef TELLER_TELLER_H
#define TELLER_TELLER_H

#include <stdint.h>

#include "teller/version.h"
#include "teller/error.h"
#include "teller/store.h"
#include "teller/ingest.h"
#include "teller/tree.h"
#include "teller/load.h"
#include "teller/logs.h"
#include "teller/requests.h"
#include "teller/fault.h"
#include "teller/predict.h"
#include "teller/diagnose.h"
#include "teller/check.h"
#include "teller/report.h"
#include "teller/eval.h"
#include "teller/baseline.h"
#include "teller/sim.h"
#include "teller/perturb.h"
#include "teller/tpe.h"
#include "teller/slice.h"
#include "teller/model.h"
#include "teller/run.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The library's version, "0.2.0", and its number (TELLER_VERSION_NUMBER's
 * form): those of the libteller a program runs with, which may be newer
 * than the headers it was compiled with (version.h). */
const char *teller_version(void);
uint32_t teller_version_number(void);

#ifdef __cplusplus
}
#endif
#endif
