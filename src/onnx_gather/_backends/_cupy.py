"""CuPy: one fused kernel per operator, one pass over the output, checked or not.

Each operator is one ``cupy.ElementwiseKernel`` over the output: it reads the element's
index, counts a negative one from the end, and for an index outside ``[-s, s-1]`` records
its flat position in ``indices`` with ``atomicMin`` into a one-element int64 array that
starts at ``INT64_MAX``, then reads element 0 instead (nothing where the axis is empty),
so no address outside ``data`` is ever read. A checked call reads that one value back (its
one host synchronisation; then, only if an index was bad, that index) and raises
``_spec``'s IndexError; an unchecked call reads nothing back.

``data`` is read through CuPy's raw indexing (``data[flat]``), which follows the array's
own shape and strides, so a view is never copied (GatherElements with smaller indices
takes a view of the block it reads). Indices are read through their own strides too.
Elements move as bits: each type as the unsigned integer of its width (complex128 as
itself: a plain copy, no arithmetic), so NaN payloads arrive unchanged.

Host indices are checked on the host (``_host.checked``) and copied to the data's device
once, already counted: the kernel then runs unchecked.

Untested here: written without a GPU (see tests/test_cases.py with
``ONNX_GATHER_BACKENDS=cupy`` on a CUDA machine).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import cupy
import numpy as np

from onnx_gather import _host, _spec
from onnx_gather._dtypes import numpy_dtype_name

if TYPE_CHECKING:
    from onnx_gather._spec import Plan

INT64_MAX = np.iinfo(np.int64).max

#: The same-width unsigned type each element size moves as (16 bytes: complex128 itself).
_BITS = {1: cupy.uint8, 2: cupy.uint16, 4: cupy.uint32, 8: cupy.uint64}

# Shared by both kernels: index ``j`` of ``idx`` is checked, then element ``x`` of data
# (a flat C-order position, unravelled by CuPy with data's strides) is gathered.
_BODY = """
    long long k = (long long)IDX;
    if (k < 0) k += axis_size;
    if (k < 0 || k >= axis_size) {
        if (check) atomicMin((unsigned long long*)&bad[0], (unsigned long long)(POS));
        k = 0;
    }
    out = k < axis_size ? data[(p * axis_size + k) * post + c] : (T)0;
"""

_GATHER = cupy.ElementwiseKernel(
    "raw T data, raw I idx, int64 n_idx, int64 axis_size, int64 post, int32 check, raw int64 bad",
    "T out",
    """
    long long c = i % post;
    long long t = i / post;
    long long j = t % n_idx;
    long long p = t / n_idx;
    """
    + _BODY.replace("IDX", "idx[j]").replace("POS", "j"),
    "onnx_gather_gather",
)

_GATHER_ELEMENTS = cupy.ElementwiseKernel(
    "raw T data, I idx, int64 length, int64 axis_size, int64 post, int32 check, raw int64 bad",
    "T out",
    """
    long long c = i % post;
    long long p = i / post / length;
    """
    + _BODY.replace("IDX", "idx").replace("POS", "i"),
    "onnx_gather_gather_elements",
)


def _bits(data: Any) -> Any:
    """``data`` as same-width unsigned integers (a view: any strides), complex128 as is."""
    if data.dtype.itemsize in _BITS and data.dtype != _BITS[data.dtype.itemsize]:
        return data.view(_BITS[data.dtype.itemsize])
    return data


def _device_indices(indices: Any, data: Any, plan: Plan) -> tuple[Any, bool]:
    """Indices on ``data``'s device, and whether the kernel must still check them.

    Host indices are checked (or clamped) on the host, before they travel.
    """
    if isinstance(indices, np.ndarray):
        with data.device:
            return cupy.asarray(_host.checked(plan, indices)), False
    if indices.device != data.device:
        with data.device:
            indices = cupy.asarray(indices)
    return indices, plan.check_bounds


def _check_all(indices: Any, plan: Plan) -> None:
    """Raise ``_spec``'s IndexError for a bad index, reading only the min and max back."""
    if isinstance(indices, np.ndarray):
        _host.checked(plan, indices)
        return
    lo, hi = cupy.stack([indices.min(), indices.max()]).get().tolist()
    _spec.check_range(plan, int(lo), int(hi), lambda: cupy.asnumpy(indices))


def _run(kernel: Any, data: Any, indices: Any, plan: Plan, middle: int, post: int) -> Any:
    source = _bits(data)
    with data.device:
        out = cupy.empty(plan.out_shape, dtype=source.dtype)
        if out.size == 0:
            if plan.check_bounds and not plan.elements and indices.size:
                # Gather with an empty dim off the axis: nothing to gather, all to check.
                _check_all(indices, plan)
            return out.view(data.dtype)
        indices, check = _device_indices(indices, data, plan)
        bad = cupy.full((1,), INT64_MAX, dtype=cupy.int64)
        kernel(source, indices, max(middle, 1), plan.size, max(post, 1), int(check), bad, out)
        if check:
            first = int(bad.get()[0])  # one 8-byte read back
            if first != INT64_MAX:
                value = int(indices.reshape(-1)[first].get())
                position = tuple(int(i) for i in np.unravel_index(first, indices.shape))
                raise _spec.out_of_range(plan, value, position)
    return out.view(data.dtype)


class CupyBackend:
    """The CuPy backend."""

    name = "cupy"

    def owns(self, x: Any, /) -> bool:
        return isinstance(x, cupy.ndarray)

    def shape(self, x: Any, /) -> tuple[int, ...]:
        return tuple(x.shape)

    def dtype_name(self, x: Any, /) -> str:
        return numpy_dtype_name(x.dtype)

    def gather(self, data: Any, indices: Any, plan: Plan, /) -> Any:
        post = int(np.prod(data.shape[plan.axis + 1 :], dtype=np.int64))
        return _run(_GATHER, data, indices, plan, int(np.prod(indices.shape)), post)

    def gather_elements(self, data: Any, indices: Any, plan: Plan, /) -> Any:
        if plan.trim is not None:
            data = data[plan.trim]  # a view: data's shape is now the indices' off the axis
        post = int(np.prod(indices.shape[plan.axis + 1 :], dtype=np.int64))
        return _run(_GATHER_ELEMENTS, data, indices, plan, indices.shape[plan.axis], post)


backend = CupyBackend()
