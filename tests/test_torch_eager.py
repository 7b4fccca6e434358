"""Small eager gathers on CPU tensors run torch's own kernel first (``_torch._small_call``).

Its kernels answer in-range indices exactly and refuse the rest; the exact path then
answers (negative indices) or raises the library's IndexError. GatherElements' call sites
that torch.gather refused read by address in the compiled kernel, where it serves. These tests hold that
route to the ONNX result when a call site's indices change sign, go out of range, or a
tracer records the call after eager calls bound it. Expected values come from NumPy.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch

import onnx_gather as og
import onnx_gather.openvino

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


def test_gather_elements_reads_by_address_once_torch_gather_refuses(
    fresh_calls: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After torch.gather refuses (negatives), the compiled read by address serves the call
    site: negatives from the end, an index out of range the library's IndexError."""
    from onnx_gather._backends._torch import _numpy_views

    used = []
    real = _numpy_views._kernels.gather_elements_at

    def spy(*args: Any) -> Any:
        used.append(real(*args))
        return used[-1]

    monkeypatch.setattr(_numpy_views._kernels, "gather_elements_at", spy)
    call, good, negative, bad, want = OPS["gather_elements"]
    x = _t(X)
    np.testing.assert_array_equal(call(x, _t(good)).numpy(), want(good))
    assert used == []  # (torch.gather's)
    for indices in (negative, good, negative):
        got = call(x, _t(indices))
        np.testing.assert_array_equal(got.numpy(), want(indices))
        assert got.is_contiguous()
        assert got.dtype == x.dtype
    assert used == [True, True, True]
    with pytest.raises(IndexError, match=r"index 4 .*out of range"):
        call(x, _t(bad))
    assert used == [True, True, True, False]  # (declined: the exact path raised)
    got = call(x, _t(negative))
    x.fill_(-1)  # (the result owns its memory)
    np.testing.assert_array_equal(got.numpy(), want(negative))


