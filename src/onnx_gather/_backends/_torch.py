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

Speed on the CPU (measured with ``python -m benchmarks``, see docs/benchmarks.md): the
kernels raise on a bad index themselves, so no range pre-pass runs (``kernel_checks``),
and indices go to the kernel as given, normalised only if it rejects one. Large
GatherElements along any axis but the last, on plain tensors outside autograd and
tracing, runs NumPy's blocked kernel (this package's NumPy backend) on the same memory
through zero-copy views: ``torch.gather`` along a leading axis took 1.5-3x as long as
ONNX Runtime on 2 cores, the NumPy kernel about as long. Along the last axis
``torch.gather`` is as fast as ONNX Runtime and stays, except that indices it rejects as
negative go to NumPy's row-wise ``take``, which counts them from the end itself.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from onnx_gather import _spec
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
# Same-width types NumPy holds bit for bit, for the zero-copy NumPy route.
_NUMPY_VIEW = {**_SIGNED_VIEW, torch.bfloat16: torch.int16}
#: Output elements from which a CPU call takes the NumPy route (below, torch's lower fixed
#: cost wins).
_NUMPY_FROM = 1 << 13
# What the CPU kernels raise for an index out of range (see TorchBackend.kernel_checks).
_KERNEL_ERRORS = (IndexError, RuntimeError)
# torch.gather takes int32 indices from torch 2.8 on (pytorch/pytorch#151822); before, only
# int64 (index_select always took both).
_GATHER_TAKES_INT32 = tuple(int(p) for p in torch.__version__.split(".")[:2]) >= (2, 8)


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


# The host synchronisation inside cannot be captured in a CUDA graph; this tag makes
# inductor keep the operator out of one. Older torch lacks the tag (and may lack
# custom_op's ``tags`` argument).
_TAGS: dict[str, Any] = (
    {"tags": (torch.Tag.cudagraph_unsafe,)} if hasattr(torch.Tag, "cudagraph_unsafe") else {}
)


@torch.library.custom_op("onnx_gather::checked_indices", mutates_args=(), **_TAGS)
def _checked_indices(
    indices: torch.Tensor, op: str, elements: bool, axis: int, size: int, low: int
) -> torch.Tensor:
    """Bounds-check ``indices`` and return them as int64 in ``[0, size)``, never aliased.

    The arguments are the fields of the call's Plan that its IndexError names.
    """
    if indices.numel():
        lo, hi = _index_range(indices)
        plan = _spec.Plan(
            op=op, elements=elements, axis=axis, size=size, low=low, out_shape=(), check_bounds=True
        )  # out_shape plays no part in the message
        _spec.check_range(plan, lo, hi, lambda: indices.cpu().numpy())
    indices = indices.to(torch.int64)
    return torch.where(indices < 0, indices + size, indices)


