#!/usr/bin/env python3
"""Narrows cargo-cyclonedx's SBOM of one binary to the crates cargo compiles into it.

cargo-cyclonedx reads `cargo metadata`, whose graph also holds optional dependencies
that no enabled feature turns on (here sqlx-mysql, quinn and proptest among them): a
scanner would report their advisories against binaries that do not contain them.
`cargo tree` of the release build (the packages built together, so with the features
they enable together; normal and build edges; the release's target) says what is
compiled. This keeps those components and the edges between them, and rewrites the
bom-refs that name the folder the SBOM was made in relative to the sources.

    scripts/sbom.py --bom FILE --package NAME --together A,B,C --target TRIPLE \\
        --made-in DIR > OUT
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections import defaultdict


def compiled(package: str, together: list[str], target: str) -> set[str]:
    """`name@version` of every crate built into `package` when `together` are built."""
    command = ["cargo", "tree", "--locked", "--edges", "normal,build", "--target", target, "--prefix", "depth",
               "--format", "{p}"]
    for name in together:
        command += ["--package", name]
    lines = subprocess.run(command, capture_output=True, text=True, check=True).stdout.splitlines()
    children: dict[str, set[str]] = defaultdict(set)
    roots: dict[str, str] = {}
    path: list[str] = []
    for line in lines:
        if not line.strip():
            continue
        digits = len(line) - len(line.lstrip("0123456789"))
        depth, words = int(line[:digits]), line[digits:].split()
        crate = f"{words[0]}@{words[1].removeprefix('v')}"
        del path[depth:]
        if depth == 0:
            roots[words[0]] = crate
        else:
            children[path[-1]].add(crate)
        path.append(crate)
    # A crate cargo tree printed before shows as `(*)` without its dependencies; they
    # are under its first appearance, so reachability over all edges is complete.
    seen, stack = {roots[package]}, [roots[package]]
    while stack:
        for child in children[stack.pop()]:
            if child not in seen:
                seen.add(child)
                stack.append(child)
    return seen


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bom", required=True)
    parser.add_argument("--package", required=True)
    parser.add_argument("--together", required=True, help="the packages the release builds together, by commas")
    parser.add_argument("--target", required=True)
    parser.add_argument("--made-in", required=True, help="the folder cargo-cyclonedx ran in")
    arguments = parser.parse_args()

    text = open(arguments.bom).read().replace(f"file://{arguments.made_in.rstrip('/')}/", "file://./")
    bom = json.loads(text)
    keep = compiled(arguments.package, arguments.together.split(","), arguments.target)
    keep.discard(f"{bom['metadata']['component']['name']}@{bom['metadata']['component']['version']}")
    components = [c for c in bom["components"] if f"{c['name']}@{c['version']}" in keep]
    missing = keep - {f"{c['name']}@{c['version']}" for c in components}
    if missing:
        sys.exit(f"scripts/sbom.py: cargo tree builds {sorted(missing)} into {arguments.package}, "
                 "which the SBOM does not list")
    refs = {c["bom-ref"] for c in components} | {bom["metadata"]["component"]["bom-ref"]}
    bom["components"] = components
    bom["dependencies"] = [
        {**entry, "dependsOn": [ref for ref in entry.get("dependsOn", []) if ref in refs]}
        for entry in bom.get("dependencies", []) if entry["ref"] in refs
    ]
    json.dump(bom, sys.stdout, indent=2)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
