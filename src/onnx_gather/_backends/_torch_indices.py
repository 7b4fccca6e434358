"""Indices for torch's own kernels: checked, counted from the end, on ``data``'s device.

``torch.gather`` and ``torch.index_select`` want non-negative int64 indices and, on CUDA,
answer an out-of-range one with a device-side assert that kills the process' CUDA context.
So every index reaches them checked (``_spec``'s IndexError) or, without ``check_bounds``,
clamped into the axis, and counted from the end, in a new tensor (the caller's is never
touched). Host indices are checked on the host, before they travel.

Under ``torch.compile`` and ``torch.func`` transforms the index values cannot be read while
tracing, so the check goes into the graph as the custom operator
``onnx_gather::checked_indices``: opaque to the compiler, it runs on the real indices when
the graph runs, raises the same IndexError as an eager call (one host synchronisation, as
eagerly) and returns them counted, so no index is read unchecked.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from onnx_gather import _host, _spec

if TYPE_CHECKING:
    from onnx_gather._spec import Plan

# A tensor inside a torch.func transform (vmap, grad), whose values cannot be read.
wrapped = torch._C._functorch.is_functorch_wrapped_tensor


def values_unknown(x: torch.Tensor) -> bool:
    """Whether reading ``x``'s values now would break a trace (torch.compile, torch.func)."""
    return torch.compiler.is_compiling() or bool(wrapped(x))


def _index_range(indices: torch.Tensor) -> tuple[int, int]:
    """The smallest and largest of non-empty ``indices``: one fused pass, one host sync."""
    lo, hi = torch.aminmax(indices.detach())
    if indices.device.type == "cpu":
        return int(lo), int(hi)
    # Two .item() calls would synchronise twice; one transfer of both ends syncs once.
    both: list[int] = torch.stack((lo, hi)).tolist()
    return both[0], both[1]


def counted(indices: torch.Tensor, plan: Plan) -> torch.Tensor:
    """Indices as int64 in ``[0, size)``: checked (``_spec``'s IndexError) or clamped.

    One ``aminmax`` and one host synchronisation when checked; none when not, where an
    index out of range is clamped into the axis: it must never reach a CUDA kernel, whose
    answer is a device-side assert that kills the process' CUDA context.
    """
    size = plan.size
    if plan.check_bounds:
        if indices.numel():
            lo, hi = _index_range(indices)
            # (tolist: inside torch.func.grad even a plain tensor's .numpy() fails.)
            _spec.check_range(plan, lo, hi, lambda: np.array(indices.detach().cpu().tolist()))
            if lo >= 0:
                return indices if indices.dtype == torch.int64 else indices.to(torch.int64)
        indices = indices.to(torch.int64)
        return torch.where(indices < 0, indices + size, indices)
    indices = indices.to(torch.int64)
    return torch.where(indices < 0, indices + size, indices).clamp(0, max(size - 1, 0))


# The host synchronisation inside cannot be captured in a CUDA graph; this tag makes
# inductor keep the operator out of one. Older torch lacks the tag (and may lack
# custom_op's ``tags`` argument).
_TAGS: dict[str, Any] = (
    {"tags": (torch.Tag.cudagraph_unsafe,)} if hasattr(torch.Tag, "cudagraph_unsafe") else {}
)


@torch.library.custom_op("onnx_gather::checked_indices", mutates_args=(), **_TAGS)
def _checked_indices(
    indices: torch.Tensor, op: str, elements: bool, axis: int, size: int
) -> torch.Tensor:
    """Under tracing: :func:`counted` with the check, as an operator opaque to the compiler.

    It runs on the real indices when the graph runs and raises the same IndexError as an
    eager call. The arguments are the fields of the call's Plan that its message names.
    """
    plan = _spec.Plan(
        op=op, elements=elements, axis=axis, size=size, out_shape=(), check_bounds=True
    )
    return counted(indices, plan).clone()  # a custom op's output never aliases its input


@_checked_indices.register_fake
def _checked_indices_fake(
    indices: torch.Tensor, op: str, elements: bool, axis: int, size: int
) -> torch.Tensor:
    return torch.empty_like(indices, dtype=torch.int64)


@_checked_indices.register_vmap
def _checked_indices_vmap(
    info: Any, in_dims: tuple[int | None, ...], indices: torch.Tensor, *args: Any
) -> tuple[torch.Tensor, int | None]:
    # Element-wise, so the batch is checked as one tensor. Batch dim first: a message's
    # position then reads (batch entry, position in the indices).
    bdim = in_dims[0]
    if bdim is not None:
        indices = indices.movedim(bdim, 0)
    return _checked_indices(indices, *args), 0 if bdim is not None else None


def placed(indices: Any, data: torch.Tensor, plan: Plan) -> torch.Tensor:
    """Indices on ``data``'s device as int64 in ``[0, size)`` (see :func:`counted`).

    Host indices are checked on the host, before they travel: no device synchronisation.
    Traced indices are checked in the graph by ``onnx_gather::checked_indices``.
    """
    if isinstance(indices, np.ndarray):
        host = _host.checked(plan, indices)
        if not host.flags.writeable or host.base is not None or host is indices:
            # torch.as_tensor shares memory (and warns on read-only arrays): a copy keeps
            # the caller's array unaliased; it also drops negative strides torch rejects.
            host = host.copy()
        return torch.as_tensor(host, device=data.device)
    if indices.device != data.device:
        indices = indices.to(data.device, non_blocking=True)
    if indices.is_meta:  # no values to check (data is on meta too: nothing is read)
        indices = indices.to(torch.int64)
        return torch.where(indices < 0, indices + plan.size, indices)
    if plan.check_bounds and values_unknown(indices):
        return _checked_indices(indices, plan.op, plan.elements, plan.axis, plan.size)
    return counted(indices, plan)
