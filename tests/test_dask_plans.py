"""Dask only: GatherElements' and GatherND's two plans, which one the planner chooses, and
that indices local to one data block move no data.

Each plan gives NumPy's bits on every case of the shared table and on uneven, empty and
(once computed) unknown chunks; the graph's layer names say which plan ran.
"""

from __future__ import annotations

import math
from typing import Any

import dask
import dask.array as da
import numpy as np
import pytest
from cases import CASES, Case
from dask.core import get_dependencies
from helpers import applies, assert_identical, expected, run_case
from libs import LIBS

import onnx_gather as og
from onnx_gather._backends import _dask as backend
from onnx_gather._backends._dask import _points as points

DASK = next(lib for lib in LIBS if lib.name == "dask")
BY_BLOCK = ("gatherelements-route", "gather-nd-route", "gatherelements-local")


def _kinds(out: da.Array) -> set[str]:
    """The graph's layer names without their tokens."""
    return {n.rsplit("-", 1)[0] for n in out.__dask_graph__().layers}


@pytest.fixture(params=["by-block", "rechunk"])
def plan(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Each plan forced wherever it applies (data in several blocks where indices point)."""
    force = request.param == "by-block"

    def elements(data: da.Array, indices: Any, plan: Any) -> bool:
        return force and data.numblocks[plan.axis] > 1 and data.ndim <= 32

    def nd(data: da.Array, indices: Any, plan: Any) -> bool:
        return force and math.prod(data.numblocks[: len(plan.sizes)]) > 1 and data.ndim <= 32

    monkeypatch.setattr(backend, "_by_block", elements)
    monkeypatch.setattr(backend, "_nd_by_block", nd)
    return str(request.param)


@pytest.fixture
def bytes_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """The planner counting bytes only, not tasks: small arrays then take the by-block plan."""
    monkeypatch.setattr(points, "TASK_BYTES", 0)


def _table(ops: tuple[str, ...]) -> list[Case]:
    return [c for c in CASES if applies(DASK, c) and c.op in ops and c.raises in (None, IndexError)]


@pytest.mark.parametrize(
    "case",
    _table(("gather_elements", "openvino.gather_elements", "gather_nd")),
    ids=lambda c: c.id,
)
def test_case_table_on_each_plan(case: Case, plan: str) -> None:
    """Every GatherElements and GatherND case of the table (chunks of 2), on each plan."""
    if case.raises is not None:
        with pytest.raises(IndexError, match=case.match):
            DASK.to_numpy(run_case(DASK, case))
        return
    assert_identical(DASK.to_numpy(run_case(DASK, case)), expected(case))


UNEVEN = [
    ((7, 11), ((3, 4), (4, 0, 7))),
    ((5, 6, 7), ((2, 3), (1, 5), (3, 0, 4))),
    ((0, 5), ((0,), (2, 3))),
    ((4, 9), ((1, 0, 3), (4, 0, 5))),
]


@pytest.mark.parametrize(("shape", "chunks"), UNEVEN, ids=str)
@pytest.mark.parametrize("form", ["host", "dask"])
def test_gather_elements_uneven_and_empty_chunks(
    shape: tuple[int, ...], chunks: Any, form: str, plan: str
) -> None:
    rng = np.random.default_rng(3)
    src = rng.standard_normal(shape).astype(np.float32)
    data = da.from_array(src, chunks=chunks)
    for axis in range(len(shape)):
        if not shape[axis]:
            continue
        ishape = (*shape[:axis], 5, *shape[axis + 1 :])
        idx = rng.integers(-shape[axis], shape[axis], ishape)
        halves = tuple((n // 3, n - n // 3) for n in ishape)  # (uneven, and 0 where n < 3)
        ind = idx if form == "host" else da.from_array(idx, chunks=halves)
        out = og.gather_elements(data, ind, axis=axis)
        if plan == "by-block" and data.numblocks[axis] > 1:
            assert _kinds(out) & set(BY_BLOCK)
        assert_identical(DASK.to_numpy(out), og.gather_elements(src, idx, axis=axis))


@pytest.mark.parametrize(("shape", "chunks"), UNEVEN, ids=str)
@pytest.mark.parametrize("form", ["host", "dask"])
def test_gather_nd_uneven_and_empty_chunks(
    shape: tuple[int, ...], chunks: Any, form: str, plan: str
) -> None:
    rng = np.random.default_rng(4)
    src = rng.standard_normal(shape).astype(np.float32)
    data = da.from_array(src, chunks=chunks)
    for k in range(1, len(shape) + 1):
        if 0 in shape[:k]:
            continue
        for lead in [(5,), (3, 4), (0,)]:
            idx = np.stack([rng.integers(-n, n, lead) for n in shape[:k]], axis=-1)
            ind = idx if form == "host" else da.from_array(idx, chunks=2)
            out = og.gather_nd(data, ind)
            assert_identical(DASK.to_numpy(out), og.gather_nd(src, idx))


def test_unknown_chunks_once_computed(plan: str) -> None:
    """Unknown chunk sizes are refused (test_dask.py); once computed, each plan gives NumPy's."""
    src = np.arange(60.0).reshape(6, 10)
    data = da.from_array(src, chunks=(2, 3))
    idx = np.arange(-30, 30).reshape(6, 10) % 10
    lazy = da.from_array(idx, chunks=(2, 4))
    known = lazy[lazy[:, 0] > -1].compute_chunk_sizes()
    with pytest.raises(ValueError, match="unknown shape"):
        og.gather_elements(data, lazy[lazy[:, 0] > -1])
    assert_identical(
        DASK.to_numpy(og.gather_elements(data, known, 1)), np.take_along_axis(src, idx, 1)
    )
    pairs = known[:, :2].rechunk((4, 2))
    want = og.gather_nd(src, idx[:, :2] % 6)
    assert_identical(DASK.to_numpy(og.gather_nd(data, pairs % 6)), want)


def test_bounds_error_names_the_whole_position_on_the_by_block_plan(plan: str) -> None:
    data = da.from_array(np.arange(48.0).reshape(6, 8), chunks=(2, 3))
    idx = np.zeros((6, 5), np.int64)
    idx[5, 3] = 8
    with pytest.raises(IndexError, match=r"index 8 at position \(5, 3\) of indices"):
        og.gather_elements(data, da.from_array(idx, chunks=(2, 2)), 1).compute()
    pairs = np.zeros((7, 2), np.int64)
    pairs[6, 1] = -9
    with pytest.raises(IndexError, match=r"index -9 at position \(6, 1\) of indices"):
        og.gather_nd(data, da.from_array(pairs, chunks=2)).compute()


# --- which plan the planner chooses -----------------------------------------------------


def test_the_planner_chooses_by_the_bytes_each_plan_moves(bytes_only: None) -> None:
    """Few indices against much data: by block; many against little data: rechunk it."""
    data = da.zeros((64, 4096), chunks=(16, 512), dtype=np.float32)
    few = da.zeros((64, 8), chunks=(16, 8), dtype=np.int64)
    assert "gatherelements-route" in _kinds(og.gather_elements(data, few, axis=1))
    assert not {"rechunk-merge", "take_along_block"} & _kinds(og.gather_elements(data, few, 1))
    small = da.zeros((64, 16), chunks=(16, 4), dtype=np.float32)
    many = da.zeros((64, 4096), chunks=(16, 512), dtype=np.int64)
    chosen = _kinds(og.gather_elements(small, many, axis=1))
    assert {"rechunk-merge", "take_along_block"} <= chosen
    assert not chosen & set(BY_BLOCK)
    # Data in one block along the axis: neither moves anything; one task per block.
    whole = data.rechunk({1: -1})
    assert "take_along_block" in _kinds(og.gather_elements(whole, few, axis=1))
    pairs = da.zeros((100, 2), chunks=(50, 2), dtype=np.int64)
    assert "gather-nd-route" in _kinds(og.gather_nd(data, pairs))
    assert "gather-nd-route" not in _kinds(
        og.gather_nd(small, da.zeros((10**5, 2), dtype=np.int64))
    )


def test_the_planner_counts_tasks_too() -> None:
    """Tiny arrays in many blocks: the by-block plan's tasks cost more than moving the data."""
    data = da.zeros((64, 4096), chunks=(16, 512), dtype=np.float32)
    few = da.zeros((64, 8), chunks=(16, 8), dtype=np.int64)
    assert "gatherelements-route" not in _kinds(og.gather_elements(data, few, axis=1))
    big = da.zeros((2048, 2**16), chunks=(512, 2**14), dtype=np.float32)  # 512 MiB
    rows = da.zeros((2048, 8), chunks=(512, 8), dtype=np.int64)
    assert "gatherelements-route" in _kinds(og.gather_elements(big, rows, axis=1))


# --- local indices move no data ---------------------------------------------------------


def _local(rows: int, blocks: int, width: int, k: int) -> np.ndarray:
    """Indices whose column block j (of ``k // blocks``) all point into data column chunk j."""
    rng = np.random.default_rng(5)
    per = k // blocks
    chunk = np.repeat(np.arange(blocks) * width, per)
    return (
        chunk + rng.integers(0, width, (rows, k)) - width * blocks * rng.integers(0, 2, (rows, k))
    )


def _data_readers(out: da.Array, data: da.Array) -> dict[Any, list[Any]]:
    """For each data block: the tasks that take it as a direct input."""
    dsk = dict(out.__dask_graph__())
    readers: dict[Any, list[Any]] = {}
    for key in dsk:
        for dep in get_dependencies(dsk, key):
            if isinstance(dep, tuple) and dep[0] == data.name:
                readers.setdefault(dep, []).append(key)
    return readers


def test_host_local_indices_read_one_data_block_per_task() -> None:
    """Host indices local to one data block: one task per block on that block alone, no rechunk."""
    src = np.arange(8 * 24, dtype=np.float32).reshape(8, 24)
    data = da.from_array(src, chunks=(4, 6))
    idx = _local(8, 4, 6, 24)  # host indices are cut like data: 6 columns a block
    out = og.gather_elements(data, idx, axis=1)
    assert _kinds(out) == {"array", "gatherelements-local"}
    readers = _data_readers(out, data)
    for block, tasks in readers.items():
        assert all(t[0].startswith("gatherelements-local") for t in tasks), block
    dsk = dict(out.__dask_graph__())
    for key in dsk:
        if key[0].startswith("gatherelements-local"):
            assert sum(d[0] == data.name for d in get_dependencies(dsk, key)) == 1
    assert_identical(DASK.to_numpy(out), np.take_along_axis(src, idx, 1))


def test_dask_local_indices_move_no_data(client: Any, bytes_only: None) -> None:
    """Dask indices local to one data block: data is read only by part tasks in place; the
    parts of every other data block are empty, and no data block crosses workers."""
    src = np.arange(8 * 2400, dtype=np.float32).reshape(8, 2400)
    data = da.from_array(src, chunks=(4, 600))
    idx = _local(8, 4, 600, 8)
    lazy = da.from_array(idx, chunks=(4, 2))
    out = og.gather_elements(data, lazy, axis=1)
    assert "gatherelements-part" in _kinds(out)
    assert not {"rechunk-merge", "take_along_block"} & _kinds(out)
    for tasks in _data_readers(out, data).values():
        assert all(t[0].startswith("gatherelements-part") for t in tasks)
    dsk = dict(out.__dask_graph__())
    picks = [k for k in dsk if k[0].startswith("gatherelements-values")]
    values = dict(zip(picks, dask.get(dsk, picks), strict=True))
    for key, part in values.items():
        (source,) = get_dependencies(dsk, key)  # the part of one data block
        reads = next(d for d in get_dependencies(dsk, source) if d[0] == data.name)
        indices_block = key[1:3]
        assert (part.size > 0) == (reads[2] == indices_block[1]), (key, reads)
    # On a cluster: data is generated on the workers; only indices and values travel.
    made = data.map_blocks(np.copy)
    (placed,) = client.persist([made])
    result = og.gather_elements(placed, lazy, axis=1)
    assert_identical(client.compute(result).result(), np.take_along_axis(src, idx, 1))


def test_by_block_on_a_cluster_matches_numpy(client: Any, bytes_only: None) -> None:
    rng = np.random.default_rng(6)
    src = rng.standard_normal((40, 300)).astype(np.float32)
    data = da.from_array(src, chunks=(10, 75))
    idx = rng.integers(-300, 300, (40, 20))
    pairs = np.stack([rng.integers(-40, 40, 500), rng.integers(-300, 300, 500)], axis=-1)
    got = og.gather_elements(data, da.from_array(idx, chunks=(10, 7)), 1)
    nd = og.gather_nd(data, da.from_array(pairs, chunks=(128, 2)))
    assert "gatherelements-route" in _kinds(got)
    assert "gather-nd-route" in _kinds(nd)
    a, b = client.compute([got, nd], sync=True)
    assert_identical(a, og.gather_elements(src, idx, 1))
    assert_identical(b, og.gather_nd(src, pairs))
