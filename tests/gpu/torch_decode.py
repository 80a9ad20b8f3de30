"""torch_decode.py - the decode step of gemm_app in PyTorch, for the GPU check
(scripts/gpu-check.sh): GEMMS torch.mm of 128 x 128 bf16 a step, launched one
by one or as a CUDA graph, each step in an NVTX ProfilerStep#N range, timed
on the host; bare, or under torch.profiler (Kineto: CUPTI, as teller's
collector) with CUDA activities alone or CPU ones too. Prints one line with
steps_per_s, like gemm_app. Needs PyTorch with a CUDA device.

    python3 tests/gpu/torch_decode.py bare|kineto_cuda|kineto_all GRAPH(0|1) STEPS GEMMS
"""
import sys
import time

import torch


def make_step(gemms, graph):
    """The step's work: a function that runs it once."""
    dev = torch.device("cuda")
    a = torch.randn(128, 128, device=dev, dtype=torch.bfloat16)
    b = torch.randn(128, 128, device=dev, dtype=torch.bfloat16)
    out = torch.empty(128, 128, device=dev, dtype=torch.bfloat16)

    def body():
        for _ in range(gemms):
            torch.mm(a, b, out=out)

    body()  # warm-up: kernels loaded, heuristics chosen
    torch.cuda.synchronize()
    if not graph:
        return body
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        body()
    torch.cuda.current_stream().wait_stream(side)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        body()
    g.replay()  # the first replay uploads the graph
    torch.cuda.synchronize()
    return g.replay


def run(step, steps):
    t0 = time.perf_counter()
    for i in range(steps):
        torch.cuda.nvtx.range_push(f"ProfilerStep#{i}")
        step()
        torch.cuda.synchronize()
        torch.cuda.nvtx.range_pop()
    return time.perf_counter() - t0


def main():
    if len(sys.argv) != 5 or sys.argv[1] not in ("bare", "kineto_cuda", "kineto_all") or sys.argv[2] not in ("0", "1"):
        sys.exit(__doc__)
    mode, graph, steps, gemms = sys.argv[1], sys.argv[2] == "1", int(sys.argv[3]), int(sys.argv[4])
    step = make_step(gemms, graph)
    if mode == "bare":
        dt = run(step, steps)
    else:
        acts = [torch.profiler.ProfilerActivity.CUDA]
        if mode == "kineto_all":
            acts.append(torch.profiler.ProfilerActivity.CPU)
        with torch.profiler.profile(activities=acts):
            dt = run(step, steps)
    print(f"mode {mode} graph {int(graph)} steps {steps} gemms {gemms} seconds {dt:.4f} "
          f"steps_per_s {steps / dt:.2f}", flush=True)


if __name__ == "__main__":
    main()
