"""Whether the compiled kernel is in use, as the run expects.

The extension is optional at build time, so a broken build would silently leave every
call on the pure-NumPy fallback. ONNX_GATHER_EXPECT_KERNEL says what this run expects:
``built`` (the nox test sessions: the kernel must be there and serve NumPy arrays) or
``absent`` (the no-compiler session: the install went on without it, and the fallback
serves). Unset, only the two must agree: the module imports exactly where it was built.
"""

from __future__ import annotations

import importlib.util
import os

import numpy as np
import pytest

import onnx_gather as og
from onnx_gather._backends import _numpy

EXPECT = os.environ.get("ONNX_GATHER_EXPECT_KERNEL", "")


def test_the_kernel_is_there_exactly_where_it_was_built() -> None:
    built = importlib.util.find_spec("onnx_gather._kernels") is not None
    assert (_numpy._kernels is not None) == built
    if EXPECT == "built":
        assert built, "the compiled kernel was not built: check the install's build log"
    elif EXPECT == "absent":
        assert not built, "this run expects an install without the compiled kernel"
    else:
        assert EXPECT == "", f"ONNX_GATHER_EXPECT_KERNEL must be built or absent, got {EXPECT!r}"


def test_numpy_calls_take_the_expected_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """The compiled kernel serves plain arrays when built; otherwise the fallback does."""
    from onnx_gather._backends._numpy import _fallback as _numpy_fallback

    served: list[str] = []
    for name in ("gather", "gather_elements"):
        real = getattr(_numpy_fallback, name)
        monkeypatch.setattr(
            _numpy_fallback,
            name,
            lambda *a, _real=real, **k: served.append("fallback") or _real(*a, **k),
        )
    data = np.arange(12.0).reshape(3, 4)
    assert og.gather(data, [2, -1], 1).tolist() == [[2.0, 3.0], [6.0, 7.0], [10.0, 11.0]]
    assert og.gather_elements(data, [[3, -4]], 1).tolist() == [[3.0, 0.0]]
    with pytest.raises(IndexError, match="index 4 at position"):
        og.gather(data, [4], 1)
    want = [] if _numpy._kernels is not None else ["fallback"] * 3
    assert served == want
