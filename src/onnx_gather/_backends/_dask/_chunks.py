"""The Dask backend's chunk sizes: how data and indices are cut before the tasks are built."""

from __future__ import annotations

from math import prod
from typing import TYPE_CHECKING, Any

import dask
import numpy as np
from dask.array.core import normalize_chunks
from dask.utils import parse_bytes

if TYPE_CHECKING:
    from collections.abc import Iterable

    import dask.array as da


def largest_block(chunks: Iterable[tuple[int, ...]]) -> int:
    """Return the number of elements in the largest block that ``chunks`` make.

    Parameters
    ----------
    chunks : iterable of tuple of int
        Block sizes, one tuple per dimension, as in ``dask.array.Array.chunks``.

    Returns
    -------
    int
        The product of the largest block size of each dimension.
    """
    return prod(max(c, default=0) for c in chunks)


def _axis_budget(data: da.Array, axis: int) -> int:
    """How many positions along ``axis`` data's largest off-axis block may span in the budget."""
    budget = parse_bytes(dask.config.get("array.chunk-size"))
    off_axis = largest_block(c for d, c in enumerate(data.chunks) if d != axis)
    return budget // max(1, off_axis * data.dtype.itemsize)


def merge_along_axis(data: da.Array, axis: int) -> da.Array:
    """Return ``data`` with its chunks along ``axis`` merged as far as the budget allows.

    Gather's output block is data's *off-axis block* (its extent in every dimension but
    the axis) once per index of one indices block; two choices keep it within dask's
    ``array.chunk-size``, counted for data's largest off-axis block: this one, and how the
    indices are cut (:func:`index_chunks`). Each data chunk along the axis multiplies
    Gather's tasks (:meth:`onnx_gather._backends._dask.DaskBackend.gather`), so data is
    merged along it as far as the budget allows; the caller's chunks are never split.

    Parameters
    ----------
    data : dask.array.Array
        The data.
    axis : int
        The gather axis, in ``[0, data.ndim)``.

    Returns
    -------
    dask.array.Array
        ``data`` itself when it is in one chunk along ``axis`` or the budget holds no
        longer chunk than it has; else ``data`` rechunked along ``axis`` only.
    """
    if data.numblocks[axis] == 1:
        return data
    length = _axis_budget(data, axis)
    if length <= max(data.chunks[axis]):
        return data  # never split the caller's chunks
    return data.rechunk({axis: min(length, data.shape[axis])})


def index_chunks(shape: tuple[int, ...], data: da.Array, axis: int) -> tuple[Any, ...]:
    """Return chunks for Gather's indices that keep each output block within the budget.

    Parameters
    ----------
    shape : tuple of int
        The indices' shape.
    data : dask.array.Array
        The data, already merged along ``axis`` (:func:`merge_along_axis`).
    axis : int
        The gather axis, in ``[0, data.ndim)``.

    Returns
    -------
    tuple of tuple of int
        Chunks for ``shape`` whose blocks hold at most as many indices as the budget has
        room for copies of data's largest off-axis block, and at least one index.
    """
    per_block = max(1, _axis_budget(data, axis))
    if prod(shape) <= per_block:
        return tuple((n,) for n in shape)
    return normalize_chunks("auto", shape, limit=per_block * 8, dtype=np.int64)  # 8: bytes


def like_data(data: da.Array) -> tuple[int, ...]:
    """Return chunks for GatherElements' host indices: data's first block shape (at least 1).

    Cut so, the indices' blocks line up with data's off the axis.
    """
    return tuple(max(1, c[0]) for c in data.chunks)


def aligned(data: da.Array, indices: da.Array, axis: int) -> tuple[da.Array, da.Array]:
    """Return GatherElements' inputs rechunked so that each indices block meets one data block.

    Data whole along the axis and, off it, in the same chunks as the indices.

    Parameters
    ----------
    data, indices : dask.array.Array
        The inputs; off ``axis`` they have the same shape.
    axis : int
        The gather axis, in ``[0, data.ndim)``.

    Returns
    -------
    data, indices : dask.array.Array
        ``data`` in one chunk along ``axis``; ``indices`` in data's chunks off ``axis``,
        keeping their own along it.
    """
    if data.numblocks[axis] != 1:
        data = data.rechunk({axis: -1})
    indices = indices.rechunk({d: data.chunks[d] for d in range(data.ndim) if d != axis})
    return data, indices
