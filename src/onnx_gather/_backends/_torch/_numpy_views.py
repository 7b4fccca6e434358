"""The NUMPY_VIEWS route: the NumPy backend's kernels on zero-copy views of CPU tensors.

A write into a caller's tensor through such a view is one autograd does not see: whoever
writes bumps the tensor's version after it (:data:`bump_versions`), so a backward that
saved the tensor raises "modified by an inplace operation", as after torch's own in-place
writes, instead of computing with the new values.
"""

from __future__ import annotations

import functools
import math
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
import torch.autograd.forward_ad as _FORWARD_AD

from onnx_gather import _ops
from onnx_gather._backends import _numpy as numpy_kernels
from onnx_gather._backends._numpy import _kernels
from onnx_gather._backends._numpy._scatter import (
    CheckMode,
    bound_compiled,
    copy_slices,
    elements_layout,
    writer_at,
)
from onnx_gather._backends._torch._dtypes import NAMES, SIGNED
from onnx_gather._backends._torch._indices import wrapped
from onnx_gather._spec.scatter_nd import plan as scatter_nd_plan

if TYPE_CHECKING:
    from collections.abc import Callable

    from onnx_gather._backends._base import Call
    from onnx_gather._spec import Plan
    from onnx_gather._spec.gather_elements import GatherElementsPlan
    from onnx_gather._spec.reductions import Reduction
    from onnx_gather._spec.tensor_scatter import TensorScatterPlan
    from onnx_gather._typing import Array, ScatterPlan

_CPU = torch.device("cpu")

#: The most dims a NumPy array holds: 32 before NumPy 2.0, 64 since. A tensor of more
#: has no view; torch's operations serve it.
MAX_DIMS = 64 if np.lib.NumpyVersion(np.__version__) >= "2.0.0" else 32


#: Same-width types NumPy holds bit for bit, where NumPy has not the tensor's own.
_NUMPY_VIEW = {**SIGNED, torch.bfloat16: torch.int16}


#: The NumPy type number of each dtype's view (bfloat16: int16 bits), for ``_kernels.view``,
#: which makes a view faster than ``Tensor.numpy()`` (docs/performance.md).
TYPENUMS: dict[torch.dtype, int] = {
    dtype: np.dtype("int16" if name == "bfloat16" else name).num for dtype, name in NAMES.items()
}


#: ``bump_versions((tensor, ...))``: what ``torch.autograd.graph.increment_version`` calls
#: (torch 2.13), without its Python frame: the bound calls that write by address call it.
bump_versions = torch._C._increment_version

_tracing = torch._C._get_tracing_state

_dispatch_modes = torch._C._len_torch_dispatch_stack

_grad_enabled = torch.is_grad_enabled


def fits(*tensors: torch.Tensor) -> bool:
    """Whether NumPy holds a view of each tensor: at most :data:`MAX_DIMS` dims.

    The part of :func:`viewable` that a bound call's key fixes (shapes and types): asked
    once, when the call is bound.
    """
    return all(x.dim() <= MAX_DIMS for x in tensors)


def unrecorded(
    data: torch.Tensor,
    indices: Any,
    updates: torch.Tensor | None = None,
    conjugable: bool = True,
) -> bool:
    """Whether nothing records these CPU tensors' operations now, and their memory is their values.

    No tracer (``torch.jit.trace``; a dispatch mode: ``make_fx``'s, fake tensors',
    ``torch.export``'s), no forward-mode AD level (dual tensors' tangents flow through
    torch's operations), no autograd graph to record (grad mode with data or updates
    that require grad), and no negative or conjugate view of data or updates (their
    memory holds other values than they show). ``indices`` may be host indices, a NumPy
    array. The part of :func:`viewable` that may change between two calls of one bound
    call: each of them asks it. ``conjugable``: whether data may be complex, the only
    type with conjugate views; a bound call, whose key fixes the type, says, and spares
    real types the test (what it costs: docs/performance.md).
    """
    return (
        data.is_cpu
        and (type(indices) is np.ndarray or indices.is_cpu)
        and (updates is None or updates.is_cpu)
        and _tracing() is None
        and _dispatch_modes() == 0
        and _FORWARD_AD._current_level < 0
        and not (
            _grad_enabled()
            and (data.requires_grad or (updates is not None and updates.requires_grad))
        )
        and not data.is_neg()
        and (updates is None or not updates.is_neg())
        and not (conjugable and (data.is_conj() or (updates is not None and updates.is_conj())))
    )


