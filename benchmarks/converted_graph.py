"""The programs benchmark's converted graph as an ONNX model, run by onnx2torch with the plug-in.

``python -m benchmarks.converted_graph`` (needs onnx2torch, installed without its
dependencies; torchvision is stood in as in tests/test_torch_onnx2torch.py): the 39 small
gathers of :mod:`benchmarks.programs` written as one ONNX model (opset 13, the indices as
initializers), converted with ``onnx_gather.integrations.onnx2torch`` registered, against
the same program written with torch's calls; eagerly and under
``torch.compile(fullgraph=True)``, as converted and flattened
(``onnx_gather.integrations.onnx2torch.flatten``: onnx2torch's modules inlined, each family
node a direct call), and the converted module compiled again with Dynamo's guard
evaluation skipped (``torch.compiler.set_stance(skip_guard_eval_unsafe=True)``): what the
guards on its modules' attributes cost.
"""

from __future__ import annotations

import importlib.util
import sys
import time
import types
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from benchmarks import programs

ROUNDS, CALLS = 7, 300


def _stand_in_torchvision() -> None:
    if importlib.util.find_spec("torchvision") is None:
        module, ops = types.ModuleType("torchvision"), types.ModuleType("torchvision.ops")
        ops.nms = ops.roi_align = ops.box_convert = None  # type: ignore[attr-defined]
        module.ops = ops  # type: ignore[attr-defined]
        sys.modules["torchvision"], sys.modules["torchvision.ops"] = module, ops


def graph_model() -> tuple[Any, tuple[Any, ...]]:
    """The converted graph as an ONNX model, and its inputs (x; the indices, as torch's calls take them)."""
    from onnx import TensorProto, helper, numpy_helper

    x, ge, g, nd = programs.graph_inputs(programs.FULL)
    nodes: list[Any] = []
    inits = [
        numpy_helper.from_array(np.array(0.5, np.float32), "half"),
        numpy_helper.from_array(np.array([1], np.int64), "one"),
    ]
    y, acc = "x", ""
    for n, (a, b, c) in enumerate(zip(ge, g, nd, strict=True)):
        for name, arr in (("a", a), ("b", b), ("c", c)):
            inits.append(numpy_helper.from_array(arr.astype(np.int64), f"{name}{n}"))
        nodes += [
            helper.make_node("GatherElements", [y, f"a{n}"], [f"ge{n}"], axis=1),
            helper.make_node("Mul", [f"ge{n}", "half"], [f"m{n}"]),
            helper.make_node("Add", [y, f"m{n}"], [f"y{n}"]),
            helper.make_node("Gather", [f"y{n}", f"b{n}"], [f"g{n}"], axis=0),
            helper.make_node("GatherND", [f"y{n}", f"c{n}"], [f"nd{n}"]),
            helper.make_node("Unsqueeze", [f"nd{n}", "one"], [f"ndu{n}"]),
            helper.make_node("Add", [f"g{n}", f"ndu{n}"], [f"r{n}"]),
        ]
        y = f"y{n}"
        if acc:
            nodes.append(helper.make_node("Add", [acc, f"r{n}"], [f"acc{n}"]))
        acc = f"acc{n}" if acc else f"r{n}"
    graph = helper.make_graph(
        nodes,
        "converted_graph",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [8, 4])],
        [helper.make_tensor_value_info(v, TensorProto.FLOAT, None) for v in (y, acc)],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    return model, (x, ge, g, nd)


def _median_us(fn: Callable[[], Any]) -> float:
    times = []
    for _ in range(ROUNDS):
        start = time.perf_counter()
        for _ in range(CALLS):
            fn()
        times.append((time.perf_counter() - start) / CALLS * 1e6)
    return sorted(times)[ROUNDS // 2]


def main() -> None:
    warnings.simplefilter("ignore")
    _stand_in_torchvision()
    import onnx2torch
    import torch

    from onnx_gather.integrations import onnx2torch as plugin

    model, (x, ge, g, nd) = graph_model()
    plugin.register()
    module = onnx2torch.convert(model)
    tx = torch.from_numpy(x)
    args = [[torch.from_numpy(v) for v in vs] for vs in (ge, g, nd)]
    want = programs.graph_torch(tx, *args)
    for got in (module(tx),):
        assert all(torch.equal(u, v) for u, v in zip(got, want, strict=True))
    start = time.perf_counter()
    compiled = torch.compile(module, fullgraph=True)
    compiled(tx)
    compile_ours = time.perf_counter() - start
    flat = plugin.flatten(module)
    start = time.perf_counter()
    compiled_flat = torch.compile(flat, fullgraph=True)
    compiled_flat(tx)
    compile_flat = time.perf_counter() - start
    start = time.perf_counter()
    native = torch.compile(programs.graph_torch, fullgraph=True)
    native(tx, *args)
    compile_native = time.perf_counter() - start
    for got in (compiled(tx), flat(tx), compiled_flat(tx)):
        assert all(torch.equal(u, v) for u, v in zip(got, want, strict=True))
    rows = {
        "eager": (
            _median_us(lambda: module(tx)),
            _median_us(lambda: programs.graph_torch(tx, *args)),
        ),
        "eager, flattened": (
            _median_us(lambda: flat(tx)),
            _median_us(lambda: programs.graph_torch(tx, *args)),
        ),
        "torch.compile": (_median_us(lambda: compiled(tx)), _median_us(lambda: native(tx, *args))),
        "torch.compile, flattened": (
            _median_us(lambda: compiled_flat(tx)),
            _median_us(lambda: native(tx, *args)),
        ),
    }
    with torch.compiler.set_stance("default", skip_guard_eval_unsafe=True):
        rows["torch.compile, guards skipped"] = (
            _median_us(lambda: compiled(tx)),
            _median_us(lambda: native(tx, *args)),
        )
    print("| mode | converted µs | native µs | converted / native |")
    print("| --- | ---: | ---: | ---: |")
    for mode, (ours, theirs) in rows.items():
        print(f"| {mode} | {ours:.1f} | {theirs:.1f} | {ours / theirs:.2f} |")
    print(
        f"\ncompile s, converted / flattened / native: {compile_ours:.1f} / {compile_flat:.1f}"
        f" / {compile_native:.1f}"
    )


if __name__ == "__main__":
    main()
