"""JAX: ``jnp.take`` for Gather and ``jnp.take_along_axis`` for GatherElements, in fill mode.

Eagerly, a call runs one jitted function per plan, cached, which gathers and also returns
the indices' smallest and largest value; a checked call reads those two back (one
transfer) and raises the IndexError. Unchecked calls read nothing back. Large CPU indices
are host memory: NumPy checks them in place before the call instead (much faster than
XLA's min/max on the CPU). Host indices are checked on the host before they travel.

Under tracing (``jax.jit``, ``jax.vmap``, ``jax.grad``) the values are unknown, so nothing
can raise; instead:

* the kernels run in ``mode="fill"``, so an out-of-range index yields the fill value (NaN
  for inexact types, the most negative value for signed integers, the largest for unsigned
  ones, True for bool) and never another element's value. ``fill`` is also the only mode in
  which both kernels count negative indices from the end (``clip`` and
  ``promise_in_bounds`` do not). An index beyond ``[-s, s-1]`` is first replaced by ``s``:
  with x64, ``fill`` read real elements for indices near +-2**63;
* ``checkify.debug_check`` records the same IndexError text, which surfaces when the caller
  wraps the function in :func:`jax.experimental.checkify.checkify` (it is a no-op otherwise).

In ``fill`` mode XLA's CPU gather rewrites bfloat16 NaN payloads (0x7FC1 and 0x7F81 come
back as 0x7FC0; seen with jax 0.10.2; float16 and float32 keep theirs), so bfloat16 data is
gathered as its int16 bits, eagerly and under tracing, with the NaN's bits as the fill. A
:func:`jax.custom_jvp` gives that bits gather the float gather's derivative, so gradients
flow as before (``jax.grad``, ``jax.vjp``, ``jax.jvp``, higher orders).

Under ``jax.export`` with a symbolic axis size, host indices cannot be counted from the end
on the host nor compared with the size: they then travel unchecked, like traced ones.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import checkify

from onnx_gather import _host, _spec
from onnx_gather._dtypes import numpy_dtype_name
from onnx_gather._host import value_range

if TYPE_CHECKING:
    from collections.abc import Callable

    from onnx_gather._spec import Plan


def _traced(x: Any) -> bool:
    return isinstance(x, jax.core.Tracer)


def _record_out_of_range(plan: Plan, indices: jax.Array) -> None:
    """Under tracing: register the plan's IndexError text with checkify."""
    if indices.size == 0:
        return
    bad = ((indices < -plan.size) | (indices >= plan.size)).reshape(-1)
    first = jnp.argmax(bad)
    position = jnp.unravel_index(first, indices.shape)
    names = [f"p{d}" for d in range(indices.ndim)]
    # The text comes from _spec, with format fields where the traced values go.
    template = str(_spec.out_of_range(plan, "{value}", ["{" + n + "}" for n in names]))
    checkify.debug_check(
        ~jnp.any(bad),
        template,
        value=indices.reshape(-1)[first],
        **dict(zip(names, position, strict=True)),
    )


def _fill_value(dtype: Any) -> Any:
    """What ``fill`` mode writes for an out-of-range index."""
    if jnp.issubdtype(dtype, jnp.inexact):
        return jnp.nan
    if dtype == jnp.bool_:
        return True
    info = jnp.iinfo(dtype)
    return info.min if jnp.issubdtype(dtype, jnp.signedinteger) else info.max


def _take(
    data: jax.Array,
    indices: jax.Array,
    axis: int,
    size: Any,
    elements: bool,
    out_shape: Any,
    fill: Any = None,
    guard: bool = True,
) -> jax.Array:
    """The gather in fill mode, any index beyond ``[-size, size-1]`` read as ``fill``.

    ``fill`` defaults to :func:`_fill_value` of ``data``'s dtype. ``size`` may be symbolic
    (``jax.export``). ``guard=False`` leaves out the pass that sends far-out indices to the
    fill, for calls whose indices are known to be in range or whose result is discarded
    if one is not (a checked eager call).
    """
    if 0 in out_shape:
        # Nothing to read. jnp.take returns `data` itself when its axis and the indices
        # are both empty: the wrong shape (jax 0.10.2; no upstream report found).
        return jnp.zeros_like(data, shape=out_shape)
    if fill is None:
        fill = _fill_value(data.dtype)
    if size == 0:  # jnp.take raises on an empty axis; take_along_axis gives 0
        return jnp.full(out_shape, fill, data.dtype)
    if guard and (not isinstance(size, int) or size <= jnp.iinfo(indices.dtype).max):
        # fill mode adds size to a negative index: near -2**63 that wraps into range.
        # (A symbolic size beyond an int32 index type's range wraps here, but then every
        # index is in range and the replacement is never taken.)
        indices = jnp.where((indices >= -size) & (indices < size), indices, size)
    if elements:
        return jnp.take_along_axis(data, indices, axis=axis, mode="fill", fill_value=fill)
    return jnp.take(data, indices, axis=axis, mode="fill", fill_value=fill)


