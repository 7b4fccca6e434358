"""The one path of every call: backend, inputs, plan, kernel (:func:`run`).

A call seen before finds its plan and its bound kernel in one lookup. Nothing here asks
which operator runs: the operator's registry record says all of it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

from onnx_gather import _spec
from onnx_gather._backends import _dynamo
from onnx_gather._dispatch import backend_for, known_backend, library_of
from onnx_gather._dtypes import holds_objects, numpy_dtype_name
from onnx_gather._host import Unrepresentable, index_array
from onnx_gather._memo import Memo

if TYPE_CHECKING:
    from onnx_gather._backends._base import Backend, Call
    from onnx_gather._ops import Operator
    from onnx_gather._spec import Plan
    from onnx_gather._typing import Array


#: Every call's plan, bound to the backend's kernel (:meth:`Backend.bind`), by everything
#: the planner reads and the binding may specialise on (:func:`_key`).
_CALLS: Memo[tuple[Any, ...], Known] = Memo(4096)


class Known(NamedTuple):
    """A call seen before: its plan and its bound kernel.

    ``owned``: whether its inputs were all the backend's own (then the next call needs
    nothing converted: the short path).
    """

    plan: Plan
    call: Call
    owned: bool


def run(
    op: Operator,
    opset: Any,
    arrays: tuple[Array, ...],
    attributes: tuple[Any, ...],
    check_bounds: bool,
    out: Array = None,
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
    arrays: tuple[Array, ...],
    attributes: tuple[Any, ...],
    check_bounds: bool,
    out: Array,
    write: bool = True,
) -> Any:
    """:func:`run`; with ``write`` False, ``out`` is checked and the result returned new.

    (What a compiler records, which then writes ``out`` itself.)

    1. The backend of ``data``'s library.
    2. The inputs: host indices (a Python int or sequence, a NumPy array) become one array
       (:func:`_host_indices`); an input of another library is a TypeError.
    3. The plan: the operator's planner checks shapes, dtypes, attributes and version; the
       backend binds it to its kernel (:meth:`~._backends._base.Backend.bind`), kept under
       :func:`_key` unless a compiler traces this Python
       (:meth:`~._backends._base.Backend.traced`).
    4. The kernel owns the bounds policy: it counts negative indices from the end, checks,
       and raises ``_spec``'s IndexError where it reads the values.
    """
    data = arrays[0]
    backend = known_backend(type(data))
    if backend is None:
        backend = backend_for(data)
    traced = backend.traced()
    key = known = None
    # Only an int opset and a bool flag key a call: a falsy None or 0 must not turn the
    # check off unseen (nor 1 == True find a call), so anything else is checked by the
    # planner's rule below, and True is no opset.
    if not traced and type(opset) is int and (check_bounds is True or check_bounds is False):
        key = _key(op, opset, arrays, attributes, check_bounds, out)
        try:
            known = None if key is None else _CALLS.get(key)
        except TypeError:  # (a shape or dtype the planner will reject or explain)
            key = None
        if known is not None and known.owned:  # the short path: nothing to convert or plan
            if out is not None:
                backend.check_writable(out)  # (its layout, which the key does not hold)
            return known.call(arrays, out if write else None)
    # The registry's table answers the common case inline (a bool is no opset: not here).
    version = op.newest.get(opset) if type(opset) is int else None
    if version is None:
        version = op.resolve(opset)
    arrays, owned = _inputs(op, backend, arrays, traced)
    if known is None:
        if check_bounds is not True and check_bounds is not False:
            check_bounds = _spec.check_flag("check_bounds", check_bounds)
        plan = _planned(op, version, backend, arrays, attributes, check_bounds, not traced)
    else:
        plan = known.plan
    if type(arrays[op.indices_at]) is Unrepresentable:
        arrays[op.indices_at].raise_for(plan)
    if out is not None:
        _checked_out(backend, plan, arrays[0], out)
    if known is None:  # (kept only now: the key holds out, which is checked above)
        bind = backend.leading if plan.lead else backend.bind
        call = bind(op.method, plan, arrays)
        if any(holds_objects(x) for x in arrays):
            call = backend.checking_strings(call, op.inputs)  # (ONNX strings: text alone)
        if plan.result_shape is not None:
            call = backend.reshaping(call, plan.result_shape)
        known = Known(plan, call, owned)
        if key is not None:
            _CALLS.put(key, known)
    return known.call(arrays, out if write else None)


_dynamo.install(run, _run)


def _inputs(
    op: Operator, backend: Backend, arrays: tuple[Array, ...], traced: bool
) -> tuple[tuple[Any, ...], bool]:
    """The arrays the kernel takes, and whether they were all the backend's own already.

    Host indices become one array (:func:`_host_indices`); any other input of another
    library is a TypeError.
    """
    at = op.indices_at
    owned = backend.owns(arrays[at])
    if not owned:
        indices = _host_indices(backend, arrays[at], arrays[0], traced)
        arrays = (*arrays[:at], indices, *arrays[at + 1 :])
    for n, (role, x) in enumerate(zip(op.inputs, arrays, strict=True)):
        if n and n != at and not backend.owns(x):  # (updates: data's library)
            _same_library(backend, role, x)
            owned = False
    return arrays, owned


def _same_library(backend: Backend, role: str, x: Array) -> None:
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


def _checked_out(backend: Backend, plan: Plan, data: Array, out: Array) -> Any:
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
    shape = tuple(plan.out_shape if plan.result_shape is None else plan.result_shape)
    if backend.shape(out) != shape:
        msg = f"{plan.op}: out has shape {backend.shape(out)}, the result has {shape}"
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
    opset: int,
    arrays: tuple[Array, ...],
    attributes: tuple[Any, ...],
    check_bounds: bool,
    out: Array,
) -> tuple[Any, ...] | None:
    """The cache key of a call: everything its planner and binding read; None where none.

    The opset as given (two opsets of one version are two keys: the version is looked up
    only on a miss). No backend: data's type, which the key holds, decides it. An
    attribute that is not a plain int or str (an ``__index__`` object) may change, and a
    bool equals an int: never a key. The arrays' own shape objects: a key is stored only
    after the planner accepted them (through ``backend.shape``, which also rejects
    unknown sizes). With ``out``: its shape, dtype and type, which ``_checked_out``
    accepted, and whether it is data (an in-place call).
    """
    # One or two int or str attributes (the gathers' axis; a scatter's axis and reduction,
    # TensorScatter's axis and mode), the common cases first.
    n = len(attributes)
    if not (
        (n == 1 and type(attributes[0]) in _PLAIN)
        or (n == 2 and type(attributes[0]) in _PLAIN and type(attributes[1]) in _PLAIN)
    ):
        keyed = _keyed(attributes)
        if keyed is None:
            return None
        attributes = keyed
    try:
        key: tuple[Any, ...]
        data, indices = arrays[0], arrays[1]
        if len(arrays) == 2:  # the gathers: one tuple, built at once
            key = (
                op, opset, attributes, check_bounds, data.shape, data.dtype, type(data),
                indices.shape, indices.dtype, type(indices),
            )  # fmt: skip
            if out is None:
                return key
        elif len(arrays) == 3:  # the scatters
            updates = arrays[2]
            key = (
                op, opset, attributes, check_bounds, data.shape, data.dtype, type(data),
                indices.shape, indices.dtype, type(indices), updates.shape, updates.dtype,
                type(updates),
            )  # fmt: skip
        else:
            parts = (part for x in arrays for part in (x.shape, x.dtype, type(x)))
            key = (op, opset, attributes, check_bounds, *parts)
        if out is data:  # (in place: out's shape, dtype and type are data's)
            key = (*key, True)
        elif out is not None:
            key = (*key, False, out.shape, out.dtype, type(out))
    except Exception:
        # A shape or dtype that cannot be read (a nested tensor's), or host indices (a
        # list): the planner, through backend.shape and backend.dtype_name, says what is
        # wrong, or the host conversion reads them.
        return None
    return key


def _host_indices(backend: Backend, indices: Array, data: Array, traced: bool) -> Any:
    """Indices not of ``data``'s library: host indices as a NumPy array, else TypeError.

    Under a Python-tracing compiler, host indices become the backend's own array (typed as
    NumPy would type them), which the compiler can trace.
    """
    host = backend.host_under_trace(indices, data) if traced else index_array(indices)
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
    arrays: tuple[Array, ...],
    attributes: tuple[Any, ...],
    check_bounds: bool,
    kept: bool,
) -> Plan:
    """The call's plan by the operator's planner (which checks everything): :meth:`Operator.plan`.

    ``kept``: whether the plan cache may keep it (not while a compiler traces this Python).
    """
    shapes, dtypes = [], []
    for name, x in zip(op.input_names, arrays, strict=False):
        own = backend.owns(x)
        try:
            shapes.append(backend.shape(x) if own else x.shape)
        except ValueError as exc:  # (a shape the library cannot give: unknown sizes)
            raise ValueError(f"{op.label}: {name} is {exc}") from None
        if own:
            dtypes.append(backend.dtype_name(x))
        elif type(x) is Unrepresentable:  # (its name without NumPy: a compiler may trace this)
            dtypes.append(x.dtype_name)
        else:
            dtypes.append(numpy_dtype_name(x.dtype))
    return op.plan(version, tuple(shapes), tuple(dtypes), attributes, check_bounds, kept=kept)


_PLAIN = (int, str)


def _keyed(attributes: tuple[Any, ...]) -> tuple[Any, ...] | None:
    """The attributes as a key holds them; None where one may not key the cache.

    Plain ints and strs as they are; a bool (a flag: OpenVINO's ``use_init_val``) as a
    1-tuple, since ``True == 1`` would make a call with an int find it.
    """
    keyed: list[Any] = []
    for a in attributes:
        if type(a) is int or type(a) is str:
            keyed.append(a)
        elif type(a) is bool:
            keyed.append((a,))
        else:
            return None
    return tuple(keyed)
