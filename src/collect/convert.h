/*
 * convert.h - CUPTI activity records to .tlt records, with no CUPTI calls
 * other than cuptiGetCallbackName (which needs no GPU). Pure apart from
 * interning names into the string table it is given, so tests feed it
 * hand-built records through the real libcupti iterator.
 */
#ifndef TELLER_COLLECT_CONVERT_H
#define TELLER_COLLECT_CONVERT_H

#include <cupti.h>

#include "tlt_writer.h"

/* Conversion state: the string table and caches of names already
 * interned (API names by callback id, copy names by kinds). */
typedef struct tlt_conv {
    tlt_strtab *strs;
    uint32_t    rt_name[CUPTI_RUNTIME_TRACE_CBID_SIZE];
    uint32_t    drv_name[CUPTI_DRIVER_TRACE_CBID_SIZE];
    uint32_t    copy_name[16][16][16]; /* copy kind, src kind, dst kind */
    uint32_t    set_name[16];          /* memory kind */
    uint64_t    skipped;               /* records of kinds we do not keep */
} tlt_conv;

void tlt_conv_init(tlt_conv *c, tlt_strtab *strs);

/* Converts one record. 1: *out holds it; 0: a kind we do not keep (counted
 * in c->skipped); -1: out of memory. Names the record points to are copied
 * into the string table, so the CUPTI buffer may be freed afterwards. */
int tlt_convert(tlt_conv *c, const CUpti_Activity *a, tlt_rec *out);

/* The name of a runtime or driver API with CUPTI's "_vNNNN" version suffix
 * removed ("cudaLaunchKernel_v7000" -> "cudaLaunchKernel"), written into
 * buf. 0, or -1 when CUPTI knows no such id. */
int tlt_api_name(CUpti_CallbackDomain dom, uint32_t cbid, char *buf, size_t cap);

/* The default selection of runtime APIs: launches, graph launches, copies,
 * sets, allocations and frees, synchronisations and stream waits. */
int tlt_runtime_api_wanted(const char *name);
/* The default selection of driver APIs: kernel and graph launches. */
int tlt_driver_api_wanted(const char *name);

#endif
