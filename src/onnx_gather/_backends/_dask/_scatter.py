"""The scatters on Dask: lazy, each output block its data block plus the updates aimed at it."""

from __future__ import annotations

import itertools
import math
from itertools import accumulate
from typing import TYPE_CHECKING, Any

import array_api_compat.numpy as _xp  # NumPy before 2.1 has no np.astype
import dask.array as da
import numpy as np
from dask.base import tokenize
from dask.highlevelgraph import HighLevelGraph

from onnx_gather import _spec
from onnx_gather._backends._dask._scatter_blocks import scatter as by_block
from onnx_gather._backends._numpy._scatter import result_dtype, write
from onnx_gather._host import counted_on_host
from onnx_gather._indices import BoundsPolicy, counted

if TYPE_CHECKING:
    from onnx_gather._spec import Plan
    from onnx_gather._spec.reductions import Reduction
    from onnx_gather._typing import Array, ScatterPlan

#: One indices block's updates: C-order positions, ``(m, k)`` coordinates into data, values
#: (``m`` updates, each of the trailing dims' shape), and the row block each lands in.
Records = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]


def scatter(data: da.Array, indices: Array, updates: da.Array, plan: ScatterPlan) -> da.Array:
    """ScatterElements or ScatterND of dask arrays (``plan`` says which): a lazy result.

    Both operators are written as index tuples: a ScatterElements update addresses one
    element (its position in ``indices`` with the axis' coordinate replaced by its index:
    a tuple of ``r`` coordinates), a ScatterND update the slice of data's trailing dims
    that its ``k`` coordinates address (its indices whole along their last dim, its
    updates along data's trailing dims). Where an update lands is known only when its
    indices block is computed: :func:`_records` lists each block's updates, then the
    graph moves them to their output blocks by :func:`_parts` or :func:`_shuffle`,
    whichever makes fewer tasks, and a join per output block applies them.
    """
    if plan.reduction == "add" and data.dtype.kind in "US":
        # (NumPy widens the result to the longest string made; a Dask array's dtype is
        # fixed before anything is computed)
        msg = (
            f"{plan.op}: reduction 'add' concatenates strings, which fixed-width {data.dtype} "
            f"data cannot hold before Dask computes them: pass data and updates as object "
            f"arrays (.astype(object))"
        )
        raise TypeError(msg)
    wide = result_dtype(data.dtype, updates.dtype)  # (strings: every update whole)
    if wide != data.dtype:
        data = data.astype(wide)
    blocked = by_block(data, indices, updates, plan)
    if blocked is not None:
        return blocked
    nd = plan.coordinates
    k = len(plan.sizes) if nd else data.ndim
    if nd:
        lead = updates.ndim - (data.ndim - k)  # indices.ndim - 1
        updates = updates.rechunk({d: -1 for d in range(lead, updates.ndim)})
        whole = (*updates.chunks[:lead], (k,))
        indices = (
            da.from_array(indices, chunks=whole)
            if isinstance(indices, np.ndarray)
            else indices.rechunk(whole)
        )
    elif isinstance(indices, np.ndarray):
        indices = da.from_array(indices, chunks=updates.chunks)
    else:
        updates = updates.rechunk(indices.chunks)
    name = "onnx-gather-" + plan.op.lower() + "-" + tokenize(data, indices, updates, plan)
    graph: dict[Any, Any] = {}
    starts = [tuple(accumulate(c, initial=0)) for c in indices.chunks]
    data_starts = [tuple(accumulate(c, initial=0)) for c in data.chunks]
    shape = tuple(int(n) for n in data.shape)
    in_blocks = list(itertools.product(*map(range, indices.numblocks)))
    for bi in in_blocks:
        offset = tuple(starts[d][b] for d, b in enumerate(bi))
        ub = bi[:-1] + (0,) * (updates.ndim - len(bi) + 1) if nd else bi
        graph[(name + "-records", *bi)] = (
            _records, (indices.name, *bi), (updates.name, *ub), offset, tuple(indices.shape),
            plan, shape, k, tuple(data_starts[:k]),
        )  # fmt: skip
    nd_reach = None if nd else _reach(plan.axis, indices.numblocks, starts, data, data_starts)
    stages = _stages(len(in_blocks), math.prod(data.numblocks[:k]))
    n_parts = (
        len(in_blocks) * math.prod(data.numblocks)
        if nd_reach is None  # (ScatterND: every indices block reaches every output block)
        else math.prod(sum(map(len, per_block)) for per_block in nd_reach)
    )
    if n_parts <= sum(map(len, stages)):
        _parts(graph, name, data, in_blocks, nd_reach, data_starts, k, plan.reduction)
    else:
        _shuffle(graph, name, data, in_blocks, stages, data_starts, k, plan.reduction)
    hlg = HighLevelGraph.from_collections(name, graph, dependencies=[data, indices, updates])
    return da.Array(hlg, name, chunks=data.chunks, dtype=data.dtype, meta=data._meta)


