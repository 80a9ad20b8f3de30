#!/usr/bin/env bash
# scale.sh - the scale section of `make bench` (docs/SCALE.md); runs alone too.
#
# usage: bench/scale.sh BUILD_DIR     (env: BENCH_SCALE_REPS, default 3)
set -euo pipefail
BUILD=${1:?usage: bench/scale.sh BUILD_DIR}
OUTDIR=$BUILD/bench
mkdir -p "$OUTDIR"

# ===========================================================================
# Scale. First a 2-node, 16-GPU, 200-step case (70B, tensor
# parallel 8, pipeline 2): simulation in seconds, diagnosis under 10 s,
# beside the time to load it. Then threads: 8-rank (2x4) and 16-rank (4x4)
# simulated cases of 200 steps, `teller diagnose` and the load alone
# (`teller stats`) with --jobs 1 and --jobs 2, run alternately
# BENCH_SCALE_REPS times (default 3), best wall time of each; target: 2 jobs
# >= 1.7x faster than 1, with byte-identical predictions. Timings on a
# shared machine are noisy: the load average is printed beside them.
# ===========================================================================
BIG=$OUTDIR/scale_case
rm -rf "$BIG"
t0=$(date +%s.%N)
"$BUILD/teller" simulate -o "$BIG" --nodes 2 --gpus-per-node 8 --tp 8 --pp 2 --steps 200 --model 70b --fault all --seed 3 >/dev/null
t1=$(date +%s.%N)
"$BUILD/teller" stats -q "$BIG" >/dev/null
t2=$(date +%s.%N)
"$BUILD/teller" diagnose -q --json "$BIG/pred.json" "$BIG" >/dev/null
t3=$(date +%s.%N)
awk -v a="$t0" -v b="$t1" -v c="$t2" -v d="$t3" 'BEGIN {
  printf "\nscale: 16 ranks x 200 steps\n"
  printf "%-34s %10.2f s\n", "simulate", b - a
  printf "%-34s %10.2f s\n", "load (teller stats)", c - b
  printf "%-34s %10.2f s  (%.2fx the load; target < 10 s: %s)\n", "diagnose (load + analysis)", d - c, (d - c) / (c - b), (d - c < 10 ? "PASS" : "FALL SHORT")
}'

REPS=${BENCH_SCALE_REPS:-3}
# wall seconds of one run of CMD...
wall() { local t0 t1; t0=$(date +%s.%N); "$@" >/dev/null 2>&1; t1=$(date +%s.%N); awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }'; }
echo
echo "scale: threads (best of $REPS alternating runs; load average $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores)"
printf "%-32s %9s %9s %8s %8s %10s\n" "case" "1 job s" "2 jobs s" "ratio" "target" "verdict"
for shape in "8 2 4" "16 4 4"; do
  set -- $shape
  CASE=$OUTDIR/threads_r$1
  [ -d "$CASE" ] || "$BUILD/teller" simulate -o "$CASE" --nodes "$2" --gpus-per-node "$3" --steps 200 --seed 3 >/dev/null
  for what in diagnose stats; do
    T1=; T2=
    for r in $(seq "$REPS"); do
      for j in 1 2; do
        if [ $what = diagnose ]; then
          t=$(wall "$BUILD/teller" diagnose -q -j $j --json "$CASE/pred_j$j.json" "$CASE")
        else
          t=$(wall "$BUILD/teller" stats -q -j $j "$CASE")
        fi
        if [ $j = 1 ]; then T1="$T1 $t"; else T2="$T2 $t"; fi
      done
    done
    awk -v l="$1 ranks x 200 steps, $what" -v a="$T1" -v b="$T2" -v w="$what" '
      function best(s,   n, v, i, m) { n = split(s, v, " "); m = v[1]; for (i = 2; i <= n; i++) if (v[i] < m) m = v[i]; return m }
      BEGIN {
        x = best(a); y = best(b); r = x / y
        printf "%-32s %9.3f %9.3f %7.2fx %8s %10s\n", l, x, y, r, (w == "diagnose" ? ">= 1.7x" : "-"),
               (w == "diagnose" ? (r >= 1.7 ? "PASS" : "FALL SHORT") : "-") }'
  done
  if cmp -s "$CASE/pred_j1.json" "$CASE/pred_j2.json"; then
    echo "  $1 ranks: predictions with 1 and 2 jobs byte-identical"
  else
    echo "  $1 ranks: predictions with 1 and 2 jobs DIFFER"
  fi
done

# zlib against libdeflate on the rank files above (bench/bench_inflate.c):
# the Kineto reader inflates gzip files of up to 64 MiB whole with libdeflate
echo
echo "scale: inflate of .json.gz rank files, MB/s of JSON (best of 5)"
"$BUILD/bench_inflate" "$OUTDIR/threads_r8/rank0.trace.json.gz" "$OUTDIR/threads_r16/rank0.trace.json.gz" |
  awk '{ printf "  %-48s zlib %7.1f  libdeflate %7.1f  (%.2fx)\n", $2 " (" sprintf("%.1f", $6 / 1e6) " MB)", $8, $10, $12 }'
exit 0
