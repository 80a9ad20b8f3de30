#!/usr/bin/env bash
# ingest.sh - the ingest section of `make bench`; runs alone too.
#
# Loads an uncompressed Kineto trace of BENCH_MB MB (default 1100; made by
# gen_trace.py from a real vLLM step, one rank, kept in BUILD/bench/ and
# reused) through teller_load (read, trees, the one-run check; one job) and
# compares it with Python parsing the same file with json.load (which only
# parses), in the same run. Targets, from the issue: at least 300 MB/s on
# one core, at least 5x Python, and under 64 bytes of resident memory per
# event on top of the interned strings. With a second build directory
# (BEFORE), its bench_ingest runs on the same file too, for a before/after
# in one run. A benchmark reports; it does not fail.
#
# usage: bench/ingest.sh BUILD_DIR [BEFORE_BUILD_DIR]      (env: BENCH_MB)
set -euo pipefail

BUILD=${1:?usage: bench/ingest.sh BUILD_DIR [BEFORE_BUILD_DIR]}
BEFORE=${2:-}
HERE=$(cd "$(dirname "$0")" && pwd)
MB=${BENCH_MB:-1100}
OUTDIR=$BUILD/bench
TRACE=$OUTDIR/kineto_${MB}mb.json
BIN=$BUILD/bench_ingest

TARGET_MBS=300
TARGET_SPEEDUP=5
TARGET_BPE=64

[ -x "$BIN" ] || { echo "bench: $BIN is missing; run make first" >&2; exit 1; }
mkdir -p "$OUTDIR"

if [ ! -s "$TRACE" ]; then
  need_kb=$(( (MB * 1000 * 1000 / 1024) + 200000 ))
  free_kb=$(df -Pk "$OUTDIR" | awk 'NR==2 {print $4}')
  if [ "$free_kb" -lt "$need_kb" ]; then
    echo "bench: not enough disk for a ${MB} MB trace in $OUTDIR" >&2
    exit 1
  fi
  echo "bench: generating $TRACE (once; reused after)"
  python3 "$HERE/gen_trace.py" "$TRACE" --mb "$MB"
fi

# Warm the page cache (and the binary), then measure.
echo "bench: warm-up run"
"$BIN" "$TRACE" >/dev/null
echo "bench: teller run"
TELLER_OUT=$("$BIN" "$TRACE")
echo "$TELLER_OUT" | sed 's/^/  /'
BEFORE_OUT=
if [ -n "$BEFORE" ]; then
  echo "bench: teller run, build $BEFORE"
  BEFORE_OUT=$("$BEFORE/bench_ingest" "$TRACE")
  echo "$BEFORE_OUT" | sed 's/^/  /'
fi

echo "bench: python json.load run"
PY_OUT=$(python3 - "$TRACE" <<'EOF'
import json, sys, time
t0 = time.perf_counter()
with open(sys.argv[1]) as f:
    json.load(f)
print("seconds %.3f" % (time.perf_counter() - t0))
EOF
)
echo "$PY_OUT" | sed 's/^/  /'

val() { echo "$1" | awk -v k="$2" '$1 == k {print $2; exit}'; }
P_SEC=$(val "$PY_OUT" seconds)
report() { # OUT LABEL
  local out=$1 label=$2
  awk -v bytes="$(val "$out" file_bytes)" -v ts="$(val "$out" seconds)" -v tmbs="$(val "$out" mb_per_s)" \
      -v ps="$P_SEC" -v bpe="$(val "$out" bytes_per_event)" -v events="$(val "$out" events)" \
      -v str="$(val "$out" str_bytes)" -v label="$label" \
      -v tm="$TARGET_MBS" -v tx="$TARGET_SPEEDUP" -v tb="$TARGET_BPE" '
  function verdict(ok) { return ok ? "PASS" : "FALL SHORT" }
  BEGIN {
    pmbs = bytes / 1e6 / ps
    speedup = ps / ts
    printf "\n"
    printf "ingest benchmark%s: %.1f MB file, %d events, %.1f MB of interned strings\n", label, bytes / 1e6, events, str / 1e6
    printf "%-34s %12s %12s %12s\n", "measure", "value", "target", "verdict"
    printf "%-34s %12.1f %12s %12s\n", "teller load + trees (MB/s)", tmbs, ">= " tm, verdict(tmbs >= tm)
    printf "%-34s %12.1f %12s %12s\n", "python json.load (MB/s)", pmbs, "-", "-"
    printf "%-34s %11.1fx %11s %12s\n", "speedup, teller vs python", speedup, ">= " tx "x", verdict(speedup >= tx)
    printf "%-34s %12.1f %12s %12s\n", "resident bytes/event (+strings)", bpe, "< " tb, verdict(bpe < tb)
  }'
}
report "$TELLER_OUT" ""
[ -z "$BEFORE_OUT" ] || report "$BEFORE_OUT" " (build $BEFORE)"
echo "  (load average $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores)"
