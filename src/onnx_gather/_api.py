"""The one path every call takes: find the backend, check and normalise once, run the kernel."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from onnx_gather import _spec
from onnx_gather._dispatch import backend_for, host_indices, library_of
from onnx_gather._dtypes import numpy_dtype_name

if TYPE_CHECKING:
    from collections.abc import Callable

    from onnx_gather._spec import Plan

    Planner = Callable[[Any, tuple[int, ...], str, tuple[int, ...], str, Any, bool], Plan]


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
    host = None if backend.owns(indices) else host_indices(indices)
    if host is None:
        if not backend.owns(indices):
            msg = (
                f"indices is a {library_of(indices)} {type(indices).__name__} but data is a "
                f"{backend.name} array; pass indices as a {backend.name} array, a NumPy array "
                f"or a Python int or sequence of ints"
            )
            raise TypeError(msg)
        shape, dtype = backend.shape(indices), backend.dtype_name(indices)
    else:
        shape, dtype = host.shape, numpy_dtype_name(host.dtype)
    plan = planner(
        version, backend.shape(data), backend.dtype_name(data), shape, dtype, axis, check_bounds
    )

    negative = True  # unless the values say otherwise
    if 0 in shape:
        negative = False
    elif host is not None:
        # Host indices are checked on the host, before they travel to the data's device.
        lo, hi = int(host.min()), int(host.max())
        if check_bounds:
            _spec.check_range(plan, lo, hi, lambda: host)
        negative = lo < 0
    elif check_bounds:
        bounds = backend.index_range(indices)
        if bounds is not None:
            _spec.check_range(plan, *bounds, lambda: backend.to_host(indices))
            negative = bounds[0] < 0
    indices = backend.adopt(indices, data) if host is None else backend.from_host(host, data)
    kernel = backend.gather_elements if plan.elements else backend.gather
    return kernel(data, indices, plan, negative)
