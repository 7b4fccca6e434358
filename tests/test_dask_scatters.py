"""The scatters on Dask: lazy until computed, exact across any chunks."""

from __future__ import annotations

import math
from typing import Any

import dask.array as da
import numpy as np
import pytest
from helpers import assert_identical, oracle_answer
from scatter_cases import scatter

import onnx_gather as og
from onnx_gather import _ops
from onnx_gather._backends._dask import _points as points

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
def test_irregular_chunks_give_the_oracles_bits(op: _ops.Operator, reduction: str) -> None:
    """Duplicates spread over many indices blocks reach each element in C order.

    Against the loop oracle, not NumPy's call: the blocks run NumPy's kernel themselves.
    """
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
    want = oracle_answer(scatter("irregular", op, data, indices, updates, {"reduction": reduction}))
    lazy = (
        da.from_array(data, chunks=((5, 10, 8), (9, 8))),
        da.from_array(indices, chunks=chunks),
        da.from_array(updates, chunks=chunks if op is SE else chunks[:1]),
    )
    assert_identical(_ops.call(op, *lazy, reduction=reduction).compute(), want)


def test_scatter_elements_parts_only_where_an_indices_block_can_land() -> None:
    """An update lands at its own position off the axis: no part for blocks it cannot reach.

    Data of 3 x 2 blocks, indices of 3 x 1 blocks (data's first column), axis 0: each
    indices block reaches the 3 output blocks of that column, 9 parts (every pair would
    be 18; the shuffle 12 route tasks).
    """
    data = da.zeros((6, 4), chunks=2, dtype=np.float32)
    indices = da.from_array(np.array([[0, 5]] * 6), chunks=2)
    updates = da.ones((6, 2), chunks=2, dtype=np.float32)
    result = og.scatter_elements(data, indices, updates, reduction="add")
    layer = result.dask.layers[result.name]
    parts = [key for key in layer if key[0].endswith("-part")]
    assert len(parts) == 9
    want = og.scatter_elements(np.zeros((6, 4), np.float32), np.array([[0, 5]] * 6),
                               np.ones((6, 2), np.float32), reduction="add")  # fmt: skip
    assert_identical(result.compute(), want)


def _layer(result: da.Array) -> dict[Any, Any]:
    return dict(result.dask.layers[result.name])


@pytest.mark.parametrize("blocks", [64, 128])
def test_the_graph_grows_with_the_blocks_not_their_pairs(blocks: int) -> None:
    """One-element blocks, every update anywhere: a shuffle by target block, not n * n parts.

    The result's own tasks: a records task per indices block, a join per output block, and
    at most ``2 * R * R`` route tasks (two stages of radix ``R``, ``R * R >= N`` for the
    ``N`` blocks): linear in the blocks.
    """
    rng = np.random.default_rng(blocks)
    indices = rng.integers(-blocks, blocks, blocks)
    case = scatter("dask-shuffle", SE, np.zeros(blocks, np.float32), indices,
                   np.arange(blocks, dtype=np.float32), {"reduction": "add"})  # fmt: skip
    result = og.scatter_elements(
        da.zeros(blocks, chunks=1, dtype=np.float32), da.from_array(indices, chunks=1),
        da.from_array(case.updates, chunks=1), reduction="add",
    )  # fmt: skip
    layer = _layer(result)
    routes = [key for key in layer if key[0].endswith("-route")]
    assert len(layer) - len(routes) == 2 * blocks  # records and joins
    radix = math.isqrt(blocks - 1) + 1
    assert 0 < len(routes) <= 2 * radix * radix <= 2 * (blocks + 2 * radix + 1)
    assert not [key for key in layer if key[0].endswith("-part")]
    assert_identical(result.compute(), oracle_answer(case))


#: Data's shape and chunks, and the indices' chunks (ScatterND: their last dim whole).
SHUFFLED = {
    SE: ((7, 6), ((1, 2, 1, 1, 2), (1, 2, 3)), ((2,) * 10, (1, 1, 2, 2))),
    SN: ((9, 4, 3), ((2, 1, 3, 1, 2), 2, (1, 2)), ((3,) * 10, (2,))),
}


