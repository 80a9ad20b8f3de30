#!/usr/bin/env python3
"""Independent counts over Nsight Systems SQLite exports, for the C tests.

Reads each file with Python's sqlite3 module (nothing of teller's code) and
prints, per file: processes with CUDA activity, kernels, devices, NCCL
kernels, kernels whose correlationId matches a CUPTI_ACTIVITY_KIND_RUNTIME
row of the same process (linked; the exports are trimmed windows, so some
launches fall outside), NVTX ranges kept (eventType 59/60, end > start, with
text, in a process with CUDA activity), NCCL-domain NVTX ranges, the
profiler's own work (PROFILER_OVERHEAD rows and CUPTI_ACTIVITY_KIND_OVERHEAD
rows whose type's label says "(Profiler)", in a process with CUDA activity),
and all events (GPU rows + runtime/driver rows + NVTX ranges + the
profiler's work), and the profiler's work's time. tests/test_nsys.c
holds these numbers; rerun this script when a test's expectation is in doubt:

    python3 tests/tools/count_nsys.py ../shared/data/traces/nsys-ai
"""
import os, sqlite3, sys

GPU_TABLES = ['CUPTI_ACTIVITY_KIND_KERNEL', 'CUPTI_ACTIVITY_KIND_MEMCPY', 'CUPTI_ACTIVITY_KIND_MEMSET',
              'CUPTI_ACTIVITY_KIND_SYNCHRONIZATION']


def pid_of(g):
    return (g >> 24) & 0xFFFFFF


def count(path):
    db = sqlite3.connect('file:' + path + '?immutable=1', uri=True)
    tables = {n for (n,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    strings = dict(db.execute('SELECT id, value FROM StringIds')) if 'StringIds' in tables else {}
    out = {}
    procs = set()
    gpu_rows = 0
    kernels = []  # (pid, corr, name, device)
    for t in GPU_TABLES:
        if t not in tables:
            continue
        if t == 'CUPTI_ACTIVITY_KIND_KERNEL':
            q = 'SELECT start, end, globalPid, correlationId, demangledName, shortName, deviceId FROM ' + t
        else:
            q = 'SELECT start, end, globalPid, correlationId, NULL, NULL, deviceId FROM ' + t
        for s, e, g, corr, dn, sn, dev in db.execute(q):
            if s is None or e is None or e < s or g is None:
                continue
            if t == 'CUPTI_ACTIVITY_KIND_KERNEL':
                name = strings.get(dn) or strings.get(sn)
                if name is None:
                    continue
                kernels.append((pid_of(g), corr, name, dev))
            procs.add(pid_of(g))
            gpu_rows += 1
    api = set()
    api_rows = 0
    if 'CUPTI_ACTIVITY_KIND_RUNTIME' in tables:
        for s, e, g, corr, nid in db.execute(
                'SELECT start, end, globalTid, correlationId, nameId FROM CUPTI_ACTIVITY_KIND_RUNTIME'):
            if s is None or e is None or e < s or g is None or nid not in strings:
                continue
            procs.add(pid_of(g))
            api_rows += 1
            if corr:
                api.add((pid_of(g), corr))
    nvtx = nccl_ranges = 0
    if 'NVTX_EVENTS' in tables:
        domains = {}
        for d, text, tid in db.execute('SELECT domainId, text, textId FROM NVTX_EVENTS WHERE eventType = 75'):
            domains[d] = text if text is not None else strings.get(tid)
        for s, e, text, tid, dom, g in db.execute(
                'SELECT start, end, text, textId, domainId, globalTid FROM NVTX_EVENTS WHERE eventType IN (59, 60)'):
            if e is None or e <= s or g is None or pid_of(g) not in procs:
                continue
            name = text if text is not None else strings.get(tid)
            if name is None:
                continue
            nvtx += 1
            if dom:
                # windowed exports lose the DomainCreate (75) rows; NCCL's own
                # domain then shows only through its API names
                nccl_ranges += (domains[dom] == 'NCCL') if dom in domains else name.startswith('nccl')
    profiler = profiler_ns = 0
    types = ({i for (i, label) in db.execute('SELECT id, label FROM ENUM_CUPTI_OVERHEAD_TYPE') if '(Profiler)' in label}
             if 'ENUM_CUPTI_OVERHEAD_TYPE' in tables else set())
    for t in ('CUPTI_ACTIVITY_KIND_OVERHEAD', 'PROFILER_OVERHEAD'):
        if t not in tables:
            continue
        for s, e, g, ty in db.execute('SELECT start, end, globalTid, overheadType FROM ' + t):
            if s is None or e is None or e < s or g is None or pid_of(g) not in procs:
                continue
            if t == 'PROFILER_OVERHEAD' or ty in types:
                profiler += 1
                profiler_ns += e - s
    out['procs'] = len(procs)
    out['kernels'] = len(kernels)
    out['devices'] = len({k[3] for k in kernels})
    out['nccl_kernels'] = sum('nccl' in k[2].lower() for k in kernels)
    out['linked'] = sum((k[0], k[1]) in api for k in kernels)
    out['nvtx'] = nvtx
    out['nccl_ranges'] = nccl_ranges
    out['profiler'] = profiler
    out['profiler_ns'] = profiler_ns
    out['events'] = gpu_rows + api_rows + nvtx + profiler
    return out


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else '../shared/data/traces/nsys-ai'
    for f in sorted(os.listdir(root)):
        if not f.endswith('.sqlite'):
            continue
        c = count(os.path.join(root, f))
        print(f, ' '.join('%s=%d' % kv for kv in c.items()))


if __name__ == '__main__':
    main()
