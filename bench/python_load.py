#!/usr/bin/env python3
"""python_load.py - the Python package's load benchmark (issue 34): a Kineto trace into a
DataFrame of its GPU kernels, through teller (teller.load + run.kernels()) and the way HTA
builds its frames (json.load + pandas.DataFrame of the events, then the kernel rows), each in
a fresh child process of this script so that each has its own peak memory.

Reports wall time and peak resident memory (and the peak above the process after its imports),
and the ratios. Targets, from the issue: teller >= 10x faster and >= 10x less memory. A
benchmark reports; it does not fail.

usage: python_load.py TRACE [--jobs N]     (TELLER_LIBRARY: the libteller.so to use)
"""
import json
import os
import resource
import subprocess
import sys
import time


def rss_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def child(method, path, jobs):
    import pandas as pd
    if method == "teller":
        import teller
    base = rss_mb()
    t0 = time.perf_counter()
    if method == "teller":
        run = teller.load(path, jobs=jobs)
        k = run.kernels()
        k = k[k["kind"] == "kernel"]
    else:
        with open(path) as f:
            trace = json.load(f)
        df = pd.DataFrame(trace["traceEvents"])
        k = df[df["cat"] == "kernel"]
    sec = time.perf_counter() - t0
    print(json.dumps({"method": method, "seconds": sec, "kernels": len(k), "peak_mb": rss_mb(),
                      "import_mb": base}))


def main():
    if len(sys.argv) > 2 and sys.argv[1] == "--child":
        child(sys.argv[2], sys.argv[3], int(sys.argv[4]))
        return
    if len(sys.argv) < 2:
        sys.exit(__doc__.strip().splitlines()[-1])
    path = sys.argv[1]
    jobs = int(sys.argv[sys.argv.index("--jobs") + 1]) if "--jobs" in sys.argv else 1
    with open(path, "rb") as f:  # the page cache, for both
        while f.read(1 << 24):
            pass
    res = {}
    for m in ("teller", "json"):
        out = subprocess.run([sys.executable, __file__, "--child", m, path, str(jobs)], check=True,
                             capture_output=True, text=True).stdout
        res[m] = json.loads(out)
    t, j = res["teller"], res["json"]
    print("python load benchmark: %.1f MB trace, %d kernels (teller %d), teller jobs=%d"
          % (os.path.getsize(path) / 1e6, j["kernels"], t["kernels"], jobs))
    print("%-44s %10s %12s %16s" % ("method", "seconds", "peak MB", "above imports"))
    for name, r in (("teller.load + run.kernels()", t), ("json.load + pandas.DataFrame + filter", j)):
        print("%-44s %10.2f %12.0f %16.0f" % (name, r["seconds"], r["peak_mb"], r["peak_mb"] - r["import_mb"]))
    speed = j["seconds"] / t["seconds"]
    mem = (j["peak_mb"] - j["import_mb"]) / max(t["peak_mb"] - t["import_mb"], 1)
    print("speedup %.1fx (target >= 10x: %s); memory above imports %.1fx less (target >= 10x: %s)"
          % (speed, "PASS" if speed >= 10 else "FALL SHORT", mem, "PASS" if mem >= 10 else "FALL SHORT"))


if __name__ == "__main__":
    main()
