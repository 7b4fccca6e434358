"""JAX: one jitted call per plan eagerly; under tracing, the fill-mode gather and checkify.

:class:`JaxBackend`; each gather's path is :func:`_run`, the scatters' :func:`_scatter_run`.
"""

from __future__ import annotations

import ctypes
from functools import partial
from typing import TYPE_CHECKING, Any

import jax
import jax.numpy as jnp
import numpy as np

from onnx_gather import _host, _spec
from onnx_gather._backends._base import Backend
from onnx_gather._backends._jax import _ieee
from onnx_gather._backends._jax import _scatter as scatters
from onnx_gather._backends._jax._check import with_index_check
from onnx_gather._backends._jax._take import (
    BITS,
    Take,
    exact_keep,
    exact_take,
    fill_take,
    nan_bits,
    take,
    take_along_axis,
    take_nd,
    traced,
)
from onnx_gather._backends._numpy import _kernels
from onnx_gather._host import value_range
from onnx_gather._indices import INT32_MAX
from onnx_gather._memo import Memo

if TYPE_CHECKING:
    from collections.abc import Callable

    from onnx_gather._backends._base import Call
    from onnx_gather._spec import Plan
    from onnx_gather._spec.gather import GatherPlan, OpenVINOGatherPlan
    from onnx_gather._spec.gather_elements import GatherElementsPlan
    from onnx_gather._spec.gather_nd import GatherNDPlan
    from onnx_gather._spec.openvino_scatter import ScatterUpdatePlan
    from onnx_gather._spec.scatter_elements import ScatterElementsPlan
    from onnx_gather._spec.scatter_nd import ScatterNDPlan
    from onnx_gather._spec.tensor_scatter import TensorScatterPlan
    from onnx_gather._typing import Array

    #: The in-place check's signature (:data:`_outside_at`).
    Outside = Callable[[int, int, int, int], bool]


def _eager_fn(
    kernel: Take, plan: Plan, block: Any, bounds: bool, fill: Any
) -> Callable[[jax.Array, jax.Array], Any]:
    """The eager call of ``plan``, jitted once; with ``bounds`` also whether an index is bad.

    A closure over the plan rather than static arguments: ``jax.jit``'s fast dispatch path
    then serves every call (docs/performance.md).
    ``kernel``: the operator's fill-mode gather; ``block``: slices cutting data to what
    the output reads (None: all of it), which the plan determines; ``fill``: the bits of
    bfloat16's NaN where the data arrives as its int16 bits, else None (the dtype's own
    fill value). With ``bounds`` it returns ``(out, bad)``: one flag, exact for every
    component's own size, is the least a checked call must read back (one output fewer
    than the indices' min and max, and no concatenation).
    """
    key = (kernel, plan, bounds, fill)
    fn = _EAGER.get(key)
    if fn is not None:
        return fn
    # Checked: the indices are in range, or the result is discarded for the IndexError.
    guard = not plan.check_bounds

    def call(data: jax.Array, indices: jax.Array) -> Any:
        if block is not None:
            data = data[block]
        out = fill_take(kernel, data, indices, plan, fill, guard)
        if not bounds:
            return out
        return out, jnp.any(plan.outside(indices, jnp))

    return _EAGER.put(key, jax.jit(call))


_EAGER: Memo[tuple[Any, ...], Callable[[jax.Array, jax.Array], Any]] = Memo(1024)


