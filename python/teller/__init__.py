"""teller - diagnose slow or hung steps of LLM inference services, from Python.

    run = teller.load(paths, jobs=None)          # traces (files or directories) as one run
    run.steps(); run.kernels(); run.collectives()  # tables: pandas DataFrames, or lists of dicts
    d = teller.diagnose(paths, logs=None, stat_baseline=None)
    d.steps; d.findings; d.evidence; d.stat_baseline; d.to_html(path)

Everything runs in libteller.so (include/teller/run.h); this package turns its rows into
tables. Errors raise TellerError with the file, byte offset and message the library gave.
"""
import ctypes
import glob
import html
import json
import os

from . import _lib
from ._lib import lib

try:
    import numpy as _np
    import pandas as _pd
except ImportError:  # the tables are lists of dicts without pandas
    _np = _pd = None

__all__ = ["TellerError", "Run", "Diagnosis", "Reference", "load", "diagnose", "version", "library_version", "HAVE_PANDAS"]
__version__ = "0.2.0"
HAVE_PANDAS = _pd is not None


class TellerError(Exception):
    """A failure the library reported: status (io, format, truncated, nomem, arg, limit), the
    file it concerns, the byte offset in it (of the decompressed input; 0 when unknown), the
    1-based line where the reader counts lines (0 otherwise) and the message."""

    def __init__(self, status, file, offset, message, line=0):
        self.status, self.file, self.offset, self.line, self.message = status, file, offset, line, message
        where = "%s:%d" % (file, offset) if file and offset else file
        super().__init__("%s: %s" % (where, message) if where else message)


def _check(rc, err):
    if rc != 0:
        dec = lambda b: b.decode("utf-8", "replace")
        raise TellerError(_lib.STATUS.get(rc, str(rc)), dec(err.file), int(err.offset), dec(err.msg), int(err.line))


def library_version():
    """The version of the libteller.so in use ("0.2.0")."""
    return lib.teller_version().decode()


version = library_version


def _paths(paths):
    if isinstance(paths, (str, bytes, os.PathLike)):
        paths = [paths]
    paths = [os.fsencode(p) for p in paths]
    if not paths:
        raise TellerError("arg", "", 0, "no trace given")
    return (ctypes.c_char_p * len(paths))(*paths), len(paths)


def _rows(fn, handle, rowtype):
    """The count-then-fill convention of run.h: rows in a numpy record array (or a ctypes array)."""
    err, n = _lib.Error(), ctypes.c_size_t(0)
    _check(fn(handle, None, 0, ctypes.byref(n), ctypes.byref(err)), err)
    if _np is not None:
        rows = _np.zeros(n.value, dtype=_np.dtype(rowtype))
        ptr = rows.ctypes.data if n.value else None
    else:
        rows = (rowtype * n.value)()
        ptr = ctypes.addressof(rows) if n.value else None
    if n.value:
        _check(fn(handle, ptr, n.value, ctypes.byref(n), ctypes.byref(err)), err)
    return rows