def viewable(data: Any, indices: Any, updates: Any = None) -> bool:
    """Whether the NumPy backend's kernels may run on zero-copy views of these tensors now.

    The one rule: plain tensors (no subclass) that no compiler traces, with memory a view
    can show (strided, at most :data:`MAX_DIMS` dims, not a ZeroTensor, whose data pointer
    is null, nor a ``torch.func`` wrapper, which has none), and :func:`unrecorded`.
    ``indices`` may be host indices (a NumPy array); ``updates`` None for a gather.

    A bound call, whose key fixes types and shapes, asks :func:`fits` when it is bound
    and :func:`unrecorded` at each call, and learns the rest from the addresses it reads:
    a ZeroTensor's is 0, and a sparse tensor or a wrapper raises RuntimeError for one.
    """
    return (
        type(data) is torch.Tensor
        and not torch.compiler.is_compiling()  # first: Dynamo must not trace what follows
        and _memory(data)
        and (type(indices) is np.ndarray or (type(indices) is torch.Tensor and _memory(indices)))
        and (updates is None or (type(updates) is torch.Tensor and _memory(updates)))
        and unrecorded(data, indices, updates)
    )


def _memory(x: torch.Tensor) -> bool:
    """Whether a NumPy view can show ``x``'s memory (see :func:`viewable`)."""
    return (
        x.layout == torch.strided
        and not wrapped(x)
        and not x._is_zerotensor()
        and x.dim() <= MAX_DIMS
    )


def new_cpu(shape: tuple[int, ...], dtype: torch.dtype) -> Callable[[], torch.Tensor]:
    """What makes a new C-ordered CPU tensor of ``shape`` and ``dtype``, for a bound call.

    torch's allocation as inductor's compiled CPU programs call it, strides given: faster
    than ``torch.empty(shape, dtype=dtype)`` and ``torch.empty_strided``
    (docs/performance.md). It is private (``torch._C._dynamo.guards._empty_strided_cpu``); where torch lacks it,
    ``torch.empty_strided``.
    """
    strides, step = [], 1
    for n in reversed(shape):
        strides.append(step)
        step *= max(n, 1)
    strides.reverse()
    try:
        from torch._C._dynamo import guards

        allocate = getattr(guards, "_empty_strided_cpu", None)
    except ImportError:
        allocate = None
    if allocate is None:
        return functools.partial(torch.empty_strided, shape, tuple(strides), dtype=dtype)
    return functools.partial(allocate, shape, tuple(strides), dtype)


def as_numpy(x: torch.Tensor) -> np.ndarray:
    """A zero-copy NumPy view of a CPU tensor (same-width integers for unsigned, bfloat16)."""
    if _kernels is not None:
        return _kernels.view(x, x.data_ptr(), x.shape, x.stride(), TYPENUMS[x.dtype])
    view = _NUMPY_VIEW.get(x.dtype)
    if view is not None:
        x = x.view(view)
    return (x.detach() if x.requires_grad else x).numpy()


def of_new(out: torch.Tensor, shape: tuple[int, ...]) -> np.ndarray:
    """A view of ``out``, a new C-ordered tensor of ``shape`` (no strides to read)."""
    if _kernels is not None:
        return _kernels.view(out, out.data_ptr(), shape, None, TYPENUMS[out.dtype])
    return as_numpy(out)


def on_numpy(
    kernel: Callable[..., Any], data: torch.Tensor, indices: Array, plan: Plan
) -> torch.Tensor:
    """The NumPy backend's ``kernel`` on views of the tensors, into a tensor torch allocates.

    The kernel checks, counts negatives from the end and copies in one pass, on any
    strides (a view is never copied): faster than ``torch.gather``/``index_select`` plus
    the range pass they need (docs/benchmarks.md). The memory is torch's own, so the
    result behaves like any tensor (resizable, too).
    """
    dtype = data.dtype
    shape = plan.out_shape
    if type(indices) is torch.Tensor and indices.shape == shape:  # (GatherElements)
        # C order whatever the indices' strides; faster than torch.empty.
        out = torch.empty_like(indices, dtype=dtype, memory_format=torch.contiguous_format)
    elif shape:
        # The sizes as arguments: faster than one tuple (docs/performance.md).
        out = torch.empty(*shape, dtype=dtype, device=_CPU)
    else:
        out = torch.empty((), dtype=dtype, device=_CPU)
    host = indices if isinstance(indices, np.ndarray) else as_numpy(indices)
    # Within torch's own thread count too (torch.set_num_threads, DataLoader workers' 1).
    threads = min(numpy_kernels.THREADS, torch.get_num_threads())
    view = of_new(out, shape)
    kernel(as_numpy(data), host, plan, view, threads)
    return out


