"""Scatters by data block: each update goes to its data block once, already in apply order."""

from __future__ import annotations

import itertools
import math
from itertools import accumulate
from typing import TYPE_CHECKING, Any

import array_api_compat.numpy as _xp  # NumPy before 2.1 has no np.astype
import dask.array as da
import numpy as np
from dask.base import tokenize

from onnx_gather._backends._dask import _points as points
from onnx_gather._backends._numpy._scatter import write
from onnx_gather._indices import BoundsPolicy, counted

if TYPE_CHECKING:
    from collections.abc import Sequence

    from onnx_gather._spec import Plan
    from onnx_gather._spec.reductions import Reduction
    from onnx_gather._typing import Array, ScatterPlan

#: One piece: the updates of one indices block aimed at one data block, in C order of
#: their positions: rows (of the data block's first ``k`` dims, C order) and values.
Piece = tuple[np.ndarray, np.ndarray]

#: Bytes per update the records plan (:mod:`._scatter`) moves besides its values: its
#: position, ``k`` coordinates and row block, int64 each (two coordinates counted).
RECORD_BYTES = 32


def _checked(block: np.ndarray, plan: Plan, offset: Sequence[int]) -> tuple[Any, Any]:
    """A block counted and checked (errors name whole positions), or marked where to drop.

    Unchecked, the entries out of range are marked to drop (the mask, else None).
    """
    if plan.check_bounds:
        return points.counted_block(block, plan, offset), None
    return counted(_xp, block, plan, BoundsPolicy.DROP)


def route_elements(
    block: np.ndarray,
    updates: np.ndarray,
    plan: Plan,
    offset: Sequence[int],
    axis: int,
    stops: tuple[int, ...],
    shapes: tuple[tuple[int, ...], ...],
) -> list[Piece]:
    """ScatterElements: one indices block's updates split by the data chunk along ``axis``.

    ``shapes[c]``: the shape of the data block of chunk ``c`` at this block's place off
    the axis (which starts where the indices block starts: the inputs are aligned so).
    An update at position ``p`` of the block lands at ``p``'s coordinates with the axis'
    one replaced by its index minus the chunk's start.
    """
    values, keep = _checked(block, plan, offset)
    flat = np.asarray(values).reshape(-1)  # (int32 or int64: counted, so within the axis)
    upd = updates.reshape(-1)
    order = None if keep is None else np.flatnonzero(np.asarray(keep))
    owner = points.owners(flat if order is None else flat[order], stops)
    starts = (0, *stops)
    pieces = []
    for c, chosen in enumerate(points.split(owner, tuple(range(len(stops))))):
        pos = chosen if order is None else order[chosen]
        local = flat[pos] - np.int64(starts[c])
        same = [n == m for n, m in zip(block.shape, shapes[c], strict=True)]
        if all(same[:axis] + same[axis + 1 :]):
            rows = points.element_offsets(pos, local, block.shape, axis, shapes[c][axis])
        else:  # (data's block is larger off the axis: the indices end inside it)
            coords = list(np.unravel_index(pos, block.shape))
            coords[axis] = local
            rows = np.ravel_multi_index(tuple(coords), shapes[c]) if pos.size else pos
        kind = points.small(math.prod(shapes[c]))
        pieces.append((np.asarray(rows).astype(kind), upd[pos]))
    return pieces


def route_nd(
    block: np.ndarray,
    updates: np.ndarray,
    plan: Plan,
    offset: Sequence[int],
    stops: tuple[tuple[int, ...], ...],
    cuts: tuple[tuple[int, ...], ...],
) -> list[Piece]:
    """ScatterND: one indices block's update slices split by the data block they land in.

    Targets: each block of data's ``k`` addressed dims (C order) times each block of its
    trailing dims (whose boundaries are ``cuts``); a piece's values are the slices' part
    in that trailing block.
    """
    values, keep = _checked(block, plan, offset)
    k = len(stops)
    tuples = np.asarray(values).reshape(-1, k)
    slices = updates.reshape((len(tuples), *updates.shape[block.ndim - 1 :]))
    order = None if keep is None else np.flatnonzero(np.asarray(keep))
    owner, rows = points.locate_nd(tuples if order is None else tuples[order], stops)
    blocks = math.prod(len(s) for s in stops)
    trailing = list(itertools.product(*(range(len(c) - 1) for c in cuts)))
    kind = points.small(math.prod(points.widest(s) for s in stops))
    pieces = []
    for chosen in points.split(owner, tuple(range(blocks))):
        pos = chosen if order is None else order[chosen]
        at = rows[chosen].astype(kind)
        for u in trailing:
            box = tuple(slice(c[i], c[i + 1]) for c, i in zip(cuts, u, strict=True))
            width = math.prod(c[i + 1] - c[i] for c, i in zip(cuts, u, strict=True))
            pieces.append((at, slices[(pos, *box)].reshape(len(pos), width)))
    return pieces


