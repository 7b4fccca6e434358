"""Gathers by data block: each index goes to the data block it reads (:func:`gather_by_block`)."""

from __future__ import annotations

import math
from itertools import accumulate
from typing import TYPE_CHECKING, Any

import numpy as np
from dask.base import tokenize
from dask.highlevelgraph import HighLevelGraph

from onnx_gather import _spec
from onnx_gather._backends import _numpy as numpy_kernels
from onnx_gather._host import counted_on_host
from onnx_gather._spec.gather_elements import GatherElementsPlan

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    import dask.array as da

    from onnx_gather._spec import Plan

#: A route task's result: per reachable data block, the positions (in the indices block,
#: C order) of the entries it owns and their offsets (rows of the data block, C order).
Routed = tuple[list[np.ndarray], list[np.ndarray]]

#: Bytes per index a route task writes (a position and an offset, int32 or int64).
ROUTE_BYTES = 8
#: What one more task costs, in bytes moved: dask.distributed's scheduler spends on the
#: order of a millisecond per task, the time a worker takes to move about a MiB.
TASK_BYTES = 2**20


def tasks(index_blocks: int, reach: int) -> int:
    """The number of tasks :func:`gather_by_block` makes.

    A route and a join per indices block; an offsets and a values task per indices block
    and data block it can reach; a part per data block (counted with data's own).
    """
    return index_blocks * (2 + 2 * reach)


def split(owner: np.ndarray, targets: tuple[int, ...]) -> list[np.ndarray]:
    """For each target, the positions (ascending) whose owner it is.

    Two passes where one owner has them all; one comparison pass per target while they
    are few; past that one stable sort by owner (a radix sort on 16-bit keys), cut where
    each owner's run begins and ends.
    """
    if owner.size and owner.min() == owner.max():  # (indices local to one data block)
        every = np.arange(owner.size)
        return [every if t == owner[0] else every[:0] for t in targets]
    if len(targets) <= 4:
        return [np.flatnonzero(owner == t) for t in targets]
    keys = owner.astype(np.int16 if max(targets) < 2**15 else np.int64)
    order = np.argsort(keys, kind="stable")
    ranked = keys[order]
    lo = np.searchsorted(ranked, targets, side="left")
    hi = np.searchsorted(ranked, targets, side="right")
    return [order[a:b] for a, b in zip(lo, hi, strict=True)]


def counted_block(block: np.ndarray, plan: Plan, offset: Sequence[int]) -> np.ndarray:
    """One indices block counted and checked (or clamped); errors name whole positions."""
    try:
        return counted_on_host(plan, block)
    except IndexError:
        _spec.raise_out_of_range(plan, block, offset)
        raise


def small(*bounds: int) -> type[np.signedinteger[Any]]:
    """The narrowest of int32 and int64 that holds every value below each of ``bounds``."""
    return np.int32 if max(bounds, default=0) < 2**31 else np.int64


def widest(stops: Sequence[int]) -> int:
    """The longest of the chunks ending at ``stops``."""
    return max((b - a for a, b in zip((0, *stops), stops, strict=False)), default=0)


def owners(values: np.ndarray, stops: Sequence[int]) -> np.ndarray:
    """The chunk (of the chunks ending at ``stops``) each counted coordinate falls in.

    Chunks of one width (the last may be shorter): a shift (a power of two) or a
    division; else a binary search.
    """
    width = stops[0] if stops else 0
    if width and all(s == (i + 1) * width for i, s in enumerate(stops[:-1])):
        return np.minimum(_divided(values, width), len(stops) - 1)
    return np.minimum(np.searchsorted(stops, values, side="right"), len(stops) - 1)


def element_offsets(
    pos: np.ndarray, local: np.ndarray, shape: tuple[int, ...], axis: int, width: int
) -> np.ndarray:
    """Offsets (C order) in a block of ``shape`` but ``width`` along ``axis``.

    Of the entries at ``pos`` (C order) of a block of ``shape``, each moved to ``local``
    along the axis.
    """
    inner = math.prod(shape[axis + 1 :])
    length = shape[axis] * inner  # positions per step of the dims before the axis
    if inner == 1:
        return _divided(pos, length) * width + local
    wide = local.astype(np.int64, copy=False)  # (int32 indices times inner may pass 2**31)
    return _divided(pos, length) * (width * inner) + wide * inner + pos % inner


