"""The scatters in NumPy: exact, in C order, one update at a time where the order shows."""

from __future__ import annotations

import enum
import math
from typing import TYPE_CHECKING, Any

import numpy as np

from onnx_gather._backends._positions import element_positions, tuple_rows
from onnx_gather._host import NUMPY_XP as _xp
from onnx_gather._host import counted_on_host
from onnx_gather._indices import BoundsPolicy, counted
from onnx_gather._spec import raise_out_of_range
from onnx_gather._spec.reductions import Reduction

if TYPE_CHECKING:
    from collections.abc import Callable

    from onnx_gather._spec.scatter_elements import ScatterElementsPlan
    from onnx_gather._spec.scatter_nd import ScatterNDPlan
    from onnx_gather._spec.tensor_scatter import TensorScatterPlan
    from onnx_gather._typing import ScatterPlan

#: The ufunc of each reduction (on bool: OR, AND, OR, AND).
_UFUNCS = {
    Reduction.ADD: np.add,
    Reduction.MUL: np.multiply,
    Reduction.MAX: np.maximum,
    Reduction.MIN: np.minimum,
}

#: The compiled kernel's codes: reductions, and the arithmetic of each data type (og_scatter.c).
_REDUCTION_CODES = {
    Reduction.NONE: 0,
    Reduction.ADD: 1,
    Reduction.MUL: 2,
    Reduction.MAX: 3,
    Reduction.MIN: 4,
}
_KIND_NAMES = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
               "float16", "bfloat16", "float32", "float64", "complex64", "complex128")  # fmt: skip
_KINDS = {name: code for code, name in enumerate(_KIND_NAMES)}


class CheckMode(enum.IntEnum):
    """How the compiled kernel treats an index out of range (its ``check`` argument)."""

    #: Without the check: the update is dropped, never written anywhere.
    DROP = 0
    #: Every index is scanned before the first write: nothing is written on an error.
    SCAN_FIRST = 1
    #: Indices are checked while writing: a new result may be left part written.
    WHILE_WRITING = 2


def result_dtype(data: np.dtype[Any], updates: np.dtype[Any]) -> np.dtype[Any]:
    """The result's dtype: data's, fixed-width strings widened to hold every update whole.

    ONNX's type is ``string`` for both; NumPy's ``<U2`` data would cut a ``<U3`` update
    (ONNX Runtime keeps it whole, as the conformance campaign showed).
    """
    if data.kind in "US" and updates.kind in "US":
        wide: np.dtype[Any] = np.result_type(data, updates)
        return wide
    return data


def widened(data: np.ndarray, updates: np.ndarray, out: np.ndarray | None) -> np.ndarray:
    """``data`` as :func:`result_dtype`; TypeError where ``out`` cannot hold the updates."""
    wide = result_dtype(data.dtype, updates.dtype)
    if wide == data.dtype:
        return data
    if out is not None:
        msg = (
            f"out holds strings of dtype {out.dtype}, which would cut the updates "
            f"({updates.dtype}): pass data of dtype {wide}"
        )
        raise TypeError(msg)
    return data.astype(wide)


def scatter_elements(
    data: np.ndarray,
    indices: np.ndarray,
    updates: np.ndarray,
    plan: ScatterElementsPlan,
    out: np.ndarray | None = None,
    kernel: Callable[..., Any] | None = None,
    threads: int = 1,
    fresh: bool = False,
) -> np.ndarray:
    """ONNX ScatterElements of NumPy arrays, into a new C-ordered array or ``out``.

    Data is seen as single elements, each update aimed at one
    (:func:`~onnx_gather._backends._positions.element_positions`), and :func:`write`
    applies them. ``out=data`` writes in place, only the targets. Without the check an
    out-of-range update is dropped (never written anywhere).

    ``kernel``: the compiled ``scatter_elements`` (og_scatter.c), tried first where given:
    the same in one pass over the indices, without the positions arrays, split over
    threads by destination; NumPy's kernels serve where it is not built, and strings.
    ``fresh``: ``out`` is a new array to fill, not the caller's (a failed check may leave
    it written).
    """
    if kernel is not None:
        args = (data, indices, updates, plan, out, threads, fresh)
        done = _compiled(kernel, (plan.axis,), *args)
        if done is not None:
            return done
    positions, keep = _checked_or_dropped(indices, plan)
    rows = element_positions(_xp, positions, plan.out_shape, plan.axis, "cpu").reshape(-1)
    return _scatter(data, rows, updates.reshape(-1), keep, plan.reduction, out)


