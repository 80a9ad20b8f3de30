#!/usr/bin/env bash
# teller watch against teller diagnose, its latency and its memory
# (docs/WATCH.md):
#   bench/watch.sh BUILD OUT [same|live|memory]...   (default: same live)
# same    a simulated 2-rank run (every fault kind, a hang at the end) and
#         a perturbed real trace (HTA's ns_resolution rank, looped 40 times,
#         report seed 200011), each replayed into a directory: `teller watch
#         --once` against `teller diagnose` of that directory, step by step
#         after the 64-step window (bench/watch_same.py)
# live    the simulated run (without its hang) replayed ten times over (about
#         30 s) at real time with the
#         collector's 1 s flush while `teller watch` follows it: the same
#         comparison, and the latency from reading a step's last marker to
#         its line
# metrics the simulated run replayed at real time while
#         `teller watch --listen 127.0.0.1:0` follows it: /metrics fetched
#         with curl during the run, checked by promtool when it is there
#         (Debian's prometheus package: TELLER_WANT_PROMTOOL=1 scripts/install-deps)
# memory  a healthy 2-rank pipeline run (2 nodes x 1 GPU, 100 steps) looped
#         MEMORY_LOOPS times (default 10000: 1 M steps) as fast as it writes,
#         followed by `teller watch --progress 20`: resident memory against
#         steps diagnosed
set -euo pipefail
B=$(cd "${1:?build dir}" && pwd); OUT=${2:?out dir}; shift 2
what=("$@"); [ ${#what[@]} -eq 0 ] && what=(same live)
HERE="$(cd "$(dirname "$0")" && pwd)"
T="$B/teller"
SHARED="$HERE/../../shared/data/traces"
mkdir -p "$OUT"

sim() { # sim DIR FAULTS
  [ -d "$1" ] || "$T" simulate -o "$1" --nodes 1 --gpus-per-node 2 --steps 400 --model 8b --fault "$2" \
    --fault-rate 0.05 --seed 11 --log-capture > /dev/null
}

for w in "${what[@]}"; do
  case $w in
  same)
    sim "$OUT/sim" all
    if [ ! -d "$OUT/real" ]; then
      "$T" replay -q -o "$OUT/real_loop" --speed 0 --loop 40 \
        "$SHARED/hta/ns_resolution_trace/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz" > /dev/null
      "$T" perturb -o "$OUT/real" --rate 0.2 --seed 200011 "$OUT/real_loop" > /dev/null 2>&1
    fi
    for c in sim real; do
      rm -rf "$OUT/$c.run"
      "$T" replay -q -o "$OUT/$c.run" --speed 0 "$OUT/$c" > /dev/null 2>&1
      "$T" diagnose -q --json "$OUT/$c.offline.json" "$OUT/$c.run" > /dev/null
      "$T" watch --once --json --all "$OUT/$c.run" > "$OUT/$c.watch.jsonl" 2> "$OUT/$c.watch.err"
      echo "$c (--once): $(python3 "$HERE/watch_same.py" "$OUT/$c.offline.json" "$OUT/$c.watch.jsonl" --from 64 | sed -n 1p)"
    done
    ;;
  live)
    sim "$OUT/sim_nohang" slow_link,pp_send_delay,gpu_throttle,kernel_regression,launch_latency,sync_stall,malloc_storm,pcie_degradation,kv_swap,cpu_contention,preemption
    rm -rf "$OUT/live" && mkdir -p "$OUT/live"
    "$T" watch --json --all "$OUT/live" > "$OUT/live.watch.jsonl" 2> "$OUT/live.watch.err" &
    pid=$!
    sleep 0.5
    "$T" replay -q -o "$OUT/live" --speed 1 --loop 10 "$OUT/sim_nohang" > /dev/null 2>&1
    wait $pid
    "$T" diagnose -q --json "$OUT/live.offline.json" "$OUT/live" > /dev/null
    echo "live (speed 1, flush 1 s): $(python3 "$HERE/watch_same.py" "$OUT/live.offline.json" "$OUT/live.watch.jsonl" --from 64 | sed -n 1,2p | tr '\n' ' ')"
    ;;
  metrics)
    sim "$OUT/sim_nohang" slow_link,pp_send_delay,gpu_throttle,kernel_regression,launch_latency,sync_stall,malloc_storm,pcie_degradation,kv_swap,cpu_contention,preemption
    rm -rf "$OUT/m" && mkdir -p "$OUT/m"
    "$T" watch --listen 127.0.0.1:0 "$OUT/m" > /dev/null 2> "$OUT/m.err" &
    pid=$!
    sleep 0.5
    port=$(sed -n 's/.*(port \([0-9]*\)).*/\1/p' "$OUT/m.err" | head -1)
    "$T" replay -q -o "$OUT/m" --speed 1 "$OUT/sim_nohang" > /dev/null 2>&1 &
    rpid=$!
    sleep 3 # in the middle of the run (about 5 s)
    curl -sS -D "$OUT/m.headers" "http://127.0.0.1:$port/metrics" > "$OUT/m.metrics"
    wait $rpid
    wait $pid
    echo "metrics: $(grep -i '^content-type' "$OUT/m.headers" | tr -d '\r'); $(grep -c '^teller_watch_' "$OUT/m.metrics") samples; steps $(grep '^teller_watch_steps_total' "$OUT/m.metrics" | cut -d' ' -f2)"
    if command -v promtool > /dev/null; then
      promtool check metrics < "$OUT/m.metrics" && echo "promtool check metrics: ok"
    else
      echo "promtool: not installed"
    fi
    ;;
  memory)
    [ -d "$OUT/pp2" ] || "$T" simulate -o "$OUT/pp2" --nodes 2 --gpus-per-node 1 --steps 100 --seed 31 > /dev/null
    rm -rf "$OUT/mem" && mkdir -p "$OUT/mem"
    "$T" watch --json --progress 20 "$OUT/mem" > /dev/null 2> "$OUT/mem.err" &
    pid=$!
    sleep 0.5
    "$T" replay -q -o "$OUT/mem" --speed 0 --loop "${MEMORY_LOOPS:-10000}" "$OUT/pp2" > /dev/null
    wait $pid
    grep -E '^teller watch: [0-9]+ steps,' "$OUT/mem.err" | sed -E 's/^teller watch: ([0-9]+) steps.* RSS ([0-9]+) KiB/\1 \2/' |
      awk '{ printf "%9d steps  %7.1f MB\n", $1, $2 / 1024 }'
    tail -1 "$OUT/mem.err"
    ;;
  *) echo "unknown: $w" >&2; exit 2 ;;
  esac
done
