"""Dask: both operators as lazy, chunk-aware block plans; a call computes nothing.

The result is a dask array whose graph reads, for each output block, only the data
blocks that block can need. Notation: ``a`` is the axis, ``s = data.shape[a]``, and a
data block's *off-axis block* is its position in every dimension but ``a``. NumPy's
kernels run inside the tasks, so every dtype NumPy holds (strings, bfloat16) moves
bit-exactly.

Gather
    An output block is (data's off-axis block before ``a``, one indices block, data's
    off-axis block after ``a``).

    * Data in one chunk along ``a``: one task per output block, ``np.take`` of that data
      block with that indices block. Memory per task: one data block, one indices block
      and the output block.
    * Data in ``n`` chunks along ``a``: for each data block and each indices block a *part*
      task takes the entries whose index falls in that data chunk (memory: one data block,
      one indices block and the part, which is at most the output block); one *join* task
      per output block puts the ``n`` parts in their places (memory: the parts plus the
      output block, about twice the output block). No task holds more than one data block.

    That is ``n`` times as many tasks, so data chunked along ``a`` is first merged along
    ``a`` (never split) into chunks as long as dask's ``array.chunk-size`` allows (128 MiB
    by default, counted for data's largest off-axis chunk): when the whole axis fits, that
    is one chunk and the first plan runs.

GatherElements
    Data is cut to the indices' extent off the axis (``plan.trim``) and rechunked to one
    chunk along ``a`` (nothing to do if it already is); the indices are rechunked off the
    axis to data's chunks, keeping theirs along ``a``. One task per indices block runs
    ``np.take_along_axis`` on the full-axis data block of the matching off-axis block.
    Memory per task: that full-axis data block (the product of data's off-axis chunk sizes
    times ``s`` times the item size), plus the indices block and the output block; a rechunk
    task needs about the same. If a full-axis block is too large for a worker, chunk data
    finer off the axis before the call. dask has no ``take_along_axis`` (dask/dask#3663).

Bounds
    Index values of a dask array are unknown until compute, so each indices block is
    range-checked in its own task when the graph runs: an out-of-range index raises the
    same IndexError as every backend, built by :func:`onnx_gather._spec.check_range` with
    the block's offset, so the message gives the position in the whole ``indices``. If
    several blocks hold bad indices, the one named is from whichever block the scheduler
    runs first. Host indices (NumPy, lists) are checked at the call, before they become a
    dask array. Negative indices are counted from the end inside the tasks; without the
    check an out-of-range index is clamped into the axis.

Data with unknown chunk sizes (NaN, e.g. after boolean indexing) is rejected with a
ValueError: the output's shape could not be known.
"""

from __future__ import annotations

from itertools import accumulate
from math import prod
from typing import TYPE_CHECKING, Any

import dask
import dask.array as da
import numpy as np
from dask.array.core import normalize_chunks
from dask.array.utils import meta_from_array
from dask.utils import parse_bytes

from onnx_gather import _spec
from onnx_gather._backends import _numpy as numpy_kernels
from onnx_gather._dtypes import numpy_dtype_name
from onnx_gather._host import checked

if TYPE_CHECKING:
    from onnx_gather._spec import Plan


def _counted_block(block: np.ndarray, plan: Plan, block_info: Any = None) -> np.ndarray:
    """One indices block counted from the end and checked (or clamped), as int64 if changed.

    The IndexError names the position in the whole ``indices`` (the block's offset).
    """
    offset = [start for start, _ in block_info[0]["array-location"]]
    try:
        return checked(plan, block)
    except IndexError:
        _spec.raise_out_of_range(plan, block, offset)
        raise


def _owner(flat: np.ndarray, stops: tuple[int, ...]) -> np.ndarray:
    """The data chunk each (non-negative) index falls in; past the end counts as the last.

    Only unchecked out-of-range indices reach the clamp; the part and join tasks agree on
    it, so every output entry is written exactly once whatever the indices hold.
    """
    return np.minimum(np.searchsorted(stops, flat, side="right"), len(stops) - 1)


def _take(block: np.ndarray, flat: np.ndarray, axis: int) -> np.ndarray:
    """``np.take(block, flat, axis)`` for 1-D ``flat`` in range, never copying ``block``.

    ``np.take`` copies a non-contiguous block whole first (a block of a transposed or
    strided array is one); indexing reads only the rows it needs.
    """
    if block.flags.c_contiguous:
        return np.take(block, flat, axis=axis)
    return np.asarray(block[(slice(None),) * axis + (flat,)])


def _take_block(block: np.ndarray, indices: np.ndarray, axis: int) -> np.ndarray:
    """Gather within one data block that spans the whole axis."""
    # Through 1-D indices and a reshape, so a 0-d index gives an array, not a scalar.
    out = _take(block, indices.reshape(-1), axis)
    return out.reshape(block.shape[:axis] + indices.shape + block.shape[axis + 1 :])


