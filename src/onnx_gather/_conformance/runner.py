"""Run one example on a library and on the oracle, and say how they differ.

A library is a :class:`~onnx_gather._conformance.libraries.Library` of ``onnx_gather._conformance.libraries`` (the tests use the
same ones). Views are made from the library's array with the library's own slicing and
``permute_dims``.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from onnx_gather import _ops
from onnx_gather._conformance.libraries import Library
from onnx_gather._conformance.oracle import Oracle
from onnx_gather._conformance.strategies import Example, Layout
from onnx_gather._memo import Memo


@dataclass(frozen=True)
class Outcome:
    """A result (``value``) or the exception raised instead (``error``)."""

    value: np.ndarray | None = None
    error: BaseException | None = None

    @property
    def kind(self) -> str:
        """``"value"`` or the exception's type name."""
        return "value" if self.error is None else type(self.error).__name__


def oracle_of(op: str) -> Oracle:
    """The loop oracle of the operator named ``op`` (the registry's ``oracle``)."""
    found: Oracle = _ops.get(op).load("oracle")
    return found


def run_oracle(
    op: str,
    arrays: tuple[Any, ...],
    attributes: dict[str, Any],
    opset: int | None,
    check_bounds: bool = True,
    fill: bool = False,
) -> np.ndarray:
    """The operator's loop oracle on ``arrays`` (its inputs in order).

    ``opset`` None: the operator's default. ``check_bounds=False``: the library's unchecked
    answer, where an out-of-range index raises nothing: a scatter drops its update
    (``Oracle.drops``), a gather reads the element at the index clamped into its axis
    (``Oracle.clamps``), or with ``fill`` JAX's fill value (:func:`fills`).
    """
    operator = _ops.get(op)
    chosen = operator.default_opset if opset is None else opset
    found = oracle_of(op)
    if check_bounds:
        return found.run(*arrays, opset=chosen, **attributes)
    if found.clamps:
        return found.run(*arrays, opset=chosen, check_bounds=False, fill=fill, **attributes)
    return found.run(*arrays, opset=chosen, check_bounds=False, **attributes)


def fills(lib: Library) -> bool:
    """Whether ``lib``'s unchecked gathers give a fill value, not the clamped element.

    JAX: docs/semantics.md (``jnp.take(..., mode="fill")``: NaN, the most negative
    signed integer, the largest unsigned one, True), under ``jit`` and eagerly alike.
    """
    return getattr(lib.module, "__name__", "") == "jax"


def call(arrays: tuple[Any, ...], example: Example) -> Any:
    """Run ``example``'s operator through its public function.

    ``arrays``: data, indices and a scatter's updates, as :func:`inputs` gives them.
    """
    return _ops.call(
        example.op,
        *_ops.get(example.op).in_order(*arrays),
        opset=example.opset,
        check_bounds=example.check_bounds,
        **example.attributes,
    )


def expected(example: Example, fill: bool = False) -> Outcome:
    """What the loop oracle says: the spec's value or exception.

    ``fill``: for a library whose unchecked gathers fill (:func:`fills`).
    """
    try:
        value = run_oracle(
            example.op,
            example.arrays,
            example.attributes,
            example.opset,
            example.check_bounds,
            fill,
        )
    except (IndexError, ValueError, TypeError) as exc:
        return Outcome(error=exc)
    return Outcome(value=value)


_REVERSES: Memo[str, bool] = Memo(64)


def reverses(lib: Library) -> bool:
    """Whether ``lib`` can slice with a negative step (a reversed view); asked once."""
    return _REVERSES.get_or_make(lib.name, lambda: _probe_reversal(lib))


def _probe_reversal(lib: Library) -> bool:
    probe = np.arange(3, dtype=np.int32 if "int32" in lib.holds else np.float32)
    try:
        return bool(lib.to_numpy(lib.asarray(probe)[::-1]).tolist() == [2, 1, 0])
    except Exception:
        return False


def _present(make: Any, logical: np.ndarray, layout: Layout, pad: Any, reverse_ok: bool) -> Any:
    """``logical`` as an array made by ``make``, viewed through ``layout`` with its own ops."""
    from array_api_compat import array_namespace

    if not reverse_ok:
        layout = layout.without_reversal()
    base, slices, perm = layout.realise(logical, pad)
    x = make(base)
    if slices is not None:
        x = x[slices]
    if perm is not None:
        x = array_namespace(x).permute_dims(x, perm)
    return x


