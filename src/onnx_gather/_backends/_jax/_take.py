"""JAX's gathers in fill mode, bit for bit: ``jnp.take`` and ``jnp.take_along_axis``."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import jax
import jax.numpy as jnp
import numpy as np

from onnx_gather._indices import INT32_MAX, from_end

if TYPE_CHECKING:
    from onnx_gather._spec import Plan
    from onnx_gather._spec.gather_nd import GatherNDPlan
    from onnx_gather._typing import Array


def traced(x: Array) -> bool:
    return isinstance(x, jax.core.Tracer)


def fill_value(dtype: Any) -> Any:
    """What ``fill`` mode writes for an out-of-range index.

    NaN for inexact types, the most negative value for signed integers, the largest for
    unsigned ones, True for bool.
    """
    if jnp.issubdtype(dtype, jnp.inexact):
        return jnp.nan
    if dtype == jnp.bool_:
        return True
    info = jnp.iinfo(dtype)
    return info.min if jnp.issubdtype(dtype, jnp.signedinteger) else info.max


#: An operator's gather in fill mode: ``kernel(data, indices, plan, fill) -> out``.
Take = Callable[[jax.Array, jax.Array, Any, Any], jax.Array]


def take(data: jax.Array, indices: jax.Array, plan: Plan, fill: Any) -> jax.Array:
    """Gather's fill-mode kernel."""
    return jnp.take(data, indices, axis=plan.axis, mode="fill", fill_value=fill)


def take_along_axis(data: jax.Array, indices: jax.Array, plan: Plan, fill: Any) -> jax.Array:
    """GatherElements' fill-mode kernel."""
    return jnp.take_along_axis(data, indices, axis=plan.axis, mode="fill", fill_value=fill)


def take_nd(data: jax.Array, indices: jax.Array, plan: GatherNDPlan, fill: Any) -> jax.Array:
    """GatherND's fill-mode kernel: a tuple with any coordinate out of range reads the fill.

    Without batch dims each tuple becomes one row of data's first dims flattened (a bad
    tuple: the row past the last), read by ``jnp.take``: XLA then fuses the counting, the
    check and the gather as for the native ``x[c[:, 0], c[:, 1]]`` (one fusion a call
    instead of three under ``jit``). Otherwise, and where the rows would not fit int32,
    advanced indexing with one array per batch dim and coordinate.
    """
    b = plan.batch_dims
    tuples = indices.reshape(1, -1) if indices.ndim == 1 else indices
    lead, k = tuples.shape[:-1], tuples.shape[-1]
    sizes = data.shape[b : b + k]
    if not b and all(type(s) is int for s in sizes) and math.prod(sizes) <= INT32_MAX:
        rows = math.prod(sizes)
        row, inside = None, None
        for j, s in enumerate(sizes):
            c = tuples[..., j]
            ok = (c >= -s) & (c < s)
            c = from_end(jnp, c, s)
            row = c if row is None else row * s + c
            inside = ok if inside is None else inside & ok
        row = jnp.where(inside, row, rows)
        flat = data.reshape((rows, *data.shape[k:]))
        out = jnp.take(flat, row, axis=0, mode="fill", fill_value=fill)
        return out.reshape(plan.out_shape)
    batch = [
        jnp.arange(n).reshape([n if e == d else 1 for e in range(len(lead))])
        for d, n in enumerate(lead[:b])
    ]
    coordinates = [tuples[..., j] for j in range(k)]
    out = data.at[(*batch, *coordinates)].get(mode="fill", fill_value=fill)
    return out.reshape(plan.out_shape)


def fill_take(
    kernel: Take,
    data: jax.Array,
    indices: jax.Array,
    plan: Plan,
    fill: Any = None,
    guard: bool = True,
) -> jax.Array:
    """``kernel`` in fill mode, any index beyond ``[-size, size-1]`` read as ``fill``.

    ``fill`` mode yields the fill value for an out-of-range index (:func:`fill_value`) and
    never another element's value; it is also the only mode in which JAX's gathers count
    negative indices from the end (``clip`` and ``promise_in_bounds`` do not).

    ``data`` is already trimmed to the block the output reads. ``fill`` defaults to
    :func:`fill_value` of ``data``'s dtype. ``plan.size`` may be symbolic (``jax.export``).
    ``guard=False`` leaves out the pass that sends far-out indices to the fill, for calls
    whose indices are known to be in range or whose result is discarded if one is not (a
    checked eager call).
    """
    size, out_shape = plan.size, plan.out_shape  # size: the smallest addressed size
    if 0 in out_shape:
        # Nothing to read. jnp.take returns `data` itself when its axis and the indices
        # are both empty: the wrong shape (jax 0.10.2; no upstream report found).
        return jnp.zeros_like(data, shape=out_shape)
    if fill is None:
        fill = fill_value(data.dtype)
    if size == 0:  # jnp.take raises on an empty axis; take_along_axis gives 0
        return jnp.full(out_shape, fill, data.dtype)
    if guard and indices.dtype.itemsize > 4 and _narrowed(plan.sizes):
        # jnp converts int64 indices to int32 where the axis fits int32, so 2**32 + 1
        # would read element 1: such an index goes to the fill first. int32 indices need
        # nothing (the native op's own counting and fill say it all: one pass fewer).
        # Coordinates go to their own axis' size: the whole index tuple then reads the fill.
        bound: Any = size
        if plan.coordinates and any(s != size for s in plan.sizes):
            bound = jnp.asarray(plan.sizes, dtype=indices.dtype)
        indices = jnp.where((indices >= -bound) & (indices < bound), indices, bound)
    return kernel(data, indices, plan, fill)


