#!/usr/bin/env bash
# The derive's compile time: a crate with one 64-variant error enum, touched and rebuilt (dev
# profile), with `#[derive(thiserror::Error, A2aError)]` against the same enum with
# `thiserror::Error` alone (the baseline: a crate depending on thiserror only), in the same run, interleaved; the median of ROUNDS
# rebuilds each. The same enum is also rebuilt in a crate of errors alone, depending on
# a2a-error with `default-features = false` (the wire model, the derive and the mirror: no
# axum, no client), where cargo has a much smaller graph to check. Also the cold build of the
# server-only feature set (`default-features = false, features = ["axum"]`) from an empty
# target directory.
#
# And the graph alone: the thiserror enum in a crate that depends on a2a-error with default
# features but derives nothing, which separates the derive's own cost from the graph's.
#
# Usage: benches/derive/rebuild.sh [ROUNDS]     (default 5)
set -euo pipefail
cd "$(dirname "$0")/../.."
ROUNDS=${1:-5}
ROOT=$PWD
WORK=$ROOT/target/derive-bench
mkdir -p "$WORK"

# The enum: every third variant carries a data field, every fifth a retry delay.
enum_body() { # WITH_A2A (1 or 0)
  for i in $(seq 0 63); do
    local a2a=""
    if [ "$1" = 1 ]; then
      if (( i % 5 == 0 )); then a2a="#[a2a(code = $((1000 + i)), retryable, retry_after = 10)]"
      else a2a="#[a2a(code = $((1000 + i)))]"; fi
    fi
    if (( i % 3 == 0 )); then
      local data=""
      [ "$1" = 1 ] && data="#[a2a(data)]"
      printf '    #[error("failure %d on {task_id}")]\n    %s\n    Failure%d { %s task_id: String },\n' "$i" "$a2a" "$i" "$data"
    else
      printf '    #[error("failure %d")]\n    %s\n    Failure%d,\n' "$i" "$a2a" "$i"
    fi
  done
}
make_crate() { # NAME WITH_A2A
  local dir=$WORK/$1
  mkdir -p "$dir/src"
  cat >"$dir/Cargo.toml" <<TOML
[package]
name = "$1"
version = "0.0.0"
edition = "2024"
publish = false

[dependencies]
thiserror = "2"
$([ "$2" = 1 ] && echo "a2a-error = { path = \"$ROOT\" }")

[workspace]
TOML
  {
    if [ "$2" = 1 ]; then
      echo '#[derive(Debug, thiserror::Error, a2a_error::A2aError)]'
      echo '#[a2a(domain = "bench.example.com")]'
    else
      echo '#[derive(Debug, thiserror::Error)]'
    fi
    echo 'pub enum BenchError {'
    enum_body "$2"
    echo '}'
  } >"$dir/src/lib.rs"
}
make_crate derive_bench 1
make_crate thiserror_bench 0
mkdir -p "$WORK/errors_only/src"
sed -e 's/name = "derive_bench"/name = "errors_only"/' \
  -e "s|a2a-error = { path = \"$ROOT\" }|a2a-error = { path = \"$ROOT\", default-features = false }|" \
  "$WORK/derive_bench/Cargo.toml" >"$WORK/errors_only/Cargo.toml"
cp "$WORK/derive_bench/src/lib.rs" "$WORK/errors_only/src/lib.rs"
# The graph alone: the thiserror enum in a crate that depends on a2a-error with default
# features and uses nothing of it but its name. What any rebuild of such a crate costs,
# derive or not: cargo checks the whole graph, rustc loads its metadata.
mkdir -p "$WORK/graph_only/src"
sed -e 's/name = "derive_bench"/name = "graph_only"/' \
  "$WORK/derive_bench/Cargo.toml" >"$WORK/graph_only/Cargo.toml"
{ echo 'use a2a_error as _;'; cat "$WORK/thiserror_bench/src/lib.rs"; } >"$WORK/graph_only/src/lib.rs"

