"""OpenVINO's scatters: ScatterUpdate-3, ScatterElementsUpdate-3/12, ScatterNDUpdate-3/15.

Their shape rules and plans. Each plan carries ``inner``, the ONNX ScatterElements or
ScatterND plan (named as the OpenVINO operator, for messages) whose kernel computes it:
OpenVINO's reductions are ONNX's under other names, and ``sub``, ``mean`` and
``use_init_val`` are a few ONNX scatters in a row (:class:`OpenVINOScatterPlan`).
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

from onnx_gather import _spec
from onnx_gather._spec import reductions, scatter_elements, scatter_nd
from onnx_gather._spec.reductions import Reduction
from onnx_gather._spec.scatter import Named
from onnx_gather._spec.scatter_elements import ScatterElementsPlan
from onnx_gather._spec.scatter_nd import ScatterNDPlan

#: The ONNX version whose rules (shapes, types, reductions) the inner plans follow.
_ONNX_RULES = 18

#: Each OpenVINO reduction and the ONNX reduction its kernel runs: ``sub`` adds the
#: negated updates (bool: XOR, counted), ``mean`` adds, then divides by the count.
ONNX_REDUCTION = {
    "none": Reduction.NONE,
    "sum": Reduction.ADD,
    "sub": Reduction.ADD,
    "prod": Reduction.MUL,
    "min": Reduction.MIN,
    "max": Reduction.MAX,
    "mean": Reduction.ADD,
}
#: The reductions of ScatterElementsUpdate-12 and ScatterNDUpdate-15, in their texts' order.
ELEMENTS_REDUCTIONS = ("none", "sum", "prod", "min", "max", "mean")
ND_REDUCTIONS = ("none", "sum", "sub", "prod", "min", "max")


class _UpdateFields(NamedTuple):
    op: str
    check_bounds: bool
    out_shape: tuple[int, ...]  # data's
    axis: int
    size: int
    inner: ScatterElementsPlan  # unchecked: the call's indices are checked before it runs
    index_shape: tuple[int, ...]  # the indices, flattened, shaped to broadcast over updates
    updates_shape: tuple[int, ...]  # the updates with the indices' dims flattened into one


class ScatterUpdatePlan(_UpdateFields, _spec.Plan):
    """A checked OpenVINO ScatterUpdate-3 call.

    ``out[p, indices[i], q] = updates[p, i, q]`` for every position ``i`` of ``indices``
    (any rank), ``p`` of ``data.shape[:axis]`` and ``q`` of ``data.shape[axis+1:]``:
    ``updates.shape == data.shape[:axis] + indices.shape + data.shape[axis+1:]``. Indices
    lie in ``[0, s-1]``: a negative one is an error too (the text and the runtime).
    Duplicates: the last in C order of the indices wins.

    The kernel runs ``inner``, ScatterElements along ``axis`` of the updates with the
    indices' dims flattened into one (``updates_shape``) and the flattened indices
    (shaped ``index_shape``) broadcast to them; it gets indices already checked, or with
    the negative ones moved out of range, so that unchecked they are dropped.
    """

    __slots__ = ()

    def attributes(self) -> tuple[int]:
        """The attributes that plan this call again: ``(axis,)``, normalised."""
        return (self.axis,)

    def lowest(self, size: int) -> int:
        """The smallest valid index: 0."""
        return 0

    def admits(self, lo: int, hi: int) -> bool:
        return lo >= 0 and hi < self.size

    def outside(self, indices: Any, xp: Any = None) -> Any:
        return (indices < 0) | (indices >= self.size)


def update_plan(
    op: _spec.Rules,
    version: int,
    shapes: tuple[tuple[int, ...], ...],
    dtypes: tuple[str, ...],
    attributes: tuple[Any, ...],
    check_bounds: bool,
) -> ScatterUpdatePlan:
    """Check an OpenVINO ScatterUpdate-3 call and return its plan.

    ``attributes`` is ``(axis,)``.

    Raises
    ------
    TypeError
        A data or index type the operator does not take, or updates of another type.
    ValueError
        0-d data, an axis out of range, or updates of another shape than
        ``data.shape[:axis] + indices.shape + data.shape[axis+1:]``.
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
    before, after = tuple(data_shape[:ax]), tuple(data_shape[ax + 1 :])
    want = before + tuple(indices_shape) + after
    if tuple(updates_shape) != want:
        msg = (
            f"{name}: updates must have shape data.shape[:{ax}] + indices.shape + "
            f"data.shape[{ax + 1}:] = {want}, got {tuple(updates_shape)}"
        )
        raise ValueError(msg)
    count = math.prod(indices_shape)
    flat = (*before, count, *after)
    size = data_shape[ax]
    inner = ScatterElementsPlan(name, False, tuple(data_shape), ax, size, None, Reduction.NONE)
    index_shape = (1,) * ax + (count,) + (1,) * len(after)
    return ScatterUpdatePlan(
        name, check_bounds, tuple(data_shape), ax, size, inner, index_shape, flat
    )


