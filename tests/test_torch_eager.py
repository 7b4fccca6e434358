"""Small eager gathers on CPU tensors run torch's own kernel first (``_torch._eager``).

Its kernels answer in-range indices exactly and refuse the rest; the exact path then
answers (negative indices) or raises the library's IndexError. These tests hold that
route to the ONNX result when a call site's indices change sign, go out of range, or a
tracer records the call after eager calls bound it. Expected values come from NumPy.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch

import onnx_gather as og

X = np.arange(32, dtype=np.float32).reshape(8, 4)
#: Per operator: the call, in-range non-negative indices, the same with negatives, one
#: index out of range, and NumPy's answer for given indices.
OPS: dict[str, tuple[Any, np.ndarray, np.ndarray, np.ndarray, Any]] = {
    "gather": (
        lambda x, i: og.gather(x, i, axis=1),
        np.array([[0, 3], [2, 1]]),
        np.array([[0, -1], [-4, 1]]),
        np.array([[0, 4], [2, 1]]),
        lambda i: np.take(X, i, axis=1),
    ),
    "gather_elements": (
        lambda x, i: og.gather_elements(x, i, axis=1),
        np.tile(np.array([3, 0, 2, 1]), (8, 1)),
        np.tile(np.array([-1, 0, -2, 1]), (8, 1)),
        np.tile(np.array([3, 0, 4, 1]), (8, 1)),
        lambda i: np.take_along_axis(X, i % 4, axis=1),
    ),
    "gather_nd": (
        lambda x, i: og.gather_nd(x, i),
        np.array([[1, 2], [7, 0]]),
        np.array([[-1, 2], [7, -4]]),
        np.array([[1, 2], [8, 0]]),
        lambda i: X[i[:, 0], i[:, 1]],
    ),
}
def _t(a: np.ndarray) -> torch.Tensor:
    return torch.from_numpy(a.copy())


@pytest.fixture
def fresh_calls(monkeypatch: pytest.MonkeyPatch) -> None:
    """Bound calls as in a fresh process: the first call of each test binds."""
    from onnx_gather import _api
    from onnx_gather._memo import Memo

    monkeypatch.setattr(_api, "_CALLS", Memo(4096))


@pytest.mark.parametrize("op", list(OPS))
def test_negatives_after_native_calls(op: str, fresh_calls: None) -> None:
    call, good, negative, _, want = OPS[op]
    x = _t(X)
    for indices in (good, negative, good, negative):
        got = call(x, _t(indices))
        np.testing.assert_array_equal(got.numpy(), want(indices))


@pytest.mark.parametrize("op", list(OPS))
def test_out_of_range_after_native_calls_raises_the_library_error(
    op: str, fresh_calls: None
) -> None:
    call, good, _, bad, _ = OPS[op]
    x = _t(X)
    call(x, _t(good))
    with pytest.raises(IndexError, match=r"index 4 |index 8 ") as caught:
        call(x, _t(bad))
    assert "out of range" in str(caught.value)
    np.testing.assert_array_equal(call(x, _t(good)).numpy(), OPS[op][4](good))


def test_gather_elements_runs_torch_gather_first(
    fresh_calls: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The route is taken (a spy on torch.gather), and left for good once refused."""
    calls = []
    gather = torch.gather

    def spy(*args: Any) -> Any:
        calls.append(args[1])
        return gather(*args)

    monkeypatch.setattr(torch, "gather", spy)
    call, good, negative, _, want = OPS["gather_elements"]
    x = _t(X)
    call(x, _t(good))
    assert len(calls) == 1
    np.testing.assert_array_equal(call(x, _t(negative)).numpy(), want(negative))
    refused = len(calls)
    call(x, _t(good))
    assert len(calls) == refused  # (the call site's indices hold negatives: exact from now on)


@pytest.mark.parametrize("op", list(OPS))
def test_result_owns_its_memory(op: str, fresh_calls: None) -> None:
    """Advanced indexing and gather copy: writing data later leaves the result as it was."""
    call, good, _, _, want = OPS[op]
    x = _t(X)
    got = call(x, _t(good))
    x.fill_(-1)
    np.testing.assert_array_equal(got.numpy(), want(good))


@pytest.mark.parametrize("op", list(OPS))
def test_gradient_through_the_native_route(op: str, fresh_calls: None) -> None:
    call, good, _, _, _ = OPS[op]
    x = _t(X).requires_grad_()
    call(x, _t(good)).sum().backward()
    counts = np.zeros_like(X)
    flat = np.arange(X.size).reshape(X.shape)
    np.add.at(counts.reshape(-1), want_positions(op, good, flat), 1)
    np.testing.assert_array_equal(x.grad.numpy(), counts)


def want_positions(op: str, indices: np.ndarray, flat: np.ndarray) -> np.ndarray:
    """The flat positions of X a call reads (NumPy's indexing of the position table)."""
    if op == "gather":
        return np.take(flat, indices, axis=1).reshape(-1)
    if op == "gather_elements":
        return np.take_along_axis(flat, indices, axis=1).reshape(-1)
    return flat[indices[:, 0], indices[:, 1]].reshape(-1)


@pytest.mark.parametrize("op", list(OPS))
def test_trace_after_eager_calls_records_the_library_operator(op: str, fresh_calls: None) -> None:
    """A call bound eagerly, then traced: the graph holds the checked operator, not aten's."""
    from torch.fx.experimental.proxy_tensor import make_fx

    call, good, negative, _, want = OPS[op]
    x = _t(X)
    call(x, _t(good))
    graph = make_fx(call)(x, _t(good))
    assert "onnx_gather" in str(graph.code)
    np.testing.assert_array_equal(graph(x, _t(negative)).numpy(), want(negative))


@pytest.mark.parametrize(
    "dtype", [torch.float16, torch.bfloat16, torch.uint16, torch.uint32, torch.uint64]
)
def test_types_torch_does_not_copy_bit_for_bit_stay_exact(
    dtype: torch.dtype, fresh_calls: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """float16/bfloat16 NaN payloads and unsigned types: never torch.gather's route."""
    monkeypatch.setattr(torch, "gather", lambda *a: pytest.fail("torch.gather was called"))
    signed = {2: torch.int16, 4: torch.int32, 8: torch.int64}[dtype.itemsize]
    # 0x7C01: a float16 signalling NaN (torch.gather quiets it); a bfloat16 NaN too.
    bits = torch.tensor([[0x7C01, 1], [2, 0x7F81]], dtype=signed)
    x = bits.view(dtype)
    order = np.array([[1, 0], [0, 1]])
    got = og.gather_elements(x, torch.from_numpy(order), axis=1)
    np.testing.assert_array_equal(
        got.view(signed).numpy(), np.take_along_axis(bits.numpy(), order, 1)
    )
