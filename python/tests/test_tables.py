"""The run's tables against the library's own command line on the same real traces."""
import json
import subprocess

import pandas  # noqa: F401 (scripts/install-deps installs python3-pandas: these tables are DataFrames)
import pytest

import teller
from conftest import TWO_RANKS, trace


def cli_json(cli, *args):
    return json.loads(subprocess.run([cli, *args], check=True, capture_output=True, text=True).stdout)


def test_kernels_are_every_gpu_op_the_cli_counts(cli):
    run = teller.load(TWO_RANKS, jobs=2)
    k = run.kernels()
    stats = cli_json(cli, "stats", "--json", *TWO_RANKS)
    assert len(k) == stats["gpu_ops"]
    assert (k["kind"] == "kernel").sum() == stats["kernels"]
    assert (k["kind"] == "memcpy").sum() == stats["by_layer"]["memcpy"]
    assert sorted(k["rank"].unique()) == [0, 1]
    assert (k["dur_ns"] >= 0).all()
    # every kernel was launched by an API call in these traces
    assert (k["launch"] != "").all()
    assert k["comm"].sum() == stats["comm_kernels"]


def test_steps_match_teller_steps(cli):
    run = teller.load(TWO_RANKS)
    s = run.steps()
    ref = cli_json(cli, "steps", "--json", *TWO_RANKS)
    rows = ref["steps"] if isinstance(ref, dict) else ref
    assert len(s) == len(rows)
    for got, want in zip(s.to_dict("records"), rows):
        assert (got["step"], got["rank"]) == (want["step"], want["rank"])
        assert got["dur_ns"] == want["dur_ns"]
        assert got["kernel_ns"] == want["kernel_ns"]
        assert got["annotation"] == want["marker"]
    assert set(s["kind"]) == {"iteration"}
    assert s["annotation"].str.startswith("ProfilerStep#").all()


def test_collectives_pair_the_ranks():
    run = teller.load(TWO_RANKS)
    c = run.collectives()
    assert len(c) > 0
    per = c.groupby("instance")["rank"].apply(sorted)
    assert all(r == [0, 1] for r in per)
    assert (c["members"] == 2).all()
    # a collective's kernel is one of the run's communication kernels
    k = run.kernels().set_index("event")
    assert k.loc[c["kernel"], "comm"].all()


def test_names_are_the_trace_text():
    run = teller.load(trace("tracelens", "b200", "eager_trace.json.gz"))
    k = run.kernels()
    assert k["name"].str.len().min() > 0
    assert any("gemm" in n or "nvjet" in n for n in k["name"].cat.categories)
    assert run.num_sources == 1
    assert isinstance(run.warnings, list)


def test_closed_run_is_an_error():
    run = teller.load(TWO_RANKS[0])
    run.close()
    with pytest.raises(teller.TellerError, match="closed"):
        run.kernels()
