"""The README's examples and the public docstrings' examples run and print what they say."""

from __future__ import annotations

import doctest
import re
from pathlib import Path
from typing import Any

import pytest

import onnx_gather
from onnx_gather import _nodes, openvino

ROOT = Path(__file__).parents[1]
README = ROOT / "README.md"
BLOCKS = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
#: The documentation site's pages (docs/, not its build), each example block with its page.
PAGES = sorted(p for p in (ROOT / "docs").rglob("*.md") if "_build" not in p.parts)
PAGE_BLOCKS = [
    (page, block)
    for page in PAGES
    for block in re.findall(r"```python\n(.*?)```", page.read_text(), flags=re.S)
    if ">>>" in block
]
#: The library each example's imports name, by module (conftest.py's backend marker).
LIBRARIES = {"torch": "torch", "jax": "jax", "array_api_strict": "array-api-strict", "dask": "dask"}
#: The tools an example's imports name (conftest.py's tool marker: the session that has them).
TOOLS = {"onnxscript": "onnxscript", "jax2onnx": "jax2onnx"}


def _example(block: str, page: Path | None = None) -> Any:
    """The example, marked with the libraries it imports: it runs in their runs only."""
    needs = [lib for module, lib in LIBRARIES.items() if re.search(rf"import {module}\b", block)]
    needs += [lib for module, lib in LIBRARIES.items()
              if re.search(rf"import [\w, ]*\b{module}\b", block) and lib not in needs]  # fmt: skip
    marks = [pytest.mark.backend(lib) for lib in needs]
    marks += [pytest.mark.tool(tool) for module, tool in TOOLS.items()
              if re.search(rf"import [\w, ]*\b{module}\b", block)]  # fmt: skip
    where = f"{page.relative_to(ROOT)}:" if page is not None else ""
    return pytest.param(block, marks=marks, id=where + block.splitlines()[0][:40])


def _run_doctest(block: str, name: str, path: Path) -> int:
    globs = {"np": __import__("numpy"), "og": onnx_gather}
    test = doctest.DocTestParser().get_doctest(block, globs, name, str(path), 0)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    runner.run(test)
    return runner.failures


@pytest.mark.parametrize("block", [_example(b) for b in BLOCKS if ">>>" in b])
def test_readme_example(block: str) -> None:
    assert _run_doctest(block, "README", README) == 0, f"README example failed:\n{block}"


@pytest.mark.parametrize("block", [_example(b, page) for page, b in PAGE_BLOCKS])
def test_docs_page_example(block: str) -> None:
    """Every ``>>>`` example of the documentation site's pages runs and prints what it says."""
    assert _run_doctest(block, "docs", ROOT / "docs") == 0, f"docs example failed:\n{block}"


def test_docs_pages_have_examples() -> None:
    """The collection above finds the pages' examples (a pattern that found none would pass)."""
    assert len(PAGE_BLOCKS) >= 10
    assert {p.name for p, _ in PAGE_BLOCKS} >= {"getting-started.md", "numpy.md", "torch.md"}


@pytest.mark.parametrize("module", [onnx_gather, openvino, _nodes], ids=lambda m: m.__name__)
def test_docstring_examples(module: object) -> None:
    result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE)  # type: ignore[arg-type]
    assert result.attempted > 0
    assert result.failed == 0


def test_readme_is_a_landing_page() -> None:
    """At most 200 lines, and every link it has points at a file of the repository."""
    text = README.read_text()
    assert len(text.splitlines()) <= 200
    links = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", text)
    assert links
    for link in links:
        assert not link.startswith(("http:", "https:")), link
        assert (ROOT / link).exists(), link
