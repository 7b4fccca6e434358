"""The one path every call takes, in four steps.

1. **Backend**: the module that serves ``data``'s library (:func:`~._dispatch.backend_for`).
2. **Host indices**: a Python int or sequence, or a NumPy array, becomes one NumPy array
   (:func:`~._host.index_array`); indices of ``data``'s own library stay as they are; any
   other object is a TypeError naming both libraries. While a compiler traces this Python
   (``torch.compile``: it models NumPy arrays as tensors and cannot read their dtype), the
   backend makes host indices its own array instead (``Backend.host_under_trace``).
3. **Plan**: ``_spec`` checks shapes, dtypes, axis and version and returns a
   :class:`~._spec.Plan`, cached per key (shapes, dtypes, axis, version, ``check_bounds``).
   Not while a compiler traces: the planner then runs once per compilation anyway, and a
   lookup would make the compiler guard on the cache (every later eager call would
   recompile the graph) and specialise symbolic sizes (``dynamic=True``).
4. **Kernel**: the backend's kernel runs the plan. It owns the bounds policy: it counts
   negative indices from the end, checks (when ``plan.check_bounds``) and gathers in as few
   passes as its library allows, and raises ``_spec``'s IndexError where it reads the values.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from onnx_gather import _spec
from onnx_gather._dispatch import backend_for, library_of
from onnx_gather._dtypes import numpy_dtype_name
from onnx_gather._host import Unrepresentable, index_array
from onnx_gather._memo import Memo

if TYPE_CHECKING:
    from collections.abc import Callable

    from onnx_gather._backends._base import Backend
    from onnx_gather._spec import Plan

    Planner = Callable[[Any, tuple[int, ...], str, tuple[int, ...], str, Any, bool], Plan]


#: Plans by everything a planner reads.
_PLANS: Memo[tuple[Any, ...], Plan] = Memo(4096)


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
    traced = _python_traced(backend)
    indices = _own_or_host(backend, indices, traced)
    plan = _planned(planner, version, backend, data, indices, axis, check_bounds, not traced)
    if isinstance(indices, Unrepresentable):
        _spec.raise_out_of_range(plan, indices.values)
    kernel = backend.gather_elements if plan.elements else backend.gather
    return kernel(data, indices, plan)


def _python_traced(backend: Backend) -> bool:
    """Whether a compiler is tracing this call's Python code (``torch.compile``).

    Asked of backends that define ``python_traced`` (only torch's): a JAX trace runs the
    Python as usual, on tracers, and NumPy code in it is plain NumPy.
    """
    traced = getattr(backend, "python_traced", None)
    return traced is not None and bool(traced())


def _own_or_host(backend: Backend, indices: Any, traced: bool) -> Any:
    """Indices of ``data``'s library as given; host indices as a NumPy array; else TypeError.

    Under a Python-tracing compiler, host indices become the backend's own array (typed as
    NumPy would type them), which the compiler can trace.
    """
    if backend.owns(indices):
        return indices
    convert = backend.host_under_trace if traced else index_array  # type: ignore[attr-defined]
    host = convert(indices)
    if host is None:
        own = "" if backend.name == "numpy" else f"a {backend.name} array, "
        msg = (
            f"indices is a {library_of(indices)} {type(indices).__name__} but data is a "
            f"{backend.name} array; pass indices as {own}a NumPy array or a Python int or "
            f"sequence of ints"
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
    cached: bool,
) -> Plan:
    """The call's plan, from the cache or made by ``planner`` (which checks everything)."""
    key: tuple[Any, ...] | None = None
    if cached and type(axis) is int:  # anything else (an __index__ object) may change: never a key
        # The arrays' own shape objects: a key is stored only after the planner accepted
        # them (through backend.shape, which also rejects unknown sizes).
        try:
            key = (
                planner, version, backend, data.shape, data.dtype, indices.shape,
                indices.dtype, type(indices), axis, check_bounds,
            )  # fmt: skip
            plan = _PLANS.get(key)
        except Exception:
            # A shape or dtype that cannot be read (a nested tensor's) or hashed: let the
            # planner, through backend.shape and backend.dtype_name, say what is wrong.
            plan = key = None
        if plan is not None:
            return plan
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
    if key is not None:
        _PLANS.put(key, plan)
    return plan
