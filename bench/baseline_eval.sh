#!/usr/bin/env bash
# teller diagnose with and without --baseline on perturbed cases in which
# every step is faulty (teller perturb --rate 1, every kind the input
# carries): every shared real trace set with steps and perturbed simulated
# healthy runs, each case's reference its unperturbed run. One table row
# per set and side, pooled by teller eval (step P/R/F1, operator AC@1/AC@3,
# fault type accuracy), and the pooled rows. Every number of the
# diagnoses against a reference is made again (--check): a mismatch stops it.
#   bench/baseline_eval.sh BUILD_DIR OUT_DIR PURPOSE CASES_PER_SET
# PURPOSE picks bench/perturb_corpus.sh's seed range (tune 100000+, report
# 200000+). Then healthy pairs, each run judged against the other: the
# shared trace_compare base and test recordings, and simulated healthy
# runs of one workload (each engine and model) with two seeds; their
# flagged steps are false alarms.
set -euo pipefail
BUILD=${1:-build}; OUT=${2:-build/baseline}; PURPOSE=${3:-report}; N=${4:-6}
T="$BUILD/teller"
. "$(dirname "$0")/shared_sets.sh" # SETS: name|inputs
bench/perturb_corpus.sh "$BUILD" "$OUT" "$PURPOSE" "$N" 1 > /dev/null
C="$OUT/${PURPOSE}_r1"
H="$OUT/healthy_s3000_n$N"
P="$OUT/pred_${PURPOSE}"
ALL=()
for entry in "${SETS[@]}" "sim_healthy|"; do
  name=${entry%%|*}; inputs=${entry#*|}
  [ -d "$C/$name" ] || continue
  for side in plain baseline; do
    mkdir -p "$P/$side/$name" "$P/$side/all"
  done
  for c in "$C/$name"/case_*; do
    i=$(basename "$c")
    ref=$inputs
    [ "$name" = sim_healthy ] && ref="$H/$i"
    base=()
    for f in $ref; do base+=(--baseline "$f"); done
    "$T" diagnose -q --json "$P/plain/$name/$i.json" "$c" > /dev/null
    "$T" diagnose -q --check "${base[@]}" --json "$P/baseline/$name/$i.json" "$c" > /dev/null # a mismatch fails
    for side in plain baseline; do cp "$P/$side/$name/$i.json" "$P/$side/all/${name}_$i.json"; done
    mkdir -p "$C/all"; ln -sfn "../$name/$i" "$C/all/${name}_$i"
  done
  ALL+=("$name")
done
row() { # name side
  local t="$C/$1" p="$P/$2/$1"
  "$T" eval --truth "$t" --pred "$p" -o "$P/$2/$1.metrics.json" > /dev/null
  python3 - "$P/$2/$1.metrics.json" "$1" "$2" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
def f(x): return "—" if x is None else f"{x:.3f}"
s, o = d["step"], d["operator"]
ft = d.get("fault_type", {}).get("accuracy")
print(f"| {sys.argv[2]} | {sys.argv[3]} | {d['steps']} | {d['abnormal_steps']} | {f(s['precision'])} | {f(s['recall'])} | "
      f"{f(s['f1'])} | {f(o['ac1'])} | {f(o['ac3'])} | {f(ft)} |")
PY
}
echo "| set | side | steps | abnormal | step P | step R | step F1 | op AC@1 | op AC@3 | fault type |"
echo "|---|---|---|---|---|---|---|---|---|---|"
for name in "${ALL[@]}" all; do
  for side in plain baseline; do row "$name" "$side"; done
done

echo
echo "| healthy pair | steps | flagged with --baseline |"
echo "|---|---|---|"
pair() { # name reference run
  local j="$P/pairs/$1.json"
  mkdir -p "$P/pairs"
  "$T" diagnose -q --baseline "$2" --json "$j" "$3" > /dev/null
  python3 - "$j" "$1" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
print(f"| {sys.argv[2]} | {len(d['steps'])} | {sum(1 for s in d['steps'] if s['abnormal'])} |")
PY
}
TC="$D/hta/trace_compare"
pair trace_compare_base_test "$TC/base/base.json.gz" "$TC/test/test.json.gz"
pair trace_compare_test_base "$TC/test/test.json.gz" "$TC/base/base.json.gz"
case "$PURPOSE" in tune) S0=4000 ;; *) S0=5000 ;; esac
i=0
for engine in vllm sglang; do
  for model in 8b 70b moe; do
    for side in a b; do
      dir="$OUT/healthy_pairs/${engine}_${model}_$side"
      seed=$((S0 + 10 * i)); [ "$side" = b ] && seed=$((seed + 1))
      [ -f "$dir/truth.json" ] || "$T" simulate -o "$dir" --engine "$engine" --model "$model" --fault-rate 0 \
        --seed "$seed" > /dev/null
    done
    pair "sim_${engine}_${model}" "$OUT/healthy_pairs/${engine}_${model}_a" "$OUT/healthy_pairs/${engine}_${model}_b"
    i=$((i + 1))
  done
done
