"""NumPy: ``np.take`` for Gather; row-wise or linear-index ``take`` for GatherElements.

Handles every ONNX type NumPy can hold: strings (object, ``str_``, ``bytes_`` and
``StringDType`` arrays) and ml_dtypes' bfloat16 included.

Speed (measured with ``python -m benchmarks``; see docs/benchmarks.md):

* The kernels check the index range themselves (:meth:`NumpyBackend.kernel_checks`), so
  :mod:`onnx_gather._api` makes no pre-pass; an out-of-range index raises a bare IndexError
  here, which ``_api`` replaces with the one ``_spec`` builds.
* ``np.take_along_axis`` builds a broadcast fancy index and is several times slower than
  ONNX Runtime; small calls keep it. Large GatherElements along the last axis with long
  rows is one ``take`` per row (see :func:`_by_rows`). Other large GatherElements
  computes the linear index of every element into the flattened data,
  ``index * stride[axis] + offset`` (the offset of the other coordinates), and gathers
  with ``np.take`` on the 1-D data. That runs in blocks of
  ``_BLOCK`` indices, so each block's linear indices stay in the cache between being
  written and read; a block's range check (the largest index read as unsigned, one
  reduction, which also tells whether any is negative) happens on data that block loads
  anyway. Blocks are cut along the outermost dimension off the axis, so a block's reads
  stay within a band of the data.
* ``np.take`` and its ufunc helpers release the GIL on non-object dtypes, so large calls
  split their blocks over up to ``_MAX_THREADS`` threads.
* Once the range is known to be valid, ``np.take`` runs in ``mode="wrap"``, which counts
  negative indices from the end like the default ``mode="raise"`` but writes into a given
  output directly: with ``"raise"`` NumPy buffers it (7x slower measured, NumPy 2.4).
  Unchecked calls use ``"clip"``: ``"wrap"`` walks a far-out index back one period at a
  time.
"""

from __future__ import annotations

import threading
from functools import partial
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from onnx_gather._dtypes import numpy_dtype_name
from onnx_gather._host import THREADS, UNSIGNED, in_parallel, value_range

if TYPE_CHECKING:
    from onnx_gather._spec import Plan

#: Indices per block of the GatherElements kernel. Measured best of 16/64/256/1024 Ki
#: (2000x2000 and top-k workloads, 2-core Xeon): on axis 0, 256 Ki gives bands of 128
#: columns, whose rows are long enough to stream.
_BLOCK = 1 << 18
#: Below this many output elements the plain kernels' lower fixed cost wins.
_SMALL = 1 << 13
#: Outputs per row from which GatherElements along the last axis runs row by row.
_LONG_ROWS = 256
#: Output bytes from which a call is split over threads.
_THREADED_BYTES = 1 << 20
_MAX_THREADS = THREADS
_ERRORS = (IndexError,)

_scratch = threading.local()