@pytest.mark.parametrize("check_bounds", [True, False])
@pytest.mark.parametrize("op", [SE, SN], ids=lambda op: op.name)
def test_the_shuffle_gives_the_oracles_bits(op: _ops.Operator, check_bounds: bool) -> None:
    """Duplicates spread over many blocks meet in C order, every reduction; unchecked drops.

    ScatterND's data is chunked along its slice dims too: each update lands in two output
    blocks.
    """
    shape, data_chunks, index_chunks = SHUFFLED[op]
    rng = np.random.default_rng(5)
    data = rng.standard_normal(shape).astype(np.float32)
    top = 0 if check_bounds else 2  # (unchecked: indices up to 2 past the end, dropped)
    if op is SE:  # (20, 6) indices into (7, 6) data along axis 0
        indices = rng.integers(-7, 7 + top, (20, 6))
        updates = rng.standard_normal((20, 6)).astype(np.float32)
        update_chunks = index_chunks
    else:  # (30, 2) tuples into the first two dims of (9, 4, 3) data
        indices = np.stack([rng.integers(-9, 9, 30), rng.integers(-4, 4 + top, 30)], axis=-1)
        updates = rng.standard_normal((30, 3)).astype(np.float32)
        update_chunks = (index_chunks[0], -1)
    for reduction in ("none", "add", "mul", "max", "min"):
        case = scatter("dask-shuffled", op, data, indices, updates, {"reduction": reduction},
                       check_bounds=check_bounds)  # fmt: skip
        result = _ops.call(
            op, da.from_array(data, chunks=data_chunks),
            da.from_array(indices, chunks=index_chunks),
            da.from_array(updates, chunks=update_chunks),
            reduction=reduction, check_bounds=check_bounds,
        )  # fmt: skip
        assert any(key[0].endswith("-route") for key in _layer(result))
        assert_identical(result.compute(), oracle_answer(case))


def test_the_shuffle_raises_at_compute_naming_the_position() -> None:
    data = da.zeros(32, chunks=1, dtype=np.float32)
    indices = np.arange(32)
    indices[21] = 40
    result = og.scatter_elements(data, da.from_array(indices, chunks=1),
                                 da.ones(32, chunks=1, dtype=np.float32))  # fmt: skip
    assert any(key[0].endswith("-route") for key in _layer(result))
    with pytest.raises(IndexError, match=r"index 40 at position \(21,\) of indices .* size 32"):
        result.compute()


# --- by data block (_scatter_blocks) ------------------------------------------------------


