#!/usr/bin/env python3
"""notebook.py - teller from Python, as notebook cells (`# %%`: Jupyter, VS Code and
jupytext open it as a notebook; `python3 examples/notebook.py` runs it top to bottom).

Loads real traces into DataFrames, asks where the time went, then diagnoses a faulty run
and writes its report. CI runs it (python/tests/test_package.py); it writes only under --out.

usage: notebook.py [--traces TRACE...] [--case CASE_DIR] [--out DIR]
  --traces  one run's traces (default: two ranks of HTA's sample in ../shared)
  --case    a run with logs to diagnose (default: one `teller simulate` writes under --out)
  --out     where the report goes (default: a new temporary directory)
"""
# %% Setup
import argparse
import os
import shutil
import subprocess
import tempfile

import teller

HERE = os.path.dirname(os.path.abspath(__file__))
SAMPLE = os.path.join(HERE, "..", "..", "shared", "data", "traces", "hta", "trace_filter")
ap = argparse.ArgumentParser()
ap.add_argument("--traces", nargs="+", default=[os.path.join(SAMPLE, "sampled_rank-%d.json.gz" % r) for r in (0, 1)])
ap.add_argument("--case")
ap.add_argument("--out")
args, _ = ap.parse_known_args()
out = args.out or tempfile.mkdtemp(prefix="teller-example-")
print("teller", teller.library_version(), "(pandas)" if teller.HAVE_PANDAS else "(no pandas: lists of dicts)")

# %% Load one run: every rank's trace
run = teller.load(args.traces, jobs=2)
kernels, steps = run.kernels(), run.steps()
print(len(kernels), "GPU ops on", run.num_sources, "ranks,", len(steps), "step rows")

# %% Where the time went, per step and rank
if teller.HAVE_PANDAS:
    steps["idle_share"] = steps["gpu_idle_ns"] / steps["dur_ns"]
    print(steps[["step", "rank", "annotation", "dur_ns", "kernel_ns", "comm_ns", "idle_share"]].to_string())
else:
    for s in steps:
        print(s["step"], s["rank"], s["annotation"], s["dur_ns"], s["kernel_ns"], s["comm_ns"])

# %% The kernels that take the most time, over all ranks
if teller.HAVE_PANDAS:
    top = (kernels[kernels["kind"] == "kernel"].groupby("name", observed=True)["dur_ns"]
           .agg(["count", "sum"]).sort_values("sum", ascending=False).head(5))
    top.index = [n[:60] for n in top.index]
    print(top.to_string())

# %% Collectives: how long the first rank in waited for the last
coll = run.collectives()
if teller.HAVE_PANDAS and len(coll):
    spread = coll.groupby("instance")["start_ns"].agg(lambda s: s.max() - s.min())
    print("collectives:", spread.size, "instances; median start skew %.3f ms" % (spread.median() / 1e6))

# %% Diagnose a faulty run (with its logs) and write the report
case = args.case
if not case:
    cli = os.environ.get("TELLER_CLI") or shutil.which("teller")
    case = os.path.join(out, "case")
    subprocess.run([cli, "simulate", "-o", case, "--nodes", "1", "--gpus-per-node", "2", "--steps", "30",
                    "--fault", "all", "--fault-rate", "0.2", "--seed", "3"], check=True, stdout=subprocess.DEVNULL)
d = teller.diagnose(case, stat_baseline="zscore")
print(d)
ab = d.abnormal
print(ab[["step", "score", "fault_type", "rank", "op"]].to_string() if teller.HAVE_PANDAS else ab)
print("report:", d.to_html(os.path.join(out, "report.html")))
