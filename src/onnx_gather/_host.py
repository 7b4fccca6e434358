"""Host indices: what a caller writes as indices, made a NumPy array, and counted on the host.

:func:`index_array` makes them a NumPy array once, before planning; a backend then counts
them on the host with :func:`counted_on_host` (before they travel) or hands them to a kernel.
"""

from __future__ import annotations

import array
import importlib
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from onnx_gather import _spec
from onnx_gather._indices import BoundsPolicy, counted, default_extremes

if TYPE_CHECKING:
    from onnx_gather._spec import Plan
    from onnx_gather._typing import Array


class _LazyModule:
    """A module imported on the first read of one of its attributes.

    Each attribute read is then kept on this object, so later reads cost what a module's
    do. A first read from many threads at once is safe: the import system's lock on the
    module makes each wait for the whole module.
    """

    def __init__(self, name: str) -> None:
        self.__name = name

    def __getattr__(self, attribute: str) -> Any:
        value = getattr(importlib.import_module(self.__name), attribute)
        setattr(self, attribute, value)
        return value


#: ``array_api_compat``'s NumPy namespace (NumPy before 2.1 has no ``np.astype``), for the
#: array-API code that NumPy arrays go through. Imported when a call first needs it, not
#: with the package: it reads every attribute of NumPy, which imports ``numpy.f2py`` and
#: ``numpy.testing``, more than the rest of the package's import costs (docs/performance.md).
NUMPY_XP: Any = _LazyModule("array_api_compat.numpy")

#: The unsigned type of each index type, for reading its values' bits.
_UNSIGNED: dict[np.dtype[Any], np.dtype[Any]] = {
    np.dtype(np.int32): np.dtype(np.uint32),
    np.dtype(np.int64): np.dtype(np.uint64),
}
_SIGN_BIT = {np.dtype(np.uint32): 1 << 31, np.dtype(np.uint64): 1 << 63}
_INT64 = np.iinfo(np.int64)
#: The same as plain ints, for code a compiler traces (it cannot read an np.iinfo).
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


class Unrepresentable:
    """Python ints that no ONNX index type holds: their values (flat) and written shape.

    Such an index is out of range for every axis there can be, so the caller reports it as
    one (an IndexError naming it, with or without ``check_bounds``) rather than as a wrong
    index dtype. It is planned as int64 indices of the same shape. Plain Python, so that
    a compiler tracing the call (``torch.compile``) can hold and report it too.
    """

    dtype = np.dtype(np.int64)
    dtype_name = "int64"

    def __init__(self, flat: list[int], shape: tuple[int, ...]) -> None:
        self.flat = flat
        self.shape = shape

    def raise_for(self, plan: Plan) -> None:
        """Raise the plan's IndexError for the first value out of range, in C order."""
        for position, value in enumerate(self.flat):
            where = _unravel(position, self.shape)
            _, size = plan.addressed(where)
            if not -size <= value < size:
                raise _spec.out_of_range(plan, value, where)


def _unravel(flat: int, shape: tuple[int, ...]) -> tuple[int, ...]:
    where = []
    for n in reversed(shape):
        flat, i = divmod(flat, n)
        where.append(i)
    return tuple(reversed(where))


def index_array(indices: Array) -> np.ndarray | Unrepresentable | None:
    """``indices`` as a NumPy array if it is host data, else None.

    Host data is a NumPy array or scalar, a Python int, or a sequence of ints: a (nested)
    list or tuple, a ``range``, an ``array.array``. The dtype NumPy infers is kept (a later
    check rejects anything but int32 and int64; an ``array.array`` keeps its typecode's),
    except: an empty list is ONNX's default ``Tind``, int64; non-native byte order becomes
    native (kernels read native integers); ints beyond int64 become :class:`Unrepresentable`.
    A NumPy subclass (``np.matrix``, ``np.memmap``) is read as the plain array it views.

    Raises
    ------
    TypeError
        For a masked array (a mask has no ONNX meaning), a bool (True is not an index),
        an object array, or a sequence holding anything but ints.
    ValueError
        For a ragged nested sequence.
    """
    if isinstance(indices, np.ndarray):
        if isinstance(indices, np.ma.MaskedArray):
            raise TypeError(masked("indices", indices))
        host = indices if type(indices) is np.ndarray else indices.view(np.ndarray)
        if host.dtype.kind == "O":
            msg = (
                f"indices must be int32 or int64, got a NumPy object array (of "
                f"{_kinds(host.reshape(-1))}); convert it with .astype(np.int64)"
            )
            raise TypeError(msg)
    elif isinstance(indices, bool):
        msg = f"indices must be int32 or int64, got bool {indices!r} (a bool is not an index)"
        raise TypeError(msg)
    elif isinstance(indices, range):
        return _range(indices)
    elif isinstance(indices, np.generic | array.array):
        host = np.asarray(indices)
    elif isinstance(indices, int | list | tuple):
        parsed = _sequence(indices)
        if isinstance(parsed, Unrepresentable):
            return parsed
        host = parsed
    else:
        return None
    if not host.dtype.isnative:
        host = host.astype(host.dtype.newbyteorder("="))
    return host


