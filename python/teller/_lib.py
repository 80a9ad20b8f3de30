"""_lib.py - libteller.so through ctypes: finding it, and the C declarations the package calls.

The structures mirror include/teller/error.h, tree.h, run.h and diagnose.h field for field;
tests/test_abi.py compiles the C side and checks every size and offset against these.
ctypes.CDLL releases the GIL around each call, so loading and diagnosing (seconds on big
runs, on several threads of the library's own) do not hold up other Python threads.
"""
import ctypes
import ctypes.util
import os

from ctypes import (POINTER, Structure, c_char, c_char_p, c_double, c_int, c_int32, c_int64,
                    c_size_t, c_uint8, c_uint32, c_uint64, c_void_p)

NONE = 0xFFFFFFFF  # TELLER_NONE: "no event", "no step"

STATUS = {0: "ok", 1: "io", 2: "format", 3: "truncated", 4: "nomem", 5: "arg", 6: "limit"}
LAYERS = ["engine", "frontend", "backend", "runtime", "driver", "kernel", "memcpy", "memset", "sync", "other"]
STEP_KINDS = ["other", "prefill", "decode", "mixed", "iteration"]

# teller_run_output
PREDICTIONS, CANDIDATES, HTML, PERFETTO, BASELINE = range(5)


class Error(Structure):
    _fields_ = [("code", c_int), ("file", c_char * 512), ("offset", c_uint64), ("line", c_uint64),
                ("msg", c_char * 512)]


class RunOpts(Structure):
    _fields_ = [("jobs", c_int32), ("force", c_int32), ("skip_python", c_int32), ("gpus_per_node", c_int32),
                ("step_pattern", c_char_p)]


class StepSummary(Structure):
    _fields_ = [("step", c_uint32), ("rank", c_int32), ("node", c_int32), ("start_ns", c_int64),
                ("dur_ns", c_int64), ("kernel_ns", c_int64), ("comm_ns", c_int64), ("memcpy_ns", c_int64),
                ("gpu_busy_ns", c_int64), ("gpu_idle_ns", c_int64), ("kernels", c_uint32), ("launches", c_uint32),
                ("unlaunched", c_uint32), ("gpu_known", c_int)]


class StepRow(Structure):
    _fields_ = [("sum", StepSummary), ("annotation", c_uint32), ("kind", c_int32)]


class KernelRow(Structure):
    _fields_ = [("start_ns", c_int64), ("dur_ns", c_int64), ("bytes", c_int64), ("event", c_uint32),
                ("name", c_uint32), ("step", c_uint32), ("rank", c_int32), ("node", c_int32), ("device", c_int32),
                ("stream", c_int32), ("corr", c_uint32), ("launch", c_uint32), ("layer", c_uint8), ("comm", c_uint8),
                ("pad", c_uint8 * 2)]


class CollRow(Structure):
    _fields_ = [("instance", c_uint32), ("key", c_uint32), ("seq", c_uint32), ("members", c_uint32),
                ("rank", c_int32), ("kernel", c_uint32), ("name", c_uint32), ("op", c_uint32),
                ("start_ns", c_int64), ("dur_ns", c_int64), ("bytes", c_int64), ("step", c_uint32),
                ("pad", c_uint32)]


class DiagOpts(Structure):
    _fields_ = [("logs", POINTER(c_char_p)), ("nlogs", c_size_t), ("log_tz_offset_s", c_int32),
                ("threshold", c_double), ("model", c_void_p), ("model_alone", c_int), ("jobs", c_int),
                ("spreads", c_double), ("reference", c_void_p), ("step_base", c_uint32)]


def _find():
    env = os.environ.get("TELLER_LIBRARY")
    if env:
        return [env]
    found = ctypes.util.find_library("teller")
    return ([found] if found else []) + ["libteller.so.0", "/usr/local/lib/libteller.so.0",
                                         "/usr/local/lib64/libteller.so.0"]


def _open():
    tried = []
    for name in _find():
        try:
            return ctypes.CDLL(name)
        except OSError as e:
            tried.append("%s (%s)" % (name, e))
    raise ImportError("teller: libteller.so not found; install teller (make install) or set TELLER_LIBRARY. "
                      "Tried: " + "; ".join(tried))


lib = _open()


def _decl(name, restype, *argtypes):
    f = getattr(lib, name)
    f.restype = restype
    f.argtypes = list(argtypes)


_decl("teller_version", c_char_p)
_decl("teller_version_number", c_uint32)
_decl("teller_status_str", c_char_p, c_int)
_decl("teller_run_defaults", RunOpts)
_decl("teller_run_load", c_int, POINTER(c_char_p), c_size_t, POINTER(RunOpts), POINTER(c_void_p), POINTER(Error))
_decl("teller_run_free", None, c_void_p)
_decl("teller_run_store", c_void_p, c_void_p)
_decl("teller_run_steps", c_int, c_void_p, c_void_p, c_size_t, POINTER(c_size_t), POINTER(Error))
_decl("teller_run_kernels", c_int, c_void_p, c_void_p, c_size_t, POINTER(c_size_t), POINTER(Error))
_decl("teller_run_collectives", c_int, c_void_p, c_void_p, c_size_t, POINTER(c_size_t), POINTER(Error))
_decl("teller_run_diagnose", c_int, c_void_p, POINTER(DiagOpts), c_void_p, POINTER(Error))
_decl("teller_run_reference", c_int, c_void_p, POINTER(c_void_p), POINTER(Error))
_decl("teller_diag_reference_steps", c_size_t, c_void_p)
_decl("teller_diag_reference_free", None, c_void_p)
_decl("teller_run_baseline", c_int, c_void_p, c_char_p, POINTER(Error))
_decl("teller_run_render", c_int, c_void_p, c_int, POINTER(c_void_p), POINTER(c_size_t), POINTER(Error))
_decl("teller_free", None, c_void_p)
_decl("teller_diag_defaults", DiagOpts)
_decl("teller_model_load", c_int, c_char_p, POINTER(c_void_p), POINTER(Error))
_decl("teller_model_load_default", c_int, POINTER(c_void_p), POINTER(Error))
_decl("teller_model_free", None, c_void_p)
_decl("teller_store_str", c_char_p, c_void_p, c_uint32)
_decl("teller_store_num_sources", c_size_t, c_void_p)
_decl("teller_store_num_warnings", c_uint64, c_void_p)
_decl("teller_store_num_warning_msgs", c_size_t, c_void_p)
_decl("teller_store_warning_msg", c_char_p, c_void_p, c_size_t)
