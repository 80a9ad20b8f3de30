"""The ctypes mirrors of the C structures (teller/_lib.py) against the C compiler's layout,
and the shared library's exports against the headers."""
import ctypes
import os
import subprocess

import teller
from teller import _lib
from conftest import ROOT

STRUCTS = {"teller_error": _lib.Error, "teller_run_opts": _lib.RunOpts, "teller_step_summary": _lib.StepSummary,
           "teller_run_step": _lib.StepRow, "teller_run_kernel": _lib.KernelRow, "teller_run_coll": _lib.CollRow,
           "teller_diag_opts": _lib.DiagOpts}


def build_dir():
    return os.path.dirname(os.path.realpath(os.environ.get("TELLER_LIBRARY", os.path.join(ROOT, "build", "x"))))


def test_struct_layouts_match_c(tmp_path):
    lines = ['#include <stddef.h>', '#include <stdio.h>', '#include "teller/teller.h"', "int main(void) {"]
    for cname, py in STRUCTS.items():
        lines.append('printf("%s %%zu\\n", sizeof(%s));' % (cname, cname))
        for f, _ in py._fields_:
            lines.append('printf("%s.%s %%zu\\n", offsetof(%s, %s));' % (cname, f, cname, f))
    lines.append("return 0; }")
    src = tmp_path / "layout.c"
    src.write_text("\n".join(lines))
    exe = str(tmp_path / "layout")
    subprocess.run(["cc", "-std=c11", "-I", os.path.join(ROOT, "include"), "-I", os.path.join(build_dir(), "include"),
                    "-o", exe, str(src)], check=True)
    want = dict(l.split() for l in subprocess.run([exe], check=True, capture_output=True, text=True).stdout.splitlines())
    for cname, py in STRUCTS.items():
        assert int(want[cname]) == ctypes.sizeof(py), cname
        for f, _ in py._fields_:
            assert int(want["%s.%s" % (cname, f)]) == getattr(py, f).offset, "%s.%s" % (cname, f)


def test_library_exports_the_headers_functions_only():
    lib = os.path.realpath(_lib.lib._name) if os.path.exists(_lib.lib._name) else None
    assert lib, "TELLER_LIBRARY names the library under test"
    out = subprocess.run(["nm", "-D", "--defined-only", lib], check=True, capture_output=True, text=True).stdout
    exported = {l.split()[2].split("@")[0] for l in out.splitlines() if len(l.split()) == 3}
    exported.discard("TELLER_0")
    with open(os.path.join(build_dir(), "teller.map")) as f:
        declared = {l.strip().rstrip(";") for l in f if l.strip().startswith("teller_")}
    assert exported == declared
    assert {"teller_run_load", "teller_run_kernels", "teller_version", "teller_diagnose"} <= exported


def test_versions_agree():
    cmake = open(os.path.join(ROOT, "CMakeLists.txt")).read()
    assert "project(teller VERSION %s " % teller.library_version() in cmake
    assert teller.__version__ == teller.library_version()
    pyproject = open(os.path.join(ROOT, "python", "pyproject.toml")).read()
    assert 'version = "%s"' % teller.__version__ in pyproject
    major, minor, patch = map(int, teller.library_version().split("."))
    assert _lib.lib.teller_version_number() == major * 10000 + minor * 100 + patch
