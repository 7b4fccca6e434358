"""Dask only: calls stay lazy, plans read only the blocks they need, errors surface at
compute with the whole-array position, and a multi-process cluster gives NumPy's results.

The shared table (test_cases.py) already checks the values on dask; this file checks what
only a lazy, chunked library has.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import dask
import dask.array as da
import numpy as np
import pytest
from cases import CASES, Case
from dask.core import flatten, get_dependencies
from helpers import applies, assert_identical, expected, run_case
from libs import LIBS

import onnx_gather as og
from onnx_gather import openvino
from onnx_gather._ops import call

DASK = next(lib for lib in LIBS if lib.name == "dask")


@pytest.fixture
def split_axis() -> Iterator[None]:
    """A chunk-size budget so small that Gather keeps data's chunks along the axis (part/join)."""
    with dask.config.set({"array.chunk-size": "1B"}):
        yield


def _layers(out: da.Array, prefix: str) -> list[str]:
    return [n for n in out.__dask_graph__().layers if n.startswith(prefix)]


class Computed(AssertionError):
    """Raised by the forbidding scheduler."""


def _forbidden(dsk: Any, keys: Any, **kwargs: Any) -> Any:
    raise Computed("a graph was computed during the call")


# --- laziness ---------------------------------------------------------------------------


@pytest.mark.parametrize("case", [c for c in CASES if applies(DASK, c)], ids=lambda c: c.id)
def test_call_computes_nothing(case: Case) -> None:
    """Every case of the table: the call builds a graph and computes none.

    Shape, type, axis and opset errors still raise at call time; index values are only
    known at compute, so out-of-range indices raise then, with the table's message (except
    indices written as Python ints, which are checked on the host at call time).
    """
    with dask.config.set(scheduler=_forbidden):
        if case.raises is not None and (case.raises is not IndexError or case.written is not None):
            with pytest.raises(case.raises, match=case.match):
                run_case(DASK, case)
            return
        out = run_case(DASK, case)
    assert isinstance(out, da.Array)
    if case.raises is IndexError:
        with pytest.raises(IndexError, match=case.match):
            DASK.to_numpy(out)
    else:
        assert_identical(DASK.to_numpy(out), expected(case))


@pytest.mark.parametrize("form", ["numpy", "list"])
def test_call_with_host_indices_computes_nothing(form: str) -> None:
    data = da.from_array(np.arange(24.0).reshape(4, 6), chunks=(2, 4))
    idx_np = np.array([[5, -1, 0], [2, 2, -6], [1, 0, 3], [4, 4, 4]])
    idx = idx_np if form == "numpy" else idx_np.tolist()
    with dask.config.set(scheduler=_forbidden):
        gathered = og.gather(data, idx, axis=1)
        picked = og.gather_elements(data, idx, axis=1)
    assert_identical(DASK.to_numpy(gathered), np.take(np.arange(24.0).reshape(4, 6), idx_np, 1))
    assert_identical(
        DASK.to_numpy(picked), np.take_along_axis(np.arange(24.0).reshape(4, 6), idx_np, 1)
    )


def test_host_indices_are_copied_at_call_time() -> None:
    """The graph runs later; it must use the indices that were checked at the call."""
    data = da.from_array(np.arange(10, 20), chunks=3)
    idx = np.array([1, 2, 3])
    out = og.gather(data, idx)
    idx[:] = 99
    assert_identical(DASK.to_numpy(out), np.array([11, 12, 13]))


def test_host_indices_are_not_checked_twice() -> None:
    """Host indices are checked on the host; the graph counts and checks only dask indices.

    Unchecked dask indices are still counted from the end and clamped into the axis there.
    """
    data = da.from_array(np.arange(12).reshape(3, 4), chunks=2)

    def check_layers(out: da.Array) -> list[str]:
        return [n for n in out.__dask_graph__().layers if n.startswith("_counted_block")]

    assert check_layers(og.gather_elements(data, np.zeros((3, 4), np.int64))) == []
    lazy = da.zeros((3, 4), dtype=np.int64, chunks=2)
    assert len(check_layers(og.gather_elements(data, lazy))) == 1
    assert len(check_layers(og.gather_elements(data, lazy, check_bounds=False))) == 1


