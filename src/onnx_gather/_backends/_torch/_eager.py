"""Bound calls of eager calls on CPU tensors: torch's own kernel or the compiled one."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from onnx_gather._backends import _numpy as numpy_kernels
from onnx_gather._backends._numpy import _kernels
from onnx_gather._backends._numpy._scatter import (
    CheckMode,
    bound_compiled,
    copy_slices,
    elements_layout,
    writer_at,
)
from onnx_gather._backends._torch._views import (
    TYPENUMS,
    as_numpy,
    bump_versions,
    fits,
    new_cpu,
    of_new,
    unrecorded,
)

if TYPE_CHECKING:
    from collections.abc import Callable

    from onnx_gather._backends._base import Call
    from onnx_gather._spec import Plan
    from onnx_gather._spec.gather import GatherPlan
    from onnx_gather._spec.gather_elements import GatherElementsPlan
    from onnx_gather._spec.gather_nd import GatherNDPlan
    from onnx_gather._spec.tensor_scatter import TensorScatterPlan
    from onnx_gather._typing import Array, ScatterPlan

#: The outputs up to which torch's own kernel beats the compiled one on a small call:
#: what the compiled kernel saves in its one pass, the views of the tensors it needs cost
#: back (docs/performance.md).
NATIVE_UP_TO = 1 << 12
#: Types torch's kernels do not copy bit for bit (NaN payloads of float16 and bfloat16:
#: :mod:`._exact`) or, for ``gather``, have no CPU kernel for (unsigned above 8 bits).
_NOT_BITS = (torch.float16, torch.bfloat16)
_NO_GATHER = (*_NOT_BITS, torch.uint16, torch.uint32, torch.uint64)


def _serves(plan: Plan, arrays: tuple[Array, ...]) -> bool:
    """Whether torch's kernel may serve calls of ``plan`` on arrays like ``arrays``.

    Plain tensors (no subclass, no NumPy indices) of a type torch copies bit for bit, and
    a small, non-empty result: an empty one reads no index, so torch's kernel checks none
    (an index out of range must still raise).
    """
    return (
        all(type(x) is torch.Tensor for x in arrays)
        and arrays[0].dtype not in _NOT_BITS
        and 0 < math.prod(plan.out_shape) <= NATIVE_UP_TO
    )


def _stage(native: Callable[..., torch.Tensor], then: Call, axis: int | None = None) -> Call:
    """``native(data, axis, indices)``; where it refuses the call, ``then``.

    Torch's kernels refuse negative indices (``gather``, ``index_select``) and any index
    out of range, with a RuntimeError or IndexError: ``then`` (advanced indexing, which
    counts negatives, or the exact path) gives the ONNX result or the library's
    IndexError. A call site keeps the stage it reached (its indices hold negatives, as
    some models' always do): a refusal (an exception) costs far more than a call, and is
    not paid again on every call.

    Torch's kernel may answer CPU tensors that no tracer records: its CPU kernels check
    every index (an error, never a read outside the tensor), under autograd and
    ``torch.func``'s transforms too, where a tracer (``torch.jit.trace``, ``make_fx``, fake
    tensors) would record the kernel without the library's rules. Those tests are
    written out here, and torch's kernel is called without a wrapper (``native`` takes
    the axis where it is ``torch.gather`` or ``index_select``; advanced indexing ignores
    it): each Python call on this path is a measurable part of a tiny gather
    (docs/performance.md). Indices on another device than CPU data are refused by the
    kernel itself.
    """
    live = True
    tracing, dispatch_stack = torch._C._get_tracing_state, torch._C._len_torch_dispatch_stack

    def call(arrays: tuple[Array, ...], out: Array = None, /) -> Any:
        nonlocal live
        if live:
            data, indices = arrays
            if data.is_cpu and tracing() is None and dispatch_stack() == 0:
                try:
                    return native(data, axis, indices)
                except (RuntimeError, IndexError):
                    live = False
        return then(arrays, out)

    return call


def gather_elements(plan: GatherElementsPlan, arrays: tuple[Array, ...], exact: Call) -> Call:
    """GatherElements: ``torch.gather``, which reads indices within the axis as ONNX does.

    Off the axis, indices may be shorter than data: ``torch.gather`` reads the leading
    part, as the plan's ``block`` does.
    """
    data, indices = arrays
    if (
        not _serves(plan, arrays)
        or indices.dtype != torch.int64  # (torch converts int32 first: docs/performance.md)
        or data.dtype in _NO_GATHER
    ):
        return exact
    return _stage(torch.gather, _reading_at(plan, arrays, exact), plan.axis)


def _reading_at(plan: GatherElementsPlan, arrays: tuple[Array, ...], exact: Call) -> Call:
    """GatherElements by address (``_kernels.gather_elements_at``) once ``torch.gather`` refused.

    It refuses indices that hold negatives, and one out of range, which this kernel
    declines too (``exact`` then raises). Torch's kernel refuses any negative index, so
    a call site whose indices hold one runs this from then on: faster than the exact
    path's views, result and tests, and than ``torch.gather`` after its own
    ``torch.where`` (docs/performance.md). C-ordered tensors whose indices have data's
    other dims, where NumPy's kernels may stand in for torch's (:func:`._views.viewable`);
    anything else is ``exact``.
    """
    data, indices = arrays
    index_shape = tuple(indices.shape)
    layout = elements_layout(tuple(data.shape), index_shape, plan.axis, data.element_size())
    if _kernels is None or layout is None:
        return exact
    read_at, new = _kernels.gather_elements_at, new_cpu(index_shape, data.dtype)

    def call(arrays: tuple[Array, ...], out: Array = None, /) -> Any:
        data, indices = arrays
        if unrecorded(data, indices):
            try:  # (no strides or storage: sparse layouts, torch.func's wrappers; exact's)
                if data.is_contiguous() and indices.is_contiguous():
                    result = new()
                    if read_at(result.data_ptr(), data.data_ptr(), indices.data_ptr(), *layout):
                        return result
            except RuntimeError:
                pass
        return exact(arrays, out)

    return call


def gather(plan: GatherPlan, arrays: tuple[Array, ...], exact: Call) -> Call:
    """Gather: ``index_select`` of 1-D indices, then advanced indexing along the axis.

    ``index_select`` (the faster of the two on a tiny call: docs/performance.md) refuses
    negative indices; advanced indexing counts them as ONNX does. A 0-d index would be basic indexing (a view of
    data): those stay exact.
    """
    indices = arrays[1]
    if not _serves(plan, arrays) or indices.ndim == 0:
        return exact
    axis = plan.axis
    leading = (slice(None),) * axis
    call = _stage(lambda data, _, indices: data[(*leading, indices)], exact)
    if indices.ndim == 1:
        call = _stage(torch.index_select, call, axis)
    return call


def gather_nd(plan: GatherNDPlan, arrays: tuple[Array, ...], exact: Call) -> Call:
    """GatherND without batch dims: advanced indexing by each coordinate.

    Counts negative coordinates as ONNX does. Indices of rank 1 address one slice: basic
    indexing (a view of data), so those stay exact.
    """
    indices = arrays[1]
    if not _serves(plan, arrays) or plan.batch_dims or indices.ndim < 2:
        return exact
    return _stage(lambda data, _, indices: data[indices.unbind(-1)], exact)


def _scatter(kernel: Any, axis: bool) -> Callable[[ScatterPlan, tuple[Any, ...], Call], Call]:
    """A scatter's binder: the compiled ``kernel`` on views of plain CPU tensors.

    ``axis``: whether the kernel takes the plan's axis (ScatterElements).
    """

    def bind(plan: ScatterPlan, arrays: tuple[Array, ...], exact: Call) -> Call:
        data = arrays[0]
        if not all(type(x) is torch.Tensor for x in arrays) or kernel is None or _kernels is None:
            return exact
        if not fits(*arrays):  # (no NumPy view: torch's operations)
            return exact
        if data.dtype == torch.bfloat16 and plan.reduction != "none":
            return exact  # (NumPy sees bfloat16 as int16, whose arithmetic is not bfloat16's)
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

    Tensors NumPy's kernels may stand in for (:func:`._views.viewable`; otherwise
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

    def view(
        x: torch.Tensor, at: int, shape: tuple[int, ...], typenum: int, start: int
    ) -> np.ndarray:
        """A C-ordered view of ``x`` (at ``at``), a copy where it may share data's memory."""
        if x.is_contiguous() and (at + x.nbytes <= start or start + nbytes <= at):
            return new_view(x, at, shape, None, typenum)
        return np.array(as_numpy(x), order="C")  # (a copy: read before data is written)

    def call(arrays: tuple[Array, ...], out: Array = None, /) -> Any:
        data, indices, updates = arrays
        if not ((out is None or out is data) and unrecorded(data, indices, updates)):
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


def tensor_scatter(plan: TensorScatterPlan, arrays: tuple[Array, ...], exact: Call) -> Call:
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
    if (
        not all(type(x) is torch.Tensor for x in arrays)
        or _kernels is None
        or data.is_complex()
        or not fits(*arrays)  # (no NumPy view: torch's operations)
    ):
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

    def call(arrays: tuple[Array, ...], out: Array = None, /) -> Any:
        data, updates, indices = arrays
        if not (out is data and unrecorded(data, indices, updates)):
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


#: Each operator's binder, by its registry method name; each takes its operator's plan.
BINDERS: dict[str, Callable[[Any, tuple[Any, ...], Call], Call]] = {
    "gather": gather,
    "gather_elements": gather_elements,
    "gather_nd": gather_nd,
    "scatter_elements": _scatter(getattr(_kernels, "scatter_elements", None), axis=True),
    "scatter_nd": _scatter(getattr(_kernels, "scatter_nd", None), axis=False),
    "tensor_scatter": tensor_scatter,
}
