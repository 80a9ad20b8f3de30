/*
 * kwrite.c - a tree-built store written back as Kineto JSON, one gzip
 * file per rank (DIR/rank<R>.trace.json.gz), in the shape teller's Kineto
 * reader reads back to the same events: categories from layers, GPU rows
 * as device pid and stream tid, correlation and External ids, copy sizes,
 * launch grids, collective metadata, distributedInfo, deviceProperties,
 * host name and baseTimeNanoseconds. Times go back onto each node's own
 * clock (the tree build moved them onto node 0's).
 */
#include <stdio.h>
#include <string.h>
#include <zlib.h>

#include "teller/perturb.h"
#include "teller/tree.h"
#include "../sim/sim_out.h"

static const char *cat_of(const teller_events *ev, uint32_t i, const char *name)
{
    int gpu = (ev->flags[i] & TELLER_F_GPU) != 0;
    switch ((teller_layer)ev->layer[i]) {
    case TELLER_LAYER_ENGINE: return gpu ? "gpu_user_annotation" : "user_annotation";
    case TELLER_LAYER_FRONTEND: return "python_function";
    case TELLER_LAYER_BACKEND:
        /* the COMM flag of an op that does not look like one came from its category */
        return (ev->flags[i] & TELLER_F_COMM) && !teller_name_is_comm(name) ? "collective_comm" : "cpu_op";
    case TELLER_LAYER_RUNTIME: return "cuda_runtime";
    case TELLER_LAYER_DRIVER: return "cuda_driver";
    case TELLER_LAYER_KERNEL: return "kernel";
    case TELLER_LAYER_MEMCPY: return "gpu_memcpy";
    case TELLER_LAYER_MEMSET: return "gpu_memset";
    case TELLER_LAYER_SYNC: return "cuda_sync";
    default: return ev->flags[i] & TELLER_F_PROFILER ? "overhead" : "Trace";
    }
}

static void put_args(obuf *o, const teller_store *st, uint32_t i)
{
    const teller_events *ev = teller_store_events(st);
    const teller_args *a = teller_store_event_args(st, i);
    int first = 1;
#define SEP() (ob_s(o, first ? ", \"args\": {" : ", "), first = 0)
    if (ev->corr[i]) {
        SEP();
        ob_s(o, "\"correlation\": ");
        ob_i64(o, ev->corr[i]);
    }
    if (a) {
        if (a->ext_id >= 0) {
            SEP();
            ob_s(o, "\"External id\": ");
            ob_i64(o, a->ext_id);
        }
        if (a->in_dims && a->in_types) {
            /* JSON text as the trace wrote it (the reader kept only lists) */
            SEP();
            ob_s(o, "\"Input Dims\": ");
            ob_s(o, teller_store_str(st, a->in_dims));
            ob_s(o, ", \"Input type\": ");
            ob_s(o, teller_store_str(st, a->in_types));
        }
        if (a->bytes >= 0) {
            SEP();
            ob_s(o, "\"bytes\": ");
            ob_i64(o, a->bytes);
        }
        if (a->grid[0] || a->grid[1] || a->grid[2]) {
            SEP();
            ob_fmt(o, "\"grid\": [%u, %u, %u]", a->grid[0], a->grid[1], a->grid[2]);
        }
        if (a->block[0] || a->block[1] || a->block[2]) {
            SEP();
            ob_fmt(o, "\"block\": [%u, %u, %u]", a->block[0], a->block[1], a->block[2]);
        }
        const teller_comm *c = a->comm != TELLER_NONE ? teller_store_comm(st, a->comm) : NULL;
        if (c) {
            SEP();
            ob_s(o, "\"Collective name\": ");
            ob_jstr(o, teller_store_str(st, c->collective));
            const struct {
                const char *key;
                uint32_t    id;
            } strs[] = {{"Process Group Name", c->pg_name},
                        {"Process Group Description", c->pg_desc},
                        {"Process Group Ranks", c->pg_ranks},
                        {"dtype", c->dtype}};
            for (size_t k = 0; k < sizeof strs / sizeof *strs; k++) {
                if (!strs[k].id)
                    continue;
                ob_fmt(o, ", \"%s\": ", strs[k].key);
                ob_jstr(o, teller_store_str(st, strs[k].id));
            }
            if (c->group_size > 0)
                ob_fmt(o, ", \"Group size\": %d", c->group_size);
            if (c->in_nelems >= 0) {
                ob_s(o, ", \"In msg nelems\": ");
                ob_i64(o, c->in_nelems);
            }
            if (c->out_nelems >= 0) {
                ob_s(o, ", \"Out msg nelems\": ");
                ob_i64(o, c->out_nelems);
            }
            if (c->seq >= 0) {
                ob_s(o, ", \"Seq\": ");
                ob_i64(o, c->seq);
            }
        }
    }
    if (!first)
        ob_s(o, "}");
#undef SEP
}

static int64_t node_offset(const teller_store *st, int32_t node)
{
    const teller_node *nodes = teller_store_nodes(st);
    for (size_t k = 0; k < teller_store_num_nodes(st); k++)
        if (nodes[k].node == node)
            return nodes[k].offset_ns;
    return 0;
}