def test_host_indices_are_chunked_like_data() -> None:
    data = da.from_array(np.arange(54.0).reshape(6, 9), chunks=(2, 3))
    out = og.gather_elements(data, np.zeros((6, 5), np.int64), axis=1)
    assert out.chunks == ((2, 2, 2), (3, 2))


# --- bounds at compute time -------------------------------------------------------------


def _raises_at_compute(fn: Any, *args: Any, **kwargs: Any) -> str:
    out = fn(*args, **kwargs)  # lazy: no error yet
    with pytest.raises(IndexError) as info:
        out.compute(scheduler="sync")
    with pytest.raises(IndexError) as threaded:
        out.compute(scheduler="threads")
    assert str(threaded.value) == str(info.value)  # one bad entry: the same message
    return str(info.value)


def test_bounds_error_names_the_position_in_the_whole_indices(split_axis: None) -> None:
    """The bad index sits in the last block of the indices: its position is global."""
    data = da.from_array(np.arange(48.0).reshape(6, 8), chunks=(2, 3))
    idx_np = np.zeros((6, 5), np.int64)
    idx_np[5, 3] = 8
    idx = da.from_array(idx_np, chunks=(2, 2))
    msg = "index 8 at position ({}) of indices is out of range for axis 1 of size 8; valid indices are [{}, 7]"
    assert _raises_at_compute(og.gather_elements, data, idx, 1) == (
        "GatherElements-13: " + msg.format("5, 3", -8)
    )
    assert _raises_at_compute(openvino.gather_elements, data, idx, 1) == (
        "OpenVINO GatherElements-6: " + msg.format("5, 3", -8)
    )
    # Gather with 2-D indices, along a chunked axis (part/join plan) ...
    assert _layers(og.gather(data, idx, 1), "take_part")
    assert _raises_at_compute(og.gather, data, idx, 1) == "Gather-13: " + msg.format("5, 3", -8)
    # ... and along an axis data holds in one chunk.
    whole = data.rechunk({1: -1})
    assert _raises_at_compute(og.gather, whole, idx, 1) == "Gather-13: " + msg.format("5, 3", -8)


def test_bounds_error_gather_1_negative_in_a_later_block() -> None:
    """Gather-1 counts negative indices from the end; -11 on an axis of 10 is out of range."""
    data = da.from_array(np.arange(10.0), chunks=4)
    idx = da.from_array(np.array([0, 1, 2, 3, 4, -1, 6]), chunks=2)
    assert og.gather(data, idx, 0, opset=1).compute().tolist() == [0, 1, 2, 3, 4, 9, 6]
    idx = da.from_array(np.array([0, 1, 2, 3, 4, -11, 6]), chunks=2)
    assert _raises_at_compute(og.gather, data, idx, 0, opset=1) == (
        "Gather-1: index -11 at position (5,) of indices is out of range for axis 0 of size 10; "
        "valid indices are [-10, 9]"
    )


def test_bounds_error_when_the_output_is_empty() -> None:
    data = da.zeros((0, 3), chunks=2)
    idx = da.from_array(np.array([1, 3]), chunks=1)
    assert "index 3 at position (1,)" in _raises_at_compute(og.gather, data, idx, 1)


