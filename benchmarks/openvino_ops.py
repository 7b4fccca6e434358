"""OpenVINO's indexing operators: ours (NumPy, torch) against OpenVINO's own CPU runtime.

Large calls of each scatter (and a reduction that takes several ONNX scatters: mean,
use_init_val=False, sub), Gather-8 with out-of-range indices (also against ``og.gather``
of the same reads, every index valid: the speed Gather-8 should have), and a tiny call::

    python -m benchmarks.openvino_ops --rounds 11

OpenVINO runs one compiled single-node model per workload (static shapes, the CPU
plugin's default performance mode, its inputs set once: an ``infer`` call is what a
model pays per node). Ratios are medians over rounds of ours / the runtime's within a
round (``benchmarks.timer``). Duplicates are left out where OpenVINO's order would differ.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

import onnx_gather as og
from benchmarks.timer import interleaved, median_ratio
from onnx_gather import openvino


def _workloads(rng: np.random.Generator) -> dict[str, dict[str, Any]]:
    n = 2000
    big = rng.random((n, n), dtype=np.float32)
    perm = np.argsort(rng.random((n, n)), axis=0)
    rows = rng.permutation(n)[:500]
    return {
        "ScatterUpdate of 500 rows of 2000x2000, axis 0": {
            "op": "scatter_update", "data": big, "indices": rows,
            "updates": rng.random((500, n), dtype=np.float32), "attrs": {"axis": 0},
        },
        "ScatterElementsUpdate none, a permutation of 2000x2000": {
            "op": "scatter_elements_update", "data": big, "indices": perm,
            "updates": rng.random((n, n), dtype=np.float32),
            "attrs": {"axis": 0, "reduction": "none", "use_init_val": True},
        },
        "ScatterElementsUpdate sum, a permutation of 2000x2000": {
            "op": "scatter_elements_update", "data": big, "indices": perm,
            "updates": rng.random((n, n), dtype=np.float32),
            "attrs": {"axis": 0, "reduction": "sum", "use_init_val": True},
        },
        "ScatterElementsUpdate mean, 1000 rows into 2000x2000 (int32)": {
            "op": "scatter_elements_update",
            "data": rng.integers(0, 99, (n, n)).astype(np.int32),
            "indices": perm[:1000], "updates": rng.integers(0, 99, (1000, n)).astype(np.int32),
            "attrs": {"axis": 0, "reduction": "mean", "use_init_val": True},
        },
        "ScatterElementsUpdate max, use_init_val=False, 1000 rows into 2000x2000": {
            "op": "scatter_elements_update", "data": big, "indices": perm[:1000],
            "updates": rng.random((1000, n), dtype=np.float32),
            "attrs": {"axis": 0, "reduction": "max", "use_init_val": False},
        },
        "ScatterNDUpdate none, 500 rows of 2000x2000": {
            "op": "scatter_nd_update", "data": big, "indices": rows[:, None],
            "updates": rng.random((500, n), dtype=np.float32), "attrs": {"reduction": "none"},
        },
        "ScatterNDUpdate sub, 500 rows of 2000x2000": {
            "op": "scatter_nd_update", "data": big, "indices": rows[:, None],
            "updates": rng.random((500, n), dtype=np.float32), "attrs": {"reduction": "sub"},
        },
        "Gather-8 of 4096 rows of 256, a tenth out of range": {
            "op": "gather", "data": rng.random((n, 256), dtype=np.float32),
            "indices": (gather_rows := np.where(
                rng.random(4096) < 0.1, n + 5, rng.integers(-n, n, 4096))),
            "attrs": {"axis": 0, "batch_dims": 0},
            # ONNX Gather of the same rows, the bad ones as row 0: the speed to match.
            "onnx": np.where(gather_rows < n, gather_rows, 0),
        },
        "Gather-8 of 2**20 elements of 1000, a tenth out of range": {
            "op": "gather", "data": rng.random(1000, dtype=np.float32),
            "indices": (gather_elements := np.where(
                rng.random(1 << 20) < 0.1, -1001, rng.integers(-1000, 1000, 1 << 20))),
            "attrs": {"axis": 0, "batch_dims": 0},
            "onnx": np.where(gather_elements >= -1000, gather_elements, 0),
        },
        "ScatterElementsUpdate sum 8x4 (tiny)": {
            "op": "scatter_elements_update", "data": rng.random((8, 4), dtype=np.float32),
            "indices": np.argsort(rng.random((8, 4)), axis=0),
            "updates": rng.random((8, 4), dtype=np.float32),
            "attrs": {"axis": 0, "reduction": "sum", "use_init_val": True},
        },
    }  # fmt: skip


def _ours(w: dict[str, Any]) -> Callable[..., Any]:
    fn = getattr(openvino, w["op"])
    attrs = dict(w["attrs"])
    positional = attrs.pop("axis", None)
    if positional is None:
        return lambda *arrays: fn(*arrays, **attrs)
    return lambda *arrays: fn(*arrays, positional, **attrs)


def _runtime(w: dict[str, Any]) -> Callable[[], Any]:
    """The CPU plugin's compiled node, inputs set once; one call is one ``infer``."""
    sys.modules.setdefault("openvino_telemetry", None)  # type: ignore[arg-type]
    import openvino as ov
    from openvino import opset3, opset8, opset12, opset15

    arrays = [w["data"], w["indices"]] + ([w["updates"]] if "updates" in w else [])
    params = [
        opset8.parameter(list(x.shape), ov.Type(x.dtype), name=f"p{n}")
        for n, x in enumerate(arrays)
    ]
    a = w["attrs"]
    if w["op"] == "gather":
        node = opset8.gather(*params, opset8.constant(np.int64(a["axis"])), a["batch_dims"])
    elif w["op"] == "scatter_update":
        node = opset3.scatter_update(*params, opset8.constant(np.int64(a["axis"])))
    elif w["op"] == "scatter_elements_update":
        node = opset12.scatter_elements_update(
            *params, opset8.constant(np.int64(a["axis"])), a["reduction"], a["use_init_val"]
        )
    else:
        node = opset15.scatter_nd_update(*params, a["reduction"])
    compiled = ov.Core().compile_model(ov.Model([node], params), "CPU")
    request = compiled.create_infer_request()
    for n, x in enumerate(arrays):
        request.set_input_tensor(n, ov.Tensor(np.ascontiguousarray(x)))
    return request.infer


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=11)
    parser.add_argument("--sample", type=float, default=0.2)
    parser.add_argument("--backends", default="numpy,torch")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    rng = np.random.default_rng(20261127)
    backends = args.backends.split(",")
    print("| workload | ours | ours per call | OpenVINO CPU per call | ours / OpenVINO |")
    print("| --- | --- | ---: | ---: | ---: |")
    against_onnx = []
    for name, w in _workloads(rng).items():
        arrays = [w["data"], w["indices"]] + ([w["updates"]] if "updates" in w else [])
        ours = _ours(w)
        contenders: dict[str, Callable[[], Any]] = {"OpenVINO": _runtime(w)}
        axis = w["attrs"].get("axis")
        if "numpy" in backends:
            contenders["numpy"] = lambda ours=ours, a=arrays: ours(*a)
            if "onnx" in w:
                contenders["numpy-onnx"] = lambda d=w["data"], i=w["onnx"], ax=axis: og.gather(
                    d, i, ax
                )
        if "torch" in backends:
            import torch

            tensors = [torch.from_numpy(np.ascontiguousarray(x)) for x in arrays]
            contenders["torch"] = lambda ours=ours, t=tensors: ours(*t)
            if "onnx" in w:
                valid = torch.from_numpy(w["onnx"])
                contenders["torch-onnx"] = lambda t=tensors[0], i=valid, ax=axis: og.gather(
                    t, i, ax
                )
        times = interleaved(contenders, args.rounds, args.sample)
        theirs = statistics.median(times["OpenVINO"]) * 1e3
        for family in [f for f in ("numpy", "torch") if f in times]:
            mine = statistics.median(times[family]) * 1e3
            ratio = median_ratio(times[family], times["OpenVINO"])
            print(f"| {name} | {family} | {mine:.3f} ms | {theirs:.3f} ms | {ratio:.2f} |")
            if f"{family}-onnx" in times:
                onnx = statistics.median(times[f"{family}-onnx"]) * 1e3
                versus = median_ratio(times[family], times[f"{family}-onnx"])
                against_onnx.append(
                    f"| {name} | {family} | {mine:.3f} ms | {onnx:.3f} ms | {versus:.2f} |"
                )
    if against_onnx:
        print(
            "\n| workload | ours | ours per call | og.gather of the valid indices | ours / og.gather |"
        )
        print("| --- | --- | ---: | ---: | ---: |")
        print("\n".join(against_onnx))


if __name__ == "__main__":
    main()
