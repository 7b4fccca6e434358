"""Zero-copy NumPy views of CPU tensors, for the NumPy backend's kernels.

A write into a caller's tensor through such a view is one autograd does not see: whoever
writes calls ``torch.autograd.graph.increment_version`` on the tensor after it, so a
backward that saved the tensor raises "modified by an inplace operation", as after
torch's own in-place writes, instead of computing with the new values.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

import numpy as np
import torch

from onnx_gather._backends._numpy import _kernels
from onnx_gather._backends._torch._dtypes import NAMES, SIGNED

if TYPE_CHECKING:
    from collections.abc import Callable

#: The most dims a NumPy array holds: 32 before NumPy 2.0, 64 since. A tensor of more
#: has no view; torch's operations serve it.
MAX_DIMS = 64 if np.lib.NumpyVersion(np.__version__) >= "2.0.0" else 32
#: Same-width types NumPy holds bit for bit, where NumPy has not the tensor's own.
_NUMPY_VIEW = {**SIGNED, torch.bfloat16: torch.int16}
#: The NumPy type number of each dtype's view (bfloat16: int16 bits), for ``_kernels.view``,
#: which makes a view faster than ``Tensor.numpy()`` (docs/performance.md).
TYPENUMS: dict[torch.dtype, int] = {
    dtype: np.dtype("int16" if name == "bfloat16" else name).num for dtype, name in NAMES.items()
}


def viewable(*tensors: torch.Tensor) -> bool:
    """Whether NumPy holds a view of each tensor: at most :data:`MAX_DIMS` dims."""
    return all(x.dim() <= MAX_DIMS for x in tensors)


def new_cpu(shape: tuple[int, ...], dtype: torch.dtype) -> Callable[[], torch.Tensor]:
    """What makes a new C-ordered CPU tensor of ``shape`` and ``dtype``, for a bound call.

    torch's allocation as inductor's compiled CPU programs call it, strides given: faster
    than ``torch.empty(shape, dtype=dtype)`` and ``torch.empty_strided``
    (docs/performance.md). It is private (``torch._C._dynamo.guards._empty_strided_cpu``); where torch lacks it,
    ``torch.empty_strided``.
    """
    strides, step = [], 1
    for n in reversed(shape):
        strides.append(step)
        step *= max(n, 1)
    strides.reverse()
    try:
        from torch._C._dynamo import guards

        allocate = getattr(guards, "_empty_strided_cpu", None)
    except ImportError:
        allocate = None
    if allocate is None:
        return functools.partial(torch.empty_strided, shape, tuple(strides), dtype=dtype)
    return functools.partial(allocate, shape, tuple(strides), dtype)


def as_numpy(x: torch.Tensor) -> np.ndarray:
    """A zero-copy NumPy view of a CPU tensor (same-width integers for unsigned, bfloat16)."""
    if _kernels is not None:
        return _kernels.view(x, x.data_ptr(), x.shape, x.stride(), TYPENUMS[x.dtype])
    view = _NUMPY_VIEW.get(x.dtype)
    if view is not None:
        x = x.view(view)
    return (x.detach() if x.requires_grad else x).numpy()


def of_new(out: torch.Tensor, shape: tuple[int, ...]) -> np.ndarray:
    """A view of ``out``, a new C-ordered tensor of ``shape`` (no strides to read)."""
    if _kernels is not None:
        return _kernels.view(out, out.data_ptr(), shape, None, TYPENUMS[out.dtype])
    return as_numpy(out)


def shares_memory(out: torch.Tensor, *inputs: torch.Tensor) -> bool:
    """Whether ``out`` and one of ``inputs`` may share memory (the same storage).

    A ZeroTensor (``torch._efficientzerotensor``) has no storage: it shares none.
    """
    storage = out.untyped_storage().data_ptr()
    return any(not x._is_zerotensor() and x.untyped_storage().data_ptr() == storage for x in inputs)
