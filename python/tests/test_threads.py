"""Long calls run without the GIL: another Python thread keeps running while the library loads."""
import threading
import time

import teller
from conftest import trace

SGLANG = trace("tracelens", "inference", "sglang_prefilldecode", "sglang_Qwen3-8B_prefilldecode.json.gz")


def test_other_threads_run_during_a_load():
    stamps, stop = [], threading.Event()

    def tick():
        while not stop.is_set():
            stamps.append(time.perf_counter())
            time.sleep(0.0005)

    t = threading.Thread(target=tick)
    t.start()
    try:
        spans = []
        for _ in range(3):
            t0 = time.perf_counter()
            teller.load(SGLANG, jobs=1).close()
            spans.append((t0, time.perf_counter()))
    finally:
        stop.set()
        t.join()
    # Holding the GIL, the library would leave the ticker at most one switch interval (5 ms)
    # after the call began, and nothing in the middle of the call.
    a, b = max(spans, key=lambda s: s[1] - s[0])
    assert b - a > 0.03, "the load took %.3f s: too short to tell" % (b - a)
    mid = [s for s in stamps if a + 0.3 * (b - a) < s < b - 0.3 * (b - a)]
    assert len(mid) >= 3
