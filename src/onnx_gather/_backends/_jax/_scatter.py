"""The scatters in JAX: ``.at[]`` with every order decided, jitted once per plan."""

from __future__ import annotations

import math
from functools import partial
from typing import TYPE_CHECKING, Any

import jax
import jax.numpy as jnp
import numpy as np

from onnx_gather._backends import _numpy
from onnx_gather._backends._positions import element_positions, tuple_rows
from onnx_gather._indices import BoundsPolicy, counted
from onnx_gather._memo import Memo
from onnx_gather._spec.scatter_nd import ScatterNDPlan

if TYPE_CHECKING:
    from collections.abc import Callable

    from onnx_gather._spec.reductions import Reduction
    from onnx_gather._typing import Array

#: Each float type's unsigned twin, for selecting bits.
_BITS = {2: jnp.uint16, 4: jnp.uint32, 8: jnp.uint64}
_FNS: Memo[tuple[Any, ...], Callable[..., jax.Array]] = Memo(1024)


def scatter_fn(plan: Any, dtype: Any, serial: bool) -> Callable[..., jax.Array]:
    """The plan's scatter of ``dtype`` data (bfloat16: given as int16 bits), jitted once."""
    key = (plan, np.dtype(dtype).name, serial)
    fn = _FNS.get(key)
    if fn is None:
        fn = _FNS.put(key, jax.jit(lambda d, i, u: scatter(d, i, u, plan, dtype, serial)))
    return fn


def serial_device(data: Array) -> bool:
    """Whether ``data``'s scatters run on the CPU, whose XLA scatter is one loop in order.

    XLA's CPU code applies a scatter's updates one at a time in the order of the updates
    (checked bit for bit against the loop oracle by the tests' sweep, float16 rounding
    and duplicates included); a GPU's atomics do not. Traced values run on the default
    backend.
    """
    if isinstance(data, jax.core.Tracer):
        return bool(jax.default_backend() == "cpu")
    return all(device.platform == "cpu" for device in data.devices())


def scatter(
    data: jax.Array,
    indices: jax.Array,
    updates: jax.Array,
    plan: Any,  # a ScatterPlan (Any while _jax/__init__.py passes a Plan)
    dtype: Any,
    serial: bool = False,
) -> jax.Array:
    """Either scatter on traced or concrete arrays, written by :func:`_set` or :func:`_write`.

    ``plan``: a ScatterElements or ScatterND plan; ``dtype``: the data's type; bfloat16
    data and updates arrive as their int16 bits (XLA's CPU code rewrites bfloat16 NaN
    payloads in fused gathers). ``serial``: the device applies a scatter's updates in
    order (:func:`serial_device`).

    Indices are counted from the end; an update whose index is out of range is aimed past
    the last row and dropped (``mode="drop"``), under ``jit`` too. Eagerly the check runs
    on the host first; under tracing checkify reports it (:mod:`._check`).
    """
    positions, keep = counted(jnp, indices, plan, BoundsPolicy.DROP)
    if plan.coordinates:  # (rows: cells of data's indexed dims)
        shape = tuple(plan.sizes)
        rows = tuple_rows(jnp, positions, plan.sizes, 0, None).reshape(-1)
        cells = math.prod(plan.sizes)
        width = math.prod(plan.out_shape[len(plan.sizes) :])
        target = data.reshape(cells, width)
        values = updates.reshape(rows.shape[0], width)
    else:  # (rows: items of data)
        shape = tuple(plan.out_shape)
        rows = element_positions(jnp, positions, plan.out_shape, plan.axis, None).reshape(-1)
        target, values = data.reshape(-1), updates.reshape(-1)
    n = target.shape[0]
    rows = jnp.where(keep.reshape(-1), rows, n)  # dropped: beyond the last row
    if plan.reduction == "none":
        return _set(data, rows, updates, shape, serial)
    result = _write(target, rows, values, plan.reduction, np.dtype(dtype), serial)
    return result.reshape(plan.out_shape)


