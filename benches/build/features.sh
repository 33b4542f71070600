#!/usr/bin/env bash
# Each feature of `a2a-error` on its own: the crates it pulls in (ours, and how many in all),
# whether any builds C (the `cc` crate in its graph), and the cold build of a new binary
# crate depending on it (dev profile, an empty target directory, sources already fetched),
# one after the other on this machine. Prints the README's table.
#
# Usage: benches/build/features.sh [FEATURE_SET...]   (default: every row of the table)
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
WORK=$ROOT/target/feature-builds
mkdir -p "$WORK"
SETS=("$@")
if [ ${#SETS[@]} -eq 0 ]; then
  SETS=(none into-response axum client sdk grpc redis mcp push prometheus otel rustls)
fi
row() { # SET → the dependency line's features
  case "$1" in
    none) echo 'default-features = false' ;;
    into-response) echo '' ;; # the default
    *) echo "default-features = false, features = [\"${1//,/\", \"}\"]" ;;
  esac
}
printf '| feature | our crates | crates in all | builds C | cold build |\n|---|---|---|---|---|\n'
for set in "${SETS[@]}"; do
  dir=$WORK/$set
  rm -rf "$dir" && mkdir -p "$dir/src"
  features=$(row "$set")
  cat >"$dir/Cargo.toml" <<TOML
[package]
name = "feature-build"
version = "0.0.0"
edition = "2024"
publish = false

[dependencies]
a2a-error = { path = "$ROOT"${features:+, $features} }

[workspace]
TOML
  echo 'fn main() { let _ = a2a_error::code::TASK_NOT_FOUND; }' >"$dir/src/main.rs"
  cp "$ROOT/Cargo.lock" "$dir/Cargo.lock"
  tree=$(cd "$dir" && cargo tree -q -e normal,build --prefix none | sed 's/ (\*)//; s/ (proc-macro)//' | sort -u)
  ours=$(echo "$tree" | grep -oE '^a2a-error[a-z-]*' | grep -v '^a2a-error$' | sed 's/^a2a-error-//' | sort -u | tr '\n' ' ')
  all=$(echo "$tree" | grep -vc '^feature-build')
  c=$(echo "$tree" | grep -qE '^cc v' && echo yes || echo no)
  start=$(date +%s.%N)
  (cd "$dir" && CARGO_TARGET_DIR=$dir/target CARGO_INCREMENTAL=0 cargo build -q)
  end=$(date +%s.%N)
  rm -rf "$dir/target"
  printf '| `%s` | %s | %s | %s | %.0f s |\n' "$set" "$ours" "$all" "$c" "$(python3 -c "print($end - $start)")"
done
