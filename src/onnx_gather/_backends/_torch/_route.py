"""How the torch backend runs a call: its routes (:class:`Route`) and the one choice (:func:`route`)."""

from __future__ import annotations

import enum
import math
from typing import TYPE_CHECKING, Any, NamedTuple

import torch

from onnx_gather._backends import _numpy as numpy_kernels
from onnx_gather._backends._numpy import _kernels
from onnx_gather._backends._torch._indices import wrapped
from onnx_gather._backends._torch._inductor import in_graph_serves
from onnx_gather._backends._torch._numpy_views import fits, viewable

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from onnx_gather._spec import Plan
    from onnx_gather._spec.gather import OpenVINOGatherPlan
    from onnx_gather._spec.gather_nd import GatherNDPlan
    from onnx_gather._typing import Array, ScatterPlan


class Route(enum.Enum):
    """A way the torch backend runs a call; each is one module holding its kernels."""

    #: The NumPy backend's compiled kernel on zero-copy views of plain CPU tensors
    #: (:mod:`._numpy_views`): one pass that counts, checks and copies.
    NUMPY_VIEWS = "numpy-views"
    #: Torch's own kernel, bound to an eager call site of small CPU tensors
    #: (:mod:`._small_call`).
    SMALL_CALL = "small-call"
    #: One fused Triton kernel, for large CUDA calls where triton is installed
    #: (:mod:`._triton`).
    TRITON = "triton"
    #: One ``onnx_gather::run_v1`` operator of a recorded graph (:mod:`._recorded`).
    RECORDED = "recorded"
    #: Torch's operations with the check in the graph, which inductor compiles
    #: (:mod:`._inductor`; the gathers run the exact route's kernels on its indices).
    INDUCTOR = "inductor"
    #: The ONNX operator's own node, while ``torch.onnx.export`` traces (:mod:`._onnx`).
    ONNX = "onnx"
    #: Torch's own operations, exact on any device and differentiable (:mod:`._exact`).
    EXACT = "exact"


#: When :func:`route` chooses: as a call site is bound (``_api`` keeps the bound call for
#: later calls of the same key), at each call, or inside ``run_v1`` when a graph runs.
BIND, CALL, GRAPH = "bind", "call", "graph"


def route(
    method: str, plan: Plan, arrays: tuple[Array, ...], out: Any = None, /, *, when: str = CALL
) -> Route:
    """The route of a call of backend ``method``, on ``arrays`` in the operator's order.

    The one choice, from the operator's rules (:data:`_RULES`: where each route serves it
    and where it wins) and the state torch is in:

    * ``BIND``: torch's own kernel for small eager gathers (SMALL_CALL), the compiled
      kernel by address for the scatters (NUMPY_VIEWS); else EXACT, the method, which
      chooses at each call. Under a compiler nothing is kept: EXACT, or ONNX while
      ``torch.onnx.export`` traces with Dynamo.
    * ``CALL``: NUMPY_VIEWS where the NumPy backend's kernels may run on views of the
      tensors and win; under ``torch.compile`` INDUCTOR or RECORDED; under a tracer, a
      dispatch mode or a ``torch.func`` transform what the operator records there; then
      TRITON for large CUDA calls; else EXACT.
    * ``GRAPH`` (the eager kernel of ``run_v1``): NUMPY_VIEWS where the operator takes it
      there, TRITON, EXACT.
    """
    rules = _RULES.get(method, _BASE)
    if when == BIND:
        if torch.compiler.is_compiling():  # (``_api`` keeps nothing a compiler traces)
            return Route.ONNX if torch.onnx.is_in_onnx_export() else Route.EXACT
        return rules.bound(plan, arrays)
    if (when == CALL or rules.views_in_graph) and rules.views(plan, arrays, out):
        return Route.NUMPY_VIEWS
    if when == CALL:
        if torch.compiler.is_compiling():  # (first: Dynamo cannot trace what follows)
            return rules.compiled(plan, arrays)
        traced = rules.traced(plan, arrays)
        if traced is not None:
            return traced
    if rules.walk is not None and _on_triton(plan, arrays, rules.walk):
        return Route.TRITON
    return Route.EXACT


