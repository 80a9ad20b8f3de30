"""teller.diagnose against `teller diagnose` on the same simulated faulty case."""
import json
import os
import subprocess

import pandas  # noqa: F401
import pytest

import teller
from conftest import TRACES


@pytest.fixture(scope="module")
def cli_preds(cli, case, tmp_path_factory):
    out = str(tmp_path_factory.mktemp("cli") / "pred.json")
    subprocess.run([cli, "diagnose", "-q", "--json", out, case], check=True, stdout=subprocess.DEVNULL)
    with open(out) as f:
        return json.load(f)


@pytest.fixture(scope="module")
def diag(case):
    return teller.diagnose(case, stat_baseline="zscore", jobs=2)


def test_same_steps_as_the_cli(diag, cli_preds):
    want = cli_preds["steps"]
    got = diag.steps.to_dict("records")
    assert len(got) == len(want) == 30
    for g, w in zip(got, want):
        assert (g["step"], g["abnormal"], g["fault_type"]) == (w["step"], w["abnormal"], w["fault_type"])
        assert g["explanation"] == w["explanation"]
    assert diag.predictions == cli_preds


def test_findings_and_evidence(diag):
    ab = diag.abnormal
    assert len(ab) > 0
    f = diag.findings
    assert set(ab["step"]) <= set(f["step"])
    first = f[f["order"] == 0].set_index("step")
    for _, s in ab.iterrows():
        assert first.loc[s["step"], "op"] == s["op"]
    # the case's log (logs/node0.log, found as the CLI finds it) gives log evidence
    e = diag.evidence
    assert "log" in set(e["kind"])
    assert e[e["kind"] == "log"]["file"].str.endswith("node0.log").all()


def test_baseline_beside(diag):
    b = diag.stat_baseline
    assert len(b) == len(diag.steps)
    assert set(b.columns) >= {"step", "abnormal", "score", "fault_type", "rank", "op"}


def test_reports(diag, tmp_path):
    html = diag.to_html(str(tmp_path / "r.html"))
    text = open(html, encoding="utf-8").read()
    assert text.lstrip().lower().startswith("<!doctype html")
    assert "data-explains" in text
    pf = json.load(open(diag.to_perfetto(str(tmp_path / "t.json"))))
    assert any(e.get("name") == "process_name" for e in pf["traceEvents"])
    r = diag._repr_html_()
    n = int(diag.steps["abnormal"].sum())
    assert "%d steps, %d abnormal" % (len(diag.steps), n) in r
    assert r.count("<tr>") == min(n, 20) + 1


def test_repr_escapes_trace_text(diag):
    d = diag
    d.predictions["steps"][0].update(abnormal=True, explanation="<script>x</script>")
    assert "<script>" not in d._repr_html_()


def test_a_new_diagnosis_retires_the_old_ones_reports(case, tmp_path):
    run = teller.load(case)
    d1 = run.diagnose()
    d2 = run.diagnose(spreads=6)
    with pytest.raises(teller.TellerError, match="diagnosed again"):
        d1.to_html(str(tmp_path / "old.html"))
    d2.to_html(str(tmp_path / "new.html"))
    # a looser alarm flags no more steps
    assert d2.steps["abnormal"].sum() <= d1.steps["abnormal"].sum()


def test_logs_given_explicitly(case):
    d = teller.diagnose(os.path.join(case, "rank0.trace.json.gz"), logs=[], model=False)
    assert len(d.steps) > 0
    assert not (d.evidence["kind"] == "log").any()


def test_baseline_as_the_cli(cli, tmp_path):
    """A one-step recording with a regressed kernel, against its unperturbed self."""
    ref = os.path.join(TRACES, "tracelens", "mi300", "Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz")
    case, out = str(tmp_path / "case"), str(tmp_path / "pred.json")
    subprocess.run([cli, "perturb", "-q", "-o", case, "--fault", "kernel_regression", "--rate", "1", "--seed",
                    "100003", ref], check=True, stdout=subprocess.DEVNULL)
    subprocess.run([cli, "diagnose", "-q", "--no-model", "--baseline", ref, "--json", out, case], check=True,
                   stdout=subprocess.DEVNULL)
    with open(out) as f:
        want = json.load(f)
    got = teller.diagnose(case, baseline=ref, model=False)
    assert got.predictions == want and want["judged_by"] == {"by": "numeric stage"}
    # without model=, the built-in model judges, as the command does without --no-model
    subprocess.run([cli, "diagnose", "-q", "--baseline", ref, "--json", out, case], check=True,
                   stdout=subprocess.DEVNULL)
    with open(out) as f:
        assert teller.diagnose(case, baseline=ref).predictions == json.load(f)
    assert want["steps"][0]["abnormal"] and got.steps.iloc[0]["by_reference"]
    # alone the regressed kernel flags the step too, judged by its own calls
    alone = teller.diagnose(case, model=False).predictions["steps"][0]
    assert alone["abnormal"] and not alone["by_reference"]
    assert teller.load(ref).reference().steps == 1
