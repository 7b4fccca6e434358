"""The array libraries installed here, as adaptors for the conformance runner.

Each adaptor converts NumPy arrays to the library and back and says which ONNX types the
library can hold (see :class:`onnx_gather._conformance.runner.Library`). A library that is
not installed, or has no device (CuPy), is left out.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from onnx_gather._conformance.strategies import DTYPES, numpy_dtype

_WIDE = frozenset({"int64", "uint64", "float64", "complex128"})


def _name(dtype: np.dtype[Any]) -> str:
    return "string" if dtype.kind in "OUST" else str(dtype.name)


@dataclass
class Adaptor:
    """One installed library."""

    name: str
    holds: frozenset[str]
    convert: Callable[[np.ndarray], Any] = field(repr=False)
    back: Callable[[Any], np.ndarray] = field(repr=False)

    def asarray(self, a: np.ndarray) -> Any:
        """``a`` as an array of this library."""
        return self.convert(a)

    def to_numpy(self, x: Any) -> np.ndarray:
        """An array of this library as NumPy."""
        return self.back(x)

    def indices(self, a: np.ndarray) -> Any:
        """Indices as this library's array where it can hold their type, else NumPy."""
        return self.asarray(a) if _name(a.dtype) in self.holds else a


def _has_bfloat16() -> bool:
    try:
        importlib.import_module("ml_dtypes")
    except ImportError:
        return False
    return True


def _numpy() -> Adaptor:
    holds = set(DTYPES) - (set() if _has_bfloat16() else {"bfloat16"})
    return Adaptor("numpy", frozenset(holds), lambda a: np.array(a, copy=True), np.asarray)


def _torch() -> list[Adaptor]:
    torch = importlib.import_module("torch")

    def convert(a: np.ndarray, device: str = "cpu") -> Any:
        if a.dtype.name == "bfloat16":
            bits = torch.from_numpy(np.ascontiguousarray(a).view(np.uint16).copy())
            return bits.view(torch.bfloat16).to(device)
        return torch.from_numpy(np.array(a, copy=True)).to(device)

    def back(x: Any) -> np.ndarray:
        x = x.detach().cpu()
        if x.dtype == torch.bfloat16:
            bf16: np.ndarray = x.view(torch.uint16).numpy().view(numpy_dtype("bfloat16"))
            return bf16
        return np.asarray(x.numpy())

    holds = frozenset(set(DTYPES) - {"string"})
    found = [Adaptor("torch", holds, convert, back)]
    if torch.cuda.is_available():
        found.append(Adaptor("torch[cuda]", holds, lambda a: convert(a, "cuda"), back))
    return found


def _jax() -> Adaptor:
    jax = importlib.import_module("jax")
    holds = set(DTYPES) - {"string"}
    if not jax.config.read("jax_enable_x64"):
        holds -= _WIDE  # JAX would silently narrow them
    return Adaptor("jax", frozenset(holds), jax.numpy.asarray, np.asarray)


def _dask() -> Adaptor:
    da = importlib.import_module("dask.array")
    holds = set(DTYPES) - (set() if _has_bfloat16() else {"bfloat16"})
    return Adaptor(
        "dask",
        frozenset(holds),
        lambda a: da.from_array(np.array(a, copy=True), chunks=2),
        lambda x: np.asarray(x.compute()),
    )


def _cupy() -> Adaptor | None:
    cupy = importlib.import_module("cupy")
    if cupy.cuda.runtime.getDeviceCount() == 0:
        return None
    holds = frozenset(set(DTYPES) - {"string", "bfloat16"})
    return Adaptor("cupy", holds, cupy.asarray, cupy.asnumpy)


def _array_api_strict() -> Adaptor:
    xp = importlib.import_module("array_api_strict")
    holds = frozenset(n for n in DTYPES if hasattr(xp, n))
    return Adaptor("array-api-strict", holds, xp.asarray, np.from_dlpack)


def installed(names: list[str] | None = None) -> list[Adaptor]:
    """The adaptors of the installed libraries (only ``names``, if given).

    Raises
    ------
    ValueError
        If ``names`` lists a library this module does not know.
    ImportError
        If ``names`` lists a library that is not installed.
    """
    factories: dict[str, Callable[[], Any]] = {
        "numpy": _numpy,
        "torch": _torch,
        "jax": _jax,
        "dask": _dask,
        "cupy": _cupy,
        "array-api-strict": _array_api_strict,
    }
    unknown = sorted(set(names or ()) - set(factories))
    if unknown:
        msg = f"unknown libraries {unknown}; known: {', '.join(factories)}"
        raise ValueError(msg)
    found: list[Adaptor] = []
    for name, factory in factories.items():
        if names is not None and name not in names:
            continue
        try:
            made = factory()
        except Exception:
            if names is not None:
                raise  # asked for by name: say why it cannot run
            continue
        if made is None:
            continue
        found.extend(made if isinstance(made, list) else [made])
    return found
