"""The scatters' reductions: which version adds each, and which data types each allows.

ScatterElements and ScatterND combine an update with the value it lands on by their
``reduction`` attribute: ``none`` (the update replaces it; version 11), ``add`` and ``mul``
(version 16), ``max`` and ``min`` (version 18 in the spec; accepted from 16, below). Each
is typed arithmetic in data's dtype,
one update at a time in C order of the update's position in ``indices``:

- ``none``: where several updates land on one element, the last in that order wins;
- ``add``, ``mul``: rounded after every update (float16 and bfloat16 too); integers wrap
  around (two's complement); bool: add is OR, mul is AND; a NaN result is the canonical
  quiet NaN (positive, payload zero; each part of a complex number), since which NaN the
  hardware propagates depends on the operands' order and the device;
- ``max``, ``min``: IEEE 754-2019 ``maximum``/``minimum``: NaN if either side is NaN (the
  first NaN in that order survives: data's value if it is NaN, else the first NaN update),
  and -0.0 < +0.0; bool: max is OR, min is AND. Complex data has no order: a TypeError.

Strings have no arithmetic: ``none`` only.
"""

from __future__ import annotations

from typing import Any

#: Each reduction and the version of ScatterElements / ScatterND that adds it. ``max`` and
#: ``min`` from 16, a decision: the spec adds them in 18, but torch's TorchScript exporter
#: writes ``scatter_reduce(..., "amax"/"amin")`` as ScatterElements-16 with reduction
#: max/min (torch 2.13, symbolic_opset16), and ONNX Runtime's CPU kernels and the ONNX
#: reference evaluator run max and min at versions 16 and 17 of both operators: a model
#: they run, this library runs too (README, semantics table).
SINCE = {"none": 11, "add": 16, "mul": 16, "max": 16, "min": 16}
#: The reductions that order values: complex data has none.
ORDERED = frozenset({"max", "min"})


def check(op: str, version: int, reduction: Any, data_dtype: str) -> str:
    """``reduction`` checked against the operator's version and data's type.

    Raises
    ------
    TypeError
        ``reduction`` is not a str; ``max``/``min`` on complex data; any reduction but
        ``none`` on strings.
    ValueError
        An unknown reduction (the message lists the valid ones), or one the version lacks
        (the message names the version that adds it).
    """
    if type(reduction) is not str:
        msg = f"{op}: reduction must be a str, got {reduction!r} of type {type(reduction).__name__}"
        raise TypeError(msg)
    since = SINCE.get(reduction)
    if since is None:
        msg = f"{op}: unknown reduction {reduction!r}; valid: {', '.join(map(repr, SINCE))}"
        raise ValueError(msg)
    if since > version:
        have = ", ".join(repr(r) for r, v in SINCE.items() if v <= version)
        msg = (
            f"{op}: reduction {reduction!r} needs version {since} or newer (opset {since}); "
            f"version {version} has {have}"
        )
        raise ValueError(msg)
    if reduction != "none" and data_dtype == "string":
        msg = (
            f"{op}: reduction {reduction!r} needs numbers; string data takes reduction 'none' only"
        )
        raise TypeError(msg)
    if reduction in ORDERED and data_dtype.startswith("complex"):
        msg = f"{op}: reduction {reduction!r} needs ordered values; {data_dtype} data has no order"
        raise TypeError(msg)
    return reduction


def check_updates(op: str, data_dtype: str, updates_dtype: str) -> None:
    """TypeError unless ``updates`` has data's type (ONNX's ``T`` for both)."""
    if updates_dtype != data_dtype:
        msg = f"{op}: updates must have data's type {data_dtype}, got {updates_dtype}"
        raise TypeError(msg)
