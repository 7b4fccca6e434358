"""``ExportedProgram.run_decompositions()`` lowers ``onnx_gather::run_v1`` to aten (issue 54, item 4).

``torch.export.export`` keeps each recorded call as one ``run_v1``; torch's default
decomposition table turns it into aten operators (a ``torch.cond`` whose branch raises the
library's IndexError through ``onnx_gather::out_of_range_v1``, a ``torch.while_loop``
of rounds for a reduction) that compute the eager call's bits: every reduction,
duplicates applied in order, int32 and int64 indices, negative ones, checked or not.
"""

from __future__ import annotations

import importlib
import re
import warnings
from typing import Any

import numpy as np
import pytest
from helpers import assert_identical

import onnx_gather as og
from onnx_gather import openvino

pytestmark = pytest.mark.backend("torch")
torch = pytest.importorskip("torch")

REDUCTIONS = ["none", "add", "mul", "max", "min"]
INDEX_TYPES = ["int32", "int64"]
#: Along axis 1 of 4 x 5 data: negatives, and each row writes one column two or three
#: times (row 2: column 3 three times; row 3: -1 and 4 are one column).
ELEMENT_INDICES = [[0, -1, 0], [1, 2, 1], [3, 3, 3], [4, -1, 0]]
#: Rows of 5 x 3 data: row 4 three times (-1 and 4), row 0 twice.
ND_INDICES = [[4], [0], [-1], [2], [0], [4]]
#: Data whose products, sums, maxima and minima depend on the order updates land in
#: (float32 rounding), with a NaN, signed zeros and NaN-free rows.
DATA = np.array(
    [[1.5, -0.0, 3.0, 1e30, 7.0], [0.1, 0.2, np.nan, -2.0, 0.0], [1e-30, 3.0, -1.0, 0.3, 9.0],
     [2.0, -4.0, 0.7, 1e20, -0.0]], np.float32,
)  # fmt: skip
ND_DATA = np.arange(15, dtype=np.float32).reshape(5, 3) / 7


def _custom_ops(program: Any) -> set[str]:
    """The non-aten operators of every graph of ``program`` (condition branches included)."""
    return {
        str(node.target)
        for module in program.graph_module.modules()
        if isinstance(module, torch.fx.GraphModule)
        for node in module.graph.nodes
        if node.op == "call_function"
        and isinstance(node.target, torch._ops.OpOverload)
        and node.target.namespace != "aten"
    }


def _decomposed(fn: Any, *args: Any) -> Any:
    """``fn`` exported, with ``run_v1`` kept, then decomposed: no ``run_v1`` left."""

    class Module(torch.nn.Module):
        def forward(self, *inputs: Any) -> Any:
            return fn(*inputs)

    exported = torch.export.export(Module(), args)
    assert "onnx_gather.run_v1.default" in _custom_ops(exported)
    program = exported.run_decompositions()
    assert _custom_ops(program) <= {"onnx_gather.out_of_range_v1.default"}
    return program.module()


def _bits(x: Any) -> np.ndarray:
    x = x.detach()
    return (torch.view_as_real(x) if x.is_complex() else x).numpy()


def _updates(shape: tuple[int, ...], seed: int) -> Any:
    rng = np.random.default_rng(seed)
    values = rng.standard_normal(shape).astype(np.float32) * 1e7
    values.flat[::5] = -0.0
    values.flat[3] = np.nan
    return torch.from_numpy(values)


