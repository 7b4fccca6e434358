"""CuPy: ``cupy.take`` and ``cupy.take_along_axis`` on the data's GPU.

Host indices are checked on the host and copied to the data's device once; CuPy indices
are checked with one min/max pair read back (the single host synchronisation of a checked
call), and negative ones counted from the end before the kernel, which would wrap them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import cupy
import numpy as np

from onnx_gather import _host, _spec
from onnx_gather._dtypes import numpy_dtype_name

if TYPE_CHECKING:
    from onnx_gather._spec import Plan


def _counted(indices: Any, data: Any, plan: Plan) -> Any:
    """Indices on ``data``'s device, int64 in ``[0, size)``: checked, or clamped."""
    if isinstance(indices, np.ndarray):
        with data.device:
            return cupy.asarray(_host.checked(plan, indices))
    if indices.device != data.device:
        with data.device:
            indices = cupy.asarray(indices)
    indices = indices.astype(cupy.int64, copy=False)
    size = plan.size
    if plan.check_bounds and indices.size:
        lo, hi = cupy.stack([indices.min(), indices.max()]).get().tolist()
        _spec.check_range(plan, int(lo), int(hi), lambda: indices.get())
        if lo >= 0:
            return indices
    indices = cupy.where(indices < 0, indices + size, indices)
    return indices if plan.check_bounds else cupy.clip(indices, 0, max(size - 1, 0))


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
        flat = _counted(indices, data, plan).reshape(-1)
        return cupy.take(data, flat, axis=plan.axis).reshape(plan.out_shape)

    def gather_elements(self, data: Any, indices: Any, plan: Plan, /) -> Any:
        if plan.trim is not None:
            data = data[plan.trim]
        return cupy.take_along_axis(data, _counted(indices, data, plan), axis=plan.axis)


backend = CupyBackend()