def _reach(
    axis: int,
    numblocks: tuple[int, ...],
    starts: list[tuple[int, ...]],
    data: da.Array,
    data_starts: list[tuple[int, ...]],
) -> list[list[list[int]]]:
    """ScatterElements: per dim, per indices block along it, the data blocks it can reach.

    An update lands at its own position off the axis: only the blocks whose extent off
    the axis overlaps the indices block's; along the axis, every block.
    """
    return [
        [list(range(data.numblocks[d]))] * numblocks[d]
        if d == axis
        else [
            [
                bo
                for bo in range(data.numblocks[d])
                if data_starts[d][bo] < starts[d][bi + 1] and starts[d][bi] < data_starts[d][bo + 1]
            ]
            for bi in range(numblocks[d])
        ]
        for d in range(data.ndim)
    ]


def _parts(
    graph: dict[Any, Any],
    name: str,
    data: da.Array,
    in_blocks: list[tuple[int, ...]],
    reach: list[list[list[int]]] | None,
    data_starts: list[tuple[int, ...]],
    k: int,
    reduction: Reduction,
) -> None:
    """A part per indices block and output block it reaches; a join per output block.

    ``reach``: :func:`_reach`'s lists; None: every output block (ScatterND). A part holds
    the updates of that indices block aimed at that output block. Few blocks, or indices
    that can reach few output blocks, make few parts; but every pair of ``n`` blocks makes
    ``n * n``. The join (:func:`_join`): a copy of the data block, and the updates aimed
    at it applied in C order of their positions by the NumPy kernels' write
    (:func:`onnx_gather._backends._numpy._scatter.write`), so duplicates and reductions
    give the same bits as every backend.
    """
    out_blocks = list(itertools.product(*map(range, data.numblocks)))
    parts: dict[tuple[int, ...], list[Any]] = {bo: [] for bo in out_blocks}
    for bi in in_blocks:
        targets = (
            out_blocks
            if reach is None
            else itertools.product(*(reach[d][b] for d, b in enumerate(bi)))
        )
        for bo in targets:
            box = tuple((data_starts[d][b], data_starts[d][b + 1]) for d, b in enumerate(bo))
            graph[(name + "-part", *bi, *bo)] = (_part, (name + "-records", *bi), box, k)
            parts[bo].append((name + "-part", *bi, *bo))
    for bo in out_blocks:
        graph[(name, *bo)] = (_join, (data.name, *bo), parts[bo], k, reduction)


def _radix(n: int) -> int:
    """The shuffle's radix for ``n`` partitions: the smallest ``R >= 2`` with ``R * R >= n``."""
    return max(2, math.isqrt(max(n - 1, 0)) + 1)


def _stages(n_in: int, n_rows: int) -> list[list[int]]:
    """The partitions of each stage of the shuffle (:func:`_shuffle`).

    Partition ``p`` after stage ``s`` holds updates of the indices blocks ``j`` whose
    digits above ``s`` equal ``p``'s, aimed at the row blocks ``t`` whose digits up to
    ``s`` equal ``p``'s: it exists where some such ``j`` and ``t`` do.
    """
    n = max(n_in, n_rows)
    if n <= 1:
        return []
    radix = _radix(n)
    digits = 1 if n <= radix else 2
    layers = []
    for s in range(digits):
        low = radix ** (s + 1)
        layers.append([p for p in range(radix**digits) if p - p % low < n_in and p % low < n_rows])
    return layers


