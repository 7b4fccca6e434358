"""Where index tuples and indices point in data seen as rows or flattened (array API)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from onnx_gather._indices import INT32_MAX

if TYPE_CHECKING:
    from onnx_gather._typing import Array


def tuple_rows(xp: Any, indices: Array, sizes: tuple[int, ...], b: int, where: Any) -> Any:
    """The row each index tuple addresses, of data seen as ``(batch * prod(sizes), rest)``.

    ``indices`` are counted (in range); their last dim holds one coordinate per size,
    their first ``b`` dims are the batch dims (data's first ``b``); the result has the
    shape ``indices.shape[:-1]``, int64 where the rows exceed int32's range.
    """
    k = len(sizes)
    batch = math.prod(indices.shape[:b])
    cells = math.prod(sizes)
    linear = xp.astype(indices[..., 0], xp.int64) if _wide((batch, cells)) else indices[..., 0]
    for j in range(1, k):
        linear = linear * sizes[j] + indices[..., j]
    if b:
        # The batch position of every tuple, times the cells of one batch entry.
        lead = xp.reshape(
            xp.arange(batch, dtype=linear.dtype, device=where),
            tuple(indices.shape[:b]) + (1,) * (indices.ndim - 1 - b),
        )
        linear = linear + lead * cells
    return linear


def _wide(data_shape: Sequence[Any]) -> bool:
    """Whether data has more elements than int32 counts.

    A symbolic count (``jax.export``) cannot be compared: its indices keep their type.
    """
    total = math.prod(data_shape)
    return type(total) is int and total > INT32_MAX


def element_positions(
    xp: Any, indices: Array, data_shape: tuple[int, ...], axis: int, where: Any
) -> Any:
    """Where each of ``indices`` points in data flattened in C order (their shape).

    The element-wise pairing of GatherElements and ScatterElements: the index at position
    ``p`` of ``indices`` (counted, in range) addresses ``p`` with ``p[axis]`` replaced by
    it. ``indices`` may be smaller than data off the axis. In the indices' type, int64
    where data has more elements than int32 counts (a library without int64, JAX without
    x64, then keeps int32 and never gets such data).
    """
    shape = tuple(indices.shape)
    strides = [1] * len(shape)
    for d in range(len(shape) - 2, -1, -1):
        strides[d] = strides[d + 1] * data_shape[d + 1]
    linear = (xp.astype(indices, xp.int64) if _wide(data_shape) else indices) * strides[axis]
    for d, n in enumerate(shape):
        if d == axis or n == 1:
            continue
        coord = xp.reshape(
            xp.arange(n, dtype=linear.dtype, device=where),
            tuple(n if e == d else 1 for e in range(len(shape))),
        )
        linear = linear + coord * strides[d]
    return linear
