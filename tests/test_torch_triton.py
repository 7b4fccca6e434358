"""The Triton kernels (``onnx_gather._backends._torch._triton``), bit for bit, without a GPU.

The module is marked ``tool("triton")`` (conftest.py): it runs where ONNX_GATHER_TOOLS
names triton, as ``nox -s triton_interpreter`` does, and there a triton that cannot be
imported, or neither Triton's interpreter nor a CUDA device, fails the run instead of
skipping it green. With ``TRITON_INTERPRET=1`` (set before triton is imported; the session
sets it) Triton's interpreter runs the kernels on CPU tensors; on a machine with a CUDA
device and no interpreter they run on CUDA tensors
(``ONNX_GATHER_TOOLS=triton ONNX_GATHER_BACKENDS=torch pytest tests/test_torch_triton.py``).
Elsewhere its tests are deselected (and the module skips if triton is not installed).

The torch backend's two kernels are routed, for the test, to the Triton functions
wherever :func:`_triton.supports` takes the call (bypassing :func:`_triton.serves`' CUDA
and size tests), so the whole case table and the property tests run them through the
public API. A call they do not support goes to the torch path, is counted, and must be
one the module says it does not serve (complex128 data, host indices).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np
import pytest
import torch

pytestmark = pytest.mark.tool("triton")

INTERPRET = os.environ.get("TRITON_INTERPRET", "") not in ("", "0")
#: Whether this run exists for triton (conftest.py has imported it, or failed the run).
NAMED = "triton" in {t.strip() for t in os.environ.get("ONNX_GATHER_TOOLS", "").split(",")}
NO_DEVICE = "no CUDA device and TRITON_INTERPRET is not set (nox -s triton_interpreter sets it)"

if not NAMED:  # the tests are deselected; the module need not load without triton
    pytest.importorskip("triton", reason="triton is not installed")
if not INTERPRET and not torch.cuda.is_available():
    if NAMED:
        raise RuntimeError(f"ONNX_GATHER_TOOLS names triton, but there is {NO_DEVICE}")
    pytest.skip(NO_DEVICE, allow_module_level=True)

from cases import CASES, GATHER, Case  # noqa: E402
from helpers import assert_identical, expected, run_case  # noqa: E402
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import example as explicit  # noqa: E402

from onnx_gather import _api, _ops  # noqa: E402
from onnx_gather._backends import _torch  # noqa: E402
from onnx_gather._backends._torch import _triton as tt  # noqa: E402
from onnx_gather._conformance import oracle  # noqa: E402
from onnx_gather._conformance.libraries import installed  # noqa: E402
from onnx_gather._conformance.runner import check, inputs, run_oracle  # noqa: E402
from onnx_gather._conformance.strategies import Example, examples  # noqa: E402
from onnx_gather._memo import Memo  # noqa: E402
from onnx_gather._ops import call  # noqa: E402
from onnx_gather._spec import Plan  # noqa: E402

ELEMENTS = _ops.GATHER_ELEMENTS.name
OPENVINO = _ops.OPENVINO_GATHER_ELEMENTS.name


def plan_gather(*args: Any) -> Any:
    """Gather's plan: (version, data shape, dtype, indices shape, dtype, axis, check)."""
    version, dshape, ddtype, ishape, idtype, axis, check = args
    op = _ops.GATHER
    return op.planner(op, version, (dshape, ishape), (ddtype, idtype), (axis,), check)


def plan_gather_elements(*args: Any) -> Any:
    """GatherElements' plan, with the arguments of :func:`plan_gather`."""
    version, dshape, ddtype, ishape, idtype, axis, check = args
    op = _ops.GATHER_ELEMENTS
    return op.planner(op, version, (dshape, ishape), (ddtype, idtype), (axis,), check)


def walk(data: Any, indices: Any, plan: Any) -> Any:
    """The shape a kernel walks over data: data's (Gather) or the output's (GatherElements)."""
    return plan.out_shape if hasattr(plan, "trim") else data.shape


DEVICE = "cpu" if INTERPRET else "cuda"
LIB = installed(["torch" if DEVICE == "cpu" else "torch[cuda]"])[0]
HOLDS = sorted(LIB.holds)
EXAMPLES = int(os.environ.get("ONNX_GATHER_TRITON_EXAMPLES", "200"))
BUDGET = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.function_scoped_fixture,  # the routing fixture holds for every example
    ],
    print_blob=True,
)
#: Which path served each kernel call of the module: ("triton" | "torch", why).
ROUTES: Counter[tuple[str, str]] = Counter()
#: The table's cases that ran (the count test below needs all of them).
RAN: set[str] = set()


