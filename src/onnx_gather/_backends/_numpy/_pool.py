"""The pure-NumPy kernels' thread pool: a few threads, made on first use, safe across fork.

NumPy's ``take`` releases the GIL on plain dtypes, so the fallback kernels split large
calls into contiguous parts run on this pool (the compiled kernel starts threads per call).
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

from onnx_gather._backends._numpy._threads import limit

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

#: Threads a large call may use: at most 4 (the kernels are memory-bound), within the
#: program's limits (:mod:`._threads`).
THREADS = limit(4)
#: Output bytes from which a call is split over threads: below, two threads lost to one
#: (docs/performance.md).
_THREADED_BYTES = 1 << 23

_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def _forget_pool() -> None:
    # A forked child (a DataLoader worker) has the pool object but none of its threads:
    # jobs would wait forever. Forgotten, it is made again on the child's first large call.
    global _pool, _pool_lock
    _pool, _pool_lock = None, threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool)


def in_parallel(jobs: Sequence[Callable[[], object]]) -> None:
    """Run ``jobs``: the first on this thread, the others on the pool; re-raise any error."""
    global _pool
    if len(jobs) <= 1:
        for job in jobs:
            job()
        return
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max(THREADS - 1, 1), thread_name_prefix="onnx_gather")
        pool = _pool
    futures = [pool.submit(job) for job in jobs[1:]]
    try:
        jobs[0]()
    finally:
        errors = [f.exception() for f in futures]
    for error in errors:
        if error is not None:
            raise error


def parts(n: int, nbytes: int) -> list[tuple[int, int]]:
    """Split ``range(n)`` into one contiguous part per thread worth using."""
    threads = max(1, min(THREADS, n)) if nbytes >= _THREADED_BYTES else 1
    bounds = [n * k // threads for k in range(threads + 1)]
    return [(bounds[k], bounds[k + 1]) for k in range(threads) if bounds[k] < bounds[k + 1]]
