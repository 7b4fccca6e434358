"""``onnx_gather::run_v1`` as torch's own operators, for ``ExportedProgram.run_decompositions()``.

An exported program keeps each recorded call as one ``run_v1`` (:mod:`._recorded`):
its kernel is the library's, exact wherever the program runs. Another backend of
``torch.export`` lowers aten operators only, so ``run_decompositions()`` (torch's
default table) replaces each ``run_v1`` with what this module traces: the same values,
bit for bit, in aten operators, a ``torch.cond`` whose branch raises the library's
IndexError (``onnx_gather::out_of_range_v1``, :func:`._inductor.counted_in_graph`) and,
for a scatter's reduction, one ``torch.while_loop`` of rounds.

How torch finds it: its default table decomposes every functional custom operator with
a CompositeImplicitAutograd kernel (``torch._export.utils._collect_all_valid_cia_ops``,
torch 2.13), and one written in Python (``OpOverload.py_impl``) is the decomposition
itself (``_get_decomp_for_cia``). It is registered on that key only (the operator's own
kernels keep every other key: eager calls, ``torch.compile``, ``vmap`` and autograd are
unchanged), and only once the process exports a call (:func:`register`). Torch also
offers that kernel to other traces (fake tensors, ``make_fx``, AOTAutograd's
functionalization): there it answers NotImplemented, and they record ``run_v1`` as
before (:func:`_decomposing`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch

from onnx_gather import _ops
from onnx_gather._backends._torch import _exact as exact
from onnx_gather._backends._torch._dtypes import SIGNED
from onnx_gather._backends._torch._inductor import _functional_mode

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from onnx_gather._spec.reductions import Reduction
    from onnx_gather._typing import ScatterPlan


def _decomposing() -> bool:
    """Whether torch asks for the decomposition to record it (``run_decompositions``).

    There ``torch.export`` retraces the program functionalized (a FunctionalTensorMode is
    in force) while exporting. Its own trace (``torch.export.export``) runs fake tensors
    alone, and ``torch.compile`` is not exporting: both keep ``run_v1``.
    """
    return torch.compiler.is_exporting() and _functional_mode() is not None


def decomposition(
    inputs: Sequence[torch.Tensor], op: str, ints: Sequence[int], strings: str, check_bounds: bool
) -> Any:
    """``run_v1``'s CompositeImplicitAutograd kernel: the call as torch's operators.

    NotImplemented where torch offers it outside ``run_decompositions``
    (:func:`_decomposing`), and for the operators without one yet (OpenVINO's scatters,
    whose steps read values as they go, and TensorScatter, recorded only where it writes
    nothing): the trace then records ``run_v1`` itself.
    """
    operator, _ = _ops.BY_MESSAGE_NAME[op]
    if operator.method not in DECOMPOSED or not _decomposing():
        return NotImplemented
    from onnx_gather._backends._torch._recorded import _plan

    plan = _plan(inputs, op, ints, check_bounds, strings)
    # ``torch.cond`` and ``torch.while_loop`` outside Dynamo trace their branches with
    # Dynamo, one compilation of each branch function per call; seeing another value of
    # an int the branch captures (an axis, a size) it made that int dynamic, a SymInt
    # operand of the node, which a later export pass cannot name ("'int' object has no
    # attribute 'name'", torch 2.13 ``_name_hoo_subgraph_placeholders``). Static here:
    # each call's values are constants of its own branches.
    with torch._dynamo.config.patch(automatic_dynamic_shapes=False):
        out: torch.Tensor = DECOMPOSED[operator.method](*inputs, plan)
    return out


_REGISTERED = False


def register() -> None:
    """Make :func:`decomposition` ``run_v1``'s CompositeImplicitAutograd kernel (once).

    Called as a call is exported (``run_v1``'s fake kernel while ``torch.export`` traces),
    so before any ``run_decompositions()`` of the program. Inductor's decomposition
    table is imported first: it is a copy of torch's default table taken at its import
    (``torch/_inductor/decomposition.py``), and inductor refuses to fall back to an
    operator that table decomposes ("both a fallback and a decomp for same op"), which
    ``torch.compile`` of a ``run_v1`` needs.
    """
    global _REGISTERED
    if _REGISTERED:
        return
    _REGISTERED = True
    import torch._inductor.decomposition  # (its table, without run_v1)

    key = torch._C.DispatchKey.CompositeImplicitAutograd
    torch.ops.onnx_gather.run_v1.default.py_impl(key)(decomposition)


def _scatter(
    data: torch.Tensor, indices: torch.Tensor, updates: torch.Tensor, plan: ScatterPlan
) -> torch.Tensor:
    """ScatterElements and ScatterND: the exact route's layout, written by :func:`_write`.

    The indices are counted and checked as the exact route's under a compiler
    (:func:`._exact.counted_on`: a ``torch.cond`` that raises the eager IndexError), or,
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
    """:func:`write`, wide unsigned types through their signed twins (as :func:`._exact._write`)."""
    signed = SIGNED.get(target.dtype)
    if signed is None:
        return write(target, rows, values, keep, reduction)
    flip = torch.iinfo(signed).min if reduction in ("max", "min") else 0
    result = write(target.view(signed) ^ flip, rows, values.view(signed) ^ flip, keep, reduction)
    return (result ^ flip).view(target.dtype)


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
      stable sort by row), then one round per rank in a ``torch.while_loop`` (their
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

    def more(r: torch.Tensor, result: torch.Tensor) -> torch.Tensor:
        return r < rounds

    def round_(r: torch.Tensor, result: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        at = torch.where(rank == r, aimed, n)
        combined = exact.combine(reduction, result[at], values)
        return r + 1, result.index_put((at,), combined)

    start = torch.zeros((), dtype=torch.int64, device=rows.device)
    _, result = torch.while_loop(more, round_, (start, padded))
    return result[:n]


def _gather(method: str) -> Callable[..., torch.Tensor]:
    """A gather: the exact route's kernel, whose check under a compiler is in the graph."""
    own: Callable[..., torch.Tensor] = getattr(exact, method)

    def gathered(data: torch.Tensor, indices: torch.Tensor, plan: Any) -> torch.Tensor:
        return own(data, indices, plan).contiguous()

    return gathered


def _openvino(method: str) -> Callable[..., torch.Tensor]:
    """An OpenVINO operator: the base backend's steps, traced (OpenVINO's Gather).

    They are ONNX operators and torch's elementwise ones (:class:`._base.Backend`); each
    ONNX call among them is recorded as a ``run_v1`` of its own, which this module
    decomposes in turn.
    """

    def steps(*args: Any) -> torch.Tensor:
        from onnx_gather._backends._base import Backend
        from onnx_gather._backends._torch import backend

        out: torch.Tensor = getattr(Backend, method)(backend, *args)
        return out.contiguous()

    return steps


#: Each operator's decomposition, by its registry method name: ``(*inputs, plan)``.
DECOMPOSED: dict[str, Callable[..., torch.Tensor]] = {
    "gather": _gather("gather"),
    "gather_elements": _gather("gather_elements"),
    "gather_nd": _gather("gather_nd"),
    "scatter_elements": _scatter,
    "scatter_nd": _scatter,
    **{method: _openvino(method) for method in ("openvino_gather",)},
}
