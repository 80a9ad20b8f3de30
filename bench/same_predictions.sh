#!/usr/bin/env bash
# Whether two builds of teller diagnose the same: the predictions JSON
# and the candidates JSON, byte for byte, of every case of a simulated
# corpus (tuning and reporting seeds), a perturbed corpus of the shared real
# traces (bench/perturb_corpus.sh, tuning seeds) and every shared real
# trace. A refactoring that should change nothing is checked with it:
#   bench/same_predictions.sh BEFORE_BUILD AFTER_BUILD OUT_DIR [SIM_CASES] [PERTURBED_PER_SET]
# The corpora are made with the BEFORE build's simulate and perturb and
# kept in OUT_DIR. Exit 0 when every file is identical; else the first
# differences are listed and the exit status is 1.
set -euo pipefail
A=${1:?before build}; B=${2:?after build}; OUT=${3:-build/same}; N=${4:-20}; NP=${5:-5}
HERE="$(cd "$(dirname "$0")" && pwd)"
mkdir -p "$OUT"
cases=()
for seed in 1000 2000; do
  C="$OUT/sim_s${seed}_n$N"
  if [ ! -f "$C/.done" ]; then
    rm -rf "$C"
    "$A/teller" simulate --corpus "$N" --seed "$seed" --fault all --fault-rate 0.3 -o "$C" > /dev/null
    touch "$C/.done"
  fi
  cases+=("$C"/case_*)
done
"$HERE/perturb_corpus.sh" "$A" "$OUT/perturb" tune "$NP" 0.3 > /dev/null
cases+=("$OUT"/perturb/tune_r0.3/*/case_*)
while IFS= read -r f; do cases+=("$f"); done < <(find "$HERE/../../shared/data/traces" -name '*.json.gz' -o -name '*.sqlite' | sort)
differ=0; n=0
for c in "${cases[@]}"; do
  for side in a b; do
    bin=$A; [ $side = b ] && bin=$B
    "$bin/teller" diagnose -q --json "$OUT/$side.json" --candidates "$OUT/$side.cands.json" "$c" > "$OUT/$side.out" 2>&1 || true
  done
  n=$((n + 1))
  if ! cmp -s "$OUT/a.json" "$OUT/b.json" || ! cmp -s "$OUT/a.cands.json" "$OUT/b.cands.json"; then
    differ=$((differ + 1))
    [ $differ -le 5 ] && echo "differs: $c"
  fi
done
echo "$n cases, $differ differ"
[ $differ -eq 0 ]
