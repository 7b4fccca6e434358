"""OpenVINO operators whose semantics differ from ONNX's."""

from __future__ import annotations

from typing import Any

from onnx_gather import _ops
from onnx_gather._api import run

__all__ = ["gather", "gather_elements", "gather_nd"]


def gather(data: Any, indices: Any, /, axis: int, *, batch_dims: int = 0, version: int = 8) -> Any:
    """OpenVINO ``Gather-7`` and ``Gather-8``.

    Slices of ``data`` along ``axis`` at ``indices``, per batch:
    ``out[p_0, ..., p_{axis-1}, i_b, ..., i_{M-1}, p_{axis+1}, ...] = data[p_0, ...,
    p_{axis-1}, indices[p_0, ..., p_{b-1}, i_b, ..., i_{M-1}], p_{axis+1}, ...]`` with
    ``b = batch_dims``: the first ``b`` dims of data and indices are batches, and each
    batch reads only its own data. The output's shape is ``data.shape[:axis] +
    indices.shape[b:] + data.shape[axis+1:]``.

    Gather-8 takes indices in ``[-s, s-1]`` (``s = data.shape[axis]``), negative ones
    counting from the end; Gather-7 in ``[0, s-1]``. Any other index gives zeros in its
    place (empty strings for strings): the operator defines that value (Gather-8's text,
    its Example 7; OpenVINO's runtime reads Gather-7's negatives so too), so it is never
    an error, and there is no ``check_bounds``.

    Parameters
    ----------
    data : array
        An array of any supported library, rank >= 1.
    indices : array or sequence of ints
        int32 or int64 indices, any shape (0-d too).
    axis : int
        The axis to gather along, in ``[-r, r-1]``.
    batch_dims : int, optional
        Leading dims that data and indices share, in ``[-q, q]`` for indices of rank ``q``
        (negative: counted from ``q``), at most ``axis`` once both are normalised.
        Default 0.
    version : int, optional
        The OpenVINO opset: 7 runs Gather-7, 8 and later Gather-8. Default 8.

    Returns
    -------
    array
        Of ``data``'s library, dtype and device.

    Raises
    ------
    TypeError
        Disallowed index type, or ``indices`` from another array library.
    ValueError
        0-d data, ``axis`` or ``batch_dims`` out of range, ``batch_dims`` above ``axis``,
        batch dims of data and indices that differ, or a ``version`` older than 7.

    Examples
    --------
    >>> import numpy as np
    >>> from onnx_gather import openvino
    >>> openvino.gather(np.array([1, 2, 3, 4, 5]), [3, 10, -20, -1], axis=0)
    array([4, 0, 0, 5])
    >>> openvino.gather(np.array([1, 2, 3, 4, 5]), [3, -1], axis=0, version=7)
    array([4, 0])
    >>> data = np.array([[1, 2, 3, 4, 5], [6, 7, 8, 9, 10]])
    >>> openvino.gather(data, [[0, 0, 4], [4, 0, 0]], axis=1, batch_dims=1)
    array([[ 1,  1,  5],
           [10,  6,  6]])
    """
    return run(_ops.OPENVINO_GATHER, version, (data, indices), (axis, batch_dims), False)


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


def gather_nd(
    data: Any, indices: Any, /, *, batch_dims: int = 0, version: int = 8, check_bounds: bool = True
) -> Any:
    """OpenVINO ``GatherND-5`` and ``GatherND-8``.

    ONNX GatherND's values: each index tuple of ``indices``' last dim reads a slice of
    ``data`` after its ``batch_dims`` leading dims, which data and indices share. Negative
    coordinates count from the end in both versions, as OpenVINO's CPU runtime reads them
    (the texts say ``[-s, s-1]`` for version 8, nothing for version 5). The versions differ
    in the output's shape when ``batch_dims > 0``: version 8 keeps the batch dims,
    ``indices.shape[:-1] + data.shape[batch_dims + k:]``; version 5 flattens them into
    one of their product.

    Parameters
    ----------
    data : array
        An array of any supported library, rank >= 1.
    indices : array or sequence of ints
        int32 or int64 index tuples: the last dim holds ``k`` coordinates, ``k`` in
        ``[1, rank(data) - batch_dims]``.
    batch_dims : int, optional
        Leading dims that data and indices share, in ``[0, min(rank(data), rank(indices)))``.
        Default 0.
    version : int, optional
        The OpenVINO opset: 5 to 7 run GatherND-5, 8 and later GatherND-8. Default 8.
    check_bounds : bool, optional
        Raise IndexError for a coordinate outside ``[-s, s-1]`` of the axis it addresses.
        Default True.

    Returns
    -------
    array
        Of ``data``'s library, dtype and device.

    Raises
    ------
    IndexError
        A coordinate is out of range; the message names the operator, the value, its
        position, the axis and its size.
    TypeError
        Disallowed index type, or ``indices`` from another array library.
    ValueError
        0-d data or indices, ``batch_dims`` out of range, batch dims of data and indices
        that differ (OpenVINO's runtime refuses them too), ``k`` out of range, or a
        ``version`` older than 5.

    Examples
    --------
    >>> import numpy as np
    >>> from onnx_gather import openvino
    >>> data = np.arange(1, 25).reshape(2, 3, 4)
    >>> openvino.gather_nd(data, [[1], [0]], batch_dims=1)
    array([[ 5,  6,  7,  8],
           [13, 14, 15, 16]])
    >>> openvino.gather_nd(data, [[0, -1], [2, 0]], batch_dims=1)
    array([ 4, 21])
    >>> openvino.gather_nd(data.reshape(2, 3, 4, 1), [[[1], [0], [2]], [[0], [2], [2]]],
    ...                    batch_dims=2, version=5)
    array([[ 2],
           [ 5],
           [11],
           [13],
           [19],
           [23]])
    """
    return run(_ops.OPENVINO_GATHER_ND, version, (data, indices), (batch_dims,), check_bounds)
