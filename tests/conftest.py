"""Parametrises tests over the libraries of this run (see libs.py).

The helper modules beside this file (cases, helpers, libs, oracle, ...) are importable by
name through pytest's ``pythonpath`` setting in pyproject.toml.
"""

from __future__ import annotations

import pytest
from libs import LIBS


def pytest_report_header() -> str:
    return "onnx-gather backends under test: " + ", ".join(lib.name for lib in LIBS)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "lib" in metafunc.fixturenames:
        metafunc.parametrize("lib", LIBS, ids=[lib.name for lib in LIBS])
