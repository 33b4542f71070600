#!/usr/bin/env bash
# Runs the coverage-guided fuzzer of what a peer's bytes reach for RUNS inputs (default
# 10,000,000) on the stable toolchain: libFuzzer (libfuzzer-sys builds it), with rustc's
# sanitizer-coverage passes, which `-C` takes on stable. Corpus in fuzz/corpus (seeded from
# the conformance cases), crashes in fuzz/artifacts.
#
# usage: fuzz/run.sh [RUNS] [JOBS]
set -euo pipefail
cd "$(dirname "$0")"
runs="${1:-10000000}"
jobs="${2:-1}"
export RUSTFLAGS="-Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=4 \
-Cllvm-args=-sanitizer-coverage-inline-8bit-counters -Cllvm-args=-sanitizer-coverage-pc-table \
-Cllvm-args=-sanitizer-coverage-trace-compares -Cdebug-assertions -Coverflow-checks --cfg fuzzing"
# With an explicit target, RUSTFLAGS reach the fuzzed code only, not build scripts.
host="$(rustc -vV | sed -n 's/^host: //p')"
cargo build --release --bin peer_input --target "$host"
binary="target/$host/release/peer_input"
mkdir -p corpus artifacts
if [ -z "$(ls -A corpus)" ]; then
    python3 - <<'PY'
import json, os
cases = json.load(open("../tests/data/jsonrpc-cases.json"))
for n, case in enumerate(cases if isinstance(cases, list) else cases.get("cases", [])):
    body = case.get("body") if isinstance(case, dict) else None
    text = body if isinstance(body, str) else json.dumps(case)
    open(f"corpus/case-{n}", "w").write(text)
seeds = [
    '{"jsonrpc":"2.0","id":1,"error":{"code":-32052,"message":"m","data":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"1.5s"}]}}',
    'event: error\ndata: {"code":-32603,"message":"x"}\n\n',
    'Wed, 21 Oct 2015 07:28:00 GMT',
    '1500m',
    'CAUSBGdvbmU=',
]
for n, seed in enumerate(seeds):
    open(f"corpus/seed-{n}", "w").write(seed)
PY
fi
per_job=$(( runs / jobs ))
for job in $(seq 1 "$jobs"); do
    "$binary" -runs="$per_job" -max_len=4096 -rss_limit_mb=2048 \
        -artifact_prefix=artifacts/ -print_final_stats=1 corpus &
done
wait
