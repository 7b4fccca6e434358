"""OpenVINO operators whose semantics differ from ONNX's."""

from __future__ import annotations

from typing import Any

from onnx_gather import _ops
from onnx_gather._api import run

__all__ = ["gather_elements"]


def gather_elements(data: Any, indices: Any, /, axis: int, *, check_bounds: bool = True) -> Any:
    """OpenVINO ``GatherElements-6``.

    Like ONNX GatherElements, with OpenVINO's stricter rules: ``axis`` is required, and off
    the axis the indices' dimensions must equal ``data``'s. Indices lie in ``[-s, s-1]``,
    negative ones counting from the end, as OpenVINO's CPU runtime reads them since
    openvinotoolkit/openvino#30800 (the 2020 operator text said ``[0, s-1]``).

    Parameters
    ----------
    data : array
        An array of any supported library, rank >= 1.
    indices : array or sequence of ints
        int32 or int64 indices, same rank as ``data``.
    axis : int
        The axis to gather along, in ``[-r, r-1]``.
    check_bounds : bool, optional
        Raise IndexError for an index outside ``[-s, s-1]``, ``s = data.shape[axis]``.
        Default True.

    Returns
    -------
    array
        Of ``data``'s library, dtype and device, with ``indices``' shape.

    Raises
    ------
    IndexError
        An index is ``< -s`` or ``>= s``; the message names the operator, the value, its
        position, the axis and its size.
    TypeError
        Disallowed index type, or ``indices`` from another array library.
    ValueError
        ``axis`` out of range, 0-d ``data``, ranks that differ, or an off-axis dimension
        that differs from ``data``'s.

    Examples
    --------
    >>> import numpy as np
    >>> from onnx_gather import openvino
    >>> openvino.gather_elements(np.array([[1, 7], [4, 3]]), [[1, 1, 0], [1, 0, 1]], axis=1)
    array([[7, 7, 1],
           [3, 4, 3]])
    >>> openvino.gather_elements(np.array([[10, 11, 12, 13]]), [[-1, -4]], axis=1)
    array([[13, 10]])
    """
    return run(_ops.OPENVINO_GATHER_ELEMENTS, None, (data, indices), (axis,), check_bounds)
