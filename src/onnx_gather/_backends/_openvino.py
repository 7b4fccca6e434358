"""OpenVINO's scatters as ONNX scatters of a backend (:class:`Steps`: the base's methods).

``sub``, ``mean``, ``use_init_val=False`` and bool's XOR are a few ONNX scatters in a row,
each the library's exact kernel, so every backend computes them with the kernels it has.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
from array_api_compat import device

from onnx_gather._spec.reductions import Reduction

if TYPE_CHECKING:
    from collections.abc import Callable

    from onnx_gather._spec.openvino_scatter import OpenVINOScatterPlan, ScatterUpdatePlan
    from onnx_gather._typing import Array

#: Types whose mean divides in float32: one rounding of the exact quotient to theirs
#: (float32's 24 bits hold more than twice theirs, plus two: no double-rounding error).
_NARROW_FLOATS = frozenset({"float16", "bfloat16"})
_FLOATS = frozenset({"float16", "bfloat16", "float32", "float64"})
#: Integer types whose mean divides in int32 (any count fits; int32 holds their sums).
_NARROW_INTEGERS = frozenset({"int8", "int16", "uint8", "uint16"})


class Steps(Protocol):
    """What OpenVINO's scatters ask of a backend: :class:`~._base.Backend` has each.

    A protocol, so that this module, which the base imports, need not import the base.
    """

    @property
    def writes_in_place(self) -> bool:
        """Whether a scatter may write into an array the backend made itself."""

    def namespace(self, x: Array, /) -> Any:
        """``x``'s array-API namespace."""

    def dtype_name(self, x: Array, /) -> str:
        """The ONNX-style name of ``x``'s dtype."""

    def scatter_elements(
        self, data: Array, indices: Array, updates: Array, plan: Any, out: Array = None, /
    ) -> Any:
        """ONNX ScatterElements."""

    def without_negatives(self, indices: Array, data: Array, plan: ScatterUpdatePlan, /) -> Any:
        """ScatterUpdate's indices, checked against ``[0, s-1]``."""

    def negated(self, x: Array, /) -> Any:
        """``-x``, wrapping around for integers."""

    def filled(self, like: Array, value: Any, dtype: Any = None, /) -> Any:
        """An array of ``like``'s shape and device holding ``value``."""

    def mean(self, total: Array, counts: Array, use_init_val: bool, /) -> Any:
        """OpenVINO's ``mean`` of ``total`` over ``counts``."""

    def floor_divided(self, total: Array, n: Array, /) -> Any:
        """``floor(total / n)`` of integers."""


def scatter_update(
    backend: Steps, data: Array, indices: Array, updates: Array, plan: ScatterUpdatePlan,
    out: Array,
) -> Any:  # fmt: skip
    """ScatterUpdate-3: ScatterElements of the flattened indices, broadcast over the updates."""
    indices = backend.without_negatives(indices, data, plan)
    xi = np if isinstance(indices, np.ndarray) else backend.namespace(indices)
    index = xi.broadcast_to(xi.reshape(indices, plan.index_shape), plan.updates_shape)
    if xi is np:  # (host indices: the kernels take a dense array)
        index = np.ascontiguousarray(index)
    updates = backend.namespace(updates).reshape(updates, plan.updates_shape)
    return backend.scatter_elements(data, index, updates, plan.inner, out)


def reduced(
    backend: Steps,
    scatter: Callable[..., Any],
    data: Array,
    indices: Array,
    updates: Array,
    plan: OpenVINOScatterPlan,
    out: Array,
) -> Any:
    """ScatterElementsUpdate or ScatterNDUpdate by ``scatter``, the backend's ONNX kernel.

    One call for a plain reduction, and for ``sub`` of numbers (the negated updates
    added: ``x - u`` is ``x + (-u)``, exactly, in every type). Otherwise the result is made
    first, then written into ``out``:

    - ``use_init_val=False``: the touched elements are set to the identity first;
    - bool ``sub`` (XOR): data XOR whether an odd number of True updates landed there;
    - ``mean``: the sum, then divided by the count of updates that landed (one more with
      ``use_init_val``), which a scatter-add of ones into int32 zeros counts.

    The first scatter checks the indices; the later ones need not (``check_bounds``
    False: unchecked, every one drops the same updates). Where the backend
    :attr:`~._base.Backend.writes_in_place`, a reduction's second scatter writes into the
    first's new result.
    """
    inner = plan.inner
    reduction = plan.reduction
    is_bool = backend.dtype_name(data) == "bool"
    if plan.steps() == 1:
        if reduction == "sub" and not is_bool:
            updates = backend.negated(updates)
        elif reduction == "sub":  # (bool: XOR)
            return _written(backend, _xor(backend, scatter, data, indices, updates, inner), out)
        return scatter(data, indices, updates, inner, out)
    start = data
    if not plan.use_init_val:
        identity = backend.filled(updates, _identity(reduction, backend.dtype_name(data)))
        start = scatter(data, indices, identity, inner._replace(reduction=Reduction.NONE))
        inner = inner._replace(check_bounds=False)
    if reduction == "sub" and is_bool:
        result = _xor(backend, scatter, start, indices, updates, inner)
    elif reduction == "sub":
        result = scatter(start, indices, backend.negated(updates), inner)
    elif reduction == "mean":
        total = scatter(start, indices, updates, inner)
        counts = _counts(backend, scatter, data, indices, updates, inner)
        result = backend.mean(total, counts, plan.use_init_val)
    elif start is not data and backend.writes_in_place:
        # (into the first scatter's new result: one copy of data fewer)
        result = scatter(start, indices, updates, inner, start)
    else:
        result = scatter(start, indices, updates, inner)
    return _written(backend, result, out)


