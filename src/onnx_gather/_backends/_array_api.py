"""Any other library that implements the Python array API standard, CuPy included.

Runs :class:`~._base.Backend`'s array-API kernels on the namespace ``xp``: ``take``
(1-D indices) for Gather, ``take_along_axis`` where the namespace's API version has it
(standard 2024.12) for GatherElements, else the same gather as ``take`` on the
flattened data with linear indices. The standard leaves negative and out-of-range
indices unspecified, so indices are checked with one ``min`` and ``max`` (host indices
on the host) and negative ones counted from the end first. Without the check an index is
clamped into the axis; on an empty axis the result is zeros.

CuPy arrays are served here too, through ``array_api_compat``'s CuPy namespace: fused
CuPy kernels will replace these once they have run on a GPU (no GPU has been available
to this project; nothing ships on a path that has never run).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
from array_api_compat import array_namespace, device

from onnx_gather import _spec
from onnx_gather._backends._base import Backend
from onnx_gather._backends._numpy import _scatter

if TYPE_CHECKING:
    from onnx_gather._spec import Plan
    from onnx_gather._spec.scatter_elements import ScatterElementsPlan
    from onnx_gather._spec.scatter_nd import ScatterNDPlan
    from onnx_gather._spec.tensor_scatter import TensorScatterPlan
    from onnx_gather._typing import Array

# Every ONNX data type an array-API namespace can spell (strings it cannot).
_CANDIDATE_NAMES = sorted(_spec.DATA_TYPES_13 - {"string"})


class ArrayAPIBackend(Backend):
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

    def namespace(self, x: Any, /) -> Any:
        return self.xp

    def dtype_name(self, x: Any, /) -> str:
        for dtype, name in self._names:
            if x.dtype == dtype:
                return name
        return str(x.dtype)

    def scatter_elements(
        self,
        data: Array,
        indices: Array,
        updates: Array,
        plan: ScatterElementsPlan,
        out: Array = None,
        /,
    ) -> Any:
        """ONNX ScatterElements: NumPy's kernel on the host (:meth:`_on_host`)."""
        return self._on_host(_scatter.scatter_elements, data, indices, updates, plan, out)

    def scatter_nd(
        self, data: Array, indices: Array, updates: Array, plan: ScatterNDPlan, out: Array = None, /
    ) -> Any:
        """ONNX ScatterND: NumPy's kernel on the host (:meth:`_on_host`)."""
        return self._on_host(_scatter.scatter_nd, data, indices, updates, plan, out)

    def tensor_scatter(
        self,
        data: Array,
        updates: Array,
        indices: Array,
        plan: TensorScatterPlan,
        out: Array = None,
        /,
    ) -> Any:
        """ONNX TensorScatter: NumPy's kernel on the host (:meth:`_on_host`)."""
        return self._on_host(_scatter.tensor_scatter, data, indices, updates, plan, out)

    def _on_host(
        self, kernel: Any, data: Array, indices: Array, updates: Array, plan: Plan, out: Array
    ) -> Any:
        """Run NumPy's scatter ``kernel`` on host copies; the result on data's device.

        The array API standard has no scatter (no integer-array assignment, no ordered
        reduction), so the call cannot stay on the device. ``out`` receives the whole
        result (an array-API array may be written only as a whole or by basic indexing).
        """
        host = [x if isinstance(x, np.ndarray) else self.to_host(x) for x in (data, indices)]
        result = kernel(*host, self.to_host(updates), plan)
        xp = self.namespace(data)
        result = xp.asarray(result, device=device(data))
        if out is None:
            return result
        out[...] = result
        return out
