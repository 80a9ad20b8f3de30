#!/usr/bin/env bash
# Trains the default root-cause model, src/model/default.tmod, which the
# build embeds in the library (`make model`). Fixed and seeded: a simulated
# corpus of 120 cases from seed 3000 (the 2000 range is kept for reporting,
# 1000 for the numeric stage's tuning), training seed 1; the same binary on
# the same machine writes the same bytes.
#   scripts/train-model.sh BUILD_DIR
set -euo pipefail
BUILD=${1:-build}
T="$BUILD/teller"
C="$BUILD/model-corpus"
rm -rf "$C"
"$T" simulate --corpus 120 --seed 3000 --fault all --fault-rate 0.3 -o "$C" > /dev/null
"$T" train -o src/model/default.tmod --seed 1 "$C"
rm -rf "$C"
