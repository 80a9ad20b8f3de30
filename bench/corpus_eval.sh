#!/usr/bin/env bash
# Accuracy on a simulated corpus: teller diagnose against the two reference
# baselines, scored by teller eval (BENCHMARK.md metrics).
#   bench/corpus_eval.sh BUILD_DIR OUT_DIR SEED CASES RATE
# The diagnosis thresholds were set on seed 1000 (tuning); report on other
# seeds (2000 is the one used in the issue notes).
set -euo pipefail
BUILD=${1:-build}; OUT=${2:-build/corpus}; SEED=${3:-2000}; N=${4:-200}; RATE=${5:-0.3}
T="$BUILD/teller"
C="$OUT/cases_s${SEED}_r${RATE}"
if [ ! -f "$C/.done" ]; then
  rm -rf "$C"
  "$T" simulate --corpus "$N" --seed "$SEED" --fault all --fault-rate "$RATE" -o "$C"
  touch "$C/.done"
fi
for m in diagnose zscore gmm; do
  P="$OUT/pred_${m}_s${SEED}_r${RATE}"
  rm -rf "$P"; mkdir -p "$P"
  for c in "$C"/case_*; do
    n=$(basename "$c")
    if [ "$m" = diagnose ]; then
      "$T" diagnose -q --json "$P/$n.json" "$c" > /dev/null
    else
      "$T" baseline "$m" -q -o "$P/$n.json" "$c"
    fi
  done
  echo "== $m  (seed $SEED, $N cases, fault rate $RATE)"
  "$T" eval --truth "$C" --pred "$P" -o "$OUT/metrics_${m}_s${SEED}_r${RATE}.json"
done