def _bound(
    fn: Callable[[jax.Array, jax.Array], Any],
    plan: Plan,
    kind: type[jax.Array],
    exact: Call,
    host: tuple[Callable[[jax.Array, jax.Array], Any], Outside, int, int, int] | None = None,
) -> Call:
    """The bound eager call of ``plan`` on ``kind`` arrays (jaxlib's concrete array type).

    What :func:`_run` decides per call, decided once (:meth:`JaxBackend.bind`): no bfloat16
    bits, no wide indices, no host check of large indices. Per call only what the key of
    ``_api`` does not hold: the devices, and an enclosing trace. ``exact`` (:func:`_run`)
    takes indices committed to a device that data is not (jit would run there: the result
    belongs on data's), arrays on devices jit refuses to combine, and concrete arrays
    inside a trace, whose results are tracers.

    ``host``: for indices in CPU memory, ``(unchecked, outside, count, itemsize, size)``:
    ``unchecked``, the jitted call without the flag, runs, and once its result is done
    ``outside``, the compiled kernel (:data:`_outside_at`), reads the ``count`` indices
    where they lie. Elsewhere ``fn`` computes the flag, which is read back.
    """
    checked = plan.check_bounds
    # The last sharding found to be one buffer in CPU memory (the same object each call):
    # the indices' where they are checked in place, else the flag's.
    in_place = None
    unchecked, outside, count, itemsize, size = host or (None, None, 0, 0, 0)

    def call(arrays: tuple[Array, ...], out: Array = None, /) -> Any:
        nonlocal in_place
        data, indices = arrays
        if indices.committed and not data.committed:
            return exact(arrays, out)
        run = fn
        if outside is not None:
            sharding = indices.sharding
            if sharding is in_place or _in_place(sharding):
                in_place = sharding
                run = unchecked  # type: ignore[assignment]
        try:
            result = run(data, indices)
        except ValueError:  # (arrays committed to different devices: _run moves indices)
            return exact(arrays, out)
        if run is not fn or not checked:
            if type(result) is not kind:
                return exact(arrays, out)
            if run is not fn and outside is not None:
                # The indices are read where they lie once the gather is done: it has
                # read them (they are ready, and the values checked are the values it
                # read, also where they are NumPy or torch memory imported without a
                # copy, which their owner may change once the call returns), and the call
                # returns a finished result, as the flag's read made it. Its result is
                # discarded if an index is out of range; the gather never reads outside
                # data. (Deleted or donated indices: the jitted call has raised JAX's own
                # error. Not is_ready() first: of a deleted array, jaxlib 0.10.2 crashes
                # the process.)
                result.block_until_ready()
                if outside(indices.unsafe_buffer_pointer(), count, itemsize, size):
                    _raise_for(plan, indices)
            return result
        bad: Any = result[1]
        if type(bad) is not kind:
            return exact(arrays, out)
        sharding = bad.sharding
        if sharding is in_place or _in_place(sharding):
            in_place = sharding
            bad.block_until_ready()
            if _BOOL_AT(bad.unsafe_buffer_pointer()).value:
                _raise_for(plan, indices)
        elif np.asarray(bad):  # the one transfer of a checked call
            _raise_for(plan, indices)
        return result[0]

    return call


#: The bool at an address. A flag in CPU memory is read there, after the call is done: no
#: NumPy on the path. ``np.asarray`` of the flag, or any NumPy operation between two JAX
#: calls, costs more than its own time, a large part of a tiny call (docs/performance.md).
_BOOL_AT = ctypes.c_bool.from_address

_IN_PLACE: Memo[Any, bool] = Memo(256)

#: ``_outside_at(address, count, itemsize, size)``: whether an index of CPU memory lies
#: outside ``[-size, size-1]`` (the compiled kernel's ``outside_at``; None without it). A
#: checked eager call on fewer than :data:`_IN_PLACE_BELOW` CPU indices reads them there
#: once the jitted call is done rather than computing a flag inside it and reading that
#: back: the flag is a second output to allocate and wait for (docs/performance.md).
_outside_at: Outside | None = None if _kernels is None else _kernels.outside_at

#: Indices from which the flag, fused into the jitted gather, costs no more than the
#: kernel's separate pass (docs/performance.md).
_IN_PLACE_BELOW = 1 << 16


def _in_place(sharding: Any) -> bool:
    """Whether an array of ``sharding`` is one buffer in CPU memory (answered once each)."""
    return _IN_PLACE.get_or_make(
        sharding,
        lambda: len(sharding.device_set) == 1 and next(iter(sharding.device_set)).platform == "cpu",
    )


def _whole(plan: Plan) -> None:
    """Gather and GatherND read data whole: no block."""
    return


def _block(plan: GatherElementsPlan) -> tuple[slice, ...] | None:
    """GatherElements: the plan's block, which trims data to what the output reads."""
    return plan.block()


