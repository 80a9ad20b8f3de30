#!/usr/bin/env bash
# Recall and AC@3 on tensor-parallel vLLM and SGLang corpora whose decode
# all-reduces go through the engines' custom all-reduce, for two builds of
# teller diagnose on the same cases (made by the AFTER build's simulate):
#   bench/custom_ar_eval.sh BEFORE_BUILD AFTER_BUILD OUT_DIR [SEED] [CASES]
# Per engine, CASES cases alternate two topologies: one node of 4 GPUs
# (tp 4), and two nodes of 4 (tp 4 inside each node, pp 2 across them: a
# slow link shows on the stages' sends). Report on seeds 2000+, tune on
# 1000-1999.
set -euo pipefail
A=${1:?before build}; B=${2:?after build}; OUT=${3:-build/custom_ar}; SEED=${4:-2000}; N=${5:-12}
for engine in vllm sglang; do
  C="$OUT/${engine}_s${SEED}_n$N"
  if [ ! -f "$C/.done" ]; then
    rm -rf "$C"; mkdir -p "$C"
    for i in $(seq 0 $((N - 1))); do
      if [ $((i % 2)) = 0 ]; then topo="--nodes 1 --gpus-per-node 4 --tp 4 --pp 1"
      else topo="--nodes 2 --gpus-per-node 4 --tp 4 --pp 2"; fi
      # shellcheck disable=SC2086
      "$B/teller" simulate --engine "$engine" $topo --fault all --fault-rate 0.3 --seed $((SEED + i)) \
        -o "$(printf '%s/case_%04d' "$C" "$i")" > /dev/null
    done
    touch "$C/.done"
  fi
  for side in before after; do
    bin=$A; [ $side = after ] && bin=$B
    P="$OUT/pred_${side}_${engine}_s${SEED}_n$N"
    rm -rf "$P"; mkdir -p "$P"
    for c in "$C"/case_*; do
      "$bin/teller" diagnose -q --json "$P/$(basename "$c").json" "$c" > /dev/null 2>&1 || true
    done
    echo "== $engine $side ($N cases, seed $SEED)"
    "$B/teller" eval --truth "$C" --pred "$P" -o "$OUT/metrics_${side}_${engine}_s${SEED}_n$N.json"
  done
done
