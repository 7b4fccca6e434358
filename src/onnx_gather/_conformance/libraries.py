"""The array libraries installed here, each as a :class:`Library`: the one copy the project has.

Used by ``python -m onnx_gather`` and the test suite (``tests/libs.py``). Needs nothing
beyond NumPy; each framework is imported only when its :class:`Library` is built.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import numpy as np

from onnx_gather._dtypes import numpy_dtype_name as type_name
from onnx_gather._spec import DATA_TYPES_13

__all__ = ["HOST", "ONNX_TYPES", "Library", "NotOwnArray", "bfloat16", "installed", "type_name"]

#: Every ONNX data type of the two operators.
ONNX_TYPES = frozenset(DATA_TYPES_13)
#: Without x64, JAX silently narrows these; examples of them cannot be expressed there.
_WIDE = frozenset({"int64", "uint64", "float64", "complex128"})


class NotOwnArray(AssertionError):
    """A result that is not the library's own array on the library's device.

    An AssertionError, so the conformance runner can never mistake it for an exception the
    spec asks for (those are IndexError, ValueError and TypeError).
    """


def bfloat16() -> np.dtype[Any] | None:
    """ml_dtypes' bfloat16 as a NumPy dtype, or None where ml_dtypes is not installed."""
    try:
        ml_dtypes = importlib.import_module("ml_dtypes")
    except ImportError:
        return None
    bf16: np.dtype[Any] = np.dtype(ml_dtypes.bfloat16)
    return bf16


@dataclass(frozen=True)
class Library:
    """One installed array library (on one device).

    It converts NumPy arrays to its library's arrays and back, says which ONNX types the
    library can hold, and refuses, when reading a result back, anything that is not the
    library's own array on its device (for Dask: whose blocks are not the shapes and
    dtypes the graph declared).

    Attributes
    ----------
    name : str
        How reports and test ids name it (``"torch[cuda]"`` for PyTorch on CUDA).
    module : module
        The library's top-level module.
    holds : frozenset of str
        The ONNX type names the library can hold.
    device : str
        ``"cpu"``, or the accelerator the library's arrays live on.
    """

    name: str
    module: Any = field(repr=False)
    holds: frozenset[str]
    convert: Callable[[np.ndarray], Any] = field(repr=False)
    back: Callable[[Any], np.ndarray] = field(repr=False)
    owns: Callable[[Any], bool] = field(repr=False)
    device: str = "cpu"

    def asarray(self, a: np.ndarray) -> Any:
        """``a`` (of a type in ``holds``) as an array of this library, a copy."""
        return self.convert(a)

    def to_numpy(self, x: Any) -> np.ndarray:
        """An array of this library as NumPy.

        Raises
        ------
        NotOwnArray
            If ``x`` is not this library's array on this library's device.
        """
        if not self.owns(x):
            kind = f"{type(x).__module__}.{type(x).__qualname__}"
            where = getattr(x, "device", None)
            msg = f"{self.name}: expected its own array, got a {kind} (device {where})"
            raise NotOwnArray(msg)
        return self.back(x)

    def indices(self, a: np.ndarray) -> Any:
        """Indices as this library's array where it can hold their type, else NumPy."""
        return self.asarray(a) if type_name(a.dtype) in self.holds else a

    def inputs(self, roles: Sequence[str], arrays: Sequence[np.ndarray]) -> tuple[Any, ...]:
        """An operator's inputs (``roles``: the registry's ``inputs``) as this library's.

        Indices by :meth:`indices`, the rest (data, a scatter's updates) by :meth:`asarray`.
        """
        return tuple(
            self.indices(x) if role == "indices" else self.asarray(x)
            for role, x in zip(roles, arrays, strict=True)
        )


def _host_types() -> frozenset[str]:
    """Every ONNX type NumPy can hold here: bfloat16 only with ml_dtypes."""
    return ONNX_TYPES - (set() if bfloat16() is not None else {"bfloat16"})


def _numpy() -> Library:
    return Library(
        "numpy",
        np,
        _host_types(),
        lambda a: np.array(a, copy=True),
        lambda x: x,
        lambda x: isinstance(x, np.ndarray),
    )


def _torch_on(device: str) -> Library | None:
    torch = importlib.import_module("torch")
    if device == "cuda" and not torch.cuda.is_available():
        return None
    bf16 = bfloat16()

    def convert(a: np.ndarray) -> Any:
        if type_name(a.dtype) == "bfloat16":
            # torch.from_numpy knows no ml_dtypes type: carry the bits.
            # (Not np.ascontiguousarray: that makes a 0-d array 1-d.)
            bits = torch.from_numpy(np.array(a, copy=True, order="C").view(np.uint16))
            return bits.view(torch.bfloat16).to(device)
        return torch.from_numpy(np.array(a, copy=True)).to(device)

    def back(x: Any) -> np.ndarray:
        x = x.detach().cpu()
        if x.dtype == torch.bfloat16 and bf16 is not None:  # held only with ml_dtypes
            bits: np.ndarray = x.view(torch.uint16).numpy()
            return bits.view(bf16)
        return np.asarray(x.numpy())

    def owns(x: Any) -> bool:
        return isinstance(x, torch.Tensor) and x.device.type == device

    holds = _host_types() - {"string"}
    name = "torch" if device == "cpu" else f"torch[{device}]"
    return Library(name, torch, holds, convert, back, owns, device)


