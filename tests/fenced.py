"""Buffers inside canaries, for tests of the compiled kernel's memory safety.

A :class:`Fenced` array sits in the middle of a larger byte buffer whose other bytes are a
canary: a call that writes a byte outside its arrays, or any byte at all where it should
refuse, leaves a trace that :meth:`Fenced.untouched` finds.
"""

from __future__ import annotations

import numpy as np

#: Canary bytes on each side of a buffer: a multiple of every item size, so the array
#: inside keeps the larger buffer's alignment.
PAD = 64
CANARY = 0xA5


class Fenced:
    """``values`` copied into the middle of a larger byte buffer whose other bytes are a canary.

    ``array`` is the view a call gets (C-ordered, aligned); :meth:`untouched` says whether
    every byte of the larger buffer, the array's and the fences', is as it was made.
    """

    def __init__(self, values: np.ndarray, pad: int = PAD) -> None:
        values = np.asarray(values)
        self.raw = np.full(values.nbytes + 2 * pad, CANARY, np.uint8)
        inside = self.raw[pad : pad + values.nbytes]
        self.array = inside.view(values.dtype).reshape(values.shape)
        self.array[...] = values
        self.before = self.raw.copy()

    @property
    def address(self) -> int:
        """The array's address, as the by-address entry points take it."""
        return int(self.array.ctypes.data)

    def untouched(self) -> bool:
        """Whether no byte of the buffer or its fences was written."""
        return bool(np.array_equal(self.raw, self.before))

    def intact_outside(self, view: np.ndarray) -> bool:
        """Whether every byte outside the C-ordered ``view`` of this buffer is as it was."""
        start = int(view.ctypes.data - self.raw.ctypes.data)
        end = start + view.nbytes
        return bool(
            np.array_equal(self.raw[:start], self.before[:start])
            and np.array_equal(self.raw[end:], self.before[end:])
        )


def fenced(*arrays: np.ndarray) -> list[Fenced]:
    """Each of ``arrays`` in a :class:`Fenced` buffer."""
    return [Fenced(a) for a in arrays]


def untouched(*buffers: Fenced) -> bool:
    """Whether no byte of any of ``buffers`` was written."""
    return all(b.untouched() for b in buffers)
