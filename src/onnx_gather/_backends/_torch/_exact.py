"""Torch's gathers, bit for bit: ``torch.gather`` and ``torch.index_select`` made exact."""

from __future__ import annotations

from typing import Any

import torch

from onnx_gather._backends._torch._dtypes import SIGNED

# What torch's kernels gather bits of.
_GATHER_VIEW = {**SIGNED, torch.bfloat16: torch.int16, torch.float16: torch.int16}


def exact(data: torch.Tensor, axis: int, indices: torch.Tensor, elements: bool) -> torch.Tensor:
    """``torch.gather`` (``elements``) or ``torch.index_select``, bit for bit.

    Some types go as the bits of a same-width integer. Unsigned types: ``torch.gather``
    has no kernels for uint16/32/64 (pytorch/pytorch#58734), so they go through their
    signed view. float16 and bfloat16 go through int16: on CPU ``torch.gather`` rewrites
    bfloat16 NaN payloads to 0xFFFF (with a 2-D gather along either axis, while
    ``index_select`` and float32 keep the bits) and quiets float16 signalling NaNs (0x7C01
    comes back as 0x7E01, with 2-D and strided 1-D data), and under ``torch.func.vmap``
    ``index_select`` quiets float16 NaNs too (torch 2.13.0, found by the conformance
    campaign; no upstream report found). A float view of another type has no gradient, so
    data that needs one goes through :class:`_BitsGather`, whose backward is the
    scatter-add (double backward included).
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
    """A float16 or bfloat16 gather that needs a gradient, bit for bit (see :func:`exact`).

    The forward gathers the int16 bits; the backward is the scatter-add of the gradient,
    made of differentiable operators, so double backward works too.
    """

    generate_vmap_rule = True

    @staticmethod
    def forward(
        data: torch.Tensor, axis: int, indices: torch.Tensor, elements: bool
    ) -> torch.Tensor:
        return exact(data.detach(), axis, indices, elements)

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


def exact_nd(data: torch.Tensor, indices: torch.Tensor, batch_dims: int) -> torch.Tensor:
    """GatherND by advanced indexing of counted ``indices`` (int64, in range), bit for bit.

    ``data[batch aranges..., indices[..., 0], ..., indices[..., k-1]]``: torch reads data
    in place whatever its strides. The types :func:`exact` moves as bits move as bits here
    too (advanced indexing has no unsigned kernels either); data of float16 or bfloat16
    that needs a gradient goes through :class:`_BitsIndex`.
    """
    view = _GATHER_VIEW.get(data.dtype)
    if view is not None and data.requires_grad and data.dtype.is_floating_point:
        out: torch.Tensor = _BitsIndex.apply(data, indices, batch_dims)
        return out
    source = data.view(view) if view is not None else data
    out = source[nd_index(source, indices, batch_dims)]
    return out.view(data.dtype) if view is not None else out


def nd_index(data: torch.Tensor, indices: torch.Tensor, batch_dims: int) -> tuple[Any, ...]:
    """The advanced index of a GatherND: one ``arange`` per batch dim, one tensor per coordinate.

    With 1-D indices (one tuple) the coordinates are made 1-element tensors: 0-d tensors
    index like ints, which would return a view of ``data``.
    """
    if indices.dim() == 1:
        indices = indices.reshape(1, -1)
    lead = indices.shape[:-1]
    batch = [
        torch.arange(n, device=indices.device).reshape(
            [n if e == d else 1 for e in range(len(lead))]
        )
        for d, n in enumerate(lead[:batch_dims])
    ]
    return (*batch, *indices.unbind(-1))


class _BitsIndex(torch.autograd.Function):  # type: ignore[misc]
    """GatherND of float16 or bfloat16 data that needs a gradient, bit for bit.

    The forward indexes the int16 bits; the backward accumulates the gradient at the
    gathered slices (``index_put`` with ``accumulate``), made of differentiable operators,
    so double backward works too.
    """

    generate_vmap_rule = True

    @staticmethod
    def forward(data: torch.Tensor, indices: torch.Tensor, batch_dims: int) -> torch.Tensor:
        return exact_nd(data.detach(), indices, batch_dims)

    @staticmethod
    def setup_context(ctx: Any, inputs: tuple[Any, ...], output: torch.Tensor) -> None:
        data, indices, batch_dims = inputs
        ctx.save_for_backward(indices)
        ctx.batch_dims, ctx.data_shape = batch_dims, data.shape

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor | None, ...]:
        (indices,) = ctx.saved_tensors
        zeros = grad.new_zeros(ctx.data_shape)
        if indices.dim() == 1:
            grad = grad.unsqueeze(0)
        index = nd_index(zeros, indices, ctx.batch_dims)
        return zeros.index_put(index, grad, accumulate=True), None, None