def _set(
    data: jax.Array, rows: jax.Array, updates: jax.Array, shape: tuple[int, ...], serial: bool
) -> jax.Array:
    """Reduction none: ``rows`` (past the last: dropped) of data as it is shaped, in C order.

    ``rows`` count C-order positions in ``shape``, data's leading dims.

    JAX leaves the order of a scatter's repeated indices to the implementation (the CPU
    keeps the last duplicate, a GPU may keep the first: jax-ml/jax#12359). On the CPU,
    whose XLA scatter applies updates in order (:func:`serial_device`), one ``.at[].set``:
    the last update of each row stays. Elsewhere each row's last update in C order is
    found first (``.at[].max`` of the update positions, which no order changes), and only
    the winners are written.

    Data keeps its shape, addressed by one coordinate per dim the rows count (ScatterND's
    indexed dims; every dim for ScatterElements): a scatter into data reshaped to rows
    made XLA's CPU program copy the whole of data first, also where it is donated
    (docs/performance.md).
    """
    n, m = math.prod(shape), rows.shape[0]
    if m == 0 or n == 0:  # no update, or every one dropped (no row to find a winner in)
        return data
    if not serial:
        position = jnp.arange(m)
        latest = jnp.full((n,), -1, position.dtype).at[rows].max(position, mode="drop")
        rows = jnp.where(latest[jnp.minimum(rows, n - 1)] == position, rows, n)
    values = updates.reshape(m, *data.shape[len(shape) :])
    return data.at[_coordinates(rows, shape)].set(values, mode="drop")


def _coordinates(rows: jax.Array, shape: tuple[int, ...]) -> tuple[jax.Array, ...]:
    """Each of ``rows`` (C-order positions in ``shape``) as one coordinate per dim.

    The row past the last (``prod(shape)``) gets ``shape[0]`` as its first coordinate:
    out of range, so ``mode="drop"`` drops it.
    """
    coordinates = []
    for size in reversed(shape[1:]):
        coordinates.append(rows % size)
        rows = rows // size
    return (rows, *reversed(coordinates))


def _write(
    target: jax.Array,
    rows: jax.Array,
    values: jax.Array,
    reduction: Reduction,
    dtype: Any,
    serial: bool,
) -> jax.Array:
    """Apply ``values`` at ``rows`` of ``target`` with a reduction (``none``: :func:`_set`).

    Past the last row: dropped. JAX leaves the order of a scatter's repeated indices to
    the implementation (jax-ml/jax#12359), so nothing here depends on it:

    * Integers and bool: ``.at[].add`` / ``multiply`` / ``max`` / ``min``, whose results no
      order changes (two's-complement wrap-around; bool add and max as max, mul and min
      as min: OR and AND).
    * Float and complex reductions: :func:`_reduced` (bfloat16, moved as its bits, has no
      derivatives: :func:`_on_host` or :func:`_rounds` directly).
    """
    n, m = target.shape[0], rows.shape[0]
    if m == 0 or n == 0:  # no update, or every one dropped (no row to find a winner in)
        return target
    if dtype == np.bool_ or dtype.kind in "iu":
        if dtype == np.bool_:
            how = "max" if reduction in ("add", "max") else "min"
        else:
            how = {"add": "add", "mul": "multiply", "max": "max", "min": "min"}[reduction]
        return getattr(target.at[rows], how)(values, mode="drop")
    if dtype.name == "bfloat16":  # (as int16 bits: nothing to differentiate)
        if _host_served(serial, target, values):
            return _on_host(target, rows, values, reduction, dtype)
        return _rounds(target, rows, values, reduction, dtype)
    return _reduced(target, rows, values, reduction, serial)


