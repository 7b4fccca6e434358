"""One operator per call in recorded graphs: ``onnx_gather::run_v1`` (:func:`call`).

Its kernel, fake kernel, ``vmap`` rules, gradients and TorchScript ONNX export.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any

import torch

from onnx_gather import _ops
from onnx_gather._backends._torch._dtypes import name_of
from onnx_gather._backends._torch._exact import (
    nd_index,
    scatter_gradients,
    tensor_scatter_gradients,
)
from onnx_gather._backends._torch._indices import xp
from onnx_gather._indices import BoundsPolicy, counted

if TYPE_CHECKING:
    from onnx_gather._spec import Plan

#: The backend's eager kernel of each operator, by its registry method name
#: (:func:`register`): what the operator runs when the graph runs, given the inputs and
#: the plan.
_EAGER: dict[str, Callable[..., torch.Tensor]] = {}


def register(method: str, eager: Callable[..., torch.Tensor]) -> None:
    """Make ``eager(*inputs, plan)`` what ``run_v1`` runs for the operator ``method`` names.

    The backend calls it for each operator as it defines its methods: it holds the eager
    kernels, and this module, which it imports, never imports it back.
    """
    _EAGER[method] = eager


def call(*inputs: torch.Tensor, plan: Plan) -> torch.Tensor:
    """The call as one ``onnx_gather::run_v1`` operator of the graph being recorded.

    A tracer records torch operations only (``torch.jit.trace``, the TorchScript ONNX
    exporter, ``make_fx``, ``torch.compile`` and ``torch.export``). The CPU route through
    the compiled kernel on NumPy views is invisible to them, and a check that reads index
    values while tracing is baked into the graph. So where a graph is being recorded, a
    call becomes this one custom operator, generic over the family (under
    ``torch.compile`` and ``torch.export`` a checked gather of CPU tensors becomes it only
    where the compiled kernel wins: elsewhere torch's operations with the check in the
    graph serve, :func:`onnx_gather._backends._torch._inductor.counted_in_graph`).
    """
    if torch._C._get_tracing_state() is not None:  # (the TorchScript exporter may follow)
        register_onnx_export()
    ints, strings = split_attributes(plan.attributes())
    out: torch.Tensor = torch.ops.onnx_gather.run_v1(
        list(inputs), plan.op, ints, strings, plan.check_bounds
    )
    return out


def split_attributes(attributes: Sequence[Any]) -> tuple[list[int], str]:
    """A plan's attributes as the schema holds them: the ints, and the strings joined."""
    ints = [a for a in attributes if not isinstance(a, str)]
    return ints, ",".join(a for a in attributes if isinstance(a, str))


def joined_attributes(op: str, ints: Sequence[int], strings: str) -> tuple[Any, ...]:
    """The attributes in the registry's order again, from the schema's ints and strings."""
    if not strings:  # (integers only: the gathers)
        return tuple(ints)
    operator, _ = _ops.BY_MESSAGE_NAME[op]
    numbers, words = iter(ints), iter(strings.split(","))
    return tuple(
        next(words)
        if isinstance(default, str)
        else bool(next(numbers))
        if isinstance(default, bool)  # (a flag: OpenVINO's use_init_val)
        else next(numbers)
        for _, default in operator.attributes
    )


def plan_again(
    inputs: Sequence[torch.Tensor], op: str, ints: Sequence[int], check: bool, strings: str = ""
) -> Any:
    """The call's plan, made again by the operator's planner (symbolic shapes too).

    From the library's plan cache (:meth:`onnx_gather._ops.Operator.plan`) when the shapes
    are numbers (when the graph runs); symbolic ones (the fake kernel while a compiler
    traces) are planned each time.
    """
    operator, version = _ops.BY_MESSAGE_NAME[op]
    shapes = tuple(tuple(x.shape) for x in inputs)
    dtypes = tuple(x.dtype for x in inputs)
    attributes = joined_attributes(op, ints, strings)
    return operator.plan(version, shapes, dtypes, attributes, check, names=name_of)


