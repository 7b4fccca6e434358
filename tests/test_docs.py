"""The README's examples and the public docstrings' examples run and print what they say."""

from __future__ import annotations

import doctest
import importlib.util
import re
from pathlib import Path

import pytest

import onnx_gather
from onnx_gather import openvino

README = Path(__file__).parents[1] / "README.md"
BLOCKS = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
NEEDS = {"torch": "torch", "jax": "jax", "array_api_strict": "array_api_strict", "dask": "dask"}


def _needs(block: str) -> list[str]:
    return [mod for key, mod in NEEDS.items() if re.search(rf"import {key}\b", block)]


@pytest.mark.parametrize(
    "block", [b for b in BLOCKS if ">>>" in b], ids=lambda b: b.splitlines()[0][:40]
)
def test_readme_example(block: str) -> None:
    missing = [m for m in _needs(block) if importlib.util.find_spec(m) is None]
    if missing:
        pytest.skip(f"example needs {missing}, not installed in this session")
    globs = {"np": __import__("numpy"), "og": onnx_gather}
    test = doctest.DocTestParser().get_doctest(block, globs, "README", str(README), 0)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    runner.run(test)
    assert runner.failures == 0, f"README example failed:\n{block}"


@pytest.mark.parametrize("module", [onnx_gather, openvino], ids=lambda m: m.__name__)
def test_docstring_examples(module: object) -> None:
    result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE)  # type: ignore[arg-type]
    assert result.attempted > 0
    assert result.failed == 0
