"""The one path every call takes: find the backend, check and normalise once, run the kernel.

The path is short because it runs on every call, also on tiny arrays:

* the :class:`~onnx_gather._spec.Plan` of a call depends only on the shapes, dtypes, axis,
  version and ``check_bounds``, so it is made by ``_spec`` once per such key and reused;
* where a backend's kernel raises on an out-of-range index by itself (it says so through
  its optional ``kernel_checks(plan, data, indices)`` hook, which returns the exception
  types it raises: NumPy, and PyTorch on the CPU), there is no range pre-pass: the kernel
  runs, and only if it raises are the indices read to build the IndexError, through
  ``_spec`` as always.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from onnx_gather import _spec
from onnx_gather._dispatch import backend_for, beyond_int64, host_indices, library_of
from onnx_gather._dtypes import numpy_dtype_name
from onnx_gather._host import value_range

if TYPE_CHECKING:
    from collections.abc import Callable

    from onnx_gather._backends._base import Backend
    from onnx_gather._spec import Plan

    Planner = Callable[[Any, tuple[int, ...], str, tuple[int, ...], str, Any, bool], Plan]


class _Entry(NamedTuple):
    """What a call's key determines: its plan, its kernel and whether the output is read."""

    plan: Plan
    kernel: Callable[[Any, Any, Plan, bool], Any]
    kernel_checks: Callable[[Plan, Any, Any], tuple[type[Exception], ...]] | None
    reads: bool  # the output is not empty


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
    wide = None
    if backend.owns(indices):
        host, given = None, indices
    else:
        host = given = host_indices(indices)
        if host is None:
            msg = (
                f"indices is a {library_of(indices)} {type(indices).__name__} but data is a "
                f"{backend.name} array; pass indices as a {backend.name} array, a NumPy array "
                f"or a Python int or sequence of ints"
            )
            raise TypeError(msg)
        wide = beyond_int64(indices, host)
        if wide is not None:
            given = np.zeros(host.shape, np.int64)  # planned as the int64 indices they meant
    try:
        # The arrays' own shape objects: a key is stored only after the planner accepted
        # them (through backend.shape, which also rejects unknown sizes). type(axis):
        # True == 1 as a key, but only the int is a valid axis.
        key: tuple[Any, ...] | None = (
            planner, version, backend, data.shape, data.dtype, given.shape, given.dtype,
            host is None, type(axis), axis, check_bounds,
        )  # fmt: skip
        entry = _PLANS.get(key)  # type: ignore[arg-type]
    except TypeError:  # an unhashable argument: let the planner say what is wrong with it
        key, entry = None, None
    if entry is None:
        entry = _plan(planner, version, backend, data, given, host is None, axis, check_bounds)
        if key is not None:
            if len(_PLANS) >= _MAX_PLANS:
                _PLANS.clear()
            _PLANS[key] = entry
    plan, kernel, kernel_checks, reads = entry
    if wide is not None:
        raise _spec.index_error(plan, wide)

    # (An empty output reads nothing, so a kernel may not look at its indices at all.)
    if check_bounds and reads and kernel_checks is not None:
        errors = kernel_checks(plan, data, indices)
        if errors:
            placed = backend.adopt(indices, data) if host is None else backend.from_host(host, data)
            try:
                return kernel(data, placed, plan, True)
            except errors:
                values = host if host is not None else backend.to_host(indices)
                _spec.check_range(plan, *value_range(values), lambda: values)
                raise  # not an index out of range: the kernel's own error stands

    negative = True  # unless the values say otherwise
    if 0 in given.shape:
        negative = False
    elif host is not None:
        # Host indices are checked on the host, before they travel to the data's device.
        lo, hi = value_range(host)
        if check_bounds:
            _spec.check_range(plan, lo, hi, lambda: host)
        negative = lo < 0
    elif check_bounds:
        bounds = backend.index_range(indices)
        if bounds is not None:
            _spec.check_range(plan, *bounds, lambda: backend.to_host(indices))
            negative = bounds[0] < 0
    indices = backend.adopt(indices, data) if host is None else backend.from_host(host, data)
    return kernel(data, indices, plan, negative)


def _plan(
    planner: Planner,
    version: int | None,
    backend: Backend,
    data: Any,
    indices: Any,
    owned: bool,
    axis: Any,
    check_bounds: bool,
) -> _Entry:
    """Plan a call with ``planner`` (which checks everything) and pick its kernel."""
    shape = backend.shape(indices) if owned else indices.shape
    index_name = backend.dtype_name(indices) if owned else numpy_dtype_name(indices.dtype)
    plan = planner(
        version,
        backend.shape(data),
        backend.dtype_name(data),
        shape,
        index_name,
        axis,
        check_bounds,
    )
    return _Entry(
        plan,
        backend.gather_elements if plan.elements else backend.gather,
        getattr(backend, "kernel_checks", None),
        0 not in plan.out_shape,
    )
