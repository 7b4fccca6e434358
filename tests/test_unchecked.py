"""Unchecked gathers (``check_bounds=False``) read inside data (issue 33, item 11).

The README's rule: an out-of-range index reads data's element at the index clamped into
its axis (zeros where the axis is empty), never raising, never reading outside; JAX gives
its fill value instead (NaN, the most negative signed integer, the largest unsigned one,
True; GatherND fills the whole slice of a tuple with a bad coordinate). Each call here is
judged by the conformance runner against the loop oracle's unchecked answer, on every
library of the run, in every index form and through views; the runner itself must tell a
wrong unchecked value or an error from the rule. torch's transforms (compile, trace, vmap)
run the same calls; JAX's are in tests/test_transforms_table.py, the large threaded path
in tests/test_fast_paths.py.
"""

from __future__ import annotations

import dataclasses
import warnings
from typing import Any

import numpy as np
import pytest
from libs import LIBS

import onnx_gather as og
from onnx_gather._conformance import oracle
from onnx_gather._conformance.runner import Outcome, check, expected, mismatch, run_oracle
from onnx_gather._conformance.strategies import Example, Layout

F32 = np.arange(1, 31, dtype=np.float32).reshape(5, 6)
#: Far outside (int32 and int64), one past each end, and valid ones between them.
BAD32 = np.array([[2**31 - 1, -(2**31), 6, -7], [0, -1, 5, -6]], np.int32)
BAD64 = np.array([[2**62, -(2**62), 6, -7], [3, -1, 5, -6]], np.int64)
#: Reversed rows, every other column, transposed: the reads go through data's strides.
VIEW = Layout(perm=(1, 0), steps=(-1, 2), offsets=(0, 1))


def _examples() -> list[Any]:
    ints = np.arange(-15, 15, dtype=np.int8).reshape(5, 6)
    strings = np.array([f"s{i}" for i in range(30)], object).reshape(5, 6)
    empty = np.zeros((3, 0), np.float32)
    nd = np.array([[[9, 0], [1, -9]], [[-1, 7], [2, 2]]], np.int64)  # (2, 2, 2) tuples
    made = [
        ("gather-axis1", "gather", F32, BAD64, {"axis": 1}),
        ("gather-axis0-int32", "gather", F32, BAD32, {"axis": 0}),
        ("gather-int8", "gather", ints, BAD64, {"axis": -1}),
        ("gather-strings", "gather", strings, BAD64, {"axis": 1}),
        ("gather-empty-axis", "gather", empty, BAD64[:1], {"axis": 1}),
        ("gather-scalar-index", "gather", F32, np.array(-40), {"axis": 0}),
        ("elements", "gather_elements", F32, BAD64, {"axis": 1}),
        ("elements-axis0", "gather_elements", F32, BAD32[:, :3], {"axis": 0}),
        ("elements-empty-axis", "gather_elements", empty, BAD32[:, :0].reshape(2, 0)[:1], {}),
        ("openvino", "openvino.gather_elements", F32, np.tile(BAD64, (3, 2))[:5], {"axis": 1}),
        ("nd", "gather_nd", F32, nd, {"batch_dims": 0}),
        ("nd-batch", "gather_nd", F32[:2], nd[:, :, :1], {"batch_dims": 1}),
        ("nd-uint16", "gather_nd", F32.astype(np.uint16), nd, {"batch_dims": 0}),
        ("nd-empty-axis", "gather_nd", empty, np.array([[0, 3], [-4, -1]]), {"batch_dims": 0}),
    ]
    params = []
    for name, op, data, indices, attributes in made:
        for form in ("array", "numpy", "list"):
            example = Example(op, data, indices, attributes, None, check_bounds=False)
            example = dataclasses.replace(example, indices_form=form)
            params.append(pytest.param(example, id=f"{name}-{form}"))
        if data.ndim == 2 and data.size:
            viewed = dataclasses.replace(example, indices_form="array", data_layout=VIEW)
            params.append(pytest.param(viewed, id=f"{name}-view"))
    return params


