"""ONNX ScatterND (versions 11, 13, 16, 18): the shape rules and the plan."""

from __future__ import annotations

from typing import Any, NamedTuple

from onnx_gather import _spec
from onnx_gather._spec import reductions


class _Fields(NamedTuple):
    op: str
    check_bounds: bool
    out_shape: tuple[int, ...]  # data's
    axis: int  # 0: coordinate 0 addresses data's first axis
    size: int  # the smallest of sizes
    sizes: tuple[int, ...]
    reduction: reductions.Reduction
    result_shape: tuple[int, ...] | None = None  # (data's, where ``lead``)
    lead: bool = False


class ScatterNDPlan(_Fields, _spec.Plan):
    """A checked ScatterND call.

    The result starts as a copy of data. ``indices`` is a tensor of index tuples: its last
    dim ``k`` holds coordinates into data's first ``k`` dims, coordinate ``j`` addressing
    data axis ``j`` of size ``sizes[j]``, valid in ``[-s, s-1]`` for that size ``s``
    (ScatterND-18's text). Each tuple's update is a slice of data's trailing dims:
    ``out[indices[idx]] = f(out[indices[idx]], updates[idx])`` for every ``idx`` of
    ``indices.shape[:-1]`` in C order, ``f`` the reduction
    (:class:`~onnx_gather._spec.reductions.Reduction`); ``updates.shape ==
    indices.shape[:-1] + data.shape[k:]``.

    Index tuples of length 0 (``k = 0``, which the text bounds only from above and ONNX
    Runtime and the reference evaluator run) each address the whole of data: the plan is
    then one that leads (``lead``), a ``k = 1`` plan of data with a leading axis of size
    1, which every kernel runs as it runs any other.
    """

    __slots__ = ()
    coordinates = True

    def attributes(self) -> tuple[reductions.Reduction]:
        """The attributes that plan this call again: ``(reduction,)``."""
        return (self.reduction,)


def plan(
    op: _spec.Rules,
    version: int,
    shapes: tuple[tuple[int, ...], ...],
    dtypes: tuple[str, ...],
    attributes: tuple[Any, ...],
    check_bounds: bool,
) -> ScatterNDPlan:
    """Check a ScatterND call and return its plan.

    Parameters as for :func:`onnx_gather._spec.gather.plan`, with the shapes and dtypes of
    data, indices and updates; ``attributes`` is ``(reduction,)``.

    Raises
    ------
    TypeError
        A data or index type the version does not list, updates of another type than
        data's, or a reduction the data type cannot take.
    ValueError
        0-d data or indices, an unknown reduction or one the version lacks,
        ``indices.shape[-1]`` above ``r``, or updates of another shape than
        ``indices.shape[:-1] + data.shape[k:]``.
    """
    name = op.message_name(version)
    (data_shape, indices_shape, updates_shape) = shapes
    (data_dtype, indices_dtype, updates_dtype) = dtypes
    if not data_shape:
        raise _spec.rank_0(name)
    _spec.check_types(name, version, op.bfloat16_from, data_dtype, indices_dtype)
    reductions.check_updates(name, data_dtype, updates_dtype)
    reduction = reductions.check(name, version, attributes[0], data_dtype)
    r = len(data_shape)
    if not indices_shape:
        msg = (
            f"{name}: indices must have rank >= 1 (the last dim holds coordinates), got a "
            f"rank-0 array"
        )
        raise ValueError(msg)
    k = indices_shape[-1]
    if not 0 <= k <= r:
        msg = (
            f"{name}: indices.shape[-1] is {k}, the number of coordinates per index; it must "
            f"be in [0, {r}] (data rank {r}); indices {indices_shape}, data {data_shape}"
        )
        raise ValueError(msg)
    want = tuple(indices_shape[:-1]) + tuple(data_shape[k:])
    if tuple(updates_shape) != want:
        msg = (
            f"{name}: updates must have shape indices.shape[:-1] + data.shape[{k}:] = {want}, "
            f"got {tuple(updates_shape)}"
        )
        raise ValueError(msg)
    if k == 0:
        led = (1, *data_shape)
        return ScatterNDPlan(
            name, check_bounds, led, 0, 1, (1,), reduction, tuple(data_shape), True
        )
    sizes = tuple(data_shape[:k])
    return ScatterNDPlan(name, check_bounds, tuple(data_shape), 0, min(sizes), sizes, reduction)
