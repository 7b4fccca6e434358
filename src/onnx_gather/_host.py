"""Host indices: what a caller writes as indices, made a NumPy array, and checked on the host.

Every data library accepts host indices (a Python int, a nested list or tuple of ints, a
NumPy array or scalar). :func:`index_array` turns them into a native-order int32 or int64
NumPy array once, before planning; a backend then checks them on the host with
:func:`checked` (cheap, and before they travel to a device) or hands them to a kernel that
checks while it gathers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from onnx_gather import _spec

if TYPE_CHECKING:
    from onnx_gather._spec import Plan

#: The unsigned type of each index type, for reading its values' bits.
_UNSIGNED: dict[np.dtype[Any], np.dtype[Any]] = {
    np.dtype(np.int32): np.dtype(np.uint32),
    np.dtype(np.int64): np.dtype(np.uint64),
}
_SIGN_BIT = {np.dtype(np.uint32): 1 << 31, np.dtype(np.uint64): 1 << 63}
_INT64 = np.iinfo(np.int64)


class Unrepresentable:
    """Python ints that no ONNX index type holds, as an object array of the written shape.

    Such an index is out of range for every axis there can be, so the caller reports it as
    one (an IndexError naming it, with or without ``check_bounds``) rather than as a wrong
    index dtype. It is planned as int64 indices of the same shape.
    """

    dtype = np.dtype(np.int64)

    def __init__(self, values: np.ndarray) -> None:
        self.values = values
        self.shape = values.shape


def index_array(indices: Any) -> np.ndarray | Unrepresentable | None:
    """``indices`` as a NumPy array if it is host data, else None.

    Host data is a NumPy array or scalar, a Python int, or a (nested) list or tuple of them.
    The dtype NumPy infers is kept (a later check rejects anything but int32 and int64),
    except: an empty list is ONNX's default ``Tind``, int64; non-native byte order becomes
    native (kernels read native integers); ints beyond int64 become :class:`Unrepresentable`.
    """
    if isinstance(indices, np.ndarray):
        host = indices
    elif isinstance(indices, np.generic | int | list | tuple):
        host = np.asarray(indices)
        if host.size == 0 and host.dtype == np.float64:
            host = host.astype(np.int64)
        elif host.dtype.kind in "uOf" and not isinstance(indices, np.generic):
            wide = _beyond_int64(indices)
            if wide is not None:
                return wide
    else:
        return None
    if not host.dtype.isnative:
        host = host.astype(host.dtype.newbyteorder("="))
    return host


def _beyond_int64(indices: Any) -> Unrepresentable | None:
    """The written ints as :class:`Unrepresentable` if one lies beyond int64, else None.

    NumPy makes a list with such ints uint64, float64 (mixed with smaller ints) or an object
    array; only Python ints (and NumPy integer scalars among them) qualify.
    """
    values = np.array(indices, dtype=object)
    flat = values.reshape(-1)
    if not all(isinstance(v, int | np.integer) and not isinstance(v, bool) for v in flat):
        return None
    ints = [int(v) for v in flat]
    if all(_INT64.min <= v <= _INT64.max for v in ints):
        return None
    wide: np.ndarray = np.empty(values.shape, dtype=object)
    wide.reshape(-1)[:] = ints
    return Unrepresentable(wide)


def value_range(indices: np.ndarray) -> tuple[int, int]:
    """A range ``(lo, hi)`` that holds every value of non-empty integer ``indices``.

    ``hi`` is the largest value. ``lo`` is the smallest value when some value is negative
    and 0 otherwise, which is all a range check needs. In the common case, no negative
    index, this is one reduction instead of two: the largest value read as unsigned is
    below the sign bit exactly when no value is negative.
    """
    unsigned = _UNSIGNED.get(indices.dtype)
    if unsigned is not None:
        top = int(indices.view(unsigned).max())
        if top < _SIGN_BIT[unsigned]:
            return 0, top
    return int(indices.min()), int(indices.max())


def checked(plan: Plan, indices: np.ndarray) -> np.ndarray:
    """Host indices with negatives counted from the end: int64 in ``[0, size)``, or as given.

    With ``plan.check_bounds`` an index outside ``[-size, size-1]`` raises ``_spec``'s
    IndexError. Without it, such an index is clamped into the axis (it reads some element
    of the data, never outside it). The result may be ``indices`` itself when nothing needs
    changing; callers only read it.
    """
    if indices.size == 0:
        return indices
    lo, hi = value_range(indices)
    size = plan.size
    if plan.admits(lo, hi):
        if lo >= 0:
            return indices
        wide = indices.astype(np.int64)  # int32 + a size beyond int32 must not wrap
        return np.where(wide < 0, wide + size, wide)
    if plan.check_bounds:
        _spec.raise_out_of_range(plan, indices)
    wide = indices.astype(np.int64)
    wide = np.where(wide < 0, wide + size, wide)
    return np.clip(wide, 0, max(size - 1, 0))
