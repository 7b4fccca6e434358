"""TensorScatter in torch's operations: eager (checked on the host), and in a compiled graph."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import torch

if TYPE_CHECKING:
    from onnx_gather._spec.tensor_scatter import TensorScatterPlan

#: Types ``index_put`` has no kernel for: written as the signed integers of their width.
_AS_SIGNED = {torch.uint16: torch.int16, torch.uint32: torch.int32, torch.uint64: torch.int64}


def eager(
    data: torch.Tensor, updates: torch.Tensor, indices: torch.Tensor, plan: TensorScatterPlan
) -> torch.Tensor:
    """The present cache as a new tensor: the write indices read once (one host sync).

    One ``index_put`` of every update (each batch entry's positions are distinct), on
    views that put the batch and sequence axes first; autograd records it as torch's own
    (the gradient goes to the update at the written positions, to the cache elsewhere).
    Unchecked, the writes outside the axis are left out (a boolean mask: eager only).
    """
    starts = indices.detach().to(torch.int64).reshape(-1)
    if plan.check_bounds:
        plan.raise_if_bad(np.array(starts.tolist(), dtype=np.int64))
    result = data.clone(memory_format=torch.contiguous_format)
    write(result, updates, starts, plan, masked=not plan.check_bounds)
    return result


def write(
    result: torch.Tensor,
    updates: torch.Tensor,
    starts: torch.Tensor,
    plan: TensorScatterPlan,
    masked: bool,
) -> None:
    """Write ``updates`` into ``result`` in place at the write indices ``starts`` (int64)."""
    offsets = torch.arange(plan.length, device=starts.device)
    positions, keep = plan.positions(starts, offsets, torch)
    signed = _AS_SIGNED.get(result.dtype)
    if signed is not None:
        result, updates = result.view(signed), updates.view(signed)
    target = result.movedim(plan.axis, 1)
    source = updates.movedim(plan.axis, 1)
    batch = torch.arange(starts.shape[0], device=starts.device)[:, None].expand(positions.shape)
    if masked:
        target[batch[keep], positions[keep]] = source[keep]
    else:
        target[batch, positions] = source


def in_graph(
    data: torch.Tensor, updates: torch.Tensor, indices: torch.Tensor, plan: TensorScatterPlan
) -> torch.Tensor:
    """Under ``torch.compile``: the same writes as torch operations, the check in the graph.

    No value can be read while Dynamo traces. Checked, a bad write index sends every
    write out of the axis, so the compiled ``index_put``'s own bounds check raises on the
    first one, before anything is written (its message cannot name the value).
    Unchecked, the writes that fall outside go to one extra position past the axis, cut
    off afterwards (a mask would give the graph a data-dependent shape).
    """
    signed = _AS_SIGNED.get(data.dtype)
    if signed is not None:
        unsigned = data.dtype
        return in_graph(data.view(signed), updates.view(signed), indices, plan).view(unsigned)
    starts = indices.to(torch.int64).reshape(-1)
    offsets = torch.arange(plan.length, device=starts.device)
    positions, keep = plan.positions(starts, offsets, torch)
    batch = torch.arange(starts.shape[0], device=starts.device)[:, None]
    source = updates.movedim(plan.axis, 1)
    if plan.check_bounds:
        bad = torch.any(plan.bad(starts))
        positions = torch.where(bad, plan.size, positions)
        target = data.movedim(plan.axis, 1).index_put((batch, positions), source)
        return target.movedim(1, plan.axis)
    spare = data.movedim(plan.axis, 1)
    widened = torch.cat([spare, spare[:, :1]], dim=1)
    positions = torch.where(keep, positions, plan.size)
    written = widened.index_put((batch, positions), source)
    return written[:, : plan.size].movedim(1, plan.axis).contiguous()


def gradients(
    grad: torch.Tensor, updates: torch.Tensor, indices: torch.Tensor, plan: TensorScatterPlan
) -> tuple[torch.Tensor, torch.Tensor]:
    """The gradients to the cache and the update (the recorded operator's backward).

    The update's: the upstream gradient at the positions its slices were written to (0
    for a dropped write); the cache's: the upstream gradient where nothing was written.
    """
    starts = indices.to(torch.int64).reshape(-1)
    offsets = torch.arange(plan.length, device=starts.device)
    positions, keep = plan.positions(starts, offsets, torch)
    batch = torch.arange(starts.shape[0], device=starts.device)[:, None].expand(positions.shape)
    upstream = grad.movedim(plan.axis, 1)
    read = upstream[batch, torch.where(keep, positions, 0)]
    mask = keep.reshape(*keep.shape, *([1] * (read.dim() - 2)))
    update_grad = torch.where(mask, read, torch.zeros_like(read)).movedim(1, plan.axis)
    data_grad = upstream.clone()
    data_grad[batch[keep], positions[keep]] = 0
    return data_grad.movedim(1, plan.axis), update_grad.reshape(updates.shape)
