"""Property tests: random calls on every library of the session, against the oracle and ORT.

Each example (see ``onnx_gather._conformance.strategies``) runs on every library of the
session that holds its data type and must match the loop oracle: the same bits, or the
same exception type (an IndexError also names the value and its position). Where the
example is valid, ONNX Runtime runs it too and must agree, except for its known gaps
(types it has no kernel for or cannot take from NumPy), which are only counted. OpenVINO
examples also run on OpenVINO's own runtime (CPU plugin), valid or not: it must agree on
valid ones and raise on invalid ones, except for its known gaps and divergences (no
complex or string types, 64-bit types computed in 32 bits, float16 through float32, int64
indices read as int32; docs/conformance.md), which are only counted.

The budget is ONNX_GATHER_EXAMPLES examples per operator (default 100; ``nox -s
conformance`` uses 300; a long campaign sets more). ONNX_GATHER_CONFORMANCE_REPORT names
a JSON file to write the counts to. A failure shrinks to a minimal example; reproduce it
with the ``@reproduce_failure`` line hypothesis prints, or ``--hypothesis-seed``.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import example as hypothesis_example
from libs import LIBS, Library

from onnx_gather import _ops
from onnx_gather._conformance import onnx_peers, openvino_peer
from onnx_gather._conformance.runner import (
    Outcome,
    Tally,
    _present,
    check,
    difference,
    expected,
    inputs,
)
from onnx_gather._conformance.strategies import (
    Example,
    Layout,
    examples,
    numpy_dtype,
)

GATHER = _ops.GATHER.name
ELEMENTS = _ops.GATHER_ELEMENTS.name
OPENVINO = _ops.OPENVINO_GATHER_ELEMENTS.name
ND = _ops.GATHER_ND.name

EXAMPLES = int(os.environ.get("ONNX_GATHER_EXAMPLES", "100"))
REPORT = os.environ.get("ONNX_GATHER_CONFORMANCE_REPORT")
HOLDS = sorted(set().union(*(lib.holds for lib in LIBS)))
TALLY = Tally()
ORT = onnx_peers.OnnxRuntime()  # onnxruntime is a test dependency: no skip
OV = openvino_peer.OpenVINO()  # so is openvino

BUDGET = settings(
    max_examples=EXAMPLES,
    deadline=None,  # JAX compiles each new shape once; time is not the property
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.target, Phase.shrink],
    print_blob=True,
)


#: The scatters' oracle loops over every update in Python: half the budget keeps a CI
#: session's time in check (a long campaign sets ONNX_GATHER_EXAMPLES as for the rest).
SCATTER_BUDGET = settings(BUDGET, max_examples=max(1, EXAMPLES // 2))


def _write_report() -> None:
    if REPORT:
        summary = TALLY.as_dict()
        summary["libraries"] = [lib.name for lib in LIBS]
        summary["budget"] = EXAMPLES
        Path(REPORT).write_text(json.dumps(summary, indent=1))


@pytest.fixture(scope="module", autouse=True)
def _report() -> Iterator[None]:
    yield
    _write_report()


def _conforms(example: Example, onnx_runtime: bool = True) -> None:
    """The oracle's answer on every library, and the peers': OpenVINO's runtime for its
    operators, ONNX Runtime unless ``onnx_runtime`` is False (no ONNX node computes it)."""
    _bound_jax_memory()
    want = check(example, LIBS, TALLY)
    if not example.check_bounds:  # the peers check: they answer the checked call
        want = expected(dataclasses.replace(example, check_bounds=True))
    if example.op in openvino_peer.ATTRIBUTE:
        _openvino_agrees(example, want)
    if want.error is not None or not onnx_runtime:
        return
    got = ORT(example)
    cls = onnx_peers.classify(example, got, want, onnx_peers.comparable)
    TALLY.peer(ORT.name, example.op, cls)
    if cls != "agrees" and onnx_peers.known_divergence(example, cls) is None:
        raise AssertionError(f"ONNX Runtime: {cls} ({got.error or got.value!r})")


def _openvino_agrees(example: Example, want: Outcome) -> None:
    """OpenVINO's runtime: the oracle's value, or an error where the oracle has one."""
    got = OV(example)
    cls = onnx_peers.classify(example, got, want)
    if cls == "agrees" or cls.startswith("rejects: "):
        TALLY.peer(OV.name, example.op, cls)
        return
    known = openvino_peer.known_divergence(example, cls)
    if known is None:
        TALLY.peer(OV.name, example.op, cls)
        raise AssertionError(f"OpenVINO: {cls} ({got.error or got.value!r})")
    # Counted with the reason, so the report tells the known divergences apart.
    TALLY.peer(OV.name, example.op, cls if known == cls else f"{cls}, known: {known}")


_RUNS = [0]


def _bound_jax_memory() -> None:
    """Drop JAX's compiled executables now and then.

    Eager JAX compiles every op for each new shape and keeps the executable: about 2 MB
    per example here, so a long campaign would run out of memory (jax 0.10.2).
    """
    _RUNS[0] += 1
    if _RUNS[0] % 200 == 0 and "jax" in sys.modules:
        sys.modules["jax"].clear_caches()
    if _RUNS[0] % 500 == 0:
        _write_report()  # a long campaign's progress, readable while it runs


@BUDGET
@given(examples(GATHER, HOLDS))
def test_gather(example: Example) -> None:
    _conforms(example)


@BUDGET
@given(examples(ELEMENTS, HOLDS))
def test_gather_elements(example: Example) -> None:
    _conforms(example)


@BUDGET
@given(examples(OPENVINO, HOLDS))
# Found by CI's conformance session: unchecked, an empty axis. OpenVINO, which has no
# unchecked mode, answers the checked call (as ONNX Runtime does): it accepts the index
# and returns whatever its output memory held, a known divergence.
@hypothesis_example(
    Example(OPENVINO, np.array([], np.int32), np.array([0]), {"axis": 0}, None, check_bounds=False)
)
def test_openvino_gather_elements(example: Example) -> None:
    _conforms(example)


@BUDGET
@given(examples(ND, HOLDS))
def test_gather_nd(example: Example) -> None:
    _conforms(example)


@BUDGET
@given(examples(_ops.OPENVINO_GATHER_ND.name, HOLDS))
def test_openvino_gather_nd(example: Example) -> None:
    _conforms(example)


@BUDGET
@given(examples(_ops.OPENVINO_GATHER.name, HOLDS))
# Found by CI's numpy session: int64's smallest index, which the runtime reads as int32 0.
@hypothesis_example(
    Example(_ops.OPENVINO_GATHER.name, np.array([0.5], np.float32), np.array(-(2**63)),
            {"axis": 0, "batch_dims": 0}, 7)
)  # fmt: skip
def test_openvino_gather(example: Example) -> None:
    # (ONNX Gather differs: an index out of range is its error, and it has no batch_dims.)
    _conforms(example, onnx_runtime=False)


@SCATTER_BUDGET
@given(examples(_ops.SCATTER_ELEMENTS.name, HOLDS))
def test_scatter_elements(example: Example) -> None:
    _conforms(example)


@SCATTER_BUDGET
@given(examples(_ops.SCATTER_ND.name, HOLDS))
def test_scatter_nd(example: Example) -> None:
    _conforms(example)


@SCATTER_BUDGET
@given(examples(_ops.SCATTER.name, HOLDS))
def test_scatter(example: Example) -> None:
    _conforms(example)


@SCATTER_BUDGET
@given(examples(_ops.TENSOR_SCATTER.name, HOLDS))
# Reliability round 5: a start plus an offset passed int64's (int32's) limit and wrapped, a
# wrong circular position on every backend (under torch.compile, a write outside the cache).
@hypothesis_example(
    Example(
        _ops.TENSOR_SCATTER.name,
        np.zeros((2, 3, 1), np.float32),
        np.array([2**63 - 1, 2**63 - 2]),
        {"axis": 1, "mode": "circular"},
        24,
        updates=np.arange(1, 7, dtype=np.float32).reshape(2, 3, 1),
    )
)
@hypothesis_example(
    Example(_ops.TENSOR_SCATTER.name, np.zeros((2, 3, 1), np.float32),
            np.array([2**31 - 1, 2**31 - 2], np.int32), {"axis": 1, "mode": "circular"}, 24,
            updates=np.arange(1, 7, dtype=np.float32).reshape(2, 3, 1))
)  # fmt: skip
def test_tensor_scatter(example: Example) -> None:
    _conforms(example)


#: The libraries of this run that hold bfloat16 (none: the test below is deselected by
#: conftest.py's empty-parameter rule, never skipped green).
BF16_LIBS = [lib for lib in LIBS if "bfloat16" in lib.holds]


@pytest.mark.parametrize("libs", [BF16_LIBS] if BF16_LIBS else [], ids=["bfloat16"])
def test_data_a_library_cannot_view_bit_exactly_is_presented_plainly(libs: list[Library]) -> None:
    # Found by the long campaign (JAX without x64, OpenVINO): XLA's CPU transpose flushed
    # the bfloat16 subnormal 0x0001 of this data to zero while the harness made its view,
    # so the call looked as if it had modified its input. The runner now presents such
    # data unviewed and counts it; the call itself must still conform on every library.
    bits = np.array([0x7F7F, 0x7FC1, 0xFFC3, 0x7F80, 0xFF80, 0, 0, 0, 0x8000, 0x7F7F,
                     0x7FC5, 0xFF7F, 0x7FC1, 0xFFC1, 0xFF7F, 1, 0x7FC2, 0x7FC3, 0xFFC4, 0xFF7F],
                    np.uint16)  # fmt: skip
    bfloat16 = numpy_dtype("bfloat16")
    for op, indices, opset in [
        (OPENVINO, np.zeros((0, 1, 1, 2, 5), np.int64), None),
        (ELEMENTS, np.array([[[[[1, 0, 1, 1, 0], [0, 1, 1, 0, 1]]]]]), 13),
    ]:
        example = Example(
            op, bits.view(bfloat16).reshape(2, 1, 1, 2, 5), indices, {"axis": 0}, opset,
            data_layout=Layout(perm=(0, 4, 2, 3, 1), steps=(1,) * 5, offsets=(0,) * 5),
        )  # fmt: skip
        check(example, libs)
        for lib in libs:
            # The call always sees the example's bits, and plainly only where the view
            # itself changes them.
            (data, _), plain = inputs(lib, example)
            assert difference(lib.to_numpy(data), example.data) is None, lib.name
            viewed = _present(lib.asarray, example.data, example.data_layout, example.pad, True)
            assert plain == (difference(lib.to_numpy(viewed), example.data) is not None)


@SCATTER_BUDGET
@given(examples(_ops.OPENVINO_SCATTER_UPDATE.name, HOLDS))
def test_openvino_scatter_update(example: Example) -> None:
    # (No ONNX node computes OpenVINO's scatters: their own runtime is the peer.)
    _conforms(example, onnx_runtime=False)


@SCATTER_BUDGET
@given(examples(_ops.OPENVINO_SCATTER_ELEMENTS_UPDATE.name, HOLDS))
def test_openvino_scatter_elements_update(example: Example) -> None:
    _conforms(example, onnx_runtime=False)


@SCATTER_BUDGET
@given(examples(_ops.OPENVINO_SCATTER_ND_UPDATE.name, HOLDS))
def test_openvino_scatter_nd_update(example: Example) -> None:
    _conforms(example, onnx_runtime=False)