#: The gathers' kernels, and the slices of data each reads (None: all of it).
_KERNELS: dict[str, tuple[Take, Callable[[Any], tuple[slice, ...] | None]]] = {
    "gather": (take, _whole),
    "gather_elements": (take_along_axis, _block),
    "gather_nd": (take_nd, _whole),
}


def _raise_for(plan: Plan, indices: jax.Array) -> None:
    """The plan's IndexError for the first bad index of concrete ``indices``."""
    _spec.raise_out_of_range(plan, np.asarray(indices))
    msg = f"{plan.op}: the check reported an out-of-range index that is not there"
    raise AssertionError(msg)


def _from_host(indices: np.ndarray, data: jax.Array, plan: Plan) -> tuple[jax.Array, bool]:
    """Host indices, checked on the host (also while tracing: they are constants), placed.

    Also whether they were checked: not against a symbolic size (``jax.export``). Unchecked
    they go as given: the kernels' fill mode counts negatives and fills the rest.
    """
    checked = plan.check_bounds and _static(plan)
    if checked:
        indices = _host.counted_on_host(plan, indices)
    indices = _narrowed(indices)
    if traced(data):
        return jnp.asarray(indices), checked
    devices = data.devices()
    if len(devices) == 1:
        return jax.device_put(indices, next(iter(devices))), checked
    return jnp.asarray(indices), checked


def _narrowed(indices: np.ndarray) -> np.ndarray:
    """Host indices JAX can hold: without x64, int64 saturated into int32.

    JAX without x64 would wrap an int64 index into int32 (2**32 + 1 reads as 1);
    saturated, one out of range stays out of range.
    """
    if indices.dtype == np.int64 and not jax.config.read("jax_enable_x64"):
        info = np.iinfo(np.int32)
        return np.asarray(np.clip(indices, info.min, info.max), np.int32)  # (0-d stays an array)
    return indices


def _static(plan: Plan) -> bool:
    """Whether every size an index addresses is a number (no symbolic ``jax.export`` dim).

    Every coordinate's (GatherND, ScatterND): the first may be static and a later one not.
    Against a symbolic size, host indices can be neither counted from the end on the host
    nor compared with the size: they then travel unchecked, like traced ones.
    """
    return all(type(size) is int for size in plan.sizes)


#: Indices from which an eager checked CPU call that the compiled kernel does not check
#: (:data:`_IN_PLACE_BELOW` and more, GatherND's coordinates of axes of different sizes, a
#: build without the kernel) checks them with NumPy in place rather than inside the
#: jitted call. Below, the jitted flag (one fused
#: pass) costs less (docs/performance.md).
_HOST_CHECK_FROM = 1 << 20

_CPU_SHARDINGS: Memo[Any, bool] = Memo(256)


def _on_cpu(sharding: Any) -> bool:
    """Whether every device of ``sharding`` is a CPU (answered once per sharding)."""
    return _CPU_SHARDINGS.get_or_make(
        sharding, lambda: all(device.platform == "cpu" for device in sharding.device_set)
    )


#: The backend in charge while a converter traces a function to ONNX (None: none is);
#: set, for its trace only, by a converter's plug-in (:mod:`onnx_gather.integrations.jax2onnx`).
exporting: Backend | None = None


