#!/usr/bin/env bash
# A long streamed answer through examples/llm_agent, REV's and this tree's, against the plain
# relay of the same tokens (benches/callees/peers.rs), side by side in one run: see answer.py.
# Both agents are built as a user builds a release binary (sdk/build.sh).
#
# Usage: benches/callees/answer.sh REV [ROUNDS] [TOKENS]   (defaults: 5 rounds of 8,000)
set -euo pipefail
cd "$(dirname "$0")/../.."
REV=${1:?usage: benches/callees/answer.sh REV [ROUNDS] [TOKENS]}
ROUNDS=${2:-5}
TOKENS=${3:-8000}
WORK=target/guard
BASE=$WORK/base
mkdir -p "$WORK"
source benches/sdk/build.sh
base_worktree "$REV" "$BASE"
build_servers "$BASE" "$WORK/base-copy" "$PWD/$WORK/base-target"
build_working_tree
python3 benches/callees/answer.py "$BUILT/bench-callee-peers" "$TOKENS" "$ROUNDS" \
  "llm_agent@rev=$WORK/base-target/release/examples/llm_agent" \
  "llm_agent=$BUILT/examples/llm_agent"
