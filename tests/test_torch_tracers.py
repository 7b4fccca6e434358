"""PyTorch's other tracers and odd corners (issue 23, items 1-7), for every operator.

``torch.jit.trace`` and the TorchScript ONNX exporter, ``make_fx`` and forward-mode AD
used to record a constant (the CPU route runs NumPy, which no tracer sees) or lose the
tangent; where a graph is recorded, a call is now one ``onnx_gather::run_v1`` operator
(the TorchScript exporter writes the ONNX node itself), and forward AD runs torch's own
kernels. Expected values come from the loop oracle, never from our own output.
"""

from __future__ import annotations

import io
import warnings
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
import torch
from helpers import assert_identical

import onnx_gather as og
from onnx_gather._conformance.runner import run_oracle

X = np.arange(12, dtype=np.float32).reshape(3, 4) / 4
#: Each operator with indices valid for X (negatives included), bad ones, and attributes.
CALLS = {
    "gather": (np.array([[0, -1], [3, -4]]), np.array([[0, 4]]), {"axis": 1}),
    "gather_elements": (np.array([[2, -3, 0, 1]]), np.array([[0, 3, 0, 0]]), {"axis": 0}),
    "gather_nd": (np.array([[1], [-1], [0]]), np.array([[1], [-5], [0]]), {"batch_dims": 1}),
}
FUNCTIONS = {"gather": og.gather, "gather_elements": og.gather_elements, "gather_nd": og.gather_nd}
OPS = list(CALLS)


def _call(op: str, x: Any, idx: Any, **extra: Any) -> Any:
    return FUNCTIONS[op](x, idx, **CALLS[op][2], **extra)


def _want(op: str, x: np.ndarray, idx: np.ndarray) -> np.ndarray:
    return run_oracle(op, (x, idx), CALLS[op][2], None)


def _other_inputs(op: str) -> tuple[np.ndarray, np.ndarray]:
    """Inputs the trace did not see: other data, other (negative) indices."""
    good = CALLS[op][0]
    return X[::-1].copy() * 3, np.where(good < 0, good + 1, good - 1)


@pytest.fixture(autouse=True)
def _quiet() -> Iterator[None]:
    with warnings.catch_warnings():
        # torch.jit.trace and the TorchScript exporter are deprecated (torch 2.13) and warn.
        warnings.simplefilter("ignore", DeprecationWarning)
        warnings.simplefilter("ignore", torch.jit.TracerWarning)
        yield


@pytest.mark.parametrize("op", OPS)
def test_jit_trace_records_the_call(op: str) -> None:
    """Item 1: the traced function computes on new inputs and checks them when it runs."""
    good, bad, _ = CALLS[op]
    traced = torch.jit.trace(
        lambda x, i: _call(op, x, i), (torch.from_numpy(X), torch.from_numpy(good))
    )
    assert "onnx_gather::run_v1" in str(traced.graph)
    x2, i2 = _other_inputs(op)
    got = traced(torch.from_numpy(x2), torch.from_numpy(i2)).numpy()
    assert_identical(got, _want(op, x2, i2))
    # The TorchScript interpreter reports an exception of an operator as a RuntimeError
    # holding its type and text (torch 2.13): our IndexError, raised when the graph runs.
    with pytest.raises(RuntimeError, match=r"IndexError: .*-13: index (4|-5|3) at position"):
        traced(torch.from_numpy(X), torch.from_numpy(bad))


@pytest.mark.parametrize("op", OPS)
def test_jit_trace_of_host_indices_keeps_them(op: str) -> None:
    """Indices given as a list are a constant of the trace; the data is still an input."""
    good = CALLS[op][0]
    traced = torch.jit.trace(lambda x: _call(op, x, good.tolist()), torch.from_numpy(X))
    x2 = X[::-1].copy() * 3
    assert_identical(traced(torch.from_numpy(x2)).numpy(), _want(op, x2, good))


