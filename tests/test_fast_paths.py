"""The case table again on every other kernel path, plus large calls.

The shared table runs the compiled kernel (NumPy arrays and CPU tensors). Here it runs
again on the pure-NumPy fallback, which serves machines where the extension was not
built: its large-call kernels (blocked linear-index GatherElements, row-wise take,
threaded take) only switch on above size thresholds the table's small cases never reach,
so the thresholds are lowered to zero and the blocks made a few elements long: many
blocks, several threads, the range check of each block, errors raised in a worker thread.
Without the compiled kernel torch CPU tensors run torch's own kernels, and large
GatherElements off the last axis the fallback's blocked kernel on views: those too.
"""

from __future__ import annotations

import importlib
from typing import Any

import numpy as np
import pytest
from cases import CASES, ELEMENTS, GATHER, Case, case
from helpers import applies, assert_identical, expected, run_case, without_compiled_kernel
from libs import LIBS, Library

import onnx_gather as og
from onnx_gather._conformance.runner import fills

# Module attribute -> value, per configuration: no compiled kernel, and the fallback's
# blocked kernel (rows never long enough), its row-by-row kernel (every row long enough),
# or its small-call kernels.
NUMPY = "onnx_gather._backends._numpy"
FALLBACK = "onnx_gather._backends._numpy._fallback"
POOL = "onnx_gather._backends._numpy._pool"
TORCH = "onnx_gather._backends._torch._route"
NOT_BUILT = {"_kernels": None}
BLOCKED = {"_SMALL": 0, "_BLOCK": 3, "_LONG_ROWS": 2**62}
THREADED = {"_THREADED_BYTES": 0, "THREADS": 3}
ROWS = {**BLOCKED, "_LONG_ROWS": 0}
FORCED: dict[str, dict[str, dict[str, dict[str, Any]]]] = {
    "numpy": {
        "fallback-small": {NUMPY: NOT_BUILT},
        "fallback-blocked": {NUMPY: NOT_BUILT, FALLBACK: BLOCKED, POOL: THREADED},
        "fallback-rows": {NUMPY: NOT_BUILT, FALLBACK: ROWS, POOL: THREADED},
    },
    "torch": {
        "torch-kernels": {NUMPY: NOT_BUILT, TORCH: {"_FALLBACK_FROM": 2**62}},
        "fallback-blocked": {
            NUMPY: NOT_BUILT,
            TORCH: {"_FALLBACK_FROM": 0},
            FALLBACK: BLOCKED,
            POOL: THREADED,
        },
    },
}

PARAMS = [
    pytest.param(lib, config, case, id=f"{lib.name}-{config}-{case.id}")
    for lib in LIBS
    for config in FORCED.get(lib.name, {})
    for case in CASES
    if applies(lib, case)
]


@pytest.fixture
def forced(monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest) -> None:
    params = request.node.callspec.params
    configs = FORCED.get(params["backend"].name, {})
    for module, values in configs.get(params["config"], {}).items():  # "default": none
        for name, value in values.items():
            if name == "_kernels":  # (every module holding it: see the helper)
                without_compiled_kernel(monkeypatch)
            else:
                monkeypatch.setattr(importlib.import_module(module), name, value)


if PARAMS:

    @pytest.mark.parametrize(("backend", "config", "case"), PARAMS)
    def test_case_on_fast_paths(backend: Library, config: str, case: Case, forced: None) -> None:
        if case.raises is not None:
            with pytest.raises(case.raises, match=case.match):
                run_case(backend, case)
            return
        assert_identical(backend.to_numpy(run_case(backend, case)), expected(case))

    @pytest.mark.parametrize(
        ("backend", "config", "case"), [p for p in PARAMS if p.values[2].raises is None]
    )
    def test_case_on_fast_paths_host_indices(
        backend: Library, config: str, case: Case, forced: None
    ) -> None:
        result = backend.to_numpy(run_case(backend, case, indices=case.indices))
        assert_identical(result, expected(case))


RNG = np.random.default_rng(5)


