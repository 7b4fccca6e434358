"""ONNX GatherND (versions 11, 12, 13) and OpenVINO's GatherND-5/8: the shape rules and the plan."""

from __future__ import annotations

import math
from typing import Any, NamedTuple

from onnx_gather import _spec


class _Fields(NamedTuple):
    op: str
    check_bounds: bool
    out_shape: tuple[int, ...]
    axis: int  # = batch_dims: the axis coordinate 0 addresses
    size: int  # the smallest of sizes (0 for none)
    sizes: tuple[int, ...]
    batch_dims: int
    result_shape: tuple[int, ...] | None = None  # (OpenVINO GatherND-5: see Plan)


class GatherNDPlan(_Fields, _spec.Plan):
    """A checked GatherND call.

    ``indices`` is a tensor of index tuples: its last dim ``k`` holds coordinates into the
    ``k`` data dims after the ``b = batch_dims`` leading ones, which data and indices
    share. Coordinate ``j`` addresses data axis ``axis + j`` (``axis`` is ``batch_dims``)
    of size ``sizes[j]`` and is valid in ``[-s, s-1]`` for that size ``s`` (ScatterND-18's
    text says so of its twin; ONNX Runtime's CPU kernel reads GatherND so). Each index
    tuple selects the slice ``data[batch, i_0, ..., i_{k-1}, ...]``:
    ``out[batch, j..., rest...] = data[batch, indices[batch, j..., 0], ...,
    indices[batch, j..., k-1], rest...]``, of shape ``indices.shape[:-1] +
    data.shape[b+k:]``.
    """

    __slots__ = ()
    coordinates = True

    def attributes(self) -> tuple[int, ...]:
        """The attributes that plan this call again: ``(batch_dims,)``."""
        return (self.batch_dims,)


def plan(
    op: _spec.Rules,
    version: int,
    shapes: tuple[tuple[int, ...], ...],
    dtypes: tuple[str, ...],
    attributes: tuple[Any, ...],
    check_bounds: bool,
) -> GatherNDPlan:
    """Check a GatherND call and return its plan.

    Parameters as for :func:`onnx_gather._spec.gather.plan`; ``attributes`` is
    ``(batch_dims,)``.

    Raises
    ------
    TypeError
        A data or index type the version does not list, or a ``batch_dims`` that is not
        an int.
    ValueError
        0-d data or indices; ``batch_dims`` other than 0 before version 12, negative, or
        not below both ranks; data and indices that differ in a batch dim; or
        ``indices.shape[-1]`` outside ``[1, r - batch_dims]``.
    """
    name = op.message_name(version)
    (data_shape, indices_shape), (data_dtype, indices_dtype) = shapes, dtypes
    if not data_shape:
        raise _spec.rank_0(name)
    _spec.check_types(name, version, op.bfloat16_from, data_dtype, indices_dtype)
    b = _spec.integer(name, "batch_dims", attributes[0])
    since = op.attribute_since.get("batch_dims", 0)
    if b != 0 and version < since:
        msg = (
            f"{name}: batch_dims {b} needs version {since} or newer (opset {since}); "
            f"version {version} has no batch_dims"
        )
        raise ValueError(msg)
    r, q = len(data_shape), len(indices_shape)
    if not q:
        msg = f"{name}: indices must have rank >= 1 (the last dim holds coordinates), got a rank-0 array"
        raise ValueError(msg)
    if not 0 <= b < min(q, r):
        msg = (
            f"{name}: batch_dims {b} is out of range: it must be >= 0 and below both ranks "
            f"(data {r}, indices {q})"
        )
        raise ValueError(msg)
    _spec.check_batch_dims(name, b, data_shape, indices_shape)
    k = indices_shape[-1]
    if not 1 <= k <= r - b:
        msg = (
            f"{name}: indices.shape[-1] is {k}, the number of coordinates per index; it must "
            f"be in [1, {r - b}] (data rank {r} - batch_dims {b}); indices {indices_shape}, "
            f"data {data_shape}"
        )
        raise ValueError(msg)
    sizes = tuple(data_shape[b : b + k])
    out_shape = tuple(indices_shape[:-1]) + tuple(data_shape[b + k :])
    return GatherNDPlan(name, check_bounds, out_shape, b, min(sizes), sizes, b)


def openvino_plan(
    op: _spec.Rules,
    version: int,
    shapes: tuple[tuple[int, ...], ...],
    dtypes: tuple[str, ...],
    attributes: tuple[Any, ...],
    check_bounds: bool,
) -> GatherNDPlan:
    """Check an OpenVINO GatherND-5/8 call and return its plan.

    The rules and values of ONNX GatherND-13 (OpenVINO's runtime also refuses batch dims
    that differ, which GatherND-8's text calls broadcastable, and counts negative indices
    from the end in both versions). Version 5 flattens the ``b`` batch dims of the output
    into one of their product (its text: ``indices.shape[:b]`` "flattened"); version 8
    keeps them. The same elements in the same order: the kernel computes GatherND-13's
    ``out_shape``, and the result is given the plan's ``result_shape``.
    """
    planned = plan(op, version, shapes, dtypes, attributes, check_bounds)
    b = planned.batch_dims
    if version >= 8 or b < 2:
        return planned
    out = planned.out_shape
    return planned._replace(result_shape=(math.prod(out[:b]), *out[b:]))