def scatter_nd(
    data: np.ndarray,
    indices: np.ndarray,
    updates: np.ndarray,
    plan: ScatterNDPlan,
    out: np.ndarray | None = None,
    kernel: Callable[..., Any] | None = None,
    threads: int = 1,
    fresh: bool = False,
) -> np.ndarray:
    """ONNX ScatterND of NumPy arrays, as :func:`scatter_elements` does ScatterElements.

    Data is seen as rows, the slices an index tuple addresses, each update aimed at one
    (:func:`~onnx_gather._backends._positions.tuple_rows`).
    """
    if kernel is not None:
        done = _compiled(kernel, (), data, indices, updates, plan, out, threads, fresh)
        if done is not None:
            return done
    positions, keep = _checked_or_dropped(indices, plan)
    rows = tuple_rows(_xp, positions, plan.sizes, 0, "cpu").reshape(-1)
    cells = math.prod(plan.sizes)
    width = math.prod(plan.out_shape[len(plan.sizes) :])
    values = updates.reshape(rows.size, width)
    return _scatter(data, rows, values, keep, plan.reduction, out, (cells, width))


def _compiled(
    kernel: Callable[..., Any],
    attributes: tuple[int, ...],
    data: np.ndarray,
    indices: np.ndarray,
    updates: np.ndarray,
    plan: Any,
    out: np.ndarray | None,
    threads: int,
    fresh: bool,
) -> np.ndarray | None:
    """The compiled kernel's result; None where it does not take the arrays (NumPy's then).

    It writes into a C-ordered result that holds data: a new copy, or ``out`` itself
    (data itself: only the targets written). Nothing is written into the caller's ``out``
    before every index is checked and every input read: the kernel scans the indices
    before it copies data (``SCAN_FIRST``), and an input that ``out`` overlaps (the
    updates, the indices, a view of data) is copied first.
    """
    if data.dtype.kind in "OT":
        return None
    run = bound_compiled(kernel, attributes, plan, data.dtype.name)
    if run is None or (out is not None and not out.flags.c_contiguous):
        return None  # (written through a copy by NumPy's path)
    source: np.ndarray | None = None  # (the kernel copies C-ordered data, over threads)
    if out is None or fresh:
        result = np.empty(data.shape, data.dtype) if out is None else out
        if data.flags.c_contiguous and data.dtype.isnative:
            source = data
        else:
            np.copyto(result, data)
    else:
        result = out
        indices, updates = apart(out, indices), apart(out, updates)
        if not in_place(data, out):
            copyable = data.flags.c_contiguous and data.dtype.isnative and data.dtype == out.dtype
            if copyable and not np.may_share_memory(data, out):
                source = data  # (copied by the kernel after its scan)
            else:
                if plan.check_bounds:  # (IndexError before the first write)
                    counted_on_host(plan, indices)
                np.copyto(out, data)
    check = CheckMode.SCAN_FIRST if out is not None and not fresh else CheckMode.WHILE_WRITING
    # (Not np.ascontiguousarray: it makes a 0-d update 1-d, which the kernel refuses.)
    indices, updates = np.asarray(indices, order="C"), np.asarray(updates, order="C")
    return result if run(result, source, indices, updates, check, threads) else None