class _Rules(NamedTuple):
    """Where each route serves an operator, and where it wins."""

    #: Whether NUMPY_VIEWS serves and wins a call: ``views(plan, arrays, out)``.
    views: Callable[[Any, tuple[Any, ...], Any], bool]
    #: The route under ``torch.compile`` and ``torch.export``: ``compiled(plan, arrays)``.
    compiled: Callable[[Any, tuple[Any, ...]], Route]
    #: Outside a compiler, the route a tracer, a dispatch mode or a ``torch.func``
    #: transform makes of the call; None where none is at work.
    traced: Callable[[Any, tuple[Any, ...]], Route | None]
    #: The route a call site is bound to: ``bound(plan, arrays)``.
    bound: Callable[[Any, tuple[Any, ...]], Route]
    #: The shape the Triton kernel walks over data, ``walk(plan, data)``; None: no kernel.
    walk: Callable[[Any, torch.Tensor], Sequence[int]] | None = None
    #: Whether ``run_v1`` takes NUMPY_VIEWS when the graph runs.
    views_in_graph: bool = True


# -- where each route wins: thresholds (the figures: docs/performance.md) ---------------------

#: Without the compiled kernel, the outputs from which GatherElements off the last axis
#: runs NumPy's blocked kernel on views of the tensors: torch.gather along a leading axis
#: is slower there; elsewhere torch's kernels are as fast (docs/performance.md).
_FALLBACK_FROM = 1 << 13
#: Under ``torch.compile`` on the CPU, the outputs from which the fused operator (the
#: compiled kernel) beats inductor's code of torch's operations with the check in the
#: graph: the operator's Python costs more a call than the graph's own code, which the
#: kernel wins back from about 2**18 outputs of GatherElements and of gathers of short
#: rows; inductor copies long rows as fast as the kernel (docs/performance.md).
_FUSED_FROM = 1 << 18
#: The row length (elements) from which inductor's copies keep up with the kernel's.
_LONG_ROW = 64
#: The outputs up to which torch's own kernel beats the compiled one on a small call:
#: what the compiled kernel saves in its one pass, the views of the tensors it needs cost
#: back (docs/performance.md).
NATIVE_UP_TO = 1 << 12
#: Types torch's kernels do not copy bit for bit (NaN payloads of float16 and bfloat16:
#: :mod:`._exact`) or, for ``gather``, have no CPU kernel for (unsigned above 8 bits).
_NOT_BITS = (torch.float16, torch.bfloat16)
_NO_GATHER = (*_NOT_BITS, torch.uint16, torch.uint32, torch.uint64)
#: Types whose ``index_put`` torch lacks (unsigned above 8 bits) or inductor does not
#: generate code for (complex): their compiled scatters stay ``run_v1``.
_NO_INDEX_PUT = (torch.uint16, torch.uint32, torch.uint64, torch.complex64, torch.complex128)


# -- what torch is doing -----------------------------------------------------------------------


def recording() -> bool:
    """Whether a tracer records the torch operations this call runs.

    ``torch.jit.trace`` (and the TorchScript ONNX exporter, which uses it) keeps a tracing
    state; ``make_fx`` and fake-tensor propagation work through dispatch modes. (Checked
    with torch's C functions, on every eager call that asks.)
    """
    return torch._C._get_tracing_state() is not None or torch._C._len_torch_dispatch_stack() > 0


_batched = torch._C._functorch.is_batchedtensor


