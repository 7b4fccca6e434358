"""The declared dependency floors are the versions ``nox -s oldest`` tests.

pyproject.toml's ``>=`` floors (core dependencies and every extra) and backends/*.txt must
equal the exact pins of constraints/floors.txt, so the two cannot drift apart. Test tools,
named below, need no pin there; one that has a pin must equal its floor too.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import tomllib
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).parents[1]
FLOORS = ROOT / "constraints" / "floors.txt"
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
NAME = canonicalize_name(PROJECT["name"])
# Needed only to test, check, benchmark, export or build the documentation site, never by
# a call of the library: the oldest session takes their newest releases that fit the runtime
# pins (the docs extra pins its own: nox -s docs).
TOOLS = {
    "pytest", "pytest-xdist", "hypothesis", "onnx", "onnxruntime", "openvino", "matplotlib",
    "sphinx", "pydata-sphinx-theme", "myst-parser", "numpydoc",
    "onnxscript", "jax2onnx",  # (the export extra: exporters, which nox -s converters runs)
}  # fmt: skip
# Pinned in floors.txt though onnx-gather does not declare them.
TRANSITIVE = {"jaxlib"}


def _requirements(lines: list[str]) -> list[Requirement]:
    reqs = []
    for line in lines:
        line = line.split("#", 1)[0].strip()
        if line and not line.startswith("-"):
            reqs.append(Requirement(line))
    return reqs


def _pins() -> dict[str, Version]:
    pins = {}
    for req in _requirements(FLOORS.read_text().splitlines()):
        (spec,) = req.specifier
        assert spec.operator == "==", f"floors.txt: {req} must be an exact pin"
        assert not req.extras, f"floors.txt: {req}: constraints take no extras"
        pins[canonicalize_name(req.name)] = Version(spec.version)
    return pins


def _declared() -> list[tuple[str, Requirement]]:
    """Every requirement in pyproject.toml and backends/*.txt, with where it is declared."""
    found = [("dependencies", Requirement(r)) for r in PROJECT["dependencies"]]
    for extra, reqs in PROJECT["optional-dependencies"].items():
        found += [(f"[{extra}]", Requirement(r)) for r in reqs]
    for path in sorted((ROOT / "backends").glob("*.txt")):
        found += [
            (f"backends/{path.name}", r) for r in _requirements(path.read_text().splitlines())
        ]
    return [(where, r) for where, r in found if canonicalize_name(r.name) != NAME]


DECLARED = _declared()


@pytest.mark.parametrize(("where", "req"), DECLARED, ids=[f"{w}:{r}" for w, r in DECLARED])
def test_floor_is_the_tested_pin(where: str, req: Requirement) -> None:
    name = canonicalize_name(req.name)
    floors = [s.version for s in req.specifier if s.operator in (">=", "==")]
    pins = _pins()
    if name in TOOLS and name not in pins:
        return
    assert name in pins, f"{where}: {req} is a runtime dependency missing from {FLOORS.name}"
    assert len(floors) == 1, f"{where}: {req} must state one floor (>=) that oldest tests"
    assert Version(floors[0]) == pins[name], (
        f"{where}: {req} declares {floors[0]}, but {FLOORS.name} tests {pins[name]}"
    )


def test_every_pin_is_declared() -> None:
    declared = {canonicalize_name(r.name) for _, r in DECLARED}
    stray = set(_pins()) - declared - TRANSITIVE
    assert not stray, f"{FLOORS.name} pins {sorted(stray)}, which nothing declares"


def test_requires_python_matches_the_classifiers() -> None:
    floor = re.fullmatch(r">=\s*3\.(\d+)", PROJECT["requires-python"])
    assert floor, PROJECT["requires-python"]
    listed = {
        int(c.rsplit(".", 1)[1])
        for c in PROJECT["classifiers"]
        if re.fullmatch(r"Programming Language :: Python :: 3\.\d+", c)
    }
    assert listed, "classifiers list no Python 3.x version"
    assert min(listed) == int(floor.group(1))