def scatter_on_numpy(
    kernel: Callable[..., Any],
    data: torch.Tensor,
    indices: Array,
    updates: torch.Tensor,
    plan: Plan,
    out: torch.Tensor | None,
) -> torch.Tensor:
    """The NumPy backend's scatter ``kernel`` on views, into ``out`` or a new tensor."""
    fresh = out is None
    if out is None:
        out = torch.empty(plan.out_shape, dtype=data.dtype, device=_CPU)
    host = indices if isinstance(indices, np.ndarray) else as_numpy(indices)
    threads = min(numpy_kernels.THREADS, torch.get_num_threads())
    source = as_numpy(data)
    # In place: the one view, so the kernel sees data itself (and copies nothing).
    target = source if out is data else as_numpy(out)
    kernel(source, host, as_numpy(updates), plan, target, threads, fresh)
    if not fresh:  # (the caller's out, written behind autograd's back: see _views)
        bump_versions((out,))
    return out


def reduced_on_kernel(
    target: torch.Tensor, rows: torch.Tensor, values: torch.Tensor, reduction: Reduction
) -> torch.Tensor | None:
    """:func:`._exact.write` of a reduction by the compiled kernel, one pass in C order; None: not here.

    Plain CPU tensors (the forward of an autograd call, whose gradients are formulas;
    ``torch.func``'s unwrapped ones) where the kernel is built and holds the type: the
    rounds take one round per duplicate, which many updates of one element make
    quadratic (LESSONS: work in rounds; docs/performance.md).
    """
    if not (
        numpy_kernels.compiled_available()
        and target.dtype in _KERNEL_TYPES
        and viewable(target, rows, values)
    ):
        return None
    data = target.detach().contiguous()
    width = data.shape[1:]
    result = torch.empty_like(data)
    views = [
        x.numpy()
        for x in (data, rows.detach().reshape(-1, 1), values.detach().contiguous(), result)
    ]
    data_view, index_view, values_view, out_view = views
    names = (data_view.dtype.name, index_view.dtype.name, values_view.dtype.name)
    shapes = (tuple(data.shape), (rows.shape[0], 1), (rows.shape[0], *width))
    plan = scatter_nd_plan(_ops.SCATTER_ND, 18, shapes, names, (reduction,), False)
    threads = min(numpy_kernels.THREADS, torch.get_num_threads())
    numpy_kernels.scatter_nd(data_view, index_view, values_view, plan, out_view, threads, True)
    return result


#: The types the compiled kernel reduces as torch does (bfloat16 would reach it as int16,
#: whose arithmetic is not bfloat16's).
_KERNEL_TYPES = (
    torch.bool, torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8,
    torch.float16, torch.float32, torch.float64, torch.complex64, torch.complex128,
)  # fmt: skip


def reading_at(plan: GatherElementsPlan, arrays: tuple[Array, ...], exact: Call) -> Call:
    """GatherElements by address (``_kernels.gather_elements_at``) once ``torch.gather`` refused.

    It refuses indices that hold negatives, and one out of range, which this kernel
    declines too (``exact`` then raises). Torch's kernel refuses any negative index, so
    a call site whose indices hold one runs this from then on: faster than the exact
    path's views, result and tests, and than ``torch.gather`` after its own
    ``torch.where`` (docs/performance.md). C-ordered tensors whose indices have data's
    other dims, where NumPy's kernels may stand in for torch's (:func:`viewable`);
    anything else is ``exact``.
    """
    data, indices = arrays
    index_shape = tuple(indices.shape)
    layout = elements_layout(tuple(data.shape), index_shape, plan.axis, data.element_size())
    if _kernels is None or layout is None:
        return exact
    read_at, new = _kernels.gather_elements_at, new_cpu(index_shape, data.dtype)
    conjugable = data.is_complex()

    def call(arrays: tuple[Array, ...], out: Array = None, /) -> Any:
        data, indices = arrays
        if unrecorded(data, indices, None, conjugable):
            try:  # (no strides or storage: sparse layouts, torch.func's wrappers; exact's)
                if data.is_contiguous() and indices.is_contiguous():
                    result = new()
                    if read_at(result.data_ptr(), data.data_ptr(), indices.data_ptr(), *layout):
                        return result
            except RuntimeError:
                pass
        return exact(arrays, out)

    return call


