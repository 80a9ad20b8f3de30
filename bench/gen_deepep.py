#!/usr/bin/env python3
# A healthy 4-rank expert-parallel MoE run in the Kineto format, for
# `teller perturb` to put faults in: per step 4 MoE layers of attention
# gemm, DeepEP notify_dispatch, dispatch, expert gemm, combine (the names
# and launch shapes of DeepEP csrc/kernels/intranode.cu), DeepEP's kernels
# on its own stream. Each DeepEP kernel ends when the last rank arrived
# plus its transfer time.
#   bench/gen_deepep.py OUT_DIR     (writes OUT_DIR/rank<R>.trace.json)
# e.g. a slow rank found at the root:
#   teller perturb --fault gpu_throttle --rate 0.2 --seed 3 -o CASE OUT_DIR
#   teller diagnose CASE
import json, random, sys
R, STEPS, LAYERS = 4, 24, 4
random.seed(7)
K = {
 'attn': ("void cutlass::Kernel2<cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_64x4_tn_align8>(cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_64x4_tn_align8::Params)", 7, [132,1,1], [128,1,1]),
 'notify': ("void deep_ep::intranode::notify_dispatch<4>(int const*, int*, int const*, int*, int, int, int, bool const*, int*, int*, int, int, void**, int**, int, int)", 21, [5,1,1], [128,1,1]),
 'dispatch': ("void deep_ep::intranode::dispatch<4, 768, 8192>(int4*, float*, int*, long*, float*, int*, int*, int4 const*, float const*, long const*, float const*, bool const*, int const*, int, int, int, int, int, void**, int, int, int)", 21, [20,1,1], [768,1,1]),
 'expert': ("void cutlass::Kernel2<cutlass_80_tensorop_bf16_s16816gemm_grouped_bf16_128x128_32x4_tn_align8>(cutlass_80_tensorop_bf16_s16816gemm_grouped_bf16_128x128_32x4_tn_align8::Params)", 7, [264,1,1], [256,1,1]),
 'combine': ("void deep_ep::intranode::combine<__nv_bfloat16, 4, 768, 4096>(__nv_bfloat16*, float*, __nv_bfloat16 const*, float const*, __nv_bfloat16 const*, __nv_bfloat16 const*, int const*, int const*, int const*, int*, int, int, int, void**, int, int, int)", 21, [20,1,1], [768,1,1]),
}
COMM = {'notify': 10.0, 'dispatch': 60.0, 'combine': 50.0}
WORK = {'attn': 200.0, 'expert': 300.0}
ev = [[] for _ in range(R)]
corr = [0]*R
gpu = [0.0]*R
t = 1000.0
for k in range(STEPS):
    host = [t + random.uniform(5, 20) for _ in range(R)]
    start = list(host)
    for l in range(LAYERS):
        for op in ('attn', 'notify', 'dispatch', 'expert', 'combine'):
            name, stream, grid, block = K[op]
            arrive = []
            for r in range(R):
                corr[r] += 1
                ev[r].append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernelExC" if op in COMM else "cudaLaunchKernel",
                              "pid": 100 + r, "tid": 100 + r, "ts": round(host[r], 3), "dur": 4.0, "args": {"correlation": corr[r], "External id": corr[r]}})
                host[r] += 6.0
                arrive.append(max(host[r] - 2.0, gpu[r]))
            if op in COMM:
                end = max(arrive) + COMM[op] * random.uniform(0.97, 1.03)
                durs = [end - a for a in arrive]
            else:
                durs = [WORK[op] * random.uniform(0.98, 1.02) for _ in range(R)]
            for r in range(R):
                ev[r].append({"ph": "X", "cat": "kernel", "name": name, "pid": r, "tid": stream, "ts": round(arrive[r], 3), "dur": round(durs[r], 3),
                              "args": {"External id": corr[r], "device": r, "stream": stream, "correlation": corr[r], "grid": grid, "block": block}})
                gpu[r] = arrive[r] + durs[r]
    for r in range(R):
        corr[r] += 1
        end = max(gpu[r], host[r]) + 3.0
        ev[r].append({"ph": "X", "cat": "cuda_runtime", "name": "cudaStreamSynchronize", "pid": 100 + r, "tid": 100 + r, "ts": round(host[r], 3), "dur": round(end - host[r], 3), "args": {"correlation": corr[r]}})
        ev[r].append({"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#%d" % k, "pid": 100 + r, "tid": 100 + r, "ts": round(start[r] - 2, 3), "dur": round(end + 5 - start[r], 3)})
    t = max(max(gpu), max(host)) + 50.0
for r in range(R):
    doc = {"schemaVersion": 1, "distributedInfo": {"backend": "nccl", "rank": r, "world_size": R}, "deviceProperties": [{"id": i, "name": "NVIDIA H100 80GB HBM3"} for i in range(R)],
           "traceEvents": ev[r], "baseTimeNanoseconds": 1795000000000000000}
    json.dump(doc, open("%s/rank%d.trace.json" % (sys.argv[1], r), "w"))
