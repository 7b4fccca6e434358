"""What is timed: our call and each yardstick, as zero-argument callables on fixed inputs.

Every callable returns only when its result is ready (JAX: ``block_until_ready``; CUDA:
``torch.cuda.synchronize``), so wall-clock times compare like with like.

The yardsticks, exactly:

* ``native``: the backend's own kernel called the way a user who needs ONNX semantics
  would write it, on the same arrays:

  - numpy: ``np.take_along_axis(data, indices, axis)`` / ``np.take(data, indices, axis)``
    (both count negative indices from the end and raise on out-of-range ones);
  - torch: ``torch.gather(data, axis, indices)`` / ``torch.index_select(data, axis,
    indices)``; with mixed-sign indices the user must first write ``indices =
    torch.where(indices < 0, indices + s, indices)`` (timed as part of the call);
    int32 indices are passed as they are (torch 2.x takes them in both kernels);
  - jax: ``jnp.take_along_axis(data, indices, axis=axis)`` / ``jnp.take(data, indices,
    axis=axis)`` with JAX's default mode (which fills out-of-range reads instead of
    raising: no check at all);
  - GatherND, in all three: advanced indexing ``data[batch aranges..., indices[..., 0],
    ..., indices[..., k-1]]`` (each counts negatives from the end itself; JAX clamps
    out-of-range coordinates).

* ``careful``: on CUDA only, what a careful user writes for a checked call: the index
  range in one pass (torch: ``torch.aminmax``; jax: ``jnp.min`` and ``jnp.max``), one read
  back of both ends (torch: ``torch.stack((lo, hi)).tolist()``; jax: ``jax.device_get``),
  an ``IndexError`` if one is out of range, then the ``native`` call above (torch: with
  negative indices counted from the end when the workload has them). Our checked call
  should not be slower (see :func:`careful`).
* ``ort``: an ONNX Runtime ``InferenceSession`` (CPU execution provider, default thread
  settings) holding one Gather-13 / GatherElements-13 node, created once outside the
  timing; each call is ``session.run(None, {"data": d, "indices": i})`` on NumPy arrays
  with the same values.
* ``reference``: ``onnx.reference.ReferenceEvaluator`` on the same model, where it gives
  the correct result in reasonable time.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

import numpy as np

from benchmarks.workloads import Workload

Call = Callable[[], Any]
#: A native expression: ``make(module, data, indices, workload) -> call`` on arrays of the
#: library (``module``: numpy, torch or jax.numpy), returning the result.
Native = Callable[[Any, Any, Any, Workload], Call]


# --- the native expression a careful user writes, per operator and library ------------


def _np_take(np_: Any, data: Any, indices: Any, w: Workload) -> Call:
    return lambda: np_.take(data, indices, w.attributes["axis"])


def _np_take_along(np_: Any, data: Any, indices: Any, w: Workload) -> Call:
    return lambda: np_.take_along_axis(data, indices, w.attributes["axis"])


def _torch_counted(torch: Any, indices: Any, w: Workload) -> Callable[[], Any]:
    """The indices as torch's kernels take them: counted from the end by hand if mixed."""
    if not w.mixed:
        return lambda: indices
    size = w.data_shape[w.attributes["axis"]]
    return lambda: torch.where(indices < 0, indices + size, indices)


def _torch_index_select(torch: Any, data: Any, indices: Any, w: Workload) -> Call:
    counted, axis = _torch_counted(torch, indices, w), w.attributes["axis"]
    return lambda: torch.index_select(data, axis, counted())


def _torch_gather(torch: Any, data: Any, indices: Any, w: Workload) -> Call:
    counted, axis = _torch_counted(torch, indices, w), w.attributes["axis"]
    return lambda: torch.gather(data, axis, counted())


def _jnp_take(jnp: Any, data: Any, indices: Any, w: Workload) -> Call:
    return lambda: jnp.take(data, indices, axis=w.attributes["axis"])


def _jnp_take_along(jnp: Any, data: Any, indices: Any, w: Workload) -> Call:
    return lambda: jnp.take_along_axis(data, indices, axis=w.attributes["axis"])


def _advanced_index(module: Any, data: Any, indices: Any, w: Workload) -> Call:
    """GatherND as a user writes it: ``data[batch aranges..., indices[..., 0], ...]``.

    NumPy, torch and JAX indexing all count negative coordinates from the end themselves;
    NumPy and torch raise on out-of-range ones, JAX clamps them.
    """
    b = w.attributes.get("batch_dims", 0)
    k = indices.shape[-1]
    lead = indices.shape[:-1]
    shapes = [[n if e == d else 1 for e in range(len(lead))] for d, n in enumerate(lead[:b])]

    def call() -> Any:
        batch = [module.arange(n).reshape(shape) for n, shape in zip(lead, shapes, strict=False)]
        return data[(*batch, *(indices[..., j] for j in range(k)))]

    return call


