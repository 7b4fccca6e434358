"""The workloads: what is gathered, in which shapes, with which index signs.

Inputs are made once per workload with a fixed seed, as NumPy arrays; each backend gets
copies in its own library (see ``contenders.py``). A workload names its operator by its
registry name and gives its attributes by name; the operator's own planner says which axis
each index component addresses, so index values are drawn in range for any operator.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from onnx_gather import _ops

GATHER = _ops.GATHER.name
ELEMENTS = _ops.GATHER_ELEMENTS.name
ND = _ops.GATHER_ND.name


@dataclass(frozen=True)
class Workload:
    """One benchmark input: operator, shapes, attributes, dtypes and the sign of its indices.

    ``mixed`` indices are drawn from ``[-s, s-1]`` (about half negative), otherwise from
    ``[0, s-1]``, where ``s`` is the size of the axis an index addresses. ``tiny``
    workloads measure per-call overhead; the others measure the kernels. ``gpu``
    workloads are too large for the CPU runs and run only with ``--device cuda``.
    ``ort_target``: the largest ours/ORT the project aims at on numpy and torch (None:
    none); ``bandwidth_target``: whether the GPU bandwidth target applies unchecked.
    """

    name: str
    op: str
    data_shape: tuple[int, ...]
    indices_shape: tuple[int, ...]
    attributes: dict[str, Any] = field(default_factory=dict)
    dtype: str = "float32"
    index_dtype: str = "int64"
    mixed: bool = False
    tiny: bool = False
    gpu: bool = False
    ort_target: float | None = 1.0
    bandwidth_target: bool = False

    @property
    def operator(self) -> _ops.Operator:
        """The registry's record of the workload's operator."""
        return _ops.get(self.op)

    def plan(self) -> Any:
        """The operator's plan for these shapes (the axis and size each index addresses)."""
        op = self.operator
        values = tuple(self.attributes.get(n, d) for n, d in op.attributes)
        shapes = (self.data_shape, self.indices_shape)
        version = op.resolve(op.default_opset)
        return op.planner(op, version, shapes, (self.dtype, self.index_dtype), values, True)

    def inputs(self) -> tuple[np.ndarray, np.ndarray]:
        """The data and indices, the same on every call (seeded by the name)."""
        # A stable seed per workload (Python's str hash is salted per process).
        rng = np.random.default_rng(zlib.crc32(self.name.encode()))
        data = rng.standard_normal(self.data_shape).astype(self.dtype)
        plan = self.plan()
        sizes = np.asarray(plan.sizes if plan.coordinates else (plan.size,), np.int64)
        high = np.broadcast_to(sizes, self.indices_shape) if self.indices_shape else sizes[0]
        low = -high if self.mixed else np.zeros_like(high)
        indices = rng.integers(low, high, self.indices_shape).astype(self.index_dtype)
        return data, indices

    def call(self, data: Any, indices: Any, check_bounds: bool = True) -> Any:
        """Our call of the workload's operator on ``data`` and ``indices``."""
        return _ops.call(self.op, data, indices, check_bounds=check_bounds, **self.attributes)


def _axis(axis: int) -> dict[str, int]:
    return {"axis": axis}


