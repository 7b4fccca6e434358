"""The EXACT route: torch's own operations, bit for bit on any device, and differentiable."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from onnx_gather import _host
from onnx_gather._backends._positions import element_positions, tuple_rows
from onnx_gather._backends._torch._dtypes import SIGNED
from onnx_gather._backends._torch._indices import (
    checked_indices,
    counted_int64,
    values_unknown,
    xp,
)
from onnx_gather._backends._torch._inductor import counted_in_graph
from onnx_gather._backends._torch._numpy_views import reduced_on_kernel
from onnx_gather._indices import BoundsPolicy, counted

if TYPE_CHECKING:
    from collections.abc import Callable

    from onnx_gather._spec import Plan
    from onnx_gather._spec.gather import GatherPlan
    from onnx_gather._spec.gather_elements import GatherElementsPlan
    from onnx_gather._spec.gather_nd import GatherNDPlan
    from onnx_gather._spec.reductions import Reduction
    from onnx_gather._spec.scatter_elements import ScatterElementsPlan
    from onnx_gather._spec.scatter_nd import ScatterNDPlan
    from onnx_gather._spec.tensor_scatter import TensorScatterPlan
    from onnx_gather._typing import Array, ScatterPlan

# What torch's kernels gather bits of.
_GATHER_VIEW = {**SIGNED, torch.bfloat16: torch.int16, torch.float16: torch.int16}


def gather(data: torch.Tensor, indices: Array, plan: GatherPlan) -> torch.Tensor:
    """ONNX Gather: ``index_select`` of the counted indices, flattened, then reshaped."""
    check_servable(data, indices)
    indices = counted_on(indices, data, plan)
    if plan.size == 0 and indices.numel():  # unchecked, nothing to read: zeros
        return data.new_zeros(plan.out_shape)
    out = _taken(data, plan.axis, indices.reshape(-1), False)
    return out.reshape(plan.out_shape) if indices.dim() != 1 else out


def gather_elements(data: torch.Tensor, indices: Array, plan: GatherElementsPlan) -> torch.Tensor:
    """ONNX GatherElements (and OpenVINO's): ``torch.gather`` of the counted indices."""
    check_servable(data, indices)
    indices = counted_on(indices, data, plan)
    if plan.size == 0 and indices.numel():  # unchecked, nothing to read: zeros
        return data.new_zeros(plan.out_shape)
    block = plan.block()
    return _taken(data if block is None else data[block], plan.axis, indices, True)


def gather_nd(data: torch.Tensor, indices: Array, plan: GatherNDPlan) -> torch.Tensor:
    """ONNX GatherND: advanced indexing of indices checked and counted per coordinate.

    Its backward accumulates repeated tuples.
    """
    check_servable(data, indices)
    indices = counted_on(indices, data, plan)
    if 0 in plan.sizes or 0 in plan.out_shape:  # nothing to read (unchecked): zeros
        return data.new_zeros(plan.out_shape)
    return _taken_nd(data, indices, plan.batch_dims).reshape(plan.out_shape)


def _taken(data: torch.Tensor, axis: int, indices: torch.Tensor, elements: bool) -> torch.Tensor:
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
    """A float16 or bfloat16 gather that needs a gradient, bit for bit (see :func:`_taken`).

    The forward gathers the int16 bits; the backward is the scatter-add of the gradient,
    made of differentiable operators, so double backward works too.
    """

    generate_vmap_rule = True

    @staticmethod
    def forward(
        data: torch.Tensor, axis: int, indices: torch.Tensor, elements: bool
    ) -> torch.Tensor:
        return _taken(data.detach(), axis, indices, elements)

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


def _taken_nd(data: torch.Tensor, indices: torch.Tensor, batch_dims: int) -> torch.Tensor:
    """GatherND by advanced indexing of counted ``indices`` (int64, in range), bit for bit.

    ``data[batch aranges..., indices[..., 0], ..., indices[..., k-1]]``: torch reads data
    in place whatever its strides. The types :func:`_taken` moves as bits move as bits here
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
        return _taken_nd(data.detach(), indices, batch_dims)

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


def check_servable(data: torch.Tensor, indices: Array) -> None:
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


def counted_on(indices: Array, data: torch.Tensor, plan: Plan) -> torch.Tensor:
    """Indices on ``data``'s device in ``[0, size)`` (see :func:`counted_int64`).

    Host indices are checked on the host, before they travel: no device synchronisation
    (they keep their int32 or int64 type, which torch's kernels take). Traced indices are
    checked in the graph: under ``torch.compile`` by :func:`._inductor.counted_in_graph`,
    under ``torch.func`` by ``onnx_gather::checked_indices_v1``
    (:func:`._indices.checked_indices`).
    """
    if isinstance(indices, np.ndarray):
        host = _host.counted_on_host(plan, indices)
        if not host.flags.writeable or host.base is not None or host is indices:
            # torch.as_tensor shares memory (and warns on read-only arrays): a copy keeps
            # the caller's array unaliased; it also drops negative strides torch rejects.
            host = host.copy()
        return torch.as_tensor(host, device=data.device)
    if indices.device != data.device:
        indices = indices.to(data.device, non_blocking=True)
    if indices.is_meta:  # no values to check (data is on meta too: nothing is read)
        return counted(xp, indices, plan, BoundsPolicy.CLAMP).to(torch.int64)
    if plan.check_bounds and torch.compiler.is_compiling():
        return counted_in_graph(indices, plan)
    if plan.check_bounds and values_unknown(indices):
        return checked_indices(indices, plan.op, plan.axis, plan.sizes, plan.coordinates)
    return counted_int64(indices, plan)


def scatter_elements(
    data: torch.Tensor, indices: Array, updates: torch.Tensor, plan: ScatterElementsPlan
) -> torch.Tensor:
    """ONNX ScatterElements in torch operations, for what the compiled kernel does not serve.

    That is CUDA tensors, autograd, tensors the compiled kernel is not built for. The same
    one write as NumPy's (:mod:`onnx_gather._backends._numpy._scatter`): data seen as rows,
    each update aimed at one, applied by :func:`write`; scatter_gradients by :func:`scatter_gradients`.
    """
    return _scattered(data, targets(indices, data, plan), updates, plan)


def scatter_nd(
    data: torch.Tensor, indices: Array, updates: torch.Tensor, plan: ScatterNDPlan
) -> torch.Tensor:
    """ONNX ScatterND in torch operations, as :func:`scatter_elements` does ScatterElements."""
    return _scattered(data, targets(indices, data, plan), updates, plan)


def layout(
    data: torch.Tensor, positions: torch.Tensor, updates: torch.Tensor, plan: ScatterPlan
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Data as rows, the row of each update, the updates as rows (views, no copies)."""
    if plan.coordinates:
        rows = tuple_rows(xp, positions, plan.sizes, 0, data.device).reshape(-1)
        width = math.prod(plan.out_shape[len(plan.sizes) :])
        target = data.reshape(math.prod(plan.sizes), width)
        return target, rows, updates.reshape(rows.shape[0], width)
    rows = element_positions(xp, positions, plan.out_shape, plan.axis, data.device)
    return data.reshape(-1), rows.reshape(-1), updates.reshape(-1)


def _scattered(
    data: torch.Tensor, aimed: Any, updates: torch.Tensor, plan: ScatterPlan
) -> torch.Tensor:
    positions, keep = aimed
    target, rows, values = layout(data, positions, updates, plan)
    if torch.is_grad_enabled() and (data.requires_grad or updates.requires_grad):
        result = _Write.apply(target, rows, values, keep, plan.reduction)
    else:
        result = _write(target, rows, values, keep, plan.reduction)
    return result.reshape(plan.out_shape)


class _Write(torch.autograd.Function):  # type: ignore[misc]
    """:func:`write` with the formulas of :func:`row_gradients` as its backward."""

    @staticmethod
    def forward(
        target: torch.Tensor,
        rows: torch.Tensor,
        values: torch.Tensor,
        keep: Array,
        reduction: Reduction,
    ) -> torch.Tensor:
        return _write(target, rows, values, keep, reduction)

    @staticmethod
    def setup_context(ctx: Any, inputs: tuple[Any, ...], output: torch.Tensor) -> None:
        target, rows, values, keep, reduction = inputs
        # Only what the reduction's formulas read (none and add: neither data nor the
        # result), as torch's own operations save: a later in-place write of data or of
        # the result (out=data, OpenVINO's reductions in a row) must not void the backward.
        read = reduction not in ("none", "add")
        ctx.save_for_backward(
            target if read else None, rows, values, output if read else None, keep
        )
        ctx.save_for_forward(target, rows, values, keep)
        ctx.reduction = reduction

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[Any, ...]:
        target, rows, values, result, keep = ctx.saved_tensors
        g_target, g_values = row_gradients(grad, target, rows, values, result, keep, ctx.reduction)
        return g_target, None, g_values, None, None

    @staticmethod
    def jvp(ctx: Any, t_target: Any, t_rows: Any, t_values: Any, *_: Any) -> torch.Tensor:
        target, rows, values, keep = ctx.saved_tensors
        return _tangent(target, rows, values, keep, ctx.reduction, t_target, t_values)

    @staticmethod
    def vmap(info: Any, in_dims: tuple[Any, ...], *inputs: Any) -> tuple[torch.Tensor, int]:
        """Under ``torch.func.vmap`` (of ``grad``): one write per batch entry, stacked.

        Each entry's duplicates apply in its own order: no batched form of the rounds.
        """
        *arrays, reduction = inputs

        def entry(x: Array, dim: Any, b: int) -> Any:
            return x if dim is None or x is None else x.select(dim, b)

        rows = [
            _Write.apply(*(entry(x, d, b) for x, d in zip(arrays, in_dims, strict=False)),
                         reduction)
            for b in range(info.batch_size)
        ]  # fmt: skip
        return torch.stack(rows), 0


def scatter_gradients(
    grad: torch.Tensor,
    data: torch.Tensor,
    indices: torch.Tensor,
    updates: torch.Tensor,
    result: torch.Tensor,
    plan: ScatterPlan,
) -> tuple[torch.Tensor, torch.Tensor]:
    """A scatter's scatter_gradients to data and updates: formulas (:func:`row_gradients`).

    The same for an eager call and a recorded one, in torch operations whose shapes do not
    depend on values: a compiler traces them (the backward of a recorded call).
    ``indices`` as the call had them; ``result`` its output.
    """
    positions, keep = counted(xp, indices.to(torch.int64), plan, BoundsPolicy.DROP)
    target, rows, values = layout(data, positions, updates, plan)
    g_target, g_values = row_gradients(
        grad.reshape(target.shape), target, rows, values, result.reshape(target.shape),
        keep.reshape(-1), plan.reduction,
    )  # fmt: skip
    return g_target.reshape(data.shape), g_values.reshape(updates.shape)


def row_gradients(
    grad: torch.Tensor,
    target: torch.Tensor | None,
    rows: torch.Tensor,
    values: torch.Tensor,
    result: torch.Tensor | None,
    keep: torch.Tensor | None,
    reduction: Reduction,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The scatter_gradients of :func:`write` to ``target`` and ``values`` (rows of them).

    ``none``: each row's winning update gets the row's gradient, data gets it where
    nothing was written; ``add``: data gets it, each update its row's; ``mul``, ``max``,
    ``min``: as torch's ``scatter_reduce`` defines them (a product's gradient without
    dividing by a zero: with one zero among a row's factors only that one gets a
    gradient; max and min split the row's gradient evenly among data and the updates that
    equal the result). Double backward differentiates the formulas.
    """
    n, m = grad.shape[0], rows.shape[0]  # (grad has data's shape)
    kept = torch.ones(m, dtype=torch.bool, device=rows.device) if keep is None else keep
    safe = torch.where(kept, rows, 0)  # (a dropped update's row: any, masked below)
    wide = (slice(None), *([None] * (values.dim() - 1)))  # a per-update mask as rows
    on = kept[wide]
    g_rows = grad[safe]
    zero = grad.new_zeros(())
    if reduction == "none":
        position = torch.arange(m, device=rows.device)
        latest = torch.full((n,), -1, dtype=torch.int64, device=rows.device)
        latest = latest.scatter_reduce(0, safe, torch.where(kept, position, -1), "amax")
        wins = (latest[safe] == position) & kept
        hits = torch.zeros(n, dtype=torch.int64, device=rows.device)
        written = hits.index_add(0, safe, kept.to(torch.int64)) > 0
        return torch.where(written[wide], zero, grad), torch.where(wins[wide], g_rows, zero)
    if reduction == "add":
        return grad, torch.where(on, g_rows, zero)
    assert target is not None  # (saved for mul, max and min)
    assert result is not None
    if reduction == "mul":
        return _product_gradients(grad, target, safe, values, result, on, g_rows)
    # max, min: the row's gradient split evenly among the contributors equal to the result.
    picked = result[safe]
    same_d = (target == result) | (torch.isnan(target) & torch.isnan(result))
    same_u = ((values == picked) | (torch.isnan(values) & torch.isnan(picked))) & on
    count = same_d.to(grad.dtype).index_add(0, safe, same_u.to(grad.dtype))
    share = grad / torch.where(count == 0, torch.ones_like(count), count)
    return torch.where(same_d, share, zero), torch.where(same_u, share[safe], zero)


def _product_gradients(
    grad: torch.Tensor,
    target: torch.Tensor,
    safe: torch.Tensor,
    values: torch.Tensor,
    result: torch.Tensor,
    on: torch.Tensor,
    g_rows: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor]:
    """A product's scatter_gradients without dividing by a zero (torch's scatter_reduce "prod").

    A row's factors are data's value and its updates'. No zero among them: each factor's
    gradient is the row's times the result over the factor. One zero: only that factor's,
    the row's times the product of the others. More: none.
    """
    one = torch.ones((), dtype=values.dtype, device=values.device)
    zero_u = (values == 0) & on
    zero_d = target == 0
    zeros = zero_d.to(torch.int64).index_add(0, safe, zero_u.to(torch.int64))
    factors = torch.where(zero_u | ~on, one, values)
    spread = safe.reshape(-1, *([1] * (values.dim() - 1))).expand_as(values)
    others = torch.where(zero_d, one, target).scatter_reduce(0, spread, factors, "prod")
    none_zero = zeros == 0
    g_target = torch.where(
        none_zero,
        grad * (result / torch.where(zero_d, one, target)).conj(),
        torch.where((zeros == 1) & zero_d, grad * others.conj(), 0),
    )
    g_values = torch.where(
        none_zero[safe] & on,
        g_rows * (result[safe] / torch.where(zero_u, one, values)).conj(),
        torch.where((zeros[safe] == 1) & zero_u, g_rows * others[safe].conj(), 0),
    )
    return g_target, g_values


def _tangent(
    target: torch.Tensor,
    rows: torch.Tensor,
    values: torch.Tensor,
    keep: Array,
    reduction: Reduction,
    t_target: Any,
    t_values: Any,
) -> torch.Tensor:
    """Forward-mode AD: the tangent of :func:`write` (none and add; the rest raise)."""
    t_target = torch.zeros_like(target) if t_target is None else t_target
    t_values = torch.zeros_like(values) if t_values is None else t_values
    if reduction in ("none", "add"):
        return _write(t_target, rows, t_values, keep, reduction)
    msg = f"forward-mode AD of the scatters' reduction {reduction!r} is not supported yet"
    raise NotImplementedError(msg)


def _write(
    target: torch.Tensor,
    rows: torch.Tensor,
    values: torch.Tensor,
    keep: Array,
    reduction: Reduction,
) -> torch.Tensor:
    """:func:`write`, wide unsigned types through their signed twins (:func:`signed_twins`)."""
    return signed_twins(write, target, rows, values, keep, reduction)


def signed_twins(
    writer: Callable[..., torch.Tensor],
    target: torch.Tensor,
    rows: torch.Tensor,
    values: torch.Tensor,
    keep: Any,
    reduction: Reduction,
) -> torch.Tensor:
    """``writer(target, rows, values, keep, reduction)``, wide unsigned types as signed.

    Torch's kernels take their signed twins (:data:`._dtypes.SIGNED`); for max and min
    the sign bit is flipped, so the order of the bits is the unsigned order.
    """
    signed = SIGNED.get(target.dtype)
    if signed is None:
        return writer(target, rows, values, keep, reduction)
    flip = torch.iinfo(signed).min if reduction in ("max", "min") else 0
    result = writer(target.view(signed) ^ flip, rows, values.view(signed) ^ flip, keep, reduction)
    return (result ^ flip).view(target.dtype)


def targets(indices: Array, data: torch.Tensor, plan: Plan) -> tuple[torch.Tensor, Any]:
    """Indices counted from the end on data's device: checked, or with a mask of those kept."""
    if plan.check_bounds:
        return counted_on(indices, data, plan), None
    if isinstance(indices, np.ndarray):
        indices = torch.as_tensor(indices.copy(), device=data.device)
    elif indices.device != data.device:
        indices = indices.to(data.device)
    positions, keep = counted(xp, indices, plan, BoundsPolicy.DROP)
    return positions.to(torch.int64), keep.reshape(-1)


def write(
    target: torch.Tensor,
    rows: torch.Tensor,
    values: torch.Tensor,
    keep: torch.Tensor | None,
    reduction: Reduction,
) -> torch.Tensor:
    """``target`` with ``values[i]`` applied to row ``rows[i]`` in order; a new tensor.

    ``target`` is 1-D (one element per row) or 2-D; ``keep`` (None: all) marks the updates
    to apply.

    * ``none``: each row's last update in C order (``scatter_reduce`` of the update
      positions with ``amax``: the winner does not depend on the order torch applies them
      in), then one ``index_put`` of unique rows, whose order cannot show.
    * ``add``, ``mul``, ``max``, ``min``: in rounds. The updates sorted stably by row;
      round ``r`` applies each row's ``r``-th update, all at distinct rows: gather,
      combine in data's dtype (torch rounds float16 and bfloat16 after every operation,
      as NumPy does), one ``index_put``. So every element sees its updates one at a time,
      in C order, on any device; the rounds are as many as the most updates one element
      gets. Complex products are computed part by part in separate operations (no fused
      multiply-add on any device), NaN results made canonical, max and min selected with
      ``where`` (IEEE 754-2019, the first NaN kept): the bits of the compiled kernel
      (:mod:`onnx_gather._spec.reductions`; :func:`combine`).
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
    on_kernel = reduced_on_kernel(target, rows, values, reduction)
    if on_kernel is not None:
        return on_kernel
    order = torch.argsort(rows, stable=True)
    ranked = rows[order]
    rank = torch.empty_like(position)
    rank[order] = position - torch.searchsorted(ranked, ranked)
    # The rounds as slices of one order (by round, then C order): each round reads only
    # its own updates, and the result is written in place, so the rounds cost the updates
    # once, not all of them (and all of target) each (LESSONS: work in rounds).
    by_round = torch.argsort(rank, stable=True)
    result = target.clone()
    start = 0
    for count in torch.bincount(rank).tolist():  # (one host synchronisation)
        at = by_round[start : start + count]  # C order; their rows are distinct
        start += count
        where = rows[at]
        result.index_put_((where,), combine(reduction, result[where], values[at]))
    return result


def combine(reduction: Reduction, old: torch.Tensor, new: torch.Tensor) -> torch.Tensor:
    """``f(old, new)`` element-wise in their dtype (the rounds of :func:`write`)."""
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


def _complex(reduction: Reduction, old: torch.Tensor, new: torch.Tensor) -> torch.Tensor:
    """Complex add or mul, part by part, each part's NaN made canonical."""
    a, b = torch.view_as_real(old), torch.view_as_real(new)
    ar, ai, br, bi = a[..., 0], a[..., 1], b[..., 0], b[..., 1]
    if reduction == "add":
        real, imag = ar + br, ai + bi
    else:
        real = (ar * br) - (ai * bi)
        imag = (ar * bi) + (ai * br)
    return torch.complex(_canonical(real), _canonical(imag))


def tensor_scatter(
    data: torch.Tensor, updates: torch.Tensor, indices: torch.Tensor, plan: TensorScatterPlan
) -> torch.Tensor:
    """The present cache as a new tensor (:func:`_tensor_scatter_write` tensor_scatter_into a copy of the cache)."""
    result = data.clone(memory_format=torch.contiguous_format)
    _tensor_scatter_write(result, updates, plan.checked_starts(indices), plan)
    return result


def tensor_scatter_into(
    out: torch.Tensor,
    data: torch.Tensor,
    updates: torch.Tensor,
    starts: list[int],
    plan: TensorScatterPlan,
) -> None:
    """``out`` holding data with the writes (:func:`_tensor_scatter_write`): only they where ``out`` is data.

    Updates that share memory with ``out`` are read (copied) first, as is data that
    ``out`` overlaps without being it. Nothing here is recorded for autograd.
    """
    if shares_memory(out, updates):
        updates = updates.clone()
    if out is not data:
        out.copy_(data.clone() if shares_memory(out, data) else data)
    _tensor_scatter_write(out, updates, starts, plan)


def _tensor_scatter_write(
    result: torch.Tensor, updates: torch.Tensor, starts: list[int], plan: TensorScatterPlan
) -> None:
    """Write ``updates`` tensor_scatter_into ``result`` in place at the host _tensor_scatter_write indices ``starts``.

    One ``index_put`` of every update (each batch entry's positions are distinct), its
    index made on the host, where ``starts`` already are (a handful of tiny device
    operations cost more than the _tensor_scatter_write); autograd records it as torch's own (the
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


def tensor_scatter_gradients(
    grad: torch.Tensor, updates: torch.Tensor, indices: torch.Tensor, plan: TensorScatterPlan
) -> tuple[torch.Tensor, torch.Tensor]:
    """The tensor_scatter_gradients to the cache and the update (the recorded operator's backward).

    The update's: the upstream gradient at the positions its slices were written to (0
    for a dropped _tensor_scatter_write); the cache's: the upstream gradient where nothing was written.
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


def shares_memory(out: torch.Tensor, *inputs: torch.Tensor) -> bool:
    """Whether ``out`` and one of ``inputs`` may share memory (the same storage).

    A ZeroTensor (``torch._efficientzerotensor``) has no storage: it shares none.
    """
    storage = out.untyped_storage().data_ptr()
    return any(not x._is_zerotensor() and x.untyped_storage().data_ptr() == storage for x in inputs)
