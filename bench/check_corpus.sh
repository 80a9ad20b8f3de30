#!/usr/bin/env bash
# teller diagnose --check over corpora: every number of every explanation
# (and of the HTML report) made again from the trace. Sums the facts made
# again, the numbers read and the mismatches over every case given (case
# directories or trace files), and lists the cases with a mismatch.
#   bench/check_corpus.sh BUILD_DIR CASE_OR_TRACE...
set -uo pipefail
BUILD=${1:?build dir}; shift
T="$BUILD/teller"
facts=0; numbers=0; mism=0; n=0; bad=0
tmp=$(mktemp -d)
for c in "$@"; do
  out=$("$T" diagnose -q --check --html "$tmp/r.html" "$c" 2>/dev/null | grep '^check:' || true)
  line=$(echo "$out" | head -1)
  read -r f nm m < <(echo "$line" | sed -E 's/check: ([0-9]+) facts.* ([0-9]+) numbers read, ([0-9]+) mismatch.*/\1 \2 \3/')
  [ -n "${f:-}" ] || { echo "no check line: $c"; bad=$((bad + 1)); continue; }
  facts=$((facts + f)); numbers=$((numbers + nm)); mism=$((mism + m)); n=$((n + 1))
  [ "$m" -gt 0 ] && echo "mismatch in $c: $(echo "$out" | tail -1)"
done
rm -rf "$tmp"
echo "$n cases: $facts facts made again from the trace, $numbers numbers read, $mism mismatches"
[ "$bad" -eq 0 ] || echo "$bad cases gave no check line (diagnose failed)"