#: Each operator's native expression per library (see the module docstring).
NATIVE: dict[str, dict[str, Native]] = {
    "gather": {"numpy": _np_take, "torch": _torch_index_select, "jax": _jnp_take},
    "gather_elements": {
        "numpy": _np_take_along, "torch": _torch_gather, "jax": _jnp_take_along,
    },
    "gather_nd": {"numpy": _advanced_index, "torch": _advanced_index, "jax": _advanced_index},
}  # fmt: skip


def expected(w: Workload, data: np.ndarray, indices: np.ndarray) -> np.ndarray:
    """The result every contender must give: NumPy's native call (the inputs are in range)."""
    return np.asarray(NATIVE[w.op]["numpy"](np, data, indices, w)())


# --- backends -------------------------------------------------------------------------


#: The modes a user runs a library in: eagerly, and under its compiler.
MODES = {"numpy": ("eager",), "torch": ("eager", "compile"), "jax": ("eager", "jit")}


def _our_function(w: Workload) -> Callable[[Any, Any], Any]:
    """Our operator on (data, indices), its attributes given positionally (the fastest call)."""
    fn = w.operator.function()
    attributes = tuple(w.attributes.get(n, d) for n, d in w.operator.attributes)
    return lambda data, indices: fn(data, indices, *attributes)


def _ours(w: Workload, data: Any, indices: Any, sync: Callable[[Any], Any]) -> Call:
    fn = _our_function(w)

    def call() -> Any:
        return sync(fn(data, indices))

    return call


def numpy_pair(
    w: Workload, data: np.ndarray, indices: np.ndarray, device: str, mode: str = "eager"
) -> tuple[Call, Call, Callable[[Any], np.ndarray]]:
    if device != "cpu":
        raise ValueError("numpy runs on the CPU only")
    data, indices = data.copy(), indices.copy()
    native = NATIVE[w.op]["numpy"](np, data, indices, w)
    return _ours(w, data, indices, lambda x: x), native, np.asarray


def torch_pair(
    w: Workload, data: np.ndarray, indices: np.ndarray, device: str, mode: str = "eager"
) -> tuple[Call, Call, Callable[[Any], np.ndarray]]:
    torch = importlib.import_module("torch")
    t_data = torch.from_numpy(data.copy()).to(device)
    t_idx = torch.from_numpy(indices.copy()).to(device)
    cuda = device != "cpu"

    def sync(x: Any) -> Any:
        if cuda:
            torch.cuda.synchronize()
        return x

    def to_numpy(x: Any) -> np.ndarray:
        return x.detach().cpu().numpy()

    if mode == "compile":
        # Both under torch.compile(fullgraph=True): the graph a user's model holds. Each
        # workload compiles afresh: the native lambda is one code object for them all, and
        # Dynamo stops recompiling a code object after 8 shapes and dtypes (recompile_limit).
        torch._dynamo.reset()
        ours_fn = torch.compile(_our_function(w), fullgraph=True)
        native_fn = torch.compile(
            lambda d, i: NATIVE[w.op]["torch"](torch, d, i, w)(), fullgraph=True
        )
        return (
            lambda: sync(ours_fn(t_data, t_idx)),
            lambda: sync(native_fn(t_data, t_idx)),
            to_numpy,
        )
    expression = NATIVE[w.op]["torch"](torch, t_data, t_idx, w)

    def native() -> Any:
        return sync(expression())

    return _ours(w, t_data, t_idx, sync), native, to_numpy


def jax_pair(
    w: Workload, data: np.ndarray, indices: np.ndarray, device: str, mode: str = "eager"
) -> tuple[Call, Call, Callable[[Any], np.ndarray]]:
    jax = importlib.import_module("jax")
    jnp = importlib.import_module("jax.numpy")
    target = jax.devices("gpu" if device != "cpu" else "cpu")[0]
    j_data = jax.device_put(data, target)
    j_idx = jax.device_put(indices, target)

    def ready(x: Any) -> Any:
        return x.block_until_ready()

    if mode == "jit":
        # Both under jax.jit: the compiled function a user's program calls.
        ours_fn = jax.jit(_our_function(w))
        native_fn = jax.jit(lambda d, i: NATIVE[w.op]["jax"](jnp, d, i, w)())
        return (
            lambda: ready(ours_fn(j_data, j_idx)),
            lambda: ready(native_fn(j_data, j_idx)),
            np.asarray,
        )
    expression = NATIVE[w.op]["jax"](jnp, j_data, j_idx, w)

    def native() -> Any:
        return ready(expression())

    return _ours(w, j_data, j_idx, ready), native, np.asarray


PAIRS = {"numpy": numpy_pair, "torch": torch_pair, "jax": jax_pair}


def _with_module(values: dict[str, Any], call: Call) -> Call:
    """``call`` with attributes of the NumPy backend module set for its duration."""
    module = importlib.import_module("onnx_gather._backends._numpy")

    def wrapped() -> Any:
        saved = {name: getattr(module, name) for name in values}
        for name, value in values.items():
            setattr(module, name, value)
        try:
            return call()
        finally:
            for name, value in saved.items():
                setattr(module, name, value)

    return wrapped