class _ReducedFields(NamedTuple):
    op: str
    check_bounds: bool
    out_shape: tuple[int, ...]  # data's
    axis: int
    size: int
    sizes: tuple[int, ...]
    reduction: str  # OpenVINO's name: none, sum, sub, prod, min, max, mean
    use_init_val: bool
    inner: ScatterElementsPlan | ScatterNDPlan  # the ONNX scatter, checked as the call
    given: tuple[Any, ...]  # the attributes, normalised, in the registry's order


class OpenVINOScatterPlan(_ReducedFields, _spec.Plan):
    """A checked OpenVINO ScatterElementsUpdate-3/12 or ScatterNDUpdate-3/15 call.

    The values are ONNX ScatterElements' or ScatterND's (``inner``, of the ONNX reduction
    :data:`ONNX_REDUCTION` names; negative indices count from the end in every version, as
    the runtime reads them), one update at a time in C order, each step rounded in data's
    dtype, with:

    - ``sub``: ``out -= update``; bool: XOR;
    - ``mean`` (not bool): the touched element's updates (and its value, with
      ``use_init_val``) added in that order, then divided once by their count; integers
      round down (toward -inf), floats to nearest;
    - ``use_init_val=False``: a touched element starts from the reduction's identity (0;
      1 for prod; -inf or the type's smallest for max; +inf or its largest for min; bool:
      False, True for prod and min), not from data.
    """

    __slots__ = ()

    @property
    def coordinates(self) -> bool:  # type: ignore[override]
        return self.inner.coordinates

    def attributes(self) -> tuple[Any, ...]:
        """The attributes that plan this call again, in the registry's order."""
        return self.given

    def steps(self) -> int:
        """How many ONNX scatters the call takes: 1 for a plain reduction."""
        plain = self.reduction != "mean" and (self.use_init_val or self.reduction == "none")
        return 1 if plain else 2


def _reduction(
    name: str, version: int, since: int, allowed: tuple[str, ...], reduction: Any, data_dtype: str
) -> str:
    """OpenVINO's ``reduction`` checked for the version and data's type."""
    if not isinstance(reduction, str):
        msg = (
            f"{name}: reduction must be a str, got {reduction!r} of type {type(reduction).__name__}"
        )
        raise TypeError(msg)
    text: str = str(reduction)
    if text not in allowed:
        msg = f"{name}: unknown reduction {text!r}; valid: {', '.join(map(repr, allowed))}"
        raise ValueError(msg)
    if text != "none" and version < since:
        msg = (
            f"{name}: reduction {text!r} needs version {since} or newer; version "
            f"{version} has 'none' only"
        )
        raise ValueError(msg)
    if text != "none" and data_dtype == "string":
        msg = f"{name}: reduction {text!r} needs numbers; string data takes reduction 'none' only"
        raise TypeError(msg)
    if text in ("min", "max") and data_dtype.startswith("complex"):
        msg = f"{name}: reduction {text!r} needs ordered values; {data_dtype} data has no order"
        raise TypeError(msg)
    if text == "mean" and (data_dtype == "bool" or data_dtype.startswith("complex")):
        why = (
            "the text gives bool no mean"
            if data_dtype == "bool"
            else "OpenVINO has no complex types"
        )
        msg = f"{name}: reduction 'mean' does not take {data_dtype} data ({why})"
        raise TypeError(msg)
    return text