def test_unknown_chunk_sizes_are_rejected() -> None:
    x = da.from_array(np.arange(10), chunks=5)
    unknown = x[x > 3]
    with pytest.raises(
        ValueError,
        match=r"^Gather: data is a dask array of unknown shape \(nan,\) \(NaN chunk sizes, as "
        r"boolean indexing makes\), which the call must know to be planned; call "
        r"\.compute_chunk_sizes\(\) on it first",
    ):
        og.gather(unknown, [0])
    # Issue 23, item 14: the message says which input has them.
    for fn in (og.gather, og.gather_elements, og.gather_nd):
        with pytest.raises(ValueError, match=r": indices is a dask array of unknown shape"):
            fn(x, unknown.astype(np.int64))
    # Reliability round 5, item 11: each operator's own input names; data's shape is
    # unknown, not the result's.
    cache, update = da.zeros((3, 4), chunks=2), da.zeros((3, 1), chunks=2)
    with pytest.raises(ValueError, match=r"^TensorScatter: write_indices is a dask array of "
                                         r"unknown shape \(nan,\)"):  # fmt: skip
        og.tensor_scatter(cache, update, unknown.astype(np.int64), axis=1)
    rows = da.zeros((3, 4), chunks=2)
    with pytest.raises(ValueError, match=r"^TensorScatter: past_cache is a dask array of "
                                         r"unknown shape"):  # fmt: skip
        og.tensor_scatter(rows[rows[:, 0] > -1], update, [0, 0, 0], axis=1)
    with pytest.raises(ValueError, match=r"^ScatterElements: data is a dask array of unknown "
                                         r"shape \(nan,\).*compute_chunk_sizes"):  # fmt: skip
        og.scatter_elements(unknown, [0], da.ones(1, chunks=1))


# --- which blocks each output block reads -----------------------------------------------


class Recorded:
    """An array-like that records every region dask reads from it."""

    def __init__(self, values: np.ndarray) -> None:
        self.values = values
        self.shape, self.dtype, self.ndim = values.shape, values.dtype, values.ndim
        self.regions: list[tuple[slice, ...]] = []

    def __getitem__(self, key: tuple[slice, ...]) -> np.ndarray:
        self.regions.append(key)
        return self.values[key]


def _recorded(values: np.ndarray, chunks: Any) -> tuple[da.Array, Recorded]:
    source = Recorded(values)
    return da.from_array(source, chunks=chunks, meta=values[(slice(0, 0),) * values.ndim]), source


def _blocks_read(out: da.Array, data: da.Array, source: Recorded) -> dict[tuple[int, ...], set]:
    """For each output block, computed alone: the data blocks whose elements it read."""
    bounds = [np.cumsum((0, *c)) for c in data.chunks]
    result = {}
    for ix in np.ndindex(*out.numblocks):
        source.regions.clear()
        out.blocks[ix].compute(scheduler="sync")
        blocks: set[tuple[int, ...]] = set()
        for region in source.regions:
            spans = []
            for r, b, n in zip(region, bounds, data.shape, strict=True):
                start, stop, _ = r.indices(n)
                first = int(np.searchsorted(b, start, side="right")) - 1
                spans.append(range(first, int(np.searchsorted(b, stop, side="left"))))
            blocks.update(itertools.product(*spans))  # empty reads (dask's meta) add nothing
        result[ix] = blocks
    return result


def _max_data_blocks_per_task(out: da.Array, data: da.Array) -> int:
    """The most data blocks any task of the graph takes as direct inputs."""
    dsk = dict(out.__dask_graph__())
    return max(
        sum(1 for dep in get_dependencies(dsk, k) if dep[0] == data.name)
        for k in dsk
        if k[0] != data.name
    )


def test_gather_elements_reads_only_the_matching_off_axis_blocks() -> None:
    data, source = _recorded(np.arange(54.0).reshape(6, 9), (2, 3))  # 3 x 3 blocks
    idx = da.from_array(np.zeros((6, 10), np.int64), chunks=(3, 4))
    reads = _blocks_read(og.gather_elements(data, idx, axis=1), data, source)
    assert len(reads) == 3 * 3
    for (i, _), blocks in reads.items():
        assert blocks == {(i, c) for c in range(3)}  # the full axis of row block i, no more
    # Along axis 0 it is the column blocks.
    idx0 = da.from_array(np.zeros((4, 9), np.int64), chunks=(4, 2))
    for (_, j), blocks in _blocks_read(
        og.gather_elements(data, idx0, axis=0), data, source
    ).items():
        assert blocks == {(c, j) for c in range(3)}


def test_gather_elements_with_smaller_indices_never_reads_the_rest() -> None:
    """Indices smaller than data off the axis (plan.trim): blocks beyond them stay unread."""
    data, source = _recorded(np.arange(54.0).reshape(6, 9), (2, 3))
    idx = da.from_array(np.zeros((3, 4), np.int64), chunks=1)
    reads = _blocks_read(og.gather_elements(data, idx, axis=1), data, source)
    assert set().union(*reads.values()) == {(i, c) for i in (0, 1) for c in range(3)}
    for (i, _), blocks in reads.items():
        assert blocks == {(i, c) for c in range(3)}  # output blocks: rows 0-1, then row 2


