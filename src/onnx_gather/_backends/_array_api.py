"""Any other library that implements the Python array API standard.

Uses only the standard's functions: ``take`` (1-D indices) for Gather, ``take_along_axis``
where the namespace's API version has it (standard 2024.12) for GatherElements, else the
same gather expressed as ``take`` on the flattened data with linear indices. The standard leaves
negative and out-of-range indices unspecified, so indices are checked with one ``min`` and
``max`` (host indices on the host) and negative ones counted from the end first. Without
the check an index is clamped into the axis; on an empty axis the result is zeros.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
from array_api_compat import array_namespace

from onnx_gather import _host, _spec

if TYPE_CHECKING:
    from onnx_gather._spec import Plan

#: Ranks above which GatherElements runs as ``take`` of linear indices (see gather_elements).
_LINEAR_RANK = 32
# Every ONNX data type an array-API namespace can spell (strings it cannot).
_CANDIDATE_NAMES = sorted(_spec.DATA_TYPES_13 - {"string"})


class ArrayAPIBackend:
    """A backend for one array-API namespace ``xp``."""

    def __init__(self, xp: Any) -> None:
        self.xp = xp
        self.name = xp.__name__.removeprefix("array_api_compat.")
        self._names = [(getattr(xp, n), n) for n in _CANDIDATE_NAMES if hasattr(xp, n)]

    def owns(self, x: Any, /) -> bool:
        try:
            return array_namespace(x) is self.xp
        except TypeError:
            return False

    def shape(self, x: Any, /) -> tuple[int, ...]:
        return tuple(x.shape)

    def dtype_name(self, x: Any, /) -> str:
        for dtype, name in self._names:
            if x.dtype == dtype:
                return name
        return str(x.dtype)

    def _counted(self, indices: Any, data: Any, plan: Plan) -> Any:
        """Indices on ``data``'s device, int64 in ``[0, size)``: checked, or clamped.

        Host indices are checked on the host; the library's own with one ``min``/``max``.
        """
        xp = self.xp
        if isinstance(indices, np.ndarray):
            return xp.asarray(_host.checked(plan, indices), device=data.device)
        if indices.device != data.device:
            indices = indices.to_device(data.device)
        if indices.dtype != xp.int64:  # int32 + a size beyond int32 must not wrap
            indices = xp.astype(indices, xp.int64)
        size = plan.size
        if plan.check_bounds and indices.size:
            lo, hi = int(xp.min(indices)), int(xp.max(indices))
            _spec.check_range(plan, lo, hi, lambda: np.from_dlpack(indices))
            if lo >= 0:
                return indices
        indices = xp.where(indices < 0, indices + size, indices)
        if plan.check_bounds:
            return indices
        return xp.clip(indices, 0, max(size - 1, 0))

    def gather(self, data: Any, indices: Any, plan: Plan, /) -> Any:
        xp = self.xp
        flat = xp.reshape(self._counted(indices, data, plan), (-1,))
        if plan.size == 0 and flat.shape[0]:  # unchecked, nothing to read: zeros
            return xp.zeros(plan.out_shape, dtype=data.dtype, device=data.device)
        return xp.reshape(xp.take(data, flat, axis=plan.axis), plan.out_shape)

    def gather_elements(self, data: Any, indices: Any, plan: Plan, /) -> Any:
        xp = self.xp
        indices = self._counted(indices, data, plan)
        if plan.size == 0 and indices.size:  # unchecked, nothing to read: zeros
            return xp.zeros(plan.out_shape, dtype=data.dtype, device=data.device)
        if plan.trim is not None:
            data = data[plan.trim]
        # take_along_axis is standard from 2024.12 on; a namespace may hold it and yet
        # refuse it at an older version it is set to (array-api-strict's flags), so the
        # version it reports decides, at each call. NumPy-based namespaces index with one
        # array per dimension, at most 63: above _LINEAR_RANK, linear indices and take.
        version = str(getattr(xp, "__array_api_version__", ""))
        if version >= "2024.12" and data.ndim <= _LINEAR_RANK:
            return xp.take_along_axis(data, indices, axis=plan.axis)
        return self._take_along_axis(data, indices, plan)

    def _take_along_axis(self, data: Any, indices: Any, plan: Plan) -> Any:
        """GatherElements from ``take`` alone: linear indices into the flattened data."""
        xp = self.xp
        shape = plan.out_shape
        strides = [1] * len(shape)
        for d in range(len(shape) - 2, -1, -1):
            n = data.shape[d + 1]
            strides[d] = strides[d + 1] * n
        linear = xp.astype(indices, xp.int64) * strides[plan.axis]
        for d, n in enumerate(shape):
            if d == plan.axis or n == 1:
                continue
            coord = xp.reshape(
                xp.arange(n, dtype=xp.int64, device=data.device),
                tuple(n if e == d else 1 for e in range(len(shape))),
            )
            linear = linear + coord * strides[d]
        return xp.reshape(
            xp.take(xp.reshape(data, (-1,)), xp.reshape(linear, (-1,)), axis=0), shape
        )
