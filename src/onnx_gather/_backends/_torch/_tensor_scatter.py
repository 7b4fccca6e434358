"""TensorScatter in torch's operations: eager (checked on the host), and in a compiled graph."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import torch

from onnx_gather._backends._torch._dtypes import SIGNED
from onnx_gather._backends._torch._views import shares_memory

if TYPE_CHECKING:
    from onnx_gather._spec.tensor_scatter import TensorScatterPlan


def eager(
    data: torch.Tensor, updates: torch.Tensor, indices: torch.Tensor, plan: TensorScatterPlan
) -> torch.Tensor:
    """The present cache as a new tensor (:func:`write` into a copy of the cache)."""
    result = data.clone(memory_format=torch.contiguous_format)
    write(result, updates, plan.checked_starts(indices), plan)
    return result


def into(
    out: torch.Tensor,
    data: torch.Tensor,
    updates: torch.Tensor,
    starts: list[int],
    plan: TensorScatterPlan,
) -> None:
    """``out`` holding data with the writes (:func:`write`): only they where ``out`` is data.

    Updates that share memory with ``out`` are read (copied) first, as is data that
    ``out`` overlaps without being it. Nothing here is recorded for autograd.
    """
    if shares_memory(out, updates):
        updates = updates.clone()
    if out is not data:
        out.copy_(data.clone() if shares_memory(out, data) else data)
    write(out, updates, starts, plan)


def write(
    result: torch.Tensor, updates: torch.Tensor, starts: list[int], plan: TensorScatterPlan
) -> None:
    """Write ``updates`` into ``result`` in place at the host write indices ``starts``.

    One ``index_put`` of every update (each batch entry's positions are distinct), its
    index made on the host, where ``starts`` already are (a handful of tiny device
    operations cost more than the write); autograd records it as torch's own (the
    gradient goes to the update at the written positions, to the cache elsewhere).
    Unchecked, the writes outside the axis are left out.
    """
    same = plan.one_slice(starts)
    if same is not None:  # (narrow and copy_: a third of what indexing with slices costs)
        written = same[plan.axis]
        result.narrow(plan.axis, written.start, plan.length).copy_(updates)
        return
    # Types index_put has no kernel for (nor, on CUDA, boolean-mask indexing: "index_cuda"
    # not implemented for 'UInt16') go as the signed integers of their width, before
    # any indexing.
    signed = SIGNED.get(result.dtype)
    if signed is not None:
        result, updates = result.view(signed), updates.view(signed)
    host = np.array(starts, dtype=np.int64)
    positions, keep = plan.positions(host, np.arange(plan.length), np)
    batch = np.arange(host.size)[:, None]
    source = updates.movedim(plan.axis, 1)  # (batch, length, *others): the update's
    if not plan.check_bounds:
        batch, positions = np.broadcast_to(batch, positions.shape)[keep], positions[keep]
        source = source[torch.from_numpy(keep).to(source.device)]
    device = result.device
    index = plan.target(torch.from_numpy(batch).to(device), torch.from_numpy(positions).to(device))
    result[index] = source


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
    signed = SIGNED.get(data.dtype)
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
        result = data.clone()
        result[plan.target(batch, positions)] = source
        return result
    spare = data.narrow(plan.axis, 0, 1)
    widened = torch.cat([data, spare], dim=plan.axis)
    positions = torch.where(keep, positions, plan.size)
    widened[plan.target(batch, positions)] = source
    return widened.narrow(plan.axis, 0, plan.size).contiguous()


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
