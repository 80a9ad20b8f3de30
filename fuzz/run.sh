#!/usr/bin/env bash
# run.sh - builds the libFuzzer targets with clang and runs each for a while.
#
# Build: build-fuzz/, clang, -DTELLER_FUZZ=ON, warnings as errors. The whole
# library is compiled with coverage instrumentation (-fsanitize=fuzzer-no-link)
# and ASan+UBSan, so libFuzzer sees inside the parsers, not just the harness.
#
# Run: each target for FUZZ_SECONDS (default 60) with -max_len=65536, the seed
# corpus in fuzz/corpus/ (read only) and fuzz/kineto.dict; what the fuzzer
# learns goes to a scratch corpus in build-fuzz/corpus/<target>/ (kept between
# runs). A crash, leak, timeout or out-of-memory input is written to
# build-fuzz/artifacts/ and makes the script exit non-zero after the rest ran.
#
# usage: fuzz/run.sh [TARGET...]     (default: every fuzz_*.c in fuzz/)
# env:   FUZZ_SECONDS, FUZZ_BUILD (default build-fuzz), FUZZ_NICE (e.g. 10)
set -euo pipefail

cd "$(dirname "$0")/.."
SECONDS_EACH=${FUZZ_SECONDS:-60}
B=${FUZZ_BUILD:-build-fuzz}
NICE=()
[ -n "${FUZZ_NICE:-}" ] && NICE=(nice -n "$FUZZ_NICE")

TELLER_WANT_CLANG=1 scripts/install-deps

if [ $# -gt 0 ]; then
  targets=("$@")
else
  targets=()
  for f in fuzz/fuzz_*.c; do
    t=$(basename "$f" .c)
    targets+=("$t")
  done
fi

INSTR="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
cmake -S . -B "$B" -G Ninja -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DTELLER_FUZZ=ON -DTELLER_WERROR=ON -DCMAKE_C_FLAGS="$INSTR" >/dev/null
ninja -C "$B" "${targets[@]}"

mkdir -p "$B/artifacts" "$B/logs"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

failed=()
for t in "${targets[@]}"; do
  name=${t#fuzz_}
  seeds=()
  [ -d "fuzz/corpus/$name" ] && seeds+=("fuzz/corpus/$name")
  # the tokenizer also learns from whole traces; packed stores, summaries and rounds are made from them
  { [ "$name" = json ] || [ "$name" = pack ] || [ "$name" = summary ] || [ "$name" = rounds ]; } && [ -d fuzz/corpus/kineto ] && seeds+=(fuzz/corpus/kineto)
  [ "$name" = watch ] && seeds+=(fuzz/corpus/tlt)
  # the requests read service logs
  [ "$name" = requests ] && seeds+=(fuzz/corpus/logs)
  dict=()
  if [ -f "fuzz/$name.dict" ]; then
    dict=(-dict="fuzz/$name.dict")
  elif [ "$name" = json ] && [ -f fuzz/kineto.dict ]; then
    dict=(-dict=fuzz/kineto.dict)
  elif [ "$name" = requests ]; then
    dict=(-dict=fuzz/logs.dict)
  fi
  work="$B/corpus/$t"
  mkdir -p "$work"
  log="$B/logs/$t.log"
  echo "fuzz: $t for ${SECONDS_EACH}s (log $log)"
  rc=0
  "${NICE[@]}" "$B/$t" -max_len=65536 -max_total_time="$SECONDS_EACH" -timeout=30 -rss_limit_mb=2048 \
    -print_final_stats=1 -artifact_prefix="$B/artifacts/$t-" "${dict[@]}" "$work" "${seeds[@]}" \
    >"$log" 2>&1 || rc=$?
  # the last status line: "#N DONE cov: C ft: F corp: ..." (or the line before a crash)
  grep -E '^#[0-9]+' "$log" | tail -1 | sed "s/^/  $t: /" || true
  grep -E '^stat::(number_of_executed_units|average_exec_per_sec|peak_rss_mb)' "$log" | sed "s/^/  $t: /" || true
  if [ "$rc" -ne 0 ]; then
    failed+=("$t")
    echo "fuzz: $t FAILED (exit $rc)"
    grep -E '^(==[0-9]+==ERROR|SUMMARY|.*runtime error|fuzz_[a-z]+: property failed)' "$log" | head -5 | sed 's/^/  /' || true
    grep -E 'Test unit written to' "$log" | sed 's/^.*Test unit written to /  crash input: /' || true
  fi
done

if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz: failures in ${failed[*]}; inputs in $B/artifacts/"
  exit 1
fi
echo "fuzz: no crashes"
