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

if TYPE_CHECKING:
    from onnx_gather._backends._base import Backend

_BY_TYPE: dict[type, Backend] = {}


def backend_for(data: Any) -> Backend:
    """Return the backend for ``data``'s library.

    Raises
    ------
    TypeError
        If ``data`` is not an array of a library this package can serve.
    """
    kind = type(data)
    backend = _BY_TYPE.get(kind)
    if backend is None:
        backend = _BY_TYPE[kind] = _select(data)
    return backend


def _select(data: Any) -> Backend:
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(data, torch.Tensor):
        # Tested first and without array_api_compat: torch.compile traces this function on
        # a compiled call that precedes any eager one, and Dynamo warns about the
        # functools.lru_cache inside compat's is_*_array helpers (torch 2.13.0).
        from onnx_gather._backends._torch import backend as torch_backend

        return torch_backend
    if compat.is_numpy_array(data):
        from onnx_gather._backends._numpy import backend as numpy_backend

        return numpy_backend
    if compat.is_jax_array(data):
        from onnx_gather._backends._jax import backend as jax_backend

        return jax_backend
    if compat.is_cupy_array(data):
        from onnx_gather._backends._cupy import backend as cupy_backend

        return cupy_backend
    if compat.is_dask_array(data):
        from onnx_gather._backends._dask import backend as dask_backend

        return dask_backend
    try:
        xp = compat.array_namespace(data)
    except TypeError:
        msg = (
            f"data must be an array of NumPy, PyTorch, JAX, Dask, CuPy or an array-API "
            f"library, got {library_of(data)} object of type {type(data).__name__}"
        )
        raise TypeError(msg) from None
    from onnx_gather._backends._array_api import ArrayAPIBackend

    return ArrayAPIBackend(xp)


def host_indices(indices: Any) -> np.ndarray | None:
    """Return ``indices`` as a NumPy array if it is host data, else None.

    Host data is what any data library accepts as indices: a NumPy array or scalar, a
    Python int, or a (nested) list or tuple of ints.
    """
    if isinstance(indices, np.ndarray):
        return indices
    if isinstance(indices, np.generic | int | list | tuple):
        host = np.asarray(indices)
        if host.size == 0 and host.dtype == np.float64:
            # An empty list carries no ints to infer from; ONNX's default Tind is int64.
            host = host.astype(np.int64)
        return host
    return None


_INT64 = np.iinfo(np.int64)


def beyond_int64(indices: Any, host: np.ndarray) -> np.ndarray | None:
    """Python ints that no ONNX index type holds, as an object array; else None.

    NumPy makes a list with ints beyond int64 uint64, float64 (mixed with smaller ints) or
    an object array. Such an index is out of range for every axis there can be, so the
    caller reports it as one (an IndexError naming it) rather than as a wrong index dtype.
    Only Python ints (and NumPy integer scalars among them) qualify, and only if at least
    one lies beyond int64: anything else keeps the dtype NumPy gave it.
    """
    if not isinstance(indices, int | list | tuple) or host.dtype.kind not in "uOf":
        return None
    values = np.array(indices, dtype=object)
    flat = values.reshape(-1)
    if not all(isinstance(v, int | np.integer) and not isinstance(v, bool) for v in flat):
        return None
    ints = [int(v) for v in flat]
    if all(_INT64.min <= v <= _INT64.max for v in ints):
        return None
    wide: np.ndarray = np.empty(values.shape, dtype=object)
    wide.reshape(-1)[:] = ints
    return wide


def library_of(x: Any) -> str:
    """The top-level package an object's type comes from, for messages."""
    module = type(x).__module__.split(".")[0]
    return {"jaxlib": "jax", "builtins": "a Python"}.get(module, module)
