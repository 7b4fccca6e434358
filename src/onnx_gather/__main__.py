"""``python -m onnx_gather``: the specs' examples on every installed array library (a table).

``python -m onnx_gather check``: the official ONNX cases and a short property campaign.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from typing import Any

import numpy as np

from onnx_gather import _ops
from onnx_gather._conformance.libraries import installed, type_name
from onnx_gather._examples import EXAMPLES, Example
from onnx_gather._ops import call

_DESCRIPTION = """\
Run the specs' examples on every installed array library: prints a table of one row per
example and one column per library (pass, FAIL, or skip with the reason), and exits
non-zero if any example fails.

'python -m onnx_gather check' runs the official ONNX test cases and a short property
campaign against the loop oracle on every installed library instead. It needs hypothesis
and onnx: in a checkout of onnx-gather, pip install -e ".[check]".
"""


def _call(example: Example, arrays: tuple[Any, ...]) -> Any:
    return call(example.op, *arrays, opset=example.opset, **example.attributes)


def run_examples(names: list[str] | None = None) -> int:
    """Run every example on the libraries ``names`` (default: every installed one).

    Prints one row per example and one column per library (pass, FAIL, or skip with a
    note saying why), then each failure's output and a summary that counts the skips;
    returns the number of failures.
    """
    libraries = installed(names)
    rows: list[tuple[str, ...]] = []
    notes: dict[str, int] = {}  # a skip's reason -> its note number
    skipped: dict[str, int] = {}  # a skip's reason -> how many cells it skipped
    failed: list[str] = []
    passed = 0
    for example in EXAMPLES:
        cells = []
        for lib in libraries:
            dtype = type_name(example.data.dtype)
            if dtype not in lib.holds:
                reason = _skip_reason(lib, dtype)
                number = notes.setdefault(reason, len(notes) + 1)
                skipped[reason] = skipped.get(reason, 0) + 1
                cells.append(f"skip ({number})")
                continue
            try:
                result = lib.to_numpy(
                    _call(example, lib.inputs(_ops.get(example.op).inputs, example.arrays))
                )
                ok = result.shape == example.expected.shape and np.array_equal(
                    result, example.expected
                )
                shown = _shown(result)
            except Exception as exc:
                ok, shown = False, f"{type(exc).__name__}: {exc}"
            passed += ok
            if not ok:
                failed.append(f"{example.name} on {lib.name}: {shown}")
            cells.append("pass" if ok else "FAIL")
        rows.append((example.name, *cells, _shown(example.expected)))
    _print_table(("example", *(lib.name for lib in libraries), "expected result"), rows)
    if notes:
        print()
        for reason, number in notes.items():
            print(f"({number}) {reason}: {skipped[reason]} examples skipped")
    if failed:
        print("\nFailed:")
        for line in failed:
            print(f"  {line}")
    listed = ", ".join(lib.name for lib in libraries)
    print(
        f"\n{len(EXAMPLES)} examples: {passed} passed, {len(failed)} failed, "
        f"{sum(skipped.values())} skipped ({len(libraries)} backends: {listed})"
    )
    return len(failed)


def _shown(result: np.ndarray) -> str:
    """An array on one line, as NumPy prints it."""
    return " ".join(np.array2string(np.asarray(result), separator=",").split())


def _skip_reason(lib: Any, dtype: str) -> str:
    """Why ``lib`` cannot run an example of ``dtype`` data."""
    if lib.name == "jax" and dtype in {"int64", "uint64", "float64", "complex128"}:
        return (
            f"jax, {dtype} data: JAX runs without x64 here and would narrow it "
            "(JAX_ENABLE_X64=1 runs them)"
        )
    if dtype == "bfloat16":
        return f"{lib.name}, bfloat16 data: needs ml_dtypes (the bfloat16 extra)"
    return f"{lib.name}, {dtype} data: the library has no arrays of it"


def _print_table(header: tuple[str, ...], rows: Sequence[tuple[str, ...]]) -> None:
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    widths[-1] = min(widths[-1], 32)
    line = "  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True))
    print(line.rstrip())
    print("  ".join("-" * w for w in widths))
    for row in rows:
        cells = [
            str(c) if len(str(c)) <= w else str(c)[: w - 3] + "..."
            for c, w in zip(row, widths, strict=True)
        ]
        print("  ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)).rstrip())


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``python -m onnx_gather``: non-zero if any example or check fails."""
    parser = argparse.ArgumentParser(
        prog="python -m onnx_gather",
        description=_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "mode",
        nargs="?",
        default="examples",
        choices=["examples", "check"],
        help="examples: the specs' examples (default); check: the official ONNX cases and a "
        "property campaign against the loop oracle (needs hypothesis and onnx)",
    )
    parser.add_argument(
        "--examples",
        type=_positive,
        default=50,
        metavar="N",
        help="check: examples per operator and library (default 50)",
    )
    parser.add_argument(
        "--backends",
        metavar="NAMES",
        help="comma-separated libraries (default: every installed one)",
    )
    parser.add_argument(
        "--operators",
        metavar="NAMES",
        help="check: comma-separated operators of the registry, as in "
        "onnx_gather._ops.OPS (default: every one)",
    )
    args = parser.parse_args(argv)
    names = [n.strip() for n in args.backends.split(",") if n.strip()] if args.backends else None
    if args.backends is not None and not names:
        parser.error("--backends: no library named")
    ops = _ops.OPS
    if args.operators is not None:
        ops = tuple(n.strip() for n in args.operators.split(",") if n.strip())
        unknown = [n for n in ops if n not in _ops.OPS]
        if unknown or not ops:
            parser.error(
                f"--operators: {', '.join(map(repr, unknown)) or 'no operator named'}"
                f" (known: {', '.join(_ops.OPS)})"
            )
    if args.mode == "check":
        return run_check(args.examples, names, ops)
    try:
        failures = run_examples(names)
    except (ValueError, ImportError, RuntimeError) as exc:
        print(f"python -m onnx_gather: {exc}", file=sys.stderr)
        return 2
    return 1 if failures else 0


def _positive(text: str) -> int:
    """An int of at least 1: the ``--examples`` type for argparse."""
    try:
        number = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an int") from None
    if number < 1:
        raise argparse.ArgumentTypeError(f"{number} is not a positive int (at least 1)")
    return number


def run_check(budget: int, names: list[str] | None = None, ops: Sequence[str] = _ops.OPS) -> int:
    """``check`` mode: 0 if every library conforms, 1 if not, 2 if it cannot run here.

    The official ONNX test cases and a short property campaign against the loop oracle on
    every installed library, of the operators ``ops`` (default all); it needs hypothesis
    and onnx (``pip install -e ".[check]"`` in a checkout of onnx-gather).
    """
    missing = []
    for module in ("hypothesis", "onnx"):
        try:
            importlib.import_module(module)
        except ImportError:
            missing.append(module)
    if missing:
        print(
            f"python -m onnx_gather check needs {' and '.join(missing)}, not installed here "
            f"(hypothesis generates the examples; onnx provides the official ONNX test "
            f"cases). onnx-gather is not on PyPI: install them from its checkout with "
            f'pip install -e ".[check]"',
            file=sys.stderr,
        )
        return 2
    from onnx_gather._conformance import check

    try:
        libs = installed(names)
    except (ValueError, ImportError, RuntimeError) as exc:
        print(f"python -m onnx_gather check: {exc}", file=sys.stderr)
        return 2
    return 1 if check.main(budget, libs, ops) else 0


if __name__ == "__main__":
    sys.exit(main())
