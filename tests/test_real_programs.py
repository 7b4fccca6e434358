"""Issue 15: what real programs do (fork, threads importing, big axes, high ranks, API
versions, byte orders, views, chunk sizes, subclasses, index forms, unchecked indices, CLI).

Each test failed before its fix. Tests that need one library import it lazily and skip
when this run does not cover it (ONNX_GATHER_BACKENDS); tests that take ``lib`` run on
every library of the run.
"""

from __future__ import annotations

import array
import importlib
import subprocess
import sys
import textwrap
import time
import tracemalloc
from typing import Any

import numpy as np
import pytest
from helpers import without_compiled_kernel
from libs import Library

import onnx_gather as og
from onnx_gather import openvino
from onnx_gather._backends import _numpy


def _module(name: str) -> Any:
    """The library's module; its tests are marked ``backend(name)`` (conftest.py)."""
    return importlib.import_module(name.replace("-", "_"))


@pytest.fixture(params=["compiled", "fallback"])
def kernel(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Runs a NumPy test with the compiled kernel and with the pure-NumPy fallback."""
    if request.param == "fallback":
        without_compiled_kernel(monkeypatch)
    elif _numpy._kernels is None:
        pytest.skip("the compiled kernel is not built here")
    return str(request.param)


# --- item 3: a forked child ------------------------------------------------------------


_FORK_SCRIPT = """
import multiprocessing, sys
import numpy as np
import onnx_gather as og
from onnx_gather._backends import _numpy

library, fallback = sys.argv[1], sys.argv[2] == "fallback"
if fallback:
    _numpy._kernels = None


def large_calls():
    rng = np.random.default_rng(0)
    data = np.arange(1 << 21, dtype=np.float32).reshape(2048, 1024)  # 8 MiB: threaded
    indices = rng.integers(-1024, 1024, (2048, 1024))
    if library == "torch":
        import torch

        data = torch.from_numpy(data)
    a = np.asarray(og.gather(data, indices[:20], 0))
    b = np.asarray(og.gather_elements(data, indices, 1))
    return float(a.sum()) + float(b.sum())


def child(queue):
    if library == "torch":
        import torch

        # As a DataLoader worker does: torch's own GNU OpenMP pool does not survive fork
        # (pytorch/pytorch#17199, GCC bug 60035), so any parallel torch op would hang here.
        torch.set_num_threads(1)
    queue.put(large_calls())


if __name__ == "__main__":
    want = large_calls()  # the parent runs large calls first: pools exist
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    process = ctx.Process(target=child, args=(queue,))
    process.start()
    process.join(60)
    if process.is_alive():
        process.kill()
        print("hung")
        sys.exit(1)
    assert process.exitcode == 0, process.exitcode
    assert queue.get(timeout=5) == want
    print("ok")
"""


@pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="no fork on this platform")
@pytest.mark.parametrize(
    "library", [pytest.param(n, marks=pytest.mark.backend(n)) for n in ("numpy", "torch")]
)
def test_large_call_in_forked_child(library: str, kernel: str, tmp_path: Any) -> None:
    # In a fresh interpreter: the suite's own process holds other libraries' pools.
    script = tmp_path / "fork_child.py"
    script.write_text(_FORK_SCRIPT)
    done = subprocess.run(
        [sys.executable, str(script), library, kernel],
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.stdout.strip() == "ok", f"{done.stdout}\n{done.stderr}"


# --- item 4: the first call while another thread imports a library ---------------------


def test_first_call_while_a_library_is_partly_imported() -> None:
    # A stub stands for torch (jax, dask) half-way through its import: in sys.modules,
    # without its attributes yet. The first call on NumPy data must not look them up.
    script = textwrap.dedent(
        """
        import sys, types
        import numpy as np
        for name in ("torch", "jax", "jax.core", "dask", "dask.array", "cupy"):
            sys.modules[name] = types.ModuleType(name)  # partially initialised
        import onnx_gather as og
        assert og.gather(np.arange(3), [0]).tolist() == [0]
        try:
            og.gather(object(), [0])
        except TypeError as exc:
            assert "data must be an array" in str(exc), exc
        print("ok")
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"


@pytest.mark.backend("torch")
def test_first_call_while_torch_is_imported_by_a_thread() -> None:
    script = textwrap.dedent(
        """
        import threading
        import numpy as np
        import onnx_gather as og
        thread = threading.Thread(target=lambda: __import__("torch"))
        thread.start()
        calls = 0
        while thread.is_alive() or calls == 0:
            assert og.gather(np.arange(3), [0]).tolist() == [0]
            og._dispatch._BY_TYPE.clear()  # every call selects its backend afresh
            calls += 1
        thread.join()
        print("ok", calls)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("ok")


# --- item 5: int32 indices on an axis longer than 2**31 --------------------------------

_LONG = 2**31 + 10


@pytest.fixture(scope="module")
def long_axis() -> np.ndarray:
    """2 GiB of uint8 zeros (calloc: only the three marked pages are ever touched)."""
    data = np.zeros(_LONG, np.uint8)
    data[0], data[5], data[-1] = 1, 5, 9
    return data


@pytest.mark.parametrize("check_bounds", [True, False])
@pytest.mark.parametrize("op", [og.gather, og.gather_elements])
def test_int32_indices_on_an_axis_beyond_int32(
    lib: Library, long_axis: np.ndarray, op: Any, check_bounds: bool
) -> None:
    indices = np.array([0, 5, -1], np.int32)
    if lib.name == "numpy":
        forms = [long_axis, np.broadcast_to(long_axis[-1:], (_LONG,))]
    elif lib.name == "torch":
        forms = [lib.module.from_numpy(long_axis)]  # zero-copy
    elif lib.name == "jax":
        import jax

        forms = [jax.numpy.asarray(long_axis)]
        if not jax.config.read("jax_enable_x64"):
            # int32 is JAX's widest index type without x64: elements past 2**31 - 1 along
            # an axis cannot be addressed, which the error says (with its remedy).
            for index in (indices, lib.indices(indices)):
                with pytest.raises(ValueError, match=rf"axis 0 has {_LONG} .*jax_enable_x64"):
                    op(forms[0], index, check_bounds=check_bounds)
            return
        forms.append(jax.jit(lambda d, i: op(d, i, check_bounds=check_bounds)))
    elif lib.name == "dask":
        import dask.array as da

        forms = [
            da.from_array(long_axis, chunks=2**30),
            da.zeros(_LONG, chunks=2**30, dtype=np.uint8) + np.uint8(9),
        ]
    elif lib.device != "cpu":  # torch[cuda], cupy: a copy on the device
        forms = [lib.asarray(long_axis)]
    else:  # array-api-strict wraps NumPy without copying
        forms = [lib.module.asarray(long_axis, copy=False)]
    for i, data in enumerate(forms):
        for index in (indices, lib.indices(indices) if lib.name != "numpy" else indices):
            if callable(data):  # jax.jit of the call, on the eager form's data
                want, got = [1, 5, 9], data(forms[0], index)
            else:
                want = [1, 5, 9] if i == 0 else [9, 9, 9]
                got = op(data, index, check_bounds=check_bounds)
            assert lib.to_numpy(got).tolist() == want


def test_int32_negative_unchecked_on_a_zero_stride_view(kernel: str) -> None:
    data = np.broadcast_to(np.arange(1, dtype=np.uint8) + 7, (_LONG,))
    indices = np.array([0, 5, -1, -(2**31)], np.int32)
    for check_bounds in (True, False):
        assert og.gather(data, indices, check_bounds=check_bounds).tolist() == [7] * 4


# --- item 6: GatherElements on rank-64 data --------------------------------------------


def _high_rank(rank: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    ones = (1,) * (rank - 1)
    data = np.arange(3.0).reshape((3, *ones))
    indices = np.array([2, 0, -1, 1]).reshape((4, *ones))
    return data, indices, np.array([2.0, 0.0, 2.0, 1.0]).reshape((4, *ones))


# NumPy 1.x arrays have at most 32 dimensions (NPY_MAXDIMS), NumPy 2 at most 64.
HIGH_RANKS = [33, 63, 64] if int(np.__version__.split(".")[0]) >= 2 else [32]


@pytest.mark.parametrize("rank", HIGH_RANKS)
def test_gather_elements_rank_64_numpy(rank: int, kernel: str) -> None:
    data, indices, want = _high_rank(rank)
    for check_bounds in (True, False):
        got = og.gather_elements(data, indices, 0, check_bounds=check_bounds)
        assert got.shape == want.shape
        assert np.array_equal(got, want)
        moved = og.gather_elements(data.T, indices.T, -1, check_bounds=check_bounds)
        assert np.array_equal(moved, want.T)
    assert np.array_equal(openvino.gather_elements(data, indices[:3], 0), want[:3])
    bad = indices.copy()
    bad.reshape(-1)[1] = 3
    with pytest.raises(IndexError, match=r"index 3 at position \(1, 0, "):
        og.gather_elements(data, bad, 0)


@pytest.mark.parametrize("rank", [HIGH_RANKS[0], HIGH_RANKS[-1]])
def test_gather_elements_rank_64(lib: Library, rank: int) -> None:
    data, indices, want = _high_rank(rank)
    forms: list[tuple[Any, Any]] = [(lib.asarray(data), indices)]
    forms.append((lib.asarray(data), lib.indices(indices)))
    if lib.name == "dask":
        import dask.array as da

        forms += [
            (da.from_array(data, chunks=1), indices),  # chunked along the axis
            (da.from_array(data, chunks=1), da.from_array(indices, chunks=2)),
            (da.from_array(data), indices),  # one chunk: the task runs the kernel
        ]
    for d, i in forms:
        got = lib.to_numpy(og.gather_elements(d, i, 0))
        assert got.shape == want.shape
        assert np.array_equal(got, want)


# --- item 7: array-api-strict at API version 2023.12 -----------------------------------


@pytest.fixture
def strict_2023() -> Any:
    xp = _module("array-api-strict")
    flags = xp.get_array_api_strict_flags()
    xp.set_array_api_strict_flags(api_version="2023.12")
    yield xp
    xp.set_array_api_strict_flags(**flags)


@pytest.mark.backend("array-api-strict")
def test_array_api_strict_2023_12(strict_2023: Any) -> None:
    xp = strict_2023
    assert xp.__array_api_version__ == "2023.12"
    data = xp.asarray(np.arange(6.0).reshape(2, 3))
    want = np.array([[0.0, 2.0, 2.0], [4.0, 4.0, 3.0]])
    for indices in (np.array([[0, 2, -1], [1, 1, 0]]), xp.asarray([[0, 2, -1], [1, 1, 0]])):
        assert np.array_equal(np.asarray(og.gather_elements(data, indices, 1)), want)
        assert np.array_equal(np.asarray(openvino.gather_elements(data, indices, 1)), want)
    trimmed = og.gather_elements(data, np.array([[1, 0]]), 1)  # trim, then linear take
    assert np.asarray(trimmed).tolist() == [[1.0, 0.0]]
    assert np.asarray(og.gather(data, [1, -1], 1)).tolist() == [[1.0, 2.0], [4.0, 5.0]]


# --- item 8: big-endian NumPy indices --------------------------------------------------


@pytest.mark.parametrize("order", [">i8", ">i4", "<i8", "<i4"])
def test_big_endian_indices(lib: Library, order: str) -> None:
    data = lib.asarray(np.arange(6, dtype=np.int32).reshape(2, 3))
    flat = lib.asarray(np.arange(3, dtype=np.int32))
    assert lib.to_numpy(og.gather(flat, np.array([1, -1], dtype=order))).tolist() == [1, 2]
    got = og.gather(data, np.array([1, -1], dtype=order), 1)
    assert lib.to_numpy(got).tolist() == [[1, 2], [4, 5]]
    rows = np.array([[1, -1, 0], [0, 0, -2]], dtype=order)
    want = [[1, 2, 0], [3, 3, 4]]
    assert lib.to_numpy(og.gather_elements(data, rows, 1)).tolist() == want
    assert lib.to_numpy(openvino.gather_elements(data, rows, 1)).tolist() == want
    with pytest.raises(IndexError, match="index 3 at position"):
        lib.to_numpy(og.gather(flat, np.array([1, 3], dtype=order)))


# --- item 9: Gather on a non-contiguous view costs memory in proportion to the output --

_VIEW_SHAPE = (4000, 4000)  # 61 MiB of float32


def _views() -> dict[str, np.ndarray]:
    base = np.ones(_VIEW_SHAPE, np.float32)
    return {
        "transposed": base.T,
        "reversed": base[::-1],
        "strided": np.ones((4000, 8000), np.float32)[:, ::2],
        "fortran": np.asfortranarray(base),
    }


def _peak(call: Any) -> int:
    tracemalloc.start()
    try:
        call()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("view", ["transposed", "reversed", "strided", "fortran"])
def test_gather_of_a_view_does_not_copy_it(view: str, kernel: str) -> None:
    data = _views()[view]
    want = np.ascontiguousarray(data)[[5, -1]]
    got = og.gather(data, [5, -1], 0)
    assert np.array_equal(got, want)
    peak = _peak(lambda: og.gather(data, [5, -1], 0))
    assert peak < 4 * want.nbytes + (1 << 20), f"{view}: peak {peak} bytes"
    peak_elements = _peak(lambda: og.gather_elements(data, np.array([[5, -1, 0]]), 1))
    assert peak_elements < 1 << 20, f"{view}: GatherElements peak {peak_elements} bytes"


def test_gather_of_a_broadcast_view(kernel: str) -> None:
    column = np.arange(2**20, dtype=np.int32)[:, None]
    data = np.broadcast_to(column, (2**20, 2**12))  # 16 GiB as seen, 4 MiB held
    got = og.gather(data, [5, -1], 0)
    assert got.shape == (2, 2**12)
    assert (got[0] == 5).all()
    assert (got[1] == 2**20 - 1).all()
    peak = _peak(lambda: og.gather(data, [5, -1], 0))
    assert peak < 1 << 20, f"peak {peak} bytes"


@pytest.mark.backend("torch")
def test_torch_views_gather_without_copying() -> None:
    torch = _module("torch")
    base = torch.ones(_VIEW_SHAPE, dtype=torch.float32)
    column = torch.arange(2**20, dtype=torch.int32)[:, None]
    for data in (base.t(), column.expand(2**20, 2**12)):
        want = data[[5, -1]]
        og.gather(data, [5, -1], 0)  # warm: plans, imports
        start = time.perf_counter()
        got = og.gather(data, [5, -1], 0)
        took = time.perf_counter() - start
        assert torch.equal(got, want)
        # A copy of the 16 GiB broadcast view could not even be allocated; one of the
        # 61 MiB transposed one takes tens of milliseconds.
        assert took < 0.02, f"{took * 1e3:.1f} ms for a 2-row gather of a view"


@pytest.mark.backend("dask")
def test_dask_tasks_do_not_copy_non_contiguous_blocks() -> None:
    from onnx_gather._backends import _dask

    # A block of a transposed or strided array (dask's from_array copies NumPy input, so
    # the task functions are fed such a block directly).
    for block in _views().values():
        indices = np.array([5, 3999])
        want = np.ascontiguousarray(block)[indices]
        assert np.array_equal(_dask._take_block(block, indices, 0), want)
        peak = _peak(lambda: _dask._take_block(block, indices, 0))  # noqa: B023
        assert peak < 4 * want.nbytes + (1 << 20), f"peak {peak} bytes"
        part = _dask._take_part(block, np.array([1]), indices + 4000, 0, (4000, 8000))
        assert np.array_equal(part, want)
        peak = _peak(lambda: _dask._take_part(block, np.array([0]), indices, 0, (4000,)))  # noqa: B023
        assert peak < 4 * want.nbytes + (1 << 20), f"part: peak {peak} bytes"


# --- item 10: dask output blocks respect array.chunk-size -----------------------------


def _largest_block_bytes(x: Any) -> int:
    return int(np.prod([max(c) for c in x.chunks])) * x.dtype.itemsize


@pytest.mark.backend("dask")
@pytest.mark.parametrize("form", ["numpy", "list", "dask-one-chunk"])
def test_dask_gather_output_blocks_fit_chunk_size(form: str) -> None:
    dask = _module("dask")
    da = dask.array
    from dask.utils import parse_bytes

    rng = np.random.default_rng(0)
    host = rng.integers(0, 1000, 60000)
    data = da.from_array(rng.random((1000, 2000)), chunks=(1000, 2000))
    indices: Any = {
        "numpy": host,
        "list": host.tolist(),
        "dask-one-chunk": da.from_array(host, chunks=-1),
    }[form]
    result = og.gather(data, indices, 0)
    assert _largest_block_bytes(result) <= parse_bytes(dask.config.get("array.chunk-size"))
    with dask.config.set({"array.chunk-size": "16MiB"}):
        small = og.gather(data, indices, 0)
    assert _largest_block_bytes(small) <= 16 * 2**20
    picked = np.sort(rng.choice(60000, 50, replace=False))
    assert np.array_equal(result[picked].compute(), data.compute()[host[picked]])


# --- item 11: NumPy subclasses and masked arrays ---------------------------------------


class _Tagged(np.ndarray):
    pass


@pytest.mark.filterwarnings("ignore:the matrix subclass:PendingDeprecationWarning")
@pytest.mark.parametrize("size", ["small", "large"])
def test_numpy_subclasses_give_plain_arrays(kernel: str, size: str, tmp_path: Any) -> None:
    n = 2 if size == "small" else 512
    base = np.arange(n * n).reshape(n, n)
    memmap = np.memmap(tmp_path / "m.bin", dtype=base.dtype, mode="w+", shape=base.shape)
    memmap[:] = base
    rows = np.zeros((1, n), np.int64) if size == "small" else np.zeros((n, n), np.int64)
    rows[0, :2] = [0, 1] if n == 2 else [0, -1]
    for data in (np.matrix(base), memmap, base.view(_Tagged)):
        got = og.gather(data, [[0, 1]], 1)
        assert type(got) is np.ndarray
        assert got.shape == (n, 1, 2)
        assert np.array_equal(got, base[:, [[0, 1]]])
        elements = og.gather_elements(data, rows, 1)
        assert type(elements) is np.ndarray
        assert np.array_equal(elements, np.take_along_axis(base[: len(rows)], rows, 1))
    got = og.gather(base, np.matrix([[0, 1]]), 1)  # subclass indices: the plain array
    assert type(got) is np.ndarray
    assert got.shape == (n, 1, 2)
    assert og.gather(np.matrix([[1, 2], [3, 4]]), [[0, 1]], 1).shape == (2, 1, 2)


@pytest.mark.filterwarnings("ignore:the matrix subclass:PendingDeprecationWarning")
def test_masked_arrays_are_a_type_error(lib: Library) -> None:
    masked = np.ma.array([0, 1, 2], mask=[0, 1, 0])
    data = lib.asarray(np.arange(3))
    for op in (og.gather, og.gather_elements):
        with pytest.raises(TypeError, match="indices is a NumPy masked array"):
            op(data, masked)
    if lib.name == "numpy":
        for op in (og.gather, og.gather_elements):
            with pytest.raises(TypeError, match="data is a NumPy masked array"):
                op(masked, [0])


# --- item 12: index forms --------------------------------------------------------------


def test_index_forms(lib: Library) -> None:
    data = lib.asarray(np.arange(5))
    for indices in (range(2), array.array("q", [0, 1]), array.array("i", [0, 1])):
        assert lib.to_numpy(og.gather(data, indices)).tolist() == [0, 1]
    with pytest.raises((TypeError, ValueError), match=r"indices .*ragged.*\[\[0, 1\], \[1\]\]"):
        og.gather(data, [[0, 1], [1]])
    for bools in ([True, 0], [0, np.True_], [True, False], True):
        with pytest.raises(TypeError, match=r"got bool (np\.)?True"):
            og.gather(data, bools)
    with pytest.raises(TypeError, match=r"NumPy object array \(of str\)"):
        og.gather(data, np.array(["a", "b"], dtype=object))
    with pytest.raises(TypeError, match=r"NumPy object array \(of int\)"):
        og.gather(data, np.array([0, 1], dtype=object))
    with pytest.raises(TypeError, match=r"got NoneType None at position \(1,\)"):
        og.gather(data, [0, None])
    with pytest.raises(TypeError, match=r"got string 'x' at position \(0, 1\)"):
        og.gather(data, [[0, "x"]])


# --- item 14: check_bounds=False never raises a raw error, never reads outside ---------

_FAR = [2**62, -(2**62)]


@pytest.mark.parametrize("op", ["gather", "gather_elements"])
def test_unchecked_out_of_range_reads_inside(lib: Library, op: str) -> None:
    values = np.arange(10, 13, dtype=np.int32)
    data = lib.asarray(values)
    call = og.gather if op == "gather" else og.gather_elements
    for bad in [*_FAR, 3, -4]:
        got = lib.to_numpy(call(data, np.array([bad, 1]), 0, check_bounds=False))
        assert got.shape == (2,)
        assert got[1] == 11
        # Clamped into the axis; JAX may give its fill value (int32: the minimum) instead.
        fill = lib.name == "jax" and got[0] == np.iinfo(np.int32).min
        assert got[0] in values or fill
        with pytest.raises(IndexError, match=f"index {bad} at position"):
            lib.to_numpy(call(data, np.array([bad, 1]), 0))


@pytest.mark.parametrize("op", ["gather", "gather_elements", "gather_nd"])
def test_unchecked_on_an_empty_axis(lib: Library, op: str) -> None:
    # The rule: with check_bounds=False, indices on an empty axis read nothing and the
    # result is zeros (JAX: its fill value); with the check, our IndexError. Strings too,
    # where the library holds them: Dask could not make a block of zeros of object data
    # (found by the GatherND campaign).
    nd = op == "gather_nd"
    call = getattr(og, op)
    for dtype in [np.float32, *([object] if "string" in lib.holds else [])]:
        data = lib.asarray(np.zeros((0,), dtype))
        for bad in [*_FAR, 0, -1]:
            indices = np.array([[bad]] if nd else [bad])
            extra = () if nd else (0,)
            got = lib.to_numpy(call(data, indices, *extra, check_bounds=False))
            assert got.shape == (1,)
            assert got[0] == 0 or (lib.name == "jax" and np.isnan(got[0]))
            match = f"index {bad} at position .* the axis is empty"
            with pytest.raises(IndexError, match=match):
                lib.to_numpy(call(data, indices, *extra))


# --- item 17: messages and the CLI -----------------------------------------------------


def test_cross_library_message_wording() -> None:
    from onnx_gather._dispatch import describe, library_of

    assert describe(None) == "a Python NoneType"
    assert describe(np.ma.array([1])) == "a NumPy MaskedArray"
    assert library_of(np.zeros(1)) == "NumPy"
    with pytest.raises(TypeError, match="indices is a Python NoneType"):
        og.gather(np.arange(3), None)
    with pytest.raises(TypeError, match="got a Python object"):
        og.gather(object(), [0])


def test_cli_examples_zero_is_a_usage_error() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "onnx_gather", "check", "--examples", "0"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2
    assert "usage:" in done.stderr
    assert "--examples: 0 is not a positive int" in done.stderr
    assert "Traceback" not in done.stderr


def test_cli_backends_honoured_in_examples_mode(capsys: pytest.CaptureFixture[str]) -> None:
    from onnx_gather.__main__ import main

    assert main(["--backends", "numpy"]) == 0
    out = capsys.readouterr().out
    assert "(1 backends: numpy)" in out
    assert main(["--backends", "nosuch"]) == 2
    assert "nosuch" in capsys.readouterr().err


def test_benchmarks_without_onnxruntime(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from benchmarks.__main__ import main

    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # import raises ImportError
    assert main(["--smoke"]) == 2
    err = capsys.readouterr().err
    assert "onnxruntime" in err
    assert "pip install" in err
