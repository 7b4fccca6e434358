"""The scatters in torch's own operations: exact on any device, and differentiable."""

from __future__ import annotations

import math
import weakref
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from torch.utils.weak import WeakIdKeyDictionary

from onnx_gather import _ops
from onnx_gather._backends import _numpy as numpy_kernels
from onnx_gather._backends._positions import element_positions, tuple_rows
from onnx_gather._backends._torch._dtypes import SIGNED
from onnx_gather._backends._torch._indices import placed, xp
from onnx_gather._backends._torch._views import viewable
from onnx_gather._indices import BoundsPolicy, normalise_indices
from onnx_gather._spec.scatter_nd import plan as scatter_nd_plan

if TYPE_CHECKING:
    from collections.abc import Callable

    from onnx_gather._spec import Plan
    from onnx_gather._spec.reductions import Reduction
    from onnx_gather._spec.scatter_elements import ScatterElementsPlan
    from onnx_gather._spec.scatter_nd import ScatterNDPlan
    from onnx_gather._typing import Array, ScatterPlan


def scatter_elements(
    data: torch.Tensor, indices: Array, updates: torch.Tensor, plan: ScatterElementsPlan
) -> torch.Tensor:
    """ONNX ScatterElements in torch operations, for what the compiled kernel does not serve.

    That is CUDA tensors, autograd, tensors the compiled kernel is not built for. The same
    one write as NumPy's (:mod:`onnx_gather._backends._numpy._scatter`): data seen as rows,
    each update aimed at one, applied by :func:`write`; gradients by :func:`gradients`.
    """
    return _scatter(data, _targets(indices, data, plan), updates, plan)


def scatter_nd(
    data: torch.Tensor, indices: Array, updates: torch.Tensor, plan: ScatterNDPlan
) -> torch.Tensor:
    """ONNX ScatterND in torch operations, as :func:`scatter_elements` does ScatterElements."""
    return _scatter(data, _targets(indices, data, plan), updates, plan)


def _layout(
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


def _scatter(
    data: torch.Tensor, targets: Any, updates: torch.Tensor, plan: ScatterPlan
) -> torch.Tensor:
    positions, keep = targets
    target, rows, values = _layout(data, positions, updates, plan)
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


def gradients(
    grad: torch.Tensor,
    data: torch.Tensor,
    indices: torch.Tensor,
    updates: torch.Tensor,
    result: torch.Tensor,
    plan: ScatterPlan,
) -> tuple[torch.Tensor, torch.Tensor]:
    """A scatter's gradients to data and updates: formulas (:func:`row_gradients`).

    The same for an eager call and a recorded one, in torch operations whose shapes do not
    depend on values: a compiler traces them (the backward of a recorded call).
    ``indices`` as the call had them; ``result`` its output.
    """
    positions, keep = normalise_indices(xp, indices.to(torch.int64), plan, BoundsPolicy.DROP)
    target, rows, values = _layout(data, positions, updates, plan)
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
    """The gradients of :func:`write` to ``target`` and ``values`` (rows of them).

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
    """A product's gradients without dividing by a zero (torch's scatter_reduce "prod").

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
    """:func:`write`, wide unsigned types through their signed twins (:data:`._dtypes.SIGNED`)."""
    signed = SIGNED.get(target.dtype)
    if signed is None:
        return write(target, rows, values, keep, reduction)
    flip = torch.iinfo(signed).min if reduction in ("max", "min") else 0
    result = write(target.view(signed) ^ flip, rows, values.view(signed) ^ flip, keep, reduction)
    return (result ^ flip).view(target.dtype)


def _targets(indices: Array, data: torch.Tensor, plan: Plan) -> tuple[torch.Tensor, Any]:
    """Indices counted from the end on data's device: checked, or with a mask of those kept."""
    if plan.check_bounds:
        return placed(indices, data, plan), None
    if isinstance(indices, np.ndarray):
        indices = torch.as_tensor(indices.copy(), device=data.device)
    elif indices.device != data.device:
        indices = indices.to(data.device)
    positions, keep = normalise_indices(xp, indices, plan, BoundsPolicy.DROP)
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
    on_kernel = _reduced_on_kernel(target, rows, values, reduction)
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


