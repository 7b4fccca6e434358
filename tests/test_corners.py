"""Odd corners of a third hostile run (issue 23) that are not torch's tracers.

Each test failed before its fix. Tests that need one library are marked ``backend(name)``
(conftest.py deselects them in other runs); tests that take ``lib`` run on every library.
Index forms (IntEnum, ``range``) and ``check_bounds`` are in test_api.py.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from helpers import assert_identical

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
