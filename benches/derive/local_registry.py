#!/usr/bin/env python3
"""A local registry (cargo's `local-registry` source) holding our packaged crates and the
crates.io crates a bench crate needs, so that the bench builds a2a-error as users get it:
a registry crate, checked by cargo by its version, not file by file as a path dependency.

Usage: local_registry.py OUT METADATA_JSON OUR_CRATE...

OUT gets the `.crate` files and an `index/` in crates.io's layout. METADATA_JSON is
`cargo metadata --format-version 1` of a crate that depends on a2a-error by path: its
crates.io packages are taken, each with its `.crate` and its index entry, from cargo's own
cache in `$CARGO_HOME/registry` (a build of that crate has put them there). OUR_CRATE are
the files `cargo package` wrote; their index entries are read from their manifests.
"""

import glob
import hashlib
import json
import os
import shutil
import sys
import tarfile
import tomllib

CRATES_IO = "registry+https://github.com/rust-lang/crates.io-index"
CARGO_HOME = os.environ.get("CARGO_HOME", os.path.expanduser("~/.cargo"))


def index_path(name):
    name = name.lower()
    if len(name) <= 2:
        return os.path.join(str(len(name)), name)
    if len(name) == 3:
        return os.path.join("3", name[0], name)
    return os.path.join(name[:2], name[2:4], name)


def cached_entry(name, version):
    """The crates.io index entry of one version, from cargo's cache of the sparse index."""
    for cache in glob.glob(os.path.join(CARGO_HOME, "registry/index/*/.cache")):
        path = os.path.join(cache, index_path(name))
        if not os.path.exists(path):
            continue
        for blob in open(path, "rb").read().split(b"\0"):
            if blob.startswith(b"{"):
                entry = json.loads(blob)
                if entry["vers"] == version:
                    return entry
    sys.exit(f"no cached index entry for {name} {version}: build the bench crate first")


def cached_crate(name, version):
    for path in glob.glob(os.path.join(CARGO_HOME, f"registry/cache/*/{name}-{version}.crate")):
        return path
    sys.exit(f"no cached .crate for {name} {version}: build the bench crate first")


def dep_entries(table, kind, target=None):
    for key, spec in table.items():
        if isinstance(spec, str):
            spec = {"version": spec}
        yield {
            "name": key,
            "req": spec.get("version", "*"),
            "features": spec.get("features", []),
            "optional": spec.get("optional", False),
            "default_features": spec.get("default-features", True),
            "target": target,
            "kind": kind,
            **({"package": spec["package"]} if "package" in spec else {}),
        }


def our_entry(crate):
    """An index entry read from a packaged crate's normalized manifest (dev-dependencies
    left out: cargo never resolves those of a registry crate)."""
    with tarfile.open(crate) as tar:
        member = next(m for m in tar.getmembers() if m.name.count("/") == 1
                      and m.name.endswith("/Cargo.toml"))
        manifest = tomllib.load(tar.extractfile(member))
    deps = list(dep_entries(manifest.get("dependencies", {}), "normal"))
    deps += dep_entries(manifest.get("build-dependencies", {}), "build")
    for target, tables in manifest.get("target", {}).items():
        deps += dep_entries(tables.get("dependencies", {}), "normal", target)
        deps += dep_entries(tables.get("build-dependencies", {}), "build", target)
    package = manifest["package"]
    return {
        "name": package["name"],
        "vers": package["version"],
        "deps": deps,
        "features": manifest.get("features", {}),
        "cksum": hashlib.sha256(open(crate, "rb").read()).hexdigest(),
        "yanked": False,
        "v": 2,
        **({"links": package["links"]} if "links" in package else {}),
        **({"rust_version": package["rust-version"]} if "rust-version" in package else {}),
    }


def main():
    out, metadata, ours = sys.argv[1], sys.argv[2], sys.argv[3:]
    os.makedirs(os.path.join(out, "index"), exist_ok=True)
    entries = []
    for package in json.load(open(metadata))["packages"]:
        if package["source"] != CRATES_IO:
            continue
        name, version = package["name"], package["version"]
        shutil.copy(cached_crate(name, version), out)
        entries.append(cached_entry(name, version))
    for crate in ours:
        shutil.copy(crate, out)
        entries.append(our_entry(crate))
    for entry in entries:
        path = os.path.join(out, "index", index_path(entry["name"]))
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "a") as index:
            index.write(json.dumps(entry) + "\n")


if __name__ == "__main__":
    main()
