"""PyTorch, CPU and CUDA: each call on the route :func:`._route.route` chooses for it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from onnx_gather import _ops
from onnx_gather._backends import _numpy as numpy_kernels
from onnx_gather._backends._base import Backend, Composing
from onnx_gather._backends._numpy import _kernels
from onnx_gather._backends._torch import _decomposed as decomposed
from onnx_gather._backends._torch import _dtypes, _onnx
from onnx_gather._backends._torch import _exact as exact
from onnx_gather._backends._torch import _inductor as inductor
from onnx_gather._backends._torch import _numpy_views as numpy_views
from onnx_gather._backends._torch import _recorded as recorded
from onnx_gather._backends._torch import _small_call as small_call
from onnx_gather._backends._torch._indices import values_unknown
from onnx_gather._backends._torch._indices import xp as _xp
from onnx_gather._backends._torch._route import BIND, GRAPH, Route, route, triton
from onnx_gather._host import Unrepresentable, python_indices

if TYPE_CHECKING:
    from collections.abc import Callable

    from onnx_gather._backends._base import Call
    from onnx_gather._spec import Plan
    from onnx_gather._spec.gather import OpenVINOGatherPlan
    from onnx_gather._spec.openvino_scatter import OpenVINOScatterPlan, ScatterUpdatePlan
    from onnx_gather._spec.scatter_elements import ScatterElementsPlan
    from onnx_gather._spec.scatter_nd import ScatterNDPlan
    from onnx_gather._spec.tensor_scatter import TensorScatterPlan
    from onnx_gather._typing import Array, ScatterPlan


def _gathering(
    method: str, kernel: Callable[..., Any], own: Callable[..., torch.Tensor], doc: str
) -> Callable[..., torch.Tensor]:
    """A gather's method: the call on its route (:func:`._route.route`).

    ``kernel`` is the NumPy backend's (NUMPY_VIEWS), ``own`` the exact route's, which
    INDUCTOR runs too, on the indices it checks in the graph (:func:`._exact.counted_on`).
    What ``run_v1`` runs when the graph runs is registered with :mod:`._recorded`.
    """

    def gathered(self: Any, data: torch.Tensor, indices: Array, plan: Any, /) -> torch.Tensor:
        way = route(method, plan, (data, indices))
        if way is Route.NUMPY_VIEWS:
            return numpy_views.on_numpy(kernel, data, indices, plan)
        if way is Route.RECORDED:
            if isinstance(indices, np.ndarray):  # host indices: a constant of the graph
                indices = _constant(indices, data)
            return _record(data, indices, plan=plan)
        if way is Route.TRITON:
            return getattr(triton(), method)(data, indices, plan)
        return own(data, indices, plan)

    def when_the_graph_runs(data: torch.Tensor, indices: Array, plan: Any) -> torch.Tensor:
        way = route(method, plan, (data, indices), when=GRAPH)
        if way is Route.NUMPY_VIEWS:
            return numpy_views.on_numpy(kernel, data, indices, plan)
        if way is Route.TRITON:
            return getattr(triton(), method)(data, indices, plan)
        return own(data, indices, plan)

    gathered.__name__, gathered.__doc__ = method, doc
    recorded.register(method, when_the_graph_runs)
    return gathered


class TorchBackend(Backend):
    """The PyTorch backend: each call on its route (:class:`._route.Route`).

    :func:`._route.route` chooses, as a call site is bound and at each call: the NumPy
    backend's compiled kernel on views of plain CPU tensors (NUMPY_VIEWS), torch's own
    kernel for small eager gathers (SMALL_CALL), one Triton kernel for large CUDA calls
    (TRITON), one ``run_v1`` operator of a recorded graph (RECORDED), torch's operations
    with the check in a compiled graph (INDUCTOR), the ONNX node while exporting (ONNX),
    and torch's own operations everywhere else (EXACT). Each route is one module holding
    its kernels for every operator; the methods below hand a call to its route's kernel.
    """

    name = "torch"

    def owns(self, x: Array, /) -> bool:
        return isinstance(x, torch.Tensor)

    #: Under ``torch.compile`` (and ``torch.export``): Dynamo runs this Python
    #: symbolically, or AOTAutograd records it. Torch's function itself, not a method
    #: around it: every call asks, tiny ones too (docs/performance.md).
    traced = staticmethod(torch.compiler.is_compiling)

    def host_under_trace(self, indices: Array, data: torch.Tensor, /) -> Any:
        """Host indices as a tensor on data's device, under ``torch.compile``.

        Dynamo models a NumPy array as a tensor and cannot read its dtype or flags, so the
        NumPy route of eager calls does not trace: an array becomes a tensor as it is.
        Python ints, ranges and (nested) lists are constants to Dynamo, checked here by the
        same rules as eagerly, in plain Python (:func:`onnx_gather._host.python_indices`),
        and become int64 constants of the graph (float64 where NumPy would make floats, for
        the plan's TypeError); their values are checked in the graph, when it runs. Where
        the Python runs as it is (``torch.export``'s non-strict trace, which
        ``torch.onnx.export`` makes), an array of the other byte order is made native first:
        torch takes no other.
        """
        if isinstance(indices, (np.ndarray, np.generic)):
            if not torch.compiler.is_dynamo_compiling() and not indices.dtype.isnative:
                indices = indices.astype(indices.dtype.newbyteorder("="))
            return torch.as_tensor(indices, device=data.device)
        parsed = python_indices(indices)
        if parsed is None or isinstance(parsed, Unrepresentable):
            return parsed
        flat, shape = parsed
        floating = any(not isinstance(v, int | np.integer) for v in flat)
        dtype = torch.float64 if floating else torch.int64
        return torch.tensor(flat, dtype=dtype, device=data.device).reshape(shape)

    def bind(self, method: str, plan: Plan, arrays: tuple[Array, ...], /) -> Call:
        """Small eager gathers on CPU tensors: torch's kernel first (:mod:`._small_call`).

        Not while Dynamo traces the call (host indices under ``torch.compile``): the
        compiled graph holds the exact path, whose checks it can trace. While
        ``torch.onnx.export`` traces the model (its default, dynamo exporter), the call is
        the ONNX node (:class:`_Exporting`).
        """
        way = route(method, plan, arrays, when=BIND)
        if way is Route.ONNX:  # torch.onnx.export, dynamo: each call its ONNX node
            return _EXPORTING.bind(method, plan, arrays)
        own = super().bind(method, plan, arrays)
        binder = None if way is Route.EXACT else BINDERS.get(method)
        return own if binder is None else binder(plan, arrays, own)

    def check_writable(self, out: torch.Tensor, /) -> None:
        """As :meth:`Backend.check_writable`; a C-ordered tensor answers at once (no overlap)."""
        try:
            if out.is_contiguous():
                return
        except RuntimeError:  # (sparse layouts have no strides: the base says what it can)
            pass
        super().check_writable(out)

    def shape(self, x: torch.Tensor, /) -> tuple[int, ...]:
        if x.is_nested:  # its sizes are per component: torch raises an "Internal error"
            msg = "nested tensors are not supported; pass a strided (dense) tensor"
            raise TypeError(msg)
        return tuple(x.shape)

    def dtype_name(self, x: torch.Tensor, /) -> str:
        return _dtypes.dtype_name(x)

    def namespace(self, x: torch.Tensor, /) -> Any:
        """array-api-compat's torch namespace, held here (:data:`._indices.xp`).

        Not ``array_namespace`` per call: Dynamo traces into its ``functools.lru_cache``
        and warns (the base's OpenVINO Gather under ``torch.compile`` with host indices).
        """
        return _xp

    def openvino_gather(
        self, data: torch.Tensor, indices: Array, plan: OpenVINOGatherPlan, /
    ) -> torch.Tensor:
        """OpenVINO Gather-7/8: the base's (the valid indices read, then :meth:`keep`).

        Plain CPU tensors without batch dims run the compiled kernel on views, in one
        pass that reads zeros for an invalid index
        (:func:`onnx_gather._backends._numpy.openvino_gather`). Under ``torch.compile``
        complex data is one ``onnx_gather::run_v1`` operator: inductor generates no code
        for complex types.
        """
        way = route("openvino_gather", plan, (data, indices))
        if way is Route.NUMPY_VIEWS:
            return numpy_views.on_numpy(numpy_kernels.openvino_gather, data, indices, plan)
        if way is Route.RECORDED:
            return _record(data, _on(data, indices), plan=plan)
        if way is Route.ONNX:  # (the TorchScript exporter; the dynamo one binds _EXPORTING)
            return _EXPORTING.openvino_gather(data, indices, plan)
        return super().openvino_gather(data, indices, plan)

    def all_known(self, flags: torch.Tensor, /) -> bool:
        """Whether every entry of ``flags`` is True: read on the CPU, outside any trace.

        One reduction, no device to wait for.
        """
        return flags.device.type == "cpu" and not values_unknown(flags) and bool(flags.all())

    def keep(self, where: torch.Tensor, x: torch.Tensor, /) -> torch.Tensor:
        """``x`` where ``where`` holds, else zero; compiled, as the bits of its type.

        Under ``torch.compile`` floats and unsigned types go as the signed integers of
        their bits. Inductor computes float16 and bfloat16 in float32, which would quiet
        signalling NaNs, and refuses to promote unsigned types above 8 bits; an integer
        view of the same bits moves every one as it is. Not where a gradient flows: a bit
        view has none.
        """
        bits = _SAME_BITS.get(x.dtype)
        if bits is None or not torch.compiler.is_compiling() or x.requires_grad:
            return torch.where(where, x, torch.zeros((), dtype=x.dtype, device=x.device))
        zero = torch.zeros((), dtype=bits, device=x.device)
        return torch.where(where, x.view(bits), zero).view(x.dtype)

    gather = _gathering(
        "gather",
        numpy_kernels.gather,
        exact.gather,
        """ONNX Gather: the compiled kernel on CPU views, Triton on large CUDA calls.

        Elsewhere ``index_select`` of checked indices.
        """,
    )
    gather_elements = _gathering(
        "gather_elements",
        numpy_kernels.gather_elements,
        exact.gather_elements,
        """ONNX GatherElements (and OpenVINO's): as :meth:`gather`, with ``torch.gather``.

        Without the compiled kernel, large calls off the last axis run NumPy's blocked
        kernel on views (``._route._FALLBACK_FROM``).
        """,
    )
    gather_nd = _gathering(
        "gather_nd",
        numpy_kernels.gather_nd,
        exact.gather_nd,
        """ONNX GatherND: the compiled kernel on CPU views, else advanced indexing.

        Advanced indexing (CUDA, autograd, ``torch.compile``, ``torch.func``) of indices
        checked and counted per coordinate; its backward accumulates repeated tuples.
        """,
    )

    def scatter_elements(
        self,
        data: torch.Tensor,
        indices: Array,
        updates: torch.Tensor,
        plan: ScatterElementsPlan,
        out: torch.Tensor | None = None,
        /,
    ) -> torch.Tensor:
        """ONNX ScatterElements: the compiled kernel on CPU views, else torch's operations.

        Torch's operations (:mod:`._exact`) serve CUDA and autograd, exactly.
        """
        kernel, own = numpy_kernels.scatter_elements, exact.scatter_elements
        return _scatter_call("scatter_elements", kernel, own, data, indices, updates, plan, out)

    def scatter_nd(
        self,
        data: torch.Tensor,
        indices: Array,
        updates: torch.Tensor,
        plan: ScatterNDPlan,
        out: torch.Tensor | None = None,
        /,
    ) -> torch.Tensor:
        """ONNX ScatterND: as :meth:`scatter_elements`."""
        kernel, own = numpy_kernels.scatter_nd, exact.scatter_nd
        return _scatter_call("scatter_nd", kernel, own, data, indices, updates, plan, out)

    def tensor_scatter(
        self,
        data: torch.Tensor,
        updates: torch.Tensor,
        indices: Array,
        plan: TensorScatterPlan,
        out: torch.Tensor | None = None,
        /,
    ) -> torch.Tensor:
        """ONNX TensorScatter: torch's operations (:mod:`._exact`).

        Write indices are read to the host once, and checked there. Under
        ``torch.compile`` the writes and their check are graph operations; a recorded call
        (``torch.jit.trace``, ``make_fx``, ``torch.export``) or one under ``torch.func.vmap``
        is one ``onnx_gather::run_v1`` operator. Eagerly, the device's write indices are
        read once; ``out=data`` writes only the new positions (no copy of the cache).
        """
        way = route("tensor_scatter", plan, (data, updates, indices), out)
        if way is Route.INDUCTOR:
            return inductor.tensor_scatter(data, updates, _on(data, indices), plan)
        grad = torch.is_grad_enabled() and (data.requires_grad or updates.requires_grad)
        if way is Route.RECORDED:
            result = _record(data, updates, _on(data, indices), plan=plan)
        elif out is None or grad:
            result = exact.tensor_scatter(data, updates, indices, plan)
        else:  # in place, or into out: nothing but the cache is copied
            starts = plan.checked_starts(indices)
            if out.requires_grad:  # (a leaf that requires grad: written as torch's out= is)
                with torch.no_grad():
                    exact.tensor_scatter_into(out, data, updates, starts, plan)
            else:  # (nothing here requires grad: nothing to record, no no_grad to enter)
                exact.tensor_scatter_into(out, data, updates, starts, plan)
            return out
        return _into(out, result, grad)

    def openvino_scatter_update(
        self,
        data: torch.Tensor,
        indices: Array,
        updates: torch.Tensor,
        plan: ScatterUpdatePlan,
        out: torch.Tensor | None = None,
        /,
    ) -> torch.Tensor:
        """OpenVINO ScatterUpdate-3: the base's; recorded, one operator (:func:`_openvino`)."""
        base = super().openvino_scatter_update
        return _openvino("openvino_scatter_update", base, data, indices, updates, plan, out)

    def openvino_scatter_elements_update(
        self,
        data: torch.Tensor,
        indices: Array,
        updates: torch.Tensor,
        plan: OpenVINOScatterPlan,
        out: torch.Tensor | None = None,
        /,
    ) -> torch.Tensor:
        """OpenVINO ScatterElementsUpdate-3/12: as :meth:`openvino_scatter_update`."""
        base = super().openvino_scatter_elements_update
        return _openvino(
            "openvino_scatter_elements_update", base, data, indices, updates, plan, out
        )

    def openvino_scatter_nd_update(
        self,
        data: torch.Tensor,
        indices: Array,
        updates: torch.Tensor,
        plan: OpenVINOScatterPlan,
        out: torch.Tensor | None = None,
        /,
    ) -> torch.Tensor:
        """OpenVINO ScatterNDUpdate-3/15: as :meth:`openvino_scatter_update`."""
        base = super().openvino_scatter_nd_update
        return _openvino("openvino_scatter_nd_update", base, data, indices, updates, plan, out)

    def negated(self, x: torch.Tensor, /) -> torch.Tensor:
        """``-x``; unsigned types above 8 bits through their signed twins (torch has no neg)."""
        signed = _dtypes.SIGNED.get(x.dtype)
        if signed is None:
            return -x
        return (-x.view(signed)).view(x.dtype)

    def floor_divided(self, total: torch.Tensor, n: torch.Tensor, /) -> torch.Tensor:
        """As the base's; torch divides no unsigned type above 8 bits.

        uint16 and uint32 divide in int64; uint64 on the host, with NumPy (its values do
        not fit int64).
        """
        if total.dtype in (torch.uint16, torch.uint32):
            return (total.to(torch.int64) // n.to(torch.int64)).to(total.dtype)
        if total.dtype == torch.uint64:  # (through int64 views: the same bits)
            values = total.cpu().view(torch.int64).numpy().view(np.uint64)
            host = values // n.cpu().numpy().astype(np.uint64)
            return torch.from_numpy(host.view(np.int64)).view(torch.uint64).to(total.device)
        return super().floor_divided(total, n)


def _openvino(
    method: str,
    base: Callable[..., torch.Tensor],
    data: torch.Tensor,
    indices: Array,
    updates: torch.Tensor,
    plan: Plan,
    out: torch.Tensor | None,
) -> torch.Tensor:
    """An OpenVINO scatter: ``base`` (ONNX scatters in a row), or one recorded operator.

    Recorded (``torch.compile``, ``torch.export``, ``make_fx``, ``torch.jit.trace``) or
    under ``torch.func.vmap``, the call is one ``onnx_gather::run_v1`` of the OpenVINO
    operator, which runs ``base`` eagerly when the graph runs: its steps check and read
    values as they go, which a graph cannot fix in advance.
    """
    way = route(method, plan, (data, indices, updates), out)
    if way is Route.EXACT:
        return base(data, indices, updates, plan, out)
    if way is Route.ONNX:  # (the TorchScript exporter; the dynamo one binds _EXPORTING)
        return getattr(_EXPORTING, method)(data, indices, updates, plan, out)
    grad = (
        out is not None
        and torch.is_grad_enabled()
        and (data.requires_grad or updates.requires_grad)
    )
    result = _record(data, _on(data, indices), updates, plan=plan)
    return _into(out, result, grad)


def _record(*inputs: torch.Tensor, plan: Plan) -> torch.Tensor:
    """The call as one ``run_v1`` of the graph being recorded (:func:`._recorded.call`).

    Under ``torch.export`` the decompositions that ``run_decompositions()`` lowers it
    with are registered first (once, :func:`._decomposed.register`).
    """
    if torch.compiler.is_exporting():
        decomposed.register(backend)
    return recorded.call(*inputs, plan=plan)


def _on(data: torch.Tensor, indices: Array) -> torch.Tensor:
    """Host indices (a NumPy array) as an int64 tensor on data's device; a tensor as it is."""
    if isinstance(indices, np.ndarray):
        return _constant(indices.astype(np.int64), data)
    return indices


def _constant(indices: np.ndarray, data: torch.Tensor) -> torch.Tensor:
    """Host indices as a new tensor on data's device (in a recorded graph: a constant).

    Under ``torch.jit.trace`` made from a list: the tracer records a tensor made from an
    array as ``aten::lift_fresh``, which the TorchScript ONNX exporter cannot write in a
    model that also writes a tensor in place (pytorch#151932).
    """
    if torch._C._get_tracing_state() is not None:
        dtype = getattr(torch, str(indices.dtype))
        made = torch.tensor(indices.tolist(), dtype=dtype, device=data.device)
        return made.reshape(indices.shape)
    return torch.as_tensor(indices.copy(), device=data.device)


def _scatter_call(
    method: str,
    kernel: Callable[..., Any],
    own: Callable[..., torch.Tensor],
    data: torch.Tensor,
    indices: Array,
    updates: torch.Tensor,
    plan: ScatterPlan,
    out: torch.Tensor | None,
) -> torch.Tensor:
    """A scatter: the compiled kernel on views, a fused operator, or torch's operations.

    Plain CPU tensors run the compiled kernel on views (in place where ``out`` is data).
    A recorded call (``torch.compile``, ``torch.export``, ``make_fx``, ``torch.jit.trace``)
    is one ``onnx_gather::run_v1`` operator, checked or not: torch's operations take as
    many rounds as the call's duplicates need, which a graph cannot fix in advance.
    So is a call under ``torch.func.vmap``, whose rule runs the operator per batch entry.
    Anything else (CUDA, autograd, forward-mode AD, ``torch.func.grad``) runs ``own``,
    torch's operations.
    """
    way = route(method, plan, (data, indices, updates), out)
    if way is Route.NUMPY_VIEWS:
        return numpy_views.scatter_on_numpy(kernel, data, indices, updates, plan, out)
    if isinstance(indices, np.ndarray):  # host indices (in a graph: a constant of it)
        indices = _constant(indices, data)
    grad = (
        out is not None
        and torch.is_grad_enabled()
        and (data.requires_grad or updates.requires_grad)
    )
    if grad and exact.shares_memory(out, data, updates):
        # The result's gradient formulas read data and updates as they were: ``out``,
        # written in place below, must not be one of them (autograd would refuse the
        # backward: "modified by an inplace operation").
        data, updates = data.clone(), updates.clone()
    if way is Route.INDUCTOR:
        result = inductor.scatter(data, indices, updates, plan)
    elif way is Route.RECORDED:
        # (under torch.func.vmap: its rule calls the operator per batch entry)
        result = _record(data, indices, updates, plan=plan)
    else:
        exact.check_servable(data, indices)
        result = own(data, indices, updates, plan)
    return _into(out, result, grad)


def _into(out: torch.Tensor | None, result: torch.Tensor, grad: bool) -> torch.Tensor:
    """``result``, or ``out`` holding it: a scatter's out=.

    With ``grad``, the copy is recorded, as index_put_ is: the gradient flows through out
    to data and updates (torch refuses an out that is a leaf requiring grad, as for its
    own out=).
    """
    if out is None:
        return result
    if grad:
        out.copy_(result)
        return out
    with torch.no_grad():
        out.copy_(result)
    return out


#: The signed integer type of each float and unsigned type's width (:meth:`TorchBackend.keep`).
_SAME_BITS = {
    torch.float16: torch.int16, torch.bfloat16: torch.int16, torch.float32: torch.int32,
    torch.float64: torch.int64, **_dtypes.SIGNED,
}  # fmt: skip


def _scatter_when_the_graph_runs(
    method: str, own: Callable[..., torch.Tensor], kernel: Callable[..., Any]
) -> Callable[..., torch.Tensor]:
    """What the fused operator of a scatter runs: the compiled kernel on views, else ``own``."""

    def run(
        data: torch.Tensor, indices: Array, updates: torch.Tensor, plan: ScatterPlan
    ) -> torch.Tensor:
        if route(method, plan, (data, indices, updates), when=GRAPH) is Route.NUMPY_VIEWS:
            return numpy_views.scatter_on_numpy(kernel, data, indices, updates, plan, None)
        return own(data, indices, updates, plan)

    return run


# What the fused operator of each scatter runs when the graph runs (the gathers' are
# registered by _gathering).
for _method, _own, _kernel in (
    ("scatter_elements", exact.scatter_elements, numpy_kernels.scatter_elements),
    ("scatter_nd", exact.scatter_nd, numpy_kernels.scatter_nd),
):
    recorded.register(_method, _scatter_when_the_graph_runs(_method, _own, _kernel))
recorded.register("tensor_scatter", exact.tensor_scatter)

backend = TorchBackend()

#: Each operator's bound call for eager CPU calls, by its registry method name: torch's
#: own kernel for small gathers (:mod:`._small_call`), the compiled kernel by address for
#: the scatters (:mod:`._numpy_views`); each takes its operator's plan.
BINDERS: dict[str, Callable[[Any, tuple[Any, ...], Call], Call]] = {
    "gather": small_call.gather,
    "gather_elements": small_call.gather_elements,
    "gather_nd": small_call.gather_nd,
    "scatter_elements": numpy_views.bind_scatter(
        getattr(_kernels, "scatter_elements", None), axis=True
    ),
    "scatter_nd": numpy_views.bind_scatter(getattr(_kernels, "scatter_nd", None), axis=False),
    "tensor_scatter": numpy_views.bind_tensor_scatter,
}


def _openvino_gather_when_the_graph_runs(
    data: torch.Tensor, indices: torch.Tensor, plan: OpenVINOGatherPlan
) -> torch.Tensor:
    """The base's OpenVINO Gather, dense as ``run_v1``'s fake kernel says.

    (A batch dim before the axis leaves the result's dims permuted.)
    """
    return Backend.openvino_gather(backend, data, indices, plan).contiguous()


recorded.register("openvino_gather", _openvino_gather_when_the_graph_runs)


def _openvino_when_the_graph_runs(method: str) -> Callable[..., torch.Tensor]:
    """What the recorded operator of OpenVINO's scatter ``method`` runs: the base's steps."""
    run = getattr(Backend, method)

    def eager(
        data: torch.Tensor, indices: torch.Tensor, updates: torch.Tensor, plan: Plan
    ) -> torch.Tensor:
        out: torch.Tensor = run(backend, data, indices, updates, plan)
        return out

    return eager


for _method in (
    "openvino_scatter_update", "openvino_scatter_elements_update", "openvino_scatter_nd_update"
):  # fmt: skip
    recorded.register(_method, _openvino_when_the_graph_runs(_method))


class _Exporting(Composing, TorchBackend):
    """The backend while ``torch.onnx.export`` traces a model: every call is ONNX operators.

    An ONNX operator's call is its own node (:func:`._onnx.node`, through :func:`_node`),
    which checks its indices itself: no check around it. OpenVINO's functions are the base's compositions
    of those operators and of torch's elementwise operations, which the exporters write
    as standard ONNX operators: Gather-7/8's zeros are a mask and a Where
    (:meth:`keep`); ScatterUpdate's negative indices become the axis' size, out of range
    for the node (:meth:`without_negatives`).
    """

    # (a reduction's second scatter into the first's result would add an in-place copy)
    writes_in_place = False
    bind = Backend.bind  # (the method itself)

    def negated(self, x: torch.Tensor, /) -> torch.Tensor:
        """``0 - x``: ONNX's Neg takes no unsigned type, its Sub wraps them around."""
        return torch.zeros((), dtype=x.dtype, device=x.device) - x

    def floor_divided(self, total: torch.Tensor, n: torch.Tensor, /) -> torch.Tensor:
        """``floor(total / n)`` (``n`` positive) as ONNX's Div, which truncates.

        The truncated quotient, one less where a negative total leaves a remainder: the
        TorchScript exporter writes torch's ``floor_divide`` of integers as a bare Div
        (wrong for negatives), and the base's unsigned route reads values on the host.
        Types narrower than 32 bits divide in int32, as the base's do.
        """
        wide = total.dtype if total.dtype.itemsize >= 4 else torch.int32
        t, d = total.to(wide), n.to(wide)
        quotient = torch.div(t, d, rounding_mode="trunc")
        if wide.is_signed:
            quotient = quotient - ((t < 0) & (quotient * d != t)).to(wide)
        return quotient.to(total.dtype)

    def keep(self, where: torch.Tensor, x: torch.Tensor, /) -> torch.Tensor:
        """``x`` where ``where`` holds, else zero: one Where (no bit views, which ONNX lacks)."""
        return torch.where(where, x, torch.zeros((), dtype=x.dtype, device=x.device))

    def without_negatives(
        self, indices: Array, data: torch.Tensor, plan: ScatterUpdatePlan, /
    ) -> Any:
        """Negative indices as the axis' size: the node then refuses them, as out of range."""
        return super().without_negatives(indices, data, plan._replace(check_bounds=False))


def _node(method: str) -> Callable[..., torch.Tensor]:
    """An ONNX operator's call as its node (:func:`._onnx.node`), for :class:`_Exporting`.

    The method takes ``(*arrays, plan[, out])``, the arrays in the operator's order; host
    indices become a tensor on data's device.
    """
    operator = _ops.ONNX_BY_METHOD[method]
    count, at = len(operator.inputs), operator.indices_at

    def node(self: Any, *args: Any) -> torch.Tensor:
        arrays, plan = args[:count], args[count]
        out = args[count + 1] if len(args) > count + 1 else None
        inputs = (*arrays[:at], _on(arrays[0], arrays[at]), *arrays[at + 1 :])
        return _into(out, _onnx.node(method, plan, inputs), False)

    node.__name__ = method
    return node


# Each ONNX operator's call, while exporting: its own node (the registry lists them).
for _method in _ops.ONNX_BY_METHOD:
    setattr(_Exporting, _method, _node(_method))

_EXPORTING = _Exporting()