def _one_operator(*inputs: Any) -> bool:
    """Whether a call of a scatter is one ``onnx_gather::run_v1`` operator, outside a compiler.

    That is in a recorded graph (``torch.jit.trace``, a dispatch mode such as
    ``make_fx``'s or ``torch.export``'s), or under ``torch.func.vmap``, whose rule runs
    the operator per batch entry. Under another ``torch.func`` transform, torch's
    operations run. (One pass over the inputs: an eager call pays for one predicate.)
    """
    transformed = False
    for x in inputs:
        if isinstance(x, torch.Tensor) and wrapped(x):
            if _batched(x):
                return True
            transformed = True
    if transformed:
        return False
    return recording()


def _writes_nothing_checked(updates: torch.Tensor, plan: Plan) -> bool:
    """Whether a checked scatter writes no element, so no compiled write checks an index.

    The graph's own check rides on the writes (inductor's indirect-indexing assertion):
    with none (empty updates, or slices of no element) the call is ``run_v1``, whose
    check raises the eager IndexError when the graph runs (DESIGN: also when the output
    or updates are empty).
    """
    return plan.check_bounds and math.prod(updates.shape) == 0


def _reads_no_index(plan: Plan) -> bool:
    """Whether the result reads no index: nothing to read, or an empty axis (zeros)."""
    return math.prod(plan.out_shape) == 0 or any(size == 0 for size in plan.sizes)


_TRITON: Any = None


def triton() -> Any:
    """The TRITON route's module (``_triton``), or False where triton is not installed.

    Imported once, at the first large call on a CUDA tensor: large CUDA calls run one fused
    kernel (count, check, gather; one 8-byte read back when checked), smaller ones and
    everything else torch's kernels after one ``aminmax``.
    """
    global _TRITON
    if _TRITON is None:
        try:
            from onnx_gather._backends._torch import _triton as kernels
        except ImportError:
            _TRITON = False
        else:
            _TRITON = kernels
    return _TRITON


def _on_triton(plan: Plan, arrays: tuple[Array, ...], walk: Callable[..., Any]) -> bool:
    """Whether the Triton kernels serve this call (a CUDA one), walking ``walk``'s shape."""
    data, indices = arrays
    if not data.is_cuda:
        return False
    fused = triton()
    return bool(fused) and bool(fused.serves(data, indices, plan, walk(plan, data)))


# -- the gathers -------------------------------------------------------------------------------


def _compiled_wins(plan: Plan, arrays: tuple[Array, ...], out: Any) -> bool:
    """Gather and GatherND: NUMPY_VIEWS wherever the compiled kernel is built.

    One pass, against torch's kernels and their separate range pass (docs/benchmarks.md).
    """
    data, indices = arrays
    return viewable(data, indices) and numpy_kernels.compiled_available()


def _elements_views_win(plan: Plan, arrays: tuple[Array, ...], out: Any) -> bool:
    """GatherElements: :func:`_compiled_wins`, and without it on large outputs off the last axis.

    There NumPy's blocked kernel beats ``torch.gather`` (``_FALLBACK_FROM``).
    """
    data, indices = arrays
    return viewable(data, indices) and (
        numpy_kernels.compiled_available()
        or (plan.axis != len(plan.out_shape) - 1 and math.prod(plan.out_shape) >= _FALLBACK_FROM)
    )


def _known(condition: Any) -> bool:
    """A size test that places no guard: True only where it holds for every size.

    Under ``torch.export`` with dynamic dims (and ``torch.compile(dynamic=True)``) sizes
    are symbols; a plain comparison would guard on them, which export refuses for a dim
    declared to take any size ("Constraints violated ... satisfy the generated guard").
    A route chosen for speed then goes where it is not known to win: INDUCTOR, which
    serves every size.
    """
    if isinstance(condition, bool):  # (concrete sizes: eager calls and static graphs)
        return condition
    from torch.fx.experimental.symbolic_shapes import statically_known_true

    return bool(statically_known_true(condition))


def _fused_wins(plan: Plan, data: torch.Tensor) -> bool:
    """GatherElements under ``torch.compile``: the fused operator from ``_FUSED_FROM`` outputs.

    Where the compiled kernel is built (without it the operator runs torch's kernels).
    """
    return _known(math.prod(plan.out_shape) >= _FUSED_FROM) and numpy_kernels.compiled_available()


