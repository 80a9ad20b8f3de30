#!/usr/bin/env python3
"""Independent counts over real Kineto traces, for the C tests.

Reads each file with Python's json module (nothing of teller's code) and
prints, per file: events kept (X, i, I, C phases with name and ts), kernels,
kernels whose args.correlation matches a cuda_runtime/cuda_driver event's
(linked), NCCL/RCCL kernels, the largest number of GPU ops under one graph
launch, and top-level step markers. tests/test_real_traces.c holds these
numbers; rerun this script when a test's expectation is in doubt:

    python3 tests/tools/count_kineto.py ../shared/data/traces
"""
import collections, gzip, json, os, re, sys

# The engines' communication kernels (docs/ARCHITECTURE.md, "Communication
# kernel families"), written out again here rather than imported.
COMM_HEAD = re.compile(r'cross_device_reduce_|oneShotAllReduceKernel|twoShotAllReduceKernel|'
                       r'allreduce_fusion_kernel|one_shot_all_reduce|two_shot_all_reduce|'
                       r'multimem_all_reduce|multimem_all_gather|'
                       r'deep_ep::(intranode|internode|internode_ll)::\w*(dispatch|combine|notify|barrier)')
STEP = re.compile(r'^ProfilerStep#[0-9]+$|^execute_([0-9]+_)?context_|^step\[')
KCATS = {'kernel', 'Kernel'}
GPU = KCATS | {'gpu_memcpy', 'gpu_memset', 'Memcpy', 'Memset'}
API = {'cuda_runtime', 'cuda_driver', 'Runtime', 'Driver'}

def count(path):
    op = gzip.open if path.endswith('.gz') else open
    d = json.load(op(path, 'rt'))
    ev = d['traceEvents'] if isinstance(d, dict) else d
    kept = [e for e in ev if e.get('ph') in ('X', 'i', 'I', 'C') and 'name' in e and 'ts' in e
            and not (e.get('ph') == 'X' and e.get('dur', 0) < 0)]
    api_corr = {}
    for e in kept:
        if e.get('cat') in API and e.get('ph') == 'X':
            c = (e.get('args') or {}).get('correlation')
            if c:
                api_corr.setdefault(c, e)
    kernels = [e for e in kept if e.get('cat') in KCATS and e['ph'] == 'X']
    linked = sum(1 for k in kernels if (k.get('args') or {}).get('correlation') in api_corr)
    comm = sum(1 for k in kernels if re.search('nccl|rccl', k['name'], re.I) or COMM_HEAD.search(k['name']))
    fan = collections.Counter()
    for e in kept:
        if e.get('cat') in GPU and e['ph'] == 'X':
            c = (e.get('args') or {}).get('correlation')
            if c in api_corr and 'GraphLaunch' in api_corr[c]['name']:
                fan[c] += 1
    ann = [e for e in kept if e.get('cat') == 'user_annotation' and e['ph'] == 'X' and STEP.search(e['name'])]
    # outermost markers only
    steps = 0
    for a in ann:
        inside = any(b is not a and b['pid'] == a['pid'] and b['tid'] == a['tid'] and b['ts'] <= a['ts']
                     and a['ts'] + a['dur'] <= b['ts'] + b['dur'] for b in ann)
        steps += not inside
    return dict(events=len(kept), kernels=len(kernels), linked=linked, comm=comm,
                max_fanout=max(fan.values()) if fan else 0, steps=steps)

root = sys.argv[1] if len(sys.argv) > 1 else '../shared/data/traces'
for dp, _, fs in sorted(os.walk(root)):
    for f in sorted(fs):
        if f.endswith('.json.gz') or f.endswith('.json'):
            p = os.path.join(dp, f)
            print(os.path.relpath(p, root), count(p))