def _xor(
    backend: Steps, scatter: Callable[..., Any], start: Array, indices: Array,
    updates: Array, inner: Any,
) -> Any:  # fmt: skip
    """Bool ``sub``: ``start`` XOR whether an odd number of True updates landed there."""
    xp = backend.namespace(start)
    ones = xp.astype(updates, xp.int32)
    zeros = backend.filled(start, 0, xp.int32)
    counts = scatter(zeros, indices, ones, inner._replace(reduction=Reduction.ADD))
    return xp.logical_xor(start, (counts % 2) == 1)


def _counts(
    backend: Steps, scatter: Callable[..., Any], data: Array, indices: Array,
    updates: Array, inner: Any,
) -> Any:  # fmt: skip
    """How many updates land on each element of data (int32), without a check."""
    xp = backend.namespace(data)
    ones = backend.filled(updates, 1, xp.int32)
    zeros = backend.filled(data, 0, xp.int32)
    plan = inner._replace(reduction=Reduction.ADD, check_bounds=False)
    return scatter(zeros, indices, ones, plan)


def _written(backend: Steps, result: Array, out: Array) -> Any:
    """``result``, or ``out`` holding it."""
    if out is None:
        return result
    out[...] = result
    return out


def _identity(reduction: str, dtype: str) -> Any:
    """The value a touched element starts from with ``use_init_val=False``."""
    if reduction in ("sum", "sub", "mean"):
        return 0
    if reduction == "prod":
        return 1
    biggest = reduction == "min"
    if dtype == "bool":
        return biggest  # (min: AND, from True; max: OR, from False)
    if dtype in _FLOATS:
        return float("inf") if biggest else float("-inf")
    info = np.iinfo(np.dtype(dtype))
    return int(info.max) if biggest else int(info.min)


def mean(backend: Steps, total: Array, counts: Array, use_init_val: bool) -> Any:
    """``total / n`` where updates landed (``n``: their count, plus one with ``use_init_val``).

    Floats: the quotient rounded once to data's type (float16 and bfloat16 divide in
    float32, whose result rounds to theirs exactly as the quotient would), a NaN one the
    canonical quiet NaN as a NaN sum is (torch widens a lone float16 NaN to float32 as
    0x7FFFFFFF, which narrows back as 0x7FFF); integers round down, toward -inf
    (:meth:`~._base.Backend.floor_divided`). Untouched elements keep data's bits.
    """
    xp = backend.namespace(total)
    touched = counts > 0
    n = counts + 1 if use_init_val else xp.where(touched, counts, xp.ones_like(counts))
    name = backend.dtype_name(total)
    if name in _FLOATS:
        wide = xp.float32 if name in _NARROW_FLOATS else total.dtype
        # (Every element is divided, untouched ones too: NumPy would warn of their
        # signalling NaNs, which the where below drops.)
        with np.errstate(invalid="ignore", divide="ignore"):
            quotient = xp.astype(xp.astype(total, wide) / xp.astype(n, wide), total.dtype)
            # (``full``, not ``asarray``: a factory a torch decomposition traces, where a
            # tensor made from a value is a constant it cannot lift)
            nan = xp.full((), float("nan"), dtype=total.dtype, device=device(total))
            quotient = xp.where(quotient != quotient, nan, quotient)
    else:
        quotient = backend.floor_divided(total, n)
    return xp.where(touched, quotient, total)


def floor_divided(xp: Any, total: Array, n: Array, name: str) -> Any:
    """``floor(total / n)`` of integers ``total`` and positive int32 ``n``, in total's type."""
    wide = xp.int32 if name in _NARROW_INTEGERS else total.dtype
    quotient = xp.floor_divide(xp.astype(total, wide), xp.astype(n, wide))
    return xp.astype(quotient, total.dtype)