def inputs(lib: Library, example: Example) -> tuple[tuple[Any, ...], bool]:
    """The example's inputs as ``lib`` (and the example's form) presents them.

    Data and updates through their layouts, indices in the example's form. The second
    item says whether the data had to be presented plainly instead of through its view:
    where the library's own slicing or ``permute_dims`` changes the bits, the call
    would be judged on other data than the oracle's. XLA's CPU transpose flushes bfloat16
    subnormals to zero for some shapes (jax 0.10.2: data of shape (2, 5, 1, 2, 1) through
    ``permute_dims(x, (0, 4, 2, 3, 1))``; XLA flushes denormals on CPU, openxla/xla#22858).
    """
    reverse_ok = reverses(lib)
    data, plain = _viewed(lib, example.data, example.data_layout, example.pad, reverse_ok)
    if example.indices_form == "list":
        indices: Any = example.indices.tolist()
    else:

        def pad(shape: tuple[int, ...]) -> np.ndarray:
            return example.pad(shape, "indices")

        make: Callable[[np.ndarray], Any] = lib.indices
        reverse_indices = reverse_ok
        if example.indices_form == "numpy":
            make, reverse_indices = np.asarray, True
        indices = _present(make, example.indices, example.indices_layout, pad, reverse_indices)
    if example.updates is None:
        return (data, indices), plain
    updates, _ = _viewed(lib, example.updates, example.updates_layout, example.pad, reverse_ok)
    return (data, indices, updates), plain


def _viewed(
    lib: Library, logical: np.ndarray, layout: Layout, pad: Any, reverse_ok: bool
) -> tuple[Any, bool]:
    """``logical`` through ``layout`` as ``lib``'s array, and whether it came plainly.

    Plainly where the library's view changed its bits (see :func:`inputs`).
    """
    x = _present(lib.asarray, logical, layout, pad, reverse_ok)
    if not layout.plain and difference(lib.to_numpy(x), logical) is not None:
        return lib.asarray(logical), True
    return x, False


def actual(lib: Library, example: Example) -> tuple[Outcome, str | None, bool]:
    """Run the example on ``lib``; also say if the call modified its inputs.

    The third item says whether the data was presented plainly (see :func:`inputs`).
    """
    arrays, plain = inputs(lib, example)
    data, indices = arrays[:2]
    try:
        result = call(arrays, example)
        # Inside the try: a lazy library (Dask) raises when the result is computed.
        outcome = Outcome(value=lib.to_numpy(result))
    except Exception as exc:  # judged by mismatch(): only the oracle's type conforms
        outcome = Outcome(error=exc)
    touched = None
    if difference(lib.to_numpy(data), example.data) is not None:
        touched = "the call modified its data argument"
    elif not isinstance(indices, list | int) and (
        difference(np.asarray(_to_numpy_any(lib, indices)), example.indices) is not None
    ):
        touched = "the call modified its indices argument"
    elif example.updates is not None and (
        difference(lib.to_numpy(arrays[2]), example.updates) is not None
    ):
        touched = "the call modified its updates argument"
    return outcome, touched, plain


def _to_numpy_any(lib: Library, x: Any) -> np.ndarray:
    return x if isinstance(x, np.ndarray) else lib.to_numpy(x)


def difference(got: np.ndarray, want: np.ndarray) -> str | None:
    """None if identical (shape, dtype, bits; strings by value), else what differs."""
    if got.shape != want.shape:
        return f"shape {got.shape}, expected {want.shape}"
    if want.dtype.kind in "OUST":
        if got.dtype.kind not in "OUST":
            return f"dtype {got.dtype}, expected a string dtype"
        if got.tolist() != want.tolist():
            return "string values differ"
        return None
    if got.dtype != want.dtype:
        return f"dtype {got.dtype}, expected {want.dtype}"
    a = np.ascontiguousarray(got.reshape(-1)).view(np.uint8)
    b = np.ascontiguousarray(want.reshape(-1)).view(np.uint8)
    if a.tobytes() == b.tobytes():
        return None
    itemsize = want.dtype.itemsize
    bad = np.flatnonzero((a.reshape(-1, itemsize) != b.reshape(-1, itemsize)).any(axis=1))
    first = int(bad[0])
    return (
        f"{bad.size} of {want.size} elements differ; first at flat position {first}: "
        f"{got.reshape(-1)[first]!r}, expected {want.reshape(-1)[first]!r}"
    )


_NAMED = re.compile(r"index (-?\d+) at position \(([-\d, ]*)\)")
_SIZE = re.compile(r"for axis \d+ of size (\d+)")


def _names_a_bad_index(example: Example, text: str) -> str | None:
    """None if ``text`` names an out-of-range value at a position that holds it, else why not.

    Any bad entry will do: a chunked backend (Dask) checks its blocks in no fixed order.
    """
    found = _NAMED.search(text)
    if found is None:
        return f"IndexError message {text!r} names no 'index V at position (...)'"
    value = int(found.group(1))
    position = tuple(int(p) for p in found.group(2).replace(",", " ").split())
    if len(position) != example.indices.ndim or any(
        not 0 <= p < n for p, n in zip(position, example.indices.shape, strict=True)
    ):
        return f"IndexError message {text!r}: no position {position} in indices"
    if int(example.indices[position]) != value:
        return f"IndexError message {text!r}: indices{list(position)} is not {value}"
    oracle = oracle_of(example.op)
    size = oracle.size_at(example.data.shape, example.attributes, position)
    lo, hi = -size, float(size - 1)
    if oracle.valid is not None and example.updates is not None:
        lo, hi = oracle.valid(example.data.shape, example.updates.shape, example.attributes)
    if lo <= value <= hi:
        return f"IndexError message {text!r} names the valid index {value}"
    named_size = _SIZE.search(text)
    if named_size is None or int(named_size.group(1)) != size:
        return f"IndexError message {text!r} does not name the size {size} of the axis it addresses"
    return None


