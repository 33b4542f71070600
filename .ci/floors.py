#!/usr/bin/env python3
"""The floors, kept by a check: no crate depends on a crate above its own, and no file of the
runtime names a module of a floor above its own.

The crates' floors (docs/architecture.md's crate graph) are checked on `cargo metadata`: a
normal or build dependency of a workspace crate must stand on a lower floor. Dev-dependencies
are left out: the crates below the facade name it in their doc examples (as users read
them), a cycle cargo allows for dev-dependencies only.

Every `crate::MODULE` a file of the runtime names (in code or in a doc link) must stand on a
lower floor than the file's own module, or be that module; `server` and `client` never name
each other. The table is docs/architecture.md's. Unit tests are left out (a file's test
module, a `tests.rs`): they may build the floors above to test one below. Exits 1, listing
each offence, when one is found.
"""
import json
import pathlib
import re
import subprocess
import sys

SRC = pathlib.Path(__file__).resolve().parent.parent / "a2a-error-runtime" / "src"
# Floor of each top-level module (a file or a folder of the runtime). The modules that cross
# the floors (architecture.md) stand between floor 0 and the servers and clients, in the
# order they use each other.
FLOORS = {
    "wire": 0, "observe": 0.5,
    "inherited": 0.6, "deadline": 0.7, "trace": 0.8, "bounded": 0.9, "redis_connect": 0.95,
    "http": 1, "server": 1,
    "resilience": 2,
    "dependency": 3, "client": 3,
    "sdk_errors": 3.5,
    "peer_input": 5, "hostile_input": 5.5, "__private": 5, "lib": 6,
}
APART = {("server", "client"), ("client", "server")}
NAMED = re.compile(r"\bcrate::([a-z_][a-z0-9_]*)")

offences = []
for path in sorted(SRC.rglob("*.rs")):
    module = path.relative_to(SRC).parts[0].removesuffix(".rs")
    if module not in FLOORS:
        offences.append(f"{path.relative_to(SRC)}: module `{module}` has no floor in .ci/floors.py")
        continue
    if path.name == "tests.rs":
        continue
    lines = path.read_text().splitlines()
    for number, line in enumerate(lines, 1):
        following = lines[number] if number < len(lines) else ""
        if line.strip() == "#[cfg(test)]" and re.match(r"mod \w+ \{", following):
            break  # the file's test module, at its end
        for named in NAMED.findall(line):
            if named == module or named not in FLOORS:
                continue  # its own module, or an item of the crate root (floor 0 re-exports)
            if FLOORS[named] >= FLOORS[module] or (module, named) in APART:
                offences.append(
                    f"{path.relative_to(SRC)}:{number}: `{module}` (floor {FLOORS[module]}) "
                    f"names `crate::{named}` (floor {FLOORS[named]})"
                )
# The crates: each one's floor; every workspace crate must be named here.
CRATE_FLOORS = {
    "a2a-error-codes": 0,
    "a2a-error-core": 1, "a2a-error-derive": 1,
    "a2a-error-runtime": 2,
    "a2a-error-sdk": 3,
    "a2a-error": 4,
    "a2a-error-testkit": 5,
    "a2a-error-ui-tests": 6, "a2a-error-benches": 6,
}
metadata = json.loads(subprocess.run(
    ["cargo", "metadata", "--no-deps", "--format-version", "1"],
    capture_output=True, text=True, check=True, cwd=SRC.parent.parent,
).stdout)
for package in metadata["packages"]:
    name = package["name"]
    if name not in CRATE_FLOORS:
        offences.append(f"crate `{name}` has no floor in .ci/floors.py")
        continue
    for dependency in package["dependencies"]:
        if dependency["kind"] == "dev" or dependency["name"] not in CRATE_FLOORS:
            continue
        if CRATE_FLOORS[dependency["name"]] >= CRATE_FLOORS[name]:
            offences.append(
                f"crate `{name}` (floor {CRATE_FLOORS[name]}) depends on "
                f"`{dependency['name']}` (floor {CRATE_FLOORS[dependency['name']]})"
            )

# The default features are what the card's first uses need, the derive and its axum
# `IntoResponse` (on axum-core): the server, the client and their runtime are a feature away.
default_graph = subprocess.run(
    ["cargo", "tree", "-q", "-p", "a2a-error", "-e", "normal,build", "--prefix", "none",
     "--format", "{p}"],
    capture_output=True, text=True, check=True, cwd=SRC.parent.parent,
).stdout
default_crates = {line.split()[0] for line in default_graph.splitlines() if line.strip()}
for heavy in ("axum", "hyper", "tokio", "reqwest", "tower", "a2a-error-sdk"):
    if heavy in default_crates:
        offences.append(f"the default features pull in `{heavy}`: keep it behind its feature")

for offence in offences:
    print(offence)
if offences:
    print(f"{len(offences)} offence(s) against the floors: see docs/architecture.md")
    sys.exit(1)
print("floors: no import up")
