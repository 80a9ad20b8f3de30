#!/usr/bin/env python3
"""log_expect.py - expected fields of every line of real_log_lines.tsv.

Written separately from src/logs (its own regexes, Python's calendar) so
that tests/test_logs.c checks the C readers against an independent reading.
Prints the C table rows pasted into tests/test_logs.c (`EXPECT[]`).
Rules: year 2025 where a line has none; a time-only line takes the reference
date 2025-12-31; a wrapper time (docker) wins when it has sub-seconds and
the logger's does not; times are UTC.

usage: tests/tools/log_expect.py ../shared/data/logs/real_log_lines.tsv
"""
import calendar
import re
import sys

LEVELS = {"DEBUG": "DEBUG", "INFO": "INFO", "WARNING": "WARNING", "WARN": "WARNING",
          "ERROR": "ERROR", "CRITICAL": "CRITICAL"}
MON = {m: i for i, m in enumerate(calendar.month_abbr) if m}


def ns(y, mo, d, h, mi, s, frac=""):
    sec = calendar.timegm((y, mo, d, h, mi, s, 0, 0, 0))
    return sec * 10**9 + int((frac + "000000000")[:9] or 0)


def expect(line):
    fam, level, rank, t, wt = "GENERIC", "NONE", -1, None, None
    rest = line
    while True:
        m = re.match(r"(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)\.(\d+)Z ", rest)
        if m:
            g = m.groups()
            wt = (ns(*map(int, g[:6]), g[6]), True)
            rest = rest[m.end():]
            continue
        m = re.match(r"([A-Z][a-z]{2}) +(\d+) (\d\d):(\d\d):(\d\d) \S+ [\w.-]+\[\d+\]: ", rest)
        if m:
            g = m.groups()
            wt = (ns(2025, MON[g[0]], int(g[1]), int(g[2]), int(g[3]), int(g[4])), False)
            rest = rest[m.end():]
            continue
        m = re.match(r"\((\w+)((?:,? \w+=[^,)\s]+)+)\) ", rest)
        if m:
            r = re.search(r"\brank=(\d+)", m.group(2))
            if r:
                rank = int(r.group(1))
            rest = rest[m.end():]
            continue
        m = re.match(r"\[rank(\d+)\]:", rest)
        if m:
            rank = int(m.group(1))
            rest = rest[m.end():]
            continue
        m = re.match(r"\[\d+\] (?=\[)", rest) or re.match(r"[\w.-]+ +\| ", rest)
        if m:
            rest = rest[m.end():]
            continue
        break
    vl = re.compile(r"(DEBUG|INFO|WARNING|ERROR|CRITICAL) (\d\d)-(\d\d) (\d\d):(\d\d):(\d\d) \[?[\w./-]+:\d+\] ")
    m = vl.match(rest) or (vl.search(rest) if "%|" in rest else None)
    if m:
        fam, level = "VLLM", m.group(1)
        g = list(map(int, m.groups()[1:]))
        t = (ns(2025, *g), False)
    elif re.match(r"(INFO|WARNING|ERROR|DEBUG|CRITICAL):\s+", rest):
        fam, level = "UVICORN", rest.split(":")[0]
    elif re.match(r"\[([EWIF])(\d{3,4} [\d:.]+)? \w+\.cpp:\d+\] ", rest):
        m = re.match(r"\[([EWIF])(?:(\d{1,2})(\d\d) (\d\d):(\d\d):(\d\d)\.(\d+))? ", rest)
        fam, level = "TORCH", {"E": "ERROR", "W": "WARNING", "I": "INFO", "F": "CRITICAL"}[m.group(1)]
        if m.group(2):
            g = m.groups()
            t = (ns(2025, int(g[1]), int(g[2]), int(g[3]), int(g[4]), int(g[5]), g[6]), True)
        r = re.search(r"\] \[(?:PG [^\]]*)?Rank (\d+)\]", rest)
        if rank < 0 and r:
            rank = int(r.group(1))
    elif re.match(r"\[(\d{4}-\d\d-\d\d )?\d\d:\d\d:\d\d( [A-Z]+\d+)*\] ", rest):
        m = re.match(r"\[(?:(\d{4})-(\d\d)-(\d\d) )?(\d\d):(\d\d):(\d\d)((?: [A-Z]+\d+)*)\] ", rest)
        g = m.groups()
        fam = "SGLANG"
        y, mo, d = (int(g[0]), int(g[1]), int(g[2])) if g[0] else (2025, 12, 31)
        t = (ns(y, mo, d, int(g[3]), int(g[4]), int(g[5])), False)
        tp = re.search(r" TP(\d+)", g[6] or "")
        if tp:
            rank = int(tp.group(1))
        after = rest[m.end():]
        u = re.match(r"(INFO|WARNING|ERROR):\s+", after)
        if u:
            level = u.group(1)
    elif re.match(r"\S+:\d+:\d+ \[\d+\] .*?NCCL (INFO|WARN) ", rest) or re.match(r"NCCL (INFO|WARN) ", rest):
        fam = "NCCL"
        level = "WARNING" if " NCCL WARN " in " " + rest else "INFO"
    elif rest.startswith("NCCL version "):
        fam, level = "NCCL", "INFO"
    elif re.match(r"(Prefill|Decode) batch", rest):
        fam = "SGLANG"
    elif rest.startswith("Exception raised from ") and "ProcessGroupNCCL" in rest:
        fam, level = "TORCH", "ERROR"
    elif re.match(r"[\w.]+(Error|Exception)(: |$)", rest):
        level = "ERROR"
    if wt and (t is None or (wt[1] and not t[1])):
        t = wt
    reqs = []
    for m in re.finditer(r"(?<![A-Za-z0-9])((?:chat)?cmpl-[A-Za-z0-9_-]+)", rest):
        reqs.append(m.group(1).rstrip("-"))
    return fam, level, rank, (t[0] if t else None), reqs


def main():
    for row in open(sys.argv[1], encoding="utf-8"):
        if row.startswith("#") or not row.strip():
            continue
        lid, _fam, _url, line = row.rstrip("\n").split("\t", 3)
        fam, level, rank, t, reqs = expect(line)
        tc = "NO_TIME" if t is None else "%dLL" % t
        rq = ", ".join('"%s"' % r for r in reqs[:2])
        print('    {%s, TELLER_LOG_%s, TELLER_LOGL_%s, %d, %s, {%s}},'
              % (lid, fam, level, rank, tc, rq or "NULL"))


main()
