#!/usr/bin/env bash
# diff.sh - the diff section of `make bench`; runs alone too.
#
# What `teller diff A -- B` costs over reading A and B: two uncompressed
# Kineto traces of about BENCH_DIFF_MB MB (default 200) made by gen_trace.py
# from the real vLLM step it replicates (A of BENCH_DIFF_MB MB, B 5 % more
# copies, so the two runs differ in their number of steps), kept in
# BUILD/bench/ and reused. Both commands run with -j 1 under /usr/bin/time
# -v, whole process: `teller stats --force A B` reads both and builds their
# trees in one store (the --force keeps the two rank-0 files that cannot be
# one run), `teller diff A -- B` reads each into its own store, checks that
# they can be compared and compares them. Each runs 3 times, alternating
# (the machine is shared); reported: the least wall seconds and the largest
# peak resident memory of each, and diff over stats as ratios. A benchmark
# reports; it does not fail.
#
# usage: bench/diff.sh BUILD_DIR        (env: BENCH_DIFF_MB)
set -euo pipefail

BUILD=${1:?usage: bench/diff.sh BUILD_DIR}
HERE=$(cd "$(dirname "$0")" && pwd)
MB=${BENCH_DIFF_MB:-200}
MB_B=$(python3 -c "print(round($MB * 1.05))")
OUTDIR=$BUILD/bench
A=$OUTDIR/diff_a_${MB}mb.json
B=$OUTDIR/diff_b_${MB_B}mb.json
TELLER=$BUILD/teller

[ -x "$TELLER" ] || { echo "bench: $TELLER is missing; run make first" >&2; exit 1; }
mkdir -p "$OUTDIR"
for f in "$A:$MB" "$B:$MB_B"; do
  path=${f%%:*} size=${f##*:}
  if [ ! -s "$path" ]; then
    echo "bench: generating $path (once; reused after)"
    python3 "$HERE/gen_trace.py" "$path" --mb "$size"
  fi
done

# Runs a command under /usr/bin/time -v; prints "WALL_S RSS_KB".
measure() {
  local log
  log=$(mktemp)
  /usr/bin/time -v "$@" >/dev/null 2>"$log" || { cat "$log" >&2; rm -f "$log"; return 1; }
  awk -F': ' '/Elapsed \(wall clock\)/ {n = split($2, t, ":"); s = 0; for (i = 1; i <= n; i++) s = s * 60 + t[i]}
              /Maximum resident set size/ {r = $2} END {printf "%.2f %d\n", s, r}' "$log"
  rm -f "$log"
}

echo
echo "diff: teller diff of two recordings against reading them alone (-j 1, whole process)"
echo "  A: $A ($(du -m "$A" | cut -f1) MB)"
echo "  B: $B ($(du -m "$B" | cut -f1) MB)"
"$TELLER" stats -q -j 1 --force "$A" "$B" >/dev/null # warm the page cache
s_wall=999999 s_rss=0 d_wall=999999 d_rss=0
for _ in 1 2 3; do
  read -r w r < <(measure "$TELLER" stats -q -j 1 --force "$A" "$B")
  s_wall=$(python3 -c "print(min($s_wall, $w))") s_rss=$((r > s_rss ? r : s_rss))
  read -r w r < <(measure "$TELLER" diff -q -j 1 "$A" -- "$B")
  d_wall=$(python3 -c "print(min($d_wall, $w))") d_rss=$((r > d_rss ? r : d_rss))
done
printf "  %-36s %8s s %10s MB\n" "teller stats --force A B (read)" "$s_wall" "$((s_rss / 1024))"
printf "  %-36s %8s s %10s MB\n" "teller diff A -- B" "$d_wall" "$((d_rss / 1024))"
python3 -c "print('  diff / read: wall %.2fx, peak memory %.2fx' % ($d_wall / $s_wall, $d_rss / $s_rss))"
