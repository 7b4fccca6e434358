"""The rules every operator of the family shares, written once; one module per operator.

Plain Python values only (shapes as tuples of ints, dtypes as names such as ``"bfloat16"``);
no framework is imported. The range rule: :class:`Plan`; its one message: :func:`out_of_range`.
"""

from __future__ import annotations

import operator
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

    import numpy as np

#: ONNX ``Tind``: ONNX lists int32 and int64 for Gather and GatherElements, int64 alone
#: for GatherND; int32 is accepted everywhere (JAX's default integer, exact in int64).
INDEX_TYPES = frozenset({"int32", "int64"})

#: ONNX ``T`` of every operator of the family before bfloat16 was added.
DATA_TYPES = frozenset(
    {
        "bool",
        "int8",
        "int16",
        "int32",
        "int64",
        "uint8",
        "uint16",
        "uint32",
        "uint64",
        "float16",
        "float32",
        "float64",
        "complex64",
        "complex128",
        "string",
    }
)
#: With bfloat16 (ONNX version 13 of each operator; OpenVINO's "any supported type").
DATA_TYPES_13 = DATA_TYPES | {"bfloat16"}


class Rules(Protocol):
    """What a planner reads of its operator's registry record (:class:`onnx_gather._ops.Operator`).

    A protocol, so that the planners need not import the registry, which imports them.
    """

    @property
    def bfloat16_from(self) -> int | None:
        """The first version whose data types include bfloat16 (None: no version has it)."""

    @property
    def equal_off_axis(self) -> bool:
        """GatherElements' variant rule: off the axis indices' dims equal data's."""

    @property
    def attribute_since(self) -> Mapping[str, int]:
        """The version that introduced each attribute a later version added."""

    def message_name(self, version: int) -> str:
        """The operator and version as messages name them: ``"Gather-13"``."""


class Plan:
    """The range rule over the fields every operator's plan has.

    Each operator's module (:mod:`.gather`, :mod:`.gather_elements`, :mod:`.gather_nd`,
    :mod:`.scatter_elements`, :mod:`.scatter_nd`) has one planner, which the registry
    (:mod:`onnx_gather._ops`) names: it checks a call once and returns that operator's
    plan, which carries everything a backend kernel needs, already checked and normalised,
    so no backend checks again. The range rule is the same for every operator: an index
    component that addresses an axis of size ``s`` is valid in ``[-s, s-1]``, negative
    values counting from the end. A plan says which axis each component addresses
    (:meth:`addressed`); :meth:`admits` and :meth:`outside` state the rule.

    Each operator's plan is a named tuple (immutable and hashable: plans are cached,
    shared between calls and threads, and may key a backend's own caches; a named tuple
    rather than a frozen dataclass because it builds in half the time) whose class also
    derives from this one. Every plan has these fields:

    Attributes
    ----------
    op : str
        The operator and version, for messages, e.g. ``"GatherND-13"``.
    check_bounds : bool
        Whether out-of-range indices must raise.
    out_shape : tuple of int
        The shape of the result.
    axis : int
        The data axis the first index component addresses, in ``[0, rank)``.
    size : int
        The smallest size an index component addresses: ``data.shape[axis]`` where every
        index addresses that one axis (Gather, GatherElements).

    Operators whose index values are coordinates (GatherND: the last dim of ``indices``
    enumerates them) set ``coordinates`` and give every coordinate's size in ``sizes``;
    coordinate ``j`` addresses data axis ``axis + j``.
    """

    __slots__ = ()

    op: str
    check_bounds: bool
    out_shape: tuple[int, ...]
    axis: int
    size: int
    #: Whether the last dim of ``indices`` enumerates coordinates of different axes.
    coordinates = False
    #: The shape the result is given after the kernel, where it is not ``out_shape``
    #: (OpenVINO's GatherND-5 flattens the batch dims: the same elements, in the same
    #: order); None for every other call.
    result_shape: tuple[int, ...] | None = None
    #: Whether the kernel runs on data with a leading axis of size 1 and each index tuple
    #: led by a coordinate 0 (ScatterND of index tuples of length 0: every update is the
    #: whole of data); ``out_shape`` is then the led data's, ``result_shape`` data's.
    lead = False

    def attributes(self) -> tuple[Any, ...]:
        """The attributes that plan this call again (normalised), in the registry's order.

        With the operator and version that ``op`` names, they make the same plan: what a
        graph that records the call (torch's operator ``onnx_gather::run_v1``) stores.
        """
        raise NotImplementedError

    @property
    def sizes(self) -> tuple[int, ...]:
        """The size each index component addresses: one for every index alike."""
        return (self.size,)

    def lowest(self, size: int) -> int:
        """The smallest valid index for an axis of ``size``: ``-size`` (negatives count from the end)."""
        return -size

    def admits(self, lo: int, hi: int) -> bool:
        """Whether every index in ``[lo, hi]`` is valid for every component it may be.

        Exact where every index addresses one axis; for coordinates, a test against the
        smallest size (a range that passes it is valid; one that does not may still be:
        :meth:`outside` decides).
        """
        return -self.size <= lo and hi < self.size

    def outside(self, indices: Any, xp: Any = None) -> Any:
        """True where an index is out of range for the axis it addresses.

        For any array with comparison operators (NumPy, JAX under tracing, any array-API
        array). Coordinates are compared with their own axis' size, which takes ``xp``,
        the arrays' namespace, to build (NumPy where None).
        """
        if not self.coordinates:
            return (indices < -self.size) | (indices >= self.size)
        if xp is None:
            import numpy as xp
        sizes = self.sizes
        if all(s == sizes[0] for s in sizes):  # (not a set: sizes may be symbolic)
            bound: Any = sizes[0]
        else:
            try:
                device = indices.device
            except Exception:  # a tracer's (jax): the default device is its device
                device = None
            extra = {} if device is None else {"device": device}
            bound = xp.asarray(sizes, dtype=indices.dtype, **extra)
        return (indices < -bound) | (indices >= bound)

    def addressed(self, position: Sequence[int]) -> tuple[int, int]:
        """The data axis and its size that the index at ``position`` of ``indices`` addresses."""
        if not self.coordinates:
            return self.axis, self.size
        coordinate = int(position[-1])
        return self.axis + coordinate, self.sizes[coordinate]