def _large_cases() -> list[Case]:
    """Above every threshold, with the real block sizes."""
    d2 = RNG.standard_normal((150, 300)).astype(np.float32)
    d3 = RNG.integers(-100, 100, (6, 40, 130)).astype(np.int16)
    table = RNG.standard_normal((900, 70)).astype(np.float64)
    return [
        case("elements-axis0", ELEMENTS, d2, RNG.integers(0, 150, (150, 300)), axis=0),
        case("elements-axis1-mixed", ELEMENTS, d2, RNG.integers(-300, 300, (150, 300)), axis=1),
        case("elements-axis1-int32-smaller", ELEMENTS, d2,
             RNG.integers(-300, 300, (140, 310)).astype(np.int32), axis=1, opset=11),
        case("elements-3d-middle", ELEMENTS, d3, RNG.integers(-40, 40, (6, 80, 129)), axis=1),
        case("elements-3d-last-topk", ELEMENTS, d3, RNG.integers(0, 130, (6, 40, 60)), axis=-1),
        case("gather-rows", GATHER, table, RNG.integers(-900, 900, (40, 300)), axis=0),
        case("gather-axis1", GATHER, table, RNG.integers(0, 70, (300,)).astype(np.int32), axis=1,
             opset=1),
    ]  # fmt: skip


LARGE = _large_cases()
# Dask's library cuts arrays into blocks of 2: a large case would be some 10**4 tasks.
# Its own tests (test_dask.py) cover its chunked paths.
EAGER = [lib for lib in LIBS if lib.name != "dask"]


def _lib_params() -> list[Any]:
    return [
        pytest.param(lib, c, id=f"{lib.name}-{c.id}")
        for lib in EAGER
        for c in LARGE
        if applies(lib, c)
    ]


@pytest.mark.parametrize(("backend", "large"), _lib_params())
def test_large(backend: Library, large: Case) -> None:
    assert_identical(backend.to_numpy(run_case(backend, large)), expected(large))


@pytest.mark.parametrize(("backend", "large"), _lib_params())
@pytest.mark.parametrize("where", ["first", "middle", "last"])
def test_large_out_of_range(backend: Library, large: Case, where: str) -> None:
    """One bad index anywhere in a large call: the same complete message as small calls."""
    data, indices, axis = large.data, large.indices, large.attributes["axis"]
    bad = indices.copy()
    flat = bad.reshape(-1)
    pos = {"first": 0, "middle": flat.size // 2 + 7, "last": flat.size - 1}[where]
    size = data.shape[axis]
    flat[pos] = size if where != "middle" else -size - 1
    position = ", ".join(str(int(i)) for i in np.unravel_index(pos, bad.shape))
    position += "," if bad.ndim == 1 else ""
    with pytest.raises(IndexError, match=rf"index {flat[pos]} at position \({position}\) "):
        run_case(backend, large, indices=backend.indices(bad))


def _unchecked_params() -> list[Any]:
    return [
        pytest.param(lib, config, id=f"{lib.name}-{config}")
        for lib in EAGER
        for config in ["default", *FORCED.get(lib.name, {})]
    ]


@pytest.mark.parametrize(("backend", "config"), _unchecked_params())
def test_unchecked_reads_the_clamped_element(backend: Library, config: str, forced: None) -> None:
    """check_bounds=False with wild indices: each reads data's element at the index clamped
    into the axis (JAX: its fill value), never an error (issue 33, item 11).

    Large threaded calls on the default kernels; small ones on the forced fallbacks, whose
    thresholds are zero. The expected values are NumPy's own ``take`` with
    ``mode="clip"`` after counting negatives from the end: no code of the library.
    """
    rows, cols = (400, 300) if config == "default" else (12, 10)
    values = RNG.standard_normal((rows, cols)).astype(np.float32)
    data = backend.asarray(values)
    wild = RNG.integers(-(2**62), 2**62, (rows, cols))
    wild[::2] = RNG.integers(-cols - 3, cols + 3, (rows - rows // 2, cols))  # near the ends
    bad = (wild < -cols) | (wild >= cols)
    counted = np.where(wild < 0, wild + cols, wild)
    few = (slice(None, rows // 10), slice(None, cols // 10))  # Gather's output: rows x few
    for fn, indices, want, where in (
        (og.gather_elements, wild, np.take_along_axis(values, counted.clip(0, cols - 1), 1), bad),
        (og.gather, wild[few], np.take(values, counted[few], 1, mode="clip"), bad[few][None]),
    ):
        if fills(backend):
            want = np.where(where, np.float32(np.nan), want)
        got = backend.to_numpy(fn(data, backend.indices(indices), 1, check_bounds=False))
        assert_identical(got, want)


@pytest.mark.parametrize("low", [-50, 0, 7])
def test_value_range(low: int) -> None:
    """The index range in one reduction where no index is negative, else two."""
    from onnx_gather import _host

    for dtype in (np.int32, np.int64):
        values = RNG.integers(low, 1000, 10_001).astype(dtype)
        want = (min(int(values.min()), 0), int(values.max()))
        assert _host.value_range(values) == want
        assert _host.value_range(values[::-3]) == (
            min(int(values[::-3].min()), 0),
            int(values[::-3].max()),
        )
