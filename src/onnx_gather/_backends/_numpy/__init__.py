"""NumPy: the compiled one-pass kernel, or pure NumPy where it is not built.

NumPy subclasses are served as the plain arrays they view (:func:`_plain`); the PyTorch
and Dask backends run these kernels too, on views of CPU tensors and in their tasks.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, NoReturn

import numpy as np

from onnx_gather import _host, _spec
from onnx_gather._backends._base import Backend
from onnx_gather._backends._numpy import _fallback as fallback
from onnx_gather._backends._numpy import _scatter
from onnx_gather._backends._numpy._threads import limit

if TYPE_CHECKING:
    from collections.abc import Callable
    from types import ModuleType

    from onnx_gather._backends._base import Call
    from onnx_gather._spec import Plan
    from onnx_gather._spec.gather import OpenVINOGatherPlan
    from onnx_gather._spec.gather_elements import GatherElementsPlan
    from onnx_gather._spec.gather_nd import GatherNDPlan
    from onnx_gather._spec.scatter_elements import ScatterElementsPlan
    from onnx_gather._spec.scatter_nd import ScatterNDPlan
    from onnx_gather._spec.tensor_scatter import TensorScatterPlan
    from onnx_gather._typing import Array

_kernels: ModuleType | None
try:
    from onnx_gather import _kernels
except ImportError:  # built without the extension: pure NumPy (:mod:`._fallback`)
    _kernels = None

#: Threads a large call may use: at most 8 (the kernels are memory-bound; the kernel itself
#: uses one thread for small calls), within the program's limits (:mod:`._threads`).
THREADS = limit(8)


def gather(
    data: Array,
    indices: np.ndarray,
    plan: Plan,
    out: np.ndarray | None = None,
    threads: int | None = None,
) -> Any:
    """ONNX Gather; ``out`` (C-ordered, of the plan's shape and data's dtype) receives it.

    ``threads``: at most this many threads (default :data:`THREADS`).

    The NumPy backend's kernel, also run by the PyTorch backend on views of CPU tensors
    and by the Dask backend in its tasks.
    """
    return _run(_COMPILED["gather"], fallback.gather, plan.axis, data, indices, plan, out, threads)


def openvino_gather(
    data: Array,
    indices: np.ndarray,
    plan: OpenVINOGatherPlan,
    out: np.ndarray | None = None,
    threads: int | None = None,
) -> Any:
    """OpenVINO Gather-7/8 without batch dims in one pass: zeros for an invalid index.

    The compiled kernel reads zeros where Gather's would read data (no validity mask, no
    second pass). NotImplemented where it cannot run (batch dims, strings, a build
    without it): the caller then takes the base backend's way. ``out`` as for
    :func:`gather`.
    """
    kernel = _COMPILED["openvino_gather"]
    if kernel is None or _kernels is None or plan.batch_dims != 0:
        return NotImplemented
    plain = data if type(data) is np.ndarray else _plain(data)
    return kernel(plain, indices, plan.axis, out, plan.negatives, threads or THREADS)


def gather_elements(
    data: Array,
    indices: np.ndarray,
    plan: GatherElementsPlan,
    out: np.ndarray | None = None,
    threads: int | None = None,
) -> Any:
    """ONNX GatherElements; ``out`` as for :func:`gather`."""
    kernel = _COMPILED["gather_elements"]
    return _run(kernel, fallback.gather_elements, plan.axis, data, indices, plan, out, threads)


def gather_nd(
    data: Array,
    indices: np.ndarray,
    plan: GatherNDPlan,
    out: np.ndarray | None = None,
    threads: int | None = None,
) -> Any:
    """ONNX GatherND; ``out`` as for :func:`gather`."""
    kernel = _COMPILED["gather_nd"]
    return _run(kernel, fallback.gather_nd, plan.batch_dims, data, indices, plan, out, threads)


def scatter_elements(
    data: Array,
    indices: np.ndarray,
    updates: Array,
    plan: ScatterElementsPlan,
    out: np.ndarray | None = None,
    threads: int | None = None,
    fresh: bool = False,
) -> np.ndarray:
    """ONNX ScatterElements; ``out`` (of the result's shape and dtype) receives it.

    The compiled kernel, else NumPy's own kernels (:mod:`._scatter`). ``fresh``: ``out``
    is a new array to fill (the PyTorch backend's), not the caller's. The NumPy backend's
    kernel, also run by the PyTorch backend on views of CPU tensors.
    """
    data, updates, target = _scatter_inputs(data, updates, out)
    kernel = _COMPILED["scatter_elements"] if _kernels is not None else None
    result = _scatter.scatter_elements(
        data, indices, updates, plan, target, kernel, threads or THREADS, fresh
    )
    return result if out is None else out


def scatter_nd(
    data: Array,
    indices: np.ndarray,
    updates: Array,
    plan: ScatterNDPlan,
    out: np.ndarray | None = None,
    threads: int | None = None,
    fresh: bool = False,
) -> np.ndarray:
    """ONNX ScatterND; the arguments as for :func:`scatter_elements`."""
    data, updates, target = _scatter_inputs(data, updates, out)
    kernel = _COMPILED["scatter_nd"] if _kernels is not None else None
    result = _scatter.scatter_nd(
        data, indices, updates, plan, target, kernel, threads or THREADS, fresh
    )
    return result if out is None else out


def _scatter_inputs(
    data: Array, updates: Array, out: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Data and updates as plain arrays (data widened for strings), and the array written.

    That is ``out``, or where ``out`` is data, data's plain view itself: in place, the
    kernels then see one array (they copy nothing and write only the targets).
    """
    plain, updates = _plain(data), _plain(updates, "updates")
    target = plain if out is data else out
    return _scatter.widened(plain, updates, out), updates, target


#: The plan's attribute each gather's compiled kernel takes.
_KERNEL_ATTRIBUTE = {"gather": "axis", "gather_elements": "axis", "gather_nd": "batch_dims"}
#: The compiled kernel's function per operator (None without it).
_COMPILED: dict[str, Callable[..., Any] | None] = {
    op: getattr(_kernels, op, None)
    for op in (
        "gather", "openvino_gather", "gather_elements", "gather_nd", "scatter_elements",
        "scatter_nd",
    )
}  # fmt: skip


def _run(
    kernel: Callable[..., Any] | None,
    pure: Callable[..., Any],
    attribute: int,
    data: Array,
    indices: np.ndarray,
    plan: Plan,
    out: np.ndarray | None,
    threads: int | None,
) -> Any:
    """The compiled ``kernel`` (``attribute``: its axis or batch_dims), else the ``pure`` one.

    The compiled kernel (``onnx_gather._kernels``, C, built at install time where a
    compiler is available) counts negative indices from the end, checks the range and
    copies in one pass over the indices, on data of any strides (views are never copied)
    and any dtype without object references, split over the cores for large calls (kept
    worker threads; a forked child starts its own). It reports only *that* an index was
    bad; ``_spec`` then finds the first one and builds the message. Where the extension
    is missing, and for object or ``StringDType`` strings, :mod:`._fallback` runs the same
    semantics with NumPy's own kernels.
    """
    if type(data) is not np.ndarray:
        data = _plain(data)
    if kernel is not None and _kernels is not None:  # (None: tests and benchmarks' fallback)
        result = kernel(data, indices, attribute, out, plan.check_bounds, threads or THREADS)
        if result is not NotImplemented:  # (strings, objects, subclasses: pure NumPy)
            return result if result is not None else _out_of_range(plan, indices)
    return pure(data, indices, plan, out)


def _plain(data: Array, role: str = "data") -> np.ndarray:
    """``data`` as a plain ndarray: a zero-copy view of a subclass; TypeError if masked.

    The one rule for NumPy subclasses (``np.matrix``, ``np.memmap``, user subclasses), on
    every path and size: the result is a plain ndarray, as ONNX's tensors are. A subclass'
    methods could change what indexing means (``np.matrix`` keeps two dimensions), so the
    kernels never see one. A masked array's mask has no ONNX meaning: TypeError.
    """
    if isinstance(data, np.ma.MaskedArray):
        raise TypeError(_host.masked(role, data))
    if isinstance(data, np.generic):  # (a NumPy scalar: 0-d updates of a ScatterND)
        return np.asarray(data)
    return data.view(np.ndarray)


def _out_of_range(plan: Plan, indices: np.ndarray) -> NoReturn:
    """Raise ``_spec``'s IndexError for the first bad index the kernel found some of."""
    _spec.raise_out_of_range(plan, indices)
    msg = "the compiled kernel reported an out-of-range index that is not there"
    raise AssertionError(msg)


class NumpyBackend(Backend):
    """The NumPy backend: the compiled kernel, or pure NumPy, for every operator."""

    name = "numpy"

    def owns(self, x: Array, /) -> bool:
        # Plain integer-typed arrays only: a subclass, a masked or an object array, like a
        # NumPy scalar, is host data that _host.index_array reads (or rejects, saying why).
        return type(x) is np.ndarray and x.dtype.kind != "O"

    def shape(self, x: Array, /) -> tuple[int, ...]:
        return x.shape  # NumPy shapes are tuples of ints already

    def check_writable(self, out: Array, /) -> None:
        flags = out.flags
        if not flags.writeable:
            msg = "out is a read-only NumPy array; pass a writeable one"
            raise ValueError(msg)
        if not (flags.c_contiguous or flags.f_contiguous):  # (dense: no overlap)
            super().check_writable(out)  # (an out that overlaps itself)

    def bind(self, method: str, plan: Plan, arrays: tuple[Array, ...], /) -> Call:
        """A gather of plain arrays: the compiled kernel itself, with nothing between.

        Types it does not take (strings, objects: NotImplemented), data of a subclass and
        the scatters bind the method (:func:`_run` says the rest); the scatters bind their
        plain writes in place first (:data:`_IN_PLACE`).
        """
        exact = super().bind(method, plan, arrays)
        in_place = _IN_PLACE.get(method)
        if in_place is not None:
            return in_place(plan, arrays, exact)
        name, kernel = _KERNEL_ATTRIBUTE.get(method), _COMPILED.get(method)
        if name is None or kernel is None or type(arrays[0]) is not np.ndarray:
            return exact
        attribute, check = getattr(plan, name), plan.check_bounds

        def call(arrays: tuple[Array, ...], out: Any = None, /) -> Any:
            if _kernels is None:  # (set so by the benchmarks' fallback variant)
                return exact(arrays, out)
            data, indices = arrays
            result = kernel(data, indices, attribute, None, check, THREADS)
            if result is None:
                _out_of_range(plan, indices)
            return exact(arrays, out) if result is NotImplemented else result

        return call

    def gather(self, data: Array, indices: np.ndarray, plan: Plan, /) -> Array:
        """ONNX Gather: :func:`gather`."""
        return gather(data, indices, plan)

    def openvino_gather(self, data: Array, indices: Array, plan: OpenVINOGatherPlan, /) -> Array:
        """OpenVINO Gather-7/8: without batch dims, :func:`openvino_gather` in one pass.

        Batch dims, strings and a build without the kernel take the base's way (the ONNX
        gather, then :meth:`keep`).
        """
        result = openvino_gather(data, indices, plan)
        if result is NotImplemented:
            return super().openvino_gather(data, indices, plan)
        return result

    def keep(self, where: Array, x: Array, /) -> Array:
        """As the base's; an array of its own (a kernel's new result) is zeroed in place.

        One masked write instead of a second array of the output's size (OpenVINO Gather's
        invalid indices); a view, or an array another owns, gets the base's copy.
        """
        if not (isinstance(x, np.ndarray) and x.flags.owndata and x.flags.writeable and x.size):
            return super().keep(where, x)
        where = np.asarray(where)
        wide = [d for d, n in enumerate(where.shape) if n != 1]
        lo, hi = (wide[0], wide[-1] + 1) if wide else (0, 0)
        if where.ndim == x.ndim and where.shape[lo:hi] == x.shape[lo:hi]:
            # The mask's dims one block of x's (Gather-8 without batch dims): zero the bad
            # rows of that block, a write of only what is dropped.
            n = math.prod(x.shape[lo:hi])
            rows = x.reshape(math.prod(x.shape[:lo]), n, math.prod(x.shape[hi:]))
            rows[:, np.flatnonzero(~where.reshape(n)), :] = self.zeros((), x)
            return x
        np.copyto(x, self.zeros((), x), where=~where)
        return x

    def gather_elements(
        self, data: Array, indices: np.ndarray, plan: GatherElementsPlan, /
    ) -> Array:
        """ONNX GatherElements: :func:`gather_elements`."""
        return gather_elements(data, indices, plan)

    def gather_nd(self, data: Array, indices: np.ndarray, plan: GatherNDPlan, /) -> Array:
        """ONNX GatherND: :func:`gather_nd`."""
        return gather_nd(data, indices, plan)

    def scatter_elements(
        self,
        data: Array,
        indices: np.ndarray,
        updates: Array,
        plan: ScatterElementsPlan,
        out: np.ndarray | None = None,
        /,
    ) -> np.ndarray:
        """ONNX ScatterElements: :func:`scatter_elements`, into ``out`` where given."""
        return scatter_elements(data, indices, updates, plan, out)

    def scatter_nd(
        self,
        data: Array,
        indices: np.ndarray,
        updates: Array,
        plan: ScatterNDPlan,
        out: np.ndarray | None = None,
        /,
    ) -> np.ndarray:
        """ONNX ScatterND: :func:`scatter_nd`, into ``out`` where given."""
        return scatter_nd(data, indices, updates, plan, out)

    def tensor_scatter(
        self,
        data: Array,
        updates: Array,
        indices: np.ndarray,
        plan: TensorScatterPlan,
        out: np.ndarray | None = None,
        /,
    ) -> np.ndarray:
        """ONNX TensorScatter: NumPy's kernel (:func:`._scatter.tensor_scatter`).

        Into ``out`` where given; ``out=data`` writes only the new positions.
        """
        data, updates, target = _scatter_inputs(data, updates, out)
        kernel = _COMPILED["scatter_nd"] if _kernels is not None else None
        result = _scatter.tensor_scatter(data, indices, updates, plan, target, kernel, THREADS)
        return result if out is None else out


backend = NumpyBackend()


def _tensor_scatter_in_place(plan: Any, arrays: tuple[Array, ...], exact: Call) -> Call:
    """TensorScatter with ``out`` data whose writes are plain copies: those copies.

    A decode step's write (each batch entry's update landing whole in the axis, at one
    position or each at its own) is the compiled kernel's
    (``_kernels.tensor_scatter_slices``: every index read, then one copy per entry and
    outer slab). Where it declines (NumPy's fallback build, arrays it does not take,
    memory shared with the cache, a write that does not land whole), the write indices
    are read as host ints and checked, and a write into one slice is one assignment, a
    few entries at their own positions one each
    (:meth:`~onnx_gather._spec.tensor_scatter.TensorScatterPlan.copies`,
    :func:`._scatter.copy_slices`). Anything else, and arrays of numbers' subclasses,
    strings or objects, is ``exact``.
    """
    if not all(type(x) is np.ndarray for x in arrays) or arrays[0].dtype.kind in "OSUT":
        return exact
    copies_of, copy_slices = plan.copies, _scatter.copy_slices
    axis, circular = plan.axis, plan.circular

    def call(arrays: tuple[Array, ...], out: Any = None, /) -> Any:
        data, updates, indices = arrays
        if out is not data:
            return exact(arrays, out)
        if _kernels is not None and _kernels.tensor_scatter_slices(
            data, updates, indices, axis, circular
        ):
            return data
        copies = copies_of(indices)
        if copies is None:
            return exact(arrays, out)
        copy_slices(data, updates, copies)
        return data

    return call


def _scatter_in_place(elements: bool) -> Callable[[Any, tuple[Array, ...], Call], Call]:
    """ScatterElements' (``elements``) or ScatterND's binder: in place, a plain write.

    With ``out`` data, the plain write by address (:func:`._scatter.writer_at`) first.
    Plain arrays of plain items with int64 indices, updates of data's very dtype (its
    byte order too: the kernel copies bytes); where it declines (an index out of range,
    shared memory, another layout), and for everything else, ``exact``.
    """

    def bind(plan: Any, arrays: tuple[Array, ...], exact: Call) -> Call:
        data, indices, updates = arrays
        if (
            not all(type(x) is np.ndarray for x in arrays)
            or data.dtype.kind in "OSUT"
            or data.dtype.hasobject
            or updates.dtype != data.dtype
            or indices.dtype != np.int64
        ):
            return exact
        at = _scatter.writer_at(_kernels, plan, data.shape, indices.shape, data.itemsize, elements)
        if at is None:
            return exact

        def call(arrays: tuple[Array, ...], out: Any = None, /) -> Any:
            data, indices, updates = arrays
            if out is data and at(data, updates, indices):
                return data
            return exact(arrays, out)

        return call

    return bind


#: The operators whose calls with ``out`` data bind a write in place of their own.
_IN_PLACE: dict[str, Callable[[Any, tuple[Array, ...], Call], Call]] = {
    "scatter_elements": _scatter_in_place(elements=True),
    "scatter_nd": _scatter_in_place(elements=False),
    "tensor_scatter": _tensor_scatter_in_place,
}


def compiled_available() -> bool:
    """Whether the compiled kernel was built (for the PyTorch backend's CPU route)."""
    return _kernels is not None