def _divided(values: np.ndarray, n: int) -> np.ndarray:
    """``values // n`` for non-negative ``values``; a shift where ``n`` is a power of two."""
    if n > 0 and n & (n - 1) == 0:
        return values >> (n.bit_length() - 1)
    return values // max(n, 1)


def route_elements(
    block: np.ndarray,
    plan: Plan,
    offset: Sequence[int],
    count: bool,
    axis: int,
    stops: tuple[int, ...],
    targets: tuple[int, ...],
) -> Routed:
    """GatherElements: one indices block split by the data chunk along ``axis`` it reads.

    The data block of chunk ``c`` has the indices block's shape off the axis (the
    inputs are aligned so) and ``stops[c] - stops[c - 1]`` along it; an entry at
    position ``p`` (C order) with counted index ``i`` reads that block's element whose
    coordinates are ``p``'s with the axis' one replaced by ``i - start``.
    """
    counted = counted_block(block, plan, offset) if count else block
    flat = counted.reshape(-1)  # (int32 or int64: counted, so within the axis)
    owner = owners(flat, stops)
    inner = math.prod(block.shape[axis + 1 :])
    length = block.shape[axis] * inner  # positions per step of the dims before the axis
    starts = (0, *stops)
    outer = flat.size // length if length else 0
    kind = small(flat.size, outer * widest(stops) * inner)  # (the largest data block)
    positions, offsets = [], []
    for c, pos in zip(targets, split(owner, targets), strict=True):
        at = element_offsets(
            pos, flat[pos] - np.int64(starts[c]), block.shape, axis, stops[c] - starts[c]
        )
        positions.append(pos.astype(kind))
        offsets.append(at.astype(kind))
    return positions, offsets


def owners_nd(tuples: np.ndarray, stops: tuple[tuple[int, ...], ...]) -> np.ndarray:
    """The data block (C order over the addressed dims' blocks) each counted tuple reads."""
    return locate_nd(tuples, stops)[0]


def locate_nd(
    tuples: np.ndarray, stops: tuple[tuple[int, ...], ...]
) -> tuple[np.ndarray, np.ndarray]:
    """Each counted tuple's data block (as :func:`owners_nd`) and row in it (C order).

    One pass per addressed dim over all tuples, so splitting by block only picks.
    """
    owner = np.zeros(len(tuples), np.int64)
    at = np.zeros(len(tuples), np.int64)
    for d, s in enumerate(stops):
        per_dim = owners(tuples[:, d], s)
        starts = np.array((0, *s[:-1]), np.int64)
        widths = np.array(s, np.int64) - starts
        owner = owner * len(s) + per_dim
        at = at * widths[per_dim] + (tuples[:, d] - starts[per_dim])
    return owner, at


def route_nd(
    block: np.ndarray,
    plan: Plan,
    offset: Sequence[int],
    count: bool,
    stops: tuple[tuple[int, ...], ...],
    targets: tuple[int, ...],
) -> Routed:
    """GatherND without batch dims: index tuples split by the data block they address.

    Owners number the blocks of data's ``k`` addressed dims in C order (:func:`owners_nd`);
    an offset is the tuple's row in its block's addressed dims, in C order.
    """
    counted = counted_block(block, plan, offset) if count else block
    tuples = counted.reshape(-1, len(stops))
    owner, at = locate_nd(tuples, stops)
    kind = small(len(tuples), math.prod(widest(s) for s in stops))
    positions, offsets = [], []
    for pos in split(owner, targets):
        positions.append(pos.astype(kind))
        offsets.append(at[pos].astype(kind))
    return positions, offsets


def _offsets(routed: Routed, i: int) -> np.ndarray:
    """The offsets of one reachable data block: all a part task needs of its route."""
    return routed[1][i]