@torch.library.custom_op("onnx_gather::run_v1", mutates_args=())
def _run(
    inputs: Sequence[torch.Tensor],
    op: str,
    ints: Sequence[int],
    strings: str,
    check_bounds: bool,
) -> torch.Tensor:
    """When the graph runs: the backend's eager kernel of the operator ``op`` names.

    ``onnx_gather::run_v1(Tensor[] inputs, str op, int[] ints, str strings, bool
    check_bounds) -> Tensor``: ``inputs`` are the operator's inputs in the registry's order
    (data, indices, and updates for a scatter); ``op`` names the operator and version as
    messages do ("GatherND-13"), ``ints`` holds its integer attributes and ``strings`` its
    string ones joined by commas (a scatter's reduction), in the registry's order
    (normalised, as the plan has them; a schema takes no list of strings). The operator's
    planner plans the call again from them (:func:`plan_again`): for the fake (meta) kernel on
    symbolic shapes, and for this one, which runs the backend's eager kernel
    (:func:`register`: the compiled kernel on CPU, Triton or torch's own kernels on CUDA)
    and raises the eager IndexError when the graph runs. The version in the operator's
    name keeps the meaning of graphs exported today when the schema changes.
    """
    plan = plan_again(inputs, op, ints, check_bounds, strings)
    operator, _ = _ops.BY_MESSAGE_NAME[op]
    out = _EAGER[operator.method](*inputs, plan)
    # A custom op's output never aliases an input (an identity gather could, on a path
    # that returned a view): a copy only where it would.
    return out if out.data_ptr() != inputs[0].data_ptr() or not out.numel() else out.clone()


@_run.register_fake
def _run_fake(
    inputs: Sequence[torch.Tensor],
    op: str,
    ints: Sequence[int],
    strings: str,
    check_bounds: bool,
) -> torch.Tensor:
    plan = plan_again(inputs, op, ints, check_bounds, strings)
    return inputs[0].new_empty(plan.out_shape)


@_run.register_vmap
def _run_vmap(
    info: Any,
    in_dims: tuple[Any, ...],
    inputs: Sequence[torch.Tensor],
    op: str,
    ints: Sequence[int],
    strings: str,
    check_bounds: bool,
) -> tuple[torch.Tensor, int]:
    """The operator under ``vmap`` (``torch.func.vmap``, eager or compiled).

    The batch dim moves to the front of each batched input; the operator's rule
    (:data:`BATCHED`) makes one call of the batch where one call can say it (the gathers:
    an index's position in a message then reads (batch entry, position)), else one call
    per entry (the scatters: each entry's duplicates apply in its own order).
    """
    operator, _ = _ops.BY_MESSAGE_NAME[op]
    rule: Callable[..., tuple[torch.Tensor, int]] = BATCHED.get(operator.method, _each_entry)
    dims = in_dims[0]
    moved = [x if d is None else x.movedim(d, 0) for x, d in zip(inputs, dims, strict=True)]
    batched = [d is not None for d in dims]
    return rule(moved, batched, op, list(ints), strings, check_bounds, info.batch_size)


def _each_entry(
    inputs: list[Any], batched: list[bool], op: str, ints: list[int], strings: str,
    check: bool, size: int,
) -> tuple[torch.Tensor, int]:  # fmt: skip
    """One call per batch entry, stacked: exact for any operator."""
    rows = [
        _run([x[b] if is_batched else x for x, is_batched in zip(inputs, batched, strict=True)],
             op, ints, strings, check)
        for b in range(size)
    ]  # fmt: skip
    return torch.stack(rows), 0


def _gather_batched(
    inputs: list[Any], batched: list[bool], op: str, ints: list[int], strings: str,
    check: bool, size: int,
) -> tuple[torch.Tensor, int]:  # fmt: skip
    """Gather of a batch, in one call where one call can say it.

    Batched data: along axis + 1. Batched indices: more indices (the batch lands at the
    axis). Both: one call per entry.
    """
    (data, indices), (data_batched, indices_batched) = inputs, batched
    axis = ints[0]
    if data_batched and indices_batched:
        rows = [
            _run([d, i], op, [axis], strings, check) for d, i in zip(data, indices, strict=True)
        ]
        return torch.stack(rows), 0
    if data_batched:
        return _run([data, indices], op, [axis + 1], strings, check), 0
    return _run([data, indices], op, [axis], strings, check), axis


def _leading_batch(
    inputs: list[Any], batched: list[bool], op: str, ints: list[int], strings: str,
    check: bool, size: int,
) -> tuple[torch.Tensor, int]:  # fmt: skip
    """GatherElements and GatherND of a batch: one call, the attribute one further.

    Both inputs batched (the unbatched one expanded, a view), the axis or batch_dims (the
    first attribute of both) counting the batch.
    """
    (data, indices), (data_batched, indices_batched) = inputs, batched
    if not data_batched:
        data = data.expand(size, *data.shape)
    if not indices_batched:
        indices = indices.expand(size, *indices.shape)
    return _run([data, indices], op, [ints[0] + 1, *ints[1:]], strings, check), 0


