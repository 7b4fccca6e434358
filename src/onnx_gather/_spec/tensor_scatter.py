"""ONNX TensorScatter (version 24): the shape rules, the write-index rule and the plan."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from onnx_gather import _spec

#: The write modes, by their attribute text.
MODES = ("linear", "circular")
#: Every axis before the k-th taken whole: ``_LEADS[k]`` (an index's prefix, made once:
#: making it cost a decode step's write a tenth of its time).
_LEADS = tuple((slice(None),) * k for k in range(64))
#: The batch entries up to which :meth:`TensorScatterPlan.slice_copies` copies each by itself.
_FEW_ENTRIES = 16


class _Fields(NamedTuple):
    op: str
    check_bounds: bool
    out_shape: tuple[int, ...]  # the cache's
    axis: int
    size: int  # the cache's length along the axis
    length: int  # the update's length along the axis
    circular: bool


class TensorScatterPlan(_Fields, _spec.Plan):
    """A checked TensorScatter call; the result has the cache's shape.

    For each batch entry ``b`` (axis 0), the update's slice ``s`` along ``axis`` lands at
    position ``p = write_indices[b] + s`` of that axis; in circular mode ``p`` is taken
    modulo the cache's length ``size`` (only that position wraps, as ONNX Runtime's
    kernel does). A write index must be ``>= 0``, and in linear mode at most ``size -
    length``: :meth:`raise_if_bad` says which is not. Unchecked, the writes whose position
    falls outside the axis (and every write of a batch entry whose index is negative) are
    dropped.
    """

    __slots__ = ()

    def attributes(self) -> tuple[int, str]:
        """The attributes that plan this call again: ``(axis, mode)``, normalised."""
        return (self.axis, "circular" if self.circular else "linear")

    def bad(self, indices: Any) -> Any:
        """True where a write index breaks the rule (any array with comparisons)."""
        if self.circular:
            return indices < 0
        return (indices < 0) | (indices > self.size - self.length)

    def positions(self, starts: Any, offsets: Any, xp: Any) -> tuple[Any, Any]:
        """Each batch entry's positions along the axis, ``(batch, length)``, and which to write.

        ``starts``: the write indices; ``offsets``: ``arange(length)`` on their device;
        ``xp``: their namespace (NumPy, torch, ``jax.numpy``). In circular mode a position
        wraps around the axis; a write whose position falls outside the axis (all of a
        negative index's, in either mode) is not kept.

        No sum here leaves the index dtype for any write index (an int64 near ``2**63``,
        an int32 near ``2**31``): the start is reduced (circular: modulo the length) or
        held at the length (linear) before the offsets are added, so every position is
        exact, and a position that a compiler assumes non-negative is.
        """
        size = max(self.size, 1)
        if self.circular:
            positions = (starts[:, None] % size + offsets[None, :]) % size
            positions = xp.where(starts[:, None] >= 0, positions, -1)
        else:
            positions = xp.where(starts > size, size, starts)[:, None] + offsets[None, :]
        keep = (positions >= 0) & (positions < self.size)
        return positions, keep

    def reduced(self, starts: np.ndarray) -> np.ndarray:
        """Host write indices of the same meaning, each in ``[-length, size]``.

        A circular index is taken modulo the length (a negative one becomes -1, still
        bad); a linear one is held at ``-length`` below (every write outside) and ``size``
        above. They then fit any index type a library holds (JAX without x64 has only
        int32, where ``2**63 - 1`` is a valid circular index).
        """
        if self.circular:
            reduced: np.ndarray = np.where(starts >= 0, starts % max(self.size, 1), -1)
        else:
            reduced = np.clip(starts, -self.length, self.size)
        return reduced

    def target(self, batch: Any, positions: Any) -> tuple[Any, ...]:
        """The advanced index that writes the update: ``batch`` at 0, ``positions`` at the axis.

        Every other axis is taken whole. With ``batch`` (B, 1) and ``positions`` (B, L), or both (K,) for the writes kept,
        the target's selected shape is ``(B, L, *others)`` or ``(K, *others)`` whether or
        not the axis is next to 0 (NumPy's, torch's and JAX's rule for separated advanced
        indices): the update moved to ``(B, L, *others)`` fits it, and the cache itself
        is never transposed (a copy of the whole cache under ``jax.jit``).
        """
        index: list[Any] = [slice(None)] * len(self.out_shape)
        index[0], index[self.axis] = batch, positions
        return tuple(index)

    def checked_starts(self, indices: Any) -> list[int]:
        """The write indices as host ints, checked where the plan checks (:meth:`raise_if_bad`).

        ``indices``: the call's, a NumPy array or a library's array with ``ndim``,
        ``reshape`` and ``tolist`` (one read: one synchronisation on a device; integers,
        so never a tensor that records a gradient). Read before anything is written, so
        data that holds them can be written in place.
        """
        starts = _host_starts(indices)
        if self.check_bounds:
            self.raise_if_bad(starts)
        return starts

    def copies(self, indices: Any) -> list[tuple[tuple[Any, ...], Any]] | None:
        """:meth:`slice_copies` of the call's write indices, checked where they need it.

        ``indices``: as :meth:`checked_starts`. Writes that all land whole in one slice
        (:meth:`one_slice`: a decode step's) are valid in either mode: they are not
        checked again (the check cost a tiny in-place call a sixth of its time).
        """
        starts = _host_starts(indices)
        same = self.one_slice(starts)
        if same is not None:
            return [(same, None)]
        if self.check_bounds:
            self.raise_if_bad(starts)
        return self._entry_copies(starts)

    def slice_copies(self, starts: list[int]) -> list[tuple[tuple[Any, ...], Any]] | None:
        """The plain copies that make every write: (the cache's slice, the update's part).

        One copy where every write lands in one slice (:meth:`one_slice`; the part is None:
        the whole update); one per entry where a few (at most ``_FEW_ENTRIES``, 16)
        entries land whole at their own positions (:meth:`entry_slices`; the part is the
        entry ``b``). None where a write wraps or falls outside, or for more entries:
        advanced indexing then, whose one assignment costs more than that many copies
        (docs/performance.md).
        """
        same = self.one_slice(starts)
        if same is not None:
            return [(same, None)]
        return self._entry_copies(starts)

    def _entry_copies(self, starts: list[int]) -> list[tuple[tuple[Any, ...], Any]] | None:
        """:meth:`slice_copies` where no one slice takes every write: a copy per entry."""
        if len(starts) > _FEW_ENTRIES:
            return None
        entries = self.entry_slices(starts)
        return None if entries is None else [(index, b) for b, index in enumerate(entries)]

    def one_slice(self, starts: Sequence[int] | np.ndarray) -> tuple[slice, ...] | None:
        """The one slice every write lands in, or None.

        Where all write indices (host ints, or a 1-D array of them) are equal and the
        update does not wrap (a decode step at one position, a prefill from 0). Writing it
        is one copy of the update, what ``c[:, :, p:p + n] = new`` costs.
        """
        if type(starts) is list:  # (host ints: one count in C)
            if not starts:
                return None
            start = starts[0]
            if starts.count(start) != len(starts):
                return None
        else:
            if not len(starts):
                return None
            start = int(starts[0])
            if len(starts) > 1 and (np.asarray(starts) != start).any():
                return None
        if start < 0:
            return None
        if self.circular:
            start %= max(self.size, 1)
        stop = start + self.length
        if stop > self.size:
            return None
        axis = self.axis
        lead = _LEADS[axis] if axis < len(_LEADS) else (slice(None),) * axis
        return (*lead, slice(start, stop))

    def entry_slices(self, starts: Sequence[int]) -> list[tuple[Any, ...]] | None:
        """Each batch entry's slice of the cache, where its update lands whole; or None.

        None where an entry's write wraps around the axis (circular mode) or falls
        outside it (unchecked): those need advanced indexing. Entry ``b``'s update,
        ``update[b]``, fits its slice. (A few entries at their own positions: a copy each,
        cheaper than one advanced assignment.)
        """
        lead = (slice(None),) * (self.axis - 1)
        found = []
        for b, start in enumerate(starts):
            if self.circular and start >= 0:
                start %= max(self.size, 1)
            if start < 0 or start + self.length > self.size:
                return None
            found.append((b, *lead, slice(start, start + self.length)))
        return found

    def raise_if_bad(self, indices: Sequence[int] | np.ndarray) -> None:
        """The IndexError for the first bad entry of host ``indices`` (ONNX Runtime's order).

        ``indices``: a list of ints, or an array of them.
        """
        if isinstance(indices, np.ndarray):
            indices = indices.reshape(-1)
        if len(indices) <= 16:  # (a decode step's few entries: Python beats NumPy's calls)
            values = indices.tolist() if isinstance(indices, np.ndarray) else indices
            if not values or (
                min(values) >= 0 and (self.circular or max(values) <= self.size - self.length)
            ):  # (the rule of bad, on every entry at once, in C)
                return
            for b, start in enumerate(values):
                if self.bad(start):  # (the one rule, on a Python int)
                    raise self.error(int(start), b)
            return
        array = np.asarray(indices, dtype=np.int64)
        bad = self.bad(array)
        if bad.any():
            b = int(np.flatnonzero(bad)[0])
            raise self.error(int(array[b]), b)

    def error(self, value: int | str, entry: int | str) -> IndexError:
        """The IndexError for write index ``value`` of batch entry ``entry``."""
        where = f"{self.op}: index {value} at position ({entry},) of write_indices"
        axis = f"for axis {self.axis} of size {self.size}"
        if isinstance(value, int) and value < 0:
            return IndexError(f"{where} is out of range {axis}: a write index must be >= 0")
        return IndexError(
            f"{where} is out of range {axis} with an update of length {self.length}: linear "
            f"mode needs write_indices[b] + {self.length} <= {self.size} (mode='circular' "
            "wraps around)"
        )


def _host_starts(indices: Any) -> list[int]:
    """The write indices as host ints (one read: one synchronisation on a device)."""
    return indices.tolist() if indices.ndim == 1 else indices.reshape(-1).tolist()  # type: ignore[no-any-return]


def plan(
    op: _spec.Rules,
    version: int,
    shapes: tuple[tuple[int, ...], ...],
    dtypes: tuple[str, ...],
    attributes: tuple[Any, ...],
    check_bounds: bool,
) -> TensorScatterPlan:
    """Check a TensorScatter call and return its plan.

    ``shapes`` and ``dtypes`` of past_cache, update and write_indices (ONNX's order);
    ``attributes`` is ``(axis, mode)``.

    Raises
    ------
    TypeError
        A data type the library cannot hold, an update of another type than the cache's,
        write indices that are not int32 or int64, or a mode that is not a str.
    ValueError
        A cache of rank < 2, an axis out of range or the batch axis 0, an unknown mode,
        an update of another rank or of other dims off the axis, or longer along it than
        the cache, or write indices of another shape than ``(batch,)``.
    """
    name = op.message_name(version)
    cache_shape, update_shape, indices_shape = shapes
    cache_dtype, update_dtype, indices_dtype = dtypes
    if not cache_shape:
        raise _spec.rank_0(name)
    _spec.check_types(name, version, op.bfloat16_from, cache_dtype, indices_dtype)
    if update_dtype != cache_dtype:
        msg = f"{name}: update must have past_cache's type {cache_dtype}, got {update_dtype}"
        raise TypeError(msg)
    rank = len(cache_shape)
    axis = _spec.normalise_axis(name, attributes[0], rank)
    if axis == 0:
        msg = f"{name}: axis {attributes[0]} is the batch axis 0; the sequence axis must be another"
        raise ValueError(msg)
    mode = attributes[1]
    if type(mode) is not str:
        msg = f"{name}: mode must be a str, got {mode!r} of type {type(mode).__name__}"
        raise TypeError(msg)
    if mode not in MODES:
        msg = f"{name}: unknown mode {mode!r}; valid: 'linear', 'circular'"
        raise ValueError(msg)
    off_axis = [d for d in range(rank) if d != axis]
    if len(update_shape) != rank or any(update_shape[d] != cache_shape[d] for d in off_axis):
        msg = (
            f"{name}: update must have past_cache's shape {tuple(cache_shape)} off axis {axis}, "
            f"got {tuple(update_shape)}"
        )
        raise ValueError(msg)
    if update_shape[axis] > cache_shape[axis]:
        msg = (
            f"{name}: the update's length {update_shape[axis]} along axis {axis} is longer than "
            f"past_cache's {cache_shape[axis]}"
        )
        raise ValueError(msg)
    if tuple(indices_shape) != (cache_shape[0],):
        msg = (
            f"{name}: write_indices must have shape ({cache_shape[0]},), one per batch entry, "
            f"got {tuple(indices_shape)}"
        )
        raise ValueError(msg)
    return TensorScatterPlan(
        name,
        check_bounds,
        tuple(cache_shape),
        axis,
        cache_shape[axis],
        update_shape[axis],
        mode == "circular",
    )
