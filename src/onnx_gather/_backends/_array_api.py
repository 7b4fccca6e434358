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

from typing import Any

from array_api_compat import array_namespace

from onnx_gather import _spec
from onnx_gather._backends._base import Backend

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