class JaxBackend(Backend):
    """The JAX backend.

    Eagerly, a gather runs one jitted function per plan, cached (:func:`_eager_fn`). A
    checked call on few indices in CPU memory has the compiled kernel read them where
    they lie once the gather is done (:data:`_outside_at`); elsewhere the jitted function
    also returns whether an index is out of range, and the call reads that one bool back
    (or NumPy checks large CPU indices first, :data:`_HOST_CHECK_FROM`). An unchecked
    call reads nothing back. Host indices are checked on the host before they travel
    (:func:`_from_host`). From a plan's second call on, the call goes straight to that
    function (:meth:`bind`). Under tracing nothing can raise: an out-of-range index
    yields the fill value (:func:`_run`).
    """

    name = "jax"
    writes_in_place = False

    def owns(self, x: Array, /) -> bool:
        return isinstance(x, jax.Array)

    def traced(self) -> bool:
        """Whether a converter traces the function to ONNX (:data:`exporting`).

        Then ``_api`` keeps no call: each binds anew, to the converter's backend.
        """
        return exporting is not None

    def bind(self, method: str, plan: Plan, arrays: tuple[Array, ...], /) -> Call:
        """A gather on concrete arrays: its jitted call, nothing between (:func:`_bound`).

        Everything :func:`_run` would decide from what ``_api``'s key holds (types,
        shapes, dtypes) is decided here once; the rest (tracers, host indices, bfloat16,
        wide or large checked indices) binds the method itself. While a converter traces
        (:data:`exporting`), its backend binds the call.
        """
        if exporting is not None:
            return exporting.bind(method, plan, arrays)
        exact = super().bind(method, plan, arrays)
        route = _KERNELS.get(method)
        if route is None or len(arrays) != 2:
            return exact
        data, indices = arrays
        kind = type(data)
        largest = max(plan.sizes)
        if (
            type(indices) is not kind
            or traced(data)
            or data.dtype in BITS
            or type(largest) is not int  # (a symbolic size: jax.export)
            or largest > INT32_MAX
        ):
            return exact
        kernel, block_of = route
        block = block_of(plan)
        host = None
        if plan.check_bounds and _outside_at is not None and 0 < indices.size < _IN_PLACE_BELOW:
            size = plan.sizes[0]
            if indices.dtype in (np.int32, np.int64) and all(s == size for s in plan.sizes):
                unchecked = _eager_fn(kernel, plan, block, False, None)
                host = (unchecked, _outside_at, indices.size, indices.dtype.itemsize, size)
        if plan.check_bounds and host is None and indices.size >= _HOST_CHECK_FROM:
            return exact
        fn = _eager_fn(kernel, plan, block, plan.check_bounds, None)
        return _bound(fn, plan, kind, exact, host)

    def gather(self, data: jax.Array, indices: Array, plan: GatherPlan, /) -> jax.Array:
        """ONNX Gather: ``jnp.take`` in fill mode (:func:`_run`)."""
        return _run(take, data, indices, plan, None)

    def keep(self, where: Array, x: jax.Array, /) -> jax.Array:
        """``x`` where ``where`` holds, else zero; bfloat16 as its bits (:func:`._take.exact_keep`)."""
        return exact_keep(where, x)

    def gather_elements(
        self, data: jax.Array, indices: Array, plan: GatherElementsPlan, /
    ) -> jax.Array:
        """ONNX GatherElements (and OpenVINO's): ``jnp.take_along_axis`` in fill mode."""
        return _run(take_along_axis, data, indices, plan, plan.block())

    def gather_nd(self, data: jax.Array, indices: Array, plan: GatherNDPlan, /) -> jax.Array:
        """ONNX GatherND: advanced indexing in fill mode (``.at[...].get(mode="fill")``)."""
        return _run(take_nd, data, indices, plan, None)

    def openvino_gather(
        self, data: jax.Array, indices: Array, plan: OpenVINOGatherPlan, /
    ) -> jax.Array:
        """As the base's; under a trace or against a symbolic size, host indices as JAX's.

        The base compares host indices with the size on the host and places them on
        data's device. Traced data has no device to read (jax 0.4.38's tracers have no
        ``device``), and a symbolic size (``jax.export``) cannot be compared on the host:
        they become a constant of the computation first, as :func:`_from_host` makes
        them, which without x64 must fit int32 (:func:`_narrowed`).
        """
        if isinstance(indices, np.ndarray) and (traced(data) or not _static(plan)):
            indices = jnp.asarray(_narrowed(indices))
        return super().openvino_gather(data, indices, plan)

    def without_negatives(self, indices: Array, data: jax.Array, plan: ScatterUpdatePlan, /) -> Any:
        """As the base's; traced indices carry the check for checkify (:func:`with_index_check`).

        Under a trace an index no check stops is dropped, negatives too. Against a
        symbolic size (``jax.export``) no index can be compared now: host and concrete
        ones go as traced ones do (:func:`_static`).
        """
        static = _static(plan)
        if isinstance(indices, np.ndarray):
            if static:
                return super().without_negatives(indices, data, plan)
            indices = jnp.asarray(indices)
        if traced(indices) or not static:
            if plan.check_bounds:
                indices = with_index_check(indices, plan)
        elif plan.check_bounds and indices.size:
            values = np.asarray(indices)
            _spec.check_range(plan, *value_range(values), lambda: values)
        return jnp.where(indices < 0, plan.size, indices)

    def mean(self, total: jax.Array, counts: jax.Array, use_init_val: bool, /) -> jax.Array:
        """As the base's; float quotients on the CPU by NumPy, called back from the computation.

        XLA's CPU arithmetic flushes subnormals to zero (openxla/xla#22858: a subnormal
        sum divided by 1 comes back 0), as :func:`._scatter._on_host` says, and so does
        NumPy's in the callback's thread: the quotient comes from the bits where a
        subnormal can appear (:func:`._ieee.quotient`). Elsewhere (a GPU, symbolic
        shapes) XLA's division.
        """
        floating = self.dtype_name(total) in ("float16", "bfloat16", "float32", "float64")
        static = all(type(n) is int for n in total.shape)
        if not (floating and static and scatters.serial_device(total)):
            return super().mean(total, counts, use_init_val)

        return _divided(total, counts, use_init_val)

    def filled(self, like: Array, value: Any, dtype: Any = None, /) -> jax.Array:
        """As the base's; a tracer has no device to ask (the trace places it)."""
        return jnp.full(like.shape, value, dtype=like.dtype if dtype is None else dtype)

    def check_writable(self, out: Array, /) -> None:
        msg = (
            "JAX arrays are immutable: out= cannot write into one. To update data in place, "
            "call the scatter inside jax.jit(..., donate_argnums=...) donating data; XLA "
            "then writes the result into data's buffer"
        )
        raise TypeError(msg)

    def scatter_elements(
        self,
        data: jax.Array,
        indices: Array,
        updates: jax.Array,
        plan: ScatterElementsPlan,
        out: Array = None,
        /,
    ) -> jax.Array:
        """ONNX ScatterElements: ``.at[]`` with every order decided (:mod:`._scatter`).

        ``out`` never arrives: :meth:`check_writable` refuses it first.
        """
        return _scatter_run(data, indices, updates, plan)

    def scatter_nd(
        self,
        data: jax.Array,
        indices: Array,
        updates: jax.Array,
        plan: ScatterNDPlan,
        out: Array = None,
        /,
    ) -> jax.Array:
        """ONNX ScatterND: as :meth:`scatter_elements`."""
        return _scatter_run(data, indices, updates, plan)

    def tensor_scatter(
        self,
        data: jax.Array,
        updates: jax.Array,
        indices: Array,
        plan: TensorScatterPlan,
        out: Array = None,
        /,
    ) -> jax.Array:
        """ONNX TensorScatter: one ``.at[].set`` of every write, jitted once per plan.

        Write indices that can be read now (host ones, concrete ones) are checked now;
        under tracing nothing can raise, and a write outside the axis is dropped
        (``mode="drop"``), as it is against a symbolic axis size (``jax.export``), where
        no index can be compared on the host. XLA's scatter moves float bits as they are (NaN payloads
        included); bfloat16 moves as its bits, as in the other scatters.
        """
        if plan.check_bounds and not traced(indices) and type(plan.size) is int:
            plan.raise_if_bad(np.asarray(indices))
        if isinstance(indices, np.ndarray):
            if type(plan.size) is int:  # (a symbolic size: jax.export reduces nothing)
                indices = plan.reduced(indices)
            indices = jnp.asarray(_narrowed(indices))
        dtype = data.dtype
        bits = BITS.get(dtype)  # (bfloat16 as its bits, as the other scatters move it)
        if bits is not None:
            data = jax.lax.bitcast_convert_type(data, bits)
            updates = jax.lax.bitcast_convert_type(updates, bits)
        if traced(data) or traced(indices) or traced(updates):
            result = _tensor_scatter(data, updates, indices, plan)
        else:
            result = _tensor_scatter_fn(plan)(data, updates, indices)
        return jax.lax.bitcast_convert_type(result, dtype) if bits is not None else result


