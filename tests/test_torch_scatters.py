"""The scatters on PyTorch: gradients, in place, and what is refused until graphs hold them."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest
import torch

from onnx_gather import _api, _ops

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


def _call(op: _ops.Operator, reduction: str, *arrays: Any) -> Any:
    attributes = (0, reduction) if op is SE else (reduction,)
    return _api.run(op, 18, arrays, attributes, True)


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


@pytest.mark.parametrize(
    "transform",
    [
        lambda f: torch.compile(f, fullgraph=True, backend="eager"),
        lambda f: torch.func.vmap(f),
        lambda f: lambda *a: torch.jit.trace(f, a)(*a),
    ],
    ids=["compile", "vmap", "jit.trace"],
)
def test_transforms_are_refused_until_graphs_hold_scatters(transform: Any) -> None:
    """A tracer would record this call's rounds as a fixed graph: a clear error instead."""

    def f(d: torch.Tensor, i: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
        return _call(SE, "add", d, i, u)

    # A batch of two calls (vmap maps the first dim).
    data, indices, updates = (
        torch.zeros(2, 2, 3),
        torch.tensor([[[0, 1, 1]]] * 2),
        torch.ones(2, 1, 3),
    )
    with warnings.catch_warnings():  # (torch.jit.trace is deprecated in torch 2.13 and warns)
        warnings.simplefilter("ignore", DeprecationWarning)
        warnings.simplefilter("ignore", torch.jit.TracerWarning)
        with pytest.raises(Exception, match="cannot be traced or transformed by torch yet") as info:
            transform(f)(data, indices, updates)
    assert "ScatterElements-18" in str(info.value)


def test_in_place_on_a_tensor_writes_into_it() -> None:
    cache = torch.zeros(2, 5, 3)
    twin = cache.view(-1)  # shares the memory
    new = torch.ones(2, 1, 3)
    idx = torch.tensor([[[0, 4]], [[1, 4]]])
    assert _api.run(SN, 18, (cache, idx, new), ("none",), True, cache) is cache
    assert twin.reshape(2, 5, 3)[:, 4].eq(1).all()
    assert twin.reshape(2, 5, 3)[:, :4].eq(0).all()
