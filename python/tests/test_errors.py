"""Failures come back as TellerError with the library's file, offset and message."""
import gzip
import shutil

import pytest

import teller
from conftest import TWO_RANKS


def test_missing_file():
    with pytest.raises(teller.TellerError) as e:
        teller.load("/no/such/trace.json")
    assert e.value.status == "io"
    assert e.value.file == "/no/such/trace.json"
    assert "/no/such/trace.json" in str(e.value)


def test_malformed_json_names_the_offset(tmp_path):
    p = tmp_path / "bad.json"
    p.write_text('{"traceEvents": [{"ph": "X", "name": "k", "ts": 1, "dur": 2}, {"ph": ]}')
    with pytest.raises(teller.TellerError) as e:
        teller.load(str(p))
    assert e.value.status in ("format", "truncated")
    assert e.value.file == str(p)
    assert e.value.offset > 40
    assert str(e.value).startswith("%s:%d: " % (p, e.value.offset))


def test_truncated_gzip(tmp_path):
    data = open(TWO_RANKS[0], "rb").read()
    p = tmp_path / "cut.json.gz"
    p.write_bytes(data[: len(data) // 2])
    with pytest.raises(teller.TellerError) as e:
        teller.load(str(p))
    assert e.value.file == str(p)


def test_two_files_of_one_rank_are_not_one_run(tmp_path):
    copy = tmp_path / "again.json.gz"
    shutil.copy(TWO_RANKS[0], copy)
    # the same bytes under another name: another file holding rank 0
    with gzip.open(copy, "rb") as f:
        (tmp_path / "again.json").write_bytes(f.read())
    with pytest.raises(teller.TellerError) as e:
        teller.load([TWO_RANKS[0], str(tmp_path / "again.json")])
    assert e.value.status == "arg"
    assert "rank" in e.value.message
    run = teller.load([TWO_RANKS[0], str(tmp_path / "again.json")], force=True)
    assert run.num_sources == 2


def test_bad_baseline_and_no_traces(tmp_path):
    with pytest.raises(teller.TellerError, match="zscore or gmm"):
        teller.load(TWO_RANKS[0]).diagnose(stat_baseline="median")
    with pytest.raises(teller.TellerError):
        teller.load([])
    with pytest.raises(teller.TellerError) as e:
        teller.load(str(tmp_path))
    assert e.value.file == str(tmp_path)


def test_bad_log_is_an_error_naming_it():
    run = teller.load(TWO_RANKS[0])
    with pytest.raises(teller.TellerError) as e:
        run.diagnose(logs=["/no/such/node0.log"])
    assert e.value.file == "/no/such/node0.log"
