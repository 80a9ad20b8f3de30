#!/usr/bin/env bash
# A perturbed corpus from every shared real trace with step annotations
# (teller perturb), for the root-cause model's training and for reporting;
# with EVAL=1, teller diagnose on every case, scored by teller eval, and a
# table per trace set and fault kind beside a simulated corpus.
#   bench/perturb_corpus.sh BUILD_DIR OUT_DIR PURPOSE CASES_PER_SET RATE
# PURPOSE picks a seed range, kept apart so that nothing tuned or trained on
# one is reported on another: tune 100000+, report 200000+, train 300000+.
# Case i of set s has seed BASE + 1000*s + i. SIM_CASES (default 40)
# simulated cases (seed 2000, the simulator's reporting seed) give the
# comparison row; "sim_healthy" perturbs N healthy simulated runs (seed
# 3000, no simulated fault): the perturbation's physics on runs as long and
# wide as the simulator's.
set -euo pipefail
BUILD=${1:-build}; OUT=${2:-build/perturb}; PURPOSE=${3:-report}; N=${4:-20}; RATE=${5:-0.3}
T="$BUILD/teller"
case "$PURPOSE" in
  tune) BASE=100000 ;; report) BASE=200000 ;; train) BASE=300000 ;;
  *) echo "PURPOSE is tune, report or train" >&2; exit 2 ;;
esac
. "$(dirname "$0")/shared_sets.sh" # SETS: name|inputs
C="$OUT/${PURPOSE}_r${RATE}"
mkdir -p "$C"
s=0
for entry in "${SETS[@]}"; do
  name=${entry%%|*}; inputs=${entry#*|}
  for ((i = 0; i < N; i++)); do
    dir=$(printf "%s/%s/case_%04d" "$C" "$name" "$i")
    [ -f "$dir/truth.json" ] && continue
    rm -rf "$dir" # what an interrupted run left
    # shellcheck disable=SC2086
    "$T" perturb -q -o "$dir" --rate "$RATE" --seed $((BASE + 1000 * s + i)) $inputs 2> /dev/null
  done
  s=$((s + 1))
done
H="$OUT/healthy_s3000_n$N" # a corpus of N cases: another N is another corpus
if [ ! -f "$H/.done" ]; then
  rm -rf "$H"
  "$T" simulate --corpus "$N" --seed 3000 --fault-rate 0 -o "$H" > /dev/null
  touch "$H/.done"
fi
for ((i = 0; i < N; i++)); do
  dir=$(printf "%s/sim_healthy/case_%04d" "$C" "$i")
  [ -f "$dir/truth.json" ] && continue
  rm -rf "$dir"
  "$T" perturb -q -o "$dir" --rate "$RATE" --seed $((BASE + 1000 * s + i)) "$(printf "%s/case_%04d" "$H" "$i")" 2> /dev/null
done
echo "corpus: $C ($N cases per set, rate $RATE, seeds from $BASE)"
[ "${EVAL:-0}" = 1 ] || exit 0

score() { # corpus dir, predictions dir, metrics file
  rm -rf "$2"; mkdir -p "$2"
  for c in "$1"/case_*; do "$T" diagnose -q --json "$2/$(basename "$c").json" "$c" > /dev/null; done
  "$T" eval --truth "$1" --pred "$2" -o "$3" > /dev/null
}
M="$OUT/metrics_${PURPOSE}_r${RATE}"
mkdir -p "$M"
for name in $(for e in "${SETS[@]}"; do echo "${e%%|*}"; done) sim_healthy; do
  score "$C/$name" "$OUT/pred_${PURPOSE}_r${RATE}/$name" "$M/$name.json"
done
SIMC="$OUT/sim_s2000_r${RATE}"
if [ ! -f "$SIMC/.done" ]; then
  rm -rf "$SIMC"
  "$T" simulate --corpus "${SIM_CASES:-40}" --seed 2000 --fault all --fault-rate "$RATE" -o "$SIMC" > /dev/null
  touch "$SIMC/.done"
fi
score "$SIMC" "$OUT/pred_sim_r${RATE}" "$M/simulated.json"
python3 - "$M" <<'EOF'
import json, os, sys
m = sys.argv[1]
def num(x):  # eval writes null for a figure with nothing to count
    return x if x is not None else float("nan")
def far(d):  # false alarms over the steps that were not abnormal, from accuracy and recall
    neg = d["steps"] - d["abnormal_steps"]
    tp = (d["step"]["recall"] or 0.0) * d["abnormal_steps"]
    tn = d["step"]["accuracy"] * d["steps"] - tp
    return max(0.0, (neg - tn) / neg) if neg > 0 else float("nan")
print("| set | steps | abnormal | fault | abnormal steps | step recall | operator AC@3 | false-alarm rate |")
print("|---|---|---|---|---|---|---|---|")
names = sorted(f[:-5] for f in os.listdir(m) if f.endswith(".json") and f != "simulated.json") + ["simulated"]
for n in names:
    d = json.load(open(os.path.join(m, n + ".json")))
    print(f"| {n} | {d['steps']} | {d['abnormal_steps']} | all | {d['abnormal_steps']} | {num(d['step']['recall']):.3f} | "
          f"{num(d['operator']['ac3']):.3f} | {far(d):.3f} |")
    for f, x in sorted(d.get("by_fault", {}).items()):
        print(f"| {n} | | | {f} | {x['abnormal_steps']} | {num(x['step']['recall']):.3f} | "
              f"{num(x['operator']['ac3']):.3f} | |")
EOF
