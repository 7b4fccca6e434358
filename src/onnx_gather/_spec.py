"""The ONNX (and OpenVINO) rules for Gather and GatherElements, written once.

Everything here works on plain Python values: shapes are tuples of ints and dtypes are
names such as ``"float32"`` or ``"bfloat16"`` that each backend derives from its own
dtype objects. No framework is imported. The public functions call :func:`plan_gather`
or :func:`plan_gather_elements` once; the resulting :class:`Plan` carries everything a
backend kernel needs, already checked and normalised, so no backend checks again.
"""

from __future__ import annotations

import operator
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    import numpy as np

GATHER = "Gather"
GATHER_ELEMENTS = "GatherElements"
OPENVINO_GATHER_ELEMENTS = "OpenVINO GatherElements-6"

#: The operator versions ONNX defines; an opset selects the newest one not newer than it.
VERSIONS: dict[str, tuple[int, ...]] = {GATHER: (1, 11, 13), GATHER_ELEMENTS: (11, 13)}

#: Each version's name in messages, "Gather-13": made once, not on every uncached call.
_OP_NAMES = {op: {v: f"{op}-{v}" for v in versions} for op, versions in VERSIONS.items()}

#: ONNX ``Tind``.
INDEX_TYPES = frozenset({"int32", "int64"})

#: ONNX ``T`` for Gather-1, Gather-11 and GatherElements-11.
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
#: Version 13 of both operators adds bfloat16.
DATA_TYPES_13 = DATA_TYPES | {"bfloat16"}


class Plan(NamedTuple):
    """A checked, normalised call: what a backend kernel needs and nothing more.

    Immutable (plans are cached and shared between calls and threads); a named tuple
    rather than a frozen dataclass because it is made on every uncached call and builds
    in half the time.

    Attributes
    ----------
    op : str
        The operator and version, for messages, e.g. ``"GatherElements-13"``.
    elements : bool
        True for GatherElements (ONNX or OpenVINO), False for Gather.
    axis : int
        The axis, normalised to ``[0, rank)``.
    size : int
        ``data.shape[axis]``.
    out_shape : tuple of int
        The shape of the result.
    trim : tuple of slice or None
        GatherElements only: the slices that cut ``data`` down to the block the output
        reads (the indices' dims off the axis, all of the axis), or None when that block is
        all of ``data``. ONNX allows indices smaller than data off the axis; no broadcasting.
    check_bounds : bool
        Whether out-of-range indices must raise.
    """

    op: str
    elements: bool
    axis: int
    size: int
    out_shape: tuple[int, ...]
    check_bounds: bool
    trim: tuple[slice, ...] | None = None

    def admits(self, lo: int, hi: int) -> bool:
        """Whether every index in ``[lo, hi]`` is valid: the one statement of the range rule.

        Valid indices are ``[-size, size-1]``, negative ones counting from the end, in every
        version of both operators and in OpenVINO's GatherElements-6. Gather-1's text says
        only "within bounds"; ONNX Runtime and the reference evaluator count negatives from
        the end, and torch's exporter emits them at opset 9. OpenVINO's CPU runtime accepts
        them since 2025 (openvinotoolkit/openvino#30800), although its 2020 text said
        ``[0, s-1]``. The runtimes that run real models decide.
        """
        return -self.size <= lo and hi < self.size

    def outside(self, indices: Any) -> Any:
        """The rule of :meth:`admits` per element: True where an index is out of range.

        For any array with comparison operators (NumPy, or JAX under tracing).
        """
        return (indices < -self.size) | (indices >= self.size)


