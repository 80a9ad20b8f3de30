#!/usr/bin/env bash
# fleet_eval.sh - is teller right at fleet size? Simulated runs of every
# fault kind at rate 0.3, 30 steps, SEEDS seeds per shape from SEED0, each
# diagnosed and the shape's cases scored together by `teller eval`: step
# F1, horizontal recall and horizontal operator AC@1 per shape (docs/SCALE.md,
# "Right at any size"). Tune on seeds 1000-1999, report on 2000+.
#
# usage: bench/fleet_eval.sh BUILD OUT [SEED0 [SEEDS [SHAPE...]]]
#   SHAPE: "NODES GPUS" (the simulator's default topology: tensor parallel
#   inside a node, a pipeline stage per node) or "NODES GPUS TP PP DP"
#   (DP data-parallel replicas of TP x PP)
set -euo pipefail
BUILD=${1:?usage: bench/fleet_eval.sh BUILD OUT [SEED0 [SEEDS [SHAPE...]]]}
OUT=${2:?usage: bench/fleet_eval.sh BUILD OUT [SEED0 [SEEDS [SHAPE...]]]}
SEED0=${3:-2000}
SEEDS=${4:-4}
shift $(( $# < 4 ? $# : 4 ))
[ $# -gt 0 ] || set -- "2 8" "8 8" "32 8" "64 16" "64 16 8 2 64"
T=$BUILD/teller
mkdir -p "$OUT"
printf "%-22s %6s %6s %6s %8s %8s\n" "shape" "steps" "abn" "F1" "h.rec" "h.opAC1"
for shape in "$@"; do
  read -r nodes gpus tp pp dp <<<"$shape"
  topo=(--nodes "$nodes" --gpus-per-node "$gpus")
  [ -z "${tp:-}" ] || topo+=(--tp "$tp" --pp "$pp" --dp "$dp")
  tag=$(echo "$shape" | tr ' ' _)
  C=$OUT/$tag/cases P=$OUT/$tag/pred
  rm -rf "$OUT/$tag"
  mkdir -p "$C" "$P"
  for ((i = 0; i < SEEDS; i++)); do
    seed=$((SEED0 + i))
    "$T" simulate "${topo[@]}" --steps 30 --fault all --fault-rate 0.3 --seed "$seed" -o "$C/case_$seed" >/dev/null
    "$T" diagnose -q --json "$P/case_$seed.json" "$C/case_$seed" >/dev/null
  done
  "$T" eval --truth "$C" --pred "$P" --json -o "$OUT/$tag/metrics.json" >/dev/null
  python3 - "$OUT/$tag/metrics.json" "$shape" <<'EOF'
import json, sys
m = json.load(open(sys.argv[1]))
a, h = m, m["by_view"].get("horizontal", {})
f = lambda x: "-" if x is None else "%.3f" % x
print("%-22s %6d %6d %6s %8s %8s" % (sys.argv[2], a["steps"], a["abnormal_steps"], f(a["step"]["f1"]),
      f(h.get("step", {}).get("recall")), f(h.get("operator", {}).get("ac1"))))
EOF
done
