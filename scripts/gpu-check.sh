#!/usr/bin/env bash
# gpu-check.sh - what only a GPU can show: the collector on a real CUDA
# program. Runs build/gemm_app (cuBLAS bf16 GEMMs in NVTX steps) bare and
# under `teller run`, alternating, three times each, on three workloads:
#   prefill  200 steps of 4 GEMMs of n 4096 (long kernels)
#   decode   STEPS steps of GEMMS GEMMs of n 128 (few-us kernels, each in an
#            NVTX range, launched one by one: where tracing costs the most)
#   graph    the decode step captured once into a CUDA graph, launched each step
# and reports for each the step rate traced against bare (the best of three
# each), the time tracing added per kernel, whether every kernel was recorded
# and linked to its launch, what `teller steps` and `teller diagnose` make of
# the traced run (a healthy run: every flagged step is a false alarm), and
# the most time CUPTI's own work (its buffer requests and flushes) took
# inside one step. Then what each activity kind costs (the decode steps
# traced with TELLER_KINDS kernel; kernel,driver,runtime; kernel,nvtx; the
# default), and, where PyTorch sees a GPU, the same decode step in PyTorch
# (tests/gpu/torch_decode.py) bare, under torch.profiler (Kineto) and under
# `teller run`: what the standard tool costs on the same step.
#   scripts/gpu-check.sh [BUILD_DIR] [STEPS] [GEMMS]   (defaults build, 50, 2000)
# env: OUT; PY, the command that runs PyTorch's python (default python3).
# Writes $OUT/gpu-check.txt ($OUT defaults to ./gpu-check-out), each
# workload's last traced run and what was read from it. Exit 0 when every
# traced run recorded all its kernels and linked them all; 1 otherwise; 2
# without a GPU or the programs.
set -euo pipefail
build=${1:-build}
dsteps=${2:-50}
dgemms=${3:-2000}
out=${OUT:-gpu-check-out}
mkdir -p "$out"
report="$out/gpu-check.txt"
for f in "$build/teller" "$build/libteller_inject.so" "$build/gemm_app"; do
    [ -f "$f" ] || { echo "gpu-check: $f missing (build with the CUDA toolkit present)" >&2; exit 2; }
done
gpu=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1 || true)

rate() { awk '{ for (i = 1; i < NF; i++) if ($i == "steps_per_s") print $(i + 1) }'; }
best() { printf '%s\n' "$@" | sort -g | tail -1; }
json_num() { grep -o "\"$1\": *[0-9]*" "$2" | head -1 | grep -o '[0-9]*$' || echo 0; }