def _reduced_on_kernel(
    target: torch.Tensor, rows: torch.Tensor, values: torch.Tensor, reduction: Reduction
) -> torch.Tensor | None:
    """:func:`write` of a reduction by the compiled kernel, one pass in C order; None: not here.

    Plain CPU tensors (the forward of an autograd call, whose gradients are formulas;
    ``torch.func``'s unwrapped ones) where the kernel is built and holds the type: the
    rounds take one round per duplicate, which many updates of one element make
    quadratic (LESSONS: work in rounds; docs/performance.md).
    """
    if not (
        numpy_kernels.compiled_available()
        and target.dtype in _KERNEL_TYPES
        and viewable(target, rows, values)
    ):
        return None
    data = target.detach().contiguous()
    width = data.shape[1:]
    result = torch.empty_like(data)
    views = [
        x.numpy()
        for x in (data, rows.detach().reshape(-1, 1), values.detach().contiguous(), result)
    ]
    data_view, index_view, values_view, out_view = views
    names = (data_view.dtype.name, index_view.dtype.name, values_view.dtype.name)
    shapes = (tuple(data.shape), (rows.shape[0], 1), (rows.shape[0], *width))
    plan = scatter_nd_plan(_ops.SCATTER_ND, 18, shapes, names, (reduction,), False)
    threads = min(numpy_kernels.THREADS, torch.get_num_threads())
    numpy_kernels.scatter_nd(data_view, index_view, values_view, plan, out_view, threads, True)
    return result


#: The types the compiled kernel reduces as torch does (bfloat16 would reach it as int16,
#: whose arithmetic is not bfloat16's).
_KERNEL_TYPES = (
    torch.bool, torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8,
    torch.float16, torch.float32, torch.float64, torch.complex64, torch.complex128,
)  # fmt: skip


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


#: Under ``torch.compile``: the most pairs of updates compared to find each target's
#: winner (``_winners``); beyond, the fused operator serves.
_PAIRS = 1 << 16


def in_graph_serves(
    data: torch.Tensor, indices: torch.Tensor, updates: torch.Tensor, plan: ScatterPlan
) -> bool:
    """Whether a scatter under ``torch.compile`` is torch's operations (:func:`in_graph`).

    Reduction ``none``, checked, sizes known (not symbolic), on the CPU (the route has not
    run on a GPU), no gradient (``index_put``'s would give a duplicated winner its
    gradient once per duplicate), and few enough pairs of updates that could meet.
    """
    if plan.reduction != "none" or not plan.check_bounds or not data.is_cpu:
        return False
    if torch.is_grad_enabled() and (data.requires_grad or updates.requires_grad):
        return False
    shapes = (*data.shape, *indices.shape, *updates.shape)
    if not all(isinstance(n, int) for n in shapes):
        return False
    return _meeting_pairs(indices, plan) <= _PAIRS


def _meeting_pairs(indices: torch.Tensor, plan: ScatterPlan) -> int:
    """How many pairs of updates :func:`_winners` compares: those that could meet."""
    if plan.coordinates:  # any two index tuples, or one per row of data
        return min(math.prod(indices.shape[:-1]) ** 2, math.prod(plan.sizes))
    # ScatterElements: two updates meet only along the axis, elsewhere at the same place.
    return math.prod(indices.shape) * indices.shape[plan.axis]


