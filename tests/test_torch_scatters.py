"""The scatters on PyTorch: gradients, in place, and what is refused until graphs hold them."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest
import torch
from helpers import assert_identical

import onnx_gather as og
from onnx_gather import _ops, openvino
from onnx_gather._conformance.runner import run_oracle

SE, SN = _ops.SCATTER_ELEMENTS, _ops.SCATTER_ND


def _inputs(op: _ops.Operator, reduction: str) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """float64 inputs with duplicate targets and no ties (gradients defined everywhere)."""
    rng = np.random.default_rng(3)
    data = torch.tensor(rng.permutation(24).reshape(4, 6) + 0.5, dtype=torch.float64)
    if op is SE:
        indices = torch.tensor([[0, 1, 1, 3, 0, 2], [0, 1, 2, 3, 3, 2], [1, 1, 0, 0, 2, 3]])
        updates = torch.tensor(rng.permutation(18).reshape(3, 6) * 1.5 + 0.25, dtype=torch.float64)
    else:
        indices = torch.tensor([[1], [3], [1], [0]])
        updates = torch.tensor(rng.permutation(24).reshape(4, 6) * 1.5 + 0.25, dtype=torch.float64)
    if reduction == "mul":  # keep products small
        data, updates = data / 8, updates / 8
    return data.requires_grad_(), indices, updates.requires_grad_()


#: The public functions themselves (what a compiler traces; not ``_ops.call``'s lookup).
FUNCTIONS = {SE.name: og.scatter_elements, SN.name: og.scatter_nd}


def _call(op: _ops.Operator, reduction: str, *arrays: Any) -> Any:
    return FUNCTIONS[op.name](*arrays, reduction=reduction)


@pytest.mark.parametrize("op", [SE, SN], ids=lambda op: op.name)
@pytest.mark.parametrize("reduction", ["none", "add", "mul", "max", "min"])
def test_gradients_match_finite_differences(op: _ops.Operator, reduction: str) -> None:
    """Autograd through torch's operations (rounds in C order) against numerical gradients."""
    data, indices, updates = _inputs(op, reduction)
    assert torch.autograd.gradcheck(
        lambda d, u: _call(op, reduction, d, indices, u), (data, updates)
    )
    assert torch.autograd.gradgradcheck(
        lambda d, u: _call(op, reduction, d, indices, u), (data, updates)
    )


@pytest.mark.parametrize("reduction", ["none", "add", "mul", "max", "min"])
def test_index_tuples_of_length_0_differentiate(reduction: str) -> None:
    """ScatterND with ``k = 0`` runs on data led by an axis of 1: gradients through it."""
    rng = np.random.default_rng(5)
    data = torch.tensor(rng.permutation(6).reshape(2, 3) + 0.5, requires_grad=True)
    updates = torch.tensor(rng.permutation(24).reshape(4, 2, 3) / 4 + 0.25, requires_grad=True)
    indices = torch.zeros(4, 0, dtype=torch.int64)
    assert torch.autograd.gradcheck(
        lambda d, u: og.scatter_nd(d, indices, u, reduction=reduction), (data, updates)
    )


def test_none_sends_the_gradient_to_the_winning_update_only() -> None:
    data = torch.zeros(3, dtype=torch.float64, requires_grad=True)
    updates = torch.tensor([1.0, 2.0, 3.0, 4.0], dtype=torch.float64, requires_grad=True)
    out = _call(SE, "none", data, torch.tensor([2, 0, 2, 2]), updates)
    out.backward(torch.tensor([10.0, 20.0, 30.0], dtype=torch.float64))
    assert data.grad.tolist() == [0.0, 20.0, 0.0]  # written positions get nothing
    assert updates.grad.tolist() == [0.0, 10.0, 0.0, 30.0]  # the last of index 2 wins


def test_add_gradient_is_the_upstream_at_each_target() -> None:
    data = torch.zeros(2, 3, dtype=torch.float64, requires_grad=True)
    updates = torch.ones(3, 3, dtype=torch.float64, requires_grad=True)
    out = _call(SN, "add", data, torch.tensor([[1], [1], [0]]), updates)
    grad = torch.arange(6, dtype=torch.float64).reshape(2, 3)
    out.backward(grad)
    assert torch.equal(data.grad, grad)
    assert torch.equal(updates.grad, grad[[1, 1, 0]])


