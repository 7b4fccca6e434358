"""Which backend serves an array, found once per array type and cached.

Libraries are recognised with array_api_compat's ``is_*_array`` helpers, which look in
``sys.modules`` and never import a framework. A backend module (which imports its
framework) is imported only when an array of that framework arrives.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

import array_api_compat as compat
import numpy as np

from onnx_gather._memo import Memo

if TYPE_CHECKING:
    from collections.abc import Callable

    from onnx_gather._backends._base import Backend
    from onnx_gather._typing import Array

_BY_TYPE: Memo[type, Backend] = Memo(256)
#: ``known_backend(type(x))``: the backend :func:`backend_for` found for arrays of that
#: type, or None (the memo's own lookup: every call's path reads it inline).
known_backend = _BY_TYPE.get
#: A tuple, not ``np.ndarray | np.generic``: torch.compile traces :func:`_select` and
#: Dynamo cannot build a union of types (torch 2.13).
_NUMPY_TYPES = (np.ndarray, np.generic)


def backend_for(data: Array) -> Backend:
    """Return the backend for ``data``'s library.

    Raises
    ------
    TypeError
        If ``data`` is not an array of a library this package can serve.
    """
    kind = type(data)
    backend = _BY_TYPE.get(kind)
    if backend is None:
        backend = _BY_TYPE.put(kind, _select(data))
    return backend


def _is_numpy(data: Array) -> bool:
    return isinstance(data, _NUMPY_TYPES)


def _is_torch(data: Array) -> bool:
    # Without array_api_compat: torch.compile traces this on a compiled call that precedes
    # any eager one, and Dynamo warns about the functools.lru_cache inside compat's
    # is_*_array helpers (torch 2.13.0).
    tensor = getattr(sys.modules.get("torch"), "Tensor", None)
    return isinstance(tensor, type) and isinstance(data, tensor)


def _numpy_backend() -> Backend:
    from onnx_gather._backends._numpy import backend

    return backend


def _torch_backend() -> Backend:
    from onnx_gather._backends._torch import backend

    return backend


def _jax_backend() -> Backend:
    from onnx_gather._backends._jax import backend

    return backend


def _dask_backend() -> Backend:
    from onnx_gather._backends._dask import backend

    return backend


#: The libraries with a backend of their own: whether an array is one of theirs, and its
#: backend, from its package (which imports its framework: imported when its first array
#: arrives; an import statement, which torch.compile traces, not importlib's call).
#: NumPy first: the package imports it, so it is always whole, and its arrays are the
#: common case. The others are looked up in ``sys.modules``, where a library may be only
#: partly initialised while another thread imports it: a missing attribute then means
#: "not this library" (the data cannot be one of its arrays yet), never an error (:func:`_is`).
#: A new library is a row here (and its loader) and a package in ``_backends``.
_LIBRARIES: tuple[tuple[Callable[[Any], bool], Callable[[], Backend]], ...] = (
    (_is_numpy, _numpy_backend),
    (_is_torch, _torch_backend),
    (compat.is_jax_array, _jax_backend),
    (compat.is_dask_array, _dask_backend),
)


def _select(data: Array) -> Backend:
    """The backend of the first library in :data:`_LIBRARIES` that ``data`` belongs to.

    Else any other array-API library's (CuPy included, through array_api_compat's
    namespace for it), else a TypeError.
    """
    for belongs, load in _LIBRARIES:
        if _is(belongs, data):
            return load()
    try:
        xp = compat.array_namespace(data)
    except (TypeError, AttributeError):
        msg = (
            f"data must be an array of NumPy, PyTorch, JAX, Dask, CuPy or an array-API "
            f"library, got a {library_of(data)} object of type {type(data).__name__}"
        )
        raise TypeError(msg) from None
    from onnx_gather._backends._array_api import ArrayAPIBackend

    return ArrayAPIBackend(xp)


def _is(helper: Callable[[Any], bool], data: Array) -> bool:
    """``helper(data)``, False where the library it looks up is still being imported."""
    try:
        return helper(data)
    except AttributeError:  # e.g. "partially initialized module 'jax' has no attribute"
        return False


def library_of(x: Array) -> str:
    """The library of ``x``'s type, for messages: "NumPy", "Python", "jax", "array"..."""
    module = type(x).__module__.split(".")[0]
    return {"jaxlib": "jax", "numpy": "NumPy", "builtins": "Python"}.get(module, module)


def describe(x: Array) -> str:
    """``x``'s type with its library and article, for messages.

    "a Python NoneType", "a NumPy MaskedArray", "an array_api_strict Array", "a jax ArrayImpl".
    """
    library = library_of(x)
    kind = type(x).__name__
    phrase = kind if library in ("", kind) else f"{library} {kind}"
    return ("an " if phrase[0].lower() in "aeiou" else "a ") + phrase
