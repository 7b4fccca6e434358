"""Sum the JSON counts of property-test runs into the tables of docs/conformance.md.

Each run writes its counts with ``ONNX_GATHER_CONFORMANCE_REPORT=<file>.json``; this adds
them up per library (JAX with and without x64 apart, by file name) and operator.

Usage::

    python tools/conformance_report.py p1.json topup.json jax64.json ...
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

from onnx_gather._ops import OPS


def _library(name: str, path: Path) -> str:
    if name == "jax":
        return "jax (x64)" if "64" in path.stem else "jax (no x64)"
    return name


def main(paths: list[str]) -> int:
    """Print the examples, outcomes and ONNX Runtime tables as markdown."""
    examples: Counter[tuple[str, str]] = Counter()
    outcomes: Counter[tuple[str, str, str]] = Counter()
    ort: Counter[tuple[str, str]] = Counter()
    plain: Counter[tuple[str, str]] = Counter()
    for name in paths:
        path = Path(name)
        report = json.loads(path.read_text())
        for row in report["examples"]:
            examples[_library(row["library"], path), row["op"]] += row["examples"]
        for row in report["outcomes"]:
            key = (_library(row["library"], path), row["op"], row["outcome"])
            outcomes[key] += row["count"]
        for row in report["peers"]:
            ort[row["op"], row["class"]] += row["count"]
        for row in report.get("presented_plainly", []):
            plain[_library(row["library"], path), row["op"]] += row["count"]

    libraries = sorted({lib for lib, _ in examples})
    print("| library | " + " | ".join(OPS) + " |")
    print("| --- |" + " --- |" * len(OPS))
    for lib in libraries:
        print(f"| {lib} | " + " | ".join(f"{examples[lib, op]:,}" for op in OPS) + " |")

    kinds = sorted({kind for _, _, kind in outcomes}, key=lambda k: (k != "value", k))
    print("\n| library | operator | " + " | ".join(kinds) + " |")
    print("| --- | --- |" + " --- |" * len(kinds))
    for lib in libraries:
        for op in OPS:
            cells = " | ".join(f"{outcomes[lib, op, kind]:,}" for kind in kinds)
            print(f"| {lib} | {op} | {cells} |")

    classes = sorted({cls for _, cls in ort}, key=lambda c: (c != "agrees", c))
    print("\n| ONNX Runtime | " + " | ".join(OPS) + " |")
    print("| --- |" + " --- |" * len(OPS))
    for cls in classes:
        print(f"| {cls} | " + " | ".join(f"{ort[op, cls]:,}" for op in OPS) + " |")
    if plain:
        print("\nData presented plainly (the library's own view changed its bits):\n")
        print("| library | " + " | ".join(OPS) + " |")
        print("| --- |" + " --- |" * len(OPS))
        for lib in sorted({lib for lib, _ in plain}):
            print(f"| {lib} | " + " | ".join(f"{plain[lib, op]:,}" for op in OPS) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