def check_strings(role: str, x: np.ndarray, offset: Sequence[int] = ()) -> np.ndarray:
    """``x``, an object array of data or updates, if every element is a string; TypeError if not.

    NumPy object arrays are ONNX ``string`` tensors, which hold text (``str``, or
    ``bytes``) alone: anything else (None, a float) is named with its type and position
    (``offset``: where ``x`` starts in the whole array, for a block of it).
    """
    for position, value in enumerate(x.reshape(-1).tolist()):
        if not isinstance(value, str | bytes):
            where = _unravel(position, x.shape)
            if offset:
                where = tuple(w + o for w, o in zip(where, offset, strict=True))
            msg = (
                f"{role} is an object array, read as ONNX strings, but holds "
                f"{type(value).__name__} {_short(value)} at position {where}: each element "
                f"must be a str (or bytes)"
            )
            raise TypeError(msg)
    return x


def _range(indices: range) -> np.ndarray | Unrepresentable:
    """A ``range`` as int64 indices (NumPy would make ``range(0)`` float64).

    Ends beyond int64 are out-of-range indices like any such Python int: the values go
    through :func:`_sequence`, which reports them.
    """
    if not indices:
        return np.zeros(0, np.int64)
    if _INT64.min <= min(indices[0], indices[-1]) and max(indices[0], indices[-1]) <= _INT64.max:
        return np.arange(indices.start, indices.stop, indices.step, dtype=np.int64)
    return _sequence(list(indices))


def masked(name: str, x: Array) -> str:
    """The TypeError message for a masked array given as ``name``."""
    return (
        f"{name} is a NumPy masked array (np.ma.MaskedArray): a mask has no meaning in ONNX "
        f"Gather or GatherElements; pass {name}.filled(value) or {name}.data instead"
    )


def _kinds(flat: np.ndarray) -> str:
    """The element types of an object array, for messages: "str", "int and NoneType"."""
    names = sorted({type(v).__name__ for v in flat[:1000]})
    return " and ".join(names) if names else "no elements"


def _ragged(indices: Array) -> ValueError:
    return ValueError(
        f"indices must be a rectangular (nested) sequence of ints, got a ragged one "
        f"(rows of different lengths): {_short(indices)}"
    )


def _not_an_index(value: Any, position: tuple[int, ...]) -> TypeError | None:
    """The TypeError for element ``value`` of a sequence, or None where it may be an index.

    Ints are indices; floats and complex numbers pass here (the plan names the dtype they
    make); a bool (an int to Python and NumPy) and anything else are not.
    """
    is_bool = isinstance(value, bool | np.bool_)
    if not is_bool and isinstance(value, int | np.integer | float | np.floating | complex):
        return None
    kind = "bool" if is_bool else "string" if isinstance(value, str) else type(value).__name__
    note = " (a bool is not an index)" if is_bool else ""
    return TypeError(
        f"indices must be int32 or int64, got {kind} {value!r} at position {position}{note}"
    )


def python_indices(indices: Array) -> tuple[list[Any], tuple[int, ...]] | Unrepresentable | None:
    """Host indices that are plain Python values, as their flat values and shape.

    The rules of :func:`index_array` in plain Python (no NumPy), for a compiler that traces
    the call's Python (``torch.compile``: it cannot trace NumPy's object arrays): the same
    TypeError and ValueError, ints beyond int64 as :class:`Unrepresentable`. None for
    anything but an int, a ``range`` or a (nested) list or tuple.
    """
    if isinstance(indices, bool):
        raise TypeError(
            f"indices must be int32 or int64, got bool {indices!r} (a bool is not an index)"
        )
    if not isinstance(indices, int | range | list | tuple):
        return None
    flat, shape = _nested(indices, indices)
    for position, value in enumerate(flat):
        error = _not_an_index(value, _unravel(position, shape))
        if error is not None:
            raise error
    if any(type(v) is int and not _INT64_MIN <= v <= _INT64_MAX for v in flat):
        return Unrepresentable([int(v) for v in flat], shape)
    return flat, shape