def test_gather_elements_rank_3_middle_axis() -> None:
    src = np.arange(4 * 6 * 6).reshape(4, 6, 6)
    data, source = _recorded(src, (2, 3, 2))
    idx_np = np.random.default_rng(1).integers(-6, 6, (3, 7, 5))
    out = og.gather_elements(data, da.from_array(idx_np, chunks=(2, 3, 2)), axis=1)
    for (i, _, k), blocks in _blocks_read(out, data, source).items():
        assert blocks == {(i, c, k) for c in range(2)}
    assert_identical(DASK.to_numpy(out), np.take_along_axis(src[:3, :, :5], idx_np, axis=1))


def test_gather_along_a_chunked_axis_holds_one_data_block_per_task(split_axis: None) -> None:
    """Data chunked along the axis beyond the budget: each task takes one data block."""
    src = np.arange(48.0).reshape(6, 8)
    data, source = _recorded(src, (2, 3))
    idx_np = np.array([[7, -8, 3], [0, 0, 5]])
    out = og.gather(data, da.from_array(idx_np, chunks=1), axis=1)
    assert _max_data_blocks_per_task(out, data) == 1
    for (i, *_), blocks in _blocks_read(out, data, source).items():
        assert blocks == {(i, c) for c in range(3)}
    assert_identical(DASK.to_numpy(out), np.take(src, idx_np, axis=1))


def test_gather_along_an_unchunked_axis_is_one_task_per_block() -> None:
    src = np.arange(48.0).reshape(6, 8)
    data, source = _recorded(src, (2, 8))
    out = og.gather(data, da.from_array(np.array([[7, -8, 3]]), chunks=(1, 2)), axis=1)
    assert _max_data_blocks_per_task(out, data) == 1
    for (i, *_), blocks in _blocks_read(out, data, source).items():
        assert blocks == {(i, 0)}


@pytest.mark.parametrize("chunks", [(1, 2), (1, 1)], ids=["one-chunk-axis", "chunked-axis"])
def test_many_more_output_blocks_than_input_blocks(
    chunks: tuple[int, int], split_axis: None
) -> None:
    """Gather's output is an outer product of blocks; dask must not warn about it."""
    src = np.arange(20).reshape(10, 2)
    data = da.from_array(src, chunks=chunks)
    idx = da.from_array(np.array([1, 0, -1, 1, 0, 0, 1, 1, -2, 0]), chunks=1)
    out = og.gather(data, idx, axis=1)  # warnings are errors in this suite
    # The largest blockwise step (one block per data chunk along the axis and output block)
    # is at dask's warning threshold: ten times the blocks of the largest input.
    assert out.npartitions * data.numblocks[1] >= 10 * max(data.npartitions, idx.npartitions)
    assert_identical(DASK.to_numpy(out), np.take(src, idx.compute(), axis=1))


def test_gather_merges_chunks_along_the_axis_within_the_budget() -> None:
    """Small chunks along the axis are merged (one task per output block), never split."""
    src = np.arange(48.0).reshape(6, 8)
    idx = da.from_array(np.array([7, -8, 3]), chunks=1)
    data = da.from_array(src, chunks=(2, 3))
    out = og.gather(data, idx, axis=1)
    assert not _layers(out, "take_part")
    assert _layers(out, "take_block")
    assert_identical(DASK.to_numpy(out), np.take(src, [7, -8, 3], axis=1))
    # 2 rows x 8 bytes = 16 bytes per column of a block: a budget of 5 columns merges the
    # 3-column chunks into chunks of 5, which still needs parts.
    with dask.config.set({"array.chunk-size": "80B"}):
        merged = og.gather(data, idx, axis=1)
        assert _layers(merged, "take_part")
        assert _layers(merged, "rechunk")
        assert_identical(DASK.to_numpy(merged), np.take(src, [7, -8, 3], axis=1))
    with dask.config.set({"array.chunk-size": "32B"}):  # 2 columns: smaller than the chunks
        kept = og.gather(data, idx, axis=1)
        assert not _layers(kept, "rechunk")