def _tensor_scatter(
    data: jax.Array, updates: jax.Array, indices: jax.Array, plan: TensorScatterPlan
) -> jax.Array:
    """TensorScatter's writes; a position outside the axis is dropped."""
    starts = indices.reshape(-1)
    positions, keep = plan.positions(starts, jnp.arange(plan.length, dtype=starts.dtype), jnp)
    positions = jnp.where(keep, positions, plan.size)
    batch = jnp.arange(starts.shape[0])[:, None]
    source = jnp.moveaxis(updates, plan.axis, 1)  # (batch, length, *others): the update's
    index = plan.target(batch, positions)
    return data.at[index].set(source, mode="drop", unique_indices=True)


def _tensor_scatter_fn(plan: TensorScatterPlan) -> Callable[..., jax.Array]:
    """:func:`_tensor_scatter` of ``plan``, jitted once."""
    fn = _TENSOR_SCATTERS.get(plan)
    if fn is None:
        fn = _TENSOR_SCATTERS.put(plan, jax.jit(lambda d, u, i: _tensor_scatter(d, u, i, plan)))
    return fn


_TENSOR_SCATTERS: Memo[Any, Callable[..., jax.Array]] = Memo(256)


def _scatter_run(data: jax.Array, indices: Array, updates: jax.Array, plan: Plan) -> jax.Array:
    """Any scatter: check what can be read now, record the rest for checkify, scatter.

    An index out of range that no check stops (unchecked, or under tracing) drops its
    update.
    """
    largest = max(plan.sizes)
    if type(largest) is int and largest > INT32_MAX:  # (not a symbolic size)
        indices = _wide(indices, plan)
    if isinstance(indices, np.ndarray):
        indices, _ = _from_host(indices, data, plan)
    elif plan.check_bounds and not traced(indices) and indices.size and _static(plan):
        values = np.asarray(indices)  # concrete: checked now, eagerly or as a constant
        _spec.check_range(plan, *value_range(values), lambda: values)
    elif plan.check_bounds and traced(indices):
        indices = with_index_check(indices, plan)
    bits = BITS.get(data.dtype)
    dtype = data.dtype
    if bits is not None:  # bfloat16 as its bits (the module docstring of _scatter)
        data = jax.lax.bitcast_convert_type(data, bits)
        updates = jax.lax.bitcast_convert_type(updates, bits)
    serial = scatters.serial_device(data)
    if traced(data) or traced(indices) or traced(updates):
        out = scatters.scatter(data, indices, updates, plan, dtype, serial)
    else:
        out = scatters.scatter_fn(plan, dtype, serial)(data, indices, updates)
    return jax.lax.bitcast_convert_type(out, dtype) if bits is not None else out


