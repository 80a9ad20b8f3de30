#!/usr/bin/env bash
# tpe_transfer.sh - does a TPE vocabulary transfer to workloads it never saw?
#
# Leave-one-trace-set-out over every shared real trace with step annotations
# (../shared/data/traces) plus the simulator: for each set, a vocabulary is
# learned (`teller tpe train`) on all the other sets and measured (`teller
# tpe stats`) on the one left out, at 256 and 1024 merges. Node reduction is
# 1 - tokens after / nodes (the paper's -83.9 %), token reduction 1 - tokens
# after / tokens before (the same figure since a node is one base token, tpe.h).
# "all@256" is the same set measured with a vocabulary learned on every set,
# itself included (in distribution). Each file is one run of `tpe train`: the
# names the merges know are those 3 runs or more hold (tpe.h, "Known names").
#
# The simulator set: a seeded corpus (made once in WORK/sim); its first two
# thirds of cases are the simulator's share of every training mix, the rest
# is what is measured. Its leave-out row learns on the real sets alone; its
# "all" column is the in-distribution figure (unseen cases of a workload the
# vocabulary was learned on).
#
# Sets are workloads, not files (src/tpe/default_vocab_sets.txt, the same
# list `make vocab` learns the default vocabulary from): two ranks of one
# job or a before/after pair are one set, so the held-out set is never seen
# through a sibling file. Traces without a step annotation (the nsys-ai
# windows, whole-trace fallbacks) are not steps and are left out. The
# "all@256" vocabulary is the one `make vocab` ships (same inputs, same
# options: byte-identical).
#
# usage: bench/tpe_transfer.sh TELLER_BIN WORK_DIR [SHARED_DIR]
#   env TPE_VOCABS (default "256 1024"), TPE_SIM_CASES (default 9),
#       TPE_TRAIN_OPTS (extra `teller tpe train` options, e.g. --frames)
# Prints one row per held-out set and the mean over the real sets; the same
# script measures any build of teller (before/after comparisons).
set -euo pipefail

BIN=${1:?usage: bench/tpe_transfer.sh TELLER_BIN WORK_DIR [SHARED_DIR]}
WORK=${2:?usage: bench/tpe_transfer.sh TELLER_BIN WORK_DIR [SHARED_DIR]}
HERE=$(cd "$(dirname "$0")" && pwd)
SHARED=${3:-$HERE/../../shared}
T=$SHARED/data/traces
VOCABS=${TPE_VOCABS:-256 1024}
SIM_CASES=${TPE_SIM_CASES:-9}
mkdir -p "$WORK"

# the sets: one workload a line, "NAME FILE..." (shared with make vocab)
SETS=()
while read -r name files; do
  case $name in '#'* | '') continue ;; esac
  SETS+=("$name|$files")
done <"$HERE/../src/tpe/default_vocab_sets.txt"

SIM=$WORK/sim
if [ ! -d "$SIM/case_0000" ]; then
  "$BIN" simulate --corpus "$SIM_CASES" --steps 20 --seed 9 -o "$SIM" >/dev/null
