"""The workloads: what is gathered, in which shapes, with which index signs.

Inputs are made once per workload with a fixed seed, as NumPy arrays; each backend gets
copies in its own library (see ``contenders.py``).
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass, replace

import numpy as np

from onnx_gather._ops import GATHER
from onnx_gather._ops import GATHER_ELEMENTS as ELEMENTS


@dataclass(frozen=True)
class Workload:
    """One benchmark input: operator, shapes, axis, dtypes and the sign of its indices.

    ``mixed`` indices are drawn from ``[-s, s-1]`` (about half negative), otherwise from
    ``[0, s-1]``, where ``s = data_shape[axis]``. ``tiny`` workloads measure per-call
    overhead; the others measure the kernels. ``gpu`` workloads are too large for the CPU
    runs and run only with ``--device cuda``.
    """

    name: str
    op: str
    data_shape: tuple[int, ...]
    indices_shape: tuple[int, ...]
    axis: int
    dtype: str = "float32"
    index_dtype: str = "int64"
    mixed: bool = False
    tiny: bool = False
    gpu: bool = False

    def inputs(self) -> tuple[np.ndarray, np.ndarray]:
        """The data and indices, the same on every call (seeded by the name)."""
        # A stable seed per workload (Python's str hash is salted per process).
        rng = np.random.default_rng(zlib.crc32(self.name.encode()))
        data = rng.standard_normal(self.data_shape).astype(self.dtype)
        size = self.data_shape[self.axis]
        low = -size if self.mixed else 0
        indices = rng.integers(low, size, self.indices_shape).astype(self.index_dtype)
        return data, indices


#: The full run. The 2000x2000 cases are the issue's headline comparison; the 3-D case
#: is what a top-k over the last axis feeds GatherElements; the 50000x256 table is an
#: embedding lookup.
WORKLOADS: tuple[Workload, ...] = (
    Workload("GatherElements 8x4 axis 1", ELEMENTS, (8, 4), (8, 4), 1, tiny=True),
    Workload("Gather 2 of 8x4 axis 0", GATHER, (8, 4), (2,), 0, tiny=True),
    Workload("GatherElements 2000x2000 axis 0", ELEMENTS, (2000, 2000), (2000, 2000), 0),
    Workload(
        "GatherElements 2000x2000 axis 0 mixed-sign",
        ELEMENTS,
        (2000, 2000),
        (2000, 2000),
        0,
        mixed=True,
    ),
    Workload("GatherElements 2000x2000 axis 1", ELEMENTS, (2000, 2000), (2000, 2000), 1),
    Workload(
        "GatherElements 2000x2000 axis 1 mixed-sign",
        ELEMENTS,
        (2000, 2000),
        (2000, 2000),
        1,
        mixed=True,
    ),
    Workload(
        "GatherElements 32x1024x64 top-8 axis -1",
        ELEMENTS,
        (32, 1024, 64),
        (32, 1024, 8),
        -1,
    ),
    Workload("Gather 4096 rows of 50000x256", GATHER, (50000, 256), (4096,), 0),
    Workload(
        "GatherElements 2000x2000 axis 1 float16",
        ELEMENTS,
        (2000, 2000),
        (2000, 2000),
        1,
        dtype="float16",
    ),
    Workload(
        "GatherElements 2000x2000 axis 0 int32 indices",
        ELEMENTS,
        (2000, 2000),
        (2000, 2000),
        0,
        index_dtype="int32",
    ),
    # GPU only (issue 12): large enough that a CUDA kernel's launch cost is noise.
    Workload("GatherElements 8192x8192 axis 1", ELEMENTS, (8192, 8192), (8192, 8192), 1, gpu=True),
    Workload("GatherElements 8192x8192 axis 0", ELEMENTS, (8192, 8192), (8192, 8192), 0, gpu=True),
    Workload("Gather 65536 rows of 100000x256", GATHER, (100000, 256), (65536,), 0, gpu=True),
    Workload("GatherElements 64x32768 top-64 axis 1", ELEMENTS, (64, 32768), (64, 64), 1, gpu=True),
)


def _shrink(n: int) -> int:
    return max(2, n // 64) if n > 64 else n


def for_device(workloads: tuple[Workload, ...], device: str) -> tuple[Workload, ...]:
    """The workloads a device runs: the GPU-only ones only on ``cuda``."""
    return tuple(w for w in workloads if device == "cuda" or not w.gpu)


def smoke(workloads: tuple[Workload, ...] = WORKLOADS) -> tuple[Workload, ...]:
    """The same workloads at tiny sizes: every code path of the runner, in seconds."""
    out = []
    for w in workloads:
        data = tuple(_shrink(n) for n in w.data_shape)
        ax = w.axis % len(data)
        if w.op == ELEMENTS:
            idx = tuple(
                _shrink(n) if d == ax else min(_shrink(n), data[d])
                for d, n in enumerate(w.indices_shape)
            )
        else:
            idx = tuple(_shrink(n) for n in w.indices_shape)
        shapes = f" (smoke: {'x'.join(map(str, data))} <- {'x'.join(map(str, idx))})"
        out.append(replace(w, name=w.name + shapes, data_shape=data, indices_shape=idx))
    return tuple(out)