# Float types whose NaN payloads XLA's gather rewrites, with the same-width integer type.
_BITS: dict[Any, Any] = {jnp.dtype(jnp.bfloat16): jnp.int16}


def _nan_bits(dtype: Any) -> int:
    """The fill of a bits gather: the bits of ``dtype``'s NaN, as its ``_BITS`` integer."""
    return int(np.asarray(np.nan, dtype).view(_BITS[dtype]))


def _exact_take(
    data: jax.Array,
    indices: jax.Array,
    axis: int,
    size: Any,
    elements: bool,
    out_shape: Any,
    guard: bool = True,
) -> jax.Array:
    """:func:`_take`, bit for bit: bfloat16 goes as its int16 bits (module docstring).

    The bits gather has the float gather's derivative (a :func:`jax.custom_jvp`, linear in
    the tangent, so reverse mode transposes it into the scatter-add).
    """
    bits = _BITS.get(data.dtype)
    if bits is None:
        return _take(data, indices, axis, size, elements, out_shape, guard=guard)
    nan_bits = _nan_bits(data.dtype)

    @jax.custom_jvp
    def take(x: jax.Array, i: jax.Array) -> jax.Array:
        # The barriers keep XLA from folding the bitcasts into a bfloat16 gather, which
        # it otherwise does in some fusions (quieting NaNs, flushing subnormals to 0).
        raw = jax.lax.optimization_barrier(jax.lax.bitcast_convert_type(x, bits))
        out = jax.lax.optimization_barrier(
            _take(raw, i, axis, size, elements, out_shape, nan_bits, guard)
        )
        return jax.lax.bitcast_convert_type(out, x.dtype)

    @take.defjvp
    def _take_jvp(primals: Any, tangents: Any) -> Any:
        x, i = primals
        # A fill position's tangent is 0, as in jax's own gather rule.
        return take(x, i), _take(tangents[0], i, axis, size, elements, out_shape, 0)

    return take(data, indices)


def _eager_fn(plan: Plan, bounds: bool, fill: Any) -> Callable[[jax.Array, jax.Array], Any]:
    """The eager call of ``plan``, jitted once; with ``bounds`` also the indices' min and max.

    A closure over the plan rather than static arguments: ``jax.jit``'s fast dispatch path
    then serves every call (measured 0.7 us less per call than static keyword arguments).
    ``fill``: the bits of bfloat16's NaN where the data arrives as its int16 bits, else None
    (the dtype's own fill value).
    """
    # The plan's fields (its trim, slices, is unhashable before Python 3.12): out_shape
    # tells the trim.
    key = (
        plan.elements, plan.axis, plan.size, plan.out_shape, plan.trim is not None,
        plan.check_bounds, bounds, fill,
    )  # fmt: skip
    fn = _EAGER.get(key)
    if fn is not None:
        return fn
    axis, size, elements, out_shape, trim = (
        plan.axis, plan.size, plan.elements, plan.out_shape, plan.trim,
    )  # fmt: skip
    # Checked: the indices are in range, or the result is discarded for the IndexError.
    guard = not plan.check_bounds

    def call(data: jax.Array, indices: jax.Array) -> Any:
        if trim is not None:
            data = data[trim]
        out = _take(data, indices, axis, size, elements, out_shape, fill, guard)
        if not bounds or indices.size == 0:
            return out, None
        return out, jnp.stack([jnp.min(indices), jnp.max(indices)])

    fn = jax.jit(call)
    if len(_EAGER) >= 1024:
        _EAGER.clear()
    _EAGER[key] = fn
    return fn


_EAGER: dict[tuple[Any, ...], Callable[[jax.Array, jax.Array], Any]] = {}


def _from_host(indices: np.ndarray, data: jax.Array, plan: Plan) -> tuple[jax.Array, bool]:
    """Host indices, checked on the host (also while tracing: they are constants), placed.

    Also whether they were checked: not against a symbolic size (``jax.export``). Unchecked
    they go as given: the kernels' fill mode counts negatives and fills the rest.
    """
    checked = plan.check_bounds and _static(plan)
    if checked:
        indices = _host.checked(plan, indices)
    if indices.dtype == np.int64 and not jax.config.read("jax_enable_x64"):
        # Without x64 JAX would truncate int64 to int32; checked values fit (or saturate).
        info = np.iinfo(np.int32)
        indices = np.clip(indices, info.min, info.max).astype(np.int32)
    if _traced(data):
        return jnp.asarray(indices), checked
    devices = data.devices()
    if len(devices) == 1:
        return jax.device_put(indices, next(iter(devices))), checked
    return jnp.asarray(indices), checked


