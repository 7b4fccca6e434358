"""``python -m onnx_gather check``: runs, prints its matrix, explains missing dependencies."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from onnx_gather._ops import OPS


def _run(*args: str, path: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = None
    if path is not None:
        env = {**os.environ, "PYTHONPATH": f"{path}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    return subprocess.run(
        [sys.executable, "-m", "onnx_gather", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        check=False,
    )


def test_check_prints_the_matrix() -> None:
    done = _run("check", "--backends", "numpy", "--examples", "10")
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    header = next(line for line in lines if line.startswith("library"))
    assert "official ONNX cases" in header
    assert "gather_elements" in header
    assert "openvino.gather_elements" in header
    assert "scatter_elements" in header
    assert "scatter_nd" in header
    row = next(line for line in lines if line.startswith("numpy "))
    assert row.count("pass (10 examples)") == len(OPS), row
    assert "all conform" in done.stdout


@pytest.mark.parametrize("module", ["hypothesis", "onnx"])
def test_check_explains_a_missing_dependency(tmp_path: Path, module: str) -> None:
    # A module of that name that cannot be imported shadows the installed one.
    (tmp_path / f"{module}.py").write_text(f"raise ImportError('no {module} here')\n")
    done = _run("check", path=tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert f"needs {module}" in done.stderr
    assert 'pip install -e ".[check]"' in done.stderr
    assert "Traceback" not in done.stderr


def test_neither_import_loads_hypothesis_or_onnx() -> None:
    code = textwrap.dedent(
        """
        import sys
        import onnx_gather, onnx_gather.openvino, onnx_gather.__main__
        print(sorted({m.split('.')[0] for m in sys.modules} & {'hypothesis', 'onnx'}))
        """
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_unknown_backend_is_an_error() -> None:
    done = _run("check", "--backends", "nosuchlib", "--examples", "1")
    assert done.returncode != 0
    assert "nosuchlib" in done.stderr


def test_operators_limit_the_campaign_and_the_official_cases() -> None:
    done = _run(
        "check", "--backends", "numpy", "--operators", "tensor_scatter,openvino.gather",
        "--examples", "5",
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    header = next(line for line in lines if line.startswith("library")).split()
    assert header[-2:] == ["tensor_scatter", "openvino.gather"]
    row = next(line for line in lines if line.startswith("numpy "))
    assert row.count("pass (5 examples)") == 2, row
    # TensorScatter's official cases alone (OpenVINO's Gather has none); onnx before 1.19
    # has none of them.
    from onnx_gather._conformance.libraries import installed
    from onnx_gather._conformance.official import official_cases, official_runs

    (numpy_lib,) = installed(["numpy"])
    runs = sum(
        1
        for case in official_cases()
        if case.model.graph.node[0].op_type == "TensorScatter"
        for _ in official_runs(case, numpy_lib.holds)
    )
    assert f"pass {runs}/{runs}" in row, row


def test_unknown_operator_is_an_error() -> None:
    done = _run("check", "--operators", "gather,nosuchop")
    assert done.returncode == 2
    assert "--operators: 'nosuchop'" in done.stderr
    assert "openvino.scatter_nd_update" in done.stderr  # the known ones are listed