fi
mapfile -t SIM_ALL < <(ls -d "$SIM"/case_* | sort)
NTRAIN=$(( ${#SIM_ALL[@]} * 2 / 3 ))
SIM_TRAIN=("${SIM_ALL[@]:0:$NTRAIN}")
SIM_TEST=("${SIM_ALL[@]:$NTRAIN}")

files_of() { # set index -> absolute paths
  local f
  for f in ${SETS[$1]#*|}; do printf '%s\n' "$T/$f"; done
}

# train VOCAB OUT SKIP: every set but SKIP (-1: none, "sim": leave the simulator out)
train() {
  local vocab=$1 out=$2 skip=$3 i args=()
  for i in "${!SETS[@]}"; do
    [ "$i" = "$skip" ] && continue
    mapfile -t -O "${#args[@]}" args < <(files_of "$i")
  done
  [ "$skip" = sim ] || args+=("${SIM_TRAIN[@]}")
  # shellcheck disable=SC2086
  "$BIN" tpe train --vocab "$vocab" -o "$out" ${TPE_TRAIN_OPTS:-} "${args[@]}" 2>/dev/null
}

# stats VOCAB_FILE PATHS... -> "steps nodes_per_step after_per_step red_nodes red_tokens"
stats() {
  local v=$1
  shift
  "$BIN" tpe stats --vocab-file "$v" "$@" 2>/dev/null | python3 -c '
import json, sys
d = json.load(sys.stdin)
print(d["steps"], d["nodes_per_step"], d["tokens_after_per_step"], d["reduction"], d["reduction_tokens"])'
}

names=()
for i in "${!SETS[@]}"; do names+=("${SETS[$i]%%|*}"); done
names+=("simulator")

declare -A R
for vocab in $VOCABS; do
  train "$vocab" "$WORK/all_$vocab.vocab" -1
  for i in "${!SETS[@]}" sim; do
    if [ "$i" = sim ]; then
      name=simulator
      mapfile -t paths < <(printf '%s\n' "${SIM_TEST[@]}")
    else
      name=${SETS[$i]%%|*}
      mapfile -t paths < <(files_of "$i")
    fi
    train "$vocab" "$WORK/loo_${name}_$vocab.vocab" "$i"
    R[$name,loo,$vocab]=$(stats "$WORK/loo_${name}_$vocab.vocab" "${paths[@]}")
    R[$name,all,$vocab]=$(stats "$WORK/all_$vocab.vocab" "${paths[@]}")
  done
done

first=${VOCABS%% *}
{
  printf '%-22s %5s %9s' "held-out set" steps nodes/st
  for vocab in $VOCABS; do printf ' %12s %12s' "node@$vocab" "tok@$vocab"; done
  printf ' %12s\n' "all@$first"
  for name in "${names[@]}"; do
    read -r steps nodes _ _ _ <<<"${R[$name,loo,$first]}"
    printf '%-22s %5s %9.1f' "$name" "$steps" "$nodes"
    for vocab in $VOCABS; do
      read -r _ _ _ rn rt <<<"${R[$name,loo,$vocab]}"
      printf ' %11.1f%% %11.1f%%' "$(awk -v x="$rn" 'BEGIN{print 100*x}')" "$(awk -v x="$rt" 'BEGIN{print 100*x}')"
    done
    read -r _ _ _ rn _ <<<"${R[$name,all,$first]}"
    printf ' %11.1f%%\n' "$(awk -v x="$rn" 'BEGIN{print 100*x}')"
  done
} | tee "$WORK/matrix.txt"

# means over the real sets (each set counts once), pooled (each node counts
# once); and over the sets of 40 nodes a step or more (cpu_only,
# triton_example, trace_compare, cuda_event_sync have 3 to 33: a step of 3
# nodes is 3 tokens at best, and they cannot reach much reduction at all)
for vocab in $VOCABS; do
  for name in "${names[@]}"; do
    [ "$name" = simulator ] && continue
    echo "${R[$name,loo,$vocab]}"
  done | awk -v v="$vocab" '
    { m += $4; s += $1 * $2; a += $1 * $3; n++; if ($4 < lo || n == 1) lo = $4 }
    $2 >= 40 { mb += $4; nb++ }
    END { printf "held-out real sets, vocab %s: mean node reduction %.1f %% (worst %.1f %%), pooled %.1f %%; mean over the %d sets of 40+ nodes a step %.1f %%\n", v, 100 * m / n, 100 * lo, 100 * (1 - a / s), nb, 100 * mb / nb }'
done | tee -a "$WORK/matrix.txt"
read -r _ _ _ rn _ <<<"${R[simulator,all,$first]}"
awk -v x="$rn" -v v="$first" 'BEGIN { printf "in distribution (unseen simulated cases, vocab %s learned on every set): node reduction %.1f %%\n", v, 100 * x }' |
  tee -a "$WORK/matrix.txt"
