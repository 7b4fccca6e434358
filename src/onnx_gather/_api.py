"""The one path every call takes, in four steps.

1. **Backend**: the module that serves ``data``'s library (:func:`~._dispatch.backend_for`).
2. **Host indices**: a Python int or sequence, or a NumPy array, becomes one NumPy array
   (:func:`~._host.index_array`); indices of ``data``'s own library stay as they are; any
   other object is a TypeError naming both libraries.
3. **Plan**: ``_spec`` checks shapes, dtypes, axis and version and returns a
   :class:`~._spec.Plan`, cached per key (shapes, dtypes, axis, version, ``check_bounds``).
4. **Kernel**: the backend's kernel runs the plan. It owns the bounds policy: it counts
   negative indices from the end, checks (when ``plan.check_bounds``) and gathers in as few
   passes as its library allows, and raises ``_spec``'s IndexError where it reads the values.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

from onnx_gather import _spec
from onnx_gather._dispatch import backend_for, library_of
from onnx_gather._dtypes import numpy_dtype_name
from onnx_gather._host import Unrepresentable, index_array

if TYPE_CHECKING:
    from collections.abc import Callable

    from onnx_gather._backends._base import Backend, Kernel
    from onnx_gather._spec import Plan

    Planner = Callable[[Any, tuple[int, ...], str, tuple[int, ...], str, Any, bool], Plan]


class _Entry(NamedTuple):
    """What a call's key determines: its plan and its kernel."""

    plan: Plan
    kernel: Kernel


# Entries by everything a planner reads. Bounded: a program sees few distinct shapes, and a
# stream of new ones (e.g. variable batch sizes) must not grow it without end.
_PLANS: dict[tuple[Any, ...], _Entry] = {}
_MAX_PLANS = 4096


def run(
    planner: Planner,
    version: int | None,
    data: Any,
    indices: Any,
    axis: Any,
    check_bounds: bool,
) -> Any:
    """Check ``data`` and ``indices`` with ``planner`` and run the matching backend kernel."""
    backend = backend_for(data)
    indices = _own_or_host(backend, indices)
    plan, kernel = _planned(planner, version, backend, data, indices, axis, check_bounds)
    if isinstance(indices, Unrepresentable):
        _spec.raise_out_of_range(plan, indices.values)
    return kernel(data, indices, plan)


def _own_or_host(backend: Backend, indices: Any) -> Any:
    """Indices of ``data``'s library as given; host indices as a NumPy array; else TypeError."""
    if backend.owns(indices):
        return indices
    host = index_array(indices)
    if host is None:
        msg = (
            f"indices is a {library_of(indices)} {type(indices).__name__} but data is a "
            f"{backend.name} array; pass indices as a {backend.name} array, a NumPy array "
            f"or a Python int or sequence of ints"
        )
        raise TypeError(msg)
    return host


def _planned(
    planner: Planner,
    version: int | None,
    backend: Backend,
    data: Any,
    indices: Any,
    axis: Any,
    check_bounds: bool,
) -> _Entry:
    """The call's plan and kernel, from the cache or made by ``planner`` (which checks all)."""
    key: tuple[Any, ...] | None = None
    if type(axis) is int:  # anything else (an __index__ object) may change: never a key
        # The arrays' own shape objects: a key is stored only after the planner accepted
        # them (through backend.shape, which also rejects unknown sizes).
        key = (
            planner, version, backend, data.shape, data.dtype, indices.shape, indices.dtype,
            type(indices), axis, check_bounds,
        )  # fmt: skip
        try:
            entry = _PLANS.get(key)
        except TypeError:  # an unhashable shape or dtype: let the planner say what is wrong
            entry = key = None
        if entry is not None:
            return entry
    own = backend.owns(indices)
    plan = planner(
        version,
        backend.shape(data),
        backend.dtype_name(data),
        backend.shape(indices) if own else indices.shape,
        backend.dtype_name(indices) if own else numpy_dtype_name(indices.dtype),
        axis,
        check_bounds,
    )
    entry = _Entry(plan, backend.gather_elements if plan.elements else backend.gather)
    if key is not None:
        if len(_PLANS) >= _MAX_PLANS:
            _PLANS.clear()
        _PLANS[key] = entry
    return entry
