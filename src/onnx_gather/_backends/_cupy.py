"""CuPy: the NumPy kernels (``cupy.take``, ``cupy.take_along_axis``) on the data's GPU.

Host indices are copied to the data's device once; the range check reads one min/max pair
back (the single host synchronisation of a checked call).
"""

from __future__ import annotations

from typing import Any

import cupy
import numpy as np

from onnx_gather._backends._numpy import NumpyBackend


class CupyBackend(NumpyBackend):
    """The CuPy backend: NumPy's kernels, CuPy's memory."""

    name = "cupy"

    def owns(self, x: Any, /) -> bool:
        return isinstance(x, cupy.ndarray)

    def from_host(self, indices: np.ndarray, data: Any, /) -> Any:
        with data.device:
            return cupy.asarray(indices)

    def adopt(self, indices: Any, data: Any, /) -> Any:
        if indices.device != data.device:
            with data.device:
                return cupy.asarray(indices)
        return indices

    def index_range(self, indices: Any, /) -> tuple[int, int]:
        lo, hi = cupy.stack([indices.min(), indices.max()]).get().tolist()
        return int(lo), int(hi)

    def to_host(self, indices: Any, /) -> np.ndarray:
        return np.asarray(indices.get())

    def gather(self, data: Any, indices: Any, plan: Any, negative: bool, /) -> Any:
        return cupy.take(data, indices, axis=plan.axis)

    def gather_elements(self, data: Any, indices: Any, plan: Any, negative: bool, /) -> Any:
        if plan.trim is not None:
            data = data[plan.trim]
        return cupy.take_along_axis(data, indices, axis=plan.axis)


backend = CupyBackend()
