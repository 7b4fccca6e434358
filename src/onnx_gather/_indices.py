"""Index normalisation against the array API: negatives counted from the end, a bounds policy."""

from __future__ import annotations

import enum
from functools import partial
from typing import TYPE_CHECKING, Any

from onnx_gather import _spec

if TYPE_CHECKING:
    from collections.abc import Callable

    import numpy as np

    from onnx_gather._typing import Array, Plan


class BoundsPolicy(enum.Enum):
    """What :func:`counted` does with an index outside ``[-s, s-1]``.

    The value is how messages name the policy.
    """

    #: Every checked call: the plan's IndexError, naming the first bad value, its position
    #: (coordinate included) and the axis it addresses.
    RAISE = "raise"
    #: Gathers without the check: into ``[0, s-1]``, so it reads some element of the data
    #: and never outside it (0 on an empty axis: callers read nothing there).
    CLAMP = "clamp"
    #: Scatters without the check: the index tuples with a bad component are marked, and
    #: the backend writes nothing for them.
    DROP = "drop"

    def __str__(self) -> str:
        return self.value


#: The largest value an int32 holds: a size beyond it needs int64 indices once counted,
#: and data of more elements int64 positions.
INT32_MAX = 2**31 - 1


def default_extremes(xp: Any, indices: Array, axis: int | None = None) -> tuple[Any, Any]:
    """The smallest and largest value of non-empty ``indices``, as Python ints.

    With ``axis``, per position of the other axis (2-D ``indices``): two lists of ints.
    """
    if axis is None:
        return int(xp.min(indices)), int(xp.max(indices))
    lo, hi = xp.min(indices, axis=axis), xp.max(indices, axis=axis)
    return [int(v) for v in lo], [int(v) for v in hi]


def from_end(xp: Any, indices: Array, sizes: Any) -> Any:
    """``indices`` with each negative one counted from the end: ``i + s`` where ``i < 0``.

    The rule every index of the family follows, written once: :func:`counted` applies it
    with its bounds policy, and the kernels that build their own graph (inductor's, JAX's
    fill-mode GatherND, OpenVINO's Gather mask) call it in their own namespace ``xp``.
    ``sizes``: a number, or an array of one size per coordinate that broadcasts along
    the last dim. Only the C and Triton kernels keep a copy, fused into their loop.
    """
    return xp.where(indices < 0, indices + sizes, indices)


