"""The scatters in torch's own operations: exact on any device, and differentiable.

For what the compiled kernel does not serve (CUDA tensors, autograd, tensors the compiled
kernel is not built for): the same one write as NumPy's (:mod:`.._numpy._scatter`), data
seen as rows and each update aimed at one, in torch operations alone:

* ``none``: each row's last update in C order (``scatter_reduce`` of the update positions
  with ``amax``: the winner does not depend on the order torch applies them in), then one
  ``index_put`` of unique rows, whose order cannot show.
* ``add``, ``mul``, ``max``, ``min``: in rounds. The updates sorted stably by row; round
  ``r`` applies each row's ``r``-th update, all at distinct rows: gather, combine in data's
  dtype (torch rounds float16 and bfloat16 after every operation, as NumPy does), one
  ``index_put``. So every element sees its updates one at a time, in C order, on any
  device; the rounds are as many as the most updates one element gets. Complex products
  are computed part by part in separate operations (no fused multiply-add on any device),
  NaN results made canonical, max and min selected with ``where`` (IEEE 754-2019, the
  first NaN kept): the bits of the compiled kernel (:mod:`onnx_gather._spec.reductions`).

Every operation is out of place, so autograd differentiates the sequence itself: the
gradient of ``none`` goes to each row's winning update and to data where nothing was
written; of ``add`` to both; of ``mul``, ``max`` and ``min`` through each step.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from onnx_gather._backends._base import element_positions, tuple_rows
from onnx_gather._backends._torch._indices import placed, xp
from onnx_gather._indices import DROP, counted

if TYPE_CHECKING:
    from onnx_gather._spec import Plan
    from onnx_gather._spec.scatter_elements import ScatterElementsPlan
    from onnx_gather._spec.scatter_nd import ScatterNDPlan


#: Torch's unsigned types above 8 bits lack most kernels (``index_put`` among them, torch
#: 2.13): they run as the signed type of their width, whose two's-complement add and mul
#: give the same bits; max and min compare with the sign bit flipped.
_SIGNED = {torch.uint16: torch.int16, torch.uint32: torch.int32, torch.uint64: torch.int64}


def scatter_elements(
    data: torch.Tensor, indices: Any, updates: torch.Tensor, plan: ScatterElementsPlan
) -> torch.Tensor:
    """ONNX ScatterElements in torch operations (see the module docstring)."""
    positions, keep = _targets(indices, data, plan)
    rows = element_positions(xp, positions, plan.out_shape, plan.axis, data.device).reshape(-1)
    result = _write(data.reshape(-1), rows, updates.reshape(-1), keep, plan.reduction)
    return result.reshape(plan.out_shape)


def scatter_nd(
    data: torch.Tensor, indices: Any, updates: torch.Tensor, plan: ScatterNDPlan
) -> torch.Tensor:
    """ONNX ScatterND in torch operations (see the module docstring)."""
    positions, keep = _targets(indices, data, plan)
    rows = tuple_rows(xp, positions, plan.sizes, 0, data.device).reshape(-1)
    cells = math.prod(plan.sizes)
    width = math.prod(plan.out_shape[len(plan.sizes) :])
    values = updates.reshape(rows.shape[0], width)
    result = _write(data.reshape(cells, width), rows, values, keep, plan.reduction)
    return result.reshape(plan.out_shape)


def _write(
    target: torch.Tensor, rows: torch.Tensor, values: torch.Tensor, keep: Any, reduction: str
) -> torch.Tensor:
    """:func:`write`, unsigned types through their signed twins (``_SIGNED``)."""
    signed = _SIGNED.get(target.dtype)
    if signed is None:
        return write(target, rows, values, keep, reduction)
    flip = torch.iinfo(signed).min if reduction in ("max", "min") else 0
    result = write(target.view(signed) ^ flip, rows, values.view(signed) ^ flip, keep, reduction)
    return (result ^ flip).view(target.dtype)


def _targets(indices: Any, data: torch.Tensor, plan: Plan) -> tuple[torch.Tensor, Any]:
    """Indices counted from the end on data's device: checked, or with a mask of those kept."""
    if plan.check_bounds:
        return placed(indices, data, plan), None
    if isinstance(indices, np.ndarray):
        indices = torch.as_tensor(indices.copy(), device=data.device)
    elif indices.device != data.device:
        indices = indices.to(data.device)
    positions, keep = counted(xp, indices, plan, DROP)
    return positions.to(torch.int64), keep.reshape(-1)


def write(
    target: torch.Tensor,
    rows: torch.Tensor,
    values: torch.Tensor,
    keep: torch.Tensor | None,
    reduction: str,
) -> torch.Tensor:
    """``target`` with ``values[i]`` applied to row ``rows[i]`` in order; a new tensor.

    ``target`` is 1-D (one element per row) or 2-D; ``keep`` (None: all) marks the updates
    to apply.
    """
    if keep is not None:
        rows, values = rows[keep], values[keep]
    m = rows.shape[0]
    if m == 0:
        return target.clone()
    position = torch.arange(m, device=rows.device)
    if reduction == "none":
        latest = torch.full((target.shape[0],), -1, dtype=torch.int64, device=rows.device)
        latest = latest.scatter_reduce(0, rows, position, "amax")
        last = latest[rows] == position
        return target.index_put((rows[last],), values[last])
    order = torch.argsort(rows, stable=True)
    ranked = rows[order]
    rank = torch.empty_like(position)
    rank[order] = position - torch.searchsorted(ranked, ranked)
    result = target
    for r in range(int(rank.max()) + 1):
        at = torch.nonzero(rank == r).reshape(-1)  # C order; their rows are distinct
        where = rows[at]
        result = result.index_put((where,), combine(reduction, result[where], values[at]))
    return result


def combine(reduction: str, old: torch.Tensor, new: torch.Tensor) -> torch.Tensor:
    """``f(old, new)`` element-wise in their dtype (see the module docstring)."""
    if old.dtype == torch.bool:
        return old | new if reduction in ("add", "max") else old & new
    if old.is_complex():
        return _complex(reduction, old, new)
    if reduction == "add":
        return _canonical(old + new)
    if reduction == "mul":
        return _canonical(old * new)
    if not old.is_floating_point():
        return torch.maximum(old, new) if reduction == "max" else torch.minimum(old, new)
    # IEEE 754-2019: a NaN there stays, a NaN update replaces a number, -0.0 < +0.0.
    if reduction == "max":
        wins = (new > old) | ((new == old) & torch.signbit(old) & ~torch.signbit(new))
    else:
        wins = (new < old) | ((new == old) & ~torch.signbit(old) & torch.signbit(new))
    take = ~torch.isnan(old) & (torch.isnan(new) | wins)
    return torch.where(take, new, old)


def _canonical(x: torch.Tensor) -> torch.Tensor:
    """NaN results as the canonical quiet NaN."""
    if not x.is_floating_point():
        return x
    return torch.where(torch.isnan(x), torch.full_like(x, float("nan")), x)


def _complex(reduction: str, old: torch.Tensor, new: torch.Tensor) -> torch.Tensor:
    """Complex add or mul, part by part, each part's NaN made canonical."""
    a, b = torch.view_as_real(old), torch.view_as_real(new)
    ar, ai, br, bi = a[..., 0], a[..., 1], b[..., 0], b[..., 1]
    if reduction == "add":
        real, imag = ar + br, ai + bi
    else:
        real = (ar * br) - (ai * bi)
        imag = (ar * bi) + (ai * br)
    return torch.complex(_canonical(real), _canonical(imag))
