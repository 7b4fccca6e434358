"""The scatters side by side: ours, the native call, ONNX Runtime, in every mode.

The issue's workloads (a key/value cache update, copying and in place; ScatterElements
add with duplicates and a permutation of 2000x2000; a ScatterND histogram; a tiny call of
each) through the public functions, with ``python -m benchmarks``' interleaved timer::

    python -m benchmarks.scatters --backends numpy,torch,jax --rounds 11

Eager NumPy and torch calls, ``torch.compile(fullgraph=True)`` and ``jax.jit``, each
against the native call under the same mode. Native calls are the ones a careful user
writes; where the native call's result for duplicates is not the decided one, the row
says so. Ratios are medians over rounds of ours / theirs within a round.
"""

from __future__ import annotations

import argparse
import statistics
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

import onnx_gather as og
from benchmarks.timer import interleaved, median_ratio
from onnx_gather import _ops

SE, SN = _ops.SCATTER_ELEMENTS, _ops.SCATTER_ND
FUNCTIONS = {SE.name: og.scatter_elements, SN.name: og.scatter_nd}


def _ours(w: dict[str, Any]) -> Callable[..., Any]:
    """The public function with the workload's attributes: ``f(data, indices, updates)``."""
    fn = FUNCTIONS[w["op"].name]
    names = [name for name, _ in w["op"].attributes]
    attributes = dict(zip(names, w["attrs"], strict=True))
    return lambda d, i, u, **kw: fn(d, i, u, **attributes, **kw)


def _workloads(rng: np.random.Generator) -> dict[str, dict[str, Any]]:
    n = 2000
    cache = rng.random((32, 4096, 128), dtype=np.float32)
    kv_idx = np.stack(np.meshgrid(np.arange(32), [1000], indexing="ij"), axis=-1)  # (32, 1, 2)
    return {
        "KV-cache update (32, 4096, 128), one position": {
            "op": SN, "attrs": ("none",), "data": cache, "indices": kv_idx,
            "updates": rng.random((32, 1, 128), dtype=np.float32), "out": True,
        },
        "ScatterElements add 2000x2000 with duplicates, axis 0": {
            "op": SE, "attrs": (0, "add"), "data": rng.random((n, n), dtype=np.float32),
            "indices": rng.integers(0, n, (n, n)), "updates": rng.random((n, n), dtype=np.float32),
        },
        "ScatterElements none, a permutation of 2000x2000, axis 0": {
            "op": SE, "attrs": (0, "none"), "data": rng.random((n, n), dtype=np.float32),
            "indices": np.argsort(rng.random((n, n)), axis=0),
            "updates": rng.random((n, n), dtype=np.float32),
        },
        "ScatterND add of 100,000 coordinates into 1,000 (a histogram)": {
            "op": SN, "attrs": ("add",), "data": np.zeros(1000, np.float32),
            "indices": rng.integers(0, 1000, (100_000, 1)),
            "updates": rng.random(100_000, dtype=np.float32),
        },
        "ScatterElements add 8x4 (tiny)": {
            "op": SE, "attrs": (0, "add"), "data": rng.random((8, 4), dtype=np.float32),
            "indices": rng.integers(0, 8, (8, 4)), "updates": rng.random((8, 4), dtype=np.float32),
        },
        "ScatterND none, 2 rows of 8x4 (tiny)": {
            "op": SN, "attrs": ("none",), "data": rng.random((8, 4), dtype=np.float32),
            "indices": np.array([[1], [6]]), "updates": rng.random((2, 4), dtype=np.float32),
        },
    }  # fmt: skip


def _numpy_native(w: dict[str, Any]) -> Callable[[], Any]:
    data, idx, upd = w["data"], w["indices"], w["updates"]
    if w["op"] is SN:
        coords = tuple(idx[..., j] for j in range(idx.shape[-1]))
        if w["attrs"][0] == "add":
            return lambda: np.add.at(data.copy(), coords, upd)
        return lambda: data.copy().__setitem__(coords, upd)
    cols = np.arange(data.shape[1])[None, :]
    if w["attrs"][1] == "add":
        return lambda: np.add.at(data.copy(), (idx, cols), upd)
    return lambda: np.put_along_axis(data.copy(), idx, upd, axis=0)


def _ort(w: dict[str, Any]) -> Callable[[], Any] | None:
    try:
        import onnxruntime as ort
    except ImportError:
        return None
    op = w["op"]
    arrays = (w["data"], w["indices"].astype(np.int64), w["updates"])
    names = [a for a, _ in op.attributes]
    model = op.onnx_model(18, [str(x.dtype) for x in arrays], [x.shape for x in arrays],
                          dict(zip(names, w["attrs"], strict=True)))  # fmt: skip
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    feed = dict(zip(op.inputs, arrays, strict=True))
    return lambda: session.run(None, feed)