def _take_part(
    block: np.ndarray,
    chunk: np.ndarray,
    indices: np.ndarray,
    axis: int,
    stops: tuple[int, ...],
) -> np.ndarray:
    """The entries of one indices block whose index falls in data chunk ``chunk[0]``."""
    c = int(chunk[0])
    flat = indices.reshape(-1).astype(np.int64, copy=False)  # minus a start beyond int32
    start = stops[c - 1] if c else 0
    return _take(block, flat[_owner(flat, stops) == c] - start, axis)


def _join_parts(
    parts: list[np.ndarray],
    indices: np.ndarray,
    axis: int,
    stops: tuple[int, ...],
) -> np.ndarray:
    """Put the parts of one output block, one per data chunk along the axis, in place."""
    flat = indices.reshape(-1)
    owner = _owner(flat, stops)
    first = parts[0]
    pre, post = first.shape[:axis], first.shape[axis + 1 :]
    out = np.empty_like(first, shape=(*pre, flat.size, *post))
    lead = (slice(None),) * axis
    for c, part in enumerate(parts):
        out[(*lead, owner == c)] = part
    return out.reshape(pre + indices.shape + post)


def _take_along_block(block: np.ndarray, indices: np.ndarray, axis: int) -> np.ndarray:
    """GatherElements within one data block that spans the whole axis.

    The NumPy backend's kernel (compiled, or pure NumPy), on indices already counted and
    checked: it reads any strides and any rank (np.take_along_axis stops at 31 index
    arrays on NumPy 1.x, 63 on NumPy 2).
    """
    plan = _spec.Plan(
        op="GatherElements", elements=True, axis=axis, size=block.shape[axis],
        out_shape=indices.shape, check_bounds=False,
    )  # fmt: skip
    return numpy_kernels.gather_elements(block, indices, plan)


def _merge_along_axis(data: da.Array, axis: int) -> da.Array:
    """``data`` with its chunks along ``axis`` merged as far as dask's chunk-size allows."""
    if data.numblocks[axis] == 1:
        return data
    budget = parse_bytes(dask.config.get("array.chunk-size"))
    off_axis = prod(max(c, default=0) for d, c in enumerate(data.chunks) if d != axis)
    length = budget // max(1, off_axis * data.dtype.itemsize)
    if length <= max(data.chunks[axis]):
        return data  # never split the caller's chunks
    return data.rechunk({axis: min(length, data.shape[axis])})