def _run(kernel: Take, data: jax.Array, indices: Array, plan: Plan, block: Any) -> jax.Array:
    """Any gather: check what can be read now, record the rest for checkify, run ``kernel``.

    ``block``: slices cutting data to the part the output reads, or None for all of it.
    """
    checked = False  # whether the values were read and found in range
    largest = max(plan.sizes)
    if type(largest) is int and largest > INT32_MAX:  # (not a symbolic size)
        indices = _wide(indices, plan)
    if isinstance(indices, np.ndarray):
        indices, checked = _from_host(indices, data, plan)
    elif (
        plan.check_bounds
        and not traced(indices)
        and traced(data)
        and indices.size
        and _static(plan)
    ):
        # Concrete indices inside a trace (closed over): a constant, checked now.
        values = np.asarray(indices)
        _spec.check_range(plan, *value_range(values), lambda: values)
        checked = True
    if traced(data) or traced(indices):
        # Under tracing (jax.jit, jax.vmap, jax.grad) the values are unknown, so nothing
        # can raise: an out-of-range index yields the fill value (_take), and the indices
        # pass through an identity primitive (_check) that plain jit lowers to nothing and
        # jax.experimental.checkify.checkify turns into the same IndexError text.
        if plan.check_bounds and not checked:
            indices = with_index_check(indices, plan)
        if block is not None:
            data = data[block]
        return exact_take(kernel, data, indices, plan)
    if indices.sharding != data.sharding and len(data.devices()) == 1:
        indices = jax.device_put(indices, data.sharding)
    if (
        plan.check_bounds
        and not checked
        and indices.size >= _HOST_CHECK_FROM
        and _on_cpu(indices.sharding)
    ):
        # Host memory: NumPy reads it in place, in one reduction when no index is
        # negative, faster than XLA's min/max in the jitted call (docs/performance.md).
        values = np.asarray(indices)
        _spec.check_range(plan, *value_range(values), lambda: values)
        checked = True
    # bfloat16 goes in and out as its int16 bits, converted outside the jitted call:
    # inside it, XLA's CPU code quiets signalling NaNs where the bitcast fuses with
    # the gather and the fill (0x7F81 came back 0x7FC1; jax 0.10.2), barrier or not.
    bits = BITS.get(data.dtype)
    fill = None
    if bits is not None:
        fill = nan_bits(data.dtype)
        data_dtype, data = data.dtype, jax.lax.bitcast_convert_type(data, bits)
    bounds = plan.check_bounds and not checked
    fn = _eager_fn(kernel, plan, block, bounds, fill)
    if not bounds:
        out = fn(data, indices)
    else:
        out, bad = fn(data, indices)
        if traced(bad):
            # Concrete arrays inside a trace (checkify passes them through) give traced
            # results: evaluate the call now instead.
            with jax.ensure_compile_time_eval():
                out, bad = fn(data, indices)
        if np.asarray(bad):  # the one transfer of a checked call
            _raise_for(plan, indices)
    if bits is not None:
        out = jax.lax.bitcast_convert_type(out, data_dtype)
    return out