def in_graph(
    data: torch.Tensor, indices: torch.Tensor, updates: torch.Tensor, plan: ScatterPlan
) -> torch.Tensor:
    """A checked scatter without reduction, as torch operations a compiler fuses.

    Each target's last update in C order is found by comparing the updates that could
    meet (no duplicates, no comparison: a KV-cache write); then one ``index_put`` writes
    every update's target with its winner's value, so duplicates write the same bits and
    the order they land in cannot show. Given ``out=data``, inductor turns the
    ``index_put`` and the copy into ``out`` into one write of the targets, as it does for
    ``c[:, :, pos] = new``. The range: an index out of range makes every index out of
    range, so the compiled kernel's own check (inductor's, or torch's where another
    backend runs the graph) raises on the first target, before anything is written.

    What depends on the indices alone (:func:`_targets_in_graph`) is traced once per
    index tensor of the graph (:func:`_once_per_trace`): a model's layers that write at
    the same positions share one check.
    """
    key = (plan.coordinates, plan.axis, tuple(plan.sizes))  # (all _targets_in_graph reads)
    targets, pick = _once_per_trace(indices, key, lambda: _targets_in_graph(indices, plan))
    if plan.coordinates:
        k = len(plan.sizes)
        values = updates.reshape(targets.shape[0], *data.shape[k:])
        if pick is not None:
            values = values[pick]
        flat = data.reshape(math.prod(plan.sizes), *data.shape[k:])
        return flat.index_put((targets,), values).reshape(data.shape)
    if pick is not None:
        updates = torch.gather(updates, plan.axis, pick)
    place = [
        torch.arange(n, device=indices.device).reshape(
            [n if e == d else 1 for e in range(indices.dim())]
        )
        for d, n in enumerate(indices.shape)
    ]
    place[plan.axis] = targets
    return data.index_put(tuple(place), updates)


def _targets_in_graph(indices: torch.Tensor, plan: ScatterPlan) -> tuple[torch.Tensor, Any]:
    """:func:`in_graph`'s targets and which update each takes (None: its own).

    ScatterND: each index tuple's row of data seen as (cells, rest), and the position of
    its row's last tuple; ScatterElements: each update's position along the axis, and
    its target's last update along it. Out of range anywhere: every target out of range.
    """
    wide = indices.to(torch.int64)
    if not plan.coordinates:
        size = plan.size
        counted = torch.where(wide < 0, wide + size, wide)
        bad = torch.any((counted < 0) | (counted >= size))
        counted = torch.where(bad, size, counted)
        return counted, _winners(counted, plan.axis)
    k, cells = len(plan.sizes), math.prod(plan.sizes)
    sizes = torch.tensor(plan.sizes, dtype=torch.int64, device=wide.device)
    counted = torch.where(wide < 0, wide + sizes, wide)
    outside = (counted < 0) | (counted >= sizes)
    # Each tuple out of range or not, its k coordinates or'd: no reduction, so the
    # check joins the loops that follow rather than running as a loop of its own.
    stray = outside[..., 0]
    for j in range(1, k):
        stray = stray | outside[..., j]
    stray = stray.reshape(-1)
    # Each tuple's row of data seen as (cells, rest): one number to compare and to
    # index with (tuples of k compared pairwise compiled and ran slower).
    rows = tuple_rows(xp, counted, plan.sizes, 0, wide.device).reshape(-1)
    n = rows.shape[0]
    position = torch.arange(n, device=wide.device)
    if n > 1 and n * n <= _PAIRS:
        # Two maxima over the pairs, in one kernel: the last of the rows equal to
        # each (itself too), and each tuple's row, or ``cells`` where any tuple is out
        # of range. Both are buffers the layers' writes load, rather than values each
        # write recomputes (it compiles faster and runs as fast as the check and the
        # pick derived from one reduction's result). The check as a reduction of its
        # own ran slower, before the pairs carried it; coordinates wrapped one by one
        # with their sizes as numbers compiled faster but ran slower: inductor then
        # keeps each pair's comparison in a buffer.
        #
        # The two are one reduction of 2n outputs over n: its loop is not the n tuples'
        # loop of the layers' writes, so inductor's outer-loop fusion does not analyse
        # it with each of them (most of the code generation went there). Its 2n rows
        # are the tuples twice over (``repeat``: index arithmetic, no copy), the first n
        # taking the equal rows' positions, the others the rows: no tensor is stacked,
        # so the compiled program allocates one buffer, the reduction's. Stacked, the
        # two halves were a buffer of n x 2n and two views of it, each a Python tensor
        # the program made on every call, which slowed the step. (The figures:
        # docs/performance.md.)
        i = position.repeat(2).unsqueeze(1)
        mine = rows.repeat(2).unsqueeze(1)
        first = (torch.arange(2 * n, device=wide.device) < n).unsqueeze(1)
        value = torch.where(
            first,
            torch.where(mine == rows, position, -1),
            torch.where(stray, cells, torch.where(i == position, mine, -1)),
        )
        last, targets = value.amax(1).reshape(2, n)
        return targets, last
    if n > 1:
        # Each row's last tuple, in a buffer of data's rows. The pairs would compile
        # slower here but this buffer runs slower (it is filled each call): beyond
        # _PAIRS the compile time decides (docs/performance.md).
        rows = torch.where(torch.any(stray), cells, rows)
        latest = torch.full((cells + 1,), -1, dtype=torch.int64, device=wide.device)
        return rows, latest.scatter_reduce(0, rows, position, "amax")[rows]
    return torch.where(stray, cells, rows), None


