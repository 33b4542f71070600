#!/usr/bin/env bash
# Side by side with the official SDKs, across processes on loopback: this project's example
# agent, a hand-written axum handler (the floor), a2a-sdk 1.3.0 (Python, uvicorn) and
# @a2a-js/sdk 1.3.0 (express), all with the same contract: GetTask of an unknown task →
# TaskNotFound (the error path), SendMessage echo with a new messageId each time (the
# success path; ours goes through its dedup). Also the `sdk_agent` example (an agent on the
# official Rust SDK) served through the bridge, against the same agent on the SDK's own
# routers (`sdk_agent --sdk-routers`), and the same bridge without its dedup
# (`sdk_agent --no-dedup`: what exactly-once SendMessage costs). One load generator (wrk -t1 -c8), the servers
# pinned to CPU 0 and wrk to CPU 1, in interleaved rounds; the median round is reported.
#
# Then the derive's touch-and-rebuild against thiserror alone (benches/derive/rebuild.sh).
#
# Usage: benches/sdk/compare.sh [ROUNDS] [SECONDS]     (defaults: 3 rounds of 5 s)
# Installs what it needs: wrk (Debian package), the Python SDK into .venv, the JS SDK into
# target/sdk-bench/js.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROUNDS=${1:-3}
SECONDS_PER_RUN=${2:-5}
HERE=benches/sdk
WORK=target/sdk-bench
mkdir -p "$WORK"

command -v wrk >/dev/null || apt-get install -y -q wrk >/dev/null \
  || (apt-get update -q >/dev/null && apt-get install -y -q wrk >/dev/null)
[ -x .venv/bin/python ] || python3 -m venv .venv
.venv/bin/pip install -q "a2a-sdk[http-server]==1.3.0" uvicorn==0.54.0
if [ ! -d "$WORK/js/node_modules/@a2a-js/sdk" ]; then
  mkdir -p "$WORK/js"
  (cd "$WORK/js" && npm init -y >/dev/null && npm install -q --no-audit --no-fund @a2a-js/sdk@1.3.0 express@4 >/dev/null)
fi
cp "$HERE/js_agent.mjs" "$WORK/js/"
# Built as a user builds a release binary (see build.sh).
source "$HERE/build.sh"
build_working_tree

PIDS=()
cleanup() { for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done; }
trap cleanup EXIT
start() { # NAME PORT COMMAND...
  local name=$1 port=$2; shift 2
  taskset -c 0 "$@" >"$WORK/$name.log" 2>&1 &
  PIDS+=($!)
  for _ in $(seq 100); do
    if curl -s -o /dev/null -X POST "http://127.0.0.1:$port/" -H 'content-type: application/json' \
        -d '{"jsonrpc":"2.0","id":0,"method":"GetTask","params":{"id":"x"}}'; then return; fi
    sleep 0.1
  done
  echo "$name did not start; see $WORK/$name.log" >&2; exit 1
}
start a2a-error 9401 $BUILT/examples/agent --addr 127.0.0.1:9401
start axum-baseline 9402 $BUILT/bench-baseline-axum 127.0.0.1:9402
start a2a-python 9403 .venv/bin/python tests/interop/python_agent.py 9403
start a2a-js 9404 node "$WORK/js/js_agent.mjs" 9404
start sdk-bridge 9405 $BUILT/examples/sdk_agent --addr 127.0.0.1:9405
start sdk-routers 9406 $BUILT/examples/sdk_agent --sdk-routers --addr 127.0.0.1:9406
start bridge-no-dedup 9407 $BUILT/examples/sdk_agent --no-dedup --addr 127.0.0.1:9407

RESULTS="$WORK/results.txt"
: >"$RESULTS"
run() { # PATH NAME PORT ROUND
  local out
  out=$(taskset -c 1 wrk -t1 -c8 -d"${SECONDS_PER_RUN}s" --latency -s "$HERE/$1.lua" "http://127.0.0.1:$3/")
  echo "$out" | awk -v path="$1" -v name="$2" -v round="$4" '
    /Requests\/sec/ { rps = $2 }
    /^ +50%/ { p50 = $2 }
    /^ +99%/ { p99 = $2 }
    /^WRONG/ { wrong = $2 }
    END { printf "%s %s %s %s %s %s %s\n", path, name, round, rps, p50, p99, wrong + 0 }' >>"$RESULTS"
}
# Every server answers the error path; the baseline has no success path.
ERROR_TARGETS=("a2a-error 9401" "axum-baseline 9402" "a2a-python 9403" "a2a-js 9404"
  "sdk-bridge 9405" "sdk-routers 9406")
