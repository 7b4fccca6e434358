"""``onnx_gather::run_v1`` as torch's own operators, for ``ExportedProgram.run_decompositions()``.

An exported program keeps each recorded call as one ``run_v1`` (:mod:`._recorded`),
exact wherever the program runs. Another backend of ``torch.export`` lowers aten
operators only, so ``run_decompositions()`` (torch's default table) replaces each
``run_v1`` with what this module traces: the same values, bit for bit, in aten
operators, a ``cond`` whose branch raises the library's IndexError
(``onnx_gather::out_of_range_v1``) and, for a scatter's reduction, one ``while_loop`` of
rounds (the operators themselves, not ``torch.cond`` and ``torch.while_loop``, which
compile with Dynamo and keep what they compiled: :func:`._inductor.cond`). How torch
finds it, and when: :func:`register`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch
from torch._higher_order_ops.while_loop import while_loop_op

from onnx_gather import _ops
from onnx_gather._backends._base import Backend, Composing
from onnx_gather._backends._torch import _exact as exact
from onnx_gather._backends._torch._inductor import decomposing, write_indices_checked
from onnx_gather._backends._torch._recorded import plan_again

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from onnx_gather._spec.reductions import Reduction
    from onnx_gather._spec.tensor_scatter import TensorScatterPlan
    from onnx_gather._typing import ScatterPlan


def decomposition(
    inputs: Sequence[torch.Tensor], op: str, ints: Sequence[int], strings: str, check_bounds: bool
) -> Any:
    """``run_v1``'s CompositeImplicitAutograd kernel: the call as torch's operators.

    NotImplemented where torch offers it outside ``run_decompositions``
    (:func:`._inductor.decomposing`), and for a TensorScatter that writes something (never
    recorded by ``torch.export``: the compiler's route writes it): the trace then records
    ``run_v1`` itself.
    """
    operator, _ = _ops.BY_MESSAGE_NAME[op]
    if operator.method not in DECOMPOSED or not decomposing():
        return NotImplemented
    plan = plan_again(inputs, op, ints, check_bounds, strings)
    return DECOMPOSED[operator.method](*inputs, plan)


#: The torch backend as OpenVINO's steps run on it (:class:`_Steps`), once registered.
_STEPS: Backend | None = None


def register(backend: Backend) -> None:
    """Make :func:`decomposition` ``run_v1``'s CompositeImplicitAutograd kernel (once).

    Torch's default table decomposes every functional custom operator with a
    CompositeImplicitAutograd kernel (``torch._export.utils._collect_all_valid_cia_ops``,
    torch 2.13), and one written in Python (``OpOverload.py_impl``) is the decomposition
    itself (``_get_decomp_for_cia``). It is registered on that key only: the operator's
    own kernels keep every other key (eager calls, ``torch.compile``, ``vmap``, autograd).
    Torch also offers that kernel to other traces (fake tensors, ``make_fx``, AOTAutograd's
    functionalization): there it answers NotImplemented, and they record ``run_v1`` as
    before (:func:`._inductor.decomposing`).

    The torch backend calls this as it records a call under ``torch.export``, so before
    any ``run_decompositions()`` of the program, and hands itself over: OpenVINO's steps
    run on it (:class:`_Steps`, a mixin placed before its class: the backend imports this
    module, which so needs no import of it). Inductor's decomposition table is imported first: it is a copy of torch's
    default table taken at its import (``torch/_inductor/decomposition.py``), and
    inductor refuses to fall back to an operator that table decomposes ("both a fallback
    and a decomp for same op"), which ``torch.compile`` of a ``run_v1`` needs.
    """
    global _STEPS
    if _STEPS is not None:
        return
    _STEPS = type("Steps", (_Steps, type(backend)), {})()
    import torch._inductor.decomposition  # (its table, without run_v1)

    key = torch._C.DispatchKey.CompositeImplicitAutograd
    torch.ops.onnx_gather.run_v1.default.py_impl(key)(decomposition)


def _scatter(
    data: torch.Tensor, indices: torch.Tensor, updates: torch.Tensor, plan: ScatterPlan
) -> torch.Tensor:
    """ScatterElements and ScatterND: the exact route's layout, written by :func:`_write`.

    The indices are counted and checked as the exact route's under a compiler
    (:func:`._exact.counted_on`: a ``cond`` that raises the eager IndexError), or,
    unchecked, with a mask of the updates kept.
    """
    positions, keep = exact.targets(indices, data, plan)
    target, rows, values = exact.layout(data, positions, updates, plan)
    return _write(target, rows, values, keep, plan.reduction).reshape(plan.out_shape)


def _write(
    target: torch.Tensor,
    rows: torch.Tensor,
    values: torch.Tensor,
    keep: torch.Tensor | None,
    reduction: Reduction,
) -> torch.Tensor:
    """:func:`write`, wide unsigned types through their signed twins (:func:`._exact.signed_twins`)."""
    return exact.signed_twins(write, target, rows, values, keep, reduction)


def write(
    target: torch.Tensor,
    rows: torch.Tensor,
    values: torch.Tensor,
    keep: torch.Tensor | None,
    reduction: Reduction,
) -> torch.Tensor:
    """:func:`._exact.write` in operators whose shapes do not depend on the indices' values.

    ``target`` gets one spare row past its end: an update that is not applied (dropped,
    not its row's winner, not in the current round) is aimed there, and the row is cut
    off at the end, so every tensor keeps its shape (the eager write selects with masks).

    * ``none``: each row's last update in C order wins (``scatter_reduce`` of the update
      positions with ``amax``), then one ``index_put`` of the winners: each real row is
      written once, so the order torch applies the writes in cannot show.
    * ``add``, ``mul``, ``max``, ``min``: each update's rank among its row's updates (a
      stable sort by row), then one round per rank in a ``while_loop`` (their
      count depends on the values): round ``r`` combines each row's ``r``-th update with
      the row (:func:`._exact.combine`, the eager rounds' own rule), all at distinct rows.
      Each round reads every update (the eager rounds read only their own), so the
      rounds cost the updates times the most updates a row gets.
    """
    n, m = target.shape[0], rows.shape[0]
    if m == 0:
        return target.clone()
    spare = target.new_zeros((1, *target.shape[1:]))
    padded = torch.cat([target, spare])
    aimed = rows if keep is None else torch.where(keep, rows, n)
    position = torch.arange(m, device=rows.device)
    if reduction == "none":
        latest = torch.full((n + 1,), -1, dtype=torch.int64, device=rows.device)
        latest = latest.scatter_reduce(0, aimed, position, "amax")
        wins = torch.where(latest[aimed] == position, aimed, n)
        return padded.index_put((wins,), values)[:n]
    order = torch.argsort(aimed, stable=True)
    ranked = aimed[order]
    rank = torch.zeros_like(position).scatter(
        0, order, position - torch.searchsorted(ranked, ranked)
    )
    rounds = rank.max() + 1

    def more(r: torch.Tensor, result: torch.Tensor, *tensors: torch.Tensor) -> torch.Tensor:
        return r < tensors[-1]  # (rounds)

    def round_(
        r: torch.Tensor, result: torch.Tensor, rank: torch.Tensor, aimed: torch.Tensor,
        values: torch.Tensor, rounds: torch.Tensor,
    ) -> tuple[torch.Tensor, torch.Tensor]:  # fmt: skip
        at = torch.where(rank == r, aimed, result.shape[0] - 1)  # (the spare row)
        combined = exact.combine(reduction, result[at], values)
        return r + 1, result.index_put((at,), combined)

    start = torch.zeros((), dtype=torch.int64, device=rows.device)
    # The loop's operator itself, its tensors as operands (as :func:`._inductor.cond`).
    _, result = while_loop_op(more, round_, (start, padded), (rank, aimed, values, rounds))
    return result[:n]


def _gather(method: str) -> Callable[..., torch.Tensor]:
    """A gather: the exact route's kernel, whose check under a compiler is in the graph."""
    own: Callable[..., torch.Tensor] = getattr(exact, method)

    def gathered(data: torch.Tensor, indices: torch.Tensor, plan: Any) -> torch.Tensor:
        return own(data, indices, plan).contiguous()

    return gathered


class _Steps(Composing):
    """The torch backend as OpenVINO's operators' steps run on it in a decomposition.

    A mixin, placed before the backend's class (:func:`register`).

    The base's compositions (:class:`.._base.Backend`, :mod:`.._openvino`) of ONNX calls and
    torch's elementwise operations, in operators whose shapes do not depend on the
    indices' values: the ONNX scatters are :func:`_scatter` (a ``run_v1`` here would be
    the OpenVINO operator's own again: its inner plan bears its name), the checked count
    of ScatterUpdate's indices is the graph's (:func:`._exact.counted_on`, whose
    ``cond`` raises the eager IndexError, ``[0, s-1]`` by the operator's name:
    :func:`._indices.rule`), and uint64's floor division reads no value. The gathers are
    the backend's, each a ``run_v1`` decomposed in turn.
    """

    writes_in_place = False  # (each step a new tensor: nothing traced writes in place)

    def counted(self, indices: Any, data: torch.Tensor, plan: Any, /) -> torch.Tensor:
        """Checked indices counted from the end, the check in the graph (ScatterUpdate's)."""
        return exact.counted_on(indices, data, plan)

    def scatter_elements(
        self, data: torch.Tensor, indices: torch.Tensor, updates: torch.Tensor, plan: Any,
        out: None = None, /,
    ) -> torch.Tensor:  # fmt: skip
        """ONNX ScatterElements as :func:`_scatter` (no ``out``: :attr:`writes_in_place`)."""
        return _scatter(data, indices, updates, plan)

    scatter_nd = scatter_elements

    def floor_divided(self, total: torch.Tensor, n: torch.Tensor, /) -> torch.Tensor:
        """As the backend's; uint64 through its int64 bits, on the device.

        ``t // n`` for ``t = 2h + b``: ``q = 2 (h // n)`` leaves ``t - q n`` in
        ``[0, 2n)``, exact in int64 whatever ``q n`` wraps to, then one more where it is
        at least ``n``.
        """
        if total.dtype != torch.uint64:
            return super().floor_divided(total, n)
        t, d = total.view(torch.int64), n.to(torch.int64)
        half = (t >> 1) & torch.iinfo(torch.int64).max  # (a logical shift)
        q = (half // d) * 2
        q = q + (t - q * d >= d).to(torch.int64)
        return q.view(torch.uint64)


def _openvino(method: str) -> Callable[..., torch.Tensor]:
    """An OpenVINO operator: the base's steps, traced on :class:`_Steps`."""

    def steps(*args: Any) -> torch.Tensor:
        out: torch.Tensor = getattr(_STEPS, method)(*args)  # (registered: it recorded)
        return out.contiguous()

    return steps


def _tensor_scatter(
    data: torch.Tensor, updates: torch.Tensor, indices: torch.Tensor, plan: TensorScatterPlan
) -> Any:
    """TensorScatter, recorded only where it writes nothing (empty updates, checked).

    A copy of the cache, after the check of the write indices in the graph
    (:func:`._inductor.write_indices_checked`), whose zero the copy depends on (a
    ``where`` between the cache and itself), so no pass drops the check.
    """
    if updates.numel():  # (never recorded: the compiler's route writes them)
        return NotImplemented
    result = data.clone(memory_format=torch.contiguous_format)
    if not plan.check_bounds:
        return result
    zero = write_indices_checked(indices, plan)
    return torch.where(zero == 0, result, result)


#: Each operator's decomposition, by its registry method name: ``(*inputs, plan)``.
DECOMPOSED: dict[str, Callable[..., Any]] = {
    "gather": _gather("gather"),
    "gather_elements": _gather("gather_elements"),
    "gather_nd": _gather("gather_nd"),
    "scatter_elements": _scatter,
    "scatter_nd": _scatter,
    "tensor_scatter": _tensor_scatter,
    **{
        method: _openvino(method)
        for method in (
            "openvino_gather",
            "openvino_scatter_update",
            "openvino_scatter_elements_update",
            "openvino_scatter_nd_update",
        )
    },
}
