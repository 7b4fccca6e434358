"""The bounds check under tracing as a JAX primitive: nothing at all unless checkify asks."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import jax
import jax.numpy as jnp
from jax._src import checkify as _checkify
from jax.interpreters import batching, mlir

from onnx_gather import _spec

if TYPE_CHECKING:
    from onnx_gather._typing import Plan

try:  # public from jax 0.4.36 on (jax.extend.core)
    from jax.extend.core import Primitive
except ImportError:  # pragma: no cover - older jax
    from jax.core import Primitive

# An identity primitive: plain ``jit`` lowers it to nothing, and only
# ``checkify.checkify`` gives it meaning, through the rule registered below. Not
# ``checkify.debug_check``: inside a jitted function it carries an effect, and an effect
# takes every call of the function off JAX's fast C++ dispatch path (docs/performance.md)
# even where no ``checkify`` wraps it.
index_check_p = Primitive("onnx_gather_index_check")
index_check_p.def_impl(lambda indices, **_: indices)
index_check_p.def_abstract_eval(lambda indices, **_: indices)
mlir.register_lowering(index_check_p, lambda ctx, indices, **_: [indices])


def with_index_check(indices: jax.Array, plan: Plan) -> jax.Array:
    """``indices`` as they are, with the plan's bounds check for checkify to find."""
    if indices.size == 0:
        return indices
    out: jax.Array = index_check_p.bind(indices, plan=plan, batched=0)
    return out


def _batch(args: Any, dims: Any, *, plan: Plan, batched: int) -> tuple[jax.Array, int]:
    """Under vmap: the batch dim moves first and counts as one more leading batch dim."""
    (indices,), (dim,) = args, dims
    indices = jnp.moveaxis(indices, dim, 0)
    return index_check_p.bind(indices, plan=plan, batched=batched + 1), 0


batching.primitive_batchers[index_check_p] = _batch


def _jvp(primals: Any, tangents: Any, **params: Any) -> tuple[Any, Any]:
    # Indices are integers: their tangent (float0) passes through, like the values.
    return index_check_p.bind(*primals, **params), tangents[0]


jax.interpreters.ad.primitive_jvps[index_check_p] = _jvp


def _checkify_rule(*args: Any, plan: Plan, batched: int) -> tuple[Any, jax.Array]:
    """Record the plan's IndexError for the first bad index (of the first bad example).

    ``args`` are ``(error, enabled_errors, indices)``; from jax 0.11.2 on, checkify's
    context comes first, and its ``assert_func`` takes it too (seen on an H200 machine's
    jax 0.11.2, 2026-11-26; 0.11.1 has neither), so the context is passed through as given.

    The same IndexError text as an eager call raises, for the first bad index in C order;
    under ``vmap``, of the first example that has one. The rule plugs into checkify's
    table of per-primitive rules (``jax._src.checkify.error_checks``, with its
    ``assert_func`` and ``FailedCheckError``: checkify's own extension point, which its
    rules for gather, division and scatter use; JAX has no public one for user
    primitives).
    """
    *context, error, enabled_errors, indices = args
    if _checkify.FailedCheckError not in enabled_errors:
        return error, indices
    shape = indices.shape[batched:]
    examples = indices.reshape((-1, *shape))
    bad = plan.outside(examples, jnp).reshape(examples.shape[0], -1)
    bad_example = jnp.any(bad, axis=1)
    example = jnp.argmax(bad_example)
    first = jnp.argmax(bad[example])
    position = jnp.unravel_index(first, shape)
    names = [f"p{d}" for d in range(len(shape))]
    fields = {
        "value": examples.reshape(examples.shape[0], -1)[example, first],
        **dict(zip(names, position, strict=True)),
    }
    where = ["{" + n + "}" for n in names]
    any_bad = jnp.any(bad_example)
    if not plan.coordinates:
        text = str(_spec.out_of_range(plan, "{value}", where))
        return _assert(context, error, any_bad, text, fields), indices
    # Coordinates address axes of their own: the axis and size in the text depend on which
    # coordinate is bad, so one record per coordinate, of which one can fail.
    for j in range(len(plan.sizes)):
        text = str(_spec.out_of_range(plan, "{value}", where, coordinate=j))
        error = _assert(context, error, any_bad & (position[-1] == j), text, fields)
    return error, indices


def _assert(
    context: list[Any], error: Any, failed: jax.Array, text: str, fields: dict[str, jax.Array]
) -> Any:
    new_error = _checkify.FailedCheckError(_checkify.get_traceback(), text, **fields)
    return _checkify.assert_func(*context, error, failed, new_error)


_checkify.error_checks[index_check_p] = _checkify_rule
