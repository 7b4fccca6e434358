"""Host-side helpers: the range of a NumPy array of indices, and a small thread pool.

NumPy's reductions, ufuncs and ``take`` release the GIL on plain dtypes, so large ones can
be split over a few threads.
"""

from __future__ import annotations

import itertools
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

#: Threads a large call may use: the usable cores, at most 4 (the kernels are memory-bound).
THREADS = min(4, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 1)
#: Elements from which value_range splits its reduction over the threads.
_PARALLEL_RANGE = 1 << 21

_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


class _Flag(threading.local):
    active = False


_in_worker = _Flag()


def _mark() -> None:
    _in_worker.active = True


def in_parallel(jobs: Sequence[Callable[[], object]]) -> None:
    """Run ``jobs``: the first on this thread, the others on the pool; re-raise any error."""
    global _pool
    if len(jobs) <= 1 or _in_worker.active:
        # One job, or called from a job: waiting on the pool from inside it could deadlock.
        for job in jobs:
            job()
        return
    if _pool is None:
        with _pool_lock:
            if _pool is None:
                _pool = ThreadPoolExecutor(
                    max(THREADS - 1, 1), thread_name_prefix="onnx_gather", initializer=_mark
                )
    futures = [_pool.submit(job) for job in jobs[1:]]
    try:
        jobs[0]()
    finally:
        errors = [f.exception() for f in futures]
    for error in errors:
        if error is not None:
            raise error


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
    if THREADS > 1 and indices.size >= _PARALLEL_RANGE and indices.flags.c_contiguous:
        flat = indices.reshape(-1)
        bounds = [flat.size * k // THREADS for k in range(THREADS + 1)]
        ranges: list[tuple[int, int]] = []
        in_parallel(
            [partial(_append_range, ranges, flat[a:b]) for a, b in itertools.pairwise(bounds)]
        )
        return min(lo for lo, _ in ranges), max(hi for _, hi in ranges)
    return _range(indices)


def _append_range(ranges: list[tuple[int, int]], part: np.ndarray) -> None:
    ranges.append(_range(part))  # list.append is atomic


def _range(indices: np.ndarray) -> tuple[int, int]:
    unsigned = UNSIGNED.get(indices.dtype)
    if unsigned is not None:
        top = int(indices.view(unsigned).max())
        if top < _SIGN_BIT[unsigned]:
            return 0, top
    return int(indices.min()), int(indices.max())
