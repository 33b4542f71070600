#!/usr/bin/env bash
# The cold build of a new user's crate: the README's SDK agent as each tree's README gives it
# (its first `toml` block's dependencies, a2a-error from the tree, and its first `rust,no_run`
# block as `main`), against this tree and against REV, side by side in one run (REV first,
# then this tree; ROUNDS rounds), each from an empty target directory with the sources
# already fetched. Also says which builds C (the `cc` crate).
#
# Usage: benches/build/snippet.sh REV [ROUNDS]     (default 1)
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
REV=$1
ROUNDS=${2:-1}
WORK=$ROOT/target/snippet-builds
rm -rf "$WORK/base" && mkdir -p "$WORK/base"
git archive "$REV" | tar -x -C "$WORK/base"
# The snippet, as a README has it, made a `main`; its dependencies, a2a-error from PATH.
snippet() { # README
  awk '/^```rust,no_run$/ {n++} n==1 && !/^```/ {print} n==1 && /^```$/ {exit}' "$1" \
    | sed 's/^# async fn run() {/#[tokio::main]\nasync fn main() {/; s/^# }$/}/'
}
dependencies() { # README PATH
  awk '/^```toml$/ {n++; next} n==1 && /^```$/ {exit} n==1 && !/^\[dependencies\]/ {print}' "$1" \
    | sed "s|^a2a-error = { version = \"0.1\"|a2a-error = { path = \"$2\"|"
}
make_crate() { # NAME PATH
  local dir=$WORK/$1
  rm -rf "$dir" && mkdir -p "$dir/src"
  cat >"$dir/Cargo.toml" <<TOML
[package]
name = "$1"
version = "0.0.0"
edition = "2024"
publish = false

[dependencies]
$(dependencies "$2/README.md" "$2")
futures-util = "0.3"
serde_json = "1"
tokio = { version = "1", features = ["macros", "rt-multi-thread", "net"] }

[workspace]
TOML
  snippet "$2/README.md" >"$dir/src/main.rs"
  cp "$2/Cargo.lock" "$dir/Cargo.lock"
  (cd "$dir" && cargo fetch -q)
}
make_crate snippet_base "$WORK/base"
make_crate snippet_tree "$ROOT"
cold() { # NAME → seconds
  local dir=$WORK/$1 start end
  rm -rf "$dir/target"
  start=$(date +%s.%N)
  (cd "$dir" && CARGO_TARGET_DIR=$dir/target CARGO_INCREMENTAL=0 cargo build -q)
  end=$(date +%s.%N)
  rm -rf "$dir/target"
  python3 -c "print(f'{$end - $start:.1f}')"
}
has_c() { (cd "$WORK/$1" && cargo tree -q -e normal,build --prefix none | grep -qE '^cc v') && echo yes || echo no; }
echo "| round | $REV | this tree | ratio |"
echo "|---|---|---|---|"
for round in $(seq "$ROUNDS"); do
  base=$(cold snippet_base)
  tree=$(cold snippet_tree)
  echo "| $round | $base s | $tree s | $(python3 -c "print(f'{$tree / $base:.2f}')")× |"
done
echo
echo "builds C: $REV $(has_c snippet_base), this tree $(has_c snippet_tree)"
