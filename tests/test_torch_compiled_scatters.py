"""The scatters without reduction under ``torch.compile``: torch's operations, in place.

A checked scatter of CPU tensors without reduction compiles to one ``index_put`` of every
update's target with its winner's value (the last update in C order of those that meet),
so ``out=data`` (a KV-cache write) is a write of the targets, as ``c[:, :, pos] = new``
is. Expected values from the loop oracle; the route from the aten graph AOTAutograd
records.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch
from helpers import assert_identical

import onnx_gather as og
from onnx_gather._conformance.runner import run_oracle

pytestmark = pytest.mark.backend("torch")


def _compile(fn: Callable[..., Any]) -> Callable[..., Any]:
    with warnings.catch_warnings():
        # Importing inductor imports torch.utils.mkldnn, which warns about TorchScript.
        warnings.filterwarnings("ignore", "`torch.jit.script_method` is deprecated")
        import torch._inductor.compile_fx
    return torch.compile(fn, fullgraph=True)


def _graph_of(fn: Callable[..., Any], *args: Any) -> str:
    """The code of the aten graph AOTAutograd records for ``fn(*args)``."""
    from torch._dynamo.backends.common import aot_autograd

    codes: list[str] = []

    def forward(gm: torch.fx.GraphModule, example: Any) -> Callable[..., Any]:
        codes.extend(m.code for m in gm.modules() if isinstance(m, torch.fx.GraphModule))
        return gm.forward

    torch.compile(fn, fullgraph=True, backend=aot_autograd(fw_compiler=forward))(*args)
    return "\n".join(codes)


def _kv() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """A (1, 4, 16, 8) cache, the new entry at position 5 of each head, as ND and element indices."""
    cache = torch.arange(1 * 4 * 16 * 8, dtype=torch.float32).reshape(1, 4, 16, 8)
    new = -torch.arange(1 * 4 * 1 * 8, dtype=torch.float32).reshape(1, 4, 1, 8) - 1
    heads = torch.arange(4).reshape(1, 4, 1, 1)
    nd = torch.cat([torch.zeros_like(heads), heads, torch.full_like(heads, -11)], -1)
    elements = torch.full((1, 4, 1, 8), 5)
    return cache, new, nd, elements


def test_a_compiled_kv_cache_write_is_an_index_put_in_place() -> None:
    cache, new, nd, _ = _kv()
    want = run_oracle("scatter_nd", (cache.numpy(), nd.numpy(), new.numpy()), {}, None)

    def step(c: torch.Tensor, i: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
        og.scatter_nd(c, i, u, out=c)
        return c[:, :, 5].sum()

    graph = _graph_of(step, cache.clone(), nd, new)
    assert "aten.index_put" in graph
    assert "run_v1" not in graph
    got = _compile(step)(cache, nd, new)
    assert_identical(cache.numpy(), want)  # written in place
    assert float(got) == float(want[:, :, 5].sum())


def test_a_compiled_scatter_elements_write_in_place() -> None:
    cache, new, _, elements = _kv()
    want = run_oracle(
        "scatter_elements", (cache.numpy(), elements.numpy(), new.numpy()), {"axis": 2}, None
    )
    f = _compile(lambda c, i, u: og.scatter_elements(c, i, u, axis=2, out=c))
    result = f(cache, elements, new)
    assert result.data_ptr() == cache.data_ptr()
    assert_identical(cache.numpy(), want)


def test_compiled_duplicates_resolve_in_c_order() -> None:
    """Targets hit several times: the last update in C order wins, as the spec's loop."""
    data = torch.zeros(5, 3)
    nd = torch.tensor([[1], [3], [-4], [1], [3], [0]])  # rows 1 and 3 three times and twice
    updates = torch.arange(18.0).reshape(6, 3)
    want = run_oracle("scatter_nd", (data.numpy(), nd.numpy(), updates.numpy()), {}, None)
    assert "run_v1" not in _graph_of(lambda d, i, u: og.scatter_nd(d, i, u), data, nd, updates)
    assert_identical(
        _compile(lambda d, i, u: og.scatter_nd(d, i, u))(data, nd, updates).numpy(), want
    )
    # ScatterElements: duplicates meet along the axis only.
    indices = torch.tensor([[0, 2, 1], [2, 2, 0], [2, -1, 1], [0, 0, 1]])
    values = torch.arange(12.0).reshape(4, 3) + 100
    data = torch.zeros(3, 3)
    want = run_oracle(
        "scatter_elements", (data.numpy(), indices.numpy(), values.numpy()), {"axis": 0}, None
    )
    f = _compile(lambda d, i, u: og.scatter_elements(d, i, u, axis=0))
    assert_identical(f(data, indices, values).numpy(), want)


