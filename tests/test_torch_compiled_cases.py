"""The shared case table's gathers of every dtype under ``torch.compile``, bit for bit.

Under ``torch.compile`` a small checked gather on the CPU is torch's own operations on
indices counted from the end, whose range the compiled kernel's own check guards
(inductor's indirect-indexing assertion), so inductor writes the code that moves the
bits; a large one is the fused operator ``onnx_gather::run_v1``. These tests run the
table's dtype cases (every dtype torch holds, NaN payloads, -0.0, infinities, integer
extremes) and signalling NaNs through compiled functions, expected values from the loop
oracle; and check which route a compiled call takes, and that both raise for every kind
of index out of range (the fused operator the eager IndexError, inductor its own
RuntimeError), on every compiler backend.

Compiling is slow on small machines: the cases of one operator and attribute set run as
one compiled function of a list of inputs (one compilation each).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch
from cases import CASES, Case
from helpers import assert_identical, expected
from libs import LIBS, Library

import onnx_gather as og
from onnx_gather._backends._numpy import compiled_available
from onnx_gather._conformance.runner import run_oracle
from onnx_gather._ops import get

pytestmark = pytest.mark.backend("torch")

TORCH: Library | None = next((lib for lib in LIBS if lib.name == "torch"), None)


def _compile(fn: Callable[..., Any], dynamic: bool = False) -> Callable[..., Any]:
    with warnings.catch_warnings():
        # Importing inductor imports torch.utils.mkldnn, which warns about TorchScript.
        warnings.filterwarnings("ignore", "`torch.jit.script_method` is deprecated")
        import torch._inductor.compile_fx
    return torch.compile(fn, fullgraph=True, dynamic=dynamic)


def _groups() -> dict[str, list[Case]]:
    """The table's valid dtype cases torch holds, by operator, attributes and opset."""
    groups: dict[str, list[Case]] = {}
    if TORCH is None:
        return groups
    for case in CASES:
        if not case.id.startswith("dtype-") or case.raises is not None:
            continue
        if str(case.data.dtype) not in TORCH.holds and case.data.dtype.name not in TORCH.holds:
            continue
        key = f"{case.op}-{sorted(case.attributes.items())}-{case.opset}-{case.check_bounds}"
        groups.setdefault(key, []).append(case)
    return groups


GROUPS = _groups()


@pytest.mark.parametrize("key", sorted(GROUPS))
def test_every_dtype_compiled_keeps_every_bit(key: str) -> None:
    assert TORCH is not None
    cases = GROUPS[key]
    first = cases[0]

    operator = get(first.op)
    function = operator.function()  # (resolved here: Dynamo does not trace importlib)
    keywords = operator.keywords(first.attributes, first.opset, first.check_bounds)

    def run(pairs: list[tuple[torch.Tensor, torch.Tensor]]) -> list[torch.Tensor]:
        return [function(d, i, **keywords) for d, i in pairs]

    # Each group compiles this code object anew: past Dynamo's recompile limit (8) a
    # later group would not compile at all.
    torch._dynamo.reset()

    pairs = [(TORCH.asarray(c.data), TORCH.indices(c.indices)) for c in cases]
    got = _compile(run)(pairs)
    assert len(got) == len(cases)
    for case, result in zip(cases, got, strict=True):
        assert_identical(TORCH.to_numpy(result), expected(case))


#: Signalling NaNs (and a subnormal) by float type, as their bits: inductor's code must
#: move them as they are (float16 and bfloat16 go as int16 bits; a float conversion would
#: quiet them).
SIGNALLING = {
    torch.float16: (np.uint16, [0x7C01, 0xFC02, 0x0001, 0x3C00]),
    torch.bfloat16: (np.uint16, [0x7F81, 0xFF82, 0x0001, 0x3F80]),
    torch.float32: (np.uint32, [0x7F800001, 0xFF800002, 0x00000001, 0x3F800000]),
    torch.float64: (np.uint64, [0x7FF0000000000001, 0xFFF0000000000002, 1, 0x3FF0000000000000]),
}


