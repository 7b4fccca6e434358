"""ZeroTensors (``torch._efficientzerotensor``) as data or updates: the result of zeros.

Autograd makes them for some zero gradients. They have no memory (a null data pointer):
the routes that view a tensor's memory (the compiled kernels, by address or through NumPy
views) must leave them to torch's operations. Before, a TensorScatter write in place
crashed the process, and a large GatherElements read whatever lay at address 0. (Integer
ZeroTensors as indices are left out: torch's own indexing crashes on them.)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import torch

import onnx_gather as og
import onnx_gather.openvino

pytestmark = pytest.mark.backend("torch")


def _zeros(zero: bool, *shape: int) -> torch.Tensor:
    return torch._efficientzerotensor(*shape) if zero else torch.zeros(shape)


def _calls(n: int) -> dict[str, Callable[[bool], Any]]:
    """Each call, given whether its zeros are a ZeroTensor; n rows (4: torch's kernel
    first for gathers; 300: the compiled kernel on views)."""
    x = torch.arange(n * 5.0).reshape(n, 5)
    c3 = torch.arange(2 * n * 4.0).reshape(2, n, 4)
    rows = torch.tensor([[1], [0]])

    def in_place(fn: Callable[[torch.Tensor], Any], base: torch.Tensor) -> Any:
        c = base.clone()
        return fn(c)

    return {
        "gather_elements data": lambda z: og.gather_elements(
            _zeros(z, n, 5), torch.zeros(n, 5, dtype=torch.int64), axis=1
        ),
        "gather data": lambda z: og.gather(_zeros(z, n, 5), torch.tensor([0, -1]), axis=0),
        "gather_nd data": lambda z: og.gather_nd(_zeros(z, n, 5), torch.tensor([[0, 1]])),
        "openvino.gather data": lambda z: onnx_gather.openvino.gather(
            _zeros(z, n, 5), torch.tensor([0, 1]), axis=0
        ),
        "scatter_elements updates": lambda z: og.scatter_elements(
            x, torch.tensor([[0, 1]]), _zeros(z, 1, 2), axis=1
        ),
        "scatter_elements updates, in place": lambda z: in_place(
            lambda c: og.scatter_elements(
                c, torch.tensor([[0, 1]]), _zeros(z, 1, 2), axis=1, out=c
            ),
            x,
        ),
        "scatter_elements data": lambda z: og.scatter_elements(
            _zeros(z, n, 5), torch.tensor([[0, 1]]), torch.ones(1, 2), axis=1
        ),
        "scatter_nd updates": lambda z: og.scatter_nd(x, rows, _zeros(z, 2, 5)),
        "scatter_nd updates, in place": lambda z: in_place(
            lambda c: og.scatter_nd(c, rows, _zeros(z, 2, 5), out=c), x
        ),
        "scatter_nd add": lambda z: og.scatter_nd(x, rows, _zeros(z, 2, 5), reduction="add"),
        "tensor_scatter updates": lambda z: og.tensor_scatter(
            c3, _zeros(z, 2, 1, 4), torch.tensor([1, 2])
        ),
        "tensor_scatter updates, in place": lambda z: in_place(
            lambda c: og.tensor_scatter(c, _zeros(z, 2, 1, 4), torch.tensor([1, 2]), out=c), c3
        ),
    }


@pytest.mark.parametrize("n", [4, 300])
@pytest.mark.parametrize("call", list(_calls(4)))
def test_a_zero_tensor_gives_what_zeros_give(n: int, call: str) -> None:
    fn = _calls(n)[call]
    want = fn(False)
    for _ in range(2):  # (the second call runs the bound call)
        got = fn(True)
        assert torch.equal(got, want), call
