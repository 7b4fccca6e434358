"""Pure-NumPy kernels, for where the compiled kernel (``onnx_gather._kernels``) is absent.

Exact, and several times slower than the compiled kernel on large calls (docs/benchmarks.md,
the "fallback" rows); they also serve what it does not take: object and ``StringDType``
strings, NumPy subclasses.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from onnx_gather import _spec
from onnx_gather._backends._base import nd_take
from onnx_gather._backends._numpy._pool import in_parallel, parts
from onnx_gather._host import NUMPY_XP as _xp
from onnx_gather._host import counted_on_host, value_range
from onnx_gather._indices import from_end

if TYPE_CHECKING:
    from collections.abc import Callable

    from onnx_gather._spec import Plan
    from onnx_gather._spec.gather_elements import GatherElementsPlan
    from onnx_gather._spec.gather_nd import GatherNDPlan
    from onnx_gather._typing import Array

#: Indices per block of the GatherElements kernel (measured best of 16/64/256/1024 Ki).
_BLOCK = 1 << 18
#: Below this many output elements the plain kernels' lower fixed cost wins.
_SMALL = 1 << 13
#: Outputs per row from which GatherElements along the last axis runs row by row.
_LONG_ROWS = 256
#: The most index arrays NumPy's advanced indexing takes (np.take_along_axis uses one per
#: dimension): NPY_MAXDIMS - 1, 63 from NumPy 2 on, 31 before.
_FANCY_RANK = 63 if int(np.__version__.split(".")[0]) >= 2 else 31


def _large(data: Array, indices: np.ndarray, outputs: int) -> bool:
    """Whether the blocked kernels serve this call: large, C-ordered, a plain dtype."""
    return (
        outputs >= _SMALL
        and type(data) is np.ndarray
        and data.size > 0
        and data.flags.c_contiguous
        and data.dtype.kind in "biufcV"
    )


def _into(out: np.ndarray | None, result: Any) -> Any:
    if out is None:
        return result
    out[...] = result
    return out


def _checked_by_take(
    take: Callable[[], Any], plan: Plan, indices: np.ndarray, out: np.ndarray | None
) -> Any:
    """Run ``take`` (which raises IndexError for an index outside ``[-s, s-1]``).

    Small calls' kernels, ``np.take`` and ``np.take_along_axis``, accept exactly
    ``[-s, s-1]`` and raise IndexError otherwise, so the check is theirs; the IndexError
    is then rebuilt by ``_spec`` from the indices.
    """
    try:
        return _into(out, take())
    except IndexError:
        _spec.raise_out_of_range(plan, indices)
        raise  # not an index out of range (e.g. NumPy's rank limit): its own error stands


def gather(data: Array, indices: np.ndarray, plan: Plan, out: np.ndarray | None) -> Any:
    """ONNX Gather in NumPy; ``out`` (C-ordered, the plan's shape) receives it if given."""
    outputs = indices.size * data.size // plan.size if plan.size else 0
    if plan.check_bounds and indices.size and not outputs:  # nothing read: check anyway
        counted_on_host(plan, indices)
    if not plan.check_bounds:
        if plan.size == 0:  # nothing to read: zeros, as the compiled kernel gives
            return _into(out, np.zeros_like(data, shape=plan.out_shape))
        indices = counted_on_host(plan, indices)  # negatives counted, the rest clamped: in range
    if indices.ndim and indices.size and _large(data, indices, outputs):
        if plan.check_bounds:
            _spec.check_range(plan, *value_range(indices), lambda: indices)
        return _gather_threaded(data, indices, plan, out)
    # 0-d indices through 1-d: with 1-d data np.take would return a NumPy scalar.
    flat = indices.reshape(-1)
    if data.flags.c_contiguous:
        take = partial(np.take, data, flat, plan.axis)
    else:  # np.take copies non-contiguous data whole; indexing reads the rows it needs
        take = partial(data.__getitem__, (slice(None),) * plan.axis + (flat,))
    return _checked_by_take(lambda: take().reshape(plan.out_shape), plan, indices, out)


def _gather_threaded(data: np.ndarray, indices: np.ndarray, plan: Plan, out: Array) -> Any:
    """Gather as ``np.take(mode="wrap")`` of checked indices, split over threads.

    For large calls, once the range is checked: ``mode="raise"`` buffers the output
    (docs/performance.md). NumPy's ``take`` releases the GIL on plain dtypes, so
    the parts run on :mod:`._pool`'s threads.
    """
    out = np.empty(plan.out_shape, data.dtype) if out is None else out
    mode = "wrap"  # in range: wrap counts negatives from the end, once
    if plan.axis == 0:  # parts of the indices fill consecutive slabs of the output
        flat = indices.reshape(-1)
        slabs = out.reshape(flat.shape + data.shape[1:])
        jobs = [
            partial(np.take, data, flat[a:b], 0, slabs[a:b], mode)
            for a, b in parts(flat.size, out.nbytes)
        ]
    else:  # parts of the data's first dimension fill consecutive slabs of the output
        jobs = [
            partial(np.take, data[a:b], indices, plan.axis, out[a:b], mode)
            for a, b in parts(data.shape[0], out.nbytes)
        ]
    in_parallel(jobs)
    return out


def gather_elements(
    data: Array, indices: np.ndarray, plan: GatherElementsPlan, out: np.ndarray | None
) -> Any:
    """ONNX GatherElements in NumPy; ``out`` as for :func:`gather`."""
    if not plan.check_bounds:
        if plan.size == 0:  # nothing to read: zeros, as the compiled kernel gives
            return _into(out, np.zeros_like(data, shape=plan.out_shape))
        indices = counted_on_host(plan, indices)
    if indices.ndim > _FANCY_RANK and indices.size:
        # np.take_along_axis indexes with one array per dimension, at most 63 of them:
        # above, the linear-index kernel (on a C-ordered copy: such data is tiny).
        return _gather_blocked(np.ascontiguousarray(data), indices, plan, out)
    if _large(data, indices, indices.size):
        if _by_rows(data, indices, plan):
            return _gather_rows(data, indices, plan, out)
        return _gather_blocked(data, indices, plan, out)
    block = plan.block()
    source = data[block] if block is not None else data
    return _checked_by_take(
        lambda: np.take_along_axis(source, indices, axis=plan.axis), plan, indices, out
    )


def _by_rows(data: np.ndarray, indices: np.ndarray, plan: Plan) -> bool:
    """Whether GatherElements runs as one ``take`` per row of the last axis.

    So it does along the last axis when rows are long and the indices cover every row:
    ``take`` on a row checks the range and counts negatives from the end itself, so there
    is no range pass and no linear index (faster than the blocked kernel there:
    docs/performance.md).
    """
    return (
        plan.axis == indices.ndim - 1
        and indices.shape[-1] >= _LONG_ROWS
        and indices.shape[:-1] == data.shape[:-1]
    )


def _gather_rows(data: np.ndarray, indices: np.ndarray, plan: Plan, out: Array) -> Any:
    """GatherElements along the last axis as ``take`` row by row, rows split over threads."""
    out = np.empty(indices.shape, data.dtype) if out is None else out
    rows_data = data.reshape(-1, plan.size)
    rows_indices = indices.reshape(-1, indices.shape[-1])
    rows_out = out.reshape(rows_indices.shape)

    def rows(start: int, stop: int) -> None:
        for r in range(start, stop):
            rows_out[r] = rows_data[r].take(rows_indices[r])  # faster than take(out=)

    try:
        in_parallel([partial(rows, a, b) for a, b in parts(len(rows_indices), out.nbytes)])
    except IndexError:
        _spec.raise_out_of_range(plan, indices)
        raise
    return out


def _split_dim(shape: tuple[int, ...], axis: int) -> int:
    """The dimension to cut blocks along: the outermost one off the axis whose slices fit."""
    size = int(np.prod(shape))
    for d in [*(d for d in range(len(shape)) if d != axis), axis]:
        if shape[d] > 1 and size // shape[d] <= _BLOCK:
            return d
    return int(np.argmax(shape))


def _gather_blocked(data: np.ndarray, indices: np.ndarray, plan: Plan, out: Array) -> Any:
    """GatherElements as ``np.take`` of linear indices into the flattened data, in blocks.

    The linear index of every element (``index * stride[axis] + offset``) in blocks of
    ``_BLOCK`` indices: each block's linear indices stay in the cache between being
    written and read, and its range check is one reduction on data the block loads
    anyway. Along the last axis with long rows, one ``take`` per row (:func:`_gather_rows`).
    """
    shape, axis, size = indices.shape, plan.axis, plan.size
    rank = len(shape)
    strides = [s // data.itemsize for s in data.strides]
    flat = data.reshape(-1)
    out = np.empty(shape, data.dtype) if out is None else out
    # Offsets of every coordinate but the axis' (indices may be smaller than data off the
    # axis; with data's strides the offsets land in the right place without a copy).
    offset = np.zeros((1,) * rank, np.int64)
    for d in range(rank):
        if d != axis and shape[d] > 1:
            coord = np.arange(shape[d], dtype=np.int64) * strides[d]
            offset = offset + coord.reshape([-1 if e == d else 1 for e in range(rank)])
    split = _split_dim(shape, axis)
    step = max(1, _BLOCK // (indices.size // shape[split]))
    stride = strides[axis]
    head = (slice(None),) * split
    # On the outermost axis a negative index gives a linear index short by exactly the
    # data's size, which np.take's "wrap" mode adds back once; elsewhere it would land in
    # the previous row, so negatives are counted from the end first.
    outermost = stride * size == flat.size

    def blocks(start: int, stop: int) -> None:
        for s0 in range(start, stop, step):
            where = (*head, slice(s0, min(s0 + step, stop)))
            block = indices[where]
            lo, hi = value_range(block)
            if plan.check_bounds:
                _spec.check_range(plan, lo, hi, lambda: indices)
            mode: Literal["clip", "wrap"] = "wrap" if plan.check_bounds else "clip"
            if lo < 0 and not outermost:
                block = from_end(np, block.astype(np.int64), size)
            lin = np.multiply(block, stride, dtype=np.int64)
            lin += offset[where] if offset.shape[split] > 1 else offset
            np.take(flat, lin, out=out[where], mode=mode)

    in_parallel([partial(blocks, a, b) for a, b in parts(shape[split], out.nbytes)])
    return out


def gather_nd(data: Array, indices: np.ndarray, plan: GatherNDPlan, out: np.ndarray | None) -> Any:
    """ONNX GatherND in NumPy: advanced indexing with the counted coordinates.

    One index array per batch dim (an ``arange``) and per coordinate; NumPy reads data in
    place whatever its strides. Above NumPy's limit of index arrays, ``take`` of linear
    indices on a C-ordered copy (such data is tiny). ``out`` as for :func:`gather`.
    """
    counted = counted_on_host(plan, indices)  # raises, or clamps without the check
    b, k = plan.batch_dims, len(plan.sizes)
    lead = indices.shape[:-1]
    if b + k > _FANCY_RANK or 0 in plan.sizes:
        return _into(out, nd_take(_xp, np.ascontiguousarray(data), counted, plan))
    batch = tuple(
        np.arange(n).reshape(tuple(n if e == d else 1 for e in range(len(lead))))
        for d, n in enumerate(lead[:b])
    )
    result = data[(*batch, *(counted[..., j] for j in range(k)))]
    if not lead:
        # 0-d index arrays index like ints: a scalar or a view of data, never our result.
        result = np.array(result, dtype=data.dtype, copy=True).reshape(plan.out_shape)
    return _into(out, result)