def bind_scatter(kernel: Any, axis: bool) -> Callable[[ScatterPlan, tuple[Any, ...], Call], Call]:
    """A scatter's binder: the compiled ``kernel`` on views of plain CPU tensors.

    ``axis``: whether the kernel takes the plan's axis (ScatterElements). The route binds
    here plain tensors NumPy can view (:func:`._route.route`); where the kernel lacks the
    type, the call stays ``exact``.
    """

    def bind(plan: ScatterPlan, arrays: tuple[Array, ...], exact: Call) -> Call:
        data = arrays[0]
        if kernel is None or _kernels is None:
            return exact
        attributes = (plan.axis,) if axis else ()
        run = bound_compiled(kernel, attributes, plan, str(data.dtype).removeprefix("torch."))
        if run is None:
            return exact
        at = _writing_at(plan, arrays, axis)
        return _scattering(run, _kernels.view, arrays, tuple(plan.out_shape), exact, at)

    return bind


def _writing_at(
    plan: ScatterPlan, arrays: tuple[Array, ...], axis: bool
) -> Callable[..., bool] | None:
    """The plain in-place write by address, for int64 indices: ``writer_at``'s.

    (:func:`onnx_gather._backends._numpy._scatter.writer_at`)
    """
    data, indices, _ = arrays
    if indices.dtype != torch.int64:
        return None
    shape, index_shape = tuple(data.shape), tuple(indices.shape)
    return writer_at(_kernels, plan, shape, index_shape, data.element_size(), axis)


def _scattering(
    run: Callable[..., bool],
    new_view: Callable[..., np.ndarray],
    arrays: tuple[Array, ...],
    shape: tuple[int, ...],
    exact: Call,
    at: Callable[..., bool] | None = None,
) -> Call:
    """The bound scatter: into a new tensor, or in place where ``out`` is data.

    Tensors NumPy's kernels may stand in for (:func:`viewable`; otherwise
    ``exact``, which routes those), C-ordered data. In place,
    the kernel scans every index before its first write, and indices or updates that share data's memory are
    copied first (read before written). The shapes and types are those of ``arrays``
    (the call's key holds them): a C-ordered tensor's view (``new_view``:
    ``_kernels.view``) needs only its address, and its bytes span ``[address, address +
    nbytes)``, which tells whether it shares data's memory. In place, ``at`` (see
    :func:`_writing_at`), where given, writes first without views.
    """
    dtype = arrays[0].dtype
    index_shape, update_shape = tuple(arrays[1].shape), tuple(arrays[2].shape)
    types = [TYPENUMS[x.dtype] for x in arrays]
    nbytes = math.prod(shape) * arrays[0].element_size()
    new = new_cpu(shape, dtype)
    conjugable = arrays[0].is_complex()

    def view(
        x: torch.Tensor, at: int, shape: tuple[int, ...], typenum: int, start: int
    ) -> np.ndarray:
        """A C-ordered view of ``x`` (at ``at``), a copy where it may share data's memory."""
        if x.is_contiguous() and (at + x.nbytes <= start or start + nbytes <= at):
            return new_view(x, at, shape, None, typenum)
        return np.array(as_numpy(x), order="C")  # (a copy: read before data is written)

    def call(arrays: tuple[Array, ...], out: Array = None, /) -> Any:
        data, indices, updates = arrays
        if not ((out is None or out is data) and unrecorded(data, indices, updates, conjugable)):
            return exact(arrays, out)
        try:
            # A tensor without strides or storage raises here, before anything is written:
            # sparse layouts, torch.func's wrappers (vmap, grad), which the exact path routes.
            if not data.is_contiguous():
                return exact(arrays, out)
            start, read, written = data.data_ptr(), indices.data_ptr(), updates.data_ptr()
            if not (start and read and written):  # (a ZeroTensor's null pointer: viewable)
                return exact(arrays, out)
            if (
                at is not None
                and out is not None
                and updates.is_contiguous()
                and indices.is_contiguous()
                and at(start, written, read)
            ):
                bump_versions((data,))  # (written behind autograd's back: see _views)
                return data
            host_indices = view(indices, read, index_shape, types[1], start)
            values = view(updates, written, update_shape, types[2], start)
        except RuntimeError:
            return exact(arrays, out)
        # Within torch's own thread count too (torch.set_num_threads, DataLoader workers' 1).
        threads = min(numpy_kernels.THREADS, torch.get_num_threads())
        source = new_view(data, start, shape, None, types[0])
        if out is None:
            result = new()
            target = of_new(result, shape)
            done = run(target, source, host_indices, values, CheckMode.WHILE_WRITING, threads)
        else:
            result = out
            done = run(source, None, host_indices, values, CheckMode.SCAN_FIRST, threads)
            if done:
                bump_versions((data,))  # (written behind autograd's back: see _views)
        return result if done else exact(arrays, out)

    return call


