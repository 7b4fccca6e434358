"""The SMALL_CALL route: torch's own kernel, bound to an eager call site of small CPU tensors.

:func:`._route.route` binds a call site here (plain tensors, small results, types torch
copies bit for bit); each binder below builds its stages.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch

from onnx_gather._backends._torch._numpy_views import reading_at

if TYPE_CHECKING:
    from collections.abc import Callable

    from onnx_gather._backends._base import Call
    from onnx_gather._spec.gather import GatherPlan
    from onnx_gather._spec.gather_elements import GatherElementsPlan
    from onnx_gather._spec.gather_nd import GatherNDPlan
    from onnx_gather._typing import Array


def _stage(native: Callable[..., torch.Tensor], then: Call, axis: int | None = None) -> Call:
    """``native(data, axis, indices)``; where it refuses the call, ``then``.

    Torch's kernels refuse negative indices (``gather``, ``index_select``) and any index
    out of range, with a RuntimeError or IndexError: ``then`` (advanced indexing, which
    counts negatives, or the exact path) gives the ONNX result or the library's
    IndexError. A call site keeps the stage it reached (its indices hold negatives, as
    some models' always do): a refusal (an exception) costs far more than a call, and is
    not paid again on every call.

    Torch's kernel may answer CPU tensors that no tracer records: its CPU kernels check
    every index (an error, never a read outside the tensor), under autograd and
    ``torch.func``'s transforms too, where a tracer (``torch.jit.trace``, ``make_fx``, fake
    tensors) would record the kernel without the library's rules. Those tests are
    written out here, and torch's kernel is called without a wrapper (``native`` takes
    the axis where it is ``torch.gather`` or ``index_select``; advanced indexing ignores
    it): each Python call on this path is a measurable part of a tiny gather
    (docs/performance.md). Indices on another device than CPU data are refused by the
    kernel itself.
    """
    live = True
    tracing, dispatch_stack = torch._C._get_tracing_state, torch._C._len_torch_dispatch_stack

    def call(arrays: tuple[Array, ...], out: Array = None, /) -> Any:
        nonlocal live
        if live:
            data, indices = arrays
            if data.is_cpu and tracing() is None and dispatch_stack() == 0:
                try:
                    return native(data, axis, indices)
                except (RuntimeError, IndexError):
                    live = False
        return then(arrays, out)

    return call


def gather_elements(plan: GatherElementsPlan, arrays: tuple[Array, ...], exact: Call) -> Call:
    """GatherElements: ``torch.gather``, which reads indices within the axis as ONNX does.

    Off the axis, indices may be shorter than data: ``torch.gather`` reads the leading
    part, as the plan's ``block`` does.
    """
    return _stage(torch.gather, reading_at(plan, arrays, exact), plan.axis)


def gather(plan: GatherPlan, arrays: tuple[Array, ...], exact: Call) -> Call:
    """Gather: ``index_select`` of 1-D indices, then advanced indexing along the axis.

    ``index_select`` (the faster of the two on a tiny call: docs/performance.md) refuses
    negative indices; advanced indexing counts them as ONNX does.
    """
    indices = arrays[1]
    axis = plan.axis
    leading = (slice(None),) * axis
    call = _stage(lambda data, _, indices: data[(*leading, indices)], exact)
    if indices.ndim == 1:
        call = _stage(torch.index_select, call, axis)
    return call


def gather_nd(plan: GatherNDPlan, arrays: tuple[Array, ...], exact: Call) -> Call:
    """GatherND without batch dims: advanced indexing by each coordinate.

    Counts negative coordinates as ONNX does.
    """
    return _stage(lambda data, _, indices: data[indices.unbind(-1)], exact)
