"""OpenVINO's own runtime (CPU plugin) running its indexing operators.

GatherElements-6, GatherND-5/8, Gather-7/8, ScatterUpdate-3, ScatterElementsUpdate-3/12 and
ScatterNDUpdate-3/15.

The runtime decides what a real OpenVINO model does; this module only feeds it and reads
the result back as NumPy.
"""

from __future__ import annotations

import dataclasses
import importlib
import sys
from typing import Any

import numpy as np

from onnx_gather import _ops
from onnx_gather._conformance.onnx_peers import Gap
from onnx_gather._conformance.runner import Outcome, expected
from onnx_gather._conformance.strategies import Example
from onnx_gather._memo import Memo
from onnx_gather._ops import (
    OPENVINO_GATHER,
    OPENVINO_GATHER_ELEMENTS,
    OPENVINO_GATHER_ND,
    OPENVINO_SCATTER_ELEMENTS_UPDATE,
    OPENVINO_SCATTER_ND_UPDATE,
    OPENVINO_SCATTER_UPDATE,
)

#: The operators the runtime runs, by registry name: each one's attribute (Gather: two).
ATTRIBUTE: dict[str, str | tuple[str, ...]] = {
    OPENVINO_GATHER_ELEMENTS.name: "axis",
    OPENVINO_GATHER_ND.name: "batch_dims",
    OPENVINO_GATHER.name: ("axis", "batch_dims"),
    OPENVINO_SCATTER_UPDATE.name: "axis",
    OPENVINO_SCATTER_ELEMENTS_UPDATE.name: ("axis", "reduction", "use_init_val"),
    OPENVINO_SCATTER_ND_UPDATE.name: ("reduction",),
}
#: The scatters among them.
SCATTERS = frozenset(
    {
        OPENVINO_SCATTER_UPDATE.name,
        OPENVINO_SCATTER_ELEMENTS_UPDATE.name,
        OPENVINO_SCATTER_ND_UPDATE.name,
    }
)

#: ONNX type name -> OpenVINO element type name (``openvino.Type.<name>``).
_OV_TYPES = {
    "bool": "boolean", "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64",
    "uint8": "u8", "uint16": "u16", "uint32": "u32", "uint64": "u64",
    "float16": "f16", "bfloat16": "bf16", "float32": "f32", "float64": "f64",
}  # fmt: skip

#: Data types the CPU plugin computes in 32 bits: it returns them narrowed.
NARROWED = frozenset({"int64", "uint64", "float64"})


def _coordinates_in_range(data: np.ndarray, indices: np.ndarray, batch_dims: int) -> bool:
    """Whether every coordinate of GatherND ``indices`` lies in ``[-s, s-1]`` of its axis."""
    if indices.ndim < 1 or not 0 <= batch_dims < min(data.ndim, indices.ndim):
        return True  # (a shape the runtime rejects before it reads anything)
    k = indices.shape[-1]
    if not 1 <= k <= data.ndim - batch_dims:
        return True
    sizes = np.array(data.shape[batch_dims : batch_dims + k], dtype=np.int64)
    wide = indices.astype(np.int64, copy=False).reshape(-1, k)
    return bool(((wide >= -sizes) & (wide < sizes)).all())


def _crashing_gather(data: np.ndarray, indices: np.ndarray, axis: int, batch_dims: int) -> bool:
    """Whether the CPU plugin stops the process on this Gather (2026.4.1).

    An empty output (no index, or an empty dim of data off ``axis``) when it compiles
    (SIGFPE); a batch dim of size 1, or a ``batch_dims`` below ``-rank(indices)`` (which
    the library refuses), when it runs (a segmentation fault: data (1, 5, 2), indices
    (1, 4), axis 1, batch_dims 1).
    """
    if not -data.ndim <= axis < data.ndim:
        return False  # (rejected before it is compiled)
    if batch_dims < -indices.ndim:
        return True
    off_axis = [n for d, n in enumerate(data.shape) if d != axis % data.ndim]
    b = batch_dims + indices.ndim if batch_dims < 0 else batch_dims
    return indices.size == 0 or 0 in off_axis or 1 in indices.shape[:b]


