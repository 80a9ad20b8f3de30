#!/usr/bin/env bash
# The root-cause model's ablations on one fixed split (docs/MODEL.md,
# Ablations): every row is trained by `teller train` on the same corpus
# with the same seed, then diagnoses the same held-out cases, scored by
# `teller eval` over each group of cases pooled:
#   - training: a smaller corpus than `make model`'s (the same recipe and
#     seed ranges, fewer cases, so that the rows fit a shared 2-core
#     machine): SIM simulated cases of seed 3000, SIM / 2 single-GPU ones
#     of seed 3001, and NP_TRAIN perturbed cases (training seeds 300000+)
#     of the six trace sets scripts/train-model.sh trains on and of healthy
#     simulated runs;
#   - held out: N simulated cases of seed 7000 at fault rate 0.3, N
#     single-GPU ones of seed 7003, and NP perturbed cases (report seeds
#     200000+) of each of the five trace sets no model trains on, as
#     bench/model_eval.sh.
# The first row, "numeric", is the numeric stage alone (--no-model) on the
# same held-out cases.
# SEED (environment, default 1) is the training seed of every row.
# Each row is scored twice: as teller diagnose decides with the model (the
# numeric stage's alarms stand unless vetoed, the root moves only when the
# model is sure) and with the model alone (--model-alone).
#   bench/model_ablation.sh BUILD_DIR OUT_DIR [SIM] [NP_TRAIN] [N] [NP] [ROW...]
# Rows (default: all of them): numeric all no_trace no_logs no_numbers
# trace_only logs_only numbers_only raw vocab128 vocab256 vocab512 vocab1024. Corpora are kept in OUT_DIR and
# reused; a row's model and scores are made again.
set -euo pipefail
BUILD=${1:-build}; OUT=${2:-build/model_ablation}; SIM=${3:-120}; NPT=${4:-12}; N=${5:-30}; NP=${6:-6}
shift $(($# < 6 ? $# : 6))
ROWS=${*:-numeric all no_trace no_logs no_numbers trace_only logs_only numbers_only raw vocab128 vocab256 vocab512 vocab1024}
T="$BUILD/teller"
HERE="$(cd "$(dirname "$0")" && pwd)"
SEEN="tracelens_b200_vllm tracelens_h100_hf tracelens_sglang_decode tracelens_vllm_graph hta_nccl_a100 hta_two_ranks"
HELDOUT="tracelens_mi300_hf tracelens_sglang_prefilldecode hta_ns_resolution hta_mi250 hta_trace_compare"
mkdir -p "$OUT"

simc() { # dir cases seed [topology...]: a simulated corpus at fault rate 0.3, kept once made
  local d=$1 n=$2 seed=$3; shift 3
  if [ ! -f "$d/.done" ]; then
    rm -rf "$d"
    "$T" simulate --corpus "$n" --seed "$seed" --fault all --fault-rate 0.3 "$@" -o "$d" > /dev/null
    touch "$d/.done"
  fi
}
ONE=(--nodes 1 --gpus-per-node 1)
TS="$OUT/train_sim_s3000_n$SIM"
simc "$TS" "$SIM" 3000
TS1="$OUT/train_sim1_s3001_n$((SIM / 2))"
simc "$TS1" $((SIM / 2)) 3001 "${ONE[@]}"
"$HERE/perturb_corpus.sh" "$BUILD" "$OUT/perturb_train_n$NPT" train "$NPT" 0.3 > /dev/null
TRAIN=("$TS" "$TS1" "$OUT/perturb_train_n$NPT/train_r0.3/sim_healthy")
for set in $SEEN; do TRAIN+=("$OUT/perturb_train_n$NPT/train_r0.3/$set"); done

ES="$OUT/heldout_sim_s7000_r0.3_n$N"
simc "$ES" "$N" 7000
ES1="$OUT/heldout_sim1_s7003_r0.3_n$N"
simc "$ES1" "$N" 7003 "${ONE[@]}"
"$HERE/perturb_corpus.sh" "$BUILD" "$OUT/perturb_report_n$NP" report "$NP" 0.3 > /dev/null
# the held-out real cases as one corpus (links), so that teller eval pools them
ER="$OUT/heldout_real_n$NP"
if [ ! -f "$ER/.done" ]; then
  rm -rf "$ER"; mkdir -p "$ER"
  for set in $HELDOUT; do
    for c in "$OUT/perturb_report_n$NP/report_r0.3/$set"/case_*; do ln -s "$c" "$ER/${set}_$(basename "$c")"; done
  done
  touch "$ER/.done"
fi

# one pooled line: step F1, fault-type accuracy, operator AC@3
score() { # corpus preds
  "$T" eval --truth "$1" --pred "$2" --json | python3 -c '
import json, sys
d = json.load(sys.stdin)
print("%.3f %.3f %.3f" % (d["step"]["f1"], d["fault_type"]["accuracy"] or 0, d["operator"]["ac3"] or 0))'
}

cols=""
for mode in "" " alone"; do for g in sim sim1 real; do cols="$cols | $g F1$mode | $g type$mode | $g AC@3$mode"; done; done
echo "| row | train args | epochs (kept) | val F1 (model alone) | trace tokens a step$cols |"
judge() { # row mode model-options...: the held-out groups' figures, appended to line
  local row=$1 mode=$2; shift 2
  local opts=("$@")
  for g in sim sim1 real; do
    case $g in sim) C=$ES ;; sim1) C=$ES1 ;; real) C=$ER ;; esac
    P="$OUT/preds/$row/$mode/$g"; rm -rf "$P"; mkdir -p "$P"
    for c in "$C"/case_* "$C"/*_case_*; do
      [ -e "$c" ] || continue
      "$T" diagnose -q "${opts[@]}" --json "$P/$(basename "$c").json" "$c" > /dev/null
    done
    set -- $(score "$C" "$P")
    line="$line | $1 | $2 | $3"
  done
}
for row in $ROWS; do
  if [ "$row" = numeric ]; then
    line="| numeric | --no-model | | |"
    judge numeric rules --no-model
    echo "$line |"
    continue
  fi
  case $row in
    all) a=() ;;
    no_trace) a=(--without trace) ;;
    no_logs) a=(--without logs) ;;
    no_numbers) a=(--without numbers) ;;
    trace_only) a=(--without logs --without numbers) ;;
    logs_only) a=(--without trace --without numbers) ;;
    numbers_only) a=(--without trace --without logs) ;;
    raw) a=(--trace-tokens raw) ;;
    vocab*) a=(--tpe-vocab "${row#vocab}") ;;
    *) echo "unknown row $row" >&2; exit 2 ;;
  esac
  M="$OUT/models/$row.tmod"; mkdir -p "$OUT/models"
  log="$OUT/models/$row.log"
  "$T" train -o "$M" --seed "${SEED:-1}" "${a[@]}" "${TRAIN[@]}" > "$log" 2>&1
  ep=$(sed -n 's/^trained \([0-9]*\) epochs, kept epoch \([0-9]*\).*/\1 (\2)/p' "$log")
  vf=$(sed -n 's/^validation: step F1 \([0-9.]*\) (the model alone \([0-9.]*\).*/\1 (\2)/p' "$log")
  tt=$(sed -n 's/.*base tokens a step, \([0-9.]*\) trace tokens read/\1/p' "$log")
  line="| $row | ${a[*]:-} | $ep | $vf | $tt"
  judge "$row" rules --model "$M"
  judge "$row" alone --model "$M" --model-alone
  echo "$line |"
done
