"""The interface every backend implements."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import numpy as np

    from onnx_gather._spec import Plan


class Backend(Protocol):
    """What :mod:`onnx_gather._api` needs from a library.

    Attributes
    ----------
    name : str
        The library's name, for messages.

    Notes
    -----
    A backend whose native kernels raise on an out-of-range index by themselves may also
    define ``kernel_checks(plan, data, indices) -> tuple[type[Exception], ...]``, returning
    the exception types its kernels raise for such a call (or ``()`` where they do not).
    :func:`onnx_gather._api.run` then skips its range pre-pass, runs the kernel, and only
    if it raises one of those reads the indices and lets ``_spec`` build the IndexError.
    It is optional (looked up with ``getattr``), so it is not a method of this Protocol.
    """

    name: str

    def owns(self, x: Any, /) -> bool:
        """Whether ``x`` is an array of this library."""

    def shape(self, x: Any, /) -> tuple[int, ...]:
        """The shape of ``x`` as a tuple of ints."""

    def dtype_name(self, x: Any, /) -> str:
        """The ONNX-style name of ``x``'s dtype (see :mod:`onnx_gather._spec`)."""

    def from_host(self, indices: np.ndarray, data: Any, /) -> Any:
        """Place host indices (already range-checked if checks are on) beside ``data``."""

    def adopt(self, indices: Any, data: Any, /) -> Any:
        """Move indices of this library onto ``data``'s device, if they are elsewhere."""

    def index_range(self, indices: Any, /) -> tuple[int, int] | None:
        """The smallest and largest index of non-empty ``indices``, or None if unknown yet.

        None means the values cannot be read now (tracing, lazy arrays); the kernel then
        applies ``plan.check_bounds`` itself, through :mod:`onnx_gather._spec`'s messages.
        """

    def to_host(self, indices: Any, /) -> np.ndarray:
        """The indices as a NumPy array (only used to build an error message)."""

    def gather(self, data: Any, indices: Any, plan: Plan, negative: bool, /) -> Any:
        """ONNX Gather. ``negative`` is False only when no index is known to be negative."""

    def gather_elements(self, data: Any, indices: Any, plan: Plan, negative: bool, /) -> Any:
        """ONNX GatherElements; ``plan.trim`` cuts ``data`` to the block the output reads."""