#: What :func:`_once_per_trace` traced, by index tensor: (trace, value, version, key) ->
#: (the trace's mode, the value, the result), the first two weakly.
#: (torch's dictionary by identity: a tensor's ``==`` compares its values.)
_TRACED: Any = WeakIdKeyDictionary()


def _once_per_trace(indices: torch.Tensor, key: Any, make: Callable[[], Any]) -> Any:
    """``make()``, traced once for each index tensor's value, range rule and shape in one trace.

    The eight layers of a KV-cache step write at the same positions with one index
    tensor. Traced eight times, the check's reduction was computed once by inductor but
    stored into eight buffers the compiled program allocates on every call, which
    slowed the step (docs/performance.md).

    In each pass over fake tensors: the one that records the graph (AOTAutograd's
    trace, under a proxy mode), and those that run the library's body for metadata only
    (Dynamo's example values, AOTAutograd's pass that collects mutations): each would
    otherwise build the check eight times, at a cost in compile time. Not where Dynamo itself traces this Python (host indices
    reach ``in_graph`` through the library's body): the lookup cannot be traced there.
    The entry is keyed by the pass's mode (the proxy mode, else the functional mode,
    else the fake tensors' mode), by the index tensor itself (each pass has its own)
    and by the indices' current value: functionalization replaces the value a
    functional tensor wraps on any in-place change of it or of its base, including
    ones that do not bump the wrapper's version (``x.data`` writes, a custom operator
    that mutates without an ADInplaceOrView kernel); the version is kept too.
    (``torch._sync`` and ``torch._from_functional_tensor``: private, what
    functionalization itself uses to read a wrapped value, torch 2.13.)
    """
    if torch.compiler.is_dynamo_compiling():
        return make()
    from torch._subclasses.fake_tensor import FakeTensor
    from torch._subclasses.functional_tensor import FunctionalTensor
    from torch.fx.experimental.proxy_tensor import get_proxy_mode

    value = indices
    if isinstance(indices, FunctionalTensor):
        torch._sync(indices)  # (a pending change of the base reaches this view first)
        value = torch._from_functional_tensor(indices.elem)
    mode: Any = get_proxy_mode() or _functional_mode()
    if mode is None:
        if not isinstance(value, FakeTensor):  # (an eager call: nothing to share)
            return make()
        mode = value.fake_mode
    full = (id(mode), id(value), indices._version, key)
    entries = _TRACED.setdefault(indices, {})
    hit = entries.get(full)
    if hit is not None and hit[0]() is mode and hit[1]() is value:
        return hit[2]
    result = make()
    entries[full] = (weakref.ref(mode), weakref.ref(value), result)
    return result


def _functional_mode() -> Any:
    """The functionalization mode in force, or None."""
    return torch._C._get_dispatch_mode(torch._C._TorchDispatchModeKey.FUNCTIONAL)


def _winners(targets: torch.Tensor, axis: int) -> torch.Tensor | None:
    """For each update, the position along ``axis`` of its target's last update; None: no meeting.

    ``targets``: where each update lands; two updates meet only when they are at the same
    place off ``axis``. One update along the axis meets none.
    """
    m = targets.shape[axis]
    if m <= 1:
        return None
    mine = targets.unsqueeze(axis + 1)  # [..., i, 1, ...]
    theirs = targets.unsqueeze(axis)  # [..., 1, j, ...]
    shape = [1] * (targets.dim() + 1)
    shape[axis + 1] = m
    position = torch.arange(m, device=targets.device).reshape(shape)
    # The last j whose target equals i's (i itself at least).
    return torch.where(mine == theirs, position, -1).amax(axis + 1)
