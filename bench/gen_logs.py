#!/usr/bin/env python3
"""gen_logs.py - a large log for the template-mining benchmark.

Replicates the raw lines of the ten Loghub-2k datasets and the verbatim
lines of real_log_lines.tsv (../shared/data) with their numbers varied
(every digit run replaced by a random number of the same length), shuffled
in blocks so that templates interleave as in a real service log.

usage: bench/gen_logs.py SHARED_DIR OUT_FILE LINES
"""
import os
import random
import re
import sys

shared, out, want = sys.argv[1], sys.argv[2], int(sys.argv[3])
lines = []
lh = os.path.join(shared, "data", "loghub")
for d in sorted(os.listdir(lh)):
    p = os.path.join(lh, d, d + "_2k.log")
    if os.path.exists(p):
        with open(p, encoding="utf-8", errors="replace") as f:
            lines += [l.rstrip("\n") for l in f if l.strip()]
with open(os.path.join(shared, "data", "logs", "real_log_lines.tsv"), encoding="utf-8") as f:
    for row in f:
        if not row.startswith("#") and row.count("\t") >= 3:
            lines.append(row.rstrip("\n").split("\t", 3)[3])
rng = random.Random(7)
digits = re.compile(r"\d+")
vary = lambda m: str(rng.randrange(10 ** (len(m.group(0)) - 1), 10 ** len(m.group(0)))) if len(m.group(0)) > 1 else str(rng.randrange(10))
os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
with open(out, "w", encoding="utf-8") as f:
    n = 0
    while n < want:
        start = rng.randrange(len(lines))
        block = [lines[(start + k) % len(lines)] for k in range(64)]
        # vary a few lines per block, reuse the rest as-is (Python is the slow part)
        f.write("\n".join(digits.sub(vary, l) if k % 8 == 0 else l for k, l in enumerate(block)) + "\n")
        n += len(block)