def _torch(w: dict[str, Any]) -> dict[str, Callable[[], Any]]:
    import torch

    data, idx, upd = (
        torch.from_numpy(np.ascontiguousarray(x)) for x in (w["data"], w["indices"], w["updates"])
    )
    op, attrs = w["op"], w["attrs"]
    ours = _ours(w)
    native: Callable[..., Any]
    if op is SE:
        reduce = attrs[1]
        if reduce == "add":  # (CPU: sums in an order of its own)
            name, native = "torch.scatter_add", lambda d, i, u: d.scatter_add(0, i, u)
        else:
            name, native = "torch.scatter", lambda d, i, u: d.scatter(0, i, u)
    elif attrs[0] == "add":
        name = "index_put accumulate"

        def native(d: Any, i: Any, u: Any) -> Any:
            return d.index_put((i[:, 0],), u, accumulate=True)
    else:
        name = "index_put"

        def native(d: Any, i: Any, u: Any) -> Any:
            return d.index_put(tuple(i[..., j] for j in range(i.shape[-1])), u)

    ours_compiled = torch.compile(ours, fullgraph=True)
    native_compiled = torch.compile(native, fullgraph=True)
    return {
        "ours torch": lambda: ours(data, idx, upd),
        name: lambda: native(data, idx, upd),
        "ours torch.compile": lambda: ours_compiled(data, idx, upd),
        f"{name} compiled": lambda: native_compiled(data, idx, upd),
    }


def _jax(w: dict[str, Any]) -> dict[str, Callable[[], Any]]:
    import jax
    import jax.numpy as jnp

    data, idx, upd = (jnp.asarray(x) for x in (w["data"], w["indices"], w["updates"]))
    op, attrs = w["op"], w["attrs"]
    ours = jax.jit(_ours(w))
    if op is SE:
        cols = jnp.arange(data.shape[1])[None, :]
        how = "add" if attrs[1] == "add" else "set"
        native = jax.jit(lambda d, i, u: getattr(d.at[i, cols], how)(u))
    else:
        how = "add" if attrs[0] == "add" else "set"
        native = jax.jit(
            lambda d, i, u: getattr(d.at[tuple(i[..., j] for j in range(i.shape[-1]))], how)(u)
        )
    return {
        "ours jax.jit": lambda: ours(data, idx, upd).block_until_ready(),
        "native .at[] jit": lambda: native(data, idx, upd).block_until_ready(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backends", default="numpy,torch,jax")
    parser.add_argument("--rounds", type=int, default=11)
    parser.add_argument("--sample", type=float, default=0.2)
    args = parser.parse_args()
    backends = args.backends.split(",")
    warnings.simplefilter("ignore")
    rng = np.random.default_rng(20261125)
    print("| workload | ours vs contender | contender per call | ours / it |")
    print("| --- | --- | ---: | ---: |")
    for name, w in _workloads(rng).items():
        arrays = (w["data"], w["indices"], w["updates"])
        contenders: dict[str, Callable[[], Any]] = {}
        if "numpy" in backends:
            ours = _ours(w)
            contenders["ours numpy"] = lambda ours=ours, a=arrays: ours(*a)
            if w.get("out"):
                target = w["data"].copy()
                contenders["ours numpy out=data"] = lambda ours=ours, t=target, a=arrays: ours(
                    t, a[1], a[2], out=t
                )
            contenders["numpy native"] = _numpy_native(w)
            ort = _ort(w)
            if ort is not None:
                contenders["ONNX Runtime CPU"] = ort
        if "torch" in backends:
            contenders.update(_torch(w))
        if "jax" in backends:
            contenders.update(_jax(w))
        times = interleaved(contenders, args.rounds, args.sample)
        families = ("ours numpy", "ours torch", "ours torch.compile", "ours jax.jit")
        for family in [f for f in families if f in times]:
            for other in times:
                own = (family, other) in {
                    ("ours numpy", "ours numpy out=data"),
                    ("ours torch.compile", "ours torch"),  # compiled no slower than eager
                }
                if other == family or (other.startswith("ours") and not own):
                    continue
                # Each mode against the native call in the same mode (and eager torch
                # against our compiled call: a compiled call should be no slower).
                compiled = family == "ours torch.compile"
                if family.startswith("ours torch") and (
                    other.endswith("compiled") != compiled and other != "ours torch"
                ):
                    continue
                med = statistics.median(times[other]) * 1e3
                ratio = median_ratio(times[family], times[other])
                own_ms = statistics.median(times[family]) * 1e3
                print(
                    f"| {name} | {family} {own_ms:.3f} ms vs {other} | {med:.3f} ms | {ratio:.2f} |"
                )


if __name__ == "__main__":
    main()