def _names_the_rule(want: BaseException, text: str) -> str | None:
    """None if ``text`` names all that the oracle's error ``want`` says it must, else what not.

    The oracle's error for "indices.shape[-1] out of range" names ``indices.shape[-1] is
    3``, for an unknown reduction ``reduction 'sum'``; the library's message must hold them.
    """
    missing = [name for name in getattr(want, "names", ()) if name not in text]
    if missing:
        return (
            f"{type(want).__name__} message {text!r} does not name "
            f"{', '.join(map(repr, missing))} (the oracle's rule: {want})"
        )
    return None


def mismatch(example: Example, got: Outcome, want: Outcome) -> str | None:
    """None if ``got`` conforms to the oracle's ``want``, else why not.

    Values must be identical. Errors must have the oracle's exception type; an IndexError
    must also name an offending value and its position in ``indices``, a ValueError or
    TypeError what the oracle's error says it must name (the rule's words and the bad
    value: its ``names``). With ``check_bounds=False`` an out-of-range index has the
    oracle's unchecked answer (:func:`run_oracle`: the scatters drop, the gathers clamp or
    fill), never an error.
    """
    if want.error is not None:
        if got.error is None:
            return f"returned a value, expected {type(want.error).__name__}"
        if not isinstance(got.error, type(want.error)):
            return f"raised {got.kind}: {got.error}; expected {type(want.error).__name__}"
        if isinstance(want.error, IndexError):
            return _names_a_bad_index(example, str(got.error))
        return _names_the_rule(want.error, str(got.error))
    if got.error is not None:
        return f"raised {got.kind}: {got.error}; expected a value"
    assert got.value is not None
    assert want.value is not None
    return difference(got.value, want.value)


class Tally:
    """Counts outcomes per (library, operator) and classes per peer, for the report."""

    def __init__(self) -> None:
        self.runs: Counter[tuple[str, str, str]] = Counter()
        self.classes: Counter[tuple[str, str, str]] = Counter()
        self.plain: Counter[tuple[str, str]] = Counter()

    def run(self, lib: str, op: str, kind: str) -> None:
        """One example ran on ``lib`` and gave ``kind`` (value or an exception type)."""
        self.runs[lib, op, kind] += 1

    def peer(self, peer: str, op: str, cls: str) -> None:
        """A peer's outcome on one example fell into class ``cls``."""
        self.classes[peer, op, cls] += 1

    def as_dict(self) -> dict[str, Any]:
        """A JSON-friendly summary."""
        examples: Counter[tuple[str, str]] = Counter()
        for (lib, op, _), n in self.runs.items():
            examples[lib, op] += n
        return {
            "examples": [
                {"library": lib, "op": op, "examples": n}
                for (lib, op), n in sorted(examples.items())
            ],
            "outcomes": [
                {"library": lib, "op": op, "outcome": kind, "count": n}
                for (lib, op, kind), n in sorted(self.runs.items())
            ],
            "peers": [
                {"peer": peer, "op": op, "class": cls, "count": n}
                for (peer, op, cls), n in sorted(self.classes.items())
            ],
            "presented_plainly": [
                {"library": lib, "op": op, "count": n}
                for (lib, op), n in sorted(self.plain.items())
            ],
        }


def check(example: Example, libs: list[Any], tally: Tally | None = None) -> Outcome:
    """Run ``example`` on every library that holds its data type; assert it conforms.

    Returns the oracle's outcome, for further comparisons.

    Raises
    ------
    AssertionError
        Naming the library and what differs from the oracle.
    """
    want = expected(example)
    filled: Outcome | None = None  # the answer for JAX's unchecked gathers, which fill
    problems = []
    for lib in libs:
        if example.dtype_name not in lib.holds:
            continue
        got, touched, plain = actual(lib, example)
        if tally is not None:
            tally.run(lib.name, example.op, got.kind)
            if plain:
                tally.plain[lib.name, example.op] += 1
        its = want
        if not example.check_bounds and fills(lib) and oracle_of(example.op).clamps:
            filled = filled or expected(example, fill=True)
            its = filled
        problem = touched or mismatch(example, got, its)
        if problem is not None:
            problems.append(f"{lib.name}: {problem}")
    if problems:
        oracle_says = want.kind if want.error is None else f"{want.kind}({want.error})"
        raise AssertionError(
            "backend differs from the oracle (" + oracle_says + "):\n  " + "\n  ".join(problems)
        )
    return want