def stale_fill(data: np.ndarray, indices: np.ndarray, axis: int, version: int) -> bool:
    """Whether the CPU plugin's Gather may answer with stale memory, not zeros.

    Integer or bool data and an index out of range: 2026.4.1 gives zeros for float data,
    and for integer data only at times (``[1, 2, 3, 4, 5]`` int64 at ``[3, 10, -20]`` came
    back ``[4, -20, 8]``).
    """
    if data.dtype.kind not in "biu" or not -data.ndim <= axis < data.ndim or not indices.size:
        return False
    size = data.shape[axis]
    wide = indices.astype(np.int64, copy=False)
    low = -size if version >= 8 else 0
    return bool(((wide < low) | (wide >= size)).any())


def _shape(ov: Any, rank: int | tuple[int, ...]) -> Any:
    """A parameter's shape: ``rank`` dynamic dims, or the static dims given."""
    return ov.PartialShape.dynamic(rank) if isinstance(rank, int) else ov.PartialShape(list(rank))


def _type_name(array: np.ndarray) -> str:
    return "string" if array.dtype.kind in "OUST" else str(array.dtype.name)


class OpenVINO:
    """OpenVINO's CPU plugin running one GatherElements-6 or GatherND-5/8 node.

    One single-node model per (operator, version, data type, index type, data rank,
    indices rank, attribute), with dynamic dims, built with ``openvino.opset6``'s
    ``gather_elements`` (the operator's one version; the newer opset modules re-export it)
    or ``opset5``/``opset8``'s ``gather_nd``, compiled for CPU with
    ``EXECUTION_MODE_HINT=ACCURACY``, and cached.
    """

    name = "openvino (CPU)"
    size = 256

    def __init__(self) -> None:
        if "openvino" not in sys.modules:
            # ``import openvino`` starts its usage telemetry (openvino-telemetry): it counts
            # imports in ~/intel and forks a process to send them, which JAX warns about
            # (a fork in a multithreaded process) and the test suite turns into an error.
            # With the module unimportable, OpenVINO falls back to its own no-op stub.
            sys.modules.setdefault("openvino_telemetry", None)  # type: ignore[arg-type]
        self.ov = importlib.import_module("openvino")
        self.ops = importlib.import_module("openvino.opset6")
        self.opsets = {
            v: importlib.import_module(f"openvino.opset{v}") for v in (3, 4, 5, 7, 8, 12, 15)
        }
        hint = importlib.import_module("openvino.properties.hint")
        self.core = self.ov.Core()
        # Accuracy mode: no lowering of float32 to bfloat16/float16 on CPUs that have them.
        # Not INFERENCE_NUM_THREADS=1: with one thread the plugin's range check is lost, and
        # an out-of-range index returns an empty (0, 0) tensor instead of raising (2026.4.1).
        self.config = {hint.execution_mode: hint.ExecutionMode.ACCURACY, "NUM_STREAMS": 1}
        self._cache: Memo[tuple[Any, ...], Any] = Memo(self.size)

    @property
    def version(self) -> str:
        """``openvino.__version__``, e.g. ``2026.4.1-...``."""
        return str(self.ov.__version__)

    def _element_type(self, name: str) -> Any:
        if name == "string":
            raise Gap("strings are not run (its CPU plugin has no string GatherElements)")
        if name.startswith("complex"):
            raise Gap("no complex element types")
        if name not in _OV_TYPES:
            # Index types outside int32/int64 still build: the operator rejects them.
            return self.ov.Type(np.dtype(name))
        return getattr(self.ov.Type, _OV_TYPES[name])

    def compiled(
        self,
        data_type: str,
        index_type: str,
        rank: int | tuple[int, ...],
        index_rank: int | tuple[int, ...],
        attribute: Any,
        op: str = OPENVINO_GATHER_ELEMENTS.name,
        version: int = 6,
        updates_rank: tuple[str, tuple[int, ...]] | None = None,
    ) -> Any:
        """The compiled model for this signature (cached; a rejection is cached and raised)."""
        key = (data_type, index_type, rank, index_rank, attribute, op, version, updates_rank)
        compiled = self._cache.get_or_make(key, lambda: self._built(key))
        if isinstance(compiled, Exception):
            raise compiled
        return compiled

    def _built(self, key: tuple[Any, ...]) -> Any:
        """The compiled model for ``key``, or the runtime's own rejection of it."""
        try:
            return self._build(*key)
        except Exception as exc:  # recorded as the runtime's answer
            return exc

    def _build(
        self,
        data_type: str,
        index_type: str,
        rank: int | tuple[int, ...],
        index_rank: int | tuple[int, ...],
        attribute: Any,
        op: str,
        version: int,
        updates_rank: tuple[str, tuple[int, ...]] | None = None,
    ) -> Any:
        ov, ops = self.ov, self.ops
        data = ops.parameter(_shape(ov, rank), self._element_type(data_type), name="data")
        indices = ops.parameter(
            _shape(ov, index_rank), self._element_type(index_type), name="indices"
        )
        if op in SCATTERS:
            assert updates_rank is not None
            updates_type, updates_shape = updates_rank
            updates = ops.parameter(
                _shape(ov, updates_shape), self._element_type(updates_type), name="updates"
            )
            node = self._scatter(op, version, data, indices, updates, attribute)
            model = ov.Model([node], [data, indices, updates], f"{op}_{version}")
            return self.core.compile_model(model, "CPU", self.config)
        if op == OPENVINO_GATHER_ND.name:
            node = self.opsets[version].gather_nd(data, indices, attribute)
        elif op == OPENVINO_GATHER.name:
            axis, batch_dims = attribute
            gather = self.opsets[version].gather
            node = gather(data, indices, ops.constant(np.int64(axis)), batch_dims=batch_dims)
        else:
            node = ops.gather_elements(data, indices, attribute)
        model = ov.Model([node], [data, indices], f"{op}_{version}")
        return self.core.compile_model(model, "CPU", self.config)

    def _scatter(
        self, op: str, version: int, data: Any, indices: Any, updates: Any, attribute: Any
    ) -> Any:
        """One scatter node of ``op`` at ``version``.

        ``opset3``'s ScatterUpdate and ScatterElementsUpdate-3, ``opset4``'s
        ScatterNDUpdate-3 (the Python API's first module with it), ``opset12``'s and
        ``opset15``'s newer versions.
        """
        axis = None
        if op != OPENVINO_SCATTER_ND_UPDATE.name:
            axis = self.ops.constant(
                np.int64(attribute[0] if isinstance(attribute, tuple) else attribute)
            )
        if op == OPENVINO_SCATTER_UPDATE.name:
            return self.opsets[3].scatter_update(data, indices, updates, axis)
        if op == OPENVINO_SCATTER_ELEMENTS_UPDATE.name:
            _, reduction, use_init_val = attribute
            if version < 12:
                return self.opsets[3].scatter_elements_update(data, indices, updates, axis)
            return self.opsets[12].scatter_elements_update(
                data, indices, updates, axis, reduction, bool(use_init_val)
            )
        (reduction,) = attribute
        if version < 15:
            return self.opsets[4].scatter_nd_update(data, indices, updates)
        return self.opsets[15].scatter_nd_update(data, indices, updates, reduction)

    def run(
        self,
        data: np.ndarray,
        indices: np.ndarray,
        attribute: Any,
        op: str = OPENVINO_GATHER_ELEMENTS.name,
        version: int = 6,
        updates: np.ndarray | None = None,
    ) -> np.ndarray:
        """Run GatherElements-6, GatherND-``version`` or Gather-``version`` on OpenVINO.

        Its exceptions propagate. ``attribute``: GatherElements' axis, GatherND's
        batch_dims, or Gather's ``(axis, batch_dims)``.

        A compiled model that raised while running is dropped from the cache: after an
        out-of-range error the CPU plugin returns the failed call's output shape, filled
        with stale memory, for a following call with empty indices (2026.4.1), so each
        call gets a model no earlier call has left in such a state.
        """
        data_type, index_type = _type_name(data), _type_name(indices)
        # GatherND's CPU node needs static shapes (2026.4.1: "doesn't support GatherND
        # operation with dynamic rank" for dynamic dims): one model per shape.
        nd = op in (OPENVINO_GATHER_ND.name, OPENVINO_GATHER.name) or op in SCATTERS
        rank = tuple(data.shape) if nd else data.ndim
        index_rank = tuple(indices.shape) if nd else indices.ndim
        # (the updates' own type: the runtime decides on updates of another type than data's)
        updates_rank = None if updates is None else (_type_name(updates), tuple(updates.shape))
        key = (data_type, index_type, rank, index_rank, attribute, op, version, updates_rank)
        compiled = self.compiled(*key)
        try:
            return self._infer(compiled, data, indices, updates)
        except Exception:
            self._cache.pop(key)
            raise

    def _infer(
        self, compiled: Any, data: np.ndarray, indices: np.ndarray, updates: np.ndarray | None
    ) -> np.ndarray:
        data_type = _type_name(data)
        request = compiled.create_infer_request()
        feed: dict[int, Any] = {1: indices.copy(order="C")}  # (not ascontiguousarray: 0-d)
        if data_type == "bfloat16":
            # The Python API maps no NumPy dtype to bf16: hand it the bits in its own tensor.
            for at, x in ((0, data), (2, updates)):
                if x is not None:
                    tensor = self.ov.Tensor(self.ov.Type.bf16, self.ov.Shape(list(x.shape)))
                    tensor.data.view(np.uint16)[...] = x.view(np.uint16)
                    feed[at] = tensor
            request.infer(feed)
            out = request.get_output_tensor(0)
            bits = np.array(out.data.view(np.uint16), copy=True).reshape(tuple(out.shape))
            return bits.view(data.dtype)
        feed[0] = data.copy(order="C")
        if updates is not None:
            feed[2] = updates.copy(order="C")
        request.infer(feed)
        out = request.get_output_tensor(0)
        return np.array(out.data, copy=True).reshape(tuple(out.shape))

    def __call__(self, example: Example) -> Outcome:
        """Run an OpenVINO example; an exception the runtime raises is the outcome's error."""
        if example.op not in ATTRIBUTE:
            msg = f"OpenVINO runs only {', '.join(ATTRIBUTE)} examples, not {example.op}"
            raise ValueError(msg)
        try:
            named = ATTRIBUTE[example.op]
            attribute: Any = (
                tuple(example.attributes[n] for n in named)
                if isinstance(named, tuple)
                else example.attributes[named]
            )
            op = _ops.get(example.op)
            if example.op in SCATTERS:
                return Outcome(value=self._scatter_outcome(example, op, attribute))
            # (GatherElements has one version, 6; the others default to 8)
            opset = 8 if example.opset is None else example.opset
            version = 6 if op.default_opset is None else op.resolve(opset)
            if example.op == OPENVINO_GATHER.name:
                if _crashing_gather(example.data, example.indices, *attribute):
                    # Never run: it stops this process.
                    raise Gap(
                        "its CPU plugin crashes on a Gather with an empty output or a batch "
                        "dim of size 1"
                    )
                if stale_fill(example.data, example.indices, attribute[0], version):
                    raise Gap(
                        "its CPU plugin fills an invalid index of integer data with stale "
                        "memory, not zeros"
                    )
            if example.op == OPENVINO_GATHER_ND.name and not _coordinates_in_range(
                example.data, example.indices, attribute
            ):
                # Never run: the CPU plugin does not check them, and reads outside data (a
                # segmentation fault in this process, 2026.4.1).
                raise Gap("its CPU plugin reads out-of-range GatherND coordinates unchecked")
            value = self.run(example.data, example.indices, attribute, example.op, version)
            return Outcome(value=value)
        except Exception as exc:
            return Outcome(error=exc)

    def _scatter_outcome(self, example: Example, op: Any, attribute: Any) -> np.ndarray:
        """A scatter example's value: run here where it is safe, else in a child process.

        Never run: empty tensors (the CPU plugin crashes on them), and duplicate targets
        where their order changes the result (the texts leave it undefined). Whatever the
        operator refuses (an index out of range, shapes it forbids) runs in a child
        process: ScatterElementsUpdate-12 segfaults on an index below -s, and unchecked
        shapes write outside the plugin's buffers (2026.4.1).
        """
        version = op.numbers[-1] if example.opset is None else op.resolve(example.opset)
        assert example.updates is not None
        arrays = (example.data, example.indices, example.updates)
        if any(x.size == 0 for x in arrays):
            raise Gap("its CPU plugin crashes on empty tensors")
        if any(x.ndim == 0 for x in arrays):
            raise Gap("its CPU plugin's scatters take no 0-d input ('do not support scalar input')")
        reduction = example.attributes.get("reduction", "none")
        flag = example.attributes.get("use_init_val", True)
        if flag is not True and flag is not False:
            raise Gap(f"use_init_val {flag!r}: the runtime's attribute is a bool")
        newer = {OPENVINO_SCATTER_ELEMENTS_UPDATE.name: 12, OPENVINO_SCATTER_ND_UPDATE.name: 15}
        if version < newer.get(example.op, 0) and (
            reduction != "none" or not example.attributes.get("use_init_val", True)
        ):
            raise Gap(f"version {version} has no reduction or use_init_val to give it")
        for x in arrays:  # (types it has no element type for: before anything runs)
            self._element_type(_type_name(x))
        targets = scatter_targets(example)
        checked = dataclasses.replace(example, check_bounds=True)
        if targets is None or expected(checked).error is not None:
            # Anything the operator refuses runs apart: the plugin leaves some of it
            # unchecked (indices dims off the axis) and writes outside its buffers, which
            # corrupts this process's heap (glibc aborts it at exit: "free(): invalid
            # next size").
            return _in_child(example.data, example.indices, attribute, example.op, version,
                             example.updates)  # fmt: skip
        if len(set(targets)) < len(targets) and _order_matters(example):
            raise Gap("duplicate targets: the order of their writes is undefined")
        return self.run(example.data, example.indices, attribute, example.op, version,
                        example.updates)  # fmt: skip