@pytest.mark.parametrize("bad", [16, -17, -32, -33, 1 << 40])
def test_a_compiled_write_out_of_range_raises_and_writes_nothing(bad: int) -> None:
    """Any index out of range puts every target out of range: nothing lands before the error."""
    cache, new, nd, elements = _kv()
    before = cache.clone()
    nd[0, 3, 0, 2] = bad  # the last head's position
    f = _compile(lambda c, i, u: og.scatter_nd(c, i, u, out=c))
    # (inductor's check, or torch's scatter_reduce where inductor keeps aten's kernel)
    with pytest.raises(RuntimeError, match="out of bounds"):
        f(cache, nd, new)
    assert_identical(cache.numpy(), before.numpy())
    elements[0, 3, 0, 7] = bad
    g = _compile(lambda c, i, u: og.scatter_elements(c, i, u, axis=2, out=c))
    with pytest.raises(RuntimeError, match="index out of bounds"):
        g(cache, elements, new)
    assert_identical(cache.numpy(), before.numpy())


#: Checked calls that write nothing (no update element) with an index out of range.
NOTHING_WRITTEN = {
    "tensor_scatter update of length 0": (
        lambda c, u, w: og.tensor_scatter(c, u, w, axis=1),
        (torch.zeros(2, 3, 2), torch.zeros(2, 0, 2), torch.tensor([4, 9])),
        r"TensorScatter-24: index 4 at position \(0,\) of write_indices",
    ),
    "tensor_scatter inner dims of size 0": (
        lambda c, u, w: og.tensor_scatter(c, u, w, axis=1),
        (torch.zeros(2, 3, 0), torch.zeros(2, 1, 0), torch.tensor([0, -1])),
        r"TensorScatter-24: index -1 at position \(1,\) of write_indices",
    ),
    "scatter_nd slices of no element": (
        og.scatter_nd,
        (torch.zeros(4, 0), torch.tensor([[9], [0]]), torch.zeros(2, 0)),
        r"ScatterND-18: index 9 at position \(0, 0\) of indices",
    ),
}


@pytest.mark.parametrize("call", list(NOTHING_WRITTEN))
def test_a_compiled_call_that_writes_nothing_still_raises(call: str) -> None:
    """Reliability round 5, item 5: with no element written, no compiled write checks an
    index, and the call returned silently (eagerly, and for the gathers and OpenVINO's
    scatters, an IndexError): the check must not ride on the writes alone."""
    fn, args, match = NOTHING_WRITTEN[call]
    with pytest.raises(IndexError, match=match):
        fn(*args)
    with pytest.raises(IndexError, match=match):
        _compile(fn)(*args)


def test_compiled_out_that_is_the_updates() -> None:
    """Every input is read before ``out`` is written (the graph writes the result into it)."""
    data = torch.arange(3.0)
    updates = torch.tensor([1.0, 2.0, 3.0])
    indices = torch.tensor([2, 0, 2])
    want = run_oracle(
        "scatter_elements", (data.numpy(), indices.numpy(), updates.numpy()), {"axis": 0}, None
    )
    f = _compile(lambda d, i, u: og.scatter_elements(d, i, u, out=u))
    assert_identical(f(data, indices, updates).numpy(), want)
    assert_identical(updates.numpy(), want)