def _fused_wins_on_short_rows(plan: Plan, data: torch.Tensor) -> bool:
    """Gather and GatherND: as :func:`_fused_wins`, on rows shorter than ``_LONG_ROW``.

    The rows each index picks start at the axis after those the index addresses.
    """
    after = plan.axis + (len(plan.sizes) if plan.coordinates else 1)
    return _fused_wins(plan, data) and _known(math.prod(data.shape[after:]) < _LONG_ROW)


def _gathered_in_graph(
    fused_wins: Callable[[Plan, torch.Tensor], bool],
) -> Callable[[Plan, tuple[Array, ...]], Route]:
    """A gather under ``torch.compile`` and ``torch.export`` (both trace with Dynamo).

    A checked call on the CPU is RECORDED where ``fused_wins(plan, data)`` (the compiled
    kernel beats inductor's code by more than the operator's Python costs), where the
    result reads no index (the check would have nothing to feed) and for complex data
    (inductor generates no code for complex types: it warns and runs aten's); otherwise
    INDUCTOR: torch's operations with the check in the graph (:func:`._inductor.counted_in_graph`).
    """

    def compiled(plan: Plan, arrays: tuple[Array, ...]) -> Route:
        data = arrays[0]
        if plan.check_bounds and (
            not data.is_cpu or data.is_complex() or _reads_no_index(plan) or fused_wins(plan, data)
        ):
            return Route.RECORDED
        return Route.INDUCTOR

    return compiled


def _gather_traced(plan: Plan, arrays: tuple[Array, ...]) -> Route | None:
    """A gather under a tracer: RECORDED, or EXACT inside a ``torch.func`` transform.

    Under ``torch.jit.trace``, where the TorchScript ONNX exporter then writes the ONNX node
    itself, always RECORDED. Under ``make_fx`` when checked: the operator runs the eager
    kernel and its check when the graph runs; an unchecked call stays plain aten
    operations, for graphs bound for other runtimes. Inside a ``torch.func`` transform
    (vmap, grad) torch's own kernels serve, whose batching and gradient rules the
    transforms have; the check there is ``checked_indices_v1``.
    """
    data, indices = arrays
    if wrapped(data) or (isinstance(indices, torch.Tensor) and wrapped(indices)):
        return Route.EXACT
    if torch._C._get_tracing_state() is not None:
        return Route.RECORDED
    if plan.check_bounds and torch._C._len_torch_dispatch_stack() > 0:
        return Route.RECORDED
    return None


def _small_gather(plan: Plan, arrays: tuple[Array, ...]) -> bool:
    """Whether torch's kernel may serve calls of ``plan`` on arrays like ``arrays``.

    Plain tensors (no subclass, no NumPy indices) of a type torch copies bit for bit, and
    a small, non-empty result: an empty one reads no index, so torch's kernel checks none
    (an index out of range must still raise).
    """
    return (
        all(type(x) is torch.Tensor for x in arrays)
        and arrays[0].dtype not in _NOT_BITS
        and 0 < math.prod(plan.out_shape) <= NATIVE_UP_TO
    )


def _gather_bound(plan: Plan, arrays: tuple[Array, ...]) -> Route:
    """Gather: SMALL_CALL for small calls; a 0-d index would be basic indexing (a view)."""
    if _small_gather(plan, arrays) and arrays[1].ndim != 0:
        return Route.SMALL_CALL
    return Route.EXACT


def _elements_bound(plan: Plan, arrays: tuple[Array, ...]) -> Route:
    """GatherElements: SMALL_CALL for small calls of int64 indices and gathered types.

    ``torch.gather`` converts int32 indices first (docs/performance.md) and has no CPU
    kernel for unsigned types above 8 bits.
    """
    if (
        _small_gather(plan, arrays)
        and arrays[1].dtype == torch.int64
        and arrays[0].dtype not in _NO_GATHER
    ):
        return Route.SMALL_CALL
    return Route.EXACT