def variants(w: Workload, backend: str, device: str, ours: Call) -> dict[str, Call]:
    """Our call without the compiled kernel, and on large calls on one thread.

    For numpy and torch on the CPU; empty where the compiled kernel was not built. (The
    wrapper's own cost, under a microsecond, would blur a one-thread ratio of tiny calls.)
    """
    module = importlib.import_module("onnx_gather._backends._numpy")
    if backend not in ("numpy", "torch") or device != "cpu" or module._kernels is None:
        return {}
    out = {"fallback": _with_module({"_kernels": None}, ours)}
    if not w.tiny:
        out["one thread"] = _with_module({"THREADS": 1}, ours)
    return out


def careful(
    w: Workload, backend: str, data: np.ndarray, indices: np.ndarray, device: str
) -> Call | None:
    """The careful user's checked call on ``device`` (None off CUDA or for numpy).

    The index range in one pass, one read back of both ends, an IndexError if out of
    range, then the operator's native expression (torch: on indices counted from the end).
    GatherND's tuples are checked per coordinate, each against its own axis' size.
    """
    if device == "cpu" or backend not in ("torch", "jax"):
        return None
    plan = w.plan()
    # Per coordinate for GatherND (the last axis of its indices), else one size.
    sizes = np.array(plan.sizes if plan.coordinates else (plan.size,))
    width = len(sizes)
    if backend == "torch":
        torch = importlib.import_module("torch")
        t_data = torch.from_numpy(data.copy()).to(device)
        t_idx = torch.from_numpy(indices.copy()).to(device)
        native = NATIVE[w.op]["torch"](torch, t_data, t_idx, w)

        def checked_torch() -> Any:
            lo, hi = np.array(torch.stack(torch.aminmax(t_idx.reshape(-1, width), dim=0)).tolist())
            if (lo < -sizes).any() or (hi >= sizes).any():
                raise IndexError(f"index out of range of sizes {sizes.tolist()}")
            out = native()
            torch.cuda.synchronize()
            return out

        return checked_torch
    jax = importlib.import_module("jax")
    jnp = importlib.import_module("jax.numpy")
    target = jax.devices("gpu")[0]
    j_data = jax.device_put(data, target)
    j_idx = jax.device_put(indices, target)
    native = NATIVE[w.op]["jax"](jnp, j_data, j_idx, w)

    def checked_jax() -> Any:
        rows = j_idx.reshape(-1, width)
        lo, hi = jax.device_get((jnp.min(rows, axis=0), jnp.max(rows, axis=0)))
        if (lo < -sizes).any() or (hi >= sizes).any():
            raise IndexError(f"index out of range of sizes {sizes.tolist()}")
        return native().block_until_ready()

    return checked_jax


def backend_versions(names: list[str]) -> dict[str, str]:
    out = {}
    for name in names:
        module = importlib.import_module(name)
        out[name] = str(module.__version__)
    return out


# --- ONNX yardsticks ------------------------------------------------------------------


def _model(w: Workload) -> bytes:
    """The workload's one-node model (the registry builds it), at the operator's default opset."""
    shapes = [list(w.data_shape), list(w.indices_shape)]
    model = w.operator.onnx_model(None, [w.dtype, w.index_dtype], shapes, w.attributes)
    return bytes(model.SerializeToString())


def ort_call(
    w: Workload, data: np.ndarray, indices: np.ndarray, device: str = "cpu"
) -> tuple[Call | None, dict[str, Any]]:
    """An ONNX Runtime session for ``w``, created here, outside the timing.

    On the CPU: the CPU execution provider with its default threads, NumPy feeds. On CUDA:
    the CUDA provider where this onnxruntime has it (else None), inputs and output bound
    on the device (I/O binding), so no host copy is timed.
    """
    import onnxruntime as ort

    if device == "cpu":
        session = ort.InferenceSession(_model(w), providers=["CPUExecutionProvider"])
        feeds = {"data": data.copy(), "indices": indices.copy()}

        def call() -> Any:
            return session.run(None, feeds)[0]

        options = session.get_session_options()
        return call, {"intra_op_num_threads": options.intra_op_num_threads}

    if "CUDAExecutionProvider" not in ort.get_available_providers():
        return None, {"why": "this onnxruntime has no CUDA execution provider"}
    session = ort.InferenceSession(_model(w), providers=["CUDAExecutionProvider"])
    binding = session.io_binding()
    for name, array in (("data", data), ("indices", indices)):
        binding.bind_ortvalue_input(name, ort.OrtValue.ortvalue_from_numpy(array, "cuda", 0))
    binding.bind_output("out", "cuda")

    def run_bound() -> Any:
        session.run_with_iobinding(binding)
        return binding.get_outputs()[0]

    return run_bound, {}


def reference_call(w: Workload, data: np.ndarray, indices: np.ndarray) -> Call:
    from onnx import ModelProto
    from onnx.reference import ReferenceEvaluator

    model = ModelProto()
    model.ParseFromString(_model(w))
    evaluator = ReferenceEvaluator(model)
    feeds = {"data": data.copy(), "indices": indices.copy()}

    def call() -> Any:
        return evaluator.run(None, feeds)[0]

    return call