def _nested(x: Array, whole: Any) -> tuple[list[Any], tuple[int, ...]]:
    """Flat values and shape of a (nested) sequence; ValueError naming ``whole`` if ragged."""
    if not isinstance(x, range | list | tuple):
        return [x], ()
    parts = [_nested(e, whole) for e in x]
    if any(p[1] != parts[0][1] for p in parts):
        raise _ragged(whole)
    inner = parts[0][1] if parts else ()
    return [v for p in parts for v in p[0]], (len(parts), *inner)


def _sequence(indices: int | list[Any] | tuple[Any, ...]) -> np.ndarray | Unrepresentable:
    """An int or (nested) list or tuple of ints as an array; TypeError or ValueError if not."""
    try:
        host = np.asarray(indices)
    except ValueError:  # NumPy: "inhomogeneous shape"
        raise _ragged(indices) from None
    if host.size == 0:
        return host.astype(np.int64) if host.dtype == np.float64 else host
    if host.dtype.kind == "i" and _plain_ints(indices):
        return host  # the common forms, without the object array below
    flat = np.array(indices, dtype=object).reshape(-1)
    types = set(map(type, flat))
    if not all(issubclass(t, int | np.integer) and not issubclass(t, bool) for t in types):
        for position, v in enumerate(flat):
            error = _not_an_index(v, _unravel(position, host.shape))
            if error is not None:
                raise error
        return host  # floats: the plan names the dtype NumPy made of them
    if host.dtype.kind in "uOf":  # ints that int64 does not hold
        ints = [int(v) for v in flat]
        if not all(_INT64.min <= v <= _INT64.max for v in ints):
            return Unrepresentable(ints, host.shape)
    return host


def _plain_ints(indices: int | list[Any] | tuple[Any, ...]) -> bool:
    """Whether ``indices`` is an int, or a list or tuple of ints or of lists or tuples of ints.

    Exactly ``int``: a bool (an int to NumPy, which silently makes True a 1) or any other
    type goes through the element-by-element check of :func:`_sequence`.
    """
    if isinstance(indices, int):  # an int subclass (IntEnum) takes the checking path
        return type(indices) is int
    if all(type(v) is int for v in indices):
        return True
    return all(type(row) in (list, tuple) and all(type(v) is int for v in row) for row in indices)


def _short(x: Array) -> str:
    text = repr(x)
    return text if len(text) <= 80 else text[:77] + "..."


def value_range(indices: np.ndarray, axis: int | None = None) -> tuple[Any, Any]:
    """A range ``(lo, hi)`` that holds every value of non-empty integer ``indices``.

    With ``axis``, the smallest and largest per position of the other axis (two lists).

    ``hi`` is the largest value. ``lo`` is the smallest value when some value is negative
    and 0 otherwise, which is all a range check needs. In the common case, no negative
    index, this is one reduction instead of two: the largest value read as unsigned is
    below the sign bit exactly when no value is negative.
    """
    if axis is not None:
        return default_extremes(np, indices, axis)
    unsigned = _UNSIGNED.get(indices.dtype)
    if unsigned is not None:
        top = int(indices.view(unsigned).max())
        if top < _SIGN_BIT[unsigned]:
            return 0, top
    return int(indices.min()), int(indices.max())


def counted_on_host(plan: Plan, indices: np.ndarray) -> np.ndarray:
    """Host indices with negatives counted from the end, in ``[0, size)``, or as given.

    The one count (:func:`onnx_gather._indices.counted`) on NumPy, its range read
    with :func:`value_range`: with ``plan.check_bounds`` an index outside ``[-size,
    size-1]`` raises ``_spec``'s IndexError; without it, such an index is clamped into the
    axis (it reads some element of the data, never outside it). The result may be
    ``indices`` itself when nothing needs changing; callers only read it.
    """
    policy = BoundsPolicy.RAISE if plan.check_bounds else BoundsPolicy.CLAMP
    out: np.ndarray = counted(NUMPY_XP, indices, plan, policy, extremes=value_range, to_host=_same)
    return out


def _same(indices: np.ndarray) -> np.ndarray:
    return indices
