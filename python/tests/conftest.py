"""Fixtures of the Python package's tests: the repository, the shared real traces (read in
place), the build's `teller` program and a simulated faulty case it writes.

`make test-python` sets TELLER_LIBRARY (the build's libteller.so) and TELLER_CLI; the
package is imported from python/ unless it is installed."""
import os
import subprocess
import sys

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
TRACES = os.path.join(ROOT, "..", "shared", "data", "traces")
sys.path.insert(0, os.path.join(ROOT, "python"))


def trace(*parts):
    return os.path.join(TRACES, *parts)


TWO_RANKS = [trace("hta", "trace_filter", "sampled_rank-0.json.gz"),
             trace("hta", "trace_filter", "sampled_rank-1.json.gz")]


@pytest.fixture(scope="session")
def cli():
    path = os.environ.get("TELLER_CLI", os.path.join(ROOT, "build", "teller"))
    assert os.access(path, os.X_OK), "the teller program is missing: %s (make all)" % path
    return path


@pytest.fixture(scope="session")
def case(cli, tmp_path_factory):
    """A simulated 2-rank vLLM run with injected faults and logs (teller simulate)."""
    out = str(tmp_path_factory.mktemp("case") / "case")
    subprocess.run([cli, "simulate", "-o", out, "--nodes", "1", "--gpus-per-node", "2", "--steps", "30",
                    "--fault", "all", "--fault-rate", "0.2", "--seed", "3"], check=True, stdout=subprocess.DEVNULL)
    return out
