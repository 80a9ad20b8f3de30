/*
 * convert.c - CUPTI activity records (CUDA 13 layouts: Kernel10, API,
 * Memcpy6, Memset4, Synchronization2, ExternalCorrelation, Overhead3,
 * Marker2) to .tlt records. Field meanings per kind are in tlt_format.h.
 * Names are interned here because CUPTI owns the strings it points to.
 */
#include <stdio.h>
#include <string.h>

#include "convert.h"

void tlt_conv_init(tlt_conv *c, tlt_strtab *strs)
{
    memset(c, 0, sizeof *c);
    c->strs = strs;
}

int tlt_api_name(CUpti_CallbackDomain dom, uint32_t cbid, char *buf, size_t cap)
{
    const char *n = NULL;
    if (cuptiGetCallbackName(dom, cbid, &n) != CUPTI_SUCCESS || !n || cap == 0)
        return -1;
    size_t len = strlen(n);
    /* strip a trailing "_v" followed by digits */
    size_t i = len;
    while (i > 0 && n[i - 1] >= '0' && n[i - 1] <= '9')
        i--;
    if (i < len && i >= 2 && n[i - 1] == 'v' && n[i - 2] == '_')
        len = i - 2;
    if (len >= cap)
        len = cap - 1;
    memcpy(buf, n, len);
    buf[len] = 0;
    return 0;
}

static int has_prefix(const char *s, const char *p) { return strncmp(s, p, strlen(p)) == 0; }

int tlt_runtime_api_wanted(const char *n)
{
    static const char *const prefixes[] = {
        "cudaLaunch", "cudaGraphLaunch", "cudaMemcpy", "cudaMemset", "cudaMalloc", "cudaFree",
        "cudaHostAlloc", "cudaHostRegister", "cudaHostUnregister", "cudaDeviceSynchronize",
        "cudaStreamSynchronize", "cudaEventSynchronize", "cudaThreadSynchronize", "cudaStreamWaitEvent",
        "cudaMemPrefetch",
    };
    for (size_t i = 0; i < sizeof prefixes / sizeof *prefixes; i++)
        if (has_prefix(n, prefixes[i]))
            return 1;
    return 0;
}

int tlt_driver_api_wanted(const char *n)
{
    return has_prefix(n, "cuLaunch") || has_prefix(n, "cuGraphLaunch");
}

static uint32_t intern(tlt_conv *c, const char *s)
{
    return s ? tlt_strtab_intern(c->strs, s, strlen(s)) : 0;
}

static uint32_t api_name(tlt_conv *c, int driver, uint32_t cbid)
{
    uint32_t *cache = NULL;
    if (!driver && cbid < CUPTI_RUNTIME_TRACE_CBID_SIZE)
        cache = &c->rt_name[cbid];
    else if (driver && cbid < CUPTI_DRIVER_TRACE_CBID_SIZE)
        cache = &c->drv_name[cbid];
    if (cache && *cache)
        return *cache;
    char buf[128];
    if (tlt_api_name(driver ? CUPTI_CB_DOMAIN_DRIVER_API : CUPTI_CB_DOMAIN_RUNTIME_API, cbid, buf, sizeof buf))
        snprintf(buf, sizeof buf, "%s API %u", driver ? "driver" : "runtime", cbid);
    uint32_t id = intern(c, buf);
    if (cache && id != UINT32_MAX)
        *cache = id;
    return id;
}

static const char *mem_kind_name(unsigned k)
{
    static const char *const n[] = {"Unknown", "Pageable", "Pinned", "Device", "Array",
                                    "Managed", "Device Static", "Managed Static"};
    return k < sizeof n / sizeof *n ? n[k] : "Unknown";
}

static uint32_t copy_name(tlt_conv *c, unsigned kind, unsigned src, unsigned dst)
{
    static const char *const kn[] = {"Unknown", "HtoD", "DtoH", "HtoA", "AtoH", "AtoA",
                                     "AtoD",    "DtoA", "DtoD", "HtoH", "PtoP"};
    unsigned k = kind < 16 ? kind : 0, s = src < 16 ? src : 0, d = dst < 16 ? dst : 0;
    if (c->copy_name[k][s][d])
        return c->copy_name[k][s][d];
    char buf[96];
    snprintf(buf, sizeof buf, "Memcpy %s (%s -> %s)", k < sizeof kn / sizeof *kn ? kn[k] : "Unknown",
             mem_kind_name(s), mem_kind_name(d));
    uint32_t id = intern(c, buf);
    if (id != UINT32_MAX)
        c->copy_name[k][s][d] = id;
    return id;
}

