#!/usr/bin/env bash
# scale.sh - the scale section of `make bench` (docs/SCALE.md); runs alone too.
#
# usage: bench/scale.sh BUILD_DIR     (env: BENCH_SCALE_REPS, default 9)
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
# BENCH_SCALE_REPS times (default 9: this machine's single thread falls into
# a fast or a slow mode from run to run, and 3 runs left one job or two
# without a fast one), best wall time of each; target: 2 jobs
# >= 1.4x faster than 1 on this 2-core machine, where two one-job loads at
# once already run up to 1.34x slower than one (the ratio of the bests), with byte-identical
# predictions. A fleet's shape beside them, no target: 1,024 ranks (64 x
# 16) of 10 steps, a file of 6-12 kB each, where what each file costs
# besides its events (opening it, appending it, waking a thread) shows. Timings on a shared machine are noisy: the load average is
# printed beside them, and the median over the rounds of one job's time
# over two jobs' (a round runs one job, then two), which a single slow or
# fast run moves less than a best.
# Last, teller-mpi on a 64-rank case (below).
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

REPS=${BENCH_SCALE_REPS:-9}
# wall seconds of one run of CMD...
wall() { local t0 t1; t0=$(date +%s.%N); "$@" >/dev/null 2>&1; t1=$(date +%s.%N); awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }'; }
echo
echo "scale: threads (best of $REPS alternating runs; load average $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores)"
printf "%-32s %9s %9s %8s %11s %8s %10s\n" "case" "1 job s" "2 jobs s" "ratio" "pair median" "target" "verdict"
for shape in "8 2 4 200" "16 4 4 200" "1024 64 16 10"; do
  set -- $shape
  CASE=$OUTDIR/threads_r$1
  [ -d "$CASE" ] || "$BUILD/teller" simulate -o "$CASE" --nodes "$2" --gpus-per-node "$3" --steps "$4" --seed 3 >/dev/null
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
    awk -v l="$1 ranks x $4 steps, $what" -v a="$T1" -v b="$T2" -v w="$what" -v tgt=$(( $1 <= 16 )) '
      function best(s,   n, v, i, m) { n = split(s, v, " "); m = v[1]; for (i = 2; i <= n; i++) if (v[i] < m) m = v[i]; return m }
      # the median of the rounds ratios (each round: one job, then two jobs)
      function pair_median(s, t,   n, u, v, q, i, j, k) {
        n = split(s, u, " "); split(t, v, " ")
        for (i = 1; i <= n; i++) q[i] = u[i] / v[i]
        for (i = 2; i <= n; i++) for (j = i; j > 1 && q[j - 1] > q[j]; j--) { k = q[j]; q[j] = q[j - 1]; q[j - 1] = k }
        return n % 2 ? q[(n + 1) / 2] : (q[n / 2] + q[n / 2 + 1]) / 2 }
      BEGIN {
        x = best(a); y = best(b); r = x / y
        t = w == "diagnose" && tgt
        printf "%-32s %9.3f %9.3f %7.2fx %10.2fx %8s %10s\n", l, x, y, r, pair_median(a, b), (t ? ">= 1.4x" : "-"),
               (t ? (r >= 1.4 ? "PASS" : "FALL SHORT") : "-") }'
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

# teller-mpi (src/mpi): a 64-rank (16 x 4) case of BENCH_MPI_STEPS steps
# (default 200; the target's case is 1,000) diagnosed by one process and by
# `mpirun -n 2` and `-n 4 teller-mpi`: wall time, peak resident memory of
# each process (/usr/bin/time per process), bytes process 0 received and
# how many of them were summaries and the readers' answers (TELLER_MPI_STATS), predictions compared
# byte for byte. Target: every
# process at most 0.40x the one-process peak under -n 4.
if [ -x "$BUILD/teller-mpi" ] && command -v mpirun >/dev/null 2>&1; then
  MSTEPS=${BENCH_MPI_STEPS:-200}
  CASE=$OUTDIR/mpi_r64_s$MSTEPS
  [ -d "$CASE" ] || "$BUILD/teller" simulate -o "$CASE" --nodes 16 --gpus-per-node 4 --steps "$MSTEPS" --seed 3 >/dev/null
  echo
  echo "scale: teller-mpi, 64 ranks x $MSTEPS steps ($(du -sh "$CASE" | cut -f1) of traces; load average $(cut -d' ' -f1-3 /proc/loadavg))"
  /usr/bin/time -f "%e %M" -o "$OUTDIR/mpi_one.time" "$BUILD/teller" diagnose -q --json "$OUTDIR/mpi_pred_one.json" "$CASE" >/dev/null 2>&1
  read -r W1 M1 < "$OUTDIR/mpi_one.time"
  printf "  %-26s %7.2f s  peak RSS %7.1f MB\n" "teller diagnose" "$W1" "$(awk -v m="$M1" 'BEGIN { print m / 1024 }')"
  for np in 2 4; do
    rm -f "$OUTDIR"/mpi_rss.* "$OUTDIR/mpi_pred_mpi.json"
    t0=$(date +%s.%N)
    TELLER_MPI_STATS=1 mpirun --allow-run-as-root --oversubscribe -x TELLER_MPI_STATS -n $np sh -c \
      '/usr/bin/time -f %M -o "$0/mpi_rss.$OMPI_COMM_WORLD_RANK" "$1/teller-mpi" diagnose -q --json "$0/mpi_pred_mpi.json" "$2"' \
      "$OUTDIR" "$BUILD" "$CASE" >/dev/null 2>"$OUTDIR/mpi_stats.txt"
    t1=$(date +%s.%N)
    bytes=$(sed -n 's/.*received \([0-9]*\) bytes.*/\1/p' "$OUTDIR/mpi_stats.txt")
    sums=$(sed -n 's/.* \([0-9]*\) of them summaries.*/\1/p' "$OUTDIR/mpi_stats.txt")
    answers=$(sed -n 's/.* \([0-9]*\) of them answers.*/\1/p' "$OUTDIR/mpi_stats.txt")
    same=$(cmp -s "$OUTDIR/mpi_pred_one.json" "$OUTDIR/mpi_pred_mpi.json" && echo identical || echo DIFFER)
    awk -v a="$t0" -v b="$t1" -v np=$np -v m1="$M1" -v by="$bytes" -v su="$sums" -v ce="$answers" -v same="$same" -v dir="$OUTDIR" -v steps="$MSTEPS" 'BEGIN {
      worst = 0; line = ""
      for (r = 0; r < np; r++) {
        f = dir "/mpi_rss." r; getline m < f; close(f)
        line = line sprintf(" %.1f", m / 1024); if (m > worst) worst = m
        if (r == 0) m0 = m
      }
      printf "  %-26s %7.2f s  peak RSS per process (MB):%s; process 0 %.2fx, worst %.2fx the one process (target <= 0.40x: %s)\n",
             "teller-mpi -n " np, b - a, line, m0 / m1, worst / m1, (worst / m1 <= 0.40 ? "PASS" : "FALL SHORT")
      sent = 64 - int(64 / np) # process 0 reads files 0 .. 64/np - 1 itself
      printf "  %-26s %.1f MB received by process 0 from %d ranks (%.1f KB per rank per step), of which summaries %.1f MB (%.0f bytes per rank per step) and answers %.1f MB (%.0f); predictions %s\n", "", by / 1e6, sent, by / 1024 / sent / steps, su / 1e6, su / sent / steps, ce / 1e6, ce / sent / steps, same
    }'
  done
fi
exit 0