def _unserved_reason(data: Any, indices: Any) -> str | None:
    """Why the Triton kernels must not take a call, or None if they must."""
    if not isinstance(indices, torch.Tensor):
        return "host indices"
    if data.dtype == torch.complex128:
        return "complex128"
    return None


class Routed:
    """The torch backend's kernels, sent to Triton wherever it supports the call."""

    def __init__(self) -> None:
        self.last: str | None = None

    def wrap(self, native: Callable[..., Any], triton_fn: Callable[..., Any]) -> Callable[..., Any]:
        def kernel(data: Any, indices: Any, plan: Plan, /) -> Any:
            why = _unserved_reason(data, indices)
            supported = tt.supports(data, indices, plan, walk(data, indices, plan))
            assert supported == (why is None), (why, data.dtype, data.shape, data.stride())
            if supported:
                self.last = "triton"
                ROUTES["triton", "served"] += 1
                return triton_fn(data, indices, plan)
            assert not tt.serves(data, indices, plan, walk(data, indices, plan))
            self.last = "torch"
            ROUTES["torch", str(why)] += 1
            return native(data, indices, plan)

        return kernel


@pytest.fixture
def routed(monkeypatch: pytest.MonkeyPatch) -> Routed:
    router = Routed()
    backend = _torch.backend
    monkeypatch.setattr(
        backend, "gather", router.wrap(type(backend).gather.__get__(backend), tt.gather)
    )
    monkeypatch.setattr(
        backend,
        "gather_elements",
        router.wrap(type(backend).gather_elements.__get__(backend), tt.gather_elements),
    )
    # Cached plans hold the unpatched kernels: a fresh cache, dropped afterwards.
    monkeypatch.setattr(_api, "_CALLS", Memo(4096))
    # These CPU tensors stand in for CUDA ones, which never take the eager CPU route that
    # binds small gathers to torch's own kernel (_torch/_small_call.py): the methods it is.
    monkeypatch.setattr(_torch, "BINDERS", {})
    return router


# ---------------------------------------------------------------------------------------
# The shared case table


#: The operators the Triton kernels serve (GatherND runs torch's advanced indexing on CUDA).
TRITON_OPS = {GATHER, ELEMENTS, OPENVINO}


def _held(case: Case) -> bool:
    """A case of an operator the kernels serve, with data torch holds."""
    from onnx_gather._conformance.libraries import type_name

    return case.op in TRITON_OPS and type_name(case.data.dtype) in LIB.holds


@pytest.mark.parametrize("case", [c for c in CASES if _held(c)], ids=lambda c: c.id)
def test_case(routed: Routed, case: Case) -> None:
    RAN.add(case.id)
    if case.raises is not None:
        with pytest.raises(case.raises, match=case.match):
            LIB.to_numpy(run_case(LIB, case))
        return
    result = LIB.to_numpy(run_case(LIB, case))
    assert_identical(result, expected(case))
    if case.data.dtype != np.complex128:
        assert routed.last == "triton", case.id


def test_case_table_routes() -> None:
    """Runs after the table: every call reached Triton except the counted complex128 ones."""
    table = {c.id for c in CASES if _held(c)}
    if table != RAN:
        pytest.skip("run with the whole case table (this checks its counts)")
    complex128 = [
        c for c in CASES if _held(c) and c.data.dtype == np.complex128 and c.raises is None
    ]
    assert ROUTES["torch", "complex128"] == len(complex128) > 0
    assert ROUTES["triton", "served"] > 100
    assert set(ROUTES) <= {("triton", "served"), ("torch", "complex128"), ("torch", "host indices")}


# ---------------------------------------------------------------------------------------
# Random calls against the loop oracle


def _as_array_indices(example: Example) -> Example:
    """Indices as a tensor (with their drawn view), so the Triton kernels take the call."""
    return example if example.indices_form == "array" else replace(example, indices_form="array")


def _bits_replaced(example: Example) -> np.ndarray:
    """What an unchecked call must give: each index counted from the end and clamped into the
    axis (zeros on an empty axis)."""
    ax = example.attributes["axis"] % example.data.ndim
    size = example.data.shape[ax]
    idx = example.indices.astype(np.int64)
    counted = np.where(idx < 0, idx + size, idx)
    safe = np.clip(counted, 0, max(size - 1, 0)).astype(example.indices.dtype)
    if size == 0:
        shape = example.indices.shape
        if example.op == GATHER:
            shape = example.data.shape[:ax] + shape + example.data.shape[ax + 1 :]
        return np.zeros(shape, example.data.dtype)
    return run_oracle(example.op, (example.data, safe), example.attributes, example.opset)


