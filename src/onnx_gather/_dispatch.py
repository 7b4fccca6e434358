"""Which backend serves an array, found once per array type and cached.

Libraries are recognised with array_api_compat's ``is_*_array`` helpers, which look in
``sys.modules`` and never import a framework. A backend module (which imports its
framework) is imported only when an array of that framework arrives.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

import array_api_compat as compat

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


def library_of(x: Any) -> str:
    """The top-level package an object's type comes from, for messages."""
    module = type(x).__module__.split(".")[0]
    return {"jaxlib": "jax", "builtins": "a Python"}.get(module, module)
