# teller NVTX step shim: wraps the vLLM / SGLang engine step in an NVTX range
# named "step[N] reqs=ID,ID,..." (teller's built-in step pattern ^step\[),
# for engine versions that emit no step ranges of their own.
# Use: PYTHONPATH=/path/to/contrib/teller_nvtx:$PYTHONPATH teller run -- vllm serve ...
# Off unless NVTX is live (torch.cuda.nvtx); TELLER_NVTX_SHIM=0 disables it.
# The patched methods are best guesses per version (see docs/COLLECTOR.md).
import importlib.abc, os, sys

TARGETS = {  # module -> (class, method, how to list the step's request ids)
    "vllm.v1.engine.core": ("EngineCore", "step", lambda s: [r.request_id for r in getattr(s.scheduler, "running", [])]),
    "vllm.engine.llm_engine": ("LLMEngine", "step", lambda s: []),
    "sglang.srt.managers.scheduler": ("Scheduler", "run_batch",
                                      lambda s, b=None: [r.rid for r in getattr(b, "reqs", []) or []]),
}

def _wrap(cls, meth, ids_of):
    orig = getattr(cls, meth, None)
    if orig is None or getattr(orig, "_teller", False):
        return
    try:
        from torch.cuda import nvtx
    except Exception:
        return
    count = [0]
    def step(self, *a, **k):
        try:
            ids = ids_of(self, *a[:1])[:16]
        except Exception:
            ids = []
        nvtx.range_push("step[%d] reqs=%s" % (count[0], ",".join(map(str, ids))))
        count[0] += 1
        try:
            return orig(self, *a, **k)
        finally:
            nvtx.range_pop()
    step._teller = True
    setattr(cls, meth, step)

class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name not in TARGETS:
            return None
        sys.meta_path.remove(self)
        try:
            spec = importlib.util.find_spec(name)
        finally:
            sys.meta_path.insert(0, self)
        if spec is None or spec.loader is None:
            return spec
        load = spec.loader.exec_module
        def exec_module(mod):
            load(mod)
            cname, meth, ids_of = TARGETS[name]
            if hasattr(mod, cname):
                _wrap(getattr(mod, cname), meth, ids_of)
        spec.loader.exec_module = exec_module
        return spec

if os.environ.get("TELLER_NVTX_SHIM", "1") != "0":
    import importlib.util
    sys.meta_path.insert(0, _Finder())
