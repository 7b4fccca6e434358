"""Dask: every operator as a lazy, chunk-aware block plan; a call computes nothing.

For each output block the graph reads only the data blocks that block can need; NumPy's
kernels run inside the tasks, so every dtype NumPy holds moves bit-exactly.
"""

from __future__ import annotations

import math
from itertools import accumulate
from typing import TYPE_CHECKING, Any

import dask
import dask.array as da
import numpy as np
from dask.array.core import normalize_chunks
from dask.array.utils import meta_from_array
from dask.utils import parse_bytes

from onnx_gather import _spec
from onnx_gather._backends import _numpy as numpy_kernels
from onnx_gather._backends._base import Backend, Call
from onnx_gather._backends._dask import _chunks as chunking
from onnx_gather._backends._dask import _points as points
from onnx_gather._backends._dask import _scatter as scatters
from onnx_gather._host import check_strings, counted_on_host
from onnx_gather._spec.gather import GatherPlan
from onnx_gather._spec.gather_elements import GatherElementsPlan
from onnx_gather._spec.gather_nd import GatherNDPlan

if TYPE_CHECKING:
    from onnx_gather._spec import Plan
    from onnx_gather._spec.openvino_scatter import ScatterUpdatePlan
    from onnx_gather._spec.scatter_elements import ScatterElementsPlan
    from onnx_gather._spec.scatter_nd import ScatterNDPlan
    from onnx_gather._spec.tensor_scatter import TensorScatterPlan
    from onnx_gather._typing import Array

#: The highest rank dask's rechunk supports (NumPy's 32 operands of np.nditer).
_RECHUNK_RANK = 32


def _counted_block(block: np.ndarray, plan: Plan, block_info: Any = None) -> np.ndarray:
    """One indices block counted and checked (or clamped); errors name positions in all indices."""
    offset = [start for start, _ in block_info[0]["array-location"]]
    try:
        return counted_on_host(plan, block)
    except IndexError:
        _spec.raise_out_of_range(plan, block, offset)
        raise


def _strings_block(block: np.ndarray, role: str, block_info: Any = None) -> np.ndarray:
    """One block of an object array checked to hold strings; errors name whole positions."""
    offset = [start for start, _ in block_info[0]["array-location"]] if block_info else []
    return check_strings(role, block, offset)