def _index_chunks(shape: tuple[int, ...], data: da.Array, axis: int) -> tuple[Any, ...]:
    """Chunks for Gather's indices so that an output block fits dask's chunk-size.

    An output block is data's off-axis block (before and after ``axis``) once per index
    of one indices block; indices blocks are cut so that it stays within
    ``array.chunk-size`` (at least one index per block, whatever data's chunks).
    """
    budget = parse_bytes(dask.config.get("array.chunk-size"))
    row = prod(max(c, default=0) for d, c in enumerate(data.chunks) if d != axis)
    per_block = max(1, budget // max(1, row * data.dtype.itemsize))
    if prod(shape) <= per_block:
        return tuple((n,) for n in shape)
    return normalize_chunks("auto", shape, limit=per_block * 8, dtype=np.int64)


def _fits(indices: da.Array, chunks: tuple[Any, ...]) -> bool:
    """Whether every block of ``indices`` is no larger than the largest of ``chunks``."""
    largest = prod(max(c, default=0) for c in chunks)
    return prod(max(c, default=0) for c in indices.chunks) <= largest


class DaskBackend:
    """The Dask backend."""

    name = "dask"

    def owns(self, x: Any, /) -> bool:
        return isinstance(x, da.Array)

    def shape(self, x: da.Array, /) -> tuple[int, ...]:
        if any(np.isnan(n) for n in x.shape):
            msg = (
                f"dask array of unknown shape {x.shape} (NaN chunk sizes): the result's shape "
                f"could not be known; call .compute_chunk_sizes() on it first"
            )
            raise ValueError(msg)
        return tuple(int(n) for n in x.shape)

    def dtype_name(self, x: da.Array, /) -> str:
        return numpy_dtype_name(x.dtype)

    @staticmethod
    def _indices(indices: Any, plan: Plan, chunks: tuple[Any, ...]) -> da.Array:
        """The indices as a dask array of int64 in ``[0, size)``, checked where the plan asks.

        Host indices are checked now and cut into ``chunks``; dask indices block by block
        when the graph runs.
        """
        if isinstance(indices, np.ndarray):
            # from_array copies NumPy input (dask >= 2024.12, dask/dask#11524): the graph
            # runs later on the values checked now, whatever the caller does meanwhile.
            return da.from_array(checked(plan, indices), chunks=chunks)
        return indices.map_blocks(_counted_block, plan=plan, dtype=np.int64)

    def gather(self, data: da.Array, indices: Any, plan: Plan, /) -> da.Array:
        a, rank = plan.axis, data.ndim
        data = _merge_along_axis(data, a)
        chunks = _index_chunks(tuple(int(n) for n in indices.shape), data, a)
        indices = self._indices(indices, plan, chunks)
        if not _fits(indices, chunks):  # dask indices in blocks too large for the output
            indices = indices.rechunk(chunks)
        if plan.size == 0 and indices.size and not plan.check_bounds:
            return _zeros(data, plan)
        q = indices.ndim
        data_ind = tuple(range(rank))
        idx_ind = tuple(range(rank, rank + q))
        out_ind = data_ind[:a] + idx_ind + data_ind[a + 1 :]
        meta = meta_from_array(data, ndim=len(out_ind))
        # align_arrays=False throughout: the inputs share no chunked label that could
        # disagree, and dask's alignment would warn (PerformanceWarning) that the output
        # has many more blocks than any input, which Gather's outer product always has.
        if data.numblocks[a] == 1:
            return da.blockwise(
                _take_block, out_ind, data, data_ind, indices, idx_ind,
                axis=a, concatenate=True, align_arrays=False, dtype=data.dtype, meta=meta,
            )  # fmt: skip
        stops = tuple(accumulate(data.chunks[a]))
        # Each part task learns which data chunk it holds from a one-element block.
        chunk_ids = da.arange(len(stops), chunks=1)
        parts = da.blockwise(
            _take_part, data_ind + idx_ind, data, data_ind, chunk_ids, (a,), indices, idx_ind,
            axis=a, stops=stops, align_arrays=False,
            dtype=data.dtype, meta=meta_from_array(data, ndim=rank + q),
        )  # fmt: skip
        return da.blockwise(
            _join_parts, out_ind, parts, data_ind + idx_ind, indices, idx_ind,
            axis=a, stops=stops, concatenate=False, align_arrays=False,
            dtype=data.dtype, meta=meta,
        )  # fmt: skip

    def gather_elements(self, data: da.Array, indices: Any, plan: Plan, /) -> da.Array:
        # Host indices in data's chunks: the blocks then align off the axis.
        indices = self._indices(indices, plan, tuple(max(1, c[0]) for c in data.chunks))
        if plan.trim is not None:
            data = data[plan.trim]
        if plan.size == 0 and indices.size and not plan.check_bounds:
            return _zeros(data, plan)
        rank = data.ndim
        if rank <= _RECHUNK_RANK:
            return _gather_elements(data, indices, plan.axis)
        # dask rechunks arrays of rank <= 32 only. Off the axis data and indices now have
        # the same shape: their size-1 dims go (basic indexing, no rechunk) and come back.
        keep = [d for d in range(rank) if d == plan.axis or data.shape[d] != 1]
        if len(keep) > _RECHUNK_RANK:
            msg = (
                f"{plan.op}: dask cannot rechunk arrays of rank above {_RECHUNK_RANK}; data "
                f"has rank {rank} with {len(keep)} dimensions longer than 1 (shape "
                f"{data.shape}): compute it and pass the NumPy array instead"
            )
            raise ValueError(msg)
        squeeze = tuple(slice(None) if d in keep else 0 for d in range(rank))
        result = _gather_elements(data[squeeze], indices[squeeze], keep.index(plan.axis))
        return result[tuple(slice(None) if d in keep else None for d in range(rank))]


#: The highest rank dask's rechunk supports (NumPy's 32 operands of np.nditer).
_RECHUNK_RANK = 32


def _gather_elements(data: da.Array, indices: da.Array, a: int) -> da.Array:
    """GatherElements of counted ``indices`` (off the axis, data's shape) at most rank 32."""
    rank = data.ndim
    if data.numblocks[a] != 1:
        data = data.rechunk({a: -1})
    indices = indices.rechunk({d: data.chunks[d] for d in range(rank) if d != a})
    ind = tuple(range(rank))
    data_ind = (*ind[:a], rank, *ind[a + 1 :])  # data's axis: its one block goes whole
    return da.blockwise(
        _take_along_block, ind, data, data_ind, indices, ind,
        axis=a, concatenate=True, align_arrays=False,  # aligned just above
        dtype=data.dtype, meta=meta_from_array(data, ndim=rank),
    )  # fmt: skip


def _zeros(data: da.Array, plan: Plan) -> da.Array:
    """The result of unchecked indices on an empty axis: nothing to read, so zeros."""
    return da.zeros_like(data, shape=plan.out_shape)


backend = DaskBackend()
