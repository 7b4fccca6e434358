"""Tensors the torch backend cannot serve: a TypeError naming the layout or device (issue 15, item 13).

Before, they gave torch's raw errors ("Internal error" for nested tensors, NotImplementedError
for sparse ones) or, for sparse COO data and Gather, a sparse result.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch

import onnx_gather as og

# torch's own warnings when these tensors are made.
pytestmark = [
    pytest.mark.filterwarnings("ignore:Sparse CSR tensor support is in beta state:UserWarning"),
    pytest.mark.filterwarnings(
        "ignore:The PyTorch API of nested tensors is in prototype:UserWarning"
    ),
]

X = torch.arange(15.0).reshape(3, 5)
IDX = torch.tensor([[0, 1], [2, -1], [4, 0]])
OPS = {"gather": og.gather, "gather_elements": og.gather_elements}


def _nested() -> Any:
    return torch.nested.nested_tensor([torch.arange(3.0), torch.arange(2.0)])


CASES = {
    "sparse-coo data": (lambda: X.to_sparse(), lambda: IDX, "layout torch.sparse_coo"),
    "sparse-csr data": (lambda: X.to_sparse_csr(), lambda: IDX, "layout torch.sparse_csr"),
    "sparse-coo indices": (lambda: X, lambda: IDX.to_sparse(), "layout torch.sparse_coo"),
    "sparse data, host indices": (lambda: X.to_sparse(), lambda: IDX.numpy(), "sparse_coo"),
    "meta indices": (lambda: X, lambda: IDX.to("meta"), "meta device"),
    "nested data": (_nested, lambda: [[0], [1]], "nested tensors"),
    "jagged data": (
        lambda: torch.nested.nested_tensor(
            [torch.arange(3.0), torch.arange(2.0)], layout=torch.jagged
        ),
        lambda: [[0], [1]],
        "nested tensors",
    ),
    "nested indices": (
        lambda: X,
        lambda: torch.nested.nested_tensor([torch.tensor([0]), torch.tensor([1, 2])]),
        "nested tensors",
    ),
}


@pytest.mark.parametrize("check_bounds", [True, False])
@pytest.mark.parametrize("op", list(OPS))
@pytest.mark.parametrize("case", list(CASES))
def test_unservable_tensors_are_a_type_error(case: str, op: str, check_bounds: bool) -> None:
    data, indices, names = CASES[case]
    with pytest.raises(TypeError, match=names):
        OPS[op](
            data(),
            indices(),
            0 if "nested" in case or "jagged" in case else 1,
            check_bounds=check_bounds,
        )


@pytest.mark.parametrize("op", list(OPS))
def test_cached_dense_plan_does_not_let_sparse_data_through(op: str) -> None:
    """A dense call of the same shape and dtype first: the cached plan must not skip the check."""
    want = OPS[op](X, IDX, 1)
    np.testing.assert_array_equal(want.numpy(), OPS[op](X.numpy(), IDX.numpy(), 1))
    with pytest.raises(TypeError, match="sparse_coo"):
        OPS[op](X.to_sparse(), IDX, 1)
    with pytest.raises(TypeError, match="sparse_coo"):
        OPS[op](X, IDX.to_sparse(), 1)


@pytest.mark.parametrize("check_bounds", [True, False])
@pytest.mark.parametrize("op", list(OPS))
def test_meta_data_with_meta_indices_gives_the_shape(op: str, check_bounds: bool) -> None:
    """On the meta device nothing is read: the result's shape, no check to make."""
    out = OPS[op](X.to("meta"), IDX.to("meta"), 1, check_bounds=check_bounds)
    assert out.is_meta
    assert out.shape == ((3, 3, 2) if op == "gather" else (3, 2))