#: Each operator's rule under vmap, by its registry method name (else one call per entry).
BATCHED: dict[str, Callable[..., tuple[torch.Tensor, int]]] = {
    "gather": _gather_batched,
    "gather_elements": _leading_batch,
    "gather_nd": _leading_batch,
}


def _setup_context(ctx: Any, inputs: tuple[Any, ...], output: torch.Tensor) -> None:
    arrays, op, ints, strings, check_bounds = inputs
    ctx.method = _ops.BY_MESSAGE_NAME[op][0].method
    keep, _ = BACKWARDS[ctx.method]
    ctx.save_for_backward(*keep(arrays, output))
    ctx.plan = plan_again(arrays, op, ints, check_bounds, strings)
    ctx.data_shape = arrays[0].shape


def _backward(ctx: Any, grad: torch.Tensor) -> tuple[Any, ...]:
    """The operator's gradients, as an eager call's (:data:`BACKWARDS`).

    A gather's is its adjoint: the scatter-add of the upstream gradient, written in
    differentiable torch operations, so double backward works. A scatter's are its
    formulas (:func:`._exact.scatter_gradients`).
    """
    _, gradients = BACKWARDS[ctx.method]
    return gradients(ctx.saved_tensors, grad, ctx.plan, ctx.data_shape), None, None, None, None


def _gather_backward(
    adjoint: Callable[..., torch.Tensor], saved: Sequence[torch.Tensor], grad: torch.Tensor,
    plan: Any, shape: Any,
) -> list[Any]:  # fmt: skip
    """A gather's gradients: to data, its adjoint of the counted indices (the one saved)."""
    (indices,) = saved
    in_range = counted(xp, indices, plan, BoundsPolicy.CLAMP).to(torch.int64)
    return [adjoint(grad, in_range, plan, shape), None]


def _scatter_backward(
    saved: Sequence[torch.Tensor], grad: torch.Tensor, plan: Any, shape: Any
) -> list[Any]:
    """A scatter's gradients to data and updates: its formulas (:mod:`._exact`)."""
    data, indices, updates, result = saved
    data_grad, updates_grad = scatter_gradients(grad, data, indices, updates, result, plan)
    return [data_grad, None, updates_grad]


def _tensor_scatter_backward(
    saved: Sequence[torch.Tensor], grad: torch.Tensor, plan: Any, shape: Any
) -> list[Any]:
    """TensorScatter's gradients to the cache and the update (:mod:`._exact`)."""
    _, updates, indices, _ = saved
    data_grad, updates_grad = tensor_scatter_gradients(grad, updates, indices, plan)
    return [data_grad, updates_grad, None]


def _gather_adjoint(grad: torch.Tensor, indices: torch.Tensor, plan: Any, shape: Any) -> Any:
    """Gather's gradient to data: the upstream gradient added at the gathered rows."""
    rows = grad.reshape(*shape[: plan.axis], indices.numel(), *shape[plan.axis + 1 :])
    return grad.new_zeros(shape).index_add(plan.axis, indices.reshape(-1), rows)


def _gather_elements_adjoint(
    grad: torch.Tensor, indices: torch.Tensor, plan: Any, shape: Any
) -> Any:
    """GatherElements' gradient: scatter-add into the block the output read, padded to data."""
    block = [shape[d] if d == plan.axis else n for d, n in enumerate(indices.shape)]
    inner = grad.new_zeros(block).scatter_add(plan.axis, indices, grad)
    pads = [p for d in reversed(range(len(shape))) for p in (0, shape[d] - block[d])]
    return torch.nn.functional.pad(inner, pads) if any(pads) else inner


def _gather_nd_adjoint(grad: torch.Tensor, indices: torch.Tensor, plan: Any, shape: Any) -> Any:
    """GatherND's gradient: the upstream slices accumulated at the gathered tuples."""
    zeros = grad.new_zeros(shape)
    if indices.dim() == 1:
        grad = grad.unsqueeze(0)
    return zeros.index_put(nd_index(zeros, indices, plan.batch_dims), grad, accumulate=True)