def _parts(n: int, nbytes: int) -> list[tuple[int, int]]:
    """Split ``range(n)`` into one contiguous part per thread worth using."""
    threads = 1
    if nbytes >= _THREADED_BYTES:
        threads = max(1, min(_MAX_THREADS, n))
    bounds = [n * k // threads for k in range(threads + 1)]
    return [(bounds[k], bounds[k + 1]) for k in range(threads) if bounds[k] < bounds[k + 1]]


def _buffer(name: str, size: int) -> np.ndarray:
    """An int64 scratch buffer of ``size`` entries; block-sized ones are kept per thread.

    Reusing them spares the page faults of fresh memory on every block.
    """
    if size > _BLOCK:
        return np.empty(size, np.int64)
    buf: np.ndarray | None = getattr(_scratch, name, None)
    if buf is None or buf.size < size:
        buf = np.empty(_BLOCK, np.int64)
        setattr(_scratch, name, buf)
    return buf[:size]


def _out_of_range() -> IndexError:
    # _api replaces this with _spec's message, built from the indices.
    return IndexError("index out of range")


def _any_negative(indices: np.ndarray) -> bool:
    return bool(indices.size) and int(indices.min()) < 0


def _check_range(indices: np.ndarray, plan: Plan) -> None:
    """Raise if some index is out of range (one reduction unless some index is negative)."""
    if indices.size:
        lo, hi = value_range(indices)
        if not plan.admits(lo, hi):
            raise _out_of_range()


def _fast(data: Any, indices: Any) -> bool:
    """Whether ``data`` suits the flat kernels: a C-ordered array of a plain dtype."""
    return (
        isinstance(data, np.ndarray)
        and data.size > 0
        and data.flags.c_contiguous
        and data.dtype.kind in "biufcV"
        and indices.dtype in UNSIGNED
    )


def _split_dim(shape: tuple[int, ...], axis: int) -> int:
    """The dimension to cut blocks along.

    The outermost one off the axis whose slices are at most a block (a block then reads
    a band of the data), else the axis itself, else the longest dimension.
    """
    size = int(np.prod(shape))
    for d in [*(d for d in range(len(shape)) if d != axis), axis]:
        if shape[d] > 1 and size // shape[d] <= _BLOCK:
            return d
    return int(np.argmax(shape))


def _into(out: np.ndarray | None, result: Any) -> Any:
    """``result``, or ``out`` holding it (for callers that own the output's memory)."""
    if out is None:
        return result
    out[...] = result
    return out


def _gather_elements(
    data: np.ndarray, indices: np.ndarray, plan: Plan, negative: bool, out: np.ndarray | None
) -> Any:
    """GatherElements as ``np.take`` of linear indices into the flattened data, in blocks."""
    shape, axis, size = indices.shape, plan.axis, plan.size
    rank = len(shape)
    strides = [s // data.itemsize for s in data.strides]
    flat = data.reshape(-1)
    out = np.empty(shape, data.dtype) if out is None else out
    # Offsets of every coordinate but the axis' (ONNX lets indices be smaller than data off
    # the axis; with data's strides the offsets land in the right place without a copy).
    offset = np.zeros((1,) * rank, np.int64)
    for d in range(rank):
        if d != axis and shape[d] > 1:
            coord = np.arange(shape[d], dtype=np.int64) * strides[d]
            offset = offset + coord.reshape([-1 if e == d else 1 for e in range(rank)])
    split = _split_dim(shape, axis)
    per = indices.size // shape[split]
    step = max(1, _BLOCK // per)
    stride = strides[axis]
    check = plan.check_bounds
    head = (slice(None),) * split
    # On the outermost axis a negative index gives a linear index short by exactly the
    # data's size, which np.take's "wrap" mode adds back (once, the range being checked).
    # Elsewhere it would land in the previous row: negatives are normalised first.
    outermost = stride * size == flat.size

    def blocks(start: int, stop: int) -> None:
        for s0 in range(start, stop, step):
            where = (*head, slice(s0, min(s0 + step, stop)))
            block = indices[where]
            lin = _buffer("lin", block.size).reshape(block.shape)
            has_negative = negative
            mode: Literal["clip", "wrap"] = "clip"  # unchecked: "clip" keeps any value inside
            if check:
                lo, hi = value_range(block)
                if not plan.admits(lo, hi):
                    raise _out_of_range()
                has_negative = lo < 0
                mode = "wrap"
            if has_negative and not (check and outermost):
                # index + (index < 0) * size, branch-free: the sign bit smeared, masked.
                fixed = _buffer("fixed", block.size).reshape(block.shape)
                np.right_shift(block, 63, out=fixed, dtype=np.int64)
                np.bitwise_and(fixed, size, out=fixed)
                np.add(fixed, block, out=fixed)
                block = fixed
            if stride == 1:
                np.add(block, offset[where] if offset.shape[split] > 1 else offset, out=lin)
            else:
                np.multiply(block, stride, out=lin, dtype=np.int64)
                lin += offset[where] if offset.shape[split] > 1 else offset
            np.take(flat, lin, out=out[where], mode=mode)

    in_parallel([partial(blocks, a, b) for a, b in _parts(shape[split], out.nbytes)])
    return out


def _by_rows(data: np.ndarray, indices: np.ndarray, plan: Plan) -> bool:
    """Whether GatherElements runs as one ``take`` per row of the last axis.

    So it does along the last axis when rows are long and the indices cover every row:
    ``take`` on a row checks the range and counts negatives from the end itself, so there
    is no range pass and no linear index, and a row's data stays in the L1 cache. Measured
    on 2000x2000 (2 cores): 20-50% faster than the blocked kernel, the most with negative
    indices. Not where a negative index is out of range (OpenVINO-6, Gather-1's rule).
    """
    return (
        plan.axis == indices.ndim - 1
        and indices.shape[-1] >= _LONG_ROWS
        and indices.shape[:-1] == data.shape[:-1]
        and (plan.negative_allowed or not plan.check_bounds)
    )


def _gather_rows(data: np.ndarray, indices: np.ndarray, plan: Plan, out: np.ndarray | None) -> Any:
    """GatherElements along the last axis as ``take`` row by row, rows split over threads."""
    out = np.empty(indices.shape, data.dtype) if out is None else out
    size = plan.size
    rows_data = data.reshape(-1, size)
    rows_indices = indices.reshape(-1, indices.shape[-1])
    rows_out = out.reshape(rows_indices.shape)

    def rows(start: int, stop: int) -> None:
        for r in range(start, stop):
            # take() into a new row, then a copy: faster than take(out=), which NumPy
            # buffers in "raise" mode anyway.
            rows_out[r] = rows_data[r].take(rows_indices[r])

    in_parallel([partial(rows, a, b) for a, b in _parts(len(rows_indices), out.nbytes)])
    return out


def _gather(
    data: np.ndarray, indices: np.ndarray, plan: Plan, negative: bool, out: np.ndarray | None
) -> Any:
    """Gather as ``np.take`` with an index mode, split over threads if large."""
    axis = plan.axis
    out = np.empty(plan.out_shape, data.dtype) if out is None else out
    if out.size == 0:
        return out
    mode = "wrap"  # the range is checked: wrap counts negatives from the end, once
    if not plan.check_bounds:
        # NumPy's "wrap" walks an index far out of range back one period at a time (for
        # 2**62 that never ends); "clip" takes any value in constant time.
        if negative:
            indices = np.where(indices < 0, indices + plan.size, indices)
        mode = "clip"
    if axis == 0:
        # Parts of the indices fill consecutive slabs of the output.
        flat = indices.reshape(-1)
        slabs = out.reshape(flat.shape + data.shape[1:])
        jobs = [
            partial(np.take, data, flat[a:b], 0, slabs[a:b], mode)
            for a, b in _parts(flat.size, out.nbytes)
        ]
    else:
        # Parts of the data's first dimension fill consecutive slabs of the output.
        jobs = [
            partial(np.take, data[a:b], indices, axis, out[a:b], mode)
            for a, b in _parts(data.shape[0], out.nbytes)
        ]
    in_parallel(jobs)
    return out


def gather(
    data: Any, indices: np.ndarray, plan: Plan, negative: bool, out: np.ndarray | None = None
) -> Any:
    """ONNX Gather; ``out`` (C-ordered, of the plan's shape and data's dtype) receives it.

    The NumPy backend's kernel, also run by the PyTorch backend on views of CPU tensors.
    """
    outputs = indices.size * data.size // plan.size if plan.size else 0
    if outputs >= _SMALL and indices.ndim and indices.size and _fast(data, indices):
        if plan.check_bounds:
            _check_range(indices, plan)
        return _gather(data, indices, plan, negative, out)
    # np.take counts negative indices from the end (ONNX-11/13); Gather-1 must reject them.
    # Its own check covers the top of the range.
    if plan.check_bounds and not plan.negative_allowed and negative and _any_negative(indices):
        raise _out_of_range()
    if indices.ndim == 0:
        # With 0-d indices and 1-d data np.take returns a NumPy scalar, not an array.
        result = np.take(data, indices.reshape(1), axis=plan.axis).reshape(plan.out_shape)
    elif isinstance(data, np.ndarray):
        result = data.take(indices, plan.axis)  # the method: no dispatch layer, same kernel
    else:
        result = np.take(data, indices, axis=plan.axis)
    return _into(out, result)


def gather_elements(
    data: Any, indices: np.ndarray, plan: Plan, negative: bool, out: np.ndarray | None = None
) -> Any:
    """ONNX GatherElements; ``out`` as for :func:`gather`."""
    if indices.size >= _SMALL and _fast(data, indices):
        if _by_rows(data, indices, plan):
            return _gather_rows(data, indices, plan, out)
        return _gather_elements(data, indices, plan, negative, out)
    # take_along_axis counts negative indices from the end; OpenVINO-6 must not.
    if plan.check_bounds and not plan.negative_allowed and negative and _any_negative(indices):
        raise _out_of_range()
    if plan.trim is not None:
        data = data[plan.trim]
    return _into(out, np.take_along_axis(data, indices, axis=plan.axis))


class NumpyBackend:
    """The NumPy backend."""

    name = "numpy"

    def owns(self, x: Any, /) -> bool:
        return isinstance(x, (np.ndarray, np.generic))  # a tuple: faster than a union

    def shape(self, x: Any, /) -> tuple[int, ...]:
        return x.shape  # NumPy shapes are tuples of ints already

    def dtype_name(self, x: Any, /) -> str:
        return numpy_dtype_name(x.dtype)

    def from_host(self, indices: np.ndarray, data: Any, /) -> np.ndarray:
        return indices

    def adopt(self, indices: Any, data: Any, /) -> np.ndarray:
        return np.asarray(indices)

    def index_range(self, indices: np.ndarray, /) -> tuple[int, int]:
        return value_range(indices)

    def to_host(self, indices: np.ndarray, /) -> np.ndarray:
        return indices

    def kernel_checks(self, plan: Plan, data: Any, indices: Any, /) -> tuple[type[Exception], ...]:
        """Both kernels raise IndexError for an out-of-range index (see the module notes)."""
        return _ERRORS if isinstance(data, np.ndarray) else ()

    def gather(self, data: Any, indices: np.ndarray, plan: Plan, negative: bool, /) -> Any:
        return gather(data, indices, plan, negative)

    def gather_elements(self, data: Any, indices: np.ndarray, plan: Plan, negative: bool, /) -> Any:
        return gather_elements(data, indices, plan, negative)


backend = NumpyBackend()
