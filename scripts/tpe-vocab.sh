#!/usr/bin/env bash
# tpe-vocab.sh - learns the default TPE vocabulary, src/tpe/default.vocab
# (`make vocab`), which the library embeds (teller_tpe_vocab_default).
#
# Inputs: the trace sets of src/tpe/default_vocab_sets.txt (every shared
# real trace with step annotations) and the first two thirds of a seeded
# simulator corpus; 256 merges, default options (frames left out, crossing
# levels, duration buckets, runs balanced, names known to the merges when 3
# runs or more hold them, each file a run). Deterministic: the same inputs
# give the same bytes (the trainer breaks ties by symbol id, and symbols
# are numbered in input order).
#
# usage: scripts/tpe-vocab.sh BUILD_DIR [SHARED_DIR]
set -euo pipefail
BUILD=${1:?usage: scripts/tpe-vocab.sh BUILD_DIR [SHARED_DIR]}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SHARED=${2:-$ROOT/../shared}
BIN=$BUILD/teller
SIM=$BUILD/vocab/sim
rm -rf "$SIM" # made afresh: the corpus is an input, and the simulator may have changed
"$BIN" simulate --corpus 9 --steps 20 --seed 9 -o "$SIM" >/dev/null
args=()
while read -r name files; do
  case $name in '#'* | '') continue ;; esac
  for f in $files; do args+=("$SHARED/data/traces/$f"); done
done <"$ROOT/src/tpe/default_vocab_sets.txt"
mapfile -t sim < <(ls -d "$SIM"/case_* | sort)
args+=("${sim[@]:0:$(( ${#sim[@]} * 2 / 3 ))}")
"$BIN" tpe train --vocab 256 -o "$ROOT/src/tpe/default.vocab" "${args[@]}"