def _piece(pieces: list[Piece], i: int) -> Piece:
    """One target's piece: all a join needs of a route."""
    return pieces[i]


def join(block: np.ndarray, pieces: list[Piece], k: int, reduction: Reduction) -> np.ndarray:
    """The data block with its pieces' updates applied in the order given (C order)."""
    out = np.array(block, copy=True, order="C")
    rows = [p[0] for p in pieces if p[0].size]
    if not rows:
        return out
    values = np.concatenate([p[1] for p in pieces if p[0].size])
    if k == out.ndim:
        values = values.reshape(-1)
    width = math.prod(out.shape[k:])
    target = out.reshape(math.prod(out.shape[:k]), width) if k < out.ndim else out.reshape(-1)
    write(target, np.concatenate(rows).astype(np.intp, copy=False), values, None, reduction)
    return out


def _clipped(chunks: tuple[int, ...], n: int) -> tuple[int, ...]:
    """``chunks`` cut to the first ``n`` positions (a chunk boundary past ``n`` moves to it)."""
    stops = [min(s, n) for s in accumulate(chunks)]
    kept = tuple(b - a for a, b in zip((0, *stops), stops, strict=False))
    return tuple(c for c in kept if c) or (0,)


def in_c_order(chunks: tuple[tuple[int, ...], ...]) -> bool:
    """Whether visiting an array's blocks in grid order visits its positions in C order.

    True when the first dim cut in several blocks is preceded only by dims of length 1
    and followed only by dims in one block.
    """
    cut = [d for d, c in enumerate(chunks) if len(c) > 1]
    if not cut:
        return True
    first = cut[0]
    return len(cut) == 1 and all(sum(c) <= 1 for c in chunks[:first])


def scatter(
    data: da.Array, indices: Array, updates: da.Array, plan: ScatterPlan
) -> da.Array | None:
    """ScatterElements or ScatterND by data block, or None where the records plan is better.

    None where it does not apply or moves more than the records plan
    (:func:`._scatter.scatter`).

    Route tasks per indices block (indices counted and checked there) split its updates
    by the data block each lands in, already as rows of that block; a join per data
    block applies the pieces aimed at it in indices-block order. No position is carried
    and nothing is sorted: for ScatterElements the inputs are aligned with data off the
    axis, so updates that meet at one element lie on one line along the axis, whose
    blocks come in C order; for ScatterND the indices' blocks must come in C order
    (:func:`in_c_order`), else None.
    """
    if plan.coordinates:
        return _scatter_nd(data, indices, updates, plan)
    return _scatter_elements(data, indices, updates, plan)


def _scatter_elements(
    data: da.Array, indices: Array, updates: da.Array, plan: ScatterPlan
) -> da.Array | None:
    """ScatterElements by block: inputs cut like data off the axis, a piece per chunk along it."""
    a = plan.axis
    n = data.numblocks[a]
    shape = tuple(int(s) for s in updates.shape)
    chunks = {d: _clipped(data.chunks[d], shape[d]) for d in range(data.ndim) if d != a}
    updates = updates.rechunk(chunks)
    if isinstance(indices, np.ndarray):
        indices = da.from_array(indices, chunks=updates.chunks)
    else:
        indices = indices.rechunk(updates.chunks)
    blocks = math.prod(indices.numblocks)
    if not _cheaper(updates, updates.size, blocks, n, data, stages=1):
        return None
    stops = tuple(accumulate(data.chunks[a]))
    starts = [tuple(accumulate(c, initial=0)) for c in indices.chunks]
    name, route, piece = _names("scatterelements", data, indices, updates, plan)
    graph: dict[str, dict[Any, Any]] = {name: {}, route: {}, piece: {}}
    aimed: dict[tuple[int, ...], list[Any]] = {}
    for bi in np.ndindex(*indices.numblocks):
        offset = tuple(starts[d][b] for d, b in enumerate(bi))
        shapes = tuple(
            tuple(data.chunks[d][b] if d != a else data.chunks[a][c] for d, b in enumerate(bi))
            for c in range(n)
        )
        rkey = (route, *bi)
        graph[route][rkey] = (
            _apply, route_elements, [(indices.name, *bi), (updates.name, *bi)],
            {"plan": plan, "offset": offset, "axis": a, "stops": stops, "shapes": shapes},
        )  # fmt: skip
        for c in range(n):
            pkey = (piece, *bi, c)
            graph[piece][pkey] = (_piece, rkey, c)
            aimed.setdefault((*bi[:a], c, *bi[a + 1 :]), []).append(pkey)
    for bo in np.ndindex(*data.numblocks):
        graph[name][(name, *bo)] = (
            join,
            (data.name, *bo),
            aimed.get(bo, []),
            data.ndim,
            plan.reduction,
        )
    return _result(graph, name, data, indices, updates)


