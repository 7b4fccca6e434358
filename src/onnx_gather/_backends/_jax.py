"""JAX: ``jnp.take`` for Gather and ``jnp.take_along_axis`` for GatherElements.

Eager calls get their indices range-checked by :mod:`onnx_gather._api` and raise the
IndexError. Under tracing (``jax.jit``, ``jax.vmap``, ``jax.grad``) the values are unknown,
so nothing can raise; instead:

* the kernels run in ``mode="fill"``, so an out-of-range index yields the fill value (NaN
  for inexact types, the most negative value for signed integers, the largest for unsigned
  ones, True for bool) and never another element's value. ``fill`` is also the only mode in
  which both kernels count negative indices from the end (``clip`` and
  ``promise_in_bounds`` do not), so it is used eagerly too;
* ``checkify.debug_check`` records the same IndexError text, which surfaces when the caller
  wraps the function in :func:`jax.experimental.checkify.checkify` (it is a no-op otherwise).

In ``fill`` mode XLA's CPU gather rewrites bfloat16 NaN payloads (0x7FC1 comes back as
0x7FC0; seen with jax 0.10.2), so eager bfloat16 data is gathered as its int16 bits. Under
tracing the float path is kept so that gradients flow.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import checkify

from onnx_gather import _spec
from onnx_gather._dtypes import numpy_dtype_name
from onnx_gather._host import value_range

if TYPE_CHECKING:
    from onnx_gather._spec import Plan


def _traced(x: Any) -> bool:
    return isinstance(x, jax.core.Tracer)


@jax.jit
def _minmax(indices: jax.Array) -> jax.Array:
    return jnp.stack([jnp.min(indices), jnp.max(indices)])


def _record_out_of_range(plan: Plan, indices: jax.Array) -> None:
    """Under tracing: register the plan's IndexError text with checkify."""
    if indices.size == 0:
        return
    bad = ((indices < plan.low) | (indices >= plan.size)).reshape(-1)
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


def _as_bits(data: jax.Array) -> jax.Array:
    """Eager bfloat16 data as int16 bits (see the module docstring); anything else as is."""
    if data.dtype == jnp.bfloat16 and not _traced(data):
        return jax.lax.bitcast_convert_type(data, jnp.int16)
    return data


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

    def from_host(self, indices: np.ndarray, data: jax.Array, /) -> jax.Array:
        if indices.dtype == np.int64 and not jax.config.read("jax_enable_x64"):
            # Without x64 JAX would truncate int64 to int32 and wrap large values onto
            # valid ones; saturate instead, so an unchecked huge index stays out of range.
            info = np.iinfo(np.int32)
            indices = np.clip(indices, info.min, info.max).astype(np.int32)
        if _traced(data):
            return jnp.asarray(indices)
        devices = data.devices()
        if len(devices) == 1:
            return jax.device_put(indices, next(iter(devices)))
        return jnp.asarray(indices)

    def adopt(self, indices: jax.Array, data: jax.Array, /) -> jax.Array:
        if _traced(indices) or _traced(data):
            return indices
        target = data.devices()
        if len(target) == 1 and indices.devices() != target:
            return jax.device_put(indices, next(iter(target)))
        return indices

    def index_range(self, indices: jax.Array, /) -> tuple[int, int] | None:
        if _traced(indices):
            return None
        if _on_cpu(indices.sharding):
            # CPU buffers are host memory: NumPy reads them in place, with no dispatch and
            # no copy, in one reduction when no index is negative (a third of the jitted
            # min/max's time at 2000x2000, and a few microseconds less on tiny arrays).
            return value_range(np.asarray(indices))
        bounds = _minmax(indices)
        if _traced(bounds):
            # Concrete indices inside a jit trace (closed over, or not an argument): the
            # call was staged into that trace; evaluate it now instead.
            with jax.ensure_compile_time_eval():
                bounds = _minmax(indices)
        lo, hi = np.asarray(bounds).tolist()
        return int(lo), int(hi)

    def to_host(self, indices: jax.Array, /) -> np.ndarray:
        return np.asarray(indices)

    @staticmethod
    def _prepare(indices: jax.Array, plan: Plan) -> jax.Array:
        if _traced(indices):
            if plan.check_bounds:
                _record_out_of_range(plan, indices)
            if not plan.negative_allowed:
                # Gather-1 and OpenVINO read no negative index: send it past the end, where
                # fill mode gives the fill value instead of counting from the end.
                indices = jnp.where(indices < 0, plan.size, indices)
        return indices

    def gather(
        self, data: jax.Array, indices: jax.Array, plan: Plan, negative: bool, /
    ) -> jax.Array:
        indices = self._prepare(indices, plan)
        if 0 in plan.out_shape:
            # Nothing to read. jnp.take returns `data` itself when its axis and the indices
            # are both empty: the wrong shape (jax 0.10.2; no upstream report found).
            return jnp.zeros_like(data, shape=plan.out_shape)
        bits = _as_bits(data)
        out: jax.Array = jnp.take(bits, indices, axis=plan.axis, mode="fill")
        return out if bits is data else jax.lax.bitcast_convert_type(out, data.dtype)

    def gather_elements(
        self, data: jax.Array, indices: jax.Array, plan: Plan, negative: bool, /
    ) -> jax.Array:
        indices = self._prepare(indices, plan)
        if plan.trim is not None:
            data = data[plan.trim]
        bits = _as_bits(data)
        out: jax.Array = jnp.take_along_axis(bits, indices, axis=plan.axis, mode="fill")
        return out if bits is data else jax.lax.bitcast_convert_type(out, data.dtype)


backend = JaxBackend()