def _shuffle(
    graph: dict[Any, Any],
    name: str,
    data: da.Array,
    in_blocks: list[tuple[int, ...]],
    stages: list[list[int]],
    data_starts: list[tuple[int, ...]],
    k: int,
    reduction: Reduction,
) -> None:
    """Route tasks moving the records to their row blocks; a join per output block.

    A shuffle by row block (the block of data's first ``k`` dims an update lands in), in
    two stages of radix ``R``: ``N`` = the indices blocks or the row blocks, whichever are
    more, ``R`` = the smallest radix with ``R * R >= N``, partitions numbered by two
    base-``R`` digits; stage ``s`` has a *route* task per partition ``p``, which takes the
    updates of the ``R`` partitions of the stage before that differ from ``p`` in digit
    ``s`` only, and keeps those whose row block has ``p``'s digit ``s``. After the last
    stage partition ``p`` holds exactly the updates aimed at row block ``p``. At most
    ``2 * R * R`` (about ``2 * N``) tasks, so the graph grows linearly in the blocks
    (partitions no update can reach, or none can leave, are left out); each task holds
    about one partition's updates and each update is routed twice (a routing known only
    at compute needs such stages: a task that took every indices block's updates would
    hold them all). The joins as :func:`_parts`'.
    """
    previous: dict[int, tuple[Any, ...]] = {
        j: (name + "-records", *bi) for j, bi in enumerate(in_blocks)
    }
    radix = _radix(max(len(in_blocks), math.prod(data.numblocks[:k])))
    for s, layer in enumerate(stages):
        current: dict[int, tuple[Any, ...]] = {}
        unit = radix**s
        for p in layer:
            digit = (p // unit) % radix
            base = p - digit * unit
            sources = [previous[q] for q in range(base, base + radix * unit, unit) if q in previous]
            current[p] = (name + "-route", s, p)
            graph[current[p]] = (_route, unit, radix, digit, *sources)
        previous = current
    rows = tuple(data.numblocks[:k])
    for bo in itertools.product(*map(range, data.numblocks)):
        box = tuple((data_starts[d][b], data_starts[d][b + 1]) for d, b in enumerate(bo))
        source = previous[int(np.ravel_multi_index(bo[:k], rows))]
        graph[(name, *bo)] = (_join_routed, (data.name, *bo), source, box, k, reduction)


def _records(
    block: np.ndarray,
    updates: np.ndarray,
    offset: tuple[int, ...],
    whole: tuple[int, ...],
    plan: Plan,
    shape: tuple[int, ...],
    k: int,
    row_starts: tuple[tuple[int, ...], ...],
) -> Records:
    """One indices block's updates (:data:`Records`), checked or without those dropped.

    Its tuples counted from the end and checked, or, unchecked, those out of range
    dropped; each update with its position in C order of ``indices``, its values, and its
    row block (the block of data's first ``k`` dims it lands in).

    Checked, the IndexError names the position in the whole ``indices``.
    """
    if plan.check_bounds:
        try:
            counted_block = counted_on_host(plan, block)
        except IndexError:
            _spec.raise_out_of_range(plan, block, offset)
            raise
        keep = None
    else:
        counted_block, keep = counted(_xp, block, plan, BoundsPolicy.DROP)
    lead = block.shape[:-1] if plan.coordinates else block.shape
    m = math.prod(lead)
    grid = np.indices(lead).reshape(len(lead), m) + np.array(offset[: len(lead)]).reshape(-1, 1)
    position = np.ravel_multi_index(tuple(grid), whole[: len(lead)]) if m else np.zeros(0)
    position = np.asarray(position, np.int64).reshape(-1)  # (one tuple: 0-d)
    if plan.coordinates:
        coords = np.asarray(counted_block, np.int64).reshape(m, k)
    else:
        coords = grid.T.astype(np.int64)  # the update's own place, its axis' coordinate...
        coords[:, plan.axis] = np.asarray(counted_block).reshape(-1)  # ...its index
    split = updates.ndim - (len(shape) - k)  # (ScatterND: the slice dims follow)
    values = updates.reshape((m, *updates.shape[split:]))
    if keep is not None:
        kept = np.asarray(keep).reshape(-1)
        position, coords, values = position[kept], coords[kept], values[kept]
    row = np.zeros(len(position), np.int64)
    for d, bounds in enumerate(row_starts):  # (the block holding each coordinate)
        within = np.searchsorted(np.asarray(bounds), coords[:, d], side="right") - 1
        row = row * (len(bounds) - 1) + within
    return position, coords, values, row


def _route(unit: int, radix: int, digit: int, *sources: Records) -> Records:
    """The records of ``sources`` whose row block's digit at ``unit`` (base ``radix``) is ``digit``."""
    merged = (
        sources[0]
        if len(sources) == 1
        else tuple(np.concatenate(field) for field in zip(*sources, strict=True))
    )
    keep = (merged[3] // unit) % radix == digit
    position, coords, values, row = merged
    return position[keep], coords[keep], values[keep], row[keep]


def _join_routed(
    block: np.ndarray,
    records: Records,
    box: tuple[tuple[int, int], ...],
    k: int,
    reduction: Reduction,
) -> np.ndarray:
    """:func:`_join` of the updates a shuffle brought to this block's row block."""
    return _join(block, [_part(records, box, k)], k, reduction)


def _part(
    records: Records,
    box: tuple[tuple[int, int], ...],
    k: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The updates aimed at one output block: positions, rows in the block, values."""
    position, coords, values, _ = records
    trailing = len(box) - k  # ScatterND's slice dims (0: one element per update)
    lo = np.array([a for a, _ in box[:k]], np.int64)
    hi = np.array([b for _, b in box[:k]], np.int64)
    inside = np.all((coords >= lo) & (coords < hi), axis=1)
    rows = np.ravel_multi_index(tuple((coords[inside] - lo).T), tuple(hi - lo))
    values = values[inside]
    if trailing:
        cut = tuple(slice(a, b) for a, b in box[k:])
        width = math.prod(b - a for a, b in box[k:])
        values = values[(slice(None), *cut)].reshape(values.shape[0], width)
    return position[inside], np.asarray(rows, np.int64).reshape(-1), values


def _join(
    block: np.ndarray,
    parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]],
    k: int,
    reduction: Reduction,
) -> np.ndarray:
    """The data block with the updates aimed at it applied in C order of their positions."""
    out = np.array(block, copy=True, order="C")
    if not parts:  # (no indices block reaches this block)
        return out
    position = np.concatenate([p[0] for p in parts])
    if not position.size:
        return out
    order = np.argsort(position, kind="stable")
    rows = np.concatenate([p[1] for p in parts])[order]
    values = np.concatenate([p[2] for p in parts])[order]
    width = math.prod(out.shape[k:])
    target = out.reshape(math.prod(out.shape[:k]), width) if k < out.ndim else out.reshape(-1)
    write(target, rows, values, None, reduction)
    return out
