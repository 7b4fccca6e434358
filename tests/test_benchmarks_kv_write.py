"""The single KV-write benchmark (benchmarks/kv_write.py): its writes agree before timing."""

from __future__ import annotations

import sys
from typing import Any

import numpy as np
import pytest

import onnx_gather as og
from benchmarks import kv_write

pytestmark = pytest.mark.backend("torch")


def test_every_write_lands_the_new_entry_and_the_table_prints(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    writes = kv_write.contenders()
    assert {"torch ours ScatterND", "torch index_copy_", "numpy ours ScatterElements"} <= set(
        writes
    )
    monkeypatch.setattr(sys, "argv", ["kv_write", "--rounds", "1", "--sample", "1e-5"])
    kv_write.main()
    table = capsys.readouterr().out.splitlines()
    assert len(table) == 2 + 3 * 2 + 3
    assert table[2].startswith("| torch ours ScatterND | ")


def test_a_write_that_misses_is_reported_not_timed(monkeypatch: pytest.MonkeyPatch) -> None:
    real = og.scatter_nd

    def off_by_one(c: Any, idx: Any, new: Any, **kw: Any) -> Any:
        return real(c, idx - np.array([0, 0, 1]) if isinstance(idx, np.ndarray) else idx, new, **kw)

    monkeypatch.setattr(og, "scatter_nd", off_by_one)
    with pytest.raises(AssertionError, match="numpy ours ScatterND wrote another cache"):
        kv_write.contenders()
