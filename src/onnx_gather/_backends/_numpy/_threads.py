"""How many threads a large call of the NumPy kernels may use: the program's controls."""

from __future__ import annotations

import os

ENV = "ONNX_GATHER_NUM_THREADS"


def _cpus() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def _configured() -> int | None:
    """The limit the environment sets, or None; ValueError for a bad value of ours.

    ``ONNX_GATHER_NUM_THREADS``, if set: this library's own limit (1 turns threads off);
    else ``OMP_NUM_THREADS``, if set: the limit a program sets for its numerical libraries.
    """
    own = os.environ.get(ENV, "").strip()
    if own:
        try:
            value = int(own)
        except ValueError:
            value = 0
        if value < 1:
            msg = f"{ENV} must be a positive int (the most threads a call may use), got {own!r}"
            raise ValueError(msg)
        return value
    # OMP_NUM_THREADS may list one count per nesting level: the first is the outer one.
    first = os.environ.get("OMP_NUM_THREADS", "").split(",")[0].strip()
    return int(first) if first.isdigit() and int(first) > 0 else None


def limit(cap: int) -> int:
    """The threads a kernel whose own cap is ``cap`` may use here (at least 1).

    Within the environment's limit (:func:`_configured`) and the CPUs this process may run
    on (``os.sched_getaffinity``). The compiled kernel starts threads per large call, and
    the pure-NumPy fallback runs a small pool (:mod:`._pool`); both stay within it, read
    once, when the NumPy backend is first used. CPU tensors also stay within
    ``torch.get_num_threads()`` (which ``torch.set_num_threads`` and DataLoader workers
    set), read at every call (:mod:`onnx_gather._backends._torch`).
    """
    configured = _configured()
    return max(1, min(cap, _cpus(), configured if configured is not None else cap))