@pytest.mark.parametrize("dtype", list(SIGNALLING), ids=str)
def test_compiled_gathers_keep_signalling_nans(dtype: torch.dtype) -> None:
    unsigned, values = SIGNALLING[dtype]
    bits = np.array(values, unsigned).reshape(2, 2)
    signed = {2: torch.int16, 4: torch.int32, 8: torch.int64}[bits.itemsize]
    data = torch.from_numpy(bits.view(f"i{bits.itemsize}").copy()).view(dtype)
    indices = torch.tensor([[1, -2], [0, -1]])
    nd_indices = torch.tensor([[1, -1], [0, 0], [-2, 1]])

    def run(x: torch.Tensor) -> list[torch.Tensor]:
        return [
            og.gather(x, indices, axis=1),
            og.gather_elements(x, indices, axis=0),
            og.gather_nd(x, nd_indices),
        ]

    got = _compile(run)(data)
    wants = [
        run_oracle("gather", (bits, indices.numpy()), {"axis": 1}, 13, True),
        run_oracle("gather_elements", (bits, indices.numpy()), {"axis": 0}, 13, True),
        run_oracle("gather_nd", (bits, nd_indices.numpy()), {"batch_dims": 0}, 13, True),
    ]
    for result, want in zip(got, wants, strict=True):
        assert_identical(result.view(signed).numpy().view(unsigned), want)


def _graph_of(fn: Callable[..., Any], *args: Any) -> str:
    """The code of the aten graph AOTAutograd records for ``fn(*args)`` (not compiled further).

    (Dynamo's own graph holds one opaque call per call of the library: what it runs is
    recorded when AOTAutograd traces that call.)
    """
    from torch._dynamo.backends.common import aot_autograd

    codes: list[str] = []

    def forward(gm: torch.fx.GraphModule, example: Any) -> Callable[..., Any]:
        codes.extend(m.code for m in gm.modules() if isinstance(m, torch.fx.GraphModule))
        return gm.forward

    backend = aot_autograd(fw_compiler=forward)
    torch.compile(fn, fullgraph=True, dynamic=False, backend=backend)(*args)
    return "\n".join(codes)


CALLS = {
    "gather": lambda x, i: og.gather(x, i, axis=0),
    "gather_elements": lambda x, i: og.gather_elements(x, i, axis=0),
    "gather_nd": lambda x, i: og.gather_nd(x, i.unsqueeze(-1)),
}


@pytest.mark.parametrize("op", sorted(CALLS))
def test_small_compiled_calls_are_torch_operations_large_ones_the_fused_operator(op: str) -> None:
    """The route per call size: torch's operations below 2**18 outputs, else run_v1."""
    native = {"gather": "index_select", "gather_elements": "gather", "gather_nd": "index"}[op]
    small = _graph_of(CALLS[op], torch.zeros(8, 4), torch.zeros(2, 4, dtype=torch.int64))
    assert f"aten.{native}." in small
    assert "cond" not in small
    assert "out_of_range_v1" not in small
    assert "run_v1" not in small
    # 2**18 outputs of single elements (Gather and GatherND: rows of one element): the
    # fused operator where the compiled kernel is built (without it, it would run torch's
    # kernels: the graph's own code serves).
    kernel = compiled_available()
    large = _graph_of(CALLS[op], torch.zeros(1 << 18), torch.zeros(1 << 18, dtype=torch.int64))
    assert ("run_v1" in large) == kernel
    # Long rows: inductor copies them as fast as the kernel, so they stay torch's too.
    rows = _graph_of(CALLS[op], torch.zeros(64, 4096), torch.zeros(64, 4096, dtype=torch.int64))
    assert ("run_v1" in rows) == (kernel and op == "gather_elements")
    # Complex data: inductor generates no code for it, so the fused operator serves.
    tiny = torch.zeros(8, 4, dtype=torch.complex64)
    assert "run_v1" in _graph_of(CALLS[op], tiny, torch.zeros(2, 4, dtype=torch.int64))


