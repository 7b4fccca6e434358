"""ONNX Gather (versions 1, 11, 13) and OpenVINO's Gather-7/8: the shape rules and the plans."""

from __future__ import annotations

from typing import Any, NamedTuple

from onnx_gather import _spec
from onnx_gather._spec.gather_nd import GatherNDPlan


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


class _OpenVINOFields(NamedTuple):
    op: str
    check_bounds: bool
    out_shape: tuple[int, ...]
    axis: int
    size: int
    batch_dims: int
    negatives: bool  # Gather-8: [-s, s-1]; Gather-7: [0, s-1]
    inner: GatherPlan | GatherNDPlan  # the in-range gather the kernel runs
    mask_shape: tuple[int, ...]  # indices' validity, shaped to broadcast over out_shape
    moved: tuple[int, ...] | None  # inner's output dims in out_shape's order (None: as is)


class OpenVINOGatherPlan(_OpenVINOFields, _spec.Plan):
    """A checked OpenVINO Gather-7/8 call.

    ``out[p_0, ..., p_{axis-1}, i_b, ..., i_{M-1}, p_{axis+1}, ...] = data[p_0, ...,
    p_{axis-1}, indices[p_0, ..., p_{b-1}, i_b, ..., i_{M-1}], p_{axis+1}, ...]``, of shape
    ``data.shape[:axis] + indices.shape[b:] + data.shape[axis+1:]``, where ``b`` is
    ``batch_dims``. An index outside ``[-s, s-1]`` (Gather-8) or ``[0, s-1]`` (Gather-7,
    whose runtime reads negatives so) gives zeros: the operator defines that value, so it
    is never an error and the call has no ``check_bounds``.

    The kernel reads the valid indices with ``inner``, an ONNX Gather plan (``b = 0``)
    or a GatherND plan of one coordinate and ``b`` batch dims over data with ``axis``
    moved to ``b``, whose output dims ``moved`` puts back in order; then writes zeros
    where ``indices`` (reshaped to ``mask_shape``) was out of range.
    """

    __slots__ = ()

    def attributes(self) -> tuple[int, int]:
        """The attributes that plan this call again: ``(axis, batch_dims)``, normalised."""
        return (self.axis, self.batch_dims)


def openvino_plan(
    op: _spec.Rules,
    version: int,
    shapes: tuple[tuple[int, ...], ...],
    dtypes: tuple[str, ...],
    attributes: tuple[Any, ...],
    check_bounds: bool,
) -> OpenVINOGatherPlan:
    """Check an OpenVINO Gather-7/8 call and return its plan.

    ``attributes`` is ``(axis, batch_dims)``. ``batch_dims`` lies in ``[-q, q]`` for
    indices of rank ``q`` (a negative one counts from ``q``, as the texts and the runtime
    say), at most ``axis``, and data and indices share their first ``batch_dims`` dims.
    ``check_bounds`` is ignored: no index is an error.

    Raises
    ------
    TypeError
        A data or index type the operator does not take; an ``axis`` or ``batch_dims``
        that is not an int.
    ValueError
        0-d data; ``axis`` or ``batch_dims`` out of range; ``batch_dims`` above ``axis``;
        batch dims of data and indices that differ.
    """
    name = op.message_name(version)
    (data_shape, indices_shape), (data_dtype, indices_dtype) = shapes, dtypes
    if not data_shape:
        raise _spec.rank_0(name)
    _spec.check_types(name, version, op.bfloat16_from, data_dtype, indices_dtype)
    r, q = len(data_shape), len(indices_shape)
    ax = _spec.normalise_axis(name, attributes[0], r)
    given = _spec.integer(name, "batch_dims", attributes[1])
    if not -q <= given <= q:
        msg = (
            f"{name}: batch_dims {given} is out of range for indices of rank {q} "
            f"(allowed [{-q}, {q}])"
        )
        raise ValueError(msg)
    b = given + q if given < 0 else given
    if b > ax:
        msg = (
            f"{name}: batch_dims {given} (normalised {b}) must not exceed axis {ax} "
            f"(normalised), for data of rank {r}"
        )
        raise ValueError(msg)
    _spec.check_batch_dims(name, b, data_shape, indices_shape)
    size = data_shape[ax]
    before, after = data_shape[b:ax], data_shape[ax + 1 :]
    out_shape = data_shape[:ax] + indices_shape[b:] + data_shape[ax + 1 :]
    mask_shape = indices_shape[:b] + (1,) * len(before) + indices_shape[b:] + (1,) * len(after)
    inner: GatherPlan | GatherNDPlan
    moved = None
    if b == 0:
        inner = GatherPlan(name, False, out_shape, ax, size)
    else:
        # GatherND of one coordinate over data with axis moved to b: its output is
        # indices.shape + data.shape[b:axis] + data.shape[axis+1:]; ``moved`` puts
        # data.shape[b:axis] back before indices.shape[b:].
        inner_shape = indices_shape + before + after
        inner = GatherNDPlan(name, False, inner_shape, b, size, (size,), b)
        if before:
            at = len(indices_shape)
            moved = (
                tuple(range(b)) + tuple(range(at, at + len(before))) + tuple(range(b, at))
                + tuple(range(at + len(before), len(inner_shape)))
            )  # fmt: skip
    return OpenVINOGatherPlan(
        name, check_bounds, out_shape, ax, size, b, version >= 8, inner, mask_shape, moved
    )