def take_part(block: np.ndarray, offsets: np.ndarray, k: int) -> np.ndarray:
    """The rows (of ``block``'s first ``k`` dims, C order) at ``offsets``, never copying ``block``.

    (``reshape`` would copy a non-contiguous block whole; indexing by coordinates reads
    only the rows it needs.)
    """
    if not offsets.size:
        return np.empty((0, *block.shape[k:]), block.dtype)
    if block.flags.c_contiguous:
        rows = block.reshape((math.prod(block.shape[:k]), *block.shape[k:]))
        return np.take(rows, offsets, axis=0)
    return np.asarray(block[np.unravel_index(offsets, block.shape[:k])])


def take_parts(block: np.ndarray, offsets: list[np.ndarray], k: int) -> list[np.ndarray]:
    """:func:`take_part` for each indices block reading ``block``."""
    return [take_part(block, at, k) for at in offsets]


def _pick(parts: list[np.ndarray], i: int) -> np.ndarray:
    """One indices block's values of a data block's part: all its join needs of it."""
    return parts[i]


def join(
    routed: Routed,
    parts: list[np.ndarray],
    lead: tuple[int, ...],
    trail: tuple[int, ...],
    dtype: np.dtype[Any],
) -> np.ndarray:
    """One output block: each part's values at its positions (every position is owned once)."""
    out = np.empty((math.prod(lead), *trail), dtype)
    for pos, values in zip(routed[0], parts, strict=True):
        if pos.size == len(out):  # (all from one data block, in order: no copy)
            return values.reshape(lead + trail)
        if pos.size:
            out[pos] = values
    return out.reshape(lead + trail)


def gather_by_block(
    op: str,
    data: da.Array,
    indices: da.Array,
    route: tuple[Callable[..., Routed], dict[str, Any]],
    reach: Callable[[tuple[int, ...]], list[tuple[int, tuple[int, ...]]]],
    k: int,
    out_chunks: tuple[tuple[int, ...], ...],
    lead_dims: int,
) -> da.Array:
    """The graph of route, part and join tasks: indices go to data, never data to indices.

    For each indices block a *route* task counts and checks the block, finds the data
    block each entry reads (its *owner*) and splits the entries by owner: for each data
    block it can reach, the entries' positions in the indices block and their offsets in
    that data block. A *part* task per data block takes, for each indices block that may
    read it, the values at those offsets, where the block lies (one task reads it, so it
    is released once that task has run); a *join* task per output block puts the values
    at their positions. Only offsets (one small integer per
    index) and values (one item per index) move. A part whose data block no entry of its
    indices block reads is empty, so indices local to one data block move nothing else.

    Parameters
    ----------
    op : str
        The operator's name, in the layers' names (``<op>-route``, ``<op>-offsets``,
        ``<op>-part``, and ``<op>`` for the joins).
    data, indices : dask.array.Array
        The data, and the indices (not yet counted, unless the route is told so).
    route : (callable, dict)
        :func:`route_elements` or :func:`route_nd`, and its keyword arguments but
        ``offset`` and ``targets``.
    reach : callable
        For an indices block's grid position: the data blocks its entries may read, as
        (owner id, data block's grid position).
    k : int
        The data dims a part's offsets address (rows of the rest are taken whole).
    out_chunks : tuple of tuple of int
        The result's chunks: each output block is one indices block's.
    lead_dims : int
        The result's dims an indices block gives (the rest are data's trailing dims).

    Returns
    -------
    dask.array.Array
        The gathered values, in ``out_chunks``.
    """
    token = tokenize(data, indices, route[1], k, out_chunks)
    prefix = op.lower()
    names = {s: f"{prefix}-{s}-{token}" for s in ("route", "offsets", "part", "values")}
    name = f"{prefix}-{token}"
    starts = [tuple(accumulate(c, initial=0)) for c in indices.chunks]
    fn, kwargs = route
    graph: dict[str, dict[Any, Any]] = {key: {} for key in (*names.values(), name)}
    trail = tuple(c[0] for c in out_chunks[lead_dims:])
    # One part per data block, over every indices block that may read it: the block is
    # then read by one task, run once its routes are done, and released after it.
    readers: dict[tuple[int, ...], list[Any]] = {}
    joins: dict[tuple[int, ...], list[Any]] = {}
    for bi in np.ndindex(*indices.numblocks):
        offset = tuple(starts[d][b] for d, b in enumerate(bi))
        targets = reach(bi)
        rkey = (names["route"], *bi)
        owners = tuple(t for t, _ in targets)
        graph[names["route"]][rkey] = (
            _apply,
            fn,
            [(indices.name, *bi)],
            {**kwargs, "offset": offset, "targets": owners},
        )
        joins[bi] = []
        for i, (_, block) in enumerate(targets):
            okey = (names["offsets"], *bi, i)
            graph[names["offsets"]][okey] = (_offsets, rkey, i)
            readers.setdefault(block, []).append(okey)
            vkey = (names["values"], *bi, i)
            graph[names["values"]][vkey] = (_pick, (names["part"], *block), len(readers[block]) - 1)
            joins[bi].append(vkey)
    for block, okeys in readers.items():
        graph[names["part"]][(names["part"], *block)] = (take_parts, (data.name, *block), okeys, k)
    for bi, parts in joins.items():
        lead = tuple(out_chunks[d][bi[d]] for d in range(lead_dims))
        rkey = (names["route"], *bi)
        graph[name][(name, *bi[:lead_dims], *(0,) * len(trail))] = (
            join,
            rkey,
            parts,
            lead,
            trail,
            data.dtype,
        )
    deps = {
        names["route"]: set(indices.__dask_layers__()),
        names["offsets"]: {names["route"]},
        names["part"]: {names["offsets"], *data.__dask_layers__()},
        names["values"]: {names["part"]},
        name: {names["route"], names["values"]},
    }
    return array(graph, deps, [data, indices], name, out_chunks, data)


