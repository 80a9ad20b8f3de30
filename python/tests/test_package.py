"""The package as users get it: installed offline with pip, without pandas, and the worked
example (examples/notebook.py) run end to end."""
import json
import os
import shutil
import subprocess
import sys

from conftest import ROOT, TWO_RANKS

PY = sys.executable


def test_pip_install_offline(tmp_path):
    target = str(tmp_path / "site")
    # from a copy: setuptools builds in the source tree
    src = str(tmp_path / "src")
    shutil.copytree(os.path.join(ROOT, "python"), src, ignore=shutil.ignore_patterns("tests", "__pycache__"))
    subprocess.run([PY, "-m", "pip", "install", "-q", "--no-build-isolation", "--no-index", "--no-deps",
                    "--target", target, src], check=True,
                   env=dict(os.environ, PIP_NO_CACHE_DIR="1"), cwd=str(tmp_path))
    out = subprocess.run([PY, "-c", "import teller; print(teller.__file__); print(len(teller.load(%r).kernels()))"
                          % TWO_RANKS[0]], check=True, capture_output=True, text=True, cwd=str(tmp_path),
                         env=dict(os.environ, PYTHONPATH=target)).stdout.split()
    assert out[0].startswith(target)
    assert int(out[1]) == 1204


def test_lists_of_dicts_without_pandas():
    code = """
import sys
sys.modules["pandas"] = None
sys.path.insert(0, %r)
import teller
assert not teller.HAVE_PANDAS
run = teller.load(%r)
k = run.kernels()
s = run.steps()
c = run.collectives()
d = run.diagnose()
assert isinstance(k, list) and isinstance(k[0], dict)
import json
print(json.dumps({"kernels": len(k), "compute": sum(1 for r in k if r["kind"] == "kernel"), "name": k[0]["name"],
                  "steps": len(s), "annotation": s[0]["annotation"], "collectives": len(c),
                  "diag_steps": type(d.steps).__name__}))
""" % (os.path.join(ROOT, "python"), TWO_RANKS)
    out = json.loads(subprocess.run([PY, "-c", code], check=True, capture_output=True, text=True).stdout)
    import teller
    run = teller.load(TWO_RANKS)
    k = run.kernels()
    assert out["kernels"] == len(k)
    assert out["compute"] == int((k["kind"] == "kernel").sum())
    assert out["name"] == k["name"][0]
    assert out["annotation"] == run.steps()["annotation"][0]
    assert out["collectives"] == len(run.collectives())
    assert out["diag_steps"] == "list"


def test_the_example_runs(case, tmp_path):
    out = subprocess.run([PY, os.path.join(ROOT, "examples", "notebook.py"), "--traces", *TWO_RANKS,
                          "--case", case, "--out", str(tmp_path)], check=True, capture_output=True, text=True,
                         env=dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"))).stdout
    assert "abnormal" in out
    assert os.path.getsize(tmp_path / "report.html") > 10000