@pytest.fixture
def by_block(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tasks cost nothing: wherever it applies, the by-block plan moves fewer bytes."""
    monkeypatch.setattr(points, "TASK_BYTES", 0)


def _kinds(result: da.Array) -> set[str]:
    return {n.rsplit("-", 1)[0] for n in result.dask.layers}


#: Data's shape and chunks (uneven, an empty one), the indices' chunks, and the updates'.
BLOCKED = {
    SE: ((7, 6), ((1, 2, 0, 3, 1), (1, 2, 3)), ((5, 0, 15), (1, 5)), None),
    SN: ((9, 4, 3), ((2, 1, 3, 1, 2), 2, (1, 2)), ((7, 0, 23), (2,)), ((7, 0, 23), 3)),
}


@pytest.mark.usefixtures("by_block")
@pytest.mark.parametrize("form", ["host", "dask"])
@pytest.mark.parametrize("check_bounds", [True, False])
@pytest.mark.parametrize("op", [SE, SN], ids=lambda op: op.name)
def test_by_block_gives_the_oracles_bits(op: _ops.Operator, check_bounds: bool, form: str) -> None:
    """Duplicates in several indices blocks meet in C order, every reduction; unchecked drops."""
    shape, data_chunks, index_chunks, update_chunks = BLOCKED[op]
    rng = np.random.default_rng(8)
    data = rng.standard_normal(shape).astype(np.float32)
    top = 0 if check_bounds else 2
    if op is SE:  # along axis 0 of (7, 6) data: duplicates down each column
        indices = rng.integers(-7, 7 + top, (20, 6))
        updates = rng.standard_normal((20, 6)).astype(np.float32)
    else:
        indices = np.stack([rng.integers(-9, 9, 30), rng.integers(-4, 4 + top, 30)], axis=-1)
        updates = rng.standard_normal((30, 3)).astype(np.float32)
    for reduction in ("none", "add", "mul", "max", "min"):
        case = scatter("dask-by-block", op, data, indices, updates, {"reduction": reduction},
                       check_bounds=check_bounds)  # fmt: skip
        lazy = da.from_array(indices, chunks=index_chunks)
        result = _ops.call(
            op, da.from_array(data, chunks=data_chunks), indices if form == "host" else lazy,
            da.from_array(updates, chunks=update_chunks or index_chunks),
            reduction=reduction, check_bounds=check_bounds,
        )  # fmt: skip
        assert f"{'scatterelements' if op is SE else 'scatter-nd'}-route" in _kinds(result)
        assert result.chunks == da.from_array(data, chunks=data_chunks).chunks
        assert_identical(result.compute(), oracle_answer(case))


@pytest.mark.usefixtures("by_block")
def test_by_block_needs_indices_blocks_in_c_order() -> None:
    """ScatterND's indices cut along two dims: block order is not C order, so the records
    plan (which sorts by position) runs instead."""
    rng = np.random.default_rng(9)
    data = rng.standard_normal((6, 5)).astype(np.float32)
    indices = rng.integers(0, 6, (4, 6, 1))
    updates = rng.standard_normal((4, 6, 5)).astype(np.float32)
    lazy = da.from_array(indices, chunks=(2, 3, 1))
    result = og.scatter_nd(da.from_array(data, chunks=2), lazy, da.from_array(updates, chunks=2))
    assert "scatter-nd-route" not in _kinds(result)
    assert_identical(result.compute(), og.scatter_nd(data, indices, updates))
    rows = da.from_array(indices, chunks=(1, 6, 1))  # (cut along the first dim only)
    lazy_updates = da.from_array(updates, chunks=(1, 6, 5))
    result = og.scatter_nd(da.from_array(data, chunks=2), rows, lazy_updates)
    assert "scatter-nd-route" in _kinds(result)
    assert_identical(result.compute(), og.scatter_nd(data, indices, updates))


@pytest.mark.usefixtures("by_block")
def test_by_block_raises_at_compute_naming_the_position() -> None:
    data = da.zeros((4, 8), chunks=(2, 3), dtype=np.float32)
    indices = np.zeros((4, 5), np.int64)
    indices[3, 4] = -9
    lazy = da.from_array(indices, chunks=(2, 2))
    result = og.scatter_elements(data, lazy, da.ones((4, 5), chunks=2, dtype=np.float32), axis=1)
    assert "scatterelements-route" in _kinds(result)
    with pytest.raises(IndexError, match=r"index -9 at position \(3, 4\) of indices .* size 8"):
        result.compute()
    pairs = np.zeros((5, 2), np.int64)
    pairs[4] = (1, 8)
    ones = da.ones(5, chunks=2, dtype=np.float32)
    result = og.scatter_nd(data, da.from_array(pairs, chunks=(2, 2)), ones)
    with pytest.raises(IndexError, match=r"index 8 at position \(4, 1\) of indices"):
        result.compute()


@pytest.mark.usefixtures("by_block")
def test_by_block_with_no_update() -> None:
    data = np.arange(12.0, dtype=np.float32).reshape(3, 4)
    lazy = da.from_array(data, chunks=2)
    empty = np.zeros((0, 4), np.int64)
    out = og.scatter_elements(lazy, empty, da.zeros((0, 4), dtype=np.float32, chunks=2))
    assert_identical(out.compute(), data)
    nothing = da.zeros((0, 4), chunks=2, dtype=np.float32)
    rows = og.scatter_nd(lazy, np.zeros((0, 1), np.int64), nothing)
    assert_identical(rows.compute(), data)


@pytest.mark.usefixtures("by_block")
def test_by_block_with_chunks_once_unknown() -> None:
    """Unknown chunk sizes are refused; once computed, the by-block plan gives NumPy's bits."""
    rng = np.random.default_rng(10)
    data = rng.standard_normal((6, 10)).astype(np.float32)
    indices = rng.integers(-10, 10, (6, 10))
    updates = rng.standard_normal((6, 10)).astype(np.float32)
    lazy = da.from_array(indices, chunks=(2, 4))
    unknown = lazy[lazy[:, 0] > -100]
    with pytest.raises(ValueError, match="unknown shape"):
        og.scatter_elements(da.from_array(data, chunks=3), unknown, da.from_array(updates), axis=1)
    known = unknown.compute_chunk_sizes()
    result = og.scatter_elements(
        da.from_array(data, chunks=3), known, da.from_array(updates, chunks=2), axis=1,
        reduction="add",
    )  # fmt: skip
    assert "scatterelements-route" in _kinds(result)
    want = og.scatter_elements(data, indices, updates, axis=1, reduction="add")
    assert_identical(result.compute(), want)
