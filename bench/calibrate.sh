#!/usr/bin/env bash
# teller calibrate on every shared real trace set with four or more steps
# and on two healthy simulated runs (a single GPU, 200 steps; 2 nodes x 4
# GPUs, 100 steps; report seeds 2101, 2102, or SIM_SEED and the next; the
# tuning seeds 1101 and 1102 with SIM_SEED=1101 SIM_ONLY=1): each run's
# held-out table (the numeric stage, the base model, the calibrated one)
# and its wall time.
#   bench/calibrate.sh BUILD_DIR OUT_DIR [MODEL] [CASES] [HELD_OUT]
# MODEL defaults to the built-in one; CASES (20) training and HELD_OUT (10)
# held-out perturbed cases per run.
set -euo pipefail
BUILD=${1:-build}; OUT=${2:-build/calibrate}; MODEL=${3:-}; N=${4:-20}; H=${5:-10}
T="$BUILD/teller"
D="$(cd "$(dirname "$0")/.." && pwd)/../shared/data/traces"
mflag=(); [ -n "$MODEL" ] && mflag=(--base "$MODEL")
mkdir -p "$OUT"
S=${SIM_SEED:-2101}
[ -d "$OUT/sim_1gpu" ] || "$T" simulate --nodes 1 --gpus-per-node 1 --steps 200 --fault-rate 0 --seed "$S" -o "$OUT/sim_1gpu" > /dev/null
[ -d "$OUT/sim_2x4" ] || "$T" simulate --nodes 2 --gpus-per-node 4 --steps 100 --fault-rate 0 --seed $((S + 1)) -o "$OUT/sim_2x4" > /dev/null
RUNS=("sim_1gpu|$OUT/sim_1gpu" "sim_2x4|$OUT/sim_2x4")
[ "${SIM_ONLY:-0}" = 1 ] || RUNS=("hta_ns_resolution|$D/hta/ns_resolution_trace/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz" "${RUNS[@]}")
for e in "${RUNS[@]}"; do
  name=${e%%|*}; run=${e#*|}
  rm -rf "$OUT/work_$name"
  t0=$(date +%s.%N)
  "$T" calibrate -o "$OUT/$name.tmod" "${mflag[@]}" --cases "$N" --held-out "$H" --keep "$OUT/work_$name" "$run" \
    > "$OUT/$name.txt" 2> "$OUT/$name.err"
  t1=$(date +%s.%N)
  echo "== $name ($(python3 -c "print(f'{$t1 - $t0:.0f}')") s)"
  sed -n '/^held out/,$p' "$OUT/$name.txt"
done