class _BoundsFields(NamedTuple):
    op: str
    check_bounds: bool
    out_shape: tuple[int, ...]
    axis: int
    size: int
    sizes: tuple[int, ...]
    coordinates: bool


class Bounds(_BoundsFields, Plan):
    """Only the range rule of a plan: what checking indices needs, and no more.

    For code that checks indices apart from the call that planned them: the torch
    operator that checks them in a compiled graph gets these fields as its arguments.
    """

    __slots__ = ()


def bounds(plan: Plan) -> Bounds:
    """The range rule of ``plan``, as a :class:`Bounds`."""
    return Bounds(
        plan.op, plan.check_bounds, plan.out_shape, plan.axis, plan.size, plan.sizes,
        plan.coordinates,
    )  # fmt: skip


def check_flag(name: str, value: Any) -> bool:
    """``value`` as a bool: a bool or ``numpy.bool_``, else a TypeError naming it."""
    if value is True or value is False:
        return value
    if type(value).__name__ in ("bool_", "bool") and type(value).__module__ == "numpy":
        return bool(value)
    msg = f"{name} must be a bool, got {value!r} of type {type(value).__name__}"
    raise TypeError(msg)


def normalise_axis(op: str, axis: Any, rank: int, name: str = "axis") -> int:
    """``axis`` (an attribute addressing one of ``rank`` dims) in ``[0, rank)``.

    Raises TypeError for anything but an int (``operator.index``; a bool is refused) and
    ValueError outside ``[-rank, rank-1]``.
    """
    if type(axis) is int and -rank <= axis < rank:  # the common case, answered first
        return axis % rank
    number = integer(op, name, axis)
    if not -rank <= number < rank:
        msg = f"{op}: {name} {number} is out of range for data of rank {rank} (allowed [{-rank}, {rank - 1}])"
        raise ValueError(msg)
    return number % rank


def integer(op: str, name: str, value: Any) -> int:
    """An integer attribute's value; TypeError naming it for anything else (bool too)."""
    if type(value) is int:
        return value
    if isinstance(value, bool):
        msg = f"{op}: {name} must be an int, got {value!r}"
        raise TypeError(msg)
    try:
        number: int = operator.index(value)
    except TypeError:
        msg = f"{op}: {name} must be an int, got {value!r} of type {type(value).__name__}"
        raise TypeError(msg) from None
    return number