def bind_tensor_scatter(plan: TensorScatterPlan, arrays: tuple[Array, ...], exact: Call) -> Call:
    """TensorScatter in place: copies of the update into slices of a view of data.

    With ``out`` data, plain C-ordered CPU tensors that nothing records: where each batch
    entry's update lands whole in the axis (a decode step, at one position or each at its
    own), the compiled kernel writes it into the tensors' memory by address
    (``_kernels.tensor_scatter_slices_at``: C-ordered tensors, int64 indices, nothing
    shared with the cache; NumPy views of the three cost more than the write). Where it declines, the write indices are read as host ints and checked, and
    plain copies (one slice; a few entries at their own positions;
    :meth:`~onnx_gather._spec.tensor_scatter.TensorScatterPlan.copies`) are made on the
    views (:func:`onnx_gather._backends._numpy._scatter.copy_slices`). Anything else
    (writes that wrap or fall outside) is ``exact``. (Complex types: ``exact``, which sees
    their conjugate views.)
    """
    data = arrays[0]
    if _kernels is None:
        return exact
    shape, typenum = tuple(data.shape), TYPENUMS[data.dtype]
    update_shape, update_typenum = tuple(arrays[1].shape), TYPENUMS[arrays[1].dtype]
    copies_of = plan.copies
    view, slices_at = _kernels.view, _kernels.tensor_scatter_slices_at
    circular = plan.circular
    # The layout the kernel writes by address (the key fixes the shapes and types): batch
    # entries of outer slabs, the cache's slab size rows and the update's length rows of
    # inner bytes; int64 write indices only.
    axis = plan.axis
    batch, size, length = shape[0], shape[axis], update_shape[axis]
    outer, inner = math.prod(shape[1:axis]), math.prod(shape[axis + 1 :]) * data.element_size()
    int64 = arrays[2].dtype == torch.int64 and arrays[1].dtype == data.dtype
    conjugable = data.is_complex()

    def call(arrays: tuple[Array, ...], out: Array = None, /) -> Any:
        data, updates, indices = arrays
        if not (out is data and unrecorded(data, indices, updates, conjugable)):
            return exact(arrays, out)
        try:  # (no strides or storage: sparse layouts, torch.func's wrappers; exact's)
            if not data.is_contiguous():
                return exact(arrays, out)
            start, written, read = data.data_ptr(), updates.data_ptr(), indices.data_ptr()
            if not (start and written and read):  # (a ZeroTensor's null pointer: viewable)
                return exact(arrays, out)
            if (
                int64
                and updates.is_contiguous()
                and indices.is_contiguous()
                and slices_at(
                    start,
                    written,
                    read,
                    batch,
                    outer,
                    size,
                    length,
                    inner,
                    circular,
                )
            ):
                bump_versions((data,))
                return data
            source = (
                view(updates, written, update_shape, None, update_typenum)
                if updates.is_contiguous()
                else as_numpy(updates)
            )
        except RuntimeError:
            return exact(arrays, out)
        copies = copies_of(indices)
        if copies is None:
            return exact(arrays, out)
        copy_slices(view(data, start, shape, None, typenum), source, copies)
        bump_versions((data,))
        return data

    return call
