"""ONNX Runtime (CPU) and the ONNX reference evaluator on the same examples.

Their own errors and gaps come back as :class:`Gap` outcomes; :func:`classify` names every
kind of agreement and divergence with the oracle.
"""

from __future__ import annotations

import importlib
import re
from typing import Any

import numpy as np

from onnx_gather import _ops
from onnx_gather._conformance.libraries import type_name
from onnx_gather._conformance.runner import Outcome, difference
from onnx_gather._conformance.strategies import Example
from onnx_gather._memo import Memo


class Gap(Exception):
    """A peer cannot run this example at all (a type without a kernel, one its API cannot feed)."""


def _opset(example: Example) -> int:
    """The ONNX opset of the node that computes ``example`` (a variant's own, e.g. 13)."""
    op = _ops.get(example.op)
    if op.onnx_opset is not None:
        return op.onnx_opset
    opset = op.default_opset if example.opset is None else example.opset
    assert opset is not None  # an operator without a default opset is a variant (above)
    return opset


def model(example: Example) -> Any:
    """The single-node ONNX model for ``example``'s operator, opset, types, ranks and attributes.

    Its dims are symbolic, so one model serves every example of the same signature (built
    once and cached with its session). OpenVINO GatherElements-6 examples run as ONNX
    GatherElements-13: every input valid for the first is valid for the second, with the
    same result.
    """
    op = _ops.get(example.op)
    indices = _onnx_indices(example)
    types = [example.dtype_name, str(indices.dtype)]
    shapes = [[f"d{i}" for i in range(example.data.ndim)], [f"i{i}" for i in range(indices.ndim)]]
    if example.updates is not None:
        types.append(type_name(example.updates.dtype))
        shapes.append([f"u{i}" for i in range(example.updates.ndim)])
    # (Built as data, indices, updates: in the node's order.)
    return op.onnx_model(
        example.opset, op.in_order(*types), op.in_order(*shapes), example.attributes
    )


def _onnx_indices(example: Example) -> np.ndarray:
    """The example's indices in a type ONNX lists for the operator (same values).

    ONNX lists int64 alone for GatherND; the library also takes int32.
    """
    allowed = _ops.get(example.op).onnx_index_types
    if str(example.indices.dtype) in allowed or str(example.indices.dtype) not in ("int32",):
        return example.indices
    return example.indices.astype(allowed[-1])


def _key(example: Example) -> tuple[Any, ...]:
    return (
        _ops.get(example.op).op_type,
        _opset(example),
        example.dtype_name,
        str(_onnx_indices(example).dtype),
        example.data.ndim,
        example.indices.ndim,
        None
        if example.updates is None
        else (type_name(example.updates.dtype), example.updates.ndim),
        tuple(sorted(example.attributes.items())),
    )


def _feed(example: Example) -> dict[str, np.ndarray]:
    feed = {"data": _fed(example.data), "indices": _onnx_indices(example).copy(order="C")}
    if example.updates is not None:
        feed["updates"] = _fed(example.updates)
    return feed


def _fed(x: np.ndarray) -> np.ndarray:
    # Not np.ascontiguousarray: that makes 0-d arrays 1-d.
    x = x.copy(order="C")
    if x.dtype.kind in "SUT" or x.dtype.kind == "O":
        x = np.array([_text(v) for v in x.reshape(-1)], dtype=object).reshape(x.shape)
    return x


def _text(x: Any) -> str:
    return x.decode("latin-1") if isinstance(x, bytes) else str(x)


def _as_planned(example: Example, value: np.ndarray) -> np.ndarray:
    """The ONNX node's ``value`` in the shape the operator's plan gives its result.

    A variant may give the ONNX node's elements another shape (OpenVINO GatherND-5
    flattens the batch dims: the plan's ``result_shape``); every other value as it is.
    """
    op = _ops.get(example.op)
    if op.onnx_opset is None:
        return value
    shapes = (tuple(example.data.shape), tuple(example.indices.shape))
    dtypes = (example.dtype_name, str(example.indices.dtype))
    attributes = tuple(example.attributes[name] for name, _ in op.attributes)
    version = op.resolve(example.opset)
    plan = op.plan(version, shapes, dtypes, attributes, example.check_bounds, kept=False)
    return value if plan.result_shape is None else value.reshape(plan.result_shape)