@pytest.mark.parametrize("opset", [13, 17])
def test_torchscript_onnx_export_writes_the_nodes(opset: int) -> None:
    """Item 1: the TorchScript exporter writes Gather, GatherElements and GatherND nodes.

    The exported model runs in ONNX Runtime on inputs the export did not see, negative
    indices included, and gives our result.
    """
    import onnx
    import onnxruntime as ort

    class Model(torch.nn.Module):
        def forward(self, x: Any, i: Any, j: Any, k: Any) -> Any:
            return tuple(_call(op, x, idx) for op, idx in zip(OPS, (i, j, k), strict=True))

    inputs = [torch.from_numpy(X)] + [torch.from_numpy(CALLS[op][0]) for op in OPS]
    buffer = io.BytesIO()
    torch.onnx.export(Model(), tuple(inputs), buffer, opset_version=opset, dynamo=False,
                      input_names=["x", "i", "j", "k"])  # fmt: skip
    model = onnx.load_from_string(buffer.getvalue())
    nodes = [(n.op_type, {a.name: a.i for a in n.attribute}) for n in model.graph.node]
    assert nodes == [("Gather", {"axis": 1}), ("GatherElements", {"axis": 0}),
                     ("GatherND", {"batch_dims": 1})]  # fmt: skip
    session = ort.InferenceSession(buffer.getvalue(), providers=["CPUExecutionProvider"])
    x2 = X[::-1].copy() * 3
    others = [_other_inputs(op)[1] for op in OPS]
    got = session.run(None, dict(zip(["x", "i", "j", "k"], [x2, *others], strict=True)))
    for op, idx, value in zip(OPS, others, got, strict=True):
        assert_identical(value, _want(op, x2, idx))


def test_torchscript_onnx_export_refuses_what_the_opset_lacks() -> None:
    class Model(torch.nn.Module):
        def forward(self, x: Any, k: Any) -> Any:
            return og.gather_nd(x, k, batch_dims=1)

    inputs = (torch.from_numpy(X), torch.from_numpy(CALLS["gather_nd"][0]))
    with pytest.raises(
        Exception,
        match=r"batch_dims=1 cannot be exported at opset 11: GatherND-11 has no batch_dims \(opset 12 adds it\)",
    ):
        torch.onnx.export(Model(), inputs, io.BytesIO(), opset_version=11, dynamo=False)


@pytest.mark.parametrize("check_bounds", [True, False])
@pytest.mark.parametrize("op", OPS)
def test_make_fx_records_the_call(op: str, check_bounds: bool) -> None:
    """Item 2: make_fx's graph computes on new inputs (checked: one fused operator)."""
    from torch.fx.experimental.proxy_tensor import make_fx

    good, bad, _ = CALLS[op]
    graph = make_fx(lambda x, i: _call(op, x, i, check_bounds=check_bounds))(
        torch.from_numpy(X), torch.from_numpy(good)
    )
    assert ("run_v1" in graph.code) == check_bounds
    x2, i2 = _other_inputs(op)
    assert_identical(graph(torch.from_numpy(x2), torch.from_numpy(i2)).numpy(), _want(op, x2, i2))
    if check_bounds:
        with pytest.raises(IndexError, match=r"index (4|-5|3) at position"):
            graph(torch.from_numpy(X), torch.from_numpy(bad))


@pytest.mark.parametrize("op", OPS)
def test_forward_mode_ad_keeps_the_tangent(op: str) -> None:
    """Item 3: the tangent is the gather of the tangent; forward and reverse jacobians agree."""
    import torch.autograd.forward_ad as fw

    good = CALLS[op][0]
    primal = torch.from_numpy(X.astype(np.float64))
    tangent = torch.from_numpy(np.arange(12, dtype=np.float64).reshape(3, 4) - 5)
    with fw.dual_level():
        out = _call(op, fw.make_dual(primal, tangent), torch.from_numpy(good))
        got = fw.unpack_dual(out).tangent
    assert got is not None
    assert_identical(got.numpy(), _want(op, tangent.numpy(), good))

    def f(t: Any) -> Any:
        return _call(op, t, torch.from_numpy(good))

    forward = torch.autograd.functional.jacobian(f, primal, vectorize=True, strategy="forward-mode")
    reverse = torch.autograd.functional.jacobian(f, primal)
    assert forward.abs().sum() > 0
    assert torch.equal(forward, reverse)


@pytest.mark.parametrize("op", OPS)
def test_a_bool_in_a_compiled_index_list_is_a_type_error(op: str) -> None:
    """Item 4: under torch.compile [True, 0] is refused as eagerly, not read as [1, 0]."""
    torch._dynamo.reset()
    idx = [[True], [0], [1]] if op != "gather_elements" else [[True, 0, 0, 0]]
    compiled = torch.compile(lambda x: _call(op, x, idx))
    with pytest.raises(
        TypeError, match=r"got bool True at position \(0, 0\) \(a bool is not an index\)"
    ):
        compiled(torch.from_numpy(X))