def _host_served(serial: bool, target: jax.Array, values: jax.Array) -> bool:
    """Whether a float reduction runs on the host (:func:`_on_host`): on the CPU, static shapes.

    A symbolic shape is ``jax.export``'s, which cannot serialize a host callback
    ("serialization of host_callbacks is not yet implemented", jax 0.10.2): such a
    program computes in rounds, with XLA's arithmetic (on the CPU: subnormals flushed).
    An export with static shapes cannot be told from ``jit``, and fails so.
    """
    shapes = (*target.shape, *values.shape)
    return serial and all(type(n) is int for n in shapes)


def _on_host(
    target: jax.Array, rows: jax.Array, values: jax.Array, reduction: Reduction, dtype: Any
) -> jax.Array:
    """A float reduction on the CPU: NumPy's exact kernels, called back from the computation.

    XLA's CPU code computes with subnormals flushed to zero (its arithmetic runs with the
    FTZ and DAZ flags set, openxla/xla#22858: ``1e-45 + 1e-45`` is 0 there, and
    ``maximum(1e-45, 0)`` is 0), so no XLA computation on the CPU gives IEEE results
    where a subnormal is an operand or a result. The CPU's arrays are host memory: the
    library's NumPy kernel runs on them (one pass, updates in C order, rows past the last
    dropped), inside ``jit`` through ``jax.pure_callback``.
    """
    # The call's plan, known here: rows into the first dim of the (rows, width) target,
    # unchecked (a dropped update's row is past the last one).
    n = target.shape[0]
    plan = ScatterNDPlan("ScatterND-18", False, tuple(target.shape), 0, n, (n,), reduction)

    def run(t: np.ndarray, r: np.ndarray, v: np.ndarray) -> np.ndarray:
        stored = t.dtype
        t, v = np.asarray(t).view(dtype), np.asarray(v).view(dtype)
        out = _numpy.scatter_nd(t, np.asarray(r).reshape(-1, 1), v, plan)
        return np.asarray(out).view(stored)

    shape = jax.ShapeDtypeStruct(target.shape, target.dtype)
    return jax.pure_callback(run, shape, target, rows, values, vmap_method="sequential")


def _rounds(
    target: jax.Array, rows: jax.Array, values: jax.Array, reduction: Reduction, dtype: Any
) -> jax.Array:
    """Round ``r`` applies each row's ``r``-th update (C order), all at distinct rows.

    As the PyTorch backend does (:mod:`onnx_gather._backends._torch._exact`): computed in
    float32 for float16 and bfloat16 and rounded back (exact), a NaN result made
    canonical, max and min selected on the values' bits (IEEE 754-2019, the first NaN
    kept; :func:`combine`). The number of rounds is read inside the computation
    (``lax.fori_loop``), so one compilation serves every call of the plan.
    """
    n, m = target.shape[0], rows.shape[0]
    position = jnp.arange(m)
    order = jnp.argsort(rows, stable=True)
    ranked = rows[order]
    rank = jnp.zeros_like(position).at[order].set(position - jnp.searchsorted(ranked, ranked))
    rank = jnp.where(rows < n, rank, -1)

    def one_round(r: Any, result: jax.Array) -> jax.Array:
        at = jnp.where(rank == r, rows, n)
        old = result[jnp.minimum(at, n - 1)]
        return result.at[at].set(combine(reduction, old, values, dtype), mode="drop")

    return jax.lax.fori_loop(0, jnp.max(rank) + 1, one_round, target)