def _bad_values(n: int) -> list[int]:
    """Indices out of range for an axis of ``n``: every side of every wrap a kernel might do.

    ``-n - 1`` counts from the end to -1, which ``index_select`` and advanced indexing
    would count from the end again; ``-2 * n`` to ``-n``; ``2 * n - 1`` and beyond.
    """
    return [-n - 1, -2 * n, -2 * n - 1, n, 2 * n - 1, 1 << 40, -(1 << 63)]


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32], ids=str)
@pytest.mark.parametrize("op", sorted(CALLS))
def test_small_compiled_calls_raise_inductors_error_for_every_index_out_of_range(
    op: str, dtype: torch.dtype
) -> None:
    """The compiled kernel's own check: a RuntimeError, never a value (README, semantics)."""
    n = 8
    f = _compile(CALLS[op])
    data = torch.arange(float(n))
    good = torch.tensor([0, -1, -n, n - 1], dtype=dtype)
    want = run_oracle("gather", (data.numpy(), good.numpy()), {"axis": 0}, 13, True)
    assert_identical(f(data, good).numpy(), want)
    info = torch.iinfo(dtype)
    for value in _bad_values(n):
        if not info.min <= value <= info.max:
            continue
        bad = torch.tensor([0, 1, value, 2], dtype=dtype)
        with pytest.raises(RuntimeError, match="index out of bounds"):
            f(data, bad)


@pytest.mark.parametrize("op", sorted(CALLS))
def test_large_compiled_calls_raise_the_eager_index_error(op: str) -> None:
    """The fused operator (the compiled kernel) raises the eager IndexError, message and all."""
    if not compiled_available():
        pytest.skip("large compiled calls run run_v1 only where the compiled kernel is built")
    n = 1 << 18
    data, indices = torch.zeros(n), torch.zeros(n, dtype=torch.int64)
    indices[n - 3] = -n - 1
    with pytest.raises(IndexError) as eager:
        CALLS[op](data, indices)
    assert f"index {-n - 1} at position ({n - 3}" in str(eager.value)
    with pytest.raises(IndexError) as compiled:
        _compile(CALLS[op])(data, indices)
    assert str(compiled.value) == str(eager.value)


def test_compiled_gather_nd_of_axes_of_different_sizes_with_dynamic_shapes() -> None:
    """Coordinates into axes of 8 and 4, symbolic shapes: values, then the compiled error."""
    f = _compile(lambda x, i: og.gather_nd(x, i), dynamic=True)
    x = torch.arange(96.0).reshape(8, 4, 3)
    for n in (2, 5):
        i = torch.tensor([[0, -1], [7, 3], [-8, 0], [3, 2], [1, 1]])[:n]
        want = run_oracle("gather_nd", (x.numpy(), i.numpy()), {"batch_dims": 0}, 13, True)
        assert_identical(f(x, i).numpy(), want)
    for bad in ([[0, -1], [7, 4]], [[0, -5], [7, 3]], [[-9, 0], [1, 1]], [[8, 0], [1, 1]]):
        with pytest.raises(RuntimeError, match="index out of bounds"):
            f(x, torch.tensor(bad))


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_the_compiled_check_holds_on_other_compiler_backends(backend: str) -> None:
    """Dynamo's other backends: ``eager`` runs the eager call (its IndexError), ``aot_eager``
    torch's kernels on the counted indices (their own error)."""
    f = torch.compile(lambda x, i: og.gather(x, i, axis=1), fullgraph=True, backend=backend)
    x = torch.arange(15.0).reshape(3, 5)
    i = torch.tensor([[0, -1], [4, -5]])
    want = run_oracle("gather", (x.numpy(), i.numpy()), {"axis": 1}, 13, True)
    assert_identical(f(x, i).numpy(), want)
    for value in _bad_values(5):
        bad = torch.tensor([[0, -1], [value, 2]])
        with pytest.raises((IndexError, RuntimeError), match="out of") as error:
            f(x, bad)
        if backend == "eager":
            assert f"index {value} at position (1, 0)" in str(error.value)