def scatter_targets(example: Example) -> list[tuple[int, ...]] | None:
    """Where each update of a scatter example lands (counted from the end), in C order.

    None if an index is out of range, or the shapes are ones the operator refuses.
    ScatterUpdate: the slice index; ScatterElementsUpdate: the element; ScatterNDUpdate:
    the tuple.
    """
    data, indices = example.data, example.indices.astype(np.int64)
    try:
        if example.op == OPENVINO_SCATTER_ND_UPDATE.name:
            k = indices.shape[-1]
            sizes = np.array(data.shape[:k], np.int64)
            rows = indices.reshape(-1, k)
            if not ((rows >= -sizes) & (rows < sizes)).all():
                return None
            return [tuple(int(c) for c in row) for row in np.where(rows < 0, rows + sizes, rows)]
        axis = example.attributes["axis"] % data.ndim
        size = data.shape[axis]
        low = 0 if example.op == OPENVINO_SCATTER_UPDATE.name else -size
        if not ((indices >= low) & (indices < size)).all():
            return None
        counted = np.where(indices < 0, indices + size, indices)
        if example.op == OPENVINO_SCATTER_UPDATE.name:
            return [(int(i),) for i in counted.reshape(-1)]
        return [
            (*pos[:axis], int(counted[pos]), *pos[axis + 1 :]) for pos in np.ndindex(indices.shape)
        ]
    except (IndexError, ValueError, ZeroDivisionError, KeyError):
        return None


