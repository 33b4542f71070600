#!/usr/bin/env bash
# What compare.sh's req/s cannot say on a shared 2-core machine (its rates move by a fifth
# from one minute to the next): the work each server does per request, counted by valgrind's
# callgrind (user-space instructions, and with --cache-sim the L1 misses a cache of this
# machine's sizes would take), the same load as compare.sh, in the same run. Counting starts
# after a warm-up and stops before the server does, so start-up is not counted.
#
# Usage: benches/sdk/instructions.sh [SECONDS]     (default 5: about 1,000 requests under
# valgrind on the success path, 15,000 on the error path)
# Installs valgrind and wrk (Debian packages) when they are missing.
set -euo pipefail
cd "$(dirname "$0")/../.."
SECONDS_PER_RUN=${1:-5}
HERE=benches/sdk
WORK=target/sdk-bench/callgrind
mkdir -p "$WORK"
for tool in valgrind wrk; do
  command -v $tool >/dev/null || apt-get install -y -q $tool >/dev/null \
    || (apt-get update -q >/dev/null && apt-get install -y -q $tool >/dev/null)
done
# Built as a user builds a release binary (see build.sh).
source "$HERE/build.sh"
build_working_tree
PORT=9409
VPID=
trap '[ -n "$VPID" ] && kill $VPID 2>/dev/null || true' EXIT

count() { # PATH NAME COMMAND... → "PATH NAME requests Ir I1mr D1mr D1mw" in results
  local path=$1 name=$2 out=$WORK/$1-$2.out
  shift 2
  rm -f "$out"*
  valgrind --tool=callgrind --cache-sim=yes --instr-atstart=no --callgrind-out-file="$out" \
    "$@" >"$WORK/$path-$name.log" 2>&1 &
  VPID=$!
  for _ in $(seq 300); do
    curl -s -o /dev/null -X POST "http://127.0.0.1:$PORT/" -H 'content-type: application/json' \
      -d '{"jsonrpc":"2.0","id":0,"method":"GetTask","params":{"id":"x"}}' && break
    sleep 0.2
  done
  taskset -c 1 wrk -t1 -c8 -d2s -s "$HERE/$path.lua" "http://127.0.0.1:$PORT/" >/dev/null
  callgrind_control -i on $VPID >/dev/null 2>&1
  local load
  load=$(taskset -c 1 wrk -t1 -c8 -d"${SECONDS_PER_RUN}s" -s "$HERE/$path.lua" "http://127.0.0.1:$PORT/")
  callgrind_control -i off $VPID >/dev/null 2>&1
  callgrind_control -d $VPID >/dev/null 2>&1
  sleep 1
  kill $VPID
  wait $VPID 2>/dev/null || true
  VPID=
  local requests
  requests=$(echo "$load" | awk '/requests in/ { print $1 }')
  # The dump's totals line: Ir Dr Dw I1mr D1mr D1mw ILmr DLmr DLmw, in that order.
  awk -v path="$path" -v name="$name" -v n="$requests" \
    '/^totals:/ { print path, name, n, $2, $5, $6, $7 }' "$out.1" >>"$WORK/results.txt"
}
: >"$WORK/results.txt"
A=127.0.0.1:$PORT
count error a2a-error $BUILT/examples/agent --addr $A
count error axum-baseline $BUILT/bench-baseline-axum $A
count error sdk-bridge $BUILT/examples/sdk_agent --addr $A
count error sdk-routers $BUILT/examples/sdk_agent --sdk-routers --addr $A
count success a2a-error $BUILT/examples/agent --addr $A
count success sdk-bridge $BUILT/examples/sdk_agent --addr $A
count success sdk-routers $BUILT/examples/sdk_agent --sdk-routers --addr $A
count success bridge-no-dedup $BUILT/examples/sdk_agent --no-dedup --addr $A

python3 - "$WORK/results.txt" <<'PY'
import sys, datetime
rows = {}
for line in open(sys.argv[1]):
    path, name, n, ir, i1, d1r, d1w = line.split()
    n = int(n)
    rows[(path, name)] = (int(ir) / n, (int(i1) + int(d1r) + int(d1w)) / n, n)
print(f"\n{datetime.date.today()}, callgrind: user-space instructions and simulated L1 misses per request\n")
print("| path | server | requests counted | instructions | vs baseline | L1 misses | vs baseline |")
print("|---|---|---|---|---|---|---|")
baselines = {"a2a-error": "axum-baseline", "sdk-bridge": "sdk-routers", "bridge-no-dedup": "sdk-routers"}
for (path, name), (ir, misses, n) in rows.items():
    base = rows.get((path, baselines.get(name, "")))
    vs = f"{ir / base[0]:.2f}×" if base else ""
    vs_miss = f"{misses / base[1]:.2f}×" if base else ""
    print(f"| {path} | {name} | {n:,} | {ir:,.0f} | {vs} | {misses:,.0f} | {vs_miss} |")
PY
