#!/usr/bin/env bash
# The step alarm's trade-off: teller diagnose --spreads K over a range of K
# on a perturbed corpus of the shared real traces (bench/perturb_corpus.sh,
# every set pooled), a simulated corpus, and the healthy shared traces (every
# flagged step a false alarm): step precision, recall and F1, and the
# healthy steps flagged, one row per K.
#   bench/step_alarm.sh BUILD_DIR OUT_DIR PURPOSE CASES_PER_SET [K...]
# PURPOSE: tune (seeds 100000+, simulated seed 1000) or report (200000+,
# simulated seed 2000); decide on tune, report on report.
set -euo pipefail
BUILD=${1:-build}; OUT=${2:-build/step_alarm}; PURPOSE=${3:-report}; N=${4:-10}; shift 4 || true
KS=("$@"); [ ${#KS[@]} -gt 0 ] || KS=(0.5 1 2 3 4 6 8)
T="$BUILD/teller"
HERE="$(cd "$(dirname "$0")" && pwd)"
case "$PURPOSE" in tune) SIM=1000 ;; report) SIM=2000 ;; *) echo "PURPOSE is tune or report" >&2; exit 2 ;; esac
"$HERE/perturb_corpus.sh" "$BUILD" "$OUT/perturb" "$PURPOSE" "$N" 0.3 > /dev/null
SIMC="$OUT/sim_s${SIM}_n$((2 * N))"
if [ ! -f "$SIMC/.done" ]; then
  rm -rf "$SIMC"
  "$T" simulate --corpus $((2 * N)) --seed "$SIM" --fault all --fault-rate 0.3 -o "$SIMC" > /dev/null
  touch "$SIMC/.done"
fi
mapfile -t HEALTHY < <(find "$HERE/../../shared/data/traces" -name '*.json.gz' -o -name '*.sqlite' | sort)
row() { # K corpus-dir-glob... -> "P R F1 steps abnormal"
  local k=$1 P; shift
  P=$(mktemp -d)
  local i=0
  for c in "$@"; do
    "$T" diagnose -q --spreads "$k" --json "$P/$i.json" "$c" > /dev/null 2>&1 || true
    i=$((i + 1))
  done
  python3 - "$P" "$@" <<'PY'
import json, sys, os
P = sys.argv[1]; tp = fp = fn = tn = 0
for i, c in enumerate(sys.argv[2:]):
    t = {s["step"]: s for s in json.load(open(os.path.join(c, "truth.json")))["steps"]}
    pf = os.path.join(P, f"{i}.json")
    p = {s["step"]: s for s in json.load(open(pf))["steps"]} if os.path.exists(pf) else {}
    for k, s in t.items():
        a, b = s.get("abnormal", False), p.get(k, {}).get("abnormal", False)
        tp += a and b; fn += a and not b; fp += b and not a; tn += not a and not b
pr = tp / (tp + fp) if tp + fp else float("nan"); rc = tp / (tp + fn) if tp + fn else float("nan")
f1 = 2 * pr * rc / (pr + rc) if pr + rc else float("nan")
print(f"{pr:.3f} {rc:.3f} {f1:.3f} {tp + fp + fn + tn} {tp + fn}")
PY
  rm -rf "$P"
}
healthy() { # K -> "flagged steps"
  local k=$1 f n=0 all=0 out
  out=$(mktemp)
  for f in "${HEALTHY[@]}"; do
    "$T" diagnose -q --spreads "$k" --json "$out" "$f" > /dev/null 2>&1 || continue
    read -r a b < <(python3 -c 'import json,sys; s=json.load(open(sys.argv[1]))["steps"]; print(len(s), sum(1 for x in s if x.get("abnormal")))' "$out")
    all=$((all + a)); n=$((n + b))
  done
  rm -f "$out"
  echo "$n $all"
}
echo "| spreads K | perturbed real: P / R / F1 (abnormal of steps) | simulated: P / R / F1 (abnormal of steps) | healthy shared steps flagged |"
echo "|---|---|---|---|"
for k in "${KS[@]}"; do
  read -r p1 r1 f1 s1 a1 < <(row "$k" "$OUT"/perturb/"${PURPOSE}"_r0.3/*/case_*)
  read -r p2 r2 f2 s2 a2 < <(row "$k" "$SIMC"/case_*)
  read -r h ha < <(healthy "$k")
  echo "| $k | $p1 / $r1 / $f1 ($a1 of $s1) | $p2 / $r2 / $f2 ($a2 of $s2) | $h of $ha |"
done