def elements_plan(
    op: _spec.Rules,
    version: int,
    shapes: tuple[tuple[int, ...], ...],
    dtypes: tuple[str, ...],
    attributes: tuple[Any, ...],
    check_bounds: bool,
) -> OpenVINOScatterPlan:
    """Check an OpenVINO ScatterElementsUpdate-3/12 call and return its plan.

    ``attributes`` is ``(axis, reduction, use_init_val)``. The shape rules are ONNX
    ScatterElements' (off the axis the indices' dims may be smaller than data's).

    Raises
    ------
    TypeError
        A data or index type the operator does not take, updates of another type, a
        reduction the data type cannot take, a ``use_init_val`` that is not a bool.
    ValueError
        As ONNX ScatterElements; an unknown reduction, or a reduction or
        ``use_init_val=False`` before version 12.
    """
    name = op.message_name(version)
    reduction = _reduction(name, version, 12, ELEMENTS_REDUCTIONS, attributes[1], dtypes[0])
    use_init_val = _init(name, version, 12, attributes[2])
    named = Named(op, version)
    inner = scatter_elements.plan(
        named, _ONNX_RULES, shapes, dtypes, (attributes[0], ONNX_REDUCTION[reduction]),
        check_bounds,
    )  # fmt: skip
    given = (inner.axis, reduction, use_init_val)
    return OpenVINOScatterPlan(
        name, check_bounds, inner.out_shape, inner.axis, inner.size, inner.sizes, reduction,
        use_init_val, inner, given,
    )  # fmt: skip


def nd_plan(
    op: _spec.Rules,
    version: int,
    shapes: tuple[tuple[int, ...], ...],
    dtypes: tuple[str, ...],
    attributes: tuple[Any, ...],
    check_bounds: bool,
) -> OpenVINOScatterPlan:
    """Check an OpenVINO ScatterNDUpdate-3/15 call and return its plan.

    ``attributes`` is ``(reduction,)``. The shape rules are ONNX ScatterND's.

    Raises
    ------
    TypeError
        A data or index type the operator does not take, updates of another type, or a
        reduction the data type cannot take.
    ValueError
        As ONNX ScatterND; an unknown reduction, or a reduction before version 15.
    """
    name = op.message_name(version)
    reduction = _reduction(name, version, 15, ND_REDUCTIONS, attributes[0], dtypes[0])
    if len(shapes[1]) and shapes[1][-1] == 0:
        # (ONNX ScatterND runs them; OpenVINO's CPU runtime returns data unchanged)
        msg = (
            f"{name}: indices.shape[-1] is 0; index tuples of length 0 are ONNX ScatterND's "
            f"alone: it must be in [1, {len(shapes[0])}] here"
        )
        raise ValueError(msg)
    named = Named(op, version)
    inner = scatter_nd.plan(
        named, _ONNX_RULES, shapes, dtypes, (ONNX_REDUCTION[reduction],), check_bounds
    )
    return OpenVINOScatterPlan(
        name, check_bounds, inner.out_shape, inner.axis, inner.size, inner.sizes, reduction,
        True, inner, (reduction,),
    )  # fmt: skip


def _init(name: str, version: int, since: int, value: Any) -> bool:
    """``use_init_val`` as a bool, strictly (a recorded graph turns its integer back first)."""
    flag = _spec.check_flag("use_init_val", value)
    if not flag and version < since:
        msg = f"{name}: use_init_val=False needs version {since} or newer"
        raise ValueError(msg)
    return flag
