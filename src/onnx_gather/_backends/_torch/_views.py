"""Zero-copy NumPy views of CPU tensors, and the one rule of when they may stand in for them.

A write into a caller's tensor through such a view is one autograd does not see: whoever
writes bumps the tensor's version after it (:data:`bump_versions`), so a backward that
saved the tensor raises "modified by an inplace operation", as after torch's own in-place
writes, instead of computing with the new values.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
import torch.autograd.forward_ad as _FORWARD_AD

from onnx_gather._backends._numpy import _kernels
from onnx_gather._backends._torch._dtypes import NAMES, SIGNED
from onnx_gather._backends._torch._indices import wrapped

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


#: ``bump_versions((tensor, ...))``: what ``torch.autograd.graph.increment_version`` calls
#: (torch 2.13), without its Python frame: the bound calls that write by address call it.
bump_versions = torch._C._increment_version

_tracing = torch._C._get_tracing_state
_dispatch_modes = torch._C._len_torch_dispatch_stack
_grad_enabled = torch.is_grad_enabled


def fits(*tensors: torch.Tensor) -> bool:
    """Whether NumPy holds a view of each tensor: at most :data:`MAX_DIMS` dims.

    The part of :func:`viewable` that a bound call's key fixes (shapes and types): asked
    once, when the call is bound.
    """
    return all(x.dim() <= MAX_DIMS for x in tensors)


def unrecorded(data: torch.Tensor, indices: Any, updates: torch.Tensor | None = None) -> bool:
    """Whether nothing records these CPU tensors' operations now, and their memory is their values.

    No tracer (``torch.jit.trace``; a dispatch mode: ``make_fx``'s, fake tensors',
    ``torch.export``'s), no forward-mode AD level (dual tensors' tangents flow through
    torch's operations), no autograd graph to record (grad mode with data or updates
    that require grad), and no negative or conjugate view of data or updates (their
    memory holds other values than they show). ``indices`` may be host indices, a NumPy
    array. The part of :func:`viewable` that may change between two calls of one bound
    call: each of them asks it.
    """
    return (
        data.is_cpu
        and (type(indices) is np.ndarray or indices.is_cpu)
        and (updates is None or updates.is_cpu)
        and _tracing() is None
        and _dispatch_modes() == 0
        and _FORWARD_AD._current_level < 0
        and not (
            _grad_enabled()
            and (data.requires_grad or (updates is not None and updates.requires_grad))
        )
        and not (data.is_neg() or data.is_conj())
        and (updates is None or not (updates.is_neg() or updates.is_conj()))
    )


def viewable(data: Any, indices: Any, updates: Any = None) -> bool:
    """Whether the NumPy backend's kernels may run on zero-copy views of these tensors now.

    The one rule: plain tensors (no subclass) that no compiler traces, with memory a view
    can show (strided, at most :data:`MAX_DIMS` dims, not a ZeroTensor, whose data pointer
    is null, nor a ``torch.func`` wrapper, which has none), and :func:`unrecorded`.
    ``indices`` may be host indices (a NumPy array); ``updates`` None for a gather.

    A bound call, whose key fixes types and shapes, asks :func:`fits` when it is bound
    and :func:`unrecorded` at each call, and learns the rest from the addresses it reads:
    a ZeroTensor's is 0, and a sparse tensor or a wrapper raises RuntimeError for one.
    """
    return (
        type(data) is torch.Tensor
        and not torch.compiler.is_compiling()  # first: Dynamo must not trace what follows
        and _memory(data)
        and (type(indices) is np.ndarray or (type(indices) is torch.Tensor and _memory(indices)))
        and (updates is None or (type(updates) is torch.Tensor and _memory(updates)))
        and unrecorded(data, indices, updates)
    )


def _memory(x: torch.Tensor) -> bool:
    """Whether a NumPy view can show ``x``'s memory (see :func:`viewable`)."""
    return (
        x.layout == torch.strided
        and not wrapped(x)
        and not x._is_zerotensor()
        and x.dim() <= MAX_DIMS
    )


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