def _order_matters(example: Example) -> bool:
    """Whether the order of duplicate writes changes the result: overwrites, float arithmetic."""
    reduction = example.attributes.get("reduction", "none")
    if reduction == "none":
        return True
    floating = example.data.dtype.kind in "fc" or example.dtype_name == "bfloat16"
    return floating and reduction in ("sum", "sub", "prod", "mean")


_CHILD: list[Any] = []


def _in_child(*args: Any) -> np.ndarray:
    """:meth:`OpenVINO.run` in a child process, so that a crash of the runtime is contained.

    A process that died (a segmentation fault) is an :class:`Crashed` error; the next call
    starts a new one.
    """
    futures = importlib.import_module("concurrent.futures")
    process = importlib.import_module("concurrent.futures.process")
    if not _CHILD:
        context = importlib.import_module("multiprocessing").get_context("spawn")
        _CHILD.append(futures.ProcessPoolExecutor(max_workers=1, mp_context=context))
        # Stopped before the interpreter tears down what its own stop needs.
        importlib.import_module("atexit").register(_CHILD[0].shutdown)
    try:
        result: np.ndarray = _CHILD[0].submit(_run_in_child, *args).result()
    except process.BrokenProcessPool:
        _CHILD.pop().shutdown(wait=False)
        raise Crashed("the runtime crashed (the child process died)") from None
    return result


