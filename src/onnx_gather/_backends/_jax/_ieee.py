"""Float division with IEEE subnormals where the thread flushes them: from the bits alone.

A JAX callback on the CPU runs in a thread whose arithmetic flushes subnormals to zero
(XLA sets FTZ and DAZ, openxla/xla#22858; NumPy's division there gives ``1e-45 / 1 ==
0``). OpenVINO's ``mean`` divides once; :func:`quotient` divides with NumPy where no
subnormal can be an operand or the result, and exactly, from the operands' bits with
Python's integers, where one can.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy as np

#: (exponent bits, fraction bits) of each float type, by NumPy's name (ml_dtypes' too).
_FORMATS = {"float16": (5, 10), "bfloat16": (8, 7), "float32": (8, 23), "float64": (11, 52)}
#: 1, 2, 4, ...: how many of them a count reaches is its bit length.
_POWERS = np.left_shift(np.int64(1), np.arange(63, dtype=np.int64))


def quotient(total: np.ndarray, n: np.ndarray) -> np.ndarray:
    """``total / n`` (``n`` positive ints), correctly rounded in total's float type."""
    exponent_bits, fraction_bits = _FORMATS[total.dtype.name]
    unsigned = np.dtype(f"u{total.dtype.itemsize}")
    bits = total.view(unsigned).astype(np.int64 if total.dtype.itemsize < 8 else np.uint64)
    field = (bits >> fraction_bits) & ((1 << exponent_bits) - 1)
    counts = np.asarray(n, np.int64)
    # At risk: a subnormal operand, or a quotient that may fall below the smallest normal
    # (|total| < 2**(field - bias + 1), so total / n < 2**emin needs field <= emin + bias -
    # 1 + log2 n); never inf or NaN, which the division keeps as they are.
    widths = np.searchsorted(_POWERS, counts, side="right")  # (each count's bit length)
    risky = (field < widths + 1) & (field != (1 << exponent_bits) - 1)
    with np.errstate(all="ignore"):
        out = (total.astype(np.float64) / counts).astype(total.dtype)
    for at in np.flatnonzero(risky.reshape(-1)):
        value = int(bits.reshape(-1)[at])
        exact = _value(value, exponent_bits, fraction_bits) / int(counts.reshape(-1)[at])
        encoded = _encode(exact, value >> (exponent_bits + fraction_bits), exponent_bits,
                          fraction_bits)  # fmt: skip
        out.reshape(-1)[at : at + 1] = np.array([encoded], unsigned).view(total.dtype)
    return out


def _value(bits: int, exponent_bits: int, fraction_bits: int) -> Fraction:
    """The finite float's magnitude, exactly."""
    field = (bits >> fraction_bits) & ((1 << exponent_bits) - 1)
    fraction = bits & ((1 << fraction_bits) - 1)
    bias = (1 << (exponent_bits - 1)) - 1
    if field:
        return Fraction(fraction | (1 << fraction_bits)) * Fraction(2) ** (
            field - bias - fraction_bits
        )
    return Fraction(fraction) * Fraction(2) ** (1 - bias - fraction_bits)


def _encode(magnitude: Fraction, sign: int, exponent_bits: int, fraction_bits: int) -> Any:
    """The bits of ``magnitude`` with ``sign``, rounded to nearest, ties to even."""
    bias = (1 << (exponent_bits - 1)) - 1
    head = sign << (exponent_bits + fraction_bits)
    if magnitude == 0:
        return head
    # 2**e <= magnitude < 2**(e + 1)
    e = magnitude.numerator.bit_length() - magnitude.denominator.bit_length()
    if Fraction(2) ** e > magnitude:
        e -= 1
    e = max(e, 1 - bias)  # (below the normals: the subnormals' fixed scale)
    mantissa = round(magnitude / Fraction(2) ** (e - fraction_bits))  # (ties to even)
    if mantissa >> (fraction_bits + 1):  # rounded up to the next power of two
        mantissa >>= 1
        e += 1
    if mantissa >> fraction_bits:  # normal
        return head | ((e + bias) << fraction_bits) | (mantissa & ((1 << fraction_bits) - 1))
    return head | mantissa  # subnormal (e is the smallest exponent)
