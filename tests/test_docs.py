"""The README's examples and the public docstrings' examples run and print what they say."""

from __future__ import annotations

import doctest
import re
from pathlib import Path
from typing import Any

import pytest

import onnx_gather
from onnx_gather import _nodes, openvino

README = Path(__file__).parents[1] / "README.md"
BLOCKS = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
#: The library each example's imports name, by module (conftest.py's backend marker).
LIBRARIES = {"torch": "torch", "jax": "jax", "array_api_strict": "array-api-strict", "dask": "dask"}


def _example(block: str) -> Any:
    """The example, marked with the libraries it imports: it runs in their runs only."""
    needs = [lib for module, lib in LIBRARIES.items() if re.search(rf"import {module}\b", block)]
    marks = [pytest.mark.backend(lib) for lib in needs]
    return pytest.param(block, marks=marks, id=block.splitlines()[0][:40])


@pytest.mark.parametrize("block", [_example(b) for b in BLOCKS if ">>>" in b])
def test_readme_example(block: str) -> None:
    globs = {"np": __import__("numpy"), "og": onnx_gather}
    test = doctest.DocTestParser().get_doctest(block, globs, "README", str(README), 0)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    runner.run(test)
    assert runner.failures == 0, f"README example failed:\n{block}"


@pytest.mark.parametrize("module", [onnx_gather, openvino, _nodes], ids=lambda m: m.__name__)
def test_docstring_examples(module: object) -> None:
    result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE)  # type: ignore[arg-type]
    assert result.attempted > 0
    assert result.failed == 0
