"""Indices for torch's own kernels: checked, counted from the end, on ``data``'s device."""

from __future__ import annotations

import math
from collections.abc import Sequence
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

import array_api_compat.torch as _compat
import numpy as np
import torch

from onnx_gather import _host, _spec
from onnx_gather._indices import BoundsPolicy, normalise_indices

if TYPE_CHECKING:
    from onnx_gather._spec import Plan
    from onnx_gather._typing import Array

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


def checked_or_clamped(indices: torch.Tensor, plan: Plan) -> torch.Tensor:
    """Indices as int64 in ``[0, size)``: checked (``_spec``'s IndexError) or clamped.

    ``torch.gather`` and ``torch.index_select`` want non-negative indices and, on CUDA,
    answer an out-of-range one with a device-side assert that kills the process' CUDA
    context. So every index reaches them through the family's one normalisation
    (:func:`onnx_gather._indices.normalise_indices`), in a new int64 tensor (the caller's
    is never touched): checked, with ``torch.aminmax`` for the range (one pass, one host
    synchronisation), or, without ``check_bounds``, clamped into the axis (no host
    synchronisation).
    """
    if plan.check_bounds:
        out = normalise_indices(
            xp, indices, plan, BoundsPolicy.RAISE, extremes=_index_range, to_host=_to_host
        )
    else:
        out = normalise_indices(xp, indices, plan, BoundsPolicy.CLAMP)
    return out.to(torch.int64)


# The host synchronisation inside cannot be captured in a CUDA graph; this tag makes
# inductor keep the operator out of one. Older torch lacks the tag (and may lack
# custom_op's ``tags`` argument).
_TAGS: dict[str, Any] = (
    {"tags": (torch.Tag.cudagraph_unsafe,)} if hasattr(torch.Tag, "cudagraph_unsafe") else {}
)


def _rule(op: str, axis: int, sizes: Sequence[int], coordinates: bool) -> _spec.Bounds:
    """The checked range rule the operators below take as their arguments."""
    sizes = tuple(sizes)
    return _spec.Bounds(op, True, (), axis, min(sizes, default=0), sizes, coordinates)


@torch.library.custom_op("onnx_gather::checked_indices_v1", mutates_args=(), **_TAGS)
def _checked_indices(
    indices: torch.Tensor, op: str, axis: int, sizes: Sequence[int], coordinates: bool
) -> torch.Tensor:
    """Under ``torch.func``: :func:`checked_or_clamped` with the check, opaque to the compiler.

    The index values cannot be read while tracing, so the check goes into the graph: it
    runs on the real indices when the graph runs, raises the same IndexError as an eager
    call (one host synchronisation, as eagerly) and returns them counted, so no index is
    read unchecked. The operators' schemas here are generic over the family (the plan's
    range rule) and carry a version in their names, so graphs exported today keep their
    meaning when they change. The arguments are the plan's range rule (:class:`onnx_gather._spec.Bounds`):
    the operator's name for messages, the axis its first index component addresses, the
    size each component addresses, and whether the last dim of ``indices`` holds them.
    """
    plan = _rule(op, axis, sizes, coordinates)
    return checked_or_clamped(indices, plan).clone()  # a custom op's output never aliases its input


