"""PyTorch, CPU and CUDA: ``torch.index_select`` for Gather, ``torch.gather`` for GatherElements.

Both kernels want non-negative int64 indices, so negative ones are normalised into a new
tensor (the caller's is never touched). ``torch.gather`` has no kernels for uint16/32/64
(pytorch/pytorch#58734), so those are gathered through a same-width signed view: the bits
move unchanged.

``torch.gather`` on CPU also rewrites bfloat16 NaN payloads to 0xFFFF (torch 2.13.0; seen
here with a 2-D gather along either axis, while ``index_select`` and float16/float32 keep
the bits; no upstream report found), and quiets float16 signalling NaNs (0x7C01 comes back
as 0x7E01; torch 2.13.0, seen with 2-D and with strided 1-D data, found by the conformance
campaign; no upstream report found); under ``torch.func.vmap`` ``index_select`` quiets
float16 NaNs too. bfloat16 and float16 are therefore gathered as int16 bits by both
operators; where autograd needs a gradient, through an ``autograd.Function`` whose backward
is the scatter-add (double backward included).

Under ``torch.compile`` and ``torch.func`` transforms the index values cannot be read while
tracing, so the bounds check goes into the graph as the custom operator
``onnx_gather::checked_indices``: opaque to the compiler, it runs on the real indices when
the graph runs, raises the same IndexError as an eager call (one host synchronisation, as
eagerly) and returns them normalised, so no index is read unchecked.

On the CPU, plain tensors outside autograd and tracing run the NumPy backend's compiled
one-pass kernel on zero-copy views of the tensors, into a tensor torch allocates: it
checks, counts negatives from the end and copies in one pass, on any strides (a view is
never copied), and was faster than ``torch.gather``/``index_select`` plus the separate
range pass they need (docs/benchmarks.md). Without the compiled kernel, large
GatherElements off the last axis runs the pure-NumPy blocked kernel the same way. Large
CUDA calls run one fused Triton kernel where triton is installed (``_triton``).
Elsewhere (CUDA, autograd, tracing) the indices are checked with one ``aminmax`` (one
host synchronisation), normalised, and given to torch's kernels.
"""

from __future__ import annotations

import math
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
# What torch's kernels gather bits of (see _exact).
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


#: Without the compiled kernel, the outputs from which GatherElements off the last axis
#: runs NumPy's blocked kernel on views of the tensors: torch.gather along a leading axis
#: took 1.5-3x its time (2 cores); elsewhere torch's kernels are as fast.
_FALLBACK_FROM = 1 << 13


def _numpy_route(data: torch.Tensor, indices: Any, plan: Plan) -> bool:
    """Whether a call runs the NumPy backend's kernels on zero-copy views of the tensors.

    Always where the compiled kernel was built (one pass, faster than torch's kernels and
    their separate range pass); without it only where NumPy's pure kernels beat torch's.
    """
    if not numpy_kernels.compiled_available() and not (
        plan.elements
        and plan.axis != len(plan.out_shape) - 1
        and math.prod(plan.out_shape) >= _FALLBACK_FROM
    ):
        return False
    return (
        type(data) is torch.Tensor
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
    if indices.is_meta:  # no values to check (data is on meta too: nothing is read)
        indices = indices.to(torch.int64)
        return torch.where(indices < 0, indices + plan.size, indices)
    if plan.check_bounds and _values_unknown(indices):
        return _checked_indices(indices, plan.op, plan.elements, plan.axis, plan.size)
    return _counted(indices, plan)


def _check_servable(data: torch.Tensor, indices: Any) -> None:
    """TypeError for tensors torch's kernels would answer wrongly or with a raw error.

    Sparse, compressed or MKL-DNN layouts (a sparse COO result from Gather, torch's
    NotImplementedError elsewhere), and indices on the meta device, which hold no values
    to read, with data that does (on the meta device both are fine: nothing is read).
    Called off the compiled route only, which takes strided CPU tensors alone.
    """
    for name, x in (("data", data), ("indices", indices)):
        if isinstance(x, torch.Tensor) and x.layout != torch.strided:
            msg = f"{name} is a tensor of layout {x.layout}; only strided (dense) tensors are supported"
            raise TypeError(msg)
    if isinstance(indices, torch.Tensor) and indices.is_meta and not data.is_meta:
        msg = (
            f"indices are on the meta device, which holds no values, but data is on "
            f"{data.device}; pass indices on {data.device}, as a NumPy array or as Python ints"
        )
        raise TypeError(msg)


def _exact(data: torch.Tensor, axis: int, indices: torch.Tensor, elements: bool) -> torch.Tensor:
    """``torch.gather`` (``elements``) or ``torch.index_select``, bit for bit.

    Unsigned types go through their signed view (no kernels), float16 and bfloat16 through
    int16: ``torch.gather`` rewrites their NaN payloads, and so does ``index_select`` under
    ``torch.func.vmap`` (float16 0x7C01 comes back as 0x7E01; torch 2.13.0). A float view
    of another type has no gradient, so data that needs one goes through :class:`_BitsGather`.
    """
    view = _GATHER_VIEW.get(data.dtype)
    if view is not None and data.requires_grad and data.dtype.is_floating_point:
        out: torch.Tensor = _BitsGather.apply(data, axis, indices, elements)
        return out
    source = data.view(view) if view is not None else data
    if elements:
        out = torch.gather(source, axis, indices)
    else:
        out = torch.index_select(source, axis, indices)
    return out.view(data.dtype) if view is not None else out


class _BitsGather(torch.autograd.Function):  # type: ignore[misc]
    """A float16 or bfloat16 gather that needs a gradient, bit for bit (see :func:`_exact`).

    The forward gathers the int16 bits; the backward is the scatter-add of the gradient,
    made of differentiable operators, so double backward works too.
    """

    generate_vmap_rule = True

    @staticmethod
    def forward(
        data: torch.Tensor, axis: int, indices: torch.Tensor, elements: bool
    ) -> torch.Tensor:
        return _exact(data.detach(), axis, indices, elements)

    @staticmethod
    def setup_context(ctx: Any, inputs: tuple[Any, ...], output: torch.Tensor) -> None:
        data, axis, indices, elements = inputs
        ctx.save_for_backward(indices)
        ctx.axis, ctx.elements, ctx.data_shape = axis, elements, data.shape

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor | None, ...]:
        (indices,) = ctx.saved_tensors
        zeros = grad.new_zeros(ctx.data_shape)
        if ctx.elements:
            return zeros.scatter_add(ctx.axis, indices, grad), None, None, None
        return zeros.index_add(ctx.axis, indices, grad), None, None, None


