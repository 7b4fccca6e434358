"""The scatters' reductions: what each computes, the version that adds it, the types it takes."""

from __future__ import annotations

import enum
from typing import Any


class Reduction(enum.StrEnum):
    """A scatter's ``reduction`` attribute: how an update combines with the value it lands on.

    Each is typed arithmetic in data's dtype, one update at a time in C order of the
    update's position in ``indices``. A str, so a plan's ``reduction`` compares equal to
    the attribute's text (``plan.reduction == "add"``). Strings have no arithmetic:
    ``none``, and ``add``, which concatenates (ONNX Runtime's and the reference
    evaluator's reading).
    """

    #: The update replaces the value (version 11); where several updates land on one
    #: element, the last in that order wins.
    NONE = "none"
    #: Rounded after every update (float16 and bfloat16 too); integers wrap around (two's
    #: complement); bool: OR; strings: concatenation, data's first. A NaN result is the
    #: canonical quiet NaN (positive, payload zero; each part of a complex number), since
    #: which NaN the hardware propagates depends on the operands' order and the device.
    ADD = "add"
    #: As ``add``; bool: AND.
    MUL = "mul"
    #: IEEE 754-2019 ``maximum``: NaN if either side is NaN (the first NaN in that order
    #: survives: data's value if it is NaN, else the first NaN update), and -0.0 < +0.0;
    #: bool: OR. Complex data has no order: a TypeError.
    MAX = "max"
    #: IEEE 754-2019 ``minimum``, as ``max``; bool: AND.
    MIN = "min"


#: Each reduction and the version of ScatterElements / ScatterND that adds it. ``max`` and
#: ``min`` from 16, a decision: the spec adds them in 18, but torch's TorchScript exporter
#: writes ``scatter_reduce(..., "amax"/"amin")`` as ScatterElements-16 with reduction
#: max/min (torch 2.13, symbolic_opset16), and ONNX Runtime's CPU kernels and the ONNX
#: reference evaluator run max and min at versions 16 and 17 of both operators: a model
#: they run, this library runs too (docs/semantics.md).
SINCE = {
    Reduction.NONE: 11,
    Reduction.ADD: 16,
    Reduction.MUL: 16,
    Reduction.MAX: 16,
    Reduction.MIN: 16,
}
#: The reductions that order values: complex data has none.
ORDERED = frozenset({Reduction.MAX, Reduction.MIN})
#: Each reduction by its text: a lookup, not ``Reduction(text)``, on every uncached call.
_BY_TEXT: dict[str, Reduction] = {str(r): r for r in Reduction}


def check(op: str, version: int, reduction: Any, data_dtype: str) -> Reduction:
    """``reduction`` (the attribute's text, or a plan's) checked for the version and data's type.

    Raises
    ------
    TypeError
        ``reduction`` is not a str; ``max``/``min`` on complex data; any reduction but
        ``none`` and ``add`` on strings.
    ValueError
        An unknown reduction (the message lists the valid ones), or one the version lacks
        (the message names the version that adds it).
    """
    if type(reduction) is not str and type(reduction) is not Reduction:
        msg = f"{op}: reduction must be a str, got {reduction!r} of type {type(reduction).__name__}"
        raise TypeError(msg)
    member = _BY_TEXT.get(reduction)
    if member is None:
        msg = f"{op}: unknown reduction {reduction!r}; valid: {', '.join(repr(str(r)) for r in SINCE)}"
        raise ValueError(msg)
    since = SINCE[member]
    if since > version:
        have = ", ".join(repr(str(r)) for r, v in SINCE.items() if v <= version)
        msg = (
            f"{op}: reduction {reduction!r} needs version {since} or newer (opset {since}); "
            f"version {version} has {have}"
        )
        raise ValueError(msg)
    if reduction not in ("none", "add") and data_dtype == "string":
        msg = (
            f"{op}: reduction {reduction!r} needs numbers; string data takes reduction 'none' "
            f"and 'add' (concatenation) only"
        )
        raise TypeError(msg)
    if reduction in ORDERED and data_dtype.startswith("complex"):
        msg = f"{op}: reduction {reduction!r} needs ordered values; {data_dtype} data has no order"
        raise TypeError(msg)
    return member


def check_updates(op: str, data_dtype: str, updates_dtype: str) -> None:
    """TypeError unless ``updates`` has data's type (ONNX's ``T`` for both)."""
    if updates_dtype != data_dtype:
        msg = f"{op}: updates must have data's type {data_dtype}, got {updates_dtype}"
        raise TypeError(msg)
