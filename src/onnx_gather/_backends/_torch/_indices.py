"""Indices for torch's own kernels: checked or clamped, counted from the end (int64)."""

from __future__ import annotations

from collections.abc import Sequence
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

import array_api_compat.torch as _compat
import numpy as np
import torch

from onnx_gather import _spec
from onnx_gather._indices import BoundsPolicy, counted

if TYPE_CHECKING:
    from onnx_gather._spec import Plan

#: array_api_compat's torch namespace with ``clip`` as ``torch.clamp``: before
#: array-api-compat 1.14 (the declared floor is 1.9) its clip assigns through boolean
#: masks, which fails under ``torch.func.vmap`` and on the meta device
#: (data-apis/array-api-compat#350, fixed by #353).
xp = SimpleNamespace(
    **{name: getattr(_compat, name) for name in dir(_compat) if not name.startswith("__")}
    | {"clip": torch.clamp}
)


# A tensor inside a torch.func transform (vmap, grad), whose values cannot be read.
wrapped = torch._C._functorch.is_functorch_wrapped_tensor


def values_unknown(x: torch.Tensor) -> bool:
    """Whether reading ``x``'s values now would break a trace (torch.compile, torch.func)."""
    return torch.compiler.is_compiling() or bool(wrapped(x))


def _index_range(indices: torch.Tensor, axis: int | None = None) -> tuple[Any, Any]:
    """The smallest and largest of non-empty ``indices``: one fused pass, one host sync.

    With ``axis``, per position of the other axis (GatherND's coordinates: each has its
    own size), in the same one pass and one transfer.
    """
    if axis is None:
        lo, hi = torch.aminmax(indices.detach())
    else:
        lo, hi = torch.aminmax(indices.detach(), dim=axis)
    if indices.device.type == "cpu" and axis is None:
        return int(lo), int(hi)
    # Two .item() calls would synchronise twice; one transfer of both ends syncs once.
    both: list[Any] = torch.stack((lo, hi)).tolist()
    return both[0], both[1]


def _to_host(indices: torch.Tensor) -> np.ndarray:
    # (tolist: inside torch.func.grad even a plain tensor's .numpy() fails.)
    return np.array(indices.detach().cpu().tolist(), dtype=np.int64).reshape(indices.shape)


def counted_int64(indices: torch.Tensor, plan: Plan) -> torch.Tensor:
    """Indices as int64 in ``[0, size)``: checked (``_spec``'s IndexError) or clamped.

    ``torch.gather`` and ``torch.index_select`` want non-negative indices and, on CUDA,
    answer an out-of-range one with a device-side assert that kills the process' CUDA
    context. So every index reaches them through the family's one count
    (:func:`onnx_gather._indices.counted`), in a new int64 tensor (the caller's is
    never touched): checked, with ``torch.aminmax`` for the range (one pass, one host
    synchronisation), or, without ``check_bounds``, clamped into the axis (no host
    synchronisation).
    """
    if plan.check_bounds:
        out = counted(
            xp, indices, plan, BoundsPolicy.RAISE, extremes=_index_range, to_host=_to_host
        )
    else:
        out = counted(xp, indices, plan, BoundsPolicy.CLAMP)
    return out.to(torch.int64)


# The host synchronisation inside cannot be captured in a CUDA graph; this tag makes
# inductor keep the operator out of one. Older torch lacks the tag (and may lack
# custom_op's ``tags`` argument).
TAGS: dict[str, Any] = (
    {"tags": (torch.Tag.cudagraph_unsafe,)} if hasattr(torch.Tag, "cudagraph_unsafe") else {}
)


def rule(op: str, axis: int, sizes: Sequence[int], coordinates: bool) -> Plan:
    """The checked range rule the operators below take as their arguments.

    ``[-s, s-1]`` (:class:`onnx_gather._spec.Bounds`), except where ``op`` names OpenVINO's
    ScatterUpdate, whose indices lie in ``[0, s-1]``: its plan's own rule
    (:class:`onnx_gather._spec.openvino_scatter.ScatterUpdatePlan`; the name keeps the
    operators' schemas as they were).
    """
    from onnx_gather import _ops
    from onnx_gather._spec.openvino_scatter import ScatterUpdatePlan

    sizes = tuple(sizes)
    operator = _ops.BY_MESSAGE_NAME.get(op)
    if operator is not None and operator[0].method == "openvino_scatter_update":
        return ScatterUpdatePlan(op, True, (), axis, sizes[0], None, (), ())  # type: ignore[arg-type]
    return _spec.Bounds(op, True, (), axis, min(sizes, default=0), sizes, coordinates)


@torch.library.custom_op("onnx_gather::checked_indices_v1", mutates_args=(), **TAGS)
def checked_indices(
    indices: torch.Tensor, op: str, axis: int, sizes: Sequence[int], coordinates: bool
) -> torch.Tensor:
    """Under ``torch.func``: :func:`counted_int64` with the check, opaque to the compiler.

    The index values cannot be read while tracing, so the check goes into the graph: it
    runs on the real indices when the graph runs, raises the same IndexError as an eager
    call (one host synchronisation, as eagerly) and returns them counted, so no index is
    read unchecked. The operators' schemas here are generic over the family (the plan's
    range rule) and carry a version in their names, so graphs exported today keep their
    meaning when they change. The arguments are the plan's range rule (:class:`onnx_gather._spec.Bounds`):
    the operator's name for messages, the axis its first index component addresses, the
    size each component addresses, and whether the last dim of ``indices`` holds them.
    """
    plan = rule(op, axis, sizes, coordinates)
    return counted_int64(indices, plan).clone()  # a custom op's output never aliases its input


@checked_indices.register_fake
def _checked_indices_fake(
    indices: torch.Tensor, op: str, axis: int, sizes: Sequence[int], coordinates: bool
) -> torch.Tensor:
    return torch.empty_like(indices, dtype=torch.int64)


@checked_indices.register_vmap
def _checked_indices_vmap(
    info: Any, in_dims: tuple[int | None, ...], indices: torch.Tensor, *args: Any
) -> tuple[torch.Tensor, int | None]:
    # Element-wise, so the batch is checked as one tensor. Batch dim first: a message's
    # position then reads (batch entry, position in the indices).
    bdim = in_dims[0]
    if bdim is not None:
        indices = indices.movedim(bdim, 0)
    return checked_indices(indices, *args), 0 if bdim is not None else None
