# Sourced by the scripts that measure servers across processes (benches/guard.sh): start a
# server pinned to CPU 0, load it with wrk pinned to CPU 1, count its instructions under
# callgrind. WORK must name a directory for logs.

HERE_SDK=benches/sdk
PIDS=()
stop_all() { for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done; PIDS=(); }
trap stop_all EXIT

# Waits until the server on PORT answers a JSON-RPC request.
wait_up() { # PORT
  for _ in $(seq 300); do
    curl -s -o /dev/null -X POST "http://127.0.0.1:$1/" -H 'content-type: application/json' \
      -d '{"jsonrpc":"2.0","id":0,"method":"GetTask","params":{"id":"x"}}' && return 0
    sleep 0.1
  done
  return 1
}

start() { # NAME PORT COMMAND...
  local name=$1 port=$2
  shift 2
  taskset -c 0 "$@" >"$WORK/$name.log" 2>&1 &
  PIDS+=($!)
  wait_up "$port" || { echo "$name did not start; see $WORK/$name.log" >&2; exit 1; }
}

# One load of SECONDS on PATH (error or success): prints "PATH NAME ROUND req/s wrong".
load() { # PATH NAME PORT SECONDS ROUND
  local out
  out=$(taskset -c 1 wrk -t1 -c8 -d"$4s" -s "$HERE_SDK/$1.lua" "http://127.0.0.1:$3/")
  local rps bad
  rps=$(echo "$out" | awk '/Requests\/sec/ { print $2 }')
  bad=$(echo "$out" | awk '/^WRONG/ { print $2 }')
  echo "$1 $2 $5 $rps ${bad:-0}"
}

# Instructions and L1 misses under callgrind of COMMAND (which serves on PORT) for SECONDS of
# load on PATH, counted after a warm-up: prints "PATH NAME requests instructions misses".
instructions() { # PATH NAME PORT SECONDS COMMAND...
  local path=$1 name=$2 port=$3 seconds=$4 out="$WORK/callgrind-$1-$2.out"
  shift 4
  rm -f "$out"*
  taskset -c 0 valgrind --tool=callgrind --cache-sim=yes --instr-atstart=no \
    --callgrind-out-file="$out" "$@" >"$WORK/callgrind-$path-$name.log" 2>&1 &
  local vpid=$!
  wait_up "$port" || { echo "$name did not start under valgrind" >&2; kill $vpid; return 1; }
  taskset -c 1 wrk -t1 -c8 -d2s -s "$HERE_SDK/$path.lua" "http://127.0.0.1:$port/" >/dev/null
  callgrind_control -i on $vpid >/dev/null 2>&1
  local requests
  requests=$(taskset -c 1 wrk -t1 -c8 -d"${seconds}s" -s "$HERE_SDK/$path.lua" \
    "http://127.0.0.1:$port/" | awk '/requests in/ { print $1 }')
  callgrind_control -i off $vpid >/dev/null 2>&1
  callgrind_control -d $vpid >/dev/null 2>&1
  sleep 1
  kill $vpid
  wait $vpid 2>/dev/null || true
  # Instructions and L1 misses (I1mr + D1mr + D1mw), less the growth of hash tables: a
  # one-off each time a store's table doubles, which a run of a few seconds meets 0 to 3
  # times (2-3k instructions a request each on the bridge's success path, more than most
  # changes measured).
  callgrind_annotate --inclusive=yes --show=Ir,I1mr,D1mr,D1mw "$out.1" 2>/dev/null |
    python3 -c '
import re, sys
path, name, n = sys.argv[1:4]
total, growth = None, [0, 0, 0, 0]
for line in sys.stdin:
    counts = [int(c.replace(",", "")) for c in re.findall(r"([\d,]+) \(", line)[:4]]
    if "PROGRAM TOTALS" in line:
        total = counts
    elif "reserve_rehash" in line and len(counts) == 4:
        growth = [g + c for g, c in zip(growth, counts)]
kept = [t - g for t, g in zip(total, growth)]
print(path, name, n, kept[0], sum(kept[1:]))
' "$path" "$name" "$requests"
}
