"""jax2onnx with the plug-in: each call of the library one ONNX node, ORT bit for bit.

``jax2onnx.to_onnx`` of a JAX function calling every ONNX operator of the family (tensor
indices with negatives, host lists and NumPy arrays, each attribute and reduction), after
``import onnx_gather.integrations.jax2onnx``: the file holds one node per call at the
conversion's opset with the call's attributes, nothing of another domain; ONNX Runtime
runs it on inputs the conversion did not see to the library's eager result bit for bit,
and raises in the node on an index out of range. OpenVINO's functions convert to
standard operators with the library's values.

Runs where ONNX_GATHER_TOOLS names jax2onnx (``nox -s converters``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import jax2onnx
import numpy as np
import onnx
import onnxruntime as ort
import pytest
from helpers import assert_identical

import onnx_gather as og
import onnx_gather.integrations.jax2onnx  # (registers the plug-in)
from onnx_gather import openvino as ov

pytestmark = pytest.mark.tool("jax2onnx")

I32 = np.int32
X = (np.arange(24, dtype=np.float32).reshape(4, 6) - 7) / 4
X[1, 1] = np.frombuffer(np.uint32(0x7FC00123).tobytes(), np.float32)[0]
X2 = (X[::-1] * 3).copy()


def _onnx_calls(t: dict[str, jax.Array]) -> tuple[jax.Array, ...]:
    x = t["x"]
    return (
        og.gather(x, t["i"], axis=1),
        og.gather(x, [0, -1], axis=0),
        og.gather_elements(x, t["e"], axis=1),
        og.gather_nd(x, t["k"]),
        og.gather_nd(x, t["b"], batch_dims=1),
        og.scatter_elements(x, t["e"], t["u"], axis=1),
        og.scatter_elements(x, t["e2"], t["u"], axis=1, reduction="add"),
        og.scatter_nd(x, t["k"], t["v"], reduction="mul"),
        og.scatter(x, np.array([[5, -6]]), t["u"][:1], axis=1),
        og.tensor_scatter(t["c"], t["n"], t["w"], mode="circular"),
    )


ONNX_NODES = [
    ("Gather", {"axis": 1}),
    ("Gather", {"axis": 0}),
    ("GatherElements", {"axis": 1}),
    ("GatherND", {"batch_dims": 0}),
    ("GatherND", {"batch_dims": 1}),
    ("ScatterElements", {"axis": 1, "reduction": "none"}),
    ("ScatterElements", {"axis": 1, "reduction": "add"}),
    ("ScatterND", {"reduction": "mul"}),
    ("ScatterElements", {"axis": 1}),  # og.scatter: ScatterElements from opset 11
    ("TensorScatter", {"axis": 2, "mode": "circular"}),
]
TRACED = {
    "x": X,
    "i": np.array([[0, 5], [1, 2]], I32),
    "e": np.array([[0, 5], [1, 2], [3, 3], [4, 0]], I32),
    "e2": np.array([[2, 2], [0, 1], [5, 5], [3, 4]], I32),
    "k": np.array([[0, 1], [3, 5]], I32),
    "b": np.array([[0], [1], [2], [5]], I32),
    "u": np.arange(8, dtype=np.float32).reshape(4, 2) - 3.5,
    "v": np.array([2.5, -4.0], np.float32),
    "c": np.zeros((2, 3, 5, 4), np.float32),
    "n": np.ones((2, 3, 2, 4), np.float32),
    "w": np.array([0, 3], I32),
}
RUNS = {
    **TRACED,
    "x": X2,
    "i": np.array([[-1, 4], [-6, 0]], I32),
    "e": np.array([[-1, 5], [-6, 2], [3, -3], [0, 0]], I32),
    "e2": np.array([[3, 3], [0, -6], [4, 4], [5, 0]], I32),
    "k": np.array([[-1, -6], [0, 0]], I32),
    "b": np.array([[-1], [0], [-6], [4]], I32),
    "c": np.arange(120, dtype=np.float32).reshape(2, 3, 5, 4) / 8,
    "w": np.array([4, 1], I32),
}
BAD = {
    "i": np.array([[0, 6], [1, 2]], I32),
    "e": np.array([[0, 5], [1, 2], [3, -7], [4, 0]], I32),
    "k": np.array([[0, 1], [4, 5]], I32),
    "b": np.array([[0], [1], [6], [5]], I32),
    "w": np.array([-1, 0], I32),
}


def _convert(
    fn: Callable[[dict[str, jax.Array]], Any], inputs: dict[str, np.ndarray], opset: int
) -> onnx.ModelProto:
    names = tuple(inputs)

    def positional(*arrays: jax.Array) -> Any:
        return fn(dict(zip(names, arrays, strict=True)))

    specs = [jax.ShapeDtypeStruct(v.shape, v.dtype) for v in inputs.values()]
    model = jax2onnx.to_onnx(positional, specs, opset=opset)
    return model if isinstance(model, onnx.ModelProto) else onnx.load_from_string(model)


def _run(model: onnx.ModelProto, inputs: dict[str, np.ndarray]) -> list[np.ndarray]:
    options = ort.SessionOptions()
    options.log_severity_level = 4
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])  # fmt: skip
    names = [i.name for i in session.get_inputs()]
    assert len(names) == len(inputs)
    return session.run(None, dict(zip(names, inputs.values(), strict=True)))


def _eager(
    fn: Callable[[dict[str, jax.Array]], Any], inputs: dict[str, np.ndarray]
) -> list[np.ndarray]:
    return [np.asarray(y) for y in fn({k: jnp.asarray(v) for k, v in inputs.items()})]


FAMILY = {"Gather", "GatherElements", "GatherND", "ScatterElements", "ScatterND", "Scatter", "TensorScatter"}  # fmt: skip


def test_each_call_is_its_node() -> None:
    model = _convert(_onnx_calls, TRACED, 24)
    assert [(o.domain, o.version) for o in model.opset_import if o.domain in ("", "ai.onnx")] == [
        ("", 24)
    ]
    assert all(n.domain in ("", "ai.onnx") for n in model.graph.node)
    nodes = [
        (n.op_type, {a.name: onnx.helper.get_attribute_value(a) for a in n.attribute})
        for n in model.graph.node
        if n.op_type in FAMILY
    ]
    decoded = [
        (t, {k: v.decode() if isinstance(v, bytes) else v for k, v in a.items()}) for t, a in nodes
    ]
    assert decoded == ONNX_NODES
    for got, want in zip(_run(model, RUNS), _eager(_onnx_calls, RUNS), strict=True):
        assert_identical(got, want)
    for name, bad in BAD.items():
        with pytest.raises(
            Exception,
            match=r"running (Gather|GatherElements|GatherND|ScatterElements|ScatterND|TensorScatter) node",
        ):
            _run(model, {**RUNS, name: bad})


def test_an_opset_without_the_operator_is_refused() -> None:
    def fn(t: dict[str, jax.Array]) -> Any:
        return og.tensor_scatter(t["c"], t["n"], t["w"])

    inputs = {k: TRACED[k] for k in ("c", "n", "w")}
    with pytest.raises(
        ValueError, match=r"opset 21 has no TensorScatter: the operator exists from opset 24"
    ):
        _convert(fn, inputs, 21)


def _openvino_calls(t: dict[str, jax.Array]) -> tuple[jax.Array, ...]:
    x = t["x"]
    return (
        ov.gather(x, t["i"], axis=1),
        ov.gather_elements(x, t["f"], axis=1),
        ov.scatter_update(x, t["s"], t["u"], axis=1),
        ov.scatter_elements_update(x, t["f"], t["y"], axis=1, reduction="max", use_init_val=False),
        ov.scatter_nd_update(x, t["k"], t["v"], reduction="sub"),
        ov.scatter_nd_update(t["q"], t["k"], t["qv"], reduction="sub"),  # (uint8: wraps)
        ov.scatter_elements_update(t["m"], t["f"], t["mv"], axis=1, reduction="mean"),
    )


def test_openvino_functions_convert_to_standard_operators() -> None:
    traced = {
        "x": X * 0 + np.arange(24, dtype=np.float32).reshape(4, 6),
        "i": np.array([[0, 5], [-1, 2]], I32),
        "f": np.array([[0, 1, 2, 3, 4, 5], [5, 4, 3, 2, 1, 0], [1] * 6, [0, 0, 2, 2, 4, 4]], I32),
        "s": np.array([0, 3], I32),
        "u": np.full((4, 2), 2.5, np.float32),
        "y": np.arange(24, dtype=np.float32).reshape(4, 6) - 11.5,
        "k": np.array([[0, 1], [3, 5]], I32),
        "v": np.array([1.5, -2.0], np.float32),
        "q": np.arange(24, dtype=np.uint8).reshape(4, 6) * 7,
        "qv": np.array([200, 255], np.uint8),
        "m": np.arange(24, dtype=np.int32).reshape(4, 6) - 12,
        "mv": np.arange(24, dtype=np.int32).reshape(4, 6) * -5 + 17,
    }
    runs = {**traced, "x": np.arange(24, dtype=np.float32).reshape(4, 6) * 1.5 - 4,
            "i": np.array([[6, -1], [-7, 3]], I32), "s": np.array([2, 5], I32)}  # fmt: skip
    model = _convert(_openvino_calls, traced, 21)
    assert all(n.domain in ("", "ai.onnx") for n in model.graph.node)
    assert {"Gather", "Where", "GatherElements", "ScatterElements", "ScatterND"} <= {n.op_type for n in model.graph.node}  # fmt: skip
    for got, want in zip(_run(model, runs), _eager(_openvino_calls, runs), strict=True):
        assert_identical(got, want)
    with pytest.raises(Exception, match=r"running ScatterElements node"):
        _run(model, {**runs, "s": np.array([-1, 3], I32)})  # ScatterUpdate: no negatives
