#!/usr/bin/env bash
# gpu-check.sh - what only a GPU can show: the collector on a real CUDA
# program. Runs build/gemm_app (cuBLAS GEMMs in NVTX steps) bare and under
# `teller run`, three times each, and reports the step rate ratio and whether
# every kernel was recorded and linked to its launch.
#   scripts/gpu-check.sh [BUILD_DIR] [STEPS] [N]
# Writes $OUT/gpu-check.txt ($OUT defaults to ./gpu-check-out) plus the
# collector's run directories. Exit 0 when the traced run recorded kernels
# and linked them all; 1 otherwise; 2 without a GPU or the programs.
set -euo pipefail
build=${1:-build}
steps=${2:-200}
n=${3:-4096}
out=${OUT:-gpu-check-out}
mkdir -p "$out"
report="$out/gpu-check.txt"
for f in "$build/teller" "$build/libteller_inject.so" "$build/gemm_app"; do
    [ -x "$f" ] || [ -f "$f" ] || { echo "gpu-check: $f missing (build with the CUDA toolkit present)" >&2; exit 2; }
done
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$out/gpu.txt" 2>&1 || true

rate() { awk '/steps_per_s/ { for (i = 1; i < NF; i++) if ($i == "steps_per_s") print $(i + 1) }'; }
bare=() traced=()
for i in 1 2 3; do
    r=$("$build/gemm_app" "$steps" "$n") || { echo "gpu-check: gemm_app failed (no GPU?)" >&2; exit 2; }
    bare+=("$(rate <<< "$r")")
    "$build/teller" run -o "$out/run$i" -- "$build/gemm_app" "$steps" "$n" > /dev/null
    traced+=("$(rate < "$out/run$i/logs/stdout.log")")
done
best() { printf '%s\n' "$@" | sort -g | tail -1; }
b=$(best "${bare[@]}") t=$(best "${traced[@]}")
"$build/teller" stats --json "$out/run3" > "$out/stats.json"
kernels=$(grep -o '"kernels": *[0-9]*' "$out/stats.json" | head -1 | grep -o '[0-9]*$' || echo 0)
linked=$(grep -o '"kernels_linked": *[0-9]*' "$out/stats.json" | head -1 | grep -o '[0-9]*$' || echo 0)
"$build/teller" steps "$out/run3" > "$out/steps.txt" 2>&1 || true
{
    echo "gpu: $(cat "$out/gpu.txt")"
    echo "gemm_app $steps steps, n=$n; steps/s best of 3"
    echo "bare:   ${bare[*]} -> $b"
    echo "traced: ${traced[*]} -> $t"
    awk -v b="$b" -v t="$t" 'BEGIN { printf "traced/bare step rate: %.4f (overhead %.2f%%)\n", t / b, (1 - t / b) * 100 }'
    echo "kernels recorded: $kernels, linked to a launch: $linked"
    echo "steps cut from the trace: $(grep -c 'ProfilerStep' "$out/steps.txt" || true)"
} | tee "$report"
[ "$kernels" -gt 0 ] && [ "$kernels" = "$linked" ]