def bound_compiled(
    kernel: Callable[..., Any], attributes: tuple[int, ...], plan: Any, dtype_name: str
) -> Callable[..., bool] | None:
    """The compiled scatter ``kernel`` with ``plan``'s codes fixed; None for a type it lacks.

    ``run(result, source, indices, updates, check, threads)`` writes into ``result``
    (C-ordered; from ``source`` first where given), raises ``_spec``'s IndexError for an
    index out of range (``check``: a :class:`CheckMode`; without ``plan.check_bounds``
    the update is dropped), and says False where the kernel does not take the arrays
    (nothing written then). Indices and updates are C-ordered. A type the kernel has no
    arithmetic for is copied as bytes: for ``none`` alone.
    """
    kind = _KINDS.get(dtype_name, -1)
    if kind < 0 and plan.reduction != Reduction.NONE:
        return None
    code = _REDUCTION_CODES[plan.reduction]
    unchecked = not plan.check_bounds

    def run(
        result: np.ndarray,
        source: np.ndarray | None,
        indices: np.ndarray,
        updates: np.ndarray,
        check: CheckMode,
        threads: int,
    ) -> bool:
        mode = CheckMode.DROP if unchecked else check
        done = kernel(result, source, indices, updates, *attributes, code, kind, mode, threads)
        if done is None:
            raise_out_of_range(plan, indices)
            msg = "the compiled kernel reported an out-of-range index that is not there"
            raise AssertionError(msg)
        return done is not NotImplemented

    return run


#: The bytes up to which a plain write in place goes by address, on one thread
#: (:func:`writer_at`); the general kernel splits larger ones over threads.
AT_UP_TO = 1 << 18


def elements_layout(
    data_shape: tuple[int, ...], index_shape: tuple[int, ...], axis: int, itemsize: int
) -> tuple[int, int, int, int, int] | None:
    """The by-address elements kernels' layout: ``(outer, size, length, inner, itemsize)``.

    For ``scatter_elements_at`` and ``gather_elements_at``: data as outer x size x inner
    items, indices as outer x length x inner. None where the indices do not span data off
    ``axis`` (a smaller block of it).
    """
    if any(
        n != m for k, (n, m) in enumerate(zip(data_shape, index_shape, strict=True)) if k != axis
    ):
        return None
    outer, inner = math.prod(data_shape[:axis]), math.prod(data_shape[axis + 1 :])
    return (outer, data_shape[axis], index_shape[axis], inner, itemsize)


def writer_at(
    kernels: Any,
    plan: Any,
    data_shape: tuple[int, ...],
    index_shape: tuple[int, ...],
    itemsize: int,
    elements: bool,
) -> Callable[[Any, Any, Any], bool] | None:
    """A plain write in place by address: ``at(data, updates, indices) -> written``.

    ``kernels.scatter_nd_at``, or ``scatter_elements_at`` (``elements``) where the
    indices span data off the axis. Each of the three is an address or a plain C-ordered
    ndarray; the caller vouches for what an address holds: these shapes, C-ordered,
    updates of data's type, int64 indices. Reduction ``none``, at most
    :data:`AT_UP_TO` bytes written: a decode step's KV-cache write of a few rows, where
    the views and the general kernel's argument parsing cost more than the write
    (docs/performance.md). It writes nothing and says False
    for an index out of range, memory shared with data, or an ndarray of another layout:
    the general path then serves the call (it raises, drops the update unchecked, or
    copies what is shared). None where it does not apply.
    """
    if kernels is None or plan.reduction != Reduction.NONE:
        return None
    if elements:
        layout = elements_layout(data_shape, index_shape, plan.axis, itemsize)
        if layout is None or math.prod(index_shape) * itemsize > AT_UP_TO:
            return None
        elements_at = kernels.scatter_elements_at
        return lambda data, updates, indices: elements_at(data, updates, indices, *layout)
    depth = index_shape[-1]
    count, dims = math.prod(index_shape[:-1]), tuple(data_shape[:depth])
    row = math.prod(data_shape[depth:]) * itemsize
    if count * row > AT_UP_TO:
        return None
    nd_at = kernels.scatter_nd_at
    return lambda data, updates, indices: nd_at(data, updates, indices, count, dims, row)