def _owner(flat: np.ndarray, stops: tuple[int, ...]) -> np.ndarray:
    """The data chunk each counted index falls in; past the end counts as the last.

    So part and join tasks agree whatever indices hold: each output entry is written once.
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
    block: np.ndarray, chunk: np.ndarray, indices: np.ndarray, axis: int, stops: tuple[int, ...]
) -> np.ndarray:
    """The entries of one indices block whose index falls in data chunk ``chunk[0]``."""
    c = int(chunk[0])
    flat = indices.reshape(-1).astype(np.int64, copy=False)  # minus a start beyond int32
    start = stops[c - 1] if c else 0
    return _take(block, flat[_owner(flat, stops) == c] - start, axis)


def _join_parts(
    parts: list[np.ndarray], indices: np.ndarray, axis: int, stops: tuple[int, ...]
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


def _zeros(data: da.Array, shape: tuple[int, ...]) -> da.Array:
    """Zeros of ``data``'s dtype and array type: the output that reads nothing.

    Strings (object data) as one block: dask's auto chunks cannot size object data
    (NotImplementedError "Can not use auto rechunking with object dtype").
    """
    return da.zeros_like(data, shape=shape, chunks=-1 if data.dtype == object else "auto")


def _counted_tuples(indices: Array, plan: GatherNDPlan, data: da.Array) -> da.Array:
    """GatherND's indices as a dask array of whole tuples, counted and checked per block.

    Host indices are checked now; dask indices are first made one chunk along the last
    dim (an error's position then names the coordinate too).
    """
    if isinstance(indices, np.ndarray):
        b = plan.batch_dims
        # No index: whole dims, as dask's auto chunks divide by the block's size (0).
        auto = "auto" if indices.size else -1
        lead = [data.chunks[d] if d < b else auto for d in range(indices.ndim - 1)]
        chunks = normalize_chunks((*lead, -1), indices.shape, dtype=np.int64)
        return _counted_indices(indices, plan, chunks)
    whole = indices.rechunk({indices.ndim - 1: -1})
    return whole.map_blocks(_counted_block, plan=plan, dtype=np.int64)


def _counted_indices(indices: Array, plan: Plan, chunks: tuple[Any, ...]) -> da.Array:
    """The indices as a dask array, counted from the end and checked where the plan asks.

    Host indices (NumPy, lists) are checked now, before they become a dask array, and cut
    into ``chunks``. The values of dask indices are unknown until compute: they keep their
    chunks and each block is counted and range-checked in its own task
    (:func:`_counted_block`): an out-of-range index raises the IndexError of every backend,
    naming its position in the whole ``indices`` (from whichever bad block the scheduler
    runs first); unchecked, it is clamped into the axis.
    """
    if isinstance(indices, np.ndarray):
        # from_array copies NumPy input (dask >= 2024.12, dask/dask#11524): the graph
        # runs later on the values checked now, whatever the caller does meanwhile.
        return da.from_array(counted_on_host(plan, indices), chunks=chunks)
    return indices.map_blocks(_counted_block, plan=plan, dtype=np.int64)


def _linear(tuples: np.ndarray, sizes: tuple[int, ...]) -> np.ndarray:
    """Counted index tuples (the last dim) as the linear position of each in ``sizes``."""
    linear = np.zeros(tuples.shape[:-1], np.int64)
    for j, n in enumerate(sizes):
        linear = linear * n + tuples[..., j]
    return linear


def _take_nd_block(block: np.ndarray, tuples: np.ndarray, batch_dims: int) -> np.ndarray:
    """GatherND within one data block whole along the addressed dims (tuples counted).

    The NumPy backend's kernel, unchecked: the tuples were checked in their own task.
    """
    k = tuples.shape[-1]
    sizes = tuple(block.shape[batch_dims : batch_dims + k])
    shape = tuples.shape[:-1] + block.shape[batch_dims + k :]
    plan = GatherNDPlan("GatherND", False, shape, batch_dims, min(sizes), sizes, batch_dims)
    return numpy_kernels.gather_nd(block, tuples, plan)


def _zeros_like_output(tuples: np.ndarray, rest: tuple[int, ...], like: np.ndarray) -> np.ndarray:
    """The output block where an addressed axis is empty: zeros (computed after the check)."""
    return np.zeros(tuples.shape[:-1] + rest, like.dtype)


def _reads_nothing(indices: Array, plan: Plan) -> bool:
    """Whether the result is zeros: unchecked indices on an empty axis have nothing to read."""
    return plan.size == 0 and indices.size > 0 and not plan.check_bounds


def _take_along_axis(data: da.Array, indices: da.Array, a: int) -> da.Array:
    """GatherElements of counted ``indices`` (off the axis, data's shape) at most rank 32."""
    data, indices = chunking.aligned(data, indices, a)
    rank = data.ndim
    ind = tuple(range(rank))
    data_ind = (*ind[:a], rank, *ind[a + 1 :])  # data's axis: its one block goes whole
    return da.blockwise(
        points.take_along_block, ind, data, data_ind, indices, ind,
        axis=a, concatenate=True, align_arrays=False,  # aligned just above
        dtype=data.dtype, meta=meta_from_array(data, ndim=rank),
    )  # fmt: skip


def _by_block(data: da.Array, indices: da.Array, plan: GatherElementsPlan) -> bool:
    """Whether GatherElements moves fewer bytes by data block than by rechunking data.

    Rechunking data whole along the axis moves and concatenates every data byte; the
    by-block plan (:mod:`._points`) moves, per index, a position and an offset to the
    data block it reads and a value back, and writes the value once more into its output
    block, in more tasks (each counted as :data:`._points.TASK_BYTES`). Data in one chunk
    along the axis needs neither.
    """
    n = data.numblocks[plan.axis]
    if n == 1 or data.ndim > _RECHUNK_RANK:
        return False
    moved = indices.size * (points.ROUTE_BYTES + 2 * data.dtype.itemsize)
    extra = points.tasks(math.prod(indices.numblocks), n) - math.prod(data.numblocks)
    return bool(moved + points.TASK_BYTES * extra < 2 * data.nbytes)


def _gather_elements_by_block(
    data: da.Array, indices: Array, plan: GatherElementsPlan
) -> da.Array | None:
    """GatherElements by data block (:mod:`._points`) where that moves less, else None.

    Host indices whose every block reads one data block make one task per block, on
    that data block alone: nothing moves. Otherwise :func:`_by_block` chooses.

    Indices are cut like data off the axis (their block then meets one data block there).
    Host indices are counted and checked now, and each block's reach is known: the data
    chunks along the axis its entries fall in. Dask indices are counted in their route
    tasks and may reach every chunk along the axis.
    """
    a = plan.axis
    if data.numblocks[a] == 1 or data.ndim > _RECHUNK_RANK:
        return None
    stops = tuple(accumulate(data.chunks[a]))
    if isinstance(indices, np.ndarray):
        values = counted_on_host(plan, indices)
        along = chunking.like_data(data)[a]  # (off the axis: data's chunks, even uneven)
        counted = da.from_array(values, chunks={**dict(enumerate(data.chunks)), a: along})
        reached = _reached(values, counted.chunks, stops, a)
        if all(len(c) == 1 for c in reached.values()):
            owners = {bi: c[0] for bi, c in reached.items()}
            return points.gather_local("gatherelements", data, counted, a, owners)
        lazy, count = counted, False
    else:
        lazy, count = indices.rechunk({d: data.chunks[d] for d in range(data.ndim) if d != a}), True
        everywhere = tuple(range(len(stops)))
        reached = {bi: everywhere for bi in np.ndindex(*lazy.numblocks)}
    if not _by_block(data, lazy, plan):
        return None

    def reach(bi: tuple[int, ...]) -> list[tuple[int, tuple[int, ...]]]:
        return [(c, (*bi[:a], c, *bi[a + 1 :])) for c in reached[bi]]

    kwargs = {"plan": plan, "count": count, "axis": a, "stops": stops}
    route = (points.route_elements, kwargs)
    return points.gather_by_block(
        "gatherelements", data, lazy, route, reach, data.ndim, lazy.chunks, data.ndim
    )


def _reached(
    values: np.ndarray, chunks: tuple[tuple[int, ...], ...], stops: tuple[int, ...], axis: int
) -> dict[tuple[int, ...], tuple[int, ...]]:
    """For each block (of ``chunks``) of counted host indices, the data chunks it reads."""
    starts = [tuple(accumulate(c, initial=0)) for c in chunks]
    reached = {}
    for bi in np.ndindex(*(len(c) for c in chunks)):
        cut = tuple(slice(starts[d][b], starts[d][b + 1]) for d, b in enumerate(bi))
        found = np.unique(points.owners(values[cut], stops))
        reached[bi] = tuple(int(c) for c in found)
    return reached


def _nd_by_block(data: da.Array, indices: Array, plan: GatherNDPlan) -> bool:
    """Whether GatherND (no batch dims) moves fewer bytes by data block than by reshaping.

    The reshape to one addressed dim (a Gather of linear positions) rechunks data whole
    along all addressed dims but the first and along the trailing ones; the by-block plan
    (:mod:`._points`) moves, per tuple, a position and an offset, and its row of the
    trailing dims back, and writes that row once more; it too needs the trailing dims
    whole. Data in one block over the addressed dims needs neither.
    """
    k = len(plan.sizes)
    n = math.prod(data.numblocks[:k])
    if n == 1 or data.ndim > _RECHUNK_RANK:
        return False
    row = math.prod(data.shape[k:]) * data.dtype.itemsize
    tuples = math.prod(indices.shape[:-1])
    if isinstance(indices, da.Array):
        blocks = math.prod(indices.numblocks[:-1])
    else:  # (host tuples get dask's auto chunks)
        blocks = -(-indices.nbytes // parse_bytes(dask.config.get("array.chunk-size")))
    extra = points.tasks(blocks, n) - math.prod(data.numblocks)
    moved = tuples * (points.ROUTE_BYTES + 2 * row)
    return bool(moved + points.TASK_BYTES * extra < 2 * data.nbytes)


def _gather_nd_by_block(data: da.Array, indices: Array, plan: GatherNDPlan) -> da.Array:
    """GatherND without batch dims by data block (:mod:`._points`).

    Index tuples whole along the last dim; data whole along its trailing (not addressed)
    dims. Host tuples are counted and checked now and each block reaches only the data
    blocks its tuples address; dask tuples are counted in their route tasks.
    """
    k = len(plan.sizes)
    data = data.rechunk({d: -1 for d in range(k, data.ndim)})
    stops = tuple(tuple(accumulate(data.chunks[d])) for d in range(k))
    grid = tuple(data.numblocks[:k])
    if isinstance(indices, np.ndarray):
        values = counted_on_host(plan, indices)
        # (dask's auto chunks divide by the size: none for no tuple)
        lead = ["auto" if values.size else -1] * (values.ndim - 1)
        chunks = normalize_chunks((*lead, -1), values.shape, dtype=np.int64)
        lazy, count = da.from_array(values, chunks=chunks), False
        starts = [tuple(accumulate(c, initial=0)) for c in chunks]
        reached = {}
        for bi in np.ndindex(*lazy.numblocks):
            cut = tuple(slice(starts[d][b], starts[d][b + 1]) for d, b in enumerate(bi))
            found = np.unique(points.owners_nd(values[cut].reshape(-1, k), stops))
            reached[bi] = tuple(int(t) for t in found)
    else:
        lazy, count = indices.rechunk({indices.ndim - 1: -1}), True
        everywhere = tuple(range(math.prod(grid)))
        reached = {bi: everywhere for bi in np.ndindex(*lazy.numblocks)}
    trailing = (0,) * (data.ndim - k)

    def reach(bi: tuple[int, ...]) -> list[tuple[int, tuple[int, ...]]]:
        return [(t, (*map(int, np.unravel_index(t, grid)), *trailing)) for t in reached[bi]]

    kwargs = {"plan": plan, "count": count, "stops": stops}
    out_chunks = (*lazy.chunks[:-1], *data.chunks[k:])
    return points.gather_by_block(
        "gather-nd", data, lazy, (points.route_nd, kwargs), reach, k, out_chunks, lazy.ndim - 1
    )


class DaskBackend(Backend):
    """The Dask backend."""

    name = "dask"
    writes_in_place = False

    def owns(self, x: Array, /) -> bool:
        return isinstance(x, da.Array)

    def strings(self, role: str, x: Array, /) -> Array:
        """``x``'s blocks each checked as it is computed (strings, as the base's)."""
        if not isinstance(x, da.Array):
            return super().strings(role, x)
        return x.map_blocks(_strings_block, role=role, dtype=x.dtype, meta=x._meta)

    def shape(self, x: da.Array, /) -> tuple[int, ...]:
        """``x``'s shape; ValueError for unknown chunk sizes (NaN, after boolean indexing).

        No call can be planned without every input's shape (``_api`` names the input).
        """
        if any(np.isnan(n) for n in x.shape):
            msg = (
                f"a dask array of unknown shape {x.shape} (NaN chunk sizes, as boolean "
                f"indexing makes), which the call must know to be planned; call "
                f".compute_chunk_sizes() on it first"
            )
            raise ValueError(msg)
        return tuple(int(n) for n in x.shape)

    def zeros(self, shape: tuple[int, ...], like: Array, /) -> da.Array:
        """Zeros of ``like``'s dtype; strings empty, in one chunk (Dask sizes none of them)."""
        if like.dtype.kind in "OUST":
            return da.from_array(np.full(shape, "", dtype=like.dtype), chunks=-1)
        return da.zeros(shape, dtype=like.dtype)

    def reshaping(self, call: Call, shape: tuple[int, ...], /) -> Call:
        """``call`` whose result is given ``shape``; an empty one by one task after it.

        Dask's reshape fails on an empty array with a dim in several chunks (``reduce() of
        empty iterable``, dask 2026.8.0: ``reshape_rechunk`` multiplies an empty run of
        dims), and a rechunk of an empty array drops the tasks before it, with the check
        of the indices they hold: an empty result is one task that computes the call's
        (raising its IndexError) and reshapes nothing.
        """

        def reshaped(arrays: tuple[Array, ...], out: Array = None, /) -> Any:
            result = call(arrays, out)
            if 0 not in result.shape:
                return result.reshape(shape)
            task = dask.delayed(np.reshape, pure=True)(result, shape)
            meta = meta_from_array(result, ndim=len(shape))
            return da.from_delayed(task, shape=shape, dtype=result.dtype, meta=meta)

        return reshaped

    def gather(self, data: da.Array, indices: Array, plan: Plan, /) -> da.Array:
        """Gather: output blocks of data's off-axis blocks around one indices block each.

        An output block is (data's off-axis block before the axis ``a``, one indices
        block, data's off-axis block after ``a``; a data block's *off-axis block* is its
        position in every dimension but ``a``); the indices are cut to keep it within
        dask's ``array.chunk-size`` (:mod:`onnx_gather._backends._dask._chunks` sizes every
        chunk).

        * Data in one chunk along ``a``: one task per output block, ``np.take`` of one
          data block with one indices block.
        * Data in ``n`` chunks along ``a``: for each data block and indices block a *part*
          task takes the entries whose index falls in that data chunk (at most the output
          block); one *join* task per output block puts its ``n`` parts in place (about
          twice the output block in memory). No task holds more than one data block, but
          there are ``n`` times as many tasks, so data is first merged along ``a`` within
          the budget.
        """
        if _reads_nothing(indices, plan):
            return _zeros(data, plan.out_shape)
        a, rank = plan.axis, data.ndim
        data = chunking.merge_along_axis(data, a)
        chunks = chunking.index_chunks(tuple(int(n) for n in indices.shape), data, a)
        indices = _counted_indices(indices, plan, chunks)
        if chunking.largest_block(indices.chunks) > chunking.largest_block(chunks):
            indices = indices.rechunk(chunks)  # dask indices in blocks too large for the output
        data_ind = tuple(range(rank))
        idx_ind = tuple(range(rank, rank + indices.ndim))
        part_ind = data_ind + idx_ind  # one part per data block and indices block
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
            _take_part, part_ind, data, data_ind, chunk_ids, (a,), indices, idx_ind,
            axis=a, stops=stops, align_arrays=False,
            dtype=data.dtype, meta=meta_from_array(data, ndim=len(part_ind)),
        )  # fmt: skip
        return da.blockwise(
            _join_parts, out_ind, parts, part_ind, indices, idx_ind,
            axis=a, stops=stops, concatenate=False, align_arrays=False,
            dtype=data.dtype, meta=meta,
        )  # fmt: skip

    def gather_nd(self, data: da.Array, indices: Array, plan: GatherNDPlan, /) -> da.Array:
        """GatherND: Gather of linear positions, or blocks whole along the addressed dims.

        Without batch dims, data's addressed dims are flattened into one (dask's reshape
        rechunks all but the first of them whole) and each tuple becomes its linear
        position there: a Gather along axis 0, with Gather's chunk plans. With batch dims,
        data is rechunked whole along the addressed dims and the indices' batch dims to
        data's batch chunks: one task per indices block, the NumPy kernel on the matching
        data block. Index tuples are whole (one chunk along the indices' last dim).
        """
        b, sizes = plan.batch_dims, plan.sizes
        k = len(sizes)
        rest = tuple(int(n) for n in data.shape[b + k :])
        if b == 0 and 0 not in sizes and _nd_by_block(data, indices, plan):
            return _gather_nd_by_block(data, indices, plan)
        tuples = _counted_tuples(indices, plan, data)
        if 0 in sizes:  # every tuple reads an empty axis: zeros, once the check has run
            if _reads_nothing(indices, plan):
                return _zeros(data, plan.out_shape)
            return tuples.map_blocks(
                _zeros_like_output, rest=rest, like=np.empty(0, data.dtype), dtype=data.dtype,
                drop_axis=tuples.ndim - 1,
                new_axis=list(range(tuples.ndim - 1, tuples.ndim - 1 + len(rest))),
                chunks=(*tuples.chunks[:-1], *((n,) for n in rest)),
                meta=meta_from_array(data, ndim=len(plan.out_shape)),
            )  # fmt: skip
        if b == 0:
            flat = data.reshape((math.prod(sizes), *rest))
            linear = tuples.map_blocks(
                _linear, sizes=sizes, drop_axis=tuples.ndim - 1, dtype=np.int64
            )
            out_shape = tuple(int(n) for n in linear.shape) + rest
            row_plan = GatherPlan(plan.op, False, out_shape, 0, math.prod(sizes))
            return self.gather(flat, linear, row_plan)
        data = data.rechunk({b + j: -1 for j in range(k)})
        tuples = tuples.rechunk({d: data.chunks[d] for d in range(b)})
        rank = data.ndim
        batch = tuple(range(b))
        data_ind = (*batch, *range(b, rank))
        middle = tuple(range(rank, rank + tuples.ndim - 1 - b))
        idx_ind = (*batch, *middle, rank + tuples.ndim)  # the last: whole tuples
        out_ind = (*batch, *middle, *range(b + k, rank))
        return da.blockwise(
            _take_nd_block, out_ind, data, data_ind, tuples, idx_ind,
            batch_dims=b, concatenate=True, align_arrays=False,
            dtype=data.dtype, meta=meta_from_array(data, ndim=len(out_ind)),
        )  # fmt: skip

    def gather_elements(
        self, data: da.Array, indices: Array, plan: GatherElementsPlan, /
    ) -> da.Array:
        """GatherElements: one task per indices block, on data whole along the axis.

        Data is cut to the indices' extent off the axis (``plan.block()``) and rechunked
        to one chunk along the axis; the indices are rechunked off the axis to data's
        chunks. Each task runs the NumPy backend's kernel on the full-axis data block of
        the matching off-axis block: data's off-axis chunk sizes times the axis' length in
        elements, and a rechunk task needs about the same. If that is too large for a
        worker, chunk data finer off the axis before the call. dask has no
        ``take_along_axis`` (dask/dask#3663).
        """
        if _reads_nothing(indices, plan):
            return _zeros(data, plan.out_shape)
        block = plan.block()
        if block is not None:
            data = data[block]
        planned = _gather_elements_by_block(data, indices, plan)
        if planned is not None:
            return planned
        indices = _counted_indices(indices, plan, chunking.like_data(data))
        rank = data.ndim
        if rank <= _RECHUNK_RANK:
            return _take_along_axis(data, indices, plan.axis)
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
        result = _take_along_axis(data[squeeze], indices[squeeze], keep.index(plan.axis))
        return result[tuple(slice(None) if d in keep else None for d in range(rank))]

    def without_negatives(self, indices: Array, data: da.Array, plan: ScatterUpdatePlan, /) -> Any:
        """As the base's; dask indices are checked per block when computed (:func:`_counted_block`).

        Where no update is left to write (an empty dim of data off the axis), no task of
        the result reads the indices: they are checked now.
        """
        if plan.check_bounds and not isinstance(indices, np.ndarray):
            if not indices.size:
                return indices
            if 0 in plan.updates_shape:
                counted_on_host(plan, np.asarray(indices.compute()))
            return indices.map_blocks(_counted_block, plan=plan, dtype=indices.dtype)
        return super().without_negatives(indices, data, plan)

    def openvino_scatter_update(
        self,
        data: da.Array,
        indices: Array,
        updates: da.Array,
        plan: ScatterUpdatePlan,
        out: Array = None,
        /,
    ) -> da.Array:
        """As the base's; where nothing is written, data itself (immutable), once checked.

        (Dask cannot reshape an empty array: its ``reshape_rechunk`` reduces an empty list.)
        """
        if 0 in plan.updates_shape:
            self.without_negatives(indices, data, plan)
            return data
        return super().openvino_scatter_update(data, indices, updates, plan)

    def filled(self, like: da.Array, value: Any, dtype: Any = None, /) -> da.Array:
        """As the base's, in ``like``'s chunks (dask's auto chunks divide by an empty size)."""
        kind = like.dtype if dtype is None else dtype
        return da.full(like.shape, value, dtype=kind, chunks=like.chunks)

    def mean(self, total: da.Array, counts: da.Array, use_init_val: bool, /) -> da.Array:
        """As the base's, block by block on NumPy blocks when the graph is computed.

        The base's NumPy arithmetic then runs inside its ``errstate`` (a signalling NaN
        of an untouched element would warn when dask computes a lazy division).
        """
        host = numpy_kernels.NumpyBackend()
        return da.map_blocks(
            lambda t, c: host.mean(t, c, use_init_val), total, counts, dtype=total.dtype
        )

    def check_writable(self, out: Array, /) -> None:
        msg = (
            "dask arrays are lazy and immutable: out= cannot write into one; use the "
            "result (a new dask array, with data's chunks)"
        )
        raise TypeError(msg)

    def scatter_elements(
        self,
        data: da.Array,
        indices: Array,
        updates: da.Array,
        plan: ScatterElementsPlan,
        out: Array = None,
        /,
    ) -> da.Array:
        """ONNX ScatterElements, lazily (:mod:`._scatter`); ``out`` never arrives."""
        return scatters.scatter(data, indices, updates, plan)

    def scatter_nd(
        self,
        data: da.Array,
        indices: Array,
        updates: da.Array,
        plan: ScatterNDPlan,
        out: Array = None,
        /,
    ) -> da.Array:
        """ONNX ScatterND, lazily (:mod:`._scatter`); ``out`` never arrives."""
        return scatters.scatter(data, indices, updates, plan)

    def tensor_scatter(
        self,
        data: da.Array,
        updates: da.Array,
        indices: Array,
        plan: TensorScatterPlan,
        out: Array = None,
        /,
    ) -> da.Array:
        """ONNX TensorScatter, lazily: NumPy's kernel as one task, then data's chunks.

        The call computes nothing; a bad write index raises when the result is computed.
        One task holds the whole cache (not block by block: a block-wise graph is not
        written yet).
        """
        from onnx_gather._backends._numpy._scatter import result_dtype

        # NumPy's backend widens strings to hold the update whole; its dtype, declared.
        dtype = result_dtype(data.dtype, updates.dtype)
        run = numpy_kernels.backend.tensor_scatter
        task = dask.delayed(run, pure=True)(data, updates, indices, plan)
        meta = np.empty((0,) * len(plan.out_shape), dtype)
        whole = da.from_delayed(task, shape=plan.out_shape, dtype=dtype, meta=meta)
        if 0 in plan.out_shape:  # (a rechunk of nothing drops the task, and its check)
            return whole
        return whole.rechunk(data.chunks)


backend = DaskBackend()