@pytest.mark.parametrize("op", [SE, SN], ids=lambda op: op.name)
@pytest.mark.parametrize("reduction", ["none", "add", "mul", "max", "min"])
@pytest.mark.parametrize("batched", ["all", "data", "indices"])
def test_vmap_gives_each_entry_its_own_call(
    op: _ops.Operator, reduction: str, batched: str
) -> None:
    """torch.func.vmap (eager, and of grad): each entry as a call of its own, bits and grads."""
    rng = np.random.default_rng(5)
    data = torch.from_numpy(rng.standard_normal((3, 4, 5)).astype(np.float32))
    if op is SE:
        indices = torch.from_numpy(rng.integers(-4, 4, (3, 6, 5)))
        updates = torch.from_numpy(rng.standard_normal((3, 6, 5)).astype(np.float32))
    else:
        indices = torch.from_numpy(rng.integers(-4, 4, (3, 6, 1)))
        updates = torch.from_numpy(rng.standard_normal((3, 6, 5)).astype(np.float32))
    dims = {"all": (0, 0, 0), "data": (0, None, None), "indices": (None, 0, None)}[batched]
    given = [
        x if d is not None else x[0] for x, d in zip((data, indices, updates), dims, strict=True)
    ]

    def entry(b: int) -> list[torch.Tensor]:
        return [x[b] if d is not None else x for x, d in zip(given, dims, strict=True)]

    out = torch.func.vmap(lambda d, i, u: _call(op, reduction, d, i, u), in_dims=dims)(*given)
    for b in range(3):
        assert torch.equal(out[b], _call(op, reduction, *entry(b))), b

    def loss(d: torch.Tensor, i: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
        return (_call(op, reduction, d, i, u) ** 2).sum()

    grads = torch.func.vmap(torch.func.grad(loss, argnums=(0, 2)), in_dims=dims)(*given)
    for b in range(3):
        want = torch.func.grad(loss, argnums=(0, 2))(*entry(b))
        for got, expected in zip(grads, want, strict=True):
            assert torch.equal(got[b], expected), b


@pytest.fixture(scope="module", autouse=True)
def _inductor() -> None:
    with warnings.catch_warnings():
        # Importing inductor imports torch.utils.mkldnn, which warns about TorchScript.
        warnings.filterwarnings("ignore", "`torch.jit.script_method` is deprecated")
        import torch._inductor.compile_fx  # noqa: F401


def _scatter_cases() -> list[tuple[_ops.Operator, str, tuple[torch.Tensor, ...]]]:
    rng = np.random.default_rng(5)
    data = torch.tensor(rng.standard_normal((5, 4)), dtype=torch.float32)
    se = (data, torch.tensor([[0, 4, 4, 1], [4, 4, 0, -1]]), torch.ones(2, 4))
    nd = (data, torch.tensor([[1], [-1], [1]]), torch.arange(12, dtype=torch.float32).reshape(3, 4))
    return [(op, r, se if op is SE else nd) for op in (SE, SN) for r in ("none", "add", "max")]


@pytest.mark.parametrize(("op", "reduction", "arrays"), _scatter_cases())
@pytest.mark.parametrize("check_bounds", [True, False])
def test_compiled_fullgraph_gives_the_eager_bits(
    op: _ops.Operator, reduction: str, arrays: tuple[torch.Tensor, ...], check_bounds: bool
) -> None:
    def f(*a: torch.Tensor) -> torch.Tensor:
        return FUNCTIONS[op.name](*a, check_bounds=check_bounds, reduction=reduction)

    # The loop oracle, not the eager call: the compiled graph runs the eager kernel.
    attributes = {"reduction": reduction, **({"axis": 0} if op is SE else {})}
    numpy_arrays = tuple(a.numpy() for a in arrays)
    want = run_oracle(op.name, numpy_arrays, attributes, None, check_bounds)
    eager = f(*arrays)
    torch._dynamo.reset()
    compiled = torch.compile(f, fullgraph=True, backend="inductor")(*arrays)
    assert_identical(eager.numpy(), want)
    assert_identical(compiled.numpy(), want)


def test_a_compiled_call_raises_the_eager_error_when_the_graph_runs() -> None:
    f = torch.compile(lambda d, i, u: _call(SN, "add", d, i, u), fullgraph=True)
    with pytest.raises(IndexError, match=r"ScatterND-18: index 5 at position \(1, 0\)"):
        f(torch.zeros(5, 2), torch.tensor([[1], [5]]), torch.ones(2, 2))


@pytest.mark.parametrize("reduction", ["none", "add", "mul", "max", "min"])
def test_compiled_gradients_are_the_eager_ones(reduction: str) -> None:
    """The same formulas in both (:func:`onnx_gather._backends._torch._exact.scatter_gradients`)."""
    data, indices, updates = _inputs(SE, reduction)
    grads = torch.autograd.grad(_call(SE, reduction, data, indices, updates).sum(), (data, updates))
    f = torch.compile(lambda d, u: _call(SE, reduction, d, indices, u), fullgraph=True)
    compiled = torch.autograd.grad(f(data, updates).sum(), (data, updates))
    for got, want in zip(compiled, grads, strict=True):
        assert torch.equal(got, want)


def test_export_holds_one_operator_and_runs_as_eagerly() -> None:
    class Update(torch.nn.Module):
        def forward(
            self, cache: torch.Tensor, pos: torch.Tensor, new: torch.Tensor
        ) -> torch.Tensor:
            return _call(SN, "none", cache, pos, new)

    args = (torch.zeros(4, 3), torch.tensor([[2]]), torch.ones(1, 3))
    program = torch.export.export(Update(), args)
    assert "onnx_gather.run_v1" in str(program.graph)
    assert torch.equal(program.module()(*args), Update()(*args))


def test_make_fx_and_jit_trace_record_the_operator() -> None:
    from torch.fx.experimental.proxy_tensor import make_fx

    args = (torch.zeros(4, 3), torch.tensor([[2], [2]]), torch.ones(2, 3))

    def f(d: torch.Tensor, i: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
        return _call(SN, "add", d, i, u)

    graph = make_fx(f)(*args)
    assert "run_v1" in graph.code
    other = (torch.ones(4, 3), torch.tensor([[0], [3]]), torch.full((2, 3), 5.0))
    assert torch.equal(graph(*other), f(*other))
    with warnings.catch_warnings():  # (torch.jit.trace is deprecated in torch 2.13 and warns)
        warnings.simplefilter("ignore", DeprecationWarning)
        warnings.simplefilter("ignore", torch.jit.TracerWarning)
        traced = torch.jit.trace(f, args)
    assert "onnx_gather::run_v1" in str(traced.graph)
    assert torch.equal(traced(*other), f(*other))


def test_forward_mode_ad_carries_the_tangent() -> None:
    import torch.autograd.forward_ad as fwAD

    data, indices, updates = _inputs(SE, "add")
    data, updates = data.detach(), updates.detach()
    with warnings.catch_warnings(), fwAD.dual_level():
        # (the first dual tensor scripts torch's decompositions, which warns)
        warnings.simplefilter("ignore", DeprecationWarning)
        fwAD.make_dual(torch.zeros(1), torch.zeros(1))
    with fwAD.dual_level():
        dual = fwAD.make_dual(updates, torch.ones_like(updates))
        out = _call(SE, "add", data, indices, dual)
        tangent = fwAD.unpack_dual(out).tangent
    want = torch.zeros_like(data).index_put(
        (indices.reshape(-1), torch.arange(6).repeat(3)),
        torch.ones(18, dtype=data.dtype),
        accumulate=True,
    )
    assert torch.equal(tangent, want)


def test_in_place_on_a_tensor_writes_into_it() -> None:
    cache = torch.zeros(2, 5, 3)
    twin = cache.view(-1)  # shares the memory
    new = torch.ones(2, 1, 3)
    idx = torch.tensor([[[0, 4]], [[1, 4]]])
    assert og.scatter_nd(cache, idx, new, out=cache) is cache
    assert twin.reshape(2, 5, 3)[:, 4].eq(1).all()
    assert twin.reshape(2, 5, 3)[:, :4].eq(0).all()


@pytest.mark.parametrize("op", [SE, SN], ids=lambda op: op.name)
@pytest.mark.parametrize("reduction", ["none", "add", "mul", "max", "min"])
@pytest.mark.parametrize("into", ["another", "data"])
def test_gradients_flow_through_out(op: _ops.Operator, reduction: str, into: str) -> None:
    """``out=`` records its write as ``index_put_`` does: the same gradients as without it."""
    leaf_data, indices, leaf_updates = _inputs(op, reduction)
    upstream = torch.linspace(-1.0, 2.0, leaf_data.numel(), dtype=torch.float64)
    upstream = upstream.reshape(leaf_data.shape)

    def gradients(out: Any) -> tuple[torch.Tensor, ...]:
        data = leaf_data * 1  # (a non-leaf: a leaf requiring grad cannot be written in place)
        target = data if out == "data" else out
        kwargs = {} if out is None else {"out": target}
        result = FUNCTIONS[op.name](data, indices, leaf_updates, reduction=reduction, **kwargs)
        if out is not None:
            assert result is target
        return torch.autograd.grad((result * upstream).sum(), (leaf_data, leaf_updates))

    want = gradients(None)
    target = "data" if into == "data" else torch.empty_like(leaf_data.detach())
    for got, expected in zip(gradients(target), want, strict=True):
        assert_identical(got.numpy(), expected.numpy())


#: OpenVINO's reductions, by whose inputs they take (ScatterElements' or ScatterND's), with
#: ``use_init_val`` (ScatterElementsUpdate's alone).
OPENVINO_REDUCTIONS = [
    *((SE, r, init) for r in ("none", "sum", "prod", "max", "min", "mean") for init in (1, 0)),
    *((SN, r, 1) for r in ("none", "sum", "sub", "prod", "max", "min")),
]


def _openvino(
    op: _ops.Operator, reduction: str, use_init_val: int, *arrays: Any, **out: Any
) -> Any:
    if op is SE:
        return openvino.scatter_elements_update(
            *arrays, 0, reduction=reduction, use_init_val=bool(use_init_val), **out
        )
    return openvino.scatter_nd_update(*arrays, reduction=reduction, **out)


@pytest.mark.parametrize(
    ("op", "reduction", "use_init_val"), OPENVINO_REDUCTIONS,
    ids=[f"{op.name}-{r}-{'init' if i else 'identity'}" for op, r, i in OPENVINO_REDUCTIONS],
)  # fmt: skip
def test_openvino_gradients_match_finite_differences_and_flow_through_out(
    op: _ops.Operator, reduction: str, use_init_val: int
) -> None:
    """OpenVINO's reductions are a few ONNX scatters in a row, the last written into out=:
    no step may save for its backward what a later one writes in place (mean with
    ``out=data`` and every ``use_init_val=False`` raised "modified by an inplace
    operation"). The gradients without out= are the numerical ones; with it, the same."""
    leaf_data, indices, leaf_updates = _inputs(op, "mul" if reduction == "prod" else reduction)
    assert torch.autograd.gradcheck(
        lambda d, u: _openvino(op, reduction, use_init_val, d, indices, u),
        (leaf_data, leaf_updates),
    )
    upstream = torch.linspace(-1.0, 2.0, leaf_data.numel(), dtype=torch.float64)
    upstream = upstream.reshape(leaf_data.shape)

    def gradients(into: str | None) -> tuple[torch.Tensor, ...]:
        data = leaf_data * 1  # (a non-leaf: a leaf requiring grad cannot be written in place)
        target = {"data": data, "another": torch.empty_like(data.detach())}.get(into or "")
        out = {} if target is None else {"out": target}
        result = _openvino(op, reduction, use_init_val, data, indices, leaf_updates, **out)
        return torch.autograd.grad((result * upstream).sum(), (leaf_data, leaf_updates))

    want = gradients(None)
    for into in ("data", "another"):
        for got, expected in zip(gradients(into), want, strict=True):
            assert_identical(got.numpy(), expected.numpy())


def test_out_that_is_a_leaf_requiring_grad_is_refused_as_torch_refuses_it() -> None:
    leaf = torch.zeros(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        og.scatter_nd(leaf, torch.tensor([[1]]), torch.ones(1), out=leaf)


@pytest.mark.parametrize("route", ["kernel", "rounds"])
@pytest.mark.parametrize("op", [SE, SN], ids=lambda op: op.name)
@pytest.mark.parametrize("reduction", ["add", "mul", "max", "min"])
def test_many_duplicates_under_autograd_in_c_order(
    op: _ops.Operator, reduction: str, route: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """torch's own route (autograd here; CUDA, torch.func): every update once, in C order.

    The compiled kernel on the CPU, else rounds that each read only their own updates
    (issue 33, item 9: rounds that scanned every update made 10**5 duplicates quadratic).
    float32 sums of many duplicates show any other order.
    """
    from onnx_gather._backends._torch import _exact

    if route == "rounds":
        monkeypatch.setattr(_exact, "reduced_on_kernel", lambda *args: None)
    rng = np.random.default_rng(9)
    m = 600
    data = rng.standard_normal((5, 2)).astype(np.float32)
    values = (rng.standard_normal((m, 2)) * 10 ** rng.uniform(-3, 3, (m, 1))).astype(np.float32)
    if reduction == "mul":
        values = (1 + values / 1e4).astype(np.float32)
    rows = rng.choice([0, 3, -1], size=m)  # three targets, about 200 updates each
    if op is SE:
        indices = np.stack([rows, rows], axis=1)
        arrays = (data, indices, values)
        attributes: dict[str, Any] = {"axis": 0}
    else:
        arrays = (data, rows.reshape(m, 1), values)
        attributes = {}
    want = run_oracle(op.name, arrays, {**attributes, "reduction": reduction}, None)
    tensors = [torch.from_numpy(a.copy()) for a in arrays]
    tensors[0].requires_grad_()
    result = FUNCTIONS[op.name](*tensors, reduction=reduction, **attributes)
    assert result.grad_fn is not None
    assert_identical(result.detach().numpy(), want)


def _in_place_tensor_scatter(cache: torch.Tensor, starts: list[int]) -> None:
    update = torch.ones(cache.shape[0], 1, cache.shape[2])
    og.tensor_scatter(cache, update, torch.tensor(starts), out=cache)


#: Every in-place scatter a CPU tensor may take a view route for, on a (4, 3) cache.
IN_PLACE = {
    "scatter_nd": lambda c: og.scatter_nd(c, torch.tensor([[1]]), torch.ones(1, 3), out=c),
    "scatter_elements": lambda c: og.scatter_elements(
        c, torch.tensor([[1, 0, 2]]), torch.ones(1, 3), out=c
    ),
    "scatter_elements add": lambda c: og.scatter_elements(
        c, torch.tensor([[1, 0, 2]]), torch.ones(1, 3), reduction="add", out=c
    ),
    "tensor_scatter": lambda c: _in_place_tensor_scatter(c.view(1, 4, 3), [1]),
    "tensor_scatter entries": lambda c: _in_place_tensor_scatter(c.view(2, 2, 3), [1, 0]),
    "openvino.scatter_update": lambda c: openvino.scatter_update(
        c, torch.tensor([1]), torch.ones(1, 3), 0, out=c
    ),
    "openvino.scatter_elements_update max": lambda c: openvino.scatter_elements_update(
        c,
        torch.tensor([[1, 0, 2]]),
        torch.ones(1, 3),
        0,
        reduction="max",
        use_init_val=False,
        out=c,
    ),
}


@pytest.mark.parametrize("write", list(IN_PLACE.values()), ids=list(IN_PLACE))
def test_an_in_place_write_bumps_the_version_autograd_checks(write: Any) -> None:
    """A cache that autograd saved for a backward, then written in place through a view of
    its memory, makes that backward raise as torch's own in-place writes do (not return a
    gradient computed from the new values)."""
    cache = torch.arange(12, dtype=torch.float32).reshape(4, 3)
    weight = torch.ones(4, 3, requires_grad=True)
    loss = (weight * cache).sum()  # (saves cache: d loss / d weight is cache)
    before = cache._version
    write(cache)
    assert cache._version > before
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        loss.backward()
