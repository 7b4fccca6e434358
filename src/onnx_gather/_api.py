"""The one path every call of every operator takes, in four steps.

1. **Backend**: the module that serves ``data``'s library (:func:`~._dispatch.backend_for`).
2. **Host inputs**: per role. Indices given as a Python int or sequence, or a NumPy array,
   become one NumPy array (:func:`~._host.index_array`); inputs of ``data``'s own library
   stay as they are; any other object is a TypeError naming both libraries. While a
   compiler traces this Python (``torch.compile``: it models NumPy arrays as tensors and
   cannot read their dtype), the backend makes host indices its own array instead
   (``Backend.host_under_trace``).
3. **Plan**: the operator's planner (the registry's ``planner``, one module of ``_spec``
   per operator) checks shapes, dtypes, attributes and version and returns its plan,
   cached per key (the operator, version, backend, attributes, ``check_bounds`` and each
   input's shape, dtype and type). Not while a compiler traces: the planner then runs
   once per compilation anyway, and a lookup would make the compiler guard on the cache
   (every later eager call would recompile the graph) and specialise symbolic sizes
   (``dynamic=True``). A call whose inputs are all of ``data``'s library finds its plan
   and its kernel in one lookup, before step 2 (which has nothing to do for it): the
   short path of small calls.
4. **Kernel**: the backend's method for the operator (the registry's ``method``) runs the
   plan (a scatter given ``out=`` writes into it, checked here once). It owns the bounds
   policy: it counts negative indices from the end, checks (when ``plan.check_bounds``)
   and computes in as few passes as its library allows, and raises ``_spec``'s
   IndexError where it reads the values.

Nothing here asks which operator runs: the registry record says all of it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeVar

from onnx_gather import _spec
from onnx_gather._backends import _dynamo
from onnx_gather._dispatch import backend_for, library_of
from onnx_gather._dtypes import numpy_dtype_name
from onnx_gather._host import Unrepresentable, index_array
from onnx_gather._memo import Memo

if TYPE_CHECKING:
    from collections.abc import Callable

    from onnx_gather._backends._base import Backend
    from onnx_gather._ops import Operator
    from onnx_gather._spec import Plan


_V = TypeVar("_V")

#: Plans by everything a planner reads.
_PLANS: Memo[tuple[Any, ...], Plan] = Memo(4096)
#: Calls whose inputs are all the backend's own arrays, by the same key as ``_PLANS``: the
#: plan and the backend's method that runs it (bound), found in one lookup.
_CALLS: Memo[tuple[Any, ...], tuple[Plan, Callable[..., Any]]] = Memo(4096)


def run(
    op: Operator,
    opset: Any,
    arrays: tuple[Any, ...],
    attributes: tuple[Any, ...],
    check_bounds: bool,
    out: Any = None,
) -> Any:
    """Check ``arrays`` (in ``op``'s input order) with ``op``'s planner; run its kernel.

    ``out`` (scatters): the array that receives the result, of data's library, shape and
    dtype; ``out`` is data updates data in place. (What ``torch.compile`` runs instead
    of tracing this: :mod:`._backends._dynamo`.)
    """
    return _run(op, opset, arrays, attributes, check_bounds, out)


def _run(
    op: Operator,
    opset: Any,
    arrays: tuple[Any, ...],
    attributes: tuple[Any, ...],
    check_bounds: bool,
    out: Any,
    write: bool = True,
) -> Any:
    """:func:`run`; with ``write`` False, ``out`` is checked and the result returned new.

    (What a compiler records, which then writes the result into ``out`` itself.)
    """
    # The registry's table answers the common case inline (a bool is no opset: not here).
    version = op.newest.get(opset) if type(opset) is int else None
    if version is None:
        version = op.resolve(opset)
    backend = backend_for(arrays[0])
    traced = backend.python_traced is not None and bool(backend.python_traced())
    key = None
    # Only a bool: a falsy None or 0 must not turn the check off unseen (nor 1 == True
    # find a plan), so anything else takes the checking path below.
    if not traced and out is None and (check_bounds is True or check_bounds is False):
        key = _key(op, version, backend, arrays, attributes, check_bounds)
        if key is not None:
            try:
                known = _CALLS.get(key)
            except TypeError:  # (a shape or dtype the planner will reject or explain)
                known = key = None
            if known is not None:  # (stored for the backend's own inputs: nothing to convert)
                return known[1](*arrays, known[0])
    owned = backend.owns(arrays[1])
    if not owned:  # host indices (or another library's: TypeError)
        arrays = (arrays[0], _host_indices(backend, arrays[1], arrays[0], traced), *arrays[2:])
    for role, x in zip(op.inputs[2:], arrays[2:], strict=True):  # updates: data's library
        if not backend.owns(x):
            _same_library(backend, role, x)
            owned = False
    if check_bounds is not True and check_bounds is not False:
        check_bounds = _spec.check_flag("check_bounds", check_bounds)
    method = getattr(backend, op.method)
    if owned and key is not None:
        plan = _planned(op, version, backend, arrays, attributes, check_bounds, False)
        _CALLS.put(key, (plan, method))
        return method(*arrays, plan)
    plan = _planned(op, version, backend, arrays, attributes, check_bounds, not traced)
    if type(arrays[1]) is Unrepresentable:
        arrays[1].raise_for(plan)
    if out is not None:
        _checked_out(backend, plan, arrays[0], out)
        if write:
            return method(*arrays, plan, out)
    return method(*arrays, plan)


_dynamo.install(run, _run)


def _same_library(backend: Backend, role: str, x: Any) -> None:
    """TypeError unless ``x`` (an input but data and indices) is an array of data's library."""
    try:
        same = backend_for(x) is backend
    except TypeError:
        same = False
    if not same:
        msg = (
            f"{role} is a {library_of(x)} {type(x).__name__} but data is a {backend.name} "
            f"array; pass {role} as an array of data's library"
        )
        raise TypeError(msg)


def _checked_out(backend: Backend, plan: Plan, data: Any, out: Any) -> Any:
    """``out`` if it can receive the result: data's library, the result's shape and dtype.

    Raises
    ------
    TypeError
        ``out`` is not an array of data's library, has another dtype, or the library's
        arrays cannot be written (the backend says how to update in place instead).
    ValueError
        ``out`` has another shape than the result.
    """
    _same_library(backend, "out", out)
    backend.check_writable(out)
    if backend.shape(out) != tuple(plan.out_shape):
        msg = f"{plan.op}: out has shape {backend.shape(out)}, the result has {plan.out_shape}"
        raise ValueError(msg)
    if backend.dtype_name(out) != backend.dtype_name(data):
        msg = (
            f"{plan.op}: out has dtype {backend.dtype_name(out)}, the result has data's "
            f"{backend.dtype_name(data)}"
        )
        raise TypeError(msg)
    return out


def _key(
    op: Operator,
    version: int,
    backend: Backend,
    arrays: tuple[Any, ...],
    attributes: tuple[Any, ...],
    check_bounds: bool,
) -> tuple[Any, ...] | None:
    """The cache key of a call: everything its planner reads; None where it has none.

    An attribute that is not a plain int or str (an ``__index__`` object) may change, and a
    bool equals an int: never a key. The arrays' own shape objects: a key is stored only
    after the planner accepted them (through ``backend.shape``, which also rejects
    unknown sizes).
    """
    # One int attribute (the gathers'), the common case, answered first.
    if (len(attributes) != 1 or type(attributes[0]) is not int) and not _keyable(attributes):
        return None
    try:
        key: tuple[Any, ...]
        if len(arrays) == 2:  # the gathers: one tuple, built at once
            data, indices = arrays
            key = (
                op, version, backend, attributes, check_bounds, data.shape, data.dtype,
                indices.shape, indices.dtype, type(indices),
            )  # fmt: skip
        else:
            parts = (part for x in arrays for part in (x.shape, x.dtype, type(x)))
            key = (op, version, backend, attributes, check_bounds, *parts)
    except Exception:
        # A shape or dtype that cannot be read (a nested tensor's), or host indices (a
        # list): the planner, through backend.shape and backend.dtype_name, says what is
        # wrong, or the host conversion reads them.
        return None
    return key


def _get(memo: Memo[tuple[Any, ...], _V], key: tuple[Any, ...] | None) -> _V | None:
    """``memo``'s value for ``key``; None for no key or one that cannot be hashed."""
    if key is None:
        return None
    try:
        return memo.get(key)
    except TypeError:  # (a shape or dtype the planner will reject or explain)
        return None


def _host_indices(backend: Backend, indices: Any, data: Any, traced: bool) -> Any:
    """Indices not of ``data``'s library: host indices as a NumPy array, else TypeError.

    Under a Python-tracing compiler, host indices become the backend's own array (typed as
    NumPy would type them), which the compiler can trace.
    """
    host = backend.host_under_trace(indices, data) if traced else index_array(indices)  # type: ignore[attr-defined]
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
    op: Operator,
    version: int,
    backend: Backend,
    arrays: tuple[Any, ...],
    attributes: tuple[Any, ...],
    check_bounds: bool,
    cached: bool,
) -> Plan:
    """The call's plan, from the cache or made by the operator's planner (which checks all)."""
    key = _key(op, version, backend, arrays, attributes, check_bounds) if cached else None
    plan = _get(_PLANS, key)
    if plan is not None:
        return plan
    shapes, dtypes = [], []
    for role, x in zip(op.inputs, arrays, strict=False):
        own = backend.owns(x)
        try:
            shapes.append(backend.shape(x) if own else x.shape)
        except ValueError as exc:  # (a shape the library cannot give: unknown sizes)
            raise ValueError(f"{role}: {exc}") from None
        if own:
            dtypes.append(backend.dtype_name(x))
        elif type(x) is Unrepresentable:  # (its name without NumPy: a compiler may trace this)
            dtypes.append(x.dtype_name)
        else:
            dtypes.append(numpy_dtype_name(x.dtype))
    plan = op.planner(op, version, tuple(shapes), tuple(dtypes), attributes, check_bounds)
    if key is not None:
        _PLANS.put(key, plan)
    return plan


def _keyable(attributes: tuple[Any, ...]) -> bool:
    """Whether every attribute is a plain int or str: values that may key the cache."""
    return all(type(a) is int or type(a) is str for a in attributes)
