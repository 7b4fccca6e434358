"""The programs benchmark's runner (benchmarks/programs.py), on NumPy only: a smoke.

The compiled modes take tens of seconds to compile and run in ``nox -s bench``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from benchmarks import programs


def _quick() -> tuple[list[programs.Row], list[str]]:
    return programs.run(
        ["numpy"], ["eager"], ["graph", "decode"], programs.SMOKE, 1, 1e-5, lambda _: None
    )


def test_workloads_hold_negative_indices() -> None:
    # The workloads: some indices of each gather are negative.
    _, ge, g, nd = programs.graph_inputs(programs.FULL)
    assert len(ge) == len(g) == len(nd) == 13
    assert all((a < 0).any() for a in ge)
    assert all((b < 0).any() for b in g)
    assert any((c < 0).any() for c in nd)
    inputs = programs.decode_inputs(programs.FULL)
    assert len(inputs["caches"]) == 8
    assert inputs["caches"][0].shape == (1, 8, 512, 64)
    # The ScatterND coordinates address (0, h, pos) for every head.
    assert (inputs["idx"][0, :, 0] == [[0, h, 300] for h in range(8)]).all()


def test_numpy_rows_agree_and_are_timed() -> None:
    rows, _ = _quick()
    assert [(r.program, r.native_form) for r in rows] == [
        ("converted graph: 3 small gathers", "np.take_along_axis, np.take, y[c[:, 0], c[:, 1]]"),
        ("decode step: 1 layers, ScatterND out=", "c[:, :, pos] = new"),
        ("decode step: 1 layers, ScatterElements out=", "c[:, :, pos] = new"),
        ("decode step: 1 layers, TensorScatter out=", "c[:, :, pos] = new"),
    ]
    for r in rows:
        assert r.note == ""
        assert r.ratio is not None
        assert r.ours is not None
        assert r.ours > 0


def test_a_result_that_differs_is_reported_not_timed(monkeypatch: pytest.MonkeyPatch) -> None:
    native = programs.graph_numpy

    def one_ulp_off(x: Any, ge: Any, g: Any, nd: Any) -> Any:
        y, acc = native(x, ge, g, nd)
        return np.nextafter(y, np.inf), acc

    monkeypatch.setattr(programs, "graph_numpy", one_ulp_off)
    graph, *decode = _quick()[0]
    assert graph.note == "results differ from native (not bit for bit): not timed"
    assert (graph.ours, graph.native, graph.ratio) == (None, None, None)
    assert all(r.ratio is not None for r in decode)


def test_a_failing_program_is_reported_with_its_error(monkeypatch: pytest.MonkeyPatch) -> None:
    def fails(*args: Any) -> Any:
        raise IndexError("index 512 is out of bounds")

    monkeypatch.setattr(programs, "decode_ours_elements", fails)
    rows, _ = _quick()
    elements = [r for r in rows if "ScatterElements" in r.program]
    assert len(elements) == 1
    assert elements[0].note == (
        "ours ScatterElements fails (IndexError: index 512 is out of bounds)"
    )
    assert elements[0].ratio is None


def test_command_line_writes_the_table(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["--smoke", "--rounds", "1", "--sample", "1e-5", "--backends", "numpy"]
    assert programs.main([*argv, "--modes", "eager", "--out", str(tmp_path)]) == 0
    table = (tmp_path / "programs.md").read_text()
    assert table in capsys.readouterr().out
    assert "| program | mode | native | ours µs | native µs | ours/native |" in table
    assert "| decode step: 1 layers, ScatterND out= | eager NumPy | c[:, :, pos] = new |" in table


def test_command_line_refuses_an_unknown_backend(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        programs.main(["--backends", "numpy,nosuch"])
    assert exit_info.value.code == 2
    assert "unknown backend nosuch" in capsys.readouterr().err


def test_a_cold_compile_is_timed_in_a_fresh_process() -> None:
    """The child builds the contender, calls it once and reports the seconds; None if it fails.

    (NumPy's eager step here: the child is the same for every mode but the warm-up.)
    """
    smoke = programs.SMOKE
    seconds = programs.cold_compile_s("decode", "numpy", "eager", "ours ScatterND", smoke)
    assert seconds is not None
    assert 0 < seconds < 60
    assert programs.cold_compile_s("decode", "numpy", "eager", "no such", smoke) is None
    other = programs.Sizes(layers=2)
    with pytest.raises(ValueError, match=r"FULL or SMOKE sizes, not Sizes\(.*layers=2"):
        programs.cold_compile_s("decode", "numpy", "eager", "ours ScatterND", other)


def test_a_cold_run_reports_the_fresh_process_times(monkeypatch: pytest.MonkeyPatch) -> None:
    """With ``cold``, a compiled mode's compile seconds are the fresh processes'.

    (NumPy's eager graph stands for a compiled mode: the run asks by the mode it runs.)
    """
    asked = []

    def cold(program: str, backend: str, mode: str, label: str, sizes: Any, device: str) -> float:
        asked.append((program, backend, mode, label, sizes))
        return 12.5

    def graph(backend: str, mode: str, sizes: Any, device: str) -> Any:
        return programs._graph_group("numpy", "eager", sizes, device)

    monkeypatch.setattr(programs, "cold_compile_s", cold)
    monkeypatch.setattr(programs, "MODES", (("numpy", "jit"),))
    monkeypatch.setattr(programs, "GROUPS", {"graph": graph})
    rows, _ = programs.run(
        ["numpy"], ["jit"], ["graph"], programs.SMOKE, 1, 1e-5, lambda _: None, cold=True
    )
    assert asked == [
        ("graph", "numpy", "jit", label, programs.SMOKE) for label in ("ours", "native")
    ]
    assert (rows[0].compile_ours, rows[0].compile_native) == (12.5, 12.5)
