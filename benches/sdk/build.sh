# Sourced by the scripts that serve the example agents across processes (guard.sh,
# sdk/compare.sh, sdk/instructions.sh): builds the servers as a user builds a release binary.
#
# Cargo builds an example with its package's dev-dependencies, and this package's tests turn
# on tokio's `test-util` there (the paused clock of `start_paused` tests). With it, every read
# of tokio's clock (`tokio::time::Instant::now`, the timer driver's) takes the runtime's clock
# and a lock: the example agent's error path ran 1.8 % slower at once (8 rounds, every one
# slower), and no binary a user ships has it. So the servers are built from a copy of the
# tree whose root manifest leaves `test-util` out of its dev-dependencies, and the axum
# baseline in the same invocation, so that every server has the same tokio features.

# Builds the example agents of the tree at SRC (and, with `baseline`, the axum handler of
# benches/sdk) from a copy at COPY into the target directory TARGET (absolute).
build_servers() { # SRC COPY TARGET [baseline]
  local src=$1 copy=$2 target=$3 baseline=${4:-}
  rm -rf "$copy"
  mkdir -p "$copy"
  # The tree as it is now, uncommitted changes included, without what git ignores.
  (cd "$src" && git ls-files -z --cached --others --exclude-standard |
    tar --null --ignore-failed-read -T - -cf -) | tar -xf - -C "$copy"
  sed -i 's/features = \["full", "test-util"\]/features = ["full"]/' "$copy/Cargo.toml"
  if grep -q '"test-util"' "$copy/Cargo.toml"; then
    echo "build_servers: $src/Cargo.toml still turns on tokio's test-util" >&2
    return 1
  fi
  local targets=(--example agent --example sdk_agent --example llm_agent)
  [ -n "$baseline" ] && targets=(-p a2a-error -p a2a-error-benches "${targets[@]}" \
    --bin bench-baseline-axum --bin bench-callee-peers)
  (cd "$copy" && CARGO_TARGET_DIR="$target" cargo build -q --release "${targets[@]}")
}

# Where every script builds the working tree's servers (its copy and its target directory,
# under target/servers), so that each reuses what another built: the binaries are in BUILT.
BUILT=target/servers/target/release
build_working_tree() {
  build_servers "$PWD" target/servers/tree "$PWD/target/servers/target" baseline
}

# REV checked out in a worktree of its own at BASE (made again when it holds another commit).
base_worktree() { # REV BASE
  local sha
  sha=$(git rev-parse --verify "$1^{commit}")
  if [ ! -d "$2" ] || [ "$(git -C "$2" rev-parse HEAD 2>/dev/null)" != "$sha" ]; then
    git worktree remove --force "$2" 2>/dev/null || rm -rf "$2"
    git worktree prune
    git worktree add --detach "$2" "$sha" >/dev/null
  fi
}
