"""ONNX ScatterElements (versions 11, 13, 16, 18): the shape rules and the plan."""

from __future__ import annotations

from typing import Any, NamedTuple

from onnx_gather import _spec
from onnx_gather._spec import reductions


class _Fields(NamedTuple):
    op: str
    check_bounds: bool
    out_shape: tuple[int, ...]  # data's
    axis: int
    size: int
    trim: tuple[int, ...] | None
    reduction: reductions.Reduction


class ScatterElementsPlan(_Fields, _spec.Plan):
    """A checked ScatterElements call; the result has data's shape.

    The result starts as a copy of data; each update lands where GatherElements with the
    same indices would read: for rank 2 and ``axis=1``, ``out[i][indices[i][j]] =
    f(out[i][indices[i][j]], updates[i][j])``, in C order of ``(i, j)``, ``f`` the
    reduction (:class:`~onnx_gather._spec.reductions.Reduction`). Data, indices and updates
    have one rank; indices and updates one shape; off the axis each indices dim is <=
    data's (ONNX Runtime's reading, as for GatherElements).

    ``trim`` is None when off the axis the indices' dims equal data's, else the indices'
    shape (the updates land in that block of data). ``reduction`` is checked for the
    version and data's type.
    """

    __slots__ = ()

    def attributes(self) -> tuple[int, reductions.Reduction]:
        """The attributes that plan this call again: ``(axis, reduction)``, normalised."""
        return (self.axis, self.reduction)


def plan(
    op: _spec.Rules,
    version: int,
    shapes: tuple[tuple[int, ...], ...],
    dtypes: tuple[str, ...],
    attributes: tuple[Any, ...],
    check_bounds: bool,
) -> ScatterElementsPlan:
    """Check a ScatterElements call and return its plan.

    Parameters as for :func:`onnx_gather._spec.gather.plan`, with the shapes and dtypes of
    data, indices and updates; ``attributes`` is ``(axis, reduction)``.

    Raises
    ------
    TypeError
        A data or index type the version does not list, updates of another type than
        data's, or a reduction the data type cannot take.
    ValueError
        0-d data, an axis out of range, an unknown reduction or one the version lacks,
        indices or updates of another rank than data's, updates of another shape than
        the indices', or an indices dim off the axis larger than data's.
    """
    name = op.message_name(version)
    (data_shape, indices_shape, updates_shape) = shapes
    (data_dtype, indices_dtype, updates_dtype) = dtypes
    if not data_shape:
        raise _spec.rank_0(name)
    _spec.check_types(name, version, op.bfloat16_from, data_dtype, indices_dtype)
    reductions.check_updates(name, data_dtype, updates_dtype)
    rank = len(data_shape)
    ax = _spec.normalise_axis(name, attributes[0], rank)
    reduction = reductions.check(name, version, attributes[1], data_dtype)
    if len(indices_shape) != rank:
        msg = (
            f"{name}: indices must have the same rank as data ({rank}), "
            f"got rank {len(indices_shape)} (shape {indices_shape})"
        )
        raise ValueError(msg)
    if updates_shape != indices_shape:
        msg = f"{name}: updates must have the indices' shape {indices_shape}, got {updates_shape}"
        raise ValueError(msg)
    trim = None
    for d, (n_idx, n_data) in enumerate(zip(indices_shape, data_shape, strict=True)):
        if d == ax or n_idx == n_data:
            continue
        if n_idx > n_data:
            msg = (
                f"{name}: indices dim {d} is {n_idx}, larger than data's {n_data}; off the "
                f"axis (axis {ax}) it must be <= data's (indices {indices_shape}, data "
                f"{data_shape})"
            )
            raise ValueError(msg)
        trim = tuple(indices_shape)
    return ScatterElementsPlan(
        name, check_bounds, tuple(data_shape), ax, data_shape[ax], trim, reduction
    )