@pytest.mark.usefixtures("split_axis")
@pytest.mark.parametrize(
    "case",
    [c for c in CASES if applies(DASK, c) and c.op == "gather" and c.raises in (None, IndexError)],
    ids=lambda c: c.id,
)
def test_case_table_on_the_part_join_plan(case: Case) -> None:
    """Every Gather case of the table, with data kept in chunks of 2 along the axis."""
    if case.raises is not None:
        with pytest.raises(IndexError, match=case.match):
            DASK.to_numpy(run_case(DASK, case))
        return
    assert_identical(DASK.to_numpy(run_case(DASK, case)), expected(case))


# --- dtypes and aliasing ----------------------------------------------------------------


@pytest.mark.parametrize("op", ["gather", "gather_elements", "openvino.gather_elements"])
def test_no_output_block_aliases_an_input_block(op: str) -> None:
    """Run the raw graph (no compute() copies): no output block is a view of an input block.

    dask's compute() copies results anyway (dask/dask#11697), so this looks at the blocks
    themselves; a kernel returning a view (e.g. of a one-block identity gather) would fail.
    """
    src = np.arange(12.0).reshape(3, 4)
    data = da.from_array(src, chunks=src.shape)
    idx = da.from_array(np.array([[0, 1, 2, 3]] * 3), chunks=(3, 4))
    out = call(op, data, idx, axis=1)
    dsk = dict(out.__dask_graph__())
    inputs = [dsk[(x.name, 0, 0)] for x in (data, idx)]  # from_array's single blocks
    assert all(isinstance(x, np.ndarray) for x in inputs)
    (block,) = dask.get(dsk, list(flatten(out.__dask_keys__())))
    assert isinstance(block, np.ndarray)
    assert block.shape == out.shape
    assert not any(np.shares_memory(block, x) for x in inputs)


# --- a real cluster ---------------------------------------------------------------------


def test_distributed_cluster_matches_numpy(client: Any) -> None:
    rng = np.random.default_rng(6)
    src = rng.standard_normal((40, 30))
    strings = np.array([f"s{i}" for i in range(40 * 30)], dtype=object).reshape(40, 30)
    idx_e = rng.integers(-30, 30, (35, 45))
    idx_g = rng.integers(-30, 30, (4, 6))
    idx_o = rng.integers(0, 30, (40, 12))
    for values in (src, strings):
        data = da.from_array(values, chunks=(8, 7))
        results = client.compute(
            [
                og.gather_elements(data, da.from_array(idx_e, chunks=(9, 10)), axis=1),
                og.gather(data, da.from_array(idx_g, chunks=(2, 3)), axis=1),
                og.gather(data.rechunk({1: -1}), idx_g, axis=1),
                openvino.gather_elements(data, idx_o, axis=1),
            ],
            sync=True,
        )
        assert len(client.scheduler_info()["workers"]) == 2
        want = [
            np.take_along_axis(values[:35], idx_e, axis=1),
            np.take(values, idx_g, axis=1),
            np.take(values, idx_g, axis=1),
            np.take_along_axis(values, idx_o, axis=1),
        ]
        for got, ref in zip(results, want, strict=True):
            assert_identical(np.asarray(got), ref)


def test_distributed_bounds_error(client: Any) -> None:
    data = da.from_array(np.arange(60.0).reshape(6, 10), chunks=(2, 4))
    idx_np = np.zeros((6, 10), np.int64)
    idx_np[4, 9] = -11
    out = og.gather_elements(data, da.from_array(idx_np, chunks=3), axis=1)
    with pytest.raises(IndexError) as info:
        client.compute(out, sync=True)
    assert str(info.value) == (
        "GatherElements-13: index -11 at position (4, 9) of indices is out of range for "
        "axis 1 of size 10; valid indices are [-10, 9]"
    )