def check_types(
    op: str, version: int, bfloat16_from: int | None, data_dtype: str, index_dtype: str
) -> None:
    """TypeError for a data type the operator's version does not list, or a bad index type."""
    with_bfloat16 = bfloat16_from is not None and version >= bfloat16_from
    allowed = DATA_TYPES_13 if with_bfloat16 else DATA_TYPES
    if data_dtype not in allowed:
        hint = ""
        if data_dtype == "bfloat16":
            hint = (
                f" (bfloat16 needs opset {bfloat16_from} or newer)"
                if bfloat16_from is not None
                else " (no version of the operator has bfloat16)"
            )
        msg = f"{op}: data type {data_dtype} is not supported{hint}; allowed: {', '.join(sorted(allowed))}"
        raise TypeError(msg)
    if index_dtype not in INDEX_TYPES:
        msg = f"{op}: indices must be int32 or int64, got {index_dtype}"
        raise TypeError(msg)


def check_batch_dims(
    op: str, b: int, data_shape: tuple[int, ...], indices_shape: tuple[int, ...]
) -> None:
    """ValueError unless data and indices share their first ``b`` dims (GatherND, Gather-8)."""
    if indices_shape[:b] != data_shape[:b]:
        msg = (
            f"{op}: the first batch_dims={b} dims of data and indices must be equal, got "
            f"data {data_shape} and indices {indices_shape}"
        )
        raise ValueError(msg)


def rank_0(op: str) -> ValueError:
    """The ValueError for 0-d data."""
    return ValueError(f"{op}: data must have rank >= 1, got a rank-0 array")


def check_range(
    plan: Plan,
    lo: int,
    hi: int,
    host_indices: Callable[[], np.ndarray],
    offset: Sequence[int] = (),
) -> None:
    """Raise the plan's IndexError if an index in ``[lo, hi]`` may be out of range.

    Parameters
    ----------
    plan : Plan
        The checked call.
    lo, hi : int
        The smallest and largest index value.
    host_indices : callable
        Returns the indices as a NumPy array; called only when ``[lo, hi]`` leaves the
        smallest valid range, to find the bad index (or, for coordinates of axes of
        different sizes, to find that there is none).
    offset : sequence of int, optional
        Where these indices start in the whole ``indices`` when they are one block of it
        (chunked arrays); the message gives the position in the whole. Default: the start.
    """
    if not plan.admits(lo, hi):
        raise_out_of_range(plan, host_indices(), offset)


def raise_out_of_range(plan: Plan, indices: np.ndarray, offset: Sequence[int] = ()) -> None:
    """Raise the IndexError for the first out-of-range entry of ``indices``, if there is one.

    The message names the operator, the offending value, its position in ``indices``
    (shifted by ``offset`` when ``indices`` is one block of a chunked array), the axis it
    addresses and its size, and the valid range. A kernel that learned only that *some*
    index may be bad calls this with the indices it was given; if none is (the kernel
    failed for another reason, or a range test was only conservative), nothing is raised.
    """
    import numpy as np

    bad = plan.outside(indices)
    flat = int(np.argmax(bad.reshape(-1))) if bad.size else 0
    if not bad.size or not bad.reshape(-1)[flat]:
        return
    local = np.unravel_index(flat, indices.shape)
    shift = tuple(offset) or (0,) * indices.ndim
    position = tuple(int(i) + int(o) for i, o in zip(local, shift, strict=True))
    value = int(indices.reshape(-1)[flat])
    raise out_of_range(plan, value, position)


def out_of_range(
    plan: Plan, value: int | str, position: Sequence[int | str], coordinate: int | None = None
) -> IndexError:
    """Build the IndexError for index ``value`` at ``position`` of ``indices``.

    ``value`` and ``position`` may be format fields (``"{value}"``) for a message whose
    numbers are filled in later, under tracing; ``coordinate`` then says which coordinate
    the message is for (plans with ``coordinates``), since the position cannot tell.
    """
    where = "(" + ", ".join(map(str, position)) + ("," if len(position) == 1 else "") + ")"
    if coordinate is not None:
        axis, size = plan.axis + coordinate, plan.sizes[coordinate]
    else:
        axis, size = plan.addressed(position)  # type: ignore[arg-type]
    valid = (
        "the axis is empty" if size == 0 else f"valid indices are [{plan.lowest(size)}, {size - 1}]"
    )
    msg = (
        f"{plan.op}: index {value} at position {where} of indices is out of range "
        f"for axis {axis} of size {size}; {valid}"
    )
    return IndexError(msg)