@partial(jax.custom_jvp, nondiff_argnums=(3, 4))
def _reduced(
    target: jax.Array, rows: jax.Array, values: jax.Array, reduction: Reduction, serial: bool
) -> jax.Array:
    """Float and complex reductions, with the family's gradient formulas.

    On the CPU NumPy's kernel on the arrays' host memory (:func:`_on_host`: XLA's CPU
    arithmetic flushes subnormals to zero, which IEEE per-step rounding does not), except
    a real float32/float64 add that no subnormal can reach (:func:`_may_meet_a_subnormal`),
    which stays in XLA's scatter, in order on the CPU (:func:`_in_order`); elsewhere in
    rounds (:func:`_rounds`). The rounds' loop counts its rounds at
    run time, which reverse mode cannot transpose; the tangent below needs no loop (it is
    linear in the tangents, so ``jax.grad`` transposes it): the same formulas as the
    PyTorch backend's (:func:`onnx_gather._backends._torch._exact.row_gradients`),
    whichever way the values were computed.
    """
    dtype = np.dtype(target.dtype)
    if not _host_served(serial, target, values):
        return _rounds(target, rows, values, reduction, dtype)
    if reduction == "add" and dtype.kind == "f" and dtype.itemsize >= 4:
        return jax.lax.cond(
            _may_meet_a_subnormal(target, values, dtype),
            lambda: _on_host(target, rows, values, reduction, dtype),
            lambda: _in_order(target, rows, values),
        )
    return _on_host(target, rows, values, reduction, dtype)


def _may_meet_a_subnormal(target: jax.Array, values: jax.Array, dtype: Any) -> jax.Array:
    """Whether an in-order float add of these could see a subnormal operand or result.

    Every partial sum of numbers that are 0 or at least ``2**(emin + p)`` in magnitude
    (``p`` bits of precision) is an exact multiple of ``2**(emin + 1)`` before rounding, so
    it is 0 or normal: XLA's flushing changes nothing then. float32: ``2**-102``. Read on
    the bits (magnitudes order as their bit patterns do): XLA's comparisons take a
    subnormal for 0 too.
    """
    info = np.finfo(dtype)
    unsigned = _BITS[dtype.itemsize]
    small = np.array(2.0 ** (info.minexp + info.nmant + 1), dtype).view(unsigned)
    magnitude = np.array(np.iinfo(unsigned).max >> 1, unsigned)  # every bit but the sign

    def risky(x: jax.Array) -> jax.Array:
        bits = jax.lax.bitcast_convert_type(x, unsigned) & magnitude
        return jnp.any((bits != 0) & (bits < small))

    return risky(target) | risky(values)


def _in_order(target: jax.Array, rows: jax.Array, values: jax.Array) -> jax.Array:
    """A real add through XLA's CPU scatter, which applies the updates in their order.

    The tests' sweep checks the order bit for bit; a NaN result is made canonical.
    """
    n = target.shape[0]
    out = target.at[rows].add(values, mode="drop")
    touched = jnp.zeros((n,), bool).at[rows].set(True, mode="drop")
    touched = touched.reshape((n,) + (1,) * (target.ndim - 1))
    return jnp.where(touched & jnp.isnan(out), jnp.asarray(jnp.nan, out.dtype), out)


@_reduced.defjvp
def _reduced_jvp(
    reduction: Reduction, serial: bool, primals: Any, tangents: Any
) -> tuple[jax.Array, jax.Array]:
    target, rows, values = primals
    t_target, _, t_values = tangents
    result = _reduced(target, rows, values, reduction, serial)
    n = target.shape[0]
    kept = rows < n
    safe = jnp.where(kept, rows, 0)
    wide = kept.reshape((-1,) + (1,) * (values.ndim - 1))
    if reduction == "add":
        return result, t_target.at[rows].add(t_values, mode="drop")
    if reduction == "mul":
        one = jnp.ones((), values.dtype)
        zero_u = (values == 0) & wide
        zero_d = target == 0
        zeros = zero_d.astype(jnp.int32).at[rows].add(zero_u.astype(jnp.int32), mode="drop")
        factors = jnp.where(zero_u | ~wide, one, values)
        others = jnp.where(zero_d, one, target).at[rows].multiply(factors, mode="drop")
        none_zero = zeros == 0
        t_data = jnp.where(
            none_zero,
            t_target * (result / jnp.where(zero_d, one, target)),
            jnp.where((zeros == 1) & zero_d, t_target * others, 0),
        )
        t_each = jnp.where(
            none_zero[safe] & wide,
            t_values * (result[safe] / jnp.where(zero_u, one, values)),
            jnp.where((zeros[safe] == 1) & zero_u, t_values * others[safe], 0),
        )
        return result, t_data.at[rows].add(t_each, mode="drop")
    # max, min: the row's tangent, the mean of those of the contributors equal to it.
    picked = result[safe]
    same_d = (target == result) | (jnp.isnan(target) & jnp.isnan(result))
    same_u = ((values == picked) | (jnp.isnan(values) & jnp.isnan(picked))) & wide
    count = (
        same_d.astype(target.real.dtype).at[rows].add(same_u.astype(target.real.dtype), mode="drop")
    )
    total = jnp.where(same_d, t_target, 0).at[rows].add(jnp.where(same_u, t_values, 0), mode="drop")
    return result, total / jnp.where(count == 0, 1, count)


