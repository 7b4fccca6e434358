"""The scatters on Dask: lazy, each output block its data block plus the updates aimed at it.

Both operators are written as index tuples: a ScatterElements update addresses one
element (its position in ``indices`` with the axis' coordinate replaced by its index: a
tuple of ``r`` coordinates), a ScatterND update the slice of data's trailing dims that its
``k`` coordinates address. The graph has three kinds of task:

* *targets*, one per indices block: its tuples counted from the end and checked (an
  IndexError naming the position in the whole ``indices``, raised when the graph runs),
  or, unchecked, those out of range dropped; with each update's position in C order of
  ``indices``;
* *parts*, one per indices block and output block: the updates of that indices block
  aimed at that output block, their values cut to its trailing extent (ScatterND);
* *joins*, one per output block (data's chunks): a copy of the data block, and the parts
  aimed at it applied in C order of their positions by the NumPy kernels' write
  (:func:`onnx_gather._backends._numpy._scatter.write`), so duplicates and reductions
  give the same bits as every backend.

A task holds one indices block and its updates (targets, parts), or one data block and
the updates aimed at it (joins); there is a part per indices block and output block it
can reach: every output block for ScatterND, those whose extent off the axis overlaps the
indices block's for ScatterElements. The
indices of ScatterND are whole along their last dim and its updates along data's
trailing dims.
"""

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
from onnx_gather._backends._numpy._scatter import result_dtype, write
from onnx_gather._host import checked
from onnx_gather._indices import DROP, counted

if TYPE_CHECKING:
    from onnx_gather._spec import Plan


def scatter(data: da.Array, indices: Any, updates: da.Array, plan: Any) -> da.Array:
    """ScatterElements or ScatterND of dask arrays (``plan`` says which): a lazy result."""
    wide = result_dtype(data.dtype, updates.dtype)  # (strings: every update whole)
    if wide != data.dtype:
        data = data.astype(wide)
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
    out_blocks = list(itertools.product(*map(range, data.numblocks)))
    data_starts = [tuple(accumulate(c, initial=0)) for c in data.chunks]
    shape = tuple(int(n) for n in data.shape)
    # ScatterElements: an update lands at its own position off the axis, so an indices
    # block meets only the output blocks whose extent off the axis overlaps its own.
    off_axis = () if nd else tuple(d for d in range(data.ndim) if d != plan.axis)
    parts: dict[tuple[int, ...], list[Any]] = {bo: [] for bo in out_blocks}
    for bi in itertools.product(*map(range, indices.numblocks)):
        offset = tuple(starts[d][b] for d, b in enumerate(bi))
        graph[(name + "-targets", *bi)] = (
            _targets, (indices.name, *bi), offset, tuple(indices.shape), plan, shape, k
        )  # fmt: skip
        ub = bi[:-1] + (0,) * (updates.ndim - len(bi) + 1) if nd else bi
        for bo in out_blocks:
            if any(
                starts[d][bi[d] + 1] <= data_starts[d][bo[d]]
                or data_starts[d][bo[d] + 1] <= starts[d][bi[d]]
                for d in off_axis
            ):
                continue
            box = tuple((data_starts[d][b], data_starts[d][b + 1]) for d, b in enumerate(bo))
            graph[(name + "-part", *bi, *bo)] = (
                _part, (name + "-targets", *bi), (updates.name, *ub), box, k
            )  # fmt: skip
            parts[bo].append((name + "-part", *bi, *bo))
    for bo in out_blocks:
        graph[(name, *bo)] = (_join, (data.name, *bo), parts[bo], k, plan.reduction)
    hlg = HighLevelGraph.from_collections(name, graph, dependencies=[data, indices, updates])
    return da.Array(hlg, name, chunks=data.chunks, dtype=data.dtype, meta=data._meta)


def _targets(
    block: np.ndarray,
    offset: tuple[int, ...],
    whole: tuple[int, ...],
    plan: Plan,
    shape: tuple[int, ...],
    k: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One indices block's updates: C-order positions, which update of the block, tuples.

    Checked (the IndexError names the position in the whole ``indices``) or, unchecked,
    without the updates out of range. Tuples are ``(m, k)`` coordinates into data.
    """
    if plan.check_bounds:
        try:
            counted_block = checked(plan, block)
        except IndexError:
            _spec.raise_out_of_range(plan, block, offset)
            raise
        keep = None
    else:
        counted_block, keep = counted(_xp, block, plan, DROP)
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
    local = np.arange(m)
    if keep is not None:
        kept = np.asarray(keep).reshape(-1)
        position, local, coords = position[kept], local[kept], coords[kept]
    return position, local, coords


def _part(
    targets: tuple[np.ndarray, np.ndarray, np.ndarray],
    updates: np.ndarray,
    box: tuple[tuple[int, int], ...],
    k: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The updates aimed at one output block: positions, rows in the block, values."""
    position, local, coords = targets
    trailing = len(box) - k  # ScatterND's slice dims (0: one element per update)
    split = updates.ndim - trailing
    values = updates.reshape((math.prod(updates.shape[:split]), *updates.shape[split:]))[local]
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
    reduction: str,
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
