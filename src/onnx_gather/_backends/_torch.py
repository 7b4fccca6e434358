"""PyTorch, CPU and CUDA: ``torch.index_select`` for Gather, ``torch.gather`` for GatherElements.

Both kernels want non-negative int64 indices, so negative ones are normalised into a new
tensor (the caller's is never touched). ``torch.gather`` has no kernels for uint16/32/64
(pytorch/pytorch#58734), so those are gathered through a same-width signed view: the bits
move unchanged.

``torch.gather`` on CPU also rewrites bfloat16 NaN payloads to 0xFFFF (torch 2.13.0; seen
here with a 2-D gather along either axis, while ``index_select`` and float16/float32 keep
the bits; no upstream report found), and quiets float16 signalling NaNs (0x7C01 comes back
as 0x7E01; torch 2.13.0, seen with 2-D and with strided 1-D data, found by the conformance
campaign; no upstream report found). bfloat16 and float16 GatherElements therefore go
through an int16 view too, unless autograd needs the float graph.

Under ``torch.compile`` and ``torch.func`` transforms the index values cannot be read while
tracing, so the bounds check goes into the graph as the custom operator
``onnx_gather::checked_indices``: opaque to the compiler, it runs on the real indices when
the graph runs, raises the same IndexError as an eager call (one host synchronisation, as
eagerly) and returns them normalised, so no index is read unchecked.

On the CPU, plain tensors outside autograd and tracing run the NumPy backend's compiled
one-pass kernel on zero-copy views of the tensors, into a tensor torch allocates: it
checks, counts negatives from the end and copies in one pass, on any strides (a view is
never copied), and was faster than ``torch.gather``/``index_select`` plus the separate
range pass they need (docs/benchmarks.md). Elsewhere (CUDA, autograd, tracing, or no
compiled kernel) the indices are checked with one ``aminmax`` (one host synchronisation),
normalised, and given to torch's kernels.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from onnx_gather import _host, _spec
from onnx_gather._backends import _numpy as numpy_kernels

if TYPE_CHECKING:
    from collections.abc import Callable

    from onnx_gather._spec import Plan

_NAMES: dict[torch.dtype, str] = {
    torch.bool: "bool",
    torch.int8: "int8",
    torch.int16: "int16",
    torch.int32: "int32",
    torch.int64: "int64",
    torch.uint8: "uint8",
    torch.uint16: "uint16",
    torch.uint32: "uint32",
    torch.uint64: "uint64",
    torch.float16: "float16",
    torch.bfloat16: "bfloat16",
    torch.float32: "float32",
    torch.float64: "float64",
    torch.complex64: "complex64",
    torch.complex128: "complex128",
}
_SIGNED_VIEW = {torch.uint16: torch.int16, torch.uint32: torch.int32, torch.uint64: torch.int64}
_GATHER_VIEW = {**_SIGNED_VIEW, torch.bfloat16: torch.int16, torch.float16: torch.int16}
# Same-width types NumPy holds bit for bit, for the zero-copy route to the compiled kernel.
_NUMPY_VIEW = {**_SIGNED_VIEW, torch.bfloat16: torch.int16}


# A tensor inside a torch.func transform (vmap, grad), whose values cannot be read.
_wrapped = torch._C._functorch.is_functorch_wrapped_tensor


def _values_unknown(x: torch.Tensor) -> bool:
    """Whether reading ``x``'s values now would break a trace (torch.compile, torch.func)."""
    return torch.compiler.is_compiling() or bool(_wrapped(x))


def _index_range(indices: torch.Tensor) -> tuple[int, int]:
    """The smallest and largest of non-empty ``indices``: one fused pass, one host sync."""
    lo, hi = torch.aminmax(indices.detach())
    if indices.device.type == "cpu":
        return int(lo), int(hi)
    # Two .item() calls would synchronise twice; one transfer of both ends syncs once.
    both: list[int] = torch.stack((lo, hi)).tolist()
    return both[0], both[1]


def _counted(indices: torch.Tensor, plan: Plan) -> torch.Tensor:
    """Indices as int64 in ``[0, size)``: checked (``_spec``'s IndexError) or clamped.

    One ``aminmax`` and one host synchronisation when checked; none when not, where an
    index out of range is clamped into the axis: it must never reach a CUDA kernel, whose
    answer is a device-side assert that kills the process' CUDA context.
    """
    size = plan.size
    if plan.check_bounds:
        if indices.numel():
            lo, hi = _index_range(indices)
            _spec.check_range(plan, lo, hi, lambda: indices.detach().cpu().numpy())
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
    """Under tracing: :func:`_counted` with the check, as an operator opaque to the compiler.

    It runs on the real indices when the graph runs and raises the same IndexError as an
    eager call. The arguments are the fields of the call's Plan that its message names.
    """
    plan = _spec.Plan(
        op=op, elements=elements, axis=axis, size=size, out_shape=(), check_bounds=True
    )
    return _counted(indices, plan).clone()  # a custom op's output never aliases its input


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


