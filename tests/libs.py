"""Test-side adaptors: how to build and read back arrays of each library under test.

The nox matrix sets ONNX_GATHER_BACKENDS to the libraries a session must test (comma
separated). A named library that cannot be imported fails the run: a matrix cell can
never pass green by skipping. Unset, every importable library is tested.
"""

from __future__ import annotations

import importlib
import os
from dataclasses import dataclass, field
from typing import Any

import numpy as np

try:
    import ml_dtypes

    BFLOAT16: np.dtype | None = np.dtype(ml_dtypes.bfloat16)
except ImportError:  # pragma: no cover - ml_dtypes is a test dependency
    BFLOAT16 = None

ENV = "ONNX_GATHER_BACKENDS"
ALL_TYPES = (
    "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float16", "bfloat16", "float32", "float64", "complex64", "complex128", "string",
)  # fmt: skip


def dtype_name(dtype: np.dtype) -> str:
    return "string" if dtype.kind in "OUST" else dtype.name


@dataclass
class Lib:
    """One library under test."""

    name: str
    module: Any = field(repr=False)
    holds: frozenset[str]

    def asarray(self, a: np.ndarray) -> Any:
        """``a`` as an array of this library (``a``'s dtype must be in ``holds``)."""
        raise NotImplementedError

    def to_numpy(self, x: Any) -> np.ndarray:
        raise NotImplementedError

    def indices(self, a: np.ndarray) -> Any:
        """Indices as this library's array where it can hold their dtype, else as NumPy."""
        return self.asarray(a) if dtype_name(a.dtype) in self.holds else a


class NumpyLib(Lib):
    def asarray(self, a: np.ndarray) -> Any:
        return np.array(a, copy=True)

    def to_numpy(self, x: Any) -> np.ndarray:
        assert isinstance(x, np.ndarray), type(x)
        return x


class TorchLib(Lib):
    def asarray(self, a: np.ndarray) -> Any:
        torch = self.module
        if dtype_name(a.dtype) == "bfloat16":
            return torch.from_numpy(np.ascontiguousarray(a).view(np.uint16).copy()).view(
                torch.bfloat16
            )
        return torch.from_numpy(np.array(a, copy=True))

    def to_numpy(self, x: Any) -> np.ndarray:
        torch = self.module
        assert isinstance(x, torch.Tensor), type(x)
        x = x.detach().cpu()
        if x.dtype == torch.bfloat16:
            return x.view(torch.uint16).numpy().view(BFLOAT16)
        return x.numpy()


class JaxLib(Lib):
    def asarray(self, a: np.ndarray) -> Any:
        return self.module.numpy.asarray(a)

    def to_numpy(self, x: Any) -> np.ndarray:
        assert isinstance(x, self.module.Array), type(x)
        return np.asarray(x)


class ArrayApiStrictLib(Lib):
    def asarray(self, a: np.ndarray) -> Any:
        return self.module.asarray(a)

    def to_numpy(self, x: Any) -> np.ndarray:
        assert type(x).__module__.startswith("array_api_strict"), type(x)
        return np.from_dlpack(x)


class DaskLib(Lib):
    """Dask arrays of NumPy blocks, chunked by 2 along every axis: most cases span blocks."""

    def asarray(self, a: np.ndarray) -> Any:
        return self.module.array.from_array(np.array(a, copy=True), chunks=2)

    def to_numpy(self, x: Any) -> np.ndarray:
        assert isinstance(x, self.module.array.Array), type(x)
        # Every block must have the shape and dtype the graph declared for it.
        out = x.map_blocks(_declared_block, dtype=x.dtype).compute()
        assert isinstance(out, np.ndarray), type(out)
        assert (out.shape, out.dtype) == (x.shape, x.dtype), (out.shape, out.dtype, x)
        return out


def _declared_block(block: np.ndarray, block_info: Any = None) -> np.ndarray:
    declared = block_info[None]
    assert isinstance(block, np.ndarray), type(block)
    assert block.shape == declared["chunk-shape"], (block.shape, declared)
    assert block.dtype == declared["dtype"], (block.dtype, declared)
    return block


def _numpy() -> Lib:
    holds = set(ALL_TYPES) - ({"bfloat16"} if BFLOAT16 is None else set())
    return NumpyLib("numpy", np, frozenset(holds))


def _torch() -> Lib:
    torch = importlib.import_module("torch")
    return TorchLib("torch", torch, frozenset(set(ALL_TYPES) - {"string"}))


def _jax() -> Lib:
    jax = importlib.import_module("jax")
    holds = set(ALL_TYPES) - {"string"}
    if not jax.config.jax_enable_x64:
        # JAX silently narrows these without x64; such cases are not expressible there.
        holds -= {"int64", "uint64", "float64", "complex128"}
    return JaxLib("jax", jax, frozenset(holds))


def _array_api_strict() -> Lib:
    xp = importlib.import_module("array_api_strict")
    holds = {n for n in ALL_TYPES if hasattr(xp, n)}
    return ArrayApiStrictLib("array-api-strict", xp, frozenset(holds))


def _dask() -> Lib:
    dask = importlib.import_module("dask")
    importlib.import_module("dask.array")
    holds = set(ALL_TYPES) - ({"bfloat16"} if BFLOAT16 is None else set())
    return DaskLib("dask", dask, frozenset(holds))


FACTORIES = {
    "numpy": _numpy,
    "torch": _torch,
    "jax": _jax,
    "array-api-strict": _array_api_strict,
    "dask": _dask,
}


def selected() -> list[Lib]:
    """The libraries this run tests: ONNX_GATHER_BACKENDS, or every importable one."""
    wanted = os.environ.get(ENV, "").strip()
    if wanted:
        names = [n.strip() for n in wanted.split(",") if n.strip()]
        unknown = [n for n in names if n not in FACTORIES]
        if unknown:
            raise RuntimeError(
                f"{ENV} names unknown backends {unknown}; known: {sorted(FACTORIES)}"
            )
        # No try/except: a named backend that cannot be imported must fail the run.
        return [FACTORIES[n]() for n in names]
    libs = []
    for factory in FACTORIES.values():
        try:
            libs.append(factory())
        except ImportError:
            continue
    return libs