def _static(plan: Plan) -> bool:
    """Whether the axis size is a number (not a symbolic dimension of ``jax.export``)."""
    return type(plan.size) is int


#: Indices from which an eager CPU call checks them with NumPy in place rather than inside
#: the jitted call (below, the jitted min/max costs less than a NumPy reduction's overhead
#: and the array conversion: 8.1 against 9.3 us a call at 8x4, measured on 2 cores).
_HOST_CHECK_FROM = 1 << 12

_CPU_SHARDINGS: dict[Any, bool] = {}


def _on_cpu(sharding: Any) -> bool:
    """Whether every device of ``sharding`` is a CPU (answered once per sharding)."""
    known = _CPU_SHARDINGS.get(sharding)
    if known is None:
        known = all(device.platform == "cpu" for device in sharding.device_set)
        if len(_CPU_SHARDINGS) < 256:
            _CPU_SHARDINGS[sharding] = known
    return known


class JaxBackend:
    """The JAX backend."""

    name = "jax"

    def owns(self, x: Any, /) -> bool:
        return isinstance(x, jax.Array)

    def shape(self, x: jax.Array, /) -> tuple[int, ...]:
        return tuple(x.shape)

    def dtype_name(self, x: jax.Array, /) -> str:
        return numpy_dtype_name(x.dtype)

    def gather(self, data: jax.Array, indices: Any, plan: Plan, /) -> jax.Array:
        return self._run(data, indices, plan)

    def gather_elements(self, data: jax.Array, indices: Any, plan: Plan, /) -> jax.Array:
        return self._run(data, indices, plan)

    @staticmethod
    def _run(data: jax.Array, indices: Any, plan: Plan) -> jax.Array:
        checked = False  # whether the values were read and found in range
        if isinstance(indices, np.ndarray):
            indices, checked = _from_host(indices, data, plan)
        elif (
            plan.check_bounds
            and not _traced(indices)
            and _traced(data)
            and indices.size
            and _static(plan)
        ):
            # Concrete indices inside a trace (closed over): a constant, checked now.
            values = np.asarray(indices)
            _spec.check_range(plan, *value_range(values), lambda: values)
            checked = True
        if _traced(data) or _traced(indices):
            if plan.check_bounds and not checked:
                _record_out_of_range(plan, indices)
            if plan.trim is not None:
                data = data[plan.trim]
            return _exact_take(data, indices, plan.axis, plan.size, plan.elements, plan.out_shape)
        if indices.sharding != data.sharding and len(data.devices()) == 1:
            indices = jax.device_put(indices, data.sharding)
        if (
            plan.check_bounds
            and not checked
            and indices.size >= _HOST_CHECK_FROM
            and _on_cpu(indices.sharding)
        ):
            # Host memory: NumPy reads it in place, in one reduction when no index is
            # negative (timeit, 2-core EPYC: 0.2 ms for 4M int64 indices against 1-5 ms
            # for XLA's min/max in the jitted call).
            values = np.asarray(indices)
            _spec.check_range(plan, *value_range(values), lambda: values)
            checked = True
        # bfloat16 goes in and out as its int16 bits, converted outside the jitted call:
        # inside it, XLA's CPU code quiets signalling NaNs where the bitcast fuses with
        # the gather and the fill (0x7F81 came back 0x7FC1; jax 0.10.2), barrier or not.
        bits = _BITS.get(data.dtype)
        fill = None
        if bits is not None:
            fill = _nan_bits(data.dtype)
            data_dtype, data = data.dtype, jax.lax.bitcast_convert_type(data, bits)
        fn = _eager_fn(plan, plan.check_bounds and not checked, fill)
        out, bounds = fn(data, indices)
        if bounds is not None:
            if _traced(bounds):
                # Concrete arrays inside a trace (checkify passes them through) give traced
                # results: evaluate the call now instead.
                with jax.ensure_compile_time_eval():
                    out, bounds = fn(data, indices)
            lo, hi = np.asarray(bounds).tolist()  # the one transfer of a checked call
            _spec.check_range(plan, int(lo), int(hi), lambda: np.asarray(indices))
        if bits is not None:
            out = jax.lax.bitcast_convert_type(out, data_dtype)
        return out


backend = JaxBackend()
