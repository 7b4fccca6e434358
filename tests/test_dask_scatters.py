"""The scatters on Dask: lazy until computed, exact across any chunks."""

from __future__ import annotations

import dask.array as da
import numpy as np
import pytest
from helpers import assert_identical

import onnx_gather as og
from onnx_gather import _ops

SE, SN = _ops.SCATTER_ELEMENTS, _ops.SCATTER_ND


def test_a_call_computes_nothing_and_the_error_comes_at_compute() -> None:
    data = da.zeros((6, 4), chunks=(2, 3), dtype=np.float32)
    indices = da.from_array(np.array([[0, 1, 2, 3], [5, 6, 1, 0]]), chunks=(1, 2))
    updates = da.ones((2, 4), chunks=(1, 2), dtype=np.float32)
    result = og.scatter_elements(data, indices, updates, reduction="add")  # no error yet
    assert result.chunks == data.chunks
    with pytest.raises(
        IndexError, match=r"index 6 at position \(1, 1\) of indices .* axis 0 of size 6"
    ):
        result.compute()


@pytest.mark.parametrize("reduction", ["none", "add", "mul", "max", "min"])
@pytest.mark.parametrize("op", [SE, SN], ids=lambda op: op.name)
def test_irregular_chunks_give_the_numpy_bits(op: _ops.Operator, reduction: str) -> None:
    """Duplicates spread over many indices blocks reach each element in C order."""
    rng = np.random.default_rng(11)
    data = rng.standard_normal((23, 17)).astype(np.float32)
    if op is SE:
        indices = rng.integers(-23, 23, (40, 17))
        updates = rng.standard_normal((40, 17)).astype(np.float32)
        chunks = ((7, 13, 20), (5, 12))
    else:
        indices = rng.integers(-17, 17, (300, 2)) % np.array([23, 17])
        updates = rng.standard_normal(300).astype(np.float32)
        chunks = ((100, 150, 50), (2,))
    want = _ops.call(op, data, indices, updates, reduction=reduction)
    lazy = (
        da.from_array(data, chunks=((5, 10, 8), (9, 8))),
        da.from_array(indices, chunks=chunks),
        da.from_array(updates, chunks=chunks if op is SE else chunks[:1]),
    )
    assert_identical(_ops.call(op, *lazy, reduction=reduction).compute(), want)


def test_scatter_elements_parts_only_where_an_indices_block_can_land() -> None:
    """An update lands at its own position off the axis: no part for blocks it cannot reach.

    Data of 3 x 2 blocks, indices of 3 x 2 blocks, axis 0: each indices block reaches the
    3 output blocks of its own column, 18 parts (every pair would be 36).
    """
    data = da.zeros((6, 4), chunks=2, dtype=np.float32)
    indices = da.from_array(np.array([[0, 5, 1, 1]] * 6), chunks=2)
    updates = da.ones((6, 4), chunks=2, dtype=np.float32)
    result = og.scatter_elements(data, indices, updates, reduction="add")
    layer = result.dask.layers[result.name]
    parts = [key for key in layer if key[0].endswith("-part")]
    assert len(parts) == 18
    want = og.scatter_elements(np.zeros((6, 4), np.float32), np.array([[0, 5, 1, 1]] * 6),
                               np.ones((6, 4), np.float32), reduction="add")  # fmt: skip
    assert_identical(result.compute(), want)
