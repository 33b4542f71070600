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
# Each of the derive's two crates and the baseline again with a2a-error as users get it, from
# a registry (its packages in a local registry standing in for crates.io), interleaved with
# the rest.
#
# Then rustc's instructions for one touched rebuild of each of the three path crates
# (cachegrind; skipped without valgrind), a count that does not move with the machine's load.
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

# As users get it: a2a-error from a registry, not a path. Cargo checks a path dependency's
# every source file and manifest on each build, and a registry crate by its version alone,
# so the path arms above cost cargo more than a user's build does (thiserror is a registry
# crate in every arm). Our crates as `cargo package` makes them and the crates.io crates
# they need, from cargo's cache, in a local registry that stands in for crates.io, unpacked
# into a CARGO_HOME of the bench's own.
REG=$WORK/registry
rm -rf "$REG" && mkdir -p "$REG/.cargo"
CARGO_TARGET_DIR=$WORK/package cargo package -q --workspace --no-verify --allow-dirty \
  --exclude a2a-error-benches --exclude a2a-error-ui-tests
(cd "$WORK/derive_bench" && cargo metadata -q --format-version 1 >"$REG/metadata.json")
python3 "$ROOT/benches/derive/local_registry.py" "$REG/local" "$REG/metadata.json" \
  "$WORK"/package/package/*.crate
printf '[source.crates-io]\nreplace-with = "packaged"\n[source.packaged]\nlocal-registry = "%s"\n' \
  "$REG/local" >"$REG/.cargo/config.toml"
for pair in "registry_derive:a2a-error = \"=0.1.0\"" \
  "registry_errors:a2a-error = { version = \"=0.1.0\", default-features = false }" \
  "registry_thiserror:"; do
  name=${pair%%:*}
  mkdir -p "$REG/$name/src"
  printf '[package]\nname = "%s"\nversion = "0.0.0"\nedition = "2024"\npublish = false\n\n[dependencies]\nthiserror = "2"\n%s\n\n[workspace]\n' \
    "$name" "${pair#*:}" >"$REG/$name/Cargo.toml"
done
cp "$WORK/derive_bench/src/lib.rs" "$REG/registry_derive/src/lib.rs"
cp "$WORK/derive_bench/src/lib.rs" "$REG/registry_errors/src/lib.rs"
cp "$WORK/thiserror_bench/src/lib.rs" "$REG/registry_thiserror/src/lib.rs"
build() { # NAME (a crate under $WORK)
  (cd "$WORK/$1" && cargo build -q)
}
build_registry() { # NAME (a crate under $WORK/registry, whose dependencies come from there)
  (cd "$WORK/$1" && CARGO_HOME=$REG/home CARGO_TARGET_DIR=$REG/target cargo build -q --offline)
}
for name in registry_derive registry_errors registry_thiserror; do
  build_registry "registry/$name"
done
timed() { # COMMAND... → the seconds it took
  local start end
  start=$(date +%s.%N)
  "$@"
  end=$(date +%s.%N)
  python3 -c "print($end - $start)"
}
rebuild() { # BUILD NAME → seconds: NAME's lib.rs touched, then built by BUILD
  touch "$WORK/$2/src/lib.rs"
  timed "$1" "$2"
}
noop() { # NAME → seconds of a build with nothing to do (cargo's own share of a rebuild)
  timed build "$1"
}
: >"$WORK/rebuilds.txt"
for _ in $(seq "$ROUNDS"); do
  echo "derive $(rebuild build derive_bench)" >>"$WORK/rebuilds.txt"
  echo "thiserror $(rebuild build thiserror_bench)" >>"$WORK/rebuilds.txt"
  echo "errors-only $(rebuild build errors_only)" >>"$WORK/rebuilds.txt"
  echo "graph-only $(rebuild build graph_only)" >>"$WORK/rebuilds.txt"
  echo "derive-noop $(noop derive_bench)" >>"$WORK/rebuilds.txt"
  echo "thiserror-noop $(noop thiserror_bench)" >>"$WORK/rebuilds.txt"
  echo "registry-derive $(rebuild build_registry registry/registry_derive)" >>"$WORK/rebuilds.txt"
  echo "registry-errors-only $(rebuild build_registry registry/registry_errors)" >>"$WORK/rebuilds.txt"
  echo "registry-thiserror $(rebuild build_registry registry/registry_thiserror)" >>"$WORK/rebuilds.txt"
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

# rustc's instructions for one touched rebuild of each crate (cachegrind): the same count
# for the same sources whatever else the machine does, so a change of a few percent shows
# where the times above cannot. The command is cargo's own, run again under valgrind after
# one run that leaves the incremental state as a touched rebuild finds it.
instructions() { # NAME → rustc's instructions
  local cmd
  touch "$WORK/$1/src/lib.rs"
  cmd=$(cd "$WORK/$1" && cargo build -v 2>&1 | grep "Running \`.*--crate-name $1 " |
    sed 's/.*Running `//; s/`$//')
  touch "$WORK/$1/src/lib.rs"
  (cd "$WORK/$1" && eval "$cmd" >/dev/null 2>&1)
  touch "$WORK/$1/src/lib.rs"
  (cd "$WORK/$1" && eval "valgrind --tool=cachegrind --cache-sim=no --cachegrind-out-file=/dev/null $cmd" 2>&1 >/dev/null) |
    grep "I *refs" | awk '{print $NF}' | tr -d ,
}
: >"$WORK/instructions.txt"
if command -v valgrind >/dev/null; then
  for name in derive_bench errors_only thiserror_bench; do
    echo "$name $(instructions "$name")" >>"$WORK/instructions.txt"
  done
fi

python3 - "$WORK/rebuilds.txt" "$cold" "$WORK/instructions.txt" <<'PY'
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
reg_d, reg_e = statistics.median(times["registry-derive"]), statistics.median(times["registry-errors-only"])
reg_b = statistics.median(times["registry-thiserror"])
print("\nas users get it, a2a-error from a registry (its packages in a local registry for crates.io):\n")
print("| enum | rebuild | vs thiserror alone |")
print("|---|---|---|")
print(f"| thiserror + A2aError (default features) | {reg_d:.3f} s | {reg_d / reg_b:.2f}× |")
print(f"| thiserror + A2aError (`default-features = false`) | {reg_e:.3f} s | {reg_e / reg_b:.2f}× |")
print(f"| thiserror alone | {reg_b:.3f} s | |")
counts = dict(line.split() for line in open(sys.argv[3]))
if counts:
    base_ir = int(counts["thiserror_bench"])
    print("\nrustc's instructions for one touched rebuild (cachegrind):\n")
    print("| crate | instructions | vs thiserror alone |")
    print("|---|---|---|")
    for name, label in [("derive_bench", "thiserror + A2aError (default features)"),
                        ("errors_only", "thiserror + A2aError (`default-features = false`)"),
                        ("thiserror_bench", "thiserror alone")]:
        ir = int(counts[name])
        print(f"| {label} | {ir / 1e6:.1f} M | {ir / base_ir:.2f}× |")
print(f"\ncold build of a2a-error with default-features = false, features = [\"axum\"] "
      f"(and the enum): {float(sys.argv[2]):.1f} s")
PY