def _conforms(router: Routed, example: Example) -> None:
    example = _as_array_indices(example)
    router.last = None
    want = check(example, [LIB])  # the oracle's value (unchecked: clamped), or its error
    if router.last is None:  # the planner refused the call before any kernel
        assert want.error is not None
        assert not isinstance(want.error, IndexError)
    if router.last != "triton" or not isinstance(want.error, IndexError):
        return
    # Bad indices, unchecked (whatever the example's check_bounds): no error, and each bad
    # index reads the element clamped into the axis (nothing outside data: a read
    # elsewhere would show the filler a view skips, or garbage).
    (data, indices), _ = inputs(LIB, example)
    unchecked = call(
        example.op, data, indices, opset=example.opset, check_bounds=False, **example.attributes
    )
    got = LIB.to_numpy(unchecked)
    assert_identical(got, _bits_replaced(example))


@BUDGET
@given(example=examples(GATHER, HOLDS))
# Found by the nox session: an empty axis and a negative axis in the expected result.
@explicit(example=Example(GATHER, np.zeros(0, np.int32), np.array(0), {"axis": -1}, 1))
def test_gather_property(routed: Routed, example: Example) -> None:
    _conforms(routed, example)


@BUDGET
@given(example=examples(ELEMENTS, HOLDS))
def test_gather_elements_property(routed: Routed, example: Example) -> None:
    _conforms(routed, example)


@BUDGET
@given(example=examples(OPENVINO, HOLDS))
def test_openvino_gather_elements_property(routed: Routed, example: Example) -> None:
    _conforms(routed, example)


@pytest.mark.parametrize("op", [GATHER, ELEMENTS])
def test_unchecked_reads_the_clamped_element(routed: Routed, op: str) -> None:
    data = np.arange(10, 22, dtype=np.float32).reshape(3, 4)
    indices = np.array([[4, -5], [9, 1], [-100, 2**40]])
    check(Example(op, data, indices, {"axis": 1}, None, check_bounds=False), [LIB])
    assert routed.last == "triton"


# ---------------------------------------------------------------------------------------
# Wild indices, unchecked; views; what serves() takes

WILD = [2**62, -(2**62), 2**63 - 1, -(2**63), 2**31 - 1, -(2**31), 3, -4, 0, -1]


def _tensor(a: np.ndarray) -> Any:
    return LIB.asarray(a)


@pytest.mark.parametrize("index_dtype", ["int64", "int32"])
@pytest.mark.parametrize("op", ["gather", "gather_elements"])
def test_unchecked_wild_indices_never_raise_nor_read_outside(op: str, index_dtype: str) -> None:
    # data is the middle of a larger buffer filled with a NaN pattern no element has: a
    # read outside data would bring it into the result.
    base = np.full((5, 9), np.uint32(0x7FC0DEAD)).view(np.float32)
    base[1:4, 2:6] = np.arange(12, dtype=np.float32).reshape(3, 4)
    buffer = _tensor(base)
    data = buffer[1:4, 2:6]  # a view: rows of stride 9
    info = np.iinfo(index_dtype)
    values = [int(np.clip(v, info.min, info.max)) for v in WILD]
    if op == "gather":
        idx = np.array(values[:8], index_dtype).reshape(2, 4)
        plan = plan_gather(13, (3, 4), "float32", (2, 4), index_dtype, 1, False)
        out = tt.gather(data, _tensor(idx), plan)
        safe = np.clip(np.where(idx < 0, idx + 4, idx), 0, 3)
        want = np.take(base[1:4, 2:6], safe, axis=1)
    else:
        idx = np.array((values * 2)[:12], index_dtype).reshape(3, 4)
        plan = plan_gather_elements(13, (3, 4), "float32", (3, 4), index_dtype, 0, False)
        out = tt.gather_elements(data, _tensor(idx), plan)
        safe = np.clip(np.where(idx < 0, idx.astype(np.int64) + 3, idx), 0, 2)
        want = np.take_along_axis(base[1:4, 2:6], safe.astype(np.int64), axis=0)
    assert_identical(LIB.to_numpy(out), want)
    assert not np.isnan(LIB.to_numpy(out)).any()


