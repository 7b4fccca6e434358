"""Expected gradients and shared inputs for the framework-transform tests.

The gradient of a gather with respect to ``data`` is the scatter-add of the upstream
gradient into zeros at the gathered positions. Written as plain loops over output
positions (the same reading of the spec as oracle.py), never with a backend's kernels.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

import numpy as np

import onnx_gather as og
from onnx_gather._conformance.runner import run_oracle

GATHER = "gather"
ELEMENTS = "gather_elements"
ND = "gather_nd"
#: Each operator's public function, by registry name (the tests call them directly: a
#: compiler traces these, not a generic dispatcher).
FUNCTIONS = {GATHER: og.gather, ELEMENTS: og.gather_elements, ND: og.gather_nd}


def _resolve(i: int, size: int) -> int:
    assert -size <= i < size, (i, size)
    return i + size if i < 0 else i


def gather_grad(
    data_shape: tuple[int, ...], indices: np.ndarray, axis: int, upstream: np.ndarray
) -> np.ndarray:
    """d(sum(upstream * Gather(data, indices, axis))) / d(data)."""
    axis %= len(data_shape)
    q = indices.ndim
    out = np.zeros(data_shape, upstream.dtype)
    for pos in itertools.product(*map(range, upstream.shape)):
        k = _resolve(int(indices[pos[axis : axis + q]]), data_shape[axis])
        out[pos[:axis] + (k,) + pos[axis + q :]] += upstream[pos]
    return out


def gather_elements_grad(
    data_shape: tuple[int, ...], indices: np.ndarray, axis: int, upstream: np.ndarray
) -> np.ndarray:
    """d(sum(upstream * GatherElements(data, indices, axis))) / d(data)."""
    axis %= len(data_shape)
    out = np.zeros(data_shape, upstream.dtype)
    for pos in itertools.product(*map(range, indices.shape)):
        k = _resolve(int(indices[pos]), data_shape[axis])
        out[pos[:axis] + (k,) + pos[axis + 1 :]] += upstream[pos]
    return out


def gather_nd_grad(
    data_shape: tuple[int, ...], indices: np.ndarray, batch_dims: int, upstream: np.ndarray
) -> np.ndarray:
    """d(sum(upstream * GatherND(data, indices, batch_dims))) / d(data)."""
    b, k = batch_dims, indices.shape[-1]
    out = np.zeros(data_shape, upstream.dtype)
    for pos in itertools.product(*map(range, indices.shape[:-1])):
        coordinate = tuple(_resolve(int(indices[(*pos, j)]), data_shape[b + j]) for j in range(k))
        for rest in itertools.product(*map(range, data_shape[b + k :])):
            out[(*pos[:b], *coordinate, *rest)] += upstream[(*pos, *rest)]
    return out


#: Each operator's gradient oracle: ``grad(data_shape, indices, attribute, upstream)``.
GRADS = {GATHER: gather_grad, ELEMENTS: gather_elements_grad, ND: gather_nd_grad}


@dataclass(frozen=True)
class GradCase:
    """One gradient case: an operator, a data shape, indices and the attributes."""

    id: str
    op: str
    data_shape: tuple[int, ...]
    indices: np.ndarray
    attributes: dict[str, Any]

    @property
    def out_shape(self) -> tuple[int, ...]:
        """The output's shape: the loop oracle's, on zeros."""
        zeros = np.zeros(self.data_shape, np.float32)
        shape: tuple[int, ...] = run_oracle(
            self.op, (zeros, self.indices), self.attributes, None
        ).shape
        return shape

    def apply(self, x: Any, indices: Any) -> Any:
        """The operator's public function on ``x`` with this case's attributes."""
        return FUNCTIONS[self.op](x, indices, **self.attributes)

    def grad(self, upstream: np.ndarray) -> np.ndarray:
        (value,) = self.attributes.values()
        return GRADS[self.op](self.data_shape, self.indices, value, upstream)


# Negative and repeated indices everywhere: repeats are where a wrong gradient (an
# assignment instead of an accumulation) shows.
GRAD_CASES = [
    GradCase(
        "gather-axis1",
        GATHER,
        (3, 4, 2),
        np.array([[0, -1, 3], [-4, 0, 0]], np.int64),
        {"axis": 1},
    ),
    GradCase("gather-axis0-scalar", GATHER, (4, 3), np.array(-2, np.int32), {"axis": 0}),
    GradCase("gather-last-axis", GATHER, (2, 3), np.array([2, -1, -3, 0, 2], np.int32), {"axis": -1}),
    GradCase(
        "elements-axis1",
        ELEMENTS,
        (3, 4, 2),
        np.array(
            [
                [[0, -1], [3, 3], [-4, 0], [1, 1], [2, -2]],
                [[-1, -1], [0, 2], [3, -4], [1, 0], [0, 0]],
                [[2, 2], [2, 2], [-3, 1], [0, -1], [3, 3]],
            ],
            np.int64,
        ),
        {"axis": 1},
    ),
    # Indices smaller than data off the axis: only that block of data gets gradient.
    GradCase(
        "elements-trimmed",
        ELEMENTS,
        (3, 4, 2),
        np.array([[[3, 0, -1, 3, 3]], [[-4, -4, 1, 2, 0]]], np.int32).transpose(0, 2, 1),
        {"axis": 1},
    ),
    # GatherND: repeated index tuples (the first and third read the same slice).
    GradCase("nd-k2-repeats", ND, (3, 4, 2),
             np.array([[0, -1], [2, 3], [0, 3], [-3, -1]], np.int64), {"batch_dims": 0}),
    GradCase("nd-batch-1", ND, (3, 4, 2),
             np.array([[[1], [-3]], [[0], [0]], [[3], [-1]]], np.int32), {"batch_dims": 1}),
    GradCase("nd-full-coordinates", ND, (3, 4, 2),
             np.array([[0, 1, 1], [0, 1, -1], [2, -1, 0], [0, 1, 1]], np.int64), {"batch_dims": 0}),
]  # fmt: skip


def upstream(case: GradCase, dtype: type = np.float64, seed: int = 0) -> np.ndarray:
    """A non-uniform upstream gradient of small integers: sums of them are exact."""
    rng = np.random.default_rng(seed)
    return rng.integers(-4, 5, size=case.out_shape).astype(dtype)


def data(case: GradCase, dtype: type = np.float64, seed: int = 1) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.standard_normal(case.data_shape).astype(dtype)