class Run:
    """One run (the traces of its ranks) loaded by libteller; see load()."""

    def __init__(self, handle):
        self._h = handle
        self._st = lib.teller_run_store(handle)
        self._diagnoses = 0

    def close(self):
        """Frees the library's memory now (otherwise when the object goes)."""
        if self._h:
            lib.teller_run_free(self._h)
            self._h = self._st = None

    def __del__(self):
        self.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _handle(self):
        if not self._h:
            raise TellerError("arg", "", 0, "the run is closed")
        return self._h

    def _str(self, i):
        return lib.teller_store_str(self._st, int(i)).decode("utf-8", "replace")

    @property
    def num_sources(self):
        """Trace files (or processes inside one) loaded: one per rank."""
        return lib.teller_store_num_sources(self._st)

    @property
    def warnings(self):
        """What the readers skipped (the first 64 messages; num_warnings counts them all)."""
        return [lib.teller_store_warning_msg(self._st, i).decode("utf-8", "replace")
                for i in range(lib.teller_store_num_warning_msgs(self._st))]

    @property
    def num_warnings(self):
        return lib.teller_store_num_warnings(self._st)

    def _names(self, ids):
        """Interned ids -> a Categorical of their text (pandas), each distinct id looked up once."""
        uniq, codes = _np.unique(ids, return_inverse=True)
        return _pd.Categorical.from_codes(codes.astype(_np.int32), [self._str(i) for i in uniq])

    @staticmethod
    def _step(col):
        return _np.where(col == _lib.NONE, -1, col.astype(_np.int64))

    def steps(self):
        """Per step and rank: window (start_ns, dur_ns), kernel, comm and copy time, GPU busy and
        idle time, kernels and launches, the step's annotation and its kind."""
        rows = _rows(lib.teller_run_steps, self._handle(), _lib.StepRow)
        cols = [f for f, _ in _lib.StepSummary._fields_]
        if _pd is None:
            return [dict({c: getattr(r.sum, c) for c in cols}, gpu_known=bool(r.sum.gpu_known),
                         annotation=self._str(r.annotation), kind=_lib.STEP_KINDS[r.kind]) for r in rows]
        s = rows["sum"]
        df = _pd.DataFrame({c: s[c] for c in cols})
        df["gpu_known"] = df["gpu_known"].astype(bool)
        df["annotation"] = self._names(rows["annotation"]) if len(rows) else []
        df["kind"] = _pd.Categorical.from_codes(rows["kind"].astype(_np.int32), _lib.STEP_KINDS)
        return df

    def kernels(self):
        """Every GPU kernel, copy and memset: name, rank, node, device, stream, step (-1 outside
        every step), start_ns, dur_ns, bytes (copies), kind, comm, the launching call's name,
        correlation id and event index."""
        rows = _rows(lib.teller_run_kernels, self._handle(), _lib.KernelRow)
        kinds = {5: "kernel", 6: "memcpy", 7: "memset"}
        if _pd is None:
            return [{"name": self._str(r.name), "rank": r.rank, "node": r.node, "device": r.device,
                     "stream": r.stream, "step": -1 if r.step == _lib.NONE else r.step, "start_ns": r.start_ns,
                     "dur_ns": r.dur_ns, "bytes": r.bytes, "kind": kinds[r.layer], "comm": bool(r.comm),
                     "launch": self._str(r.launch), "corr": r.corr, "event": r.event} for r in rows]
        return _pd.DataFrame({
            "name": self._names(rows["name"]), "rank": rows["rank"], "node": rows["node"],
            "device": rows["device"], "stream": rows["stream"], "step": self._step(rows["step"]),
            "start_ns": rows["start_ns"], "dur_ns": rows["dur_ns"], "bytes": rows["bytes"],
            "kind": _pd.Categorical.from_codes(rows["layer"].astype(_np.int32) - 5, ["kernel", "memcpy", "memset"]),
            "comm": rows["comm"].astype(bool), "launch": self._names(rows["launch"]),
            "corr": rows["corr"], "event": rows["event"]})

    def collectives(self):
        """Every rank's part in every collective matched across ranks: instance, key, seq,
        members, rank, the collective's op, its kernel's name, start_ns, dur_ns, bytes, step."""
        rows = _rows(lib.teller_run_collectives, self._handle(), _lib.CollRow)
        if _pd is None:
            return [{"instance": r.instance, "key": self._str(r.key), "seq": r.seq, "members": r.members,
                     "rank": r.rank, "op": self._str(r.op), "name": self._str(r.name), "start_ns": r.start_ns,
                     "dur_ns": r.dur_ns, "bytes": r.bytes, "step": -1 if r.step == _lib.NONE else r.step,
                     "kernel": r.kernel} for r in rows]
        return _pd.DataFrame({
            "instance": rows["instance"], "key": self._names(rows["key"]), "seq": rows["seq"],
            "members": rows["members"], "rank": rows["rank"], "op": self._names(rows["op"]),
            "name": self._names(rows["name"]), "start_ns": rows["start_ns"], "dur_ns": rows["dur_ns"],
            "bytes": rows["bytes"], "step": self._step(rows["step"]), "kernel": rows["kernel"]})

    def reference(self):
        """What this run, as a healthy reference, says is usual: a Reference to diagnose another run
        against (Run.diagnose's baseline)."""
        err, ref = _lib.Error(), ctypes.c_void_p()
        _check(lib.teller_run_reference(self._handle(), ctypes.byref(ref), ctypes.byref(err)), err)
        return Reference(ref)

    def diagnose(self, logs=None, stat_baseline=None, model=None, tz_offset=0, threshold=None, spreads=None,
                 jobs=None, baseline=None):
        """Diagnoses the run: see teller.diagnose; baseline: None or a Reference (Run.reference).
        Returns a Diagnosis."""
        h = self._handle()
        err = _lib.Error()
        opts = lib.teller_diag_defaults()
        logs = [os.fsencode(p) for p in (logs or [])]
        arr = (ctypes.c_char_p * max(len(logs), 1))(*logs)
        opts.logs, opts.nlogs = ctypes.cast(arr, ctypes.POINTER(ctypes.c_char_p)), len(logs)
        opts.log_tz_offset_s = int(tz_offset)
        if threshold is not None:
            opts.threshold = float(threshold)
        if spreads is not None:
            opts.spreads = float(spreads)
        opts.jobs = int(jobs or 0)
        if baseline is not None:
            opts.reference = baseline._ptr
        m = ctypes.c_void_p()
        if model is None:
            _check(lib.teller_model_load_default(ctypes.byref(m), ctypes.byref(err)), err)
        elif model is not False:
            _check(lib.teller_model_load(os.fsencode(model), ctypes.byref(m), ctypes.byref(err)), err)
        opts.model = m
        try:
            _check(lib.teller_run_diagnose(h, ctypes.byref(opts), None, ctypes.byref(err)), err)
        finally:
            lib.teller_model_free(m)
        if stat_baseline is not None:
            _check(lib.teller_run_baseline(h, str(stat_baseline).encode(), ctypes.byref(err)), err)
        return Diagnosis(self, stat_baseline is not None)

    def _render(self, what):
        err, buf, n = _lib.Error(), ctypes.c_void_p(), ctypes.c_size_t(0)
        _check(lib.teller_run_render(self._handle(), what, ctypes.byref(buf), ctypes.byref(n), ctypes.byref(err)),
               err)
        try:
            return ctypes.string_at(buf, n.value)
        finally:
            lib.teller_free(buf)