export CARGO_TARGET_DIR=$WORK/target
for name in derive_bench thiserror_bench errors_only graph_only; do
  cp "$ROOT/Cargo.lock" "$WORK/$name/Cargo.lock"
  (cd "$WORK/$name" && cargo build -q)
done
timed() { # COMMAND... → the seconds it took
  local start end
  start=$(date +%s.%N)
  "$@"
  end=$(date +%s.%N)
  python3 -c "print($end - $start)"
}
build() { # NAME
  (cd "$WORK/$1" && cargo build -q)
}
rebuild() { # NAME → seconds
  touch "$WORK/$1/src/lib.rs"
  timed build "$1"
}
noop() { # NAME → seconds of a build with nothing to do (cargo's own share of a rebuild)
  timed build "$1"
}
: >"$WORK/rebuilds.txt"
for _ in $(seq "$ROUNDS"); do
  echo "derive $(rebuild derive_bench)" >>"$WORK/rebuilds.txt"
  echo "thiserror $(rebuild thiserror_bench)" >>"$WORK/rebuilds.txt"
  echo "errors-only $(rebuild errors_only)" >>"$WORK/rebuilds.txt"
  echo "graph-only $(rebuild graph_only)" >>"$WORK/rebuilds.txt"
  echo "derive-noop $(noop derive_bench)" >>"$WORK/rebuilds.txt"
  echo "thiserror-noop $(noop thiserror_bench)" >>"$WORK/rebuilds.txt"
done

# The cold build of the server-only feature set, in a target directory of its own.
mkdir -p "$WORK/server_only/src"
sed -e 's/name = "derive_bench"/name = "server_only"/' \
  -e "s|a2a-error = { path = \"$ROOT\" }|a2a-error = { path = \"$ROOT\", default-features = false, features = [\"axum\"] }|" \
  "$WORK/derive_bench/Cargo.toml" >"$WORK/server_only/Cargo.toml"
cp "$WORK/derive_bench/src/lib.rs" "$WORK/server_only/src/lib.rs"
cp "$ROOT/Cargo.lock" "$WORK/server_only/Cargo.lock"
rm -rf "$WORK/server_only/target"
cold=$(CARGO_TARGET_DIR=$WORK/server_only/target timed build server_only)
rm -rf "$WORK/server_only/target"

python3 - "$WORK/rebuilds.txt" "$cold" <<'PY'
import statistics, sys
times = {}
for line in open(sys.argv[1]):
    name, seconds = line.split()
    times.setdefault(name, []).append(float(seconds))
derive, base = statistics.median(times["derive"]), statistics.median(times["thiserror"])
print(f"\nthe derive: touch-and-rebuild of a crate with a 64-variant enum, median of {len(times['derive'])}\n")
noop_d, noop_b = statistics.median(times["derive-noop"]), statistics.median(times["thiserror-noop"])
print("| enum | rebuild | vs thiserror alone | of which cargo with nothing to build | the rest (rustc) | rustc vs thiserror alone |")
print("|---|---|---|---|---|---|")
print(f"| thiserror + A2aError | {derive:.3f} s | {derive / base:.2f}× | {noop_d:.3f} s | {derive - noop_d:.3f} s | {(derive - noop_d) / (base - noop_b):.2f}× |")
print(f"| thiserror alone | {base:.3f} s | | {noop_b:.3f} s | {base - noop_b:.3f} s | |")
errors_only = statistics.median(times["errors-only"])
graph = statistics.median(times["graph-only"])
print(f"\nthe thiserror enum alone in a crate that depends on a2a-error with default features (no derive): "
      f"{graph:.3f} s, {graph / base:.2f}× thiserror alone; the derive's own share: "
      f"{derive - graph:.3f} s ({derive / graph:.2f}× this crate)")
print(f"\nthe same enum in a crate of errors alone (a2a-error with default-features = false): "
      f"{errors_only:.3f} s, {errors_only / base:.2f}× thiserror alone")
print(f"\ncold build of a2a-error with default-features = false, features = [\"axum\"] "
      f"(and the enum): {float(sys.argv[2]):.1f} s")
PY
