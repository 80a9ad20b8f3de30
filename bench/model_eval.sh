#!/usr/bin/env bash
# The root-cause model against the numeric stage on a held-out simulated
# corpus (seeds never used for training or tuning: `make model` trains on
# the 3000 range, this reports on 2000), and on the healthy real traces of
# ../shared/data/traces, where every flagged step is a false alarm.
#   bench/model_eval.sh BUILD_DIR OUT_DIR [MODEL] [SEED] [CASES] [RATE]
# MODEL defaults to the built-in one (src/model/default.tmod).
set -euo pipefail
BUILD=${1:-build}; OUT=${2:-build/model_eval}; MODEL=${3:-}; SEED=${4:-2000}; N=${5:-30}; RATE=${6:-0.3}
T="$BUILD/teller"
mflag=(); [ -n "$MODEL" ] && mflag=(--model "$MODEL")
C="$OUT/cases_s${SEED}_n${N}_r${RATE}"
if [ ! -f "$C/.done" ]; then
  rm -rf "$C"
  "$T" simulate --corpus "$N" --seed "$SEED" --fault all --fault-rate "$RATE" -o "$C" > /dev/null
  touch "$C/.done"
fi
for m in numeric model; do
  P="$OUT/pred_${m}"; K="$OUT/cand_${m}"
  rm -rf "$P" "$K"; mkdir -p "$P" "$K"
  start=$(date +%s.%N)
  for c in "$C"/case_*; do
    n=$(basename "$c")
    if [ "$m" = numeric ]; then
      "$T" diagnose -q --no-model --json "$P/$n.json" --candidates "$K/$n.json" "$c" > /dev/null
    else
      "$T" diagnose -q "${mflag[@]}" --json "$P/$n.json" --candidates "$K/$n.json" "$c" > /dev/null
    fi
  done
  end=$(date +%s.%N)
  echo "== $m (seed $SEED, $N cases, fault rate $RATE; $(echo "$end - $start" | bc) s)"
  "$T" eval --truth "$C" --pred "$P" --candidates "$K" -o "$OUT/metrics_${m}.json"
done
# healthy real traces: steps flagged abnormal (false alarms)
for m in numeric model; do
  tot=0; ab=0
  while IFS= read -r f; do
    if [ "$m" = numeric ]; then a=(--no-model); else a=("${mflag[@]}"); fi
    timeout 60 "$T" diagnose -q "${a[@]}" --json "$OUT/real.json" "$f" > /dev/null 2>&1 || continue
    r=$(python3 -c 'import json,sys; s=json.load(open(sys.argv[1]))["steps"]; print(len(s), sum(1 for x in s if x.get("abnormal")))' "$OUT/real.json")
    set -- $r; tot=$((tot + $1)); ab=$((ab + $2))
  done < <(find ../shared/data/traces -name '*.json.gz' -o -name '*.sqlite' | sort)
  echo "== $m: healthy real traces, $ab of $tot steps flagged abnormal"
done
