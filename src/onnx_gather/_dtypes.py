"""Dtype names shared by the backends whose arrays carry NumPy dtypes (NumPy, JAX, Dask, CuPy)."""

from __future__ import annotations

from typing import Any

from onnx_gather._memo import Memo

#: Names by dtype: ``dtype.name`` is computed in Python by NumPy, several us a call.
_NAMES: Memo[Any, str] = Memo(256)


def numpy_dtype_name(dtype: Any) -> str:
    """Return the ONNX-style name of a NumPy dtype.

    Strings in every NumPy spelling (object, ``str_``, ``bytes_`` and ``StringDType``) are
    ONNX ``string``; ml_dtypes' bfloat16 is ``"bfloat16"``; other dtypes keep NumPy's name,
    so a type ONNX does not list (``float8_e4m3fn``, ``datetime64``) is rejected by name.
    """
    name = _NAMES.get(dtype)
    if name is None:
        # A dtype without a NumPy kind (JAX's typed PRNG keys, "key<fry>") keeps its own
        # name, which the planner rejects as a type ONNX does not list.
        kind = getattr(dtype, "kind", None)
        name = (
            "string" if kind is not None and kind in "OUST" else str(getattr(dtype, "name", dtype))
        )
        name = _NAMES.put(dtype, name)
    return name


def holds_objects(x: Any) -> bool:
    """Whether ``x`` is an array of Python objects (NumPy's, or Dask's with NumPy dtypes)."""
    return getattr(getattr(x, "dtype", None), "kind", None) == "O"