static teller_status write_source(const teller_store *st, uint32_t s, const int64_t *start, const int64_t *dur,
                                  const uint8_t *keep, const char *path, teller_error *err)
{
    const teller_events *ev = teller_store_events(st);
    const teller_source *so = teller_store_source_c(st, s);
    /* the fastest level: compressing was most of teller perturb's time, and
     * the files come out about 30 % larger than at the default */
    gzFile gz = gzopen(path, "wb1");
    if (!gz)
        return teller_error_set(err, TELLER_ERR_IO, path, 0, "cannot write");
    obuf o;
    ob_init(&o, gz);
    ob_s(&o, "{\n  \"schemaVersion\": 1,\n");
    if (so->num_devices > 0) {
        ob_s(&o, "  \"deviceProperties\": [");
        for (int d = 0; d < so->num_devices; d++) {
            ob_fmt(&o, "%s\n    {\"id\": %d", d ? "," : "", d);
            if (so->device_name) {
                ob_s(&o, ", \"name\": ");
                ob_jstr(&o, teller_store_str(st, so->device_name));
            }
            ob_s(&o, "}");
        }
        ob_s(&o, "\n  ],\n");
    }
    ob_fmt(&o, "  \"distributedInfo\": {\"rank\": %d", so->rank);
    if (so->world_size > 0)
        ob_fmt(&o, ", \"world_size\": %d", so->world_size);
    ob_s(&o, "},\n");
    if (so->host) {
        ob_s(&o, "  \"host_name\": ");
        ob_jstr(&o, teller_store_str(st, so->host));
        ob_s(&o, ",\n");
    }
    /* relative times under a base, as torch.profiler writes them: epoch
     * microseconds with three decimals would need more digits than the
     * readers keep exact. The base is a whole second, which a reader that
     * takes it through a double still reads exactly. */
    int64_t off = node_offset(st, so->node), lo = INT64_MAX;
    for (uint32_t i = 0; i < ev->n; i++)
        if (ev->source[i] == s && ev->start_ns[i] < lo)
            lo = ev->start_ns[i];
    int64_t base = lo == INT64_MAX || lo + off < 0 ? 0 : (lo + off) / 1000000000 * 1000000000;
    ob_s(&o, "  \"baseTimeNanoseconds\": ");
    ob_i64(&o, base);
    ob_s(&o, ",\n  \"traceEvents\": [");
    int64_t shift = off - base;
    int first = 1;
    for (uint32_t i = 0; i < ev->n; i++) {
        if (ev->source[i] != s || (keep && !keep[i]))
            continue;
        const char *name = teller_store_str(st, ev->name[i]);
        int inst = (ev->flags[i] & TELLER_F_INSTANT) != 0, ctr = (ev->flags[i] & TELLER_F_COUNTER) != 0;
        ob_s(&o, first ? "\n  {\"ph\": \"" : ",\n  {\"ph\": \"");
        first = 0;
        ob_s(&o, inst ? "i" : ctr ? "C" : "X");
        ob_s(&o, "\", \"cat\": \"");
        ob_s(&o, cat_of(ev, i, name));
        ob_s(&o, "\", \"name\": ");
        ob_jstr(&o, name);
        ob_s(&o, ", \"pid\": ");
        ob_i64(&o, teller_event_pid(ev, i));
        ob_s(&o, ", \"tid\": ");
        ob_i64(&o, teller_event_tid(ev, i));
        ob_s(&o, ", \"ts\": ");
        ob_us(&o, (start ? start[i] : ev->start_ns[i]) + shift);
        if (inst) {
            ob_s(&o, ", \"s\": \"t\"");
        } else if (!ctr) {
            ob_s(&o, ", \"dur\": ");
            ob_us(&o, dur ? dur[i] : ev->dur_ns[i]);
        }
        put_args(&o, st, i);
        ob_s(&o, "}");
    }
    ob_s(&o, "\n  ]\n}\n");
    ob_flush(&o);
    int failed = o.failed;
    ob_free(&o);
    if (gzclose(gz) != Z_OK || failed)
        return teller_error_set(err, TELLER_ERR_IO, path, 0, "write failed");
    return TELLER_OK;
}

teller_status teller_kineto_write(const teller_store *st, const int64_t *start, const int64_t *dur,
                                  const uint8_t *keep, const char *dir, teller_error *err)
{
    size_t ns = teller_store_num_sources(st);
    for (uint32_t s = 0; s < ns; s++) {
        const teller_source *so = teller_store_source_c(st, s);
        for (uint32_t t = 0; t < s; t++)
            if (teller_store_source_c(st, t)->rank == so->rank)
                return teller_error_set(err, TELLER_ERR_ARG, teller_store_str(st, so->path), 0,
                                        "two inputs hold rank %d; a case has one trace per rank", so->rank);
        char path[4096];
        snprintf(path, sizeof path, "%s/rank%d.trace.json.gz", dir, so->rank);
        teller_status r = write_source(st, s, start, dur, keep, path, err);
        if (r != TELLER_OK)
            return r;
    }
    return TELLER_OK;
}