#: Each gather's gradient to data, by its registry method name: ``adjoint(grad, counted
#: indices, plan, data shape)``, in differentiable torch operations.
ADJOINTS: dict[str, Callable[[torch.Tensor, torch.Tensor, Any, Any], torch.Tensor]] = {
    "gather": _gather_adjoint,
    "gather_elements": _gather_elements_adjoint,
    "gather_nd": _gather_nd_adjoint,
}


def _no_gradient(
    saved: Sequence[torch.Tensor], grad: torch.Tensor, plan: Any, shape: Any
) -> list[Any]:
    """OpenVINO's operators recorded as one operator: no gradient formula (eager calls have one)."""
    msg = (
        f"{plan.op} has no gradient inside a recorded graph (torch.compile, torch.export, "
        "torch.func.vmap); call it eagerly, where torch's own operations carry the gradient"
    )
    raise NotImplementedError(msg)


def _indices_only(arrays: Sequence[torch.Tensor], output: torch.Tensor) -> tuple[torch.Tensor]:
    return (arrays[1],)


def _inputs_and_result(arrays: Sequence[torch.Tensor], output: torch.Tensor) -> tuple[Any, ...]:
    return (*arrays, output)


#: Each operator's backward, by its registry method name: what the forward saves
#: (``keep(inputs, output)``) and ``gradients(saved, grad, plan, data shape)``, a gradient
#: (or None) per input.
BACKWARDS: dict[str, tuple[Callable[..., tuple[Any, ...]], Callable[..., list[Any]]]] = {
    **{
        name: (_indices_only, partial(_gather_backward, adjoint))
        for name, adjoint in ADJOINTS.items()
    },
    "scatter_elements": (_inputs_and_result, _scatter_backward),
    "scatter_nd": (_inputs_and_result, _scatter_backward),
    "tensor_scatter": (_inputs_and_result, _tensor_scatter_backward),
    **{
        name: (_indices_only, _no_gradient)
        for name in (
            "openvino_gather",
            "openvino_scatter_update",
            "openvino_scatter_elements_update",
            "openvino_scatter_nd_update",
        )
    },
}

_run.register_autograd(_backward, setup_context=_setup_context)


def _onnx_symbolic(g: Any, inputs: Any, op: Any, ints: Any, strings: Any, check_bounds: Any) -> Any:
    """The TorchScript ONNX exporter's translation: the ONNX node itself.

    The node of the ONNX operator the call's plan names (a variant's: its ONNX operator,
    :func:`onnx_gather._ops.onnx_operator`) at the exported model's opset, with its
    attributes (:meth:`onnx_gather._ops.Operator.exported_node`, which refuses what that
    version lacks, naming the opset). int32 indices of an operator whose ONNX types are
    int64 only are cast first.
    """
    from torch.onnx import symbolic_helper

    arrays = symbolic_helper._unpack_list(inputs)
    name = symbolic_helper._maybe_get_const(op, "s")
    numbers = symbolic_helper._maybe_get_const(ints, "is")
    words = symbolic_helper._maybe_get_const(strings, "s")
    values = joined_attributes(name, numbers, words)
    named, _ = _ops.BY_MESSAGE_NAME[name]
    operator = _ops.onnx_operator(named, named.method)
    opset = symbolic_helper.GLOBALS.export_onnx_opset_version
    op_type, _, attributes = operator.exported_node(opset, values, _jit_type(arrays[0]))
    at = operator.indices_at
    if "int32" not in operator.onnx_index_types and _jit_type(arrays[at]) == "int32":
        arrays[at] = g.op("Cast", arrays[at], to_i=7)  # (7: TensorProto.INT64)
    suffixed = {
        f"{key}_{'s' if isinstance(value, str) else 'i'}": value
        for key, value in attributes.items()
    }
    return g.op(op_type, *arrays, **suffixed)


def _jit_type(value: Any) -> str:
    """The ONNX-style name of a TorchScript value's dtype; "" where the trace has none."""
    from torch.onnx import JitScalarType

    known = JitScalarType.from_value(value, JitScalarType.UNDEFINED)
    return "" if known == JitScalarType.UNDEFINED else name_of(known.dtype())


def register_onnx_export() -> None:
    """Teach the TorchScript ONNX exporter ``run_v1`` (every opset the family has)."""
    torch.onnx.register_custom_op_symbolic("onnx_gather::run_v1", _onnx_symbolic, 1)