def copied(data: np.ndarray, kernel: Callable[..., Any] | None, threads: int) -> np.ndarray:
    """A C-ordered copy of ``data``, over threads where the compiled kernel takes it.

    ``kernel``: the compiled ScatterND, writing nothing; else NumPy's copy, on one thread
    (docs/performance.md).
    """
    kind = _KINDS.get(data.dtype.name, -1)
    plain = data.dtype.kind not in "OT" and data.flags.c_contiguous and data.dtype.isnative
    if kernel is None or not plain or data.ndim == 0:
        return np.array(data, order="C")
    result = np.empty(data.shape, data.dtype)
    nothing = np.zeros((0, 1), np.int64)
    updates = np.empty((0, *data.shape[1:]), data.dtype)
    code = _REDUCTION_CODES[Reduction.NONE]
    done = kernel(result, data, nothing, updates, code, kind, CheckMode.DROP, threads)
    return result if done is True else np.array(data, order="C")


def _checked_or_dropped(
    indices: np.ndarray, plan: ScatterPlan
) -> tuple[np.ndarray, np.ndarray | None]:
    """Indices counted from the end: checked (IndexError), or with a mask of those kept."""
    if plan.check_bounds:
        return counted_on_host(plan, indices), None
    positions, keep = counted(_xp, indices, plan, BoundsPolicy.DROP)
    return positions, np.asarray(keep).reshape(-1)


def _scatter(
    data: np.ndarray,
    rows: np.ndarray,
    values: np.ndarray,
    keep: np.ndarray | None,
    reduction: Reduction,
    out: np.ndarray | None,
    shape: tuple[int, int] | None = None,
) -> np.ndarray:
    """Copy ``data`` (into ``out``, unless it is data), then :func:`write` into it.

    The indices are checked already; the rows and values that ``out`` overlaps are copied
    before it is written.
    """
    if reduction == Reduction.ADD and data.dtype.kind in "OUST":
        return _concatenated(data, rows, values, keep, out, shape)
    if out is None:
        result = np.array(data, order="C", copy=True)
    else:
        rows, values = apart(out, rows), apart(out, values)
        if not in_place(data, out):
            np.copyto(out, data)  # (NumPy copies through a buffer where they overlap)
        result = out
    # Rows are a view of C-ordered results; any other ``out`` is written through a copy.
    work = result if result.flags.c_contiguous else np.ascontiguousarray(result)
    write(work.reshape(shape or (-1,)), rows, values, keep, reduction)
    if work is not result:
        result[...] = work
    return result


def _concatenated(
    data: np.ndarray,
    rows: np.ndarray,
    values: np.ndarray,
    keep: np.ndarray | None,
    out: np.ndarray | None,
    shape: tuple[int, int] | None,
) -> np.ndarray:
    """Strings' ``add``: each update appended to its target in C order (ONNX Runtime's).

    Computed on Python strings, which grow; a fixed-width result is then as wide as the
    widest of data, the updates and the longest string made (:func:`strings_of`).
    """
    work = np.array(data, dtype=object, order="C")
    write(work.reshape(shape or (-1,)), rows, values.astype(object), keep, Reduction.ADD)
    result = strings_of(work, data.dtype, values.dtype)
    if out is None:
        return result
    if out.dtype.kind in "US" and np.result_type(out.dtype, result.dtype) != out.dtype:
        msg = (
            f"out holds strings of dtype {out.dtype}, which would cut the concatenated "
            f"strings ({result.dtype}): pass out of dtype {result.dtype}, or object arrays"
        )
        raise TypeError(msg)
    out[...] = result
    return out


def strings_of(work: np.ndarray, data: np.dtype[Any], updates: np.dtype[Any]) -> np.ndarray:
    """Python strings ``work`` in data's string kind.

    Fixed width as wide as the widest of data's, the updates' and the longest string;
    objects and StringDType as they are.
    """
    if data.kind == "O":
        return work
    if data.kind == "T":
        return work.astype(data)
    longest = max((len(x) for x in work.reshape(-1)), default=0)
    wide = np.result_type(result_dtype(data, updates), np.dtype(f"{data.kind}{max(longest, 1)}"))
    return work.astype(wide)


