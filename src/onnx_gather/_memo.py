"""The one cache every memo of the package uses (:class:`Memo`): bounded, lock-free, traceable."""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Generic, TypeVar

if TYPE_CHECKING:
    from collections.abc import Callable, Hashable

K = TypeVar("K", bound="Hashable")
V = TypeVar("V")


class Memo(Generic[K, V]):
    """A bounded map from keys to values computed once.

    Plans by call key, backends by array type, dtype names, jitted JAX functions, the
    conformance oracles' compiled models: each is a Memo. (Opset resolutions are a table
    made at import, :attr:`onnx_gather._ops.Operator.newest`: their keys are known in
    advance.) Why this and not :func:`functools.lru_cache`:

    * **Traceable.** ``torch.compile`` traces the public functions' Python, including a
      lookup of the backend and of the opset. Dynamo warns on (and breaks the graph at)
      ``lru_cache``-wrapped functions (torch 2.13), while a method reading a dict is plain
      Python it inlines. No lock for the same reason: Dynamo cannot trace one.
    * **Thread-safe without a lock.** Each step is one dict operation, atomic under the GIL
      and on free-threaded builds (per-dict locking). Two threads that miss the same key at
      once both compute its value and one store wins: every memo here holds values that are
      equal whichever thread made them, so the race costs time, never correctness.
    * **Bounded.** A program sees few distinct keys, but a stream of new shapes (variable
      batch sizes) must not grow a memo without end: past ``limit`` entries the oldest is
      dropped.

    Parameters
    ----------
    limit : int
        The most entries kept; when full, storing a new key drops the oldest one.
    """

    __slots__ = ("_entries", "get", "limit")

    def __init__(self, limit: int) -> None:
        self._entries: dict[K, V] = {}
        self.limit = limit
        #: ``get(key)``: the value stored for ``key``, or None. The dict's own method: it is
        #: on the hot path of every call, where a Python method around it would add a frame.
        self.get: Callable[[K], V | None] = self._entries.get

    def put(self, key: K, value: V) -> V:
        """Store ``value`` for ``key`` (dropping the oldest entry when full); return it."""
        entries = self._entries
        if len(entries) >= self.limit and key not in entries:
            # Another thread may change the dict meanwhile: then it made room, or will.
            with contextlib.suppress(KeyError, RuntimeError, StopIteration):
                del entries[next(iter(entries))]
        entries[key] = value
        return value

    def get_or_make(self, key: K, make: Callable[[], V]) -> V:
        """The value for ``key``, made by ``make()`` and stored on the first request.

        The memo's values are never None: None means "not stored".
        """
        value = self.get(key)
        return value if value is not None else self.put(key, make())

    def pop(self, key: K) -> None:
        """Forget ``key`` (nothing happens if it is not stored)."""
        self._entries.pop(key, None)

    def clear(self) -> None:
        """Forget every entry."""
        self._entries.clear()
