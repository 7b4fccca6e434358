"""One case of the shared table (``cases.py``, ``scatter_cases.py``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from onnx_gather import _ops


@dataclass(frozen=True)
class Case:
    id: str
    op: str  # a registry name
    data: np.ndarray
    indices: np.ndarray
    attributes: dict[str, Any]
    opset: int | None = None  # None: the operator's default
    check_bounds: bool = True
    raises: type[Exception] | None = None
    match: str | None = None
    expected: Any = None  # a literal (a spec's, or a runtime's); None means "ask the oracle"
    # The indices as the caller writes them (a Python int or list), for values no int32 or
    # int64 array holds; ``indices`` then holds the same values as Python objects.
    written: Any = None
    updates: np.ndarray | None = None  # a scatter's third input (scatter_cases.py)

    @property
    def arrays(self) -> tuple[np.ndarray, ...]:
        """The inputs in the operator's order."""
        return _ops.get(self.op).in_order(self.data, self.indices, self.updates)