def in_place(data: np.ndarray, out: np.ndarray) -> bool:
    """Whether ``out`` is data: the same array, or a view of exactly its memory and layout."""
    if out is data:
        return True
    if not np.may_share_memory(data, out):
        return False
    address = data.__array_interface__["data"][0] == out.__array_interface__["data"][0]
    return address and data.strides == out.strides and data.dtype == out.dtype


def apart(out: np.ndarray, x: np.ndarray) -> np.ndarray:
    """``x``, or a copy of it where it may share memory with ``out`` (read before written).

    ``np.may_share_memory`` compares the bounds alone: a view interleaved with ``out`` is
    copied too (correct, and rare).
    """
    return x.copy() if np.may_share_memory(out, x) else x


def write(
    target: np.ndarray,
    rows: np.ndarray,
    values: np.ndarray,
    keep: np.ndarray | None,
    reduction: Reduction,
) -> None:
    """Apply the updates ``values[i]`` to ``target[rows[i]]`` in order, in place.

    ``target`` is 1-D (one element per row) or 2-D (rows of ``values.shape[1]``), ``rows``
    in range; ``keep`` (None: all) marks the updates to apply. For ``none``, where several
    updates aim at one row, the last in C order wins: NumPy leaves the order of a fancy
    assignment with repeated indices unspecified, so repeats are found first
    (``np.bincount``) and only each row's last update is written. The others:
    :func:`_reduce`.
    """
    if keep is not None and not keep.all():
        rows, values = rows[keep], values[keep]
    if not rows.size:
        return
    if reduction == Reduction.NONE:
        last = _last_of_each(rows, target.shape[0])
        if last is not None:
            rows, values = rows[last], values[last]
        target[rows] = values
        return
    # NaN, infinity and a signalling NaN compared are data here, not errors: no warnings.
    with np.errstate(all="ignore"):
        _reduce(target, rows, values, reduction)


def _reduce(target: np.ndarray, rows: np.ndarray, values: np.ndarray, reduction: Reduction) -> None:
    """:func:`write`'s reductions: ``ufunc.at`` in order, then NaNs and zeros as decided.

    ``ufunc.at`` applies the updates one at a time in the order given, each computed in
    data's dtype (float16 and bfloat16 rounded after every update: NumPy computes a
    float16 step in float32, whose 24 bits are at least 2 * 11 + 2, so the rounding is
    exact; the same for bfloat16); a NaN they produce is then made the canonical one (the
    hardware's choice depends on operand order). Integers wrap; on bool, NumPy's add is
    OR, multiply AND, maximum OR and minimum AND, the decided meanings. NumPy's float
    maximum and minimum keep a NaN already there and take the first NaN update (the
    decided payload); their choice between -0.0 and +0.0 follows neither IEEE nor one rule
    across dtypes (measured on NumPy 2.4: float32 ``maximum(+0.0, -0.0)`` gives -0.0,
    float16 ``maximum(-0.0, +0.0)`` gives -0.0), so zeros are put right afterwards.
    """
    ufunc = _UFUNCS[reduction]
    zeros = reduction in (Reduction.MAX, Reduction.MIN) and _is_float(target.dtype)
    if zeros:
        # Which zero each touched element ends with: IEEE's, whichever came first.
        negative = reduction == Reduction.MIN
        special = np.zeros(target.shape, bool)
        np.logical_or.at(special, rows, _is_zero(target[rows], negative))
        np.logical_or.at(special, rows, _is_zero(values, negative))
    ufunc.at(target, rows, values)
    if reduction in (Reduction.ADD, Reduction.MUL) and (
        _is_float(target.dtype) or target.dtype.kind == "c"
    ):
        _canonical_nans(target, rows)
    if zeros:
        fix = special & (target == 0)
        if fix.any():
            target[fix] = -0.0 if negative else 0.0