class Crashed(RuntimeError):
    """The runtime stopped its process on this call (run in a child process)."""


_RUNTIME: list[OpenVINO] = []


def _run_in_child(*args: Any) -> np.ndarray:
    if not _RUNTIME:
        _RUNTIME.append(OpenVINO())
    return _RUNTIME[0].run(*args)


def known_divergence(example: Example, cls: str) -> str | None:
    """If ``cls`` is a known OpenVINO (CPU) divergence for ``example``, the explanation.

    Measured on openvino 2026.4.1 (CPU plugin) and documented in docs/conformance.md:

    * indices in ``[-s, s-1]`` are valid, negatives counted from the end
      (openvinotoolkit/openvino#30800); ``s`` and ``-s-1`` raise; indices dims off the
      axis that differ from data's raise;
    * no complex types and no NumPy strings (a :class:`Gap`); the CPU plugin compiles
      64-bit data (int64, uint64, float64) and int64 indices as their 32-bit types, so it
      returns such data narrowed and reads int64 indices modulo 2**32
      (:func:`reads_as_int32`); float16 goes through float32 on CPUs without
      AVX512-FP16, which quiets signalling NaNs; on an empty axis (``s = 0``) no index is
      checked and the output holds uninitialised memory. These are the divergences named
      here. (After an out-of-range error a compiled model returns stale memory for a
      following call: :meth:`OpenVINO.run` recompiles after every error.)
    """
    if cls.startswith("gap: "):
        return cls
    if example.dtype_name in NARROWED and cls.startswith(("WRONG values", "NaN payload")):
        return f"the CPU plugin computes {example.dtype_name} in 32 bits"
    if example.dtype_name == "float16" and cls == "NaN payload changed":
        return "float16 goes through float32 (CPUs without AVX512-FP16): signalling NaNs come back quiet"
    if example.op in SCATTERS:
        return _scatter_divergence(example, cls)
    if example.op == OPENVINO_GATHER_ND.name:
        return _gather_nd_divergence(example, cls)
    if example.op == OPENVINO_GATHER.name:
        return _gather_divergence(example, cls)
    size = example.data.shape[example.attributes["axis"]]
    if cls == "ACCEPTS: out-of-range index" and size == 0:
        return "an empty axis is not range-checked: the output holds uninitialised memory"
    if cls == "ACCEPTS: out-of-range index" and reads_as_int32(example.indices, size):
        return "int64 indices are read as int32 (modulo 2**32)"
    return None


