#!/usr/bin/env python3
"""gen_trace.py - writes a large, realistic, uncompressed Kineto trace for the ingest benchmark.

The events are the real ones of one vLLM step on B200
(../shared/data/traces/tracelens/b200/eager_trace.json.gz, 24,656 events), replicated
copy after copy until the file reaches the requested size. Copy k is the original with

  - every "ts" moved forward by k * PERIOD (the step spans 87.4 ms; PERIOD is 90 ms),
    written the way Kineto writes it: microseconds with exactly 3 decimals ("dur" too);
  - args "correlation", args "External id" and the flow "id" offset by k times a stride
    larger than the largest id in the original, so that ids stay unique across copies;
  - its own execute_context_... user annotation (the original one), so steps are cut.

The top-level keys (schemaVersion, deviceProperties, distributedInfo,
baseTimeNanoseconds, traceName, ...) are kept as in the original, in its order,
each written on one line.
The layout is Kineto's own (output_json.cpp): one event per brace block, "ph" to "tid"
on one line, "ts"/"dur" on the next, then the args block; not the indent=4 re-dump of
the original, which would pad the file with cheap white space.

Output is written streaming, one copy at a time, and is byte-for-byte deterministic.

usage: gen_trace.py OUT [--mb 1100] [--src PATH]
"""
import argparse
import decimal
import gzip
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_SRC = os.path.join(HERE, "..", "..", "shared", "data", "traces", "tracelens", "b200",
                           "eager_trace.json.gz")
PERIOD_NS = 90_000_000  # one copy every 90 ms; the original step spans 87.4 ms


def jval(v):
    """Compact JSON the way Kineto and json.dumps write it; Decimals keep their text."""
    if isinstance(v, decimal.Decimal):
        return str(v)
    if isinstance(v, bool) or v is None or isinstance(v, (int, str)):
        return json.dumps(v, ensure_ascii=False)
    if isinstance(v, list):
        return "[" + ", ".join(jval(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(json.dumps(k, ensure_ascii=False) + ": " + jval(x) for k, x in v.items()) + "}"
    raise TypeError(type(v))


def us3(ns):
    """Nanoseconds as Kineto's microseconds with 3 decimals."""
    sign = "-" if ns < 0 else ""
    ns = abs(ns)
    return "%s%d.%03d" % (sign, ns // 1000, ns % 1000)


def to_ns(d):
    return int((decimal.Decimal(d) * 1000).to_integral_value(rounding=decimal.ROUND_HALF_EVEN))


class Template:
    """One copy of the events as alternating literal text and slots.

    lits[i] precedes slots[i]; lits has one more entry than slots. A slot is
    (kind, base): kind 0 = timestamp in ns, 1 = correlation id, 2 = External id."""

    def __init__(self):
        self.lits = [""]
        self.slots = []

    def text(self, s):
        self.lits[-1] += s

    def slot(self, kind, base):
        self.slots.append((kind, base))
        self.lits.append("")


def build_template(events):
    t = Template()
    max_corr = max_ext = 0
    for i, e in enumerate(events):
        t.text("  {\n    " if i == 0 else ",\n  {\n    ")
        keys = [k for k in e if k != "args"]
        first = True
        for k in keys:
            if k == "ts":
                t.text(",\n    ")
            elif not first:
                t.text(", ")
            first = False
            v = e[k]
            t.text(json.dumps(k) + ": ")
            if k == "ts":
                t.slot(0, to_ns(v))
            elif k == "dur":
                t.text(us3(to_ns(v)))
            elif k == "id" and e.get("cat") == "ac2g":
                t.slot(1, int(v))
                max_corr = max(max_corr, int(v))
            else:
                t.text(jval(v))
        args = e.get("args")
        if args is not None:
            t.text(",\n    \"args\": {")
            if args:
                t.text("\n      ")
            for j, (k, v) in enumerate(args.items()):
                if j:
                    t.text(", ")
                t.text(json.dumps(k, ensure_ascii=False) + ": ")
                if k == "correlation" and isinstance(v, int):
                    t.slot(1, v)
                    max_corr = max(max_corr, v)
                elif k == "External id" and isinstance(v, int):
                    t.slot(2, v)
                    max_ext = max(max_ext, v)
                else:
                    t.text(jval(v))
            if args:
                t.text("\n    ")
            t.text("}")
        t.text("\n  }")
    return t, max_corr, max_ext


def stride_above(n):
    """The smallest power of ten above n: offsets stay readable (copy 3 -> 3xxxxx)."""
    s = 10
    while s <= n:
        s *= 10
    return s


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out")
    ap.add_argument("--mb", type=float, default=1100.0, help="target size in MB (10^6 bytes), default 1100")
    ap.add_argument("--src", default=DEFAULT_SRC)
    a = ap.parse_args()

    with gzip.open(a.src, "rb") as f:
        doc = json.loads(f.read(), parse_float=decimal.Decimal)
    events = doc["traceEvents"]
    tpl, max_corr, max_ext = build_template(events)
    cstride, estride = stride_above(max_corr), stride_above(max_ext)
    target = int(a.mb * 1e6)

    tmp = a.out + ".tmp"
    copies = 0
    with open(tmp, "w", encoding="utf-8", newline="\n", buffering=1 << 22) as out:
        written = 0

        def put(s):
            nonlocal written
            out.write(s)
            written += len(s.encode("utf-8"))

        put("{")
        for i, (k, v) in enumerate(doc.items()):
            put("%s\n  %s: " % ("," if i else "", json.dumps(k)))
            if k != "traceEvents":
                put(jval(v))
                continue
            put("[\n")
            lits, slots = tpl.lits, tpl.slots
            # the events after this key (traceName) are a few bytes: ignore them
            while written < target:
                dt, dc, de = copies * PERIOD_NS, copies * cstride, copies * estride
                if dc + cstride >= 1 << 32:
                    sys.exit("gen_trace.py: correlation ids would pass 2^32; ask for a smaller file")
                parts = [",\n" if copies else ""]
                for lit, (kind, base) in zip(lits, slots):
                    parts.append(lit)
                    if kind == 0:
                        parts.append(us3(base + dt))
                    else:
                        parts.append(str(base + (dc if kind == 1 else de)))
                parts.append(lits[-1])
                put("".join(parts))
                copies += 1
            put("\n  ]")
        put("\n}\n")
    os.replace(tmp, a.out)
    print("gen_trace: %s: %d copies of %d events = %d events, %.1f MB"
          % (a.out, copies, len(events), copies * len(events), os.path.getsize(a.out) / 1e6))


if __name__ == "__main__":
    main()