def _scatter_nd(
    data: da.Array, indices: Array, updates: da.Array, plan: ScatterPlan
) -> da.Array | None:
    """ScatterND by block: index tuples whole, a piece per data block (row and trailing)."""
    k = len(plan.sizes)
    lead = updates.ndim - (data.ndim - k)  # indices.ndim - 1
    updates = updates.rechunk({d: -1 for d in range(lead, updates.ndim)})
    whole = (*updates.chunks[:lead], (k,))
    if isinstance(indices, np.ndarray):
        indices = da.from_array(indices, chunks=whole)
    else:
        indices = indices.rechunk(whole)
    if not in_c_order(indices.chunks[:-1]):
        return None
    rows = math.prod(data.numblocks[:k])
    blocks = math.prod(indices.numblocks)
    trailing_blocks = math.prod(data.numblocks[k:])
    count = math.prod(indices.shape[:-1])
    if not _cheaper(updates, count, blocks, rows * trailing_blocks, data, 2 + trailing_blocks):
        return None
    stops = tuple(tuple(accumulate(data.chunks[d])) for d in range(k))
    cuts = tuple(tuple(accumulate(data.chunks[d], initial=0)) for d in range(k, data.ndim))
    starts = [tuple(accumulate(c, initial=0)) for c in indices.chunks]
    name, route, piece = _names("scatter-nd", data, indices, updates, plan)
    graph: dict[str, dict[Any, Any]] = {name: {}, route: {}, piece: {}}
    aimed: dict[tuple[int, ...], list[Any]] = {}
    targets = list(np.ndindex(*data.numblocks))  # (C order: row blocks, then trailing)
    for bi in np.ndindex(*indices.numblocks):
        offset = tuple(starts[d][b] for d, b in enumerate(bi))
        rkey = (route, *bi)
        ub = (*bi[:-1], *(0,) * (updates.ndim - lead))
        graph[route][rkey] = (
            _apply, route_nd, [(indices.name, *bi), (updates.name, *ub)],
            {"plan": plan, "offset": offset, "stops": stops, "cuts": cuts},
        )  # fmt: skip
        for i, bo in enumerate(targets):
            pkey = (piece, *bi, i)
            graph[piece][pkey] = (_piece, rkey, i)
            aimed.setdefault(bo, []).append(pkey)
    for bo in targets:
        graph[name][(name, *bo)] = (join, (data.name, *bo), aimed[bo], k, plan.reduction)
    return _result(graph, name, data, indices, updates)


def _cheaper(
    updates: da.Array, count: int, blocks: int, reach: int, data: da.Array, stages: int
) -> bool:
    """Whether routing ``count`` updates by data block moves fewer bytes than the records plan.

    By block, each update's values and a row (4 bytes) move once, in a route and a piece
    task per indices block and target; the records plan moves each update's values and
    :data:`RECORD_BYTES` ``stages`` times (ScatterND's shuffle has two stages, and each
    join of a row block reads the row block's updates whole), in about a task per indices
    block and data block per stage.
    """
    by_block = updates.nbytes + 4 * count + points.TASK_BYTES * blocks * (1 + reach)
    tasks = stages * (blocks + math.prod(data.numblocks))
    records = stages * (updates.nbytes + RECORD_BYTES * count) + points.TASK_BYTES * tasks
    return bool(by_block <= records)


def _names(prefix: str, *inputs: Any) -> tuple[str, str, str]:
    """The layers' names: the joins (the result's), the routes, the pieces."""
    token = tokenize(*inputs)
    return f"{prefix}-{token}", f"{prefix}-route-{token}", f"{prefix}-piece-{token}"


def _result(
    graph: dict[str, dict[Any, Any]],
    name: str,
    data: da.Array,
    indices: da.Array,
    updates: da.Array,
) -> da.Array:
    """The joins' array (data's chunks), over the route and piece layers of ``graph``."""
    route, piece = (n for n in graph if n != name)
    deps = {
        route: {*indices.__dask_layers__(), *updates.__dask_layers__()},
        piece: {route},
        name: {piece, *data.__dask_layers__()},
    }
    return points.array(graph, deps, [data, indices, updates], name, data.chunks, data)


def _apply(fn: Any, args: list[Any], kwargs: dict[str, Any]) -> Any:
    return fn(*args, **kwargs)