def _nd_bound(plan: GatherNDPlan, arrays: tuple[Array, ...]) -> Route:
    """GatherND: SMALL_CALL for small calls without batch dims, of two dims of indices or more.

    Indices of rank 1 address one slice: basic indexing (a view of data).
    """
    if _small_gather(plan, arrays) and not plan.batch_dims and arrays[1].ndim >= 2:
        return Route.SMALL_CALL
    return Route.EXACT


def _data_shape(plan: Plan, data: torch.Tensor) -> Sequence[int]:
    return tuple(data.shape)


def _out_shape(plan: Plan, data: torch.Tensor) -> Sequence[int]:
    return plan.out_shape


# -- the scatters ------------------------------------------------------------------------------


def _scatter_views(plan: ScatterPlan, arrays: tuple[Array, ...], out: Any) -> bool:
    """Whether a scatter runs the compiled kernel on views of plain CPU tensors."""
    data, indices, updates = arrays
    return (
        viewable(data, indices, updates)
        and numpy_kernels.compiled_available()
        and (out is None or (viewable(out, indices) and out.is_contiguous()))
        # (bfloat16 reaches NumPy as int16, whose arithmetic is not bfloat16's)
        and (data.dtype != torch.bfloat16 or plan.reduction == "none")
    )


def _scatter_compiled(plan: ScatterPlan, arrays: tuple[Array, ...]) -> Route:
    """A scatter under ``torch.compile``: INDUCTOR where it serves the call, else RECORDED.

    Torch's operations take as many rounds as a call's duplicates need, which a graph
    cannot fix in advance: INDUCTOR serves checked writes without reduction
    (:func:`._inductor.in_graph_serves`). Not under ``torch.export``: an exported program
    keeps ``run_v1``, whose check raises the eager IndexError wherever the program runs.
    """
    data, indices, updates = arrays
    if (
        not torch.compiler.is_exporting()
        and data.dtype not in _NO_INDEX_PUT
        and not _writes_nothing_checked(updates, plan)
        and in_graph_serves(data, indices, updates, plan)
    ):
        return Route.INDUCTOR
    return Route.RECORDED


def _scatter_traced(plan: Plan, arrays: tuple[Array, ...]) -> Route | None:
    """A scatter (TensorScatter too) under a tracer or ``torch.func.vmap``: RECORDED.

    (:func:`_one_operator` says where.)
    """
    return Route.RECORDED if _one_operator(*arrays) else None


def _bound_by_address(arrays: tuple[Array, ...]) -> bool:
    """Whether a bound call may write by address: plain tensors NumPy can view, kernel built."""
    return all(type(x) is torch.Tensor for x in arrays) and _kernels is not None and fits(*arrays)


def _scatter_bound(plan: ScatterPlan, arrays: tuple[Array, ...]) -> Route:
    """A scatter: NUMPY_VIEWS by address (:func:`_bound_by_address`), else EXACT.

    Not for bfloat16 reductions: NumPy sees bfloat16 as int16, whose arithmetic is not
    bfloat16's.
    """
    if _bound_by_address(arrays) and not (
        arrays[0].dtype == torch.bfloat16 and plan.reduction != "none"
    ):
        return Route.NUMPY_VIEWS
    return Route.EXACT


def _tensor_scatter_compiled(plan: Plan, arrays: tuple[Array, ...]) -> Route:
    """TensorScatter under ``torch.compile``: INDUCTOR unless a checked call writes nothing."""
    if _writes_nothing_checked(arrays[1], plan):
        return Route.RECORDED
    return Route.INDUCTOR


def _tensor_scatter_bound(plan: Plan, arrays: tuple[Array, ...]) -> Route:
    """TensorScatter: NUMPY_VIEWS in place for plain real tensors NumPy can view.

    (Complex types: EXACT, which sees their conjugate views.)
    """
    if _bound_by_address(arrays) and not arrays[0].is_complex():
        return Route.NUMPY_VIEWS
    return Route.EXACT