def combine(reduction: Reduction, old: jax.Array, new: jax.Array, dtype: Any) -> jax.Array:
    """``f(old, new)`` for float and complex types (bfloat16 as int16 bits)."""
    bfloat16 = dtype.name == "bfloat16"
    if bfloat16:
        old_bits, new_bits = old, new
        old = jax.lax.bitcast_convert_type(old, jnp.bfloat16)
        new = jax.lax.bitcast_convert_type(new, jnp.bfloat16)
    if reduction in ("add", "mul"):
        if dtype.kind == "c":
            out = _complex(reduction, old, new)
        else:
            a, b = old.astype(jnp.float32), new.astype(jnp.float32)
            if dtype.itemsize > 2:
                a, b = old, new
            out = _canonical((a + b if reduction == "add" else a * b).astype(old.dtype))
        return jax.lax.bitcast_convert_type(out, jnp.int16) if bfloat16 else out
    a, b = old.astype(jnp.float32), new.astype(jnp.float32)
    if dtype.itemsize > 2:
        a, b = old, new
    if reduction == "max":
        wins = (b > a) | ((b == a) & jnp.signbit(a) & ~jnp.signbit(b))
    else:
        wins = (b < a) | ((b == a) & ~jnp.signbit(a) & jnp.signbit(b))
    take = ~jnp.isnan(a) & (jnp.isnan(b) | wins)
    if bfloat16:
        return jnp.where(take, new_bits, old_bits)
    bits = _BITS[dtype.itemsize]
    chosen = jnp.where(
        take, jax.lax.bitcast_convert_type(new, bits), jax.lax.bitcast_convert_type(old, bits)
    )
    return jax.lax.bitcast_convert_type(chosen, old.dtype)


def _canonical(x: jax.Array) -> jax.Array:
    """``x`` with every NaN the one quiet NaN (NumPy's ``nan`` in ``x``'s dtype).

    Chosen on the bits, after the cast to the data's dtype: a GPU's float32 arithmetic
    and its float32 -> bfloat16 conversion each give a NaN of their own (0x7FFF for
    bfloat16 on an H200, where NumPy's is 0x7FC0).
    """
    bits = _BITS[x.dtype.itemsize]
    nan = np.array(np.nan, x.dtype).view(np.dtype(bits))
    chosen = jnp.where(jnp.isnan(x), nan, jax.lax.bitcast_convert_type(x, bits))
    return jax.lax.bitcast_convert_type(chosen, x.dtype)


def _complex(reduction: Reduction, old: jax.Array, new: jax.Array) -> jax.Array:
    ar, ai, br, bi = old.real, old.imag, new.real, new.imag
    if reduction == "add":
        real, imag = ar + br, ai + bi
    else:
        real = ar * br - ai * bi
        imag = ar * bi + ai * br
    return jax.lax.complex(_canonical(real), _canonical(imag))
