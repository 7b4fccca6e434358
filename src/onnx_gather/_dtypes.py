"""Dtype names shared by the backends whose arrays carry NumPy dtypes (NumPy, JAX, Dask, CuPy)."""

from __future__ import annotations

from typing import Any


def numpy_dtype_name(dtype: Any) -> str:
    """Return the ONNX-style name of a NumPy dtype.

    Strings in every NumPy spelling (object, ``str_``, ``bytes_`` and ``StringDType``) are
    ONNX ``string``; ml_dtypes' bfloat16 is ``"bfloat16"``; other dtypes keep NumPy's name,
    so a type ONNX does not list (``float8_e4m3fn``, ``datetime64``) is rejected by name.
    """
    if dtype.kind in "OUST":
        return "string"
    return str(dtype.name)
