"""The base of every backend (:class:`Backend`): an exact array-API kernel for every operator.

With the array-API pieces its kernels share (:func:`nd_take`), and the checks of a
scatter's ``out`` (:func:`strided_layout`, :func:`overlaps_itself`).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
from array_api_compat import array_namespace, device, to_device

from onnx_gather import _host
from onnx_gather._backends import _openvino
from onnx_gather._backends._positions import element_positions, tuple_rows
from onnx_gather._dtypes import holds_objects, numpy_dtype_name
from onnx_gather._indices import INT32_MAX, BoundsPolicy, counted, default_extremes, from_end
from onnx_gather._spec.gather import GatherPlan

if TYPE_CHECKING:
    from onnx_gather._spec import Plan
    from onnx_gather._spec.gather import OpenVINOGatherPlan
    from onnx_gather._spec.gather_elements import GatherElementsPlan
    from onnx_gather._spec.gather_nd import GatherNDPlan
    from onnx_gather._spec.openvino_scatter import OpenVINOScatterPlan, ScatterUpdatePlan
    from onnx_gather._spec.scatter_elements import ScatterElementsPlan
    from onnx_gather._spec.scatter_nd import ScatterNDPlan
    from onnx_gather._spec.tensor_scatter import TensorScatterPlan
    from onnx_gather._typing import Array


class Call(Protocol):
    """A bound call (:meth:`Backend.bind`).

    It takes the arrays in the operator's input order, and ``out`` for a scatter that
    writes into it.
    """

    def __call__(self, arrays: tuple[Array, ...], out: Array = None, /) -> Any: ...


#: Ranks above which GatherElements runs as ``take`` of linear indices: NumPy-based
#: namespaces index with one array per dimension, at most 63.
_LINEAR_RANK = 32


class Backend:
    """An array library's backend; every operator runs on its array-API namespace.

    Every operator runs with the Python array API standard's functions alone (``take``,
    ``take_along_axis`` where the namespace has it, ``reshape``, ``where``), on indices
    counted once by :meth:`counted`, so a library without a specialised
    kernel still runs any operator exactly. A library's backend derives from it and
    overrides the methods its library can run faster (one pass, a fused kernel, a
    compiled one); an operator added to the registry needs a method here first, and an
    override only where a measurement says it pays.

    The operators' methods receive the arrays as ``_api`` hands them over (``data`` of the
    backend's library; indices of the same library or a NumPy array of host indices,
    unchecked, with negative values) and the operator's plan. They own the bounds policy:
    checked, an index out of range raises ``_spec``'s IndexError; unchecked, a gather
    clamps it into the axis (never reading outside ``data``, never an error of the
    underlying library) and a scatter drops the update (never writing outside the result).

    Attributes
    ----------
    name : str
        The library's name, for messages.
    writes_in_place : bool
        Whether a scatter may write into an array of this library that the backend made
        itself (``out=`` that array): False for immutable (JAX) and lazy (Dask) arrays.
    """

    name = "array-api"
    writes_in_place = True

    # --- what _api asks of every backend -------------------------------------------------

    def owns(self, x: Array, /) -> bool:
        """Whether ``x`` is an array of this library."""
        raise NotImplementedError

    def traced(self) -> bool:
        """Whether a compiler is tracing the call's Python now (``torch.compile``).

        Then host indices become the backend's own array (:meth:`host_under_trace`) and
        nothing is cached: a cache read would make the compiler guard on the cache. A JAX
        trace runs the Python as usual, on tracers: False.
        """
        return False

    def host_under_trace(self, indices: Array, data: Array, /) -> Any:
        """Host indices (a Python int or sequence, a NumPy array) while :meth:`traced`.

        As :func:`onnx_gather._host.index_array`: one NumPy array, an ``Unrepresentable``
        for Python ints no index type holds, None for anything else.
        """
        return _host.index_array(indices)

    def bind(self, method: str, plan: Plan, arrays: tuple[Array, ...], /) -> Call:
        """The call of the operator ``method`` names with ``plan``, ready for its arrays.

        ``_api`` keeps what this returns for later calls on arrays of the same types,
        shapes and dtypes as ``arrays`` (and the same ``out`` relation), so a backend may
        specialise on those; anything else (the device, the layout, a tracer) it must read
        at each call. Here: the method itself.
        """
        run = getattr(self, method)

        def call(arrays: tuple[Array, ...], out: Array = None, /) -> Any:
            return run(*arrays, plan) if out is None else run(*arrays, plan, out)

        return call

    def reshaping(self, call: Call, shape: tuple[int, ...], /) -> Call:
        """``call`` whose result is given ``shape`` (a plan's ``result_shape``); or ``out``."""

        def reshaped(arrays: tuple[Array, ...], out: Array = None, /) -> Any:
            result = call(arrays, out)
            return out if out is not None else self.namespace(result).reshape(result, shape)

        return reshaped

    def checking_strings(self, call: Call, roles: tuple[str, ...], /) -> Call:
        """``call`` that first checks each object array's elements (:meth:`strings`).

        ``_api`` binds it where data or updates are object arrays (ONNX strings).
        """
        strings = self.strings

        def checked(arrays: tuple[Array, ...], out: Array = None, /) -> Any:
            arrays = tuple(
                strings(role, x) if role != "indices" and holds_objects(x) else x
                for role, x in zip(roles, arrays, strict=True)
            )
            return call(arrays, out)

        return checked

    def strings(self, role: str, x: Array, /) -> Array:
        """``x``, an object array, once every element is known to be a string.

        Here NumPy's, checked now (:func:`onnx_gather._host.check_strings`); a lazy library
        checks as it computes.
        """
        return _host.check_strings(role, x) if isinstance(x, np.ndarray) else x

    def leading(self, method: str, plan: Plan, arrays: tuple[Array, ...], /) -> Call:
        """:meth:`bind` for a plan that leads (:attr:`~onnx_gather._spec.Plan.lead`).

        The call runs on data (and ``out``) with a leading axis of size 1, a view where
        the library has views, and on index tuples of the one coordinate 0 in place of
        the tuples of length 0; its result has the led shape (``_api`` gives it data's).
        """
        call = self.bind(method, plan, self._led(arrays))

        def led(arrays: tuple[Array, ...], out: Array = None, /) -> Any:
            out = None if out is None else self.namespace(out).expand_dims(out, axis=0)
            return call(self._led(arrays), out)

        return led

    def _led(self, arrays: tuple[Array, ...]) -> tuple[Array, ...]:
        """Data with a leading axis of size 1; index tuples ``(..., 0)`` as ``(..., 1)`` zeros."""
        data, indices, *rest = arrays
        shape = (*indices.shape[:-1], 1)
        if isinstance(indices, np.ndarray):  # (host indices)
            zeros = np.zeros(shape, indices.dtype)
        else:
            zeros = self.namespace(indices).zeros(
                shape, dtype=indices.dtype, device=device(indices)
            )
        return (self.namespace(data).expand_dims(data, axis=0), zeros, *rest)

    def shape(self, x: Array, /) -> tuple[int, ...]:
        """The shape of ``x`` as a tuple of ints."""
        return tuple(x.shape)

    def dtype_name(self, x: Array, /) -> str:
        """The ONNX-style name of ``x``'s dtype (see :mod:`onnx_gather._spec`)."""
        return numpy_dtype_name(x.dtype)

    def check_writable(self, out: Array, /) -> None:
        """Nothing if a scatter may write into ``out`` (an array of this library), else an error.

        ``_api`` asks before any write. A library whose arrays are immutable (JAX) raises
        a TypeError that says how to update in place instead; NumPy a ValueError for a
        read-only array. Here: a ValueError for an ``out`` whose elements overlap (two in
        one memory cell: every target would land on it), where the library shows its
        strides (:func:`strided_layout`); the others cannot make such an array.
        """
        layout = strided_layout(out)
        if layout is not None and overlaps_itself(*layout):
            msg = (
                f"out of shape {layout[0]} overlaps itself: its strides {layout[1]} put "
                "several of its elements in one memory cell; pass an array whose elements "
                "do not share memory (a copy)"
            )
            raise ValueError(msg)

    # --- the pieces the array-API kernels are made of ------------------------------------

    def namespace(self, x: Array, /) -> Any:
        """``x``'s array-API namespace."""
        return array_namespace(x)

    def extremes(self, indices: Array, /, axis: int | None = None) -> tuple[Any, Any]:
        """The smallest and largest value of non-empty ``indices`` (of this library).

        With ``axis``, per position of the other axis: two lists, read back in one
        transfer (:meth:`to_host`; one synchronisation on a device).
        """
        xp = self.namespace(indices)
        if axis is None:
            return default_extremes(xp, indices)
        both = self.to_host(xp.stack((xp.min(indices, axis=axis), xp.max(indices, axis=axis))))
        return both[0].tolist(), both[1].tolist()

    def to_host(self, x: Array, /) -> np.ndarray:
        """An array of this library as NumPy (for messages: the bad index and its place)."""
        try:
            return np.asarray(x)
        except (TypeError, RuntimeError, ValueError):
            pass
        try:
            return np.from_dlpack(x)
        except BufferError:
            # On a device (CuPy refuses both above): array-api-compat's copy to the host.
            return np.asarray(to_device(x, "cpu"))

    def zeros(self, shape: tuple[int, ...], like: Array, /) -> Any:
        """Zeros of ``like``'s dtype on its device: empty strings for strings (NumPy's)."""
        xp = self.namespace(like)
        if isinstance(like.dtype, np.dtype) and like.dtype.kind in "OUST":
            return xp.asarray(np.full(shape, "", dtype=like.dtype))
        return xp.zeros(shape, dtype=like.dtype, device=device(like))

    def all_known(self, flags: Array, /) -> bool:
        """Whether every entry of ``flags`` is known now to be True.

        False where one is not, or where reading them would wait for a device or break a
        trace (here: always).
        """
        return False

    def keep(self, where: Array, x: Array, /) -> Any:
        """``x`` where ``where`` (broadcast) holds, zero (an empty string) elsewhere.

        Every kept element's bits as they are.
        """
        return self.namespace(x).where(where, x, self.zeros((), x))

    def counted(self, indices: Array, data: Array, plan: Any, /) -> Any:
        """Indices on ``data``'s device in ``[0, s)`` per component: checked, or clamped.

        Host indices are counted on the host, before they travel; the library's own
        with one read of their extremes (:func:`onnx_gather._indices.counted`).
        """
        xp = self.namespace(data)
        if isinstance(indices, np.ndarray):
            return xp.asarray(_host.counted_on_host(plan, indices), device=data.device)
        if indices.device != data.device:
            indices = indices.to_device(data.device)
        if not plan.check_bounds:  # clamped without reading a value: no synchronisation
            return counted(xp, indices, plan, BoundsPolicy.CLAMP)
        return counted(
            xp, indices, plan, BoundsPolicy.RAISE, extremes=self.extremes, to_host=self.to_host
        )

    # --- the operators --------------------------------------------------------------------

    def gather(self, data: Array, indices: Array, plan: GatherPlan, /) -> Any:
        """ONNX Gather: ``take`` of the counted indices, flattened, then reshaped."""
        xp = self.namespace(data)
        flat = xp.reshape(self.counted(indices, data, plan), (-1,))
        if plan.size == 0 and flat.shape[0]:  # unchecked, nothing to read: zeros
            return xp.zeros(plan.out_shape, dtype=data.dtype, device=data.device)
        return xp.reshape(xp.take(data, flat, axis=plan.axis), plan.out_shape)

    def gather_elements(self, data: Array, indices: Array, plan: GatherElementsPlan, /) -> Any:
        """ONNX GatherElements (and OpenVINO's): ``take_along_axis``, or ``take`` of linear indices."""
        xp = self.namespace(data)
        indices = self.counted(indices, data, plan)
        if plan.size == 0 and indices.size:  # unchecked, nothing to read: zeros
            return xp.zeros(plan.out_shape, dtype=data.dtype, device=data.device)
        block = plan.block()
        if block is not None:
            data = data[block]
        # take_along_axis is standard from 2024.12 on; a namespace may hold it and yet
        # refuse it at an older version it is set to (array-api-strict's flags), so the
        # version it reports decides, at each call.
        version = str(getattr(xp, "__array_api_version__", ""))
        if version >= "2024.12" and hasattr(xp, "take_along_axis") and data.ndim <= _LINEAR_RANK:
            return xp.take_along_axis(data, indices, axis=plan.axis)
        return _take_linear(xp, data, indices, plan.axis)

    def gather_nd(self, data: Array, indices: Array, plan: GatherNDPlan, /) -> Any:
        """ONNX GatherND: one ``take`` of linear indices (see :func:`nd_take`)."""
        xp = self.namespace(data)
        indices = self.counted(indices, data, plan)
        return nd_take(xp, data, indices, plan)

    def openvino_gather(self, data: Array, indices: Array, plan: OpenVINOGatherPlan, /) -> Any:
        """OpenVINO Gather-7/8: :meth:`gather` or :meth:`gather_nd`, zeros where invalid.

        The valid indices are read by ``plan.inner``. The inner call gets in-range indices
        (an invalid one reads element 0 of the axis, then replaced by :meth:`keep`), so
        each library's own kernel and its exact moves serve. Indices known to be all valid
        (host ones; :meth:`all_known`) need no :meth:`keep`, a pass over the whole output
        into a second one of its size (about half the call: docs/performance.md).
        """
        xp = self.namespace(data)
        s = plan.size
        if s == 0:  # every index is out of range
            return self.zeros(plan.out_shape, data)
        every = False  # whether every index is known to be valid
        if isinstance(indices, np.ndarray) and type(s) is not int:
            # A symbolic size (jax.export): host indices cannot be compared with it now.
            indices = xp.asarray(indices, device=device(data))
        if isinstance(indices, np.ndarray):
            # On the host, before they travel: a library may narrow them (JAX without
            # 64-bit types wraps an int64 index into int32).
            valid, safe = _valid_and_safe(np, indices, plan)
            every = bool(valid.all())
            if not every:
                valid = xp.asarray(valid, device=device(data))
            safe = xp.asarray(safe, device=device(data))
        else:
            if type(s) is int and s > INT32_MAX and indices.dtype == xp.int32:
                indices = xp.astype(indices, xp.int64)
            valid, safe = _valid_and_safe(xp, indices, plan)
            every = self.all_known(valid)
        inner = plan.inner
        if isinstance(inner, GatherPlan):  # (batch_dims 0)
            out = self.gather(data, safe, inner)
        else:
            b, axis = plan.batch_dims, plan.axis
            if axis > b:  # the gathered axis right after the batch dims
                order = (*range(b), axis, *range(b, axis), *range(axis + 1, data.ndim))
                data = xp.permute_dims(data, order)
            out = self.gather_nd(data, xp.expand_dims(safe, axis=-1), inner)
            if plan.moved is not None:
                out = xp.permute_dims(out, plan.moved)
        return out if every else self.keep(xp.reshape(valid, plan.mask_shape), out)

    def scatter_elements(
        self,
        data: Array,
        indices: Array,
        updates: Array,
        plan: ScatterElementsPlan,
        out: Array = None,
        /,
    ) -> Any:
        """ONNX ScatterElements; ``out`` (data's library, shape and dtype) receives it.

        The array API standard has no scatter (no integer-array assignment, no ordered
        reduction): each backend writes its own.
        """
        raise NotImplementedError(_NO_SCATTER.format(self.name))

    def scatter_nd(
        self, data: Array, indices: Array, updates: Array, plan: ScatterNDPlan, out: Array = None, /
    ) -> Any:
        """ONNX ScatterND, as :meth:`scatter_elements`."""
        raise NotImplementedError(_NO_SCATTER.format(self.name))

    def tensor_scatter(
        self,
        data: Array,
        updates: Array,
        indices: Array,
        plan: TensorScatterPlan,
        out: Array = None,
        /,
    ) -> Any:
        """ONNX TensorScatter, as :meth:`scatter_elements`."""
        raise NotImplementedError(_NO_SCATTER.format(self.name))

    def openvino_scatter_update(
        self,
        data: Array,
        indices: Array,
        updates: Array,
        plan: ScatterUpdatePlan,
        out: Array = None,
        /,
    ) -> Any:
        """OpenVINO ScatterUpdate-3: :meth:`scatter_elements` of the indices broadcast.

        The indices are checked first (:meth:`without_negatives`: a negative one is an
        error too); the ScatterElements call then needs no check.
        """
        return _openvino.scatter_update(self, data, indices, updates, plan, out)

    def openvino_scatter_elements_update(
        self,
        data: Array,
        indices: Array,
        updates: Array,
        plan: OpenVINOScatterPlan,
        out: Array = None,
        /,
    ) -> Any:
        """OpenVINO ScatterElementsUpdate-3/12: :meth:`scatter_elements` (a few for some).

        See :func:`onnx_gather._backends._openvino.reduced`.
        """
        return _openvino.reduced(self, self.scatter_elements, data, indices, updates, plan, out)

    def openvino_scatter_nd_update(
        self,
        data: Array,
        indices: Array,
        updates: Array,
        plan: OpenVINOScatterPlan,
        out: Array = None,
        /,
    ) -> Any:
        """OpenVINO ScatterNDUpdate-3/15: :meth:`scatter_nd` (a few for some)."""
        return _openvino.reduced(self, self.scatter_nd, data, indices, updates, plan, out)

    # --- the pieces OpenVINO's scatters are made of ----------------------------------------

    def without_negatives(self, indices: Array, data: Array, plan: ScatterUpdatePlan, /) -> Any:
        """ScatterUpdate's indices: checked against ``[0, s-1]``, else negatives out of range.

        Checked, a bad one raises the plan's IndexError, and the indices come back as
        they are (host ones stay on the host, for the kernels' host paths). Unchecked,
        a negative index becomes ``s``, which the unchecked ScatterElements drops.
        """
        if plan.check_bounds:
            if isinstance(indices, np.ndarray):
                return _host.counted_on_host(plan, indices)
            return self.counted(indices, data, plan)
        xp = np if isinstance(indices, np.ndarray) else self.namespace(indices)
        if plan.size > INT32_MAX and indices.dtype == xp.int32:
            indices = xp.astype(indices, xp.int64)
        return xp.where(indices < 0, xp.full_like(indices, plan.size), indices)

    def negated(self, x: Array, /) -> Any:
        """``-x``, wrapping around for integers (unsigned ones too)."""
        return -x

    def filled(self, like: Array, value: Any, dtype: Any = None, /) -> Any:
        """An array of ``like``'s shape and device holding ``value``, of ``dtype`` (like's)."""
        xp = self.namespace(like)
        return xp.full(
            like.shape, value, dtype=like.dtype if dtype is None else dtype, device=device(like)
        )

    def mean(self, total: Array, counts: Array, use_init_val: bool, /) -> Any:
        """OpenVINO's ``mean``: ``total`` divided where ``counts`` (int32) says updates landed."""
        return _openvino.mean(self, total, counts, use_init_val)

    def floor_divided(self, total: Array, n: Array, /) -> Any:
        """``floor(total / n)``: integers, ``n`` positive int32; in total's type."""
        return _openvino.floor_divided(self.namespace(total), total, n, self.dtype_name(total))


_NO_SCATTER = "the {} backend has no scatter kernel"


def _valid_and_safe(xp: Any, indices: Array, plan: OpenVINOGatherPlan) -> tuple[Any, Any]:
    """Where OpenVINO Gather's ``indices`` are valid; them counted into ``[0, s)``, else 0."""
    s = plan.size
    low = -s if plan.negatives else 0
    valid = (indices >= low) & (indices < s)
    counted = from_end(xp, indices, s) if plan.negatives else indices
    return valid, xp.where(valid, counted, xp.zeros_like(indices))


def strided_layout(x: Array) -> tuple[tuple[int, ...], tuple[int, ...], int] | None:
    """``x``'s shape, strides and item size in one unit, where they may overlap.

    NumPy's and CuPy's ``strides`` (bytes), PyTorch's ``stride()`` (elements). None where
    the array is dense (C- or Fortran-ordered: no two elements overlap; the common case,
    answered by a flag) and for a library that keeps its layout to itself (the array API
    standard has no strides).
    """
    strides = getattr(x, "strides", None)
    if isinstance(strides, tuple):
        flags = x.flags
        if flags.c_contiguous or flags.f_contiguous:
            return None
        return tuple(x.shape), strides, int(x.itemsize)
    stride = getattr(x, "stride", None)
    if callable(stride):
        try:
            if x.is_contiguous():
                return None
            return tuple(x.shape), tuple(stride()), 1
        except (RuntimeError, TypeError, AttributeError):  # (sparse layouts: no strides)
            return None
    return None


def overlaps_itself(shape: tuple[int, ...], strides: tuple[int, ...], itemsize: int) -> bool:
    """Whether two elements of a strided array share memory (strides and itemsize in one unit).

    Exact. The common layouts answer at once: an empty array does not, a stride 0 on a dim
    of size above 1 does (``expand``, ``broadcast_to``), and strides that nest (each at
    least the extent of the smaller ones: C, Fortran, transposes, slices) do not. Other
    strides (``as_strided`` by hand) compare every element's offset: memory and time in
    proportion to the array.
    """
    if 0 in shape:
        return False
    dims = sorted((abs(stride), n) for stride, n in zip(strides, shape, strict=True) if n > 1)
    if dims and dims[0][0] == 0:
        return True
    extent = itemsize  # the bytes the smaller dims span, from the first element's
    for stride, n in dims:
        if stride < extent:
            break
        extent += stride * (n - 1)
    else:
        return False
    offsets = np.zeros(1, np.int64)
    for stride, n in dims:
        offsets = (offsets[:, None] + np.arange(n, dtype=np.int64) * stride).reshape(-1)
    offsets.sort()
    return bool((np.diff(offsets) < itemsize).any())


def nd_take(xp: Any, data: Array, indices: Array, plan: GatherNDPlan) -> Any:
    """GatherND of counted (in range) ``indices`` as one ``take``, in namespace ``xp``.

    Data becomes ``(B * M,) + rest``: its ``b`` batch dims and the ``k`` addressed dims
    (``M`` elements) flattened into one; each index tuple becomes the linear position of
    its slice there. Zeros where unchecked indices address an empty axis (nothing to read).
    """
    b, sizes = plan.batch_dims, plan.sizes
    k = len(sizes)
    rest = tuple(data.shape[b + k :])
    tuples = math.prod(indices.shape[:-1])
    if 0 in sizes or not tuples or 0 in rest:  # nothing to read
        return xp.zeros(plan.out_shape, dtype=data.dtype, device=device(data))
    batch = math.prod(data.shape[:b])
    linear = tuple_rows(xp, indices, sizes, b, device(data))
    flat = xp.reshape(data, (batch * math.prod(sizes), *rest))
    out = xp.take(flat, xp.reshape(linear, (-1,)), axis=0)
    return xp.reshape(out, plan.out_shape)


def _take_linear(xp: Any, data: Array, indices: Array, axis: int) -> Any:
    """GatherElements from ``take`` alone: linear indices into the flattened data."""
    linear = element_positions(xp, indices, tuple(data.shape), axis, data.device)
    flat = xp.reshape(data, (-1,))
    return xp.reshape(xp.take(flat, xp.reshape(linear, (-1,)), axis=0), tuple(indices.shape))


class Composing(Backend):
    """A mixin, before a backend's class: a traced program's steps, as the base composes them.

    OpenVINO's functions are the base's compositions of ONNX calls and elementwise
    operations (the backend's own kernels for them read index values, which a trace has
    not got), and no flag is known while tracing: the program's indices are its inputs,
    whatever the traced ones hold. The exporters (torch's, jax2onnx's) and torch's
    ``run_decompositions`` trace through it.
    """

    openvino_gather = Backend.openvino_gather
    openvino_scatter_update = Backend.openvino_scatter_update
    openvino_scatter_elements_update = Backend.openvino_scatter_elements_update
    openvino_scatter_nd_update = Backend.openvino_scatter_nd_update
    all_known = Backend.all_known