def test_gather_elements_by_address_leaves_what_it_cannot_read(
    fresh_calls: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A gradient to record, a strided, negative or conjugate view, indices shorter than
    data off the axis: the exact path, with the right values."""
    from onnx_gather._backends._torch import _numpy_views

    used = []
    real = _numpy_views._kernels.gather_elements_at
    monkeypatch.setattr(
        _numpy_views._kernels, "gather_elements_at", lambda *a: used.append(1) or real(*a)
    )
    negative = OPS["gather_elements"][2]
    index = _t(negative)
    x = _t(X).requires_grad_()
    for _ in range(2):  # (the first refused by torch.gather, the second bound)
        og.gather_elements(x, index, 1).sum().backward()
    counts = np.zeros_like(X)
    np.add.at(counts.reshape(-1), want_positions("gather_elements", negative % 4, _flat()), 2)
    np.testing.assert_array_equal(x.grad.numpy(), counts)
    assert used == []
    z = torch.complex(_t(X), _t(-X))
    views = [  # (each after a plain call of its kind, which reads by address)
        (_t(X.T.copy()).T, X),
        (z.conj(), X + 1j * X),
        (torch._neg_view(_t(-X)), X),  # (a contiguous negative view: its memory holds -X)
    ]
    for data, values in views:
        plain = data.resolve_conj().resolve_neg().contiguous()
        assert not plain.is_conj()
        assert not plain.is_neg()
        used.clear()
        for got in (og.gather_elements(plain, index, 1), og.gather_elements(data, index, 1)):
            np.testing.assert_array_equal(
                got.resolve_conj().resolve_neg().numpy(),
                np.take_along_axis(values, negative % 4, 1),
            )
        assert used == [1]  # (the plain call only)
    short = _t(np.array([[-1, 0], [2, -3]]))  # (2 of data's 8 rows)
    used.clear()
    for _ in range(2):
        got = og.gather_elements(_t(X), short, 1)
        np.testing.assert_array_equal(got.numpy(), np.take_along_axis(X[:2], short.numpy() % 4, 1))
    assert used == []


def _flat() -> np.ndarray:
    return np.arange(X.size).reshape(X.shape)


# --- scatters: the compiled kernel on views, bound once --------------------------------

CACHE = np.arange(2 * 4 * 5 * 6, dtype=np.float32).reshape(2, 4, 5, 6)
#: ScatterND of two rows at sequence position 3 (index tuples of (batch, head, position)).
ROWS = np.array([[[0, 1, 3]], [[1, 2, 3]]])
NEW = np.full((2, 1, 6), -1.0, np.float32)


def _written(cache: np.ndarray, rows: np.ndarray, new: np.ndarray) -> np.ndarray:
    want = cache.copy()
    for tuples, values in zip(rows, new, strict=True):
        for (b, h, p), v in zip(tuples, values, strict=True):
            want[b, h, p] = v
    return want


def test_in_place_scatter_writes_the_targets(fresh_calls: None) -> None:
    c = _t(CACHE)
    for step in range(3):
        new = NEW - step
        og.scatter_nd(c, _t(ROWS), _t(new), out=c)
        np.testing.assert_array_equal(c.numpy(), _written(CACHE, ROWS, new))


def test_in_place_scatter_reads_updates_that_share_the_cache(fresh_calls: None) -> None:
    """Updates that are a view of the cache are read before the cache is written."""
    swap = torch.tensor([[[0, 0, 1]], [[0, 0, 0]]])
    c = _t(CACHE)
    og.scatter_nd(c, swap, _t(NEW), out=c)  # (binds the call)
    c = _t(CACHE)
    # Position 1 gets old position 0, then position 0 old position 1: read after the
    # first write, the second would copy the first's value back. (A C-ordered view: the
    # kernel's own copy of non-contiguous updates would hide a missing check.)
    updates = c[0, 0, 0:2, :].reshape(2, 1, 6)
    og.scatter_nd(c, swap, updates, out=c)
    want = CACHE.copy()
    want[0, 0, [1, 0]] = CACHE[0, 0, [0, 1]]
    np.testing.assert_array_equal(c.numpy(), want)


def test_in_place_scatter_out_of_range_writes_nothing(fresh_calls: None) -> None:
    c = _t(CACHE)
    og.scatter_nd(c, _t(ROWS), _t(NEW), out=c)
    before = c.clone()
    bad = ROWS.copy()
    bad[1, 0, 2] = 6
    with pytest.raises(IndexError, match="index 6 "):
        og.scatter_nd(c, _t(bad), _t(NEW - 5), out=c)
    assert torch.equal(c, before)


def _spied_writes_at(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """A list that gets a 1 for each write the bound scatters make by address."""
    from onnx_gather._backends._torch import _numpy_views

    used: list[int] = []
    real = _numpy_views._writing_at

    def spy(*args: Any) -> Any:
        at = real(*args)
        return None if at is None else lambda *a: used.append(1) or at(*a)

    monkeypatch.setattr(_numpy_views, "_writing_at", spy)
    return used


def _scattered_elements(data: np.ndarray, index: np.ndarray, values: np.ndarray) -> np.ndarray:
    """ScatterElements along axis 2, one update at a time in C order."""
    want = data.copy()
    for position in np.ndindex(index.shape):
        target = list(position)
        target[2] = index[position]
        want[tuple(target)] = values[position]
    return want


def test_in_place_scatter_elements_writes_by_address(
    fresh_calls: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A KV write of ScatterElements: negatives from the end, duplicates in C order,
    nothing written for an index out of range; past AT_UP_TO bytes, the general kernel."""
    from onnx_gather import _api
    from onnx_gather._backends._numpy import _scatter
    from onnx_gather._memo import Memo

    used = _spied_writes_at(monkeypatch)
    index = np.array([3, -1, 0, 3])[None, None, :, None] * np.ones((2, 4, 1, 6), np.int64)
    values = np.arange(2 * 4 * 4 * 6, dtype=np.float32).reshape(2, 4, 4, 6)
    want = _scattered_elements(CACHE, index, values)  # (position 3 twice: the second wins)
    c = _t(CACHE)
    og.scatter_elements(c, _t(index), _t(values), axis=2, out=c)
    np.testing.assert_array_equal(c.numpy(), want)
    assert used == [1]
    bad = index.copy()
    bad[1, 3, 2, 5] = 5
    with pytest.raises(IndexError, match="index 5 "):
        og.scatter_elements(c, _t(bad), _t(values - 1), axis=2, out=c)
    np.testing.assert_array_equal(c.numpy(), want)
    assert used == [1, 1]  # (it declined; the general path raised)
    monkeypatch.setattr(_api, "_CALLS", Memo(4096))
    monkeypatch.setattr(_scatter, "AT_UP_TO", values.nbytes - 1)
    c = _t(CACHE)
    og.scatter_elements(c, _t(index), _t(values), axis=2, out=c)
    np.testing.assert_array_equal(c.numpy(), want)
    assert used == [1, 1]


def test_duplicates_resolve_in_c_order(fresh_calls: None) -> None:
    c = _t(CACHE)
    rows = np.array([[[0, 1, 3]], [[0, 1, 3]]])  # both aim at one row: the last wins
    new = np.stack([np.full((1, 6), 7.0), np.full((1, 6), 9.0)]).astype(np.float32)
    for _ in range(2):
        og.scatter_nd(c, _t(rows), _t(new), out=c)
    assert (c[0, 1, 3] == 9).all()
    got = og.scatter_elements(
        torch.zeros(1, 1, 3), torch.tensor([[[1, 1]]]), torch.tensor([[[5.0, 6.0]]]), axis=2
    )
    assert got.tolist() == [[[0.0, 6.0, 0.0]]]


def test_scatter_route_taken_and_left_where_it_does_not_serve(
    fresh_calls: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The bound route writes by address in place, else runs the compiled kernel; a view,
    a gradient: the exact path."""
    from onnx_gather._backends import _torch
    from onnx_gather._backends._torch import _numpy_views

    used = []
    real, real_at = _numpy_views.bound_compiled, _numpy_views._writing_at

    def spy(*args: Any) -> Any:
        run = real(*args)
        return None if run is None else lambda *a: used.append("kernel") or run(*a)

    def spy_at(*args: Any) -> Any:
        at = real_at(*args)
        return None if at is None else lambda *a: used.append("at") or at(*a)

    monkeypatch.setattr(_numpy_views, "bound_compiled", spy)
    monkeypatch.setattr(_numpy_views, "_writing_at", spy_at)
    monkeypatch.setitem(
        _torch.BINDERS,
        "scatter_nd",
        _numpy_views.bind_scatter(_numpy_views._kernels.scatter_nd, axis=False),
    )
    c = _t(CACHE)
    og.scatter_nd(c, _t(ROWS), _t(NEW), out=c)
    assert used == ["at"]
    og.scatter_nd(c, _t(ROWS).int(), _t(NEW), out=c)  # (int32 tuples: the general kernel)
    assert used == ["at", "kernel"]
    og.scatter_nd(c, _t(ROWS), _t(NEW))  # (a new tensor: the general kernel)
    assert used == ["at", "kernel", "kernel"]
    used.clear()
    strided = _t(CACHE.transpose(1, 0, 2, 3).copy()).transpose(1, 0)  # (not C-ordered)
    og.scatter_nd(strided, _t(ROWS), _t(NEW), out=strided)
    np.testing.assert_array_equal(strided.numpy(), _written(CACHE, ROWS, NEW))
    leaf = _t(CACHE).requires_grad_()
    new = _t(NEW).requires_grad_()
    og.scatter_nd(leaf, _t(ROWS), new).sum().backward()
    assert used == []
    np.testing.assert_array_equal(new.grad.numpy(), np.ones_like(NEW))
    assert leaf.grad[0, 1, 3].sum() == 0
    assert leaf.grad[0, 0, 0].sum() == 6


def test_gather_of_1d_indices_goes_from_index_select_to_indexing(
    fresh_calls: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """index_select first; at the first negative index, advanced indexing; wrong: never."""
    calls = []
    index_select = torch.index_select

    def spy(*args: Any) -> Any:
        calls.append(args[2])
        return index_select(*args)

    monkeypatch.setattr(torch, "index_select", spy)
    x = _t(X)
    for indices in ([0, 3], [-1, 1], [2, 0], [-4, -1]):
        got = og.gather(x, torch.tensor(indices), axis=1)
        np.testing.assert_array_equal(got.numpy(), np.take(X, indices, axis=1))
    assert len(calls) == 2  # (the first call, and the refused second: then indexing)
    with pytest.raises(IndexError, match="index 4 "):
        og.gather(x, torch.tensor([0, 4]), axis=1)


#: Each scatter writing updates [u0, u1] at positions 0 and 2 of four zeros.
NEGATIVE_VIEW_SCATTERS: dict[str, Any] = {
    "scatter_elements": lambda d, u, **o: og.scatter_elements(d, torch.tensor([0, 2]), u, **o),
    "scatter_elements add": lambda d, u, **o: og.scatter_elements(
        d, torch.tensor([0, 2]), u, reduction="add", **o
    ),
    "scatter_nd": lambda d, u, **o: og.scatter_nd(d, torch.tensor([[0], [2]]), u, **o),
    "scatter": lambda d, u, **o: og.scatter(d, torch.tensor([0, 2]), u, **o),
    "openvino.scatter_update": lambda d, u, **o: og.openvino.scatter_update(
        d, torch.tensor([0, 2]), u, 0, **o
    ),
    "openvino.scatter_elements_update": lambda d, u, **o: og.openvino.scatter_elements_update(
        d, torch.tensor([0, 2]), u, 0, **o
    ),
    "openvino.scatter_nd_update": lambda d, u, **o: og.openvino.scatter_nd_update(
        d, torch.tensor([[0], [2]]), u, **o
    ),
}


@pytest.mark.parametrize("in_place", [False, True], ids=["new", "out=data"])
@pytest.mark.parametrize("op", list(NEGATIVE_VIEW_SCATTERS))
def test_scatters_read_a_negative_view_as_its_values(
    op: str, in_place: bool, fresh_calls: None
) -> None:
    """Updates that are a negative view (``z.conj().imag``: its memory holds -values).

    The compiled route views the tensors' memory, which holds the values unnegated: such
    updates take the exact path (they once wrote 2 and 4 for -2 and -4).
    """
    updates = torch.tensor([1 + 2j, 3 + 4j], dtype=torch.complex64).conj().imag
    assert updates.is_neg()
    call = NEGATIVE_VIEW_SCATTERS[op]
    for _ in range(2):  # (the second call: the bound one)
        data = torch.zeros(4)
        got = call(data, updates, out=data) if in_place else call(data, updates)
        assert got.tolist() == [-2.0, 0.0, -4.0, 0.0]