class Reference:
    """What a healthy reference run says is usual (Run.reference): its kinds of step and their
    yardsticks, each operator's usual time; freed with the object."""

    def __init__(self, ptr):
        self._ptr = ptr

    @property
    def steps(self):
        """The reference's steps its yardsticks are made of."""
        return lib.teller_diag_reference_steps(self._ptr)

    def __del__(self):
        if getattr(self, "_ptr", None):
            lib.teller_diag_reference_free(self._ptr)
            self._ptr = None


def _table(records, columns):
    return _pd.DataFrame(records, columns=columns) if _pd is not None else records


_STEP_COLS = ["step", "abnormal", "score", "fault_type", "view", "duration_ns", "usual_ns", "excess_ns", "slow",
              "by_reference", "rank", "op", "layer", "explanation"]
_FINDING_COLS = ["step", "order", "rank", "node", "op", "layer", "fault", "score", "excess_ns"]
_EVIDENCE_COLS = ["step", "kind", "node", "rank", "line", "file", "text"]
_BASELINE_COLS = ["step", "abnormal", "score", "fault_type", "rank", "op"]


class Diagnosis:
    """What teller.diagnose found. steps: one row per step (abnormal, score, fault_type, view,
    duration, usual, excess, whether the usual is a reference run's, its root rank and operator,
    explanation); findings: the candidate
    root causes of every step, best first; evidence: the log lines and trace facts behind them;
    stat_baseline: the statistical baseline's steps, or None; predictions: the predictions JSON as a
    dict (../shared/BENCHMARK.md's format, with more per step)."""

    def __init__(self, run, has_stat_baseline):
        self._run = run
        # the library keeps one diagnosis per run: the reports are this one's until the next
        run._diagnoses += 1
        self._gen = run._diagnoses
        self.predictions = json.loads(run._render(_lib.PREDICTIONS))
        cands = json.loads(run._render(_lib.CANDIDATES))
        steps, evidence, findings = [], [], []
        for s in self.predictions["steps"]:
            top = s["candidates"][0] if s["candidates"] else {}
            steps.append({"step": s["step"], "abnormal": s["abnormal"], "score": s["score"],
                          "fault_type": s["fault_type"], "view": s.get("view", ""),
                          "duration_ns": s.get("duration_ns"), "usual_ns": s.get("usual_ns"),
                          "excess_ns": s.get("excess_ns"), "slow": s.get("slow"),
                          "by_reference": s.get("by_reference"), "rank": top.get("rank"), "op": top.get("op"), "layer": top.get("layer"),
                          "explanation": s["explanation"]})
            for e in s["evidence"]:
                evidence.append(dict({"step": s["step"]}, **e))
        for s in cands["steps"]:
            for i, c in enumerate(s["candidates"]):
                findings.append({"step": s["step"], "order": i, "rank": c["rank"], "node": c["node"], "op": c["op"],
                                 "layer": c["layer"], "fault": c["fault"], "score": c["score"],
                                 "excess_ns": c["excess_ns"]})
        self.steps = _table(steps, _STEP_COLS)
        self.findings = _table(findings, _FINDING_COLS)
        self.evidence = _table(evidence, _EVIDENCE_COLS)
        self.stat_baseline = None
        if has_stat_baseline:
            b = json.loads(run._render(_lib.BASELINE))
            self.stat_baseline = _table([{"step": s["step"], "abnormal": s["abnormal"], "score": s["score"],
                                     "fault_type": s["fault_type"],
                                     "rank": s["candidates"][0]["rank"] if s["candidates"] else None,
                                     "op": s["candidates"][0]["op"] if s["candidates"] else None}
                                    for s in b["steps"]], _BASELINE_COLS)

    def _render(self, what):
        if self._gen != self._run._diagnoses:
            raise TellerError("arg", "", 0, "the run was diagnosed again since: its reports are the new diagnosis's")
        return self._run._render(what)

    @property
    def abnormal(self):
        """The abnormal steps' rows."""
        if _pd is not None:
            return self.steps[self.steps["abnormal"]]
        return [s for s in self.steps if s["abnormal"]]

    def to_html(self, path):
        """Writes the HTML report (self-contained: timelines, call chains, evidence). Returns path."""
        data = self._render(_lib.HTML)
        with open(path, "wb") as f:
            f.write(data)
        return path

    def to_perfetto(self, path):
        """Writes the trace with the findings as Chrome-trace JSON for ui.perfetto.dev. Returns path."""
        data = self._render(_lib.PERFETTO)
        with open(path, "wb") as f:
            f.write(data)
        return path

    def _repr_html_(self):
        steps = self.predictions["steps"]
        ab = [s for s in steps if s["abnormal"]]
        ab.sort(key=lambda s: (-(s.get("excess_ns") or 0), -s["score"]))
        e = lambda v: html.escape(str(v))
        out = ["<p><b>teller</b>: %d steps, %d abnormal</p>" % (len(steps), len(ab))]
        if ab:
            out.append("<table><tr><th>step</th><th>score</th><th>fault</th><th>rank</th><th>operator</th>"
                       "<th>explanation</th></tr>")
            for s in ab[:20]:
                top = s["candidates"][0] if s["candidates"] else {}
                out.append("<tr><td>%s</td><td>%.2f</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td></tr>" % (
                    e(s["step"]), s["score"], e(s["fault_type"]), e(top.get("rank", "")), e(top.get("op", "")),
                    e(s["explanation"])))
            out.append("</table>")
            if len(ab) > 20:
                out.append("<p>... %d more (to_html writes the full report)</p>" % (len(ab) - 20))
        return "\n".join(out)

    def __repr__(self):
        n = len(self.predictions["steps"])
        return "<teller.Diagnosis: %d steps, %d abnormal>" % (
            n, sum(1 for s in self.predictions["steps"] if s["abnormal"]))