#: The full run. The 2000x2000 cases are the issue's headline comparison; the 3-D case
#: is what a top-k over the last axis feeds GatherElements; the 50000x256 table is an
#: embedding lookup. ORT targets: 0.8 for GatherElements off the last axis, 1.0 elsewhere.
WORKLOADS: tuple[Workload, ...] = (
    Workload("GatherElements 8x4 axis 1", ELEMENTS, (8, 4), (8, 4), _axis(1), tiny=True,
             ort_target=None),
    Workload("GatherElements 8x4 axis 1 mixed-sign", ELEMENTS, (8, 4), (8, 4), _axis(1),
             tiny=True, mixed=True, ort_target=None),
    Workload("Gather 2 of 8x4 axis 0", GATHER, (8, 4), (2,), _axis(0), tiny=True,
             ort_target=None),
    Workload("GatherElements 2000x2000 axis 0", ELEMENTS, (2000, 2000), (2000, 2000), _axis(0),
             ort_target=0.8),
    Workload("GatherElements 2000x2000 axis 0 mixed-sign", ELEMENTS, (2000, 2000), (2000, 2000),
             _axis(0), mixed=True, ort_target=0.8),
    Workload("GatherElements 2000x2000 axis 1", ELEMENTS, (2000, 2000), (2000, 2000), _axis(1)),
    Workload("GatherElements 2000x2000 axis 1 mixed-sign", ELEMENTS, (2000, 2000), (2000, 2000),
             _axis(1), mixed=True),
    Workload("GatherElements 32x1024x64 top-8 axis -1", ELEMENTS, (32, 1024, 64), (32, 1024, 8),
             _axis(-1)),
    Workload("Gather 4096 rows of 50000x256", GATHER, (50000, 256), (4096,), _axis(0)),
    Workload("GatherElements 2000x2000 axis 1 float16", ELEMENTS, (2000, 2000), (2000, 2000),
             _axis(1), dtype="float16"),
    Workload("GatherElements 2000x2000 axis 0 int32 indices", ELEMENTS, (2000, 2000),
             (2000, 2000), _axis(0), index_dtype="int32", ort_target=0.8),
    Workload("GatherND 2 tuples of 8x4", ND, (8, 4), (2, 2), {"batch_dims": 0}, tiny=True,
             ort_target=None),
    Workload("GatherND 4096 full coordinates of 8x256x56x56", ND, (8, 256, 56, 56), (4096, 4),
             {"batch_dims": 0}, mixed=True),
    Workload("GatherND batch_dims=1 128 rows of 32x1024x768", ND, (32, 1024, 768),
             (32, 128, 1), {"batch_dims": 1}),
    Workload("GatherND 4096 rows of 50000x256", ND, (50000, 256), (4096, 1), {"batch_dims": 0}),
    # GPU only (issue 12): large enough that a CUDA kernel's launch cost is noise.
    Workload("GatherElements 8192x8192 axis 1", ELEMENTS, (8192, 8192), (8192, 8192), _axis(1),
             gpu=True, bandwidth_target=True),
    Workload("GatherElements 8192x8192 axis 0", ELEMENTS, (8192, 8192), (8192, 8192), _axis(0),
             gpu=True, bandwidth_target=True, ort_target=0.8),
    Workload("Gather 65536 rows of 100000x256", GATHER, (100000, 256), (65536,), _axis(0),
             gpu=True),
    Workload("GatherElements 64x32768 top-64 axis 1", ELEMENTS, (64, 32768), (64, 64), _axis(1),
             gpu=True, bandwidth_target=True),
)  # fmt: skip


def _shrink(n: int) -> int:
    """A smaller dim, monotone in ``n``: dims that are equal, or ordered, stay so."""
    return n if n <= 8 else max(8, n // 64)


def for_device(workloads: tuple[Workload, ...], device: str) -> tuple[Workload, ...]:
    """The workloads a device runs: the GPU-only ones only on ``cuda``."""
    return tuple(w for w in workloads if device == "cuda" or not w.gpu)


def smoke(workloads: tuple[Workload, ...] = WORKLOADS) -> tuple[Workload, ...]:
    """The same workloads at tiny sizes: every code path of the runner, in seconds.

    Every dim, of data and indices alike, goes through one monotone function, so the
    operator's shape rules still hold (dims that must match stay equal; an indices dim
    never exceeds data's where it is bounded by it); a dim of 8 or less is kept.
    """
    out = []
    for w in workloads:
        data = tuple(_shrink(n) for n in w.data_shape)
        idx = tuple(_shrink(n) for n in w.indices_shape)
        shapes = f" (smoke: {'x'.join(map(str, data))} <- {'x'.join(map(str, idx))})"
        out.append(replace(w, name=w.name + shapes, data_shape=data, indices_shape=idx))
    return tuple(out)
