"""ONNX GatherElements (versions 11, 13) and OpenVINO GatherElements-6: shapes and the plan."""

from __future__ import annotations

from typing import Any, NamedTuple

from onnx_gather import _spec


class _Fields(NamedTuple):
    op: str
    check_bounds: bool
    out_shape: tuple[int, ...]
    axis: int
    size: int
    trim: tuple[int, ...] | None


class GatherElementsPlan(_Fields, _spec.Plan):
    """A checked GatherElements call; the output has exactly the indices' shape.

    Indices of data's rank, one index per output element, no broadcasting. Off the axis
    each indices dim must be <= data's (ONNX Runtime's and torch's reading of the ONNX
    equations), and equal to data's for OpenVINO's variant (the registry's
    ``equal_off_axis``).

    ``trim`` is None when off the axis the indices' dims equal data's, else the indices'
    shape: the output reads only the block of data of those dims off the axis (all of the
    axis), which :meth:`block` gives as slices.
    """

    __slots__ = ()

    def attributes(self) -> tuple[int, ...]:
        """The attributes that plan this call again: ``(axis,)``, normalised."""
        return (self.axis,)

    def block(self) -> tuple[slice, ...] | None:
        """Slices that cut data to the block the output reads, or None for all of it."""
        if self.trim is None:
            return None
        return tuple(
            slice(None) if d == self.axis else slice(0, n) for d, n in enumerate(self.trim)
        )


def plan(
    op: _spec.Rules,
    version: int,
    shapes: tuple[tuple[int, ...], ...],
    dtypes: tuple[str, ...],
    attributes: tuple[Any, ...],
    check_bounds: bool,
) -> GatherElementsPlan:
    """Check a GatherElements call (ONNX, or OpenVINO's variant) and return its plan.

    Parameters as for :func:`onnx_gather._spec.gather.plan`; ``attributes`` is ``(axis,)``.
    """
    name = op.message_name(version)
    (data_shape, indices_shape), (data_dtype, indices_dtype) = shapes, dtypes
    if not data_shape:
        raise _spec.rank_0(name)
    _spec.check_types(name, version, op.bfloat16_from, data_dtype, indices_dtype)
    rank = len(data_shape)
    ax = _spec.normalise_axis(name, attributes[0], rank)
    if len(indices_shape) != rank:
        msg = (
            f"{name}: indices must have the same rank as data ({rank}), "
            f"got rank {len(indices_shape)} (shape {indices_shape})"
        )
        raise ValueError(msg)
    trim = None
    after = ax + 1
    if indices_shape[:ax] != data_shape[:ax] or indices_shape[after:] != data_shape[after:]:
        # Smaller off the axis (or an error): the output reads a block of data.
        for d, (n_idx, n_data) in enumerate(zip(indices_shape, data_shape, strict=True)):
            if d == ax or n_idx == n_data:
                continue
            if op.equal_off_axis:
                msg = (
                    f"{name}: indices dim {d} is {n_idx} but data's is {n_data}; off the axis "
                    f"(axis {ax}) they must be equal (indices {indices_shape}, data {data_shape})"
                )
                raise ValueError(msg)
            if n_idx > n_data:
                msg = (
                    f"{name}: indices dim {d} is {n_idx}, larger than data's {n_data}; off the "
                    f"axis (axis {ax}) it must be <= data's (indices {indices_shape}, data "
                    f"{data_shape})"
                )
                raise ValueError(msg)
        trim = tuple(indices_shape)
    return GatherElementsPlan(name, check_bounds, tuple(indices_shape), ax, data_shape[ax], trim)
