"""Chooses the tests of this run's libraries (see libs.py).

* A test with a ``lib`` argument runs once per library of the run.
* A module named ``test_<library>_*.py`` or ``test_<library>.py`` tests that library's own
  features (its transforms, its layouts): it is collected only in runs of that library.
* A test marked ``backend(name)`` runs only in runs of that library; in others it is
  deselected, never skipped: a skip would read as a cell that passed. So is a test whose
  parameters, drawn from this run's libraries, came out empty.
* A test of ``NUMPY_ONLY`` below calls no library but NumPy (the compiled kernels, the
  oracle, the reference evaluator, OpenVINO's runtime, the floors file, ``check``'s command
  line) and reads nothing of the run's libraries: every session installs the same NumPy,
  onnx and runtimes beside its library, so its outcome is the same in all of them. It runs
  where NumPy is among the run's libraries (``tests``, ``oldest`` on the floors, and
  ``no_compiler``'s files) and is deselected elsewhere, as if marked ``backend("numpy")``.
  A test of those modules that uses ``LIBS`` or a ``lib``/``backend`` parameter is not in
  it, nor are tests/test_import.py's, whose outcome depends on the frameworks installed.
* A test marked ``tool(name)`` needs a tool no library brings (onnxscript, for torch's
  dynamo exporter): it runs only where ONNX_GATHER_TOOLS names the tool (the nox session
  that installs it), and there a tool that cannot be imported fails the run.

The helper modules beside this file (cases, helpers, libs, oracle, ...) are importable by
name through pytest's ``pythonpath`` setting in pyproject.toml.
"""

from __future__ import annotations

import importlib
import importlib.util
import logging
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from libs import LIBS, Library

from onnx_gather._conformance.libraries import KNOWN

NAMES = {lib.name for lib in LIBS}
#: The tools this run installs (ONNX_GATHER_TOOLS, comma separated); each must import.
TOOLS = {t.strip() for t in os.environ.get("ONNX_GATHER_TOOLS", "").split(",") if t.strip()}
for _tool in TOOLS:  # a named tool that is not installed fails the run
    if importlib.util.find_spec(_tool) is None:
        raise ModuleNotFoundError(f"ONNX_GATHER_TOOLS names {_tool}, which is not installed")


#: Library-independent tests by module: every test of the module (None) or these functions.
NUMPY_ONLY: dict[str, frozenset[str] | None] = {
    "test_kernels.py": None,  # onnx_gather._kernels called directly on NumPy arrays
    "test_kernel_boundary.py": None,  # its malformed calls, on NumPy arrays and addresses
    "test_kernel_generated.py": None,  # its generated calls, on NumPy arrays and addresses
    "test_floors.py": None,  # reads pyproject.toml, backends/ and constraints/
    "test_openvino_runtime.py": None,  # OpenVINO's runtime on NumPy inputs
    "test_benchmarks_programs.py": None,  # the programs runner with backend "numpy"
    "test_structure.py": None,  # the package's source, read with ast
    "test_check_mode.py": None,  # ``python -m onnx_gather check --backends numpy`` and errors
    "test_api.py": frozenset(
        {"test_signatures", "test_data_must_be_an_array", "test_numpy_negative_strides"}
    ),
    "test_cases.py": frozenset(
        {"test_oracle_agrees_with_spec_examples", "test_oracle_raises_the_same_type"}
    ),
    "test_corners.py": frozenset({"test_thread_limits_from_the_environment"}),  # NumPy child
    "test_docs.py": frozenset({"test_docstring_examples", "test_readme_example"}),  # NumPy's
    "test_fast_paths.py": frozenset({"test_value_range"}),
    "test_nodes.py": frozenset(
        {
            "test_reference_ops_on_the_official_cases",
            "test_reference_ops_raise_where_the_evaluator_wraps",
            "test_reference_ops_use_the_models_opset",
            "test_reference_ops_are_one_per_onnx_operator",
            "test_run_node_errors",
            "test_run_node_names_the_operators_own_inputs",
            "test_run_node_needs_a_node",
        }
    ),
    "test_onnx_node_cases.py": frozenset({"test_the_suite_has_every_operator"}),
    "test_runner_messages.py": frozenset(
        {"test_the_runner_refuses_a_message_that_names_another_value"}
    ),
    "test_unchecked.py": frozenset(
        {"test_the_runner_judges_unchecked_gathers_by_the_rule", "test_jax_fill_values"}
    ),
}


def _numpy_only(item: pytest.Item) -> bool:
    """Whether ``item`` is library-independent; one marked for a library keeps its marker."""
    names = NUMPY_ONLY.get(item.path.name, frozenset())
    function = getattr(item, "originalname", item.name)
    if not (names is None or function in names) or item.get_closest_marker("backend"):
        return False
    callspec = getattr(item, "callspec", None)
    values = callspec.params.values() if callspec is not None else ()
    if "lib" in getattr(item, "fixturenames", ()) or any(isinstance(v, Library) for v in values):
        raise pytest.UsageError(f"{item.nodeid} takes a library: it cannot be in NUMPY_ONLY")
    return True


def pytest_report_header() -> str:
    tools = f"; tools: {', '.join(sorted(TOOLS))}" if TOOLS else ""
    return "onnx-gather backends under test: " + ", ".join(lib.name for lib in LIBS) + tools


#: The modules whose every test needs a tool (``pytestmark = pytest.mark.tool(...)``): not
#: even imported where the run does not name it (their imports would fail or skip).
TOOL_MODULES = {
    "test_jax_jaxonnxruntime.py": "jaxonnxruntime",
    "test_jax_jax2onnx.py": "jax2onnx",
    "test_torch_onnx2torch.py": "onnx2torch",
    "test_torch_replay_dynamo.py": "onnxscript",
    "test_torch_triton.py": "triton",
}


def pytest_ignore_collect(collection_path: Path) -> bool | None:
    library = collection_path.stem.removeprefix("test_").split("_")[0]
    if collection_path.suffix == ".py" and library in KNOWN and library not in NAMES:
        return True
    if TOOL_MODULES.get(collection_path.name, "") not in ("", *TOOLS):
        return True
    return None


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "lib" in metafunc.fixturenames:
        metafunc.parametrize("lib", LIBS, ids=[lib.name for lib in LIBS])


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    chosen, other = [], []
    for item in items:
        if _numpy_only(item):
            item.add_marker(pytest.mark.backend("numpy"))
        skip = item.get_closest_marker("skip")
        empty = skip is not None and "got empty parameter set" in str(skip.kwargs.get("reason"))
        mine = all(marker.args[0] in NAMES for marker in item.iter_markers("backend")) and all(
            marker.args[0] in TOOLS for marker in item.iter_markers("tool")
        )
        (chosen if mine and not empty else other).append(item)
    if other:
        config.hook.pytest_deselected(items=other)
        items[:] = chosen


@pytest.fixture(scope="module")
def client() -> Iterator[Any]:
    """A dask.distributed client of a local cluster of two worker processes (per module)."""
    distributed = pytest.importorskip("distributed")
    with (
        distributed.LocalCluster(
            n_workers=2,
            threads_per_worker=1,
            processes=True,
            dashboard_address=":0",  # (any free port: another process may hold 8787)
            silence_logs=logging.ERROR,
        ) as cluster,
        distributed.Client(cluster, set_as_default=False) as c,
    ):
        yield c
