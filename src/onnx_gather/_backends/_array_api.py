"""Any other library that implements the Python array API standard.

Uses only the standard's functions: ``take`` (1-D indices) for Gather, ``take_along_axis``
where the namespace has it (standard 2024.12) for GatherElements, else the same gather
expressed as ``take`` on the flattened data with linear indices. The standard leaves
negative and out-of-range indices unspecified, so negative ones are normalised first.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
from array_api_compat import array_namespace

from onnx_gather import _spec

if TYPE_CHECKING:
    from onnx_gather._spec import Plan

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

    def from_host(self, indices: np.ndarray, data: Any, /) -> Any:
        return self.xp.asarray(indices, device=data.device)

    def adopt(self, indices: Any, data: Any, /) -> Any:
        if indices.device != data.device:
            return indices.to_device(data.device)
        return indices

    def index_range(self, indices: Any, /) -> tuple[int, int]:
        return int(self.xp.min(indices)), int(self.xp.max(indices))

    def to_host(self, indices: Any, /) -> np.ndarray:
        return np.from_dlpack(indices)

    def _prepare(self, indices: Any, plan: Plan, negative: bool) -> Any:
        if negative:
            indices = self.xp.where(indices < 0, indices + plan.size, indices)
        return indices

    def gather(self, data: Any, indices: Any, plan: Plan, negative: bool, /) -> Any:
        xp = self.xp
        flat = xp.reshape(self._prepare(indices, plan, negative), (-1,))
        return xp.reshape(xp.take(data, flat, axis=plan.axis), plan.out_shape)

    def gather_elements(self, data: Any, indices: Any, plan: Plan, negative: bool, /) -> Any:
        xp = self.xp
        indices = self._prepare(indices, plan, negative)
        if plan.trim is not None:
            data = data[plan.trim]
        if hasattr(xp, "take_along_axis"):
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
                [n if e == d else 1 for e in range(len(shape))],
            )
            linear = linear + coord * strides[d]
        return xp.reshape(
            xp.take(xp.reshape(data, (-1,)), xp.reshape(linear, (-1,)), axis=0), shape
        )