static uint32_t set_name(tlt_conv *c, unsigned mk)
{
    unsigned k = mk < 16 ? mk : 0;
    if (c->set_name[k])
        return c->set_name[k];
    char buf[64];
    snprintf(buf, sizeof buf, "Memset (%s)", mem_kind_name(k));
    uint32_t id = intern(c, buf);
    if (id != UINT32_MAX)
        c->set_name[k] = id;
    return id;
}

static const char *sync_name(unsigned t)
{
    switch (t) {
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE: return "Event Sync";
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT: return "Stream Wait Event";
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE: return "Stream Sync";
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE: return "Context Sync";
    default: return "Sync";
    }
}

static const char *overhead_name(unsigned k)
{
    switch (k) {
    case CUPTI_ACTIVITY_OVERHEAD_DRIVER_COMPILER: return "CUPTI overhead: driver compiler";
    case CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH: return "CUPTI overhead: buffer flush";
    case CUPTI_ACTIVITY_OVERHEAD_CUPTI_INSTRUMENTATION: return "CUPTI overhead: instrumentation";
    case CUPTI_ACTIVITY_OVERHEAD_CUPTI_RESOURCE: return "CUPTI overhead: resource";
    case CUPTI_ACTIVITY_OVERHEAD_RUNTIME_TRIGGERED_MODULE_LOADING: return "CUPTI overhead: module loading";
    case CUPTI_ACTIVITY_OVERHEAD_LAZY_FUNCTION_LOADING: return "CUPTI overhead: lazy function loading";
    case CUPTI_ACTIVITY_OVERHEAD_COMMAND_BUFFER_FULL: return "CUPTI overhead: command buffer full";
    case CUPTI_ACTIVITY_OVERHEAD_ACTIVITY_BUFFER_REQUEST: return "CUPTI overhead: activity buffer request";
    case CUPTI_ACTIVITY_OVERHEAD_UVM_ACTIVITY_INIT: return "CUPTI overhead: UVM activity init";
    default: return "CUPTI overhead";
    }
}

/* Process/thread or device/stream of an object id, by its kind. */
static void object_ids(CUpti_ActivityObjectKind k, const CUpti_ActivityObjectKindId *id, tlt_rec *o)
{
    if (k == CUPTI_ACTIVITY_OBJECT_PROCESS || k == CUPTI_ACTIVITY_OBJECT_THREAD) {
        o->dev = id->pt.processId;
        o->stream = id->pt.threadId;
    } else {
        o->dev = id->dcs.deviceId;
        o->stream = id->dcs.streamId;
        o->ctx = id->dcs.contextId;
    }
    o->aux = (uint16_t)k;
}

