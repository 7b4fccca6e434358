"""ONNX Gather (versions 1, 11, 13): the shape rule and the plan."""

from __future__ import annotations

from typing import Any, NamedTuple

from onnx_gather import _spec


class _Fields(NamedTuple):
    op: str
    check_bounds: bool
    out_shape: tuple[int, ...]
    axis: int
    size: int


class GatherPlan(_Fields, _spec.Plan):
    """A checked Gather call: ``out_shape = data.shape[:axis] + indices.shape + data.shape[axis+1:]``.

    Every index addresses ``axis``, of ``size`` (see :class:`onnx_gather._spec.Plan`).
    """

    __slots__ = ()

    def attributes(self) -> tuple[int, ...]:
        """The attributes that plan this call again: ``(axis,)``, normalised."""
        return (self.axis,)


def plan(
    op: _spec.Rules,
    version: int,
    shapes: tuple[tuple[int, ...], ...],
    dtypes: tuple[str, ...],
    attributes: tuple[Any, ...],
    check_bounds: bool,
) -> GatherPlan:
    """Check a Gather call and return its plan.

    Parameters
    ----------
    op : Rules
        The operator's registry record: what each version allows, its name in messages.
    version : int
        The Gather version (1, 11 or 13), resolved from the opset.
    shapes, dtypes : tuple
        Of data and indices: shapes as tuples of ints, dtypes as names.
    attributes : tuple
        ``(axis,)``: the axis, in ``[-r, r-1]``.
    check_bounds : bool
        Whether out-of-range indices must raise.
    """
    name = op.message_name(version)
    (data_shape, indices_shape), (data_dtype, indices_dtype) = shapes, dtypes
    if not data_shape:
        raise _spec.rank_0(name)
    _spec.check_types(name, version, op.bfloat16_from, data_dtype, indices_dtype)
    ax = _spec.normalise_axis(name, attributes[0], len(data_shape))
    out_shape = data_shape[:ax] + indices_shape + data_shape[ax + 1 :]
    # Positional: half the cost of keywords, on every uncached call.
    return GatherPlan(name, check_bounds, out_shape, ax, data_shape[ax])