def _jax() -> Library:
    jax = importlib.import_module("jax")
    holds = _host_types() - {"string"}
    if not jax.config.read("jax_enable_x64"):
        holds -= _WIDE
    # JAX places new arrays on its default device: a GPU where it has one.
    platform = jax.devices()[0].platform
    return Library(
        "jax",
        jax,
        holds,
        jax.numpy.asarray,
        np.asarray,
        lambda x: isinstance(x, jax.Array) and {d.platform for d in x.devices()} == {platform},
        platform,
    )


def _dask() -> Library:
    dask = importlib.import_module("dask")
    da = importlib.import_module("dask.array")

    def back(x: Any) -> np.ndarray:
        out = np.asarray(x.map_blocks(_declared_block, dtype=x.dtype).compute())
        if (out.shape, out.dtype) != (x.shape, x.dtype):
            msg = f"dask: computed {out.shape} {out.dtype}, the graph declared {x.shape} {x.dtype}"
            raise NotOwnArray(msg)
        return out

    # Blocks of 2 along every axis: most examples span several blocks.
    return Library(
        "dask",
        dask,
        _host_types(),
        lambda a: da.from_array(np.array(a, copy=True), chunks=2),
        back,
        lambda x: isinstance(x, da.Array),
    )


def _declared_block(block: Any, block_info: Any = None) -> Any:
    """Each computed block must be a NumPy array of the shape and dtype its graph declared."""
    declared = block_info[None]
    if not isinstance(block, np.ndarray):
        msg = f"dask: a block is a {type(block).__name__}, not a NumPy array"
        raise NotOwnArray(msg)
    if (block.shape, block.dtype) != (declared["chunk-shape"], declared["dtype"]):
        msg = (
            f"dask: a block is {block.shape} {block.dtype}, "
            f"declared {declared['chunk-shape']} {declared['dtype']}"
        )
        raise NotOwnArray(msg)
    return block


def _cupy() -> Library | None:
    cupy = importlib.import_module("cupy")
    try:
        if cupy.cuda.runtime.getDeviceCount() == 0:
            return None
    except cupy.cuda.runtime.CUDARuntimeError:  # no driver here: no device either
        return None
    return Library(
        "cupy",
        cupy,
        ONNX_TYPES - {"string", "bfloat16"},
        cupy.asarray,
        cupy.asnumpy,
        lambda x: isinstance(x, cupy.ndarray),
        "cuda",
    )


def _array_api_strict() -> Library:
    xp = importlib.import_module("array_api_strict")
    array = type(xp.asarray(0))
    return Library(
        "array-api-strict",
        xp,
        frozenset(n for n in ONNX_TYPES if hasattr(xp, n)),
        xp.asarray,
        np.from_dlpack,
        lambda x: isinstance(x, array),
    )


_FACTORIES: dict[str, Callable[[], Library | None]] = {
    "numpy": _numpy,
    "torch": partial(_torch_on, "cpu"),
    "torch[cuda]": partial(_torch_on, "cuda"),
    "jax": _jax,
    "dask": _dask,
    "cupy": _cupy,
    "array-api-strict": _array_api_strict,
}
#: Every library this module knows, by name.
KNOWN = tuple(_FACTORIES)
#: The libraries whose arrays live in host memory (the test matrix's default).
HOST = ("numpy", "torch", "jax", "dask", "array-api-strict")


def installed(names: Sequence[str] | None = None) -> list[Library]:
    """The installed libraries, or exactly those in ``names``.

    Without ``names``, every library that is installed (and has a device, for the device
    ones) is returned and the rest are left out. A name in ``names`` is never left out:
    it is built or the reason it cannot be is raised.

    Raises
    ------
    ValueError
        If ``names`` lists a library this module does not know.
    ImportError
        If ``names`` lists a library that is not installed.
    RuntimeError
        If ``names`` lists a device library and there is no such device here.
    """
    unknown = sorted(set(names or ()) - set(_FACTORIES))
    if unknown:
        msg = f"unknown libraries {unknown}; known: {', '.join(_FACTORIES)}"
        raise ValueError(msg)
    if names is not None:
        found = []
        for name in names:
            made = _FACTORIES[name]()
            if made is None:
                msg = f"{name}: no such device here"
                raise RuntimeError(msg)
            found.append(made)
        return found
    found = []
    for factory in _FACTORIES.values():
        try:
            made = factory()
        except ImportError:  # not installed here; any other failure is a bug to see
            continue
        if made is not None:
            found.append(made)
    return found
