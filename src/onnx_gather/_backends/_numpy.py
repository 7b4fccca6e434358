"""NumPy: ``np.take`` for Gather and ``np.take_along_axis`` for GatherElements.

Handles every ONNX type NumPy can hold: strings (object, ``str_``, ``bytes_`` and
``StringDType`` arrays) and ml_dtypes' bfloat16 included.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from onnx_gather._dtypes import numpy_dtype_name

if TYPE_CHECKING:
    from onnx_gather._spec import Plan


class NumpyBackend:
    """The NumPy backend."""

    name = "numpy"

    def owns(self, x: Any, /) -> bool:
        return isinstance(x, np.ndarray | np.generic)

    def shape(self, x: Any, /) -> tuple[int, ...]:
        return tuple(x.shape)

    def dtype_name(self, x: Any, /) -> str:
        return numpy_dtype_name(x.dtype)

    def from_host(self, indices: np.ndarray, data: Any, /) -> np.ndarray:
        return indices

    def adopt(self, indices: Any, data: Any, /) -> np.ndarray:
        return np.asarray(indices)

    def index_range(self, indices: np.ndarray, /) -> tuple[int, int]:
        return int(indices.min()), int(indices.max())

    def to_host(self, indices: np.ndarray, /) -> np.ndarray:
        return indices

    def gather(self, data: Any, indices: np.ndarray, plan: Plan, negative: bool, /) -> Any:
        # np.take counts negative indices from the end, as ONNX-11/13 do.
        if indices.ndim == 0:
            # With 0-d indices and 1-d data np.take returns a NumPy scalar, not an array.
            return np.take(data, indices.reshape(1), axis=plan.axis).reshape(plan.out_shape)
        return np.take(data, indices, axis=plan.axis)

    def gather_elements(self, data: Any, indices: np.ndarray, plan: Plan, negative: bool, /) -> Any:
        if plan.trim is not None:
            data = data[plan.trim]
        return np.take_along_axis(data, indices, axis=plan.axis)


backend = NumpyBackend()