def test_reading_back_refuses_blocks_unlike_the_declared_ones() -> None:
    # A graph whose blocks differ from its declared chunks would pass a plain compute().
    lying = da.from_array(np.arange(4), chunks=2).map_blocks(lambda b: b[:1], dtype=int)
    with pytest.raises(AssertionError, match=r"dask: a block is \(1,\) int64, declared \(2,\)"):
        DASK.to_numpy(lying)


# --- GatherND ---------------------------------------------------------------------------


def _nd_oracle(data: np.ndarray, indices: np.ndarray, batch_dims: int) -> np.ndarray:
    from onnx_gather._conformance.oracle import gather_nd

    return gather_nd(data, indices, batch_dims)


@pytest.mark.parametrize("budget", ["128MiB", "1B"], ids=["merged", "part-join"])
@pytest.mark.parametrize(("k", "form"), [(1, "dask"), (2, "dask"), (3, "numpy"), (2, "list")])
def test_gather_nd_without_batch_dims_is_a_gather_of_linear_positions(
    budget: str, k: int, form: str
) -> None:
    """Data chunked along every dim; lazy; within the budget, or one data block per task."""
    src = np.arange(4 * 6 * 5, dtype=np.float32).reshape(4, 6, 5)
    data, _ = _recorded(src, (2, 3, 2))
    rng = np.random.default_rng(k)
    idx_np = np.stack([rng.integers(-n, n, (7, 3)) for n in src.shape[:k]], -1)
    idx = {
        "dask": da.from_array(idx_np, chunks=(3, 2, k)),
        "numpy": idx_np,
        "list": idx_np.tolist(),
    }[form]
    with dask.config.set({"array.chunk-size": budget}):
        with dask.config.set(scheduler=_forbidden):
            out = og.gather_nd(data, idx)
        assert_identical(DASK.to_numpy(out), _nd_oracle(src, idx_np, 0))
        if budget == "1B":
            assert _max_data_blocks_per_task(out, data) <= 1


@pytest.mark.parametrize("form", ["dask", "numpy"])
def test_gather_nd_batch_dims_read_their_own_batch_blocks(form: str) -> None:
    """batch_dims=1: each task reads the data blocks of its own batch rows, whole addressed dims."""
    src = np.arange(6 * 8 * 3, dtype=np.int32).reshape(6, 8, 3)
    data, source = _recorded(src, (2, 4, 3))  # 3 batch blocks x 2 blocks along the addressed dim
    idx_np = np.random.default_rng(2).integers(-8, 8, (6, 5, 1))
    idx = da.from_array(idx_np, chunks=(3, 5, 1)) if form == "dask" else idx_np
    with dask.config.set(scheduler=_forbidden):
        out = og.gather_nd(data, idx, batch_dims=1)
    assert_identical(DASK.to_numpy(out), _nd_oracle(src, idx_np, 1))
    for (i, *_), blocks in _blocks_read(out, data, source).items():
        assert {block[0] for block in blocks} == {i}  # its batch rows, none of the others
        assert {block[1] for block in blocks} == {0, 1}  # the whole addressed dim


def test_gather_nd_error_names_the_position_in_the_whole_indices() -> None:
    src = np.arange(24.0).reshape(4, 6)
    idx_np = np.array([[0, 1], [3, -6], [1, 1], [2, 6], [0, 0]])
    idx = da.from_array(idx_np, chunks=(2, 1))  # blocks of one coordinate: made whole tuples
    out = og.gather_nd(da.from_array(src, chunks=2), idx)
    with pytest.raises(
        IndexError,
        match=r"GatherND-13: index 6 at position \(3, 1\) of indices is out of range for axis 1 of size 6",
    ):
        out.compute()


def test_gather_nd_on_an_empty_axis_checks_at_compute() -> None:
    data = da.zeros((3, 0, 2), chunks=1)
    with dask.config.set(scheduler=_forbidden):
        checked = og.gather_nd(data, da.from_array(np.array([[1, 0]]), chunks=1))
        unchecked = og.gather_nd(data, np.array([[1, 0]]), check_bounds=False)
    with pytest.raises(IndexError, match=r"index 0 at position \(0, 1\) .* the axis is empty"):
        checked.compute()
    assert_identical(DASK.to_numpy(unchecked), np.zeros((1, 2)))