def _wide(indices: Array, plan: Plan) -> Any:
    """int64 indices for an axis longer than int32 reaches; ValueError without x64.

    Fill mode counts a negative index from the end in the indices' own type, where int32
    wraps: -1 became an out-of-range index (the fill) on an axis of 2**31 + 10 (jax
    0.10.2). Without x64 JAX has no wider index type, so elements beyond 2**31 - 1 along
    the axis cannot be addressed at all.
    """
    if not jax.config.read("jax_enable_x64"):
        size = max(plan.sizes)
        axis, _ = plan.addressed([plan.sizes.index(size)])
        msg = (
            f"{plan.op}: axis {axis} has {size} elements, more than int32 "
            f"indices reach, and JAX without x64 has no int64; enable it with "
            f"jax.config.update('jax_enable_x64', True)"
        )
        raise ValueError(msg)
    return indices.astype(np.int64 if isinstance(indices, np.ndarray) else jnp.int64)


backend = JaxBackend()


@partial(jax.custom_jvp, nondiff_argnums=(2,))
def _divided(total: jax.Array, counts: jax.Array, use_init_val: bool) -> jax.Array:
    """OpenVINO's mean on the CPU: NumPy called back, quotients from the bits (:mod:`._ieee`).

    Linear in ``total``: its tangent is divided alike (a callback has no rule of its own).
    """

    def run(t: np.ndarray, c: np.ndarray) -> np.ndarray:
        # (No float arithmetic of NumPy's here: this thread flushes subnormals.)
        t, c = np.asarray(t), np.asarray(c)
        touched = c > 0
        n = c + 1 if use_init_val else np.where(touched, c, 1)
        return np.where(touched, _ieee.quotient(t, n), t)

    shape = jax.ShapeDtypeStruct(total.shape, total.dtype)
    out: jax.Array = jax.pure_callback(run, shape, total, counts, vmap_method="sequential")
    return out


@_divided.defjvp
def _divided_jvp(use_init_val: bool, primals: Any, tangents: Any) -> tuple[jax.Array, jax.Array]:
    total, counts = primals
    touched = counts > 0
    n = counts + 1 if use_init_val else jnp.where(touched, counts, 1)
    tangent = tangents[0]
    return _divided(total, counts, use_init_val), jnp.where(
        touched, tangent / n.astype(tangent.dtype), tangent
    )