def resolve_version(op: str, opset: Any) -> int:
    """Return the version of ``op`` that a model importing ``opset`` uses.

    Parameters
    ----------
    op : {"Gather", "GatherElements"}
        The ONNX operator.
    opset : int
        The model's opset import for the default domain.

    Returns
    -------
    int
        The newest version of ``op`` that is not newer than ``opset``.

    Raises
    ------
    TypeError
        If ``opset`` is not an integer.
    ValueError
        If ``opset`` is older than the first version of ``op``.
    """
    if type(opset) is int:  # the common case, on every call: a table lookup
        known = _NEWEST[op].get(opset)
        if known is not None:
            return known
    if isinstance(opset, bool):
        msg = f"opset must be an int, got {opset!r}"
        raise TypeError(msg)
    try:
        number: int = operator.index(opset)
    except TypeError:
        msg = f"opset must be an int, got {opset!r} of type {type(opset).__name__}"
        raise TypeError(msg) from None
    versions = VERSIONS[op]
    usable = [v for v in versions if v <= number]
    if not usable:
        msg = (
            f"opset {number} has no {op}: the operator exists from opset {versions[0]} on "
            f"(versions {', '.join(map(str, versions))})"
        )
        raise ValueError(msg)
    return usable[-1]


#: The answers of :func:`resolve_version` for the opsets that exist and some to come, made
#: once: every call asks.
_NEWEST: dict[str, dict[int, int]] = {
    op: {opset: max(v for v in versions if v <= opset) for opset in range(versions[0], 64)}
    for op, versions in VERSIONS.items()
}


def _normalise_axis(op: str, axis: Any, rank: int) -> int:
    if type(axis) is int and -rank <= axis < rank:  # the common case, answered first
        return axis % rank
    if isinstance(axis, bool):
        msg = f"{op}: axis must be an int, got {axis!r}"
        raise TypeError(msg)
    try:
        number: int = operator.index(axis)
    except TypeError:
        msg = f"{op}: axis must be an int, got {axis!r} of type {type(axis).__name__}"
        raise TypeError(msg) from None
    if not -rank <= number < rank:
        msg = f"{op}: axis {number} is out of range for data of rank {rank} (allowed [{-rank}, {rank - 1}])"
        raise ValueError(msg)
    return number % rank


def _check_types(op: str, version: int, data_dtype: str, index_dtype: str) -> None:
    allowed = DATA_TYPES_13 if version >= 13 else DATA_TYPES
    if data_dtype not in allowed:
        hint = " (bfloat16 needs opset 13 or newer)" if data_dtype == "bfloat16" else ""
        msg = f"{op}: data type {data_dtype} is not supported{hint}; allowed: {', '.join(sorted(allowed))}"
        raise TypeError(msg)
    if index_dtype not in INDEX_TYPES:
        msg = f"{op}: indices must be int32 or int64, got {index_dtype}"
        raise TypeError(msg)


def _rank_0(op: str) -> ValueError:
    return ValueError(f"{op}: data must have rank >= 1, got a rank-0 array")


def plan_gather(
    version: int,
    data_shape: tuple[int, ...],
    data_dtype: str,
    indices_shape: tuple[int, ...],
    indices_dtype: str,
    axis: Any,
    check_bounds: bool,
) -> Plan:
    """Check a Gather call and return its plan.

    Parameters
    ----------
    version : int
        The Gather version (1, 11 or 13), from :func:`resolve_version`.
    data_shape, indices_shape : tuple of int
        The shapes of the two inputs.
    data_dtype, indices_dtype : str
        Their dtype names.
    axis : int
        The ``axis`` attribute, in ``[-r, r-1]``.
    check_bounds : bool
        Whether out-of-range indices must raise.

    Returns
    -------
    Plan
        The checked, normalised call.
    """
    op = _OP_NAMES[GATHER][version]
    if not data_shape:
        raise _rank_0(op)
    _check_types(op, version, data_dtype, indices_dtype)
    ax = _normalise_axis(op, axis, len(data_shape))
    size = data_shape[ax]
    out_shape = data_shape[:ax] + indices_shape + data_shape[ax + 1 :]
    # Positional (op, elements, axis, size, out_shape, check_bounds): half the cost of
    # keywords, on every uncached call.
    return Plan(op, False, ax, size, out_shape, bool(check_bounds))