_TRITON: Any = None


def _triton() -> Any:
    """The fused Triton kernels (``_triton``), or False where triton is not installed.

    Imported once, at the first large call on a CUDA tensor: large CUDA calls run one fused
    kernel (count, check, gather; one 8-byte read back when checked), smaller ones and
    everything else torch's kernels after one ``aminmax``.
    """
    global _TRITON
    if _TRITON is None:
        try:
            from onnx_gather._backends import _triton
        except ImportError:
            _TRITON = False
        else:
            _TRITON = _triton
    return _TRITON


class TorchBackend:
    """The PyTorch backend."""

    name = "torch"

    def owns(self, x: Any, /) -> bool:
        return isinstance(x, torch.Tensor)

    # Under torch.compile (see onnx_gather._api): Dynamo runs this Python symbolically.
    python_traced = staticmethod(torch.compiler.is_compiling)

    @staticmethod
    def host_under_trace(indices: Any) -> torch.Tensor | None:
        """Host indices as a tensor typed as NumPy would type them, under ``torch.compile``.

        Dynamo models a NumPy array as a tensor and cannot read its dtype or flags, so the
        NumPy route of eager calls does not trace; a list or int is a constant to Dynamo,
        and ``torch.tensor`` of it becomes a constant of the graph. The values are then
        checked in the graph, when it runs, like any tensor's.
        """
        if isinstance(indices, (np.ndarray, np.generic)):
            return torch.as_tensor(indices)
        if not isinstance(indices, (int, list, tuple)):
            return None
        tensor = torch.tensor(indices)
        if tensor.is_floating_point():  # NumPy's float64; an empty list is ONNX's int64
            tensor = tensor.to(torch.int64 if tensor.numel() == 0 else torch.float64)
        return tensor

    def shape(self, x: torch.Tensor, /) -> tuple[int, ...]:
        if x.is_nested:  # its sizes are per component: torch raises an "Internal error"
            msg = "nested tensors are not supported; pass a strided (dense) tensor"
            raise TypeError(msg)
        return tuple(x.shape)

    def dtype_name(self, x: torch.Tensor, /) -> str:
        return _NAMES.get(x.dtype, str(x.dtype).removeprefix("torch."))

    def gather(self, data: torch.Tensor, indices: Any, plan: Plan, /) -> torch.Tensor:
        if _numpy_route(data, indices, plan):
            return self._on_numpy(numpy_kernels.gather, data, indices, plan)
        if data.is_cuda and (fused := _triton()) and fused.serves(data, indices, plan):
            return fused.gather(data, indices, plan)
        _check_servable(data, indices)
        indices = _placed(indices, data, plan)
        out = _exact(data, plan.axis, indices.reshape(-1), False)
        return out.reshape(plan.out_shape) if indices.dim() != 1 else out

    def gather_elements(self, data: torch.Tensor, indices: Any, plan: Plan, /) -> torch.Tensor:
        if _numpy_route(data, indices, plan):
            return self._on_numpy(numpy_kernels.gather_elements, data, indices, plan)
        if data.is_cuda and (fused := _triton()) and fused.serves(data, indices, plan):
            return fused.gather_elements(data, indices, plan)
        _check_servable(data, indices)
        indices = _placed(indices, data, plan)
        return _exact(data if plan.trim is None else data[plan.trim], plan.axis, indices, True)

    @staticmethod
    def _on_numpy(
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