SUCCESS_TARGETS=("a2a-error 9401" "a2a-python 9403" "a2a-js 9404" "sdk-bridge 9405"
  "sdk-routers 9406" "bridge-no-dedup 9407")
# A warm-up run each, not counted.
for target in "${ERROR_TARGETS[@]}"; do
  set -- $target
  taskset -c 1 wrk -t1 -c8 -d1s -s "$HERE/error.lua" "http://127.0.0.1:$2/" >/dev/null
done
for round in $(seq "$ROUNDS"); do
  for target in "${ERROR_TARGETS[@]}"; do
    set -- $target
    run error "$1" "$2" "$round"
  done
  for target in "${SUCCESS_TARGETS[@]}"; do
    set -- $target
    run success "$1" "$2" "$round"
  done
done

python3 - "$RESULTS" "$ROUNDS" "$SECONDS_PER_RUN" <<'PY'
import statistics, sys, platform, os, datetime
path, rounds, seconds = sys.argv[1], sys.argv[2], sys.argv[3]
def ms(text):
    for unit, factor in (("us", 0.001), ("ms", 1.0), ("s", 1000.0)):
        if text.endswith(unit):
            return float(text[: -len(unit)]) * factor
    return float(text)
rows = {}
for line in open(path):
    kind, name, _, rps, p50, p99, wrong = line.split()
    rows.setdefault((kind, name), []).append((float(rps), ms(p50), ms(p99), int(wrong)))
cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), platform.machine())
print(f"\n{datetime.date.today()}, {os.cpu_count()} cores ({cpu}), wrk -t1 -c8, servers on CPU 0 and wrk on CPU 1, "
      f"{rounds} interleaved rounds of {seconds} s, median round")
for kind, title in (("error", "error path: GetTask of an unknown task → TaskNotFound"),
                    ("success", "success path: SendMessage echo, a new messageId each time")):
    ours = statistics.median(r[0] for r in rows[(kind, "a2a-error")])
    print(f"\n{title}\n")
    print("| server | req/s | p50 | p99 | wrong replies | a2a-error vs it |")
    print("|---|---|---|---|---|---|")
    for name in ("a2a-error", "axum-baseline", "a2a-python", "a2a-js", "sdk-routers"):
        if (kind, name) not in rows:
            continue
        runs = rows[(kind, name)]
        rps = statistics.median(r[0] for r in runs)
        p50 = statistics.median(r[1] for r in runs)
        p99 = statistics.median(r[2] for r in runs)
        wrong = sum(r[3] for r in runs)
        ratio = "" if name == "a2a-error" else f"{ours / rps:.2f}×"
        print(f"| {name} | {rps:,.0f} | {p50:.2f} ms | {p99:.2f} ms | {wrong} | {ratio} |")
    # The same Rust SDK agent, through the bridge and through the SDK's own routers.
    bridge = statistics.median(r[0] for r in rows[(kind, "sdk-bridge")])
    routers = statistics.median(r[0] for r in rows[(kind, "sdk-routers")])
    print(f"\nsdk_agent through the bridge: {bridge:,.0f} req/s, the same agent on the SDK's own "
          f"routers: {routers:,.0f} req/s; the bridge at {bridge / routers:.2f}× the SDK's routers")
    if (kind, "bridge-no-dedup") in rows:
        plain = statistics.median(r[0] for r in rows[(kind, "bridge-no-dedup")])
        print(f"the bridge without its dedup: {plain:,.0f} req/s, {plain / routers:.2f}× the SDK's routers")
    # The ratios above are of medians. Each round also gives one ratio of two servers measured
    # a minute apart at most: their spread is this machine's noise.
    pairs = [("a2a-error", "axum-baseline"), ("a2a-error", "sdk-routers"), ("a2a-error", "a2a-js"),
             ("sdk-bridge", "sdk-routers"), ("bridge-no-dedup", "sdk-routers")]
    spreads = []
    for a, b in pairs:
        if (kind, a) not in rows or (kind, b) not in rows:
            continue
        ratios = sorted(x[0] / y[0] for x, y in zip(rows[(kind, a)], rows[(kind, b)]))
        spreads.append(f"{a} vs {b} {ratios[0]:.2f}–{ratios[-1]:.2f}× "
                       f"(median {statistics.median(ratios):.2f}×)")
    print("\nround by round: " + "; ".join(spreads))
PY

# The derive's compile time beside it (the servers are stopped first: it needs both cores).
cleanup
PIDS=()
bash benches/derive/rebuild.sh 5