int tlt_convert(tlt_conv *c, const CUpti_Activity *a, tlt_rec *o)
{
    memset(o, 0, sizeof *o);
    switch (a->kind) {
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
    case CUPTI_ACTIVITY_KIND_KERNEL: {
        const CUpti_ActivityKernel10 *k = (const CUpti_ActivityKernel10 *)a;
        o->kind = TLT_REC_KERNEL;
        o->sub = k->launchType;
        o->aux = k->registersPerThread;
        o->name = intern(c, k->name ? k->name : "<unnamed kernel>");
        o->start = (int64_t)k->start;
        o->end = (int64_t)k->end;
        o->corr = k->correlationId;
        o->dev = k->deviceId;
        o->stream = k->streamId;
        o->ctx = k->contextId;
        o->val = k->graphNodeId;
        o->grid[0] = (uint32_t)k->gridX;
        o->grid[1] = (uint32_t)k->gridY;
        o->grid[2] = (uint32_t)k->gridZ;
        o->block[0] = (uint32_t)k->blockX;
        o->block[1] = (uint32_t)k->blockY;
        o->block[2] = (uint32_t)k->blockZ;
        break;
    }
    case CUPTI_ACTIVITY_KIND_RUNTIME:
    case CUPTI_ACTIVITY_KIND_DRIVER: {
        const CUpti_ActivityAPI *p = (const CUpti_ActivityAPI *)a;
        int drv = a->kind == CUPTI_ACTIVITY_KIND_DRIVER;
        o->kind = drv ? TLT_REC_DRIVER : TLT_REC_RUNTIME;
        o->aux = (uint16_t)p->cbid;
        o->name = api_name(c, drv, p->cbid);
        o->start = (int64_t)p->start;
        o->end = (int64_t)p->end;
        o->corr = p->correlationId;
        o->dev = p->processId;
        o->stream = p->threadId;
        o->val = p->returnValue;
        break;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
        const CUpti_ActivityMemcpy6 *m = (const CUpti_ActivityMemcpy6 *)a;
        o->kind = TLT_REC_MEMCPY;
        o->sub = m->copyKind;
        o->aux = (uint16_t)(m->srcKind << 8 | m->dstKind);
        o->name = copy_name(c, m->copyKind, m->srcKind, m->dstKind);
        o->start = (int64_t)m->start;
        o->end = (int64_t)m->end;
        o->corr = m->correlationId;
        o->dev = m->deviceId;
        o->stream = m->streamId;
        o->ctx = m->contextId;
        o->val = m->bytes;
        o->grid[0] = m->graphId;
        break;
    }
    case CUPTI_ACTIVITY_KIND_MEMSET: {
        const CUpti_ActivityMemset4 *m = (const CUpti_ActivityMemset4 *)a;
        o->kind = TLT_REC_MEMSET;
        o->aux = m->memoryKind;
        o->name = set_name(c, m->memoryKind);
        o->start = (int64_t)m->start;
        o->end = (int64_t)m->end;
        o->corr = m->correlationId;
        o->dev = m->deviceId;
        o->stream = m->streamId;
        o->ctx = m->contextId;
        o->val = m->bytes;
        o->grid[0] = m->value;
        o->grid[1] = m->graphId;
        break;
    }
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: {
        const CUpti_ActivitySynchronization2 *s = (const CUpti_ActivitySynchronization2 *)a;
        o->kind = TLT_REC_SYNC;
        o->sub = (uint8_t)s->type;
        o->name = intern(c, sync_name(s->type));
        o->start = (int64_t)s->start;
        o->end = (int64_t)s->end;
        o->corr = s->correlationId;
        o->dev = TLT_NO_DEVICE;
        o->stream = s->streamId;
        o->ctx = s->contextId;
        o->val = s->returnValue;
        o->grid[0] = s->cudaEventId;
        break;
    }
    case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: {
        const CUpti_ActivityExternalCorrelation *e = (const CUpti_ActivityExternalCorrelation *)a;
        o->kind = TLT_REC_EXTCORR;
        o->sub = (uint8_t)e->externalKind;
        o->corr = e->correlationId;
        o->val = e->externalId;
        break;
    }
    case CUPTI_ACTIVITY_KIND_OVERHEAD: {
        const CUpti_ActivityOverhead3 *v = (const CUpti_ActivityOverhead3 *)a;
        o->kind = TLT_REC_OVERHEAD;
        o->name = intern(c, overhead_name(v->overheadKind));
        o->start = (int64_t)v->start;
        o->end = (int64_t)v->end;
        o->corr = v->correlationId;
        object_ids(v->objectKind, &v->objectId, o);
        o->grid[0] = (uint32_t)v->overheadKind;
        break;
    }
    case CUPTI_ACTIVITY_KIND_MARKER: {
        const CUpti_ActivityMarker2 *m = (const CUpti_ActivityMarker2 *)a;
        o->kind = TLT_REC_MARKER;
        o->sub = (uint8_t)m->flags;
        o->name = intern(c, m->name);
        o->start = o->end = (int64_t)m->timestamp;
        object_ids(m->objectKind, &m->objectId, o);
        o->ctx = m->id;
        uint32_t dom = intern(c, m->domain);
        if (dom == UINT32_MAX)
            return -1;
        o->val = dom;
        break;
    }
    default:
        c->skipped++;
        return 0;
    }
    if (o->name == UINT32_MAX)
        return -1;
    return 1;
}