# -- OpenVINO's ----------------------------------------------------------------------------------


def _openvino_gather_views(plan: OpenVINOGatherPlan, arrays: tuple[Array, ...], out: Any) -> bool:
    """OpenVINO Gather without batch dims: the compiled kernel (Gather's) on views."""
    data, indices = arrays
    return (
        plan.batch_dims == 0  # (the kernel is Gather's; batch dims go as GatherND)
        and viewable(data, indices)
        and numpy_kernels.compiled_available()
    )


def _openvino_gather_compiled(plan: Plan, arrays: tuple[Array, ...]) -> Route:
    """OpenVINO Gather under ``torch.compile``: EXACT (the base's steps), RECORDED if complex.

    Inductor generates no code for complex types.
    """
    return Route.RECORDED if arrays[0].is_complex() else Route.EXACT


def _openvino_gather_traced(plan: Plan, arrays: tuple[Array, ...]) -> Route | None:
    """OpenVINO Gather under the TorchScript exporter: ONNX (the dynamo one binds it)."""
    if recording() and torch.onnx.is_in_onnx_export():
        return Route.ONNX
    return None


def _openvino_scatter_compiled(plan: Plan, arrays: tuple[Array, ...]) -> Route:
    """An OpenVINO scatter in a recorded graph: RECORDED, ONNX while exported.

    Its steps check and read values as they go, which a graph cannot fix in advance.
    """
    return Route.ONNX if torch.onnx.is_in_onnx_export() else Route.RECORDED


def _openvino_scatter_traced(plan: Plan, arrays: tuple[Array, ...]) -> Route | None:
    """An OpenVINO scatter under a tracer or ``torch.func.vmap``: as under a compiler."""
    if _one_operator(*arrays):
        return _openvino_scatter_compiled(plan, arrays)
    return None


def _never(plan: Plan, arrays: tuple[Array, ...], out: Any = None) -> bool:
    return False


def _exact(plan: Plan, arrays: tuple[Array, ...]) -> Route:
    return Route.EXACT


def _untraced(plan: Plan, arrays: tuple[Array, ...]) -> Route | None:
    return None


#: An operator without rules of its own (one the torch backend does not specialise): the
#: base's array-API kernel, on every route's moment.
_BASE = _Rules(_never, _exact, _untraced, _exact, views_in_graph=False)


_OPENVINO_SCATTER = _Rules(
    _never, _openvino_scatter_compiled, _openvino_scatter_traced, _exact, views_in_graph=False
)

#: Each operator's rules, by its registry method name.
_RULES: dict[str, _Rules] = {
    "gather": _Rules(
        _compiled_wins,
        _gathered_in_graph(_fused_wins_on_short_rows),
        _gather_traced,
        _gather_bound,
        _data_shape,
    ),
    "gather_elements": _Rules(
        _elements_views_win,
        _gathered_in_graph(_fused_wins),
        _gather_traced,
        _elements_bound,
        _out_shape,
    ),
    "gather_nd": _Rules(
        _compiled_wins, _gathered_in_graph(_fused_wins_on_short_rows), _gather_traced, _nd_bound
    ),
    "scatter_elements": _Rules(_scatter_views, _scatter_compiled, _scatter_traced, _scatter_bound),
    "scatter_nd": _Rules(_scatter_views, _scatter_compiled, _scatter_traced, _scatter_bound),
    "tensor_scatter": _Rules(
        _never, _tensor_scatter_compiled, _scatter_traced, _tensor_scatter_bound
    ),
    "openvino_gather": _Rules(
        _openvino_gather_views,
        _openvino_gather_compiled,
        _openvino_gather_traced,
        _exact,
        views_in_graph=False,
    ),
    "openvino_scatter_update": _OPENVINO_SCATTER,
    "openvino_scatter_elements_update": _OPENVINO_SCATTER,
    "openvino_scatter_nd_update": _OPENVINO_SCATTER,
}