@pytest.mark.parametrize("example", _examples())
def test_unchecked_gathers_read_the_clamped_element(example: Example) -> None:
    """Every library of the run, against the oracle's unchecked answer (JAX: its fill)."""
    want = check(example, LIBS)
    assert want.error is None, want.error  # the rule gives a value, never an error


def test_the_runner_judges_unchecked_gathers_by_the_rule() -> None:
    """Before, the runner accepted any value or exception where the checked oracle raised."""
    example = Example(
        "gather", np.array([10, 11, 12], np.int32), np.array([5, -9, 1]), {"axis": 0}, None,
        check_bounds=False,
    )  # fmt: skip
    want = expected(example)
    # The rule read off by hand: 5 clamps to the last element, -9 to the first.
    assert want.value is not None
    assert want.value.tolist() == [12, 10, 11]
    assert mismatch(example, Outcome(value=want.value), want) is None
    wrapped = np.array([12, 10, 11][::-1], np.int32)  # any other element of data
    assert mismatch(example, Outcome(value=wrapped), want) is not None
    problem = mismatch(example, Outcome(error=IndexError("index 5 at position (0,)")), want)
    assert problem is not None
    assert problem.startswith("raised IndexError")
    filled = expected(example, fill=True)
    assert filled.value is not None
    assert filled.value.tolist() == [np.iinfo(np.int32).min, np.iinfo(np.int32).min, 11]


@pytest.mark.parametrize(
    ("dtype", "fill"),
    [
        (np.bool_, True),
        (np.int8, -128),
        (np.int64, -(2**63)),
        (np.uint16, 2**16 - 1),
        (np.uint64, 2**64 - 1),
        (np.float16, np.nan),
        (np.complex64, complex(np.nan, 0)),
    ],
)
def test_jax_fill_values(dtype: Any, fill: Any) -> None:
    """JAX's documented fills (``jnp.take(mode="fill")``), as literals."""
    got = np.asarray(oracle.fill_value(np.dtype(dtype)))
    assert got.dtype == np.dtype(dtype)
    if isinstance(fill, float | complex):
        assert np.isnan(got.real)
        assert got.imag == 0
    else:
        assert got == fill


# --- torch's transforms ---------------------------------------------------------------

CALLS = {
    "gather": (og.gather, BAD64, {"axis": 1}),
    "gather_elements": (og.gather_elements, BAD64, {"axis": 1}),
    "gather_nd": (og.gather_nd, np.array([[9, 0], [1, -9], [-1, 7]], np.int64), {}),
}


@pytest.mark.backend("torch")
@pytest.mark.parametrize("transform", ["compile", "aot_eager", "trace", "vmap"])
@pytest.mark.parametrize("op", list(CALLS))
def test_torch_transforms_clamp(op: str, transform: str) -> None:
    import torch

    function, indices, attributes = CALLS[op]

    def fn(x: Any, i: Any) -> Any:
        return function(x, i, **attributes, check_bounds=False)

    want = run_oracle(op, (F32, indices), attributes, None, check_bounds=False)
    x, i = torch.from_numpy(F32), torch.from_numpy(indices)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "`torch.jit.script_method` is deprecated")
        # torch.jit.trace is deprecated (torch 2.13) and warns; it may also warn that the
        # trace is specialised to these inputs.
        warnings.simplefilter("ignore", DeprecationWarning)
        warnings.simplefilter("ignore", torch.jit.TracerWarning)
        if transform == "compile":
            got = torch.compile(fn, fullgraph=True, dynamic=False)(x, i)
        elif transform == "aot_eager":
            got = torch.compile(fn, backend="aot_eager", fullgraph=True)(x, i)
        elif transform == "trace":
            got = torch.jit.trace(fn, (x, i))(x, i)
        else:
            got = torch.func.vmap(fn)(x[None], i[None])[0]
    np.testing.assert_array_equal(got.numpy(), want)