@pytest.fixture
def meta_default_device() -> Iterator[None]:
    torch.set_default_device("meta")
    try:
        yield
    finally:  # a global setting: restored whatever the test did
        torch.set_default_device(None)


@pytest.mark.parametrize("form", ["tensor", "list"])
@pytest.mark.parametrize("op", OPS)
def test_the_result_is_on_datas_device_whatever_the_default(
    op: str, form: str, meta_default_device: None
) -> None:
    """Item 5: a default device (meta here, cuda alike) never decides where a result lives."""
    good = CALLS[op][0]
    data = torch.from_numpy(X)  # a CPU tensor, made before the default matters
    idx = torch.from_numpy(good) if form == "tensor" else good.tolist()
    out = _call(op, data, idx)
    assert out.device.type == "cpu"
    assert_identical(out.numpy(), _want(op, X, good))


def _empty_axis_calls(op: str) -> tuple[Any, Any]:
    """Data with an empty addressed axis and indices that address it (all out of range)."""
    if op == "gather":
        return torch.zeros(2, 0), [[5, -1]]
    if op == "gather_elements":
        return torch.zeros(0, 3), [[0, 1, 2]]
    return torch.zeros(2, 0), [[0], [1]]


@pytest.mark.parametrize("path", ["requires_grad", "func.vmap", "func.grad", "compile"])
@pytest.mark.parametrize("op", OPS)
def test_unchecked_on_an_empty_axis_gives_zeros(op: str, path: str) -> None:
    """Item 6: on torch's own kernels too, never an error of the underlying library."""
    data, idx = _empty_axis_calls(op)
    attributes = {**CALLS[op][2], "axis": 1} if op == "gather" else CALLS[op][2]
    attributes = {"axis": 0} if op == "gather_elements" else attributes

    def run(t: Any) -> Any:
        return FUNCTIONS[op](t, idx, **attributes, check_bounds=False)

    if path == "requires_grad":
        out = run(data.requires_grad_())
    elif path == "func.vmap":
        out = torch.func.vmap(run)(torch.stack([data, data]))[1]
    elif path == "func.grad":
        seen: list[Any] = []
        torch.func.grad(lambda t: (seen.append(run(t)), seen[-1].sum())[1])(data)
        out = torch._C._functorch.get_unwrapped(seen[0])
    else:
        torch._dynamo.reset()
        out = torch.compile(run, fullgraph=True)(data)
    assert out.numel() > 0
    assert not out.detach().any()


@pytest.mark.parametrize(
    ("indices", "error", "match"),
    [
        (range(1, 3), None, None),
        ([2**64], IndexError, r"index 18446744073709551616 at position \(0,\) .* axis 1 of size 4"),
        ([[0], [0, 1]], ValueError, "indices must be a rectangular .* got a ragged one"),
        (["a"], TypeError, r"got string 'a' at position \(0,\)"),
    ],
    ids=["range", "beyond-int64", "ragged", "string"],
)
def test_compiled_index_forms_as_eagerly(indices: Any, error: Any, match: str | None) -> None:
    """Item 7: index forms under torch.compile give the eager result or the eager error.

    Without ``fullgraph`` the error is ours; with it, Dynamo reports an exception raised
    while it traces as its own (torch 2.13), whose text holds ours. (Big-endian NumPy
    indices captured by a compiled function fail in Dynamo itself, before any of our code
    runs: "failed to convert numpy.ndarray to Tensor"; the README says so.)
    """
    data = torch.from_numpy(X)

    def fn(t: Any) -> Any:
        return og.gather(t, indices, axis=1)

    for fullgraph in (False, True):
        torch._dynamo.reset()
        compiled = torch.compile(fn, fullgraph=fullgraph)
        if error is None:
            assert_identical(compiled(data).numpy(), np.take(X, np.asarray(indices), axis=1))
            continue
        if not fullgraph:
            with pytest.raises(error, match=match):
                compiled(data)
        else:
            with pytest.raises(Exception, match=match) as info:
                compiled(data)
            assert error.__name__ in str(info.value) or isinstance(info.value, error)
