"""The scatters (issue 22) side by side: ours, the native call, ONNX Runtime.

The scatters are not public functions yet, so they are not among ``python -m benchmarks``'
workloads; this runs the issue's workloads through ``onnx_gather._api.run`` (what the
public functions will call) with the same interleaved timer::

    python -m benchmarks.scatters --backends numpy,torch,jax --rounds 11

Native calls are the ones a careful user writes; where the native call's result for
duplicates is not the decided one, the row says so. Ratios are medians over rounds of
ours / theirs within a round.
"""

from __future__ import annotations

import argparse
import statistics
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from benchmarks.timer import interleaved, median_ratio
from onnx_gather import _api, _ops

SE, SN = _ops.SCATTER_ELEMENTS, _ops.SCATTER_ND


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
    out = {"ours torch": lambda: _api.run(op, 18, (data, idx, upd), attrs, True)}
    if op is SE:
        reduce = attrs[1]
        if reduce == "add":  # (CPU: sums in an order of its own)
            out["torch.scatter_add"] = lambda: data.scatter_add(0, idx, upd)
        else:
            out["torch.scatter"] = lambda: data.scatter(0, idx, upd)
    elif attrs[0] == "add":
        out["index_put accumulate"] = lambda: data.index_put((idx[:, 0],), upd, accumulate=True)
    else:
        coords = tuple(idx[..., j] for j in range(idx.shape[-1]))
        out["index_put"] = lambda: data.index_put(coords, upd)
    return out


def _jax(w: dict[str, Any]) -> dict[str, Callable[[], Any]]:
    import jax
    import jax.numpy as jnp

    data, idx, upd = (jnp.asarray(x) for x in (w["data"], w["indices"], w["updates"]))
    op, attrs = w["op"], w["attrs"]
    ours = jax.jit(lambda d, i, u: _api.run(op, 18, (d, i, u), attrs, True))
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
        op, arrays, attrs = w["op"], (w["data"], w["indices"], w["updates"]), w["attrs"]
        contenders: dict[str, Callable[[], Any]] = {}
        if "numpy" in backends:
            contenders["ours numpy"] = lambda op=op, arrays=arrays, attrs=attrs: _api.run(
                op, 18, arrays, attrs, True
            )
            if w.get("out"):
                target = w["data"].copy()
                contenders["ours numpy out=data"] = lambda op=op, t=target, a=arrays, attrs=attrs: (
                    _api.run(op, 18, (t, a[1], a[2]), attrs, True, t)
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
        for family in [f for f in ("ours numpy", "ours torch", "ours jax.jit") if f in times]:
            for other in times:
                own = family == "ours numpy" and other == "ours numpy out=data"
                if other == family or (other.startswith("ours") and not own):
                    continue
                med = statistics.median(times[other]) * 1e3
                ratio = median_ratio(times[family], times[other])
                ours = statistics.median(times[family]) * 1e3
                print(
                    f"| {name} | {family} {ours:.3f} ms vs {other} | {med:.3f} ms | {ratio:.2f} |"
                )


if __name__ == "__main__":
    main()