def test_reductions_and_gradients_keep_the_fused_operator() -> None:
    """add's order and a winner's gradient need the fused operator (its kernel, its formulas)."""
    data, indices, updates = torch.zeros(4), torch.tensor([1, 1, 3]), torch.ones(3)
    graph = _graph_of(
        lambda d, i, u: og.scatter_elements(d, i, u, reduction="add"), data, indices, updates
    )
    assert "run_v1" in graph
    grad_data = torch.zeros(4, requires_grad=True)
    graph = _graph_of(lambda d, i, u: og.scatter_elements(d, i, u), grad_data, indices, updates)
    assert "run_v1" in graph
    want = np.array([0.0, 1.0, 0.0, 1.0], dtype=np.float32)
    assert_identical(
        _compile(lambda d, i, u: og.scatter_elements(d, i, u))(data, indices, updates).numpy(), want
    )


def test_compiled_duplicates_of_many_tuples_into_few_rows() -> None:
    """More tuples than pairs are compared (400**2 > 2**16): each row's last one, by a buffer."""
    rng = np.random.default_rng(5)
    data = torch.zeros(100, 2)
    nd = torch.from_numpy(rng.integers(-100, 100, (400, 1)))
    updates = torch.from_numpy(rng.standard_normal((400, 2)).astype(np.float32))
    want = run_oracle("scatter_nd", (data.numpy(), nd.numpy(), updates.numpy()), {}, None)
    assert "run_v1" not in _graph_of(lambda d, i, u: og.scatter_nd(d, i, u), data, nd, updates)
    got = _compile(lambda d, i, u: og.scatter_nd(d, i, u))(data, nd, updates)
    assert_identical(got.numpy(), want)