check() { # NAME STEPS N GEMMS GRAPH
    local name=$1 steps=$2 n=$3 gemms=$4 graph=$5 bare=() traced=() r i
    local args=("$steps" "$n" "$gemms" "$graph")
    for i in 1 2 3; do
        r=$("$build/gemm_app" "${args[@]}") || { echo "gpu-check: gemm_app ${args[*]} failed (no GPU?)" >&2; exit 2; }
        bare+=("$(rate <<< "$r")")
        rm -rf "$out/$name"
        "$build/teller" run -o "$out/$name" -- "$build/gemm_app" "${args[@]}" > /dev/null
        traced+=("$(rate < "$out/$name/logs/stdout.log")")
    done
    local b t
    b=$(best "${bare[@]}") t=$(best "${traced[@]}")
    "$build/teller" stats --json "$out/$name" > "$out/$name.stats.json"
    local kernels linked warnings want
    kernels=$(json_num kernels "$out/$name.stats.json")
    linked=$(json_num kernels_linked "$out/$name.stats.json")
    warnings=$(json_num warnings "$out/$name.stats.json")
    want=$(( (steps + graph) * gemms + 1 ))
    "$build/teller" steps "$out/$name" > "$out/$name.steps.txt" 2>&1 || true
    "$build/teller" diagnose -q --no-model --json "$out/$name.pred.json" "$out/$name" > "$out/$name.diagnose.txt" 2>&1 || true
    local flagged
    flagged=$(grep -c '"abnormal": *true' "$out/$name.pred.json" 2>/dev/null || true)
    echo "== $name: gemm_app $steps steps, n $n, $gemms GEMMs a step, graph $graph"
    echo "bare steps/s:   ${bare[*]} -> $b"
    echo "traced steps/s: ${traced[*]} -> $t"
    awk -v b="$b" -v t="$t" -v k="$gemms" 'BEGIN {
        printf "traced/bare step rate: %.4f (overhead %.2f%%); added per kernel: %.2f us\n",
               t / b, (1 - t / b) * 100, (1 / t - 1 / b) / k * 1e6 }'
    echo "kernels recorded: $kernels (the program launched at least $want), linked to a launch: $linked; warnings: $warnings"
    echo "steps cut from the trace: $(grep -c 'ProfilerStep' "$out/$name.steps.txt" || true); flagged by diagnose: $flagged"
    grep -o "the profiler's own work.*inside step [0-9]* on rank [0-9]*" "$out/$name.diagnose.txt" || echo "the profiler's own work: under 20 us in every step"
    [ "$kernels" -ge "$want" ] && [ "$kernels" = "$linked" ] && echo "result $name: pass" || echo "result $name: FAIL"
}
kinds() { # GRAPH: the decode step's rate bare and traced with each kind set, two rounds
    local graph=$1 round k line
    for round in 1 2; do
        line="graph $graph, round $round: bare $("$build/gemm_app" "$dsteps" 128 "$dgemms" "$graph" | rate)"
        for k in kernel kernel,driver,runtime kernel,nvtx default; do
            rm -rf "$out/kinds"
            if [ $k = default ]; then
                env -u TELLER_KINDS "$build/teller" run -o "$out/kinds" -- "$build/gemm_app" "$dsteps" 128 "$dgemms" "$graph" > /dev/null 2>&1
            else
                TELLER_KINDS=$k "$build/teller" run -o "$out/kinds" -- "$build/gemm_app" "$dsteps" 128 "$dgemms" "$graph" > /dev/null 2>&1
            fi
            line="$line | $k $(rate < "$out/kinds/logs/stdout.log")"
        done
        echo "$line"
    done
    rm -rf "$out/kinds"
}
py=${PY:-python3}
here=$(cd "$(dirname "$0")/.." && pwd)
pytorch() { # GRAPH: torch_decode.py bare, under Kineto and under teller run, two rounds
    local graph=$1 round m line
    for round in 1 2; do
        line="graph $graph, round $round:"
        for m in bare kineto_cuda kineto_all; do
            line="$line $m $($py "$here/tests/gpu/torch_decode.py" $m "$graph" "$dsteps" "$dgemms" 2>> "$out/torch.err" | rate)"
        done
        rm -rf "$out/torch$graph"
        "$build/teller" run -o "$out/torch$graph" -- $py "$here/tests/gpu/torch_decode.py" bare "$graph" "$dsteps" "$dgemms" \
            > /dev/null 2>> "$out/torch.err"
        echo "$line teller $(rate < "$out/torch$graph/logs/stdout.log")"
    done
    "$build/teller" stats --json "$out/torch$graph" > "$out/torch$graph.stats.json" 2>> "$out/torch.err"
    echo "teller run on PyTorch: kernels $(json_num kernels "$out/torch$graph.stats.json"), linked $(json_num kernels_linked "$out/torch$graph.stats.json"), steps $(json_num steps "$out/torch$graph.stats.json")"
}
{
    echo "gpu: $gpu"
    check prefill 200 4096 4 0
    check decode "$dsteps" 128 "$dgemms" 0
    check graph "$dsteps" 128 "$dgemms" 1
    echo "== what each activity kind costs: decode steps/s by TELLER_KINDS"
    kinds 0
    kinds 1
    if $py -c 'import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)' 2> /dev/null; then
        echo "== PyTorch, the same decode step: steps/s bare, under torch.profiler (CUDA; CPU and CUDA), under teller run"
        pytorch 0
        pytorch 1
    else
        echo "== PyTorch with a GPU not found ($py): no comparison with torch.profiler"
    fi
} 2>&1 | tee "$report"
[ "$(grep -c '^result' "$report")" = 3 ] || exit 2
! grep -q '^result.*FAIL' "$report"
