"""Parametrises tests over the libraries of this run (see libs.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from libs import Lib, selected

LIBS: list[Lib] = selected()


def pytest_report_header() -> str:
    return "onnx-gather backends under test: " + ", ".join(lib.name for lib in LIBS)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "lib" in metafunc.fixturenames:
        metafunc.parametrize("lib", LIBS, ids=[lib.name for lib in LIBS])