@pytest.mark.parametrize("tuples", [1, 400])
def test_a_compiled_write_out_of_range_raises_whatever_the_number_of_tuples(tuples: int) -> None:
    """One tuple (no comparison) and many (each row's last by a buffer): the same guarantee."""
    torch._dynamo.reset()  # a second shape would recompile with symbolic sizes: the fused op
    rng = np.random.default_rng(7)
    data = torch.zeros(100, 2)
    nd = torch.from_numpy(rng.integers(-100, 100, (tuples, 1)))
    nd[tuples // 2, 0] = 100
    updates = torch.ones(tuples, 2)
    f = _compile(lambda d, i, u: og.scatter_nd(d, i, u, out=d))
    with pytest.raises(RuntimeError, match="out of bounds"):
        f(data, nd, updates)
    assert not data.any()


def _layers(write: Callable[..., Any]) -> Callable[..., Any]:
    """Three layers' caches written in place at the same positions, then summed."""

    def step(caches: list[torch.Tensor], i: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
        for c in caches:
            write(c, i, u)
        return sum(c.sum() for c in caches)

    return step


_WRITES = {
    "scatter_nd": lambda c, i, u: og.scatter_nd(c, i, u, out=c),
    "scatter_elements": lambda c, i, u: og.scatter_elements(c, i, u, axis=2, out=c),
}


@pytest.mark.parametrize("op", sorted(_WRITES))
def test_layers_writing_at_the_same_positions_share_one_check(op: str) -> None:
    """The indices' work is traced once per index tensor: one check, and every layer exact."""
    cache, new, nd, elements = _kv()
    indices = nd if op == "scatter_nd" else elements
    attributes = {} if op == "scatter_nd" else {"axis": 2}
    want = run_oracle(op, (cache.numpy(), indices.numpy(), new.numpy()), attributes, None)
    step = _layers(_WRITES[op])
    graph = _graph_of(step, [cache.clone() for _ in range(3)], indices, new)
    one = _graph_of(step, [cache.clone()], indices, new)
    assert graph.count("aten.index_put") == 3
    check = "aten.amax" if op == "scatter_nd" else "aten.any"
    assert graph.count(check) == one.count(check) > 0, graph
    caches = [cache.clone() for _ in range(3)]
    _compile(step)(caches, indices, new)
    for c in caches:
        assert_identical(c.numpy(), want)


@pytest.mark.parametrize("op", sorted(_WRITES))
def test_every_pass_of_a_compile_builds_the_check_once(
    op: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Dynamo's example values and AOTAutograd's passes build the check once per index tensor.

    (Compile time: the passes that record nothing used to build it once per layer.)
    """
    from onnx_gather._backends._torch import _inductor

    cache, new, nd, elements = _kv()
    indices = nd if op == "scatter_nd" else elements
    built = []
    targets_in_graph = _inductor._targets_in_graph

    def counted(*args: Any) -> Any:
        built.append(args)
        return targets_in_graph(*args)

    monkeypatch.setattr(_inductor, "_targets_in_graph", counted)
    passes = []
    for layers in (1, 4):
        torch._dynamo.reset()
        built.clear()
        _compile(_layers(_WRITES[op]))([cache.clone() for _ in range(layers)], indices, new)
        passes.append(len(built))
    assert passes[0] == passes[1] > 0, passes


@pytest.mark.parametrize("through", ["itself", "its base", "its .data"])
@pytest.mark.parametrize("op", sorted(_WRITES))
def test_indices_changed_between_two_compiled_writes(op: str, through: str) -> None:
    """An in-place change of the indices (or of their base) between calls is seen by the next."""
    torch._dynamo.reset()
    cache, new, nd, elements = _kv()
    indices = nd if op == "scatter_nd" else elements
    attributes = {} if op == "scatter_nd" else {"axis": 2}
    write = _WRITES[op]

    def step(caches: list[torch.Tensor], base: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
        i = base[0]
        write(caches[0], i, u)
        # Positions 5 -> 4 (ND: -11 -> -12). (A write through .data bumps no version.)
        {"itself": i, "its base": base, "its .data": i.data}[through].sub_(1)
        write(caches[1], i, u)
        write(caches[2], i, u)
        return caches[0].sum()

    later = indices - 1
    first = run_oracle(op, (cache.numpy(), indices.numpy(), new.numpy()), attributes, None)
    second = run_oracle(op, (cache.numpy(), later.numpy(), new.numpy()), attributes, None)
    caches = [cache.clone() for _ in range(3)]
    base = indices.unsqueeze(0).clone()
    _compile(step)(caches, base, new)
    assert_identical(caches[0].numpy(), first)
    assert_identical(caches[1].numpy(), second)
    assert_identical(caches[2].numpy(), second)
    assert not np.array_equal(first, second)


@pytest.mark.parametrize("op", sorted(_WRITES))
def test_layers_sharing_indices_out_of_range_raise_and_write_nothing(op: str) -> None:
    cache, new, nd, elements = _kv()
    if op == "scatter_nd":
        nd[0, 3, 0, 2] = 16
    else:
        elements[0, 3, 0, 7] = 16
    caches = [cache.clone() for _ in range(3)]
    with pytest.raises(RuntimeError, match="out of bounds"):
        _compile(_layers(_WRITES[op]))(caches, nd if op == "scatter_nd" else elements, new)
    for c in caches:
        assert_identical(c.numpy(), cache.numpy())


@pytest.mark.parametrize("op", sorted(_WRITES))
def test_host_indices_compile_into_one_graph(op: str) -> None:
    """Host indices under ``fullgraph=True``: Dynamo traces the library's body, no break."""
    torch._dynamo.reset()
    cache, new, nd, elements = _kv()
    host = (nd if op == "scatter_nd" else elements).numpy()
    attributes = {} if op == "scatter_nd" else {"axis": 2}
    want = run_oracle(op, (cache.numpy(), host, new.numpy()), attributes, None)
    write = _WRITES[op]
    _compile(lambda c, u: write(c, host, u))(cache, new)
    assert_identical(cache.numpy(), want)