def comparable(want: np.ndarray) -> np.ndarray:
    """The oracle's value in the form the ONNX peers return it (strings as Python str)."""
    if want.dtype.kind in "OUST":
        flat = [_text(x) for x in want.reshape(-1)]
        return np.array(flat, dtype=object).reshape(want.shape)
    return want


class _Cached:
    """A bounded cache of per-model runners (sessions, evaluators)."""

    def __init__(self) -> None:
        self._cache: Memo[tuple[Any, ...], Any] = Memo(256)

    def _get(self, example: Example) -> Any:
        runner = self._cache.get_or_make(_key(example), lambda: self._built(example))
        if isinstance(runner, Exception):
            raise runner
        return runner

    def _built(self, example: Example) -> Any:
        """The runner for ``example``'s model, or the peer's own rejection of it."""
        try:
            return self._build(model(example))
        except Exception as exc:  # recorded as the peer's answer
            return exc

    def _build(self, onnx_model: Any) -> Any:
        raise NotImplementedError

    def __call__(self, example: Example) -> Outcome:
        """Run ``example``; an exception the peer raises is the outcome's ``error``."""
        try:
            runner = self._get(example)
        except Exception as exc:
            return Outcome(error=exc)
        try:
            value = self._run(runner, _feed(example))
        except Exception as exc:
            return Outcome(error=exc)
        return Outcome(value=_as_planned(example, np.asarray(value)))

    def _run(self, runner: Any, feed: dict[str, np.ndarray]) -> Any:
        raise NotImplementedError


class OnnxRuntime(_Cached):
    """ONNX Runtime's CPU execution provider, one thread."""

    name = "onnxruntime"

    def __init__(self) -> None:
        super().__init__()
        self.ort = importlib.import_module("onnxruntime")
        # Its errors come back as exceptions; the log would repeat each one on stderr.
        self.ort.set_default_logger_severity(4)

    def _build(self, onnx_model: Any) -> Any:
        options = self.ort.SessionOptions()
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        options.log_severity_level = 4
        try:
            return self.ort.InferenceSession(
                onnx_model.SerializeToString(), options, providers=["CPUExecutionProvider"]
            )
        except Exception as exc:
            text = str(exc)
            if "not currently registered or supported" in text:
                raise Gap("type not supported") from exc
            if "NOT_IMPLEMENTED" in text or "Could not find an implementation" in text:
                raise Gap("no CPU kernel for this type") from exc
            if "INVALID_GRAPH" in text and onnx_model.graph.node[0].op_type == "Scatter":
                # Deprecated in opset 11: ORT refuses the model (ScatterElements-11 serves).
                raise Gap("no Scatter from opset 11 (deprecated)") from exc
            raise

    def _run(self, runner: Any, feed: dict[str, np.ndarray]) -> Any:
        if feed["data"].dtype.name == "bfloat16":
            # The Python API converts no ml_dtypes array (and returns none): a known gap.
            raise Gap("the Python API cannot feed bfloat16 from NumPy")
        try:
            return runner.run(None, feed)[0]
        except Exception as exc:
            text = str(exc)
            # Its binding takes no 0-d bool array ("Unable to handle object of type bool").
            if "Unable to handle object" in text or "Numpy_type" in text:
                raise Gap("the Python API cannot feed this array") from exc
            # ScatterND's reductions have kernels for some types only, found when it runs.
            if "data type is not supported" in text:
                raise Gap("no CPU kernel for this type and reduction") from exc
            raise


class ReferenceEvaluator(_Cached):
    """``onnx.reference.ReferenceEvaluator``."""

    name = "onnx.reference"

    def __init__(self) -> None:
        super().__init__()
        self.evaluator = importlib.import_module("onnx.reference").ReferenceEvaluator

    def _build(self, onnx_model: Any) -> Any:
        return self.evaluator(onnx_model)

    def _run(self, runner: Any, feed: dict[str, np.ndarray]) -> Any:
        return runner.run(None, feed)[0]


def invalid_reason(example: Example, want: Outcome) -> str:
    """Why the oracle rejects ``example``, as a short class name."""
    error = want.error
    if isinstance(error, IndexError):
        # Outside [-s, s-1]: every version counts negative indices from the end.
        return "out-of-range index"
    if isinstance(error, TypeError):
        return "type not in the opset's list (bfloat16 before 13)"
    return str(error)  # the oracle's ValueError names the rule that failed


