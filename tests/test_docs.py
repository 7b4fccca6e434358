"""The README's, the site's and the docstrings' examples run, print what they say, and fit.

Each ``>>>`` block runs alone in a fresh namespace, as a user who pastes it runs it: a block
that uses ``og`` or ``np`` must import them itself.
"""

from __future__ import annotations

import doctest
import re
import warnings
from pathlib import Path
from typing import Any

import numpy as np
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
    """Run ``block`` in a namespace of its own, with nothing imported for it."""
    globs: dict[str, Any] = {"__name__": "__pasted__"}
    test = doctest.DocTestParser().get_doctest(block, globs, name, str(path), 0)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    with warnings.catch_warnings():
        # Importing inductor (an example's torch.compile) imports torch.utils.mkldnn, which
        # warns about TorchScript: printed once to a user, not an error.
        warnings.filterwarnings("ignore", "`torch.jit.script_method` is deprecated")
        # Kept, not cleared: torch.compile holds the example's globals in weak references
        # that clearing them breaks at exit.
        runner.run(test, clear_globs=False)
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


#: The widest code line a page may show: the site's code box holds about 84 characters,
#: a terminal 80. Long error messages wrap: doctest's NORMALIZE_WHITESPACE reads a line
#: break as a space.
WIDTH = 79


def _code_lines(path: Path) -> list[tuple[int, str]]:
    """Every line of ``path``'s fenced code blocks, with its line number.

    A fence of a directive (```{toctree}, ```{eval-rst}) holds no code: it is skipped.
    """
    lines, fence = [], None
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        stripped = line.strip()
        if fence is None and stripped.startswith("```"):
            fence = "code" if not stripped[3:].startswith("{") else "directive"
        elif fence is not None and stripped == "```":
            fence = None
        elif fence == "code":
            lines.append((number, line))
    return lines


@pytest.mark.backend("numpy")  # reads files: the same in every run
@pytest.mark.parametrize("path", [README, *PAGES], ids=lambda p: str(p.relative_to(ROOT)))
def test_code_lines_fit_the_code_box(path: Path) -> None:
    """Every line of every code block (examples, outputs, errors, commands) fits."""
    wide = [f"{path.name}:{n}: {len(line)}" for n, line in _code_lines(path) if len(line) > WIDTH]
    assert not wide, f"code lines wider than {WIDTH} characters: {wide}"


@pytest.mark.backend("numpy")
def test_examples_import_what_they_use() -> None:
    """The namespace is empty: a block that forgets ``import onnx_gather as og`` fails.

    (The check the examples' runs make; here shown on a block that uses ``og`` unimported.)
    """
    block = ">>> og.gather([1, 2], 0)\n1\n"
    assert _run_doctest(block, "unimported", ROOT) == 1


@pytest.mark.backend("numpy")
def test_changelog_has_one_section_per_heading() -> None:
    """The version being made (the topmost) has each heading (Added, Changed, ...) once."""
    text = (ROOT / "CHANGELOG.md").read_text()
    top = text.split("\n## ")[1]
    headings = re.findall(r"^### (.+)$", top, flags=re.M)
    assert headings
    assert len(headings) == len(set(headings)), headings


@pytest.mark.backend("numpy")
def test_first_run_prints_one_row_per_example(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``python -m onnx_gather``: a row per example, a column per library, skips explained.

    A second library that holds no int64 (as JAX without x64) stands beside NumPy.
    """
    import dataclasses

    from onnx_gather import __main__
    from onnx_gather._conformance.libraries import installed
    from onnx_gather._examples import EXAMPLES

    numpy_lib = installed(["numpy"])[0]
    narrow = dataclasses.replace(numpy_lib, name="narrow", holds=numpy_lib.holds - {"int64"})
    monkeypatch.setattr(__main__, "installed", lambda names: [numpy_lib, narrow])
    assert __main__.main([]) == 0
    out = capsys.readouterr().out
    header = out.splitlines()[0].split()
    assert header[:3] == ["example", "numpy", "narrow"]
    rows = [line for line in out.splitlines() if line.split(" ")[0] in {"Gather", "GatherND"}]
    assert rows
    assert all(line.count("pass") + line.count("skip") == 2 for line in rows)
    ints = sum(e.data.dtype == np.int64 for e in EXAMPLES)
    assert ints > 0
    assert out.count("skip (1)") == ints
    assert f"(1) narrow, int64 data: the library has no arrays of it: {ints} examples" in out
    assert f"{len(EXAMPLES)} examples: {2 * len(EXAMPLES) - ints} passed, 0 failed, " in out
    assert f"{ints} skipped (2 backends: numpy, narrow)" in out