def counted(
    xp: Any,
    indices: Array,
    plan: Plan,
    policy: BoundsPolicy,
    *,
    extremes: Callable[..., tuple[Any, Any]] | None = None,
    to_host: Callable[[Array], np.ndarray] | None = None,
) -> Any:
    """``indices`` with negatives counted from the end and the rest per ``policy``.

    Every index component addresses a data axis of size ``s`` (the plan says which:
    :meth:`onnx_gather._spec.Plan.addressed`) and is valid in ``[-s, s-1]``. Every backend
    without a fused kernel calls this, with its own namespace ``xp`` and, where its
    library has a cheaper way to read an array's extremes (``torch.aminmax``: one pass and
    one host synchronisation), its own ``extremes``. Fused kernels (the compiled C kernel,
    the Triton kernels, JAX's fill-mode gathers under tracing) run the same rule in their
    own loop, one pass over the indices instead of two; each says so where it does.

    Parameters
    ----------
    xp : namespace
        ``indices``' array-API namespace (``array_api_compat``'s for NumPy, PyTorch and
        CuPy).
    indices : array
        int32 or int64 indices, any shape; for plans with ``coordinates`` the last dim
        enumerates the coordinates.
    plan : Plan
        The checked call: which axis, of which size, each component addresses.
    policy : BoundsPolicy
        What an out-of-range index gets.
    extremes : callable, optional
        ``extremes(indices) -> (lo, hi)``, the smallest and largest value (``lo`` may be
        any value <= the smallest where none is negative); default ``xp.min``/``xp.max``.
        For coordinates of axes of different sizes, ``extremes(rows, axis=0)`` of the
        ``(n, k)`` tuples, per coordinate (lists of ``k`` ints), in the same one read.
        RAISE always reads them; CLAMP only where given (a cheap host read): then valid
        non-negative indices come back as they are. Without it CLAMP reads no value, so
        an unchecked call on a device makes no host synchronisation.
    to_host : callable, optional
        ``indices`` as a NumPy array, to find the bad one for the message; default
        ``numpy.asarray`` (through DLPack where the array has no buffer).

    Returns
    -------
    array
        For RAISE and CLAMP, the indices in ``[0, s)`` per component: ``indices`` itself
        where nothing needs changing, else a new array of their dtype (int64 where a
        size is beyond int32's range). For DROP, ``(indices, keep)``: bad components
        counted as 0 and ``keep`` False for every index (tuple) that had one.
    """
    if policy is BoundsPolicy.RAISE or (extremes is not None and policy is BoundsPolicy.CLAMP):
        if not _empty(indices):
            read = extremes or partial(default_extremes, xp)
            if _per_coordinate(plan):  # each coordinate against its own axis' size
                los, his = read(xp.reshape(indices, (-1, indices.shape[-1])), axis=0)
                admitted = all(
                    -s <= a and b < s for s, a, b in zip(plan.sizes, los, his, strict=True)
                )
                lo = min(los)
            else:
                lo, hi = read(indices)
                admitted = plan.admits(lo, hi)
            if not admitted and policy is BoundsPolicy.RAISE:
                _spec.raise_out_of_range(plan, (to_host or _host)(indices))
                admitted = True  # coordinates of several sizes: none was out of range
            if admitted and lo >= 0:
                return indices
            if admitted:
                indices = _widened(xp, indices, plan)
                return from_end(xp, indices, _bound(xp, plan, indices))
        elif policy is BoundsPolicy.RAISE:
            return indices
    indices = _widened(xp, indices, plan)
    bound = _bound(xp, plan, indices)
    plus = from_end(xp, indices, bound)
    if policy is BoundsPolicy.CLAMP:
        if _per_coordinate(plan):  # coordinates of axes of different sizes
            top = _bound(xp, plan, indices, [max(s - 1, 0) for s in plan.sizes])
            return xp.minimum(xp.maximum(plus, xp.zeros_like(top)), top)
        return xp.clip(plus, 0, max(bound - 1, 0))
    if policy is not BoundsPolicy.DROP:
        msg = f"unknown bounds policy {policy!r}; known: {', '.join(map(str, BoundsPolicy))}"
        raise ValueError(msg)
    bad = plan.outside(indices, xp)
    keep = ~bad
    if plan.coordinates:
        keep = xp.all(keep, axis=-1)
    return xp.where(bad, xp.zeros_like(plus), plus), keep


def _empty(indices: Array) -> bool:
    return any(n == 0 for n in indices.shape)


def _widened(xp: Any, indices: Array, plan: Plan) -> Array:
    """int32 indices as int64 where a size is beyond int32 (``i + s`` would wrap), else as given.

    Left as they are otherwise: a library without 64-bit integers (array-api-strict's
    device without them, JAX without x64) still takes int32 indices; so is a symbolic size
    (``jax.export``), which no comparison can decide.
    """
    sizes = plan.sizes if plan.coordinates else (plan.size,)
    wide = any(type(size) is int and size > INT32_MAX for size in sizes)
    if indices.dtype != xp.int64 and wide:
        return xp.astype(indices, xp.int64)
    return indices


def _bound(xp: Any, plan: Plan, like: Array, values: list[int] | None = None) -> Any:
    """The size each index component addresses (or ``values`` per coordinate).

    A number where every component addresses an axis of one size, else an array of
    ``like``'s dtype and device that broadcasts along the last (coordinate) dim.
    """
    if values is None and not _per_coordinate(plan):
        return plan.size if not plan.coordinates else plan.sizes[0]
    sizes = plan.sizes
    device = getattr(like, "device", None)
    extra = {} if device is None else {"device": device}
    return xp.asarray(sizes if values is None else values, dtype=like.dtype, **extra)


def _per_coordinate(plan: Plan) -> bool:
    """Whether index components address axes of different sizes (a bound per coordinate).

    Compared one by one, never hashed: under ``torch.compile`` sizes may be symbolic.
    """
    return plan.coordinates and any(s != plan.sizes[0] for s in plan.sizes)


def _host(indices: Array) -> np.ndarray:
    import numpy as np

    try:
        return np.asarray(indices)
    except (TypeError, RuntimeError, ValueError):
        return np.from_dlpack(indices)