def take_local(block: np.ndarray, indices: np.ndarray, axis: int, start: int) -> np.ndarray:
    """GatherElements of counted indices that all fall in one data block, starting at ``start``."""
    return take_along_block(block, indices - start if start else indices, axis)


def take_along_block(block: np.ndarray, indices: np.ndarray, axis: int) -> np.ndarray:
    """GatherElements within one data block that spans the whole axis.

    The NumPy backend's kernel (compiled, or pure NumPy), on indices already counted and
    checked: it reads any strides and any rank (np.take_along_axis stops at 31 index
    arrays on NumPy 1.x, 63 on NumPy 2).
    """
    plan = GatherElementsPlan("GatherElements", False, indices.shape, axis, block.shape[axis], None)
    return numpy_kernels.gather_elements(block, indices, plan)


def gather_local(
    op: str, data: da.Array, indices: da.Array, axis: int, owners: dict[tuple[int, ...], int]
) -> da.Array:
    """GatherElements where each indices block reads one data block: one task per block.

    ``indices`` are counted and aligned with data off ``axis``; ``owners`` maps each
    indices block to the data chunk along ``axis`` its entries all fall in. The task runs
    the NumPy kernel on that data block itself: no data block is moved or merged.
    """
    name = f"{op.lower()}-local-{tokenize(data, indices, owners)}"
    starts = tuple(accumulate(data.chunks[axis], initial=0))
    graph: dict[Any, Any] = {}
    for bi, c in owners.items():
        block = (*bi[:axis], c, *bi[axis + 1 :])
        graph[(name, *bi)] = (
            take_local, (data.name, *block), (indices.name, *bi), axis, starts[c]
        )  # fmt: skip
    deps = {name: {*data.__dask_layers__(), *indices.__dask_layers__()}}
    return array({name: graph}, deps, [data, indices], name, indices.chunks, data)


def array(
    graph: dict[str, dict[Any, Any]],
    deps: dict[str, set[str]],
    inputs: list[da.Array],
    name: str,
    chunks: tuple[tuple[int, ...], ...],
    like: da.Array,
) -> da.Array:
    """A dask array of the layers ``graph`` (whose dependencies are ``deps``) over ``inputs``."""
    import dask.array as da
    from dask.array.utils import meta_from_array

    layers: dict[str, Any] = dict(graph)
    for x in inputs:
        layers.update(x.dask.layers)
        deps = {**x.dask.dependencies, **deps}
    meta = meta_from_array(like, ndim=len(chunks))
    return da.Array(HighLevelGraph(layers, deps), name, chunks=chunks, dtype=like.dtype, meta=meta)


def _apply(fn: Callable[..., Any], args: list[Any], kwargs: dict[str, Any]) -> Any:
    return fn(*args, **kwargs)
