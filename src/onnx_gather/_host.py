"""Index values on the host: the range of a NumPy array of indices, in one pass if it can."""

from __future__ import annotations

from typing import Any

import numpy as np

#: The unsigned type of each index type, for reading its values' bits.
UNSIGNED: dict[np.dtype[Any], np.dtype[Any]] = {
    np.dtype(np.int32): np.dtype(np.uint32),
    np.dtype(np.int64): np.dtype(np.uint64),
}

_SIGN_BIT = {np.dtype(np.uint32): 1 << 31, np.dtype(np.uint64): 1 << 63}


def value_range(indices: np.ndarray) -> tuple[int, int]:
    """A range ``(lo, hi)`` that holds every value of non-empty integer ``indices``.

    ``hi`` is the largest value. ``lo`` is the smallest value when some value is negative
    and 0 otherwise, which is all a range check needs (no index lies below 0). In the
    common case, no negative index, this is one reduction instead of two: the largest
    value read as unsigned is below the sign bit exactly when no value is negative.
    """
    unsigned = UNSIGNED.get(indices.dtype)
    if unsigned is not None:
        top = int(indices.view(unsigned).max())
        if top < _SIGN_BIT[unsigned]:
            return 0, top
    return int(indices.min()), int(indices.max())