def plan_gather_elements(
    version: int | None,
    data_shape: tuple[int, ...],
    data_dtype: str,
    indices_shape: tuple[int, ...],
    indices_dtype: str,
    axis: Any,
    check_bounds: bool,
) -> Plan:
    """Check a GatherElements call and return its plan.

    Parameters
    ----------
    version : int or None
        The ONNX GatherElements version (11 or 13), or None for OpenVINO GatherElements-6,
        which requires the indices' dims off the axis to equal the data's.
    data_shape, indices_shape : tuple of int
        The shapes of the two inputs.
    data_dtype, indices_dtype : str
        Their dtype names.
    axis : int
        The ``axis`` attribute, in ``[-r, r-1]``.
    check_bounds : bool
        Whether out-of-range indices must raise.

    Returns
    -------
    Plan
        The checked, normalised call. The output has exactly the indices' shape.
    """
    openvino = version is None
    op = OPENVINO_GATHER_ELEMENTS if openvino else _OP_NAMES[GATHER_ELEMENTS][version]  # type: ignore[index]
    if not data_shape:
        raise _rank_0(op)
    # OpenVINO lists "any supported type", which includes bfloat16.
    _check_types(op, 13 if openvino else version, data_dtype, indices_dtype)  # type: ignore[arg-type]
    rank = len(data_shape)
    ax = _normalise_axis(op, axis, rank)
    if len(indices_shape) != rank:
        msg = (
            f"{op}: indices must have the same rank as data ({rank}), "
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
            if openvino:
                msg = (
                    f"{op}: indices dim {d} is {n_idx} but data's is {n_data}; off the axis "
                    f"(axis {ax}) they must be equal (indices {indices_shape}, data {data_shape})"
                )
                raise ValueError(msg)
            if n_idx > n_data:
                msg = (
                    f"{op}: indices dim {d} is {n_idx}, larger than data's {n_data}; off the "
                    f"axis (axis {ax}) it must be <= data's (indices {indices_shape}, data "
                    f"{data_shape})"
                )
                raise ValueError(msg)
        trim = tuple(slice(None) if d == ax else slice(0, n) for d, n in enumerate(indices_shape))
    size = data_shape[ax]
    return Plan(op, True, ax, size, tuple(indices_shape), bool(check_bounds), trim)


def check_range(
    plan: Plan,
    lo: int,
    hi: int,
    host_indices: Callable[[], np.ndarray],
    offset: Sequence[int] = (),
) -> None:
    """Raise the plan's IndexError if ``[lo, hi]`` leaves the valid index range.

    Parameters
    ----------
    plan : Plan
        The checked call.
    lo, hi : int
        The smallest and largest index value.
    host_indices : callable
        Returns the indices as a NumPy array; called only to build the error message.
    offset : sequence of int, optional
        Where these indices start in the whole ``indices`` when they are one block of it
        (chunked arrays); the message gives the position in the whole. Default: the start.
    """
    if not plan.admits(lo, hi):
        raise_out_of_range(plan, host_indices(), offset)


def raise_out_of_range(plan: Plan, indices: np.ndarray, offset: Sequence[int] = ()) -> None:
    """Raise the IndexError for the first out-of-range entry of ``indices``, if there is one.

    The message names the operator, the offending value, its position in ``indices``
    (shifted by ``offset`` when ``indices`` is one block of a chunked array), the axis and
    its size, and the valid range. A kernel that learned only that *some* index is bad
    calls this with the indices it was given; if none is (the kernel failed for another
    reason), nothing is raised and the kernel's own error should stand.
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


def out_of_range(plan: Plan, value: int | str, position: Sequence[int | str]) -> IndexError:
    """Build the IndexError for index ``value`` at ``position`` of ``indices``.

    ``value`` and ``position`` may be format fields (``"{value}"``) for a message whose
    numbers are filled in later, under tracing.
    """
    where = "(" + ", ".join(map(str, position)) + ("," if len(position) == 1 else "") + ")"
    if plan.size == 0:
        valid = "the axis is empty"
    else:
        valid = f"valid indices are [{-plan.size}, {plan.size - 1}]"
    msg = (
        f"{plan.op}: index {value} at position {where} of indices is out of range "
        f"for axis {plan.axis} of size {plan.size}; {valid}"
    )
    return IndexError(msg)