def load(paths, jobs=None, force=False, skip_python=False, gpus_per_node=0, step_pattern=None):
    """Loads traces (Kineto JSON, .json.gz, Nsight Systems SQLite exports, .tlt; a directory gives
    its traces) as one run, on `jobs` threads (None: every core). Inputs that cannot be one run
    (two files of one rank, traces a year apart) raise TellerError unless force."""
    names, n = _paths(paths)
    opts = lib.teller_run_defaults()
    opts.jobs, opts.force, opts.skip_python = int(jobs or 0), int(bool(force)), int(bool(skip_python))
    opts.gpus_per_node = int(gpus_per_node or 0)
    opts.step_pattern = step_pattern.encode() if step_pattern else None
    err, h = _lib.Error(), ctypes.c_void_p()
    _check(lib.teller_run_load(names, n, ctypes.byref(opts), ctypes.byref(h), ctypes.byref(err)), err)
    return Run(h.value)


def _case_logs(paths):
    """A case directory's logs/*.log, as `teller diagnose CASE_DIR` brings them."""
    if isinstance(paths, (str, bytes, os.PathLike)):
        paths = [paths]
    logs = []
    for p in paths:
        p = os.fsdecode(p)
        if os.path.isdir(p):
            logs += sorted(glob.glob(os.path.join(p, "logs", "*.log")))
    return logs


def diagnose(paths, logs=None, stat_baseline=None, jobs=None, model=None, tz_offset=0, threshold=None, spreads=None,
             baseline=None, **load_opts):
    """Loads paths (see load) and diagnoses the run: which steps were abnormal, where and why.
    logs: service log files (None: a case directory's logs/*.log); stat_baseline: None, or
    "zscore" or "gmm" to add a statistical baseline's predictions (Diagnosis.stat_baseline; not a
    healthy reference run); baseline: a healthy reference run of the same workload (its paths, as
    load takes them), whose steps are a second yardstick (teller diagnose --baseline); model: None
    for the built-in root-cause model if the library has one, a model file, or False for the
    numeric stage alone; tz_offset: the logs' zone in seconds east of UTC."""
    ref = load(baseline, jobs=jobs, **load_opts).reference() if baseline is not None else None
    run = load(paths, jobs=jobs, **load_opts)
    if logs is None:
        logs = _case_logs(paths)
    elif isinstance(logs, (str, bytes, os.PathLike)):
        logs = [logs]
    return run.diagnose(logs=logs, stat_baseline=stat_baseline, model=model, tz_offset=tz_offset, threshold=threshold,
                        spreads=spreads, jobs=jobs, baseline=ref)
