"""Chooses the tests of this run's libraries (see libs.py).

* A test with a ``lib`` argument runs once per library of the run.
* A module named ``test_<library>_*.py`` or ``test_<library>.py`` tests that library's own
  features (its transforms, its layouts): it is collected only in runs of that library.
* A test marked ``backend(name)`` runs only in runs of that library; in others it is
  deselected, never skipped: a skip would read as a cell that passed. So is a test whose
  parameters, drawn from this run's libraries, came out empty.
* A test marked ``tool(name)`` needs a tool no library brings (onnxscript, for torch's
  dynamo exporter): it runs only where ONNX_GATHER_TOOLS names the tool (the nox session
  that installs it), and there a tool that cannot be imported fails the run.

The helper modules beside this file (cases, helpers, libs, oracle, ...) are importable by
name through pytest's ``pythonpath`` setting in pyproject.toml.
"""

from __future__ import annotations

import importlib
import os
from pathlib import Path

import pytest
from libs import LIBS

from onnx_gather._conformance.libraries import KNOWN

NAMES = {lib.name for lib in LIBS}
#: The tools this run installs (ONNX_GATHER_TOOLS, comma separated); each must import.
TOOLS = {t.strip() for t in os.environ.get("ONNX_GATHER_TOOLS", "").split(",") if t.strip()}
for _tool in TOOLS:
    importlib.import_module(_tool)  # a named tool that is missing fails the run


def pytest_report_header() -> str:
    tools = f"; tools: {', '.join(sorted(TOOLS))}" if TOOLS else ""
    return "onnx-gather backends under test: " + ", ".join(lib.name for lib in LIBS) + tools


def pytest_ignore_collect(collection_path: Path) -> bool | None:
    library = collection_path.stem.removeprefix("test_").split("_")[0]
    if collection_path.suffix == ".py" and library in KNOWN and library not in NAMES:
        return True
    return None


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "lib" in metafunc.fixturenames:
        metafunc.parametrize("lib", LIBS, ids=[lib.name for lib in LIBS])


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    chosen, other = [], []
    for item in items:
        skip = item.get_closest_marker("skip")
        empty = skip is not None and "got empty parameter set" in str(skip.kwargs.get("reason"))
        mine = all(marker.args[0] in NAMES for marker in item.iter_markers("backend")) and all(
            marker.args[0] in TOOLS for marker in item.iter_markers("tool")
        )
        (chosen if mine and not empty else other).append(item)
    if other:
        config.hook.pytest_deselected(items=other)
        items[:] = chosen