def _gather_divergence(example: Example, cls: str) -> str | None:
    """Gather-7/8's own known divergences: an empty axis, int64 indices read as int32."""
    if not cls.startswith("WRONG values"):
        return None
    axis = example.attributes["axis"]
    if -example.data.ndim <= axis < example.data.ndim and example.data.shape[axis] == 0:
        return "an empty axis: the output holds uninitialised memory, not zeros"
    wide = example.indices.astype(np.int64, copy=False)
    beyond = (wide > 2**31 - 1) | (wide < -(2**31))  # (not np.abs: -2**63 stays negative)
    if example.indices.dtype == np.int64 and beyond.any():
        return "int64 indices are read as int32 (modulo 2**32): an invalid one may read a value"
    return None


def _scatter_divergence(example: Example, cls: str) -> str | None:
    """The scatters' own known divergences (2026.4.1, CPU plugin)."""
    reduction = example.attributes.get("reduction", "none")
    narrow_float = example.dtype_name in ("float16", "bfloat16")
    wide = example.indices.astype(np.int64, copy=False)
    if example.indices.dtype == np.int64 and ((wide > 2**31 - 1) | (wide < -(2**31))).any():
        return "int64 indices are read as int32 (modulo 2**32)"
    scatter_update = example.op == OPENVINO_SCATTER_UPDATE.name
    if cls.startswith("ACCEPTS: ") and scatter_update and example.data.ndim == 1:
        return "ScatterUpdate of 1-D data does not check its indices: a bad one writes nothing"
    if cls.startswith("ACCEPTS: ") and example.op == OPENVINO_SCATTER_ELEMENTS_UPDATE.name:
        axis = example.attributes["axis"]
        if -example.data.ndim <= axis < example.data.ndim:
            size = example.data.shape[axis]
            if (example.indices.astype(np.int64) < -size).any():
                return (
                    "ScatterElementsUpdate does not check an index below -s (at times it segfaults)"
                )
    if cls == "ACCEPTS: indices larger than data off the axis":
        return "ScatterElementsUpdate does not check the indices' dims off the axis (the text does)"
    if not cls.startswith(("WRONG values", "NaN payload")):
        return None
    if cls == "NaN payload changed" and reduction in ("sum", "sub", "prod", "mean"):
        return (
            "an arithmetic reduction's NaN is the canonical one in the library (the ONNX "
            "scatters' rule); the plugin passes an operand's payload on"
        )
    if example.dtype_name == "bool" and reduction == "sub":
        return "bool sub of repeated targets: the CPU plugin subtracts bytes (0 - 1 = 255), not XOR"
    if example.dtype_name == "uint32" and reduction != "none":
        return "the CPU plugin's scatters reduce uint32 as int32 (its largest values as negative)"
    if reduction == "mean" and example.data.dtype.kind in "iu":
        return "the CPU plugin truncates an integer mean (toward zero), not rounding it down"
    if narrow_float and reduction in ("sum", "sub", "prod", "mean"):
        return f"the CPU plugin computes {example.dtype_name} arithmetic in float32"
    if reduction in ("max", "min") and (example.data.dtype.kind == "f" or narrow_float):
        return "the CPU plugin's max and min are not IEEE 754-2019's (NaN, -0.0, the identity)"
    return None


def _gather_nd_divergence(example: Example, cls: str) -> str | None:
    """GatherND-5/8's own known divergence (the types' are :func:`known_divergence`'s)."""
    if cls == "ACCEPTS: indices.shape[-1] out of range" and example.indices.shape[-1:] == (0,):
        return (
            "the runtime takes tuples of no coordinates (k = 0: each reads all of data), "
            "which the library refuses as ONNX GatherND does (the text asks k <= rank only)"
        )
    return None


def reads_as_int32(indices: np.ndarray, size: int) -> bool:
    """Whether int64 ``indices`` are all valid once wrapped to int32, as the CPU plugin reads them."""
    if indices.dtype != np.int64:
        return False
    wrapped = indices.astype(np.int32)  # modulo 2**32, as the plugin's conversion
    return bool(((wrapped >= -size) & (wrapped < size)).all())
