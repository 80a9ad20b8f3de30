#!/usr/bin/env python3
"""Compares `teller watch --json --all` lines with `teller diagnose --json`
predictions of the same run, step by step: abnormal, fault type, view and
the top candidate (rank, operator). Steps before --from (the watch's
warm-up window) are counted apart.

usage: watch_same.py OFFLINE.json WATCH.jsonl [--from W] [--list N]
Prints one summary line; lists the first N differing steps."""
import json
import sys


def key(s):
    c = s.get("candidates") or [{}]
    return (bool(s.get("abnormal")), s.get("fault_type"), s.get("view") if s.get("abnormal") else None,
            c[0].get("rank") if s.get("abnormal") else None, c[0].get("op") if s.get("abnormal") else None)


def main(argv):
    off_path, watch_path = argv[1], argv[2]
    first = int(argv[argv.index("--from") + 1]) if "--from" in argv else 0
    nlist = int(argv[argv.index("--list") + 1]) if "--list" in argv else 10
    off = {s["step"]: s for s in json.load(open(off_path))["steps"]}
    seen, twice, lat = {}, 0, []
    for line in open(watch_path):
        line = line.strip()
        if not line.startswith("{\"step\""):
            continue
        s = json.loads(line)
        if s["step"] in seen:
            twice += 1
        seen[s["step"]] = s
        if "latency_s" in s:
            lat.append(s["latency_s"])
    after = [k for k in off if k >= first]
    missing = [k for k in after if k not in seen]
    extra = [k for k in seen if k not in off]
    diff = [k for k in after if k in seen and key(seen[k]) != key(off[k])]
    warm = [k for k in off if k < first and k in seen and key(seen[k]) != key(off[k])]
    nab = sum(1 for k in after if off[k].get("abnormal"))
    texts = sum(1 for k in after if k in seen and off[k].get("abnormal") and
                seen[k].get("explanation") != off[k].get("explanation"))
    print("%d steps after the first %d (%d abnormal offline): %d differ, %d missing, %d extra, %d twice; "
          "warm-up steps differing: %d of %d; abnormal steps whose explanation reads otherwise: %d"
          % (len(after), first, nab, len(diff), len(missing), len(extra), twice, len(warm), min(first, len(off)), texts))
    if lat:
        lat.sort()
        print("latency p50 %.3f s p99 %.3f s over %d steps" % (lat[len(lat) // 2], lat[int((len(lat) - 1) * 0.99)],
                                                               len(lat)))
    for k in diff[:nlist]:
        print("  step %d offline %s | watch %s" % (k, key(off[k]), key(seen[k])))
        print("    offline: %s" % off[k].get("explanation", "")[:300])
        print("    watch:   %s" % seen[k].get("explanation", "")[:300])
    return 1 if diff or missing or twice else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