@pytest.mark.parametrize("index_type", INDEX_TYPES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_scatter_elements(reduction: str, index_type: str) -> None:
    data, updates = torch.from_numpy(DATA.copy()), _updates((4, 3), 1)
    indices = torch.tensor(ELEMENT_INDICES, dtype=getattr(torch, index_type))

    def fn(d: Any, i: Any, u: Any) -> Any:
        return og.scatter_elements(d, i, u, axis=1, reduction=reduction)

    program = _decomposed(fn, data, indices, updates)
    assert_identical(_bits(program(data, indices, updates)), _bits(fn(data, indices, updates)))
    bad = indices.clone()
    bad[2, 1] = -6
    valid = re.escape("valid indices are [-5, 4]")
    with pytest.raises(IndexError, match=r"index -6 at position \(2, 1\) .*" + valid):
        program(data, bad, updates)


@pytest.mark.parametrize("index_type", INDEX_TYPES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_scatter_nd(reduction: str, index_type: str) -> None:
    data, updates = torch.from_numpy(ND_DATA.copy()), _updates((6, 3), 2)
    indices = torch.tensor(ND_INDICES, dtype=getattr(torch, index_type))

    def fn(d: Any, i: Any, u: Any) -> Any:
        return og.scatter_nd(d, i, u, reduction=reduction)

    program = _decomposed(fn, data, indices, updates)
    assert_identical(_bits(program(data, indices, updates)), _bits(fn(data, indices, updates)))
    bad = indices.clone()
    bad[3, 0] = 5
    with pytest.raises(IndexError, match=r"index 5 at position \(3, 0\) .*valid indices are"):
        program(data, bad, updates)


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_unchecked_scatters_drop_what_is_out_of_range(reduction: str) -> None:
    data, updates = torch.from_numpy(DATA.copy()), _updates((4, 3), 3)
    indices = torch.tensor([[0, 7, 0], [1, -9, 1], [3, 3, 5], [4, -1, 0]])

    def fn(d: Any, i: Any, u: Any) -> Any:
        return og.scatter_elements(d, i, u, axis=1, reduction=reduction, check_bounds=False)

    program = _decomposed(fn, data, indices, updates)
    assert_identical(_bits(program(data, indices, updates)), _bits(fn(data, indices, updates)))


@pytest.mark.parametrize(
    ("dtype", "reduction"),
    [("uint32", "max"), ("uint64", "add"), ("int8", "mul"), ("bool", "add"), ("complex64", "mul"),
     ("float16", "add"), ("bfloat16", "none")],
)  # fmt: skip
def test_other_types(dtype: str, reduction: str) -> None:
    """Types whose writes go as other bits (wide unsigned) or part by part (complex)."""
    rng = np.random.default_rng(4)
    wide = torch.from_numpy(rng.integers(0, 2**31, (4, 5)).astype(np.int64) * 3)
    if dtype == "complex64":
        data = torch.complex(torch.from_numpy(DATA.copy()), torch.from_numpy(DATA[::-1].copy()))
    elif dtype in ("float16", "bfloat16"):
        data = torch.from_numpy(DATA.copy()).clamp(-60000, 60000).to(getattr(torch, dtype))
    else:
        data = wide.to(getattr(torch, dtype))
    updates = data[:, :3].flip(0).contiguous()
    indices = torch.tensor(ELEMENT_INDICES)

    def fn(d: Any, i: Any, u: Any) -> Any:
        return og.scatter_elements(d, i, u, axis=1, reduction=reduction)

    program = _decomposed(fn, data, indices, updates)
    got, want = program(data, indices, updates), fn(data, indices, updates)
    assert got.dtype == want.dtype
    bits = {"bfloat16": torch.int16, "uint32": torch.int32, "uint64": torch.int64}.get(dtype)
    if bits is not None:  # (types NumPy lacks: their bits)
        got, want = got.view(bits), want.view(bits)
    assert_identical(_bits(got), _bits(want))


def test_scatter_alias_and_many_duplicates() -> None:
    """``og.scatter`` (ScatterElements' variant), and one element written by every update."""
    data = torch.from_numpy(DATA.copy())
    indices = torch.full((4, 30), 2)
    updates = _updates((4, 30), 5)

    def fn(d: Any, i: Any, u: Any) -> Any:
        return og.scatter(d, i[:, :3], u[:, :3], axis=1), og.scatter_elements(
            d, i, u, axis=1, reduction="add"
        )

    program = _decomposed(fn, data, indices, updates)
    for got, want in zip(program(data, indices, updates), fn(data, indices, updates), strict=True):
        assert_identical(_bits(got), _bits(want))


def test_recorded_gathers() -> None:
    """The gathers an exported program keeps as ``run_v1``: complex data (inductor has no code
    for it), OpenVINO's Gather of it (zeros for a bad index)."""
    data = torch.complex(torch.from_numpy(DATA.copy()), torch.from_numpy(-DATA))
    indices = torch.tensor(ELEMENT_INDICES, dtype=torch.int32)

    def fn(d: Any, i: Any) -> Any:
        return (
            og.gather(d, i, axis=1),
            og.gather_elements(d, i, axis=1),
            og.gather_nd(d, i[:, :1].to(torch.int64) % 4),
            openvino.gather(d, i, axis=1),
        )

    program = _decomposed(fn, data, indices)
    for got, want in zip(program(data, indices), fn(data, indices), strict=True):
        assert_identical(_bits(got), _bits(want))
    bad = indices.clone()
    bad[1, 2] = 5
    with pytest.raises(IndexError, match=r"Gather-13: index 5 at position \(1, 2\)"):
        program(data, bad)


def test_export_keeps_run_v1_and_compile_still_falls_back_to_it() -> None:
    """After a decomposition, ``torch.compile`` still runs ``run_v1`` (inductor's table lacks it)."""
    data, updates = torch.from_numpy(DATA.copy()), _updates((4, 3), 6)
    indices = torch.tensor(ELEMENT_INDICES)

    def fn(d: Any, i: Any, u: Any) -> Any:
        return og.scatter_elements(d, i, u, axis=1, reduction="mul")

    _decomposed(fn, data, indices, updates)
    torch._dynamo.reset()
    with warnings.catch_warnings():
        # Importing inductor imports torch.utils.mkldnn, which warns about TorchScript.
        warnings.filterwarnings("ignore", "`torch.jit.script_method` is deprecated")
        importlib.import_module("torch._inductor.compile_fx")
    compiled = torch.compile(fn, fullgraph=True)
    assert_identical(_bits(compiled(data, indices, updates)), _bits(fn(data, indices, updates)))


def _same_error(program: Any, fn: Any, *args: Any) -> None:
    """The program raises the eager call's IndexError, message and all."""
    with pytest.raises(IndexError) as eager:
        fn(*args)
    with pytest.raises(IndexError, match=re.escape(str(eager.value))):
        program(*args)


def _identical(program: Any, fn: Any, *args: Any) -> None:
    got, want = program(*args), fn(*args)
    for g, w in zip(
        *((x,) if isinstance(x, torch.Tensor) else x for x in (got, want)), strict=True
    ):
        assert g.dtype == w.dtype
        bits = {torch.uint64: torch.int64}.get(g.dtype)  # (NumPy holds it; torch's equal not)
        g, w = (g, w) if bits is None else (g.view(bits), w.view(bits))
        assert_identical(_bits(g), _bits(w))


@pytest.mark.parametrize("index_type", INDEX_TYPES)
def test_openvino_scatter_update(index_type: str) -> None:
    """Duplicates (the last wins), 2-D indices; a negative index is an error, unchecked dropped."""
    data, updates = torch.from_numpy(DATA.copy()), _updates((4, 2, 2), 7)
    indices = torch.tensor([[1, 3], [1, 0]], dtype=getattr(torch, index_type))

    def fn(d: Any, i: Any, u: Any) -> Any:
        return openvino.scatter_update(d, i, u, axis=1)

    def dropping(d: Any, i: Any, u: Any) -> Any:
        return openvino.scatter_update(d, i, u, axis=1, check_bounds=False)

    program = _decomposed(fn, data, indices, updates)
    _identical(program, fn, data, indices, updates)
    unchecked = _decomposed(dropping, data, indices, updates)
    for bad in (-1, 5):
        wrong = indices.clone()
        wrong[1, 0] = bad
        _same_error(program, fn, data, wrong, updates)
        _identical(unchecked, dropping, data, wrong, updates)


@pytest.mark.parametrize("use_init_val", [True, False])
@pytest.mark.parametrize("reduction", ["none", "sum", "prod", "min", "max", "mean"])
def test_openvino_scatter_elements_update(reduction: str, use_init_val: bool) -> None:
    data, updates = torch.from_numpy(DATA.copy()), _updates((4, 3), 8)
    index_type = torch.int32 if use_init_val else torch.int64
    indices = torch.tensor(ELEMENT_INDICES, dtype=index_type)

    def fn(d: Any, i: Any, u: Any) -> Any:
        return openvino.scatter_elements_update(
            d, i, u, axis=1, reduction=reduction, use_init_val=use_init_val
        )

    program = _decomposed(fn, data, indices, updates)
    _identical(program, fn, data, indices, updates)
    bad = indices.clone()
    bad[2, 1] = -6
    _same_error(program, fn, data, bad, updates)


@pytest.mark.parametrize("use_init_val", [True, False])
def test_openvino_integer_mean(use_init_val: bool) -> None:
    """Integer means round down (toward -inf), of wide unsigned types too; unchecked drops."""
    rng = np.random.default_rng(9)
    data = torch.from_numpy(rng.integers(-1000, 1000, (4, 5)).astype(np.int32))
    updates = torch.from_numpy(rng.integers(-1000, 1000, (4, 3)).astype(np.int32))
    big = torch.from_numpy(rng.integers(0, 2**63, (4, 5), dtype=np.int64)).view(torch.uint64)
    spread = torch.from_numpy(rng.integers(0, 2**63, (4, 3), dtype=np.int64)).view(torch.uint64)
    indices = torch.tensor(ELEMENT_INDICES)

    def mean(x: Any, i: Any, y: Any, check_bounds: bool = True) -> Any:
        return openvino.scatter_elements_update(
            x, i, y, axis=1, reduction="mean", use_init_val=use_init_val, check_bounds=check_bounds
        )

    def fn(d: Any, i: Any, u: Any, b: Any, s: Any) -> Any:
        return mean(d, i, u), mean(d.to(torch.int8), i, u.to(torch.int8)), mean(b, i, s)

    def dropping(d: Any, i: Any, u: Any) -> Any:
        return mean(d, i, u, check_bounds=False)

    program = _decomposed(fn, data, indices, updates, big, spread)
    _identical(program, fn, data, indices, updates, big, spread)
    wrong = indices.clone()
    wrong[0, 2], wrong[3, 0] = 5, -7
    _same_error(program, fn, data, wrong, updates, big, spread)
    _identical(_decomposed(dropping, data, indices, updates), dropping, data, wrong, updates)


@pytest.mark.parametrize("reduction", ["none", "sum", "sub", "prod", "min", "max"])
def test_openvino_scatter_nd_update(reduction: str) -> None:
    """Rows written twice and three times; bool's sub is XOR, counted."""
    data, updates = torch.from_numpy(ND_DATA.copy()), _updates((6, 3), 10)
    indices = torch.tensor(ND_INDICES, dtype=torch.int32)

    def fn(d: Any, i: Any, u: Any) -> Any:
        return openvino.scatter_nd_update(d, i, u, reduction=reduction), openvino.scatter_nd_update(
            d > 1, i, u > 0, reduction=reduction
        )

    program = _decomposed(fn, data, indices, updates)
    _identical(program, fn, data, indices, updates)
    bad = indices.clone()
    bad[3, 0] = 5
    _same_error(program, fn, data, bad, updates)


@pytest.mark.parametrize("mode", ["linear", "circular"])
def test_tensor_scatter_that_writes_nothing(mode: str) -> None:
    """Empty updates (``run_v1`` in an exported program): the cache, after the index check."""
    cache = torch.from_numpy(DATA.copy()).reshape(2, 5, 2)
    update = cache[:, :0]
    write = torch.tensor([5, 0]) if mode == "linear" else torch.tensor([9, 0])

    def fn(c: Any, u: Any, w: Any) -> Any:
        return og.tensor_scatter(c, u, w, axis=1, mode=mode)

    program = _decomposed(fn, cache, update, write)
    _identical(program, fn, cache, update, write)
    for bad in ([0, -1], [6, 0]) if mode == "linear" else ([0, -3],):
        _same_error(program, fn, cache, update, torch.tensor(bad))


def test_dynamic_shapes() -> None:
    """Sizes as ``torch.export.Dim``: a gather, ScatterElements and OpenVINO's scatters."""
    data, updates = torch.from_numpy(DATA.copy()), _updates((4, 3), 11)
    indices, written = torch.tensor(ELEMENT_INDICES), torch.tensor([1, 3, 1])

    def fn(d: Any, i: Any, u: Any, w: Any, v: Any) -> Any:
        return (
            og.gather(d.to(torch.complex64), i, axis=1),
            og.scatter_elements(d, i, u, axis=1, reduction="add"),
            openvino.scatter_elements_update(d, i, u, axis=1, reduction="mean"),
            openvino.scatter_update(d, w, v, axis=1),
        )

    class Module(torch.nn.Module):
        def forward(self, d: Any, i: Any, u: Any, w: Any, v: Any) -> Any:
            return fn(d, i, u, w, v)

    rows, count = torch.export.Dim("rows", min=2), torch.export.Dim("count", min=2)
    exported = torch.export.export(
        Module(), (data, indices, updates, written, _updates((4, 3), 12)),
        dynamic_shapes=({0: rows}, {0: rows}, {0: rows}, {0: count}, {0: rows, 1: count}),
    )  # fmt: skip
    program = exported.run_decompositions()
    assert _custom_ops(program) <= {"onnx_gather.out_of_range_v1.default"}
    rng = np.random.default_rng(13)
    more = torch.from_numpy(rng.standard_normal((6, 5)).astype(np.float32))
    args = (more, torch.from_numpy(rng.integers(-5, 5, (6, 3))), _updates((6, 3), 14))
    _identical(program.module(), fn, *args, torch.tensor([4, 0, 4, 2]), _updates((6, 4), 15))
    _same_error(program.module(), fn, *args, torch.tensor([4, 0, -1, 2]), _updates((6, 4), 15))
