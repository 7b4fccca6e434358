"""Type aliases for signatures: an array of any library, a checked call's plan."""

from __future__ import annotations

from typing import Any, TypeAlias

from onnx_gather._spec import Plan
from onnx_gather._spec.scatter_elements import ScatterElementsPlan
from onnx_gather._spec.scatter_nd import ScatterNDPlan

__all__ = ["Array", "Plan", "ScatterPlan"]

#: An array of any library the package serves (NumPy, PyTorch, JAX, Dask, CuPy, any
#: array-API library): ``Any`` to the type checker, which knows none of them all.
Array: TypeAlias = Any
#: A scatter's plan: either one has ``reduction``.
ScatterPlan: TypeAlias = ScatterElementsPlan | ScatterNDPlan
