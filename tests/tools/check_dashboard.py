#!/usr/bin/env python3
"""Checks a Grafana dashboard against what Grafana needs of one and against
the metrics an exporter renders (docs/METRICS.md).

usage: check_dashboard.py DASHBOARD.json SCHEMA.json EXPOSITION.txt

- the dashboard validates against SCHEMA (JSON Schema 2020-12, Debian's
  python3-jsonschema);
- its panels fit the 24-column grid without overlapping, with ids unique
  and refIds unique within a panel;
- every $variable its queries use is defined in templating, or one of
  Grafana's own ($__rate_interval, ...);
- every metric name its PromQL expressions and variable queries read is a
  sample name of EXPOSITION (a scrape in the text format 0.0.4).

Prints one line per problem and exits 1, or a summary and exits 0.
"""
import json
import re
import sys

import jsonschema

GRAFANA_VARS = {"__rate_interval", "__interval", "__interval_ms", "__range", "__range_s", "__range_ms"}
PROMQL_WORDS = {"and", "or", "unless", "by", "without", "on", "ignoring", "group_left", "group_right",
                "offset", "bool", "inf", "nan"}


def exposition_names(text):
    """The sample names of an exposition (a summary's _sum and _count too)."""
    names = set()
    for line in text.splitlines():
        if line and not line.startswith("#"):
            names.add(re.match(r"[A-Za-z_:][A-Za-z0-9_:]*", line).group(0))
    return names


def metric_names(expr):
    """The metric names a PromQL expression reads: its identifiers less
    strings, label matchers, ranges, grouping lists, functions and keywords."""
    e = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)
    # Grafana's label_values(SELECTOR, LABEL): the label is no metric
    e = re.sub(r"\blabel_values\((.*),\s*\w+\s*\)\s*$", r"(\1)", e)
    e = re.sub(r"\{[^}]*\}", " ", e)
    e = re.sub(r"\[[^\]]*\]", " ", e)
    e = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", e)
    names = set()
    for m in re.finditer(r"(?<![\w$.])[A-Za-z_:][A-Za-z0-9_:]*", e):
        rest = e[m.end():].lstrip()
        if rest.startswith("(") or m.group(0).lower() in PROMQL_WORDS:
            continue
        names.add(m.group(0))
    return names


def variables(s):
    return set(re.findall(r"\$\{?(\w+)", s))


def main(argv):
    if len(argv) != 4:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    with open(argv[1]) as f:
        dash = json.load(f)
    with open(argv[2]) as f:
        schema = json.load(f)
    with open(argv[3]) as f:
        rendered = exposition_names(f.read())
    problems = []
    validator = jsonschema.Draft202012Validator(schema)
    for err in sorted(validator.iter_errors(dash), key=lambda e: list(e.absolute_path)):
        where = "/".join(str(p) for p in err.absolute_path) or "(top)"
        msg = err.message if len(err.message) < 200 else err.message[:200] + "..."
        problems.append(f"schema: {where}: {msg}")
    if problems:  # the checks below read what the schema requires
        print("\n".join(f"{argv[1]}: {p}" for p in problems))
        return 1

    defined = {v["name"] for v in dash["templating"]["list"]} | GRAFANA_VARS
    queries = []  # (where, expr)
    for v in dash["templating"]["list"]:
        q = v.get("query")
        if v["type"] == "query":
            queries.append((f"variable {v['name']}", q["query"] if isinstance(q, dict) else q))
    ids, cells = set(), {}
    for p in dash["panels"]:
        where = f"panel {p['id']} '{p['title']}'"
        if p["id"] in ids:
            problems.append(f"{where}: id used twice")
        ids.add(p["id"])
        g = p["gridPos"]
        if g["x"] + g["w"] > 24:
            problems.append(f"{where}: x + w = {g['x'] + g['w']} is past the grid's 24 columns")
        for y in range(g["y"], g["y"] + g["h"]):
            for x in range(g["x"], min(g["x"] + g["w"], 24)):
                if (x, y) in cells:
                    problems.append(f"{where}: overlaps panel {cells[(x, y)]} at column {x}, row {y}")
                    break
                cells[(x, y)] = p["id"]
            else:
                continue
            break
        for name in variables(json.dumps(p.get("datasource", {}))) - defined:
            problems.append(f"{where}: data source uses ${name}, not a variable of the dashboard")
        refs = [t["refId"] for t in p.get("targets", [])]
        if len(refs) != len(set(refs)):
            problems.append(f"{where}: refIds {refs} repeat")
        queries += [(f"{where} target {t['refId']}", t["expr"]) for t in p.get("targets", [])]

    used = set()
    for where, expr in queries:
        for name in variables(expr) - defined:
            problems.append(f"{where}: ${name} is not a variable of the dashboard")
        names = metric_names(expr)
        if not names:
            problems.append(f"{where}: reads no metric: {expr}")
        for name in sorted(names - rendered):
            problems.append(f"{where}: metric {name} is not in the exposition")
        used |= names
    if problems:
        print("\n".join(f"{argv[1]}: {p}" for p in problems))
        return 1
    print(f"{argv[1]}: {len(dash['panels'])} panels, {len(queries)} queries; metrics read: {' '.join(sorted(used))}")
    unread = sorted(rendered - used)
    if unread:
        print(f"  rendered but on no panel: {' '.join(unread)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