@_checked_indices.register_fake
def _checked_indices_fake(
    indices: torch.Tensor, op: str, elements: bool, axis: int, size: int, low: int
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


def _numpy_route(data: torch.Tensor, indices: torch.Tensor, outputs: int) -> bool:
    """Whether a call of ``outputs`` elements runs NumPy's kernels on views of the tensors."""
    return (
        outputs >= _NUMPY_FROM
        and type(data) is torch.Tensor
        and type(indices) is torch.Tensor
        and data.is_cpu
        and indices.is_cpu
        and not (data.requires_grad and torch.is_grad_enabled())
        and not data.is_conj()
        and not data.is_neg()
        and not _values_unknown(data)
        and not _wrapped(indices)
    )


def _as_numpy(x: torch.Tensor) -> np.ndarray:
    view = _NUMPY_VIEW.get(x.dtype)
    return (x.view(view) if view is not None else x).detach().numpy()


def _empty_for(data: torch.Tensor, plan: Plan) -> tuple[torch.Tensor, np.ndarray]:
    """A new tensor for the result and its NumPy view, which the NumPy kernels fill.

    The memory is torch's own, so the result behaves like any tensor (resizable, too).
    """
    out = torch.empty(plan.out_shape, dtype=data.dtype)
    return out, _as_numpy(out)


def _unless_rejected(
    kernel: Callable[[torch.Tensor, torch.Tensor, Plan], torch.Tensor],
    data: torch.Tensor,
    indices: torch.Tensor,
    plan: Plan,
) -> torch.Tensor | None:
    """``kernel`` on the indices as given, or None if it rejected one to normalise and retry.

    The CPU kernels reject an index outside ``[0, s)``. Where the version counts negative
    indices from the end they may be normalised and the call retried; where it does not
    (Gather-1, OpenVINO-6) a rejected index is out of range, and the error stands for
    ``_api`` to rebuild.
    """
    try:
        return kernel(data, indices, plan)
    except _KERNEL_ERRORS:
        if plan.check_bounds and not plan.negative_allowed:
            raise
        return None


class TorchBackend:
    """The PyTorch backend."""

    name = "torch"

    def owns(self, x: Any, /) -> bool:
        return isinstance(x, torch.Tensor)

    def shape(self, x: torch.Tensor, /) -> tuple[int, ...]:
        return tuple(x.shape)

    def dtype_name(self, x: torch.Tensor, /) -> str:
        return _NAMES.get(x.dtype, str(x.dtype).removeprefix("torch."))

    def from_host(self, indices: np.ndarray, data: torch.Tensor, /) -> torch.Tensor:
        if not indices.flags.writeable or any(stride < 0 for stride in indices.strides):
            # torch warns on read-only arrays it would share; we only read them, but copy
            # rather than share memory we promised not to alias. torch.as_tensor rejects
            # negative strides (a reversed NumPy view) outright.
            indices = indices.copy()
        return torch.as_tensor(indices, device=data.device)

    def adopt(self, indices: torch.Tensor, data: torch.Tensor, /) -> torch.Tensor:
        if indices.is_cpu and data.is_cpu:  # the common case, without building devices
            return indices
        if indices.device != data.device:
            return indices.to(data.device, non_blocking=True)
        return indices

    def index_range(self, indices: torch.Tensor, /) -> tuple[int, int] | None:
        if _values_unknown(indices):
            return None  # the kernel checks them in the graph: see _checked_indices
        return _index_range(indices)

    def to_host(self, indices: torch.Tensor, /) -> np.ndarray:
        return indices.detach().cpu().numpy()

    @staticmethod
    def _prepare(indices: torch.Tensor, plan: Plan, negative: bool) -> torch.Tensor:
        if negative and plan.check_bounds and _values_unknown(indices):
            # Unknown values always arrive with negative=True; eager calls were checked.
            return _checked_indices(indices, plan.op, plan.elements, plan.axis, plan.size, plan.low)
        if indices.dtype != torch.int64:
            indices = indices.to(torch.int64)
        if negative:
            indices = torch.where(indices < 0, indices + plan.size, indices)
        if not plan.check_bounds and indices.device.type != "cpu":
            # Unchecked indices must never reach a CUDA kernel out of range: that is a
            # device-side assert, which kills the process' CUDA context. Clamping makes no
            # host synchronisation.
            indices = indices.clamp(0, max(plan.size - 1, 0))
        return indices

    def kernel_checks(
        self, plan: Plan, data: torch.Tensor, indices: Any, /
    ) -> tuple[type[Exception], ...]:
        """On the CPU both kernels raise for an index outside ``[0, s)``, negatives included.

        ``index_select`` raises IndexError, ``gather`` RuntimeError; :mod:`onnx_gather._api`
        then builds the IndexError from the indices, so an eager CPU call makes no range
        pre-pass. Not on CUDA (a bad index is a device-side assert) nor while tracing.
        """
        if (
            not data.is_cpu
            or _values_unknown(data)
            or (isinstance(indices, torch.Tensor) and _wrapped(indices))
        ):
            return ()
        return _KERNEL_ERRORS

    @staticmethod
    def _as_given(indices: torch.Tensor) -> bool:
        # On the CPU the indices first go to the kernel as they are: it raises if one is
        # negative or out of range, and only then are they normalised (int64, negatives
        # counted from the end) and run again. Most calls hold no negative index and so
        # skip that pass; a call that does pays for a kernel that stops at its first one.
        return indices.is_cpu and not _values_unknown(indices)

    def gather(
        self, data: torch.Tensor, indices: torch.Tensor, plan: Plan, negative: bool, /
    ) -> torch.Tensor:
        if self._as_given(indices):
            out = _unless_rejected(self._index_select, data, indices, plan)
            if out is not None:
                return out
        return self._index_select(data, self._prepare(indices, plan, negative), plan)

    @staticmethod
    def _index_select(data: torch.Tensor, indices: torch.Tensor, plan: Plan) -> torch.Tensor:
        signed = _SIGNED_VIEW.get(data.dtype)
        source = data.view(signed) if signed is not None else data
        if indices.dim() == 1:
            out = torch.index_select(source, plan.axis, indices)
        else:
            out = torch.index_select(source, plan.axis, indices.reshape(-1)).reshape(plan.out_shape)
        return out.view(data.dtype) if signed is not None else out

    def gather_elements(
        self, data: torch.Tensor, indices: torch.Tensor, plan: Plan, negative: bool, /
    ) -> torch.Tensor:
        via_numpy = _numpy_route(data, indices, indices.numel())
        if via_numpy and plan.axis != data.dim() - 1:
            return self._numpy_gather_elements(data, indices, plan, negative)
        if self._as_given(indices) and (indices.dtype == torch.int64 or _GATHER_TAKES_INT32):
            out = _unless_rejected(self._gather, data, indices, plan)
            if out is not None:
                return out
            if via_numpy:
                # Negative indices: NumPy's row-wise take counts them from the end itself,
                # where torch would need a torch.where pass first (measured 2x slower).
                return self._numpy_gather_elements(data, indices, plan, negative)
        return self._gather(data, self._prepare(indices, plan, negative), plan)

    @staticmethod
    def _numpy_gather_elements(
        data: torch.Tensor, indices: torch.Tensor, plan: Plan, negative: bool
    ) -> torch.Tensor:
        out, view = _empty_for(data, plan)
        numpy_kernels.gather_elements(_as_numpy(data), _as_numpy(indices), plan, negative, view)
        return out

    @staticmethod
    def _gather(data: torch.Tensor, indices: torch.Tensor, plan: Plan) -> torch.Tensor:
        signed = _GATHER_VIEW.get(data.dtype)
        if signed is not None and data.requires_grad and data.dtype.is_floating_point:
            signed = None  # keep the autograd graph; NaN payloads may then be canonicalised
        source = data.view(signed) if signed is not None else data
        if plan.trim is not None:
            source = source[plan.trim]
        out = torch.gather(source, plan.axis, indices)
        return out.view(data.dtype) if signed is not None else out


backend = TorchBackend()
