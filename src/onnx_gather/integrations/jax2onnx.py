"""jax2onnx's plug-in for the family: each call one ONNX node (:data:`PRIMITIVE`).

Importing this module registers it with jax2onnx; ``jax2onnx.to_onnx`` then writes each
call of an ONNX operator as its node, and OpenVINO's functions as standard operators.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar

import jax
import jax.numpy as jnp
import numpy as np
import onnx_ir as ir
from jax.extend.core import Primitive
from jax2onnx._compat.jax import ShapedArray
from jax2onnx.plugins._ir_shapes import _ensure_value_metadata, _stamp_type_and_shape
from jax2onnx.plugins._patching import MonkeyPatchSpec
from jax2onnx.plugins.plugin_system import PrimitiveLeafPlugin, register_primitive

from onnx_gather import _ops
from onnx_gather._backends import _jax
from onnx_gather._backends._base import Backend, Composing
from onnx_gather._dtypes import numpy_dtype_name

if TYPE_CHECKING:
    from onnx_gather._spec import Plan
    from onnx_gather._typing import Array

__all__ = ["PRIMITIVE"]

#: One call of an ONNX operator while jax2onnx traces: ``bind(*inputs, method=..., plan=...)``,
#: the inputs in the operator's order (TensorScatter's absent write indices left out).
PRIMITIVE = Primitive("onnx_gather_node")


@PRIMITIVE.def_impl
def _impl(*inputs: jax.Array, method: str, plan: Plan) -> jax.Array:
    """The call itself (JAX's backend), where the primitive meets concrete arrays."""
    arrays = _with_absent_indices(inputs, method)
    out: jax.Array = getattr(_jax.backend, method)(*arrays, plan)
    return out


@PRIMITIVE.def_abstract_eval
def _abstract(*inputs: Any, method: str, plan: Plan) -> Any:
    return ShapedArray(tuple(plan.out_shape), inputs[0].dtype)


def _with_absent_indices(inputs: tuple[Any, ...], method: str) -> tuple[Any, ...]:
    operator = _ops.ONNX_BY_METHOD[method]
    if len(inputs) < len(operator.inputs):  # (TensorScatter without write indices)
        return (*inputs, None)
    return inputs


class _Exporting(Composing, _jax.JaxBackend):
    """JAX's backend while jax2onnx traces: every call is ONNX operators.

    An ONNX operator's call binds :data:`PRIMITIVE` (:func:`_binding` makes its method,
    for every ONNX operator of the registry); OpenVINO's functions are the base's
    compositions of those calls and of ``jnp`` operations (Gather-7/8's zeros: a mask and
    a Where; ScatterUpdate's negative indices made out of range for the node).
    """

    bind = Backend.bind  # (the method itself)

    def keep(self, where: Any, x: jax.Array, /) -> jax.Array:
        return jnp.where(where, x, jnp.zeros((), x.dtype))

    def negated(self, x: jax.Array, /) -> jax.Array:
        """``0 - x``: ONNX's Neg takes no unsigned type, its Sub wraps them around."""
        return jnp.zeros((), x.dtype) - x

    def without_negatives(self, indices: Array, data: jax.Array, plan: Any, /) -> Any:
        """Negative indices as the axis' size: the node then refuses them, as out of range."""
        return super().without_negatives(indices, data, plan._replace(check_bounds=False))


def _node(method: str, plan: Plan, *inputs: Any) -> jax.Array:
    arrays = tuple(jnp.asarray(x) for x in inputs if x is not None)
    out: jax.Array = PRIMITIVE.bind(*arrays, method=method, plan=plan)
    return out


def _binding(method: str) -> Callable[..., jax.Array]:
    """The backend method of the ONNX operator ``method`` names: one :data:`PRIMITIVE`.

    It takes the operator's inputs in the registry's order, the plan, and ``out`` (not
    read: a traced function's result is a new value).
    """
    count = len(_ops.ONNX_BY_METHOD[method].inputs)

    def bound(self: _Exporting, /, *args: Any) -> jax.Array:
        return _node(method, args[count], *args[:count])

    bound.__name__ = bound.__qualname__ = method
    return bound


# Every ONNX operator of the registry, this one included when one is added: an operator
# needs no method of its own here.
for _method in _ops.ONNX_BY_METHOD:
    setattr(_Exporting, _method, _binding(_method))

_EXPORTING = _Exporting()


@register_primitive(
    jaxpr_primitive=PRIMITIVE.name,
    onnx=[{"component": op.op_type} for op in _ops.BY_ONNX_OP_TYPE.values()],
    context="primitives.onnx_gather",
    component="onnx_gather",
    since="onnx-gather",
    testcases=[],
)
class _Plugin(PrimitiveLeafPlugin):
    """Writes :data:`PRIMITIVE` as its ONNX node; binds JAX's backend to :class:`_Exporting`.

    jax2onnx converts a function by tracing it to a jaxpr and lowering each primitive; a
    call would otherwise arrive as the gathers, scatters and checks JAX runs, a node
    apiece. jax2onnx applies :meth:`binding_specs` only while it traces: JAX's backend then
    binds every call to :class:`_Exporting` (``onnx_gather._backends._jax.exporting``),
    whose ONNX operators bind :data:`PRIMITIVE`, and after it the library is as before.
    """

    _PRIM: ClassVar[Primitive] = PRIMITIVE

    @classmethod
    def binding_specs(cls) -> list[Any]:
        return [MonkeyPatchSpec(target=_jax, attr="exporting", make_value=lambda _: _EXPORTING)]

    def lower(self, ctx: Any, eqn: Any) -> None:
        """The node: the registry's (:meth:`onnx_gather._ops.Operator.exported_node`)."""
        method, plan = eqn.params["method"], eqn.params["plan"]
        operator = _ops.onnx_operator(_ops.BY_MESSAGE_NAME[plan.op][0], method)
        data = eqn.invars[0]
        dtype = numpy_dtype_name(np.dtype(data.aval.dtype))
        opset = int(getattr(ctx.builder, "opset", operator.numbers[-1]))
        op_type, _, attributes = operator.exported_node(opset, plan.attributes(), dtype)
        values = [
            ctx.get_value_for_var(var, name_hint=ctx.fresh_name(role))
            for var, role in zip(eqn.invars, operator.inputs, strict=False)
        ]
        at = operator.indices_at
        if (
            at < len(eqn.invars)
            and "int32" not in operator.onnx_index_types
            and np.dtype(eqn.invars[at].aval.dtype) != np.int64
        ):
            cast = ctx.builder.Cast(
                values[at], _outputs=[ctx.fresh_name("indices_int64")], to=ir.DataType.INT64.value
            )
            cast.type = ir.TensorType(ir.DataType.INT64)
            _stamp_type_and_shape(cast, tuple(eqn.invars[at].aval.shape))
            _ensure_value_metadata(ctx, cast)
            values[at] = cast
        result = getattr(ctx.builder, op_type)(
            *values, _outputs=[ctx.fresh_name(op_type)], **attributes
        )
        out = eqn.outvars[0]
        result.type = values[0].type
        _stamp_type_and_shape(result, tuple(out.aval.shape))
        _ensure_value_metadata(ctx, result)
        ctx.bind_value_for_var(out, result)