def _last_of_each(rows: np.ndarray, n_rows: int) -> np.ndarray | None:
    """The positions of each row's last update, in row order; None if no row repeats."""
    if rows.size < 2 or np.bincount(rows, minlength=n_rows).max() < 2:
        return None
    # The largest position per row: maximum does not depend on the order it is applied in.
    latest = np.full(n_rows, -1, np.int64)
    np.maximum.at(latest, rows, np.arange(rows.size, dtype=np.int64))
    return latest[latest >= 0]


def _canonical_nans(target: np.ndarray, rows: np.ndarray) -> None:
    """NaN results at the rows written as the canonical quiet NaN (:mod:`onnx_gather._spec.reductions`)."""
    touched = target[rows]
    parts = (touched.real, touched.imag) if touched.dtype.kind == "c" else (touched,)
    changed = False
    for part in parts:
        nan = np.isnan(part)
        if nan.any():
            part[nan] = np.nan
            changed = True
    if changed:
        target[rows] = touched


def _is_float(dtype: np.dtype[Any]) -> bool:
    return dtype.kind == "f" or dtype.name == "bfloat16"


def _is_zero(values: np.ndarray, negative: bool) -> np.ndarray:
    """Where ``values`` is the zero of the given sign."""
    return (values == 0) & (np.signbit(values) == negative)


def tensor_scatter(
    data: np.ndarray,
    indices: np.ndarray,
    updates: np.ndarray,
    plan: TensorScatterPlan,
    out: np.ndarray | None = None,
    kernel: Callable[..., Any] | None = None,
    threads: int = 1,
) -> np.ndarray:
    """ONNX TensorScatter of NumPy arrays, into a new C-ordered array or ``out``.

    ``kernel``: the compiled ScatterND kernel, which copies data over ``threads``
    (:func:`copied`).

    The write indices are checked first (a failed check writes nothing); each batch
    entry's positions along the axis are distinct, so one advanced assignment writes every
    update (:meth:`~onnx_gather._spec.tensor_scatter.TensorScatterPlan.target`). ``out=data`` writes only
    the new positions; updates that share memory with ``out`` are copied first, and the
    write indices are read (as host ints) before anything is written.
    Unchecked, the writes outside the axis (all of a negative index's) are dropped.
    """
    # Host ints: read before anything is written (integer data that holds them too).
    starts = plan.checked_starts(np.asarray(indices))
    if out is None:
        result = copied(data, kernel, threads)
    else:
        result = out
        if np.may_share_memory(out, updates):
            updates = updates.copy()
        if out is not data:  # (NumPy's assignment reads an overlapping data first)
            out[...] = data
    copies = plan.slice_copies(starts)
    if copies is not None:
        copy_slices(result, updates, copies)
        return result
    host = np.array(starts, dtype=np.int64)
    positions, keep = plan.positions(host, np.arange(plan.length), np)
    source = np.moveaxis(updates, plan.axis, 1)  # (batch, length, *others): the update's
    if plan.check_bounds:  # (every write is kept)
        result[plan.target(np.arange(host.size)[:, None], positions)] = source
        return result
    batch = np.broadcast_to(np.arange(host.size)[:, None], positions.shape)
    result[plan.target(batch[keep], positions[keep])] = source[keep]
    return result


def copy_slices(target: np.ndarray, source: np.ndarray, copies: list[tuple[Any, Any]]) -> None:
    """TensorScatter's plain copies (:meth:`~onnx_gather._spec.tensor_scatter.TensorScatterPlan.slice_copies`) into ``target``.

    One copy: NumPy's assignment reads a source that overlaps the target first. Several:
    a source that shares the target's memory is copied before the first is written.
    """
    if len(copies) == 1:
        index, part = copies[0]
        target[index] = source if part is None else source[part]
        return
    if np.may_share_memory(target, source):
        source = source.copy()
    for index, part in copies:
        target[index] = source[part]