def _compiled_route(data: torch.Tensor, indices: Any) -> bool:
    """Whether a call runs the compiled NumPy kernel on zero-copy views of the tensors."""
    return (
        numpy_kernels.compiled_available()
        and type(data) is torch.Tensor
        and not _values_unknown(data)  # first: what follows must not be traced
        and data.is_cpu
        and data.layout == torch.strided
        and not (data.requires_grad and torch.is_grad_enabled())
        and not data.is_conj()
        and not data.is_neg()
        and (
            isinstance(indices, np.ndarray)
            or (
                type(indices) is torch.Tensor
                and not _wrapped(indices)
                and indices.is_cpu
                and indices.layout == torch.strided
            )
        )
    )


def _as_numpy(x: torch.Tensor) -> np.ndarray:
    """A zero-copy NumPy view of a CPU tensor (same-width integers for unsigned, bfloat16)."""
    view = _NUMPY_VIEW.get(x.dtype)
    if view is not None:
        x = x.view(view)
    return (x.detach() if x.requires_grad else x).numpy()


def _placed(indices: Any, data: torch.Tensor, plan: Plan) -> torch.Tensor:
    """Indices on ``data``'s device as int64 in ``[0, size)`` (see :func:`_counted`).

    Host indices are checked on the host, before they travel: no device synchronisation.
    Traced indices are checked in the graph by ``onnx_gather::checked_indices``.
    """
    if isinstance(indices, np.ndarray):
        counted = _host.checked(plan, indices)
        if not counted.flags.writeable or counted.base is not None or counted is indices:
            # torch.as_tensor shares memory (and warns on read-only arrays): a copy keeps
            # the caller's array unaliased; it also drops negative strides torch rejects.
            counted = counted.copy()
        return torch.as_tensor(counted, device=data.device)
    if indices.device != data.device:
        indices = indices.to(data.device, non_blocking=True)
    if plan.check_bounds and _values_unknown(indices):
        return _checked_indices(indices, plan.op, plan.elements, plan.axis, plan.size)
    return _counted(indices, plan)


class TorchBackend:
    """The PyTorch backend."""

    name = "torch"

    def owns(self, x: Any, /) -> bool:
        return isinstance(x, torch.Tensor)

    def shape(self, x: torch.Tensor, /) -> tuple[int, ...]:
        return tuple(x.shape)

    def dtype_name(self, x: torch.Tensor, /) -> str:
        return _NAMES.get(x.dtype, str(x.dtype).removeprefix("torch."))

    def gather(self, data: torch.Tensor, indices: Any, plan: Plan, /) -> torch.Tensor:
        if _compiled_route(data, indices):
            return self._compiled(numpy_kernels.gather, data, indices, plan)
        indices = _placed(indices, data, plan)
        signed = _SIGNED_VIEW.get(data.dtype)
        source = data.view(signed) if signed is not None else data
        out = torch.index_select(source, plan.axis, indices.reshape(-1))
        if indices.dim() != 1:
            out = out.reshape(plan.out_shape)
        return out.view(data.dtype) if signed is not None else out

    def gather_elements(self, data: torch.Tensor, indices: Any, plan: Plan, /) -> torch.Tensor:
        if _compiled_route(data, indices):
            return self._compiled(numpy_kernels.gather_elements, data, indices, plan)
        indices = _placed(indices, data, plan)
        signed = _GATHER_VIEW.get(data.dtype)
        if signed is not None and data.requires_grad and data.dtype.is_floating_point:
            signed = None  # keep the autograd graph; NaN payloads may then be canonicalised
        source = data.view(signed) if signed is not None else data
        if plan.trim is not None:
            source = source[plan.trim]
        out = torch.gather(source, plan.axis, indices)
        return out.view(data.dtype) if signed is not None else out

    @staticmethod
    def _compiled(
        kernel: Callable[[Any, np.ndarray, Plan, np.ndarray], Any],
        data: torch.Tensor,
        indices: Any,
        plan: Plan,
    ) -> torch.Tensor:
        """``kernel`` on views of the tensors, into a tensor torch allocates.

        The memory is torch's own, so the result behaves like any tensor (resizable, too).
        """
        if plan.elements and type(indices) is torch.Tensor:
            # Faster than torch.empty; C order whatever the indices' strides.
            out = torch.empty_like(indices, dtype=data.dtype, memory_format=torch.contiguous_format)
        else:
            out = torch.empty(plan.out_shape, dtype=data.dtype)
        host = indices if isinstance(indices, np.ndarray) else indices.numpy()
        kernel(_as_numpy(data), host, plan, _as_numpy(out))
        return out


backend = TorchBackend()