def _narrowed(sizes: tuple[Any, ...]) -> bool:
    """Whether jnp gathers with int32 indices for these sizes (every one fits int32).

    A symbolic size (``jax.export``) or one beyond int32 makes jnp keep int64
    (``lax_utils.int_dtype_for_dim``, ``int_dtype_for_shape``; jax 0.10.2).
    """
    return all(isinstance(s, int) and s <= INT32_MAX for s in sizes)


# Float types whose NaN payloads XLA's gather rewrites, with the same-width integer type.
BITS: dict[Any, Any] = {jnp.dtype(jnp.bfloat16): jnp.int16}


def nan_bits(dtype: Any) -> int:
    """The fill of a bits gather: the bits of ``dtype``'s NaN, as its ``BITS`` integer."""
    return int(np.asarray(np.nan, dtype).view(BITS[dtype]))


def exact_take(
    kernel: Take, data: jax.Array, indices: jax.Array, plan: Plan, guard: bool = True
) -> jax.Array:
    """:func:`fill_take`, bit for bit: bfloat16 goes as its int16 bits.

    In ``fill`` mode XLA's CPU gather rewrites bfloat16 NaN payloads (0x7FC1 and 0x7F81
    come back as 0x7FC0; seen with jax 0.10.2; float16 and float32 keep theirs), so
    bfloat16 data is gathered as its int16 bits, with the NaN's bits as the fill
    (:func:`nan_bits`). The bits gather has the float gather's derivative (a
    :func:`jax.custom_jvp`, linear in the tangent, so reverse mode transposes it into the
    scatter-add): gradients flow as before (``jax.grad``, ``jax.vjp``, ``jax.jvp``, higher
    orders).
    """
    bits = BITS.get(data.dtype)
    if bits is None:
        return fill_take(kernel, data, indices, plan, guard=guard)
    nan = nan_bits(data.dtype)

    @jax.custom_jvp
    def bits_take(x: jax.Array, i: jax.Array) -> jax.Array:
        # The barriers keep XLA from folding the bitcasts into a bfloat16 gather, which
        # it otherwise does in some fusions (quieting NaNs, flushing subnormals to 0).
        raw = jax.lax.optimization_barrier(jax.lax.bitcast_convert_type(x, bits))
        out = jax.lax.optimization_barrier(fill_take(kernel, raw, i, plan, nan, guard))
        return jax.lax.bitcast_convert_type(out, x.dtype)

    @bits_take.defjvp
    def _take_jvp(primals: Any, tangents: Any) -> Any:
        x, i = primals
        # A fill position's tangent is 0, as in jax's own gather rule.
        return bits_take(x, i), fill_take(kernel, tangents[0], i, plan, 0)

    return bits_take(data, indices)


def exact_keep(where: jax.Array, x: jax.Array) -> jax.Array:
    """``jnp.where(where, x, 0)``, bit for bit: bfloat16 selected as its int16 bits.

    XLA's CPU select rewrites bfloat16 NaN payloads as its gather does (:func:`exact_take`);
    the derivative is the select's own (a :func:`jax.custom_jvp`).
    """
    bits = BITS.get(x.dtype)
    if bits is None:
        return jnp.where(where, x, jnp.zeros((), x.dtype))

    @jax.custom_jvp
    def bits_keep(a: jax.Array) -> jax.Array:
        raw = jax.lax.optimization_barrier(jax.lax.bitcast_convert_type(a, bits))
        out = jax.lax.optimization_barrier(jnp.where(where, raw, jnp.zeros((), bits)))
        return jax.lax.bitcast_convert_type(out, a.dtype)

    @bits_keep.defjvp
    def _keep_jvp(primals: Any, tangents: Any) -> Any:
        return bits_keep(*primals), jnp.where(where, tangents[0], 0)

    return bits_keep(x)
