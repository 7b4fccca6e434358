"""The interface every backend implements."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from onnx_gather._spec import Plan


class Backend(Protocol):
    """What :mod:`onnx_gather._api` needs from a library.

    Attributes
    ----------
    name : str
        The library's name, for messages.

    Notes
    -----
    The kernels own the bounds policy: ``indices`` arrive as the caller gave them (an
    array of this library, or a NumPy array of host indices), unchecked and with negative
    values. A kernel counts negatives from the end, checks the range when
    ``plan.check_bounds`` (raising through :func:`onnx_gather._spec.raise_out_of_range` or
    :func:`onnx_gather._spec.check_range`, so every backend raises the one message), and
    without the check never reads outside ``data`` nor crashes. A backend whose two
    operators take one path defines one method and binds the other name to it
    (``gather_elements = gather``); ``plan.elements`` tells them apart.
    """

    name: str

    def owns(self, x: Any, /) -> bool:
        """Whether ``x`` is an array of this library."""

    def shape(self, x: Any, /) -> tuple[int, ...]:
        """The shape of ``x`` as a tuple of ints."""

    def dtype_name(self, x: Any, /) -> str:
        """The ONNX-style name of ``x``'s dtype (see :mod:`onnx_gather._spec`)."""

    def gather(self, data: Any, indices: Any, plan: Plan, /) -> Any:
        """ONNX Gather, bounds policy included."""

    def gather_elements(self, data: Any, indices: Any, plan: Plan, /) -> Any:
        """ONNX GatherElements; ``plan.trim`` cuts ``data`` to the block the output reads."""
