"""``python -m onnx_gather check``: official ONNX cases and a short property campaign.

For every installed array library: the official ONNX node test cases of every operator of
the registry, then ``examples`` hypothesis examples of each operator compared with the
loop oracle. Prints a library x test matrix and returns the number of failing cells.
"""

from __future__ import annotations

import io
import warnings
from collections.abc import Sequence
from contextlib import redirect_stdout
from typing import Any

from hypothesis import HealthCheck, Phase, given, settings

from onnx_gather._conformance.libraries import Library
from onnx_gather._conformance.official import official_cases, official_runs
from onnx_gather._conformance.runner import Tally, check, difference
from onnx_gather._conformance.strategies import Example, examples
from onnx_gather._ops import BY_ONNX_OP_TYPE, OPS, call, get


def run_official(lib: Library, cases: Sequence[Any]) -> tuple[int, int, list[str]]:
    """Run the official cases on ``lib``: (passed, total, failure descriptions)."""
    passed, total, failures = 0, 0, []
    for case in cases:
        for run in official_runs(case, lib.holds):
            total += 1
            try:
                got = call(run.op, *run.inputs(lib), opset=run.opset, **run.attributes)
                problem = difference(lib.to_numpy(got), run.expected)
            except Exception as exc:
                problem = f"{type(exc).__name__}: {exc}"
            if problem is None:
                passed += 1
            else:
                failures.append(f"{case.name}: {problem}")
    return passed, total, failures


def run_properties(lib: Library, op: str, budget: int) -> tuple[int, str | None]:
    """``budget`` examples of ``op`` on ``lib``: (examples run, falsifying report or None)."""
    tally = Tally()

    @settings(
        max_examples=budget,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
        phases=[Phase.generate, Phase.shrink],
        report_multiple_bugs=False,
    )
    @given(examples(op, sorted(lib.holds)))
    def conforms(example: Example) -> None:
        # A warning of NumPy's arithmetic (a signalling NaN met, an overflow) on a valid
        # call is a defect, as in the property tests, which run with warnings as errors.
        with warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)
            check(example, [lib], tally)

    report = io.StringIO()
    try:
        with redirect_stdout(report):
            conforms()
    except Exception as exc:
        notes = "\n".join(getattr(exc, "__notes__", []))
        return sum(tally.runs.values()), f"{exc}\n{notes}\n{report.getvalue()}".strip()
    return sum(tally.runs.values()), None


def main(budget: int, libs: Sequence[Library], ops: Sequence[str] = OPS) -> int:
    """Run everything on ``libs`` (see :func:`onnx_gather._conformance.libraries.installed`).

    ``ops`` (registry names, default all) limits the campaign and the official cases to
    those operators. Prints the matrix and returns the number of failing (library, test)
    cells.
    """
    # (An OpenVINO operator shares an ONNX op_type, not its official cases.)
    onnx_types = {op.op_type for op in map(get, ops) if BY_ONNX_OP_TYPE.get(op.op_type) is op}
    cases = [c for c in official_cases() if c.model.graph.node[0].op_type in onnx_types]
    header = ("library", "official ONNX cases", *ops)
    rows, details = [], []
    for lib in libs:
        passed, total, failures = run_official(lib, cases)
        row = [lib.name, f"{'pass' if not failures else 'FAIL'} {passed}/{total}"]
        details += [f"{lib.name} official: {f}" for f in failures]
        for op in ops:
            count, failure = run_properties(lib, op, budget)
            row.append(f"{'pass' if failure is None else 'FAIL'} ({count} examples)")
            if failure is not None:
                details.append(f"{lib.name} {op}:\n{failure}")
        rows.append(row)
        print(f"  {lib.name}: done", flush=True)
    _print_table(header, rows)
    for detail in details:
        print("\n" + detail)
    bad = sum(cell.startswith("FAIL") for row in rows for cell in row[1:])
    print(
        f"\n{len(libs)} libraries, {budget} examples per operator each; "
        f"{'all conform' if not bad else f'{bad} failing cells'} "
        "(the loop oracle is the reference; see docs/conformance.md)"
    )
    return bad


def _print_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    print("  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)))
    print("  ".join("-" * w for w in widths))
    for row in rows:
        print("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)))