def test_checked_names_the_first_bad_index_in_c_order() -> None:
    data = _tensor(np.arange(20, dtype=np.int16).reshape(4, 5))
    idx = np.zeros((3, 4, 5), np.int64)
    idx[2, 1, 3] = -6
    idx[1, 3, 0] = 5  # the first bad one in C order, though another program may see its own first
    idx[2, 3, 4] = 2**62
    plan = plan_gather(13, (4, 5), "int16", (3, 4, 5), "int64", 1, True)
    with pytest.raises(IndexError, match=r"index 5 at position \(1, 3, 0\) of indices"):
        tt.gather(data, _tensor(idx), plan)
    # Spread over many programs: positions far apart.
    big = np.zeros((4, 3000), np.int64)
    big[3, 2999] = 9
    big[1, 1700] = -9
    plan = plan_gather_elements(13, (4, 5), "int16", (4, 3000), "int64", 1, True)
    with pytest.raises(IndexError, match=r"index -9 at position \(1, 1700\) of indices"):
        tt.gather_elements(data.expand(4, 5), _tensor(big), plan)


@pytest.mark.parametrize("rank", [1, 2, 3, 4, 5, 6])
def test_views_of_every_rank_are_read_in_place(rank: int) -> None:
    """Strided, transposed, expanded views: served without a copy where <= 4 dims remain."""
    rng = np.random.default_rng(rank)
    shape = tuple(int(n) for n in rng.integers(2, 4, rank))
    base = _tensor(rng.integers(-(2**31), 2**31, tuple(2 * n for n in shape)).astype(np.int32))
    data = base[tuple(slice(None, None, 2) for _ in shape)]
    if rank > 1:
        data = data.transpose(0, rank - 1)
    for axis in range(rank):
        size = data.shape[axis]
        idx = rng.integers(-size, size, tuple(data.shape)).astype(np.int64)
        plan = plan_gather_elements(13, tuple(data.shape), "int32", idx.shape, "int64", axis, True)
        held = LIB.to_numpy(data)
        if tt.supports(data, _tensor(idx), plan, walk(data, None, plan)):
            out = tt.gather_elements(data, _tensor(idx), plan)
            want = oracle.gather_elements(held, idx, axis, 13)
            assert_identical(LIB.to_numpy(out), want)
        else:
            assert rank == 6  # five dims off the axis that no stride merges
        gidx = rng.integers(-size, size, (2, 3)).astype(np.int32)
        plan = plan_gather(13, tuple(data.shape), "int32", (2, 3), "int32", axis, True)
        if tt.supports(data, _tensor(gidx), plan, walk(data, None, plan)):
            out = tt.gather(data, _tensor(gidx), plan)
            assert_identical(LIB.to_numpy(out), oracle.gather(held, gidx, axis, 13))
    contiguous = _tensor(np.zeros((2,) * 7, np.float32))
    plan = plan_gather(13, (2,) * 7, "float32", (1,), "int64", 3, True)
    one = _tensor(np.zeros(1, np.int64))
    assert tt.supports(contiguous, one, plan, walk(contiguous, None, plan))  # collapses to 2 dims


def test_expanded_data_is_not_copied() -> None:
    row = _tensor(np.arange(6, dtype=np.float64))
    data = row.expand(5000, 6)  # stride 0 across rows: 6 elements of memory
    idx = np.tile(np.array([5, -6, 0], np.int64), (5000, 1))
    plan = plan_gather_elements(13, (5000, 6), "float64", (5000, 3), "int64", 1, True)
    assert tt._rest(data, idx.shape, plan) == [(5000, 0)]
    out = LIB.to_numpy(tt.gather_elements(data, _tensor(idx), plan))
    assert_identical(out, np.tile(np.array([5.0, 0.0, 0.0]), (5000, 1)))


def test_serves_only_cuda_tensors_outside_autograd_and_large_enough() -> None:
    n = tt.MIN_OUTPUTS
    data = _tensor(np.zeros((n, 2), np.float32))
    idx = _tensor(np.zeros((n, 1), np.int64))
    plan = plan_gather_elements(13, (n, 2), "float32", (n, 1), "int64", 1, True)
    assert tt.supports(data, idx, plan, walk(data, None, plan))
    assert tt.serves(data, idx, plan, walk(data, None, plan)) == (DEVICE == "cuda")
    small = plan_gather_elements(13, (n, 2), "float32", (n - 1, 1), "int64", 1, True)
    assert not tt.serves(data, idx[:-1], small, walk(data, None, small))
    with torch.enable_grad():
        assert not tt.serves(data.clone().requires_grad_(), idx, plan, walk(data, None, plan))
    assert not tt.serves(data, np.zeros((n, 1), np.int64), plan, walk(data, None, plan))
    c128 = _tensor(np.zeros((n, 2), np.complex128))
    cplan = plan_gather_elements(13, (n, 2), "complex128", (n, 1), "int64", 1, True)
    assert not tt.supports(c128, idx, cplan, walk(c128, None, cplan))


def test_importing_the_package_imports_no_triton() -> None:
    code = "import onnx_gather, onnx_gather.openvino, sys; print('triton' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