def classify(example: Example, got: Outcome, want: Outcome, compare: Any = None) -> str:
    """Name how a peer's outcome relates to the oracle's.

    ``compare`` maps the oracle's value to the form the peer returns (e.g. strings as
    Python str); default: unchanged.
    """
    if want.error is not None:
        reason = invalid_reason(example, want)
        if got.error is not None:
            if isinstance(got.error, Gap):
                return f"gap: {got.error} ({example.dtype_name})"
            return f"rejects: {reason}"
        return f"ACCEPTS: {reason}"
    assert want.value is not None
    if got.error is not None:
        if isinstance(got.error, Gap):
            return f"gap: {got.error} ({example.dtype_name})"
        return f"ERROR on valid input: {type(got.error).__name__} ({_short(got.error)})"
    assert got.value is not None
    reference = compare(want.value) if compare is not None else want.value
    diff = difference(got.value, reference)
    if diff is None:
        return "agrees"
    if diff.startswith("shape"):
        return "WRONG shape"
    if diff.startswith("dtype"):
        return f"WRONG dtype ({got.value.dtype} for {reference.dtype})"
    kinds = float_differences(got.value, reference)
    if kinds == {"which NaN"}:
        return "NaN payload changed"
    if kinds:
        return f"WRONG values ({', '.join(sorted(kinds))})"
    return "WRONG values"


def float_differences(got: np.ndarray, want: np.ndarray) -> set[str] | None:
    """How floats differ element by element, where every difference is one of three kinds.

    ``which NaN`` (both NaN, other bits), ``a NaN dropped`` (a number where the oracle has
    NaN), ``signed zero`` (+0.0 for -0.0 or back); None if any other difference occurs.
    """
    floating = want.dtype.kind in "fc" or want.dtype.name == "bfloat16"  # (ml_dtypes: kind V)
    if not floating or got.dtype != want.dtype:
        return None
    if want.dtype.kind == "c":
        real = float_differences(got.real.copy(), want.real.copy())
        imag = float_differences(got.imag.copy(), want.imag.copy())
        return None if real is None or imag is None else real | imag
    a, b = got.reshape(-1), want.reshape(-1)
    width = np.dtype(f"u{want.dtype.itemsize}")
    differ = np.flatnonzero(a.view(width) != b.view(width))
    kinds = set()
    with np.errstate(invalid="ignore"):  # (a signalling NaN widened)
        pairs = zip(a[differ].astype(np.float64), b[differ].astype(np.float64), strict=True)
    for x, y in pairs:
        if np.isnan(x) and np.isnan(y):
            kinds.add("which NaN")
        elif np.isnan(y):
            kinds.add("a NaN dropped")
        elif x == y == 0:
            kinds.add("signed zero")
        else:
            return None
    return kinds


def _short(error: BaseException) -> str:
    text = str(error).strip().splitlines()[0] if str(error).strip() else ""
    for marker in ("[ONNXRuntimeError] : ", "Non-zero status code returned while running "):
        text = text.split(marker)[-1]
    # Numbers vary from example to example; the class is the message's shape.
    return re.sub(r"-?\d+", "N", text)[:90]


def known_divergence(example: Example, cls: str) -> str | None:
    """If ``cls`` is a known ONNX Runtime divergence for ``example``, the explanation.

    Each entry was found by the conformance campaign and is documented, with its minimal
    example, in docs/conformance.md.
    """
    if cls.startswith("gap: "):
        return cls
    reduction = example.attributes.get("reduction")
    if cls == "NaN payload changed" and reduction in ("add", "mul", "max", "min"):
        return "a NaN from a reduction: ours is the canonical one (which NaN hardware keeps varies)"
    if (
        reduction in ("max", "min")
        and cls.startswith("WRONG values (")
        and (
            set(cls[len("WRONG values (") : -1].split(", "))
            <= {"a NaN dropped", "signed zero", "which NaN"}
        )
    ):
        return "max/min: a NaN loses to a number, -0.0 equals +0.0 (std::max, not IEEE maximum)"
    if cls == "WRONG values" and example.op == _ops.GATHER.name and example.dtype_name == "string":
        axis = example.attributes["axis"] % example.data.ndim
        if int(np.prod(example.data.shape[axis + 1 :], dtype=np.int64)) > 1:
            return "Gather on strings copies only the first string of each block"
    return None