@_checked_indices.register_fake
def _checked_indices_fake(
    indices: torch.Tensor, op: str, axis: int, sizes: Sequence[int], coordinates: bool
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


@torch.library.custom_op("onnx_gather::out_of_range_v1", mutates_args=())
def _out_of_range(
    indices: torch.Tensor, sizes: torch.Tensor, op: str, axis: int, coordinates: bool
) -> torch.Tensor:
    """The branch of :func:`guarded`'s check that runs where an index is out of range.

    It raises the eager IndexError. Its arguments are :func:`_checked_indices`' with the
    sizes as a tensor (int64, one per coordinate, or 0-d), which a compiler passes to the
    branch as it passes ``indices``. Where no index is out of range (under ``vmap`` of a
    batch both branches run) it returns the other branch's value, an int64 zero.
    """
    checked_or_clamped(indices, _rule(op, axis, sizes.reshape(-1).tolist(), coordinates))
    return torch.zeros((), dtype=torch.int64, device=indices.device)


@_out_of_range.register_fake
def _out_of_range_fake(
    indices: torch.Tensor, sizes: torch.Tensor, op: str, axis: int, coordinates: bool
) -> torch.Tensor:
    return indices.new_empty((), dtype=torch.int64)


@_out_of_range.register_vmap
def _out_of_range_vmap(
    info: Any, in_dims: tuple[int | None, ...], indices: torch.Tensor, sizes: torch.Tensor,
    *args: Any,
) -> tuple[torch.Tensor, None]:  # fmt: skip
    # Element-wise: the batch is checked as one tensor, batch dim first (a message's
    # position then reads (batch entry, position in the indices)); one zero for all.
    # (``torch.cond`` of a batch may batch the sizes too: every entry holds the same.)
    bdim, sizes_bdim = in_dims[:2]
    if bdim is not None:
        indices = indices.movedim(bdim, 0)
    if sizes_bdim is not None:
        sizes = sizes.select(sizes_bdim, 0)
    return _out_of_range(indices, sizes, *args), None


def _no_index_out_of_range(indices: torch.Tensor, sizes: torch.Tensor) -> torch.Tensor:
    return indices.new_zeros((), dtype=torch.int64)


def _counted_by(indices: torch.Tensor, sizes: torch.Tensor) -> torch.Tensor:
    """Checked ``indices`` counted from the end (int64), on sizes given as a tensor.

    ``sizes``: one per coordinate (the last dim of ``indices``), or 0-d, one for every
    index. :func:`onnx_gather._indices.normalise_indices` without its policies (the graph checks the
    range; clamping too slowed inductor's row copies: docs/performance.md), written on a
    tensor of sizes because a ``torch.cond`` branch must not capture symbolic ones
    (:func:`guarded`).
    """
    wide = indices.to(torch.int64)
    return torch.where(wide < 0, wide + sizes, wide)


def _counted_or_out_of_range(
    indices: torch.Tensor, sizes: torch.Tensor, op: str, axis: int, coordinates: bool
) -> torch.Tensor:
    return _counted_by(indices, sizes) + _out_of_range(indices, sizes, op, axis, coordinates)


def _compiler_checks_indexing() -> bool:
    """Whether the graph being compiled checks every index it reads or writes itself.

    Inductor's generated code asserts that each indirect index is inside its dimension
    (``torch._inductor.config.assert_indirect_indexing``, on by default; the error is a
    RuntimeError "index out of bounds: 0 <= tmp3 < 4"), and torch's own kernels, which
    Dynamo's other backends run, raise for one (RuntimeError "index 5 is out of bounds
    ..."). ``torch.export`` keeps the operator :func:`_out_of_range` instead: an exported
    program runs where neither may hold.
    """
    if torch.compiler.is_exporting():
        return False
    from torch._inductor import config

    return bool(config.assert_indirect_indexing)


def guarded(indices: torch.Tensor, plan: Plan) -> torch.Tensor:
    """Under ``torch.compile``: indices counted from the end, their range checked in the graph.

    Where the compiler checks every index its kernels read (:func:`_compiler_checks_indexing`)
    the indices are only counted from the end: an index out of range stays out of range
    (one below ``-size`` becomes ``size``: inductor counts a negative index of
    ``index_select`` and advanced indexing from the end again) and the compiled gather's
    own check raises for it; inductor fuses the counting into the gather, so a checked call
    costs what the native one costs. Its error cannot name the value or its position.

    Elsewhere (``torch.export``) a reduction finds whether any index is out of range and
    only then does the graph run :func:`_out_of_range` (``torch.cond``), which raises the
    eager IndexError; what the kernel reads depends on the check, so the compiler can
    neither drop it nor run the kernel before it. Where each index serves one output
    (GatherElements, GatherND of elements) the counting is fused into that kernel, with
    the branch's zero added; where it serves a row of them, the cond hands over the
    counted indices (adding the count and the zero inside slowed inductor's row copies:
    it recomputes an index for every vector of the row; docs/performance.md).
    """
    if _compiler_checks_indexing():
        wide = indices.to(torch.int64)
        sizes: Any = plan.size
        if plan.coordinates and all(type(size) is int for size in plan.sizes):
            # A constant of the graph, which inductor writes into its kernel as numbers
            # (a stack of 0-d tensors was a buffer and two views made on every call, which
            # slowed graphs of many GatherND calls: docs/performance.md).
            sizes = torch.tensor(plan.sizes, dtype=torch.int64, device=wide.device)
        elif plan.coordinates:  # (symbolic sizes: one 0-d tensor each, stacked)
            sizes = torch.stack([wide.new_full((), size) for size in plan.sizes])
        # Below -size, size: out of range upward, never a negative index that a kernel
        # (inductor's index_select and advanced indexing) would count from the end again.
        return torch.where(wide < 0, torch.where(wide < -sizes, sizes, wide + sizes), wide)
    bad = torch.any(plan.outside(indices, xp))
    # The sizes go to the branch as a tensor operand, not as numbers it captures: inductor
    # fails on a branch that captured sizes that later became numbers (a tensor of
    # several sizes makes symbolic ones numbers), in its FakeTensorUpdater: "A subgraph
    # argument other than striding has been modified" (pytorch/pytorch#156819).
    # (One per coordinate, else one for every index: 0-d, so it broadcasts to any shape.)
    stacked = (
        torch.stack([indices.new_full((), size, dtype=torch.int64) for size in plan.sizes])
        if plan.coordinates
        else indices.new_full((), plan.size, dtype=torch.int64)
    )
    rule = (plan.op, plan.axis, plan.coordinates)
    if math.prod(plan.out_shape) > math.prod(indices.shape):  # rows
        return torch.cond(
            bad, lambda i, s: _counted_or_out_of_range(i, s, *rule), _counted_by, (indices, stacked)
        )
    zero = torch.cond(
        bad, lambda i, s: _out_of_range(i, s, *rule), _no_index_out_of_range, (indices, stacked)
    )
    return _counted_by(indices, stacked) + zero


def placed(indices: Array, data: torch.Tensor, plan: Plan) -> torch.Tensor:
    """Indices on ``data``'s device in ``[0, size)`` (see :func:`checked_or_clamped`).

    Host indices are checked on the host, before they travel: no device synchronisation
    (they keep their int32 or int64 type, which torch's kernels take). Traced indices are
    checked in the graph: under ``torch.compile`` by :func:`guarded`, under ``torch.func``
    by ``onnx_gather::checked_indices_v1`` (:func:`_checked_indices`).
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
        return normalise_indices(xp, indices, plan, BoundsPolicy.CLAMP).to(torch.int64)
    if plan.check_bounds and torch.compiler.is_compiling():
        return guarded(indices, plan)
    if plan.check_bounds and values_unknown(indices):
        return _checked_indices(indices, plan.op, plan.axis, plan.sizes, plan.coordinates)
    return checked_or_clamped(indices, plan)
