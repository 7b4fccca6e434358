"""Odd corners of a third hostile run (issue 23) that are not torch's tracers.

Each test failed before its fix. Tests that need one library are marked ``backend(name)``
(conftest.py deselects them in other runs); tests that take ``lib`` run on every library.
Index forms (IntEnum, ``range``) and ``check_bounds`` are in test_api.py.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from helpers import assert_identical, without_compiled_kernel

import onnx_gather as og


def _no_x64_devices() -> list[Any]:
    """array-api-strict's devices without 64-bit types (none before its 2.4 release)."""
    try:
        import array_api_strict as xp
    except ImportError:
        return []
    devices = xp.__array_namespace_info__().devices()
    return [d for d in devices if "int64" not in xp.__array_namespace_info__().dtypes(device=d)]


@pytest.mark.backend("array-api-strict")
@pytest.mark.parametrize("device", _no_x64_devices(), ids=str)
def test_int32_indices_on_a_device_without_int64(device: Any) -> None:
    """Item 8: int32 indices stay int32 where no size needs more (the device has no int64)."""
    import array_api_strict as xp

    data = xp.asarray(np.arange(12, dtype=np.float32).reshape(3, 4), device=device)
    idx = xp.asarray(np.array([[0, -1], [2, -4]], np.int32), device=device)
    want = np.array([[[0, 3], [2, 0]], [[4, 7], [6, 4]], [[8, 11], [10, 8]]], np.float32)
    assert_identical(np.from_dlpack(og.gather(data, idx, axis=1)), want)
    got = og.gather_elements(data, xp.asarray(np.array([[3, -1]], np.int32), device=device), 1)
    assert_identical(np.from_dlpack(got), np.array([[3, 3]], np.float32))
    got = og.gather_nd(data, xp.asarray(np.array([[2, -1], [0, 0]], np.int32), device=device))
    assert_identical(np.from_dlpack(got), np.array([11, 0], np.float32))
    with pytest.raises(IndexError, match=r"index 4 at position \(0, 1\)"):
        og.gather_elements(data, xp.asarray(np.array([[0, 4]], np.int32), device=device), 1)


@pytest.mark.backend("jax")
def test_jax_key_arrays_are_a_type_error() -> None:
    """Item 9: typed PRNG keys as data: the documented TypeError naming the type."""
    import jax

    keys = jax.random.split(jax.random.key(0), 3)
    for fn in (og.gather, og.gather_elements, og.gather_nd):
        with pytest.raises(TypeError, match=r"data type key<fry> is not supported"):
            fn(keys, [[0]])


def _threads_in_a_child(env: dict[str, str]) -> str:
    """The NumPy kernels' thread limits in a fresh process with ``env`` set."""
    import os
    import subprocess
    import sys

    code = (
        "import numpy as np, onnx_gather as og\n"
        "og.gather(np.arange(3.0), [0])\n"  # the first call loads the NumPy backend
        "from onnx_gather._backends import _numpy\n"
        "from onnx_gather._backends._numpy import _pool\n"
        "print(_numpy.THREADS, _pool.THREADS)\n"
    )
    keep = {
        k: v
        for k, v in os.environ.items()
        if k not in ("ONNX_GATHER_NUM_THREADS", "OMP_NUM_THREADS")
    }
    done = subprocess.run(
        [sys.executable, "-c", code],
        env={**keep, **env},
        capture_output=True,
        text=True,
        check=False,
    )
    return done.stdout.strip() or done.stderr.strip().splitlines()[-1]


@pytest.mark.parametrize(
    ("env", "want"),
    [
        ({"ONNX_GATHER_NUM_THREADS": "1"}, "1 1"),
        ({"OMP_NUM_THREADS": "1"}, "1 1"),
        ({"OMP_NUM_THREADS": "1,4", "ONNX_GATHER_NUM_THREADS": "2"}, None),  # ours wins
        (
            {"ONNX_GATHER_NUM_THREADS": "zero"},
            "ValueError: ONNX_GATHER_NUM_THREADS must be a positive int",
        ),
    ],
    ids=["ours", "omp", "ours-over-omp", "bad"],
)
def test_thread_limits_from_the_environment(env: dict[str, str], want: str | None) -> None:
    """Item 13: the compiled kernel and the fallback's pool stay within the program's limit."""
    import os

    got = _threads_in_a_child(env)
    if want is None:  # at most 2, and at most the CPUs this process may use
        cpus = len(os.sched_getaffinity(0))
        assert got == f"{min(2, cpus)} {min(2, cpus)}", got
    else:
        assert got.startswith(want), got


@pytest.mark.backend("torch")
def test_cpu_tensors_stay_within_torchs_thread_count(monkeypatch: pytest.MonkeyPatch) -> None:
    """Item 13: torch.set_num_threads (DataLoader workers set 1) bounds the compiled kernel."""
    import torch

    from onnx_gather._backends import _numpy

    if _numpy._kernels is None:
        pytest.skip("the compiled kernel is not built here")  # no_compiler: nothing to bound
    seen: list[int] = []

    def spy(fn: Any) -> Any:
        def call(*args: Any) -> Any:
            seen.append(args[-1])  # every kernel takes the thread count last
            return fn(*args)

        return call

    spies = {op: spy(fn) for op, fn in _numpy._COMPILED.items() if fn is not None}
    monkeypatch.setattr(_numpy, "_COMPILED", spies)
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        data = torch.arange(12.0).reshape(3, 4)
        assert og.gather_elements(data, torch.tensor([[0, 1, 2, -1]]), 0).tolist() == [
            [0, 5, 10, 11]
        ]
        og.gather(data, [1], 1)
    finally:
        torch.set_num_threads(before)
    assert seen
    assert all(threads == 1 for threads in seen), seen


@pytest.mark.backend("torch")
def test_without_the_compiled_kernel_the_fallbacks_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """``_kernels = None`` (as where it was not built) is the one switch: NumPy's pure kernels
    serve NumPy arrays, torch's own kernels CPU tensors; the compiled kernel never runs."""
    import torch

    from onnx_gather._backends import _numpy
    from onnx_gather._backends._numpy import _fallback

    if _numpy._kernels is None:
        pytest.skip("the compiled kernel is not built here")
    ran: list[str] = []

    def compiled(*args: Any) -> Any:
        ran.append("compiled")
        raise AssertionError

    def spy(name: str, fn: Any) -> Any:
        def call(*args: Any) -> Any:
            ran.append(name)
            return fn(*args)

        return call

    without_compiled_kernel(monkeypatch)
    monkeypatch.setattr(_numpy, "_COMPILED", dict.fromkeys(_numpy._COMPILED, compiled))
    for op in ("gather", "gather_elements", "gather_nd"):
        monkeypatch.setattr(_fallback, op, spy(op, getattr(_fallback, op)))
    data = np.arange(12.0).reshape(3, 4)
    assert og.gather(data, [2, -1], 0).tolist() == [[8, 9, 10, 11]] * 2
    assert og.gather_elements(data, np.array([[1], [0], [-1]]), 1).tolist() == [[1], [4], [11]]
    assert og.gather_nd(data, np.array([[0, 1], [2, -1]])).tolist() == [1, 11]
    assert ran == ["gather", "gather_elements", "gather_nd"]
    ran.clear()
    tensor = torch.from_numpy(data)
    assert og.gather(tensor, torch.tensor([2, -1]), 0).tolist() == [[8, 9, 10, 11]] * 2
    assert og.gather_nd(tensor, torch.tensor([[0, 1], [2, -1]])).tolist() == [1, 11]
    assert "compiled" not in ran
