"""Expected gradients and shared inputs for the framework-transform tests.

The gradient of a gather with respect to ``data`` is the scatter-add of the upstream
gradient into zeros at the gathered positions. Written as plain loops over output
positions (the same reading of the spec as oracle.py), never with a backend's kernels.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

GATHER = "gather"
ELEMENTS = "gather_elements"


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


@dataclass(frozen=True)
class GradCase:
    """One gradient case: an operator, a data shape, indices and an axis."""

    id: str
    op: str
    data_shape: tuple[int, ...]
    indices: np.ndarray
    axis: int

    @property
    def out_shape(self) -> tuple[int, ...]:
        if self.op == ELEMENTS:
            return self.indices.shape
        a = self.axis % len(self.data_shape)
        return self.data_shape[:a] + self.indices.shape + self.data_shape[a + 1 :]

    def grad(self, upstream: np.ndarray) -> np.ndarray:
        fn = gather_grad if self.op == GATHER else gather_elements_grad
        return fn(self.data_shape, self.indices, self.axis, upstream)


# Negative and repeated indices everywhere: repeats are where a wrong gradient (an
# assignment instead of an accumulation) shows.
GRAD_CASES = [
    GradCase(
        "gather-axis1",
        GATHER,
        (3, 4, 2),
        np.array([[0, -1, 3], [-4, 0, 0]], np.int64),
        1,
    ),
    GradCase("gather-axis0-scalar", GATHER, (4, 3), np.array(-2, np.int32), 0),
    GradCase("gather-last-axis", GATHER, (2, 3), np.array([2, -1, -3, 0, 2], np.int32), -1),
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
        1,
    ),
    # Indices smaller than data off the axis: only that block of data gets gradient.
    GradCase(
        "elements-trimmed",
        ELEMENTS,
        (3, 4, 2),
        np.array([[[3, 0, -1, 3, 3]], [[-4, -4, 1, 2, 0]]], np.int32).transpose(0, 2, 1),
        1,
    ),
]


def upstream(case: GradCase, dtype: type = np.float64, seed: int = 0) -> np.ndarray:
    """A non-uniform upstream gradient of small integers: sums of them are exact."""
    rng = np.random.default_rng(seed)
    return rng.integers(-4, 5, size=case.out_shape).astype(dtype)


def data(case: GradCase, dtype: type = np.float64, seed: int = 1) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.standard_normal(case.data_shape).astype(dtype)
